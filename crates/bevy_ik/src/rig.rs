//! Full-body IK: [`IkRig`] on a character's root entity lists goals (a bone reaching for a
//! target entity, with a weight, a priority level and an IK/FK blend); the plugin builds one
//! ik-core [`JacobianSolver`] per character from the bones between the root and the goal bones,
//! and solves all characters in parallel every frame.

use bevy::app::App;
use bevy::ecs::change_detection::{DetectChanges, DetectChangesMut, Ref};
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::{ChildOf, Children};
use bevy::ecs::intern::Interned;
use bevy::ecs::name::Name;
use bevy::ecs::query::Without;
use bevy::ecs::reflect::ReflectComponent;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel};
use bevy::ecs::system::{Query, Res};
use bevy::math::{Quat, Vec3};
use bevy::reflect::prelude::*;
use bevy::transform::components::Transform;
use bevy::transform::helper::TransformHelper;
use ik_core::humanoid::{HumanoidLimits, HumanoidMap};
use ik_core::jacobian::{
    Goals, JacobianScratch, JacobianSolver, JointSpec, PostureReference, SolverSettings, TaskSpec,
};
use ik_core::limits::JointLimit;
use ik_core::{BoneTransform, Pose, Skeleton};

use crate::IkSystems;
use crate::components::{BoneRef, IkDisabled, IkStatus};
use crate::error::IkError;
use crate::limb::{finite_weight, record_problem, warn_once};
use crate::pose_io::{self, ModelTarget, TargetProblem};
use crate::setup::{self, IkRescan, SetupSystems};

pub(crate) fn build(app: &mut App, schedule: Interned<dyn ScheduleLabel>) {
    app.register_type::<IkRig>()
        .register_type::<IkGoal>()
        .register_type::<IkGoalKind>()
        .register_type::<IkRigSettings>()
        .register_type::<IkJointLimits>();
    app.add_systems(
        schedule,
        (
            set_up_rigs
                .in_set(SetupSystems)
                .after(crate::humanoid::map_humanoids)
                .before(setup::clear_rescan),
            collect_rig_poses
                .in_set(IkSystems::Prepare)
                .after(SetupSystems),
            solve_full_body.in_set(IkSystems::Solve),
            write_rig_pose.in_set(IkSystems::Writeback),
        ),
    );
}

/// What a goal constrains.
#[derive(Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
    /// IK/FK blend of this goal: the effective target is blended from the animated bone's
    /// pose (0) to the target (1).
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

    /// Sets the priority level (0 = highest).
    #[must_use]
    pub fn with_priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the weight within the level.
    #[must_use]
    pub fn with_weight(mut self, weight: f32) -> Self {
        self.weight = weight;
        self
    }

    /// Sets the IK/FK blend.
    #[must_use]
    pub fn with_blend(mut self, blend: f32) -> Self {
        self.blend = blend;
        self
    }
}

/// Joint limits of an [`IkRig`]'s joints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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

/// A full-body IK rig: put it on the character's root entity (the entity above the skeleton,
/// e.g. the `SceneRoot`; it never moves itself). Every bone between it and a goal bone becomes a
/// ball joint; [`IkRig::movable_root`] (the hips, typically) may also translate.
///
/// The solved pose is blended with the animated one by [`IkRig::weight`] and per goal by
/// [`IkGoal::blend`].
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
#[require(IkStatus, RigCache)]
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

    /// Lets `bone` translate (a movable root, typically the hips).
    #[must_use]
    pub fn with_movable_root(mut self, bone: impl Into<BoneRef>) -> Self {
        self.movable_root = Some(bone.into());
        self
    }

    /// Sets the joint limits.
    #[must_use]
    pub fn with_limits(mut self, limits: IkJointLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the solver settings.
    #[must_use]
    pub fn with_settings(mut self, settings: IkRigSettings) -> Self {
        self.settings = settings;
        self
    }
}

/// The structural part of an [`IkRig`]; a change here rebuilds the cached solver.
#[derive(Debug, Clone, PartialEq)]
struct RigKey {
    bones: Vec<(BoneRef, IkGoalKind, u8, u32)>,
    movable_root: Option<BoneRef>,
    limits: IkJointLimits,
    settings: IkRigSettings,
}

impl RigKey {
    fn of(rig: &IkRig) -> Self {
        Self {
            bones: rig
                .goals
                .iter()
                .map(|g| (g.bone.clone(), g.kind, g.priority, g.weight.to_bits()))
                .collect(),
            movable_root: rig.movable_root.clone(),
            limits: rig.limits,
            settings: rig.settings,
        }
    }
}

