//! Each behaviour stage's cost per character and frame (`Stage::solve` on a pose buffer,
//! the way the stack calls it), on the Unreal-named test rig (+X bone axes: 5 spine, 2 neck
//! bones, a forearm twist leaf bone per arm) with two eye bones added under the head:
//!
//! - `look_at_chain`: chest-to-head chain of 8 bones + 2 eyes, the target cycling over 64
//!   points around the head (some behind), 60 Hz smoothing; `look_at_chain_no_eyes` the same
//!   on the rig without its eyes;
//! - `aim`: chest → right hand (5 bones), an offset ray with a pole, targets cycling over 64
//!   points 0.6–2 m away (each solve has work: a new target every call);
//! - `twist`: both forearms (leaf twist bones), hands twisted 70°;
//! - `goal_motion`: one `advance` + `position` (line).
//!
//! Goals (issue 14): look-at ≤ 1 µs, twist ≤ 0.3 µs, aim ≤ 3 µs.

use core::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::behaviours::aim::AimChain;
use ik_core::behaviours::look_at::{LookAtChain, LookAtSettings};
use ik_core::behaviours::motion::{Easing, GoalMotion, MotionTiming};
use ik_core::behaviours::twist::TwistDistribution;
use ik_core::glam::{Quat, Vec3};
use ik_core::humanoid::{BodyFrame, HumanoidBone as H, HumanoidMap};
use ik_core::stack::{PoseBuffer, Stage};
use ik_core::{Bone, BoneTransform, Skeleton};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

fn rig() -> (Skeleton, HumanoidMap) {
    let s = test_rig(RigConvention::Unreal, RestAxes::PlusX);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let head = map.get(H::Head).unwrap();
    let frame = BodyFrame::from_rest(&s, &map).unwrap();
    let h = s.rest_model_transforms()[head];
    let mut bones = s.bones().to_vec();
    for (name, side) in [("LeftEye", 1.0f32), ("RightEye", -1.0)] {
        let p = h.translation + frame.up * 0.09 + frame.forward * 0.08 + frame.left * 0.032 * side;
        let local = h
            .inverse()
            .mul_transform(&BoneTransform::from_translation_rotation(
                p,
                Quat::from_rotation_z(0.7),
            ));
        bones.push(Bone::new(name, Some(head), local));
    }
    (Skeleton::try_new(bones).unwrap(), map)
}

fn bench(c: &mut Criterion) {
    let (s, map) = rig();
    let g = |r: H| map.get(r).unwrap();
    let frame = BodyFrame::from_rest(&s, &map).unwrap();
    let rest = s.rest_model_transforms();
    let head = rest[g(H::Head)].translation;
    let hand = rest[g(H::RightHand)].translation;
    let mut seed = 1u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    };
    let around: Vec<Vec3> = (0..64)
        .map(|i| {
            let a = i as f32 * 0.4;
            head + (frame.forward * a.cos() + frame.left * a.sin() + frame.up * 0.3 * rnd()) * 1.2
        })
        .collect();
    let ahead: Vec<Vec3> = (0..64)
        .map(|_| {
            let d = (frame.forward + Vec3::new(rnd(), rnd(), rnd()) * 0.6).normalize();
            hand + d * (1.3 + 0.7 * rnd())
        })
        .collect();
    let input = s.rest_pose();

    let mut look = LookAtChain::from_humanoid(&s, &map, None, LookAtSettings::default()).unwrap();
    assert_eq!(look.eyes().count(), 2);
    let mut buffer = PoseBuffer::new(&s);
    buffer.set_pose(&input);
    let mut targets = around.iter().cycle();
    c.bench_function("look_at_chain", |b| {
        b.iter(|| {
            look.target = Some(*targets.next().unwrap());
            black_box(look.solve(&s, &mut buffer))
        });
    });

    // The same chain without eyes (the rig's own skeleton has none).
    let plain = test_rig(RigConvention::Unreal, RestAxes::PlusX);
    let mut look =
        LookAtChain::from_humanoid(&plain, &map, None, LookAtSettings::default()).unwrap();
    assert_eq!(look.eyes().count(), 0);
    let mut buffer = PoseBuffer::new(&plain);
    let mut targets = around.iter().cycle();
    c.bench_function("look_at_chain_no_eyes", |b| {
        b.iter(|| {
            look.target = Some(*targets.next().unwrap());
            black_box(look.solve(&plain, &mut buffer))
        });
    });

    let mut aim = AimChain::try_new(
        &s,
        g(H::Chest),
        g(H::RightHand),
        Vec3::X,
        Vec3::Y * 0.05,
        None,
    )
    .unwrap()
    .with_pole_axis(Vec3::Y)
    .unwrap();
    aim.pole = Some(frame.up);
    let mut buffer = PoseBuffer::new(&s);
    buffer.set_pose(&input);
    let mut targets = ahead.iter().cycle();
    c.bench_function("aim", |b| {
        b.iter(|| {
            aim.target = Some(*targets.next().unwrap());
            black_box(aim.solve(&s, &mut buffer))
        });
    });

    let mut twist = TwistDistribution::from_humanoid(&s, &map);
    assert_eq!(twist.segments().len(), 2);
    let mut twisted = input.clone();
    for side in [H::LeftHand, H::RightHand] {
        let (h, l) = (g(side), g(side.parent().unwrap()));
        let axis = s.rest_bone_direction(l, h).unwrap();
        twisted.rotations[h] = Quat::from_axis_angle(axis, 1.2) * twisted.rotations[h];
    }
    let mut buffer = PoseBuffer::new(&s);
    buffer.set_pose(&twisted);
    c.bench_function("twist", |b| {
        b.iter(|| black_box(twist.solve(&s, &mut buffer)));
    });

    let mut motion = GoalMotion::try_new(MotionTiming::Speed(0.5), Easing::SmoothStep).unwrap();
    motion.engage();
    let (from, to) = (hand, hand + frame.forward * 0.4);
    let mut k = 0u32;
    c.bench_function("goal_motion", |b| {
        b.iter(|| {
            k += 1;
            if k.is_multiple_of(120) {
                motion.set_engaged(!motion.is_engaged());
            }
            motion.advance(black_box(1.0 / 60.0), from, to);
            black_box(motion.position(from, to))
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
