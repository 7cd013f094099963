//! Property tests of the rotation toolkit: angle about an axis across ±π, swing–twist
//! recomposition, Euler compose∘decompose for all 12 orders (including at and near gimbal
//! lock), a cross-check against glam, and the generalised arm case on rigs whose bones do not
//! point along +Y.

use core::f32::consts::{FRAC_PI_2, PI};

use glam::{EulerRot, Quat, Vec3};
use ik_core::pose::BoneTransform;
use ik_core::rotation::{
    BoneFrame, EulerOrder, GIMBAL_LOCK_TOLERANCE, angle_about_axis, euler_compose, euler_decompose,
    from_rest_delta, from_rotation_vector, from_swing_twist, from_swing_vector_twist,
    normalize_hemisphere, rest_delta, rotation_angle_between, shortest_arc, swing_twist,
    swing_vector, to_rotation_vector, twist_angle, wrap_angle,
};
use ik_core::skeleton::{Bone, Skeleton};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Cases per property, with failures recorded in the committed `proptest-regressions/` file
/// (the default source-relative persistence cannot find a `lib.rs` from an integration test).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/rotation.txt",
        ))),
        ..ProptestConfig::default()
    }
}

fn unit_vec() -> impl Strategy<Value = Vec3> {
    (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0)
        .prop_filter("not too short", |(x, y, z)| {
            Vec3::new(*x, *y, *z).length() > 0.1
        })
        .prop_map(|(x, y, z)| Vec3::new(x, y, z).normalize())
}

fn any_quat() -> impl Strategy<Value = Quat> {
    (-PI..PI, -PI..PI, -PI..PI, any::<bool>()).prop_map(|(a, b, c, neg)| {
        let q = Quat::from_euler(EulerRot::ZXY, a, b, c);
        if neg { -q } else { q }
    })
}

fn order() -> impl Strategy<Value = EulerOrder> {
    (0usize..12).prop_map(|i| EulerOrder::ALL[i])
}

/// Angles around ±π and 0 (the places where wrap-around code goes wrong), plus uniform ones.
fn twist_angle_strategy() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(PI),
        Just(0.0f32),
        (1e-6f32..1e-2).prop_map(|e| PI - e),
        (1e-6f32..1e-2).prop_map(|e| -PI + e),
        (1e-6f32..1e-2).prop_map(|e| -e),
        (1e-6f32..1e-2).prop_map(|e| e),
        -PI..PI,
    ]
}

/// A unit vector perpendicular to `axis`, rotated by `phi` about it.
fn perpendicular(axis: Vec3, phi: f32) -> Vec3 {
    Quat::from_axis_angle(axis, phi) * axis.any_orthonormal_vector()
}

