//! Batched two-bone IK (`analytic::batch::TwoBoneBatch`) against the scalar
//! `TwoBoneIk::solve_with_parent`, in the same run, on the analytic bench's 1000-goal mix
//! (70 % reachable, 40 % of all goals with a wrist orientation, 20 % beyond reach, 10 %
//! degenerate).
//!
//! The batch holds 1000 copies of the bench limb, one goal each, and solves them in one call;
//! the scalar loop solves the same 1000 goals one after another. Both start each solve from the
//! limb's previous result for *another* goal: the scalar loop from the previous goal's, the
//! batch from its previous call's, which alternates between the goal set and the set shifted
//! by one (otherwise every limb would start at its own solution, a turn of zero, which would
//! flatter the batch). Besides criterion's estimates it prints the median ns per limb
//! (amortised over the 1000) of each, and their ratio.

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use glam::Quat;
use ik_core::analytic::LimbReport;
use ik_core::analytic::batch::{BatchScratch, LaneGoals, LanePoses, TwoBoneBatch};
#[path = "support/analytic_goals.rs"]
mod analytic_goals;

use analytic_goals::{Setup, median_and_min_ns, setup};

/// The batch over the goal set and its per-call buffers.
struct Batch {
    batch: TwoBoneBatch,
    parents: Vec<ik_core::BoneTransform>,
    rotations: Vec<[Quat; 3]>,
    reports: Vec<Result<LimbReport, ik_core::analytic::AnalyticError>>,
    scratch: BatchScratch,
    /// The goal set and the set shifted by one, used in turn.
    goal_sets: [Vec<ik_core::analytic::LimbGoal>; 2],
    turn: usize,
}

impl Batch {
    /// One call over all limbs; returns how many took the scalar solve.
    fn solve(&mut self) -> usize {
        self.turn ^= 1;
        let n = self
            .batch
            .solve(
                black_box(&self.goal_sets[self.turn]),
                &self.parents,
                &mut self.rotations,
                &mut self.reports,
                &mut self.scratch,
            )
            .expect("matching slices");
        black_box(&self.reports);
        n
    }
}

/// The same limbs and goals in the resident lanes (`TwoBoneBatch::solve_lanes`).
struct Lanes {
    batch: TwoBoneBatch,
    poses: LanePoses,
    /// The goal set and the set shifted by one, written into lanes once, used in turn.
    goal_lanes: [LaneGoals; 2],
    /// The same as `LimbGoal`s, for the round trip.
    goal_sets: [Vec<ik_core::analytic::LimbGoal>; 2],
    /// A caller's per-limb rotations, for the round trip.
    rotations: Vec<[Quat; 3]>,
    parents: Vec<ik_core::BoneTransform>,
    reports: Vec<Result<LimbReport, ik_core::analytic::AnalyticError>>,
    scratch: BatchScratch,
    turn: usize,
}

impl Lanes {
    /// One call over all limbs on resident lanes (goals already in lanes); reports or not.
    fn solve(&mut self, reports: bool) -> usize {
        self.turn ^= 1;
        let n = self
            .batch
            .solve_lanes(
                black_box(&self.goal_lanes[self.turn]),
                &mut self.poses,
                reports.then_some(self.reports.as_mut_slice()),
                &mut self.scratch,
            )
            .expect("matching lanes");
        black_box(&self.poses);
        n
    }

    /// What a caller holding per-limb goals, parents and rotations pays: write them into the
    /// lanes, solve without reports, read the rotations back.
    fn round_trip(&mut self) {
        self.turn ^= 1;
        let goals = black_box(&self.goal_sets[self.turn]);
        let lanes = &mut self.goal_lanes[0];
        for (i, ((goal, parent), rotations)) in goals
            .iter()
            .zip(&self.parents)
            .zip(&self.rotations)
            .enumerate()
        {
            lanes.set(i, goal).expect("in range");
            self.poses.set(i, parent, *rotations).expect("in range");
        }
        self.batch
            .solve_lanes(lanes, &mut self.poses, None, &mut self.scratch)
            .expect("matching lanes");
        for (i, rotations) in self.rotations.iter_mut().enumerate() {
            *rotations = self.poses.rotations(i).expect("in range");
        }
        black_box(&self.rotations);
    }
}

