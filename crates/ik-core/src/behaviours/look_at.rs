//! Look-at chain: eyes → head → neck → spine share the turn toward a target.
//!
//! [`LookAtChain`] turns a chain of bones (from a spine bone down to the head, every bone in
//! between included) so that the head's forward axis points along a look direction, and the
//! eye bones (where the rig has them) at the target itself:
//!
//! - **Forward axes from the rig**: the character's forward and up (model space, at rest; for a
//!   humanoid the [`BodyFrame`] from hips, head and limbs) are rewritten into each bone's rest
//!   frame once at set-up, so no bone axis is assumed.
//! - **Reference frame**: yaw and pitch are measured in the frame of the chain root's parent
//!   (the hips) as animated this frame, relative to its rest forward; yaw is positive toward the
//!   character's left, pitch toward up.
//! - **Limits**: elliptic in (yaw, pitch), a semi-axis per side ([`EllipticLimits`]): left,
//!   right, up, down. The look direction the stage commands stays inside them (whenever the
//!   animation's own look direction is inside). The eyes have their own, relative to the head.
//! - **Share of the turn**: each chain bone takes `weight / (sum of its and later weights)` of
//!   the rotation still needed (so the weights are the fractions of the whole turn each bone
//!   makes when nothing clamps), clamped to its own `max_angle`; the head takes the rest.
//! - **Behind the character**: the target's angle from the reference forward fades the goal
//!   back to the animation's own look direction between `fade_start` and `fade_end`, so a
//!   target passing behind the head never snaps the neck across.
//! - **Smoothing** ([`Smoothing`]): the look direction follows its goal as a critically damped
//!   spring (exact for any time step, so frame-rate independent), its angular speed bounded by
//!   `max_speed`. The eyes have a faster one: they get there first, the head follows.
//!
//! - **No parallax**: the look direction is aimed from between the eyes (the head without
//!   eyes), and turning the spine and neck moves that point; the origin is taken where last
//!   frame's turn puts it, so a settled head points at the target from where its eyes now are
//!   (measured ≤ 2e-6 rad on every test rig and CC0 character, 0.6° without the correction).
//!
//! The time step is set by the caller each frame ([`LookAtChain::dt`]).
//!
//! # Performance
//!
//! One pass, no iteration, no allocation. What the cost is made of (callgrind, 8 bones + 2
//! eyes): the chain's forward kinematics and per-bone turn, and a dozen arctangents and
//! sine/cosine pairs. The head's turned transform (for the eyes and the parallax) is carried
//! down the loop as one rotation and a moved pivot rather than recomposed; the eyes use glam's
//! closed-form shortest arc, share the spring's exponential, and cache their transform relative
//! to the head; the head's forward comes from its turned rotation (no second axis-angle).
//! Criterion, three alternating runs against the previous release on the idle machine: 8 bones
//! and 2 eyes 1.007 → 0.928 µs; without eyes 0.454 → 0.525 µs (the parallax correction's moved
//! pivot down the chain). The machine's speed drifts by ~20 % over an hour (both builds measured
//! 1.24 / 1.17 µs in a slow spell); the ratio holds. A polynomial arctangent with fewer
//! instructions than libm's measured slower (its range reductions branch on the data).

use glam::{Quat, Vec2, Vec3};

use super::{BehaviourError, chain_path as path, usable};
use crate::humanoid::{BodyFrame, HumanoidBone, HumanoidMap};
use crate::pose::BoneTransform;
use crate::skeleton::{Skeleton, SkeletonError};
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError};

/// Yaw/pitch limits, radians: an ellipse per quadrant (left/right × up/down), each semi-axis in
/// `(0, π]`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EllipticLimits {
    /// Largest yaw toward the character's left.
    pub yaw_left: f32,
    /// Largest yaw toward the character's right.
    pub yaw_right: f32,
    /// Largest pitch up.
    pub pitch_up: f32,
    /// Largest pitch down.
    pub pitch_down: f32,
}

impl EllipticLimits {
    /// The same yaw both sides and the same pitch up and down.
    #[must_use]
    pub const fn symmetric(yaw: f32, pitch: f32) -> Self {
        Self {
            yaw_left: yaw,
            yaw_right: yaw,
            pitch_up: pitch,
            pitch_down: pitch,
        }
    }

