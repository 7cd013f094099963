//! [`PoseBuffer`]: one character's local pose and its model-space transforms, the latter
//! recomputed lazily from the first bone that changed since they were last computed.

use glam::{Quat, Vec3};

use crate::pose::{BoneTransform, Pose};
use crate::skeleton::Skeleton;

/// A character's pose buffer: the local pose every stage of an [`IkStack`](super::IkStack)
/// reads and writes in turn, and the model-space transforms of that pose.
///
/// The model transforms are kept valid for a prefix of the bones (in the skeleton's flat,
/// parents-first order). Writing a bone shortens the valid prefix to that bone; reading a model
/// transform extends it only as far as the bone read. So a stage that changes the left arm
/// and a later stage that needs the right shoulder's transform recompute only the bones
/// between them, and one that changes nothing costs nothing. The recomputation does the same
/// operations in the same order as [`Skeleton::model_transforms_into`], so its result is equal
/// bit for bit to a full forward-kinematics pass.
///
/// Built for one skeleton; every method taking a `&Skeleton` expects that skeleton (or one
/// with the same bone count, parents and rest scales).
#[derive(Clone, Debug, PartialEq)]
pub struct PoseBuffer {
    pose: Pose,
    model: Vec<BoneTransform>,
    /// `model[..valid]` is the forward kinematics of `pose`.
    valid: usize,
    /// Per bone, what forward kinematics needs of the skeleton: the parent's index
    /// ([`NO_PARENT`] for a root) and the rest scale. A compact copy (16 bytes a bone against a
    /// [`Bone`](crate::skeleton::Bone)'s name, rest transform and padding): in a crowd every
    /// character's buffer is cold in cache each frame, and the recomputation then reads six
    /// cache lines of it for a 21-bone humanoid instead of about thirty of the skeleton's.
    links: Vec<(u32, Vec3)>,
}

/// [`PoseBuffer`]'s parent index of a root bone.
const NO_PARENT: u32 = u32::MAX;

impl PoseBuffer {
    /// A buffer holding `skeleton`'s rest pose (model transforms not yet computed).
    #[must_use]
    pub fn new(skeleton: &Skeleton) -> Self {
        Self {
            pose: skeleton.rest_pose(),
            model: vec![BoneTransform::IDENTITY; skeleton.len()],
            valid: 0,
            links: skeleton
                .bones()
                .iter()
                .map(|b| {
                    let parent = b.parent.and_then(|p| u32::try_from(p).ok());
                    (parent.unwrap_or(NO_PARENT), b.rest.scale)
                })
                .collect(),
        }
    }

    /// Number of bones.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pose.len()
    }

    /// Whether the buffer has no bones.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pose.is_empty()
    }

    /// The local pose.
    #[must_use]
    pub fn pose(&self) -> &Pose {
        &self.pose
    }

    /// The local pose, for writing. Invalidates every model transform: prefer
    /// [`PoseBuffer::set_local`] or [`PoseBuffer::invalidate_from`] after writing, which keep
    /// the unchanged prefix.
    pub fn pose_mut(&mut self) -> &mut Pose {
        self.valid = 0;
        &mut self.pose
    }

    /// The local pose for a solver that writes it in place. The caller must call
    /// [`PoseBuffer::invalidate_from`] with the first bone it changed.
    pub(crate) fn pose_unchecked_mut(&mut self) -> &mut Pose {
        &mut self.pose
    }

    /// Sets bone `bone`'s local rotation and translation; the model transforms from `bone`
    /// on are recomputed when next read (nothing is invalidated if the values are equal).
    ///
    /// # Panics
    /// If `bone` is out of range.
    pub fn set_local(&mut self, bone: usize, rotation: Quat, translation: Vec3) {
        let (r, t) = (
            &mut self.pose.rotations[bone],
            &mut self.pose.translations[bone],
        );
        if *r != rotation || *t != translation {
            *r = rotation;
            *t = translation;
            self.valid = self.valid.min(bone);
        }
    }

    /// Copies `pose` in (same bone count expected), invalidating the model transforms from the
    /// first bone that differs.
    ///
    /// # Panics
    /// If `pose` has a different number of bones.
    pub fn set_pose(&mut self, pose: &Pose) {
        assert_eq!(pose.len(), self.len(), "pose does not match the buffer");
        for (i, (&r, &t)) in pose.rotations.iter().zip(&pose.translations).enumerate() {
            self.set_local(i, r, t);
        }
    }

    /// Marks the model transforms from `bone` on as stale (after writing the pose directly).
    pub fn invalidate_from(&mut self, bone: usize) {
        self.valid = self.valid.min(bone);
    }

    /// How many bones (a prefix, in flat order) have up-to-date model transforms.
    #[must_use]
    pub fn valid_prefix(&self) -> usize {
        self.valid
    }

    /// Bone `bone`'s model-space transform, recomputing the stale ones up to it.
    ///
    /// # Panics
    /// If `bone` is out of range or `skeleton` is not the buffer's.
    pub fn model_transform(&mut self, skeleton: &Skeleton, bone: usize) -> BoneTransform {
        self.update_to(skeleton, bone + 1);
        self.model[bone]
    }

    /// [`PoseBuffer::model_transform`] of `bone`, or the identity for `None` (the frame above
    /// the skeleton's root: a root bone's parent).
    ///
    /// # Panics
    /// As [`PoseBuffer::model_transform`].
    #[inline]
    pub(crate) fn model_transform_or_identity(
        &mut self,
        skeleton: &Skeleton,
        bone: Option<usize>,
    ) -> BoneTransform {
        bone.map_or(BoneTransform::IDENTITY, |b| {
            self.model_transform(skeleton, b)
        })
    }

    /// The model-space transforms of bones `..end` (`end` clamped to the bone count),
    /// recomputing the stale ones among them, and the local pose.
    pub(crate) fn model_prefix(
        &mut self,
        skeleton: &Skeleton,
        end: usize,
    ) -> (&[BoneTransform], &Pose) {
        let end = end.min(self.len());
        self.update_to(skeleton, end);
        (&self.model[..end], &self.pose)
    }

    /// Every bone's model-space transform, recomputing the stale ones.
    ///
    /// # Panics
    /// If `skeleton` is not the buffer's.
    pub fn model_transforms(&mut self, skeleton: &Skeleton) -> &[BoneTransform] {
        self.update_to(skeleton, self.len());
        &self.model
    }

    /// Recomputes `model[valid..end]`.
    fn update_to(&mut self, skeleton: &Skeleton, end: usize) {
        assert_eq!(
            skeleton.len(),
            self.len(),
            "skeleton does not match the buffer"
        );
        if end <= self.valid {
            return;
        }
        let start = self.valid;
        for (i, &(parent, scale)) in self.links[..end].iter().enumerate().skip(start) {
            // `Pose::local_transform`, with the rest scale from the compact copy.
            let local = BoneTransform {
                translation: self.pose.translations[i],
                rotation: self.pose.rotations[i],
                scale,
            };
            self.model[i] = match parent {
                NO_PARENT => local,
                p => self.model[p as usize].mul_transform(&local),
            };
        }
        self.valid = end;
    }
}
