//! Batched two-bone limb IK for crowds: many [`TwoBoneIk`] limbs per call, four at a time in
//! SIMD lanes.
//!
//! [`TwoBoneBatch`] is built once from `(skeleton, limb)` pairs and keeps the limbs' rest data
//! (segment offsets, rest scales, bend axes, flex limits, soft reach) as a structure of arrays.
//! Each [`TwoBoneBatch::solve`] then takes one [`LimbGoal`] and the root's parent model
//! transform per limb, reads and writes the limbs' local `[root, mid, tip]` rotations in place
//! and fills one report per limb. It allocates nothing. For a crowd solved every frame,
//! [`TwoBoneBatch::solve_lanes`] is the faster entry (about 2× `solve`'s throughput without
//! reports): the same solve on inputs kept in lanes between calls, see
//! [*Resident lanes*](self#resident-lanes-solve_lanes).
//!
//! ```
//! use ik_core::analytic::batch::{BatchScratch, TwoBoneBatch};
//! use ik_core::analytic::{LimbGoal, TwoBoneIk};
//! use ik_core::{Bone, BoneTransform, Skeleton};
//! use glam::{Quat, Vec3};
//!
//! let skeleton = Skeleton::try_new(vec![
//!     Bone::new("shoulder", None, BoneTransform::IDENTITY),
//!     Bone::new("elbow", Some(0), BoneTransform::from_translation(Vec3::X * 0.3)),
//!     Bone::new("wrist", Some(1), BoneTransform::from_translation(Vec3::X * 0.25)),
//! ])?;
//! let arm = TwoBoneIk::try_new(&skeleton, 0, 1, 2)?;
//! // A crowd of 100 identical arms (they could all be different).
//! let batch = TwoBoneBatch::try_new((0..100).map(|_| (&skeleton, &arm)))?;
//! let goals: Vec<_> = (0..100)
//!     .map(|i| LimbGoal::new(Vec3::new(0.3, 0.002 * i as f32, 0.2)).with_pole(Vec3::NEG_Z))
//!     .collect();
//! let parents = vec![BoneTransform::IDENTITY; 100];
//! let mut rotations = vec![[Quat::IDENTITY; 3]; 100];
//! let mut reports = vec![Ok(Default::default()); 100];
//! let mut scratch = BatchScratch::new();
//! batch.solve(&goals, &parents, &mut rotations, &mut reports, &mut scratch)?;
//! for report in &reports {
//!     let report = report.as_ref().expect("good input");
//!     // Measured from forward kinematics of the written rotations.
//!     assert!(report.reachable && report.position_error < 1e-5);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Semantics
//!
//! Those of [`TwoBoneIk::solve_with_parent`], limb by limb: the same flex from the law of
//! cosines with soft reach and flex limits, the same pole plane (and the same fallback to the
//! incoming bend plane for a [`Pole::Keep`] goal or a pole collinear with the target), wrist
//! orientation and weights, the same [`LimbReport`] flags, and bad input as a per-limb `Err`
//! status (the limb's rotations left unchanged) instead of a failed call. The lanes compute
//! goals with full weights and a pole position or [`Pole::Keep`], including targets at the root
//! and turns near a half turn. A lane off that path — a [`Pole::Swivel`] goal, partial weights,
//! the rest-plane fallback (incoming plane degenerate too), a pole so far or so near that the
//! target frame's products would leave f32's range (the scalar solve's test), any non-finite
//! value — is handed to the scalar [`TwoBoneIk`] solve itself, so the rare cases have one implementation
//! ([`TwoBoneBatch::solve`] returns how many limbs took it). Two differences, both stricter:
//! - [`LimbReport::position_error`] is *measured*: the distance from the tip placed by forward
//!   kinematics of the written rotations to the effective target (the scalar solve computes it
//!   from its own construction).
//! - A limb whose result would hold a non-finite value (e.g. a NaN incoming tip rotation that
//!   the scalar solve passes through when the goal has no orientation) is reported as
//!   [`AnalyticError::DegeneratePose`] and left unchanged: the batch never writes a NaN.
//!
//! The results match the scalar solve's to rounding (the test `tests/analytic_batch.rs` holds
//! joint positions to 1e-5 of the limb length on the bench's goal mix and on random rigs); the
//! written quaternions are normalised with a hardware reciprocal square root and one Newton
//! step (unit to about 2e-7).
//!
//! The limbs' local translations are their skeletons' rest translations, read at set-up (as a
//! [`Pose`] from [`Skeleton::rest_pose`] has them); call
//! [`TwoBoneBatch::set_translations`] when animation moves them. Limbs with bones between root,
//! mid and tip (twist bones) are refused at set-up ([`BatchError::BonesBetween`]): solve those
//! with [`TwoBoneIk`].
//!
//! # Resident lanes (`solve_lanes`)
//!
//! [`TwoBoneBatch::solve`] reads per-limb slices and writes per-limb rotations and reports:
//! convenient, but about 40 % of its time is moving data between those slices and the lanes.
//! A caller that keeps its limbs' inputs from frame to frame can hold them in the lanes
//! instead: [`LaneGoals`] (the goals) and [`LanePoses`] (each limb's root's parent model
//! transform and local `[root, mid, tip]` rotations, which the solve overwrites with the
//! solved ones, and each limb's status). [`TwoBoneBatch::solve_lanes`] then reads and writes
//! whole vectors, and computes a [`LimbReport`] per limb only when given a slice for them. The
//! results are those of [`TwoBoneBatch::solve`], to the bit (tested).
//!
//! ```
//! use ik_core::analytic::batch::{BatchScratch, LaneGoals, LanePoses, TwoBoneBatch};
//! use ik_core::analytic::{LimbGoal, TwoBoneIk};
//! use ik_core::{Bone, BoneTransform, Skeleton};
//! use glam::{Quat, Vec3};
//!
//! let skeleton = Skeleton::try_new(vec![
//!     Bone::new("shoulder", None, BoneTransform::IDENTITY),
//!     Bone::new("elbow", Some(0), BoneTransform::from_translation(Vec3::X * 0.3)),
//!     Bone::new("wrist", Some(1), BoneTransform::from_translation(Vec3::X * 0.25)),
//! ])?;
//! let arm = TwoBoneIk::try_new(&skeleton, 0, 1, 2)?;
//! // Set-up, once: the batch, its lanes and a scratch buffer.
//! let batch = TwoBoneBatch::try_new((0..100).map(|_| (&skeleton, &arm)))?;
//! let mut goals = LaneGoals::new(batch.len());
//! let mut poses = LanePoses::new(batch.len());
//! let mut scratch = BatchScratch::new();
//! // Each frame: write what changed (here everything), solve, read the rotations back.
//! for i in 0..batch.len() {
//!     let target = Vec3::new(0.3, 0.002 * i as f32, 0.2);
//!     goals.set(i, &LimbGoal::new(target).with_pole(Vec3::NEG_Z))?;
//!     // The animated pose's parent model transform and local rotations.
//!     poses.set(i, &BoneTransform::IDENTITY, [Quat::IDENTITY; 3])?;
//! }
//! batch.solve_lanes(&goals, &mut poses, None, &mut scratch)?;
//! for i in 0..batch.len() {
//!     assert!(poses.error(i).is_none());
//!     let [root, mid, tip] = poses.rotations(i)?;
//!     // ... write them to the limb's bones.
//! #   let tip_position = root * (Vec3::X * 0.3 + mid * (Vec3::X * 0.25));
//! #   let target = Vec3::new(0.3, 0.002 * i as f32, 0.2);
//! #   assert!(tip_position.distance(target) < 1e-5 && tip.is_finite());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Lanes hold four limbs each, field by field; [`LaneGoals::set`] and [`LanePoses::set`]
//! write one limb's lanes (scalar stores: about 18 ns per limb with
//! [`LanePoses::rotations`] reading them back, see *Performance*) and
//! [`LanePoses::rotations`] reads them. Only the limbs whose goal or pose changed need
//! writing: the lanes keep their values between calls, and the solved rotations stay in
//! [`LanePoses`] as the next call's incoming pose unless set.
//!
//! # Layout and SIMD
//!
//! Lanes are [`wide::f32x4`]: four limbs per vector. The rest data is stored per block of four
//! limbs, field by field (structure of arrays within a block, so each field is one aligned
//! load), as are [`LaneGoals`] and [`LanePoses`]; [`TwoBoneBatch::solve`] reads the per-call
//! goals, parents and rotations from the caller's slices as one
//! vector per `Vec3`/`Quat` and transposed 4 × 4 into lanes in registers, and the written
//! rotations transposed back. `wide` rather than glam's `Vec4` (which the scalar solve uses as
//! *one* vector per limb, across x, y, z): a lane-per-limb layout needs lane-wise square roots,
//! reciprocal square roots, selects on comparison masks and `exp` (soft reach), and glam's
//! `Vec4` has no lane-wise square root; `wide` was already in this crate's tree
//! (nalgebra → simba) when it was chosen (nalgebra has since left ik-core's dependencies). `f32x4` rather than `f32x8`: the default
//! x86-64 target has SSE2 and no AVX, where `wide`'s `f32x8` is two `f32x4`, i.e. two blocks
//! interleaved; measured slower (≈ 55 against ≈ 41 ns per limb: more spills, and the branches
//! over rare cases taken in more blocks).
//!
//! # Performance
//!
//! Bench `analytic_batch` (every path and the scalar solve in the same run, alternating, on the
//! analytic bench's 1000-goal mix: 70 % reachable, 40 % of all goals with a wrist orientation
//! (four of the seven reachable goals in ten), 20 % beyond reach, 10 % degenerate; 1000 limbs
//! per call, each starting from another goal's result), default x86-64 (SSE2) build: the
//! median of the bench's printed summaries over five runs alternating with the previous
//! kernel's build, on the shared development machine (2 cores, AMD EPYC, load average 6–9):
//!
//! | path                                                  | ns per limb | scalar / path | previous kernel |
//! |-------------------------------------------------------|------------:|--------------:|----------------:|
//! | [`TwoBoneIk::solve_with_parent`], one limb at a time  |        72.9 |         1×    |  72.9 |
//! | [`TwoBoneBatch::solve`] (slices in and out, reports)  |        39.9 |         1.83× |  41.5 |
//! | [`TwoBoneBatch::solve_lanes`], reports               |        26.2 |         2.78× |  28.8 |
//! | [`TwoBoneBatch::solve_lanes`], no reports             |    **19.3** |     **3.78×** |  21.2 |
//! | every limb's goal, parent and rotations [`LaneGoals::set`] / [`LanePoses::set`], `solve_lanes` without reports, [`LanePoses::rotations`] read back | 37.5 | 1.94× | 38.5 |
//!
//! (`solve_lanes` without reports: 19.3–19.6 ns in the five runs, the previous kernel 21.2 in
//! each.) The issue's goal, 20 ns per limb on this goal mix, is met on this machine. The last
//! row is what a caller pays that rewrites every limb from per-limb data each call: writing
//! and reading lanes one limb at a time costs about what [`TwoBoneBatch::solve`]'s gather and
//! scatter do (≈ 18 ns per limb). The resident form pays off where inputs are produced in
//! place or only some limbs change.
//!
//! Where the time goes, from callgrind's instruction counts (deterministic, unlike the clock
//! here; `examples/analytic_instructions` runs the same goals: `... 20 lanes` / `... 20 batch`)
//! and the clock:
//! - `solve_lanes` without reports executes 271 instructions per limb (was 285; `solve` 603,
//!   was 615). Of those, 23 % are multiplications, 20 % register copies (SSE2's operations
//!   overwrite an operand) and 20 % loads and stores, about half of them spills (a lane
//!   `Vec3` is three of the sixteen vector registers, a `Quat` four).
//! - The time follows the count only loosely: a tidier block loop (the padding test and the
//!   block's limb count off the usual path) saved 6 instructions per limb and *added* 0.7 ns
//!   (dropped).
//! - The rare target frames (a target at the root, a pole collinear with the target: one lane
//!   in fifteen in the bench, behind a branch taken at random in 27 % of the blocks) cost
//!   ≈ 1.2 ns per limb (26 instructions), measured by switching the branch off (wrong results,
//!   for the measurement only). The common path is ≈ 18.3 ns.
//! - The build is the x86-64 baseline (SSE2; the repository sets no `target-cpu`), as CI's and
//!   users' default. A run-time selected AVX2/FMA kernel was not tried: calling a
//!   `#[target_feature]` function needs `unsafe`, which this crate forbids, and an earlier
//!   x86-64-v3 build of the same kernel measured only ≈ 5 % faster.
//!
//! Measured and kept in this work, in order (instructions per limb of `solve_lanes` without
//! reports; ns per limb in the same runs as the previous kernel's 21.2):
//! - The mid's near half turn (a lane whose incoming lower segment lies in the bend plane,
//!   as after any solve) by its angle in the plane: `l2 cos θ = b·u`, `l2 sin θ = b·(u × h)`
//!   and the half-angle form `(h (l2 − b·u), l2 sin θ)`, its sign that of `sin θ`, instead of
//!   two arcs (one onto `u × h`, then a quarter turn): about 10 products instead of 30, in
//!   every block: 285 → 277, 20.6 ns.
//! - The rare target frames in the scaled frame `(d |x|, x |d|, d × x)`, which holds for any
//!   `x` normal to `d`, instead of a unit frame: the incoming bend plane's axis made normal
//!   to `d` as `hk |d|² − d (hk·d)` (no division, no normalisation), and for a target at the
//!   root `d` replaced by the direction to the incoming tip (unscaled). A pole so far or near
//!   that the products would leave f32's range now takes the scalar solve (its unit frame)
//!   instead of a third route in the lanes: 277 → 272, 19.7 ns (the branch's cost roughly
//!   halved: 2.1 → 1.2 ns).
//! - The near-collinear pole step only where such a pole is used (a pole collinear enough to
//!   take the incoming plane skips it), one finiteness sum for the nine input components, and
//!   `1e-6 (l1 + l2)` and `(l1 + l2)⁴` from set-up: 271, 19.3 ns.
//!
//! Measured and dropped in this work:
//! - Lanes grouped by goal kind (a stable permutation of the resident lanes, so that blocks
//!   without a wrist orientation skip the wrist's ≈ 90 operations): not built. In the bench,
//!   as in the goal set it models, a limb's goal changes every call (each limb alternates
//!   between two goals, the set and the set shifted by one), so a limb's kind changes with
//!   it; a permutation kept up to date would move lanes every call, which costs what
//!   [`LaneGoals::set`] / [`LanePoses::set`] do (≈ 18 ns per limb, the round-trip row).
//!   Grouped by "has an orientation in either set", only 20 % of the limbs never have one.
//!   Without orientations at all the kernel skips the wrist already (chosen per call).
//! - Square roots replaced by `x · (1/√x)` (reciprocal square root and a Newton step) for the
//!   target frame's scale and the limb's reach: no faster (19.4–19.7 against 19.4–19.5 ns;
//!   more instructions for a shorter chain, and the chain is not what limits the block).
//! - The tidier block loop above (+0.7 ns).
//!
//! From the previous round (its instruction counts, 323 → 285): the inputs read through
//! references where they are used instead of copied to the stack first; the root before
//! the mid and each value computed next to its use; the unit frame's two kinds each only
//! where a lane of its kind is in the block; the root's rotation from `G = B Âᵀ` (15
//! products) and the set-up rotation `E` of `(ua, h, ua × h)` instead of `Σ bᵢaᵢᵀ` (42);
//! finiteness probed on the normalisations' factors; the mid's half turn and the wrist
//! computed in every block and selected instead of behind branches taken at random (more
//! instructions, less time), the wrist's work chosen once per call (skipped where no goal
//! has an orientation); one test for both rare routes, against the early part of the lane
//! mask. Dropped then: the near-collinear pole step in every block (a division: 21.5 → 23.0
//! ns); the wrist's choice as a run-time flag (23.3 ns); input and output finiteness probes
//! summed into one.
//!
//! From the earlier work (instruction counts of that kernel): resident lanes ([`LaneGoals`],
//! [`LanePoses`]; with reports ≈ 32 ns per limb where `solve` took ≈ 44 in the same runs),
//! reports only when asked (≈ 26), the limb's segments, lengths, bend plane and law-of-cosines
//! constants taken from set-up where the parent scale is one (not for other uniform scales:
//! rescaling rounds differently from the scalar solve, and the flex-limit flag next to a
//! limit flipped on a one-ulp length difference, found by the property test), plain stores
//! where a whole block solved, Shepperd's largest-diagonal form selected branch-free near a
//! half turn; in [`TwoBoneBatch::solve`], the gather written out for four lanes, 4 × 4
//! transposes in registers, normalisation by reciprocal square root and a Newton step.
//! Dropped then: the unit target frame out of line, or in scalar code for just its lanes
//! (slower: the lanes read and written back through memory); the near-half-turn frame of the
//! root behind a branch (no faster: the branch is random); `f32x8` (on SSE2 two `f32x4`
//! interleaved: ≈ 55 against ≈ 41 ns for `solve`, more spills, the branches over rare cases
//! taken in more blocks). Reports cost ≈ 7 ns per limb (the residual's forward kinematics and
//! the flex angle's `acos`).

