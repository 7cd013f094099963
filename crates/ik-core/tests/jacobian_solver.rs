//! Behaviour of the Jacobian solver: repeatability, monotone residuals on unreachable
//! targets, strict priorities, the null-space posture term, movable root and slider joints,
//! look-at, centre of mass, stiffness, locks and typed errors.

use crate::jacobian_common;

use ik_core::glam::{Quat, Vec2, Vec3};
use ik_core::jacobian::{
    AxisMask, BoneMass, JacobianError, JacobianSolver, JointKind, JointSpec, PostureReference,
    SolverSettings, TaskSpec,
};
use ik_core::limits::JointLimit;
use ik_core::{Bone, BoneTransform, Pose, Skeleton, SkeletonError};
use jacobian_common::*;

fn arm_solver(tasks: Vec<TaskSpec>, settings: SolverSettings) -> (Skeleton, JacobianSolver) {
    let skeleton = arm_skeleton();
    let solver = JacobianSolver::try_new(&skeleton, arm_joints(), tasks, settings).unwrap();
    (skeleton, solver)
}

#[test]
fn converged_solve_is_bit_identical_on_repeat() {
    for with_posture in [false, true] {
        let mut tasks = arm_tasks();
        if with_posture {
            tasks.push(TaskSpec::posture(PostureReference::Rest, 0.3));
        }
        let settings = SolverSettings {
            max_iterations: if with_posture { 400 } else { 60 },
            ..arm_settings()
        };
        let (skeleton, solver) = arm_solver(tasks, settings);
        let mut goals = solver.goals();
        let mut scratch = solver.scratch();
        let mut rng = Rng(7);
        let mut checked = 0;
        for (p, q) in arm_targets(40, 99) {
            goals.tasks[0].point = p;
            goals.tasks[1].rotation = q;
            let mut pose = skeleton.rest_pose();
            let report = solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            if !report.converged {
                scratch.reset();
                pose = random_arm_pose(&skeleton, &mut rng);
                if !solver
                    .solve(&skeleton, &mut pose, &goals, &mut scratch)
                    .unwrap()
                    .converged
                {
                    continue;
                }
            }
            let before = pose.clone();
            let again = solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            assert!(again.converged);
            // Without a posture term nothing is evaluated beyond the residuals; with one, a
            // single probe step may be taken and undone.
            assert!(again.iterations <= u32::from(with_posture));
            assert_eq!(pose, before, "a converged pose must not move at all");
            checked += 1;
        }
        assert!(checked >= 30, "only {checked} converged");
    }
}

#[test]
fn unreachable_target_residual_decreases_monotonically_without_nan() {
    let settings = SolverSettings {
        max_iterations: 1,
        ..arm_settings()
    };
    for target in [
        Vec3::new(2.0, 0.3, -0.2),
        Vec3::new(1.2, 1.0, 0.5),
        Vec3::new(0.5, -0.9, 1.2),
    ] {
        let (skeleton, solver) = arm_solver(vec![TaskSpec::position(TIP, Vec3::ZERO)], settings);
        let mut goals = solver.goals();
        goals.tasks[0].point = target;
        let mut scratch = solver.scratch();
        let mut pose = skeleton.rest_pose();
        pose.rotations[FORE] = Quat::from_rotation_z(0.8);
        let mut last = f32::INFINITY;
        let mut history = Vec::new();
        for _ in 0..300 {
            let report = solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            assert!(!report.converged);
            let r = scratch.residuals()[0];
            assert!(r.is_finite() && pose.is_finite());
            assert!(r <= last + 1e-6, "residual went up: {last} -> {r}");
            limits_respected(&skeleton, &arm_joints(), &pose).unwrap();
            last = r;
            history.push(r);
        }
        // The arm ends stretched toward the target: residual = distance − reach.
        let expected = target.length() - 1.0;
        assert!((last - expected).abs() < 5e-3, "{last} vs {expected}");
        // No oscillation: the residual has settled.
        let tail = &history[history.len() - 50..];
        let spread = tail.iter().fold(0.0f32, |a, &r| a.max((r - last).abs()));
        assert!(spread < 1e-4, "still moving: {spread}");
    }
}

