//! The one dense `f32` damped-least-squares kernel of ik-core: Cholesky on row-major
//! `rows × rows` normal matrices, the prioritised step by recursive null-space projection
//! (Siciliano–Slotine) with a damping per level, and the null-space posture term, on
//! caller-owned buffers ([`DlsBuffers`], sized once: no allocation per step). Both Jacobian
//! solvers of the crate are orchestration on top of it.
//!
//! # One kernel, two orchestrations (issue 10's "one Jacobian core", measured)
//!
//! * [`crate::humanoid::FullBodySolver`]: one damping per iteration (`λ² (1 + |e|)`), every
//!   step taken, the block-sparse single-level `J Jᵀ` assembled by the caller in 3 × 3 blocks
//!   (rows laid out per effector) and factorised here, [`DlsBuffers::prioritized_step_formed`] when
//!   goals sit on several priority levels, clamped joints scaled down (a soft active set).
//! * [`JacobianSolver`](super::JacobianSolver) (`solve.rs`): Levenberg–Marquardt
//!   orchestration — level `k` damped by `μ (λ_min² + c · ½|eₖ|²)`, a step kept only if no
//!   priority level's merit gets worse (else the pose is restored and `μ` grows), a correction
//!   step for second-order drift, a limit active set that removes each saturated joint's
//!   outward normal from its columns — around [`DlsBuffers::prioritized_step`] for every
//!   step: its first solved level's `J Jᵀ` filled by the caller from the task sparsity (the
//!   column ranges each pair of tasks shares), inactive tasks' rows left out (`damping` →
//!   `None`), the projected posture term returned in [`DlsBuffers::pz`] for the settle test.
//!   The merit, the accept/reject rule and `μ` stay `f64` scalars; the linear algebra is `f32`.
//!
//! The recursion comes in two forms over the same buffers, Cholesky and posture term.
//! [`DlsBuffers::prioritized_step`] (`JacobianSolver`, every step) never forms the
//! null-space projector `N` (dof × dof): each solved level keeps its projected rows `Ĵᵢ` and
//! the factor of `Ĵᵢ Ĵᵢᵀ + ε I`, and a later level's rows and the posture pull are projected
//! level after level (`x ← x − Ĵᵢᵀ (Ĵᵢ Ĵᵢᵀ + ε I)⁻¹ Ĵᵢ x`: rows² × dof work, the `f64`
//! solver's way). [`DlsBuffers::prioritized_step_formed`] (the full-body solver, only when
//! its goals sit on several priority levels) forms `N` between levels (dof² × rows) and
//! keeps its exact arithmetic: moved onto the implicit form, the full-body solver's cold
//! solves over two priority levels are chaotic at that scale — in `tests/full_body.rs`'s
//! "hand first" case, the formed step scaled by `1 − 1e-6` leaves the hand 0.47 m short
//! where `1` and `1 + 1e-6` reach it within 23 µm, and the implicit step fails that test —
//! so that path and the test stay as they are until that cold solve is made robust. Both
//! forms match the textbook recursion to `1e-4` (unit test). `JacobianSolver` first ran on
//! the formed form too: with the head's look-at on a second priority level (bench
//! `IK_LEVELS=1`; the demo's Jacobian rig uses four: feet, pelvis, hands, head) that cost 82.6 / 101.2 µs per iteration cold
//! against 20.3 / 18.4 for the `nalgebra` step (alternating, load 0.8); on the implicit form,
//! alternating with the `nalgebra` build at load 1.3: cold 13.0 / 12.9 µs per iteration
//! against 16.8 / 16.8, success 53.5 % against 53.1 %, warm 11.9 / 11.7 against 15.9 / 15.9
//! µs per iteration, warm success 97.1 % against 98.1 % (5 of 480 frames); one level,
//! the same runs: cold 10.5 / 10.6 against 12.3 / 12.5 µs per iteration.
//!
//! Until this change `JacobianSolver` ran its own `f64` step on `nalgebra` (`DMatrix`,
//! `Cholesky`, `gemv`/`gemm`), kept because its contract — residuals never increase from
//! step to step, level by level — was thought to need `f64` normal equations. It does not: the
//! contract comes from the accept/reject rule, which judges merits evaluated by forward
//! kinematics (already `f32`), not the linear solve; an `f32` step that is slightly off is a
//! slightly worse step, rejected or accepted like any other. Every test kept its tolerance and
//! passes (`jacobian_proptest` with CI's seed, the posture and priority tests, the arm). The
//! projectors' regularisation is this kernel's `ε = 1e-6` (normalised units) instead of `1e-9`
//! in `f64`, which `f32` cannot resolve next to entries of order 1.
//!
//! Same run, same problem — `cargo bench -p ik-core-benches --bench jacobian_core`: the 55-DOF
//! Mixamo-named test rig, every humanoid joint above a hand, foot or head with the same
//! anatomical limits, hands and feet 6D plus the head look-at (32 rows, the pelvis goal off),
//! the full-body solver with its analytic limbs, restarts and give-way off so only the kernel
//! iterates. The bench binaries of commit 5e2274a (`JacobianSolver` on `f64` `nalgebra`) and
//! of this port, run alternately twice each on the 2-core machine at a load average of 1.7–1.9
//! (other builds); each cell gives both runs:
//!
//! | | cold success | cold iterations | cold µs / iteration | cold median | warm success | warm µs / iteration | warm median | criterion, cold mean |
//! |---|---|---|---|---|---|---|---|---|
//! | `JacobianSolver`, `f64` `nalgebra` step (before) | 52.0 % | 12.8 | 12.22 / 12.20 | 130.4 / 130.2 µs | 98.5 % | 11.31 / 11.26 | 22.5 / 22.5 µs | 168.7 / 156.0 µs |
//! | `JacobianSolver` on this kernel (now) | 52.0 % | 12.8 | 10.09 / 10.06 | 106.0 / 107.0 µs | 99.8 % | 8.86 / 8.84 | 17.7 / 17.7 µs | 128.4 / 137.2 µs |
//! | full-body solver on this kernel (unchanged code; all four runs) | 69.1 % | 13.8 | 9.4 – 12.2 | 90 – 100 µs | 100 % | 7.9 – 8.9 | 16.2 – 18.2 µs | 131 – 149 µs |
//!
//! (cold: 256 goal sets from random in-limit poses, from rest, up to 64 iterations, stall
//! detection on; warm: 480 frames of a smooth trajectory; criterion: the mean cold solve.) The
//! gate of the port — no loss of cold success, at most 10 % more time — is met with room:
//! the same cold success — the same 133 of 256 goal sets, checked set by set with a per-set
//! dump of the bench (not committed; 4 of them differ in iteration count) — warm success up, 0.82× the time per iteration
//! cold and 0.78× warm, 0.76 – 0.88× the criterion mean. The full-body row shows this
//! machine's noise (its code did not change). Where the time goes: the rows of inactive tasks
//! leave the step (here the pelvis goal is off: 26 of 32 rows are solved, so the Cholesky
//! factorisation costs about `(26/32)³ ≈ 0.54` of the full one), `f32` halves the memory
//! traffic, and the first level needs neither a projection nor a residual product (`Δq = 0`
//! there); with all 32 rows active an earlier build of the port measured 8.7 % *more* time
//! than `nalgebra` (13.75 vs 12.66 µs per iteration, criterion 175 vs 159 µs).
//!
//! With a posture task toward rest (gain 0.5) added — the bench's last two lines; the
//! "before" figures from the same bench code built on 5e2274a, alternating, load 1.8–2.9:
//! cold success 18.8 % before, 17.6 % now (48 and 45 of 256 goal sets), 21.5 / 21.5 vs
//! 17.1 / 18.1 µs per iteration, median 473 / 472 vs 375 / 379 µs; warm success 49.8 % before,
//! 54.8 % now, 26.2 / 28.6 vs 22.2 / 21.1 µs per iteration. A solve with posture converges
//! only once the posture term has settled (below `posture_tolerance`). Set by set, 11 of the
//! 256 cold goal sets change outcome, both ways (4 gained, 7 lost, at different iteration
//! counts): trajectories that part at round-off, not a failure mode of `f32`; the projector
//! regularisation does not decide it either (17.6 % with `ε` from `1e-8` to `1e-5`).
//!
//! The full-body solver's outputs are bit-identical where its arithmetic did not change: a
//! hash of 240 full-body solves per configuration (cold and warm, a random goal set each,
//! Mixamo test rig) is equal before and after with one priority level (posture on and off) and
//! with three levels without posture; with three levels *and* posture following (off by
//! default, in no test or bench) the last level's projector is now applied implicitly and the
//! hash differs (192 instead of 185 of 240 converged). `tests/gameplay.rs` and every
//! `full_body` test pass unchanged. On the 7-DOF arm (`arm_vs_k`, same run, alternating, load
//! 1.6–2.4) the two are level within this machine's noise: 11.0 – 16.7 µs per target before,
//! 11.1 – 13.2 µs now (one more run 21.7 µs: a single solve stalled 4.1 ms, median 8.3 µs as
//! in the others), success 99.95 % before, 100.00 % now (`k`: 80.25 %); `k` is 13.6 – 18.5×
//! slower than the port in its runs (10.3× in the stalled one); `tests/jacobian_arm.rs`:
//! 99.93 % at 0.1 mm / 1 mrad (unchanged). Two more `jacobian_core` runs each at load
//! 0.8 – 1.4 agree: `JacobianSolver` cold 12.30 / 12.39 µs per iteration before, 10.07 /
//! 14.03 now (the second in a busy spell: the unchanged full-body row read 12.79 there),
//! medians 131.3 / 131.5 vs 105.0 / 107.9 µs, criterion 160.1 / 184.9 vs 128.8 / 129.0 µs.
//!
//! What is shared lives once: this kernel for every dense DLS step, joint limits
//! ([`crate::limits::JointLimit::clamp`]), the rotation-vector step ([`crate::rotation`]) and
//! the analytic limb finish (`crate::analytic::finish`).