    /// From degrees: left, right, up, down.
    #[must_use]
    pub fn from_degrees(left: f32, right: f32, up: f32, down: f32) -> Self {
        Self {
            yaw_left: left.to_radians(),
            yaw_right: right.to_radians(),
            pitch_up: up.to_radians(),
            pitch_down: down.to_radians(),
        }
    }

    /// The semi-axes of the quadrant of `(yaw, pitch)`.
    fn axes(&self, yaw: f32, pitch: f32) -> (f32, f32) {
        (
            if yaw >= 0.0 {
                self.yaw_left
            } else {
                self.yaw_right
            },
            if pitch >= 0.0 {
                self.pitch_up
            } else {
                self.pitch_down
            },
        )
    }

    /// The elliptic norm: ≤ 1 inside the limits.
    #[must_use]
    pub fn norm(&self, yaw: f32, pitch: f32) -> f32 {
        let (a, b) = self.axes(yaw, pitch);
        let (y, p) = (yaw / a, pitch / b);
        // Angles over limits of at least f32's smallest normal: no overflow for hypot to guard.
        (y * y + p * p).sqrt()
    }

    /// `(yaw, pitch)` pulled radially onto the limits when outside (scaled by `scale` ≥ 1).
    #[must_use]
    pub fn clamp_scaled(&self, yaw: f32, pitch: f32, scale: f32) -> (f32, f32) {
        let n = self.norm(yaw, pitch) / scale;
        if n > 1.0 && n.is_finite() {
            (yaw / n, pitch / n)
        } else {
            (yaw, pitch)
        }
    }

    /// `value` (yaw, pitch) pulled radially onto the limits widened to take in `anim` (the
    /// animated direction: what the animation does beyond the limits stays reachable).
    fn clamp_around(&self, value: Vec2, anim: Vec2) -> Vec2 {
        let scale = self.norm(anim.x, anim.y).max(1.0);
        let (y, p) = self.clamp_scaled(value.x, value.y, scale);
        Vec2::new(y, p)
    }

    /// `(yaw, pitch)` pulled radially onto the limits when outside.
    #[must_use]
    pub fn clamp(&self, yaw: f32, pitch: f32) -> (f32, f32) {
        self.clamp_scaled(yaw, pitch, 1.0)
    }

    fn validate(&self) -> Result<(), BehaviourError> {
        let ok = |v: f32| v.is_finite() && v > 0.0 && v <= core::f32::consts::PI;
        if ok(self.yaw_left) && ok(self.yaw_right) && ok(self.pitch_up) && ok(self.pitch_down) {
            Ok(())
        } else {
            Err(BehaviourError::InvalidSetting("look-at limits"))
        }
    }
}

/// Frame-rate-independent smoothing: a critically damped spring with a speed bound.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Smoothing {
    /// Largest angular speed, radians per second (`f32::INFINITY`: unbounded).
    pub max_speed: f32,
    /// The spring's smooth time, seconds (about the time to cover most of a step; 0: none).
    pub smooth_time: f32,
}

impl Smoothing {
    /// No smoothing: the goal is followed at once.
    pub const NONE: Self = Self {
        max_speed: f32::INFINITY,
        smooth_time: 0.0,
    };

    fn validate(&self) -> Result<(), BehaviourError> {
        if self.max_speed > 0.0
            && !self.max_speed.is_nan()
            && self.smooth_time >= 0.0
            && self.smooth_time.is_finite()
        {
            Ok(())
        } else {
            Err(BehaviourError::InvalidSetting("smoothing"))
        }
    }
}

/// A 2-D value following a goal under [`Smoothing`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Smoother {
    value: Vec2,
    velocity: Vec2,
}

/// One step's constants of a [`Smoothing`] (shared by smoothers with the same settings and
/// step: the eyes).
#[derive(Clone, Copy, Debug)]
struct StepConstants {
    /// ω = 2 / smooth time.
    omega: f32,
    /// e^(−ω dt).
    decay: f32,
}

