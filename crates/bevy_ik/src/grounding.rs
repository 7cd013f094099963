//! Foot grounding on a character: [`IkGrounding`] puts ik-core's
//! [`GroundingStage`] in the character's stack (feet on
//! uneven ground, slopes and stairs; the pelvis lowered so the lower foot reaches; planted feet
//! locked in the world; smoothing that does not depend on the frame rate).
//!
//! Where the ground comes from ([`IkGroundSource`]):
//!
//! - [`IkGroundSource::Samples`]: your system writes [`IkGroundSamples`] (world space: a hit
//!   point and normal under each foot's heel and toe, or none) before [`IkSystems::Prepare`]
//!   — from a physics engine's ray casts, a height map, a navmesh… Look under each foot bone,
//!   and under a planted foot's [`IkFootState::goal`] ([`IkGroundingState`]), where it is
//!   locked.
//! - [`IkGroundSource::Meshes`] (feature `mesh-ground`): the plugin casts down through the
//!   probes against the meshes of entities marked [`IkGround`], with Bevy's own mesh ray
//!   casting (`bevy_picking`'s triangle intersection, no physics engine). Only marked entities
//!   are hit, so the character never hits itself. All characters' casts run in one system, in
//!   parallel, against one list of ground meshes gathered once per frame; nothing is
//!   allocated per frame once the list has grown.
//!
//! The component is sugar over [`IkCustom`]: on the character entity (a character whose only
//! stage is the grounding) or on a stage entity with [`IkStageOf`] — put it *after* a
//! full-body stage ([`IkHumanoid`](crate::IkHumanoid)), so it corrects the legs and pelvis of
//! that stage's output. Its structural fields (legs, pelvis, up) rebuild the stage when they
//! change; the rest, with the [`IkGroundSamples`], are handed to the built stage every frame
//! through its [`IkStageInput`] implementation.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_ik::prelude::*;
//!
//! fn spawn(mut commands: Commands, character: Entity) {
//!     // The humanoid's legs (by role), ground from Bevy mesh ray casts against `IkGround`.
//!     commands.spawn((IkGrounding::humanoid(), IkStageOf(character)));
//! }
//! ```
//!
//! ## Systems
//!
//! In [`IkSystems::Prepare`]: `sync_grounding_stages` (before set-up: the [`IkCustom`]),
//! then after set-up `cast_ground_rays` (feature `mesh-ground`) and the
//! [`IkStageInput`] system (the samples, the frame time and the model frame into the stage).
//! In [`IkSystems::Writeback`]: `publish_grounding_state` ([`IkGroundingState`], read with
//! [`IkCharacter::custom_stage`]), after `publish_ik_status`.

use bevy::app::App;
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::intern::Interned;
use bevy::ecs::query::{Changed, With};
use bevy::ecs::reflect::ReflectComponent;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel};
use bevy::ecs::system::{Commands, Query};
use bevy::math::Vec3;
use bevy::reflect::prelude::*;
use ik_core::grounding::{FootGround, GroundHit, GroundingSettings, GroundingStage, Leg};
use ik_core::humanoid::HumanoidBone;
use ik_core::stack::StackError;

use crate::IkSystems;
use crate::character::IkCharacter;
use crate::components::BoneRef;
use crate::setup::SetupSystems;
use crate::stage::{
    IkCustom, IkStageContext, IkStageInput, IkStageInputPlugin, IkStageOf, StageInputSystems,
    sync_custom,
};

pub(crate) fn register(app: &mut App, schedule: Interned<dyn ScheduleLabel>) {
    app.register_type::<IkGrounding>()
        .register_type::<IkLeg>()
        .register_type::<IkGroundSource>()
        .register_type::<IkGroundSamples>()
        .register_type::<IkGroundingState>()
        .register_type::<IkGround>();
    app.add_systems(
        schedule,
        (
            sync_grounding_stages
                .in_set(IkSystems::Prepare)
                .before(SetupSystems),
            #[cfg(feature = "mesh-ground")]
            mesh::cast_ground_rays
                .in_set(IkSystems::Prepare)
                .after(SetupSystems)
                .before(StageInputSystems),
            publish_grounding_state
                .in_set(IkSystems::Writeback)
                .after(crate::pipeline::publish_ik_status)
                .after(crate::pipeline::write_bone_transforms),
        ),
    );
    app.add_plugins(IkStageInputPlugin::<IkGrounding>::new());
}

/// One leg: the thigh (hip joint), shin (knee), foot (ankle) and, if the rig has one, toe
/// (ball) bones.
#[derive(Debug, Clone, PartialEq, Default, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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

    /// Sets the toe bone.
    #[must_use]
    pub fn with_toe(mut self, toe: impl Into<BoneRef>) -> Self {
        self.toe = Some(toe.into());
        self
    }
}

