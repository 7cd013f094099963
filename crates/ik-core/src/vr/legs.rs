//! Steps 4–6 of the VR body's frame for the support: the feet's plan, the pelvis's height
//! over the standing feet (lowered where a leg cannot reach, a knee's swivel or the pelvis
//! raised where a hip would leave its range) and the analytic legs.

use glam::{Quat, Vec3};

use super::frame::turn_toward;
use super::locomotion;
use super::{HIP_FIT_BRACKET, HIP_FIT_STEPS, TrackerPose, VrBody};
use crate::analytic::Pole;
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::{PoseBuffer, StackError};

/// The swivels [`VrBody::fit_knee_swivels`] tries besides the wanted one: sixths of the
/// frame's swivel turn, either way.
const SWIVEL_CANDIDATES: usize = 12;

impl VrBody {
    /// Step 5: where the body's support is, then the feet's stepping ([`Locomotion`](super::Locomotion)).
    /// Returns the foot targets and the hip joints with the hips at `pelvis`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the frame's values this step reads, each used once"
    )]
    pub(super) fn plan_feet(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        pelvis: Vec3,
        head: Vec3,
        body_yaw: f32,
        dt: f32,
        first: bool,
    ) -> ([BoneTransform; 2], [Vec3; 2]) {
        let up = self.rig.frame.up;
        let support = {
            let mid = 0.5 * (pelvis + head);
            mid - up * mid.dot(up)
        };
        let body_rot = Quat::from_axis_angle(up, body_yaw);
        let hips_rest_ground = {
            let h = self.rig.origin;
            h - up * h.dot(up)
        };
        let foot_trackers = [self.trackers.left_foot, self.trackers.right_foot].map(|t| {
            t.map(|t| TrackerPose::new(self.map_point(t.position), t.rotation.normalize()))
        });
        let hips_model = buffer.model_transform(skeleton, self.rig.hips).translation;
        let hip_joints = [0, 1].map(|i| {
            buffer
                .model_transform(skeleton, self.rig.leg_bones[i][0])
                .translation
                - hips_model
                + pelvis
        });
        let plan_in = locomotion::PlanInput {
            hips: hip_joints,
            support,
            body_rotation: body_rot,
            rest_feet: self.rig.rest_feet,
            rest_center: hips_rest_ground,
            foot_plane: self.rig.foot_plane,
            ground_offset: if self.ground_offset.is_finite() {
                self.ground_offset
            } else {
                0.0
            },
            dt: if first { 0.0 } else { dt },
            trackers: foot_trackers,
        };
        self.locomotion
            .update(&plan_in, &self.settings, self.ground.as_deref(), first);
        (self.locomotion.foot_targets(), hip_joints)
    }

    /// A foot in the air stays within its leg's reach (it swings under the body).
    pub(super) fn keep_swing_in_reach(&self, feet: &mut [BoneTransform; 2], hip_joints: [Vec3; 2]) {
        let phases = self.locomotion.phases();
        for side in 0..2 {
            if phases[side].in_air() {
                let hip = hip_joints[side];
                let v = feet[side].translation - hip;
                let r = self.rig.leg_reach[side] * 0.995;
                if v.length_squared() > r * r {
                    feet[side].translation = hip + v * (r / v.length());
                }
            }
        }
    }

    /// Step 4's end: the hips at `pelvis`, lowered if a leg cannot reach its foot (the
    /// report says so).
    pub(super) fn seat_pelvis(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        mut pelvis: Vec3,
        feet: &[BoneTransform; 2],
        first: bool,
    ) {
        let up = self.rig.frame.up;
        self.report.pelvis_lowered = false;
        let hips_rot_model = buffer.model_transform(skeleton, self.rig.hips);
        let phases = self.locomotion.phases();
        let mut lower = 0.0_f32;
        for side in 0..2 {
            let hip = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][0])
                .translation
                - hips_rot_model.translation
                + pelvis;
            let v = hip - feet[side].translation;
            let reach = self.rig.leg_reach[side];
            // A standing leg straightens no faster than the solver's turn bound a frame:
            // walking on, the hips pass over a planted foot and the knee straightens faster
            // and faster toward the end of the stance (12° in one frame on the `KayKit`
            // mannequin), faster than the bound lets the output follow (the foot slid 19 mm
            // while the leg caught up); a foot lifting off that held the pelvis down would
            // pop the hips up the same way. The pelvis is lowered instead, for that frame.
            let r = if first || phases[side].in_air() {
                reach
            } else {
                reach.min(self.straightest_span(side))
            };
            if v.length_squared() > r * r {
                let b = v.dot(up);
                let disc = b * b - v.length_squared() + r * r;
                let wide = b * b - v.length_squared() + reach * reach;
                let drop = if disc >= 0.0 {
                    b - disc.sqrt()
                } else if wide >= 0.0 {
                    b - wide.sqrt()
                } else {
                    b.max(0.0)
                };
                lower = lower.max(drop);
            }
        }
        if lower > 0.0 {
            pelvis -= up * lower;
            self.report.pelvis_lowered = true;
        }
        Self::set_model_translation(skeleton, buffer, self.rig.hips, pelvis);
    }

    /// The longest hip-to-ankle span leg `side` may have this frame: last frame's output
    /// span with the knee straightened by the approach's share of the turn bound
    /// ([`VrBody::approach_turn`]; law of cosines on the leg's bone lengths), at most its
    /// reach.
    fn straightest_span(&self, side: usize) -> f32 {
        let [l1, l2] = self.rig.legs[side].rest_lengths();
        let last = self.state.leg_span[side];
        let cos_last = ((last * last - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)).clamp(-1.0, 1.0);
        let flex =
            (cos_last.acos() - self.approach_turn()).max(self.rig.legs[side].settings().flex_min);
        (l1 * l1 + l2 * l2 + 2.0 * l1 * l2 * flex.cos())
            .max(0.0)
            .sqrt()
    }

    /// Step 6, legs: each knee toward the foot's and the body's forward, turned at most
    /// [`VrSettings::max_swivel_step`](super::VrSettings::max_swivel_step) from last frame's;
    /// the pelvis raised as little as lets every standing leg reach its foot within the hip's
    /// and knee's limits ([`VrBody::fit_standing_legs`]); a foot in the air turned only as far
    /// as its ankle allows (its target's rotation updated to match).
    pub(super) fn pose_legs(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        feet: &mut [BoneTransform; 2],
        body_rot: Quat,
        first: bool,
    ) -> Result<(), StackError> {
        let frame = self.rig.frame;
        let turn = self.settings.max_swivel_step;
        let last_knees = self.state.knee_dir;
        for side in 0..2 {
            let hip = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][0])
                .translation;
            let foot = feet[side];
            let foot_fwd =
                (foot.rotation * self.rig.rest_feet[side].rotation.inverse()) * frame.forward;
            let axis = (foot.translation - hip).normalize_or_zero();
            let want = (foot_fwd + body_rot * frame.forward + frame.up * 0.1)
                .reject_from_normalized(axis)
                .try_normalize();
            self.state.knee_dir[side] = match want {
                Some(w) if !first => turn_toward(self.state.knee_dir[side], w, turn),
                Some(w) => w,
                None => self.state.knee_dir[side],
            };
        }
        self.place_legs(skeleton, buffer, feet, false)?;
        if !first {
            self.fit_knee_swivels(skeleton, buffer, feet, last_knees)?;
        }
        self.fit_standing_legs(skeleton, buffer, feet)?;
        // A foot turns only as far as its ankle allows, in the air or standing (the solver
        // would otherwise clamp the ankle and trade the foot's place for its rotation: a
        // planted foot slid 24 mm while the body turned on the spot past the ankle's twist);
        // its target's rotation follows, so a standing foot pivots on its ankle.
        for side in 0..2 {
            let tip = self.rig.leg_bones[side][2];
            Self::clamp_to_limit(skeleton, buffer, tip, &self.rig.foot_limit[side]);
            feet[side].rotation = buffer.model_transform(skeleton, tip).rotation;
        }
        Ok(())
    }

    /// Solves the legs onto `feet` with the knees toward this frame's swivels
    /// (`state.knee_dir`), from where the hips are now: both, or only the standing ones
    /// (`standing_only`).
    fn place_legs(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        feet: &[BoneTransform; 2],
        standing_only: bool,
    ) -> Result<(), StackError> {
        let phases = self.locomotion.phases();
        for side in 0..2 {
            if standing_only && phases[side].in_air() {
                continue;
            }
            let hip = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][0])
                .translation;
            let foot = feet[side];
            let pole =
                0.5 * (hip + foot.translation) + self.state.knee_dir[side] * self.rig.leg_length;
            self.solve_leg(skeleton, buffer, side, &foot, Pole::Position(pole))?;
        }
        Ok(())
    }

    /// A standing leg outside its hip's or knee's limits with the knee toward this frame's
    /// swivel tries the other swivels within this frame's turn
    /// ([`VrSettings::max_swivel_step`](super::VrSettings::max_swivel_step), in sixths, either
    /// way from last frame's `last_knees`), nearest to the wanted one first, then the leg's
    /// rest bend plane, and keeps the first within the limits: the knee turning out of the way
    /// keeps the pelvis where the head puts it (the head on its target) where a swivel allows
    /// it.
    fn fit_knee_swivels(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        feet: &[BoneTransform; 2],
        last_knees: [Vec3; 2],
    ) -> Result<(), StackError> {
        let turn = self.settings.max_swivel_step;
        let phases = self.locomotion.phases();
        for side in 0..2 {
            if phases[side].in_air() || self.leg_within_limits(skeleton, buffer, side) {
                continue;
            }
            let want = self.state.knee_dir[side];
            let hip = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][0])
                .translation;
            let axis = (feet[side].translation - hip).normalize_or_zero();
            let Some(last) = last_knees[side]
                .reject_from_normalized(axis)
                .try_normalize()
            else {
                continue;
            };
            let mut candidates = [last; SWIVEL_CANDIDATES];
            for (k, c) in candidates.iter_mut().enumerate() {
                let step = ((k + 1).div_ceil(2) as f32) / (SWIVEL_CANDIDATES / 2) as f32 * turn;
                let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
                *c = Quat::from_axis_angle(axis, sign * step) * last;
            }
            candidates.sort_unstable_by(|a, b| {
                b.dot(want)
                    .partial_cmp(&a.dot(want))
                    .unwrap_or(core::cmp::Ordering::Equal)
            });
            let mut fitted = false;
            for c in candidates {
                // A probe (one analytic solve, no clamps) first: the full solve of the one
                // that fits is the same pose (its clamps have nothing to do).
                let pole = 0.5 * (hip + feet[side].translation) + c * self.rig.leg_length;
                if self.probe_leg(skeleton, buffer, side, &feet[side], pole)? {
                    self.state.knee_dir[side] = c;
                    self.solve_leg(skeleton, buffer, side, &feet[side], Pole::Position(pole))?;
                    fitted = true;
                    break;
                }
            }
            if !fitted {
                // The rest bend plane (the hip's twist at its rest, the middle of its
                // range), where it is within this frame's turn: the narrow window a hip
                // with little twist range leaves in a deep crouch.
                self.solve_leg(skeleton, buffer, side, &feet[side], Pole::Swivel(0.0))?;
                let knee = buffer
                    .model_transform(skeleton, self.rig.leg_bones[side][1])
                    .translation;
                if let Some(c) = (knee - hip).reject_from_normalized(axis).try_normalize()
                    && c.angle_between(last) <= turn
                    && self.leg_within_limits(skeleton, buffer, side)
                {
                    self.state.knee_dir[side] = c;
                    fitted = true;
                }
            }
            if !fitted {
                self.state.knee_dir[side] = want;
                let pole = 0.5 * (hip + feet[side].translation) + want * self.rig.leg_length;
                self.solve_leg(skeleton, buffer, side, &feet[side], Pole::Position(pole))?;
            }
        }
        Ok(())
    }

    /// Whether every standing leg (planted or tracked: the support) has its hip and knee
    /// within the full-body solver's limits as posed.
    fn standing_legs_fit(&self, skeleton: &Skeleton, buffer: &PoseBuffer) -> bool {
        let phases = self.locomotion.phases();
        (0..2).all(|side| phases[side].in_air() || self.leg_within_limits(skeleton, buffer, side))
    }

    /// The support comes before the head: a standing foot does not move, so where the head
    /// puts the pelvis asks a leg for more than its hip's range (a deep crouch over feet
    /// planted while standing: the thigh folds past the hip's flexion), the pelvis rises —
    /// along up, as little as lets every standing leg reach its foot within its hip's and
    /// knee's limits (a bisection over the rise, [`HIP_FIT_STEPS`] halvings, between none and
    /// the rise that straightens a standing leg to its reach) — and the head misses its
    /// target by that much (the report's `pelvis_raised`). Where no rise within the legs'
    /// reach does, the pelvis stays where the head put it (the solver then holds the limits).
    fn fit_standing_legs(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        feet: &[BoneTransform; 2],
    ) -> Result<(), StackError> {
        self.report.pelvis_raised = false;
        if self.standing_legs_fit(skeleton, buffer) {
            self.state.pelvis_rise = [0.0; 2];
            return Ok(());
        }
        let up = self.rig.frame.up;
        let phases = self.locomotion.phases();
        let pelvis = buffer.model_transform(skeleton, self.rig.hips).translation;
        // The most the pelvis may rise: a standing leg straight to its reach.
        let mut high = f32::INFINITY;
        for side in 0..2 {
            if phases[side].in_air() {
                continue;
            }
            let hip = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][0])
                .translation;
            let v = hip - feet[side].translation;
            let r = self.rig.leg_reach[side] * 0.999;
            let b = v.dot(up);
            let disc = b * b - v.length_squared() + r * r;
            high = high.min(if disc >= 0.0 { disc.sqrt() - b } else { 0.0 });
        }
        if !(high.is_finite() && high > 0.0) {
            self.state.pelvis_rise = [0.0; 2];
            return Ok(());
        }
        // (The bisection solves only the standing legs; the last rise poses both.)
        let at = |me: &Self, buffer: &mut PoseBuffer, rise: f32, both: bool| {
            Self::set_model_translation(skeleton, buffer, me.rig.hips, pelvis + up * rise);
            me.place_legs(skeleton, buffer, feet, !both)
                .map(|()| me.standing_legs_fit(skeleton, buffer))
        };
        // The rise to within 2^-HIP_FIT_STEPS of the legs' slack: bisected between none and
        // the slack, or, when the last two frames raised the pelvis too, first within
        // `HIP_FIT_BRACKET` of the slack of where their rises extrapolate to (the rise moves
        // smoothly from frame to frame: fewer halvings for the same resolution).
        let resolution = high * 0.5_f32.powi(HIP_FIT_STEPS as i32);
        let (mut low, mut fits) = (0.0_f32, false);
        let [last, before] = self.state.pelvis_rise;
        let guess = if before > 0.0 {
            2.0 * last - before
        } else {
            last
        };
        if self.state.started && last > 0.0 && guess > 0.0 && guess < high {
            let step = high * HIP_FIT_BRACKET;
            if at(self, buffer, guess, false)? {
                (high, fits) = (guess, true);
                let below = guess - step;
                if below > 0.0 {
                    if at(self, buffer, below, false)? {
                        high = below;
                    } else {
                        low = below;
                    }
                }
            } else {
                low = guess;
                let above = guess + step;
                if above < high {
                    if at(self, buffer, above, false)? {
                        (high, fits) = (above, true);
                    } else {
                        low = above;
                    }
                }
            }
        }
        if !fits && !at(self, buffer, high, false)? {
            self.state.pelvis_rise = [0.0; 2];
            at(self, buffer, 0.0, true)?;
            return Ok(());
        }
        while high - low > resolution {
            let mid = 0.5 * (low + high);
            if mid <= low || mid >= high {
                break;
            }
            if at(self, buffer, mid, false)? {
                high = mid;
            } else {
                low = mid;
            }
        }
        self.state.pelvis_rise = [high, last];
        at(self, buffer, high, true)?;
        self.report.pelvis_raised = true;
        Ok(())
    }
}
