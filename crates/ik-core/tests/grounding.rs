//! Foot grounding, measured on the solved pose by forward kinematics: a walk across a seeded
//! height field and up a staircase on every rig convention and the CC0 characters — planted
//! feet on their ground (≤ 2 mm), no penetration, planted feet not sliding (≤ 1 mm per step),
//! the pelvis offset's vertical acceleration bounded (no snap on a 20 cm stair) — plus the
//! spring's frame-rate independence, bad input, and a four-legged rig.

#[path = "support/gameplay.rs"]
mod gameplay;
#[path = "support/grounding.rs"]
mod grounding_walk;

use gameplay::rigs;
use grounding_walk::{Terrain, Walk};
use ik_core::glam::{Quat, Vec3};
use ik_core::grounding::{
    FootGround, GroundHit, GroundingSettings, GroundingStage, Leg, Spring, clamp_tilt,
    pelvis_offset,
};
use ik_core::stack::{IkStack, Stage, StageOutcome};
use ik_core::{Bone, BoneTransform, Skeleton};

const FRAMES: usize = 300;
const DT: f32 = 1.0 / 60.0;

#[derive(Default, Debug)]
struct Measured {
    planted_frames: usize,
    frames: usize,
    max_ground_error: f32,
    min_gap: f32,
    max_slide: f32,
    /// The solved pelvis' vertical acceleration in the world (human m/s²).
    max_pelvis_accel: f32,
    /// The same without grounding: the walk's bob carried by the controller.
    max_animated_accel: f32,
    max_residual: f32,
}

fn measure(walk: &mut Walk) -> Measured {
    let trace = std::env::var("GROUNDING_TRACE").is_ok();
    let s = walk.scale;
    let mut m = Measured {
        min_gap: f32::INFINITY,
        ..Measured::default()
    };
    let mut plant_start: [Option<Vec3>; 2] = [None, None];
    let mut pelvis = Vec::with_capacity(FRAMES);
    let up = walk.frame.up;
    for f in 0..FRAMES {
        walk.step(f);
        if let Some(StageOutcome::Solved(r)) = walk.stack.slot(0).map(|s| &s.outcome) {
            m.max_residual = m.max_residual.max(r.position_residual() / s);
        } else {
            panic!(
                "grounding failed at frame {f}: {:?}",
                walk.stack.slot(0).unwrap().outcome
            );
        }
        for (leg, start) in plant_start.iter_mut().enumerate() {
            let (ga, gb) = walk.gaps(f, leg);
            m.min_gap = m.min_gap.min(ga.min(gb) / s);
            m.frames += 1;
            let planted = walk.stage().output().feet[leg].planted;
            if planted {
                m.planted_frames += 1;
                m.max_ground_error = m.max_ground_error.max(ga.min(gb).abs() / s);
                let a = walk.ankle_world(f, leg);
                let start = *start.get_or_insert(a);
                let d = a - start;
                m.max_slide = m.max_slide.max((d - up * d.dot(up)).length() / s);
            } else {
                *start = None;
            }
        }
        let (out, anim) = walk.pelvis_height(f);
        pelvis.push((out / s, anim / s));
        if trace {
            let out = walk.stage().output().clone();
            let g: Vec<(f32, f32)> = (0..2).map(|l| walk.gaps(f, l)).collect();
            println!(
                "{f:3} pelvis {:+.4} ground {:+.4} reach {:+.4} feet {:?}",
                pelvis[f].0 - pelvis[f].1,
                out.pelvis_ground / s,
                out.pelvis_reach / s,
                out.feet
                    .iter()
                    .zip(&g)
                    .map(|(x, g)| format!(
                        "w {:.2} pl {} toe {} off {:+.4} gaps {:+.4} {:+.4}",
                        x.weight,
                        x.planted as u8,
                        x.on_toe as u8,
                        x.offset / s,
                        g.0 / s,
                        g.1 / s
                    ))
                    .collect::<Vec<_>>()
            );
        }
    }
    let accel = |w: [f32; 3]| ((w[2] - 2.0 * w[1] + w[0]) / (DT * DT)).abs();
    for w in pelvis.windows(3) {
        m.max_pelvis_accel = m.max_pelvis_accel.max(accel([w[0].0, w[1].0, w[2].0]));
        m.max_animated_accel = m.max_animated_accel.max(accel([w[0].1, w[1].1, w[2].1]));
    }
    m
}

