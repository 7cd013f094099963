//! The rotation toolkit: rest-relative rotations ("deltas"), signed angle about an axis,
//! swing–twist decomposition, Euler angles in all 12 axis orders, and Euler angles of a bone in a
//! frame built from its *actual* rest direction (the generalised arm case of the reference article).
//!
//! # Conventions
//!
//! - Quaternions are glam's: `a * b` applies `b` first, then `a` (like matrices acting on column
//!   vectors). A bone's *local* rotation is relative to its parent.
//! - **Rest delta.** A joint's motion is expressed relative to its rest (bind) rotation:
//!   `local = rest * delta`, so `delta = rest⁻¹ * local` ([`rest_delta`], [`from_rest_delta`]).
//!   `delta` acts in the bone's *rest* frame: its axes are the bone's local axes in the bind
//!   pose, and `delta = IDENTITY` is the bind pose whatever the rig's bind rotations are. Joint
//!   limits ([`crate::limits`]) and the Euler angles below are all taken on deltas.
//! - **Swing–twist.** `q = swing * twist`: the twist (about the given axis, in the frame `q` acts
//!   in) is applied first, then the swing tilts the axis. The swing's rotation axis is
//!   perpendicular to the twist axis.
//! - **Euler angles** are *intrinsic*: `EulerOrder::ZXY` with angles `[a, b, c]` is
//!   `R_z(a) * R_x(b) * R_y(c)` — rotate about Z, then about the *new* X, then the newest Y. This
//!   equals the *extrinsic* (fixed-axis) sequence in reverse order: Y by `c`, then X by `b`,
//!   then Z by `a`, about the fixed axes. It is glam's intrinsic `EulerRot` with the same name.
//! - Angles are radians; angles that wrap are reported in `(−π, π]`.
//!
//! Degenerate input never produces NaN: a zero (or non-finite) quaternion is treated as the
//! identity, a zero (or non-finite) axis or vector gives the identity rotation / a zero angle.
//! (The two tiny helpers [`wrap_angle`] and [`normalize_hemisphere`] pass non-finite values
//! through unchanged.)
//!
//! # The arm example (reference article: a right arm holding a pen)
//!
//! The article's upper arm points along its local +Y; the shoulder is `R_z(θz) R_x(θx) R_y(θy)`
//! (order ZXY) and the forearm `R_y(·) R_x(φx) R_y(φy)` (order YXY). θz, θx follow from the
//! elbow position and (θy, φx) from the wrist position. [`BoneFrame`] generalises this to any
//! rest bone axis: the bone's rest direction plays the role of +Y, a chosen forward axis the
//! role of +Z, and [`BoneFrame::aim`] turns a child position into the delta and its Euler angles.

use core::f32::consts::{FRAC_PI_2, PI, TAU};

use glam::{Mat3, Quat, Vec3};
use thiserror::Error;

use crate::skeleton::Skeleton;

/// Errors from building a [`BoneFrame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RotationError {
    /// The bone direction is zero or not finite.
    #[error("the bone direction is zero or not finite")]
    DegenerateDirection,
    /// The forward hint is zero, not finite, or (nearly) parallel to the bone direction.
    #[error("the forward hint is zero, not finite or parallel to the bone direction")]
    DegenerateForwardHint,
    /// The skeleton gives no rest direction from `bone` toward `toward` (out of range, not a
    /// descendant, or zero length).
    #[error("bone {bone} has no rest direction toward bone {toward}")]
    NoRestDirection {
        /// The bone index.
        bone: usize,
        /// The descendant index it should point toward.
        toward: usize,
    },
}

/// Middle Euler angles within this many radians of a gimbal-lock value (±π/2 for Tait–Bryan
/// orders, 0 or π for proper Euler orders) are treated as locked by [`euler_decompose`].
///
/// Snapping to the lock convention moves the reconstructed rotation by at most about twice this
/// angle; away from it the decomposition is exact to float precision.
pub const GIMBAL_LOCK_TOLERANCE: f32 = 1e-5;

/// Below this norm (relative to the unit quaternion) the twist part of a rotation is
/// considered absent: the rotation is a half-turn swing and its twist is the identity.
pub const TWIST_EPSILON: f32 = 1e-6;

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// `q` normalised, or `None` when it is zero or not finite.
#[inline]
fn try_normalize_quat(q: Quat) -> Option<Quat> {
    let len_sq = q.length_squared();
    (len_sq.is_finite() && len_sq > 1e-30).then(|| q * len_sq.sqrt().recip())
}

#[inline]
fn normalize_or_identity(q: Quat) -> Quat {
    try_normalize_quat(q).unwrap_or(Quat::IDENTITY)
}

/// Wraps an angle to `(−π, π]`. Non-finite input is returned unchanged (NaN stays NaN).
#[inline]
#[must_use]
pub fn wrap_angle(angle: f32) -> f32 {
    if angle > -PI && angle <= PI {
        return angle;
    }
    let r = angle.rem_euclid(TAU);
    if r > PI { r - TAU } else { r }
}

/// The angle (radians, in `[0, π]`) of the rotation taking `a` to `b`, treating `q` and `−q`
/// as the same rotation. Accurate for small angles (unlike `2·acos(|a·b|)`).
#[must_use]
pub fn rotation_angle_between(a: Quat, b: Quat) -> f32 {
    let d = normalize_or_identity(a).inverse() * normalize_or_identity(b);
    2.0 * d.xyz().length().atan2(d.w.abs())
}

/// `q` or `−q`, whichever lies in the same hemisphere as `reference` (non-negative dot product).
/// Only the sign changes: `q` is not normalised, and a non-finite `q` is returned as is.
///
/// Both represent the same rotation; use this before blending or comparing quaternion
/// components so a sequence of rotations does not flip sign.
#[inline]
#[must_use]
pub fn normalize_hemisphere(q: Quat, reference: Quat) -> Quat {
    if q.dot(reference) < 0.0 { -q } else { q }
}

// ---------------------------------------------------------------------------------------------
// Rest deltas
// ---------------------------------------------------------------------------------------------

