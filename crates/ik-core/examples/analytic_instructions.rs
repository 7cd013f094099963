//! Runs the analytic bench's goal set (`benches/support/analytic_goals.rs`: 70 % reachable,
//! 20 % beyond reach, 10 % degenerate) through `TwoBoneIk::solve_with_parent` a number of
//! times, for counting instructions per solve with callgrind, which unlike wall-clock time is
//! deterministic on a loaded machine:
//!
//! ```text
//! cargo build --release -p ik-core --example analytic_instructions
//! valgrind --tool=callgrind --toggle-collect='*solve_with_parent*' \
//!     target/release/examples/analytic_instructions 10
//! ```
//!
//! The total `Ir` divided by the solve count it prints is the mean instructions per solve.
//!
//! With a second argument `batch` it runs the same goals through the batched path instead
//! (`analytic::batch::TwoBoneBatch`, 1000 copies of the limb, one call per pass):
//! `--toggle-collect='ik_core::analytic::batch::TwoBoneBatch::solve'` (a pattern with `*` that
//! also matches the functions it calls toggles collection off inside them). With `lanes`,
//! through the resident lanes (`--toggle-collect='*solve_lanes*'`:
//! `TwoBoneBatch::solve_lanes` without reports, the goals written into lanes before); it also
//! prints a checksum of the solved rotations' bits, to check that a change to the kernel that
//! should not change its arithmetic leaves the results the same to the bit.

use std::hint::black_box;

#[path = "../benches/support/analytic_goals.rs"]
mod analytic_goals;

fn main() {
    let analytic_goals::Setup {
        skeleton,
        ik,
        mut pose,
        parent,
        goals,
    } = analytic_goals::setup();
    let passes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let mode = std::env::args().nth(2);
    if mode.as_deref() == Some("lanes") {
        use ik_core::analytic::batch::{BatchScratch, LaneGoals, LanePoses, TwoBoneBatch};
        let n = goals.len();
        let batch = TwoBoneBatch::try_new((0..n).map(|_| (&skeleton, &ik))).expect("valid limbs");
        let mut shifted = goals.clone();
        shifted.rotate_left(1);
        let lanes = [&goals, &shifted].map(|set| {
            let mut lanes = LaneGoals::new(n);
            for (i, goal) in set.iter().enumerate() {
                lanes.set(i, goal).expect("in range");
            }
            lanes
        });
        let mut poses = LanePoses::new(n);
        let rotations = ik.bones().map(|b| pose.rotations[b]);
        for i in 0..n {
            poses.set(i, &parent, rotations).expect("in range");
        }
        let mut scratch = BatchScratch::new();
        let mut fallback = 0;
        for pass in 0..passes {
            fallback += black_box(&batch)
                .solve_lanes(&lanes[pass % 2], &mut poses, None, &mut scratch)
                .expect("matching lanes");
        }
        // A checksum of the solved rotations' bits, for comparing builds.
        let mut sum = 0u64;
        for i in 0..n {
            for q in poses.rotations(i).expect("in range") {
                for c in q.to_array() {
                    sum = sum
                        .wrapping_mul(0x100_0000_01b3)
                        .wrapping_add(u64::from(c.to_bits()));
                }
            }
        }
        println!(
            "{} limbs solved in lanes, {fallback} by the scalar solve (rotation bits {sum:016x})",
            passes * n
        );
        return;
    }
    if mode.as_deref() == Some("batch") {
        use ik_core::analytic::batch::{BatchScratch, TwoBoneBatch};
        let n = goals.len();
        let batch = TwoBoneBatch::try_new((0..n).map(|_| (&skeleton, &ik))).expect("valid limbs");
        let [root, mid, tip] = ik.bones();
        let parents = vec![parent; n];
        let mut rotations = vec![
            [
                pose.rotations[root],
                pose.rotations[mid],
                pose.rotations[tip]
            ];
            n
        ];
        let mut reports = vec![Ok(ik_core::analytic::LimbReport::default()); n];
        let mut scratch = BatchScratch::new();
        let mut shifted = goals.clone();
        shifted.rotate_left(1);
        let mut fallback = 0;
        for pass in 0..passes {
            let set = if pass % 2 == 0 { &goals } else { &shifted };
            fallback += black_box(&batch)
                .solve(
                    black_box(set),
                    &parents,
                    &mut rotations,
                    &mut reports,
                    &mut scratch,
                )
                .expect("matching slices");
        }
        println!(
            "{} limbs solved in batches, {fallback} by the scalar solve",
            passes * n
        );
        return;
    }
    let mut reachable = 0usize;
    for _ in 0..passes {
        for goal in &goals {
            if let Ok(report) =
                black_box(ik.solve_with_parent(&skeleton, &mut pose, black_box(goal), &parent))
                && report.reachable
            {
                reachable += 1;
            }
        }
    }
    println!(
        "{} solves ({passes} passes over {} goals), {reachable} reachable",
        passes * goals.len(),
        goals.len()
    );
}
