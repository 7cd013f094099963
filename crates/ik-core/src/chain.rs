//! Chain IK: FABRIK and CCD over a chain of any length (tested from 2 to 64 bones), with
//! per-joint limits, an optional pole and an optional tip orientation — tails, tentacles,
//! necks, ropes (Godot's `FABRIK3D` / `CCDIK3D`, UE's FABRIK node, Final IK's `CCDIK` /
//! `FABRIK`).
//!
//! The effector is the tip bone's origin; the chain's root stays where its parent puts it.
//! Each iteration:
//!
//! - **FABRIK** (Aristidou & Lasenby 2011): the joint positions are pulled from the tip to the
//!   target (backward pass) and back to the root (forward pass), each segment keeping its
//!   length; the bones are then turned, root first, to point at the new positions.
//! - **CCD**: from the bone before the tip up to the root, each bone is turned by the shortest
//!   arc that points its tip-ward direction at the target.
//!
//! Turning a bone is always the same operation: the shortest arc from the direction it points
//! in (toward the next joint, from the rest offset with the bone's scale: no bone axis is
//! assumed) to the wanted one, expressed as a local rotation and clamped at once to the bone's
//! [`JointLimit`] (relative to its rest rotation, [`crate::limits`]): the limits are a
//! constraint of every step, so the output is always within them.
//!
//! **Pole**: after each iteration's positions, every interior joint is swung about the line
//! through its two neighbours toward the pole (the classic FABRIK pole, also applied between
//! CCD iterations), which keeps the neighbours' distances. **Tip orientation**: after the
//! position solve the tip bone is turned to the goal rotation (clamped to its limit); it does
//! not move the effector. A [`JointLimit::Locked`] bone keeps its incoming rotation.
//!
//! **Stopping and determinism.** Iterations stop when the effector is within the tolerance
//! (checked before the first one, so a converged input is returned untouched) or after
//! [`ChainSettings::max_iterations`]. There is no randomness and no state: the same input gives
//! the same output bit for bit. Warm start is the stack's: with
//! [`StageSlot::warm_start`](crate::stack::StageSlot::warm_start) on, a still target's solve
//! starts from the last output, which is converged, so it returns at once and the output is
//! bit-identical frame after frame.
//!
//! ```
//! use glam::{Quat, Vec3};
//! use ik_core::chain::{ChainGoal, ChainIk, ChainIkStage, ChainSettings};
//! use ik_core::stack::{IkStack, Stage};
//! use ik_core::{Bone, BoneTransform, Skeleton};
//!
//! // A five-bone tail along -X (any axis works).
//! let mut bones = vec![Bone::new("root", None, BoneTransform::IDENTITY)];
//! for i in 1..6 {
//!     bones.push(Bone::new(format!("tail{i}"), Some(i - 1),
//!         BoneTransform::from_translation(Vec3::NEG_X * 0.2)));
//! }
//! let skeleton = Skeleton::try_new(bones)?;
//! let chain = skeleton.chain(1, 5)?;
//! let ik = ChainIk::try_new(&skeleton, &chain, &[], ChainSettings::default())?;
//! let mut stack = IkStack::new(skeleton);
//! let slot = stack.push(ChainIkStage::new(ik, ChainGoal::new(Vec3::ZERO)))?;
//! let target = Vec3::new(-0.5, 0.3, 0.1);
//! stack.slot_mut(slot).unwrap().stage.as_custom_mut::<ChainIkStage>().unwrap().goal.target =
//!     target;
//! stack.solve();
//! assert!(stack.model_transform(5).translation.distance(target) < 1e-3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::limits::{JointLimit, LimitError};
use crate::pose::{BoneTransform, Pose};
use crate::skeleton::{Chain, Skeleton};
use crate::stack::{CustomReport, PoseBuffer, StackError, Stage, StageReport};

