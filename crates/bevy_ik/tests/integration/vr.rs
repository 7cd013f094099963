//! `IkVrBody`: three tracker entities drive a whole humanoid (ik-core's test rig under a
//! moved, turned character). The hand bones' `GlobalTransform`s land on the trackers' (measured
//! after propagation), the head's within 5 mm, the body walks after a head that moves forward (feet step:
//! they end near the head's ground position, not where they started), and a tracker entity
//! that disappears leaves the pose finite.

use crate::common;

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_ik::ik_core::humanoid::{HumanoidBone as B, HumanoidMap};
use bevy_ik::prelude::*;
use common::*;
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

struct Scene {
    app: App,
    character: Entity,
    bones: Vec<Entity>,
    trackers: [Entity; 3],
    roles: [usize; 5],
}

fn spawn() -> Scene {
    let skeleton = test_rig(RigConvention::Mixamo, RestAxes::MinusZ);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let model = skeleton.rest_model_transforms();
    let mut app = app();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
        1.0 / 60.0,
    )));
    let character = app
        .world_mut()
        .spawn(Transform::from_xyz(1.0, 0.2, -2.0).with_rotation(Quat::from_rotation_y(0.7)))
        .id();
    let mut bones: Vec<Entity> = Vec::with_capacity(skeleton.len());
    for bone in skeleton.bones() {
        let parent = bone.parent.map_or(character, |p| bones[p]);
        let r = bone.rest;
        let e = app
            .world_mut()
            .spawn((
                Name::new(bone.name.clone()),
                Transform {
                    translation: r.translation,
                    rotation: r.rotation,
                    scale: r.scale,
                },
                ChildOf(parent),
            ))
            .id();
        bones.push(e);
    }
    let role = |r: B| map.get(r).unwrap();
    let roles = [
        role(B::Head),
        role(B::LeftHand),
        role(B::RightHand),
        role(B::LeftFoot),
        role(B::RightFoot),
    ];
    // Trackers are children of the character: their local transforms are model space. Start
    // them where the bones are at rest, the head 6 cm lower (knees soft enough to walk).
    let trackers = [roles[0], roles[1], roles[2]].map(|b| {
        let mut t = model[b];
        if b == roles[0] {
            t.translation.y -= 0.1;
        } else {
            // Hands a little in from the stretched rest arms (within reach).
            t.translation.x *= 0.85;
            t.translation.y -= 0.1;
        }
        app.world_mut()
            .spawn((
                Transform::from_translation(t.translation).with_rotation(t.rotation),
                ChildOf(character),
            ))
            .id()
    });
    app.world_mut().entity_mut(character).insert(IkVrBody::new(
        trackers[0],
        trackers[1],
        trackers[2],
    ));
    app.update();
    app.update();
    Scene {
        app,
        character,
        bones,
        trackers,
        roles,
    }
}

fn global(app: &App, e: Entity) -> GlobalTransform {
    *app.world().get::<GlobalTransform>(e).unwrap()
}

/// Frames at the start of tracking during which the hands may be up to
/// [`START_HAND_TOLERANCE`] off (see `head_and_hands_follow_the_trackers_and_the_feet_step`).
const SETTLE_IN_FRAMES: usize = 2;
/// How far off (metres) a hand may be during the first [`SETTLE_IN_FRAMES`] frames.
const START_HAND_TOLERANCE: f32 = 5e-3;

#[test]
fn head_and_hands_follow_the_trackers_and_the_feet_step() {
    let mut s = spawn();
    let st = status(&s.app, s.character);
    assert!(st.ready && st.last_error.is_none(), "{st:?}");
    let feet0 = [s.roles[3], s.roles[4]].map(|b| global(&s.app, s.bones[b]).translation());
    // Walk the trackers 0.8 m forward (model +Z is the rig's forward) over 2 s, then hold.
    let mut misses = Vec::new();
    for frame in 0..180 {
        let step = if frame < 120 { 0.8 / 120.0 } else { 0.0 };
        for t in s.trackers {
            s.app
                .world_mut()
                .get_mut::<Transform>(t)
                .unwrap()
                .translation
                .z += step;
        }
        s.app.update();
        for (k, t) in s.trackers.into_iter().enumerate() {
            let want = global(&s.app, t);
            let got = global(&s.app, s.bones[s.roles[k]]);
            assert!(got.translation().is_finite());
            let d = got.translation().distance(want.translation());
            let a = got.rotation().angle_between(want.rotation());
            // Hands within 1 mm / 5°, the head within 5 mm / 1°: the controllers here keep the
            // rest hands' rotation, which the wrist cannot quite take with the arms bent, so
            // the bounded solve turns the wrist as far as it goes (see
            // `VrReport::trunk_moved`, `ik_core::vr::HAND_ROTATION_WEIGHT`).
            let (tol, tol_a): (f32, f32) = if k == 0 { (5e-3, 0.0175) } else { (1e-3, 0.09) };
            // The first frames of tracking: the VR body's bounded solve brings the body from
            // the pose its first frame left onto the analytic one at most 7.5° a joint a frame
            // (its per-frame turn bound, issue 24), so the hands arrive over
            // `SETTLE_IN_FRAMES` frames (measured: 1.3 and 2.0 mm on frames 0 and 1); they
            // are held to the start tolerance then, to 1 mm after.
            let tol = if frame < SETTLE_IN_FRAMES {
                tol.max(START_HAND_TOLERANCE)
            } else {
                tol
            };
            if !(d < tol && a < tol_a) {
                misses.push(format!("frame {frame} tracker {k}: {d} m, {a} rad"));
            }
        }
    }
    assert!(misses.is_empty(), "{misses:#?}");
    let feet1 = [s.roles[3], s.roles[4]].map(|b| global(&s.app, s.bones[b]).translation());
    for k in 0..2 {
        let moved = feet1[k].distance(feet0[k]);
        assert!((0.6..1.0).contains(&moved), "foot {k} moved {moved} m");
    }
}

#[test]
fn a_missing_tracker_leaves_the_pose_finite() {
    let mut s = spawn();
    s.app.world_mut().despawn(s.trackers[1]);
    for _ in 0..5 {
        s.app.update();
    }
    for &b in &s.bones {
        assert!(global(&s.app, b).translation().is_finite());
    }
}
