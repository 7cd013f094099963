//! Analytic two-bone limb IK: shoulder–elbow–wrist and hip–knee–ankle (Tolani-style 7-DOF
//! limb: 3 + 1 + 3 degrees of freedom).
//!
//! The elbow (knee) flex comes from the law of cosines; the upper bone's frame from the
//! root→target direction and the pole projected on the plane normal to it; the tip's rotation is
//! the target orientation expressed in the lower bone's frame. The solver writes the *local*
//! rotations of the three bones relative to their parents and works for any rest pose and any
//! local bone axes: the bone directions come from the child rest offsets and the hinge (bend)
//! axis from the rest bend plane, never from an assumed T-pose or `+Y` axis.
//!
//! Bones between the root and the mid bone, or between the mid bone and the tip (twist bones),
//! are allowed: they keep their incoming local transforms and ride along rigidly.
//!
//! ```
//! use ik_core::analytic::{LimbGoal, TwoBoneIk};
//! use ik_core::{Bone, BoneTransform, Skeleton};
//! use glam::{Quat, Vec3};
//!
//! // An arm whose bones point along their local +X, with a slightly bent rest elbow.
//! let skeleton = Skeleton::try_new(vec![
//!     Bone::new("shoulder", None, BoneTransform::IDENTITY),
//!     Bone::new(
//!         "elbow",
//!         Some(0),
//!         BoneTransform::from_translation_rotation(Vec3::X * 0.3, Quat::from_rotation_y(-0.2)),
//!     ),
//!     Bone::new("wrist", Some(1), BoneTransform::from_translation(Vec3::X * 0.25)),
//! ])?;
//! let ik = TwoBoneIk::from_names(&skeleton, "shoulder", "elbow", "wrist")?;
//! let mut pose = skeleton.rest_pose();
//! let goal = LimbGoal::new(Vec3::new(0.3, 0.1, 0.2)).with_pole(Vec3::new(0.2, 0.0, -1.0));
//! let report = ik.solve(&skeleton, &mut pose, &goal)?;
//! assert!(report.reachable && report.position_error < 1e-5);
//! let wrist = skeleton.model_transform(&pose, 2).translation;
//! assert!(wrist.distance(Vec3::new(0.3, 0.1, 0.2)) < 1e-5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Performance
//!
//! [`TwoBoneIk::solve_with_parent`] takes about 50 ns on the bench's mixed goal set (see the
//! README). A solve is a few hundred vector operations whose time is set by its longest
//! dependency chain (root position → root→target distance → law of cosines → sin φ → root
//! frame → output), not by their count: the machine overlaps little of consecutive solves.
//! So the code avoids divisions and square roots on that chain (frames scaled by known
//! lengths instead of normalised, output norms from the factors' norms, |d|² rather than
//! `dist²`), and keeps data-dependent branches that a predictor cannot guess (a root rotation
//! near a half turn, a target at the root or crossing the reach) rare, late in program order,
//! or out of the compiled code. Measured and rejected: batching square roots and divisions
//! into vector instructions (packing cost more than it saved), Shepperd's method with vector
//! selects instead of the near-half-turn branch (longer chain), inlining the rare paths (the
//! common path got slower), and building for x86-64-v3 (only ~0.8 ns). Timings were compared
//! in alternating A/B runs; instruction counts (callgrind) did not predict them.

pub mod batch;
pub(crate) mod finish;

use core::f32::consts::PI;

use glam::{Quat, Vec3, Vec3A, Vec3Swizzles, Vec4};
use thiserror::Error;

use crate::pose::{BoneTransform, Pose};
use crate::skeleton::{MIN_BONE_LENGTH, Skeleton, SkeletonError};

/// Errors from building a [`TwoBoneIk`] or from a solve with malformed input.
///
/// An unreachable target is not an error: see [`LimbReport::reachable`].
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum AnalyticError {
    /// A bone index or name is invalid.
    #[error(transparent)]
    Skeleton(#[from] SkeletonError),
    /// `bone` is not a strict descendant of `ancestor` (the limb must run root → mid → tip).
    #[error("bone `{bone}` is not a descendant of `{ancestor}`")]
    NotDescendant {
        /// The bone that should be the ancestor.
        ancestor: String,
        /// The bone that should descend from it.
        bone: String,
    },
    /// A limb segment has (almost) zero length in the rest pose.
    #[error("the limb segment from `{from}` to `{to}` has zero length in the rest pose")]
    ZeroLengthSegment {
        /// The segment's start bone.
        from: String,
        /// The segment's end bone.
        to: String,
    },
    /// The bend axis is non-finite, zero or parallel to the upper bone.
    #[error("the bend axis must be finite, non-zero and not parallel to the upper bone")]
    InvalidBendAxis,
    /// A [`LimbSettings`] value is out of range.
    #[error("invalid limb settings: {0}")]
    InvalidSettings(&'static str),
    /// A goal value (target, pole, orientation or weight) is NaN or infinite.
    #[error("the limb goal has a non-finite {0}")]
    NonFiniteGoal(&'static str),
    /// The pose or skeleton is too short for the limb's bone indices.
    #[error("pose or skeleton has {found} bones, the limb needs at least {needed}")]
    PoseMismatch {
        /// Bones the limb needs (its tip index + 1).
        needed: usize,
        /// Bones found in the shorter of pose and skeleton.
        found: usize,
    },
    /// The incoming pose or parent transform is non-finite or collapses a segment to zero
    /// length; the pose was left unchanged.
    #[error("the limb's incoming pose or parent transform is non-finite or degenerate")]
    DegeneratePose,
}

/// Joint-range and behaviour settings of a limb (they belong to the rig, not to a goal).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LimbSettings {
    /// Smallest flex angle of the mid joint, radians: the angle between the upper and the lower
    /// segment, 0 = straight. In `[0, flex_max]`.
    pub flex_min: f32,
    /// Largest flex angle of the mid joint, radians, in `[flex_min, π]` (π = fully folded).
    pub flex_max: f32,
    /// Soft reach: the fraction of the limb's maximum reach, in `[0, 1)`, over which the
    /// extension eases out exponentially, so the mid joint does not snap straight as the target
    /// crosses full reach (0 = off). With it on, targets in that band are approached but not
    /// quite reached.
    pub soft_reach: f32,
    /// Bend axis override, in *rest model space*: the mid joint flexes by a right-handed
    /// rotation about it (the lower bone turns from the upper bone's direction toward
    /// `bend_axis × upper`). `None`: from the rest bend plane (`upper × lower` at rest); if the
    /// rest limb is straight, the lower bone bends toward model `+Z` (or `−Y` when the upper bone
    /// lies along `Z`). Give it for rigs with straight rest limbs, e.g. legs: for a leg pointing
    /// down `−Y` whose knee goes forward `+Z`, the shin bends toward `−Z`: `Some(Vec3::X)`.
    pub bend_axis: Option<Vec3>,
}

impl Default for LimbSettings {
    fn default() -> Self {
        Self {
            flex_min: 0.0,
            flex_max: PI,
            soft_reach: 0.0,
            bend_axis: None,
        }
    }
}

impl LimbSettings {
    /// Sets the flex range (radians, 0 = straight).
    #[must_use]
    pub fn with_flex_limits(mut self, min: f32, max: f32) -> Self {
        self.flex_min = min;
        self.flex_max = max;
        self
    }

    /// Sets the soft-reach fraction (see [`LimbSettings::soft_reach`]).
    #[must_use]
    pub fn with_soft_reach(mut self, fraction: f32) -> Self {
        self.soft_reach = fraction;
        self
    }

    /// Sets the bend axis override, in rest model space.
    #[must_use]
    pub fn with_bend_axis(mut self, axis: Vec3) -> Self {
        self.bend_axis = Some(axis);
        self
    }

    fn validate(&self) -> Result<(), AnalyticError> {
        if !(self.flex_min.is_finite() && self.flex_max.is_finite()) {
            return Err(AnalyticError::InvalidSettings("flex limits must be finite"));
        }
        if self.flex_min < 0.0 || self.flex_max > PI || self.flex_min > self.flex_max {
            return Err(AnalyticError::InvalidSettings(
                "flex limits must satisfy 0 <= min <= max <= pi",
            ));
        }
        if !(0.0..1.0).contains(&self.soft_reach) {
            return Err(AnalyticError::InvalidSettings(
                "soft reach must be finite and in [0, 1)",
            ));
        }
        Ok(())
    }
}

/// Where the mid joint (elbow, knee) should point.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Pole {
    /// Keep the incoming pose's bend plane (the "previous" plane), turned as little as possible
    /// to contain the target.
    #[default]
    Keep,
    /// A pole target in model space: the mid joint goes to the side of the root→target line on
    /// which this point lies.
    Position(Vec3),
    /// A swivel angle (radians) of the bend plane about the root→target axis, right-handed,
    /// measured from the *rest* bend plane carried by the root's parent.
    Swivel(f32),
}

/// What a limb should reach for.
///
/// Weights blend toward the incoming pose like Unity's Two Bone IK constraint: the effective
/// target is `lerp(incoming tip, target, position_weight)`, the tip's model rotation
/// `slerp(incoming tip rotation, orientation, rotation_weight)` and the bend plane turns from the
/// incoming one toward the pole's by `pole_weight` of the angle between them. Weights are
/// clamped to `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LimbGoal {
    /// Target position of the tip bone's origin, in model space.
    pub target: Vec3,
    /// Target model-space rotation of the tip bone. `None`: the tip keeps its local rotation
    /// (it follows the lower bone).
    pub orientation: Option<Quat>,
    /// Where the mid joint should point.
    pub pole: Pole,
    /// Weight of the target position.
    pub position_weight: f32,
    /// Weight of the target orientation.
    pub rotation_weight: f32,
    /// Weight of the pole.
    pub pole_weight: f32,
}

