//! The demo's VR script (`examples/demo/vr.rs`: `start_vr_body`, `scripted_trackers`) on every
//! rig convention and the CC0 characters, driven the way the demo drives the VR stage: the
//! input pose is the rest (bind) pose every frame (the UAL file has no idle clip), 30 ticks per
//! second, the head tracker on the head bone's rest pose and the hand trackers on the hands'
//! rest poses, trackers in model space with unit calibration. The head must meet its tracker
//! (≤ 1 mm, human scale) on every frame within the body's reach (the VR body says when it is
//! not: the pelvis lowered).

use crate::{gameplay, vr_recording};

use gameplay::{Rig, rigs};
use ik_core::glam::{Quat, Vec3};
use ik_core::humanoid::Effector;
use ik_core::stack::{PoseBuffer, Stage};
use ik_core::vr::{TrackerPose, VrBody, VrCalibration, VrSettings};

/// The demo's tick rate.
const TICKS: f32 = 30.0;
/// The head on its tracker within this, human metres, on every frame it is reachable (the
/// issue's 1 mm).
const HEAD_ERROR: f32 = 1e-3;
/// The joint-limit tolerance of the oracle's `pose_within_limits`, radians (the robustness
/// suite's).
const LIMIT_TOLERANCE: f32 = 1e-4;
/// From the standing start the head is reachable on at least this share of the frames
/// (not vacuous; measured: 444–447 of 450).
const STANDING_REACHABLE_SHARE: f32 = 0.9;
/// The bundled character's height in the demo (`REFERENCE_HEIGHT`): `BodyFrame::scale` is
/// the joints' height over it.
const REFERENCE_HEIGHT: f32 = 1.72;

fn smooth(a: f32, b: f32, t: f32) -> f32 {
    let x = ((t - a) / (b - a)).clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

/// The demo's `scripted_trackers` at time `t`: head, left hand, right hand (model space).
fn script(t: f32, s: f32, up: Vec3, fwd: Vec3, home: [TrackerPose; 3]) -> [TrackerPose; 3] {
    let walk = 0.9 * s * smooth(0.5, 3.5, t);
    let yaw = Quat::from_axis_angle(up, core::f32::consts::FRAC_PI_2 * smooth(4.0, 6.0, t));
    let crouch = 0.35 * s * (smooth(6.5, 8.0, t) - smooth(12.5, 13.5, t));
    let high = smooth(8.5, 9.5, t) - smooth(10.0, 10.8, t);
    let low = smooth(10.8, 11.8, t) - smooth(12.5, 13.0, t);
    let [head0, left0, right0] = home;
    let h0 = head0.position;
    let pivot = h0 - up * h0.dot(up) + fwd * walk;
    let head_pos = pivot + up * (h0.dot(up) - crouch);
    let side = |home: TrackerPose| {
        let l = home.position - h0;
        l - up * l.dot(up) - fwd * l.dot(fwd)
    };
    let reach = |home: TrackerPose| {
        let out = side(home) * 0.45;
        if high >= low {
            out + up * 0.3 * s + fwd * 0.15 * s
        } else {
            out - up * 0.95 * s + fwd * 0.35 * s
        }
    };
    let place = |home: TrackerPose| {
        let rel = home.position - h0;
        let relaxed = rel.lerp(reach(home), high.max(low));
        TrackerPose::new(head_pos + yaw * relaxed, yaw * home.rotation)
    };
    [
        TrackerPose::new(head_pos, yaw * head0.rotation),
        place(left0),
        place(right0),
    ]
}

/// How the demo's trackers start.
#[derive(Clone, Copy, Debug)]
struct Start {
    /// The head tracker's height as a fraction of the rest head height above the feet (the
    /// demo on main: 1, the head bone's bind pose; [`VrSettings::stand_height`] is where a
    /// calibrated player's standing head lands, knees slightly soft).
    head: f32,
    /// The hand trackers' offsets from the head, as a multiple of the rest hands' (1: on the
    /// hands; above 1: the controllers beyond the arms' reach, the head still first).
    hands: f32,
}

/// What one run of the script measured.
#[derive(Debug, Default)]
struct Run {
    /// Worst head error, human metres, and when.
    worst: (f32, f32),
    /// Frames the VR body reported the head out of reach (`VrReport::head_reachable`: the
    /// pelvis lowered or raised).
    lowered: usize,
    /// Worst head error on frames the head is reachable, human metres: frames the VR body
    /// did not report, and frames it did that the oracle (`vr_recording::head_reachable`)
    /// finds reachable.
    worst_in_reach: f32,
    /// Frames the head is reachable on (as `worst_in_reach` counts them).
    reachable: usize,
}

fn run_script(rig: &Rig, start: Start) -> Run {
    let mut body = VrBody::new(&rig.skeleton, &rig.map).expect("rig maps");
    body.calibration = VrCalibration {
        origin: Some(Vec3::ZERO),
        ..VrCalibration::default()
    };
    // `VR_DT` overrides the frame time (the demo hands the stage the real frame time: 0.25 s
    // at 4 fps under software rendering, while its script advances 1/30 s per frame).
    body.dt = std::env::var("VR_DT").map_or(1.0 / TICKS, |v| v.parse().unwrap_or(1.0 / TICKS));
    let frame = body.frame();
    let rest = rig.skeleton.rest_pose();
    let model = rig.skeleton.rest_model_transforms();
    // `BodyFrame::scale` in the demo: the joints' height over the bundled character's.
    let heights = model.iter().map(|b| b.translation.dot(frame.up));
    let (lo, hi) = heights.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| {
        (lo.min(h), hi.max(h))
    });
    let s = (hi - lo.min(0.0)) / REFERENCE_HEIGHT;
    let rest_head = body.rest_head_pose();
    let drop = frame.up * (1.0 - start.head) * body.head_height();
    let hand = |e: Effector| {
        let h = body.rest_bone_pose(e);
        let offset = (h.position - rest_head.position) * start.hands;
        TrackerPose::new(rest_head.position - drop + offset, h.rotation)
    };
    let home = [
        TrackerPose::new(rest_head.position - drop, rest_head.rotation),
        hand(Effector::LeftHand),
        hand(Effector::RightHand),
    ];
    let mut buffer = PoseBuffer::new(&rig.skeleton);
    let mut run = Run::default();
    let mut previous = rest.clone();
    let debug = std::env::var("VR_DEBUG").is_ok_and(|v| rig.name.contains(&v));
    for tick in 1..=(15.0 * TICKS) as u32 {
        let t = tick as f32 / TICKS;
        let [head, left, right] = script(t, s, frame.up, frame.forward, home);
        body.trackers.head = head;
        body.trackers.left_hand = left;
        body.trackers.right_hand = right;
        // The bind pose is the input every frame (no idle clip).
        buffer.set_pose(&rest);
        body.solve(&rig.skeleton, &mut buffer).expect("solves");
        assert!(buffer.pose().is_finite(), "{}: non-finite pose", rig.name);
        let fk = buffer.model_transforms(&rig.skeleton);
        let e = fk[body.head_bone()].translation.distance(head.position) / rig.scale;
        let r = body.report();
        if debug && e > 1e-3 {
            println!(
                "t {t:.2} head {:.2} mm lowered {} trunk {} hands {:.2?} mm",
                e * 1e3,
                r.pelvis_lowered,
                r.trunk_moved,
                r.hand_position_error.map(|h| h / rig.scale * 1e3),
            );
        }
        // The oracle runs where the head misses (a frame it meets is reachable).
        let reachable = r.head_reachable()
            || e <= HEAD_ERROR
            || vr_recording::head_reachable(
                &rig.skeleton,
                &rig.map,
                &body,
                [buffer.pose(), &previous],
                head.position,
                LIMIT_TOLERANCE,
            );
        if !r.head_reachable() {
            run.lowered += 1;
        }
        if reachable {
            run.reachable += 1;
            run.worst_in_reach = run.worst_in_reach.max(e);
        }
        previous.copy_from(buffer.pose());
        if e > run.worst.0 {
            run.worst = (e, t);
        }
    }
    run
}