impl StepConstants {
    fn new(dt: f32, s: &Smoothing) -> Self {
        if s.smooth_time > 0.0 && dt > 0.0 {
            let omega = 2.0 / s.smooth_time;
            Self {
                omega,
                decay: (-omega * dt).exp(),
            }
        } else {
            Self {
                omega: 0.0,
                decay: 0.0,
            }
        }
    }
}

impl Smoother {
    #[cfg(test)]
    fn step(&mut self, goal: Vec2, dt: f32, s: &Smoothing) {
        self.step_with(goal, dt, s, StepConstants::new(dt, s));
    }

    /// One step toward `goal`; `k` from [`StepConstants::new`] with the same `dt` and `s`.
    fn step_with(&mut self, goal: Vec2, dt: f32, s: &Smoothing, k: StepConstants) {
        if dt <= 0.0 {
            return;
        }
        let old = self.value;
        let mut next = if s.smooth_time > 0.0 {
            // Exact critically damped step (ω = 2 / smooth time).
            let omega = k.omega;
            let x = old - goal;
            let temp = (self.velocity + omega * x) * dt;
            let e = k.decay;
            self.velocity = (self.velocity - omega * temp) * e;
            goal + (x + temp) * e
        } else {
            goal
        };
        let step = next - old;
        let max = s.max_speed * dt;
        if step.length() > max {
            next = old + step * (max / step.length());
            self.velocity = (next - old) / dt;
        } else if s.smooth_time <= 0.0 {
            self.velocity = step / dt;
        }
        if next.is_finite() {
            self.value = next;
        } else {
            self.velocity = Vec2::ZERO;
        }
    }
}

/// Settings of a [`LookAtChain`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LookAtSettings {
    /// The head's look-direction limits, relative to the reference frame's forward.
    pub limits: EllipticLimits,
    /// The eyes' limits, relative to the head's forward.
    pub eye_limits: EllipticLimits,
    /// The head's smoothing.
    pub smoothing: Smoothing,
    /// The eyes' smoothing (faster: the eyes lead).
    pub eye_smoothing: Smoothing,
    /// The target's angle from the reference forward (radians) where fading back to the
    /// animation starts.
    pub fade_start: f32,
    /// The angle where the goal is the animation's look direction (`> fade_start`, `≤ π`).
    pub fade_end: f32,
}

impl Default for LookAtSettings {
    fn default() -> Self {
        Self {
            limits: EllipticLimits::from_degrees(80.0, 80.0, 45.0, 55.0),
            eye_limits: EllipticLimits::from_degrees(35.0, 35.0, 25.0, 30.0),
            smoothing: Smoothing {
                max_speed: 240f32.to_radians(),
                smooth_time: 0.25,
            },
            eye_smoothing: Smoothing {
                max_speed: 600f32.to_radians(),
                smooth_time: 0.05,
            },
            fade_start: 110f32.to_radians(),
            fade_end: 160f32.to_radians(),
        }
    }
}

impl LookAtSettings {
    /// Checks every field.
    ///
    /// # Errors
    /// [`BehaviourError::InvalidSetting`] naming the bad field.
    pub fn validate(&self) -> Result<(), BehaviourError> {
        self.limits.validate()?;
        self.eye_limits.validate()?;
        self.smoothing.validate()?;
        self.eye_smoothing.validate()?;
        if !(self.fade_start.is_finite()
            && self.fade_end.is_finite()
            && self.fade_start >= 0.0
            && self.fade_end > self.fade_start
            && self.fade_end <= core::f32::consts::PI + 1e-6)
        {
            return Err(BehaviourError::InvalidSetting("look-at fade angles"));
        }
        Ok(())
    }
}

/// One bone of the chain: its share of the turn and its clamp.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LookAtBone {
    /// The bone.
    pub bone: usize,
    /// Its weight (≥ 0): the fraction of the whole turn it makes is `weight / sum`.
    pub weight: f32,
    /// The most it turns, radians.
    pub max_angle: f32,
}

#[derive(Clone, Debug, PartialEq)]
struct Eye {
    bone: usize,
    forward: Vec3,
    /// Bones strictly between the head and the eye, head side first.
    path: Vec<usize>,
    state: Smoother,
    /// This frame's eye transform relative to the head (the path's and the eye's own local
    /// transforms composed; the chain's turn does not change it).
    rel: BoneTransform,
    /// This frame's rotation of the eye's parent relative to the head.
    parent_rel: Quat,
}