impl LimbGoal {
    /// A goal for `target` (model space) with full weights, no orientation and [`Pole::Keep`].
    #[must_use]
    pub fn new(target: Vec3) -> Self {
        Self {
            target,
            orientation: None,
            pole: Pole::Keep,
            position_weight: 1.0,
            rotation_weight: 1.0,
            pole_weight: 1.0,
        }
    }

    /// Sets the tip's target model-space rotation.
    #[must_use]
    pub fn with_orientation(mut self, orientation: Quat) -> Self {
        self.orientation = Some(orientation);
        self
    }

    /// Sets a pole target position (model space).
    #[must_use]
    pub fn with_pole(mut self, pole: Vec3) -> Self {
        self.pole = Pole::Position(pole);
        self
    }

    /// Sets a swivel angle (see [`Pole::Swivel`]).
    #[must_use]
    pub fn with_swivel(mut self, angle: f32) -> Self {
        self.pole = Pole::Swivel(angle);
        self
    }

    /// Sets the position, rotation and pole weights (clamped to `[0, 1]` when solving).
    #[must_use]
    pub fn with_weights(mut self, position: f32, rotation: f32, pole: f32) -> Self {
        self.position_weight = position;
        self.rotation_weight = rotation;
        self.pole_weight = pole;
        self
    }

    /// Names the goal's first non-finite value (or degenerate orientation). The solve calls it
    /// only after a cheaper vector check of all values has failed.
    #[cold]
    fn validate(&self) -> Result<(), AnalyticError> {
        if !self.target.is_finite() {
            return Err(AnalyticError::NonFiniteGoal("target"));
        }
        if let Some(q) = self.orientation
            && !(1e-12..=1e12).contains(&q.length_squared())
        {
            return Err(AnalyticError::NonFiniteGoal("orientation"));
        }
        match self.pole {
            Pole::Position(p) if !p.is_finite() => Err(AnalyticError::NonFiniteGoal("pole")),
            Pole::Swivel(a) if !a.is_finite() => Err(AnalyticError::NonFiniteGoal("swivel angle")),
            _ if !(self.position_weight.is_finite()
                && self.rotation_weight.is_finite()
                && self.pole_weight.is_finite()) =>
            {
                Err(AnalyticError::NonFiniteGoal("weight"))
            }
            _ => Ok(()),
        }
    }
}

/// The outcome of one limb solve.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct LimbReport {
    /// Whether the effective (weight-blended) target lies within the limb's reach allowed by
    /// the flex limits. When false the limb extends (or folds) as far as it may toward it.
    pub reachable: bool,
    /// Distance from the solved tip to the effective target, model units, measured by forward
    /// kinematics of the written rotations.
    pub position_error: f32,
    /// The solved flex angle of the mid joint, radians (0 = straight).
    pub flex_angle: f32,
    /// Whether a flex limit (rather than plain geometry) stopped the mid joint.
    pub flex_limited: bool,
    /// Whether the pole (or swivel reference) was degenerate — collinear with the root→target
    /// line — so the incoming or rest bend plane was used instead.
    pub pole_fallback: bool,
    /// Distance from the root joint to the effective target.
    pub target_distance: f32,
    /// The current upper and lower segment lengths.
    pub lengths: [f32; 2],
}

/// An analytic two-bone limb solver: root (shoulder/hip) → mid (elbow/knee) → tip (wrist/ankle).
///
/// Built once per limb from the skeleton; [`TwoBoneIk::solve`] then allocates nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct TwoBoneIk {
    root: usize,
    mid: usize,
    tip: usize,
    /// Bones strictly between root and mid, parents first (held rigid).
    upper_between: Vec<usize>,
    /// Bones strictly between mid and tip, parents first (held rigid).
    lower_between: Vec<usize>,
    rest_lengths: [f32; 2],
    /// Root and mid bones' rest scales (the skeleton's rest data is immutable, so they are read
    /// once here instead of on every solve).
    root_rest_scale: Vec3,
    mid_rest_scale: Vec3,
    /// Root bone's rest local rotation.
    root_rest_rotation: Quat,
    /// Root bone's rest model rotation.
    root_rest_model_rotation: Quat,
    /// Upper segment direction at rest, root local frame.
    upper_rest_direction: Vec3,
    /// Lower segment direction at rest, mid local frame.
    lower_rest_direction: Vec3,
    /// Upper segment direction at rest, model space.
    upper_rest_model: Vec3,
    /// Bend-plane normal from the rest geometry, rest model space (`None` if straight).
    natural_bend_axis: Option<Vec3>,
    /// The bend (hinge) axis in use, root local frame, unit, normal to the upper segment.
    bend_axis: Vec3A,
    rest_flex: f32,
    settings: LimbSettings,
    cos_flex_min: f32,
    cos_flex_max: f32,
}

/// Component of `v` normal to unit `axis`, normalised; `None` when `v` is (nearly) parallel to
/// `axis` or zero.
#[inline]
fn normal_part(v: Vec3A, axis: Vec3A) -> Option<Vec3A> {
    let r = v - axis * v.dot(axis);
    let len2 = r.length_squared();
    let vv = v.length_squared();
    if len2 > 1e-10 * vv && len2 > 1e-30 {
        if len2 < 1e-4 * vv {
            return Some(normal_part_again(r, axis));
        }
        Some(r * len2.sqrt().recip())
    } else {
        None
    }
}

/// [`normal_part`] of a `v` nearly along `axis` (sin under 1e-2): the subtraction's rounding
/// leaves `r` off the normal plane by up to ε / sin; a second Gram–Schmidt step puts it back
/// (as [`orthogonal_cross`] does for the pole's normal). Out of line: rare.
#[cold]
#[inline(never)]
fn normal_part_again(r: Vec3A, axis: Vec3A) -> Vec3A {
    let r = r - axis * r.dot(axis);
    r * r.length_squared().sqrt().recip()
}

/// `v × axis` and its length, for an `axis` with squared length `axis2` (> 0). For a unit
/// `axis`, `(v × axis) / |v × axis|` is the unit normal of the plane through `axis` and `v`,
/// oriented so that `v`'s side of `axis` maps onto it by `n = s × axis` (with `s` the unit
/// component of `v` normal to `axis`; the cross product ignores `v`'s component along `axis`,
/// so `|v × axis| = |v⊥|`); for a longer `axis` it is `|axis|` times that product, so the
/// thresholds are scaled by `axis2`. `None` when `v` is (nearly) parallel to `axis` or zero,
/// with the same thresholds as [`normal_part`].
#[inline(always)]
fn cross_and_length(v: Vec3A, axis: Vec3A, axis2: f32) -> Option<(Vec3A, f32)> {
    let x = v.cross(axis);
    // Squared lengths as `s + s.yzx + s.zxy` (the sum in every lane: fewer shuffles than `dot`).
    let (xx, vv) = (x * x, v * v);
    let len2 = (xx + xx.yzx() + xx.zxy()).x;
    let vv2 = (vv + vv.yzx() + vv.zxy()).x * axis2;
    if len2 > 1e-10 * vv2 && len2 > 1e-30 * axis2 {
        if len2 < 1e-4 * vv2 {
            return Some(orthogonal_cross(x, axis, axis2));
        }
        Some((x, len2.sqrt()))
    } else {
        None
    }
}

/// `x = v × axis` for a nearly collinear `v` (sin of the angle under 1e-2): the rounding of
/// the cross product's cancelling terms leaves `x` off the normal plane of `axis` by up to
/// ε / sin of a radian — enough to tilt the limb's frame and miss the target by 0.3 % of the
/// limb. One Gram–Schmidt step puts it back. Out of line: rare.
#[cold]
#[inline(never)]
fn orthogonal_cross(x: Vec3A, axis: Vec3A, axis2: f32) -> (Vec3A, f32) {
    let x = x - axis * (x.dot(axis) / axis2);
    (x, x.length())
}

/// The target frame `(b1, b2, b3)` = (target direction, bend-plane normal, their cross
/// product) of the root's rotation, scaled by a common factor `k > 0`.
#[derive(Clone, Copy)]
struct TargetFrame {
    b1: Vec3A,
    b2: Vec3A,
    b3: Vec3A,
    k: f32,
}

impl TargetFrame {
    /// The unit frame on the unit direction `dir` and unit normal `n`.
    #[inline(always)]
    fn unit(dir: Vec3A, n: Vec3A) -> Self {
        Self {
            b1: dir,
            b2: n,
            b3: dir.cross(n),
            k: 1.0,
        }
    }
}

/// `q` with components below 1e-20 in magnitude set to zero: far below f32 precision in a unit
/// quaternion, but left alone they turn into subnormal numbers over repeated solves (a limb held
/// straight toward an out-of-reach target drives its mid rotation's off-axis components toward
/// zero), and arithmetic on subnormals is many times slower on common CPUs. Applied to the
/// rotations built on their own previous value: the mid's, and a blended tip's.
#[inline(always)]
fn flush_subnormal(q: Quat) -> Quat {
    let v = Vec4::from(q);
    Quat::from_vec4(Vec4::select(
        v.abs().cmpge(Vec4::splat(1e-20)),
        v,
        Vec4::ZERO,
    ))
}

