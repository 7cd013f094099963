//! Spline IK (fit error reported, small for a curve the chain can lie on, twist) and the
//! angular velocity limiter (its bound never exceeded, hostile dt).

use glam::{Quat, Vec3};
use ik_core::spline::{CurveKind, SplineGoal, SplineIk, SplineIkStage};
use ik_core::stack::IkStack;
use ik_core::velocity::AngularVelocityLimiter;

use crate::chains;
use crate::rng;

use chains::{AXES, STYLES, chain_rig};
use rng::Rng;

#[test]
fn a_curve_the_chain_can_lie_on_is_fitted_closely() {
    for kind in [CurveKind::CatmullRom, CurveKind::Bezier] {
        for axis in AXES {
            for style in STYLES {
                let n = 12;
                let s = chain_rig(n, axis, style, 21);
                let chain = s.chain(1, n).unwrap();
                // A gentle bend of the chain itself: its joints lie on a smooth curve.
                let mut bent = s.rest_pose();
                for b in 1..=n {
                    bent.rotations[b] *= Quat::from_rotation_z(0.12);
                }
                let mut joints: Vec<Vec3> = s.model_transforms(&bent)[1..=n]
                    .iter()
                    .map(|m| m.translation)
                    .collect();
                // The curve runs a bone past the tip (a chain exactly as long as its curve
                // may end a round-off past it).
                joints.push(2.0 * joints[n - 1] - joints[n - 2]);
                let points = match kind {
                    CurveKind::CatmullRom => joints.clone(),
                    // Bézier segments through every joint, handles a third of the way along
                    // Catmull-Rom tangents.
                    _ => {
                        let mut p = vec![joints[0]];
                        for i in 0..joints.len() - 1 {
                            let prev = if i > 0 {
                                joints[i - 1]
                            } else {
                                2.0 * joints[0] - joints[1]
                            };
                            let next2 = if i + 2 < joints.len() {
                                joints[i + 2]
                            } else {
                                2.0 * joints[i + 1] - joints[i]
                            };
                            p.push(joints[i] + (joints[i + 1] - prev) / 6.0);
                            p.push(joints[i + 1] - (next2 - joints[i]) / 6.0);
                            p.push(joints[i + 1]);
                        }
                        p
                    }
                };
                let goal = SplineGoal {
                    kind,
                    points,
                    twist_start: 0.0,
                    twist_end: 0.0,
                };
                let mut stack = IkStack::new(s.clone());
                let slot = stack
                    .push(SplineIkStage::new(
                        SplineIk::try_new(&s, &chain).unwrap(),
                        goal.clone(),
                    ))
                    .unwrap();
                stack.solve();
                let report = *stack
                    .slot_mut(slot)
                    .unwrap()
                    .stage
                    .as_custom_mut::<SplineIkStage>()
                    .unwrap()
                    .report();
                let length: f32 = chain.segment_lengths(&s, &s.rest_pose()).iter().sum();
                assert!(
                    report.fit_error < 1e-3 * length,
                    "{kind:?} {axis} {style:?}: {report:?}"
                );
                assert_eq!(report.past_end, 0);
                // Measured independently: every joint within 0.5 % of the chain's length of
                // the densely evaluated curve.
                let dense: Vec<Vec3> = (0..=4000)
                    .map(|k| goal.evaluate(k as f32 / 4000.0).unwrap())
                    .collect();
                for i in 1..=n {
                    let p = stack.model_transform(i).translation;
                    let d = dense
                        .iter()
                        .map(|q| q.distance(p))
                        .fold(f32::INFINITY, f32::min);
                    assert!(
                        d < 5e-3 * length,
                        "{kind:?} {axis} {style:?}: joint {i} {d} off"
                    );
                }
            }
        }
    }
}

