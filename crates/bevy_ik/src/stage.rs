//! Stacking stages on a character: the [`IkStageOf`] relationship (a stage entity → its
//! character) with its ordered target [`IkStages`], and [`IkCustom`], a stage of your own
//! (an ik-core [`CustomStage`]).
//!
//! # Why stage entities
//!
//! A character's stages are entities related to it, in the order of [`IkStages`], rather than
//! one component holding a list. Weighed:
//!
//! - **entities in an ordered relationship** (chosen): each stage is an ordinary entity, so it
//!   gets its own [`IkDisabled`](crate::IkDisabled) marker, [`IkStatus`](crate::IkStatus),
//!   `Name` (in inspectors and logs) and change detection — editing one stage's description
//!   rebuilds only that stage and never marks the others changed; stages are added and removed
//!   with ordinary commands, reordered with Bevy's ordered-relationship API
//!   (`insert_related::<IkStageOf>(index, &[stage])`), and despawned with the character
//!   (`linked_spawn`). The existing one-entity components ([`IkLimb`](crate::IkLimb),
//!   [`IkRig`](crate::IkRig), [`IkHumanoid`](crate::IkHumanoid)) are the stage descriptions
//!   unchanged: the same component is a one-stage character on its own, or a stage of a
//!   character with `IkStageOf(character)` next to it.
//! - **one component holding `Vec<Stage>`**: simpler to spawn and to serialise, and one change
//!   flag — but a weight slider would mark the whole list changed every frame, per-stage
//!   status and disabling would need parallel vectors, and stages could not be found by
//!   `Name` or queried by kind.
//!
//! The order a character runs its stages: a stage component on the character entity itself
//! first (for example the full-body stage of [`IkHumanoid::auto`](crate::IkHumanoid::auto)),
//! then its [`IkStages`] in order. An entity carries one stage; if it has several stage
//! components, the first of `IkHumanoid` (full body), `IkRig`, `IkLimb`, `IkCustom` is used.
//! An entity with `IkStageOf` is never a character itself.

use core::fmt;
use std::sync::Arc;

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::reflect::{ReflectComponent, ReflectFromWorld};
use bevy::ecs::world::{FromWorld, World};
use bevy::reflect::prelude::*;
use ik_core::Skeleton;
use ik_core::stack::CustomStage;

use crate::character::IkCharacter;
use crate::components::{BoneRef, IkStatus};

/// Makes this entity a stage of the character entity `0` (which gets an
/// [`IkCharacter`] if it has none). The stage description is this entity's
/// [`IkLimb`](crate::IkLimb), [`IkRig`](crate::IkRig) or [`IkCustom`].
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Reflect)]
#[reflect(Component, Debug, PartialEq, Clone, FromWorld)]
#[relationship(relationship_target = IkStages)]
pub struct IkStageOf(#[entities] pub Entity);

impl FromWorld for IkStageOf {
    fn from_world(_world: &mut World) -> Self {
        Self(Entity::PLACEHOLDER)
    }
}

/// The stage entities of a character, in the order they run (after a stage on the character
/// entity itself). Maintained by Bevy from the [`IkStageOf`] relationships; reorder it with
/// `insert_related::<IkStageOf>(index, &[stage])`.
#[derive(Component, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Debug, Default)]
#[relationship_target(relationship = IkStageOf, linked_spawn)]
#[require(IkCharacter)]
pub struct IkStages(Vec<Entity>);

impl IkStages {
    /// The stage entities in order.
    #[must_use]
    pub fn entities(&self) -> &[Entity] {
        &self.0
    }
}

/// Builds a custom stage at set-up: called with the character's skeleton and the skeleton
/// indices of [`IkCustom::bones`] (in that order).
pub type CustomStageBuilder =
    dyn Fn(&Skeleton, &[usize]) -> Result<Box<dyn CustomStage>, String> + Send + Sync;

/// A stage of your own on a character: an ik-core [`CustomStage`] (look-at chain, aim, twist
/// distribution, grounding, VR body…) built when the character is set up.
///
/// Each frame the plugin hands the stage its [`IkCustom::target`]'s current transform in the
/// character's model space ([`CustomStage::set_target`]) and blends its output by
/// [`IkCustom::weight`]. The stage is rebuilt only when [`IkCustom::bones`] or the builder
/// change.
#[derive(Component, Clone)]
#[require(IkStatus, IkCharacter)]
pub struct IkCustom {
    /// Bones the stage needs, resolved at set-up and handed to the builder as skeleton indices.
    pub bones: Vec<BoneRef>,
    /// An entity whose current transform is handed to the stage every frame.
    pub target: Option<Entity>,
    /// Blend weight of the stage's output over its input (`[0, 1]`).
    pub weight: f32,
    pub(crate) build: Arc<CustomStageBuilder>,
}

impl fmt::Debug for IkCustom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IkCustom")
            .field("bones", &self.bones)
            .field("target", &self.target)
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

impl IkCustom {
    /// A custom stage on `bones`, made by `build` (called again only when the structure
    /// changes). `build`'s error is reported in the stage's
    /// [`IkStatus::last_error`](crate::IkStatus::last_error).
    pub fn new<S: CustomStage>(
        bones: impl IntoIterator<Item = impl Into<BoneRef>>,
        build: impl Fn(&Skeleton, &[usize]) -> Result<S, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            bones: bones.into_iter().map(Into::into).collect(),
            target: None,
            weight: 1.0,
            build: Arc::new(move |s: &Skeleton, b: &[usize]| {
                build(s, b).map(|stage| Box::new(stage) as Box<dyn CustomStage>)
            }),
        }
    }

    /// Sets the target entity.
    #[must_use]
    pub fn with_target(mut self, target: Entity) -> Self {
        self.target = Some(target);
        self
    }

    /// Sets the weight.
    #[must_use]
    pub fn with_weight(mut self, weight: f32) -> Self {
        self.weight = weight;
        self
    }

    /// An identity for the builder (structural key).
    pub(crate) fn builder_id(&self) -> usize {
        Arc::as_ptr(&self.build).cast::<()>() as usize
    }
}
