//! A VR body from three trackers: a head-mounted display and two controllers (optionally a
//! pelvis and two foot trackers) drive a whole humanoid avatar that leans, crouches, reaches
//! and steps — the job of Final IK's VRIK, on this crate's [`FullBodySolver`].
//!
//! [`VrBody`] is a [`Stage`](crate::stack::Stage) of an [`IkStack`](crate::stack::IkStack) (or used alone on
//! a [`PoseBuffer`](crate::stack::PoseBuffer)). Each frame the host writes the tracker poses ([`VrBody::trackers`]) and
//! the frame time ([`VrBody::dt`]); the stage then
//!
//! 1. maps the trackers from player space to the avatar ([`VrCalibration`]: one scale for the
//!    body, from the player's height or a T-pose sample, one for the arms, from the span);
//! 2. turns the body toward where the head (and, a little, the hands) face, with a lag and a
//!    cap on how far the neck may twist;
//! 3. bends the spine: the lean grows with the head's pitch and with how far the head has
//!    dropped (crouching), shared between the hips and the spine bones, and further while a
//!    planted foot's shin or a hip is at the end of its range (that extra lean grows at most
//!    1.5 rad/s, so a foot landing behind the body does not throw the hips back in one
//!    frame; the torso straightens up over 0.3 s); the chest twists part of the way toward
//!    the head's heading; the neck takes part of the head's rotation;
//! 4. places the pelvis so that the head bone lands *exactly* on the head target (so the pelvis
//!    follows from the head: neck and spine offsets, lean and crouch), lowered only when the
//!    legs could not reach the feet otherwise, or when a standing leg would straighten by
//!    more than the solver's turn bound since last frame's output (the bound could not let
//!    the output follow, and the planted foot would slide while it caught up) — the report
//!    says so; a leg's reach is measured with its knee as straight as the knee's range
//!    allows;
//! 5. plans the feet ([`locomotion`]): a foot stays planted where it landed until the body's
//!    support point has moved away from it by more than [`VrSettings::step_threshold`] (from
//!    where it would land now, ahead along the body's velocity), the body has turned past
//!    [`VrSettings::step_angle`], or the body's motion will take it out of the leg's reach
//!    within a step's time (from each hip's own velocity, so a turn on the spot counts); then
//!    it steps — lifted on an arc, its duration shorter as the body moves faster, one foot at
//!    a time, the other following, turned only as far as its ankle allows while in the air,
//!    landing within 97 % of the leg's reach of where its hip will be when it lands — which
//!    gives forward, backward and side steps and turning on the spot; a landing foot is
//!    reported `Planted` from the frame whose output has it on its landing place (touch-down:
//!    the leg may lag its swing by the turn bound), so a planted foot's stance starts where
//!    the foot is;
//! 6. poses each arm with the analytic two-bone limb ([`TwoBoneIk`](crate::analytic::TwoBoneIk)) toward its controller,
//!    the elbow's swivel from the shoulder geometry (down, back and out of the body) blended
//!    with the hand's roll, and turned by at most [`VrSettings::max_swivel_step`] per frame from
//!    where it was (so it never flips); the legs the same way, knees toward the feet's and the
//!    body's forward (bending as the pelvis drops), each foot turned only as far as its ankle
//!    allows (a standing foot pivots on its ankle rather than slide); the support comes
//!    before the head: where the head puts the pelvis so low over planted feet that a thigh
//!    would fold past its hip's range (a deep crouch), a standing knee first turns its swivel
//!    (within the frame's swivel turn, or to the leg's rest bend plane) to one that keeps
//!    the hip and knee within their limits, and only where none does the pelvis rises as
//!    little as lets every standing leg reach its foot within its hip's and knee's limits (a
//!    bisection) and the head misses its target by that much (the report's
//!    `pelvis_raised`, [`VrReport::head_reachable`] false);
//! 7. brings that analytic pose within [`VR_MAX_TURN`] less the bounded solve's share
//!    ([`VR_SOLVE_TURN_SHARE`]) of last frame's output (a joint that would turn further turns
//!    that far toward it; the others
//!    keep their analytic rotations bit for bit), moves every joint of it that is outside
//!    the full-body solver's limits onto them (the clamp the solve starts with), and runs the
//!    full-body solver's *bounded*
//!    tracking solve ([`FullBodySolver::solve`](crate::humanoid::FullBodySolver::solve);
//!    also on the first frame, where the analytic pose is near the goals) from there, with the pelvis (6D, as
//!    the analytic pose has it) and the feet on the support level, the hands below them. The
//!    hands and feet do not pull the trunk or the pelvis
//!    ([`FullBodySettings::pull`](crate::humanoid::FullBodySettings::pull) 0): the head, which
//!    they carry, comes first; a hand's rotation
//!    weighs [`HAND_ROTATION_WEIGHT`] of its position. **The goals are what the candidate can
//!    meet**, but for the turn bound: a standing foot's is its planted place, a hand's its
//!    controller where the controller is within the arm's reach and a swivel has the arm
//!    within its limits, the pelvis's the analytic pose's; a controller beyond the arm's reach gives the hand's position where
//!    the stretched arm has it, an arm that no swivel fits its clamped hand, a swinging foot
//!    where the lagging leg has it. (The candidate starts from the analytic pose every frame,
//!    so whatever the bounded solve adds to a goal the candidate misses is undone the next
//!    frame: on such a goal it spent its whole budget every frame for at most its share of
//!    the bound, `docs/benchmarks.md`, *VR body: goals the candidate can meet*.) The solve
//!    turns no joint more than its share of the bound
//!    ([`FullBodySettings::max_turn`](crate::humanoid::FullBodySettings::max_turn)), keeps
//!    every joint within its limits and returns its input when every goal is met (the usual
//!    case: a cheap check); it iterates where the turn bound kept the candidate from a goal
//!    (a planted foot, a reachable hand, the pelvis). Nothing runs after it. Hence, by construction: no joint turns
//!    more than [`VR_MAX_TURN`] in a frame, the output is within the solver's limits, and when
//!    the trackers (and so the analytic pose and the goals) stay still the output comes to
//!    rest and is then returned bit for bit (the solve's fixed point, started from its own
//!    last output).
//!
//! Before that, each arm's swivel is chosen so that the arm is within its joint limits (upper
//! arm, elbow, forearm twist, wrist) when a swivel within this frame's turn allows it, so the
//! solver's check passes and it returns at once. When none does (a wrist at the end of its
//! range while crouching and reaching low, for seconds), the next frames try only the wanted
//! swivel until it fits again rather than repeat a search that the clamp of step 7 makes moot.
//! The analytic pose is not bounded itself (a limb swinging through its straight pose, a
//! wrist clamped at the end of its range); the bounded candidate of step 7 is what bounds the
//! output.
//!
//! Every axis is derived from the rest pose ([`BodyFrame`]: up from the hips to the head, left
//! from the right to the left limbs); no T-pose, bone axis or naming convention is assumed.
//!
//! # Spaces
//!
//! Trackers are given in *player space*: the character's model space (the frame of the bone
//! transforms, so the same up direction), in the player's units, with the player's floor
//! through the model origin. [`VrCalibration`] maps a player-space point `p` to the avatar as
//! `origin + scale · p`, where `origin` is the avatar's rest hips projected onto its rest foot
//! plane ([`VrBody::origin`]); the hands are placed relative to the head with
//! [`VrCalibration::arm_scale`]. Each tracker pose is the wanted pose of the bone it drives
//! (the head bone, a hand bone: its origin and model rotation); offsets between a device and
//! the bone are the host's (in Bevy, a child entity of the device). [`VrBody::rest_bone_pose`]
//! gives the rest pose of each driven bone, to compute such offsets from a calibration pose.
//!
//! # Ground
//!
//! Feet land on the rest foot plane raised by [`VrBody::ground`] (a [`GroundProbe`], e.g. the
//! grounding stage's ray casts): the hook for grounding; flat ground by default.
//!
//! # Checked
//!
//! By forward kinematics of the output, human scale: `tests/vr_body.rs` (the scripted 60 s
//! recording of `tests/support/vr_recording.rs` on the 12 procedural rigs and the `KayKit`
//! and UAL characters: planted feet, head, hands, largest turn, stepping cadence),
//! `tests/vr_demo_script.rs` (the demo's script from four starts on every rig), the
//! robustness suite's VR scenario (`tests/robustness.rs`: varied tracker scripts at 72 Hz on
//! every naming convention and the CC0 characters — no turn over 20°, no frame outside the
//! limits, the head within 1 mm whenever reachable, a foot reported `Planted` within 1 mm of
//! where its stance started, the output bit-identical once the trackers are still) and `tests/vr_body_alloc.rs` (no allocation per frame after set-up).
//! Figures, before and after, and the cost per frame: `docs/benchmarks.md`, *VR body*.

