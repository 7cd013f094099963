//! Anatomical defaults derived from the rig: the body frame ([`BodyFrame`]), default joint
//! limits ([`HumanoidLimits`]) and segment masses ([`HumanoidMasses`]).
//!
//! Every axis is derived from the skeleton's rest pose: a bone's twist axis is its rest
//! direction toward its child ([`Skeleton::rest_bone_direction`]); swing and hinge axes come from
//! the body's forward/up/left directions estimated from the hips, head and limb positions, so a
//! knee bends forward and an elbow the anatomical way whatever local axes the rig uses.

use glam::{Vec2, Vec3};

use super::HumanoidError;
use super::bones::{HumanoidBone, Side};
use super::map::HumanoidMap;
use crate::limits::{JointLimit, SwingTwistLimit};
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;

/// The body's directions in model space, estimated from the rest pose.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BodyFrame {
    /// From the hips toward the head (unit).
    pub up: Vec3,
    /// Toward the character's own left (unit, perpendicular to `up`).
    pub left: Vec3,
    /// The way the character faces: `left × up` (unit).
    pub forward: Vec3,
}

impl BodyFrame {
    /// Estimates the body frame from the rest pose: `up` from the hips to the head, `left` from
    /// the right to the left upper arms and upper legs, `forward = left × up`.
    ///
    /// # Errors
    /// [`HumanoidError::MissingBone`] if hips, head or the limbs are unmapped, or
    /// [`HumanoidError::DegenerateBodyFrame`] if those positions do not span a frame.
    pub fn from_rest(skeleton: &Skeleton, map: &HumanoidMap) -> Result<Self, HumanoidError> {
        let model = skeleton.rest_model_transforms();
        Self::from_model(&model, map)
    }

    pub(crate) fn from_model(
        model: &[BoneTransform],
        map: &HumanoidMap,
    ) -> Result<Self, HumanoidError> {
        use HumanoidBone as B;
        let pos = |r: HumanoidBone| {
            map.get(r)
                .filter(|&i| i < model.len())
                .map(|i| model[i].translation)
                .ok_or(HumanoidError::MissingBone(r))
        };
        let up = (pos(B::Head)? - pos(B::Hips)?)
            .try_normalize()
            .ok_or(HumanoidError::DegenerateBodyFrame)?;
        let lateral = (pos(B::LeftUpperArm)? - pos(B::RightUpperArm)?)
            + (pos(B::LeftUpperLeg)? - pos(B::RightUpperLeg)?);
        let left = (lateral - up * lateral.dot(up))
            .try_normalize()
            .ok_or(HumanoidError::DegenerateBodyFrame)?;
        Ok(Self {
            up,
            left,
            forward: left.cross(up),
        })
    }
}

/// Default ranges of one ball joint, degrees: swing half-angles about the first swing axis
/// (`swing_x`) and the second (`swing_y`), and a symmetric twist range (`±twist`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BallRangeDeg {
    /// Half-angle about the first swing axis (flexion/extension, or abduction for arms).
    pub swing_x: f32,
    /// Half-angle about the second swing axis.
    pub swing_y: f32,
    /// Twist half-range about the bone.
    pub twist: f32,
}

const fn ball(swing_x: f32, swing_y: f32, twist: f32) -> BallRangeDeg {
    BallRangeDeg {
        swing_x,
        swing_y,
        twist,
    }
}

/// The default range table (degrees) for ball-jointed roles; `None` for hinges and the hips.
///
/// | role | swing x | swing y | twist | first swing axis |
/// |---|---|---|---|---|
/// | spine | 30 | 25 | 25 | body left (flexion) |
/// | chest | 25 | 20 | 25 | body left |
/// | upper chest | 15 | 15 | 15 | body left |
/// | neck | 35 | 30 | 40 | body left |
/// | head | 40 | 30 | 50 | body left |
/// | shoulder (clavicle) | 25 | 20 | 10 | body forward (elevation) |
/// | upper arm | 95 | 90 | 85 | body forward (abduction) |
/// | hand | 70 | 30 | 80 (15 with an in-line twist bone) | body forward |
/// | upper leg | 90 | 45 | 40 | body left (flexion) |
/// | foot | 40 | 25 | 15 | body left (dorsiflexion) |
///
/// Swing cones are symmetric about the rest pose (the limit type is an ellipse centred on rest),
/// so for example hip extension is allowed as far as hip flexion.
#[must_use]
pub fn default_ball_range(role: HumanoidBone) -> Option<BallRangeDeg> {
    use HumanoidBone as B;
    Some(match role.on(Side::Left) {
        B::Spine => ball(30.0, 25.0, 25.0),
        B::Chest => ball(25.0, 20.0, 25.0),
        B::UpperChest => ball(15.0, 15.0, 15.0),
        B::Neck => ball(35.0, 30.0, 40.0),
        B::Head => ball(40.0, 30.0, 50.0),
        B::LeftShoulder => ball(25.0, 20.0, 10.0),
        B::LeftUpperArm => ball(95.0, 90.0, 85.0),
        B::LeftHand => ball(70.0, 30.0, 80.0),
        B::LeftUpperLeg => ball(90.0, 45.0, 40.0),
        B::LeftFoot => ball(40.0, 25.0, 15.0),
        _ => return None,
    })
}