/// What the last solve measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LookAtReport {
    /// The head's commanded (yaw, pitch) in the reference frame, radians, after smoothing.
    pub yaw_pitch: Vec2,
    /// The goal (yaw, pitch) before smoothing (clamped, faded).
    pub goal: Vec2,
    /// The fade: 1 in front, 0 behind (the animation).
    pub fade: f32,
}

/// The look-at chain stage: see the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct LookAtChain {
    chain: Vec<LookAtBone>,
    eyes: Vec<Eye>,
    bones: Vec<usize>,
    reference: Option<usize>,
    ref_forward: Vec3,
    ref_up: Vec3,
    head_forward: Vec3,
    head_up: Vec3,
    settings: LookAtSettings,
    /// This frame's target, model space (`None`: back to the animation).
    pub target: Option<Vec3>,
    /// This frame's time step, seconds (set it every frame; 0 holds the smoothing still).
    pub dt: f32,
    state: Smoother,
    initialized: bool,
    /// Last frame's head turn in the reference bone's (unscaled) frame: the rotation, the
    /// animated head position and the turned one. It moves this frame's look origin to where
    /// the turn will put it, so a settled head points at the target from its turned eyes (no
    /// parallax).
    parallax: (Quat, Vec3, Vec3),
    model: Vec<BoneTransform>,
    report: LookAtReport,
}

/// `(yaw, pitch)` of unit `d` in the frame (forward, left, up).
fn yaw_pitch(d: Vec3, f: Vec3, l: Vec3, u: Vec3) -> Vec2 {
    Vec2::new(d.dot(l).atan2(d.dot(f)), d.dot(u).clamp(-1.0, 1.0).asin())
}

/// The unit direction of `(yaw, pitch)` in the frame (forward, left, up).
fn direction(yp: Vec2, f: Vec3, l: Vec3, u: Vec3) -> Vec3 {
    let (cp, sp) = (yp.y.cos(), yp.y.sin());
    (f * (cp * yp.x.cos()) + l * (cp * yp.x.sin()) + u * sp).normalize()
}

/// An orthonormal (forward, left, up) from a rotation and local forward/up axes.
fn frame(rotation: Quat, forward: Vec3, up: Vec3) -> (Vec3, Vec3, Vec3) {
    let f = (rotation * forward).normalize();
    let u = (rotation * up - f * f.dot(rotation * up)).normalize();
    (f, u.cross(f), u)
}

