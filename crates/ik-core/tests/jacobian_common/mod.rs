//! Shared fixtures for the Jacobian tests and the `arm_vs_k` bench: a seeded RNG, the 7-DOF
//! arm (ball shoulder, hinge elbow, ball wrist; 1 m) and in-limit random poses.
#![allow(dead_code, missing_docs)]

use ik_core::glam::{Quat, Vec2, Vec3};
use ik_core::jacobian::{JointSpec, SolverSettings, TaskSpec};
use ik_core::limits::{JointLimit, SwingTwistLimit};
use ik_core::{Bone, BoneTransform, Pose, Skeleton};

/// `SplitMix64`: small, seeded, reproducible.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
    pub fn unit_vec(&mut self) -> Vec3 {
        loop {
            let v = Vec3::new(
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
            );
            if v.length_squared() > 1e-4 && v.length_squared() <= 1.0 {
                return v.normalize();
            }
        }
    }
}

pub const UPPER: usize = 1;
pub const FORE: usize = 2;
pub const HAND: usize = 3;
pub const TIP: usize = 4;

pub fn shoulder_limit() -> SwingTwistLimit {
    SwingTwistLimit {
        twist_axis: Vec3::X,
        swing_axis: Vec3::Y,
        swing_half_angles: Vec2::new(1.4, 1.2),
        twist_min: -1.5,
        twist_max: 1.5,
    }
}

pub fn wrist_limit() -> SwingTwistLimit {
    SwingTwistLimit {
        twist_axis: Vec3::X,
        swing_axis: Vec3::Y,
        swing_half_angles: Vec2::new(0.9, 0.6),
        twist_min: -1.2,
        twist_max: 1.2,
    }
}

pub const ELBOW_MIN: f32 = 0.0;
pub const ELBOW_MAX: f32 = 2.5;

/// base → upper (shoulder, at the origin) → fore (+0.45 X) → hand (+0.4 X) → tip (+0.15 X).
pub fn arm_skeleton() -> Skeleton {
    let b = |name: &str, parent: Option<usize>, x: f32| {
        Bone::new(
            name,
            parent,
            BoneTransform::from_translation(Vec3::new(x, 0.0, 0.0)),
        )
    };
    Skeleton::try_new(vec![
        b("base", None, 0.0),
        b("upper", Some(0), 0.0),
        b("fore", Some(1), 0.45),
        b("hand", Some(2), 0.4),
        b("tip", Some(3), 0.15),
    ])
    .expect("valid arm")
}

pub fn arm_joints() -> Vec<JointSpec> {
    vec![
        JointSpec::ball(UPPER).with_limit(JointLimit::SwingTwist(shoulder_limit())),
        JointSpec::hinge(FORE, Vec3::Z, ELBOW_MIN, ELBOW_MAX),
        JointSpec::ball(HAND).with_limit(JointLimit::SwingTwist(wrist_limit())),
    ]
}

/// Task 0: tip position; task 1: tip orientation.
pub fn arm_tasks() -> Vec<TaskSpec> {
    vec![
        TaskSpec::position(TIP, Vec3::ZERO),
        TaskSpec::orientation(TIP),
    ]
}

pub fn arm_settings() -> SolverSettings {
    SolverSettings {
        max_iterations: 25,
        position_tolerance: 5e-5,
        angle_tolerance: 5e-4,
        ..SolverSettings::default()
    }
}

fn sample_swing_twist(rng: &mut Rng, l: &SwingTwistLimit) -> Quat {
    let r = rng.unit().sqrt();
    let phi = rng.range(0.0, core::f32::consts::TAU);
    let s = Vec2::new(
        l.swing_half_angles.x * r * phi.cos(),
        l.swing_half_angles.y * r * phi.sin(),
    );
    l.compose(s, rng.range(l.twist_min, l.twist_max))
}

/// A random pose with every joint inside its limit (rest rotations are identity).
pub fn random_arm_pose(skeleton: &Skeleton, rng: &mut Rng) -> Pose {
    let mut pose = skeleton.rest_pose();
    pose.rotations[UPPER] = sample_swing_twist(rng, &shoulder_limit());
    pose.rotations[FORE] = Quat::from_rotation_z(rng.range(ELBOW_MIN, ELBOW_MAX));
    pose.rotations[HAND] = sample_swing_twist(rng, &wrist_limit());
    pose
}

/// `count` reachable 6D tip targets from FK of random in-limit poses.
pub fn arm_targets(count: usize, seed: u64) -> Vec<(Vec3, Quat)> {
    let skeleton = arm_skeleton();
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let pose = random_arm_pose(&skeleton, &mut rng);
            let t = skeleton.model_transform(&pose, TIP);
            (t.translation, t.rotation)
        })
        .collect()
}

/// Whether every joint of `joints` is inside its limit in `pose` (tolerance 1e-4).
pub fn limits_respected(
    skeleton: &Skeleton,
    joints: &[JointSpec],
    pose: &Pose,
) -> Result<(), usize> {
    for j in joints {
        let rest = skeleton.bones()[j.bone].rest;
        if !j.limit.contains(
            rest.rotation,
            rest.translation,
            pose.rotations[j.bone],
            pose.translations[j.bone],
            1e-4,
        ) {
            return Err(j.bone);
        }
    }
    Ok(())
}

/// Joint-space distance (sum of rotation angles) between two poses over `bones`.
pub fn pose_distance(a: &Pose, b: &Pose, bones: &[usize]) -> f32 {
    bones
        .iter()
        .map(|&i| a.rotations[i].angle_between(b.rotations[i]))
        .sum()
}

/// Σ |log(aᵢ⁻¹ bᵢ)|² over `bones`: the metric the posture term descends.
pub fn posture_sq(a: &Pose, b: &Pose, bones: &[usize]) -> f32 {
    bones
        .iter()
        .map(|&i| {
            let q = a.rotations[i].inverse() * b.rotations[i];
            let angle = q.angle_between(Quat::IDENTITY);
            angle * angle
        })
        .sum()
}

/// The angle between two rotations, accurate near zero (glam's `angle_between` goes through
/// `acos` of a dot product and cannot resolve angles below about 5e-4 rad in `f32`).
pub fn rotation_angle(a: Quat, b: Quat) -> f32 {
    let d = a.inverse() * b;
    2.0 * Vec3::new(d.x, d.y, d.z).length().atan2(d.w.abs())
}