fn lanes_for(s: &Setup) -> Lanes {
    let b = batch_for(s);
    let n = b.batch.len();
    let mut poses = LanePoses::new(n);
    let goal_lanes = b.goal_sets.each_ref().map(|set| {
        let mut lanes = LaneGoals::new(n);
        for (i, goal) in set.iter().enumerate() {
            lanes.set(i, goal).expect("in range");
        }
        lanes
    });
    for (i, (parent, rotations)) in b.parents.iter().zip(&b.rotations).enumerate() {
        poses.set(i, parent, *rotations).expect("in range");
    }
    Lanes {
        batch: b.batch,
        poses,
        goal_lanes,
        goal_sets: b.goal_sets,
        rotations: b.rotations,
        parents: b.parents,
        reports: b.reports,
        scratch: b.scratch,
        turn: 0,
    }
}

fn batch_for(s: &Setup) -> Batch {
    let n = s.goals.len();
    let [root, mid, tip] = s.ik.bones();
    Batch {
        batch: TwoBoneBatch::try_new((0..n).map(|_| (&s.skeleton, &s.ik))).expect("valid limbs"),
        parents: vec![s.parent; n],
        rotations: vec![
            [
                s.pose.rotations[root],
                s.pose.rotations[mid],
                s.pose.rotations[tip]
            ];
            n
        ],
        reports: vec![Ok(LimbReport::default()); n],
        scratch: BatchScratch::new(),
        goal_sets: [s.goals.clone(), {
            let mut shifted = s.goals.clone();
            shifted.rotate_left(1);
            shifted
        }],
        turn: 0,
    }
}

fn bench_batch(c: &mut Criterion) {
    let s = setup();
    let mut b = batch_for(&s);
    c.bench_function("two_bone_batch_1000", |bench| {
        bench.iter(|| b.solve());
    });
    let mut lanes = lanes_for(&s);
    c.bench_function("two_bone_batch_lanes_1000", |bench| {
        bench.iter(|| lanes.solve(false));
    });
    c.bench_function("two_bone_batch_lanes_reports_1000", |bench| {
        bench.iter(|| lanes.solve(true));
    });
    c.bench_function("two_bone_batch_lanes_round_trip_1000", |bench| {
        bench.iter(|| lanes.round_trip());
    });
    let mut scalar_set = setup();
    c.bench_function("two_bone_scalar_1000", |bench| {
        bench.iter(|| scalar_set.solve_all_with_parent());
    });
}

fn print_medians() {
    let s = setup();
    let mut b = batch_for(&s);
    let mut lanes = lanes_for(&s);
    let n = s.goals.len() as f64;
    let mut scalar_set = setup();
    // Alternating, so that a change of machine load hits all alike.
    let mut runs: [Vec<(f64, f64)>; 5] = Default::default();
    for _ in 0..5 {
        runs[0].push(median_and_min_ns(|| {
            b.solve();
        }));
        runs[1].push(median_and_min_ns(|| {
            lanes.solve(false);
        }));
        runs[2].push(median_and_min_ns(|| {
            lanes.solve(true);
        }));
        runs[3].push(median_and_min_ns(|| lanes.round_trip()));
        runs[4].push(median_and_min_ns(|| scalar_set.solve_all_with_parent()));
    }
    let [batch, lanes_bare, lanes_reports, round_trip, scalar] = runs.map(|mut runs| {
        let min = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min) / n;
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        (runs[2].0 / n, min)
    });
    let fallback = b.solve();
    let lanes_fallback = lanes.solve(false);
    println!(
        "analytic two-bone IK, {} limbs per call; median of 5 alternating medians (fastest run):",
        s.goals.len()
    );
    let line = |name: &str, (median, min): (f64, f64)| {
        println!(
            "  {name:<44} {median:5.1} ns/limb ({min:5.1}), scalar / this {:.2}x",
            scalar.0 / median
        );
    };
    line("batch (TwoBoneBatch::solve, reports):", batch);
    line("lanes (solve_lanes, resident, no reports):", lanes_bare);
    line("lanes (solve_lanes, resident, reports):", lanes_reports);
    line("lanes round trip (set, solve_lanes, read):", round_trip);
    line("scalar (solve_with_parent):", scalar);
    println!(
        "  {fallback} ({lanes_fallback}) of {} limbs took the scalar solve in solve (solve_lanes)",
        s.goals.len()
    );
}

criterion_group!(benches, bench_batch);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_medians();
}
