//! Foot grounding: feet that stand and walk on uneven ground, slopes and stairs.
//!
//! Input: the animated pose (whatever the earlier stages left in the buffer) and, per leg, the
//! ground under its foot as the caller found it ([`FootGround`]: a hit point and normal under
//! the heel/ankle and under the toe, either or both, or no ground), in model space. Output:
//!
//! * **foot goals** ([`FootState`]): the ankle at its animated height above the ground (the
//!   height measured along the ground's normal, so the sole rests on a slope), the foot turned
//!   from the model's up to the ground's normal (clamped to [`GroundingSettings::max_tilt`]),
//!   the toes turned to the normal under them where the leg has a toe bone, and the ankle raised
//!   where the toe's ground is higher (a foot over a stair edge rests on its ball);
//! * **a pelvis offset** along up: lowered so the lowest foot reaches its ground, never raised
//!   past the animated pose unless [`GroundingSettings::raise_pelvis`], clamped to
//!   [`GroundingSettings::max_step_height`];
//! * **per-foot weights**: 1 when the animated foot is on its ground, fading to 0 as the
//!   animation lifts it by [`GroundingSettings::release_height`] (a swinging foot still follows
//!   the ground's height so it clears a stair, but does not tilt to it);
//! * **planting**: a foot whose weight reaches [`GroundingSettings::plant_weight`] is locked
//!   where it stands *in world space* (the stage's [`GroundingStage::model_to_world`]), so it does
//!   not slide while the character moves; it is released when the animation lifts it or the
//!   lock is [`GroundingSettings::release_distance`] away from the animated foot, and blends back
//!   to the animation smoothly.
//!
//! # Bounded motion
//!
//! Everything the stage adds moves continuously, with bounds that are settings, frame-rate
//! aware through [`GroundingStage::dt`]:
//!
//! * **The pelvis** follows the lowest foot through one critically damped spring *in the
//!   world* (along up, through [`GroundingStage::model_to_world`]: the ground under a planted
//!   foot stands still there while a character controller carries the model up a ramp, so the
//!   controller's own motion passes through unsmoothed and unlagged) whose acceleration is
//!   bounded ([`Spring::update_bounded`], [`GroundingSettings::max_accel`]): the pelvis'
//!   vertical acceleration in the world is at most `max_accel` on top of the animation's own
//!   as the controller carries it. "Never above the animation" and "every hip reaches its
//!   foot" are in the spring's target and applied again after it with a smooth minimum (C¹):
//!   the reach is a hard limit, so a planted foot always reaches.
//! * **A foot whose ground changes height under it** faster than
//!   [`GroundingSettings::max_speed`] (a stair nosing, an edge, a probe landing on the other
//!   side of a kerb) does not jump: the change goes into the foot's blend
//!   ([`FootState::blend`], at most [`GroundingSettings::max_step_height`]), which returns to
//!   0 with a bounded acceleration — `max_accel` out of a higher ground (faster while the foot
//!   is in the air), half of it down onto a lower one (the pelvis comes down with the lowest
//!   foot at its own bound). While it blends the foot is off its ground by the blend; a
//!   ground that moves slower than the speed limit (slopes, bumps, a planted foot) is followed
//!   exactly.
//! * **The foot's and toes' tilt** to the ground follows the ground's normal exactly, turning
//!   at most [`GroundingSettings::max_turn_speed`] (a crease, a landing foot).
//! * **Which sample supports a foot** (heel or toe; the higher ground holds the foot either
//!   way) changes with hysteresis ([`HYSTERESIS_LEGS`]), and a step of the ground's height is
//!   taken only once it has held for a second frame, so a foot over an edge whose probe
//!   flickers between the two sides keeps the side it stood on.
//! * **Planting**: a released foot blends back to the animation from the lock's velocity and
//!   plants again only once back, so a foot dragged to its release distance steps rather than
//!   skids.
//! * **Still**: smoothed values land exactly on still targets ([`SNAP_LEGS`]): a still input
//!   gives a bit-identical output within a few frames.
//!
//! Measured (`tests/grounding.rs`, the course in `tests/support/grounding.rs`: the 12 rig
//! conventions in 4 rest-axis styles and 3 characters from `assets/`, the rest pose sliding
//! and a procedural stepping clip, standing 4 s then carried at 0.5 m/s for 16 s at 60 Hz
//! across a 20° slope, ±8 cm sine ground, 18 cm stairs up and down and an 18 cm edge along and
//! across the walk): no joint turns more than 8.8° in a frame (before: 68.6° once per tread);
//! the pelvis accelerates at most 8.2 m/s² on stairs and edges (before: up to 421 m/s²) and
//! 7.5 m/s² on smooth ground where the controller alone gives 7.1–10.9 (before: 45.2);
//! planted feet within 1 mm of their ground outside a blend (0.0015 mm on the slope,
//! 0.16 mm on the sine ground), sliding ≤ 0.0023 mm a frame; blends ≤ 319 mm (two risers in
//! a row); a still input is still from the first frames.
//!
//! # Any number of legs
//!
//! A [`Leg`] is an upper (hip/thigh), lower (knee/shin) and foot (ankle) bone, with an optional
//! toe bone. A biped, a quadruped or a spider is a list of legs. The pelvis (the bone moved by
//! the offset) is the nearest common ancestor of the legs' upper bones unless given; "up" is
//! from the legs' rest ankles toward the pelvis unless given. Foot heights and the ground level
//! come from the rest pose (see [`GroundingSettings::ground_level`]); no bone axis is assumed.
//! The derived up is only as good as the rest pose is symmetric (a rig whose rest ankles are
//! not centred under the pelvis gets a leaning up): hosts that know their up (a Y-up engine)
//! should set [`GroundingSettings::up`].
//!
//! # One stage, two solvers
//!
//! [`GroundingStage`] moves the pelvis and solves every leg with the analytic
//! [`TwoBoneIk`] (closed form: the ankle lands on its goal exactly when reachable). Put it
//! *after* a full-body stage in the stack: it sees the full-body output as the animated pose and
//! corrects legs and pelvis. To drive a full-body or Jacobian solver's feet instead, run the
//! stage with weight 0 (or call [`GroundingStage::plan`]) and copy [`GroundingStage::output`]'s
//! goals into that solver's goals — the plain functions ([`foot_placement`],
//! [`pelvis_offset`], [`clamp_tilt`], [`Spring`]) are the same math without the stage.
//!
//! ```
//! use glam::{Quat, Vec3};
//! use ik_core::grounding::{FootGround, GroundHit, GroundingStage, Leg};
//! use ik_core::stack::{IkStack, Stage};
//! use ik_core::{Bone, BoneTransform, Skeleton};
//!
//! // A pelvis 0.9 above the floor with two legs (bones along -Y here; any axes work).
//! let t = BoneTransform::from_translation;
//! let skeleton = Skeleton::try_new(vec![
//!     Bone::new("pelvis", None, t(Vec3::Y * 0.9)),
//!     Bone::new("l_thigh", Some(0), t(Vec3::X * 0.1)),
//!     Bone::new("l_shin", Some(1), BoneTransform::from_translation_rotation(
//!         Vec3::NEG_Y * 0.42, Quat::from_rotation_x(0.05))),
//!     Bone::new("l_foot", Some(2), t(Vec3::NEG_Y * 0.4)),
//!     Bone::new("r_thigh", Some(0), t(Vec3::X * -0.1)),
//!     Bone::new("r_shin", Some(4), BoneTransform::from_translation_rotation(
//!         Vec3::NEG_Y * 0.42, Quat::from_rotation_x(0.05))),
//!     Bone::new("r_foot", Some(5), t(Vec3::NEG_Y * 0.4)),
//! ])?;
//! let legs = [Leg::new(1, 2, 3), Leg::new(4, 5, 6)];
//! let grounding = GroundingStage::try_new(&skeleton, &legs, None)?;
//! let mut stack = IkStack::new(skeleton);
//! let slot = stack.push(grounding)?;
//!
//! // Every frame: the ground under each foot (model space), the frame time, solve.
//! let stage = stack.slot_mut(slot).unwrap().stage.as_custom_mut::<GroundingStage>().unwrap();
//! stage.dt = 1.0 / 60.0;
//! stage.ground[0] = FootGround::flat(GroundHit::new(Vec3::new(0.1, -0.1, 0.0), Vec3::Y));
//! stage.ground[1] = FootGround::flat(GroundHit::new(Vec3::new(-0.1, 0.05, 0.0), Vec3::Y));
//! stack.solve();
//! // The left foot stepped down into a 10 cm hole: the pelvis went down with it.
//! let ankle = stack.model_transform(3).translation;
//! assert!((ankle.y - (-0.1 + 0.08)).abs() < 1e-3, "{ankle}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::analytic::{AnalyticError, LimbGoal, TwoBoneIk};
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport};

