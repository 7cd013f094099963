//! Secondary motion and chains as stages of a character: [`IkSpringChain`] (spring bones:
//! hair, skirts, tails, ears; with [`IkSpringCollider`] entities), [`IkChain`] (FABRIK / CCD
//! over a chain of any length, with target and pole entities), [`IkSpline`] (bones laid along
//! a curve: control-point entities or a Bevy [`CubicCurve`]) and [`IkVelocityLimit`] (bones
//! never turn faster than a set speed).
//!
//! Each is sugar over [`IkCustom`], like the [behaviours](crate::behaviours): put it on a
//! stage entity of a character (`(IkSpringChain { .. }, IkStageOf(character))`); a system
//! inserts (and, when its structure changes, replaces) the entity's `IkCustom` with the
//! ik-core stage ([`SpringBoneStage`], [`ChainIkStage`], [`SplineIkStage`],
//! [`AngularVelocityLimiter`]) built on the character's skeleton, keyed by its structure
//! ([`IkCustom::with_key`]). The component is also the stage's [`IkStageInput`]: every frame,
//! between set-up and solve, its per-frame fields and the frame's time step go into the built
//! stage. Its status is the stage entity's [`IkStatus`](crate::IkStatus), like any stage (a
//! spline's fit error is its position residual).
//!
//! What is structure (a change rebuilds the stage, and a spring's simulation starts again
//! from the animated pose) and what is read every frame:
//!
//! | component | structure | per frame |
//! |---|---|---|
//! | [`IkSpringChain`] | joints and their parameters, tail, centre, colliders (and their shapes), settings | weight, time step, the character's place in the world |
//! | [`IkChain`] | root, tip, limits | target, pole, method, iterations, tolerance, tip rotation, weight |
//! | [`IkSpline`] | root, tip | curve, twist, weight |
//! | [`IkVelocityLimit`] | bones | speed, time step |
//!
//! VRM avatars get their spring chains and colliders from the file (feature `vrm`, see
//! [`crate::vrm`]); any other glTF gets them by component.
//!
//! ## Systems
//!
//! ```text
//! AnimationSystems
//!   (after move_reach_targets)
//!   sync_secondary_stages        IkSpringChain/IkChain/IkSpline/IkVelocityLimit → IkCustom
//! IkSystems::Prepare             set_up_characters builds the stages
//!   (after set-up)               apply_stage_inputs::<T>: weights, goals, dt into the stages
//!   clear_spring_resets          IkSpringReset markers removed once applied
//! IkSystems::Solve               solve_characters
//! ```

use core::fmt::Write as _;

use bevy::ecs::change_detection::DetectChanges;
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::query::{Changed, Has, With};
use bevy::ecs::reflect::ReflectComponent;
use bevy::ecs::system::{Commands, Query};
use bevy::ecs::world::Ref;
use bevy::math::Vec3;
use bevy::math::cubic_splines::CubicCurve;
use bevy::reflect::prelude::*;
use ik_core::Skeleton;
use ik_core::chain::{ChainGoal, ChainIk, ChainIkStage, ChainMethod, ChainSettings};
use ik_core::limits::JointLimit;
use ik_core::spline::{CurveKind, SplineGoal, SplineIk, SplineIkStage};
use ik_core::spring::{
    ColliderDesc, ColliderShape, SpringBoneStage, SpringChainDesc, SpringJointDesc, SpringSettings,
    SpringTail,
};
use ik_core::stack::StackError;
use ik_core::velocity::AngularVelocityLimiter;

use crate::components::BoneRef;
use crate::stage::{IkCustom, IkStageContext, IkStageInput, IkStageInputPlugin, sync_custom};

/// One joint of an [`IkSpringChain`]: a bone and VRM's spring parameters (see
/// [`SpringJointDesc`] for their meaning; the defaults are `VRMC_springBone` 1.0's).
#[derive(Clone, Debug, PartialEq, Reflect)]
#[reflect(Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
    fn desc(&self, bone: usize) -> SpringJointDesc {
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
#[reflect(Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Component, Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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

    /// Sets the colliders.
    #[must_use]
    pub fn with_colliders(mut self, colliders: impl IntoIterator<Item = Entity>) -> Self {
        self.colliders = colliders.into_iter().collect();
        self
    }

    /// Sets the centre bone.
    #[must_use]
    pub fn with_center(mut self, center: impl Into<BoneRef>) -> Self {
        self.center = Some(center.into());
        self
    }
}

/// Marker: the [`IkSpringChain`] on this stage entity starts again from the animated pose
/// next frame (then the marker is removed).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Default, Debug)]
pub struct IkSpringReset;

