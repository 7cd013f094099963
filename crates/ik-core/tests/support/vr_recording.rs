//! A scripted 60 s VR tracker recording (shared by `tests/vr_body.rs` and
//! `benches/vr_body.rs`): a player 1.75 m tall (head bone 1.55 m above the floor, wrist-to-wrist
//! span 1.45 m) stands, walks forward 4 m, turns 90° left on the spot, walks 3 m, side-steps
//! 0.8 m right and back, turns 90° right, crouches (head down 0.55 m, looking down) and reaches
//! low, stands, reaches high, reaches forward, walks 1 m backward and looks around.
//!
//! Positions are player space (metres, the rig's own up/left/forward from its rest pose, floor
//! through the origin); the hands are placed from an estimate of the avatar's shoulder in
//! player space (so every rig gets reachable targets) and held the way a controller is held:
//! the hand in line with a forearm pointing at an elbow below and outside the shoulder–hand
//! line, with a slow wrist roll of ±15°.

#![allow(dead_code)]

use ik_core::Skeleton;
use ik_core::glam::{Mat3, Quat, Vec3};
use ik_core::humanoid::{HumanoidBone as B, HumanoidMap};
use ik_core::limits::JointLimit;
use ik_core::vr::{TrackerPose, VrBody, VrCalibration, VrTrackers};

/// Frames per second of the recording.
pub const FPS: f32 = 60.0;
/// Its length, seconds.
pub const SECONDS: f32 = 60.0;
/// The player's head bone height standing, metres.
pub const PLAYER_HEAD: f32 = 1.55;
/// The player's wrist-to-wrist span in a T-pose, metres.
pub const PLAYER_SPAN: f32 = 1.45;

/// What the player is doing (for per-segment measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Standing, crouching, reaching, looking around: no locomotion asked for.
    Still,
    /// Walking (forward, backward, sideways).
    Walk,
    /// Turning on the spot.
    Turn,
}

/// One frame of the recording.
#[derive(Clone, Copy, Debug)]
pub struct RecFrame {
    /// Time, seconds.
    pub t: f32,
    /// The trackers, player space.
    pub trackers: VrTrackers,
    /// What the script does around this time.
    pub activity: Activity,
    /// The body heading, radians.
    pub yaw: f32,
    /// The player's ground position, metres (player space).
    pub ground: Vec3,
}

/// Key: time, ground position (forward, left of the start), yaw (deg), head drop (m), head
/// pitch down (deg), extra head yaw (deg), hand mode (dir fwd/out/up, reach fraction).
#[derive(Clone, Copy)]
struct Key {
    t: f32,
    pos: [f32; 2],
    yaw: f32,
    drop: f32,
    pitch: f32,
    look: f32,
    hand: [f32; 4],
    activity: Activity,
}

const IDLE: [f32; 4] = [0.35, 0.25, -0.9, 0.78];
const LOW: [f32; 4] = [0.7, 0.15, -0.7, 0.88];
const HIGH: [f32; 4] = [0.3, 0.35, 0.9, 0.88];
const FORWARD: [f32; 4] = [0.95, 0.1, 0.05, 0.93];

