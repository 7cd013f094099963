//! [`IkCharacter`]: one pose per character and its ordered IK stack (the `bevy_rapier` "context"
//! pattern: the component on the character root owns the runtime state; the stages are
//! described by components, see [`crate::stage`]).
//!
//! Set-up (`set_up_characters`) runs only when something structural changed: a stage
//! description was added, removed, reordered or changed in a structural field (its bones, a
//! rig's goal set or limits, a custom stage's builder), or bones may have appeared while a
//! set-up was incomplete. It resolves the bones (by entity, `Name` or humanoid role), builds
//! one ik-core [`Skeleton`] over the union of the bones the stages need (parents first; bone 0
//! is the model-space frame) and one [`IkStack`] with a stage per description. A stage whose
//! structure did not change keeps its solver (and its warm start) when the skeleton is
//! unchanged. Weights, targets, poles, tolerances, iteration budgets and flags are per-frame
//! parameters, read every frame by the pipeline (see [`IkPlugin`](crate::IkPlugin)).

use bevy::ecs::change_detection::{DetectChanges, DetectChangesMut, Mut, Ref};
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::{ChildOf, Children};
use bevy::ecs::lifecycle::RemovedComponents;
use bevy::ecs::name::Name;
use bevy::ecs::query::{Added, Changed, Has, Or};
use bevy::ecs::resource::Resource;
use bevy::ecs::system::{Query, Res, ResMut, SystemParam};
use bevy::math::{Quat, Vec3};
use bevy::transform::components::Transform;
use ik_core::humanoid::{HumanoidBone, HumanoidMap};
use ik_core::stack::{AnyStage, IkStack, Stage};
use ik_core::{Pose, Skeleton};

use crate::components::{BoneRef, IkStatus};
use crate::error::IkError;
use crate::humanoid::{IkHumanoidBone, IkHumanoidBones};
use crate::kind::{
    ErasedKey, ErasedState, IkBoneResolver, IkBuildContext, IkStageKinds, StageChanges,
    StageEntities,
};
use crate::limb_batch::LimbBatch;
use crate::pose_io::{self, ModelTarget};
use crate::setup::{self, IkRescan};
use crate::stage::{IkStageOf, IkStages};

/// The IK character: one pose buffer and an ordered stack of stages, on the character's root
/// entity (the skeleton's or glTF scene's root; any entity for a one-stage [`IkLimb`](crate::IkLimb)).
///
/// Inserted automatically by every stage description ([`IkLimb`](crate::IkLimb), [`IkRig`](crate::IkRig), [`IkHumanoid`](crate::IkHumanoid),
/// [`IkCustom`](crate::IkCustom)) and by [`IkStages`]; it holds the runtime state the plugin keeps between
/// frames (skeleton, solvers, the remembered input pose), so there is nothing to configure on
/// it. [`IkDisabled`](crate::IkDisabled) on the character entity switches the whole character off.
#[derive(Component, Default)]
pub struct IkCharacter {
    pub(crate) rt: Option<Runtime>,
    /// Set-up must run (a description changed).
    pub(crate) dirty: bool,
    /// Set-up ran at least once.
    pub(crate) seen: bool,
    /// The structural keys of the last set-up (also when it failed).
    keys: Vec<(Entity, ErasedKey)>,
    /// A stage failed set-up: retry when bones may have appeared.
    incomplete: bool,
    /// Character-level set-up problem (reported on every stage).
    warned: Vec<IkError>,
    /// How many times set-up built the skeleton and stack.
    set_ups: u32,
}

impl core::fmt::Debug for IkCharacter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IkCharacter")
            .field("bones", &self.bones().len())
            .field("stages", &self.keys.len())
            .finish_non_exhaustive()
    }
}

