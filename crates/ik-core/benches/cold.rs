//! `FullBodySolver::solve_cold` on the CC0 characters in `assets/` (issue 24: "cold: ≥ 99.5 %
//! on the CC0 characters, median ≤ 90 µs"), from the rest pose, one caller-owned scratch per
//! character (sized once, as a game does), over seeded goal sets a game gives a character that
//! appears or teleports:
//!
//! * `reachable`: every goal by forward kinematics of a random in-limit pose over the full
//!   ranges (hands and feet 6D, the look-at on): the line, the same construction (and,
//!   for the first 250, the same goal sets; for the first 100, the robustness tests') as the
//!   robustness bench's cold table;
//! * `position`: as `reachable`, the hands following the position only;
//! * `edge`: as `reachable`, one hand moved along its shoulder–hand line to 97–100 % of the
//!   arm's rest length (rotation kept);
//! * `beyond`: as `reachable`, one hand moved 10–40 % of the arm beyond reach.
//!
//! Success is measured by forward kinematics of the output (never the solver's report): every
//! goal within 1 mm (scaled to the rig: its leg length over 0.9 m) / 1°, on the goals an
//! oracle says are reachable. `reachable` and `position` goals are all reachable (the pose
//! they come from meets them); the other effectors and the look-at of `beyond` are reachable
//! (its far hand is not, and is left out); an `edge` set counts only when the oracle — a
//! `solve_cold` with 200 iterations and 12 restarts started from the pose the goals come from —
//! meets every goal (the sets it misses are printed).
//!
//! Per character and kind: success, and the per-solve time (the fastest of 3 runs of the same
//! solve), median and p99. `IK_COLD_LABEL` names the build in the output (for an A/B against
//! another checkout's binary run alternately); `IK_COLD_COUNT` overrides the 1,000 `reachable`
//! sets per character (the other kinds are a quarter of it each); `IK_COLD_ONLY=<kind>` runs one
//! kind; `IK_COLD_VERBOSE` prints each goal set missed; `IK_COLD_TYPICAL` keeps only the goal
//! sets the first attempt meets (for profiling the typical solve). Then criterion times the
//! `reachable` sets of each character in turn.

use core::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::Pose;
use ik_core::humanoid::{Effector, FullBodyGoals, FullBodyScratch, FullBodySolver, HumanoidBone};

#[path = "../tests/support/gameplay.rs"]
mod gameplay;
#[path = "../tests/support/rng.rs"]
mod rng;
#[path = "../tests/support/robustness.rs"]
mod robustness;
#[path = "../tests/support/vr_recording.rs"]
mod vr_recording;
use ik_test_rigs::random_pose_within_limits;
use robustness::*;

/// Runs of each timed solve; the fastest counts.
const TIMED_RUNS: usize = 3;
/// `reachable` goal sets per character (the issue: ≥ 1,000).
const PER_RIG: usize = 1000;
/// The oracle's iteration budget per attempt and restarts.
const ORACLE: (u32, u32) = (200, 12);
/// `edge`: the hand goal at this fraction of the arm's rest length from the shoulder.
const EDGE: (f32, f32) = (0.97, 1.0);
/// `beyond`: 10–40 % of the arm beyond reach (as the robustness suite's still goals).
const BEYOND: (f32, f32) = (0.1, 0.4);
/// How far apart the kinds' seed salts are (above the suite's salts, below its goal-set
/// stride of 0x100).
const KIND_SALT_STEP: u64 = 0x10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Reachable,
    Position,
    Edge,
    Beyond,
}

impl Kind {
    const ALL: [Self; 4] = [Self::Reachable, Self::Position, Self::Edge, Self::Beyond];

    const fn name(self) -> &'static str {
        match self {
            Self::Reachable => "reachable",
            Self::Position => "position",
            Self::Edge => "edge",
            Self::Beyond => "beyond",
        }
    }

    /// The seed salt (see `seed_of`): `reachable` the robustness suite's cold one, the other
    /// kinds their own above it.
    const fn salt(self) -> u64 {
        SALT_COLD + KIND_SALT_STEP * self as u64
    }
}

/// One goal set: the goals, the pose they come from, and which goals count (per effector, the
/// look-at last).
struct Case {
    goals: FullBodyGoals,
    witness: Pose,
    counted: [bool; 6],
}