/// The rotation of a joint relative to its rest rotation: `rest⁻¹ * local`.
///
/// The result acts in the bone's rest frame, so `local = rest * delta` ([`from_rest_delta`]);
/// the identity means "in the bind pose". Motion recorded as deltas replays unchanged on a rig
/// whose bind rotations differ. Inputs are normalised (zero / non-finite → identity).
#[inline]
#[must_use]
pub fn rest_delta(rest: Quat, local: Quat) -> Quat {
    (normalize_or_identity(rest).inverse() * normalize_or_identity(local)).normalize()
}

/// The local rotation for a rest-relative `delta`: `rest * delta` (inverse of [`rest_delta`]).
#[inline]
#[must_use]
pub fn from_rest_delta(rest: Quat, delta: Quat) -> Quat {
    (normalize_or_identity(rest) * normalize_or_identity(delta)).normalize()
}

// ---------------------------------------------------------------------------------------------
// Angle about an axis, swing–twist
// ---------------------------------------------------------------------------------------------

/// The twist quaternion's `(w, s)` where `s` is the component along the unit `axis`, or `None`
/// when the twist part vanishes (a half-turn swing).
#[inline]
fn twist_components(q: Quat, axis: Vec3) -> Option<(f32, f32)> {
    let s = q.xyz().dot(axis);
    let norm = s.hypot(q.w);
    (norm > TWIST_EPSILON).then_some((q.w, s))
}

/// The signed angle (radians, in `(−π, π]`) of `q` about `axis`: the twist angle of the
/// swing–twist decomposition of `q` about `axis` (see [`swing_twist`]).
///
/// For a rotation purely about `axis` this is its angle, signed by the right-hand rule. `q`
/// and `−q` give the same angle; a half turn gives `π` (never `−π`). `axis` need not be unit;
/// a zero or non-finite axis gives 0, as does a rotation with no twist part (a half-turn about
/// an axis perpendicular to `axis`).
///
/// This is the reference article's "angle from the home-quaternion delta", corrected: it
/// projects onto the axis instead of dividing by the first non-zero axis component (whose
/// `find` also skips a legitimate zero half-angle), wraps without the misspelt variable, and
/// maps −π to π.
#[must_use]
pub fn angle_about_axis(q: Quat, axis: Vec3) -> f32 {
    let (Some(axis), Some(q)) = (axis.try_normalize(), try_normalize_quat(q)) else {
        return 0.0;
    };
    twist_components(q, axis).map_or(0.0, |(w, s)| twist_angle_of(w, s))
}

/// The twist angle from [`twist_components`] `(w, s)`, in `(−π, π]`.
fn twist_angle_of(w: f32, s: f32) -> f32 {
    // Pick the w ≥ 0 representative so q and −q give bit-identical results; the angle is then
    // in [−π, π] and −π is reported as π.
    let (w, s) = if w < 0.0 { (-w, -s) } else { (w, s) };
    let angle = 2.0 * s.atan2(w);
    if angle <= -PI { PI } else { angle }
}

/// The twist rotation (`w ≥ 0`) about the unit `axis` from [`twist_components`] `(w, s)`.
fn twist_of(axis: Vec3, w: f32, s: f32) -> Quat {
    let sign = if w < 0.0 { -1.0 } else { 1.0 };
    let inv_norm = sign / s.hypot(w);
    let v = axis * (s * inv_norm);
    Quat::from_xyzw(v.x, v.y, v.z, w * inv_norm)
}

/// The twist angle of `q` about `axis`: the same as [`angle_about_axis`], named for use next to
/// [`swing_vector`] in joint-limit code.
#[inline]
#[must_use]
pub fn twist_angle(q: Quat, axis: Vec3) -> f32 {
    angle_about_axis(q, axis)
}

/// Splits `q` into `(swing, twist)` with `q = swing * twist` (twist first).
///
/// `twist` is a rotation about `axis` (normalised here) with `w ≥ 0`; `swing` rotates about an
/// axis perpendicular to `axis`. The product reproduces the normalised `q` exactly (as a
/// quaternion, sign included) up to rounding. When the twist part vanishes (a half-turn swing,
/// where the twist is undefined) the twist is the identity and `swing = q`. A zero or non-finite
/// `axis` gives `(q, IDENTITY)`; a zero or non-finite `q` gives `(IDENTITY, IDENTITY)`.
#[must_use]
pub fn swing_twist(q: Quat, axis: Vec3) -> (Quat, Quat) {
    let Some(q) = try_normalize_quat(q) else {
        return (Quat::IDENTITY, Quat::IDENTITY);
    };
    let Some(axis) = axis.try_normalize() else {
        return (q, Quat::IDENTITY);
    };
    let Some((w, s)) = twist_components(q, axis) else {
        return (q, Quat::IDENTITY);
    };
    let twist = twist_of(axis, w, s);
    (q * twist.conjugate(), twist)
}

/// Recomposes a swing and a twist: `swing * twist` (inverse of [`swing_twist`]).
#[inline]
#[must_use]
pub fn from_swing_twist(swing: Quat, twist: Quat) -> Quat {
    swing * twist
}

/// The swing of `q` about `axis` (see [`swing_twist`]) as a rotation vector (axis × angle,
/// angle in `[0, π]`). It is perpendicular to `axis`, which makes it the natural coordinates for
/// an elliptic swing cone.
#[must_use]
pub fn swing_vector(q: Quat, axis: Vec3) -> Vec3 {
    to_rotation_vector(swing_twist(q, axis).0)
}

/// `(swing_vector(q, axis), twist_angle(q, axis))` bit for bit, normalising `q` and `axis` and
/// splitting off the twist once instead of twice (the joint-limit clamps call it on every
/// joint they check).
#[must_use]
pub(crate) fn swing_vector_and_twist(q: Quat, axis: Vec3) -> (Vec3, f32) {
    let Some(q) = try_normalize_quat(q) else {
        return (Vec3::ZERO, 0.0);
    };
    let Some(axis) = axis.try_normalize() else {
        return (to_rotation_vector(q), 0.0);
    };
    let Some((w, s)) = twist_components(q, axis) else {
        return (to_rotation_vector(q), 0.0);
    };
    let swing = to_rotation_vector(q * twist_of(axis, w, s).conjugate());
    (swing, twist_angle_of(w, s))
}

