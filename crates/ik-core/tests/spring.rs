//! Spring bones: no energy gained over 60 s without input, no NaN or explosion over frame
//! times 1/240–1/15 s and hostile ones, colliders never penetrated by more than the hit
//! radius, the rest pose kept without forces on every rest convention, centre space, teleport
//! reset, weight.

use glam::{Quat, Vec3};
use ik_core::spring::{
    ColliderDesc, ColliderShape, SpringBoneStage, SpringChainDesc, SpringJointDesc, SpringTail,
};
use ik_core::stack::{IkStack, StageOutcome};
use ik_core::{BoneTransform, Skeleton};

use crate::chains;

use chains::{AXES, RestStyle, STYLES, chain_rig};

/// A six-joint chain (bones 1..=6 of a chain rig) with `joint` parameters.
fn chain_desc(n: usize, joint: SpringJointDesc, colliders: Vec<usize>) -> SpringChainDesc {
    SpringChainDesc {
        joints: (1..=n)
            .map(|bone| SpringJointDesc { bone, ..joint })
            .collect(),
        tail: SpringTail::Virtual { length: 0.07 },
        colliders,
        ..SpringChainDesc::default()
    }
}

fn stage_mut(stack: &mut IkStack, slot: usize) -> &mut SpringBoneStage {
    stack
        .slot_mut(slot)
        .unwrap()
        .stage
        .as_custom_mut::<SpringBoneStage>()
        .unwrap()
}

fn step(stack: &mut IkStack, slot: usize, input: &ik_core::Pose, dt: f32, world: BoneTransform) {
    stack.set_input(input).unwrap();
    let s = stage_mut(stack, slot);
    s.dt = dt;
    s.model_to_world = world;
    stack.solve();
    assert!(
        matches!(stack.slot(slot).unwrap().outcome, StageOutcome::Solved(_)),
        "{:?}",
        stack.slot(slot).unwrap().outcome
    );
}

/// Kinetic energy per unit mass of the particles, from the last step of length `h`.
fn kinetic(stage: &SpringBoneStage, h: f32) -> f32 {
    stage
        .particles(0)
        .iter()
        .map(|p| 0.5 * ((p.tail - p.previous) / h).length_squared())
        .sum()
}

#[test]
fn no_energy_is_gained_over_a_minute_without_input() {
    for drag in [0.0, 0.4] {
        for (a, axis) in AXES.into_iter().enumerate() {
            let s = chain_rig(6, axis, RestStyle::Rotated, a as u64);
            let joint = SpringJointDesc {
                stiffness: 1.0,
                gravity_power: 1.0,
                drag_force: drag,
                ..SpringJointDesc::default()
            };
            let spring =
                SpringBoneStage::try_new(&s, &[chain_desc(6, joint, vec![])], &[]).unwrap();
            let mut stack = IkStack::new(s.clone());
            let slot = stack.push(spring).unwrap();
            let input = s.rest_pose();
            let h = 1.0 / 60.0;
            // A kick: the model frame moves sideways for a few frames, then stands still.
            let mut world = BoneTransform::IDENTITY;
            for k in 0..10 {
                world.translation.x = 0.02 * k as f32;
                step(&mut stack, slot, &input, h, world);
            }
            let mut early = 0.0f32;
            let mut late = 0.0f32;
            for k in 0..3600 {
                step(&mut stack, slot, &input, h, world);
                let e = kinetic(stage_mut(&mut stack, slot), h);
                assert!(e.is_finite());
                if k < 120 {
                    early = early.max(e);
                } else if k >= 3000 {
                    late = late.max(e);
                }
            }
            assert!(early > 0.0, "the kick moved nothing");
            // Never more energy than the kick gave: the last 10 s below the first 2 s, and with
            // drag, nearly at rest.
            assert!(
                late <= early * 1.01,
                "drag {drag} axis {axis}: KE {late} after {early}"
            );
            if drag > 0.0 {
                assert!(
                    late <= early * 1e-6,
                    "drag {drag} axis {axis}: KE {late} after {early}"
                );
            }
        }
    }
}

