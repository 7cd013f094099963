//! A character spawned from a `WorldAssetRoot` (as glTF characters are): it appears asynchronously,
//! and `IkHumanoid` inserted together with the `WorldAssetRoot` finishes set-up once the scene
//! instance is ready.

#![cfg(feature = "scene")]

use crate::common;

use bevy::asset::AssetPlugin;
use bevy::prelude::*;
use bevy::transform::components::TransformTreeChanged;
use bevy::world_serialization::{WorldAsset, WorldAssetRoot, WorldSerializationPlugin};
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;
use common::*;

#[test]
fn humanoid_on_scene_root_is_set_up_when_the_scene_is_ready() {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        TransformPlugin,
        AssetPlugin::default(),
        WorldSerializationPlugin,
        IkPlugin::default(),
    ));
    // Without Bevy's `reflect_auto_register` feature, scene components must be registered.
    app.register_type::<Transform>()
        .register_type::<GlobalTransform>()
        .register_type::<TransformTreeChanged>()
        .register_type::<Name>()
        .register_type::<ChildOf>()
        .register_type::<Children>();
    // The "glTF" scene: a humanoid skeleton under a scene-local root.
    let mut scene_world = World::new();
    let armature = scene_world
        .spawn((Name::new("Armature"), Transform::default()))
        .id();
    spawn_humanoid(&mut scene_world, armature, &VRM_NAMES);
    let scene = app
        .world_mut()
        .resource_mut::<Assets<WorldAsset>>()
        .add(WorldAsset::new(scene_world));
    let character = app
        .world_mut()
        .spawn((
            WorldAssetRoot(scene),
            Transform::from_xyz(1.0, 0.0, 2.0),
            IkHumanoid::limbs(),
        ))
        .id();
    app.update();
    let mut frames = 1;
    while app.world().get::<IkHumanoidTargets>(character).is_none() && frames < 10 {
        app.update();
        frames += 1;
    }
    let s = status(&app, character);
    assert!(s.ready, "set up after {frames} frames: {s:?}");
    let targets = app
        .world()
        .get::<IkHumanoidTargets>(character)
        .expect("targets spawned")
        .clone();
    let hand = app
        .world()
        .get::<IkHumanoidBones>(character)
        .unwrap()
        .get(HumanoidBone::LeftHand)
        .unwrap();
    assert_eq!(
        app.world().get::<Name>(hand).map(Name::as_str),
        Some("leftHand")
    );
    // Drive the left hand through its target.
    let target = targets.left_hand.unwrap();
    app.update();
    // Toward the body, down and forward: within reach of the (straight, T-pose) arm.
    let goal_world = world_pos(&app, target) + Vec3::new(-0.15, -0.25, 0.2);
    let parent = *app.world().get::<GlobalTransform>(character).unwrap();
    let local = GlobalTransform::from_translation(goal_world).reparented_to(&parent);
    app.world_mut()
        .get_mut::<Transform>(target)
        .unwrap()
        .translation = local.translation;
    app.update();
    let d = world_pos(&app, hand).distance(goal_world);
    assert!(d < 1e-4, "hand {d} from its target");
}
