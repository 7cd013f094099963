//! The components of [`crate::humanoid`] (the data layer: pure data, no systems), re-exported
//! there; their reflected type paths stay `bevy_ik::humanoid::…`. The set-up's runtime cache
//! (`HumanoidCache`) and the character's runtime (`IkCharacter`) are added to an
//! [`IkHumanoid`] by the plugin's registration, not required here.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::reflect::ReflectComponent;
use bevy::reflect::prelude::*;
use bevy::transform::components::Transform;
use ik_core::humanoid::{FullBodySettings, HumanoidBone};

use crate::balance::{IkBalance, IkCenterOfMass};
use crate::components::IkStatus;

/// Tags a bone entity with the humanoid role it plays, by the role's VRM name
/// (`"leftUpperArm"`, see [`HumanoidBone::vrm_name`]). [`IkHumanoid`] takes tagged bones as
/// given ([`HumanoidMap::from_table`](ik_core::humanoid::HumanoidMap::from_table)) and maps the other roles by name and hierarchy. The
/// `vrm` feature tags a VRM avatar's bones from the file's humanoid table while it loads; tag
/// bones yourself for a rig whose names no convention covers.
#[derive(Component, Debug, Clone, Default, PartialEq, Eq, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkHumanoidBone(pub String);

impl IkHumanoidBone {
    /// The tag for `role`.
    #[must_use]
    pub fn new(role: HumanoidBone) -> Self {
        Self(role.vrm_name().to_owned())
    }

    /// The role, if the name is one of [`HumanoidBone`]'s VRM names (the tag of an unknown
    /// role, e.g. a finger, is ignored).
    #[must_use]
    pub fn role(&self) -> Option<HumanoidBone> {
        HumanoidBone::from_vrm_name(&self.0)
    }
}

/// Auto-maps a humanoid character: put it on the character's root entity (e.g. the entity with
/// the glTF `WorldAssetRoot`). Once the bones exist, the plugin
///
/// 1. recognises the humanoid bones by name (case- and separator-insensitive; see
///    [`ik_core::humanoid`]),
/// 2. spawns target entities (children of this entity, listed in [`IkHumanoidTargets`]) at the
///    current pelvis, hand and foot poses and a look-at target ahead of the face,
/// 3. drives the body toward them every frame with ik-core's full-body solver (the default,
///    [`IkHumanoidSolver::FullBody`]: anatomical limits, the hips translate) as the first
///    stage of this entity's [`IkCharacter`](crate::IkCharacter), or with an [`IkLimb`](crate::IkLimb) stage entity per arm and
///    leg plus elbow/knee pole entities ([`IkHumanoid::limbs`]),
///
/// and records the role → bone mapping in [`IkHumanoidBones`]. Roles it could not map are listed
/// in this entity's [`IkStatus::unmapped`]; if a required one is missing, nothing is set up and
/// [`IkStatus::last_error`] says which.
///
/// More stages go after it on the same pose: spawn them with
/// [`IkStageOf(this entity)`](crate::IkStageOf) (see the crate docs).
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
#[require(IkStatus, IkCenterOfMass)]
pub struct IkHumanoid {
    /// Set up IK for the arms. Changing `arms`, `legs`, `poles`, `head` or `solver` after set-up
    /// sets the humanoid up again in place (see the module docs).
    pub arms: bool,
    /// Set up IK for the legs.
    pub legs: bool,
    /// Spawn pole entities for the elbows and knees (analytic limbs; else the limbs keep
    /// their animated bend).
    pub poles: bool,
    /// Turn the head toward its look-at target (full body).
    pub head: bool,
    /// IK/FK blend weight of every stage the humanoid set up: read every frame by the
    /// full-body stage, written into its limbs and detached-feet stage whenever it changes.
    pub weight: f32,
    /// Which solver drives the character.
    pub solver: IkHumanoidSolver,
    /// Settings of ik-core's full-body solver (with [`IkHumanoidSolver::FullBody`]). Default:
    /// ik-core's: tracking in which no joint turns more than `max_turn` per frame, so a target moved far in one frame is reached over
    /// several.
    #[reflect(ignore)]
    pub full_body_settings: FullBodySettings,
    /// Keep the centre of mass over the feet (full body; off by default, read every frame).
    #[cfg_attr(feature = "serialize", serde(default))]
    pub balance: IkBalance,
    /// A two-handed grip or a hand on a prop (full body; read every frame): one hand's goal
    /// held relative to the other hand or to an entity, solved in the same frame (see
    /// [`IkGrip`]). `None` (the default): both hands follow their targets.
    #[cfg_attr(feature = "serialize", serde(default))]
    pub grip: Option<IkGrip>,
}