/// Default hinge ranges (degrees, `[min, max]`, positive = anatomical flexion): elbow and knee
/// `[0, 150]`, forearm twist `[-85, 85]`, toes `[-50, 30]`.
#[must_use]
pub fn default_hinge_range(role: HumanoidBone) -> Option<(f32, f32)> {
    use HumanoidBone as B;
    Some(match role.on(Side::Left) {
        B::LeftLowerArm | B::LeftLowerLeg => (0.0, 150.0),
        B::LeftLowerArmTwist => (-85.0, 85.0),
        B::LeftToes => (-50.0, 30.0),
        _ => return None,
    })
}

/// The rest direction of `role`'s bone in its own local frame: toward its mapped child role,
/// else its first child, else continuing its parent's direction. `None` if all are degenerate.
pub(crate) fn role_direction(
    skeleton: &Skeleton,
    model: &[BoneTransform],
    map: &HumanoidMap,
    role: HumanoidBone,
) -> Option<Vec3> {
    use HumanoidBone as B;
    let b = map.get(role)?;
    let child_role = match role.on(Side::Left) {
        B::Hips => Some(B::Spine),
        B::Spine => Some(B::Chest),
        B::Chest => Some(B::UpperChest),
        B::UpperChest | B::Neck => Some(B::Head),
        B::LeftShoulder => Some(B::LeftUpperArm),
        B::LeftUpperArm => Some(B::LeftLowerArm),
        B::LeftLowerArm | B::LeftLowerArmTwist => Some(B::LeftHand),
        B::LeftUpperLeg => Some(B::LeftLowerLeg),
        B::LeftLowerLeg => Some(B::LeftFoot),
        B::LeftFoot => Some(B::LeftToes),
        _ => None,
    }
    .map(|r| r.on(role.side().unwrap_or(Side::Left)));
    let mut targets = [None; 3];
    // A chain role may skip unmapped optional roles (no chest: spine points at the head).
    let mut r = child_role;
    while let Some(cr) = r {
        if let Some(c) = map.get(cr) {
            targets[0] = Some(c);
            break;
        }
        r = match cr {
            B::Chest => Some(B::UpperChest),
            B::UpperChest => Some(B::Neck),
            B::Neck => Some(B::Head),
            _ => None,
        };
    }
    targets[1] = skeleton
        .children(b)
        .find(|&c| skeleton.bones()[c].rest.translation.length() > 1e-6);
    for t in targets.into_iter().flatten() {
        if let Some(d) = skeleton.rest_bone_direction(b, t) {
            return Some(d);
        }
    }
    // A leaf: continue the parent's direction (parent → this bone), in this bone's frame.
    let p = skeleton.parent(b)?;
    let d = (model[b].translation - model[p].translation).try_normalize()?;
    Some((model[b].rotation.inverse() * d).normalize())
}

fn perpendicular(axis: Vec3, to: Vec3) -> Option<Vec3> {
    let v = axis - to * axis.dot(to);
    (v.length() > 0.3).then(|| v.normalize())
}

/// Default joint limits per role, relative to each bone's rest rotation.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HumanoidLimits {
    limits: [JointLimit; HumanoidBone::COUNT],
}

impl Default for HumanoidLimits {
    fn default() -> Self {
        Self {
            limits: [JointLimit::Free; HumanoidBone::COUNT],
        }
    }
}

impl HumanoidLimits {
    /// The limit of `role` ([`JointLimit::Free`] for the hips and unmapped roles).
    #[must_use]
    pub fn get(&self, role: HumanoidBone) -> JointLimit {
        self.limits[role.index()]
    }

    /// Overrides the limit of `role`.
    pub fn set(&mut self, role: HumanoidBone, limit: JointLimit) {
        self.limits[role.index()] = limit;
    }

