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
