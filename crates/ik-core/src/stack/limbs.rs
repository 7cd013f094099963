//! [`LimbBatch`]: a stack's leading independent two-bone stages solved together in one
//! [`TwoBoneBatch`] call, with the stack's per-stage semantics (enabled flag, weight blend,
//! outcome) applied straight on the batch's output.
//! See [`LimbBatch`].

use glam::{Quat, Vec3};

use crate::analytic::batch::{BatchError, BatchScratch, LaneGoals, LanePoses, TwoBoneBatch};
use crate::analytic::{AnalyticError, LimbGoal, LimbReport, LimbSettings, TwoBoneIk};
use crate::pose::{BoneTransform, Pose};
use crate::skeleton::Skeleton;

use super::{AnyStage, IkStack, PoseBuffer, StackError, StageOutcome, StageReport, TwoBoneStage};

/// Fewest leading stages [`LimbBatch::try_new`] batches.
pub const MIN_BATCHED_LIMBS: usize = 2;

/// One batched limb: what the batch was built with, and this frame's input.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limb {
    /// Root, mid, tip.
    pub(super) bones: [usize; 3],
    /// The root's parent.
    pub(super) parent: Option<usize>,
    /// The settings the batch was built with.
    pub(super) settings: LimbSettings,
    /// The local translations the batch holds.
    pub(super) translations: [Vec3; 3],
    /// This frame's input rotations (what a weight blends from).
    pub(super) input: [Quat; 3],
}

/// A stack's leading independent two-bone stages, solved together in one [`TwoBoneBatch`]
/// call, with the stack's per-stage semantics applied straight on the batch's output.
///
/// # Which stages
///
/// The leading run of [`TwoBoneStage`]s in which no stage reads a bone an earlier one
/// of the run writes: its own root, mid and tip, and its root's ancestors (whose model
/// transform is its parent frame). Such a stage sees the stack's input pose whether it runs
/// first or fourth, so solving the run at once on that pose gives what solving it in order
/// gives. Limbs with bones between root, mid and tip (twist bones) end the run
/// ([`TwoBoneBatch`] refuses them). At least two stages: one limb alone pays for three empty
/// lanes.
///
/// # Semantics kept
///
/// Per stage, what [`IkStack::solve`] does: a disabled stage is skipped
/// ([`StageOutcome::Disabled`], its bones untouched), a non-finite weight fails
/// ([`StackError::NonFiniteWeight`]), the output is blended with the input by the weight
/// (shortest-path slerp of the rotations the solve changed; weight 1 keeps the solved
/// rotations; weight 0 the input: [`StageOutcome::Faded`]), a limb the solver rejects keeps its input and gets
/// [`StageOutcome::Failed`], a solved one [`StageOutcome::Solved`] with its [`LimbReport`]. The
/// rotations are the batch's, which match the scalar [`TwoBoneIk`](crate::analytic::TwoBoneIk)
/// solve's to rounding (see [`crate::analytic::batch`]; the tests hold the two paths to 1e-5
/// of the limb length).
///
/// Goals, weights and flags stay per-frame parameters. A stage whose settings changed
/// rebuilds the batch (rare, allocates); a limb whose local translations animation changed
/// updates its lane. When the stack no longer starts with the stages the batch was built for
/// (changed through [`IkStack::slots_mut`]), or one of them has a warm start on
/// ([`StageSlot::warm_start`](super::StageSlot::warm_start): the batch solves from the input),
/// [`LimbBatch::solve`] solves nothing and returns 0: the stack's own solve then runs every
/// stage.
///
/// # The hand-over
///
/// The batch's goals and poses stay in its lanes between frames ([`LaneGoals`],
/// [`LanePoses`]). Each solve reads every limb's parent frame and input rotations once (the
/// parent frames before any limb is written, so the buffer's forward kinematics runs once),
/// solves, and writes each limb's rotations from the lanes straight into the buffer's local
/// pose, marking the model transforms stale once, from the first bone written. No per-stage
/// save and restore: a limb that fails is never written (the batch leaves its rotations as
/// they were), and the input a weight blends from is the one read into the lanes.
///
/// ```
/// use glam::Vec3;
/// use ik_core::analytic::{LimbGoal, TwoBoneIk};
/// use ik_core::stack::{IkStack, LimbBatch, StageOutcome, TwoBoneStage};
/// use ik_core::{Bone, BoneTransform, Skeleton};
///
/// // Two arms on one body.
/// let skeleton = Skeleton::try_new(vec![
///     Bone::new("chest", None, BoneTransform::IDENTITY),
///     Bone::new("l_arm", Some(0), BoneTransform::from_translation(Vec3::X * 0.2)),
///     Bone::new("l_fore", Some(1), BoneTransform::from_translation(Vec3::X * 0.3)),
///     Bone::new("l_hand", Some(2), BoneTransform::from_translation(Vec3::X * 0.25)),
///     Bone::new("r_arm", Some(0), BoneTransform::from_translation(Vec3::NEG_X * 0.2)),
///     Bone::new("r_fore", Some(4), BoneTransform::from_translation(Vec3::NEG_X * 0.3)),
///     Bone::new("r_hand", Some(5), BoneTransform::from_translation(Vec3::NEG_X * 0.25)),
/// ])?;
/// let mut stack = IkStack::new(skeleton.clone());
/// for (root, target) in [(1, Vec3::new(0.5, -0.2, 0.1)), (4, Vec3::new(-0.5, -0.2, 0.1))] {
///     let ik = TwoBoneIk::try_new(&skeleton, root, root + 1, root + 2)?;
///     let goal = LimbGoal::new(target).with_pole(Vec3::NEG_Z);
///     stack.push(TwoBoneStage::new(&skeleton, ik, goal))?;
/// }
/// // Set-up, once (the goals as the stages hold them).
/// let mut batch = LimbBatch::try_new(&stack).expect("two independent arms");
/// // Every frame: the input pose; each goal into its stage (the stack's own solve reads it)
/// // and into the batch; then the batched stages and the rest of the stack.
/// stack.set_input(&skeleton.rest_pose())?;
/// let target = Vec3::new(0.45, -0.25, 0.1);
/// let goal = LimbGoal::new(target).with_pole(Vec3::NEG_Z);
/// stack.slot_mut(0).unwrap().stage.as_two_bone_mut().unwrap().goal = goal;
/// batch.set_goal(0, &goal);
/// let first = batch.solve(&mut stack);
/// stack.solve_from(first);
/// assert_eq!(first, 2);
/// assert!(matches!(stack.slot(0).unwrap().outcome, StageOutcome::Solved(_)));
/// assert!(stack.model_transform(3).translation.distance(target) < 1e-5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct LimbBatch {
    /// Limb `i` = stack slot `i`; the goals are this frame's ([`LimbBatch::set_goal`]).
    lanes: Lanes,
}

