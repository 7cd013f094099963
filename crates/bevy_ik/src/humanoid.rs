//! Humanoid auto-mapping: [`IkHumanoid`] on a character's root (typically the `WorldAssetRoot` of a
//! glTF character) recognises its bones by name with ik-core's humanoid mapping (Mixamo, VRM,
//! `VRoid`, Rigify, Unreal, plain names), spawns target and pole entities at the current hand,
//! foot, head and pelvis positions and sets up the IK that follows them: a character whose
//! first stage is ik-core's full-body solver (the default preset), or four [`IkLimb`] stage
//! entities ([`IkHumanoid::limbs`]).
//!
//! # Changes after set-up
//!
//! Per-frame fields ([`IkHumanoid::weight`], `balance`, `grip`, `full_body_settings`, and with
//! the full body `arms` / `legs` / `head` for goals whose targets exist) are read every frame.
//! A change to what set-up builds — [`IkHumanoid::solver`], `arms`, `legs`, `poles`, `head` —
//! sets the humanoid up again on the same character, in place: the hand, foot and pelvis
//! targets (and the head's, while the solver stays the same) keep their entities and where the
//! game put them, targets and poles the new set-up needs are spawned where the bones stand
//! now, the ones it no longer needs are despawned, and the humanoid's own stage entities (limbs,
//! detached feet) are replaced at the same place in the character's [`IkStages`] order — stages
//! of your own keep theirs. [`IkHumanoidTargets`] is rewritten and the character's stack rebuilt.
//! The humanoid's own stage entities come first in [`IkStages`] (right after the full-body
//! stage, which is the character's own), also when the scene finished loading after stages of
//! your own were added.
//!
//! # Humanoid tables
//!
//! Bones tagged with [`IkHumanoidBone`] (a VRM avatar's bones are tagged from the file's own
//! humanoid table by the `vrm` feature's loader; you can tag any rig's bones by hand) are
//! taken as given ([`HumanoidMap::from_table`]); names and the hierarchy fill the rest.
//!
//! # Detached feet
//!
//! A rig whose foot bones are IK-control bones parented to the root, not to the lower legs
//! (Blender exports with IK controls: Quaternius packs), maps its foot roles to the lower
//! legs' end bones: an existing `…_end` child of the lower leg, or an end entity this plugin
//! spawns under the lower leg at the detached foot's position (named `<lower leg>_end`). The
//! solvers drive the legs so those ends reach the foot targets, and a [`DetachedFeet`] stage
//! entity (an [`IkCustom`] named `ik detached feet`, listed in
//! [`IkHumanoidTargets::detached_feet`]) then moves each detached foot bone with its end,
//! keeping the pose it had relative to it at set-up. The mapping report says so.

use bevy::ecs::change_detection::{DetectChanges, Ref};
use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::{ChildOf, Children};
use bevy::ecs::name::Name;
use bevy::ecs::query::{Changed, Or};
use bevy::ecs::system::{Commands, Query, Res};
use bevy::math::Vec3;
use bevy::transform::components::Transform;
use ik_core::humanoid::{
    BodyFrame, CenterOfMassGoal, DetachedFeet, Effector, FullBodySolver, GoalFrame, HumanoidBone,
    HumanoidMap, MappingOptions, MappingReport,
};
use ik_core::stack::{AnyStage, FullBodyStage};
use ik_core::{BoneTransform, Skeleton};

pub use crate::components::humanoid::{
    IkGrip, IkGripAnchor, IkGripHand, IkHumanoid, IkHumanoidBone, IkHumanoidBones,
    IkHumanoidMapping, IkHumanoidSolver, IkHumanoidTargets,
};
use crate::components::{IkLimb, IkStatus};
use crate::error::IkError;
use crate::kind::{
    IkBoneResolver, IkBuildContext, IkGatherContext, IkStageComponent, IkStageEntity,
    IkStageSummary,
};
use crate::pipeline::warn_once;
use crate::setup::{IkRescan, hierarchy_skeleton};
use crate::stage::{IkCustom, IkStageOf, IkStages};

