//! The fixed-point shortcut of tracking (see the `track` module docs): a solve handed back the
//! pose the last solve returned unchanged, with the same goals, settings and masses, returns
//! that pose and report again without solving.

use glam::{Quat, Vec3};

use super::{FullBodyGoals, FullBodyReport, FullBodySettings, Last, Solve};
use crate::pose::Pose;
#[cfg(test)]
use crate::skeleton::Skeleton;

/// What a solve that returned its input bit for bit was given (see [`Solve::at_rest`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct AtRest {
    goals: FullBodyGoals,
    settings: FullBodySettings,
    report: FullBodyReport,
}

fn bits<const N: usize>(x: [f32; N], y: [f32; N]) -> bool {
    x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// Whether `a` and `b` are the same pose to the bit (a signed zero or a NaN payload counts).
fn same_bits(a: &Pose, b: &Pose) -> bool {
    a.rotations.len() == b.rotations.len()
        && a.translations.len() == b.translations.len()
        && (a.rotations.iter().zip(&b.rotations)).all(|(p, q)| bits(p.to_array(), q.to_array()))
        && (a.translations.iter().zip(&b.translations))
            .all(|(p, q)| bits(p.to_array(), q.to_array()))
}

/// [`same_bits`] against a pose kept bone by bone (a stack's warm-start store).
fn same_bits_as(a: &Pose, b: &[(Quat, Vec3)]) -> bool {
    a.rotations.len() == b.len()
        && a.translations.len() == b.len()
        && (a.rotations.iter().zip(&a.translations).zip(b)).all(|((p, t), (q, u))| {
            bits(p.to_array(), q.to_array()) && bits(t.to_array(), u.to_array())
        })
}

impl Solve<'_> {
    /// The fixed-point shortcut: when the last solve with this scratch and solver returned
    /// the pose it was given bit for bit (every candidate rejected, or every goal already
    /// met), without clamping a joint of it, and `pose` is that output to the bit with the
    /// same goals (`==`) and settings, the solve would run the same deterministic
    /// computation on the same input — nothing it reads changed — and return the same pose
    /// and report: they are returned without it (a pose comparison instead of a frame's
    /// candidates). The record is dropped by every other solve, by
    /// [`FullBodyScratch::reset`](super::FullBodyScratch::reset) and by a change of masses
    /// (a new solver id).
    pub(super) fn at_rest(&self, pose: &Pose, goals: &FullBodyGoals) -> Option<FullBodyReport> {
        let r = self.s.rest.as_ref()?;
        let same = match self.last {
            Last::Own => self.s.last_kept && same_bits(pose, &self.s.last),
            Last::Given(last) => !self.s.last_kept && last.is_some_and(|l| same_bits_as(pose, l)),
        };
        (self.s.last_of == self.rig.id
            && r.goals == *goals
            && r.settings == self.rig.settings
            && same)
            .then_some(r.report)
    }

    /// Records that this solve returned its input bit for bit with `goals` (see
    /// [`Solve::at_rest`]); call after `remember`.
    pub(super) fn record_rest(&mut self, goals: &FullBodyGoals, report: &FullBodyReport) {
        self.s.rest = Some(AtRest {
            goals: *goals,
            settings: self.rig.settings,
            report: *report,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Effector, FullBodyScratch, FullBodySolver, bent_test_rig};
    use super::*;

    /// Frames a still goal set with a hand beyond reach is tracked for to reach its fixed
    /// point (the robustness suite asks for 30; this case settles in a few).
    const FRAMES: usize = 60;
    /// The hand goal's distance from the shoulder, in arm lengths.
    const BEYOND: f32 = 1.3;

    /// A still goal set with the left hand 30 % beyond its arm's reach, tracked until the
    /// output equals its input to the bit; returns the solver, the settled scratch, pose and
    /// goals.
    fn settled() -> (
        Skeleton,
        FullBodySolver,
        FullBodyScratch,
        Pose,
        FullBodyGoals,
    ) {
        let (skeleton, mut solver, mut pose) = bent_test_rig(0x9e37_79b9);
        let mut goals = solver.goals_at_pose(&skeleton, &pose);
        let model = skeleton.model_transforms(&pose);
        let arm = solver
            .limbs
            .iter()
            .find(|l| l.effector == Effector::LeftHand as usize)
            .expect("the left arm is a limb");
        let (shoulder, reach) = (model[arm.chain.upper].translation, arm.reach);
        let hand = goals.get_mut(Effector::LeftHand);
        hand.position = shoulder + (hand.position - shoulder).normalize() * reach * BEYOND;
        let mut scratch = solver.scratch();
        for _ in 0..FRAMES {
            let before = pose.clone();
            solver
                .solve_with(&skeleton, &mut pose, &goals, &mut scratch)
                .expect("valid input");
            if same_bits(&before, &pose) && scratch.rest.is_some() {
                return (skeleton, solver, scratch, pose, goals);
            }
        }
        panic!("no fixed point within {FRAMES} frames");
    }

    /// At a fixed point the shortcut returns what the full solve returns (its report and pose
    /// to the bit): the same solve run with the record dropped (`reset`) gives the same.
    #[test]
    fn fixed_point_shortcut_matches_the_full_solve() {
        let (skeleton, solver, scratch, pose, goals) = settled();
        let (mut fast, mut full) = (scratch.clone(), scratch);
        full.reset();
        let (mut a, mut b) = (pose.clone(), pose.clone());
        let ra = solver
            .solve_with(&skeleton, &mut a, &goals, &mut fast)
            .expect("valid input");
        let rb = solver
            .solve_with(&skeleton, &mut b, &goals, &mut full)
            .expect("valid input");
        assert!(same_bits(&a, &pose), "the fixed point moved");
        assert!(same_bits(&a, &b), "shortcut and full solve differ");
        assert_eq!(ra, rb);
        assert!(
            ra.iterations > 0,
            "the hand beyond reach keeps the solve iterating"
        );
    }

    /// The shortcut applies only to the same pose, goals, settings and masses.
    #[test]
    fn fixed_point_shortcut_needs_the_same_inputs() {
        let (skeleton, mut solver, mut scratch, pose, goals) = settled();
        let at_rest = |solver: &FullBodySolver, s: &mut FullBodyScratch, p: &Pose, g| {
            Solve::new(solver, s, Last::Own).at_rest(p, g).is_some()
        };
        assert!(at_rest(&solver, &mut scratch, &pose, &goals));
        let mut moved = goals;
        moved.get_mut(Effector::RightHand).position.x += 1e-3;
        assert!(!at_rest(&solver, &mut scratch, &pose, &moved));
        let mut other = pose.clone();
        other.rotations[solver.joints[1].bone] = -other.rotations[solver.joints[1].bone];
        assert!(!at_rest(&solver, &mut scratch, &other, &goals));
        solver.settings_mut().max_turn *= 0.5;
        assert!(!at_rest(&solver, &mut scratch, &pose, &goals));
        solver.settings_mut().max_turn *= 2.0;
        assert!(at_rest(&solver, &mut scratch, &pose, &goals));
        let masses = solver.masses().clone();
        solver.set_masses(masses);
        assert!(!at_rest(&solver, &mut scratch, &pose, &goals));
        let (_, solver, mut scratch, pose, goals) = settled();
        scratch.reset();
        assert!(!at_rest(&solver, &mut scratch, &pose, &goals));
        let _ = skeleton;
    }
}
