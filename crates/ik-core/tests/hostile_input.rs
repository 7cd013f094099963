//! Regression tests for the hostile-input bugs of issue 11 (each failed before its fix): NaN
//! limit bounds, overflowing rotation vectors, zero quaternions in a pose, malformed humanoid
//! limits, rigs at the edge of f32's range, hinge ranges past ±π and a degenerate two-bone
//! target. The broad sweep is `tests/fuzz.rs`.

use core::f32::consts::PI;

use glam::{Quat, Vec3};
use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::humanoid::{
    FullBodyGoals, FullBodySolver, HumanoidBone, HumanoidError, HumanoidLimits, HumanoidMap,
};
use ik_core::jacobian::{
    Goals, JacobianError, JacobianSolver, JointSpec, SolverSettings, TaskSpec,
};
use ik_core::limits::{JointLimit, LimitError};
use ik_core::pose::{BoneTransform, Pose};
use ik_core::rotation::{from_rotation_vector, from_swing_vector_twist, to_rotation_vector};
use ik_core::skeleton::{Bone, Skeleton, SkeletonError};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

fn arm(scale: f32, offset: Vec3) -> Skeleton {
    Skeleton::try_new(vec![
        Bone::new("root", None, BoneTransform::from_translation(offset)),
        Bone::new(
            "upper",
            Some(0),
            BoneTransform::from_translation(Vec3::Y * scale),
        ),
        Bone::new(
            "lower",
            Some(1),
            BoneTransform::from_translation(Vec3::Y * scale),
        ),
        Bone::new(
            "hand",
            Some(2),
            BoneTransform::from_translation(Vec3::Y * scale),
        ),
    ])
    .unwrap()
}

#[test]
fn slider_with_nan_bound_does_not_panic_and_is_rejected_by_validate() {
    for (min, max) in [
        (f32::NAN, 1.0),
        (0.0, f32::NAN),
        (1.0, -1.0),
        (f32::NAN, f32::NAN),
    ] {
        let lim = JointLimit::Slider {
            axis: Vec3::X,
            min,
            max,
        };
        assert!(matches!(lim.validate(), Err(LimitError::InvalidRange(_))));
        let mut q = Quat::IDENTITY;
        let mut t = Vec3::new(5.0, 1.0, 0.0);
        // A malformed limit behaves like `Free`: nothing moves, everything is inside.
        assert!(!lim.clamp(Quat::IDENTITY, Vec3::ZERO, &mut q, &mut t));
        assert_eq!(t, Vec3::new(5.0, 1.0, 0.0));
        assert!(lim.contains(Quat::IDENTITY, Vec3::ZERO, q, t, 0.0));
    }
    // A good slider far out of range clamps to a finite value (f64 offsets, no overflow).
    let lim = JointLimit::Slider {
        axis: Vec3::X,
        min: -1.0,
        max: 1.0,
    };
    let mut q = Quat::IDENTITY;
    let mut t = Vec3::new(3e38, -3e38, 0.0);
    assert!(lim.clamp(Quat::IDENTITY, Vec3::new(-3e38, 0.0, 0.0), &mut q, &mut t));
    assert!(t.is_finite(), "{t}");
    assert!(lim.contains(Quat::IDENTITY, Vec3::new(-3e38, 0.0, 0.0), q, t, 1e32));
}

#[test]
fn huge_rotation_vectors_stay_finite_and_unit() {
    for v in [
        Vec3::new(0.0, 0.0, 1e20),
        Vec3::new(3e38, -3e38, 3e38),
        Vec3::splat(f32::MAX),
    ] {
        let q = from_rotation_vector(v);
        assert!(
            q.is_finite() && (q.length() - 1.0).abs() < 1e-5,
            "{v} -> {q}"
        );
        // The axis is kept.
        let r = to_rotation_vector(q);
        assert!(r.length() < 1e-6 || r.normalize().cross(v.normalize()).length() < 1e-4);
        let q = from_swing_vector_twist(v, Vec3::Z, 1e30);
        assert!(
            q.is_finite() && (q.length() - 1.0).abs() < 1e-5,
            "{v} -> {q}"
        );
    }
    // The angle is reduced modulo 2π (of the f32 value, computed in f64).
    for a in [1e20f32, 3e19, 2.5e38] {
        let reduced = (f64::from(a) % core::f64::consts::TAU) as f32;
        let q = from_rotation_vector(Vec3::Z * a);
        assert!(
            q.dot(Quat::from_rotation_z(reduced)).abs() > 1.0 - 1e-6,
            "{a}"
        );
    }
}