/// A batched run of limbs between frames, as [`LimbBatch`] and
/// [`LimbBatchStage`](super::LimbBatchStage) both keep it: the batch, each limb's set-up and
/// input, the goals and poses in lanes, the reports and the scratch.
#[derive(Clone, Debug)]
pub(super) struct Lanes {
    batch: TwoBoneBatch,
    pub(super) limbs: Vec<Limb>,
    pub(super) goals: LaneGoals,
    /// Parent frames and rotations in, solved rotations out.
    pub(super) poses: LanePoses,
    pub(super) reports: Vec<Result<LimbReport, AnalyticError>>,
    scratch: BatchScratch,
    /// One past the last limb's root's parent: the model transforms the solve reads.
    parents_end: usize,
}

impl Lanes {
    /// The lanes of `batch`, built for the limbs `iks` of `skeleton`, their goals `goals` (one
    /// per limb, in order).
    pub(super) fn new<'a>(
        skeleton: &Skeleton,
        batch: TwoBoneBatch,
        iks: impl ExactSizeIterator<Item = &'a TwoBoneIk>,
        goals: impl IntoIterator<Item = &'a LimbGoal>,
    ) -> Self {
        let rest = skeleton.rest_pose();
        let n = iks.len();
        let mut lane_goals = LaneGoals::new(n);
        for (i, goal) in goals.into_iter().enumerate() {
            // (In range: one goal per limb.)
            let _ = lane_goals.set(i, goal);
        }
        let limbs: Vec<Limb> = iks.map(|ik| Limb::new(skeleton, &rest, ik)).collect();
        Self {
            parents_end: parents_end(&limbs),
            batch,
            limbs,
            goals: lane_goals,
            poses: LanePoses::new(n),
            reports: vec![Ok(LimbReport::default()); n],
            scratch: BatchScratch::new(),
        }
    }

    /// Reads every limb's root's parent frame and input rotations from `buffer` into the lanes
    /// (the parent frames before any limb is written: one forward-kinematics pass over the
    /// prefix the limbs read), then solves the lanes toward the goals: the results are in
    /// [`Lanes::poses`] and [`Lanes::reports`], the buffer is not written. Returns what
    /// [`TwoBoneBatch::solve_lanes`] does.
    #[inline]
    pub(super) fn load_and_solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<usize, BatchError> {
        let (model, pose) = buffer.model_prefix(skeleton, self.parents_end);
        load_lanes(
            &mut self.batch,
            &mut self.limbs,
            &mut self.poses,
            model,
            pose,
        );
        self.batch.solve_lanes(
            &self.goals,
            &mut self.poses,
            Some(&mut self.reports),
            &mut self.scratch,
        )
    }
}

