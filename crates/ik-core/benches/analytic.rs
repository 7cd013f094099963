//! Analytic two-bone limb IK: nanoseconds per solve over a fixed, seeded set of goals
//! (70 % reachable, 20 % beyond reach, 10 % degenerate: at the shoulder, closer than
//! |L1 − L2|, pole collinear with the target).
//!
//! Besides criterion's estimates it prints the median ns per solve over batches of the whole
//! set, for `solve_with_parent` (the hot path the plugin and the full-body solver use) and for
//! `solve` (which also walks the root's ancestors), and their ratio.

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
#[path = "support/analytic_goals.rs"]
mod analytic_goals;

use analytic_goals::{Setup, median_and_min_ns, setup};

fn bench_analytic(c: &mut Criterion) {
    let Setup {
        skeleton,
        ik,
        mut pose,
        parent,
        goals,
    } = setup();
    // The goals are taken in turn from a cycling iterator: indexing with `i % goals.len()`
    // put a 64-bit division in front of every solve's first loads, on its dependency chain
    // (about 1.5 ns of harness in the figure).
    let mut cycle = goals.iter().cycle();
    c.bench_function("two_bone_solve_with_parent", |b| {
        b.iter(|| {
            let goal = cycle.next().expect("non-empty goal set");
            black_box(ik.solve_with_parent(&skeleton, &mut pose, black_box(goal), &parent))
        });
    });
    c.bench_function("two_bone_solve", |b| {
        b.iter(|| {
            let goal = cycle.next().expect("non-empty goal set");
            black_box(ik.solve(&skeleton, &mut pose, black_box(goal)))
        });
    });
}

/// Median over batches of the whole goal set, in ns per solve.
fn print_medians() {
    let mut s = setup();
    let n = s.goals.len() as f64;
    let with_parent = median_and_min_ns(|| s.solve_all_with_parent()).0 / n;
    let full = median_and_min_ns(|| {
        for goal in &s.goals {
            let _ = black_box(s.ik.solve(&s.skeleton, &mut s.pose, black_box(goal)));
        }
    })
    .0 / n;
    println!(
        "analytic two-bone IK, median over batches of {} goals:",
        s.goals.len()
    );
    println!("  solve_with_parent: {with_parent:.1} ns/solve");
    println!(
        "  solve (walks the root's 3 ancestors): {full:.1} ns/solve (ratio {:.2})",
        full / with_parent
    );
}

criterion_group!(benches, bench_analytic);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_medians();
}
