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
use bevy::ecs::entity::Entity;
use bevy::ecs::intern::Interned;
use bevy::ecs::query::{Changed, With};
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel};
use bevy::ecs::system::{Commands, Query};
use bevy::math::Vec3;
use ik_core::grounding::{FootGround, GroundHit, GroundingSettings, GroundingStage, Leg};
use ik_core::stack::StackError;

use crate::IkSystems;
use crate::character::IkCharacter;
pub use crate::components::grounding::{
    IkFootGround, IkFootState, IkGround, IkGroundHit, IkGroundSamples, IkGroundSource, IkGrounding,
    IkGroundingState, IkLeg,
};
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

    /// One mesh's hit on `ray` (front faces; its indices of either width, or none).
    fn cast_mesh<I: TryInto<usize> + Copy>(
        ray: Ray3d,
        affine: &Affine3A,
        positions: &[[f32; 3]],
        normals: Option<&[[f32; 3]]>,
        indices: Option<&[I]>,
    ) -> Option<bevy::picking::mesh_picking::ray_cast::RayMeshHit> {
        ray_mesh_intersection(
            ray,
            affine,
            positions,
            normals,
            indices,
            None,
            Backfaces::Cull,
        )
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
                Some(Indices::U16(i)) => cast_mesh(ray, &g.affine, positions, normals, Some(i)),
                Some(Indices::U32(i)) => cast_mesh(ray, &g.affine, positions, normals, Some(i)),
                None => cast_mesh::<usize>(ray, &g.affine, positions, normals, None),
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
