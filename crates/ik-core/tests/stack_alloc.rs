//! `IkStack::solve` does not allocate after set-up: a counting global allocator around many
//! solves of a `[full body, two-bone arm, Jacobian arm, weight 0.5]` stack with moving goals.

use glam::Vec3;
use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::humanoid::{Effector, FullBodySolver, HumanoidBone as H, HumanoidMap};
use ik_core::jacobian::{JacobianSolver, JointSpec, SolverSettings, TaskSpec};
use ik_core::stack::{FullBodyStage, IkStack, JacobianStage, TwoBoneStage};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

use crate::alloc;

/// The four limbs' (root, middle, tip) bone indices, arms then legs.
fn limb_bones(map: &HumanoidMap) -> [[usize; 3]; 4] {
    [
        [H::LeftUpperArm, H::LeftLowerArm, H::LeftHand],
        [H::RightUpperArm, H::RightLowerArm, H::RightHand],
        [H::LeftUpperLeg, H::LeftLowerLeg, H::LeftFoot],
        [H::RightUpperLeg, H::RightLowerLeg, H::RightFoot],
    ]
    .map(|l| l.map(|h| map.get(h).unwrap()))
}

#[test]
fn stack_solve_does_not_allocate() {
    let s = test_rig(RigConvention::Unreal, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut fb = FullBodySolver::new(&s, &map).unwrap();
    let rest = s.rest_pose();
    let goals = fb.goals_at_pose(&s, &rest);
    let (l_arm, l_fore, l_hand) = (
        map.get(H::LeftUpperArm).unwrap(),
        map.get(H::LeftLowerArm).unwrap(),
        map.get(H::LeftHand).unwrap(),
    );
    let (r_arm, r_hand) = (
        map.get(H::RightUpperArm).unwrap(),
        map.get(H::RightHand).unwrap(),
    );
    let model = s.model_transforms(&rest);
    let mut stack = IkStack::new(s.clone());
    stack.push(FullBodyStage::new(fb, goals, s.len())).unwrap();
    let arm = TwoBoneIk::try_new(&s, l_arm, l_fore, l_hand).unwrap();
    stack
        .push(TwoBoneStage::new(
            &s,
            arm,
            LimbGoal::new(model[l_hand].translation),
        ))
        .unwrap();
    let joints = s
        .chain(r_arm, r_hand)
        .unwrap()
        .bones()
        .iter()
        .map(|&b| JointSpec::ball(b))
        .collect();
    let jac = JacobianSolver::try_new(
        &s,
        joints,
        vec![TaskSpec::position(r_hand, Vec3::ZERO)],
        SolverSettings::default(),
    )
    .unwrap();
    stack.push(JacobianStage::new(jac)).unwrap();
    stack.slots_mut()[2].weight = 0.5;
    let pelvis0 = goals.get(Effector::Pelvis).position;
    let frame = |stack: &mut IkStack, f: usize| {
        let t = f as f32 * 0.1;
        let slots = stack.slots_mut();
        let g = &mut slots[0].stage.as_full_body_mut().unwrap().goals;
        g.get_mut(Effector::Pelvis).position = pelvis0 + Vec3::new(0.05 * t.sin(), -0.03, 0.0);
        slots[1].stage.as_two_bone_mut().unwrap().goal.target =
            model[l_hand].translation + Vec3::new(0.05 * t.cos(), -0.1, 0.1);
        slots[2].stage.as_jacobian_mut().unwrap().goals.tasks[0].point =
            model[r_hand].translation + Vec3::new(-0.05, -0.1 * t.sin().abs(), 0.1);
        stack.set_input(&rest).unwrap();
        let report = stack.solve();
        assert_eq!(report.failed, 0);
    };
    // Warm-up: the first solves may size internal buffers.
    for f in 0..3 {
        frame(&mut stack, f);
    }
    let ((), allocations) = alloc::allocations_during(|| {
        for f in 3..60 {
            frame(&mut stack, f);
            let _ = stack.model_transforms();
        }
    });
    assert_eq!(allocations, 0);
}

#[test]
fn a_limb_batch_solve_does_not_allocate() {
    use ik_core::stack::LimbBatch;
    let s = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let rest = s.rest_pose();
    let model = s.model_transforms(&rest);
    let mut stack = IkStack::new(s.clone());
    let limbs = limb_bones(&map);
    for [a, b, c] in limbs {
        let ik = TwoBoneIk::try_new(&s, a, b, c).unwrap();
        let goal = LimbGoal::new(model[c].translation);
        stack.push(TwoBoneStage::new(&s, ik, goal)).unwrap();
    }
    stack.slots_mut()[1].weight = 0.5;
    let mut batch = LimbBatch::try_new(&stack).unwrap();
    let frame = |stack: &mut IkStack, batch: &mut LimbBatch, f: usize| {
        let t = f as f32 * 0.1;
        for (k, [_, _, tip]) in limbs.iter().enumerate() {
            let goal = LimbGoal::new(model[*tip].translation + Vec3::new(0.05 * t.cos(), 0.1, 0.1))
                .with_orientation(model[*tip].rotation)
                .with_pole(Vec3::Z);
            stack.slots_mut()[k].stage.as_two_bone_mut().unwrap().goal = goal;
            batch.set_goal(k, &goal);
        }
        stack.set_input(&rest).unwrap();
        assert_eq!(batch.solve(stack), 4);
        stack.solve_from(4);
    };
    frame(&mut stack, &mut batch, 0);
    let ((), allocations) = alloc::allocations_during(|| {
        for f in 1..60 {
            frame(&mut stack, &mut batch, f);
            let _ = stack.model_transforms();
        }
    });
    assert_eq!(allocations, 0);
}

#[test]
fn a_limb_batch_stage_solve_does_not_allocate() {
    use ik_core::stack::LimbBatchStage;
    let s = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let rest = s.rest_pose();
    let model = s.model_transforms(&rest);
    let limbs = limb_bones(&map);
    let stage = LimbBatchStage::try_new(
        &s,
        limbs.map(|[a, b, c]| {
            let ik = TwoBoneIk::try_new(&s, a, b, c).unwrap();
            (ik, LimbGoal::new(model[c].translation))
        }),
    )
    .unwrap();
    let mut stack = IkStack::new(s.clone());
    stack.push(stage).unwrap();
    stack.slots_mut()[0].weight = 0.5;
    let frame = |stack: &mut IkStack, f: usize| {
        let t = f as f32 * 0.1;
        let stage = stack.slots_mut()[0]
            .stage
            .get_mut::<LimbBatchStage>()
            .unwrap();
        stage.set_weight(1, 0.5).unwrap();
        for (k, [_, _, tip]) in limbs.iter().enumerate() {
            let goal = LimbGoal::new(model[*tip].translation + Vec3::new(0.05 * t.cos(), 0.1, 0.1))
                .with_orientation(model[*tip].rotation)
                .with_pole(Vec3::Z);
            stage.set_goal(k, goal).unwrap();
        }
        stack.set_input(&rest).unwrap();
        let report = stack.solve();
        assert_eq!((report.solved, report.failed), (1, 0), "{report:?}");
    };
    frame(&mut stack, 0);
    let ((), allocations) = alloc::allocations_during(|| {
        for f in 1..60 {
            frame(&mut stack, f);
            let _ = stack.model_transforms();
        }
    });
    assert_eq!(allocations, 0);
}
