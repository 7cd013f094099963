//! The components of [`crate::behaviours`] (the data layer: pure data, no systems), re-exported
//! there; their reflected type paths stay `bevy_ik::behaviours::…`.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::reflect::ReflectComponent;
use bevy::math::Vec3;
use bevy::reflect::prelude::*;
use ik_core::behaviours::look_at::{EllipticLimits, LookAtSettings, Smoothing};
use ik_core::behaviours::motion::Easing;
use ik_core::humanoid::HumanoidBone;

use crate::components::BoneRef;

/// A look-at chain on a humanoid character: the head (and the neck and spine, sharing the
/// turn; the eyes first) follows [`IkLookAt::target`]. See
/// [`ik_core::behaviours::look_at`] for the method. Angles in degrees.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::behaviours"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkLookAt {
    /// The entity looked at (`None`: back to the animation, smoothly).
    pub target: Option<Entity>,
    /// Blend weight over the animation, `[0, 1]`.
    pub weight: f32,
    /// Eye bones; empty: found by name under the head (`LeftEye`, `J_Adj_L_FaceEye`, …).
    pub eyes: Vec<BoneRef>,
    /// Head yaw limits toward the character's left and right, degrees.
    pub yaw_left: f32,
    /// See [`IkLookAt::yaw_left`].
    pub yaw_right: f32,
    /// Head pitch limits up and down, degrees.
    pub pitch_up: f32,
    /// See [`IkLookAt::pitch_up`].
    pub pitch_down: f32,
    /// Eye yaw limit (each side), degrees, relative to the head.
    pub eye_yaw: f32,
    /// Eye pitch limit (up and down), degrees.
    pub eye_pitch: f32,
    /// Largest head turning speed, degrees per second.
    pub max_speed: f32,
    /// The head's smooth time, seconds (0: none).
    pub smooth_time: f32,
    /// Largest eye speed, degrees per second.
    pub eye_max_speed: f32,
    /// The eyes' smooth time, seconds.
    pub eye_smooth_time: f32,
    /// Angle from the body's forward where a target starts fading back to the animation.
    pub fade_start: f32,
    /// Angle where it is fully faded (a target behind).
    pub fade_end: f32,
}

impl Default for IkLookAt {
    fn default() -> Self {
        let s = LookAtSettings::default();
        let d = f32::to_degrees;
        Self {
            target: None,
            weight: 1.0,
            eyes: Vec::new(),
            yaw_left: d(s.limits.yaw_left),
            yaw_right: d(s.limits.yaw_right),
            pitch_up: d(s.limits.pitch_up),
            pitch_down: d(s.limits.pitch_down),
            eye_yaw: d(s.eye_limits.yaw_left),
            eye_pitch: d(s.eye_limits.pitch_up),
            max_speed: d(s.smoothing.max_speed),
            smooth_time: s.smoothing.smooth_time,
            eye_max_speed: d(s.eye_smoothing.max_speed),
            eye_smooth_time: s.eye_smoothing.smooth_time,
            fade_start: d(s.fade_start),
            fade_end: d(s.fade_end),
        }
    }
}

impl IkLookAt {
    /// Looking at `target` with the default limits and smoothing.
    #[must_use]
    pub fn at(target: Entity) -> Self {
        Self {
            target: Some(target),
            ..Self::default()
        }
    }

    /// The ik-core settings.
    #[must_use]
    pub fn settings(&self) -> LookAtSettings {
        let r = f32::to_radians;
        LookAtSettings {
            limits: EllipticLimits::from_degrees(
                self.yaw_left,
                self.yaw_right,
                self.pitch_up,
                self.pitch_down,
            ),
            eye_limits: EllipticLimits::from_degrees(
                self.eye_yaw,
                self.eye_yaw,
                self.eye_pitch,
                self.eye_pitch,
            ),
            smoothing: Smoothing {
                max_speed: r(self.max_speed),
                smooth_time: self.smooth_time,
            },
            eye_smoothing: Smoothing {
                max_speed: r(self.eye_max_speed),
                smooth_time: self.eye_smooth_time,
            },
            fade_start: r(self.fade_start),
            fade_end: r(self.fade_end),
        }
    }
}

/// Aims a bone-local ray (a gun barrel, a flashlight, a finger) at [`IkAim::target`] by
/// turning the bones from [`IkAim::root`] down to [`IkAim::tip`]. See
/// [`ik_core::behaviours::aim`].
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::behaviours"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkAim {
    /// The entity aimed at.
    pub target: Option<Entity>,
    /// The chain's first bone (e.g. the chest).
    pub root: BoneRef,
    /// The bone holding the ray (e.g. the right hand, or a prop bone).
    pub tip: BoneRef,
    /// The ray's direction in the tip's local frame (or, with [`IkAim::model_space_axes`], in
    /// the character's space as the bones stand at set-up).
    pub axis: Vec3,
    /// The ray's origin (the muzzle) in the tip's local frame (or an offset from the tip's
    /// joint in the character's space, see [`IkAim::model_space_axes`]).
    pub origin: Vec3,
    /// An axis across the ray (the gun's top) that leans toward [`IkAim::pole`], in the same
    /// space as [`IkAim::axis`].
    pub pole_axis: Option<Vec3>,
    /// `axis`, `origin` and `pole_axis` are given in the character's space as the bones stand
    /// when the stage is set up (e.g. "forward" for a hand whose own axes are unknown), and
    /// converted to the tip's frame once.
    pub model_space_axes: bool,
    /// The pole direction in the character's model space (e.g. up).
    pub pole: Vec3,
    /// How much the pole turns the tip about the ray, `[0, 1]`.
    pub pole_weight: f32,
    /// Blend weight over the animation, `[0, 1]`.
    pub weight: f32,
}

