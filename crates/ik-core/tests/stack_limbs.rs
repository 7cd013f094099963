//! `stack::LimbBatch` against the stack's own solve: the same stacks of `[left arm, right arm,
//! left leg, right leg, left arm again]` solved with the batch (then `IkStack::solve_from`)
//! and with `IkStack::solve` must agree on every bone within 1e-5 of the limb length and on
//! every stage's outcome — over weights 1, 0.5, 0 and NaN, disabled stages, rejected goals,
//! orientations, poles, swivels and unreachable targets; the input bit for bit where a stage
//! keeps it (weight 0, disabled, rejected). And the batch steps aside (returns 0) when the
//! stack changed under it or a batched stage has a warm start on, rebuilds itself when a
//! stage's settings change, and ends its run at a limb with twist bones.

use glam::{Quat, Vec3};
use ik_core::analytic::{LimbGoal, LimbSettings, TwoBoneIk};
use ik_core::humanoid::{FullBodySolver, HumanoidBone as H, HumanoidMap};
use ik_core::stack::{AnyStage, IkStack, LimbBatch, StageOutcome, StageReport, TwoBoneStage};
use ik_core::{Pose, Skeleton};
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

use crate::rng;
use rng::Rng;

const LIMBS: [[H; 3]; 5] = [
    [H::LeftUpperArm, H::LeftLowerArm, H::LeftHand],
    [H::RightUpperArm, H::RightLowerArm, H::RightHand],
    [H::LeftUpperLeg, H::LeftLowerLeg, H::LeftFoot],
    [H::RightUpperLeg, H::RightLowerLeg, H::RightFoot],
    [H::LeftUpperArm, H::LeftLowerArm, H::LeftHand],
];

struct Rig {
    skeleton: Skeleton,
    map: HumanoidMap,
    input: Pose,
    limbs: Vec<TwoBoneIk>,
}

fn rig(convention: RigConvention, axes: RestAxes, seed: u64) -> Rig {
    let skeleton = test_rig(convention, axes);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let solver = FullBodySolver::new(&skeleton, &map).unwrap();
    let mut rng = Rng(seed);
    let input =
        random_pose_within_limits(&skeleton, &map, solver.limits(), 0.4, &mut || rng.next());
    let limbs = LIMBS
        .iter()
        .map(|l| {
            let [a, b, c] = l.map(|h| map.get(h).unwrap());
            TwoBoneIk::try_new(&skeleton, a, b, c).unwrap()
        })
        .collect();
    Rig {
        skeleton,
        map,
        input,
        limbs,
    }
}

fn stack(r: &Rig) -> IkStack {
    let mut stack = IkStack::new(r.skeleton.clone());
    for ik in &r.limbs {
        let goal = LimbGoal::new(Vec3::ZERO);
        stack
            .push(TwoBoneStage::new(&r.skeleton, ik.clone(), goal))
            .unwrap();
    }
    stack
}

/// Frame `frame`'s goal, weight and enabled flag for stage `k` of character `c`: a mix of
/// every case, different per character and frame.
fn stage_input(r: &Rig, rng: &mut Rng, c: usize, k: usize, frame: usize) -> (LimbGoal, f32, bool) {
    let model = r.skeleton.model_transforms(&r.input);
    let bones = r.limbs[k].bones();
    let tip = model[bones[2]];
    let mid = model[bones[1]].translation;
    let case = c + k + frame;
    let reach = if case.is_multiple_of(5) { 1.5 } else { 0.25 };
    let mut goal = LimbGoal::new(tip.translation + reach * rng.vec());
    goal = match case % 3 {
        0 => goal.with_pole(mid + 0.3 * rng.vec()),
        1 => goal.with_swivel(rng.signed()),
        _ => goal,
    };
    if case % 4 == 1 {
        goal = goal.with_orientation(Quat::from_scaled_axis(0.5 * rng.vec()) * tip.rotation);
    }
    if (c + 3 * k + frame) % 11 == 4 {
        goal.target = Vec3::NAN;
    }
    let weight = match (c + 2 * k + frame) % 7 {
        1 => 0.5,
        3 => 0.0,
        5 if k == 1 => f32::NAN,
        _ => 1.0,
    };
    let enabled = (c + k + 2 * frame) % 6 != 2;
    (goal, weight, enabled)
}

