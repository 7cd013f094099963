//! Time per chain per update: spring chains (six joints, a sphere and a capsule collider,
//! gravity, the character moving every frame) and FABRIK / CCD chains (six bones, the target
//! moving every frame on a circle inside reach), 16 chains per stack. The peer comparison with
//! `bevy_skeleton_modifiers` runs the same set-ups in `benches-peers/skeleton_modifiers/`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glam::{Quat, Vec3};
use ik_core::chain::{ChainGoal, ChainIk, ChainIkStage, ChainMethod, ChainSettings};
use ik_core::spring::{
    ColliderDesc, ColliderShape, SpringBoneStage, SpringChainDesc, SpringJointDesc, SpringTail,
};
use ik_core::stack::IkStack;
use ik_core::{Bone, BoneTransform, Skeleton};
use std::hint::black_box;

/// Chains per stack.
const CHAINS: usize = 16;
/// Bones per chain.
const BONES: usize = 6;
/// Bone length, model units.
const LENGTH: f32 = 0.1;

/// A root and `CHAINS` chains of `BONES` bones hanging down (-Y), spread around the root.
fn rig() -> Skeleton {
    let mut bones = vec![Bone::new("root", None, BoneTransform::IDENTITY)];
    for c in 0..CHAINS {
        let first = bones.len();
        let a = c as f32 / CHAINS as f32 * core::f32::consts::TAU;
        for i in 0..BONES {
            let (parent, t) = if i == 0 {
                (0, Vec3::new(a.cos(), 0.0, a.sin()) * 0.3)
            } else {
                (first + i - 1, Vec3::NEG_Y * LENGTH)
            };
            bones.push(Bone::new(
                format!("c{c}_{i}"),
                Some(parent),
                BoneTransform::from_translation(t),
            ));
        }
    }
    Skeleton::try_new(bones).unwrap()
}

fn chain_root(c: usize) -> usize {
    1 + c * BONES
}

fn springs(c: &mut Criterion) {
    let s = rig();
    let colliders = [
        ColliderDesc {
            bone: Some(0),
            shape: ColliderShape::Sphere {
                offset: Vec3::new(0.0, -0.3, 0.0),
                radius: 0.25,
            },
        },
        ColliderDesc {
            bone: Some(0),
            shape: ColliderShape::Capsule {
                offset: Vec3::new(-0.4, -0.5, 0.0),
                tail: Vec3::new(0.4, -0.5, 0.0),
                radius: 0.08,
            },
        },
    ];
    let chains: Vec<SpringChainDesc> = (0..CHAINS)
        .map(|k| SpringChainDesc {
            joints: (0..BONES)
                .map(|i| SpringJointDesc {
                    bone: chain_root(k) + i,
                    stiffness: 1.0,
                    gravity_power: 0.5,
                    drag_force: 0.4,
                    hit_radius: 0.02,
                    ..SpringJointDesc::default()
                })
                .collect(),
            tail: SpringTail::Virtual { length: LENGTH },
            colliders: vec![0, 1],
            ..SpringChainDesc::default()
        })
        .collect();
    let stage = SpringBoneStage::try_new(&s, &chains, &colliders).unwrap();
    let mut stack = IkStack::new(s.clone());
    let slot = stack.push(stage).unwrap();
    let mut input = s.rest_pose();
    let mut k = 0u32;
    let mut g = c.benchmark_group("chains");
    g.throughput(Throughput::Elements(CHAINS as u64));
    g.bench_function("spring_6_joints_2_colliders_60hz", |b| {
        b.iter(|| {
            k += 1;
            let t = k as f32 / 60.0;
            input.rotations[0] = Quat::from_rotation_y(0.8 * (3.0 * t).sin());
            stack.set_input(&input).unwrap();
            let st = stack
                .slot_mut(slot)
                .unwrap()
                .stage
                .as_custom_mut::<SpringBoneStage>()
                .unwrap();
            st.dt = 1.0 / 60.0;
            st.model_to_world = BoneTransform::from_translation(Vec3::new(t.sin(), 0.0, t.cos()));
            black_box(stack.solve());
        });
    });
    g.finish();
}

fn iks(c: &mut Criterion) {
    let s = rig();
    let mut g = c.benchmark_group("chains");
    g.throughput(Throughput::Elements(CHAINS as u64));
    for method in [ChainMethod::Fabrik, ChainMethod::Ccd] {
        let mut stack = IkStack::new(s.clone());
        let settings = ChainSettings {
            method,
            max_iterations: 10,
            tolerance: Some(1e-3),
        };
        let mut slots = Vec::new();
        for k in 0..CHAINS {
            let chain = s.chain(chain_root(k), chain_root(k) + BONES - 1).unwrap();
            let ik = ChainIk::try_new(&s, &chain, &[], settings).unwrap();
            let slot = stack
                .push(ChainIkStage::new(ik, ChainGoal::new(Vec3::ZERO)))
                .unwrap();
            // Warm start (the stack's: the animated input does not change, so each solve starts
            // from the last output), as the peer does by default.
            stack.slot_mut(slot).unwrap().warm_start = true;
            slots.push(slot);
        }
        let roots: Vec<Vec3> = (0..CHAINS)
            .map(|k| stack.model_transform(chain_root(k)).translation)
            .collect();
        let input = s.rest_pose();
        let mut f = 0u32;
        let name = format!("{method:?}_6_bones_moving_target").to_lowercase();
        g.bench_function(&name, |b| {
            b.iter(|| {
                f += 1;
                let t = f as f32 / 60.0;
                stack.set_input(&input).unwrap();
                for (k, &slot) in slots.iter().enumerate() {
                    // A target on a circle 60 % of the reach below the chain's root.
                    let target =
                        roots[k] + Vec3::new(0.2 * (2.0 * t).cos(), -0.3, 0.2 * (2.0 * t).sin());
                    stack
                        .slot_mut(slot)
                        .unwrap()
                        .stage
                        .as_custom_mut::<ChainIkStage>()
                        .unwrap()
                        .goal
                        .target = target;
                }
                black_box(stack.solve());
            });
        });
    }
    g.finish();
}

criterion_group!(benches, springs, iks);
criterion_main!(benches);
