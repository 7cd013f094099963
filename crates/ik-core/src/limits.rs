//! Joint limits, always expressed relative to a bone's rest transform: hinge ranges, an
//! elliptic swing cone plus a twist range (swing–twist about the bone's own rest direction),
//! slider ranges, and locks.
//!
//! "Relative to rest" means the limit constrains `delta = rest.rotation⁻¹ * local.rotation`
//! (see [`crate::rotation`]), so a limit means the same thing whatever the rig's bind pose and
//! bone axes are.
//!
//! # Malformed limits and angle ranges
//!
//! [`JointLimit::validate`] says whether a limit is well formed: unit, finite axes (within
//! [`AXIS_UNIT_TOLERANCE`]), bounds with `min ≤ max` (angles within ±[`MAX_ANGLE_BOUND`],
//! slider offsets within ±[`MAX_COORDINATE`]), non-negative finite swing half-angles.
//! Every solver rejects a malformed limit at set-up with that error. [`JointLimit::contains`]
//! and [`JointLimit::clamp`] never panic and never turn finite input into a non-finite value:
//! on a malformed limit (a NaN bound, `min > max`, a zero axis, …) they behave like
//! [`JointLimit::Free`] (everything is inside, nothing is moved).
//!
//! Angles (hinge angles, twist angles) are measured in `(−π, π]`, but a range may reach past
//! ±π: an angle is inside `[min, max]` when it or the same angle plus or minus a whole turn is,
//! so the range `[2, 4]` contains −2.5 (= −2.5 + 2π ≈ 3.78), and a range at least 2π wide
//! contains every angle. Clamping picks the bound nearer around the circle, and its result is
//! always inside by [`JointLimit::contains`].
//!
//! # Cost of a clamp
//!
//! Solvers clamp every joint they move, every step, so a clamp of a rotation that is inside
//! (most of them) must be cheap. Before splitting swing and twist (two arc tangents), a hinge
//! or swing–twist clamp asks whether the rotation is *surely inside*: from the quaternion's
//! components alone it bounds the twist angle `2 atan(s/w)` from both sides and the swing
//! angle from above with the alternating series of `atan` (`x − x³/3 ≤ atan x ≤ x − x³/3 +
//! x⁵/5` for `0 ≤ x ≤ 1`), and tests the bounds against the range and the swing ellipse with
//! a relative margin of 1e-4. A rotation not surely inside (near a bound, or swing or twist
//! past a quarter turn) takes the exact test, so a clamp changes exactly what it changed
//! before, bit for bit (tested on rotations around the boundaries; in the full-body solver's
//! gameplay scenarios 9 clamps in 10 are decided by the fast test, and `FullBodySolver::solve`
//! runs 6 % fewer instructions).

use core::f32::consts::PI;

use glam::{Quat, Vec2, Vec3};
use thiserror::Error;

use crate::rotation;
use crate::skeleton::MAX_COORDINATE;

/// Why a [`JointLimit`] is malformed (see [`JointLimit::validate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LimitError {
    /// A hinge, slider, twist or swing axis is zero, not finite or not of unit length.
    #[error("the limit's {0} axis is zero, not finite or not of unit length")]
    InvalidAxis(&'static str),
    /// A bound is NaN, infinite or out of range (angles beyond ±[`MAX_ANGLE_BOUND`], slider
    /// offsets beyond ±[`MAX_COORDINATE`]), or `min > max`.
    #[error("the limit's {0} range is not finite or has min > max")]
    InvalidRange(&'static str),
    /// The swing axis of a swing–twist limit is not perpendicular to its twist axis.
    #[error("the swing axis is not perpendicular to the twist axis")]
    AxesNotPerpendicular,
    /// A swing half-angle is negative or not finite.
    #[error("a swing half-angle is negative or not finite")]
    InvalidSwingRange,
}

/// How far from 1 the length of a limit's axis may be for [`JointLimit::validate`] (checked on
/// the squared length: `|‖axis‖² − 1| ≤ 2 · AXIS_UNIT_TOLERANCE`).
pub const AXIS_UNIT_TOLERANCE: f32 = 1e-3;

/// The largest magnitude (radians) of a hinge or twist bound [`JointLimit::validate`] accepts:
/// two whole turns. Ranges may reach past ±π (see the module docs), but a bound of 10⁶ rad is
/// a unit mistake, and f32 cannot place such an angle to better than 0.06 rad.
pub const MAX_ANGLE_BOUND: f32 = 4.0 * PI;

/// A limit on one joint, relative to the bone's rest transform.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum JointLimit {
    /// No limit.
    #[default]
    Free,
    /// The rest-relative rotation must be a rotation about `axis` (unit, in the bone's rest
    /// local frame) by an angle in `[min, max]` radians.
    Hinge {
        /// Unit hinge axis in the bone's rest local frame.
        axis: Vec3,
        /// Lowest angle, radians.
        min: f32,
        /// Highest angle, radians.
        max: f32,
    },
    /// Ball joint: swing inside an elliptic cone around the bone's rest direction plus a
    /// twist range about it.
    SwingTwist(SwingTwistLimit),
    /// Translation from the rest translation along `axis` (unit, parent-local) in `[min, max]`.
    Slider {
        /// Unit slide axis in the parent's frame.
        axis: Vec3,
        /// Lowest offset.
        min: f32,
        /// Highest offset.
        max: f32,
    },
    /// The joint keeps its incoming rotation.
    Locked,
}