/// A collider shape (mirrors ik-core's [`ColliderShape`]), in its entity's local frame.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
pub enum IkColliderShape {
    /// Tails stay outside the sphere.
    Sphere {
        /// Centre.
        offset: Vec3,
        /// Radius.
        radius: f32,
    },
    /// Tails stay outside the capsule from `offset` to `tail`.
    Capsule {
        /// One end.
        offset: Vec3,
        /// The other end.
        tail: Vec3,
        /// Radius.
        radius: f32,
    },
    /// Tails stay on the `normal` side of the plane through `offset`.
    Plane {
        /// A point of the plane.
        offset: Vec3,
        /// Its normal, toward the allowed side.
        normal: Vec3,
    },
    /// Tails stay inside the sphere.
    InsideSphere {
        /// Centre.
        offset: Vec3,
        /// Radius.
        radius: f32,
    },
    /// Tails stay inside the capsule.
    InsideCapsule {
        /// One end.
        offset: Vec3,
        /// The other end.
        tail: Vec3,
        /// Radius.
        radius: f32,
    },
}

impl Default for IkColliderShape {
    fn default() -> Self {
        Self::Sphere {
            offset: Vec3::ZERO,
            radius: 0.0,
        }
    }
}

impl From<IkColliderShape> for ColliderShape {
    fn from(s: IkColliderShape) -> Self {
        match s {
            IkColliderShape::Sphere { offset, radius } => Self::Sphere { offset, radius },
            IkColliderShape::Capsule {
                offset,
                tail,
                radius,
            } => Self::Capsule {
                offset,
                tail,
                radius,
            },
            IkColliderShape::Plane { offset, normal } => Self::Plane { offset, normal },
            IkColliderShape::InsideSphere { offset, radius } => {
                Self::InsideSphere { offset, radius }
            }
            IkColliderShape::InsideCapsule {
                offset,
                tail,
                radius,
            } => Self::InsideCapsule {
                offset,
                tail,
                radius,
            },
        }
    }
}

/// A spring collider: put it on an entity under the character (a bone, or a child of a bone
/// with its own offset) and list the entity in [`IkSpringChain::colliders`]. Changing the
/// shape rebuilds the chains that use it; moving the entity is per frame.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
pub struct IkSpringCollider {
    /// The shape, in the entity's local frame.
    pub shape: IkColliderShape,
}

/// The chain method (mirrors ik-core's [`ChainMethod`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Component, Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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

/// The curve kind of [`IkSplineCurve::Points`] (mirrors ik-core's [`CurveKind`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
pub enum IkCurveKind {
    /// A Catmull-Rom spline through every point.
    #[default]
    CatmullRom,
    /// Cubic Bézier segments `[p0, c0, c1, p1, …]`.
    Bezier,
}

/// The curve an [`IkSpline`] follows, in the character's model space.
#[derive(Clone, Debug, PartialEq, Reflect)]
#[reflect(Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Component, Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Component, Default, Debug)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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

/// The structural key of a spring chain: everything its builder reads but the bone
/// identities (floats as their exact `Debug` text, so any change of value is a change).
fn spring_key(chain: &IkSpringChain, shapes: &[Option<IkColliderShape>]) -> String {
    let mut key = String::new();
    for j in &chain.joints {
        let _ = write!(
            key,
            "{:?}{:?}{:?}{:?}{:?};",
            j.hit_radius, j.stiffness, j.gravity_power, j.gravity_dir, j.drag_force
        );
    }
    let _ = write!(
        key,
        "{:?}{}{:?}{:?}",
        chain.tail,
        chain.center.is_some(),
        shapes,
        chain.settings
    );
    key
}

fn spring_custom(chain: &IkSpringChain, shapes: Vec<Option<IkColliderShape>>) -> IkCustom {
    let key = spring_key(chain, &shapes);
    let joints: Vec<IkSpringJoint> = chain.joints.clone();
    let tail = chain.tail.into();
    let has_center = chain.center.is_some();
    let settings = chain.settings;
    let bones = joints
        .iter()
        .map(|j| j.bone.clone())
        .chain(chain.center.clone())
        .chain(chain.colliders.iter().map(|&e| BoneRef::Entity(e)))
        .collect::<Vec<_>>();
    IkCustom::new(bones, move |s: &Skeleton, b: &[usize]| {
        let n = joints.len();
        let center = has_center.then(|| b[n]);
        let first_collider = n + usize::from(has_center);
        let colliders: Vec<ColliderDesc> = shapes
            .iter()
            .zip(&b[first_collider..])
            .filter_map(|(shape, &bone)| {
                shape.map(|shape| ColliderDesc {
                    bone: Some(bone),
                    shape: shape.into(),
                })
            })
            .collect();
        let desc = SpringChainDesc {
            joints: joints
                .iter()
                .zip(b)
                .map(|(j, &bone)| j.desc(bone))
                .collect(),
            tail,
            center,
            colliders: (0..colliders.len()).collect(),
            weight: 1.0,
        };
        SpringBoneStage::try_with_settings(s, &[desc], &colliders, settings).map_err(Into::into)
    })
    .with_key(key)
}

