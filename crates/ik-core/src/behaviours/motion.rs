//! Reaching over time: a [`GoalMotion`] moves a goal from where the animation puts the
//! effector to the target along a straight line (or an arc around a centre) at a speed or over
//! a duration with easing, and back when released; its [`GoalMotion::weight`] fades the IK in
//! and out the same way — so a hand reaching for a cup is an animation, not a snap (Final IK's
//! Interaction System; the "reaching animation" at the end of the Jacobian IK reference
//! article).
//!
//! It is a small value the caller (or a stage) advances with the frame's `dt` and samples for
//! any stage's goal: a [`LimbGoal`](crate::analytic::LimbGoal)'s target, a full-body
//! effector, an aim or look-at target.
//!
//! ```
//! use ik_core::behaviours::motion::{Easing, GoalMotion, MotionTiming};
//! use ik_core::glam::Vec3;
//!
//! let mut reach = GoalMotion::try_new(MotionTiming::Duration(0.5), Easing::SmoothStep)?;
//! reach.engage();
//! let (from, to) = (Vec3::ZERO, Vec3::X); // the animated hand, the cup
//! for _ in 0..30 {
//!     reach.advance(1.0 / 60.0, from, to);
//! }
//! assert!(reach.arrived());
//! assert!(reach.position(from, to).distance(to) < 1e-6);
//! # Ok::<(), ik_core::behaviours::BehaviourError>(())
//! ```
//!
//! # Timing
//!
//! The motion has a phase in `[0, 1]` that grows linearly with time while engaged and shrinks
//! at the same rate when released; the position and weight are the eased phase. With
//! [`MotionTiming::Duration`] the rate is `1 / duration`; with [`MotionTiming::Speed`] it is
//! `speed / path length` (re-read every frame, so a moving target is followed), i.e. the
//! *average* speed along the path is `speed` (easing makes it slower at the ends). The phase
//! reaches exactly 1 on the first frame whose accumulated time reaches the duration, so arrival
//! is on time within one frame at any frame rate.

use glam::{Quat, Vec3};

use super::BehaviourError;
use crate::pose::BoneTransform;

/// An easing curve on `[0, 1]` (each maps 0 to 0 and 1 to 1, monotonic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Easing {
    /// Constant speed.
    Linear,
    /// `3t² − 2t³`: starts and stops with zero velocity.
    #[default]
    SmoothStep,
    /// `6t⁵ − 15t⁴ + 10t³`: zero velocity and acceleration at both ends.
    SmootherStep,
    /// `(1 − cos πt) / 2`.
    SineInOut,
    /// Cubic ease in, ease out.
    CubicInOut,
}

impl Easing {
    /// The eased value of `t` (clamped to `[0, 1]`; NaN counts as 0).
    #[must_use]
    pub fn apply(self, t: f32) -> f32 {
        let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
        match self {
            Self::Linear => t,
            Self::SmoothStep => t * t * (3.0 - 2.0 * t),
            Self::SmootherStep => t * t * t * (t * (6.0 * t - 15.0) + 10.0),
            Self::SineInOut => 0.5 * (1.0 - (core::f32::consts::PI * t).cos()),
            Self::CubicInOut => {
                if t < 0.5 {
                    4.0 * t * t * t
                } else {
                    let u = 2.0 - 2.0 * t;
                    1.0 - 0.5 * u * u * u
                }
            }
        }
    }
}

/// How long a motion takes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MotionTiming {
    /// Seconds from start to target (and back).
    Duration(f32),
    /// Average speed along the path, model units per second.
    Speed(f32),
}

impl Default for MotionTiming {
    fn default() -> Self {
        Self::Duration(0.5)
    }
}

/// The path from the start to the target.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MotionPath {
    /// The straight line.
    #[default]
    Line,
    /// An arc around `center` (model space, e.g. the shoulder or the chest): the direction
    /// from the centre turns by the shortest arc while the distance changes linearly. A path
    /// through the centre (start or target on it) falls back to the line.
    Arc {
        /// The centre the arc turns around.
        center: Vec3,
    },
}

/// A goal moving from the animation to a target over time: see the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GoalMotion {
    timing: MotionTiming,
    /// The easing of the position and the weight.
    pub easing: Easing,
    /// The path.
    pub path: MotionPath,
    phase: f32,
    engaged: bool,
}

