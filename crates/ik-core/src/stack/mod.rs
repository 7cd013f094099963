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
//! This store is the only record of a stage's last output: a warm solve hands it to the stage
//! ([`Stage::solve_warm`]), and the full-body stage's solver reads it there (joints known to
//! be within their limits, its fixed point) instead of keeping a copy.
//!
//! **Crowds:** [`LimbBatch`] solves a stack's leading independent two-bone stages (a
//! humanoid's four limbs) together, four per SIMD vector, with the same per-stage semantics;
//! [`IkStack::solve_from`] then runs the rest.
//!
//! **Honest results:** after the last stage, every solved stage's goals are measured on the
//! final pose ([`Stage::measure`] into [`StageSlot::final_residual`]), and
//! [`StageSlot::goals_moved`] says whether a later stage carried them away (a look-at's spine
//! turn moving a reaching hand off its cup). A stage with [`StageSlot::keep_goals`] is then
//! solved once more on the final pose; the flag says whether that could not restore it.
//!
//! Goals are per-frame parameters: write them into the slots ([`StageSlot::stage`], e.g.
//! [`AnyStage::as_two_bone_mut`]) every frame; nothing is rebuilt. After set-up,
//! [`IkStack::solve`] does not allocate (a test counts allocations), provided the stages'
//! solvers do not (the built-in ones do not).
//!
//! ```
//! use glam::{Quat, Vec3};
//! use ik_core::analytic::{LimbGoal, TwoBoneIk};
//! use ik_core::stack::{IkStack, StageOutcome, TwoBoneStage};
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
//! let arm = stack.push(arm_stage)?;
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
mod limb_stage;
mod limbs;
mod stage;

pub use buffer::PoseBuffer;
pub use limb_stage::LimbBatchStage;
pub use limbs::{LimbBatch, MIN_BATCHED_LIMBS};
#[allow(
    deprecated,
    reason = "the old trait name stays importable (migration path)"
)]
pub use stage::CustomStage;
pub use stage::{
    AnyStage, CustomReport, FullBodyStage, GoalResidual, JacobianStage, Stage, StageReport,
    TwoBoneStage,
};

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::analytic::AnalyticError;
use crate::analytic::batch::BatchError;
use crate::behaviours::BehaviourError;
use crate::chain::ChainError;
use crate::grounding::GroundingError;
use crate::humanoid::HumanoidError;
use crate::jacobian::JacobianError;
use crate::pose::{BoneTransform, Pose};
use crate::skeleton::{Skeleton, SkeletonError};
use crate::spline::SplineError;
use crate::spring::SpringError;
use crate::vr::VrError;

