//! The IK stack: a one-stage stack equals the bare solver bit for bit, stages see the previous
//! stage's output, weights blend once (0 = input bit for bit, 0.5 stationary), disabled and
//! failing stages, and the lazy model transforms against a full forward-kinematics pass.

use glam::{Quat, Vec3};
use ik_core::analytic::{AnalyticError, LimbGoal, TwoBoneIk};
use ik_core::humanoid::{Effector, FullBodySolver, HumanoidBone as H, HumanoidMap};
use ik_core::jacobian::{JacobianSolver, JointSpec, SolverSettings, TaskSpec};
#[allow(deprecated, reason = "checks the migration path")]
use ik_core::stack::CustomStage;
use ik_core::stack::{
    CustomReport, FullBodyStage, IkStack, JacobianStage, NonFinite, PoseBuffer, StackError, Stage,
    StageOutcome, StageReport, TwoBoneStage,
};
use ik_core::{Pose, Skeleton};
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

use crate::rng;
use rng::Rng;

struct Rig {
    skeleton: Skeleton,
    map: HumanoidMap,
    /// An animated input pose (within limits, not the rest pose).
    input: Pose,
}

fn rig(axes: RestAxes, seed: u64) -> Rig {
    let skeleton = test_rig(RigConvention::Mixamo, axes);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let solver = FullBodySolver::new(&skeleton, &map).unwrap();
    let mut rng = Rng(seed);
    let input =
        random_pose_within_limits(&skeleton, &map, solver.limits(), 0.4, &mut || rng.next());
    Rig {
        skeleton,
        map,
        input,
    }
}

fn left_arm(r: &Rig) -> TwoBoneIk {
    TwoBoneIk::try_new(
        &r.skeleton,
        r.map.get(H::LeftUpperArm).unwrap(),
        r.map.get(H::LeftLowerArm).unwrap(),
        r.map.get(H::LeftHand).unwrap(),
    )
    .unwrap()
}

/// A reachable point for the left hand: near the current hand, pulled toward the shoulder.
fn arm_target(r: &Rig, pose: &Pose) -> Vec3 {
    let model = r.skeleton.model_transforms(pose);
    let hand = model[r.map.get(H::LeftHand).unwrap()].translation;
    let shoulder = model[r.map.get(H::LeftUpperArm).unwrap()].translation;
    hand.lerp(shoulder, 0.3) + Vec3::new(0.03, -0.05, 0.08)
}

/// Full-body goals: the current effectors, the pelvis pushed 11.2 cm sideways and down.
fn full_body(r: &Rig) -> FullBodyStage {
    let mut solver = FullBodySolver::new(&r.skeleton, &r.map).unwrap();
    let mut goals = solver.goals_at_pose(&r.skeleton, &r.input);
    goals.get_mut(Effector::Pelvis).position += Vec3::new(0.1, -0.05, 0.0);
    goals.get_mut(Effector::Pelvis).rotation_weight = 0.0;
    FullBodyStage::new(solver, goals, r.skeleton.len())
}

fn bits(p: &Pose) -> Vec<u32> {
    p.rotations
        .iter()
        .flat_map(|q| q.to_array())
        .chain(p.translations.iter().flat_map(Vec3::to_array))
        .map(f32::to_bits)
        .collect()
}

fn solved(outcome: &StageOutcome) -> StageReport {
    match outcome {
        StageOutcome::Solved(r) => *r,
        other => panic!("stage not solved: {other:?}"),
    }
}

