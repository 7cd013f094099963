//! Full-body solver: goals from forward kinematics of random in-limit poses are met, limits are
//! never violated, unreachable or degenerate goals never produce NaN.

use glam::{Quat, Vec3};
use ik_core::humanoid::{
    Effector, EffectorGoal, FullBodyGoals, FullBodySolver, HumanoidMap, LookAtGoal,
};
use ik_core::{HumanoidError, Pose};
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

use crate::rng;
use rng::Rng;

fn success_rate(conv: RigConvention, axes: RestAxes, samples: usize, seed: u64) -> f32 {
    let s = test_rig(conv, axes);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let mut rng = Rng(seed);
    let mut ok = 0;
    let mut worst = (0.0f32, 0.0f32);
    for _ in 0..samples {
        let truth = random_pose_within_limits(&s, &map, solver.limits(), 1.0, &mut || rng.next());
        assert!(solver.pose_within_limits(&s, &truth, 1e-4));
        let goals = solver.goals_at_pose(&s, &truth);
        let mut pose = s.rest_pose();
        let report = solver.solve_cold(&s, &mut pose, &goals).unwrap();
        assert!(pose.is_finite());
        assert!(solver.pose_within_limits(&s, &pose, 1e-4), "limit violated");
        // Independent check of the residuals from FK of the returned pose.
        let model = s.model_transforms(&pose);
        let mut good = true;
        for (k, &b) in solver.effector_bones().iter().enumerate() {
            let g = goals.effectors[k];
            let dp = model[b].translation.distance(g.position);
            let dr = model[b].rotation.angle_between(g.rotation);
            worst = (worst.0.max(dp), worst.1.max(dr));
            good &= dp <= 1e-3 && dr <= 1f32.to_radians();
        }
        let head = &model[solver.head_bone()];
        let aim = head.rotation * solver.head_aim_axis();
        let want = (goals.look_at.target - head.translation).normalize();
        good &= aim.angle_between(want) <= 1f32.to_radians();
        // The report agrees with the independent check.
        if report.converged {
            assert!(good, "converged but FK disagrees: {report:?}");
        }
        ok += usize::from(good);
    }
    eprintln!("{conv:?} {axes:?}: {ok}/{samples}, worst {worst:?}");
    ok as f32 / samples as f32
}

#[test]
fn full_body_fk_goals_are_met() {
    let rate = success_rate(RigConvention::Mixamo, RestAxes::PlusY, 400, 1);
    assert!(rate >= 0.99, "success {rate}");
}

#[test]
fn converged_pose_is_kept_bit_identical() {
    let s = test_rig(RigConvention::Mixamo, RestAxes::MinusZ);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let mut rng = Rng(99);
    let truth = random_pose_within_limits(&s, &map, solver.limits(), 0.7, &mut || rng.next());
    let goals = solver.goals_at_pose(&s, &truth);
    let mut pose = s.rest_pose();
    assert!(solver.solve_cold(&s, &mut pose, &goals).unwrap().converged);
    let once = pose.clone();
    let r = solver.solve(&s, &mut pose, &goals).unwrap();
    assert!(r.converged && r.iterations == 0);
    assert_eq!(pose, once);
}

#[test]
fn full_body_other_rigs() {
    for (conv, axes) in [
        (RigConvention::Unreal, RestAxes::PlusX),
        (RigConvention::Plain, RestAxes::MinusZ),
        (RigConvention::Rigify, RestAxes::Identity),
    ] {
        let rate = success_rate(conv, axes, 150, 7);
        assert!(rate >= 0.99, "{conv:?}: success {rate}");
    }
}

