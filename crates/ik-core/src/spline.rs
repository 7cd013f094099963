//! Spline IK: a chain of bones laid along a curve, with a roll that goes from a start value
//! at the root to an end value at the tip (UE's Spline IK, Godot's `SplineIK3D`).
//!
//! The curve is given by control points in model space ([`SplineGoal::points`]) and
//! evaluated here ([`CurveKind`]: a uniform Catmull-Rom spline through the points, or a
//! chain of cubic Bézier segments), sampled into a polyline of
//! [`SAMPLES_PER_BONE`] points per bone (a fixed count: no allocation per frame whatever the
//! number of control points). The engine's own curve types are converted on the plugin side.
//!
//! **Fit.** Bones only turn, so the chain's root stays where its parent puts it (start the
//! curve there) and each bone keeps its length. From the root, each joint is placed on the
//! curve at its bone's length (a chord) from the previous joint, searching forward along the
//! polyline; a curve shorter than the chain is continued along its end tangent. Each bone is
//! turned by the shortest arc from its direction (the rest offset to the next bone: no bone
//! axis assumed) to its chord, then rolled about it: the roll, accumulated along the chain,
//! goes linearly from [`SplineGoal::twist_start`] at the root to [`SplineGoal::twist_end`] at
//! the last bone.
//!
//! **Error.** [`SplineReport::fit_error`] is the largest distance from a joint (root and tip
//! included) to the sampled curve: small when the curve starts at the root and is at least
//! as long as the chain, growing with the curvature between samples and where the chain runs
//! past the curve's end.

use glam::{Quat, Vec3};
use thiserror::Error;

use crate::pose::{BoneTransform, Pose};
use crate::skeleton::{Chain, Skeleton};
use crate::stack::{CustomReport, PoseBuffer, StackError, Stage, StageReport};

/// Polyline samples per bone of the chain. Eight: a quarter turn of the curve per bone is then
/// sampled every 11°, a chord error under 0.5 % of the bone's length.
pub const SAMPLES_PER_BONE: usize = 8;

/// Relative slack on a squared chord length: f32 round-off of a joint lying exactly on a
/// sample (the curve's end).
const CHORD_SLACK: f32 = 1e-5;

/// Errors of a spline IK.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SplineError {
    /// The chain has fewer than two bones.
    #[error("a spline chain needs at least two bones")]
    TooShort,
    /// Too few control points for the curve kind (Catmull-Rom: 2; Bézier: 4, then 3 more per
    /// segment), or a point is not finite.
    #[error("the curve's control points are too few, of a bad count or not finite")]
    BadPoints,
    /// The chain does not match the skeleton or pose.
    #[error("the chain does not match the skeleton")]
    SkeletonMismatch,
}

/// How the control points make a curve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CurveKind {
    /// A uniform Catmull-Rom spline through every point (end tangents by reflecting the
    /// neighbour); at least 2 points.
    #[default]
    CatmullRom,
    /// Cubic Bézier segments `[p0, c0, c1, p1, c2, c3, p2, …]`: `3k + 1` points, k ≥ 1.
    Bezier,
}

/// A curve: its kind and control points (model space).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SplineGoal {
    /// How the points make the curve.
    pub kind: CurveKind,
    /// Control points, model space.
    pub points: Vec<Vec3>,
    /// The root bone's roll about its direction, radians.
    pub twist_start: f32,
    /// The last bone's roll (accumulated along the chain), radians.
    pub twist_end: f32,
}

impl SplineGoal {
    /// Number of curve segments, `None` when the points do not make a curve.
    fn segments(&self) -> Option<usize> {
        let n = self.points.len();
        if self.points.iter().any(|p| !p.is_finite()) {
            return None;
        }
        match self.kind {
            CurveKind::CatmullRom if n >= 2 => Some(n - 1),
            CurveKind::Bezier if n >= 4 && (n - 1).is_multiple_of(3) => Some((n - 1) / 3),
            _ => None,
        }
    }

    /// The curve at `u` in `[0, 1]` over its whole length of parameter.
    ///
    /// # Errors
    /// [`SplineError::BadPoints`].
    pub fn evaluate(&self, u: f32) -> Result<Vec3, SplineError> {
        let segments = self.segments().ok_or(SplineError::BadPoints)?;
        Ok(self.eval(segments, u))
    }