#![allow(
    clippy::needless_range_loop,
    reason = "per-side loops index several parallel [left, right] arrays"
)]

mod arms;
mod frame;
mod legs;
mod limbs;
pub mod locomotion;
mod rig;
mod trunk;

use core::f32::consts::{FRAC_PI_2, PI};
use core::fmt::Debug;

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::analytic::AnalyticError;
use crate::humanoid::{
    BodyFrame, Effector, FullBodyGoals, FullBodyReport, FullBodySolver, HumanoidError, HumanoidMap,
};
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;

pub use locomotion::{FootPhase, GroundProbe, Locomotion};
use rig::{Rig, State};

/// The full-body solver's iteration budget per frame that [`VrBody::new`] sets
/// ([`FullBodySettings::max_iterations`](crate::humanoid::FullBodySettings::max_iterations);
/// change it with [`VrBody::solver_mut`]).
pub const VR_SOLVER_ITERATIONS: u32 = 4;

/// Time constant (seconds) of the torso straightening up (the lean easing toward a smaller
/// target).
const LEAN_RELAX_TIME: f32 = 0.3;

/// Largest rate (radians per second) at which the lean grows for the legs' sake (a planted
/// foot's ankle or a hip at the end of its range).
const SHIN_LEAN_RATE: f32 = 1.5;