/// A hand held relative to the other hand or to an entity — the left hand on a rifle the
/// right hand holds, a hand on a prop — set on [`IkHumanoid::grip`] (full body).
///
/// The hand's goal is the anchor's current transform times [`IkGrip::offset`], solved by the
/// full-body solver in the same solve as every other goal: when the anchor is the other hand,
/// a bone of the character or an entity parented below one (a prop in the hand), it is a
/// *relative task* of that solve ([`ik_core::humanoid::GoalFrame`]) — the grip holds while
/// the holding hand is moved by its own goal in the same frame, with no one-frame lag and no
/// second pass. Any other entity is read at its current global transform this frame. While a
/// grip is set, the gripping hand's own target entity is not used.
#[derive(Debug, Clone, Copy, PartialEq, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkGrip {
    /// The hand that grips.
    pub hand: IkGripHand,
    /// What it holds on to.
    pub anchor: IkGripAnchor,
    /// The gripping hand's transform in the anchor's frame (the anchor's local space).
    pub offset: Transform,
}

impl Default for IkGrip {
    fn default() -> Self {
        Self {
            hand: IkGripHand::Left,
            anchor: IkGripAnchor::OtherHand,
            offset: Transform::IDENTITY,
        }
    }
}

impl IkGrip {
    /// The left hand held at `offset` in the right hand's frame (a two-handed prop the right
    /// hand carries).
    #[must_use]
    pub fn left_on_right(offset: Transform) -> Self {
        Self {
            hand: IkGripHand::Left,
            anchor: IkGripAnchor::OtherHand,
            offset,
        }
    }

    /// `hand` held at `offset` in `entity`'s frame (a prop, a bone, a handle in the world).
    #[must_use]
    pub fn on_entity(hand: IkGripHand, entity: Entity, offset: Transform) -> Self {
        Self {
            hand,
            anchor: IkGripAnchor::Entity(entity),
            offset,
        }
    }
}

/// Which hand an [`IkGrip`] moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkGripHand {
    /// The left hand.
    #[default]
    Left,
    /// The right hand.
    Right,
}

/// What an [`IkGrip`] is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkGripAnchor {
    /// The other hand's bone.
    #[default]
    OtherHand,
    /// An entity: a bone of the character, or an entity below one that was there when the
    /// character was set up (a prop in the hand; both solved as a relative task), or any
    /// entity outside the character (read at its transform this frame; an entity parented
    /// below a bone *after* set-up is read at its animated, not solved, transform until the
    /// character is rebuilt).
    Entity(Entity),
}

/// The solver [`IkHumanoid`] sets up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkHumanoidSolver {
    /// ik-core's hybrid full-body solver (a Jacobian over every humanoid joint with anatomical
    /// limits, each limb finished analytically): hands and feet (position and rotation), the
    /// pelvis (position; the hips translate) and the head look-at, on one priority level.
    #[default]
    FullBody,
    /// Four independent analytic [`IkLimb`](crate::IkLimb)s (arms and legs) with elbow and knee poles; the
    /// pelvis and head targets are spawned but unused.
    Limbs,
}

impl Default for IkHumanoid {
    fn default() -> Self {
        Self {
            arms: true,
            legs: true,
            poles: true,
            head: true,
            weight: 1.0,
            solver: IkHumanoidSolver::FullBody,
            full_body_settings: FullBodySettings::default(),
            balance: IkBalance::default(),
            grip: None,
        }
    }
}

impl IkHumanoid {
    /// Map everything: arms, legs, poles, weight 1.
    #[must_use]
    pub fn auto() -> Self {
        Self::default()
    }

