//! The components of [`crate::secondary`] (the data layer: pure data, no systems), re-exported
//! there; their reflected type paths stay `bevy_ik::secondary::…`.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::reflect::ReflectComponent;
use bevy::math::Vec3;
use bevy::math::cubic_splines::CubicCurve;
use bevy::reflect::prelude::*;
use ik_core::chain::{ChainMethod, ChainSettings};
use ik_core::limits::JointLimit;
use ik_core::spring::{ColliderShape, SpringJointDesc, SpringSettings, SpringTail};

use crate::components::BoneRef;

/// One joint of an [`IkSpringChain`]: a bone and VRM's spring parameters (see
/// [`SpringJointDesc`] for their meaning; the defaults are `VRMC_springBone` 1.0's).
#[derive(Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkSpringJoint {
    /// The bone.
    pub bone: BoneRef,
    /// Radius of the tail's collision sphere, in the bone's frame (`hitRadius`).
    pub hit_radius: f32,
    /// Pull toward the animated pose (`stiffness`).
    pub stiffness: f32,
    /// Strength of gravity (`gravityPower`).
    pub gravity_power: f32,
    /// Direction of gravity in the world (`gravityDir`).
    pub gravity_dir: Vec3,
    /// Share of the motion lost per reference (60 Hz) frame, `[0, 1]` (`dragForce`).
    pub drag_force: f32,
}

impl Default for IkSpringJoint {
    fn default() -> Self {
        Self::new(BoneRef::default())
    }
}

impl IkSpringJoint {
    /// `bone` with `VRMC_springBone` 1.0's default parameters.
    #[must_use]
    pub fn new(bone: impl Into<BoneRef>) -> Self {
        let d = SpringJointDesc::default();
        Self {
            bone: bone.into(),
            hit_radius: d.hit_radius,
            stiffness: d.stiffness,
            gravity_power: d.gravity_power,
            gravity_dir: d.gravity_dir,
            drag_force: d.drag_force,
        }
    }

    /// The core's description on skeleton bone `bone`.
    pub(crate) fn desc(&self, bone: usize) -> SpringJointDesc {
        SpringJointDesc {
            bone,
            hit_radius: self.hit_radius,
            stiffness: self.stiffness,
            gravity_power: self.gravity_power,
            gravity_dir: self.gravity_dir,
            drag_force: self.drag_force,
        }
    }
}

/// What the last joint of an [`IkSpringChain`] points at (mirrors ik-core's [`SpringTail`]).
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkSpringTail {
    /// The last joint is only the end of the one before (VRM 1.0).
    LastJoint,
    /// The last joint is simulated toward a virtual tail `length` model units past it (VRM
    /// 0.x: 0.07).
    Virtual {
        /// Length of the virtual bone, model units.
        length: f32,
    },
}

impl Default for IkSpringTail {
    fn default() -> Self {
        match SpringTail::default() {
            SpringTail::Virtual { length } => Self::Virtual { length },
            SpringTail::LastJoint => Self::LastJoint,
        }
    }
}

impl From<IkSpringTail> for SpringTail {
    fn from(t: IkSpringTail) -> Self {
        match t {
            IkSpringTail::LastJoint => Self::LastJoint,
            IkSpringTail::Virtual { length } => Self::Virtual { length },
        }
    }
}

/// A spring-bone chain on a character (hair, a skirt panel, a tail, an ear): VRM's spring
/// model, simulated per frame, frame-rate independent, reset on teleport (see
/// [`ik_core::spring`] for the method and its parameters).
///
/// The simulation runs in the world (the character's model space placed by its model frame's
/// global transform, handed in every frame), or relative to [`IkSpringChain::center`]: a
/// walking character's hair then follows the body without lag. Insert [`IkSpringReset`] on
/// the stage entity to start again from the animated pose (a cut, a respawn); a jump of the
/// character farther than the settings' teleport distance does it by itself.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkSpringChain {
    /// The joints, root first, each bone the child of the one before.
    pub joints: Vec<IkSpringJoint>,
    /// What the last joint points at.
    pub tail: IkSpringTail,
    /// The bone the chain is simulated relative to (VRM `center`); `None`: the world.
    pub center: Option<BoneRef>,
    /// Collider entities (each with an [`IkSpringCollider`], under the character: the shape
    /// moves with the entity).
    pub colliders: Vec<Entity>,
    /// Blend of the simulated rotations over the animated ones, `[0, 1]`, read every frame.
    /// The simulation runs at any weight, so fading in starts from a live state.
    pub weight: f32,
    /// Sub-step length, teleport thresholds, collision passes.
    #[reflect(ignore)]
    pub settings: SpringSettings,
}