/// The rotation with swing rotation vector `swing` and twist angle `twist` about `axis`:
/// `from_rotation_vector(swing) * R_axis(twist)`. Inverse of ([`swing_vector`],
/// [`twist_angle`]) when `swing ⊥ axis`. A zero or non-finite `axis` drops the twist; a
/// non-finite `twist` counts as 0.
#[must_use]
pub fn from_swing_vector_twist(swing: Vec3, axis: Vec3, twist: f32) -> Quat {
    let twist_q = match axis.try_normalize() {
        Some(a) if twist.is_finite() => Quat::from_axis_angle(a, twist),
        _ => Quat::IDENTITY,
    };
    from_rotation_vector(swing) * twist_q
}

// ---------------------------------------------------------------------------------------------
// Rotation vectors, shortest arc
// ---------------------------------------------------------------------------------------------

/// `q` as a rotation vector (unit axis × angle), with the angle in `[0, π]` (`q` and `−q` give
/// the same vector except at exactly π, where either direction is correct). Accurate for tiny
/// angles; a zero or non-finite `q` gives zero.
#[must_use]
pub fn to_rotation_vector(q: Quat) -> Vec3 {
    let Some(q) = try_normalize_quat(q) else {
        return Vec3::ZERO;
    };
    let q = if q.w < 0.0 { -q } else { q };
    let v = q.xyz();
    let s = v.length();
    if s > 1e-6 {
        v * (2.0 * s.atan2(q.w) / s)
    } else {
        // atan2(s, w)/s → 1/w as s → 0 (w ≈ 1 here).
        v * (2.0 / q.w)
    }
}

/// The rotation for a rotation vector (unit axis × angle, radians): the inverse of
/// [`to_rotation_vector`]. Accurate for tiny vectors; a zero or non-finite vector gives the
/// identity. A vector so long that its squared length overflows f32 (|v| ≳ 1.8e19) is measured
/// in f64 and its angle reduced modulo 2π, so the result is always a finite unit quaternion.
#[must_use]
pub fn from_rotation_vector(v: Vec3) -> Quat {
    if !v.is_finite() {
        return Quat::IDENTITY;
    }
    let angle_sq = v.length_squared();
    if !angle_sq.is_finite() {
        return from_huge_rotation_vector(v);
    }
    let angle = angle_sq.sqrt();
    let half = 0.5 * angle;
    // sin(θ/2)/θ, by its series below 1e-3 (error < θ⁴/3840).
    let k = if angle < 1e-3 {
        0.5 - angle * angle / 48.0
    } else {
        half.sin() / angle
    };
    Quat::from_xyzw(v.x * k, v.y * k, v.z * k, half.cos())
}

/// [`from_rotation_vector`] for a finite vector whose squared length overflows f32: the length
/// in f64 (no overflow for f32 components), the angle reduced modulo 2π.
#[cold]
fn from_huge_rotation_vector(v: Vec3) -> Quat {
    let d = v.as_dvec3();
    let len = d.length();
    let half = 0.5 * len.rem_euclid(core::f64::consts::TAU);
    let axis = (d / len).as_vec3();
    let (s, c) = half.sin_cos();
    (Quat::from_xyzw(
        axis.x * s as f32,
        axis.y * s as f32,
        axis.z * s as f32,
        c as f32,
    ))
    .normalize()
}

/// Shortest-arc rotation between two (normalised here) directions, with `fallback_axis` used
/// for the half turn when they are opposite.
fn shortest_arc_or(from: Vec3, to: Vec3, fallback_axis: impl FnOnce(Vec3) -> Vec3) -> Quat {
    let (Some(from), Some(to)) = (from.try_normalize(), to.try_normalize()) else {
        return Quat::IDENTITY;
    };
    let c = from.cross(to);
    let s = c.length();
    let d = from.dot(to);
    if s < 1e-7 {
        return if d > 0.0 {
            Quat::IDENTITY
        } else {
            Quat::from_axis_angle(fallback_axis(from), PI)
        };
    }
    Quat::from_axis_angle(c / s, s.atan2(d))
}

/// The smallest rotation taking direction `from` to direction `to` (neither needs to be unit).
///
/// Opposite directions give a half turn about a deterministic axis perpendicular to `from`; a
/// zero or non-finite input gives the identity.
#[must_use]
pub fn shortest_arc(from: Vec3, to: Vec3) -> Quat {
    shortest_arc_or(from, to, Vec3::any_orthonormal_vector)
}

// ---------------------------------------------------------------------------------------------
// Euler angles
// ---------------------------------------------------------------------------------------------

/// An Euler axis order. Angles `[a, b, c]` for order `PQR` mean the intrinsic rotation
/// `R_P(a) * R_Q(b) * R_R(c)` (equivalently: extrinsic R by `c`, then Q by `b`, then P by `a`).
///
/// The first six are Tait–Bryan orders (three different axes), the last six proper Euler orders
/// (first axis repeated). The names match glam's intrinsic [`glam::EulerRot`] variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[allow(clippy::upper_case_acronyms)]
pub enum EulerOrder {
    /// `R_x(a) * R_y(b) * R_z(c)` (Tait–Bryan).
    XYZ,
    /// `R_x(a) * R_z(b) * R_y(c)` (Tait–Bryan).
    XZY,
    /// `R_y(a) * R_x(b) * R_z(c)` (Tait–Bryan).
    YXZ,
    /// `R_y(a) * R_z(b) * R_x(c)` (Tait–Bryan).
    YZX,
    /// `R_z(a) * R_x(b) * R_y(c)` (Tait–Bryan).
    ZXY,
    /// `R_z(a) * R_y(b) * R_x(c)` (Tait–Bryan).
    ZYX,
    /// `R_x(a) * R_y(b) * R_x(c)` (proper Euler).
    XYX,
    /// `R_x(a) * R_z(b) * R_x(c)` (proper Euler).
    XZX,
    /// `R_y(a) * R_x(b) * R_y(c)` (proper Euler).
    YXY,
    /// `R_y(a) * R_z(b) * R_y(c)` (proper Euler).
    YZY,
    /// `R_z(a) * R_x(b) * R_z(c)` (proper Euler).
    ZXZ,
    /// `R_z(a) * R_y(b) * R_z(c)` (proper Euler).
    ZYZ,
}

