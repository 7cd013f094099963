//! 7-DOF arm (ball shoulder, hinge elbow, ball wrist; 1 m, limited): random FK-sampled 6D
//! targets solved from the rest pose, with restarts inside a fixed iteration budget.

use crate::jacobian_common;

use ik_core::jacobian::JacobianSolver;
use jacobian_common::*;

/// Most restarts per target (each from a random in-limit pose).
const MAX_RESTARTS: usize = 12;

#[test]
fn arm_reaches_random_6d_targets_from_rest() {
    let skeleton = arm_skeleton();
    let joints = arm_joints();
    let solver =
        JacobianSolver::try_new(&skeleton, joints.clone(), arm_tasks(), arm_settings()).unwrap();
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    let targets = arm_targets(10_000, 0x5eed);
    let mut rng = Rng(42);
    let mut ok = 0usize;
    let mut total_iters = 0u64;
    let mut restarts_used = 0usize;
    let mut worst_iters = 0u32;
    let rest = skeleton.rest_pose();
    for (p, q) in &targets {
        goals.tasks[0].point = *p;
        goals.tasks[1].rotation = *q;
        let mut pose = rest.clone();
        let mut iters = 0u32;
        let mut success = false;
        for attempt in 0..=MAX_RESTARTS {
            scratch.reset();
            if attempt > 0 {
                pose = random_arm_pose(&skeleton, &mut rng);
                restarts_used += 1;
            }
            let report = solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            iters += report.iterations;
            // Every returned pose respects every limit.
            for j in &joints {
                let rest_t = skeleton.bones()[j.bone].rest;
                assert!(
                    j.limit.contains(
                        rest_t.rotation,
                        rest_t.translation,
                        pose.rotations[j.bone],
                        pose.translations[j.bone],
                        1e-4
                    ),
                    "limit violated at bone {}",
                    j.bone
                );
            }
            // Independent check of the residual by forward kinematics.
            let tip = skeleton.model_transform(&pose, TIP);
            let dp = tip.translation.distance(*p);
            let da = rotation_angle(tip.rotation, *q);
            assert!(dp.is_finite() && da.is_finite());
            if dp <= 1e-4 && da <= 1e-3 {
                success = true;
                break;
            }
        }
        worst_iters = worst_iters.max(iters);
        total_iters += u64::from(iters);
        if success {
            ok += 1;
        }
    }
    let rate = ok as f64 / targets.len() as f64;
    println!(
        "success {:.2} %, mean iterations {:.1}, worst {worst_iters}, restarts {restarts_used}",
        rate * 100.0,
        total_iters as f64 / targets.len() as f64
    );
    assert!(rate >= 0.995, "success rate {rate}");
    // The iteration budget per target: (1 + MAX_RESTARTS) solves of max_iterations.
    assert!(worst_iters <= (1 + MAX_RESTARTS as u32) * arm_settings().max_iterations);
}
