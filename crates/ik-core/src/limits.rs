//! Joint limits, always expressed relative to a bone's rest transform: hinge ranges, an
//! elliptic swing cone plus a twist range (swing–twist about the bone's own rest direction),
//! slider ranges, and locks.
//!
//! "Relative to rest" means the limit constrains `delta = rest.rotation⁻¹ * local.rotation`
//! (see [`crate::rotation`]), so a limit means the same thing whatever the rig's bind pose and
//! bone axes are.

use glam::{Vec2, Vec3};

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
