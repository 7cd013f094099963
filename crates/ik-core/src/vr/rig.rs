//! The VR body's set-up: the bones and rest measurements it reads from the rig ([`Rig`]),
//! the state it carries between frames ([`State`]), and [`VrBody::new`]'s construction.

use core::f32::consts::PI;

use glam::{Quat, Vec3};

use super::locomotion::Locomotion;
use super::{
    TrackerPose, VR_MAX_TURN, VR_SOLVER_ITERATIONS, VrBody, VrCalibration, VrError, VrReport,
    VrSettings, VrTrackers,
};
use crate::analytic::{LimbSettings, TwoBoneIk};
use crate::humanoid::{
    BodyFrame, Effector, FullBodyGoals, FullBodySolver, HumanoidBone as B, HumanoidError,
    HumanoidMap, default_ball_range,
};
use crate::limits::JointLimit;
use crate::pose::BoneTransform;
use crate::skeleton::Skeleton;

/// Bones and rest measurements, fixed at set-up.
#[derive(Clone, Debug)]
pub(super) struct Rig {
    pub(super) frame: BodyFrame,
    pub(super) hips: usize,
    /// Mapped spine bones below the neck, parents first.
    pub(super) spine: Vec<usize>,
    /// Per spine bone: the cumulative share of the spine's flexion and twist reached at it
    /// (from the bones' default ranges), the last one 1.
    pub(super) spine_share: Vec<(f32, f32)>,
    /// How far the spine bones may flex together (95 % of their default ranges), radians.
    pub(super) spine_flex: f32,
    pub(super) neck: Option<usize>,
    pub(super) head: usize,
    /// Per side (left, right): upper arm, lower arm, hand.
    pub(super) arms: [TwoBoneIk; 2],
    pub(super) arm_bones: [[usize; 3]; 2],
    pub(super) arm_length: [f32; 2],
    /// The full-body solver's limits of the upper and mid joints (left, right).
    pub(super) arm_limits: [[JointLimit; 2]; 2],
    /// Every mapped bone but the toes (the full-body solver's joints, the hips included), by
    /// bone index: the bones the analytic pose starts at rest and whose turn per frame the VR
    /// body bounds.
    pub(super) joints: Vec<usize>,
    /// Per side: an in-line forearm twist bone and its limit.
    pub(super) twist: [Option<(usize, JointLimit)>; 2],
    pub(super) hand_limit: [JointLimit; 2],
    pub(super) leg_limits: [[JointLimit; 2]; 2],
    /// The full-body solver's ankle limits (left, right).
    pub(super) foot_limit: [JointLimit; 2],
    pub(super) legs: [TwoBoneIk; 2],
    pub(super) leg_bones: [[usize; 3]; 2],
    pub(super) leg_length: f32,
    /// Per leg: the hip-to-ankle distance with the knee as straight as its range allows
    /// (below `leg_length` when the knee cannot straighten fully).
    pub(super) leg_reach: [f32; 2],
    /// Rest model rotations: hips, spine bones (parallel to `spine`), neck, head, hands, feet.
    pub(super) rest_hips: Quat,
    pub(super) rest_hips_pos: Vec3,
    pub(super) rest_spine: Vec<Quat>,
    pub(super) rest_neck: Quat,
    pub(super) rest_head: BoneTransform,
    pub(super) rest_hands: [BoneTransform; 2],
    pub(super) rest_feet: [BoneTransform; 2],
    /// Per hand: the direction from the wrist to the elbow at rest, in the hand's frame.
    pub(super) hand_to_elbow: [Vec3; 2],
    /// Rest foot plane height along up (mean of the two foot origins).
    pub(super) foot_plane: f32,
    /// Rest distance from the hips to the head.
    pub(super) torso: f32,
    /// Rest head height above the foot plane.
    pub(super) head_height: f32,
    /// Wrist-to-wrist span with both arms stretched sideways (bone lengths).
    pub(super) span: f32,
    /// The avatar's origin of player space (rest hips on the foot plane).
    pub(super) origin: Vec3,
}

