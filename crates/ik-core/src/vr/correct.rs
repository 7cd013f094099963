//! Step 8 of a frame: when the full-body solver moved the trunk, the head is brought back
//! (the neck, then a shift of the body with the limbs re-seated, then the analytic pose
//! if the head must come first).

use glam::{Quat, Vec3};

use super::frame::Targets;
use super::{HAND_SPARE_REACH, HEAD_SLACK, TrackerPose, VrBody};
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::PoseBuffer;

impl VrBody {
    /// Step 8: the solver moved the trunk (a limit was in the way of a hand): brings the head
    /// back with the neck (shortest arc onto the target, within the neck's range), then turns
    /// the head onto its rotation. What the neck could not absorb moves the pelvis (the head
    /// is within reach whenever some pelvis and spine pose within the limits puts it there):
    /// the body shifts by the head's residual and the four limbs are re-seated on their
    /// targets analytically, their swivels kept (a shift of millimetres; no second solve, so
    /// the frame's cost stays that of one bounded solve). Kept only if no hand or foot ends
    /// up further from its target than the solver left it. A pelvis tracker holds the pelvis:
    /// the neck alone then.
    pub(super) fn bring_head_back(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        t: &Targets,
        feet: &[BoneTransform; 2],
    ) {
        self.finish_head(skeleton, buffer, t.head.position, t.head_rot);
        if t.pelvis.is_some() {
            return;
        }
        let hands = &t.hands;
        let miss = t.head.position - buffer.model_transform(skeleton, self.rig.head).translation;
        let m = miss.length();
        if m > 1e-5 * self.rig.leg_length {
            let (kept, hands_moved) = self.reseat(skeleton, buffer, miss, feet, hands, None);
            // A hand at the end of its range holds the chest where the solver left it: moving
            // the body by the whole miss moves that hand off in proportion. Shift by less: a
            // hand with reach to spare and the head end up equally far off. A hand at the end
            // of the arm's reach gives way entirely once the head is off by more than
            // `HEAD_SLACK` (its miss does not shrink in proportion to a smaller shift), and
            // not at all below it.
            if let (false, Some([spare, edge])) = (kept, hands_moved) {
                let f_spare = if spare > 0.0 { m / (m + spare) } else { 1.0 };
                let edge_gives = m > HEAD_SLACK * self.rig.leg_length;
                let f = if edge > 0.0 && !edge_gives {
                    0.0
                } else {
                    f_spare
                };
                if f.is_finite() && f > 0.05 {
                    let edge_slack = if edge_gives { f32::INFINITY } else { 0.0 };
                    let slack = [(1.0 - f) * m * 1.05, edge_slack];
                    self.reseat(skeleton, buffer, miss * f, feet, hands, Some(slack));
                }
            }
        }
        // When the shift could not bring the head back (the solver leaned the trunk toward a
        // controller so far that the hips, shifted back, could not reach a planted foot), the
        // head comes first: back to the analytic pose, where the head was on its target, if
        // the hands and feet allow it.
        self.head_first(skeleton, buffer, t.head.position, feet, hands);
    }

    /// How far each foot and hand is from its target as posed: left foot, right foot, left
    /// hand, right hand.
    fn tip_misses(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        feet: &[BoneTransform; 2],
        hands: &[TrackerPose; 2],
    ) -> [f32; 4] {
        let f = [0, 1].map(|s| {
            buffer
                .model_transform(skeleton, self.rig.leg_bones[s][2])
                .translation
                .distance(feet[s].translation)
        });
        let h = [0, 1].map(|s| {
            buffer
                .model_transform(skeleton, self.rig.arm_bones[s][2])
                .translation
                .distance(hands[s].position)
        });
        [f[0], f[1], h[0], h[1]]
    }

