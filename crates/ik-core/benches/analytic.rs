//! Analytic two-bone limb IK: nanoseconds per solve over a fixed, seeded set of goals
//! (70 % reachable, 20 % beyond reach, 10 % degenerate: at the shoulder, closer than
//! |L1 − L2|, pole collinear with the target).
//!
//! Besides criterion's estimates it prints the median ns per solve over batches of the whole
//! set, for `solve_with_parent` (the hot path the plugin and the full-body solver use) and for
//! `solve` (which also walks the root's ancestors), and their ratio.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
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

struct Setup {
    skeleton: Skeleton,
    ik: TwoBoneIk,
    pose: Pose,
    parent: BoneTransform,
    goals: Vec<LimbGoal>,
}

fn setup() -> Setup {
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
                // 70 %: reachable, half of them with a target orientation.
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

fn bench_analytic(c: &mut Criterion) {
    let Setup {
        skeleton,
        ik,
        mut pose,
        parent,
        goals,
    } = setup();
    let mut i = 0usize;
    c.bench_function("two_bone_solve_with_parent", |b| {
        b.iter(|| {
            let goal = &goals[i % goals.len()];
            i = i.wrapping_add(1);
            black_box(ik.solve_with_parent(&skeleton, &mut pose, black_box(goal), &parent))
        });
    });
    c.bench_function("two_bone_solve", |b| {
        b.iter(|| {
            let goal = &goals[i % goals.len()];
            i = i.wrapping_add(1);
            black_box(ik.solve(&skeleton, &mut pose, black_box(goal)))
        });
    });
}

/// Median over batches of the whole goal set, in ns per solve.
fn median_ns(mut solve_all: impl FnMut()) -> f64 {
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
    samples[samples.len() / 2]
}

fn print_medians() {
    let Setup {
        skeleton,
        ik,
        mut pose,
        parent,
        goals,
    } = setup();
    let n = goals.len() as f64;
    let with_parent = median_ns(|| {
        for goal in &goals {
            let _ = black_box(ik.solve_with_parent(&skeleton, &mut pose, black_box(goal), &parent));
        }
    }) / n;
    let full = median_ns(|| {
        for goal in &goals {
            let _ = black_box(ik.solve(&skeleton, &mut pose, black_box(goal)));
        }
    }) / n;
    println!(
        "analytic two-bone IK, median over batches of {} goals:",
        goals.len()
    );
    println!("  solve_with_parent: {with_parent:.1} ns/solve");
    println!(
        "  solve (walks the root's 3 ancestors): {full:.1} ns/solve (ratio {:.2})",
        full / with_parent
    );
}

criterion_group!(benches, bench_analytic);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_medians();
}
