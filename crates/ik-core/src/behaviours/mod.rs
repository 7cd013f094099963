//! Gameplay behaviours as stages of an [`IkStack`](crate::stack::IkStack): a look-at chain
//! ([`look_at`]), aiming a bone-local axis ([`aim`]), twist distribution over twist bones
//! ([`twist`]) and goals that move over time ([`motion`], usable on any stage's goal).
//!
//! Each is engine-agnostic, built once from a [`Skeleton`] (its axes derived
//! from the rest pose, never assumed), and implements
//! [`Stage`](crate::stack::Stage): push it with
//! [`IkStack::push`](crate::stack::IkStack::push), reach it each frame with
//! [`StageSlot::stage_mut`](crate::stack::StageSlot::stage_mut) to set its goal and the frame's
//! time step. None allocates per solve.
//!
//! | behaviour | Unreal | Unity Animation Rigging | Final IK | Godot 4.6 |
//! |---|---|---|---|---|
//! | [`look_at::LookAtChain`] | LookAt node | Multi-Aim (one per bone) | LookAtIK | LookAtModifier3D |
//! | [`aim::AimChain`] | Control Rig Aim | Multi-Aim | AimIK | — |
//! | [`twist::TwistDistribution`] | Twist Corrective | Twist Correction | twist relaxers | BoneTwistDisperser3D |
//! | [`motion::GoalMotion`] | — (blueprint timelines) | — | Interaction System | — |

/// [`Stage`](crate::stack::Stage) for a behaviour that turns bones toward a point (the
/// look-at and aim chains): its `bones`, the host's target as that point (its translation; a
/// non-finite one clears it) and its `run`, reported as a custom stage.
macro_rules! point_target_stage {
    ($ty:ty) => {
        impl crate::stack::Stage for $ty {
            fn bones(&self) -> &[usize] {
                &self.bones
            }

            fn set_target(&mut self, target: Option<crate::pose::BoneTransform>) {
                self.target = target.map(|t| t.translation).filter(|t| t.is_finite());
            }

            fn solve(
                &mut self,
                skeleton: &crate::skeleton::Skeleton,
                buffer: &mut crate::stack::PoseBuffer,
            ) -> Result<crate::stack::StageReport, crate::stack::StackError> {
                self.run(skeleton, buffer)
                    .map(crate::stack::StageReport::Custom)
            }
        }
    };
}

pub mod aim;
pub mod look_at;
pub mod motion;
pub mod twist;

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::rotation::RotationError;
use crate::skeleton::{Skeleton, SkeletonError};

/// Errors from setting up a behaviour (never from a per-frame solve, which reports instead).
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum BehaviourError {
    /// A bone index or chain is malformed.
    #[error(transparent)]
    Skeleton(#[from] SkeletonError),
    /// A rest direction could not be derived.
    #[error(transparent)]
    Rotation(#[from] RotationError),
    /// A setting is out of range or not finite.
    #[error("invalid setting `{0}`")]
    InvalidSetting(&'static str),
    /// A bone needed by the behaviour is missing (e.g. an unmapped humanoid role).
    #[error("missing bone: {0}")]
    MissingBone(&'static str),
    /// An axis is zero or not finite.
    #[error("the axis `{0}` is zero or not finite")]
    DegenerateAxis(&'static str),
}

/// `q` scaled to `fraction` of its angle (shortest path), as `slerp(IDENTITY, q, fraction)`.
#[inline]
pub(crate) fn scale_rotation(q: Quat, fraction: f32) -> Quat {
    let q = if q.w < 0.0 { -q } else { q };
    Quat::IDENTITY.slerp(q, fraction)
}

/// Whether a vector is finite and of length above `1e-9`.
#[inline]
pub(crate) fn usable(v: Vec3) -> bool {
    v.is_finite() && v.length_squared() > 1e-18
}

/// Bones from `root` down to `tip`, both included.
pub(crate) fn chain_path(
    skeleton: &Skeleton,
    root: usize,
    tip: usize,
) -> Result<Vec<usize>, BehaviourError> {
    let len = skeleton.len();
    for i in [root, tip] {
        if i >= len {
            return Err(SkeletonError::IndexOutOfRange { index: i, len }.into());
        }
    }
    if !skeleton.is_ancestor_or_self(root, tip) {
        return Err(SkeletonError::NotAncestor {
            root: skeleton.bones()[root].name.clone(),
            tip: skeleton.bones()[tip].name.clone(),
        }
        .into());
    }
    let mut out: Vec<usize> = skeleton.ancestors_inclusive(tip).collect();
    let at = out.iter().position(|&b| b == root).unwrap_or(out.len() - 1);
    out.truncate(at + 1);
    out.reverse();
    Ok(out)
}
