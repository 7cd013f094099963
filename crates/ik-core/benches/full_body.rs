//! Full-body humanoid IK on the 1.8 m procedural Mixamo-named test rig (bones along +Y with
//! rolls): cold solves from the rest pose toward goals taken from random in-limit poses, and warm
//! solves that follow a smooth trajectory frame to frame from the previous solution (cold:
//! `solve_cold`; warm: `solve`, the tracking solve). The hybrid
//! (Jacobian + analytic limbs, the default) is compared with the pure Jacobian in the same run.
//! `hybrid/warm_grip` is the warm trajectory with the left hand's goal expressed relative to
//! the right hand (`GoalFrame::Effector`, a two-handed grip; same targets, so the ratio to
//! `hybrid/warm` is the cost of the relative task).

use core::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::Pose;
use ik_core::Skeleton;
use ik_core::humanoid::{Effector, FullBodyGoals, FullBodySolver, GoalFrame, HumanoidMap};
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

#[path = "../tests/support/rng.rs"]
mod rng;
use rng::Rng;

struct Setup {
    skeleton: Skeleton,
    solver: FullBodySolver,
    cold: Vec<FullBodyGoals>,
    warm: Vec<FullBodyGoals>,
    /// `warm` with the left hand relative to the right hand.
    grip: Vec<FullBodyGoals>,
}

/// `g` with the left hand's goal in the right hand's goal frame (the same target).
fn as_grip(g: &FullBodyGoals) -> FullBodyGoals {
    let mut out = *g;
    let r = g.get(Effector::RightHand);
    let frame = ik_core::BoneTransform::from_translation_rotation(r.position, r.rotation).inverse();
    let l = out.get_mut(Effector::LeftHand);
    l.position = frame.transform_point(l.position);
    l.rotation = frame.rotation * l.rotation;
    l.frame = GoalFrame::Effector(Effector::RightHand);
    out
}