/// Errors building a [`GroundingStage`].
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum GroundingError {
    /// No legs were given.
    #[error("grounding needs at least one leg")]
    NoLegs,
    /// A leg's upper → lower → foot chain is not a valid two-bone limb.
    #[error("leg {leg}: {source}")]
    Leg {
        /// The leg's index.
        leg: usize,
        /// Why.
        source: AnalyticError,
    },
    /// A leg's toe bone does not descend from its foot (or is out of range).
    #[error("leg {0}: the toe bone does not descend from the foot bone")]
    ToeNotUnderFoot(usize),
    /// The pelvis is out of range, not an ancestor of every leg, or the legs share none.
    #[error("no pelvis: the bone moved with the ground must be a common ancestor of every leg")]
    NoPelvis,
    /// "Up" could not be derived from the rest pose (ankles at the pelvis' height) or the given
    /// one is zero or not finite.
    #[error("no up direction: give one in the settings")]
    NoUp,
    /// A setting is out of range or not finite.
    #[error("invalid grounding settings: {0}")]
    InvalidSettings(&'static str),
}

/// A leg: bone indices of the upper (hip), lower (knee) and foot (ankle) bones, and the toe
/// bone if the rig has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Leg {
    /// The thigh (hip joint).
    pub upper: usize,
    /// The shin (knee joint).
    pub lower: usize,
    /// The foot (ankle joint).
    pub foot: usize,
    /// The toes (ball joint), if any.
    pub toe: Option<usize>,
}

impl Leg {
    /// A leg without toes.
    #[must_use]
    pub const fn new(upper: usize, lower: usize, foot: usize) -> Self {
        Self {
            upper,
            lower,
            foot,
            toe: None,
        }
    }

    /// Sets the toe bone.
    #[must_use]
    pub const fn with_toe(mut self, toe: usize) -> Self {
        self.toe = Some(toe);
        self
    }
}

/// A point on the ground and the ground's normal there (model space; the normal need not be
/// unit length).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroundHit {
    /// A point on the ground.
    pub point: Vec3,
    /// The ground's normal (pointing out of the ground).
    pub normal: Vec3,
}

impl GroundHit {
    /// A hit at `point` with `normal`.
    #[must_use]
    pub const fn new(point: Vec3, normal: Vec3) -> Self {
        Self { point, normal }
    }
}

/// The ground under one foot: under the heel (or ankle) and under the toe (or ball), either
/// or both, or neither (no ground: the foot keeps its animation, weight 0).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FootGround {
    /// Under the heel / ankle.
    pub heel: Option<GroundHit>,
    /// Under the toe / ball.
    pub toe: Option<GroundHit>,
}

impl FootGround {
    /// No ground under the foot.
    pub const NONE: Self = Self {
        heel: None,
        toe: None,
    };

    /// One sample for the whole foot (under the ankle).
    #[must_use]
    pub const fn flat(hit: GroundHit) -> Self {
        Self {
            heel: Some(hit),
            toe: None,
        }
    }

    /// Whether there is any ground.
    #[must_use]
    pub const fn is_some(&self) -> bool {
        self.heel.is_some() || self.toe.is_some()
    }

    fn is_finite(&self) -> bool {
        [self.heel, self.toe]
            .iter()
            .flatten()
            .all(|h| h.point.is_finite() && h.normal.is_finite())
    }
}

/// Grounding settings. Lengths are in model units and speeds in model units per second:
/// [`GroundingSettings::for_leg_length`] scales the defaults to a rig.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroundingSettings {
    /// Model-space up. `None`: from the legs' rest ankles toward the pelvis.
    pub up: Option<Vec3>,
    /// Height along up of the ground the animation was made on (model space). `None`: 0 (the
    /// model origin stands on the floor, the glTF/Bevy convention) when the rest pose's lowest
    /// foot joint is at or within a quarter leg above it; else that joint's height.
    pub ground_level: Option<f32>,
    /// The most the pelvis moves from its animated height (a step taller than this leaves the
    /// lower foot short of its ground).
    pub max_step_height: f32,
    /// Whether the pelvis may rise above its animated height (e.g. for a crouch on a box).
    pub raise_pelvis: bool,
    /// The steepest ground a foot tilts to, radians from up.
    pub max_tilt: f32,
    /// Animated lift of a foot above its rest height at which its weight reaches 0.
    pub release_height: f32,
    /// Smoothing time, seconds (the critically damped spring's `2 / ω`); 0 disables smoothing.
    pub smooth_time: f32,
    /// Speed limit of the smoothed pelvis and feet, model units per second. A foot's ground
    /// whose height changes faster than this (a stair nosing, an edge) is blended across.
    pub max_speed: f32,
    /// Acceleration bound of the pelvis' and the feet's smoothing along up, model units per
    /// second²: the pelvis' vertical acceleration in the world is at most this on top of the
    /// animation's own as the character controller carries it.
    pub max_accel: f32,
    /// Turn-rate bound of the feet's and toes' alignment to the ground, radians per second
    /// (a joint turns at most this times the frame time in a frame for it).
    pub max_turn_speed: f32,
    /// Whether planted feet are locked in world space.
    pub lock_feet: bool,
    /// Weight at which a foot plants (locks); it is released below `plant_weight - 0.1`.
    pub plant_weight: f32,
    /// A lock further than this from the animated foot is released.
    pub release_distance: f32,
}