use glam::{Quat, Vec3};
use thiserror::Error;
use wide::{CmpEq, CmpGe, CmpGt, CmpLe, CmpLt, CmpNe, f32x4};

use super::{AnalyticError, LimbGoal, LimbReport, Pole, TwoBoneIk};
use crate::pose::{BoneTransform, Pose};
use crate::skeleton::{Bone, MIN_BONE_LENGTH, Skeleton};

/// The lane type: four limbs per vector.
type F = f32x4;
/// Limbs per vector (the gather and the transposes are written out for four).
const LANES: usize = 4;

/// Errors from building a [`TwoBoneBatch`] or from a call with mismatched slices.
///
/// Bad *values* (a NaN target, a degenerate parent) are not errors of the call: they are the
/// affected limb's `Err` report.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum BatchError {
    /// The limb at this index has bones between root and mid or between mid and tip.
    #[error("limb {limb} has bones between root, mid and tip; solve it with `TwoBoneIk`")]
    BonesBetween {
        /// Index of the limb in the set-up order.
        limb: usize,
    },
    /// The limb at this index does not fit its skeleton.
    #[error("limb {limb}: {source}")]
    Limb {
        /// Index of the limb in the set-up order.
        limb: usize,
        /// What is wrong with it.
        source: AnalyticError,
    },
    /// A per-call slice does not have one entry per limb.
    #[error("the batch has {limbs} limbs but `{slice}` has {found} entries")]
    LengthMismatch {
        /// Limbs in the batch.
        limbs: usize,
        /// The slice's name.
        slice: &'static str,
        /// Its length.
        found: usize,
    },
    /// A limb index is out of range.
    #[error("limb index {index} out of range for a batch of {limbs}")]
    IndexOutOfRange {
        /// The index given.
        index: usize,
        /// Limbs in the batch.
        limbs: usize,
    },
}

/// Reusable scratch for [`TwoBoneBatch::solve`]: the three-bone pose the scalar solve of rare
/// lanes works on. Make one per thread and keep it.
#[derive(Clone, Debug)]
pub struct BatchScratch {
    pose: Pose,
    /// The limb geometry of a block whose parent scales are not one.
    geo: Geometry,
}

impl Default for BatchScratch {
    fn default() -> Self {
        Self::new()
    }
}

impl BatchScratch {
    /// A scratch buffer (allocates once, here).
    #[must_use]
    pub fn new() -> Self {
        Self {
            pose: Pose {
                rotations: vec![Quat::IDENTITY; 3],
                translations: vec![Vec3::ZERO; 3],
            },
            geo: RestBlock::new(&[RestLimb::PADDING; LANES]).geo,
        }
    }
}

/// Three lane vectors: one `Vec3` per limb.
#[derive(Clone, Copy, Debug)]
struct V3 {
    x: F,
    y: F,
    z: F,
}

/// Four lane vectors: one `Quat` per limb.
#[derive(Clone, Copy, Debug)]
struct Q {
    x: F,
    y: F,
    z: F,
    w: F,
}

impl V3 {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self {
            x: self.x + o.x,
            y: self.y + o.y,
            z: self.z + o.z,
        }
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self {
            x: self.x - o.x,
            y: self.y - o.y,
            z: self.z - o.z,
        }
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Self {
            x: self.x * o.x,
            y: self.y * o.y,
            z: self.z * o.z,
        }
    }
    #[inline(always)]
    fn scale(self, s: F) -> Self {
        Self {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
        }
    }
    #[inline(always)]
    fn dot(self, o: Self) -> F {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    #[inline(always)]
    fn cross(self, o: Self) -> Self {
        Self {
            x: self.y * o.z - self.z * o.y,
            y: self.z * o.x - self.x * o.z,
            z: self.x * o.y - self.y * o.x,
        }
    }
    #[inline(always)]
    fn select(mask: F, t: Self, f: Self) -> Self {
        Self {
            x: mask.blend(t.x, f.x),
            y: mask.blend(t.y, f.y),
            z: mask.blend(t.z, f.z),
        }
    }
}