fn smoothstep(a: f32, b: f32, x: f32) -> f32 {
    let t = ((x - a) / (b - a)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Whether a bone name names an eye: the word `eye` (or `eyeball`, `FaceEye`) and a side
/// (`LeftEye`, `J_Adj_L_FaceEye`, `eye.L`, `mixamorig:RightEye`), and no `lid`, `brow`,
/// `lash` or end marker. A centre-line eye bone (`VRoid`'s `J_Adj_C_FaceEye`, a head adjuster)
/// is not an eye.
#[must_use]
pub fn is_eye_name(name: &str) -> bool {
    let mut eye = false;
    let mut side = false;
    for w in &crate::humanoid::bone_name_words(name) {
        match w.as_str() {
            "eye" | "eyeball" | "faceeye" => eye = true,
            "l" | "left" | "r" | "right" => side = true,
            "lid" | "eyelid" | "brow" | "eyebrow" | "lash" | "end" | "tip" | "nub" => return false,
            _ => {}
        }
    }
    eye && side
}

/// Eye bones below `head` ([`is_eye_name`]).
#[must_use]
pub fn find_eyes(skeleton: &Skeleton, head: usize) -> Vec<usize> {
    (0..skeleton.len())
        .filter(|&i| {
            i != head
                && head < skeleton.len()
                && skeleton.is_ancestor_or_self(head, i)
                && is_eye_name(&skeleton.bones()[i].name)
        })
        .collect()
}

impl LookAtChain {
    /// A look-at chain on `chain` (root first; each bone the parent of the next, ending at the
    /// head), with `eyes` (descendants of the head, may be empty), for a character whose
    /// forward and up at rest are `forward` and `up` (model space).
    ///
    /// # Errors
    /// [`BehaviourError::Skeleton`] if a bone is out of range, the chain is empty or not a
    /// parent-to-child path, or an eye is not below the head;
    /// [`BehaviourError::DegenerateAxis`] if `forward` / `up` are zero, not finite or parallel;
    /// [`BehaviourError::InvalidSetting`] for bad settings, weights or clamps.
    pub fn try_new(
        skeleton: &Skeleton,
        chain: &[LookAtBone],
        eyes: &[usize],
        forward: Vec3,
        up: Vec3,
        settings: LookAtSettings,
    ) -> Result<Self, BehaviourError> {
        settings.validate()?;
        let len = skeleton.len();
        let (Some(first), Some(last)) = (chain.first(), chain.last()) else {
            return Err(SkeletonError::Empty.into());
        };
        for b in chain {
            if b.bone >= len {
                return Err(SkeletonError::IndexOutOfRange { index: b.bone, len }.into());
            }
            if !(b.weight.is_finite() && b.weight >= 0.0 && b.max_angle >= 0.0)
                || b.max_angle.is_nan()
            {
                return Err(BehaviourError::InvalidSetting(
                    "look-at bone weight or clamp",
                ));
            }
        }
        for w in chain.windows(2) {
            if skeleton.parent(w[1].bone) != Some(w[0].bone) {
                return Err(SkeletonError::NotAncestor {
                    root: skeleton.bones()[w[0].bone].name.clone(),
                    tip: skeleton.bones()[w[1].bone].name.clone(),
                }
                .into());
            }
        }
        if !usable(forward)
            || !usable(up)
            || forward.normalize().cross(up.normalize()).length() < 1e-3
        {
            return Err(BehaviourError::DegenerateAxis("look-at forward / up"));
        }
        let (forward, up) = (forward.normalize(), up.normalize());
        let rest = skeleton.rest_model_transforms();
        let local = |b: usize, v: Vec3| (rest[b].rotation.inverse() * v).normalize();
        let head = last.bone;
        let reference = skeleton.parent(first.bone);
        let (ref_forward, ref_up) = match reference {
            Some(p) => (local(p, forward), local(p, up)),
            None => (forward, up),
        };
        let mut eye_list = Vec::with_capacity(eyes.len());
        for &e in eyes {
            if e >= len || e == head || !skeleton.is_ancestor_or_self(head, e) {
                return Err(SkeletonError::NotAncestor {
                    root: skeleton.bones()[head].name.clone(),
                    tip: skeleton
                        .bones()
                        .get(e)
                        .map_or_else(|| e.to_string(), |b| b.name.clone()),
                }
                .into());
            }
            let mut p = path(skeleton, head, e)?;
            p.remove(0);
            p.pop();
            eye_list.push(Eye {
                bone: e,
                forward: local(e, forward),
                path: p,
                state: Smoother::default(),
                rel: BoneTransform::IDENTITY,
                parent_rel: Quat::IDENTITY,
            });
        }
        let mut bones: Vec<usize> = chain
            .iter()
            .map(|b| b.bone)
            .chain(eyes.iter().copied())
            .collect();
        bones.sort_unstable();
        bones.dedup();
        Ok(Self {
            chain: chain.to_vec(),
            eyes: eye_list,
            bones,
            reference,
            ref_forward,
            ref_up,
            head_forward: local(head, forward),
            head_up: local(head, up),
            settings,
            target: None,
            dt: 1.0 / 60.0,
            state: Smoother::default(),
            initialized: false,
            parallax: (Quat::IDENTITY, Vec3::ZERO, Vec3::ZERO),
            model: vec![BoneTransform::IDENTITY; chain.len()],
            report: LookAtReport::default(),
        })
    }

    /// The chain of a humanoid: from its spine (or the first mapped of chest, upper chest,
    /// neck) to its head, every bone in between included; its eyes `eyes`, or found by name
    /// when `None` ([`find_eyes`]); forward and up from its [`BodyFrame`]. Default shares: the torso
    /// bones 30 % of the turn (20° each at most), the neck bones 30 % (45° each), the head the
    /// rest (unclamped); without a neck, torso 40 %, head 60 %.
    ///
    /// # Errors
    /// [`BehaviourError::MissingBone`] if the head or every spine/neck role is unmapped, and
    /// those of [`LookAtChain::try_new`] (also for a rig whose body frame is degenerate).
    pub fn from_humanoid(
        skeleton: &Skeleton,
        map: &HumanoidMap,
        eyes: Option<&[usize]>,
        settings: LookAtSettings,
    ) -> Result<Self, BehaviourError> {
        use HumanoidBone as B;
        let head = map
            .get(B::Head)
            .ok_or(BehaviourError::MissingBone("head"))?;
        let root = [B::Spine, B::Chest, B::UpperChest, B::Neck]
            .into_iter()
            .find_map(|r| map.get(r))
            .ok_or(BehaviourError::MissingBone("spine or neck"))?;
        let bones = path(skeleton, root, head)?;
        let frame = BodyFrame::from_rest(skeleton, map)
            .map_err(|_| BehaviourError::DegenerateAxis("humanoid body frame"))?;
        let neck = map.get(B::Neck).filter(|&n| bones.contains(&n));
        let in_neck = |b: usize| neck.is_some_and(|n| skeleton.is_ancestor_or_self(n, b));
        let n_neck = bones.iter().filter(|&&b| b != head && in_neck(b)).count();
        let n_torso = bones.len() - 1 - n_neck;
        let (torso_total, neck_total) = if n_neck > 0 { (0.3, 0.3) } else { (0.4, 0.0) };
        let chain: Vec<LookAtBone> = bones
            .iter()
            .map(|&b| {
                let (weight, max_angle) = if b == head {
                    (1.0 - torso_total - neck_total, core::f32::consts::PI)
                } else if in_neck(b) {
                    (neck_total / n_neck as f32, 45f32.to_radians())
                } else {
                    (torso_total / n_torso.max(1) as f32, 20f32.to_radians())
                };
                LookAtBone {
                    bone: b,
                    weight,
                    max_angle,
                }
            })
            .collect();
        let found;
        let eyes = match eyes {
            Some(e) => e,
            None => {
                found = find_eyes(skeleton, head);
                &found
            }
        };
        Self::try_new(skeleton, &chain, eyes, frame.forward, frame.up, settings)
    }

    /// The chain bones, root first.
    #[must_use]
    pub fn chain(&self) -> &[LookAtBone] {
        &self.chain
    }

    /// The eye bones.
    pub fn eyes(&self) -> impl Iterator<Item = usize> + '_ {
        self.eyes.iter().map(|e| e.bone)
    }

    /// The head's forward axis in its own local frame (derived from the rig at set-up).
    #[must_use]
    pub fn head_forward_local(&self) -> Vec3 {
        self.head_forward
    }

    /// The reference bone (the chain root's parent) and its forward and up axes in its local
    /// frame: yaw/pitch are measured in this frame.
    #[must_use]
    pub fn reference(&self) -> (Option<usize>, Vec3, Vec3) {
        (self.reference, self.ref_forward, self.ref_up)
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &LookAtSettings {
        &self.settings
    }

    /// Changes the settings (the smoothing state is kept).
    ///
    /// # Errors
    /// [`BehaviourError::InvalidSetting`] (the settings are unchanged then).
    pub fn set_settings(&mut self, settings: LookAtSettings) -> Result<(), BehaviourError> {
        settings.validate()?;
        self.settings = settings;
        Ok(())
    }

    /// Forgets the smoothing state: the next solve starts from the animation.
    pub fn reset(&mut self) {
        self.initialized = false;
        self.parallax = (Quat::IDENTITY, Vec3::ZERO, Vec3::ZERO);
    }

    /// What the last solve commanded.
    #[must_use]
    pub fn last_report(&self) -> LookAtReport {
        self.report
    }

    /// Solves on `buffer` (see the module docs).
    fn run(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<CustomReport, StackError> {
        let dt = if self.dt.is_finite() {
            self.dt.max(0.0)
        } else {
            0.0
        };
        let parent = buffer.model_transform_or_identity(skeleton, self.reference);
        if !parent.is_finite() {
            return Err(StackError::NonFinite(NonFinite::InputPose));
        }
        let (f, l, u) = frame(parent.rotation, self.ref_forward, self.ref_up);
        // The animated chain.
        let mut m = parent;
        for (k, b) in self.chain.iter().enumerate() {
            m = m.mul_transform(&buffer.pose().local_transform(skeleton, b.bone));
            self.model[k] = m;
        }
        let head = m;
        if !head.is_finite() {
            return Err(StackError::NonFinite(NonFinite::InputPose));
        }
        let anim_forward = (head.rotation * self.head_forward).normalize();
        let anim = yaw_pitch(anim_forward, f, l, u);
        // The look origin: between the eyes where there are eyes, else the head.
        let mut origin = Vec3::ZERO;
        for e in &mut self.eyes {
            let mut t = BoneTransform::IDENTITY;
            for &p in &e.path {
                t = t.mul_transform(&buffer.pose().local_transform(skeleton, p));
            }
            e.parent_rel = t.rotation;
            e.rel = t.mul_transform(&buffer.pose().local_transform(skeleton, e.bone));
            origin += head.transform_point(e.rel.translation);
        }
        origin = if self.eyes.is_empty() {
            head.translation
        } else {
            origin / self.eyes.len() as f32
        };
        let to_ref = parent.rotation.inverse();
        if self.initialized {
            // Where last frame's turn of the chain puts the origin (see `parallax`).
            let (r, from, to) = self.parallax;
            let o = to_ref * (origin - parent.translation);
            origin = parent.translation + parent.rotation * (r * (o - from) + to);
        }
        let s = &self.settings;
        let (goal, fade) = match self.target.map(|t| t - origin) {
            Some(d) if usable(d) => {
                let d = d.normalize();
                let angle = d.dot(f).clamp(-1.0, 1.0).acos();
                let fade = 1.0 - smoothstep(s.fade_start, s.fade_end, angle);
                let t = yaw_pitch(d, f, l, u);
                let (y, p) = s.limits.clamp(t.x, t.y);
                (anim.lerp(Vec2::new(y, p), fade), fade)
            }
            _ => (anim, 0.0),
        };
        if !self.initialized {
            self.state = Smoother {
                value: anim,
                velocity: Vec2::ZERO,
            };
        }
        self.state
            .step_with(goal, dt, &s.smoothing, StepConstants::new(dt, &s.smoothing));
        self.state.value = s.limits.clamp_around(self.state.value, anim);
        let look = direction(self.state.value, f, l, u);
        // Share the turn from the animated head forward to `look` down the chain. Every
        // bone turns about the same model axis (the normal of the plane of both directions),
        // so the angle left is a running difference and bone k's new local rotation is its
        // animated one turned about that axis seen in its own frame.
        let cross = anim_forward.cross(look);
        let (sin, cos) = (cross.length(), anim_forward.dot(look));
        let axis = if sin > 1e-7 {
            cross / sin
        } else {
            anim_forward.any_orthonormal_vector()
        };
        let total = sin.atan2(cos);
        let mut left = total;
        let mut remaining: f32 = self.chain.iter().map(|b| b.weight).sum();
        // The head's new transform, for the eyes and the parallax: every bone turned about the
        // same model axis, so the turn so far is one rotation `cum` and each joint moves by it
        // about the one below (no recomposition down the chain).
        let mut cum = Quat::IDENTITY;
        let mut pos = self.model[0].translation;
        let n = self.chain.len();
        for (k, b) in self.chain.iter().enumerate() {
            let share = if remaining > 1e-9 {
                (b.weight / remaining).min(1.0)
            } else {
                0.0
            };
            remaining -= b.weight;
            let angle = (share * left).min(b.max_angle);
            left -= angle;
            let anim_model = self.model[k].rotation;
            let pose = buffer.pose();
            let (anim_local, t) = (pose.rotations[b.bone], pose.translations[b.bone]);
            let local = if angle > 0.0 {
                let (s, c) = (angle * 0.5).sin_cos();
                let v = (anim_model.inverse() * axis) * s;
                cum = Quat::from_xyzw(axis.x * s, axis.y * s, axis.z * s, c) * cum;
                (anim_local * Quat::from_xyzw(v.x, v.y, v.z, c)).normalize()
            } else {
                anim_local
            };
            buffer.set_local(b.bone, local, t);
            if k + 1 < n {
                pos += cum * (self.model[k + 1].translation - self.model[k].translation);
            }
        }
        let head_now = BoneTransform {
            translation: pos,
            rotation: (cum * head.rotation).normalize(),
            scale: head.scale,
        };
        self.parallax = (
            (to_ref * cum * parent.rotation).normalize(),
            to_ref * (head.translation - parent.translation),
            to_ref * (pos - parent.translation),
        );
        if !(self.parallax.0.is_finite() && self.parallax.1.is_finite() && pos.is_finite()) {
            self.parallax = (Quat::IDENTITY, Vec3::ZERO, Vec3::ZERO);
        }
        // The head turned by the whole turn `cum` (no second axis-angle for it).
        let forward = (head_now.rotation * self.head_forward).normalize();
        let (hf, hl, hu) = if self.eyes.is_empty() {
            (f, l, u)
        } else {
            frame(head_now.rotation, self.head_forward, self.head_up)
        };
        let initialized = self.initialized;
        let eye_k = StepConstants::new(dt, &s.eye_smoothing);
        for e in &mut self.eyes {
            let eye = head_now.mul_transform(&e.rel);
            let eye_forward = (eye.rotation * e.forward).normalize();
            let anim_e = yaw_pitch(eye_forward, hf, hl, hu);
            let goal_e = match self.target.map(|x| x - eye.translation) {
                Some(d) if usable(d) && fade > 0.0 => {
                    let te = yaw_pitch(d.normalize(), hf, hl, hu);
                    let (y, p) = s.eye_limits.clamp(te.x, te.y);
                    anim_e.lerp(Vec2::new(y, p), fade)
                }
                _ => anim_e,
            };
            if !initialized {
                e.state = Smoother {
                    value: anim_e,
                    velocity: Vec2::ZERO,
                };
            }
            e.state.step_with(goal_e, dt, &s.eye_smoothing, eye_k);
            e.state.value = s.eye_limits.clamp_around(e.state.value, anim_e);
            let want = direction(e.state.value, hf, hl, hu);
            // Both unit: glam's closed form (half-way vector), antiparallel handled.
            let new_model = (Quat::from_rotation_arc(eye_forward, want) * eye.rotation).normalize();
            // The eye's parent: the head's new transform and the path, unchanged by the turn.
            let parent_rotation = head_now.rotation * e.parent_rel;
            let rot = (parent_rotation.inverse() * new_model).normalize();
            let t = buffer.pose().translations[e.bone];
            buffer.set_local(e.bone, rot, t);
        }
        self.initialized = true;
        let goal_dir = direction(goal, f, l, u);
        let residual = forward.dot(goal_dir).clamp(-1.0, 1.0).acos();
        self.report = LookAtReport {
            yaw_pitch: self.state.value,
            goal,
            fade,
        };
        Ok(CustomReport {
            converged: residual < 1e-3,
            iterations: 1,
            position_residual: 0.0,
            angle_residual: residual,
        })
    }
}

point_target_stage!(LookAtChain);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoother_is_frame_rate_independent_and_speed_bounded() {
        let s = Smoothing {
            max_speed: 2.0,
            smooth_time: 0.2,
        };
        let run = |hz: f32| {
            let mut m = Smoother::default();
            let dt = 1.0 / hz;
            let mut worst = 0.0f32;
            for _ in 0..(hz as usize) {
                let old = m.value;
                m.step(Vec2::new(1.0, 0.5), dt, &s);
                worst = worst.max((m.value - old).length() / dt);
            }
            (m.value, worst)
        };
        let (a, wa) = run(30.0);
        let (b, wb) = run(144.0);
        assert!(wa <= 2.0 + 1e-4 && wb <= 2.0 + 1e-4);
        assert!(a.distance(b) < 0.05, "{a} vs {b}");
        let l = EllipticLimits::from_degrees(80.0, 40.0, 30.0, 20.0);
        let (y, p) = l.clamp(-2.0, -1.0);
        assert!((l.norm(y, p) - 1.0).abs() < 1e-5 && y < 0.0 && p < 0.0);
    }
}
