//! The analytic limb *finish*: closes a limb onto a target from wherever a numerical solve
//! (the full-body Jacobian) left it, joint limits respected.
//!
//! Unlike [`TwoBoneIk`](super::TwoBoneIk), which sets a limb from its rest geometry and a
//! pole, the finish keeps the incoming swivel as far as it can (frame-to-frame coherence) and
//! works on clamped joints with any limit: (1) the hinge angle of the lower joint for the exact
//! root–target distance (the in-range root nearest the current angle), (2) the upper bone
//! turned by the shortest arc so the end lands on the target, (2b) the limb swivelled about
//! the root–target axis to where the upper joint and, with an orientation goal, the end joint
//! need the least clamping (near the current swivel — within about 28°, or 6° for a
//! position-only goal, whose hand a clamped shoulder would otherwise leave off its target;
//! over a full turn only when `global_swivel`), (3)
//! forearm twist handed to an in-line twist bone, then the exact end orientation; every joint
//! clamped to its limit. The full-body solver ([`crate::humanoid::FullBodySolver`]) runs it
//! before and after its Jacobian passes.
//!
//! Per-frame cost: the clamps that score the unswivelled limb in (2b) are the clamps the upper
//! and end joints get when the swivel stays (the same inputs bit for bit, so they are reused,
//! not made twice), and the path is refreshed a second time only when the swivel or the clamp
//! turned the upper joint; the limits are valid (checked when the solver was set up), so the
//! clamps do not validate them again. The swivel search scores a swivel's end joint first and
//! clamps the upper joint only when the end's part has not already reached the best cost (the
//! same decisions, bit for bit: both parts are non-negative and rounding is monotonic).

use glam::{Quat, Vec3};

use crate::limits::JointLimit;
use crate::pose::{BoneTransform, Pose};
use crate::rotation::{angle_about_axis, shortest_arc, wrap_angle as wrap};
use crate::skeleton::Skeleton;

/// A limb as the finish sees it: root (upper), hinge (lower), optional in-line twist bone and
/// end bone, the bones from upper to end, and their limits.
#[derive(Clone, Debug)]
pub(crate) struct LimbChain {
    pub(crate) upper: usize,
    pub(crate) lower: usize,
    pub(crate) twist: Option<usize>,
    pub(crate) end: usize,
    /// Bones from `upper` to `end` inclusive, parents first.
    pub(crate) path: Vec<usize>,
    /// Limits of upper, lower (a [`JointLimit::Hinge`] for step 1), twist and end; valid
    /// ([`JointLimit::validate`]): the finish clamps without checking them again.
    pub(crate) limits: [JointLimit; 4],
}

/// The finish's target (model space): which parts are wanted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LimbTarget {
    pub(crate) position: Vec3,
    pub(crate) rotation: Quat,
    pub(crate) use_position: bool,
    pub(crate) use_rotation: bool,
}