#[test]
fn one_stage_stack_equals_the_bare_solver_bit_for_bit() {
    for axes in [RestAxes::PlusY, RestAxes::MinusZ] {
        let r = rig(axes, 3);
        // Two-bone: the bare solve given the parent from a full FK pass.
        let ik = left_arm(&r);
        let goal = LimbGoal::new(arm_target(&r, &r.input)).with_swivel(0.4);
        let mut bare = r.input.clone();
        let parent = r.skeleton.model_transforms(&bare)[r.skeleton.parent(ik.bones()[0]).unwrap()];
        let bare_report = ik
            .solve_with_parent(&r.skeleton, &mut bare, &goal, &parent)
            .unwrap();
        let mut stack = IkStack::new(r.skeleton.clone());
        stack
            .push(TwoBoneStage::new(&r.skeleton, ik, goal))
            .unwrap();
        stack.set_input(&r.input).unwrap();
        stack.solve();
        assert_eq!(bits(stack.pose()), bits(&bare));
        assert_eq!(
            solved(&stack.slots()[0].outcome),
            StageReport::TwoBone(bare_report)
        );
        assert_ne!(bits(&bare), bits(&r.input), "the limb moved");

        // Full body: a stack's first solve is cold (see the stack's "Warm start").
        let stage = full_body(&r);
        let mut bare_solver = stage.solver.clone();
        let mut bare = r.input.clone();
        let bare_report = bare_solver
            .solve_cold(&r.skeleton, &mut bare, &stage.goals)
            .unwrap();
        let mut stack = IkStack::new(r.skeleton.clone());
        stack.push(stage).unwrap();
        stack.set_input(&r.input).unwrap();
        stack.solve();
        assert_eq!(bits(stack.pose()), bits(&bare));
        assert_eq!(
            solved(&stack.slots()[0].outcome),
            StageReport::FullBody(bare_report)
        );

        // Jacobian: the left arm's joints reach the same target.
        let arm = r.map.get(H::LeftUpperArm).unwrap();
        let hand = r.map.get(H::LeftHand).unwrap();
        let joints = r
            .skeleton
            .chain(arm, hand)
            .unwrap()
            .bones()
            .iter()
            .map(|&b| JointSpec::ball(b))
            .collect();
        let solver = JacobianSolver::try_new(
            &r.skeleton,
            joints,
            vec![TaskSpec::position(hand, Vec3::ZERO)],
            SolverSettings::default(),
        )
        .unwrap();
        let mut stage = JacobianStage::new(solver.clone());
        stage.goals.tasks[0].point = arm_target(&r, &r.input);
        let mut bare = r.input.clone();
        let mut scratch = solver.scratch();
        let bare_report = solver
            .solve(&r.skeleton, &mut bare, &stage.goals, &mut scratch)
            .unwrap();
        let mut stack = IkStack::new(r.skeleton.clone());
        stack.push(stage).unwrap();
        stack.set_input(&r.input).unwrap();
        stack.solve();
        assert_eq!(bits(stack.pose()), bits(&bare));
        assert_eq!(
            solved(&stack.slots()[0].outcome),
            StageReport::Jacobian(bare_report)
        );
    }
}

#[test]
fn an_arm_after_the_full_body_meets_its_target_exactly() {
    for (axes, seed) in [
        (RestAxes::PlusY, 1),
        (RestAxes::PlusX, 2),
        (RestAxes::MinusZ, 5),
    ] {
        let r = rig(axes, seed);
        let mut stack = IkStack::new(r.skeleton.clone());
        stack.push(full_body(&r)).unwrap();
        let target = arm_target(&r, &r.input);
        let arm = stack
            .push(TwoBoneStage::new(
                &r.skeleton,
                left_arm(&r),
                LimbGoal::new(target),
            ))
            .unwrap();
        stack.set_input(&r.input).unwrap();
        let report = stack.solve();
        assert_eq!((report.solved, report.failed), (2, 0));
        // The full body moved the hips (and so the shoulder) ...
        let hips = r.map.get(H::Hips).unwrap();
        assert!(stack.pose().translations[hips].distance(r.input.translations[hips]) > 0.05);
        // ... and the arm, solved on that output, meets its target (FK of the output).
        let hand = r.map.get(H::LeftHand).unwrap();
        let model = r.skeleton.model_transforms(stack.pose());
        let miss = model[hand].translation.distance(target);
        assert!(miss < 1e-5, "{axes:?}: the hand is {miss} from its target");
        assert!(solved(&stack.slots()[arm].outcome).converged());
        // Without the full body the same arm solve also meets it, from another shoulder.
        let without = {
            let mut s = IkStack::new(r.skeleton.clone());
            s.push(TwoBoneStage::new(
                &r.skeleton,
                left_arm(&r),
                LimbGoal::new(target),
            ))
            .unwrap();
            s.set_input(&r.input).unwrap();
            s.solve();
            s.pose().clone()
        };
        let arm_bone = r.map.get(H::LeftUpperArm).unwrap();
        assert!(stack.pose().rotations[arm_bone].angle_between(without.rotations[arm_bone]) > 1e-3);
    }
}

