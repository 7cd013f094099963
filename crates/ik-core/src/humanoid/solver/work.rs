//! The solve's work area: buffers every solve writes before it reads them (the dense kernel's
//! Jacobian and factors, `J Jᵀ`'s blocks, the forward kinematics of the pose and of the kept
//! candidate, the start, best and posture-reference poses, the last step). Nothing in them
//! outlives a solve, so they are not a character's state: one set per thread and rig shape
//! serves every character that thread solves, and stays in that core's cache across a crowd,
//! where a set per character (about 48 KB of the ~92 KB a full-body character held) arrived
//! cold every frame. [`FullBodyScratch`] keeps only the frame-to-frame state (which goals give
//! way, the fixed point, the last output's solver id).
//!
//! A solve borrows the set for its solver's shape (columns and bones) from the thread's list
//! (made on the thread's first solve of that shape: the only allocation) and moves its
//! buffers into the scratch for the solve (a swap of the vectors' headers), so the solve reads
//! them where it always did; they go back to the list afterwards. A solve nested in another on
//! the same thread (none does) would make a set of its own.

use core::cell::RefCell;
use core::mem::swap;

use super::*;

/// One set of work buffers, sized for a solver of `cols` columns on `bones` bones.
#[derive(Debug)]
pub(super) struct Work {
    cols: usize,
    bones: usize,
    dls: DlsBuffers,
    pairs: Vec<[Vec3; 3]>,
    step_dq: Vec<f32>,
    model: Vec<BoneTransform>,
    model_best: Vec<BoneTransform>,
    start: Pose,
    best: Pose,
    reference: Pose,
}

thread_local! {
    /// This thread's work sets, one per solver shape it has solved.
    static WORK: RefCell<Vec<Work>> = const { RefCell::new(Vec::new()) };
}

impl Work {
    fn new(rig: &FullBodySolver) -> Self {
        let (n, cols) = (rig.bone_count, rig.cols);
        Self {
            cols,
            bones: n,
            dls: DlsBuffers::new(MAX_ROWS, cols),
            pairs: vec![[Vec3::ZERO; 3]; pair_base(MAX_BLOCKS)],
            step_dq: vec![0.0; cols],
            model: Vec::with_capacity(n),
            model_best: Vec::with_capacity(n),
            start: rig.rest.clone(),
            best: rig.rest.clone(),
            reference: rig.rest.clone(),
        }
    }

    /// Exchanges the buffers with `s`'s (twice: lends them, then takes them back).
    fn exchange(&mut self, s: &mut FullBodyScratch) {
        swap(&mut self.dls, &mut s.dls);
        swap(&mut self.pairs, &mut s.pairs);
        swap(&mut self.step_dq, &mut s.step_dq);
        swap(&mut self.model, &mut s.model);
        swap(&mut self.model_best, &mut s.model_best);
        swap(&mut self.start, &mut s.start);
        swap(&mut self.best, &mut s.best);
        swap(&mut self.reference, &mut s.reference);
    }

    /// Runs `f` with this thread's work set for `rig` (made on first use).
    pub(super) fn with<R>(rig: &FullBodySolver, f: impl FnOnce(&mut Self) -> R) -> R {
        let taken = WORK.with(|w| {
            let mut w = w.borrow_mut();
            let at = w
                .iter()
                .position(|x| x.cols == rig.cols && x.bones == rig.bone_count);
            at.map(|i| w.swap_remove(i))
        });
        let mut work = taken.unwrap_or_else(|| Self::new(rig));
        let r = f(&mut work);
        WORK.with(|w| w.borrow_mut().push(work));
        r
    }

    /// Runs `f` with `s` holding this thread's work buffers for `rig`.
    pub(super) fn lend<R>(
        rig: &FullBodySolver,
        s: &mut FullBodyScratch,
        f: impl FnOnce(&mut FullBodyScratch) -> R,
    ) -> R {
        Self::with(rig, |work| {
            work.exchange(s);
            // The forward kinematics in the lent buffer are another solve's.
            s.model_fresh = false;
            let r = f(s);
            work.exchange(s);
            r
        })
    }

    /// The forward-kinematics buffer (for [`FullBodySolver::center_of_mass`]).
    pub(super) fn model(&mut self) -> &mut Vec<BoneTransform> {
        &mut self.model
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Effector, bent_test_rig};
    use super::*;
    use crate::stack::{FullBodyStage, IkStack};