fn limb_length(r: &Rig, k: usize) -> f32 {
    let model = r.skeleton.model_transforms(&r.skeleton.rest_pose());
    let [a, b, c] = r.limbs[k].bones().map(|i| model[i].translation);
    a.distance(b) + b.distance(c)
}

/// The angle between two rotations, accurate for small angles (`Quat::angle_between` goes
/// through `acos` of a dot product near 1, whose f32 steps are ~1e-3 rad there).
fn small_angle(a: Quat, b: Quat) -> f32 {
    let d = a.inverse() * b;
    2.0 * d.xyz().length().min(1.0).asin()
}

fn bits(q: Quat) -> [u32; 4] {
    q.to_array().map(f32::to_bits)
}

#[test]
fn a_limb_batch_solves_like_the_stack() {
    let mut checked = [0usize; 5];
    let mut rigs = Vec::new();
    for (c, convention) in RigConvention::ALL.into_iter().enumerate() {
        let axes = if c % 2 == 0 {
            RestAxes::PlusY
        } else {
            RestAxes::MinusZ
        };
        let r = rig(convention, axes, 11 + c as u64);
        let tolerance = 1e-5 * (0..4).map(|k| limb_length(&r, k)).fold(f32::MAX, f32::min);
        let (mut scalar, mut batched) = (stack(&r), stack(&r));
        // (Rigs with a twist bone between a limb's joints are not batched: see the last test.)
        let Some(mut batch) = LimbBatch::try_new(&batched) else {
            continue;
        };
        rigs.push(convention);
        assert_eq!(
            batch.len(),
            4,
            "the fifth stage reads the first one's bones"
        );
        let mut rng = Rng(100 + c as u64);
        for frame in 0..24 {
            for k in 0..5 {
                let (goal, weight, enabled) = stage_input(&r, &mut rng, c, k, frame);
                for s in [&mut scalar, &mut batched] {
                    let slot = s.slot_mut(k).unwrap();
                    slot.stage.as_two_bone_mut().unwrap().goal = goal;
                    (slot.weight, slot.enabled) = (weight, enabled);
                }
                batch.set_goal(k, &goal);
            }
            scalar.set_input(&r.input).unwrap();
            batched.set_input(&r.input).unwrap();
            scalar.solve();
            let first = batch.solve(&mut batched);
            assert_eq!(first, 4);
            batched.solve_from(first);
            for k in 0..5 {
                let (a, b) = (
                    &scalar.slot(k).unwrap().outcome,
                    &batched.slot(k).unwrap().outcome,
                );
                match (a, b) {
                    (
                        StageOutcome::Solved(StageReport::TwoBone(ra)),
                        StageOutcome::Solved(StageReport::TwoBone(rb)),
                    ) => {
                        assert_eq!(
                            (ra.reachable, ra.flex_limited, ra.pole_fallback),
                            (rb.reachable, rb.flex_limited, rb.pole_fallback),
                            "frame {frame} stage {k}"
                        );
                        assert!((ra.position_error - rb.position_error).abs() <= tolerance);
                        assert!((ra.target_distance - rb.target_distance).abs() <= tolerance);
                        checked[0] += 1;
                    }
                    (StageOutcome::Failed(ea), StageOutcome::Failed(eb)) => {
                        assert_eq!(ea, eb, "frame {frame} stage {k}");
                        checked[1] += 1;
                    }
                    (StageOutcome::Disabled, StageOutcome::Disabled)
                    | (StageOutcome::Faded, StageOutcome::Faded) => checked[2] += 1,
                    _ => panic!("frame {frame} stage {k}: {a:?} vs {b:?}"),
                }
                // Where a batched stage keeps its input, it does so bit for bit (stage 0's
                // bones are stage 4's too).
                let slot = batched.slot(k).unwrap();
                let kept = !slot.enabled
                    || slot.weight == 0.0
                    || matches!(slot.outcome, StageOutcome::Failed(_));
                if (1..4).contains(&k) && kept {
                    for b in r.limbs[k].bones() {
                        assert_eq!(
                            bits(batched.pose().rotations[b]),
                            bits(r.input.rotations[b])
                        );
                    }
                    checked[3] += 1;
                } else if (1..4).contains(&k) {
                    // The batch moved the limb (not two copies of the input).
                    let root = r.limbs[k].bones()[0];
                    if bits(batched.pose().rotations[root]) != bits(r.input.rotations[root]) {
                        checked[4] += 1;
                    }
                }
            }
            let (ma, mb) = (
                scalar.model_transforms().to_vec(),
                batched.model_transforms(),
            );
            for (i, (a, b)) in ma.iter().zip(mb).enumerate() {
                let d = a.translation.distance(b.translation);
                assert!(d <= tolerance, "frame {frame}: bone {i} is {d} apart");
                assert!(b.rotation.is_finite());
            }
        }
    }
    every_case_came_up(
        &rigs,
        &checked,
        "solved, failed, disabled or faded, kept, moved",
    );
}

