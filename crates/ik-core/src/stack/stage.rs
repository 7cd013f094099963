//! The stages an [`IkStack`](super::IkStack) runs: one [`Stage`] trait that the built-in
//! solvers ([`TwoBoneStage`], [`JacobianStage`], [`FullBodyStage`], and the behaviours,
//! grounding, VR body, springs and chains elsewhere in the crate) and users' own stages
//! implement alike (Godot's `SkeletonModifier3D::_process_modification`, Unity's
//! `IAnimationJob`).

use core::any::Any;
use core::fmt::Debug;

use glam::{Quat, Vec3};

use crate::analytic::{LimbGoal, LimbReport, TwoBoneIk};
use crate::humanoid::{FullBodyGoals, FullBodyReport, FullBodySolver, GoalFrame};
use crate::jacobian::{Goals, JacobianScratch, JacobianSolver, SolveReport};
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;

use super::{PoseBuffer, StackError};

/// One stage of an [`IkStack`](super::IkStack): the one extension point, implemented by the
/// built-in solvers and by users alike.
///
/// `solve` reads and writes the pose through the [`PoseBuffer`] (whose model transforms are
/// those of every earlier stage's output) and may write only the bones [`Stage::bones`] lists:
/// the stack saves, blends by the slot's weight and, on error, restores exactly those. It must
/// not allocate. Its goals are fields of the implementing type, reached with
/// [`AnyStage::get_mut`] (or [`StageSlot::stage_mut`](super::StageSlot::stage_mut)).
///
/// The stack keeps the one warm-start store (see the [module docs](super)); a stage opts in
/// with [`Stage::warm_starts`] and is told when it must start cold ([`Stage::start_cold`]).
pub trait Stage: Any + Debug + Send + Sync {
    /// The bones `solve` may write, each a valid index of the stack's skeleton.
    fn bones(&self) -> &[usize];

    /// Receives this frame's target from the host (model space), if the host has one for the
    /// stage (the Bevy plugin passes a target entity's transform). Ignored by default.
    fn set_target(&mut self, _target: Option<BoneTransform>) {}

    /// Whether the stack's warm start is on for this stage by default
    /// ([`StageSlot::warm_start`](super::StageSlot::warm_start)): true for iterative solvers.
    fn warm_starts(&self) -> bool {
        false
    }

    /// Called by the stack before a solve that must start cold (the first, the first after a
    /// failure, a fade-out or [`StageSlot::reset_warm_start`](super::StageSlot::reset_warm_start)):
    /// forget solver-internal state carried from the last frame. Nothing by default.
    fn start_cold(&mut self) {}

    /// Solves in place.
    ///
    /// # Errors
    /// A [`StackError`] when its input is malformed (a typed variant, or
    /// [`StackError::Stage`] wrapping the stage's own error type); the stack restores
    /// [`Stage::bones`] and goes on with the next stage.
    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError>;

    /// [`Stage::solve`] with the stack's warm-start store: `last` is this stage's last
    /// unblended output over [`Stage::bones`] (in that order) as the stack kept it, given
    /// when the stack warm-starts this solve from it (see the [module docs](super)), `None`
    /// otherwise. A stage with frame-to-frame memory of its own output (the full body's fixed
    /// point, its joints known to be within their limits) reads it here instead of keeping a
    /// copy. The stack calls this; by default it calls [`Stage::solve`].
    ///
    /// # Errors
    /// As [`Stage::solve`].
    fn solve_warm(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        _last: Option<&[(Quat, Vec3)]>,
    ) -> Result<StageReport, StackError> {
        self.solve(skeleton, buffer)
    }

    /// This stage's goals measured on `buffer`'s pose, which after
    /// [`IkStack::solve`](super::IkStack::solve) is the character's final pose, after every later stage. `None`
    /// (the default) when the stage has no goal that can be measured on a pose (a spring, a
    /// twist distribution). Must not allocate.
    fn measure(&self, _skeleton: &Skeleton, _buffer: &mut PoseBuffer) -> Option<GoalResidual> {
        None
    }
}

