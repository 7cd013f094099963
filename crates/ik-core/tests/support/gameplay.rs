//! Gameplay goals for the full-body solver, as a game feeds them (shared by
//! `tests/gameplay.rs` and `benches/gameplay.rs`): a procedural walk on every rig, then
//!
//! * `Control` — goals by forward kinematics of the in-limit walk pose (what animation gives);
//! * `Uneven` — the walk over uneven ground: each foot raised or lowered up to ±12 cm and turned
//!   to a slope of up to 20°, the pelvis lowered with the lower foot;
//! * `Reach` — the walk's feet and pelvis, hands reaching (position only) for points that drift
//!   from 30 % to 125 % of the arm's length from the shoulder, the head looking at a point that
//!   swings up to 150° to either side and ±30° up and down;
//! * `Both` — uneven ground and reaching + look-around together.
//!
//! Distances are in "human metres": scaled by the rig's leg length over 0.9 m, so a 1.8 m rig
//! and a rig in centimetres see the same motion.
//!
//! Which goals are feasible is decided by an oracle, not assumed: a cold solve (restarts, a
//! large budget) from the same input; while it leaves a goal unmet, the goal it misses most is
//! switched off and the oracle solves again. The goals it then meets are the feasible ones —
//! those a game solver must meet, whatever the infeasible ones do.

#![allow(dead_code)]

use ik_core::glam::{Quat, Vec3};
use ik_core::humanoid::{
    BodyFrame, Effector, FullBodyGoals, FullBodyReport, FullBodySolver, HumanoidBone as B,
    HumanoidMap,
};
use ik_core::limits::JointLimit;
use ik_core::{Pose, Skeleton};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

#[path = "gltf_rig.rs"]
mod gltf_rig;
pub use gltf_rig::{CC0_RIGS, load_skeleton};

/// A rig to run the scenarios on.
pub struct Rig {
    /// Display name.
    pub name: String,
    /// The skeleton.
    pub skeleton: Skeleton,
    /// Its humanoid map.
    pub map: HumanoidMap,
    /// Leg length over 0.9 m: model units per "human metre".
    pub scale: f32,
}

impl Rig {
    /// Builds a rig, or `None` when the skeleton does not map to a full humanoid.
    pub fn new(name: impl Into<String>, skeleton: Skeleton) -> Option<Self> {
        let (map, _) = HumanoidMap::from_skeleton(&skeleton);
        FullBodySolver::new(&skeleton, &map).ok()?;
        let model = skeleton.rest_model_transforms();
        let p = |r: B| map.get(r).map(|i| model[i].translation);
        let leg = p(B::LeftUpperLeg)?.distance(p(B::LeftLowerLeg)?)
            + p(B::LeftLowerLeg)?.distance(p(B::LeftFoot)?);
        Some(Self {
            name: name.into(),
            skeleton,
            map,
            scale: leg / 0.9,
        })
    }

    /// A fresh solver with default settings.
    pub fn solver(&self) -> FullBodySolver {
        FullBodySolver::new(&self.skeleton, &self.map).expect("rig was checked to map")
    }
}

/// The procedural test rigs (every naming convention, two rest-axis styles each) and, with
/// `cc0`, the characters made by others in `assets/`.
pub fn rigs(cc0: bool) -> Vec<Rig> {
    let axes = [
        RestAxes::PlusX,
        RestAxes::MinusZ,
        RestAxes::Identity,
        RestAxes::PlusX,
        RestAxes::MinusZ,
        RestAxes::Identity,
    ];
    let mut out = Vec::new();
    for (c, second) in RigConvention::ALL.into_iter().zip(axes) {
        for a in [RestAxes::PlusY, second] {
            out.extend(Rig::new(format!("{c:?}/{a:?}"), test_rig(c, a)));
        }
    }
    if cc0 {
        for file in CC0_RIGS {
            let skeleton = load_skeleton(file).expect("bundled CC0 rig loads");
            out.push(Rig::new(file, skeleton).expect("bundled CC0 rig maps to a humanoid"));
        }
    }
    out
}

