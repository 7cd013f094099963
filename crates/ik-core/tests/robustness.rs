//! Issue 24's robustness suite at CI size (see `support/robustness.rs`; the full-size figures
//! come from `benches/robustness.rs`) on the 24 test rigs and the CC0 characters, every
//! threshold one of the named constants, measured by FK of the output.
//!
//! This file: the checks today's full-body solver passes, and the harness's own checks (the
//! scenarios are what they claim). The targets it does not meet yet are in
//! `docs/robustness_targets.rs`
//! (outside the test targets until they pass).

#[path = "support/robustness.rs"]
mod robustness;

use ik_core::humanoid::Effector;
use robustness::*;

#[test]
fn still_reachable_goals_settle() {
    assert_settles(StillKind::Reachable);
}

#[test]
fn still_reachable_goals_are_met() {
    let kind = StillKind::Reachable;
    let bad = still_failures(kind, |r| r.final_error > 1.0);
    assert!(
        bad.is_empty(),
        "reachable goals missed in the last frame:\n{}",
        bad.join("\n")
    );
}

#[test]
fn still_hand_beyond_reach_settles() {
    assert_settles(StillKind::HandBeyond);
}

#[test]
fn still_hand_far_away_settles() {
    assert_settles(StillKind::HandFar);
}

/// Every effector and the look-at at random still places within ±1 height (the issue's "all
/// random" kind): at rest, bit for bit, by frame 30 on every rig (at full size, 1,008 of
/// 1,008 since each level's own part of a step is judged; `docs/benchmarks.md`).
#[test]
fn still_random_goals_settle() {
    assert_settles(StillKind::AllRandom);
}

#[test]
fn still_goals_never_turn_a_joint_past_the_bound() {
    for kind in StillKind::ALL {
        let s = summarize_still(ci_still(kind));
        let bad = still_failures(kind, |r| over_bound(r.max_turn_deg));
        assert!(
            bad.is_empty(),
            "{kind:?}: {} joint-frames over {TURN_BOUND_DEG}° ({} over {FLIP_DEG}°, largest {:.1}°) in {} of {} runs:\n{}",
            s.over_bound,
            s.flips,
            s.max_turn_deg,
            bad.len(),
            s.runs,
            bad.join("\n")
        );
    }
}

#[test]
fn moving_6d_goals_never_flip() {
    let s = moving_summary();
    let bad = moving_failures(|r| r.flips > 0);
    assert!(
        bad.is_empty(),
        "{} joint turns over {FLIP_DEG}° (largest {:.1}°) in {} frames:\n{}",
        s.flips,
        s.largest_turn_deg,
        s.frames,
        bad.join("\n")
    );
}

/// What the moving 6D scenario meets at CI size today (issue 24's target, 100 %, is in
/// `docs/robustness_targets.rs`): 97.54 % (4,440 of 4,552) measured on main with a hand's
/// rotation beyond its arm's range giving way and the analytic candidate bounded part by part
/// (`docs/benchmarks.md`, *A hand's rotation beyond its arm's range gives way*: 97.60 % with
/// the first alone, 95.91 % before either), less a tenth of a percent so a change of one
/// goal-frame does not trip it.
const MOVING_MET_FLOOR_PERCENT: f64 = 97.4;

#[test]
fn moving_6d_feasible_goal_frames_are_mostly_met() {
    let s = moving_summary();
    assert!(
        s.met_percent() >= MOVING_MET_FLOOR_PERCENT,
        "feasible goal-frames met {:.2} % ({} of {}; floor {MOVING_MET_FLOOR_PERCENT} %), worst miss {:.1} mm|°",
        s.met_percent(),
        s.met,
        s.feasible(),
        s.worst_miss
    );
}

#[test]
fn still_infeasible_hand_leaves_the_other_goals_met() {
    for kind in [StillKind::HandBeyond, StillKind::HandFar] {
        let s = summarize_still(ci_still(kind));
        let bad = still_failures(kind, |r| r.others_error > UNTOUCHED);
        assert!(
            bad.is_empty(),
            "{kind:?}: the other effectors off their goals by up to {:.2} mm|° in {} of {} runs:\n{}",
            s.others_error,
            bad.len(),
            s.runs,
            bad.join("\n")
        );
    }
}

/// Not vacuous: the oracle finds goals it cannot meet in the moving scenario (hands beyond
/// reach) and meets most goal-frames.
#[test]
fn moving_6d_scenario_has_feasible_and_infeasible_goals() {
    let s = moving_summary();
    assert!(s.infeasible_frames * 50 > s.frames, "{s:?}");
    assert!(s.oracle_feasible * 10 > s.frames * 6 * 8, "{s:?}");
}