impl Default for GoalMotion {
    fn default() -> Self {
        Self {
            timing: MotionTiming::default(),
            easing: Easing::default(),
            path: MotionPath::Line,
            phase: 0.0,
            engaged: false,
        }
    }
}

impl GoalMotion {
    /// A released motion at its start (phase 0).
    ///
    /// # Errors
    /// [`BehaviourError::InvalidSetting`] if the duration or speed is not finite and positive.
    pub fn try_new(timing: MotionTiming, easing: Easing) -> Result<Self, BehaviourError> {
        let mut m = Self {
            easing,
            ..Self::default()
        };
        m.set_timing(timing)?;
        Ok(m)
    }

    /// The timing.
    #[must_use]
    pub fn timing(&self) -> MotionTiming {
        self.timing
    }

    /// Changes the timing (the phase is kept).
    ///
    /// # Errors
    /// [`BehaviourError::InvalidSetting`] if the duration or speed is not finite and positive.
    pub fn set_timing(&mut self, timing: MotionTiming) -> Result<(), BehaviourError> {
        let v = match timing {
            MotionTiming::Duration(d) => d,
            MotionTiming::Speed(s) => s,
        };
        if !(v.is_finite() && v > 0.0) {
            return Err(BehaviourError::InvalidSetting("motion duration or speed"));
        }
        self.timing = timing;
        Ok(())
    }

    /// Start moving toward the target (from wherever the motion is now).
    pub fn engage(&mut self) {
        self.engaged = true;
    }

    /// Start moving back to the animation.
    pub fn release(&mut self) {
        self.engaged = false;
    }

    /// Engages or releases.
    pub fn set_engaged(&mut self, engaged: bool) {
        self.engaged = engaged;
    }

    /// Whether the motion is heading for the target.
    #[must_use]
    pub fn is_engaged(&self) -> bool {
        self.engaged
    }

    /// The linear phase in `[0, 1]` (0: at the animation, 1: at the target).
    #[must_use]
    pub fn phase(&self) -> f32 {
        self.phase
    }

    /// Jumps to a phase (clamped; NaN counts as 0), e.g. 1 to start at the target.
    pub fn set_phase(&mut self, phase: f32) {
        self.phase = if phase.is_nan() {
            0.0
        } else {
            phase.clamp(0.0, 1.0)
        };
    }

    /// Engaged and at the target.
    #[must_use]
    pub fn arrived(&self) -> bool {
        self.engaged && self.phase >= 1.0
    }

    /// Released and back at the animation (the IK may be switched off).
    #[must_use]
    pub fn is_idle(&self) -> bool {
        !self.engaged && self.phase <= 0.0
    }

    /// The eased phase: the weight to give the IK (and the fraction of the path covered).
    #[must_use]
    pub fn weight(&self) -> f32 {
        self.easing.apply(self.phase)
    }

    /// The path's length from `from` to `to` (the arc's is its helix length).
    #[must_use]
    pub fn path_length(&self, from: Vec3, to: Vec3) -> f32 {
        match self.arc(from, to) {
            Some((_, r0, r1, angle)) => {
                let mean = 0.5 * (r0 + r1);
                (angle * mean).hypot(r1 - r0)
            }
            None => from.distance(to),
        }
    }

    /// Advances the phase by `dt` seconds (toward 1 when engaged, 0 when released) for a path
    /// from `from` (the effector where the animation puts it) to `to` (the target); returns the
    /// weight. A non-finite or negative `dt` counts as 0.
    pub fn advance(&mut self, dt: f32, from: Vec3, to: Vec3) -> f32 {
        let dt = if dt.is_finite() { dt.max(0.0) } else { 0.0 };
        let rate = match self.timing {
            MotionTiming::Duration(d) => 1.0 / d,
            MotionTiming::Speed(s) => {
                let len = self.path_length(from, to);
                if len.is_finite() && len > 1e-9 {
                    s / len
                } else {
                    f32::INFINITY
                }
            }
        };
        let step = rate * dt;
        let next = if self.engaged {
            self.phase + step
        } else {
            self.phase - step
        };
        // Accumulated rounding must not push arrival one frame late.
        self.phase = if next >= 1.0 - 1e-5 {
            1.0
        } else if next <= 1e-5 {
            0.0
        } else {
            next
        };
        self.weight()
    }