/// The slowest rate (radians per second) at which the body's heading and lean approach their
/// targets: an exponential approach never arrives (in `f32` it stops changing only many time
/// constants later: the heading's 2 s drift under the head went on for the whole 5 s of still
/// trackers in the robustness suite), so its last part is covered at this rate and the body
/// comes to rest (0.1 rad/s: the last 3° of the drift take half a second).
const SETTLE_RATE: f32 = 0.1;

/// The VR body's per-frame turn bound, radians: no joint of its output turns more than this
/// from the previous frame's output (issue 24 asks for no turn over 20°). The bounded solve
/// takes [`VR_SOLVE_TURN_SHARE`] of it ([`VrBody::new`] sets the solver's
/// [`max_turn`](crate::humanoid::FullBodySettings::max_turn) to that), the analytic pose's
/// approach the rest (it reads the solver's setting).
pub const VR_MAX_TURN: f32 = crate::humanoid::DEFAULT_MAX_TURN;

/// The share of [`VR_MAX_TURN`] that [`VrBody::new`] gives the bounded solve (its
/// [`max_turn`](crate::humanoid::FullBodySettings::max_turn), 0.75°); the approach to the
/// analytic pose takes the rest. The analytic pose is the VR body's solve (it meets the head,
/// the hands within reach and the feet exactly); the bounded solve only holds the limits and
/// the priorities near it, so it needs little of the bound. What the approach gets is what a
/// standing knee may straighten in a frame (step 4): the larger it is, the fewer frames the
/// pelvis is lowered while the planted leg could still reach (`docs/benchmarks.md`, *VR
/// body: the head whenever reachable*).
pub const VR_SOLVE_TURN_SHARE: f32 = 0.05;

/// The weight of a hand's rotation goal against its position (1) in the bounded solve: where
/// the wrist cannot take the controller's rotation (its range, the arm bent), the hand keeps
/// its place and turns as far as it can, rather than trade millimetres of position for it
/// (at weight 1, walking with the controllers held in the rest hands' rotation left the hands
/// up to 6.4 mm off, `bevy_mod_ik`'s `vr` test; at 0.1 up to 1.4 mm once the bounded solve's
/// held joints slide along their limits instead of leaving the step, 0.05 up to 1.02 mm,
/// `docs/benchmarks.md`, *Bounded tracking: held joints slide along their bounds*).
pub const HAND_ROTATION_WEIGHT: f32 = 0.03;

