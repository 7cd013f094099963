//! The full-body solver under gameplay goals (see `support/gameplay.rs`) on every rig
//! convention and the CC0 characters in `assets/`: no flips along smooth goal motion, feasible
//! goals met while unreachable ones are present, monotone progress toward a hard goal across
//! frames, no frozen frame.

use crate::gameplay;

use gameplay::{
    Rig, Scenario, feasible_goals, feasible_goals_with_poses, flip_only_misses, rigs, run,
    scenario_frames, track,
};
use ik_core::Pose;
use ik_core::glam::{Quat, Vec3};
use ik_core::humanoid::{BodyFrame, Effector, HumanoidBone as B};

/// Every scenario on every rig: no joint turns more than 20° in a frame (the goals move a few
/// degrees per frame at most), no frozen frame, no error, finite output, and the feasible
/// goals (decided by the cold oracle) met at 1 mm / 1° in at least 99 % of goal-frames.
#[test]
fn gameplay_scenarios_are_coherent_and_meet_feasible_goals() {
    let mut report = Vec::new();
    let (mut feasible, mut met) = (0usize, 0usize);
    for (ri, rig) in rigs(true).iter().enumerate() {
        for scenario in Scenario::ALL {
            let frames = scenario_frames(rig, scenario, 90, ri as u32 + 1);
            let mask = feasible_goals(rig, &frames);
            let mut solver = rig.solver();
            let r = run(rig, &mut solver, &frames, &mask, false, track);
            assert_eq!(r.errors, 0, "{} {scenario:?}", rig.name);
            assert_eq!(r.non_finite, 0, "{} {scenario:?}", rig.name);
            assert_eq!(r.flips, 0, "{} {scenario:?}: {r:?}", rig.name);
            assert!(
                r.largest_turn_deg < 20.0,
                "{} {scenario:?}: {r:?}",
                rig.name
            );
            assert_eq!(r.frozen, 0, "{} {scenario:?}: {r:?}", rig.name);
            feasible += r.feasible;
            met += r.feasible_met;
            report.push(format!(
                "{} {scenario:?}: feasible met {}/{}, worst miss {:.1}, largest turn {:.1}°",
                rig.name, r.feasible_met, r.feasible, r.worst_feasible_miss, r.largest_turn_deg
            ));
        }
    }
    let rate = met as f64 / feasible as f64;
    assert!(
        rate >= 0.99,
        "feasible goals met {rate}:\n{}",
        report.join("\n")
    );
}

/// The same with a position-only pelvis goal (as `bevy_ik`'s `IkHumanoid` sets it: the hips
/// turn freely, so a tracking pass leaves the feet's rows out until a foot is missed): on every
/// rig the uneven-ground and both scenarios stay coherent (no flip, no frozen frame) and meet
/// the feasible goals — the feet among them — in at least 99 % of goal-frames.
#[test]
fn a_position_only_pelvis_goal_keeps_the_feet_and_the_feasible_goals() {
    let mut report = Vec::new();
    let (mut feasible, mut met) = (0usize, 0usize);
    let (mut feet_feasible, mut feet_met) = (0usize, 0usize);
    for (ri, rig) in rigs(true).iter().enumerate() {
        for scenario in [Scenario::Uneven, Scenario::Both] {
            // 4 s: the first 1.5 s keep every goal within reach on most rigs.
            let mut frames = scenario_frames(rig, scenario, 240, ri as u32 + 1);
            for f in &mut frames {
                f.goals.get_mut(Effector::Pelvis).rotation_weight = 0.0;
            }
            let mask = feasible_goals(rig, &frames);
            let mut solver = rig.solver();
            let r = run(rig, &mut solver, &frames, &mask, false, track);
            assert_eq!(r.errors + r.non_finite, 0, "{} {scenario:?}", rig.name);
            assert_eq!(r.flips, 0, "{} {scenario:?}: {r:?}", rig.name);
            assert_eq!(r.frozen, 0, "{} {scenario:?}: {r:?}", rig.name);
            let feet: usize = mask
                .iter()
                .map(|m| usize::from(m[2]) + usize::from(m[3]))
                .sum();
            let feet_missed = r
                .misses
                .iter()
                .filter(|m| m.goal == 2 || m.goal == 3)
                .count();
            feet_feasible += feet;
            feet_met += feet - feet_missed;
            feasible += r.feasible;
            met += r.feasible_met;
            report.push(format!(
                "{} {scenario:?}: feasible met {}/{}, feet missed {feet_missed}/{feet}, worst miss {:.1}",
                rig.name, r.feasible_met, r.feasible, r.worst_feasible_miss
            ));
        }
    }
    let rate = met as f64 / feasible as f64;
    let feet_rate = feet_met as f64 / feet_feasible as f64;
    assert!(
        rate >= 0.99 && feet_rate >= 0.99,
        "feasible goals met {rate}, feet {feet_rate}:\n{}",
        report.join("\n")
    );
}

