//! The behaviour components on a headless app, on ik-core's Unreal-named test rig (a forearm
//! twist leaf bone per arm) spawned as an entity hierarchy under a turned character, measured
//! on the propagated `GlobalTransform`s:
//!
//! - [`IkLookAt`]: the head's forward (derived from the rig) points at a target within its
//!   limits after the smoothing settles, and its status is ready;
//! - [`IkAim`]: an offset ray in the right hand points at a target entity within 0.1°;
//! - [`IkTwist`]: a 70° hand twist puts half of it into `lowerarm_twist_01_r` (its rest-position
//!   share) and leaves the hand where it was;
//! - [`IkReach`]: a proxy target moves from the animated hand to a target in the stated time
//!   (60 Hz manual clock) and a limb following it arrives.

use crate::common;

use core::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_ik::ik_core::Skeleton;
use bevy_ik::ik_core::behaviours::look_at::{LookAtChain, LookAtSettings};
use bevy_ik::ik_core::humanoid::{BodyFrame, HumanoidBone as B, HumanoidMap};
use bevy_ik::ik_core::rotation::twist_angle;
use bevy_ik::prelude::*;
use common::*;
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

struct Rig {
    app: App,
    character: Entity,
    bones: Vec<Entity>,
    skeleton: Skeleton,
    map: HumanoidMap,
}

fn spawn() -> Rig {
    let skeleton = test_rig(RigConvention::Unreal, RestAxes::PlusX);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let mut app = app();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
        1.0 / 60.0,
    )));
    let character = app
        .world_mut()
        .spawn(Transform::from_xyz(1.0, 0.0, -2.0).with_rotation(Quat::from_rotation_y(0.7)))
        .id();
    let mut bones: Vec<Entity> = Vec::new();
    for bone in skeleton.bones() {
        let parent = bone.parent.map_or(character, |p| bones[p]);
        let r = bone.rest;
        let t = Transform {
            translation: r.translation,
            rotation: r.rotation,
            scale: r.scale,
        };
        bones.push(
            app.world_mut()
                .spawn((Name::new(bone.name.clone()), t, ChildOf(parent)))
                .id(),
        );
    }
    app.update();
    Rig {
        app,
        character,
        bones,
        skeleton,
        map,
    }
}

impl Rig {
    fn bone(&self, role: B) -> Entity {
        self.bones[self.map.get(role).unwrap()]
    }
    fn global(&self, e: Entity) -> GlobalTransform {
        *self.app.world().get::<GlobalTransform>(e).unwrap()
    }
    fn character_rotation(&self) -> Quat {
        self.global(self.character).rotation()
    }
}

fn angle(a: Vec3, b: Vec3) -> f32 {
    a.cross(b).length().atan2(a.dot(b))
}

#[test]
fn look_at_turns_the_head_toward_the_target() {
    let mut rig = spawn();
    let head = rig.bone(B::Head);
    let frame = BodyFrame::from_rest(&rig.skeleton, &rig.map).unwrap();
    let chain =
        LookAtChain::from_humanoid(&rig.skeleton, &rig.map, None, LookAtSettings::default())
            .unwrap();
    let forward_local = chain.head_forward_local();
    let head_pos = rig.global(head).translation();
    let world_dir =
        rig.character_rotation() * (frame.forward + frame.left * 0.5 + frame.up * 0.2).normalize();
    let target = rig
        .app
        .world_mut()
        .spawn(Transform::from_translation(head_pos + world_dir * 2.0))
        .id();
    let stage = rig
        .app
        .world_mut()
        .spawn((
            IkLookAt {
                max_speed: 2000.0,
                smooth_time: 0.0,
                ..IkLookAt::at(target)
            },
            IkStageOf(rig.character),
        ))
        .id();
    for _ in 0..5 {
        rig.app.update();
    }
    let s = status(&rig.app, stage);
    assert!(s.ready && s.last_error.is_none(), "{s:?}");
    let g = rig.global(head);
    let forward = g.rotation() * forward_local;
    let to_target = rig.global(target).translation() - g.translation();
    let err = angle(forward, to_target);
    assert!(
        err < 2f32.to_radians(),
        "head misses by {}°",
        err.to_degrees()
    );
    // Released: the head goes back to the rest pose.
    rig.app
        .world_mut()
        .get_mut::<IkLookAt>(stage)
        .unwrap()
        .target = None;
    for _ in 0..5 {
        rig.app.update();
    }
    let forward = rig.global(head).rotation() * forward_local;
    let rest = rig.character_rotation() * frame.forward;
    assert!(angle(forward, rest) < 1f32.to_radians());
}