mod parts;
use parts::{cholesky_parts, find_parts, project_out_masked};

/// Work buffers of the dense kernel, sized for at most `max_rows` task rows and `cols`
/// columns.
#[derive(Clone, Debug, Default)]
pub(crate) struct DlsBuffers {
    /// The Jacobian, row-major `rows × cols`.
    pub(crate) jac: Vec<f32>,
    /// The normal matrix `J Jᵀ + λ² I` (or a level's), factorised in place.
    pub(crate) a: Vec<f32>,
    /// The (weighted, clamped) task residuals.
    pub(crate) e: Vec<f32>,
    /// Per-row work vector.
    pub(crate) y: Vec<f32>,
    /// The joint step.
    pub(crate) dq: Vec<f32>,
    /// The posture pull (per column), projected into the null space of the tasks.
    pub(crate) z: Vec<f32>,
    /// `Ĵ = J_L N` of every level solved so far, row-major, level after level.
    pub(crate) jhat: Vec<f32>,
    /// The null-space projector `N` (`cols × cols`) of [`DlsBuffers::prioritized_step_formed`].
    null: Vec<f32>,
    /// `(Ĵ Ĵᵀ + ε I)⁻¹ Ĵ` of the current level ([`DlsBuffers::prioritized_step_formed`]).
    w: Vec<f32>,
    /// The posture term as added to `dq` by [`DlsBuffers::prioritized_step`] (`z` projected).
    pub(crate) pz: Vec<f32>,
    /// Each solved level's `Ĵ Ĵᵀ + ε I`, factorised in place (its projector), level after
    /// level.
    proj: Vec<f32>,
    /// The solved levels of a step: first row in `jhat`, rows, offset of the factor in `proj`.
    levels: Vec<(usize, usize, usize)>,
    /// Row selection of the current level.
    sel: Vec<usize>,
    /// Row selection of the first solved level (`masks` of [`DlsBuffers::prioritized_step`]).
    sel0: Vec<usize>,
    /// With `masks`: the part of each row of the first solved level (its rows linked by
    /// shared columns; the smallest row index of the part), see [`Parts`].
    part: Vec<usize>,
    /// With `masks`: the columns of each part of the first solved level (at its label).
    part_mask: Vec<u128>,
    /// Row indices of one or more parts, ascending (work list).
    within: Vec<usize>,
    /// Column work vector (`max_rows`).
    col: Vec<f32>,
}

