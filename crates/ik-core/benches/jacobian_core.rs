//! The two Jacobian step rules of ik-core on the same humanoid problem, in the same run
//! (issue 10's "one Jacobian core"): the full-body solver's dense `f32` DLS kernel
//! (`jacobian::dense`, here with the analytic limbs, restarts and give-way switched off, so
//! only its Jacobian iterations run) against [`JacobianSolver`]'s `f64` Levenberg–Marquardt
//! core, both over the same joints (every mapped humanoid joint above a hand, a foot or the
//! head; the hips floating; the same anatomical limits) and tasks (hands and feet 6D, the
//! head look-at; the pelvis free) on the 1.8 m Mixamo-named test rig. Printed per core: success at
//! 0.1 mm / 0.06°, mean iterations and microseconds per iteration, cold (256 goal sets from
//! random in-limit poses, solved from rest with up to 64 iterations) and warm (a smooth
//! trajectory, one solve per frame from the previous result). Then `JacobianSolver` once more
//! with a posture task toward the rest pose (gain 0.5) added: the null-space posture path of
//! the shared kernel (a solve converges only once the posture term has settled).

use core::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::Skeleton;
use ik_core::glam::Vec3;
use ik_core::humanoid::{Effector, FullBodyGoals, FullBodySolver, HumanoidBone as B, HumanoidMap};
use ik_core::jacobian::{
    Goals, JacobianScratch, JacobianSolver, JointSpec, PostureReference, SolverSettings, TaskSpec,
};
use ik_core::limits::JointLimit;
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

#[path = "../tests/support/rng.rs"]
mod rng;
use rng::Rng;

struct Setup {
    skeleton: Skeleton,
    full: FullBodySolver,
    jac: JacobianSolver,
    goals: Goals,
    scratch: JacobianScratch,
    /// The same solver, goals and scratch with a posture task (toward rest) added.
    with_posture: (JacobianSolver, Goals, JacobianScratch),
    cold: Vec<FullBodyGoals>,
    warm: Vec<FullBodyGoals>,
}

fn setup() -> Setup {
    let skeleton = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let mut full = FullBodySolver::new(&skeleton, &map).expect("maps");
    {
        let s = full.settings_mut();
        s.analytic_limbs = false;
        s.max_restarts = 0;
        s.give_way_distance = f32::INFINITY;
        s.max_iterations = 64;
        s.cold_iterations = 64;
    }
    let ends = full.effector_bones();
    let head = full.head_bone();
    let mut roles: Vec<(usize, B)> = map
        .iter()
        .filter(|&(r, b)| {
            !matches!(r, B::LeftToes | B::RightToes)
                && ends
                    .iter()
                    .chain([&head])
                    .any(|&t| skeleton.is_ancestor_or_self(b, t))
        })
        .map(|(r, b)| (b, r))
        .collect();
    roles.sort_unstable();
    let mut joints = Vec::new();
    for (bone, role) in roles {
        let limit = full.limits().get(role);
        joints.push(match (role, limit) {
            (B::Hips, _) => JointSpec::floating(bone),
            (_, JointLimit::Locked) => continue,
            (_, JointLimit::Hinge { axis, min, max }) => JointSpec::hinge(bone, axis, min, max),
            (_, l) => JointSpec::ball(bone).with_limit(l),
        });
    }
    let mut tasks = Vec::new();
    for &b in &ends {
        tasks.push(TaskSpec::position(b, Vec3::ZERO));
        tasks.push(TaskSpec::orientation(b));
    }
    // `IK_LEVELS=1`: the look-at on a second priority level (as the demo's Jacobian rig puts
    // the head): the prioritised step with a null-space projection.
    let look_level = u8::from(std::env::var("IK_LEVELS").is_ok());
    tasks.push(TaskSpec::look_at(head, full.head_aim_axis()).at_level(look_level));
    let mut posture_tasks = tasks.clone();
    posture_tasks.push(TaskSpec::posture(PostureReference::Rest, 0.5));
    let jac_p = JacobianSolver::try_new(
        &skeleton,
        joints.clone(),
        posture_tasks,
        SolverSettings::default(),
    )
    .expect("valid");
    let with_posture = (jac_p.clone(), jac_p.goals(), jac_p.scratch());
    let jac = JacobianSolver::try_new(&skeleton, joints, tasks, SolverSettings::default())
        .expect("valid");
    let goals = jac.goals();
    let scratch = jac.scratch();
    let mut rng = Rng(42);
    let cold = (0..256)
        .map(|_| {
            let p =
                random_pose_within_limits(&skeleton, &map, full.limits(), 1.0, &mut || rng.next());
            free_pelvis(full.goals_at_pose(&skeleton, &p))
        })
        .collect();
    let keys: Vec<_> = (0..9)
        .map(|_| random_pose_within_limits(&skeleton, &map, full.limits(), 0.7, &mut || rng.next()))
        .collect();
    let mut warm = Vec::new();
    for w in keys.windows(2) {
        for f in 0..60 {
            let mut p = w[0].clone();
            p.blend_toward(&w[1], f as f32 / 60.0);
            if full.pose_within_limits(&skeleton, &p, 1e-4) {
                warm.push(free_pelvis(full.goals_at_pose(&skeleton, &p)));
            }
        }
    }
    Setup {
        skeleton,
        full,
        jac,
        goals,
        scratch,
        with_posture,
        cold,
        warm,
    }
}

