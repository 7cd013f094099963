//! Humanoid auto-mapping on small hierarchies named in each common convention, built in code
//! with non-trivial rest rotations (no bone points along a fixed local axis).

mod common;

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;
use common::*;

/// Bone names of one convention, in the order of [`POSITIONS`].
struct Convention {
    label: &'static str,
    names: [&'static str; 21],
}

/// (parent index, T-pose model position) of: hips, spine, chest, neck, head,
/// L shoulder, L upper arm, L lower arm, L hand, R shoulder, R upper arm, R lower arm, R hand,
/// L upper leg, L lower leg, L foot, L toes, R upper leg, R lower leg, R foot, R toes.
const POSITIONS: [(Option<usize>, [f32; 3]); 21] = [
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

const CONVENTIONS: [Convention; 5] = [
    Convention {
        label: "mixamo",
        names: [
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
        ],
    },
    Convention {
        label: "vrm",
        names: [
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
        ],
    },
    Convention {
        label: "rigify",
        names: [
            "DEF-spine",
            "DEF-spine.001",
            "DEF-spine.002",
            "DEF-spine.004",
            "DEF-spine.006",
            "DEF-shoulder.L",
            "DEF-upper_arm.L",
            "DEF-forearm.L",
            "DEF-hand.L",
            "DEF-shoulder.R",
            "DEF-upper_arm.R",
            "DEF-forearm.R",
            "DEF-hand.R",
            "DEF-thigh.L",
            "DEF-shin.L",
            "DEF-foot.L",
            "DEF-toe.L",
            "DEF-thigh.R",
            "DEF-shin.R",
            "DEF-foot.R",
            "DEF-toe.R",
        ],
    },
    Convention {
        label: "unreal",
        names: [
            "pelvis",
            "spine_01",
            "spine_02",
            "neck_01",
            "head",
            "clavicle_l",
            "upperarm_l",
            "lowerarm_l",
            "hand_l",
            "clavicle_r",
            "upperarm_r",
            "lowerarm_r",
            "hand_r",
            "thigh_l",
            "calf_l",
            "foot_l",
            "ball_l",
            "thigh_r",
            "calf_r",
            "foot_r",
            "ball_r",
        ],
    },
    Convention {
        label: "plain, mixed separators",
        names: [
            "Hips",
            "Spine",
            "Chest",
            "Neck",
            "Head",
            "LeftShoulder",
            "LeftUpperArm",
            "LeftLowerArm",
            "LeftHand",
            "right_shoulder",
            "right_upper_arm",
            "Right-LowerArm",
            "right_hand",
            "LeftUpperLeg",
            "LeftLowerLeg",
            "LeftFoot",
            "LeftToes",
            "RIGHT_UPPER_LEG",
            "right lower leg",
            "RightFoot",
            "RightToes",
        ],
    },
];

/// A rotation that differs per bone, so local axes point every which way.
fn model_rotation(i: usize) -> Quat {
    let f = i as f32;
    Quat::from_euler(EulerRot::XYZ, 0.3 * f, -0.7 + 0.2 * f, 1.1 - 0.15 * f)
}

/// Spawns the humanoid under `character`; returns the bone entities in `POSITIONS` order.
fn spawn_humanoid(world: &mut World, character: Entity, names: &[&str; 21]) -> Vec<Entity> {
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

#[test]
fn every_convention_is_mapped_and_its_limbs_follow_targets() {
    for (c, convention) in CONVENTIONS.iter().enumerate() {
        let mut app = app();
        let character = app
            .world_mut()
            .spawn((
                Transform::from_xyz(2.0 * c as f32, 0.0, 1.0)
                    .with_rotation(Quat::from_rotation_y(0.3)),
                IkHumanoid::auto(),
            ))
            .id();
        let bones = spawn_humanoid(app.world_mut(), character, &convention.names);
        app.update();
        let label = convention.label;
        let s = status(&app, character);
        assert!(s.ready && s.last_error.is_none(), "{label}: {s:?}");
        let mapped = app
            .world()
            .get::<IkHumanoidBones>(character)
            .unwrap()
            .clone();
        for (role, index) in [
            (HumanoidBone::LeftUpperArm, 6),
            (HumanoidBone::LeftLowerArm, 7),
            (HumanoidBone::LeftHand, 8),
            (HumanoidBone::RightUpperArm, 10),
            (HumanoidBone::RightLowerArm, 11),
            (HumanoidBone::RightHand, 12),
            (HumanoidBone::LeftUpperLeg, 13),
            (HumanoidBone::LeftLowerLeg, 14),
            (HumanoidBone::LeftFoot, 15),
            (HumanoidBone::RightUpperLeg, 17),
            (HumanoidBone::RightLowerLeg, 18),
            (HumanoidBone::RightFoot, 19),
            (HumanoidBone::Head, 4),
        ] {
            assert_eq!(
                mapped.get(role),
                Some(bones[index]),
                "{label}: {role:?} should be `{}`",
                convention.names[index]
            );
        }
        let targets = app
            .world()
            .get::<IkHumanoidTargets>(character)
            .unwrap()
            .clone();
        assert_eq!(targets.limbs.len(), 4, "{label}");
        // Targets start where the bones are.
        let hand_target = targets.left_hand.unwrap();
        assert!(world_pos(&app, hand_target).distance(world_pos(&app, bones[8])) < 1e-4);
        let foot_target = targets.right_foot.unwrap();
        assert!(world_pos(&app, foot_target).distance(world_pos(&app, bones[19])) < 1e-4);
        assert!(targets.pelvis.is_some() && targets.head.is_some());

        // Move the hand and a foot targets; the limbs follow in the same frame.
        let hand_goal = world_pos(&app, hand_target) + Vec3::new(-0.15, -0.25, 0.2);
        let foot_goal = world_pos(&app, foot_target) + Vec3::new(0.05, 0.2, 0.15);
        for (t, goal) in [(hand_target, hand_goal), (foot_target, foot_goal)] {
            // Targets are children of the character: set their local translation.
            let parent = *app.world().get::<GlobalTransform>(character).unwrap();
            let local = GlobalTransform::from_translation(goal).reparented_to(&parent);
            app.world_mut().get_mut::<Transform>(t).unwrap().translation = local.translation;
        }
        app.update();
        let hand = world_pos(&app, bones[8]);
        let foot = world_pos(&app, bones[19]);
        assert!(
            hand.distance(hand_goal) < 1e-4,
            "{label}: hand {hand} vs {hand_goal}"
        );
        assert!(
            foot.distance(foot_goal) < 1e-4,
            "{label}: foot {foot} vs {foot_goal}"
        );
        for limb in targets.limbs {
            let s = status(&app, limb);
            assert!(s.solved && s.converged, "{label}: {s:?}");
        }
    }
}

#[test]
fn bones_appearing_later_are_mapped_then() {
    let mut app = app();
    let character = app
        .world_mut()
        .spawn((Transform::default(), IkHumanoid::auto()))
        .id();
    app.update();
    assert!(!status(&app, character).ready);
    assert!(app.world().get::<IkHumanoidTargets>(character).is_none());
    // The "scene" spawns a frame later.
    spawn_humanoid(app.world_mut(), character, &CONVENTIONS[0].names);
    app.update();
    assert!(status(&app, character).ready);
    assert!(app.world().get::<IkHumanoidTargets>(character).is_some());
}

#[test]
fn unmappable_rig_reports_what_is_missing() {
    let mut app = app();
    let character = app
        .world_mut()
        .spawn((Transform::default(), IkHumanoid::auto()))
        .id();
    // Legs named nothing recognisable.
    let mut names = CONVENTIONS[1].names;
    for n in &mut names[13..] {
        *n = "bone";
    }
    spawn_humanoid(app.world_mut(), character, &names);
    app.update();
    let s = status(&app, character);
    assert!(!s.ready, "{s:?}");
    assert!(
        matches!(s.last_error, Some(IkError::MissingBone(_))),
        "{s:?}"
    );
    assert!(!s.unmapped.is_empty(), "{s:?}");
    assert!(app.world().get::<IkHumanoidTargets>(character).is_none());
}