    /// Checks every role's limit with [`JointLimit::validate`] (unit finite axes, finite
    /// ordered ranges); [`FullBodySolver::with_limits`](super::FullBodySolver::with_limits)
    /// calls it.
    ///
    /// # Errors
    /// [`HumanoidError::InvalidLimit`] naming the first role (in [`HumanoidBone::ALL`] order)
    /// whose limit is malformed.
    pub fn validate(&self) -> Result<(), HumanoidError> {
        for role in HumanoidBone::ALL {
            if let Err(error) = self.get(role).validate() {
                return Err(HumanoidError::InvalidLimit { role, error });
            }
        }
        Ok(())
    }

    /// Anatomical defaults (see [`default_ball_range`] and [`default_hinge_range`]) for every
    /// mapped role, with axes derived from the rig: twist axes are rest bone directions, swing
    /// and hinge axes come from the [`BodyFrame`], all expressed in each bone's rest local frame.
    ///
    /// # Errors
    /// [`HumanoidError::MissingBone`] / [`HumanoidError::DegenerateBodyFrame`] as
    /// [`BodyFrame::from_rest`], [`HumanoidError::BoneOutOfRange`] for a bad index and
    /// [`HumanoidError::ZeroLengthBone`] for a mapped bone with no usable direction.
    pub fn anatomical(skeleton: &Skeleton, map: &HumanoidMap) -> Result<Self, HumanoidError> {
        use HumanoidBone as B;
        for (role, b) in map.iter() {
            if b >= skeleton.len() {
                return Err(HumanoidError::BoneOutOfRange {
                    role,
                    index: b,
                    len: skeleton.len(),
                });
            }
        }
        let model = skeleton.rest_model_transforms();
        let frame = BodyFrame::from_model(&model, map)?;
        let mut out = Self::default();
        let twist_inline = |s: Side| {
            matches!((map.get(B::LeftLowerArmTwist.on(s)), map.get(B::LeftHand.on(s))),
                (Some(t), Some(h)) if skeleton.is_ancestor_or_self(t, h))
        };
        for (role, b) in map.iter() {
            if role == B::Hips {
                continue;
            }
            let inv = model[b].rotation.inverse();
            let twist = role_direction(skeleton, &model, map, role)
                .ok_or(HumanoidError::ZeroLengthBone(role))?;
            // The bone's rest direction in model space.
            let d = model[b].rotation * twist;
            let limit = if let Some((min, max)) = default_hinge_range(role) {
                let axis_model = match role.on(Side::Left) {
                    B::LeftLowerArm => d.cross(frame.forward),
                    B::LeftLowerLeg => frame.forward.cross(d),
                    B::LeftToes => frame.left,
                    _ => d,
                };
                let axis_model = axis_model.try_normalize().unwrap_or(frame.left);
                JointLimit::Hinge {
                    axis: (inv * axis_model).normalize(),
                    min: min.to_radians(),
                    max: max.to_radians(),
                }
            } else if let Some(mut range) = default_ball_range(role) {
                let arm = matches!(
                    role.on(Side::Left),
                    B::LeftShoulder | B::LeftUpperArm | B::LeftHand
                );
                if matches!(role.on(Side::Left), B::LeftHand)
                    && twist_inline(role.side().unwrap_or(Side::Left))
                {
                    range.twist = 15.0;
                }
                let (first, second) = if arm {
                    (frame.forward, frame.up)
                } else {
                    (frame.left, frame.forward)
                };
                let swing = perpendicular(inv * first, twist)
                    .or_else(|| perpendicular(inv * second, twist))
                    .unwrap_or_else(|| twist.any_orthonormal_vector());
                JointLimit::SwingTwist(SwingTwistLimit {
                    twist_axis: twist,
                    swing_axis: swing,
                    swing_half_angles: Vec2::new(
                        range.swing_x.to_radians(),
                        range.swing_y.to_radians(),
                    ),
                    twist_min: -range.twist.to_radians(),
                    twist_max: range.twist.to_radians(),
                })
            } else {
                JointLimit::Free
            };
            out.set(role, limit);
        }
        Ok(out)
    }
}

