//! Gameplay behaviours as stages of a character: [`IkLookAt`] (eyes → head → neck → spine),
//! [`IkAim`] (a bone-local axis at a target), [`IkTwist`] (forearm twist spread over twist
//! bones) and [`IkReach`] (a target entity that moves from the animated effector to a real
//! target over time, for any stage to follow).
//!
//! Each of the first three is sugar over [`IkCustom`]: put it on a stage entity of a humanoid
//! character (`(IkLookAt { .. }, IkStageOf(character))`); a system inserts (and, when its
//! structure changes, replaces) the entity's `IkCustom` with the ik-core stage
//! ([`LookAtChain`], [`AimChain`], [`TwistDistribution`]) built on the character's skeleton,
//! keyed by its structure ([`IkCustom::with_key`]). The component is also the stage's
//! [`IkStageInput`] (the public per-frame hook any custom stage can use): every frame,
//! between set-up and solve, its target, weight and parameters (limits, smoothing, pole) and
//! the frame's time step go into the built stage. Its status is the stage entity's
//! [`IkStatus`](crate::IkStatus), like any stage.
//!
//! Bones are found the way other stages find them: humanoid roles resolved on the character
//! (its [`IkHumanoidBones`](crate::IkHumanoidBones) when it has an
//! [`IkHumanoid`](crate::IkHumanoid), else mapped from names); eye bones and twist/roll helper
//! bones by name among the character's descendants (they are rescanned when new named
//! entities appear, e.g. a glTF scene finishing spawning).
//!
//! ## Systems
//!
//! ```text
//! AnimationSystems
//!   sync_behaviour_stages                            IkLookAt/IkAim/IkTwist → IkCustom
//!   move_reach_targets                               IkReach: advance, move the entity
//! IkSystems::Prepare           set_up_characters       builds the stages
//!   (after set-up)             apply_stage_inputs::<T> target, weight, settings, pole, dt
//!                                                      into the stages (one per component)
//! IkSystems::Solve             solve_characters
//! ```

use bevy::ecs::change_detection::DetectChanges;
use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::{ChildOf, Children};
use bevy::ecs::name::Name;
use bevy::ecs::system::{Commands, Local, ParamSet, Query, Res};
use bevy::ecs::world::Ref;
use bevy::math::Vec3;
use bevy::time::Time;
use bevy::transform::components::Transform;
use bevy::transform::helper::TransformHelper;
use ik_core::Skeleton;
use ik_core::behaviours::aim::{AimChain, AimSettings};
use ik_core::behaviours::look_at::{LookAtChain, is_eye_name};
use ik_core::behaviours::motion::{GoalMotion, MotionPath, MotionTiming};
use ik_core::behaviours::twist::{TwistDistribution, is_twist_name};
use ik_core::humanoid::{HumanoidBone, HumanoidMap};
use ik_core::stack::StackError;

use crate::character::IkCharacter;
use crate::components::BoneRef;
pub use crate::components::behaviours::{IkAim, IkEasing, IkLookAt, IkReach, IkTwist};
use crate::setup::IkRescan;
use crate::stage::{
    IkCustom, IkStageContext, IkStageInput, IkStageInputPlugin, IkStageOf, sync_custom,
};

const LOOK_ROLES: [HumanoidBone; 7] = [
    HumanoidBone::Hips,
    HumanoidBone::Spine,
    HumanoidBone::Head,
    HumanoidBone::LeftUpperArm,
    HumanoidBone::RightUpperArm,
    HumanoidBone::LeftUpperLeg,
    HumanoidBone::RightUpperLeg,
];

const TWIST_ROLES: [HumanoidBone; 10] = [
    HumanoidBone::LeftLowerArm,
    HumanoidBone::LeftHand,
    HumanoidBone::RightLowerArm,
    HumanoidBone::RightHand,
    HumanoidBone::LeftUpperArm,
    HumanoidBone::RightUpperArm,
    HumanoidBone::LeftUpperLeg,
    HumanoidBone::LeftLowerLeg,
    HumanoidBone::RightUpperLeg,
    HumanoidBone::RightLowerLeg,
];

