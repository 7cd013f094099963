//! One registration per stage kind: [`IkStageComponent`], the trait a component implements
//! to describe a stage of a character, and [`IkStageAppExt::register_ik_stage`], which
//! registers it.
//!
//! The crate's own stage components register exactly as yours do: [`IkHumanoid`] (the
//! full-body stage), [`IkRig`] (a Jacobian rig), [`IkLimb`] (an analytic two-bone limb),
//! [`IkLimbBatch`] (a run of such limbs solved together) and [`IkCustom`] (any ik-core
//! [`Stage`](ik_core::stack::Stage), which the behaviours, grounding, secondary motion and the
//! VR body build). A registered kind says, in one place, what its
//! structure is ([`IkStageComponent::key`]: a change rebuilds the stage), which bones it needs
//! ([`IkStageComponent::resolve`]), how its ik-core stage is built
//! ([`IkStageComponent::build`]), what it hands the built stage every frame
//! ([`IkStageComponent::gather`], run in the character's own task of
//! [`IkSystems::Solve`](crate::IkSystems), targets read at their current transform) and what
//! its status shows ([`IkStageComponent::summarise`]). The stack's warm start, weights,
//! disabling, final-pose measurement and status publishing are the plugin's, the same for
//! every kind.
//!
//! An entity carries one stage: when it has components of several kinds, the first registered
//! kind that describes a stage wins (the built-ins, in order: `IkHumanoid` with the full-body
//! solver, `IkRig`, `IkLimb`, `IkLimbBatch`, `IkCustom`; then yours, in registration order).
//!
//! [`IkHumanoid`]: crate::IkHumanoid
//! [`IkRig`]: crate::IkRig
//! [`IkLimb`]: crate::IkLimb
//! [`IkLimbBatch`]: crate::IkLimbBatch
//! [`IkCustom`]: crate::IkCustom

use core::any::Any;

use bevy::app::App;
use bevy::ecs::component::{Component, ComponentId};
use bevy::ecs::entity::Entity;
use bevy::ecs::lifecycle::RemovedComponents;
use bevy::ecs::query::{Changed, Without};
use bevy::ecs::resource::{IsResource, Resource};
use bevy::ecs::schedule::{IntoScheduleConfigs, SystemSet};
use bevy::ecs::system::{Query, ResMut};
use bevy::ecs::world::{EntityRefExcept, FilteredEntityRef, FromWorld, World};
use bevy::transform::components::GlobalTransform;
use ik_core::humanoid::{HumanoidBone, HumanoidMap};
use ik_core::stack::{AnyStage, PoseBuffer, StageReport};
use ik_core::{BoneTransform, Skeleton};

use crate::balance::IkCenterOfMass;
use crate::character::{Hierarchy, IkCharacter, Resolver};
use crate::components::{BoneRef, IkDisabled, IkKeepGoals, IkSolveTime, IkStatus};
use crate::error::IkError;
use crate::pose_io::{ModelTarget, TargetReader};
use crate::stage::{IkSchedule, IkStageOf};

/// A component that describes one stage of a character (see the [module docs](self)).
/// Register it with [`IkStageAppExt::register_ik_stage`].
pub trait IkStageComponent: Component + Sized {
    /// The structural part of the description: when it changes, the stage is rebuilt (and
    /// loses its warm start); everything else is a per-frame parameter.
    type Key: PartialEq + Send + Sync + 'static;
    /// Data the plugin keeps beside the built stage, from [`IkStageComponent::build`] to every
    /// [`IkStageComponent::gather`] and [`IkStageComponent::summarise`] (`()` for none).
    type State: Send + Sync + 'static;

    /// Whether this component describes a stage on `entity` now (default: always).
    fn describes(&self, _entity: &IkStageEntity<'_, '_, '_>) -> bool {
        true
    }

    /// The structural key (see [`IkStageComponent::Key`]).
    fn key(&self) -> Self::Key;

    /// Where this stage's bones given by name are searched when not under the character (a
    /// one-stage limb's [`IkLimb::hierarchy`](crate::IkLimb::hierarchy)); no warning is logged
    /// for a missing bone while nothing is named under it yet (its scene is still to spawn).
    fn search_root(&self) -> Option<Entity> {
        None
    }

