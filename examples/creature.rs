//! A procedural quadruped (made in code by `examples/creature/rig.rs`: no file, bones with
//! no common axis) walking a circle over bumpy terrain: its four legs are grounded with
//! `IkGrounding` (Bevy mesh ray casts against the `IkGround` terrain), its head follows a
//! floating ball with `IkAim`, its tail is an `IkSpringChain`.
//!
//! `cargo run --example creature --features demo` (`--screenshot PATH [--after SECONDS]`
//! saves a frame and quits)

#[path = "creature/body.rs"]
mod body;
#[path = "creature/rig.rs"]
mod rig;
#[path = "support/screenshot.rs"]
mod screenshot;

use bevy::mesh::VertexAttributeValues;
use bevy::prelude::*;
use bevy_ik::prelude::*;

/// Radius of the circle the creature walks, metres.
const WALK_RADIUS: f32 = 2.5;
/// Walking speed, metres per second.
const WALK_SPEED: f32 = 0.7;

fn main() {
    App::new()
        .add_plugins((DefaultPlugins, IkPlugin::default()))
        .add_plugins(screenshot::ScreenshotOption)
        .add_systems(Startup, setup)
        .add_systems(Update, (walk, float_ball))
        .run();
}

#[derive(Component)]
struct Creature;

#[derive(Component)]
struct Ball;

/// The terrain's height at `(x, z)`: gentle bumps of up to about 13 cm.
fn terrain_height(x: f32, z: f32) -> f32 {
    0.08 * (0.9 * x).sin() * (0.7 * z).cos() + 0.05 * (1.7 * x + 0.4).sin()
}

fn setup(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        Camera3d::default(),
        Transform::from_xyz(0.0, 3.2, 6.5).looking_at(Vec3::new(0.0, 0.3, 0.0), Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight {
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(3.0, 6.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    // Terrain: a subdivided plane displaced by `terrain_height`, marked as ground.
    let mut terrain = Plane3d::default()
        .mesh()
        .size(12.0, 12.0)
        .subdivisions(60)
        .build();
    if let Some(VertexAttributeValues::Float32x3(positions)) =
        terrain.attribute_mut(Mesh::ATTRIBUTE_POSITION)
    {
        for p in positions.iter_mut() {
            p[1] = terrain_height(p[0], p[2]);
        }
    }
    terrain.compute_normals();
    commands.spawn((
        Mesh3d(meshes.add(terrain)),
        MeshMaterial3d(materials.add(Color::srgb(0.42, 0.5, 0.36))),
        IkGround,
    ));
    let ball = commands
        .spawn((
            Mesh3d(meshes.add(Sphere::new(0.08))),
            MeshMaterial3d(materials.add(StandardMaterial {
                emissive: LinearRgba::rgb(4.0, 2.0, 0.5),
                ..default()
            })),
            Transform::from_xyz(0.0, 1.2, 0.0),
            Ball,
        ))
        .id();
    let root = commands
        .spawn((
            Transform::from_xyz(WALK_RADIUS, 0.0, 0.0),
            Visibility::default(),
            Creature,
        ))
        .id();
    let bones = rig::spawn_skeleton(&mut commands, root);
    rig::spawn_stages(&mut commands, root, &bones, Some(ball));
    body::spawn_body(&mut commands, &mut meshes, &mut materials, &bones);
}

/// Around the circle, facing the way it walks; the root stays at height 0 (no character
/// controller): the grounding raises and lowers the pelvis and legs over the bumps.
fn walk(time: Res<Time>, mut q: Query<&mut Transform, With<Creature>>) {
    let angle = time.elapsed_secs() * WALK_SPEED / WALK_RADIUS;
    for mut t in &mut q {
        t.translation = Vec3::new(angle.cos(), 0.0, angle.sin()) * WALK_RADIUS;
        let heading = Vec3::new(-angle.sin(), 0.0, angle.cos());
        // A turn about +Y (a half-turn arc from +Z could roll the creature over).
        t.rotation = Quat::from_rotation_y(heading.x.atan2(heading.z));
    }
}

/// The ball the head follows: a slow figure eight above the terrain.
fn float_ball(time: Res<Time>, mut q: Query<&mut Transform, With<Ball>>) {
    let t = time.elapsed_secs() * 0.6;
    for mut b in &mut q {
        b.translation = Vec3::new(
            1.8 * t.sin(),
            1.0 + 0.3 * (2.0 * t).sin(),
            1.8 * (t * 0.5).cos(),
        );
    }
}