#[test]
fn aim_points_an_offset_ray_at_the_target() {
    let mut rig = spawn();
    let hand = rig.bone(B::RightHand);
    let (axis, origin) = (
        Vec3::new(0.3, 0.2, 1.0).normalize(),
        Vec3::new(0.0, 0.08, 0.02),
    );
    let frame = BodyFrame::from_rest(&rig.skeleton, &rig.map).unwrap();
    let p = rig.global(hand).translation()
        + rig.character_rotation() * (frame.forward * 1.5 + frame.up * 0.3);
    let target = rig
        .app
        .world_mut()
        .spawn(Transform::from_translation(p))
        .id();
    let stage = rig
        .app
        .world_mut()
        .spawn((
            IkAim {
                target: Some(target),
                axis,
                origin,
                pole_axis: Some(Vec3::Y),
                ..IkAim::default()
            },
            IkStageOf(rig.character),
        ))
        .id();
    rig.app.update();
    rig.app.update();
    let s = status(&rig.app, stage);
    assert!(s.ready && s.last_error.is_none(), "{s:?}");
    let g = rig.global(hand);
    let o = g.transform_point(origin);
    let err = angle(g.rotation() * axis, p - o);
    assert!(
        err <= 0.1f32.to_radians(),
        "aim error {}°",
        err.to_degrees()
    );
}

#[test]
fn twist_spreads_the_wrist_twist_over_the_twist_bone() {
    let mut rig = spawn();
    let (hand, lower) = (rig.bone(B::RightHand), rig.bone(B::RightLowerArm));
    let twist_i = rig.skeleton.find("lowerarm_twist_01_r").unwrap();
    let twist = rig.bones[twist_i];
    let (hi, li) = (
        rig.map.get(B::RightHand).unwrap(),
        rig.map.get(B::RightLowerArm).unwrap(),
    );
    let axis = rig.skeleton.rest_bone_direction(li, hi).unwrap();
    let theta = 70f32.to_radians();
    // Set up first: the plugin takes the skeleton's rest pose from the bones' transforms
    // then. Then the animation twists the hand about the forearm.
    let stage = rig
        .app
        .world_mut()
        .spawn((IkTwist::default(), IkStageOf(rig.character)))
        .id();
    rig.app.update();
    let rest_hand = rig.skeleton.bones()[hi].rest.rotation;
    rig.app
        .world_mut()
        .get_mut::<Transform>(hand)
        .unwrap()
        .rotation = Quat::from_axis_angle(axis, theta) * rest_hand;
    rig.app.world_mut().entity_mut(stage).insert(IkDisabled);
    rig.app.update();
    let before = rig.global(hand);
    rig.app.world_mut().entity_mut(stage).remove::<IkDisabled>();
    rig.app.update();
    let s = status(&rig.app, stage);
    assert!(s.ready && s.last_error.is_none(), "{s:?}");
    let after = rig.global(hand);
    assert!(before.translation().distance(after.translation()) < 1e-4);
    assert!(before.rotation().angle_between(after.rotation()) < 1e-3);
    // The twist bone's rotation relative to the lower arm, against its rest.
    let rel = rig.global(lower).rotation().inverse() * rig.global(twist).rotation();
    let rest_rel = rig.skeleton.bones()[twist_i].rest.rotation;
    let turn = rel * rest_rel.inverse();
    let got = twist_angle(turn, axis);
    assert!(
        (got - 0.5 * theta).abs() < 0.02,
        "twist bone has {got}, wants {}",
        0.5 * theta
    );
}

