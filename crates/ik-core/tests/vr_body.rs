//! The VR body over a scripted 60 s tracker recording (walk, turn, side-step, crouch, reach)
//! on every rig convention and the CC0 characters: planted feet do not slide, head and hands
//! are on their trackers whenever within reach, no joint turns more than 20° in a frame, and
//! the stepping cadence is plausible. Distances are in "human metres" (the rig's leg length
//! over 0.9 m), so a rig in centimetres is held to the same standard.

use crate::gameplay;

use crate::vr_recording;

use gameplay::{Rig, rigs};
use ik_core::glam::{Quat, Vec3};
use ik_core::stack::{PoseBuffer, Stage};
use ik_core::vr::{FootPhase, VrBody, VrSettings};
use vr_recording::{Activity, FPS, calibration, recording};

/// Everything measured over one run of the recording.
#[derive(Debug, Default)]
struct Run {
    /// Largest drift of a planted foot during one stance, human metres.
    slide: f32,
    /// Largest head error (position, human metres; rotation, degrees) on frames where the
    /// head is within reach: the pelvis did not have to drop below where the head puts it
    /// (a leg could not reach its planted foot), whether or not a joint limit moved the trunk.
    head: (f32, f32),
    /// Frames where the pelvis was lowered (the legs could not reach).
    pelvis_lowered: usize,
    /// Frames where a limit made the full-body solver move the trunk.
    trunk_moved: usize,
    /// Largest head position error on those frames, human metres (also in `head`).
    head_limited: f32,
    /// Largest hand error on frames within reach.
    hand: (f32, f32),
    /// Hand samples within reach / total.
    reachable: (usize, usize),
    /// Largest hand position error (human metres) on samples at the end of the arm's reach
    /// (98–100 % of its length from the shoulder: reachable, but with no reach to spare, so
    /// the head comes first when both compete for the trunk). Reported, not held.
    hand_edge: f32,
    /// Largest per-frame change of any bone's local rotation, degrees (after the first frame).
    max_turn: f32,
    /// Steps and metres walked in walking segments (forward, backward, sideways).
    walk: (u32, f32),
    /// Steps and metres walked forward (the ground moving within 30° of the heading).
    forward: (u32, f32),
    /// Steps and degrees turned in turning segments.
    turn: (u32, f32),
    /// Any non-finite value in the pose.
    non_finite: bool,
    /// Frames whose output has a joint outside the full-body solver's limits.
    outside_limits: usize,
}