impl Q {
    #[inline(always)]
    fn v(self) -> V3 {
        V3 {
            x: self.x,
            y: self.y,
            z: self.z,
        }
    }
    #[inline(always)]
    fn from_vw(v: V3, w: F) -> Self {
        Self {
            x: v.x,
            y: v.y,
            z: v.z,
            w,
        }
    }
    /// The Hamilton product `self * o` (as glam's `Quat * Quat`).
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        let (a, b) = (self.v(), o.v());
        let v = b.scale(self.w).add(a.scale(o.w)).add(a.cross(b));
        Self::from_vw(v, self.w * o.w - a.dot(b))
    }
    /// `self⁻¹ * o` for a unit `self` (the conjugate's product, without negating `self`).
    #[inline(always)]
    fn conj_mul(self, o: Self) -> Self {
        let (a, b) = (self.v(), o.v());
        let v = b.scale(self.w).sub(a.scale(o.w)).add(b.cross(a));
        Self::from_vw(v, self.w * o.w + a.dot(b))
    }
    #[inline(always)]
    fn length_squared(self) -> F {
        self.x * self.x + self.y * self.y + self.z * self.z + self.w * self.w
    }
    #[inline(always)]
    fn scale(self, s: F) -> Self {
        Self::from_vw(self.v().scale(s), self.w * s)
    }
    #[inline(always)]
    fn normalize(self) -> Self {
        self.normalize_probed().0
    }
    /// The unit quaternion and the factor it was scaled by: the factor is finite exactly when
    /// every component of the result is (a non-finite component or a zero quaternion makes
    /// the squared length non-finite or zero, and the factor NaN), so it is the probe.
    #[inline(always)]
    fn normalize_probed(self) -> (Self, F) {
        let inv = inv_sqrt(self.length_squared());
        (self.scale(inv), inv)
    }
    /// `self * v` for a unit quaternion: `v + 2w (b × v) + 2 b × (b × v)`.
    #[inline(always)]
    fn rotate(self, v: V3) -> V3 {
        let b = self.v();
        let t = b.cross(v).scale(F::splat(2.0));
        v.add(t.scale(self.w)).add(b.cross(t))
    }
    #[inline(always)]
    fn select(mask: F, t: Self, f: Self) -> Self {
        Self::from_vw(V3::select(mask, t.v(), f.v()), mask.blend(t.w, f.w))
    }
    /// Components below 1e-20 in magnitude set to zero (as the scalar solve's
    /// `flush_subnormal`: they would turn subnormal over repeated solves).
    #[inline(always)]
    fn flush_subnormal(self) -> Self {
        let tiny = F::splat(1e-20);
        // (A mask and: `blend` with zero would be three operations on SSE2.)
        let f = |c: F| c.abs().cmp_ge(tiny) & c;
        Self {
            x: f(self.x),
            y: f(self.y),
            z: f(self.z),
            w: f(self.w),
        }
    }
    /// Zero in every lane whose components are all finite, NaN elsewhere.
    #[inline(always)]
    fn finite_probe(self) -> F {
        (self.x + self.y + self.z + self.w) * F::ZERO
    }
}

/// `1 / √x` to about 2e-7 relative: the hardware estimate (12 bits) and one Newton step,
/// cheaper than a square root and a division, whose shared unit the solve otherwise queues on.
/// (Zero or a non-finite `x` gives a non-finite result, as `1 / √x` would.)
#[inline(always)]
fn inv_sqrt(x: F) -> F {
    let y = x.recip_sqrt();
    y * (F::splat(1.5) - F::splat(0.5) * x * y * y)
}

/// `x` clamped to `[lo, hi]`, NaN giving `lo` (as the scalar solve's `clamp_fast`: SSE `maxps`
/// returns its second operand when either is NaN).
#[inline(always)]
fn clamp(x: F, lo: F, hi: F) -> F {
    x.fast_max(lo).fast_min(hi)
}

/// `acos(x)` for `x` in `[−1, 1]` to within 5e-7 rad: the scalar solve's polynomial
/// (Abramowitz & Stegun 4.4.46), lane-wise.
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn acos(x: F) -> F {
    let a = x.abs();
    let c = |v: f32| F::splat(v);
    let (a2, a4) = (a * a, (a * a) * (a * a));
    let p01 = c(1.570_796_305_0) - c(0.214_598_801_6) * a;
    let p23 = c(0.088_978_987_4) - c(0.050_174_304_6) * a;
    let p45 = c(0.030_891_881_0) - c(0.017_088_125_6) * a;
    let p67 = c(0.006_670_090_1) - c(0.001_262_491_1) * a;
    let p = (p01 + a2 * p23) + a4 * (p45 + a2 * p67);
    let r = (F::ONE - a).sqrt() * p;
    x.cmp_lt(F::ZERO).blend(c(core::f32::consts::PI) - r, r)
}

/// The rotation taking the frame `a` onto the frame `b` (both orthogonal, right-handed, each
/// pair `aᵢ`, `bᵢ` scaled by factors whose product is `k > 0`), up to a positive factor.
///
/// `M = Σ bᵢ aᵢᵀ` is `k` times the rotation matrix; its quaternion comes from the trace where
/// that is not small, `(m₂₁ − m₁₂, m₀₂ − m₂₀, m₁₀ − m₀₁, k + tr M) = 4 k w q`, exact unless the
/// turn nears π, and else from the largest diagonal entry (`4 k x q`, `4 k y q` or `4 k z q`:
/// Shepperd's method), all lane-wise and selected without branches. (The scalar solve's
/// `frame_rotation_scaled` takes the same trace form and, near a half turn, turns the target
/// frame by π about one of its own axes: the same rotation, to rounding.)
#[inline(always)]
fn frame_rotation(a: [V3; 3], k: F, b: [V3; 3]) -> Q {
    // Row `r` of `M`: `(Σ bᵢ[r] aᵢ)`.
    let row = |r: fn(&V3) -> F| {
        a[0].scale(r(&b[0]))
            .add(a[1].scale(r(&b[1])))
            .add(a[2].scale(r(&b[2])))
    };
    matrix_rotation([row(|v| v.x), row(|v| v.y), row(|v| v.z)], k)
}

/// The rotation whose matrix is `M / k` (rows `m`, `k > 0`), up to a positive factor: the
/// trace form, and Shepperd's largest-diagonal form near a half turn (see [`frame_rotation`]).
#[inline(always)]
fn matrix_rotation(m: [V3; 3], k: F) -> Q {
    let [m0, m1, m2] = m;
    let (d0, d1, d2) = (m2.y - m1.z, m0.z - m2.x, m1.x - m0.y);
    let w = k + m0.x + m1.y + m2.z;
    let direct = Q::from_vw(
        V3 {
            x: d0,
            y: d1,
            z: d2,
        },
        w,
    );
    // Near a half turn (about 14 % of uniformly random rotations: in about half the blocks of
    // random goals): every lane computes the largest-diagonal form too, and one select picks.
    let near = w.cmp_le(F::splat(0.05) * k);
    let (s01, s02, s12) = (m0.y + m1.x, m0.z + m2.x, m1.z + m2.y);
    let qx = Q {
        x: k + m0.x - m1.y - m2.z,
        y: s01,
        z: s02,
        w: d0,
    };
    let qy = Q {
        x: s01,
        y: k - m0.x + m1.y - m2.z,
        z: s12,
        w: d1,
    };
    let qz = Q {
        x: s02,
        y: s12,
        z: k - m0.x - m1.y + m2.z,
        w: d2,
    };
    let first = m0.x.cmp_ge(m1.y) & m0.x.cmp_ge(m2.z);
    let second = m1.y.cmp_ge(m2.z);
    let diagonal = Q::select(first, qx, Q::select(second, qy, qz));
    Q::select(near, diagonal, direct)
}

/// One limb's rest data, as read from its [`TwoBoneIk`].
#[derive(Clone, Copy, Debug)]
struct RestLimb {
    /// Local rest translations of root, mid and tip.
    t: [Vec3; 3],
    /// Rest scales of root and mid.
    scale: [Vec3; 2],
    /// The bend axis in use, root local frame (unit).
    bend: Vec3,
    /// Cosines of the flex limits (min, max), the limits, and the soft-reach fraction.
    cos_flex: [f32; 2],
    flex: [f32; 2],
    soft_reach: f32,
}

impl RestLimb {
    /// A benign limb for the padding lanes (results discarded).
    const PADDING: Self = Self {
        t: [Vec3::ZERO, Vec3::X, Vec3::X],
        scale: [Vec3::ONE; 2],
        bend: Vec3::Z,
        cos_flex: [1.0, -1.0],
        flex: [0.0, core::f32::consts::PI],
        soft_reach: 0.0,
    };
}

/// The rest data of one block of limbs, lane per limb (the batch is an array of these:
/// structure of arrays within a block, so each field is one aligned vector load).
#[derive(Clone, Copy, Debug)]
struct RestBlock {
    t_root: V3,
    t_mid: V3,
    t_tip: V3,
    root_scale: V3,
    mid_scale: V3,
    bend: V3,
    cos_flex_min: F,
    cos_flex_max: F,
    flex_min: F,
    flex_max: F,
    soft_reach: F,
    /// The geometry at a parent scale of one (the solve takes it as it is where every lane's
    /// parent scale is one instead of recomputing it).
    geo: Geometry,
}

/// One block's limb geometry in the root's (unscaled) rotation frame, for a given parent
/// scale: the root's translation, the segments (rest scales applied), their lengths, the upper
/// segment's direction, the bend axis normal to it, `h × ua`, the law-of-cosines constants and
/// the mask of lanes with segments longer than the minimum and a bend plane.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    t_root: V3,
    u1: V3,
    u2: V3,
    l1: F,
    l2: F,
    ua: V3,
    h: V3,
    side: V3,
    /// `1e-6 (l1 + l2)` (a shorter distance is zero), `(l1 + l2)⁴` (for the range tests of
    /// the target frame's products), `1 / (2 l1 l2)`, `l1² + l2²`.
    min_dist: F,
    total4: F,
    inv_2l1l2: F,
    l_sq: F,
    ok: F,
    /// The inverse of the rotation taking the axes x, y, z onto `ua`, `h`, `ua × h`.
    e_inv: Q,
}