impl Default for IkSpringChain {
    fn default() -> Self {
        Self {
            joints: Vec::new(),
            tail: IkSpringTail::default(),
            center: None,
            colliders: Vec::new(),
            weight: 1.0,
            settings: SpringSettings::default(),
        }
    }
}

impl IkSpringChain {
    /// A chain over `bones` (root first), every joint with the same parameters `params`
    /// (its `bone` field is ignored).
    #[must_use]
    pub fn uniform(
        bones: impl IntoIterator<Item = impl Into<BoneRef>>,
        params: &IkSpringJoint,
    ) -> Self {
        Self {
            joints: bones
                .into_iter()
                .map(|b| IkSpringJoint {
                    bone: b.into(),
                    ..params.clone()
                })
                .collect(),
            ..Self::default()
        }
    }

    builder_setters! {
        /// Sets the colliders.
        with_colliders(colliders: impl IntoIterator<Item = Entity>) =>
            colliders = colliders.into_iter().collect();
        /// Sets the centre bone.
        with_center(center: impl Into<BoneRef>) => center = Some(center.into());
    }
}

/// Marker: the [`IkSpringChain`] on this stage entity starts again from the animated pose
/// next frame (then the marker is removed).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Component, Default, Debug)]
pub struct IkSpringReset;

/// A collider shape, in its entity's local frame: ik-core's [`ColliderShape`] itself (the
/// component embeds it; this name is kept for the code written against the mirror it
/// replaced, `IkColliderShape::Sphere { .. }` and the rest still read the same).
pub type IkColliderShape = ColliderShape;

/// A spring collider: put it on an entity under the character (a bone, or a child of a bone
/// with its own offset) and list the entity in [`IkSpringChain::colliders`]. Changing the
/// shape rebuilds the chains that use it; moving the entity is per frame.
///
/// It embeds ik-core's [`ColliderShape`], which is not a reflected type: the component is
/// reflected as one opaque value (type path `bevy_ik::secondary::IkSpringCollider`), saved
/// and loaded through its serde form — the same text a saved scene holds from when the shape
/// was a reflected mirror enum (`(shape: Sphere(offset: (0.0, 0.0, 0.0), radius: 0.1))`).
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(opaque)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Component, Default, Debug, PartialEq, Clone)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkSpringCollider {
    /// The shape, in the entity's local frame.
    pub shape: ColliderShape,
}

impl Default for IkSpringCollider {
    /// A sphere of radius 0 at the entity's origin (collides with nothing until given a
    /// radius).
    fn default() -> Self {
        Self {
            shape: ColliderShape::Sphere {
                offset: Vec3::ZERO,
                radius: 0.0,
            },
        }
    }
}

/// The chain method (mirrors ik-core's [`ChainMethod`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkChainMethod {
    /// Forward and backward reaching.
    #[default]
    Fabrik,
    /// Cyclic coordinate descent.
    Ccd,
}

impl From<IkChainMethod> for ChainMethod {
    fn from(m: IkChainMethod) -> Self {
        match m {
            IkChainMethod::Fabrik => Self::Fabrik,
            IkChainMethod::Ccd => Self::Ccd,
        }
    }
}

/// A FABRIK or CCD chain from [`IkChain::root`] to [`IkChain::tip`] (any length: tails,
/// tentacles, necks, ropes) whose tip's origin reaches [`IkChain::target`]'s, the interior
/// joints bending toward [`IkChain::pole`], within per-joint [`IkChain::limits`] (see
/// [`ik_core::chain`]). Without a target the stage has no effect.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkChain {
    /// The chain's first bone (it turns; its parent stays).
    pub root: BoneRef,
    /// The last bone: its origin is the effector.
    pub tip: BoneRef,
    /// The entity reached.
    pub target: Option<Entity>,
    /// An entity the interior joints bend toward.
    pub pole: Option<Entity>,
    /// FABRIK or CCD (CCD needs many more iterations on near-straight chains: see
    /// [`ChainMethod::Ccd`]).
    pub method: IkChainMethod,
    /// Iterations at most per frame (≥ 1).
    pub max_iterations: u32,
    /// On target within this distance, model units; `None`: 1e-4 of the chain's length.
    pub tolerance: Option<f32>,
    /// The target's rotation is also the tip bone's.
    pub tip_rotation: bool,
    /// Per-bone limits from the root to the tip (empty: all free), relative to each bone's
    /// rest rotation.
    #[reflect(ignore)]
    pub limits: Vec<JointLimit>,
    /// Blend weight over the input, `[0, 1]`.
    pub weight: f32,
}

