//! The behaviours (`ik_core::behaviours`) on every rig convention (the procedural test rigs,
//! two rest-axis styles each) and the CC0 characters in `assets/`, measured on the output by
//! forward kinematics:
//!
//! - a reach ([`GoalMotion`] driving a two-bone arm stage of an [`IkStack`]) follows its
//!   straight line within 1 mm and arrives at the stated time within one frame, at 30, 60 and
//!   144 Hz, for a duration and for a speed, and goes back when released;
//! - a look-at chain (eyes appended to each rig's head with arbitrary rest rotations) never
//!   leaves its elliptic limits, its eyes never leave theirs, no bone exceeds its clamp, the
//!   head's angular speed never exceeds the bound, a target behind fades back to the animation,
//!   the eyes lead the head, and the motion is the same at 30 and 144 Hz;
//! - aim: an offset ray in the hand reaches 0.1° on targets 0.6–2 m away, with a pole;
//! - twist: twist bones take their share, in-line ones sum to the full twist with the wrist's
//!   own twist reduced and the hand unchanged in model space; rigs without twist bones are
//!   left bit for bit.

use crate::gameplay;

use gameplay::{Rig, rigs};
use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::behaviours::aim::AimChain;
use ik_core::behaviours::look_at::{LookAtChain, LookAtSettings};
use ik_core::behaviours::motion::{Easing, GoalMotion, MotionTiming};
use ik_core::behaviours::twist::TwistDistribution;
use ik_core::glam::{Quat, Vec3};
use ik_core::humanoid::{BodyFrame, HumanoidBone as B};
use ik_core::rotation::twist_angle;
use ik_core::stack::{IkStack, PoseBuffer, Stage, TwoBoneStage};
use ik_core::{Bone, BoneTransform, Skeleton};

/// A small deterministic generator.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
    fn sym(&mut self) -> f32 {
        2.0 * self.next() - 1.0
    }
    fn unit(&mut self) -> Vec3 {
        loop {
            let v = Vec3::new(self.sym(), self.sym(), self.sym());
            if (0.1..=1.0).contains(&v.length()) {
                return v.normalize();
            }
        }
    }
}

fn distance_to_segment(p: Vec3, a: Vec3, b: Vec3) -> f32 {
    let ab = b - a;
    let t = ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0);
    p.distance(a + ab * t)
}

