//! One frame of the VR body, in the steps the [module docs](super) list: the driver, the
//! bounded solve of step 7 and the report. The trunk (steps 2–4) is in `trunk`, the legs and
//! the pelvis's height (steps 4–6) in `legs`, the arms (step 6) in `arms`.

use core::f32::consts::PI;

use glam::{Quat, Vec3};

use super::locomotion::FootPhase;
use super::{HAND_ROTATION_WEIGHT, SETTLE_RATE, TOUCHDOWN_TOLERANCE, TrackerPose, VrBody, VrError};
use crate::analytic::finish::quat_angle;
use crate::humanoid::{BodyFrame, Effector, EffectorGoal, FullBodyReport};
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport};

/// The heading of `dir` about the body's up, from its forward toward its left (`None` when
/// `dir` is along up).
pub(super) fn yaw_of(dir: Vec3, frame: &BodyFrame) -> Option<f32> {
    let (x, y) = (dir.dot(frame.forward), dir.dot(frame.left));
    (x * x + y * y > 1e-8).then(|| y.atan2(x))
}

/// `a` wrapped into `[-π, π)` (0 when not finite).
pub(super) fn wrap(a: f32) -> f32 {
    let a = (a + PI).rem_euclid(2.0 * PI) - PI;
    if a.is_finite() { a } else { 0.0 }
}

/// Turns unit `from` toward unit `to` by at most `max` radians.
pub(super) fn turn_toward(from: Vec3, to: Vec3, max: f32) -> Vec3 {
    let angle = from.angle_between(to);
    if !angle.is_finite() || angle <= max {
        return to;
    }
    let axis = from
        .cross(to)
        .try_normalize()
        .unwrap_or_else(|| from.any_orthonormal_vector());
    Quat::from_axis_angle(axis, max) * from
}

/// An eased step `step` toward a target `d` away (same sign), at least
/// [`SETTLE_RATE`]` · dt` and at most `d`: the exponential approaches of the heading and the
/// lean arrive, so the body comes to rest when the trackers do.
pub(super) fn settle_step(step: f32, d: f32, dt: f32) -> f32 {
    let floor = SETTLE_RATE * dt;
    if d.abs() <= floor {
        d
    } else {
        step.abs().max(floor).min(d.abs()).copysign(d)
    }
}

/// This frame's targets, mapped to the avatar (model space).
#[derive(Clone, Copy, Debug)]
pub(super) struct Targets {
    pub(super) head: TrackerPose,
    /// The head target's rotation, normalised.
    pub(super) head_rot: Quat,
    /// The head's rotation from its rest rotation.
    pub(super) head_delta: Quat,
    /// Left, right.
    pub(super) hands: [TrackerPose; 2],
    /// The pelvis tracker, mapped.
    pub(super) pelvis: Option<TrackerPose>,
}

impl Stage for VrBody {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    /// Sets the head tracker (player space), e.g. from a host's single target entity.
    fn set_target(&mut self, target: Option<BoneTransform>) {
        if let Some(t) = target {
            self.trackers.head = TrackerPose::new(t.translation, t.rotation);
        }
    }

    /// One frame: the steps of the [module docs](super), in order.
    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        self.check_input(skeleton, buffer)?;
        let dt = self.dt.min(0.25);
        let first = !self.state.started;
        // 1. Trackers onto the avatar.
        let [head, lhand, rhand] = self.targets();
        let head_rot = head.rotation.normalize();
        let t = Targets {
            head,
            head_rot,
            head_delta: head_rot * self.rig.rest_head.rotation.inverse(),
            hands: [lhand, rhand],
            pelvis: self
                .trackers
                .pelvis
                .map(|p| TrackerPose::new(self.map_point(p.position), p.rotation.normalize())),
        };
        // The analytic pose starts from the rest pose of the joints it and the solver pose
        // (not from whatever the buffer holds: last frame's output, fed back by a host,
        // would make it depend on itself and never come to rest bit for bit).
        for &b in &self.rig.joints {
            let rest = skeleton.bones()[b].rest;
            buffer.set_local(b, rest.rotation, rest.translation);
        }
        // 2. Heading; 3. lean; 4. the trunk and the pelvis from the head.
        let heading = self.turn_body(&t, dt, first);
        self.ease_lean(t.head.position, heading.pitch_down, dt, first);
        let pelvis = self.bend_trunk(skeleton, buffer, &t, heading, dt, first);
        // 5. The feet, and the pelvis lowered if a leg cannot reach its foot.
        let (mut feet, hip_joints) = self.plan_feet(
            skeleton,
            buffer,
            pelvis,
            t.head.position,
            heading.body_yaw,
            dt,
            first,
        );
        self.keep_swing_in_reach(&mut feet, hip_joints);
        self.seat_pelvis(skeleton, buffer, pelvis, &feet, first);
        Self::set_model_rotation(skeleton, buffer, self.rig.head, t.head_rot);
        // 6. The analytic limbs.
        let body_rot = Quat::from_axis_angle(self.rig.frame.up, heading.body_yaw);
        self.pose_legs(skeleton, buffer, &mut feet, body_rot, first)?;
        for side in 0..2 {
            self.pose_arm(skeleton, buffer, side, t.hands[side], body_rot, first)?;
        }
        // 7. The bounded solve from last frame's output toward the analytic pose: the turn
        // bound, the limits, the priorities and a fixed point, nothing after it.
        let fb = self.solve_full_body(skeleton, buffer, &t.hands, &feet, first)?;
        self.touch_down(skeleton, buffer, &feet);
        self.last.copy_from(buffer.pose());
        Ok(StageReport::Custom(self.measure(skeleton, buffer, fb, &t)))
    }
}