fn run_recording(rig: &Rig) -> Run {
    let s = rig.scale;
    let mut body = VrBody::new(&rig.skeleton, &rig.map).expect("rig maps");
    body.calibration = calibration(&body);
    body.dt = 1.0 / FPS;
    let frames = recording(&body, &rig.skeleton, &rig.map);
    let mut buffer = PoseBuffer::new(&rig.skeleton);
    let rest = rig.skeleton.rest_pose();
    let (arms, legs) = body.limb_bones();
    let mut run = Run::default();
    let debug = std::env::var("VR_DEBUG").is_ok_and(|v| rig.name.contains(&v));
    let mut prev: Option<Vec<Quat>> = None;
    let mut stance: [Option<Vec3>; 2] = [None, None];
    let mut steps_before = 0;
    let mut prev_frame = frames[0];
    for (i, f) in frames.iter().enumerate() {
        body.trackers = f.trackers;
        if i == 0 {
            buffer.set_pose(&rest);
        }
        // Later frames start from the last output (what the stack's warm start hands a stage
        // whose input did not change).
        body.solve(&rig.skeleton, &mut buffer).expect("solves");
        let pose = buffer.pose().clone();
        run.non_finite |= !pose.is_finite();
        if !body.solver().pose_within_limits(&rig.skeleton, &pose, 1e-4) {
            run.outside_limits += 1;
        }
        let model = buffer.model_transforms(&rig.skeleton).to_vec();
        let report = *body.report();
        let targets = body.targets();
        // Head.
        if report.trunk_moved {
            run.trunk_moved += 1;
            let h = model[body.head_bone()];
            run.head_limited = run
                .head_limited
                .max(h.translation.distance(targets[0].position) / s);
        }
        if report.pelvis_lowered {
            run.pelvis_lowered += 1;
        }
        if report.pelvis_lowered {
            if debug {
                let h = model[body.head_bone()];
                println!(
                    "t {:.2} lowered {} trunk {} head {:.1} mm iters {} limits {}",
                    f.t,
                    report.pelvis_lowered,
                    report.trunk_moved,
                    h.translation.distance(targets[0].position) / s * 1e3,
                    report.full_body.iterations,
                    report.full_body.limits_hit
                );
            }
        } else {
            let h = model[body.head_bone()];
            if debug && h.translation.distance(targets[0].position) / s > 1e-3 {
                println!(
                    "t {:.2} head {:.1} mm lean-ish fb iters {} conv {} limits {}",
                    f.t,
                    h.translation.distance(targets[0].position) / s * 1e3,
                    report.full_body.iterations,
                    report.full_body.converged,
                    report.full_body.limits_hit
                );
            }
            run.head.0 = run
                .head
                .0
                .max(h.translation.distance(targets[0].position) / s);
            run.head.1 = run
                .head
                .1
                .max(h.rotation.angle_between(targets[0].rotation).to_degrees());
        }
        // Hands within reach: the target within 98 % of the arm from the shoulder as solved.
        for side in 0..2 {
            let [shoulder, _, hand] = arms[side];
            let target = targets[1 + side];
            let reach = model[shoulder].translation.distance(target.position);
            run.reachable.1 += 1;
            if reach <= 0.98 * body.arm_lengths()[side] {
                run.reachable.0 += 1;
                let h = model[hand];
                run.hand.0 = run.hand.0.max(h.translation.distance(target.position) / s);
                run.hand.1 = run
                    .hand
                    .1
                    .max(h.rotation.angle_between(target.rotation).to_degrees());
            } else if reach <= body.arm_lengths()[side] {
                let h = model[hand];
                run.hand_edge = run
                    .hand_edge
                    .max(h.translation.distance(target.position) / s);
            }
        }
        // Planted feet.
        let phases = body.locomotion.phases();
        for side in 0..2 {
            let foot = model[legs[side][2]].translation;
            match (phases[side], stance[side]) {
                (FootPhase::Planted, None) => stance[side] = Some(foot),
                (FootPhase::Planted, Some(p)) => {
                    let d = foot.distance(p) / s;
                    if debug && d > 1e-3 {
                        println!(
                            "t {:.2} foot {side} slid {:.1} mm lowered {} fb {:?}",
                            f.t,
                            d * 1e3,
                            report.pelvis_lowered,
                            report.full_body.residuals
                        );
                    }
                    run.slide = run.slide.max(d);
                }
                _ => stance[side] = None,
            }
        }
        // Joint turning.
        if let Some(p) = &prev {
            for (k, (a, b)) in p.iter().zip(&pose.rotations).enumerate() {
                let d = a.angle_between(*b).to_degrees();
                if debug && d > 20.0 {
                    println!(
                        "t {:.2} bone {} turned {d:.1} lowered {} phases {:?}",
                        f.t,
                        rig.skeleton.bones()[k].name,
                        report.pelvis_lowered,
                        body.locomotion.phases()
                    );
                }
                run.max_turn = run.max_turn.max(d);
            }
        }
        // Cadence.
        let steps = report.steps;
        let landed = steps - steps_before;
        steps_before = steps;
        match prev_frame.activity {
            Activity::Walk => {
                // The avatar's own ground travel, human metres (the player's scaled by the
                // calibration): a character whose legs are short for the player's height
                // covers more of its own leg lengths per player metre.
                let d = f.ground - prev_frame.ground;
                let travel = d.length() * body.calibration.scale / s;
                run.walk.0 += landed;
                run.walk.1 += travel;
                let heading = Quat::from_axis_angle(body.frame().up, f.yaw) * body.frame().forward;
                if d.dot(heading) > 0.866 * d.length() {
                    run.forward.0 += landed;
                    run.forward.1 += travel;
                }
            }
            Activity::Turn => {
                run.turn.0 += landed;
                run.turn.1 += (f.yaw - prev_frame.yaw).abs().to_degrees();
            }
            Activity::Still => {}
        }
        prev_frame = *f;
        prev = Some(pose.rotations.clone());
    }
    run
}