/// The rotation taking the orthonormal frame (`a1`, `a2`, `a3`) onto (`b1`, `b2`, `b3`) (both
/// right-handed: `a3 = a1 × a2`, `b3 = b1 × b2`), **up to a positive factor**: not normalised,
/// since every caller multiplies it into a quaternion that is normalised at the end (and
/// `q.conjugate()` is `|q|² q⁻¹`, so it may be inverted too).
///
/// The frames may be given scaled, the `aᵢ` by a common factor `ka > 0` and the `bᵢ` by
/// `kb > 0`, which saves a caller the divisions that would normalise them: every sum below is
/// then `k = ka kb` times the unit-frame one, and the `1` in `w` becomes `k`
/// ([`frame_rotation_scaled`]).
///
/// The rotation is `R = Σ bᵢ aᵢᵀ`. Its trace is `Σ tᵢ = 1 + 2 cos θ` with `tᵢ = aᵢ·bᵢ`, and
/// `R − Rᵀ = [Σ aᵢ × bᵢ]×` with `Σ aᵢ × bᵢ = 2 sin θ · axis`, so
///
/// `(Σ aᵢ × bᵢ, 1 + Σ tᵢ) = 4 cos(θ/2) · (sin(θ/2) axis, cos(θ/2))`:
///
/// the three-axis form of the half-vector arc `(a × b, 1 + a·b)`, with no matrix, square root or
/// branch on the matrix's diagonal. It loses precision as θ → π (`cos(θ/2)` → 0); there the
/// target frame is first turned by π about the target axis `bᵢ` with the largest `tᵢ`, which
/// negates the other two target axes (so their terms change sign), and that half turn
/// `(bᵢ, 0)` is applied back afterwards.
#[inline(always)]
fn frame_rotation(a1: Vec3A, a2: Vec3A, a3: Vec3A, b1: Vec3A, b2: Vec3A, b3: Vec3A) -> Quat {
    frame_rotation_scaled(a1, a2, a3, 1.0, b1, b2, b3).0
}

/// [`frame_rotation`] for frames scaled by factors whose product is `k > 0`; also returns the
/// result's squared norm (from its parts, sooner than from the assembled quaternion).
#[inline(always)]
fn frame_rotation_scaled(
    a1: Vec3A,
    a2: Vec3A,
    a3: Vec3A,
    k: f32,
    b1: Vec3A,
    b2: Vec3A,
    b3: Vec3A,
) -> (Quat, f32) {
    // a × b = (a * b.yzx − a.yzx * b).yzx, and the sum of the three needs one final swizzle.
    // (Summed pairwise: the adds form a tree, not a chain, which the solve's latency feels.)
    let v = ((a1 * b1.yzx() - a1.yzx() * b1)
        + (a2 * b2.yzx() - a2.yzx() * b2)
        + (a3 * b3.yzx() - a3.yzx() * b3))
        .yzx();
    // w = 4 cos²(θ/2) k. Above 0.05 k (|θ| < 0.93 π) the factor 4 cos(θ/2) exceeds 0.44, so
    // the rounding errors of the sums (a few 1e-7) turn the result by at most ~4e-6 rad (see
    // the test `frame_rotation_matches_the_matrix_route_at_every_angle`).
    let w = k + (a1 * b1 + a2 * b2 + a3 * b3).element_sum();
    if w > 0.05 * k {
        (Quat::from_vec4(v.extend(w)), v.length_squared() + w * w)
    } else {
        let q = frame_rotation_near_half_turn(a1, a2, a3, k, b1, b2, b3, v, w);
        (q, q.length_squared())
    }
}

/// [`frame_rotation`] for angles near π, given the sums `v` and `w` of the direct formula.
#[inline(always)]
fn frame_rotation_near_half_turn(
    a1: Vec3A,
    a2: Vec3A,
    a3: Vec3A,
    k: f32,
    b1: Vec3A,
    b2: Vec3A,
    b3: Vec3A,
    v: Vec3A,
    w: f32,
) -> Quat {
    let (t1, t2, t3) = (a1.dot(b1), a2.dot(b2), a3.dot(b3));
    // The largest tᵢ exceeds (w − k)/3, so the turned frame's k + tᵢ − tⱼ − tₖ = 2k + 2tᵢ − w
    // exceeds (4k − w)/3 > k: its angle is below 2π/3.
    let (ai, bi, ti) = if t1 >= t2 && t1 >= t3 {
        (a1, b1, t1)
    } else if t2 >= t3 {
        (a2, b2, t2)
    } else {
        (a3, b3, t3)
    };
    let turned = Quat::from_vec4((2.0 * ai.cross(bi) - v).extend(2.0 * (k + ti) - w));
    Quat::from_vec4(bi.extend(0.0)) * turned
}

/// The tip's distance from `target` with the root rotation normalised first (the rare
/// overflow path of the measured position error).
#[cold]
#[inline(never)]
fn measured_error_unit(root: Quat, c: Vec3A, p_root: Vec3A, target: Vec3A) -> f32 {
    let q = Quat::from_vec4(Vec4::from(root) * (Vec4::from(root).abs().max_element().recip()));
    let tip = p_root + rotate(q.normalize(), c);
    let e = tip.distance(target);
    if e.is_finite() { e } else { f32::MAX }
}

/// `q v q*` for any (not necessarily unit) `q`: `|q|²` times `v` rotated by `q`.
#[inline(always)]
fn sandwich(q: Quat, v: Vec3A) -> Vec3A {
    let b = Vec3A::from(q.xyz());
    let w = q.w;
    v * (w * w - b.length_squared()) + b * (2.0 * b.dot(v)) + b.cross(v) * (2.0 * w)
}

/// `q * v` for a unit quaternion `q = (b, w)`: `v + 2w (b × v) + 2 b × (b × v)`, two cross
/// products (glam's general form also works for non-unit `q`, at about 1.5 times the cost).
#[inline(always)]
fn rotate(q: Quat, v: Vec3A) -> Vec3A {
    let b = Vec3A::from(q.xyz());
    let t = b.cross(v) * 2.0;
    v + t * q.w + b.cross(t)
}

/// Whether every component of `vs` and `qs` is finite: `x * 0` is ±0 for a finite `x` and NaN
/// otherwise, so the sum of these products is zero exactly then (one comparison for all).
#[inline(always)]
fn all_finite<const N: usize, const M: usize>(vs: [Vec3A; N], qs: [Quat; M]) -> bool {
    let v = vs.iter().fold(Vec3A::ZERO, |sum, &x| sum + x * 0.0);
    let q = qs
        .iter()
        .fold(Vec4::ZERO, |sum, &x| sum + Vec4::from(x) * 0.0);
    v == Vec3A::ZERO && q == Vec4::ZERO
}

/// Shortest-arc rotation from unit `from` to unit `to` (a turn by π about an axis normal to
/// `from` when they are exactly opposite).
#[inline]
fn arc(from: Vec3A, to: Vec3A) -> Quat {
    let c = from.cross(to);
    let angle = c.length().atan2(from.dot(to));
    let axis = c
        .try_normalize()
        .unwrap_or_else(|| from.any_orthonormal_vector());
    Quat::from_axis_angle(axis.into(), angle)
}

/// Offset of `end` from the frame (origin, identity rotation, `scale`) through the rigid bones
/// `between`: returns the offset, the rotation of `end`'s parent relative to the frame (`None`
/// for identity: no bones between) and the model scale of `end`'s parent.
#[inline(always)]
fn offset_through(
    skeleton: &Skeleton,
    pose: &Pose,
    between: &[usize],
    scale: Vec3,
    end: usize,
) -> (Vec3A, Option<Quat>, Vec3) {
    if between.is_empty() {
        return (Vec3A::from(scale * pose.translations[end]), None, scale);
    }
    let bones = skeleton.bones();
    let mut t = Vec3A::ZERO;
    let mut r = Quat::IDENTITY;
    let mut s = scale;
    for &i in between {
        t += r * Vec3A::from(s * pose.translations[i]);
        r *= pose.rotations[i];
        s *= bones[i].rest.scale;
    }
    (t + r * Vec3A::from(s * pose.translations[end]), Some(r), s)
}

/// Distance from the root to the tip for a flex angle with cosine `cos`.
#[inline]
fn reach(l1: f32, l2: f32, cos: f32) -> f32 {
    (l1 * l1 + l2 * l2 + 2.0 * l1 * l2 * cos).max(0.0).sqrt()
}

impl TwoBoneIk {
    /// A limb from bone indices with default [`LimbSettings`].
    ///
    /// `mid` must descend from `root` and `tip` from `mid`; bones between them are held rigid.
    ///
    /// # Errors
    /// [`AnalyticError::Skeleton`] (index out of range), [`AnalyticError::NotDescendant`],
    /// [`AnalyticError::ZeroLengthSegment`].
    pub fn try_new(
        skeleton: &Skeleton,
        root: usize,
        mid: usize,
        tip: usize,
    ) -> Result<Self, AnalyticError> {
        Self::try_with_settings(skeleton, root, mid, tip, LimbSettings::default())
    }

    /// A limb from bone names with default [`LimbSettings`]; see [`TwoBoneIk::try_new`].
    ///
    /// # Errors
    /// [`AnalyticError::Skeleton`] for an unknown name, and the errors of
    /// [`TwoBoneIk::try_new`].
    pub fn from_names(
        skeleton: &Skeleton,
        root: &str,
        mid: &str,
        tip: &str,
    ) -> Result<Self, AnalyticError> {
        Self::try_new(
            skeleton,
            skeleton.index_of(root)?,
            skeleton.index_of(mid)?,
            skeleton.index_of(tip)?,
        )
    }

