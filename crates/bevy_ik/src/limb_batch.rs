//! Batched analytic limbs (opt-in): a character whose stack *starts* with independent two-bone
//! stages (a humanoid's four limbs, say) solves them together through ik-core's
//! [`TwoBoneBatch`] — four limbs per SIMD vector — and then the rest of its stack as usual.
//!
//! # When a stage is batched
//!
//! The leading run of two-bone stages in which no stage reads a bone an earlier one of the run
//! writes: its own root, mid and tip, and its root's ancestors (whose model transform is its
//! parent frame). Such a stage sees the gathered input pose whether it runs first or fourth,
//! so solving the run at once on that pose gives what solving it in order gives. At least
//! [`MIN_LIMBS`] of them (one limb alone pays for three empty lanes); limbs with bones between
//! root, mid and tip (twist bones) are not batched ([`TwoBoneBatch`] refuses them).
//!
//! # Semantics kept
//!
//! Each batched stage goes through [`IkStack::solve_stage_with`]: skipped when disabled, its
//! weight checked and blended, its bones restored on an error, its outcome recorded — so the
//! status, the weights and the stage order are exactly those of the scalar path. Goals,
//! settings and weights stay per-frame parameters: a limb whose settings (flex limits, soft
//! reach, bend axis) changed rebuilds the batch (rare, allocates), a limb whose bone lengths
//! animation changed updates its lane ([`TwoBoneBatch::set_translations`]). The test
//! `tests/limb_batch.rs` holds the batched plugin to the scalar one within 1e-5 of the limb
//! length on every joint.
//!
//! # Resident lanes
//!
//! The batch keeps its limbs' goals and poses in ik-core's lane layout between frames
//! ([`LaneGoals`], [`LanePoses`]) and solves with [`TwoBoneBatch::solve_lanes`]: the gather
//! writes each batched limb's goal straight into its lanes ([`LimbBatch::set_goal`]); the solve
//! writes each limb's input rotations and parent frame into its lanes, solves the block, and
//! hands each limb's rotations from the lanes to the stack's buffer. No per-limb slices are
//! filled or read back.
//!
//! # Granularity
//!
//! One batch per character, solved in that character's task while its data is in cache: the
//! four limbs of a humanoid fill one vector exactly. Packing many characters' limbs into one
//! call would add two passes over every character (copy the goals out, the results back) for
//! the same lanes.
//!
//! # Measured
//!
//! Off by default ([`IkPlugin::with_batched_limbs`](crate::IkPlugin::with_batched_limbs)).
//! Instruction counts (callgrind, the crowd bench's 200-character crowds, 33 frames of each
//! mode, both builds on the same run of frames): this path's batch work — hand-over, kernel
//! and goals into the lanes — is 27.5 M instructions against 29.8 M for the earlier
//! [`TwoBoneBatch::solve`] path (per-limb slices), about 1,040 instructions per limb: the
//! kernel [`TwoBoneBatch::solve_lanes`] about 350 of them (the scalar
//! `TwoBoneIk::solve_with_parent` about 820), the hand-over to and from the stack (parent
//! frames, stage checks, each stage's blend and outcome through
//! [`IkStack::solve_stage_with`]) the other 690. The kernel's saving goes to the hand-over, and
//! wall-clock runs of the time (machine loaded 7–14 by other builds) could not tell the
//! batched crowd from the one-by-one crowd. It pays
//! once the per-stage hand-over is cheaper than the kernel's saving (about 470 instructions a
//! limb).
//!
//! # The seam
//!
//! [`LimbBatch::try_new`], [`LimbBatch::set_goal`] and [`LimbBatch::solve`] are all the
//! pipeline calls.

use bevy::math::Vec3;
use ik_core::BoneTransform;
use ik_core::analytic::batch::{BatchScratch, LaneGoals, LanePoses, TwoBoneBatch};
use ik_core::analytic::{AnalyticError, LimbGoal, LimbReport, LimbSettings};
use ik_core::stack::{IkStack, Stage, StageReport, TwoBoneStage};

/// Fewest leading limbs batched.
pub(crate) const MIN_LIMBS: usize = 2;

/// The batched leading limbs of one character's stack, with their resident lanes.
#[derive(Debug)]
pub(crate) struct LimbBatch {
    batch: TwoBoneBatch,
    /// Per limb (= stack slot `i`): root, mid, tip.
    bones: Vec<[usize; 3]>,
    /// Per limb: the root's parent.
    parents: Vec<Option<usize>>,
    /// Per limb: the settings the batch was built with.
    settings: Vec<LimbSettings>,
    /// Per limb: the local translations the batch holds.
    translations: Vec<[Vec3; 3]>,
    /// This frame's goals, written by the gather ([`LimbBatch::set_goal`]).
    goals: LaneGoals,
    /// Parent frames and rotations in, solved rotations out.
    poses: LanePoses,
    reports: Vec<Result<LimbReport, AnalyticError>>,
    scratch: BatchScratch,
}

/// The two-bone stage in `stage`, if it is one.
fn two_bone(stage: &Stage) -> Option<&TwoBoneStage> {
    match stage {
        Stage::TwoBone(s) => Some(s),
        _ => None,
    }
}

