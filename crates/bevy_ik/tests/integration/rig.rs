//! Full-body `IkRig` in a headless app: goals by bone name with priorities and a movable root,
//! per-goal and whole-rig blends, and robustness (despawned / NaN targets, missing bones).

use crate::common;

use bevy::prelude::*;
use bevy_ik::prelude::*;
use common::*;

/// Indices into `POSITIONS`.
const HIPS: usize = 0;
const L_HAND: usize = 8;
const R_HAND: usize = 12;
const L_FOOT: usize = 15;
const R_FOOT: usize = 19;

struct Character {
    root: Entity,
    bones: Vec<Entity>,
    /// Target entities (children of `root`) for the left hand, right hand, left foot, right foot.
    targets: [Entity; 4],
}

/// A humanoid with a rig whose targets start at the bones (children of the character root).
fn spawn_character(app: &mut App, at: Vec3, rig: impl FnOnce([Entity; 4]) -> IkRig) -> Character {
    let root = app
        .world_mut()
        .spawn(Transform::from_translation(at).with_rotation(Quat::from_rotation_y(-0.4)))
        .id();
    let bones = spawn_humanoid(app.world_mut(), root, &VRM_NAMES);
    let targets = [L_HAND, R_HAND, L_FOOT, R_FOOT].map(|i| {
        let p = Vec3::from(POSITIONS[i].1);
        app.world_mut()
            .spawn((
                Transform::from_translation(p).with_rotation(model_rotation(i)),
                ChildOf(root),
            ))
            .id()
    });
    app.world_mut().entity_mut(root).insert(rig(targets));
    Character {
        root,
        bones,
        targets,
    }
}

fn four_limb_rig(t: [Entity; 4]) -> IkRig {
    IkRig::new([
        IkGoal::position("leftHand", t[0]),
        IkGoal::position("rightHand", t[1]),
        IkGoal::pose("leftFoot", t[2]),
        IkGoal::pose("rightFoot", t[3]),
    ])
    .with_movable_root("hips")
    .with_settings(IkRigSettings {
        max_iterations: 32,
        ..IkRigSettings::default()
    })
}

fn move_target(app: &mut App, target: Entity, by: Vec3) {
    app.world_mut()
        .get_mut::<Transform>(target)
        .unwrap()
        .translation += by;
}

fn segment_lengths(app: &App, c: &Character) -> Vec<f32> {
    POSITIONS
        .iter()
        .enumerate()
        .filter_map(|(i, (p, _))| {
            p.map(|p| world_pos(app, c.bones[i]).distance(world_pos(app, c.bones[p])))
        })
        .collect()
}

#[test]
fn rig_reaches_goals_and_keeps_bone_lengths() {
    let mut app = app();
    let c = spawn_character(&mut app, Vec3::new(1.0, 0.0, -1.0), four_limb_rig);
    app.update();
    let lengths = segment_lengths(&app, &c);
    let hips_before = world_pos(&app, c.bones[HIPS]);
    // Crouch: both feet stay, both hands reach down and forward (reachable only if the hips
    // move: the movable root has to translate).
    move_target(&mut app, c.targets[0], Vec3::new(-0.1, -0.45, 0.25));
    move_target(&mut app, c.targets[1], Vec3::new(0.1, -0.45, 0.25));
    for _ in 0..4 {
        app.update();
    }
    for (k, &i) in [L_HAND, R_HAND, L_FOOT, R_FOOT].iter().enumerate() {
        let d = world_pos(&app, c.bones[i]).distance(world_pos(&app, c.targets[k]));
        assert!(d < 1e-4, "goal {k}: {d} from its target");
    }
    // Foot rotations too (pose goals).
    for (k, i) in [(2, L_FOOT), (3, R_FOOT)] {
        let bone = app
            .world()
            .get::<GlobalTransform>(c.bones[i])
            .unwrap()
            .rotation();
        let target = app
            .world()
            .get::<GlobalTransform>(c.targets[k])
            .unwrap()
            .rotation();
        assert!(bone.angle_between(target) < 1e-2, "foot {k} rotation");
    }
    assert!(
        world_pos(&app, c.bones[HIPS]).distance(hips_before) > 1e-3,
        "the hips moved"
    );
    for (a, b) in segment_lengths(&app, &c).iter().zip(&lengths) {
        assert!((a - b).abs() < 1e-4, "bone length changed: {a} vs {b}");
    }
    let s = status(&app, c.root);
    assert!(s.solved && s.converged && s.last_error.is_none(), "{s:?}");
    assert_eq!(s.residuals.len(), 4);
    assert!(s.residuals.iter().all(|r| *r < 1e-4), "{s:?}");
}

