//! The lexicographic cost of bounded tracking (see the `track` module docs): the levels of
//! the goal channels, the give-way rule's sub-levels for limb goals beyond reach and for limb
//! rotation goals beyond the limb's range (the acceptance rule on these costs: module
//! `accept`).

use super::{Effector, FullBodyGoals, GoalFrame, Solve, channel, vec_angle};
use crate::analytic::finish::quat_angle;
use crate::pose::Pose;
use crate::skeleton::Skeleton;
use glam::Vec3;

/// Distinct priority numbers told apart (one per goal channel group at most); goals on
/// larger numbers share the last.
const PRIORITIES: usize = 7;
/// The humanoid order within one priority number: support (pelvis, feet, centre of mass),
/// then the hands, then the look-at (see [`group`]), then the hand goals beyond the body's
/// reach ([`FAR`]).
const GROUPS: usize = 4;
/// The last group of a priority number: hand goals beyond the body's reach (see
/// [`Solve::reach_split`]), which no pose can meet.
const FAR: usize = GROUPS - 1;
/// Sub-levels of one priority number and group: the goals within their limb's reach, then
/// those beyond it, the goal nearer its reach first (at most two limbs share a group: the
/// hands, or the feet; in [`FAR`] the hands, one sub-level each); a rotation beyond its
/// limb's range likewise, the one nearer the range first (see [`Solve::rank_goals`]). In the support group the
/// feet start one sub-level down (see [`support_sublevel`]): the pelvis and the centre of
/// mass, the feet within reach, then the feet beyond it.
const SUBLEVELS: usize = 4;
/// Lexicographic levels: per priority number and group, [`SUBLEVELS`] (see the module
/// docs); then the posture.
pub(super) const LEVELS: usize = PRIORITIES * GROUPS * SUBLEVELS + 1;

/// Where a goal channel's sub-levels start within its group: the feet one below the pelvis
/// and the centre of mass (1), every other channel at the top (0). A foot goal (its
/// rotation, say, beyond what the ankle's range allows at the pelvis goal) then never pulls
/// the pelvis off its goal: it moves only what the pelvis and the balance leave free, as
/// the give-way rule already reads a leg's reach from where the pelvis goal puts the hip,
/// and as the cold oracle of the tests and the corrective mode's order of giving way rank
/// them (`docs/benchmarks.md`, *Bounded tracking: held joints slide along their bounds*).
pub(super) fn support_sublevel(c: usize) -> usize {
    usize::from((channel(2, false)..=channel(3, true)).contains(&c))
}

/// A goal channel's place in the humanoid order within its priority number: the support
/// (pelvis, feet, centre of mass; see [`support_sublevel`]) 0, the hands 1, the look-at 2.
pub(super) fn group(c: usize) -> usize {
    if c == channel(5, false) {
        2
    } else if c == channel(0, false)
        || c == channel(0, true)
        || c == channel(1, false)
        || c == channel(1, true)
    {
        1
    } else {
        0
    }
}

/// The lexicographic cost of a pose: the summed cost per level (see [`Solve::rank_goals`]),
/// level 0 first.
#[derive(Clone, Copy)]
pub(super) struct Costs {
    pub(super) level: [f32; LEVELS],
}

impl Costs {
    const ZERO: Self = Self {
        level: [0.0; LEVELS],
    };

    /// Whether every level is 0 (every goal within tolerance, no posture to follow).
    pub(super) fn is_zero(&self) -> bool {
        self.level.iter().all(|&c| c == 0.0)
    }
}

/// Where a limb's position goal lies from the limb's root at one pose (see
/// [`Solve::reach_split`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Reach {
    /// 0: within the limb's reach; else the goal's sub-level below its level's goals within
    /// reach (1 or 2: the goal nearer its reach first).
    pub(super) sub: u8,
    /// How far the goal lies beyond the limb's reach (a far goal: beyond the body's reach,
    /// which no pose changes, so far goals keep their order as the body moves).
    deficit: f32,
    /// Whether the goal lies beyond the body's reach: no pose of the trunk brings it within
    /// the limb's reach, so it ranks in its priority number's last group ([`FAR`]), below the
    /// look-at (its sub-level `sub` there counts the far goals of that number nearer their
    /// reach).
    pub(super) far: bool,
}

