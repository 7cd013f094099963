#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod balance;
pub mod behaviours;
pub mod character;
pub mod components;
#[cfg(feature = "debug-draw")]
pub mod debug_draw;
pub mod error;
pub mod grounding;
pub mod humanoid;
pub mod kind;
mod limb;
mod limb_batch;
mod pipeline;
mod pose_io;
pub mod rig;
pub mod secondary;
mod setup;
pub mod stage;
pub mod vr;
#[cfg(feature = "vrm")]
pub mod vrm;
#[cfg(feature = "vrm")]
pub mod vrm_spring;

pub use balance::{IkBalance, IkCenterOfMass};
pub use behaviours::{IkAim, IkEasing, IkLookAt, IkReach, IkTwist};
pub use character::IkCharacter;
pub use components::{
    BoneRef, IkDisabled, IkKeepGoals, IkLimb, IkLimbBatch, IkSolveTime, IkStatus,
};
#[cfg(feature = "debug-draw")]
pub use debug_draw::IkDebugDraw;
pub use error::{CoreError, IkError};
pub use grounding::{
    IkFootGround, IkFootState, IkGround, IkGroundHit, IkGroundSamples, IkGroundSource, IkGrounding,
    IkGroundingState, IkLeg,
};
pub use humanoid::{
    IkGrip, IkGripAnchor, IkGripHand, IkHumanoid, IkHumanoidBone, IkHumanoidBones,
    IkHumanoidMapping, IkHumanoidSolver, IkHumanoidTargets,
};
pub use ik_core;
pub use kind::{
    IkBoneResolver, IkBuildContext, IkGatherContext, IkStageAppExt, IkStageComponent,
    IkStageEntity, IkStageSummary,
};
pub use rig::{IkGoal, IkGoalKind, IkJointLimits, IkRig, IkRigSettings};
pub use secondary::{
    IkChain, IkChainMethod, IkColliderShape, IkCurveKind, IkSpline, IkSplineCurve, IkSpringChain,
    IkSpringCollider, IkSpringJoint, IkSpringReset, IkSpringTail, IkVelocityLimit,
};
pub use stage::{IkCustom, IkStageContext, IkStageInput, IkStageInputPlugin, IkStageOf, IkStages};
pub use vr::IkVrBody;

use bevy::app::{AnimationSystems, App, Plugin, PostUpdate};
use bevy::ecs::intern::Interned;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel, SystemSet};
use bevy::transform::TransformSystems;

/// The most used items: `use bevy_ik::prelude::*;`.
pub mod prelude {
    pub use crate::balance::{IkBalance, IkCenterOfMass};
    pub use crate::behaviours::{IkAim, IkEasing, IkLookAt, IkReach, IkTwist};
    pub use crate::character::IkCharacter;
    pub use crate::components::{
        BoneRef, IkDisabled, IkKeepGoals, IkLimb, IkLimbBatch, IkSolveTime, IkStatus,
    };
    #[cfg(feature = "debug-draw")]
    pub use crate::debug_draw::IkDebugDraw;
    pub use crate::error::{CoreError, IkError};
    pub use crate::grounding::{
        IkFootGround, IkFootState, IkGround, IkGroundHit, IkGroundSamples, IkGroundSource,
        IkGrounding, IkGroundingState, IkLeg,
    };
    pub use crate::humanoid::{
        IkGrip, IkGripAnchor, IkGripHand, IkHumanoid, IkHumanoidBone, IkHumanoidBones,
        IkHumanoidMapping, IkHumanoidSolver, IkHumanoidTargets,
    };
    pub use crate::kind::{IkStageAppExt, IkStageComponent};
    pub use crate::rig::{IkGoal, IkGoalKind, IkJointLimits, IkRig, IkRigSettings};
    pub use crate::secondary::{
        IkChain, IkChainMethod, IkColliderShape, IkCurveKind, IkSpline, IkSplineCurve,
        IkSpringChain, IkSpringCollider, IkSpringJoint, IkSpringReset, IkSpringTail,
        IkVelocityLimit,
    };
    pub use crate::stage::{
        IkCustom, IkStageContext, IkStageInput, IkStageInputPlugin, IkStageOf, IkStages,
    };
    pub use crate::vr::IkVrBody;
    pub use crate::{IkPlugin, IkSystems};
}

