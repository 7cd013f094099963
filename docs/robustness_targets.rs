//! Issue 24's robustness suite at CI size (see `support/robustness.rs`; the full-size figures
//! come from `benches/robustness.rs`) on the 24 test rigs and the CC0 characters, every
//! threshold one of the named constants, measured by FK of the output.
//!
//! This file: the targets the full-body solver does not meet yet (bounded tracking,
//! measured on 2026-11-29 on main after merging branches hand24 and allrand24, full size and
//! CI size, `docs/benchmarks.md`, *Each level's own part of a step* and *A hand's rotation
//! beyond its arm's range gives way*). Still goals at full size: every kind bit-identical by
//! frame 30 (1,008 of 1,008 each), but one hand-beyond and one hand-far run still move at frame
//! 30 (up to 11.2°), and other goals next to a hand beyond reach are off by more than 1 mm in
//! 1 run (1.8 mm: two hands the solver can each reach, not together, trade on one level);
//! moving 6D goals (CI size): 97.54 % of feasible goal-frames met, other goals next to
//! an infeasible one off by up to 121.6 mm (on a cold first frame), with the stronger oracle of
//! branch cold24b. It is
//! kept here, outside the test targets, because CI runs every test and these fail today: a
//! test moves back to `crates/ik-core/tests/` (beside `robustness.rs`, with
//! `#[path = "support/robustness.rs"]`) when the solver meets it. The checks met today are in
//! `crates/ik-core/tests/robustness.rs`: the still-goal targets for a hand beyond reach,
//! (since the acceptance ratio) a hand far away and (since each level's own part of a step is
//! judged) every effector and the look-at at random, the turn bound, the others next to an
//! infeasible hand, the moving-goal flip target, and the VR body's at-rest, turn, limit, head
//! and planted-foot targets.

#[path = "support/robustness.rs"]
mod robustness;

use robustness::*;

#[test]
fn moving_6d_feasible_goal_frames_are_met() {
    let s = moving_summary();
    let bad = moving_failures(|r| r.met < r.feasible());
    assert!(
        s.met_percent() >= FEASIBLE_MET_PERCENT && bad.is_empty(),
        "feasible goal-frames met {:.2} % ({} of {}; {} more the oracle meets only beyond {TURN_BOUND_DEG}°), worst miss {:.1} mm|°:\n{}",
        s.met_percent(),
        s.met,
        s.oracle_feasible - s.beyond_bound,
        s.beyond_bound,
        s.worst_miss,
        bad.join("\n")
    );
}

#[test]
fn moving_6d_infeasible_goal_leaves_the_others() {
    let s = moving_summary();
    let bad = moving_failures(|r| r.others_error > UNTOUCHED);
    assert!(
        bad.is_empty(),
        "on {} frames with an infeasible goal the feasible ones were off by up to {:.2} mm|°:\n{}",
        s.infeasible_frames,
        s.others_error,
        bad.join("\n")
    );
}
