//! The numerical core of [`JacobianSolver::solve`]: forward kinematics over the flat bone
//! array, task errors, the stacked Jacobian, the prioritised damped least-squares step, the
//! null-space posture term and the joint-limit active set.

use glam::{Quat, Vec2, Vec3};

use super::dense::dot;
use super::{
    Goals, JacobianError, JacobianScratch, JacobianSolver, JointKind, PostureReference,
    SolveReport, TaskKind,
};
use crate::pose::{BoneTransform, Pose};
use crate::rotation::{to_rotation_vector as rotation_vector, twist_angle, wrap_angle as wrap};
use crate::skeleton::{MAX_COORDINATE, Skeleton};

/// Damping growth beyond which a solve counts as stalled.
const MAX_MU: f64 = 1e10;

/// The level of a row of an inactive task (disabled, zero weight, or a look-at / centre of
/// mass with nothing to do): left out of the step.
const INACTIVE: usize = usize::MAX;

/// Relative merit decrease below which an iteration counts as no progress.
const STALL_PROGRESS: f64 = 1e-3;

/// Merit below which a level counts as solved for progress tracking (every task at a
/// hundredth of its tolerance).
const SOLVED_MERIT: f64 = 1e-4;

/// Largest damping factor carried into the next solve after a solve that did not converge.
const MU_CARRY: f64 = 64.0;

impl JacobianSolver {
    /// Solves in place: `pose` is the warm start (the incoming pose) and receives the result.
    ///
    /// Unreachable or conflicting goals are status in the report, never an error: the solver
    /// returns the best pose it found (residuals never increase from step to step, highest
    /// priority first). Every returned joint is inside its limit. Once converged, solving
    /// again with the same goals returns the pose bit for bit unchanged. Does not allocate
    /// (unless `scratch` was made for another solver, in which case it is rebuilt).
    ///
    /// # Errors
    /// [`JacobianError::SkeletonMismatch`], [`JacobianError::Pose`] (wrong length or
    /// non-finite pose), [`JacobianError::GoalsMismatch`] or [`JacobianError::NonFiniteGoal`];
    /// the pose is untouched then.
    pub fn solve(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &Goals,
        scratch: &mut JacobianScratch,
    ) -> Result<SolveReport, JacobianError> {
        self.check(skeleton, pose, goals, scratch)?;
        let s = scratch;
        let set = &self.settings;
        self.capture_reference(pose, s);
        // The active set (saturated joints and their limit normals) and the damping factor
        // carry over from the previous solve with this scratch: frame-to-frame warm start, and
        // the reason a converged solve repeats bit for bit.
        s.limited.fill(false);
        for j in 0..self.joints.len() {
            if self.movable(j, goals) && self.clamp_joint(j, pose, s) {
                s.limited[j] = true;
                s.saturated[j] = true;
            }
        }
        let mut mu = if s.last_converged {
            s.mu
        } else {
            s.mu.clamp(1.0, MU_CARRY)
        };
        let mut iterations = 0u32;
        let mut rejected = 0u32;
        let mut have_prev = false;
        let mut restored = false;
        let mut correcting = false;
        let mut converged = false;
        // Posture residual before a step taken with every task met.
        let mut settle_from: Option<f32> = None;
        let mut step_mu = mu;
        // Consecutive iterations without meaningful progress.
        let mut stalled = 0u32;
        loop {
            self.forward(skeleton, pose, s);
            self.evaluate(pose, goals, s);
            if have_prev && !restored {
                if let Some(k) = self.rejecting_level(s) {
                    if !correcting && s.prev_merit[k] <= self.level_allowance(k) {
                        // A lower level (or the posture term) pushed a level that was met out
                        // of tolerance by second-order drift: pull it back with a step on
                        // levels 0..=k (part of the same iteration) before judging the step.
                        correcting = true;
                        self.build_jacobian(goals, s);
                        self.update_active_set(goals, s);
                        // A level that is not positive definite leaves the levels before
                        // it in `dq` (zero at worst): the step is judged as usual.
                        let _ = self.solve_levels(mu, s, k + 1, false);
                        self.clamp_step(s);
                        self.apply_step(pose, goals, s, false);
                        continue;
                    }
                    self.restore(pose, s);
                    s.residuals.copy_from_slice(&s.prev_residuals);
                    mu *= 4.0;
                    rejected += 1;
                    restored = true;
                    correcting = false;
                    stalled += 1;
                    if iterations >= set.max_iterations || mu > MAX_MU || self.stalled(stalled) {
                        // The pose is the last accepted one; refresh its model transforms.
                        self.forward(skeleton, pose, s);
                        break;
                    }
                    continue;
                }
                mu = (mu * 0.5).max(1.0);
                if self.progress(s, settle_from) {
                    stalled = 0;
                } else {
                    stalled += 1;
                }
                if let (Some(before), Some(p)) = (settle_from, self.posture)
                    && (before - s.residuals[p]).abs() < set.posture_tolerance
                    && self.tasks_met(goals, s)
                {
                    // The posture term no longer makes progress (what is left of its step
                    // is damping leakage that the higher levels undo): keep the pose from
                    // before this step, so a repeated solve returns it bit for bit.
                    self.restore(pose, s);
                    s.residuals.copy_from_slice(&s.prev_residuals);
                    self.forward(skeleton, pose, s);
                    mu = step_mu;
                    converged = true;
                    break;
                }
            }
            settle_from = None;
            correcting = false;
            restored = false;
            have_prev = true;
            s.prev_merit.copy_from_slice(&s.merit);
            s.prev_residuals.copy_from_slice(&s.residuals);
            let met = self.tasks_met(goals, s);
            if met && self.posture.is_none() {
                converged = true;
                break;
            }
            if self.stalled(stalled) {
                // Unreachable or conflicting goals: the residuals stopped improving.
                break;
            }
            if iterations >= set.max_iterations {
                break;
            }
            self.build_jacobian(goals, s);
            self.update_active_set(goals, s);
            let posture = self.posture_pull(pose, goals, mu, s);
            let solved = self.solve_levels(mu, s, self.levels.len(), posture);
            let posture_step = if posture { self.posture_step(s) } else { 0.0 };
            if !solved || !s.dls.dq.iter().all(|v| v.is_finite()) {
                // Cannot happen with λ² > 0 and finite inputs (short of `f32` round-off on
                // a nearly singular level); never let it reach the pose.
                mu *= 4.0;
                rejected += 1;
                iterations += 1;
                restored = true;
                if mu > MAX_MU {
                    break;
                }
                continue;
            }
            if met && posture_step < set.posture_tolerance {
                converged = true;
                break;
            }
            if met && let Some(p) = self.posture {
                settle_from = Some(s.residuals[p]);
            }
            step_mu = mu;
            self.clamp_step(s);
            self.apply_step(pose, goals, s, true);
            iterations += 1;
        }
        s.mu = mu;
        s.last_converged = converged;
        let mut report = SolveReport {
            iterations,
            rejected_steps: rejected,
            converged,
            limits_hit: u32::try_from(s.limited.iter().filter(|&&l| l).count()).unwrap_or(u32::MAX),
            max_position_residual: 0.0,
            max_angle_residual: 0.0,
        };
        for (t, task) in self.tasks.iter().enumerate() {
            if !goals.tasks[t].enabled {
                continue;
            }
            let r = s.residuals[t];
            match task.kind {
                TaskKind::Position { .. } | TaskKind::CenterOfMass { .. } => {
                    report.max_position_residual = report.max_position_residual.max(r);
                }
                TaskKind::Orientation { .. } | TaskKind::LookAt { .. } => {
                    report.max_angle_residual = report.max_angle_residual.max(r);
                }
                TaskKind::Posture { .. } => {}
            }
        }
        Ok(report)
    }