impl Default for IkChain {
    fn default() -> Self {
        let s = ChainSettings::default();
        Self {
            root: BoneRef::default(),
            tip: BoneRef::default(),
            target: None,
            pole: None,
            method: IkChainMethod::default(),
            max_iterations: s.max_iterations,
            tolerance: s.tolerance,
            tip_rotation: false,
            limits: Vec::new(),
            weight: 1.0,
        }
    }
}

impl IkChain {
    /// A FABRIK chain from `root` to `tip` reaching `target`.
    #[must_use]
    pub fn new(root: impl Into<BoneRef>, tip: impl Into<BoneRef>, target: Entity) -> Self {
        Self {
            root: root.into(),
            tip: tip.into(),
            target: Some(target),
            ..Self::default()
        }
    }

    /// The core's settings.
    #[must_use]
    pub fn settings(&self) -> ChainSettings {
        ChainSettings {
            method: self.method.into(),
            max_iterations: self.max_iterations,
            tolerance: self.tolerance,
        }
    }
}

/// The curve kind of [`IkSplineCurve::Points`] (mirrors ik-core's [`CurveKind`](ik_core::spline::CurveKind)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkCurveKind {
    /// A Catmull-Rom spline through every point.
    #[default]
    CatmullRom,
    /// Cubic Bézier segments `[p0, c0, c1, p1, …]`.
    Bezier,
}

/// The curve an [`IkSpline`] follows, in the character's model space.
#[derive(Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub enum IkSplineCurve {
    /// Control-point entities, read every frame at their current transforms.
    Points {
        /// How the points make the curve.
        kind: IkCurveKind,
        /// The control-point entities.
        points: Vec<Entity>,
    },
    /// A Bevy cubic curve (made by any `CubicGenerator`: `CubicBezier`, `CubicHermite`,
    /// `CubicCardinalSpline`, `CubicBSpline`…), in the character's model space; its segments
    /// are converted exactly to Bézier control points.
    Cubic(CubicCurve<Vec3>),
}

impl Default for IkSplineCurve {
    fn default() -> Self {
        Self::Points {
            kind: IkCurveKind::CatmullRom,
            points: Vec::new(),
        }
    }
}

/// Spline IK: the bones from [`IkSpline::root`] to [`IkSpline::tip`] laid along a curve, with
/// a roll from [`IkSpline::twist_start`] to [`IkSpline::twist_end`] (see [`ik_core::spline`]).
/// Start the curve at the root. The fit error (largest joint distance from the curve) is the
/// stage's [`IkStatus`](crate::IkStatus) position residual.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkSpline {
    /// The chain's first bone.
    pub root: BoneRef,
    /// The chain's last bone.
    pub tip: BoneRef,
    /// The curve.
    pub curve: IkSplineCurve,
    /// The root bone's roll about its direction, degrees.
    pub twist_start: f32,
    /// The last bone's roll, degrees.
    pub twist_end: f32,
    /// Blend weight over the input, `[0, 1]`.
    pub weight: f32,
}

impl Default for IkSpline {
    fn default() -> Self {
        Self {
            root: BoneRef::default(),
            tip: BoneRef::default(),
            curve: IkSplineCurve::default(),
            twist_start: 0.0,
            twist_end: 0.0,
            weight: 1.0,
        }
    }
}

/// Limits how fast [`IkVelocityLimit::bones`] turn (Godot's
/// `LimitAngularVelocityModifier3D`): put it after the stages whose pops it should smooth
/// (see [`ik_core::velocity`]). The bound holds on the stage's output; it always runs at
/// weight 1.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_ik::secondary"]
#[reflect(Component, Default, Debug)]
#[cfg_attr(feature = "serialize", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serialize", reflect(Serialize, Deserialize))]
pub struct IkVelocityLimit {
    /// The bones limited.
    pub bones: Vec<BoneRef>,
    /// The largest turning speed of each bone's local rotation, degrees per second.
    pub max_speed: f32,
}

impl Default for IkVelocityLimit {
    fn default() -> Self {
        Self {
            bones: Vec::new(),
            // Godot's `LimitAngularVelocityModifier3D` default, 2π rad/s.
            max_speed: 360.0,
        }
    }
}