impl EulerOrder {
    /// All twelve orders, Tait–Bryan first.
    pub const ALL: [Self; 12] = [
        Self::XYZ,
        Self::XZY,
        Self::YXZ,
        Self::YZX,
        Self::ZXY,
        Self::ZYX,
        Self::XYX,
        Self::XZX,
        Self::YXY,
        Self::YZY,
        Self::ZXZ,
        Self::ZYZ,
    ];

    /// The three rotation axes in order, as indices (0 = X, 1 = Y, 2 = Z).
    #[must_use]
    pub const fn axis_indices(self) -> [usize; 3] {
        match self {
            Self::XYZ => [0, 1, 2],
            Self::XZY => [0, 2, 1],
            Self::YXZ => [1, 0, 2],
            Self::YZX => [1, 2, 0],
            Self::ZXY => [2, 0, 1],
            Self::ZYX => [2, 1, 0],
            Self::XYX => [0, 1, 0],
            Self::XZX => [0, 2, 0],
            Self::YXY => [1, 0, 1],
            Self::YZY => [1, 2, 1],
            Self::ZXZ => [2, 0, 2],
            Self::ZYZ => [2, 1, 2],
        }
    }

    /// The three rotation axes in order, as unit vectors.
    #[must_use]
    pub fn axes(self) -> [Vec3; 3] {
        self.axis_indices().map(unit_axis)
    }

    /// `true` for the six proper Euler orders (first and last axis equal), whose middle angle is
    /// in `[0, π]` and locks at 0 and π; `false` for Tait–Bryan orders, whose middle angle is in
    /// `[−π/2, π/2]` and locks at ±π/2.
    #[must_use]
    pub const fn is_proper(self) -> bool {
        let [i, _, k] = self.axis_indices();
        i == k
    }
}

impl From<EulerOrder> for glam::EulerRot {
    fn from(order: EulerOrder) -> Self {
        match order {
            EulerOrder::XYZ => Self::XYZ,
            EulerOrder::XZY => Self::XZY,
            EulerOrder::YXZ => Self::YXZ,
            EulerOrder::YZX => Self::YZX,
            EulerOrder::ZXY => Self::ZXY,
            EulerOrder::ZYX => Self::ZYX,
            EulerOrder::XYX => Self::XYX,
            EulerOrder::XZX => Self::XZX,
            EulerOrder::YXY => Self::YXY,
            EulerOrder::YZY => Self::YZY,
            EulerOrder::ZXZ => Self::ZXZ,
            EulerOrder::ZYZ => Self::ZYZ,
        }
    }
}

#[inline]
fn unit_axis(i: usize) -> Vec3 {
    match i {
        0 => Vec3::X,
        1 => Vec3::Y,
        _ => Vec3::Z,
    }
}

/// The rotation for Euler `angles` `[a, b, c]` in `order`: `R_first(a) * R_second(b) *
/// R_third(c)` (intrinsic; equal to the extrinsic sequence in reverse order). Non-finite angles
/// count as 0.
#[must_use]
pub fn euler_compose(order: EulerOrder, angles: [f32; 3]) -> Quat {
    let axes = order.axes();
    let r = |k: usize| {
        let a = if angles[k].is_finite() {
            angles[k]
        } else {
            0.0
        };
        Quat::from_axis_angle(axes[k], a)
    };
    r(0) * r(1) * r(2)
}

/// Proper Euler decomposition `q = R_i(a) R_j(b) R_i(c)`; `k` is the remaining axis and `eps`
/// the sign of the permutation `(i, j, k)`.
///
/// With half angles p = (a+c)/2, m = (a−c)/2 and β = b/2 the quaternion is
/// `w = cos β cos p`, `q_i = cos β sin p`, `q_j = sin β cos m`, `eps·q_k = sin β sin m`.
fn decompose_proper(q: Quat, i: usize, j: usize, k: usize, eps: f32) -> [f32; 3] {
    let v = q.xyz().to_array();
    let (w, qi, qj, qk) = (q.w, v[i], v[j], eps * v[k]);
    let b = 2.0 * qj.hypot(qk).atan2(w.hypot(qi));
    let p = qi.atan2(w);
    let m = qk.atan2(qj);
    if b < GIMBAL_LOCK_TOLERANCE {
        // R_i(a) R_j(0) R_i(c) = R_i(a + c): all of it in the first angle.
        [wrap_angle(2.0 * p), b, 0.0]
    } else if b > PI - GIMBAL_LOCK_TOLERANCE {
        // R_i(a) R_j(π) R_i(c) = R_i(a − c) R_j(π).
        [wrap_angle(2.0 * m), b, 0.0]
    } else {
        [wrap_angle(p + m), b, wrap_angle(p - m)]
    }
}

