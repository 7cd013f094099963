//! [`LimbBatchStage`]: a run of independent two-bone limbs as one [`Stage`], solved in one
//! [`TwoBoneBatch`] call. See [`LimbBatchStage`].

use crate::analytic::batch::{BatchError, TwoBoneBatch};
use crate::analytic::{AnalyticError, LimbGoal, LimbReport, TwoBoneIk};
use crate::skeleton::Skeleton;

use super::limbs::{Lanes, independent_run, write_limb};
use super::{CustomReport, GoalResidual, PoseBuffer, StackError, Stage, StageReport};

/// A run of independent two-bone limbs (a character's arms and legs) as one [`Stage`] of an
/// [`IkStack`](super::IkStack), solved together in one [`TwoBoneBatch`] call (four limbs per
/// SIMD vector) on the pose the stage is handed.
///
/// The stage claims the limbs' bones ([`Stage::bones`]): the stack saves, blends by the slot's
/// weight and restores them as for any stage, so the stack's rules (enabled flag, weight,
/// warm start, final-pose measurement) are the stack's own, not re-implemented here. Within
/// the run, each limb has its own goal ([`LimbBatchStage::set_goal`]) and weight
/// ([`LimbBatchStage::set_weight`]: 0 leaves the limb's bones as they came in).
///
/// # Which limbs
///
/// Independent ones: no limb reads a bone an earlier one of the run writes (its own root, mid
/// and tip, and its root's ancestors, whose model transforms are its parent frame). Each limb
/// then sees the stage's input pose whether it is solved first or fourth, so the run solved
/// at once gives what [`TwoBoneStage`](super::TwoBoneStage)s of the same limbs in the same
/// order give, to the batch kernel's rounding (`tests/stack_limbs.rs` holds the two to 1e-5 of
/// the limb length). Limbs with bones between root, mid and tip (twist bones) are refused
/// ([`TwoBoneBatch`] does not take them).
///
/// # Outcome
///
/// A limb the solver rejects (a non-finite goal) keeps its input rotations, and its error is in
/// [`LimbBatchStage::reports`]; the others are written. The stage's report
/// ([`StageReport::Custom`]) is converged when every limb is (reachable, within 1e-4 of its
/// length, as [`StageReport::converged`] says of one limb) and carries the largest residual.
/// [`Stage::measure`] gives the largest tip-to-target distance on the final pose.
///
/// No allocation per solve: the lanes, reports and scratch are made at set-up.
///
/// ```
/// use glam::Vec3;
/// use ik_core::analytic::{LimbGoal, TwoBoneIk};
/// use ik_core::stack::{IkStack, LimbBatchStage};
/// use ik_core::{Bone, BoneTransform, Skeleton};
///
/// let skeleton = Skeleton::try_new(vec![
///     Bone::new("chest", None, BoneTransform::IDENTITY),
///     Bone::new("l_arm", Some(0), BoneTransform::from_translation(Vec3::X * 0.2)),
///     Bone::new("l_fore", Some(1), BoneTransform::from_translation(Vec3::X * 0.3)),
///     Bone::new("l_hand", Some(2), BoneTransform::from_translation(Vec3::X * 0.25)),
///     Bone::new("r_arm", Some(0), BoneTransform::from_translation(Vec3::NEG_X * 0.2)),
///     Bone::new("r_fore", Some(4), BoneTransform::from_translation(Vec3::NEG_X * 0.3)),
///     Bone::new("r_hand", Some(5), BoneTransform::from_translation(Vec3::NEG_X * 0.25)),
/// ])?;
/// let limbs = [(1, Vec3::new(0.5, -0.2, 0.1)), (4, Vec3::new(-0.5, -0.2, 0.1))]
///     .map(|(root, target)| {
///         let ik = TwoBoneIk::try_new(&skeleton, root, root + 1, root + 2).unwrap();
///         (ik, LimbGoal::new(target).with_pole(Vec3::NEG_Z))
///     });
/// let mut stack = IkStack::new(skeleton.clone());
/// stack.push(LimbBatchStage::try_new(&skeleton, limbs)?)?;
/// stack.set_input(&skeleton.rest_pose())?;
/// stack.solve();
/// assert!(stack.model_transform(3).translation.distance(Vec3::new(0.5, -0.2, 0.1)) < 1e-5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct LimbBatchStage {
    lanes: Lanes,
    /// The goals as set (for [`LimbBatchStage::goal`] and the measurement).
    goal_list: Vec<LimbGoal>,
    weights: Vec<f32>,
    /// Every limb's root, mid and tip, sorted.
    bones: Vec<usize>,
}