/// The support hysteresis of a foot, in leg lengths (2 mm on a 0.9 m leg): the toe sample
/// takes over holding the foot when its ground puts the ankle this much higher than the heel's,
/// and gives it back when this much lower.
pub const HYSTERESIS_LEGS: f32 = 0.002 / 0.9;

/// A smoothed height within this many leg lengths of its target (and as slow, per spring time
/// constant) lands on it exactly (50 µm on a 0.9 m leg): a still input gives a bit-identical
/// output within a few frames of the first, whose probes could not yet know the feet's tilt.
pub const SNAP_LEGS: f32 = 5e-5 / 0.9;

/// A released foot plants again when its blend back to the animation is within this fraction
/// of [`GroundingSettings::release_distance`].
const SETTLED: f32 = 0.01;

/// A foot's blend down onto a lower ground accelerates at most this fraction of
/// [`GroundingSettings::max_accel`] (the pelvis that comes down with it has the whole).
const DOWN_BLEND: f32 = 0.5;

/// A foot in the air (weight 0) blends up out of a higher ground with this many times the
/// acceleration of a standing one, on top (its weight fades it in): a swing over a stair
/// nosing catches up with the tread sooner. (Up only: the pelvis follows the lowest foot down.)
const AIR_BLEND: f32 = 10.0;

/// Default [`GroundingSettings::max_accel`] in leg lengths per second²: 6 m/s² for a 0.9 m
/// leg, about what a brisk walk's own vertical motion reaches, enough to follow 18 cm stairs
/// at a run.
pub const MAX_ACCEL_LEGS: f32 = 6.0 / 0.9;

/// Default [`GroundingSettings::max_turn_speed`], radians per second: 360°/s, 6° a frame at
/// 60 Hz.
pub const MAX_TURN_SPEED: f32 = core::f32::consts::TAU;

impl Default for GroundingSettings {
    /// The settings for a 0.9 m leg (a 1.75 m human) in metres.
    fn default() -> Self {
        Self::for_leg_length(0.9)
    }
}

impl GroundingSettings {
    /// Defaults scaled to a leg of `leg_length` model units (hip to ankle): a max step of 0.45
    /// leg, release height 0.12 leg, release distance 0.3 leg, max speed 3 legs/s, max
    /// acceleration [`MAX_ACCEL_LEGS`] legs/s², turn speed [`MAX_TURN_SPEED`]; 40° tilt,
    /// 0.12 s smoothing, locking on at weight 0.95.
    #[must_use]
    pub fn for_leg_length(leg_length: f32) -> Self {
        Self {
            up: None,
            ground_level: None,
            max_step_height: 0.45 * leg_length,
            raise_pelvis: false,
            max_tilt: 40f32.to_radians(),
            release_height: 0.12 * leg_length,
            smooth_time: 0.12,
            max_speed: 3.0 * leg_length,
            max_accel: MAX_ACCEL_LEGS * leg_length,
            max_turn_speed: MAX_TURN_SPEED,
            lock_feet: true,
            plant_weight: 0.95,
            release_distance: 0.3 * leg_length,
        }
    }

    /// Checks ranges.
    ///
    /// # Errors
    /// [`GroundingError::InvalidSettings`] naming the first bad value.
    pub fn validate(&self) -> Result<(), GroundingError> {
        let bad = GroundingError::InvalidSettings;
        let nonneg = |v: f32| v.is_finite() && v >= 0.0;
        if self.up.is_some_and(|u| !u.is_finite() || u.length() < 1e-6) {
            return Err(bad("up must be finite and non-zero"));
        }
        if self.ground_level.is_some_and(|g| !g.is_finite()) {
            return Err(bad("ground level must be finite"));
        }
        if !nonneg(self.max_step_height) {
            return Err(bad("max step height must be finite and >= 0"));
        }
        if !(self.max_tilt.is_finite()
            && (0.0..=core::f32::consts::FRAC_PI_2).contains(&self.max_tilt))
        {
            return Err(bad("max tilt must be in [0, π/2]"));
        }
        if !(self.release_height.is_finite() && self.release_height > 0.0) {
            return Err(bad("release height must be finite and > 0"));
        }
        if !nonneg(self.smooth_time) {
            return Err(bad("smooth time must be finite and >= 0"));
        }
        if !(self.max_speed.is_finite() && self.max_speed > 0.0) {
            return Err(bad("max speed must be finite and > 0"));
        }
        if !(self.max_accel.is_finite() && self.max_accel > 0.0) {
            return Err(bad("max accel must be finite and > 0"));
        }
        if !(self.max_turn_speed.is_finite() && self.max_turn_speed > 0.0) {
            return Err(bad("max turn speed must be finite and > 0"));
        }
        if !(self.plant_weight.is_finite() && (0.0..=1.0).contains(&self.plant_weight)) {
            return Err(bad("plant weight must be in [0, 1]"));
        }
        if !nonneg(self.release_distance) {
            return Err(bad("release distance must be finite and >= 0"));
        }
        Ok(())
    }
}

/// A critically damped spring on a value (`f32` or `Vec3`) with a speed limit: the closed-form
/// solution of `x'' = -ω²(x - target) - 2ω x'`, so the motion does not depend on the frame
/// time (for a target held over the frame); `ω = 2 / smooth_time`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Spring<T> {
    /// The value.
    pub value: T,
    /// Its velocity per second.
    pub velocity: T,
}

