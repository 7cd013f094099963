//! The VR body's posing primitives: model-space writes through the parent, joint-limit
//! clamps, the upper body from the lean and heading, and the analytic limb on the
//! full-body solver's hinge.

use core::f32::consts::PI;

use glam::{Quat, Vec3};

use super::{TrackerPose, VrBody};
use crate::analytic::{LimbGoal, LimbReport, Pole, TwoBoneIk};
use crate::limits::JointLimit;
use crate::pose::{BoneTransform, Pose};
use crate::skeleton::Skeleton;
use crate::stack::{PoseBuffer, StackError};

/// The upper body's inputs for one pass.
#[derive(Clone, Copy, Debug)]
pub(super) struct UpperInput {
    pub(super) lean: f32,
    pub(super) body_yaw: f32,
    pub(super) twist: f32,
    pub(super) head_delta: Quat,
    pub(super) head: Vec3,
    pub(super) pelvis: Option<TrackerPose>,
}

impl VrBody {
    /// Sets bone `bone`'s model rotation (keeping its translation), through its parent.
    pub(super) fn set_model_rotation(
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        bone: usize,
        rotation: Quat,
    ) {
        let parent = skeleton.parent(bone).map_or(Quat::IDENTITY, |p| {
            buffer.model_transform(skeleton, p).rotation
        });
        let t = buffer.pose().translations[bone];
        buffer.set_local(bone, (parent.inverse() * rotation).normalize(), t);
    }

    pub(super) fn set_model_translation(
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        bone: usize,
        translation: Vec3,
    ) {
        let local = match skeleton.parent(bone) {
            Some(p) => buffer
                .model_transform(skeleton, p)
                .inverse()
                .transform_point(translation),
            None => translation,
        };
        let r = buffer.pose().rotations[bone];
        buffer.set_local(bone, r, local);
    }

    /// Whether arm `side` (upper arm, elbow, forearm twist bone, hand) is within the
    /// full-body solver's joint limits as posed.
    pub(super) fn arm_within_limits(
        &self,
        skeleton: &Skeleton,
        buffer: &PoseBuffer,
        side: usize,
    ) -> bool {
        let [upper, lower, hand] = self.rig.arm_bones[side];
        let pose = buffer.pose();
        let inside = |bone: usize, limit: &JointLimit| within_limit(skeleton, pose, bone, limit);
        inside(upper, &self.rig.arm_limits[side][0])
            && inside(lower, &self.rig.arm_limits[side][1])
            && inside(hand, &self.rig.hand_limit[side])
            && self.rig.twist[side].is_none_or(|(t, l)| inside(t, &l))
    }

    /// Whether leg `side` (upper leg, knee) is within the full-body solver's joint limits as
    /// posed.
    pub(super) fn leg_within_limits(
        &self,
        skeleton: &Skeleton,
        buffer: &PoseBuffer,
        side: usize,
    ) -> bool {
        let pose = buffer.pose();
        self.rig.leg_bones[side][..2]
            .iter()
            .zip(&self.rig.leg_limits[side])
            .all(|(&bone, limit)| within_limit(skeleton, pose, bone, limit))
    }

    /// Hands the hand's twist about the forearm to an in-line forearm twist bone (if the rig
    /// has one), within the twist bone's range, keeping the hand's model rotation.
    pub(super) fn twist_forearm(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        side: usize,
        hand_rot: Quat,
    ) {
        let Some((tw, JointLimit::Hinge { axis, min, max })) = self.rig.twist[side] else {
            return;
        };
        let JointLimit::SwingTwist(hand_limit) = self.rig.hand_limit[side] else {
            return;
        };
        let hand = self.rig.arm_bones[side][2];
        let hand_rest = skeleton.bones()[hand].rest.rotation;
        let tw_rest = skeleton.bones()[tw].rest.rotation;
        let hand_twist = |buffer: &PoseBuffer| {
            crate::rotation::twist_angle(
                hand_rest.inverse() * buffer.pose().rotations[hand],
                hand_limit.twist_axis,
            )
        };
        let before = hand_twist(buffer);
        if before.abs() < 1e-4 {
            return;
        }
        let start = buffer.pose().rotations[tw];
        let current = crate::rotation::twist_angle(tw_rest.inverse() * start, axis);
        let mut best = (before.abs(), start);
        for sign in [1.0_f32, -1.0] {
            let angle = (current + sign * before).clamp(min, max);
            let r = tw_rest * Quat::from_axis_angle(axis, angle);
            let t = buffer.pose().translations[tw];
            buffer.set_local(tw, r, t);
            Self::set_model_rotation(skeleton, buffer, hand, hand_rot);
            let after = hand_twist(buffer).abs();
            if after < best.0 {
                best = (after, r);
            }
        }
        let t = buffer.pose().translations[tw];
        buffer.set_local(tw, best.1, t);
        Self::set_model_rotation(skeleton, buffer, hand, hand_rot);
    }

