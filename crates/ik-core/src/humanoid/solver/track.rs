//! Bounded tracking ([`FullBodySolver::solve`](super::FullBodySolver::solve)): one
//! prioritised, bounded-step formulation.
//!
//! # The problem solved each frame
//!
//! Every enabled goal channel (a hand's position, a foot's rotation, the look-at, the centre of
//! mass) has a lexicographic level: its priority number
//! ([`EffectorGoal::priority`](super::EffectorGoal::priority), 0 first), then within one
//! number the humanoid order — the support (the pelvis and the centre of mass, then the
//! feet), then the hands, then the look-at — then the give-way sub-levels below (see *Goals
//! that cannot be met*).
//! Each level is a weighted least-squares problem in the null space of the levels above it:
//! weights decide within a level, priorities between levels. Each frame minimises, level
//! after level, the weighted squared residuals (in units of their tolerances) over the joint
//! rotations and the hips' translation, subject to
//!
//! * **joint limits**: every iterate lies within them (a step is projected onto them, joint by
//!   joint, before it is measured);
//! * **the per-frame turn bound**: no joint turns more than
//!   [`FullBodySettings::max_turn`](super::FullBodySettings::max_turn) from the pose passed in
//!   (the previous frame's output when the caller warm-starts). A move that turns a joint
//!   further is first shortened along its path (its joints slerped from their start by one
//!   fraction) until its largest turn is on the bound — a Gauss–Newton step as a whole, the
//!   analytic candidate part by part (the hips, the trunk, each limb, the neck: the joints
//!   that move the same effectors), so a limb's long swing does not slow the pelvis's part —
//!   and a joint still beyond it is moved onto the bound (slerp from its start, then the
//!   limit projection; if the projection left the bound, the joint keeps its start rotation;
//!   module `bounds`).
//!
//! Both are inequality constraints of the step, by an **active set**: a joint that a
//! candidate's step pushed onto its limit or its turn bound is *held* for the rest of the
//! frame, and each later step turns it only *along* the bounds it is held on. Its rotation
//! axes (the columns of a ball joint, the hips' rotation) have the outward normals of those
//! bounds projected out, and so has its increment: the normal of its limit is the direction
//! the limit's projection took off the step's move (the nearest point within the limit lies
//! along the normal there), the normal of its turn bound the direction of its turn from the
//! frame's input. So a head, chest or spine on the edge of its swing cone still turns about
//! the other two axes, and the other joints take up only the part it cannot do; a hinge
//! held on its range leaves the steps. (Leaving a held joint out whole — its columns zero, as
//! before — stops a trunk that slides along its limits: the `KayKit` mannequin without a
//! neck looked at a target its head and trunk could reach, and after the first step of a
//! frame held the spine, chest and head, every other step of the frame's budget moved no
//! joint that turns the head; `docs/benchmarks.md`, *Bounded tracking: held joints slide
//! along their bounds*.) The set only grows within a frame (a held joint stays held after a
//! kept step that did not push it again), so steps do not alternate between pushing a joint
//! out and holding it; it is empty again at the start of the next frame.
//!
//! # Steps and the acceptance rule
//!
//! A frame tries an analytic candidate first (the hips onto a pelvis goal, each limb's own
//! joints onto its goal, the head and neck onto the look-at; without a pelvis goal, or when
//! that is not kept, the same without the hips), then at most
//! [`FullBodySettings::max_iterations`](super::FullBodySettings::max_iterations) candidate
//! Gauss–Newton steps (the report's `iterations`) of the strictly prioritised least-squares problem (the crate's one dense
//! kernel, `DlsBuffers::prioritized_step`: each level solved in the null space of the levels
//! above it). A candidate is kept only if it lowers the **lexicographic cost** — the vector of
//! per-level costs, level 0 first — in the sense of [`better`]: the first level that changes
//! by its threshold (the deciding one) drops by more than
//! [`ACCEPT_RATIO`](super::accept::ACCEPT_RATIO) of its cost and its residual (the cost's
//! root, in tolerances) by at least one tolerance, or to 0, and no level above it gets worse
//! at all. Every candidate is judged as a whole: the levels after the deciding one may change
//! (a Gauss–Newton step's part of a level is that level's least-squares step in the null space
//! of the levels above it, its own descent and, to first order, no move of theirs). The
//! analytic candidate is shortened onto the turn bound **part by part** (the hips, the trunk,
//! each limb, the neck: module `bounds`), so a limb's long swing toward a goal beyond reach
//! does not slow the pelvis's part and the pelvis converges at its own pace, and the deciding
//! level must fall by a tolerance, so a lower level cannot ride for long on a deciding level
//! that creeps (`docs/benchmarks.md`, *Each level's own part of a step*, where judging the
//! analytic candidate's parts each on its own was measured as well and not kept). Within a level the goals trade by weight, as its
//! least-squares problem does; no goal or level is an exception (what a goal that cannot be met
//! may not do to the others is decided by the levels, below). A goal within its tolerance
//! costs exactly 0, so a met goal never blocks the levels below it with round-off. A rejected
//! candidate is undone bit for bit; a rejected Gauss–Newton step is retried with the joints it
//! pushed onto a bound held (above), else shortened by [`BACKTRACK`] along the same direction
//! (a backtracking line search: at a straight limb a full step overshoots to second order, a
//! short one does not), until the frame's budget is spent or the line search's own model
//! says no shorter step along that direction can be kept: after two rejected lengths of one
//! direction, the deciding level as a quadratic in the step's length through the kept cost
//! and the two (a Gauss–Newton step's first-order gain and second-order error) reaches at no
//! shorter length what [`better`] would keep — a direction that does not descend, or one that
//! descends by less than the rule asks — and the frame ends there
//! ([`shorter_may_pass`]; exact where the level is quadratic along the step: the outputs of
//! the gameplay, moving and VR benches are bit-identical with it, and the still ones' figures
//! unchanged, `docs/benchmarks.md`, *tail24*). After a rejected full step the next
//! one solves the levels down to the first with a cost only (the lower levels' rows left out;
//! when no level below it has a cost, that is the full step, and the line search goes on): a
//! large step for a far goal low in the order drifts the levels above it to second order, and
//! a step for the deciding level alone does not carry that drift. So do the frame's later
//! steps, kept or not, while that level is still the first with a cost (the rows that spoiled
//! the full step are still there, and so is the level they drifted); once it is met, the next
//! step is a full one again (`docs/benchmarks.md`, *alt24*). Each Gauss–Newton candidate
//! ends with the analytic limb finish (the step's second-order drift of every limb closed onto
//! its goal), judged with it.
//!
//! Nothing else touches the pose. Hence, **by construction**:
//!
//! * no joint turns more than the bound in one frame, and no joint leaves its limits;
//! * with goals and the input pose still, every frame either lowers the lexicographic cost by
//!   a fixed fraction at some level without raising a level above it, or returns its input
//!   bit for bit. A level can only rise when a level above it falls by such a fraction, and
//!   costs are bounded below, so only finitely many frames can change the pose: the output
//!   comes to rest and is then bit-identical — whether or not the goals can be met.
//!   The split of each limb goal into its level or a give-way sub-level (below) is a
//!   function of the pose and the goals alone, never of the frame's input or an earlier
//!   frame; a candidate is compared with the kept pose under the kept pose's split (below),
//!   so within one comparison both are scored by one function. That a goal crossing its
//!   limb's reach cannot make the comparisons cycle is not proven here: the robustness
//!   suite's still goals (every kind, every rig) check that the output comes to rest.
//!
//! A frame at that fixed point costs a comparison, not a solve: the solve is deterministic in
//! its input pose, goals, settings and masses, so when the last solve returned its input bit
//! for bit (every candidate rejected, or every goal met) and this one gets that same pose,
//! goals and settings, it returns that pose and report again without scoring a candidate
//! (module `rest`, `Solve::at_rest`; bit for bit what the full solve returns, tested). The
//! work of a moving frame is cut the same way, never its arithmetic: a shortened retry (the
//! line search) reuses the step it shortens instead of solving it again at the same pose, the
//! turn bound takes the exact angle (an arc tangent) only of joints a tangent test cannot
//! place within it, a candidate the finishes kept current is not run through forward
//! kinematics again, and the first level's `J Jᵀ` and the projections out of it run only over
//! the columns the rows share (each row's nonzero columns as a bit mask; the products left
//! out are zeros, so the sums are the same bits), and the first level is factorised and
//! projected out of part by part where its rows fall into groups that share no column (the
//! feet and the hands under a held pelvis: its `J Jᵀ` is block diagonal).
//!
//! # Goals that cannot be met (the give-way rule)
//!
//! A hand or foot goal in model space whose target lies farther from its limb's root
//! (shoulder, hip) than the limb's reach **at the pose being scored** is *beyond reach*: its
//! rows and its cost (position and rotation) drop to a sub-level below the goals of its level
//! within reach. Of the (at most two) limb goals of one level, the one nearer its reach (a
//! goal within reach counts as 0 beyond) ranks first: a goal beyond reach sits one sub-level
//! below each limb goal of its level nearer than it, so it keeps its sub-level when the
//! other comes within reach.
//!
//! **A leg's reach is read where the support level's own goals put the hip**, never from
//! how the pose being scored turns the hips (a step at any level — the balance goal's lean,
//! a hand's pull — that tilts a foot's goal out of reach would otherwise shed that foot's
//! cost and lower the support level's). With a pelvis goal in model space on the leg's level
//! or above: a 6D goal puts the hip at the goal, at its offset from the hips turned by the
//! goal's rotation. A position-only goal fixes where the hips are, not how they turn, so the
//! hip may lie anywhere at its offset's length from the goal: a foot is within reach when
//! some turn of the hips brings its hip within the leg's reach of it (a cap of hip directions
//! about the direction from the pelvis goal to the foot's goal, by the law of cosines), and
//! both feet are when one turn serves both (the two hips' offsets are a fixed angle apart: two
//! caps hold such a pair of directions when that angle lies within the caps' centre distance
//! plus or minus their half-angles). When no turn serves both, the foot on the later level,
//! else the one with the smaller cap, gives way. This reads the goals and the hips' rigid
//! offsets alone, so it is the same function at every pose. Without a pelvis goal on its
//! level or above, a leg's root is its hip as the pose has it, as an arm's is its shoulder.
//!
//! A hand goal beyond the **body's** reach — with a pelvis position goal on its level or
//! above, farther from that goal than the shoulder can get (the rest path from the hips to
//! the upper arm) plus the arm's reach — cannot be met by any pose: it drops further, to the
//! last group of its priority number, below the look-at (both hands there ordered by how far
//! beyond the body's reach they lie). A hand held far out of reach then does not hold the look-at
//! (or a hand of its number that is only on its way into reach) where it is; a hand that the
//! trunk could still bring within reach stays with its group.
//!
//! **A rotation beyond the limb's range gives way the same way.** A foot goal in model space
//! with a position and a rotation, under a pelvis position goal on its level or above, whose
//! rotation the ankle cannot turn to with the foot on the goal's position, has its rotation
//! rows and cost one sub-level below its level's goals (the one farther beyond its range below
//! the other when both feet have one; the position stays where it is). How far beyond the
//! range it lies is read from the goal, the hip (where the reach rule reads it: from a 6D
//! pelvis goal, else where the frame's input has it) and the leg's rest geometry and limits:
//! with the knee bent for the hip–goal distance, the leg's poses with the foot on the goal are
//! its swivel about the hip–goal axis, and the least the ankle's limit takes off the rotation
//! over that swivel is the part beyond. It is read once a frame, at the frame's input (a goal met there is within
//! range), so every candidate of the frame is judged with the same split. Under a 6D pelvis
//! goal the hip is fixed and that part is what no pose can meet, so only the rest counts, in
//! the rows and the cost: the foot turns as far as its ankle allows and is then met, and it
//! neither trades with the other foot nor blocks the levels below. Under a position-only
//! pelvis goal the hips' turn carries the hip, and with it the ankle's range, so part of it
//! may still be met from elsewhere: the whole residual counts on the sub-level (it no longer
//! drags the other foot through the hips' turn; it still comes before the levels below). A
//! hand's rotation is read at the frame's shoulder and gives way the same way (the whole
//! residual on the sub-level) only when it lies beyond the range there by more than one
//! frame's turn of the joint carrying the shoulder can change: the trunk and the clavicle
//! carry the shoulder within a frame (module `range`; `docs/benchmarks.md`, *A hand's rotation
//! beyond its arm's range gives way*).
//!
//! A goal beyond reach then moves only what the level's other goals leave free (the step
//! solves its rows in their null space, and the acceptance rule will not let it raise the
//! cost of a level above its own), so a hand held out of reach does not drag the other hand
//! or the feet off their goals; it still reaches as far as the body allows. The rule reads
//! only the goals and the pose it scores: deterministic, no history, the same at every
//! iterate of every frame. **A candidate is judged with the kept pose's split**: both are
//! scored with the goals on the levels where the kept pose puts them, and the candidate's own
//! split takes over once it is kept. So a step is never kept for moving a limb's root until
//! its goal counts as beyond reach (that would drop the goal's cost to a sub-level and read
//! as progress on its level while the hand drifts off), and a step that brings the root
//! close enough to put the goal within reach is judged on the sub-level it improves, not
//! rejected for raising its level (which held a hand at the edge of its reach).
//!
//! # What animators tune
//!
//! All in [`FullBodySettings`](super::FullBodySettings): `max_turn` (the per-frame turn bound),
//! `max_iterations` (the Gauss–Newton budget of a frame), `pull` (per effector: how much the
//! trunk and pelvis follow it, 0 = only its own limb), per-goal priorities, weights and
//! rotation weights (0 = position only), `posture_gain` (the lowest level: toward the input or
//! rest pose, [`PostureReference`](super::PostureReference)).

