//! The per-frame turn bound and the joint limits as inequality constraints of a tracking
//! step (see the `track` module docs, *The problem solved each frame*): moving a candidate
//! back onto the turn bound within the limits ([`Solve::bound_turns`]), and the outward
//! normals of the bounds a held joint may only slide along ([`Solve::held_normals`],
//! [`tangent`]).

use glam::{Quat, Vec3};

use super::Solve;
use crate::analytic::finish::quat_angle;
use crate::pose::Pose;
use crate::rotation::to_rotation_vector;
use crate::skeleton::Skeleton;

/// A joint the step turns past the per-frame bound is put this fraction of the bound from
/// its start: float round-off in the slerp and the angle (about 1e-7 rad) must not read a
/// joint put exactly on the bound as beyond it (1e-4 of 15° is 0.0015°).
const BOUND_AIM: f32 = 1.0 - 1e-4;

/// `from` turned toward `to` — `angle` apart, more than `max` — until just inside `max`
/// ([`BOUND_AIM`] of it): the per-frame turn bound's move, shared with the VR body's
/// approach to its analytic pose.
pub(crate) fn onto_bound(from: Quat, to: Quat, max: f32, angle: f32) -> Quat {
    from.slerp(to, BOUND_AIM * max / angle).normalize()
}
/// The bits of a joint's `affects` (the effectors and the head it moves) that tell the parts
/// of an analytic candidate apart for the turn bound (see `Solve::bound_turns`).
const PART_BITS: u8 = 0x3f;
/// Projections onto the turn bound and the joint's limit tried (each from the last) before a
/// joint the limit projection keeps pushing past the bound is left where it started.
const BOUND_TRIES: usize = 2;
/// The relative margin by which a joint's turn must be inside the per-frame bound for the
/// cheap test of [`surely_within`] to pass it without the exact angle: far above the float
/// error of either (about 1e-7 relative), far below any turn that matters (0.015° of 15°).
const WITHIN_MARGIN: f32 = 1e-3;

/// Whether the turn from `q0` to `q` is surely within the angle whose half-angle tangent is
/// `tan_half` (the bound shrunk by [`WITHIN_MARGIN`]): the test `|v| ≤ tan(θ/2) |w|` on the
/// relative rotation `q0⁻¹ q = (v, w)`, without the arc tangent of
/// [`quat_angle`] (`2 atan2(|v|, |w|)`). A joint it does not pass is measured exactly, so
/// every decision is the one the exact angle makes (the margin covers both roundings).
fn surely_within(q0: Quat, q: Quat, tan_half: f32) -> bool {
    let r = q0.inverse() * q;
    let v2 = r.x * r.x + r.y * r.y + r.z * r.z;
    v2 <= tan_half * tan_half * (r.w * r.w)
}