fn report(name: &str, r: &Run) {
    println!(
        "{name:<22} slide {:.3} mm | head {:.3} mm {:.3}° (lowered {}, trunk moved {}: head within {:.1} mm) | hands {:.3} mm {:.3}° ({}/{} in reach; {:.2} mm at the end of reach) | turn {:.1}°/frame | {:.2} steps/m ({:.2} forward), {:.2} steps/90°",
        r.slide * 1e3,
        r.head.0 * 1e3,
        r.head.1,
        r.pelvis_lowered,
        r.trunk_moved,
        r.head_limited * 1e3,
        r.hand.0 * 1e3,
        r.hand.1,
        r.reachable.0,
        r.reachable.1,
        r.hand_edge * 1e3,
        r.max_turn,
        r.walk.0 as f32 / r.walk.1,
        r.forward.0 as f32 / r.forward.1,
        r.turn.0 as f32 / (r.turn.1 / 90.0),
    );
}

/// What a rig is held to.
struct Targets {
    slide: f32,
    head: (f32, f32),
    hand: (f32, f32),
    max_turn: f32,
    /// Frames (of 3600) the head check may skip (the pelvis lowered: the head out of reach of
    /// the planted feet).
    exempt: usize,
}

/// The issue's targets.
const ISSUE: Targets = Targets {
    slide: 1e-3,
    head: (1e-3, 1.0),
    hand: (1e-3, 1.0),
    max_turn: 20.0,
    exempt: 36,
};

fn check(rig: &Rig, r: &Run, t: &Targets, failures: &mut Vec<String>) {
    let mut fail = |what: String| failures.push(format!("{}: {what}", rig.name));
    if r.non_finite {
        fail("non-finite pose".into());
    }
    if r.outside_limits > 0 {
        fail(format!(
            "{} frames outside the joint limits",
            r.outside_limits
        ));
    }
    if r.slide > t.slide {
        fail(format!("planted foot slid {:.3} mm", r.slide * 1e3));
    }
    if r.head.0 > t.head.0 || r.head.1 > t.head.1 {
        fail(format!(
            "head off by {:.3} mm / {:.3}°",
            r.head.0 * 1e3,
            r.head.1
        ));
    }
    if r.pelvis_lowered > t.exempt {
        fail(format!(
            "head out of reach (pelvis lowered) on {} frames",
            r.pelvis_lowered
        ));
    }
    if r.hand.0 > t.hand.0 || r.hand.1 > t.hand.1 {
        fail(format!(
            "hand off by {:.3} mm / {:.3}°",
            r.hand.0 * 1e3,
            r.hand.1
        ));
    }
    // Not vacuous: most hand samples are within reach.
    if r.reachable.0 * 10 < r.reachable.1 * 8 {
        fail(format!(
            "only {}/{} hand samples in reach",
            r.reachable.0, r.reachable.1
        ));
    }
    if r.max_turn > t.max_turn {
        fail(format!("a joint turned {:.1}° in one frame", r.max_turn));
    }
    // Plausible cadence. A 1.75 m adult walking at 0.7–1.3 m/s takes steps of 0.55–0.75 m
    // (step length ≈ 0.4 × height; 1.3–2 steps per metre) with a heel-to-toe roll and a
    // dipping pelvis. The VR body keeps a planted foot's ankle fixed (that is what "never
    // sliding" means) and its hips where the head puts them, which leaves a stance about ±0.3
    // leg lengths of travel: 0.45 m steps at most, and the recording's walks start and stop
    // (a short first and a closing step each). So forward walking is held to 1.3–3.2 steps per
    // metre; all walking, with side steps (the trailing foot closes up after each, 2 steps per
    // stride) and backward steps, to 1.3–5. Metres are the avatar's own travel in human
    // metres (its leg length over 0.9 m): a character whose legs are short for the player's
    // height (the `KayKit` mannequin: head 2.9 leg lengths above its feet, a human's 1.7)
    // covers 1.7 of its own human metres per player metre and steps accordingly.
    let per_metre = r.walk.0 as f32 / r.walk.1;
    if !(1.3..=5.0).contains(&per_metre) {
        fail(format!("{per_metre:.2} steps per metre"));
    }
    let forward = r.forward.0 as f32 / r.forward.1;
    if !(1.3..=3.2).contains(&forward) {
        fail(format!("{forward:.2} steps per metre walking forward"));
    }
    // Turning on the spot: 2–6 steps per 90° (each foot at least once).
    let per_turn = r.turn.0 as f32 / (r.turn.1 / 90.0);
    if !(2.0..=6.0).contains(&per_turn) {
        fail(format!("{per_turn:.2} steps per 90° turn"));
    }
}