macro_rules! spring_impl {
    ($t:ty, $zero:expr, $len:expr) => {
        impl Spring<$t> {
            /// A spring at rest at `value`.
            #[must_use]
            pub fn at(value: $t) -> Self {
                Self {
                    value,
                    velocity: $zero,
                }
            }

            /// Advances by `dt` seconds toward `target`: critically damped with time constant
            /// `smooth_time` (0: jump), the step limited to `max_speed · dt`.
            pub fn update(&mut self, target: $t, smooth_time: f32, max_speed: f32, dt: f32) {
                if smooth_time <= 1e-6 {
                    *self = Self::at(target);
                    return;
                }
                let omega = 2.0 / smooth_time;
                let y = self.value - target;
                let j = self.velocity + y * omega;
                let e = (-omega * dt).exp();
                let mut value = target + (y + j * dt) * e;
                let mut velocity = (self.velocity - j * (omega * dt)) * e;
                let step = value - self.value;
                let len = $len(step);
                let limit = max_speed * dt;
                if len > limit {
                    value = self.value + step * (limit / len);
                    let speed = $len(velocity);
                    if speed > max_speed {
                        velocity *= max_speed / speed;
                    }
                }
                self.value = value;
                self.velocity = velocity;
            }

            /// Advances by `dt` seconds toward `target` with a bounded acceleration: in
            /// sub-steps, the closed-form critically damped spring's velocity change is
            /// clamped to `max_accel` per second and its speed to `max_speed`, and the value
            /// moves by the mean of the sub-step's velocities. So, for frames of equal length,
            /// the value's second difference over a frame is at most `max_accel · dt²` (but for
            /// the landing below, which moves it by at most `snap`) — the
            /// motion's acceleration is bounded by construction, whatever the target does (a
            /// target that jumps is followed at that acceleration) — while a target that
            /// holds still or moves slowly is followed as by [`Spring::update`]. Within `snap`
            /// of the target and slower than `snap` per spring time constant it lands on the
            /// target exactly (a still input gives a still output). `smooth_time` 0: jump.
            pub fn update_bounded(
                &mut self,
                target: $t,
                smooth_time: f32,
                max_speed: f32,
                max_accel: f32,
                snap: f32,
                dt: f32,
            ) {
                if smooth_time <= 1e-6 {
                    *self = Self::at(target);
                    return;
                }
                let omega = 2.0 / smooth_time;
                let n = ((omega * dt / MAX_SUBSTEP_OMEGA_H).ceil() as u32).clamp(1, MAX_SUBSTEPS);
                let h = dt / n as f32;
                let e = (-omega * h).exp();
                let limit = |v: $t, max: f32| {
                    let len = $len(v);
                    if len > max { v * (max / len) } else { v }
                };
                for _ in 0..n {
                    let y = self.value - target;
                    let j = self.velocity + y * omega;
                    let free = (self.velocity - j * (omega * h)) * e;
                    let v = limit(
                        self.velocity + limit(free - self.velocity, max_accel * h),
                        max_speed,
                    );
                    self.value += (self.velocity + v) * (0.5 * h);
                    self.velocity = v;
                }
                if $len(self.value - target) <= snap && $len(self.velocity) <= snap * omega {
                    *self = Self::at(target);
                }
            }
        }
    };
}

/// The largest `ω · h` of one sub-step of [`Spring::update_bounded`]: the sub-steps are short
/// enough that the trapezoidal position update follows the closed-form velocity closely.
const MAX_SUBSTEP_OMEGA_H: f32 = 0.5;
/// The most sub-steps of one [`Spring::update_bounded`] (a longer frame takes longer ones).
const MAX_SUBSTEPS: u32 = 32;

spring_impl!(f32, 0.0, f32::abs);
spring_impl!(Vec3, Vec3::ZERO, Vec3::length);

/// Turns unit vector `from` toward unit vector `to` by at most `max_angle` radians (along the
/// great circle); `to` itself when it is that close.
fn turn_toward(from: Vec3, to: Vec3, max_angle: f32) -> Vec3 {
    let angle = from.angle_between(to);
    if angle <= max_angle || !angle.is_finite() {
        return to;
    }
    let axis = from.cross(to);
    if axis.length_squared() < 1e-12 {
        return to;
    }
    Quat::from_axis_angle(axis.normalize(), max_angle) * from
}

/// `normal` (normalised) turned toward `up` (unit) so it is at most `max_tilt` radians from it.
/// A zero normal, or one pointing straight down, gives `up`.
#[must_use]
pub fn clamp_tilt(normal: Vec3, up: Vec3, max_tilt: f32) -> Vec3 {
    let n = normal.normalize_or_zero();
    if n == Vec3::ZERO {
        return up;
    }
    let cos = n.dot(up);
    if cos >= max_tilt.cos() {
        return n;
    }
    let axis = up.cross(n);
    if axis.length_squared() < 1e-12 {
        return up;
    }
    Quat::from_axis_angle(axis.normalize(), max_tilt) * up
}

/// Where one foot goes: the ankle's offset along `up` and the foot's ground normal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FootPlacement {
    /// How far the ankle moves along up from its animated position.
    pub offset: f32,
    /// Which sample holds the foot: `false` the heel/ankle's, `true` the toe's (a ball over a
    /// higher ground).
    pub on_toe: bool,
}

/// The animated foot: ankle and ball (toe joint) positions and the heights (along up, above
/// the animation's ground) at which they rest on the ground.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnimatedFoot {
    /// The ankle, model space.
    pub ankle: Vec3,
    /// The ball (toe joint), model space; the ankle when the leg has no toe.
    pub ball: Vec3,
    /// Ankle height above the ground it stands on (along the ground's normal).
    pub ankle_height: f32,
    /// Ball height above the ground it stands on.
    pub ball_height: f32,
}

/// Places one foot on its ground (the plain function behind [`GroundingStage`]).
///
/// The ankle keeps its position across `up` and moves along `up` until it is `ankle_height`
/// from the heel sample's plane (measured along that plane's normal `heel_normal`, already
/// clamped) and the ball, turned with the foot by `tilt` about the ankle, is at least
/// `ball_height` from the toe sample's plane. `ground_level` is the animation's ground
/// height along up. Returns `None` if `up` is (nearly) parallel to a plane.
#[must_use]
pub fn foot_placement(
    foot: &AnimatedFoot,
    up: Vec3,
    ground_level: f32,
    heel: GroundHit,
    toe: GroundHit,
    tilt: Quat,
) -> Option<FootPlacement> {
    let (y_heel, y_toe, animated_y) = support(foot, up, ground_level, heel, toe, tilt)?;
    let on_toe = y_toe > y_heel;
    Some(FootPlacement {
        offset: y_heel.max(y_toe) - animated_y,
        on_toe,
    })
}

/// The pelvis offset along up for feet that must move by `foot_offsets` (the grounded ones):
/// the lowest, not above 0 unless `raise`, clamped to `±max_step`. 0 without feet.
#[must_use]
pub fn pelvis_offset(
    foot_offsets: impl IntoIterator<Item = f32>,
    raise: bool,
    max_step: f32,
) -> f32 {
    let lowest = foot_offsets.into_iter().fold(f32::INFINITY, f32::min);
    if !lowest.is_finite() {
        return 0.0;
    }
    let o = if raise { lowest } else { lowest.min(0.0) };
    o.clamp(-max_step, max_step)
}

/// One foot's result of the last solve (model space unless said).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FootState {
    /// The ankle goal handed to the leg solver.
    pub goal: Vec3,
    /// The foot's goal model rotation.
    pub rotation: Quat,
    /// The grounding weight (1 on the ground, 0 lifted by the release height or no ground).
    pub weight: f32,
    /// Whether the foot is planted (locked in world space).
    pub planted: bool,
    /// Whether ground was found under the foot.
    pub grounded: bool,
    /// The smoothed offset of the ankle along up from its animated position.
    pub offset: f32,
    /// The ground normal the foot is turned to (smoothed, clamped).
    pub normal: Vec3,
    /// Whether the foot rests on its toe sample (a higher ground under the ball).
    pub on_toe: bool,
    /// What is left of the foot's blend across a change of its ground's height (a stair
    /// nosing, an edge), model units along up: the ankle is this far from where its ground
    /// puts it (0 once blended).
    pub blend: f32,
}

