//! The corrective mode's tracking passes after the Jacobian attempt ([`TrackingMode::Corrective`]):
//! the rescue pass and the trunk's finish for the look-at, and the checks they share (see the
//! [module docs](super) and `docs/benchmarks.md`).

use super::*;

impl Solve<'_> {
    /// The rescue pass of a tracking solve (see the module docs): when the attempt stalled
    /// with a goal unmet that does not give way and is missed by less than the give-way
    /// minimum — a goal that should be met, not one on its way to giving way —, one more
    /// attempt from the attempt's result with what is left of the frame's budget
    /// ([`FullBodySettings::max_iterations`]), without the stall rule and with the goals that
    /// give way left out (as in the polish pass). Kept only if better (see `better`) and no
    /// joint turned more than [`RESCUE_MAX_TURN`] from the incoming pose (temporal coherence);
    /// else the attempt's result stands. Under a position-only pelvis pin with the feet's rows
    /// back (each iteration about twice as costly) only for a foot missed by more than
    /// [`RESCUE_VISIBLE_FEET`] tolerances with no other goal missed by as much, and with only
    /// that foot's rows and the hands' position rows (`rescue_rows`).
    pub(super) fn rescue(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        report: &mut FullBodyReport,
    ) {
        let budget = self
            .rig
            .settings
            .max_iterations
            .saturating_sub(report.iterations);
        // With a position-only pelvis pin, the feet's rows back in make every iteration
        // costlier (issue 9: the frame's cost bound comes first): see `rows` below.
        let feet = self.s.pelvis_pin == PelvisPin::Position && self.s.feet_rows;
        if report.converged {
            return;
        }
        // A hand or foot that should be met gets [`RESCUE_EXTRA`] iterations beyond the
        // frame's budget; a look-at alone only what the budget left.
        let budget = match self.near_miss(goals, report) {
            Some(true) => budget + RESCUE_EXTRA,
            Some(false) if budget > 0 && !feet => budget,
            _ => return,
        };
        let mut rows = 0u16;
        if feet {
            // Only for a foot missed by more than `RESCUE_VISIBLE_FEET` tolerances, no other
            // goal missed by as much; only that foot's rows and the hands' positions (the
            // hips' turn must not take a shoulder where its arm cannot follow; the hands'
            // rotations, the other foot and the head are finished analytically after each
            // pass, and the rescue is kept only if better). Measured with the
            // `gameplay` bench, position-only pelvis: with every row, p99 64–73 µs; with the
            // foot's rows alone, two Vrm/+Y frames lost a hand by 7–8 mm (rescue rejected).
            let s = &self.rig.settings;
            for (k, (r, g)) in report.residuals.iter().zip(&goals.effectors).enumerate() {
                for (rotation, wanted, r, tol) in [
                    (false, g.wants_position(), r.position, s.position_tolerance),
                    (true, g.wants_rotation(), r.rotation, s.rotation_tolerance),
                ] {
                    let c = channel(k, rotation);
                    if wanted && r > tol && !self.sits_out(c) {
                        if r <= RESCUE_VISIBLE_FEET * tol {
                            continue;
                        }
                        if k != Effector::LeftFoot as usize && k != Effector::RightFoot as usize {
                            return;
                        }
                        rows |= 0b11 << channel(k, false);
                    }
                }
            }
            if rows == 0 {
                return;
            }
            rows |= 1 << channel(Effector::LeftHand as usize, false);
            rows |= 1 << channel(Effector::RightHand as usize, false);
        }
        self.s.best.copy_from(pose);
        self.s.rescue = true;
        self.s.rescue_rows = rows;
        let mut r = self.attempt(skeleton, pose, goals, budget);
        self.s.rescue = false;
        self.s.rescue_rows = 0;
        r.cost = self.score(&r, goals);
        let max_turn = if self.s.balancing {
            RESCUE_MAX_TURN_BALANCING
        } else {
            RESCUE_MAX_TURN
        };
        let coherent = self.rig.joints.iter().all(|j| {
            pose.rotations[j.bone].angle_between(self.s.start.rotations[j.bone]) <= max_turn
        });
        // Better level by level is not enough: with a goal on its way to giving way still at
        // full weight (the first solves of a hand dragged out of reach), a rescue that turned
        // the trunk toward it scored better by the summed residual while the other hand, met
        // before, ended 233 mm off (the demo, Quaternius worker). A rescue costs no goal.
        let kept = coherent && self.no_met_goal_lost(goals, report, &r);
        if kept && pose.is_finite() && self.better(&r, report, goals) {
            r.iterations += report.iterations;
            *report = r;
        } else {
            report.iterations += r.iterations;
            pose.copy_from(&self.s.best);
            self.fk(skeleton, pose);
        }
    }

    /// The look-at's last resort in a tracking solve: when the head (and the neck the look-at
    /// finish turns) leave the look-at unmet — a rig without a neck, a head at its limit —,
    /// a few sweeps of cyclic coordinate descent over the aim chain (head, neck, then the
    /// trunk joints above the hips, [`FullBodySolver`]'s `trunk`: spine, chest, upper chest;
    /// nearest the head first) turn the head toward the target: each joint by the shortest
    /// arc, clamped to its own limit, or — where the limit takes that turn back — about its
    /// own axes one at a time and (a trunk joint) about the axes through it and the hands'
    /// targets, so the turn slides along the limits (see `Solve::aim_turn`: each turn kept only
    /// if the head aims closer and no shoulder ends out of its arm's reach from its hand's
    /// target; a trunk joint at most [`TRUNK_MAX_TURN`] from where it came into the solve).
    /// [`TRUNK_SWEEPS`] sweeps at most, fewer when one takes off less than
    /// [`TRUNK_PROGRESS`] of the aim's error; one sweep of shortest arcs alone when the look-at
    /// is missed by more than [`TRUNK_NEAR`]. The hands the trunk carries are then finished
    /// again onto their targets (analytically, as after every pass) and the head re-aimed.
    /// Kept only if the look-at got closer and no other goal got worse (a met goal stays met,
    /// an unmet one no further off; measured by forward kinematics); else the pose is put
    /// back. Not while balancing (the trunk moves the centre of mass). The Jacobian gets
    /// there too, but only after 100–200 iterations along the limits (issue 9: the `KayKit`
    /// mannequin's look-at 1–5° off).
    pub(super) fn finish_trunk(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        report: &mut FullBodyReport,
    ) {
        let s = self.rig.settings;
        let g = &goals.look_at;
        if report.converged
            || !s.analytic_limbs
            || !g.enabled
            || g.weight <= 0.0
            || report.look_at <= s.rotation_tolerance
            || self.s.balancing
            || !pose.is_finite()
        {
            return;
        }
        let m = self.rig.trunk.iter().flatten().count();
        if m == 0 {
            return;
        }
        self.fk_stale(skeleton, pose);
        if self.look_dirs(goals).is_none() {
            return;
        }
        self.s.best.copy_from(pose);
        // The hands the trunk carries: a trunk turn must not take a shoulder further from its
        // hand's target than the arm reaches (or than it is, when it is further already), or
        // the hand's finish could not follow. Per hand: shoulder, target, allowed distance.
        let mut hands = [None; 2];
        for limb in &self.rig.limbs {
            let k = limb.effector;
            let g = &goals.effectors[k];
            if k > 1 || !g.wants_position() || g.frame != GoalFrame::Model {
                continue;
            }
            let shoulder = self.s.model[limb.chain.upper].translation;
            let allowed = (TRUNK_REACH * limb.reach).max(shoulder.distance(g.position));
            hands[k] = Some((limb.chain.upper, shoulder, g.position, allowed));
        }
        // A look-at missed by more than the trunk can make up in a frame gets one sweep of
        // shortest arcs (the trunk turns toward it as far as its limits let it); a near one
        // the whole descent.
        let near = report.look_at <= TRUNK_NEAR;
        let sweeps = if near { TRUNK_SWEEPS } else { 1 };
        let mut err = report.look_at;
        // Per joint of the aim chain: the turns (bit 0 the shortest arc, then the axes) not
        // kept in an earlier sweep.
        let mut failed = [0u8; 6];
        'sweeps: for _ in 0..sweeps {
            // A sweep that turned nothing ends the descent (every joint at a limit or bound).
            let mut moved = false;
            for (i, b) in [Some(self.rig.head)]
                .into_iter()
                .chain(self.rig.look_chain)
                .chain(self.rig.trunk)
                .enumerate()
            {
                let Some(b) = b else { continue };
                let trunk = i > 2;
                let Some((d, t)) = self.look_dirs(goals) else {
                    break 'sweeps;
                };
                if d.dot(t) > 1.0 - 1e-12 {
                    break 'sweeps;
                }
                // (A turn not kept once is not tried again in this finish.)
                if failed[i] & 1 == 0 {
                    if self.aim_turn(
                        skeleton,
                        pose,
                        goals,
                        b,
                        trunk,
                        shortest_arc(d, t),
                        &mut hands,
                    ) {
                        moved = true;
                        continue;
                    }
                    failed[i] |= 1;
                }
                if !near {
                    continue;
                }
                // The shortest arc ran into a limit (or took a hand out of reach): turn about
                // the joint's own axes one at a time, and about the axes through the joint
                // and the hands' targets (a shoulder keeps its distance), each as far as it
                // takes the aim toward the target: the turn slides along the limits.
                let frame = self.s.model[b].rotation;
                let origin = self.s.model[b].translation;
                let axes = [
                    Some(frame * Vec3::X),
                    Some(frame * Vec3::Y),
                    Some(frame * Vec3::Z),
                    hands[0].and_then(|h| (h.2 - origin).try_normalize()),
                    hands[1].and_then(|h| (h.2 - origin).try_normalize()),
                ];
                for (a, u) in axes.into_iter().take(if trunk { 5 } else { 3 }).enumerate() {
                    let bit = 2 << a;
                    let Some(u) = u.filter(|_| failed[i] & bit == 0) else {
                        continue;
                    };
                    let Some((d, t)) = self.look_dirs(goals) else {
                        break 'sweeps;
                    };
                    let (dp, tp) = (d - u * u.dot(d), t - u * u.dot(t));
                    let q = Quat::from_axis_angle(u, u.dot(dp.cross(tp)).atan2(dp.dot(tp)));
                    if self.aim_turn(skeleton, pose, goals, b, trunk, q, &mut hands) {
                        moved = true;
                    } else {
                        failed[i] |= bit;
                    }
                }
            }
            // A sweep that took off less than [`TRUNK_PROGRESS`] of the aim's error ends the
            // descent: the chain is sliding along its limits toward an aim it cannot reach.
            let Some((d, t)) = self.look_dirs(goals) else {
                break;
            };
            let left = vec_angle(d, t);
            if !moved || left > (1.0 - TRUNK_PROGRESS) * err {
                break;
            }
            err = left;
        }
        self.fk(skeleton, pose);
        let _ = self.finish_limbs(skeleton, pose, goals);
        let _ = self.finish_look_at(skeleton, pose, goals);
        self.fk_stale(skeleton, pose);
        let mut r = *report;
        r.converged = self.measure(skeleton, pose, goals, &mut r);
        let tr = s.rotation_tolerance;
        let kept = self.no_goal_worse(goals, report, &r);
        if kept && r.look_at < report.look_at && pose.is_finite() {
            r.cost = self.score(&r, goals);
            self.s.trunk_met = r.look_at <= RESCUE_VISIBLE * tr;
            *report = r;
        } else {
            pose.copy_from(&self.s.best);
            self.fk(skeleton, pose);
        }
    }

    /// One turn of `Solve::finish_trunk`'s descent: joint `b` turned by the model-space
    /// rotation `q` about its origin, clamped to its limit and (a trunk joint) to
    /// [`TRUNK_MAX_TURN`] from where it came into the solve; kept only if the head then aims
    /// closer to the look-at target and (a trunk joint) no carried hand's shoulder ends
    /// further from its target than allowed (`hands`: shoulder bone, shoulder position,
    /// target, allowed distance; the positions follow a kept turn). The head's model is
    /// refreshed after a kept turn. Whether it was kept.
    pub(super) fn aim_turn(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        b: usize,
        trunk: bool,
        q: Quat,
        hands: &mut [Option<(usize, Vec3, Vec3, f32)>; 2],
    ) -> bool {
        let Some((d, t)) = self.look_dirs(goals) else {
            return false;
        };
        let parent_rot = skeleton
            .parent(b)
            .map_or(Quat::IDENTITY, |p| self.s.model[p].rotation);
        let old = pose.rotations[b];
        let limit = limit_of(&self.rig.joints, b);
        pose.rotations[b] = rotate_in_parent_q(parent_rot, q, old);
        let _ = clamp_joint(skeleton, pose, limit, b);
        if trunk {
            let from = self.s.start.rotations[b];
            let a = pose.rotations[b].angle_between(from);
            if a > TRUNK_MAX_TURN {
                pose.rotations[b] = from.slerp(pose.rotations[b], TRUNK_MAX_TURN / a);
                let _ = clamp_joint(skeleton, pose, limit, b);
            }
        }
        // What is left of the turn, in model space.
        let applied = parent_rot * pose.rotations[b] * old.inverse() * parent_rot.inverse();
        let origin = self.s.model[b].translation;
        let moved = |p: Vec3| origin + applied * (p - origin);
        let carried = |h: &(usize, Vec3, Vec3, f32)| trunk && skeleton.is_ancestor_or_self(b, h.0);
        let out = hands
            .iter()
            .flatten()
            .any(|h| carried(h) && moved(h.1).distance(h.2) > h.3);
        // A clamped turn can aim further off than before.
        let head = moved(self.s.model[self.rig.head].translation);
        let aimed = (goals.look_at.target - head)
            .try_normalize()
            .map_or(-1.0, |t2| (applied * d).dot(t2));
        if out || aimed <= d.dot(t) {
            pose.rotations[b] = old;
            return false;
        }
        for h in hands.iter_mut().flatten() {
            if carried(h) {
                h.1 = moved(h.1);
            }
        }
        let from = self
            .rig
            .aim_path
            .iter()
            .position(|&p| p == b)
            .unwrap_or(self.rig.aim_path.len());
        refresh(
            skeleton,
            pose,
            &mut self.s.model,
            &self.rig.aim_path[from..],
        );
        true
    }

    /// Whether no hand, foot, pelvis or centre-of-mass goal is worse in `after` than in
    /// `before`: a met one stays met, an unmet one gets no further off (by more than a
    /// hundredth of its tolerance: rounding). The look-at is the caller's to judge.
    pub(super) fn no_goal_worse(
        &self,
        goals: &FullBodyGoals,
        before: &FullBodyReport,
        after: &FullBodyReport,
    ) -> bool {
        let s = &self.rig.settings;
        let (tp, tr) = (s.position_tolerance, s.rotation_tolerance);
        let no_worse = |a: f32, b: f32, tol: f32| b <= tol || b <= a + 0.01 * tol;
        goals.effectors.iter().enumerate().all(|(k, g)| {
            let (a, b) = (before.residuals[k], after.residuals[k]);
            (!g.wants_position() || no_worse(a.position, b.position, tp))
                && (!g.wants_rotation() || no_worse(a.rotation, b.rotation, tr))
        }) && no_worse(before.center_of_mass, after.center_of_mass, s.com_tolerance)
    }

    /// Whether every hand, foot, pelvis and centre-of-mass goal met in `before` is still met
    /// in `after` (a rescue's rule: it may trade unmet goals by level, never a met one).
    pub(super) fn no_met_goal_lost(
        &self,
        goals: &FullBodyGoals,
        before: &FullBodyReport,
        after: &FullBodyReport,
    ) -> bool {
        let s = &self.rig.settings;
        let (tp, tr) = (s.position_tolerance, s.rotation_tolerance);
        let kept = |a: f32, b: f32, tol: f32| a > tol || b <= tol;
        goals.effectors.iter().enumerate().all(|(k, g)| {
            let (a, b) = (before.residuals[k], after.residuals[k]);
            (!g.wants_position() || kept(a.position, b.position, tp))
                && (!g.wants_rotation() || kept(a.rotation, b.rotation, tr))
        }) && kept(before.center_of_mass, after.center_of_mass, s.com_tolerance)
    }

    /// Whether `report` leaves a goal unmet that takes full part (does not sit out the polish
    /// pass), and every such goal is missed by less than the give-way minimum (see
    /// [`GIVE_WAY_MIN`]): the goals left are ones that should be met.
    pub(super) fn near_miss(&self, goals: &FullBodyGoals, report: &FullBodyReport) -> Option<bool> {
        let s = &self.rig.settings;
        let d = if s.give_way_distance > 0.0 {
            s.give_way_distance
        } else {
            0.05 * self.rig.body_height
        };
        let a = s.give_way_angle;
        let mut any = false;
        let mut limb = false;
        let mut near = true;
        let mut check = |c: usize, wanted: bool, r: f32, tol: f32, scale: f32| {
            if wanted && r > tol && !self.sits_out(c) {
                let visible = r > RESCUE_VISIBLE * tol;
                any |= visible;
                limb |= visible && c < channel(5, false);
                near &= r / scale < GIVE_WAY_MIN;
            }
        };
        for (k, (r, g)) in report.residuals.iter().zip(&goals.effectors).enumerate() {
            check(
                channel(k, false),
                g.wants_position(),
                r.position,
                s.position_tolerance,
                d,
            );
            check(
                channel(k, true),
                g.wants_rotation(),
                r.rotation,
                s.rotation_tolerance,
                a,
            );
        }
        check(
            channel(5, false),
            goals.look_at.enabled && goals.look_at.weight > 0.0,
            report.look_at,
            s.rotation_tolerance,
            a,
        );
        (any && near).then_some(limb)
    }
}