/// The map of a (partial) character skeleton: from its names, then the roles the stage listed.
pub(crate) fn map_with(
    skeleton: &Skeleton,
    roles: &[HumanoidBone],
    bones: &[usize],
) -> HumanoidMap {
    let (mut map, _) = HumanoidMap::from_skeleton(skeleton);
    for (&r, &b) in roles.iter().zip(bones) {
        map.set(r, Some(b));
    }
    map
}

/// Descendants of `root` whose `Name` passes `test`, depth first.
fn named_descendants(
    root: Entity,
    children: &Query<&Children>,
    names: &Query<&Name>,
    test: fn(&str) -> bool,
) -> Vec<Entity> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if let Ok(n) = names.get(e)
            && test(n.as_str())
        {
            out.push(e);
        }
        if let Ok(c) = children.get(e) {
            stack.extend(c.iter());
        }
    }
    out.sort_unstable();
    out
}

fn look_custom(look: &IkLookAt, eyes: &[Entity]) -> IkCustom {
    let settings = look.settings();
    let explicit = !look.eyes.is_empty();
    let bones = LOOK_ROLES
        .iter()
        .map(|&r| BoneRef::Role(r))
        .chain(look.eyes.iter().cloned())
        .chain(
            eyes.iter()
                .filter(|_| !explicit)
                .map(|&e| BoneRef::Entity(e)),
        );
    // The settings are handed in every frame: only whether the eyes are explicit is
    // structural besides the bones.
    IkCustom::new(bones, move |s: &Skeleton, b: &[usize]| {
        let map = map_with(s, &LOOK_ROLES, b);
        let eyes = explicit.then(|| &b[LOOK_ROLES.len()..]);
        LookAtChain::from_humanoid(s, &map, eyes, settings).map_err(StackError::from)
    })
    .with_key(explicit)
}

/// What the aim's builder reads besides its bones: the axes (as bits) and their space.
fn aim_key(aim: &IkAim) -> [u32; 10] {
    let [a, o, p] =
        [aim.axis, aim.origin, aim.pole_axis.unwrap_or(Vec3::NAN)].map(|v| v.to_array());
    let bits = |v: [f32; 3]| v.map(f32::to_bits);
    let ([a0, a1, a2], [o0, o1, o2], [p0, p1, p2]) = (bits(a), bits(o), bits(p));
    [
        a0,
        a1,
        a2,
        o0,
        o1,
        o2,
        p0,
        p1,
        p2,
        u32::from(aim.model_space_axes),
    ]
}

fn aim_custom(aim: &IkAim) -> IkCustom {
    let (axis, origin, pole_axis) = (aim.axis, aim.origin, aim.pole_axis);
    let model_space = aim.model_space_axes;
    let key = aim_key(aim);
    IkCustom::new(
        [aim.root.clone(), aim.tip.clone()],
        move |s: &Skeleton, b: &[usize]| {
            let (axis, origin, pole_axis) = if model_space {
                let rest = s.rest_model_transforms()[b[1]];
                let to_local = |v: Vec3| rest.rotation.inverse() * v;
                (
                    to_local(axis),
                    to_local(origin) / rest.scale,
                    pole_axis.map(to_local),
                )
            } else {
                (axis, origin, pole_axis)
            };
            let chain = AimChain::try_new(s, b[0], b[1], axis, origin, None)?;
            match pole_axis {
                Some(p) => chain.with_pole_axis(p).map_err(StackError::from),
                None => Ok(chain),
            }
        },
    )
    .with_key(key)
}

fn twist_custom(helpers: &[Entity]) -> IkCustom {
    let bones = TWIST_ROLES
        .iter()
        .map(|&r| BoneRef::Role(r))
        .chain(helpers.iter().map(|&e| BoneRef::Entity(e)));
    IkCustom::new(bones, |s: &Skeleton, b: &[usize]| {
        Ok::<_, StackError>(TwistDistribution::from_humanoid(
            s,
            &map_with(s, &TWIST_ROLES, b),
        ))
    })
    .with_key(())
}