#[test]
fn reach_moves_its_target_in_the_stated_time_and_the_limb_follows() {
    let mut rig = spawn();
    let (upper, lower, hand) = (
        rig.bone(B::LeftUpperArm),
        rig.bone(B::LeftLowerArm),
        rig.bone(B::LeftHand),
    );
    let start = rig.global(hand).translation();
    let goal =
        rig.global(upper).translation() + rig.character_rotation() * Vec3::new(0.2, -0.2, 0.4);
    let target = rig
        .app
        .world_mut()
        .spawn(Transform::from_translation(goal))
        .id();
    let proxy = rig
        .app
        .world_mut()
        .spawn(Transform::from_translation(start))
        .id();
    let limb = rig
        .app
        .world_mut()
        .spawn((
            IkLimb {
                target: Some(proxy),
                weight: 0.0,
                ..IkLimb::new(upper, lower, hand)
            },
            IkStageOf(rig.character),
        ))
        .id();
    rig.app.world_mut().entity_mut(proxy).insert(IkReach {
        character: Some(rig.character),
        effector: Some(hand.into()),
        target: Some(target),
        engaged: true,
        duration: 0.5,
        easing: IkEasing::Linear,
        fade_stage: Some(limb),
        ..IkReach::default()
    });
    let mut arrived = None;
    for k in 1..=60 {
        rig.app.update();
        let reach = rig.app.world().get::<IkReach>(proxy).unwrap().clone();
        let p = rig.global(proxy).translation();
        let line = {
            let ab = goal - start;
            let t = ((p - start).dot(ab) / ab.length_squared()).clamp(0.0, 1.0);
            p.distance(start + ab * t)
        };
        assert!(line < 1e-3, "frame {k}: {line} off the line");
        if arrived.is_none() && reach.phase >= 1.0 {
            arrived = Some(k);
        }
    }
    // The first update's clock step is zero in Bevy, so 30 steps of 1/60 s end on update 31.
    let arrived = arrived.expect("never arrived");
    assert!((30..=32).contains(&arrived), "arrived on update {arrived}");
    let h = rig.global(hand).translation();
    assert!(h.distance(goal) < 1e-3, "hand {h} vs goal {goal}");
}

#[test]
fn behaviour_weights_change_per_frame_and_only_structure_rebuilds() {
    let mut rig = spawn();
    let target = rig
        .app
        .world_mut()
        .spawn(Transform::from_xyz(0.0, 1.5, 2.0))
        .id();
    let aim = rig
        .app
        .world_mut()
        .spawn((
            IkAim {
                target: Some(target),
                ..IkAim::default()
            },
            IkStageOf(rig.character),
        ))
        .id();
    rig.app.update();
    rig.app.update();
    let set_ups = |rig: &Rig| {
        rig.app
            .world()
            .get::<IkCharacter>(rig.character)
            .unwrap()
            .set_ups()
    };
    let before = set_ups(&rig);
    // A fade written every frame: handed in, nothing rebuilt.
    for k in 0..6 {
        rig.app.world_mut().get_mut::<IkAim>(aim).unwrap().weight = 1.0 - 0.1 * k as f32;
        rig.app.update();
        let w = rig.app.world().get::<IkCustom>(aim).unwrap().weight;
        assert!((w - (1.0 - 0.1 * k as f32)).abs() < 1e-6, "weight {w}");
    }
    assert_eq!(set_ups(&rig), before, "a weight change rebuilt the stack");
    // A new aim axis is structural: rebuilt once.
    rig.app.world_mut().get_mut::<IkAim>(aim).unwrap().axis = Vec3::X;
    rig.app.update();
    rig.app.update();
    assert_eq!(set_ups(&rig), before + 1);
}
