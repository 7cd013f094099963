//! Foot grounding, measured on the solved pose by forward kinematics (`support/grounding.rs`):
//! every rig convention in every rest-axis style and the characters in `assets/`, the rest pose
//! sliding and a stepping clip, standing and then carried at 0.5 m/s across a 20° slope, ±8 cm
//! sine ground, 18 cm stairs up and down and an 18 cm edge along and across the walk, 20 s at
//! 60 Hz — no joint turns more than 20° in a frame, the pelvis' vertical acceleration within
//! the documented bound (and within 2× the controller's own on smooth ground), planted feet on
//! their ground (≤ 1 mm) and not sliding (≤ 0.01 mm a frame) outside a bounded height blend, a
//! still input at rest within 10 frames — plus the spring's frame-rate independence, bad
//! input, and a four-legged rig.

use crate::grounding_course as course;

use course::{Clip, Ground, Input, Measured, Run, course_rigs};
use ik_core::glam::{Quat, Vec3};
use ik_core::grounding::{
    FootGround, GroundHit, GroundingSettings, GroundingStage, Leg, Spring, clamp_tilt,
    pelvis_offset,
};
use ik_core::stack::{IkStack, StageOutcome};
use ik_core::{Bone, BoneTransform, Skeleton};

const DT: f32 = course::DT;

/// The most a joint may turn in one frame (degrees).
const MAX_TURN: f32 = 20.0;
use course::MAX_GAP;
/// A planted foot's largest slide in one frame (human m).
const MAX_SLIDE: f32 = 1e-5;
/// Frames a still input may take to give a bit-identical output.
const STILL_WITHIN: usize = 10;

