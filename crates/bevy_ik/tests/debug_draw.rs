//! Debug drawing (feature `debug-draw`) runs headless with Bevy's gizmo plugin for limbs,
//! generic rigs and full-body humanoids, and can be switched off.

#![cfg(feature = "debug-draw")]

mod common;

use bevy::asset::AssetPlugin;
use bevy::gizmos::GizmoPlugin;
use bevy::prelude::*;
use bevy_ik::prelude::*;
use common::*;

#[test]
fn gizmos_draw_every_kind_of_rig_without_disturbing_the_solve() {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        TransformPlugin,
        AssetPlugin::default(),
        GizmoPlugin,
        IkPlugin::default(),
    ));
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
    app.world_mut().resource_mut::<IkDebugDraw>().enabled = false;
    app.update();
}