#[test]
fn reach_follows_its_line_and_arrives_on_time() {
    for rig in rigs(true) {
        let sk = &rig.skeleton;
        let m = |r: B| rig.map.get(r).unwrap();
        let (upper, lower, hand) = (m(B::LeftUpperArm), m(B::LeftLowerArm), m(B::LeftHand));
        let ik = TwoBoneIk::try_new(sk, upper, lower, hand)
            .unwrap_or_else(|e| panic!("{}: {e}", rig.name));
        let rest = sk.rest_model_transforms();
        let frame = BodyFrame::from_rest(sk, &rig.map).unwrap();
        let shoulder = rest[upper].translation;
        let reach = shoulder.distance(rest[lower].translation)
            + rest[lower].translation.distance(rest[hand].translation);
        let from = rest[hand].translation;
        let to = shoulder
            + (frame.forward * 0.8 - frame.up * 0.3 + frame.left * 0.2).normalize() * 0.7 * reach;
        let mm = 1e-3 * rig.scale;
        for hz in [30.0f32, 60.0, 144.0] {
            for timing in [
                MotionTiming::Duration(0.8),
                MotionTiming::Speed(0.9 * rig.scale),
            ] {
                for easing in [Easing::Linear, Easing::SmoothStep] {
                    let stated = match timing {
                        MotionTiming::Duration(d) => d,
                        MotionTiming::Speed(s) => from.distance(to) / s,
                    };
                    let mut stack = IkStack::new(sk.clone());
                    let i = stack
                        .push(TwoBoneStage::new(sk, ik.clone(), LimbGoal::new(from)))
                        .unwrap();
                    let input = sk.rest_pose();
                    let mut motion = GoalMotion::try_new(timing, easing).unwrap();
                    motion.engage();
                    let dt = 1.0 / hz;
                    let mut arrived_at = None;
                    let mut worst_line = 0.0f32;
                    for k in 1..=((2.0 * stated + 1.0) * hz) as usize {
                        if k as f32 * dt > stated + 0.5 {
                            motion.release();
                        }
                        motion.advance(dt, from, to);
                        stack.set_input(&input).unwrap();
                        stack
                            .slot_mut(i)
                            .unwrap()
                            .stage
                            .as_two_bone_mut()
                            .unwrap()
                            .goal = LimbGoal::new(motion.position(from, to));
                        stack.solve();
                        let p = stack.model_transform(hand).translation;
                        worst_line = worst_line.max(distance_to_segment(p, from, to));
                        if arrived_at.is_none() && p.distance(to) <= mm {
                            arrived_at = Some(k as f32 * dt);
                        }
                    }
                    let label = format!("{} {hz} Hz {timing:?} {easing:?}", rig.name);
                    assert!(worst_line <= mm, "{label}: {worst_line} off the line");
                    let at = arrived_at.unwrap_or_else(|| panic!("{label}: never arrived"));
                    if easing == Easing::Linear {
                        assert!(
                            (at - stated).abs() <= dt + 1e-4,
                            "{label}: arrived at {at}, stated {stated}"
                        );
                    } else {
                        // Eased: within 1 mm a little before, never after the stated frame.
                        assert!(at <= stated + dt + 1e-4, "{label}: late ({at} vs {stated})");
                    }
                    let back = stack.model_transform(hand).translation;
                    assert!(motion.is_idle(), "{label}: not released");
                    assert!(back.distance(from) <= mm, "{label}: not back");
                }
            }
        }
    }
}

/// `rig`'s skeleton with two eye bones under the head (arbitrary rest rotations, so no eye
/// axis is assumed), and the eye indices.
fn with_eyes(rig: &Rig, rng: &mut Lcg) -> (Skeleton, [usize; 2]) {
    let sk = &rig.skeleton;
    let head = rig.map.get(B::Head).unwrap();
    let frame = BodyFrame::from_rest(sk, &rig.map).unwrap();
    let rest = sk.rest_model_transforms();
    let h = rest[head];
    let mut bones = sk.bones().to_vec();
    let n = bones.len();
    for (name, s) in [("LeftEye", 1.0f32), ("RightEye", -1.0)] {
        let model = h.translation
            + (frame.up * 0.09 + frame.forward * 0.08 + frame.left * (0.032 * s)) * rig.scale;
        let rot = Quat::from_axis_angle(rng.unit(), 3.0 * rng.sym());
        let local = h
            .inverse()
            .mul_transform(&BoneTransform::from_translation_rotation(model, rot));
        bones.push(Bone::new(
            name,
            Some(head),
            BoneTransform {
                scale: Vec3::ONE,
                ..local
            },
        ));
    }
    (Skeleton::try_new(bones).unwrap(), [n, n + 1])
}

fn yaw_pitch(d: Vec3, f: Vec3, l: Vec3, u: Vec3) -> (f32, f32) {
    (d.dot(l).atan2(d.dot(f)), d.dot(u).clamp(-1.0, 1.0).asin())
}

fn frame_of(rot: Quat, fwd: Vec3, up: Vec3) -> (Vec3, Vec3, Vec3) {
    let f = (rot * fwd).normalize();
    let u = (rot * up - f * f.dot(rot * up)).normalize();
    (f, u.cross(f), u)
}

fn angle(a: Vec3, b: Vec3) -> f32 {
    a.cross(b).length().atan2(a.dot(b))
}

