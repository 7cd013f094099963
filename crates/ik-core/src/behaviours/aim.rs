//! Aim: a bone-local axis (a gun barrel, a flashlight, a pointing finger) aims at a target by
//! distributing the rotation over a chain (spine → shoulder → hand), with an optional pole
//! (twist) axis.
//!
//! [`AimChain`] holds the aim ray in the tip bone's local frame: an origin (the muzzle) and a
//! direction (the barrel), both anywhere — the ray need not pass through any joint. That is
//! Final IK `AimIK`'s problem: turning a bone about its joint so the axis points at the target
//! moves the ray's origin, so turning by the shortest arc from the axis to the target leaves an
//! error that grows with the offset (and converges slowly when iterated: by about
//! `offset / distance` per pass). Here the first pass walks the chain root to tip, each bone
//! but the tip turning by its weight's share of the shortest arc from the current axis to the
//! direction from the current origin to the target; the tip then turns in closed form: the
//! point of the ray as far from the tip's joint as the target is turned onto the target, which
//! puts the target exactly on the ray. Later passes (only needed for the pole) refine at the
//! tip. A target closer to the tip's joint than the ray ever comes (inside the circle the
//! offset sweeps) cannot be aimed at: the ray's nearest point is used and the report says
//! unconverged.
//!
//! **Pole**: with [`AimChain::with_pole_axis`] (a tip-local axis across the aim axis, e.g. the
//! gun's top) and a model-space [`AimChain::pole`] direction (e.g. up), the tip first turns
//! about the aim axis so the pole axis leans toward the pole, by [`AimSettings::pole_weight`]
//! (fading out as the pole comes within 15° of the aim axis, where it means nothing), turning
//! about the line from its joint to the target, so the target stays on the ray.

use glam::{Quat, Vec3};

use super::{BehaviourError, chain_path, scale_rotation, usable};
use crate::pose::BoneTransform;
use crate::rotation::shortest_arc;
use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError};

/// Settings of an [`AimChain`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AimSettings {
    /// Passes over the chain at most.
    pub max_iterations: u32,
    /// Stop when the angle between the aim axis and the target is below this (radians).
    pub tolerance: f32,
    /// How much the pole turns the tip about the aim axis, `[0, 1]`.
    pub pole_weight: f32,
}

impl Default for AimSettings {
    fn default() -> Self {
        Self {
            max_iterations: 16,
            tolerance: 1e-4,
            pole_weight: 1.0,
        }
    }
}

impl AimSettings {
    fn validate(&self) -> Result<(), BehaviourError> {
        if self.max_iterations > 0
            && self.tolerance.is_finite()
            && self.tolerance >= 0.0
            && (0.0..=1.0).contains(&self.pole_weight)
        {
            Ok(())
        } else {
            Err(BehaviourError::InvalidSetting("aim settings"))
        }
    }
}

/// The angle between two directions, accurate near 0 (unlike `acos` of the dot product).
fn angle_between(a: Vec3, b: Vec3) -> f32 {
    a.cross(b).length().atan2(a.dot(b))
}

/// How firmly the pole holds: it fades out as the pole comes within about 15° of the aim
/// axis (where the twist it asks for is ill-defined), 1 beyond.
fn pole_strength(want_perp: Vec3, pole: Vec3) -> f32 {
    let sin = want_perp.length() / pole.length().max(1e-12);
    let t = ((sin - 0.05) / 0.2).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// The aim stage: see the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct AimChain {
    chain: Vec<usize>,
    weights: Vec<f32>,
    bones: Vec<usize>,
    axis: Vec3,
    origin: Vec3,
    pole_axis: Option<Vec3>,
    settings: AimSettings,
    /// This frame's target, model space (`None`: the stage leaves the pose alone).
    pub target: Option<Vec3>,
    /// This frame's pole direction, model space (`None`: no twist about the aim axis).
    pub pole: Option<Vec3>,
    model: Vec<BoneTransform>,
}