/// Regularisation of the null-space projectors of the priority levels: a damped projector
/// would let the lower levels leak into the higher ones.
const PROJECTOR_DAMPING: f32 = 1e-6;

impl DlsBuffers {
    /// Buffers for up to `max_rows` rows and `cols` columns.
    pub(crate) fn new(max_rows: usize, cols: usize) -> Self {
        Self {
            jac: vec![0.0; max_rows * cols],
            a: vec![0.0; max_rows * max_rows],
            e: vec![0.0; max_rows],
            y: vec![0.0; max_rows],
            dq: vec![0.0; cols],
            z: vec![0.0; cols],
            jhat: vec![0.0; max_rows * cols],
            null: vec![0.0; cols * cols],
            w: vec![0.0; max_rows * cols],
            pz: vec![0.0; cols],
            proj: vec![0.0; max_rows * max_rows],
            levels: vec![(0, 0, 0); max_rows],
            sel: vec![0; max_rows],
            sel0: vec![0; max_rows],
            part: vec![0; max_rows],
            part_mask: vec![0; max_rows],
            within: vec![0; max_rows],
            col: vec![0.0; max_rows],
        }
    }

    /// The prioritised step into `dq` for the tasks on several priority levels
    /// (`row_level[r]`, lowest value first): recursive null-space projection (Siciliano–Slotine),
    /// level `l` damped by `damping(l)` (its `λ²`; `None` leaves the rows of `l` out: a
    /// disabled task), the projectors nearly undamped. With `first_gram`, the caller fills the
    /// lower triangle of the first solved level's `J Jᵀ` (`m × m`, row-major, from `jac`, its
    /// rows in ascending order) — it knows the sparsity. With `posture`, `z` is projected into
    /// the null space of every level into `pz` and added to `dq`. Returns `false` (with the
    /// levels solved so far in `dq`) when a level's normal matrix is not positive definite.
    /// With `masks` (each row's nonzero columns, `masks[r]` bit `c` for column `c`; a set bit
    /// may also mark a zero) the rows of a later level are projected out of the first solved
    /// level's rows (rows of `jac`) only over the columns the two share: the same bits (see
    /// [`dot_within`]; what the full products would add there are zeros).
    ///
    /// The null-space projector `N` (`cols × cols`) is never formed: each solved level keeps
    /// its projected rows `Ĵ_i` and the factor of `Ĵ_i Ĵ_iᵀ + ε I`, and a later level's rows
    /// (and the posture pull) are projected by `x ← x − Ĵ_iᵀ (Ĵ_i Ĵ_iᵀ + ε I)⁻¹ Ĵ_i x`, one
    /// solved level after the other — `rows × rows × cols` work instead of `rows × cols²`
    /// (on the 55-DOF humanoid with the look-at on a second level: a step 4–5× cheaper than
    /// with `N` formed).
    pub(crate) fn prioritized_step<L: Copy + Ord>(
        &mut self,
        rows: usize,
        n: usize,
        row_level: &[L],
        damping: impl Fn(L) -> Option<f32>,
        first_gram: Option<&dyn Fn(&[f32], L, &mut [f32], usize)>,
        posture: bool,
        masks: Option<&[u128]>,
    ) -> bool {
        let row_level = &row_level[..rows];
        let jac = &self.jac[..rows * n];
        self.dq[..n].fill(0.0);
        let solved = |l: &L| damping(*l).is_some();
        let Some(mut level) = row_level.iter().filter(|l| solved(l)).copied().min() else {
            self.add_unprojected_posture(n, posture);
            return true;
        };
        // The solved levels: (first row in `jhat`, rows, offset of the projector's factor in
        // `proj`).
        let mut done = 0usize;
        let (mut row0, mut f0) = (0usize, 0usize);
        loop {
            let m = select_level(&mut self.sel, row_level, level);
            let next = next_level(row_level, level, solved);
            let lambda2 = damping(level).unwrap_or(0.0);
            let first = done == 0;
            // Ĵ = J_L N (the earlier levels projected out of each row), r = e_L − J_L dq.
            let (prev, cur) = self.jhat.split_at_mut(row0 * n);
            let jh = &mut cur[..m * n];
            if first {
                // The first level's rows (rows of `jac`): their masks for the later levels.
                self.sel0[..m].copy_from_slice(&self.sel[..m]);
            }
            for (i, &r) in self.sel[..m].iter().enumerate() {
                let jr = &jac[r * n..(r + 1) * n];
                let row = &mut jh[i * n..(i + 1) * n];
                row.copy_from_slice(jr);
                if first {
                    self.y[i] = self.e[r];
                    continue;
                }
                self.y[i] = self.e[r] - dot(jr, &self.dq[..n]);
                for (l, &(p0, mp, fp)) in self.levels[..done].iter().enumerate() {
                    let (jp, factor) = (&prev[p0 * n..(p0 + mp) * n], &self.proj[fp..fp + mp * mp]);
                    match masks {
                        // The row is still a row of `jac` (nothing projected out of it yet),
                        // and so are the first level's.
                        Some(masks) if l == 0 => project_out_masked(
                            jp,
                            (&self.sel0[..mp], masks, masks[r]),
                            (
                                &self.part[..mp],
                                &self.part_mask[..mp],
                                &mut self.within[..mp],
                            ),
                            factor,
                            &mut self.col[..mp],
                            row,
                        ),
                        _ => project_out(jp, factor, &mut self.col[..mp], row),
                    }
                }
            }
            // With masks, the first level's parts: its normal matrix is block diagonal over
            // them (rows that share no column give exact zeros), factorised part by part.
            let parts = match masks {
                Some(masks) if first => find_parts(
                    (&self.sel[..m], masks),
                    &mut self.part[..m],
                    &mut self.part_mask[..m],
                ),
                _ => 1,
            };
            let a = &mut self.a[..m * m];
            match first_gram {
                Some(fill) if first => fill(jac, level, a, m),
                _ => {
                    // Ĵ Ĵᵀ, lower triangle.
                    for p in 0..m {
                        for q in 0..=p {
                            a[p * m + q] = dot(&jh[p * n..(p + 1) * n], &jh[q * n..(q + 1) * n]);
                        }
                    }
                }
            }
            let project = next.is_some() || posture;
            if project {
                self.proj[f0..f0 + m * m].copy_from_slice(a);
            }
            for i in 0..m {
                a[i * m + i] += lambda2;
            }
            if !cholesky_parts(a, m, parts, &self.part[..m], &mut self.within[..m]) {
                return false;
            }
            cholesky_solve(a, m, &mut self.y[..m]);
            // dq += Ĵᵀ y, row by row (independent lanes: vectorises).
            for (i, &yi) in self.y[..m].iter().enumerate() {
                for (d, &v) in self.dq[..n].iter_mut().zip(&jh[i * n..(i + 1) * n]) {
                    *d += v * yi;
                }
            }
            if !project {
                break;
            }
            // The projector uses Ĵ Ĵᵀ + ε I with a tiny ε (the level's damped factor when
            // that is not positive definite).
            let p = &mut self.proj[f0..f0 + m * m];
            for i in 0..m {
                p[i * m + i] += PROJECTOR_DAMPING;
            }
            if !cholesky_parts(p, m, parts, &self.part[..m], &mut self.within[..m]) {
                p.copy_from_slice(a);
            }
            self.levels[done] = (row0, m, f0);
            done += 1;
            row0 += m;
            f0 += m * m;
            match next {
                Some(l) => level = l,
                None => break,
            }
        }
        if posture {
            // pz = N z, one solved level after the other.
            let pz = &mut self.pz[..n];
            pz.copy_from_slice(&self.z[..n]);
            for &(p0, mp, fp) in &self.levels[..done] {
                project_out(
                    &self.jhat[p0 * n..(p0 + mp) * n],
                    &self.proj[fp..fp + mp * mp],
                    &mut self.col[..mp],
                    pz,
                );
            }
            for (d, &x) in self.dq[..n].iter_mut().zip(pz.iter()) {
                *d += x;
            }
        }
        true
    }

