//! An angular velocity limiter (Godot's `LimitAngularVelocityModifier3D`): a set of bones
//! never turns faster than a set speed relative to the limiter's previous output. Put it last
//! (or after any stage) to take the pops out of a solver's output — a target crossing a
//! singularity, a goal switching sides, a stage fading in — at a bounded speed.
//!
//! Each solve, each bone's local rotation (relative to its parent, as the pose holds it) is
//! compared with the limiter's output for it the frame before: if the turn between them is
//! more than `max_speed · dt` it is cut to that by a shortest-path slerp from the previous
//! output. The first solve (and the first after [`AngularVelocityLimiter::reset`]) passes the
//! pose through and records it. `dt` ≤ 0 or NaN holds every bone where it was; an infinite
//! `dt` or speed limits nothing.
//!
//! The bound holds on the limiter's own output: run it at weight 1 (a lower weight blends its
//! output with its input, which may turn faster). A bone's *model* rotation also turns with
//! its parent: limit the parents too to bound that.

use glam::Quat;

use crate::skeleton::Skeleton;
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport};

/// The limiter stage: see the [module docs](self).
#[derive(Clone, Debug)]
pub struct AngularVelocityLimiter {
    bones: Vec<usize>,
    /// The speed limit, radians per second (≥ 0; NaN counts as 0).
    pub max_speed: f32,
    /// Seconds since the last solve.
    pub dt: f32,
    previous: Vec<Quat>,
    primed: bool,
}

impl AngularVelocityLimiter {
    /// A limiter for `bones` at `max_speed` radians per second.
    #[must_use]
    pub fn new(bones: &[usize], max_speed: f32) -> Self {
        let mut bones = bones.to_vec();
        bones.sort_unstable();
        bones.dedup();
        Self {
            previous: vec![Quat::IDENTITY; bones.len()],
            bones,
            max_speed,
            dt: 1.0 / 60.0,
            primed: false,
        }
    }

    /// Forgets the previous output (the next solve passes the pose through).
    pub fn reset(&mut self) {
        self.primed = false;
    }

    /// The largest turn allowed this solve, radians (infinite: no limit).
    #[must_use]
    pub fn max_step(&self) -> f32 {
        let dt = if self.dt > 0.0 { self.dt } else { 0.0 };
        let speed = if self.max_speed > 0.0 {
            self.max_speed
        } else {
            0.0
        };
        let step = speed * dt;
        if step.is_nan() { 0.0 } else { step }
    }
}

impl Stage for AngularVelocityLimiter {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let len = skeleton.len().min(buffer.len());
        if let Some(&bone) = self.bones.iter().find(|&&b| b >= len) {
            return Err(StackError::BoneOutOfRange { bone, len });
        }
        let step = self.max_step();
        let mut limited = 0u32;
        let mut largest_cut = 0.0f32;
        for (k, &b) in self.bones.iter().enumerate() {
            let (q, t) = {
                let pose = buffer.pose();
                (pose.rotations[b], pose.translations[b])
            };
            if !q.is_finite() {
                return Err(StackError::NonFinite(NonFinite::InputPose));
            }
            let out = if self.primed {
                let prev = self.previous[k];
                // The turn from the previous output, shortest path, measured exactly (atan2,
                // not an approximate acos).
                let rel = prev.inverse() * q;
                let rel = if rel.w < 0.0 { -rel } else { rel };
                let sin_half = rel.xyz().length();
                let angle = 2.0 * sin_half.atan2(rel.w);
                if angle > step {
                    limited += 1;
                    largest_cut = largest_cut.max(angle - step);
                    let axis = rel.xyz() / sin_half;
                    (prev * Quat::from_axis_angle(axis, step)).normalize()
                } else {
                    q
                }
            } else {
                q
            };
            self.previous[k] = out;
            buffer.set_local(b, out, t);
        }
        self.primed = true;
        Ok(CustomReport {
            converged: limited == 0,
            iterations: 1,
            position_residual: 0.0,
            angle_residual: largest_cut,
        }
        .into())
    }
}
