//! Stacking stages on a character: the [`IkStageOf`] relationship (a stage entity → its
//! character) with its ordered target [`IkStages`], and [`IkCustom`], a stage of your own
//! (an ik-core [`Stage`]).
//!
//! # Why stage entities
//!
//! A character's stages are entities related to it, in the order of [`IkStages`], rather than
//! one component holding a list. Weighed:
//!
//! - **entities in an ordered relationship** (chosen): each stage is an ordinary entity, so it
//!   gets its own [`IkDisabled`](crate::IkDisabled) marker, [`IkStatus`],
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
//! components, the first of `IkHumanoid` (full body), `IkRig`, `IkLimb`, `IkCustom` is used,
//! then kinds of your own in the order they were registered (see [`crate::kind`]).
//! An entity with `IkStageOf` is never a character itself.
//!
//! # Per-frame inputs: [`IkStageInput`]
//!
//! An [`IkCustom`] is built once (and again only when its structure changes: its bones, its
//! builder, or the key given with [`IkCustom::with_key`]); what changes every frame — goals,
//! ground samples, tracker poses, settings, the time step — goes into the *built* stage
//! through an [`IkStageInput`]: a type naming the components it reads on the stage entity
//! ([`IkStageInput::Data`], as Bevy's `ExtractComponent` does) and moving them into the
//! stage ([`IkStageInput::apply`]), with the frame time and the character's model space in an
//! [`IkStageContext`]. Register it with [`IkStageInputPlugin`]. One system per input type
//! runs in [`IkSystems::Prepare`](crate::IkSystems) after set-up, before the characters are
//! solved, so an input written in `Update` (or before `IkSystems::Prepare`) is used the same
//! frame. [`IkStageInput::weight`] and [`IkStageInput::target`] drive the [`IkCustom`]'s
//! weight and target entity from the same data. The crate's own stages —
//! [`IkLookAt`](crate::IkLookAt), [`IkAim`](crate::IkAim), [`IkTwist`](crate::IkTwist),
//! [`IkGrounding`](crate::IkGrounding) (with its [`IkGroundSamples`](crate::IkGroundSamples))
//! and [`IkVrBody`](crate::IkVrBody) — are fed this way; [`IkCharacter::custom_stage`] reads a
//! built stage's output back.
//!
//! ```
//! use bevy::prelude::*;
//! use bevy_ik::ik_core::Skeleton;
//! use bevy_ik::ik_core::stack::{CustomReport, PoseBuffer, StackError, Stage, StageReport};
//! use bevy_ik::prelude::*;
//!
//! /// The ik-core stage: turns one bone about its local Y axis by `angle`.
//! #[derive(Debug)]
//! struct Spin {
//!     bone: [usize; 1],
//!     angle: f32,
//! }
//!
//! impl Stage for Spin {
//!     fn bones(&self) -> &[usize] {
//!         &self.bone
//!     }
//!
//!     fn solve(&mut self, _: &Skeleton, pose: &mut PoseBuffer) -> Result<StageReport, StackError> {
//!         let b = self.bone[0];
//!         let (q, t) = (pose.pose().rotations[b], pose.pose().translations[b]);
//!         pose.set_local(b, q * Quat::from_rotation_y(self.angle), t);
//!         Ok(CustomReport { converged: true, iterations: 1, ..default() }.into())
//!     }
//! }
//!
//! /// Its per-frame input: a component on the stage entity.
//! #[derive(Component)]
//! struct SpinInput {
//!     angle: f32,
//!     weight: f32,
//! }
//!
//! impl IkStageInput for SpinInput {
//!     type Stage = Spin;
//!     type Data = &'static SpinInput;
//!
//!     fn apply(input: &SpinInput, stage: &mut Spin, _cx: &IkStageContext) {
//!         stage.angle = input.angle;
//!     }
//!
//!     fn weight(input: &&SpinInput) -> Option<f32> {
//!         Some(input.weight)
//!     }
//! }
//!
//! let mut app = App::new();
//! app.add_plugins((MinimalPlugins, TransformPlugin, IkPlugin::default()))
//!     .add_plugins(IkStageInputPlugin::<SpinInput>::new());
//! let character = app.world_mut().spawn(Transform::default()).id();
//! let neck = app
//!     .world_mut()
//!     .spawn((Name::new("neck"), Transform::from_xyz(0.0, 1.5, 0.0), ChildOf(character)))
//!     .id();
//! let stage = app
//!     .world_mut()
//!     .spawn((
//!         IkCustom::new(["neck"], |_: &Skeleton, bones: &[usize]| {
//!             Ok(Spin { bone: [bones[0]], angle: 0.0 })
//!         }),
//!         SpinInput { angle: 0.0, weight: 1.0 },
//!         IkStageOf(character),
//!     ))
//!     .id();
//! for frame in 1..=3 {
//!     // A new angle every frame: handed to the built stage, nothing is rebuilt.
//!     app.world_mut().get_mut::<SpinInput>(stage).unwrap().angle = 0.2 * frame as f32;
//!     app.update();
//!     let turned = app.world().get::<Transform>(neck).unwrap().rotation;
//!     assert!((turned.to_axis_angle().1 - 0.2 * frame as f32).abs() < 1e-3);
//! }
//! assert_eq!(app.world().get::<IkCharacter>(character).unwrap().set_ups(), 1);
//! ```

