//! Generic Jacobian IK: [`IkRig`] lists goals (a bone reaching for a target entity, with a
//! weight, a priority level and an IK/FK blend). It is a stage of its character (the entity
//! holding it, or the one named by [`IkStageOf`](crate::IkStageOf)): the plugin builds one
//! ik-core [`JacobianSolver`] from the bones between the character root and the goal bones
//! and runs it in the character's stack. Goal targets, weights and blends, the rig weight and
//! the iteration budget and tolerances are read every frame; the goal set (bones, kinds,
//! priorities), the movable root, the limits and the posture gain are its structure.

use bevy::ecs::entity::Entity;
use bevy::math::{Quat, Vec3};
use ik_core::humanoid::{HumanoidLimits, HumanoidMap};
use ik_core::jacobian::{JacobianSolver, JointSpec, PostureReference, SolverSettings, TaskSpec};
use ik_core::limits::JointLimit;
use ik_core::stack::{AnyStage, JacobianStage};

use crate::character::Hierarchy;
use crate::components::BoneRef;
pub use crate::components::rig::{IkGoal, IkGoalKind, IkJointLimits, IkRig, IkRigSettings};
use crate::error::IkError;
use crate::kind::{
    IkBoneResolver, IkBuildContext, IkGatherContext, IkStageComponent, IkStageEntity,
    IkStageSummary,
};
use crate::pipeline::finite_weight;
use crate::pose_io::ModelTarget;
use crate::setup;

pub(crate) fn register(app: &mut bevy::app::App) {
    app.register_type::<IkRig>()
        .register_type::<IkGoal>()
        .register_type::<IkGoalKind>()
        .register_type::<IkRigSettings>()
        .register_type::<IkJointLimits>();
}

pub(crate) use state::{GoalTasks, RigKey, RigStage};

/// The rig kind's key and state (public types in a private module: named by the
/// [`IkStageComponent`] impl, not reachable from outside).
mod state {
    use super::{BoneRef, IkGoalKind, IkJointLimits, IkRig, ModelTarget};

    /// The structural part of an [`IkRig`]; a change here rebuilds the stage. Goal weights and
    /// blends, targets, the rig weight and the solver settings are per-frame parameters.
    #[derive(Debug, Clone, PartialEq)]
    pub struct RigKey {
        bones: Vec<(BoneRef, IkGoalKind, u8)>,
        movable_root: Option<BoneRef>,
        limits: IkJointLimits,
        posture_gain: u32,
    }

    impl RigKey {
        pub(crate) fn of(rig: &IkRig) -> Self {
            Self {
                bones: rig
                    .goals
                    .iter()
                    .map(|g| (g.bone.clone(), g.kind, g.priority))
                    .collect(),
                movable_root: rig.movable_root.clone(),
                limits: rig.limits,
                posture_gain: rig.settings.posture_gain.to_bits(),
            }
        }
    }

    /// Where a goal's rows are in the solver.
    #[derive(Debug, Clone, Copy)]
    pub struct GoalTasks {
        pub(crate) bone: usize,
        pub(crate) position: Option<usize>,
        pub(crate) rotation: Option<usize>,
    }

    /// Per-rig data of a character's Jacobian stage.
    #[derive(Debug)]
    pub struct RigStage {
        pub(crate) goal_tasks: Vec<GoalTasks>,
        /// This frame's model-space target per goal (`None`: goal off this frame).
        pub(crate) targets: Vec<Option<ModelTarget>>,
    }
}

