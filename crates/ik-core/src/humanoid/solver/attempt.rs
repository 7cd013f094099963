//! One Jacobian attempt of a cold solve ([`Solve::attempt`]: coarse and fine rounds, the limb
//! and look-at finishes, the polish pass), the give-way state it reads and writes, and how
//! two results are compared (see the [module docs](super)).

use super::*;

impl Solve<'_> {
    /// Records `pose` (this solve's output, within the limits) as the last output: in the
    /// scratch, unless the caller keeps it ([`Last::Given`]: a stack's warm-start store).
    pub(super) fn remember(&mut self, pose: &Pose) {
        self.s.last_kept = matches!(self.last, Last::Own);
        if self.s.last_kept {
            self.s.last.copy_from(pose);
        }
        self.s.last_of = self.rig.id;
    }

    /// The order of cold-solve candidates, level by level of priority (0 first): more goals
    /// of the level met, then a lower summed residual (in tolerances) of the level; the first
    /// level that differs decides. A cold solve never returns a result worse than its input
    /// by this order.
    pub(super) fn better(
        &self,
        a: &FullBodyReport,
        b: &FullBodyReport,
        goals: &FullBodyGoals,
    ) -> bool {
        let (la, lb) = (self.levels(a, goals), self.levels(b, goals));
        for (x, y) in la.iter().zip(&lb) {
            if x.0 != y.0 {
                return x.0 > y.0;
            }
            if (x.1 - y.1).abs() > 1e-4 * (1.0 + x.1.abs().max(y.1.abs())) {
                return x.1 < y.1;
            }
        }
        false
    }

    /// Per priority level (3 and above share the last): goal channels met, and the summed
    /// residuals (in tolerances) of the channels not met.
    pub(super) fn levels(&self, report: &FullBodyReport, goals: &FullBodyGoals) -> [(u32, f32); 4] {
        let s = &self.rig.settings;
        let mut out = [(0u32, 0.0f32); 4];
        let mut add = |priority: u8, wanted: bool, r: f32, tol: f32| {
            if wanted {
                let l = &mut out[usize::from(priority.min(3))];
                // (A met goal counts as met: its leftover residual decides nothing.)
                if r <= tol {
                    l.0 += 1;
                } else {
                    l.1 += r / tol;
                }
            }
        };
        for (r, g) in report.residuals.iter().zip(&goals.effectors) {
            add(
                g.priority,
                g.wants_position(),
                r.position,
                s.position_tolerance,
            );
            add(
                g.priority,
                g.wants_rotation(),
                r.rotation,
                s.rotation_tolerance,
            );
        }
        let (l, c) = (&goals.look_at, &goals.center_of_mass);
        add(
            l.priority,
            l.enabled && l.weight > 0.0,
            report.look_at,
            s.rotation_tolerance,
        );
        add(
            c.priority,
            c.enabled && c.weight > 0.0,
            report.center_of_mass,
            s.com_tolerance,
        );
        out
    }

    /// Updates which goals give way, from `report` (measured on the output): met goals are
    /// back at full weight; of the goals still missed by more than a fifth of the give-way
    /// scale, the first in the order of giving way (see
    /// [`FullBodySettings::give_way_distance`]) gives way. Returns whether one did.
    pub(super) fn give_way(
        &mut self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
        report: &FullBodyReport,
    ) -> bool {
        let missed = self.misses(goals, report);
        // A limb stretched toward a target beyond its reach is the surest sign of an
        // infeasible goal: those give way first, the most stretched first.
        let mut rank = missed;
        if self
            .rig
            .limbs
            .iter()
            .any(|l| missed[channel(l.effector, false)] > GIVE_WAY_MIN)
        {
            self.fk(pose);
        }
        let resolved = self.resolved(skeleton, pose, goals);
        let resolved = resolved.as_ref().unwrap_or(goals);
        for limb in &self.rig.limbs {
            let c = channel(limb.effector, false);
            if missed[c] > GIVE_WAY_MIN {
                let g = &resolved.effectors[limb.effector];
                let root = self.s.model[limb.chain.upper].translation;
                let stretch = (g.position.distance(root) - limb.reach) / limb.reach;
                if stretch > 0.0 {
                    rank[c] = 1e3 + stretch;
                }
            }
        }
        // The order in which goals give way: a larger priority number first, then the look-at,
        // then the hands, then the feet. The pelvis and the centre of mass at priority 0 never
        // give way: they trade off against each other by weight, by design (balance).
        let mut never = [false; CHANNELS];
        for (c, r) in rank.iter_mut().enumerate() {
            let (k, priority) = match c {
                10 => (5, goals.look_at.priority),
                11 => (6, goals.center_of_mass.priority),
                _ => (c / 2, goals.effectors[c / 2].priority),
            };
            let class = match k {
                5 => 3.0,
                0 | 1 => 2.0,
                2 | 3 => 1.0,
                _ => 0.0,
            };
            *r += f32::from(priority.min(50)) * 1e5 + class * 1e4;
            never[c] = class == 0.0 && priority == 0;
        }
        let mut worst: Option<(usize, f32)> = None;
        for (c, &m) in missed.iter().enumerate() {
            // Only a goal missed by more than the minimum gives way (a smaller miss is still
            // converging).
            let stuck = m > if c == channel(5, false) {
                GIVE_WAY_MIN_LOOK_AT
            } else {
                GIVE_WAY_MIN
            };
            if m == 0.0 {
                self.s.demoted[c] = false;
            } else if !self.s.demoted[c]
                && !never[c]
                && stuck
                && worst.is_none_or(|(_, w)| rank[c] > w)
            {
                worst = Some((c, rank[c]));
            }
        }
        if let Some((c, _)) = worst {
            self.s.demoted[c] = true;
        }
        worst.is_some()
    }

    /// Per goal channel, how far `report` misses it in give-way scales (see
    /// [`FullBodySettings::give_way_distance`]); 0 for a goal within tolerance.
    pub(super) fn misses(&self, goals: &FullBodyGoals, report: &FullBodyReport) -> [f32; CHANNELS] {
        let s = &self.rig.settings;
        let d = if s.give_way_distance > 0.0 {
            s.give_way_distance
        } else {
            0.05 * self.rig.body_height
        };
        let a = s.give_way_angle;
        let mut missed = [0.0f32; CHANNELS];
        for (k, (r, g)) in report.residuals.iter().zip(&goals.effectors).enumerate() {
            if g.wants_position() && r.position > s.position_tolerance {
                missed[channel(k, false)] = r.position / d;
            }
            if g.wants_rotation() && r.rotation > s.rotation_tolerance {
                missed[channel(k, true)] = r.rotation / a;
            }
        }
        if report.look_at > s.rotation_tolerance {
            missed[channel(5, false)] = report.look_at / a;
        }
        if report.center_of_mass > s.com_tolerance {
            missed[channel(6, false)] = report.center_of_mass / d;
        }
        missed
    }

    /// The weight factor of `channel` in this solve (see
    /// [`FullBodySettings::give_way_distance`]).
    pub(super) fn demotion(&self, channel: usize) -> f32 {
        if self.s.demoting && self.s.demoted[channel] {
            GIVE_WAY_FACTOR
        } else {
            1.0
        }
    }

    /// One solve attempt from the current pose: pelvis pin, limb pre-pass, then Jacobian rounds
    /// each followed by the analytic finish.
    pub(super) fn attempt(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        budget: u32,
    ) -> FullBodyReport {
        let s = self.rig.settings;
        let mut report = FullBodyReport::default();
        let balance = goals.center_of_mass.enabled && goals.center_of_mass.weight > 0.0;
        self.s.balancing = balance;
        // The pose may have changed since the last forward kinematics (restarts, the pin).
        self.s.model_fresh = false;
        self.s.pelvis_pin = self.pin_pelvis(skeleton, pose, goals.get(Effector::Pelvis), balance);
        self.s.exact = 0;
        self.s.exact_met = 0;
        if s.analytic_limbs {
            self.s.exact = self.exact_limbs(goals);
            // Start the limbs at the right elbow/knee angles: the Jacobian is poor at leaving a
            // straight (singular, limit-bound) limb. Each swivel is searched near the start
            // only: the trunk is still where the start has it, so a swivel found over the whole
            // turn would be tuned to a trunk the Jacobian is about to move. The finishes after
            // the Jacobian rounds search the whole turn (measured: the median cold solve on
            // the CC0 characters 1.6× faster, as many goal sets met; `docs/benchmarks.md`).
            self.s.global_swivel = false;
            report.limits_hit += self.finish_limbs(skeleton, pose, goals);
        }
        self.s.global_swivel = true;
        self.s.saturated.fill(false);
        for round in 0..4 {
            let coarse = if s.analytic_limbs && round == 0 {
                s.coarse_factor
            } else {
                1.0
            };
            let left = budget.saturating_sub(report.iterations);
            // Keep a few iterations for the polish pass when some goal gives way.
            let demoted = self.any_demoted(goals);
            let left = if demoted {
                left.saturating_sub(POLISH_ITERATIONS)
            } else {
                left
            };
            if left == 0 && round > 0 {
                break;
            }
            let (iters, hits) = self.jacobian(skeleton, pose, goals, coarse, left, false);
            report.iterations += iters;
            report.limits_hit = hits;
            // Right after the limb pre-pass with no Jacobian step, the limbs are finished.
            if s.analytic_limbs {
                if !(round == 0 && iters == 0) {
                    report.limits_hit += self.finish_limbs(skeleton, pose, goals);
                }
                report.limits_hit += self.finish_look_at(skeleton, pose, goals);
            }
            self.fk_stale(pose);
            report.converged = self.measure(skeleton, pose, goals, &mut report);
            // With goals giving way, once the others are met the polish pass takes over.
            if report.converged
                || report.iterations >= budget
                || !s.analytic_limbs
                || (iters == 0 && round > 0)
                || (self.any_gives_way(goals) && self.others_met(goals, &report))
            {
                break;
            }
        }
        if !report.converged && self.any_demoted(goals) && !self.others_met(goals, &report) {
            // Polish: the goals that gave way pulled the others off by a little; a few steps
            // without them bring the others back onto their goals. Frame after frame this
            // settles where the pull has no component the other goals allow (their null
            // space): the closest feasible result for the goals that gave way, at no cost to
            // the others.
            let left = budget.saturating_sub(report.iterations).max(1);
            let (iters, hits) = self.jacobian(skeleton, pose, goals, 1.0, left, true);
            report.iterations += iters;
            report.limits_hit = hits;
            if s.analytic_limbs {
                report.limits_hit += self.finish_limbs(skeleton, pose, goals);
                report.limits_hit += self.finish_look_at(skeleton, pose, goals);
            }
            self.fk_stale(pose);
            report.converged = self.measure(skeleton, pose, goals, &mut report);
        }
        report
    }

    /// The effectors (bit `k`) whose limb the analytic finish can hold alone in an attempt: a
    /// leg under hips pinned whole (`PelvisPin::Full`). Nothing else moves its root, so once
    /// a finish meets its goal (`exact_met`) its rows stay out of the normal equations (27
    /// rows shrink to 15 on a full goal set; its joints' columns are then zero, so no step
    /// moves it) and it is not finished again in the attempt. A leg the finish leaves off its
    /// goal (its limits in the way) keeps its rows: the steps move it to where the next
    /// finish can do better. Not with a centre-of-mass goal (the leg joints move the mass),
    /// a relative goal (a goal carried by a bone of the leg) or the posture term (it moves
    /// the leg joints in the null space).
    pub(super) fn exact_limbs(&self, goals: &FullBodyGoals) -> u8 {
        if self.s.pelvis_pin != PelvisPin::Full
            || self.s.balancing
            || self.s.relative
            || self.rig.settings.posture_gain > 0.0
        {
            return 0;
        }
        self.rig
            .limbs
            .iter()
            .filter(|l| l.on_hips && goals.effectors[l.effector].enabled)
            .fold(0, |bits, l| bits | 1 << l.effector)
    }

    /// Whether every goal channel that does not give way is within tolerance in `report`.
    pub(super) fn others_met(&self, goals: &FullBodyGoals, report: &FullBodyReport) -> bool {
        let s = &self.rig.settings;
        let keep = |c: usize| !self.sits_out(c);
        let effectors = report
            .residuals
            .iter()
            .zip(&goals.effectors)
            .enumerate()
            .all(|(k, (r, g))| {
                (!g.wants_position()
                    || !keep(channel(k, false))
                    || r.position <= s.position_tolerance)
                    && (!g.wants_rotation()
                        || !keep(channel(k, true))
                        || r.rotation <= s.rotation_tolerance)
            });
        effectors
            && (!goals.look_at.enabled
                || !keep(channel(5, false))
                || report.look_at <= s.rotation_tolerance)
            && (!goals.center_of_mass.enabled
                || !keep(channel(6, false))
                || report.center_of_mass <= s.com_tolerance)
    }

    /// Whether channel `c` sits out the polish pass: a goal that gives way, and while
    /// balancing the centre of mass and a free pelvis position (the soft pair that trades off
    /// by weight; the polish restores the hard goals — feet, hands, look-at — in their null
    /// space, so balance never costs a foot).
    pub(super) fn sits_out(&self, c: usize) -> bool {
        self.demotion(c) < POLISH_CUTOFF
            || (self.s.balancing
                && (c == channel(6, false)
                    || (c == channel(Effector::Pelvis as usize, false)
                        && self.s.pelvis_pin == PelvisPin::Free)))
    }

    /// Whether a goal channel that takes part gives way.
    pub(super) fn any_gives_way(&self, goals: &FullBodyGoals) -> bool {
        self.s.demoting && any_channel(goals, |c| self.demotion(c) < POLISH_CUTOFF)
    }

    /// Whether a goal channel that takes part sits out the polish pass (see `sits_out`).
    pub(super) fn any_demoted(&self, goals: &FullBodyGoals) -> bool {
        (self.s.demoting || self.s.balancing) && any_channel(goals, |c| self.sits_out(c))
    }

    /// Residuals in units of their tolerances, summed (lower is better).
    pub(super) fn score(&self, report: &FullBodyReport, goals: &FullBodyGoals) -> f32 {
        let s = &self.rig.settings;
        // Each priority level counts 1000× less than the one above it.
        let w = |p: u8| 1e-3f32.powi(i32::from(p.min(6)));
        let sum: f32 = report
            .residuals
            .iter()
            .zip(&goals.effectors)
            .map(|(r, g)| {
                (r.position / s.position_tolerance + r.rotation / s.rotation_tolerance)
                    * w(g.priority)
            })
            .sum();
        let total = sum
            + report.look_at / s.rotation_tolerance * w(goals.look_at.priority)
            + report.center_of_mass / s.com_tolerance * w(goals.center_of_mass.priority);
        if total.is_finite() { total } else { f32::MAX }
    }

    /// The effectors (bit `k`, [`Effector::ALL`] order) whose goal `report` misses.
    pub(super) fn unmet_effectors(&self, report: &FullBodyReport) -> u8 {
        let s = &self.rig.settings;
        report
            .residuals
            .iter()
            .enumerate()
            .filter(|(_, r)| r.position > s.position_tolerance || r.rotation > s.rotation_tolerance)
            .fold(0, |bits, (k, _)| bits | 1 << k)
    }

    /// A deterministic perturbation for restart `attempt` (each coordinate up to 0.5 rad) of
    /// the ball joints off the limbs (spine, chest, neck, head, clavicles) and of the limbs
    /// whose effector is in `unmet` (bit `k` for effector `k`), clamped to the limits. A limb
    /// that met its goal keeps its start: the limb finish sets it again from wherever the
    /// trunk goes, so turning it only costs the finish its start (measured: 52 of 4,000 goal
    /// sets missed with every ball joint perturbed and 3 restarts, 19 with this and 8,
    /// `docs/benchmarks.md`).
    pub(super) fn perturb(&self, skeleton: &Skeleton, pose: &mut Pose, attempt: u32, unmet: u8) {
        let mut state = 0x9E37_79B9_u32.wrapping_mul(attempt.wrapping_add(1));
        let mut next = || xorshift_unit(&mut state) * 2.0 - 1.0;
        for j in &self.rig.joints {
            if !matches!(j.dof, Dof::Ball) || j.limb & !unmet != 0 {
                continue;
            }
            let v = Vec3::new(next(), next(), next()) * 0.5;
            let b = j.bone;
            pose.rotations[b] = (pose.rotations[b] * from_rotation_vector(v)).normalize();
            clamp_joint(skeleton, pose, j.limit, b);
        }
    }
}