#[test]
fn zero_and_scaled_quaternions_fail_pose_validation() {
    let s = arm(1.0, Vec3::ZERO);
    for bad in [
        Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
        Quat::from_xyzw(0.0, 0.0, 0.0, 2.0),
    ] {
        let mut pose = s.rest_pose();
        pose.rotations[1] = bad;
        assert!(matches!(
            pose.validate(&s),
            Err(SkeletonError::NonUnitRotation { ref bone, .. }) if bone == "upper"
        ));
    }
    // Ordinary drift passes.
    let mut pose = s.rest_pose();
    pose.rotations[1] = Quat::from_xyzw(0.0, 0.0, 0.0, 1.0 + 1e-5);
    assert!(pose.validate(&s).is_ok());
}

#[test]
fn jacobian_floating_root_rejects_zero_quaternion_and_leaves_pose() {
    let s = arm(1.0, Vec3::ZERO);
    let solver = JacobianSolver::try_new(
        &s,
        vec![
            JointSpec::floating(0),
            JointSpec::ball(1),
            JointSpec::ball(2),
        ],
        vec![TaskSpec::position(3, Vec3::ZERO)],
        SolverSettings::default(),
    )
    .unwrap();
    let mut goals = solver.goals();
    goals.tasks[0].point = Vec3::new(1.0, 1.0, 0.5);
    let mut scratch = solver.scratch();
    let mut pose = s.rest_pose();
    pose.rotations[0] = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0);
    let before = pose.clone();
    let r = solver.solve(&s, &mut pose, &goals, &mut scratch);
    assert!(matches!(
        r,
        Err(JacobianError::Pose(SkeletonError::NonUnitRotation { .. }))
    ));
    assert_eq!(pose.translations, before.translations);
    assert!(pose.rotations[0] == before.rotations[0]);
}

#[test]
fn full_body_with_limits_rejects_malformed_hinges() {
    let s = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let good = HumanoidLimits::anatomical(&s, &map).unwrap();
    let JointLimit::Hinge { axis, min, max } = good.get(HumanoidBone::LeftLowerArm) else {
        panic!("the elbow is a hinge");
    };
    for bad in [
        JointLimit::Hinge {
            axis: Vec3::NAN,
            min,
            max,
        },
        JointLimit::Hinge {
            axis,
            min: max + 1.0,
            max: min,
        },
        JointLimit::Hinge {
            axis: axis * 3.0,
            min,
            max,
        },
    ] {
        let mut limits = good.clone();
        limits.set(HumanoidBone::LeftLowerArm, bad);
        assert!(matches!(
            limits.validate(),
            Err(HumanoidError::InvalidLimit {
                role: HumanoidBone::LeftLowerArm,
                ..
            })
        ));
        let r = FullBodySolver::with_limits(&s, &map, limits);
        assert!(
            matches!(
                r,
                Err(HumanoidError::InvalidLimit {
                    role: HumanoidBone::LeftLowerArm,
                    ..
                })
            ),
            "{bad:?}"
        );
    }
    // The defaults pass and solve to a finite pose.
    let mut solver = FullBodySolver::with_limits(&s, &map, good).unwrap();
    let mut pose = s.rest_pose();
    let goals: FullBodyGoals = solver.goals_at_pose(&s, &pose);
    solver.solve(&s, &mut pose, &goals).unwrap();
    assert!(pose.is_finite());
}

#[test]
fn rig_beyond_coordinate_range_is_rejected_and_large_rig_solves_finite() {
    // Coordinates ~1e19: rejected at construction with a clear error.
    let bones = |scale: f32, offset: Vec3| {
        vec![
            Bone::new("root", None, BoneTransform::from_translation(offset)),
            Bone::new(
                "upper",
                Some(0),
                BoneTransform::from_translation(Vec3::Y * scale),
            ),
            Bone::new(
                "lower",
                Some(1),
                BoneTransform::from_translation(Vec3::Y * scale),
            ),
        ]
    };
    assert!(matches!(
        Skeleton::try_new(bones(1e19, Vec3::splat(1e19))),
        Err(SkeletonError::NonFiniteRest { .. })
    ));
    // Scales multiplying down the chain out of range, too.
    let mut b = bones(1.0, Vec3::ZERO);
    for bone in &mut b {
        bone.rest.scale = Vec3::splat(1e5);
    }
    assert!(Skeleton::try_new(b).is_err());

    // Large but in range: a floating root solve gives a finite, in-range result.
    let s = arm(1e13, Vec3::splat(1e13));
    let solver = JacobianSolver::try_new(
        &s,
        vec![JointSpec::floating(0), JointSpec::ball(1)],
        vec![TaskSpec::position(3, Vec3::ZERO)],
        SolverSettings::default(),
    )
    .unwrap();
    assert!(solver.length_scale().is_finite());
    let mut goals: Goals = solver.goals();
    goals.tasks[0].point = Vec3::new(2e13, 3e13, -1e13);
    let mut scratch = solver.scratch();
    let mut pose = s.rest_pose();
    solver.solve(&s, &mut pose, &goals, &mut scratch).unwrap();
    assert!(pose.is_finite());
    // A goal beyond the range is an error, the pose untouched.
    goals.tasks[0].point = Vec3::new(1e19, 0.0, 0.0);
    let before = pose.clone();
    assert!(matches!(
        solver.solve(&s, &mut pose, &goals, &mut scratch),
        Err(JacobianError::NonFiniteGoal { task: 0 })
    ));
    assert_eq!(pose, before);
}

