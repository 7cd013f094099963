//! Analytic two-bone limb IK: round trips on random rigs (random lengths, rest rotations and
//! local bone axes), continuity along a path, degenerate inputs, weights, flex limits, legs.

use core::f32::consts::{FRAC_PI_2, PI};

use glam::{Quat, Vec3};
use ik_core::analytic::{AnalyticError, LimbGoal, LimbReport, LimbSettings, TwoBoneIk};
use ik_core::{Bone, BoneTransform, Pose, Skeleton};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// A limb rig: base (model root, with scale) → shoulder → [twist] → elbow → wrist → hand end.
struct Rig {
    skeleton: Skeleton,
    shoulder: usize,
    elbow: usize,
    wrist: usize,
}

#[derive(Clone, Debug)]
struct RigParams {
    base_translation: Vec3,
    base_rotation: Vec3,
    base_scale: f32,
    shoulder_rotation: Vec3,
    upper_axis: Vec3,
    upper_length: f32,
    twist: Option<Vec3>,
    elbow_rotation: Vec3,
    lower_axis: Vec3,
    lower_length: f32,
    wrist_rotation: Vec3,
}

fn rot(v: Vec3) -> Quat {
    Quat::from_scaled_axis(v)
}

fn build_rig(p: &RigParams) -> Rig {
    let mut bones = vec![
        Bone::new(
            "base",
            None,
            BoneTransform {
                translation: p.base_translation,
                rotation: rot(p.base_rotation),
                scale: Vec3::splat(p.base_scale),
            },
        ),
        Bone::new(
            "shoulder",
            Some(0),
            BoneTransform::from_translation_rotation(
                Vec3::new(0.1, 0.3, -0.05),
                rot(p.shoulder_rotation),
            ),
        ),
    ];
    let upper = p.upper_axis * p.upper_length;
    let elbow_parent = match p.twist {
        Some(t) => {
            // A twist bone halfway along the upper segment, with its own rest rotation.
            let q = rot(t);
            bones.push(Bone::new(
                "upper_twist",
                Some(1),
                BoneTransform::from_translation_rotation(upper * 0.5, q),
            ));
            bones.push(Bone::new(
                "elbow",
                Some(2),
                BoneTransform::from_translation_rotation(
                    q.inverse() * (upper * 0.5),
                    rot(p.elbow_rotation),
                ),
            ));
            3
        }
        None => {
            bones.push(Bone::new(
                "elbow",
                Some(1),
                BoneTransform::from_translation_rotation(upper, rot(p.elbow_rotation)),
            ));
            2
        }
    };
    bones.push(Bone::new(
        "wrist",
        Some(elbow_parent),
        BoneTransform::from_translation_rotation(
            p.lower_axis * p.lower_length,
            rot(p.wrist_rotation),
        ),
    ));
    bones.push(Bone::new(
        "hand_end",
        Some(elbow_parent + 1),
        BoneTransform::from_translation(Vec3::new(0.0, 0.08, 0.01)),
    ));
    Rig {
        skeleton: Skeleton::try_new(bones).unwrap(),
        shoulder: 1,
        elbow: elbow_parent,
        wrist: elbow_parent + 1,
    }
}

fn axis_strategy() -> impl Strategy<Value = Vec3> {
    prop_oneof![
        Just(Vec3::X),
        Just(Vec3::NEG_Z),
        Just(Vec3::Y),
        (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0).prop_filter_map("non-zero axis", |(x, y, z)| {
            Vec3::new(x, y, z)
                .try_normalize()
                .filter(|v| v.length() > 0.5)
        }),
    ]
}