/// Euler angles `[a, b, c]` of `q` in `order`, so that `euler_compose(order, angles)` is `q`
/// (up to sign).
///
/// Ranges: first and third angle in `(−π, π]`; middle angle in `[−π/2, π/2]` for Tait–Bryan
/// orders and `[0, π]` for proper Euler orders.
///
/// **Gimbal lock.** When the middle angle is within [`GIMBAL_LOCK_TOLERANCE`] of ±π/2
/// (Tait–Bryan) or of 0 or π (proper), the first and third axes coincide and only their
/// combination is defined: the third angle is then 0 and the combined angle goes into the first.
///
/// Computed from the quaternion's components with `atan2` of half angles (the quaternion form
/// of the rotation-matrix formulas `b = asin(±M_ik)` / `acos(M_ii)`, `a, c = atan2(…)`), which
/// stays accurate near gimbal lock where the matrix entries the first and third angles come from
/// all shrink to zero. Tait–Bryan orders are reduced to proper ones by a quarter turn about the
/// middle axis. A zero or non-finite `q` gives `[0, 0, 0]`.
#[must_use]
pub fn euler_decompose(order: EulerOrder, q: Quat) -> [f32; 3] {
    let Some(q) = try_normalize_quat(q) else {
        return [0.0; 3];
    };
    let [i, j, third] = order.axis_indices();
    let k = 3 - i - j; // the axis not among the first two
    // Sign of the permutation (i, j, k): +1 for cyclic (X→Y→Z) order.
    let eps = if (j + 3 - i) % 3 == 1 { 1.0 } else { -1.0 };
    if third == i {
        return decompose_proper(q, i, j, k, eps);
    }
    // R_k(c) = R_j(−π/2) R_i(−eps·c) R_j(π/2), so
    // q · R_j(π/2) = R_i(a) · R_j(b + π/2) · R_i(−eps·c), a proper i-j-i rotation.
    let quarter = Quat::from_axis_angle(unit_axis(j), FRAC_PI_2);
    let [a, b, c] = decompose_proper(q * quarter, i, j, k, eps);
    // `+ 0.0` turns the −0.0 of a locked third angle into 0.0.
    [a, b - FRAC_PI_2, -eps * c + 0.0]
}

// ---------------------------------------------------------------------------------------------
// Bone frames: Euler angles about a bone's real rest axis
// ---------------------------------------------------------------------------------------------

/// An orthonormal, right-handed frame in a bone's rest local space in which the bone's rest
/// direction plays the role of +Y (the reference article's bone axis), a chosen forward axis the
/// role of +Z and `side = along × forward` the role of +X.
///
/// Euler angles "in the frame" ([`BoneFrame::euler_angles`]) are the angles of the rest delta
/// rewritten in these axes, so `ZXY` means: about `forward`, then `side`, then `along` (twist),
/// whatever local axis the rig's bone actually points along.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoneFrame {
    along: Vec3,
    forward: Vec3,
    side: Vec3,
    /// Maps frame coordinates (X = side, Y = along, Z = forward) to bone-local coordinates.
    basis: Quat,
}

/// The result of [`BoneFrame::aim`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoneAim {
    /// The rest-relative rotation (in the bone's rest frame): the shortest arc from the rest
    /// direction to the requested one, after the requested twist about the rest direction.
    pub delta: Quat,
    /// The local rotation relative to the parent: `rest * delta`.
    pub local: Quat,
    /// Euler angles of `delta` in the frame (see [`BoneFrame::euler_angles`]).
    pub angles: [f32; 3],
}

impl BoneFrame {
    /// A frame from the bone's rest direction `along` (its local axis toward its child; need not
    /// be unit) and a `forward_hint`, made perpendicular to `along` (Gram–Schmidt).
    ///
    /// # Errors
    ///
    /// [`RotationError::DegenerateDirection`] if `along` is zero or not finite,
    /// [`RotationError::DegenerateForwardHint`] if the hint is zero, not finite, or within
    /// about 0.006° of parallel to `along`.
    pub fn try_new(along: Vec3, forward_hint: Vec3) -> Result<Self, RotationError> {
        let along = along
            .try_normalize()
            .ok_or(RotationError::DegenerateDirection)?;
        let hint = forward_hint
            .try_normalize()
            .ok_or(RotationError::DegenerateForwardHint)?;
        let perp = hint - along * along.dot(hint);
        if perp.length_squared() < 1e-8 {
            return Err(RotationError::DegenerateForwardHint);
        }
        // A hint nearly along the bone leaves a short `perp` whose rounding error is large
        // relative to its length: a second Gram–Schmidt pass makes the frame orthonormal to
        // working precision (else an `R_y` in the frame is not a pure twist about `along`).
        let forward = perp.normalize();
        let forward = (forward - along * along.dot(forward)).normalize();
        let side = along.cross(forward).normalize();
        let basis = Quat::from_mat3(&Mat3::from_cols(side, along, forward)).normalize();
        Ok(Self {
            along,
            forward,
            side,
            basis,
        })
    }

    /// A frame from `along` alone, with a deterministic forward axis perpendicular to it. Use
    /// [`BoneFrame::try_new`] when the zero of the first angle should mean something (e.g. the
    /// character's front).
    ///
    /// # Errors
    ///
    /// [`RotationError::DegenerateDirection`] if `along` is zero or not finite.
    pub fn from_along(along: Vec3) -> Result<Self, RotationError> {
        let along = along
            .try_normalize()
            .ok_or(RotationError::DegenerateDirection)?;
        Self::try_new(along, along.any_orthonormal_vector())
    }

    /// The frame of `bone` in `skeleton`: its rest direction toward the descendant `toward`
    /// (from the skeleton's rest offsets, never an assumed axis) and a forward hint in the bone's
    /// local frame.
    ///
    /// # Errors
    ///
    /// [`RotationError::NoRestDirection`] if an index is out of range, `toward` is not a
    /// descendant of `bone`, or the rest offset is zero; otherwise as [`BoneFrame::try_new`].
    pub fn from_rest(
        skeleton: &Skeleton,
        bone: usize,
        toward: usize,
        forward_hint: Vec3,
    ) -> Result<Self, RotationError> {
        let in_range = bone < skeleton.len() && toward < skeleton.len();
        let along = in_range
            .then(|| skeleton.rest_bone_direction(bone, toward))
            .flatten()
            .ok_or(RotationError::NoRestDirection { bone, toward })?;
        Self::try_new(along, forward_hint)
    }

    /// The bone's unit rest direction (frame +Y).
    #[must_use]
    pub fn along(&self) -> Vec3 {
        self.along
    }

