//! Cold solves' Jacobian step ([`Solve::jacobian`]: block-sparse
//! normal equations over the goal rows, soft active set, goals that give way weakened), the
//! null-space posture term and the step's application within the joint limits.

use super::*;

impl Solve<'_> {
    /// Damped-least-squares iterations until the residuals are below `coarse` × tolerance or
    /// `budget` runs out. Returns (iterations, clamps in the last step).
    pub(super) fn jacobian(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        coarse: f32,
        budget: u32,
        polish: bool,
    ) -> (u32, u32) {
        let s = self.rig.settings;
        let cols = self.rig.cols;
        let mut hits = 0;
        // Per-channel weights this solve (demoted channels weakened).
        let mut wp = [0.0f32; 5];
        let mut wr = [0.0f32; 5];
        // In a polish pass the goals that gave way are left out entirely.
        let factor = |c: usize| {
            if polish && self.sits_out(c) {
                0.0
            } else {
                self.demotion(c)
            }
        };
        for (k, g) in goals.effectors.iter().enumerate() {
            wp[k] = g.position_weight * factor(channel(k, false));
            wr[k] = g.rotation_weight * factor(channel(k, true));
        }
        let look_weight = goals.look_at.weight * factor(channel(5, false));
        let com_weight = goals.center_of_mass.weight * factor(channel(6, false));
        for it in 0..budget {
            self.fk_stale(pose);
            // Relative goals (see `GoalFrame`) at where their frame bones are now.
            let resolved = self.resolved(skeleton, pose, goals);
            let goals = resolved.as_ref().unwrap_or(goals);
            // Rows: per effector position (3) and rotation (3), then look-at (3).
            let mut rows = 0;
            let mut done = true;
            let mut row_of = [[usize::MAX; 2]; 7];
            let mut row_level = [0u8; MAX_ROWS];
            for (k, g) in goals.effectors.iter().enumerate() {
                if (self.s.pelvis_pin != PelvisPin::Free && k == Effector::Pelvis as usize)
                    || self.s.exact_met & (1 << k) != 0
                {
                    // Exact already (the pin, or a limb the finish holds: see `exact_limbs`).
                    continue;
                }
                let m = self.s.model[self.rig.effector_bones[k]];
                // Position rows, then rotation rows.
                for rotation in [false, true] {
                    let (wanted, w) = if rotation {
                        (g.wants_rotation(), wr[k])
                    } else {
                        (g.wants_position(), wp[k])
                    };
                    if !wanted || w <= 0.0 {
                        continue;
                    }
                    let (err, tolerance, max_step, full) = if rotation {
                        (
                            to_rotation_vector(g.rotation * m.rotation.inverse()),
                            s.rotation_tolerance,
                            s.max_rotation_step,
                            g.rotation_weight,
                        )
                    } else {
                        (
                            g.position - m.translation,
                            s.position_tolerance,
                            s.max_position_step,
                            g.position_weight,
                        )
                    };
                    done &= err.length() <= tolerance * coarse;
                    let err = clamp_len(err, max_step * step_factor(w, full)) * w.sqrt();
                    row_of[k][usize::from(rotation)] = push_block(
                        &mut self.s.dls.e,
                        &mut row_level,
                        &mut rows,
                        err,
                        g.priority,
                    );
                }
            }
            let look = if look_weight > 0.0 {
                self.look_dirs(goals)
            } else {
                None
            };
            if let Some((d, t)) = look {
                let met = vec_angle(d, t) <= s.rotation_tolerance * coarse;
                done &= met;
                let err = clamp_len(t - d, 2.0 * step_factor(look_weight, goals.look_at.weight))
                    * look_weight.sqrt();
                row_of[5][0] = push_block(
                    &mut self.s.dls.e,
                    &mut row_level,
                    &mut rows,
                    err,
                    goals.look_at.priority,
                );
            }
            let com = if com_weight > 0.0 {
                self.com_error(goals)
            } else {
                None
            };
            if let Some((err, _)) = com {
                let met = err.length() <= s.com_tolerance * coarse;
                done &= met;
                // Within its (loose) tolerance the balance goal holds instead of pulling: its
                // leftover error would otherwise keep the pelvis goal it trades with off its
                // target.
                let err = if err.length() <= s.com_tolerance {
                    Vec3::ZERO
                } else {
                    clamp_len(err, s.max_position_step) * com_weight.sqrt()
                };
                row_of[6][0] = push_block(
                    &mut self.s.dls.e,
                    &mut row_level,
                    &mut rows,
                    err,
                    goals.center_of_mass.priority,
                );
            }
            // With posture following on, the first iteration always takes the null-space step
            // toward the reference (goals already met or not), so animation-driven solves keep
            // drifting back to the reference frame after frame.
            let mut posture_step = false;
            if s.posture_gain > 0.0 && rows > 0 {
                self.posture(skeleton, pose);
                posture_step = it == 0 && self.s.dls.z.iter().any(|v| v.abs() > 1e-6);
            }
            if (done && !posture_step) || rows == 0 {
                return (it, hits);
            }
            // Jacobian, row-major rows × cols.
            let jac = &mut self.s.dls.jac[..rows * cols];
            jac.fill(0.0);
            let look_w = look_weight.max(0.0).sqrt();
            let head_dir = look.map_or(Vec3::ZERO, |(d, _)| d);
            for (ji, j) in self.rig.joints.iter().enumerate() {
                if self.s.pelvis_pin == PelvisPin::Full && matches!(j.dof, Dof::Floating) {
                    continue;
                }
                let anchor = self.s.anchor_affects[ji];
                let m = self.s.model[j.bone];
                let pivot = m.translation;
                // Joints clamped by the last step move less (a soft active set).
                let mobility = if self.s.saturated[ji] {
                    SATURATED_MOBILITY
                } else {
                    1.0
                };
                // Mass and mass-weighted position of the segments this joint carries.
                let (mut m_sub, mut s_sub) = (0.0f32, Vec3::ZERO);
                if row_of[6][0] != usize::MAX {
                    for (i, seg) in self.rig.segments.iter().enumerate() {
                        if j.segments & (1 << i) != 0 {
                            let mass = self.rig.masses.get(seg.role);
                            m_sub += mass;
                            s_sub += self.s.segment_pos[i] * mass;
                        }
                    }
                }
                let com_w = com.map_or(0.0, |(_, total)| com_weight.max(0.0).sqrt() / total);
                let (axes, n) = joint_axes(j.dof, m.rotation);
                for (c, &(axis, translation)) in axes[..n].iter().enumerate() {
                    if translation && self.s.pelvis_pin == PelvisPin::Position {
                        // The hips stay on the pelvis goal: zero translation columns.
                        continue;
                    }
                    let col = j.col + c;
                    let axis = axis * mobility;
                    // The effectors below the joint (or its frame), in ascending order.
                    let mut below = j.affects | anchor;
                    while below != 0 {
                        let k = below.trailing_zeros() as usize;
                        below &= below - 1;
                        if k == 5 {
                            let r = row_of[5][0];
                            if r != usize::MAX && !translation {
                                let v = axis.cross(head_dir) * look_w;
                                set3(jac, r, cols, col, v);
                            }
                            continue;
                        }
                        if k == 6 {
                            let r = row_of[6][0];
                            if r != usize::MAX {
                                let v = com_column(
                                    axis,
                                    translation,
                                    pivot,
                                    (m_sub, s_sub),
                                    self.rig.up,
                                ) * com_w;
                                set3(jac, r, cols, col, v);
                            }
                            continue;
                        }
                        effector_column(
                            jac,
                            (cols, col),
                            (axis, translation, pivot),
                            (u16::from(j.affects) | u16::from(anchor) << 8, k),
                            (
                                row_of[k],
                                self.s.model[self.rig.effector_bones[k]].translation,
                                goals.effectors[k].position,
                            ),
                            (wp[k].sqrt(), wr[k].sqrt()),
                        );
                    }
                }
            }
            let lambda2 = damping2(&self.s.dls.e[..rows], s.damping);
            let first = row_level[0];
            if row_level[..rows].iter().any(|&l| l != first) {
                let solved = self.s.dls.prioritized_step_formed(
                    rows,
                    self.rig.cols,
                    &row_level[..rows],
                    lambda2,
                    s.posture_gain > 0.0,
                );
                for (ji, j) in self.rig.joints.iter().enumerate() {
                    if solved && self.s.saturated[ji] {
                        for v in &mut self.s.dls.dq[j.col..j.col + j.dof.count()] {
                            *v *= SATURATED_MOBILITY;
                        }
                    }
                }
                hits = self.apply(skeleton, pose);
                continue;
            }
            // A = J Jᵀ + λ² I.
            // Block-sparse: a column only has rows of the effectors below its joint, so only
            // those pairs are accumulated (lower triangle; rows are allocated in effector
            // order, so each joint's row list is ascending).
            let a = &mut self.s.dls.a[..rows * rows];
            a.fill(0.0);
            // The lower triangle of 3 × 3 blocks, block pair (p ≥ q) at `pair_base(p) + q`,
            // each block as its three rows.
            let nb = rows / 3;
            let pairs = &mut self.s.pairs[..pair_base(nb)];
            pairs.fill([Vec3::ZERO; 3]);
            // A joint's row blocks, kept while the next joint moves the same effectors (joints
            // come in chains that do). `u8::MAX` is no mask (they use 7 bits).
            let mut memo: BlockMemo = (u8::MAX, [0usize; MAX_BLOCKS], 0usize);
            for (ji, j) in self.rig.joints.iter().enumerate() {
                let anchor = self.s.anchor_affects[ji];
                let Some(blocks) = step_blocks(self.s.pelvis_pin, j, anchor, &row_of, &mut memo)
                else {
                    continue;
                };
                for c in j.col..j.col + j.dof.count() {
                    let mut vals = [Vec3::ZERO; MAX_BLOCKS];
                    for (v, &b) in vals.iter_mut().zip(blocks) {
                        *v = Vec3::new(
                            jac[b * cols + c],
                            jac[(b + 1) * cols + c],
                            jac[(b + 2) * cols + c],
                        );
                    }
                    // 3 × 3 blocks of the lower triangle (a diagonal block whole: the upper
                    // triangle is never read), each entry summed over the columns in the
                    // same order as row by row: the same bits.
                    for (&bp, &vp) in blocks.iter().zip(&vals) {
                        let row = pair_base(bp / 3);
                        for (&bq, &vq) in blocks.iter().zip(&vals) {
                            if bq > bp {
                                break;
                            }
                            let e = &mut pairs[row + bq / 3];
                            e[0] += vq * vp.x;
                            e[1] += vq * vp.y;
                            e[2] += vq * vp.z;
                        }
                    }
                }
            }
            // Into the row-major lower triangle the factorisation reads.
            for p in 0..rows / 3 {
                for q in 0..=p {
                    for (i, r) in pairs[pair_base(p) + q].iter().enumerate() {
                        let at = (3 * p + i) * rows + 3 * q;
                        r.write_to_slice(&mut a[at..at + 3]);
                    }
                }
            }
            for r in 0..rows {
                a[r * rows + r] += lambda2;
            }
            if !cholesky(a, rows) {
                return (it + 1, hits);
            }
            self.s.dls.y[..rows].copy_from_slice(&self.s.dls.e[..rows]);
            cholesky_solve(a, rows, &mut self.s.dls.y[..rows]);
            self.s.dls.dq.fill(0.0);
            for (ji, j) in self.rig.joints.iter().enumerate() {
                let anchor = self.s.anchor_affects[ji];
                let Some(blocks) = step_blocks(self.s.pelvis_pin, j, anchor, &row_of, &mut memo)
                else {
                    continue;
                };
                let y = &self.s.dls.y;
                for c in j.col..j.col + j.dof.count() {
                    // Jᵀ y over the joint's rows in ascending order, from −0 as `Sum` adds.
                    let mut sum = -0.0f32;
                    for &b in blocks {
                        sum += jac[b * cols + c] * y[b];
                        sum += jac[(b + 1) * cols + c] * y[b + 1];
                        sum += jac[(b + 2) * cols + c] * y[b + 2];
                    }
                    self.s.dls.dq[c] = sum;
                }
            }
            for (ji, j) in self.rig.joints.iter().enumerate() {
                if self.s.saturated[ji] {
                    for v in &mut self.s.dls.dq[j.col..j.col + j.dof.count()] {
                        *v *= SATURATED_MOBILITY;
                    }
                }
            }
            if s.posture_gain > 0.0 {
                self.s.dls.add_null_space_posture(rows, cols);
            }
            hits = self.apply(skeleton, pose);
        }
        (budget, hits)
    }

    /// The posture pull `z` (per column, model-space axes) toward the reference pose.
    pub(super) fn posture(&mut self, skeleton: &Skeleton, pose: &Pose) {
        let gain = self.rig.settings.posture_gain;
        for j in &self.rig.joints {
            let b = j.bone;
            let cur = pose.rotations[b];
            let target = self.s.reference.rotations[b];
            match j.dof {
                Dof::Floating => self.s.dls.z[j.col..j.col + 6].fill(0.0),
                Dof::Ball => {
                    let parent = skeleton
                        .parent(b)
                        .map_or(Quat::IDENTITY, |p| self.s.model[p].rotation);
                    let v = parent * to_rotation_vector(target * cur.inverse()) * gain;
                    self.s.dls.z[j.col..j.col + 3].copy_from_slice(&v.to_array());
                }
                Dof::Hinge(h) => {
                    self.s.dls.z[j.col] = angle_about_axis(cur.inverse() * target, h) * gain;
                }
            }
        }
    }

    /// Applies `dq` to the pose and clamps every joint to its limit; returns the clamp count.
    pub(super) fn apply(&mut self, skeleton: &Skeleton, pose: &mut Pose) -> u32 {
        self.s.model_fresh = false;
        let mut hits = 0;
        for (ji, j) in self.rig.joints.iter().enumerate() {
            let b = j.bone;
            let (parent_rot, parent_scale) =
                skeleton.parent(b).map_or((Quat::IDENTITY, Vec3::ONE), |p| {
                    (self.s.model[p].rotation, self.s.model[p].scale)
                });
            let d = &self.s.dls.dq[j.col..];
            if d[..j.dof.count()].iter().all(|&v| v == 0.0) {
                self.s.saturated[ji] = false;
                continue;
            }
            match j.dof {
                Dof::Floating if self.s.pelvis_pin == PelvisPin::Full => {}
                Dof::Floating => {
                    if self.s.pelvis_pin == PelvisPin::Free {
                        let t = Vec3::new(d[0], d[1], d[2]);
                        pose.translations[b] += (parent_rot.inverse() * t) / parent_scale;
                    }
                    let w = Vec3::new(d[3], d[4], d[5]);
                    pose.rotations[b] = rotate_in_parent(parent_rot, w, pose.rotations[b]);
                }
                Dof::Ball => {
                    let w = Vec3::new(d[0], d[1], d[2]);
                    pose.rotations[b] = rotate_in_parent(parent_rot, w, pose.rotations[b]);
                }
                Dof::Hinge(h) => {
                    let step = d[0].clamp(-0.5, 0.5);
                    pose.rotations[b] =
                        (pose.rotations[b] * Quat::from_axis_angle(h, step)).normalize();
                }
            }
            let rest = &skeleton.bones()[b].rest;
            let (r, t) = (&mut pose.rotations[b], &mut pose.translations[b]);
            let moved = *r;
            let hit = j.limit.clamp_valid(rest.rotation, rest.translation, r, t);
            self.s.saturated[ji] = hit;
            if hit {
                // The clamp is the nearest point within the limit: what it took off points
                // out of the limit, along its normal there.
                self.s.limit_normal[ji] =
                    to_rotation_vector(moved * r.inverse()).normalize_or_zero();
            }
            hits += u32::from(hit);
        }
        hits
    }
}