/// `count` goal sets of `kind` on `rig`, seeded by its index in the robustness suite.
fn cases(rig: &Rig, rig_index: usize, kind: Kind, count: usize) -> Vec<Case> {
    let mut solver = rig.solver();
    let body = Body::of(rig);
    let mut rng = Rng(seed_of(rig_index, 0, kind.salt()));
    let sk = &rig.skeleton;
    let shoulders = [HumanoidBone::LeftUpperArm, HumanoidBone::RightUpperArm];
    (0..count)
        .map(|_| {
            let witness =
                random_pose_within_limits(sk, &rig.map, solver.limits(), 1.0, &mut || rng.next());
            let mut goals = solver.goals_at_pose(sk, &witness);
            let mut counted = [true; 6];
            match kind {
                Kind::Reachable => {}
                Kind::Position => {
                    goals.get_mut(Effector::LeftHand).rotation_weight = 0.0;
                    goals.get_mut(Effector::RightHand).rotation_weight = 0.0;
                }
                Kind::Edge | Kind::Beyond => {
                    let side = usize::from(rng.next() < 0.5);
                    let model = sk.model_transforms(&witness);
                    let shoulder = model[rig.map.get(shoulders[side]).expect("mapped")].translation;
                    let hand = [Effector::LeftHand, Effector::RightHand][side];
                    let g = goals.get_mut(hand);
                    let dir = (g.position - shoulder)
                        .try_normalize()
                        .unwrap_or(body.frame.forward);
                    let (lo, hi) = if kind == Kind::Edge {
                        EDGE
                    } else {
                        (1.0 + BEYOND.0, 1.0 + BEYOND.1)
                    };
                    g.position = shoulder + dir * body.arms[side] * (lo + (hi - lo) * rng.next());
                    if kind == Kind::Beyond {
                        counted[hand as usize] = false;
                    }
                }
            }
            Case {
                goals,
                witness,
                counted,
            }
        })
        .collect()
}

/// Whether `pose` meets every counted goal of `case` within 1 mm / 1° (forward kinematics).
fn met(rig: &Rig, solver: &FullBodySolver, pose: &Pose, case: &Case) -> bool {
    let r = measure(rig, solver, pose, &case.goals);
    pose.is_finite() && (0..6).all(|k| !case.counted[k] || goal_error(&r, k, rig.scale) <= 1.0)
}

/// Whether the oracle meets every goal of an `edge` case (see the module docs).
fn oracle_meets(rig: &Rig, case: &Case) -> bool {
    let mut oracle = rig.solver();
    oracle.settings_mut().cold_iterations = ORACLE.0;
    oracle.settings_mut().max_restarts = ORACLE.1;
    let mut pose = case.witness.clone();
    let _ = oracle.solve_cold(&rig.skeleton, &mut pose, &case.goals);
    met(rig, &oracle, &pose, case)
}

/// Whether `solve_cold` meets `case` without a restart (its report).
#[inline(never)]
fn first_attempt_meets(rig: &Rig, case: &Case) -> bool {
    let mut solver = measured_solver(rig);
    let mut pose = rig.skeleton.rest_pose();
    solver
        .solve_cold(&rig.skeleton, &mut pose, &case.goals)
        .is_ok_and(|r| r.restarts == 0 && r.converged)
}

#[derive(Default)]
struct Tally {
    met: usize,
    counted: usize,
    times: Vec<f64>,
    /// Solves that restarted, and the Jacobian iterations (the solver's report).
    restarted: usize,
    iterations: u64,
}

#[inline(never)]
fn run(rig: &Rig, cases: &[Case], oracle: bool) -> Tally {
    let solver = measured_solver(rig);
    let mut scratch: FullBodyScratch = solver.scratch();
    let rest = rig.skeleton.rest_pose();
    let mut pose = rest.clone();
    let mut out = Tally::default();
    for (n, case) in cases.iter().enumerate() {
        let mut fastest = f64::INFINITY;
        let mut restarted = false;
        let mut iterations = 0;
        for _ in 0..TIMED_RUNS {
            pose.copy_from(&rest);
            let t = Instant::now();
            let report = black_box(solver.solve_cold_with(
                &rig.skeleton,
                &mut pose,
                black_box(&case.goals),
                &mut scratch,
            ));
            fastest = fastest.min(t.elapsed().as_secs_f64() * 1e6);
            restarted = report.as_ref().is_ok_and(|r| r.restarts > 0);
            iterations = report.map_or(0, |r| r.iterations);
        }
        out.restarted += usize::from(restarted);
        out.iterations += u64::from(iterations);
        out.times.push(fastest);
        if oracle && !oracle_meets(rig, case) {
            continue;
        }
        out.counted += 1;
        let ok = met(rig, &solver, &pose, case);
        out.met += usize::from(ok);
        if !ok && std::env::var_os("IK_COLD_VERBOSE").is_some() {
            let r = measure(rig, &solver, &pose, &case.goals);
            let errors: Vec<String> = (0..6)
                .map(|k| format!("{:.2}", goal_error(&r, k, rig.scale)))
                .collect();
            eprintln!(
                "    missed #{n}: errors (mm|°; left, right hand, left, right foot, pelvis, look-at) {errors:?}"
            );
        }
    }
    out
}

