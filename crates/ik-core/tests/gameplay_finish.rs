//! Gameplay goals at the edges of the body's range (issue 9: every feasible goal met at 1 mm /
//! 1°), on every rig convention and the CC0 characters in `assets/`: a hand reaching near the
//! edge of its shoulder's range is met, and a look-at just past the head's range is met by
//! turning the trunk while the hands and feet it carries stay on their targets. Then the
//! goal-frames the `gameplay` bench once missed although they were feasible without a flip:
//! the `KayKit` mannequin's look-at along the limits of its trunk, a Mixamo/+X hand met with a
//! turn of 16.7°, and a Vrm/+Y foot under a position-only pelvis goal.
//!
//! Every test runs the default, bounded tracking (the corrective passes these tests were
//! written for — rescue, the trunk's finish — are deleted). The first two (hands near the
//! edge of the shoulder, the Mixamo/+X hand), the look-at past the head and the `KayKit`
//! mannequin's look-at are met in every feasible goal-frame that is not feasible only by a
//! flip (`flip_only_misses`, the oracle of
//! `reaching_hands_with_orientation_goals_stay_coherent`, which excuses a goal-frame no oracle
//! meets within the per-frame bound from the tracker's previous output). In the last two a
//! foot's rotation goal lies beyond its ankle's range (the oracle drops that foot): it gives
//! way on a sub-level of its own (issue 24's rule for a rotation beyond the limb's range,
//! `docs/benchmarks.md`, *Bounded tracking: a rotation beyond the limb's range gives way*),
//! which met the `KayKit` look-at (before: 1.10° off in frame 153 of both). Under a
//! position-only pelvis the Vrm/+Y look-at is still 1.05° off in one goal-frame;
//! that test holds the lag to what was measured, so a change that loses more fails.

use crate::gameplay;

use gameplay::{
    FLIP_DEG, Rig, Scenario, feasible_goals_with_poses, flip_only_misses_with, largest_turn_deg,
    rigs, run, scenario_frames, track, walk_pose,
};
use ik_core::glam::Quat;
use ik_core::humanoid::{BodyFrame, Effector, HumanoidBone as B};

/// The reach scenario (hands drifting from 30 % to 125 % of the arm's length, the head looking
/// around) on every rig: of the feasible hand goal-frames (the cold oracle decides), all but
/// those only a flip meets are met at 1 mm in at least 99.9 % of goal-frames overall, and no
/// such hand is missed by more than 2 mm. Before the swivel of position-only limbs (and, in
/// the corrective tracking of earlier releases, its rescue pass), the Mixamo-named +X test rig and the `KayKit` mannequin missed
/// hands by 1–4 mm in 33 of about 6700 hand goal-frames (99.5 %).
#[test]
fn feasible_hands_are_met_while_reaching_near_the_edge_of_the_shoulder() {
    let (mut hands, mut met) = (0usize, 0usize);
    let mut worst = Vec::new();
    for (ri, rig) in rigs(true).iter().enumerate() {
        let frames = scenario_frames(rig, Scenario::Reach, 120, ri as u32 + 1);
        let (mask, oracle, _) = feasible_goals_with_poses(rig, &frames);
        let mut solver = rig.solver();
        let r = run(rig, &mut solver, &frames, &mask, false, track);
        assert_eq!(r.flips, 0, "{}: {r:?}", rig.name);
        let flip_only =
            flip_only_misses_with(rig, rig.solver(), &frames, &mask, &oracle, &r.misses);
        let hand_frames =
            mask.iter().filter(|m| m[0]).count() + mask.iter().filter(|m| m[1]).count();
        let missed: Vec<_> = r
            .misses
            .iter()
            .zip(&flip_only)
            .filter(|(m, flip)| m.goal < 2 && !**flip)
            .map(|(m, _)| *m)
            .collect();
        hands += hand_frames;
        met += hand_frames - missed.len();
        worst.extend(missed.iter().filter(|m| m.error > 2.0).map(|m| {
            format!(
                "{} frame {} hand {}: {:.2} mm",
                rig.name, m.frame, m.goal, m.error
            )
        }));
    }
    let rate = met as f64 / hands as f64;
    assert!(
        worst.is_empty(),
        "hands missed by more than 2 mm: {worst:?}"
    );
    assert!(
        rate >= 0.999,
        "feasible hands met {met} of {hands} ({rate})"
    );
}