    /// The unit forward axis, perpendicular to `along` (frame +Z).
    #[must_use]
    pub fn forward(&self) -> Vec3 {
        self.forward
    }

    /// `along × forward` (frame +X).
    #[must_use]
    pub fn side(&self) -> Vec3 {
        self.side
    }

    /// The rotation taking frame coordinates (X = side, Y = along, Z = forward) to bone-local
    /// coordinates.
    #[must_use]
    pub fn basis(&self) -> Quat {
        self.basis
    }

    /// A rest delta (bone-local) rewritten in frame coordinates: `basis⁻¹ * delta * basis`.
    #[must_use]
    pub fn delta_to_frame(&self, delta: Quat) -> Quat {
        self.basis.conjugate() * normalize_or_identity(delta) * self.basis
    }

    /// A rotation in frame coordinates rewritten as a bone-local rest delta:
    /// `basis * rotation * basis⁻¹`.
    #[must_use]
    pub fn delta_from_frame(&self, rotation: Quat) -> Quat {
        self.basis * normalize_or_identity(rotation) * self.basis.conjugate()
    }

    /// Euler angles of the rest delta `delta` in this frame: [`euler_decompose`] of
    /// [`BoneFrame::delta_to_frame`]. With [`EulerOrder::ZXY`] these are the reference
    /// article's shoulder angles (about forward, then side, then the bone axis).
    #[must_use]
    pub fn euler_angles(&self, order: EulerOrder, delta: Quat) -> [f32; 3] {
        euler_decompose(order, self.delta_to_frame(delta))
    }

    /// The rest delta for Euler `angles` in this frame (inverse of [`BoneFrame::euler_angles`]).
    #[must_use]
    pub fn delta_from_euler(&self, order: EulerOrder, angles: [f32; 3]) -> Quat {
        self.delta_from_frame(euler_compose(order, angles))
    }

    /// Aims the bone: the rest delta that turns the rest direction toward
    /// `child_dir_in_parent` (the direction from this bone's origin to its child, in the
    /// parent's space — e.g. elbow − shoulder rotated into the shoulder's parent), after a twist
    /// of `twist` radians about the bone's own axis; with its local rotation and its Euler angles
    /// in this frame.
    ///
    /// `delta = shortest_arc(along, rest⁻¹ · dir) * R_along(twist)` (a zero direction keeps the
    /// rest direction; a direction opposite to it swings a half turn about `side`; a non-finite
    /// twist counts as 0).
    ///
    /// For orders whose last axis is Y (`ZXY`, `XZY`, `YXY`, `YZY`) the first two angles depend
    /// only on the direction, as in the reference article: the shoulder's `ZXY` `[θz, θx, ·]`
    /// from the elbow position, the forearm's `YXY` `[twist about the bone, flex, ·]` from the
    /// wrist position. The third angle is the twist about the bone that the delta has in that
    /// order.
    ///
    /// ```
    /// use ik_core::glam::{Quat, Vec3};
    /// use ik_core::rotation::{BoneFrame, EulerOrder};
    ///
    /// // An upper arm whose rest axis is local −X (not +Y), with "forward" = local +Z.
    /// let frame = BoneFrame::try_new(-Vec3::X, Vec3::Z)?;
    /// let rest = Quat::from_rotation_y(0.4); // its bind rotation in the parent
    /// // Shoulder angles θz = 0.3 (about forward), θx = −0.5 (about side), no twist:
    /// let delta = frame.delta_from_euler(EulerOrder::ZXY, [0.3, -0.5, 0.0]);
    /// let elbow_dir = rest * delta * frame.along(); // parent space, e.g. from FK or FABRIK
    /// let aim = frame.aim(rest, EulerOrder::ZXY, elbow_dir, 0.0);
    /// assert!((aim.angles[0] - 0.3).abs() < 1e-5 && (aim.angles[1] + 0.5).abs() < 1e-5);
    /// assert!((aim.local * frame.along()).distance(elbow_dir) < 1e-5);
    /// # Ok::<(), ik_core::rotation::RotationError>(())
    /// ```
    #[must_use]
    pub fn aim(
        &self,
        rest: Quat,
        order: EulerOrder,
        child_dir_in_parent: Vec3,
        twist: f32,
    ) -> BoneAim {
        let rest = normalize_or_identity(rest);
        let dir = rest.conjugate() * child_dir_in_parent;
        let side = self.side;
        let swing = shortest_arc_or(self.along, dir, |_| side);
        let twist = if twist.is_finite() { twist } else { 0.0 };
        let delta = (swing * Quat::from_axis_angle(self.along, twist)).normalize();
        BoneAim {
            delta,
            local: (rest * delta).normalize(),
            angles: self.euler_angles(order, delta),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Unit tests (the property tests live in tests/rotation.rs)
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swing_vector_and_twist_is_the_pair_bit_for_bit() {
        let axes = [
            Vec3::X,
            Vec3::new(0.3, -2.0, 0.7),
            Vec3::ZERO,
            Vec3::splat(f32::NAN),
        ];
        let mut quats = vec![
            Quat::IDENTITY,
            Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
            Quat::from_xyzw(1.0, 0.0, 0.0, 0.0),
            Quat::from_xyzw(0.0, 1.0, 0.0, 0.0),
            -Quat::from_axis_angle(Vec3::X, 3.0),
        ];
        let mut state = 0x1234_5678_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state as f32 / u32::MAX as f32) * 2.0 - 1.0
        };
        for _ in 0..500 {
            quats.push(Quat::from_xyzw(next(), next(), next(), next()) * 3.0);
        }
        for q in quats {
            for axis in axes {
                let (swing, twist) = swing_vector_and_twist(q, axis);
                let (s0, t0) = (swing_vector(q, axis), twist_angle(q, axis));
                assert_eq!(
                    (swing.to_array().map(f32::to_bits), twist.to_bits()),
                    (s0.to_array().map(f32::to_bits), t0.to_bits()),
                    "{q} {axis}"
                );
            }
        }
    }