/// Errors building a [`ChainIk`].
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ChainError {
    /// The chain has fewer than two bones.
    #[error("a chain needs at least two bones")]
    TooShort,
    /// The limits are neither empty nor one per bone.
    #[error("{given} limits for a chain of {bones} bones")]
    LimitCount {
        /// Limits given.
        given: usize,
        /// Bones in the chain.
        bones: usize,
    },
    /// A limit is malformed.
    #[error("bone {bone}'s limit: {source}")]
    Limit {
        /// Index in the chain.
        bone: usize,
        /// Why.
        source: LimitError,
    },
    /// A setting is out of range or not finite.
    #[error("invalid chain setting `{0}`")]
    InvalidSetting(&'static str),
    /// The chain does not match the skeleton (index out of range, or the skeleton changed).
    #[error("the chain does not match the skeleton")]
    SkeletonMismatch,
    /// The goal or the pose is not finite.
    #[error("the chain's goal or pose is not finite")]
    NonFinite,
}

/// The method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ChainMethod {
    /// Forward and backward reaching.
    #[default]
    Fabrik,
    /// Cyclic coordinate descent. Converges slowly on near-straight chains (targets near
    /// full reach from a straight pose: up to ~1000 iterations where FABRIK needs tens);
    /// with the default [`ChainSettings::max_iterations`] it stops short there and reports
    /// it ([`ChainReport::converged`] `false`).
    Ccd,
}

/// Tuning (parameters: may change every frame through [`ChainIk::set_settings`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChainSettings {
    /// FABRIK or CCD.
    pub method: ChainMethod,
    /// Iterations at most per solve (≥ 1).
    pub max_iterations: u32,
    /// The effector is on target within this distance, model units (> 0). `None`: derived,
    /// [`DEFAULT_TOLERANCE_FRACTION`] of the chain's rest length.
    pub tolerance: Option<f32>,
}

/// [`ChainSettings::tolerance`]'s default as a fraction of the chain's length: 0.1 mm on a
/// 1 m tail.
pub const DEFAULT_TOLERANCE_FRACTION: f32 = 1e-4;

impl Default for ChainSettings {
    fn default() -> Self {
        Self {
            method: ChainMethod::Fabrik,
            max_iterations: 32,
            tolerance: None,
        }
    }
}

/// A frame's goal (model space).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChainGoal {
    /// Where the tip bone's origin should be.
    pub target: Vec3,
    /// A point the chain's interior joints bend toward.
    pub pole: Option<Vec3>,
    /// The tip bone's model rotation.
    pub tip_rotation: Option<Quat>,
}

impl ChainGoal {
    /// A position goal with no pole and no tip orientation.
    #[must_use]
    pub const fn new(target: Vec3) -> Self {
        Self {
            target,
            pole: None,
            tip_rotation: None,
        }
    }

    fn is_finite(&self) -> bool {
        self.target.is_finite()
            && self.pole.is_none_or(Vec3::is_finite)
            && self
                .tip_rotation
                .is_none_or(|q| q.is_finite() && q.length() > 1e-6)
    }
}

/// What a solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ChainReport {
    /// The effector is within the tolerance of the target.
    pub converged: bool,
    /// Iterations run (0: the input was already on target).
    pub iterations: u32,
    /// Distance from the effector to the target, model units.
    pub position_error: f32,
    /// Angle between the tip's rotation and the goal's, radians (0 without one).
    pub angle_error: f32,
    /// The chain's length (sum of its segments): a target farther from the root is out of reach.
    pub reach: f32,
}

/// Reusable per-solve storage (no allocation per solve).
#[derive(Clone, Debug, Default)]
pub struct ChainScratch {
    model: Vec<BoneTransform>,
    points: Vec<Vec3>,
    lengths: Vec<f32>,
}

/// A FABRIK / CCD chain solver: see the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct ChainIk {
    bones: Vec<usize>,
    rest: Vec<(Quat, Vec3)>,
    scales: Vec<Vec3>,
    limits: Vec<JointLimit>,
    settings: ChainSettings,
    rest_length: f32,
}

impl ChainIk {
    /// A solver for `chain` (root to tip, at least two bones) on `skeleton`, with `limits`
    /// (empty: all free; else one per bone, root first).
    ///
    /// # Errors
    /// [`ChainError`] when the chain, a limit or a setting is malformed.
    pub fn try_new(
        skeleton: &Skeleton,
        chain: &Chain,
        limits: &[JointLimit],
        settings: ChainSettings,
    ) -> Result<Self, ChainError> {
        let bones = chain.bones().to_vec();
        if bones.len() < 2 {
            return Err(ChainError::TooShort);
        }
        if bones.iter().any(|&b| b >= skeleton.len()) {
            return Err(ChainError::SkeletonMismatch);
        }
        if !limits.is_empty() && limits.len() != bones.len() {
            return Err(ChainError::LimitCount {
                given: limits.len(),
                bones: bones.len(),
            });
        }
        for (i, l) in limits.iter().enumerate() {
            l.validate()
                .map_err(|source| ChainError::Limit { bone: i, source })?;
        }
        let rest_model = skeleton.rest_model_transforms();
        let rest_length = bones
            .windows(2)
            .map(|w| {
                rest_model[w[0]]
                    .translation
                    .distance(rest_model[w[1]].translation)
            })
            .sum();
        let ik = Self {
            rest: bones
                .iter()
                .map(|&b| {
                    let r = skeleton.bones()[b].rest;
                    (r.rotation, r.translation)
                })
                .collect(),
            scales: bones
                .iter()
                .map(|&b| skeleton.bones()[b].rest.scale)
                .collect(),
            limits: if limits.is_empty() {
                vec![JointLimit::Free; bones.len()]
            } else {
                limits.to_vec()
            },
            bones,
            settings,
            rest_length,
        };
        ik.check_settings(&settings)?;
        Ok(ik)
    }

