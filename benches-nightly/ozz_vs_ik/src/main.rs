//! ozz-animation-rs's `IKTwoBoneJob` against ik-core's `TwoBoneIk::solve_with_parent` in one
//! run, on ik-core's analytic bench goal set (`crates/ik-core/benches/support/analytic_goals.rs`:
//! 1000 goals, 70 % reachable — 40 % of all goals with a wrist orientation —, 20 % beyond
//! reach, 10 % degenerate).
//!
//! Each solve starts from the previous one's result, for both. What one ozz "solve" is here:
//! what a caller of the job does per limb and frame — forward kinematics of the limb's three
//! joints from the root's parent and the local pose (ozz's job takes model-space matrices; in an
//! ozz pipeline its `LocalToModelJob` would have computed them), the job itself, and the two
//! corrections multiplied into the local rotations. `TwoBoneIk` takes the parent transform and
//! the local pose and does its forward kinematics inside. ozz has no wrist orientation goal, so
//! `TwoBoneIk` is timed twice: on the goal set as it is, and with the orientations removed (the
//! like-for-like figure).
//!
//! Build note: ozz-animation-rs enables glam's `core-simd` feature, and Cargo unifies features,
//! so in this crate ik-core is built on glam's portable-SIMD backend too, not on the SSE2 one the
//! workspace uses.

use std::hint::black_box;
use std::time::Instant;

use glam::Quat;
use glam::{Mat4, Vec3, Vec3A};
use ik_core::analytic::batch::{BatchScratch, LaneGoals, LanePoses, TwoBoneBatch};
use ik_core::analytic::{LimbGoal, LimbReport, Pole, TwoBoneIk};
use ik_core::{BoneTransform, Pose, Skeleton};
use ozz_animation_rs::IKTwoBoneJob;

#[path = "../../../crates/ik-core/benches/support/analytic_goals.rs"]
mod analytic_goals;

/// Median over batches of the whole goal set, in ns per solve.
fn median_ns(n: usize, mut solve_all: impl FnMut()) -> f64 {
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
    samples[samples.len() / 2] / n as f64
}

/// The limb's three model transforms (root, mid, tip) from the root's parent and the pose.
fn limb_model(parent: &BoneTransform, pose: &Pose, bones: [usize; 3]) -> [BoneTransform; 3] {
    let local = |i: usize| BoneTransform {
        translation: pose.translations[i],
        rotation: pose.rotations[i],
        // (The bench rig has unit scales.)
        scale: Vec3::ONE,
    };
    let root = parent.mul_transform(&local(bones[0]));
    let mid = root.mul_transform(&local(bones[1]));
    let tip = mid.mul_transform(&local(bones[2]));
    [root, mid, tip]
}

fn mat4(t: &BoneTransform) -> Mat4 {
    Mat4::from_scale_rotation_translation(t.scale, t.rotation, t.translation)
}

/// One ozz solve as described in the module docs.
fn ozz_solve(
    job: &mut IKTwoBoneJob,
    parent: &BoneTransform,
    pose: &mut Pose,
    bones: [usize; 3],
    goal: &LimbGoal,
) {
    let [root, mid, tip] = limb_model(parent, pose, bones);
    job.set_start_joint(mat4(&root));
    job.set_mid_joint(mat4(&mid));
    job.set_end_joint(mat4(&tip));
    job.set_target(Vec3A::from(goal.target));
    if let Pole::Position(p) = goal.pole {
        job.set_pole_vector(Vec3A::from(p - root.translation));
    }
    if job.run().is_ok() {
        let [r, m, _] = bones;
        pose.rotations[r] = (pose.rotations[r] * job.start_joint_correction()).normalize();
        pose.rotations[m] = (pose.rotations[m] * job.mid_joint_correction()).normalize();
    }
}