use core::any::TypeId;
use core::fmt;
use core::hash::{BuildHasher, Hash, Hasher};
use core::marker::PhantomData;
use std::sync::Arc;

use bevy::app::{App, Plugin, PostUpdate};
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::intern::Interned;
use bevy::ecs::query::{QueryItem, ReadOnlyQueryData, With};
use bevy::ecs::reflect::{ReflectComponent, ReflectFromWorld};
use bevy::ecs::resource::Resource;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel, SystemSet};
use bevy::ecs::system::{Commands, Local, ParamSet, Query, Res};
use bevy::ecs::world::{FromWorld, World};
use bevy::platform::hash::FixedHasher;
use bevy::reflect::prelude::*;
use bevy::time::Time;
use bevy::transform::components::GlobalTransform;
use bevy::transform::helper::TransformHelper;
use ik_core::stack::{AnyStage, StackError, Stage};
use ik_core::{BoneTransform, Skeleton};

use crate::character::IkCharacter;
use crate::components::{BoneRef, IkStatus, builder_setters};
use crate::error::IkError;
use crate::kind::{
    IkBoneResolver, IkBuildContext, IkGatherContext, IkStageComponent, IkStageEntity,
};

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
    dyn Fn(&Skeleton, &[usize]) -> Result<Box<dyn Stage>, StackError> + Send + Sync;