/// FNV-1a (64-bit, the robustness and gameplay benches' goal hash) over the `Debug` text of
/// every goal set, in order (floats print exactly): two builds (or two releases) print the same
/// hash when they were given the same goals.
fn goal_hash(sets: &[FullBodyGoals]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    format!("{sets:?}")
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

fn setup(analytic: bool) -> Setup {
    let skeleton = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let mut solver = FullBodySolver::new(&skeleton, &map).expect("test rig maps");
    solver.settings_mut().analytic_limbs = analytic;
    let mut rng = Rng(42);
    let mut sample = |solver: &FullBodySolver| {
        random_pose_within_limits(&skeleton, &map, solver.limits(), 1.0, &mut || rng.next())
    };
    let cold: Vec<FullBodyGoals> = (0..256)
        .map(|_| solver.goals_at_pose(&skeleton, &sample(&solver)))
        .collect();
    // Warm: a smooth trajectory through 8 random key poses (at 70 % of the ranges), 60 frames
    // between keys (about 1–3 cm and 1–2° per frame), as animation-driven targets move.
    let keys: Vec<Pose> = (0..9)
        .map(|_| {
            random_pose_within_limits(&skeleton, &map, solver.limits(), 0.7, &mut || rng.next())
        })
        .collect();
    let mut warm = Vec::new();
    for w in keys.windows(2) {
        for f in 0..60 {
            let mut p = w[0].clone();
            p.blend_toward(&w[1], f as f32 / 60.0);
            // Blending two in-limit poses can leave a swing cone slightly: keep those frames
            // out so every goal is reachable within the limits.
            if solver.pose_within_limits(&skeleton, &p, 1e-4) {
                warm.push(solver.goals_at_pose(&skeleton, &p));
            }
        }
    }
    eprintln!(
        "warm trajectory: {} of 480 blended frames are within the limits",
        warm.len()
    );
    let grip: Vec<FullBodyGoals> = warm.iter().map(as_grip).collect();
    eprintln!(
        "goal hash (every goal set) cold {:016x}, warm {:016x}, warm_grip {:016x}",
        goal_hash(&cold),
        goal_hash(&warm),
        goal_hash(&grip)
    );
    Setup {
        skeleton,
        solver,
        cold,
        warm,
        grip,
    }
}

/// Per-solve statistics over one pass: success rate, mean, median, 90th- and 99th-percentile
/// and largest time (microseconds) and mean Jacobian iterations.
struct Stats {
    success: f32,
    mean_us: f64,
    median_us: f64,
    p90_us: f64,
    p99_us: f64,
    max_us: f64,
    iterations: f32,
    restarted: f32,
}

fn stats(setup: &mut Setup, warm: bool, grip: bool) -> Stats {
    let rest = setup.skeleton.rest_pose();
    let mut pose = rest.clone();
    let goals = match (warm, grip) {
        (true, true) => &setup.grip,
        (true, false) => &setup.warm,
        _ => &setup.cold,
    };
    let mut times = Vec::with_capacity(goals.len());
    let (mut ok, mut iterations, mut restarted) = (0, 0, 0);
    for g in goals {
        if !warm {
            pose.copy_from(&rest);
        }
        let t = std::time::Instant::now();
        let r = if warm {
            setup.solver.solve(&setup.skeleton, &mut pose, g)
        } else {
            setup.solver.solve_cold(&setup.skeleton, &mut pose, g)
        };
        times.push(t.elapsed().as_secs_f64() * 1e6);
        if let Ok(r) = r {
            ok += usize::from(r.converged);
            iterations += r.iterations;
            restarted += usize::from(r.restarts > 0);
        }
    }
    times.sort_by(f64::total_cmp);
    Stats {
        success: ok as f32 / goals.len() as f32,
        mean_us: times.iter().sum::<f64>() / times.len() as f64,
        median_us: times[times.len() / 2],
        p90_us: times[times.len() * 9 / 10],
        p99_us: times[times.len() * 99 / 100],
        max_us: times[times.len() - 1],
        iterations: iterations as f32 / goals.len() as f32,
        restarted: restarted as f32 / goals.len() as f32,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("full_body");
    for (name, analytic) in [("hybrid", true), ("pure_jacobian", false)] {
        let mut s = setup(analytic);
        let mut medians = [0.0; 2];
        let passes: &[(bool, bool)] = if analytic {
            &[(false, false), (true, false), (true, true)]
        } else {
            &[(false, false), (true, false)]
        };
        for (k, &(warm, grip)) in passes.iter().enumerate() {
            // Second pass: the first warms caches and the allocator-free buffers.
            let _ = stats(&mut s, warm, grip);
            let st = stats(&mut s, warm, grip);
            medians[k.min(1)] = st.median_us;
            eprintln!(
                "{name}/{}: {} DOF, success {:.1} %, per-solve median {:.1} µs, p90 {:.1} µs, \
                 mean iterations {:.1}, restarted {:.1} % (mean {:.1} µs, p99 {:.1} µs, max {:.1} µs)",
                match (warm, grip) {
                    (true, true) => "warm_grip",
                    (true, false) => "warm",
                    _ => "cold",
                },
                s.solver.dof_count(),
                st.success * 100.0,
                st.median_us,
                st.p90_us,
                st.iterations,
                st.restarted * 100.0,
                st.mean_us,
                st.p99_us,
                st.max_us
            );
        }
        let _ = medians;
        let rest = s.skeleton.rest_pose();
        let mut pose = rest.clone();
        let mut i = 0;
        group.bench_function(format!("{name}/cold"), |b| {
            b.iter(|| {
                pose.copy_from(&rest);
                let g = &s.cold[i % s.cold.len()];
                i += 1;
                black_box(s.solver.solve_cold(&s.skeleton, &mut pose, black_box(g)))
            });
        });
        let mut pose = rest.clone();
        let mut i = 0;
        group.bench_function(format!("{name}/warm"), |b| {
            b.iter(|| {
                let g = &s.warm[i % s.warm.len()];
                i += 1;
                black_box(s.solver.solve(&s.skeleton, &mut pose, black_box(g)))
            });
        });
        if analytic {
            let mut pose = rest.clone();
            let mut i = 0;
            group.bench_function(format!("{name}/warm_grip"), |b| {
                b.iter(|| {
                    let g = &s.grip[i % s.grip.len()];
                    i += 1;
                    black_box(s.solver.solve(&s.skeleton, &mut pose, black_box(g)))
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
