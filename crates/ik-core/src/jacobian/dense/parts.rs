//! The prioritised step's levels factorised part by part: rows linked by shared columns
//! ([`find_parts`]) make a block of `J Jᵀ` of their own, factorised and solved on their own
//! (the same bits as the whole matrix's, see `jacobian::dense`'s module docs).

use super::{cholesky, cholesky_solve, dot_within, span};

/// The parts of a level's rows (`sel`, rows of `masks`): rows linked by a chain of rows that
/// share a column. Each row's part into `part` (labelled by its smallest row index), each
/// part's columns into `part_mask` (at its label); returns how many parts. Two rows of
/// different parts share no column, so their entry of `J Jᵀ` is an exact zero (a dot
/// product of disjoint rows sums `±0` from `+0.0`): the matrix is block diagonal over the
/// parts, and so is its Cholesky factor.
pub(super) fn find_parts(
    (sel, masks): (&[usize], &[u128]),
    part: &mut [usize],
    part_mask: &mut [u128],
) -> usize {
    // Row by row: a row joins every part it shares a column with (merged under the smallest
    // label, the part's first row); `part_mask` holds each live part's columns at its label.
    let mut parts = 0;
    for (i, &r) in sel.iter().enumerate() {
        let mask = masks[r];
        let mut label = i;
        part_mask[i] = mask;
        for l in 0..i {
            if part[l] != l || part_mask[l] & mask == 0 {
                continue;
            }
            if label == i {
                // The first (smallest) part it meets takes it.
                label = l;
                part_mask[l] |= mask;
            } else {
                // A later part it links to the first: merged into it.
                part_mask[label] |= part_mask[l];
                for p in part[..i].iter_mut().filter(|p| **p == l) {
                    *p = label;
                }
                parts -= 1;
            }
        }
        part[i] = label;
        parts += usize::from(label == i);
    }
    parts
}

/// [`cholesky`] of an `n × n` matrix that is block diagonal over `parts` parts (`part`, see
/// [`find_parts`]), part by part (`within`: work space for a part's rows): the same factor
/// bit for bit — the terms left out are products with an exact zero of another part — for
/// the cube of each part's size instead of the whole's.
pub(super) fn cholesky_parts(
    a: &mut [f32],
    n: usize,
    parts: usize,
    part: &[usize],
    within: &mut [usize],
) -> bool {
    if parts <= 1 {
        return cholesky(a, n);
    }
    for label in 0..n {
        if part[label] != label {
            continue;
        }
        let k = rows_of(part, |l| l == label, within);
        if !cholesky_within(a, n, &within[..k]) {
            return false;
        }
    }
    true
}

/// The rows whose part `pick` takes into `out`, ascending; returns how many.
fn rows_of(part: &[usize], pick: impl Fn(usize) -> bool, out: &mut [usize]) -> usize {
    let mut k = 0;
    for (i, &l) in part.iter().enumerate() {
        if pick(l) {
            out[k] = i;
            k += 1;
        }
    }
    k
}

/// [`cholesky`] of the principal submatrix of rows and columns `idx` (ascending) of the
/// `n × n` row-major `a`, in place: every sum over the same terms in the same order as the
/// whole matrix's factorisation adds for those rows, less the products with the exact zeros
/// that no other row shares with them.
fn cholesky_within(a: &mut [f32], n: usize, idx: &[usize]) -> bool {
    for (jj, &j) in idx.iter().enumerate() {
        let mut d = a[j * n + j];
        for &k in &idx[..jj] {
            let x = a[j * n + k];
            d -= x * x;
        }
        if d.is_nan() || d <= 0.0 || !d.is_finite() {
            return false;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for &i in &idx[jj + 1..] {
            let mut s = a[i * n + j];
            for &k in &idx[..jj] {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    true
}

/// [`cholesky_solve`] restricted to the rows `idx` (ascending; whole parts of a block
/// diagonal factor, [`cholesky_parts`]): the same bits on those rows; the others are not
/// touched.
fn cholesky_solve_within(a: &[f32], n: usize, idx: &[usize], b: &mut [f32]) {
    for (ii, &i) in idx.iter().enumerate() {
        let mut s = b[i];
        for &k in &idx[..ii] {
            s -= a[i * n + k] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
    for (ii, &i) in idx.iter().enumerate().rev() {
        let mut s = b[i];
        for &k in &idx[ii + 1..] {
            s -= a[k * n + i] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
}

/// [`project_out`] bit for bit, of a row `x` of the Jacobian (its nonzero columns within
/// `x_mask`) out of rows of the Jacobian (`jh`; `rows[i]` is row `i`'s index into `masks`, its
/// nonzero columns): each product over the columns the two share, each row subtracted over its
/// own columns (see [`dot_within`]). What is left out adds or subtracts zeros: no value
/// changes but, at most, the sign of a zero in `x`, which no later sum or product of the step
/// can see (every sum starts at `+0.0`).
pub(super) fn project_out_masked(
    jh: &[f32],
    (rows, masks, x_mask): (&[usize], &[u128], u128),
    (part, part_mask, within): (&[usize], &[u128], &mut [usize]),
    factor: &[f32],
    col: &mut [f32],
    x: &mut [f32],
) {
    let (m, n) = (col.len(), x.len());
    // Only the parts ([`find_parts`]) that share a column with `x`: the others' products
    // with `x` are zeros, so their entries of the solve stay zeros (the factor is block
    // diagonal over the parts) and subtract nothing.
    let k = rows_of(part, |l| part_mask[l] & x_mask != 0, within);
    let idx = &within[..k];
    for &i in idx {
        let (lo, hi) = span(masks[rows[i]] & x_mask);
        col[i] = dot_within(&jh[i * n..(i + 1) * n], x, lo, hi);
    }
    if k == m {
        cholesky_solve(factor, m, col);
    } else {
        cholesky_solve_within(factor, m, idx, col);
    }
    for &i in idx {
        let c = col[i];
        let (lo, hi) = span(masks[rows[i]]);
        let (lo, hi) = (lo.min(n), hi.min(n));
        for (v, &j) in x[lo..hi].iter_mut().zip(&jh[i * n + lo..i * n + hi]) {
            *v -= c * j;
        }
    }
}