/// A gameplay scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Goals by forward kinematics of the in-limit walk.
    Control,
    /// Feet on uneven ground.
    Uneven,
    /// Hands reaching in and out of reach, head looking around.
    Reach,
    /// Both.
    Both,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Self; 4] = [Self::Control, Self::Uneven, Self::Reach, Self::Both];
}

// The scenarios' goal motion, shared with bevy_ik's crowd bench (and the robustness suite).
#[path = "gameplay_motion.rs"]
pub mod motion;
use motion::{look_offset, reach_offset, uneven_foot};

/// Rotates bone `b` by the model-space rotation `d` in its rest configuration: the local
/// rotation that turns the bone by `d` about its origin when its parents are at rest (and
/// carries along with them otherwise, as an animation curve does).
fn turn(
    skeleton: &Skeleton,
    rest_model: &[ik_core::BoneTransform],
    pose: &mut Pose,
    b: usize,
    d: Quat,
) {
    let m = rest_model[b].rotation;
    pose.rotations[b] = (skeleton.bones()[b].rest.rotation * (m.inverse() * d * m)).normalize();
}

/// The walk pose at `phase` (cycles; one cycle is one stride of both legs), clamped to the
/// solver's limits.
pub fn walk_pose(rig: &Rig, solver: &FullBodySolver, phase: f32) -> Pose {
    use core::f32::consts::TAU;
    let sk = &rig.skeleton;
    let map = &rig.map;
    let frame = BodyFrame::from_rest(sk, map).expect("rig has a body frame");
    let rest_model = sk.rest_model_transforms();
    let mut pose = sk.rest_pose();
    let w = phase * TAU;
    let deg = f32::to_radians;
    let get = |r: B| map.get(r);
    if let Some(h) = get(B::Hips) {
        let lift = frame.up * (0.015 * (2.0 * w).cos() - 0.02) * rig.scale;
        // The hips' translation is in its parent's frame.
        let parent_rot = sk
            .parent(h)
            .map_or(Quat::IDENTITY, |p| rest_model[p].rotation);
        let parent_scale = sk.parent(h).map_or(Vec3::ONE, |p| rest_model[p].scale);
        pose.translations[h] += (parent_rot.inverse() * lift) / parent_scale;
        turn(
            sk,
            &rest_model,
            &mut pose,
            h,
            Quat::from_axis_angle(frame.up, deg(5.0) * w.sin()),
        );
    }
    for (r, d) in [
        (
            B::Spine,
            Quat::from_axis_angle(frame.up, -deg(4.0) * w.sin()),
        ),
        (
            B::Chest,
            Quat::from_axis_angle(frame.up, -deg(3.0) * w.sin()),
        ),
    ] {
        if let Some(b) = get(r) {
            turn(sk, &rest_model, &mut pose, b, d);
        }
    }
    for (side, sign) in [(0usize, 1.0f32), (1, -1.0)] {
        let pick = |l: B, r: B| if side == 0 { l } else { r };
        let s = (w + if side == 0 {
            0.0
        } else {
            core::f32::consts::PI
        })
        .sin();
        // Thigh swing about the body's left axis (forward is flexion), knee bend in swing.
        if let Some(b) = get(pick(B::LeftUpperLeg, B::RightUpperLeg)) {
            turn(
                sk,
                &rest_model,
                &mut pose,
                b,
                Quat::from_axis_angle(frame.left, -deg(25.0) * s),
            );
        }
        let knee = deg(8.0)
            + deg(45.0)
                * (0.5
                    + 0.5
                        * (w + 1.2
                            + if side == 0 {
                                0.0
                            } else {
                                core::f32::consts::PI
                            })
                        .sin())
                .powi(2);
        if let Some(b) = get(pick(B::LeftLowerLeg, B::RightLowerLeg))
            && let JointLimit::Hinge { axis, min, max } =
                solver.limits().get(pick(B::LeftLowerLeg, B::RightLowerLeg))
        {
            pose.rotations[b] = (sk.bones()[b].rest.rotation
                * Quat::from_axis_angle(axis, knee.clamp(min, max)))
            .normalize();
        }
        if let Some(b) = get(pick(B::LeftFoot, B::RightFoot)) {
            turn(
                sk,
                &rest_model,
                &mut pose,
                b,
                Quat::from_axis_angle(frame.left, deg(10.0) * s),
            );
        }
        // Arms: down from the rest pose toward the sides, swinging opposite to the legs.
        if let Some(b) = get(pick(B::LeftUpperArm, B::RightUpperArm)) {
            let down = Quat::from_axis_angle(frame.forward, -sign * deg(55.0));
            let swing = Quat::from_axis_angle(frame.left, deg(20.0) * s);
            turn(sk, &rest_model, &mut pose, b, swing * down);
        }
        if let Some(b) = get(pick(B::LeftLowerArm, B::RightLowerArm))
            && let JointLimit::Hinge { axis, min, max } =
                solver.limits().get(pick(B::LeftLowerArm, B::RightLowerArm))
        {
            let bend = deg(25.0) + deg(15.0) * s;
            pose.rotations[b] = (sk.bones()[b].rest.rotation
                * Quat::from_axis_angle(axis, bend.clamp(min, max)))
            .normalize();
        }
    }
    // Keep the pose inside the solver's limits: FK of it is a consistent, reachable goal set.
    for (role, b) in map.iter() {
        let rest = &sk.bones()[b].rest;
        let (mut r, mut t) = (pose.rotations[b], pose.translations[b]);
        solver
            .limits()
            .get(role)
            .clamp(rest.rotation, rest.translation, &mut r, &mut t);
        pose.rotations[b] = r;
        pose.translations[b] = t;
    }
    pose
}