#[test]
fn stretched_arm_singularity_stays_bounded() {
    // Target straight along the stretched arm, slightly out of reach: J loses rank.
    let (skeleton, solver) = arm_solver(
        vec![TaskSpec::position(TIP, Vec3::ZERO)],
        SolverSettings {
            max_iterations: 50,
            ..arm_settings()
        },
    );
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    goals.tasks[0].point = Vec3::new(1.05, 0.0, 0.0);
    let mut pose = skeleton.rest_pose();
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    assert!(pose.is_finite());
    assert!((report.max_position_residual - 0.05).abs() < 1e-4);
    // Nothing spun wildly: every joint stays near rest.
    for &b in &[UPPER, FORE, HAND] {
        assert!(pose.rotations[b].angle_between(Quat::IDENTITY) < 0.1);
    }
}

#[test]
fn lower_priority_never_degrades_higher_priority() {
    let settings = SolverSettings {
        max_iterations: 1,
        ..arm_settings()
    };
    // Level 0: tip position. Level 1: tip orientation. Level 2: elbow position.
    let tasks = vec![
        TaskSpec::position(TIP, Vec3::ZERO),
        TaskSpec::orientation(TIP).at_level(1),
        TaskSpec::position(FORE, Vec3::ZERO).at_level(2),
    ];
    let (skeleton, solver) = arm_solver(tasks, settings);
    assert_eq!(solver.levels(), 3);
    let (_, primary_only) = arm_solver(
        vec![TaskSpec::position(TIP, Vec3::ZERO)],
        SolverSettings {
            max_iterations: 100,
            ..arm_settings()
        },
    );
    let mut g0 = primary_only.goals();
    let mut s0 = primary_only.scratch();
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    let mut rng = Rng(3);
    let tol = arm_settings().position_tolerance;
    let mut improved = 0;
    let cases = 150;
    for _ in 0..cases {
        let reach = random_arm_pose(&skeleton, &mut rng);
        let tip = skeleton.model_transform(&reach, TIP).translation;
        g0.tasks[0].point = tip;
        let mut pose = random_arm_pose(&skeleton, &mut rng);
        if !primary_only
            .solve(&skeleton, &mut pose, &g0, &mut s0)
            .unwrap()
            .converged
        {
            continue;
        }
        goals.tasks[0].point = tip;
        goals.tasks[1].rotation = Quat::from_scaled_axis(rng.unit_vec() * rng.range(0.0, 3.0));
        goals.tasks[2].point = rng.unit_vec() * 0.45;
        solver
            .evaluate_pose(&skeleton, &pose, &goals, &mut scratch)
            .unwrap();
        let start_orientation = scratch.residuals()[1];
        for _ in 0..60 {
            solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            let r0 = scratch.residuals()[0];
            assert!(r0 <= tol * 1.0001, "level-0 residual rose to {r0}");
        }
        if scratch.residuals()[1] < start_orientation * 0.9 {
            improved += 1;
        }
    }
    // The lower levels do act (in the null space of the higher ones).
    assert!(
        improved > cases / 2,
        "orientation improved in only {improved} cases"
    );
}

#[test]
fn null_space_posture_keeps_primary_and_moves_toward_reference() {
    let tol = arm_settings().position_tolerance;
    let posture_tasks = vec![
        TaskSpec::position(TIP, Vec3::ZERO),
        TaskSpec::posture(PostureReference::Rest, 0.2),
    ];
    let settings = SolverSettings {
        max_iterations: 1,
        ..arm_settings()
    };
    let (skeleton, solver) = arm_solver(posture_tasks, settings);
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    let rest = skeleton.rest_pose();
    let bones = [UPPER, FORE, HAND];
    let mut rng = Rng(11);
    let mut total_before = 0.0;
    let mut total_after = 0.0;
    let mut first_step_toward = 0;
    let cases = 100;
    for _ in 0..cases {
        let mut pose = random_arm_pose(&skeleton, &mut rng);
        goals.tasks[0].point = skeleton.model_transform(&pose, TIP).translation;
        let start = posture_sq(&pose, &rest, &bones);
        let mut prev = start;
        for step in 0..40 {
            solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            let r0 = scratch.residuals()[0];
            assert!(r0 <= tol * 1.0001, "primary residual {r0} at step {step}");
            let d = posture_sq(&pose, &rest, &bones);
            if step == 0 && d < start {
                // The sign: the projected step goes toward the reference.
                first_step_toward += 1;
            }
            prev = d;
        }
        // The solver's own posture residual (largest joint difference) agrees.
        assert!(scratch.residuals()[1] <= prev.sqrt() + 1e-4);
        total_before += start;
        total_after += prev;
    }
    assert!(first_step_toward >= cases * 9 / 10, "{first_step_toward}");
    assert!(
        total_after < 0.7 * total_before,
        "posture distance {total_before} -> {total_after}"
    );
}