impl IkCharacter {
    /// Whether the character has a skeleton and a stack (some stages may still have failed
    /// set-up: see their [`IkStatus`]).
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.rt.is_some()
    }

    /// The bone entities of the character's skeleton, parents first; bone 0 is the
    /// model-space frame (the character root) when the stages' bones have a common ancestor.
    #[must_use]
    pub fn bones(&self) -> &[Entity] {
        self.rt.as_ref().map_or(&[], |rt| rt.entities.as_slice())
    }

    /// The skeleton index of bone entity `bone`, if it is one of the character's bones.
    #[must_use]
    pub fn bone_index(&self, bone: Entity) -> Option<usize> {
        self.bones().iter().position(|&e| e == bone)
    }

    /// The rest-pose direction bone `bone` points in, in its own local frame: toward its only
    /// child bone of the character's skeleton (`None` when it has no child or several — use
    /// [`IkCharacter::rest_axis_toward`] — or zero length). Derived from the rig, never
    /// assumed (+Y, +X, …): what an aim or a look-at axis should be. With an
    /// [`IkHumanoid`](crate::IkHumanoid), [`IkHumanoidBones::get`] gives the bone of a role.
    #[must_use]
    pub fn rest_axis(&self, bone: Entity) -> Option<Vec3> {
        let skeleton = self.stack()?.skeleton();
        let i = self.bone_index(bone)?;
        let mut children = skeleton.children(i);
        let (Some(child), None) = (children.next(), children.next()) else {
            return None;
        };
        skeleton.rest_bone_direction(i, child)
    }

    /// The rest-pose direction from bone `bone` toward its descendant `toward`, in `bone`'s
    /// local frame (`None` when either is not a bone of the character, `toward` is not below
    /// `bone`, or they coincide).
    #[must_use]
    pub fn rest_axis_toward(&self, bone: Entity, toward: Entity) -> Option<Vec3> {
        let skeleton = self.stack()?.skeleton();
        skeleton.rest_bone_direction(self.bone_index(bone)?, self.bone_index(toward)?)
    }

    /// The stage entities, in the order they run (set up or not).
    pub fn stages(&self) -> impl Iterator<Item = Entity> + '_ {
        self.keys.iter().map(|(e, _)| *e)
    }

    /// How many times the skeleton and stack were (re)built: once at set-up, then only on a
    /// structural change of a stage (never for weights, targets or tolerances).
    #[must_use]
    pub fn set_ups(&self) -> u32 {
        self.set_ups
    }

    /// The ik-core stack (skeleton, the last output pose, each stage's outcome).
    #[must_use]
    pub fn stack(&self) -> Option<&IkStack> {
        self.rt.as_ref().map(|rt| &rt.stack)
    }

    /// The ik-core stack, mutably. To feed a custom stage every frame, prefer an
    /// [`IkStageInput`](crate::stage::IkStageInput) (what the crate's own stages use), or
    /// [`IkCharacter::custom_stage_mut`]. Replacing stages or the skeleton here is undone by
    /// the next set-up. Leave the pose buffer alone between frames: it holds what the plugin
    /// wrote to the bones, which tells it next frame which bones nothing else rewrote (see
    /// [`IkPlugin`](crate::IkPlugin)'s input pose).
    pub fn stack_mut(&mut self) -> Option<&mut IkStack> {
        self.rt.as_mut().map(|rt| &mut rt.stack)
    }

    /// How many of the character's leading stages are analytic limbs solved together in one
    /// batch (see [`IkPlugin::with_batched_limbs`](crate::IkPlugin::with_batched_limbs)): the
    /// run of two-bone stages at the start of its stack none of which reads a bone an earlier
    /// one writes; 0 when fewer than two qualify.
    #[must_use]
    pub fn batched_limbs(&self) -> usize {
        self.rt
            .as_ref()
            .and_then(|rt| rt.batch.as_ref())
            .map_or(0, LimbBatch::len)
    }

    /// How many of the character's leading stages its last solve ran through the batch:
    /// [`IkCharacter::batched_limbs`] when the plugin batched them (see
    /// [`IkPlugin::with_batched_limbs`](crate::IkPlugin::with_batched_limbs)), 0 when it
    /// solved them one by one.
    #[must_use]
    pub fn batched_limbs_solved(&self) -> usize {
        self.rt.as_ref().map_or(0, |rt| rt.batched_now)
    }

    /// The entity whose global transform is the character's model space (`None`: the world).
    #[must_use]
    pub fn model_frame(&self) -> Option<Entity> {
        self.rt.as_ref().and_then(|rt| rt.frame)
    }

    /// The built custom stage of stage entity `stage` (its [`IkCustom`](crate::IkCustom)), if it is set up and
    /// is a `T`: to read its output after [`IkSystems::Solve`](crate::IkSystems) (e.g. the
    /// grounding's foot decisions). Per-frame inputs go in through an
    /// [`IkStageInput`](crate::stage::IkStageInput).
    #[must_use]
    pub fn custom_stage<T: Stage>(&self, stage: Entity) -> Option<&T> {
        let rt = self.rt.as_ref()?;
        let slot = rt.stages.iter().find(|s| s.entity == stage)?.slot?;
        rt.stack.slots().get(slot)?.stage.get::<T>()
    }

    /// The built custom stage of stage entity `stage`, mutably (see
    /// [`IkCharacter::custom_stage`]). Replacing its structure here is undone by the next
    /// set-up.
    pub fn custom_stage_mut<T: Stage>(&mut self, stage: Entity) -> Option<&mut T> {
        self.custom_stage_parts(stage).map(|(s, ..)| s)
    }

    /// The custom stage of `stage` with the model frame entity and the bone entities.
    pub(crate) fn custom_stage_parts<T: Stage>(
        &mut self,
        stage: Entity,
    ) -> Option<(&mut T, Option<Entity>, &[Entity])> {
        let rt = self.rt.as_mut()?;
        let slot = rt.stages.iter().find(|s| s.entity == stage)?.slot?;
        let stage = rt
            .stack
            .slots_mut()
            .get_mut(slot)?
            .stage
            .as_custom_mut::<T>()?;
        Some((stage, rt.frame, &rt.entities))
    }
}