    /// Four analytic limbs instead of the full-body rig (cheaper, exact, no pelvis motion).
    #[must_use]
    pub fn limbs() -> Self {
        Self {
            solver: IkHumanoidSolver::Limbs,
            ..Self::default()
        }
    }

    builder_setters! {
        /// Sets the balance goal (see [`IkBalance`]), e.g.
        /// `IkHumanoid::auto().with_balance(IkBalance::on())`.
        with_balance(balance: IkBalance) => balance = balance;
        /// Sets the grip (see [`IkGrip`]), e.g.
        /// `IkHumanoid::auto().with_grip(IkGrip::left_on_right(offset))`.
        with_grip(grip: IkGrip) => grip = Some(grip);
    }

    /// Only the legs (e.g. for foot placement on uneven ground).
    #[must_use]
    pub fn legs_only() -> Self {
        Self {
            arms: false,
            ..Self::default()
        }
    }
}

/// The entities [`IkHumanoid`] spawned, inserted on the humanoid's entity once set up: move
/// these to drive the character. Targets are children of the humanoid entity (they move with
/// it), placed where the bones were at set-up.
#[derive(Component, Debug, Clone, Default, PartialEq, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Component, Default, Debug)]
pub struct IkHumanoidTargets {
    /// At the hips bone.
    pub pelvis: Option<Entity>,
    /// Full body: the look-at point ahead of the face (move it to turn the head). Limbs: at the
    /// head bone (unused by the limbs).
    pub head: Option<Entity>,
    /// At the left hand (wrist) bone.
    pub left_hand: Option<Entity>,
    /// At the right hand bone.
    pub right_hand: Option<Entity>,
    /// At the left foot (ankle) bone.
    pub left_foot: Option<Entity>,
    /// At the right foot bone.
    pub right_foot: Option<Entity>,
    /// Behind the left elbow (analytic limbs only).
    pub left_elbow_pole: Option<Entity>,
    /// Behind the right elbow (analytic limbs only).
    pub right_elbow_pole: Option<Entity>,
    /// In front of the left knee (analytic limbs only).
    pub left_knee_pole: Option<Entity>,
    /// In front of the right knee (analytic limbs only).
    pub right_knee_pole: Option<Entity>,
    /// The entities holding the [`IkLimb`](crate::IkLimb)s: left arm, right arm, left leg, right leg (those
    /// set up; empty for the full body).
    pub limbs: Vec<Entity>,
    /// The stage entity that moves detached IK-control foot bones along with the legs (see
    /// the module docs), on a rig that has them.
    pub detached_feet: Option<Entity>,
}

/// Which bone entity plays each humanoid role, inserted on the humanoid's entity once mapped.
#[derive(Component, Debug, Clone, Default, PartialEq, Reflect)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Component, Default, Debug)]
pub struct IkHumanoidBones {
    /// Indexed by `HumanoidBone::index()`.
    pub(crate) bones: Vec<Option<Entity>>,
}

impl IkHumanoidBones {
    /// The bone entity of `role`, if the rig has one.
    #[must_use]
    pub fn get(&self, role: HumanoidBone) -> Option<Entity> {
        self.bones.get(role.index()).copied().flatten()
    }

    /// Every mapped role and its entity.
    pub fn iter(&self) -> impl Iterator<Item = (HumanoidBone, Entity)> + '_ {
        HumanoidBone::ALL
            .iter()
            .filter_map(|&r| self.get(r).map(|e| (r, e)))
    }
}

/// What the humanoid name mapping found on this [`IkHumanoid`]'s bones (ik-core's
/// [`MappingReport`](ik_core::humanoid::MappingReport)): inserted when the bones are mapped, and also
/// when mapping fails for want of a required bone, so a user (or a tool's panel) can see why.
#[derive(Component, Reflect, Clone, Debug, Default, PartialEq, Eq)]
#[type_path = "bevy_ik::humanoid"]
#[reflect(Component, Default, Debug)]
pub struct IkHumanoidMapping {
    /// One line: how many roles were mapped and which are missing.
    pub summary: String,
    /// The whole report: each role with its bone and how it was found, the roles not mapped
    /// and why, and the bones passed over (control bones, bones off the chain, detached IK
    /// feet) and why.
    pub details: String,
}
