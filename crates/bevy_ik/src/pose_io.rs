//! Moving data between the ECS and ik-core's plain arrays: the bones' current local
//! transforms into a [`Pose`], target/pole entities into model space, solved rotations back into
//! `Transform`s. No linear algebra beyond changing frames.

use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::ChildOf;
use bevy::ecs::system::{Query, SystemParam};
use bevy::math::{Quat, Vec3};
use bevy::transform::components::{GlobalTransform, Transform};
use bevy::transform::helper::TransformHelper;
use ik_core::BoneTransform;
use ik_core::skeleton::Bone;

use crate::error::IkError;

/// A target (or pole) expressed in the skeleton's model space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ModelTarget {
    /// Position in model space.
    pub position: Vec3,
    /// Rotation in model space.
    pub rotation: Quat,
}

/// The current (this frame) global transform of the model space a skeleton's root bone lives
/// in: its parent's, or the identity for a root without a parent.
pub(crate) fn model_space(
    helper: &TransformHelper,
    parent: Option<Entity>,
) -> Result<GlobalTransform, IkError> {
    match parent {
        None => Ok(GlobalTransform::IDENTITY),
        Some(p) => {
            let g = helper
                .compute_global_transform(p)
                .map_err(|_| IkError::MissingBoneEntity(p))?;
            if g.affine().is_finite() {
                Ok(g)
            } else {
                Err(IkError::NonFinitePose)
            }
        }
    }
}

/// Why a target could not be read: it is gone, or its transform is not finite.
pub(crate) enum TargetProblem {
    Missing,
    NonFinite,
}

/// What reading bones, targets and poles this frame needs: Bevy's [`TransformHelper`], with the
/// `ChildOf` and `Transform` queries for the shortcut in [`target_in_model_space`].
#[derive(SystemParam)]
pub(crate) struct CurrentTransforms<'w, 's> {
    pub(crate) helper: TransformHelper<'w, 's>,
    pub(crate) transforms: Query<'w, 's, &'static Transform>,
    /// A target's local transform and parent in one lookup.
    pub(crate) locals: Query<'w, 's, (&'static Transform, Option<&'static ChildOf>)>,
}

/// Reads target and pole entities for one character: [`CurrentTransforms`] and the
/// character's model frame.
pub(crate) struct TargetReader<'a, 'w, 's> {
    pub(crate) queries: &'a CurrentTransforms<'w, 's>,
    /// The entity whose global transform is the model space (`None`: the world).
    pub(crate) frame: Option<Entity>,
}

/// The current global transform of `entity` (from its and its ancestors' `Transform`s this
/// frame), expressed relative to `model` (the global transform of `reader.frame`).
///
/// A target parented to the model frame itself (as [`IkHumanoid`](crate::IkHumanoid)'s are) is
/// read from its own `Transform`: that *is* its model-space transform, so neither its global
/// transform nor the model's inverse is computed (the general path below, equal to rounding;
/// a crowd's gather spent most of its time there).
pub(crate) fn target_in_model_space(
    reader: &TargetReader<'_, '_, '_>,
    model: &GlobalTransform,
    entity: Entity,
) -> Result<ModelTarget, TargetProblem> {
    let q = reader.queries;
    if let Some(frame) = reader.frame
        && let Ok((t, Some(parent))) = q.locals.get(entity)
        && parent.parent() == frame
    {
        let rotation = t.rotation.normalize();
        if !(t.translation.is_finite() && rotation.is_finite() && t.scale.is_finite()) {
            return Err(TargetProblem::NonFinite);
        }
        return Ok(ModelTarget {
            position: t.translation,
            rotation,
        });
    }
    let global = q
        .helper
        .compute_global_transform(entity)
        .map_err(|_| TargetProblem::Missing)?;
    if !global.affine().is_finite() {
        return Err(TargetProblem::NonFinite);
    }
    let local = global.reparented_to(model);
    if !(local.translation.is_finite() && local.rotation.is_finite()) {
        return Err(TargetProblem::NonFinite);
    }
    Ok(ModelTarget {
        position: local.translation,
        rotation: local.rotation.normalize(),
    })
}

/// An ik-core bone from an entity's current `Transform` (its rest transform for the solver).
pub(crate) fn bone_from_transform(name: String, parent: Option<usize>, t: &Transform) -> Bone {
    Bone::new(
        name,
        parent,
        BoneTransform {
            translation: t.translation,
            rotation: t.rotation,
            scale: t.scale,
        },
    )
}