#[test]
fn look_at_keeps_its_limits_and_speed_and_fades_behind() {
    let mut rng = Lcg(7);
    for rig in rigs(true) {
        let (sk, eyes) = with_eyes(&rig, &mut rng);
        let settings = LookAtSettings::default();
        let mut finals = Vec::new();
        for hz in [30.0f32, 60.0, 144.0] {
            let mut la = LookAtChain::from_humanoid(&sk, &rig.map, None, settings).unwrap();
            assert_eq!(
                la.eyes().collect::<Vec<_>>(),
                eyes,
                "{}: eyes found",
                rig.name
            );
            let head = la.chain().last().unwrap().bone;
            let (reference, ref_f, ref_u) = la.reference();
            let head_f = la.head_forward_local();
            let frame = BodyFrame::from_rest(&sk, &rig.map).unwrap();
            let eye_f: Vec<Vec3> = {
                let rest = sk.rest_model_transforms();
                eyes.iter()
                    .map(|&e| rest[e].rotation.inverse() * frame.forward)
                    .collect()
            };
            let head_up = {
                let rest = sk.rest_model_transforms();
                rest[head].rotation.inverse() * frame.up
            };
            let input = sk.rest_pose();
            let mut buffer = PoseBuffer::new(&sk);
            let dt = 1.0 / hz;
            la.dt = dt;
            let rest = sk.rest_model_transforms();
            let center = rest[head].translation;
            let mut last_forward: Option<Vec3> = None;
            let mut worst_speed = 0.0f32;
            let mut worst_norm = 0.0f32;
            let mut worst_eye_norm = 0.0f32;
            let mut eye_led = false;
            let total = (6.0 * hz) as usize;
            let mut at_one_second = Vec3::ZERO;
            for k in 0..total {
                let t = k as f32 * dt;
                // 0–4 s: circling the head at 1.2 m (through the back), bobbing up and down;
                // 4–6 s: straight behind.
                let target = if t < 4.0 {
                    let a = 0.9 * t + 0.3;
                    center
                        + (frame.forward * a.cos()
                            + frame.left * a.sin()
                            + frame.up * (0.8 * (2.3 * t).sin()))
                            * 1.2
                            * rig.scale
                } else {
                    center - frame.forward * 1.5 * rig.scale
                };
                la.target = Some(target);
                buffer.set_pose(&input);
                let report = la.solve(&sk, &mut buffer).unwrap();
                assert!(report.angle_residual().is_finite());
                let model = buffer.model_transforms(&sk).to_vec();
                let parent = reference.map_or(Quat::IDENTITY, |p| model[p].rotation);
                let (f, l, u) = frame_of(parent, ref_f, ref_u);
                let forward = (model[head].rotation * head_f).normalize();
                let (y, p) = yaw_pitch(forward, f, l, u);
                worst_norm = worst_norm.max(settings.limits.norm(y, p));
                if let Some(prev) = last_forward {
                    worst_speed = worst_speed.max(angle(prev, forward) / dt);
                }
                last_forward = Some(forward);
                let (hf, hl, hu) = frame_of(model[head].rotation, head_f, head_up);
                for (j, &e) in eyes.iter().enumerate() {
                    let d = (model[e].rotation * eye_f[j]).normalize();
                    let (ey, ep) = yaw_pitch(d, hf, hl, hu);
                    worst_eye_norm = worst_eye_norm.max(settings.eye_limits.norm(ey, ep));
                    // Eyes first: 0.1 s in, the eyes point closer to the target than the head.
                    if (k as f32 * dt - 0.1).abs() < 0.5 * dt {
                        let to_target = target - model[e].translation;
                        eye_led = angle(d, to_target) + 0.02 < angle(forward, to_target);
                    }
                }
                for b in la.chain() {
                    let turned = (input.rotations[b.bone].inverse()
                        * buffer.pose().rotations[b.bone])
                        .normalize();
                    let a = 2.0 * turned.w.abs().min(1.0).acos();
                    assert!(a <= b.max_angle + 1e-3, "{}: bone clamp {a}", rig.name);
                }
                if (t - 1.0).abs() < 0.5 * dt {
                    at_one_second = forward;
                }
            }
            let label = format!("{} {hz} Hz", rig.name);
            assert!(
                worst_norm <= 1.0 + 1e-3,
                "{label}: head limit norm {worst_norm}"
            );
            assert!(
                worst_eye_norm <= 1.0 + 1e-3,
                "{label}: eye limit norm {worst_eye_norm}"
            );
            let bound = settings.smoothing.max_speed;
            assert!(
                worst_speed <= bound * 1.001 + 1e-3,
                "{label}: {worst_speed} > {bound} rad/s"
            );
            assert!(eye_led, "{label}: the eyes did not lead");
            // Behind for 2 s: back at the animation's (rest) forward.
            let model = buffer.model_transforms(&sk).to_vec();
            let forward = (model[head].rotation * head_f).normalize();
            assert!(
                angle(forward, frame.forward) < 1f32.to_radians(),
                "{label}: not faded back"
            );
            finals.push(at_one_second);
        }
        // Frame-rate independence: 30 Hz and 144 Hz within 2° after 1 s.
        let d = angle(finals[0], finals[2]);
        assert!(
            d < 2f32.to_radians(),
            "{}: 30 vs 144 Hz differ by {d}",
            rig.name
        );
    }
}

