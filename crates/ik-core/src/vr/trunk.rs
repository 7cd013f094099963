//! Steps 2–4 of the VR body's frame: the body's heading after the head, the lean, and the
//! trunk bent from the head down to the pelvis.

use core::f32::consts::FRAC_PI_2;

use glam::{Quat, Vec3};

use super::frame::{Targets, settle_step, wrap, yaw_of};
use super::limbs::UpperInput;
use super::locomotion::FootPhase;
use super::{LEAN_RELAX_TIME, SHIN_LEAN_RATE, VrBody};
use crate::skeleton::Skeleton;
use crate::stack::PoseBuffer;

/// Where the body faces this frame (step 2).
#[derive(Clone, Copy, Debug)]
pub(super) struct Heading {
    pub(super) body_yaw: f32,
    pub(super) neck_yaw: f32,
    /// The head's pitch below level, radians.
    pub(super) pitch_down: f32,
}

impl VrBody {
    /// Step 2: the head's heading and pitch, and the body's heading after it.
    pub(super) fn turn_body(&mut self, t: &Targets, dt: f32, first: bool) -> Heading {
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
    pub(super) fn ease_lean(&mut self, head: Vec3, pitch_down: f32, dt: f32, first: bool) {
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
    pub(super) fn bend_trunk(
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
}