pub(crate) fn register(app: &mut bevy::app::App) {
    app.register_type::<IkHumanoid>()
        .register_type::<IkHumanoidSolver>()
        .register_type::<IkHumanoidTargets>()
        .register_type::<IkHumanoidBones>()
        .register_type::<IkHumanoidBone>()
        .register_type::<IkGrip>()
        .register_type::<IkGripHand>()
        .register_type::<IkGripAnchor>();
    // The set-up's per-humanoid cache goes with every `IkHumanoid` (the component itself is
    // data and does not name this systems-layer type).
    app.register_required_components::<IkHumanoid, HumanoidCache>();
}

/// Per-humanoid set-up state. Internal.
#[derive(Component, Debug, Default)]
pub(crate) struct HumanoidCache {
    done: bool,
    /// What the last set-up was built for.
    built: Option<SetUpKey>,
    /// The weight last written into the humanoid's own limb and detached-feet stages.
    synced_weight: Option<f32>,
    warned: Vec<IkError>,
}

/// The fields of [`IkHumanoid`] that decide what set-up builds (entities spawned, stages):
/// a change to any of them sets the humanoid up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SetUpKey {
    solver: IkHumanoidSolver,
    arms: bool,
    legs: bool,
    poles: bool,
    head: bool,
}

impl SetUpKey {
    fn of(h: &IkHumanoid) -> Self {
        Self {
            solver: h.solver,
            arms: h.arms,
            legs: h.legs,
            poles: h.poles,
            head: h.head,
        }
    }
}

/// The entities an earlier set-up spawned, offered to the next one: targets are taken by role
/// (kept where the game put them), the rest is despawned afterwards.
#[derive(Debug, Default)]
struct Reuse {
    old: IkHumanoidTargets,
    /// The head target means something else under the other solver (a look-at point ahead of
    /// the face vs the head bone): kept only under the same solver.
    same_solver: bool,
}

impl Reuse {
    /// Takes the entity of `slot`, if the earlier set-up had one.
    fn take(&mut self, slot: Slot) -> Option<Entity> {
        slot(&mut self.old).take()
    }

    /// The earlier head target, under the same solver only.
    fn head(&mut self) -> Option<Entity> {
        if self.same_solver {
            self.take(|o| &mut o.head)
        } else {
            None
        }
    }

    /// A marker entity for `slot`: the earlier one, else one spawned at `t`.
    fn marker(
        &mut self,
        commands: &mut Commands,
        parent: Entity,
        label: &str,
        t: BoneTransform,
        slot: Slot,
    ) -> Entity {
        self.take(slot)
            .unwrap_or_else(|| spawn_marker(commands, parent, label, t))
    }

    /// Every entity not taken: the markers and stages the new set-up does not use.
    fn leftovers(self) -> impl Iterator<Item = Entity> {
        let t = self.old;
        [
            t.pelvis,
            t.head,
            t.left_hand,
            t.right_hand,
            t.left_foot,
            t.right_foot,
            t.left_elbow_pole,
            t.right_elbow_pole,
            t.left_knee_pole,
            t.right_knee_pole,
            t.detached_feet,
        ]
        .into_iter()
        .flatten()
        .chain(t.limbs)
    }
}