/// A stage of your own on a character: an ik-core [`Stage`] (look-at chain, aim, twist
/// distribution, grounding, VR body…) built when the character is set up.
///
/// Each frame the plugin hands the stage its [`IkCustom::target`]'s current transform in the
/// character's model space ([`Stage::set_target`]) and blends its output by
/// [`IkCustom::weight`]; anything else the stage needs every frame goes in through an
/// [`IkStageInput`] (see the [module docs](self#per-frame-inputs-ikstageinput)). The stage is
/// rebuilt only when [`IkCustom::bones`] or the builder (or the key given with
/// [`IkCustom::with_key`]) change.
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
    /// The structural key given with [`IkCustom::with_key`] (hashed with the stage type), or
    /// `None`: the builder's identity is the key.
    key: Option<u64>,
    /// The stage type the builder makes.
    stage_type: TypeId,
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
    pub fn new<S: Stage>(
        bones: impl IntoIterator<Item = impl Into<BoneRef>>,
        build: impl Fn(&Skeleton, &[usize]) -> Result<S, StackError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            bones: bones.into_iter().map(Into::into).collect(),
            target: None,
            weight: 1.0,
            build: Arc::new(move |s: &Skeleton, b: &[usize]| {
                build(s, b).map(|stage| Box::new(stage) as Box<dyn Stage>)
            }),
            key: None,
            stage_type: TypeId::of::<S>(),
        }
    }

    /// Declares that the builder makes the same stage for the same [`IkCustom::bones`] and
    /// `key` (whatever else it captured is a per-frame parameter, handed in by an
    /// [`IkStageInput`]): a new `IkCustom` inserted with equal bones, stage type and key
    /// keeps the built stage (and its state) instead of rebuilding it. Without a key, only
    /// the very same builder (a clone of this `IkCustom`) counts as unchanged.
    ///
    /// Put in the key what the builder reads other than the bones: axes, flags, counts
    /// (floats as `f32::to_bits`).
    #[must_use]
    pub fn with_key(mut self, key: impl Hash) -> Self {
        self.key = Some(key_hash(self.stage_type, key));
        self
    }

    /// Whether this stage was declared with `key` ([`IkCustom::with_key`]): hashes `key` and
    /// nothing else, so a component can tell a per-frame change from a structural one before
    /// building a new `IkCustom`.
    pub(crate) fn has_key(&self, key: impl Hash) -> bool {
        self.key == Some(key_hash(self.stage_type, key))
    }

    /// Whether `other` describes the same stage structure (bones, stage type and key, or
    /// builder identity): inserting it in place of `self` does not rebuild the stage.
    #[must_use]
    pub fn same_structure(&self, other: &Self) -> bool {
        self.bones == other.bones && self.builder_id() == other.builder_id()
    }

    builder_setters! {
        /// Sets the target entity.
        with_target(target: Entity) => target = Some(target);
        /// Sets the weight.
        with_weight(weight: f32) => weight = weight;
    }

    /// An identity for the builder (structural key): the hashed key, or the builder's address.
    pub(crate) fn builder_id(&self) -> (bool, u64) {
        match self.key {
            Some(k) => (true, k),
            None => (false, Arc::as_ptr(&self.build).cast::<()>() as usize as u64),
        }
    }
}

/// Per-frame input of a custom stage: what the plugin hands the built ik-core
/// [`Stage`] every frame, read from the stage entity's components, without rebuilding
/// it (see the [module docs](self#per-frame-inputs-ikstageinput)).
///
/// Bevy's own `ExtractComponent` pattern: [`IkStageInput::Data`] names the components read
/// on each stage entity that has an [`IkCustom`]; [`IkStageInput::apply`] moves them into the
/// built stage when it is a [`IkStageInput::Stage`]. Register each implementation with
/// [`IkStageInputPlugin`]. The plugin's own behaviour components ([`IkLookAt`](crate::IkLookAt),
/// [`IkAim`](crate::IkAim), [`IkTwist`](crate::IkTwist),
/// [`IkGrounding`](crate::IkGrounding), [`IkVrBody`](crate::IkVrBody)) are fed this way.
pub trait IkStageInput: Send + Sync + 'static {
    /// The built stage this input is for (the type the [`IkCustom`]'s builder returns).
    type Stage: Stage;
    /// The components read on the stage entity (e.g. `&'static MyInput`). It must not
    /// access [`IkCharacter`] or [`IkCustom`], which the system writes.
    type Data: ReadOnlyQueryData;

    /// Hands this frame's input to the built stage, after set-up and before the character's
    /// stack is solved. Not called while the stage is not set up.
    fn apply(data: QueryItem<'_, '_, Self::Data>, stage: &mut Self::Stage, cx: &IkStageContext);

    /// The stage's blend weight this frame, written to [`IkCustom::weight`] when it differs
    /// (`None`, the default: the weight is left as it is).
    fn weight(_data: &QueryItem<'_, '_, Self::Data>) -> Option<f32> {
        None
    }

    /// The stage's target entity this frame, written to [`IkCustom::target`] when it
    /// differs; the pipeline then hands its transform to [`Stage::set_target`] (`None`,
    /// the default: the target is left as it is; `Some(None)`: no target).
    fn target(_data: &QueryItem<'_, '_, Self::Data>) -> Option<Option<Entity>> {
        None
    }
}