#[test]
fn unreachable_and_bad_goals_never_give_nan() {
    let s = test_rig(RigConvention::Vrm, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let mut goals = FullBodyGoals::default();
    goals.effectors[Effector::LeftHand as usize] =
        EffectorGoal::new(Vec3::new(5.0, 3.0, 2.0), Quat::from_rotation_z(2.0));
    goals.effectors[Effector::RightFoot as usize] =
        EffectorGoal::new(Vec3::new(0.0, -4.0, 0.0), Quat::IDENTITY);
    // A target right on the shoulder joint and a look-at at the head's own position.
    let model = s.rest_model_transforms();
    let shoulder = model[map
        .get(ik_core::humanoid::HumanoidBone::RightUpperArm)
        .unwrap()]
    .translation;
    goals.effectors[Effector::RightHand as usize] = EffectorGoal::position(shoulder);
    goals.look_at = LookAtGoal {
        target: model[solver.head_bone()].translation,
        weight: 1.0,
        enabled: true,
        ..LookAtGoal::default()
    };
    let hips = model[map.get(ik_core::humanoid::HumanoidBone::Hips).unwrap()];
    goals.effectors[Effector::Pelvis as usize] = EffectorGoal::new(hips.translation, hips.rotation);
    let mut pose = s.rest_pose();
    // A cold solve from the result never increases the total error.
    let mut last = f32::INFINITY;
    for _ in 0..3 {
        let r = solver.solve_cold(&s, &mut pose, &goals).unwrap();
        assert!(pose.is_finite());
        assert!(!r.converged);
        assert!(solver.pose_within_limits(&s, &pose, 1e-4));
        assert!(
            r.cost.is_finite() && r.cost <= last,
            "{} after {last}",
            r.cost
        );
        last = r.cost;
    }
    // Tracking the same goals frame after frame stays finite and in limits, and the
    // unreachable hand (which gives way to the other goals) stays within 1 cm of the closest
    // the cold solve got.
    let hand = map.get(ik_core::humanoid::HumanoidBone::LeftHand).unwrap();
    let far = Vec3::new(5.0, 3.0, 2.0);
    let cold_hand = s.model_transform(&pose, hand).translation.distance(far);
    for _ in 0..10 {
        let r = solver.solve(&s, &mut pose, &goals).unwrap();
        assert!(pose.is_finite() && r.cost.is_finite() && !r.converged);
        assert!(solver.pose_within_limits(&s, &pose, 1e-4));
        let d = s.model_transform(&pose, hand).translation.distance(far);
        assert!(d <= cold_hand + 0.01, "hand {d}, cold {cold_hand}");
    }
    let last = s.model_transforms(&pose)
        [map.get(ik_core::humanoid::HumanoidBone::LeftHand).unwrap()]
    .translation
    .distance(Vec3::new(5.0, 3.0, 2.0));
    // With the pelvis held, reaching toward (5, 3, 2) brings the hand closer than at rest.
    let rest_err = model[map.get(ik_core::humanoid::HumanoidBone::LeftHand).unwrap()]
        .translation
        .distance(Vec3::new(5.0, 3.0, 2.0));
    assert!(last < rest_err - 0.1);
    goals.effectors[0].position.x = f32::NAN;
    let before = pose.clone();
    assert_eq!(
        solver.solve(&s, &mut pose, &goals),
        Err(HumanoidError::NonFiniteGoal)
    );
    assert_eq!(pose, before);
    let mut short = Pose::default();
    assert!(
        solver
            .solve(&s, &mut short, &FullBodyGoals::default())
            .is_err()
    );
}

#[test]
fn centre_of_mass_moves_over_the_support_point() {
    use ik_core::humanoid::CenterOfMassGoal;
    let s = test_rig(RigConvention::Vrm, RestAxes::MinusZ);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let rest = s.rest_pose();
    let model = s.rest_model_transforms();
    let com0 = solver.center_of_mass(&s, &rest).unwrap();
    // Near the hips' height, between the feet.
    assert!(
        com0.y > 0.8 && com0.y < 1.2 && com0.x.abs() < 0.01,
        "{com0}"
    );
    let mut goals = FullBodyGoals::default();
    for e in [Effector::LeftFoot, Effector::RightFoot] {
        let b = solver.effector_bones()[e as usize];
        *goals.get_mut(e) = EffectorGoal::new(model[b].translation, model[b].rotation);
    }
    // Shift the weight 6 cm toward the left foot and 3 cm forward (the height is free).
    let target = com0 + Vec3::new(0.06, 0.0, 0.03);
    goals.center_of_mass = CenterOfMassGoal {
        target,
        weight: 1.0,
        enabled: true,
        ..CenterOfMassGoal::default()
    };
    // One solve from the rest pose to goals far from it: a cold solve (tracking turns no
    // joint more than `max_turn` a frame).
    let mut pose = rest.clone();
    let r = solver.solve_cold(&s, &mut pose, &goals).unwrap();
    assert!(r.converged, "{r:?}");
    assert!(solver.pose_within_limits(&s, &pose, 1e-4));
    let com = solver.center_of_mass(&s, &pose).unwrap();
    assert!(
        (com.x - target.x).abs() < 5e-3 && (com.z - target.z).abs() < 5e-3,
        "{com}"
    );
    let after = s.model_transforms(&pose);
    for e in [Effector::LeftFoot, Effector::RightFoot] {
        let b = solver.effector_bones()[e as usize];
        assert!(after[b].translation.distance(model[b].translation) < 1e-3);
    }
}

#[test]
fn posture_pulls_free_joints_toward_the_reference_without_hurting_goals() {
    use ik_core::humanoid::{HumanoidBone, PostureReference};
    let s = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let spine = map.get(HumanoidBone::Chest).unwrap();
    let rest = s.rest_pose();
    let model = s.rest_model_transforms();
    // Start with the chest bent; goals: pelvis and feet, the left foot lifted 5 cm.
    let mut start = rest.clone();
    start.rotations[spine] = rest.rotations[spine] * Quat::from_rotation_x(0.3);
    let mut goals = FullBodyGoals::default();
    for e in [Effector::LeftFoot, Effector::RightFoot, Effector::Pelvis] {
        let b = map.get(e.bone()).unwrap();
        *goals.get_mut(e) = EffectorGoal::new(model[b].translation, model[b].rotation);
    }
    goals.get_mut(Effector::LeftFoot).position.y += 0.05;
    let deviation = |gain: f32| {
        let mut solver = FullBodySolver::new(&s, &map).unwrap();
        solver.settings_mut().posture_gain = gain;
        solver.settings_mut().reference = PostureReference::Rest;
        // One solve from a pose far from the goals (the knee must bend about 38°): a cold
        // solve (tracking turns no joint more than `max_turn` a frame).
        let mut pose = start.clone();
        let r = solver.solve_cold(&s, &mut pose, &goals).unwrap();
        assert!(r.converged, "{r:?}");
        pose.rotations[spine].angle_between(rest.rotations[spine])
    };
    let without = deviation(0.0);
    let with = deviation(0.3);
    assert!(
        (without - 0.3).abs() < 1e-3,
        "the chest carries no goal: {without}"
    );
    assert!(with < without - 0.01, "posture {with} vs none {without}");
}

#[test]
fn setup_errors_are_typed() {
    use ik_core::humanoid::{HumanoidBone, HumanoidLimits};
    let s = test_rig(RigConvention::Plain, RestAxes::PlusX);
    let (mut map, _) = HumanoidMap::from_skeleton(&s);
    let full = map.clone();
    map.set(HumanoidBone::LeftHand, None);
    assert!(matches!(
        FullBodySolver::new(&s, &map),
        Err(HumanoidError::MissingBone(HumanoidBone::LeftHand))
    ));
    let mut bad = full.clone();
    bad.set(HumanoidBone::Head, Some(999));
    assert!(matches!(
        HumanoidLimits::anatomical(&s, &bad),
        Err(HumanoidError::BoneOutOfRange { index: 999, .. })
    ));
    // The forearm mapped above the upper arm breaks the hierarchy.
    let mut swapped = full.clone();
    swapped.set(
        HumanoidBone::LeftLowerArm,
        full.get(HumanoidBone::LeftUpperArm),
    );
    swapped.set(
        HumanoidBone::LeftUpperArm,
        full.get(HumanoidBone::LeftLowerArm),
    );
    assert!(matches!(
        FullBodySolver::new(&s, &swapped),
        Err(HumanoidError::BadHierarchy { .. })
    ));
    // A pose for another skeleton is rejected, not solved.
    let mut solver = FullBodySolver::new(&s, &full).unwrap();
    let other = test_rig(RigConvention::Mixamo, RestAxes::PlusX);
    let mut pose = other.rest_pose();
    assert!(
        solver
            .solve(&other, &mut pose, &FullBodyGoals::default())
            .is_err()
    );
}

#[test]
fn priorities_decide_which_goal_gives_way() {
    let s = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let rest = s.rest_pose();
    let mut goals = solver.goals_at_pose(&s, &rest);
    goals.get_mut(Effector::Pelvis).enabled = false;
    goals.get_mut(Effector::RightHand).enabled = false;
    goals.look_at.enabled = false;
    // Out of reach for the arm while both feet stay planted.
    *goals.get_mut(Effector::LeftHand) = EffectorGoal::position(Vec3::new(1.1, 2.3, 0.3));
    let run = |solver: &mut FullBodySolver, goals: &FullBodyGoals| {
        let mut pose = rest.clone();
        let r = solver.solve_cold(&s, &mut pose, goals).unwrap();
        assert!(pose.is_finite() && solver.pose_within_limits(&s, &pose, 1e-4));
        r
    };
    // Feet first: they stay exact, the hand falls short.
    goals.get_mut(Effector::LeftHand).priority = 1;
    let feet_first = run(&mut solver, &goals);
    for e in [Effector::LeftFoot, Effector::RightFoot] {
        let r = feet_first.residuals[e as usize];
        assert!(r.position < 1e-3 && r.rotation < 1e-2, "{e:?} {r:?}");
    }
    // Hand first: the feet give way and the hand gets closer.
    goals.get_mut(Effector::LeftHand).priority = 0;
    goals.get_mut(Effector::LeftFoot).priority = 1;
    goals.get_mut(Effector::RightFoot).priority = 1;
    let hand_first = run(&mut solver, &goals);
    let (a, b) = (
        feet_first.residuals[0].position,
        hand_first.residuals[0].position,
    );
    assert!(b < a - 0.02, "hand first {b} vs feet first {a}");
}