impl AimChain {
    /// Aims the ray (`origin`, `axis`) of bone `tip` (in its local frame) by turning the bones
    /// from `root` down to `tip`. `weights` (one per bone from `root` to `tip`, each in
    /// `[0, 1]`) is each bone's share per pass; `None`: rising linearly from `0.5 / n` at the
    /// root to 1 at the tip.
    ///
    /// # Errors
    /// [`BehaviourError::Skeleton`] if `root` is not an ancestor of `tip` or out of range;
    /// [`BehaviourError::DegenerateAxis`] for a zero or non-finite axis or a non-finite origin;
    /// [`BehaviourError::InvalidSetting`] for weights of the wrong length or range.
    pub fn try_new(
        skeleton: &Skeleton,
        root: usize,
        tip: usize,
        axis: Vec3,
        origin: Vec3,
        weights: Option<&[f32]>,
    ) -> Result<Self, BehaviourError> {
        let chain = chain_path(skeleton, root, tip)?;
        if !usable(axis) {
            return Err(BehaviourError::DegenerateAxis("aim axis"));
        }
        if !origin.is_finite() {
            return Err(BehaviourError::DegenerateAxis("aim origin"));
        }
        let n = chain.len();
        let weights = match weights {
            Some(w) => {
                if w.len() != n || w.iter().any(|x| !(0.0..=1.0).contains(x)) {
                    return Err(BehaviourError::InvalidSetting("aim weights"));
                }
                w.to_vec()
            }
            None => (0..n)
                .map(|k| {
                    if n == 1 {
                        1.0
                    } else {
                        let t = k as f32 / (n - 1) as f32;
                        0.5 / n as f32 + (1.0 - 0.5 / n as f32) * t * t
                    }
                })
                .collect(),
        };
        let mut bones = chain.clone();
        bones.sort_unstable();
        Ok(Self {
            model: vec![BoneTransform::IDENTITY; n],
            chain,
            weights,
            bones,
            axis: axis.normalize(),
            origin,
            pole_axis: None,
            settings: AimSettings::default(),
            target: None,
            pole: None,
        })
    }

    /// Sets the tip-local pole axis (made perpendicular to the aim axis).
    ///
    /// # Errors
    /// [`BehaviourError::DegenerateAxis`] if it is zero, not finite or along the aim axis.
    pub fn with_pole_axis(mut self, pole_axis: Vec3) -> Result<Self, BehaviourError> {
        let p = pole_axis - self.axis * self.axis.dot(pole_axis);
        if !usable(pole_axis) || p.length() < 1e-4 * pole_axis.length() {
            return Err(BehaviourError::DegenerateAxis("aim pole axis"));
        }
        self.pole_axis = Some(p.normalize());
        Ok(self)
    }

    /// Sets the settings.
    ///
    /// # Errors
    /// [`BehaviourError::InvalidSetting`] if out of range.
    pub fn with_settings(mut self, settings: AimSettings) -> Result<Self, BehaviourError> {
        self.set_settings(settings)?;
        Ok(self)
    }

    /// Changes the settings.
    ///
    /// # Errors
    /// [`BehaviourError::InvalidSetting`] if out of range (unchanged then).
    pub fn set_settings(&mut self, settings: AimSettings) -> Result<(), BehaviourError> {
        settings.validate()?;
        self.settings = settings;
        Ok(())
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &AimSettings {
        &self.settings
    }

    /// The chain, root first.
    #[must_use]
    pub fn chain(&self) -> &[usize] {
        &self.chain
    }

    /// The per-bone weights, root first.
    #[must_use]
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }

    /// The aim ray in the tip's local frame: (origin, unit axis).
    #[must_use]
    pub fn ray(&self) -> (Vec3, Vec3) {
        (self.origin, self.axis)
    }

    /// The aim ray in model space for a pose's tip transform: (origin, unit direction).
    #[must_use]
    pub fn model_ray(&self, tip: &BoneTransform) -> (Vec3, Vec3) {
        (
            tip.transform_point(self.origin),
            (tip.rotation * self.axis).normalize(),
        )
    }

    /// Recomputes the chain's model transforms from bone `from` on.
    fn forward_kinematics(
        &mut self,
        skeleton: &Skeleton,
        buffer: &PoseBuffer,
        parent: &BoneTransform,
        from: usize,
    ) {
        for k in from..self.chain.len() {
            let p = if k == 0 { *parent } else { self.model[k - 1] };
            self.model[k] =
                p.mul_transform(&buffer.pose().local_transform(skeleton, self.chain[k]));
        }
    }