#[test]
fn incoming_posture_pulls_toward_the_animated_pose() {
    let make = |posture: bool| {
        let mut tasks = vec![TaskSpec::position(TIP, Vec3::ZERO)];
        if posture {
            tasks.push(TaskSpec::posture(PostureReference::Incoming, 0.3));
        }
        arm_solver(
            tasks,
            SolverSettings {
                max_iterations: 200,
                ..arm_settings()
            },
        )
    };
    let (skeleton, plain) = make(false);
    let (_, with) = make(true);
    let bones = [UPPER, FORE, HAND];
    let mut rng = Rng(5);
    let (mut d_plain, mut d_with) = (0.0, 0.0);
    let mut cases = 0;
    for _ in 0..100 {
        let animated = random_arm_pose(&skeleton, &mut rng);
        let tip = skeleton.model_transform(&animated, TIP).translation;
        let target = tip + rng.unit_vec() * 0.15;
        let mut result = [0.0f32; 2];
        let mut clean = true;
        for (k, solver) in [&plain, &with].into_iter().enumerate() {
            let mut goals = solver.goals();
            goals.tasks[0].point = target;
            let mut scratch = solver.scratch();
            let mut pose = animated.clone();
            let report = solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            clean &= report.converged && report.limits_hit == 0;
            result[k] = posture_sq(&pose, &animated, &bones);
        }
        // Limit-free, reachable cases: the posture term can only bring the pose closer to
        // the animation than the plain minimum-norm steps.
        if clean {
            cases += 1;
            assert!(result[1] <= result[0] + 1e-4, "{result:?}");
            d_plain += result[0];
            d_with += result[1];
        }
    }
    assert!(cases >= 50, "{cases}");
    assert!(
        d_with < d_plain,
        "incoming posture {d_with} vs none {d_plain}"
    );
}

fn rig_with_root() -> Skeleton {
    let t = |x: f32, y: f32| BoneTransform::from_translation(Vec3::new(x, y, 0.0));
    Skeleton::try_new(vec![
        Bone::new("root", None, t(0.0, 0.0)),
        Bone::new("lift", Some(0), t(0.0, 0.0)),
        Bone::new("arm", Some(1), t(0.0, 0.2)),
        Bone::new("tip", Some(2), t(0.5, 0.0)),
    ])
    .unwrap()
}

#[test]
fn floating_root_and_slider_reach_far_targets() {
    let skeleton = rig_with_root();
    let joints = vec![
        JointSpec::floating(0),
        JointSpec::slider(1, Vec3::Y, 0.0, 0.5),
        JointSpec::hinge(2, Vec3::Z, -1.0, 1.0),
    ];
    let tasks = vec![
        TaskSpec::position(3, Vec3::ZERO),
        TaskSpec::orientation(0).with_weight(1.0),
    ];
    let solver = JacobianSolver::try_new(
        &skeleton,
        joints.clone(),
        tasks,
        SolverSettings {
            max_iterations: 200,
            ..SolverSettings::default()
        },
    )
    .unwrap();
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    goals.tasks[0].point = Vec3::new(3.0, 1.0, -2.0);
    let mut pose = skeleton.rest_pose();
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    assert!(report.converged, "{report:?}");
    let tip = skeleton.model_transform(&pose, 3).translation;
    assert!(tip.distance(goals.tasks[0].point) <= 1e-4);
    // The root kept its orientation (task 1) and moved.
    assert!(rotation_angle(pose.rotations[0], Quat::IDENTITY) < 1e-3);
    assert!(pose.translations[0].length() > 3.0);
    limits_respected(&skeleton, &joints, &pose).unwrap();
}