impl Default for FootState {
    fn default() -> Self {
        Self {
            goal: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            weight: 0.0,
            planted: false,
            grounded: false,
            offset: 0.0,
            normal: Vec3::Y,
            on_toe: false,
            blend: 0.0,
        }
    }
}

/// What a [`GroundingStage`] decided in its last solve.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct GroundingOutput {
    /// Per leg.
    pub feet: Vec<FootState>,
    /// The pelvis offset (model space, along up) applied.
    pub pelvis_offset: Vec3,
    /// The pelvis offset along up the grounded feet ask for (before smoothing; model units).
    pub pelvis_ground: f32,
    /// The highest pelvis offset along up at which every grounded hip reaches its ankle goal
    /// (model units; infinite without ground).
    pub pelvis_reach: f32,
}

#[derive(Clone, Debug, PartialEq)]
struct LegRt {
    leg: Leg,
    ik: TwoBoneIk,
    /// Rest heights above the ground level: ankle, ball.
    rest_ankle: f32,
    rest_ball: f32,
    /// How far the hip reaches (a hair under the rest leg length).
    reach: f32,
    /// The ankle offset's target of the last frame, as a height along up in the world (model
    /// units): where the ground puts the foot (the model origin's height added).
    ground: f32,
    /// The blend across a change of that height faster than the speed limit (a stair nosing,
    /// an edge): the jump is taken into the blend, which then goes to 0 with a bounded
    /// acceleration, so the foot's height stays continuous.
    blend: Spring<f32>,
    /// A step of the ground's height seen last frame and not taken yet (taken when it holds
    /// for a second frame).
    pending: Option<f32>,
    /// Which sample supports the foot (the toe's when its ground is higher), with hysteresis.
    on_toe: bool,
    /// The ground normal the foot is turned to (turn rate bounded).
    normal: Vec3,
    /// The ground normal the toes are turned to (the same).
    toe_normal: Vec3,
    /// Horizontal offset of the ankle from the animation (lock, and its blend back).
    slide: Spring<Vec3>,
    /// The locked ankle position in world space (its horizontal part is used).
    lock: Option<Vec3>,
}

impl LegRt {
    /// This frame's lock and horizontal slide: a planted foot keeps its world position across
    /// up; a released one blends back to the animation.
    #[allow(clippy::too_many_arguments, reason = "one internal step, called twice")]
    fn next_slide(
        &self,
        ankle: Vec3,
        weight: f32,
        s: &GroundingSettings,
        up: Vec3,
        world: &BoneTransform,
        dt: f32,
        fresh: bool,
        snap: f32,
    ) -> (Option<Vec3>, Spring<Vec3>) {
        // A released foot plants again once it has blended back to the animation (a foot
        // dragged to its release distance does not re-plant at once, a step short of it).
        let settled = self.slide.value.length() <= SETTLED * s.release_distance;
        let planted = s.lock_feet
            && if self.lock.is_some() {
                weight >= s.plant_weight - 0.1
            } else {
                weight >= s.plant_weight && (settled || fresh)
            };
        if planted {
            let lock = self
                .lock
                .unwrap_or_else(|| world.transform_point(ankle + self.slide.value));
            let d = world.inverse().transform_point(lock) - ankle;
            let d = d - up * d.dot(up);
            if d.length() <= s.release_distance {
                return (Some(lock), Spring::<Vec3>::at(d));
            }
        }
        let mut slide = self.slide;
        if fresh {
            slide = Spring::<Vec3>::at(Vec3::ZERO);
        } else {
            if let Some(lock) = self.lock
                && dt > 0.0
            {
                // Released this frame: the blend back starts at the lock's velocity relative
                // to the animation (a planted foot stands still in the world), so the foot's
                // motion stays continuous.
                let d = world.inverse().transform_point(lock) - ankle;
                let v = (d - up * d.dot(up) - slide.value) / dt;
                // Only a lock drifting at walking pace (one the bounded blend stops within
                // half the release distance); a pose that jumped is blended from rest.
                let carry = (s.max_accel * s.release_distance).sqrt();
                slide.velocity = if v.length() <= carry { v } else { Vec3::ZERO };
            }
            slide.update_bounded(
                Vec3::ZERO,
                s.smooth_time,
                s.max_speed,
                s.max_accel,
                snap,
                dt,
            );
        }
        (None, slide)
    }
}

/// The grounding stage: see the [module docs](self). Per-frame inputs are its public fields;
/// [`GroundingStage::output`] is what it decided.
#[derive(Clone, Debug)]
pub struct GroundingStage {
    /// The ground under each leg's foot this frame (model space), parallel to the legs.
    pub ground: Vec<FootGround>,
    /// Seconds since the last solve (clamped to `[0, 0.25]`).
    pub dt: f32,
    /// The character's model space in the world, for locking planted feet in the world.
    /// Identity (the default) locks them in model space.
    pub model_to_world: BoneTransform,
    settings: GroundingSettings,
    up: Vec3,
    ground_level: f32,
    pelvis: usize,
    pelvis_parent: Option<usize>,
    legs: Vec<LegRt>,
    /// The pelvis' world height (model units), its acceleration bounded.
    pelvis_spring: Spring<f32>,
    /// Blend width of the pelvis' smooth minimums (5 % of the leg).
    blend: f32,
    /// Which sample supports a foot changes only when the other's height is this much higher
    /// ([`HYSTERESIS_LEGS`] of the leg).
    hysteresis: f32,
    /// A smoothed height this close to its target, this slow, lands on it ([`SNAP_LEGS`]).
    snap: f32,
    fresh: bool,
    bones: Vec<usize>,
    output: GroundingOutput,
}

impl GroundingStage {
    /// A stage for `legs` on `skeleton`; `pelvis`: the bone moved with the ground (`None`: the
    /// legs' nearest common ancestor). Settings are
    /// [`GroundingSettings::for_leg_length`] of the mean rest leg length.
    ///
    /// # Errors
    /// [`GroundingError`] when the legs or pelvis are malformed or no up can be derived.
    pub fn try_new(
        skeleton: &Skeleton,
        legs: &[Leg],
        pelvis: Option<usize>,
    ) -> Result<Self, GroundingError> {
        let mut lengths = 0.0;
        for (i, leg) in legs.iter().enumerate() {
            let ik = TwoBoneIk::try_new(skeleton, leg.upper, leg.lower, leg.foot)
                .map_err(|source| GroundingError::Leg { leg: i, source })?;
            lengths += ik.rest_lengths().iter().sum::<f32>();
        }
        let leg_length = lengths / legs.len().max(1) as f32;
        Self::try_with_settings(
            skeleton,
            legs,
            pelvis,
            GroundingSettings::for_leg_length(leg_length),
        )
    }