/// Segment mass fractions of total body mass (de Leva 1996, adjusted Zatsiorsky–Seluyanov
/// data, male): head + neck 6.94 %, upper trunk 15.96 %, middle trunk 16.33 %, lower trunk
/// 11.17 %, upper arm 2.71 %, forearm 1.62 %, hand 0.61 %, thigh 14.16 %, shank 4.33 %, foot
/// 1.37 % (sums to 100 %).
///
/// Roles: hips = lower trunk, spine = middle trunk, chest and upper chest share the upper trunk
/// (all of it to whichever exists, or to the spine when neither does), head = head + neck (or
/// split 1:5 with a mapped neck); clavicles, twist bones and toes carry no mass of their own.
#[must_use]
pub fn de_leva_fraction(role: HumanoidBone) -> f32 {
    use HumanoidBone as B;
    match role.on(Side::Left) {
        B::Hips => 0.1117,
        B::Spine => 0.1633,
        B::Chest | B::UpperChest => 0.1596,
        B::Head => 0.0694,
        B::LeftUpperArm => 0.0271,
        B::LeftLowerArm => 0.0162,
        B::LeftHand => 0.0061,
        B::LeftUpperLeg => 0.1416,
        B::LeftLowerLeg => 0.0433,
        B::LeftFoot => 0.0137,
        _ => 0.0,
    }
}

/// Where a segment's centre of mass lies between the bone's origin (0) and its child role's
/// origin (1) (de Leva 1996 longitudinal positions; 0.5 for the trunk and head).
#[must_use]
pub fn de_leva_com_ratio(role: HumanoidBone) -> f32 {
    use HumanoidBone as B;
    match role.on(Side::Left) {
        B::LeftUpperArm => 0.5772,
        B::LeftLowerArm => 0.4574,
        B::LeftHand => 0.79,
        B::LeftUpperLeg => 0.4095,
        B::LeftLowerLeg => 0.4459,
        B::LeftFoot => 0.4415,
        _ => 0.5,
    }
}

/// Per-role segment masses (kilograms or any unit: only ratios matter for a centre of mass).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HumanoidMasses {
    masses: [f32; HumanoidBone::COUNT],
}

impl HumanoidMasses {
    /// The de Leva table ([`de_leva_fraction`]) scaled to `total`, redistributed over the roles
    /// `map` actually has (see the rules there). Unmapped roles get zero.
    #[must_use]
    pub fn de_leva(total: f32, map: &HumanoidMap) -> Self {
        use HumanoidBone as B;
        let mut masses = [0.0; HumanoidBone::COUNT];
        for (role, _) in map.iter() {
            masses[role.index()] = de_leva_fraction(role) * total;
        }
        let upper = de_leva_fraction(B::Chest) * total;
        match (
            map.get(B::Chest).is_some(),
            map.get(B::UpperChest).is_some(),
        ) {
            (true, true) => {
                masses[B::Chest.index()] = upper * 0.5;
                masses[B::UpperChest.index()] = upper * 0.5;
            }
            (false, false) => masses[B::Spine.index()] += upper,
            _ => {}
        }
        if map.get(B::Neck).is_some() {
            let hn = de_leva_fraction(B::Head) * total;
            masses[B::Neck.index()] = hn / 6.0;
            masses[B::Head.index()] = hn * 5.0 / 6.0;
        }
        Self { masses }
    }

    /// The mass of `role`.
    #[must_use]
    pub fn get(&self, role: HumanoidBone) -> f32 {
        self.masses[role.index()]
    }

    /// Overrides the mass of `role` (negative or non-finite values are stored as zero).
    pub fn set(&mut self, role: HumanoidBone, mass: f32) {
        self.masses[role.index()] = if mass.is_finite() { mass.max(0.0) } else { 0.0 };
    }

    /// Sum of all masses.
    #[must_use]
    pub fn total(&self) -> f32 {
        self.masses.iter().sum()
    }
}

impl super::FullBodyGoals {
    /// Checks what [`FullBodySolver::solve`](super::FullBodySolver::solve) needs of the goals,
    /// enabled or not: finite values, positions and targets within
    /// ±[`MAX_COORDINATE`](crate::skeleton::MAX_COORDINATE), and effector rotations that can be
    /// normalised (squared norm in `[1e-12, 1e12]`; they need not be unit).
    ///
    /// # Errors
    /// [`HumanoidError::NonFiniteGoal`].
    pub fn validate(&self) -> Result<(), HumanoidError> {
        use crate::skeleton::MAX_COORDINATE;
        let point = |p: Vec3| p.is_finite() && p.abs().max_element() <= MAX_COORDINATE;
        let ok = self.effectors.iter().all(|e| {
            point(e.position)
                && e.rotation.is_finite()
                && (1e-12..=1e12).contains(&e.rotation.length_squared())
                && e.position_weight.is_finite()
                && e.rotation_weight.is_finite()
        }) && point(self.look_at.target)
            && self.look_at.weight.is_finite()
            && point(self.center_of_mass.target)
            && self.center_of_mass.weight.is_finite();
        if ok {
            Ok(())
        } else {
            Err(HumanoidError::NonFiniteGoal)
        }
    }
}