use glam::Vec3;

use super::accept::shorter_may_pass;
use super::bounds::tangent;
use super::levels::{Costs, LEVELS};
use super::{
    Dof, Effector, FullBodyGoals, FullBodyReport, GoalFrame, MAX_ROWS, PelvisPin, Solve, channel,
    clamp_len, com_column, effector_column, joint_axes, set3,
};
use crate::analytic::finish::quat_angle;
use crate::jacobian::dense::{dot_within, span};
use crate::pose::Pose;
use crate::rotation::to_rotation_vector;
use crate::skeleton::Skeleton;

/// The factor by which a rejected Gauss–Newton step is shortened before it is tried again
/// (backtracking along the same direction; the usual halving of an Armijo line search). At a
/// straight limb the step's second-order error (the limb must bend to follow) shrinks with
/// the square of its length and its first-order gain with the length, so a short enough step
/// is always kept where the direction is one of descent.
const BACKTRACK: f32 = 0.5;
/// The scale of a joint's Gauss–Newton columns for its
/// [`FullBodySettings::stiffness`](super::FullBodySettings::stiffness): `1 − stiffness`,
/// within 0..=1 (a stiffness that is not a number counts as 0).
fn freedom(stiffness: f32) -> f32 {
    if stiffness.is_nan() {
        1.0
    } else {
        1.0 - stiffness.clamp(0.0, 1.0)
    }
}