/// Halvings of the bisection that finds how far the pelvis must rise for the standing legs
/// to reach their feet within their hips' limits (step 6): the rise is found to 2⁻¹² of the
/// standing leg's slack (under 0.25 mm on a 0.9 m leg); the feet themselves are met exactly
/// at every step, so this only sets how close to its target the head gets.
const HIP_FIT_STEPS: u32 = 12;

/// The bracket, as a fraction of the standing leg's slack, that the bisection of
/// [`HIP_FIT_STEPS`] tries first around where the last two frames' rises extrapolate to
/// (2⁻¹¹: one halving left where the rise lands within it, the whole bisection of the rest of
/// the range where it does not; on the robustness suite's CI scripts the bisection's
/// instructions were 69.6 M at 2⁻¹¹, 82.6 M at 2⁻¹⁰, 100.7 M at 2⁻⁹ and 102.4 M at 2⁻¹²,
/// 189 M without the bracket; `docs/benchmarks.md`, *VR body: goals the candidate can meet*).
const HIP_FIT_BRACKET: f32 = 1.0 / 2048.0;

/// A foot touching down is planted once the output has it this close to where it lands, as a
/// fraction of the leg's length (0.09 mm on a 0.9 m leg: within the 1 mm for a
/// planted foot, and what the analytic leg meets exactly once its joints are within the turn
/// bound).
const TOUCHDOWN_TOLERANCE: f32 = 1e-4;