    fn check_settings(&self, s: &ChainSettings) -> Result<(), ChainError> {
        if s.max_iterations == 0 {
            return Err(ChainError::InvalidSetting("max_iterations"));
        }
        if let Some(t) = s.tolerance
            && !(t > 0.0 && t.is_finite())
        {
            return Err(ChainError::InvalidSetting("tolerance"));
        }
        Ok(())
    }

    /// The bones, root first.
    #[must_use]
    pub fn bones(&self) -> &[usize] {
        &self.bones
    }

    /// The limits, one per bone.
    #[must_use]
    pub fn limits(&self) -> &[JointLimit] {
        &self.limits
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &ChainSettings {
        &self.settings
    }

    /// Changes the settings.
    ///
    /// # Errors
    /// [`ChainError::InvalidSetting`].
    pub fn set_settings(&mut self, settings: ChainSettings) -> Result<(), ChainError> {
        self.check_settings(&settings)?;
        self.settings = settings;
        Ok(())
    }

    /// The tolerance in use, model units.
    #[must_use]
    pub fn tolerance(&self) -> f32 {
        self.settings
            .tolerance
            .unwrap_or(DEFAULT_TOLERANCE_FRACTION * self.rest_length)
            .max(f32::MIN_POSITIVE)
    }

    /// Scratch sized for this chain.
    #[must_use]
    pub fn scratch(&self) -> ChainScratch {
        let n = self.bones.len();
        ChainScratch {
            model: Vec::with_capacity(n),
            points: Vec::with_capacity(n),
            lengths: Vec::with_capacity(n),
        }
    }

    /// Bone `i`'s local transform in `pose`.
    #[inline]
    fn local(&self, pose: &Pose, i: usize) -> BoneTransform {
        pose.local_scaled(self.bones[i], self.scales[i])
    }

    /// Forward kinematics of the chain from bone `from` on, under `parent`.
    fn fk(&self, pose: &Pose, parent: &BoneTransform, from: usize, model: &mut [BoneTransform]) {
        let mut up = if from == 0 { *parent } else { model[from - 1] };
        for (i, m) in model.iter_mut().enumerate().skip(from) {
            *m = up.mul_transform(&self.local(pose, i));
            up = *m;
        }
    }

    /// Turns bone `i` so that `from` (a model-space direction it now points along) points along
    /// `to`, clamped to its limit; returns whether it changed.
    fn turn(
        &self,
        pose: &mut Pose,
        model: &[BoneTransform],
        parent: &BoneTransform,
        i: usize,
        from: Vec3,
        to: Vec3,
    ) -> bool {
        // A locked joint keeps its incoming rotation (the clamp cannot know it).
        if self.limits[i] == JointLimit::Locked {
            return false;
        }
        let (Some(f), Some(t)) = (from.try_normalize(), to.try_normalize()) else {
            return false;
        };
        let arc = unit_arc(f, t);
        if arc == Quat::IDENTITY {
            return false;
        }
        let up = if i == 0 {
            parent.rotation
        } else {
            model[i - 1].rotation
        };
        let b = self.bones[i];
        let mut local = (up.inverse() * arc * model[i].rotation).normalize();
        let (rest_r, rest_t) = self.rest[i];
        let mut t_local = pose.translations[b];
        self.limits[i].clamp_valid(rest_r, rest_t, &mut local, &mut t_local);
        if !local.is_finite() {
            return false;
        }
        pose.rotations[b] = local;
        true
    }

    /// Solves in place: `pose`'s chain bones are turned; `parent` is the model transform of the
    /// chain root's parent (identity for a root bone).
    ///
    /// # Errors
    /// [`ChainError::SkeletonMismatch`] when `pose` is too small for the chain,
    /// [`ChainError::NonFinite`] when the goal, `parent` or the chain's pose is not finite.
    pub fn solve_with_parent(
        &self,
        pose: &mut Pose,
        goal: &ChainGoal,
        parent: &BoneTransform,
        scratch: &mut ChainScratch,
    ) -> Result<ChainReport, ChainError> {
        let n = self.bones.len();
        if self.bones.iter().any(|&b| b >= pose.len()) {
            return Err(ChainError::SkeletonMismatch);
        }
        if !goal.is_finite() || !parent.is_finite() {
            return Err(ChainError::NonFinite);
        }
        if self
            .bones
            .iter()
            .any(|&b| !pose.rotations[b].is_finite() || !pose.translations[b].is_finite())
        {
            return Err(ChainError::NonFinite);
        }
        let ChainScratch {
            model,
            points,
            lengths,
        } = scratch;
        model.clear();
        model.resize(n, BoneTransform::IDENTITY);
        self.fk(pose, parent, 0, model);
        lengths.clear();
        lengths.extend(
            model
                .windows(2)
                .map(|w| w[0].translation.distance(w[1].translation)),
        );
        let reach: f32 = lengths.iter().sum();
        let tolerance = self.tolerance();
        let target = goal.target;
        let mut iterations = 0;
        while iterations < self.settings.max_iterations {
            if model[n - 1].translation.distance(target) <= tolerance {
                break;
            }
            iterations += 1;
            match self.settings.method {
                ChainMethod::Fabrik => {
                    points.clear();
                    points.extend(model.iter().map(|m| m.translation));
                    let root = points[0];
                    points[n - 1] = target;
                    for i in (0..n - 1).rev() {
                        let d = (points[i] - points[i + 1])
                            .try_normalize()
                            .unwrap_or(model[i].translation - model[i + 1].translation);
                        let d = d.normalize_or_zero();
                        points[i] = points[i + 1] + d * lengths[i];
                    }
                    points[0] = root;
                    for i in 0..n - 1 {
                        let d = (points[i + 1] - points[i]).try_normalize().unwrap_or(
                            (model[i + 1].translation - model[i].translation).normalize_or_zero(),
                        );
                        points[i + 1] = points[i] + d * lengths[i];
                    }
                    if let Some(pole) = goal.pole {
                        swing_to_pole(points, pole);
                    }
                    self.aim_at_points(pose, parent, model, points);
                }
                ChainMethod::Ccd => {
                    for i in (0..n - 1).rev() {
                        let origin = model[i].translation;
                        let tip = model[n - 1].translation;
                        if self.turn(pose, model, parent, i, tip - origin, target - origin) {
                            self.fk(pose, parent, i, model);
                        }
                    }
                    if let Some(pole) = goal.pole {
                        points.clear();
                        points.extend(model.iter().map(|m| m.translation));
                        swing_to_pole(points, pole);
                        self.aim_at_points(pose, parent, model, points);
                    }
                }
            }
        }
        let mut angle_error = 0.0;
        if let Some(q) = goal.tip_rotation
            && self.limits[n - 1] != JointLimit::Locked
        {
            let q = q.normalize();
            let i = n - 1;
            let b = self.bones[i];
            let mut local = (model[i - 1].rotation.inverse() * q).normalize();
            let (rest_r, rest_t) = self.rest[i];
            let mut t_local = pose.translations[b];
            self.limits[i].clamp_valid(rest_r, rest_t, &mut local, &mut t_local);
            if local.is_finite() {
                pose.rotations[b] = local;
                self.fk(pose, parent, i, model);
            }
            angle_error = model[i].rotation.angle_between(q);
        }
        let position_error = model[n - 1].translation.distance(target);
        Ok(ChainReport {
            converged: position_error <= tolerance,
            iterations,
            position_error,
            angle_error,
            reach,
        })
    }

    /// Turns the bones, root first, to point at `points` (one per bone), each clamped to its
    /// limit; `model` is updated.
    fn aim_at_points(
        &self,
        pose: &mut Pose,
        parent: &BoneTransform,
        model: &mut [BoneTransform],
        points: &[Vec3],
    ) {
        let n = self.bones.len();
        for i in 0..n - 1 {
            self.fk(pose, parent, i, &mut model[..=i + 1]);
            let origin = model[i].translation;
            let from = model[i + 1].translation - origin;
            let to = points[i + 1] - origin;
            if self.turn(pose, model, parent, i, from, to) {
                // (The next bone hangs from this one's new transform.)
                self.fk(pose, parent, i, &mut model[..=i]);
            }
        }
        self.fk(pose, parent, n - 2, model);
    }
}

/// The shortest rotation from unit `from` to unit `to`, accurate for tiny angles (glam's
/// `Quat::from_rotation_arc` returns the identity below about 7e-4 rad, which stalls a long
/// chain a millimetre short of its target): `normalize(from × to, 1 + from · to)`, and a half
/// turn about any perpendicular axis for opposite vectors.
#[inline]
pub(crate) fn unit_arc(from: Vec3, to: Vec3) -> Quat {
    let w = 1.0 + from.dot(to);
    if w < 1e-6 {
        return Quat::from_axis_angle(from.any_orthonormal_vector(), core::f32::consts::PI);
    }
    let c = from.cross(to);
    Quat::from_xyzw(c.x, c.y, c.z, w).normalize()
}

/// Swings every interior point about the line through its neighbours toward `pole` (keeps the
/// distances to the neighbours).
fn swing_to_pole(points: &mut [Vec3], pole: Vec3) {
    for i in 1..points.len().saturating_sub(1) {
        let (a, b) = (points[i - 1], points[i + 1]);
        let Some(axis) = (b - a).try_normalize() else {
            continue;
        };
        // The point's and the pole's offsets from the axis line, in the plane across it.
        let across = |p: Vec3| {
            let d = p - a;
            d - axis * d.dot(axis)
        };
        let (from, to) = (across(points[i]), across(pole));
        let (Some(f), Some(t)) = (from.try_normalize(), to.try_normalize()) else {
            continue;
        };
        let q = unit_arc(f, t);
        points[i] = a + q * (points[i] - a);
    }
}

/// A chain IK stage: [`ChainIk`], its per-frame [`ChainGoal`] and its scratch.
#[derive(Clone, Debug)]
pub struct ChainIkStage {
    ik: ChainIk,
    /// This frame's goal (model space).
    pub goal: ChainGoal,
    /// Whether the host's target ([`Stage::set_target`]) also sets
    /// [`ChainGoal::tip_rotation`] (off: only the position).
    pub target_sets_tip_rotation: bool,
    scratch: ChainScratch,
    parent: Option<usize>,
    report: ChainReport,
}

impl ChainIkStage {
    /// A stage for `ik` aiming at `goal`. The chain's root parent is read from `ik`'s first
    /// bone when the stage first solves.
    #[must_use]
    pub fn new(ik: ChainIk, goal: ChainGoal) -> Self {
        Self {
            scratch: ik.scratch(),
            ik,
            goal,
            target_sets_tip_rotation: false,
            parent: None,
            report: ChainReport::default(),
        }
    }