/// The system sets of [`IkPlugin`], run in this order in its schedule (`PostUpdate` by default).
///
/// Order your own systems against them: a system that moves targets must run before
/// [`IkSystems::Prepare`] (in `Update` it always does); a system that reads the solved pose's
/// `GlobalTransform` must run after `TransformSystems::Propagate`.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IkSystems {
    /// Finishes set-up where a structure changed (maps humanoids, resolves bones, builds each
    /// character's skeleton and stack).
    Prepare,
    /// Per character, in parallel: reads its input pose (its bones' local transforms, once)
    /// and its stages' goals (target and pole entities' current global transforms, weights,
    /// settings), then solves its stack, the stages in order; writes no `Transform`.
    Solve,
    /// Writes each character's output pose to its bones' `Transform`s with `set_if_neq` (the
    /// only `Transform` writer), then each stage's `IkStatus` where it changed.
    Writeback,
}

/// Inverse kinematics for Bevy: target and pole entities drive the bones of characters.
///
/// Add it after `TransformPlugin` (part of `DefaultPlugins`), then put an [`IkLimb`] on an
/// entity, or an [`IkHumanoid`] on a character's root.
///
/// ## Systems
///
/// All systems run in [`PostUpdate`] (or the schedule given to [`IkPlugin::in_schedule`]),
/// one chain, so no two of them touch the same data unordered:
///
/// ```text
/// AnimationSystems              animation writes the bones' local Transforms
/// IkSystems::Prepare
///   flag_new_bones              named entities appeared: incomplete set-ups retry
///   map_humanoids               IkHumanoid: map the bones by name, spawn targets (again,
///                               in place, when solver/arms/legs/poles/head change)
///   sync_humanoid_stage_weights the humanoid's weight into its limbs, when it changed
///   set_up_characters           only where a stage description changed structurally:
///                               resolve bones (entity, Name, role), build the character's
///                               skeleton and ik-core stack (a frame where nothing changed
///                               reads change ticks only, no character)
///   clear_rescan
///   IkStageInput systems        one per registered input type (`IkStageInputPlugin`):
///                               per-frame data from stage entities into the built stages
/// IkSystems::Solve
///   solve_characters            per character, in parallel, in one pass: read the input
///                               pose once (the remembered input where nothing rewrote a
///                               bone), the model frame, every stage's targets, weights and
///                               settings; then the stack's stages in order, each blended
///                               by its weight (a crowd's leading analytic limbs four per
///                               SIMD vector, see `IkPlugin::with_batched_limbs`); which
///                               bones to write is decided here; a character with
///                               `IkSolveTime` gets this task's time; the IkStatus /
///                               IkCenterOfMass of a stage on the character's own entity
///                               (a humanoid's full body), only where a value changed
/// IkSystems::Writeback          (the two side by side: both only read the characters)
///   write_bone_transforms       the only Transform writer: each character's changed bones
///                               (set_if_neq), input restored where IK stopped writing
///   publish_ik_status           IkStatus / IkCenterOfMass of the stages on entities of
///                               their own (IkStageOf), only where a value changed
/// TransformSystems::Propagate   Bevy computes GlobalTransform from the written locals
/// draw_ik_gizmos                (feature `debug-draw`) gizmos from the propagated transforms
/// ```
///
/// Targets and poles are read at their *current* global transform, computed from their own and
/// their ancestors' `Transform`s during [`IkSystems::Solve`], so a target moved in `Update`
/// this frame is reached this frame (no one-frame lag through `GlobalTransform`).
///
/// Stages of one character run in order on one pose: a limb stage after a stage that moved
/// the hips solves from the moved hips. Separate characters are independent; two characters
/// must not share bones.
#[derive(Debug, Clone)]
pub struct IkPlugin {
    schedule: Interned<dyn ScheduleLabel>,
    /// `None`: batched from [`IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS`] characters on.
    batch_limbs: Option<bool>,
}

impl Default for IkPlugin {
    fn default() -> Self {
        Self {
            schedule: PostUpdate.intern(),
            batch_limbs: None,
        }
    }
}

impl IkPlugin {
    /// The plugin with its defaults: systems in `PostUpdate`.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the IK systems in another schedule. It must also contain `AnimationSystems` (if
    /// animation is used) and `TransformSystems::Propagate` for the ordering to hold, as
    /// `PostUpdate` does.
    #[must_use]
    pub fn in_schedule(mut self, schedule: impl ScheduleLabel) -> Self {
        self.schedule = schedule.intern();
        self
    }

    /// From how many characters with batchable limbs on the plugin solves their limbs
    /// batched by default (see [`IkPlugin::with_batched_limbs`]).
    pub const BATCHED_LIMBS_MIN_CHARACTERS: usize = 16;