impl Default for IkAim {
    fn default() -> Self {
        Self {
            target: None,
            root: HumanoidBone::Chest.into(),
            tip: HumanoidBone::RightHand.into(),
            axis: Vec3::Z,
            origin: Vec3::ZERO,
            pole_axis: None,
            model_space_axes: false,
            pole: Vec3::Y,
            pole_weight: 1.0,
            weight: 1.0,
        }
    }
}

/// Spreads the forearm twist of a humanoid character over its twist bones (Unreal
/// `lowerarm_twist_01_l`, Rigify `DEF-forearm.L.001`, `*Roll*`), and takes the upper arms' and
/// thighs' own twist back in their twist bones near the joint (`upperarm_twist_01_l`,
/// `thigh_twist_01_l`), after the stages before it.
/// A rig without twist bones is left unchanged. See [`ik_core::behaviours::twist`].
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::behaviours"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkTwist {
    /// Blend weight, `[0, 1]`.
    pub weight: f32,
}

impl Default for IkTwist {
    fn default() -> Self {
        Self { weight: 1.0 }
    }
}

/// An easing curve for [`IkReach`] (mirrors ik-core's [`Easing`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[type_path = "bevy_ik::behaviours"]
#[reflect(Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkEasing {
    /// Constant speed.
    Linear,
    /// `3t² − 2t³`.
    #[default]
    SmoothStep,
    /// `6t⁵ − 15t⁴ + 10t³`.
    SmootherStep,
    /// `(1 − cos πt) / 2`.
    SineInOut,
    /// Cubic in and out.
    CubicInOut,
}

impl From<IkEasing> for Easing {
    fn from(e: IkEasing) -> Self {
        match e {
            IkEasing::Linear => Self::Linear,
            IkEasing::SmoothStep => Self::SmoothStep,
            IkEasing::SmootherStep => Self::SmootherStep,
            IkEasing::SineInOut => Self::SineInOut,
            IkEasing::CubicInOut => Self::CubicInOut,
        }
    }
}

/// Reaching over time: this entity (any stage's target — a root entity, or a child such as an
/// [`IkHumanoid`](crate::IkHumanoid)'s own hand or foot target, moved in its parent's frame)
/// moves from where the animation puts [`IkReach::effector`] (an entity, a name or a humanoid
/// role: [`IkReach::by_role`]) to [`IkReach::target`] along a straight line
/// (or an arc around [`IkReach::arc_center`]) over [`IkReach::duration`] seconds (or at
/// [`IkReach::speed`]) with easing while [`IkReach::engaged`], and back when released;
/// [`IkReach::weight`] (read it, or let [`IkReach::fade_stage`] follow it) fades the same way.
/// See [`ik_core::behaviours::motion`].
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::behaviours"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkReach {
    /// The character whose animated (input) pose gives the start.
    pub character: Option<Entity>,
    /// The effector bone (the hand) of that character: an entity, a bone name, or a humanoid
    /// role (resolved through the character's [`IkHumanoidBones`](crate::IkHumanoidBones)).
    pub effector: Option<BoneRef>,
    /// Where to reach.
    pub target: Option<Entity>,
    /// Heading for the target (`false`: going back).
    pub engaged: bool,
    /// Seconds from start to target (used when `speed` is `None`).
    pub duration: f32,
    /// Average speed, units per second (overrides `duration`).
    pub speed: Option<f32>,
    /// The easing.
    pub easing: IkEasing,
    /// An entity the path arcs around (e.g. the chest); `None`: a straight line.
    pub arc_center: Option<Entity>,
    /// A stage entity (with an `IkLimb` or `IkCustom`) whose weight follows [`IkReach::weight`]
    /// (a stage of a behaviour component — `IkLookAt`, `IkAim`… — takes its weight from that
    /// component's `weight` instead: set that).
    pub fade_stage: Option<Entity>,
    /// Output: the eased phase (0 at the animation, 1 at the target).
    pub weight: f32,
    /// The linear phase (state).
    pub phase: f32,
}

impl IkReach {
    /// A reach of `character`'s `role` bone (e.g. [`HumanoidBone::RightHand`]) to `target`,
    /// engaged, with the default timing. Put it on the stage's target entity — for a humanoid,
    /// the target [`IkHumanoidTargets`](crate::IkHumanoidTargets) made for that hand.
    #[must_use]
    pub fn by_role(character: Entity, role: HumanoidBone, target: Entity) -> Self {
        Self {
            character: Some(character),
            effector: Some(BoneRef::Role(role)),
            target: Some(target),
            engaged: true,
            ..Self::default()
        }
    }
}

impl Default for IkReach {
    fn default() -> Self {
        Self {
            character: None,
            effector: None,
            target: None,
            engaged: false,
            duration: 0.6,
            speed: None,
            easing: IkEasing::SmoothStep,
            arc_center: None,
            fade_stage: None,
            weight: 0.0,
            phase: 0.0,
        }
    }
}