/// Finishes `limb` onto `goal` (see the [module docs](self)); `model` holds the model
/// transforms of `pose` (at least along the limb and its parent), kept up to date along the
/// limb. Returns how many joints were clamped.
///
/// With `global_swivel` (cold solves) a hinge whose two angles for the root–target distance
/// are both within its range is finished from each, and the one that ends nearer the goal is
/// kept: where the end sits off the lower bone's line (a foot end bone behind the shank) the
/// distance is not monotone in the hinge angle, and the angle nearest the current one can
/// leave the upper joint no swivel within its limit (measured: the three.js robot's feet,
/// 25 of 1,000 cold goal sets missed by 1–44 mm; `docs/benchmarks.md`).
#[must_use = "the clamp count says whether a limit was in the way"]
pub(crate) fn finish_limb(
    skeleton: &Skeleton,
    pose: &mut Pose,
    model: &mut [BoneTransform],
    limb: &LimbChain,
    goal: &LimbTarget,
    global_swivel: bool,
) -> u32 {
    let n = limb.path.len();
    if !global_swivel || !goal.use_position || n > MAX_PATH {
        return finish_limb_from(
            skeleton,
            pose,
            model,
            limb,
            goal,
            global_swivel,
            Root::Nearest,
        )
        .0;
    }
    let mut start = [(Quat::IDENTITY, Vec3::ZERO, BoneTransform::IDENTITY); MAX_PATH];
    let save = |pose: &Pose, model: &[BoneTransform], out: &mut [(Quat, Vec3, BoneTransform)]| {
        for (o, &b) in out.iter_mut().zip(&limb.path) {
            *o = (pose.rotations[b], pose.translations[b], model[b]);
        }
    };
    let restore =
        |pose: &mut Pose, model: &mut [BoneTransform], from: &[(Quat, Vec3, BoneTransform)]| {
            for (o, &b) in from.iter().zip(&limb.path) {
                (pose.rotations[b], pose.translations[b], model[b]) = *o;
            }
        };
    save(pose, model, &mut start[..n]);
    let (hits, two_roots) =
        finish_limb_from(skeleton, pose, model, limb, goal, true, Root::Nearest);
    let miss = end_miss(model, limb, goal);
    if !two_roots || miss == 0.0 {
        return hits;
    }
    let mut nearest = [(Quat::IDENTITY, Vec3::ZERO, BoneTransform::IDENTITY); MAX_PATH];
    save(pose, model, &mut nearest[..n]);
    restore(pose, model, &start[..n]);
    let (other_hits, _) = finish_limb_from(skeleton, pose, model, limb, goal, true, Root::Other);
    if end_miss(model, limb, goal) < miss {
        other_hits
    } else {
        restore(pose, model, &nearest[..n]);
        hits
    }
}

/// The most bones from a limb's upper bone to its end that [`finish_limb`] tries both hinge
/// angles for (upper, lower, a twist bone, the end, and room for helper bones between).
const MAX_PATH: usize = 8;

/// Which of the hinge's two angles for the root–target distance the finish takes when both
/// are within the hinge's range.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Root {
    /// The one nearest the current angle.
    Nearest,
    /// The other one.
    Other,
}

/// How far `limb`'s end is from `goal` (model current along the limb): the position error in
/// units of the upper bone's length plus the rotation error in radians, for what is wanted.
fn end_miss(model: &[BoneTransform], limb: &LimbChain, goal: &LimbTarget) -> f32 {
    let m = model[limb.end];
    let upper = model[limb.upper]
        .translation
        .distance(model[limb.lower].translation)
        .max(f32::MIN_POSITIVE);
    let position = if goal.use_position {
        m.translation.distance(goal.position) / upper
    } else {
        0.0
    };
    let rotation = if goal.use_rotation {
        quat_angle(m.rotation, goal.rotation)
    } else {
        0.0
    };
    position + rotation
}

