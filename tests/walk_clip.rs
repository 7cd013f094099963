//! The bundled character's `Walk` clip (made by `examples/make_character.rs`), loaded through
//! Bevy's asset server and glTF loader and played by Bevy's `AnimationPlayer` in a headless app
//! (no window, no render device), with an `IkGrounding` stage casting against meshes:
//!
//! * the file carries the clip and it loads (a looping 1.2 s clip with a channel per moving
//!   bone, next to `Idle`);
//! * played in place on flat ground, its planted feet move back under the hips at the speed it
//!   is authored for (0.9 m/s), measured on the feet;
//! * the character then walks (its root carried forward at that speed and lifted to the mean
//!   ground height under it, as a character controller does) up a stair of five 10 cm steps:
//!   with grounding on, each flat-planted foot's ankle stands at its animated height above the
//!   step under it; with grounding off (the in-place clip alone) it does not.
//!
//! Measured on the bones' `GlobalTransform`s after propagation (what a renderer draws).

// Bevy with `gltf_animation` (the glTF loader reads clips) comes from the root package's
// dev-dependencies: no render crate, no `demo` feature needed.

use std::time::{Duration, Instant};

use bevy::animation::AnimationPlugin;
use bevy::asset::{AssetPlugin, LoadState};
use bevy::camera::primitives::MeshAabb;
use bevy::gltf::{Gltf, GltfAssetLabel, GltfPlugin};
use bevy::image::{CompressedImageFormatSupport, CompressedImageFormats};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy::world_serialization::{WorldAssetRoot, WorldSerializationPlugin};
use bevy_ik::ik_core::grounding::GroundingStage;
use bevy_ik::prelude::*;

/// The workspace's `assets/`.
const ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets");
/// Frames per second of the fixed time step.
const FPS: f32 = 60.0;

fn app() -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        TransformPlugin,
        AssetPlugin {
            file_path: ASSETS.into(),
            ..default()
        },
        WorldSerializationPlugin,
        GltfPlugin::default(),
        AnimationPlugin,
        IkPlugin::default(),
    ));
    app.init_asset::<Mesh>()
        .init_asset::<Image>()
        .init_asset::<bevy::mesh::skinning::SkinnedMeshInverseBindposes>()
        .insert_resource(CompressedImageFormatSupport(CompressedImageFormats::NONE))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
            1.0 / FPS,
        )));
    app.finish();
    app.cleanup();
    app
}