    /// Frames of each character's sequence: a cold first frame, tracking after it.
    const FRAMES: usize = 12;

    /// A character's goals at `frame` from its bent pose's (`base`): the left hand drifting
    /// out past its reach (iterating, giving way) and the pelvis sliding, still from frame 8
    /// on (the fixed point).
    fn goals_at(base: &FullBodyGoals, frame: usize) -> FullBodyGoals {
        let mut goals = *base;
        let f = frame.min(8) as f32;
        goals.get_mut(Effector::LeftHand).position += Vec3::new(0.08, 0.05, -0.04) * f;
        goals.get_mut(Effector::Pelvis).position += Vec3::new(0.01, -0.005, 0.0) * f;
        goals
    }

    /// Every frame's output pose and report, the characters solved one after the other
    /// (`interleave == false`) or frame by frame in turn on the same thread, through each
    /// character's own scratch (`stacked == false`) or a stack.
    fn run(seeds: &[u32], interleave: bool, stacked: bool) -> Vec<(Pose, FullBodyReport)> {
        let mut chars: Vec<_> = seeds.iter().map(|&s| bent_test_rig(s)).collect();
        let start: Vec<_> = chars
            .iter_mut()
            .map(|(sk, solver, pose)| solver.goals_at_pose(sk, pose))
            .collect();
        let mut stacks: Vec<_> = chars
            .iter()
            .zip(&start)
            .map(|((sk, solver, _), g)| {
                let mut stack = IkStack::new(sk.clone());
                let stage = FullBodyStage::new(solver.clone(), *g, sk.len());
                stack.push(stage).expect("stage fits");
                stack
            })
            .collect();
        let mut out = vec![Vec::new(); seeds.len()];
        let order: Vec<(usize, usize)> = if interleave {
            (0..FRAMES)
                .flat_map(|f| (0..seeds.len()).map(move |c| (c, f)))
                .collect()
        } else {
            (0..seeds.len())
                .flat_map(|c| (0..FRAMES).map(move |f| (c, f)))
                .collect()
        };
        for (c, frame) in order {
            let (skeleton, solver, pose) = &mut chars[c];
            let goals = goals_at(&start[c], frame);
            let result = if stacked {
                let stack = &mut stacks[c];
                if frame == 0 {
                    stack.set_input(pose).expect("pose fits");
                }
                let slot = stack.slot_mut(0).expect("one stage");
                slot.stage_mut::<FullBodyStage>().expect("full body").goals = goals;
                stack.solve();
                let report = match &stack.slot(0).expect("one stage").outcome {
                    crate::stack::StageOutcome::Solved(crate::stack::StageReport::FullBody(r)) => {
                        *r
                    }
                    other => panic!("not solved: {other:?}"),
                };
                (stack.pose().clone(), report)
            } else {
                let report = if frame == 0 {
                    solver.solve_cold(skeleton, pose, &goals)
                } else {
                    solver.solve(skeleton, pose, &goals)
                };
                (pose.clone(), report.expect("valid input"))
            };
            out[c].push(result);
        }
        out.into_iter().flatten().collect()
    }

    /// A pose's bits.
    fn bits(p: &Pose) -> Vec<u32> {
        let r = p.rotations.iter().flat_map(|q| q.to_array());
        let t = p.translations.iter().flat_map(Vec3::to_array);
        r.chain(t).map(f32::to_bits).collect()
    }

    /// Nothing a solve leaves in the thread's work area reaches the next solve: characters
    /// solved in turn on one thread give, to the bit, what each gives solved alone.
    #[test]
    fn the_work_area_carries_nothing_between_characters() {
        let seeds = [0x9e37_79b9, 0x2545_f491, 0x1234_5678];
        for stacked in [false, true] {
            let alone = run(&seeds, false, stacked);
            let turns = run(&seeds, true, stacked);
            assert_eq!(alone.len(), seeds.len() * FRAMES);
            for (i, (a, b)) in alone.iter().zip(&turns).enumerate() {
                assert!(
                    bits(&a.0) == bits(&b.0),
                    "stacked {stacked}: solve {i} differs"
                );
                assert_eq!(a.1, b.1, "stacked {stacked}: report {i} differs");
            }
            assert!(
                alone.iter().any(|r| r.1.iterations > 0),
                "the Jacobian ran in the sequence"
            );
        }
    }
}