/// The two-bone stage in `stage`, if it is one.
fn two_bone(stage: &AnyStage) -> Option<&TwoBoneStage> {
    stage.as_two_bone()
}

impl LimbBatch {
    /// The batch for `stack`'s leading independent two-bone stages (see the
    /// [type docs](LimbBatch)), their goals as the stages hold them now; `None` when fewer than
    /// [`MIN_BATCHED_LIMBS`] qualify.
    #[must_use]
    pub fn try_new(stack: &IkStack) -> Option<Self> {
        let skeleton = stack.skeleton();
        let mut stages: Vec<&TwoBoneStage> = Vec::new();
        for slot in stack.slots() {
            let Some(s) = two_bone(&slot.stage) else {
                break;
            };
            stages.push(s);
        }
        let (run, _) = independent_run(skeleton, stages.iter().map(|s| s.ik().bones()));
        stages.truncate(run);
        // Keep the longest prefix the batch accepts (twist bones end the run).
        while stages.len() >= MIN_BATCHED_LIMBS {
            match TwoBoneBatch::try_new(stages.iter().map(|s| (skeleton, s.ik()))) {
                Ok(batch) => return Some(Self::with_batch(stack, batch, &stages)),
                Err(BatchError::BonesBetween { limb }) => {
                    stages.truncate(limb);
                }
                Err(_) => return None,
            }
        }
        None
    }

    fn with_batch(stack: &IkStack, batch: TwoBoneBatch, stages: &[&TwoBoneStage]) -> Self {
        Self {
            lanes: Lanes::new(
                stack.skeleton(),
                batch,
                stages.iter().map(|s| s.ik()),
                stages.iter().map(|s| &s.goal),
            ),
        }
    }

    /// Number of batched stages (the stack's first ones).
    #[must_use]
    pub fn len(&self) -> usize {
        self.lanes.limbs.len()
    }

    /// Whether no stage is batched (never, for a batch [`LimbBatch::try_new`] built).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lanes.limbs.is_empty()
    }

    /// Writes stage `slot`'s goal for this frame into the batch (call it for each batched
    /// stage whose goal changed; other slots are ignored). The batch solves toward these
    /// goals, not the stages' own [`TwoBoneStage::goal`]s.
    #[inline]
    pub fn set_goal(&mut self, slot: usize, goal: &LimbGoal) {
        // (Out of range: ignored, as documented.)
        let _ = self.lanes.goals.set(slot, goal);
    }

    /// Solves the batched stages of `stack` (its input pose set for this frame, the goals
    /// written with [`LimbBatch::set_goal`]) and records each one's outcome in its slot, as
    /// [`IkStack::solve`] would (see the [type docs](LimbBatch)). Returns the first stage left to
    /// [`IkStack::solve_from`]: [`LimbBatch::len`], or 0 when nothing was solved (the stack no
    /// longer starts with the batched stages, or one has a warm start on).
    pub fn solve(&mut self, stack: &mut IkStack) -> usize {
        let n = self.lanes.limbs.len();
        if stack.slots.len() < n {
            return 0;
        }
        let mut rebuild = false;
        for (limb, slot) in self.lanes.limbs.iter().zip(&stack.slots) {
            let Some(s) = two_bone(&slot.stage).filter(|s| s.ik().bones() == limb.bones) else {
                return 0;
            };
            if slot.warm_start {
                return 0;
            }
            rebuild |= *s.ik().settings() != limb.settings;
        }
        if rebuild {
            match Self::try_new(stack) {
                Some(mut b) if b.lanes.limbs.len() == n => {
                    // The goals set this frame stay.
                    core::mem::swap(&mut b.lanes.goals, &mut self.lanes.goals);
                    *self = b;
                }
                _ => return 0,
            }
        }
        let IkStack {
            skeleton,
            buffer,
            slots,
            ..
        } = stack;
        if self.lanes.load_and_solve(skeleton, buffer).is_err() {
            return 0;
        }
        // The results from the lanes into the buffer, stage by stage.
        let rotations = &mut buffer.pose_unchecked_mut().rotations;
        let mut touched = usize::MAX;
        let lanes = &self.lanes;
        for (i, (limb, slot)) in lanes.limbs.iter().zip(slots.iter_mut()).enumerate() {
            slot.touched = false;
            if !slot.enabled {
                slot.record(StageOutcome::Disabled, false);
                continue;
            }
            if !slot.weight.is_finite() {
                slot.record(StageOutcome::Failed(StackError::NonFiniteWeight), false);
                continue;
            }
            let weight = slot.weight.clamp(0.0, 1.0);
            if weight == 0.0 {
                // Faded out, as in the stack's own solve: its bones pass through unchanged
                // (its lanes were solved with the others; the result is not used).
                slot.record(StageOutcome::Faded, false);
                continue;
            }
            let report = match &lanes.reports[i] {
                Ok(r) => *r,
                Err(e) => {
                    // (The batch left the limb's rotations as they were: nothing to restore.)
                    slot.record(StageOutcome::Failed(StackError::Analytic(e.clone())), false);
                    continue;
                }
            };
            if let Ok(solved) = lanes.poses.rotations(i) {
                slot.touched = write_limb(rotations, limb, &solved, weight, &mut touched);
            }
            slot.record(StageOutcome::Solved(StageReport::TwoBone(report)), false);
        }
        if touched != usize::MAX {
            buffer.invalidate_from(touched);
        }
        n
    }
}