/// Maps new humanoids (and retries incomplete ones when bones may have appeared).
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn map_humanoids(
    mut commands: Commands,
    mut humanoids: Query<(
        Entity,
        Ref<IkHumanoid>,
        &mut HumanoidCache,
        &mut IkStatus,
        Option<&IkHumanoidTargets>,
        Option<&IkStages>,
    )>,
    rescan: Res<IkRescan>,
    children: Query<&Children>,
    names: Query<&Name>,
    transforms: Query<&Transform>,
    tags: Query<&IkHumanoidBone>,
) {
    // Only a changed humanoid can need set-up, unless bones may have appeared: the others
    // are not touched (in a crowd each one is a cache miss every frame).
    let visit: Vec<Entity> = if rescan.0 {
        humanoids.iter().map(|item| item.0).collect()
    } else {
        let mut lens = humanoids.transmute_lens_filtered::<Entity, Changed<IkHumanoid>>();
        lens.query().iter().collect()
    };
    for e in visit {
        let Ok((entity, humanoid, mut cache, mut status, old, stages)) = humanoids.get_mut(e)
        else {
            continue;
        };
        let key = SetUpKey::of(&humanoid);
        // Set up again, in place, when what set-up builds changed (see the module docs).
        let restructure = cache.done && humanoid.is_changed() && cache.built != Some(key);
        if (cache.done && !restructure) || !(rescan.0 || humanoid.is_added() || restructure) {
            continue;
        }
        let cache = &mut *cache;
        if children.get(entity).is_err() {
            // Nothing spawned under it yet (a glTF scene still loading): wait quietly.
            status.last_error = Some(IkError::MissingRole(HumanoidBone::Hips));
            continue;
        }
        let mut reuse = Reuse {
            old: old.cloned().unwrap_or_default(),
            same_solver: cache.built.is_none_or(|b| b.solver == key.solver),
        };
        // Where the humanoid's own stage entities stood in the character's order; first (where
        // the root's own stage runs) when there were none — also at the first set-up, which
        // may come after stages of the game's own were added while the scene loaded.
        let own_stages: Vec<Entity> = reuse
            .old
            .limbs
            .iter()
            .copied()
            .chain(reuse.old.detached_feet)
            .collect();
        let at = stages
            .and_then(|s| s.entities().iter().position(|e| own_stages.contains(e)))
            .unwrap_or(0);
        match map_one(
            entity,
            &humanoid,
            &mut commands,
            &children,
            &names,
            &transforms,
            &tags,
            &mut reuse,
        ) {
            Ok((unmapped, targets, bones, mapping)) => {
                cache.done = true;
                cache.built = Some(key);
                status.ready = true;
                status.last_error = None;
                status.unmapped = unmapped;
                for e in reuse.leftovers() {
                    if let Ok(mut e) = commands.get_entity(e) {
                        e.despawn();
                    }
                }
                // The new stage entities take the old ones' place in the order.
                let new_stages: Vec<Entity> = targets
                    .limbs
                    .iter()
                    .copied()
                    .chain(targets.detached_feet)
                    .collect();
                if !new_stages.is_empty() {
                    commands
                        .entity(entity)
                        .insert_related::<IkStageOf>(at, &new_stages);
                }
                commands.entity(entity).insert((targets, bones, mapping));
            }
            Err((err, unmapped, mapping)) => {
                // Before the scene has spawned there is nothing to map: waiting, not a problem.
                if !crate::setup::scene_pending(entity, &children, &names) {
                    warn_once(&mut cache.warned, entity, &err);
                }
                status.ready = false;
                status.unmapped = unmapped;
                status.last_error = Some(err);
                if let Some(mapping) = mapping {
                    commands.entity(entity).insert(mapping);
                }
            }
        }
    }
}

type Mapped = (
    Vec<String>,
    IkHumanoidTargets,
    IkHumanoidBones,
    IkHumanoidMapping,
);
type MapFailure = (IkError, Vec<String>, Option<IkHumanoidMapping>);

