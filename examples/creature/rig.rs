//! A procedural quadruped: its skeleton (made here, in code: no file, no naming convention of
//! any tool) and its IK stages — four legs grounded with `IkGrounding`, a head aimed at a
//! target with `IkAim`, a spring tail with `IkSpringChain`. Shared by `examples/creature.rs`
//! (which adds meshes) and the plugin's headless creature test (which measures it).
//!
//! The joints are placed in model space (metres, Y up, facing +Z) and every bone gets its own
//! rest rotation (a deterministic twist per bone), so no bone points along a fixed local axis:
//! what the solvers must handle on real rigs.

#![allow(
    dead_code,
    reason = "shared by the example and the test, each uses a part"
)]

use bevy::ecs::system::Commands;
use bevy::prelude::*;
use bevy_ik::prelude::*;

/// `(name, parent, model-space joint position)`, parents first.
pub const JOINTS: [(&str, Option<usize>, [f32; 3]); 28] = [
    ("pelvis", None, [0.0, 0.55, -0.30]),
    ("spine", Some(0), [0.0, 0.58, 0.0]),
    ("chest", Some(1), [0.0, 0.58, 0.30]),
    ("neck", Some(2), [0.0, 0.68, 0.42]),
    ("head", Some(3), [0.0, 0.80, 0.52]),
    ("snout", Some(4), [0.0, 0.76, 0.72]),
    // Front legs (from the chest): knees bend forward.
    ("front_upper.L", Some(2), [0.14, 0.50, 0.30]),
    ("front_lower.L", Some(6), [0.14, 0.28, 0.34]),
    ("front_foot.L", Some(7), [0.14, 0.05, 0.30]),
    ("front_toe.L", Some(8), [0.14, 0.01, 0.37]),
    ("front_upper.R", Some(2), [-0.14, 0.50, 0.30]),
    ("front_lower.R", Some(10), [-0.14, 0.28, 0.34]),
    ("front_foot.R", Some(11), [-0.14, 0.05, 0.30]),
    ("front_toe.R", Some(12), [-0.14, 0.01, 0.37]),
    // Hind legs (from the pelvis): hocks bend backward.
    ("hind_upper.L", Some(0), [0.14, 0.50, -0.30]),
    ("hind_lower.L", Some(14), [0.14, 0.28, -0.37]),
    ("hind_foot.L", Some(15), [0.14, 0.05, -0.31]),
    ("hind_toe.L", Some(16), [0.14, 0.01, -0.24]),
    ("hind_upper.R", Some(0), [-0.14, 0.50, -0.30]),
    ("hind_lower.R", Some(18), [-0.14, 0.28, -0.37]),
    ("hind_foot.R", Some(19), [-0.14, 0.05, -0.31]),
    ("hind_toe.R", Some(20), [-0.14, 0.01, -0.24]),
    // The tail, back and a little down.
    ("tail0", Some(0), [0.0, 0.58, -0.42]),
    ("tail1", Some(22), [0.0, 0.56, -0.52]),
    ("tail2", Some(23), [0.0, 0.54, -0.62]),
    ("tail3", Some(24), [0.0, 0.52, -0.72]),
    ("tail4", Some(25), [0.0, 0.50, -0.82]),
    ("tail5", Some(26), [0.0, 0.48, -0.92]),
];

/// Indices into [`JOINTS`]: `(upper, lower, foot, toe)` per leg.
pub const LEGS: [[usize; 4]; 4] = [
    [6, 7, 8, 9],
    [10, 11, 12, 13],
    [14, 15, 16, 17],
    [18, 19, 20, 21],
];
/// The neck and head (the aimed chain) and the snout (the head's forward end).
pub const NECK: usize = 3;
/// See [`NECK`].
pub const HEAD: usize = 4;
/// See [`NECK`].
pub const SNOUT: usize = 5;
/// The tail's bones, root first.
pub const TAIL: [usize; 6] = [22, 23, 24, 25, 26, 27];

/// Bone `i`'s rest rotation in model space: a turn about a direction that differs per bone
/// (so local axes follow no convention).
fn model_rotation(i: usize) -> Quat {
    let k = i as f32;
    Quat::from_euler(
        EulerRot::YXZ,
        0.7 * k.sin(),
        0.5 * (1.3 * k).cos(),
        0.9 * (0.7 * k).sin(),
    )
}

/// The bones' rest local transforms (parents first, as [`JOINTS`]).
#[must_use]
pub fn rest_locals() -> Vec<Transform> {
    JOINTS
        .iter()
        .enumerate()
        .map(|(i, &(_, parent, p))| {
            let (pos, rot) = (Vec3::from_array(p), model_rotation(i));
            match parent {
                None => Transform::from_translation(pos).with_rotation(rot),
                Some(j) => {
                    let (pp, pr) = (Vec3::from_array(JOINTS[j].2), model_rotation(j));
                    Transform::from_translation(pr.inverse() * (pos - pp))
                        .with_rotation(pr.inverse() * rot)
                }
            }
        })
        .collect()
}

/// Spawns the skeleton under `root` (named bone entities): the entities, as [`JOINTS`].
pub fn spawn_skeleton(commands: &mut Commands, root: Entity) -> Vec<Entity> {
    let locals = rest_locals();
    let mut bones: Vec<Entity> = Vec::with_capacity(JOINTS.len());
    for (i, &(name, parent, _)) in JOINTS.iter().enumerate() {
        let parent = parent.map_or(root, |p| bones[p]);
        bones.push(
            commands
                .spawn((Name::new(name), locals[i], ChildOf(parent)))
                .id(),
        );
    }
    bones
}

/// The tail's spring parameters: a soft pull to the pose, light gravity, some drag; the
/// tail's width as hit radius.
pub fn tail_spring() -> IkSpringJoint {
    IkSpringJoint {
        stiffness: 0.8,
        gravity_power: 0.15,
        drag_force: 0.25,
        hit_radius: 0.03,
        ..IkSpringJoint::default()
    }
}

/// The stage entities of the creature `root` with `bones` (from [`spawn_skeleton`]), in
/// order: grounding (the four legs, the pelvis moved with the ground), the head aimed at
/// `look_at` (neck and head share the turn), the spring tail. Returns them in that order.
pub fn spawn_stages(
    commands: &mut Commands,
    root: Entity,
    bones: &[Entity],
    look_at: Option<Entity>,
) -> [Entity; 3] {
    let legs = LEGS.map(|[u, l, f, t]| IkLeg::new(bones[u], bones[l], bones[f]).with_toe(bones[t]));
    let grounding = commands
        .spawn((
            Name::new("grounding"),
            IkGrounding {
                pelvis: Some(bones[0].into()),
                raise_pelvis: true,
                lock_feet: false,
                ..IkGrounding::new(legs)
            },
            IkStageOf(root),
        ))
        .id();
    // "Forward" for the head: from the head joint to the snout, in the creature's space.
    let forward =
        (Vec3::from_array(JOINTS[SNOUT].2) - Vec3::from_array(JOINTS[HEAD].2)).normalize();
    let aim = commands
        .spawn((
            Name::new("look"),
            IkAim {
                target: look_at,
                root: bones[NECK].into(),
                tip: bones[HEAD].into(),
                axis: forward,
                model_space_axes: true,
                pole_axis: None,
                ..IkAim::default()
            },
            IkStageOf(root),
        ))
        .id();
    let tail = commands
        .spawn((
            Name::new("tail"),
            IkSpringChain::uniform(TAIL.map(|t| bones[t]), &tail_spring()),
            IkStageOf(root),
        ))
        .id();
    [grounding, aim, tail]
}
