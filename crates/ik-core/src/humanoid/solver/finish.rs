//! The analytic parts every mode shares: the pelvis pin, the look-at finish and the limb
//! finish (closed-form two-bone limbs, see `analytic::finish`), and the Jacobian column
//! builders both steps use.

use super::*;

impl Solve<'_> {
    /// Puts the hips exactly on the pelvis goal (its strict priority): position and, for a
    /// full 6D goal, rotation. Returns what it pinned (the floating joint, or its translation
    /// for a position-only goal, then stays out of the Jacobian).
    ///
    /// A position-only goal is not pinned while a centre-of-mass goal is active (`balance`):
    /// shifting the hips is the main way to move the centre of mass, so the pelvis position
    /// then stays a Jacobian goal and trades off against the balance goal by priority and
    /// weight.
    pub(super) fn pin_pelvis(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goal: &EffectorGoal,
        balance: bool,
    ) -> PelvisPin {
        if !goal.wants_position() || (balance && !goal.wants_rotation()) {
            return PelvisPin::Free;
        }
        let hips = self.rig.effector_bones[Effector::Pelvis as usize];
        let parent = skeleton.parent(hips).map_or(BoneTransform::IDENTITY, |p| {
            skeleton.model_transform(pose, p)
        });
        let inv = parent.inverse();
        pose.translations[hips] = inv.transform_point(goal.position);
        if !goal.wants_rotation() {
            return PelvisPin::Position;
        }
        pose.rotations[hips] = (parent.rotation.inverse() * goal.rotation).normalize();
        PelvisPin::Full
    }

    /// Turns the head, then the bones above it, then the head again by the shortest arc from
    /// the current face direction to the look-at target, each clamped. Returns the clamp count.
    pub(super) fn finish_look_at(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
    ) -> u32 {
        let g = &goals.look_at;
        if !g.enabled || g.weight <= 0.0 {
            return 0;
        }
        self.fk_stale(pose);
        let mut hits = 0;
        let order = [
            Some(self.rig.head),
            self.rig.look_chain[0],
            self.rig.look_chain[1],
            Some(self.rig.head),
        ];
        for b in order.into_iter().flatten() {
            let head = self.s.model[self.rig.head];
            let (Some(t), Some(d)) = (
                (g.target - head.translation).try_normalize(),
                (head.rotation * self.rig.head_aim).try_normalize(),
            ) else {
                break;
            };
            if d.dot(t) > 1.0 - 1e-9 {
                break;
            }
            let parent_rot = skeleton
                .parent(b)
                .map_or(Quat::IDENTITY, |p| self.s.model[p].rotation);
            pose.rotations[b] =
                rotate_in_parent_q(parent_rot, shortest_arc(d, t), pose.rotations[b]);
            hits += clamp_joint(skeleton, pose, limit_of(&self.rig.joints, b), b);
            // The next turn reads the head from the model.
            refresh(skeleton, pose, &mut self.s.model, &self.rig.look_subtree);
        }
        hits
    }

    /// The analytic limb finish (see the module docs). Returns the clamp count.
    pub(super) fn finish_limbs(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
    ) -> u32 {
        self.fk_stale(pose);
        let mut hits = 0;
        // Goals in model space first, then the relative ones (see `GoalFrame`), each read
        // where its frame bone is once the other limbs are finished: a hand on a prop the
        // other hand holds lands on it in this solve.
        let n = self.rig.limbs.len();
        for i in 0..2 * n {
            let limb = &self.rig.limbs[i % n];
            let mut goal = goals.effectors[limb.effector];
            let frame = self.anchor_bone(&goal);
            let bit = 1u8 << limb.effector;
            if !goal.enabled || frame.is_some() != (i >= n) || self.s.exact_met & bit != 0 {
                // (A limb the finish holds alone that met its goal has not moved since: see
                // `exact_limbs`.)
                continue;
            }
            if let Some(b) = frame {
                let m = self.bone_model(skeleton, pose, b);
                goal.position = m.transform_point(goal.position);
                goal.rotation = (m.rotation * goal.rotation).normalize();
            }
            let target = LimbTarget {
                position: goal.position,
                rotation: goal.rotation,
                use_position: goal.wants_position(),
                use_rotation: goal.wants_rotation(),
            };
            hits += finish_limb(
                skeleton,
                pose,
                &mut self.s.model,
                &limb.chain,
                &target,
                self.s.global_swivel,
            );
            // The finish refreshed its path; the bones hanging off it follow.
            refresh(skeleton, pose, &mut self.s.model, &limb.subtree);
            if self.s.exact & bit != 0 && self.limb_met(limb, &target) {
                self.s.exact_met |= bit;
            }
        }
        hits
    }

    /// Whether `limb`'s end is on `target` within the tolerances (the model current along
    /// the limb).
    fn limb_met(&self, limb: &Limb, target: &LimbTarget) -> bool {
        let s = &self.rig.settings;
        let m = self.s.model[limb.chain.end];
        (!target.use_position || m.translation.distance(target.position) <= s.position_tolerance)
            && (!target.use_rotation
                || quat_angle(m.rotation, target.rotation) <= s.rotation_tolerance)
    }
}