/// How far a stage's goals are from being met on a pose ([`Stage::measure`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GoalResidual {
    /// Largest position error, model units.
    pub position: f32,
    /// Largest angle error, radians.
    pub angle: f32,
}

/// The old name of the stage trait, with its old report type.
///
/// Migration: implement [`Stage`] instead; `solve` returns a [`StageReport`]
/// (`Ok(custom_report.into())`). Every `CustomStage` is a [`Stage`] through a blanket
/// implementation, so existing code keeps compiling.
#[deprecated(
    since = "0.2.0",
    note = "implement `ik_core::stack::Stage` (the one stage trait)"
)]
pub trait CustomStage: Any + Debug + Send + Sync {
    /// See [`Stage::bones`].
    fn bones(&self) -> &[usize];

    /// See [`Stage::set_target`].
    fn set_target(&mut self, _target: Option<BoneTransform>) {}

    /// See [`Stage::solve`].
    ///
    /// # Errors
    /// See [`Stage::solve`].
    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<CustomReport, StackError>;
}

#[allow(deprecated, reason = "the migration path from the old trait")]
impl<T: CustomStage> Stage for T {
    fn bones(&self) -> &[usize] {
        CustomStage::bones(self)
    }

    fn set_target(&mut self, target: Option<BoneTransform>) {
        CustomStage::set_target(self, target);
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        CustomStage::solve(self, skeleton, buffer).map(StageReport::Custom)
    }
}

/// A stage as a stack holds it: any [`Stage`], the two-bone limb inline (the hot, cheap stage
/// of a crowd: a solve saves a pointer chase), the others boxed. Reach the concrete stage with
/// [`AnyStage::get`] / [`AnyStage::get_mut`].
#[derive(Debug)]
pub struct AnyStage(Inner);

#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "the two-bone stage is the hot, cheap one: inline, a solve saves a pointer chase (a cache miss in a crowd)"
)]
enum Inner {
    TwoBone(TwoBoneStage),
    Boxed(Box<dyn Stage>),
}

impl<S: Stage> From<S> for AnyStage {
    fn from(stage: S) -> Self {
        Self::new(stage)
    }
}

impl AnyStage {
    /// Holds `stage`.
    #[must_use]
    pub fn new<S: Stage>(stage: S) -> Self {
        let mut stage = Some(stage);
        if let Some(limb) = (&mut stage as &mut dyn Any)
            .downcast_mut::<Option<TwoBoneStage>>()
            .and_then(Option::take)
        {
            return Self(Inner::TwoBone(limb));
        }
        match stage {
            Some(s) => Self(Inner::Boxed(Box::new(s))),
            None => unreachable!("taken only when it is a two-bone stage"),
        }
    }

    /// Holds a boxed `stage` (a two-bone limb is unboxed and held inline).
    #[must_use]
    pub fn from_boxed(stage: Box<dyn Stage>) -> Self {
        if !(&*stage as &dyn Any).is::<TwoBoneStage>() {
            return Self(Inner::Boxed(stage));
        }
        match (stage as Box<dyn Any>).downcast::<TwoBoneStage>() {
            Ok(limb) => Self(Inner::TwoBone(*limb)),
            Err(_) => unreachable!("checked to be a two-bone stage"),
        }
    }

    /// A two-bone limb stage.
    #[must_use]
    pub fn two_bone(stage: TwoBoneStage) -> Self {
        Self(Inner::TwoBone(stage))
    }

    /// A Jacobian stage.
    #[must_use]
    pub fn jacobian(stage: JacobianStage) -> Self {
        Self::new(stage)
    }

    /// A full-body stage.
    #[must_use]
    pub fn full_body(stage: FullBodyStage) -> Self {
        Self::new(stage)
    }

    /// Any other stage (same as [`AnyStage::new`]).
    #[must_use]
    pub fn custom(stage: impl Stage) -> Self {
        Self::new(stage)
    }