/// [`finish_limb`] with the hinge's angle chosen by `root`; also returns whether both of the
/// hinge's angles were within its range.
fn finish_limb_from(
    skeleton: &Skeleton,
    pose: &mut Pose,
    model: &mut [BoneTransform],
    limb: &LimbChain,
    goal: &LimbTarget,
    global_swivel: bool,
    root: Root,
) -> (u32, bool) {
    let mut hits = 0;
    let mut two_roots = false;
    let (upper, lower, end) = (limb.upper, limb.lower, limb.end);
    let from_lower = limb.path.iter().position(|&b| b == lower).unwrap_or(0);
    if goal.use_position {
        let lower_limit = limb.limits[1];
        if let JointLimit::Hinge { axis: h, min, max } = lower_limit {
            // 1. Hinge angle for the exact root–target distance.
            let s = model[upper].translation;
            let e = model[lower].translation;
            let w = model[end].translation;
            let a = (model[lower].rotation * h).normalize();
            let (u, v) = (e - s, w - e);
            let v_par = a * a.dot(v);
            let v_perp = v - v_par;
            let (ca, cb, cc) = (u.dot(v_par), u.dot(v_perp), u.dot(a.cross(v_perp)));
            let d = goal.position.distance(s);
            let k = 0.5 * (d * d - u.length_squared() - v.length_squared()) - ca;
            let r = cb.hypot(cc);
            if r > 1e-9 {
                let phi = cc.atan2(cb);
                let off = (k / r).clamp(-1.0, 1.0).acos();
                let rest_rot = skeleton.bones()[lower].rest.rotation;
                let theta0 = angle_about_axis(rest_rot.inverse() * pose.rotations[lower], h);
                let mut best: Option<(f32, f32)> = None;
                let deltas = [phi + off, phi - off].map(wrap);
                let in_range = deltas.map(|d| (min..=max).contains(&(theta0 + d)));
                two_roots = in_range[0] && in_range[1] && deltas[0] != deltas[1];
                for delta in deltas {
                    let theta = theta0 + delta;
                    let clamped = theta.clamp(min, max);
                    // Prefer in-range solutions, then the smaller move (or, for
                    // `Root::Other` with both in range, the larger).
                    let step = if two_roots && root == Root::Other {
                        -delta.abs()
                    } else {
                        delta.abs()
                    };
                    let cost = (theta - clamped).abs() * 10.0 + step;
                    if best.is_none_or(|(c, _)| cost < c) {
                        best = Some((cost, clamped - theta0));
                    }
                }
                if let Some((_, delta)) = best {
                    pose.rotations[lower] =
                        (pose.rotations[lower] * Quat::from_axis_angle(h, delta)).normalize();
                    hits += clamp_joint(skeleton, pose, lower_limit, lower);
                    refresh(skeleton, pose, model, &limb.path[from_lower..]);
                }
            }
        }
        // 2. Swing the upper bone so the end lands on the target.
        let s = model[upper].translation;
        let w = model[end].translation;
        let q = shortest_arc(w - s, goal.position - s);
        let parent_rot = skeleton
            .parent(upper)
            .map_or(Quat::IDENTITY, |p| model[p].rotation);
        pose.rotations[upper] = rotate_in_parent_q(parent_rot, q, pose.rotations[upper]);
        refresh(skeleton, pose, model, &limb.path);
    }
    // `model` is current along the path for this upper joint (refreshed just above, or as
    // the caller handed it over): unless the swivel or the clamp below turn it, the path
    // needs no second refresh.
    let synced = (pose.rotations[upper], pose.translations[upper]);
    // The clamps of the unswivelled limb (ψ = 0) that step 2b makes to score it: the upper
    // joint as it is, and the end joint at the exact target orientation under its parent's
    // model rotation (kept with it). When ψ = 0 stays, they are the clamps the joints get
    // below: bit for bit the same inputs, so they are reused rather than made twice.
    let mut upper0: Option<(Quat, Vec3, bool)> = None;
    let mut end0: Option<(Quat, Quat, Vec3, bool)> = None;
    if goal.use_position {
        // 2b. Swivel the limb about the root–target axis (the end stays put) to the angle where
        // the upper joint and (with an orientation goal) the end joint need the least
        // clamping.
        let s = model[upper].translation;
        if let Some(axis) = (goal.position - s).try_normalize() {
            let parent_rot = skeleton
                .parent(upper)
                .map_or(Quat::IDENTITY, |p| model[p].rotation);
            let end_parent = skeleton.parent(end).unwrap_or(end);
            let (upper_model, end_parent_model) =
                (model[upper].rotation, model[end_parent].rotation);
            let (ul, el) = (limb.limits[0], limb.limits[3]);
            let (ur, er) = (skeleton.bones()[upper].rest, skeleton.bones()[end].rest);
            // The cost of swivel `psi` if it is below `bound`: `upper + end + |ψ|·10⁻³`
            // (the clamps' angles), summed in that order. The end joint's part comes first:
            // both angles are ≥ 0 and rounding is monotonic, so the sum is at least
            // `end + |ψ|·10⁻³` as rounded, and a swivel that this already rules out skips
            // the upper joint's clamp — the same decisions, bit for bit.
            let cost = |psi: f32, bound: f32| {
                let q = Quat::from_axis_angle(axis, psi);
                let swivel = psi.abs() * 1e-3;
                let end_cost = if goal.use_rotation {
                    let mut e = ((q * end_parent_model).inverse() * goal.rotation).normalize();
                    let (e0, mut t1) = (e, er.translation);
                    el.clamp_valid(er.rotation, er.translation, &mut e, &mut t1);
                    quat_angle(e, e0)
                } else {
                    0.0
                };
                if end_cost + swivel >= bound {
                    return None;
                }
                let mut u = (parent_rot.inverse() * q * upper_model).normalize();
                let u0 = u;
                let mut t0 = ur.translation;
                ul.clamp_valid(ur.rotation, ur.translation, &mut u, &mut t0);
                let c = quat_angle(u, u0) + end_cost + swivel;
                (c < bound).then_some(c)
            };
            // ψ = 0 on the pose itself: the rotations `cost(0.0)` rebuilds (up to rounding)
            // from the model.
            let (mut u, mut ut) = (pose.rotations[upper], pose.translations[upper]);
            let u_hit = ul.clamp_valid(ur.rotation, ur.translation, &mut u, &mut ut);
            let e_in = (end_parent_model.inverse() * goal.rotation).normalize();
            let (mut e, mut et) = (e_in, pose.translations[end]);
            // Without an orientation goal the end joint is not set here (nor scored).
            let e_hit =
                goal.use_rotation && el.clamp_valid(er.rotation, er.translation, &mut e, &mut et);
            let end_cost = if goal.use_rotation {
                quat_angle(e, e_in)
            } else {
                0.0
            };
            let mut best = (quat_angle(u, pose.rotations[upper]) + end_cost, 0.0f32);
            let refine = |best: &mut (f32, f32), mut h: f32| {
                for _ in 0..6 {
                    for psi in [best.1 - h, best.1 + h] {
                        if let Some(c) = cost(psi, best.0) {
                            *best = (c, psi);
                        }
                    }
                    h *= 0.5;
                }
            };
            if best.0 > 1e-3 {
                // Near the current swivel first (frame-to-frame coherence), then, in a cold
                // solve only, everywhere: tracking never jumps to another swivel.
                // Without an orientation goal only the upper joint's clamp is scored: the
                // swivel stays within about 6° of where it is (a position-only hand target
                // moving along a limit must not swing the elbow round in one frame).
                refine(&mut best, if goal.use_rotation { 0.25 } else { 0.05 });
                if best.0 > 1e-3 && global_swivel {
                    let steps = 24;
                    for i in 1..steps {
                        let psi = wrap(i as f32 * core::f32::consts::TAU / steps as f32);
                        if let Some(c) = cost(psi, best.0) {
                            best = (c, psi);
                        }
                    }
                    refine(&mut best, core::f32::consts::TAU / steps as f32 / 2.0);
                }
                if best.1 != 0.0 {
                    let q = Quat::from_axis_angle(axis, best.1);
                    pose.rotations[upper] =
                        rotate_in_parent_q(parent_rot, q, pose.rotations[upper]);
                }
            }
            if best.1 == 0.0 {
                upper0 = Some((u, ut, u_hit));
                end0 = Some((end_parent_model, e, et, e_hit));
            }
        }
    }
    if let Some((u, ut, hit)) = upper0 {
        (pose.rotations[upper], pose.translations[upper]) = (u, ut);
        hits += u32::from(hit);
    } else {
        hits += clamp_joint(skeleton, pose, limb.limits[0], upper);
    }
    if !same_bits(synced, (pose.rotations[upper], pose.translations[upper])) {
        refresh(skeleton, pose, model, &limb.path);
    }
    if goal.use_rotation {
        // 3. Forearm twist to the in-line twist bone, then the exact end orientation.
        let end_parent = skeleton.parent(end).unwrap_or(end);
        if let Some(t) = limb.twist
            && let JointLimit::Hinge { axis: h, .. } = limb.limits[2]
        {
            let axis_m = (model[t].rotation * h).normalize();
            let needed = goal.rotation * model[end].rotation.inverse();
            let tau = angle_about_axis(needed, axis_m);
            pose.rotations[t] = (pose.rotations[t] * Quat::from_axis_angle(h, tau)).normalize();
            hits += clamp_joint(skeleton, pose, limb.limits[2], t);
            let from_t = limb.path.iter().position(|&b| b == t).unwrap_or(0);
            refresh(skeleton, pose, model, &limb.path[from_t..]);
        }
        let parent_rot = model[end_parent].rotation;
        match end0 {
            Some((m, e, et, hit)) if same_bits((m, Vec3::ZERO), (parent_rot, Vec3::ZERO)) => {
                (pose.rotations[end], pose.translations[end]) = (e, et);
                hits += u32::from(hit);
            }
            _ => {
                pose.rotations[end] = (parent_rot.inverse() * goal.rotation).normalize();
                hits += clamp_joint(skeleton, pose, limb.limits[3], end);
            }
        }
        refresh(skeleton, pose, model, &limb.path[limb.path.len() - 1..]);
    }
    (hits, two_roots)
}