/// Appends a block of 3 rows with error `err` (already weighted) at priority `level` to the
/// `rows` rows of `e`; returns the block's first row.
fn push_block(
    e: &mut [f32],
    row_level: &mut [u8],
    rows: &mut usize,
    err: Vec3,
    level: u8,
) -> usize {
    let at = *rows;
    e[at..at + 3].copy_from_slice(&err.to_array());
    row_level[at..at + 3].fill(level);
    *rows += 3;
    at
}

/// A joint's row blocks (see `joint_blocks`) kept for the next joint: its effector mask
/// (`u8::MAX`: none yet), the blocks and their count.
type BlockMemo = (u8, [usize; MAX_BLOCKS], usize);

/// Joint `j`'s row blocks in a step (`anchor`: its relative-goal frame bits), through `memo`
/// (joints come in chains that move the same effectors); `None` for a joint the step leaves
/// out (the floating joint under a whole pelvis pin).
fn step_blocks<'m>(
    pin: PelvisPin,
    j: &Joint,
    anchor: u8,
    row_of: &[[usize; 2]; 7],
    memo: &'m mut BlockMemo,
) -> Option<&'m [usize]> {
    if pin == PelvisPin::Full && matches!(j.dof, Dof::Floating) {
        return None;
    }
    let mask = j.affects | anchor;
    if memo.0 != mask {
        let (b, n) = joint_blocks(mask, row_of);
        *memo = (mask, b, n);
    }
    Some(&memo.1[..memo.2])
}

/// The squared damping of a step with errors `e`: `damping`², growing with the errors' norm
/// (a far goal takes a more cautious step).
pub(super) fn damping2(e: &[f32], damping: f32) -> f32 {
    let err_norm = e.iter().map(|v| v * v).sum::<f32>().sqrt();
    damping * damping * (1.0 + err_norm)
}