#[allow(clippy::too_many_arguments, reason = "the set-up's inputs")]
fn map_one(
    entity: Entity,
    humanoid: &IkHumanoid,
    commands: &mut Commands,
    children: &Query<&Children>,
    names: &Query<&Name>,
    transforms: &Query<&Transform>,
    tags: &Query<&IkHumanoidBone>,
    reuse: &mut Reuse,
) -> Result<Mapped, MapFailure> {
    let (mut skeleton, mut entities) = hierarchy_skeleton(entity, children, names, transforms)
        .map_err(|e| (e, Vec::new(), None))?;
    // A humanoid table on the bones (a VRM file's) first, names and hierarchy for the rest.
    let table: Vec<(HumanoidBone, usize)> = entities
        .iter()
        .enumerate()
        .filter_map(|(i, &e)| tags.get(e).ok()?.role().map(|r| (r, i)))
        .collect();
    let map_skeleton = |s: &Skeleton| {
        if table.is_empty() {
            HumanoidMap::from_skeleton(s)
        } else {
            HumanoidMap::from_table(s, &table, &MappingOptions::default())
        }
    };
    let (mut map, mut report) = map_skeleton(&skeleton);
    // Detached IK-control feet with no end bone under the lower leg: spawn one there (at the
    // detached foot's position) and map again; the foot roles take the ends.
    let ends = HumanoidMap::lower_leg_ends_for_detached_feet(&skeleton, &report);
    if !ends.is_empty() {
        let mut bones = skeleton.bones().to_vec();
        for end in &ends {
            let Some(parent) = end.parent else { continue };
            let e = commands
                .spawn((
                    Name::new(end.name.clone()),
                    Transform::from_translation(end.rest.translation),
                    ChildOf(entities[parent]),
                ))
                .id();
            entities.push(e);
        }
        bones.extend(ends);
        skeleton = Skeleton::try_new(bones)
            .map_err(|e| (IkError::InvalidChain(e.into()), Vec::new(), None))?;
        (map, report) = map_skeleton(&skeleton);
    }
    let mapping = IkHumanoidMapping {
        summary: report.summary(),
        details: report.to_string(),
    };
    let unmapped: Vec<String> = report
        .missing_required
        .iter()
        .chain(&report.missing_optional)
        .map(ToString::to_string)
        .collect();
    if let Some(role) = report.missing_required.first() {
        return Err((IkError::MissingRole(*role), unmapped, Some(mapping)));
    }
    let mut bones = IkHumanoidBones {
        bones: vec![None; HumanoidBone::COUNT],
    };
    for (role, index) in map.iter() {
        bones.bones[role.index()] = Some(entities[index]);
    }
    let model = skeleton.rest_model_transforms();
    // Targets are children of the humanoid entity: express model-space poses in its frame.
    let to_local = model[0].inverse();
    let local = |role: HumanoidBone| map.get(role).map(|i| to_local.mul_transform(&model[i]));
    let frame = BodyFrame::from_rest(&skeleton, &map).ok();
    if humanoid.solver == IkHumanoidSolver::FullBody {
        let mut targets = set_up_full_body(entity, humanoid, commands, &skeleton, &map, reuse)
            .map_err(|e| (e, unmapped.clone(), Some(mapping.clone())))?;
        targets.detached_feet =
            spawn_detached_feet(entity, humanoid, commands, &map, &report, &entities);
        return Ok((unmapped, targets, bones, mapping));
    }
    let mut targets = IkHumanoidTargets::default();
    use HumanoidBone as H;
    targets.pelvis = local(H::Hips)
        .map(|t| reuse.marker(commands, entity, "target pelvis", t, |o| &mut o.pelvis));
    targets.head = reuse
        .head()
        .or_else(|| local(H::Head).map(|t| spawn_marker(commands, entity, "target head", t)));
    // (label, upper, lower, end, is arm)
    let limbs = [
        (
            "left arm",
            H::LeftUpperArm,
            H::LeftLowerArm,
            H::LeftHand,
            true,
        ),
        (
            "right arm",
            H::RightUpperArm,
            H::RightLowerArm,
            H::RightHand,
            true,
        ),
        (
            "left leg",
            H::LeftUpperLeg,
            H::LeftLowerLeg,
            H::LeftFoot,
            false,
        ),
        (
            "right leg",
            H::RightUpperLeg,
            H::RightLowerLeg,
            H::RightFoot,
            false,
        ),
    ];
    for (i, (label, upper, lower, end, arm)) in limbs.into_iter().enumerate() {
        if (arm && !humanoid.arms) || (!arm && !humanoid.legs) {
            continue;
        }
        let (Some(u), Some(l), Some(e)) = (map.get(upper), map.get(lower), map.get(end)) else {
            continue;
        };
        let (target_slot, pole_slot): (Slot, Slot) = match i {
            0 => (|o| &mut o.left_hand, |o| &mut o.left_elbow_pole),
            1 => (|o| &mut o.right_hand, |o| &mut o.right_elbow_pole),
            2 => (|o| &mut o.left_foot, |o| &mut o.left_knee_pole),
            _ => (|o| &mut o.right_foot, |o| &mut o.right_knee_pole),
        };
        let target = reuse.marker(
            commands,
            entity,
            &format!("target {label}"),
            to_local.mul_transform(&model[e]),
            target_slot,
        );
        // Poles: knees forward, elbows backward, one upper-bone length
        // from the joint.
        let pole = match (&frame, humanoid.poles) {
            (Some(frame), true) => {
                let reach = model[u].translation.distance(model[l].translation);
                let dir = if arm { -frame.forward } else { frame.forward };
                let at = model[l].translation + dir * reach;
                let t = to_local.mul_transform(&BoneTransform::from_translation(at));
                Some(reuse.marker(commands, entity, &format!("pole {label}"), t, pole_slot))
            }
            _ => None,
        };
        let mut limb = IkLimb::new(entities[u], entities[l], entities[e])
            .with_target(target)
            .with_weight(humanoid.weight);
        limb.pole = pole;
        let limb_entity = commands
            .spawn((
                Name::new(format!("ik limb {label}")),
                limb,
                ChildOf(entity),
                IkStageOf(entity),
            ))
            .id();
        targets.limbs.push(limb_entity);
        match i {
            0 => (targets.left_hand, targets.left_elbow_pole) = (Some(target), pole),
            1 => (targets.right_hand, targets.right_elbow_pole) = (Some(target), pole),
            2 => (targets.left_foot, targets.left_knee_pole) = (Some(target), pole),
            _ => (targets.right_foot, targets.right_knee_pole) = (Some(target), pole),
        }
    }
    targets.detached_feet =
        spawn_detached_feet(entity, humanoid, commands, &map, &report, &entities);
    Ok((unmapped, targets, bones, mapping))
}

