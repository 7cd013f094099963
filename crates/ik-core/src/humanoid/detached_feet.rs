//! [`DetachedFeet`]: the stage that carries a rig's detached IK-control foot bones along with
//! the legs.
//!
//! Rigs exported from Blender with IK controls (Quaternius packs among them) often parent the
//! foot bone to the root rather than to the lower leg: in Blender an IK constraint pulled the
//! leg to it. Exported, nothing ties the two together. ik-core's decision for such a rig:
//!
//! 1. the foot role is played by the lower leg's end bone (an existing `…_end` child of the
//!    lower leg, or one made by [`HumanoidMap::lower_leg_ends_for_detached_feet`] at the
//!    detached foot's rest position), so the leg chain ends where the foot is and every solver
//!    drives it like any other foot ([`MappingSource::LowerLegEnd`]);
//! 2. after the solve, this stage moves each detached foot bone so that it keeps the pose it
//!    had relative to that end bone at set-up (the rest pose): the foot mesh follows the leg
//!    and takes the foot goal's rotation.
//!
//! [`MappingSource::LowerLegEnd`]: super::MappingSource::LowerLegEnd
//! [`HumanoidMap::lower_leg_ends_for_detached_feet`]: super::HumanoidMap::lower_leg_ends_for_detached_feet

use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport};

use super::map::{HumanoidMap, MappingReport, MappingSource};

/// Moves detached foot bones to follow the lower legs' end bones (see the module docs).
///
/// A [`Stage`]: run it after the stage that solves the legs. Closed-form, no allocation
/// per solve.
#[derive(Clone, Debug, PartialEq)]
pub struct DetachedFeet {
    /// `[end, foot, end, foot, …]`: the bones the stage writes are the feet (odd entries);
    /// the ends are read.
    pairs: Vec<usize>,
    /// The feet alone (what [`Stage::bones`] returns).
    feet: Vec<usize>,
    /// Per pair: the foot's rest model transform in its end bone's rest frame.
    offsets: Vec<BoneTransform>,
}

impl DetachedFeet {
    /// The stage for `pairs` of `(end bone, detached foot bone)`: each foot keeps its rest
    /// pose relative to its end bone.
    ///
    /// # Errors
    /// [`StackError::BoneOutOfRange`] when a bone is out of range, [`StackError::BadBonePair`] when a foot is the root (it has no
    /// parent to express its pose in), a foot is an ancestor of its end bone (moving it would
    /// move the end), [`StackError::NonFinite`] when the rest pose is not finite.
    pub fn try_new(skeleton: &Skeleton, pairs: &[(usize, usize)]) -> Result<Self, StackError> {
        let rest = skeleton.rest_model_transforms();
        let mut out = Self {
            pairs: Vec::with_capacity(pairs.len() * 2),
            feet: Vec::with_capacity(pairs.len()),
            offsets: Vec::with_capacity(pairs.len()),
        };
        for &(end, foot) in pairs {
            if end >= skeleton.len() || foot >= skeleton.len() || end == foot {
                return Err(if end == foot {
                    StackError::BadBonePair {
                        bone: foot,
                        other: end,
                    }
                } else {
                    StackError::BoneOutOfRange {
                        bone: end.max(foot),
                        len: skeleton.len(),
                    }
                });
            }
            if skeleton.parent(foot).is_none() || skeleton.is_ancestor_or_self(foot, end) {
                return Err(StackError::BadBonePair {
                    bone: foot,
                    other: end,
                });
            }
            let offset = rest[end].inverse().mul_transform(&rest[foot]);
            if !offset.is_finite() {
                return Err(StackError::NonFinite(NonFinite::InputPose));
            }
            out.pairs.extend([end, foot]);
            out.feet.push(foot);
            out.offsets.push(offset);
        }
        Ok(out)
    }

    /// The `(end, detached foot)` pairs of a mapping: every foot role taken by a lower leg's
    /// end bone because the rig's foot is a detached control bone
    /// ([`MappingSource::LowerLegEnd`]). Empty for an ordinary rig.
    #[must_use]
    pub fn pairs_of(map: &HumanoidMap, report: &MappingReport) -> Vec<(usize, usize)> {
        report
            .mapped
            .iter()
            .filter_map(|m| match m.source {
                MappingSource::LowerLegEnd { detached_foot } if map.get(m.role) == Some(m.bone) => {
                    Some((m.bone, detached_foot))
                }
                _ => None,
            })
            .collect()
    }