/// A look-at whose target needs the trunk: the start is the walk pose with the head turned
/// 90° about the body's up axis, clamped to its limit; the look-at aims where the head aims
/// with the spine and the chest turned 3° further each (so the head alone cannot aim there);
/// hands, feet and pelvis keep their goals at the start pose, so the arms must take up the
/// trunk's turn. (The Jacobian meets this one as well; what the test guards is that no
/// finishing step — the trunk's turn for the look-at among them — costs a hand or a foot.) On every rig — the `KayKit`
/// mannequin, which has no neck, among them — within [`FRAMES`] frames the look-at is met at 1° while
/// hands and feet stay within 1 mm of their targets, with no joint turning more than 20° in
/// a frame.
#[test]
fn a_look_at_past_the_head_is_met_by_the_trunk_while_hands_and_feet_stay_met() {
    let mut failures = Vec::new();
    for rig in rigs(true) {
        if let Some(f) = look_past_the_head(&rig) {
            failures.push(f);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Frames the look-at past the head gets: the trunk's 6° at 5° a frame.
const FRAMES: usize = 2;

fn look_past_the_head(rig: &Rig) -> Option<String> {
    let sk = &rig.skeleton;
    let mut solver = rig.solver();
    let frame = BodyFrame::from_rest(sk, &rig.map).expect("body frame");
    let turn = |pose: &mut ik_core::Pose, b: usize, angle: f32| {
        let model = sk.model_transforms(pose);
        let parent = sk.parent(b).map_or(Quat::IDENTITY, |p| model[p].rotation);
        let q = Quat::from_axis_angle(frame.up, angle);
        pose.rotations[b] = (parent.inverse() * q * parent * pose.rotations[b]).normalize();
    };
    // The start: the walk pose with the head turned as far as its limit lets it.
    let mut start = walk_pose(rig, &solver, 0.3);
    let head = rig.map.get(B::Head).expect("head");
    turn(&mut start, head, 90f32.to_radians());
    let rest = sk.bones()[head].rest;
    let (mut r, mut t) = (start.rotations[head], start.translations[head]);
    let _ = solver
        .limits()
        .get(B::Head)
        .clamp(rest.rotation, rest.translation, &mut r, &mut t);
    (start.rotations[head], start.translations[head]) = (r, t);
    // The target: the trunk turned 3° further at the spine and at the chest.
    let mut target = start.clone();
    for role in [B::Spine, B::Chest] {
        if let Some(b) = rig.map.get(role) {
            turn(&mut target, b, 3f32.to_radians());
        }
    }
    if !solver.pose_within_limits(sk, &target, 1e-3) {
        // A trunk without room for 3° on this rig: nothing to test here.
        return None;
    }
    // Hands, feet and pelvis where they are at the start (the arms take up the trunk's turn),
    // the look-at where the target pose's head aims.
    let mut goals = solver.goals_at_pose(sk, &start);
    goals.look_at = solver.goals_at_pose(sk, &target).look_at;
    let mut pose = start.clone();
    let mut prev = pose.clone();
    let mut last = None;
    for f in 0..FRAMES {
        if solver.solve(sk, &mut pose, &goals).is_err() {
            return Some(format!("{}: solve error", rig.name));
        }
        let turn = largest_turn_deg(rig, &prev, &pose);
        if turn > FLIP_DEG {
            return Some(format!("{} frame {f}: a joint turned {turn:.1}°", rig.name));
        }
        prev.copy_from(&pose);
        last = Some(gameplay::measure(rig, &solver, &pose, &goals));
    }
    let r = last.expect("frames ran");
    let look = gameplay::goal_error(&r, 5, rig.scale);
    let others = (0..5)
        .map(|k| gameplay::goal_error(&r, k, rig.scale))
        .fold(0.0f32, f32::max);
    (look > 1.0 || others > 1.0).then(|| {
        format!(
            "{}: look-at off {look:.2}°, worst other goal {others:.2} mm|° after {FRAMES} frames",
            rig.name
        )
    })
}

/// Runs `scenario` (240 frames, as the `gameplay` bench: the same seed) on the rig named
/// `name`, with a 6D pelvis goal or, with `pelvis_position`, a position-only one (as
/// `bevy_ik`'s `IkHumanoid` sets it), and returns a line per feasible goal-frame missed that
/// is not feasible only by a flip (see `flip_only_misses`) with its error (mm or degrees), and
/// per frame in which a joint turned more than 20° (error infinite).
fn coherent_misses(name: &str, scenario: Scenario, pelvis_position: bool) -> Vec<(String, f32)> {
    let all = rigs(true);
    let (ri, rig) = all
        .iter()
        .enumerate()
        .find(|(_, r)| r.name == name)
        .expect("rig is bundled");
    let mut frames = scenario_frames(rig, scenario, 240, ri as u32 + 1);
    if pelvis_position {
        for f in &mut frames {
            f.goals.get_mut(Effector::Pelvis).rotation_weight = 0.0;
        }
    }
    let (mask, oracle, _) = feasible_goals_with_poses(rig, &frames);
    let mut solver = rig.solver();
    let r = run(rig, &mut solver, &frames, &mask, false, track);
    let flip_only = flip_only_misses_with(rig, rig.solver(), &frames, &mask, &oracle, &r.misses);
    let mut out: Vec<(String, f32)> = r
        .misses
        .iter()
        .zip(&flip_only)
        .filter(|(_, flip)| !**flip)
        .map(|(m, _)| {
            let line = format!(
                "{name} {scenario:?} frame {} goal {}: off {:.2} mm|°",
                m.frame, m.goal, m.error
            );
            (line, m.error)
        })
        .collect();
    if r.flips > 0 {
        let line = format!(
            "{name} {scenario:?}: {} flips (largest turn {:.1}°)",
            r.flips, r.largest_turn_deg
        );
        out.push((line, f32::INFINITY));
    }
    out
}

/// Asserts that `misses` (from [`coherent_misses`]) are none, or — where bounded tracking is
/// known to lag (issue 24's target, every feasible goal-frame met, is not met there yet) — at
/// most `frames` goal-frames, each off by at most `worst` (mm or degrees), and no flip.
fn assert_lag_within(misses: &[(String, f32)], frames: usize, worst: f32) {
    let lines = || {
        misses
            .iter()
            .map(|(l, _)| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        misses.len() <= frames,
        "{} misses:\n{}",
        misses.len(),
        lines()
    );
    assert!(misses.iter().all(|(_, e)| *e <= worst), "{}", lines());
}

/// The `KayKit` mannequin has no neck: a look-at past the head's range needs the chest and
/// spine, and along the reach and both scenarios they are at their limits too, so the aim has
/// to slide along the limits (the warm oracle took 100–200 Jacobian iterations). With a 6D
/// pelvis and no joint turning more than 20° in a frame, every feasible goal-frame that is not
/// feasible only by a flip is met at 1 mm / 1° but three: the look-at 4.57° off in frame 216
/// of "reach" and 4.63–4.67° in frames 220–221 of "both", frames the oracle (`solve_cold`)
/// finds feasible since its restarts perturb the trunk (branch cold24b; with the oracle before
/// it every one is met). Since the analytic candidate is shortened onto the turn bound part by
/// part and the deciding level must fall by a tolerance (branch allrand24): three, up to
/// 4.67° (before: three, up to 4.51°; with that branch's parts judged each on its own, not
/// kept: four, up to 4.16°). In "both" the right foot's rotation goal lies 2.6–13.3° beyond its
/// ankle's range (frames 140–160): it gives way on its own sub-level (turned as far as the
/// ankle allows, what is beyond not counted), so it no longer trades with the look-at (before
/// that rule: 1.10° off in frame 153; before held joints slid along their bounds, 1.0–3.1°
/// over frames 126–155; `docs/benchmarks.md`). Issue 24's target, every one met, is not met.
#[test]
fn a_look_at_along_the_limits_of_a_trunk_without_a_neck_is_met_but_three_frames() {
    let mut misses = Vec::new();
    for scenario in [Scenario::Reach, Scenario::Both] {
        misses.extend(coherent_misses("kaykit_mannequin.glb", scenario, false));
    }
    assert_lag_within(&misses, 3, 4.7);
}

/// A hand near the edge of the Mixamo-named +X test rig's shoulder range (reach scenario): the
/// oracle meets it with a joint turning 16.7° in frame 31, and bounded tracking once left it
/// 4.9–19.6 mm off in frames 41–53 (held joints left the step whole). Every feasible
/// goal-frame that is not feasible only by a flip is met, no flips (while the analytic
/// candidate's parts were judged each on its own, branch allrand24, the look-at lagged
/// 1.04–1.45° over frames 50–58: `docs/benchmarks.md`, *Each level's own part of a step*).
#[test]
fn a_hand_at_the_edge_of_the_shoulder_is_met_within_the_turn_bound() {
    let misses = coherent_misses("Mixamo/PlusX", Scenario::Reach, false);
    assert_lag_within(&misses, 0, 0.0);
}

/// Under a position-only pelvis goal (the hips turn, so a turn for one leg moves the other)
/// on the Vrm-named +Y test rig, uneven and both scenarios: no flips, and of the 1,428
/// feasible goal-frames one is missed, the look-at by 1.05° in frame 211 of both. Over frames
/// 204–214 the right foot's rotation goal lies beyond its ankle's range (the oracle drops
/// that foot): it gives way on its own sub-level, so it no longer drags the left foot through
/// the hips' turn (before that rule: 10 goal-frames, the left foot by up to 10.7 mm and the
/// look-at by up to 4.8°). Its whole residual still counts there (the hips' turn carries the
/// hip, and with it the ankle's range, so how much of the rotation no pose meets is not read
/// from the goals), and it still holds the look-at below it in that one frame (issue 24's
/// target, every one met, is not met here). Measured with the corrective tracking of earlier
/// releases (its rescue pass, deleted): all met.
#[test]
fn a_foot_under_a_position_only_pelvis_lags_within_the_measured_frames() {
    let mut misses = Vec::new();
    for scenario in [Scenario::Uneven, Scenario::Both] {
        misses.extend(coherent_misses("Vrm/PlusY", scenario, true));
    }
    assert_lag_within(&misses, 1, 1.1);
}
