//! Creature mode (`--creature`): the procedural quadruped of `examples/creature.rs` (made in
//! code: 28 bones, no common local axis, no naming convention) walks a circle beside the
//! character over the terrain mode's ground (its floor, stair and ramp, marked `IkGround`), its
//! four legs grounded with `IkGrounding`, its head aimed at a floating ball with `IkAim`, its
//! tail an `IkSpringChain`. It turns the terrain on, since the legs need ground to stand on.

use bevy::prelude::*;

use crate::body;
use crate::character::BodyFrame;
use crate::rig;

/// Radius of the creature's walk, in the character's body units (the bundled character's
/// size is 1).
const WALK_RADIUS: f32 = 0.7;
/// Walking speed, body units per second.
const WALK_SPEED: f32 = 0.35;
/// Centre of the walk: this far to the character's left, body units (the terrain's floor
/// reaches 4 units each way).
const WALK_LEFT: f32 = 1.6;
/// Centre of the walk: this far in front of the character, body units.
const WALK_FORWARD: f32 = 0.6;

/// Adds the creature once the character's frame is known.
pub struct CreatureDemoPlugin;

impl Plugin for CreatureDemoPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, (spawn_creature, walk_creature, float_ball).chain());
    }
}

/// The creature's root; the walk's centre and size come from the character's frame.
#[derive(Component)]
struct Creature {
    center: Vec3,
    radius: f32,
    /// The character's up and forward, the walk's plane.
    up: Vec3,
    forward: Vec3,
    scale: f32,
}

/// The ball the creature's head follows.
#[derive(Component)]
struct CreatureBall {
    center: Vec3,
    scale: f32,
    up: Vec3,
    left: Vec3,
}

fn spawn_creature(
    mut commands: Commands,
    frame: Option<Res<BodyFrame>>,
    existing: Query<(), With<Creature>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let Some(frame) = frame else { return };
    if !existing.is_empty() {
        return;
    }
    let s = frame.scale;
    let center = frame.origin + (frame.left * WALK_LEFT + frame.forward * WALK_FORWARD) * s;
    let ball = commands
        .spawn((
            Name::new("creature ball"),
            Mesh3d(meshes.add(Sphere::new(0.05 * s))),
            MeshMaterial3d(materials.add(StandardMaterial {
                emissive: LinearRgba::rgb(4.0, 2.0, 0.5),
                ..default()
            })),
            Transform::from_translation(center + frame.up * s),
            CreatureBall {
                center,
                scale: s,
                up: frame.up,
                left: frame.left,
            },
        ))
        .id();
    let root = commands
        .spawn((
            Name::new("creature"),
            Transform::from_translation(center).with_scale(Vec3::splat(s)),
            Visibility::default(),
            Creature {
                center,
                radius: WALK_RADIUS * s,
                up: frame.up,
                forward: frame.forward,
                scale: s,
            },
        ))
        .id();
    let bones = rig::spawn_skeleton(&mut commands, root);
    rig::spawn_stages(&mut commands, root, &bones, Some(ball));
    body::spawn_body(&mut commands, &mut meshes, &mut materials, &bones);
}

/// Around the circle, facing the way it walks; the root stays on the floor's plane (no
/// character controller): the grounding raises and lowers the pelvis and legs over the stair
/// and the ramp.
fn walk_creature(time: Res<Time>, mut q: Query<(&Creature, &mut Transform)>) {
    for (c, mut t) in &mut q {
        let angle = time.elapsed_secs() * WALK_SPEED * c.scale / c.radius.max(f32::EPSILON);
        let side = c.up.cross(c.forward);
        let radial = c.forward * angle.cos() + side * angle.sin();
        let heading = -c.forward * angle.sin() + side * angle.cos();
        t.translation = c.center + radial * c.radius;
        // The creature faces +Z with +Y up: turn it about the character's up (never through
        // a half-turn arc, which could roll it over).
        t.rotation = Quat::from_mat3(&Mat3::from_cols(c.up.cross(heading), c.up, heading));
    }
}

/// The ball: a slow figure eight above the walk's centre.
fn float_ball(time: Res<Time>, mut q: Query<(&CreatureBall, &mut Transform)>) {
    let t = time.elapsed_secs() * 0.6;
    for (b, mut at) in &mut q {
        let forward = b.left.cross(b.up);
        at.translation = b.center
            + (b.left * 0.9 * t.sin()
                + b.up * (0.9 + 0.2 * (2.0 * t).sin())
                + forward * 0.9 * (0.5 * t).cos())
                * b.scale;
    }
}