#[test]
fn no_nan_or_explosion_at_any_frame_time() {
    let hostile = [
        0.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        1e9,
        1e-9,
        f32::NEG_INFINITY,
    ];
    for dt in [1.0 / 240.0, 1.0 / 144.0, 1.0 / 60.0, 1.0 / 30.0, 1.0 / 15.0] {
        for style in STYLES {
            let s = chain_rig(6, Vec3::NEG_Y, style, 2);
            let joint = SpringJointDesc {
                stiffness: 2.0,
                gravity_power: 2.0,
                drag_force: 0.1,
                hit_radius: 0.02,
                ..SpringJointDesc::default()
            };
            let colliders = [ColliderDesc {
                bone: Some(0),
                shape: ColliderShape::Sphere {
                    offset: Vec3::new(0.05, -0.2, 0.0),
                    radius: 0.08,
                },
            }];
            let spring =
                SpringBoneStage::try_new(&s, &[chain_desc(6, joint, vec![0])], &colliders).unwrap();
            let mut stack = IkStack::new(s.clone());
            let slot = stack.push(spring).unwrap();
            let mut input = s.rest_pose();
            let rest_model = s.model_transforms(&s.rest_pose());
            let span: f32 = (1..6)
                .map(|i| {
                    rest_model[i]
                        .translation
                        .distance(rest_model[i + 1].translation)
                })
                .sum();
            let frames = (4.0 / dt) as usize;
            for k in 0..frames {
                let t = k as f32 * dt;
                // A violent head shake and a character running in circles.
                input.rotations[0] =
                    s.bones()[0].rest.rotation * Quat::from_rotation_y(2.0 * (9.0 * t).sin());
                let world = BoneTransform::from_translation_rotation(
                    Vec3::new((3.0 * t).cos(), 0.0, (3.0 * t).sin()) * 4.0,
                    Quat::from_rotation_y(3.0 * t),
                );
                let frame_dt = if k % 37 == 5 {
                    hostile[(k / 37) % hostile.len()]
                } else {
                    dt
                };
                step(&mut stack, slot, &input, frame_dt, world);
                assert!(stack.pose().rotations.iter().all(|q| q.is_finite()));
                let model = stack.model_transforms().to_vec();
                // Bone lengths unchanged (rotation only): the chain stays within its span.
                let base = model[1].translation;
                for m in &model[1..] {
                    assert!(m.translation.is_finite());
                    assert!(m.translation.distance(base) <= span * 1.0001);
                }
                for p in stage_mut(&mut stack, slot).particles(0) {
                    assert!(p.tail.is_finite() && p.previous.is_finite());
                }
            }
        }
    }
}

/// Signed distance from `p` to a collider's surface (negative inside), in model space.
fn signed_distance(shape: &ColliderShape, bone: &BoneTransform, p: Vec3) -> f32 {
    let seg = |a: Vec3, b: Vec3| {
        let ab = b - a;
        let t = ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0);
        p.distance(a + ab * t)
    };
    let s = bone.scale.max_element();
    match *shape {
        ColliderShape::Sphere { offset, radius } => {
            p.distance(bone.transform_point(offset)) - radius * s
        }
        ColliderShape::Capsule {
            offset,
            tail,
            radius,
        } => seg(bone.transform_point(offset), bone.transform_point(tail)) - radius * s,
        ColliderShape::Plane { offset, normal } => (p - bone.transform_point(offset))
            .dot((bone.rotation * (normal / bone.scale)).normalize()),
        ColliderShape::InsideSphere { offset, radius } => {
            radius * s - p.distance(bone.transform_point(offset))
        }
        ColliderShape::InsideCapsule {
            offset,
            tail,
            radius,
        } => radius * s - seg(bone.transform_point(offset), bone.transform_point(tail)),
        _ => unreachable!("every shape is listed"),
    }
}