/// Builds the Jacobian stage of `rig` on the character's skeleton; `bones` are the skeleton
/// indices of the goal bones, then of the movable root.
fn build_stage(
    rig: &IkRig,
    cx: &IkBuildContext<'_, '_, '_>,
    bones: &[usize],
) -> Result<(AnyStage, RigStage), IkError> {
    let (character, skeleton, entities, h) = (cx.character, cx.skeleton, cx.entities, cx.h);
    let (goal_bones, root_index) = if rig.movable_root.is_some() {
        let (g, r) = bones.split_at(bones.len() - 1);
        (g, r.first().copied())
    } else {
        (bones, None)
    };
    // Humanoid limits come from the full hierarchy (bone directions need the children).
    let limits = match rig.limits {
        IkJointLimits::Free => None,
        IkJointLimits::Humanoid => Some(humanoid_limits(character, h)?),
    };
    let limit_of = |e: Entity| {
        limits
            .as_ref()
            .and_then(|(full_entities, map, limits)| {
                let i = full_entities.iter().position(|&x| x == e)?;
                map.role_of(i).map(|role| limits.get(role))
            })
            .unwrap_or(JointLimit::Free)
    };
    // Joints: every bone between the frame (bone 0) and a goal bone or the movable root.
    let mut joint_bones: Vec<usize> = Vec::new();
    for &b in bones {
        let mut cur = Some(b);
        while let Some(c) = cur.filter(|&c| c != 0) {
            if !joint_bones.contains(&c) {
                joint_bones.push(c);
            }
            cur = skeleton.parent(c);
        }
    }
    joint_bones.sort_unstable();
    let joints = joint_bones
        .iter()
        .map(|&i| {
            if Some(i) == root_index {
                JointSpec::floating(i).with_stiffness(4.0)
            } else {
                JointSpec::ball(i).with_limit(limit_of(entities[i]))
            }
        })
        .collect();
    let mut tasks = Vec::new();
    let mut goal_tasks = Vec::new();
    for (goal, &bone) in rig.goals.iter().zip(goal_bones) {
        let level = goal.priority;
        let mut push = |t: TaskSpec| {
            tasks.push(t.at_level(level));
            Some(tasks.len() - 1)
        };
        let (position, rotation) = match goal.kind {
            IkGoalKind::Position => (push(TaskSpec::position(bone, Vec3::ZERO)), None),
            IkGoalKind::PositionRotation => (
                push(TaskSpec::position(bone, Vec3::ZERO)),
                push(TaskSpec::orientation(bone)),
            ),
            IkGoalKind::Rotation => (None, push(TaskSpec::orientation(bone))),
            IkGoalKind::LookAt { axis } => (push(TaskSpec::look_at(bone, axis)), None),
        };
        goal_tasks.push(GoalTasks {
            bone,
            position,
            rotation,
        });
    }
    if rig.settings.posture_gain > 0.0 {
        let lowest = rig.goals.iter().map(|g| g.priority).max().unwrap_or(0);
        tasks.push(
            TaskSpec::posture(PostureReference::Incoming, rig.settings.posture_gain)
                .at_level(lowest.saturating_add(1)),
        );
    }
    let solver = JacobianSolver::try_new(skeleton, joints, tasks, solver_settings(&rig.settings))
        .map_err(|e| IkError::InvalidSettings(e.into()))?;
    Ok((
        AnyStage::jacobian(JacobianStage::new(solver)),
        RigStage {
            targets: vec![None; goal_tasks.len()],
            goal_tasks,
        },
    ))
}

fn solver_settings(s: &IkRigSettings) -> SolverSettings {
    SolverSettings {
        max_iterations: s.max_iterations,
        position_tolerance: s.position_tolerance,
        angle_tolerance: s.angle_tolerance,
        ..SolverSettings::default()
    }
}

/// Maps the full hierarchy under `entity` as a humanoid and derives anatomical limits: the
/// roles an [`IkHumanoid`](crate::IkHumanoid) on `entity` mapped at set-up (a VRM file's
/// humanoid table, detached-feet ends), else by names and hierarchy.
fn humanoid_limits(
    entity: Entity,
    h: &Hierarchy<'_, '_>,
) -> Result<(Vec<Entity>, HumanoidMap, HumanoidLimits), IkError> {
    let (full, full_entities) =
        setup::hierarchy_skeleton(entity, &h.children, &h.names, &h.transforms)?;
    let map = match h
        .humanoid_map(entity, &full_entities)
        .filter(|m| m.validate(&full).is_ok())
    {
        Some(map) => map,
        None => {
            let (map, report) = HumanoidMap::from_skeleton(&full);
            if let Some(role) = report.missing_required.first() {
                return Err(IkError::MissingRole(*role));
            }
            map
        }
    };
    let limits =
        HumanoidLimits::anatomical(&full, &map).map_err(|e| IkError::InvalidChain(e.into()))?;
    Ok((full_entities, map, limits))
}

