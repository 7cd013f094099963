//! `JacobianSolver::solve` does not allocate after set-up: a counting global allocator (per
//! thread, so the test harness's own threads do not count) around many solves with moving
//! targets, three priority levels, a posture term, look-at and centre of mass.

use crate::jacobian_common;

use ik_core::glam::Vec3;
use ik_core::jacobian::{BoneMass, JacobianSolver, PostureReference, SolverSettings, TaskSpec};
use jacobian_common::*;

use crate::alloc;

#[test]
fn solving_does_not_allocate() {
    let skeleton = arm_skeleton();
    let masses = [(UPPER, 2.0), (FORE, 1.5), (HAND, 0.5)]
        .into_iter()
        .map(|(bone, mass)| BoneMass {
            bone,
            mass,
            local_center: Vec3::new(0.2, 0.0, 0.0),
        })
        .collect();
    let tasks = vec![
        TaskSpec::position(TIP, Vec3::ZERO),
        TaskSpec::orientation(TIP).at_level(1),
        TaskSpec::look_at(HAND, Vec3::X).at_level(2),
        TaskSpec::center_of_mass(masses, Vec3::Y).at_level(2),
        TaskSpec::posture(PostureReference::Incoming, 0.2),
    ];
    let solver = JacobianSolver::try_new(
        &skeleton,
        arm_joints(),
        tasks,
        SolverSettings {
            max_iterations: 20,
            ..SolverSettings::default()
        },
    )
    .unwrap();
    let mut goals = solver.goals();
    let mut scratch = solver.scratch();
    let mut pose = skeleton.rest_pose();
    let targets = arm_targets(50, 17);
    goals.tasks[3].support_polygon.extend([
        Vec3::new(0.1, 0.0, -0.1),
        Vec3::new(0.3, 0.0, -0.1),
        Vec3::new(0.3, 0.0, 0.1),
    ]);
    solver
        .solve(&skeleton, &mut pose, &goals, &mut scratch)
        .unwrap();
    let (iterations, allocations) = alloc::allocations_during(|| {
        let mut iterations = 0;
        for (p, q) in &targets {
            goals.tasks[0].point = *p;
            goals.tasks[1].rotation = *q;
            goals.tasks[2].point = *p + Vec3::Y;
            goals.tasks[3].support_polygon.clear();
            goals.tasks[3].support_polygon.extend([
                Vec3::new(p.x - 0.1, 0.0, p.z - 0.1),
                Vec3::new(p.x + 0.1, 0.0, p.z - 0.1),
                Vec3::new(p.x, 0.0, p.z + 0.1),
            ]);
            let report = solver
                .solve(&skeleton, &mut pose, &goals, &mut scratch)
                .unwrap();
            iterations += report.iterations;
        }
        iterations
    });
    assert!(
        iterations > 100,
        "the solves must actually iterate ({iterations})"
    );
    assert_eq!(allocations, 0, "solve allocated {allocations} times");
}
