//! The acceptance rule of bounded tracking (see the `track` module docs, *Steps and the
//! acceptance rule*): which candidate of a frame is kept, judged on the lexicographic cost
//! (module `levels`) level by level, and the analytic candidate's parts (the hips' pin, each
//! limb's finish, the look-at finish) each on its own level.

use super::levels::{Costs, LEVELS, Reach};
use super::{Effector, FullBodyGoals, FullBodyReport, PelvisPin, Solve, channel};
use crate::pose::Pose;
use crate::skeleton::Skeleton;

/// A candidate must lower the deciding level's cost by at least this fraction of it (and its
/// residual, the cost's root in tolerances, by at least one tolerance, or to 0; see
/// [`better`]): a step that gains less is not kept, so a goal that can only be crept toward
/// (a rotation turned in along a limit, a look-at sliding along the trunk's limits) stops
/// within a few frames instead of creeping for hundreds. Chosen on the robustness suite, full
/// size (`docs/benchmarks.md`, *The acceptance ratio*): 0.025 settles every still hand-beyond
/// and hand-far run by frame 30; 0.05 and 0.1 leave a `KayKit` look-at along the limits and a
/// reachable hand next to a far one short.
pub(super) const ACCEPT_RATIO: f32 = 0.025;

/// A set of levels (bit `l` for level `l`): those whose parts an analytic candidate carries
/// (the hips' pin, their limbs' finishes, the look-at finish; see `Solve::candidate`).
pub(super) type Parts = u128;
/// Every level's parts.
pub(super) const ALL_PARTS: Parts = Parts::MAX >> (Parts::BITS as usize - LEVELS);

/// The acceptance rule's verdict on a candidate ([`better`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Kept.
    Better,
    /// Not kept: no level fell by its threshold, or one above the deciding level rose.
    Worse,
    /// The deciding level fell and none above it rose, but these levels after it, whose parts
    /// the candidate carries, rose: whether their parts did that is judged next.
    LowerRose(Parts),
}

/// The acceptance rule (the `track` module docs) on a candidate carrying `parts`: the first
/// level that falls by [`ACCEPT_RATIO`] of its cost and its residual (the cost's root, in
/// tolerances) by one tolerance or to 0 (the deciding one), no level before it rose at all,
/// and no level after it whose part the candidate carries rose ([`Verdict::LowerRose`]; a
/// Gauss–Newton candidate is judged as a whole: `parts` empty).
pub(super) fn better(old: &Costs, new: &Costs, parts: Parts) -> Verdict {
    let mut levels = old.level.iter().zip(&new.level).enumerate();
    for (_, (&o, &n)) in levels.by_ref() {
        if n.is_nan() || n > o {
            return Verdict::Worse;
        }
        if n < o - ACCEPT_RATIO * o && (n == 0.0 || n.sqrt() <= o.sqrt() - 1.0) {
            let rose = levels
                .filter(|&(l, (&o, &n))| parts >> l & 1 != 0 && n > o)
                .fold(0, |m, (l, _)| m | 1 << l);
            return match rose {
                0 => Verdict::Better,
                _ => Verdict::LowerRose(rose),
            };
        }
    }
    Verdict::Worse
}

