//! The spring, chain, spline and velocity-limiter stages do not allocate per solve: a counting
//! global allocator around many frames of one stack with all of them, moving every frame.

use glam::{Quat, Vec3};
use ik_core::chain::{ChainGoal, ChainIk, ChainIkStage, ChainMethod, ChainSettings};
use ik_core::spline::{CurveKind, SplineGoal, SplineIk, SplineIkStage};
use ik_core::spring::{
    ColliderDesc, ColliderShape, SpringBoneStage, SpringChainDesc, SpringJointDesc,
};
use ik_core::stack::IkStack;
use ik_core::velocity::AngularVelocityLimiter;
use ik_core::{Bone, BoneTransform, Skeleton};

use crate::alloc;

/// A root with four independent 6-bone chains along +X, -Y, +Z, -X.
fn rig() -> Skeleton {
    let mut bones = vec![Bone::new("root", None, BoneTransform::IDENTITY)];
    for axis in [Vec3::X, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_X] {
        let first = bones.len();
        for i in 0..6 {
            let parent = if i == 0 { 0 } else { first + i - 1 };
            bones.push(Bone::new(
                format!("c{first}_{i}"),
                Some(parent),
                BoneTransform::from_translation(axis * 0.1),
            ));
        }
    }
    Skeleton::try_new(bones).unwrap()
}

#[test]
fn chain_stages_do_not_allocate() {
    let s = rig();
    let joint = |bone| SpringJointDesc {
        bone,
        gravity_power: 1.0,
        hit_radius: 0.02,
        ..SpringJointDesc::default()
    };
    let spring = SpringBoneStage::try_new(
        &s,
        &[SpringChainDesc {
            joints: (1..=6).map(joint).collect(),
            colliders: vec![0, 1],
            center: Some(0),
            ..SpringChainDesc::default()
        }],
        &[
            ColliderDesc {
                bone: Some(0),
                shape: ColliderShape::Sphere {
                    offset: Vec3::new(0.3, -0.1, 0.0),
                    radius: 0.1,
                },
            },
            ColliderDesc {
                bone: None,
                shape: ColliderShape::Capsule {
                    offset: Vec3::new(0.0, -0.3, -0.2),
                    tail: Vec3::new(0.6, -0.3, 0.2),
                    radius: 0.05,
                },
            },
        ],
    )
    .unwrap();
    let settings = |method| ChainSettings {
        method,
        ..ChainSettings::default()
    };
    let fabrik = ChainIk::try_new(
        &s,
        &s.chain(7, 12).unwrap(),
        &[],
        settings(ChainMethod::Fabrik),
    )
    .unwrap();
    let ccd = ChainIk::try_new(
        &s,
        &s.chain(13, 18).unwrap(),
        &[],
        settings(ChainMethod::Ccd),
    )
    .unwrap();
    let spline = SplineIk::try_new(&s, &s.chain(19, 24).unwrap()).unwrap();
    let mut stack = IkStack::new(s.clone());
    let si = stack.push(spring).unwrap();
    let fi = stack
        .push(ChainIkStage::new(fabrik, ChainGoal::new(Vec3::ZERO)))
        .unwrap();
    let ci = stack
        .push(ChainIkStage::new(ccd, ChainGoal::new(Vec3::ZERO)))
        .unwrap();
    let pi = stack
        .push(SplineIkStage::new(
            spline,
            SplineGoal {
                kind: CurveKind::CatmullRom,
                points: vec![Vec3::ZERO; 4],
                twist_start: 0.0,
                twist_end: 0.5,
            },
        ))
        .unwrap();
    let all: Vec<usize> = (1..s.len()).collect();
    let li = stack.push(AngularVelocityLimiter::new(&all, 6.0)).unwrap();
    let mut input = s.rest_pose();
    let mut frame = |k: usize, stack: &mut IkStack| {
        let t = k as f32 / 60.0;
        input.rotations[0] = Quat::from_rotation_y(t.sin());
        stack.set_input(&input).unwrap();
        let slots = stack.slots_mut();
        let sp = slots[si].stage.as_custom_mut::<SpringBoneStage>().unwrap();
        sp.dt = 1.0 / 45.0;
        sp.model_to_world = BoneTransform::from_translation(Vec3::X * t);
        let goal = Vec3::new(0.3 * t.cos(), 0.2, 0.3 * t.sin());
        slots[fi]
            .stage
            .as_custom_mut::<ChainIkStage>()
            .unwrap()
            .goal = ChainGoal {
            target: goal,
            pole: Some(Vec3::Y),
            tip_rotation: Some(Quat::from_rotation_x(t)),
        };
        slots[ci]
            .stage
            .as_custom_mut::<ChainIkStage>()
            .unwrap()
            .goal
            .target = Vec3::new(goal.z, -goal.y, goal.x);
        let p = slots[pi].stage.as_custom_mut::<SplineIkStage>().unwrap();
        for (i, q) in p.goal.points.iter_mut().enumerate() {
            *q = Vec3::new(-0.2 * i as f32, 0.1 * (t + i as f32).sin(), 0.05 * i as f32);
        }
        slots[li]
            .stage
            .as_custom_mut::<AngularVelocityLimiter>()
            .unwrap()
            .dt = 1.0 / 45.0;
        let report = stack.solve();
        assert_eq!(report.failed, 0);
    };
    frame(0, &mut stack);
    let ((), allocations) = alloc::allocations_during(|| {
        for k in 1..240 {
            frame(k, &mut stack);
        }
    });
    assert_eq!(allocations, 0);
}
