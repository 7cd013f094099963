//! The range read of the give-way rule (see [`Solve::rank_goals`] and "Goals that cannot be
//! met" in the `track` module docs): how far a limb's rotation goal lies beyond what its end
//! joint (wrist, ankle) can turn to with the limb's end on the goal's position
//! ([`Solve::rotation_beyond`]), read once a frame from the goal, the limb's root and the
//! limb's rest geometry and limits; where the root is for that read ([`Solve::limb_root`]).
//!
//! * **A leg** under a pelvis goal on its level or above: the hip where a 6D pelvis goal puts
//!   it ([`Root::Fixed`]: the part beyond is what no pose meets, so only the rest counts), or
//!   where the frame starts under a position-only one ([`Root::Turning`]: the hips' turn
//!   carries the hip, so the whole residual counts on the sub-level below).
//! * **A hand**: the shoulder where the frame starts. The trunk and the clavicle carry the
//!   shoulder within the frame, so a rotation read beyond the range there may yet be met; it
//!   gives way only when it lies beyond by more than one frame's turn of the joint that
//!   carries the shoulder can change (see [`Solve::shoulder_swing`]), and its whole residual
//!   counts on the sub-level below (as a [`Root::Turning`] leg's). Measured in
//!   `docs/benchmarks.md`, *A hand's rotation beyond its arm's range gives way*.
//!
//! (A cache of the read keyed on its inputs was tried: it never hit on moving goals — 0 of
//! 241,144 reads on `--bench gameplay` — and 203 of 3,012 on the still CI runs, which the
//! fixed point already returns without ranking; removed.)

use super::{Effector, EffectorGoal, FullBodyGoals, GoalFrame, Limb, Solve, channel};
use crate::analytic::finish::quat_angle;
use crate::limits::JointLimit;
use crate::pose::BoneTransform;
use crate::rotation::{shortest_arc, wrap_angle};
use crate::skeleton::Skeleton;
use glam::{Quat, Vec3};

/// What holds a limb's root (see `Solve::limb_root`), for the rule on a rotation beyond the
/// limb's range (see [`Solve::rank_goals`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Root {
    /// A hip where a 6D pelvis goal on the leg's level or above puts it: the limb's range is
    /// read from the goals.
    Fixed,
    /// A hip that a position-only pelvis goal on the leg's level or above lets turn about the
    /// goal, at its offset from the hips.
    Turning,
    /// A shoulder (the trunk and the clavicle carry it), or a hip without a pelvis goal above
    /// it.
    Free,
}