/// Reaching hands that keep an orientation goal (the walk pose's hand orientation wherever the
/// target drifts, as `bevy_ik`'s `IkHumanoid` hand targets carry one), with its position-only
/// pelvis goal: on every rig the reach and both scenarios stay coherent (no flip, no frozen
/// frame). Feasible is issue 24's definition: the cold oracle meets the goal, and it or a warm
/// oracle from the tracker's previous output does so within the tracker's per-frame bound
/// (`flip_only_misses`). Not yet every feasible goal: bounded tracking (the default) meets
/// 98.93 % of feasible goal-frames, the hands 98.15 % (corrective tracking 99.57 % / 98.97 %;
/// the misses left are lags on the Mixamo-named, Unreal/-Z and Plain/Identity test rigs, see
/// `docs/benchmarks.md`); the floor here is 98.5 % / 98 %, so a change that loses more fails
/// (the issue asks for 100 %). (Before the per-frame bound was part of the definition the
/// floor was 95 % / 90 %, what corrective tracking then met: 95.5 % / 91.1 %.)
#[test]
fn reaching_hands_with_orientation_goals_stay_coherent() {
    let mut report = Vec::new();
    let (mut feasible, mut met) = (0usize, 0usize);
    let (mut turned, mut turned_met) = (0usize, 0usize);
    let (mut flips, mut frozen) = (0usize, 0usize);
    for (ri, rig) in rigs(true).iter().enumerate() {
        for scenario in [Scenario::Reach, Scenario::Both] {
            let mut frames = scenario_frames(rig, scenario, 120, ri as u32 + 1);
            for f in &mut frames {
                f.goals.get_mut(Effector::Pelvis).rotation_weight = 0.0;
                for hand in [Effector::LeftHand, Effector::RightHand] {
                    f.goals.get_mut(hand).rotation_weight = 1.0;
                }
            }
            let (mask, oracle, _) = feasible_goals_with_poses(rig, &frames);
            let mut solver = rig.solver();
            let r = run(rig, &mut solver, &frames, &mask, false, track);
            assert_eq!(r.errors + r.non_finite, 0, "{} {scenario:?}", rig.name);
            flips += r.flips;
            frozen += r.frozen;
            // Misses no oracle meets within the per-frame bound of the previous output are
            // not feasible (issue 24's definition).
            let beyond = flip_only_misses(rig, &frames, &mask, &oracle, &r.misses);
            let excused = |hand: bool| {
                r.misses
                    .iter()
                    .zip(&beyond)
                    .filter(|(m, b)| **b && (!hand || m.goal < 2))
                    .count()
            };
            let hands: usize = mask
                .iter()
                .map(|m| usize::from(m[0]) + usize::from(m[1]))
                .sum::<usize>()
                - excused(true);
            let hands_missed = r.misses.iter().filter(|m| m.goal < 2).count() - excused(true);
            turned += hands;
            turned_met += hands - hands_missed;
            feasible += r.feasible - excused(false);
            met += r.feasible_met;
            report.push(format!(
                "{} {scenario:?}: feasible met {}/{} ({} more met by no oracle within the bound), hands missed {hands_missed}/{hands}, worst miss {:.1}, flips {}",
                rig.name,
                r.feasible_met,
                r.feasible - excused(false),
                excused(false),
                r.worst_feasible_miss,
                r.flips
            ));
        }
    }
    let rate = met as f64 / feasible as f64;
    let hands_rate = turned_met as f64 / turned as f64;
    println!(
        "feasible goals met {rate}, hands {hands_rate}, flips {flips}, frozen {frozen}:\n{}",
        report.join("\n")
    );
    assert_eq!(flips + frozen, 0, "{}", report.join("\n"));
    assert!(
        rate >= 0.985 && hands_rate >= 0.98,
        "feasible goals met {rate}, hands {hands_rate}:\n{}",
        report.join("\n")
    );
}