/// Where an [`IkGrounding`] gets its ground.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Component, Debug, Default, PartialEq, Clone)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
pub struct IkGround;

/// Foot grounding on a character: see the [module docs](self).
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[reflect(Component, Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize),
    serde(default)
)]
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

    /// Sets the ground source.
    #[must_use]
    pub fn with_source(mut self, source: IkGroundSource) -> Self {
        self.source = source;
        self
    }

    /// The bones handed to the stage builder, in order: per leg upper, lower, foot (and toe),
    /// then the pelvis.
    fn bones(&self) -> Vec<BoneRef> {
        self.bone_refs().cloned().collect()
    }

    /// The stage's bones in order: each leg's upper, lower, foot (and toe), then the pelvis.
    fn bone_refs(&self) -> impl Iterator<Item = &BoneRef> {
        self.legs
            .iter()
            .flat_map(|l| [&l.upper, &l.lower, &l.foot].into_iter().chain(&l.toe))
            .chain(&self.pelvis)
    }

    fn settings(&self, current: &GroundingSettings) -> GroundingSettings {
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
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
pub struct IkGroundHit {
    /// A point on the ground.
    pub point: Vec3,
    /// The ground's normal there.
    pub normal: Vec3,
}

/// The ground under one foot (world space): under the heel/ankle and under the toe, either or
/// both, or none.
#[derive(Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Component, Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
pub struct IkGroundSamples {
    /// Per leg.
    pub feet: Vec<IkFootGround>,
}

/// One foot's grounding result (world space).
#[derive(Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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
#[reflect(Component, Debug, PartialEq, Clone, Default)]
#[cfg_attr(
    feature = "serialize",
    derive(serde::Serialize, serde::Deserialize),
    reflect(Serialize, Deserialize)
)]
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

/// Inserts or updates the [`IkCustom`] behind each changed [`IkGrounding`] (rebuilt only when
/// its structure, [`IkGrounding::stage_key`], changed).
fn sync_grounding_stages(
    mut commands: Commands,
    changed: Query<(Entity, &IkGrounding, Option<&IkCustom>), Changed<IkGrounding>>,
) {
    for (entity, g, custom) in &changed {
        // Per-frame fields (weight, settings, source) go in through `IkStageInput`: nothing is
        // built for them.
        let same =
            custom.is_some_and(|c| c.has_key(GroundingKey(g)) && c.bones.iter().eq(g.bone_refs()));
        if !same {
            sync_custom(&mut commands, entity, custom, g.custom());
        }
    }
}

/// What the grounding stage's builder reads besides the bones: which legs have toes, a
/// pelvis, up (hashed without collecting anything).
struct GroundingKey<'a>(&'a IkGrounding);

impl core::hash::Hash for GroundingKey<'_> {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        let g = self.0;
        g.legs.len().hash(h);
        for l in &g.legs {
            l.toe.is_some().hash(h);
        }
        g.pelvis.is_some().hash(h);
        g.up.to_array().map(f32::to_bits).hash(h);
    }
}

impl IkGrounding {
    /// The custom stage that builds the [`GroundingStage`].
    fn custom(&self) -> IkCustom {
        let toes: Vec<bool> = self.legs.iter().map(|l| l.toe.is_some()).collect();
        let (has_pelvis, up) = (self.pelvis.is_some(), self.up);
        IkCustom::new(self.bones(), move |skeleton, idx| {
            let mut legs = Vec::with_capacity(toes.len());
            let mut i = 0;
            for &toe in &toes {
                let leg = Leg::new(idx[i], idx[i + 1], idx[i + 2]);
                i += 3;
                legs.push(if toe {
                    i += 1;
                    leg.with_toe(idx[i - 1])
                } else {
                    leg
                });
            }
            let pelvis = has_pelvis.then(|| idx[i]);
            let leg_length = GroundingStage::try_new(skeleton, &legs, pelvis)
                .map_err(StackError::from)?
                .leg_length();
            let settings = GroundingSettings {
                up: Some(up),
                ..GroundingSettings::for_leg_length(leg_length)
            };
            GroundingStage::try_with_settings(skeleton, &legs, pelvis, settings)
                .map_err(StackError::from)
        })
        .with_key(GroundingKey(self))
        .with_weight(self.weight)
    }
}

/// Hands each grounding stage this frame's ground (in model space), frame time, model frame
/// and settings.
impl IkStageInput for IkGrounding {
    type Stage = GroundingStage;
    type Data = (&'static Self, &'static IkGroundSamples);