/// Keeps the humanoid's own stages — its analytic limbs and its detached-feet stage — at the
/// humanoid's IK/FK weight (the full-body stage reads it every frame): written when those
/// stages are set up and whenever [`IkHumanoid::weight`] changes (a limb's own weight, set by
/// hand, stays until then), so at weight 0 the bones keep their animated pose.
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn sync_humanoid_stage_weights(
    mut humanoids: Query<
        (&IkHumanoid, Ref<IkHumanoidTargets>, &mut HumanoidCache),
        Or<(Changed<IkHumanoid>, Changed<IkHumanoidTargets>)>,
    >,
    mut stages: Query<&mut IkCustom>,
    mut limbs: Query<&mut IkLimb>,
) {
    for (humanoid, targets, mut cache) in &mut humanoids {
        let w = humanoid.weight;
        if !targets.is_changed() && cache.synced_weight == Some(w) {
            continue;
        }
        cache.synced_weight = Some(w);
        if let Some(mut stage) = targets.detached_feet.and_then(|e| stages.get_mut(e).ok())
            && stage.weight != w
        {
            stage.weight = w;
        }
        for &e in &targets.limbs {
            if let Ok(mut limb) = limbs.get_mut(e)
                && limb.weight != w
            {
                limb.weight = w;
            }
        }
    }
}

/// Spawns the stage that carries detached IK-control foot bones along with the lower legs'
/// end bones (after the stages spawned before it), if the rig has such feet and legs are on.
fn spawn_detached_feet(
    entity: Entity,
    humanoid: &IkHumanoid,
    commands: &mut Commands,
    map: &HumanoidMap,
    report: &MappingReport,
    entities: &[Entity],
) -> Option<Entity> {
    let pairs = DetachedFeet::pairs_of(map, report);
    if pairs.is_empty() || !humanoid.legs {
        return None;
    }
    let bones: Vec<Entity> = pairs
        .iter()
        .flat_map(|&(end, foot)| [entities[end], entities[foot]])
        .collect();
    let stage = IkCustom::new(bones, |s: &Skeleton, b: &[usize]| {
        let pairs: Vec<(usize, usize)> = b.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        DetachedFeet::try_new(s, &pairs)
    })
    .with_weight(humanoid.weight);
    Some(
        commands
            .spawn((
                Name::new("ik detached feet"),
                stage,
                ChildOf(entity),
                IkStageOf(entity),
            ))
            .id(),
    )
}