fn arm_stack(r: &Rig, weight: f32) -> (IkStack, Vec3) {
    let mut stack = IkStack::new(r.skeleton.clone());
    let target = arm_target(r, &r.input);
    stack
        .push(TwoBoneStage::new(
            &r.skeleton,
            left_arm(r),
            LimbGoal::new(target).with_swivel(-0.3),
        ))
        .unwrap();
    stack.slots_mut()[0].weight = weight;
    (stack, target)
}

#[test]
fn weight_zero_returns_the_input_bit_for_bit() {
    let r = rig(RestAxes::PlusY, 9);
    let (mut stack, _) = arm_stack(&r, 0.0);
    stack.push(full_body(&r)).unwrap();
    stack.slots_mut()[1].weight = 0.0;
    stack.set_input(&r.input).unwrap();
    let report = stack.solve();
    assert_eq!(report.solved, 0, "a stage at weight 0 is not solved");
    assert_eq!(report.failed, 0);
    for slot in stack.slots() {
        assert_eq!(slot.outcome, StageOutcome::Faded);
    }
    assert_eq!(report.first_changed, None);
    assert_eq!(bits(stack.pose()), bits(&r.input));
    // Faded back in, both stages solve again (cold) and move the bones.
    for slot in stack.slots_mut() {
        slot.weight = 1.0;
    }
    stack.set_input(&r.input).unwrap();
    let report = stack.solve();
    assert_eq!(
        report.solved,
        2,
        "{:?}",
        stack.slots().iter().map(|s| &s.outcome).collect::<Vec<_>>()
    );
    assert!(report.first_changed.is_some(), "the stages moved the bones");
}

#[test]
fn weight_half_blends_once_and_is_stationary() {
    let r = rig(RestAxes::PlusX, 4);
    let (mut full, _) = arm_stack(&r, 1.0);
    full.set_input(&r.input).unwrap();
    full.solve();
    let (mut half, _) = arm_stack(&r, 0.5);
    let mut outputs = Vec::new();
    for _ in 0..3 {
        half.set_input(&r.input).unwrap();
        half.solve();
        outputs.push(bits(half.pose()));
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]), "re-run moves");
    for &b in &left_arm(&r).bones() {
        let expected = r.input.rotations[b].slerp(full.pose().rotations[b], 0.5);
        let got = half.pose().rotations[b];
        assert!(
            [Vec3::X, Vec3::Y, Vec3::Z]
                .iter()
                .all(|&v| (got * v).distance(expected * v) < 1e-6),
            "bone {b} is not halfway"
        );
        let full_angle = r.input.rotations[b].angle_between(full.pose().rotations[b]);
        if full_angle > 1e-2 {
            let ratio = r.input.rotations[b].angle_between(got) / full_angle;
            assert!((ratio - 0.5).abs() < 1e-3, "bone {b}: {ratio}");
        }
    }
    // Bones the stage does not write are the input's.
    let arm_bones = left_arm(&r).bones();
    for b in (0..r.skeleton.len()).filter(|b| !arm_bones.contains(b)) {
        assert_eq!(half.pose().rotations[b], r.input.rotations[b]);
    }
}