    fn apply(
        (g, samples): (&Self, &IkGroundSamples),
        stage: &mut GroundingStage,
        cx: &IkStageContext,
    ) {
        #[cfg(not(feature = "mesh-ground"))]
        if g.source == IkGroundSource::Meshes {
            bevy::log::warn_once!(
                "IkGrounding on {}: IkGroundSource::Meshes needs bevy_ik's `mesh-ground` feature; no ground is found",
                cx.stage()
            );
        }
        let settings = g.settings(stage.settings());
        if settings != *stage.settings() && stage.set_settings(settings).is_err() {
            // Bad values: the stage keeps its settings (set-up reports structural errors).
            bevy::log::warn_once!("IkGrounding on {}: invalid settings ignored", cx.stage());
        }
        let world = cx.model_to_world();
        let to_model = world.inverse();
        stage.dt = cx.delta_secs();
        stage.model_to_world = world;
        let hit = |h: &IkGroundHit| {
            GroundHit::new(
                to_model.transform_point(h.point),
                to_model.rotation * h.normal,
            )
        };
        for (i, foot) in stage.ground.iter_mut().enumerate() {
            *foot = samples
                .feet
                .get(i)
                .map_or(FootGround::NONE, |s| FootGround {
                    heel: s.heel.as_ref().map(hit),
                    toe: s.toe.as_ref().map(hit),
                });
        }
    }

    fn weight((g, _): &(&Self, &IkGroundSamples)) -> Option<f32> {
        Some(g.weight)
    }
}

/// Copies each stage's decisions into [`IkGroundingState`] (world space).
fn publish_grounding_state(
    mut groundings: Query<(Entity, &mut IkGroundingState, Option<&IkStageOf>), With<IkGrounding>>,
    characters: Query<&IkCharacter>,
) {
    for (entity, mut state, stage_of) in &mut groundings {
        let Ok(character) = characters.get(stage_of.map_or(entity, |s| s.0)) else {
            continue;
        };
        let Some(stage) = character.custom_stage::<GroundingStage>(entity) else {
            continue;
        };
        let entities = character.bones();
        let world = stage.model_to_world;
        let state = state.as_mut();
        let out = stage.output();
        state.feet.resize(out.feet.len(), IkFootState::default());
        state.bones.clear();
        for ((f, s), leg) in out.feet.iter().zip(&mut state.feet).zip(stage.legs()) {
            *s = IkFootState {
                goal: world.transform_point(f.goal),
                normal: world.rotation * f.normal,
                weight: f.weight,
                planted: f.planted,
                grounded: f.grounded,
            };
            state
                .bones
                .push((entities[leg.foot], leg.toe.map(|t| entities[t])));
        }
        state.pelvis_offset = world.rotation * out.pelvis_offset;
        state.up = world.rotation * stage.up();
    }
}

#[cfg(feature = "mesh-ground")]
mod mesh {
    //! [`IkGroundSource::Meshes`]: Bevy mesh ray casts down through each foot.

    use bevy::asset::{AssetId, Assets};
    use bevy::camera::primitives::Aabb;
    use bevy::ecs::system::{Local, Res};
    use bevy::math::{Affine3A, Dir3, Ray3d};
    use bevy::mesh::{Indices, Mesh, Mesh3d};
    use bevy::picking::mesh_picking::ray_cast::{Backfaces, ray_mesh_intersection};
    use bevy::transform::components::GlobalTransform;
    use bevy::transform::helper::TransformHelper;

    use super::*;

    /// A ground mesh gathered for this frame's casts.
    pub(super) struct GroundMesh {
        affine: Affine3A,
        /// Its bounds in the world (from its `Aabb`), `None`: test every ray.
        bounds: Option<(Vec3, Vec3)>,
        mesh: AssetId<Mesh>,
    }

    /// The world-space box around `aabb` (mesh space) placed by `affine`.
    fn world_bounds(aabb: &Aabb, affine: &Affine3A) -> (Vec3, Vec3) {
        let center = affine.transform_point3a(aabb.center);
        let m = affine.matrix3;
        let h = aabb.half_extents;
        let extent = m.x_axis.abs() * h.x + m.y_axis.abs() * h.y + m.z_axis.abs() * h.z;
        ((center - extent).into(), (center + extent).into())
    }

    /// Whether the segment `origin + t · dir`, `t ∈ [0, max]`, meets the box (slab test).
    fn segment_meets_box(origin: Vec3, inv_dir: Vec3, max: f32, (lo, hi): (Vec3, Vec3)) -> bool {
        let t0 = (lo - origin) * inv_dir;
        let t1 = (hi - origin) * inv_dir;
        let near = t0.min(t1).max_element().max(0.0);
        let far = t0.max(t1).min_element().min(max);
        // NaN (a zero direction component with the origin on a slab plane) counts as a meet.
        near <= far || near.is_nan() || far.is_nan()
    }