    /// Shifts the whole body by `shift` (the hips' translation) and puts the feet and hands
    /// back on their targets with the analytic limbs, keeping each limb's swivel (the pole at
    /// its mid joint). Undone when a foot would move or a hand within reach would end up
    /// further from its controller than before (beyond a rounding margin) by more than its
    /// `hand_slack` (for a hand with reach to spare, for a hand at the end of its reach).
    /// Returns whether it was kept and, when it was undone only for the hands, how far the
    /// shift moved those two kinds of hands off (the larger of each).
    fn reseat(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        shift: Vec3,
        feet: &[BoneTransform; 2],
        hands: &[TrackerPose; 2],
        hand_slack: Option<[f32; 2]>,
    ) -> (bool, Option<[f32; 2]>) {
        let before = self.tip_misses(skeleton, buffer, feet, hands);
        self.saved.copy_from(buffer.pose());
        let hips = buffer.model_transform(skeleton, self.rig.hips).translation;
        Self::set_model_translation(skeleton, buffer, self.rig.hips, hips + shift);
        let mut ok = true;
        for side in 0..2 {
            let [_, knee, _] = self.rig.leg_bones[side];
            let pole = buffer.model_transform(skeleton, knee).translation;
            ok &= self
                .solve_leg(skeleton, buffer, side, &feet[side], pole)
                .is_ok();
            let [_, elbow, _] = self.rig.arm_bones[side];
            let pole = buffer.model_transform(skeleton, elbow).translation;
            let rot = hands[side].rotation.normalize();
            ok &= self
                .solve_arm(skeleton, buffer, side, hands[side].position, rot, pole)
                .is_ok();
            self.twist_forearm(skeleton, buffer, side, rot);
        }
        // The solver's output is within every joint limit; so must this be: limbs clamped
        // (parents first), and the result judged on where the hands and feet then are.
        for side in 0..2 {
            let [upper, lower, hand] = self.rig.arm_bones[side];
            Self::clamp_to_limit(skeleton, buffer, upper, &self.rig.arm_limits[side][0]);
            Self::clamp_to_limit(skeleton, buffer, lower, &self.rig.arm_limits[side][1]);
            if let Some((t, l)) = self.rig.twist[side] {
                Self::clamp_to_limit(skeleton, buffer, t, &l);
            }
            Self::clamp_to_limit(skeleton, buffer, hand, &self.rig.hand_limit[side]);
            let [upper, lower, _] = self.rig.leg_bones[side];
            Self::clamp_to_limit(skeleton, buffer, upper, &self.rig.leg_limits[side][0]);
            Self::clamp_to_limit(skeleton, buffer, lower, &self.rig.leg_limits[side][1]);
        }
        let after = self.tip_misses(skeleton, buffer, feet, hands);
        let margin = 5e-5 * self.rig.leg_length;
        // A hand whose controller is at the end of the arm's reach from the shoulder (no reach
        // to spare) may miss more: the head comes first (the trunk leaned for it, but only so
        // far as the head allows).
        // Per hand: 0 = reach to spare, 1 = at the end of its reach, 2 = out of reach.
        let reach = [0, 1].map(|side| {
            let shoulder = buffer
                .model_transform(skeleton, self.rig.arm_bones[side][0])
                .translation;
            let d = shoulder.distance(hands[side].position);
            let arm = self.rig.arm_length[side];
            if d >= 0.999 * arm {
                2
            } else if d >= HAND_SPARE_REACH * arm {
                1
            } else {
                0
            }
        });
        // Feet: planted, they must not move.
        let feet_moved = (0..2).any(|k| after[k] > before[k] + margin);
        // Hands: a limit the solver worked around may cost a fraction of a millimetre (a
        // quarter of the hand tolerance the tests hold), or the slack.
        let hands_off = (2..4)
            .filter(|&k| reach[k - 2] < 2)
            .map(|k| {
                let strict = after[k] - before[k].max(5.0 * margin);
                match hand_slack {
                    Some(slack) => strict.min(after[k] - before[k] - slack[reach[k - 2]]),
                    None => strict,
                }
            })
            .fold(f32::NEG_INFINITY, f32::max);
        if ok && !feet_moved && hands_off <= 0.0 {
            return (true, None);
        }
        buffer.set_pose(&self.saved);
        let mut moved = [0.0_f32; 2];
        for k in 2..4 {
            if let Some(m) = moved.get_mut(reach[k - 2]) {
                *m = m.max(after[k] - before[k]);
            }
        }
        (false, (ok && !feet_moved).then_some(moved))
    }

    /// The head first: when the head ends up more than [`HEAD_SLACK`] (human scale) off its
    /// target after the solver and the pelvis correction, goes back to the analytic pose the
    /// solver started from (the head on its target, or as close as the legs allowed) with
    /// every joint clamped to its limit (a head turned past its range relative to the neck
    /// keeps its position, not its whole rotation); kept only if the head is closer, no foot moves, and
    /// no hand with reach to spare ends up further from its controller (a hand at the end of
    /// its reach or beyond it gives way, as in [`VrBody::reseat`]).
    fn head_first(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        head: Vec3,
        feet: &[BoneTransform; 2],
        hands: &[TrackerPose; 2],
    ) {
        let slack = HEAD_SLACK * self.rig.leg_length;
        let miss = |buffer: &mut PoseBuffer, this: &Self| {
            buffer
                .model_transform(skeleton, this.rig.head)
                .translation
                .distance(head)
        };
        let before_miss = miss(buffer, self);
        if before_miss <= slack {
            return;
        }
        let before = self.tip_misses(skeleton, buffer, feet, hands);
        self.saved.copy_from(buffer.pose());
        buffer.set_pose(&self.analytic);
        for &(bone, limit) in &self.rig.limited {
            Self::clamp_to_limit(skeleton, buffer, bone, &limit);
        }
        let after_miss = miss(buffer, self);
        let after = self.tip_misses(skeleton, buffer, feet, hands);
        let margin = 5e-5 * self.rig.leg_length;
        let feet_moved = (0..2).any(|k| after[k] > before[k] + margin);
        let spare_hand_off = (0..2).any(|side| {
            let shoulder = buffer
                .model_transform(skeleton, self.rig.arm_bones[side][0])
                .translation;
            let d = shoulder.distance(hands[side].position);
            d < HAND_SPARE_REACH * self.rig.arm_length[side]
                && after[2 + side] > before[2 + side].max(5.0 * margin) + margin
        });
        let within_limits = self
            .solver
            .pose_within_limits(skeleton, buffer.pose(), 1e-4);
        if feet_moved || spare_hand_off || !within_limits || after_miss >= before_miss - margin {
            buffer.set_pose(&self.saved);
        }
    }

    /// The head back on `target` with the neck (shortest arc, within its range), then turned
    /// to `rotation` within the head's range.
    fn finish_head(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        target: Vec3,
        rotation: Quat,
    ) {
        if let Some(neck) = self.rig.neck {
            let n = buffer.model_transform(skeleton, neck);
            let h = buffer.model_transform(skeleton, self.rig.head).translation;
            let (from, to) = (
                (h - n.translation).normalize_or_zero(),
                (target - n.translation).normalize_or_zero(),
            );
            if from != Vec3::ZERO && to != Vec3::ZERO {
                let arc = Quat::from_rotation_arc(from, to);
                Self::set_model_rotation(skeleton, buffer, neck, arc * n.rotation);
                Self::clamp_to_limit(skeleton, buffer, neck, &self.rig.neck_limit);
            }
        }
        Self::set_model_rotation(skeleton, buffer, self.rig.head, rotation);
        Self::clamp_to_limit(skeleton, buffer, self.rig.head, &self.rig.head_limit);
    }
}
