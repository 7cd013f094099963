//! The full-body humanoid pipeline behind [`IkHumanoid`](crate::IkHumanoid) with
//! [`IkHumanoidSolver::FullBody`](crate::IkHumanoidSolver::FullBody): ik-core's hybrid
//! [`FullBodySolver`] (a Jacobian over every humanoid joint with anatomical limits, finished
//! analytically per limb) driven by the target entities the humanoid set-up spawned.

use bevy::app::App;
use bevy::ecs::change_detection::{DetectChangesMut, Mut};
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::intern::Interned;
use bevy::ecs::query::Without;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel};
use bevy::ecs::system::Query;
use bevy::math::Vec3;
use bevy::transform::components::Transform;
use bevy::transform::helper::TransformHelper;
use ik_core::humanoid::{FullBodyGoals, FullBodyReport, FullBodySolver, HumanoidMap};
use ik_core::{Pose, Skeleton};

use crate::IkSystems;
use crate::components::{IkDisabled, IkStatus};
use crate::error::IkError;
use crate::humanoid::IkHumanoid;
use crate::limb::{finite_weight, record_problem};
use crate::pose_io::{self, TargetProblem};
use crate::setup::SetupSystems;

pub(crate) fn build(app: &mut App, schedule: Interned<dyn ScheduleLabel>) {
    app.add_systems(
        schedule,
        (
            collect_humanoid_poses
                .in_set(IkSystems::Prepare)
                .after(SetupSystems),
            solve_humanoids.in_set(IkSystems::Solve),
            write_humanoid_poses.in_set(IkSystems::Writeback),
        ),
    );
}

/// A set-up full-body humanoid: the core skeleton of the whole hierarchy under the humanoid
/// entity (model space = that entity's frame), its solver, goals and scratch. Internal.
#[derive(Component)]
pub(crate) struct HumanoidRig {
    pub(crate) entities: Vec<Entity>,
    pub(crate) skeleton: Skeleton,
    pub(crate) solver: FullBodySolver,
    pub(crate) map: HumanoidMap,
    pub(crate) goals: FullBodyGoals,
    /// Target entity per effector (indexed like `Effector::ALL`) and for the look-at.
    pub(crate) targets: [Option<Entity>; 5],
    pub(crate) look_at: Option<Entity>,
    input: Pose,
    solved: Pose,
    frame: Result<(), Option<IkError>>,
    pub(crate) write: bool,
    warned: Vec<IkError>,
}

impl HumanoidRig {
    pub(crate) fn new(
        entities: Vec<Entity>,
        skeleton: Skeleton,
        solver: FullBodySolver,
        map: HumanoidMap,
        goals: FullBodyGoals,
        targets: [Option<Entity>; 5],
        look_at: Option<Entity>,
    ) -> Self {
        let input = skeleton.rest_pose();
        Self {
            solved: input.clone(),
            input,
            entities,
            skeleton,
            solver,
            map,
            goals,
            targets,
            look_at,
            frame: Err(None),
            write: false,
            warned: Vec::new(),
        }
    }

    /// The centre of mass (model space) of the pose solved this frame, after the IK/FK blend.
    pub(crate) fn center_of_mass(&mut self) -> Option<Vec3> {
        self.solver.center_of_mass(&self.skeleton, &self.solved)
    }
}

pub(crate) fn collect_humanoid_poses(
    mut rigs: Query<(Entity, &mut HumanoidRig), Without<IkDisabled>>,
    transforms: Query<&Transform>,
    helper: TransformHelper,
) {
    rigs.par_iter_mut().for_each(|(entity, mut rig)| {
        let rig = &mut *rig;
        rig.write = false;
        rig.frame = gather(entity, rig, &transforms, &helper).map_err(Some);
    });
}