/// One frame's goals and the input pose (the animated walk pose of that frame).
pub struct Frame {
    /// The goals.
    pub goals: FullBodyGoals,
    /// The animated pose the game would hand the solver (before IK).
    pub input: Pose,
}

/// `frames` frames at 60 Hz of `scenario` on `rig`, seeded.
pub fn scenario_frames(rig: &Rig, scenario: Scenario, frames: usize, seed: u32) -> Vec<Frame> {
    let mut solver = rig.solver();
    let frame = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("rig has a body frame");
    let s = rig.scale;
    let mut out = Vec::with_capacity(frames);
    let uneven = matches!(scenario, Scenario::Uneven | Scenario::Both);
    let reach = matches!(scenario, Scenario::Reach | Scenario::Both);
    let axes = (frame.left, frame.up, frame.forward);
    for f in 0..frames {
        let t = f as f32 / 60.0;
        let pose = walk_pose(rig, &solver, t * 0.9);
        let mut goals = solver.goals_at_pose(&rig.skeleton, &pose);
        let model = rig.skeleton.model_transforms(&pose);
        if uneven {
            let mut lowest = 0.0f32;
            for (k, e) in [(0u32, Effector::LeftFoot), (1, Effector::RightFoot)] {
                let (h, slope) = uneven_foot(t, seed, k, frame.left, frame.forward, s);
                let g = goals.get_mut(e);
                g.position += frame.up * h;
                g.rotation = (slope * g.rotation).normalize();
                lowest = lowest.min(h);
            }
            goals.get_mut(Effector::Pelvis).position += frame.up * lowest;
        }
        if reach {
            for (k, e, upper) in [
                (0u32, Effector::LeftHand, B::LeftUpperArm),
                (1, Effector::RightHand, B::RightUpperArm),
            ] {
                let (Some(u), Some(l), Some(h)) = (
                    rig.map.get(upper),
                    rig.map.get(if k == 0 {
                        B::LeftLowerArm
                    } else {
                        B::RightLowerArm
                    }),
                    rig.map.get(e.bone()),
                ) else {
                    continue;
                };
                let rest = rig.skeleton.rest_model_transforms();
                let arm = rest[u].translation.distance(rest[l].translation)
                    + rest[l].translation.distance(rest[h].translation);
                let g = goals.get_mut(e);
                g.position = model[u].translation + reach_offset(t, seed, k, axes, arm);
                g.rotation_weight = 0.0;
            }
            let head = model[solver.head_bone()];
            goals.look_at.target = head.translation + look_offset(t, seed, axes, s);
        }
        if std::env::var("IK_GAMEPLAY_PELVIS_POSITION").is_ok() {
            // As bevy_ik's `IkHumanoid` sets it: the pelvis follows its target's position only.
            goals.get_mut(Effector::Pelvis).rotation_weight = 0.0;
        }
        out.push(Frame { goals, input: pose });
    }
    out
}