/// The body's left, forward and up, and the arm's reach and shoulder position at rest.
fn arm(rig: &Rig, left: bool) -> (Vec3, f32) {
    let rest = rig.skeleton.rest_model_transforms();
    let (u, l, h) = if left {
        (B::LeftUpperArm, B::LeftLowerArm, B::LeftHand)
    } else {
        (B::RightUpperArm, B::RightLowerArm, B::RightHand)
    };
    let p = |r: B| rest[rig.map.get(r).expect("mapped")].translation;
    (p(u), p(u).distance(p(l)) + p(l).distance(p(h)))
}

/// A hand target far out of reach to one side never costs the other hand — reachable only
/// by leaning the other way (checked by a cold solve without the far hand) — nor the feet:
/// after the first frames every reachable goal is met every frame, the far hand gives way, and
/// it still gets closer than it is at rest.
#[test]
fn an_unreachable_hand_never_costs_the_reachable_goals() {
    let mut tested = 0;
    for rig in rigs(true) {
        let frame = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("frame");
        let rest = rig.skeleton.rest_pose();
        let new_solver = || {
            let mut solver = rig.solver();
            if std::env::var("IK_NO_GIVE_WAY").is_ok() {
                solver.settings_mut().give_way_distance = f32::INFINITY;
            }
            solver
        };
        let mut solver = new_solver();
        let mut goals = solver.goals_at_pose(&rig.skeleton, &rest);
        goals.look_at.enabled = false;
        goals.get_mut(Effector::Pelvis).enabled = false;
        let (left_shoulder, left_reach) = arm(&rig, true);
        let (right_shoulder, right_reach) = arm(&rig, false);
        let far = left_shoulder + frame.left * left_reach * 2.5;
        // The reachable hand: out to its side, front and down, beyond the arm's reach from the
        // rest shoulder (the body must lean away from the far hand), moving slowly.
        let right = |f: usize| {
            let a = f as f32 * 0.01;
            let dir = (frame.forward * 0.5 - frame.left * 0.6 - frame.up * (0.6 + 0.2 * a.sin()))
                .normalize();
            ik_core::humanoid::EffectorGoal::position(right_shoulder + dir * right_reach * 1.06)
        };
        // Feasible without the far hand, for every frame's target?
        let mut alone = goals;
        alone.get_mut(Effector::LeftHand).enabled = false;
        let feasible = (0..40).step_by(13).all(|f| {
            *alone.get_mut(Effector::RightHand) = right(f);
            let mut p = rest.clone();
            solver
                .solve_cold(&rig.skeleton, &mut p, &alone)
                .expect("valid")
                .converged
        });
        if !feasible {
            continue;
        }
        tested += 1;
        let mut solver = new_solver();
        *goals.get_mut(Effector::LeftHand) = ik_core::humanoid::EffectorGoal::position(far);
        let at_rest = skeleton_distance(&rig, &rest, B::LeftHand, far);
        let mut pose = rest.clone();
        for f in 0..40 {
            *goals.get_mut(Effector::RightHand) = right(f);
            let r = if f == 0 {
                solver.solve_cold(&rig.skeleton, &mut pose, &goals)
            } else {
                solver.solve(&rig.skeleton, &mut pose, &goals)
            }
            .expect("valid input");
            let far_now = r.residuals[Effector::LeftHand as usize].position;
            if f >= 3 {
                for e in [Effector::RightHand, Effector::LeftFoot, Effector::RightFoot] {
                    let res = r.residuals[e as usize];
                    assert!(
                        res.position <= 1e-3 * rig.scale && res.rotation <= 1f32.to_radians(),
                        "{} frame {f}: {e:?} {res:?} (far hand {far_now})",
                        rig.name
                    );
                }
                assert!(r.giving_way[Effector::LeftHand as usize], "{}", rig.name);
            }
            assert!(
                far_now <= at_rest + 1e-3 * rig.scale,
                "{} {far_now} vs {at_rest} at rest",
                rig.name
            );
        }
    }
    assert!(
        tested >= 8,
        "only {tested} rigs had a feasible reachable hand"
    );
}