#[test]
fn hinge_range_past_pi_is_consistent() {
    let lim = JointLimit::Hinge {
        axis: Vec3::X,
        min: 2.0,
        max: 4.0,
    };
    assert!(lim.validate().is_ok());
    let rest = Quat::IDENTITY;
    let at = |a: f32| Quat::from_rotation_x(a);
    // −2.5 rad is 3.78 rad: inside.
    assert!(lim.contains(rest, Vec3::ZERO, at(-2.5), Vec3::ZERO, 0.0));
    assert!(lim.contains(rest, Vec3::ZERO, at(PI), Vec3::ZERO, 0.0));
    assert!(lim.contains(rest, Vec3::ZERO, at(2.5), Vec3::ZERO, 0.0));
    assert!(!lim.contains(rest, Vec3::ZERO, at(0.0), Vec3::ZERO, 1e-4));
    assert!(!lim.contains(rest, Vec3::ZERO, at(-2.0), Vec3::ZERO, 1e-4));
    // Inside: untouched.
    let mut q = at(-2.5);
    assert!(!lim.clamp(rest, Vec3::ZERO, &mut q, &mut Vec3::ZERO.clone()));
    // Outside: clamped to the nearer bound around the circle, and then inside.
    for a in [-2.0f32, -1.0, 0.0, 1.0, 1.9, -2.2] {
        let mut q = at(a);
        let mut t = Vec3::ZERO;
        assert!(lim.clamp(rest, Vec3::ZERO, &mut q, &mut t), "{a}");
        assert!(lim.contains(rest, Vec3::ZERO, q, t, 1e-4), "{a}: {q}");
        let to_min = (a - 2.0).abs();
        let expected = if to_min <= (a + 2.0 * PI - 4.0).abs() {
            2.0
        } else {
            4.0
        };
        assert!(q.angle_between(at(expected)) < 1e-4, "{a}: {q}");
    }
    // A range at least a whole turn wide contains everything.
    let full = JointLimit::Hinge {
        axis: Vec3::X,
        min: -4.0,
        max: 4.0,
    };
    for a in [-3.0f32, 0.0, 3.1, PI] {
        assert!(full.contains(rest, Vec3::ZERO, at(a), Vec3::ZERO, 0.0));
    }
    // The twist range of a swing–twist limit follows the same rule.
    let st = ik_core::limits::SwingTwistLimit {
        twist_axis: Vec3::X,
        swing_axis: Vec3::Y,
        swing_half_angles: glam::Vec2::splat(0.5),
        twist_min: 2.0,
        twist_max: 4.0,
    };
    assert!(st.contains(at(-2.5), 0.0));
    let c = st.clamp_delta(at(0.5)).unwrap();
    assert!(st.contains(c, 1e-4));
}