/// Per-frame state carried between frames.
#[derive(Clone, Debug)]
pub(super) struct State {
    pub(super) started: bool,
    pub(super) body_yaw: f32,
    pub(super) head_yaw: f32,
    pub(super) lean: f32,
    /// Last frame's lean as posed (after the planted legs' share).
    pub(super) last_lean: f32,
    /// Unit swivel (bend) directions of the elbows and knees, model space.
    pub(super) elbow_dir: [Vec3; 2],
    pub(super) knee_dir: [Vec3; 2],
    /// Per leg: last frame's output hip-to-ankle span (a standing leg straightens from it
    /// by at most the turn bound).
    pub(super) leg_span: [f32; 2],
    /// Per arm: no swivel within last frame's turn had the arm within its joint limits (the
    /// solver fixed it); this frame tries only the wanted swivel until it fits again.
    pub(super) arm_unfit: [bool; 2],
    /// Per arm: this frame's controller is within the analytic arm's reach (its flex limits
    /// allow it).
    pub(super) hand_in_reach: [bool; 2],
    /// How far the last two frames raised the pelvis over the standing legs (last frame's
    /// first; 0: not raised).
    pub(super) pelvis_rise: [f32; 2],
}

/// `frame` with its up direction turned to `up` (left and forward turned with it); `frame` as
/// it is when `up` is degenerate or more than 45° from `frame.up`.
fn level_frame(frame: BodyFrame, up: Vec3) -> BodyFrame {
    let Some(up) = up.try_normalize() else {
        return frame;
    };
    if up.dot(frame.up) < core::f32::consts::FRAC_1_SQRT_2 {
        return frame;
    }
    let Some(left) = (frame.left - up * frame.left.dot(up)).try_normalize() else {
        return frame;
    };
    BodyFrame {
        up,
        left,
        forward: left.cross(up),
    }
}