impl Geometry {
    /// The geometry under parent scale `ps` (at a scale of one, `ps`'s products are exact, so
    /// set-up and solve compute the same values, to the bit).
    #[inline(always)]
    fn new(
        ps: V3,
        t_root: V3,
        root_scale: V3,
        mid_scale: V3,
        t_mid: V3,
        t_tip: V3,
        bend: V3,
    ) -> Self {
        let root_scale = ps.mul(root_scale);
        let u1 = root_scale.mul(t_mid);
        let u2 = root_scale.mul(mid_scale).mul(t_tip);
        let (l1, l2) = (u1.dot(u1).sqrt(), u2.dot(u2).sqrt());
        let ua = u1.scale(F::ONE / l1);
        // Bend axis normal to the upper segment (it already is unless scales moved it).
        let along = bend.dot(ua);
        let exact = along.abs().cmp_lt(F::splat(1e-7));
        let normal = bend.sub(ua.scale(along));
        let n2 = normal.dot(normal);
        let min_len = F::splat(MIN_BONE_LENGTH * 1e-3);
        let ok = exact | (n2.cmp_gt(F::splat(1e-10) * bend.dot(bend)) & n2.cmp_gt(F::splat(1e-30)));
        let ok = ok & l1.cmp_gt(min_len) & l2.cmp_gt(min_len);
        let h = V3::select(exact, bend, normal.scale(F::ONE / n2.sqrt()));
        let uh = ua.cross(h);
        let e = matrix_rotation(
            [
                V3 {
                    x: ua.x,
                    y: h.x,
                    z: uh.x,
                },
                V3 {
                    x: ua.y,
                    y: h.y,
                    z: uh.y,
                },
                V3 {
                    x: ua.z,
                    y: h.z,
                    z: uh.z,
                },
            ],
            F::ONE,
        )
        .normalize();
        Self {
            t_root: ps.mul(t_root),
            u1,
            u2,
            l1,
            l2,
            ua,
            h,
            side: h.cross(ua),
            min_dist: F::splat(1e-6) * (l1 + l2),
            total4: (l1 + l2) * (l1 + l2) * ((l1 + l2) * (l1 + l2)),
            inv_2l1l2: F::ONE / (F::splat(2.0) * l1 * l2),
            l_sq: l1 * l1 + l2 * l2,
            ok,
            e_inv: Q {
                x: -e.x,
                y: -e.y,
                z: -e.z,
                w: e.w,
            },
        }
    }

    #[inline(always)]
    fn of(rest: &RestBlock, ps: V3) -> Self {
        Self::new(
            ps,
            rest.t_root,
            rest.root_scale,
            rest.mid_scale,
            rest.t_mid,
            rest.t_tip,
            rest.bend,
        )
    }
}

impl RestBlock {
    fn new(limbs: &[RestLimb; LANES]) -> Self {
        let f = |g: &dyn Fn(&RestLimb) -> f32| F::from(limbs.each_ref().map(g));
        let v = |g: &dyn Fn(&RestLimb) -> Vec3| V3 {
            x: f(&|l| g(l).x),
            y: f(&|l| g(l).y),
            z: f(&|l| g(l).z),
        };
        let (root_scale, mid_scale) = (v(&|l| l.scale[0]), v(&|l| l.scale[1]));
        let (t_root, t_mid, t_tip, bend) = (
            v(&|l| l.t[0]),
            v(&|l| l.t[1]),
            v(&|l| l.t[2]),
            v(&|l| l.bend),
        );
        let one = V3 {
            x: F::ONE,
            y: F::ONE,
            z: F::ONE,
        };
        Self {
            t_root,
            t_mid,
            t_tip,
            root_scale,
            mid_scale,
            bend,
            cos_flex_min: f(&|l| l.cos_flex[0]),
            cos_flex_max: f(&|l| l.cos_flex[1]),
            flex_min: f(&|l| l.flex[0]),
            flex_max: f(&|l| l.flex[1]),
            soft_reach: f(&|l| l.soft_reach),
            geo: Geometry::new(one, t_root, root_scale, mid_scale, t_mid, t_tip, bend),
        }
    }
}

/// Many two-bone limbs solved together (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct TwoBoneBatch {
    len: usize,
    /// Per block of [`LANES`] limbs.
    rest: Vec<RestBlock>,
    /// Per limb (the blocks are rebuilt from it when a limb changes).
    rest_limbs: Vec<RestLimb>,
    /// Whether any limb has soft reach on (the lanes then evaluate its `exp`).
    any_soft: bool,
    /// Each limb's solver re-indexed onto the three-bone `mini` skeleton, for the rare lanes.
    scalar: Vec<TwoBoneIk>,
    /// Each limb's local translations (root, mid, tip), for the rare lanes.
    translations: Vec<[Vec3; 3]>,
    /// Each limb's root and mid rest scales, for forward kinematics of the rare lanes.
    scales: Vec<[Vec3; 2]>,
    /// A root → mid → tip skeleton: the scalar solve without bones between reads only its
    /// length, so one serves every limb.
    mini: Skeleton,
}