fn vec_strategy(r: f32) -> impl Strategy<Value = Vec3> {
    (-r..r, -r..r, -r..r).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

prop_compose! {
    fn rig_strategy()(
        base_translation in vec_strategy(2.0),
        base_rotation in vec_strategy(3.0),
        base_scale in 0.5f32..2.0,
        shoulder_rotation in vec_strategy(3.0),
        upper_axis in axis_strategy(),
        upper_length in 0.1f32..2.0,
        twist in proptest::option::of(vec_strategy(3.0)),
        elbow_rotation in vec_strategy(3.0),
        lower_axis in axis_strategy(),
        lower_length in 0.1f32..2.0,
        wrist_rotation in vec_strategy(3.0),
    ) -> RigParams {
        RigParams {
            base_translation, base_rotation, base_scale, shoulder_rotation, upper_axis,
            upper_length, twist, elbow_rotation, lower_axis, lower_length, wrist_rotation,
        }
    }
}

/// A fixed rig with oblique bone axes and non-trivial rest rotations.
fn oblique_rig(l1: f32, l2: f32) -> Rig {
    build_rig(&RigParams {
        base_translation: Vec3::new(0.3, 1.0, -0.2),
        base_rotation: Vec3::new(0.2, 0.9, -0.3),
        base_scale: 1.0,
        shoulder_rotation: Vec3::new(-0.7, 0.4, 1.1),
        upper_axis: Vec3::new(0.3, -0.8, 0.5).normalize(),
        upper_length: l1,
        twist: None,
        elbow_rotation: Vec3::new(0.1, 0.6, -0.4),
        lower_axis: Vec3::NEG_Z,
        lower_length: l2,
        wrist_rotation: Vec3::new(0.5, -0.2, 0.3),
    })
}

struct Limb {
    shoulder: Vec3,
    elbow: Vec3,
    wrist: Vec3,
    wrist_rotation: Quat,
}

fn limb(rig: &Rig, pose: &Pose) -> Limb {
    let m = rig.skeleton.model_transforms(pose);
    Limb {
        shoulder: m[rig.shoulder].translation,
        elbow: m[rig.elbow].translation,
        wrist: m[rig.wrist].translation,
        wrist_rotation: m[rig.wrist].rotation,
    }
}

fn flex_of(l: &Limb) -> f32 {
    (l.elbow - l.shoulder)
        .normalize()
        .angle_between((l.wrist - l.elbow).normalize())
}

/// Component of the elbow normal to the shoulder→`target` line.
fn elbow_side(l: &Limb, target: Vec3) -> Vec3 {
    let dir = (target - l.shoulder).normalize();
    let e = l.elbow - l.shoulder;
    e - dir * e.dot(dir)
}

/// Angle of the rotation between `a` and `b`, accurate near zero (unlike `2 acos |a·b|`, which
/// is coarse in f32 there).
fn quat_angle(a: Quat, b: Quat) -> f32 {
    let d = a.normalize().inverse() * b.normalize();
    2.0 * d.xyz().length().atan2(d.w.abs())
}

/// A pose of `rig` with flex `flex` (about the rest bend normal), the given shoulder and wrist
/// local rotations and a twist of the forearm about its own axis.
fn pose_with_flex(rig: &Rig, shoulder: Quat, flex: f32, forearm_twist: f32, wrist: Quat) -> Pose {
    let s = &rig.skeleton;
    let rest = s.rest_model_transforms();
    let a = rest[rig.elbow].translation - rest[rig.shoulder].translation;
    let b = rest[rig.wrist].translation - rest[rig.elbow].translation;
    let n_model = a.cross(b).normalize();
    let rest_flex = a.angle_between(b);
    let elbow_rest = rest[rig.elbow].rotation;
    let h_local = elbow_rest.inverse() * n_model;
    let lower_local = s.rest_bone_direction(rig.elbow, rig.wrist).unwrap();
    let mut pose = s.rest_pose();
    pose.rotations[rig.shoulder] = shoulder;
    pose.rotations[rig.elbow] = s.bones()[rig.elbow].rest.rotation
        * Quat::from_axis_angle(h_local, flex - rest_flex)
        * Quat::from_axis_angle(lower_local, forearm_twist);
    pose.rotations[rig.wrist] = wrist;
    pose
}

fn lengths(l: &Limb) -> [f32; 2] {
    [l.elbow.distance(l.shoulder), l.wrist.distance(l.elbow)]
}

fn assert_finite(pose: &Pose) {
    assert!(pose.is_finite(), "pose has NaN/inf: {pose:?}");
}

proptest! {
    #![proptest_config(ProptestConfig {
        // 256 by default; `PROPTEST_CASES=N` to stress.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/analytic.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// Random rig, random joint angles → FK → target, orientation and a pole on the elbow's
    /// side → solve from a perturbed start: the wrist lands on the target with the target
    /// rotation, the elbow sits where it was (on the pole's side), lengths are unchanged.
    #[test]
    fn round_trip_random_rigs(
        params in rig_strategy(),
        shoulder in vec_strategy(3.0),
        flex in 0.02f32..3.1,
        forearm_twist in -3.0f32..3.0,
        wrist in vec_strategy(3.0),
        pole_along in -1.0f32..1.0,
        pole_out in 0.2f32..3.0,
        perturb in vec_strategy(1.0),
        from_rest in any::<bool>(),
    ) {
        let rig = build_rig(&params);
        let s = &rig.skeleton;
        let ik = TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.wrist).unwrap();
        let rest = limb(&rig, &s.rest_pose());
        // The truth pose is built about the rest bend normal, so the rest limb must be bent.
        prop_assume!(flex_of(&rest) > 1e-2 && flex_of(&rest) < PI - 1e-2);
        let rest_lengths = lengths(&rest);
        let total = rest_lengths[0] + rest_lengths[1];
        prop_assert!((ik.rest_lengths()[0] - rest_lengths[0]).abs() < 1e-5 * total);

        let truth = limb(&rig, &pose_with_flex(&rig, rot(shoulder), flex, forearm_twist, rot(wrist)));
        let target = truth.wrist;
        let dir = (target - truth.shoulder).normalize();
        let side = elbow_side(&truth, target).normalize();
        let pole = truth.shoulder + dir * (pole_along * total) + side * (pole_out * total);

        let mut pose = s.rest_pose();
        if !from_rest {
            pose.rotations[rig.shoulder] = rot(perturb) * pose.rotations[rig.shoulder];
            pose.rotations[rig.elbow] = rot(perturb * 0.5) * pose.rotations[rig.elbow];
        }
        let goal = LimbGoal::new(target).with_orientation(truth.wrist_rotation).with_pole(pole);
        let report = ik.solve(s, &mut pose, &goal).unwrap();
        assert_finite(&pose);
        let got = limb(&rig, &pose);

        let err = got.wrist.distance(target);
        prop_assert!(err < 1e-4 * total, "wrist error {err} (limb {total})");
        prop_assert!(report.position_error < 1e-4 * total);
        prop_assert!(report.reachable);
        prop_assert!(!report.pole_fallback);
        let ang = quat_angle(got.wrist_rotation, truth.wrist_rotation);
        prop_assert!(ang < 1e-3, "wrist orientation error {ang}");
        prop_assert!(elbow_side(&got, target).dot(side) > 0.0, "elbow not on the pole's side");
        let elbow_err = got.elbow.distance(truth.elbow);
        prop_assert!(elbow_err < 1e-3 * total, "elbow moved off the unique solution by {elbow_err}");
        prop_assert!((flex_of(&got) - flex).abs() < 2e-3);
        prop_assert!((report.flex_angle - flex).abs() < 2e-3);
        let l = lengths(&got);
        for k in 0..2 {
            prop_assert!((l[k] - rest_lengths[k]).abs() < 1e-5 * total, "segment {k} changed length");
        }
        // Only the three limb bones are written.
        let untouched = s.rest_pose();
        prop_assert_eq!(pose.rotations[0], untouched.rotations[0]);
        prop_assert_eq!(pose.rotations[s.len() - 1], untouched.rotations[s.len() - 1]);
        prop_assert_eq!(&pose.translations, &untouched.translations);
    }

    /// Any finite target, pole and start: no NaN, lengths unchanged, the report is consistent
    /// with forward kinematics, and the limb points at the target.
    #[test]
    fn arbitrary_targets_never_nan(
        params in rig_strategy(),
        target in vec_strategy(6.0),
        pole in vec_strategy(6.0),
        start in vec_strategy(3.0),
    ) {
        let rig = build_rig(&params);
        let s = &rig.skeleton;
        let ik = TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.wrist).unwrap();
        let mut pose = s.rest_pose();
        pose.rotations[rig.shoulder] = rot(start);
        let report = ik.solve(s, &mut pose, &LimbGoal::new(target).with_pole(pole)).unwrap();
        assert_finite(&pose);
        let got = limb(&rig, &pose);
        let rest_lengths = lengths(&limb(&rig, &s.rest_pose()));
        let total = rest_lengths[0] + rest_lengths[1];
        let l = lengths(&got);
        prop_assert!((l[0] - rest_lengths[0]).abs() < 1e-5 * total);
        prop_assert!((l[1] - rest_lengths[1]).abs() < 1e-5 * total);
        let fk_err = got.wrist.distance(target);
        prop_assert!((fk_err - report.position_error).abs() < 1e-4 * total);
        let d = target - got.shoulder;
        if report.reachable {
            prop_assert!(fk_err < 1e-4 * total);
        } else if d.length() > 1e-3 * total {
            // Out of reach: the wrist lies on the shoulder→target ray.
            let w = (got.wrist - got.shoulder).normalize_or_zero();
            prop_assert!(w.dot(d.normalize()) > 1.0 - 1e-4 || l[0] == l[1]);
        }
    }

    /// Flex limits hold for any target, and `flex_limited` is reported when they bind.
    #[test]
    fn flex_limits_respected(
        target in vec_strategy(3.0),
        min in 0.0f32..1.0,
        span in 0.2f32..2.0,
    ) {
        let rig = oblique_rig(0.6, 0.5);
        let s = &rig.skeleton;
        let max = (min + span).min(PI);
        let settings = LimbSettings::default().with_flex_limits(min, max);
        let ik = TwoBoneIk::try_with_settings(s, rig.shoulder, rig.elbow, rig.wrist, settings).unwrap();
        let mut pose = s.rest_pose();
        let report = ik.solve(s, &mut pose, &LimbGoal::new(target)).unwrap();
        let got = limb(&rig, &pose);
        let flex = flex_of(&got);
        prop_assert!(flex >= min - 2e-3 && flex <= max + 2e-3, "flex {flex} outside [{min}, {max}]");
        prop_assert!(report.flex_angle >= min - 1e-5 && report.flex_angle <= max + 1e-5);
        // Geometry: the flex the target needs, without limits.
        let d = target.distance(got.shoulder);
        let needed = ((d * d - 0.61) / 0.6).clamp(-1.0, 1.0).acos();
        let outside = needed < min - 1e-3 || needed > max + 1e-3;
        let borderline = (needed - min).abs() < 2e-3 || (needed - max).abs() < 2e-3;
        if !borderline {
            prop_assert_eq!(report.flex_limited, outside, "needed {}", needed);
        }
        if outside {
            prop_assert!(!report.reachable);
        }
    }
}