/// Errors setting up a [`VrBody`] or a [`VrCalibration`].
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum VrError {
    /// The humanoid rig does not map or the full-body solver rejects it.
    #[error(transparent)]
    Humanoid(#[from] HumanoidError),
    /// A limb's two-bone chain is malformed.
    #[error(transparent)]
    Analytic(#[from] AnalyticError),
    /// A calibration input is not finite or not positive.
    #[error("VR calibration input is not finite or not positive: {0}")]
    InvalidCalibration(&'static str),
    /// A setting is out of its range.
    #[error("VR setting out of range: {0}")]
    InvalidSettings(&'static str),
}

/// One tracker's pose: the wanted model-space position and rotation of the bone it drives.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TrackerPose {
    /// Position (player space; see the module docs).
    pub position: Vec3,
    /// Model-space rotation of the driven bone.
    pub rotation: Quat,
}

impl TrackerPose {
    /// A tracker pose.
    #[must_use]
    pub const fn new(position: Vec3, rotation: Quat) -> Self {
        Self { position, rotation }
    }

    fn is_finite(&self) -> bool {
        self.position.is_finite()
            && self.rotation.is_finite()
            && self.rotation.length_squared() > 1e-12
    }
}

/// This frame's trackers.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VrTrackers {
    /// The head-mounted display (drives the head bone).
    pub head: TrackerPose,
    /// The left controller (drives the left hand bone).
    pub left_hand: TrackerPose,
    /// The right controller (drives the right hand bone).
    pub right_hand: TrackerPose,
    /// An optional pelvis tracker (drives the hips; the head is then reached by the spine
    /// bending toward it, not exactly).
    pub pelvis: Option<TrackerPose>,
    /// An optional left foot tracker (replaces that foot's stepping).
    pub left_foot: Option<TrackerPose>,
    /// An optional right foot tracker.
    pub right_foot: Option<TrackerPose>,
}

impl VrTrackers {
    fn is_finite(&self) -> bool {
        self.head.is_finite()
            && self.left_hand.is_finite()
            && self.right_hand.is_finite()
            && [self.pelvis, self.left_foot, self.right_foot]
                .iter()
                .flatten()
                .all(TrackerPose::is_finite)
    }
}

/// Player-to-avatar mapping: `avatar = origin + scale · player` for the head (and the optional
/// pelvis and foot trackers), `hand = head + arm_scale · (player hand − player head)`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VrCalibration {
    /// Avatar units per player unit, for the body.
    pub scale: f32,
    /// Avatar units per player unit, for the hands relative to the head.
    pub arm_scale: f32,
    /// Where player space's origin lands on the avatar (model space); `None`: the avatar's rest
    /// hips on its rest foot plane ([`VrBody::origin`]). `Some(Vec3::ZERO)` with unit scales
    /// takes trackers as model-space poses unchanged.
    pub origin: Option<Vec3>,
}

impl Default for VrCalibration {
    fn default() -> Self {
        Self {
            scale: 1.0,
            arm_scale: 1.0,
            origin: None,
        }
    }
}

impl VrCalibration {
    /// Calibration from the player's head height when standing (the head tracker's height
    /// above the player's floor, along up): the body scales so that this height lands at
    /// [`VrSettings::stand_height`] of the avatar's rest head height above its feet (knees
    /// slightly soft), and the arms with it.
    ///
    /// # Errors
    /// [`VrError::InvalidCalibration`] for a height that is not finite and positive.
    pub fn from_head_height(body: &VrBody, player_head_height: f32) -> Result<Self, VrError> {
        if !(player_head_height.is_finite() && player_head_height > 0.0) {
            return Err(VrError::InvalidCalibration("player head height"));
        }
        let scale = body.settings.stand_height * body.rig.head_height / player_head_height;
        Ok(Self {
            scale,
            arm_scale: scale,
            origin: None,
        })
    }

    /// Calibration from a T-pose sample (standing, arms stretched sideways): the head tracker
    /// and both hand trackers, player space. The body scales by the head height as in
    /// [`VrCalibration::from_head_height`], the arms by the avatar's hand-to-hand span (measured
    /// from its bone lengths, not from its rest pose) over the player's.
    ///
    /// # Errors
    /// [`VrError::InvalidCalibration`] when the sample is not finite or degenerate (head at or
    /// below the floor, hands together).
    pub fn from_t_pose(
        body: &VrBody,
        head: Vec3,
        left_hand: Vec3,
        right_hand: Vec3,
    ) -> Result<Self, VrError> {
        if !(head.is_finite() && left_hand.is_finite() && right_hand.is_finite()) {
            return Err(VrError::InvalidCalibration("T-pose sample"));
        }
        let mut c = Self::from_head_height(body, head.dot(body.rig.frame.up))?;
        let span = left_hand.distance(right_hand);
        if span <= 1e-6 * c.scale.recip() {
            return Err(VrError::InvalidCalibration("T-pose hand span"));
        }
        c.arm_scale = body.rig.span / span;
        Ok(c)
    }

    fn is_valid(&self) -> bool {
        self.scale.is_finite()
            && self.scale > 0.0
            && self.arm_scale.is_finite()
            && self.arm_scale > 0.0
    }
}

/// Tuning of the body model and the stepping. Lengths are fractions of the avatar's leg
/// length (hip to ankle), angles radians, times seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct VrSettings {
    /// The avatar's standing head height, as a fraction of its rest head height above its feet,
    /// that a calibrated player's standing head height maps to (below 1: soft knees).
    pub stand_height: f32,
    /// A foot steps when its planted position is this far from where the body wants it.
    pub step_threshold: f32,
    /// A foot steps when it is turned this far from the body's heading.
    pub step_angle: f32,
    /// Step duration when standing still (a turn, a slow step).
    pub step_duration: f32,
    /// Shortest step duration (fast walking).
    pub min_step_duration: f32,
    /// Peak lift of the foot during a step.
    pub step_height: f32,
    /// Longest step (from where the foot was to where it lands).
    pub max_step: f32,
    /// How far ahead (seconds of the body's velocity) a step lands.
    pub step_lead: f32,
    /// Time constant of the body's turn toward the head's heading.
    pub turn_time: f32,
    /// Share of the hands' heading (seen from the head, when in front) in the body's
    /// heading; the rest is the head's.
    pub hands_yaw: f32,
    /// The head may turn this far from the body's heading before the body follows (it drifts
    /// under the head over a few seconds anyway).
    pub turn_dead_zone: f32,
    /// Largest angle between the head's heading and the body's (the neck's twist range): the
    /// body is pulled along beyond it.
    pub max_neck_yaw: f32,
    /// Share of the angle between the head's and the body's headings that the chest twists.
    pub chest_twist: f32,
    /// Forward lean per radian of head pitch below the horizon.
    pub pitch_lean: f32,
    /// Forward lean at a full crouch (the head down by half its standing height).
    pub crouch_lean: f32,
    /// Largest forward lean of the torso.
    pub max_lean: f32,
    /// Largest forward tilt of a shin from the up direction with the foot flat (the ankle's
    /// dorsiflexion); a crouch leans the torso further rather than exceed it.
    pub max_shin_tilt: f32,
    /// Largest hip flexion (thigh forward of the pelvis): a crouch leans the torso further
    /// (raising the pelvis) rather than exceed it.
    pub max_hip_flex: f32,
    /// Share of the lean taken by the hips (the rest by the spine bones).
    pub hip_lean: f32,
    /// Share of the head's rotation (relative to the chest) taken by the neck.
    pub neck_share: f32,
    /// Weight of the hand's roll in the elbow's swivel (the rest from the shoulder geometry).
    pub elbow_from_hand: f32,
    /// Largest change of an elbow's or knee's swivel direction per frame.
    pub max_swivel_step: f32,
}