#[test]
fn a_limb_batch_steps_aside_when_its_stages_changed_and_rebuilds_on_new_settings() {
    let r = rig(RigConvention::Mixamo, RestAxes::PlusY, 5);
    let model = r.skeleton.model_transforms(&r.input);
    let mut batched = stack(&r);
    let mut scalar = stack(&r);
    for s in [&mut batched, &mut scalar] {
        for (k, ik) in r.limbs.iter().enumerate() {
            let tip = model[ik.bones()[2]].translation;
            s.slot_mut(k).unwrap().stage.as_two_bone_mut().unwrap().goal =
                LimbGoal::new(tip + Vec3::new(0.05, 0.1, 0.05));
        }
        s.set_input(&r.input).unwrap();
    }
    let mut batch = LimbBatch::try_new(&batched).unwrap();
    // A warm start on a batched stage: the batch would solve from the input, so it steps aside.
    batched.slot_mut(1).unwrap().warm_start = true;
    assert_eq!(batch.solve(&mut batched), 0);
    batched.slot_mut(1).unwrap().warm_start = false;
    // New settings: rebuilt, and still the stack's result.
    let settings = LimbSettings {
        flex_min: 0.4,
        flex_max: 1.2,
        soft_reach: 0.1,
        bend_axis: None,
    };
    for s in [&mut batched, &mut scalar] {
        s.slot_mut(0)
            .unwrap()
            .stage
            .as_two_bone_mut()
            .unwrap()
            .set_settings(settings)
            .unwrap();
    }
    assert_eq!(batch.solve(&mut batched), 4);
    batched.solve_from(4);
    scalar.solve();
    let (ma, mb) = (
        scalar.model_transforms().to_vec(),
        batched.model_transforms(),
    );
    for (a, b) in ma.iter().zip(mb) {
        assert!(a.translation.distance(b.translation) < 1e-5);
    }
    // A stage replaced by another limb: the batch no longer fits the stack.
    let other = TwoBoneIk::try_new(
        &r.skeleton,
        r.map.get(H::LeftUpperLeg).unwrap(),
        r.map.get(H::LeftLowerLeg).unwrap(),
        r.map.get(H::LeftFoot).unwrap(),
    )
    .unwrap();
    batched.slot_mut(1).unwrap().stage = AnyStage::two_bone(TwoBoneStage::new(
        &r.skeleton,
        other,
        LimbGoal::new(Vec3::ZERO),
    ));
    assert_eq!(batch.solve(&mut batched), 0);
    batched.remove(4);
    batched.remove(3);
    batched.remove(2);
    batched.remove(1);
    assert_eq!(batch.solve(&mut batched), 0, "fewer stages than the batch");
}