impl Solve<'_> {
    /// One tracking solve (see the module docs). `pose` is within limits (as `solve_mode`
    /// leaves it) and equal to `self.s.start`.
    pub(super) fn track(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
    ) -> FullBodyReport {
        let s = self.rig.settings;
        let mut report = FullBodyReport::default();
        self.s.pelvis_pin = PelvisPin::Free;
        self.s.balancing = goals.center_of_mass.enabled && goals.center_of_mass.weight > 0.0;
        self.s.saturated.fill(false);
        self.s.clipped.fill(false);
        self.s.frozen.fill(false);
        self.s.limit_normal.fill(Vec3::ZERO);
        self.fk(pose);
        self.rank_goals(skeleton, pose, goals);
        let (mut cost, split) = self.costs(skeleton, pose, goals, None);
        self.s.kept_reach = split;
        self.s.best.copy_from(pose);
        self.s.model_best.clone_from(&self.s.model);
        // The line search: the length of the next Gauss–Newton step, shortened after a
        // rejection, back to a full step after a kept one.
        let mut scale = 1.0f32;
        // After a rejected full step: the first level with a cost then. The steps solve down
        // to it (capped) while it is still the first level with a cost: the lower levels' rows
        // that spoiled the full step are still there, and so is the level they drifted.
        let mut capped: Option<usize> = None;
        // Whether the next step is the last one again (a shortened retry at the same pose,
        // with the same joints held and the same levels: `step` would compute it to the bit).
        let mut same_step = false;
        // The cost of the last rejected candidate, when the next one is its shortened retry.
        let mut ray: Option<Costs> = None;
        self.s.held = true;
        if s.analytic_limbs {
            // The analytic candidates: the hips onto the pelvis goal (within the turn bound),
            // then each limb's own joints onto its goal (the finish never moves another
            // effector); else the limb finish alone.
            let pinned = goals.get(Effector::Pelvis).frame == GoalFrame::Model
                && self.analytic(skeleton, pose, goals, true, &mut cost, &mut report);
            if !pinned {
                self.analytic(skeleton, pose, goals, false, &mut cost, &mut report);
            }
        }
        while report.iterations < s.max_iterations.max(1) {
            if cost.is_zero() {
                // Every goal within tolerance (and no posture to follow): no step can be kept.
                break;
            }
            // After a rejected full step, the step of the first level with a cost alone
            // (the lower levels' second-order drift can spoil it), until that level is met.
            let first = cost.level.iter().position(|&c| c > 0.0).unwrap_or(LEVELS);
            if capped.is_some_and(|l| l != first) {
                capped = None;
            }
            let cap = if capped.is_some() { first } else { LEVELS };
            let cols = self.rig.cols;
            if same_step {
                self.s.dls.dq[..cols].copy_from_slice(&self.s.step_dq[..cols]);
            } else if self.step(skeleton, pose, goals, cap) == 0 {
                break;
            } else {
                self.s.step_dq[..cols].copy_from_slice(&self.s.dls.dq[..cols]);
            }
            let retry = same_step;
            same_step = false;
            if scale < 1.0 {
                for v in &mut self.s.dls.dq[..cols] {
                    *v *= scale;
                }
            }
            report.iterations += 1;
            report.limits_hit = self.apply(skeleton, pose);
            if s.analytic_limbs {
                // The step's second-order drift of each limb closed analytically: part of
                // the candidate, judged with it.
                report.limits_hit += self.finish_limbs(skeleton, pose, goals);
            }
            self.bound_turns(skeleton, pose, false);
            let mut judged = cost;
            if self.accept(skeleton, pose, goals, &mut cost, Some(&mut judged)) {
                scale = 1.0;
                continue;
            }
            // (Only when a level below the deciding one has a cost: else the capped step is
            // the full step again.)
            let first = cost.level.iter().position(|&c| c > 0.0);
            let last = cost.level.iter().rposition(|&c| c > 0.0);
            if capped.is_none() && first != last {
                capped = first;
                continue;
            }
            // The active set: joints this step pushed onto a bound or limit are held in the
            // next one (they turn only along it); with none new, the step is shortened.
            let mut freed = false;
            for ji in 0..self.rig.joints.len() {
                let held = self.s.saturated[ji] || self.s.clipped[ji];
                if held && !self.s.frozen[ji] {
                    self.s.frozen[ji] = true;
                    freed = true;
                }
            }
            if !freed {
                // The line search ends where its own model says no shorter step is kept.
                if let (true, Some(far)) = (retry, &ray)
                    && !shorter_may_pass(&cost, far, &judged, BACKTRACK)
                {
                    break;
                }
                ray = Some(judged);
                scale *= BACKTRACK;
                same_step = true;
            }
        }
        // (The model is that of the kept pose: `accept` computed or restored it.)
        self.fk_stale(pose);
        report.converged = self.measure(skeleton, pose, goals, &mut report);
        report.cost = self.score(&report, goals);
        let resolved = self.resolved(skeleton, pose, goals);
        let g = resolved.as_ref().unwrap_or(goals);
        let reach = self.reach_split(g, goals);
        for (k, r) in reach.iter().enumerate() {
            let below = r.gives_way();
            // (A rotation beyond its limb's range gives way on its own: `rank_goals`.)
            let turn = self.s.rank[channel(k, true)] != self.s.rank[channel(k, false)];
            report.giving_way[k] = below || turn;
            self.s.demoted[channel(k, false)] = below;
            self.s.demoted[channel(k, true)] = below || turn;
        }
        report
    }

    /// Whether a 6D pelvis goal in model space on the first level is met: the hips are then
    /// held (its rows and the floating joint's columns leave the step; to first order the
    /// level's rows allow no motion of the hips anyway), which decouples the legs from the
    /// rest (see [`merge_disjoint_levels`]).
    fn pelvis_held(&self, goals: &FullBodyGoals) -> bool {
        let s = &self.rig.settings;
        let k = Effector::Pelvis as usize;
        let g = &goals.effectors[k];
        if !(g.wants_position() && g.wants_rotation()) || g.frame != GoalFrame::Model {
            return false;
        }
        let top = self.s.rank.iter().copied().min().unwrap_or(0);
        if self.s.rank[channel(k, false)] != top || self.s.rank[channel(k, true)] != top {
            return false;
        }
        let m = &self.s.model[self.rig.effector_bones[k]];
        m.translation.distance(g.position) <= s.position_tolerance
            && quat_angle(m.rotation, g.rotation) <= s.rotation_tolerance
    }

    /// The prioritised Gauss–Newton step at the current pose into `dls.dq` (model fresh), its
    /// damping scaled by `mu`; returns its row count (0: nothing to solve).
    fn step(
        &mut self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
        cap: usize,
    ) -> usize {
        let s = self.rig.settings;
        let cols = self.rig.cols;
        let given = goals;
        let resolved = self.resolved(skeleton, pose, goals);
        let goals = resolved.as_ref().unwrap_or(goals);
        let mut rows = 0;
        let mut row_of = [[usize::MAX; 2]; 7];
        let mut row_level = [0u8; MAX_ROWS];
        let mut wp = [0.0f32; 5];
        let mut wr = [0.0f32; 5];
        let pinned = self.pelvis_held(goals);
        // The sub-levels of each limb's goal, as `costs` ranks them at this pose.
        let reach = self.reach_split(goals, given);
        for (k, g) in goals.effectors.iter().enumerate() {
            if pinned && k == Effector::Pelvis as usize {
                continue;
            }
            let m = self.s.model[self.rig.effector_bones[k]];
            let first = self.s.rank[channel(k, false)];
            let level = reach[k].level(first);
            let rotation_level = reach[k].rotation_level(first, self.s.rank[channel(k, true)]);
            if g.wants_position() && level <= cap {
                wp[k] = g.position_weight.sqrt();
                let err = clamp_len(g.position - m.translation, s.max_position_step) * wp[k];
                self.s.dls.e[rows..rows + 3].copy_from_slice(&err.to_array());
                row_of[k][0] = rows;
                row_level[rows..rows + 3].fill(level as u8);
                rows += 3;
            }
            if g.wants_rotation() && rotation_level <= cap {
                wr[k] = g.rotation_weight.sqrt();
                let mut err = to_rotation_vector(g.rotation * m.rotation.inverse());
                if rotation_level != level {
                    // A rotation beyond the limb's range: only the part its range lets it
                    // meet (see `Solve::costs`).
                    let r = err.length();
                    err *= (r - self.s.beyond_range[k]).max(0.0) / r.max(f32::MIN_POSITIVE);
                }
                let err = clamp_len(err, s.max_rotation_step) * wr[k];
                self.s.dls.e[rows..rows + 3].copy_from_slice(&err.to_array());
                row_of[k][1] = rows;
                row_level[rows..rows + 3].fill(rotation_level as u8);
                rows += 3;
            }
        }
        let look = self.look_dirs(goals);
        let look_w = goals.look_at.weight.max(0.0).sqrt();
        let look = look.filter(|_| usize::from(self.s.rank[channel(5, false)]) <= cap);
        if let Some((d, t)) = look {
            // `t − d` is a chord of the unit sphere: at most 2 long, no clamp needed.
            let err = (t - d) * look_w;
            self.s.dls.e[rows..rows + 3].copy_from_slice(&err.to_array());
            row_of[5][0] = rows;
            row_level[rows..rows + 3].fill(self.s.rank[channel(5, false)]);
            rows += 3;
        }
        let com = if self.s.balancing && usize::from(self.s.rank[channel(6, false)]) <= cap {
            self.com_error(goals)
        } else {
            None
        };
        if let Some((err, _)) = com {
            let err = clamp_len(err, s.max_position_step) * goals.center_of_mass.weight.sqrt();
            self.s.dls.e[rows..rows + 3].copy_from_slice(&err.to_array());
            row_of[6][0] = rows;
            row_level[rows..rows + 3].fill(self.s.rank[channel(6, false)]);
            rows += 3;
        }
        if rows == 0 {
            return 0;
        }
        self.s.dls.jac[..rows * cols].fill(0.0);
        let head_dir = look.map_or(Vec3::ZERO, |(d, _)| d);
        let com_w = com.map_or(0.0, |(_, total)| {
            goals.center_of_mass.weight.max(0.0).sqrt() / total
        });
        for (ji, j) in self.rig.joints.iter().enumerate() {
            // A stiff joint's columns are scaled down (its step scaled back below).
            let free = freedom(s.stiffness[j.role.index()]);
            if free == 0.0 || (pinned && matches!(j.dof, Dof::Floating)) {
                continue;
            }
            let held = self.held_normals(skeleton, ji, pose);
            if self.s.frozen[ji] && (held.1 == 0 || matches!(j.dof, Dof::Hinge(_))) {
                continue;
            }
            let jac = &mut self.s.dls.jac[..rows * cols];
            let anchor = self.s.anchor_affects[ji];
            let m = self.s.model[j.bone];
            let pivot = m.translation;
            // Whether the joint moves more than one effector (trunk, pelvis): an effector's
            // rows see it scaled by the effector's pull.
            let shared = (j.affects & 0x1f).count_ones() > 1;
            let (mut m_sub, mut s_sub) = (0.0f32, Vec3::ZERO);
            if com.is_some() {
                for (i, seg) in self.rig.segments.iter().enumerate() {
                    if j.segments & (1 << i) != 0 {
                        let mass = self.rig.masses.get(seg.role);
                        m_sub += mass;
                        s_sub += self.s.segment_pos[i] * mass;
                    }
                }
            }
            let (axes, n) = joint_axes(j.dof, m.rotation);
            for (c, &(axis, translation)) in axes[..n].iter().enumerate() {
                let col = j.col + c;
                // A held joint turns only along its bounds (the outward normals projected out
                // of its rotation axes).
                let axis = if translation {
                    axis
                } else {
                    tangent(axis, held)
                };
                let mut below = j.affects | anchor;
                while below != 0 {
                    let k = below.trailing_zeros() as usize;
                    below &= below - 1;
                    if k == 5 {
                        if let (r, false) = (row_of[5][0], translation)
                            && r != usize::MAX
                        {
                            set3(jac, r, cols, col, axis.cross(head_dir) * (look_w * free));
                        }
                        continue;
                    }
                    if k == 6 {
                        let r = row_of[6][0];
                        if r != usize::MAX {
                            let v =
                                com_column(axis, translation, pivot, (m_sub, s_sub), self.rig.up)
                                    * (com_w * free);
                            set3(jac, r, cols, col, v);
                        }
                        continue;
                    }
                    let pull = if shared {
                        s.pull[k].clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    if pull == 0.0 {
                        continue;
                    }
                    let effector = self.s.model[self.rig.effector_bones[k]].translation;
                    effector_column(
                        jac,
                        (cols, col),
                        (axis, translation, pivot),
                        (u16::from(j.affects) | u16::from(anchor) << 8, k),
                        (row_of[k], effector, goals.effectors[k].position),
                        (wp[k] * pull * free, wr[k] * pull * free),
                    );
                }
            }
        }
        let lambda2 = super::jacobian::damping2(&self.s.dls.e[..rows], s.damping);
        let posture = s.posture_gain > 0.0 && cap >= LEVELS - 1;
        if posture {
            self.posture(skeleton, pose);
        }
        let mut masks = [ALL_COLUMNS; MAX_ROWS];
        row_masks(&self.s.dls.jac[..rows * cols], cols, &mut masks[..rows]);
        merge_disjoint_levels(&masks[..rows], &mut row_level[..rows]);
        // The first level's `J Jᵀ` from the rows' columns: a pair of rows that share none
        // gives 0, the others the dot product over the columns they share (bit for bit the
        // kernel's own, see `dot_within`).
        let gram = |jac: &[f32], level: u8, a: &mut [f32], m: usize| {
            // The level's rows (ascending) and their masks.
            let (mut sel, mut sm) = ([0usize; MAX_ROWS], [0u128; MAX_ROWS]);
            let mut k = 0;
            for (r, &l) in row_level[..rows].iter().enumerate() {
                if l == level {
                    (sel[k], sm[k]) = (r, masks[r]);
                    k += 1;
                }
            }
            for p in 0..m {
                let jp = &jac[sel[p] * cols..(sel[p] + 1) * cols];
                for q in 0..=p {
                    let shared = sm[p] & sm[q];
                    a[p * m + q] = if shared == 0 {
                        0.0
                    } else {
                        let (lo, hi) = span(shared);
                        dot_within(jp, &jac[sel[q] * cols..(sel[q] + 1) * cols], lo, hi)
                    };
                }
            }
        };
        let ok = self.s.dls.prioritized_step(
            rows,
            cols,
            &row_level[..rows],
            |_| Some(lambda2),
            Some(&gram),
            posture,
            Some(&masks[..rows]),
        );
        if !ok {
            self.s.dls.dq.fill(0.0);
        }
        // The rotation of a held joint: along its bounds only.
        for (ji, j) in self.rig.joints.iter().enumerate() {
            if !self.s.frozen[ji] || matches!(j.dof, Dof::Hinge(_)) {
                continue;
            }
            let held = self.held_normals(skeleton, ji, pose);
            let r0 = j.col + if matches!(j.dof, Dof::Floating) { 3 } else { 0 };
            let d = &mut self.s.dls.dq[r0..r0 + 3];
            let w = tangent(Vec3::new(d[0], d[1], d[2]), held);
            d.copy_from_slice(&w.to_array());
        }
        // Back from the scaled columns to joint increments (see `FullBodySettings::stiffness`).
        for j in &self.rig.joints {
            let free = freedom(s.stiffness[j.role.index()]);
            if free < 1.0 {
                for v in &mut self.s.dls.dq[j.col..j.col + j.dof.count()] {
                    *v *= free;
                }
            }
        }
        rows
    }
}