    /// The stage as the trait object.
    #[must_use]
    pub fn as_dyn(&self) -> &dyn Stage {
        match &self.0 {
            Inner::TwoBone(s) => s,
            Inner::Boxed(s) => &**s,
        }
    }

    /// The stage as the trait object, for writing.
    pub fn as_dyn_mut(&mut self) -> &mut dyn Stage {
        match &mut self.0 {
            Inner::TwoBone(s) => s,
            Inner::Boxed(s) => &mut **s,
        }
    }

    /// The stage if it is a `T`.
    #[must_use]
    pub fn get<T: Stage>(&self) -> Option<&T> {
        (self.as_dyn() as &dyn Any).downcast_ref::<T>()
    }

    /// The stage if it is a `T`, for writing its goals.
    #[must_use]
    pub fn get_mut<T: Stage>(&mut self) -> Option<&mut T> {
        (self.as_dyn_mut() as &mut dyn Any).downcast_mut::<T>()
    }

    /// Whether the stage is a `T`.
    #[must_use]
    pub fn is<T: Stage>(&self) -> bool {
        self.get::<T>().is_some()
    }

    /// The bones this stage may write ([`Stage::bones`]).
    #[must_use]
    pub fn bones(&self) -> &[usize] {
        match &self.0 {
            Inner::TwoBone(s) => &s.bones,
            Inner::Boxed(s) => s.bones(),
        }
    }

    /// The two-bone stage, if this is one (no downcast: it is held inline).
    #[must_use]
    #[inline]
    pub fn as_two_bone(&self) -> Option<&TwoBoneStage> {
        match &self.0 {
            Inner::TwoBone(s) => Some(s),
            Inner::Boxed(_) => None,
        }
    }

    /// The two-bone stage, if this is one.
    #[must_use]
    #[inline]
    pub fn as_two_bone_mut(&mut self) -> Option<&mut TwoBoneStage> {
        match &mut self.0 {
            Inner::TwoBone(s) => Some(s),
            Inner::Boxed(_) => None,
        }
    }

    /// The Jacobian stage, if this is one.
    #[must_use]
    pub fn as_jacobian_mut(&mut self) -> Option<&mut JacobianStage> {
        self.get_mut()
    }

    /// The full-body stage, if this is one.
    #[must_use]
    pub fn as_full_body_mut(&mut self) -> Option<&mut FullBodyStage> {
        self.get_mut()
    }

    /// The stage of type `T`, if this is one (same as [`AnyStage::get_mut`]).
    #[must_use]
    pub fn as_custom_mut<T: Stage>(&mut self) -> Option<&mut T> {
        self.get_mut()
    }

    /// Runs the stage on `buffer` (in place); `cold`: it starts cold ([`Stage::start_cold`]);
    /// `last`: the stack's warm-start store ([`Stage::solve_warm`]).
    #[inline]
    pub(crate) fn run(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        cold: bool,
        last: Option<&[(Quat, Vec3)]>,
    ) -> Result<StageReport, StackError> {
        match &mut self.0 {
            Inner::TwoBone(s) => s.solve(skeleton, buffer),
            Inner::Boxed(s) => {
                if cold {
                    s.start_cold();
                }
                s.solve_warm(skeleton, buffer, last)
            }
        }
    }

    /// [`Stage::measure`].
    pub(crate) fn measure(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Option<GoalResidual> {
        match &self.0 {
            Inner::TwoBone(s) => s.measure(skeleton, buffer),
            Inner::Boxed(s) => s.measure(skeleton, buffer),
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
    /// The next solve starts cold ([`Stage::start_cold`]).
    cold: bool,
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
            cold: true,
        }
    }
}

/// What a stage without a report type of its own reports (inside [`StageReport::Custom`]).
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
    /// From any other [`Stage`].
    Custom(CustomReport),
}

