//! Step 6 of the VR body's frame for the arms: each elbow's swivel and the analytic arm
//! toward its controller, within the arm's limits where a swivel within the frame's turn
//! allows it.

use glam::{Quat, Vec3};

use super::frame::turn_toward;
use super::{TrackerPose, VrBody};
use crate::skeleton::Skeleton;
use crate::stack::{PoseBuffer, StackError};

impl VrBody {
    /// Where arm `side`'s elbow wants to point (from the body: down, back and out; from the
    /// hand's roll; `axis` the unit shoulder-to-hand direction) and the swivel turned toward it
    /// from last frame's: `(want, dir, prev)`, `prev` last frame's swivel off the arm's axis.
    #[allow(
        clippy::too_many_arguments,
        reason = "the arm's geometry its caller has already computed"
    )]
    fn elbow_swivel(
        &self,
        side: usize,
        shoulder: Vec3,
        hand: Vec3,
        hand_rot: Quat,
        axis: Vec3,
        body_rot: Quat,
        first: bool,
    ) -> (Vec3, Vec3, Vec3) {
        let frame = self.rig.frame;
        let out = [frame.left, -frame.left];
        let from_body = (body_rot * (-frame.up - frame.forward * 0.35 + out[side] * 0.45))
            .reject_from_normalized(axis)
            .normalize_or_zero();
        // Where the elbow sits with the wrist straight (the forearm in line with the hand
        // as at rest): the hand's orientation says which way the elbow points.
        let neutral_elbow =
            hand + hand_rot * self.rig.hand_to_elbow[side] * self.rig.arm_length[side] * 0.5;
        let from_hand = (neutral_elbow - shoulder)
            .reject_from_normalized(axis)
            .normalize_or_zero();
        let w = self.settings.elbow_from_hand;
        let want = from_body * (1.0 - w) + from_hand * w;
        let prev = self.state.elbow_dir[side].reject_from_normalized(axis);
        let turn = self.settings.max_swivel_step;
        let dir = match (want.try_normalize(), prev.try_normalize()) {
            // The wanted direction is nearly along the arm: keep the last one.
            (Some(wn), Some(pn)) if want.length() < 0.25 => {
                turn_toward(pn, wn, turn * want.length() * 4.0)
            }
            (Some(wn), Some(pn)) if !first => turn_toward(pn, wn, turn),
            (Some(wn), _) => wn,
            (None, Some(pn)) => pn,
            (None, None) => self.state.elbow_dir[side],
        };
        (want, dir, prev)
    }

    /// Step 6, arm `side`: the analytic limb toward its controller with the swivel of
    /// [`VrBody::elbow_swivel`] if the arm is within its joint limits there (upper arm, elbow,
    /// forearm twist, wrist), else the nearest to it within this frame's turn that is (so the
    /// full-body solver has no limit to fix: the cheap frame); none: that swivel, and the
    /// solver fixes it.
    pub(super) fn pose_arm(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        side: usize,
        hand: TrackerPose,
        body_rot: Quat,
        first: bool,
    ) -> Result<(), StackError> {
        let turn = self.settings.max_swivel_step;
        let [shoulder_b, _, _] = self.rig.arm_bones[side];
        let shoulder = buffer.model_transform(skeleton, shoulder_b).translation;
        let hand_rot = hand.rotation.normalize();
        let to = hand.position - shoulder;
        let axis = to.normalize_or_zero();
        let (want, dir, prev) = self.elbow_swivel(
            side,
            shoulder,
            hand.position,
            hand_rot,
            axis,
            body_rot,
            first,
        );
        let mut candidates = [dir; 7];
        if let (false, Some(pn)) = (first, prev.try_normalize()) {
            for (k, c) in candidates.iter_mut().enumerate().skip(1) {
                let step = (k.div_ceil(2) as f32) / 3.0 * turn;
                let sign = if k % 2 == 1 { 1.0 } else { -1.0 };
                *c = Quat::from_axis_angle(axis, sign * step) * pn;
            }
            // Nearest to where the hand and body want the elbow first.
            candidates[1..].sort_unstable_by(|a, b| {
                b.dot(want)
                    .partial_cmp(&a.dot(want))
                    .unwrap_or(core::cmp::Ordering::Equal)
            });
        }
        let mut r = None;
        // While no swivel fits (a wrist or shoulder at the end of its range, frames on
        // end), the search is not repeated every frame: only the wanted swivel is tried
        // until it fits again (the frame's cost stays bounded: one limb solve per arm).
        let search = !first && !self.state.arm_unfit[side];
        self.state.arm_unfit[side] = false;
        for (k, &c) in candidates.iter().enumerate() {
            if k > 0 && (!search || c == candidates[0]) {
                if !first {
                    // Only the wanted swivel was tried, and it does not fit.
                    self.state.elbow_dir[side] = dir;
                    self.state.arm_unfit[side] = true;
                }
                break;
            }
            let pole = shoulder + 0.5 * to + c * self.rig.arm_length[side];
            let rep = self.solve_arm(skeleton, buffer, side, hand.position, hand_rot, pole)?;
            self.twist_forearm(skeleton, buffer, side, hand_rot);
            r = Some(rep);
            if self.arm_within_limits(skeleton, buffer, side) {
                self.state.elbow_dir[side] = c;
                break;
            }
            if k == candidates.len() - 1 {
                // None fits: back to the first, the solver fixes it.
                let pole = shoulder + 0.5 * to + dir * self.rig.arm_length[side];
                r = Some(self.solve_arm(skeleton, buffer, side, hand.position, hand_rot, pole)?);
                self.twist_forearm(skeleton, buffer, side, hand_rot);
                self.state.elbow_dir[side] = dir;
                self.state.arm_unfit[side] = true;
            }
        }
        if let Some(r) = r {
            self.report.hand_reachable[side] =
                r.reachable && r.target_distance <= 0.999 * self.rig.arm_length[side];
            // Whether the controller is within the arm's reach (step 7 reads it).
            self.state.hand_in_reach[side] = r.reachable;
        }
        Ok(())
    }
}