    /// Evaluates the task residuals of `pose` without changing it (into
    /// [`JacobianScratch::residuals`]); returns whether every enabled row task is within
    /// tolerance. The posture task's residual is left at 0.
    ///
    /// # Errors
    /// As [`JacobianSolver::solve`].
    pub fn evaluate_pose(
        &self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &Goals,
        scratch: &mut JacobianScratch,
    ) -> Result<bool, JacobianError> {
        self.check(skeleton, pose, goals, scratch)?;
        self.forward(skeleton, pose, scratch);
        self.evaluate(pose, goals, scratch);
        Ok(self.tasks_met(goals, scratch))
    }

    fn check(
        &self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &Goals,
        scratch: &mut JacobianScratch,
    ) -> Result<(), JacobianError> {
        if skeleton.len() != self.bone_count {
            return Err(JacobianError::SkeletonMismatch {
                expected: self.bone_count,
                found: skeleton.len(),
            });
        }
        pose.validate(skeleton)?;
        if goals.tasks.len() != self.tasks.len() {
            return Err(JacobianError::GoalsMismatch {
                expected: self.tasks.len(),
                found: goals.tasks.len(),
            });
        }
        if goals.joints_locked.len() != self.joints.len() {
            return Err(JacobianError::GoalsMismatch {
                expected: self.joints.len(),
                found: goals.joints_locked.len(),
            });
        }
        for (t, g) in goals.tasks.iter().enumerate() {
            let finite = g.weight.is_finite()
                && g.weight >= 0.0
                && g.channel_weights.is_finite()
                && g.point.is_finite()
                && g.point.abs().max_element() <= MAX_COORDINATE
                && g.rotation.is_finite()
                && g.rotation.length_squared() > 1e-12
                && g.support_polygon.iter().all(|v| v.is_finite());
            if g.enabled && !finite {
                return Err(JacobianError::NonFiniteGoal { task: t });
            }
        }
        let shape = (self.dof, self.rows, self.joints.len(), self.tasks.len());
        if scratch.shape != shape
            || scratch.model.len() != self.bone_count
            || scratch.merit.len() != self.levels.len()
        {
            *scratch = self.scratch();
        }
        Ok(())
    }