#[test]
fn slider_moves_within_its_range() {
    let skeleton = rig_with_root();
    let joints = vec![
        JointSpec::slider(1, Vec3::Y, 0.0, 0.5),
        JointSpec::hinge(2, Vec3::Z, -1.0, 1.0),
    ];
    let solver = JacobianSolver::try_new(
        &skeleton,
        joints.clone(),
        vec![TaskSpec::position(3, Vec3::ZERO)],
        SolverSettings {
            max_iterations: 200,
            ..SolverSettings::default()
        },
    )
    .unwrap();
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    // Reachable with the hinge at ±0.6435 rad (cos = 0.8); only +0.6435 keeps the slider in
    // range, at 0.7 − 0.2 − 0.3 = 0.2.
    goals.tasks[0].point = Vec3::new(0.4, 0.7, 0.0);
    let mut pose = skeleton.rest_pose();
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    assert!(report.converged);
    assert!(
        (pose.translations[1].y - 0.2).abs() < 1e-3,
        "{}",
        pose.translations[1]
    );
    // Unreachable above: the slider stops exactly at its top.
    goals.tasks[0].point = Vec3::new(0.0, 3.0, 0.0);
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    assert!(!report.converged);
    assert!(scratch.limited_joints()[0]);
    assert!((pose.translations[1].y - 0.5).abs() < 1e-5);
    limits_respected(&skeleton, &joints, &pose).unwrap();
}

#[test]
fn look_at_reaches_feasible_points() {
    let (skeleton, solver) = arm_solver(
        vec![TaskSpec::look_at(HAND, Vec3::X)],
        SolverSettings {
            max_iterations: 100,
            ..arm_settings()
        },
    );
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    let mut rng = Rng(21);
    for _ in 0..200 {
        let reach = random_arm_pose(&skeleton, &mut rng);
        let hand = skeleton.model_transform(&reach, HAND);
        let point = hand.translation + hand.rotation * Vec3::X * rng.range(0.5, 2.0);
        goals.tasks[0].point = point;
        let mut pose = skeleton.rest_pose();
        let mut ok = false;
        for _ in 0..4 {
            scratch.reset();
            ok = solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap()
                .converged;
            if ok {
                break;
            }
            pose = random_arm_pose(&skeleton, &mut rng);
        }
        assert!(ok);
        let hand = skeleton.model_transform(&pose, HAND);
        let aim = hand.rotation * Vec3::X;
        let to = point - hand.translation;
        let angle = aim.cross(to).length().atan2(aim.dot(to));
        assert!(angle <= 1e-3, "aim error {angle}");
    }
}

fn tower() -> (Skeleton, Vec<JointSpec>, Vec<BoneMass>) {
    let t = |y: f32| BoneTransform::from_translation(Vec3::new(0.0, y, 0.0));
    let skeleton = Skeleton::try_new(vec![
        Bone::new("foot", None, t(0.0)),
        Bone::new("shin", Some(0), t(0.05)),
        Bone::new("thigh", Some(1), t(0.45)),
        Bone::new("torso", Some(2), t(0.45)),
        Bone::new("head", Some(3), t(0.6)),
    ])
    .unwrap();
    let limit = JointLimit::SwingTwist(ik_core::limits::SwingTwistLimit {
        twist_axis: Vec3::Y,
        swing_axis: Vec3::X,
        swing_half_angles: Vec2::new(0.8, 0.8),
        twist_min: -0.5,
        twist_max: 0.5,
    });
    let joints = (1..4)
        .map(|b| JointSpec::ball(b).with_limit(limit))
        .collect();
    let masses = [(1, 8.0), (2, 12.0), (3, 35.0), (4, 6.0)]
        .into_iter()
        .map(|(bone, mass)| BoneMass {
            bone,
            mass,
            local_center: Vec3::new(0.0, 0.2, 0.0),
        })
        .collect();
    (skeleton, joints, masses)
}