/// Picks one marker slot of [`IkHumanoidTargets`].
type Slot = fn(&mut IkHumanoidTargets) -> &mut Option<Entity>;

/// Spawns a target or pole entity as a child of `parent` at `t` (in the parent's frame).
fn spawn_marker(commands: &mut Commands, parent: Entity, label: &str, t: BoneTransform) -> Entity {
    commands
        .spawn((
            Name::new(format!("ik {label}")),
            Transform {
                translation: t.translation,
                rotation: t.rotation,
                scale: Vec3::ONE,
            },
            ChildOf(parent),
        ))
        .id()
}

/// Full-body set-up: spawns targets where the effectors are (and the look-at target ahead of
/// the face); the character builds the full-body stage once [`IkHumanoidTargets`] is there.
fn set_up_full_body(
    entity: Entity,
    humanoid: &IkHumanoid,
    commands: &mut Commands,
    skeleton: &Skeleton,
    map: &HumanoidMap,
    reuse: &mut Reuse,
) -> Result<IkHumanoidTargets, IkError> {
    let mut solver =
        FullBodySolver::new(skeleton, map).map_err(|e| IkError::InvalidChain(e.into()))?;
    let rest = skeleton.rest_pose();
    let mut goals = solver.goals_at_pose(skeleton, &rest);
    let mut targets = IkHumanoidTargets::default();
    let mut effector_targets = [None; 5];
    let labels = [
        "left hand",
        "right hand",
        "left foot",
        "right foot",
        "pelvis",
    ];
    for (i, (goal, label)) in goals.effectors.iter_mut().zip(labels).enumerate() {
        let limb_on = match Effector::ALL[i] {
            Effector::LeftHand | Effector::RightHand => humanoid.arms,
            Effector::LeftFoot | Effector::RightFoot => humanoid.legs,
            Effector::Pelvis => true,
        };
        if !limb_on {
            goal.enabled = false;
            continue;
        }
        if Effector::ALL[i] == Effector::Pelvis {
            // The pelvis follows its target's position only (the hips keep turning freely).
            // All goals share one priority level: the solver's fast path; the limbs are
            // finished analytically afterwards, so hands and feet stay exact when reachable.
            goal.rotation_weight = 0.0;
        }
        let slot: Slot = match Effector::ALL[i] {
            Effector::LeftHand => |o| &mut o.left_hand,
            Effector::RightHand => |o| &mut o.right_hand,
            Effector::LeftFoot => |o| &mut o.left_foot,
            Effector::RightFoot => |o| &mut o.right_foot,
            Effector::Pelvis => |o| &mut o.pelvis,
        };
        let t = reuse.marker(
            commands,
            entity,
            &format!("target {label}"),
            BoneTransform::from_translation_rotation(goal.position, goal.rotation),
            slot,
        );
        effector_targets[i] = Some(t);
    }
    [
        targets.left_hand,
        targets.right_hand,
        targets.left_foot,
        targets.right_foot,
        targets.pelvis,
    ] = effector_targets;
    goals.look_at.enabled &= humanoid.head;
    let kept_head = if goals.look_at.enabled {
        reuse.head()
    } else {
        None
    };
    targets.head = kept_head.or_else(|| {
        goals.look_at.enabled.then(|| {
            spawn_marker(
                commands,
                entity,
                "target head (look at)",
                BoneTransform::from_translation(goals.look_at.target),
            )
        })
    });
    Ok(targets)
}