#[test]
fn smooth_circle_gives_continuous_elbow() {
    let rig = oblique_rig(0.55, 0.45);
    let s = &rig.skeleton;
    let ik = TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let shoulder = limb(&rig, &s.rest_pose()).shoulder;
    let center = shoulder + Vec3::new(0.2, -0.3, 0.45);
    let radius = 0.3;
    let pole = shoulder + Vec3::new(-1.0, -0.5, -0.3);
    for use_pole in [true, false] {
        let mut pose = s.rest_pose();
        let mut prev: Option<Limb> = None;
        let mut worst_ratio = 0.0f32;
        let steps = 1000;
        for i in 0..=steps {
            let a = i as f32 / steps as f32 * 2.0 * PI;
            let target = center + radius * Vec3::new(a.cos(), a.sin() * 0.6, a.sin() * 0.8);
            let goal = if use_pole {
                LimbGoal::new(target).with_pole(pole)
            } else {
                LimbGoal::new(target)
            };
            let report = ik.solve(s, &mut pose, &goal).unwrap();
            assert!(report.reachable && report.position_error < 1e-5);
            let now = limb(&rig, &pose);
            assert!(now.wrist.distance(target) < 1e-4);
            if let Some(p) = &prev {
                let tip_step = p.wrist.distance(now.wrist);
                let elbow_step = p.elbow.distance(now.elbow);
                worst_ratio = worst_ratio.max(elbow_step / tip_step.max(1e-6));
                // A flip would jump the elbow across the limb (tens of centimetres).
                assert!(elbow_step < 0.01, "step {i}: elbow jumped {elbow_step}");
            }
            prev = Some(now);
        }
        assert!(
            worst_ratio < 5.0,
            "elbow moved {worst_ratio}x the wrist step"
        );
    }
}