    /// The aim error and the pole error (0 without a pole), radians.
    fn error(&self, target: Vec3) -> (f32, f32) {
        let tip = &self.model[self.chain.len() - 1];
        let (o, a) = self.model_ray(tip);
        let d = target - o;
        let aim = if usable(d) {
            angle_between(a, d)
        } else {
            core::f32::consts::PI
        };
        let pole = match (self.pole_axis, self.pole) {
            (Some(pa), Some(pole)) if self.settings.pole_weight >= 1.0 => {
                let have = tip.rotation * pa;
                let (have, want) = (have - a * a.dot(have), pole - a * a.dot(pole));
                if usable(have) && pole_strength(want, pole) >= 1.0 {
                    angle_between(have, want)
                } else {
                    0.0
                }
            }
            _ => 0.0,
        };
        (aim, pole)
    }

    /// The tip's turn about its joint that puts the target on the ray exactly (closed form),
    /// then about the joint–target line (which keeps the target on the ray) toward the pole.
    fn tip_turn(&self, target: Vec3) -> Quat {
        let tip = &self.model[self.chain.len() - 1];
        let joint = tip.translation;
        let offset = tip.rotation * (tip.scale * self.origin);
        let axis = (tip.rotation * self.axis).normalize();
        let v = target - joint;
        if !usable(v) {
            return Quat::IDENTITY;
        }
        // The point of the ray as far from the joint as the target is: turning it onto the
        // target aims the ray through the target. A target closer to the joint than the ray
        // ever comes cannot be aimed at: the nearest point is used.
        let b = offset.dot(axis);
        let disc = b * b - offset.length_squared() + v.length_squared();
        let t = -b + disc.max(0.0).sqrt();
        let p = offset + axis * t;
        let mut turn = if usable(p) {
            shortest_arc(p, v)
        } else {
            shortest_arc(axis, v)
        };
        if let (Some(pa), Some(pole)) = (self.pole_axis, self.pole)
            && self.settings.pole_weight > 0.0
        {
            let a = turn * axis;
            let have = turn * tip.rotation * pa;
            let (have, want) = (have - a * a.dot(have), pole - a * a.dot(pole));
            let strength = self.settings.pole_weight * pole_strength(want, pole);
            if usable(have) && strength > 0.0 {
                let beta = have.cross(want).dot(a).atan2(have.dot(want));
                let about = v.normalize();
                // The twist is measured about the aim axis and applied about the joint–target
                // line (nearly the same for a target far beyond the offset); the passes refine.
                let scale = about.dot(a).max(0.1);
                turn = Quat::from_axis_angle(about, strength * beta / scale) * turn;
            }
        }
        turn.normalize()
    }

    fn run(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<CustomReport, StackError> {
        let Some(target) = self.target else {
            return Ok(CustomReport {
                converged: true,
                iterations: 0,
                ..CustomReport::default()
            });
        };
        let parent = buffer.model_transform_or_identity(skeleton, skeleton.parent(self.chain[0]));
        self.forward_kinematics(skeleton, buffer, &parent, 0);
        if !parent.is_finite() || !self.model[self.chain.len() - 1].is_finite() {
            return Err(StackError::NonFinite(NonFinite::InputPose));
        }
        let last = self.chain.len() - 1;
        let (mut error, mut pole_error) = self.error(target);
        let mut iterations = 0;
        while (error > self.settings.tolerance || pole_error > self.settings.tolerance)
            && iterations < self.settings.max_iterations
        {
            iterations += 1;
            // The first pass shares the turn over the chain; later passes refine at the tip
            // only (turning the chain again would move the ray's origin by long levers).
            let first = if iterations == 1 { 0 } else { last };
            for k in first..self.chain.len() {
                let w = self.weights[k];
                if w <= 0.0 {
                    continue;
                }
                let bone = self.chain[k];
                let turn = if k == last {
                    self.tip_turn(target)
                } else {
                    let (o, a) = self.model_ray(&self.model[last]);
                    let d = target - o;
                    if usable(d) {
                        shortest_arc(a, d)
                    } else {
                        Quat::IDENTITY
                    }
                };
                let turn = scale_rotation(turn, w);
                let parent_rot = if k == 0 {
                    parent.rotation
                } else {
                    self.model[k - 1].rotation
                };
                let local = (parent_rot.inverse() * turn * self.model[k].rotation).normalize();
                let t = buffer.pose().translations[bone];
                buffer.set_local(bone, local, t);
                self.forward_kinematics(skeleton, buffer, &parent, k);
            }
            (error, pole_error) = self.error(target);
        }
        Ok(CustomReport {
            converged: error <= self.settings.tolerance.max(1e-6),
            iterations,
            position_residual: 0.0,
            angle_residual: error,
        })
    }
}

point_target_stage!(AimChain);
