//! Poses: the per-bone local rotations and translations a solver reads and writes, and the
//! translation–rotation–scale transform ([`BoneTransform`]) used for rest data and forward kinematics.

use core::ops::Mul;

use glam::{Affine3A, Quat, Vec3};

use crate::skeleton::{MAX_COORDINATE, Skeleton, SkeletonError};

/// How far from 1 the length of a pose rotation may be for [`Pose::validate`].
pub const UNIT_ROTATION_TOLERANCE: f32 = 1e-3;

/// A translation, rotation and scale, composed like Bevy's `Transform`.
///
/// Used for a bone's rest transform (relative to its parent) and for model-space transforms
/// produced by forward kinematics. Composition follows Bevy's `Transform::mul_transform`, so the
/// results agree with Bevy's `GlobalTransform` whenever scales are uniform (non-uniform scale
/// with rotation produces shear, which neither a TRS nor an IK solver can represent).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BoneTransform {
    /// Translation relative to the parent.
    pub translation: Vec3,
    /// Rotation relative to the parent.
    pub rotation: Quat,
    /// Scale relative to the parent.
    pub scale: Vec3,
}

impl Default for BoneTransform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl BoneTransform {
    /// The identity transform.
    pub const IDENTITY: Self = Self {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
        scale: Vec3::ONE,
    };

    /// A pure translation.
    #[must_use]
    pub const fn from_translation(translation: Vec3) -> Self {
        Self {
            translation,
            ..Self::IDENTITY
        }
    }

    /// A pure rotation.
    #[must_use]
    pub const fn from_rotation(rotation: Quat) -> Self {
        Self {
            rotation,
            ..Self::IDENTITY
        }
    }

    /// A translation and a rotation with unit scale.
    #[must_use]
    pub const fn from_translation_rotation(translation: Vec3, rotation: Quat) -> Self {
        Self {
            translation,
            rotation,
            scale: Vec3::ONE,
        }
    }

    /// Composes `self * child`: `child` is expressed in `self`'s frame.
    #[inline]
    #[must_use]
    pub fn mul_transform(&self, child: &Self) -> Self {
        Self {
            translation: self.transform_point(child.translation),
            rotation: self.rotation * child.rotation,
            scale: self.scale * child.scale,
        }
    }

    /// Maps a point from this transform's local space to its parent space.
    #[inline]
    #[must_use]
    pub fn transform_point(&self, point: Vec3) -> Vec3 {
        self.translation + self.rotation * (self.scale * point)
    }

    /// Maps a direction (no translation, no scale) to the parent space.
    #[inline]
    #[must_use]
    pub fn transform_vector(&self, vector: Vec3) -> Vec3 {
        self.rotation * vector
    }

    /// The inverse transform, exact for uniform scale.
    #[must_use]
    pub fn inverse(&self) -> Self {
        let rotation = self.rotation.inverse();
        let scale = self.scale.recip();
        Self {
            translation: rotation * (-self.translation) * scale,
            rotation,
            scale,
        }
    }

    /// Whether every component is finite.
    #[must_use]
    pub fn is_finite(&self) -> bool {
        self.translation.is_finite() && self.rotation.is_finite() && self.scale.is_finite()
    }

    /// The equivalent affine matrix.
    #[must_use]
    pub fn to_affine(&self) -> Affine3A {
        Affine3A::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }
}

impl Mul for BoneTransform {
    type Output = Self;
    #[inline]
    fn mul(self, rhs: Self) -> Self {
        self.mul_transform(&rhs)
    }
}

/// The animated state of a skeleton: a local rotation and translation per bone, parallel to the
/// skeleton's bone array (scale is taken from the rest transform).
///
/// Solvers read the incoming (animated) pose and write the solved one in place. Translations
/// normally equal the rest translations; solvers only change them for a movable root or slider
/// joints, so bone lengths are preserved.
#[derive(Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pose {
    /// Local rotation of each bone relative to its parent.
    pub rotations: Vec<Quat>,
    /// Local translation of each bone relative to its parent.
    pub translations: Vec<Vec3>,
}

impl Pose {
    /// The rest pose of `skeleton`.
    #[must_use]
    pub fn from_rest(skeleton: &Skeleton) -> Self {
        Self {
            rotations: skeleton.bones().iter().map(|b| b.rest.rotation).collect(),
            translations: skeleton
                .bones()
                .iter()
                .map(|b| b.rest.translation)
                .collect(),
        }
    }