/// Runs frames until `done` or 120 s pass.
fn wait(app: &mut App, what: &str, mut done: impl FnMut(&mut App) -> bool) {
    let start = Instant::now();
    while !done(app) {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{what}: not done after 120 s"
        );
        app.update();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Loads `character.glb` and returns its `Walk` clip.
fn walk_clip(app: &mut App) -> Handle<AnimationClip> {
    let gltf: Handle<Gltf> = app.world().resource::<AssetServer>().load("character.glb");
    wait(app, "character.glb", |app| {
        let server = app.world().resource::<AssetServer>();
        if let LoadState::Failed(e) = server.load_state(&gltf) {
            panic!("character.glb: {e}");
        }
        server.is_loaded_with_dependencies(&gltf)
    });
    let gltfs = app.world().resource::<Assets<Gltf>>();
    let file = gltfs.get(&gltf).expect("loaded");
    let names: Vec<&str> = file.named_animations.keys().map(|k| &**k).collect();
    assert!(names.contains(&"Idle"), "clips: {names:?}");
    file.named_animations
        .get("Walk")
        .unwrap_or_else(|| panic!("no Walk clip: {names:?}"))
        .clone()
}

#[test]
fn the_bundled_character_carries_a_walk_clip_that_loads() {
    let mut app = app();
    let clip = walk_clip(&mut app);
    let clips = app.world().resource::<Assets<AnimationClip>>();
    let clip = clips.get(&clip).expect("the clip is loaded");
    assert!(
        (clip.duration() - 1.2).abs() < 1e-3,
        "a 1.2 s cycle, not {} s",
        clip.duration()
    );
    // Hips (rotation + translation), spine, neck, head, legs with toes, arms and two fingers.
    assert!(
        clip.curves().len() >= 24,
        "{} animated bones",
        clip.curves().len()
    );
}

/// The bundled character's leg bones, by their names in the file.
const FEET: [&str; 4] = [
    "mixamorig:LeftFoot",
    "mixamorig:LeftToeBase",
    "mixamorig:RightFoot",
    "mixamorig:RightToeBase",
];

/// Spawns the character with the walk clip playing; returns its root, its foot and toe bones
/// (`FEET` order) and where they were in the rest pose, before the clip played.
fn spawn_walker(
    app: &mut App,
    clip: Handle<AnimationClip>,
    grounding: bool,
) -> (Entity, [Entity; 4], [Vec3; 4]) {
    let scene: Handle<WorldAsset> = app
        .world()
        .resource::<AssetServer>()
        .load(GltfAssetLabel::Scene(0).from_asset("character.glb"));
    let mut root = app
        .world_mut()
        .spawn((WorldAssetRoot(scene), Transform::default()));
    if grounding {
        root.insert(IkGrounding::humanoid());
    }
    let root = root.id();
    let mut player = None;
    wait(app, "the scene", |app| {
        let mut q = app
            .world_mut()
            .query_filtered::<Entity, With<AnimationPlayer>>();
        player = q.iter(app.world()).next();
        player.is_some()
    });
    let player = player.expect("found");
    app.update();
    let mut q = app.world_mut().query::<(Entity, &Name)>();
    let bones = FEET.map(|name| {
        q.iter(app.world())
            .find(|(_, n)| n.as_str() == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .0
    });
    let rest = bones.map(|b| pos(app, b));
    let (graph, node) = AnimationGraph::from_clip(clip);
    let graph = app
        .world_mut()
        .resource_mut::<Assets<AnimationGraph>>()
        .add(graph);
    app.world_mut()
        .entity_mut(player)
        .insert(AnimationGraphHandle(graph));
    app.world_mut()
        .get_mut::<AnimationPlayer>(player)
        .expect("a player")
        .play(node)
        .repeat();
    (root, bones, rest)
}

fn pos(app: &App, e: Entity) -> Vec3 {
    app.world()
        .get::<GlobalTransform>(e)
        .expect("a transform")
        .translation()
}

/// The stair: floor at 0 before z = 1 m, then five 10 cm steps with 60 cm treads.
fn stair_height(z: f32) -> f32 {
    0.1 * ((z - 1.0) / 0.6 + 1.0).floor().clamp(0.0, 5.0)
}

fn spawn_stair(app: &mut App) {
    let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
    let floor = Plane3d::default().mesh().size(4.0, 12.0).build();
    let pieces: Vec<(Mesh, Transform)> =
        std::iter::once((floor, Transform::from_xyz(0.0, 0.0, 3.0)))
            .chain((1..=5).map(|k| {
                let (z0, top) = (1.0 + 0.6 * (k - 1) as f32, 0.1 * k as f32);
                (
                    Cuboid::new(1.5, top, 8.0 - z0).mesh().build(),
                    Transform::from_xyz(0.0, top / 2.0, (z0 + 8.0) / 2.0),
                )
            }))
            .collect();
    let pieces: Vec<_> = pieces
        .into_iter()
        .map(|(mesh, at)| {
            let aabb = mesh.compute_aabb().expect("positions");
            (meshes.add(mesh), aabb, at)
        })
        .collect();
    for (mesh, aabb, at) in pieces {
        app.world_mut().spawn((Mesh3d(mesh), aabb, at, IkGround));
    }
}

/// Plays the clip for `frames` frames with the root carried at `speed` along +Z over `ground`
/// (lifted to the mean ground height over ±30 cm); returns the rest positions of the foot and
/// toe joints and their positions at each frame.
/// Also returns each frame's height blend left on each foot (the grounding stage blending
/// across a step under it; 0 without grounding).
fn walk(
    grounding: bool,
    stair: bool,
    speed: f32,
    frames: usize,
) -> ([Vec3; 4], Vec<[Vec3; 4]>, Vec<[f32; 2]>) {
    let mut app = app();
    let clip = walk_clip(&mut app);
    if stair {
        spawn_stair(&mut app);
    }
    let ground = |z: f32| if stair { stair_height(z) } else { 0.0 };
    let (root, bones, rest) = spawn_walker(&mut app, clip, grounding);
    let mut out = Vec::with_capacity(frames);
    let mut blends = Vec::with_capacity(frames);
    for f in 0..frames {
        let z = speed * f as f32 / FPS;
        let lift = (-6..=6).map(|i| ground(z + i as f32 * 0.05)).sum::<f32>() / 13.0;
        app.world_mut()
            .get_mut::<Transform>(root)
            .expect("root")
            .translation = Vec3::new(0.0, lift, z);
        app.update();
        out.push(bones.map(|b| pos(&app, b)));
        let stage = app
            .world()
            .get::<IkCharacter>(root)
            .and_then(|c| c.custom_stage::<GroundingStage>(root));
        blends.push(stage.map_or([0.0; 2], |g| {
            let feet = &g.output().feet;
            [0, 1].map(|i| feet.get(i).map_or(0.0, |f| f.blend))
        }));
    }
    (rest, out, blends)
}

#[test]
fn walking_up_a_stair_the_planted_feet_stand_on_it_with_grounding_and_not_without() {
    let frames = 300;
    // In place on flat ground: the speed the planted feet move back, and the frames where a
    // foot is planted flat (ankle and toe joint at their lowest).
    let (rest, flat, _) = walk(false, false, 0.0, frames);
    let settle = 10;
    let mut speeds: Vec<f32> = flat[settle..]
        .windows(2)
        .map(|w| -(w[1][0].z - w[0][0].z).min(w[1][2].z - w[0][2].z) * FPS)
        .collect();
    speeds.sort_by(f32::total_cmp);
    let speed = speeds[speeds.len() / 2];
    assert!(
        (speed - 0.9).abs() < 0.02,
        "the clip walks at {speed} m/s, authored for 0.9"
    );
    // Planted flat: the ankle and toe joints at their rest heights (the heel strike and the
    // push-off pivot the foot about the heel and the ball).
    let planted = |f: usize, foot: usize| {
        f >= settle && (0..2).all(|j| (flat[f][2 * foot + j].y - rest[2 * foot + j].y).abs() < 1e-3)
    };
    // Up the stair, with and without grounding: the planted ankle's height above the step
    // under the foot, against its height in place on flat ground (feet across a step's edge
    // are left out: they rest on the ball or the heel by design).
    let mut worst = [0.0_f32; 2];
    let mut counted = [0usize; 2];
    let mut slide = 0.0_f32;
    let mut blending = 0.0_f32;
    for (k, grounding) in [true, false].into_iter().enumerate() {
        let (_, poses, blends) = walk(grounding, true, speed, frames);
        for (f, p) in poses.iter().enumerate() {
            for foot in 0..2 {
                let (ankle, toe) = (p[2 * foot], p[2 * foot + 1]);
                let under = stair_height(ankle.z);
                let across_edge =
                    stair_height(ankle.z - 0.12) != under || stair_height(toe.z + 0.12) != under;
                if !planted(f, foot) || across_edge || under == 0.0 {
                    continue;
                }
                // Still blending across the step it landed on (bounded: at most the step,
                // measured apart).
                if blends[f][foot].abs() > 1e-3 {
                    blending = blending.max(blends[f][foot].abs());
                    continue;
                }
                counted[k] += 1;
                if grounding && planted(f - 1, foot) {
                    // Sliding: how far the planted ankle moved along the ground in a frame.
                    let d = ankle - poses[f - 1][2 * foot];
                    slide = slide.max(Vec2::new(d.x, d.z).length());
                }
                let error = (ankle.y - under) - flat[f][2 * foot].y;
                assert!(ankle.is_finite(), "frame {f}: {ankle}");
                worst[k] = worst[k].max(error.abs());
            }
        }
    }
    println!(
        "walk clip at {speed:.3} m/s up five 10 cm steps: planted ankle off its height above the step, worst {:.2} mm with grounding ({} foot-frames; sliding ≤ {:.2} mm a frame; blending across a step, left out: ≤ {:.1} mm), {:.1} mm without ({})",
        worst[0] * 1e3,
        counted[0],
        slide * 1e3,
        blending * 1e3,
        worst[1] * 1e3,
        counted[1]
    );
    assert!(counted[0] > 30 && counted[1] > 30, "{counted:?}");
    assert!(worst[0] < 2e-3, "with grounding: {} mm", worst[0] * 1e3);
    assert!(
        blending <= 0.1 + 1e-4,
        "a blend beyond the step: {blending}"
    );
    assert!(
        slide < 1e-3,
        "planted feet slide {} mm a frame",
        slide * 1e3
    );
    assert!(
        worst[1] > 0.03,
        "without grounding: only {} mm",
        worst[1] * 1e3
    );
}
