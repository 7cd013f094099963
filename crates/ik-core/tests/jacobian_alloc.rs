//! `JacobianSolver::solve` does not allocate after set-up: a counting global allocator (per
//! thread, so the test harness's own threads do not count) around many solves with moving
//! targets, three priority levels, a posture term, look-at and centre of mass.

mod jacobian_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ik_core::glam::Vec3;
use ik_core::jacobian::{BoneMass, JacobianSolver, PostureReference, SolverSettings, TaskSpec};
use jacobian_common::*;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: the thread-locals may already be gone while a thread shuts down.
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counting only
// touches const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
    COUNTING.with(|c| c.set(true));
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
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.with(Cell::get);
    assert!(
        iterations > 100,
        "the solves must actually iterate ({iterations})"
    );
    assert_eq!(allocations, 0, "solve allocated {allocations} times");
}
