//! The acceptance rule of bounded tracking (see the `track` module docs, *Steps and the
//! acceptance rule*): which candidate of a frame is kept, judged on the lexicographic cost
//! (module `levels`) level by level.

use super::levels::{Costs, Reach};
use super::{Effector, FullBodyGoals, FullBodyReport, PelvisPin, Solve};
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

/// The acceptance rule (the `track` module docs): `new` is better than `old` when the first
/// level that changes falls by [`ACCEPT_RATIO`] of its cost and its residual (the cost's root,
/// in tolerances) by one tolerance or to 0 (the deciding one), and no level before it rose at
/// all. Within the deciding level goals trade by weight (the step is that level's weighted
/// least squares); what a goal may not do to the others is decided by the levels.
pub(super) fn better(old: &Costs, new: &Costs) -> bool {
    for (&o, &n) in old.level.iter().zip(&new.level) {
        if n.is_nan() || n > o {
            return false;
        }
        if n < o - ACCEPT_RATIO * o && (n == 0.0 || n.sqrt() <= o.sqrt() - 1.0) {
            return true;
        }
    }
    false
}

/// Whether a shorter step along one line-search direction may still be kept (see
/// [`better`]), read from the kept cost `old` and the last two rejected candidates along
/// the direction: the longer one's cost `far` (at length `t`) and the shorter one's `near`
/// (at `backtrack · t`).
///
/// The deciding level — the first level `near` changes; the levels above it it leaves where
/// they are — is taken as a quadratic in the step's length through the three (`old` at 0):
/// `f(τ) = f₀ + aτ + bτ²`, `τ` in units of `t` — the line search's own model (a Gauss–Newton
/// step's first-order gain and its second-order error), exact where the level is quadratic
/// along the step. A shorter step is tried at `τ ≤ backtrack²`, where the least the
/// quadratic reaches is at `backtrack²` or at its vertex. Predicted to rise there, the level
/// rejects every shorter step — unless it has no cost at the kept pose while a level below
/// it moved: its goals within their tolerances cost nothing until a residual leaves them,
/// which the quadratic does not see, so a short enough step may leave it at 0 and let the
/// level below decide (`true`). Predicted to fall by what the rule asks, one may be kept
/// (`true`); predicted to fall by less or to stay, the levels below it decide, which the
/// model does not predict: `true` when either candidate moved one of them, else rejected.
/// Rejected: no shorter step along this direction is predicted to be kept (a direction that
/// does not descend, or descends by less than the rule asks), and the frame's remaining
/// budget is not spent on it (`false`).
pub(super) fn shorter_may_pass(old: &Costs, far: &Costs, near: &Costs, backtrack: f32) -> bool {
    let Some(l) = (0..old.level.len()).find(|&l| near.level[l] != old.level[l]) else {
        // The shorter candidate changed no level: a shorter one changes none either.
        return false;
    };
    let o = old.level[l];
    let (r1, r2) = (far.level[l] - o, near.level[l] - o);
    let b2 = backtrack * backtrack;
    let a = (r2 - b2 * r1) / (backtrack - b2);
    let b = r1 - a;
    let at = |t: f32| o + a * t + b * t * t;
    let mut least = at(b2);
    if b > 0.0 {
        let vertex = -a / (2.0 * b);
        if vertex > 0.0 && vertex < b2 {
            least = least.min(at(vertex));
        }
    }
    if !least.is_finite() {
        return true;
    }
    let least = least.max(0.0);
    let below_moved = (l + 1..old.level.len())
        .any(|m| near.level[m] != old.level[m] || far.level[m] != old.level[m]);
    if least > o && (o > 0.0 || !below_moved) {
        return false;
    }
    let mut predicted = *old;
    predicted.level[l] = least;
    better(old, &predicted) || below_moved
}