/// The pelvis goal off: the full-body solver would pin the hips exactly before iterating
/// (orchestration, not kernel), so both cores move the floating hips.
fn free_pelvis(mut g: FullBodyGoals) -> FullBodyGoals {
    g.get_mut(Effector::Pelvis).enabled = false;
    g
}

/// Swaps the solver (goals, scratch) with and without the posture task.
fn swap_posture(s: &mut Setup) {
    core::mem::swap(&mut s.jac, &mut s.with_posture.0);
    core::mem::swap(&mut s.goals, &mut s.with_posture.1);
    core::mem::swap(&mut s.scratch, &mut s.with_posture.2);
}

/// Copies full-body goals into the Jacobian solver's task goals (same order as the tasks).
fn to_tasks(g: &FullBodyGoals, out: &mut Goals) {
    for (k, e) in Effector::ALL.iter().enumerate() {
        let eg = g.get(*e);
        out.tasks[2 * k].point = eg.position;
        out.tasks[2 * k + 1].rotation = eg.rotation;
        out.tasks[2 * k].enabled = eg.enabled;
        out.tasks[2 * k + 1].enabled = eg.enabled;
    }
    out.tasks[10].point = g.look_at.target;
    out.tasks[10].enabled = g.look_at.enabled;
}

/// (success, mean iterations, µs per iteration, µs per solve median) over one pass.
fn pass(s: &mut Setup, jacobian: bool, warm: bool) -> (f32, f32, f64, f64) {
    let rest = s.skeleton.rest_pose();
    let mut pose = rest.clone();
    let set = if warm { s.warm.clone() } else { s.cold.clone() };
    let (mut ok, mut iters, mut total) = (0usize, 0u64, 0.0f64);
    let mut times = Vec::with_capacity(set.len());
    s.scratch.reset();
    for g in &set {
        if !warm {
            pose.copy_from(&rest);
            s.scratch.reset();
        }
        let t = Instant::now();
        let (converged, n) = if jacobian {
            to_tasks(g, &mut s.goals);
            let r = s
                .jac
                .solve(&s.skeleton, &mut pose, &s.goals, &mut s.scratch)
                .expect("solves");
            (r.converged, r.iterations)
        } else {
            let r = s.full.solve(&s.skeleton, &mut pose, g).expect("solves");
            (r.converged, r.iterations)
        };
        let us = t.elapsed().as_secs_f64() * 1e6;
        total += us;
        times.push(us);
        ok += usize::from(converged);
        iters += u64::from(n);
    }
    times.sort_by(f64::total_cmp);
    let n = set.len() as f32;
    (
        ok as f32 / n,
        iters as f32 / n,
        total / iters.max(1) as f64,
        times[times.len() / 2],
    )
}

fn bench(c: &mut Criterion) {
    let mut s = setup();
    eprintln!(
        "jacobian_core: {} DOF (JacobianSolver {}), {} rows, cold {} / warm {} goal sets",
        s.full.dof_count(),
        s.jac.dof(),
        s.jac.rows(),
        s.cold.len(),
        s.warm.len()
    );
    for warm in [false, true] {
        let mut per_iter = [0.0; 2];
        for (k, jacobian) in [false, true].into_iter().enumerate() {
            let _ = pass(&mut s, jacobian, warm);
            let (ok, it, us_it, med) = pass(&mut s, jacobian, warm);
            per_iter[k] = us_it;
            eprintln!(
                "{:<14} {}: success {:.1} %, mean iterations {:.1}, {:.2} µs per iteration, \
                 median {:.1} µs per solve",
                if jacobian {
                    "JacobianSolver"
                } else {
                    "dense f32 DLS"
                },
                if warm { "warm" } else { "cold" },
                ok * 100.0,
                it,
                us_it,
                med
            );
        }
        eprintln!(
            "  per-iteration ratio JacobianSolver / dense f32 DLS ({}): {:.2}",
            if warm { "warm" } else { "cold" },
            per_iter[1] / per_iter[0]
        );
    }
    swap_posture(&mut s);
    for warm in [false, true] {
        let _ = pass(&mut s, true, warm);
        let (ok, it, us_it, med) = pass(&mut s, true, warm);
        eprintln!(
            "JacobianSolver + posture {}: success {:.1} %, mean iterations {:.1}, {:.2} µs per \
             iteration, median {:.1} µs per solve",
            if warm { "warm" } else { "cold" },
            ok * 100.0,
            it,
            us_it,
            med
        );
    }
    swap_posture(&mut s);
    let mut group = c.benchmark_group("jacobian_core");
    let rest = s.skeleton.rest_pose();
    for jacobian in [false, true] {
        let mut pose = rest.clone();
        let mut i = 0;
        let name = if jacobian {
            "jacobian_solver"
        } else {
            "dense_f32_dls"
        };
        group.bench_function(format!("{name}/cold"), |b| {
            b.iter(|| {
                pose.copy_from(&rest);
                let g = &s.cold[i % s.cold.len()];
                i += 1;
                if jacobian {
                    to_tasks(g, &mut s.goals);
                    s.scratch.reset();
                    black_box(
                        s.jac
                            .solve(&s.skeleton, &mut pose, &s.goals, &mut s.scratch)
                            .map(|r| r.iterations)
                            .ok(),
                    )
                } else {
                    black_box(
                        s.full
                            .solve(&s.skeleton, &mut pose, black_box(g))
                            .map(|r| r.iterations)
                            .ok(),
                    )
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
