//! Debug drawing (feature `debug-draw`) runs headless with Bevy's gizmo plugin for limbs,
//! generic rigs and full-body humanoids, and can be switched off.

#![cfg(feature = "debug-draw")]

use crate::common;

use bevy::asset::AssetPlugin;
use bevy::gizmos::GizmoPlugin;
use bevy::mesh::MeshPlugin;
use bevy::prelude::*;
use bevy_ik::prelude::*;
use common::*;

/// A headless app with Bevy's gizmos and the plugin.
fn gizmo_app() -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        TransformPlugin,
        AssetPlugin::default(),
        // Bevy 0.19's gizmos draw skinned-mesh bounds, which reads the mesh assets.
        MeshPlugin,
        GizmoPlugin,
        IkPlugin::default(),
    ));
    app
}

#[test]
fn gizmos_draw_every_kind_of_rig_without_disturbing_the_solve() {
    let mut app = gizmo_app();
    let arm = spawn_arm(app.world_mut(), Transform::default());
    let target = app
        .world_mut()
        .spawn(Transform::from_xyz(0.3, 1.3, 0.3))
        .id();
    let pole = app
        .world_mut()
        .spawn(Transform::from_xyz(0.0, 1.0, -1.0))
        .id();
    app.world_mut().spawn(
        IkLimb::new(arm.upper, arm.lower, arm.hand)
            .with_target(target)
            .with_pole(pole),
    );
    let character = app
        .world_mut()
        .spawn((Transform::from_xyz(3.0, 0.0, 0.0), IkHumanoid::auto()))
        .id();
    spawn_humanoid(app.world_mut(), character, &VRM_NAMES);
    for _ in 0..3 {
        app.update();
    }
    assert!(status(&app, character).solved);
    let d = world_pos(&app, arm.hand).distance(Vec3::new(0.3, 1.3, 0.3));
    assert!(d < 1e-4, "{d}");
    // Off until asked for: the plugin's default draws nothing.
    assert!(drawn_vertices(&app).is_none());
    app.insert_resource(IkDebugDraw::all());
    app.update();
    assert!(drawn_vertices(&app).is_some_and(|v| !v.is_empty()));
    assert!(status(&app, character).solved);
    let d = world_pos(&app, arm.hand).distance(Vec3::new(0.3, 1.3, 0.3));
    assert!(d < 1e-4, "with drawing on: {d}");
    app.world_mut().resource_mut::<IkDebugDraw>().enabled = false;
    app.update();
    assert!(drawn_vertices(&app).is_none());
}

/// The vertices (line-list and line-strip) of the default gizmo group drawn in the last frame;
/// `None` when nothing was drawn.
fn drawn_vertices(app: &App) -> Option<Vec<Vec3>> {
    use bevy::gizmos::{GizmoAsset, GizmoHandles, config::DefaultGizmoConfigGroup};
    use core::any::TypeId;
    let handles = app.world().resource::<GizmoHandles>();
    let handle = handles
        .handles()
        .get(&TypeId::of::<DefaultGizmoConfigGroup>())?
        .as_ref()?;
    let asset = app
        .world()
        .resource::<Assets<GizmoAsset>>()
        .get(handle.id())?;
    let view = asset.buffer().buffer();
    let mut out = view.list_positions.clone();
    out.extend(view.strip_positions.iter().filter(|p| p.is_finite()));
    Some(out)
}

/// Draws only what `pick` switches on (`enabled` stays on) and returns the vertices.
fn draw_with(app: &mut App, pick: impl Fn(&mut IkDebugDraw)) -> Vec<Vec3> {
    let mut settings = IkDebugDraw {
        enabled: true,
        chains: false,
        targets: false,
        poles: false,
        limits: false,
        residuals: false,
        center_of_mass: false,
        ..IkDebugDraw::default()
    };
    pick(&mut settings);
    app.insert_resource(settings);
    app.update();
    drawn_vertices(app).unwrap_or_default()
}

fn near_any(p: Vec3, points: &[Vec3], within: f32) -> bool {
    points.iter().any(|q| q.distance(p) <= within)
}