/// Writes the gripping hand's goal (see [`IkGrip`]).
fn gather_grip(
    grip: &IkGrip,
    stage: &mut FullBodyStage,
    cx: &IkGatherContext<'_, '_, '_, '_>,
) -> Result<(), IkError> {
    let bones = cx.bones();
    let (hand, other) = match grip.hand {
        IkGripHand::Left => (Effector::LeftHand, Effector::RightHand),
        IkGripHand::Right => (Effector::RightHand, Effector::LeftHand),
    };
    let offset = grip.offset;
    if !(offset.translation.is_finite() && offset.rotation.is_finite()) {
        return Err(IkError::Solver(
            ik_core::stack::StackError::NonFinite(ik_core::stack::NonFinite::Goal).into(),
        ));
    }
    let goal = stage.goals.get_mut(hand);
    goal.enabled = true;
    goal.position = offset.translation;
    goal.rotation = offset.rotation.normalize();
    goal.frame = match grip.anchor {
        IkGripAnchor::OtherHand => GoalFrame::Effector(other),
        IkGripAnchor::Entity(e) => match bones.iter().position(|&b| b == e) {
            Some(i) => GoalFrame::Bone(i),
            None => {
                // Not moved by this character's IK: its transform this frame is exact.
                let m = cx.read(e, false)?;
                goal.position = m.position + m.rotation * offset.translation;
                goal.rotation = (m.rotation * offset.rotation).normalize();
                GoalFrame::Model
            }
        },
    };
    Ok(())
}

pub(crate) use state::FullBodyData;

/// The full-body kind's state (a public type in a private module: named by the
/// [`IkStageComponent`] impl, not reachable from outside).
mod state {
    use super::{HumanoidMap, Vec3};

    /// Per-character data of a full-body stage.
    #[derive(Debug)]
    pub struct FullBodyData {
        #[cfg_attr(not(feature = "debug-draw"), allow(dead_code, reason = "drawn"))]
        pub(crate) map: HumanoidMap,
        /// The rest body's up (the balance goal's ground normal).
        pub(crate) up: Vec3,
    }
}

/// The full-body stage of an [`IkHumanoid`] with [`IkHumanoidSolver::FullBody`] (on the
/// humanoid's entity, with its [`IkHumanoidTargets`]).
impl IkStageComponent for IkHumanoid {
    type Key = ();
    type State = FullBodyData;

    fn describes(&self, entity: &IkStageEntity<'_, '_, '_>) -> bool {
        self.solver == IkHumanoidSolver::FullBody && entity.contains::<IkHumanoidTargets>()
    }

    fn key(&self) {}

    /// The hips and everything below them with a Transform (bone directions need the
    /// children): not the targets and props parented to the character root.
    fn resolve(&self, r: &mut IkBoneResolver<'_, '_, '_>) -> Result<Vec<Entity>, IkError> {
        let hips = r.role(HumanoidBone::Hips)?;
        Ok(r.subtree(hips))
    }

    fn build(
        &self,
        cx: &IkBuildContext<'_, '_, '_>,
        _bones: &[usize],
    ) -> Result<(AnyStage, FullBodyData), IkError> {
        build_full_body_stage(self, cx.skeleton(), cx.humanoid_map())
    }

    crate::kind::weight_field!();

    fn gather(
        &self,
        entity: &IkStageEntity<'_, '_, '_>,
        stage: &mut AnyStage,
        _state: &mut FullBodyData,
        cx: &mut IkGatherContext<'_, '_, '_, '_>,
    ) -> Result<(), IkError> {
        // `let … else`: an error built eagerly for `ok_or` is dropped on the common path.
        let Some(targets) = entity.get::<IkHumanoidTargets>() else {
            return Err(IkError::NotAStage(entity.id()));
        };
        let Some(stage) = stage.get_mut::<FullBodyStage>() else {
            return Err(IkError::StageTypeMismatch);
        };
        gather_full_body(self, targets, stage, cx)
    }

    /// Per-effector residuals and the look-at's, the centre of mass's residual, and (balance
    /// on) the centre of mass of the solved pose.
    fn summarise(stage: &mut AnyStage, state: &FullBodyData, summary: &mut IkStageSummary<'_>) {
        let Some(stage) = stage.get_mut::<FullBodyStage>() else {
            return;
        };
        if let ik_core::stack::StageReport::FullBody(r) = summary.report {
            for g in &r.residuals {
                summary.push_residual(g.position);
            }
            summary.push_residual(r.look_at);
            summary.center_of_mass_residual = r.center_of_mass;
        }
        let goal = stage.goals.center_of_mass;
        if goal.enabled
            && let Some(c) = stage
                .solver
                .center_of_mass(summary.skeleton(), summary.pose())
                .filter(|c| c.is_finite())
        {
            summary.center_of_mass = Some((c, goal.target, state.up));
        }
    }
}