/// Inserts each behaviour's [`IkCustom`] where there is none or its structure changed (see
/// [`IkCustom::with_key`]); the per-frame inputs go in through [`IkStageInput`].
#[allow(clippy::type_complexity)]
pub(crate) fn sync_behaviour_stages(
    mut commands: Commands,
    looks: Query<(Entity, Ref<IkLookAt>, Option<&IkStageOf>, Option<&IkCustom>)>,
    aims: Query<(Entity, Ref<IkAim>, Option<&IkCustom>)>,
    twists: Query<(Entity, Ref<IkTwist>, Option<&IkStageOf>, Option<&IkCustom>)>,
    children: Query<&Children>,
    names: Query<&Name>,
    rescan: Option<Res<IkRescan>>,
) {
    let rescan = rescan.is_some_and(|r| r.0);
    for (e, look, stage_of, custom) in &looks {
        // Per-frame fields (weight, target, limits, smoothing) go in through `IkStageInput`:
        // nothing is built for them. Eyes found by name change only with the hierarchy.
        let explicit = !look.eyes.is_empty();
        let same = custom.is_some_and(|c| {
            c.has_key(explicit)
                && (!explicit || c.bones.get(LOOK_ROLES.len()..) == Some(look.eyes.as_slice()))
        });
        if rescan || (!same && (look.is_changed() || custom.is_none())) {
            let character = stage_of.map_or(e, |s| s.0);
            let eyes = if look.eyes.is_empty() {
                named_descendants(character, &children, &names, is_eye_name)
            } else {
                Vec::new()
            };
            sync_custom(&mut commands, e, custom, look_custom(&look, &eyes));
        }
    }
    for (e, aim, custom) in &aims {
        let same = custom.is_some_and(|c| {
            c.has_key(aim_key(&aim))
                && matches!(&c.bones[..], [r, t] if *r == aim.root && *t == aim.tip)
        });
        if !same && (aim.is_changed() || custom.is_none()) {
            sync_custom(&mut commands, e, custom, aim_custom(&aim));
        }
    }
    for (e, twist, stage_of, custom) in &twists {
        // Its structure is the hierarchy's twist bones: only a rescan changes it.
        if rescan
            || custom.is_none()
            || (twist.is_changed() && !custom.is_some_and(|c| c.has_key(())))
        {
            let character = stage_of.map_or(e, |s| s.0);
            let helpers = named_descendants(character, &children, &names, is_twist_name);
            sync_custom(&mut commands, e, custom, twist_custom(&helpers));
        }
    }
}

impl IkStageInput for IkLookAt {
    type Stage = LookAtChain;
    type Data = &'static Self;

    fn apply(look: &Self, stage: &mut LookAtChain, cx: &IkStageContext) {
        stage.dt = cx.delta_secs();
        let settings = look.settings();
        if *stage.settings() != settings {
            // Bad values are reported by keeping the last good settings.
            let _ = stage.set_settings(settings);
        }
    }

    crate::stage::weight_and_target_fields!();
}

impl IkStageInput for IkAim {
    type Stage = AimChain;
    type Data = &'static Self;

    fn apply(aim: &Self, stage: &mut AimChain, _: &IkStageContext) {
        stage.pole = aim.pole_axis.map(|_| aim.pole);
        let settings = AimSettings {
            pole_weight: aim.pole_weight.clamp(0.0, 1.0),
            ..*stage.settings()
        };
        if *stage.settings() != settings {
            let _ = stage.set_settings(settings);
        }
    }

    crate::stage::weight_and_target_fields!();
}

impl IkStageInput for IkTwist {
    type Stage = TwistDistribution;
    type Data = &'static Self;

    fn apply(_: &Self, _: &mut TwistDistribution, _: &IkStageContext) {}

    fn weight(twist: &&Self) -> Option<f32> {
        Some(twist.weight)
    }
}

