//! The analytic bench's fixed, seeded limb and goal set (70 % reachable, 20 % beyond reach,
//! 10 % degenerate), shared by `benches/analytic.rs` (wall clock) and
//! `examples/analytic_instructions.rs` (instruction counts under callgrind).

use std::hint::black_box;
use std::time::Instant;

use glam::{Quat, Vec3};
use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::{Bone, BoneTransform, Pose, Skeleton};

/// Small deterministic generator (xorshift64*), so the goal set is the same on every run.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 40) as f32 / (1u64 << 24) as f32
    }
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next_f32()
    }
    fn unit(&mut self) -> Vec3 {
        loop {
            let v = Vec3::new(
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
            );
            if let Some(u) = v.try_normalize().filter(|_| v.length() <= 1.0) {
                return u;
            }
        }
    }
}

/// The limb, its skeleton, pose and parent transform, and the goal set.
pub struct Setup {
    /// pelvis → spine → clavicle → upper arm → forearm → hand.
    pub skeleton: Skeleton,
    /// The upper arm → forearm → hand limb.
    pub ik: TwoBoneIk,
    /// The rest pose (each solve then starts from the previous one's result).
    pub pose: Pose,
    /// Model transform of the clavicle, the limb root's parent.
    pub parent: BoneTransform,
    /// 1000 goals: per 10, 7 reachable (4 of them with an orientation), 2 beyond reach, 1
    /// degenerate.
    pub goals: Vec<LimbGoal>,
}

/// Builds the bench limb (a Mixamo-like arm with oblique rest rotations) and its 1000 goals.
pub fn setup() -> Setup {
    // pelvis → spine → clavicle → upper arm → forearm → hand, Mixamo-like oblique rest rotations.
    let r = |x: f32, y: f32, z: f32| Quat::from_scaled_axis(Vec3::new(x, y, z));
    let skeleton = Skeleton::try_new(vec![
        Bone::new(
            "pelvis",
            None,
            BoneTransform::from_translation(Vec3::new(0.0, 1.0, 0.0)),
        ),
        Bone::new(
            "spine",
            Some(0),
            BoneTransform::from_translation_rotation(Vec3::new(0.0, 0.1, 0.0), r(0.1, 0.0, 0.0)),
        ),
        Bone::new(
            "clavicle",
            Some(1),
            BoneTransform::from_translation_rotation(
                Vec3::new(0.05, 0.35, 0.0),
                r(0.3, -0.2, -1.4),
            ),
        ),
        Bone::new(
            "upper_arm",
            Some(2),
            BoneTransform::from_translation_rotation(Vec3::new(0.0, 0.15, 0.0), r(0.1, 0.2, 0.3)),
        ),
        Bone::new(
            "forearm",
            Some(3),
            BoneTransform::from_translation_rotation(Vec3::new(0.0, 0.28, 0.0), r(0.0, 0.1, 0.15)),
        ),
        Bone::new(
            "hand",
            Some(4),
            BoneTransform::from_translation_rotation(Vec3::new(0.0, 0.25, 0.0), r(0.0, -0.3, 0.0)),
        ),
    ])
    .expect("valid skeleton");
    let ik = TwoBoneIk::from_names(&skeleton, "upper_arm", "forearm", "hand").expect("valid limb");
    let pose = skeleton.rest_pose();
    let parent = skeleton.model_transform(&pose, 2);
    let shoulder = skeleton.model_transform(&pose, 3).translation;
    let [l1, l2] = ik.rest_lengths();
    let (min_reach, max_reach) = ((l1 - l2).abs(), l1 + l2);

    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let goals = (0..1000)
        .map(|i| {
            let dir = rng.unit();
            let pole = shoulder + rng.unit() * 0.5;
            match i % 10 {
                // 70 %: reachable; those with an even index (4 in 10 of all goals) with a target
                // orientation.
                0..=6 => {
                    let d = rng.range(min_reach * 1.05 + 0.01, max_reach * 0.98);
                    let goal = LimbGoal::new(shoulder + dir * d).with_pole(pole);
                    if i % 2 == 0 {
                        goal.with_orientation(Quat::from_scaled_axis(rng.unit() * 2.0))
                    } else {
                        goal
                    }
                }
                // 20 %: beyond reach.
                7 | 8 => {
                    LimbGoal::new(shoulder + dir * rng.range(1.05, 3.0) * max_reach).with_pole(pole)
                }
                // 10 %: degenerate, in turn at the shoulder, too close, or a collinear pole.
                _ => match (i / 10) % 3 {
                    0 => LimbGoal::new(shoulder).with_pole(pole),
                    1 => LimbGoal::new(shoulder + dir * min_reach * 0.3).with_pole(pole),
                    _ => LimbGoal::new(shoulder + dir * max_reach * 0.7)
                        .with_pole(shoulder + dir * max_reach * 1.5),
                },
            }
        })
        .collect();
    Setup {
        skeleton,
        ik,
        pose,
        parent,
        goals,
    }
}

impl Setup {
    /// Solves every goal with `solve_with_parent` (the hot path the plugin and the full-body
    /// solver use), from the pose the previous goal left.
    #[allow(dead_code, reason = "used by the benches, not by every includer")]
    #[inline]
    pub fn solve_all_with_parent(&mut self) {
        for goal in &self.goals {
            let _ = black_box(self.ik.solve_with_parent(
                &self.skeleton,
                &mut self.pose,
                black_box(goal),
                &self.parent,
            ));
        }
    }
}

/// Median and minimum over 201 timed runs of `solve_all` (after 20 untimed ones), in ns per
/// run (the minimum is the run least disturbed by other processes on a shared machine).
#[allow(dead_code, reason = "used by the benches, not by every includer")]
pub fn median_and_min_ns(mut solve_all: impl FnMut()) -> (f64, f64) {
    for _ in 0..20 {
        solve_all();
    }
    let mut samples: Vec<f64> = (0..201)
        .map(|_| {
            let t = Instant::now();
            solve_all();
            t.elapsed().as_nanos() as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2], samples[0])
}
