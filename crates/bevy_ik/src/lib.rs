#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod balance;
pub mod components;
#[cfg(feature = "debug-draw")]
pub mod debug_draw;
pub mod error;
pub(crate) mod full_body;
pub mod humanoid;
mod limb;
mod pose_io;
pub mod rig;
mod setup;
mod solver;

pub use balance::{IkBalance, IkCenterOfMass};
pub use components::{BoneRef, IkDisabled, IkLimb, IkStatus};
#[cfg(feature = "debug-draw")]
pub use debug_draw::IkDebugDraw;
pub use error::IkError;
pub use humanoid::{IkHumanoid, IkHumanoidBones, IkHumanoidSolver, IkHumanoidTargets};
pub use ik_core;
pub use rig::{IkGoal, IkGoalKind, IkJointLimits, IkRig, IkRigSettings};

use bevy::app::{AnimationSystems, App, Plugin, PostUpdate};
use bevy::ecs::intern::Interned;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel, SystemSet};
use bevy::transform::TransformSystems;

/// The most used items: `use bevy_ik::prelude::*;`.
pub mod prelude {
    pub use crate::balance::{IkBalance, IkCenterOfMass};
    pub use crate::components::{BoneRef, IkDisabled, IkLimb, IkStatus};
    #[cfg(feature = "debug-draw")]
    pub use crate::debug_draw::IkDebugDraw;
    pub use crate::error::IkError;
    pub use crate::humanoid::{IkHumanoid, IkHumanoidBones, IkHumanoidSolver, IkHumanoidTargets};
    pub use crate::rig::{IkGoal, IkGoalKind, IkJointLimits, IkRig, IkRigSettings};
    pub use crate::{IkPlugin, IkSystems};
}

/// The system sets of [`IkPlugin`], run in this order in its schedule (`PostUpdate` by default).
///
/// Order your own systems against them: a system that moves targets must run before
/// [`IkSystems::Prepare`] (in `Update` it always does); a system that reads the solved pose's
/// `GlobalTransform` must run after `TransformSystems::Propagate`.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IkSystems {
    /// Finishes set-up (finds bones by name, builds the cached skeletons and chains when their
    /// description changed), then reads the bones' current local transforms (as animation left
    /// them) and the target and pole entities' current global transforms.
    Prepare,
    /// Solves every character in parallel on the gathered data; touches no `Transform`.
    Solve,
    /// Writes the solved local rotations (and a movable root's translation) back to the bones'
    /// `Transform`s with `set_if_neq`.
    Writeback,
}

/// Inverse kinematics for Bevy: target and pole entities drive the bones of characters.
///
/// Add it after `TransformPlugin` (part of `DefaultPlugins`), then put an [`IkLimb`] on an
/// entity.
///
/// ## Systems
///
/// All systems run in [`PostUpdate`] (or the schedule given to [`IkPlugin::in_schedule`]):
///
/// ```text
/// AnimationSystems              animation writes the bones' local Transforms
/// IkSystems::Prepare
///   set-up (only when needed)   map_humanoids, set_up_limbs, set_up_rigs: find bones by Name,
///                               build the cached core skeletons / chains / solvers
///   collect_limb_poses,         read the bones' current local Transforms and the targets'
///   collect_rig_poses           and poles' current global transforms (parallel)
///   set_balance_goals           support point between the feet targets (IkBalance on)
/// IkSystems::Solve              solve_limbs, solve_full_body (parallel over characters)
/// IkSystems::Writeback          write_limb_rotations, write_rig_pose (set_if_neq),
///                               measure_center_of_mass (IkBalance on: IkCenterOfMass)
/// TransformSystems::Propagate   Bevy computes GlobalTransform from the written locals
/// draw_ik_gizmos                (feature `debug-draw`) gizmos from the propagated transforms
/// ```
///
/// Targets and poles are read at their *current* global transform, computed from their own and
/// their ancestors' `Transform`s during [`IkSystems::Prepare`], so a target moved in `Update`
/// this frame is reached this frame (no one-frame lag through `GlobalTransform`).
///
/// Limbs and rigs are solved independently of each other against the animated pose: two
/// [`IkLimb`]s on the same character must not share bones, and a limb below a bone that an
/// [`IkRig`] moves sees that bone's animated (not solved) transform.
#[derive(Debug, Clone)]
pub struct IkPlugin {
    schedule: Interned<dyn ScheduleLabel>,
}

impl Default for IkPlugin {
    fn default() -> Self {
        Self {
            schedule: PostUpdate.intern(),
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
}

impl Plugin for IkPlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule;
        app.register_type::<BoneRef>()
            .register_type::<IkLimb>()
            .register_type::<IkDisabled>()
            .register_type::<IkStatus>()
            .register_type::<IkError>();
        app.configure_sets(
            schedule,
            (IkSystems::Prepare, IkSystems::Solve, IkSystems::Writeback)
                .chain()
                .after(AnimationSystems)
                .before(TransformSystems::Propagate),
        );
        setup::build(app, schedule);
        limb::build(app, schedule);
        humanoid::build(app, schedule);
        rig::build(app, schedule);
        full_body::build(app, schedule);
        balance::build(app, schedule);
        #[cfg(feature = "debug-draw")]
        debug_draw::build(app, schedule);
    }
}
