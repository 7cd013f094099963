//! One pose per character, an ordered stack of IK stages on it.
//!
//! An [`IkStack`] owns a character's [`Skeleton`], its [`PoseBuffer`] (the local pose and its
//! lazily updated model-space transforms) and an ordered list of [`StageSlot`]s. Each frame
//! the caller writes the input (animated) pose into the buffer and the stages' goals into
//! their slots, then calls [`IkStack::solve`]: the stages run in order on the one pose, each
//! seeing the previous stage's output (Unity Animation Rigging's rig stack, Unreal IK Rig's
//! solver stack, Godot's `SkeletonModifier3D` children, ozz's jobs on caller-owned buffers).
//!
//! Per stage:
//! - **enabled**: a disabled stage is skipped (its bones pass through unchanged);
//! - **weight** (`[0, 1]`): the stack blends the stage's output with its input once, over the
//!   bones the stage writes ([`Stage::bones`]) and only where the stage changed them: local
//!   rotations by shortest-path slerp, translations (a moving root) linearly. Weight 1 keeps
//!   the solver's output bit for bit, weight 0 the input bit for bit — a stage at weight 0 is
//!   not solved at all ([`StageOutcome::Faded`]: fading a stage out costs nothing; it solves
//!   cold when it fades back in). A non-finite weight is an error
//!   ([`StackError::NonFiniteWeight`]);
//! - **outcome** ([`StageOutcome`]): the solver's report ([`StageReport`], measured by the
//!   solver on its output), or the error that stopped it. A stage that fails leaves its bones
//!   as it found them and the next stages still run.
//!
//! **Warm start** ([`StageSlot::warm_start`], on for the iterative stages): when a stage's
//! input over its bones is bit for bit the input of its last successful solve (nothing
//! animated those bones), the solver starts from that solve's unblended output instead — the
//! frame-to-frame warm start that keeps a still character cheap (a converged solve returns at
//! once). When the input changed (animation), the last solve's correction — its output
//! relative to its input, per bone — is carried onto the new input, so the solver keeps
//! tracking (a full-body stage's `solve` is built for that) instead of starting over each
//! frame. The first solve, and the first after a failure or [`StageSlot::reset_warm_start`],
//! is cold ([`crate::humanoid::FullBodySolver::solve_cold`]; a Jacobian stage's scratch is
//! reset). The blend still runs against this frame's input, so weights stay stationary.
//!
//! **Crowds:** [`LimbBatch`] solves a stack's leading independent two-bone stages (a
//! humanoid's four limbs) together, four per SIMD vector, with the same per-stage semantics;
//! [`IkStack::solve_from`] then runs the rest.
//!
//! Goals are per-frame parameters: write them into the slots ([`StageSlot::stage`], e.g.
//! [`Stage::as_two_bone_mut`]) every frame; nothing is rebuilt. After set-up,
//! [`IkStack::solve`] does not allocate (a test counts allocations), provided the stages'
//! solvers do not (the built-in ones do not).
//!
//! ```
//! use glam::{Quat, Vec3};
//! use ik_core::analytic::{LimbGoal, TwoBoneIk};
//! use ik_core::stack::{IkStack, Stage, StageOutcome, TwoBoneStage};
//! use ik_core::{Bone, BoneTransform, Skeleton};
//!
//! let skeleton = Skeleton::try_new(vec![
//!     Bone::new("shoulder", None, BoneTransform::IDENTITY),
//!     Bone::new(
//!         "elbow",
//!         Some(0),
//!         BoneTransform::from_translation_rotation(Vec3::X * 0.3, Quat::from_rotation_y(-0.2)),
//!     ),
//!     Bone::new("wrist", Some(1), BoneTransform::from_translation(Vec3::X * 0.25)),
//! ])?;
//! let ik = TwoBoneIk::from_names(&skeleton, "shoulder", "elbow", "wrist")?;
//! let arm_stage = TwoBoneStage::new(&skeleton, ik, LimbGoal::new(Vec3::ZERO));
//! let mut stack = IkStack::new(skeleton);
//! let arm = stack.push(Stage::two_bone(arm_stage))?;
//!
//! // Every frame: the animated pose in, the goals, solve, read the pose out.
//! let target = Vec3::new(0.3, 0.1, 0.2);
//! let animated = stack.skeleton().rest_pose();
//! stack.set_input(&animated)?;
//! stack.slot_mut(arm).unwrap().weight = 1.0;
//! stack.slot_mut(arm).unwrap().stage.as_two_bone_mut().unwrap().goal.target = target;
//! let report = stack.solve();
//! assert_eq!(report.failed, 0);
//! assert!(matches!(stack.slot(arm).unwrap().outcome, StageOutcome::Solved(_)));
//! let wrist = stack.model_transform(2).translation;
//! assert!(wrist.distance(target) < 1e-5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod buffer;
mod limbs;
mod stage;