fn solve_on(rig: &Rig, ik: &TwoBoneIk, pose: &mut Pose, goal: LimbGoal) -> (LimbReport, Limb) {
    let report = ik.solve(&rig.skeleton, pose, &goal).unwrap();
    assert_finite(pose);
    (report, limb(rig, pose))
}

#[test]
fn beyond_reach_extends_fully_toward_target() {
    let rig = oblique_rig(0.5, 0.3);
    let ik = TwoBoneIk::try_new(&rig.skeleton, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let mut pose = rig.skeleton.rest_pose();
    let shoulder = limb(&rig, &pose).shoulder;
    let dir = Vec3::new(0.3, -0.4, 0.8).normalize();
    let (report, got) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(shoulder + dir * 2.0));
    assert!(!report.reachable);
    assert!(report.flex_angle < 1e-3 && flex_of(&got) < 2e-3);
    assert!(got.wrist.distance(shoulder + dir * 0.8) < 1e-4);
    assert!((report.position_error - 1.2).abs() < 1e-4);
}

#[test]
fn too_close_folds_as_far_as_possible() {
    let rig = oblique_rig(0.5, 0.3);
    let ik = TwoBoneIk::try_new(&rig.skeleton, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let mut pose = rig.skeleton.rest_pose();
    let shoulder = limb(&rig, &pose).shoulder;
    let dir = Vec3::new(-0.2, 0.1, 0.9).normalize();
    let (report, got) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(shoulder + dir * 0.05));
    assert!(!report.reachable);
    assert!((report.flex_angle - PI).abs() < 1e-3);
    assert!(got.wrist.distance(shoulder + dir * 0.2) < 1e-4);
    // With a flex limit, it folds only to the limit.
    let settings = LimbSettings::default().with_flex_limits(0.0, 2.0);
    let ik =
        TwoBoneIk::try_with_settings(&rig.skeleton, rig.shoulder, rig.elbow, rig.wrist, settings)
            .unwrap();
    let (report, got) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(shoulder + dir * 0.05));
    assert!(report.flex_limited && (report.flex_angle - 2.0).abs() < 1e-4);
    assert!((flex_of(&got) - 2.0).abs() < 2e-3);
}