    /// The `(end, detached foot)` pairs this stage moves.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.pairs.chunks_exact(2).map(|p| (p[0], p[1]))
    }
}

impl Stage for DetachedFeet {
    fn bones(&self) -> &[usize] {
        &self.feet
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let mut worst = 0.0f32;
        for (pair, offset) in self.pairs.chunks_exact(2).zip(&self.offsets) {
            let (end, foot) = (pair[0], pair[1]);
            let Some(parent) = skeleton.parent(foot) else {
                continue;
            };
            let want = buffer.model_transform(skeleton, end).mul_transform(offset);
            let local = buffer
                .model_transform(skeleton, parent)
                .inverse()
                .mul_transform(&want);
            // A degenerate input (a zero rotation, scales that overflow) leaves nothing to
            // normalise: an error, and the stack restores the feet.
            let rotation = local.rotation.normalize();
            if !(rotation.is_finite() && local.translation.is_finite()) {
                return Err(StackError::NonFinite(NonFinite::SolvedPose));
            }
            buffer.set_local(foot, rotation, local.translation);
            let got = buffer.model_transform(skeleton, foot);
            worst = worst.max(got.translation.distance(want.translation));
        }
        Ok(CustomReport {
            converged: true,
            iterations: 1,
            position_residual: worst,
            angle_residual: 0.0,
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skeleton::Bone;
    use glam::{Quat, Vec3};

    /// root → hip → knee → end, and a foot under the root at the end's rest position.
    fn rig() -> Skeleton {
        Skeleton::try_new(vec![
            Bone::new("root", None, BoneTransform::IDENTITY),
            Bone::new(
                "hip",
                Some(0),
                BoneTransform::from_translation(Vec3::new(0.1, 1.0, 0.0)),
            ),
            Bone::new(
                "knee",
                Some(1),
                BoneTransform::from_translation(Vec3::new(0.0, -0.5, 0.0)),
            ),
            Bone::new(
                "knee_end",
                Some(2),
                BoneTransform::from_translation(Vec3::new(0.0, -0.5, 0.0)),
            ),
            Bone::new(
                "foot",
                Some(0),
                BoneTransform::from_translation_rotation(
                    Vec3::new(0.1, 0.0, 0.0),
                    Quat::from_rotation_x(0.3),
                ),
            ),
        ])
        .unwrap()
    }

    #[test]
    fn the_foot_follows_its_end_bone_and_keeps_its_rest_offset() {
        let s = rig();
        let mut stage = DetachedFeet::try_new(&s, &[(3, 4)]).unwrap();
        let mut buffer = PoseBuffer::new(&s);
        // Bend the knee and turn the hip: the end bone moves and turns.
        let mut pose = s.rest_pose();
        pose.rotations[1] = Quat::from_rotation_z(0.4);
        pose.rotations[2] = Quat::from_rotation_x(-0.9);
        buffer.set_pose(&pose);
        let report = stage.solve(&s, &mut buffer).unwrap();
        let end = buffer.model_transform(&s, 3);
        let foot = buffer.model_transform(&s, 4);
        assert!(end.translation.distance(foot.translation) < 1e-5);
        let rest = s.rest_model_transforms();
        let want_rel = rest[3].rotation.inverse() * rest[4].rotation;
        let got_rel = end.rotation.inverse() * foot.rotation;
        assert!(want_rel.angle_between(got_rel) < 1e-4);
        assert!(report.position_residual() < 1e-5);
        // It moved: the end is no longer where the foot rested.
        assert!(end.translation.distance(rest[4].translation) > 0.1);
    }

    #[test]
    fn bad_pairs_are_errors() {
        let s = rig();
        assert!(DetachedFeet::try_new(&s, &[(3, 9)]).is_err());
        assert!(DetachedFeet::try_new(&s, &[(3, 3)]).is_err());
        // The foot above its end: moving it would move the end.
        assert!(DetachedFeet::try_new(&s, &[(3, 2)]).is_err());
        assert!(DetachedFeet::try_new(&s, &[(3, 0)]).is_err());
    }
}