impl Limb {
    /// Limb `ik` of `skeleton`, its translations those of `rest`.
    fn new(skeleton: &Skeleton, rest: &Pose, ik: &TwoBoneIk) -> Self {
        let bones = ik.bones();
        Self {
            bones,
            parent: skeleton.parent(bones[0]),
            settings: *ik.settings(),
            translations: bones.map(|b| rest.translations[b]),
            input: [Quat::IDENTITY; 3],
        }
    }
}

/// One past the last limb's root's parent: the model transforms a batched solve reads.
fn parents_end(limbs: &[Limb]) -> usize {
    limbs
        .iter()
        .filter_map(|l| l.parent)
        .max()
        .map_or(0, |p| p + 1)
}

/// How many of the leading limbs (root, mid, tip) of `limbs` are independent: none reads a bone
/// (its own, or its root's ancestors: its parent frame) that an earlier one writes, so that
/// solving them at once on one input pose gives what solving them in order gives. With the
/// first conflict: the bone written earlier, and the root of the limb that reads it.
pub(super) fn independent_run(
    skeleton: &Skeleton,
    limbs: impl IntoIterator<Item = [usize; 3]>,
) -> (usize, Option<(usize, usize)>) {
    let mut written = vec![false; skeleton.len()];
    let mut run = 0;
    for bones in limbs {
        let mut reads = bones
            .iter()
            .copied()
            .chain(core::iter::successors(skeleton.parent(bones[0]), |&b| {
                skeleton.parent(b)
            }));
        if let Some(b) = reads.find(|&b| written.get(b).is_none_or(|&w| w)) {
            return (run, Some((b, bones[0])));
        }
        for b in bones {
            written[b] = true;
        }
        run += 1;
    }
    (run, None)
}

/// Reads each limb's root's parent frame (from `model`, the buffer's model transforms of the
/// prefix the limbs read, computed before any limb is written) and its input rotations and
/// translations (from `pose`) into the lanes.
fn load_lanes(
    batch: &mut TwoBoneBatch,
    limbs: &mut [Limb],
    poses: &mut LanePoses,
    model: &[BoneTransform],
    pose: &Pose,
) {
    for (i, limb) in limbs.iter_mut().enumerate() {
        let parent = match limb.parent {
            Some(p) => model.get(p).copied().unwrap_or(BoneTransform::IDENTITY),
            None => BoneTransform::IDENTITY,
        };
        let [a, b, c] = limb.bones;
        let t = [
            pose.translations[a],
            pose.translations[b],
            pose.translations[c],
        ];
        if t != limb.translations && batch.set_translations(i, t).is_ok() {
            limb.translations = t;
        }
        limb.input = [pose.rotations[a], pose.rotations[b], pose.rotations[c]];
        // (In range: the lanes were made for these limbs.)
        let _ = poses.set(i, &parent, limb.input);
    }
}

/// Writes `limb`'s `solved` rotations into `rotations` where they differ from its input,
/// blended with the input by `weight` (in 0..=1; below 1 a shortest-path slerp), lowering
/// `touched` to the first bone written. Returns whether any bone was written.
#[inline]
pub(super) fn write_limb(
    rotations: &mut [Quat],
    limb: &Limb,
    solved: &[Quat; 3],
    weight: f32,
    touched: &mut usize,
) -> bool {
    let mut wrote = false;
    for ((&b, &q0), &q) in limb.bones.iter().zip(&limb.input).zip(solved) {
        if q != q0 {
            rotations[b] = if weight < 1.0 { q0.slerp(q, weight) } else { q };
            *touched = (*touched).min(b);
            wrote = true;
        }
    }
    wrote
}