    /// A limb from bone indices with the given settings; see [`TwoBoneIk::try_new`].
    ///
    /// # Errors
    /// The errors of [`TwoBoneIk::try_new`], [`AnalyticError::InvalidSettings`] and
    /// [`AnalyticError::InvalidBendAxis`].
    pub fn try_with_settings(
        skeleton: &Skeleton,
        root: usize,
        mid: usize,
        tip: usize,
        settings: LimbSettings,
    ) -> Result<Self, AnalyticError> {
        let len = skeleton.len();
        for i in [root, mid, tip] {
            if i >= len {
                return Err(SkeletonError::IndexOutOfRange { index: i, len }.into());
            }
        }
        let name = |i: usize| skeleton.bones()[i].name.clone();
        let between = |ancestor: usize, bone: usize| -> Result<Vec<usize>, AnalyticError> {
            if ancestor == bone || !skeleton.is_ancestor_or_self(ancestor, bone) {
                return Err(AnalyticError::NotDescendant {
                    ancestor: name(ancestor),
                    bone: name(bone),
                });
            }
            let mut v: Vec<usize> = skeleton
                .ancestors_inclusive(bone)
                .skip(1)
                .take_while(|&i| i != ancestor)
                .collect();
            v.reverse();
            Ok(v)
        };
        let upper_between = between(root, mid)?;
        let lower_between = between(mid, tip)?;

        let model = skeleton.rest_model_transforms();
        let (pr, pm, pt) = (
            model[root].translation,
            model[mid].translation,
            model[tip].translation,
        );
        let (a, b) = (pm - pr, pt - pm);
        let (l1, l2) = (a.length(), b.length());
        if l1 <= MIN_BONE_LENGTH {
            return Err(AnalyticError::ZeroLengthSegment {
                from: name(root),
                to: name(mid),
            });
        }
        if l2 <= MIN_BONE_LENGTH {
            return Err(AnalyticError::ZeroLengthSegment {
                from: name(mid),
                to: name(tip),
            });
        }
        let (ua, ub) = (a / l1, b / l2);
        let n = ua.cross(ub);
        let natural_bend_axis = (n.length_squared() > 1e-8).then(|| n.normalize());
        let root_rest_model_rotation = model[root].rotation.normalize();
        let mid_rest_model_rotation = model[mid].rotation.normalize();
        let mut ik = Self {
            root,
            mid,
            tip,
            upper_between,
            lower_between,
            rest_lengths: [l1, l2],
            root_rest_scale: skeleton.bones()[root].rest.scale,
            mid_rest_scale: skeleton.bones()[mid].rest.scale,
            root_rest_rotation: skeleton.bones()[root].rest.rotation,
            root_rest_model_rotation,
            upper_rest_direction: root_rest_model_rotation.inverse() * ua,
            lower_rest_direction: mid_rest_model_rotation.inverse() * ub,
            upper_rest_model: ua,
            natural_bend_axis,
            bend_axis: Vec3A::ZERO,
            rest_flex: ua.dot(ub).clamp(-1.0, 1.0).acos(),
            settings: LimbSettings::default(),
            cos_flex_min: 1.0,
            cos_flex_max: -1.0,
        };
        ik.set_settings(settings)?;
        Ok(ik)
    }

    /// Replaces the settings (flex limits, soft reach, bend axis).
    ///
    /// # Errors
    /// [`AnalyticError::InvalidSettings`] or [`AnalyticError::InvalidBendAxis`]; the solver is
    /// unchanged then.
    pub fn set_settings(&mut self, settings: LimbSettings) -> Result<(), AnalyticError> {
        settings.validate()?;
        let upper = Vec3A::from(self.upper_rest_model);
        let axis_model: Vec3A = match settings.bend_axis {
            Some(axis) => {
                if !axis.is_finite() {
                    return Err(AnalyticError::InvalidBendAxis);
                }
                normal_part(axis.into(), upper).ok_or(AnalyticError::InvalidBendAxis)?
            }
            None => match self.natural_bend_axis {
                Some(n) => n.into(),
                None => {
                    // Straight rest limb: bend toward +Z, or −Y when the upper bone lies along Z.
                    let toward = normal_part(Vec3A::Z, upper)
                        .or_else(|| normal_part(Vec3A::NEG_Y, upper))
                        .unwrap_or_else(|| upper.any_orthonormal_vector());
                    upper.cross(toward).normalize()
                }
            },
        };
        self.bend_axis = (self.root_rest_model_rotation.inverse() * axis_model).normalize();
        self.cos_flex_min = settings.flex_min.cos();
        self.cos_flex_max = settings.flex_max.cos();
        self.settings = settings;
        Ok(())
    }

    /// The settings in use.
    #[must_use]
    pub fn settings(&self) -> &LimbSettings {
        &self.settings
    }

    /// The root, mid and tip bone indices.
    #[must_use]
    pub fn bones(&self) -> [usize; 3] {
        [self.root, self.mid, self.tip]
    }

    /// Rest lengths of the upper (root→mid) and lower (mid→tip) segments, model units.
    #[must_use]
    pub fn rest_lengths(&self) -> [f32; 2] {
        self.rest_lengths
    }

    /// Rest direction of the upper segment in the root bone's local frame (toward the mid
    /// joint, derived from the rest offsets; any local axis).
    #[must_use]
    pub fn upper_rest_direction(&self) -> Vec3 {
        self.upper_rest_direction
    }

    /// Rest direction of the lower segment in the mid bone's local frame (toward the tip).
    #[must_use]
    pub fn lower_rest_direction(&self) -> Vec3 {
        self.lower_rest_direction
    }

    /// The bend (hinge) axis in use, in the root bone's local frame: unit, normal to the upper
    /// segment; the mid joint flexes by a right-handed turn about it.
    #[must_use]
    pub fn bend_axis(&self) -> Vec3 {
        self.bend_axis.into()
    }

    /// The flex angle of the rest pose, radians (0 = straight).
    #[must_use]
    pub fn rest_flex(&self) -> f32 {
        self.rest_flex
    }

    /// Solves the limb toward `goal`, writing the local rotations of the root and mid bones into
    /// `pose`, and the tip's when `goal` has an orientation. No other bone (and no translation)
    /// is touched; an unreachable target is reported in [`LimbReport::reachable`], not an error.
    ///
    /// Computes the root's parent model transform by walking its ancestors; callers that
    /// already have forward kinematics should use [`TwoBoneIk::solve_with_parent`].
    ///
    /// # Errors
    /// [`AnalyticError::NonFiniteGoal`], [`AnalyticError::PoseMismatch`],
    /// [`AnalyticError::DegeneratePose`]; `pose` is unchanged then.
    pub fn solve(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goal: &LimbGoal,
    ) -> Result<LimbReport, AnalyticError> {
        self.check_sizes(skeleton, pose)?;
        let parent = match skeleton.parent(self.root) {
            Some(p) => skeleton.model_transform(pose, p),
            None => BoneTransform::IDENTITY,
        };
        self.solve_with_parent(skeleton, pose, goal, &parent)
    }

    #[inline(always)]
    fn check_sizes(&self, skeleton: &Skeleton, pose: &Pose) -> Result<(), AnalyticError> {
        let found = skeleton
            .len()
            .min(pose.rotations.len())
            .min(pose.translations.len());
        // `root < mid < tip` always holds (the skeleton lists parents first); stating it lets
        // the compiler drop the bounds checks of the root's and mid's indices after this one.
        if found <= self.tip || self.root >= self.mid || self.mid >= self.tip {
            return Err(AnalyticError::PoseMismatch {
                needed: self.tip + 1,
                found,
            });
        }
        Ok(())
    }

    /// Solves the limb given the model transform of the root bone's parent (identity for a
    /// skeleton root); see [`TwoBoneIk::solve`]. Reads only the limb's bones from `pose`.
    ///
    /// # Errors
    /// As [`TwoBoneIk::solve`].
    pub fn solve_with_parent(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goal: &LimbGoal,
        parent: &BoneTransform,
    ) -> Result<LimbReport, AnalyticError> {
        // Without bones between root, mid and tip (the common case) a copy of the solve without
        // the rigid-offset walks and their rotations (`Option`s known to be `None`) runs.
        if self.upper_between.is_empty() && self.lower_between.is_empty() {
            self.solve_impl::<false, false>(skeleton, pose, goal, parent)
        } else {
            self.solve_between(skeleton, pose, goal, parent)
        }
    }

    /// [`TwoBoneIk::solve_impl`] with bones between root, mid and tip, out of line so that the
    /// common solve is compiled as a function of its own.
    #[inline(never)]
    fn solve_between(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goal: &LimbGoal,
        parent: &BoneTransform,
    ) -> Result<LimbReport, AnalyticError> {
        self.solve_impl::<true, false>(skeleton, pose, goal, parent)
    }

    /// [`TwoBoneIk::solve_impl`] again with the pole's target frame built at unit scale, for
    /// the rare goals where the scaled frame left f32's range (a target ~1e-6 from the root
    /// with a pole: the root's rotation near a half turn underflows). Out of line and cold, so
    /// the common solve is unchanged.
    #[cold]
    #[inline(never)]
    fn solve_unit_frame(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goal: &LimbGoal,
        parent: &BoneTransform,
    ) -> Result<LimbReport, AnalyticError> {
        if self.upper_between.is_empty() && self.lower_between.is_empty() {
            self.solve_impl::<false, true>(skeleton, pose, goal, parent)
        } else {
            self.solve_impl::<true, true>(skeleton, pose, goal, parent)
        }
    }