fn com_of(skeleton: &Skeleton, pose: &Pose, masses: &[BoneMass]) -> Vec3 {
    let model = skeleton.model_transforms(pose);
    let total: f32 = masses.iter().map(|m| m.mass).sum();
    masses
        .iter()
        .map(|m| model[m.bone].transform_point(m.local_center) * m.mass)
        .sum::<Vec3>()
        / total
}

#[test]
fn center_of_mass_reaches_support_point_and_polygon() {
    let (skeleton, joints, masses) = tower();
    let solver = JacobianSolver::try_new(
        &skeleton,
        joints.clone(),
        vec![
            TaskSpec::center_of_mass(masses.clone(), Vec3::Y),
            TaskSpec::position(4, Vec3::ZERO)
                .with_axes(AxisMask::Y)
                .at_level(1),
        ],
        SolverSettings {
            max_iterations: 100,
            ..SolverSettings::default()
        },
    )
    .unwrap();
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    goals.tasks[1].point = Vec3::new(0.0, 1.4, 0.0);
    for support in [
        Vec3::new(0.1, 0.0, 0.05),
        Vec3::new(-0.2, 0.0, 0.0),
        Vec3::new(0.0, 0.0, 0.25),
    ] {
        goals.tasks[0].point = support;
        let mut pose = skeleton.rest_pose();
        let report = solver
            .solve(&skeleton, &mut pose, &goals, &mut scratch)
            .unwrap();
        let com = com_of(&skeleton, &pose, &masses);
        let off = Vec3::new(com.x - support.x, 0.0, com.z - support.z).length();
        assert!(off <= 1e-4, "com off by {off} ({report:?})");
        limits_respected(&skeleton, &joints, &pose).unwrap();
    }
    // Polygon: a square around (0.3, 0, 0); the centre of mass ends inside it.
    goals.tasks[0].support_polygon.extend([
        Vec3::new(0.25, 0.0, -0.05),
        Vec3::new(0.35, 0.0, -0.05),
        Vec3::new(0.35, 0.0, 0.05),
        Vec3::new(0.25, 0.0, 0.05),
    ]);
    let mut pose = skeleton.rest_pose();
    solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    let com = com_of(&skeleton, &pose, &masses);
    assert!(
        com.x >= 0.25 - 1e-4 && com.x <= 0.35 + 1e-4 && com.z.abs() <= 0.05 + 1e-4,
        "{com}"
    );
    // Already inside: the task is inactive and a converged pose does not move.
    let before = pose.clone();
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    assert!(report.converged);
    assert_eq!(pose, before);
}

fn planar_chain() -> Skeleton {
    let t = |x: f32| BoneTransform::from_translation(Vec3::new(x, 0.0, 0.0));
    Skeleton::try_new(vec![
        Bone::new("a", None, t(0.0)),
        Bone::new("b", Some(0), t(0.4)),
        Bone::new("c", Some(1), t(0.4)),
        Bone::new("tip", Some(2), t(0.4)),
    ])
    .unwrap()
}

#[test]
fn stiff_joints_move_less_and_locked_joints_not_at_all() {
    let skeleton = planar_chain();
    let solve = |stiff_a: f32, lock_a: bool| {
        let joints = vec![
            JointSpec::hinge(0, Vec3::Z, -2.0, 2.0).with_stiffness(stiff_a),
            JointSpec::hinge(1, Vec3::Z, -2.0, 2.0),
            JointSpec::hinge(2, Vec3::Z, -2.0, 2.0),
        ];
        let solver = JacobianSolver::try_new(
            &skeleton,
            joints,
            vec![TaskSpec::position(3, Vec3::ZERO).with_axes(AxisMask::Y)],
            SolverSettings::default(),
        )
        .unwrap();
        let mut goals = solver.goals();
        goals.tasks[0].point = Vec3::new(0.0, 0.3, 0.0);
        goals.joints_locked[0] = lock_a;
        let mut scratch = solver.scratch();
        let mut pose = skeleton.rest_pose();
        let report = solver
            .solve(&skeleton, &mut pose, &goals, &mut scratch)
            .unwrap();
        assert!(report.converged);
        pose
    };
    let soft = solve(1.0, false);
    let stiff = solve(100.0, false);
    let angle = |p: &Pose| p.rotations[0].angle_between(Quat::IDENTITY);
    assert!(
        angle(&stiff) < 0.2 * angle(&soft),
        "{} vs {}",
        angle(&stiff),
        angle(&soft)
    );
    let locked = solve(1.0, true);
    assert_eq!(locked.rotations[0], Quat::IDENTITY);
    assert!(locked.rotations[1].angle_between(Quat::IDENTITY) > 0.0);
}