#[test]
fn aim_reaches_a_tenth_of_a_degree_with_an_offset_ray() {
    let mut rng = Lcg(11);
    for rig in rigs(true) {
        let sk = &rig.skeleton;
        let root = rig.map.get(B::Chest).or(rig.map.get(B::Spine)).unwrap();
        let hand = rig.map.get(B::RightHand).unwrap();
        let frame = BodyFrame::from_rest(sk, &rig.map).unwrap();
        let rest = sk.rest_model_transforms();
        let mut worst = 0.0f32;
        let mut worst_pole = 0.0f32;
        for _ in 0..20 {
            let axis = rng.unit();
            let origin = rng.unit() * 0.1 * rig.scale;
            let pole_axis = axis.any_orthonormal_vector();
            let mut aim = AimChain::try_new(sk, root, hand, axis, origin, None)
                .unwrap()
                .with_pole_axis(pole_axis)
                .unwrap();
            let dir = (frame.forward + rng.unit() * 0.7).normalize();
            let target = rest[hand].translation + dir * (0.6 + 1.4 * rng.next()) * rig.scale;
            aim.target = Some(target);
            aim.pole = Some(frame.up);
            let mut buffer = PoseBuffer::new(sk);
            let report = aim.solve(sk, &mut buffer).unwrap();
            let tip = buffer.model_transform(sk, hand);
            let (o, a) = aim.model_ray(&tip);
            let err = angle(a, target - o);
            assert!(report.converged(), "{}: {report:?}", rig.name);
            worst = worst.max(err);
            let have = tip.rotation * aim.ray().1.any_orthonormal_vector();
            let (have, want) = (have - a * a.dot(have), frame.up - a * a.dot(frame.up));
            if want.length() > 0.26 {
                worst_pole = worst_pole.max(angle(have, want));
            }
        }
        assert!(
            worst <= 0.1f32.to_radians(),
            "{}: aim error {worst} rad",
            rig.name
        );
        assert!(
            worst_pole <= 2f32.to_radians(),
            "{}: pole error {worst_pole}",
            rig.name
        );
    }
}