    /// Whether joint `j` has columns and is not locked for this solve.
    fn movable(&self, j: usize, goals: &Goals) -> bool {
        self.col_start[j + 1] > self.col_start[j] && !goals.joints_locked[j]
    }

    /// Clamps joint `j` to its limit; when it moved, records the outward normal of the
    /// limit (in the joint's DOF coordinates: the direction from the clamped to the unclamped
    /// value) in `s.normal[j]`.
    fn clamp_joint(&self, j: usize, pose: &mut Pose, s: &mut JacobianScratch) -> bool {
        let spec = &self.joints[j];
        let b = spec.bone;
        let rest = &self.rest[b];
        let (r0, t0) = (pose.rotations[b], pose.translations[b]);
        if !spec.limit.clamp(
            rest.rotation,
            rest.translation,
            &mut pose.rotations[b],
            &mut pose.translations[b],
        ) {
            return false;
        }
        let (r1, t1) = (pose.rotations[b], pose.translations[b]);
        let rot = rotation_vector(r1.inverse() * r0);
        let tr = (t0 - t1) / self.length_scale;
        let mut n = [0.0f32; 6];
        let dims = match spec.kind {
            JointKind::Hinge { axis } => {
                n[0] = rot.dot(axis);
                1
            }
            JointKind::Ball => {
                n[..3].copy_from_slice(&rot.to_array());
                3
            }
            JointKind::Slider { axis } => {
                n[0] = tr.dot(axis);
                1
            }
            JointKind::Floating => {
                n[..3].copy_from_slice(&tr.to_array());
                n[3..].copy_from_slice(&rot.to_array());
                6
            }
            JointKind::Fixed => 0,
        };
        let norm = n[..dims].iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 1e-12 {
            for x in &mut n[..dims] {
                *x /= norm;
            }
            s.normal[j] = n;
        }
        true
    }

    fn capture_reference(&self, pose: &Pose, s: &mut JacobianScratch) {
        let Some(p) = self.posture else { return };
        let TaskKind::Posture { reference, .. } = &self.tasks[p].kind else {
            return;
        };
        for (j, spec) in self.joints.iter().enumerate() {
            let b = spec.bone;
            (s.ref_rot[j], s.ref_trans[j]) = match reference {
                PostureReference::Rest => (self.rest[b].rotation, self.rest[b].translation),
                PostureReference::Incoming => (pose.rotations[b], pose.translations[b]),
            };
        }
    }

    fn forward(&self, skeleton: &Skeleton, pose: &Pose, s: &mut JacobianScratch) {
        for &b in &self.fk_bones {
            let local = BoneTransform {
                translation: pose.translations[b],
                rotation: pose.rotations[b],
                scale: self.rest[b].scale,
            };
            s.model[b] = match skeleton.parent(b) {
                Some(p) => s.model[p].mul_transform(&local),
                None => local,
            };
        }
    }

    fn tolerance(&self, kind: &TaskKind) -> f32 {
        match kind {
            TaskKind::Position { .. } | TaskKind::CenterOfMass { .. } => {
                self.settings.position_tolerance
            }
            _ => self.settings.angle_tolerance,
        }
    }