/// An elliptic swing cone plus a twist range, relative to the rest rotation.
///
/// The rest-relative rotation is split as `swing * twist`, `twist` about `twist_axis`. The swing
/// is a rotation about an axis perpendicular to `twist_axis`; written as a rotation vector `s`,
/// its components along `swing_axis` and along `twist_axis × swing_axis` must lie inside the
/// ellipse with half-axes `swing_half_angles.x` and `swing_half_angles.y`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SwingTwistLimit {
    /// Unit twist axis in the bone's rest local frame — normally the bone's rest direction
    /// (toward its child), derived from the skeleton, never assumed to be +Y.
    pub twist_axis: Vec3,
    /// Unit axis perpendicular to `twist_axis` (bone rest local frame): the first swing axis.
    pub swing_axis: Vec3,
    /// Half-angles (radians) of the swing ellipse about `swing_axis` (x) and about
    /// `twist_axis × swing_axis` (y).
    pub swing_half_angles: Vec2,
    /// Lowest twist angle, radians.
    pub twist_min: f32,
    /// Highest twist angle, radians.
    pub twist_max: f32,
}

/// How far (radians, or model units for sliders) a joint may sit outside its limit and still
/// count as inside: the clamps leave such joints untouched, so a clamped pose clamps to itself
/// bit for bit even though re-decomposing a clamped rotation rounds by about 1e-7.
pub const LIMIT_SLACK: f32 = 1e-5;

impl JointLimit {
    /// Checks that the limit is well formed: unit, finite axes (within
    /// [`AXIS_UNIT_TOLERANCE`]), finite bounds with `min ≤ max`, a swing axis perpendicular to
    /// the twist axis and non-negative finite swing half-angles. Angle ranges wider than 2π are
    /// allowed (they contain every angle). [`JointLimit::Free`] and [`JointLimit::Locked`] are
    /// always valid.
    ///
    /// # Errors
    /// [`LimitError::InvalidAxis`], [`LimitError::InvalidRange`],
    /// [`LimitError::AxesNotPerpendicular`] or [`LimitError::InvalidSwingRange`].
    pub fn validate(&self) -> Result<(), LimitError> {
        match *self {
            Self::Free | Self::Locked => Ok(()),
            Self::Hinge { axis, min, max } => {
                check_axis(axis, "hinge")?;
                check_range(min, max, "hinge")
            }
            Self::Slider { axis, min, max } => {
                check_axis(axis, "slider")?;
                check_range(min, max, "slider")
            }
            Self::SwingTwist(limit) => limit.validate(),
        }
    }

