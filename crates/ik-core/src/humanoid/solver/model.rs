//! The solve's model of the body: forward kinematics of the bones the solver reads, relative
//! goals resolved onto their anchors, the residuals measured on a pose, the centre of mass and
//! the look-at's directions.

use super::*;

impl Solve<'_> {
    /// Forward kinematics of the bones the solver reads into `self.s.model`, from the rig's
    /// own parents and rest scales (`fk_links`: the skeleton it was built for, the one every
    /// solve is checked against by bone count).
    pub(super) fn fk(&mut self, pose: &Pose) {
        self.s
            .model
            .resize(self.rig.bone_count, BoneTransform::IDENTITY);
        for link in &self.rig.fk_links {
            let b = link.bone;
            let local = pose.local_scaled(b, link.scale);
            self.s.model[b] = match link.parent {
                Some(p) => self.s.model[p].mul_transform(&local),
                None => local,
            };
        }
        self.s.model_fresh = true;
    }

    /// Whether the pelvis goal is missed by `pose` (so the pose meets not every goal): from
    /// forward kinematics of the hips and their ancestors only, with the arithmetic and the
    /// test of [`Solve::fk`] and [`Solve::measure`]. A tracking solve then skips measuring the
    /// incoming pose (a full FK pass and every residual): only its all-met shortcut reads it,
    /// and in a game the pelvis target moves nearly every frame.
    pub(super) fn pelvis_missed(
        &mut self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
    ) -> bool {
        let g = goals.get(Effector::Pelvis);
        if !g.enabled || g.frame != GoalFrame::Model {
            return false;
        }
        self.s
            .model
            .resize(self.rig.bone_count, BoneTransform::IDENTITY);
        self.s.model_fresh = false;
        for &b in &self.rig.pelvis_fk {
            let local = pose.local_transform(skeleton, b);
            self.s.model[b] = match skeleton.parent(b) {
                Some(p) => self.s.model[p].mul_transform(&local),
                None => local,
            };
        }
        let s = &self.rig.settings;
        let m = &self.s.model[self.rig.effector_bones[Effector::Pelvis as usize]];
        (g.wants_position() && m.translation.distance(g.position) > s.position_tolerance)
            || (g.wants_rotation() && quat_angle(m.rotation, g.rotation) > s.rotation_tolerance)
    }

    /// [`Solve::fk`] unless the model is current already (`model_fresh`: the limb and look-at
    /// finishes refresh what they move with the same arithmetic, parents first, so the model
    /// they leave is bit for bit what a full pass would compute).
    pub(super) fn fk_stale(&mut self, pose: &Pose) {
        if !self.s.model_fresh {
            self.fk(pose);
        }
    }

    /// Checks the goals' frames (see [`GoalFrame`]) and prepares the relative tasks: which
    /// joints move each relative goal's frame bone.
    pub(super) fn check_frames(
        &mut self,
        skeleton: &Skeleton,
        goals: &FullBodyGoals,
    ) -> Result<(), HumanoidError> {
        self.s.relative = false;
        for (k, g) in goals.effectors.iter().enumerate() {
            let bad = match g.frame {
                GoalFrame::Model => false,
                _ if k == Effector::Pelvis as usize => true,
                GoalFrame::Effector(e) => {
                    e as usize == k || goals.effectors[e as usize].frame != GoalFrame::Model
                }
                GoalFrame::Bone(b) => {
                    b >= skeleton.len()
                        || skeleton.is_ancestor_or_self(self.rig.effector_bones[k], b)
                }
            };
            if bad {
                return Err(HumanoidError::InvalidGoalFrame(Effector::ALL[k]));
            }
            self.s.relative |= g.enabled && g.frame != GoalFrame::Model;
        }
        self.s.anchor_affects.fill(0);
        if self.s.relative {
            for (ji, j) in self.rig.joints.iter().enumerate() {
                for (k, g) in goals.effectors.iter().enumerate() {
                    if let Some(anchor) = self.anchor_bone(g)
                        && skeleton.is_ancestor_or_self(j.bone, anchor)
                    {
                        self.s.anchor_affects[ji] |= 1 << k;
                    }
                }
            }
        }
        Ok(())
    }

    /// The frame bone of an enabled relative goal.
    pub(super) fn anchor_bone(&self, g: &EffectorGoal) -> Option<usize> {
        match g.frame {
            _ if !g.enabled => None,
            GoalFrame::Model => None,
            GoalFrame::Effector(e) => Some(self.rig.effector_bones[e as usize]),
            GoalFrame::Bone(b) => Some(b),
        }
    }

    /// `goals` with every relative effector goal in model space at the current pose (read
    /// from `self.s.model`, which must be fresh along the frame bones' ancestors, as after
    /// `fk`); `None` (use `goals` as they are) when no goal is relative.
    pub(super) fn resolved(
        &self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
    ) -> Option<FullBodyGoals> {
        if !self.s.relative {
            return None;
        }
        let mut out = *goals;
        for g in &mut out.effectors {
            if let Some(b) = self.anchor_bone(g) {
                let frame = self.bone_model(skeleton, pose, b);
                g.position = frame.transform_point(g.position);
                g.rotation = (frame.rotation * g.rotation).normalize();
                g.frame = GoalFrame::Model;
            }
        }
        Some(out)
    }

    /// The model transform of bone `b`: from `self.s.model` for the bones forward kinematics
    /// visits, else composed from the nearest such ancestor.
    pub(super) fn bone_model(&self, skeleton: &Skeleton, pose: &Pose, b: usize) -> BoneTransform {
        if self.rig.in_fk[b] {
            return self.s.model[b];
        }
        let local = pose.local_transform(skeleton, b);
        match skeleton.parent(b) {
            Some(p) => self.bone_model(skeleton, pose, p).mul_transform(&local),
            None => local,
        }
    }

    /// Fills `report`'s residuals from `self.s.model`; returns whether all are within tolerance.
    pub(super) fn measure(
        &self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
        report: &mut FullBodyReport,
    ) -> bool {
        let resolved = self.resolved(skeleton, pose, goals);
        let goals = resolved.as_ref().unwrap_or(goals);
        let s = &self.rig.settings;
        let mut ok = true;
        for (k, g) in goals.effectors.iter().enumerate() {
            let m = &self.s.model[self.rig.effector_bones[k]];
            let mut r = GoalResidual::default();
            if g.wants_position() {
                r.position = m.translation.distance(g.position);
                ok &= r.position <= s.position_tolerance;
            }
            if g.wants_rotation() {
                r.rotation = quat_angle(m.rotation, g.rotation);
                ok &= r.rotation <= s.rotation_tolerance;
            }
            report.residuals[k] = r;
        }
        report.center_of_mass = 0.0;
        if let Some((err, _)) = self.com_error_from_model(goals) {
            report.center_of_mass = err.length();
            ok &= report.center_of_mass <= s.com_tolerance;
        }
        report.look_at = 0.0;
        if let Some((d, t)) = self.look_dirs(goals) {
            report.look_at = vec_angle(d, t);
            ok &= report.look_at <= s.rotation_tolerance;
        }
        ok
    }

    /// Updates the segment positions from `self.s.model` and returns the ground-plane error of the
    /// centre of mass (target − current) and the total mass, if the goal is active.
    pub(super) fn com_error(&mut self, goals: &FullBodyGoals) -> Option<(Vec3, f32)> {
        let g = &goals.center_of_mass;
        if !g.enabled || g.weight <= 0.0 {
            return None;
        }
        let (mut total, mut sum) = (0.0f32, Vec3::ZERO);
        for (i, seg) in self.rig.segments.iter().enumerate() {
            let p = self.s.model[seg.bone].transform_point(seg.local_point);
            self.s.segment_pos[i] = p;
            let m = self.rig.masses.get(seg.role);
            total += m;
            sum += p * m;
        }
        if total <= 0.0 {
            return None;
        }
        let d = g.target - sum / total;
        Some((d - self.rig.up * d.dot(self.rig.up), total))
    }

    pub(super) fn com_error_from_model(&self, goals: &FullBodyGoals) -> Option<(Vec3, f32)> {
        let g = &goals.center_of_mass;
        if !g.enabled || g.weight <= 0.0 {
            return None;
        }
        let c = self.com_of_model();
        let total = self.rig.masses.total();
        let d = g.target - c?;
        Some((d - self.rig.up * d.dot(self.rig.up), total))
    }

    pub(super) fn com_of_model(&self) -> Option<Vec3> {
        let (mut total, mut sum) = (0.0f32, Vec3::ZERO);
        for seg in &self.rig.segments {
            let m = self.rig.masses.get(seg.role);
            total += m;
            sum += self.s.model[seg.bone].transform_point(seg.local_point) * m;
        }
        (total > 0.0).then(|| sum / total)
    }

    /// The head's current aim direction and the wanted one, if the look-at is active.
    pub(super) fn look_dirs(&self, goals: &FullBodyGoals) -> Option<(Vec3, Vec3)> {
        let g = &goals.look_at;
        if !g.enabled || g.weight <= 0.0 {
            return None;
        }
        let m = &self.s.model[self.rig.head];
        let t = (g.target - m.translation).try_normalize()?;
        Some(((m.rotation * self.rig.head_aim).normalize(), t))
    }
}
