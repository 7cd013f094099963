//! A VR body from three trackers: a head-mounted display and two controllers (optionally a
//! pelvis and two foot trackers) drive a whole humanoid avatar that leans, crouches, reaches
//! and steps — the job of Final IK's VRIK, on this crate's [`FullBodySolver`].
//!
//! [`VrBody`] is a [`Stage`] of an [`IkStack`](crate::stack::IkStack) (or used alone on
//! a [`PoseBuffer`]). Each frame the host writes the tracker poses ([`VrBody::trackers`]) and
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
//!    legs could not reach the feet otherwise (the report says so; a leg's reach is measured
//!    with its knee as straight as the knee's range allows);
//! 5. plans the feet ([`locomotion`]): a foot stays planted where it landed until the body's
//!    support point has moved away from it by more than [`VrSettings::step_threshold`] (from
//!    where it would land now, ahead along the body's velocity), the body has turned past
//!    [`VrSettings::step_angle`], or the body's motion will take it out of the leg's reach
//!    within a step's time (from each hip's own velocity, so a turn on the spot counts); then
//!    it steps — lifted on an arc, its duration shorter as the body moves faster, one foot at
//!    a time, the other following, turned only as far as its ankle allows while in the air,
//!    landing within 97 % of the leg's reach of where its hip will be when it lands — which
//!    gives forward, backward and side steps and turning on the spot;
//! 6. poses each arm with the analytic two-bone limb ([`TwoBoneIk`]) toward its controller,
//!    the elbow's swivel from the shoulder geometry (down, back and out of the body) blended
//!    with the hand's roll, and turned by at most [`VrSettings::max_swivel_step`] per frame from
//!    where it was (so it never flips); the legs the same way, knees toward the feet's and the
//!    body's forward (bending as the pelvis drops);
//! 7. runs the full-body solver's bounded tracking solve ([`FullBodySolver::solve`];
//!    [`FullBodySolver::solve_cold`] on the first frame) with the pelvis, hands and feet as 6D
//!    goals on that pose: it returns the pose untouched when every goal is met within the
//!    joint limits (the usual case: a cheap check), and otherwise clamps the joints to their
//!    limits and reaches what it can — a controller out of reach pulls the chest along, an
//!    infeasible goal gives way — with bounded cost and no flips;
//! 8. when the solver had to move the trunk, brings the head back: the neck first, then what
//!    the neck could not absorb moves the pelvis (the head is within reach whenever some
//!    pelvis and spine pose within the limits puts it there, the feet staying planted): the
//!    body shifts by the head's residual and the four limbs are re-seated analytically on
//!    their targets, swivels kept, joints clamped to their limits — kept only if no foot moves
//!    and no hand within reach ends up more than a quarter of a millimetre (human scale)
//!    further from its controller. When a hand at the end of its joint range holds the chest
//!    (the shift would pull it off), the body shifts by the share of the head's miss that
//!    leaves the head and that hand equally far off; a hand whose controller is at the end of
//!    the arm's reach (98–100 % of its length: no reach to spare) gives way entirely once the
//!    head would otherwise miss by more than 0.72 mm (human scale). When the head is still
//!    further off (the solver leaned the trunk toward controllers beyond the arms' reach so
//!    far that the hips, shifted back, could not reach a planted foot), the analytic pose the
//!    solver started from comes back, every joint clamped to its limit, unless a foot or a
//!    hand with reach to spare would move off: the head comes first. No second solve: the
//!    frame costs one bounded solve and at most two analytic re-seats and that restore.
//!
//! Before that, each arm's swivel is chosen so that the arm is within its joint limits (upper
//! arm, elbow, forearm twist, wrist) when a swivel within this frame's turn allows it, so the
//! solver's check passes and it returns at once. When none does (a wrist at the end of its
//! range while crouching and reaching low, for seconds), the next frames try only the wanted
//! swivel until it fits again rather than repeat a search that the solver's fix makes moot.
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
//! # Measured
//!
//! Over the scripted 60 s recording of `tests/support/vr_recording.rs` at 60 Hz, on the 12
//! procedural test rigs (six naming conventions × two rest-axis styles) and the `KayKit` and
//! UAL characters, FK of the output, human scale (`tests/vr_body.rs`, which fails on any
//! target of the issue missed): planted-foot sliding ≤ 0.002 mm per stance; head ≤ 0.69 mm /
//! 0.07° on every frame within reach (frames out of reach: 0, `KayKit` 2 of 3600); hands with
//! reach to spare ≤ 0.14 mm / 0.11° (hands at 98–100 % of the arm's reach: ≤ 1.5 mm, 8.5 mm
//! on the two Unreal-convention test rigs, where the head wins); largest joint turn in a frame
//! 9.9–18.7°; forward walking 2.97 steps per metre of the avatar's own travel (`KayKit` 2.75),
//! all walking 3.07–3.82, turning on the spot 3–4.5 steps per 90°.
//!
//! # Cost
//!
//! No allocation per frame after set-up (`tests/vr_body_alloc.rs` counts allocations).
//! Measured with `cargo bench -p ik-core --bench vr_body` (per-frame median and p99 over the
//! scripted recording; each frame the best of 5 passes; three runs alternating with the
//! previous release's build, load 9 on the shared 2-core machine): median 7.0 µs (Mixamo test
//! rig), 11.8 µs (UAL), 5.9 µs (`KayKit`); p99 51.0–53.5, 55.9–57.1 and 56.8–58.7 µs (the
//! previous build in the same runs: 51.5–51.6, 63.1–63.3 and 52.2–52.3 µs). Instructions
//! (callgrind) in `IkStack::solve` over the whole recording on those three rigs: 1.225 G
//! (previous build 1.263 G, −3.0 %; the limb solves −11.7 %).