    fn close(a: Quat, b: Quat, tol: f32) -> bool {
        rotation_angle_between(a, b) < tol
    }

    #[test]
    fn wrap_angle_maps_into_half_open_interval() {
        assert_eq!(wrap_angle(PI), PI);
        assert_eq!(wrap_angle(-PI), PI);
        assert!((wrap_angle(3.0 * PI) - PI).abs() < 1e-5);
        assert!((wrap_angle(-0.5 - TAU) + 0.5).abs() < 1e-5);
        assert!((wrap_angle(TAU + 0.25) - 0.25).abs() < 1e-5);
        assert_eq!(wrap_angle(0.0), 0.0);
    }

    #[test]
    fn angle_about_axis_half_turn_is_plus_pi_for_both_signs() {
        // In f32 this is a hair past π, so either end of the interval is right; q and −q
        // must agree bit for bit.
        let q = Quat::from_axis_angle(Vec3::Z, PI);
        let a = angle_about_axis(q, Vec3::Z);
        assert!(wrap_angle(a - PI).abs() < 1e-6);
        assert_eq!(a, angle_about_axis(-q, Vec3::Z));
        // Exactly representable half turns, including a negative-zero w.
        let exact = Quat::from_xyzw(0.0, 0.0, 1.0, 0.0);
        assert_eq!(angle_about_axis(exact, Vec3::Z), PI);
        assert_eq!(angle_about_axis(-exact, Vec3::Z), PI);
    }

    #[test]
    fn angle_about_axis_fixes_the_articles_wrap_bug() {
        // Half-angle 0.9π: the twist 1.8π must wrap to −0.2π (the article's branch for this
        // case reads the misspelt `thata` and throws).
        let q = Quat::from_axis_angle(Vec3::Y, 1.8 * PI);
        assert!((angle_about_axis(q, Vec3::Y) + 0.2 * PI).abs() < 1e-5);
        // A non-unit axis with a zero component (the article divides by the component).
        let q = Quat::from_axis_angle(Vec3::new(0.0, 0.6, 0.8), -0.7);
        assert!((angle_about_axis(q, Vec3::new(0.0, 3.0, 4.0)) + 0.7).abs() < 1e-6);
    }

    #[test]
    fn degenerate_inputs_never_give_nan() {
        let q = Quat::from_rotation_x(0.3);
        assert_eq!(angle_about_axis(q, Vec3::ZERO), 0.0);
        assert_eq!(
            angle_about_axis(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0), Vec3::X),
            0.0
        );
        assert_eq!(angle_about_axis(q, Vec3::NAN), 0.0);
        // A half-turn swing about X has no twist about Y.
        let swing = Quat::from_xyzw(1.0, 0.0, 0.0, 0.0);
        assert_eq!(angle_about_axis(swing, Vec3::Y), 0.0);
        let (s, t) = swing_twist(swing, Vec3::Y);
        assert_eq!(t, Quat::IDENTITY);
        assert!(close(s, swing, 1e-6));
        assert_eq!(
            swing_twist(Quat::NAN, Vec3::Y),
            (Quat::IDENTITY, Quat::IDENTITY)
        );
        assert_eq!(
            to_rotation_vector(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
            Vec3::ZERO
        );
        assert_eq!(from_rotation_vector(Vec3::ZERO), Quat::IDENTITY);
        assert_eq!(from_rotation_vector(Vec3::INFINITY), Quat::IDENTITY);
        assert_eq!(shortest_arc(Vec3::ZERO, Vec3::X), Quat::IDENTITY);
        assert_eq!(shortest_arc(Vec3::X, Vec3::NAN), Quat::IDENTITY);
        assert_eq!(euler_decompose(EulerOrder::XYZ, Quat::NAN), [0.0; 3]);
        assert_eq!(rest_delta(Quat::NAN, Quat::IDENTITY), Quat::IDENTITY);
        let e = euler_compose(EulerOrder::ZXY, [f32::NAN, 0.0, f32::INFINITY]);
        assert_eq!(e, Quat::IDENTITY);
    }

    #[test]
    fn rest_delta_round_trips_and_is_identity_at_rest() {
        let rest = Quat::from_euler(glam::EulerRot::XYZ, 0.4, -1.2, 2.0);
        let local = Quat::from_euler(glam::EulerRot::YXZ, -0.3, 0.8, 0.1);
        let d = rest_delta(rest, local);
        assert!(close(from_rest_delta(rest, d), local, 1e-6));
        assert!(close(rest * d, local, 1e-6));
        assert!(close(rest_delta(rest, rest), Quat::IDENTITY, 1e-6));
        // The delta is about the bone's rest axes: a local twist about the rest-frame axis
        // `a` leaves the bone's rest-frame `a` fixed.
        let a = Vec3::new(1.0, 2.0, -0.5).normalize();
        let twisted = rest * Quat::from_axis_angle(a, 0.9);
        assert!((angle_about_axis(rest_delta(rest, twisted), a) - 0.9).abs() < 1e-5);
    }

    #[test]
    fn swing_twist_recomposes_and_separates() {
        let axis = Vec3::new(0.3, -0.4, 0.8).normalize();
        let q = Quat::from_euler(glam::EulerRot::ZXY, 1.1, -0.6, 2.4);
        let (s, t) = swing_twist(q, axis * 5.0);
        assert!(
            (from_swing_twist(s, t) - q).length() < 1e-6,
            "exact product, sign too"
        );
        assert!(s.xyz().dot(axis).abs() < 1e-6, "swing axis ⊥ twist axis");
        assert!(t.xyz().cross(axis).length() < 1e-6, "twist about the axis");
        assert!(t.w >= 0.0);
        let sv = swing_vector(q, axis);
        let back = from_swing_vector_twist(sv, axis, twist_angle(q, axis));
        assert!(close(back, q, 1e-5));
    }