#[test]
fn a_limb_with_twist_bones_ends_the_run() {
    let r = rig(RigConvention::Mixamo, RestAxes::PlusY, 9);
    // Shoulder → forearm → hand: the upper arm lies between root and mid (as a twist bone
    // would; the Unreal test rig's forearm twist bone between forearm and hand does too).
    let twisted = TwoBoneIk::try_new(
        &r.skeleton,
        r.map.get(H::LeftShoulder).unwrap(),
        r.map.get(H::LeftLowerArm).unwrap(),
        r.map.get(H::LeftHand).unwrap(),
    )
    .unwrap();
    let goal = LimbGoal::new(Vec3::ZERO);
    let mut s = IkStack::new(r.skeleton.clone());
    for ik in [&r.limbs[1], &r.limbs[2], &twisted, &r.limbs[3]] {
        s.push(TwoBoneStage::new(&r.skeleton, ik.clone(), goal))
            .unwrap();
    }
    assert_eq!(LimbBatch::try_new(&s).map(|b| b.len()), Some(2));
    s.move_stage(2, 0);
    assert!(LimbBatch::try_new(&s).is_none(), "no run before the twist");
}

/// `stack::LimbBatchStage`, the batched limbs as one stage claiming the run of the first four
/// limbs, against the same four limbs as `TwoBoneStage`s, with the fifth (the left arm again,
/// reading the run's output) after them in both stacks: every bone within 1e-5 of the limb
/// length and 1e-5 rad, over per-limb weights 1, 0.5 and 0 (and a disabled limb as weight 0), rejected
/// goals (the limb keeps its input bit for bit, its error in `reports`), orientations, poles,
/// swivels and unreachable targets.
#[test]
fn the_limb_batch_stage_solves_like_the_scalar_limbs() {
    use ik_core::stack::{LimbBatchStage, StackError};
    let mut checked = [0usize; 3];
    let mut rigs = Vec::new();
    for (c, convention) in RigConvention::ALL.into_iter().enumerate() {
        let axes = if c % 2 == 0 {
            RestAxes::MinusZ
        } else {
            RestAxes::PlusY
        };
        let r = rig(convention, axes, 31 + c as u64);
        let tolerance = 1e-5 * (0..4).map(|k| limb_length(&r, k)).fold(f32::MAX, f32::min);
        let scalar_limbs = r.limbs[..4]
            .iter()
            .map(|ik| (ik.clone(), LimbGoal::new(Vec3::ZERO)));
        // (Rigs with a twist bone between a limb's joints are refused, as by `LimbBatch`.)
        let Ok(stage) = LimbBatchStage::try_new(&r.skeleton, scalar_limbs) else {
            continue;
        };
        rigs.push(convention);
        assert_eq!(stage.len(), 4);
        let mut scalar = stack(&r);
        let mut batched = IkStack::new(r.skeleton.clone());
        batched.push(stage).unwrap();
        batched
            .push(TwoBoneStage::new(
                &r.skeleton,
                r.limbs[4].clone(),
                LimbGoal::new(Vec3::ZERO),
            ))
            .unwrap();
        let mut rng = Rng(300 + c as u64);
        for frame in 0..24 {
            for k in 0..5 {
                let (goal, weight, enabled) = stage_input(&r, &mut rng, c, k, frame);
                // The run's weight and enabled flag are per limb; NaN is refused there.
                let weight = if weight.is_nan() { 1.0 } else { weight };
                let slot = scalar.slot_mut(k).unwrap();
                slot.stage.as_two_bone_mut().unwrap().goal = goal;
                (slot.weight, slot.enabled) = (weight, enabled);
                if k < 4 {
                    let stage = batched
                        .slot_mut(0)
                        .unwrap()
                        .stage
                        .get_mut::<LimbBatchStage>()
                        .unwrap();
                    stage.set_goal(k, goal).unwrap();
                    stage
                        .set_weight(k, if enabled { weight } else { 0.0 })
                        .unwrap();
                } else {
                    let slot = batched.slot_mut(1).unwrap();
                    slot.stage.as_two_bone_mut().unwrap().goal = goal;
                    (slot.weight, slot.enabled) = (weight, enabled);
                }
            }
            scalar.set_input(&r.input).unwrap();
            batched.set_input(&r.input).unwrap();
            scalar.solve();
            batched.solve();
            let stage = batched
                .slot(0)
                .unwrap()
                .stage
                .get::<LimbBatchStage>()
                .unwrap();
            for k in 0..4 {
                let slot = scalar.slot(k).unwrap();
                match (&slot.outcome, &stage.reports()[k]) {
                    (StageOutcome::Failed(StackError::Analytic(ea)), Err(eb)) => {
                        assert_eq!(ea, eb, "frame {frame} limb {k}");
                        // Kept its input, bit for bit (limbs 1..4 are not the fifth's).
                        if k > 0 {
                            for b in r.limbs[k].bones() {
                                assert_eq!(
                                    bits(batched.pose().rotations[b]),
                                    bits(r.input.rotations[b])
                                );
                            }
                        }
                        checked[1] += 1;
                    }
                    (StageOutcome::Solved(_), Ok(_)) => checked[0] += 1,
                    (StageOutcome::Disabled | StageOutcome::Faded, _) => checked[2] += 1,
                    (a, b) => panic!("frame {frame} limb {k}: {a:?} vs {b:?}"),
                }
            }
            let (ma, mb) = (
                scalar.model_transforms().to_vec(),
                batched.model_transforms(),
            );
            for (i, (a, b)) in ma.iter().zip(mb).enumerate() {
                let d = a.translation.distance(b.translation);
                assert!(
                    d <= tolerance,
                    "{convention:?} frame {frame}: bone {i} is {d} apart"
                );
                let angle = small_angle(a.rotation, b.rotation);
                assert!(
                    angle <= 1e-5,
                    "{convention:?} frame {frame}: bone {i} turned {angle} rad"
                );
            }
        }
        // A NaN weight is refused and the weight kept; an index past the run is refused.
        let stage = batched
            .slot_mut(0)
            .unwrap()
            .stage
            .get_mut::<LimbBatchStage>()
            .unwrap();
        let before = stage.weight(1);
        assert_eq!(
            stage.set_weight(1, f32::NAN),
            Err(StackError::NonFiniteWeight)
        );
        assert_eq!(stage.weight(1), before);
        assert!(matches!(
            stage.set_goal(4, LimbGoal::new(Vec3::ZERO)),
            Err(StackError::Batch(_))
        ));
    }
    every_case_came_up(&rigs, &checked, "solved, rejected, disabled or faded");
}