    /// Whether [`JointLimit::validate`] passes.
    #[inline]
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.validate().is_ok()
    }

    /// Whether a bone's local rotation and translation satisfy this limit, relative to the
    /// bone's rest rotation and translation, allowing `tolerance` (radians for rotations,
    /// model units for sliders).
    ///
    /// [`JointLimit::Locked`] always contains: a lock keeps the *incoming* rotation, which the
    /// limit does not know (solvers enforce locks by not moving the joint). So does a malformed
    /// limit (see [`JointLimit::validate`] and the [module docs](self)). Hinge and twist ranges
    /// that reach past ±π are taken around the circle.
    #[must_use]
    pub fn contains(
        &self,
        rest_rotation: Quat,
        rest_translation: Vec3,
        rotation: Quat,
        translation: Vec3,
        tolerance: f32,
    ) -> bool {
        if !self.is_valid() {
            return true;
        }
        match *self {
            Self::Free | Self::Locked => true,
            Self::Hinge { axis, min, max } => {
                let (swing, angle) = hinge_parts(rest_rotation.inverse() * rotation, axis);
                swing <= tolerance && angle_in_range(angle, min, max, tolerance)
            }
            Self::SwingTwist(limit) => {
                limit.contains(rest_rotation.inverse() * rotation, tolerance)
            }
            Self::Slider { axis, min, max } => {
                let (along, off_axis) = slider_parts(translation, rest_translation, axis);
                off_axis <= f64::from(tolerance)
                    && along >= f64::from(min) - f64::from(tolerance)
                    && along <= f64::from(max) + f64::from(tolerance)
            }
        }
    }

    /// Moves a bone's local rotation / translation onto the nearest point inside this limit,
    /// relative to the rest transform. Returns whether anything changed.
    ///
    /// A malformed limit (see [`JointLimit::validate`]) changes nothing; a finite input never
    /// becomes non-finite, and a clamped value is always inside by [`JointLimit::contains`].
    ///
    /// Values inside the limit (within [`LIMIT_SLACK`]) are left bit-identical. A hinge limit
    /// drops any off-axis rotation and clamps the angle; a swing–twist limit clamps the twist
    /// to its range and projects the swing onto the ellipse boundary (closest point in the
    /// swing rotation-vector plane); a slider drops off-axis offset and clamps the distance;
    /// [`JointLimit::Free`] and [`JointLimit::Locked`] never change anything.
    pub fn clamp(
        &self,
        rest_rotation: Quat,
        rest_translation: Vec3,
        rotation: &mut Quat,
        translation: &mut Vec3,
    ) -> bool {
        if !self.is_valid() {
            return false;
        }
        self.clamp_valid(rest_rotation, rest_translation, rotation, translation)
    }

    /// [`JointLimit::clamp`] of a limit known to be valid (the solvers validate their limits
    /// when they are set up, then clamp every joint they move, every iteration): the same
    /// result without checking the limit again.
    pub(crate) fn clamp_valid(
        &self,
        rest_rotation: Quat,
        rest_translation: Vec3,
        rotation: &mut Quat,
        translation: &mut Vec3,
    ) -> bool {
        debug_assert!(self.is_valid(), "clamp_valid with an invalid limit");
        match *self {
            Self::Free | Self::Locked => false,
            Self::Hinge { axis, min, max } => {
                let delta = rest_rotation.inverse() * *rotation;
                if hinge_surely_inside(delta, axis, min, max) {
                    return false;
                }
                let (swing, angle) = hinge_parts(delta, axis);
                if swing <= LIMIT_SLACK && angle_in_range(angle, min, max, LIMIT_SLACK) {
                    return false;
                }
                let clamped = clamp_angle(angle, min, max);
                // (The axis is unit only to within `AXIS_UNIT_TOLERANCE`.)
                let axis = axis.normalize();
                write_rotation(
                    rotation,
                    rest_rotation * Quat::from_axis_angle(axis, clamped),
                )
            }
            Self::SwingTwist(limit) => {
                let delta = rest_rotation.inverse() * *rotation;
                // (Valid: checked by the caller.)
                match limit.clamp_delta_valid(delta) {
                    Some(d) => write_rotation(rotation, rest_rotation * d),
                    None => false,
                }
            }
            Self::Slider { axis, min, max } => {
                let (along, off_axis) = slider_parts(*translation, rest_translation, axis);
                let slack = f64::from(LIMIT_SLACK);
                if off_axis <= slack
                    && along >= f64::from(min) - slack
                    && along <= f64::from(max) + slack
                {
                    return false;
                }
                // (`along` is finite: f64 holds any difference of finite f32 values.)
                let along = along.clamp(f64::from(min), f64::from(max));
                let axis = axis.as_dvec3().normalize();
                let t = (rest_translation.as_dvec3() + axis * along).as_vec3();
                if !t.is_finite() {
                    // Only when the rest translation itself sits at the edge of f32's range.
                    return false;
                }
                *translation = t;
                true
            }
        }
    }
}

