//! The first scene (`examples/first_scene/`) headless: the grounded character looks at a moving
//! ball while its right hand holds a cup it reached for by role; the VRM avatar is a VR body.
//! What the user sees (bone `GlobalTransform`s) is checked against what the statuses say.

#![cfg(all(feature = "vrm", feature = "mesh-ground"))]

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;

use super::gltf_characters::{ASSETS, app, global};

#[path = "../../../../examples/first_scene/scene.rs"]
#[allow(dead_code, reason = "the example's module: the test reads part of it")]
mod scene;

use scene::{FirstScene, FirstScenePlugin};

/// The cup contact the scene promises: 1 mm.
const CUP_CONTACT: f32 = 1e-3;
/// Frames after set-up: the reach (0.5 s) and two swings of the ball at 60 fps.
const FRAMES: u32 = 8 * 60;

struct Run {
    /// Worst hand–cup distance seen once the reach arrived, and the status then.
    worst_contact: f32,
    /// Whether the full-body status said the goals were moved while the hand was off.
    moved_reported: bool,
    /// The worst disagreement between the shown hand–cup distance and the arm's
    /// `final_position_residual`.
    worst_disagreement: f32,
    /// Both feet grounded at the end.
    feet_grounded: bool,
    vr_status: IkStatus,
    vr_head_error: f32,
    grounding: IkStatus,
}

fn run(keep_hand_on_cup: bool) -> Run {
    let mut app = app(ASSETS);
    app.insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(
        Duration::from_secs_f32(1.0 / 60.0),
    ));
    app.insert_resource(FirstScene {
        keep_hand_on_cup,
        ..FirstScene::default()
    });
    // (The headless app is finished already: build the plugin into it directly.)
    FirstScenePlugin.build(&mut app);
    let start = Instant::now();
    let scene = loop {
        app.update();
        let scene = app.world().resource::<FirstScene>().clone();
        if scene.cup.is_some() && scene.trackers.is_some() {
            break scene;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the scene did not set up: {scene:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let character = scene.character.unwrap();
    let cup = scene.cup.unwrap();
    let hand = app
        .world()
        .get::<IkHumanoidBones>(character)
        .unwrap()
        .get(HumanoidBone::RightHand)
        .unwrap();
    let mut out = Run {
        worst_contact: 0.0,
        moved_reported: false,
        worst_disagreement: 0.0,
        feet_grounded: false,
        vr_status: IkStatus::default(),
        vr_head_error: 0.0,
        grounding: IkStatus::default(),
    };
    let arrive = (scene.reach_time * 60.0).ceil() as u32 + 2;
    for frame in 0..FRAMES {
        app.update();
        if frame < arrive {
            continue;
        }
        let shown = global(&app, hand)
            .translation()
            .distance(global(&app, cup).translation());
        let status = app
            .world()
            .get::<IkStatus>(scene.right_arm.unwrap())
            .unwrap()
            .clone();
        out.worst_contact = out.worst_contact.max(shown);
        if std::env::var_os("FIRST_SCENE_DEBUG").is_some() && frame % 30 == 0 {
            let ht = app
                .world()
                .get::<IkHumanoidTargets>(character)
                .unwrap()
                .right_hand
                .unwrap();
            println!(
                "frame {frame}: shown {shown:.4} target-cup {:.4} own {:.4} final {:.4} moved {} conv {} resid {:?}",
                global(&app, ht)
                    .translation()
                    .distance(global(&app, cup).translation()),
                status.position_residual,
                status.final_position_residual,
                status.goals_moved,
                status.converged,
                status.residuals
            );
        }
        if shown > CUP_CONTACT && status.goals_moved {
            out.moved_reported = true;
        }
        // The status measures the pose the character shows.
        out.worst_disagreement = out
            .worst_disagreement
            .max((shown - status.final_position_residual).abs());
    }
    let vr = scene.vr_character.unwrap();
    out.vr_status = app.world().get::<IkStatus>(vr).unwrap().clone();
    let head_tracker = scene.trackers.unwrap()[0];
    let heads: Vec<Entity> = app
        .world_mut()
        .query::<(Entity, &IkHumanoidBone)>()
        .iter(app.world())
        .filter(|(_, t)| t.role() == Some(HumanoidBone::Head))
        .map(|(e, _)| e)
        .collect();
    let head = heads
        .into_iter()
        .find(|&e| is_under(&app, e, vr))
        .expect("the VRM avatar's head");
    out.vr_head_error = global(&app, head)
        .translation()
        .distance(global(&app, head_tracker).translation());
    let grounding = scene.grounding.unwrap();
    out.grounding = app.world().get::<IkStatus>(grounding).unwrap().clone();
    out.feet_grounded = app
        .world()
        .get::<IkGroundingState>(grounding)
        .is_some_and(|s| s.feet.len() == 2 && s.feet.iter().all(|f| f.grounded));
    out
}

fn is_under(app: &App, mut e: Entity, root: Entity) -> bool {
    while let Some(p) = app.world().get::<ChildOf>(e) {
        e = p.parent();
        if e == root {
            return true;
        }
    }
    false
}

#[test]
fn the_first_scene_keeps_the_cup_or_says_so() {
    for keep in [true, false] {
        let r = run(keep);
        println!(
            "keep goals {keep}: hand within {:.3} mm of the cup (moved reported: {}), status \
             and shown pose differ by at most {:.4} mm; VR head {:.2} mm off its tracker",
            r.worst_contact * 1e3,
            r.moved_reported,
            r.worst_disagreement * 1e3,
            r.vr_head_error * 1e3
        );
        // The arm's status is measured on the final pose, after the grounding and the look-at
        // (rounding of the two transform paths aside).
        assert!(r.worst_disagreement < 1e-4, "keep {keep}");
        if keep {
            // Cup contact within 1 mm through the look-at.
            assert!(
                r.worst_contact <= CUP_CONTACT,
                "the hand left the cup by {} mm",
                r.worst_contact * 1e3
            );
        } else {
            // The look-at's turn carries the hand off the cup, and the status says so.
            assert!(r.worst_contact > CUP_CONTACT && r.moved_reported);
        }
        // The VR body works on the VRM avatar with no IkHumanoid (roles from the file's
        // table), and the grounding on the other character.
        assert!(
            r.vr_status.ready && r.vr_status.last_error.is_none(),
            "{:?}",
            r.vr_status
        );
        assert!(r.vr_head_error < 0.01, "VR head {} m off", r.vr_head_error);
        assert!(
            r.grounding.ready && r.grounding.last_error.is_none() && r.feet_grounded,
            "{:?}",
            r.grounding
        );
    }
}