    /// The bone entities the stage needs (they and their ancestors up to the character make
    /// its skeleton); [`IkStageComponent::build`] gets their skeleton indices in this order.
    ///
    /// # Errors
    ///
    /// A bone that is not there (yet), or bones that do not form the stage's chain.
    fn resolve(&self, bones: &mut IkBoneResolver<'_, '_, '_>) -> Result<Vec<Entity>, IkError>;

    /// Builds the ik-core stage on the character's skeleton; `bones` are the skeleton indices
    /// of [`IkStageComponent::resolve`]'s entities.
    ///
    /// # Errors
    ///
    /// The stage rejects the skeleton or the settings.
    fn build(
        &self,
        cx: &IkBuildContext<'_, '_, '_>,
        bones: &[usize],
    ) -> Result<(AnyStage, Self::State), IkError>;

    /// The stage's blend weight this frame (clamped to `[0, 1]` by the stack).
    fn weight(&self) -> f32;

    /// Hands this frame's goals (targets read now, in the character's model space) and
    /// settings to the built stage, in the character's task before its stack is solved.
    ///
    /// # Errors
    ///
    /// A target entity that is missing or not finite, or settings the stage rejects: the
    /// stage is not solved this frame and its status says why.
    fn gather(
        &self,
        entity: &IkStageEntity<'_, '_, '_>,
        stage: &mut AnyStage,
        state: &mut Self::State,
        cx: &mut IkGatherContext<'_, '_, '_, '_>,
    ) -> Result<(), IkError>;

    /// What the stage's [`IkStatus`] shows beyond its report (per-goal residuals, a measured
    /// rotation residual…), after the stack was solved. The default lists the report's
    /// position residual as the one goal's.
    fn summarise(_stage: &mut AnyStage, _state: &Self::State, summary: &mut IkStageSummary<'_>) {
        let residual = summary.position_residual;
        summary.push_residual(residual);
    }
}

/// The [`IkStageComponent::weight`] of a component with a `weight` field: written once here
/// for the stage kinds that have one.
macro_rules! weight_field {
    () => {
        fn weight(&self) -> f32 {
            self.weight
        }
    };
}
pub(crate) use weight_field;

/// Registers stage components on an [`App`].
pub trait IkStageAppExt {
    /// Registers `C` as a stage kind (see [`IkStageComponent`]): entities with `C` become
    /// stages of their character (the entity itself, or the one their
    /// [`IkStageOf`] names), get an [`IkStatus`], and a change of `C` is looked at by
    /// set-up. Registering a kind twice does nothing.
    ///
    /// # Panics
    ///
    /// Without [`IkPlugin`](crate::IkPlugin): add it first (the kind's systems go in its
    /// schedule).
    fn register_ik_stage<C: IkStageComponent>(&mut self) -> &mut Self;
}

impl IkStageAppExt for App {
    fn register_ik_stage<C: IkStageComponent>(&mut self) -> &mut Self {
        let schedule = self
            .world()
            .get_resource::<IkSchedule>()
            .map(|s| s.0)
            .expect("register_ik_stage: add IkPlugin first");
        let mut kinds = self.world_mut().get_resource_or_init::<IkStageKinds>();
        let id = core::any::TypeId::of::<C>();
        if kinds.kinds.iter().any(|k| k.type_id == id) {
            return self;
        }
        kinds.kinds.push(KindFns::of::<C>());
        // Already required by the component's own `#[require]`: nothing to add.
        let _ = self.try_register_required_components::<C, IkStatus>();
        let _ = self.try_register_required_components::<C, IkCharacter>();
        self.add_systems(
            schedule,
            note_stage_changes::<C>
                .in_set(StageChangeSystems)
                .ambiguous_with(StageChangeSystems),
        );
        self
    }
}

/// Also watches `T` (a component a registered kind reads, e.g. the humanoid's targets) for
/// changes that set-up must look at.
pub(crate) fn watch_stage_component<T: Component>(app: &mut App) {
    let schedule = app
        .world()
        .get_resource::<IkSchedule>()
        .map(|s| s.0)
        .expect("IkPlugin first");
    app.add_systems(
        schedule,
        note_stage_changes::<T>
            .in_set(StageChangeSystems)
            .ambiguous_with(StageChangeSystems),
    );
}

/// The systems that note changed stage components for set-up (one per registered kind), in
/// `IkSystems::Prepare` before `set_up_characters`.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StageChangeSystems;

/// The stage entities whose description changed since set-up last ran (with their
/// character), and whether a stage component was removed.
#[derive(Resource, Debug, Default)]
pub(crate) struct StageChanges {
    pub(crate) changed: Vec<(Entity, Entity)>,
    pub(crate) removed: bool,
}

fn note_stage_changes<T: Component>(
    changed: Query<(Entity, Option<&IkStageOf>), Changed<T>>,
    mut removed: RemovedComponents<T>,
    mut out: ResMut<StageChanges>,
) {
    out.changed
        .extend(changed.iter().map(|(e, of)| (e, of.map_or(e, |o| o.0))));
    if removed.read().count() > 0 {
        out.removed = true;
    }
}

/// A stage entity as set-up and the pipeline read it: every component but the ones they
/// write (the character's task publishes the status and centre of mass of a stage on the
/// character's own entity).
pub(crate) type StageEntityRef<'w, 's> =
    EntityRefExcept<'w, 's, (IkCharacter, IkStatus, IkSolveTime, IkCenterOfMass)>;

/// The query of stage entities (resources, which are entities too, left out: the systems
/// write some).
pub(crate) type StageEntities<'w, 's> =
    Query<'w, 's, StageEntityRef<'static, 'static>, Without<IsResource>>;

/// A stage entity as a kind's functions read it: the same access as [`StageEntityRef`], as a
/// `FilteredEntityRef`, whose typed `get` hashes the component's type id once (where
/// `EntityRefExcept::get` also looks up each excluded component's id: five look-ups a read
/// instead of two, per stage and frame in a crowd).
pub(crate) type StageView<'w, 's> = FilteredEntityRef<'w, 's>;

/// A stage entity's components, read-only (what a kind's `describes` and `gather` may read
/// besides its own component, e.g. the humanoid's targets).
pub struct IkStageEntity<'a, 'w, 's>(pub(crate) &'a StageView<'w, 's>);