#[test]
fn twist_bones_take_their_share_and_rigs_without_them_are_untouched() {
    let mut with_twist = 0;
    for rig in rigs(true) {
        let sk = &rig.skeleton;
        let mut stage = TwistDistribution::from_humanoid(sk, &rig.map);
        let mut input = sk.rest_pose();
        let rest_rot: Vec<Quat> = sk.bones().iter().map(|b| b.rest.rotation).collect();
        // Twist each hand by 70° about its forearm (plus a wrist bend), as IK would.
        for side in [B::LeftHand, B::RightHand] {
            let (hand, lower) = (
                rig.map.get(side).unwrap(),
                rig.map.get(side.parent().unwrap()).unwrap(),
            );
            let Some(axis) = sk.rest_bone_direction(lower, hand) else {
                continue;
            };
            let parent = sk.parent(hand).unwrap();
            let mut above = Quat::IDENTITY;
            let mut b = parent;
            while b != lower {
                above = rest_rot[b] * above;
                b = sk.parent(b).unwrap();
            }
            let rel = above * rest_rot[hand];
            let bend = Quat::from_axis_angle(axis.any_orthonormal_vector(), 0.35);
            let twisted = bend * Quat::from_axis_angle(axis, 70f32.to_radians()) * rel;
            input.rotations[hand] = (above.inverse() * twisted).normalize();
        }
        let mut buffer = PoseBuffer::new(sk);
        buffer.set_pose(&input);
        let before = buffer.model_transforms(sk).to_vec();
        stage.solve(sk, &mut buffer).unwrap();
        let out = buffer.pose().clone();
        if stage.segments().is_empty() {
            assert_eq!(out, input, "{}: changed without twist bones", rig.name);
            continue;
        }
        with_twist += 1;
        let after = buffer.model_transforms(sk).to_vec();
        for s in stage.segments() {
            let (lower, hand) = s.ends();
            let full = s.twist(&input);
            assert!(full.abs() > 0.5, "{}: test twist too small", rig.name);
            assert!(
                (s.twist(&out) - full).abs() < 1e-4,
                "{}: total changed",
                rig.name
            );
            let hand_turn = (before[hand].rotation.inverse() * after[hand].rotation).normalize();
            assert!(
                2.0 * hand_turn.w.abs().min(1.0).acos() < 1e-3,
                "{}: hand turned",
                rig.name
            );
            let moved = before[hand].translation.distance(after[hand].translation);
            assert!(moved < 1e-3 * rig.scale, "{}: hand moved {moved}", rig.name);
            let mut last_inline = 0.0f32;
            for t in s.twist_bones() {
                let got = s.twist_of(sk, &out, t.bone).unwrap();
                assert!(
                    (got - t.fraction * full).abs() < 3e-3,
                    "{}: twist bone {} has {got}, wants {}",
                    rig.name,
                    sk.bones()[t.bone].name,
                    t.fraction * full
                );
                if sk.is_ancestor_or_self(t.bone, hand) {
                    last_inline = last_inline.max(t.fraction);
                }
            }
            if last_inline > 0.0 {
                // The local twists along lower arm → twist bones → hand sum to the full twist,
                // and the hand's own share dropped from all of it to (1 − f) of it.
                let parent = sk.parent(hand).unwrap();
                let own =
                    s.twist_of(sk, &out, hand).unwrap() - s.twist_of(sk, &out, parent).unwrap();
                let before_own = full
                    - if parent == lower {
                        0.0
                    } else {
                        s.twist_of(sk, &input, parent).unwrap()
                    };
                assert!(
                    (own - (1.0 - last_inline) * full).abs() < 3e-3,
                    "{}",
                    rig.name
                );
                assert!(
                    own.abs() < before_own.abs() - 0.1,
                    "{}: wrist not relieved",
                    rig.name
                );
            }
        }
    }
    assert!(with_twist >= 5, "only {with_twist} rigs with twist bones");
}