#[test]
fn target_at_shoulder_keeps_direction() {
    for (l1, l2) in [(0.5, 0.3), (0.4, 0.4)] {
        let rig = oblique_rig(l1, l2);
        let ik = TwoBoneIk::try_new(&rig.skeleton, rig.shoulder, rig.elbow, rig.wrist).unwrap();
        let mut pose = rig.skeleton.rest_pose();
        let before = limb(&rig, &pose);
        let dir_before = (before.wrist - before.shoulder).normalize();
        let (report, got) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(before.shoulder));
        assert!(got.wrist.is_finite() && got.elbow.is_finite());
        let reach = (l1 - l2).abs();
        assert!((got.wrist.distance(got.shoulder) - reach).abs() < 1e-4);
        if reach > 0.0 {
            assert!(!report.reachable);
            let dir_after = (got.wrist - got.shoulder).normalize();
            assert!(dir_after.dot(dir_before) > 1.0 - 1e-4);
        } else {
            assert!(report.reachable && report.position_error < 1e-4);
        }
    }
}

#[test]
fn collinear_pole_falls_back_to_previous_plane() {
    let rig = oblique_rig(0.5, 0.4);
    let ik = TwoBoneIk::try_new(&rig.skeleton, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let shoulder = limb(&rig, &rig.skeleton.rest_pose()).shoulder;
    let target = shoulder + Vec3::new(0.3, -0.3, 0.4);
    let mut with_pole = rig.skeleton.rest_pose();
    let mut keep = rig.skeleton.rest_pose();
    for pole in [shoulder + (target - shoulder) * 3.0, shoulder, target] {
        let (report, got) = solve_on(
            &rig,
            &ik,
            &mut with_pole,
            LimbGoal::new(target).with_pole(pole),
        );
        assert!(report.pole_fallback && report.reachable);
        assert!(got.wrist.distance(target) < 1e-4);
        let (_, kept) = solve_on(&rig, &ik, &mut keep, LimbGoal::new(target));
        assert!(got.elbow.distance(kept.elbow) < 1e-4);
    }
}

/// A pole nearly (but not exactly) collinear with the shoulder→target line: the bend plane is
/// still the pole's, the wrist lands on the target, and the reported position error is the
/// one measured on the pose (it used to miss by up to 0.34 % of the limb and report 0).
#[test]
fn near_collinear_pole_still_meets_the_target_and_reports_the_measured_error() {
    let rig = oblique_rig(0.5, 0.4);
    let ik = TwoBoneIk::try_new(&rig.skeleton, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let shoulder = limb(&rig, &rig.skeleton.rest_pose()).shoulder;
    let mut worst = 0.0f32;
    let mut state = 0x1234_5678_u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as f32 / u32::MAX as f32 * 2.0 - 1.0
    };
    for i in 0..2000 {
        let dir = Vec3::new(next(), next(), next()).normalize();
        let reach = 0.2 + 0.65 * (i as f32 / 2000.0);
        let target = shoulder + dir * reach;
        // A pole on the line, off it by 1e-5 .. 1e-2 of its distance.
        let side = dir.any_orthonormal_vector();
        let off = 10f32.powf(-5.0 + 3.0 * (next() * 0.5 + 0.5));
        let pole = shoulder + dir * (0.3 + next().abs()) + side * off;
        let mut pose = rig.skeleton.rest_pose();
        let (report, got) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(target).with_pole(pole));
        let measured = got.wrist.distance(target);
        worst = worst.max(measured);
        assert!(
            (report.position_error - measured).abs() < 1e-5,
            "reported {} but measured {measured}",
            report.position_error
        );
    }
    // 1e-5 of the 0.9 limb.
    assert!(worst < 9e-6, "worst miss {worst}");
}

