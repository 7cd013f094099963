//! A crowd's four analytic limbs on the IK stack: each character's `[left arm, right arm, left
//! leg, right leg]` two-bone stages solved by the stack one by one (`IkStack::solve`) against
//! the same stages solved in one `stack::LimbBatch` call (then `IkStack::solve_from` for the
//! rest), in the same run, on the same moving goals.
//!
//! 256 characters (the Mixamo test rig, each with its own random input pose within the
//! humanoid limits); every frame each hand and foot target moves on a small circle (up to
//! 3 cm) around its tip's position in a second random pose, with an orientation goal and a
//! pole. Per frame and character: the input pose in (`IkStack::set_input`), the four goals
//! into the stages (and into the batch), the solve. Prints the median ns per character of
//! each mode and their ratio; `STACK_LIMBS_MODE=scalar|batched` runs one mode alone (for
//! instruction counts), `STACK_LIMBS_FRAMES` frames of it and no criterion.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use glam::Vec3;
use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::humanoid::{FullBodySolver, HumanoidBone as H, HumanoidMap};
use ik_core::stack::{IkStack, LimbBatch, TwoBoneStage};
use ik_core::{Pose, Skeleton};
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

const CHARACTERS: usize = 256;

#[path = "../tests/support/rng.rs"]
mod rng;
use rng::Rng;

struct Character {
    stack: IkStack,
    batch: Option<LimbBatch>,
    input: Pose,
    /// Per limb: the circle's centre, the orientation goal and the pole.
    goals: [(Vec3, glam::Quat, Vec3); 4],
    phase: f32,
}

fn characters() -> Vec<Character> {
    let skeleton: Skeleton = test_rig(RigConvention::Mixamo, RestAxes::PlusY);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let solver = FullBodySolver::new(&skeleton, &map).expect("test rig");
    let limbs = [
        (H::LeftUpperArm, H::LeftLowerArm, H::LeftHand, -1.0),
        (H::RightUpperArm, H::RightLowerArm, H::RightHand, -1.0),
        (H::LeftUpperLeg, H::LeftLowerLeg, H::LeftFoot, 1.0),
        (H::RightUpperLeg, H::RightLowerLeg, H::RightFoot, 1.0),
    ];
    let mut rng = Rng(7);
    (0..CHARACTERS)
        .map(|c| {
            let input =
                random_pose_within_limits(&skeleton, &map, solver.limits(), 0.3, &mut || {
                    rng.next()
                });
            let goal_pose =
                random_pose_within_limits(&skeleton, &map, solver.limits(), 0.3, &mut || {
                    rng.next()
                });
            let model = skeleton.model_transforms(&goal_pose);
            let mut stack = IkStack::new(skeleton.clone());
            let mut goals = [(Vec3::ZERO, glam::Quat::IDENTITY, Vec3::ZERO); 4];
            for (i, (u, l, e, forward)) in limbs.into_iter().enumerate() {
                let [u, l, e] = [u, l, e].map(|b| map.get(b).expect("mapped"));
                let ik = TwoBoneIk::try_new(&skeleton, u, l, e).expect("limb");
                let pole = model[l].translation + Vec3::Z * 0.3 * forward;
                goals[i] = (model[e].translation, model[e].rotation, pole);
                let goal = LimbGoal::new(model[e].translation);
                stack
                    .push(TwoBoneStage::new(&skeleton, ik, goal))
                    .expect("limb stage");
            }
            let batch = LimbBatch::try_new(&stack);
            assert_eq!(batch.as_ref().map(LimbBatch::len), Some(4));
            Character {
                stack,
                batch,
                input,
                goals,
                phase: c as f32 * 0.37,
            }
        })
        .collect()
}

/// One frame of every character; `batched` through the batch.
fn frame(crowd: &mut [Character], t: f32, batched: bool) {
    for ch in crowd.iter_mut() {
        ch.stack.set_input(&ch.input).expect("pose");
        let a = t + ch.phase;
        let offset = Vec3::new(a.cos(), a.sin(), (0.7 * a).sin()) * 0.03;
        for (i, &(centre, rotation, pole)) in ch.goals.iter().enumerate() {
            let goal = LimbGoal::new(centre + offset)
                .with_orientation(rotation)
                .with_pole(pole);
            if let Some(slot) = ch.stack.slot_mut(i)
                && let Some(s) = slot.stage.as_two_bone_mut()
            {
                s.goal = goal;
            }
            if batched && let Some(b) = ch.batch.as_mut() {
                b.set_goal(i, &goal);
            }
        }
        let first = match ch.batch.as_mut().filter(|_| batched) {
            Some(b) => b.solve(&mut ch.stack),
            None => 0,
        };
        black_box(ch.stack.solve_from(first));
    }
}

fn bench(c: &mut Criterion) {
    if let Ok(mode) = std::env::var("STACK_LIMBS_MODE") {
        let frames: usize = std::env::var("STACK_LIMBS_FRAMES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(32);
        let mut crowd = characters();
        for f in 0..frames {
            frame(&mut crowd, f as f32 * 0.1, mode == "batched");
        }
        return;
    }
    let mut group = c.benchmark_group("stack_limbs");
    let mut medians = Vec::new();
    for (label, batched) in [("scalar", false), ("batched", true)] {
        let mut crowd = characters();
        let mut t = 0.0;
        group.bench_function(format!("{label}/{CHARACTERS}"), |b| {
            b.iter(|| {
                t += 0.1;
                frame(&mut crowd, t, batched);
            });
        });
        let mut times: Vec<f64> = (0..200)
            .map(|_| {
                t += 0.1;
                let start = Instant::now();
                frame(&mut crowd, t, batched);
                start.elapsed().as_secs_f64() * 1e9 / CHARACTERS as f64
            })
            .collect();
        times.sort_by(f64::total_cmp);
        medians.push(times[times.len() / 2]);
    }
    group.finish();
    println!(
        "stack_limbs: four limbs per character, one by one {:.0} ns, batched {:.0} ns per \
         character (ratio {:.2})",
        medians[0],
        medians[1],
        medians[0] / medians[1]
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