pub use buffer::PoseBuffer;
pub use limbs::{LimbBatch, MIN_BATCHED_LIMBS};
pub use stage::{
    CustomReport, CustomStage, FullBodyStage, JacobianStage, Stage, StageReport, TwoBoneStage,
};

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::analytic::AnalyticError;
use crate::humanoid::HumanoidError;
use crate::jacobian::JacobianError;
use crate::pose::{BoneTransform, Pose};
use crate::skeleton::{Skeleton, SkeletonError};

/// Errors of a stack or one of its stages.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum StackError {
    /// The analytic limb rejected its input.
    #[error(transparent)]
    Analytic(#[from] AnalyticError),
    /// The Jacobian solver rejected its input.
    #[error(transparent)]
    Jacobian(#[from] JacobianError),
    /// The full-body solver rejected its input.
    #[error(transparent)]
    Humanoid(#[from] HumanoidError),
    /// The input pose does not match the skeleton or is not finite.
    #[error(transparent)]
    Skeleton(#[from] SkeletonError),
    /// A stage's weight is NaN or infinite.
    #[error("the stage weight is not finite")]
    NonFiniteWeight,
    /// A stage lists a bone the skeleton does not have.
    #[error("stage bone {bone} is out of range (the skeleton has {len} bones)")]
    BoneOutOfRange {
        /// The bad index.
        bone: usize,
        /// Number of bones.
        len: usize,
    },
    /// A custom stage's own problem.
    #[error("{0}")]
    Custom(&'static str),
}

/// What happened to a stage in the last [`IkStack::solve`].
#[derive(Debug, Clone, PartialEq, Default)]
pub enum StageOutcome {
    /// Not solved yet.
    #[default]
    NotRun,
    /// Skipped: [`StageSlot::enabled`] is false.
    Disabled,
    /// Skipped: the slot's weight is 0, so its output would be its input. Nothing is solved
    /// (a stage faded out costs nothing) and its bones pass through unchanged; the first
    /// solve after it fades back in is cold.
    Faded,
    /// Solved; its output was blended by the slot's weight.
    Solved(StageReport),
    /// Stopped by an error; its bones were left as the stage found them.
    Failed(StackError),
}

/// One stage of a stack with its weight, enabled flag and last outcome.
#[derive(Debug)]
pub struct StageSlot {
    /// The stage and its goals.
    pub stage: Stage,
    /// Blend weight in `[0, 1]` of the stage's output over its input (see the module docs).
    pub weight: f32,
    /// Whether the stage runs.
    pub enabled: bool,
    /// The last solve's outcome (written by [`IkStack::solve`]).
    pub outcome: StageOutcome,
    /// Warm start (see the module docs): when the stage's input for its bones equals the
    /// input of its last successful solve, the solver starts from that solve's (unblended)
    /// output instead of the input. On by default for the iterative stages (Jacobian, full
    /// body), off for the others.
    pub warm_start: bool,
    /// The last successful solve's unblended output and its input, over the stage's bones.
    warm: Vec<(Quat, Vec3)>,
    warm_input: Vec<(Quat, Vec3)>,
    warm_valid: bool,
}

impl StageSlot {
    /// Forgets the warm start (the next solve starts from its input).
    pub fn reset_warm_start(&mut self) {
        self.warm_valid = false;
    }
}

/// What one [`IkStack::solve`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackReport {
    /// Stages that solved.
    pub solved: u32,
    /// Stages that failed.
    pub failed: u32,
    /// The first bone (flat order) whose local transform the stack changed, `None` if the
    /// output equals the input.
    pub first_changed: Option<usize>,
}

/// A character's pose and its ordered IK stages: see the [module docs](self).
#[derive(Debug)]
pub struct IkStack {
    skeleton: Skeleton,
    buffer: PoseBuffer,
    slots: Vec<StageSlot>,
    /// A stage's bones before it ran (capacity for the largest stage).
    saved: Vec<(Quat, Vec3)>,
}

impl IkStack {
    /// An empty stack on `skeleton`, its buffer at the rest pose.
    #[must_use]
    pub fn new(skeleton: Skeleton) -> Self {
        Self {
            buffer: PoseBuffer::new(&skeleton),
            skeleton,
            slots: Vec::new(),
            saved: Vec::new(),
        }
    }

    /// The skeleton.
    #[must_use]
    pub fn skeleton(&self) -> &Skeleton {
        &self.skeleton
    }

    /// Appends `stage` (weight 1, enabled) and returns its index.
    ///
    /// # Errors
    /// [`StackError::BoneOutOfRange`] if the stage lists a bone the skeleton does not have.
    pub fn push(&mut self, stage: Stage) -> Result<usize, StackError> {
        self.insert(self.slots.len(), stage)?;
        Ok(self.slots.len() - 1)
    }

    /// Inserts `stage` at `index` (clamped to the stage count; weight 1, enabled).
    ///
    /// # Errors
    /// As [`IkStack::push`].
    pub fn insert(&mut self, index: usize, stage: Stage) -> Result<(), StackError> {
        let len = self.skeleton.len();
        if let Some(&bone) = stage.bones().iter().find(|&&b| b >= len) {
            return Err(StackError::BoneOutOfRange { bone, len });
        }
        let need = stage.bones().len();
        self.saved.reserve(need.saturating_sub(self.saved.len()));
        let warm_start = matches!(stage, Stage::Jacobian(_) | Stage::FullBody(_));
        self.slots.insert(
            index.min(self.slots.len()),
            StageSlot {
                stage,
                weight: 1.0,
                enabled: true,
                outcome: StageOutcome::NotRun,
                warm_start,
                warm: Vec::with_capacity(need),
                warm_input: Vec::with_capacity(need),
                warm_valid: false,
            },
        );
        Ok(())
    }

    /// Removes and returns the stage at `index`.
    pub fn remove(&mut self, index: usize) -> Option<StageSlot> {
        (index < self.slots.len()).then(|| self.slots.remove(index))
    }

    /// Moves the stage at `from` to position `to` (reordering; both clamped).
    pub fn move_stage(&mut self, from: usize, to: usize) {
        if from < self.slots.len() {
            let slot = self.slots.remove(from);
            self.slots.insert(to.min(self.slots.len()), slot);
        }
    }

    /// The stages, in order.
    #[must_use]
    pub fn slots(&self) -> &[StageSlot] {
        &self.slots
    }

    /// The stages, in order, for writing goals, weights and flags.
    pub fn slots_mut(&mut self) -> &mut [StageSlot] {
        &mut self.slots
    }

    /// The stage at `index`.
    #[must_use]
    pub fn slot(&self, index: usize) -> Option<&StageSlot> {
        self.slots.get(index)
    }

    /// The stage at `index`, for writing.
    pub fn slot_mut(&mut self, index: usize) -> Option<&mut StageSlot> {
        self.slots.get_mut(index)
    }

    /// The skeleton, the pose buffer and the stages at once (to use a stage's solver on the
    /// current pose, e.g. [`FullBodySolver::center_of_mass`](crate::humanoid::FullBodySolver::center_of_mass)).
    pub fn parts_mut(&mut self) -> (&Skeleton, &mut PoseBuffer, &mut [StageSlot]) {
        (&self.skeleton, &mut self.buffer, &mut self.slots)
    }

    /// The pose buffer (the output after [`IkStack::solve`]).
    #[must_use]
    pub fn buffer(&self) -> &PoseBuffer {
        &self.buffer
    }

    /// The pose buffer, for writing the input bone by bone ([`PoseBuffer::set_local`]).
    pub fn buffer_mut(&mut self) -> &mut PoseBuffer {
        &mut self.buffer
    }

    /// The current pose (the output after [`IkStack::solve`]).
    #[must_use]
    pub fn pose(&self) -> &Pose {
        self.buffer.pose()
    }

    /// Bone `bone`'s model transform in the current pose (recomputed lazily).
    ///
    /// # Panics
    /// If `bone` is out of range.
    pub fn model_transform(&mut self, bone: usize) -> BoneTransform {
        self.buffer.model_transform(&self.skeleton, bone)
    }

    /// Every bone's model transform in the current pose (recomputed lazily).
    pub fn model_transforms(&mut self) -> &[BoneTransform] {
        self.buffer.model_transforms(&self.skeleton)
    }

    /// Copies the input pose into the buffer.
    ///
    /// # Errors
    /// [`StackError::Skeleton`] if `pose` does not match the skeleton (the buffer is
    /// unchanged then). A non-finite pose is accepted here and reported by the stages.
    pub fn set_input(&mut self, pose: &Pose) -> Result<(), StackError> {
        if pose.rotations.len() != self.skeleton.len()
            || pose.translations.len() != self.skeleton.len()
        {
            return Err(SkeletonError::PoseLengthMismatch {
                expected: self.skeleton.len(),
                found: pose.rotations.len().min(pose.translations.len()),
            }
            .into());
        }
        self.buffer.set_pose(pose);
        Ok(())
    }

    /// Runs every enabled stage in order on the buffer, blending each by its weight; records
    /// each stage's outcome in its slot. Never fails as a whole: a failing stage is recorded
    /// and skipped.
    pub fn solve(&mut self) -> StackReport {
        self.solve_from(0)
    }

    /// [`IkStack::solve`] from stage `first` on: the earlier stages are not run, their outcomes
    /// and the buffer's pose are left as they are. For a host that ran stages `..first` itself
    /// with [`IkStack::solve_stage_with`] (e.g. two-bone limbs of many characters solved in
    /// one batch).
    pub fn solve_from(&mut self, first: usize) -> StackReport {
        let mut report = StackReport::default();
        for index in first..self.slots.len() {
            self.run_slot(index, &mut report, |stage, skeleton, buffer, cold| {
                stage.run(skeleton, buffer, cold)
            });
        }
        report
    }

    /// Runs stage `index` alone with `solve` in place of the stage's own solver, with
    /// everything else [`IkStack::solve`] does for a stage: skipped when disabled, the weight
    /// checked, its bones saved, the output blended by the weight, the bones restored on an
    /// error, the outcome recorded. `solve` gets the stage, the skeleton and the buffer (the
    /// pose the stage would see) and must write only [`Stage::bones`], through
    /// [`PoseBuffer::set_local`]; it returns the stage's report. It is not called for a
    /// disabled stage, a weight of 0 or a non-finite weight. An index past the last stage does
    /// nothing.
    ///
    /// For hosts that solve a stage elsewhere, e.g. the analytic limbs of many characters in one
    /// [`TwoBoneBatch`](crate::analytic::batch::TwoBoneBatch) call: the result is then blended
    /// and reported exactly as the stage's own solve would be. The stage sees the pose as the
    /// earlier stages left it; solving it ahead of them is the host's choice (valid when they
    /// do not write its bones or their ancestors).
    pub fn solve_stage_with(
        &mut self,
        index: usize,
        solve: impl FnOnce(&mut Stage, &Skeleton, &mut PoseBuffer) -> Result<StageReport, StackError>,
    ) -> StackReport {
        let mut report = StackReport::default();
        if index < self.slots.len() {
            self.run_slot(index, &mut report, |stage, skeleton, buffer, _| {
                solve(stage, skeleton, buffer)
            });
        }
        report
    }

    /// Runs stage `index` (in range) with `solve(stage, skeleton, buffer, cold)`: weight,
    /// warm start, blend and outcome (see the module docs).
    fn run_slot(
        &mut self,
        index: usize,
        report: &mut StackReport,
        solve: impl FnOnce(
            &mut Stage,
            &Skeleton,
            &mut PoseBuffer,
            bool,
        ) -> Result<StageReport, StackError>,
    ) {
        let Self {
            skeleton,
            buffer,
            slots,
            saved,
        } = self;
        let slot = &mut slots[index];
        if !slot.enabled {
            slot.outcome = StageOutcome::Disabled;
            return;
        }
        if !slot.weight.is_finite() {
            slot.outcome = StageOutcome::Failed(StackError::NonFiniteWeight);
            report.failed += 1;
            return;
        }
        let weight = slot.weight.clamp(0.0, 1.0);
        if weight == 0.0 {
            slot.outcome = StageOutcome::Faded;
            // The carried correction would be stale by the time the stage fades back in.
            slot.warm_valid = false;
            return;
        }
        saved.clear();
        let pose = buffer.pose();
        saved.extend(
            slot.stage
                .bones()
                .iter()
                .map(|&b| (pose.rotations[b], pose.translations[b])),
        );
        let warm = slot.warm_start && slot.warm_valid && slot.warm.len() == saved.len();
        if warm {
            // Unchanged input: the last output itself. Animated input: the last frame's IK
            // correction (output relative to its input, per bone) carried onto this frame's
            // input, so tracking goes on over animation instead of starting over.
            let exact = slot.warm_input == *saved;
            let pose = buffer.pose_unchecked_mut();
            for (i, &b) in slot.stage.bones().iter().enumerate() {
                let (q, t) = slot.warm[i];
                if exact {
                    pose.rotations[b] = q;
                    pose.translations[b] = t;
                } else {
                    let ((qi, ti), (qp, tp)) = (saved[i], slot.warm_input[i]);
                    pose.rotations[b] = (qi * (qp.conjugate() * q)).normalize();
                    pose.translations[b] = ti + (t - tp);
                }
            }
            if let Some(&first) = slot.stage.bones().iter().min() {
                buffer.invalidate_from(first);
            }
        }
        // Without a warm start (the first solve, after a failure or a reset) an iterative
        // stage solves cold.
        let result = solve(&mut slot.stage, skeleton, buffer, slot.warm_start && !warm);
        let pose = buffer.pose_unchecked_mut();
        if slot.warm_start {
            slot.warm_valid = result.is_ok();
            if slot.warm_valid {
                slot.warm.clear();
                slot.warm.extend(
                    slot.stage
                        .bones()
                        .iter()
                        .map(|&b| (pose.rotations[b], pose.translations[b])),
                );
                slot.warm_input.clone_from(saved);
            }
        }
        let kept = result.is_ok() && weight > 0.0;
        let mut touched = usize::MAX;
        for (&b, &(q0, t0)) in slot.stage.bones().iter().zip(saved.iter()) {
            let (q, t) = (&mut pose.rotations[b], &mut pose.translations[b]);
            if *q == q0 && *t == t0 {
                continue;
            }
            if !kept {
                (*q, *t) = (q0, t0);
            } else if weight < 1.0 {
                if *q != q0 {
                    *q = q0.slerp(*q, weight);
                }
                if *t != t0 {
                    *t = t0.lerp(*t, weight);
                }
            }
            touched = touched.min(b);
        }
        if touched != usize::MAX {
            buffer.invalidate_from(touched);
            if kept {
                report.first_changed =
                    Some(report.first_changed.map_or(touched, |f| f.min(touched)));
            }
        }
        match result {
            Ok(r) => {
                report.solved += 1;
                slot.outcome = StageOutcome::Solved(r);
            }
            Err(e) => {
                report.failed += 1;
                slot.outcome = StageOutcome::Failed(e);
            }
        }
    }
}