#[test]
fn bad_input_is_reported_or_ignored_never_nan() {
    use ik_core::behaviours::look_at::{EllipticLimits, Smoothing};
    let rig = &rigs(false)[0];
    let sk = &rig.skeleton;
    let g = |r: B| rig.map.get(r).unwrap();
    let mut look =
        LookAtChain::from_humanoid(sk, &rig.map, None, LookAtSettings::default()).unwrap();
    let mut aim =
        AimChain::try_new(sk, g(B::Chest), g(B::RightHand), Vec3::X, Vec3::Y, None).unwrap();
    let mut twist = TwistDistribution::from_humanoid(sk, &rig.map);
    let mut buffer = PoseBuffer::new(sk);
    for (target, dt) in [
        (Vec3::NAN, 1.0 / 60.0),
        (Vec3::INFINITY, f32::NAN),
        (Vec3::splat(1e30), -1.0),
        (Vec3::ZERO, f32::INFINITY),
    ] {
        look.target = Some(target);
        look.dt = dt;
        aim.target = Some(target);
        look.solve(sk, &mut buffer).unwrap();
        let _ = aim.solve(sk, &mut buffer).unwrap();
        twist.solve(sk, &mut buffer).unwrap();
        assert!(buffer.pose().is_finite(), "target {target}, dt {dt}");
    }
    // A non-finite input pose: an error, the pose is not made worse.
    let mut bad = sk.rest_pose();
    bad.rotations[g(B::Spine)] = Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0);
    buffer.set_pose(&bad);
    assert!(look.solve(sk, &mut buffer).is_err());
    // Malformed set-up: errors, not panics.
    let bad_limits = LookAtSettings {
        limits: EllipticLimits::symmetric(0.0, 1.0),
        ..LookAtSettings::default()
    };
    assert!(LookAtChain::from_humanoid(sk, &rig.map, None, bad_limits).is_err());
    let bad_smoothing = LookAtSettings {
        smoothing: Smoothing {
            max_speed: f32::NAN,
            smooth_time: 0.1,
        },
        ..LookAtSettings::default()
    };
    assert!(look.set_settings(bad_smoothing).is_err());
    assert!(
        AimChain::try_new(
            sk,
            g(B::Chest),
            g(B::RightHand),
            Vec3::ZERO,
            Vec3::ZERO,
            None
        )
        .is_err()
    );
    assert!(
        AimChain::try_new(sk, g(B::RightHand), g(B::Chest), Vec3::X, Vec3::ZERO, None).is_err()
    );
    assert!(GoalMotion::try_new(MotionTiming::Speed(-1.0), Easing::Linear).is_err());
}

#[test]
fn upper_arm_and_thigh_twist_bones_take_back_the_twist_near_the_joint() {
    let mut rng = Lcg(5);
    for rig in rigs(true) {
        let sk0 = &rig.skeleton;
        let g = |r: B| rig.map.get(r).unwrap();
        let rest = sk0.rest_model_transforms();
        // Leaf twist bones a quarter of the way down the left upper arm and the right thigh,
        // with arbitrary rest rotations.
        let mut bones = sk0.bones().to_vec();
        let n = bones.len();
        for (name, upper, lower) in [
            ("upperarm_twist_01_l", B::LeftUpperArm, B::LeftLowerArm),
            ("thigh_twist_01_r", B::RightUpperLeg, B::RightLowerLeg),
        ] {
            let (u, l) = (g(upper), g(lower));
            let at = rest[u].translation.lerp(rest[l].translation, 0.25);
            let rot = Quat::from_axis_angle(rng.unit(), 3.0 * rng.sym());
            let local = rest[u]
                .inverse()
                .mul_transform(&BoneTransform::from_translation_rotation(at, rot));
            bones.push(Bone::new(
                name,
                Some(u),
                BoneTransform {
                    scale: Vec3::ONE,
                    ..local
                },
            ));
        }
        let sk = Skeleton::try_new(bones).unwrap();
        let mut stage = TwistDistribution::from_humanoid(&sk, &rig.map);
        assert_eq!(stage.counter_segments().len(), 2, "{}", rig.name);
        let mut input = sk.rest_pose();
        let theta = 60f32.to_radians();
        for c in stage.counter_segments() {
            let b = c.bone();
            input.rotations[b] =
                sk.bones()[b].rest.rotation * Quat::from_axis_angle(c.axis(), theta);
        }
        let mut buffer = PoseBuffer::new(&sk);
        buffer.set_pose(&input);
        stage.solve(&sk, &mut buffer).unwrap();
        let out = buffer.pose();
        for c in stage.counter_segments() {
            let b = c.bone();
            assert_eq!(
                out.rotations[b], input.rotations[b],
                "{}: the bone itself moved",
                rig.name
            );
            assert!((c.twist(out) - theta).abs() < 1e-4);
            for (k, t) in c.twist_bones().enumerate() {
                assert!(
                    (t.fraction - 0.25).abs() < 1e-3,
                    "{}: fraction {}",
                    rig.name,
                    t.fraction
                );
                let i = n + if b == g(B::LeftUpperArm) { 0 } else { 1 };
                assert_eq!(t.bone, i, "{k}");
                let rest_b = sk.bones()[i].rest.rotation;
                // Relative to the bone's own rest frame, the twist bone keeps f·θ of the twist.
                let kept = twist_angle(
                    sk.bones()[b].rest.rotation.inverse()
                        * out.rotations[b]
                        * out.rotations[i]
                        * rest_b.inverse(),
                    c.axis(),
                );
                assert!(
                    (kept - t.fraction * theta).abs() < 2e-3,
                    "{}: keeps {kept}",
                    rig.name
                );
            }
        }
    }
}