/// A hand dragged far out of reach (4.5 arm lengths, out to the side, a little ahead and
/// below, as in the demo) never costs the head's look-at at a point up and to the same side
/// that the head meets without the far hand (checked by a cold solve): after the first frames
/// the look-at stays within 1° every frame while the far hand gives way. (Measured: within
/// 0.06° on the test rigs and UAL; 0.32° on the `KayKit` mannequin, which has no neck.)
#[test]
fn an_unreachable_hand_never_costs_a_feasible_look_at() {
    let mut tested = 0;
    let mut misses = Vec::new();
    for rig in rigs(true) {
        let frame = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("frame");
        let rest = rig.skeleton.rest_pose();
        let mut solver = rig.solver();
        let mut goals = solver.goals_at_pose(&rig.skeleton, &rest);
        let head =
            rig.skeleton.rest_model_transforms()[rig.map.get(B::Head).expect("head")].translation;
        let (left_shoulder, left_reach) = arm(&rig, true);
        let far = left_shoulder
            + (frame.left * 1.0 - frame.up * 0.15 + frame.forward * 0.35).normalize()
                * left_reach
                * 4.5;
        goals.look_at.enabled = true;
        goals.look_at.target =
            head + (frame.forward * 1.0 + frame.left * 1.2 + frame.up * 0.8) * rig.scale;
        let mut alone = goals;
        alone.get_mut(Effector::LeftHand).enabled = false;
        let mut p = rest.clone();
        let feasible = solver
            .solve_cold(&rig.skeleton, &mut p, &alone)
            .expect("valid")
            .converged;
        if !feasible {
            continue;
        }
        tested += 1;
        let mut solver = rig.solver();
        let start = goals.get_mut(Effector::LeftHand).position;
        let mut pose = rest.clone();
        let mut worst: f32 = 0.0;
        for f in 0..60 {
            // Dragged out over 20 frames, then held.
            let t = (f as f32 / 20.0).min(1.0);
            goals.get_mut(Effector::LeftHand).position = start.lerp(far, t);
            let r = if f == 0 {
                solver.solve_cold(&rig.skeleton, &mut pose, &goals)
            } else {
                solver.solve(&rig.skeleton, &mut pose, &goals)
            }
            .expect("valid input");
            if f >= 3 {
                worst = worst.max(r.look_at.to_degrees());
            }
            if f >= 20 {
                assert!(r.giving_way[Effector::LeftHand as usize], "{}", rig.name);
            }
        }
        if worst > 1.0 {
            misses.push(format!("{}: look-at off by {worst:.2}°", rig.name));
        }
    }
    assert!(tested >= 8, "only {tested} rigs had a feasible look-at");
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

fn skeleton_distance(rig: &Rig, pose: &Pose, role: B, to: Vec3) -> f32 {
    let b = rig.map.get(role).expect("mapped");
    rig.skeleton
        .model_transform(pose, b)
        .translation
        .distance(to)
}

/// A hard but feasible goal (a hand beyond the arm's reach from the shoulder, reachable by
/// leaning) with a budget of two iterations a frame: its residual never grows from one frame to
/// the next, and it is met within 60 frames. No frame hands back the previous pose unchanged.
#[test]
fn a_hard_goal_makes_monotone_progress_over_frames() {
    let mut tested = 0;
    for rig in rigs(true) {
        let frame = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("frame");
        let mut solver = rig.solver();
        solver.settings_mut().max_iterations = 2;
        let rest = rig.skeleton.rest_pose();
        let mut goals = solver.goals_at_pose(&rig.skeleton, &rest);
        goals.look_at.enabled = false;
        goals.get_mut(Effector::LeftHand).enabled = false;
        // Found by the oracle: a point ahead and below that needs the body to lean.
        let (shoulder, reach) = arm(&rig, false);
        let target = shoulder + (frame.forward * 0.8 - frame.up * 0.6).normalize() * reach * 1.12;
        *goals.get_mut(Effector::RightHand) = ik_core::humanoid::EffectorGoal::position(target);
        let mut check = rest.clone();
        let feasible = solver
            .solve_cold(&rig.skeleton, &mut check, &goals)
            .expect("valid")
            .converged;
        if !feasible {
            continue;
        }
        let mut solver = rig.solver();
        solver.settings_mut().max_iterations = 2;
        let mut pose = rest.clone();
        let mut last = f32::INFINITY;
        let mut met_at = None;
        for f in 0..60 {
            let before = pose.clone();
            let r = solver
                .solve(&rig.skeleton, &mut pose, &goals)
                .expect("valid input");
            let d = r.residuals[Effector::RightHand as usize].position;
            assert!(
                d <= last + 1e-5 * rig.scale,
                "{} frame {f}: {d} after {last}",
                rig.name
            );
            assert!(
                r.converged || pose != before,
                "{} frame {f}: frozen",
                rig.name
            );
            last = d;
            if r.converged {
                met_at = Some(f);
                break;
            }
        }
        assert!(
            met_at.is_some(),
            "{}: still {last} off after 60 frames",
            rig.name
        );
        if met_at == Some(0) {
            // Not hard for this rig: met within the first frame's two iterations.
            continue;
        }
        tested += 1;
    }
    assert!(tested >= 8, "only {tested} rigs had a feasible hard goal");
}

/// A tracking solve skips clamping a pose that is its own last output (a warm start); a pose
/// the game changed in between (here an elbow bent far past its limit and the head turned
/// half a turn) is clamped again: the output is within the limits on every rig, solved
/// with the solver's own scratch and with a caller-owned one.
#[test]
fn a_warm_start_the_game_changed_is_clamped_again() {
    for rig in rigs(true) {
        let frames = scenario_frames(&rig, Scenario::Reach, 3, 7);
        let solver = rig.solver();
        let mut own = rig.solver();
        let mut scratch = solver.scratch();
        for caller_owned in [false, true] {
            let mut pose = frames[0].input.clone();
            let mut solve = |pose: &mut Pose, f: usize| {
                let goals = &frames[f].goals;
                if caller_owned {
                    solver.solve_with(&rig.skeleton, pose, goals, &mut scratch)
                } else {
                    own.solve(&rig.skeleton, pose, goals)
                }
                .expect("valid input")
            };
            let _ = solve(&mut pose, 0);
            let _ = solve(&mut pose, 1);
            for (role, turn) in [(B::LeftLowerArm, 3.0f32), (B::Head, core::f32::consts::PI)] {
                let b = rig.map.get(role).expect("mapped");
                let axis = Vec3::new(0.3, 1.0, -0.5).normalize();
                pose.rotations[b] =
                    (pose.rotations[b] * Quat::from_axis_angle(axis, turn)).normalize();
            }
            assert!(
                !solver.pose_within_limits(&rig.skeleton, &pose, 1e-3),
                "{}: the changed pose should break a limit",
                rig.name
            );
            let _ = solve(&mut pose, 2);
            assert!(
                solver.pose_within_limits(&rig.skeleton, &pose, 1e-3),
                "{} (caller-owned scratch: {caller_owned}): output breaks a limit",
                rig.name
            );
        }
    }
}

/// Along the walk, with the left hand dragged for a point far out of reach (three arm lengths
/// out to the side, drifting up and down) — infeasible on every rig, so it gives way — the
/// other goals never pay for it: the right hand reaching for points that drift within 85 % of
/// the arm's length (the reach scenario's targets pulled in), the look-at swinging up to 60°
/// to either side, the feet and the pelvis of the walk. Every goal the cold oracle calls
/// feasible is met at 1 mm / 1° in every frame once the far hand has had three frames to give
/// way, on every rig convention and the CC0 characters.
#[test]
fn an_unreachable_hand_never_costs_the_feasible_goals_along_the_walk() {
    let mut misses = Vec::new();
    let mut checked = 0usize;
    let rigs = rigs(true);
    for (ri, rig) in rigs.iter().enumerate() {
        let body = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("frame");
        let solver = rig.solver();
        let mut frames = scenario_frames(rig, Scenario::Reach, 120, ri as u32 + 1);
        let (_, left_reach) = arm(rig, true);
        let (_, right_reach) = arm(rig, false);
        for (f, frame) in frames.iter_mut().enumerate() {
            let t = f as f32 / 60.0;
            let model = rig.skeleton.model_transforms(&frame.input);
            let shoulder = |r: B| model[rig.map.get(r).expect("arm")].translation;
            let left = shoulder(B::LeftUpperArm);
            frame.goals.get_mut(Effector::LeftHand).position =
                left + (body.left + body.up * 0.5 * (t * 1.3).sin()).normalize() * 3.0 * left_reach;
            let right = shoulder(B::RightUpperArm);
            let g = frame.goals.get_mut(Effector::RightHand);
            let d = g.position - right;
            g.position = right + d * (0.85 * right_reach / d.length()).min(1.0);
            let head = model[solver.head_bone()].translation;
            let yaw = 60f32.to_radians() * (t * 0.9).sin();
            frame.goals.look_at.target =
                head + Quat::from_axis_angle(body.up, yaw) * body.forward * 2.0 * rig.scale;
        }
        let mask = feasible_goals(rig, &frames);
        assert!(
            mask.iter().all(|m| !m[0]),
            "{}: the far hand was feasible",
            rig.name
        );
        let mut solver = rig.solver();
        let r = run(rig, &mut solver, &frames, &mask, false, track);
        assert_eq!(r.errors + r.non_finite, 0, "{}", rig.name);
        assert_eq!(r.flips, 0, "{}: {r:?}", rig.name);
        assert_eq!(r.frozen, 0, "{}: {r:?}", rig.name);
        checked += mask
            .iter()
            .skip(3)
            .map(|m| m.iter().filter(|&&on| on).count())
            .sum::<usize>();
        for m in r.misses.iter().filter(|m| m.frame >= 3) {
            misses.push(format!(
                "{} frame {}: goal {} off {:.2} mm|°",
                rig.name, m.frame, m.goal, m.error
            ));
        }
    }
    // Pelvis, right hand, feet and look-at, on most frames of every rig.
    assert!(
        checked > rigs.len() * 117 * 4,
        "only {checked} feasible goal-frames"
    );
    assert!(
        misses.is_empty(),
        "{} misses:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

/// `bevy_ik`'s `IkHumanoid::auto()` drag, in ik-core: every goal at its rest-pose position —
/// arms and legs straight, so every hand and foot target is at the limb's full reach —, the
/// pelvis goal position-only, the look-at on, one priority level; the left hand target dragged
/// up, out and forward, 7 cm a frame to 3 m away, warm-started frame to frame with `solve`.
/// The other hand, the feet and the pelvis stay within 1 mm (measured by FK on the output)
/// in every frame, each frame within the iteration budget, and the far arm points at its
/// target at the end. On every rig convention and the CC0 characters, with the other hand's
/// target where the straight arm holds it and moved in to 85 % of its reach (settled over 10
/// frames first): then the straight legs alone must keep the hips from turning.
#[test]
fn a_hand_dragged_out_of_reach_from_straight_limbs_costs_no_other_goal() {
    let mut misses = Vec::new();
    for rig in rigs(true) {
        for slack in [false, true] {
            if let Some(miss) = drag_from_straight_limbs(&rig, slack) {
                misses.push(miss);
            }
        }
    }
    assert!(
        misses.is_empty(),
        "{} runs:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

/// One run of [`a_hand_dragged_out_of_reach_from_straight_limbs_costs_no_other_goal`]: the
/// worst miss of a held goal over 1 mm, if any.
fn drag_from_straight_limbs(rig: &Rig, slack: bool) -> Option<String> {
    let body = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("frame");
    let mut solver = rig.solver();
    let budget = solver.settings().max_iterations;
    let mut pose = rig.skeleton.rest_pose();
    let mut goals = solver.goals_at_pose(&rig.skeleton, &pose);
    goals.get_mut(Effector::Pelvis).rotation_weight = 0.0;
    let bone = |r: B| rig.map.get(r).expect("mapped");
    if slack {
        let (shoulder, reach) = arm(rig, false);
        let g = goals.get_mut(Effector::RightHand);
        g.position = shoulder + (g.position - shoulder).normalize() * 0.85 * reach;
        for _ in 0..10 {
            solver
                .solve(&rig.skeleton, &mut pose, &goals)
                .expect("solves");
        }
    }
    let held = [
        (Effector::RightHand, bone(B::RightHand)),
        (Effector::LeftFoot, bone(B::LeftFoot)),
        (Effector::RightFoot, bone(B::RightFoot)),
        (Effector::Pelvis, bone(B::Hips)),
    ];
    let label = format!("{} (slack {slack})", rig.name);
    let start = goals.get(Effector::LeftHand).position;
    let away = (body.left * 1.5 + body.up * 2.0 + body.forward * 1.6) * rig.scale;
    let mut worst = (0.0f32, 0, Effector::Pelvis);
    for f in 1..=60 {
        let t = (f as f32 / 40.0).min(1.0);
        goals.get_mut(Effector::LeftHand).position = start + away * t;
        let report = solver
            .solve(&rig.skeleton, &mut pose, &goals)
            .expect("solves");
        assert!(pose.is_finite(), "{label} frame {f}");
        assert!(
            report.iterations <= budget,
            "{label} frame {f}: {} iterations over {budget}",
            report.iterations
        );
        let model = rig.skeleton.model_transforms(&pose);
        for (e, b) in held {
            let miss = model[b].translation.distance(goals.get(e).position) / rig.scale;
            if miss > worst.0 {
                worst = (miss, f, e);
            }
        }
    }
    let model = rig.skeleton.model_transforms(&pose);
    let hand = model[bone(B::LeftHand)].translation;
    let shoulder = model[bone(B::LeftUpperArm)].translation;
    let aim = (hand - shoulder)
        .normalize()
        .dot((start + away - shoulder).normalize());
    assert!(aim > 0.95, "{label}: the far arm points off ({aim})");
    (worst.0 > 1e-3).then(|| {
        format!(
            "{label}: {:?} {:.1} mm off at frame {}",
            worst.2,
            worst.0 * 1e3,
            worst.1
        )
    })
}