/// Where a goal's rows are in the solver.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GoalTasks {
    pub(crate) bone: usize,
    position: Option<usize>,
    rotation: Option<usize>,
}

#[derive(Debug)]
pub(crate) struct RigData {
    pub(crate) entities: Vec<Entity>,
    /// The rig entity: its global transform is the model space.
    pub(crate) frame: Entity,
    pub(crate) skeleton: Skeleton,
    pub(crate) solver: JacobianSolver,
    pub(crate) goals: Goals,
    pub(crate) scratch: JacobianScratch,
    pub(crate) goal_tasks: Vec<GoalTasks>,
    /// Bones the solver may change (joint bones), and whether each may translate.
    pub(crate) written: Vec<(usize, bool)>,
    pub(crate) input: Pose,
    pub(crate) solved: Pose,
    pub(crate) model: Vec<BoneTransform>,
    /// This frame's model-space target per goal (`None`: goal off this frame).
    pub(crate) targets: Vec<Option<ModelTarget>>,
    /// Whether the solved pose is written (false at weight 0: the animation is left as is).
    pub(crate) write: bool,
}

/// Per-rig state (cache and scratch). Internal.
#[derive(Component, Debug)]
pub(crate) struct RigCache {
    key: Option<RigKey>,
    data: Option<RigData>,
    setup_error: Option<IkError>,
    /// `Err(None)`: not set up (the set-up problem is in the status already).
    frame: Result<(), Option<IkError>>,
    write: bool,
    warned: Vec<IkError>,
}

impl RigCache {
    /// The set-up rig, if any (for debug drawing).
    #[cfg_attr(not(feature = "debug-draw"), allow(dead_code))]
    pub(crate) fn data(&self) -> Option<&RigData> {
        self.data.as_ref()
    }
}

impl Default for RigCache {
    fn default() -> Self {
        Self {
            key: None,
            data: None,
            setup_error: None,
            frame: Err(None),
            write: false,
            warned: Vec::new(),
        }
    }
}

fn set_up_rigs(
    mut rigs: Query<(Entity, Ref<IkRig>, &mut RigCache, &mut IkStatus)>,
    rescan: Res<IkRescan>,
    children: Query<&Children>,
    parents: Query<&ChildOf>,
    names: Query<&Name>,
    transforms: Query<&Transform>,
) {
    for (entity, rig, mut cache, mut status) in &mut rigs {
        let key = RigKey::of(&rig);
        let changed = rig.is_changed() && cache.key.as_ref() != Some(&key);
        let retry = cache.data.is_none() && (rescan.0 || cache.key.is_none());
        if !(changed || retry) {
            continue;
        }
        let cache = &mut *cache;
        if changed {
            cache.warned.clear();
        }
        cache.key = Some(key);
        cache.data = None;
        match build_rig(entity, &rig, &children, &parents, &names, &transforms) {
            Ok(data) => {
                cache.data = Some(data);
                cache.setup_error = None;
                status.ready = true;
                status.last_error = None;
            }
            Err(err) => {
                warn_once(&mut cache.warned, entity, &err);
                status.ready = false;
                status.solved = false;
                status.last_error = Some(err.clone());
                cache.setup_error = Some(err);
            }
        }
    }
}