#[test]
fn bad_setups_and_inputs_are_typed_errors() {
    let skeleton = arm_skeleton();
    let settings = SolverSettings::default();
    let make = |joints: Vec<JointSpec>, tasks: Vec<TaskSpec>| {
        JacobianSolver::try_new(&skeleton, joints, tasks, settings)
    };
    let pos = || vec![TaskSpec::position(TIP, Vec3::ZERO)];
    assert!(matches!(
        make(vec![JointSpec::ball(9)], pos()),
        Err(JacobianError::BoneOutOfRange { bone: 9, .. })
    ));
    assert!(matches!(
        make(vec![JointSpec::ball(1), JointSpec::ball(1)], pos()),
        Err(JacobianError::DuplicateJoint { bone: 1, .. })
    ));
    assert!(matches!(
        make(vec![JointSpec::hinge(1, Vec3::ZERO, 0.0, 1.0)], pos()),
        Err(JacobianError::InvalidJoint { joint: 0, .. })
    ));
    let slider_limit = JointLimit::Slider {
        axis: Vec3::X,
        min: 0.0,
        max: 1.0,
    };
    assert!(matches!(
        make(vec![JointSpec::ball(1).with_limit(slider_limit)], pos()),
        Err(JacobianError::InvalidJoint { .. })
    ));
    assert!(matches!(
        make(vec![JointSpec::ball(1).with_stiffness(0.0)], pos()),
        Err(JacobianError::InvalidJoint { .. })
    ));
    assert!(matches!(
        make(
            arm_joints(),
            vec![TaskSpec::position(TIP, Vec3::ZERO).with_axes(AxisMask {
                x: false,
                y: false,
                z: false
            })]
        ),
        Err(JacobianError::InvalidTask { task: 0, .. })
    ));
    assert!(matches!(
        make(
            arm_joints(),
            vec![
                TaskSpec::posture(PostureReference::Rest, 0.5),
                TaskSpec::posture(PostureReference::Incoming, 0.5)
            ]
        ),
        Err(JacobianError::InvalidTask { task: 1, .. })
    ));
    assert!(matches!(
        JacobianSolver::try_new(
            &skeleton,
            arm_joints(),
            pos(),
            SolverSettings {
                position_tolerance: -1.0,
                ..settings
            }
        ),
        Err(JacobianError::InvalidSettings { .. })
    ));
    assert_eq!(JointKind::Floating.dof(), 6);

    let solver = make(arm_joints(), pos()).unwrap();
    let mut scratch = solver.scratch();
    let mut goals = solver.goals();
    goals.tasks[0].point = Vec3::new(f32::NAN, 0.0, 0.0);
    let mut pose = skeleton.rest_pose();
    pose.rotations[FORE] = Quat::from_rotation_z(0.5);
    let before = pose.clone();
    assert_eq!(
        solver.solve(&skeleton, &mut pose, &goals, &mut scratch),
        Err(JacobianError::NonFiniteGoal { task: 0 })
    );
    assert_eq!(pose, before);
    goals.tasks[0].point = Vec3::X;
    let mut short = Pose::default();
    assert!(matches!(
        solver.solve(&skeleton, &mut short, &goals, &mut scratch),
        Err(JacobianError::Pose(
            SkeletonError::PoseLengthMismatch { .. }
        ))
    ));
    let other = make(arm_joints(), arm_tasks()).unwrap();
    assert!(matches!(
        solver.solve(&skeleton, &mut pose, &other.goals(), &mut scratch),
        Err(JacobianError::GoalsMismatch { .. })
    ));
}