    /// [`DlsBuffers::prioritized_step`] with the null-space projector `N` (`cols × cols`)
    /// formed between levels (`rows × cols²` work a level), every level solved and damped by
    /// `lambda2`: the full-body solver's several-level path (goals on several priority
    /// levels), kept bit for bit. Moved onto the implicit projection, its cold solves give the
    /// same goals met everywhere but in `tests/full_body.rs`'
    /// `priorities_decide_which_goal_gives_way`, whose outcome flips with rounding (the formed
    /// step scaled by 1 − 10⁻⁶ fails it too: the hand 0.47 m short instead of 23 µm); that
    /// cold solve's sensitivity is what to fix before this path goes.
    pub(crate) fn prioritized_step_formed<L: Copy + Ord>(
        &mut self,
        rows: usize,
        n: usize,
        row_level: &[L],
        lambda2: f32,
        posture: bool,
    ) -> bool {
        let row_level = &row_level[..rows];
        let jac = &self.jac[..rows * n];
        let null = &mut self.null[..n * n];
        null.fill(0.0);
        for i in 0..n {
            null[i * n + i] = 1.0;
        }
        self.dq.fill(0.0);
        let Some(mut level) = row_level.iter().copied().min() else {
            self.add_unprojected_posture(n, posture);
            return true;
        };
        // `null` is still the identity (no level has been projected out).
        let mut identity = true;
        loop {
            let m = select_level(&mut self.sel, row_level, level);
            let sel = &self.sel[..m];
            let next = next_level(row_level, level, |_| true);
            // Ĵ = J_L N, residual r = e_L − J_L dq.
            let jhat = &mut self.jhat[..m * n];
            for (i, &r) in sel.iter().enumerate() {
                let jr = &jac[r * n..(r + 1) * n];
                for c in 0..n {
                    jhat[i * n + c] = (0..n).map(|k| jr[k] * null[k * n + c]).sum();
                }
                self.y[i] = self.e[r] - jr.iter().zip(&self.dq).map(|(a, b)| a * b).sum::<f32>();
            }
            // Ĵ Ĵᵀ, both triangles.
            let a = &mut self.a[..m * m];
            for p in 0..m {
                for q in 0..=p {
                    let v: f32 = (0..n).map(|c| jhat[p * n + c] * jhat[q * n + c]).sum();
                    a[p * m + q] = v;
                    a[q * m + p] = v;
                }
            }
            let project = next.is_some() || posture;
            let p = &mut self.proj[..m * m];
            if project {
                p.copy_from_slice(a);
            }
            for i in 0..m {
                a[i * m + i] += lambda2;
            }
            if !cholesky(a, m) {
                return false;
            }
            cholesky_solve(a, m, &mut self.y[..m]);
            for c in 0..n {
                self.dq[c] += (0..m).map(|i| jhat[i * n + c] * self.y[i]).sum::<f32>();
            }
            if project {
                // The projector uses Ĵ Ĵᵀ + ε I with a tiny ε (the level's damped factor when
                // that is not positive definite).
                for i in 0..m {
                    p[i * m + i] += PROJECTOR_DAMPING;
                }
                let factor: &[f32] = if cholesky(p, m) { p } else { a };
                if next.is_none() {
                    // Only the posture term needs this level's projector: apply it to `z`
                    // alone, `pz = N z − Ĵᵀ (Ĵ Ĵᵀ + ε I)⁻¹ Ĵ z`, instead of forming
                    // `N ← N − Ĵᵀ (Ĵ Ĵᵀ + ε I)⁻¹ Ĵ`.
                    let (z, pz) = (&self.z[..n], &mut self.pz[..n]);
                    if identity {
                        pz.copy_from_slice(z);
                    } else {
                        for k in 0..n {
                            pz[k] = (0..n).map(|c| null[k * n + c] * z[c]).sum::<f32>();
                        }
                    }
                    let col = &mut self.col[..m];
                    for (i, c) in col.iter_mut().enumerate() {
                        *c = dot(&jhat[i * n..(i + 1) * n], z);
                    }
                    cholesky_solve(factor, m, col);
                    for (i, &c) in col.iter().enumerate() {
                        for (x, &v) in pz.iter_mut().zip(&jhat[i * n..(i + 1) * n]) {
                            *x -= c * v;
                        }
                    }
                    for (d, &x) in self.dq[..n].iter_mut().zip(pz.iter()) {
                        *d += x;
                    }
                    return true;
                }
                // N ← N − Ĵᵀ (Ĵ Ĵᵀ + ε I)⁻¹ Ĵ.
                identity = false;
                let w = &mut self.w[..m * n];
                w.copy_from_slice(jhat);
                let col = &mut self.col[..m];
                for c in 0..n {
                    for i in 0..m {
                        col[i] = w[i * n + c];
                    }
                    cholesky_solve(factor, m, col);
                    for i in 0..m {
                        w[i * n + c] = col[i];
                    }
                }
                for k in 0..n {
                    for c in 0..n {
                        null[k * n + c] -=
                            (0..m).map(|i| jhat[i * n + k] * w[i * n + c]).sum::<f32>();
                    }
                }
            }
            match next {
                Some(l) => level = l,
                None => break,
            }
        }
        true
    }