impl Solve<'_> {
    /// Per limb effector, how far (radians) its rotation goal lies beyond the limb's range
    /// (see [`Solve::rotation_beyond`] and the module docs; 0 within it, or where nothing
    /// holds a leg's hip) and whether the goals fix the root ([`Root::Fixed`]): the goals `g`
    /// (resolved; `goals` as passed in) whose position and rotation are both wanted, in model
    /// space, and not met as the frame starts.
    pub(super) fn rotations_beyond_range(
        &self,
        skeleton: &Skeleton,
        g: &FullBodyGoals,
        goals: &FullBodyGoals,
    ) -> ([f32; 5], [bool; 5]) {
        let tolerance = self.rig.settings.rotation_tolerance;
        let (mut beyond, mut fixed) = ([0.0f32; 5], [false; 5]);
        for l in &self.rig.limbs {
            let k = l.effector;
            let e = &g.effectors[k];
            let now = quat_angle(self.s.model[l.chain.end].rotation, e.rotation);
            if !(e.wants_position() && e.wants_rotation())
                || goals.effectors[k].frame != GoalFrame::Model
                || now <= tolerance
            {
                continue;
            }
            let (root, held) = self.limb_root(l, g, goals);
            if held == Root::Free && l.on_hips {
                // A leg without a pelvis goal above it: nothing holds its hip.
                continue;
            }
            fixed[k] = held == Root::Fixed;
            if self.within_range_here(skeleton, l, root, e) {
                continue;
            }
            // A hand: beyond only by more than the shoulder may yet swing this frame (a read
            // that finds it within that is enough).
            let enough = if held == Root::Free {
                self.shoulder_swing(skeleton, l, root, e).max(tolerance)
            } else {
                tolerance
            };
            let read = self.rotation_beyond(skeleton, l, root, e, enough);
            if read > enough {
                beyond[k] = read;
            }
        }
        (beyond, fixed)
    }

    /// How far (radians) one frame may turn the direction from hand goal `e`'s position to
    /// limb `l`'s root (the shoulder, at `root` as the frame starts): the joint that carries
    /// the shoulder (the upper arm's parent: the clavicle, or the chest on a rig without one)
    /// turns at most the per-frame bound ([`FullBodySettings::max_turn`]), which moves the
    /// shoulder by at most the chord `δ = 2c·sin(max_turn / 2)` (`c`: the shoulder's distance
    /// from that joint), and a shoulder moved by `δ` turns the direction from a goal `d` away
    /// by at most `asin(δ / d)`. A range read at the frame's shoulder that the rotation lies
    /// beyond by no more than this may be met once the shoulder moves (the joints below the
    /// carrier, whose turns move the shoulder further, are left out: measured in
    /// `docs/benchmarks.md`, *A hand's rotation beyond its arm's range gives way*).
    ///
    /// [`FullBodySettings::max_turn`]: super::FullBodySettings::max_turn
    fn shoulder_swing(&self, skeleton: &Skeleton, l: &Limb, root: Vec3, e: &EffectorGoal) -> f32 {
        let Some(carrier) = skeleton.parent(l.chain.upper) else {
            return 0.0;
        };
        let c = self.s.model[carrier].translation.distance(root);
        let chord = 2.0 * c * (0.5 * self.rig.settings.max_turn.min(core::f32::consts::PI)).sin();
        let d = e.position.distance(root);
        if d <= chord {
            return core::f32::consts::FRAC_PI_2;
        }
        (chord / d).asin()
    }

    /// Where limb `l`'s root (shoulder, hip) is for the give-way rule, and what holds it: the
    /// hip of a leg on a level with a 6D pelvis goal in model space (`g` resolved, `given` as
    /// passed in) or below it where that goal puts it (the hip's offset turned by the goal's
    /// rotation; [`Root::Fixed`]); else the root where the current model has it.
    pub(super) fn limb_root(
        &self,
        l: &Limb,
        g: &FullBodyGoals,
        given: &FullBodyGoals,
    ) -> (Vec3, Root) {
        let p = Effector::Pelvis as usize;
        let pelvis = &g.effectors[p];
        let root = self.s.model[l.chain.upper].translation;
        let anchored = l.on_hips
            && pelvis.wants_position()
            && given.effectors[p].frame == GoalFrame::Model
            && self.s.rank[channel(p, false)] <= self.s.rank[channel(l.effector, false)];
        if !anchored {
            return (root, Root::Free);
        }
        if !pelvis.wants_rotation() {
            return (root, Root::Turning);
        }
        let hips = self.s.model[self.rig.effector_bones[p]];
        let offset = root - hips.translation;
        let hip = pelvis.position + pelvis.rotation * (hips.rotation.inverse() * offset);
        (hip, Root::Fixed)
    }

    /// Whether the current model is one of the limb's poses `rotation_beyond` searches (its
    /// end on goal `e`'s position, its root at `root`) and its end joint can turn to the
    /// goal's rotation there: then the rotation is within range, without the search.
    fn within_range_here(
        &self,
        skeleton: &Skeleton,
        l: &Limb,
        root: Vec3,
        e: &EffectorGoal,
    ) -> bool {
        let ch = &l.chain;
        let s = &self.rig.settings;
        let m = &self.s.model;
        let Some(parent) = skeleton.parent(ch.end) else {
            return false;
        };
        if m[ch.end].translation.distance(e.position) > s.position_tolerance
            || m[ch.upper].translation.distance(root) > s.position_tolerance
        {
            return false;
        }
        let rest = skeleton.bones()[ch.end].rest;
        let want = (m[parent].rotation.inverse() * e.rotation).normalize();
        let (mut q, mut t) = (want, rest.translation);
        ch.limits[3].clamp_valid(rest.rotation, rest.translation, &mut q, &mut t);
        quat_angle(q, want) <= s.rotation_tolerance
    }

    /// How far (radians) the rotation of limb `l`'s goal `e` lies beyond what the limb's end
    /// joint (the ankle) can turn to with the limb's end on the goal's position and its root
    /// at `root`: the least angle the end joint's limit takes off the rotation it needs, over
    /// every pose of the limb that puts its end there. With the hinge (the knee) bent for the
    /// root–goal distance (from its rest geometry, within its range), such poses are the
    /// limb's swivel about the root–goal axis (the one freedom left: the limb is then a rigid
    /// body turning about two fixed points). Read from the goal, the root and the limb's rest
    /// geometry and limits alone, not from how the pose turns the limb. The swivel is sampled
    /// a full turn at the end joint's narrowest half-range (a band of swivels within its range
    /// is about that wide; the per-frame turn bound for a limit without one), then refined by
    /// halving down to the rotation tolerance; 0 when the end joint has no limit or the limb
    /// no hinge. The search stops at the first read within `enough` (at least the rotation
    /// tolerance; a hand's [`Solve::shoulder_swing`]): the caller needs to know no more than
    /// that the rotation is within range by that much, and a read beyond `enough` is the same
    /// with or without it (no sample or refinement on the way came within it).
    fn rotation_beyond(
        &self,
        skeleton: &Skeleton,
        l: &Limb,
        root: Vec3,
        e: &EffectorGoal,
        enough: f32,
    ) -> f32 {
        let ch = &l.chain;
        let s = &self.rig.settings;
        let tolerance = s.rotation_tolerance;
        let end_limit = ch.limits[3];
        let narrowest = match end_limit {
            JointLimit::SwingTwist(t) => [
                t.swing_half_angles.x,
                t.swing_half_angles.y,
                0.5 * (t.twist_max - t.twist_min),
            ]
            .into_iter()
            .filter(|&a| a > 0.0)
            .fold(f32::INFINITY, f32::min),
            JointLimit::Hinge { min, max, .. } => 0.5 * (max - min),
            _ => return 0.0,
        };
        let (JointLimit::Hinge { axis: h, min, max }, None) = (ch.limits[1], ch.twist) else {
            return 0.0;
        };
        let to = e.position - root;
        let d = to.length();
        let step = if narrowest.is_finite() && narrowest > 0.0 {
            narrowest
        } else {
            s.max_turn
        }
        .max(tolerance);
        if !(d > 0.0 && step.is_finite() && step > 0.0) {
            return 0.0;
        }
        // The limb at rest in its upper bone's frame (model units: the upper's scale kept,
        // its rotation taken out).
        let bones = skeleton.bones();
        let mut m = BoneTransform {
            translation: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            scale: self.s.model[ch.upper].scale,
        };
        let (mut lower, mut end_parent) = (m, m);
        for &b in &ch.path[1..] {
            if b == ch.end {
                end_parent = m;
            }
            m = m.mul_transform(&bones[b].rest);
            if b == ch.lower {
                lower = m;
            }
        }
        // The hinge angles (from rest) that put the end `d` from the root: the end turns
        // about the hinge's axis `a` through the lower bone's origin (as the limb finish's).
        let a = (lower.rotation * h).normalize();
        let (u, v) = (lower.translation, m.translation - lower.translation);
        let v_par = a * a.dot(v);
        let v_perp = v - v_par;
        let (ca, cb, cc) = (u.dot(v_par), u.dot(v_perp), u.dot(a.cross(v_perp)));
        let k = 0.5 * (d * d - u.length_squared() - v.length_squared()) - ca;
        let r = cb.hypot(cc);
        let (phi, off) = if r > 0.0 {
            (cc.atan2(cb), (k / r).clamp(-1.0, 1.0).acos())
        } else {
            (0.0, 0.0)
        };
        let outside = |t: f32| (t - t.clamp(min, max)).abs();
        let roots = [wrap_angle(phi + off), wrap_angle(phi - off)];
        let nearest = outside(roots[0]).min(outside(roots[1]));
        let rest_end = bones[ch.end].rest;
        let n = (core::f32::consts::TAU / step).ceil();
        let spacing = core::f32::consts::TAU / n;
        let mut least = f32::INFINITY;
        // Both roots when both are within the hinge's range (two families of poses).
        for theta in roots.into_iter().filter(|&t| outside(t) <= nearest) {
            let bent = Quat::from_axis_angle(a, theta.clamp(min, max));
            let Some(dir) = (u + bent * v).try_normalize() else {
                continue;
            };
            let parent = bent * end_parent.rotation;
            // The goal's rotation in the upper bone's frame once the limb points at it; the
            // swivel `psi` turns the limb about `dir`.
            let aligned = shortest_arc(dir, to).inverse() * e.rotation;
            let clamped_off = |psi: f32| {
                let want = parent.inverse() * Quat::from_axis_angle(dir, -psi) * aligned;
                let want = want.normalize();
                let (mut q, mut t) = (want, rest_end.translation);
                end_limit.clamp_valid(rest_end.rotation, rest_end.translation, &mut q, &mut t);
                quat_angle(q, want)
            };
            // The samples nearest the limb's current swivel first (where a warm frame's
            // goal is met, so the scan usually stops at once); the samples and the least of
            // them (ties: the first index) do not depend on the order.
            let knee =
                shortest_arc(dir, to).inverse() * (self.s.model[ch.lower].translation - root);
            let (up, kp) = (u - dir * dir.dot(u), knee - dir * dir.dot(knee));
            let now = dir.dot(up.cross(kp)).atan2(up.dot(kp));
            let count = n as i64;
            let start = (now / spacing).round() as i64;
            let mut best = (f32::INFINITY, 0i64);
            for j in 0..count {
                let offset = if j % 2 == 0 { j / 2 } else { -(j + 1) / 2 };
                let i = (start + offset).rem_euclid(count);
                let c = clamped_off(i as f32 * spacing);
                if c <= enough {
                    return c;
                }
                if (c, i) < best {
                    best = (c, i);
                }
            }
            let mut best = (best.0, best.1 as f32 * spacing);
            let mut h = 0.5 * spacing;
            while h > tolerance && best.0 > enough {
                for psi in [best.1 - h, best.1 + h] {
                    let c = clamped_off(psi);
                    if c < best.0 {
                        best = (c, psi);
                    }
                }
                h *= 0.5;
            }
            least = least.min(best.0);
        }
        if least.is_finite() { least } else { 0.0 }
    }
}