#[test]
fn a_disabled_stage_is_skipped() {
    let r = rig(RestAxes::PlusY, 6);
    let (mut stack, target) = arm_stack(&r, 1.0);
    let fb = stack.push(full_body(&r)).unwrap();
    stack.move_stage(fb, 0);
    stack.slots_mut()[0].enabled = false;
    stack.set_input(&r.input).unwrap();
    stack.solve();
    assert_eq!(stack.slots()[0].outcome, StageOutcome::Disabled);
    let (mut alone, _) = arm_stack(&r, 1.0);
    alone.set_input(&r.input).unwrap();
    alone.solve();
    assert_eq!(bits(stack.pose()), bits(alone.pose()));
    let hand = r.map.get(H::LeftHand).unwrap();
    assert!(stack.model_transform(hand).translation.distance(target) < 1e-5);
}

#[test]
fn a_failing_stage_is_reported_and_the_others_still_run() {
    let r = rig(RestAxes::MinusZ, 8);
    let mut stack = IkStack::new(r.skeleton.clone());
    stack.push(full_body(&r)).unwrap();
    // A NaN target.
    stack
        .push(TwoBoneStage::new(
            &r.skeleton,
            left_arm(&r),
            LimbGoal::new(Vec3::new(f32::NAN, 0.0, 0.0)),
        ))
        .unwrap();
    // A NaN weight.
    stack
        .push(TwoBoneStage::new(
            &r.skeleton,
            left_arm(&r),
            LimbGoal::new(Vec3::ZERO),
        ))
        .unwrap();
    stack.slots_mut()[2].weight = f32::NAN;
    let right = TwoBoneIk::try_new(
        &r.skeleton,
        r.map.get(H::RightUpperArm).unwrap(),
        r.map.get(H::RightLowerArm).unwrap(),
        r.map.get(H::RightHand).unwrap(),
    )
    .unwrap();
    let hand = r.map.get(H::RightHand).unwrap();
    let target =
        r.skeleton.model_transforms(&r.input)[hand].translation + Vec3::new(0.0, 0.08, 0.05);
    stack
        .push(TwoBoneStage::new(&r.skeleton, right, LimbGoal::new(target)))
        .unwrap();
    stack.set_input(&r.input).unwrap();
    let report = stack.solve();
    assert_eq!((report.solved, report.failed), (2, 2));
    assert!(matches!(
        stack.slots()[1].outcome,
        StageOutcome::Failed(StackError::Analytic(AnalyticError::NonFiniteGoal(_)))
    ));
    assert_eq!(
        stack.slots()[2].outcome,
        StageOutcome::Failed(StackError::NonFiniteWeight)
    );
    assert!(stack.pose().is_finite());
    assert!(stack.model_transform(hand).translation.distance(target) < 1e-5);
    // The failed stages left the full body's output of the left arm alone.
    let mut fb_only = IkStack::new(r.skeleton.clone());
    fb_only.push(full_body(&r)).unwrap();
    fb_only.set_input(&r.input).unwrap();
    fb_only.solve();
    for b in left_arm(&r).bones() {
        assert_eq!(stack.pose().rotations[b], fb_only.pose().rotations[b]);
    }
}

#[test]
fn lazy_model_transforms_equal_a_full_forward_kinematics_pass() {
    let r = rig(RestAxes::PlusY, 11);
    let mut rng = Rng(42);
    let mut buffer = PoseBuffer::new(&r.skeleton);
    buffer.set_pose(&r.input);
    let n = r.skeleton.len();
    let pick = |rng: &mut Rng| ((rng.next() * n as f32) as usize).min(n - 1);
    for step in 0..400 {
        match step % 3 {
            0 => {
                let b = pick(&mut rng);
                let q = Quat::from_rotation_x(rng.next() - 0.5)
                    * buffer.pose().rotations[b]
                    * Quat::from_rotation_z(rng.next() - 0.5);
                let t = buffer.pose().translations[b] + Vec3::splat(rng.next() * 0.01);
                buffer.set_local(b, q, t);
            }
            1 => {
                let b = pick(&mut rng);
                let full = r.skeleton.model_transforms(buffer.pose());
                let lazy = buffer.model_transform(&r.skeleton, b);
                assert_eq!(lazy, full[b], "step {step}, bone {b}");
                assert!(buffer.valid_prefix() > b);
            }
            _ => {
                let full = r.skeleton.model_transforms(buffer.pose());
                assert_eq!(buffer.model_transforms(&r.skeleton), &full[..]);
            }
        }
    }
}

