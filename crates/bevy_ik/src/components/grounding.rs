//! The components of [`crate::grounding`] (the data layer: pure data, no systems), re-exported
//! there; their reflected type paths stay `bevy_ik::grounding::…`.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::reflect::ReflectComponent;
use bevy::math::Vec3;
use bevy::reflect::prelude::*;
use ik_core::grounding::GroundingSettings;
use ik_core::humanoid::HumanoidBone;

use crate::components::BoneRef;

/// One leg: the thigh (hip joint), shin (knee), foot (ankle) and, if the rig has one, toe
/// (ball) bones.
#[derive(Debug, Clone, PartialEq, Default, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkLeg {
    /// Thigh.
    pub upper: BoneRef,
    /// Shin.
    pub lower: BoneRef,
    /// Foot.
    pub foot: BoneRef,
    /// Toes.
    pub toe: Option<BoneRef>,
}

impl IkLeg {
    /// A leg without toes.
    #[must_use]
    pub fn new(
        upper: impl Into<BoneRef>,
        lower: impl Into<BoneRef>,
        foot: impl Into<BoneRef>,
    ) -> Self {
        Self {
            upper: upper.into(),
            lower: lower.into(),
            foot: foot.into(),
            toe: None,
        }
    }

    builder_setters! {
        /// Sets the toe bone.
        with_toe(toe: impl Into<BoneRef>) => toe = Some(toe.into());
    }
}

/// Where an [`IkGrounding`] gets its ground.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkGroundSource {
    /// The game writes [`IkGroundSamples`] itself.
    Samples,
    /// Bevy mesh ray casts against entities marked [`IkGround`] (feature `mesh-ground`;
    /// without the feature nothing fills the samples).
    #[default]
    Meshes,
}

/// Marks an entity whose mesh is ground for [`IkGroundSource::Meshes`] (its `Mesh3d`, at
/// its `GlobalTransform`; its `Aabb` is used for culling when present, as Bevy's camera
/// plugin adds it to rendered meshes).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Component, Debug, Default, PartialEq, Clone)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkGround;

/// Foot grounding on a character: see the [module docs](crate::grounding).
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Component, Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
#[cfg_attr(feature = "serialize", serde(default))]
#[require(IkGroundSamples, IkGroundingState)]
pub struct IkGrounding {
    /// The legs (structural).
    pub legs: Vec<IkLeg>,
    /// The bone moved with the ground (structural); `None`: the legs' nearest common ancestor.
    pub pelvis: Option<BoneRef>,
    /// Up in the character's model space (structural; the character root's frame: +Y in Bevy).
    pub up: Vec3,
    /// Where the ground comes from.
    pub source: IkGroundSource,
    /// Blend weight of the stage (`[0, 1]`).
    pub weight: f32,
    /// The most the pelvis moves from its animated height, metres (`None`: 0.45 leg lengths).
    pub max_step_height: Option<f32>,
    /// Let the pelvis rise above its animated height.
    pub raise_pelvis: bool,
    /// The steepest ground a foot tilts to, radians.
    pub max_tilt: f32,
    /// Smoothing time, seconds (0: none).
    pub smooth_time: f32,
    /// Lock planted feet in the world.
    pub lock_feet: bool,
    /// Mesh casts start this far above the foot, metres.
    pub cast_above: f32,
    /// And reach this far below it, metres.
    pub cast_below: f32,
}

impl Default for IkGrounding {
    fn default() -> Self {
        Self {
            legs: Vec::new(),
            pelvis: None,
            up: Vec3::Y,
            source: IkGroundSource::default(),
            weight: 1.0,
            max_step_height: None,
            raise_pelvis: false,
            max_tilt: 40f32.to_radians(),
            smooth_time: 0.12,
            lock_feet: true,
            cast_above: 0.6,
            cast_below: 0.8,
        }
    }
}

impl IkGrounding {
    /// Grounding for `legs`.
    #[must_use]
    pub fn new(legs: impl IntoIterator<Item = IkLeg>) -> Self {
        Self {
            legs: legs.into_iter().collect(),
            ..Self::default()
        }
    }