fn chain_custom(chain: &IkChain) -> IkCustom {
    let limits = chain.limits.clone();
    let settings = chain.settings();
    IkCustom::new(
        [chain.root.clone(), chain.tip.clone()],
        move |s: &Skeleton, b: &[usize]| {
            let c = s.chain(b[0], b[1])?;
            let ik = ChainIk::try_new(s, &c, &limits, settings)?;
            // Until a target is handed in, the goal is where the tip stands at rest.
            let tip = s.rest_model_transforms()[b[1]].translation;
            Ok::<_, StackError>(ChainIkStage::new(ik, ChainGoal::new(tip)))
        },
    )
    .with_key(format!("{:?}", chain.limits))
}

fn spline_custom(spline: &IkSpline) -> IkCustom {
    IkCustom::new(
        [spline.root.clone(), spline.tip.clone()],
        |s: &Skeleton, b: &[usize]| {
            let c = s.chain(b[0], b[1])?;
            let ik = SplineIk::try_new(s, &c)?;
            Ok::<_, StackError>(SplineIkStage::new(ik, SplineGoal::default()))
        },
    )
    .with_key(())
}

fn velocity_custom(limit: &IkVelocityLimit) -> IkCustom {
    let speed = limit.max_speed.to_radians();
    IkCustom::new(limit.bones.clone(), move |_: &Skeleton, b: &[usize]| {
        Ok::<_, StackError>(AngularVelocityLimiter::new(b, speed))
    })
    .with_key(())
}

/// Inserts each component's [`IkCustom`] where there is none or its structure changed; the
/// per-frame inputs go in through [`IkStageInput`].
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn sync_secondary_stages(
    mut commands: Commands,
    springs: Query<(Entity, Ref<IkSpringChain>, Option<&IkCustom>)>,
    chains: Query<(Entity, Ref<IkChain>, Option<&IkCustom>)>,
    splines: Query<(Entity, Ref<IkSpline>, Option<&IkCustom>)>,
    limits: Query<(Entity, Ref<IkVelocityLimit>, Option<&IkCustom>)>,
    colliders: Query<&IkSpringCollider>,
    changed_colliders: Query<(), Changed<IkSpringCollider>>,
) {
    let any_collider_changed = !changed_colliders.is_empty();
    for (e, chain, custom) in &springs {
        if !(chain.is_changed() || custom.is_none() || any_collider_changed) {
            continue;
        }
        let shapes: Vec<Option<IkColliderShape>> = chain
            .colliders
            .iter()
            .map(|&c| colliders.get(c).ok().map(|c| c.shape))
            .collect();
        sync_custom(&mut commands, e, custom, spring_custom(&chain, shapes));
    }
    for (e, chain, custom) in &chains {
        if chain.is_changed() || custom.is_none() {
            sync_custom(&mut commands, e, custom, chain_custom(&chain));
        }
    }
    for (e, spline, custom) in &splines {
        if spline.is_changed() || custom.is_none() {
            sync_custom(&mut commands, e, custom, spline_custom(&spline));
        }
    }
    for (e, limit, custom) in &limits {
        if limit.is_changed() || custom.is_none() {
            sync_custom(&mut commands, e, custom, velocity_custom(&limit));
        }
    }
}

/// Removes the [`IkSpringReset`] markers once their stages were reset.
pub(crate) fn clear_spring_resets(
    mut commands: Commands,
    resets: Query<Entity, With<IkSpringReset>>,
) {
    for e in &resets {
        commands.entity(e).remove::<IkSpringReset>();
    }
}

impl IkStageInput for IkSpringChain {
    type Stage = SpringBoneStage;
    type Data = (&'static Self, Has<IkSpringReset>);

    fn apply((chain, reset): (&Self, bool), stage: &mut SpringBoneStage, cx: &IkStageContext) {
        stage.dt = cx.delta_secs();
        stage.model_to_world = cx.model_to_world();
        stage.set_weight(0, chain.weight);
        if reset {
            stage.reset();
        }
    }
}

impl IkStageInput for IkChain {
    type Stage = ChainIkStage;
    type Data = &'static Self;