    pub(super) fn clamp_to_limit(
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        bone: usize,
        limit: &JointLimit,
    ) {
        let rest = &skeleton.bones()[bone].rest;
        let (mut r, mut t) = (
            buffer.pose().rotations[bone],
            buffer.pose().translations[bone],
        );
        if limit.clamp(rest.rotation, rest.translation, &mut r, &mut t) {
            buffer.set_local(bone, r, t);
        }
    }

    /// Poses hips, spine and neck for `input` and returns where the hips go for the head bone
    /// to land on its target (or the pelvis tracker's position).
    pub(super) fn pose_upper(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        input: UpperInput,
    ) -> Vec3 {
        let s = &self.settings;
        let (up, left) = (self.rig.frame.up, self.rig.frame.left);
        let delta = |yaw_share: f32, lean_share: f32| {
            Quat::from_axis_angle(up, input.body_yaw + input.twist * yaw_share)
                * Quat::from_axis_angle(left, input.lean * lean_share)
        };
        let hips_rot = match input.pelvis {
            Some(p) => p.rotation,
            None => delta(0.0, s.hip_lean) * self.rig.rest_hips,
        };
        Self::set_model_rotation(skeleton, buffer, self.rig.hips, hips_rot);
        let mut chest_delta = delta(0.0, s.hip_lean);
        for (k, &(flex, twist)) in self.rig.spine_share.iter().enumerate() {
            chest_delta = delta(twist, s.hip_lean + (1.0 - s.hip_lean) * flex);
            let r = chest_delta * self.rig.rest_spine[k];
            Self::set_model_rotation(skeleton, buffer, self.rig.spine[k], r);
        }
        if let Some(neck) = self.rig.neck {
            let d = chest_delta.slerp(input.head_delta, s.neck_share);
            Self::set_model_rotation(skeleton, buffer, neck, d * self.rig.rest_neck);
        }
        let hips_now = buffer.model_transform(skeleton, self.rig.hips).translation;
        let head_now = buffer.model_transform(skeleton, self.rig.head).translation;
        match input.pelvis {
            Some(p) => p.position,
            None => hips_now + (input.head - head_now),
        }
    }

    /// Solves leg `side` onto `foot` (position and rotation) with the knee toward `pole`
    /// ([`VrBody::solve_limb`]).
    pub(super) fn solve_leg(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        side: usize,
        foot: &BoneTransform,
        pole: Pole,
    ) -> Result<LimbReport, StackError> {
        let mut goal = LimbGoal::new(foot.translation).with_orientation(foot.rotation);
        goal.pole = pole;
        let limits = &self.rig.leg_limits[side];
        self.solve_limb(
            skeleton,
            buffer,
            &self.rig.legs[side],
            [&limits[0], &limits[1]],
            &goal,
        )
    }

    /// Whether leg `side` solved onto `foot` with the knee toward `pole` by the analytic limb
    /// alone (no limit clamps) has its hip and knee within their limits; the leg is left so
    /// posed. The cheap test of a swivel before [`VrBody::solve_leg`] poses it.
    pub(super) fn probe_leg(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        side: usize,
        foot: &BoneTransform,
        pole: Vec3,
    ) -> Result<bool, StackError> {
        let ik = &self.rig.legs[side];
        let goal = LimbGoal::new(foot.translation)
            .with_orientation(foot.rotation)
            .with_pole(pole);
        let root = ik.bones()[0];
        let parent = match skeleton.parent(root) {
            Some(p) => buffer.model_transform(skeleton, p),
            None => BoneTransform::IDENTITY,
        };
        let report = ik.solve_with_parent(skeleton, buffer.pose_unchecked_mut(), &goal, &parent);
        buffer.invalidate_from(root);
        report?;
        Ok(self.leg_within_limits(skeleton, buffer, side))
    }

    /// Solves arm `side` onto the hand's `position` and (normalised) `rotation` with the
    /// elbow toward `pole` ([`VrBody::solve_limb`]; the forearm twist is the caller's).
    pub(super) fn solve_arm(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        side: usize,
        position: Vec3,
        rotation: Quat,
        pole: Vec3,
    ) -> Result<LimbReport, StackError> {
        let goal = LimbGoal::new(position)
            .with_orientation(rotation)
            .with_pole(pole);
        let limits = &self.rig.arm_limits[side];
        self.solve_limb(
            skeleton,
            buffer,
            &self.rig.arms[side],
            [&limits[0], &limits[1]],
            &goal,
        )
    }