#[test]
fn colliders_are_never_penetrated_by_more_than_the_hit_radius() {
    let shapes = [
        ColliderShape::Sphere {
            offset: Vec3::new(0.06, -0.25, 0.02),
            radius: 0.1,
        },
        ColliderShape::Capsule {
            offset: Vec3::new(-0.2, -0.25, 0.05),
            tail: Vec3::new(0.2, -0.2, 0.0),
            radius: 0.06,
        },
        ColliderShape::Plane {
            offset: Vec3::new(0.0, -0.3, 0.0),
            normal: Vec3::new(0.1, 1.0, 0.0),
        },
        ColliderShape::InsideSphere {
            offset: Vec3::new(0.0, -0.2, 0.0),
            radius: 0.6,
        },
        ColliderShape::InsideCapsule {
            offset: Vec3::new(0.0, 0.0, 0.0),
            tail: Vec3::new(0.0, -0.5, 0.0),
            radius: 0.45,
        },
    ];
    let mut worst = 0.0f32;
    for shape in shapes {
        for axis in AXES {
            // The chain hangs from a base with identity rest rotation so "down" is -Y in the
            // model; its bones point along `axis` in their own frames (rotated to hang down).
            let s = hanging_chain(6, axis);
            let joint = SpringJointDesc {
                stiffness: 0.5,
                gravity_power: 3.0,
                drag_force: 0.2,
                hit_radius: 0.02,
                ..SpringJointDesc::default()
            };
            let colliders = [ColliderDesc {
                bone: Some(0),
                shape,
            }];
            let spring =
                SpringBoneStage::try_new(&s, &[chain_desc(6, joint, vec![0])], &colliders).unwrap();
            let mut stack = IkStack::new(s.clone());
            let slot = stack.push(spring).unwrap();
            let mut input = s.rest_pose();
            let dt = 1.0 / 60.0;
            for k in 0..600 {
                let t = k as f32 * dt;
                input.rotations[0] = Quat::from_rotation_z(0.8 * (2.0 * t).sin())
                    * Quat::from_rotation_x(0.6 * (3.1 * t).cos());
                step(&mut stack, slot, &input, dt, BoneTransform::IDENTITY);
                let base = stack.model_transform(0);
                for p in stage_mut(&mut stack, slot).particles(0) {
                    let d = signed_distance(&shape, &base, p.tail);
                    // Penetration of the tail's hit sphere: hit_radius − d ≤ hit_radius.
                    worst = worst.min(d);
                    assert!(d >= -1e-4, "{shape:?} axis {axis}: tail {d} inside");
                }
            }
        }
    }
    println!("deepest tail: {worst} (the tail's hit sphere may overlap by its radius, 0.02)");
}

/// A base at the origin (identity) and `n` bones hanging down (-Y in the model) 8 cm each,
/// each pointing along `axis` in its own frame.
fn hanging_chain(n: usize, axis: Vec3) -> Skeleton {
    let turn = ik_core::rotation::shortest_arc(axis, Vec3::NEG_Y);
    let mut bones = vec![ik_core::Bone::new("base", None, BoneTransform::IDENTITY)];
    bones.push(ik_core::Bone::new(
        "b1",
        Some(0),
        BoneTransform::from_translation_rotation(Vec3::ZERO, turn),
    ));
    for i in 2..=n {
        bones.push(ik_core::Bone::new(
            format!("b{i}"),
            Some(i - 1),
            BoneTransform::from_translation(axis * 0.08),
        ));
    }
    Skeleton::try_new(bones).unwrap()
}

#[test]
fn without_forces_the_animated_pose_is_kept_on_every_rest_convention() {
    for axis in AXES {
        for style in STYLES {
            let s = chain_rig(6, axis, style, 17);
            let joint = SpringJointDesc {
                stiffness: 1.0,
                gravity_power: 0.0,
                ..SpringJointDesc::default()
            };
            let spring =
                SpringBoneStage::try_new(&s, &[chain_desc(6, joint, vec![])], &[]).unwrap();
            let mut stack = IkStack::new(s.clone());
            let slot = stack.push(spring).unwrap();
            let input = s.rest_pose();
            let rest = s.model_transforms(&input);
            for _ in 0..120 {
                step(
                    &mut stack,
                    slot,
                    &input,
                    1.0 / 60.0,
                    BoneTransform::IDENTITY,
                );
            }
            for (i, r) in rest.iter().enumerate().skip(1) {
                let d = stack.model_transform(i).translation.distance(r.translation);
                assert!(d < 1e-5, "axis {axis} {style:?}: bone {i} moved {d}");
            }
        }
    }
}

