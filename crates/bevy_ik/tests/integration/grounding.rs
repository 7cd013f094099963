//! `IkGrounding` in a headless app: ground written by the game (a hole under one foot lowers
//! the pelvis and puts both feet on their ground), ground from Bevy mesh ray casts against an
//! `IkGround` slope (feet at their rest height above it along its normal, turned to it; a mesh
//! on the character itself is not hit), and bad samples (NaN) reported without NaN bones.

use crate::common;

use core::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_ik::prelude::*;
use common::*;

/// 60 Hz frames, so the smoothing converges in a known number of updates.
fn fixed_step(app: &mut App) {
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
        1.0 / 60.0,
    )));
}

const HIPS: usize = 0;
const L_FOOT: usize = 15;
const R_FOOT: usize = 19;
const L_TOE: usize = 16;

fn legs() -> IkGrounding {
    let n = MIXAMO_NAMES;
    IkGrounding::new([
        IkLeg::new(n[13], n[14], n[15]).with_toe(n[16]),
        IkLeg::new(n[17], n[18], n[19]).with_toe(n[20]),
    ])
}

/// The ground the game reports: `heights` (left, right) under each foot, flat.
#[derive(Resource)]
struct Heights([f32; 2]);

fn write_samples(
    heights: Res<Heights>,
    mut q: Query<(&mut IkGroundSamples, &IkGroundingState)>,
    feet: Query<&GlobalTransform>,
    bones: Res<Bones>,
) {
    for (mut samples, _) in &mut q {
        samples.feet = [(L_FOOT, heights.0[0]), (R_FOOT, heights.0[1])]
            .into_iter()
            .map(|(b, h)| {
                let p = feet
                    .get(bones.0[b])
                    .map_or(Vec3::ZERO, GlobalTransform::translation);
                let hit = IkGroundHit {
                    point: Vec3::new(p.x, h, p.z),
                    normal: Vec3::Y,
                };
                IkFootGround {
                    heel: Some(hit),
                    toe: Some(hit),
                }
            })
            .collect();
    }
}

#[derive(Resource)]
struct Bones(Vec<Entity>);

fn character(app: &mut App, at: Vec3) -> (Entity, Vec<Entity>) {
    let root = app.world_mut().spawn(Transform::from_translation(at)).id();
    let bones = spawn_humanoid(app.world_mut(), root, &MIXAMO_NAMES);
    (root, bones)
}

#[test]
fn a_hole_under_one_foot_lowers_the_pelvis_and_grounds_both_feet() {
    let mut app = app();
    fixed_step(&mut app);
    let at = Vec3::new(2.0, 0.5, -1.0);
    let (root, bones) = character(&mut app, at);
    app.insert_resource(Heights([at.y - 0.1, at.y]))
        .insert_resource(Bones(bones.clone()))
        .add_systems(Update, write_samples);
    let grounding = app
        .world_mut()
        .spawn((legs().with_source(IkGroundSource::Samples), IkStageOf(root)))
        .id();
    let hips0 = Vec3::from(POSITIONS[HIPS].1).y + at.y;
    for _ in 0..60 {
        app.update();
    }
    let s = status(&app, grounding);
    assert!(s.ready && s.solved, "{s:?}");
    let y = |b: usize| world_pos(&app, bones[b]).y;
    // The rest ankles are 8 cm above the floor (the toes on it): they keep that height.
    let rest_ankle = POSITIONS[L_FOOT].1[1];
    assert!(
        (y(L_FOOT) - (at.y - 0.1 + rest_ankle)).abs() < 1e-3,
        "left ankle {}",
        y(L_FOOT)
    );
    assert!(
        (y(R_FOOT) - (at.y + rest_ankle)).abs() < 1e-3,
        "right ankle {}",
        y(R_FOOT)
    );
    assert!(
        y(L_TOE) >= at.y - 0.1 - 1e-3,
        "left toe in the ground: {}",
        y(L_TOE)
    );
    // Lowered with the lower foot: 10 cm, and up to a quarter of the 5 %-of-leg blend more
    // where the straight rest leg's reach limit takes over smoothly.
    let lowered = hips0 - y(HIPS);
    assert!(
        (0.1 - 1e-3..0.1 + 0.0125).contains(&lowered),
        "pelvis lowered by {lowered}"
    );
    let state = app.world().get::<IkGroundingState>(grounding).unwrap();
    assert_eq!(state.feet.len(), 2);
    assert!(
        state.feet.iter().all(|f| f.grounded && f.planted),
        "{state:?}"
    );
    assert!((state.pelvis_offset.y + lowered).abs() < 1e-3, "{state:?}");

    // No ground: the feet go back to the animation (smoothly; a large frame time here).
    app.world_mut().resource_mut::<Heights>().0 = [f32::NAN, at.y];
    app.update();
    let s = status(&app, grounding);
    assert!(
        !s.solved || s.last_error.is_some(),
        "NaN samples are an error: {s:?}"
    );
    for &b in &bones {
        let t = app.world().get::<Transform>(b).unwrap();
        assert!(t.translation.is_finite() && t.rotation.is_finite());
    }
}

#[cfg(feature = "mesh-ground")]
#[test]
fn mesh_ray_casts_put_the_feet_on_a_slope_and_skip_the_character() {
    use bevy::asset::AssetPlugin;
    use bevy::mesh::{Mesh, Mesh3d, Meshable};

    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        TransformPlugin,
        AssetPlugin::default(),
        IkPlugin::default(),
    ))
    .init_asset::<Mesh>();
    fixed_step(&mut app);
    let at = Vec3::new(0.0, 0.0, 0.0);
    let (root, bones) = character(&mut app, at);
    // A 12° slope rising toward +Z through (0, 0.05, 0), and a big box on the character's
    // hips (not ground: never hit).
    let slope = Quat::from_rotation_x(-12f32.to_radians());
    let normal = slope * Vec3::Y;
    let plane = app
        .world_mut()
        .resource_mut::<Assets<Mesh>>()
        .add(Plane3d::default().mesh().size(6.0, 6.0));
    let cube = app
        .world_mut()
        .resource_mut::<Assets<Mesh>>()
        .add(Cuboid::new(2.0, 0.1, 2.0).mesh());
    app.world_mut().spawn((
        Mesh3d(plane),
        Transform::from_xyz(0.0, 0.05, 0.0).with_rotation(slope),
        IkGround,
    ));
    app.world_mut().spawn((
        Mesh3d(cube),
        Transform::from_xyz(0.0, -0.6, 0.0),
        ChildOf(bones[HIPS]),
    ));
    let grounding = app.world_mut().spawn((legs(), IkStageOf(root))).id();
    for _ in 0..60 {
        app.update();
    }
    let s = status(&app, grounding);
    assert!(s.ready && s.solved, "{s:?}");
    let rest_ankle = POSITIONS[L_FOOT].1[1];
    for foot in [L_FOOT, R_FOOT] {
        let p = world_pos(&app, bones[foot]);
        let height = (p - Vec3::new(0.0, 0.05, 0.0)).dot(normal);
        assert!(
            (height - rest_ankle).abs() < 2e-3,
            "foot {foot}: {height} above the slope (rest {rest_ankle})"
        );
    }
    let state = app.world().get::<IkGroundingState>(grounding).unwrap();
    for f in &state.feet {
        assert!(f.grounded, "{state:?}");
        assert!(f.normal.angle_between(normal) < 1e-3, "{state:?}");
    }
}