    /// The solver.
    #[must_use]
    pub fn ik(&self) -> &ChainIk {
        &self.ik
    }

    /// The solver, e.g. to [`ChainIk::set_settings`].
    pub fn ik_mut(&mut self) -> &mut ChainIk {
        &mut self.ik
    }

    /// The last solve's report.
    #[must_use]
    pub fn report(&self) -> &ChainReport {
        &self.report
    }
}

impl Stage for ChainIkStage {
    fn bones(&self) -> &[usize] {
        &self.ik.bones
    }

    fn set_target(&mut self, target: Option<BoneTransform>) {
        if let Some(t) = target {
            self.goal.target = t.translation;
            if self.target_sets_tip_rotation {
                self.goal.tip_rotation = Some(t.rotation);
            }
        }
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let root = self.ik.bones[0];
        if root >= skeleton.len() {
            return Err(StackError::BoneOutOfRange {
                bone: root,
                len: skeleton.len(),
            });
        }
        self.parent = skeleton.parent(root);
        let parent = buffer.model_transform_or_identity(skeleton, self.parent);
        let result = self.ik.solve_with_parent(
            buffer.pose_unchecked_mut(),
            &self.goal,
            &parent,
            &mut self.scratch,
        );
        buffer.invalidate_from(root);
        let report = result?;
        self.report = report;
        Ok(CustomReport {
            converged: report.converged,
            iterations: report.iterations,
            position_residual: report.position_error,
            angle_residual: report.angle_error,
        }
        .into())
    }
}