/// The head meets its tracker (≤ 1 mm, human scale) through the demo's script on every rig,
/// from the bind pose, with the head tracker starting at the standing height the VR body is
/// calibrated to ([`VrSettings::stand_height`] of the rest head height), the hand trackers on
/// the hands or beyond the arms' reach (the head comes first: on main, a trunk the solver
/// leaned toward the controllers while crouching and reaching low left the head 0.3–0.4 m
/// off on the `KayKit` and UAL characters). Started as the demo on main starts it, the head
/// tracker at the rest head height (legs straight), the walk is out of the legs' reach (a
/// planted foot behind the hips needs them lower): the head then misses only on frames the
/// VR body reports the pelvis lowered.
#[test]
fn demo_script_keeps_the_head_on_its_tracker() {
    let stand = VrSettings::default().stand_height;
    let mut failures = Vec::new();
    for rig in rigs(true) {
        for start in [
            Start {
                head: stand,
                hands: 1.0,
            },
            Start {
                head: stand,
                hands: 1.1,
            },
            Start {
                head: 1.0,
                hands: 1.0,
            },
        ] {
            let r = run_script(&rig, start);
            println!(
                "{:<22} {start:?}: head ≤ {:.3} mm (worst at t {:.2} s; {:.3} mm on the {} \
                 reachable frames), out of reach on {} of {} frames",
                rig.name,
                r.worst.0 * 1e3,
                r.worst.1,
                r.worst_in_reach * 1e3,
                r.reachable,
                r.lowered,
                15.0 * TICKS,
            );
            // From the standing start the head is within the legs' reach nearly all along;
            // at 30 ticks a second walking asks a standing leg to straighten faster than the
            // turn bound lets it on a few frames (the VR body lowers the pelvis for those
            // rather than let the planted foot slide, and reports it; the oracle agrees).
            let frames = 15.0 * TICKS;
            let reachable_ok =
                start.head >= 1.0 || r.reachable as f32 >= STANDING_REACHABLE_SHARE * frames;
            if r.worst_in_reach > HEAD_ERROR || !reachable_ok {
                failures.push(format!(
                    "{} {start:?}: head {:.2} mm off on {} reachable frames, reported out of reach on {} frames",
                    rig.name,
                    r.worst_in_reach * 1e3,
                    r.reachable,
                    r.lowered
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