    /// Task errors into `s.e` (weighted, normalised rows), residuals, per-level merit and
    /// damping energy, and the per-task geometry the Jacobian needs.
    fn evaluate(&self, pose: &Pose, goals: &Goals, s: &mut JacobianScratch) {
        let inv_len = self.length_scale.recip();
        s.merit.fill(0.0);
        s.level_energy.fill(0.0);
        for (t, task) in self.tasks.iter().enumerate() {
            let g = &goals.tasks[t];
            let l = &self.layout[t];
            let on = g.enabled && g.weight > 0.0;
            let ch = g.channel_weights.to_array();
            let w = g.weight;
            s.residuals[t] = 0.0;
            s.task_active[t] = false;
            for i in 0..l.rows {
                s.dls.e[l.row + i] = 0.0;
            }
            if !on {
                continue;
            }
            let mut row = l.row;
            let mut sq = 0.0f32;
            match &task.kind {
                TaskKind::Position {
                    bone,
                    local_point,
                    axes,
                } => {
                    let p = s.model[*bone].transform_point(*local_point);
                    s.task_point[t] = p;
                    let d = (g.point - p).to_array();
                    for (k, used) in axes.to_array().into_iter().enumerate() {
                        if !used {
                            continue;
                        }
                        if ch[k] > 0.0 {
                            sq += d[k] * d[k];
                        }
                        s.dls.e[row] = w * ch[k] * d[k] * inv_len;
                        row += 1;
                    }
                }
                TaskKind::Orientation { bone, axes } => {
                    let q = s.model[*bone].rotation;
                    let d = rotation_vector(g.rotation.normalize() * q.inverse()).to_array();
                    for (k, used) in axes.to_array().into_iter().enumerate() {
                        if !used {
                            continue;
                        }
                        if ch[k] > 0.0 {
                            sq += d[k] * d[k];
                        }
                        s.dls.e[row] = w * ch[k] * d[k];
                        row += 1;
                    }
                }
                TaskKind::LookAt { bone, local_axis } => {
                    let m = &s.model[*bone];
                    let p = m.translation;
                    let d = (m.rotation * *local_axis).normalize();
                    let to = g.point - p;
                    let r = to.length();
                    let b1 = d.any_orthonormal_vector();
                    let b2 = d.cross(b1);
                    s.task_point[t] = p;
                    s.task_b[t] = [b1, b2];
                    if r > 1e-6 * self.length_scale {
                        let u = to / r;
                        let axis = d.cross(u);
                        let sin = axis.length();
                        let cos = d.dot(u);
                        let angle = sin.atan2(cos);
                        let rot = if sin > 1e-9 {
                            axis * (angle / sin)
                        } else if cos < 0.0 {
                            b1 * angle
                        } else {
                            Vec3::ZERO
                        };
                        s.task_u[t] = u / r;
                        s.task_active[t] = true;
                        sq = angle * angle;
                        s.dls.e[row] = w * ch[0] * b1.dot(rot);
                        s.dls.e[row + 1] = w * ch[1] * b2.dot(rot);
                    }
                }
                TaskKind::CenterOfMass { masses, .. } => {
                    let mut moment = Vec3::ZERO;
                    for m in masses {
                        moment += s.model[m.bone].transform_point(m.local_center) * m.mass;
                    }
                    let com = moment / l.total_mass;
                    s.task_point[t] = com;
                    let target = support_target(com, g.point, &g.support_polygon, l.plane);
                    let d = target - com;
                    let (dx, dy) = (l.plane[0].dot(d), l.plane[1].dot(d));
                    if dx != 0.0 || dy != 0.0 || g.support_polygon.len() < 3 {
                        s.task_active[t] = true;
                    }
                    sq = dx * dx + dy * dy;
                    s.dls.e[row] = w * ch[0] * dx * inv_len;
                    s.dls.e[row + 1] = w * ch[1] * dy * inv_len;
                }
                TaskKind::Posture { .. } => {
                    s.residuals[t] = self.posture_residual(pose, goals, s);
                    continue;
                }
            }
            if !matches!(
                task.kind,
                TaskKind::LookAt { .. } | TaskKind::CenterOfMass { .. }
            ) {
                s.task_active[t] = true;
            }
            let r = sq.sqrt();
            s.residuals[t] = r;
            let rel = f64::from(w * r / self.tolerance(&task.kind));
            s.merit[l.level] += rel * rel;
            let mut energy = 0.0;
            for i in 0..l.rows {
                let e = f64::from(s.dls.e[l.row + i]);
                energy += e * e;
            }
            s.level_energy[l.level] += 0.5 * energy;
        }
    }

    fn tasks_met(&self, goals: &Goals, s: &JacobianScratch) -> bool {
        self.tasks.iter().enumerate().all(|(t, task)| {
            let g = &goals.tasks[t];
            task.rows() == 0
                || !g.enabled
                || g.weight <= 0.0
                || s.residuals[t] <= self.tolerance(&task.kind)
        })
    }

    /// Lexicographic acceptance: the first level whose merit changed decides. Returns the
    /// level that got worse beyond its allowance, if any.
    fn rejecting_level(&self, s: &JacobianScratch) -> Option<usize> {
        for (k, &new) in s.merit.iter().enumerate() {
            let old = s.prev_merit[k];
            if new <= old {
                if new < old * (1.0 - 1e-9) && old > 0.0 {
                    return None;
                }
            } else if new > self.level_allowance(k).max(old) {
                return Some(k);
            }
        }
        None
    }

    /// Whether the last accepted step made progress: some level's merit fell by more than
    /// [`STALL_PROGRESS`] (relative), or the posture residual moved by more than its tolerance.
    fn progress(&self, s: &JacobianScratch, posture_before: Option<f32>) -> bool {
        let levels = s
            .merit
            .iter()
            .zip(&s.prev_merit)
            .any(|(&new, &old)| old > SOLVED_MERIT && new < old * (1.0 - STALL_PROGRESS));
        let posture = match (posture_before, self.posture) {
            (Some(before), Some(p)) => {
                (before - s.residuals[p]).abs() >= self.settings.posture_tolerance
            }
            // Posture steps taken while the tasks were not met count as progress of the tasks.
            _ => false,
        };
        levels || posture
    }

    fn stalled(&self, count: u32) -> bool {
        self.settings.stall_iterations > 0 && count >= self.settings.stall_iterations
    }

