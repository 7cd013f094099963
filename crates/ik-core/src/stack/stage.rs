//! The stages an [`IkStack`](super::IkStack) runs: the built-in solvers ([`TwoBoneStage`],
//! [`JacobianStage`], [`FullBodyStage`]) and the [`CustomStage`] trait for the rest.

use core::any::Any;
use core::fmt::Debug;

use crate::analytic::{LimbGoal, LimbReport, TwoBoneIk};
use crate::humanoid::{FullBodyGoals, FullBodyReport, FullBodySolver};
use crate::jacobian::{Goals, JacobianScratch, JacobianSolver, SolveReport};
use crate::skeleton::Skeleton;

use super::{PoseBuffer, StackError};

/// One stage of a stack: which solver, with its per-frame goals.
///
/// An enum rather than only trait objects: the built-in solvers are matched statically (no
/// virtual call, no downcast to reach a stage's typed goals, `Clone` and `Debug` for free),
/// and [`Stage::Custom`] takes everything else — look-at chains, aim, twist distribution,
/// grounding, VR body tracking — until such a stage earns an arm of its own.
#[derive(Debug)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "the two-bone stage is the hot, cheap one: inline, a solve saves a pointer chase (a cache miss in a crowd)"
)]
pub enum Stage {
    /// An analytic two-bone limb (inline: see [`Stage::two_bone`]).
    TwoBone(TwoBoneStage),
    /// The generic Jacobian solver.
    Jacobian(Box<JacobianStage>),
    /// The humanoid full-body solver.
    FullBody(Box<FullBodyStage>),
    /// Any other stage.
    Custom(Box<dyn CustomStage>),
}

impl Stage {
    /// A two-bone limb stage.
    #[must_use]
    pub fn two_bone(stage: TwoBoneStage) -> Self {
        Self::TwoBone(stage)
    }

    /// A Jacobian stage.
    #[must_use]
    pub fn jacobian(stage: JacobianStage) -> Self {
        Self::Jacobian(Box::new(stage))
    }

    /// A full-body stage.
    #[must_use]
    pub fn full_body(stage: FullBodyStage) -> Self {
        Self::FullBody(Box::new(stage))
    }

    /// A custom stage.
    #[must_use]
    pub fn custom(stage: impl CustomStage) -> Self {
        Self::Custom(Box::new(stage))
    }

    /// The bones this stage may write. The stack saves them before the stage runs, blends only
    /// them by the stage's weight, and restores them if the stage fails.
    #[must_use]
    pub fn bones(&self) -> &[usize] {
        match self {
            Self::TwoBone(s) => &s.bones,
            Self::Jacobian(s) => &s.bones,
            Self::FullBody(s) => &s.bones,
            Self::Custom(s) => s.bones(),
        }
    }

    /// The two-bone stage, if this is one.
    #[must_use]
    pub fn as_two_bone_mut(&mut self) -> Option<&mut TwoBoneStage> {
        match self {
            Self::TwoBone(s) => Some(s),
            _ => None,
        }
    }

    /// The Jacobian stage, if this is one.
    #[must_use]
    pub fn as_jacobian_mut(&mut self) -> Option<&mut JacobianStage> {
        match self {
            Self::Jacobian(s) => Some(s),
            _ => None,
        }
    }

    /// The full-body stage, if this is one.
    #[must_use]
    pub fn as_full_body_mut(&mut self) -> Option<&mut FullBodyStage> {
        match self {
            Self::FullBody(s) => Some(s),
            _ => None,
        }
    }

    /// The custom stage of type `T`, if this is one.
    #[must_use]
    pub fn as_custom_mut<T: CustomStage>(&mut self) -> Option<&mut T> {
        match self {
            Self::Custom(s) => (&mut **s as &mut dyn Any).downcast_mut::<T>(),
            _ => None,
        }
    }