    /// The goal position at the current phase on the path from `from` to `to`. Non-finite
    /// input gives `from` (or `to` when `from` is the bad one and the motion has arrived).
    #[must_use]
    pub fn position(&self, from: Vec3, to: Vec3) -> Vec3 {
        let s = self.weight();
        if !from.is_finite() || !to.is_finite() {
            return if from.is_finite() { from } else { to };
        }
        match self.arc(from, to) {
            Some((center, r0, r1, _)) => {
                let (d0, d1) = ((from - center) / r0, (to - center) / r1);
                let turn = crate::rotation::shortest_arc(d0, d1);
                let dir = super::scale_rotation(turn, s) * d0;
                center + dir * (r0 + (r1 - r0) * s)
            }
            None => from.lerp(to, s),
        }
    }

    /// The goal transform at the current phase: the position as [`GoalMotion::position`], the
    /// rotation by shortest-path slerp from `from`'s to `to`'s (scale from `to`).
    #[must_use]
    pub fn transform(&self, from: &BoneTransform, to: &BoneTransform) -> BoneTransform {
        let s = self.weight();
        let (a, b) = (from.rotation, to.rotation);
        let b = if a.dot(b) < 0.0 { -b } else { b };
        let rotation = if a.is_finite() && b.is_finite() {
            a.slerp(b, s).normalize()
        } else {
            Quat::IDENTITY
        };
        BoneTransform {
            translation: self.position(from.translation, to.translation),
            rotation,
            scale: to.scale,
        }
    }

    /// `(center, start radius, end radius, angle)` when the path is a usable arc.
    fn arc(&self, from: Vec3, to: Vec3) -> Option<(Vec3, f32, f32, f32)> {
        let MotionPath::Arc { center } = self.path else {
            return None;
        };
        let (r0, r1) = (from.distance(center), to.distance(center));
        if !(center.is_finite() && r0 > 1e-6 && r1 > 1e-6 && r0.is_finite() && r1.is_finite()) {
            return None;
        }
        let cos = ((from - center) / r0)
            .dot((to - center) / r1)
            .clamp(-1.0, 1.0);
        Some((center, r0, r1, cos.acos()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn easings_end_at_zero_and_one_and_are_monotonic() {
        for e in [
            Easing::Linear,
            Easing::SmoothStep,
            Easing::SmootherStep,
            Easing::SineInOut,
            Easing::CubicInOut,
        ] {
            assert!(e.apply(0.0).abs() < 1e-6 && (e.apply(1.0) - 1.0).abs() < 1e-6);
            let mut last = 0.0;
            for i in 0..=100 {
                let v = e.apply(i as f32 / 100.0);
                assert!(v >= last - 1e-6, "{e:?} not monotonic");
                last = v;
            }
        }
    }

    #[test]
    fn release_goes_back_at_the_same_rate() {
        let mut m = GoalMotion::try_new(MotionTiming::Duration(1.0), Easing::Linear).unwrap();
        m.engage();
        for _ in 0..30 {
            m.advance(1.0 / 60.0, Vec3::ZERO, Vec3::X);
        }
        assert!((m.phase() - 0.5).abs() < 1e-4);
        m.release();
        for _ in 0..29 {
            m.advance(1.0 / 60.0, Vec3::ZERO, Vec3::X);
        }
        assert!(!m.is_idle());
        m.advance(1.0 / 60.0, Vec3::ZERO, Vec3::X);
        assert!(m.is_idle());
        assert!(GoalMotion::try_new(MotionTiming::Speed(0.0), Easing::Linear).is_err());
        assert!(GoalMotion::try_new(MotionTiming::Duration(f32::NAN), Easing::Linear).is_err());
        m.advance(f32::NAN, Vec3::ZERO, Vec3::X);
        assert!(m.position(Vec3::NAN, Vec3::X).is_finite());
    }

    #[test]
    fn arc_keeps_the_interpolated_radius() {
        let mut m = GoalMotion::try_new(MotionTiming::Duration(1.0), Easing::Linear).unwrap();
        m.path = MotionPath::Arc { center: Vec3::ZERO };
        m.engage();
        let (a, b) = (Vec3::X, Vec3::Z * 2.0);
        for i in 1..=10 {
            m.advance(0.1, a, b);
            let p = m.position(a, b);
            let s = i as f32 / 10.0;
            assert!((p.length() - (1.0 + s)).abs() < 1e-5, "radius at {s}");
            assert!(p.y.abs() < 1e-6);
        }
        assert!(m.position(a, b).distance(b) < 1e-5);
    }
}