    /// A humanoid's two legs by role (thigh, shin, foot; no toes: see
    /// [`IkGrounding::humanoid_with_toes`]).
    #[must_use]
    pub fn humanoid() -> Self {
        use HumanoidBone as H;
        Self::new([
            IkLeg::new(H::LeftUpperLeg, H::LeftLowerLeg, H::LeftFoot),
            IkLeg::new(H::RightUpperLeg, H::RightLowerLeg, H::RightFoot),
        ])
    }

    /// A humanoid's two legs by role with their toe bones (set-up fails if the rig has none).
    #[must_use]
    pub fn humanoid_with_toes() -> Self {
        use HumanoidBone as H;
        Self::new([
            IkLeg::new(H::LeftUpperLeg, H::LeftLowerLeg, H::LeftFoot).with_toe(H::LeftToes),
            IkLeg::new(H::RightUpperLeg, H::RightLowerLeg, H::RightFoot).with_toe(H::RightToes),
        ])
    }

    builder_setters! {
        /// Sets the ground source.
        with_source(source: IkGroundSource) => source = source;
    }

    /// The bones handed to the stage builder, in order: per leg upper, lower, foot (and toe),
    /// then the pelvis.
    pub(crate) fn bones(&self) -> Vec<BoneRef> {
        self.bone_refs().cloned().collect()
    }

    /// The stage's bones in order: each leg's upper, lower, foot (and toe), then the pelvis.
    pub(crate) fn bone_refs(&self) -> impl Iterator<Item = &BoneRef> {
        self.legs
            .iter()
            .flat_map(|l| [&l.upper, &l.lower, &l.foot].into_iter().chain(&l.toe))
            .chain(&self.pelvis)
    }

    pub(crate) fn settings(&self, current: &GroundingSettings) -> GroundingSettings {
        GroundingSettings {
            max_step_height: self.max_step_height.unwrap_or(current.max_step_height),
            raise_pelvis: self.raise_pelvis,
            max_tilt: self.max_tilt,
            smooth_time: self.smooth_time,
            lock_feet: self.lock_feet,
            ..*current
        }
    }
}

/// A ground hit in world space.
#[derive(Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkGroundHit {
    /// A point on the ground.
    pub point: Vec3,
    /// The ground's normal there.
    pub normal: Vec3,
}

/// The ground under one foot (world space): under the heel/ankle and under the toe, either or
/// both, or none.
#[derive(Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkFootGround {
    /// Under the heel / ankle.
    pub heel: Option<IkGroundHit>,
    /// Under the toe / ball.
    pub toe: Option<IkGroundHit>,
}

/// The ground under each leg's foot this frame, in world space, parallel to
/// [`IkGrounding::legs`]: written by your system ([`IkGroundSource::Samples`]) or by the
/// mesh casts. Missing entries mean no ground.
#[derive(Component, Debug, Clone, PartialEq, Default, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Component, Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkGroundSamples {
    /// Per leg.
    pub feet: Vec<IkFootGround>,
}

/// One foot's grounding result (world space).
#[derive(Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkFootState {
    /// Where the ankle was sent.
    pub goal: Vec3,
    /// The ground normal the foot was turned to.
    pub normal: Vec3,
    /// Grounding weight (1 on the ground, 0 lifted or no ground).
    pub weight: f32,
    /// Locked in the world.
    pub planted: bool,
    /// Ground was found.
    pub grounded: bool,
}

/// What the grounding did in the last frame (world space), for drawing and for ground
/// sources (cast under each foot bone; under a planted foot's [`IkFootState::goal`], where it
/// is locked).
#[derive(Component, Debug, Clone, PartialEq, Default, Reflect)]
#[type_path = "bevy_ik::grounding"]
#[reflect(Component, Debug, PartialEq, Clone, Default)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkGroundingState {
    /// Per leg.
    pub feet: Vec<IkFootState>,
    /// The pelvis offset (world).
    pub pelvis_offset: Vec3,
    /// World up of the character.
    pub up: Vec3,
    /// Foot and toe bone entities per leg (for the mesh casts).
    #[reflect(ignore)]
    #[cfg_attr(feature = "serialize", serde(skip))]
    pub(crate) bones: Vec<(Entity, Option<Entity>)>,
}