/// Runs a character walking along +X at 1.5 m/s for 2 s; returns the tip's largest distance
/// from its animated (rest) place in the model.
fn walk_lag(center: Option<usize>) -> f32 {
    let s = hanging_chain(5, Vec3::Y);
    let joint = SpringJointDesc {
        stiffness: 0.5,
        drag_force: 0.3,
        ..SpringJointDesc::default()
    };
    let mut desc = chain_desc(5, joint, vec![]);
    desc.center = center;
    // (hanging_chain's bone 0 is the base the hair hangs from: a valid centre.)
    let spring = SpringBoneStage::try_new(&s, &[desc], &[]).unwrap();
    let mut stack = IkStack::new(s.clone());
    let slot = stack.push(spring).unwrap();
    let mut input = s.rest_pose();
    let rest_tip = s.model_transforms(&input)[5].translation;
    let mut lag = 0.0f32;
    let dt = 1.0 / 60.0;
    for k in 0..120 {
        // The walk moves the base (the root bone), the model frame stays.
        input.translations[0] = Vec3::X * (1.5 * k as f32 * dt);
        step(&mut stack, slot, &input, dt, BoneTransform::IDENTITY);
        let tip = stack.model_transform(5).translation - input.translations[0];
        lag = lag.max(tip.distance(rest_tip));
    }
    lag
}

#[test]
fn a_centre_bone_removes_the_lag_of_a_walking_character() {
    let world = walk_lag(None);
    let centred = walk_lag(Some(0));
    assert!(
        world > 0.01,
        "in world space the hair should trail: {world}"
    );
    assert!(
        centred < 1e-4,
        "relative to the centre it should not: {centred}"
    );
}

#[test]
fn a_teleport_resets_the_tails() {
    let s = hanging_chain(4, Vec3::X);
    let joint = SpringJointDesc {
        stiffness: 0.2,
        drag_force: 0.05,
        ..SpringJointDesc::default()
    };
    let spring = SpringBoneStage::try_new(&s, &[chain_desc(4, joint, vec![])], &[]).unwrap();
    let mut stack = IkStack::new(s.clone());
    let slot = stack.push(spring).unwrap();
    let input = s.rest_pose();
    let rest_tip = s.model_transforms(&input)[4].translation;
    let dt = 1.0 / 60.0;
    // A small move swings the chain ...
    step(&mut stack, slot, &input, dt, BoneTransform::IDENTITY);
    step(
        &mut stack,
        slot,
        &input,
        dt,
        BoneTransform::from_translation(Vec3::X * 0.1),
    );
    step(
        &mut stack,
        slot,
        &input,
        dt,
        BoneTransform::from_translation(Vec3::X * 0.1),
    );
    assert!(stack.model_transform(4).translation.distance(rest_tip) > 1e-3);
    // ... a jump of 100 m does not.
    step(
        &mut stack,
        slot,
        &input,
        dt,
        BoneTransform::from_translation(Vec3::X * 100.0),
    );
    assert!(stack.model_transform(4).translation.distance(rest_tip) < 1e-5);
    // Nor does a jump after an explicit reset... nor a half turn.
    step(
        &mut stack,
        slot,
        &input,
        dt,
        BoneTransform::from_translation(Vec3::X * 100.1),
    );
    stage_mut(&mut stack, slot).reset();
    step(
        &mut stack,
        slot,
        &input,
        dt,
        BoneTransform::from_translation(Vec3::X * 100.15),
    );
    assert!(stack.model_transform(4).translation.distance(rest_tip) < 1e-5);
    step(
        &mut stack,
        slot,
        &input,
        dt,
        BoneTransform::from_translation_rotation(Vec3::X * 100.15, Quat::from_rotation_y(3.0)),
    );
    assert!(stack.model_transform(4).translation.distance(rest_tip) < 1e-5);
}

