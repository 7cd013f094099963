//! Shared helpers for the headless plugin tests: an `App` with `MinimalPlugins`,
//! `TransformPlugin` and `IkPlugin`, and an arm hierarchy with non-trivial rest rotations.

#![allow(dead_code, reason = "each test file uses a subset")]

use bevy::prelude::*;
use bevy_ik::prelude::*;

/// A headless app with the IK plugin.
pub fn app() -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin, IkPlugin::default()));
    app
}

/// The entities of one test arm.
#[derive(Clone, Copy, Debug)]
pub struct Arm {
    pub character: Entity,
    pub shoulder: Entity,
    pub upper: Entity,
    pub lower: Entity,
    pub hand: Entity,
}

/// Rest local transforms of the arm's bones (none along +Y, all rotated).
pub fn rest_upper() -> Transform {
    Transform::from_xyz(0.1, 0.05, 0.02).with_rotation(Quat::from_euler(
        EulerRot::XYZ,
        0.5,
        0.1,
        -1.0,
    ))
}
pub fn rest_lower() -> Transform {
    Transform::from_xyz(0.05, 0.28, -0.1).with_rotation(Quat::from_euler(
        EulerRot::XYZ,
        -0.3,
        0.6,
        0.2,
    ))
}
pub fn rest_hand() -> Transform {
    Transform::from_xyz(0.25, 0.02, 0.05).with_rotation(Quat::from_euler(
        EulerRot::YXZ,
        0.4,
        -0.2,
        0.9,
    ))
}

/// Spawns a character root at `root` with shoulder → upper → lower → hand, named
/// `shoulder`, `upper`, `lower`, `hand`.
pub fn spawn_arm(world: &mut World, root: Transform) -> Arm {
    let character = world.spawn((Name::new("character"), root)).id();
    let shoulder = world
        .spawn((
            Name::new("shoulder"),
            Transform::from_xyz(0.2, 1.4, 0.0).with_rotation(Quat::from_euler(
                EulerRot::XYZ,
                0.3,
                -0.4,
                0.2,
            )),
            ChildOf(character),
        ))
        .id();
    let upper = world
        .spawn((Name::new("upper"), rest_upper(), ChildOf(shoulder)))
        .id();
    let lower = world
        .spawn((Name::new("lower"), rest_lower(), ChildOf(upper)))
        .id();
    let hand = world
        .spawn((Name::new("hand"), rest_hand(), ChildOf(lower)))
        .id();
    Arm {
        character,
        shoulder,
        upper,
        lower,
        hand,
    }
}

/// The current world position of an entity (after the last propagation).
pub fn world_pos(app: &App, e: Entity) -> Vec3 {
    app.world().get::<GlobalTransform>(e).unwrap().translation()
}

/// A reachable target for `arm`: from the upper bone's joint toward `dir` at `fraction` of
/// the arm's rest reach. Needs one `app.update()` beforehand so `GlobalTransform`s exist.
pub fn reachable_point(app: &App, arm: &Arm, dir: Vec3, fraction: f32) -> Vec3 {
    let u = world_pos(app, arm.upper);
    let l = world_pos(app, arm.lower);
    let h = world_pos(app, arm.hand);
    let reach = u.distance(l) + l.distance(h);
    u + dir.normalize() * reach * fraction
}

pub fn status(app: &App, e: Entity) -> IkStatus {
    app.world().get::<IkStatus>(e).unwrap().clone()
}