/// The axis check of [`JointLimit::validate`] (on the squared length, no square root: the
/// clamps run it on every call).
#[inline]
fn check_axis(axis: Vec3, what: &'static str) -> Result<(), LimitError> {
    // |‖a‖² − 1| ≤ 2 tol  ⇔  ‖a‖ within about tol of 1 (NaN fails the comparison).
    if (axis.length_squared() - 1.0).abs() <= 2.0 * AXIS_UNIT_TOLERANCE {
        Ok(())
    } else {
        Err(LimitError::InvalidAxis(what))
    }
}

/// The range check of [`JointLimit::validate`]: angle bounds within ±[`MAX_ANGLE_BOUND`],
/// slider bounds within ±[`MAX_COORDINATE`].
#[inline]
fn check_range(min: f32, max: f32, what: &'static str) -> Result<(), LimitError> {
    let bound = if what == "slider" {
        MAX_COORDINATE
    } else {
        MAX_ANGLE_BOUND
    };
    if min.abs() <= bound && max.abs() <= bound && min <= max {
        Ok(())
    } else {
        Err(LimitError::InvalidRange(what))
    }
}

/// Writes `rest * delta`, normalised, into `rotation` when it can be normalised (it cannot only
/// for a zero or non-finite `rest` passed to the public [`JointLimit::clamp`]); returns whether
/// it wrote.
fn write_rotation(rotation: &mut Quat, q: Quat) -> bool {
    let len_sq = q.length_squared();
    if !(len_sq.is_finite() && len_sq > 1e-30) {
        return false;
    }
    *rotation = q * len_sq.sqrt().recip();
    true
}

/// A slider's offset from rest along `axis` and its distance from the axis line, in f64 so
/// that no difference of finite f32 translations overflows.
fn slider_parts(translation: Vec3, rest: Vec3, axis: Vec3) -> (f64, f64) {
    let d = translation.as_dvec3() - rest.as_dvec3();
    let axis = axis.as_dvec3().normalize();
    let along = d.dot(axis);
    (along, (d - axis * along).length())
}

/// Whether the angle `a` (in `(−π, π]`) lies in `[min, max]` widened by `tolerance`, around the
/// circle: `a` or `a ± 2πk`. The plain comparison decides every range inside `[−π, π]`.
#[inline]
fn angle_in_range(a: f32, min: f32, max: f32, tolerance: f32) -> bool {
    let (lo, hi) = (min - tolerance, max + tolerance);
    if a >= lo && a <= hi {
        return true;
    }
    if (lo >= -PI && hi <= PI) || !a.is_finite() {
        return false;
    }
    angle_in_wrapped_range(a, lo, hi)
}

/// [`angle_in_range`] for a range reaching past ±π.
#[cold]
fn angle_in_wrapped_range(a: f32, lo: f32, hi: f32) -> bool {
    let (a, lo, hi) = (f64::from(a), f64::from(lo), f64::from(hi));
    let width = hi - lo;
    width >= core::f64::consts::TAU || (a - lo).rem_euclid(core::f64::consts::TAU) <= width
}

impl SwingTwistLimit {
    /// Checks the limit as [`JointLimit::validate`] does.
    ///
    /// # Errors
    /// [`LimitError::InvalidAxis`], [`LimitError::AxesNotPerpendicular`],
    /// [`LimitError::InvalidSwingRange`] or [`LimitError::InvalidRange`].
    pub fn validate(&self) -> Result<(), LimitError> {
        check_axis(self.twist_axis, "twist")?;
        check_axis(self.swing_axis, "swing")?;
        if self.twist_axis.dot(self.swing_axis).abs() > AXIS_UNIT_TOLERANCE {
            return Err(LimitError::AxesNotPerpendicular);
        }
        if !(self.swing_half_angles.is_finite() && self.swing_half_angles.min_element() >= 0.0) {
            return Err(LimitError::InvalidSwingRange);
        }
        check_range(self.twist_min, self.twist_max, "twist")
    }

    /// Splits a rest-relative rotation into the swing rotation vector's two components (along
    /// `swing_axis` and `twist_axis × swing_axis`) and the twist angle in `(−π, π]`.
    #[must_use]
    pub fn decompose(&self, delta: Quat) -> (Vec2, f32) {
        let (s, twist) = rotation::swing_vector_and_twist(delta, self.twist_axis);
        let second = self.twist_axis.cross(self.swing_axis);
        (Vec2::new(s.dot(self.swing_axis), s.dot(second)), twist)
    }