/// What an [`IkStageInput`] may read besides its own data: the frame time, the character's
/// model space and the current transforms of other entities in it.
pub struct IkStageContext<'a, 'w, 's> {
    stage: Entity,
    character: Entity,
    dt: f32,
    model: GlobalTransform,
    bones: &'a [Entity],
    helper: &'a TransformHelper<'w, 's>,
}

impl IkStageContext<'_, '_, '_> {
    /// The stage entity.
    #[must_use]
    pub fn stage(&self) -> Entity {
        self.stage
    }

    /// The character entity.
    #[must_use]
    pub fn character(&self) -> Entity {
        self.character
    }

    /// This frame's time step, seconds (`Time::delta_secs`; 0 without a `Time` resource).
    #[must_use]
    pub fn delta_secs(&self) -> f32 {
        self.dt
    }

    /// The character's model space in the world (its model frame's current global
    /// transform; the identity when the model space is the world).
    #[must_use]
    pub fn model_to_world(&self) -> BoneTransform {
        let (scale, rotation, translation) = self.model.to_scale_rotation_translation();
        BoneTransform {
            translation,
            rotation,
            scale,
        }
    }

    /// The current (this frame, no lag) global transform of `entity` in the character's
    /// model space, with its rotation normalised; `None` when the entity has no transform or
    /// it is not finite.
    #[must_use]
    pub fn in_model_space(&self, entity: Entity) -> Option<BoneTransform> {
        let g = self.helper.compute_global_transform(entity).ok()?;
        let t = g.reparented_to(&self.model);
        (t.translation.is_finite() && t.rotation.is_finite() && t.scale.is_finite()).then(|| {
            BoneTransform {
                translation: t.translation,
                rotation: t.rotation.normalize(),
                scale: t.scale,
            }
        })
    }

    /// The bone entities of the character's skeleton, parallel to the skeleton's bone indices
    /// (the indices a stage holds).
    #[must_use]
    pub fn bones(&self) -> &[Entity] {
        self.bones
    }
}

/// The [`IkStageInput::weight`] and [`IkStageInput::target`] of an input whose data is the
/// component itself (`type Data = &'static Self`) with `weight` and `target` fields: written
/// once here for the behaviours that have both.
macro_rules! weight_and_target_fields {
    () => {
        fn weight(data: &&Self) -> Option<f32> {
            Some(data.weight)
        }

        fn target(data: &&Self) -> Option<Option<bevy::ecs::entity::Entity>> {
            Some(data.target)
        }
    };
}
pub(crate) use weight_and_target_fields;

/// Registers an [`IkStageInput`]: one system, in [`IkSystems::Prepare`](crate::IkSystems)
/// after set-up, hands every stage entity's input to its built stage. Add it after
/// [`IkPlugin`](crate::IkPlugin) (it runs in the same schedule).
pub struct IkStageInputPlugin<T: IkStageInput>(PhantomData<fn() -> T>);

impl<T: IkStageInput> Default for IkStageInputPlugin<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T: IkStageInput> IkStageInputPlugin<T> {
    /// The plugin.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T: IkStageInput> Plugin for IkStageInputPlugin<T> {
    fn build(&self, app: &mut App) {
        let schedule = app
            .world()
            .get_resource::<IkSchedule>()
            .map_or_else(|| PostUpdate.intern(), |s| s.0);
        app.add_systems(
            schedule,
            apply_stage_inputs::<T>
                .in_set(StageInputSystems)
                .ambiguous_with(StageInputSystems),
        );
    }
}

/// The structural key of a stage of type `stage_type` declared with `key`.
fn key_hash(stage_type: TypeId, key: impl Hash) -> u64 {
    let mut h = FixedHasher.build_hasher();
    stage_type.hash(&mut h);
    key.hash(&mut h);
    h.finish()
}

/// The schedule [`IkPlugin`](crate::IkPlugin) runs in.
#[derive(Resource, Clone, Copy)]
pub(crate) struct IkSchedule(pub(crate) Interned<dyn ScheduleLabel>);