#[test]
fn full_body_humanoid_draws_chains_targets_residuals_limits_and_balance() {
    let mut app = gizmo_app();
    let character = app
        .world_mut()
        .spawn((
            Transform::from_xyz(1.0, 0.0, -0.5).with_rotation(Quat::from_rotation_y(0.4)),
            IkHumanoid::auto(),
        ))
        .id();
    let bones = spawn_humanoid(app.world_mut(), character, &VRM_NAMES);
    for _ in 0..2 {
        app.update();
    }
    assert!(status(&app, character).solved);
    let joints: Vec<Vec3> = bones.iter().map(|&b| world_pos(&app, b)).collect();
    let targets = app
        .world()
        .get::<IkHumanoidTargets>(character)
        .unwrap()
        .clone();
    let target_points: Vec<Vec3> = [
        targets.left_hand,
        targets.right_hand,
        targets.left_foot,
        targets.right_foot,
        targets.pelvis,
    ]
    .into_iter()
    .map(|t| world_pos(&app, t.unwrap()))
    .collect();

    // Chains: bone-to-bone lines, every vertex on a joint.
    let chains = draw_with(&mut app, |s| s.chains = true);
    assert!(chains.len() >= 2 * 16, "{} chain vertices", chains.len());
    assert!(chains.iter().all(|&p| near_any(p, &joints, 1e-4)));
    // Both arms, both legs and the spine are drawn: the hands, feet and head are line ends.
    for i in [4, 8, 12, 15, 19] {
        assert!(near_any(joints[i], &chains, 1e-4), "bone {i} not drawn");
    }

    // Targets: spheres around each target.
    let spheres = draw_with(&mut app, |s| s.targets = true);
    let r = IkDebugDraw::default().target_radius;
    for t in &target_points {
        assert!(
            spheres.iter().any(|p| (p.distance(*t) - r).abs() < 1e-3),
            "no sphere at {t}"
        );
    }

    // Residual lines: move a hand target out of reach; a line joins the hand and its target.
    let far = world_pos(&app, targets.left_hand.unwrap()) + Vec3::new(3.0, 0.0, 0.0);
    let parent = *app.world().get::<GlobalTransform>(character).unwrap();
    let local = GlobalTransform::from_translation(far).reparented_to(&parent);
    app.world_mut()
        .get_mut::<Transform>(targets.left_hand.unwrap())
        .unwrap()
        .translation = local.translation;
    let residuals = draw_with(&mut app, |s| s.residuals = true);
    assert!(near_any(far, &residuals, 1e-4), "no residual line to {far}");
    assert!(near_any(world_pos(&app, bones[8]), &residuals, 1e-4));

    // Limit cones: around the shoulders and hips, within the cone length of the joint.
    let limits = draw_with(&mut app, |s| s.limits = true);
    let len = IkDebugDraw::default().cone_length;
    let joints: Vec<Vec3> = bones.iter().map(|&b| world_pos(&app, b)).collect();
    for i in [6, 10, 13, 17] {
        let around = limits
            .iter()
            .filter(|p| {
                let d = p.distance(joints[i]);
                d > 0.5 * len && d < len + 1e-4
            })
            .count();
        assert!(around >= 8, "bone {i}: {around} cone vertices");
    }

    // Balance: nothing until it is on, then the centre of mass and the support point.
    assert!(draw_with(&mut app, |s| s.center_of_mass = true).is_empty());
    app.world_mut()
        .get_mut::<IkHumanoid>(character)
        .unwrap()
        .balance = IkBalance::on();
    app.update();
    let balance = draw_with(&mut app, |s| s.center_of_mass = true);
    let com = *app.world().get::<IkCenterOfMass>(character).unwrap();
    assert!(com.active);
    let support = parent.transform_point(com.support);
    let center = parent.transform_point(com.center_of_mass);
    assert!(near_any(support, &balance, 0.05), "support {support}");
    assert!(near_any(center, &balance, 0.05), "centre of mass {center}");
    // The support point is midway between the feet targets.
    let mid = (target_points[2] + target_points[3]) * 0.5;
    assert!(support.distance(mid) < 1e-4, "{support} vs {mid}");

    // Everything on draws more than any one part; switched off, nothing at all.
    let all = draw_with(&mut app, |s| *s = IkDebugDraw::all());
    assert!(all.len() > chains.len() + limits.len());
    app.world_mut().resource_mut::<IkDebugDraw>().enabled = false;
    app.update();
    assert!(drawn_vertices(&app).is_none());
}