/// Once settled on a still target inside the limits, the head points at it from between the
/// eyes and each eye points at it from where it is, measured on the written pose (forward
/// kinematics), on every rig with eyes at arbitrary rest rotations.
#[test]
fn settled_eyes_and_head_point_at_a_target_within_their_limits() {
    let mut rng = Lcg(11);
    for rig in rigs(true) {
        let (sk, eyes) = with_eyes(&rig, &mut rng);
        let mut la =
            LookAtChain::from_humanoid(&sk, &rig.map, None, LookAtSettings::default()).unwrap();
        let head = la.chain().last().unwrap().bone;
        let head_f = la.head_forward_local();
        let frame = BodyFrame::from_rest(&sk, &rig.map).unwrap();
        let rest = sk.rest_model_transforms();
        let eye_f: Vec<Vec3> = eyes
            .iter()
            .map(|&e| rest[e].rotation.inverse() * frame.forward)
            .collect();
        let target = rest[head].translation
            + (frame.forward * 1.5 + frame.left * 0.35 - frame.up * 0.25) * rig.scale;
        let input = sk.rest_pose();
        let mut buffer = PoseBuffer::new(&sk);
        la.dt = 1.0 / 60.0;
        la.target = Some(target);
        for _ in 0..180 {
            buffer.set_pose(&input);
            la.solve(&sk, &mut buffer).unwrap();
        }
        let model = buffer.model_transforms(&sk).to_vec();
        let between = eyes.iter().map(|&e| model[e].translation).sum::<Vec3>() / eyes.len() as f32;
        let forward = (model[head].rotation * head_f).normalize();
        let head_miss = angle(forward, target - between);
        assert!(
            head_miss < 1e-4,
            "{}: head off by {head_miss} rad",
            rig.name
        );
        for (j, &e) in eyes.iter().enumerate() {
            let d = (model[e].rotation * eye_f[j]).normalize();
            let miss = angle(d, target - model[e].translation);
            assert!(miss < 1e-3, "{}: eye {j} off by {miss} rad", rig.name);
        }
        // Without eyes: the head points at it from its own (turned) position.
        let mut la =
            LookAtChain::from_humanoid(&rig.skeleton, &rig.map, None, LookAtSettings::default())
                .unwrap();
        assert_eq!(la.eyes().count(), 0, "{}", rig.name);
        let input = rig.skeleton.rest_pose();
        let mut buffer = PoseBuffer::new(&rig.skeleton);
        la.dt = 1.0 / 60.0;
        la.target = Some(target);
        for _ in 0..180 {
            buffer.set_pose(&input);
            la.solve(&rig.skeleton, &mut buffer).unwrap();
        }
        let model = buffer.model_transforms(&rig.skeleton);
        let forward = (model[head].rotation * head_f).normalize();
        let miss = angle(forward, target - model[head].translation);
        assert!(
            miss < 1e-4,
            "{}: head (no eyes) off by {miss} rad",
            rig.name
        );
    }
}