impl VrBody {
    /// Rejects what the frame cannot run on: non-finite trackers or time step, an invalid
    /// calibration or settings, a skeleton other than the one the body was built for.
    fn check_input(&self, skeleton: &Skeleton, buffer: &PoseBuffer) -> Result<(), StackError> {
        if !self.trackers.is_finite() {
            return Err(StackError::NonFinite(NonFinite::Goal));
        }
        if !(self.dt.is_finite() && self.dt >= 0.0) {
            return Err(StackError::NonFinite(NonFinite::TimeStep));
        }
        if !self.calibration.is_valid() {
            return Err(VrError::InvalidCalibration("not finite and positive").into());
        }
        self.settings.validate()?;
        if buffer.len() != skeleton.len() || skeleton.len() != self.bones.len() {
            return Err(StackError::SkeletonMismatch);
        }
        Ok(())
    }

    /// Step 7: the full-body solver's bounded tracking solve (also on the first frame) with
    /// the pelvis as the analytic pose has it and the hands and feet as 6D goals that the
    /// candidate can meet but for the turn bound (see the module docs). From the second frame
    /// on, the analytic pose is first brought within the VR body's turn bound less the
    /// solve's share of last frame's output ([`VrBody::bound_to_last`]), then within the
    /// solver's limits: the solve starts there and turns no joint more than its share
    /// ([`VR_SOLVE_TURN_SHARE`](super::VR_SOLVE_TURN_SHARE)).
    fn solve_full_body(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        hands: &[TrackerPose; 2],
        feet: &[BoneTransform; 2],
        first: bool,
    ) -> Result<FullBodyReport, StackError> {
        let fb_bones = self.solver.effector_bones();
        let pelvis = fb_bones[Effector::Pelvis as usize];
        let pelvis = buffer.model_transform(skeleton, pelvis);
        self.goals.effectors[Effector::Pelvis as usize] =
            EffectorGoal::new(pelvis.translation, pelvis.rotation);
        if !first {
            self.bound_to_last(buffer);
        }
        // The candidate within the solver's limits (the clamp the solve starts with), so that
        // the goals below read where the candidate's limbs are.
        self.solver
            .clamp_to_limits(skeleton, buffer.pose_unchecked_mut());
        buffer.invalidate_from(0);
        {
            let model = buffer.model_transforms(skeleton);
            let g = &mut self.goals;
            let at = |e: Effector| {
                let m = model[fb_bones[e as usize]];
                EffectorGoal::new(m.translation, m.rotation)
            };
            // A hand: its controller (position and rotation) where it is within the arm's
            // reach and a swivel has the arm within its limits; else the position where the
            // controller is beyond the arm (the arm stretched toward it) and both where no
            // swivel had the arm within its limits (the clamp moved it) are the candidate's. The bounded solve
            // could move the hand only its share of the turn bound nearer, and the next
            // frame's candidate starts from the analytic arm again: iterating for it every
            // frame bought under its share of the bound, at the cost of the whole budget.
            for (side, e) in [Effector::LeftHand, Effector::RightHand]
                .into_iter()
                .enumerate()
            {
                let candidate = at(e);
                let hand = &hands[side];
                let goal = &mut g.effectors[e as usize];
                *goal = EffectorGoal::new(
                    if self.state.hand_in_reach[side] && !self.state.arm_unfit[side] {
                        hand.position
                    } else {
                        candidate.position
                    },
                    if self.state.arm_unfit[side] {
                        candidate.rotation
                    } else {
                        hand.rotation.normalize()
                    },
                );
                goal.rotation_weight = HAND_ROTATION_WEIGHT;
            }
            // A foot: its target while it stands (it must not slide); where the candidate has
            // it while it swings (the leg lagging its arc by the turn bound).
            let phases = self.locomotion.phases();
            for (side, e) in [Effector::LeftFoot, Effector::RightFoot]
                .into_iter()
                .enumerate()
            {
                g.effectors[e as usize] = if phases[side].in_air() {
                    at(e)
                } else {
                    EffectorGoal::new(feet[side].translation, feet[side].rotation)
                };
            }
            g.look_at.enabled = false;
            g.center_of_mass.enabled = false;
        }
        // The first frame too: the analytic pose is near the goals (a cold solve would lean
        // the trunk toward an unreachable controller, and the next frames would bring the
        // head back only at the turn bound's pace).
        let fb = self
            .solver
            .solve(skeleton, buffer.pose_unchecked_mut(), &self.goals);
        buffer.invalidate_from(0);
        let fb = fb?;
        self.state.started = true;
        self.report.trunk_moved = fb.iterations > 0;
        Ok(fb)
    }