impl Solve<'_> {
    /// Builds a candidate from the kept pose (`self.s.best`, whose lexicographic cost is
    /// `cost`) with `build` (the parts of the levels in its argument, see the module docs)
    /// and keeps it if the acceptance rule does; else restores the kept pose and its model
    /// bit for bit. When levels after the deciding one rose, the same candidate without
    /// their parts is built as well: the first is kept if none of them lies above both its
    /// kept cost and where the second leaves it (the change the other parts force); else the
    /// parts of those that do are left out and the rest is judged again. Whether one was
    /// kept (none when `build` builds none: it returns false).
    fn candidate(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        cost: &mut Costs,
        (mut parts, mut build): (Parts, impl FnMut(&mut Self, &mut Pose, Parts) -> bool),
    ) -> bool {
        if !build(self, pose, parts) {
            self.restore(pose);
            return false;
        }
        loop {
            let (judged, own) = self.judge(skeleton, pose, goals);
            let verdict = if pose.is_finite() {
                better(cost, &judged, parts)
            } else {
                Verdict::Worse
            };
            let rose = match verdict {
                Verdict::LowerRose(rose) => rose,
                Verdict::Better => {
                    self.keep(skeleton, pose, goals, cost, (judged, own));
                    return true;
                }
                Verdict::Worse => {
                    self.restore(pose);
                    return false;
                }
            };
            self.restore(pose);
            build(self, pose, parts & !rose);
            let (forced, _) = self.judge(skeleton, pose, goals);
            let worse = (0..LEVELS)
                .filter(|&l| rose >> l & 1 != 0)
                .filter(|&l| judged.level[l] > cost.level[l].max(forced.level[l]))
                .fold(0, |m: Parts, l| m | 1 << l);
            if worse != rose {
                self.restore(pose);
                build(self, pose, parts & !worse);
                if worse == 0 {
                    let judged = self.judge(skeleton, pose, goals);
                    self.keep(skeleton, pose, goals, cost, judged);
                    return true;
                }
            }
            parts &= !worse;
        }
    }

    /// Keeps `pose`, a Gauss–Newton candidate, if it is [`better`] than the kept pose
    /// (`self.s.best`, whose lexicographic cost is `cost`) as a whole; else restores the kept
    /// pose and its model bit for bit. (A step's part of a level is that level's least-squares
    /// step in the null space of the levels above it: to first order it moves none of them and
    /// is its own level's descent, so the levels after the deciding one are not judged part by
    /// part, unlike the analytic candidate's: see the module docs.)
    pub(super) fn accept(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        cost: &mut Costs,
    ) -> bool {
        let judged = self.judge(skeleton, pose, goals);
        if pose.is_finite() && better(cost, &judged.0, 0) == Verdict::Better {
            self.keep(skeleton, pose, goals, cost, judged);
            true
        } else {
            self.restore(pose);
            false
        }
    }

    /// A candidate's lexicographic cost, judged with the kept pose's reach split (a step that
    /// moves a limb's root until its goal counts as beyond, or within, reach is not kept for
    /// the reclassification alone: the goal's cost stays where the kept pose ranks it), and
    /// its own split.
    fn judge(
        &mut self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
    ) -> (Costs, [Reach; 5]) {
        // (The finishes keep the model current; a step or a turn-bound move does not.)
        self.fk_stale(skeleton, pose);
        let kept = self.s.kept_reach;
        self.costs(skeleton, pose, goals, Some(&kept))
    }

    /// Keeps `pose`, a candidate judged `judged` (see [`Solve::judge`]): its cost into `cost`.
    fn keep(
        &mut self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
        cost: &mut Costs,
        (judged, own): (Costs, [Reach; 5]),
    ) {
        self.s.held = false;
        // Scored again with its own split only where that split ranks a goal elsewhere.
        *cost = if own
            .iter()
            .zip(&self.s.kept_reach)
            .all(|(a, b)| a.ranks_as(b))
        {
            judged
        } else {
            self.costs(skeleton, pose, goals, Some(&own)).0
        };
        self.s.kept_reach = own;
        self.s.best.copy_from(pose);
        self.s.model_best.clone_from(&self.s.model);
        // Joints the kept candidate held on a bound stay held for the frame.
        for ji in 0..self.rig.joints.len() {
            self.s.frozen[ji] |= self.s.saturated[ji] || self.s.clipped[ji];
        }
    }

    /// Restores the kept pose and its model bit for bit.
    fn restore(&mut self, pose: &mut Pose) {
        pose.copy_from(&self.s.best);
        self.s.model.clone_from(&self.s.model_best);
        self.s.model_fresh = true;
    }

    /// One analytic candidate (the hips onto the pelvis goal first when `pin`; see the
    /// module docs), built from the parts of a set of levels ([`Solve::candidate`]). Whether
    /// it was kept.
    pub(super) fn analytic(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        pin: bool,
        cost: &mut Costs,
        report: &mut FullBodyReport,
    ) -> bool {
        let build = |this: &mut Self, pose: &mut Pose, parts: Parts| {
            let level = this.s.rank[channel(Effector::Pelvis as usize, false)];
            if pin && parts >> level & 1 != 0 {
                let pelvis = goals.get(Effector::Pelvis);
                if this.pin_pelvis(skeleton, pose, pelvis, this.s.balancing) == PelvisPin::Free {
                    return false;
                }
                this.s.model_fresh = false;
            }
            let skip = this.left_out(goals, parts);
            report.limits_hit += this.finish_limbs(skeleton, pose, goals, skip);
            if parts >> this.s.rank[channel(5, false)] & 1 != 0 {
                report.limits_hit += this.finish_look_at(skeleton, pose, goals);
            }
            this.bound_turns(skeleton, pose, true);
            true
        };
        self.candidate(skeleton, pose, goals, cost, (ALL_PARTS, build))
    }

    /// The effectors (bits) whose limb goal's first level (its position's, or its
    /// rotation's, with the kept pose's split) is not among `parts`: the limbs whose finish
    /// is a part a candidate of `parts` leaves out.
    fn left_out(&self, goals: &FullBodyGoals, parts: Parts) -> u8 {
        let mut out = 0;
        for l in self.rig.limbs.iter().filter(|_| parts != ALL_PARTS) {
            let (k, g) = (l.effector, &goals.effectors[l.effector]);
            let (r, first) = (&self.s.kept_reach[k], self.s.rank[channel(k, false)]);
            let position = g.wants_position().then(|| r.level(first));
            let rotation = g
                .wants_rotation()
                .then(|| r.rotation_level(first, self.s.rank[channel(k, true)]));
            let level = position.into_iter().chain(rotation).min();
            if level.is_some_and(|level| parts >> level & 1 == 0) {
                out |= 1 << k;
            }
        }
        out
    }
}