    /// [`TwoBoneIk::solve_with_parent`]; `BETWEEN`: whether to walk the bones between root and
    /// mid and between mid and tip (the result without them is the same either way);
    /// `UNIT_FRAME`: whether to build the pole's target frame at unit scale (the retry of
    /// [`TwoBoneIk::solve_unit_frame`]).
    #[inline(always)]
    fn solve_impl<const BETWEEN: bool, const UNIT_FRAME: bool>(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goal: &LimbGoal,
        parent: &BoneTransform,
    ) -> Result<LimbReport, AnalyticError> {
        // The common path (full weights, a usable pole) is kept free of the rare cases, which
        // live in `#[cold]` helpers, so that it stays in registers.
        //
        // The goal is checked with one vector test of all its values (times zero) below, and
        // named by `LimbGoal::validate` only when that fails (on the cold path), so a
        // non-finite goal is still reported as `NonFiniteGoal` and leaves the pose unchanged.
        if let Err(e) = self.check_sizes(skeleton, pose) {
            return Err(goal_error_or(goal, e));
        }
        // The goal's values, checked here, off the solve's dependency chains (a non-finite pole
        // or weight need not show in the output).
        let pole_values = match goal.pole {
            Pole::Position(p) => Vec3A::from(p),
            Pole::Keep => Vec3A::ZERO,
            Pole::Swivel(angle) => Vec3A::splat(angle),
        };
        let weights = Vec3A::new(goal.position_weight, goal.rotation_weight, goal.pole_weight);
        let o_values = goal.orientation.unwrap_or(Quat::IDENTITY);
        // (A (near-)zero orientation has no direction.)
        if !all_finite([Vec3A::from(goal.target), pole_values, weights], [o_values])
            || o_values.length_squared() < 1e-12
        {
            return Err(goal_error_or(goal, AnalyticError::DegeneratePose));
        }
        let w_pos = goal.position_weight.clamp(0.0, 1.0);
        let w_rot = goal.rotation_weight.clamp(0.0, 1.0);
        let w_pole = goal.pole_weight.clamp(0.0, 1.0);

        // The incoming limb, in the root's (unscaled) rotation frame.
        let q_parent = parent.rotation;
        let q_root = pose.rotations[self.root];
        let q_mid = pose.rotations[self.mid];
        let p_root = Vec3A::from(parent.translation)
            + rotate(
                q_parent,
                Vec3A::from(parent.scale * pose.translations[self.root]),
            );
        let root_scale = parent.scale * self.root_rest_scale;
        let (u1, q_rm, s_mid_parent) = if BETWEEN {
            offset_through(skeleton, pose, &self.upper_between, root_scale, self.mid)
        } else {
            offset_through(skeleton, pose, &[], root_scale, self.mid)
        };
        let s_mid = s_mid_parent * self.mid_rest_scale;
        let (u2, q_mt, _) = if BETWEEN {
            offset_through(skeleton, pose, &self.lower_between, s_mid, self.tip)
        } else {
            offset_through(skeleton, pose, &[], s_mid, self.tip)
        };
        let (l1, l2) = (u1.length(), u2.length());
        // Rotation of the mid bone in the root frame. (Skipped multiplications when there are no
        // bones between root and mid: the common case.)
        let m_cur = q_rm.map_or(q_mid, |r| r * q_mid);
        let b_cur = rotate(m_cur, u2);
        let lengths_ok = l1 > MIN_BONE_LENGTH * 1e-3 && l2 > MIN_BONE_LENGTH * 1e-3;
        // `p_root` is finite only if `q_parent` is (`rotate` multiplies every component of the
        // quaternion into the result, and a non-finite value times 0 is NaN), `b_cur` only if
        // `q_mid` is (and the bones between root and mid); `q_root` is checked on its own. The
        // root's model rotation `q_parent * q_root` is then finite too; only the rare paths
        // below need the product itself.
        if !(lengths_ok && all_finite([b_cur, p_root], [q_root])) {
            return Err(goal_error_or(goal, AnalyticError::DegeneratePose));
        }
        // (A `move` closure of copies: built only on the rare paths that call it.)
        let incoming = move || Incoming {
            p_root,
            q_parent,
            q_root,
            u1,
            b_cur,
        };
        let total = l1 + l2;
        let ua = u1 / l1;

        if w_pos == 0.0 && w_pole == 0.0 && (w_rot == 0.0 || goal.orientation.is_none()) {
            goal.validate()?;
            return Ok(Self::unchanged_report(
                &incoming(),
                ua,
                b_cur / l2,
                [l1, l2],
            ));
        }

        // Effective target and root→target direction.
        let goal_target = Vec3A::from(goal.target);
        let target = if w_pos >= 1.0 {
            goal_target
        } else {
            incoming().tip().lerp(goal_target, w_pos)
        };
        let d = target - p_root;
        let dd = d.length_squared();
        let dist = dd.sqrt();
        let far = dist > 1e-6 * total;
        // The unit target direction, for the rarer routes below (the common one scales its
        // frame by |d| instead): computed there, so that the common path neither divides for it
        // nor branches on `far` this early.
        let dir = || {
            if far {
                d / dist
            } else {
                incoming().direction_at_root(ua)
            }
        };

        // Flex by the law of cosines, with reach, soft reach and flex limits.
        let (cos_min, cos_max) = (self.cos_flex_min, self.cos_flex_max);
        let inv_2l1l2 = (2.0 * l1 * l2).recip();
        let l_sq = l1 * l1 + l2 * l2;
        // (From |d|², not from `dist`: the law of cosines need not wait for the square root.)
        let cos_raw = (dd - l_sq) * inv_2l1l2;
        let tol = 1e-5;
        let reachable = cos_raw <= cos_min + tol && cos_raw >= cos_max - tol;
        let (cos_geom, cos_phi) = if self.settings.soft_reach > 0.0 {
            let dist_eff = self.soft_distance(dist, l1, l2);
            let cos_geom = clamp_fast((dist_eff * dist_eff - l_sq) * inv_2l1l2, -1.0, 1.0);
            (cos_geom, clamp_fast(cos_geom, cos_max, cos_min))
        } else {
            // −1 ≤ cos_max ≤ cos_min ≤ 1: one clamp on the chain.
            (
                clamp_fast(cos_raw, -1.0, 1.0),
                clamp_fast(cos_raw, cos_max, cos_min),
            )
        };
        let flex_limited = (cos_phi - cos_geom).abs() > 1e-6;
        // |cos φ| ≤ 1, so 1 − cos² φ ≥ 0 in floating point too.
        let sin_sq = 1.0 - cos_phi * cos_phi;
        let sin_phi = sin_sq.sqrt();

        // Bend axis in the root frame, normal to the (possibly animated) upper segment.
        // (Already normal unless bones between root and mid or a non-uniform scale moved it.)
        let bend_axis = self.bend_axis;
        let h = if bend_axis.dot(ua).abs() < 1e-7 {
            bend_axis
        } else {
            normal_part(bend_axis, ua).unwrap_or_else(|| ua.any_orthonormal_vector())
        };
        // The desired lower segment: the upper one turned by φ about h, in the root frame.
        let side = h.cross(ua);
        let ub_des = ua * cos_phi + side * sin_phi;
        // The root→tip vector c = u1 + l2 ub_des = ua (l1 + l2 cos φ) + side (l2 sin φ); its
        // length is the law of cosines again, so it needs no vector normalisation. (|c|² from
        // sin² φ, so that its square root need not wait for sin φ's.)
        let (c_along, c_across) = (l1 + l2 * cos_phi, l2 * sin_phi);
        let c_len = (c_along * c_along + l2 * l2 * sin_sq).sqrt();
        // The tip's direction frame in the root frame, scaled by |c| (no division):
        // c = |c| uc, uc = ua cos ψ + side sin ψ with ψ the angle from the upper segment to c,
        // and |c| (uc × h) = ua (l2 sin φ) − side (l1 + l2 cos φ). When the limb folds onto the
        // root, uc = side (unscaled).
        let (c, c_x_h, c_scale) = if c_len > 1e-6 * total {
            (
                ua * c_along + side * c_across,
                ua * c_across - side * c_along,
                c_len,
            )
        } else {
            (side, ua, 1.0)
        };

        // Desired bend-plane normal in model space: the normal of the plane through the target
        // line and the pole, oriented so that the pole's side s maps onto it by s × dir.
        let (target_frame, pole_fallback) = match goal.pole {
            Pole::Position(p) => {
                let v = Vec3A::from(p) - p_root;
                // From the raw `d`, x = v × d (the same plane, thresholds scaled by |d|²), with
                // the frame scaled by |d| |x| = (d |x|, x |d|, d × x): no division on the chain.
                // The unit frame through `dir` itself when the target is at the root, or where
                // the products formed from the scaled frame could leave f32's range: the squared
                // norms below grow like `size` = |d|⁴ |v|² (l1 + l2)⁴.
                let g = dd * v.length_squared();
                let size = g * dd * (total * total) * (total * total);
                let frame = if !UNIT_FRAME && far && size < 1e30 && size > 1e-30 {
                    cross_and_length(v, d, dd).map(|(x, len)| TargetFrame {
                        b1: d * len,
                        b2: x * dist,
                        b3: d.cross(x),
                        k: dist * len,
                    })
                } else {
                    let dir = dir();
                    cross_and_length(v, dir, 1.0)
                        .map(|(x, len)| TargetFrame::unit(dir, x * len.recip()))
                };
                (frame, frame.is_none())
            }
            Pole::Keep => (None, false),
            Pole::Swivel(angle) => {
                let dir = dir();
                let r = self.rest_reference(q_parent, dir);
                (
                    r.map(|r| TargetFrame::unit(dir, Quat::from_axis_angle(dir.into(), angle) * r)),
                    r.is_none(),
                )
            }
        };
        let target_frame = match target_frame {
            Some(frame) if w_pole >= 1.0 => frame,
            _ => {
                // (b2 / k is the unit normal for either scaling.)
                let n_pole = target_frame.map(|f| f.b2 * f.k.recip());
                let dir = dir();
                let n = self.fallback_normal(&incoming(), h, dir, n_pole, w_pole);
                TargetFrame::unit(dir, n)
            }
        };

        // Mid: turn the lower segment onto its new direction about the bend axis.
        // The half-vector arc (ub_cur × ub_des, 1 + cos) = 2 cos(θ/2) (sin(θ/2) axis, cos(θ/2))
        // is exact and cheap unless the turn is near π.
        // (With b_cur = l2 ub_cur, the arc is l2 times that: no division needed.)
        let dot_turn = b_cur.dot(ub_des);
        let delta = if dot_turn > -0.99 * l2 {
            Quat::from_vec4(b_cur.cross(ub_des).extend(l2 + dot_turn))
        } else {
            half_turn(b_cur / l2, ub_des, h)
        };
        let m_new = delta * m_cur;
        let mid_raw = q_rm.map_or(m_new, |r| r.conjugate() * m_new);
        // From here on rotations are built up to a positive factor and normalised once, where
        // they are written (`conjugate` stands for `inverse`: it is `|q|² q⁻¹`).
        // Root: map the root-frame (tip direction, bend axis) onto (target direction, normal).
        let TargetFrame { b1, b2, b3, k: kb } = target_frame;
        let (new_root_rot, root_rot2) =
            frame_rotation_scaled(c, h * c_scale, c_x_h, c_scale * kb, b1, b2, b3);
        let root_raw = q_parent.conjugate() * new_root_rot;
        // The written rotations are normalised by their norms' products (|p q| = |p| |q|): the
        // squared norms of the factors are formed while the products are, instead of after them,
        // which shortens the solve's longest dependency chains.
        let (m_cur2, parent2) = (m_cur.length_squared(), q_parent.length_squared());
        let delta2 = delta.length_squared();
        let m_new2 = delta2 * m_cur2;
        let mid2 = m_new2 * q_rm.map_or(1.0, Quat::length_squared);
        let root2 = parent2 * root_rot2;
        let (inv_mid, inv_root) = (mid2.sqrt().recip(), root2.sqrt().recip());
        let new_mid = flush_subnormal(mid_raw * inv_mid);
        let new_root = root_raw * inv_root;
        // The tip, and a value that is finite exactly when it is (below).
        let (new_tip, tip_check) = match goal.orientation {
            Some(o) if w_rot >= 1.0 && q_mt.is_none() && UNIT_FRAME => {
                // (The retry: unit factors, so that the norms' product cannot overflow on a
                // limb ~1e9 units long.)
                let tip =
                    m_new.normalize().conjugate() * (new_root_rot.normalize().conjugate() * o);
                let tip = tip.normalize();
                (tip, Vec4::from(tip).element_sum())
            }
            Some(o) if w_rot >= 1.0 && q_mt.is_none() => {
                // The target orientation in the new frame of the tip's parent,
                // (root_rot m_new)⁻¹ o, grouped as m_new⁻¹ (root_rot⁻¹ o) so that the two
                // right-hand products run side by side. (Linear in `o`, so `o` needs no
                // normalising before the final one.)
                let tip = m_new.conjugate() * (new_root_rot.conjugate() * o);
                let tip2 = m_new2 * root_rot2 * o.length_squared();
                let inv_tip = tip2.sqrt().recip();
                (tip * inv_tip, tip2 + inv_tip)
            }
            Some(o) => {
                let tip = self.blended_tip(
                    pose,
                    o,
                    w_rot,
                    q_parent * q_root * m_cur,
                    if UNIT_FRAME {
                        new_root_rot.normalize() * m_new.normalize()
                    } else {
                        new_root_rot * m_new
                    },
                    q_mt,
                );
                (tip, Vec4::from(tip).element_sum())
            }
            None => (pose.rotations[self.tip], 0.0),
        };
        // The output is finite exactly when the squared norms and their inverse square roots
        // are (a non-finite factor makes its norm non-finite; a zero one, the inverse).
        let check = mid2 + inv_mid + root2 + inv_root + tip_check;
        if !(check * 0.0 == 0.0) {
            if !UNIT_FRAME {
                // (`pose` is still untouched.)
                return self.solve_unit_frame(skeleton, pose, goal, parent);
            }
            return Err(goal_error_or(goal, AnalyticError::DegeneratePose));
        }
        pose.rotations[self.root] = new_root;
        pose.rotations[self.mid] = new_mid;
        pose.rotations[self.tip] = new_tip;
        // The position error measured on the written root rotation: the tip by forward
        // kinematics of the new root rotation applied to the root→tip vector (which the
        // mid's exact half-vector arc gives to rounding), not the |c| the solve aimed for.
        // (`sandwich` is |q|² q v q⁻¹: one division, no root. Off the outputs' chains.)
        // (`c` itself is a unit stand-in when the limb folds onto the root: the true vector.)
        let c_true = ua * c_along + side * c_across;
        // (1 / |root rotation|² = |parent|² / root2, from the inverse root already formed.)
        let tip = p_root + sandwich(new_root_rot, c_true) * (parent2 * inv_root * inv_root);
        let mut position_error = tip.distance(target);
        if !position_error.is_finite() {
            // The unnormalised product left f32's range (a limb ~1e15 long, a rotation's norm
            // near underflow): the same with the unit rotation.
            position_error = measured_error_unit(new_root_rot, c_true, p_root, target);
        }
        Ok(LimbReport {
            reachable,
            position_error,
            // (Clamped again: acos near ±1 is coarse in f32.)
            flex_angle: clamp_fast(
                acos_fast(cos_phi),
                self.settings.flex_min,
                self.settings.flex_max,
            ),
            flex_limited,
            pole_fallback,
            target_distance: dist,
            lengths: [l1, l2],
        })
    }