    /// Solves a limb with the analytic two-bone solver, then puts its mid joint exactly on the
    /// full-body solver's hinge (`hinge`; the two-bone solve may leave a small off-axis swing
    /// when the rest limb is bent out of the hinge's plane), re-aims the upper bone at the
    /// target (the reach changes only to second order) and sets the tip's rotation exactly.
    fn solve_limb(
        &self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
        ik: &TwoBoneIk,
        [root_limit, hinge]: [&JointLimit; 2],
        goal: &LimbGoal,
    ) -> Result<LimbReport, StackError> {
        let [root, mid, tip] = ik.bones();
        let parent = match skeleton.parent(root) {
            Some(p) => buffer.model_transform(skeleton, p),
            None => BoneTransform::IDENTITY,
        };
        let mut report = ik.solve_with_parent(skeleton, buffer.pose_unchecked_mut(), goal, &parent);
        buffer.invalidate_from(root);
        // A swivel that turns the root joint past its range (an upper arm twisted too far) is
        // clamped, and the limb solved again keeping the clamped bend plane.
        for _ in 0..4 {
            let rest = &skeleton.bones()[root].rest;
            let (mut r, mut t) = (
                buffer.pose().rotations[root],
                buffer.pose().translations[root],
            );
            if !root_limit.clamp(rest.rotation, rest.translation, &mut r, &mut t) {
                break;
            }
            buffer.set_local(root, r, t);
            let keep = LimbGoal {
                pole: Pole::Keep,
                ..*goal
            };
            report = ik.solve_with_parent(skeleton, buffer.pose_unchecked_mut(), &keep, &parent);
            buffer.invalidate_from(root);
        }
        let report = report?;
        let rest = &skeleton.bones()[mid].rest;
        let (mut r, mut t) = (
            buffer.pose().rotations[mid],
            buffer.pose().translations[mid],
        );
        if hinge.clamp(rest.rotation, rest.translation, &mut r, &mut t) {
            buffer.set_local(mid, r, t);
            // Bend about the hinge so that the limb spans the root-to-target distance
            // exactly again (removing the off-axis swing changed it a little).
            if let JointLimit::Hinge { axis, .. } = *hinge {
                let root_p = buffer.model_transform(skeleton, root).translation;
                let mid_m = buffer.model_transform(skeleton, mid);
                let tip_p = buffer.model_transform(skeleton, tip).translation;
                let a = (mid_m.rotation * axis).normalize_or_zero();
                let (m, u) = (mid_m.translation - root_p, tip_p - mid_m.translation);
                let u_par = a * a.dot(u);
                let (u_perp, w) = (u - u_par, a.cross(u));
                let (b, c) = (m.dot(u_perp), m.dot(w));
                let want = goal.target.distance_squared(root_p);
                let d = 0.5 * (want - m.length_squared() - u.length_squared()) - m.dot(u_par);
                let amp = b.hypot(c);
                if amp > 1e-9 && d.abs() <= amp && a != Vec3::ZERO {
                    let phi = c.atan2(b);
                    let off = (d / amp).clamp(-1.0, 1.0).acos();
                    let theta = [phi + off, phi - off]
                        .into_iter()
                        .map(|x| (x + PI).rem_euclid(2.0 * PI) - PI)
                        .min_by(|x, y| x.abs().total_cmp(&y.abs()))
                        .unwrap_or(0.0);
                    let (mut r2, mut t2) = (r * Quat::from_axis_angle(axis, theta), t);
                    hinge.clamp(rest.rotation, rest.translation, &mut r2, &mut t2);
                    buffer.set_local(mid, r2.normalize(), t2);
                }
            }
            let root_m = buffer.model_transform(skeleton, root);
            let tip_now = buffer.model_transform(skeleton, tip).translation;
            let (from, to) = (
                (tip_now - root_m.translation).normalize_or_zero(),
                (goal.target - root_m.translation).normalize_or_zero(),
            );
            if from != Vec3::ZERO && to != Vec3::ZERO {
                let arc = Quat::from_rotation_arc(from, to);
                Self::set_model_rotation(skeleton, buffer, root, arc * root_m.rotation);
            }
            if let Some(o) = goal.orientation {
                Self::set_model_rotation(skeleton, buffer, tip, o);
            }
        }
        Ok(report)
    }
}

/// Whether `bone` is posed within `limit` (about its rest pose, with the limits' slack).
fn within_limit(skeleton: &Skeleton, pose: &Pose, bone: usize, limit: &JointLimit) -> bool {
    let rest = &skeleton.bones()[bone].rest;
    limit.contains(
        rest.rotation,
        rest.translation,
        pose.rotations[bone],
        pose.translations[bone],
        crate::limits::LIMIT_SLACK,
    )
}