/// A look-at-like custom stage: turns the head so its rest aim axis points at a target, and
/// records the hand position it saw (to check it runs on the previous stages' output).
#[derive(Debug)]
struct LookAt {
    head: [usize; 1],
    aim: Vec3,
    target: Vec3,
    watch: usize,
    seen: Vec3,
}

impl Stage for LookAt {
    fn bones(&self) -> &[usize] {
        &self.head
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        if !self.target.is_finite() {
            return Err(StackError::NonFinite(NonFinite::Goal));
        }
        self.seen = buffer.model_transform(skeleton, self.watch).translation;
        let head = self.head[0];
        let model = buffer.model_transform(skeleton, head);
        let now = model.rotation * self.aim;
        let want = (self.target - model.translation).normalize_or_zero();
        let turn = Quat::from_rotation_arc(now, want);
        let local = buffer.pose().rotations[head];
        let parent = model.rotation * local.inverse();
        let new_local = (parent.inverse() * turn * model.rotation).normalize();
        let t = buffer.pose().translations[head];
        buffer.set_local(head, new_local, t);
        let after = buffer.model_transform(skeleton, head);
        let angle = (after.rotation * self.aim).angle_between(want);
        Ok(CustomReport {
            converged: angle < 1e-3,
            iterations: 1,
            position_residual: 0.0,
            angle_residual: angle,
        }
        .into())
    }
}

#[test]
fn full_body_then_arm_then_custom_look_at_each_see_the_previous_output() {
    let r = rig(RestAxes::PlusY, 13);
    let mut stack = IkStack::new(r.skeleton.clone());
    stack.push(full_body(&r)).unwrap();
    let target = arm_target(&r, &r.input);
    stack
        .push(TwoBoneStage::new(
            &r.skeleton,
            left_arm(&r),
            LimbGoal::new(target),
        ))
        .unwrap();
    let head = r.map.get(H::Head).unwrap();
    let hand = r.map.get(H::LeftHand).unwrap();
    let look = stack
        .push(LookAt {
            head: [head],
            aim: Vec3::Y,
            target: Vec3::new(0.5, 1.8, 2.0),
            watch: hand,
            seen: Vec3::NAN,
        })
        .unwrap();
    stack.set_input(&r.input).unwrap();
    stack.solve();
    let model = r.skeleton.model_transforms(stack.pose());
    // The arm saw the full body's output: its hand is on target in the final pose.
    assert!(model[hand].translation.distance(target) < 1e-5);
    // The look-at saw the arm's output: the hand where the arm put it.
    let seen = stack
        .slot_mut(look)
        .unwrap()
        .stage
        .as_custom_mut::<LookAt>()
        .unwrap()
        .seen;
    assert!(
        seen.distance(target) < 1e-5,
        "the look-at saw the hand at {seen}"
    );
    let StageReport::Custom(report) = solved(&stack.slots()[look].outcome) else {
        panic!("custom report expected");
    };
    assert!(report.converged, "{report:?}");
    // A bad custom input is an error; the rest of the stack stands.
    stack
        .slot_mut(look)
        .unwrap()
        .stage
        .as_custom_mut::<LookAt>()
        .unwrap()
        .target = Vec3::NAN;
    stack.set_input(&r.input).unwrap();
    let report = stack.solve();
    assert_eq!((report.solved, report.failed), (2, 1));
    assert_eq!(stack.pose().rotations[head], {
        let mut s = IkStack::new(r.skeleton.clone());
        s.push(full_body(&r)).unwrap();
        s.set_input(&r.input).unwrap();
        s.solve();
        s.pose().rotations[head]
    });
}

