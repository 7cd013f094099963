//! Procedural stepping for [`VrBody`](super::VrBody): where each foot is, when it steps and
//! where it lands.
//!
//! A foot is *planted* (its target does not move at all, so it cannot slide), *stepping*
//! (lifted on an arc from where it was to where it lands) or *tracked* (a foot tracker drives
//! it). The body wants each foot at its rest offset from the support point (midway between the
//! pelvis and the head, on the ground), turned with the body's heading. A planted foot steps
//! when it is more than [`VrSettings::step_threshold`] leg lengths from that place or turned
//! more than [`VrSettings::step_angle`] from the heading, or when its hip's velocity (the
//! body walking or turning on the spot) will carry the hip out of the leg's reach (with the
//! knee as straight as its range allows) within one and a half step durations — one foot at
//! a time, the one off most (the foot that did not step last gets a bonus, so feet
//! alternate), and after a landing the other foot follows if it is off by a third of those
//! thresholds (so the feet end up square after a step, a side step or a turn on the spot). A
//! step lands a little ahead along the body's velocity ([`VrSettings::step_lead`]), at most
//! [`VrSettings::max_step`] from where the foot left, never across the other foot, and within
//! 97 % of the leg's reach of where its hip will be when it lands (retargeted every frame of
//! the swing); its duration shrinks from [`VrSettings::step_duration`] to
//! [`VrSettings::min_step_duration`] as the body speeds up to 1.2 leg lengths per second, and
//! further when the planted foot would otherwise be left out of reach before the step lands
//! (a swing never outlasts the stance under it); a swinging foot is kept within its leg's
//! reach; the foot rises on a half sine of [`VrSettings::step_height`] (less for a short step)
//! and turns by a slerp. The landing height comes from the [`GroundProbe`] when one is given.

#![allow(
    clippy::needless_range_loop,
    reason = "per-side loops index several parallel [left, right] arrays"
)]

use core::f32::consts::PI;
use core::fmt::Debug;

use glam::{Quat, Vec3};

use super::{TrackerPose, VrSettings};
use crate::humanoid::BodyFrame;
use crate::pose::BoneTransform;

/// The ground under the feet: the hook a grounding stage (ray casts, a height field) fills.
pub trait GroundProbe: Debug + Send + Sync {
    /// The ground's height at `point` (model space), along the body's up direction, relative
    /// to the rest foot plane (0 = flat ground at rest height). `None`: no ground known there
    /// (treated as 0).
    fn height_at(&self, point: Vec3) -> Option<f32>;
}

/// What a foot is doing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FootPhase {
    /// On the ground; its target does not move.
    Planted,
    /// In the air; `progress` in `[0, 1)`. At 1 the foot is touching down: its target is
    /// where it lands and no longer moves, and it is reported `Planted` from the frame whose
    /// output has it there (the leg may lag its swing by the per-frame turn bound).
    Stepping {
        /// Fraction of the step done.
        progress: f32,
    },
    /// Driven by a foot tracker.
    Tracked,
}

#[derive(Clone, Copy, Debug)]
struct Foot {
    phase: FootPhase,
    /// Where it is now (the target handed to the solver).
    current: BoneTransform,
    from: BoneTransform,
    to: BoneTransform,
    duration: f32,
    height: f32,
    /// Seconds spent touching down (`Stepping { progress: 1.0 }`).
    touching: f32,
}

impl FootPhase {
    /// Whether the foot is in the air (stepping, not yet touching down).
    pub(crate) fn in_air(self) -> bool {
        matches!(self, Self::Stepping { progress } if progress < 1.0)
    }
}

/// The input of one planning step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlanInput {
    /// The hip joints (upper leg origins) where the body puts them this frame.
    pub hips: [Vec3; 2],
    /// The support point on the ground plane through the model origin.
    pub support: Vec3,
    /// The body's heading (a rotation about up).
    pub body_rotation: Quat,
    /// Rest model transforms of the feet (left, right).
    pub rest_feet: [BoneTransform; 2],
    /// The rest support point (on the ground plane through the model origin).
    pub rest_center: Vec3,
    /// Rest foot plane height (kept for probes).
    pub foot_plane: f32,
    /// A flat raise of the ground, along up.
    pub ground_offset: f32,
    /// Time step (0 on the first frame).
    pub dt: f32,
    /// Foot trackers, model space.
    pub trackers: [Option<TrackerPose>; 2],
}

/// The feet's state: see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Locomotion {
    frame: BodyFrame,
    leg: f32,
    /// Per leg: hip-to-ankle reach with the knee as straight as its range allows.
    pub(crate) reach: [f32; 2],
    feet: [Foot; 2],
    last: usize,
    since_land: f32,
    prev_support: Option<Vec3>,
    velocity: Vec3,
    /// The hip joints last frame and their smoothed velocities (a turn on the spot moves the
    /// hips, not the support point).
    prev_hips: Option<[Vec3; 2]>,
    hip_velocity: [Vec3; 2],
    started: bool,
}