impl VrBody {
    pub(super) fn build(
        skeleton: &Skeleton,
        map: &HumanoidMap,
        up: Option<Vec3>,
    ) -> Result<Self, VrError> {
        let mut solver = FullBodySolver::new(skeleton, map)?;
        // The tracking budget per frame: the goals are what the candidate meets on most
        // frames (the solver returns at once); it iterates where the turn bound kept the
        // candidate from a goal (step 7). Bounds the slow frames (`benches/vr_body.rs` prints
        // their iterations).
        solver.settings_mut().max_iterations = VR_SOLVER_ITERATIONS;
        // The bounded, prioritised solve: its turn bound, its limits and its fixed point are
        // the VR body's (see the module docs, step 7).
        let fb = solver.settings_mut();
        fb.max_turn = VR_MAX_TURN * super::VR_SOLVE_TURN_SHARE;
        // The head's tracker comes first: a hand or a foot moves only its own limb (clavicle,
        // arm; leg), never the trunk or the pelvis under the head.
        for e in [
            Effector::LeftHand,
            Effector::RightHand,
            Effector::LeftFoot,
            Effector::RightFoot,
        ] {
            fb.pull[e as usize] = 0.0;
        }
        let frame = BodyFrame::from_rest(skeleton, map)?;
        let frame = up.map_or(frame, |up| level_frame(frame, up));
        let model = skeleton.rest_model_transforms();
        let bone = |r: B| map.get(r).ok_or(HumanoidError::MissingBone(r));
        let hips = bone(B::Hips)?;
        let head = bone(B::Head)?;
        let mut spine: Vec<usize> = [B::Spine, B::Chest, B::UpperChest]
            .iter()
            .filter_map(|&r| map.get(r))
            .filter(|&i| skeleton.is_ancestor_or_self(i, head) && i != hips)
            .collect();
        spine.sort_unstable();
        spine.dedup();
        let neck = map
            .get(B::Neck)
            .filter(|&n| skeleton.is_ancestor_or_self(n, head) && n != head);
        // Each limb bends about the full-body solver's own hinge axis, within its range, so
        // that the solver's limit clamp leaves the analytic pose as it is.
        let limb = |a: B, b: B, c: B| -> Result<(TwoBoneIk, [usize; 3], f32), VrError> {
            let ids = [bone(a)?, bone(b)?, bone(c)?];
            let mut ik = TwoBoneIk::try_new(skeleton, ids[0], ids[1], ids[2])?;
            if let JointLimit::Hinge { axis, min, max } = solver.limits().get(b) {
                let rest = ik.rest_flex();
                let settings = LimbSettings::default()
                    .with_bend_axis(model[ids[1]].rotation * axis)
                    .with_flex_limits((rest + min).clamp(0.0, PI), (rest + max).clamp(0.0, PI));
                if let Ok(with) =
                    TwoBoneIk::try_with_settings(skeleton, ids[0], ids[1], ids[2], settings)
                {
                    ik = with;
                }
            }
            let [l1, l2] = ik.rest_lengths();
            Ok((ik, ids, l1 + l2))
        };
        let (la, la_ids, la_len) = limb(B::LeftUpperArm, B::LeftLowerArm, B::LeftHand)?;
        let (ra, ra_ids, ra_len) = limb(B::RightUpperArm, B::RightLowerArm, B::RightHand)?;
        let (ll, ll_ids, ll_len) = limb(B::LeftUpperLeg, B::LeftLowerLeg, B::LeftFoot)?;
        let (rl, rl_ids, rl_len) = limb(B::RightUpperLeg, B::RightLowerLeg, B::RightFoot)?;
        let up = frame.up;
        let foot_plane =
            0.5 * (model[ll_ids[2]].translation + model[rl_ids[2]].translation).dot(up);
        let head_height = model[head].translation.dot(up) - foot_plane;
        let leg_length = 0.5 * (ll_len + rl_len);
        if !(head_height > 0.0 && leg_length > 0.0) {
            return Err(HumanoidError::DegenerateBodyFrame.into());
        }
        let shoulders = model[la_ids[0]]
            .translation
            .distance(model[ra_ids[0]].translation);
        let hips_pos = model[hips].translation;
        let origin = hips_pos - up * (hips_pos.dot(up) - foot_plane);
        let ranges: Vec<(f32, f32)> = spine
            .iter()
            .map(|&i| {
                map.role_of(i)
                    .and_then(default_ball_range)
                    .map_or((20.0, 20.0), |r| (r.swing_x, r.twist))
            })
            .collect();
        let total: (f32, f32) = ranges
            .iter()
            .fold((0.0, 0.0), |a, r| (a.0 + r.0, a.1 + r.1));
        let spine_flex = (0.95 * total.0).to_radians();
        let mut acc = (0.0, 0.0);
        let spine_share = ranges
            .iter()
            .map(|r| {
                acc = (acc.0 + r.0, acc.1 + r.1);
                (acc.0 / total.0, acc.1 / total.1)
            })
            .collect();
        let rig = Rig {
            frame,
            spine_flex,
            spine_share,
            hips,
            rest_spine: spine.iter().map(|&i| model[i].rotation).collect(),
            spine,
            rest_neck: neck.map_or(Quat::IDENTITY, |n| model[n].rotation),
            neck,
            head,
            arms: [la, ra],
            arm_bones: [la_ids, ra_ids],
            arm_length: [la_len, ra_len],
            joints: {
                // (Not the toes: neither the VR body nor the solver poses them; they keep the
                // input's rotation.)
                let mut j: Vec<usize> = B::ALL
                    .iter()
                    .filter(|&&r| !matches!(r, B::LeftToes | B::RightToes))
                    .filter_map(|&r| map.get(r))
                    .collect();
                j.sort_unstable();
                j.dedup();
                j
            },
            twist: [
                (B::LeftLowerArmTwist, la_ids),
                (B::RightLowerArmTwist, ra_ids),
            ]
            .map(|(r, [_, lower, hand])| {
                map.get(r)
                    .filter(|&t| {
                        t != lower
                            && skeleton.is_ancestor_or_self(lower, t)
                            && skeleton.is_ancestor_or_self(t, hand)
                            && t != hand
                    })
                    .map(|t| (t, solver.limits().get(r)))
            }),
            hand_limit: [B::LeftHand, B::RightHand].map(|r| solver.limits().get(r)),
            arm_limits: [
                [B::LeftUpperArm, B::LeftLowerArm],
                [B::RightUpperArm, B::RightLowerArm],
            ]
            .map(|r| r.map(|r| solver.limits().get(r))),
            foot_limit: [B::LeftFoot, B::RightFoot].map(|r| solver.limits().get(r)),
            leg_limits: [
                [B::LeftUpperLeg, B::LeftLowerLeg],
                [B::RightUpperLeg, B::RightLowerLeg],
            ]
            .map(|r| r.map(|r| solver.limits().get(r))),
            leg_reach: [&ll, &rl].map(|ik| {
                let [l1, l2] = ik.rest_lengths();
                let c = ik.settings().flex_min.cos();
                (l1 * l1 + l2 * l2 + 2.0 * l1 * l2 * c).max(0.0).sqrt()
            }),
            legs: [ll, rl],
            leg_bones: [ll_ids, rl_ids],
            leg_length,
            rest_hips: model[hips].rotation,
            rest_hips_pos: model[hips].translation,
            rest_head: model[head],
            rest_hands: [model[la_ids[2]], model[ra_ids[2]]],
            rest_feet: [model[ll_ids[2]], model[rl_ids[2]]],
            hand_to_elbow: [la_ids, ra_ids].map(|[_, e, h]| {
                (model[h].rotation.inverse() * (model[e].translation - model[h].translation))
                    .normalize_or_zero()
            }),
            foot_plane,
            torso: model[hips].translation.distance(model[head].translation),
            head_height,
            span: shoulders + la_len + ra_len,
            origin,
        };
        let rest_tracker = |t: BoneTransform| TrackerPose::new(t.translation, t.rotation);
        let trackers = VrTrackers {
            head: rest_tracker(rig.rest_head),
            left_hand: rest_tracker(rig.rest_hands[0]),
            right_hand: rest_tracker(rig.rest_hands[1]),
            pelvis: None,
            left_foot: None,
            right_foot: None,
        };
        let down = -up;
        let out = [frame.left, -frame.left];
        let state = State {
            started: false,
            body_yaw: 0.0,
            head_yaw: 0.0,
            lean: 0.0,
            last_lean: 0.0,
            elbow_dir: [
                (down - frame.forward * 0.3 + out[0] * 0.3).normalize(),
                (down - frame.forward * 0.3 + out[1] * 0.3).normalize(),
            ],
            knee_dir: [frame.forward; 2],
            leg_span: [0.0; 2],
            arm_unfit: [false; 2],
            hand_in_reach: [false; 2],
            pelvis_rise: [0.0; 2],
        };
        let mut locomotion = Locomotion::new(frame, leg_length);
        locomotion.reach = rig.leg_reach;
        let mut body = Self {
            locomotion,
            rig,
            goals: FullBodyGoals::default(),
            bones: (0..skeleton.len()).collect(),
            solver,
            state,
            trackers,
            dt: 1.0 / 60.0,
            calibration: VrCalibration::default(),
            settings: VrSettings::default(),
            ground: None,
            ground_offset: 0.0,
            report: VrReport::default(),
            last: skeleton.rest_pose(),
        };
        // Trackers at the rest pose are in model space; express them in player space.
        body.trackers.head.position = body.rig.origin
            + (body.rig.rest_head.translation - body.rig.origin) * body.settings.stand_height;
        body.trackers = body.to_player(&body.trackers.clone());
        Ok(body)
    }
}