    fn eval(&self, segments: usize, u: f32) -> Vec3 {
        let x = u.clamp(0.0, 1.0) * segments as f32;
        let s = (x.floor() as usize).min(segments - 1);
        let t = x - s as f32;
        let p = &self.points;
        match self.kind {
            CurveKind::CatmullRom => {
                let (p1, p2) = (p[s], p[s + 1]);
                let p0 = if s > 0 { p[s - 1] } else { 2.0 * p1 - p2 };
                let p3 = if s + 2 < p.len() {
                    p[s + 2]
                } else {
                    2.0 * p2 - p1
                };
                let (t2, t3) = (t * t, t * t * t);
                0.5 * ((2.0 * p1)
                    + (p2 - p0) * t
                    + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * t2
                    + (3.0 * p1 - p0 - 3.0 * p2 + p3) * t3)
            }
            CurveKind::Bezier => {
                let (a, b, c, d) = (p[3 * s], p[3 * s + 1], p[3 * s + 2], p[3 * s + 3]);
                let m = 1.0 - t;
                a * (m * m * m) + b * (3.0 * m * m * t) + c * (3.0 * m * t * t) + d * (t * t * t)
            }
        }
    }
}

/// What a fit did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SplineReport {
    /// Largest distance from a joint to the sampled curve, model units.
    pub fit_error: f32,
    /// Bones placed past the curve's end (along its end tangent).
    pub past_end: u32,
}

/// A spline IK solver: see the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct SplineIk {
    bones: Vec<usize>,
    scales: Vec<Vec3>,
    samples: Vec<Vec3>,
    model: Vec<BoneTransform>,
}

impl SplineIk {
    /// A solver for `chain` (root to tip, at least two bones).
    ///
    /// # Errors
    /// [`SplineError::TooShort`], [`SplineError::SkeletonMismatch`].
    pub fn try_new(skeleton: &Skeleton, chain: &Chain) -> Result<Self, SplineError> {
        let bones = chain.bones().to_vec();
        if bones.len() < 2 {
            return Err(SplineError::TooShort);
        }
        if bones.iter().any(|&b| b >= skeleton.len()) {
            return Err(SplineError::SkeletonMismatch);
        }
        let count = SAMPLES_PER_BONE * bones.len() + 1;
        Ok(Self {
            scales: bones
                .iter()
                .map(|&b| skeleton.bones()[b].rest.scale)
                .collect(),
            samples: Vec::with_capacity(count),
            model: Vec::with_capacity(bones.len()),
            bones,
        })
    }

    /// The bones, root first.
    #[must_use]
    pub fn bones(&self) -> &[usize] {
        &self.bones
    }

    /// The sampled curve of the last solve.
    #[must_use]
    pub fn samples(&self) -> &[Vec3] {
        &self.samples
    }

    fn local(&self, pose: &Pose, i: usize) -> BoneTransform {
        pose.local_scaled(self.bones[i], self.scales[i])
    }

    /// Fits the chain to `goal`'s curve in place; `parent`: the model transform of the chain
    /// root's parent.
    ///
    /// # Errors
    /// [`SplineError::BadPoints`], [`SplineError::SkeletonMismatch`].
    pub fn solve_with_parent(
        &mut self,
        pose: &mut Pose,
        goal: &SplineGoal,
        parent: &BoneTransform,
    ) -> Result<SplineReport, SplineError> {
        let segments = goal.segments().ok_or(SplineError::BadPoints)?;
        if self.bones.iter().any(|&b| b >= pose.len()) || !parent.is_finite() {
            return Err(SplineError::SkeletonMismatch);
        }
        let n = self.bones.len();
        let count = SAMPLES_PER_BONE * n + 1;
        self.samples.clear();
        for k in 0..count {
            let u = k as f32 / (count - 1) as f32;
            self.samples.push(goal.eval(segments, u));
        }
        // Over the turned bones (all but the tip, which follows its parent).
        let twist = |i: usize| {
            let f = if n > 2 {
                i as f32 / (n - 2) as f32
            } else {
                0.0
            };
            goal.twist_start + (goal.twist_end - goal.twist_start) * f
        };
        let (t0, t1) = (twist(0), twist(n - 2));
        if !(t0.is_finite() && t1.is_finite()) {
            return Err(SplineError::BadPoints);
        }
        self.model.clear();
        let mut up = *parent;
        let mut segment = 0usize;
        let mut past_end = 0;
        let mut rolled = 0.0;
        for i in 0..n - 1 {
            let mut m = up.mul_transform(&self.local(pose, i));
            let origin = m.translation;
            let next = m.transform_point(pose.translations[self.bones[i + 1]]);
            let from = next - origin;
            let length = from.length();
            let (point, past) = chord_point(&self.samples, &mut segment, origin, length);
            past_end += u32::from(past);
            let to = point - origin;
            if let (Some(f), Some(t)) = (from.try_normalize(), to.try_normalize()) {
                let roll = twist(i) - rolled;
                rolled = twist(i);
                let q = Quat::from_axis_angle(t, roll) * crate::chain::unit_arc(f, t);
                m.rotation = (q * m.rotation).normalize();
                let local = (up.rotation.inverse() * m.rotation).normalize();
                if local.is_finite() {
                    pose.rotations[self.bones[i]] = local;
                }
            }
            m = up.mul_transform(&self.local(pose, i));
            self.model.push(m);
            up = m;
        }
        self.model.push(up.mul_transform(&self.local(pose, n - 1)));
        let fit_error = self
            .model
            .iter()
            .map(|m| distance_to_polyline(&self.samples, m.translation))
            .fold(0.0, f32::max);
        Ok(SplineReport {
            fit_error,
            past_end,
        })
    }
}

