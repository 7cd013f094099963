//! The analytic limb pipeline: set up [`IkLimb`]s (find bones, build and cache the core chain),
//! gather their pose and target each frame, solve them in parallel, write the rotations back.

use bevy::app::App;
use bevy::ecs::change_detection::{DetectChanges, DetectChangesMut, Mut, Ref};
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::{ChildOf, Children};
use bevy::ecs::intern::Interned;
use bevy::ecs::name::Name;
use bevy::ecs::query::Without;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel};
use bevy::ecs::system::{Query, ResMut};
use bevy::log::warn;
use bevy::math::Vec3;
use bevy::transform::components::Transform;
use bevy::transform::helper::TransformHelper;
use ik_core::analytic::LimbSettings;
use ik_core::{Pose, Skeleton};

use crate::IkSystems;
use crate::components::{BoneRef, IkDisabled, IkLimb, IkStatus};
use crate::error::IkError;
use crate::pose_io::{self, ModelTarget, TargetProblem};
use crate::setup::{self, IkRescan, SetupSystems};
use crate::solver::{LimbInput, LimbSolver};

pub(crate) fn build(app: &mut App, schedule: Interned<dyn ScheduleLabel>) {
    app.add_systems(
        schedule,
        (
            set_up_limbs
                .in_set(SetupSystems)
                .before(setup::clear_rescan),
            collect_limb_poses
                .in_set(IkSystems::Prepare)
                .after(SetupSystems),
            solve_limbs.in_set(IkSystems::Solve),
            write_limb_rotations.in_set(IkSystems::Writeback),
        ),
    );
}

/// What a limb's cache was built from; a different description means a rebuild.
#[derive(Debug, Clone, PartialEq)]
struct LimbKey {
    root: BoneRef,
    mid: BoneRef,
    tip: BoneRef,
    hierarchy: Entity,
}

/// The cached chain of a set-up limb.
#[derive(Debug)]
struct LimbChain {
    /// Bone entities from the limb root down to the tip, parallel to `skeleton`'s bones.
    entities: Vec<Entity>,
    /// The root bone's parent: its global transform is the model space.
    parent: Option<Entity>,
    /// The chain as a core skeleton (rest = transforms at set-up).
    skeleton: Skeleton,
    solver: LimbSolver,
    /// The animated pose gathered this frame.
    input: Pose,
    /// The solved (and blended) pose.
    solved: Pose,
    /// Whether `solved` is written (false at weight 0: the animation is left as is).
    write: bool,
}

/// Per-limb state the plugin keeps between frames (cache and scratch). Internal.
#[derive(Component, Debug)]
pub(crate) struct LimbCache {
    key: Option<LimbKey>,
    chain: Option<LimbChain>,
    /// The set-up problem, if set-up failed (retried when bones may have appeared).
    setup_error: Option<IkError>,
    /// This frame's gathered goal (or the problem that prevents solving).
    /// `Err(None)`: not set up (the set-up problem is in the status already).
    frame: Result<FrameGoal, Option<IkError>>,
    /// Whether `chain.solved` holds a pose to write this frame.
    write: bool,
    /// Problems already logged (each is logged once).
    warned: Vec<IkError>,
}

impl LimbCache {
    /// The chain's bone entities, root first, once set up (for debug drawing).
    #[cfg_attr(not(feature = "debug-draw"), allow(dead_code))]
    pub(crate) fn chain_entities(&self) -> Option<&[Entity]> {
        self.chain.as_ref().map(|c| c.entities.as_slice())
    }
}

impl Default for LimbCache {
    fn default() -> Self {
        Self {
            key: None,
            chain: None,
            setup_error: None,
            frame: Err(None),
            write: false,
            warned: Vec::new(),
        }
    }
}

/// A limb's goal this frame, in model space.
#[derive(Debug, Clone, Copy)]
struct FrameGoal {
    target: ModelTarget,
    pole: Option<Vec3>,
}