/// A seeded comparison ran on at least three rig conventions (Mixamo among them) and met each
/// of its cases (named by `cases`) more than ten times.
fn every_case_came_up(rigs: &[RigConvention], checked: &[usize], cases: &str) {
    println!("rigs {rigs:?}; {cases}: {checked:?}");
    assert!(
        rigs.len() >= 3 && rigs.contains(&RigConvention::Mixamo),
        "{rigs:?}"
    );
    assert!(
        checked.iter().all(|&n| n > 10),
        "every case came up: {checked:?}"
    );
}

/// A run whose limbs depend on each other (the left arm twice: the second reads the bones the
/// first writes) is refused with the bone and the reading limb's root.
#[test]
fn the_limb_batch_stage_refuses_dependent_limbs() {
    use ik_core::stack::{LimbBatchStage, StackError};
    let r = rig(RigConvention::Mixamo, RestAxes::PlusY, 7);
    let goal = LimbGoal::new(Vec3::ZERO);
    let limbs = [0, 1, 4].map(|k| (r.limbs[k].clone(), goal));
    let err = LimbBatchStage::try_new(&r.skeleton, limbs).unwrap_err();
    let root = r.limbs[4].bones()[0];
    assert!(
        matches!(err, StackError::BadBonePair { other, .. } if other == root),
        "{err:?}"
    );
}