/// The point at distance `length` from `origin` along the polyline, searching forward from
/// `*segment` (updated); past the end, along the end tangent. Returns whether it was past.
fn chord_point(samples: &[Vec3], segment: &mut usize, origin: Vec3, length: f32) -> (Vec3, bool) {
    let r2 = length * length;
    while *segment + 1 < samples.len() {
        let (a, b) = (samples[*segment], samples[*segment + 1]);
        // (The relative slack takes a chord ending exactly on a sample despite round-off.)
        if (b - origin).length_squared() >= r2 * (1.0 - CHORD_SLACK) {
            // The sphere's exit on a→b: |a + s(b−a) − o|² = r², the larger root in [0, 1].
            return match sphere_exit(a, b, origin, r2) {
                Some(s) => (a + (b - a) * s, false),
                None => (b, false),
            };
        }
        *segment += 1;
    }
    // Past the end: along the end tangent from the last sample (inside the sphere, so the
    // ray leaves it once, at s > 0).
    let last = samples[samples.len() - 1];
    let before = samples[samples.len().saturating_sub(2)];
    let p = match (last - before).try_normalize() {
        Some(dir) => {
            let d = last - origin;
            let bq = d.dot(dir);
            let c = d.length_squared() - r2;
            let s = -bq + (bq * bq - c).max(0.0).sqrt();
            last + dir * s.max(0.0)
        }
        None => origin + (last - origin).normalize_or_zero() * length,
    };
    (p, true)
}

/// The larger root `s` of `|a + s(b−a) − o|² = r2`, if it is in `[0, 1]`.
fn sphere_exit(a: Vec3, b: Vec3, o: Vec3, r2: f32) -> Option<f32> {
    let d = b - a;
    let f = a - o;
    let qa = d.length_squared();
    if qa <= 0.0 {
        return None;
    }
    let qb = 2.0 * f.dot(d);
    let qc = f.length_squared() - r2;
    let disc = qb * qb - 4.0 * qa * qc;
    if disc < 0.0 {
        return None;
    }
    let s = (-qb + disc.sqrt()) / (2.0 * qa);
    (s >= 0.0).then_some(s.min(1.0))
}

fn distance_to_polyline(samples: &[Vec3], p: Vec3) -> f32 {
    samples
        .windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let ab = b - a;
            let d = ab.length_squared();
            let s = if d > 0.0 {
                ((p - a).dot(ab) / d).clamp(0.0, 1.0)
            } else {
                0.0
            };
            (a + ab * s).distance(p)
        })
        .fold(f32::INFINITY, f32::min)
}

/// A spline IK stage: [`SplineIk`] and its per-frame [`SplineGoal`] (mutate the points in
/// place: the same count every frame allocates nothing).
#[derive(Clone, Debug)]
pub struct SplineIkStage {
    ik: SplineIk,
    /// This frame's curve.
    pub goal: SplineGoal,
    report: SplineReport,
}

impl SplineIkStage {
    /// A stage for `ik` following `goal`.
    #[must_use]
    pub fn new(ik: SplineIk, goal: SplineGoal) -> Self {
        Self {
            ik,
            goal,
            report: SplineReport::default(),
        }
    }

    /// The last solve's report.
    #[must_use]
    pub fn report(&self) -> &SplineReport {
        &self.report
    }

    /// The solver.
    #[must_use]
    pub fn ik(&self) -> &SplineIk {
        &self.ik
    }
}

impl Stage for SplineIkStage {
    fn bones(&self) -> &[usize] {
        &self.ik.bones
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let root = self.ik.bones[0];
        let parent = buffer.model_transform_or_identity(skeleton, skeleton.parent(root));
        let result = self
            .ik
            .solve_with_parent(buffer.pose_unchecked_mut(), &self.goal, &parent);
        buffer.invalidate_from(root);
        let report = result?;
        self.report = report;
        Ok(CustomReport {
            converged: report.past_end == 0,
            iterations: 1,
            position_residual: report.fit_error,
            angle_residual: 0.0,
        }
        .into())
    }
}
