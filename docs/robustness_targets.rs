//! Issue 24's robustness suite at CI size (see `support/robustness.rs`; the full-size figures
//! come from `benches/robustness.rs`) on the 24 test rigs and the CC0 characters, every
//! threshold one of the named constants, measured by FK of the output.
//!
//! This file: the targets the full-body solver does not meet yet (measured on
//! 2026-11-29, 0417679, with bounded tracking, the only tracking of `FullBodySolver::solve`
//! since then). Still goals: one "hand far" run on `ual_mannequin_f.glb` never comes to rest
//! within 0.01° (a hand at the edge of its reach turning its rotation goal in by about 0.5 %
//! a frame) and one "all random" run on `robot_expressive.glb` is at rest only from frame 67;
//! moving 6D goals: 97.14 % of feasible goal-frames met, other goals next to an infeasible
//! one off by up to 32.8 mm; the VR body still tracks in the corrective mode. See
//! `docs/benchmarks.md`. It is kept here,
//! outside the test targets, because CI runs every test and these fail today: a test moves back
//! to `crates/ik-core/tests/` (beside `robustness.rs`, with `#[path = "support/robustness.rs"]`)
//! when the solver meets it. The checks met today are in `crates/ik-core/tests/robustness.rs`
//! (the still-goal targets for a hand beyond reach, the turn bound, the others next to an
//! infeasible hand and the moving-goal flip target moved there with bounded tracking as the
//! default).

#[path = "support/robustness.rs"]`)
//! when the solver meets it. The checks met today are in `crates/ik-core/tests/robustness.rs`.
//!
//! The VR body (on the bounded solve since branch vr24) meets its at-rest, turn, limit, head
//! and (since branch vrfeet24) planted-foot targets, now in `tests/robustness.rs`
//! (`docs/benchmarks.md`, *VR body: planted feet*).

#[path = "support/robustness.rs"]
mod robustness;

use robustness::*;

#[test]
fn still_hand_far_away_settles() {
    assert_settles(StillKind::HandFar);
}

#[test]
fn still_random_goals_settle() {
    assert_settles(StillKind::AllRandom);
}

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