impl Default for VrSettings {
    fn default() -> Self {
        Self {
            stand_height: 0.985,
            step_threshold: 0.3,
            step_angle: 0.6,
            step_duration: 0.5,
            min_step_duration: 0.38,
            step_height: 0.1,
            max_step: 1.4,
            step_lead: 0.1,
            turn_time: 0.12,
            turn_dead_zone: 0.45,
            hands_yaw: 0.5,
            max_neck_yaw: 0.9,
            chest_twist: 0.35,
            pitch_lean: 0.3,
            crouch_lean: 1.0,
            max_lean: 1.2,
            max_shin_tilt: 0.55,
            max_hip_flex: 1.45,
            hip_lean: 0.15,
            neck_share: 0.4,
            elbow_from_hand: 0.9,
            max_swivel_step: 0.25,
        }
    }
}

impl VrSettings {
    /// Checks ranges.
    ///
    /// # Errors
    /// [`VrError::InvalidSettings`] naming the first bad field.
    pub fn validate(&self) -> Result<(), VrError> {
        let pos = |v: f32| v.is_finite() && v > 0.0;
        let unit = |v: f32| v.is_finite() && (0.0..=1.0).contains(&v);
        let checks = [
            (
                pos(self.stand_height) && self.stand_height <= 1.0,
                "stand_height",
            ),
            (pos(self.step_threshold), "step_threshold"),
            (pos(self.step_angle), "step_angle"),
            (pos(self.step_duration), "step_duration"),
            (
                pos(self.min_step_duration) && self.min_step_duration <= self.step_duration,
                "min_step_duration",
            ),
            (unit(self.step_height), "step_height"),
            (pos(self.max_step), "max_step"),
            (
                self.step_lead.is_finite() && self.step_lead >= 0.0,
                "step_lead",
            ),
            (
                self.turn_time.is_finite() && self.turn_time >= 0.0,
                "turn_time",
            ),
            (
                self.turn_dead_zone.is_finite() && self.turn_dead_zone >= 0.0,
                "turn_dead_zone",
            ),
            (
                pos(self.max_neck_yaw) && self.max_neck_yaw < PI,
                "max_neck_yaw",
            ),
            (unit(self.chest_twist), "chest_twist"),
            (unit(self.hands_yaw), "hands_yaw"),
            (
                self.pitch_lean.is_finite() && self.pitch_lean >= 0.0,
                "pitch_lean",
            ),
            (
                self.crouch_lean.is_finite() && self.crouch_lean >= 0.0,
                "crouch_lean",
            ),
            (
                self.max_lean.is_finite() && (0.0..FRAC_PI_2).contains(&self.max_lean),
                "max_lean",
            ),
            (
                self.max_shin_tilt.is_finite() && (0.0..FRAC_PI_2).contains(&self.max_shin_tilt),
                "max_shin_tilt",
            ),
            (
                self.max_hip_flex.is_finite() && self.max_hip_flex > 0.0,
                "max_hip_flex",
            ),
            (unit(self.hip_lean), "hip_lean"),
            (unit(self.neck_share), "neck_share"),
            (unit(self.elbow_from_hand), "elbow_from_hand"),
            (pos(self.max_swivel_step), "max_swivel_step"),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some(&(_, name)) => Err(VrError::InvalidSettings(name)),
            None => Ok(()),
        }
    }
}