impl Reach {
    /// The level of the goal's rows and costs (position and rotation), from its channel's
    /// first sub-level `first` (see [`Solve::rank_goals`]).
    pub(super) fn level(&self, first: u8) -> usize {
        let first = usize::from(first);
        if self.far {
            let number = first / (GROUPS * SUBLEVELS);
            (number * GROUPS + FAR) * SUBLEVELS + usize::from(self.sub)
        } else {
            first + usize::from(self.sub)
        }
    }

    /// The level of the goal's rotation rows and cost: the goal's level when the whole goal
    /// gives way (beyond reach), else its rotation channel's own (`first_rotation`, see
    /// [`Solve::rank_goals`]: below its level's goals when the rotation lies beyond the
    /// limb's range).
    pub(super) fn rotation_level(&self, first: u8, first_rotation: u8) -> usize {
        if self.gives_way() {
            self.level(first)
        } else {
            usize::from(first_rotation)
        }
    }

    /// Whether `self` and `other` put the goal on the same level (the same sub-level, both
    /// far or neither).
    pub(super) fn ranks_as(&self, other: &Self) -> bool {
        self.sub == other.sub && self.far == other.far
    }

    /// Whether the goal ranks below its level's goals within reach (it gives way).
    pub(super) fn gives_way(&self) -> bool {
        self.far || self.sub != 0
    }
}

/// A residual's cost: its excess over the tolerance, in tolerances, squared and weighted (0
/// within tolerance).
pub(super) fn excess(residual: f32, tolerance: f32, weight: f32) -> f32 {
    let x = (residual / tolerance - 1.0).max(0.0);
    weight * x * x
}