impl<'w> IkStageEntity<'_, 'w, '_> {
    /// The stage entity.
    #[must_use]
    pub fn id(&self) -> Entity {
        self.0.id()
    }

    /// Component `T` of the stage entity (`None` for the plugin's runtime components
    /// [`IkCharacter`], [`IkStatus`], [`IkSolveTime`] and [`IkCenterOfMass`]).
    #[must_use]
    pub fn get<T: Component>(&self) -> Option<&'w T> {
        self.0.get::<T>()
    }

    /// Whether the stage entity has a `T`.
    #[must_use]
    pub fn contains<T: Component>(&self) -> bool {
        self.0.contains::<T>()
    }
}

/// Finds a stage's bones at set-up (see [`IkStageComponent::resolve`]).
pub struct IkBoneResolver<'a, 'w, 's>(pub(crate) Resolver<'a, 'w, 's>);

impl IkBoneResolver<'_, '_, '_> {
    /// The character entity.
    #[must_use]
    pub fn character(&self) -> Entity {
        self.0.character
    }

    /// The bone `bone` names: an entity, a `Name` among `search` and its descendants, or a
    /// humanoid role under the character.
    ///
    /// # Errors
    ///
    /// [`IkError::MissingBone`] / [`IkError::MissingRole`] when it is not there (yet).
    pub fn find(&mut self, bone: &BoneRef, search: Entity) -> Result<Entity, IkError> {
        self.0.find(bone, search)
    }

    /// The bone playing humanoid role `role` under the character.
    ///
    /// # Errors
    ///
    /// [`IkError::MissingRole`] when no bone plays it.
    pub fn role(&mut self, role: HumanoidBone) -> Result<Entity, IkError> {
        self.0.role(role)
    }

    /// The entities from `root` down to its descendant `tip`, both included (`None` when `tip`
    /// is not `root` or below it).
    #[must_use]
    pub fn chain(&self, root: Entity, tip: Entity) -> Option<Vec<Entity>> {
        crate::setup::chain_path(root, tip, &self.0.h.parents)
    }

    /// `root` and every descendant with a `Transform`, parents first.
    #[must_use]
    pub fn subtree(&self, root: Entity) -> Vec<Entity> {
        let mut bones = vec![root];
        let mut i = 0;
        while i < bones.len() {
            if let Ok(c) = self.0.h.children.get(bones[i]) {
                bones.extend(c.iter().filter(|&&e| self.0.h.transforms.contains(e)));
            }
            i += 1;
        }
        bones
    }
}

