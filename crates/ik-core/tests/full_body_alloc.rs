//! The full-body solver does not allocate per solve once built (cold, warm, restarts and
//! unreachable goals included), checked with a counting global allocator.

use glam::Vec3;
use ik_core::humanoid::{
    Effector, EffectorGoal, FullBodyGoals, FullBodySolver, GoalFrame, HumanoidMap, LookAtGoal,
};
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

use crate::alloc;

/// A seeded uniform number in `[0, 1]` (xorshift32).
fn xorshift(seed: &mut u32) -> f32 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 17;
    *seed ^= *seed << 5;
    *seed as f32 / u32::MAX as f32
}

#[test]
fn solve_does_not_allocate() {
    let s = test_rig(RigConvention::Unreal, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let mut seed = 7u32;
    let mut next = || xorshift(&mut seed);
    let mut all_goals = Vec::new();
    for _ in 0..20 {
        let truth = random_pose_within_limits(&s, &map, solver.limits(), 1.0, &mut next);
        let model = s.model_transforms(&truth);
        let mut g = FullBodyGoals::default();
        for (k, &b) in solver.effector_bones().iter().enumerate() {
            g.effectors[k] = EffectorGoal::new(model[b].translation, model[b].rotation);
        }
        g.look_at = LookAtGoal {
            target: Vec3::new(0.0, 1.6, 3.0),
            weight: 1.0,
            enabled: true,
            ..LookAtGoal::default()
        };
        all_goals.push(g);
    }
    // An unreachable set forces every restart.
    let mut far = all_goals[0];
    far.effectors[0].position = Vec3::new(9.0, 9.0, 9.0);
    all_goals.push(far);
    let rest = s.rest_pose();
    let mut pose = rest.clone();
    // One solve first: nothing is lazily sized, but keep the count honest either way.
    let _ = solver.solve_cold(&s, &mut pose, &all_goals[0]);
    let mut scratch = solver.scratch();
    let (restarts, allocations) = alloc::allocations_during(|| {
        let mut restarts = 0;
        for g in &all_goals {
            pose.copy_from(&rest);
            restarts += solver.solve_cold(&s, &mut pose, g).unwrap().restarts;
            // Then tracking, with goals that give way on the unreachable set.
            restarts += solver.solve(&s, &mut pose, g).unwrap().restarts;
            restarts += solver.solve(&s, &mut pose, g).unwrap().restarts;
            // And with a caller-owned scratch (`&self` solver).
            pose.copy_from(&rest);
            restarts += solver
                .solve_cold_with(&s, &mut pose, g, &mut scratch)
                .unwrap()
                .restarts;
            restarts += solver
                .solve_with(&s, &mut pose, g, &mut scratch)
                .unwrap()
                .restarts;
            // A relative goal (the left hand in the right hand's frame; a bone frame for the
            // right foot), cold and tracking.
            let mut relative = *g;
            relative.effectors[0].frame = GoalFrame::Effector(Effector::RightHand);
            relative.effectors[3].frame = GoalFrame::Bone(0);
            restarts += solver
                .solve_cold(&s, &mut pose, &relative)
                .unwrap()
                .restarts;
            restarts += solver.solve(&s, &mut pose, &relative).unwrap().restarts;
        }
        restarts
    });
    assert!(
        restarts > 0,
        "the unreachable goal should have used restarts"
    );
    assert_eq!(allocations, 0, "solve allocated");
}

#[test]
fn bounded_tracking_does_not_allocate() {
    let s = test_rig(RigConvention::Mixamo, RestAxes::MinusZ);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let mut seed = 11u32;
    let mut next = || xorshift(&mut seed);
    let mut all_goals = Vec::new();
    for _ in 0..10 {
        let truth = random_pose_within_limits(&s, &map, solver.limits(), 1.0, &mut next);
        let mut g = solver.goals_at_pose(&s, &truth);
        g.look_at.target = Vec3::new(0.0, 1.6, 3.0);
        all_goals.push(g);
    }
    // A hand far out of reach (the give-way sub-level) and a relative grip.
    let mut far = all_goals[0];
    far.effectors[0].position = Vec3::new(9.0, 9.0, 9.0);
    all_goals.push(far);
    let mut relative = all_goals[1];
    relative.effectors[0].frame = GoalFrame::Effector(Effector::RightHand);
    all_goals.push(relative);
    let rest = s.rest_pose();
    let mut pose = rest.clone();
    let mut scratch = solver.scratch();
    // Size every buffer once (the solver's own scratch and the caller's).
    let _ = solver.solve(&s, &mut pose, &all_goals[0]);
    let _ = solver.solve_with(&s, &mut pose, &all_goals[0], &mut scratch);
    let (iterations, allocations) = alloc::allocations_during(|| {
        let mut iterations = 0;
        for g in &all_goals {
            for _ in 0..3 {
                iterations += solver.solve(&s, &mut pose, g).unwrap().iterations;
                iterations += solver
                    .solve_with(&s, &mut pose, g, &mut scratch)
                    .unwrap()
                    .iterations;
            }
        }
        iterations
    });
    assert!(iterations > 0, "the goal sets should need steps");
    assert_eq!(allocations, 0, "bounded tracking allocated");
}