/// Builds the full-body stage on the character's skeleton (the whole hierarchy under the
/// humanoid entity).
fn build_full_body_stage(
    humanoid: &IkHumanoid,
    skeleton: &Skeleton,
    mapped: Option<HumanoidMap>,
) -> Result<(AnyStage, FullBodyData), IkError> {
    // The mapping made at set-up (tables, detached-feet ends), else the names.
    let map = match mapped {
        Some(map) => map,
        None => {
            let (map, report) = HumanoidMap::from_skeleton(skeleton);
            if let Some(role) = report.missing_required.first() {
                return Err(IkError::MissingRole(*role));
            }
            map
        }
    };
    map.validate(skeleton)
        .map_err(|e| IkError::InvalidChain(e.into()))?;
    let mut solver =
        FullBodySolver::new(skeleton, &map).map_err(|e| IkError::InvalidChain(e.into()))?;
    *solver.settings_mut() = humanoid.full_body_settings;
    let mut goals = solver.goals_at_pose(skeleton, &skeleton.rest_pose());
    // The pelvis follows its target's position only (the hips keep turning freely). All goals
    // share one priority level: the solver's fast path; the limbs are finished analytically
    // afterwards, so hands and feet stay exact when reachable.
    goals.get_mut(Effector::Pelvis).rotation_weight = 0.0;
    let up = BodyFrame::from_rest(skeleton, &map).map_or(Vec3::Y, |f| f.up);
    Ok((
        AnyStage::full_body(FullBodyStage::new(solver, goals, skeleton.len())),
        FullBodyData { map, up },
    ))
}

/// Writes this frame's full-body goals: effector and look-at targets read now (switched by
/// `arms` / `legs` / `head` and by which targets exist), the balance goal and the settings.
///
/// `bones` are the character's bone entities (parallel to the stage's skeleton), for a grip
/// anchored on one of them.
fn gather_full_body(
    humanoid: &IkHumanoid,
    targets: &IkHumanoidTargets,
    stage: &mut FullBodyStage,
    cx: &IkGatherContext<'_, '_, '_, '_>,
) -> Result<(), IkError> {
    if *stage.solver.settings() != humanoid.full_body_settings {
        *stage.solver.settings_mut() = humanoid.full_body_settings;
    }
    let entities = [
        targets.left_hand,
        targets.right_hand,
        targets.left_foot,
        targets.right_foot,
        targets.pelvis,
    ];
    for (k, (goal, target)) in stage.goals.effectors.iter_mut().zip(entities).enumerate() {
        let on = match Effector::ALL[k] {
            Effector::LeftHand | Effector::RightHand => humanoid.arms,
            Effector::LeftFoot | Effector::RightFoot => humanoid.legs,
            Effector::Pelvis => true,
        };
        match target.filter(|_| on) {
            Some(t) => {
                let m = cx.read(t, false)?;
                goal.position = m.position;
                goal.rotation = m.rotation;
                goal.enabled = true;
            }
            None => goal.enabled = false,
        }
        goal.frame = GoalFrame::Model;
    }
    if let Some(grip) = humanoid.grip.filter(|_| humanoid.arms) {
        gather_grip(&grip, stage, cx)?;
    }
    match targets.head.filter(|_| humanoid.head) {
        Some(t) => {
            stage.goals.look_at.target = cx.read(t, false)?.position;
            stage.goals.look_at.enabled = true;
        }
        None => stage.goals.look_at.enabled = false,
    }
    // Balance: the support point between the feet targets gathered above.
    let balance = humanoid.balance;
    let goals = &mut stage.goals;
    let (left, right) = (
        goals.get(Effector::LeftFoot),
        goals.get(Effector::RightFoot),
    );
    goals.center_of_mass = if balance.enabled && left.enabled && right.enabled {
        CenterOfMassGoal {
            target: balance.support_point(left.position, right.position),
            weight: balance.weight,
            enabled: true,
            priority: balance.priority,
        }
    } else {
        CenterOfMassGoal {
            enabled: false,
            ..goals.center_of_mass
        }
    };
    Ok(())
}