#[test]
fn two_bone_target_at_the_shoulder_is_status_not_error() {
    let s = arm(0.3, Vec3::ZERO);
    let ik = TwoBoneIk::try_new(&s, 1, 2, 3).unwrap();
    let shoulder = s.model_transform(&s.rest_pose(), 1).translation;
    for d in [1e-6f32, 1e-7, 1e-5, 3e-6, 0.0] {
        for pole in [
            Vec3::new(0.0, 0.3, 1.0),
            Vec3::new(5.0, -2.0, 1e-3),
            shoulder,
        ] {
            let mut pose = s.rest_pose();
            let goal = LimbGoal::new(shoulder + Vec3::new(d, 0.0, d * 0.5)).with_pole(pole);
            let r = ik.solve(&s, &mut pose, &goal);
            let report = r.unwrap_or_else(|e| panic!("d = {d}, pole {pole}: {e}"));
            assert!(pose.is_finite());
            assert!(report.position_error.is_finite());
        }
    }
    // The case found by fuzzing: a slanted arm, the target 1e-6 from the shoulder, the pole
    // off to the side (the root's frame rotation is then near a half turn).
    let v = Vec3::new;
    let s = Skeleton::try_new(vec![
        Bone::new(
            "root",
            None,
            BoneTransform::from_translation(v(0.578_672_3, 0.036_406_37, 0.032_597_51)),
        ),
        Bone::new(
            "upper",
            Some(0),
            BoneTransform::from_translation(v(-0.153_843_25, 0.234_087_7, 0.107_402_07)),
        ),
        Bone::new(
            "lower",
            Some(1),
            BoneTransform::from_translation(v(-0.275_551_68, -0.062_018_536, -0.101_118_71)),
        ),
        Bone::new(
            "hand",
            Some(2),
            BoneTransform::from_translation(v(0.128_955_78, -0.197_135_67, 0.185_763_14)),
        ),
    ])
    .unwrap();
    let ik = TwoBoneIk::try_new(&s, 1, 2, 3).unwrap();
    let shoulder = s.model_transform(&s.rest_pose(), 1).translation;
    let mut pose: Pose = s.rest_pose();
    let goal = LimbGoal::new(shoulder + v(1.5e-7, 6.6e-7, 7.5e-7)).with_pole(v(
        0.943_686,
        0.008_714_557,
        -0.673_793_4,
    ));
    let report = ik.solve(&s, &mut pose, &goal).unwrap();
    assert!(pose.is_finite() && report.position_error.is_finite());
}

#[test]
fn subnormal_stiffness_is_rejected_at_set_up() {
    // Found by the fuzzer: a stiffness of 1e-40 made an infinite column scale and `Ok` with a
    // NaN pose.
    let s = arm(1.0, Vec3::ZERO);
    for k in [1e-40, 0.0, -1.0, f32::NAN, 1e30] {
        let r = JacobianSolver::try_new(
            &s,
            vec![JointSpec::ball(1).with_stiffness(k)],
            vec![TaskSpec::position(3, Vec3::ZERO)],
            SolverSettings::default(),
        );
        assert!(
            matches!(r, Err(JacobianError::InvalidJoint { joint: 0, .. })),
            "{k}"
        );
    }
}

#[test]
fn giant_limb_with_orientation_goal_solves() {
    // Found by the fuzzer: limbs ~1e10 long overflowed the tip's norm product (DegeneratePose).
    let s = arm(1e10, Vec3::ZERO);
    let ik = TwoBoneIk::try_new(&s, 1, 2, 3).unwrap();
    let mut pose = s.rest_pose();
    let goal = LimbGoal::new(Vec3::new(1.1e10, 1.5e10, 0.3e10))
        .with_pole(Vec3::new(1.1e10, 1.5e10, 3e10))
        .with_orientation(Quat::from_rotation_y(0.7));
    let report = ik.solve(&s, &mut pose, &goal).unwrap();
    assert!(pose.is_finite() && report.reachable);
    let tip = s.model_transform(&pose, 3);
    assert!(tip.translation.distance(goal.target) < 1e-4 * 1e10);
    assert!(tip.rotation.dot(Quat::from_rotation_y(0.7)).abs() > 1.0 - 1e-5);
}

#[test]
fn nearly_unit_axes_clamp_to_values_inside() {
    // Found by the fuzzer: an axis 0.09 % longer than unit (valid) made the slider clamp to an
    // offset `contains` judged outside.
    let axis = Vec3::new(-0.15173924, 0.5171331, -0.8414948);
    assert!(
        (axis.length() - 1.0).abs() > 1e-4
            && JointLimit::Slider {
                axis,
                min: 0.0,
                max: 1.0
            }
            .is_valid()
    );
    for lim in [
        JointLimit::Slider {
            axis,
            min: -3.2265587,
            max: -2.543547,
        },
        JointLimit::Hinge {
            axis,
            min: 0.5,
            max: 2.9,
        },
    ] {
        let mut q = Quat::from_rotation_y(-2.0);
        let mut t = Vec3::new(1.0223216, -0.6297476, 0.72932243);
        assert!(lim.clamp(Quat::IDENTITY, Vec3::ZERO, &mut q, &mut t));
        assert!(
            lim.contains(Quat::IDENTITY, Vec3::ZERO, q, t, 1e-5),
            "{lim:?}: {q} {t}"
        );
    }
}
