//! The components of [`crate::rig`] (the data layer: pure data, no systems), re-exported
//! there; their reflected type paths stay `bevy_ik::rig::…`.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::reflect::ReflectComponent;
use bevy::math::Vec3;
use bevy::reflect::prelude::*;
use ik_core::jacobian::SolverSettings;

use crate::components::BoneRef;

/// What a goal constrains.
#[derive(Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[type_path = "bevy_ik::rig"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkGoalKind {
    /// The bone's origin reaches the target's position.
    #[default]
    Position,
    /// The bone's origin reaches the target's position and the bone takes its rotation.
    PositionRotation,
    /// The bone takes the target's rotation only.
    Rotation,
    /// The bone turns so that `axis` (in the bone's local frame, e.g. the head's forward axis)
    /// points at the target's position.
    LookAt {
        /// The aiming axis in the bone's local frame.
        axis: Vec3,
    },
}

/// One goal of an [`IkRig`].
#[derive(Debug, Clone, PartialEq, Reflect)]
#[type_path = "bevy_ik::rig"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkGoal {
    /// The bone that reaches (hand, foot, head, hips...).
    pub bone: BoneRef,
    /// The target entity (its current global transform is used). `None` disables the goal.
    pub target: Option<Entity>,
    /// What is constrained.
    pub kind: IkGoalKind,
    /// Weight of the goal within its priority level (relative to the other goals there).
    pub weight: f32,
    /// Priority level, 0 = highest: a lower level only uses the freedom the higher ones leave.
    pub priority: u8,
    /// IK/FK blend of this goal: the effective target is blended from the bone's pose in the
    /// character's input (animated) pose (0) to the target (1). (The rig's
    /// [`IkRig::weight`] blends the rig stage's whole output over the pose it received.)
    pub blend: f32,
}

impl Default for IkGoal {
    fn default() -> Self {
        Self {
            bone: BoneRef::default(),
            target: None,
            kind: IkGoalKind::Position,
            weight: 1.0,
            priority: 0,
            blend: 1.0,
        }
    }
}

impl IkGoal {
    /// A position goal: `bone` reaches `target`.
    #[must_use]
    pub fn position(bone: impl Into<BoneRef>, target: Entity) -> Self {
        Self {
            bone: bone.into(),
            target: Some(target),
            ..Self::default()
        }
    }

    /// A position-and-rotation goal.
    #[must_use]
    pub fn pose(bone: impl Into<BoneRef>, target: Entity) -> Self {
        Self {
            kind: IkGoalKind::PositionRotation,
            ..Self::position(bone, target)
        }
    }

    /// A look-at goal: the bone's local `axis` points at `target`.
    #[must_use]
    pub fn look_at(bone: impl Into<BoneRef>, axis: Vec3, target: Entity) -> Self {
        Self {
            kind: IkGoalKind::LookAt { axis },
            ..Self::position(bone, target)
        }
    }

    builder_setters! {
        /// Sets the priority level (0 = highest).
        with_priority(priority: u8) => priority = priority;
        /// Sets the weight within the level.
        with_weight(weight: f32) => weight = weight;
        /// Sets the IK/FK blend.
        with_blend(blend: f32) => blend = blend;
    }
}

/// Joint limits of an [`IkRig`]'s joints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[type_path = "bevy_ik::rig"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkJointLimits {
    /// Every joint is a free ball joint.
    #[default]
    Free,
    /// Recognise the rig as a humanoid (by bone names) and use ik-core's anatomical limits for
    /// the mapped bones (free where unmapped).
    Humanoid,
}

/// Iteration budget and tolerances of the full-body solver.
#[derive(Debug, Clone, Copy, PartialEq, Reflect)]
#[type_path = "bevy_ik::rig"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkRigSettings {
    /// Most solver iterations per frame.
    pub max_iterations: u32,
    /// Position tolerance, model units.
    pub position_tolerance: f32,
    /// Angle tolerance, radians.
    pub angle_tolerance: f32,
    /// Gain of the null-space term pulling toward the animated pose (0 = off): keeps the
    /// animation's style in the freedom the goals leave. Off by default: with it the solver
    /// keeps iterating until the posture settles, which costs most of the iteration budget.
    pub posture_gain: f32,
}

impl Default for IkRigSettings {
    fn default() -> Self {
        let core = SolverSettings::default();
        Self {
            max_iterations: 16,
            position_tolerance: core.position_tolerance,
            angle_tolerance: core.angle_tolerance,
            posture_gain: 0.0,
        }
    }
}

/// A Jacobian IK rig: put it on the character's root entity (the entity above the skeleton,
/// e.g. the `WorldAssetRoot`; it never moves itself), or on a stage entity with
/// [`IkStageOf(root)`](crate::IkStageOf). Every bone between the root and a goal bone becomes a
/// ball joint; [`IkRig::movable_root`] (the hips, typically) may also translate.
///
/// The solved pose is blended with the animated one by [`IkRig::weight`] and per goal by
/// [`IkGoal::blend`].
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[type_path = "bevy_ik::rig"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkRig {
    /// The goals, in priority order within a level.
    pub goals: Vec<IkGoal>,
    /// A bone that may also translate (the hips), or `None` for a rooted rig.
    pub movable_root: Option<BoneRef>,
    /// Joint limits.
    pub limits: IkJointLimits,
    /// Solver settings.
    pub settings: IkRigSettings,
    /// IK/FK blend of the whole rig: 1 = solved, 0 = animated.
    pub weight: f32,
}

impl Default for IkRig {
    fn default() -> Self {
        Self {
            goals: Vec::new(),
            movable_root: None,
            limits: IkJointLimits::Free,
            settings: IkRigSettings::default(),
            weight: 1.0,
        }
    }
}

impl IkRig {
    /// A rig with these goals and default settings.
    #[must_use]
    pub fn new(goals: impl IntoIterator<Item = IkGoal>) -> Self {
        Self {
            goals: goals.into_iter().collect(),
            ..Self::default()
        }
    }

    builder_setters! {
        /// Lets `bone` translate (a movable root, typically the hips).
        with_movable_root(bone: impl Into<BoneRef>) => movable_root = Some(bone.into());
        /// Sets the joint limits.
        with_limits(limits: IkJointLimits) => limits = limits;
        /// Sets the solver settings.
        with_settings(settings: IkRigSettings) => settings = settings;
    }
}