/// What the last frame did, measured on the output pose by forward kinematics.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct VrReport {
    /// Head bone origin's distance from its target, model units.
    pub head_position_error: f32,
    /// Head bone rotation's angle from its target, radians.
    pub head_rotation_error: f32,
    /// Each hand's origin distance from its target (left, right), model units.
    pub hand_position_error: [f32; 2],
    /// Each hand's rotation angle from its target (left, right), radians.
    pub hand_rotation_error: [f32; 2],
    /// Whether each hand's target was within the arm's reach from the shoulder as posed
    /// (left, right).
    pub hand_reachable: [bool; 2],
    /// Whether the pelvis had to be lowered below where the head put it because a leg could
    /// not reach its foot (the head then misses its target).
    pub pelvis_lowered: bool,
    /// Whether the pelvis had to be raised above where the head put it because a standing
    /// leg could not reach its foot within its hip's or knee's limits there (a deep crouch
    /// over planted feet; the head then misses its target, above it).
    pub pelvis_raised: bool,
    /// Whether the full-body solver had to iterate (a joint limit, an unreachable goal or the
    /// turn bound was in the way of the analytic pose); the head may then miss its target.
    pub trunk_moved: bool,
    /// The full-body solver's report on the final pass.
    pub full_body: FullBodyReport,
    /// Steps landed since set-up or [`VrBody::reset`] (both feet).
    pub steps: u32,
}

impl VrReport {
    /// Whether the head could be put on its tracker this frame: the pelvis was neither
    /// lowered nor raised from where the head puts it (the head is then on its target unless
    /// the solver had to move the trunk, `trunk_moved`). `false` is the status of a frame
    /// whose head tracker is out of the body's reach.
    #[must_use]
    pub fn head_reachable(&self) -> bool {
        !(self.pelvis_lowered || self.pelvis_raised)
    }
}

/// The VR body: trackers in, a whole-body pose out. See the [module docs](self).
#[derive(Debug)]
pub struct VrBody {
    rig: Rig,
    solver: FullBodySolver,
    goals: FullBodyGoals,
    bones: Vec<usize>,
    state: State,
    /// The feet's stepping.
    pub locomotion: Locomotion,
    /// This frame's trackers (player space). Write them every frame.
    pub trackers: VrTrackers,
    /// This frame's time step, seconds (0 pauses the stepping).
    pub dt: f32,
    /// The player-to-avatar mapping.
    pub calibration: VrCalibration,
    /// Tuning.
    pub settings: VrSettings,
    /// The ground under the feet (flat rest foot plane when `None`).
    pub ground: Option<Box<dyn GroundProbe>>,
    /// A flat raise of the ground under the feet, along up (added to the probe's height).
    pub ground_offset: f32,
    report: VrReport,
    /// Last frame's output (allocated at set-up): the bounded approach of step 7 starts
    /// from it.
    last: crate::pose::Pose,
}

impl VrBody {
    /// A VR body for `skeleton` mapped by `map`, with default settings and calibration.
    ///
    /// # Errors
    /// [`VrError::Humanoid`] when the rig does not map to a full humanoid (hips, spine, head,
    /// arms, legs) or the full-body solver rejects it; [`VrError::Analytic`] for a
    /// degenerate limb.
    pub fn new(skeleton: &Skeleton, map: &HumanoidMap) -> Result<Self, VrError> {
        Self::build(skeleton, map, None)
    }

    /// [`VrBody::new`] with the floor's normal given in model space (`up`, any length): the
    /// direction the body stands along, its head height measured along, and the one its
    /// walking plane is level to. [`VrBody::new`] estimates it from the rest pose as the
    /// hips-to-head direction ([`BodyFrame`]), which tilts with the rest posture: a head 4.8°
    /// ahead of the hips (the UAL mannequin) made walking over level ground climb, and the
    /// head missed its tracker by 76 mm after 0.9 m. A host that knows which way is up (Bevy,
    /// glTF: the character's +Y) should say so. An `up` that is not finite, is zero, or is
    /// more than 45° from the rest pose's hips-to-head direction is not a floor under that
    /// body: the estimate is kept.
    ///
    /// # Errors
    /// As [`VrBody::new`].
    pub fn with_up(skeleton: &Skeleton, map: &HumanoidMap, up: Vec3) -> Result<Self, VrError> {
        Self::build(skeleton, map, Some(up))
    }