#![allow(
    clippy::needless_range_loop,
    reason = "per-side loops index several parallel [left, right] arrays"
)]

pub mod locomotion;

use core::f32::consts::{FRAC_PI_2, PI};
use core::fmt::Debug;

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::analytic::{AnalyticError, LimbGoal, LimbSettings, Pole, TwoBoneIk};
use crate::humanoid::{
    BodyFrame, Effector, EffectorGoal, FullBodyGoals, FullBodyReport, FullBodySolver,
    HumanoidBone as B, HumanoidError, HumanoidMap, default_ball_range,
};
use crate::limits::JointLimit;
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport};

pub use locomotion::{FootPhase, GroundProbe, Locomotion};

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

/// A hand whose controller is further than this fraction of the arm's length from the
/// shoulder has no reach to spare: when the head and such a hand compete for the trunk (the
/// solver held the chest for the hand), the hand gives way when the head would otherwise miss
/// by more than [`HEAD_SLACK`].
const HAND_SPARE_REACH: f32 = 0.98;

/// How far (a fraction of the leg length: 0.72 mm on a 0.9 m leg) the head may stay off its
/// target to spare a hand at the end of its reach.
const HEAD_SLACK: f32 = 8e-4;

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
    /// Whether the full-body solver had to iterate (a joint limit or an unreachable goal was
    /// in the way of the analytic pose), moving the trunk; the head is then brought back by
    /// the neck, within its range, and may miss by a little.
    pub trunk_moved: bool,
    /// The full-body solver's report on the final pass.
    pub full_body: FullBodyReport,
    /// Steps landed since set-up or [`VrBody::reset`] (both feet).
    pub steps: u32,
}

/// The upper body's inputs for one pass.
#[derive(Clone, Copy, Debug)]
struct UpperInput {
    lean: f32,
    body_yaw: f32,
    twist: f32,
    head_delta: Quat,
    head: Vec3,
    pelvis: Option<TrackerPose>,
}

/// Bones and rest measurements, fixed at set-up.
#[derive(Clone, Debug)]
struct Rig {
    frame: BodyFrame,
    hips: usize,
    /// Mapped spine bones below the neck, parents first.
    spine: Vec<usize>,
    /// Per spine bone: the cumulative share of the spine's flexion and twist reached at it
    /// (from the bones' default ranges), the last one 1.
    spine_share: Vec<(f32, f32)>,
    /// How far the spine bones may flex together (95 % of their default ranges), radians.
    spine_flex: f32,
    neck: Option<usize>,
    head: usize,
    /// Per side (left, right): upper arm, lower arm, hand.
    arms: [TwoBoneIk; 2],
    arm_bones: [[usize; 3]; 2],
    arm_length: [f32; 2],
    /// The full-body solver's limits of the upper and mid joints (left, right).
    arm_limits: [[JointLimit; 2]; 2],
    neck_limit: JointLimit,
    /// Every mapped bone with a joint limit in the full-body solver (bone, limit), by bone
    /// index.
    limited: Vec<(usize, JointLimit)>,
    /// Per side: an in-line forearm twist bone and its limit.
    twist: [Option<(usize, JointLimit)>; 2],
    hand_limit: [JointLimit; 2],
    head_limit: JointLimit,
    leg_limits: [[JointLimit; 2]; 2],
    /// The full-body solver's ankle limits (left, right).
    foot_limit: [JointLimit; 2],
    legs: [TwoBoneIk; 2],
    leg_bones: [[usize; 3]; 2],
    leg_length: f32,
    /// Per leg: the hip-to-ankle distance with the knee as straight as its range allows
    /// (below `leg_length` when the knee cannot straighten fully).
    leg_reach: [f32; 2],
    /// Rest model rotations: hips, spine bones (parallel to `spine`), neck, head, hands, feet.
    rest_hips: Quat,
    rest_hips_pos: Vec3,
    rest_spine: Vec<Quat>,
    rest_neck: Quat,
    rest_head: BoneTransform,
    rest_hands: [BoneTransform; 2],
    rest_feet: [BoneTransform; 2],
    /// Per hand: the direction from the wrist to the elbow at rest, in the hand's frame.
    hand_to_elbow: [Vec3; 2],
    /// Rest foot plane height along up (mean of the two foot origins).
    foot_plane: f32,
    /// Rest distance from the hips to the head.
    torso: f32,
    /// Rest head height above the foot plane.
    head_height: f32,
    /// Wrist-to-wrist span with both arms stretched sideways (bone lengths).
    span: f32,
    /// The avatar's origin of player space (rest hips on the foot plane).
    origin: Vec3,
}

/// Per-frame state carried between frames.
#[derive(Clone, Debug)]
struct State {
    started: bool,
    body_yaw: f32,
    head_yaw: f32,
    lean: f32,
    /// Unit swivel (bend) directions of the elbows and knees, model space.
    elbow_dir: [Vec3; 2],
    knee_dir: [Vec3; 2],
    /// Per arm: no swivel within last frame's turn had the arm within its joint limits (the
    /// solver fixed it); this frame tries only the wanted swivel until it fits again.
    arm_unfit: [bool; 2],
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
    /// A pose kept while the pelvis correction tries a pass (allocated at set-up).
    saved: crate::pose::Pose,
    /// The analytic pose handed to the full-body solver (head on its target), kept for
    /// [`VrBody::head_first`] (allocated at set-up).
    analytic: crate::pose::Pose,
}