fn median_p99(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (percentile(&v, 0.5), percentile(&v, 0.99))
}

fn percent(a: usize, b: usize) -> f64 {
    a as f64 * 100.0 / b.max(1) as f64
}

fn bench(c: &mut Criterion) {
    let label = std::env::var("IK_COLD_LABEL").unwrap_or_else(|_| "this build".into());
    let per_rig = std::env::var("IK_COLD_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PER_RIG);
    let only = std::env::var("IK_COLD_ONLY").ok();
    let rigs = cc0_rigs();
    // The robustness suite numbers the CC0 characters after the test rigs (its seeds).
    let first = convention_rigs().len();
    eprintln!(
        "cold [{label}]: solve_cold from the rest pose, {per_rig} reachable goal sets per CC0 character, \
         {} of each other kind; success = every counted goal within 1 mm / 1° by FK; time = fastest of {TIMED_RUNS}",
        per_rig / 4
    );
    let mut all = Tally::default();
    let mut per_kind: Vec<Tally> = Kind::ALL.iter().map(|_| Tally::default()).collect();
    let mut reachable_sets = Vec::new();
    // Every goal set solved, in order (the robustness bench's cold goal hash): two builds print
    // the same hash when they were given the same goals.
    let mut goal_hash = OutputHash::default();
    for (i, rig) in rigs.iter().enumerate() {
        for (k, kind) in Kind::ALL.into_iter().enumerate() {
            if only.as_deref().is_some_and(|o| o != kind.name()) {
                continue;
            }
            let n = if kind == Kind::Reachable {
                per_rig
            } else {
                per_rig / 4
            };
            let mut sets = cases(rig, first + i, kind, n);
            if std::env::var_os("IK_COLD_TYPICAL").is_some() {
                // Profiling aid: only the goal sets the first attempt meets.
                sets.retain(|c| first_attempt_meets(rig, c));
            }
            for case in &sets {
                goal_hash.debug(&case.goals);
            }
            let t = run(rig, &sets, kind == Kind::Edge);
            let (median, p99) = median_p99(t.times.clone());
            eprintln!(
                "  [{label}] {:<24} {:<9} met {:>4} of {:>4} ({:>6.2} %) | median {median:>6.1} µs p99 {p99:>7.1} µs | restarted {:>5.1} %, mean iterations {:>5.1}",
                rig.name,
                kind.name(),
                t.met,
                t.counted,
                percent(t.met, t.counted),
                percent(t.restarted, t.times.len()),
                t.iterations as f64 / t.times.len().max(1) as f64,
            );
            let sum = &mut per_kind[k];
            sum.met += t.met;
            sum.counted += t.counted;
            sum.times.extend_from_slice(&t.times);
            all.met += t.met;
            all.counted += t.counted;
            all.times.extend(t.times);
            if kind == Kind::Reachable {
                reachable_sets.push(sets);
            }
        }
    }
    for (kind, t) in Kind::ALL.iter().zip(per_kind) {
        let (median, p99) = median_p99(t.times);
        eprintln!(
            "  [{label}] all characters {:<9} met {:>5} of {:>5} ({:>6.2} %) | median {median:>6.1} µs p99 {p99:>7.1} µs",
            kind.name(),
            t.met,
            t.counted,
            percent(t.met, t.counted)
        );
    }
    let (median, p99) = median_p99(all.times);
    eprintln!(
        "  [{label}] all characters, all kinds: met {} of {} ({:.2} %; issue: ≥ {:.1} %), median {median:.1} µs (issue: ≤ {COLD_MEDIAN_US}), p99 {p99:.1} µs",
        all.met,
        all.counted,
        percent(all.met, all.counted),
        COLD_SUCCESS * 100.0
    );
    eprintln!(
        "  [{label}] goal hash (every goal set solved, in order): {:016x}",
        goal_hash.0
    );

    let mut group = c.benchmark_group("cold");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (rig, sets) in rigs.iter().zip(&reachable_sets) {
        let solver = measured_solver(rig);
        let mut scratch = solver.scratch();
        let rest = rig.skeleton.rest_pose();
        let mut pose = rest.clone();
        let mut i = 0;
        group.bench_function(format!("reachable/{}", rig.name), |b| {
            b.iter(|| {
                pose.copy_from(&rest);
                let case = &sets[i % sets.len()];
                i += 1;
                black_box(solver.solve_cold_with(
                    &rig.skeleton,
                    &mut pose,
                    black_box(&case.goals),
                    &mut scratch,
                ))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