/// The set-up state of a character.
pub(crate) struct Runtime {
    /// Bone 0's entity when it is the model-space frame (its global transform is model space).
    pub(crate) frame: Option<Entity>,
    /// Bone entities, parallel to the skeleton.
    pub(crate) entities: Vec<Entity>,
    /// First bone read and written (1 when bone 0 is the frame).
    pub(crate) first: usize,
    pub(crate) stack: IkStack,
    pub(crate) stages: Vec<StageRt>,
    /// The input pose: what animation wrote, or (for bones nothing rewrote since the plugin
    /// wrote them) the input remembered from before.
    pub(crate) input: Pose,
    /// Whether the plugin wrote each bone last frame (what it wrote is the stack's output,
    /// still in its buffer until the next frame's input goes in: one flag a bone instead of a
    /// copy of the written transform, in a crowd a dozen fewer cache lines a character).
    pub(crate) written: Vec<bool>,
    /// The bones the writeback writes this frame (decided in the character's task).
    pub(crate) to_write: Vec<usize>,
    /// This frame's character-level problem (the pose could not be read).
    pub(crate) frame_error: Option<IkError>,
    /// The stack was solved this frame (false: disabled, or a frame error).
    pub(crate) solved: bool,
    pub(crate) warned: Vec<IkError>,
    /// The stack's leading independent limbs, solved together (see [`crate::limb_batch`]).
    pub(crate) batch: Option<LimbBatch>,
    /// How many stages the last solve ran through `batch`.
    pub(crate) batched_now: usize,
    /// Disabled, and the last pass restored every bone the plugin had written and reset the
    /// stages' per-frame state: the pipeline skips the character until it is enabled again.
    pub(crate) idle: bool,
}

impl Runtime {
    fn index_of(&self, e: Entity) -> Option<usize> {
        self.entities.iter().position(|&x| x == e)
    }

    /// The input (pre-IK) local transform of `e` if the plugin wrote it last frame.
    fn remembered(&self, e: Entity) -> Option<(Quat, Vec3)> {
        let i = self.index_of(e)?;
        self.written[i].then(|| (self.input.rotations[i], self.input.translations[i]))
    }
}

/// Per-stage residuals (inline up to four: a limb has one).
pub(crate) type Residuals = smallvec::SmallVec<[f32; 4]>;

/// Per-stage state of a character.
///
/// `repr(C)`, what is read every frame first: in a crowd each record is cold in cache every
/// frame, and the status pass ([`publish_ik_status`](crate::pipeline)) then reads the first
/// two cache lines of it (entity, slot, summary, residuals, errors), not five.
#[repr(C)]
pub(crate) struct StageRt {
    pub(crate) entity: Entity,
    /// Index in the stack; `None` when set-up failed.
    pub(crate) slot: Option<usize>,
    /// The last solve's summary (`None`: not solved this frame).
    pub(crate) summary: Option<Summary>,
    /// Per-goal residuals of the last solve.
    pub(crate) residuals: Residuals,
    /// This frame's problem (a target is missing, the solver rejected the input).
    pub(crate) frame_error: Option<IkError>,
    pub(crate) setup_error: Option<IkError>,
    /// The stage's kind: its index among the registered kinds ([`IkStageKinds`]).
    pub(crate) kind: usize,
    /// The kind's data beside the built stage (see [`IkStageComponent::State`](crate::IkStageComponent::State)).
    pub(crate) state: ErasedState,
    /// Full body with balance on, last solve: the centre of mass and support point (model
    /// space), up.
    pub(crate) center_of_mass: Option<(Vec3, Vec3, Vec3)>,
    pub(crate) warned: Vec<IkError>,
}

