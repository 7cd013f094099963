//! The first scene a new user writes (issue 26): a character grounded on a step and a ramp,
//! looking at a moving ball while its right hand holds a cup it reached for by role, and a
//! second character (the VRM test avatar) as a VR body. The scene itself is
//! [`scene::FirstScenePlugin`] (shared with the headless test
//! `crates/bevy_ik/tests/integration/first_scene.rs`); this file adds the window, the camera,
//! the light and something to see for the ball, the cup and the ground.
//!
//! `cargo run --example first_scene --features demo` (`--free` lets the look-at carry the hand
//! off the cup: the arm's `IkStatus` then says so, printed once a second).

mod scene;

use bevy::prelude::*;
use bevy_ik::prelude::*;
use scene::{FirstScene, FirstScenePlugin};

fn main() {
    let keep_hand_on_cup = !std::env::args().any(|a| a == "--free");
    App::new()
        .add_plugins((DefaultPlugins, IkPlugin::default()))
        .insert_resource(FirstScene {
            keep_hand_on_cup,
            ..FirstScene::default()
        })
        .add_plugins(FirstScenePlugin)
        .add_systems(Startup, spawn_view)
        .add_systems(Update, (dress_props, print_arm_status))
        .run();
}

fn spawn_view(mut commands: Commands) {
    commands.spawn((
        Camera3d::default(),
        Transform::from_xyz(0.9, 1.5, 3.2).looking_at(Vec3::new(0.6, 0.9, 0.0), Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight {
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

/// Materials for the ground meshes the scene spawned, and spheres for the ball and the cup.
fn dress_props(
    mut commands: Commands,
    scene: Res<FirstScene>,
    ground: Query<Entity, (With<IkGround>, Without<MeshMaterial3d<StandardMaterial>>)>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut dressed: Local<bool>,
) {
    for e in &ground {
        commands
            .entity(e)
            .insert(MeshMaterial3d(materials.add(Color::srgb(0.55, 0.55, 0.5))));
    }
    let (Some(ball), Some(cup), false) = (scene.ball, scene.cup, *dressed) else {
        return;
    };
    let sphere = meshes.add(Sphere::new(0.04));
    commands.entity(ball).insert((
        Mesh3d(sphere.clone()),
        MeshMaterial3d(materials.add(Color::srgb(0.9, 0.3, 0.2))),
    ));
    commands.entity(cup).insert((
        Mesh3d(meshes.add(Cylinder::new(0.035, 0.09))),
        MeshMaterial3d(materials.add(Color::srgb(0.2, 0.5, 0.9))),
    ));
    *dressed = true;
}

/// The right arm's status once a second: the hand on the cup, or how far the look-at moved it.
fn print_arm_status(
    scene: Res<FirstScene>,
    statuses: Query<&IkStatus>,
    time: Res<Time>,
    mut next: Local<f32>,
) {
    let Some(status) = scene.right_arm.and_then(|e| statuses.get(e).ok()) else {
        return;
    };
    if time.elapsed_secs() < *next {
        return;
    }
    *next = time.elapsed_secs() + 1.0;
    info!(
        "right arm: own residual {:.2} mm, on the final pose {:.2} mm, moved by a later stage: {}",
        status.position_residual * 1e3,
        status.final_position_residual * 1e3,
        status.goals_moved
    );
}