fn selected_rigs() -> Vec<Rig> {
    rigs(true)
        .into_iter()
        .filter(|r| std::env::var("VR_ONLY").map_or(true, |o| r.name.contains(&o)))
        .collect()
}

/// The issue's targets on every rig convention (the 12 procedural test rigs) and the two CC0
/// characters (`KayKit`, UAL); lists every target missed.
#[test]
fn vr_recording_meets_the_issue_targets() {
    let mut failures = Vec::new();
    for rig in selected_rigs() {
        let r = run_recording(&rig);
        report(&rig.name, &r);
        check(&rig, &r, &ISSUE, &mut failures);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bad_input_is_an_error_not_a_panic_or_nan() {
    let rig = rigs(false).remove(0);
    let mut body = VrBody::new(&rig.skeleton, &rig.map).unwrap();
    let mut buffer = PoseBuffer::new(&rig.skeleton);
    body.solve(&rig.skeleton, &mut buffer)
        .expect("rest trackers solve");
    let good = buffer.pose().clone();
    body.trackers.left_hand.position.x = f32::NAN;
    assert!(body.solve(&rig.skeleton, &mut buffer).is_err());
    assert_eq!(buffer.pose(), &good, "pose untouched on error");
    body.trackers.left_hand.position.x = 0.0;
    body.dt = f32::INFINITY;
    assert!(body.solve(&rig.skeleton, &mut buffer).is_err());
    body.dt = 1.0 / 60.0;
    body.settings = VrSettings {
        step_threshold: -1.0,
        ..VrSettings::default()
    };
    assert!(body.solve(&rig.skeleton, &mut buffer).is_err());
    body.settings = VrSettings::default();
    body.calibration.scale = 0.0;
    assert!(body.solve(&rig.skeleton, &mut buffer).is_err());
    assert!(ik_core::vr::VrCalibration::from_head_height(&body, -1.0).is_err());
    assert!(
        ik_core::vr::VrCalibration::from_t_pose(&body, Vec3::Y, Vec3::ZERO, Vec3::ZERO).is_err()
    );
    // Far-away trackers: no NaN, an honest report.
    body.calibration = ik_core::vr::VrCalibration::default();
    body.trackers.right_hand.position += Vec3::splat(50.0);
    body.solve(&rig.skeleton, &mut buffer).unwrap();
    assert!(buffer.pose().is_finite());
    assert!(body.report().hand_position_error[1] > 1.0);
}