    /// As [`GroundingStage::try_new`] with `settings`.
    ///
    /// # Errors
    /// As [`GroundingStage::try_new`], and [`GroundingError::InvalidSettings`].
    pub fn try_with_settings(
        skeleton: &Skeleton,
        legs: &[Leg],
        pelvis: Option<usize>,
        settings: GroundingSettings,
    ) -> Result<Self, GroundingError> {
        settings.validate()?;
        if legs.is_empty() {
            return Err(GroundingError::NoLegs);
        }
        let mut iks = Vec::with_capacity(legs.len());
        for (i, leg) in legs.iter().enumerate() {
            let ik = TwoBoneIk::try_new(skeleton, leg.upper, leg.lower, leg.foot)
                .map_err(|source| GroundingError::Leg { leg: i, source })?;
            if let Some(t) = leg.toe
                && (t >= skeleton.len()
                    || t == leg.foot
                    || !skeleton.is_ancestor_or_self(leg.foot, t))
            {
                return Err(GroundingError::ToeNotUnderFoot(i));
            }
            iks.push(ik);
        }
        let pelvis = match pelvis {
            Some(p) => {
                let ok = p < skeleton.len()
                    && legs
                        .iter()
                        .all(|l| l.upper != p && skeleton.is_ancestor_or_self(p, l.upper));
                if !ok {
                    return Err(GroundingError::NoPelvis);
                }
                p
            }
            None => {
                let first = skeleton
                    .parent(legs[0].upper)
                    .ok_or(GroundingError::NoPelvis)?;
                skeleton
                    .ancestors_inclusive(first)
                    .find(|&a| {
                        legs.iter()
                            .all(|l| l.upper != a && skeleton.is_ancestor_or_self(a, l.upper))
                    })
                    .ok_or(GroundingError::NoPelvis)?
            }
        };
        let rest = skeleton.rest_model_transforms();
        let up = match settings.up {
            Some(u) => u.normalize(),
            None => {
                let mean =
                    legs.iter().map(|l| rest[l.foot].translation).sum::<Vec3>() / legs.len() as f32;
                let mut u = rest[pelvis].translation - mean;
                // Prefer the rest legs' mean hip → ankle direction when the pelvis sits
                // level with the feet (a spider's body): reversed, it is up.
                if u.length() < 1e-6 {
                    u = legs
                        .iter()
                        .map(|l| rest[l.upper].translation - rest[l.foot].translation)
                        .sum::<Vec3>();
                }
                u.try_normalize().ok_or(GroundingError::NoUp)?
            }
        };
        let leg_length = iks
            .iter()
            .map(|ik| ik.rest_lengths().iter().sum::<f32>())
            .sum::<f32>()
            / iks.len() as f32;
        let lowest = legs
            .iter()
            .map(|l| {
                let a = rest[l.foot].translation.dot(up);
                l.toe.map_or(a, |t| a.min(rest[t].translation.dot(up)))
            })
            .fold(f32::INFINITY, f32::min);
        let ground_level = settings.ground_level.unwrap_or(
            if (-1e-4 * leg_length..=0.25 * leg_length).contains(&lowest) {
                0.0
            } else {
                lowest
            },
        );
        let legs_rt: Vec<LegRt> = legs
            .iter()
            .zip(iks)
            .map(|(&leg, ik)| {
                let ankle = rest[leg.foot].translation.dot(up) - ground_level;
                let ball = leg
                    .toe
                    .map_or(ankle, |t| rest[t].translation.dot(up) - ground_level);
                let reach = ik.rest_lengths().iter().sum::<f32>() * 0.9995;
                LegRt {
                    leg,
                    ik,
                    rest_ankle: ankle.max(0.0),
                    rest_ball: ball.max(0.0),
                    reach,
                    ground: 0.0,
                    blend: Spring::default(),
                    pending: None,
                    on_toe: false,
                    normal: up,
                    toe_normal: up,
                    slide: Spring::default(),
                    lock: None,
                }
            })
            .collect();
        let mut bones: Vec<usize> = legs
            .iter()
            .flat_map(|l| [l.upper, l.lower, l.foot].into_iter().chain(l.toe))
            .chain([pelvis])
            .collect();
        bones.sort_unstable();
        bones.dedup();
        Ok(Self {
            ground: vec![FootGround::NONE; legs.len()],
            dt: 1.0 / 60.0,
            model_to_world: BoneTransform::IDENTITY,
            settings,
            up,
            ground_level,
            pelvis,
            pelvis_parent: skeleton.parent(pelvis),
            output: GroundingOutput {
                feet: vec![FootState::default(); legs.len()],
                pelvis_offset: Vec3::ZERO,
                pelvis_ground: 0.0,
                pelvis_reach: f32::INFINITY,
            },
            legs: legs_rt,
            pelvis_spring: Spring::default(),
            blend: 0.05 * leg_length,
            hysteresis: HYSTERESIS_LEGS * leg_length,
            snap: SNAP_LEGS * leg_length,
            fresh: true,
            bones,
        })
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &GroundingSettings {
        &self.settings
    }

    /// Changes the settings (`up` and `ground_level` are fixed at set-up and ignored here).
    ///
    /// # Errors
    /// [`GroundingError::InvalidSettings`]; the settings are unchanged then.
    pub fn set_settings(&mut self, settings: GroundingSettings) -> Result<(), GroundingError> {
        settings.validate()?;
        self.settings = GroundingSettings {
            up: self.settings.up,
            ground_level: self.settings.ground_level,
            ..settings
        };
        Ok(())
    }

    /// The legs' mean rest length (hip to ankle), model units.
    #[must_use]
    pub fn leg_length(&self) -> f32 {
        self.legs
            .iter()
            .map(|l| l.ik.rest_lengths().iter().sum::<f32>())
            .sum::<f32>()
            / self.legs.len() as f32
    }

    /// Model-space up.
    #[must_use]
    pub fn up(&self) -> Vec3 {
        self.up
    }

    /// The animation's ground height along up (model space).
    #[must_use]
    pub fn ground_level(&self) -> f32 {
        self.ground_level
    }

    /// The pelvis bone.
    #[must_use]
    pub fn pelvis(&self) -> usize {
        self.pelvis
    }

    /// The legs.
    pub fn legs(&self) -> impl ExactSizeIterator<Item = &Leg> + '_ {
        self.legs.iter().map(|l| &l.leg)
    }

    /// Rest heights of leg `leg`'s ankle and ball above the ground level (what the sole keeps
    /// from the ground), or `None` for a bad index.
    #[must_use]
    pub fn rest_heights(&self, leg: usize) -> Option<(f32, f32)> {
        self.legs.get(leg).map(|l| (l.rest_ankle, l.rest_ball))
    }

    /// The last solve's decisions.
    #[must_use]
    pub fn output(&self) -> &GroundingOutput {
        &self.output
    }

    /// Forgets the smoothing and the locks: the next solve starts from its targets (after a
    /// teleport).
    pub fn reset(&mut self) {
        self.fresh = true;
        for l in &mut self.legs {
            l.lock = None;
        }
    }