/// `frame` with its up direction turned to `up` (left and forward turned with it); `frame` as
/// it is when `up` is degenerate or more than 45° from `frame.up`.
fn level_frame(frame: BodyFrame, up: Vec3) -> BodyFrame {
    let Some(up) = up.try_normalize() else {
        return frame;
    };
    if up.dot(frame.up) < core::f32::consts::FRAC_1_SQRT_2 {
        return frame;
    }
    let Some(left) = (frame.left - up * frame.left.dot(up)).try_normalize() else {
        return frame;
    };
    BodyFrame {
        up,
        left,
        forward: left.cross(up),
    }
}

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

    fn build(skeleton: &Skeleton, map: &HumanoidMap, up: Option<Vec3>) -> Result<Self, VrError> {
        let mut solver = FullBodySolver::new(skeleton, map)?;
        // The tracking budget per frame: the analytic pose is within the limits on most frames
        // (the solver returns at once); where a controller is out of reach the solver cannot
        // meet every goal anyway and keeps converging over the next frames. Bounds the slow
        // frames (`benches/vr_body.rs` prints their iterations).
        solver.settings_mut().max_iterations = VR_SOLVER_ITERATIONS;
        let frame = BodyFrame::from_rest(skeleton, map)?;
        let frame = up.map_or(frame, |up| level_frame(frame, up));
        let model = skeleton.rest_model_transforms();
        let bone = |r: B| map.get(r).ok_or(HumanoidError::MissingBone(r));
        let hips = bone(B::Hips)?;
        let head = bone(B::Head)?;
        let mut spine: Vec<usize> = [B::Spine, B::Chest, B::UpperChest]
            .iter()
            .filter_map(|&r| map.get(r))
            .filter(|&i| skeleton.is_ancestor_or_self(i, head) && i != hips)
            .collect();
        spine.sort_unstable();
        spine.dedup();
        let neck = map
            .get(B::Neck)
            .filter(|&n| skeleton.is_ancestor_or_self(n, head) && n != head);
        // Each limb bends about the full-body solver's own hinge axis, within its range, so
        // that the solver's limit clamp leaves the analytic pose as it is.
        let limb = |a: B, b: B, c: B| -> Result<(TwoBoneIk, [usize; 3], f32), VrError> {
            let ids = [bone(a)?, bone(b)?, bone(c)?];
            let mut ik = TwoBoneIk::try_new(skeleton, ids[0], ids[1], ids[2])?;
            if let JointLimit::Hinge { axis, min, max } = solver.limits().get(b) {
                let rest = ik.rest_flex();
                let settings = LimbSettings::default()
                    .with_bend_axis(model[ids[1]].rotation * axis)
                    .with_flex_limits((rest + min).clamp(0.0, PI), (rest + max).clamp(0.0, PI));
                if let Ok(with) =
                    TwoBoneIk::try_with_settings(skeleton, ids[0], ids[1], ids[2], settings)
                {
                    ik = with;
                }
            }
            let [l1, l2] = ik.rest_lengths();
            Ok((ik, ids, l1 + l2))
        };
        let (la, la_ids, la_len) = limb(B::LeftUpperArm, B::LeftLowerArm, B::LeftHand)?;
        let (ra, ra_ids, ra_len) = limb(B::RightUpperArm, B::RightLowerArm, B::RightHand)?;
        let (ll, ll_ids, ll_len) = limb(B::LeftUpperLeg, B::LeftLowerLeg, B::LeftFoot)?;
        let (rl, rl_ids, rl_len) = limb(B::RightUpperLeg, B::RightLowerLeg, B::RightFoot)?;
        let up = frame.up;
        let foot_plane =
            0.5 * (model[ll_ids[2]].translation + model[rl_ids[2]].translation).dot(up);
        let head_height = model[head].translation.dot(up) - foot_plane;
        let leg_length = 0.5 * (ll_len + rl_len);
        if !(head_height > 0.0 && leg_length > 0.0) {
            return Err(HumanoidError::DegenerateBodyFrame.into());
        }
        let shoulders = model[la_ids[0]]
            .translation
            .distance(model[ra_ids[0]].translation);
        let hips_pos = model[hips].translation;
        let origin = hips_pos - up * (hips_pos.dot(up) - foot_plane);
        let ranges: Vec<(f32, f32)> = spine
            .iter()
            .map(|&i| {
                map.role_of(i)
                    .and_then(default_ball_range)
                    .map_or((20.0, 20.0), |r| (r.swing_x, r.twist))
            })
            .collect();
        let total: (f32, f32) = ranges
            .iter()
            .fold((0.0, 0.0), |a, r| (a.0 + r.0, a.1 + r.1));
        let spine_flex = (0.95 * total.0).to_radians();
        let mut acc = (0.0, 0.0);
        let spine_share = ranges
            .iter()
            .map(|r| {
                acc = (acc.0 + r.0, acc.1 + r.1);
                (acc.0 / total.0, acc.1 / total.1)
            })
            .collect();
        let rig = Rig {
            frame,
            spine_flex,
            spine_share,
            hips,
            rest_spine: spine.iter().map(|&i| model[i].rotation).collect(),
            spine,
            rest_neck: neck.map_or(Quat::IDENTITY, |n| model[n].rotation),
            neck,
            head,
            arms: [la, ra],
            arm_bones: [la_ids, ra_ids],
            arm_length: [la_len, ra_len],
            neck_limit: solver.limits().get(B::Neck),
            limited: {
                let mut l: Vec<(usize, JointLimit)> = B::ALL
                    .iter()
                    .filter_map(|&r| Some((map.get(r)?, solver.limits().get(r))))
                    .filter(|&(i, l)| i != hips && !matches!(l, JointLimit::Free))
                    .collect();
                l.sort_unstable_by_key(|&(i, _)| i);
                l.dedup_by_key(|&mut (i, _)| i);
                l
            },
            twist: [
                (B::LeftLowerArmTwist, la_ids),
                (B::RightLowerArmTwist, ra_ids),
            ]
            .map(|(r, [_, lower, hand])| {
                map.get(r)
                    .filter(|&t| {
                        t != lower
                            && skeleton.is_ancestor_or_self(lower, t)
                            && skeleton.is_ancestor_or_self(t, hand)
                            && t != hand
                    })
                    .map(|t| (t, solver.limits().get(r)))
            }),
            hand_limit: [B::LeftHand, B::RightHand].map(|r| solver.limits().get(r)),
            head_limit: solver.limits().get(B::Head),
            arm_limits: [
                [B::LeftUpperArm, B::LeftLowerArm],
                [B::RightUpperArm, B::RightLowerArm],
            ]
            .map(|r| r.map(|r| solver.limits().get(r))),
            foot_limit: [B::LeftFoot, B::RightFoot].map(|r| solver.limits().get(r)),
            leg_limits: [
                [B::LeftUpperLeg, B::LeftLowerLeg],
                [B::RightUpperLeg, B::RightLowerLeg],
            ]
            .map(|r| r.map(|r| solver.limits().get(r))),
            leg_reach: [&ll, &rl].map(|ik| {
                let [l1, l2] = ik.rest_lengths();
                let c = ik.settings().flex_min.cos();
                (l1 * l1 + l2 * l2 + 2.0 * l1 * l2 * c).max(0.0).sqrt()
            }),
            legs: [ll, rl],
            leg_bones: [ll_ids, rl_ids],
            leg_length,
            rest_hips: model[hips].rotation,
            rest_hips_pos: model[hips].translation,
            rest_head: model[head],
            rest_hands: [model[la_ids[2]], model[ra_ids[2]]],
            rest_feet: [model[ll_ids[2]], model[rl_ids[2]]],
            hand_to_elbow: [la_ids, ra_ids].map(|[_, e, h]| {
                (model[h].rotation.inverse() * (model[e].translation - model[h].translation))
                    .normalize_or_zero()
            }),
            foot_plane,
            torso: model[hips].translation.distance(model[head].translation),
            head_height,
            span: shoulders + la_len + ra_len,
            origin,
        };
        let rest_tracker = |t: BoneTransform| TrackerPose::new(t.translation, t.rotation);
        let trackers = VrTrackers {
            head: rest_tracker(rig.rest_head),
            left_hand: rest_tracker(rig.rest_hands[0]),
            right_hand: rest_tracker(rig.rest_hands[1]),
            pelvis: None,
            left_foot: None,
            right_foot: None,
        };
        let down = -up;
        let out = [frame.left, -frame.left];
        let state = State {
            started: false,
            body_yaw: 0.0,
            head_yaw: 0.0,
            lean: 0.0,
            elbow_dir: [
                (down - frame.forward * 0.3 + out[0] * 0.3).normalize(),
                (down - frame.forward * 0.3 + out[1] * 0.3).normalize(),
            ],
            knee_dir: [frame.forward; 2],
            arm_unfit: [false; 2],
        };
        let mut locomotion = Locomotion::new(frame, leg_length);
        locomotion.reach = rig.leg_reach;
        let mut body = Self {
            locomotion,
            rig,
            goals: FullBodyGoals::default(),
            bones: (0..skeleton.len()).collect(),
            solver,
            state,
            trackers,
            dt: 1.0 / 60.0,
            calibration: VrCalibration::default(),
            settings: VrSettings::default(),
            ground: None,
            ground_offset: 0.0,
            report: VrReport::default(),
            saved: skeleton.rest_pose(),
            analytic: skeleton.rest_pose(),
        };
        // Trackers at the rest pose are in model space; express them in player space.
        body.trackers.head.position = body.rig.origin
            + (body.rig.rest_head.translation - body.rig.origin) * body.settings.stand_height;
        body.trackers = body.to_player(&body.trackers.clone());
        Ok(body)
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
    /// (feet placed under the body, a cold full-body solve). For a teleport.
    pub fn reset(&mut self) {
        self.state.started = false;
        self.locomotion.reset();
        self.report.steps = 0;
    }

    /// Sets bone `bone`'s model rotation (keeping its translation), through its parent.
    fn set_model_rotation(
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        bone: usize,
        rotation: Quat,
    ) {
        let parent = skeleton.parent(bone).map_or(Quat::IDENTITY, |p| {
            buffer.model_transform(skeleton, p).rotation
        });
        let t = buffer.pose().translations[bone];
        buffer.set_local(bone, (parent.inverse() * rotation).normalize(), t);
    }

    fn set_model_translation(
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        bone: usize,
        translation: Vec3,
    ) {
        let local = match skeleton.parent(bone) {
            Some(p) => buffer
                .model_transform(skeleton, p)
                .inverse()
                .transform_point(translation),
            None => translation,
        };
        let r = buffer.pose().rotations[bone];
        buffer.set_local(bone, r, local);
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one frame's pipeline, in order; the steps are documented in the module docs"
    )]
    fn run(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<CustomReport, StackError> {
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
        let s = self.settings;
        let frame = self.rig.frame;
        let (up, left) = (frame.up, frame.left);
        let dt = self.dt.min(0.25);
        let first = !self.state.started;
        let [head_t, lhand_t, rhand_t] = self.targets();
        let head_rot = head_t.rotation.normalize();
        let head_delta = head_rot * self.rig.rest_head.rotation.inverse();

        // Heading and pitch of the head.
        let face = head_delta * frame.forward;
        if let Some(y) = yaw_of(face, &frame) {
            self.state.head_yaw = y;
        }
        let pitch_down = (-face.dot(up)).clamp(-1.0, 1.0).asin();
        let hands_mid = 0.5 * (lhand_t.position + rhand_t.position) - head_t.position;
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
            self.state.body_yaw = wrap(self.state.body_yaw + k * excess + drift * (d - excess));
            let neck = wrap(self.state.head_yaw - self.state.body_yaw);
            if neck.abs() > s.max_neck_yaw {
                self.state.body_yaw = wrap(self.state.head_yaw - s.max_neck_yaw.copysign(neck));
            }
        }
        let body_yaw = self.state.body_yaw;
        let neck_yaw = wrap(self.state.head_yaw - body_yaw);

        // Lean: head pitch and crouch.
        let head_drop = ((self.rig.foot_plane + s.stand_height * self.rig.head_height
            - head_t.position.dot(up))
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
            self.state.lean += k * (lean_target - self.state.lean);
        }

        // Upper body rotations (hips, spine: lean + chest twist, neck) and the pelvis from the
        // head; then more lean while a planted leg's shin would tilt past its range (a deep
        // crouch sends the hips back, not the knees forward).
        let twist = s.chest_twist * neck_yaw;
        let pelvis_tracker = self
            .trackers
            .pelvis
            .map(|p| TrackerPose::new(self.map_point(p.position), p.rotation.normalize()));
        let body_fwd = Quat::from_axis_angle(up, body_yaw) * frame.forward;
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
        let mut pelvis = Vec3::ZERO;
        for _ in 0..4 {
            pelvis = self.pose_upper(
                skeleton,
                buffer,
                UpperInput {
                    lean,
                    body_yaw,
                    twist,
                    head_delta,
                    head: head_t.position,
                    pelvis: pelvis_tracker,
                },
            );
            if pelvis_tracker.is_some() || first {
                break;
            }
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
            let more = back / (self.rig.torso * lean.cos().max(0.2)) + 1.5 * fold.max(0.0);
            if more <= 1e-4 || lean >= lean_cap {
                break;
            }
            lean = (lean + more).min(lean_cap);
        }
        self.state.lean = lean;
        // Feet: where the body's support is, then step.
        let support = {
            let mid = 0.5 * (pelvis + head_t.position);
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
        let landed = self
            .locomotion
            .update(&plan_in, &s, self.ground.as_deref(), first);
        self.report.steps += landed;
        let mut feet = self.locomotion.foot_targets();

        // A foot in the air stays within its leg's reach (it swings under the body).
        let phases = self.locomotion.phases();
        for side in 0..2 {
            if let FootPhase::Stepping { .. } = phases[side] {
                let hip = hip_joints[side];
                let v = feet[side].translation - hip;
                let r = self.rig.leg_reach[side] * 0.995;
                if v.length_squared() > r * r {
                    feet[side].translation = hip + v * (r / v.length());
                }
            }
        }

        // Lower the pelvis if a leg cannot reach its foot.
        self.report.pelvis_lowered = false;
        let hips_rot_model = buffer.model_transform(skeleton, self.rig.hips);
        let mut lower = 0.0_f32;
        for side in 0..2 {
            let hip = buffer
                .model_transform(skeleton, self.rig.leg_bones[side][0])
                .translation
                - hips_rot_model.translation
                + pelvis;
            let v = hip - feet[side].translation;
            let r = self.rig.leg_reach[side] * 0.999;
            if v.length_squared() > r * r {
                let b = v.dot(up);
                let disc = b * b - v.length_squared() + r * r;
                let drop = if disc >= 0.0 {
                    b - disc.sqrt()
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

        // Head: exact rotation.
        Self::set_model_rotation(skeleton, buffer, self.rig.head, head_rot);

        // Legs.
        let turn = s.max_swivel_step;
        for side in 0..2 {
            let [hip_b, _, _] = self.rig.leg_bones[side];
            let hip = buffer.model_transform(skeleton, hip_b).translation;
            let foot = feet[side];
            let foot_fwd =
                (foot.rotation * self.rig.rest_feet[side].rotation.inverse()) * frame.forward;
            let axis = (foot.translation - hip).normalize_or_zero();
            let want = (foot_fwd + body_rot * frame.forward + up * 0.1)
                .reject_from_normalized(axis)
                .try_normalize();
            let dir = match want {
                Some(w) if !first => turn_toward(self.state.knee_dir[side], w, turn),
                Some(w) => w,
                None => self.state.knee_dir[side],
            };
            self.state.knee_dir[side] = dir;
            let pole = 0.5 * (hip + foot.translation) + dir * self.rig.leg_length;
            let goal = LimbGoal::new(foot.translation)
                .with_orientation(foot.rotation)
                .with_pole(pole);
            self.solve_limb(
                skeleton,
                buffer,
                &self.rig.legs[side],
                [&self.rig.leg_limits[side][0], &self.rig.leg_limits[side][1]],
                &goal,
            )?;
            // A foot in the air turns only as far as its ankle allows (the solver would
            // otherwise clamp the ankle and re-aim the leg, turning the thigh in one frame).
            if let FootPhase::Stepping { .. } = phases[side] {
                let tip = self.rig.leg_bones[side][2];
                Self::clamp_to_limit(skeleton, buffer, tip, &self.rig.foot_limit[side]);
                feet[side].rotation = buffer.model_transform(skeleton, tip).rotation;
            }
        }

        // Arms.
        let hands = [lhand_t, rhand_t];
        let out = [left, -left];
        for side in 0..2 {
            let [shoulder_b, _, _] = self.rig.arm_bones[side];
            let shoulder = buffer.model_transform(skeleton, shoulder_b).translation;
            let hand = hands[side];
            let hand_rot = hand.rotation.normalize();
            let to = hand.position - shoulder;
            let axis = to.normalize_or_zero();
            let from_body = (body_rot * (-up - frame.forward * 0.35 + out[side] * 0.45))
                .reject_from_normalized(axis)
                .normalize_or_zero();
            // Where the elbow sits with the wrist straight (the forearm in line with the hand
            // as at rest): the hand's orientation says which way the elbow points.
            let neutral_elbow = hand.position
                + hand_rot * self.rig.hand_to_elbow[side] * self.rig.arm_length[side] * 0.5;
            let from_hand = (neutral_elbow - shoulder)
                .reject_from_normalized(axis)
                .normalize_or_zero();
            let w = s.elbow_from_hand;
            let want = from_body * (1.0 - w) + from_hand * w;
            let prev = self.state.elbow_dir[side].reject_from_normalized(axis);
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
            // The swivel: the one above if the arm is within its joint limits there (upper
            // arm, elbow, forearm twist, wrist), else the nearest to it within this frame's
            // turn that is (so the full-body solver has no limit to fix: the cheap frame);
            // none: the one above, and the solver fixes it.
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
                let goal = LimbGoal::new(hand.position)
                    .with_orientation(hand_rot)
                    .with_pole(pole);
                let rep = self.solve_limb(
                    skeleton,
                    buffer,
                    &self.rig.arms[side],
                    [&self.rig.arm_limits[side][0], &self.rig.arm_limits[side][1]],
                    &goal,
                )?;
                self.twist_forearm(skeleton, buffer, side, hand_rot);
                r = Some(rep);
                if self.arm_within_limits(skeleton, buffer, side) {
                    self.state.elbow_dir[side] = c;
                    break;
                }
                if k == candidates.len() - 1 {
                    // None fits: back to the first, the solver fixes it.
                    let pole = shoulder + 0.5 * to + dir * self.rig.arm_length[side];
                    let goal = LimbGoal::new(hand.position)
                        .with_orientation(hand_rot)
                        .with_pole(pole);
                    r = Some(self.solve_limb(
                        skeleton,
                        buffer,
                        &self.rig.arms[side],
                        [&self.rig.arm_limits[side][0], &self.rig.arm_limits[side][1]],
                        &goal,
                    )?);
                    self.twist_forearm(skeleton, buffer, side, hand_rot);
                    self.state.elbow_dir[side] = dir;
                    self.state.arm_unfit[side] = true;
                }
            }
            let Some(r) = r else {
                continue;
            };
            self.report.hand_reachable[side] =
                r.reachable && r.target_distance <= 0.999 * self.rig.arm_length[side];
        }

        // The full-body solver: limits, unreachable controllers, giving way.
        let fb_bones = self.solver.effector_bones();
        {
            let model = buffer.model_transforms(skeleton);
            let g = &mut self.goals;
            g.effectors[Effector::Pelvis as usize] = EffectorGoal::new(
                model[fb_bones[Effector::Pelvis as usize]].translation,
                model[fb_bones[Effector::Pelvis as usize]].rotation,
            );
            g.effectors[Effector::LeftHand as usize] =
                EffectorGoal::new(lhand_t.position, lhand_t.rotation.normalize());
            g.effectors[Effector::RightHand as usize] =
                EffectorGoal::new(rhand_t.position, rhand_t.rotation.normalize());
            g.effectors[Effector::LeftFoot as usize] =
                EffectorGoal::new(feet[0].translation, feet[0].rotation);
            g.effectors[Effector::RightFoot as usize] =
                EffectorGoal::new(feet[1].translation, feet[1].rotation);
            g.look_at.enabled = false;
            g.center_of_mass.enabled = false;
        }
        self.analytic
            .rotations
            .copy_from_slice(&buffer.pose().rotations);
        self.analytic
            .translations
            .copy_from_slice(&buffer.pose().translations);
        let pose = buffer.pose_unchecked_mut();
        let fb = if first {
            self.solver.solve_cold(skeleton, pose, &self.goals)
        } else {
            self.solver.solve(skeleton, pose, &self.goals)
        };
        buffer.invalidate_from(0);
        let fb = fb?;
        self.state.started = true;
        self.report.trunk_moved = fb.iterations > 0;
        if fb.iterations > 0 {
            // The solver moved the trunk (a limit was in the way of a hand): bring the head
            // back with the neck (shortest arc onto the target, within the neck's range), then
            // turn the head onto its rotation.
            self.finish_head(skeleton, buffer, head_t.position, head_rot);
            // What the neck could not absorb moves the pelvis (the head is reachable when
            // some pelvis and spine pose within the limits puts it there): shift the hips by
            // the head's residual and solve again from there, within this frame.
            // What the neck could not absorb moves the pelvis (the head is within reach
            // whenever some pelvis and spine pose within the limits puts it there): the body
            // shifts by the head's residual and the four limbs are re-seated on their targets
            // analytically, their swivels kept (a shift of millimetres; no second solve, so
            // the frame's cost stays that of one bounded solve). Kept only if no hand or foot
            // ends up further from its target than the solver left it.
            if pelvis_tracker.is_none() {
                let miss =
                    head_t.position - buffer.model_transform(skeleton, self.rig.head).translation;
                let m = miss.length();
                if m > 1e-5 * self.rig.leg_length {
                    let (kept, hands_moved) =
                        self.reseat(skeleton, buffer, miss, &feet, &hands, None);
                    // A hand at the end of its range holds the chest where the solver left
                    // it: moving the body by the whole miss moves that hand off in proportion.
                    // Shift by less: a hand with reach to spare and the head end up equally
                    // far off. A hand at the end of the arm's reach gives way entirely once
                    // the head is off by more than `HEAD_SLACK` (its miss does not shrink in
                    // proportion to a smaller shift), and not at all below it.
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
                            self.reseat(skeleton, buffer, miss * f, &feet, &hands, Some(slack));
                        }
                    }
                }
                // When the shift could not bring the head back (the solver leaned the trunk
                // toward a controller so far that the hips, shifted back, could not reach a
                // planted foot), the head comes first: back to the analytic pose, where the
                // head was on its target, if the hands and feet allow it.
                self.head_first(skeleton, buffer, head_t.position, &feet, &hands);
            }
        }

        // Measure on the output.
        let model = buffer.model_transforms(skeleton);
        let head = model[self.rig.head];
        let r = &mut self.report;
        r.full_body = fb;
        r.head_position_error = head.translation.distance(head_t.position);
        r.head_rotation_error = head.rotation.angle_between(head_rot);
        for side in 0..2 {
            let h = model[self.rig.arm_bones[side][2]];
            r.hand_position_error[side] = h.translation.distance(hands[side].position);
            r.hand_rotation_error[side] =
                h.rotation.angle_between(hands[side].rotation.normalize());
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
        Ok(CustomReport {
            converged: fb.converged && pos <= tol && ang <= 0.0175,
            iterations: fb.iterations.max(1),
            position_residual: pos,
            angle_residual: ang,
        })
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
            let goal = LimbGoal::new(feet[side].translation)
                .with_orientation(feet[side].rotation)
                .with_pole(pole);
            ok &= self
                .solve_limb(
                    skeleton,
                    buffer,
                    &self.rig.legs[side],
                    [&self.rig.leg_limits[side][0], &self.rig.leg_limits[side][1]],
                    &goal,
                )
                .is_ok();
            let [_, elbow, _] = self.rig.arm_bones[side];
            let pole = buffer.model_transform(skeleton, elbow).translation;
            let rot = hands[side].rotation.normalize();
            let goal = LimbGoal::new(hands[side].position)
                .with_orientation(rot)
                .with_pole(pole);
            ok &= self
                .solve_limb(
                    skeleton,
                    buffer,
                    &self.rig.arms[side],
                    [&self.rig.arm_limits[side][0], &self.rig.arm_limits[side][1]],
                    &goal,
                )
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

    /// Whether arm `side` (upper arm, elbow, forearm twist bone, hand) is within the
    /// full-body solver's joint limits as posed.
    fn arm_within_limits(&self, skeleton: &Skeleton, buffer: &PoseBuffer, side: usize) -> bool {
        let [upper, lower, hand] = self.rig.arm_bones[side];
        let pose = buffer.pose();
        let inside = |bone: usize, limit: &JointLimit| {
            let rest = &skeleton.bones()[bone].rest;
            limit.contains(
                rest.rotation,
                rest.translation,
                pose.rotations[bone],
                pose.translations[bone],
                crate::limits::LIMIT_SLACK,
            )
        };
        inside(upper, &self.rig.arm_limits[side][0])
            && inside(lower, &self.rig.arm_limits[side][1])
            && inside(hand, &self.rig.hand_limit[side])
            && self.rig.twist[side].is_none_or(|(t, l)| inside(t, &l))
    }

    /// Hands the hand's twist about the forearm to an in-line forearm twist bone (if the rig
    /// has one), within the twist bone's range, keeping the hand's model rotation.
    fn twist_forearm(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        side: usize,
        hand_rot: Quat,
    ) {
        let Some((tw, JointLimit::Hinge { axis, min, max })) = self.rig.twist[side] else {
            return;
        };
        let JointLimit::SwingTwist(hand_limit) = self.rig.hand_limit[side] else {
            return;
        };
        let hand = self.rig.arm_bones[side][2];
        let hand_rest = skeleton.bones()[hand].rest.rotation;
        let tw_rest = skeleton.bones()[tw].rest.rotation;
        let hand_twist = |buffer: &PoseBuffer| {
            crate::rotation::twist_angle(
                hand_rest.inverse() * buffer.pose().rotations[hand],
                hand_limit.twist_axis,
            )
        };
        let before = hand_twist(buffer);
        if before.abs() < 1e-4 {
            return;
        }
        let start = buffer.pose().rotations[tw];
        let current = crate::rotation::twist_angle(tw_rest.inverse() * start, axis);
        let mut best = (before.abs(), start);
        for sign in [1.0_f32, -1.0] {
            let angle = (current + sign * before).clamp(min, max);
            let r = tw_rest * Quat::from_axis_angle(axis, angle);
            let t = buffer.pose().translations[tw];
            buffer.set_local(tw, r, t);
            Self::set_model_rotation(skeleton, buffer, hand, hand_rot);
            let after = hand_twist(buffer).abs();
            if after < best.0 {
                best = (after, r);
            }
        }
        let t = buffer.pose().translations[tw];
        buffer.set_local(tw, best.1, t);
        Self::set_model_rotation(skeleton, buffer, hand, hand_rot);
    }

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

    fn clamp_to_limit(
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        bone: usize,
        limit: &JointLimit,
    ) {
        let rest = &skeleton.bones()[bone].rest;
        let (mut r, mut t) = (
            buffer.pose().rotations[bone],
            buffer.pose().translations[bone],
        );
        if limit.clamp(rest.rotation, rest.translation, &mut r, &mut t) {
            buffer.set_local(bone, r, t);
        }
    }

    /// Poses hips, spine and neck for `input` and returns where the hips go for the head bone
    /// to land on its target (or the pelvis tracker's position).
    fn pose_upper(&self, skeleton: &Skeleton, buffer: &mut PoseBuffer, input: UpperInput) -> Vec3 {
        let s = &self.settings;
        let (up, left) = (self.rig.frame.up, self.rig.frame.left);
        let delta = |yaw_share: f32, lean_share: f32| {
            Quat::from_axis_angle(up, input.body_yaw + input.twist * yaw_share)
                * Quat::from_axis_angle(left, input.lean * lean_share)
        };
        let hips_rot = match input.pelvis {
            Some(p) => p.rotation,
            None => delta(0.0, s.hip_lean) * self.rig.rest_hips,
        };
        Self::set_model_rotation(skeleton, buffer, self.rig.hips, hips_rot);
        let mut chest_delta = delta(0.0, s.hip_lean);
        for (k, &(flex, twist)) in self.rig.spine_share.iter().enumerate() {
            chest_delta = delta(twist, s.hip_lean + (1.0 - s.hip_lean) * flex);
            let r = chest_delta * self.rig.rest_spine[k];
            Self::set_model_rotation(skeleton, buffer, self.rig.spine[k], r);
        }
        if let Some(neck) = self.rig.neck {
            let d = chest_delta.slerp(input.head_delta, s.neck_share);
            Self::set_model_rotation(skeleton, buffer, neck, d * self.rig.rest_neck);
        }
        let hips_now = buffer.model_transform(skeleton, self.rig.hips).translation;
        let head_now = buffer.model_transform(skeleton, self.rig.head).translation;
        match input.pelvis {
            Some(p) => p.position,
            None => hips_now + (input.head - head_now),
        }
    }

    /// Solves a limb with the analytic two-bone solver, then puts its mid joint exactly on the
    /// full-body solver's hinge (`hinge`; the two-bone solve may leave a small off-axis swing
    /// when the rest limb is bent out of the hinge's plane), re-aims the upper bone at the
    /// target (the reach changes only to second order) and sets the tip's rotation exactly.
    fn solve_limb(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        ik: &TwoBoneIk,
        [root_limit, hinge]: [&JointLimit; 2],
        goal: &LimbGoal,
    ) -> Result<crate::analytic::LimbReport, StackError> {
        let [root, mid, tip] = ik.bones();
        let parent = match skeleton.parent(root) {
            Some(p) => buffer.model_transform(skeleton, p),
            None => BoneTransform::IDENTITY,
        };
        let mut report = ik.solve_with_parent(skeleton, buffer.pose_unchecked_mut(), goal, &parent);
        buffer.invalidate_from(root);
        // A swivel that turns the root joint past its range (an upper arm twisted too far) is
        // clamped, and the limb solved again keeping the clamped bend plane.
        for _ in 0..4 {
            let rest = &skeleton.bones()[root].rest;
            let (mut r, mut t) = (
                buffer.pose().rotations[root],
                buffer.pose().translations[root],
            );
            if !root_limit.clamp(rest.rotation, rest.translation, &mut r, &mut t) {
                break;
            }
            buffer.set_local(root, r, t);
            let keep = LimbGoal {
                pole: Pole::Keep,
                ..*goal
            };
            report = ik.solve_with_parent(skeleton, buffer.pose_unchecked_mut(), &keep, &parent);
            buffer.invalidate_from(root);
        }
        let report = report?;
        let rest = &skeleton.bones()[mid].rest;
        let (mut r, mut t) = (
            buffer.pose().rotations[mid],
            buffer.pose().translations[mid],
        );
        if hinge.clamp(rest.rotation, rest.translation, &mut r, &mut t) {
            buffer.set_local(mid, r, t);
            // Bend about the hinge so that the limb spans the root-to-target distance
            // exactly again (removing the off-axis swing changed it a little).
            if let JointLimit::Hinge { axis, .. } = *hinge {
                let root_p = buffer.model_transform(skeleton, root).translation;
                let mid_m = buffer.model_transform(skeleton, mid);
                let tip_p = buffer.model_transform(skeleton, tip).translation;
                let a = (mid_m.rotation * axis).normalize_or_zero();
                let (m, u) = (mid_m.translation - root_p, tip_p - mid_m.translation);
                let u_par = a * a.dot(u);
                let (u_perp, w) = (u - u_par, a.cross(u));
                let (b, c) = (m.dot(u_perp), m.dot(w));
                let want = goal.target.distance_squared(root_p);
                let d = 0.5 * (want - m.length_squared() - u.length_squared()) - m.dot(u_par);
                let amp = b.hypot(c);
                if amp > 1e-9 && d.abs() <= amp && a != Vec3::ZERO {
                    let phi = c.atan2(b);
                    let off = (d / amp).clamp(-1.0, 1.0).acos();
                    let theta = [phi + off, phi - off]
                        .into_iter()
                        .map(|x| (x + PI).rem_euclid(2.0 * PI) - PI)
                        .min_by(|x, y| x.abs().total_cmp(&y.abs()))
                        .unwrap_or(0.0);
                    let (mut r2, mut t2) = (r * Quat::from_axis_angle(axis, theta), t);
                    hinge.clamp(rest.rotation, rest.translation, &mut r2, &mut t2);
                    buffer.set_local(mid, r2.normalize(), t2);
                }
            }
            let root_m = buffer.model_transform(skeleton, root);
            let tip_now = buffer.model_transform(skeleton, tip).translation;
            let (from, to) = (
                (tip_now - root_m.translation).normalize_or_zero(),
                (goal.target - root_m.translation).normalize_or_zero(),
            );
            if from != Vec3::ZERO && to != Vec3::ZERO {
                let arc = Quat::from_rotation_arc(from, to);
                Self::set_model_rotation(skeleton, buffer, root, arc * root_m.rotation);
            }
            if let Some(o) = goal.orientation {
                Self::set_model_rotation(skeleton, buffer, tip, o);
            }
        }
        Ok(report)
    }
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

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        self.run(skeleton, buffer).map(StageReport::Custom)
    }
}