impl TwoBoneBatch {
    /// A batch of the given limbs, each with the skeleton it was built on.
    ///
    /// # Errors
    /// [`BatchError::BonesBetween`] for a limb with bones between root, mid and tip, and
    /// [`BatchError::Limb`] for a limb whose bone indices do not fit its skeleton.
    pub fn try_new<'a>(
        limbs: impl IntoIterator<Item = (&'a Skeleton, &'a TwoBoneIk)>,
    ) -> Result<Self, BatchError> {
        let mut rest_limbs = Vec::new();
        let mut scalar = Vec::new();
        let mut translations = Vec::new();
        let mut scales = Vec::new();
        for (limb, (skeleton, ik)) in limbs.into_iter().enumerate() {
            if !(ik.upper_between.is_empty() && ik.lower_between.is_empty()) {
                return Err(BatchError::BonesBetween { limb });
            }
            if ik.tip >= skeleton.len() {
                return Err(BatchError::Limb {
                    limb,
                    source: AnalyticError::PoseMismatch {
                        needed: ik.tip + 1,
                        found: skeleton.len(),
                    },
                });
            }
            let bones = skeleton.bones();
            let t = [ik.root, ik.mid, ik.tip].map(|i| bones[i].rest.translation);
            rest_limbs.push(RestLimb {
                t,
                scale: [ik.root_rest_scale, ik.mid_rest_scale],
                bend: ik.bend_axis.into(),
                cos_flex: [ik.cos_flex_min, ik.cos_flex_max],
                flex: [ik.settings.flex_min, ik.settings.flex_max],
                soft_reach: ik.settings.soft_reach,
            });
            translations.push(t);
            scales.push([ik.root_rest_scale, ik.mid_rest_scale]);
            scalar.push(TwoBoneIk {
                root: 0,
                mid: 1,
                tip: 2,
                ..ik.clone()
            });
        }
        let len = scalar.len();
        let rest = (0..len.div_ceil(LANES))
            .map(|b| Self::rest_block(&rest_limbs, b))
            .collect();
        let any_soft = rest_limbs.iter().any(|l| l.soft_reach > 0.0);
        let mini = Skeleton::try_new(vec![
            Bone::new("root", None, BoneTransform::IDENTITY),
            Bone::new("mid", Some(0), BoneTransform::from_translation(Vec3::X)),
            Bone::new("tip", Some(1), BoneTransform::from_translation(Vec3::X)),
        ])
        .map_err(|e| BatchError::Limb {
            limb: 0,
            source: e.into(),
        })?;
        Ok(Self {
            len,
            rest,
            rest_limbs,
            any_soft,
            scalar,
            translations,
            scales,
            mini,
        })
    }

    /// Block `b` of `limbs`, padded.
    fn rest_block(limbs: &[RestLimb], b: usize) -> RestBlock {
        RestBlock::new(&core::array::from_fn(|l| {
            limbs
                .get(b * LANES + l)
                .copied()
                .unwrap_or(RestLimb::PADDING)
        }))
    }

    /// Limbs per SIMD vector: [`TwoBoneBatch::solve_range`] starts at a multiple of it.
    pub const LANES: usize = LANES;

    /// Number of limbs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no limbs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Replaces limb `limb`'s local translations of root, mid and tip (the rest translations
    /// from set-up), for rigs whose animation moves them.
    ///
    /// # Errors
    /// [`BatchError::IndexOutOfRange`].
    pub fn set_translations(
        &mut self,
        limb: usize,
        translations: [Vec3; 3],
    ) -> Result<(), BatchError> {
        if limb >= self.len {
            return Err(BatchError::IndexOutOfRange {
                index: limb,
                limbs: self.len,
            });
        }
        self.rest_limbs[limb].t = translations;
        self.rest[limb / LANES] = Self::rest_block(&self.rest_limbs, limb / LANES);
        self.translations[limb] = translations;
        Ok(())
    }

    /// Solves every limb toward its goal.
    ///
    /// Per limb `i`: `goals[i]`, the model transform of its root's parent `parents[i]`, its
    /// local rotations `rotations[i]` = `[root, mid, tip]` (the incoming pose, overwritten with
    /// the solved one), and `reports[i]`, set to the limb's report or to the error the scalar
    /// [`TwoBoneIk::solve_with_parent`] gives for that input (the limb's rotations are then
    /// unchanged). The tip's rotation changes only for a goal with an orientation.
    ///
    /// Returns how many limbs took the scalar solve (goals off the lanes' common path, see the
    /// [module docs](self)), for profiling.
    ///
    /// # Errors
    /// [`BatchError::LengthMismatch`] when a slice does not have one entry per limb; nothing is
    /// written then.
    pub fn solve(
        &self,
        goals: &[LimbGoal],
        parents: &[BoneTransform],
        rotations: &mut [[Quat; 3]],
        reports: &mut [Result<LimbReport, AnalyticError>],
        scratch: &mut BatchScratch,
    ) -> Result<usize, BatchError> {
        if goals.len() != self.len {
            return Err(BatchError::LengthMismatch {
                limbs: self.len,
                slice: "goals",
                found: goals.len(),
            });
        }
        self.solve_range(0, goals, parents, rotations, reports, scratch)
    }

    /// [`TwoBoneBatch::solve`] for the limbs `first..first + goals.len()` only, the slices
    /// holding just those limbs: for splitting a batch between threads (each with its own
    /// [`BatchScratch`]), e.g. with `chunks_mut` of a multiple of [`TwoBoneBatch::LANES`].
    ///
    /// # Errors
    /// [`BatchError::LengthMismatch`] when the slices' lengths differ, and
    /// [`BatchError::IndexOutOfRange`] when `first` is not a multiple of
    /// [`TwoBoneBatch::LANES`] or the range runs past the last limb; nothing is written then.
    pub fn solve_range(
        &self,
        first: usize,
        goals: &[LimbGoal],
        parents: &[BoneTransform],
        rotations: &mut [[Quat; 3]],
        reports: &mut [Result<LimbReport, AnalyticError>],
        scratch: &mut BatchScratch,
    ) -> Result<usize, BatchError> {
        let n = goals.len();
        if !first.is_multiple_of(LANES) || first + n > self.len {
            return Err(BatchError::IndexOutOfRange {
                index: if !first.is_multiple_of(LANES) {
                    first
                } else {
                    first + n
                },
                limbs: self.len,
            });
        }
        for (slice, found) in [
            ("goals", goals.len()),
            ("parents", parents.len()),
            ("rotations", rotations.len()),
            ("reports", reports.len()),
        ] {
            if found != n {
                return Err(BatchError::LengthMismatch {
                    limbs: n,
                    slice,
                    found,
                });
            }
        }
        let mut scalar = 0;
        for block in 0..n.div_ceil(LANES) {
            scalar += self.solve_block(
                first / LANES + block,
                &goals[block * LANES..],
                &parents[block * LANES..],
                &mut rotations[block * LANES..],
                &mut reports[block * LANES..],
                scratch,
            );
        }
        Ok(scalar)
    }

    /// Solves the limbs of one lane block: the lanes on the common path in SIMD, the others
    /// with the scalar solve (returns how many).
    #[inline(always)]
    fn solve_block(
        &self,
        block: usize,
        goals: &[LimbGoal],
        parents: &[BoneTransform],
        rotations: &mut [[Quat; 3]],
        reports: &mut [Result<LimbReport, AnalyticError>],
        scratch: &mut BatchScratch,
    ) -> usize {
        // The slices start at this block's first limb and hold `count` of its limbs.
        let base = block * LANES;
        let count = goals.len().min(LANES);
        debug_assert!(base + count <= self.len);
        // Each limb's inputs as vector rows, transposed into lanes below (a 4 × 4 transpose in
        // registers: writing lanes one float at a time and reading them back as vectors
        // stalled every load on store forwarding).
        // Padding lanes repeat the block's first limb (results discarded).
        let limb = |lane: usize| if lane < count { lane } else { 0 };
        // (Written out: `core::array::from_fn` left the gather as a call per lane, through
        // memory, which measured as much as the whole gather.)
        let g = |lane: usize| {
            gather(
                &goals[limb(lane)],
                &parents[limb(lane)],
                &rotations[limb(lane)],
            )
        };
        let lanes: [LaneIn; LANES] = [g(0), g(1), g(2), g(3)];
        // Lanes whose goal is on the lanes' path (full weights, a pole position or `Keep`).
        let mut simple = 0u32;
        for (lane, l) in lanes.iter().enumerate() {
            if lane < count && l.on_path {
                simple |= 1 << lane;
            }
        }
        let (goal, pose) = Gathered::from_lanes(&lanes).into_blocks();
        let out = if goal.has_o.any() {
            self.lanes::<true, true>(block, &goal, &pose, &mut scratch.geo)
        } else {
            self.lanes::<true, false>(block, &goal, &pose, &mut scratch.geo)
        };
        let solved = simple & (out.ok.move_mask() as u32);
        let new = [out.root, out.mid, out.tip].map(|q| F::transpose([q.x, q.y, q.z, q.w]));
        for lane in (0..count).filter(|l| solved & (1 << l) != 0) {
            rotations[lane] = new.map(|q| Quat::from_array(q[lane].to_array()));
        }
        out.write_reports(solved, count, reports);
        for lane in (0..count).filter(|l| solved & (1 << l) == 0) {
            reports[lane] = self.solve_scalar(
                base + lane,
                &goals[lane],
                &parents[lane],
                &mut rotations[lane],
                scratch,
            );
        }
        count - solved.count_ones() as usize
    }

    /// One limb with the scalar solve (the rare lanes), its residual measured like the lanes'.
    #[cold]
    #[inline(never)]
    fn solve_scalar(
        &self,
        i: usize,
        goal: &LimbGoal,
        parent: &BoneTransform,
        rotations: &mut [Quat; 3],
        scratch: &mut BatchScratch,
    ) -> Result<LimbReport, AnalyticError> {
        let pose = &mut scratch.pose;
        pose.rotations.copy_from_slice(rotations);
        pose.translations.copy_from_slice(&self.translations[i]);
        let mut report = self.scalar[i].solve_with_parent(&self.mini, pose, goal, parent)?;
        let new: [Quat; 3] = [pose.rotations[0], pose.rotations[1], pose.rotations[2]];
        if !new.iter().all(|q| q.is_finite()) {
            return Err(AnalyticError::DegeneratePose);
        }
        let w_pos = goal.position_weight.clamp(0.0, 1.0);
        let target = if w_pos >= 1.0 {
            goal.target
        } else {
            self.tip_position(i, parent, rotations)
                .lerp(goal.target, w_pos)
        };
        report.position_error = self.tip_position(i, parent, &new).distance(target);
        *rotations = new;
        Ok(report)
    }

    /// The tip's model position by forward kinematics of local rotations `[root, mid, tip]`.
    fn tip_position(&self, i: usize, parent: &BoneTransform, rotations: &[Quat; 3]) -> Vec3 {
        let [t_root, t_mid, t_tip] = self.translations[i];
        let [s_root, s_mid] = self.scales[i];
        let root = parent.mul_transform(&BoneTransform {
            translation: t_root,
            rotation: rotations[0],
            scale: s_root,
        });
        let mid = root.mul_transform(&BoneTransform {
            translation: t_mid,
            rotation: rotations[1],
            scale: s_mid,
        });
        mid.transform_point(t_tip)
    }

    /// The common-path solve of one block's four lanes; `ok` marks the lanes it is valid for.
    #[inline(always)]
    fn lanes<const MEASURE: bool, const ORIENTED: bool>(
        &self,
        block: usize,
        goal: &GoalBlock,
        pose: &PoseBlock,
        derived: &mut Geometry,
    ) -> LaneOut {
        let rest = &self.rest[block];
        let s = |v: f32| F::splat(v);
        // (The inputs are read where they are used, through the references, so that they are
        // not first copied to the stack.)

        // The segments, their lengths and the bend plane: from the rest data read at set-up
        // when every lane's parent scale is one (the usual case), else from the parent and rest
        // scales. (Only at one: scaling the set-up values by a uniform scale rounds differently
        // from the scalar solve, and the flex limit flag near a limit is that sensitive: a
        // one-ulp difference in a length measured as a flipped `flex_limited`.) Through a
        // reference, so that the usual case reads the set-up values where it uses them instead
        // of copying them to the stack first.
        let unit = pose.ps.x.cmp_eq(F::ONE) & pose.ps.y.cmp_eq(F::ONE) & pose.ps.z.cmp_eq(F::ONE);
        let geo = if unit.all() {
            &rest.geo
        } else {
            *derived = Geometry::of(rest, pose.ps);
            &*derived
        };
        let mut ok = geo.ok;
        // The incoming limb, in the root's (unscaled) rotation frame.
        let p_root = pose.pt.add(pose.qp.rotate(geo.t_root));
        // The values that need not reach the written rotations (which are checked at the end)
        // on every route: the target, the pole and the root position, and the incoming root
        // rotation, probed at the end, where it is read again (the scalar solve refuses
        // non-finite ones).
        // (One sum of the nine components: a non-finite one, or a sum past f32's range,
        // makes it non-finite and the lane takes the scalar solve.)
        let (t, v, r) = (goal.target, goal.pole, p_root);
        let probe = ((t.x + t.y + t.z) + (v.x + v.y + v.z) + (r.x + r.y + r.z)) * F::ZERO;
        ok &= probe.cmp_eq(F::ZERO);
        // The branches below test lanes against this early part of `ok` (known long before
        // the flex's square roots settle the rest): a branch taken at random costs less the
        // sooner its condition is known. (A lane it lets in needlessly is discarded anyway.)
        let ok_early = ok;

        // Root→target and the flex by the law of cosines.
        let d = goal.target.sub(p_root);
        let dd = d.dot(d);
        let dist = dd.sqrt();
        let far = dist.cmp_gt(geo.min_dist);
        let (cos_min, cos_max) = (rest.cos_flex_min, rest.cos_flex_max);
        let cos_raw = (dd - geo.l_sq) * geo.inv_2l1l2;
        let tol = s(1e-5);
        let reachable = cos_raw.cmp_le(cos_min + tol) & cos_raw.cmp_ge(cos_max - tol);
        let mut cos_geom = clamp(cos_raw, s(-1.0), s(1.0));
        if self.any_soft {
            // Past (1 − soft_reach) of the maximum reach the distance eases out exponentially.
            let soft = rest.soft_reach;
            let d_max = (geo.l_sq + s(2.0) * geo.l1 * geo.l2 * cos_min)
                .fast_max(F::ZERO)
                .sqrt();
            let band = soft * d_max;
            let start = d_max - band;
            let eased =
                d_max - band * (-(dist - start) / band.fast_max(s(f32::MIN_POSITIVE))).exp();
            let dist_eff = (soft.cmp_gt(F::ZERO) & dist.cmp_gt(start)).blend(eased, dist);
            let soft_geom = clamp(
                (dist_eff * dist_eff - geo.l_sq) * geo.inv_2l1l2,
                s(-1.0),
                s(1.0),
            );
            cos_geom = soft.cmp_gt(F::ZERO).blend(soft_geom, cos_geom);
        }
        let cos_phi = clamp(cos_geom, cos_max, cos_min);
        let flex_limited = (cos_phi - cos_geom).abs().cmp_gt(s(1e-6));
        let sin_sq = F::ONE - cos_phi * cos_phi;
        let sin_phi = sin_sq.sqrt();

        let (c_along, c_across) = (geo.l1 + geo.l2 * cos_phi, geo.l2 * sin_phi);
        let c_len = (c_along * c_along + geo.l2 * geo.l2 * sin_sq).sqrt();
        ok &= c_len.cmp_gt(geo.min_dist);

        // The target frame from the pole, scaled by |d| |v × d| (no division), where the
        // products stay within f32's range (the scalar solve's test).
        let v = goal.pole.sub(p_root);
        let vv = v.dot(v);
        let size = dd * vv * dd * geo.total4;
        let scaled_try = far & size.cmp_lt(s(1e30)) & size.cmp_gt(s(1e-30));
        let mut x = v.cross(d);
        let mut xx = x.dot(x);
        let scaled =
            goal.has_pole & scaled_try & xx.cmp_gt(s(1e-10) * vv * dd) & xx.cmp_gt(s(1e-30) * dd);
        // A nearly collinear pole (sin under 1e-2): one Gram–Schmidt step puts `v × d` back on
        // the plane normal to `d`, as the scalar solve's `cross_and_length` does.
        let near_collinear = xx.cmp_lt(s(1e-4) * vv * dd);
        // (One test for both rare routes, this and the others below: in the bench's goal mix
        // both come from the same lanes, and a branch taken at random is what costs.)
        let rare = (near_collinear | (!scaled & ok_early)).any();
        // (Only where such a pole is used: a pole too collinear to be, as in the bench's goal
        // mix, takes the incoming bend plane below.)
        if rare && (near_collinear & scaled).any() {
            x = V3::select(near_collinear, x.sub(d.scale(x.dot(d) / dd)), x);
            xx = x.dot(x);
        }
        // The target frame is `(d |x|, x |d|, d × x)` with `k = |d| |x|`, for any `x` normal
        // to `d` (the bend plane's normal): the rare routes below change `d` (a target at the
        // root) or `x` (the incoming bend plane) and stay in this scaled frame.
        let (mut d, mut dist_b) = (d, dist);
        let mut pole_fallback = F::ZERO;
        if rare && (!scaled & ok_early).any() {
            let root_in = pose.qp.mul(pose.rot[0]);
            let mut dd = dd;
            // Where the scaled frame's products could leave f32's range (a pole very far or
            // very near): the scalar solve (its unit frame).
            let in_range = |size: F| size.cmp_lt(s(1e30)) & size.cmp_gt(s(1e-30));
            let mut out_of_range = goal.has_pole & far & !scaled_try;
            let mut pole_ok = scaled;
            if (!far & ok_early).any() {
                // A target at the root: aim at the incoming tip (the frame on that direction).
                let to_tip = root_in.rotate(geo.u1.add(pose.rot[1].rotate(geo.u2)));
                let tt = to_tip.dot(to_tip);
                // (Else the scalar solve aims along the upper segment.)
                ok &= far | tt.cmp_gt(s(1e-30));
                let mut xt = v.cross(to_tip);
                let mut xt2 = xt.dot(xt);
                let range = in_range(tt * vv * tt * geo.total4);
                let pole_t = goal.has_pole
                    & range
                    & xt2.cmp_gt(s(1e-10) * vv * tt)
                    & xt2.cmp_gt(s(1e-30) * tt);
                let near_collinear = xt2.cmp_lt(s(1e-4) * vv * tt);
                if (near_collinear & !far).any() {
                    xt = V3::select(
                        near_collinear,
                        xt.sub(to_tip.scale(xt.dot(to_tip) / tt)),
                        xt,
                    );
                    xt2 = xt.dot(xt);
                }
                out_of_range |= goal.has_pole & !far & !range;
                d = V3::select(far, d, to_tip);
                dd = far.blend(dd, tt);
                dist_b = far.blend(dist_b, tt.sqrt());
                x = V3::select(far, x, xt);
                xx = far.blend(xx, xt2);
                pole_ok = far.blend(pole_ok, pole_t);
            }
            ok &= !out_of_range;
            if (!pole_ok & ok_early).any() {
                // The incoming bend plane (a `Keep` goal, or a pole collinear with the target):
                // its axis made normal to `d`, scaled by |d|² (`hk |d|² − d (hk·d)`).
                let hk = root_in.rotate(geo.h);
                let hh = hk.dot(hk);
                let mut xk = hk.scale(dd).sub(d.scale(hk.dot(d)));
                let mut xk2 = xk.dot(xk);
                let hdd = hh * dd * dd;
                let keep = xk2.cmp_gt(s(1e-10) * hdd)
                    & xk2.cmp_gt(s(1e-30) * dd * dd)
                    & in_range(hdd * dd * geo.total4);
                // An incoming bend axis nearly along the target line (sin under 1e-2): a
                // second Gram–Schmidt step, as for poles, so that the frame stays orthogonal.
                // (The scalar solve's `normal_part` takes one step: there it can be off by
                // ~1e-5 rad.)
                let near_collinear = xk2.cmp_lt(s(1e-4) * hdd);
                if near_collinear.any() {
                    xk = V3::select(near_collinear, xk.sub(d.scale(xk.dot(d) / dd)), xk);
                    xk2 = xk.dot(xk);
                }
                // (Else the scalar solve takes the rest plane.)
                ok &= pole_ok | keep;
                x = V3::select(pole_ok, x, xk);
                xx = pole_ok.blend(xx, xk2);
            }
            pole_fallback = goal.has_pole & !pole_ok;
        }
        let len = xx.sqrt();
        let (b1, b2, b3) = (d.scale(len), x.scale(dist_b), d.cross(x));
        let kb = dist_b * len;

        // Root: the rotation taking (c, h, c × h) onto (b1, b2, b3), both scaled frames.
        // (Root before mid, and each value computed next to its use: fewer live vectors.)
        // With `E = (ua, h, ua × h)` (set-up), `(c, h, c × h) = E Â`, where `Â`'s columns are
        // `(c_along, 0, −c_across)`, `(0, c_len, 0)`, `(c_across, 0, c_along)`; the rotation is
        // `B Âᵀ Eᵀ`: the one of `G = B Âᵀ` (15 products where `Σ bᵢ aᵢᵀ` takes 42), then
        // `E`'s inverse (16).
        let g0 = b1.scale(c_along).add(b3.scale(c_across));
        let g1 = b2.scale(c_len);
        let g2 = b3.scale(c_along).sub(b1.scale(c_across));
        let k = c_len * kb;
        let g_rows = [
            V3 {
                x: g0.x,
                y: g1.x,
                z: g2.x,
            },
            V3 {
                x: g0.y,
                y: g1.y,
                z: g2.y,
            },
            V3 {
                x: g0.z,
                y: g1.z,
                z: g2.z,
            },
        ];
        let root_rot = matrix_rotation(g_rows, k).mul(geo.e_inv);
        let (new_root, root_probe) = pose.qp.conj_mul(root_rot).normalize_probed();

        let b_cur = pose.rot[1].rotate(geo.u2);
        let ub_des = geo.ua.scale(cos_phi).add(geo.side.scale(sin_phi));
        // Mid: turn the lower segment onto its new direction (half-vector arc, scaled by l2).
        let dot_turn = b_cur.dot(ub_des);
        let mut delta = Q::from_vw(b_cur.cross(ub_des), geo.l2 + dot_turn);
        let near_half = dot_turn.cmp_le(s(-0.99) * geo.l2);
        // Near a half turn (a limb folding from straight, or the reverse: in a quarter of the
        // bench's blocks), a turn about the bend axis, as the scalar solve's `half_turn`. Where
        // the incoming lower segment lies in the bend plane (as after any solve, to rounding),
        // by its angle `θ` there: `l2 cos θ = b·u` and `l2 sin θ = h·(b × u) = b·(u × h)`,
        // and the half-angle form `(h (1 − cos θ), sin θ)` (the arc's `(h sin θ, 1 + cos θ)`
        // loses its precision near `θ = π`), its sign that of `sin θ` so that `w ≥ 0` as the
        // arc's: about 10 products, computed in every block and selected, as a branch taken at
        // random cost more.
        let sin_turn = b_cur.dot(ub_des.cross(geo.h));
        let sign = sin_turn & s(-0.0);
        let half = Q::from_vw(geo.h.scale((geo.l2 - dot_turn) ^ sign), sin_turn ^ sign);
        delta = Q::select(near_half, half, delta);
        let in_plane = geo.h.dot(b_cur).abs().cmp_le(s(1e-6) * geo.l2);
        if (near_half & !in_plane & ok).any() {
            // Else (the scalar solve's frame rotation): the incoming segment onto `ub_des` and
            // the bend axis, made normal to it, onto `h`.
            let from = b_cur.scale(F::ONE / geo.l2);
            let hn = geo.h.sub(from.scale(geo.h.dot(from)));
            let hn2 = hn.dot(hn);
            ok &= !near_half | (hn2.cmp_gt(s(1e-10)) & hn2.cmp_gt(s(1e-30)));
            let hc = hn.scale(F::ONE / hn2.sqrt());
            let half = frame_rotation(
                [from, hc, from.cross(hc)],
                F::ONE,
                [ub_des, geo.h, ub_des.cross(geo.h)],
            );
            delta = Q::select(near_half & !in_plane, half, delta);
        }
        let m_new = delta.mul(pose.rot[1]);
        let (new_mid, mid_probe) = m_new.normalize_probed();
        let new_mid = new_mid.flush_subnormal();
        // Where `ORIENTED` (for `solve_lanes`: where any goal of the batch has an orientation,
        // a choice made once per call), in every block, selected: a branch per block is taken
        // at random where the goals' kinds vary, and costs more.
        let (new_tip, tip_probe) = if ORIENTED {
            let (tip, probe) = m_new.conj_mul(root_rot.conj_mul(goal.o)).normalize_probed();
            (Q::select(goal.has_o, tip, pose.rot[2]), probe)
        } else {
            (pose.rot[2], F::ZERO)
        };
        // The written rotations are finite where the normalisations' factors are and, for a
        // goal without orientation, the incoming tip rotation is (it is written as it came).
        let kept_tip = pose.rot[2];
        let kept_tip = !goal.has_o & ((kept_tip.x + kept_tip.y) + (kept_tip.z + kept_tip.w));
        ok &= ((root_probe + mid_probe + tip_probe + kept_tip) * F::ZERO
            + pose.rot[0].finite_probe())
        .cmp_eq(F::ZERO);

        // Measured: the tip by forward kinematics of the written rotations.
        // (Unit up to rounding, as the parent's rotation is: the solve assumes that too.)
        // (Only for reports: `MEASURE` is false when none is asked for.)
        let (error, flex) = if MEASURE {
            let root_model = pose.qp.mul(new_root);
            let tip_fk = p_root.add(root_model.rotate(geo.u1.add(new_mid.rotate(geo.u2))));
            let e = tip_fk.sub(goal.target);
            (
                e.dot(e).sqrt(),
                clamp(acos(cos_phi), rest.flex_min, rest.flex_max),
            )
        } else {
            (F::ZERO, F::ZERO)
        };
        LaneOut {
            ok,
            root: new_root,
            mid: new_mid,
            tip: new_tip,
            reachable,
            flex_limited,
            pole_fallback,
            error,
            flex,
            dist,
            l1: geo.l1,
            l2: geo.l2,
        }
    }
}