/// The accessors [`IkBuildContext`] and [`IkGatherContext`] share: the character's skeleton
/// (field `skeleton`) and its bone entities (field `entities`).
macro_rules! skeleton_and_bones {
    () => {
        /// The character's skeleton.
        #[must_use]
        pub fn skeleton(&self) -> &Skeleton {
            self.skeleton
        }

        /// The bone entities, parallel to the skeleton.
        #[must_use]
        pub fn bones(&self) -> &[Entity] {
            self.entities
        }
    };
}

/// What [`IkStageComponent::build`] builds on.
pub struct IkBuildContext<'a, 'w, 's> {
    pub(crate) skeleton: &'a Skeleton,
    pub(crate) entities: &'a [Entity],
    pub(crate) character: Entity,
    pub(crate) h: &'a Hierarchy<'w, 's>,
}

impl IkBuildContext<'_, '_, '_> {
    skeleton_and_bones!();

    /// The character entity.
    #[must_use]
    pub fn character(&self) -> Entity {
        self.character
    }

    /// The humanoid roles an [`IkHumanoid`](crate::IkHumanoid) on the character mapped (a VRM
    /// table, names), as skeleton indices; `None` without one.
    #[must_use]
    pub fn humanoid_map(&self) -> Option<HumanoidMap> {
        self.h.humanoid_map(self.character, self.entities)
    }
}

/// What [`IkStageComponent::gather`] reads: the character's skeleton and input pose, and
/// target entities' current transforms in its model space.
pub struct IkGatherContext<'a, 'b, 'w, 's> {
    pub(crate) skeleton: &'a Skeleton,
    pub(crate) buffer: &'a mut PoseBuffer,
    pub(crate) model: &'a GlobalTransform,
    pub(crate) reader: &'a TargetReader<'b, 'w, 's>,
    pub(crate) entities: &'a [Entity],
}

impl IkGatherContext<'_, '_, '_, '_> {
    skeleton_and_bones!();

    /// Bone `bone`'s model-space transform in the pose the stage receives.
    pub fn model_transform(&mut self, bone: usize) -> BoneTransform {
        self.buffer.model_transform(self.skeleton, bone)
    }

    /// Target entity `entity`'s current transform in the character's model space.
    ///
    /// # Errors
    ///
    /// [`IkError::MissingTarget`] / [`IkError::NonFiniteTarget`].
    pub fn target(&self, entity: Entity) -> Result<BoneTransform, IkError> {
        self.read(entity, false)
            .map(|m| BoneTransform::from_translation_rotation(m.position, m.rotation))
    }

    /// As [`IkGatherContext::target`], for a pole (its errors name a pole).
    ///
    /// # Errors
    ///
    /// [`IkError::MissingPole`] / [`IkError::NonFinitePole`].
    pub fn pole(&self, entity: Entity) -> Result<BoneTransform, IkError> {
        self.read(entity, true)
            .map(|m| BoneTransform::from_translation_rotation(m.position, m.rotation))
    }

    pub(crate) fn read(&self, entity: Entity, pole: bool) -> Result<ModelTarget, IkError> {
        crate::character::read_target(self.reader, self.model, entity, pole)
    }

    pub(crate) fn parts(&mut self) -> (&Skeleton, &mut PoseBuffer) {
        (self.skeleton, self.buffer)
    }
}

/// A solved stage's status figures, filled by [`IkStageComponent::summarise`].
pub struct IkStageSummary<'a> {
    pub(crate) skeleton: &'a Skeleton,
    pub(crate) buffer: &'a mut PoseBuffer,
    /// The stage's report of this frame's solve.
    pub report: StageReport,
    /// The largest position residual ([`IkStatus::position_residual`]).
    pub position_residual: f32,
    /// The largest rotation residual, radians ([`IkStatus::rotation_residual`]).
    pub rotation_residual: f32,
    pub(crate) residuals: &'a mut crate::character::Residuals,
    /// [`IkStatus::center_of_mass_residual`].
    pub center_of_mass_residual: f32,
    /// A balanced body's centre of mass, support point and up (model space), for
    /// [`IkCenterOfMass`].
    pub center_of_mass: Option<(bevy::math::Vec3, bevy::math::Vec3, bevy::math::Vec3)>,
}