#[test]
fn twist_and_a_short_curve_are_reported() {
    let n = 8;
    let s = chain_rig(n, AXES[3], chains::RestStyle::Rotated, 5);
    let chain = s.chain(1, n).unwrap();
    let rest = s.model_transforms(&s.rest_pose());
    let root = rest[1].translation;
    let length: f32 = chain.segment_lengths(&s, &s.rest_pose()).iter().sum();
    let straight = |reach: f32, twist_end: f32| {
        let mut ik = SplineIk::try_new(&s, &chain).unwrap();
        let goal = SplineGoal {
            kind: CurveKind::CatmullRom,
            points: vec![root, root + Vec3::X * reach * 0.5, root + Vec3::X * reach],
            twist_start: 0.0,
            twist_end,
        };
        let mut pose = s.rest_pose();
        let parent = s.model_transforms(&pose)[0];
        let r = ik.solve_with_parent(&mut pose, &goal, &parent).unwrap();
        (r, s.model_transforms(&pose))
    };
    let (r, plain) = straight(length * 1.2, 0.0);
    assert!(r.fit_error < 1e-4 * length && r.past_end == 0, "{r:?}");
    let (_, twisted) = straight(length * 1.2, 1.0);
    // The last bone is rolled by 1 rad about the line relative to the untwisted fit.
    let rel = twisted[n - 1].rotation * plain[n - 1].rotation.inverse();
    let roll = ik_core::rotation::twist_angle(rel, Vec3::X);
    assert!((roll - 1.0).abs() < 1e-3, "roll {roll}");
    // Positions unchanged by the roll.
    for i in 1..=n {
        assert!(twisted[i].translation.distance(plain[i].translation) < 1e-4);
    }
    // A curve half as long as the chain: bones past its end, a large error reported.
    let (r, _) = straight(length * 0.5, 0.0);
    assert!(r.past_end > 0, "{r:?}");
    assert!(r.fit_error > 0.1 * length, "{r:?}");
}

#[test]
fn the_velocity_limit_is_never_exceeded() {
    let s = chain_rig(5, Vec3::Y, chains::RestStyle::Rotated, 3);
    let bones = [1usize, 2, 3, 4, 5];
    let mut stack = IkStack::new(s.clone());
    let max_speed = 4.0;
    let slot = stack
        .push(AngularVelocityLimiter::new(&bones, max_speed))
        .unwrap();
    let mut rng = Rng(77);
    let mut previous: Option<Vec<Quat>> = None;
    let hostile = [0.0, -0.5, f32::NAN, 1e-9];
    for k in 0..600 {
        // The input jumps to a random pose every frame (a worst case), or holds still.
        let mut input = s.rest_pose();
        if k < 400 {
            for &b in &bones {
                input.rotations[b] = Quat::from_scaled_axis(rng.vec() * 3.0);
            }
        }
        let dt = if k % 23 == 7 {
            hostile[(k / 23) % hostile.len()]
        } else {
            1.0 / (30.0 + 200.0 * rng.next())
        };
        stack.set_input(&input).unwrap();
        stack
            .slot_mut(slot)
            .unwrap()
            .stage
            .as_custom_mut::<AngularVelocityLimiter>()
            .unwrap()
            .dt = dt;
        stack.solve();
        let out: Vec<Quat> = bones.iter().map(|&b| stack.pose().rotations[b]).collect();
        assert!(out.iter().all(|q| q.is_finite()));
        if let Some(prev) = &previous {
            let bound = if dt > 0.0 { max_speed * dt } else { 0.0 };
            for (a, b) in prev.iter().zip(&out) {
                // Exact angle (f64), not glam's approximate acos.
                let r = (a.inverse() * *b).as_dquat();
                let angle = 2.0 * r.xyz().length().atan2(r.w.abs());
                assert!(
                    angle as f32 <= bound + 1e-5,
                    "frame {k}: turned {angle} > {bound}"
                );
            }
        }
        previous = Some(out);
    }
    // Held still for 200 frames at ≥ 4 rad/s·(1/230 s): caught up with the rest pose.
    for &b in &bones {
        let q = stack.pose().rotations[b];
        assert!(q.angle_between(s.bones()[b].rest.rotation) < 1e-3);
    }
}