    #[test]
    fn shortest_arc_handles_opposite_and_equal_vectors() {
        for v in [Vec3::X, -Vec3::Y, Vec3::new(0.2, -0.3, 0.9)] {
            let q = shortest_arc(v * 3.0, -v);
            assert!((q * v.normalize()).distance(-v.normalize()) < 1e-6);
            assert!((rotation_angle_between(Quat::IDENTITY, q) - PI).abs() < 1e-5);
            assert!(close(shortest_arc(v, v * 2.0), Quat::IDENTITY, 1e-6));
        }
        let q = shortest_arc(Vec3::X, Vec3::Y);
        assert!(close(q, Quat::from_rotation_z(FRAC_PI_2), 1e-6));
    }

    #[test]
    fn rotation_vectors_are_accurate_for_tiny_angles() {
        let v = Vec3::new(3e-9, -1e-9, 2e-9);
        let q = from_rotation_vector(v);
        assert!((to_rotation_vector(q) - v).length() < 1e-15);
        let v = Vec3::new(0.0, 0.0, 2.5e-4);
        assert!((to_rotation_vector(Quat::from_rotation_z(2.5e-4)) - v).length() < 1e-10);
        // Negative-w input gives the short way round.
        let q = -Quat::from_rotation_x(0.5);
        assert!((to_rotation_vector(q) - Vec3::new(0.5, 0.0, 0.0)).length() < 1e-6);
        let q = Quat::from_rotation_y(PI - 1e-3);
        assert!((to_rotation_vector(q) - Vec3::Y * (PI - 1e-3)).length() < 1e-5);
    }

    #[test]
    fn normalize_hemisphere_picks_the_near_sign() {
        let r = Quat::from_rotation_x(0.2);
        let q = -Quat::from_rotation_x(0.3);
        let n = normalize_hemisphere(q, r);
        assert!(n.dot(r) > 0.0 && close(n, q, 1e-7));
        assert_eq!(normalize_hemisphere(-q, r), -q);
    }

    #[test]
    fn euler_order_conventions_match_the_docs() {
        // ZXY [a, b, c] is R_z(a) R_x(b) R_y(c), the article's shoulder matrix (11).
        let (a, b, c) = (0.3_f32, -0.7_f32, 1.2_f32);
        let q = euler_compose(EulerOrder::ZXY, [a, b, c]);
        let m = Mat3::from_quat(q);
        // Column 1 (image of +Y): (−sin a cos b, cos a cos b, sin b).
        let col1 = Vec3::new(-a.sin() * b.cos(), a.cos() * b.cos(), b.sin());
        assert!(m.y_axis.distance(col1) < 1e-6);
        // Intrinsic = extrinsic in reverse order.
        let ex = Quat::from_rotation_z(a) * Quat::from_rotation_x(b) * Quat::from_rotation_y(c);
        assert!(close(q, ex, 1e-6));
        assert!(EulerOrder::YXY.is_proper() && !EulerOrder::ZXY.is_proper());
    }

    #[test]
    fn gimbal_lock_output_is_defined() {
        // Tait–Bryan at +π/2: third angle 0, combined angle a + c in the first for XYZ.
        let q = euler_compose(EulerOrder::XYZ, [0.4, FRAC_PI_2, 0.3]);
        let e = euler_decompose(EulerOrder::XYZ, q);
        assert_eq!(e[2], 0.0);
        assert!((e[1] - FRAC_PI_2).abs() < 1e-5);
        assert!((e[0] - 0.7).abs() < 1e-4, "{e:?}");
        assert!(close(euler_compose(EulerOrder::XYZ, e), q, 1e-5));
        // Proper at 0: R_y(a) R_y(c) → first = a + c; at π → first = a − c.
        let q = euler_compose(EulerOrder::YXY, [0.4, 0.0, 0.3]);
        let e = euler_decompose(EulerOrder::YXY, q);
        assert_eq!(e[2], 0.0);
        assert!((e[0] - 0.7).abs() < 1e-5 && e[1].abs() < 1e-5);
        let q = euler_compose(EulerOrder::YXY, [0.4, PI, 0.3]);
        let e = euler_decompose(EulerOrder::YXY, q);
        assert_eq!(e[2], 0.0);
        assert!(
            (e[0] - 0.1).abs() < 1e-5 && (e[1] - PI).abs() < 1e-5,
            "{e:?}"
        );
    }

    #[test]
    fn bone_frame_rejects_degenerate_input() {
        assert_eq!(
            BoneFrame::try_new(Vec3::ZERO, Vec3::Z),
            Err(RotationError::DegenerateDirection)
        );
        assert_eq!(
            BoneFrame::try_new(Vec3::X, Vec3::X * -2.0),
            Err(RotationError::DegenerateForwardHint)
        );
        assert_eq!(
            BoneFrame::try_new(Vec3::X, Vec3::NAN),
            Err(RotationError::DegenerateForwardHint)
        );
        let f = BoneFrame::from_along(Vec3::new(0.0, 0.0, -3.0)).unwrap();
        assert!(f.along().distance(-Vec3::Z) < 1e-6);
        assert!(f.forward().dot(f.along()).abs() < 1e-6);
        assert!(f.side().distance(f.along().cross(f.forward())) < 1e-6);
        // The basis maps frame Y to the bone direction and frame Z to forward.
        assert!((f.basis() * Vec3::Y).distance(f.along()) < 1e-6);
        assert!((f.basis() * Vec3::Z).distance(f.forward()) < 1e-6);
        assert!((f.basis() * Vec3::X).distance(f.side()) < 1e-6);
    }

    #[test]
    fn aim_opposite_direction_swings_about_side() {
        let f = BoneFrame::try_new(Vec3::X, Vec3::Y).unwrap();
        let a = f.aim(Quat::IDENTITY, EulerOrder::ZXY, -Vec3::X, 0.0);
        assert!((a.delta * Vec3::X).distance(-Vec3::X) < 1e-6);
        assert!(a.delta.xyz().cross(f.side()).length() < 1e-6);
        let z = f.aim(Quat::IDENTITY, EulerOrder::ZXY, Vec3::ZERO, f32::NAN);
        assert_eq!(z.delta, Quat::IDENTITY);
    }
}