impl Solve<'_> {
    /// Ranks every goal channel into a lexicographic level (`self.s.rank`: the first
    /// sub-level of its priority number and group; `costs` and `step` put the part of a goal
    /// beyond its limb's reach on a sub-level below, at the pose they read); a limb's
    /// rotation goal beyond the limb's range has its rotation channel ranked below its level
    /// here, once a frame, and how far beyond in `self.s.beyond_range`; see the module docs.
    pub(super) fn rank_goals(&mut self, skeleton: &Skeleton, pose: &Pose, goals: &FullBodyGoals) {
        let resolved = self.resolved(skeleton, pose, goals);
        let g = resolved.as_ref().unwrap_or(goals);
        // Dense ranks of the priorities in use.
        let mut prio = [u8::MAX; super::CHANNELS];
        for k in 0..5 {
            prio[channel(k, false)] = g.effectors[k].priority;
            prio[channel(k, true)] = g.effectors[k].priority;
        }
        prio[channel(5, false)] = g.look_at.priority;
        prio[channel(6, false)] = g.center_of_mass.priority;
        for c in 0..super::CHANNELS {
            let below = (0..super::CHANNELS)
                .filter(|&d| prio[d] < prio[c])
                .fold(0u32, |m, d| m | 1 << prio[d].min(31));
            let level = below.count_ones().min(PRIORITIES as u32 - 1) as usize;
            let rank = (level * GROUPS + group(c)) * SUBLEVELS + support_sublevel(c);
            self.s.rank[c] = rank as u8;
        }
        // A limb's rotation goal beyond what its end joint can turn to (see the `range`
        // module: a leg's with its hip held by a pelvis goal, a hand's beyond what the
        // shoulder's swing this frame can change): its rotation channel gives way, one
        // sub-level below its level's goals, the one nearer the limb's range first (see
        // "Goals that cannot be met" in the `track` module docs). Read once a frame; a goal
        // met as the frame starts is within range.
        let tolerance = self.rig.settings.rotation_tolerance;
        let (beyond, fixed) = self.rotations_beyond_range(skeleton, g, goals);
        self.s.beyond_range = [0.0; 5];
        for l in &self.rig.limbs {
            let k = l.effector;
            if beyond[k] <= tolerance {
                continue;
            }
            // How far beyond counts as met only where the goals fix the limb's root (a leg
            // under a 6D pelvis goal): elsewhere the trunk or the hips' turn carry the root,
            // and with it the range, to where the part read here may yet be met.
            if fixed[k] {
                self.s.beyond_range[k] = beyond[k];
            }
            let level = self.s.rank[channel(k, false)];
            let nearer = self.nearer(
                k,
                |j| beyond[j] > tolerance && self.s.rank[channel(j, false)] == level,
                |j| beyond[j],
            );
            self.s.rank[channel(k, true)] = level + 1 + nearer;
        }
    }

    /// How many limbs' effectors `j` other than `k` that are its peers (`peer(j)`) lie nearer
    /// than `k` by `distance` (ties: the effector order): `k`'s place among the goals of its
    /// level that give way, nearest first (the give-way rule's sub-levels for a position
    /// beyond reach and for a rotation beyond the range alike).
    fn nearer(
        &self,
        k: usize,
        peer: impl Fn(usize) -> bool,
        distance: impl Fn(usize) -> f32,
    ) -> u8 {
        let n = self
            .rig
            .limbs
            .iter()
            .map(|o| o.effector)
            .filter(|&j| j != k && peer(j) && (distance(j), j) < (distance(k), k))
            .count();
        n as u8
    }

    /// The lexicographic cost of `pose` (the model must be fresh), its limb goals ranked by
    /// `split` (a candidate judged with the kept pose's split, see `Solve::accept`) or, with
    /// `None`, by the pose's own split; and the pose's own split.
    pub(super) fn costs(
        &mut self,
        skeleton: &Skeleton,
        pose: &Pose,
        goals: &FullBodyGoals,
        split: Option<&[Reach; 5]>,
    ) -> (Costs, [Reach; 5]) {
        let s = self.rig.settings;
        let resolved = self.resolved(skeleton, pose, goals);
        let g = resolved.as_ref().unwrap_or(goals);
        let mut c = Costs::ZERO;
        let own = self.reach_split(g, goals);
        let reach = split.unwrap_or(&own);
        for (k, e) in g.effectors.iter().enumerate() {
            let m = &self.s.model[self.rig.effector_bones[k]];
            // A goal beyond its limb's reach from where this pose puts the limb's root
            // counts on a sub-level below (see "Goals that cannot be met" in the module docs).
            let first = self.s.rank[channel(k, false)];
            if e.wants_position() {
                let r = m.translation.distance(e.position);
                c.level[reach[k].level(first)] +=
                    excess(r, s.position_tolerance, e.position_weight);
            }
            if e.wants_rotation() {
                // (A rotation beyond the limb's range on its own sub-level: `rank_goals`.)
                let level = reach[k].rotation_level(first, self.s.rank[channel(k, true)]);
                let mut r = quat_angle(m.rotation, e.rotation);
                if level != reach[k].level(first) {
                    // Only what the limb's range lets it meet counts.
                    r -= self.s.beyond_range[k];
                }
                c.level[level] += excess(r, s.rotation_tolerance, e.rotation_weight);
            }
        }
        if let Some((d, t)) = self.look_dirs(g) {
            let level = self.s.rank[channel(5, false)] as usize;
            c.level[level] += excess(vec_angle(d, t), s.rotation_tolerance, g.look_at.weight);
        }
        if let Some((err, _)) = self.com_error_from_model(g) {
            let level = self.s.rank[channel(6, false)] as usize;
            c.level[level] += excess(err.length(), s.com_tolerance, g.center_of_mass.weight);
        }
        if s.posture_gain > 0.0 {
            let mut p = 0.0;
            for j in &self.rig.joints {
                let a = quat_angle(pose.rotations[j.bone], self.s.reference.rotations[j.bone]);
                p += (a / s.rotation_tolerance).powi(2);
            }
            c.level[LEVELS - 1] = s.posture_gain * p;
        }
        (c, own)
    }

    /// Where each limb's position goal (`g`, resolved; `given` as passed in, whose frames
    /// say which goals are in model space) lies from the limb's root (a shoulder where the
    /// current model puts it; a hip where a pelvis goal on its level or above puts it, see
    /// [`Solve::legs_under_a_position_goal`] and the `track` module docs): within reach
    /// (sub-level 0), or beyond it, the part beyond on sub-level 1 or 2 — the goal nearer its
    /// reach first when both limbs of a level are beyond (ties: the effector order).
    /// Effectors without a limb and goals not in model space are always within reach.
    pub(super) fn reach_split(&self, g: &FullBodyGoals, given: &FullBodyGoals) -> [Reach; 5] {
        let mut out = [Reach::default(); 5];
        let p = Effector::Pelvis as usize;
        let pelvis = &g.effectors[p];
        // The legs whose hips a position-only pelvis goal holds: the hip turns on a sphere
        // about the goal (see `legs_under_a_position_goal`).
        let swung = self.legs_under_a_position_goal(g, given);
        for l in &self.rig.limbs {
            let k = l.effector;
            let e = &g.effectors[k];
            if !e.wants_position() || given.effectors[k].frame != GoalFrame::Model {
                continue;
            }
            if let Some(&(_, cos, _)) = swung.iter().flatten().find(|(j, _, _)| *j == k) {
                // (`cos` above 1: the cap of hip directions that reach the foot is empty;
                // `BEYOND_TOGETHER`: it is not, but no turn of the hips reaches both feet.)
                if cos > 1.0 {
                    out[k] = Reach {
                        sub: 1,
                        deficit: cos,
                        far: false,
                    };
                }
                continue;
            }
            // A limb hanging off the hips (a leg) on a level with a 6D pelvis goal or below
            // it: its root where that goal puts the hip.
            let (root, _) = self.limb_root(l, g, given);
            let to = e.position - root;
            let d = to.length();
            if d > l.reach {
                // A hand beyond the body's reach: with the hips held by a pelvis position goal
                // on this level or above, farther from that goal than the shoulder can get
                // (its rest path from the hips) plus the arm's reach — no pose meets it. (Feet
                // keep their group: measured in `docs/benchmarks.md`, *Bounded tracking as
                // the default*.)
                let anchored = pelvis.wants_position()
                    && given.effectors[p].frame == GoalFrame::Model
                    && self.s.rank[channel(p, false)] <= self.s.rank[channel(k, false)];
                let beyond_body = e.position.distance(pelvis.position) - (l.trunk + l.reach);
                let far = anchored && !l.on_hips && beyond_body > 0.0;
                // Far goals are ordered by how far beyond the body's reach they lie, which
                // no pose changes (so their order does not flip as the body moves).
                out[k] = Reach {
                    sub: 1,
                    deficit: if far { beyond_body } else { d - l.reach },
                    far,
                };
            }
        }
        // The limb goals of each level, nearest their reach first (a goal within reach has
        // nothing beyond it): a part beyond reach sits below those of the level's other limb
        // goals that are nearer, so it keeps its sub-level when one of them comes within
        // reach.
        let mut order = [0u8; 5];
        for l in &self.rig.limbs {
            let k = l.effector;
            if out[k].sub == 0 {
                continue;
            }
            // The far goals of one priority number share its last group (the other hand's,
            // a foot's); the others their own level.
            let far = out[k].far;
            let number =
                |j: usize| usize::from(self.s.rank[channel(j, false)]) / (GROUPS * SUBLEVELS);
            let level = self.s.rank[channel(k, false)];
            let nearer = self.nearer(
                k,
                |j| {
                    let peer = if far {
                        out[j].far && number(j) == number(k)
                    } else {
                        !out[j].far && self.s.rank[channel(j, false)] == level
                    };
                    peer && g.effectors[j].wants_position()
                        && given.effectors[j].frame == GoalFrame::Model
                },
                |j| out[j].deficit,
            );
            order[k] = if far { nearer } else { 1 + nearer };
        }
        for (r, o) in out.iter_mut().zip(order) {
            r.sub = o;
        }
        out
    }

    /// The legs whose hips a position-only pelvis goal in model space holds (on their level
    /// or above): the goal fixes where the hips are, not how they turn, so each hip may lie
    /// anywhere at its offset's length from the goal. A foot's goal is within reach of its
    /// leg when some turn of the hips puts the hip within the leg's reach of it — a cap of
    /// hip directions about the direction from the pelvis goal to the foot's goal, of
    /// half-angle `α` by the law of cosines — and both feet's goals together when one turn
    /// serves both: the two hips' offsets are a fixed angle `γ` apart, so two caps
    /// `θ` apart (centre to centre) hold such a pair of directions when
    /// `θ − α₁ − α₂ ≤ γ ≤ θ + α₁ + α₂`. Per leg: its effector, `cos α` (above 1 when no
    /// turn reaches its foot alone; [`BEYOND_TOGETHER`] for the one of two feet that gives
    /// way when no turn reaches both: the one on the later level, else the one with the
    /// smaller cap, else the right foot) and the cap's centre. Read from the goals and the
    /// hips' offsets alone, not from how the pose turns the hips: no step — the balance
    /// goal's lean, a hand's pull — sheds a planted foot's cost by tilting its goal out of
    /// reach, and a turn of the hips that reaches the feet is not ruled out either.
    fn legs_under_a_position_goal(
        &self,
        g: &FullBodyGoals,
        given: &FullBodyGoals,
    ) -> [Option<(usize, f32, Vec3)>; 2] {
        let p = Effector::Pelvis as usize;
        let pelvis = &g.effectors[p];
        let mut legs = [None; 2];
        if !pelvis.wants_position()
            || pelvis.wants_rotation()
            || given.effectors[p].frame != GoalFrame::Model
        {
            return legs;
        }
        let hips = self.s.model[self.rig.effector_bones[p]].translation;
        let mut offsets = [Vec3::ZERO; 2];
        let mut n = 0;
        for l in self.rig.limbs.iter().filter(|l| l.on_hips) {
            let k = l.effector;
            let e = &g.effectors[k];
            if n == 2
                || !e.wants_position()
                || given.effectors[k].frame != GoalFrame::Model
                || self.s.rank[channel(p, false)] > self.s.rank[channel(k, false)]
            {
                continue;
            }
            let offset = self.s.model[l.chain.upper].translation - hips;
            let to = e.position - pelvis.position;
            let (o, d) = (offset.length(), to.length());
            // |to − hip|² ≤ reach² with |hip| = o at angle α from `to`.
            let cos = if o * d > 0.0 {
                (o * o + d * d - l.reach * l.reach) / (2.0 * o * d)
            } else if (o - d).abs() <= l.reach {
                -1.0
            } else {
                BEYOND_TOGETHER
            };
            legs[n] = Some((k, cos.max(-1.0), to.normalize_or_zero()));
            offsets[n] = offset;
            n += 1;
        }
        if let [Some((a, ca, ua)), Some((b, cb, ub))] = legs
            && ca <= 1.0
            && cb <= 1.0
        {
            let gamma = vec_angle(offsets[0], offsets[1]);
            let theta = vec_angle(ua, ub);
            let spread = ca.acos() + cb.acos();
            if gamma < theta - spread || gamma > theta + spread {
                // The one that gives way: the later level, else the smaller cap, else the
                // later effector.
                let key = |k: usize, c: f32| (self.s.rank[channel(k, false)], c, k);
                let (ka, kb) = (key(a, ca), key(b, cb));
                let later = if (kb.0, kb.1, kb.2) > (ka.0, ka.1, ka.2) {
                    1
                } else {
                    0
                };
                if let Some(leg) = legs[later].as_mut() {
                    leg.1 = BEYOND_TOGETHER;
                }
            }
        }
        legs
    }
}