impl Solve<'_> {
    /// Moves every joint that turned more than the per-frame bound from the frame's input
    /// (`self.s.start`) back onto it, within its limits (see the module docs); marks them in
    /// `clipped`.
    pub(super) fn bound_turns(&mut self, skeleton: &Skeleton, pose: &mut Pose, by_part: bool) {
        let max = self.rig.settings.max_turn;
        // A joint the cheap test passes turns less than the bound: the exact angle (an arc
        // tangent) only for the others. (Bounds of half a turn or more hold every turn.)
        let tan_half = if max < core::f32::consts::PI {
            (0.5 * max * (1.0 - WITHIN_MARGIN)).tan()
        } else {
            f32::INFINITY
        };
        let within = |q0: Quat, q: Quat| q == q0 || surely_within(q0, q, tan_half);
        // First the move is shortened along its path (every joint slerped from its start by
        // one fraction, the hips' translation with them) until the joint that turns most is
        // on the bound: clipping each joint on its own would bend the move (a limb closed by
        // its finish would no longer reach along its line). With `by_part`, each part on its
        // own (the joints that move the same effectors: the hips, the trunk, a limb, the
        // neck), so a part of a lower level does not shorten those of the levels above.
        let part = |j: &super::Joint| {
            if by_part {
                usize::from(j.affects & PART_BITS)
            } else {
                0
            }
        };
        let mut largest = [0.0f32; PART_BITS as usize + 1];
        let mut over = false;
        for j in &self.rig.joints {
            let (q0, q) = (self.s.start.rotations[j.bone], pose.rotations[j.bone]);
            if !within(q0, q) {
                let angle = quat_angle(q0, q);
                largest[part(j)] = largest[part(j)].max(angle);
                // (A turn that is not a number is held below, as one over the bound.)
                over |= angle.is_nan() || angle > max;
            }
        }
        if !over {
            // Every joint within the bound: the passes below would move none.
            self.s.clipped.fill(false);
            return;
        }
        for j in &self.rig.joints {
            let b = j.bone;
            let (q0, q) = (self.s.start.rotations[b], pose.rotations[b]);
            let t0 = self.s.start.translations[b];
            if largest[part(j)] > max && (q != q0 || pose.translations[b] != t0) {
                self.s.model_fresh = false;
                let t = BOUND_AIM * max / largest[part(j)];
                let mut r = q0.slerp(q, t).normalize();
                let mut tr = t0 + (pose.translations[b] - t0) * t;
                let rest = &skeleton.bones()[b].rest;
                j.limit
                    .clamp_valid(rest.rotation, rest.translation, &mut r, &mut tr);
                pose.rotations[b] = r;
                pose.translations[b] = tr;
            }
        }
        for (ji, j) in self.rig.joints.iter().enumerate() {
            let b = j.bone;
            let (q0, q) = (self.s.start.rotations[b], pose.rotations[b]);
            self.s.clipped[ji] = false;
            if within(q0, q) {
                continue;
            }
            let angle = quat_angle(q0, q);
            if angle <= max {
                continue;
            }
            self.s.clipped[ji] = true;
            self.s.model_fresh = false;
            let rest = &skeleton.bones()[b].rest;
            let t = pose.translations[b];
            // Aimed just inside the bound (round-off must not read a joint put on it as
            // beyond it); the limit projection may move it again, so the projected rotation
            // is aimed at once more before the joint is left where it started.
            let (mut target, mut turn) = (q, angle);
            let mut kept = None;
            for _ in 0..BOUND_TRIES {
                let mut r = onto_bound(q0, target, max, turn);
                let mut t = t;
                j.limit
                    .clamp_valid(rest.rotation, rest.translation, &mut r, &mut t);
                let turned = quat_angle(q0, r);
                if turned.is_nan() {
                    break;
                }
                if turned <= max {
                    kept = Some((r, t));
                    break;
                }
                (target, turn) = (r, turned);
            }
            let (r, t) = kept.unwrap_or((q0, self.s.start.translations[b]));
            pose.rotations[b] = r;
            pose.translations[b] = t;
        }
    }

    /// The outward normals (model space, orthonormal; the count) of the bounds joint `ji` is
    /// held on this frame: its limit where a step's clamp last met it, and its turn bound
    /// when it turns as far as that from the frame's input. None for a joint not held.
    pub(super) fn held_normals(
        &self,
        skeleton: &Skeleton,
        ji: usize,
        pose: &Pose,
    ) -> ([Vec3; 2], usize) {
        let mut out = ([Vec3::ZERO; 2], 0);
        if !self.s.frozen[ji] {
            return out;
        }
        let j = &self.rig.joints[ji];
        let b = j.bone;
        let parent = skeleton
            .parent(b)
            .map_or(Quat::IDENTITY, |p| self.s.model[p].rotation);
        let mut push = |v: Vec3| {
            let u = tangent(v, out).normalize_or_zero();
            if u != Vec3::ZERO && out.1 < 2 {
                out.0[out.1] = u;
                out.1 += 1;
            }
        };
        let limit = self.s.limit_normal[ji];
        if limit != Vec3::ZERO {
            push(parent * limit);
        }
        let (q0, q) = (self.s.start.rotations[b], pose.rotations[b]);
        let max = self.rig.settings.max_turn;
        if q != q0 && quat_angle(q0, q) >= BOUND_AIM * max * (1.0 - WITHIN_MARGIN) {
            push(parent * to_rotation_vector(q * q0.inverse()));
        }
        out
    }
}

/// `v` with its components along the orthonormal `normals` (the first `n`) taken out.
pub(super) fn tangent(v: Vec3, (normals, n): ([Vec3; 2], usize)) -> Vec3 {
    normals[..n].iter().fold(v, |v, &u| v - u * u.dot(v))
}
