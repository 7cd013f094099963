//! A VR body on the glTF characters in `assets/`, loaded through Bevy's glTF loader in a
//! headless app (as `gltf_characters.rs`): the three trackers start on the head and hand bones
//! and walk 0.9 m over level ground (the demo's `--vr` walk, 4 frames a second as the demo runs
//! under software rendering). The head must stay on its tracker (1 mm) whenever the VR body
//! reports it reachable, and within [`LOWERED_HEAD`] when it does not (a standing leg may
//! straighten only at the turn bound's pace, so that a planted foot does not slide): the floor is level in the character's model space (+Y up), whatever the rest
//! posture — the UAL mannequin's rest pose leans 4.8°, and with the floor tilted to match the
//! head missed by 76 mm.

#![cfg(feature = "vrm")]

use std::time::Duration;

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::ik_core::vr::VrBody;
use bevy_ik::prelude::*;

// The headless glTF app and character set-up are `gltf_characters`' (same feature gate).
use super::gltf_characters::{ASSETS, app, global, spawn_character};

fn smooth(a: f32, b: f32, t: f32) -> f32 {
    let x = ((t - a) / (b - a)).clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

/// On frames the VR body reports the head out of reach (the pelvis lowered), the head may be
/// at most this far off its tracker, m: the standing legs straighten at the turn bound's pace
/// (measured, the head tracker at the rest head height, legs straight, 0.25 s frames: 1.76 mm
/// `KayKit` on 29 frames of 150, 3.90 mm UAL on 2, 4.54 mm the bundled character on 20; branch
/// vrfeet24: 8.1, 15.5 and 18.9 mm on 77, 91 and 150 frames); the floor tilted with the rest
/// posture left it 76 mm off.
const LOWERED_HEAD: f32 = 5e-3;

/// On frames the VR body reports the head reachable (`VrReport::head_reachable`), the head on
/// its tracker within this, m (the 1 mm).
const REACHABLE_HEAD: f32 = 1e-3;

/// The worst head error (m) over the walk's frames where the VR body reports the head
/// reachable, over all frames, and on how many frames it does not.
fn walk(file: &str, dt: f32, fb_weight_zero: bool) -> (f32, f32, usize) {
    let mut app = app(ASSETS);
    app.insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(
        Duration::from_secs_f32(dt),
    ));
    let character = spawn_character(&mut app, file, IkHumanoid::auto());
    for _ in 0..3 {
        app.update();
    }
    let bones = app
        .world()
        .get::<IkHumanoidBones>(character)
        .unwrap()
        .clone();
    let hb = bones.get(HumanoidBone::Head).unwrap();
    let lb = bones.get(HumanoidBone::LeftHand).unwrap();
    let rb = bones.get(HumanoidBone::RightHand).unwrap();
    if fb_weight_zero {
        app.world_mut()
            .get_mut::<IkHumanoid>(character)
            .unwrap()
            .weight = 0.0;
    }
    let mk = |app: &mut App, b: Entity| {
        let g = global(app, b);
        let mut t = g.compute_transform();
        t.scale = Vec3::ONE;
        app.world_mut().spawn(t).id()
    };
    let (h, l, r) = (mk(&mut app, hb), mk(&mut app, lb), mk(&mut app, rb));
    let home: Vec<Transform> = [h, l, r]
        .iter()
        .map(|&e| *app.world().get::<Transform>(e).unwrap())
        .collect();
    let stage = app
        .world_mut()
        .spawn((
            Name::new("VR body"),
            IkVrBody::new(h, l, r),
            IkStageOf(character),
        ))
        .id();
    let (mut worst, mut worst_all, mut lowered) = (0.0f32, 0.0f32, 0);
    for tick in 1..=150u32 {
        let t = tick as f32 / 30.0;
        let walk = 0.9 * smooth(0.5, 3.5, t);
        for (i, &e) in [h, l, r].iter().enumerate() {
            let mut tr = home[i];
            tr.translation.z += walk;
            *app.world_mut().get_mut::<Transform>(e).unwrap() = tr;
        }
        app.update();
        let err = global(&app, hb)
            .translation()
            .distance(global(&app, h).translation());
        let low = app
            .world()
            .get::<IkCharacter>(character)
            .and_then(|c| c.custom_stage::<VrBody>(stage))
            .is_some_and(|b| !b.report().head_reachable());
        worst_all = worst_all.max(err);
        if low {
            lowered += 1;
        } else {
            worst = worst.max(err);
        }
    }
    println!(
        "{file}: head within {:.2} mm of its tracker ({:.2} mm with the {lowered} frames of 150 the pelvis is lowered)",
        worst * 1e3,
        worst_all * 1e3
    );
    (worst, worst_all, lowered)
}

#[test]
fn vr_head_stays_on_its_tracker_walking_over_level_ground() {
    for file in [
        "ual_mannequin_f.glb",
        "kaykit_mannequin.glb",
        "character.glb",
    ] {
        let (worst, worst_all, lowered) = walk(file, 0.25, true);
        assert!(
            worst <= REACHABLE_HEAD && worst_all <= LOWERED_HEAD,
            "{file}: head {:.1} mm off its tracker ({:.1} mm with the {lowered} frames the pelvis is lowered)",
            worst * 1e3,
            worst_all * 1e3
        );
    }
}