    /// Runs the stage on `buffer` (in place). On error the pose may be partly written; the
    /// stack restores the stage's bones.
    /// `cold`: an iterative stage solves from scratch (no warm start this time).
    pub(crate) fn run(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        cold: bool,
    ) -> Result<StageReport, StackError> {
        match self {
            Self::TwoBone(s) => {
                let parent = match s.parent {
                    Some(p) if p < buffer.len() => buffer.model_transform(skeleton, p),
                    _ => crate::pose::BoneTransform::IDENTITY,
                };
                let report = s.ik.solve_with_parent(
                    skeleton,
                    buffer.pose_unchecked_mut(),
                    &s.goal,
                    &parent,
                )?;
                Ok(StageReport::TwoBone(report))
            }
            Self::Jacobian(s) => {
                if cold {
                    s.scratch.reset();
                }
                let report = s.solver.solve(
                    skeleton,
                    buffer.pose_unchecked_mut(),
                    &s.goals,
                    &mut s.scratch,
                )?;
                Ok(StageReport::Jacobian(report))
            }
            Self::FullBody(s) => {
                let pose = buffer.pose_unchecked_mut();
                let report = if cold {
                    s.solver.solve_cold(skeleton, pose, &s.goals)?
                } else {
                    s.solver.solve(skeleton, pose, &s.goals)?
                };
                Ok(StageReport::FullBody(report))
            }
            Self::Custom(s) => Ok(StageReport::Custom(s.solve(skeleton, buffer)?)),
        }
    }
}

/// An analytic two-bone limb stage: [`TwoBoneIk`] and its per-frame [`LimbGoal`].
///
/// The stack solves it with [`TwoBoneIk::solve_with_parent`], the root's parent transform
/// taken from the pose buffer (so it sees every earlier stage's output).
#[derive(Clone, Debug, PartialEq)]
pub struct TwoBoneStage {
    ik: TwoBoneIk,
    /// This frame's goal (model space).
    pub goal: LimbGoal,
    bones: [usize; 3],
    /// The root bone's parent (read once at set-up, not from the skeleton every solve).
    parent: Option<usize>,
}

impl TwoBoneStage {
    /// A stage for `ik` (built on `skeleton`), aiming at `goal`.
    #[must_use]
    pub fn new(skeleton: &Skeleton, ik: TwoBoneIk, goal: LimbGoal) -> Self {
        Self {
            bones: ik.bones(),
            parent: skeleton.parent(ik.bones()[0]),
            ik,
            goal,
        }
    }

    /// The solver.
    #[must_use]
    pub fn ik(&self) -> &TwoBoneIk {
        &self.ik
    }

    /// Changes the limb's settings (flex limits, soft reach, bend axis) without rebuilding it.
    ///
    /// # Errors
    /// [`TwoBoneIk::set_settings`]'s.
    pub fn set_settings(
        &mut self,
        settings: crate::analytic::LimbSettings,
    ) -> Result<(), crate::analytic::AnalyticError> {
        if *self.ik.settings() == settings {
            return Ok(());
        }
        self.ik.set_settings(settings)
    }
}

/// A generic Jacobian stage: [`JacobianSolver`], its per-frame [`Goals`] and its
/// [`JacobianScratch`] (which carries the warm start from frame to frame).
#[derive(Clone, Debug)]
pub struct JacobianStage {
    solver: JacobianSolver,
    /// This frame's goals (made by [`JacobianSolver::goals`]; mutate in place).
    pub goals: Goals,
    scratch: JacobianScratch,
    bones: Vec<usize>,
}

impl JacobianStage {
    /// A stage for `solver`, its goals at their defaults (see [`JacobianSolver::goals`]).
    #[must_use]
    pub fn new(solver: JacobianSolver) -> Self {
        let mut bones: Vec<usize> = solver.joints().iter().map(|j| j.bone).collect();
        bones.sort_unstable();
        bones.dedup();
        Self {
            goals: solver.goals(),
            scratch: solver.scratch(),
            solver,
            bones,
        }
    }

    /// The solver.
    #[must_use]
    pub fn solver(&self) -> &JacobianSolver {
        &self.solver
    }

    /// Changes the solver's settings (iterations, tolerances, damping) without rebuilding it.
    ///
    /// # Errors
    /// [`JacobianSolver::set_settings`]'s.
    pub fn set_settings(
        &mut self,
        settings: crate::jacobian::SolverSettings,
    ) -> Result<(), crate::jacobian::JacobianError> {
        self.solver.set_settings(settings)
    }

    /// The scratch: per-task residuals of the last solve ([`JacobianScratch::residuals`]).
    #[must_use]
    pub fn scratch(&self) -> &JacobianScratch {
        &self.scratch
    }

    /// The scratch, e.g. to [`JacobianScratch::reset`] its warm start after a teleport.
    pub fn scratch_mut(&mut self) -> &mut JacobianScratch {
        &mut self.scratch
    }
}