    /// With `posture` and no level to solve: the posture pull as it is, `pz = z`, added to
    /// `dq`.
    fn add_unprojected_posture(&mut self, n: usize, posture: bool) {
        if posture {
            self.pz[..n].copy_from_slice(&self.z[..n]);
            for (d, p) in self.dq.iter_mut().zip(&self.pz[..n]) {
                *d += p;
            }
        }
    }

    /// Adds the posture pull `z` in the null space of the single-level step:
    /// `dq += (I − J⁺J) z`, `J⁺ = Jᵀ A⁻¹`, with `a` holding the Cholesky factor of
    /// `J Jᵀ + λ² I` (`rows × rows`).
    pub(crate) fn add_null_space_posture(&mut self, rows: usize, cols: usize) {
        let jac = &self.jac[..rows * cols];
        for r in 0..rows {
            self.y[r] = (0..cols).map(|c| jac[r * cols + c] * self.z[c]).sum();
        }
        cholesky_solve(&self.a[..rows * rows], rows, &mut self.y[..rows]);
        for c in 0..cols {
            let back: f32 = (0..rows).map(|r| jac[r * cols + c] * self.y[r]).sum();
            self.dq[c] += self.z[c] - back;
        }
    }
}

/// In-place Cholesky factorisation (lower triangle) of the `n × n` row-major `a`; `false` when
/// `a` is not (numerically) positive definite.
pub(crate) fn cholesky(a: &mut [f32], n: usize) -> bool {
    // Row slices instead of indices (no bounds check per product); every sum in the same
    // order as the textbook loops, so the same bits.
    let a = &mut a[..n * n];
    for j in 0..n {
        let (upper, lower) = a.split_at_mut((j + 1) * n);
        let row_j = &mut upper[j * n..];
        let mut d = row_j[j];
        for &x in &row_j[..j] {
            d -= x * x;
        }
        if d.is_nan() || d <= 0.0 || !d.is_finite() {
            return false;
        }
        let d = d.sqrt();
        row_j[j] = d;
        let l_j = &row_j[..j];
        for row_i in lower.chunks_exact_mut(n) {
            let mut s = row_i[j];
            for (&x, &y) in row_i[..j].iter().zip(l_j) {
                s -= x * y;
            }
            row_i[j] = s / d;
        }
    }
    true
}