    /// The rotation with swing components `swing` and twist angle `twist`; inverse of
    /// [`SwingTwistLimit::decompose`].
    #[must_use]
    pub fn compose(&self, swing: Vec2, twist: f32) -> Quat {
        let second = self.twist_axis.cross(self.swing_axis);
        rotation::from_swing_vector_twist(
            self.swing_axis * swing.x + second * swing.y,
            self.twist_axis,
            twist,
        )
    }

    /// Whether a rest-relative rotation is inside the cone and twist range, allowing
    /// `tolerance` radians.
    #[must_use]
    pub fn contains(&self, delta: Quat, tolerance: f32) -> bool {
        if self.validate().is_err() {
            return true;
        }
        let (s, twist) = self.decompose(delta);
        if !angle_in_range(twist, self.twist_min, self.twist_max, tolerance) {
            return false;
        }
        let c = closest_on_ellipse(s, self.swing_half_angles);
        s.distance(c) <= tolerance
    }

    /// The nearest rest-relative rotation inside the limit (twist clamped to its range, swing
    /// projected onto the ellipse), or `None` when `delta` is already inside (within
    /// [`LIMIT_SLACK`]).
    #[must_use]
    pub fn clamp_delta(&self, delta: Quat) -> Option<Quat> {
        if self.validate().is_err() {
            return None;
        }
        self.clamp_delta_valid(delta)
    }

    /// [`SwingTwistLimit::clamp_delta`] of a limit known to be valid (the check is the
    /// caller's: [`JointLimit::clamp`] makes it once per call).
    fn clamp_delta_valid(&self, delta: Quat) -> Option<Quat> {
        if self.surely_inside(delta) {
            return None;
        }
        let (s, twist) = self.decompose(delta);
        let c = closest_on_ellipse(s, self.swing_half_angles);
        let twist_in = angle_in_range(twist, self.twist_min, self.twist_max, LIMIT_SLACK);
        if twist_in && s.distance(c) <= LIMIT_SLACK {
            return None;
        }
        let t = clamp_angle(twist, self.twist_min, self.twist_max);
        Some(self.compose(c, t).normalize())
    }
}

impl SwingTwistLimit {
    /// Whether `delta` is inside the limit for certain, decided without the decomposition's
    /// arc tangents (see [`SplitBounds`]): the twist's bounds within the twist range and the
    /// swing's upper bound inside the ellipse. `false` decides nothing (the exact test runs);
    /// `true` only where the exact test says inside too, so a clamp answers the same bits.
    #[inline]
    fn surely_inside(&self, delta: Quat) -> bool {
        let (a, b) = (self.swing_half_angles.x, self.swing_half_angles.y);
        if !(a > 0.0 && b > 0.0) {
            return false;
        }
        let Some(k) = SplitBounds::of(delta, self.twist_axis) else {
            return false;
        };
        if !(k.twist_lo >= self.twist_min && k.twist_hi <= self.twist_max) {
            return false;
        }
        // (θ u·e₁ / a)² + (θ u·e₂ / b)² ≤ 1, u = swing / |swing|, θ at its upper bound; as
        // `decompose` projects (onto the axes as given, the second from their cross product).
        let second = self.twist_axis.cross(self.swing_axis);
        let (x, y) = (k.swing.dot(self.swing_axis) / a, k.swing.dot(second) / b);
        let theta = k.swing_hi;
        theta * theta * (x * x + y * y) <= INSIDE_MARGIN * k.swing.length_squared()
    }
}

/// What [`SwingTwistLimit::surely_inside`] and [`hinge_surely_inside`] leave between their
/// bound and the limit (a relative margin; rounding in them is about 1e-7, and the exact test
/// allows [`LIMIT_SLACK`] besides).
const INSIDE_MARGIN: f32 = 0.9999;