#[test]
fn lower_priority_goal_yields_to_higher() {
    let mut app = app();
    // Left hand at priority 0, right hand at priority 1 and out of reach while the feet
    // (priority 0) hold: the left hand is exact, the right hand only gets as close as it can.
    let c = spawn_character(&mut app, Vec3::ZERO, |t| {
        IkRig::new([
            IkGoal::position("leftHand", t[0]),
            IkGoal::position("rightHand", t[1]).with_priority(1),
            IkGoal::pose("leftFoot", t[2]),
            IkGoal::pose("rightFoot", t[3]),
        ])
        .with_movable_root("hips")
    });
    app.update();
    move_target(&mut app, c.targets[0], Vec3::new(0.1, 0.1, 0.2));
    move_target(&mut app, c.targets[1], Vec3::new(-3.0, 0.0, 0.0));
    for _ in 0..6 {
        app.update();
    }
    let left = world_pos(&app, c.bones[L_HAND]).distance(world_pos(&app, c.targets[0]));
    let right = world_pos(&app, c.bones[R_HAND]).distance(world_pos(&app, c.targets[1]));
    let foot = world_pos(&app, c.bones[L_FOOT]).distance(world_pos(&app, c.targets[2]));
    // (The conflicting lower level slows convergence: 1e-3 rather than 1e-4 here.)
    assert!(
        left < 1e-3 && foot < 1e-3,
        "priority 0: hand {left}, foot {foot}"
    );
    assert!(
        right > 1.0,
        "the unreachable right hand target is not reached: {right}"
    );
    let s = status(&app, c.root);
    assert!(s.solved && !s.converged, "{s:?}");
}

/// Bones with this component get their stored local transform back every frame, in
/// `AnimationSystems`, like a looping animation holding one pose.
#[derive(Component, Clone, Copy)]
struct Animated(Transform);

fn animate(mut bones: Query<(&Animated, &mut Transform)>) {
    for (a, mut t) in &mut bones {
        *t = a.0;
    }
}

#[test]
fn blends_weight_the_solution() {
    let mut app = app();
    app.add_systems(PostUpdate, animate.in_set(bevy::app::AnimationSystems));
    let settings = IkRigSettings {
        max_iterations: 64,
        ..IkRigSettings::default()
    };
    let off = spawn_character(&mut app, Vec3::ZERO, |t| IkRig {
        weight: 0.0,
        ..four_limb_rig(t)
    });
    let half = spawn_character(&mut app, Vec3::X * 3.0, |t| {
        let mut rig = four_limb_rig(t).with_settings(settings);
        rig.goals[0].blend = 0.5;
        rig
    });
    for c in [&off, &half] {
        for &b in &c.bones {
            let t = *app.world().get::<Transform>(b).unwrap();
            app.world_mut().entity_mut(b).insert(Animated(t));
        }
    }
    app.update();
    let animated: Vec<Transform> = off
        .bones
        .iter()
        .map(|&b| *app.world().get::<Transform>(b).unwrap())
        .collect();
    let animated_hand = world_pos(&app, half.bones[L_HAND]);
    let by = Vec3::new(0.0, -0.2, 0.2);
    for c in [&off, &half] {
        move_target(&mut app, c.targets[0], by);
    }
    app.update();
    // Weight 0: the animated pose is left exactly as it is.
    for (&b, r) in off.bones.iter().zip(&animated) {
        assert_eq!(app.world().get::<Transform>(b).unwrap(), r);
    }
    // Blend 0.5: the hand goes halfway from its animated position to the target, every frame.
    for _ in 0..2 {
        let target = world_pos(&app, half.targets[0]);
        let expected = animated_hand.lerp(target, 0.5);
        let hand = world_pos(&app, half.bones[L_HAND]);
        assert!(
            hand.distance(expected) < 1e-4,
            "hand {} from the halfway point ({} from the target)",
            hand.distance(expected),
            hand.distance(target)
        );
        app.update();
    }
}