fn keys() -> Vec<Key> {
    use Activity::{Still, Turn, Walk};
    let k = |t, pos, yaw, drop, pitch, look, hand, activity| Key {
        t,
        pos,
        yaw,
        drop,
        pitch,
        look,
        hand,
        activity,
    };
    vec![
        k(0.0, [0.0, 0.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(3.0, [0.0, 0.0], 0.0, 0.0, 5.0, 0.0, IDLE, Walk),
        k(9.0, [4.0, 0.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(11.0, [4.0, 0.0], 0.0, 0.0, 5.0, 0.0, IDLE, Turn),
        k(14.0, [4.0, 0.0], 90.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(16.0, [4.0, 0.0], 90.0, 0.0, 5.0, 0.0, IDLE, Walk),
        k(21.0, [4.0, 3.0], 90.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(23.0, [4.0, 3.0], 90.0, 0.0, 5.0, 0.0, IDLE, Walk),
        k(26.0, [4.8, 3.0], 90.0, 0.0, 5.0, 0.0, IDLE, Walk),
        k(29.0, [4.0, 3.0], 90.0, 0.0, 5.0, 0.0, IDLE, Turn),
        k(31.0, [4.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(33.0, [4.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(35.5, [4.0, 3.0], 0.0, 0.55, 30.0, 0.0, IDLE, Still),
        k(37.0, [4.0, 3.0], 0.0, 0.55, 35.0, 0.0, LOW, Still),
        k(40.0, [4.0, 3.0], 0.0, 0.55, 35.0, 0.0, LOW, Still),
        k(41.5, [4.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(43.0, [4.0, 3.0], 0.0, 0.0, -15.0, 0.0, HIGH, Still),
        k(46.0, [4.0, 3.0], 0.0, 0.0, -15.0, 0.0, HIGH, Still),
        k(47.0, [4.0, 3.0], 0.0, 0.0, 5.0, 0.0, FORWARD, Still),
        k(50.0, [4.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Walk),
        k(52.0, [3.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(54.0, [3.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(55.5, [3.0, 3.0], 0.0, 0.0, 10.0, 55.0, IDLE, Still),
        k(57.0, [3.0, 3.0], 0.0, 0.0, -10.0, -55.0, IDLE, Still),
        k(58.5, [3.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
        k(60.0, [3.0, 3.0], 0.0, 0.0, 5.0, 0.0, IDLE, Still),
    ]
}

fn smooth(t: f32) -> f32 {
    let t = t.clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// The calibration the recording assumes: a T-pose sample of the player.
pub fn calibration(body: &VrBody) -> VrCalibration {
    let f = body.frame();
    VrCalibration::from_t_pose(
        body,
        f.up * PLAYER_HEAD,
        f.up * 1.4 + f.left * PLAYER_SPAN * 0.5,
        f.up * 1.4 - f.left * PLAYER_SPAN * 0.5,
    )
    .expect("valid T-pose sample")
}

/// The recording for `body` (calibrated with [`calibration`]) on `skeleton`/`map`.
pub fn recording(body: &VrBody, skeleton: &Skeleton, map: &HumanoidMap) -> Vec<RecFrame> {
    let c = calibration(body);
    let f = body.frame();
    let (up, left, fwd) = (f.up, f.left, f.forward);
    let model = skeleton.rest_model_transforms();
    let at = |r: B| model[map.get(r).expect("mapped")];
    let head_rest = at(B::Head);
    let arm_len = body.arm_lengths();
    // Avatar offsets → player space (hands are scaled by `arm_scale` about the head).
    let shoulder_off = [B::LeftUpperArm, B::RightUpperArm]
        .map(|r| (at(r).translation - head_rest.translation) / c.arm_scale);
    let hands_rest = [at(B::LeftHand), at(B::RightHand)];
    let elbows_rest = [at(B::LeftLowerArm), at(B::RightLowerArm)];
    let back_rest =
        [0, 1].map(|i| (elbows_rest[i].translation - hands_rest[i].translation).normalize());
    // The elbows' rest hinge axes (model space), from the full-body solver's limits.
    let hinge_rest = [B::LeftLowerArm, B::RightLowerArm].map(|r| {
        let b = map.get(r).expect("mapped");
        match body.solver().limits().get(r) {
            JointLimit::Hinge { axis, .. } => (model[b].rotation * axis).normalize(),
            _ => panic!("elbow is a hinge"),
        }
    });
    let keys = keys();
    let n = (SECONDS * FPS) as usize;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f32 / FPS;
        let j = keys.iter().rposition(|k| k.t <= t).unwrap_or(0);
        let (a, b) = (keys[j], keys[(j + 1).min(keys.len() - 1)]);
        let u = if b.t > a.t {
            smooth((t - a.t) / (b.t - a.t))
        } else {
            0.0
        };
        let l = |x: f32, y: f32| lerp(x, y, u);
        let yaw = l(a.yaw, b.yaw).to_radians();
        let body_rot = Quat::from_axis_angle(up, yaw);
        let ground = fwd * l(a.pos[0], b.pos[0]) + left * l(a.pos[1], b.pos[1]);
        let look = l(a.look, b.look).to_radians();
        let pitch = l(a.pitch, b.pitch).to_radians();
        let head_delta = Quat::from_axis_angle(up, yaw + look) * Quat::from_axis_angle(left, pitch);
        // Walking lowers the head a little (the body's mean height drops with the stride):
        // 4 cm at 1 m/s, measured from the speed of the script itself.
        let speed = {
            let t2 = (t + 0.05).min(b.t.max(a.t + 1e-3));
            let u2 = if b.t > a.t {
                smooth((t2 - a.t) / (b.t - a.t))
            } else {
                0.0
            };
            let g2 = fwd * lerp(a.pos[0], b.pos[0], u2) + left * lerp(a.pos[1], b.pos[1], u2);
            (g2 - ground).length() / (t2 - t).max(1e-3)
        };
        let walk_drop = 0.04 * speed.min(1.2);
        let head_pos = ground + up * (PLAYER_HEAD - l(a.drop, b.drop) - walk_drop);
        let head = TrackerPose::new(head_pos, head_delta * head_rest.rotation);
        let hand_mode: [f32; 4] = core::array::from_fn(|k| l(a.hand[k], b.hand[k]));
        let hand = |side: usize| {
            let out_dir = if side == 0 { left } else { -left };
            let dir = (fwd * hand_mode[0] + out_dir * hand_mode[1] + up * hand_mode[2]).normalize();
            let lean = Quat::from_axis_angle(left, 0.5 * pitch.max(0.0));
            let shoulder = head_pos + body_rot * lean * shoulder_off[side];
            let reach = hand_mode[3] * arm_len[side] / c.arm_scale;
            let pos = shoulder + body_rot * dir * reach;
            let elbow = shoulder
                + (pos - shoulder) * 0.5
                + body_rot * (out_dir * 0.3 - up * 0.8 - fwd * 0.2).normalize() * (0.3 * reach);
            // The hand in line with the forearm, rolled as the elbow's hinge carries it (a
            // neutral forearm), then a slow roll of the wrist.
            let back = (elbow - pos).normalize();
            let hinge = (elbow - shoulder).cross(pos - elbow).normalize();
            let rest_frame = Mat3::from_cols(
                back_rest[side],
                hinge_rest[side],
                back_rest[side].cross(hinge_rest[side]),
            );
            let frame = Mat3::from_cols(back, hinge, back.cross(hinge));
            let align = Quat::from_mat3(&(frame * rest_frame.transpose()));
            let roll = Quat::from_axis_angle(back, 0.2 * (t * 0.7 + side as f32).sin());
            let rot = roll * align * hands_rest[side].rotation;
            TrackerPose::new(pos, rot.normalize())
        };
        out.push(RecFrame {
            t,
            trackers: VrTrackers {
                head,
                left_hand: hand(0),
                right_hand: hand(1),
                pelvis: None,
                left_foot: None,
                right_foot: None,
            },
            activity: a.activity,
            yaw,
            ground,
        });
    }
    out
}

/// Knee swivels the oracle of [`head_reachable`] tries per leg (every 5°).
const ORACLE_SWIVELS: usize = 72;

/// How far a turn measured on the output may read above the VR body's bound and still be
/// within it, degrees (`f32` round-off of a joint turned by exactly the bound).
const ORACLE_TURN_TOLERANCE_DEG: f32 = 1e-3;

/// The reachability oracle of the VR head: whether some placement of the pelvis puts the
/// head bone on `head_target` while every standing leg (a foot reported `Planted`) keeps its
/// foot where the output `poses[0]` has it (position and rotation), every joint within the
/// full-body limits (`limit_tolerance`, radians) and no leg joint turned more than the VR
/// body's per-frame bound ([`ik_core::vr::VR_MAX_TURN`]) from `poses[1]` (last frame's
/// output). The trunk, arms and head keep the output's shape (the pelvis is translated by
/// the head's miss, its rotation and the spine kept); each standing leg is solved by the
/// analytic two-bone limb over [`ORACLE_SWIVELS`] knee swivels. It reads only the output and
/// the public API, not how the VR body built its pose: its `pelvis_lowered` /
/// `pelvis_raised` reports are what it checks. A partial oracle: it does not try another
/// lean of the trunk, so "not reachable" means "not by moving the pelvis".
pub fn head_reachable(
    skeleton: &Skeleton,
    map: &HumanoidMap,
    body: &VrBody,
    poses: [&ik_core::Pose; 2],
    head_target: Vec3,
    limit_tolerance: f32,
) -> bool {
    use ik_core::analytic::{LimbGoal, TwoBoneIk};
    use ik_core::vr::FootPhase;
    let [output, previous] = poses;
    let hips = map.get(B::Hips).expect("hips mapped");
    let model = skeleton.model_transforms(output);
    let delta = head_target - model[body.head_bone()].translation;
    let mut pose = output.clone();
    let hips_at = model[hips].translation + delta;
    pose.translations[hips] = match skeleton.parent(hips) {
        Some(p) => model[p].inverse().transform_point(hips_at),
        None => hips_at,
    };
    let (_, legs) = body.limb_bones();
    let phases = body.locomotion.phases();
    let bound = ik_core::vr::VR_MAX_TURN.to_degrees() + ORACLE_TURN_TOLERANCE_DEG;
    let turn_deg = |a: Quat, b: Quat| {
        let d = a.conjugate() * b;
        (2.0 * Vec3::new(d.x, d.y, d.z).length().atan2(d.w.abs())).to_degrees()
    };
    let scale = body.leg_length();
    for side in 0..2 {
        if phases[side] != FootPhase::Planted {
            continue;
        }
        let [hip, knee, foot] = legs[side];
        let limb = TwoBoneIk::try_new(skeleton, hip, knee, foot).expect("leg is a limb");
        let goal = LimbGoal::new(model[foot].translation).with_orientation(model[foot].rotation);
        let fits = (0..ORACLE_SWIVELS).any(|k| {
            let swivel = k as f32 * core::f32::consts::TAU / ORACLE_SWIVELS as f32;
            let Ok(r) = limb.solve(skeleton, &mut pose, &goal.with_swivel(swivel)) else {
                return false;
            };
            r.position_error <= 1e-4 * scale
                && [hip, knee, foot]
                    .iter()
                    .all(|&b| turn_deg(previous.rotations[b], pose.rotations[b]) <= bound)
                && body
                    .solver()
                    .pose_within_limits(skeleton, &pose, limit_tolerance)
        });
        if !fits {
            return false;
        }
    }
    true
}
