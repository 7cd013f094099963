//! The 7-DOF arm (ball shoulder, hinge elbow, ball wrist; 1 m) against the `k` crate's
//! `JacobianIkSolver` on the identical, seeded set of FK-sampled reachable 6D targets.
//!
//! Prints each solver's success rate (≤ 1e-4 m and ≤ 1e-3 rad, checked by our own forward
//! kinematics for both) and the time ratio; criterion measures a batch of targets per solver.
//!
//! * ours: solve from the rest pose; on failure up to 12 restarts from random in-limit poses
//!   (seeded), as the issue allows within its per-target budget.
//! * `k`: the same arm built from `NodeBuilder`s (the two ball joints as three revolute joints
//!   each, Z–Y–X, with box limits of the same half-angles), `f64`, `JacobianIkSolver` with
//!   its default step multiplier 0.5 and 100 tries, from the zero configuration — `k` has no
//!   restart option; a failed solve leaves the chain at its start (k's behaviour).

#![allow(missing_docs)]

#[path = "../tests/jacobian_common/mod.rs"]
mod jacobian_common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::glam::{Quat, Vec3};
use ik_core::jacobian::{Goals, JacobianScratch, JacobianSolver};
use ik_core::{Pose, Skeleton};
use jacobian_common::*;
use k::nalgebra as kna;
use k::prelude::InverseKinematicsSolver;

const SUCCESS_TARGETS: usize = 2000;
const BATCH: usize = 100;
const RESTARTS: usize = 12;

struct Ours {
    skeleton: Skeleton,
    solver: JacobianSolver,
    goals: Goals,
    scratch: JacobianScratch,
    rest: Pose,
    rng: Rng,
}

impl Ours {
    fn new() -> Self {
        let skeleton = arm_skeleton();
        let solver =
            JacobianSolver::try_new(&skeleton, arm_joints(), arm_tasks(), arm_settings()).unwrap();
        let goals = solver.goals();
        let scratch = solver.scratch();
        let rest = skeleton.rest_pose();
        Self {
            skeleton,
            solver,
            goals,
            scratch,
            rest,
            rng: Rng(1234),
        }
    }

    /// Solves one target; returns the final pose's tip transform.
    fn solve(&mut self, p: Vec3, q: Quat, pose: &mut Pose) {
        self.goals.tasks[0].point = p;
        self.goals.tasks[1].rotation = q;
        pose.copy_from(&self.rest);
        for attempt in 0..=RESTARTS {
            self.scratch.reset();
            if attempt > 0 {
                *pose = random_arm_pose(&self.skeleton, &mut self.rng);
            }
            let report = self
                .solver
                .solve(&self.skeleton, pose, &self.goals, &mut self.scratch)
                .unwrap();
            if report.converged {
                return;
            }
        }
    }
}

struct KArm {
    arm: k::SerialChain<f64>,
    solver: k::JacobianIkSolver<f64>,
    zero: Vec<f64>,
}

impl KArm {
    fn new() -> Self {
        use k::{JointType, NodeBuilder};
        let revolute = |name: &str, axis: kna::Vector3<f64>, x: f64, lo: f64, hi: f64| {
            NodeBuilder::new()
                .name(name)
                .translation(kna::Translation3::new(x, 0.0, 0.0))
                .joint_type(JointType::Rotational {
                    axis: kna::Unit::new_normalize(axis),
                })
                .limits(Some(k::joint::Range::new(lo, hi)))
                .into_node()
        };
        let sh = shoulder_limit();
        let wr = wrist_limit();
        let (z, y, x) = (kna::Vector3::z(), kna::Vector3::y(), kna::Vector3::x());
        let s = |v: f32| f64::from(v);
        let nodes = [
            revolute(
                "s_z",
                z,
                0.0,
                -s(sh.swing_half_angles.y),
                s(sh.swing_half_angles.y),
            ),
            revolute(
                "s_y",
                y,
                0.0,
                -s(sh.swing_half_angles.x),
                s(sh.swing_half_angles.x),
            ),
            revolute("s_x", x, 0.0, s(sh.twist_min), s(sh.twist_max)),
            revolute("elbow", z, 0.45, s(ELBOW_MIN), s(ELBOW_MAX)),
            revolute(
                "w_z",
                z,
                0.4,
                -s(wr.swing_half_angles.y),
                s(wr.swing_half_angles.y),
            ),
            revolute(
                "w_y",
                y,
                0.0,
                -s(wr.swing_half_angles.x),
                s(wr.swing_half_angles.x),
            ),
            revolute("w_x", x, 0.0, s(wr.twist_min), s(wr.twist_max)),
        ];
        let tip = NodeBuilder::new()
            .name("tip")
            .translation(kna::Translation3::new(0.15, 0.0, 0.0))
            .joint_type(JointType::Fixed)
            .into_node();
        for w in nodes.windows(2) {
            w[1].set_parent(&w[0]);
        }
        tip.set_parent(&nodes[6]);
        let arm = k::SerialChain::from_end(&tip);
        let solver = k::JacobianIkSolver::new(1e-4, 1e-3, 0.5, 100);
        Self {
            arm,
            solver,
            zero: vec![0.0; 7],
        }
    }

