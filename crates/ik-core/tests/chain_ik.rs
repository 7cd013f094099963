//! FABRIK and CCD chains: reachable targets reached within 1 mm on chains of 3–32 bones along
//! every rest axis with plain, rotated and scaled rest transforms; joint limits never violated
//! (with poles and tip orientations); still targets give bit-identical output.

use glam::{Quat, Vec2, Vec3};
use ik_core::chain::{ChainGoal, ChainIk, ChainIkStage, ChainMethod, ChainSettings};
use ik_core::limits::{JointLimit, SwingTwistLimit};
use ik_core::stack::{IkStack, StageOutcome};
use ik_core::{BoneTransform, Pose, Skeleton};

use crate::chains;
use crate::rng;

use chains::{AXES, STYLES, chain_rig};
use rng::Rng;

const METHODS: [ChainMethod; 2] = [ChainMethod::Fabrik, ChainMethod::Ccd];

/// The reach tests' acceptance: 1 mm (model units are metres here).
const REACH: f32 = 1e-3;

fn settings(method: ChainMethod) -> ChainSettings {
    ChainSettings {
        method,
        max_iterations: 1000,
        tolerance: Some(1e-4),
    }
}

/// A random pose of the chain bones: each turned from rest by up to `max_angle`.
fn random_pose(s: &Skeleton, rng: &mut Rng, max_angle: f32) -> Pose {
    let mut pose = s.rest_pose();
    for b in 1..s.len() {
        let v = rng.vec();
        pose.rotations[b] *= Quat::from_scaled_axis(v.normalize_or_zero() * max_angle * rng.next());
    }
    pose
}

fn solve(
    ik: &ChainIk,
    s: &Skeleton,
    pose: &mut Pose,
    goal: &ChainGoal,
) -> ik_core::chain::ChainReport {
    let parent = s.model_transforms(pose)[0];
    let mut scratch = ik.scratch();
    ik.solve_with_parent(pose, goal, &parent, &mut scratch)
        .unwrap()
}

#[test]
fn reachable_targets_are_reached_on_every_rest_convention() {
    let mut worst = [0.0f32; 2];
    for (m, method) in METHODS.into_iter().enumerate() {
        for n in [3usize, 8, 16, 32] {
            for (a, axis) in AXES.into_iter().enumerate() {
                for (st, style) in STYLES.into_iter().enumerate() {
                    let seed = (n * 100 + a * 10 + st) as u64;
                    let s = chain_rig(n, axis, style, seed);
                    let chain = s.chain(1, n).unwrap();
                    let ik = ChainIk::try_new(&s, &chain, &[], settings(method)).unwrap();
                    let mut rng = Rng(seed ^ 0xABCD);
                    for _ in 0..4 {
                        let target_pose = random_pose(&s, &mut rng, 0.6);
                        let target = s.model_transforms(&target_pose)[n].translation;
                        let mut pose = s.rest_pose();
                        let lengths_before = chain.segment_lengths(&s, &pose);
                        let report = solve(&ik, &s, &mut pose, &ChainGoal::new(target));
                        let tip = s.model_transforms(&pose)[n].translation;
                        let err = tip.distance(target);
                        worst[m] = worst[m].max(err);
                        assert!(
                            err < REACH,
                            "{method:?} n={n} axis={axis} {style:?}: {err} m off ({report:?})"
                        );
                        assert!((report.position_error - err).abs() < 1e-5);
                        // Bones only turned: lengths kept.
                        for (a, b) in lengths_before.iter().zip(chain.segment_lengths(&s, &pose)) {
                            assert!((a - b).abs() < 1e-5 * a.max(1.0));
                        }
                    }
                }
            }
        }
    }
    println!("worst residual: FABRIK {} m, CCD {} m", worst[0], worst[1]);
}