/// A lane mask's "true" (all bits set).
const LANE_TRUE: f32 = f32::from_bits(u32::MAX);

impl V3 {
    const ZERO: Self = Self {
        x: F::ZERO,
        y: F::ZERO,
        z: F::ZERO,
    };
    #[inline(always)]
    fn lane(&self, lane: usize) -> Vec3 {
        Vec3::from_array(lane_of([&self.x, &self.y, &self.z], lane))
    }
    #[inline(always)]
    fn set_lane(&mut self, lane: usize, v: Vec3) {
        set_lane_of([&mut self.x, &mut self.y, &mut self.z], lane, v.to_array());
    }
}

impl Q {
    const IDENTITY: Self = Self {
        x: F::ZERO,
        y: F::ZERO,
        z: F::ZERO,
        w: F::ONE,
    };
    #[inline(always)]
    fn lane(&self, lane: usize) -> Quat {
        Quat::from_array(lane_of([&self.x, &self.y, &self.z, &self.w], lane))
    }
    #[inline(always)]
    fn set_lane(&mut self, lane: usize, q: Quat) {
        let c = [&mut self.x, &mut self.y, &mut self.z, &mut self.w];
        set_lane_of(c, lane, q.to_array());
    }
}

/// Lane `lane` of each of the components `c` (one limb's vector or quaternion).
#[inline(always)]
fn lane_of<const N: usize>(c: [&F; N], lane: usize) -> [f32; N] {
    c.map(|f| f.as_array_ref()[lane])
}

