//! The components of [`crate::vr`] (the data layer: pure data, no systems), re-exported
//! there; their reflected type paths stay `bevy_ik::vr::…`.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::reflect::ReflectComponent;
use bevy::reflect::prelude::*;

/// A VR body driven by three tracker entities (see the [module docs](crate::vr)).
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[type_path = "bevy_ik::vr"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkVrBody {
    /// The head-mounted display (its transform is the head bone's wanted pose).
    pub head: Option<Entity>,
    /// The left controller (the left hand bone's wanted pose).
    pub left_hand: Option<Entity>,
    /// The right controller.
    pub right_hand: Option<Entity>,
    /// An optional pelvis tracker.
    pub pelvis: Option<Entity>,
    /// An optional left foot tracker.
    pub left_foot: Option<Entity>,
    /// An optional right foot tracker.
    pub right_foot: Option<Entity>,
    /// The player's standing head height in tracker units (calibration; `None`: trackers are
    /// already in the avatar's proportions, scale 1).
    pub player_head_height: Option<f32>,
    /// Height of the (flat) ground under the feet, along the body's up direction, relative to
    /// the avatar's rest foot plane.
    pub ground_height: f32,
    /// Blend weight of the VR body over the animated pose (`[0, 1]`).
    pub weight: f32,
}

impl Default for IkVrBody {
    fn default() -> Self {
        Self {
            head: None,
            left_hand: None,
            right_hand: None,
            pelvis: None,
            left_foot: None,
            right_foot: None,
            player_head_height: None,
            ground_height: 0.0,
            weight: 1.0,
        }
    }
}

impl IkVrBody {
    /// A VR body driven by `head`, `left_hand` and `right_hand`.
    #[must_use]
    pub fn new(head: Entity, left_hand: Entity, right_hand: Entity) -> Self {
        Self {
            head: Some(head),
            left_hand: Some(left_hand),
            right_hand: Some(right_hand),
            ..Self::default()
        }
    }

    builder_setters! {
        /// Calibrates from the player's standing head height (tracker units).
        with_player_head_height(height: f32) => player_head_height = Some(height);
    }
}
