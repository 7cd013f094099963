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

use core::f32::consts::PI;

use glam::{Mat3A, Quat, Vec3, Vec3A};
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

    fn validate(&self) -> Result<(), AnalyticError> {
        if !self.target.is_finite() {
            return Err(AnalyticError::NonFiniteGoal("target"));
        }
        if let Some(q) = self.orientation
            && (!q.is_finite() || q.length_squared() < 1e-12)
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
    /// Distance from the solved tip to the effective target, model units.
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
    bend_axis: Vec3,
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
    if len2 > 1e-10 * v.length_squared() && len2 > 1e-30 {
        Some(r * len2.sqrt().recip())
    } else {
        None
    }
}

/// The rotation taking the orthonormal pair (`from_a`, `from_b`) onto (`to_a`, `to_b`).
#[inline]
fn frame_rotation(from_a: Vec3A, from_b: Vec3A, to_a: Vec3A, to_b: Vec3A) -> Quat {
    let from = Mat3A::from_cols(from_a, from_b, from_a.cross(from_b));
    let to = Mat3A::from_cols(to_a, to_b, to_a.cross(to_b));
    Quat::from_mat3a(&(to * from.transpose())).normalize()
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
            root_rest_rotation: skeleton.bones()[root].rest.rotation,
            root_rest_model_rotation,
            upper_rest_direction: root_rest_model_rotation.inverse() * ua,
            lower_rest_direction: mid_rest_model_rotation.inverse() * ub,
            upper_rest_model: ua,
            natural_bend_axis,
            bend_axis: Vec3::ZERO,
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
        self.bend_axis =
            (self.root_rest_model_rotation.inverse() * Vec3::from(axis_model)).normalize();
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
        self.bend_axis
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

    fn check_sizes(&self, skeleton: &Skeleton, pose: &Pose) -> Result<(), AnalyticError> {
        let found = skeleton
            .len()
            .min(pose.rotations.len())
            .min(pose.translations.len());
        if found <= self.tip {
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
        goal.validate()?;
        self.check_sizes(skeleton, pose)?;
        let bones = skeleton.bones();
        let w_pos = goal.position_weight.clamp(0.0, 1.0);
        let w_rot = goal.rotation_weight.clamp(0.0, 1.0);
        let w_pole = goal.pole_weight.clamp(0.0, 1.0);

        // The incoming limb, in the root's (unscaled) rotation frame.
        let q_parent = parent.rotation;
        let q_root = pose.rotations[self.root];
        let q_mid = pose.rotations[self.mid];
        let p_root = Vec3A::from(parent.transform_point(pose.translations[self.root]));
        let root_rot = q_parent * q_root;
        let root_scale = parent.scale * bones[self.root].rest.scale;
        let (u1, q_rm, s_mid_parent) =
            offset_through(skeleton, pose, &self.upper_between, root_scale, self.mid);
        let s_mid = s_mid_parent * bones[self.mid].rest.scale;
        let (u2, q_mt, _) = offset_through(skeleton, pose, &self.lower_between, s_mid, self.tip);
        let (l1, l2) = (u1.length(), u2.length());
        // Rotation of the mid bone in the root frame; `then_mt` appends the rigid bones between
        // mid and tip. (Skipped multiplications when there are none: the common case.)
        let m_cur = q_rm.map_or(q_mid, |r| r * q_mid);
        let then_mt = |q: Quat| q_mt.map_or(q, |r| q * r);
        let b_cur = m_cur * u2;
        let tip_in = || p_root + root_rot * (u1 + b_cur);
        let lengths_ok = l1 > MIN_BONE_LENGTH * 1e-3 && l2 > MIN_BONE_LENGTH * 1e-3;
        if !(lengths_ok && b_cur.is_finite() && root_rot.is_finite() && p_root.is_finite()) {
            return Err(AnalyticError::DegeneratePose);
        }
        let total = l1 + l2;
        let ua = u1 / l1;
        let ub_cur = b_cur / l2;

        if w_pos == 0.0 && w_pole == 0.0 && (w_rot == 0.0 || goal.orientation.is_none()) {
            // Nothing to blend in: the incoming pose is the answer.
            let cos = ua.dot(ub_cur).clamp(-1.0, 1.0);
            return Ok(LimbReport {
                reachable: true,
                position_error: 0.0,
                flex_angle: cos.acos(),
                flex_limited: false,
                pole_fallback: false,
                target_distance: (tip_in() - p_root).length(),
                lengths: [l1, l2],
            });
        }

        // Effective target and root→target direction.
        let goal_target = Vec3A::from(goal.target);
        let target = if w_pos >= 1.0 {
            goal_target
        } else {
            tip_in().lerp(goal_target, w_pos)
        };
        let d = target - p_root;
        let dist = d.length();
        let dir = if dist > 1e-6 * total {
            d / dist
        } else {
            // Target at the root: keep the current direction toward the tip.
            (tip_in() - p_root)
                .try_normalize()
                .unwrap_or_else(|| (root_rot * ua).normalize())
        };

        // Flex by the law of cosines, with reach, soft reach and flex limits.
        let (cos_min, cos_max) = (self.cos_flex_min, self.cos_flex_max);
        let inv_2l1l2 = (2.0 * l1 * l2).recip();
        let l_sq = l1 * l1 + l2 * l2;
        let cos_raw = (dist * dist - l_sq) * inv_2l1l2;
        let tol = 1e-5;
        let reachable = cos_raw <= cos_min + tol && cos_raw >= cos_max - tol;
        let mut dist_eff = dist;
        if self.settings.soft_reach > 0.0 {
            let d_max = reach(l1, l2, cos_min);
            let band = self.settings.soft_reach * d_max;
            let start = d_max - band;
            if dist > start {
                dist_eff = d_max - band * (-(dist - start) / band).exp();
            }
        }
        let cos_geom = ((dist_eff * dist_eff - l_sq) * inv_2l1l2).clamp(-1.0, 1.0);
        // (`max`/`min`, not `clamp`: no panic branch for run-time bounds in the hot path.)
        let cos_phi = cos_geom.max(cos_max).min(cos_min);
        let flex_limited = (cos_phi - cos_geom).abs() > 1e-6;
        let sin_phi = (1.0 - cos_phi * cos_phi).max(0.0).sqrt();

        // Bend axis in the root frame, normal to the (possibly animated) upper segment.
        // (Already normal unless bones between root and mid or a non-uniform scale moved it.)
        let bend_axis = Vec3A::from(self.bend_axis);
        let h = if bend_axis.dot(ua).abs() < 1e-7 {
            bend_axis
        } else {
            normal_part(bend_axis, ua).unwrap_or_else(|| ua.any_orthonormal_vector())
        };
        let side = h.cross(ua);
        let ub_des = ua * cos_phi + side * sin_phi;
        let c = u1 + ub_des * l2;
        let c_len = c.length();
        let uc = if c_len > 1e-6 * total {
            c / c_len
        } else {
            side
        };

        // Desired bend-plane normal in model space.
        let n_prev = || normal_part(root_rot * h, dir);
        let rest_ref = || normal_part(q_parent * (self.root_rest_rotation * bend_axis), dir);
        let mut pole_fallback = false;
        let n_pole = match goal.pole {
            Pole::Keep => None,
            Pole::Position(p) => {
                let side_dir = normal_part(Vec3A::from(p) - p_root, dir);
                pole_fallback = side_dir.is_none();
                side_dir.map(|s| s.cross(dir))
            }
            Pole::Swivel(angle) => {
                let r = rest_ref();
                pole_fallback = r.is_none();
                r.map(|r| Quat::from_axis_angle(dir.into(), angle) * r)
            }
        };
        let fallback = || {
            n_prev()
                .or_else(rest_ref)
                .unwrap_or_else(|| dir.any_orthonormal_vector())
        };
        let n = match n_pole {
            Some(np) if w_pole >= 1.0 => np,
            Some(np) if w_pole > 0.0 => {
                let nf = fallback();
                let angle = nf.cross(np).dot(dir).atan2(nf.dot(np));
                Quat::from_axis_angle(dir.into(), angle * w_pole) * nf
            }
            _ => fallback(),
        };

        // Root: map the root-frame (tip direction, bend axis) onto (target direction, normal).
        let new_root_rot = frame_rotation(uc, h, dir, n);
        // Mid: turn the lower segment onto its new direction about the bend axis.
        // The half-vector arc is exact and cheap unless the turn is near π, where the frame
        // construction is the stable choice.
        let cos_turn = ub_cur.dot(ub_des);
        let delta = if cos_turn > -0.99 {
            let axis = ub_cur.cross(ub_des);
            Quat::from_xyzw(axis.x, axis.y, axis.z, 1.0 + cos_turn).normalize()
        } else {
            match normal_part(h, ub_cur) {
                Some(hc) => frame_rotation(ub_cur, hc, ub_des, h),
                None => arc(ub_cur, ub_des),
            }
        };
        let m_new = delta * m_cur;
        let new_mid = q_rm.map_or(m_new, |r| r.inverse() * m_new).normalize();
        let new_root = (q_parent.inverse() * new_root_rot).normalize();
        let new_tip = match goal.orientation {
            Some(o) if w_rot > 0.0 => {
                let o = o.normalize();
                let tip_model = if w_rot >= 1.0 {
                    o
                } else {
                    let q_tip = pose.rotations[self.tip];
                    (then_mt(root_rot * m_cur) * q_tip)
                        .normalize()
                        .slerp(o, w_rot)
                };
                let frame = then_mt(new_root_rot * m_new);
                (frame.inverse() * tip_model).normalize()
            }
            Some(_) => {
                // Keep the tip's incoming model rotation.
                let q_tip = pose.rotations[self.tip];
                let tip_model = then_mt(root_rot * m_cur) * q_tip;
                (then_mt(new_root_rot * m_new).inverse() * tip_model).normalize()
            }
            None => pose.rotations[self.tip],
        };
        if !(new_root.is_finite() && new_mid.is_finite() && new_tip.is_finite()) {
            return Err(AnalyticError::DegeneratePose);
        }
        pose.rotations[self.root] = new_root;
        pose.rotations[self.mid] = new_mid;
        pose.rotations[self.tip] = new_tip;
        Ok(LimbReport {
            reachable,
            // The tip lies on the root→target ray at distance |c| (exactly, up to rounding).
            position_error: (dist - c_len).abs(),
            // (Clamped again: acos near ±1 is coarse in f32.)
            flex_angle: cos_phi
                .acos()
                .max(self.settings.flex_min)
                .min(self.settings.flex_max),
            flex_limited,
            pole_fallback,
            target_distance: dist,
            lengths: [l1, l2],
        })
    }
}