impl Solve<'_> {
    /// Keeps `pose`, a candidate, if it is [`better`] than the kept pose (`self.s.best`,
    /// whose lexicographic cost is `cost`); else restores the kept pose and its model bit for
    /// bit, and the candidate's cost into `rejected` when given. Whether it was kept.
    pub(super) fn accept(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        cost: &mut Costs,
        rejected: Option<&mut Costs>,
    ) -> bool {
        let judged = self.judge(skeleton, pose, goals);
        if pose.is_finite() && better(cost, &judged.0) {
            self.keep(skeleton, pose, goals, cost, judged);
            true
        } else {
            self.restore(pose);
            if let Some(r) = rejected {
                *r = judged.0;
            }
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
        self.fk_stale(pose);
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
    /// module docs): kept if the acceptance rule does. Whether it was kept.
    pub(super) fn analytic(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        pin: bool,
        cost: &mut Costs,
        report: &mut FullBodyReport,
    ) -> bool {
        if pin {
            let pelvis = goals.get(Effector::Pelvis);
            if self.pin_pelvis(skeleton, pose, pelvis, self.s.balancing) == PelvisPin::Free {
                self.restore(pose);
                return false;
            }
            self.s.model_fresh = false;
        }
        report.limits_hit += self.finish_limbs(skeleton, pose, goals);
        report.limits_hit += self.finish_look_at(skeleton, pose, goals);
        self.bound_turns(skeleton, pose, true);
        self.accept(skeleton, pose, goals, cost, None)
    }
}

#[cfg(test)]
mod tests {
    use super::super::levels::{Costs, LEVELS};
    use super::{ACCEPT_RATIO, shorter_may_pass};

    /// The kept cost and two rejected candidates along one direction (at lengths 1 and ½),
    /// level 3 along `f(τ) = f₀ + aτ + bτ²`, level 7 moved by `below` in both.
    fn samples(f0: f32, a: f32, b: f32, below: f32) -> (Costs, Costs, Costs) {
        let mut old = Costs {
            level: [0.0; LEVELS],
        };
        old.level[3] = f0;
        old.level[7] = 10.0;
        let (mut far, mut near) = (old, old);
        far.level[3] = f0 + a + b;
        near.level[3] = f0 + 0.5 * a + 0.25 * b;
        far.level[7] += below;
        near.level[7] += below;
        (old, far, near)
    }

    #[test]
    fn a_direction_that_does_not_descend_ends_the_line_search() {
        // Rising at every length (the rise halves with the length).
        let (old, far, near) = samples(100.0, 80.0, 5.0, 0.0);
        assert!(!shorter_may_pass(&old, &far, &near, 0.5));
        // Even while a level below it moves: a level with a cost that rises rejects.
        let (old, far, near) = samples(100.0, 80.0, 5.0, -5.0);
        assert!(!shorter_may_pass(&old, &far, &near, 0.5));
        // Falling, but by less than the acceptance ratio at every shorter length.
        let (old, far, near) = samples(100.0, -ACCEPT_RATIO * 40.0, 0.0, 0.0);
        assert!(!shorter_may_pass(&old, &far, &near, 0.5));
    }

    #[test]
    fn a_step_that_overshoots_is_shortened_on() {
        // Overshooting (second order): the full and half steps rise, a quarter falls by a
        // fifth of the cost.
        let (old, far, near) = samples(100.0, -200.0, 480.0, 0.0);
        assert!(near.level[3] > old.level[3]);
        assert!(shorter_may_pass(&old, &far, &near, 0.5));
        // A met level drifting off its goals while a level below it moves: the quadratic
        // cannot see the goals' tolerances, so the line search goes on.
        let (old, far, near) = samples(0.0, 0.0, 16.0, -5.0);
        assert!(shorter_may_pass(&old, &far, &near, 0.5));
        // Falling by less than the rule asks while a level below moves: that level decides.
        let (old, far, near) = samples(100.0, -ACCEPT_RATIO * 40.0, 0.0, -5.0);
        assert!(shorter_may_pass(&old, &far, &near, 0.5));
    }
}