/// The systems of every [`IkStageInputPlugin`]: in `IkSystems::Prepare` after set-up. They may
/// run in any order among themselves: each writes only its own stage entities' stages.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StageInputSystems;

/// Hands every `T` input to its built stage.
#[allow(clippy::type_complexity, reason = "system parameters")]
fn apply_stage_inputs<T: IkStageInput>(
    mut queries: ParamSet<(
        (
            Query<(Entity, Option<&IkStageOf>, T::Data), With<IkCustom>>,
            Query<&mut IkCharacter>,
        ),
        Query<&mut IkCustom>,
    )>,
    time: Option<Res<Time>>,
    helper: TransformHelper,
    mut edits: Local<Vec<(Entity, Option<f32>, Option<Option<Entity>>)>>,
) {
    let dt = time.map_or(0.0, |t| t.delta_secs());
    edits.clear();
    {
        let (inputs, mut characters) = queries.p0();
        for (stage, stage_of, data) in &inputs {
            let (weight, target) = (T::weight(&data), T::target(&data));
            if weight.is_some() || target.is_some() {
                edits.push((stage, weight, target));
            }
            let character = stage_of.map_or(stage, |s| s.0);
            let Ok(mut ch) = characters.get_mut(character) else {
                continue;
            };
            let Some((built, frame, bones)) = ch.custom_stage_parts::<T::Stage>(stage) else {
                continue;
            };
            let Ok(model) = crate::pose_io::model_space(&helper, frame) else {
                continue;
            };
            let cx = IkStageContext {
                stage,
                character,
                dt,
                model,
                bones,
                helper: &helper,
            };
            T::apply(data, built, &cx);
        }
    }
    let mut customs = queries.p1();
    for &(stage, weight, target) in edits.iter() {
        let Ok(mut c) = customs.get_mut(stage) else {
            continue;
        };
        if let Some(w) = weight
            && c.weight != w
        {
            c.weight = w;
        }
        if let Some(t) = target
            && c.target != t
        {
            c.target = t;
        }
    }
}

/// Inserts `new` on `entity` unless `existing` has the same structure
/// ([`IkCustom::same_structure`]): what a component that describes a custom stage does when
/// it changes. The existing target and weight carry over.
pub(crate) fn sync_custom(
    commands: &mut Commands,
    entity: Entity,
    existing: Option<&IkCustom>,
    new: IkCustom,
) {
    if existing.is_none_or(|c| !c.same_structure(&new)) {
        let new = match existing {
            Some(c) => IkCustom {
                target: c.target,
                weight: c.weight,
                ..new
            },
            None => new,
        };
        commands.entity(entity).insert(new);
    }
}

/// A custom stage registers as every stage kind does: built by its builder on its bones,
/// handed its target entity's current transform every frame.
impl IkStageComponent for IkCustom {
    type Key = (Vec<BoneRef>, (bool, u64));
    type State = ();

    fn key(&self) -> Self::Key {
        (self.bones.clone(), self.builder_id())
    }

    fn resolve(&self, r: &mut IkBoneResolver<'_, '_, '_>) -> Result<Vec<Entity>, IkError> {
        let character = r.character();
        self.bones.iter().map(|b| r.find(b, character)).collect()
    }

    fn build(
        &self,
        cx: &IkBuildContext<'_, '_, '_>,
        bones: &[usize],
    ) -> Result<(AnyStage, ()), IkError> {
        let stage =
            (self.build)(cx.skeleton(), bones).map_err(|e| IkError::InvalidSettings(e.into()))?;
        Ok((AnyStage::from_boxed(stage), ()))
    }

    crate::kind::weight_field!();

    fn gather(
        &self,
        _entity: &IkStageEntity<'_, '_, '_>,
        stage: &mut AnyStage,
        _state: &mut (),
        cx: &mut IkGatherContext<'_, '_, '_, '_>,
    ) -> Result<(), IkError> {
        let target = match self.target {
            None => None,
            Some(t) => Some(cx.target(t)?),
        };
        stage.as_dyn_mut().set_target(target);
        Ok(())
    }
}