/// Solves `L Lᵀ x = b` in place with the factor from [`cholesky`].
pub(crate) fn cholesky_solve(a: &[f32], n: usize, b: &mut [f32]) {
    let (a, b) = (&a[..n * n], &mut b[..n]);
    for i in 0..n {
        let row = &a[i * n..=i * n + i];
        let mut s = b[i];
        for (&x, &y) in row[..i].iter().zip(&b[..i]) {
            s -= x * y;
        }
        b[i] = s / row[i];
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        // Column i below the diagonal.
        let below = a.get((i + 1) * n + i..).unwrap_or_default();
        for (&x, &y) in below.iter().step_by(n).zip(&b[i + 1..]) {
            s -= x * y;
        }
        b[i] = s / a[i * n + i];
    }
}

/// The rows on `level` into `sel` (ascending); returns how many.
fn select_level<L: Copy + PartialEq>(sel: &mut [usize], row_level: &[L], level: L) -> usize {
    let mut m = 0;
    for (r, &l) in row_level.iter().enumerate() {
        if l == level {
            sel[m] = r;
            m += 1;
        }
    }
    m
}

/// The next level after `level` that `solved` keeps, if any.
fn next_level<L: Copy + Ord>(row_level: &[L], level: L, solved: impl Fn(&L) -> bool) -> Option<L> {
    row_level
        .iter()
        .filter(|&&l| l > level && solved(&l))
        .copied()
        .min()
}