impl From<CustomReport> for StageReport {
    fn from(report: CustomReport) -> Self {
        Self::Custom(report)
    }
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

impl TwoBoneStage {
    /// The solve, inline (the stack calls it without a virtual call).
    #[inline]
    fn solve_limb(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let parent = match self.parent {
            Some(p) if p < buffer.len() => buffer.model_transform(skeleton, p),
            _ => BoneTransform::IDENTITY,
        };
        let report = self.ik.solve_with_parent(
            skeleton,
            buffer.pose_unchecked_mut(),
            &self.goal,
            &parent,
        )?;
        Ok(StageReport::TwoBone(report))
    }
}

impl Stage for TwoBoneStage {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    /// The target's translation becomes the goal's target.
    fn set_target(&mut self, target: Option<BoneTransform>) {
        if let Some(t) = target {
            self.goal.target = t.translation;
        }
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        self.solve_limb(skeleton, buffer)
    }

    /// The tip's distance to the goal's target.
    fn measure(&self, skeleton: &Skeleton, buffer: &mut PoseBuffer) -> Option<GoalResidual> {
        let tip = self.bones[2];
        (tip < buffer.len()).then(|| GoalResidual {
            position: buffer
                .model_transform(skeleton, tip)
                .translation
                .distance(self.goal.target),
            angle: 0.0,
        })
    }
}

impl Stage for JacobianStage {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    fn warm_starts(&self) -> bool {
        true
    }

    fn start_cold(&mut self) {
        self.scratch.reset();
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let report = self.solver.solve(
            skeleton,
            buffer.pose_unchecked_mut(),
            &self.goals,
            &mut self.scratch,
        )?;
        Ok(StageReport::Jacobian(report))
    }
}

impl Stage for FullBodyStage {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    fn warm_starts(&self) -> bool {
        true
    }

    fn start_cold(&mut self) {
        self.cold = true;
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        self.solve_warm(skeleton, buffer, None)
    }

    /// The solver's record of its last output is the stack's store (`last`, over every
    /// bone): its scratch keeps no copy (issue 26's one warm-start store).
    fn solve_warm(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        last: Option<&[(Quat, Vec3)]>,
    ) -> Result<StageReport, StackError> {
        let pose = buffer.pose_unchecked_mut();
        let cold = core::mem::take(&mut self.cold);
        let report = self
            .solver
            .solve_in_stack(skeleton, pose, &self.goals, cold, last);
        // A failed solve leaves the next one cold.
        self.cold = report.is_err();
        Ok(StageReport::FullBody(report?))
    }

    /// Each enabled effector goal (position and, where weighted, rotation) measured on the
    /// pose, goals in another bone's frame resolved through that bone's model transform.
    fn measure(&self, skeleton: &Skeleton, buffer: &mut PoseBuffer) -> Option<GoalResidual> {
        let bones = self.solver.effector_bones();
        let mut residual = GoalResidual::default();
        let mut any = false;
        for (goal, &bone) in self.goals.effectors.iter().zip(&bones) {
            if !goal.enabled || bone >= buffer.len() {
                continue;
            }
            let frame = match goal.frame {
                GoalFrame::Model => BoneTransform::IDENTITY,
                GoalFrame::Effector(e) => match bones.get(e as usize) {
                    Some(&b) if b < buffer.len() => buffer.model_transform(skeleton, b),
                    _ => continue,
                },
                GoalFrame::Bone(b) if b < buffer.len() => buffer.model_transform(skeleton, b),
                GoalFrame::Bone(_) => continue,
            };
            let actual = buffer.model_transform(skeleton, bone);
            if goal.position_weight > 0.0 {
                let target: Vec3 = frame.transform_point(goal.position);
                residual.position = residual.position.max(actual.translation.distance(target));
                any = true;
            }
            if goal.rotation_weight > 0.0 {
                let target = (frame.rotation * goal.rotation).normalize();
                residual.angle = residual.angle.max(actual.rotation.angle_between(target));
                any = true;
            }
        }
        any.then_some(residual)
    }
}