    fn apply(chain: &Self, stage: &mut ChainIkStage, cx: &IkStageContext) {
        let settings = chain.settings();
        if *stage.ik().settings() != settings {
            // Bad values are reported by keeping the last good settings.
            let _ = stage.ik_mut().set_settings(settings);
        }
        stage.goal.pole = chain
            .pole
            .and_then(|p| cx.in_model_space(p))
            .map(|t| t.translation);
        stage.target_sets_tip_rotation = chain.tip_rotation;
        if !chain.tip_rotation {
            stage.goal.tip_rotation = None;
        }
    }

    fn weight(chain: &&Self) -> Option<f32> {
        Some(if chain.target.is_some() {
            chain.weight
        } else {
            0.0
        })
    }

    fn target(chain: &&Self) -> Option<Option<Entity>> {
        Some(chain.target)
    }
}

/// `segment`'s Bézier control points from its polynomial coefficients
/// (`a + bt + ct² + dt³`): exact.
fn bezier_points(coeff: [Vec3; 4]) -> [Vec3; 4] {
    let [a, b, c, d] = coeff;
    [a, a + b / 3.0, a + b * (2.0 / 3.0) + c / 3.0, a + b + c + d]
}

impl IkStageInput for IkSpline {
    type Stage = SplineIkStage;
    type Data = &'static Self;

    fn apply(spline: &Self, stage: &mut SplineIkStage, cx: &IkStageContext) {
        let goal = &mut stage.goal;
        goal.twist_start = spline.twist_start.to_radians();
        goal.twist_end = spline.twist_end.to_radians();
        // In place: the same number of points every frame allocates nothing.
        goal.points.clear();
        match &spline.curve {
            IkSplineCurve::Points { kind, points } => {
                goal.kind = match kind {
                    IkCurveKind::CatmullRom => CurveKind::CatmullRom,
                    IkCurveKind::Bezier => CurveKind::Bezier,
                };
                // A missing point leaves the curve malformed: the stage reports it.
                for &p in points {
                    goal.points
                        .push(cx.in_model_space(p).map_or(Vec3::NAN, |t| t.translation));
                }
            }
            IkSplineCurve::Cubic(curve) => {
                goal.kind = CurveKind::Bezier;
                for (i, segment) in curve.segments().iter().enumerate() {
                    let [p0, c0, c1, p1] = bezier_points(segment.coeff);
                    if i == 0 {
                        goal.points.push(p0);
                    }
                    goal.points.extend([c0, c1, p1]);
                }
            }
        }
    }

    fn weight(spline: &&Self) -> Option<f32> {
        Some(spline.weight)
    }
}

impl IkStageInput for IkVelocityLimit {
    type Stage = AngularVelocityLimiter;
    type Data = &'static Self;

    fn apply(limit: &Self, stage: &mut AngularVelocityLimiter, cx: &IkStageContext) {
        stage.dt = cx.delta_secs();
        stage.max_speed = limit.max_speed.to_radians();
    }

    fn weight(_: &&Self) -> Option<f32> {
        Some(1.0)
    }
}

/// Registers the components and systems.
pub(crate) fn build(
    app: &mut bevy::app::App,
    schedule: bevy::ecs::intern::Interned<dyn bevy::ecs::schedule::ScheduleLabel>,
) {
    use bevy::ecs::schedule::IntoScheduleConfigs;
    app.register_type::<IkSpringChain>()
        .register_type::<IkSpringJoint>()
        .register_type::<IkSpringTail>()
        .register_type::<IkSpringReset>()
        .register_type::<IkSpringCollider>()
        .register_type::<IkColliderShape>()
        .register_type::<IkChain>()
        .register_type::<IkChainMethod>()
        .register_type::<IkSpline>()
        .register_type::<IkSplineCurve>()
        .register_type::<IkCurveKind>()
        .register_type::<IkVelocityLimit>();
    app.add_systems(
        schedule,
        (
            // After the reach targets, which write `IkCustom` weights this system reads.
            sync_secondary_stages
                .after(bevy::app::AnimationSystems)
                .after(crate::behaviours::move_reach_targets)
                .before(crate::IkSystems::Prepare),
            clear_spring_resets
                .in_set(crate::IkSystems::Prepare)
                .after(crate::stage::StageInputSystems),
        ),
    );
    app.add_plugins((
        IkStageInputPlugin::<IkSpringChain>::new(),
        IkStageInputPlugin::<IkChain>::new(),
        IkStageInputPlugin::<IkSpline>::new(),
        IkStageInputPlugin::<IkVelocityLimit>::new(),
    ));
}