/// Sets lane `lane` of each of the components `c` to `v`'s.
#[inline(always)]
fn set_lane_of<const N: usize>(c: [&mut F; N], lane: usize, v: [f32; N]) {
    for (f, v) in c.into_iter().zip(v) {
        f.as_array_mut()[lane] = v;
    }
}

/// One block of four limbs' goals, lane per limb.
#[derive(Clone, Copy, Debug)]
struct GoalBlock {
    target: V3,
    pole: V3,
    o: Q,
    /// Masks: the goal has an orientation; a pole position; is on the lanes' path.
    has_o: F,
    has_pole: F,
    on_path: F,
}

impl GoalBlock {
    /// Padding: off the lanes' path (never written back).
    const EMPTY: Self = Self {
        target: V3::ZERO,
        pole: V3::ZERO,
        o: Q::IDENTITY,
        has_o: F::ZERO,
        has_pole: F::ZERO,
        on_path: F::ZERO,
    };
}

/// One block of four limbs' parent transforms and local rotations, lane per limb.
#[derive(Clone, Copy, Debug)]
struct PoseBlock {
    pt: V3,
    qp: Q,
    ps: V3,
    /// Local rotations of root, mid and tip.
    rot: [Q; 3],
}

impl PoseBlock {
    const IDENTITY: Self = Self {
        pt: V3::ZERO,
        qp: Q::IDENTITY,
        ps: V3 {
            x: F::ONE,
            y: F::ONE,
            z: F::ONE,
        },
        rot: [Q::IDENTITY; 3],
    };
}

/// The goals of a [`TwoBoneBatch`]'s limbs, kept in lanes between calls, for
/// [`TwoBoneBatch::solve_lanes`] (see the [module docs](self#resident-lanes-solve_lanes)).
///
/// [`LaneGoals::set`] writes one limb's goal into its lanes (and keeps a copy of the goal for
/// the scalar solve of rare cases); the solve then reads whole vectors.
#[derive(Clone, Debug)]
pub struct LaneGoals {
    blocks: Vec<GoalBlock>,
    goals: Vec<LimbGoal>,
    /// How many goals have an orientation (none: the solve skips the tips).
    oriented: usize,
}

impl LaneGoals {
    /// Goals for `len` limbs (each `LimbGoal::new(Vec3::ZERO)` until set).
    #[must_use]
    pub fn new(len: usize) -> Self {
        let mut goals = Self {
            blocks: vec![GoalBlock::EMPTY; len.div_ceil(LANES)],
            goals: vec![LimbGoal::new(Vec3::ZERO); len],
            oriented: 0,
        };
        for limb in 0..len {
            goals.write(limb, &LimbGoal::new(Vec3::ZERO));
        }
        goals
    }

    /// Number of limbs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.goals.len()
    }

    /// Whether there are no limbs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.goals.is_empty()
    }

    /// Sets limb `limb`'s goal.
    ///
    /// # Errors
    /// [`BatchError::IndexOutOfRange`].
    #[inline]
    pub fn set(&mut self, limb: usize, goal: &LimbGoal) -> Result<(), BatchError> {
        if limb >= self.goals.len() {
            return Err(BatchError::IndexOutOfRange {
                index: limb,
                limbs: self.goals.len(),
            });
        }
        self.write(limb, goal);
        Ok(())
    }

    #[inline(always)]
    fn write(&mut self, limb: usize, goal: &LimbGoal) {
        let input = gather_goal(goal);
        let (block, lane) = (&mut self.blocks[limb / LANES], limb % LANES);
        let mask = |b: bool| if b { LANE_TRUE } else { 0.0 };
        let had_o = block.has_o.as_array_ref()[lane].to_bits() != 0;
        self.oriented = self.oriented - usize::from(had_o) + usize::from(input.has_o);
        block.target.set_lane(lane, goal.target);
        block.pole.set_lane(lane, input.pole);
        block.o.set_lane(lane, input.o);
        block.has_o.as_array_mut()[lane] = mask(input.has_o);
        block.has_pole.as_array_mut()[lane] = mask(input.has_pole);
        block.on_path.as_array_mut()[lane] = mask(input.on_path);
        // (Off the lanes' path only: on it, the goal is rebuilt from the lanes, see `goal`.)
        if !input.on_path {
            self.goals[limb] = *goal;
        }
    }

    /// Limb `limb`'s goal, for the scalar solve: as set where it is off the lanes' path, else
    /// rebuilt from the lanes (full weights, which the scalar solve treats like any weight of
    /// at least one: the same result).
    fn goal(&self, limb: usize) -> LimbGoal {
        let (block, lane) = (&self.blocks[limb / LANES], limb % LANES);
        if block.on_path.as_array_ref()[lane].to_bits() == 0 {
            return self.goals[limb];
        }
        let mut goal = LimbGoal::new(block.target.lane(lane));
        // (`LimbGoal::new` keeps the incoming bend plane: `Pole::Keep`.)
        if block.has_pole.as_array_ref()[lane].to_bits() != 0 {
            goal = goal.with_pole(block.pole.lane(lane));
        }
        if block.has_o.as_array_ref()[lane].to_bits() != 0 {
            goal = goal.with_orientation(block.o.lane(lane));
        }
        goal
    }
}

/// The parent transforms and local `[root, mid, tip]` rotations of a [`TwoBoneBatch`]'s
/// limbs, kept in lanes between calls, for [`TwoBoneBatch::solve_lanes`] (which overwrites the
/// rotations with the solved ones); and each limb's status after the last solve.
#[derive(Clone, Debug)]
pub struct LanePoses {
    len: usize,
    blocks: Vec<PoseBlock>,
    /// Per block, the lanes whose last solve failed (`errors` holds why).
    failed: Vec<u8>,
    errors: Vec<AnalyticError>,
}

impl LanePoses {
    /// Poses for `len` limbs: identity parents and rotations until set.
    #[must_use]
    pub fn new(len: usize) -> Self {
        Self {
            len,
            blocks: vec![PoseBlock::IDENTITY; len.div_ceil(LANES)],
            failed: vec![0; len.div_ceil(LANES)],
            errors: vec![AnalyticError::DegeneratePose; len],
        }
    }

    /// Number of limbs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no limbs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn check(&self, limb: usize) -> Result<(), BatchError> {
        if limb < self.len {
            Ok(())
        } else {
            Err(BatchError::IndexOutOfRange {
                index: limb,
                limbs: self.len,
            })
        }
    }

    /// Sets limb `limb`'s root's parent model transform and incoming local rotations
    /// `[root, mid, tip]`.
    ///
    /// # Errors
    /// [`BatchError::IndexOutOfRange`].
    #[inline]
    pub fn set(
        &mut self,
        limb: usize,
        parent: &BoneTransform,
        rotations: [Quat; 3],
    ) -> Result<(), BatchError> {
        self.set_parent(limb, parent)?;
        self.set_rotations(limb, rotations)
    }

    /// Sets limb `limb`'s root's parent model transform.
    ///
    /// # Errors
    /// [`BatchError::IndexOutOfRange`].
    #[inline]
    pub fn set_parent(&mut self, limb: usize, parent: &BoneTransform) -> Result<(), BatchError> {
        self.check(limb)?;
        let (block, lane) = (&mut self.blocks[limb / LANES], limb % LANES);
        block.pt.set_lane(lane, parent.translation);
        block.qp.set_lane(lane, parent.rotation);
        block.ps.set_lane(lane, parent.scale);
        Ok(())
    }

    /// Sets limb `limb`'s local rotations `[root, mid, tip]`.
    ///
    /// # Errors
    /// [`BatchError::IndexOutOfRange`].
    #[inline]
    pub fn set_rotations(&mut self, limb: usize, rotations: [Quat; 3]) -> Result<(), BatchError> {
        self.check(limb)?;
        let (block, lane) = (&mut self.blocks[limb / LANES], limb % LANES);
        for (q, r) in block.rot.iter_mut().zip(rotations) {
            q.set_lane(lane, r);
        }
        Ok(())
    }

    /// Limb `limb`'s local rotations `[root, mid, tip]`: after [`TwoBoneBatch::solve_lanes`],
    /// the solved ones (the incoming ones where its [`LanePoses::error`] is set).
    ///
    /// # Errors
    /// [`BatchError::IndexOutOfRange`].
    #[inline]
    pub fn rotations(&self, limb: usize) -> Result<[Quat; 3], BatchError> {
        self.check(limb)?;
        let (block, lane) = (&self.blocks[limb / LANES], limb % LANES);
        // (Not `map`: its closure is not always inlined.)
        let [root, mid, tip] = &block.rot;
        Ok([root.lane(lane), mid.lane(lane), tip.lane(lane)])
    }

    /// Limb `limb`'s root's parent model transform, as set.
    ///
    /// # Errors
    /// [`BatchError::IndexOutOfRange`].
    pub fn parent(&self, limb: usize) -> Result<BoneTransform, BatchError> {
        self.check(limb)?;
        let (block, lane) = (&self.blocks[limb / LANES], limb % LANES);
        Ok(BoneTransform {
            translation: block.pt.lane(lane),
            rotation: block.qp.lane(lane),
            scale: block.ps.lane(lane),
        })
    }

    /// Why limb `limb`'s last solve failed (its rotations were left unchanged), as the
    /// scalar [`TwoBoneIk::solve_with_parent`] would report it; `None` when it succeeded (or
    /// was never solved, or `limb` is out of range).
    #[must_use]
    #[inline]
    pub fn error(&self, limb: usize) -> Option<&AnalyticError> {
        let failed = *self.failed.get(limb / LANES)? & (1 << (limb % LANES)) != 0;
        failed.then(|| &self.errors[limb])
    }
}