fn main() {
    let analytic_goals::Setup {
        skeleton,
        ik,
        pose,
        parent,
        goals,
    } = analytic_goals::setup();
    let bones = ik.bones();
    let n = goals.len();
    let plain: Vec<LimbGoal> = goals
        .iter()
        .map(|g| LimbGoal {
            orientation: None,
            ..*g
        })
        .collect();

    // ozz's mid axis: in the mid joint's frame, a positive turn *opens* the elbow; ik-core's bend
    // axis (root frame) closes it. The rest mid rotation carries it into the mid frame.
    let mid_axis = -(pose.rotations[bones[1]].inverse() * ik.bend_axis()).normalize();
    let mut job = IKTwoBoneJob::default();
    job.set_mid_axis(Vec3A::from(mid_axis));

    // Accuracy first: both must actually solve the reachable goals.
    let worst = |solve: &mut dyn FnMut(&mut Pose, &LimbGoal)| {
        let mut p = pose.clone();
        let mut worst = 0.0f32;
        for (i, goal) in plain.iter().enumerate() {
            solve(&mut p, goal);
            if i % 10 <= 6 {
                let tip = skeleton.model_transform(&p, bones[2]).translation;
                worst = worst.max(tip.distance(goal.target));
            }
        }
        worst
    };
    let ozz_worst = worst(&mut |p, g| ozz_solve(&mut job, &parent, p, bones, g));
    let ik_worst = worst(&mut |p, g| {
        let _ = ik.solve_with_parent(&skeleton, p, g, &parent);
    });

    let mut ozz_pose = pose.clone();
    let mut ik_pose = pose.clone();
    let mut plain_pose = pose.clone();
    // ik-core's batched path: 1000 copies of the limb, one goal each, one call (each limb starts
    // from its previous call's result for the next goal: the goal set alternates with the set
    // shifted by one, as in ik-core's `analytic_batch` bench).
    let batch = TwoBoneBatch::try_new((0..n).map(|_| (&skeleton, &ik))).expect("valid limb");
    let parents = vec![parent; n];
    let mut rotations = vec![bones.map(|b| pose.rotations[b]); n];
    let mut reports = vec![Ok(LimbReport::default()); n];
    let mut scratch = BatchScratch::new();
    let mut shifted = plain.clone();
    shifted.rotate_left(1);
    let sets = [plain.clone(), shifted];
    let mut turn = 0;
    let _: &[[Quat; 3]] = &rotations;
    // The same on resident lanes (`TwoBoneBatch::solve_lanes`, no reports): the goal sets
    // written into lanes once, the rotations kept in the lanes between calls.
    let lane_sets = sets.each_ref().map(|set| {
        let mut lanes = LaneGoals::new(n);
        for (i, goal) in set.iter().enumerate() {
            lanes.set(i, goal).expect("in range");
        }
        lanes
    });
    let mut poses = LanePoses::new(n);
    for i in 0..n {
        poses
            .set(i, &parent, bones.map(|b| pose.rotations[b]))
            .expect("in range");
    }
    let mut lane_turn = 0;
    let (mut ozz, mut ik_all, mut ik_plain, mut ik_batch, mut ik_lanes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Alternating rounds, so that a change of machine load hits all alike.
    for _ in 0..5 {
        ozz.push(median_ns(n, || {
            for goal in &plain {
                ozz_solve(&mut job, &parent, &mut ozz_pose, bones, black_box(goal));
            }
        }));
        ik_all.push(median_ns(n, || {
            for goal in &goals {
                let _ = black_box(ik.solve_with_parent(
                    &skeleton,
                    &mut ik_pose,
                    black_box(goal),
                    &parent,
                ));
            }
        }));
        ik_plain.push(median_ns(n, || {
            for goal in &plain {
                let _ = black_box(ik.solve_with_parent(
                    &skeleton,
                    &mut plain_pose,
                    black_box(goal),
                    &parent,
                ));
            }
        }));
        ik_batch.push(median_ns(n, || {
            turn ^= 1;
            let _ = batch.solve(
                black_box(&sets[turn]),
                &parents,
                &mut rotations,
                &mut reports,
                &mut scratch,
            );
            black_box(&reports);
        }));
        ik_lanes.push(median_ns(n, || {
            lane_turn ^= 1;
            let _ = batch.solve_lanes(
                black_box(&lane_sets[lane_turn]),
                &mut poses,
                None,
                &mut scratch,
            );
            black_box(&poses);
        }));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ozz, ik_all, ik_plain, ik_batch, ik_lanes) = (
        median(&mut ozz),
        median(&mut ik_all),
        median(&mut ik_plain),
        median(&mut ik_batch),
        median(&mut ik_lanes),
    );
    println!("two-bone IK, {n} goals, median of 5 alternating medians:");
    println!(
        "  ozz-animation-rs IKTwoBoneJob (+ FK of 3 joints + applying corrections): {ozz:.1} ns/solve"
    );
    println!(
        "  ik-core TwoBoneIk::solve_with_parent, no wrist orientations: {ik_plain:.1} ns/solve"
    );
    println!(
        "  ik-core TwoBoneIk::solve_with_parent, 40 % with a wrist orientation: {ik_all:.1} ns/solve"
    );
    println!(
        "  ik-core TwoBoneBatch::solve, 1000 limbs per call, no wrist orientations: {ik_batch:.1} ns/limb"
    );
    println!(
        "  ik-core TwoBoneBatch::solve_lanes, resident lanes, no reports, no wrist orientations: {ik_lanes:.1} ns/limb"
    );
    println!(
        "  ratio ozz / TwoBoneIk (like for like): {:.2}x",
        ozz / ik_plain
    );
    println!("  ratio ozz / TwoBoneBatch: {:.2}x", ozz / ik_batch);
    println!(
        "  ratio ozz / TwoBoneBatch::solve_lanes: {:.2}x",
        ozz / ik_lanes
    );
    println!(
        "  worst tip residual on the 700 reachable goals: ozz {ozz_worst:.2e} m, TwoBoneIk {ik_worst:.2e} m"
    );
    let _: (&Skeleton, &TwoBoneIk) = (&skeleton, &ik);
}