    /// Avatar → player space for trackers given in model space (the inverse of the
    /// calibration), used to seed the trackers.
    fn to_player(&self, t: &VrTrackers) -> VrTrackers {
        let c = self.calibration;
        let head = (t.head.position - self.rig.origin) / c.scale;
        let hand = |h: TrackerPose| {
            TrackerPose::new(
                head + (h.position - t.head.position) / c.arm_scale,
                h.rotation,
            )
        };
        VrTrackers {
            head: TrackerPose::new(head, t.head.rotation),
            left_hand: hand(t.left_hand),
            right_hand: hand(t.right_hand),
            ..*t
        }
    }

    /// The full-body solver.
    #[must_use]
    pub fn solver(&self) -> &FullBodySolver {
        &self.solver
    }

    /// The full-body solver (its settings may be changed).
    pub fn solver_mut(&mut self) -> &mut FullBodySolver {
        &mut self.solver
    }

    /// The body frame (up, left, forward) derived from the rest pose.
    #[must_use]
    pub fn frame(&self) -> BodyFrame {
        self.rig.frame
    }

    /// The avatar point that player space's origin maps to (the rest hips on the foot plane).
    #[must_use]
    pub fn origin(&self) -> Vec3 {
        self.rig.origin
    }

    /// The avatar's leg length (hip to ankle, mean of both legs), model units.
    #[must_use]
    pub fn leg_length(&self) -> f32 {
        self.rig.leg_length
    }

    /// The avatar's arm lengths (shoulder to wrist; left, right), model units.
    #[must_use]
    pub fn arm_lengths(&self) -> [f32; 2] {
        self.rig.arm_length
    }

    /// The avatar's rest head height above its feet, model units.
    #[must_use]
    pub fn head_height(&self) -> f32 {
        self.rig.head_height
    }

    /// The bones of the arms and legs: upper, lower, tip (left, right).
    #[must_use]
    pub fn limb_bones(&self) -> ([[usize; 3]; 2], [[usize; 3]; 2]) {
        (self.rig.arm_bones, self.rig.leg_bones)
    }

    /// The head bone.
    #[must_use]
    pub fn head_bone(&self) -> usize {
        self.rig.head
    }

    /// The rest model-space pose of the bone a tracker drives (`Effector::Pelvis` = hips; the
    /// head is [`VrBody::rest_head_pose`]).
    #[must_use]
    pub fn rest_bone_pose(&self, effector: Effector) -> TrackerPose {
        let t = match effector {
            Effector::LeftHand => self.rig.rest_hands[0],
            Effector::RightHand => self.rig.rest_hands[1],
            Effector::LeftFoot => self.rig.rest_feet[0],
            Effector::RightFoot => self.rig.rest_feet[1],
            Effector::Pelvis => {
                BoneTransform::from_translation_rotation(self.rig.rest_hips_pos, self.rig.rest_hips)
            }
        };
        TrackerPose::new(t.translation, t.rotation)
    }

    /// The rest model-space pose of the head bone.
    #[must_use]
    pub fn rest_head_pose(&self) -> TrackerPose {
        TrackerPose::new(self.rig.rest_head.translation, self.rig.rest_head.rotation)
    }

    /// The tracker targets mapped to the avatar (model space): head, left hand, right hand.
    #[must_use]
    pub fn targets(&self) -> [TrackerPose; 3] {
        let c = self.calibration;
        let t = &self.trackers;
        let head = c.origin.unwrap_or(self.rig.origin) + t.head.position * c.scale;
        let hand = |h: TrackerPose| {
            TrackerPose::new(
                head + (h.position - t.head.position) * c.arm_scale,
                h.rotation,
            )
        };
        [
            TrackerPose::new(head, t.head.rotation),
            hand(t.left_hand),
            hand(t.right_hand),
        ]
    }

    fn map_point(&self, p: Vec3) -> Vec3 {
        self.calibration.origin.unwrap_or(self.rig.origin) + p * self.calibration.scale
    }

    /// The last frame's report.
    #[must_use]
    pub fn report(&self) -> &VrReport {
        &self.report
    }

    /// Forgets the feet, the body's heading and the swivels: the next frame starts over
    /// (feet placed under the body, no turn bound from the last output). For a teleport.
    pub fn reset(&mut self) {
        self.state.started = false;
        self.locomotion.reset();
        self.report.steps = 0;
    }
}