/// The shortest step (a fraction of the leg: 4.5 mm on a 0.9 m leg) a stretched leg takes: a
/// step that would land nearer to where the foot is does not relieve the leg (see `update`;
/// standing, the shuffle it stops moved a foot 0.2–2.3 mm a step).
const MIN_STRETCH_STEP: f32 = 0.005;

/// A foot touching down is reported planted at the latest this fraction of
/// [`VrSettings::min_step_duration`] after its step's time is up, wherever its leg has set it
/// (the turn bound lets a lagging knee turn about 100° at 72 Hz in that time).
const TOUCHDOWN_WAIT: f32 = 0.5;

/// A step lands at most this fraction of the leg's reach from where its hip will be.
const LANDING_REACH: f32 = 0.97;

fn smooth(t: f32) -> f32 {
    let t = t.clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

impl Locomotion {
    /// Feet not yet placed (the first update plants them under the body).
    #[must_use]
    pub fn new(frame: BodyFrame, leg_length: f32) -> Self {
        let foot = Foot {
            phase: FootPhase::Planted,
            current: BoneTransform::IDENTITY,
            from: BoneTransform::IDENTITY,
            to: BoneTransform::IDENTITY,
            duration: 1.0,
            height: 0.0,
            touching: 0.0,
        };
        Self {
            frame,
            leg: leg_length,
            reach: [leg_length; 2],
            feet: [foot; 2],
            last: 1,
            since_land: 0.0,
            prev_support: None,
            velocity: Vec3::ZERO,
            prev_hips: None,
            hip_velocity: [Vec3::ZERO; 2],
            started: false,
        }
    }

    /// Forgets the feet: the next update plants them under the body.
    pub fn reset(&mut self) {
        self.started = false;
        self.prev_support = None;
        self.velocity = Vec3::ZERO;
        self.prev_hips = None;
        self.hip_velocity = [Vec3::ZERO; 2];
    }

    /// Each foot's phase (left, right).
    #[must_use]
    pub fn phases(&self) -> [FootPhase; 2] {
        [self.feet[0].phase, self.feet[1].phase]
    }

    /// Each foot's current target, model space (left, right).
    #[must_use]
    pub fn foot_targets(&self) -> [BoneTransform; 2] {
        [self.feet[0].current, self.feet[1].current]
    }

    /// The support point's smoothed ground velocity, model units per second.
    #[must_use]
    pub fn velocity(&self) -> Vec3 {
        self.velocity
    }

    fn ground(&self, ground: Option<&dyn GroundProbe>, p: Vec3) -> f32 {
        ground
            .and_then(|g| g.height_at(p))
            .filter(|h| h.is_finite())
            .unwrap_or(0.0)
    }

    /// Where foot `i` should be with the body as it is (no lead).
    fn desired(
        &self,
        input: &PlanInput,
        i: usize,
        ground: Option<&dyn GroundProbe>,
    ) -> BoneTransform {
        let up = self.frame.up;
        let rest = input.rest_feet[i];
        let offset = rest.translation - input.rest_center;
        let flat = offset - up * offset.dot(up);
        let p = input.support + input.body_rotation * flat;
        let h = rest.translation.dot(up)
            + self.ground(ground, p + up * input.foot_plane)
            + input.ground_offset;
        BoneTransform::from_translation_rotation(p + up * h, input.body_rotation * rest.rotation)
    }

    /// One frame: advances the steps, decides new ones (a step's landing:
    /// [`Locomotion::touch_down`]).
    pub(crate) fn update(
        &mut self,
        input: &PlanInput,
        s: &VrSettings,
        ground: Option<&dyn GroundProbe>,
        first: bool,
    ) {
        let up = self.frame.up;
        let leg = self.leg;
        let want = [
            self.desired(input, 0, ground),
            self.desired(input, 1, ground),
        ];
        if first || !self.started {
            for (f, w) in self.feet.iter_mut().zip(want) {
                *f = Foot {
                    phase: FootPhase::Planted,
                    current: w,
                    from: w,
                    to: w,
                    duration: 1.0,
                    height: 0.0,
                    touching: 0.0,
                };
            }
            self.started = true;
            self.prev_support = Some(input.support);
            self.velocity = Vec3::ZERO;
            self.prev_hips = Some(input.hips);
            self.hip_velocity = [Vec3::ZERO; 2];
            self.since_land = 1.0;
            self.apply_trackers(input);
            return;
        }
        let dt = input.dt;
        if dt > 0.0 {
            if let Some(prev) = self.prev_support {
                let v = (input.support - prev) / dt;
                let k = 1.0 - (-dt / 0.15).exp();
                self.velocity += k * (v - self.velocity);
            }
            self.prev_support = Some(input.support);
            if let Some(prev) = self.prev_hips {
                let k = 1.0 - (-dt / 0.1).exp();
                for i in 0..2 {
                    let v = (input.hips[i] - prev[i]) / dt;
                    self.hip_velocity[i] += k * (v - self.hip_velocity[i]);
                }
            }
            self.prev_hips = Some(input.hips);
            self.since_land += dt;
        }
        // Advance the steps in progress.
        let speed = self.velocity.length() / leg;
        // Land ahead by half the step's own travel plus the lead.
        let duration = s.step_duration
            - (s.step_duration - s.min_step_duration) * (speed / 1.2).clamp(0.0, 1.0);
        let lead = self.velocity * (0.5 * duration + s.step_lead);
        for i in 0..2 {
            let FootPhase::Stepping { progress } = self.feet[i].phase else {
                continue;
            };
            if progress >= 1.0 {
                // Touching down: the target stays where it landed ([`Locomotion::touch_down`]).
                self.feet[i].touching += dt;
                continue;
            }
            // Land before the planted foot is left out of the leg's reach: the step hurries
            // (never below a third of its duration) when the body moves on fast.
            let stay = self.stance_time_left(input, 1 - i);
            let remaining = (1.0 - progress) * self.feet[i].duration;
            if stay < remaining {
                let rest = (1.0 - progress).max(1e-3);
                self.feet[i].duration = (stay / rest).max(s.min_step_duration / 3.0);
            }
            let t = progress + dt / self.feet[i].duration;
            // Retarget the landing as the body moves on.
            let remaining = (1.0 - t).max(0.0) * self.feet[i].duration;
            let to = self.landing(input, i, want[i], lead, remaining, s, ground);
            let f = &mut self.feet[i];
            f.to = to;
            if t >= 1.0 {
                f.current = f.to;
                f.phase = FootPhase::Stepping { progress: 1.0 };
                f.touching = 0.0;
            } else {
                let k = smooth(t);
                f.current = BoneTransform::from_translation_rotation(
                    f.from.translation.lerp(f.to.translation, k) + up * (f.height * (PI * t).sin()),
                    f.from.rotation.slerp(f.to.rotation, k),
                );
                f.phase = FootPhase::Stepping { progress: t };
            }
        }
        // Decide a new step.
        let stepping = self
            .feet
            .iter()
            .any(|f| matches!(f.phase, FootPhase::Stepping { .. }));
        if !stepping && dt > 0.0 && self.since_land >= 0.05 {
            let score = |i: usize| -> f32 {
                let f = &self.feet[i];
                if f.phase != FootPhase::Planted {
                    return 0.0;
                }
                // Measured from where the foot would land now (ahead along the velocity), so
                // a walk steps early enough and lands ahead, not only once left behind.
                let d = f.current.translation - (want[i].translation + lead);
                let flat = (d - up * d.dot(up)).length() / leg;
                let turn = (f.current.rotation.inverse() * want[i].rotation).normalize();
                let yaw = 2.0
                    * turn
                        .xyz()
                        .dot(f.current.rotation.inverse() * up)
                        .atan2(turn.w.abs());
                // A leg stretched near its length steps too (the support has left the foot),
                // unless the step would land about where the foot is: then the hips' height
                // stretches the leg, not the foot's place, and stepping on the spot would
                // never end (a standing body shuffled its feet by a millimetre a step, for
                // ever).
                let stretch = input.hips[i].distance(f.current.translation) / self.reach[i];
                let land = self.landing(input, i, want[i], lead, duration, s, ground);
                let stretch_score =
                    if land.translation.distance(f.current.translation) > MIN_STRETCH_STEP * leg {
                        ((stretch - 0.95) / (0.985 - 0.95)).max(0.0)
                    } else {
                        0.0
                    };
                // A foot that must leave within a step's time (the body moves away from it)
                // steps now, while the other foot can still carry the body.
                let stay = self.stance_time_left(input, i);
                let hurry = if stay.is_finite() {
                    (1.5 * duration / stay.max(1e-3)).min(10.0)
                } else {
                    0.0
                };
                (flat / s.step_threshold)
                    .max(yaw.abs() / s.step_angle)
                    .max(stretch_score)
                    .max(hurry)
            };
            let sc = [score(0), score(1)];
            let other = 1 - self.last;
            let follow = self.since_land < 0.35 && sc[other] >= 0.5;
            let pick = if sc[other] + 0.3 >= sc[self.last] {
                other
            } else {
                self.last
            };
            if sc[pick] >= 1.0 || (follow && pick == other) {
                let to = self.landing(input, pick, want[pick], lead, duration, s, ground);
                let from = self.feet[pick].current;
                let dist = (to.translation - from.translation).length() / leg;
                let f = &mut self.feet[pick];
                f.from = from;
                f.to = to;
                f.duration = duration;
                f.height = s.step_height * leg * (dist / 0.3 + 0.3).min(1.0);
                f.phase = FootPhase::Stepping { progress: 0.0 };
            }
        }
        self.apply_trackers(input);
    }

    /// Foot `i`, touching down, is planted when the frame's output has it on its target
    /// (`arrived`) or it has waited [`TOUCHDOWN_WAIT`] of the shortest step's duration.
    /// Returns whether it landed.
    pub(crate) fn touch_down(&mut self, i: usize, arrived: bool, s: &VrSettings) -> bool {
        let f = &mut self.feet[i];
        let touching = matches!(f.phase, FootPhase::Stepping { progress } if progress >= 1.0);
        if !touching || !(arrived || f.touching >= TOUCHDOWN_WAIT * s.min_step_duration) {
            return false;
        }
        f.phase = FootPhase::Planted;
        self.since_land = 0.0;
        self.last = i;
        true
    }

    /// How long planted foot `i` can stay where it is before the body's motion (the support's
    /// velocity) takes its hip out of the leg's reach (98 %), seconds; infinite when the body
    /// stands still or moves toward it.
    fn stance_time_left(&self, input: &PlanInput, i: usize) -> f32 {
        let f = &self.feet[i];
        if f.phase != FootPhase::Planted {
            return f32::INFINITY;
        }
        let v = self.hip_velocity[i];
        let speed = v.length();
        if speed < 1e-3 * self.leg {
            return f32::INFINITY;
        }
        // The hip moves along v: |h + v t - foot| = r.
        let r = 0.98 * self.reach[i];
        let w = input.hips[i] - f.current.translation;
        let b = w.dot(v);
        let c = w.length_squared() - r * r;
        if c >= 0.0 {
            // Already at or past the reach: leave now (or never, when moving back toward it).
            return if b >= 0.0 { 0.0 } else { f32::INFINITY };
        }
        let a = speed * speed;
        let disc = (b * b - a * c).max(0.0);
        (-b + disc.sqrt()) / a
    }

    /// Where foot `i` lands: ahead along the velocity, within reach of where it left, not
    /// across the other foot, and within the leg's reach (with a margin) of where the body's
    /// velocity will have carried its hip `remaining` seconds from now, when it lands.
    #[allow(
        clippy::too_many_arguments,
        reason = "private helper of `update`, called from two places"
    )]
    fn landing(
        &self,
        input: &PlanInput,
        i: usize,
        want: BoneTransform,
        lead: Vec3,
        remaining: f32,
        s: &VrSettings,
        ground: Option<&dyn GroundProbe>,
    ) -> BoneTransform {
        let up = self.frame.up;
        let leg = self.leg;
        let from = self.feet[i].from.translation;
        let mut p = want.translation + lead;
        let step = p - from;
        let flat = step - up * step.dot(up);
        let max = s.max_step * leg;
        if flat.length() > max {
            p -= flat * (1.0 - max / flat.length());
        }
        // Keep to this foot's side of the other foot.
        let side = if i == 0 { 1.0 } else { -1.0 };
        let lateral = input.body_rotation * self.frame.left * side;
        let rest_width = {
            let d = input.rest_feet[0].translation - input.rest_feet[1].translation;
            (d - up * d.dot(up)).length()
        };
        let other = self.feet[1 - i].current.translation;
        let gap = (p - other).dot(lateral);
        let min_gap = 0.5 * rest_width;
        if gap < min_gap {
            p += lateral * (min_gap - gap);
        }
        let mut flat_p = p - up * p.dot(up);
        let h = input.rest_feet[i].translation.dot(up)
            + self.ground(ground, flat_p + up * input.foot_plane)
            + input.ground_offset;
        let hip = input.hips[i] + self.hip_velocity[i] * remaining;
        let (hip_flat, rise) = (hip - up * hip.dot(up), hip.dot(up) - h);
        let r = LANDING_REACH * self.reach[i];
        let w = flat_p - hip_flat;
        let rho = (r * r - rise * rise).max(0.0).sqrt();
        if w.length_squared() > rho * rho {
            flat_p = hip_flat + w * (rho / w.length());
        }
        BoneTransform::from_translation_rotation(flat_p + up * h, want.rotation)
    }

    fn apply_trackers(&mut self, input: &PlanInput) {
        for (f, t) in self.feet.iter_mut().zip(input.trackers) {
            match t {
                Some(t) => {
                    f.current = BoneTransform::from_translation_rotation(t.position, t.rotation);
                    f.phase = FootPhase::Tracked;
                }
                None if f.phase == FootPhase::Tracked => {
                    f.from = f.current;
                    f.to = f.current;
                    f.phase = FootPhase::Planted;
                }
                None => {}
            }
        }
    }
}