    /// Casts down through every [`IkGroundSource::Meshes`] grounding's feet and writes the
    /// nearest hits into [`IkGroundSamples`].
    pub(super) fn cast_ground_rays(
        mut groundings: Query<(&IkGrounding, &mut IkGroundSamples, &IkGroundingState)>,
        grounds: Query<(&Mesh3d, &GlobalTransform, Option<&Aabb>), With<IkGround>>,
        meshes: Option<Res<Assets<Mesh>>>,
        helper: TransformHelper,
        mut list: Local<Vec<GroundMesh>>,
    ) {
        // Without an asset server (a headless app without `AssetPlugin`) there are no meshes.
        let Some(meshes) = meshes else {
            return;
        };
        list.clear();
        list.extend(grounds.iter().map(|(m, g, aabb)| {
            let affine = g.affine();
            GroundMesh {
                bounds: aabb.map(|a| world_bounds(a, &affine)),
                affine,
                mesh: m.id(),
            }
        }));
        let list = &*list;
        let meshes = &*meshes;
        let helper = &helper;
        groundings
            .par_iter_mut()
            .for_each(|(g, mut samples, state)| {
                if g.source != IkGroundSource::Meshes || state.bones.is_empty() {
                    return;
                }
                let up = if state.up == Vec3::ZERO {
                    Vec3::Y
                } else {
                    state.up
                };
                let Ok(down) = Dir3::new(-up) else {
                    return;
                };
                let samples = samples.as_mut();
                samples
                    .feet
                    .resize(state.bones.len(), IkFootGround::default());
                for (i, &(foot, toe)) in state.bones.iter().enumerate() {
                    let Ok(ankle) = helper.compute_global_transform(foot) else {
                        samples.feet[i] = IkFootGround::default();
                        continue;
                    };
                    let ankle = ankle.translation();
                    let ball = toe
                        .and_then(|t| helper.compute_global_transform(t).ok())
                        .map(|t| t.translation());
                    // A planted foot stays where it is locked.
                    let lock = state.feet.get(i).filter(|s| s.planted).map(|s| s.goal);
                    let shift = lock.map_or(Vec3::ZERO, |l| {
                        let d = l - ankle;
                        d - up * d.dot(up)
                    });
                    let cast = |p: Vec3| {
                        cast_down(
                            list,
                            meshes,
                            p + shift + up * g.cast_above,
                            down,
                            g.cast_above + g.cast_below,
                        )
                    };
                    samples.feet[i] = IkFootGround {
                        heel: cast(ankle),
                        toe: ball.and_then(cast),
                    };
                }
            });
    }

    /// The nearest hit of a ray from `origin` along `dir` within `max` against `list`.
    pub(super) fn cast_down(
        list: &[GroundMesh],
        meshes: &Assets<Mesh>,
        origin: Vec3,
        dir: Dir3,
        max: f32,
    ) -> Option<IkGroundHit> {
        let ray = Ray3d::new(origin, dir);
        let inv_dir = dir.recip();
        let mut best: Option<(f32, IkGroundHit)> = None;
        for g in list {
            if let Some(bounds) = g.bounds
                && !segment_meets_box(origin, inv_dir, max, bounds)
            {
                continue;
            }
            let Some(mesh) = meshes.get(g.mesh) else {
                continue;
            };
            let Some(positions) = mesh
                .attribute(Mesh::ATTRIBUTE_POSITION)
                .and_then(|a| a.as_float3())
            else {
                continue;
            };
            let normals = mesh
                .attribute(Mesh::ATTRIBUTE_NORMAL)
                .and_then(|a| a.as_float3());
            let hit = match mesh.indices() {
                Some(Indices::U16(i)) => ray_mesh_intersection(
                    ray,
                    &g.affine,
                    positions,
                    normals,
                    Some(i),
                    None,
                    Backfaces::Cull,
                ),
                Some(Indices::U32(i)) => ray_mesh_intersection(
                    ray,
                    &g.affine,
                    positions,
                    normals,
                    Some(i),
                    None,
                    Backfaces::Cull,
                ),
                None => ray_mesh_intersection::<usize>(
                    ray,
                    &g.affine,
                    positions,
                    normals,
                    None,
                    None,
                    Backfaces::Cull,
                ),
            };
            if let Some(h) = hit {
                let d = (h.point - origin).dot(*dir);
                if d <= max && best.as_ref().is_none_or(|(b, _)| d < *b) {
                    best = Some((
                        d,
                        IkGroundHit {
                            point: h.point,
                            normal: h.normal.normalize_or(-*dir),
                        },
                    ));
                }
            }
        }
        best.map(|(_, h)| h)
    }
}