#[test]
fn weight_blends_and_frame_rate_does_not_change_the_motion() {
    let s = hanging_chain(5, Vec3::Z);
    let joint = SpringJointDesc {
        stiffness: 0.8,
        drag_force: 0.3,
        gravity_power: 0.5,
        ..SpringJointDesc::default()
    };
    let run = |dt: f32, weight: f32| {
        let mut desc = chain_desc(5, joint, vec![]);
        desc.weight = weight;
        let spring = SpringBoneStage::try_new(&s, &[desc], &[]).unwrap();
        let mut stack = IkStack::new(s.clone());
        let slot = stack.push(spring).unwrap();
        let mut input = s.rest_pose();
        let frames = (1.0 / dt).round() as usize;
        for k in 0..frames {
            let t = (k + 1) as f32 * dt;
            input.rotations[0] = Quat::from_rotation_z(0.5 * (4.0 * t).sin());
            step(&mut stack, slot, &input, dt, BoneTransform::IDENTITY);
        }
        (
            stack.model_transform(5).translation,
            s.model_transforms(&input)[5].translation,
        )
    };
    let (tip0, animated) = run(1.0 / 60.0, 0.0);
    assert!(
        tip0.distance(animated) < 1e-6,
        "weight 0 keeps the animation"
    );
    let (a, _) = run(1.0 / 60.0, 1.0);
    let (b, _) = run(1.0 / 240.0, 1.0);
    let (c, _) = run(1.0 / 30.0, 1.0);
    let swing = a.distance(animated);
    assert!(swing > 0.01, "the spring should trail the shake: {swing}");
    // The same motion at 240 and 30 Hz as at 60, to within a tenth of the swing.
    assert!(
        a.distance(b) < 0.1 * swing,
        "60 vs 240 Hz: {} of {swing}",
        a.distance(b)
    );
    assert!(
        a.distance(c) < 0.1 * swing,
        "60 vs 30 Hz: {} of {swing}",
        a.distance(c)
    );
    println!(
        "swing {swing}, 60 vs 240 Hz {}, 60 vs 30 Hz {}",
        a.distance(b),
        a.distance(c)
    );
}

#[test]
fn malformed_chains_are_rejected() {
    let s = chain_rig(4, Vec3::X, RestStyle::Plain, 1);
    let j = |bone| SpringJointDesc {
        bone,
        ..SpringJointDesc::default()
    };
    let bad = [
        SpringChainDesc {
            joints: vec![j(1), j(3)],
            ..SpringChainDesc::default()
        },
        SpringChainDesc {
            joints: vec![j(9)],
            ..SpringChainDesc::default()
        },
        SpringChainDesc {
            joints: vec![],
            ..SpringChainDesc::default()
        },
        SpringChainDesc {
            joints: vec![j(1)],
            tail: SpringTail::LastJoint,
            ..SpringChainDesc::default()
        },
        SpringChainDesc {
            joints: vec![SpringJointDesc {
                drag_force: f32::NAN,
                ..j(1)
            }],
            ..SpringChainDesc::default()
        },
        SpringChainDesc {
            joints: vec![j(1), j(2)],
            center: Some(2),
            ..SpringChainDesc::default()
        },
        SpringChainDesc {
            joints: vec![j(1)],
            colliders: vec![0],
            ..SpringChainDesc::default()
        },
    ];
    for desc in bad {
        assert!(
            SpringBoneStage::try_new(&s, std::slice::from_ref(&desc), &[]).is_err(),
            "{desc:?}"
        );
    }
    let one = SpringChainDesc {
        joints: vec![j(1), j(2)],
        ..SpringChainDesc::default()
    };
    assert!(
        SpringBoneStage::try_new(&s, &[one.clone(), one], &[]).is_err(),
        "shared bones"
    );
}