#[test]
fn malformed_setup_is_an_error_not_a_panic() {
    // The old trait still works (deprecated): the migration path for users' stages.
    #[derive(Debug)]
    struct Out([usize; 1]);
    #[allow(deprecated, reason = "checks the migration path")]
    impl CustomStage for Out {
        fn bones(&self) -> &[usize] {
            &self.0
        }
        fn solve(&mut self, _: &Skeleton, _: &mut PoseBuffer) -> Result<CustomReport, StackError> {
            Ok(CustomReport::default())
        }
    }
    let r = rig(RestAxes::Identity, 1);
    let mut stack = IkStack::new(r.skeleton.clone());
    let n = r.skeleton.len();
    assert_eq!(
        stack.push(Out([n])).unwrap_err(),
        StackError::BoneOutOfRange { bone: n, len: n }
    );
    assert!(stack.set_input(&Pose::default()).is_err());
    // A non-finite input pose: every stage reports it, nothing panics, no NaN is invented.
    let (mut stack, _) = arm_stack(&r, 1.0);
    let mut bad = r.input.clone();
    bad.rotations[0] = Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0);
    stack.set_input(&bad).unwrap();
    let report = stack.solve();
    assert_eq!(report.failed, 1);
}

#[test]
fn an_unchanged_input_warm_starts_from_the_last_output_and_blends_against_the_input() {
    let r = rig(RestAxes::PlusY, 21);
    let stage = full_body(&r);
    let mut bare_solver = stage.solver.clone();
    let goals = stage.goals;
    let mut stack = IkStack::new(r.skeleton.clone());
    stack.push(stage).unwrap();
    assert!(stack.slots()[0].warm_start);
    stack.set_input(&r.input).unwrap();
    stack.solve();
    let first = stack.pose().clone();
    // The bare solver, warm-started from its own output, as a game loop without animation
    // would: the stack's second solve on the same input equals it bit for bit.
    let mut bare = first.clone();
    bare_solver.solve(&r.skeleton, &mut bare, &goals).unwrap();
    stack.set_input(&r.input).unwrap();
    stack.solve();
    assert_eq!(bits(stack.pose()), bits(&bare));
    // A changed input starts from the input plus the last correction: the goals (exact
    // pelvis) are met in that one solve. (A fresh solve from the changed input need not meet
    // them in one frame: tracking turns no joint more than its per-frame bound.)
    let mut moved = r.input.clone();
    let spine = r.map.get(H::Spine).unwrap();
    moved.rotations[spine] *= Quat::from_rotation_x(0.05);
    stack.set_input(&moved).unwrap();
    stack.solve();
    let model = r.skeleton.model_transforms(stack.pose());
    let hips = r.map.get(H::Hips).unwrap();
    let pelvis = goals.get(Effector::Pelvis).position;
    assert!(model[hips].translation.distance(pelvis) < 1e-4);
    // Weight 0.5 with a warm start: still half of the (warm) solution, against the input.
    stack.slots_mut()[0].weight = 0.5;
    for _ in 0..3 {
        stack.set_input(&r.input).unwrap();
        stack.solve();
    }
    let half = stack.pose().clone();
    stack.set_input(&r.input).unwrap();
    stack.solve();
    assert_eq!(bits(stack.pose()), bits(&half), "weight 0.5 is stationary");
    assert!(half.translations[hips].distance(r.input.translations[hips]) > 0.01);
}