/// Writes this frame's goals (targets read now, blended from the stage's input pose by each
/// goal's `blend`), goal weights and solver settings into the stage.
fn gather(
    rig: &IkRig,
    data: &mut RigStage,
    stage: &mut JacobianStage,
    cx: &mut IkGatherContext<'_, '_, '_, '_>,
) -> Result<(), IkError> {
    for (slot, goal) in data.targets.iter_mut().zip(&rig.goals) {
        *slot = match goal.target {
            None => None,
            Some(t) => Some(cx.read(t, false)?),
        };
    }
    let (skeleton, buffer) = cx.parts();
    let settings = solver_settings(&rig.settings);
    if *stage.solver().settings() != settings {
        stage
            .set_settings(settings)
            .map_err(|e| IkError::InvalidSettings(e.into()))?;
    }
    for ((goal, tasks), target) in rig.goals.iter().zip(&data.goal_tasks).zip(&data.targets) {
        let blend = finite_weight(goal.blend);
        let animated = buffer.model_transform(skeleton, tasks.bone);
        let on = target.is_some() && blend > 0.0;
        let t = target.unwrap_or(ModelTarget {
            position: animated.translation,
            rotation: animated.rotation,
        });
        let point = animated.translation.lerp(t.position, blend);
        let rotation = animated.rotation.slerp(t.rotation, blend);
        let weight = if goal.weight.is_finite() {
            goal.weight.max(0.0)
        } else {
            0.0
        };
        for task in [tasks.position, tasks.rotation].into_iter().flatten() {
            let g = &mut stage.goals.tasks[task];
            g.enabled = on;
            g.weight = weight;
            g.point = if matches!(goal.kind, IkGoalKind::LookAt { .. }) {
                t.position
            } else {
                point
            };
            g.rotation = if rotation.is_finite() {
                rotation
            } else {
                Quat::IDENTITY
            };
        }
    }
    Ok(())
}

/// Per-goal residuals of the last solve, in goal order.
fn residuals(data: &RigStage, stage: &JacobianStage, out: &mut crate::character::Residuals) {
    out.clear();
    let residuals = stage.scratch().residuals();
    out.extend(data.goal_tasks.iter().map(|g| {
        g.position
            .or(g.rotation)
            .and_then(|t| residuals.get(t).copied())
            .unwrap_or(0.0)
    }));
}

impl IkStageComponent for IkRig {
    type Key = RigKey;
    type State = RigStage;

    fn key(&self) -> RigKey {
        RigKey::of(self)
    }

    /// The goal bones, then the movable root; all under the character.
    fn resolve(&self, r: &mut IkBoneResolver<'_, '_, '_>) -> Result<Vec<Entity>, IkError> {
        if self.goals.is_empty() {
            return Err(IkError::NoTarget);
        }
        let character = r.character();
        let mut bones = Vec::with_capacity(self.goals.len() + 1);
        for g in &self.goals {
            bones.push(r.find(&g.bone, character)?);
        }
        if let Some(root) = &self.movable_root {
            bones.push(r.find(root, character)?);
        }
        if bones.iter().any(|&b| r.chain(character, b).is_none()) {
            return Err(IkError::NotAChain);
        }
        Ok(bones)
    }

    fn build(
        &self,
        cx: &IkBuildContext<'_, '_, '_>,
        bones: &[usize],
    ) -> Result<(AnyStage, RigStage), IkError> {
        build_stage(self, cx, bones)
    }

    crate::kind::weight_field!();

    fn gather(
        &self,
        _entity: &IkStageEntity<'_, '_, '_>,
        stage: &mut AnyStage,
        state: &mut RigStage,
        cx: &mut IkGatherContext<'_, '_, '_, '_>,
    ) -> Result<(), IkError> {
        let Some(stage) = stage.get_mut::<JacobianStage>() else {
            return Err(IkError::StageTypeMismatch);
        };
        gather(self, state, stage, cx)
    }

    fn summarise(stage: &mut AnyStage, state: &RigStage, summary: &mut IkStageSummary<'_>) {
        if let Some(stage) = stage.get::<JacobianStage>() {
            residuals(state, stage, summary.residuals);
        }
    }
}