/// The still scenarios are what they claim: the moved hand 10–40 % of the arm beyond reach or
/// 1–3 arm lengths from its shoulder, the other goals those of the reachable set, hand rotation
/// goals on every other seed.
#[test]
fn still_scenarios_are_what_they_claim() {
    let (rigs, _) = ci_rigs();
    for (r, rig) in rigs.iter().enumerate() {
        let body = Body::of(rig);
        for k in 0..2 {
            let seed = seed_of(r, k, SALT_STILL);
            let reach = still_case(rig, &body, StillKind::Reachable, seed);
            assert_eq!(reach.infeasible_hand, None);
            assert_eq!(
                reach.goals.get(Effector::LeftHand).rotation_weight > 0.0,
                reach.hand_rotation
            );
            for (kind, lo, hi) in [
                (StillKind::HandBeyond, 1.1, 1.4),
                (StillKind::HandFar, 1.0, 3.0),
            ] {
                let case = still_case(rig, &body, kind, seed);
                let side = case.infeasible_hand.expect("a hand is moved");
                let target = case.goals.effectors[side].position;
                let d = reach.shoulders[side].distance(target) / body.arms[side];
                assert!(
                    (lo - 1e-3..=hi + 1e-3).contains(&d),
                    "{} {kind:?}: hand at {d:.3} arms",
                    rig.name
                );
                for e in (0..5).filter(|&e| e != side) {
                    assert_eq!(case.goals.effectors[e], reach.goals.effectors[e]);
                }
            }
        }
    }
}

/// The VR scripts are what they claim: 1.2 m/s walking, a 180° turn, the head 40 % lower in
/// the crouch, a hand 30 % beyond the arm, the head tracker turning at most 10.5° a frame in
/// the shake, and bit-identical trackers for the last 5 s.
#[test]
fn vr_scripts_are_what_they_claim() {
    let (rigs, _) = ci_rigs();
    let rig = &rigs[0];
    let body = ik_core::vr::VrBody::new(&rig.skeleton, &rig.map).unwrap();
    for k in 0..3 {
        let script = vr_script(&body, rig, seed_of(0, k, SALT_VR));
        let c = script_checks(&body, &script);
        assert!((c.walk_speed - 1.2).abs() < 1e-3, "{c:?}");
        assert!((c.turn_deg - 180.0).abs() < 0.5, "{c:?}");
        assert!((c.crouch - 0.4).abs() < 0.01, "{c:?}");
        assert!((c.reach_beyond - 0.3).abs() < 0.01, "{c:?}");
        assert!(c.shake_deg > 55.0 && c.shake_step_deg <= 10.5, "{c:?}");
        assert!(
            c.still_frames as f32 >= VR_STILL_SECONDS * VR_HZ - 1.0,
            "{c:?}"
        );
    }
}

#[test]
fn vr_body_never_flips() {
    let bad = vr_failures(|r| r.flips > 0);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn vr_body_stays_within_limits() {
    let bad = vr_failures(|r| r.outside_limits > 0);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The head within [`HEAD_ERROR`] on every frame it is reachable: the oracle
/// (`vr_recording::head_reachable`: a pelvis placement with the standing feet where they are,
/// within the limits and the turn bound) finds no frame the head misses on reachable, and the
/// VR body reports every frame it misses on (`VrReport::head_reachable`).
#[test]
fn vr_body_head_on_its_tracker_when_reachable() {
    // Not vacuous: the head is reachable on most frames.
    let bad = vr_failures(|r| {
        r.reachable_head_error > HEAD_ERROR
            || r.head_error > HEAD_ERROR
            || r.unreported_misses > 0
            || r.reachable_frames * 10 < r.frames * 8
    });
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn vr_body_comes_to_rest_when_the_trackers_do() {
    let bad = vr_failures(|r| r.settle_frames.is_none_or(|f| f > SETTLE_FRAMES));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn vr_body_planted_feet_stay() {
    // Not vacuous: every run has planted stances (the drift is measured over them).
    let bad = vr_failures(|r| r.planted_drift > PLANTED_DRIFT || r.planted_frames == 0);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `solve_cold` from the rest pose to goals by FK of random in-limit poses, 100 per CC0
/// character: at least [`COLD_SUCCESS`] meet every goal at 1 mm / 1° (moved here from
/// `docs/robustness_targets.rs` by branch cold24b: 399 of 400; the full-size figures, 1,000
/// per character, come from `benches/cold.rs`).
#[test]
fn cold_solves_meet_the_goals_on_the_cc0_characters() {
    let runs = ci_cold();
    let (ok, total) = runs
        .iter()
        .fold((0, 0), |(a, b), (_, r)| (a + r.success, b + r.total));
    for (i, r) in runs {
        println!("{}: {} of {}", name(*i), r.success, r.total);
    }
    assert!(
        ok as f64 >= COLD_SUCCESS * total as f64,
        "cold solves met every goal in {ok} of {total} ({:.1} %); per character: {:?}",
        ok as f64 * 100.0 / total as f64,
        runs.iter()
            .map(|(i, r)| (name(*i), r.success, r.total))
            .collect::<Vec<_>>()
    );
}