/// Every rotation away from lock has two Euler solutions: `(a + π, −b, c + π)` for proper
/// orders and `(a + π, π − b, c + π)` for Tait–Bryan ones. glam picks per order; this maps its
/// answer onto ours (proper middle angle in `[0, π]`, Tait–Bryan in `[−π/2, π/2]`).
fn canonical(order: EulerOrder, (a, b, c): (f32, f32, f32)) -> [f32; 3] {
    let flip = |b2: f32| [wrap_angle(a + PI), b2, wrap_angle(c + PI)];
    if order.is_proper() {
        if b < 0.0 { flip(-b) } else { [a, b, c] }
    } else if b > FRAC_PI_2 {
        flip(PI - b)
    } else if b < -FRAC_PI_2 {
        flip(-PI - b)
    } else {
        [a, b, c]
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Twist angle about a random axis equals the angle used to build the rotation, with the
    /// right sign, across ±π and 0; q and −q agree; a swing perpendicular to the axis and a
    /// non-unit axis change nothing.
    #[test]
    fn angle_about_axis_across_pi(
        axis in unit_vec(),
        theta in twist_angle_strategy(),
        swing_angle in -3.0f32..3.0,
        phi in -PI..PI,
        scale in 0.01f32..100.0,
    ) {
        let twist = Quat::from_axis_angle(axis, theta);
        let swing = Quat::from_axis_angle(perpendicular(axis, phi), swing_angle);
        for q in [twist, swing * twist] {
            let a = angle_about_axis(q, axis);
            prop_assert!(a > -PI && a <= PI, "{a} out of (−π, π]");
            prop_assert_eq!(a, angle_about_axis(-q, axis), "q and −q must agree bit for bit");
            prop_assert!(wrap_angle(angle_about_axis(q, axis * scale) - a).abs() < 1e-5);
            if theta.abs() < PI - 1e-3 {
                // Away from the wrap point the sign must be right.
                prop_assert!((a - theta).abs() < 2e-5, "{a} vs {theta}");
            } else {
                prop_assert!(wrap_angle(a - theta).abs() < 2e-5, "{a} vs {theta}");
            }
            prop_assert_eq!(twist_angle(q, axis), a);
        }
    }

    /// q = swing * twist exactly; the twist is about the axis, the swing's axis is
    /// perpendicular to it, and the swing-vector / twist-angle helpers round trip.
    #[test]
    fn swing_twist_recomposes(q in any_quat(), axis in unit_vec(), scale in 0.01f32..100.0) {
        let (s, t) = swing_twist(q, axis * scale);
        let r = from_swing_twist(s, t);
        prop_assert!((r - q).length() < 2e-6, "{r:?} vs {q:?}");
        prop_assert!(s.xyz().dot(axis).abs() < 2e-6);
        prop_assert!(t.xyz().cross(axis).length() < 2e-6);
        prop_assert!(t.w >= 0.0);
        let sv = swing_vector(q, axis);
        prop_assert!(sv.dot(axis).abs() < 1e-5);
        prop_assert!(sv.length() <= PI + 1e-5);
        let back = from_swing_vector_twist(sv, axis, twist_angle(q, axis));
        prop_assert!(rotation_angle_between(back, q) < 5e-5);
    }

    /// Near a half-turn swing (twist part → 0) the decomposition stays finite and recomposes.
    #[test]
    fn swing_twist_near_half_turn_swing(
        axis in unit_vec(),
        phi in -PI..PI,
        eps in prop_oneof![Just(0.0f32), 1e-8f32..1e-3],
        twist in -1e-3f32..1e-3,
    ) {
        let q = Quat::from_axis_angle(perpendicular(axis, phi), PI - eps)
            * Quat::from_axis_angle(axis, twist);
        let (s, t) = swing_twist(q, axis);
        prop_assert!(s.is_finite() && t.is_finite());
        prop_assert!(rotation_angle_between(from_swing_twist(s, t), q) < 1e-5);
        prop_assert!(angle_about_axis(q, axis).is_finite());
    }

    /// compose∘decompose is the identity on angles away from gimbal lock, for all 12 orders.
    #[test]
    fn euler_angles_round_trip_away_from_lock(
        order in order(),
        a in -3.1f32..3.1,
        t in 0.02f32..0.98,
        c in -3.1f32..3.1,
    ) {
        let b = if order.is_proper() { t * PI } else { (t - 0.5) * PI };
        let q = euler_compose(order, [a, b, c]);
        let e = euler_decompose(order, q);
        for (got, want) in e.iter().zip([a, b, c]) {
            prop_assert!((got - want).abs() < 2e-4, "{order:?}: {e:?} vs {:?}", [a, b, c]);
        }
    }

    /// decompose then compose reproduces any rotation (up to sign), angles in range.
    #[test]
    fn euler_decompose_then_compose_reproduces_rotation(order in order(), q in any_quat()) {
        let e = euler_decompose(order, q);
        prop_assert!(rotation_angle_between(euler_compose(order, e), q) < 2e-5, "{order:?} {e:?}");
        prop_assert!(e[0] > -PI && e[0] <= PI && e[2] > -PI && e[2] <= PI);
        if order.is_proper() {
            prop_assert!((0.0..=PI).contains(&e[1]));
        } else {
            prop_assert!((-FRAC_PI_2..=FRAC_PI_2).contains(&e[1]));
        }
    }

    /// At and near gimbal lock the output still reproduces the rotation; within the lock
    /// tolerance the third angle is 0.
    #[test]
    fn euler_reproduces_rotation_at_and_near_lock(
        order in order(),
        a in -3.1f32..3.1,
        c in -3.1f32..3.1,
        upper in any::<bool>(),
        delta in prop_oneof![Just(0.0f32), 1e-7f32..1e-5, 1e-5f32..1e-2],
    ) {
        let b = match (order.is_proper(), upper) {
            (true, false) => delta,
            (true, true) => PI - delta,
            (false, false) => -FRAC_PI_2 + delta,
            (false, true) => FRAC_PI_2 - delta,
        };
        let q = euler_compose(order, [a, b, c]);
        let e = euler_decompose(order, q);
        prop_assert!(e.iter().all(|x| x.is_finite()));
        let err = rotation_angle_between(euler_compose(order, e), q);
        prop_assert!(err < 5e-5, "{order:?} b={b} → {e:?}, error {err}");
        if delta < 0.5 * GIMBAL_LOCK_TOLERANCE {
            // Locked by the documented convention: the combined angle is in the first.
            prop_assert_eq!(e[2], 0.0, "{:?} b={} → {:?}", order, b, e);
        }
    }

    /// Our compose is glam's intrinsic `from_euler`, and our decompose agrees with glam's
    /// `to_euler` away from lock, for every order.
    #[test]
    fn euler_matches_glam(order in order(), a in -3.1f32..3.1, t in 0.05f32..0.95, c in -3.1f32..3.1) {
        let b = if order.is_proper() { t * PI } else { (t - 0.5) * PI };
        let rot = EulerRot::from(order);
        let ours = euler_compose(order, [a, b, c]);
        let theirs = Quat::from_euler(rot, a, b, c);
        prop_assert!(rotation_angle_between(ours, theirs) < 1e-5);
        let glam_angles = canonical(order, theirs.to_euler(rot));
        let e = euler_decompose(order, theirs);
        for (got, want) in e.iter().zip(glam_angles) {
            prop_assert!(wrap_angle(got - want).abs() < 5e-4, "{order:?}: {e:?} vs glam {glam_angles:?}");
        }
    }

    /// Rest deltas round trip and do not depend on the bind pose: the same delta on two rigs
    /// with different rest rotations gives back the same delta.
    #[test]
    fn rest_delta_round_trips(rest_a in any_quat(), rest_b in any_quat(), delta in any_quat()) {
        for rest in [rest_a, rest_b] {
            let local = from_rest_delta(rest, delta);
            let back = rest_delta(rest, local);
            prop_assert!(rotation_angle_between(back, delta) < 1e-5);
            prop_assert!(rotation_angle_between(rest * back, local) < 1e-5);
        }
    }

    /// Rotation vectors round trip (angle ≤ π) and the shortest arc maps `from` onto `to`
    /// with the angle between them, about an axis perpendicular to both.
    #[test]
    fn rotation_vector_and_shortest_arc(
        axis in unit_vec(),
        angle in prop_oneof![0.0f32..1e-4, 0.0f32..PI],
        from in unit_vec(),
        to in unit_vec(),
        opposite in any::<bool>(),
    ) {
        let v = axis * angle;
        let q = from_rotation_vector(v);
        prop_assert!((q.length() - 1.0).abs() < 1e-6);
        prop_assert!(to_rotation_vector(q).distance(v) < 1e-5 * angle.max(1e-3));
        prop_assert!(rotation_angle_between(q, Quat::from_axis_angle(axis, angle)) < 1e-5);
        let to = if opposite { -from } else { to };
        let arc = shortest_arc(from * 2.0, to * 0.5);
        prop_assert!((arc * from).distance(to) < 1e-5);
        let want = from.dot(to).clamp(-1.0, 1.0).acos();
        prop_assert!((rotation_angle_between(Quat::IDENTITY, arc) - want).abs() < 1e-3);
        prop_assert!(arc.xyz().dot(from).abs() < 1e-5);
        let h = normalize_hemisphere(-arc, Quat::IDENTITY);
        prop_assert!(h.w >= 0.0 && rotation_angle_between(h, arc) < 1e-6);
    }
}

// -------------------------------------------------------------------------------------------
// The generalised arm case (reference article: shoulder ZXY from the elbow position, forearm
// YXY from the wrist position) on rigs whose bones point along +X, −Z and an oblique axis.
// -------------------------------------------------------------------------------------------

const UPPER: usize = 1;
const FORE: usize = 2;
const HAND: usize = 3;

/// root → upper arm → forearm → hand → finger tip. `dir` is the upper arm's rest axis (its
/// child offset in its own local frame); the forearm's is a different oblique axis.
fn arm_rig(dir: Vec3, rests: [Quat; 4]) -> Skeleton {
    let bone = |name: &str, parent: Option<usize>, t: Vec3, r: Quat| {
        Bone::new(name, parent, BoneTransform::from_translation_rotation(t, r))
    };
    let fore_dir = Vec3::new(0.3, -0.8, 0.5).normalize();
    Skeleton::try_new(vec![
        bone("root", None, Vec3::new(0.1, 1.3, -0.2), rests[0]),
        bone("upper", Some(0), Vec3::new(0.2, 0.1, 0.0), rests[1]),
        bone("fore", Some(UPPER), dir * 0.31, rests[2]),
        bone("hand", Some(FORE), fore_dir * 0.27, rests[3]),
        bone("tip", Some(HAND), Vec3::new(0.0, 0.1, 0.05), Quat::IDENTITY),
    ])
    .expect("valid rig")
}

fn rig_dir(kind: usize) -> Vec3 {
    match kind {
        0 => Vec3::X,
        1 => -Vec3::Z,
        _ => Vec3::new(-0.5, 0.7, 0.3).normalize(),
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Random shoulder ZXY and forearm YXY angles (in each bone's frame) → pose → FK →
    /// positions → recover the angles from the elbow and wrist positions alone (first two of
    /// each; with the known twist, all three).
    #[test]
    fn arm_angles_recovered_from_positions(
        kind in 0usize..3,
        r0 in any_quat(), r1 in any_quat(), r2 in any_quat(), r3 in any_quat(),
        hint in unit_vec(),
        sz in -3.0f32..3.0, sx in -1.3f32..1.3, sy in -3.0f32..3.0,
        fa in -3.0f32..3.0, fb in 0.2f32..2.9, fc in -3.0f32..3.0,
    ) {
        let skel = arm_rig(rig_dir(kind), [r0, r1, r2, r3]);
        // Frames from the rig's rest offsets (not an assumed axis); skip hints parallel to it.
        let Ok(upper) = BoneFrame::from_rest(&skel, UPPER, FORE, hint) else {
            return Ok(());
        };
        let Ok(fore) = BoneFrame::from_rest(&skel, FORE, HAND, hint) else {
            return Ok(());
        };
        prop_assert!(upper.along().distance(rig_dir(kind)) < 1e-6);

        let shoulder_angles = [sz, sx, sy];
        let elbow_angles = [fa, fb, fc];
        let mut pose = skel.rest_pose();
        let rest_u = skel.bones()[UPPER].rest.rotation;
        let rest_f = skel.bones()[FORE].rest.rotation;
        let delta_u = upper.delta_from_euler(EulerOrder::ZXY, shoulder_angles);
        let delta_f = fore.delta_from_euler(EulerOrder::YXY, elbow_angles);
        pose.rotations[UPPER] = from_rest_delta(rest_u, delta_u);
        pose.rotations[FORE] = from_rest_delta(rest_f, delta_f);
        let model = skel.model_transforms(&pose);

        // Shoulder from the elbow position, expressed in the upper arm's parent space.
        let to_elbow = model[0].rotation.inverse() * (model[FORE].translation - model[UPPER].translation);
        let aim = upper.aim(rest_u, EulerOrder::ZXY, to_elbow, 0.0);
        prop_assert!((aim.angles[0] - sz).abs() < 2e-4, "{:?} vs {shoulder_angles:?}", aim.angles);
        prop_assert!((aim.angles[1] - sx).abs() < 2e-4, "{:?} vs {shoulder_angles:?}", aim.angles);
        prop_assert!((aim.local * upper.along()).distance(to_elbow.normalize()) < 1e-5);
        // With the bone's twist supplied, the whole rotation and all three angles come back.
        let full = upper.aim(rest_u, EulerOrder::ZXY, to_elbow, twist_angle(delta_u, upper.along()));
        prop_assert!(rotation_angle_between(full.delta, delta_u) < 1e-4);
        prop_assert!(rotation_angle_between(full.local, pose.rotations[UPPER]) < 1e-4);
        prop_assert!(wrap_angle(full.angles[2] - sy).abs() < 2e-4, "{:?}", full.angles);

        // Forearm from the wrist position, in the forearm's parent (= upper arm) space:
        // YXY = [twist about the bone, flex, ·].
        let to_wrist = model[UPPER].rotation.inverse() * (model[HAND].translation - model[FORE].translation);
        let aim = fore.aim(rest_f, EulerOrder::YXY, to_wrist, 0.0);
        prop_assert!((aim.angles[0] - fa).abs() < 2e-4, "{:?} vs {elbow_angles:?}", aim.angles);
        prop_assert!((aim.angles[1] - fb).abs() < 2e-4, "{:?} vs {elbow_angles:?}", aim.angles);
        let full = fore.aim(rest_f, EulerOrder::YXY, to_wrist, twist_angle(delta_f, fore.along()));
        prop_assert!(rotation_angle_between(full.delta, delta_f) < 1e-4);
        prop_assert!(wrap_angle(full.angles[2] - fc).abs() < 2e-4, "{:?}", full.angles);
    }

    /// Euler angles in a bone frame round trip for every order, and the frame's Y role really
    /// is the bone axis: an `R_y` in the frame is a twist about the rest direction.
    #[test]
    fn bone_frame_euler_round_trips(
        order in order(),
        along in unit_vec(),
        hint in unit_vec(),
        a in -3.0f32..3.0, t in 0.05f32..0.95, c in -3.0f32..3.0,
    ) {
        let Ok(frame) = BoneFrame::try_new(along, hint) else { return Ok(()); };
        let b = if order.is_proper() { t * PI } else { (t - 0.5) * PI };
        let delta = frame.delta_from_euler(order, [a, b, c]);
        let e = frame.euler_angles(order, delta);
        for (got, want) in e.iter().zip([a, b, c]) {
            prop_assert!((got - want).abs() < 2e-4, "{order:?}: {e:?} vs {:?}", [a, b, c]);
        }
        let twist = frame.delta_from_euler(EulerOrder::YXZ, [c, 0.0, 0.0]);
        prop_assert!(rotation_angle_between(twist, Quat::from_axis_angle(frame.along(), c)) < 1e-5);
        prop_assert!((twist * frame.along()).distance(frame.along()) < 1e-5);
    }
}

/// The reference article's own rig: bone axis +Y, identity rest. Its formulas (12), (13) for
/// the shoulder and (19), (20) for the forearm must agree with the frame-based angles.
#[test]
fn matches_the_articles_plus_y_formulas() {
    let frame = BoneFrame::try_new(Vec3::Y, Vec3::Z).expect("valid frame");
    assert!(rotation_angle_between(frame.basis(), Quat::IDENTITY) < 1e-6);
    let elbow_dir = Vec3::new(0.3, 0.8, -0.45).normalize();
    // Article: M_a = rotation about e_y × a by acos(e_y · a); θz = atan2(−M01, M11), θx = asin(M21).
    let axis = Vec3::Y.cross(elbow_dir).normalize();
    let m = glam::Mat3::from_axis_angle(axis, Vec3::Y.dot(elbow_dir).acos());
    let theta_z = (-m.y_axis.x).atan2(m.y_axis.y);
    let theta_x = m.y_axis.z.asin();
    let aim = frame.aim(Quat::IDENTITY, EulerOrder::ZXY, elbow_dir, 0.0);
    assert!(
        (aim.angles[0] - theta_z).abs() < 1e-5,
        "{:?} vs {theta_z}",
        aim.angles
    );
    assert!(
        (aim.angles[1] - theta_x).abs() < 1e-5,
        "{:?} vs {theta_x}",
        aim.angles
    );
    // Forearm: θy = atan2(M01, M21) of M_b, φx = acos(M11). (The article prints −M01, but its
    // matrix (18) has M01 = sin φx sin θy, so the sign must be +.)
    let wrist_dir = Vec3::new(-0.2, 0.5, 0.6).normalize();
    let axis = Vec3::Y.cross(wrist_dir).normalize();
    let m = glam::Mat3::from_axis_angle(axis, Vec3::Y.dot(wrist_dir).acos());
    let theta_y = m.y_axis.x.atan2(m.y_axis.z);
    let phi_x = m.y_axis.y.acos();
    let aim = frame.aim(Quat::IDENTITY, EulerOrder::YXY, wrist_dir, 0.0);
    assert!(
        (aim.angles[0] - theta_y).abs() < 1e-5,
        "{:?} vs {theta_y}",
        aim.angles
    );
    assert!(
        (aim.angles[1] - phi_x).abs() < 1e-5,
        "{:?} vs {phi_x}",
        aim.angles
    );
}
