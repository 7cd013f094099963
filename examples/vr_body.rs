//! A VR body from three trackers: [`IkVrBody`] on a glTF character, driven by three tracker
//! entities (head, left hand, right hand) — in a game, your VR crate's headset and controller
//! entities. Here they follow a scripted 60 s recording (the one the ik-core tests measure:
//! walk forward, turn 90° on the spot, walk, side-step, turn back, crouch and reach low,
//! reach high, reach forward, walk backward, look around), drawn as gizmo spheres; the body
//! leans, crouches, reaches and steps after them.
//!
//! ```text
//! cargo run --features demo --example vr_body [-- --character FILE.glb]
//!     [--screenshot PATH [--at SECONDS]]
//! ```
//!
//! `--screenshot` advances the script at a fixed 1/60 s per frame, saves a PNG when the script
//! reaches `--at` seconds (default 38: crouched, reaching low) and exits.

use std::path::PathBuf;
use std::time::Duration;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::time::TimeUpdateStrategy;
use bevy_ik::ik_core::humanoid::HumanoidMap;
use bevy_ik::ik_core::vr::VrBody;
use bevy_ik::prelude::*;

#[path = "../crates/ik-core/tests/support/vr_recording.rs"]
#[allow(unused_imports, reason = "shared with the ik-core tests")]
mod vr_recording;

/// Command line.
#[derive(Resource, Clone)]
struct Options {
    character: String,
    screenshot: Option<PathBuf>,
    at: f32,
}

/// The tracker entities (children of the character root: their transforms are model space).
#[derive(Resource)]
struct Trackers([Entity; 3]);

/// The script: a `VrBody` used only to map the recording's player-space trackers onto this
/// avatar (`VrBody::targets`), and the recording.
#[derive(Resource)]
struct Script {
    mapper: VrBody,
    frames: Vec<vr_recording::RecFrame>,
    time: f32,
}

#[derive(Component)]
struct Avatar;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        character: "character.glb".into(),
        screenshot: None,
        at: 38.0,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--character" => options.character = args.next().unwrap_or_default(),
            "--screenshot" => options.screenshot = args.next().map(PathBuf::from),
            "--at" => options.at = args.next().and_then(|v| v.parse().ok()).unwrap_or(38.0),
            other => options.character = other.to_owned(),
        }
    }
    let mut app = App::new();
    app.add_plugins(DefaultPlugins.set(WindowPlugin {
        primary_window: Some(Window {
            title: "bevy_ik: VR body".into(),
            resolution: (1280, 720).into(),
            ..default()
        }),
        ..default()
    }))
    .add_plugins(IkPlugin::default())
    .insert_resource(options.clone())
    .add_systems(Startup, set_up)
    .add_systems(
        Update,
        (start_script, drive_trackers, follow_camera, draw).chain(),
    );
    if options.screenshot.is_some() {
        app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
            1.0 / 60.0,
        )))
        .add_systems(Update, take_screenshot.after(drive_trackers));
    }
    app.run();
}