/// Finds the bones of new or changed limbs (and retries incomplete ones when bones may have
/// appeared), building the cached core chain.
pub(crate) fn set_up_limbs(
    mut limbs: Query<(Entity, Ref<IkLimb>, &mut LimbCache, &mut IkStatus)>,
    rescan: ResMut<IkRescan>,
    children: Query<&Children>,
    parents: Query<&ChildOf>,
    names: Query<&Name>,
    transforms: Query<&Transform>,
) {
    for (entity, limb, mut cache, mut status) in &mut limbs {
        let key = LimbKey {
            root: limb.root.clone(),
            mid: limb.mid.clone(),
            tip: limb.tip.clone(),
            hierarchy: limb.hierarchy.unwrap_or(entity),
        };
        let changed = limb.is_changed() && cache.key.as_ref() != Some(&key);
        let retry = cache.chain.is_none() && (rescan.0 || cache.key.is_none());
        let cache = &mut *cache;
        if !(changed || retry) {
            // Settings changes keep the cached chain (its rest data came from set-up).
            if limb.is_changed()
                && let Some(chain) = cache.chain.as_mut()
            {
                if let Err(err) = chain.solver.set_settings(limb.settings()) {
                    warn_once(&mut cache.warned, entity, &err);
                    cache.setup_error = Some(err);
                } else {
                    cache.setup_error = None;
                }
            }
            continue;
        }
        if changed {
            cache.warned.clear();
        }
        cache.key = Some(key.clone());
        cache.chain = None;
        match build_chain(
            &key,
            limb.settings(),
            &children,
            &parents,
            &names,
            &transforms,
        ) {
            Ok(chain) => {
                cache.chain = Some(chain);
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

fn build_chain(
    key: &LimbKey,
    settings: LimbSettings,
    children: &Query<&Children>,
    parents: &Query<&ChildOf>,
    names: &Query<&Name>,
    transforms: &Query<&Transform>,
) -> Result<LimbChain, IkError> {
    let root = setup::find_bone(&key.root, key.hierarchy, children, names)?;
    let mid = setup::find_bone(&key.mid, key.hierarchy, children, names)?;
    let tip = setup::find_bone(&key.tip, key.hierarchy, children, names)?;
    let entities = setup::chain_path(root, tip, parents).ok_or(IkError::NotAChain)?;
    let mid_index = entities
        .iter()
        .position(|&e| e == mid)
        .filter(|&i| i > 0 && i + 1 < entities.len())
        .ok_or(IkError::NotAChain)?;
    let mut bones = Vec::with_capacity(entities.len());
    for (i, &e) in entities.iter().enumerate() {
        let t = transforms
            .get(e)
            .map_err(|_| IkError::MissingBoneEntity(e))?;
        bones.push(pose_io::bone_from_transform(
            setup::bone_name(e, names),
            i.checked_sub(1),
            t,
        ));
    }
    let skeleton = Skeleton::try_new(bones).map_err(|e| IkError::InvalidChain(e.to_string()))?;
    let solver = LimbSolver::try_new(&skeleton, [0, mid_index, entities.len() - 1], settings)?;
    let input = skeleton.rest_pose();
    let solved = input.clone();
    Ok(LimbChain {
        parent: parents.get(root).ok().map(ChildOf::parent),
        entities,
        skeleton,
        solver,
        input,
        solved,
        write: false,
    })
}

/// Gathers each limb's animated pose and its target/pole in model space, in parallel.
fn collect_limb_poses(
    mut limbs: Query<(&IkLimb, &mut LimbCache), Without<IkDisabled>>,
    transforms: Query<&Transform>,
    helper: TransformHelper,
) {
    limbs.par_iter_mut().for_each(|(limb, mut cache)| {
        let cache = &mut *cache;
        cache.write = false;
        cache.frame = match (&cache.setup_error, cache.chain.as_mut()) {
            (None, Some(chain)) => gather(limb, chain, &transforms, &helper).map_err(Some),
            _ => Err(None),
        };
    });
}

fn gather(
    limb: &IkLimb,
    chain: &mut LimbChain,
    transforms: &Query<&Transform>,
    helper: &TransformHelper,
) -> Result<FrameGoal, IkError> {
    let target = limb.target.ok_or(IkError::NoTarget)?;
    pose_io::read_pose(transforms, &chain.entities, &mut chain.input, 0)?;
    let model = pose_io::model_space(helper, chain.parent)?;
    let target = pose_io::target_in_model_space(helper, &model, target).map_err(|p| match p {
        TargetProblem::Missing => IkError::MissingTarget(target),
        TargetProblem::NonFinite => IkError::NonFiniteTarget(target),
    })?;
    let pole = match limb.pole {
        None => None,
        Some(pole) => Some(
            pose_io::target_in_model_space(helper, &model, pole)
                .map_err(|p| match p {
                    TargetProblem::Missing => IkError::MissingPole(pole),
                    TargetProblem::NonFinite => IkError::NonFinitePole(pole),
                })?
                .position,
        ),
    };
    Ok(FrameGoal { target, pole })
}

/// Solves every limb in parallel on its gathered data and records the outcome in its status.
fn solve_limbs(
    mut limbs: Query<(Entity, &IkLimb, &mut LimbCache, &mut IkStatus), Without<IkDisabled>>,
) {
    limbs
        .par_iter_mut()
        .for_each(|(entity, limb, mut cache, mut status)| {
            let cache = &mut *cache;
            let outcome = match (&cache.frame, cache.chain.as_mut()) {
                (Ok(goal), Some(chain)) => solve_one(limb, goal, chain).map_err(Some),
                (Err(err), _) => Err(err.clone()),
                (Ok(_), None) => Err(None),
            };
            match outcome {
                Ok(report) => {
                    cache.write = true;
                    let status = &mut *status;
                    status.ready = true;
                    status.solved = true;
                    status.converged = report.reached;
                    status.iterations = 1;
                    status.position_residual = report.position_residual;
                    status.rotation_residual = report.rotation_residual;
                    status.residuals.clear();
                    status.residuals.push(report.position_residual);
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

/// The outcome of one limb solve, for the status.
struct LimbOutcome {
    reached: bool,
    position_residual: f32,
    rotation_residual: f32,
}

fn solve_one(
    limb: &IkLimb,
    goal: &FrameGoal,
    chain: &mut LimbChain,
) -> Result<LimbOutcome, IkError> {
    chain.solved.copy_from(&chain.input);
    let report = chain.solver.solve(
        &chain.skeleton,
        &mut chain.solved,
        &LimbInput {
            target: goal.target.position,
            target_rotation: goal.target.rotation,
            rotation_weight: finite_weight(limb.rotation_weight),
            pole: goal.pole,
            swivel: limb.swivel.filter(|a| a.is_finite()),
            pole_weight: finite_weight(limb.pole_weight),
        },
    )?;
    let weight = finite_weight(limb.weight);
    chain.write = weight > 0.0;
    if chain.write && weight < 1.0 {
        // Blend the solved pose with the animated one (a few bones: allocation-free slerps).
        for (q, animated) in chain
            .solved
            .rotations
            .iter_mut()
            .zip(&chain.input.rotations)
        {
            *q = animated.slerp(*q, weight);
        }
    }
    Ok(LimbOutcome {
        reached: report.reached,
        position_residual: report.position_residual,
        rotation_residual: report.rotation_residual,
    })
}

/// Writes the solved local rotations of every solved limb with `set_if_neq`.
fn write_limb_rotations(
    limbs: Query<&LimbCache, Without<IkDisabled>>,
    mut transforms: Query<&mut Transform>,
) {
    for cache in &limbs {
        let Some(chain) = cache.chain.as_ref().filter(|c| cache.write && c.write) else {
            continue;
        };
        for (&e, &rotation) in chain.entities.iter().zip(&chain.solved.rotations) {
            if let Ok(mut t) = transforms.get_mut(e) {
                let solved = Transform { rotation, ..*t };
                t.set_if_neq(solved);
            }
        }
    }
}

/// Records a frame's problem in the status (only touching it when something changed) and
/// logs it once. `None`: a set-up problem, already recorded by set-up.
pub(crate) fn record_problem(
    warned: &mut Vec<IkError>,
    entity: Entity,
    status: &mut Mut<IkStatus>,
    err: Option<IkError>,
) {
    if status.solved || status.converged {
        status.solved = false;
        status.converged = false;
    }
    if let Some(err) = err {
        warn_once(warned, entity, &err);
        if status.last_error.as_ref() != Some(&err) {
            status.last_error = Some(err);
        }
    }
}

/// Logs `err` for `entity` unless it was logged already.
pub(crate) fn warn_once(warned: &mut Vec<IkError>, entity: Entity, err: &IkError) {
    if !warned.contains(err) {
        warn!("bevy_ik: {entity}: {err}; keeping the animated pose");
        warned.push(err.clone());
    }
}

/// A weight clamped to `[0, 1]`; NaN counts as 0.
pub(crate) fn finite_weight(w: f32) -> f32 {
    if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) }
}