/// Bounds on the swing–twist split of a rotation (twist about a unit axis first, as
/// [`rotation::swing_vector_and_twist`]) from its components alone, no arc tangent: the twist
/// angle is `2 atan(s / w)` and the swing angle `2 atan(|v⊥| / √(w² + s²))` (`s` the vector
/// part along the axis, `v⊥` the rest), and for `0 ≤ x ≤ 1` the alternating series bounds
/// `x − x³/3 ≤ atan x ≤ x − x³/3 + x⁵/5` hold. Only for twists and swings below a quarter turn
/// (where the bounds are within 0.09 rad; within 4e-4 rad below 45°).
struct SplitBounds {
    /// Lower and upper bound on the twist angle (radians).
    twist_lo: f32,
    twist_hi: f32,
    /// Upper bound on the swing angle (radians).
    swing_hi: f32,
    /// The swing's vector part, unnormalised (its direction is the swing axis; zero for none).
    swing: Vec3,
}

impl SplitBounds {
    #[inline]
    fn of(delta: Quat, axis: Vec3) -> Option<Self> {
        let axis = axis.try_normalize()?;
        // q and −q: the `w ≥ 0` representative, as the exact split takes.
        let q = if delta.w < 0.0 { -delta } else { delta };
        let v = q.xyz();
        let (w, s) = (q.w, v.dot(axis));
        // (NaN fails every comparison.)
        if !(s.abs() <= w && w > 0.0) {
            return None;
        }
        let x = s / w;
        let (x3, x5) = (x * x * x, x * x * x * x * x);
        let (lo, hi) = if x >= 0.0 {
            (x - x3 / 3.0, x - x3 / 3.0 + x5 / 5.0)
        } else {
            (x - x3 / 3.0 + x5 / 5.0, x - x3 / 3.0)
        };
        let perp = v - axis * s;
        let (p2, n2) = (perp.length_squared(), w * w + s * s);
        if p2.is_nan() || p2 > n2 {
            return None;
        }
        let r = (p2 / n2).sqrt();
        let (r3, r5) = (r * r * r, r * r * r * r * r);
        Some(Self {
            twist_lo: 2.0 * lo,
            twist_hi: 2.0 * hi,
            swing_hi: 2.0 * (r - r3 / 3.0 + r5 / 5.0),
            // The vector part of q · twist⁻¹ (times √(w² + s²)).
            swing: perp * w - perp.cross(axis) * s,
        })
    }
}

/// Whether a hinge's rest-relative rotation is inside its limit for certain (no off-axis
/// swing beyond a fraction of [`LIMIT_SLACK`], the angle's bounds within the range); as
/// [`SwingTwistLimit::surely_inside`].
#[inline]
fn hinge_surely_inside(delta: Quat, axis: Vec3, min: f32, max: f32) -> bool {
    SplitBounds::of(delta, axis)
        .is_some_and(|k| k.twist_lo >= min && k.twist_hi <= max && k.swing_hi <= 0.5 * LIMIT_SLACK)
}

/// The swing's rotation angle and the twist angle about `axis` of a rest-relative rotation
/// (swing–twist helpers from [`crate::rotation`]).
fn hinge_parts(delta: Quat, axis: Vec3) -> (f32, f32) {
    let (swing, twist) = rotation::swing_vector_and_twist(delta, axis);
    (swing.length(), twist)
}

/// Clamps an angle in `(−π, π]` to `[min, max]` (taken around the circle, see
/// [`angle_in_range`]), choosing the nearer end around the circle.
fn clamp_angle(a: f32, min: f32, max: f32) -> f32 {
    let max = max.max(min);
    if angle_in_range(a, min, max, 0.0) {
        return a;
    }
    let to_min = rotation::wrap_angle(min - a).abs();
    let to_max = rotation::wrap_angle(a - max).abs();
    if to_min <= to_max { min } else { max }
}