#[test]
fn non_finite_input_is_an_error_and_leaves_pose_unchanged() {
    let rig = oblique_rig(0.5, 0.4);
    let s = &rig.skeleton;
    let ik = TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let mut pose = s.rest_pose();
    pose.rotations[rig.shoulder] = Quat::from_rotation_x(0.4) * pose.rotations[rig.shoulder];
    let before = pose.clone();
    let ok = Vec3::new(0.3, 0.8, 0.2);
    let bad = [
        LimbGoal::new(Vec3::new(f32::NAN, 0.0, 0.0)),
        LimbGoal::new(Vec3::new(0.0, f32::INFINITY, 0.0)),
        LimbGoal::new(ok).with_pole(Vec3::splat(f32::NAN)),
        LimbGoal::new(ok).with_swivel(f32::NAN),
        LimbGoal::new(ok).with_orientation(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0)),
        LimbGoal::new(ok).with_weights(f32::NAN, 1.0, 1.0),
    ];
    for goal in bad {
        let e = ik.solve(s, &mut pose, &goal);
        assert!(
            matches!(e, Err(AnalyticError::NonFiniteGoal(_))),
            "{goal:?}: {e:?}"
        );
        assert_eq!(pose, before);
    }
    // A non-finite incoming pose is rejected too.
    let mut nan_pose = before.clone();
    nan_pose.rotations[rig.elbow] = Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0);
    let snapshot = nan_pose.clone();
    let e = ik.solve(s, &mut nan_pose, &LimbGoal::new(ok));
    assert_eq!(e, Err(AnalyticError::DegeneratePose));
    assert_eq!(format!("{nan_pose:?}"), format!("{snapshot:?}"));
    // A pose that is too short is an error, not a panic.
    let mut short = Pose::default();
    assert!(matches!(
        ik.solve(s, &mut short, &LimbGoal::new(ok)),
        Err(AnalyticError::PoseMismatch { .. })
    ));
}

#[test]
fn construction_errors() {
    let rig = oblique_rig(0.5, 0.4);
    let s = &rig.skeleton;
    assert!(matches!(
        TwoBoneIk::try_new(s, rig.elbow, rig.shoulder, rig.wrist),
        Err(AnalyticError::NotDescendant { .. })
    ));
    assert!(matches!(
        TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.elbow),
        Err(AnalyticError::NotDescendant { .. })
    ));
    assert!(matches!(
        TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, 99),
        Err(AnalyticError::Skeleton(_))
    ));
    assert!(matches!(
        TwoBoneIk::from_names(s, "shoulder", "elbow", "nope"),
        Err(AnalyticError::Skeleton(_))
    ));
    let ik = TwoBoneIk::from_names(s, "shoulder", "elbow", "wrist").unwrap();
    assert_eq!(ik.bones(), [rig.shoulder, rig.elbow, rig.wrist]);
    let zero = Skeleton::try_new(vec![
        Bone::new("a", None, BoneTransform::IDENTITY),
        Bone::new("b", Some(0), BoneTransform::IDENTITY),
        Bone::new("c", Some(1), BoneTransform::from_translation(Vec3::X)),
    ])
    .unwrap();
    assert!(matches!(
        TwoBoneIk::try_new(&zero, 0, 1, 2),
        Err(AnalyticError::ZeroLengthSegment { .. })
    ));
    for bad in [
        LimbSettings::default().with_flex_limits(1.0, 0.5),
        LimbSettings::default().with_flex_limits(-0.1, 1.0),
        LimbSettings::default().with_flex_limits(0.0, f32::NAN),
        LimbSettings::default().with_soft_reach(1.0),
    ] {
        assert!(matches!(
            TwoBoneIk::try_with_settings(s, rig.shoulder, rig.elbow, rig.wrist, bad),
            Err(AnalyticError::InvalidSettings(_))
        ));
    }
    let upper = {
        let l = limb(&rig, &s.rest_pose());
        l.elbow - l.shoulder
    };
    for axis in [Vec3::ZERO, upper, Vec3::splat(f32::NAN)] {
        assert_eq!(
            TwoBoneIk::try_with_settings(
                s,
                rig.shoulder,
                rig.elbow,
                rig.wrist,
                LimbSettings::default().with_bend_axis(axis)
            ),
            Err(AnalyticError::InvalidBendAxis)
        );
    }
}

