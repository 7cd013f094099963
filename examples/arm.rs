//! Hello world of `ik-core`: build a small skeleton in code, solve its arm toward a target with
//! an elbow pole, print the joint rotations and the residual.
//!
//! Run with `cargo run --release --example arm`.

use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::glam::{Quat, Vec3};
use ik_core::{Bone, BoneTransform, Skeleton};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A torso and a left arm whose bones point along their local +X (as many Blender rigs do),
    // each with a rest rotation: the arm hangs in an A-pose with a slightly bent elbow.
    let bone = |name: &str, parent: Option<usize>, t: Vec3, r: Quat| {
        Bone::new(name, parent, BoneTransform::from_translation_rotation(t, r))
    };
    let skeleton = Skeleton::try_new(vec![
        bone("hips", None, Vec3::new(0.0, 1.0, 0.0), Quat::IDENTITY),
        bone(
            "chest",
            Some(0),
            Vec3::new(0.0, 0.4, 0.0),
            Quat::from_rotation_x(0.1),
        ),
        bone(
            "upper_arm.L",
            Some(1),
            Vec3::new(0.18, 0.1, 0.0),
            Quat::from_rotation_z(-0.7),
        ),
        bone(
            "forearm.L",
            Some(2),
            Vec3::new(0.28, 0.0, 0.0),
            Quat::from_rotation_y(-0.15),
        ),
        bone("hand.L", Some(3), Vec3::new(0.25, 0.0, 0.0), Quat::IDENTITY),
    ])?;

    // Build the solver once: it derives the segment lengths, bone directions and elbow axis
    // from the rest pose.
    let arm = TwoBoneIk::from_names(&skeleton, "upper_arm.L", "forearm.L", "hand.L")?;

    // Reach forward and across, palm down, elbow pointing out and down.
    let target = Vec3::new(0.15, 1.35, 0.35);
    let palm_down = Quat::from_rotation_x(core::f32::consts::FRAC_PI_2);
    let pole = Vec3::new(0.6, 0.9, -0.2);
    let goal = LimbGoal::new(target)
        .with_orientation(palm_down)
        .with_pole(pole);

    let mut pose = skeleton.rest_pose();
    let report = arm.solve(&skeleton, &mut pose, &goal)?;

    println!("target {target:.3}, pole {pole:.3}");
    for name in ["upper_arm.L", "forearm.L", "hand.L"] {
        let i = skeleton.index_of(name)?;
        let q = pose.rotations[i];
        let (axis, angle) = if q.w < 0.0 { -q } else { q }.to_axis_angle();
        let at = skeleton.model_transform(&pose, i).translation;
        println!(
            "{name:>12}: local rotation {:6.1}° about {axis:.3}, joint at {at:.3}",
            angle.to_degrees()
        );
    }
    let hand = skeleton.model_transform(&pose, skeleton.index_of("hand.L")?);
    println!(
        "reachable: {}, elbow flex {:.1}°, residual {:.2e} m, orientation error {:.2e} rad",
        report.reachable,
        report.flex_angle.to_degrees(),
        hand.translation.distance(target),
        hand.rotation.angle_between(palm_down),
    );
    Ok(())
}
