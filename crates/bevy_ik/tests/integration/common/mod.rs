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

/// (parent index, T-pose model position) of: hips, spine, chest, neck, head,
/// L shoulder, L upper arm, L lower arm, L hand, R shoulder, R upper arm, R lower arm, R hand,
/// L upper leg, L lower leg, L foot, L toes, R upper leg, R lower leg, R foot, R toes.
pub const POSITIONS: [(Option<usize>, [f32; 3]); 21] = [
    (None, [0.0, 1.0, 0.0]),
    (Some(0), [0.0, 1.1, -0.01]),
    (Some(1), [0.0, 1.3, -0.02]),
    (Some(2), [0.0, 1.5, 0.0]),
    (Some(3), [0.0, 1.6, 0.02]),
    (Some(2), [0.05, 1.45, 0.02]),
    (Some(5), [0.17, 1.45, -0.01]),
    (Some(6), [0.45, 1.44, -0.04]),
    (Some(7), [0.71, 1.44, 0.0]),
    (Some(2), [-0.05, 1.45, 0.02]),
    (Some(9), [-0.17, 1.45, -0.01]),
    (Some(10), [-0.45, 1.44, -0.04]),
    (Some(11), [-0.71, 1.44, 0.0]),
    (Some(0), [0.09, 0.95, 0.0]),
    (Some(13), [0.09, 0.52, 0.02]),
    (Some(14), [0.09, 0.08, -0.02]),
    (Some(15), [0.09, 0.0, 0.12]),
    (Some(0), [-0.09, 0.95, 0.0]),
    (Some(17), [-0.09, 0.52, 0.02]),
    (Some(18), [-0.09, 0.08, -0.02]),
    (Some(19), [-0.09, 0.0, 0.12]),
];

/// A rotation that differs per bone, so local axes point every which way.
pub fn model_rotation(i: usize) -> Quat {
    let f = i as f32;
    Quat::from_euler(EulerRot::XYZ, 0.3 * f, -0.7 + 0.2 * f, 1.1 - 0.15 * f)
}

/// Spawns the humanoid under `character`; returns the bone entities in `POSITIONS` order.
pub fn spawn_humanoid(world: &mut World, character: Entity, names: &[&str; 21]) -> Vec<Entity> {
    let mut out: Vec<Entity> = Vec::new();
    for (i, &(parent, p)) in POSITIONS.iter().enumerate() {
        let (pos, rot) = (Vec3::from(p), model_rotation(i));
        let (parent_pos, parent_rot, parent_entity) = match parent {
            Some(j) => (Vec3::from(POSITIONS[j].1), model_rotation(j), out[j]),
            None => (Vec3::ZERO, Quat::IDENTITY, character),
        };
        let local = Transform::from_translation(parent_rot.inverse() * (pos - parent_pos))
            .with_rotation(parent_rot.inverse() * rot);
        out.push(
            world
                .spawn((
                    Name::new(names[i].to_owned()),
                    local,
                    ChildOf(parent_entity),
                ))
                .id(),
        );
    }
    out
}

/// Mixamo names, in `POSITIONS` order.
pub const MIXAMO_NAMES: [&str; 21] = [
    "mixamorig:Hips",
    "mixamorig:Spine",
    "mixamorig:Spine1",
    "mixamorig:Neck",
    "mixamorig:Head",
    "mixamorig:LeftShoulder",
    "mixamorig:LeftArm",
    "mixamorig:LeftForeArm",
    "mixamorig:LeftHand",
    "mixamorig:RightShoulder",
    "mixamorig:RightArm",
    "mixamorig:RightForeArm",
    "mixamorig:RightHand",
    "mixamorig:LeftUpLeg",
    "mixamorig:LeftLeg",
    "mixamorig:LeftFoot",
    "mixamorig:LeftToeBase",
    "mixamorig:RightUpLeg",
    "mixamorig:RightLeg",
    "mixamorig:RightFoot",
    "mixamorig:RightToeBase",
];

/// VRM humanoid names, in `POSITIONS` order.
pub const VRM_NAMES: [&str; 21] = [
    "hips",
    "spine",
    "chest",
    "neck",
    "head",
    "leftShoulder",
    "leftUpperArm",
    "leftLowerArm",
    "leftHand",
    "rightShoulder",
    "rightUpperArm",
    "rightLowerArm",
    "rightHand",
    "leftUpperLeg",
    "leftLowerLeg",
    "leftFoot",
    "leftToes",
    "rightUpperLeg",
    "rightLowerLeg",
    "rightFoot",
    "rightToes",
];

/// The local rotations of `bones` (what the plugin writes), in order.
pub fn local_rotations(app: &App, bones: &[Entity]) -> Vec<Quat> {
    bones
        .iter()
        .map(|&b| app.world().get::<Transform>(b).unwrap().rotation)
        .collect()
}

/// The largest turn of one bone between two snapshots of [`local_rotations`] (radians).
pub fn largest_turn(before: &[Quat], after: &[Quat]) -> f32 {
    before
        .iter()
        .zip(after)
        .map(|(a, b)| a.angle_between(*b))
        .fold(0.0, f32::max)
}

/// Round-off allowed over the per-frame turn bound when it is read back from the written
/// `Transform`s (radians; the solver aims 1e-4 of the bound below it, 15° · 1e-4 ≈ 2.6e-5 rad).
pub const TURN_READ_SLACK: f32 = 1e-4;

/// Frames bounded tracking may take, once every joint has turned as
/// far as the goal needs, to close the last of the residual within tolerance: its
/// Gauss–Newton budget of a frame converges from a step's second-order drift in a frame or
/// two.
pub const SETTLE_FRAMES: usize = 2;

/// The frames a joint turned at most `max_turn` a frame needs to carry a two-bone limb
/// (bones `upper` and `lower` long) whose root moves from `root.0` to `root.1` while its end
/// moves from `end.0` to `end.1`: the middle joint's bend changes with the root–end distance
/// (law of cosines), and the upper bone turns by the root–end direction's turn plus the
/// change of its angle to that direction (at most the bend's change: the triangle's other
/// two angles change together against it). The larger of the two turns over `max_turn`,
/// rounded up, plus [`SETTLE_FRAMES`]. The trunk may take up part of the turn, so bounded
/// tracking meets such a goal within this many frames; it cannot in fewer than the limb
/// turns alone allow where the trunk does not help.
pub fn frames_to_carry(
    root: (Vec3, Vec3),
    end: (Vec3, Vec3),
    upper: f32,
    lower: f32,
    max_turn: f32,
) -> usize {
    let bend = |r: f32| {
        let r = r.clamp((upper - lower).abs(), upper + lower);
        ((upper * upper + lower * lower - r * r) / (2.0 * upper * lower))
            .clamp(-1.0, 1.0)
            .acos()
    };
    let (d0, d1) = (end.0 - root.0, end.1 - root.1);
    let bend_change = (bend(d1.length()) - bend(d0.length())).abs();
    let upper_turn = d0.angle_between(d1) + bend_change;
    (upper_turn.max(bend_change) / max_turn).ceil() as usize + SETTLE_FRAMES
}