    /// The tip's new local rotation for a target orientation `o` with a rotation weight below 1
    /// or rigid bones between mid and tip: the tip's incoming model rotation blended toward `o`
    /// by `w_rot` (0: keep), in the new frame of the tip's parent. `mid_in` and `mid_new` are the
    /// mid bone's incoming and new model rotations (up to positive factors).
    #[cold]
    #[inline(never)]
    fn blended_tip(
        &self,
        pose: &Pose,
        o: Quat,
        w_rot: f32,
        mid_in: Quat,
        mid_new: Quat,
        q_mt: Option<Quat>,
    ) -> Quat {
        let then_mt = |q: Quat| q_mt.map_or(q, |r| q * r);
        let tip_model = if w_rot >= 1.0 {
            o
        } else {
            let tip_in = then_mt(mid_in) * pose.rotations[self.tip];
            if w_rot > 0.0 {
                tip_in.normalize().slerp(o.normalize(), w_rot)
            } else {
                tip_in
            }
        };
        flush_subnormal((then_mt(mid_new).conjugate() * tip_model).normalize())
    }

    /// The report when nothing is blended in (all weights zero): the incoming pose stands.
    #[cold]
    fn unchanged_report(
        incoming: &Incoming,
        ua: Vec3A,
        ub: Vec3A,
        lengths: [f32; 2],
    ) -> LimbReport {
        LimbReport {
            reachable: true,
            position_error: 0.0,
            flex_angle: ua.dot(ub).clamp(-1.0, 1.0).acos(),
            flex_limited: false,
            pole_fallback: false,
            target_distance: (incoming.tip() - incoming.p_root).length(),
            lengths,
        }
    }

    /// The soft-reach distance: past `(1 − soft_reach)` of the maximum reach the distance eases
    /// out exponentially toward that maximum.
    #[cold]
    fn soft_distance(&self, dist: f32, l1: f32, l2: f32) -> f32 {
        let d_max = reach(l1, l2, self.cos_flex_min);
        let band = self.settings.soft_reach * d_max;
        let start = d_max - band;
        if dist > start {
            d_max - band * (-(dist - start) / band).exp()
        } else {
            dist
        }
    }

    /// The rest bend plane carried by the root's parent, normal to `dir` (the swivel reference).
    fn rest_reference(&self, q_parent: Quat, dir: Vec3A) -> Option<Vec3A> {
        normal_part(q_parent * (self.root_rest_rotation * self.bend_axis), dir)
    }

    /// The bend-plane normal when the pole is missing, degenerate or partly weighted: the
    /// incoming plane (else the rest plane) turned toward the pole's by `w_pole`.
    #[cold]
    fn fallback_normal(
        &self,
        incoming: &Incoming,
        h: Vec3A,
        dir: Vec3A,
        n_pole: Option<Vec3A>,
        w_pole: f32,
    ) -> Vec3A {
        let nf = normal_part(incoming.root_rot() * h, dir)
            .or_else(|| self.rest_reference(incoming.q_parent, dir))
            .unwrap_or_else(|| dir.any_orthonormal_vector());
        match n_pole {
            Some(np) if w_pole > 0.0 => {
                let angle = nf.cross(np).dot(dir).atan2(nf.dot(np));
                Quat::from_axis_angle(dir.into(), angle * w_pole) * nf
            }
            _ => nf,
        }
    }
}

/// The goal's own error if it has a non-finite value, else `error`.
#[cold]
#[inline(never)]
fn goal_error_or(goal: &LimbGoal, error: AnalyticError) -> AnalyticError {
    goal.validate().err().unwrap_or(error)
}

/// The incoming limb in model space, for the rare paths.
struct Incoming {
    /// The root joint.
    p_root: Vec3A,
    /// The root's parent's model rotation.
    q_parent: Quat,
    /// The root bone's local rotation.
    q_root: Quat,
    /// Root → mid, root frame.
    u1: Vec3A,
    /// Mid → tip, root frame.
    b_cur: Vec3A,
}

impl Incoming {
    /// The root bone's model rotation.
    fn root_rot(&self) -> Quat {
        self.q_parent * self.q_root
    }

    /// The incoming tip position.
    fn tip(&self) -> Vec3A {
        self.p_root + self.root_rot() * (self.u1 + self.b_cur)
    }

    /// The direction to aim along when the target is at the root: toward the incoming tip.
    #[cold]
    fn direction_at_root(&self, ua: Vec3A) -> Vec3A {
        (self.tip() - self.p_root)
            .try_normalize()
            .unwrap_or_else(|| (self.root_rot() * ua).normalize())
    }
}

/// The mid joint's turn from `from` to `to` when it is near π (`cos < −0.99`), where the
/// half-vector arc loses precision: the frame rotation about the bend axis `h`.
#[cold]
fn half_turn(from: Vec3A, to: Vec3A, h: Vec3A) -> Quat {
    match normal_part(h, from) {
        Some(hc) => frame_rotation(from, hc, from.cross(hc), to, h, to.cross(h)),
        None => arc(from, to),
    }
}