/// Which goals of a frame are enabled, indexed like [`Effector::ALL`] then the look-at.
pub type GoalMask = [bool; 6];

fn enabled_mask(goals: &FullBodyGoals) -> GoalMask {
    let mut m = [false; 6];
    for (k, g) in goals.effectors.iter().enumerate() {
        m[k] = g.enabled;
    }
    m[5] = goals.look_at.enabled;
    m
}

/// Residual of goal `k` in units of the acceptance thresholds (1 mm scaled to the rig, 1°):
/// ≤ 1 is met.
pub fn goal_error(report: &FullBodyReport, k: usize, scale: f32) -> f32 {
    let mm = 1e-3 * scale;
    let deg = 1f32.to_radians();
    if k < 5 {
        let r = report.residuals[k];
        (r.position / mm).max(r.rotation / deg)
    } else {
        report.look_at / deg
    }
}

/// Residuals measured on `pose` (FK) for `goals`, independent of any solver report.
pub fn measure(
    rig: &Rig,
    solver: &FullBodySolver,
    pose: &Pose,
    goals: &FullBodyGoals,
) -> FullBodyReport {
    let model = rig.skeleton.model_transforms(pose);
    let mut r = FullBodyReport::default();
    for (k, g) in goals.effectors.iter().enumerate() {
        if !g.enabled {
            continue;
        }
        let m = model[solver.effector_bones()[k]];
        if g.position_weight > 0.0 {
            r.residuals[k].position = m.translation.distance(g.position);
        }
        if g.rotation_weight > 0.0 {
            r.residuals[k].rotation = m.rotation.angle_between(g.rotation);
        }
    }
    if goals.look_at.enabled {
        let head = model[solver.head_bone()];
        let d = (head.rotation * solver.head_aim_axis()).normalize();
        if let Some(t) = (goals.look_at.target - head.translation).try_normalize() {
            r.look_at = d.cross(t).length().atan2(d.dot(t));
        }
    }
    r
}

/// How much goal `k`'s limb is stretched beyond its reach toward its target on `pose`
/// (negative when within reach; `None` for the pelvis and the look-at).
fn stretch(rig: &Rig, pose: &Pose, goals: &FullBodyGoals, k: usize) -> Option<f32> {
    let (u, l, e) = match k {
        0 => (B::LeftUpperArm, B::LeftLowerArm, B::LeftHand),
        1 => (B::RightUpperArm, B::RightLowerArm, B::RightHand),
        2 => (B::LeftUpperLeg, B::LeftLowerLeg, B::LeftFoot),
        3 => (B::RightUpperLeg, B::RightLowerLeg, B::RightFoot),
        _ => return None,
    };
    let (u, l, e) = (rig.map.get(u)?, rig.map.get(l)?, rig.map.get(e)?);
    let rest = rig.skeleton.rest_model_transforms();
    let reach = rest[u].translation.distance(rest[l].translation)
        + rest[l].translation.distance(rest[e].translation);
    let root = rig.skeleton.model_transform(pose, u).translation;
    Some((goals.effectors[k].position.distance(root) - reach) / reach)
}

/// The oracle: which goals of each frame are feasible (see the module docs), by cold solves
/// with restarts and a large budget. The goal switched off first is, as in
/// the solver's own order of giving way, the look-at, then a hand, then a foot, then the
/// pelvis; within one class a limb stretched beyond its reach, else the goal missed most.
pub fn feasible_goals(rig: &Rig, frames: &[Frame]) -> Vec<GoalMask> {
    feasible_goals_with_poses(rig, frames).0
}