#[test]
fn degenerate_setups_solve_without_panic() {
    let skeleton = arm_skeleton();
    // No tasks at all: trivially converged.
    let solver =
        JacobianSolver::try_new(&skeleton, arm_joints(), vec![], SolverSettings::default())
            .unwrap();
    let mut pose = skeleton.rest_pose();
    let report = solver
        .solve(&skeleton, &mut pose, &solver.goals(), &mut solver.scratch())
        .unwrap();
    assert!(report.converged);
    assert_eq!(pose, skeleton.rest_pose());
    // Every joint locked: no columns; the task cannot move and the solve stops, unconverged.
    let locked: Vec<JointSpec> = arm_joints()
        .into_iter()
        .map(|j| j.with_locked(true))
        .collect();
    let solver = JacobianSolver::try_new(
        &skeleton,
        locked,
        vec![TaskSpec::position(TIP, Vec3::ZERO)],
        SolverSettings::default(),
    )
    .unwrap();
    assert_eq!(solver.dof(), 0);
    let mut goals = solver.goals();
    goals.tasks[0].point = Vec3::new(0.0, 1.0, 0.0);
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut solver.scratch())
        .unwrap();
    assert!(!report.converged);
    assert_eq!(pose, skeleton.rest_pose());
    // Posture only: no rows, the pose goes to the reference.
    let solver = JacobianSolver::try_new(
        &skeleton,
        arm_joints(),
        vec![TaskSpec::posture(PostureReference::Rest, 0.5)],
        SolverSettings {
            max_iterations: 100,
            ..SolverSettings::default()
        },
    )
    .unwrap();
    let mut pose = random_arm_pose(&skeleton, &mut Rng(9));
    let report = solver
        .solve(&skeleton, &mut pose, &solver.goals(), &mut solver.scratch())
        .unwrap();
    assert!(report.converged, "{report:?}");
    assert!(posture_sq(&pose, &skeleton.rest_pose(), &[UPPER, FORE, HAND]) < 1e-6);
}

#[test]
fn channel_blend_weights_and_enabled_flags_act_per_solve() {
    let (skeleton, solver) = arm_solver(
        vec![
            TaskSpec::position(TIP, Vec3::ZERO),
            TaskSpec::orientation(TIP).with_enabled(false),
        ],
        SolverSettings {
            max_iterations: 100,
            ..arm_settings()
        },
    );
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    assert!(!goals.tasks[1].enabled);
    // Y is blended out: X and Z are reached, Y is left wherever the arm ends up.
    goals.tasks[0].point = Vec3::new(0.5, 5.0, 0.3);
    goals.tasks[0].channel_weights = Vec3::new(1.0, 0.0, 1.0);
    let mut pose = skeleton.rest_pose();
    pose.rotations[FORE] = Quat::from_rotation_z(0.5);
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    assert!(report.converged, "{report:?}");
    let tip = skeleton.model_transform(&pose, TIP).translation;
    assert!(
        (tip.x - 0.5).abs() <= 1e-4 && (tip.z - 0.3).abs() <= 1e-4,
        "{tip}"
    );
    assert!(tip.y < 1.0, "the unreachable Y was ignored");
    // Enabling the orientation task at run time makes it act.
    let mut reach = skeleton.rest_pose();
    reach.rotations[UPPER] = Quat::from_rotation_z(0.3);
    reach.rotations[FORE] = Quat::from_rotation_z(0.8);
    reach.rotations[HAND] = Quat::from_rotation_y(0.2);
    let target = skeleton.model_transform(&reach, TIP);
    goals.tasks[1].enabled = true;
    goals.tasks[1].rotation = target.rotation;
    goals.tasks[0].channel_weights = Vec3::ONE;
    goals.tasks[0].point = target.translation;
    let mut pose = skeleton.rest_pose();
    pose.rotations[FORE] = Quat::from_rotation_z(0.5);
    let report = solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    assert!(report.converged, "{report:?}");
    let tip = skeleton.model_transform(&pose, TIP);
    assert!(rotation_angle(tip.rotation, goals.tasks[1].rotation) <= 1e-3);
}