/// Whether two (rotation, translation) pairs are the same bits (no tolerance, `-0.0 ≠ 0.0`).
fn same_bits(a: (Quat, Vec3), b: (Quat, Vec3)) -> bool {
    a.0.to_array().map(f32::to_bits) == b.0.to_array().map(f32::to_bits)
        && a.1.to_array().map(f32::to_bits) == b.1.to_array().map(f32::to_bits)
}

/// Recomputes `model` along `path` (parents first) from `pose`.
pub(crate) fn refresh(
    skeleton: &Skeleton,
    pose: &Pose,
    model: &mut [BoneTransform],
    path: &[usize],
) {
    for &b in path {
        let local = pose.local_transform(skeleton, b);
        model[b] = match skeleton.parent(b) {
            Some(p) => model[p].mul_transform(&local),
            None => local,
        };
    }
}

/// Clamps bone `b` of `pose` to `limit` (valid, see [`JointLimit::validate`]: it is not
/// checked again); 1 when it was outside, else 0.
pub(crate) fn clamp_joint(
    skeleton: &Skeleton,
    pose: &mut Pose,
    limit: JointLimit,
    b: usize,
) -> u32 {
    let rest = &skeleton.bones()[b].rest;
    let (r, t) = (&mut pose.rotations[b], &mut pose.translations[b]);
    u32::from(limit.clamp_valid(rest.rotation, rest.translation, r, t))
}

/// `local` turned by the model-space rotation `q` about its own origin (`parent_rot` is the
/// parent's model rotation).
#[must_use]
pub(crate) fn rotate_in_parent_q(parent_rot: Quat, q: Quat, local: Quat) -> Quat {
    (parent_rot.inverse() * q * parent_rot * local).normalize()
}

/// The angle between two unit rotations, radians in `[0, π]` (as
/// [`rotation_angle_between`](crate::rotation::rotation_angle_between) without its
/// normalisation: the swivel search calls it in its inner loop).
#[must_use]
pub(crate) fn quat_angle(a: Quat, b: Quat) -> f32 {
    // atan2 of the relative rotation's parts: acos(|a·b|) has no precision left near 1 in f32
    // (steps of about 0.04°).
    let r = a.inverse() * b;
    2.0 * Vec3::new(r.x, r.y, r.z).length().atan2(r.w.abs())
}