/// A humanoid full-body stage: [`FullBodySolver`] and its per-frame [`FullBodyGoals`].
#[derive(Clone, Debug)]
pub struct FullBodyStage {
    /// The solver (its settings may be changed between frames).
    pub solver: FullBodySolver,
    /// This frame's goals.
    pub goals: FullBodyGoals,
    bones: Vec<usize>,
}

impl FullBodyStage {
    /// A stage for `solver` on a skeleton of `bone_count` bones, aiming at `goals`. The stage
    /// may write any bone (the solver moves every mapped joint and the hips' translation).
    #[must_use]
    pub fn new(solver: FullBodySolver, goals: FullBodyGoals, bone_count: usize) -> Self {
        Self {
            solver,
            goals,
            bones: (0..bone_count).collect(),
        }
    }
}

/// What a [`CustomStage`] reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CustomReport {
    /// Whether the stage met its goal within its tolerance.
    pub converged: bool,
    /// Iterations used (1 for a closed-form stage).
    pub iterations: u32,
    /// Largest position error left, model units.
    pub position_residual: f32,
    /// Largest angle error left, radians.
    pub angle_residual: f32,
}

/// A stage the crate does not ship: look-at chains, aim, twist distribution, grounding, VR
/// body tracking…
///
/// `solve` reads and writes the pose through the [`PoseBuffer`] (whose model transforms are
/// those of every earlier stage's output) and may write only the bones [`CustomStage::bones`]
/// lists: the stack saves, blends and, on error, restores exactly those. It must not allocate.
/// Its goals are fields of the implementing type, reached with [`Stage::as_custom_mut`].
pub trait CustomStage: Any + Debug + Send + Sync {
    /// The bones `solve` may write, each a valid index of the stack's skeleton.
    fn bones(&self) -> &[usize];

    /// Receives this frame's target from the host (model space), if the host has one for the
    /// stage (the Bevy plugin passes a target entity's transform). Ignored by default.
    fn set_target(&mut self, _target: Option<crate::pose::BoneTransform>) {}

    /// Solves in place.
    ///
    /// # Errors
    /// A [`StackError`] (e.g. [`StackError::Custom`]) when its input is malformed; the stack
    /// restores [`CustomStage::bones`] and goes on with the next stage.
    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<CustomReport, StackError>;
}

/// A stage's report: the solver's own (measured on its output by forward kinematics, before
/// the stack's weight blend).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum StageReport {
    /// From [`TwoBoneIk`].
    TwoBone(LimbReport),
    /// From [`JacobianSolver`].
    Jacobian(SolveReport),
    /// From [`FullBodySolver`].
    FullBody(FullBodyReport),
    /// From a [`CustomStage`].
    Custom(CustomReport),
}

impl StageReport {
    /// Whether every goal was met within the solver's tolerance (for a limb: reachable and
    /// within 1e-4 of the limb's length).
    #[must_use]
    pub fn converged(&self) -> bool {
        match self {
            Self::TwoBone(r) => {
                let [a, b] = r.lengths;
                r.reachable && r.position_error <= 1e-4 * (a + b).max(1.0)
            }
            Self::Jacobian(r) => r.converged,
            Self::FullBody(r) => r.converged,
            Self::Custom(r) => r.converged,
        }
    }

    /// Iterations used (1 for the analytic limb).
    #[must_use]
    pub fn iterations(&self) -> u32 {
        match self {
            Self::TwoBone(_) => 1,
            Self::Jacobian(r) => r.iterations,
            Self::FullBody(r) => r.iterations,
            Self::Custom(r) => r.iterations,
        }
    }

    /// Largest position error left, model units.
    #[must_use]
    pub fn position_residual(&self) -> f32 {
        match self {
            Self::TwoBone(r) => r.position_error,
            Self::Jacobian(r) => r.max_position_residual,
            Self::FullBody(r) => r.residuals.iter().fold(0.0, |m, g| m.max(g.position)),
            Self::Custom(r) => r.position_residual,
        }
    }

    /// Largest angle error left, radians (0 for a limb: see the limb's report).
    #[must_use]
    pub fn angle_residual(&self) -> f32 {
        match self {
            Self::TwoBone(_) => 0.0,
            Self::Jacobian(r) => r.max_angle_residual,
            Self::FullBody(r) => r.residuals.iter().fold(r.look_at, |m, g| m.max(g.rotation)),
            Self::Custom(r) => r.angle_residual,
        }
    }
}