impl LimbBatch {
    /// The batch for `stack`'s leading independent two-bone stages (see the
    /// [module docs](self)), or `None` when fewer than [`MIN_LIMBS`] qualify.
    pub(crate) fn try_new(stack: &IkStack) -> Option<Self> {
        let skeleton = stack.skeleton();
        let mut written = vec![false; skeleton.len()];
        let mut stages: Vec<&TwoBoneStage> = Vec::new();
        for slot in stack.slots() {
            let Some(s) = two_bone(&slot.stage) else {
                break;
            };
            let bones = s.ik().bones();
            let mut reads = bones
                .iter()
                .copied()
                .chain(core::iter::successors(skeleton.parent(bones[0]), |&b| {
                    skeleton.parent(b)
                }));
            if reads.any(|b| written.get(b).is_none_or(|&w| w)) {
                break;
            }
            for b in bones {
                written[b] = true;
            }
            stages.push(s);
        }
        if stages.len() < MIN_LIMBS {
            return None;
        }
        let batch = TwoBoneBatch::try_new(stages.iter().map(|s| (skeleton, s.ik()))).ok()?;
        let rest = skeleton.rest_pose();
        let n = stages.len();
        let mut goals = LaneGoals::new(n);
        for (i, s) in stages.iter().enumerate() {
            goals.set(i, &s.goal).ok()?;
        }
        Some(Self {
            batch,
            bones: stages.iter().map(|s| s.ik().bones()).collect(),
            parents: stages
                .iter()
                .map(|s| skeleton.parent(s.ik().bones()[0]))
                .collect(),
            settings: stages.iter().map(|s| *s.ik().settings()).collect(),
            translations: stages
                .iter()
                .map(|s| s.ik().bones().map(|b| rest.translations[b]))
                .collect(),
            goals,
            poses: LanePoses::new(n),
            reports: vec![Ok(LimbReport::default()); n],
            scratch: BatchScratch::new(),
        })
    }

    /// Number of batched limbs (the stack's first stages).
    pub(crate) fn len(&self) -> usize {
        self.bones.len()
    }

    /// Writes stage `slot`'s goal for this frame into its lanes (the gather calls it for each
    /// batched limb; other slots are ignored).
    pub(crate) fn set_goal(&mut self, slot: usize, goal: &LimbGoal) {
        // (In range by the check; a goal is finite by the gather's reading of the target.)
        let _ = self.goals.set(slot, goal);
    }

    /// Solves the batched stages of `stack` (its input pose set for this frame, their goals
    /// written with [`LimbBatch::set_goal`]) and records each one's outcome in the stack;
    /// returns the first stage left to [`IkStack::solve_from`] (0 when the stack no longer has
    /// the stages the batch was built for: it was changed through
    /// [`IkCharacter::stack_mut`](crate::IkCharacter::stack_mut)).
    pub(crate) fn solve(&mut self, stack: &mut IkStack) -> usize {
        let n = self.bones.len();
        if stack.slots().len() < n {
            return 0;
        }
        let mut rebuild = false;
        for (i, slot) in stack.slots().iter().take(n).enumerate() {
            let Some(s) = two_bone(&slot.stage).filter(|s| s.ik().bones() == self.bones[i]) else {
                return 0;
            };
            rebuild |= *s.ik().settings() != self.settings[i];
        }
        if rebuild {
            match Self::try_new(stack) {
                Some(b) if b.bones == self.bones => *self = b,
                _ => return 0,
            }
        }
        // The input pose into the lanes: each limb's rotations and its root's parent frame.
        for i in 0..n {
            let bones = self.bones[i];
            let pose = stack.pose();
            let rotations = bones.map(|b| pose.rotations[b]);
            let t = bones.map(|b| pose.translations[b]);
            if t != self.translations[i] && self.batch.set_translations(i, t).is_ok() {
                self.translations[i] = t;
            }
            let parent = match self.parents[i] {
                Some(p) => stack.model_transform(p),
                None => BoneTransform::IDENTITY,
            };
            if self.poses.set(i, &parent, rotations).is_err() {
                return 0;
            }
        }
        if self
            .batch
            .solve_lanes(
                &self.goals,
                &mut self.poses,
                Some(&mut self.reports),
                &mut self.scratch,
            )
            .is_err()
        {
            return 0;
        }
        // The results straight from the lanes into the stack's buffer, one stage at a time
        // (the stack blends by the weight, restores on an error, records the outcome).
        for i in 0..n {
            let (bones, poses, reports) = (self.bones[i], &self.poses, &self.reports);
            stack.solve_stage_with(i, |_, _, buffer| {
                let report = reports[i].clone()?;
                let rotations = poses
                    .rotations(i)
                    .map_err(|_| AnalyticError::DegeneratePose)?;
                for (b, q) in bones.into_iter().zip(rotations) {
                    let t = buffer.pose().translations[b];
                    buffer.set_local(b, q, t);
                }
                Ok(StageReport::TwoBone(report))
            });
        }
        n
    }
}