/// Advances every [`IkReach`] and moves its entity along the path.
pub(crate) fn move_reach_targets(
    mut reaches: Query<(Entity, &mut IkReach, Option<&ChildOf>)>,
    mut transforms: ParamSet<(TransformHelper, Query<&mut Transform>)>,
    roles: Query<&crate::IkHumanoidBones>,
    mut weights: Query<&mut IkCustom>,
    mut limbs: Query<&mut crate::IkLimb>,
    characters: Query<&IkCharacter>,
    time: Option<Res<Time>>,
    mut moves: Local<Vec<(Entity, Vec3)>>,
) {
    let dt = time.map_or(0.0, |t| t.delta_secs());
    moves.clear();
    {
        let helper = transforms.p0();
        for (entity, mut reach, parent) in &mut reaches {
            let (Some(character), Some(effector), Some(target)) =
                (reach.character, reach.effector.as_ref(), reach.target)
            else {
                continue;
            };
            // The effector where the animation puts it: the character's input pose.
            let Some(from) = characters.get(character).ok().and_then(|c| {
                let bone = effector_index(c, effector, roles.get(character).ok())?;
                animated_position(c, bone, &helper)
            }) else {
                continue;
            };
            // A child target moves in its parent's frame.
            let parent_from_world = match parent {
                Some(p) => match helper.compute_global_transform(p.parent()) {
                    Ok(g) => Some(g.affine().inverse()),
                    Err(_) => continue,
                },
                None => None,
            };
            let Ok(to) = helper.compute_global_transform(target) else {
                continue;
            };
            let timing = match reach.speed {
                Some(s) if s.is_finite() && s > 0.0 => MotionTiming::Speed(s),
                _ if reach.duration.is_finite() && reach.duration > 0.0 => {
                    MotionTiming::Duration(reach.duration)
                }
                _ => continue,
            };
            let Ok(mut motion) = GoalMotion::try_new(timing, reach.easing.into()) else {
                continue;
            };
            motion.path = match reach
                .arc_center
                .and_then(|c| helper.compute_global_transform(c).ok())
            {
                Some(c) => MotionPath::Arc {
                    center: c.translation(),
                },
                None => MotionPath::Line,
            };
            motion.set_phase(reach.phase);
            motion.set_engaged(reach.engaged);
            let to = to.translation();
            let weight = motion.advance(dt, from, to);
            let position = motion.position(from, to);
            if reach.phase != motion.phase() {
                reach.phase = motion.phase();
            }
            if reach.weight != weight {
                reach.weight = weight;
            }
            let local = parent_from_world.map_or(position, |m| m.transform_point3(position));
            if local.is_finite() {
                moves.push((entity, local));
            }
            if let Some(stage) = reach.fade_stage {
                if let Ok(mut c) = weights.get_mut(stage)
                    && c.weight != weight
                {
                    c.weight = weight;
                }
                if let Ok(mut l) = limbs.get_mut(stage)
                    && l.weight != weight
                {
                    l.weight = weight;
                }
            }
        }
    }
    let mut q = transforms.p1();
    for &(e, p) in moves.iter() {
        if let Ok(mut t) = q.get_mut(e)
            && t.translation != p
        {
            t.translation = p;
        }
    }
}

/// The skeleton index of `effector` on the character: an entity of its skeleton, a bone name,
/// or a humanoid role of its mapping.
fn effector_index(
    ch: &IkCharacter,
    effector: &BoneRef,
    roles: Option<&crate::IkHumanoidBones>,
) -> Option<usize> {
    let rt = ch.rt.as_ref()?;
    let entity = match effector {
        BoneRef::Entity(e) => *e,
        BoneRef::Role(role) => roles?.get(*role)?,
        BoneRef::Name(name) => return rt.stack.skeleton().find(name),
    };
    rt.entities.iter().position(|&e| e == entity)
}

/// The world position of bone `i` in the character's input (animated) pose.
fn animated_position(ch: &IkCharacter, i: usize, helper: &TransformHelper) -> Option<Vec3> {
    let rt = ch.rt.as_ref()?;
    let model = rt.stack.skeleton().model_transform(&rt.input, i);
    let frame = crate::pose_io::model_space(helper, rt.frame).ok()?;
    let p = frame.transform_point(model.translation);
    p.is_finite().then_some(p)
}

/// Registers the behaviour components and systems.
pub(crate) fn build(
    app: &mut bevy::app::App,
    schedule: bevy::ecs::intern::Interned<dyn bevy::ecs::schedule::ScheduleLabel>,
) {
    use bevy::ecs::schedule::IntoScheduleConfigs;
    app.register_type::<IkLookAt>()
        .register_type::<IkAim>()
        .register_type::<IkTwist>()
        .register_type::<IkReach>()
        .register_type::<IkEasing>();
    app.add_systems(
        schedule,
        (sync_behaviour_stages, move_reach_targets)
            .chain()
            .after(bevy::app::AnimationSystems)
            .before(crate::IkSystems::Prepare),
    );
    app.add_plugins((
        IkStageInputPlugin::<IkLookAt>::new(),
        IkStageInputPlugin::<IkAim>::new(),
        IkStageInputPlugin::<IkTwist>::new(),
    ));
}