#[test]
fn walks_on_height_field_and_stairs_on_every_rig() {
    let mut failures = Vec::new();
    for rig in rigs(true) {
        for terrain in [Terrain::HeightField(7), Terrain::Stairs { steps: 4 }] {
            let mut walk = Walk::new(&rig, terrain, FRAMES);
            let m = measure(&mut walk);
            println!(
                "{:<32} {:?}: planted {:>3.0}%  ground err {:.3} mm  min gap {:+.3} mm  slide {:.3} mm  pelvis accel {:.2} m/s² (ungrounded {:.2})  residual {:.3} mm",
                rig.name,
                terrain,
                100.0 * m.planted_frames as f32 / m.frames as f32,
                m.max_ground_error * 1e3,
                m.min_gap * 1e3,
                m.max_slide * 1e3,
                m.max_pelvis_accel,
                m.max_animated_accel,
                m.max_residual * 1e3,
            );
            let mut fail =
                |what: String| failures.push(format!("{} {terrain:?}: {what}", rig.name));
            if (m.planted_frames as f32) < 0.15 * m.frames as f32 {
                fail(format!(
                    "only {} of {} foot frames planted",
                    m.planted_frames, m.frames
                ));
            }
            if m.max_ground_error > 2e-3 {
                fail(format!(
                    "planted foot {:.2} mm off its ground",
                    m.max_ground_error * 1e3
                ));
            }
            if m.min_gap < -2e-5 {
                fail(format!("foot {:.3} mm into the ground", -m.min_gap * 1e3));
            }
            if m.max_slide > 1e-3 {
                fail(format!("planted foot slid {:.3} mm", m.max_slide * 1e3));
            }
            // A 20 cm snap in one frame at 60 Hz is 720 m/s²; the walk's own bob ~2 m/s².
            if m.max_pelvis_accel > 20.0 {
                fail(format!(
                    "pelvis offset accelerates {:.1} m/s²",
                    m.max_pelvis_accel
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn without_smoothing_the_stair_snaps() {
    // The bound above can fail: the same stair walk unsmoothed snaps the pelvis.
    let rig = rigs(false).into_iter().next().expect("a rig");
    let mut walk = Walk::new(&rig, Terrain::Stairs { steps: 4 }, FRAMES);
    let settings = GroundingSettings {
        smooth_time: 0.0,
        ..*walk.stage().settings()
    };
    walk.stage().set_settings(settings).unwrap();
    let m = measure(&mut walk);
    println!("unsmoothed pelvis accel {:.1} m/s²", m.max_pelvis_accel);
    assert!(m.max_pelvis_accel > 100.0, "{m:?}");
}

#[test]
fn spring_is_frame_rate_independent() {
    for hz in [30.0f32, 60.0, 144.0, 240.0] {
        let mut s = Spring::<f32>::at(0.0);
        let n = (hz * 0.5).round() as usize;
        for _ in 0..n {
            s.update(0.2, 0.12, 100.0, 1.0 / hz);
        }
        // x(t) = target + (y0 + (v0 + ω y0) t) e^{-ω t}, t = 0.5, ω = 2 / 0.12.
        let w: f32 = 2.0 / 0.12;
        let exact = 0.2 - 0.2 * (1.0 + w * 0.5) * (-w * 0.5).exp();
        assert!(
            (s.value - exact).abs() < 1e-5,
            "{hz} Hz: {} vs {exact}",
            s.value
        );
    }
    // The speed limit holds.
    let mut s = Spring::<f32>::at(0.0);
    for _ in 0..10 {
        let before = s.value;
        s.update(10.0, 0.12, 1.0, 1.0 / 60.0);
        assert!(s.value - before <= 1.0 / 60.0 + 1e-6);
    }
}

#[test]
fn plain_functions() {
    let up = Vec3::Y;
    let steep = Vec3::new(1.0, 0.3, 0.0);
    let c = clamp_tilt(steep, up, 30f32.to_radians());
    assert!((c.angle_between(up) - 30f32.to_radians()).abs() < 1e-5);
    assert_eq!(clamp_tilt(Vec3::ZERO, up, 0.5), up);
    assert_eq!(clamp_tilt(-up, up, 0.5), up);
    assert_eq!(pelvis_offset([0.1, -0.05], false, 0.3), -0.05);
    assert_eq!(pelvis_offset([0.1, 0.05], false, 0.3), 0.0);
    assert_eq!(pelvis_offset([0.1, 0.05], true, 0.3), 0.05);
    assert_eq!(pelvis_offset([-0.5], false, 0.3), -0.3);
    assert_eq!(pelvis_offset([], false, 0.3), 0.0);
}

/// A four-legged rig whose bones point along local +Z (not +Y), body 0.5 above the floor.
fn quadruped() -> (Skeleton, Vec<Leg>) {
    let t = BoneTransform::from_translation;
    // Local +Z of each leg bone points down: a rotation taking +Z to -Y.
    let down = Quat::from_rotation_arc(Vec3::Z, Vec3::NEG_Y);
    let mut bones = vec![Bone::new("body", None, t(Vec3::Y * 0.5))];
    let mut legs = Vec::new();
    for (i, (x, z)) in [(0.15, 0.3), (-0.15, 0.3), (0.15, -0.3), (-0.15, -0.3)]
        .into_iter()
        .enumerate()
    {
        let b = bones.len();
        bones.push(Bone::new(
            format!("hip{i}"),
            Some(0),
            BoneTransform::from_translation_rotation(Vec3::new(x, 0.0, z), down),
        ));
        bones.push(Bone::new(
            format!("knee{i}"),
            Some(b),
            // Front knees and hind hocks bend opposite ways, as on a dog.
            BoneTransform::from_translation_rotation(
                Vec3::Z * 0.25,
                Quat::from_rotation_x(if z > 0.0 { 0.3 } else { -0.3 }),
            ),
        ));
        bones.push(Bone::new(
            format!("ankle{i}"),
            Some(b + 1),
            t(Vec3::Z * 0.22),
        ));
        legs.push(Leg::new(b, b + 1, b + 2));
    }
    (Skeleton::try_new(bones).unwrap(), legs)
}

#[test]
fn four_legs_on_a_slope() {
    let (skeleton, legs) = quadruped();
    let stage = GroundingStage::try_new(&skeleton, &legs, None).unwrap();
    assert_eq!(stage.pelvis(), 0);
    assert!(stage.up().distance(Vec3::Y) < 1e-5);
    let mut stack = IkStack::new(skeleton.clone());
    stack.push(Stage::custom(stage)).unwrap();
    // A 15° slope down toward -Z, through the origin.
    let n = Quat::from_rotation_x(15f32.to_radians()) * Vec3::Y;
    let rest = skeleton.rest_model_transforms();
    let plane = |p: Vec3| p - Vec3::Y * (p.dot(n) / n.y);
    for _ in 0..3 {
        stack.set_input(&skeleton.rest_pose()).unwrap();
        let (sk, buffer, slots) = stack.parts_mut();
        let stage: &mut GroundingStage = slots[0].stage.as_custom_mut().unwrap();
        let mut probes = Vec::new();
        stage.probe_points(sk, buffer, &mut probes);
        for (i, &(a, _)) in probes.iter().enumerate() {
            stage.ground[i] = FootGround::flat(GroundHit::new(plane(a), n));
        }
        stack.solve();
    }
    let report = stack.slot(0).unwrap();
    assert!(
        matches!(report.outcome, StageOutcome::Solved(_)),
        "{:?}",
        report.outcome
    );
    let stage: &mut GroundingStage = stack.slot_mut(0).unwrap().stage.as_custom_mut().unwrap();
    let heights: Vec<f32> = (0..4).map(|i| stage.rest_heights(i).unwrap().0).collect();
    let offset = stage.output().pelvis_offset;
    assert!(
        offset.y < -0.01,
        "body lowered for the downhill feet: {offset}"
    );
    for (i, leg) in legs.iter().enumerate() {
        let a = stack.model_transform(leg.foot).translation;
        // The ankle keeps its rest height above the plane, along the normal.
        let d = a.dot(n) - heights[i];
        assert!(
            d.abs() < 1e-4,
            "leg {i}: {d} (rest ankle {:?})",
            rest[leg.foot]
        );
    }
}

#[test]
fn bad_input_is_an_error_and_leaves_no_nan() {
    let (skeleton, legs) = quadruped();
    assert!(GroundingStage::try_new(&skeleton, &[], None).is_err());
    assert!(GroundingStage::try_new(&skeleton, &[Leg::new(3, 2, 1)], None).is_err());
    assert!(GroundingStage::try_new(&skeleton, &[Leg::new(1, 2, 3).with_toe(4)], None).is_err());
    assert!(GroundingStage::try_new(&skeleton, &legs, Some(1)).is_err());
    let bad = GroundingSettings {
        max_tilt: f32::NAN,
        ..GroundingSettings::default()
    };
    assert!(GroundingStage::try_with_settings(&skeleton, &legs, None, bad).is_err());
    let stage = GroundingStage::try_new(&skeleton, &legs, None).unwrap();
    let mut stack = IkStack::new(skeleton.clone());
    stack.push(Stage::custom(stage)).unwrap();
    let input = skeleton.rest_pose();
    for poison in [
        FootGround::flat(GroundHit::new(Vec3::NAN, Vec3::Y)),
        FootGround::flat(GroundHit::new(
            Vec3::ZERO,
            Vec3::new(f32::INFINITY, 1.0, 0.0),
        )),
    ] {
        stack.set_input(&input).unwrap();
        let stage: &mut GroundingStage = stack.slot_mut(0).unwrap().stage.as_custom_mut().unwrap();
        stage.ground[1] = poison;
        let report = stack.solve();
        assert_eq!(report.failed, 1);
        assert!(stack.pose().is_finite());
        assert_eq!(stack.pose(), &input, "restored");
    }
    // A zero normal, a wall (normal along the floor) and a ceiling are not errors: up is used
    // or the tilt is clamped, and nothing goes NaN.
    for normal in [Vec3::ZERO, Vec3::X, Vec3::NEG_Y] {
        stack.set_input(&input).unwrap();
        let stage: &mut GroundingStage = stack.slot_mut(0).unwrap().stage.as_custom_mut().unwrap();
        stage.ground[0] = FootGround::flat(GroundHit::new(Vec3::ZERO, normal));
        stage.ground[1] = FootGround::NONE;
        stage.dt = f32::INFINITY;
        let report = stack.solve();
        assert_eq!(report.failed, 1, "a non-finite dt is an error");
        let stage: &mut GroundingStage = stack.slot_mut(0).unwrap().stage.as_custom_mut().unwrap();
        stage.dt = DT;
        stack.set_input(&input).unwrap();
        let report = stack.solve();
        assert_eq!(report.failed, 0, "{normal}");
        assert!(stack.pose().is_finite());
    }
}