/// What the status of a solved stage shows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Summary {
    pub(crate) converged: bool,
    pub(crate) iterations: u32,
    pub(crate) position_residual: f32,
    pub(crate) rotation_residual: f32,
    pub(crate) center_of_mass_residual: f32,
    /// The stage's goals measured on the character's final pose (see [`IkStatus::final_position_residual`](crate::IkStatus)).
    pub(crate) final_position_residual: f32,
    pub(crate) final_rotation_residual: f32,
    pub(crate) goals_moved: bool,
}

/// The hierarchy queries set-up needs.
#[derive(SystemParam)]
pub(crate) struct Hierarchy<'w, 's> {
    pub(crate) children: Query<'w, 's, &'static Children>,
    pub(crate) parents: Query<'w, 's, &'static ChildOf>,
    pub(crate) names: Query<'w, 's, &'static Name>,
    pub(crate) transforms: Query<'w, 's, &'static Transform>,
    humanoid_bones: Query<'w, 's, &'static IkHumanoidBones>,
    /// Role tags on bones (a VRM file's humanoid table).
    tags: Query<'w, 's, &'static IkHumanoidBone>,
}

impl Hierarchy<'_, '_> {
    /// The humanoid roles an [`IkHumanoid`](crate::IkHumanoid) on `character` mapped at set-up (tables,
    /// detached-feet ends) as indices into `entities` (a skeleton's bones).
    pub(crate) fn humanoid_map(
        &self,
        character: Entity,
        entities: &[Entity],
    ) -> Option<HumanoidMap> {
        let bones = self.humanoid_bones.get(character).ok()?;
        let mut map = HumanoidMap::new();
        for (role, e) in bones.iter() {
            map.set(role, entities.iter().position(|&x| x == e));
        }
        Some(map)
    }

    /// Whether `ancestor` is `e` or above it.
    fn is_ancestor_or_self(&self, ancestor: Entity, e: Entity) -> bool {
        setup::chain_path(ancestor, e, &self.parents).is_some()
    }
}

/// Resolves bone references for one character (humanoid roles mapped once, on demand).
pub(crate) struct Resolver<'a, 'w, 's> {
    pub(crate) h: &'a Hierarchy<'w, 's>,
    pub(crate) character: Entity,
    roles: Option<Vec<Option<Entity>>>,
}

impl Resolver<'_, '_, '_> {
    pub(crate) fn find(&mut self, bone: &BoneRef, search: Entity) -> Result<Entity, IkError> {
        match bone {
            BoneRef::Role(role) => self.role(*role),
            other => setup::find_bone(other, search, &self.h.children, &self.h.names),
        }
    }

    pub(crate) fn role(&mut self, role: HumanoidBone) -> Result<Entity, IkError> {
        if self.roles.is_none() {
            self.roles = Some(match self.h.humanoid_bones.get(self.character) {
                Ok(b) => HumanoidBone::ALL.iter().map(|&r| b.get(r)).collect(),
                Err(_) => {
                    let (skeleton, entities) = setup::hierarchy_skeleton(
                        self.character,
                        &self.h.children,
                        &self.h.names,
                        &self.h.transforms,
                    )?;
                    // A humanoid table on the bones (a VRM file's) first, names for the rest,
                    // as an `IkHumanoid` maps them.
                    let table: Vec<(HumanoidBone, usize)> = entities
                        .iter()
                        .enumerate()
                        .filter_map(|(i, &e)| self.h.tags.get(e).ok()?.role().map(|r| (r, i)))
                        .collect();
                    let (map, _) = if table.is_empty() {
                        HumanoidMap::from_skeleton(&skeleton)
                    } else {
                        HumanoidMap::from_table(
                            &skeleton,
                            &table,
                            &ik_core::humanoid::MappingOptions::default(),
                        )
                    };
                    HumanoidBone::ALL
                        .iter()
                        .map(|&r| map.get(r).map(|i| entities[i]))
                        .collect()
                }
            });
        }
        let roles = self.roles.as_deref().unwrap_or(&[]);
        HumanoidBone::ALL
            .iter()
            .position(|&r| r == role)
            .and_then(|i| roles.get(i).copied().flatten())
            .ok_or(IkError::MissingRole(role))
    }
}