fn random_limit(rng: &mut Rng, axis: Vec3) -> JointLimit {
    let swing_axis = axis.any_orthonormal_vector();
    JointLimit::SwingTwist(SwingTwistLimit {
        twist_axis: axis,
        swing_axis,
        swing_half_angles: Vec2::new(0.1 + 0.6 * rng.next(), 0.1 + 0.6 * rng.next()),
        twist_min: -0.3 * rng.next(),
        twist_max: 0.3 * rng.next(),
    })
}

#[test]
fn limits_are_never_violated() {
    for method in METHODS {
        for n in [3usize, 12] {
            for (a, axis) in AXES.into_iter().enumerate() {
                for style in STYLES {
                    let seed = (n * 7 + a) as u64;
                    let s = chain_rig(n, axis, style, seed);
                    let chain = s.chain(1, n).unwrap();
                    let mut rng = Rng(seed);
                    let limits: Vec<JointLimit> =
                        (0..n).map(|_| random_limit(&mut rng, axis)).collect();
                    let ik = ChainIk::try_new(&s, &chain, &limits, settings(method)).unwrap();
                    for k in 0..6 {
                        // In and out of reach, with and without pole and tip rotation.
                        let target = s.model_transform(&s.rest_pose(), 1).translation
                            + rng.vec() * (0.2 + 0.2 * n as f32 * 0.1);
                        let goal = ChainGoal {
                            target,
                            pole: (k % 2 == 0).then(|| target + rng.vec()),
                            tip_rotation: (k % 3 == 0)
                                .then(|| Quat::from_scaled_axis(rng.vec() * 2.0)),
                        };
                        let mut pose = s.rest_pose();
                        let report = solve(&ik, &s, &mut pose, &goal);
                        assert!(report.position_error.is_finite());
                        for (i, &b) in chain.bones().iter().enumerate() {
                            let rest = s.bones()[b].rest;
                            assert!(
                                limits[i].contains(
                                    rest.rotation,
                                    rest.translation,
                                    pose.rotations[b],
                                    pose.translations[b],
                                    1e-4
                                ),
                                "{method:?} n={n} axis={axis} {style:?}: bone {i} outside its limit"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn tip_orientation_and_pole_are_met() {
    for method in METHODS {
        let n = 6;
        let s = chain_rig(n, Vec3::NEG_Z, chains::RestStyle::Rotated, 3);
        let chain = s.chain(1, n).unwrap();
        let ik = ChainIk::try_new(&s, &chain, &[], settings(method)).unwrap();
        let target_pose = random_pose(&s, &mut Rng(9), 0.5);
        let target = s.model_transforms(&target_pose)[n].translation;
        let q = Quat::from_rotation_z(0.7) * Quat::from_rotation_x(-0.4);
        let goal = ChainGoal {
            target,
            pole: None,
            tip_rotation: Some(q),
        };
        let mut pose = s.rest_pose();
        let report = solve(&ik, &s, &mut pose, &goal);
        let tip = s.model_transforms(&pose)[n];
        assert!(
            tip.translation.distance(target) < REACH,
            "{method:?}: {report:?}"
        );
        assert!(
            tip.rotation.angle_between(q) < 1e-3,
            "{method:?}: {report:?}"
        );

        // A pole on either side bends the interior joints toward it.
        let root = s.model_transform(&pose, 1).translation;
        let mid_goal = |side: f32| {
            let axis = (target - root).normalize();
            let across = axis.any_orthonormal_vector();
            let goal = ChainGoal {
                target: root + (target - root) * 0.8,
                pole: Some(root + (target - root) * 0.5 + across * side),
                tip_rotation: None,
            };
            let mut pose = s.rest_pose();
            solve(&ik, &s, &mut pose, &goal);
            let mid = s.model_transform(&pose, n / 2).translation;
            (mid - root).dot(across)
        };
        let (plus, minus) = (mid_goal(1.0), mid_goal(-1.0));
        assert!(
            plus > 0.0 && minus < 0.0,
            "{method:?}: pole sides {plus} {minus}"
        );
    }
}

#[test]
fn still_targets_give_bit_identical_output() {
    for method in METHODS {
        for warm in [false, true] {
            let n = 10;
            let s = chain_rig(n, Vec3::X, chains::RestStyle::Scaled, 11);
            let chain = s.chain(1, n).unwrap();
            let ik = ChainIk::try_new(&s, &chain, &[], settings(method)).unwrap();
            let target = s.model_transforms(&random_pose(&s, &mut Rng(4), 0.5))[n].translation;
            let mut stack = IkStack::new(s.clone());
            let slot = stack
                .push(ChainIkStage::new(ik, ChainGoal::new(target)))
                .unwrap();
            stack.slot_mut(slot).unwrap().warm_start = warm;
            let input = s.rest_pose();
            let mut outputs: Vec<Vec<Quat>> = Vec::new();
            for _ in 0..6 {
                stack.set_input(&input).unwrap();
                stack.solve();
                assert!(matches!(
                    stack.slot(slot).unwrap().outcome,
                    StageOutcome::Solved(_)
                ));
                outputs.push(stack.pose().rotations.clone());
            }
            for o in &outputs[2..] {
                let same = o
                    .iter()
                    .zip(&outputs[1])
                    .all(|(a, b)| a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits));
                assert!(
                    same,
                    "{method:?} warm={warm}: output changed with a still target"
                );
            }
            let tip = stack.model_transform(n).translation;
            assert!(tip.distance(target) < REACH);
        }
    }
}

#[test]
fn two_to_sixty_four_bones_and_hostile_goals() {
    for n in [2usize, 64] {
        let s = chain_rig(n, Vec3::Y, chains::RestStyle::Plain, 5);
        let chain = s.chain(1, n).unwrap();
        for method in METHODS {
            let ik = ChainIk::try_new(&s, &chain, &[], settings(method)).unwrap();
            let target = s.model_transforms(&random_pose(&s, &mut Rng(8), 0.3))[n].translation;
            let mut pose = s.rest_pose();
            let r = solve(&ik, &s, &mut pose, &ChainGoal::new(target));
            assert!(r.position_error < REACH, "{method:?} n={n}: {r:?}");
            // Out of reach: straightened toward it, finite, not converged.
            let far = Vec3::new(100.0, 50.0, 0.0);
            let mut pose = s.rest_pose();
            let r = solve(&ik, &s, &mut pose, &ChainGoal::new(far));
            assert!(!r.converged && r.position_error.is_finite());
            assert!(pose.rotations.iter().all(|q| q.is_finite()));
            // NaN goal: an error, the pose untouched.
            let mut pose = s.rest_pose();
            let parent = BoneTransform::IDENTITY;
            let bad = ChainGoal::new(Vec3::NAN);
            assert!(
                ik.solve_with_parent(&mut pose, &bad, &parent, &mut ik.scratch())
                    .is_err()
            );
            assert_eq!(pose, s.rest_pose());
        }
    }
}

#[test]
fn a_locked_joint_keeps_its_incoming_rotation() {
    for method in METHODS {
        let n = 6;
        let s = chain_rig(n, Vec3::Z, chains::RestStyle::Rotated, 12);
        let chain = s.chain(1, n).unwrap();
        let mut limits = vec![JointLimit::Free; n];
        limits[2] = JointLimit::Locked;
        let ik = ChainIk::try_new(&s, &chain, &limits, settings(method)).unwrap();
        let mut pose = random_pose(&s, &mut Rng(31), 0.4);
        let incoming = pose.rotations[chain.bones()[2]];
        let target = s.model_transforms(&random_pose(&s, &mut Rng(32), 0.5))[n].translation;
        solve(&ik, &s, &mut pose, &ChainGoal::new(target));
        assert_eq!(pose.rotations[chain.bones()[2]], incoming, "{method:?}");
        // The other bones moved.
        assert_ne!(
            pose.rotations[chain.bones()[0]],
            s.rest_pose().rotations[chain.bones()[0]]
        );
    }
}