/// The point of the filled ellipse `(x/a)² + (y/b)² ≤ 1` nearest to `p` (`p` itself if inside).
fn closest_on_ellipse(p: Vec2, half: Vec2) -> Vec2 {
    let a = half.x.max(0.0);
    let b = half.y.max(0.0);
    let (x0, y0) = (p.x.abs(), p.y.abs());
    let inside = |x: f32, y: f32| {
        let fx = if a > 0.0 {
            x / a
        } else if x > 0.0 {
            f32::INFINITY
        } else {
            0.0
        };
        let fy = if b > 0.0 {
            y / b
        } else if y > 0.0 {
            f32::INFINITY
        } else {
            0.0
        };
        fx * fx + fy * fy <= 1.0
    };
    if inside(x0, y0) {
        return p;
    }
    let (x, y) = if a <= 0.0 && b <= 0.0 {
        (0.0, 0.0)
    } else if a <= 0.0 {
        (0.0, y0.min(b))
    } else if b <= 0.0 {
        (x0.min(a), 0.0)
    } else {
        // Closest point: (a²x0/(t+a²), b²y0/(t+b²)) with t ≥ 0 the root of
        // F(t) = (a x0/(t+a²))² + (b y0/(t+b²))² − 1, convex and decreasing: Newton from
        // t = 0 converges monotonically. Work in f64 for thin ellipses.
        let (a, b, x0, y0) = (f64::from(a), f64::from(b), f64::from(x0), f64::from(y0));
        let (a2, b2) = (a * a, b * b);
        let mut t = 0.0f64;
        for _ in 0..64 {
            let (ex, ey) = (a * x0 / (t + a2), b * y0 / (t + b2));
            let f = ex * ex + ey * ey - 1.0;
            if f <= 1e-14 {
                break;
            }
            let df = -2.0 * (ex * ex / (t + a2) + ey * ey / (t + b2));
            let next = t - f / df;
            if next <= t || next.is_nan() {
                break;
            }
            t = next;
        }
        let (mut x, mut y) = (a2 * x0 / (t + a2), b2 * y0 / (t + b2));
        // Land exactly on the boundary.
        let r = ((x / a).powi(2) + (y / b).powi(2)).sqrt();
        if r > 0.0 {
            x /= r;
            y /= r;
        }
        (x as f32, y as f32)
    };
    Vec2::new(x.copysign(p.x), y.copysign(p.y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit() -> SwingTwistLimit {
        SwingTwistLimit {
            twist_axis: Vec3::Y,
            swing_axis: Vec3::X,
            swing_half_angles: Vec2::new(0.5, 1.0),
            twist_min: -0.3,
            twist_max: 0.6,
        }
    }

    #[test]
    fn decompose_compose_round_trip() {
        let l = limit();
        let q = l.compose(Vec2::new(0.2, -0.4), 0.5);
        let (s, t) = l.decompose(q);
        assert!(s.distance(Vec2::new(0.2, -0.4)) < 1e-5, "{s}");
        assert!((t - 0.5).abs() < 1e-5, "{t}");
    }

    #[test]
    fn swing_twist_clamp_projects_to_ellipse_boundary() {
        let l = limit();
        let q = l.compose(Vec2::new(1.0, 1.5), 1.2);
        assert!(!l.contains(q, 1e-4));
        let c = l.clamp_delta(q).expect("outside");
        assert!(l.contains(c, 1e-4));
        let (s, t) = l.decompose(c);
        assert!((t - 0.6).abs() < 1e-5);
        let r = (s.x / 0.5).powi(2) + (s.y / 1.0).powi(2);
        assert!((r - 1.0).abs() < 1e-4, "on boundary: {r}");
        // Closest point: the offset is normal to the ellipse, i.e. parallel to its gradient.
        let off = Vec2::new(1.0, 1.5) - s;
        let grad = Vec2::new(s.x / 0.25, s.y);
        assert!(off.perp_dot(grad).abs() < 1e-3 * off.length() * grad.length());
        // Clamping a clamped rotation changes nothing.
        assert!(l.clamp_delta(c).is_none());
        // Inside stays bit-identical.
        let inside = l.compose(Vec2::new(0.1, 0.2), 0.1);
        assert!(l.clamp_delta(inside).is_none());
    }

    #[test]
    fn hinge_and_slider_clamp() {
        let rest = Quat::from_rotation_z(0.3);
        let lim = JointLimit::Hinge {
            axis: Vec3::X,
            min: -0.5,
            max: 1.0,
        };
        let mut r = rest * Quat::from_rotation_x(1.4) * Quat::from_rotation_y(0.2);
        let mut t = Vec3::ZERO;
        assert!(!lim.contains(rest, Vec3::ZERO, r, t, 1e-4));
        assert!(lim.clamp(rest, Vec3::ZERO, &mut r, &mut t));
        assert!(lim.contains(rest, Vec3::ZERO, r, t, 1e-4));
        assert!((rest * Quat::from_rotation_x(1.0)).angle_between(r) < 1e-4);
        assert!(!lim.clamp(rest, Vec3::ZERO, &mut r, &mut t));
        // Wrap-around: −3 rad is nearer to 1.0 going the other way? No: |−3−(−0.5)| = 2.5,
        // |−3 + 2π − 1| ≈ 2.28, so it goes to max.
        let mut r = rest * Quat::from_rotation_x(-3.0);
        assert!(lim.clamp(rest, Vec3::ZERO, &mut r, &mut t));
        assert!((rest * Quat::from_rotation_x(1.0)).angle_between(r) < 1e-4);

        let s = JointLimit::Slider {
            axis: Vec3::Z,
            min: 0.0,
            max: 0.2,
        };
        let rest_t = Vec3::new(1.0, 0.0, 0.0);
        let mut q = Quat::IDENTITY;
        let mut t = Vec3::new(1.1, 0.0, 0.5);
        assert!(s.clamp(Quat::IDENTITY, rest_t, &mut q, &mut t));
        assert!(t.distance(Vec3::new(1.0, 0.0, 0.2)) < 1e-6);
        assert!(s.contains(Quat::IDENTITY, rest_t, q, t, 0.0));
        assert!(JointLimit::Locked.contains(Quat::IDENTITY, Vec3::ZERO, rest, t, 0.0));
    }

    /// The exact split's inside test (as the clamps decide without the fast path).
    fn exactly_inside(l: &SwingTwistLimit, q: Quat) -> bool {
        let (s, twist) = l.decompose(q);
        angle_in_range(twist, l.twist_min, l.twist_max, LIMIT_SLACK)
            && s.distance(closest_on_ellipse(s, l.swing_half_angles)) <= LIMIT_SLACK
    }

    /// The clamps' fast inside test never says inside where the exact split says outside
    /// (the clamp would then leave a rotation outside its limit), on rotations around the
    /// limits' boundaries, and decides most rotations well inside (else it saves nothing).
    #[test]
    fn surely_inside_implies_inside() {
        let mut seed = 0x2545_f491_u32;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as f32 / u32::MAX as f32
        };
        let axes = [
            (Vec3::Y, Vec3::X),
            (Vec3::new(0.6, 0.8, 0.0), Vec3::Z),
            (Vec3::new(0.0, 0.6, -0.8).normalize(), Vec3::X),
        ];
        let (mut fast, mut inside_total) = (0, 0);
        for i in 0..40_000 {
            let (twist_axis, swing_axis) = axes[i % axes.len()];
            let l = SwingTwistLimit {
                twist_axis,
                swing_axis,
                swing_half_angles: Vec2::new(0.05 + 1.4 * rand(), 0.05 + 1.4 * rand()),
                twist_min: -1.5 * rand(),
                twist_max: 1.5 * rand(),
            };
            // Swing and twist up to 1.3× the limit (around the boundary), sometimes tiny.
            let f = if i % 7 == 0 { 1e-4 } else { 1.3 };
            let sw = Vec2::new(
                (2.0 * rand() - 1.0) * l.swing_half_angles.x * f,
                (2.0 * rand() - 1.0) * l.swing_half_angles.y * f,
            );
            let t = l.twist_min - 0.2 + (l.twist_max - l.twist_min + 0.4) * rand();
            let mut q = l.compose(sw, t);
            if i % 2 == 1 {
                q = -q;
            }
            let exact = exactly_inside(&l, q);
            inside_total += usize::from(exact);
            if l.surely_inside(q) {
                fast += 1;
                assert!(exact, "limit {l:?}, swing {sw}, twist {t}");
            }
            // Hinges: a rotation about the axis, sometimes with a little off-axis swing.
            let axis = twist_axis;
            let off = if i % 3 == 0 { 1e-5 * rand() } else { 0.0 };
            let h = Quat::from_axis_angle(swing_axis, off) * Quat::from_axis_angle(axis, t);
            if hinge_surely_inside(h, axis, l.twist_min, l.twist_max) {
                let (swing, angle) = hinge_parts(h, axis);
                assert!(
                    swing <= LIMIT_SLACK
                        && angle_in_range(angle, l.twist_min, l.twist_max, LIMIT_SLACK),
                    "hinge {axis} [{}, {}], angle {t}, off {off}",
                    l.twist_min,
                    l.twist_max
                );
            }
        }
        // Most rotations the exact test finds inside are decided fast.
        assert!(
            fast * 10 > inside_total * 7,
            "fast {fast} of {inside_total} inside"
        );
    }
}