impl TwoBoneBatch {
    /// Solves every limb toward its goal in `goals`, from and into `poses` (the resident
    /// lanes: no gathering from or scattering to per-limb slices; see the
    /// [module docs](self#resident-lanes-solve_lanes)).
    ///
    /// The same solve as [`TwoBoneBatch::solve`]: the solved rotations replace `poses`'
    /// rotations, a limb that fails keeps its rotations and gets [`LanePoses::error`]. With
    /// `reports`, one [`LimbReport`] (or the error) per limb is written there too, its
    /// residual measured by forward kinematics as [`TwoBoneBatch::solve`]'s; without, the
    /// reports' extra arithmetic (the residual's forward kinematics, the flex angle) is
    /// skipped.
    ///
    /// Returns how many limbs took the scalar solve.
    ///
    /// # Errors
    /// [`BatchError::LengthMismatch`] when `goals`, `poses` or `reports` are not for this
    /// batch's number of limbs; nothing is written then.
    pub fn solve_lanes(
        &self,
        goals: &LaneGoals,
        poses: &mut LanePoses,
        reports: Option<&mut [Result<LimbReport, AnalyticError>]>,
        scratch: &mut BatchScratch,
    ) -> Result<usize, BatchError> {
        for (slice, found) in [
            ("goals", goals.len()),
            ("poses", poses.len()),
            ("reports", reports.as_ref().map_or(self.len, |r| r.len())),
        ] {
            if found != self.len {
                return Err(BatchError::LengthMismatch {
                    limbs: self.len,
                    slice,
                    found,
                });
            }
        }
        // (The tips' arithmetic only where some goal has an orientation: chosen once here.)
        Ok(match (reports, goals.oriented > 0) {
            (Some(reports), true) => {
                self.solve_lanes_with::<true, true>(goals, poses, reports, scratch)
            }
            (Some(reports), false) => {
                self.solve_lanes_with::<true, false>(goals, poses, reports, scratch)
            }
            (None, true) => self.solve_lanes_with::<false, true>(goals, poses, &mut [], scratch),
            (None, false) => self.solve_lanes_with::<false, false>(goals, poses, &mut [], scratch),
        })
    }

    /// [`TwoBoneBatch::solve_lanes`] after its checks; `reports` is empty unless `REPORT`.
    fn solve_lanes_with<const REPORT: bool, const ORIENTED: bool>(
        &self,
        goals: &LaneGoals,
        poses: &mut LanePoses,
        reports: &mut [Result<LimbReport, AnalyticError>],
        scratch: &mut BatchScratch,
    ) -> usize {
        let lane_index = F::from([0.0, 1.0, 2.0, 3.0]);
        let mut scalar = 0;
        for (block, (g, p)) in goals.blocks.iter().zip(&mut poses.blocks).enumerate() {
            let base = block * LANES;
            let count = (self.len - base).min(LANES);
            let out = self.lanes::<REPORT, ORIENTED>(block, g, p, &mut scratch.geo);
            let solved_mask = out.ok & g.on_path & lane_index.cmp_lt(F::splat(count as f32));
            let solved = solved_mask.move_mask() as u32;
            if solved == 0b1111 {
                // (The usual block: plain stores, no selects.)
                p.rot = [out.root, out.mid, out.tip];
            } else {
                p.rot = [
                    Q::select(solved_mask, out.root, p.rot[0]),
                    Q::select(solved_mask, out.mid, p.rot[1]),
                    Q::select(solved_mask, out.tip, p.rot[2]),
                ];
            }
            let mut failed = 0u8;
            if solved != (1 << count) - 1 {
                for lane in (0..count).filter(|l| solved & (1 << l) == 0) {
                    scalar += 1;
                    let limb = base + lane;
                    let parent = BoneTransform {
                        translation: p.pt.lane(lane),
                        rotation: p.qp.lane(lane),
                        scale: p.ps.lane(lane),
                    };
                    let mut rotations = p.rot.map(|q| q.lane(lane));
                    let result = self.solve_scalar(
                        limb,
                        &goals.goal(limb),
                        &parent,
                        &mut rotations,
                        scratch,
                    );
                    for (q, r) in p.rot.iter_mut().zip(rotations) {
                        q.set_lane(lane, r);
                    }
                    if let Err(e) = &result {
                        failed |= 1 << lane;
                        poses.errors[limb] = e.clone();
                    }
                    if REPORT {
                        reports[limb] = result;
                    }
                }
            }
            poses.failed[block] = failed;
            if REPORT {
                out.write_reports(solved, count, &mut reports[base..]);
            }
        }
        scalar
    }
}

impl LaneOut {
    /// Writes the reports of the `solved` lanes among the first `count`.
    #[inline(always)]
    fn write_reports(
        &self,
        solved: u32,
        count: usize,
        reports: &mut [Result<LimbReport, AnalyticError>],
    ) {
        let (reachable, limited, pole_fallback) = (
            self.reachable.move_mask(),
            self.flex_limited.move_mask(),
            self.pole_fallback.move_mask(),
        );
        let (error, flex, dist) = (
            self.error.to_array(),
            self.flex.to_array(),
            self.dist.to_array(),
        );
        let (l1, l2) = (self.l1.to_array(), self.l2.to_array());
        for lane in (0..count).filter(|l| solved & (1 << l) != 0) {
            let report = LimbReport {
                reachable: reachable & (1 << lane) != 0,
                position_error: error[lane],
                flex_angle: flex[lane],
                flex_limited: limited & (1 << lane) != 0,
                pole_fallback: pole_fallback & (1 << lane) != 0,
                target_distance: dist[lane],
                lengths: [l1[lane], l2[lane]],
            };
            // (Overwriting an `Ok` in place: no call to drop the previous value.)
            match &mut reports[lane] {
                Ok(r) => *r = report,
                other => *other = Ok(report),
            }
        }
    }
}

/// Vector rows per limb: parent translation, rotation, scale; incoming root, mid, tip
/// rotations; target, pole, orientation.
const ROWS: usize = 9;

/// A `Vec3` as a vector row (`w` = 0).
#[inline(always)]
fn row3(v: Vec3) -> F {
    F::from([v.x, v.y, v.z, 0.0])
}

/// A `Quat` as a vector row.
#[inline(always)]
fn row4(q: Quat) -> F {
    F::from(q.to_array())
}

/// One limb's input as vector rows, and its goal's kind.
struct LaneIn {
    rows: [F; ROWS],
    /// Whether the goal has an orientation, a pole position.
    has_o: bool,
    has_pole: bool,
    /// Whether the goal is on the lanes' path (finite weights, full position weight, a pole
    /// position at full weight or [`Pole::Keep`]; the orientation, if any, at full weight).
    /// Values are not checked here: the lanes test them.
    on_path: bool,
}

/// A goal's lane inputs: the orientation (identity if none) and the pole position (zero if
/// none), its kind, and whether it is on the lanes' path.
struct GoalIn {
    o: Quat,
    pole: Vec3,
    has_o: bool,
    has_pole: bool,
    on_path: bool,
}

#[inline(always)]
fn gather_goal(goal: &LimbGoal) -> GoalIn {
    // Branch-free where the goal kinds vary from limb to limb (a mispredicted branch per limb
    // measured as much as the lanes' arithmetic): the orientation is read through a selected
    // reference, the flags are combined with `&` / `|`.
    // (Weights must be finite, as the scalar solve checks, and full: `∞ >= 1`.)
    let full = |w: f32| w.is_finite() & (w >= 1.0);
    let has_o = goal.orientation.is_some();
    let o = *goal.orientation.as_ref().unwrap_or(&Quat::IDENTITY);
    let rw = goal.rotation_weight;
    // (An orientation's squared norm outside [1e-12, 1e12] is a bad goal, as in the scalar
    // solve.)
    let o2 = o.length_squared();
    let o_ok = rw.is_finite() & (!has_o | (full(rw) & (1e-12..=1e12).contains(&o2)));
    let (pole, has_pole, pole_ok) = match goal.pole {
        Pole::Position(p) => (p, true, full(goal.pole_weight)),
        // (The pole weight has nothing to blend toward: the incoming plane stands.)
        Pole::Keep => (Vec3::ZERO, false, goal.pole_weight.is_finite()),
        Pole::Swivel(_) => (Vec3::ZERO, false, false),
    };
    GoalIn {
        o,
        pole,
        has_o,
        has_pole,
        on_path: o_ok & pole_ok & full(goal.position_weight),
    }
}

#[inline(always)]
fn gather(goal: &LimbGoal, parent: &BoneTransform, rotations: &[Quat; 3]) -> LaneIn {
    let GoalIn {
        o,
        pole,
        has_o,
        has_pole,
        on_path,
    } = gather_goal(goal);
    LaneIn {
        rows: [
            row3(parent.translation),
            row4(parent.rotation),
            row3(parent.scale),
            row4(rotations[0]),
            row4(rotations[1]),
            row4(rotations[2]),
            row3(goal.target),
            row3(pole),
            row4(o),
        ],
        has_o,
        has_pole,
        on_path,
    }
}

/// One block's per-call input in lanes.
#[derive(Clone, Copy)]
struct Gathered {
    pt: V3,
    qp: Q,
    ps: V3,
    qr: Q,
    qm: Q,
    qt: Q,
    target: V3,
    pole: V3,
    o: Q,
    has_o: F,
    has_pole: F,
}

impl Gathered {
    /// Transposes the limbs' rows into lanes.
    #[inline(always)]
    fn from_lanes(lanes: &[LaneIn; LANES]) -> Self {
        let rows = |r: usize| {
            F::transpose([
                lanes[0].rows[r],
                lanes[1].rows[r],
                lanes[2].rows[r],
                lanes[3].rows[r],
            ])
        };
        let v3 = |r: usize| {
            let [x, y, z, _] = rows(r);
            V3 { x, y, z }
        };
        let q = |r: usize| {
            let [x, y, z, w] = rows(r);
            Q { x, y, z, w }
        };
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let [a, b, c, d] = lanes;
        let has_o = F::from([flag(a.has_o), flag(b.has_o), flag(c.has_o), flag(d.has_o)]);
        let has_pole = F::from([
            flag(a.has_pole),
            flag(b.has_pole),
            flag(c.has_pole),
            flag(d.has_pole),
        ]);
        Self {
            pt: v3(0),
            qp: q(1),
            ps: v3(2),
            qr: q(3),
            qm: q(4),
            qt: q(5),
            target: v3(6),
            pole: v3(7),
            o: q(8),
            has_o: has_o.cmp_ne(F::ZERO),
            has_pole: has_pole.cmp_ne(F::ZERO),
        }
    }
}

impl Gathered {
    /// The input as the resident lanes hold it.
    #[inline(always)]
    fn into_blocks(self) -> (GoalBlock, PoseBlock) {
        (
            GoalBlock {
                target: self.target,
                pole: self.pole,
                o: self.o,
                has_o: self.has_o,
                has_pole: self.has_pole,
                on_path: F::ZERO,
            },
            PoseBlock {
                pt: self.pt,
                qp: self.qp,
                ps: self.ps,
                rot: [self.qr, self.qm, self.qt],
            },
        )
    }
}

/// The lanes' results.
struct LaneOut {
    ok: F,
    root: Q,
    mid: Q,
    tip: Q,
    reachable: F,
    flex_limited: F,
    pole_fallback: F,
    error: F,
    flex: F,
    dist: F,
    l1: F,
    l2: F,
}