/// The bones a stage needs, resolved to entities.
struct Needs {
    bones: Vec<Entity>,
}

/// Longest parent walk accepted.
const MAX_DEPTH: usize = 256;

/// The skeleton over the union of the stages' bones: `(frame, entities, skeleton)`.
fn build_skeleton(
    character: Entity,
    needs: &[&Needs],
    h: &Hierarchy<'_, '_>,
    old: Option<&Runtime>,
) -> Result<(Option<Entity>, Vec<Entity>, Skeleton), IkError> {
    let all = || needs.iter().flat_map(|n| n.bones.iter().copied());
    // Model space: the character if it is above every bone, else the parent of the first
    // stage's first bone (a one-stage limb on an entity outside the skeleton), else the world.
    let frame = if all().all(|b| h.is_ancestor_or_self(character, b)) {
        Some(character)
    } else {
        let top = all().next().ok_or(IkError::NoBones)?;
        h.parents
            .get(top)
            .ok()
            .map(ChildOf::parent)
            .filter(|&p| all().all(|b| b != p && h.is_ancestor_or_self(p, b)))
    };
    let rest = |e: Entity| -> Result<Transform, IkError> {
        let t = *h
            .transforms
            .get(e)
            .map_err(|_| IkError::MissingBoneEntity(e))?;
        Ok(match old.and_then(|rt| rt.remembered(e)) {
            Some((rotation, translation)) => Transform {
                rotation,
                translation,
                ..t
            },
            None => t,
        })
    };
    // Every needed bone and its ancestors up to the frame.
    let mut needed: Vec<Entity> = Vec::new();
    let mut tops: Vec<Entity> = Vec::new();
    for b in all() {
        let mut cur = b;
        for _ in 0..MAX_DEPTH {
            if Some(cur) == frame || needed.contains(&cur) {
                break;
            }
            needed.push(cur);
            match h.parents.get(cur) {
                Ok(p) => cur = p.parent(),
                Err(_) => {
                    tops.push(cur);
                    break;
                }
            }
        }
    }
    // Parents first: depth-first from the frame (or the top bones) through the needed ones.
    let mut entities = Vec::with_capacity(needed.len() + 1);
    let mut bones = Vec::with_capacity(needed.len() + 1);
    let mut stack: Vec<(Entity, Option<usize>)> = Vec::new();
    if let Some(f) = frame {
        entities.push(f);
        bones.push(pose_io::bone_from_transform(
            setup::bone_name(f, &h.names),
            None,
            &Transform::IDENTITY,
        ));
        if let Ok(c) = h.children.get(f) {
            stack.extend(
                c.iter()
                    .rev()
                    .filter(|&e| needed.contains(e))
                    .map(|&e| (e, Some(0))),
            );
        }
    } else {
        stack.extend(tops.iter().rev().map(|&e| (e, None)));
    }
    while let Some((e, parent)) = stack.pop() {
        let index = entities.len();
        entities.push(e);
        bones.push(pose_io::bone_from_transform(
            setup::bone_name(e, &h.names),
            parent,
            &rest(e)?,
        ));
        if let Ok(c) = h.children.get(e) {
            stack.extend(
                c.iter()
                    .rev()
                    .filter(|&e| needed.contains(e))
                    .map(|&e| (e, Some(index))),
            );
        }
    }
    let skeleton = Skeleton::try_new(bones).map_err(|e| IkError::InvalidChain(e.into()))?;
    Ok((frame, entities, skeleton))
}

