//! Set-up helpers: finding bones by `Name` among descendants, walking the `ChildOf` hierarchy,
//! and noticing when bones appear (glTF scenes spawn asynchronously).

use bevy::app::App;
use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::{ChildOf, Children};
use bevy::ecs::intern::Interned;
use bevy::ecs::name::Name;
use bevy::ecs::query::Added;
use bevy::ecs::resource::Resource;
use bevy::ecs::schedule::{IntoScheduleConfigs, ScheduleLabel};
use bevy::ecs::system::{Query, ResMut};
use bevy::transform::components::Transform;
use ik_core::Skeleton;

use crate::IkSystems;
use crate::components::BoneRef;
use crate::error::IkError;
use crate::pose_io;

/// Longest parent walk accepted between a chain's root and tip.
const MAX_CHAIN_DEPTH: usize = 256;

/// Set when bones may have appeared (a scene instance became ready, or entities got a `Name`),
/// so limbs and rigs whose set-up is incomplete try again. Cleared after set-up ran.
#[derive(Resource, Debug, Default)]
pub(crate) struct IkRescan(pub bool);

pub(crate) fn build(app: &mut App, schedule: Interned<dyn ScheduleLabel>) {
    app.init_resource::<IkRescan>();
    #[cfg(feature = "scene")]
    app.add_observer(flag_scene_ready);
    app.configure_sets(schedule, SetupSystems.in_set(IkSystems::Prepare));
}

/// Set-up systems (resolving names, building caches) run in this set inside
/// [`IkSystems::Prepare`], before the poses are gathered.
#[derive(bevy::ecs::schedule::SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SetupSystems;

/// A glTF scene (or any scene) finished spawning: incomplete set-ups retry this frame.
#[cfg(feature = "scene")]
fn flag_scene_ready(
    _ready: bevy::ecs::observer::On<bevy::world_serialization::WorldInstanceReady>,
    mut rescan: ResMut<IkRescan>,
) {
    rescan.0 = true;
}

/// Entities that got a `Name` since last frame may be the bones an incomplete set-up waits for.
pub(crate) fn flag_new_bones(named: Query<(), Added<Name>>, mut rescan: ResMut<IkRescan>) {
    if !rescan.0 && !named.is_empty() {
        rescan.0 = true;
    }
}

/// Whether nothing under `root` has a `Name` yet: its glTF scene has not spawned, so a bone not
/// found is still to come (set-up says so in the status, without a warning).
pub(crate) fn scene_pending(
    root: Entity,
    children: &Query<&Children>,
    names: &Query<&Name>,
) -> bool {
    !children.iter_descendants(root).any(|e| names.contains(e))
}

/// Resolves a bone reference: an entity as is, a name among `root` and its descendants (a
/// humanoid role is resolved by the character, which has the mapping).
pub(crate) fn find_bone(
    bone: &BoneRef,
    root: Entity,
    children: &Query<&Children>,
    names: &Query<&Name>,
) -> Result<Entity, IkError> {
    match bone {
        BoneRef::Entity(e) => Ok(*e),
        BoneRef::Name(name) => core::iter::once(root)
            .chain(children.iter_descendants(root))
            .find(|&e| names.get(e).is_ok_and(|n| n.as_str() == name))
            .ok_or_else(|| IkError::MissingBone(name.clone())),
        BoneRef::Role(role) => Err(IkError::MissingRole(*role)),
    }
}

/// The entities from `root` down to `tip` (both included), following `ChildOf` up from `tip`.
/// `None` if `root` is not an ancestor of (or equal to) `tip`.
pub(crate) fn chain_path(
    root: Entity,
    tip: Entity,
    parents: &Query<&ChildOf>,
) -> Option<Vec<Entity>> {
    let mut path = vec![tip];
    let mut cur = tip;
    while cur != root {
        if path.len() > MAX_CHAIN_DEPTH {
            return None;
        }
        cur = parents.get(cur).ok()?.parent();
        path.push(cur);
    }
    path.reverse();
    Some(path)
}

/// Display name of a bone entity for the core skeleton: its `Name`, or the entity id.
pub(crate) fn bone_name(entity: Entity, names: &Query<&Name>) -> String {
    names
        .get(entity)
        .map_or_else(|_| format!("{entity}"), |n| n.as_str().to_owned())
}

/// The hierarchy under `root` (root included, as the identity: model space is `root`'s own
/// frame) as a core skeleton, parents first, with the entity of each bone.
pub(crate) fn hierarchy_skeleton(
    root: Entity,
    children: &Query<&Children>,
    names: &Query<&Name>,
    transforms: &Query<&Transform>,
) -> Result<(Skeleton, Vec<Entity>), IkError> {
    let mut entities = Vec::new();
    let mut bones = Vec::new();
    // Depth-first, parents before children; entities without a Transform end their branch.
    let mut stack = vec![(root, None)];
    while let Some((e, parent)) = stack.pop() {
        let Ok(t) = transforms.get(e) else { continue };
        let index = entities.len();
        entities.push(e);
        let name = names.get(e).map_or("", |n| n.as_str()).to_owned();
        // The root is the identity: model space is the root entity's own frame.
        let t = if parent.is_none() {
            &Transform::IDENTITY
        } else {
            t
        };
        bones.push(pose_io::bone_from_transform(name, parent, t));
        if let Ok(c) = children.get(e) {
            stack.extend(c.iter().rev().map(|&child| (child, Some(index))));
        }
    }
    let skeleton = Skeleton::try_new(bones).map_err(|e| IkError::InvalidChain(e.into()))?;
    Ok((skeleton, entities))
}

/// Ends a rescan once every set-up system has seen it.
pub(crate) fn clear_rescan(mut rescan: ResMut<IkRescan>) {
    if rescan.0 {
        rescan.0 = false;
    }
}