#[test]
fn broken_rigs_keep_their_pose_and_others_still_solve() {
    let mut app = app();
    let good = spawn_character(&mut app, Vec3::ZERO, four_limb_rig);
    let gone = spawn_character(&mut app, Vec3::X * 3.0, four_limb_rig);
    let nan = spawn_character(&mut app, Vec3::X * 6.0, four_limb_rig);
    let missing = spawn_character(&mut app, Vec3::X * 9.0, |t| {
        IkRig::new([
            IkGoal::position("leftHand", t[0]),
            IkGoal::position("noSuchBone", t[1]),
        ])
    });
    app.update();
    let before: Vec<Vec<Transform>> = [&gone, &nan, &missing]
        .iter()
        .map(|c| {
            c.bones
                .iter()
                .map(|&b| *app.world().get::<Transform>(b).unwrap())
                .collect()
        })
        .collect();
    app.world_mut().despawn(gone.targets[0]);
    app.world_mut()
        .get_mut::<Transform>(nan.targets[1])
        .unwrap()
        .translation
        .y = f32::INFINITY;
    for c in [&good, &gone, &nan, &missing] {
        if c.root != gone.root {
            move_target(&mut app, c.targets[0], Vec3::new(0.0, -0.1, 0.1));
        }
    }
    for _ in 0..3 {
        app.update();
    }
    for (c, pose) in [&gone, &nan, &missing].iter().zip(&before) {
        for (&b, t) in c.bones.iter().zip(pose) {
            assert_eq!(app.world().get::<Transform>(b).unwrap(), t);
        }
    }
    let d = world_pos(&app, good.bones[L_HAND]).distance(world_pos(&app, good.targets[0]));
    assert!(d < 1e-4, "the healthy character still solves: {d}");
    assert!(status(&app, good.root).solved);
    let s = status(&app, gone.root);
    assert_eq!(
        s.last_error,
        Some(IkError::MissingTarget(gone.targets[0])),
        "{s:?}"
    );
    let s = status(&app, nan.root);
    assert_eq!(
        s.last_error,
        Some(IkError::NonFiniteTarget(nan.targets[1])),
        "{s:?}"
    );
    let s = status(&app, missing.root);
    assert!(!s.ready, "{s:?}");
    assert_eq!(
        s.last_error,
        Some(IkError::MissingBone("noSuchBone".into())),
        "{s:?}"
    );
}

/// A rig whose bone names say nothing (a VRM avatar's are mapped from the file's humanoid
/// table): `IkJointLimits::Humanoid` takes the roles the humanoid mapped at set-up from the
/// tags, instead of failing to find a "hips" by name.
#[test]
fn humanoid_limits_use_the_humanoid_table_of_a_rig_with_meaningless_names() {
    use bevy_ik::ik_core::humanoid::HumanoidBone as H;
    let roles = [
        H::Hips,
        H::Spine,
        H::Chest,
        H::Neck,
        H::Head,
        H::LeftShoulder,
        H::LeftUpperArm,
        H::LeftLowerArm,
        H::LeftHand,
        H::RightShoulder,
        H::RightUpperArm,
        H::RightLowerArm,
        H::RightHand,
        H::LeftUpperLeg,
        H::LeftLowerLeg,
        H::LeftFoot,
        H::LeftToes,
        H::RightUpperLeg,
        H::RightLowerLeg,
        H::RightFoot,
        H::RightToes,
    ];
    let names: [String; 21] = core::array::from_fn(|i| format!("node{i:02}"));
    let names: [&str; 21] = core::array::from_fn(|i| names[i].as_str());
    let mut outcomes = Vec::new();
    for tagged in [false, true] {
        let mut app = app();
        let root = app.world_mut().spawn(Transform::default()).id();
        let bones = spawn_humanoid(app.world_mut(), root, &names);
        if tagged {
            for (&bone, &role) in bones.iter().zip(&roles) {
                app.world_mut()
                    .entity_mut(bone)
                    .insert(IkHumanoidBone::new(role));
            }
        }
        let start = Vec3::from(POSITIONS[L_HAND].1);
        let target = app
            .world_mut()
            .spawn((
                Transform::from_translation(start + Vec3::new(-0.1, -0.15, 0.1)),
                ChildOf(root),
            ))
            .id();
        // The humanoid only maps the bones (no stage of its own); the rig is the character's
        // stage, with anatomical limits.
        let rig = IkRig::new([IkGoal::position(bones[L_HAND], target)])
            .with_limits(IkJointLimits::Humanoid)
            .with_settings(IkRigSettings {
                max_iterations: 32,
                ..IkRigSettings::default()
            });
        app.world_mut().entity_mut(root).insert((
            IkHumanoid {
                arms: false,
                legs: false,
                poles: false,
                ..IkHumanoid::limbs()
            },
            rig,
        ));
        for _ in 0..4 {
            app.update();
        }
        let s = status(&app, root);
        let miss = world_pos(&app, bones[L_HAND]).distance(world_pos(&app, target));
        outcomes.push((s.solved, s.last_error.clone(), miss));
    }
    let (untagged, tagged) = (&outcomes[0], &outcomes[1]);
    assert!(
        !untagged.0 && matches!(untagged.1, Some(IkError::MissingRole(_))),
        "without a table nothing names the roles: {untagged:?}"
    );
    assert!(tagged.0 && tagged.1.is_none(), "{tagged:?}");
    assert!(tagged.2 < 1e-3, "the hand reaches its target: {tagged:?}");
}
