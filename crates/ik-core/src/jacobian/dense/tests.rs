//! Tests of the dense kernel (`jacobian::dense`).

use super::*;

/// A seeded uniform sequence in `[−1, 1)` (a linear congruential generator).
fn uniform(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// The textbook recursion with the projector formed at every level, for comparison.
fn reference_step(d: &DlsBuffers, rows: usize, n: usize, levels: &[u8], posture: bool) -> Vec<f32> {
    let mut null = vec![0.0f32; n * n];
    for i in 0..n {
        null[i * n + i] = 1.0;
    }
    let mut dq = vec![0.0f32; n];
    let mut order: Vec<u8> = levels[..rows].to_vec();
    order.sort_unstable();
    order.dedup();
    for lv in order {
        let sel: Vec<usize> = (0..rows).filter(|&r| levels[r] == lv).collect();
        let m = sel.len();
        let mut jh = vec![0.0f32; m * n];
        let mut y = vec![0.0f32; m];
        for (i, &r) in sel.iter().enumerate() {
            for c in 0..n {
                jh[i * n + c] = (0..n).map(|k| d.jac[r * n + k] * null[k * n + c]).sum();
            }
            y[i] = d.e[r] - (0..n).map(|k| d.jac[r * n + k] * dq[k]).sum::<f32>();
        }
        let gram = |eps: f32| {
            let mut a = vec![0.0f32; m * m];
            for p in 0..m {
                for q in 0..m {
                    a[p * m + q] = (0..n).map(|c| jh[p * n + c] * jh[q * n + c]).sum();
                }
                a[p * m + p] += eps;
            }
            assert!(cholesky(&mut a, m));
            a
        };
        cholesky_solve(&gram(1e-3), m, &mut y);
        for c in 0..n {
            dq[c] += (0..m).map(|i| jh[i * n + c] * y[i]).sum::<f32>();
        }
        let b = gram(PROJECTOR_DAMPING);
        let mut w = jh.clone();
        for c in 0..n {
            let mut col: Vec<f32> = (0..m).map(|i| w[i * n + c]).collect();
            cholesky_solve(&b, m, &mut col);
            for i in 0..m {
                w[i * n + c] = col[i];
            }
        }
        for k in 0..n {
            for c in 0..n {
                null[k * n + c] -= (0..m).map(|i| jh[i * n + k] * w[i * n + c]).sum::<f32>();
            }
        }
    }
    if posture {
        for k in 0..n {
            dq[k] += (0..n).map(|c| null[k * n + c] * d.z[c]).sum::<f32>();
        }
    }
    dq
}

#[test]
fn the_step_matches_the_textbook_recursion() {
    let (n, rows) = (9usize, 7usize);
    let mut rnd = uniform(12345);
    let levels = [0u8, 0, 1, 1, 1, 2, 2];
    let mut d = DlsBuffers::new(rows, n);
    for v in d.jac.iter_mut().chain(&mut d.e).chain(&mut d.z) {
        *v = rnd();
    }
    let gram = |jac: &[f32], _: u8, a: &mut [f32], m: usize| {
        for p in 0..m {
            for q in 0..=p {
                a[p * m + q] = dot(&jac[p * n..(p + 1) * n], &jac[q * n..(q + 1) * n]);
            }
        }
    };
    for posture in [false, true] {
        for count in [2, rows] {
            let want = reference_step(&d, count, n, &levels, posture);
            for sparse in [false, true] {
                let fill: Option<&dyn Fn(&[f32], u8, &mut [f32], usize)> =
                    if sparse { Some(&gram) } else { None };
                // (The formed step has no caller-filled first level.)
                for formed in [false, true].into_iter().filter(|f| !(*f && sparse)) {
                    let ok = if formed {
                        d.prioritized_step_formed(count, n, &levels, 1e-3, posture)
                    } else {
                        d.prioritized_step(count, n, &levels, |_| Some(1e-3), fill, posture, None)
                    };
                    assert!(ok);
                    for (got, want) in d.dq[..n].iter().zip(&want) {
                        assert!((got - want).abs() < 1e-4, "{:?} vs {want:?}", &d.dq[..n]);
                    }
                }
            }
        }
    }
}

/// `dot_within` is `dot` bit for bit where the products outside its range vanish: rows
/// with zeros outside a span (and signed zeros inside), every span and length.
#[test]
fn dot_within_is_dot_bit_for_bit() {
    let mut rand = uniform(0x9e37_79b9);
    for n in [1usize, 3, 4, 7, 8, 13, 57] {
        for lo in 0..n {
            for hi in lo..=n {
                let (mut a, mut b) = (vec![0.0f32; n], vec![0.0f32; n]);
                for k in 0..n {
                    // Zeros of both signs and cancelling pairs, nonzero only in lo..hi
                    // for one factor.
                    let (x, y) = (rand(), rand());
                    a[k] = if k % 5 == 0 { -0.0 } else { x };
                    b[k] = if (lo..hi).contains(&k) {
                        if k % 3 == 0 { -a[k] } else { y }
                    } else if k % 2 == 0 {
                        -0.0
                    } else {
                        0.0
                    };
                }
                assert_eq!(
                    dot(&a, &b).to_bits(),
                    dot_within(&a, &b, lo, hi).to_bits(),
                    "n {n}, {lo}..{hi}"
                );
            }
        }
    }
}

/// The masked step is the step bit for bit: block-sparse rows (each row nonzero on a few
/// column runs, signed zeros elsewhere) on three levels, with and without posture.
/// A random `rows × n` Jacobian nonzero where `on` (elsewhere `-0.0` where
/// `negative_zero`, else `0.0`), random residuals and posture pull: `prioritized_step`
/// gives the same bits with the rows' column masks as without, posture on and off.
fn masked_step_matches(
    (rows, n): (usize, usize),
    levels: &[u8],
    (on, negative_zero): (impl Fn(usize, usize) -> bool, impl Fn(usize, usize) -> bool),
    rnd: &mut impl FnMut() -> f32,
) {
    let mut d = DlsBuffers::new(rows, n);
    let mut masks = vec![0u128; rows];
    for (r, mask) in masks.iter_mut().enumerate() {
        for c in 0..n {
            d.jac[r * n + c] = if on(r, c) {
                *mask |= 1 << c;
                rnd()
            } else if negative_zero(r, c) {
                -0.0
            } else {
                0.0
            };
        }
    }
    for v in d.e.iter_mut().chain(&mut d.z) {
        *v = rnd();
    }
    for posture in [false, true] {
        let mut bits = |masks: Option<&[u128]>| {
            assert!(d.prioritized_step(rows, n, levels, |_| Some(1e-3), None, posture, masks));
            d.dq[..n].iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
        };
        let want = bits(None);
        assert_eq!(bits(Some(&masks)), want, "posture {posture}");
    }
}

#[test]
fn the_masked_step_is_the_step_bit_for_bit() {
    let (n, rows) = (23usize, 12usize);
    let mut rnd = uniform(777);
    let levels = [0u8, 0, 0, 1, 1, 1, 0, 0, 2, 2, 1, 2];
    for trial in 0..50 {
        // A shared root block (columns 0..3) and a row-dependent run.
        let on = |r: usize, c: usize| {
            let start = 3 + (r * 5 + trial) % (n - 6);
            c < 3 || (start..start + 5).contains(&c)
        };
        masked_step_matches((rows, n), &levels, (on, |r, c| (r + c) % 3 == 0), &mut rnd);
    }
}

#[test]
fn a_first_level_in_parts_gives_the_step_bit_for_bit() {
    // First-level rows in three parts of their own columns (the first two rows linked by
    // a shared column), later rows touching one part, two, or none.
    let runs: [(usize, usize, u8); 11] = [
        (0, 4, 0),
        (3, 7, 0),
        (8, 14, 0),
        (9, 13, 0),
        (15, 20, 0),
        (1, 6, 1),
        (10, 18, 1),
        (22, 28, 1),
        (2, 12, 2),
        (16, 19, 2),
        (5, 25, 2),
    ];
    let levels: Vec<u8> = runs.iter().map(|r| r.2).collect();
    let mut rnd = uniform(4242);
    for trial in 0..20 {
        let on = |r: usize, c: usize| (runs[r].0..runs[r].1).contains(&c);
        let negative_zero = |r: usize, c: usize| (r + c + trial).is_multiple_of(3);
        masked_step_matches((runs.len(), 30), &levels, (on, negative_zero), &mut rnd);
    }
}

#[test]
fn cholesky_solves_a_symmetric_positive_definite_system() {
    // A = [[4, 2], [2, 3]], b = A · [1, -2].
    let mut a = [4.0, 2.0, 2.0, 3.0];
    let mut b = [4.0 - 4.0, 2.0 - 6.0];
    assert!(cholesky(&mut a, 2));
    cholesky_solve(&a, 2, &mut b);
    assert!(
        (b[0] - 1.0).abs() < 1e-6 && (b[1] + 2.0).abs() < 1e-6,
        "{b:?}"
    );
    let mut singular = [1.0, 1.0, 1.0, 1.0];
    assert!(!cholesky(&mut singular, 2));
}

#[test]
fn a_higher_level_is_met_exactly_and_the_lower_one_in_its_null_space() {
    // Two columns; level 0 wants x0 + x1 = 1, level 1 wants x0 = 3 (conflicting).
    let mut d = DlsBuffers::new(2, 2);
    d.jac[..4].copy_from_slice(&[1.0, 1.0, 1.0, 0.0]);
    d.e[..2].copy_from_slice(&[1.0, 3.0]);
    assert!(d.prioritized_step(2, 2, &[0u8, 1], |_| Some(1e-8), None, false, None));
    let (x0, x1) = (d.dq[0], d.dq[1]);
    assert!((x0 + x1 - 1.0).abs() < 1e-3, "level 0: {x0} + {x1}");
    assert!((x0 - 3.0).abs() < 1e-2, "level 1 in the null space: {x0}");
}
