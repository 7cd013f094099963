//! The problems a character can have: recorded in its [`IkStatus`](crate::IkStatus) and logged
//! once, never a panic. While a character has a problem it keeps its animated pose.

use bevy::ecs::entity::Entity;
use bevy::reflect::prelude::*;
use thiserror::Error;

/// Why a limb or rig was not solved this frame (or could not be set up).
///
/// Core errors are kept as their message so the status stays reflectable and serialisable.
#[derive(Debug, Clone, PartialEq, Error, Reflect)]
#[reflect(Debug, PartialEq, Clone)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
#[non_exhaustive]
pub enum IkError {
    /// No bone with this name among the descendants searched (yet: glTF scenes appear later).
    #[error("no bone named `{0}` was found")]
    MissingBone(String),
    /// A bone entity was despawned or has no `Transform`.
    #[error("bone entity {0} does not exist or has no Transform")]
    MissingBoneEntity(Entity),
    /// The chain's root is not an ancestor of its middle and tip bones.
    #[error("the limb's bones are not one parent–child chain (root → mid → tip)")]
    NotAChain,
    /// The chain or skeleton was rejected by the core (zero-length bone, bad rest transform…).
    #[error("invalid chain: {0}")]
    InvalidChain(String),
    /// The limb or solver settings are out of range.
    #[error("invalid settings: {0}")]
    InvalidSettings(String),
    /// No target entity is set.
    #[error("no target entity is set")]
    NoTarget,
    /// The target entity was despawned or has no `Transform`.
    #[error("target entity {0} does not exist or has no Transform")]
    MissingTarget(Entity),
    /// The target's global transform is NaN or infinite.
    #[error("target entity {0} has a non-finite transform")]
    NonFiniteTarget(Entity),
    /// The pole entity was despawned or has no `Transform`.
    #[error("pole entity {0} does not exist or has no Transform")]
    MissingPole(Entity),
    /// The pole's global transform is NaN or infinite.
    #[error("pole entity {0} has a non-finite transform")]
    NonFinitePole(Entity),
    /// A bone's current local transform (or its ancestors') is NaN or infinite.
    #[error("the animated pose is not finite")]
    NonFinitePose,
    /// The solver rejected its input.
    #[error("solver error: {0}")]
    Solver(String),
}