/// `cos α` of a foot that gives way because no turn of the hips reaches both feet (see
/// `Solve::legs_under_a_position_goal`): above any feasible cap's (at most 1), so it orders
/// after the feet that are beyond reach alone by less.
const BEYOND_TOGETHER: f32 = 2.0;

#[cfg(test)]
mod tests {
    use crate::humanoid::{
        BodyFrame, Effector, FullBodySolver, HumanoidMap, RestAxes, RigConvention, test_rig,
    };
    use glam::Quat;

    /// Under a position-only pelvis goal a leg's reach is read where the support level's
    /// goals put the hip: at the goal, turned by the hips' heading without their tilt. Hips
    /// tilted far enough to raise one hip beyond its foot's reach (the foot's goal within
    /// reach of the untilted hip) do not put that foot beyond reach: it keeps its level, and
    /// tracking meets it — a tilt (a hand's pull, the balance goal's lean) cannot shed a
    /// planted foot's cost.
    #[test]
    fn a_tilt_of_the_hips_does_not_put_a_planted_foot_beyond_reach() {
        let skeleton = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
        let (map, _) = HumanoidMap::from_skeleton(&skeleton);
        let mut solver = FullBodySolver::new(&skeleton, &map).expect("test rig maps");
        let frame = BodyFrame::from_rest(&skeleton, &map).expect("body frame");
        let rest = skeleton.rest_pose();
        let mut goals = solver.goals_at_pose(&skeleton, &rest);
        // The pelvis goal a centimetre below the rest hips (both legs within reach of the
        // untilted hips), position only.
        let pelvis = goals.get_mut(Effector::Pelvis);
        pelvis.rotation_weight = 0.0;
        pelvis.position -= frame.up * DROP;
        // The start: the rest pose with the hips rolled about the body's forward axis, which
        // raises one hip by more than the drop.
        let hips = solver.effector_bones()[Effector::Pelvis as usize];
        let mut pose = rest.clone();
        let parent = skeleton.parent(hips).map_or(Quat::IDENTITY, |p| {
            skeleton.model_transform(&rest, p).rotation
        });
        let roll = Quat::from_axis_angle(frame.forward, ROLL_DEG.to_radians());
        pose.rotations[hips] =
            (parent.inverse() * roll * parent * pose.rotations[hips]).normalize();
        let model = skeleton.model_transforms(&pose);
        let raised = [Effector::LeftFoot, Effector::RightFoot]
            .into_iter()
            .max_by(|&a, &b| {
                let lift = |e: Effector| {
                    let k = e as usize;
                    let l = solver.limbs.iter().find(|l| l.effector == k).expect("leg");
                    model[l.chain.upper]
                        .translation
                        .distance(goals.get(e).position)
                        - l.reach
                };
                lift(a).total_cmp(&lift(b))
            })
            .expect("two feet");
        let k = raised as usize;
        let leg = solver.limbs.iter().find(|l| l.effector == k).expect("leg");
        let tilted = model[leg.chain.upper]
            .translation
            .distance(goals.get(raised).position);
        assert!(
            tilted > leg.reach + DROP * 0.1,
            "the roll must raise the hip beyond reach: {tilted} vs {}",
            leg.reach
        );
        // Read at the tilted pose: a solver whose turn bound keeps the hips rolled reports
        // the foot within reach (the pelvis pin moves the hips onto the goal, no joint
        // turns more than a hundredth of a degree).
        let mut probe = solver.clone();
        probe.settings_mut().max_turn = PROBE_TURN_DEG.to_radians();
        let mut held = pose.clone();
        let report = probe
            .solve(&skeleton, &mut held, &goals)
            .expect("valid input");
        assert!(!report.giving_way[k], "{raised:?} gave way: {report:?}");
        for _ in 0..FRAMES {
            solver
                .solve(&skeleton, &mut pose, &goals)
                .expect("valid input");
        }
        let model = skeleton.model_transforms(&pose);
        let off = model[solver.effector_bones()[k]]
            .translation
            .distance(goals.get(raised).position);
        assert!(
            off <= solver.settings().position_tolerance,
            "{raised:?} off by {off} after {FRAMES} frames"
        );
    }

    /// How far below the rest hips the pelvis goal lies (model units: the test rig is 1.8 m
    /// tall).
    const DROP: f32 = 0.01;
    /// The hips' roll at the start: raises a hip by its offset (about 9 cm) times the sine,
    /// about 1.6 cm, more than [`DROP`].
    const ROLL_DEG: f32 = 10.0;
    /// The probe's per-frame turn bound: the hips stay rolled.
    const PROBE_TURN_DEG: f32 = 0.01;
    /// Frames tracked: the roll undone at the per-frame turn bound (15°) with room to spare.
    const FRAMES: usize = 5;
}