/// Whether `pred` holds for a goal channel (see [`channel`]) that takes part in `goals`.
pub(super) fn any_channel(goals: &FullBodyGoals, pred: impl Fn(usize) -> bool) -> bool {
    goals.effectors.iter().enumerate().any(|(k, g)| {
        (g.wants_position() && pred(channel(k, false)))
            || (g.wants_rotation() && pred(channel(k, true)))
    }) || (goals.look_at.enabled && pred(channel(5, false)))
        || (goals.center_of_mass.enabled && pred(channel(6, false)))
}

/// Where a segment ends: the mapped child role's bone, else the bone's first child.
pub(super) fn segment_child(skeleton: &Skeleton, map: &HumanoidMap, role: B) -> Option<usize> {
    let side = role.side().unwrap_or(Side::Left);
    let next: &[B] = match role.on(Side::Left) {
        B::Hips => &[B::Spine],
        B::Spine => &[B::Chest, B::UpperChest, B::Neck, B::Head],
        B::Chest => &[B::UpperChest, B::Neck, B::Head],
        B::UpperChest => &[B::Neck, B::Head],
        B::Neck => &[B::Head],
        B::LeftUpperArm => &[B::LeftLowerArm],
        B::LeftLowerArm => &[B::LeftHand],
        B::LeftUpperLeg => &[B::LeftLowerLeg],
        B::LeftLowerLeg => &[B::LeftFoot],
        B::LeftFoot => &[B::LeftToes],
        _ => &[],
    };
    let bone = map.get(role)?;
    next.iter()
        .find_map(|r| map.get(r.on(side)))
        .or_else(|| skeleton.children(bone).next())
}

pub(super) fn limit_of(joints: &[Joint], bone: usize) -> JointLimit {
    joints
        .iter()
        .find(|j| j.bone == bone)
        .map_or(JointLimit::Free, |j| j.limit)
}

/// The error clamp factor of a goal whose weight this solve is `w` out of `full`: a goal that
/// gives way pulls with a tenth of the usual step, so the polish pass can undo its pull.
pub(super) fn step_factor(w: f32, full: f32) -> f32 {
    if w < full { 0.1 } else { 1.0 }
}

/// `local` turned by the model-space rotation vector `w` about its own origin.
pub(super) fn rotate_in_parent(parent_rot: Quat, w: Vec3, local: Quat) -> Quat {
    rotate_in_parent_q(parent_rot, from_rotation_vector(w), local)
}

/// How turning about (or moving along, with `translation`) `axis` through `pivot` moves
/// `point`: one Jacobian column's position rows.
pub(super) fn point_column(axis: Vec3, translation: bool, pivot: Vec3, point: Vec3) -> Vec3 {
    if translation {
        axis
    } else {
        axis.cross(point - pivot)
    }
}