/// `x ← x − Ĵᵀ (Ĵ Ĵᵀ + ε I)⁻¹ Ĵ x`: `x` with the row space of a solved level taken out
/// (`jh` its `m × n` projected rows, `factor` the Cholesky factor of `Ĵ Ĵᵀ + ε I`, `col` an
/// `m`-vector of work space).
fn project_out(jh: &[f32], factor: &[f32], col: &mut [f32], x: &mut [f32]) {
    let (m, n) = (col.len(), x.len());
    for (i, c) in col.iter_mut().enumerate() {
        *c = dot(&jh[i * n..(i + 1) * n], x);
    }
    cholesky_solve(factor, m, col);
    for (i, &c) in col.iter().enumerate() {
        for (v, &j) in x.iter_mut().zip(&jh[i * n..(i + 1) * n]) {
            *v -= c * j;
        }
    }
}

/// The columns from the first to the last set bit of `mask` (`lo..hi`; empty for 0).
pub(crate) fn span(mask: u128) -> (usize, usize) {
    if mask == 0 {
        return (0, 0);
    }
    (
        mask.trailing_zeros() as usize,
        (u128::BITS - mask.leading_zeros()) as usize,
    )
}

/// Dot product with four accumulators (lets the compiler use SIMD lanes).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ta, tb) = (ca.remainder(), cb.remainder());
    let mut sum = lanes(ca, cb);
    for (x, y) in ta.iter().zip(tb) {
        sum += x * y;
    }
    sum
}