#[test]
fn weights_blend_toward_the_incoming_pose() {
    let rig = oblique_rig(0.5, 0.4);
    let s = &rig.skeleton;
    let ik = TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let start = pose_with_flex(
        &rig,
        s.bones()[rig.shoulder].rest.rotation,
        1.0,
        0.0,
        Quat::IDENTITY,
    );
    let before = limb(&rig, &start);
    let target = before.shoulder + Vec3::new(0.2, -0.4, 0.45);
    let orientation = Quat::from_rotation_y(1.2) * before.wrist_rotation;
    let pole = before.shoulder + Vec3::new(0.0, 1.0, -1.0);
    let goal = LimbGoal::new(target)
        .with_orientation(orientation)
        .with_pole(pole);

    // All zero: exactly the incoming pose.
    let mut pose = start.clone();
    ik.solve(s, &mut pose, &goal.with_weights(0.0, 0.0, 0.0))
        .unwrap();
    assert_eq!(pose, start);

    // Full weights: on target with the target rotation.
    let mut pose = start.clone();
    let (_, full) = solve_on(&rig, &ik, &mut pose, goal);
    assert!(full.wrist.distance(target) < 1e-4);
    assert!(quat_angle(full.wrist_rotation, orientation) < 1e-3);

    // Half position and rotation weight: halfway there.
    let mut pose = start.clone();
    let (report, half) = solve_on(&rig, &ik, &mut pose, goal.with_weights(0.5, 0.5, 1.0));
    let mid = before.wrist.lerp(target, 0.5);
    assert!(report.reachable && half.wrist.distance(mid) < 1e-4);
    let total = quat_angle(before.wrist_rotation, orientation);
    let moved = quat_angle(before.wrist_rotation, half.wrist_rotation);
    assert!((moved - 0.5 * total).abs() < 1e-3, "{moved} vs {total}");

    // Pole weight 0 keeps the incoming bend plane; 1 turns the elbow to the pole; 0.5 between.
    let mut pose = start.clone();
    let (_, keep) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(target));
    let mut pose = start.clone();
    let (_, no_pole) = solve_on(&rig, &ik, &mut pose, goal.with_weights(1.0, 1.0, 0.0));
    assert!(no_pole.elbow.distance(keep.elbow) < 1e-5);
    let mut pose = start.clone();
    let (_, half_pole) = solve_on(&rig, &ik, &mut pose, goal.with_weights(1.0, 1.0, 0.5));
    let side = |l: &Limb| elbow_side(l, target).normalize();
    let a_full = side(&keep).angle_between(side(&full));
    let a_half = side(&keep).angle_between(side(&half_pole));
    assert!(a_full > 0.2, "pole should move the elbow");
    assert!((a_half - 0.5 * a_full).abs() < 1e-3, "{a_half} vs {a_full}");
    let pole_side = (pole - before.shoulder)
        - (target - before.shoulder).normalize()
            * (pole - before.shoulder).dot((target - before.shoulder).normalize());
    assert!(side(&full).dot(pole_side.normalize()) > 1.0 - 1e-4);
}

#[test]
fn swivel_turns_the_bend_plane_about_the_target_axis() {
    let rig = oblique_rig(0.5, 0.4);
    let s = &rig.skeleton;
    let ik = TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let shoulder = limb(&rig, &s.rest_pose()).shoulder;
    let target = shoulder + Vec3::new(0.1, -0.5, 0.4);
    let dir = (target - shoulder).normalize();
    let mut pose = s.rest_pose();
    let (_, zero) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(target).with_swivel(0.0));
    for angle in [0.5f32, -1.3, 2.8] {
        let (r, got) = solve_on(
            &rig,
            &ik,
            &mut pose,
            LimbGoal::new(target).with_swivel(angle),
        );
        assert!(r.reachable && got.wrist.distance(target) < 1e-4);
        let (a, b) = (elbow_side(&zero, target), elbow_side(&got, target));
        let signed = a.cross(b).dot(dir).atan2(a.dot(b));
        assert!((signed - angle).abs() < 1e-3, "{signed} vs {angle}");
    }
}

#[test]
fn soft_reach_eases_extension() {
    let rig = oblique_rig(0.5, 0.4);
    let s = &rig.skeleton;
    let settings = LimbSettings::default().with_soft_reach(0.1);
    let ik = TwoBoneIk::try_with_settings(s, rig.shoulder, rig.elbow, rig.wrist, settings).unwrap();
    let shoulder = limb(&rig, &s.rest_pose()).shoulder;
    let dir = Vec3::new(0.6, -0.2, 0.5).normalize();
    let mut pose = s.rest_pose();
    let mut last = 0.6;
    for i in 0..=200 {
        let d = 0.6 + 0.5 * i as f32 / 200.0;
        let (report, got) = solve_on(&rig, &ik, &mut pose, LimbGoal::new(shoulder + dir * d));
        let reach = got.wrist.distance(shoulder);
        assert!(reach < 0.9, "never fully straight");
        assert!(report.flex_angle > 0.0);
        assert!(
            reach >= last - 1e-5 && reach - last < 0.01,
            "monotonic and smooth"
        );
        if d < 0.8 {
            assert!((reach - d).abs() < 1e-4, "exact below the soft band");
        }
        last = reach;
    }
}