/// A relative goal's position column: how the joint moves the effector point `effector`
/// (when it moves the effector) against the goal point `target` carried by the goal's frame
/// bone (when it moves that bone). A joint that moves both only counts by how it moves one
/// against the other.
pub(super) fn relative_point_column(
    axis: Vec3,
    translation: bool,
    pivot: Vec3,
    (on_effector, effector): (bool, Vec3),
    (on_frame, target): (bool, Vec3),
) -> Vec3 {
    let mut v = Vec3::ZERO;
    if on_effector {
        v += point_column(axis, translation, pivot, effector);
    }
    if on_frame {
        v -= point_column(axis, translation, pivot, target);
    }
    v
}

/// How turning about (or moving along) `axis` through `pivot` moves the centre of mass of
/// the segments below the joint (`(mass, mass-weighted position)`), in the ground plane
/// (normal `up`), unnormalised by the total mass: one column's centre-of-mass rows.
pub(super) fn com_column(
    axis: Vec3,
    translation: bool,
    pivot: Vec3,
    (m_sub, s_sub): (f32, Vec3),
    up: Vec3,
) -> Vec3 {
    let v = if translation {
        axis * m_sub
    } else {
        axis.cross(s_sub - pivot * m_sub)
    };
    v - up * v.dot(up)
}

/// A joint's Jacobian columns as model-space axes (a translation axis when the flag is set,
/// else a rotation axis), from its bone's model rotation; the count in use.
pub(super) fn joint_axes(dof: Dof, rotation: Quat) -> ([(Vec3, bool); 6], usize) {
    let mut axes = [(Vec3::ZERO, false); 6];
    let n = match dof {
        Dof::Floating => {
            axes = [
                (Vec3::X, true),
                (Vec3::Y, true),
                (Vec3::Z, true),
                (Vec3::X, false),
                (Vec3::Y, false),
                (Vec3::Z, false),
            ];
            6
        }
        Dof::Ball => {
            axes[..3].copy_from_slice(&[(Vec3::X, false), (Vec3::Y, false), (Vec3::Z, false)]);
            3
        }
        Dof::Hinge(h) => {
            axes[0] = ((rotation * h).normalize(), false);
            1
        }
    };
    (axes, n)
}

pub(super) fn set3(jac: &mut [f32], row: usize, cols: usize, col: usize, v: Vec3) {
    jac[row * cols + col] = v.x;
    jac[(row + 1) * cols + col] = v.y;
    jac[(row + 2) * cols + col] = v.z;
}

pub(super) fn clamp_len(v: Vec3, max: f32) -> Vec3 {
    let l = v.length();
    if l > max { v * (max / l) } else { v }
}

/// The angle between two unit vectors, precise for small angles.
pub(super) fn vec_angle(a: Vec3, b: Vec3) -> f32 {
    a.cross(b).length().atan2(a.dot(b))
}

/// Writes joint column `col` of `jac` (`cols` columns; the column's model-space `axis`, a
/// translation when `translation`, about `pivot`) into effector `k`'s position and rotation
/// rows (`rows`, `usize::MAX` when absent; the effector at `effector`, its goal at `goal`),
/// scaled by `scale` (position, rotation). A relative goal's rows are the effector's Jacobian
/// minus its frame's (the target point moves with the frame bone): a joint that moves both
/// only counts by how it moves one against the other. `masks`: the joint's effector bits, its
/// frame bits shifted by 8.
pub(super) fn effector_column(
    jac: &mut [f32],
    (cols, col): (usize, usize),
    (axis, translation, pivot): (Vec3, bool, Vec3),
    (masks, k): (u16, usize),
    ([rp, rr], effector, goal): ([usize; 2], Vec3, Vec3),
    (sp, sr): (f32, f32),
) {
    let (on_effector, on_frame) = (masks & (1 << k) != 0, masks & (1 << (k + 8)) != 0);
    if rp != usize::MAX {
        let v = relative_point_column(
            axis,
            translation,
            pivot,
            (on_effector, effector),
            (on_frame, goal),
        );
        set3(jac, rp, cols, col, v * sp);
    }
    if rr != usize::MAX && !translation && on_effector != on_frame {
        let sign = if on_effector { 1.0 } else { -1.0 };
        set3(jac, rr, cols, col, axis * (sign * sr));
    }
}
