//! The problems a character can have: recorded in its [`IkStatus`](crate::IkStatus) and logged
//! once, never a panic. While a character has a problem it keeps its animated pose.

use bevy::ecs::entity::Entity;
use bevy::reflect::prelude::*;
use ik_core::humanoid::HumanoidBone;
use ik_core::stack::StackError;
use thiserror::Error;

/// An ik-core error, typed: [`StackError`] (every core module's error converts into it), boxed
/// (errors are rare; a status stays small). Opaque to reflection; serialised as its message.
#[derive(Debug, Clone, PartialEq, Reflect)]
#[reflect(opaque)]
#[reflect(Debug, PartialEq, Clone)]
pub struct CoreError(pub Box<StackError>);

impl CoreError {
    /// The core error.
    #[must_use]
    pub fn get(&self) -> &StackError {
        &self.0
    }
}

impl core::fmt::Display for CoreError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

impl core::error::Error for CoreError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&*self.0)
    }
}

#[cfg(feature = "serialize")]
impl serde::Serialize for CoreError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

macro_rules! core_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for CoreError {
            fn from(e: $t) -> Self {
                Self(Box::new(e.into()))
            }
        }
    )*};
}

core_error_from!(
    ik_core::SkeletonError,
    ik_core::AnalyticError,
    ik_core::HumanoidError,
    ik_core::JacobianError,
    ik_core::behaviours::BehaviourError,
    ik_core::grounding::GroundingError,
    ik_core::vr::VrError
);

impl From<StackError> for CoreError {
    fn from(e: StackError) -> Self {
        Self(Box::new(e))
    }
}

/// Why a limb or rig was not solved this frame (or could not be set up).
///
/// Core errors are kept typed ([`CoreError`]: ik-core's [`StackError`], which wraps every core
/// module's error enum); the status stays reflectable, and serialises them as their message
/// (they are not read back).
#[derive(Debug, Clone, PartialEq, Error, Reflect)]
#[reflect(Debug, PartialEq, Clone)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
#[non_exhaustive]
pub enum IkError {
    /// No bone with this name among the descendants searched (yet: glTF scenes appear later).
    /// The name is the one the user gave (data, not a message).
    #[error("no bone named `{0}` was found")]
    MissingBone(String),
    /// No bone plays this humanoid role under the character (yet: glTF scenes appear later;
    /// or its names and its VRM table do not name it).
    #[error("no bone plays the humanoid role {0}")]
    MissingRole(#[reflect(ignore, clone, default = "default_role")] HumanoidBone),
    /// A bone entity was despawned or has no `Transform`.
    #[error("bone entity {0} does not exist or has no Transform")]
    MissingBoneEntity(Entity),
    /// The chain's root is not an ancestor of its middle and tip bones (or a rig's goal bone
    /// is not under its character).
    #[error("the limb's bones are not one parent–child chain (root → mid → tip)")]
    NotAChain,
    /// The stage entity is gone, or no longer carries the component of the stage kind it was
    /// set up as (set-up rebuilds it next frame).
    #[error("stage entity {0} no longer describes a stage of its kind")]
    NotAStage(Entity),
    /// The ik-core stage or the state a stage kind's `build` returned is not the type its
    /// `gather` reads (a kind whose functions disagree: a bug in the kind, not in the input).
    #[error("the built stage or its state is not of the type its stage kind reads")]
    StageTypeMismatch,
    /// The character's stages need no bones at all: there is no skeleton to solve.
    #[error("the character's stages name no bones")]
    NoBones,
    /// The chain or skeleton was rejected by the core (zero-length bone, bad rest transform…).
    #[error("invalid chain: {0}")]
    #[cfg_attr(feature = "serialize", serde(skip_deserializing))]
    InvalidChain(CoreError),
    /// The limb or solver settings are out of range.
    #[error("invalid settings: {0}")]
    #[cfg_attr(feature = "serialize", serde(skip_deserializing))]
    InvalidSettings(CoreError),
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
    #[cfg_attr(feature = "serialize", serde(skip_deserializing))]
    Solver(CoreError),
}

/// The role a reflected [`IkError::MissingRole`] gets where reflection cannot say it (the role
/// is not a reflected type; serde and `Debug` carry it).
fn default_role() -> HumanoidBone {
    HumanoidBone::Hips
}