/// A row's column mask ([`row_masks`]) when it may use any column (more than 128 columns).
const ALL_COLUMNS: u128 = u128::MAX;

/// Each row's nonzero columns of `jac` (row-major, `cols` columns) as a bit mask, bit `c` for
/// column `c`; with more than 128 columns every mask is [`ALL_COLUMNS`].
fn row_masks(jac: &[f32], cols: usize, masks: &mut [u128]) {
    if cols > 128 {
        masks.fill(ALL_COLUMNS);
        return;
    }
    for (mask, row) in masks.iter_mut().zip(jac.chunks_exact(cols)) {
        // Four columns at a time, no branch per entry (one vector compare).
        let quads = row.chunks_exact(4);
        let tail = quads.remainder();
        let mut m = 0u128;
        for (k, q) in quads.enumerate() {
            let bits = u32::from(q[0] != 0.0)
                | u32::from(q[1] != 0.0) << 1
                | u32::from(q[2] != 0.0) << 2
                | u32::from(q[3] != 0.0) << 3;
            m |= u128::from(bits) << (4 * k);
        }
        for (i, &v) in tail.iter().enumerate() {
            m |= u128::from(v != 0.0) << (cols - tail.len() + i);
        }
        *mask = m;
    }
}

/// Relabels every level whose rows share no column with any level before it onto the first
/// level (`row_level`; `masks` the rows' columns, [`row_masks`]): its prioritised solution
/// is its own least-squares solution (the earlier levels' null-space projector is the identity
/// on its columns), which the first level's block-diagonal normal equations give as well — the
/// same step with fewer levels to project (the feet and the hands when the hips are held).
/// Changes nothing with more than 128 columns (every mask [`ALL_COLUMNS`]).
fn merge_disjoint_levels(masks: &[u128], row_level: &mut [u8]) {
    let rows = row_level.len();
    let first = row_level.iter().copied().min().unwrap_or(0);
    let mut union = 0u128;
    let mut level = first;
    loop {
        let mask = (0..rows)
            .filter(|&r| row_level[r] == level)
            .fold(0u128, |m, r| m | masks[r]);
        if level != first && mask & union == 0 {
            for l in row_level.iter_mut().filter(|l| **l == level) {
                *l = first;
            }
        }
        union |= mask;
        match row_level.iter().copied().filter(|&l| l > level).min() {
            Some(next) => level = next,
            None => break,
        }
    }
}