    /// Where to look for the ground under each leg this frame, model space: `(ankle, ball)` of
    /// the animated pose in `buffer` moved across up to where the stage will put them (a
    /// planted foot's lock, a released foot's blend back). Cast down along up through these
    /// points and hand the hits to [`GroundingStage::ground`] (the ball is the ankle for a leg
    /// without toes). Set [`GroundingStage::dt`] and [`GroundingStage::model_to_world`] first.
    /// Allocation-free: `out` is cleared and refilled.
    pub fn probe_points(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        out: &mut Vec<(Vec3, Vec3)>,
    ) {
        out.clear();
        for l in &self.legs {
            let ankle = buffer.model_transform(skeleton, l.leg.foot).translation;
            let ball = l
                .leg
                .toe
                .map_or(ankle, |t| buffer.model_transform(skeleton, t).translation);
            let lift = ankle.dot(self.up) - self.ground_level - l.rest_ankle;
            let weight = 1.0 - smoothstep(lift / self.settings.release_height);
            let dt = self.dt.clamp(0.0, 0.25);
            let (_, slide) = l.next_slide(
                ankle,
                weight,
                &self.settings,
                self.up,
                &self.model_to_world,
                dt,
                self.fresh,
                self.snap,
            );
            let shift = slide.value;
            let tilt = Quat::from_rotation_arc(self.up, l.normal);
            out.push((ankle + shift, ankle + shift + tilt * (ball - ankle)));
        }
    }

    /// Computes this frame's goals and pelvis offset ([`GroundingStage::output`]) from the
    /// pose in `buffer` and advances the smoothing, without writing the pose. (What
    /// [`Stage::solve`] does before solving the legs.)
    ///
    /// # Errors
    /// [`StackError::InputCountMismatch`] when the ground samples do not match the legs,
    /// [`StackError::NonFinite`] when they, `dt` or the model frame are not finite.
    pub fn plan(&mut self, skeleton: &Skeleton, buffer: &mut PoseBuffer) -> Result<(), StackError> {
        if self.ground.len() != self.legs.len() {
            return Err(StackError::InputCountMismatch {
                expected: self.legs.len(),
                found: self.ground.len(),
            });
        }
        if !self.ground.iter().all(FootGround::is_finite) {
            return Err(StackError::NonFinite(NonFinite::Goal));
        }
        if !self.dt.is_finite() || !self.model_to_world.is_finite() {
            return Err(StackError::NonFinite(if self.dt.is_finite() {
                NonFinite::ModelFrame
            } else {
                NonFinite::TimeStep
            }));
        }
        let dt = self.dt.clamp(0.0, 0.25);
        let fresh = core::mem::take(&mut self.fresh);
        let s = self.settings;
        let up = self.up;
        let world = self.model_to_world;
        let to_model = world.inverse();
        let snap = self.snap;
        // The model origin's height along up in the world (model units): smoothing happens
        // in the world, where the ground under a planted foot stands still while the
        // character controller carries the model up a ramp or a stair.
        let r = -to_model.transform_point(Vec3::ZERO).dot(up);
        // A ground height that changes faster than the speed limit is a step (a stair
        // nosing, an edge): blended across instead of followed.
        let jump = s.max_speed * dt;
        let max_turn = s.max_turn_speed * dt;
        let mut lowest = f32::INFINITY;
        let mut reach_min = f32::INFINITY;
        for (i, l) in self.legs.iter_mut().enumerate() {
            let foot = buffer.model_transform(skeleton, l.leg.foot);
            let ankle = foot.translation;
            let ball = l
                .leg
                .toe
                .map_or(ankle, |t| buffer.model_transform(skeleton, t).translation);
            let ground = self.ground[i];
            let lift = ankle.dot(up) - self.ground_level - l.rest_ankle;
            let state = &mut self.output.feet[i];
            let found = ground.heel.or(ground.toe).zip(ground.toe.or(ground.heel));
            let weight = if found.is_some() {
                1.0 - smoothstep(lift / s.release_height)
            } else {
                0.0
            };
            // Tilt toward the ground's normal with the weight (a foot in the air stays as
            // animated), smoothed, at a bounded turn rate; the toes likewise to the ground
            // under them.
            let (heel_n, toe_n) = found.map_or((up, up), |(h, t)| {
                (
                    clamp_tilt(h.normal, up, s.max_tilt),
                    clamp_tilt(t.normal, up, s.max_tilt),
                )
            });
            let lean = |n: Vec3| up.lerp(n, weight).normalize_or(up);
            turn(&mut l.normal, lean(heel_n), max_turn, fresh);
            turn(&mut l.toe_normal, lean(toe_n), max_turn, fresh);
            let n = l.normal;
            let tilt = Quat::from_rotation_arc(up, n);
            (l.lock, l.slide) = l.next_slide(ankle, weight, &s, up, &world, dt, fresh, snap);
            let (target, on_toe) = match found {
                Some((heel, toe)) => {
                    let heel = GroundHit::new(heel.point, heel_n);
                    let toe = GroundHit::new(toe.point, toe_n);
                    let animated = AnimatedFoot {
                        ankle: ankle + l.slide.value,
                        ball: ball + l.slide.value,
                        ankle_height: (ankle.dot(up) - self.ground_level).max(l.rest_ankle),
                        ball_height: (ball.dot(up) - self.ground_level).max(l.rest_ball),
                    };
                    match support(&animated, up, self.ground_level, heel, toe, tilt) {
                        Some((y_heel, y_toe, animated_y)) => {
                            // The supporting sample, with hysteresis (a foot over an edge does
                            // not flip between its sides); the height is the higher one's
                            // either way, so the choice never moves the foot.
                            let band = self.hysteresis;
                            let on_toe = if l.on_toe {
                                y_toe > y_heel - band
                            } else {
                                y_toe > y_heel + band
                            };
                            (r + y_heel.max(y_toe) - animated_y, on_toe)
                        }
                        None => (r, false),
                    }
                }
                // No ground: back to the animation.
                None => (r, false),
            };
            l.on_toe = on_toe;
            // The foot's height in the world: where its ground puts it, plus what is left of
            // the blends across steps of that ground.
            let target = if fresh {
                l.blend = Spring::<f32>::at(0.0);
                l.pending = None;
                target
            } else {
                let change = target - l.ground;
                let target = if change.abs() <= jump {
                    l.pending = None;
                    target
                } else if l.pending.is_some_and(|p| (target - p).abs() <= jump) {
                    // A step that held for a second frame: taken, blended across.
                    l.pending = None;
                    l.blend.value =
                        (l.blend.value - change).clamp(-s.max_step_height, s.max_step_height);
                    target
                } else {
                    // A new step: the foot keeps its support for a frame, so a probe that
                    // flickers across an edge does not move it.
                    l.pending = Some(target);
                    l.ground
                };
                // Out of the ground (a step up under the foot) at the full acceleration bound,
                // faster in the air (a swing that crosses a nosing late lands on the tread);
                // down onto a lower ground at half of it, so the pelvis, which must come down
                // with the lowest foot, follows at its own bound.
                let accel = if l.blend.value < 0.0 {
                    s.max_accel * (1.0 + AIR_BLEND * (1.0 - weight))
                } else {
                    DOWN_BLEND * s.max_accel
                };
                l.blend
                    .update_bounded(0.0, s.smooth_time, s.max_speed, accel, snap, dt);
                target
            };
            l.ground = target;
            let offset = target + l.blend.value - r;
            let goal = ankle + l.slide.value + up * offset;
            if found.is_some() {
                // The pelvis must come down at least so far that the hip reaches the goal.
                let d = goal - buffer.model_transform(skeleton, l.leg.upper).translation;
                let d_up = d.dot(up);
                let across = (d.length_squared() - d_up * d_up).max(0.0);
                let reach = d_up + (l.reach * l.reach - across).max(0.0).sqrt();
                lowest = lowest.min(offset);
                reach_min = reach_min.min(reach);
            }
            *state = FootState {
                goal,
                rotation: tilt * foot.rotation,
                weight,
                planted: l.lock.is_some(),
                grounded: found.is_some(),
                offset,
                normal: n,
                on_toe,
                blend: l.blend.value,
            };
        }
        // The pelvis follows the lowest foot, never above the animation unless allowed and
        // never so high that a hip cannot reach its foot: one spring in the world (where the
        // ground under planted feet stands still, so the controller's own motion passes
        // through), its acceleration bounded by `max_accel`. "Not above the animation" and
        // the planted feet's reach are then applied exactly with a smooth minimum (C¹): the
        // reach of a planted foot is a hard limit, so it always reaches; a foot in the air or
        // landing is reached as the spring gets there.
        let mut target = if lowest.is_finite() { lowest } else { 0.0 };
        if !s.raise_pelvis {
            target = target.min(0.0);
        }
        target = target.min(reach_min);
        let target = target.clamp(-s.max_step_height, s.max_step_height);
        if fresh {
            self.pelvis_spring = Spring::<f32>::at(r + target);
        } else {
            self.pelvis_spring.update_bounded(
                r + target,
                s.smooth_time,
                s.max_speed,
                s.max_accel,
                snap,
                dt,
            );
        }
        let mut offset = self.pelvis_spring.value - r;
        if !s.raise_pelvis {
            offset = smooth_min(offset, 0.0, self.blend);
        }
        if reach_min.is_finite() {
            offset = smooth_min(offset, reach_min, self.blend);
        }
        let offset = offset.clamp(-s.max_step_height, s.max_step_height);
        self.output.pelvis_offset = up * offset;
        self.output.pelvis_ground = if lowest.is_finite() { lowest } else { 0.0 };
        self.output.pelvis_reach = reach_min;
        Ok(())
    }
}