/// Under animation (the input changes every frame) the full-body stage keeps its goals met
/// every frame with a few iterations at most: the first solve is cold, and after it every frame
/// starts from the input plus last frame's correction.
#[test]
fn an_animated_input_carries_the_last_correction() {
    let r = rig(RestAxes::MinusZ, 5);
    let stage = full_body(&r);
    let mut stack = IkStack::new(r.skeleton.clone());
    stack.push(stage).unwrap();
    let spine = r.map.get(H::Spine).unwrap();
    let chest = r.map.get(H::Chest).unwrap();
    let mut worst_iterations = 0;
    for f in 0..30 {
        // The animation sways the spine and chest a little every frame.
        let mut input = r.input.clone();
        let a = (f as f32 * 0.2).sin() * 0.05;
        input.rotations[spine] *= Quat::from_rotation_x(a);
        input.rotations[chest] *= Quat::from_rotation_z(-a);
        stack.set_input(&input).unwrap();
        stack.solve();
        let StageReport::FullBody(report) = solved(&stack.slots()[0].outcome) else {
            panic!("a full-body stage reports a full-body report");
        };
        assert!(report.converged, "frame {f}: {report:?}");
        if f > 0 {
            worst_iterations = worst_iterations.max(report.iterations);
        }
    }
    assert!(
        worst_iterations <= 3,
        "tracking needed {worst_iterations} iterations"
    );
}

#[test]
fn a_stage_solved_outside_the_stack_is_blended_and_reported_like_its_own_solve() {
    let r = rig(RestAxes::MinusZ, 12);
    for weight in [1.0, 0.5, 0.0] {
        // Reference: the stack's own solve of [arm, full body].
        let (mut own, _) = arm_stack(&r, weight);
        own.push(full_body(&r)).unwrap();
        own.set_input(&r.input).unwrap();
        own.solve();
        // The arm solved by the host through `solve_stage_with` (the same solver, called by
        // hand on a copy of the pose), then the rest of the stack with `solve_from`.
        let (mut hosted, _) = arm_stack(&r, weight);
        hosted.push(full_body(&r)).unwrap();
        hosted.set_input(&r.input).unwrap();
        let mut called = false;
        hosted.solve_stage_with(0, |stage, skeleton, buffer| {
            called = true;
            let Some(s) = stage.as_two_bone() else {
                panic!("the arm")
            };
            let mut pose = buffer.pose().clone();
            let parent = skeleton
                .parent(s.ik().bones()[0])
                .map(|p| buffer.model_transform(skeleton, p))
                .unwrap_or(ik_core::BoneTransform::IDENTITY);
            let report = s
                .ik()
                .solve_with_parent(skeleton, &mut pose, &s.goal, &parent)?;
            for b in s.ik().bones() {
                buffer.set_local(b, pose.rotations[b], pose.translations[b]);
            }
            Ok(StageReport::TwoBone(report))
        });
        assert_eq!(called, weight > 0.0, "not called at weight 0 (faded)");
        hosted.solve_from(1);
        assert_eq!(bits(hosted.pose()), bits(own.pose()), "weight {weight}");
        for (a, b) in hosted.slots().iter().zip(own.slots()) {
            assert_eq!(a.outcome, b.outcome, "weight {weight}");
        }
    }
    // Disabled: not called, reported as such, the pose untouched. An error: the bones restored
    // and the error recorded. Out of range: nothing.
    let (mut stack, _) = arm_stack(&r, 1.0);
    stack.set_input(&r.input).unwrap();
    stack.slots_mut()[0].enabled = false;
    stack.solve_stage_with(0, |_, _, _| panic!("not called for a disabled stage"));
    assert_eq!(stack.slots()[0].outcome, StageOutcome::Disabled);
    stack.slots_mut()[0].enabled = true;
    let report = stack.solve_stage_with(0, |stage, _, buffer| {
        for &b in stage.bones() {
            buffer.set_local(b, Quat::from_rotation_x(1.0), Vec3::ONE);
        }
        Err(StackError::NonFinite(NonFinite::SolvedPose))
    });
    assert_eq!(report.failed, 1);
    assert_eq!(
        stack.slots()[0].outcome,
        StageOutcome::Failed(StackError::NonFinite(NonFinite::SolvedPose))
    );
    assert_eq!(bits(stack.pose()), bits(&r.input));
    assert_eq!(
        stack.solve_stage_with(5, |_, _, _| panic!("no stage 5")),
        Default::default()
    );
}