/// VRM's reference spring update (`UniVRM` / three-vrm `VRMSpringBoneJoint.update`), written out
/// plainly for a chain whose root parent is `parent` in the world: per joint, root first, with
/// the parent's simulated rotation. Returns the new world rotations.
#[allow(clippy::too_many_arguments)]
fn vrm_reference_step(
    parent: (Vec3, Quat),
    locals: &[(Vec3, Quat)],
    tail_offsets: &[Vec3],
    tails: &mut [(Vec3, Vec3)],
    joint: &SpringJointDesc,
    dt: f32,
) {
    let (mut p_pos, mut p_rot) = parent;
    for (k, &(t, r)) in locals.iter().enumerate() {
        let origin = p_pos + p_rot * t;
        let animated_rot = p_rot * r;
        let axis = tail_offsets[k].normalize();
        let length = tail_offsets[k].length();
        let (current, previous) = tails[k];
        let mut next = current
            + (current - previous) * (1.0 - joint.drag_force)
            + animated_rot * axis * joint.stiffness * dt
            + joint.gravity_dir.normalize() * joint.gravity_power * dt;
        next = origin + (next - origin).normalize() * length;
        tails[k] = (next, current);
        let rot = Quat::from_rotation_arc(animated_rot * axis, (next - origin).normalize())
            * animated_rot;
        p_pos = origin;
        p_rot = rot;
    }
}

#[test]
fn at_sixty_hertz_the_step_is_vrms_reference_update() {
    let s = hanging_chain(4, Vec3::Y);
    let joint = SpringJointDesc {
        stiffness: 0.7,
        gravity_power: 0.4,
        drag_force: 0.35,
        gravity_dir: Vec3::new(0.2, -1.0, 0.1),
        ..SpringJointDesc::default()
    };
    let spring = SpringBoneStage::try_new(&s, &[chain_desc(4, joint, vec![])], &[]).unwrap();
    let mut stack = IkStack::new(s.clone());
    let slot = stack.push(spring).unwrap();
    let mut input = s.rest_pose();
    let dt = 1.0 / 60.0;
    // The reference's state: tails at the animated pose.
    let rest = s.model_transforms(&input);
    let mut tails: Vec<(Vec3, Vec3)> = (1..=4)
        .map(|i| {
            let t = if i < 4 {
                rest[i + 1].translation
            } else {
                // The virtual tail: 0.07 past the last joint along its parent → joint line.
                let d = (rest[4].translation - rest[3].translation).normalize();
                rest[4].translation + d * 0.07
            };
            (t, t)
        })
        .collect();
    let locals: Vec<(Vec3, Quat)> = (1..=4)
        .map(|i| (input.translations[i], input.rotations[i]))
        .collect();
    let offsets: Vec<Vec3> = (1..=4)
        .map(|i| {
            if i < 4 {
                input.translations[i + 1]
            } else {
                rest[4].rotation.inverse()
                    * (rest[4].translation - rest[3].translation).normalize()
                    * 0.07
            }
        })
        .collect();
    step(&mut stack, slot, &input, dt, BoneTransform::IDENTITY);
    let mut worst = 0.0f32;
    for k in 1..180 {
        let t = k as f32 * dt;
        input.rotations[0] =
            Quat::from_rotation_z(0.6 * (5.0 * t).sin()) * Quat::from_rotation_x(0.3 * t.cos());
        step(&mut stack, slot, &input, dt, BoneTransform::IDENTITY);
        vrm_reference_step(
            (Vec3::ZERO, input.rotations[0]),
            &locals,
            &offsets,
            &mut tails,
            &joint,
            dt,
        );
        for (i, p) in stage_mut(&mut stack, slot).particles(0).iter().enumerate() {
            worst = worst.max(p.tail.distance(tails[i].0));
        }
    }
    assert!(worst < 1e-5, "{worst} from VRM's reference update");
    // (And the chain did move: the last tail far from where it started.)
    let start =
        rest[4].translation + (rest[4].translation - rest[3].translation).normalize() * 0.07;
    assert!(tails[3].0.distance(start) > 0.01);
}