    /// Whether a character's leading independent analytic limbs (a humanoid's four, say) are
    /// solved together, four per SIMD vector, by ik-core's
    /// [`LimbBatch`](ik_core::stack::LimbBatch), or one by one; `true` or `false` here
    /// overrides the default rule.
    ///
    /// **Default:** batched once the app has at least
    /// [`IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS`] characters with a batchable run (at least
    /// two two-bone stages at the start of the stack, none reading a bone an earlier one
    /// writes, no twist bones between root, mid and tip; [`IkCharacter::batched_limbs`]),
    /// counted every frame; one by one below that. The two paths give the same results to
    /// rounding (within 1e-5 of the limb length) and the same weights, statuses and stage
    /// order; the one-by-one path is the scalar [`TwoBoneIk`](ik_core::analytic::TwoBoneIk)
    /// bit for bit, which a scene of a few characters keeps at a cost of microseconds. In a
    /// crowd of four-limb characters the batch takes about 40 % fewer instructions for the
    /// stack's solve than one by one, 15 % fewer for a character's whole task (gather, solve,
    /// summary); the `limb_batch` module docs have the figures.
    ///
    /// [`IkCharacter::batched_limbs`]: crate::IkCharacter::batched_limbs
    #[must_use]
    pub fn with_batched_limbs(mut self, on: bool) -> Self {
        self.batch_limbs = Some(on);
        self
    }
}

impl Plugin for IkPlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule;
        app.insert_resource(stage::IkSchedule(schedule));
        app.configure_sets(
            schedule,
            stage::StageInputSystems
                .in_set(IkSystems::Prepare)
                .after(setup::SetupSystems),
        );
        app.init_resource::<character::BatchableCharacters>()
            .init_resource::<kind::IkStageKinds>()
            .init_resource::<kind::StageChanges>();
        // The built-in stage kinds, registered as a user's are; the order is their precedence
        // on an entity carrying several (see `kind`).
        app.register_ik_stage::<IkHumanoid>()
            .register_ik_stage::<IkRig>()
            .register_ik_stage::<IkLimb>()
            .register_ik_stage::<IkLimbBatch>()
            .register_ik_stage::<IkCustom>();
        kind::watch_stage_component::<IkHumanoidTargets>(app);
        app.configure_sets(
            schedule,
            kind::StageChangeSystems
                .in_set(setup::SetupSystems)
                .after(humanoid::sync_humanoid_stage_weights)
                .before(character::set_up_characters),
        );
        app.insert_resource(pipeline::IkPipelineSettings {
            batch_limbs: self.batch_limbs,
        });
        app.register_type::<BoneRef>()
            .register_type::<IkLimb>()
            .register_type::<IkLimbBatch>()
            .register_type::<IkDisabled>()
            .register_type::<IkStatus>()
            .register_type::<IkSolveTime>()
            .register_type::<IkKeepGoals>()
            .register_type::<IkError>()
            .register_type::<IkStageOf>()
            .register_type::<IkHumanoidMapping>()
            .register_type::<IkStages>();
        app.configure_sets(
            schedule,
            (IkSystems::Prepare, IkSystems::Solve, IkSystems::Writeback)
                .chain()
                .after(AnimationSystems)
                .before(TransformSystems::Propagate),
        );
        setup::build(app, schedule);
        humanoid::register(app);
        rig::register(app);
        balance::register(app);
        grounding::register(app, schedule);
        behaviours::build(app, schedule);
        secondary::build(app, schedule);
        #[cfg(feature = "vrm")]
        vrm_spring::build(app, schedule);
        vr::register(app);
        app.add_systems(
            schedule,
            (
                (
                    vr::add_vr_stages,
                    setup::flag_new_bones,
                    humanoid::map_humanoids,
                    humanoid::sync_humanoid_stage_weights,
                    character::set_up_characters,
                    setup::clear_rescan,
                )
                    .chain()
                    .in_set(setup::SetupSystems),
                pipeline::solve_characters.in_set(IkSystems::Solve),
                // Both read the characters only: they run side by side.
                (pipeline::write_bone_transforms, pipeline::publish_ik_status)
                    .in_set(IkSystems::Writeback),
            )
                .chain(),
        );
        #[cfg(feature = "debug-draw")]
        debug_draw::build(app, schedule);
    }

    fn finish(&self, app: &mut App) {
        // `.vrm` files and VRM humanoid tables (after `GltfPlugin` made its loader).
        #[cfg(feature = "vrm")]
        vrm::finish(app);
        #[cfg(not(feature = "vrm"))]
        let _ = app;
    }
}