fn gather(
    entity: Entity,
    rig: &mut HumanoidRig,
    transforms: &Query<&Transform>,
    helper: &TransformHelper,
) -> Result<(), IkError> {
    // Bone 0 (the humanoid entity) stays the identity: model space is its global frame.
    pose_io::read_pose(transforms, &rig.entities[1..], &mut rig.input, 1)?;
    let model = pose_io::model_space(helper, Some(entity))?;
    let read = |t: Entity| {
        pose_io::target_in_model_space(helper, &model, t).map_err(|p| match p {
            TargetProblem::Missing => IkError::MissingTarget(t),
            TargetProblem::NonFinite => IkError::NonFiniteTarget(t),
        })
    };
    for (goal, target) in rig.goals.effectors.iter_mut().zip(&rig.targets) {
        match target {
            Some(t) => {
                let m = read(*t)?;
                goal.position = m.position;
                goal.rotation = m.rotation;
            }
            None => goal.enabled = false,
        }
    }
    if let Some(t) = rig.look_at {
        rig.goals.look_at.target = read(t)?.position;
    }
    Ok(())
}

fn solve_humanoids(
    mut rigs: Query<(Entity, &IkHumanoid, &mut HumanoidRig, &mut IkStatus), Without<IkDisabled>>,
) {
    rigs.par_iter_mut()
        .for_each(|(entity, humanoid, mut rig, mut status)| {
            let rig = &mut *rig;
            let outcome = match &rig.frame {
                Ok(()) => solve_one(humanoid, rig).map_err(Some),
                Err(err) => Err(err.clone()),
            };
            match outcome {
                Ok(report) => {
                    rig.write = true;
                    write_status(&mut status, &report);
                }
                Err(err) => {
                    rig.write = false;
                    record_problem(&mut rig.warned, entity, &mut status, err);
                }
            }
        });
}

fn write_status(status: &mut Mut<IkStatus>, report: &FullBodyReport) {
    let status = &mut **status;
    status.ready = true;
    status.solved = true;
    status.converged = report.converged;
    status.iterations = report.iterations;
    status.position_residual = report.residuals.iter().fold(0.0, |m, r| m.max(r.position));
    status.rotation_residual = report
        .residuals
        .iter()
        .fold(report.look_at, |m, r| m.max(r.rotation));
    status.residuals.clear();
    status
        .residuals
        .extend(report.residuals.iter().map(|r| r.position));
    status.residuals.push(report.look_at);
    status.center_of_mass_residual = report.center_of_mass;
    if status.last_error.is_some() {
        status.last_error = None;
    }
}

fn solve_one(humanoid: &IkHumanoid, rig: &mut HumanoidRig) -> Result<FullBodyReport, IkError> {
    rig.solved.copy_from(&rig.input);
    let report = rig
        .solver
        .solve(&rig.skeleton, &mut rig.solved, &rig.goals)
        .map_err(|e| IkError::Solver(e.to_string()))?;
    let weight = finite_weight(humanoid.weight);
    rig.write = weight > 0.0;
    if weight < 1.0 {
        for ((q, t), (aq, at)) in rig
            .solved
            .rotations
            .iter_mut()
            .zip(rig.solved.translations.iter_mut())
            .zip(rig.input.rotations.iter().zip(&rig.input.translations))
        {
            *q = aq.slerp(*q, weight);
            *t = at.lerp(*t, weight);
        }
    }
    Ok(report)
}

/// Writes every changed bone (rotation; translation where the solver moved it, i.e. the
/// pelvis) with `set_if_neq`.
fn write_humanoid_poses(
    rigs: Query<&HumanoidRig, Without<IkDisabled>>,
    mut transforms: Query<&mut Transform>,
) {
    for rig in &rigs {
        if !rig.write {
            continue;
        }
        for (i, &e) in rig.entities.iter().enumerate().skip(1) {
            let (q, p) = (rig.solved.rotations[i], rig.solved.translations[i]);
            if q == rig.input.rotations[i] && p == rig.input.translations[i] {
                continue;
            }
            if let Ok(mut t) = transforms.get_mut(e) {
                let solved = Transform {
                    rotation: q,
                    translation: p,
                    ..*t
                };
                t.set_if_neq(solved);
            }
        }
    }
}