fn set_up(mut commands: Commands, assets: Res<AssetServer>, options: Res<Options>) {
    commands.spawn((
        Camera3d::default(),
        Transform::from_xyz(0.0, 1.6, 4.0).looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 8000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(3.0, 6.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let character = commands
        .spawn((
            Name::new("avatar"),
            Avatar,
            Transform::default(),
            WorldAssetRoot(
                assets.load(GltfAssetLabel::Scene(0).from_asset(options.character.clone())),
            ),
        ))
        .id();
    // Three trackers; in a game these are the VR crate's headset and controller entities.
    let trackers = ["head", "left hand", "right hand"].map(|name| {
        commands
            .spawn((Name::new(name), Transform::default(), ChildOf(character)))
            .id()
    });
    commands
        .entity(character)
        .insert(IkVrBody::new(trackers[0], trackers[1], trackers[2]));
    commands.insert_resource(Trackers(trackers));
}

/// Once the character is set up, builds the script on its skeleton.
fn start_script(
    mut commands: Commands,
    script: Option<Res<Script>>,
    avatars: Query<&IkCharacter, With<Avatar>>,
) {
    if script.is_some() {
        return;
    }
    let Some(stack) = avatars.iter().find_map(IkCharacter::stack) else {
        return;
    };
    let skeleton = stack.skeleton();
    let (map, _) = HumanoidMap::from_skeleton(skeleton);
    let Ok(mut mapper) = VrBody::new(skeleton, &map) else {
        error!("the character does not map to a humanoid");
        return;
    };
    mapper.calibration = vr_recording::calibration(&mapper);
    let frames = vr_recording::recording(&mapper, skeleton, &map);
    commands.insert_resource(Script {
        mapper,
        frames,
        time: 0.0,
    });
}

/// Moves the tracker entities along the script (model space = the character root's frame).
fn drive_trackers(
    time: Res<Time>,
    script: Option<ResMut<Script>>,
    trackers: Res<Trackers>,
    mut transforms: Query<&mut Transform>,
) {
    let Some(mut script) = script else {
        return;
    };
    script.time += time.delta_secs();
    let i = ((script.time * vr_recording::FPS) as usize) % script.frames.len();
    script.mapper.trackers = script.frames[i].trackers;
    for (e, t) in trackers.0.iter().zip(script.mapper.targets()) {
        if let Ok(mut transform) = transforms.get_mut(*e) {
            *transform = Transform::from_translation(t.position).with_rotation(t.rotation);
        }
    }
}

fn follow_camera(
    trackers: Res<Trackers>,
    globals: Query<&GlobalTransform>,
    mut camera: Query<&mut Transform, With<Camera3d>>,
) {
    let (Ok(head), Ok(mut cam)) = (globals.get(trackers.0[0]), camera.single_mut()) else {
        return;
    };
    let focus = head.translation() * Vec3::new(1.0, 0.0, 1.0) + Vec3::Y * 0.9;
    let want = focus + Vec3::new(2.2, 0.8, 2.6);
    cam.translation = cam.translation.lerp(want, 0.1);
    cam.look_at(focus, Vec3::Y);
}

fn draw(trackers: Res<Trackers>, globals: Query<&GlobalTransform>, mut gizmos: Gizmos) {
    let colors = [
        Color::srgb(1.0, 0.8, 0.2),
        Color::srgb(0.2, 0.6, 1.0),
        Color::srgb(1.0, 0.3, 0.3),
    ];
    for (e, c) in trackers.0.iter().zip(colors) {
        if let Ok(g) = globals.get(*e) {
            gizmos.sphere(Isometry3d::from_translation(g.translation()), 0.05, c);
        }
    }
    gizmos.grid(
        Isometry3d::from_rotation(Quat::from_rotation_x(core::f32::consts::FRAC_PI_2)),
        UVec2::splat(20),
        Vec2::splat(0.5),
        Color::srgb(0.35, 0.35, 0.4),
    );
}

fn take_screenshot(
    mut commands: Commands,
    options: Res<Options>,
    script: Option<Res<Script>>,
    mut state: Local<u32>,
    mut exit: MessageWriter<AppExit>,
) {
    let (Some(script), Some(path)) = (script, options.screenshot.clone()) else {
        return;
    };
    if script.time < options.at {
        return;
    }
    *state += 1;
    if *state == 1 {
        commands.spawn(Screenshot::primary_window()).observe(
            move |captured: On<ScreenshotCaptured>| {
                let saved = captured
                    .image
                    .clone()
                    .try_into_dynamic()
                    .map_err(|e| e.to_string())
                    .and_then(|d| d.to_rgb8().save(&path).map_err(|e| e.to_string()));
                match saved {
                    Ok(()) => println!("vr_body: screenshot saved to {}", path.display()),
                    Err(e) => eprintln!("vr_body: {e}"),
                }
            },
        );
    } else if *state > 10 {
        exit.write(AppExit::Success);
    }
}