/// The ankle's heights along up (above the animation's ground) at which it rests on the heel
/// sample and at which the ball rests on the toe sample, and its animated height: see
/// [`foot_placement`].
fn support(
    foot: &AnimatedFoot,
    up: Vec3,
    ground_level: f32,
    heel: GroundHit,
    toe: GroundHit,
    tilt: Quat,
) -> Option<(f32, f32, f32)> {
    let animated_y = foot.ankle.dot(up) - ground_level;
    let base = foot.ankle - up * animated_y; // the ankle on the animation's ground
    let (nh, nt) = (heel.normal, toe.normal);
    let (ch, ct) = (up.dot(nh), up.dot(nt));
    if ch < 1e-3 || ct < 1e-3 {
        return None;
    }
    let y_heel = (foot.ankle_height - (base - heel.point).dot(nh)) / ch;
    let ball = tilt * (foot.ball - foot.ankle);
    let y_toe = (foot.ball_height - (base + ball - toe.point).dot(nt)) / ct;
    Some((y_heel, y_toe, animated_y))
}

/// Turns a unit normal toward `target` by at most `max_turn` radians (a ground whose normal
/// turns slower than that under the foot is followed exactly; a crease or a foot landing is
/// turned across at that rate).
fn turn(normal: &mut Vec3, target: Vec3, max_turn: f32, fresh: bool) {
    *normal = if fresh {
        target
    } else {
        turn_toward(*normal, target, max_turn)
    };
}

/// The polynomial smooth minimum of `a` and `b` over a blend width `k` (equal to `min` when
/// they are `k` or more apart, at most `k / 4` below it, continuous first derivative).
fn smooth_min(a: f32, b: f32, k: f32) -> f32 {
    if k <= 0.0 {
        return a.min(b);
    }
    let h = (k - (a - b).abs()).max(0.0) / k;
    a.min(b) - h * h * k * 0.25
}

/// `3x² - 2x³` of `x` clamped to `[0, 1]`.
fn smoothstep(x: f32) -> f32 {
    let x = x.clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

impl Stage for GroundingStage {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        self.plan(skeleton, buffer)?;
        // The pelvis: its model translation moves by the offset.
        let offset = self.output.pelvis_offset;
        if offset != Vec3::ZERO {
            let parent = buffer.model_transform_or_identity(skeleton, self.pelvis_parent);
            let local = parent.rotation.inverse() * offset / parent.scale;
            let pose = buffer.pose();
            let (r, t) = (pose.rotations[self.pelvis], pose.translations[self.pelvis]);
            buffer.set_local(self.pelvis, r, t + local);
        }
        let mut residual = 0.0f32;
        let mut angle = 0.0f32;
        let mut reachable = true;
        for ((l, state), ground) in self.legs.iter().zip(&self.output.feet).zip(&self.ground) {
            let parent = buffer.model_transform_or_identity(skeleton, skeleton.parent(l.leg.upper));
            let goal = LimbGoal::new(state.goal).with_orientation(state.rotation);
            let report =
                l.ik.solve_with_parent(skeleton, buffer.pose_unchecked_mut(), &goal, &parent);
            buffer.invalidate_from(l.leg.upper);
            let report = report?;
            reachable &= report.reachable;
            // Toes: turned to the ground under them (smoothed, turn rate bounded).
            if let Some(t) = l.leg.toe
                && ground.is_some()
            {
                let extra = Quat::from_rotation_arc(state.normal, l.toe_normal);
                if (1.0 - extra.w.abs()) > 1e-9 {
                    let toe_model = buffer.model_transform(skeleton, t).rotation;
                    let parent = skeleton.parent(t).map_or(Quat::IDENTITY, |p| {
                        buffer.model_transform(skeleton, p).rotation
                    });
                    let local = (parent.inverse() * extra * toe_model).normalize();
                    let tr = buffer.pose().translations[t];
                    buffer.set_local(t, local, tr);
                }
            }
            let out = buffer.model_transform(skeleton, l.leg.foot);
            residual = residual.max(out.translation.distance(state.goal));
            angle = angle.max(out.rotation.angle_between(state.rotation));
        }
        let scale = self
            .legs
            .iter()
            .map(|l| l.ik.rest_lengths()[0])
            .fold(0.0, f32::max);
        Ok(CustomReport {
            converged: reachable && residual <= 1e-4 * scale.max(1.0),
            iterations: 1,
            position_residual: residual,
            angle_residual: angle,
        }
        .into())
    }
}