    /// The merit of level `k` when each of its tasks sits exactly at its tolerance.
    fn level_allowance(&self, k: usize) -> f64 {
        self.level_tasks[k]
            .iter()
            .map(|&t| f64::from(self.tasks[t].weight).powi(2))
            .sum::<f64>()
            .max(1.0)
    }

    fn restore(&self, pose: &mut Pose, s: &mut JacobianScratch) {
        s.saturated.copy_from_slice(&s.saved_saturated);
        s.normal.copy_from_slice(&s.saved_normal);
        for (j, spec) in self.joints.iter().enumerate() {
            if self.col_start[j + 1] > self.col_start[j] {
                pose.rotations[spec.bone] = s.saved_rot[j];
                pose.translations[spec.bone] = s.saved_trans[j];
            }
        }
    }

    fn build_jacobian(&self, goals: &Goals, s: &mut JacobianScratch) {
        let len = self.length_scale;
        let inv_len = len.recip();
        let n = self.dof;
        s.dls.jac[..self.rows * n].fill(0.0);
        s.row_level.fill(INACTIVE);
        for (j, spec) in self.joints.iter().enumerate() {
            let c0 = self.col_start[j];
            if self.col_start[j + 1] == c0 {
                continue;
            }
            let m = s.model[spec.bone];
            let scale = self.col_scale[j];
            let parent = self.parent_model(spec.bone, s);
            let pivot = m.translation;
            let lin_dir = |a: Vec3| parent.rotation * (parent.scale * a) * (scale * len);
            let mut set = |c: usize, ang: Vec3, lin: Vec3| {
                s.col_ang[c] = ang;
                s.col_lin[c] = lin;
                s.col_pivot[c] = pivot;
            };
            match spec.kind {
                JointKind::Hinge { axis } => set(c0, m.rotation * axis * scale, Vec3::ZERO),
                JointKind::Ball => {
                    for (k, a) in [Vec3::X, Vec3::Y, Vec3::Z].into_iter().enumerate() {
                        set(c0 + k, m.rotation * a * scale, Vec3::ZERO);
                    }
                }
                JointKind::Slider { axis } => set(c0, Vec3::ZERO, lin_dir(axis)),
                JointKind::Floating => {
                    for (k, a) in [Vec3::X, Vec3::Y, Vec3::Z].into_iter().enumerate() {
                        set(c0 + k, Vec3::ZERO, lin_dir(a));
                        set(c0 + 3 + k, m.rotation * a * scale, Vec3::ZERO);
                    }
                }
                JointKind::Fixed => {}
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            let l = &self.layout[t];
            let g = &goals.tasks[t];
            if l.rows == 0 || !g.enabled || g.weight <= 0.0 || !s.task_active[t] {
                continue;
            }
            s.row_level[l.row..l.row + l.rows].fill(l.level);
            let w = g.weight;
            let ch = g.channel_weights.to_array();
            let joints = &self.task_joints[l.joints.0..l.joints.1];
            match &task.kind {
                TaskKind::Position { axes, .. } => {
                    let p = s.task_point[t];
                    let mask = axes.to_array();
                    for &j in joints {
                        for c in self.col_start[j]..self.col_start[j + 1] {
                            let v =
                                (s.col_lin[c] + s.col_ang[c].cross(p - s.col_pivot[c])).to_array();
                            let mut row = l.row;
                            for k in 0..3 {
                                if mask[k] {
                                    s.dls.jac[row * n + c] = w * ch[k] * v[k] * inv_len;
                                    row += 1;
                                }
                            }
                        }
                    }
                }
                TaskKind::Orientation { axes, .. } => {
                    let mask = axes.to_array();
                    for &j in joints {
                        for c in self.col_start[j]..self.col_start[j + 1] {
                            let v = s.col_ang[c].to_array();
                            let mut row = l.row;
                            for k in 0..3 {
                                if mask[k] {
                                    s.dls.jac[row * n + c] = w * ch[k] * v[k];
                                    row += 1;
                                }
                            }
                        }
                    }
                }
                TaskKind::LookAt { .. } => {
                    let p = s.task_point[t];
                    let u = s.task_u[t];
                    let [b1, b2] = s.task_b[t];
                    for &j in joints {
                        for c in self.col_start[j]..self.col_start[j + 1] {
                            let vel = s.col_lin[c] + s.col_ang[c].cross(p - s.col_pivot[c]);
                            let v = s.col_ang[c] + u.cross(vel);
                            s.dls.jac[l.row * n + c] = w * ch[0] * b1.dot(v);
                            s.dls.jac[(l.row + 1) * n + c] = w * ch[1] * b2.dot(v);
                        }
                    }
                }
                TaskKind::CenterOfMass { masses, .. } => {
                    for &b in &self.fk_bones {
                        s.com_mass[b] = 0.0;
                        s.com_moment[b] = Vec3::ZERO;
                    }
                    for m in masses {
                        s.com_mass[m.bone] += m.mass;
                        s.com_moment[m.bone] +=
                            s.model[m.bone].transform_point(m.local_center) * m.mass;
                    }
                    for &b in self.fk_bones.iter().rev() {
                        if let Some(p) = self.parent_of(b) {
                            s.com_mass[p] += s.com_mass[b];
                            let mb = s.com_moment[b];
                            s.com_moment[p] += mb;
                        }
                    }
                    let inv_m = l.total_mass.recip();
                    for &j in joints {
                        let b = self.joints[j].bone;
                        let (mass, moment) = (s.com_mass[b], s.com_moment[b]);
                        for c in self.col_start[j]..self.col_start[j + 1] {
                            let v = (s.col_lin[c] * mass
                                + s.col_ang[c].cross(moment - s.col_pivot[c] * mass))
                                * inv_m;
                            s.dls.jac[l.row * n + c] = w * ch[0] * l.plane[0].dot(v) * inv_len;
                            s.dls.jac[(l.row + 1) * n + c] =
                                w * ch[1] * l.plane[1].dot(v) * inv_len;
                        }
                    }
                }
                TaskKind::Posture { .. } => {}
            }
        }
        // Each active task's first row among its level's active rows (the kernel's order).
        for (k, members) in self.level_tasks.iter().enumerate() {
            let mut pos = 0;
            for &t in members {
                let l = &self.layout[t];
                if s.row_level[l.row] == k {
                    s.task_pos[t] = pos;
                    pos += l.rows;
                }
            }
        }
    }

    fn parent_of(&self, b: usize) -> Option<usize> {
        self.parents[b]
    }

    fn parent_model(&self, b: usize, s: &JacobianScratch) -> BoneTransform {
        self.parent_of(b)
            .map_or(BoneTransform::IDENTITY, |p| s.model[p])
    }

    /// Active set: a saturated joint whose descent direction `Jⱼᵀe` points back inside its
    /// limit (against the recorded outward normal) is released; otherwise the normal direction
    /// is projected out of its columns, so it can still slide along the limit (a ball joint
    /// keeps two of its three DOF on the cone). Run-time locked joints lose their columns.
    fn update_active_set(&self, goals: &Goals, s: &mut JacobianScratch) {
        let (m, n) = (self.rows, self.dof);
        let jac = &mut s.dls.jac[..m * n];
        let e = &s.dls.e[..m];
        for j in 0..self.joints.len() {
            let (c0, c1) = (self.col_start[j], self.col_start[j + 1]);
            if c0 == c1 {
                continue;
            }
            if goals.joints_locked[j] {
                for row in 0..m {
                    jac[row * n + c0..row * n + c1].fill(0.0);
                }
                continue;
            }
            if !s.saturated[j] {
                continue;
            }
            let normal = &s.normal[j][..c1 - c0];
            // Jⱼᵀe against the normal, row by row (each row's columns are contiguous).
            let mut outward = 0.0f64;
            for row in 0..m {
                outward +=
                    f64::from(dot(&jac[row * n + c0..row * n + c1], normal)) * f64::from(e[row]);
            }
            if outward <= 0.0 {
                s.saturated[j] = false;
                continue;
            }
            for row in 0..m {
                let cols = &mut jac[row * n + c0..row * n + c1];
                let along = dot(cols, normal);
                for (v, b) in cols.iter_mut().zip(normal) {
                    *v -= along * b;
                }
            }
        }
    }

    /// Applies a joint-space delta (radians; translations in length-scale units times `len`).
    fn apply_joint_delta(
        &self,
        kind: JointKind,
        rot: &mut Quat,
        tr: &mut Vec3,
        d: &[f32],
        len: f32,
    ) {
        match kind {
            JointKind::Hinge { axis } => {
                *rot = (*rot * Quat::from_axis_angle(axis, d[0])).normalize();
            }
            JointKind::Ball => {
                *rot = (*rot * Quat::from_scaled_axis(Vec3::new(d[0], d[1], d[2]))).normalize();
            }
            JointKind::Slider { axis } => *tr += axis * (d[0] * len),
            JointKind::Floating => {
                *tr += Vec3::new(d[0], d[1], d[2]) * len;
                *rot = (*rot * Quat::from_scaled_axis(Vec3::new(d[3], d[4], d[5]))).normalize();
            }
            JointKind::Fixed => {}
        }
    }

    /// The prioritised damped least-squares step of the first `count` levels into `s.dls.dq`,
    /// on the shared dense kernel ([`DlsBuffers::prioritized_step`](super::dense::DlsBuffers::prioritized_step)): level `k` damped by
    /// `λₖ² = μ (λ_min² + c · ½|eₖ|²)`, the first level's `J Jᵀ` from its sparsity
    /// ([`Self::level_normal_matrix`]), with `posture` the pull `s.dls.z` projected into
    /// the null space of every level. `false` when a level's normal matrix is not positive
    /// definite (the levels before it are in `dq`).
    fn solve_levels(&self, mu: f64, s: &mut JacobianScratch, count: usize, posture: bool) -> bool {
        let rows = self.levels[..count].last().map_or(0, |&(r0, mk)| r0 + mk);
        let min_d = f64::from(self.settings.min_damping);
        let err_d = f64::from(self.settings.error_damping);
        let energy = &s.level_energy;
        let (row_level, pos) = (&s.row_level, &s.task_pos);
        let gram = |jac: &[f32], k: usize, a: &mut [f32], m: usize| {
            self.level_normal_matrix(k, jac, row_level, pos, a, m);
        };
        s.dls.prioritized_step(
            rows,
            self.dof,
            &row_level[..rows],
            |k| (k != INACTIVE).then(|| (mu * (min_d + err_d * energy[k])) as f32),
            Some(&gram),
            posture,
            None,
        )
    }

    /// Difference from joint `j` to its posture reference in DOF coordinates (radians;
    /// translations in length-scale units); returns the number of DOF.
    fn posture_diff(
        &self,
        j: usize,
        pose: &Pose,
        s: &JacobianScratch,
        diff: &mut [f32; 6],
    ) -> usize {
        let spec = &self.joints[j];
        let b = spec.bone;
        let inv_len = self.length_scale.recip();
        let rot = pose.rotations[b];
        let tr = pose.translations[b];
        let (rr, rt) = (s.ref_rot[j], s.ref_trans[j]);
        match spec.kind {
            JointKind::Hinge { axis } => {
                let rest = self.rest[b].rotation.inverse();
                diff[0] = wrap(twist_angle(rest * rr, axis) - twist_angle(rest * rot, axis));
                1
            }
            JointKind::Ball => {
                diff[..3].copy_from_slice(&rotation_vector(rot.inverse() * rr).to_array());
                3
            }
            JointKind::Slider { axis } => {
                diff[0] = (rt - tr).dot(axis) * inv_len;
                1
            }
            JointKind::Floating => {
                diff[..3].copy_from_slice(&((rt - tr) * inv_len).to_array());
                diff[3..].copy_from_slice(&rotation_vector(rot.inverse() * rr).to_array());
                6
            }
            JointKind::Fixed => 0,
        }
    }

    /// The posture task's residual: the largest remaining difference of a movable joint.
    fn posture_residual(&self, pose: &Pose, goals: &Goals, s: &JacobianScratch) -> f32 {
        let mut worst = 0.0f32;
        let mut diff = [0.0f32; 6];
        for j in 0..self.joints.len() {
            if self.movable(j, goals) {
                let n = self.posture_diff(j, pose, s, &mut diff);
                worst = diff[..n].iter().fold(worst, |a, d| a.max(d.abs()));
            }
        }
        worst
    }

    /// Lower triangle of `Jₖ Jₖᵀ` over level `k`'s active rows (`m × m`, row-major, a task's
    /// rows from `pos[task]` on), from the row-major `J` (one task row of length `dof` per
    /// row), summing only over the columns both rows depend on. Used for the first level the
    /// kernel solves, which is not projected.
    fn level_normal_matrix(
        &self,
        k: usize,
        jac: &[f32],
        row_level: &[usize],
        pos: &[usize],
        a: &mut [f32],
        m: usize,
    ) {
        let n = self.dof;
        let members = &self.level_tasks[k];
        let mut pair: usize = self.level_tasks[..k]
            .iter()
            .map(|t| t.len() * (t.len() + 1) / 2)
            .sum();
        for (ia, &ta) in members.iter().enumerate() {
            let la = &self.layout[ta];
            let active_a = row_level[la.row] == k;
            for &tb in &members[..=ia] {
                let lb = &self.layout[tb];
                let ranges = &self.pair_ranges[pair];
                pair += 1;
                if !active_a || row_level[lb.row] != k {
                    continue;
                }
                for i in 0..la.rows {
                    let ra = la.row + i;
                    let at = (pos[ta] + i) * m + pos[tb];
                    let rb_end = if ta == tb { i + 1 } else { lb.rows };
                    for (jb, rb) in (lb.row..lb.row + rb_end).enumerate() {
                        let mut sum = 0.0;
                        for &(c0, c1) in ranges {
                            sum += dot(
                                &jac[ra * n + c0..ra * n + c1],
                                &jac[rb * n + c0..rb * n + c1],
                            );
                        }
                        a[at + jb] = sum;
                    }
                }
            }
        }
    }

    /// The posture pull toward the reference into `s.dls.z` (per column, before the
    /// projection); `false` when the posture task is off.
    fn posture_pull(&self, pose: &Pose, goals: &Goals, mu: f64, s: &mut JacobianScratch) -> bool {
        let Some(p) = self.posture else { return false };
        let TaskKind::Posture {
            joint_weights,
            gain,
            ..
        } = &self.tasks[p].kind
        else {
            return false;
        };
        let g = &goals.tasks[p];
        if !g.enabled || g.weight <= 0.0 {
            return false;
        }
        s.dls.z.fill(0.0);
        let mut diff = [0.0f32; 6];
        for j in 0..self.joints.len() {
            let c0 = self.col_start[j];
            if !self.movable(j, goals) || s.saturated[j] {
                continue;
            }
            let n = self.posture_diff(j, pose, s, &mut diff);
            let wj = joint_weights.get(j).copied().unwrap_or(1.0) * gain * g.weight.min(1.0);
            let k = (f64::from(wj / self.col_scale[j]) / mu) as f32;
            for (i, d) in diff[..n].iter().enumerate() {
                s.dls.z[c0 + i] = k * d;
            }
        }
        true
    }

    /// The largest joint motion (radians / length-scale fractions) the projected posture term
    /// of the last step causes.
    fn posture_step(&self, s: &JacobianScratch) -> f32 {
        let mut step = 0.0f32;
        for j in 0..self.joints.len() {
            let (c0, c1) = (self.col_start[j], self.col_start[j + 1]);
            let sq: f32 = s.dls.pz[c0..c1].iter().map(|v| v * v).sum();
            step = step.max(sq.sqrt() * self.col_scale[j]);
        }
        step
    }

    fn clamp_step(&self, s: &mut JacobianScratch) {
        let mut ratio = 1.0f32;
        let max_a = self.settings.max_step_angle;
        let max_t = self.settings.max_step_translation;
        let dq = &mut s.dls.dq;
        for (j, spec) in self.joints.iter().enumerate() {
            let c0 = self.col_start[j];
            if self.col_start[j + 1] == c0 {
                continue;
            }
            let sc = self.col_scale[j];
            let norm =
                |a: usize, n: usize| dq[a..a + n].iter().map(|v| v * v).sum::<f32>().sqrt() * sc;
            let (rot, tr) = match spec.kind {
                JointKind::Hinge { .. } => (norm(c0, 1), 0.0),
                JointKind::Ball => (norm(c0, 3), 0.0),
                JointKind::Slider { .. } => (0.0, norm(c0, 1)),
                JointKind::Floating => (norm(c0 + 3, 3), norm(c0, 3)),
                JointKind::Fixed => (0.0, 0.0),
            };
            ratio = ratio.max(rot / max_a).max(tr / max_t);
        }
        if ratio > 1.0 {
            for v in dq.iter_mut() {
                *v /= ratio;
            }
        }
    }

    /// Applies `s.dls.dq` and clamps every moved joint; `save` keeps the previous pose for a
    /// rejection (a correction step keeps the pose saved before the step it corrects).
    fn apply_step(&self, pose: &mut Pose, goals: &Goals, s: &mut JacobianScratch, save: bool) {
        if save {
            s.saved_saturated.copy_from_slice(&s.saturated);
            s.saved_normal.copy_from_slice(&s.normal);
        }
        for (j, spec) in self.joints.iter().enumerate() {
            let (c0, c1) = (self.col_start[j], self.col_start[j + 1]);
            if c0 == c1 {
                continue;
            }
            let b = spec.bone;
            if save {
                s.saved_rot[j] = pose.rotations[b];
                s.saved_trans[j] = pose.translations[b];
            }
            if goals.joints_locked[j] {
                continue;
            }
            let mut d = [0.0f32; 6];
            let sc = self.col_scale[j];
            for c in c0..c1 {
                d[c - c0] = s.dls.dq[c] * sc;
            }
            if d.iter().all(|&x| x == 0.0) {
                continue;
            }
            self.apply_joint_delta(
                spec.kind,
                &mut pose.rotations[b],
                &mut pose.translations[b],
                &d,
                self.length_scale,
            );
            if self.clamp_joint(j, pose, s) {
                s.saturated[j] = true;
                s.limited[j] = true;
            }
        }
    }
}

/// The ground-plane point the centre of mass should move to: the support point, or the
/// nearest point of the convex support polygon (the centre of mass itself when inside).
fn support_target(com: Vec3, point: Vec3, polygon: &[Vec3], plane: [Vec3; 2]) -> Vec3 {
    if polygon.len() < 3 {
        return point;
    }
    let flat = |v: Vec3| Vec2::new(plane[0].dot(v), plane[1].dot(v));
    let c = flat(com);
    let n = polygon.len();
    let (mut pos, mut neg) = (false, false);
    let mut best = c;
    let mut best_d = f32::INFINITY;
    for i in 0..n {
        let a = flat(polygon[i]);
        let b = flat(polygon[(i + 1) % n]);
        let ab = b - a;
        let cross = ab.perp_dot(c - a);
        if cross > 0.0 {
            pos = true;
        } else if cross < 0.0 {
            neg = true;
        }
        let t = if ab.length_squared() > 0.0 {
            ((c - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let q = a + ab * t;
        let d = q.distance_squared(c);
        if d < best_d {
            best_d = d;
            best = q;
        }
    }
    if !(pos && neg) {
        return com;
    }
    com + plane[0] * (best.x - c.x) + plane[1] * (best.y - c.y)
}