/// [`feasible_goals`], with the oracle's pose of each frame (what it met the feasible goals
/// with) and the restarts its last cold solve of the frame used (0: its first attempt, from its
/// previous frame's pose, met them).
pub fn feasible_goals_with_poses(
    rig: &Rig,
    frames: &[Frame],
) -> (Vec<GoalMask>, Vec<Pose>, Vec<u32>) {
    // Another build's oracle (`IK_ORACLE_LOAD`, a folder `IK_ORACLE_SAVE` wrote): the same
    // feasibility judgement for two builds compared on the same goals.
    let file = |var: &str| {
        std::env::var_os(var).map(|dir| {
            let mut key = OutputHash::default();
            key.frames(frames);
            std::path::PathBuf::from(dir).join(format!("{:016x}.oracle", key.0))
        })
    };
    if let Some(path) = file("IK_ORACLE_LOAD") {
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("IK_ORACLE_LOAD: {}: {e}", path.display()));
        return oracle_from_bytes(&bytes, &rig.skeleton.rest_pose(), frames.len());
    }
    let out = oracle_of(rig, frames);
    if let Some(path) = file("IK_ORACLE_SAVE") {
        std::fs::write(&path, oracle_to_bytes(&out))
            .unwrap_or_else(|e| panic!("IK_ORACLE_SAVE: {}: {e}", path.display()));
    }
    out
}

/// [`feasible_goals_with_poses`] as bytes: per frame the mask, the restarts, then the pose's
/// rotations and translations, little-endian `f32` bits.
fn oracle_to_bytes((masks, poses, restarts): &(Vec<GoalMask>, Vec<Pose>, Vec<u32>)) -> Vec<u8> {
    let mut out = Vec::new();
    for ((mask, pose), r) in masks.iter().zip(poses).zip(restarts) {
        out.extend(mask.iter().map(|&m| u8::from(m)));
        out.extend(r.to_le_bytes());
        for v in pose
            .rotations
            .iter()
            .flat_map(|q| q.to_array())
            .chain(pose.translations.iter().flat_map(Vec3::to_array))
        {
            out.extend(v.to_le_bytes());
        }
    }
    out
}