    /// Number of bones in the pose.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rotations.len()
    }

    /// Whether the pose has no bones.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rotations.is_empty()
    }

    /// The translation of bone 0 (the skeleton root).
    ///
    /// # Panics
    /// If the pose is empty.
    #[must_use]
    pub fn root_translation(&self) -> Vec3 {
        self.translations[0]
    }

    /// Sets the translation of bone 0 (the skeleton root).
    ///
    /// # Panics
    /// If the pose is empty.
    pub fn set_root_translation(&mut self, translation: Vec3) {
        self.translations[0] = translation;
    }

    /// Bone `index`'s local transform in this pose (scale from the rest transform).
    ///
    /// # Panics
    /// If `index` is out of range for the pose or the skeleton.
    #[inline]
    #[must_use]
    pub fn local_transform(&self, skeleton: &Skeleton, index: usize) -> BoneTransform {
        self.local_scaled(index, skeleton.bones()[index].rest.scale)
    }

    /// Bone `index`'s local transform in this pose with `scale` (a solver's cached rest
    /// scale).
    #[inline]
    pub(crate) fn local_scaled(&self, index: usize, scale: Vec3) -> BoneTransform {
        BoneTransform {
            translation: self.translations[index],
            rotation: self.rotations[index],
            scale,
        }
    }

    /// Whether every rotation and translation is finite.
    #[must_use]
    pub fn is_finite(&self) -> bool {
        self.rotations.iter().all(|q| q.is_finite())
            && self.translations.iter().all(|t| t.is_finite())
    }

    /// Copies `other` into `self`, reusing the allocation.
    pub fn copy_from(&mut self, other: &Self) {
        self.rotations.clone_from(&other.rotations);
        self.translations.clone_from(&other.translations);
    }

    /// Checks that the pose has one entry per bone of `skeleton`, is finite, has unit
    /// rotations and translations within [`MAX_COORDINATE`].
    ///
    /// A rotation counts as unit when its length is within [`UNIT_ROTATION_TOLERANCE`] of 1:
    /// the drift of normalised quaternions after some arithmetic passes; a zero, tiny or
    /// arbitrarily scaled quaternion (which would scale bone offsets in forward kinematics)
    /// does not. Normalise rotations you build by hand (`Quat::normalize`) before solving.
    ///
    /// # Errors
    /// [`SkeletonError::PoseLengthMismatch`], [`SkeletonError::NonFinitePose`] (a NaN or
    /// infinite component, or a translation component beyond ±[`MAX_COORDINATE`]) or
    /// [`SkeletonError::NonUnitRotation`].
    pub fn validate(&self, skeleton: &Skeleton) -> Result<(), SkeletonError> {
        if self.rotations.len() != skeleton.len() || self.translations.len() != skeleton.len() {
            return Err(SkeletonError::PoseLengthMismatch {
                expected: skeleton.len(),
                found: self.rotations.len().min(self.translations.len()),
            });
        }
        for (i, (q, t)) in self.rotations.iter().zip(&self.translations).enumerate() {
            if !q.is_finite() || !t.is_finite() || t.abs().max_element() > MAX_COORDINATE {
                return Err(SkeletonError::NonFinitePose {
                    bone: skeleton.bones()[i].name.clone(),
                });
            }
            let length = q.length();
            if !length.is_finite() || (length - 1.0).abs() > UNIT_ROTATION_TOLERANCE {
                return Err(SkeletonError::NonUnitRotation {
                    bone: skeleton.bones()[i].name.clone(),
                    length,
                });
            }
        }
        Ok(())
    }

    /// Blends every bone toward `other` by `t` (0 = `self`, 1 = `other`): rotations by
    /// shortest-path slerp, translations linearly.
    pub fn blend_toward(&mut self, other: &Self, t: f32) {
        let t = t.clamp(0.0, 1.0);
        for (q, o) in self.rotations.iter_mut().zip(&other.rotations) {
            *q = q.slerp(*o, t);
        }
        for (p, o) in self.translations.iter_mut().zip(&other.translations) {
            *p = p.lerp(*o, t);
        }
    }
}