    fn solve(&self, p: Vec3, q: Quat) -> (Vec3, Quat) {
        self.arm.set_joint_positions_unchecked(&self.zero);
        self.arm.update_transforms();
        let target = kna::Isometry3::from_parts(
            kna::Translation3::new(f64::from(p.x), f64::from(p.y), f64::from(p.z)),
            kna::UnitQuaternion::from_quaternion(kna::Quaternion::new(
                f64::from(q.w),
                f64::from(q.x),
                f64::from(q.y),
                f64::from(q.z),
            )),
        );
        let _ = black_box(self.solver.solve(&self.arm, &target));
        let t = self.arm.end_transform();
        let tr = t.translation.vector;
        let r = t.rotation.quaternion();
        (
            Vec3::new(tr.x as f32, tr.y as f32, tr.z as f32),
            Quat::from_xyzw(r.i as f32, r.j as f32, r.k as f32, r.w as f32).normalize(),
        )
    }
}

fn reached(tip: (Vec3, Quat), p: Vec3, q: Quat) -> bool {
    tip.0.distance(p) <= 1e-4 && rotation_angle(tip.1, q) <= 1e-3
}

fn arm_vs_k(c: &mut Criterion) {
    let targets = arm_targets(SUCCESS_TARGETS, 0xbe7c);
    let mut ours = Ours::new();
    let karm = KArm::new();
    let mut pose = ours.rest.clone();

    // Success rates and wall-clock over the whole set, the two solvers interleaved target by
    // target so load changes on the machine hit both alike.
    let mut ours_ok = 0;
    let mut k_ok = 0;
    let mut ours_time = Duration::ZERO;
    let mut k_time = Duration::ZERO;
    let mut ours_each = Vec::with_capacity(targets.len());
    for &(p, q) in &targets {
        let start = Instant::now();
        ours.solve(p, q, &mut pose);
        let took = start.elapsed();
        ours_time += took;
        ours_each.push(took);
        let t = ours.skeleton.model_transform(&pose, TIP);
        ours_ok += usize::from(reached((t.translation, t.rotation), p, q));
        let start = Instant::now();
        let tip = karm.solve(p, q);
        k_time += start.elapsed();
        k_ok += usize::from(reached(tip, p, q));
    }
    ours_each.sort_unstable();
    let n = targets.len() as f64;
    println!(
        "arm_vs_k: {} targets; ours {:.2} % in {:.1} µs/target (median {:.1}, 99th percentile \
         {:.1}, worst {:.1} µs); k {:.2} % in {:.1} µs/target; k/ours time ratio {:.1}×",
        targets.len(),
        100.0 * ours_ok as f64 / n,
        ours_time.as_secs_f64() * 1e6 / n,
        ours_each[ours_each.len() / 2].as_secs_f64() * 1e6,
        ours_each[ours_each.len() * 99 / 100].as_secs_f64() * 1e6,
        ours_each[ours_each.len() - 1].as_secs_f64() * 1e6,
        100.0 * k_ok as f64 / n,
        k_time.as_secs_f64() * 1e6 / n,
        k_time.as_secs_f64() / ours_time.as_secs_f64()
    );

    let batch = &targets[..BATCH];
    let mut group = c.benchmark_group("arm_vs_k");
    group.sample_size(20);
    group.bench_function("ours_100_targets", |b| {
        b.iter(|| {
            for &(p, q) in batch {
                ours.solve(black_box(p), black_box(q), &mut pose);
            }
            black_box(&pose);
        });
    });
    group.bench_function("k_100_targets", |b| {
        b.iter(|| {
            for &(p, q) in batch {
                black_box(karm.solve(black_box(p), black_box(q)));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, arm_vs_k);
criterion_main!(benches);