/// Runs `input` on `ground` over every rig, prints a line per rig and returns the failures.
fn course(input: Input, ground: Ground) {
    let mut failures = Vec::new();
    let mut worst = Measured::default();
    for rig in course_rigs() {
        let clip = Clip::new(&rig, input);
        let mut run = Run::new(&rig, &clip, ground);
        let settings = *run.stage().settings();
        // The documented bound, in human m/s², on top of the animation as the controller
        // carries it.
        let accel_bound = settings.max_accel / clip.scale;
        let m = run.measure();
        println!(
            "{:<28} {input:?} {ground:?}: turn {:5.1}° (frame {} bone {})  pelvis {:6.1} m/s² (frame {}; controller {:5.1})  \
             gap {:7.3} mm (frame {})  slide {:.4} mm (frame {})  blend ≤ {:5.1} mm on {} of {} planted frames  still after {}  residual {:.3} mm",
            rig.name,
            m.max_turn,
            m.turn_at.0,
            m.turn_at.1,
            m.max_pelvis_accel,
            m.pelvis_at,
            m.max_controller_accel,
            m.max_gap * 1e3,
            m.gap_at,
            m.max_slide * 1e3,
            m.slide_at,
            m.max_blend * 1e3,
            m.blend_frames,
            m.planted_frames,
            m.still_after,
            m.max_residual * 1e3,
        );
        worst.max_turn = worst.max_turn.max(m.max_turn);
        worst.max_pelvis_accel = worst.max_pelvis_accel.max(m.max_pelvis_accel);
        worst.max_controller_accel = worst.max_controller_accel.max(m.max_controller_accel);
        worst.max_gap = worst.max_gap.max(m.max_gap);
        worst.max_slide = worst.max_slide.max(m.max_slide);
        worst.max_blend = worst.max_blend.max(m.max_blend);
        let mut fail = |what: String| failures.push(format!("{}: {what}", rig.name));
        if m.max_turn > MAX_TURN {
            fail(format!(
                "a joint turned {:.1}° in a frame (frame {}, bone {})",
                m.max_turn, m.turn_at.0, m.turn_at.1
            ));
        }
        if m.max_pelvis_accel > accel_bound + m.max_controller_accel {
            fail(format!(
                "pelvis {:.1} m/s² (frame {}) over the bound {accel_bound:.1} + the controller's {:.1}",
                m.max_pelvis_accel, m.pelvis_at, m.max_controller_accel
            ));
        }
        if ground.smooth() && m.max_pelvis_accel > 2.0 * m.max_controller_accel {
            fail(format!(
                "pelvis {:.1} m/s² over twice the controller's {:.1} on smooth ground",
                m.max_pelvis_accel, m.max_controller_accel
            ));
        }
        if m.max_gap > MAX_GAP {
            fail(format!(
                "planted foot {:.3} mm off its ground (frame {})",
                m.max_gap * 1e3,
                m.gap_at
            ));
        }
        if m.max_slide > MAX_SLIDE {
            fail(format!(
                "planted foot slid {:.4} mm in a frame (frame {})",
                m.max_slide * 1e3,
                m.slide_at
            ));
        }
        // A height blend is bounded by the max step height.
        if m.max_blend > settings.max_step_height / clip.scale {
            fail(format!("height blend {:.1} mm", m.max_blend * 1e3));
        }
        if m.still_after > STILL_WITHIN {
            fail(format!(
                "still input: output changing until frame {}",
                m.still_after
            ));
        }
        if (m.planted_frames as f32) < 0.3 * m.foot_frames as f32 {
            fail(format!(
                "only {} of {} foot frames planted",
                m.planted_frames, m.foot_frames
            ));
        }
    }
    println!(
        "worst {input:?} {ground:?}: turn {:.1}°  pelvis {:.1} m/s² (controller {:.1})  gap {:.4} mm  slide {:.5} mm  blend {:.1} mm",
        worst.max_turn,
        worst.max_pelvis_accel,
        worst.max_controller_accel,
        worst.max_gap * 1e3,
        worst.max_slide * 1e3,
        worst.max_blend * 1e3
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

macro_rules! course_tests {
    ($($name:ident: $input:ident $ground:ident;)*) => {$(
        #[test]
        fn $name() {
            course(Input::$input, Ground::$ground);
        }
    )*};
}

course_tests! {
    rest_pose_on_slope: Rest Slope;
    rest_pose_on_sine_ground: Rest Sine;
    rest_pose_up_stairs: Rest StairsUp;
    rest_pose_down_stairs: Rest StairsDown;
    rest_pose_along_edge: Rest EdgeAlong;
    rest_pose_across_edge: Rest EdgeAcross;
    stepping_on_slope: Stepping Slope;
    stepping_on_sine_ground: Stepping Sine;
    stepping_up_stairs: Stepping StairsUp;
    stepping_down_stairs: Stepping StairsDown;
    stepping_along_edge: Stepping EdgeAlong;
    stepping_across_edge: Stepping EdgeAcross;
}

#[test]
fn without_smoothing_the_stair_snaps() {
    // The bounds above can fail: the same stair walk unsmoothed snaps the pelvis.
    let rig = course_rigs().into_iter().next().expect("a rig");
    let clip = Clip::new(&rig, Input::Stepping);
    let mut run = Run::new(&rig, &clip, Ground::StairsUp);
    let settings = GroundingSettings {
        smooth_time: 0.0,
        ..*run.stage().settings()
    };
    run.stage().set_settings(settings).unwrap();
    let m = run.measure();
    println!("unsmoothed: {m:?}");
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
    stack.push(stage).unwrap();
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
    stack.push(stage).unwrap();
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

#[test]
fn bounded_spring_bounds_acceleration_at_any_frame_rate() {
    let (max_accel, max_speed, snap) = (6.0f32, 2.7f32, 1e-5f32);
    for hz in [30.0f32, 60.0, 144.0] {
        let dt = 1.0 / hz;
        let mut s = Spring::<f32>::at(0.0);
        let mut x = vec![0.0f32; 2];
        // A 20 cm step held for 2 s.
        for _ in 0..(2.0 * hz) as usize {
            s.update_bounded(0.2, 0.12, max_speed, max_accel, snap, dt);
            x.push(s.value);
        }
        let worst = x
            .windows(3)
            .map(|w| ((w[2] - 2.0 * w[1] + w[0]) / (dt * dt)).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= max_accel * 1.001, "{hz} Hz: {worst} m/s²");
        // Bounded, yet it gets there and lands exactly.
        assert_eq!(s.value, 0.2, "{hz} Hz");
        assert_eq!(s.velocity, 0.0, "{hz} Hz");
        // The unbounded spring's first frame alone is over the bound: the bound did the work.
        let mut free = Spring::<f32>::at(0.0);
        free.update(0.2, 0.12, max_speed, dt);
        assert!(free.value / (dt * dt) > max_accel, "{hz} Hz");
    }
}

#[test]
fn a_probe_flickering_across_an_edge_does_not_move_the_foot() {
    // The ground under one foot alternates between two heights 18 cm apart every frame (a
    // probe on a kerb's edge): the foot keeps the side it stood on.
    let (skeleton, legs) = quadruped();
    let stage = GroundingStage::try_new(&skeleton, &legs, None).unwrap();
    let mut stack = IkStack::new(skeleton.clone());
    stack.push(stage).unwrap();
    let input = skeleton.rest_pose();
    let mut last: Option<Vec3> = None;
    let mut worst = 0.0f32;
    for f in 0..120 {
        stack.set_input(&input).unwrap();
        let (sk, buffer, slots) = stack.parts_mut();
        let stage: &mut GroundingStage = slots[0].stage.as_custom_mut().unwrap();
        stage.dt = DT;
        let mut probes = Vec::new();
        stage.probe_points(sk, buffer, &mut probes);
        for (i, &(a, _)) in probes.iter().enumerate() {
            let h = if i == 0 && f % 2 == 1 { 0.18 } else { 0.0 };
            stage.ground[i] = FootGround::flat(GroundHit::new(Vec3::new(a.x, h, a.z), Vec3::Y));
        }
        stack.solve();
        let ankle = stack.model_transform(legs[0].foot).translation;
        if let Some(l) = last {
            worst = worst.max(ankle.distance(l));
        }
        last = Some(ankle);
        assert!(stack.pose().is_finite());
    }
    println!("largest foot step in a frame: {:.2} mm", worst * 1e3);
    assert!(worst <= 1e-5, "the foot moved {worst} in a frame");
}