fn build_rig(
    entity: Entity,
    rig: &IkRig,
    children: &Query<&Children>,
    parents: &Query<&ChildOf>,
    names: &Query<&Name>,
    transforms: &Query<&Transform>,
) -> Result<RigData, IkError> {
    if rig.goals.is_empty() {
        return Err(IkError::NoTarget);
    }
    // Goal bones and the movable root, as entities.
    let goal_entities = rig
        .goals
        .iter()
        .map(|g| setup::find_bone(&g.bone, entity, children, names))
        .collect::<Result<Vec<_>, _>>()?;
    let root_entity = rig
        .movable_root
        .as_ref()
        .map(|b| setup::find_bone(b, entity, children, names))
        .transpose()?;
    // The bones: the rig entity and every ancestor of a goal bone (or the movable root) below
    // it, parents first (ordered by depth, which keeps parents before children).
    let mut entities = vec![entity];
    let mut depth = vec![0usize];
    for &tip in goal_entities.iter().chain(root_entity.as_ref()) {
        let path = setup::chain_path(entity, tip, parents).ok_or(IkError::NotAChain)?;
        for (d, &e) in path.iter().enumerate().skip(1) {
            if !entities.contains(&e) {
                entities.push(e);
                depth.push(d);
            }
        }
    }
    let mut order: Vec<usize> = (0..entities.len()).collect();
    order.sort_by_key(|&i| (depth[i], i));
    let entities: Vec<Entity> = order.iter().map(|&i| entities[i]).collect();
    let index_of = |e: Entity| entities.iter().position(|&x| x == e);
    let mut bones = Vec::with_capacity(entities.len());
    for (i, &e) in entities.iter().enumerate() {
        let t = transforms
            .get(e)
            .map_err(|_| IkError::MissingBoneEntity(e))?;
        let parent = if i == 0 {
            None
        } else {
            parents.get(e).ok().and_then(|c| index_of(c.parent()))
        };
        // Model space is the rig entity's own frame: bone 0 is the identity there (so the
        // solver's length scale and precision do not depend on where the character stands).
        let t = if i == 0 { &Transform::IDENTITY } else { t };
        bones.push(pose_io::bone_from_transform(
            setup::bone_name(e, names),
            parent,
            t,
        ));
    }
    let skeleton = Skeleton::try_new(bones).map_err(|e| IkError::InvalidChain(e.to_string()))?;

    // Humanoid limits come from the full hierarchy (bone directions need the children).
    let limits = match rig.limits {
        IkJointLimits::Free => None,
        IkJointLimits::Humanoid => Some(humanoid_limits(entity, children, names, transforms)?),
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
    let root_index = root_entity.and_then(index_of);
    let mut joints = Vec::new();
    let mut written = Vec::new();
    for (i, &e) in entities.iter().enumerate().skip(1) {
        let spec = if Some(i) == root_index {
            JointSpec::floating(i).with_stiffness(4.0)
        } else {
            JointSpec::ball(i).with_limit(limit_of(e))
        };
        joints.push(spec);
        written.push((i, Some(i) == root_index));
    }
    let mut tasks = Vec::new();
    let mut goal_tasks = Vec::new();
    for (goal, &e) in rig.goals.iter().zip(&goal_entities) {
        let bone = index_of(e).ok_or(IkError::NotAChain)?;
        let level = goal.priority;
        let weight = if goal.weight.is_finite() {
            goal.weight.max(0.0)
        } else {
            0.0
        };
        let mut push = |t: TaskSpec| {
            tasks.push(t.at_level(level).with_weight(weight));
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
    let settings = SolverSettings {
        max_iterations: rig.settings.max_iterations,
        position_tolerance: rig.settings.position_tolerance,
        angle_tolerance: rig.settings.angle_tolerance,
        ..SolverSettings::default()
    };
    let solver = JacobianSolver::try_new(&skeleton, joints, tasks, settings)
        .map_err(|e| IkError::InvalidSettings(e.to_string()))?;
    let goals = solver.goals();
    let scratch = solver.scratch();
    let input = skeleton.rest_pose();
    let mut model = Vec::with_capacity(skeleton.len());
    skeleton.model_transforms_into(&input, &mut model);
    Ok(RigData {
        frame: entity,
        solved: input.clone(),
        input,
        model,
        targets: vec![None; goal_tasks.len()],
        entities,
        skeleton,
        solver,
        goals,
        scratch,
        goal_tasks,
        written,
        write: false,
    })
}

/// Maps the full hierarchy under `entity` as a humanoid and derives anatomical limits.
fn humanoid_limits(
    entity: Entity,
    children: &Query<&Children>,
    names: &Query<&Name>,
    transforms: &Query<&Transform>,
) -> Result<(Vec<Entity>, HumanoidMap, HumanoidLimits), IkError> {
    let (full, full_entities) = setup::hierarchy_skeleton(entity, children, names, transforms)?;
    let (map, report) = HumanoidMap::from_skeleton(&full);
    if let Some(role) = report.missing_required.first() {
        return Err(IkError::MissingBone(role.to_string()));
    }
    let limits = HumanoidLimits::anatomical(&full, &map)
        .map_err(|e| IkError::InvalidChain(e.to_string()))?;
    Ok((full_entities, map, limits))
}

fn collect_rig_poses(
    mut rigs: Query<(&IkRig, &mut RigCache), Without<IkDisabled>>,
    transforms: Query<&Transform>,
    helper: TransformHelper,
) {
    rigs.par_iter_mut().for_each(|(rig, mut cache)| {
        let cache = &mut *cache;
        cache.write = false;
        cache.frame = match (&cache.setup_error, cache.data.as_mut()) {
            (None, Some(data)) => gather(rig, data, &transforms, &helper).map_err(Some),
            _ => Err(None),
        };
    });
}

fn gather(
    rig: &IkRig,
    data: &mut RigData,
    transforms: &Query<&Transform>,
    helper: &TransformHelper,
) -> Result<(), IkError> {
    // Bone 0 (the rig entity) stays the identity: model space is its global frame.
    pose_io::read_pose(transforms, &data.entities[1..], &mut data.input, 1)?;
    let model = pose_io::model_space(helper, Some(data.frame))?;
    for (slot, goal) in data.targets.iter_mut().zip(&rig.goals) {
        *slot = match goal.target {
            None => None,
            Some(t) => Some(pose_io::target_in_model_space(helper, &model, t).map_err(
                |p| match p {
                    TargetProblem::Missing => IkError::MissingTarget(t),
                    TargetProblem::NonFinite => IkError::NonFiniteTarget(t),
                },
            )?),
        };
    }
    Ok(())
}

fn solve_full_body(
    mut rigs: Query<(Entity, &IkRig, &mut RigCache, &mut IkStatus), Without<IkDisabled>>,
) {
    rigs.par_iter_mut()
        .for_each(|(entity, rig, mut cache, mut status)| {
            let cache = &mut *cache;
            let outcome = match (&cache.frame, cache.data.as_mut()) {
                (Ok(()), Some(data)) => solve_one(rig, data).map_err(Some),
                (Err(err), _) => Err(err.clone()),
                (Ok(()), None) => Err(None),
            };
            match outcome {
                Ok(report) => {
                    cache.write = true;
                    let status = &mut *status;
                    status.ready = true;
                    status.solved = true;
                    status.converged = report.converged;
                    status.iterations = report.iterations;
                    status.position_residual = report.max_position_residual;
                    status.rotation_residual = report.max_angle_residual;
                    if let Some(data) = cache.data.as_ref() {
                        status.residuals.clear();
                        let residuals = data.scratch.residuals();
                        status.residuals.extend(data.goal_tasks.iter().map(|g| {
                            g.position
                                .or(g.rotation)
                                .and_then(|t| residuals.get(t).copied())
                                .unwrap_or(0.0)
                        }));
                    }
                    if status.last_error.is_some() {
                        status.last_error = None;
                    }
                }
                Err(err) => {
                    cache.write = false;
                    record_problem(&mut cache.warned, entity, &mut status, err);
                }
            }
        });
}

/// Solver outcome for the status.
struct RigOutcome {
    converged: bool,
    iterations: u32,
    max_position_residual: f32,
    max_angle_residual: f32,
}

fn solve_one(rig: &IkRig, data: &mut RigData) -> Result<RigOutcome, IkError> {
    // The animated end effectors, for the per-goal blends.
    data.skeleton
        .model_transforms_into(&data.input, &mut data.model);
    for ((goal, tasks), target) in rig.goals.iter().zip(&data.goal_tasks).zip(&data.targets) {
        let blend = finite_weight(goal.blend);
        let animated = data.model[tasks.bone];
        let on = target.is_some() && blend > 0.0;
        let t = target.unwrap_or(ModelTarget {
            position: animated.translation,
            rotation: animated.rotation,
        });
        let point = animated.translation.lerp(t.position, blend);
        let rotation = animated.rotation.slerp(t.rotation, blend);
        for task in [tasks.position, tasks.rotation].into_iter().flatten() {
            let g = &mut data.goals.tasks[task];
            g.enabled = on;
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
    data.solved.copy_from(&data.input);
    let report = data
        .solver
        .solve(
            &data.skeleton,
            &mut data.solved,
            &data.goals,
            &mut data.scratch,
        )
        .map_err(|e| IkError::Solver(e.to_string()))?;
    let weight = finite_weight(rig.weight);
    data.write = weight > 0.0;
    if data.write && weight < 1.0 {
        for &(i, _) in &data.written {
            data.solved.rotations[i] =
                data.input.rotations[i].slerp(data.solved.rotations[i], weight);
            data.solved.translations[i] =
                data.input.translations[i].lerp(data.solved.translations[i], weight);
        }
    }
    Ok(RigOutcome {
        converged: report.converged,
        iterations: report.iterations,
        max_position_residual: report.max_position_residual,
        max_angle_residual: report.max_angle_residual,
    })
}

fn write_rig_pose(
    rigs: Query<&RigCache, Without<IkDisabled>>,
    mut transforms: Query<&mut Transform>,
) {
    for cache in &rigs {
        let Some(data) = cache.data.as_ref().filter(|d| cache.write && d.write) else {
            continue;
        };
        for &(i, translates) in &data.written {
            if let Ok(mut t) = transforms.get_mut(data.entities[i]) {
                let solved = Transform {
                    rotation: data.solved.rotations[i],
                    translation: if translates {
                        data.solved.translations[i]
                    } else {
                        t.translation
                    },
                    ..*t
                };
                t.set_if_neq(solved);
            }
        }
    }
}