/// Leg: hip → knee → ankle with bones along −Y and the knee bending forward (the shin bends
/// backward, the opposite sense of an elbow).
#[test]
fn leg_knee_bends_forward() {
    let make = |knee_forward: f32| {
        Skeleton::try_new(vec![
            Bone::new(
                "pelvis",
                None,
                BoneTransform::from_translation(Vec3::new(0.0, 1.0, 0.0)),
            ),
            Bone::new(
                "hip",
                Some(0),
                BoneTransform::from_translation(Vec3::new(0.1, -0.05, 0.0)),
            ),
            Bone::new(
                "knee",
                Some(1),
                BoneTransform::from_translation(Vec3::new(0.0, -0.45, knee_forward)),
            ),
            Bone::new(
                "ankle",
                Some(2),
                BoneTransform::from_translation(Vec3::new(0.0, -0.42, -knee_forward)),
            ),
        ])
        .unwrap()
    };
    let bent = make(0.03);
    let straight = make(0.0);
    let ik_bent = TwoBoneIk::from_names(&bent, "hip", "knee", "ankle").unwrap();
    let settings = LimbSettings::default().with_bend_axis(Vec3::X);
    let ik_straight = TwoBoneIk::try_with_settings(&straight, 1, 2, 3, settings).unwrap();
    let hip = Vec3::new(0.1, 0.95, 0.0);
    for (skeleton, ik) in [(&bent, &ik_bent), (&straight, &ik_straight)] {
        for target in [
            hip + Vec3::new(0.0, -0.6, 0.0),
            hip + Vec3::new(0.05, -0.5, 0.3),
            hip + Vec3::new(-0.05, -0.7, -0.2),
        ] {
            let mut pose = skeleton.rest_pose();
            let report = ik
                .solve(skeleton, &mut pose, &LimbGoal::new(target))
                .unwrap();
            let m = skeleton.model_transforms(&pose);
            assert!(report.reachable && m[3].translation.distance(target) < 1e-4);
            // Knee in front of the hip→ankle line.
            let dir = (target - hip).normalize();
            let e = m[2].translation - hip;
            let side = e - dir * e.dot(dir);
            assert!(side.z > 0.05, "knee must point forward, got {side}");
            assert!(side.x.abs() < 1e-3, "knee stays in the sagittal plane");
        }
        // With a pole out to the side, the knee follows it.
        let mut pose = skeleton.rest_pose();
        let target = hip + Vec3::new(0.0, -0.6, 0.1);
        let goal = LimbGoal::new(target).with_pole(hip + Vec3::new(1.0, -0.3, 0.5));
        ik.solve(skeleton, &mut pose, &goal).unwrap();
        let knee = skeleton.model_transform(&pose, 2).translation;
        assert!(knee.x > hip.x + 0.05);
    }
    // An arm rig (+X bones, elbow bending forward) flexes the other way round: the forearm
    // turns toward +Z, where the leg's shin turns toward −Z.
    let arm = Skeleton::try_new(vec![
        Bone::new("shoulder", None, BoneTransform::IDENTITY),
        Bone::new(
            "elbow",
            Some(0),
            BoneTransform::from_translation(Vec3::new(0.3, 0.0, -0.02)),
        ),
        Bone::new(
            "wrist",
            Some(1),
            BoneTransform::from_translation(Vec3::new(0.25, 0.0, 0.04)),
        ),
    ])
    .unwrap();
    let ik_arm = TwoBoneIk::try_new(&arm, 0, 1, 2).unwrap();
    let mut pose = arm.rest_pose();
    ik_arm
        .solve(&arm, &mut pose, &LimbGoal::new(Vec3::new(0.3, 0.0, 0.0)))
        .unwrap();
    let m = arm.model_transforms(&pose);
    assert!(m[1].translation.z < -0.1, "elbow goes back, hand forward");
    assert!(ik_arm.bend_axis().dot(-Vec3::Y) > 0.99);
    assert!(ik_bent.bend_axis().dot(Vec3::X) > 0.99);
    assert!(ik_straight.bend_axis().dot(Vec3::X) > 0.99);
}

#[test]
fn accessors_report_rest_geometry() {
    let rig = oblique_rig(0.5, 0.4);
    let s = &rig.skeleton;
    let ik = TwoBoneIk::try_new(s, rig.shoulder, rig.elbow, rig.wrist).unwrap();
    let [l1, l2] = ik.rest_lengths();
    assert!((l1 - 0.5).abs() < 1e-5 && (l2 - 0.4).abs() < 1e-5);
    assert!(
        ik.upper_rest_direction()
            .distance(Vec3::new(0.3, -0.8, 0.5).normalize())
            < 1e-5
    );
    assert!(ik.lower_rest_direction().distance(Vec3::NEG_Z) < 1e-5);
    let rest = limb(&rig, &s.rest_pose());
    assert!((ik.rest_flex() - flex_of(&rest)).abs() < 1e-4);
    assert!(ik.bend_axis().dot(ik.upper_rest_direction()).abs() < 1e-5);
    assert!(ik.rest_flex() > 0.0 && ik.rest_flex() < FRAC_PI_2 * 2.0);
}