/// Reads [`oracle_to_bytes`]' output for `frames` frames of poses shaped like `rest`.
fn oracle_from_bytes(
    bytes: &[u8],
    rest: &Pose,
    frames: usize,
) -> (Vec<GoalMask>, Vec<Pose>, Vec<u32>) {
    let per_frame = 6 + 4 + 4 * (4 * rest.rotations.len() + 3 * rest.translations.len());
    assert_eq!(
        bytes.len(),
        frames * per_frame,
        "oracle file of another sequence"
    );
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for f in 0..frames {
        // The 6 mask bytes break the 4-byte alignment: read each frame from its own offset.
        let frame = &bytes[f * per_frame..(f + 1) * per_frame];
        out.0.push(core::array::from_fn(|k| frame[k] != 0));
        let mut words = frame[6..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        out.2.push(words.next().unwrap_or(0));
        let mut pose = rest.clone();
        let mut next = || f32::from_bits(words.next().unwrap_or(0));
        for q in &mut pose.rotations {
            *q = Quat::from_xyzw(next(), next(), next(), next());
        }
        for t in &mut pose.translations {
            *t = Vec3::new(next(), next(), next());
        }
        out.1.push(pose);
    }
    out
}

/// The oracle's own search ([`feasible_goals_with_poses`]).
fn oracle_of(rig: &Rig, frames: &[Frame]) -> (Vec<GoalMask>, Vec<Pose>, Vec<u32>) {
    let mut poses = Vec::with_capacity(frames.len());
    let mut restarts = Vec::with_capacity(frames.len());
    let mut solver = rig.solver();
    solver.settings_mut().cold_iterations = 200;
    solver.settings_mut().max_restarts = 6;
    let mut out = Vec::with_capacity(frames.len());
    let mut pose = frames
        .first()
        .map_or_else(|| rig.skeleton.rest_pose(), |f| f.input.clone());
    for f in frames {
        let mut goals = f.goals;
        let mut mask = enabled_mask(&goals);
        let start = pose.clone();
        let mut used = 0;
        for _ in 0..6 {
            pose.copy_from(&start);
            used = solver
                .solve_cold(&rig.skeleton, &mut pose, &goals)
                .map_or(0, |r| r.restarts);
            let r = measure(rig, &solver, &pose, &goals);
            let worst = (0..6)
                .filter(|&k| mask[k] && goal_error(&r, k, rig.scale) > 1.0)
                .map(|k| {
                    let class = match k {
                        5 => 3.0,
                        0 | 1 => 2.0,
                        2 | 3 => 1.0,
                        _ => 0.0,
                    };
                    let within = match stretch(rig, &pose, &goals, k) {
                        Some(st) if st > 0.0 => 1e3 + st,
                        _ => goal_error(&r, k, rig.scale).min(999.0),
                    };
                    (k, class * 1e4 + within)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((k, _)) = worst else { break };
            mask[k] = false;
            if k < 5 {
                goals.effectors[k].enabled = false;
            } else {
                goals.look_at.enabled = false;
            }
        }
        out.push(mask);
        poses.push(pose.clone());
        restarts.push(used);
    }
    (out, poses, restarts)
}

/// The largest turn of a mapped joint from `a` to `b`, degrees.
pub fn largest_turn_deg(rig: &Rig, a: &Pose, b: &Pose) -> f32 {
    rig.map
        .iter()
        .map(|(_, j)| a.rotations[j].angle_between(b.rotations[j]).to_degrees())
        .fold(0.0f32, f32::max)
}

/// The limit on a coherent tracker's per-frame joint turn (issue 9: no joint turns more than
/// this in a frame while the goals move less), degrees.
pub const FLIP_DEG: f32 = 20.0;

/// The largest turn of a joint the tracker `s` may make in one frame, degrees: its per-frame
/// bound ([`FullBodySettings::max_turn`](ik_core::humanoid::FullBodySettings::max_turn)), at
/// most [`FLIP_DEG`].
pub fn tracker_bound_deg(s: &FullBodySolver) -> f32 {
    s.settings().max_turn.to_degrees().min(FLIP_DEG)
}

/// Which of `misses` (a tracked run over `frames`) are *feasible only by a flip*: the
/// oracle's pose of the frame (`oracle_poses`, see [`feasible_goals_with_poses`]) turns some
/// joint more than the tracker's per-frame bound ([`tracker_bound_deg`]: 15° by default, at
/// most [`FLIP_DEG`]) from the tracker's previous output, and so does — or fails — a *warm
/// oracle*: a solve from that previous output without restarts, 200 iterations, the frame's
/// infeasible goals off. Neither search finds a pose within the bound of the previous frame
/// that meets the goal, so a tracker that may not turn further cannot be asked to (issue 24:
/// feasible = an oracle reaches it within the per-frame bound from the previous frame; not a
/// proof that no such pose exists: the only poses found turn further). Replays the tracker
/// ([`track`], [`Rig::solver`]'s settings) to get each previous output.
pub fn flip_only_misses(
    rig: &Rig,
    frames: &[Frame],
    feasible: &[GoalMask],
    oracle_poses: &[Pose],
    misses: &[Miss],
) -> Vec<bool> {
    flip_only_misses_with(rig, rig.solver(), frames, feasible, oracle_poses, misses)
}

/// [`flip_only_misses`] for a run of `tracker` (a fresh solver with the settings the run
/// used) instead of [`Rig::solver`]'s.
pub fn flip_only_misses_with(
    rig: &Rig,
    tracker: FullBodySolver,
    frames: &[Frame],
    feasible: &[GoalMask],
    oracle_poses: &[Pose],
    misses: &[Miss],
) -> Vec<bool> {
    let mut out = vec![false; misses.len()];
    if misses.is_empty() {
        return out;
    }
    let mut solver = tracker;
    let bound = tracker_bound_deg(&solver);
    let _ = run(
        rig,
        &mut solver,
        frames,
        feasible,
        false,
        |s, sk, p, g, f| {
            for (i, m) in misses.iter().enumerate().filter(|(_, m)| m.frame == f) {
                if f == 0 || largest_turn_deg(rig, p, &oracle_poses[f]) <= bound {
                    continue;
                }
                let mut only = *g;
                for (k, on) in feasible[f].iter().enumerate() {
                    if !on {
                        if k < 5 {
                            only.effectors[k].enabled = false;
                        } else {
                            only.look_at.enabled = false;
                        }
                    }
                }
                let (mut warm, mut q) = (s.clone(), p.clone());
                warm.settings_mut().cold_iterations = 200;
                warm.settings_mut().max_restarts = 0;
                let met = warm.solve_cold(sk, &mut q, &only).is_ok()
                    && goal_error(&measure(rig, &warm, &q, g), m.goal, rig.scale) <= 1.0
                    && largest_turn_deg(rig, p, &q) <= bound;
                out[i] = !met;
            }
            track(s, sk, p, g, f)
        },
    );
    out
}

/// A game's per-frame call: cold when the character appears (frame 0), then tracking. The
/// report is kept for [`run`]'s [`Run::output_hash`] (see [`take_last_report`]).
pub fn track(
    s: &mut FullBodySolver,
    sk: &Skeleton,
    p: &mut Pose,
    g: &FullBodyGoals,
    frame: usize,
) -> bool {
    let r = if frame == 0 {
        s.solve_cold(sk, p, g)
    } else {
        s.solve(sk, p, g)
    };
    LAST_REPORT.set(r.as_ref().ok().copied());
    r.is_ok()
}

std::thread_local! {
    /// The report of this thread's last [`track`] call.
    static LAST_REPORT: core::cell::Cell<Option<FullBodyReport>> =
        const { core::cell::Cell::new(None) };
}

/// The report of this thread's last [`track`] call since the last take (`None`: none, or an
/// error).
pub fn take_last_report() -> Option<FullBodyReport> {
    LAST_REPORT.take()
}

/// FNV-1a (64-bit) over the bits of solver outputs: runs of two builds on the same input
/// print the same hash when their outputs are bit-identical (a check that an optimisation
/// changed no result; [`Run::output_hash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputHash(pub u64);

impl Default for OutputHash {
    fn default() -> Self {
        Self(Self::OFFSET)
    }
}

impl OutputHash {
    /// FNV-1a's 64-bit offset basis.
    pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    /// FNV-1a's 64-bit prime.
    pub const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// Folds in one 32-bit word.
    pub fn word(&mut self, v: u32) {
        self.0 = (self.0 ^ u64::from(v)).wrapping_mul(Self::PRIME);
    }

    /// Folds in every rotation's, then every translation's components, bit for bit.
    pub fn pose(&mut self, pose: &Pose) {
        for v in pose
            .rotations
            .iter()
            .flat_map(|q| q.to_array())
            .chain(pose.translations.iter().flat_map(Vec3::to_array))
        {
            self.word(v.to_bits());
        }
    }

    /// Folds in a value's `Debug` text (a report: every field, floats printed exactly).
    pub fn debug(&mut self, v: &impl core::fmt::Debug) {
        use core::fmt::Write as _;
        let _ = write!(self, "{v:?}");
    }

    /// Folds in a sequence's input poses and goals (what the solver is given), bit for bit:
    /// two builds (or two releases) print the same hash when they ran the same goals.
    pub fn frames(&mut self, frames: &[Frame]) {
        for f in frames {
            self.pose(&f.input);
            self.debug(&f.goals);
        }
    }
}

impl core::fmt::Write for OutputHash {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &b in s.as_bytes() {
            self.word(u32::from(b));
        }
        Ok(())
    }
}

/// Runs of each timed solve (see [`Run::fastest_us`]).
pub const REPEATS: usize = 5;

/// What a warm, frame-to-frame run of a solver did over a scenario.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Per-solve wall-clock times, µs (only when timed).
    pub times_us: Vec<f64>,
    /// Per-solve fastest of [`REPEATS`] runs of the same solve from the same state, µs (only
    /// when timed): the solve's own cost without the noise of a shared machine.
    pub fastest_us: Vec<f64>,
    /// Joint-frames in which a mapped joint turned more than 20°.
    pub flips: usize,
    /// The largest per-frame turn of any mapped joint, degrees.
    pub largest_turn_deg: f32,
    /// Frames whose feasible goals were all met at 1 mm / 1°.
    pub frames_all_feasible_met: usize,
    /// Feasible goal-frames, and those met.
    pub feasible: usize,
    /// Feasible goal-frames that were met.
    pub feasible_met: usize,
    /// The worst miss of a feasible goal, in units of 1 mm / 1°.
    pub worst_feasible_miss: f32,
    /// Frames whose output equals the previous frame's although the goals moved.
    pub frozen: usize,
    /// Frames run.
    pub frames: usize,
    /// Solver errors (should be none).
    pub errors: usize,
    /// Every feasible goal-frame that was missed (which frame, goal, by how much).
    pub misses: Vec<Miss>,
    /// Frames with a non-finite output.
    pub non_finite: usize,
    /// Every frame's output pose and, where the solve was [`track`], its report.
    pub output_hash: OutputHash,
}

/// A feasible goal missed in one frame.
#[derive(Clone, Copy, Debug, Default)]
pub struct Miss {
    /// The frame.
    pub frame: usize,
    /// The goal, indexed like [`Effector::ALL`] then the look-at (5).
    pub goal: usize,
    /// The residual in units of 1 mm / 1° (see [`goal_error`]).
    pub error: f32,
    /// How many frames the goal has been feasible without a break (0: it became feasible in
    /// this frame).
    pub feasible_for: usize,
}

/// Runs `solve` warm over `frames` (each frame starts from the previous frame's solution, the
/// first from the animated pose; `solve` gets the frame index, so it can solve the first one
/// cold as a game does when a character appears), measuring everything in [`Run`].
pub fn run(
    rig: &Rig,
    solver: &mut FullBodySolver,
    frames: &[Frame],
    feasible: &[GoalMask],
    timed: bool,
    mut solve: impl FnMut(&mut FullBodySolver, &Skeleton, &mut Pose, &FullBodyGoals, usize) -> bool,
) -> Run {
    let mut out = Run::default();
    let roles: Vec<usize> = rig.map.iter().map(|(_, b)| b).collect();
    let mut prev: Option<Pose> = None;
    let mut prev_goals: Option<FullBodyGoals> = None;
    let mut pose = rig.skeleton.rest_pose();
    for (f, frame) in frames.iter().enumerate() {
        // A game hands the solver the pose it solved last frame (warm start); the very first
        // frame starts from the animation.
        if prev.is_none() {
            pose.copy_from(&frame.input);
        }
        if timed {
            // The same solve from the same state (solver and pose cloned outside the timing),
            // repeated: its fastest run is the solve's own cost, free of the noise of a shared
            // machine.
            let mut fastest = f64::INFINITY;
            for _ in 1..REPEATS {
                let (mut s, mut p) = (solver.clone(), pose.clone());
                let start = std::time::Instant::now();
                let _ = solve(&mut s, &rig.skeleton, &mut p, &frame.goals, f);
                fastest = fastest.min(start.elapsed().as_secs_f64() * 1e6);
            }
            out.fastest_us.push(fastest);
        }
        LAST_REPORT.set(None);
        let start = std::time::Instant::now();
        let ok = solve(solver, &rig.skeleton, &mut pose, &frame.goals, f);
        if timed {
            let t = start.elapsed().as_secs_f64() * 1e6;
            out.times_us.push(t);
            if let Some(last) = out.fastest_us.last_mut() {
                *last = last.min(t);
            }
        }
        out.errors += usize::from(!ok);
        out.frames += 1;
        out.output_hash.pose(&pose);
        if let Some(report) = take_last_report() {
            out.output_hash.debug(&report);
        }
        if !pose.is_finite() {
            out.non_finite += 1;
            pose.copy_from(&frame.input);
        }
        let r = measure(rig, solver, &pose, &frame.goals);
        let mut all = true;
        for (k, &wanted) in feasible[f].iter().enumerate() {
            if !wanted {
                continue;
            }
            out.feasible += 1;
            let e = goal_error(&r, k, rig.scale);
            if e <= 1.0 {
                out.feasible_met += 1;
            } else {
                all = false;
                out.worst_feasible_miss = out.worst_feasible_miss.max(e);
                let feasible_for = feasible[..f].iter().rev().take_while(|m| m[k]).count();
                out.misses.push(Miss {
                    frame: f,
                    goal: k,
                    error: e,
                    feasible_for,
                });
            }
        }
        out.frames_all_feasible_met += usize::from(all);
        if let (Some(p), Some(g)) = (&prev, &prev_goals) {
            for &b in &roles {
                let turn = p.rotations[b].angle_between(pose.rotations[b]).to_degrees();
                out.largest_turn_deg = out.largest_turn_deg.max(turn);
                out.flips += usize::from(turn > 20.0);
            }
            if *p == pose && *g != frame.goals {
                out.frozen += 1;
            }
        }
        prev = Some(pose.clone());
        prev_goals = Some(frame.goals);
    }
    out
}
