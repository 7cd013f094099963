//! Batched two-bone IK (`analytic::batch::TwoBoneBatch`) against the scalar
//! `TwoBoneIk::solve_with_parent`, in the same run, on the analytic bench's 1000-goal mix
//! (70 % reachable, half of those with a wrist orientation, 20 % beyond reach, 10 % degenerate).
//!
//! The batch holds 1000 copies of the bench limb, one goal each, and solves them in one call;
//! the scalar loop solves the same 1000 goals one after another. Both start each solve from the
//! limb's previous result for *another* goal: the scalar loop from the previous goal's, the
//! batch from its previous call's, which alternates between the goal set and the set shifted
//! by one (otherwise every limb would start at its own solution, a turn of zero, which would
//! flatter the batch). Besides criterion's estimates it prints the median ns per limb
//! (amortised over the 1000) of each, and their ratio.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use glam::Quat;
use ik_core::analytic::LimbReport;
use ik_core::analytic::batch::{BatchScratch, TwoBoneBatch};
#[path = "support/analytic_goals.rs"]
mod analytic_goals;

use analytic_goals::{Setup, setup};

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
    let Setup {
        skeleton,
        ik,
        mut pose,
        parent,
        goals,
    } = setup();
    c.bench_function("two_bone_scalar_1000", |bench| {
        bench.iter(|| {
            for goal in &goals {
                let _ =
                    black_box(ik.solve_with_parent(&skeleton, &mut pose, black_box(goal), &parent));
            }
        });
    });
}

/// Median and minimum over runs of the whole goal set, in ns per run (the minimum is the run
/// least disturbed by other processes on a shared machine).
fn median_ns(mut solve_all: impl FnMut()) -> (f64, f64) {
    for _ in 0..20 {
        solve_all();
    }
    let mut samples: Vec<f64> = (0..201)
        .map(|_| {
            let t = Instant::now();
            solve_all();
            t.elapsed().as_nanos() as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2], samples[0])
}

fn print_medians() {
    let s = setup();
    let mut b = batch_for(&s);
    let n = s.goals.len() as f64;
    let Setup {
        skeleton,
        ik,
        mut pose,
        parent,
        goals,
    } = setup();
    // Alternating, so that a change of machine load hits both alike.
    let (mut batch, mut scalar) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        batch.push(median_ns(|| {
            b.solve();
        }));
        scalar.push(median_ns(|| {
            for goal in &goals {
                let _ =
                    black_box(ik.solve_with_parent(&skeleton, &mut pose, black_box(goal), &parent));
            }
        }));
    }
    let summary = |runs: &mut Vec<(f64, f64)>| {
        let min = runs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min) / n;
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        (runs[2].0 / n, min)
    };
    let ((batch, batch_min), (scalar, scalar_min)) = (summary(&mut batch), summary(&mut scalar));
    let fallback = b.solve();
    println!(
        "analytic two-bone IK, {} limbs per call; median of 5 alternating medians (fastest run):",
        goals.len()
    );
    println!("  batch (TwoBoneBatch::solve): {batch:.1} ns/limb amortised ({batch_min:.1})");
    println!("  scalar (solve_with_parent):  {scalar:.1} ns/limb ({scalar_min:.1})");
    println!(
        "  ratio scalar / batch: {:.2}x ({:.2}x); {fallback} of {} limbs took the scalar solve (degenerate goals)",
        scalar / batch,
        scalar_min / batch_min,
        goals.len()
    );
}

criterion_group!(benches, bench_batch);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_medians();
}