/// Errors of a stack or one of its stages.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum StackError {
    /// The analytic limb rejected its input.
    #[error(transparent)]
    Analytic(#[from] AnalyticError),
    /// The batched limbs ([`LimbBatchStage`]) refused a limb or an index.
    #[error(transparent)]
    Batch(#[from] BatchError),
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
    /// A chain stage rejected its input.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// A spline stage rejected its input.
    #[error(transparent)]
    Spline(#[from] SplineError),
    /// A spring stage rejected its input.
    #[error(transparent)]
    Spring(#[from] SpringError),
    /// The grounding stage rejected its input.
    #[error(transparent)]
    Grounding(#[from] GroundingError),
    /// The VR body rejected its input.
    #[error(transparent)]
    Vr(#[from] VrError),
    /// A behaviour stage (look-at, aim, twist…) rejected its input.
    #[error(transparent)]
    Behaviour(#[from] BehaviourError),
    /// A value a stage reads or writes is NaN or infinite.
    #[error("{0} is not finite")]
    NonFinite(NonFinite),
    /// A stage was given a different number of per-frame inputs than it has parts (e.g. one
    /// ground sample per leg).
    #[error("{expected} per-frame inputs expected, {found} given")]
    InputCountMismatch {
        /// What the stage was built for.
        expected: usize,
        /// What it was given.
        found: usize,
    },
    /// A stage was built for another skeleton.
    #[error("the stage was built for another skeleton")]
    SkeletonMismatch,
    /// Bone `bone` cannot play its part in the stage: it is the root, or an ancestor of
    /// `other` where it must not be (e.g. a detached foot above its leg's end bone).
    #[error("bone {bone} cannot be used with bone {other} in this stage")]
    BadBonePair {
        /// The bone rejected.
        bone: usize,
        /// The bone it was paired with.
        other: usize,
    },
    /// A user stage's own typed error ([`StageError::new`]).
    #[error(transparent)]
    Stage(StageError),
}

/// What [`StackError::NonFinite`] found not finite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NonFinite {
    /// The pose a stage read.
    InputPose,
    /// The pose a stage computed (it was not written).
    SolvedPose,
    /// A goal, target or tracker pose.
    Goal,
    /// The frame time.
    TimeStep,
    /// The model-to-world transform.
    ModelFrame,
}

impl core::fmt::Display for NonFinite {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::InputPose => "the input pose",
            Self::SolvedPose => "the solved pose",
            Self::Goal => "a goal",
            Self::TimeStep => "the time step",
            Self::ModelFrame => "the model-to-world transform",
        })
    }
}

/// A user stage's own error, typed ([`StackError::Stage`]): any `std` error, shared (so
/// [`StackError`] stays `Clone`). Two are equal when they are the same error value.
#[derive(Clone, Debug)]
pub struct StageError(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl StageError {
    /// Wraps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(error))
    }

    /// The wrapped error, to downcast to the stage's own type.
    #[must_use]
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl PartialEq for StageError {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl core::fmt::Display for StageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
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
///
/// (`repr(C)`: the fields every solve reads or writes follow the stage, together, so a slot of
/// a crowd touches as few cache lines as it can; the warm-start store, used by the iterative
/// stages only, comes last.)
#[derive(Debug)]
#[repr(C)]
pub struct StageSlot {
    /// The stage and its goals ([`AnyStage::get_mut`] reaches the concrete stage).
    pub stage: AnyStage,
    /// Blend weight in `[0, 1]` of the stage's output over its input (see the module docs).
    pub weight: f32,
    /// Whether the stage runs.
    pub enabled: bool,
    /// Warm start (see the module docs): when the stage's input for its bones equals the
    /// input of its last successful solve, the solver starts from that solve's (unblended)
    /// output instead of the input. On by default for the iterative stages (Jacobian, full
    /// body), off for the others.
    pub warm_start: bool,
    warm_valid: bool,
    /// Whether the later stages must keep this stage's goals: when one of them moved them
    /// away (see [`StageSlot::final_residual`]), the stack solves this stage once more after
    /// the last stage, on the final pose (the look-at then keeps the hand on the cup), and
    /// [`StageSlot::goals_moved`] says whether it still could not. Off by default.
    pub keep_goals: bool,
    /// Whether a later stage moved this stage's goals away: on the final pose they are
    /// further than [`StackSettings::goal_tolerance`] from what the stage itself reached
    /// ([`StageReport::position_residual`], [`StageReport::angle_residual`]). The stage's own
    /// report says it converged; this says whether the character still shows it.
    pub goals_moved: bool,
    /// Whether this stage changed the pose in the last solve (after its blend).
    touched: bool,
    /// What the stage's own solve reached this frame, before any re-solve.
    reached: GoalResidual,
    /// This stage's goals measured on the character's final pose after the last
    /// [`IkStack::solve`], after every later stage ([`Stage::measure`]); `None` when the stage
    /// did not solve or has no measurable goal.
    pub final_residual: Option<GoalResidual>,
    /// This slot's bones packed ([`packed_bones`], `u64::MAX` when they do not pack) and its
    /// index when the measurement was last planned (`MeasurePlan`): a solve that finds either
    /// changed (a stage replaced or reordered through [`IkStack::slots_mut`]) re-plans. Kept
    /// beside the flags every solve reads, so checking costs no memory access of its own.
    plan_key: u64,
    plan_index: usize,
    /// The last solve's outcome (written by [`IkStack::solve`]).
    pub outcome: StageOutcome,
    /// The last successful solve's unblended output, then its input, over the stage's bones
    /// (one allocation: a slot of a crowd stays within fewer cache lines).
    warm: Vec<(Quat, Vec3)>,
}

/// A stage's bones packed exactly into one word when it has at most three, each below
/// 2^20 (a limb: checking them each solve reads one word of the plan per character), `None`
/// otherwise (then compared bone by bone with the plan's copy).
#[inline]
fn packed_bones(bones: &[usize]) -> Option<u64> {
    const BITS: u32 = 20;
    if bones.len() > 3 {
        return None;
    }
    let mut key = bones.len() as u64;
    for (i, &b) in bones.iter().enumerate() {
        let b = u64::try_from(b).ok().filter(|&b| b < 1 << BITS)?;
        key |= b << (4 + BITS * i as u32);
    }
    Some(key)
}

/// Which stages a later stage can move, from the stages' bones alone (rebuilt only when a
/// stage was added, removed, moved or its bones changed): per slot, bit sets over the
/// skeleton's bones of what it writes and of its bones with their ancestors (whose change can
/// move its effectors), and the slots one of whose dependencies a later slot writes. Only
/// those are ever measured by forward kinematics on the final pose; a crowd of independent
/// limbs has none and its measurement costs nothing.
#[derive(Debug, Default)]
struct MeasurePlan {
    valid: bool,
    /// Per slot, its bones when planned, a `(start, len)` span of `bones` (compared when they
    /// do not pack into [`StageSlot`]'s key).
    spans: Vec<(usize, usize)>,
    bones: Vec<usize>,
    /// `u64` words per bit set.
    words: usize,
    /// Slot `i`'s bit sets at `i * words..`.
    writes: Vec<u64>,
    deps: Vec<u64>,
    /// Slots a later slot could move, in order.
    exposed: Vec<usize>,
    /// Scratch: the bones written by the changing stages after the one being measured.
    later: Vec<u64>,
}

impl MeasurePlan {
    fn rebuild(&mut self, skeleton: &Skeleton, slots: &mut [StageSlot]) {
        let words = skeleton.len().div_ceil(64);
        self.words = words;
        self.writes.clear();
        self.writes.resize(words * slots.len(), 0);
        self.deps.clear();
        self.deps.resize(words * slots.len(), 0);
        self.spans.clear();
        self.bones.clear();
        for (i, slot) in slots.iter_mut().enumerate() {
            let bones = slot.stage.bones();
            slot.plan_key = packed_bones(bones).unwrap_or(u64::MAX);
            slot.plan_index = i;
            self.spans.push((self.bones.len(), bones.len()));
            self.bones.extend_from_slice(bones);
            let (writes, deps) = (
                &mut self.writes[i * words..(i + 1) * words],
                &mut self.deps[i * words..(i + 1) * words],
            );
            for &b in bones {
                if b / 64 < words {
                    writes[b / 64] |= 1 << (b % 64);
                }
                for a in skeleton.ancestors_inclusive(b) {
                    if a / 64 < words {
                        deps[a / 64] |= 1 << (a % 64);
                    }
                }
            }
        }
        self.exposed.clear();
        self.later.clear();
        self.later.resize(words, 0);
        for i in (0..slots.len()).rev() {
            if self
                .deps_of(i)
                .iter()
                .zip(&self.later)
                .any(|(d, w)| d & w != 0)
            {
                self.exposed.push(i);
            }
            for (w, m) in self
                .later
                .iter_mut()
                .zip(&self.writes[i * words..(i + 1) * words])
            {
                *w |= m;
            }
        }
        self.exposed.reverse();
        self.valid = true;
    }

    /// Whether `slot`, at `index`, has the bones it was planned with.
    #[inline]
    fn planned(&self, index: usize, slot: &StageSlot) -> bool {
        let bones = slot.stage.bones();
        if slot.plan_index != index {
            return false;
        }
        match packed_bones(bones) {
            Some(packed) => packed == slot.plan_key,
            None => {
                slot.plan_key == u64::MAX
                    && self.spans.get(index).is_some_and(|&(start, len)| {
                        len == bones.len()
                            && self.bones[start..start + len]
                                .iter()
                                .zip(bones)
                                .all(|(a, b)| a == b)
                    })
            }
        }
    }

    fn deps_of(&self, slot: usize) -> &[u64] {
        &self.deps[slot * self.words..(slot + 1) * self.words]
    }
}

impl StageSlot {
    /// Records the outcome of this frame's solve; a solved stage's final residual is what it
    /// reached until a later stage is found to have moved it (`IkStack::measure_final`).
    #[inline(always)]
    fn record(&mut self, outcome: StageOutcome, resolving: bool) {
        self.outcome = outcome;
        if !resolving {
            self.final_residual = match &self.outcome {
                StageOutcome::Solved(own) => {
                    self.reached = GoalResidual {
                        position: own.position_residual(),
                        angle: own.angle_residual(),
                    };
                    Some(self.reached)
                }
                _ => None,
            };
            self.goals_moved = false;
        }
    }
}

impl StageSlot {
    /// Forgets the warm start (the next solve starts from its input).
    pub fn reset_warm_start(&mut self) {
        self.warm_valid = false;
    }

    /// The stage if it is a `T` ([`AnyStage::get`]).
    #[must_use]
    pub fn stage<T: Stage>(&self) -> Option<&T> {
        self.stage.get()
    }

    /// The stage if it is a `T`, to write its goals ([`AnyStage::get_mut`]).
    #[must_use]
    pub fn stage_mut<T: Stage>(&mut self) -> Option<&mut T> {
        self.stage.get_mut()
    }
}

/// A stack's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StackSettings {
    /// How far (model units; radians for angles) a stage's goals may drift from what the
    /// stage reached before a later stage is said to have moved them
    /// ([`StageSlot::goals_moved`]). Default [`StackSettings::DEFAULT_GOAL_TOLERANCE`].
    pub goal_tolerance: f32,
}

impl StackSettings {
    /// 1e-4: a tenth of a millimetre on a rig in metres, the two-bone limb's convergence
    /// tolerance ([`StageReport::converged`]) on a limb of unit length, and well above the
    /// f32 rounding of forward kinematics over a few bones at character scale.
    pub const DEFAULT_GOAL_TOLERANCE: f32 = 1e-4;
}

impl Default for StackSettings {
    fn default() -> Self {
        Self {
            goal_tolerance: Self::DEFAULT_GOAL_TOLERANCE,
        }
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
    /// Stages whose goals a later stage moved away (measured on the final pose, after any
    /// [`StageSlot::keep_goals`] re-solve): see [`StageSlot::goals_moved`].
    pub goals_moved: u32,
}

/// A character's pose and its ordered IK stages: see the [module docs](self).
#[derive(Debug)]
pub struct IkStack {
    skeleton: Skeleton,
    buffer: PoseBuffer,
    slots: Vec<StageSlot>,
    /// A stage's bones before it ran (capacity for the largest stage).
    saved: Vec<(Quat, Vec3)>,
    /// The stack's settings.
    pub settings: StackSettings,
    /// A [`StageSlot::keep_goals`] re-solve is running (see `run_slot`).
    resolving: bool,
    /// Which stages the final-pose measurement must look at.
    plan: MeasurePlan,
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
            settings: StackSettings::default(),
            resolving: false,
            plan: MeasurePlan::default(),
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
    pub fn push(&mut self, stage: impl Into<AnyStage>) -> Result<usize, StackError> {
        self.insert(self.slots.len(), stage)?;
        Ok(self.slots.len() - 1)
    }

    /// Inserts `stage` at `index` (clamped to the stage count; weight 1, enabled).
    ///
    /// # Errors
    /// As [`IkStack::push`].
    pub fn insert(&mut self, index: usize, stage: impl Into<AnyStage>) -> Result<(), StackError> {
        let stage = stage.into();
        let len = self.skeleton.len();
        if let Some(&bone) = stage.bones().iter().find(|&&b| b >= len) {
            return Err(StackError::BoneOutOfRange { bone, len });
        }
        let need = stage.bones().len();
        self.saved.reserve(need.saturating_sub(self.saved.len()));
        let warm_start = stage.as_dyn().warm_starts();
        self.slots.insert(
            index.min(self.slots.len()),
            StageSlot {
                stage,
                weight: 1.0,
                enabled: true,
                outcome: StageOutcome::NotRun,
                warm_start,
                warm: Vec::with_capacity(2 * need),
                warm_valid: false,
                keep_goals: false,
                final_residual: None,
                goals_moved: false,
                touched: false,
                reached: GoalResidual::default(),
                plan_key: u64::MAX,
                plan_index: usize::MAX,
            },
        );
        self.plan.valid = false;
        Ok(())
    }

    /// Removes and returns the stage at `index`.
    pub fn remove(&mut self, index: usize) -> Option<StageSlot> {
        self.plan.valid = false;
        (index < self.slots.len()).then(|| self.slots.remove(index))
    }

    /// Moves the stage at `from` to position `to` (reordering; both clamped).
    pub fn move_stage(&mut self, from: usize, to: usize) {
        self.plan.valid = false;
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
            self.run_slot(index, &mut report, |stage, skeleton, buffer, cold, last| {
                stage.run(skeleton, buffer, cold, last)
            });
        }
        self.measure_final(&mut report);
        report
    }

    /// Measures on the final pose the goals of every solved stage a later stage moved
    /// ([`StageSlot::final_residual`], [`StageSlot::goals_moved`]); re-solves once, on the
    /// final pose, a stage that must keep its goals ([`StageSlot::keep_goals`]) and lost them,
    /// then measures again.
    ///
    /// A stage is measured by forward kinematics only when a later stage changed the pose and
    /// wrote one of its bones or their ancestors, the only bones that can move its effectors;
    /// otherwise what it reached stands (recorded when it solved). Which stages a later one
    /// can reach at all is known from their bones (`MeasurePlan`): when none can (a crowd of
    /// independent limbs), nothing is walked.
    fn measure_final(&mut self, report: &mut StackReport) {
        if !self.plan.valid {
            self.plan.rebuild(&self.skeleton, &mut self.slots);
        }
        if self.plan.exposed.is_empty() {
            return;
        }
        let tolerance = self.settings.goal_tolerance;
        let mut resolved = false;
        let words = self.plan.words;
        let mut plan = core::mem::take(&mut self.plan);
        plan.later.clear();
        plan.later.resize(words, 0);
        let mut next_exposed = plan.exposed.len();
        for index in (0..self.slots.len()).rev() {
            if next_exposed > 0 && plan.exposed[next_exposed - 1] == index {
                next_exposed -= 1;
                let affected = plan
                    .deps_of(index)
                    .iter()
                    .zip(&plan.later)
                    .any(|(d, w)| d & w != 0);
                let (moved, keep) = self.measure_slot(index, affected, tolerance);
                if moved && keep {
                    let mut again = StackReport::default();
                    self.resolving = true;
                    self.run_slot(index, &mut again, |stage, skeleton, buffer, cold, last| {
                        stage.run(skeleton, buffer, cold, last)
                    });
                    self.resolving = false;
                    report.first_changed = match (report.first_changed, again.first_changed) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    resolved = true;
                }
            }
            if self.slots[index].touched {
                let writes = &plan.writes[index * words..(index + 1) * words];
                for (w, m) in plan.later.iter_mut().zip(writes) {
                    *w |= m;
                }
            }
        }
        if resolved {
            // A re-solve may have moved an earlier kept stage's goals or a later stage's:
            // measure every stage once more on the pose the character shows.
            for index in 0..self.slots.len() {
                self.measure_slot(index, true, tolerance);
            }
        }
        self.plan = plan;
        report.goals_moved = self.slots.iter().filter(|s| s.goals_moved).count() as u32;
    }

    /// Measures stage `index` on the current pose when `affected` (a later stage wrote a bone
    /// that can move its effectors), against what its own solve reached this frame; returns
    /// (goals moved, keep goals).
    fn measure_slot(&mut self, index: usize, affected: bool, tolerance: f32) -> (bool, bool) {
        let Self {
            skeleton,
            buffer,
            slots,
            ..
        } = self;
        let slot = &mut slots[index];
        let StageOutcome::Solved(_) = &slot.outcome else {
            slot.final_residual = None;
            slot.goals_moved = false;
            return (false, false);
        };
        let reached = slot.reached;
        if !affected {
            slot.final_residual = Some(reached);
            slot.goals_moved = false;
            return (false, false);
        }
        slot.final_residual = slot.stage.measure(skeleton, buffer);
        slot.goals_moved = slot.final_residual.is_some_and(|r| {
            r.position > reached.position + tolerance || r.angle > reached.angle + tolerance
        });
        (slot.goals_moved, slot.keep_goals)
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
        solve: impl FnOnce(&mut AnyStage, &Skeleton, &mut PoseBuffer) -> Result<StageReport, StackError>,
    ) -> StackReport {
        let mut report = StackReport::default();
        if index < self.slots.len() {
            self.run_slot(index, &mut report, |stage, skeleton, buffer, _, _| {
                solve(stage, skeleton, buffer)
            });
        }
        report
    }

    /// Runs stage `index` (in range) with `solve(stage, skeleton, buffer, cold, last)`:
    /// weight, warm start, blend and outcome (see the module docs); `last` is the store's
    /// last output when the solve starts warm from it ([`Stage::solve_warm`]).
    fn run_slot(
        &mut self,
        index: usize,
        report: &mut StackReport,
        solve: impl FnOnce(
            &mut AnyStage,
            &Skeleton,
            &mut PoseBuffer,
            bool,
            Option<&[(Quat, Vec3)]>,
        ) -> Result<StageReport, StackError>,
    ) {
        let Self {
            skeleton,
            buffer,
            slots,
            saved,
            resolving,
            plan,
            ..
        } = self;
        let resolving = *resolving;
        let slot = &mut slots[index];
        slot.touched = false;
        if !slot.enabled {
            slot.record(StageOutcome::Disabled, resolving);
            return;
        }
        if !slot.weight.is_finite() {
            slot.record(StageOutcome::Failed(StackError::NonFiniteWeight), resolving);
            report.failed += 1;
            return;
        }
        let weight = slot.weight.clamp(0.0, 1.0);
        if weight == 0.0 {
            slot.record(StageOutcome::Faded, resolving);
            // The carried correction would be stale by the time the stage fades back in.
            slot.warm_valid = false;
            return;
        }
        // A stage that runs with other bones, or at another index, than the measurement was
        // planned for (replaced or reordered through `slots_mut`) re-plans it. (A stage that
        // does not run neither changes the pose nor is measured.)
        if !plan.planned(index, slot) {
            plan.valid = false;
        }
        let n = slot.stage.bones().len();
        // A re-solve on the final pose ([`StageSlot::keep_goals`]) starts from that pose and
        // leaves the warm start to this frame's first solve, which tracks from frame to frame.
        let warm = !resolving && slot.warm_start && slot.warm_valid && slot.warm.len() == 2 * n;
        // Unchanged input (nothing animated the stage's bones): the store's input half is this
        // frame's input, and serves as the saved copy (a crowd's character standing on its
        // solved pose copies nothing).
        let pose = buffer.pose();
        let exact = warm
            && (slot.stage.bones().iter().zip(&slot.warm[n..]))
                .all(|(&b, &w)| (pose.rotations[b], pose.translations[b]) == w);
        saved.clear();
        if !exact {
            saved.extend(
                slot.stage
                    .bones()
                    .iter()
                    .map(|&b| (pose.rotations[b], pose.translations[b])),
            );
        }
        if warm {
            // Unchanged input: the last output itself. Animated input: the last frame's IK
            // correction (output relative to its input, per bone) carried onto this frame's
            // input, so tracking goes on over animation instead of starting over.
            let (warm_output, warm_input) = slot.warm.split_at(n);
            let pose = buffer.pose_unchecked_mut();
            for (i, &b) in slot.stage.bones().iter().enumerate() {
                let (q, t) = warm_output[i];
                if exact {
                    pose.rotations[b] = q;
                    pose.translations[b] = t;
                } else {
                    let ((qi, ti), (qp, tp)) = (saved[i], warm_input[i]);
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
        let result = solve(
            &mut slot.stage,
            skeleton,
            buffer,
            slot.warm_start && !warm && !resolving,
            warm.then(|| &slot.warm[..n]),
        );
        let pose = buffer.pose_unchecked_mut();
        if slot.warm_start && !resolving {
            slot.warm_valid = result.is_ok();
            if slot.warm_valid && exact {
                // The input half holds this frame's input already.
                for (w, &b) in slot.warm[..n].iter_mut().zip(slot.stage.bones()) {
                    *w = (pose.rotations[b], pose.translations[b]);
                }
            } else if slot.warm_valid {
                slot.warm.clear();
                slot.warm.extend(
                    slot.stage
                        .bones()
                        .iter()
                        .map(|&b| (pose.rotations[b], pose.translations[b])),
                );
                slot.warm.extend_from_slice(saved);
            }
        }
        // This frame's input over the stage's bones, for the blend and the restore.
        let saved: &[(Quat, Vec3)] = if exact { &slot.warm[n..] } else { saved };
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
                slot.touched = true;
            }
        }
        match result {
            Ok(r) => {
                report.solved += 1;
                slot.record(StageOutcome::Solved(r), resolving);
            }
            Err(e) => {
                report.failed += 1;
                slot.record(StageOutcome::Failed(e), resolving);
            }
        }
    }
}
