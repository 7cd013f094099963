//! One frame of the VR body, in the steps the [module docs](super) list.

use core::f32::consts::{FRAC_PI_2, PI};

use glam::{Quat, Vec3};

use super::limbs::UpperInput;
use super::locomotion::{self, FootPhase};
use super::{
    HAND_ROTATION_WEIGHT, HIP_FIT_STEPS, LEAN_RELAX_TIME, SETTLE_RATE, SHIN_LEAN_RATE,
    TOUCHDOWN_TOLERANCE, TrackerPose, VrBody, VrError,
};
use crate::analytic::Pole;
use crate::analytic::finish::quat_angle;
use crate::humanoid::{BodyFrame, Effector, EffectorGoal, FullBodyReport};
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError};

fn yaw_of(dir: Vec3, frame: &BodyFrame) -> Option<f32> {
    let (x, y) = (dir.dot(frame.forward), dir.dot(frame.left));
    (x * x + y * y > 1e-8).then(|| y.atan2(x))
}

fn wrap(a: f32) -> f32 {
    let a = (a + PI).rem_euclid(2.0 * PI) - PI;
    if a.is_finite() { a } else { 0.0 }
}

/// Turns unit `from` toward unit `to` by at most `max` radians.
fn turn_toward(from: Vec3, to: Vec3, max: f32) -> Vec3 {
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
fn settle_step(step: f32, d: f32, dt: f32) -> f32 {
    let floor = SETTLE_RATE * dt;
    if d.abs() <= floor {
        d
    } else {
        step.abs().max(floor).min(d.abs()).copysign(d)
    }
}

/// The swivels [`VrBody::fit_knee_swivels`] tries besides the wanted one: thirds of the
/// frame's swivel turn, either way.
const SWIVEL_CANDIDATES: usize = 12;

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

/// Where the body faces this frame (step 2).
#[derive(Clone, Copy, Debug)]
struct Heading {
    body_yaw: f32,
    neck_yaw: f32,
    /// The head's pitch below level, radians.
    pitch_down: f32,
}

impl VrBody {
    /// One frame: the steps of the [module docs](super), in order.
    pub(super) fn run(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<CustomReport, StackError> {
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
        Ok(self.measure(skeleton, buffer, fb, &t))
    }

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

    /// Step 2: the head's heading and pitch, and the body's heading after it.
    fn turn_body(&mut self, t: &Targets, dt: f32, first: bool) -> Heading {
        let s = &self.settings;
        let frame = self.rig.frame;
        let face = t.head_delta * frame.forward;
        if let Some(y) = yaw_of(face, &frame) {
            self.state.head_yaw = y;
        }
        let pitch_down = (-face.dot(frame.up)).clamp(-1.0, 1.0).asin();
        let hands_mid = 0.5 * (t.hands[0].position + t.hands[1].position) - t.head.position;
        let mut target_yaw = self.state.head_yaw;
        if let Some(hy) = yaw_of(hands_mid, &frame) {
            let d = wrap(hy - target_yaw);
            if d.abs() < FRAC_PI_2 {
                target_yaw += s.hands_yaw * d;
            }
        }
        if first {
            self.state.body_yaw = target_yaw;
        } else {
            // The body turns after the head once the head has turned past the dead zone (a
            // glance does not turn the body), and slowly drifts under the head anyway.
            let d = wrap(target_yaw - self.state.body_yaw);
            let excess = (d.abs() - s.turn_dead_zone).max(0.0).copysign(d);
            let k = if s.turn_time > 0.0 {
                1.0 - (-dt / s.turn_time).exp()
            } else {
                1.0
            };
            let drift = 1.0 - (-dt / 2.0).exp();
            let step = settle_step(k * excess + drift * (d - excess), d, dt);
            // Arrived: the target itself (adding `d` and wrapping again can land an ulp off,
            // and the next frames would trade that ulp back and forth).
            self.state.body_yaw = if step == d {
                wrap(target_yaw)
            } else {
                wrap(self.state.body_yaw + step)
            };
            let neck = wrap(self.state.head_yaw - self.state.body_yaw);
            if neck.abs() > s.max_neck_yaw {
                self.state.body_yaw = wrap(self.state.head_yaw - s.max_neck_yaw.copysign(neck));
            }
        }
        let body_yaw = self.state.body_yaw;
        Heading {
            body_yaw,
            neck_yaw: wrap(self.state.head_yaw - body_yaw),
            pitch_down,
        }
    }

    /// Step 3: the lean from the head's pitch and how far it dropped (crouching), eased in
    /// quickly and out slowly.
    fn ease_lean(&mut self, head: Vec3, pitch_down: f32, dt: f32, first: bool) {
        let s = &self.settings;
        let head_drop = ((self.rig.foot_plane + s.stand_height * self.rig.head_height
            - head.dot(self.rig.frame.up))
            / (0.5 * self.rig.head_height))
            .clamp(0.0, 1.0);
        let crouch = head_drop;
        let lean_target =
            (s.pitch_lean * pitch_down.max(0.0) + s.crouch_lean * crouch).clamp(0.0, s.max_lean);
        if first {
            self.state.lean = lean_target;
        } else {
            // Leaning in is quick; straightening up is slower, so that a foot lifting off (its
            // shin no longer asking for more lean, below) does not throw the hips forward.
            let tau = if lean_target >= self.state.lean {
                0.08
            } else {
                LEAN_RELAX_TIME
            };
            let k = 1.0 - (-dt / tau).exp();
            let d = lean_target - self.state.lean;
            let step = settle_step(k * d, d, dt);
            self.state.lean = if step == d {
                lean_target
            } else {
                self.state.lean + step
            };
        }
    }

    /// Steps 3–4: upper body rotations (hips, spine: lean + chest twist, neck) and the pelvis
    /// from the head; then more lean while a planted leg's shin would tilt past its range (a
    /// deep crouch sends the hips back, not the knees forward). Returns the pelvis position.
    fn bend_trunk(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        t: &Targets,
        heading: Heading,
        dt: f32,
        first: bool,
    ) -> Vec3 {
        let s = &self.settings;
        let up = self.rig.frame.up;
        let twist = s.chest_twist * heading.neck_yaw;
        let body_fwd = Quat::from_axis_angle(up, heading.body_yaw) * self.rig.frame.forward;
        // No more lean than the spine bones' range (and the hips' share) allow.
        let max_lean = s
            .max_lean
            .min(self.rig.spine_flex / (1.0 - s.hip_lean).max(1e-3));
        let mut lean = self.state.lean.min(max_lean);
        // The shins' and thighs' extra lean comes in at a bounded rate: a foot landing behind
        // the body (a backward step) or a hip reaching the end of its flexion asks for more
        // lean at once (the lean moves the hips back, which asks for more), which would throw
        // the hips back and turn the arms after the chest in one frame.
        let lean_cap = if first {
            max_lean
        } else {
            (lean + SHIN_LEAN_RATE * dt).min(max_lean)
        };
        let input = |lean: f32| UpperInput {
            lean,
            body_yaw: heading.body_yaw,
            twist,
            head_delta: t.head_delta,
            head: t.head.position,
            pelvis: t.pelvis,
        };
        let mut pelvis = Vec3::ZERO;
        let mut raised = false;
        for _ in 0..4 {
            pelvis = self.pose_upper(skeleton, buffer, input(lean));
            if t.pelvis.is_some() || first {
                break;
            }
            let more = self.lean_for_planted_legs(skeleton, buffer, pelvis, body_fwd, lean);
            if more <= 1e-4 || lean >= lean_cap {
                break;
            }
            raised = true;
            lean = (lean + more).min(lean_cap);
        }
        // While the planted legs hold the lean up, it does not relax below last frame's: the
        // relaxation and the legs' raise would otherwise trade a little every frame for ever.
        let held = self.state.last_lean.min(max_lean);
        if raised && !first && lean < held {
            lean = held;
            pelvis = self.pose_upper(skeleton, buffer, input(lean));
        }
        self.state.lean = lean;
        self.state.last_lean = lean;
        pelvis
    }

    /// How much more lean the planted legs ask for with the trunk posed at `lean` and the
    /// hips at `pelvis`: a shin tilted past its range sends the hips back, a thigh folded
    /// past the hip's flexion tilts the pelvis.
    fn lean_for_planted_legs(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        pelvis: Vec3,
        body_fwd: Vec3,
        lean: f32,
    ) -> f32 {
        let s = &self.settings;
        let up = self.rig.frame.up;
        let hips_now = buffer.model_transform(skeleton, self.rig.hips).translation;
        let feet = self.locomotion.foot_targets();
        let phases = self.locomotion.phases();
        let mut back = 0.0_f32;
        let mut fold = 0.0_f32;
        for side in 0..2 {
            if phases[side] != FootPhase::Planted {
                continue;
            }
            let hip = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][0])
                .translation
                - hips_now
                + pelvis;
            let [l1, l2] = self.rig.legs[side].rest_lengths();
            let w = hip - feet[side].translation;
            let (v, u, d) = (w.dot(up), w.dot(body_fwd), w.length());
            if v <= 0.0 || d <= 1e-6 {
                continue;
            }
            let beta = ((l2 * l2 + d * d - l1 * l1) / (2.0 * l2 * d))
                .clamp(-1.0, 1.0)
                .acos();
            let tilt = u.atan2(v) + beta;
            if tilt > s.max_shin_tilt {
                let u_ok = v * (s.max_shin_tilt - beta).clamp(-1.2, 1.2).tan();
                back = back.max(u - u_ok);
            }
            // The thigh's flexion from the (tilted) pelvis.
            let alpha = ((l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d))
                .clamp(-1.0, 1.0)
                .acos();
            let thigh = (-u).atan2(v) + alpha + lean * s.hip_lean;
            fold = fold.max(thigh - s.max_hip_flex);
        }
        back / (self.rig.torso * lean.cos().max(0.2)) + 1.5 * fold.max(0.0)
    }

    /// Step 5: where the body's support is, then the feet's stepping ([`Locomotion`](super::Locomotion)).
    /// Returns the foot targets and the hip joints with the hips at `pelvis`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the frame's values this step reads, each used once"
    )]
    fn plan_feet(
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
    fn keep_swing_in_reach(&self, feet: &mut [BoneTransform; 2], hip_joints: [Vec3; 2]) {
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
    fn seat_pelvis(
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
    fn pose_legs(
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
    /// ([`VrSettings::max_swivel_step`](super::VrSettings::max_swivel_step), in thirds, either
    /// way from last frame's `last_knees`), nearest to the wanted one first, and keeps the
    /// first within the limits: the knee turning out of the way keeps the pelvis where the
    /// head puts it (the head on its target) where a swivel allows it.
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
                self.state.knee_dir[side] = c;
                let pole = 0.5 * (hip + feet[side].translation) + c * self.rig.leg_length;
                self.solve_leg(skeleton, buffer, side, &feet[side], Pole::Position(pole))?;
                if self.leg_within_limits(skeleton, buffer, side) {
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
            return Ok(());
        }
        // (The bisection solves only the standing legs; the last rise poses both.)
        let at = |me: &Self, buffer: &mut PoseBuffer, rise: f32, both: bool| {
            Self::set_model_translation(skeleton, buffer, me.rig.hips, pelvis + up * rise);
            me.place_legs(skeleton, buffer, feet, !both)
                .map(|()| me.standing_legs_fit(skeleton, buffer))
        };
        if !at(self, buffer, high, false)? {
            at(self, buffer, 0.0, true)?;
            return Ok(());
        }
        let mut low = 0.0_f32;
        for _ in 0..HIP_FIT_STEPS {
            let mid = 0.5 * (low + high);
            if at(self, buffer, mid, false)? {
                high = mid;
            } else {
                low = mid;
            }
        }
        at(self, buffer, high, true)?;
        self.report.pelvis_raised = true;
        Ok(())
    }

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
    fn pose_arm(
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
        }
        Ok(())
    }

    /// Step 7: the full-body solver's bounded tracking solve (also on the first frame) with
    /// the pelvis as the analytic pose has it and the hands and feet on their targets as 6D
    /// goals. From the second frame on, the analytic pose is first brought within the VR
    /// body's turn bound less the solve's share of last frame's output
    /// ([`VrBody::bound_to_last`]): the solve starts there and turns no joint more than its
    /// share ([`VR_SOLVE_TURN_SHARE`](super::VR_SOLVE_TURN_SHARE)).
    fn solve_full_body(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        hands: &[TrackerPose; 2],
        feet: &[BoneTransform; 2],
        first: bool,
    ) -> Result<FullBodyReport, StackError> {
        let fb_bones = self.solver.effector_bones();
        {
            let model = buffer.model_transforms(skeleton);
            let g = &mut self.goals;
            g.effectors[Effector::Pelvis as usize] = EffectorGoal::new(
                model[fb_bones[Effector::Pelvis as usize]].translation,
                model[fb_bones[Effector::Pelvis as usize]].rotation,
            );
            for (e, hand) in [Effector::LeftHand, Effector::RightHand]
                .into_iter()
                .zip(hands)
            {
                let goal = &mut g.effectors[e as usize];
                *goal = EffectorGoal::new(hand.position, hand.rotation.normalize());
                goal.rotation_weight = HAND_ROTATION_WEIGHT;
            }
            g.effectors[Effector::LeftFoot as usize] =
                EffectorGoal::new(feet[0].translation, feet[0].rotation);
            g.effectors[Effector::RightFoot as usize] =
                EffectorGoal::new(feet[1].translation, feet[1].rotation);
            g.look_at.enabled = false;
            g.center_of_mass.enabled = false;
        }
        if !first {
            self.bound_to_last(buffer);
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
    fn approach_turn(&self) -> f32 {
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