impl IkStageSummary<'_> {
    /// Adds the next goal's position residual ([`IkStatus::residuals`], in goal order; empty
    /// on entry).
    pub fn push_residual(&mut self, residual: f32) {
        self.residuals.push(residual);
    }

    /// The character's skeleton.
    #[must_use]
    pub fn skeleton(&self) -> &Skeleton {
        self.skeleton
    }

    /// Bone `bone`'s model-space transform in the solved pose (after every stage).
    pub fn model_transform(&mut self, bone: usize) -> BoneTransform {
        self.buffer.model_transform(self.skeleton, bone)
    }

    /// The solved pose (after every stage).
    #[must_use]
    pub fn pose(&self) -> &ik_core::Pose {
        self.buffer.pose()
    }
}

/// A kind's state, type-erased (a zero-sized one, such as a limb's, allocates nothing).
pub(crate) type ErasedState = Box<dyn Any + Send + Sync>;

/// A kind's structural key, type-erased, with its kind.
pub(crate) struct ErasedKey {
    kind: usize,
    key: Box<dyn Any + Send + Sync>,
    eq: fn(&dyn Any, &dyn Any) -> bool,
}

impl PartialEq for ErasedKey {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && (self.eq)(&*self.key, &*other.key)
    }
}

impl core::fmt::Debug for ErasedKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ErasedKey")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// Erased `Fn`s of a registered kind, each `C`'s trait method behind a downcast.
type DescribesFn = fn(&StageView<'_, '_>) -> bool;
type KeyFn = fn(&StageView<'_, '_>) -> Option<Box<dyn Any + Send + Sync>>;
type SearchFn = fn(&StageView<'_, '_>) -> Option<Entity>;
type ResolveFn =
    fn(&StageView<'_, '_>, &mut IkBoneResolver<'_, '_, '_>) -> Result<Vec<Entity>, IkError>;
type BuildFn = fn(
    &StageView<'_, '_>,
    &IkBuildContext<'_, '_, '_>,
    &[usize],
) -> Result<(AnyStage, ErasedState), IkError>;
/// Per frame: reads the kind's component once; `None` when the entity no longer describes a
/// stage of the kind, else its weight and, when asked to gather (the stage is enabled), the
/// gather's result.
type FrameFn = fn(
    &StageView<'_, '_>,
    bool,
    &mut AnyStage,
    &mut ErasedState,
    &mut IkGatherContext<'_, '_, '_, '_>,
) -> Option<(f32, Result<(), IkError>)>;
type SummariseFn = fn(&mut AnyStage, &ErasedState, &mut IkStageSummary<'_>);

/// One registered kind.
pub(crate) struct KindFns {
    type_id: core::any::TypeId,
    describes: DescribesFn,
    key: KeyFn,
    key_eq: fn(&dyn Any, &dyn Any) -> bool,
    search_root: SearchFn,
    resolve: ResolveFn,
    build: BuildFn,
    frame: FrameFn,
    summarise: SummariseFn,
}

impl KindFns {
    fn of<C: IkStageComponent>() -> Self {
        Self {
            type_id: core::any::TypeId::of::<C>(),
            describes: |e| e.get::<C>().is_some_and(|c| c.describes(&IkStageEntity(e))),
            key: |e| {
                e.get::<C>()
                    .map(|c| Box::new(c.key()) as Box<dyn Any + Send + Sync>)
            },
            key_eq: |a, b| match (a.downcast_ref::<C::Key>(), b.downcast_ref::<C::Key>()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
            search_root: |e| e.get::<C>().and_then(IkStageComponent::search_root),
            resolve: |e, r| e.get::<C>().ok_or(IkError::NotAStage(e.id()))?.resolve(r),
            build: |e, cx, bones| {
                let (stage, state) = e
                    .get::<C>()
                    .ok_or(IkError::NotAStage(e.id()))?
                    .build(cx, bones)?;
                Ok((stage, Box::new(state) as ErasedState))
            },
            frame: |e, gather, stage, state, cx| {
                // One look-up of the component a frame (each one hashes its type id).
                let c = e.get::<C>()?;
                let entity = IkStageEntity(e);
                if !c.describes(&entity) {
                    return None;
                }
                let result = if gather {
                    match state.downcast_mut::<C::State>() {
                        Some(state) => c.gather(&entity, stage, state, cx),
                        None => Err(IkError::StageTypeMismatch),
                    }
                } else {
                    Ok(())
                };
                Some((c.weight(), result))
            },
            summarise: |stage, state, summary| {
                if let Some(state) = state.downcast_ref::<C::State>() {
                    C::summarise(stage, state, summary);
                }
            },
        }
    }
}

/// The registered stage kinds, in precedence order, and the component ids of the per-stage
/// markers the pipeline checks every frame.
#[derive(Resource)]
pub(crate) struct IkStageKinds {
    kinds: Vec<KindFns>,
    disabled: ComponentId,
    keep_goals: ComponentId,
}

impl FromWorld for IkStageKinds {
    fn from_world(world: &mut World) -> Self {
        Self {
            kinds: Vec::new(),
            disabled: world.register_component::<IkDisabled>(),
            keep_goals: world.register_component::<IkKeepGoals>(),
        }
    }
}

impl IkStageKinds {
    /// The kind of stage `e` describes, with its structural key.
    pub(crate) fn key(&self, e: &StageEntityRef<'_, '_>) -> Option<ErasedKey> {
        let e = &e.into_filtered();
        let (kind, fns) = self
            .kinds
            .iter()
            .enumerate()
            .find(|(_, k)| (k.describes)(e))?;
        Some(ErasedKey {
            kind,
            key: (fns.key)(e)?,
            eq: fns.key_eq,
        })
    }

    pub(crate) fn search_root(&self, kind: usize, e: &StageEntityRef<'_, '_>) -> Option<Entity> {
        (self.kinds.get(kind)?.search_root)(&e.into_filtered())
    }

    pub(crate) fn resolve(
        &self,
        kind: usize,
        e: &StageEntityRef<'_, '_>,
        r: &mut IkBoneResolver<'_, '_, '_>,
    ) -> Result<Vec<Entity>, IkError> {
        (self
            .kinds
            .get(kind)
            .ok_or(IkError::NotAStage(e.id()))?
            .resolve)(&e.into_filtered(), r)
    }

    pub(crate) fn build(
        &self,
        kind: usize,
        e: &StageEntityRef<'_, '_>,
        cx: &IkBuildContext<'_, '_, '_>,
        bones: &[usize],
    ) -> Result<(AnyStage, ErasedState), IkError> {
        (self
            .kinds
            .get(kind)
            .ok_or(IkError::NotAStage(e.id()))?
            .build)(&e.into_filtered(), cx, bones)
    }

    /// Stage `e`'s frame (of kind `kind`): `None` when it no longer describes a stage of the
    /// kind (set-up rebuilds it), else its blend weight and, when `gather`, its goals handed
    /// to `stage` (see [`IkStageComponent::gather`]).
    pub(crate) fn frame(
        &self,
        kind: usize,
        e: &StageEntityRef<'_, '_>,
        gather: bool,
        stage: &mut AnyStage,
        state: &mut ErasedState,
        cx: &mut IkGatherContext<'_, '_, '_, '_>,
    ) -> Option<(f32, Result<(), IkError>)> {
        (self.kinds.get(kind)?.frame)(&e.into_filtered(), gather, stage, state, cx)
    }

    /// Whether stage entity `e` carries [`IkDisabled`] and [`IkKeepGoals`] (archetype
    /// look-ups by the ids cached at start-up, no type-id hashing).
    pub(crate) fn markers(&self, e: &StageEntityRef<'_, '_>) -> (bool, bool) {
        (e.contains_id(self.disabled), e.contains_id(self.keep_goals))
    }

    pub(crate) fn summarise(
        &self,
        kind: usize,
        stage: &mut AnyStage,
        state: &ErasedState,
        summary: &mut IkStageSummary<'_>,
    ) {
        if let Some(k) = self.kinds.get(kind) {
            (k.summarise)(stage, state, summary);
        }
    }
}

impl ErasedKey {
    /// The kind's index among the registered ones.
    pub(crate) fn kind(&self) -> usize {
        self.kind
    }
}