/// Marks characters whose stage descriptions changed, then (re)builds their skeleton and stack
/// where the structure changed.
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn set_up_characters(
    mut characters: Query<(
        Entity,
        &mut IkCharacter,
        Option<Ref<IkStages>>,
        Has<IkStageOf>,
    )>,
    changed: Query<(Entity, &IkStageOf), Changed<IkStageOf>>,
    mut removed: (RemovedComponents<IkStageOf>, RemovedComponents<IkStages>),
    (descs, kinds, mut noted): (StageEntities, Res<IkStageKinds>, ResMut<StageChanges>),
    mut statuses: Query<&mut IkStatus>,
    rescan: Res<IkRescan>,
    h: Hierarchy,
    (mut gone, mut batchable): (RemovedComponents<IkCharacter>, ResMut<BatchableCharacters>),
) {
    // The characters to look at: those whose descriptions changed (marked dirty), new ones
    // and those whose stage list changed — unless something was removed or bones may have
    // appeared, when every character is looked at. A frame where nothing changed touches no
    // character (in a crowd each one is a cache miss).
    let mut visit: Vec<Entity> = Vec::new();
    let noted_removed = core::mem::take(&mut noted.removed);
    let changed_stages = changed
        .iter()
        .map(|(e, of)| (e, of.0))
        .chain(noted.changed.drain(..));
    for (e, c) in changed_stages {
        if let Ok((_, mut ch, ..)) = characters.get_mut(c) {
            ch.dirty = true;
            visit.push(c);
        }
        if c != e {
            // A stage entity that was a character before is reset below.
            visit.push(e);
        }
    }
    // New characters and changed stage lists: only the change ticks are read.
    let mut new =
        characters.transmute_lens_filtered::<Entity, Or<(Added<IkCharacter>, Changed<IkStages>)>>();
    visit.extend(new.query().iter());
    let any_removed = noted_removed || removed.0.read().count() + removed.1.read().count() > 0;
    let characters_gone = gone.read().count() > 0;
    let every = any_removed || rescan.0;
    if !every {
        visit.sort_unstable();
        visit.dedup();
    }
    let mut rebuilt = false;
    let mut set_up = |(entity, mut ch, list, is_stage): (
        Entity,
        Mut<IkCharacter>,
        Option<Ref<IkStages>>,
        bool,
    )| {
        if is_stage {
            // A stage of another character: not a character itself.
            if ch.rt.is_some() || !ch.keys.is_empty() {
                *ch = IkCharacter::default();
                rebuilt = true;
            }
            return;
        }
        let list_changed = list.as_ref().is_some_and(DetectChanges::is_changed);
        if !(ch.dirty || !ch.seen || list_changed || any_removed || (ch.incomplete && rescan.0)) {
            return;
        }
        ch.dirty = false;
        ch.seen = true;
        let order = core::iter::once(entity)
            .chain(list.iter().flat_map(|l| l.entities().iter().copied()))
            .filter_map(|e| {
                let item = descs.get(e).ok()?;
                Some((e, kinds.key(&item)?))
            })
            .collect::<Vec<_>>();
        if order == ch.keys && !ch.incomplete {
            return;
        }
        rebuild(entity, &mut ch, order, (&descs, &kinds), &mut statuses, &h);
        rebuilt = true;
    };
    if every {
        characters.iter_mut().for_each(&mut set_up);
    } else {
        for &c in &visit {
            if let Ok(item) = characters.get_mut(c) {
                set_up(item);
            }
        }
    }
    // The limb-batching rule's count (see `limb_batch::use_batch`), recounted only when a
    // character was built, reset or despawned.
    if rebuilt || characters_gone || every {
        let count = characters
            .iter()
            .filter(|(_, c, _, is_stage)| {
                !is_stage && c.rt.as_ref().is_some_and(|rt| rt.batch.is_some())
            })
            .count();
        batchable.set_if_neq(BatchableCharacters(count));
    }
}

/// How many characters have a limb batch (kept by [`set_up_characters`]; read by the pipeline's
/// batching rule instead of a pass over every character each frame).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchableCharacters(pub(crate) usize);