    /// A foot touching down is planted once this frame's output has it on its target
    /// ([`Locomotion::touch_down`](super::Locomotion)): the stance starts where the foot is.
    fn touch_down(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        feet: &[BoneTransform; 2],
    ) {
        for side in 0..2 {
            if !matches!(self.locomotion.phases()[side], FootPhase::Stepping { progress } if progress >= 1.0)
            {
                continue;
            }
            let at = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][2])
                .translation;
            let arrived =
                at.distance(feet[side].translation) <= TOUCHDOWN_TOLERANCE * self.rig.leg_length;
            if self.locomotion.touch_down(side, arrived, &self.settings) {
                self.report.steps += 1;
            }
        }
    }

    /// The bounded candidate: every joint of the analytic pose in `buffer` that turned more
    /// than the approach's share of the VR body's bound ([`VrBody::approach_turn`]) from last
    /// frame's output is turned from there toward it by that much (the hips' translation is the analytic one:
    /// the pelvis goal holds it). A joint within the bound keeps its analytic rotation bit for
    /// bit, so once the analytic pose stops changing the candidate does too.
    fn bound_to_last(&mut self, buffer: &mut PoseBuffer) {
        let max = self.approach_turn();
        let pose = buffer.pose_unchecked_mut();
        for &b in &self.rig.joints {
            let (from, to) = (self.last.rotations[b], pose.rotations[b]);
            if from == to {
                continue;
            }
            let angle = quat_angle(from, to);
            if angle > max {
                pose.rotations[b] = crate::humanoid::onto_bound(from, to, max, angle);
            }
        }
        buffer.invalidate_from(0);
    }

    /// The share of the VR body's turn bound that the approach of step 7 may use: what the
    /// bounded solve's own bound leaves of [`VR_MAX_TURN`](super::VR_MAX_TURN).
    pub(super) fn approach_turn(&self) -> f32 {
        (super::VR_MAX_TURN - self.solver.settings().max_turn).max(0.0)
    }

    /// The report, measured on the output by forward kinematics.
    fn measure(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        fb: FullBodyReport,
        t: &Targets,
    ) -> CustomReport {
        let model = buffer.model_transforms(skeleton);
        for side in 0..2 {
            let [hip, _, ankle] = self.rig.leg_bones[side];
            self.state.leg_span[side] = model[hip].translation.distance(model[ankle].translation);
        }
        let head = model[self.rig.head];
        let r = &mut self.report;
        r.full_body = fb;
        r.head_position_error = head.translation.distance(t.head.position);
        r.head_rotation_error = head.rotation.angle_between(t.head_rot);
        for side in 0..2 {
            let h = model[self.rig.arm_bones[side][2]];
            r.hand_position_error[side] = h.translation.distance(t.hands[side].position);
            r.hand_rotation_error[side] =
                h.rotation.angle_between(t.hands[side].rotation.normalize());
        }
        let pos = r
            .head_position_error
            .max(r.hand_position_error[0])
            .max(r.hand_position_error[1]);
        let ang = r
            .head_rotation_error
            .max(r.hand_rotation_error[0])
            .max(r.hand_rotation_error[1]);
        let tol = 1e-3 * self.rig.leg_length;
        CustomReport {
            converged: fb.converged && pos <= tol && ang <= 0.0175,
            iterations: fb.iterations.max(1),
            position_residual: pos,
            angle_residual: ang,
        }
    }
}