impl LimbBatchStage {
    /// A stage for `limbs` of `skeleton` (each a limb and its first goal), in this order.
    ///
    /// # Errors
    /// [`StackError::BadBonePair`] when a limb reads a bone an earlier one writes (`bone`, and
    /// `other` the reading limb's root); [`StackError::Batch`] when the batch refuses a limb
    /// (twist bones between its joints, a limb of another skeleton).
    pub fn try_new(
        skeleton: &Skeleton,
        limbs: impl IntoIterator<Item = (TwoBoneIk, LimbGoal)>,
    ) -> Result<Self, StackError> {
        let (iks, goal_list): (Vec<TwoBoneIk>, Vec<LimbGoal>) = limbs.into_iter().unzip();
        let (_, conflict) = independent_run(skeleton, iks.iter().map(TwoBoneIk::bones));
        if let Some((bone, other)) = conflict {
            return Err(StackError::BadBonePair { bone, other });
        }
        let batch = TwoBoneBatch::try_new(iks.iter().map(|ik| (skeleton, ik)))?;
        let lanes = Lanes::new(skeleton, batch, iks.iter(), &goal_list);
        let mut bones: Vec<usize> = iks.iter().flat_map(TwoBoneIk::bones).collect();
        bones.sort_unstable();
        Ok(Self {
            weights: vec![1.0; lanes.limbs.len()],
            lanes,
            goal_list,
            bones,
        })
    }

    /// Number of limbs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lanes.limbs.len()
    }

    /// Whether the stage has no limb.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lanes.limbs.is_empty()
    }

    /// Limb `limb`'s goal.
    #[must_use]
    pub fn goal(&self, limb: usize) -> Option<&LimbGoal> {
        self.goal_list.get(limb)
    }

    /// Sets limb `limb`'s goal for the next solves.
    ///
    /// # Errors
    /// [`StackError::Batch`] ([`BatchError::IndexOutOfRange`]) for a limb the stage does not
    /// have.
    pub fn set_goal(&mut self, limb: usize, goal: LimbGoal) -> Result<(), StackError> {
        self.lanes.goals.set(limb, &goal)?;
        self.goal_list[limb] = goal;
        Ok(())
    }

    /// Limb `limb`'s weight (1 by default).
    #[must_use]
    pub fn weight(&self, limb: usize) -> Option<f32> {
        self.weights.get(limb).copied()
    }

    /// Sets limb `limb`'s weight, clamped to 0..=1: its solved rotations are blended with its
    /// input by it (shortest-path slerp; 0 leaves the limb's bones as they came in).
    ///
    /// # Errors
    /// [`StackError::NonFiniteWeight`] for a weight that is NaN or infinite (the weight is
    /// kept); [`StackError::Batch`] ([`BatchError::IndexOutOfRange`]) for a limb the stage does
    /// not have.
    pub fn set_weight(&mut self, limb: usize, weight: f32) -> Result<(), StackError> {
        let limbs = self.weights.len();
        let w = self
            .weights
            .get_mut(limb)
            .ok_or(BatchError::IndexOutOfRange { index: limb, limbs })?;
        if !weight.is_finite() {
            return Err(StackError::NonFiniteWeight);
        }
        *w = weight.clamp(0.0, 1.0);
        Ok(())
    }

    /// The limbs' bones (root, mid, tip), in set-up order.
    pub fn limb_bones(&self) -> impl ExactSizeIterator<Item = [usize; 3]> + '_ {
        self.lanes.limbs.iter().map(|l| l.bones)
    }

    /// Each limb's report of the last solve (or why the solver rejected it: the limb then kept
    /// its input).
    pub fn reports(&self) -> &[Result<LimbReport, AnalyticError>] {
        &self.lanes.reports
    }
}

impl Stage for LimbBatchStage {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        if buffer.len() != skeleton.len() || self.bones.last().is_some_and(|&b| b >= buffer.len()) {
            return Err(StackError::SkeletonMismatch);
        }
        self.lanes.load_and_solve(skeleton, buffer)?;
        let rotations = &mut buffer.pose_unchecked_mut().rotations;
        let mut touched = usize::MAX;
        let mut report = CustomReport {
            converged: true,
            iterations: 1,
            position_residual: 0.0,
            angle_residual: 0.0,
        };
        let lanes = &self.lanes;
        for (i, limb) in lanes.limbs.iter().enumerate() {
            let r = match &lanes.reports[i] {
                Ok(r) => *r,
                Err(_) => {
                    // Not written: the limb keeps its input.
                    report.converged = false;
                    continue;
                }
            };
            let limb_report = StageReport::TwoBone(r);
            report.converged &= limb_report.converged();
            report.position_residual = report.position_residual.max(r.position_error);
            let weight = self.weights[i];
            if weight == 0.0 {
                continue;
            }
            let Ok(solved) = lanes.poses.rotations(i) else {
                continue;
            };
            write_limb(rotations, limb, &solved, weight, &mut touched);
        }
        if touched != usize::MAX {
            buffer.invalidate_from(touched);
        }
        Ok(StageReport::Custom(report))
    }

    /// The largest distance of a tip from its goal's target.
    fn measure(&self, skeleton: &Skeleton, buffer: &mut PoseBuffer) -> Option<GoalResidual> {
        let mut position = 0.0_f32;
        for (limb, goal) in self.lanes.limbs.iter().zip(&self.goal_list) {
            let tip = limb.bones[2];
            if tip >= buffer.len() {
                return None;
            }
            let at = buffer.model_transform(skeleton, tip).translation;
            position = position.max(at.distance(goal.target));
        }
        Some(GoalResidual {
            position,
            angle: 0.0,
        })
    }
}