fn rebuild(
    character: Entity,
    ch: &mut IkCharacter,
    order: Vec<(Entity, ErasedKey)>,
    (descs, kinds): (&StageEntities, &IkStageKinds),
    statuses: &mut Query<&mut IkStatus>,
    h: &Hierarchy<'_, '_>,
) {
    // Nothing named yet under the character or any limb's search root: its scene is still to
    // spawn (a missing bone is then not warned about).
    let pending = core::iter::once(character)
        .chain(
            order
                .iter()
                .filter_map(|(e, key)| kinds.search_root(key.kind(), &descs.get(*e).ok()?)),
        )
        .all(|root| setup::scene_pending(root, &h.children, &h.names));
    let mut old = ch.rt.take();
    let old_keys = core::mem::take(&mut ch.keys);
    // Problems already logged stay logged across rebuilds (each is logged once).
    let mut old_warned: Vec<(Entity, Vec<IkError>)> = old
        .as_mut()
        .map(|rt| {
            rt.stages
                .iter_mut()
                .map(|s| (s.entity, core::mem::take(&mut s.warned)))
                .collect()
        })
        .unwrap_or_default();
    ch.set_ups += 1;
    ch.incomplete = false;
    let mut resolver = IkBoneResolver(Resolver {
        h,
        character,
        roles: None,
    });
    // Resolve every stage's bones; a stage that cannot be resolved is reported and skipped.
    let mut needs: Vec<Result<Needs, IkError>> = Vec::with_capacity(order.len());
    for (e, key) in &order {
        let need = match descs.get(*e) {
            Ok(item) => kinds
                .resolve(key.kind(), &item, &mut resolver)
                .map(|bones| Needs { bones }),
            Err(_) => Err(IkError::NotAStage(*e)),
        };
        needs.push(need);
    }
    let resolved: Vec<&Needs> = needs.iter().filter_map(|n| n.as_ref().ok()).collect();
    let skeleton = if resolved.is_empty() {
        Err(None)
    } else {
        build_skeleton(character, &resolved, h, old.as_ref()).map_err(Some)
    };
    let (frame, entities, skeleton) = match skeleton {
        Ok(s) => s,
        Err(err) => {
            ch.incomplete = true;
            for ((e, _), need) in order.iter().zip(&needs) {
                let err = need.as_ref().err().cloned().or_else(|| err.clone());
                if let Some(err) = err {
                    report_setup(*e, &err, statuses, &mut ch.warned, pending);
                }
            }
            ch.keys = order;
            return;
        }
    };
    // The remembered input of bones the plugin wrote last frame carries over.
    // (What was written is the old stack's output: it goes into the new stack's buffer, where
    // the next frame's `read_input` compares the bones' transforms with it.)
    let mut input = skeleton.rest_pose();
    let mut written = vec![false; skeleton.len()];
    let mut written_pose = skeleton.rest_pose();
    if let Some(rt) = old.as_ref() {
        let last = rt.stack.pose();
        for (i, &e) in entities.iter().enumerate() {
            if let Some(j) = rt.index_of(e)
                && rt.written[j]
            {
                written[i] = true;
                written_pose.rotations[i] = last.rotations[j];
                written_pose.translations[i] = last.translations[j];
                input.rotations[i] = rt.input.rotations[j];
                input.translations[i] = rt.input.translations[j];
            }
        }
    }
    // Reuse the old stages whose structure is unchanged when the skeleton is the same.
    let same_skeleton = old
        .as_ref()
        .is_some_and(|rt| rt.entities == entities && rt.frame == frame);
    let mut old = old.filter(|_| same_skeleton);
    let mut stack = IkStack::new(skeleton.clone());
    stack.buffer_mut().set_pose(&written_pose);
    let mut stages = Vec::with_capacity(order.len());
    for ((e, key), need) in order.iter().zip(&needs) {
        let reused = old.as_mut().and_then(|rt| {
            old_keys.iter().find(|(oe, ok)| oe == e && ok == key)?;
            let s = rt.stages.iter().position(|s| s.entity == *e)?;
            let slot = rt.stages[s].slot?;
            Some((rt.stages.remove(s), slot))
        });
        let built = match (reused, need) {
            (Some((st, slot)), _) => {
                let rt = old.as_mut().expect("reused from it");
                // Stages keep their solver (and warm start): move the slot's stage over.
                let moved = core::mem::replace(
                    &mut rt.stack.slots_mut()[slot].stage,
                    AnyStage::custom(Placeholder),
                );
                Ok((moved, st.state))
            }
            (None, Ok(need)) => match descs.get(*e) {
                Ok(item) => {
                    let cx = IkBuildContext {
                        skeleton: &skeleton,
                        entities: &entities,
                        character,
                        h,
                    };
                    need.bones
                        .iter()
                        .map(|&b| {
                            entities
                                .iter()
                                .position(|&x| x == b)
                                .ok_or(IkError::MissingBoneEntity(b))
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .and_then(|bones| kinds.build(key.kind(), &item, &cx, &bones))
                }
                Err(_) => Err(IkError::NotAStage(*e)),
            },
            (None, Err(err)) => Err(err.clone()),
        };
        let warned_before = old_warned
            .iter_mut()
            .find(|(oe, _)| oe == e)
            .map(|(_, w)| core::mem::take(w))
            .unwrap_or_default();
        let mut rt_stage = StageRt {
            entity: *e,
            kind: key.kind(),
            state: Box::new(()),
            slot: None,
            setup_error: None,
            frame_error: None,
            summary: None,
            residuals: Residuals::new(),
            center_of_mass: None,
            warned: warned_before,
        };
        match built {
            Ok((stage, state)) => match stack.push(stage) {
                Ok(slot) => {
                    rt_stage.state = state;
                    rt_stage.slot = Some(slot);
                    if let Ok(mut s) = statuses.get_mut(*e)
                        && (!s.ready || s.last_error.is_some())
                    {
                        s.ready = true;
                        s.last_error = None;
                    }
                }
                Err(err) => {
                    let err = IkError::InvalidChain(err.into());
                    report_setup(*e, &err, statuses, &mut rt_stage.warned, pending);
                    rt_stage.setup_error = Some(err);
                    ch.incomplete = true;
                }
            },
            Err(err) => {
                report_setup(*e, &err, statuses, &mut rt_stage.warned, pending);
                rt_stage.setup_error = Some(err);
                ch.incomplete = true;
            }
        }
        stages.push(rt_stage);
    }
    let batch = LimbBatch::try_new(&stack);
    ch.rt = Some(Runtime {
        batch,
        batched_now: 0,
        idle: false,
        first: usize::from(frame.is_some()),
        frame,
        entities,
        stack,
        stages,
        input,
        to_write: Vec::with_capacity(written.len()),
        written,
        frame_error: None,
        solved: false,
        warned: Vec::new(),
    });
    ch.keys = order;
}

/// Records a set-up problem in a stage's status and warns once — except a missing bone while
/// the character's scene has not spawned yet (`pending`: nothing named under it), which is
/// waiting, not a problem (the status still says it).
fn report_setup(
    entity: Entity,
    err: &IkError,
    statuses: &mut Query<&mut IkStatus>,
    warned: &mut Vec<IkError>,
    pending: bool,
) {
    if !(pending && matches!(err, IkError::MissingBone(_) | IkError::MissingRole(_))) {
        crate::pipeline::warn_once(warned, entity, err);
    }
    if let Ok(mut s) = statuses.get_mut(entity) {
        if s.ready || s.solved {
            s.ready = false;
            s.solved = false;
        }
        if s.last_error.as_ref() != Some(err) {
            s.last_error = Some(err.clone());
        }
    }
}

/// A stage moved out of an old stack (never run).
#[derive(Debug)]
struct Placeholder;

impl Stage for Placeholder {
    fn bones(&self) -> &[usize] {
        &[]
    }

    fn solve(
        &mut self,
        _: &Skeleton,
        _: &mut ik_core::stack::PoseBuffer,
    ) -> Result<ik_core::stack::StageReport, ik_core::stack::StackError> {
        // Never run: it only fills a slot while the stack is rebuilt.
        Err(ik_core::stack::StackError::SkeletonMismatch)
    }
}

/// A target entity's current transform in a character's model space.
pub(crate) fn read_target(
    helper: &pose_io::TargetReader<'_, '_, '_>,
    model: &bevy::transform::components::GlobalTransform,
    entity: Entity,
    pole: bool,
) -> Result<ModelTarget, IkError> {
    pose_io::target_in_model_space(helper, model, entity).map_err(|p| match (p, pole) {
        (pose_io::TargetProblem::Missing, false) => IkError::MissingTarget(entity),
        (pose_io::TargetProblem::NonFinite, false) => IkError::NonFiniteTarget(entity),
        (pose_io::TargetProblem::Missing, true) => IkError::MissingPole(entity),
        (pose_io::TargetProblem::NonFinite, true) => IkError::NonFinitePole(entity),
    })
}