/// The four-lane part of [`dot`]: each lane's products summed in order, then the lanes.
#[inline]
fn lanes(ca: core::slice::ChunksExact<'_, f32>, cb: core::slice::ChunksExact<'_, f32>) -> f32 {
    let mut acc = [0.0f32; 4];
    for (x, y) in ca.zip(cb) {
        for i in 0..4 {
            acc[i] += x[i] * y[i];
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// [`dot`] of two equally long slices whose products vanish outside `lo..hi` (a zero in `a` or
/// `b` there): the same bits, summing only the four-lane chunks and tail entries that meet
/// `lo..hi`. Each lane and the tail add the same nonzero products in the same order; the
/// products left out are ±0, and adding ±0 changes neither a nonzero sum nor a `+0.0` one
/// (every sum starts at `+0.0`, and `x − x` rounds to `+0.0`), so no sum differs, not even in
/// the sign of a zero. The full-body solver's Jacobian rows are zero outside the columns of
/// the joints that move their effector.
pub(crate) fn dot_within(a: &[f32], b: &[f32], lo: usize, hi: usize) -> f32 {
    let n = a.len().min(b.len());
    let whole = n - n % 4;
    let hi = hi.min(n);
    if lo >= hi {
        return 0.0;
    }
    // The chunks that meet lo..hi (within the whole chunks).
    let c0 = (lo & !3).min(whole);
    let c1 = ((hi + 3) & !3).min(whole).max(c0);
    let mut sum = lanes(a[c0..c1].chunks_exact(4), b[c0..c1].chunks_exact(4));
    for k in lo.max(whole)..hi {
        sum += a[k] * b[k];
    }
    sum
}

#[cfg(test)]
mod tests;