/// `x` clamped to `[lo, hi]` (`lo ≤ hi`; NaN gives `lo`). The comparisons match the operand
/// order of the SSE `maxss`/`minss` instructions exactly, NaN included, so the compiler can use
/// them: `f32::clamp` checks its bounds, `f32::max`/`min` filter NaN, and the earlier form that
/// passed NaN through has no single-instruction equivalent, so it compiled to a compare and
/// branch on whether `x` was in range, which mispredicts for targets that cross the limb's
/// reach. (The compiler may still choose a branch, e.g. when a bound is loaded from memory.)
#[inline(always)]
fn clamp_fast(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x > lo { x } else { lo };
    if x < hi { x } else { hi }
}

/// `acos(x)` for `x` in `[−1, 1]` to within 5e-7 rad, without a libm call:
/// `acos(|x|) = √(1 − |x|) · P(|x|)` with the degree-7 polynomial of Abramowitz & Stegun 4.4.46
/// (error below 2e-8 in exact arithmetic), and `acos(−x) = π − acos(x)`.
// (The coefficients as published, rounded to f32 by the compiler.)
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn acos_fast(x: f32) -> f32 {
    let a = x.abs();
    // Estrin's scheme: three levels of multiply-adds instead of Horner's seven in a row (the
    // report's flex angle was one of the solve's longest dependency chains).
    let (a2, a4) = (a * a, (a * a) * (a * a));
    let p01 = 1.570_796_305_0 - 0.214_598_801_6 * a;
    let p23 = 0.088_978_987_4 - 0.050_174_304_6 * a;
    let p45 = 0.030_891_881_0 - 0.017_088_125_6 * a;
    let p67 = 0.006_670_090_1 - 0.001_262_491_1_f32 * a;
    let p = (p01 + a2 * p23) + a4 * (p45 + a2 * p67);
    let r = (1.0 - a).sqrt() * p;
    if x < 0.0 { PI - r } else { r }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Mat3;
    use proptest::strategy::Strategy as _;

    /// Angle of the rotation between two quaternions (either sign), accurate near zero.
    fn angle_between(a: Quat, b: Quat) -> f32 {
        let r = a.normalize() * b.normalize().conjugate();
        2.0 * r.xyz().length().atan2(r.w.abs())
    }

    /// Deterministic rotations covering all angles, with extra weight near a half turn.
    fn rotations() -> impl Iterator<Item = Quat> {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..20_000).map(move |i| {
            let axis = Vec3::new(next() - 0.5, next() - 0.5, next() - 0.5).normalize();
            let angle = match i % 4 {
                0 => PI * next(),
                1 => PI - 1e-3 * next(),
                2 => PI - 1e-6 * next(),
                _ => PI,
            };
            Quat::from_axis_angle(axis, angle) * Quat::from_rotation_x(next())
        })
    }

    #[test]
    fn frame_rotation_matches_the_matrix_route_at_every_angle() {
        let frame = Quat::from_scaled_axis(Vec3::new(0.3, -1.2, 2.0));
        let (a1, a2) = (frame * Vec3A::X, frame * Vec3A::Y);
        let (mut worst, mut worst_matrix) = (0.0_f32, 0.0_f32);
        for r in rotations() {
            let (b1, b2) = (r * a1, r * a2);
            let q = frame_rotation(a1, a2, a1.cross(a2), b1, b2, b1.cross(b2));
            assert!(q.is_finite() && q.length() > 0.1, "{q:?}");
            let matrix = Quat::from_mat3(
                &(Mat3::from_cols(b1.into(), b2.into(), b1.cross(b2).into())
                    * Mat3::from_cols(a1.into(), a2.into(), a1.cross(a2).into()).transpose()),
            );
            worst = worst.max(angle_between(q, r));
            worst_matrix = worst_matrix.max(angle_between(matrix, r));
        }
        // Within a few f32 roundings of the truth, like the matrix route (which is limited by
        // the rounding of b₁, b₂ too).
        assert!(worst < 5e-6, "{worst} (matrix route: {worst_matrix})");
    }

    /// An arm along +X with a bent rest elbow, and its solver.
    fn arm() -> (Skeleton, TwoBoneIk) {
        use crate::skeleton::Bone;
        let skeleton = Skeleton::try_new(vec![
            Bone::new("shoulder", None, BoneTransform::IDENTITY),
            Bone::new(
                "elbow",
                Some(0),
                BoneTransform::from_translation_rotation(
                    Vec3::X * 0.3,
                    Quat::from_rotation_y(-0.2),
                ),
            ),
            Bone::new(
                "wrist",
                Some(1),
                BoneTransform::from_translation(Vec3::X * 0.25),
            ),
        ])
        .unwrap();
        let ik = TwoBoneIk::try_new(&skeleton, 0, 1, 2).unwrap();
        (skeleton, ik)
    }

    /// The pole normal is taken from the un-normalised root→target vector; a far target and a
    /// far pole (|v|² |d|² past f32's range, where that product would overflow) still give the
    /// plane a nearby pole on the same ray gives, and so does a target at the root.
    #[test]
    fn far_pole_and_target_give_the_same_plane_as_near_ones() {
        let (skeleton, ik) = arm();
        let parent = BoneTransform::IDENTITY;
        let pole_dir = Vec3::new(0.2, 1.0, -0.3).normalize();
        for target in [
            Vec3::new(4e9, 1e9, -2e9),
            Vec3::new(0.3, 0.2, 0.1),
            Vec3::ZERO,
        ] {
            let mut near = skeleton.rest_pose();
            let mut far = skeleton.rest_pose();
            let r_near = ik
                .solve_with_parent(
                    &skeleton,
                    &mut near,
                    &LimbGoal::new(target).with_pole(pole_dir),
                    &parent,
                )
                .unwrap();
            let r_far = ik
                .solve_with_parent(
                    &skeleton,
                    &mut far,
                    &LimbGoal::new(target).with_pole(pole_dir * 4e10),
                    &parent,
                )
                .unwrap();
            assert!(!r_near.pole_fallback && !r_far.pole_fallback, "{target}");
            for bone in 0..3 {
                let angle = angle_between(near.rotations[bone], far.rotations[bone]);
                assert!(angle < 1e-4, "{target} bone {bone}: {angle}");
            }
        }
    }

    /// The goal is checked with one vector test and named only on failure: every kind of bad
    /// value is still a `NonFiniteGoal` that leaves the pose unchanged, on every path (full and
    /// zero weights, with and without an orientation, and ahead of a degenerate pose's error).
    #[test]
    fn bad_goals_are_rejected_on_every_path() {
        let (skeleton, ik) = arm();
        let ok = Vec3::new(0.3, 0.2, 0.1);
        let nan = f32::NAN;
        let inf = f32::INFINITY;
        let mut bad = vec![
            LimbGoal::new(Vec3::new(inf, 0.0, 0.0)),
            LimbGoal::new(Vec3::new(0.0, nan, 0.0)).with_pole(Vec3::Z),
            LimbGoal::new(ok).with_pole(Vec3::new(0.0, 0.0, -inf)),
            LimbGoal::new(ok).with_swivel(inf),
            LimbGoal::new(ok).with_orientation(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
            LimbGoal::new(ok).with_orientation(Quat::from_xyzw(1e-7, 0.0, 0.0, 0.0)),
            LimbGoal::new(ok).with_orientation(Quat::from_xyzw(0.0, inf, 0.0, 1.0)),
            LimbGoal::new(ok).with_weights(1.0, nan, 1.0),
            LimbGoal::new(ok).with_weights(1.0, 1.0, nan),
            LimbGoal::new(ok).with_weights(1.0, -inf, 1.0),
            LimbGoal::new(ok)
                .with_orientation(Quat::from_xyzw(nan, 0.0, 0.0, 1.0))
                .with_weights(1.0, 0.0, 1.0),
        ];
        // All weights zero: the early exit must validate too.
        bad.extend(
            [
                LimbGoal::new(Vec3::splat(nan)),
                LimbGoal::new(ok).with_pole(Vec3::splat(nan)),
                LimbGoal::new(ok).with_orientation(Quat::from_xyzw(nan, 0.0, 0.0, 1.0)),
            ]
            .map(|g| g.with_weights(0.0, 0.0, 0.0)),
        );
        let mut pose = skeleton.rest_pose();
        pose.rotations[0] = Quat::from_rotation_z(0.3);
        let before = pose.clone();
        for goal in &bad {
            let e = ik.solve_with_parent(&skeleton, &mut pose, goal, &BoneTransform::IDENTITY);
            assert!(
                matches!(e, Err(AnalyticError::NonFiniteGoal(_))),
                "{goal:?}: {e:?}"
            );
            assert_eq!(format!("{pose:?}"), format!("{before:?}"));
            // A bad goal is named ahead of a degenerate pose or parent.
            let parent = BoneTransform::from_translation(Vec3::splat(nan));
            let e = ik.solve_with_parent(&skeleton, &mut pose, goal, &parent);
            assert!(
                matches!(e, Err(AnalyticError::NonFiniteGoal(_))),
                "{goal:?}: {e:?}"
            );
        }
        // A good goal on a degenerate parent is `DegeneratePose`; on a good one it solves.
        let goal = LimbGoal::new(ok).with_pole(Vec3::Z);
        let parent = BoneTransform::from_translation(Vec3::splat(nan));
        let e = ik.solve_with_parent(&skeleton, &mut pose, &goal, &parent);
        assert_eq!(e, Err(AnalyticError::DegeneratePose));
        let report = ik
            .solve_with_parent(&skeleton, &mut pose, &goal, &BoneTransform::IDENTITY)
            .unwrap();
        assert!(
            report.reachable && report.position_error < 1e-5,
            "{report:?}"
        );
    }

    fn rotation() -> impl proptest::strategy::Strategy<Value = Quat> {
        proptest::array::uniform3(-3.0f32..3.0).prop_map(|v| Quat::from_scaled_axis(v.into()))
    }

    proptest::proptest! {
        /// The copy of the solve for limbs without bones between root, mid and tip gives
        /// exactly what the general one (with the rigid-offset walks) gives, on random rigs
        /// (rest rotations, lengths, scales), poses, parents and goals of every kind.
        #[test]
        fn fast_path_matches_general_path(
            rests in proptest::array::uniform4(rotation()),
            lengths in proptest::array::uniform2(0.05f32..2.0),
            scale in 0.5f32..2.0,
            current in proptest::array::uniform3(rotation()),
            parent_rotation in rotation(),
            target in proptest::array::uniform3(-3.0f32..3.0),
            pole in proptest::array::uniform3(-3.0f32..3.0),
            orientation in rotation(),
            kind in 0usize..6,
            weights in proptest::array::uniform3(0.0f32..1.5),
        ) {
            use crate::skeleton::Bone;
            let skeleton = Skeleton::try_new(vec![
                Bone::new("base", None, BoneTransform {
                    scale: Vec3::splat(scale),
                    ..BoneTransform::from_rotation(rests[0])
                }),
                Bone::new("root", Some(0), BoneTransform::from_translation_rotation(Vec3::Y, rests[1])),
                Bone::new(
                    "mid",
                    Some(1),
                    BoneTransform::from_translation_rotation(rests[2] * Vec3::X * lengths[0], rests[3]),
                ),
                Bone::new("tip", Some(2), BoneTransform::from_translation(Vec3::Z * lengths[1])),
            ])
            .unwrap();
            let ik = TwoBoneIk::try_new(&skeleton, 1, 2, 3).unwrap();
            let mut pose = skeleton.rest_pose();
            pose.rotations[1] = current[0];
            pose.rotations[2] = current[1];
            pose.rotations[3] = current[2];
            let parent = BoneTransform {
                rotation: parent_rotation,
                ..skeleton.model_transform(&pose, 0)
            };
            let goal = LimbGoal::new(Vec3::from(target));
            let goal = match kind {
                0 => goal.with_pole(pole.into()),
                1 => goal.with_pole(pole.into()).with_orientation(orientation),
                2 => goal.with_swivel(pole[0]),
                3 => goal.with_orientation(orientation),
                4 => goal.with_pole(pole.into()).with_weights(weights[0], weights[1], weights[2]),
                _ => goal
                    .with_orientation(orientation)
                    .with_weights(weights[0], weights[1], weights[2]),
            };
            let mut general = pose.clone();
            let fast = ik.solve_impl::<false, false>(&skeleton, &mut pose, &goal, &parent);
            let slow = ik.solve_impl::<true, false>(&skeleton, &mut general, &goal, &parent);
            proptest::prop_assert_eq!(fast, slow);
            proptest::prop_assert_eq!(format!("{pose:?}"), format!("{general:?}"));
            // And the public entry point takes the fast path here.
            let mut public = general.clone();
            proptest::prop_assert_eq!(
                ik.solve_with_parent(&skeleton, &mut public, &goal, &parent),
                ik.solve_impl::<false, false>(&skeleton, &mut general, &goal, &parent)
            );
        }
    }

    #[test]
    fn rotate_matches_glam() {
        let v = Vec3A::new(0.3, -2.0, 1.1);
        for r in rotations() {
            assert!(rotate(r, v).distance(r * v) < 1e-5);
        }
    }

    #[test]
    fn acos_fast_is_accurate_over_the_whole_range() {
        let mut worst = 0.0_f32;
        for i in 0..=200_000 {
            let x = i as f32 / 100_000.0 - 1.0;
            worst = worst.max((acos_fast(x) - x.acos()).abs());
        }
        assert!(worst < 5e-7, "worst error {worst}");
        assert_eq!(acos_fast(1.0), 0.0);
        assert!((acos_fast(-1.0) - PI).abs() < 3e-7);
    }

    /// The scaled frames the solve passes (the `aᵢ` times `ka`, the `bᵢ` times `kb`, `k` their
    /// product) give the unit frames' rotation, and the returned squared norm is the result's.
    #[test]
    fn scaled_frames_give_the_unit_frame_rotation() {
        let frame = Quat::from_scaled_axis(Vec3::new(-0.7, 0.4, 1.1));
        let (a1, a2) = (frame * Vec3A::X, frame * Vec3A::Y);
        let a3 = a1.cross(a2);
        for r in rotations() {
            let (b1, b2) = (r * a1, r * a2);
            let b3 = b1.cross(b2);
            let unit = frame_rotation(a1, a2, a3, b1, b2, b3).normalize();
            for (ka, kb) in [(1e-3, 7.0), (0.25, 1.0), (3.0, 1e-2), (40.0, 300.0)] {
                let (q, q2) = frame_rotation_scaled(
                    a1 * ka,
                    a2 * ka,
                    a3 * ka,
                    ka * kb,
                    b1 * kb,
                    b2 * kb,
                    b3 * kb,
                );
                assert!(angle_between(q.normalize(), unit) < 5e-6, "{r:?} {ka} {kb}");
                assert!((q2 / q.length_squared() - 1.0).abs() < 1e-5, "{q2} {q:?}");
            }
        }
    }

    /// A limb held straight toward an out-of-reach target, solve after solve, drives its mid
    /// rotation's off-axis components toward zero; they must not become subnormal numbers
    /// (arithmetic on those is many times slower: the solve took twice as long).
    #[test]
    fn repeated_out_of_reach_solves_leave_no_subnormal_rotations() {
        use crate::skeleton::Bone;
        let r = |x: f32, y: f32, z: f32| Quat::from_scaled_axis(Vec3::new(x, y, z));
        let skeleton = Skeleton::try_new(vec![
            Bone::new(
                "upper",
                None,
                BoneTransform::from_translation_rotation(Vec3::ZERO, r(0.1, 0.2, 0.3)),
            ),
            Bone::new(
                "lower",
                Some(0),
                BoneTransform::from_translation_rotation(Vec3::Y * 0.28, r(0.0, 0.1, 0.15)),
            ),
            Bone::new(
                "hand",
                Some(1),
                BoneTransform::from_translation_rotation(Vec3::Y * 0.25, r(0.0, -0.3, 0.0)),
            ),
        ])
        .unwrap();
        let ik = TwoBoneIk::try_new(&skeleton, 0, 1, 2).unwrap();
        let mut pose = skeleton.rest_pose();
        let goal = LimbGoal::new(Vec3::new(0.9, 0.7, -0.4)).with_pole(Vec3::new(0.0, 0.0, 1.0));
        for i in 0..500 {
            let report = ik
                .solve_with_parent(&skeleton, &mut pose, &goal, &BoneTransform::IDENTITY)
                .unwrap();
            assert!(!report.reachable);
            for q in &pose.rotations {
                assert!(
                    !q.to_array().iter().any(|c| c.is_subnormal()),
                    "solve {i}: {q:?}"
                );
            }
        }
    }

    /// Rotations do not depend on the rig's size: the same limb, targets and poles scaled from
    /// 1e-3 to 1e4 give the unit-size solve's rotations (the solve switches between a scaled
    /// and a unit target frame by size, to keep its products within f32's range).
    #[test]
    fn tiny_and_huge_limbs_solve_like_unit_ones() {
        use crate::skeleton::Bone;
        let build = |s: f32| {
            let skeleton = Skeleton::try_new(vec![
                Bone::new(
                    "shoulder",
                    None,
                    BoneTransform::from_translation(Vec3::Y * s),
                ),
                Bone::new(
                    "elbow",
                    Some(0),
                    BoneTransform::from_translation_rotation(
                        Vec3::X * 0.3 * s,
                        Quat::from_rotation_y(-0.2),
                    ),
                ),
                Bone::new(
                    "wrist",
                    Some(1),
                    BoneTransform::from_translation(Vec3::X * 0.25 * s),
                ),
            ])
            .unwrap();
            let ik = TwoBoneIk::try_new(&skeleton, 0, 1, 2).unwrap();
            (skeleton, ik)
        };
        let goals = [
            (Vec3::new(0.3, 1.2, 0.2), Vec3::new(0.0, 1.0, -1.0), None),
            (
                Vec3::new(-0.1, 0.7, 0.35),
                Vec3::new(1.0, 0.0, 0.0),
                Some(Quat::from_rotation_x(1.0)),
            ),
            (Vec3::new(0.8, 1.5, -0.6), Vec3::new(0.0, 3.0, 0.0), None),
        ];
        let (skeleton, ik) = build(1.0);
        for (target, pole, orientation) in goals {
            let goal = |s: f32| {
                let g = LimbGoal::new(target * s).with_pole(pole * s);
                orientation.map_or(g, |o| g.with_orientation(o))
            };
            let mut unit = skeleton.rest_pose();
            ik.solve(&skeleton, &mut unit, &goal(1.0)).unwrap();
            for s in [1e-3, 1e-2, 1e2, 1e3, 1e4] {
                let (skeleton_s, ik_s) = build(s);
                let mut pose = skeleton_s.rest_pose();
                ik_s.solve(&skeleton_s, &mut pose, &goal(s)).unwrap();
                for (a, b) in pose.rotations.iter().zip(&unit.rotations) {
                    assert!(angle_between(*a, *b) < 2e-5, "scale {s}: {a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn clamp_fast_clamps() {
        assert_eq!(clamp_fast(0.5, -1.0, 1.0), 0.5);
        assert_eq!(clamp_fast(-3.0, -1.0, 1.0), -1.0);
        assert_eq!(clamp_fast(3.0, -1.0, 1.0), 1.0);
        assert_eq!(clamp_fast(f32::INFINITY, 0.0, 2.0), 2.0);
        assert_eq!(clamp_fast(f32::NAN, 0.0, 2.0), 0.0);
    }
}
