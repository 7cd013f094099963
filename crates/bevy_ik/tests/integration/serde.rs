//! Settings can be inspected, saved and loaded: the components round-trip through serde (RON)
//! and are registered for reflection with their `Component`, `Default` and `Serialize` data.
#![cfg(feature = "serialize")]

use core::any::TypeId;

use bevy::prelude::*;
use bevy::reflect::{ReflectDeserialize, ReflectSerialize};
use bevy_ik::prelude::*;

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    let text = ron::to_string(value).expect("serializes");
    ron::from_str(&text).unwrap_or_else(|e| panic!("does not deserialize: {e}\n{text}"))
}

#[test]
fn limb_settings_round_trip() {
    let mut world = World::new();
    let (target, pole) = (world.spawn_empty().id(), world.spawn_empty().id());
    let limb = IkLimb::new(
        "mixamorig:LeftArm",
        "mixamorig:LeftForeArm",
        "mixamorig:LeftHand",
    )
    .with_target(target)
    .with_pole(pole)
    .with_weight(0.25)
    .with_rotation_weight(0.5)
    .with_flex_limits(0.1, 2.5)
    .with_soft_reach(0.9)
    .with_bend_axis(Vec3::X);
    let back = round_trip(&limb);
    assert_eq!(back, limb);
    assert_ne!(
        back,
        IkLimb::new("a", "b", "c"),
        "the comparison must see the settings"
    );
}

#[test]
fn humanoid_and_rig_settings_round_trip() {
    let mut humanoid = IkHumanoid::limbs().with_balance(IkBalance::on());
    humanoid.weight = 0.75;
    humanoid.head = false;
    humanoid.full_body_settings.max_iterations = 7;
    assert_eq!(round_trip(&humanoid), humanoid);

    let mut world = World::new();
    let target = world.spawn_empty().id();
    // A grip on the other hand, and one on an entity.
    let gripping =
        IkHumanoid::auto().with_grip(IkGrip::left_on_right(Transform::from_xyz(0.1, 0.2, 0.3)));
    assert_eq!(round_trip(&gripping), gripping);
    let on_prop = IkHumanoid::auto().with_grip(IkGrip::on_entity(
        IkGripHand::Right,
        target,
        Transform::from_rotation(Quat::from_rotation_y(0.5)),
    ));
    assert_eq!(round_trip(&on_prop), on_prop);
    let rig = IkRig::new([
        IkGoal::pose("mixamorig:LeftHand", target)
            .with_priority(2)
            .with_weight(0.5)
            .with_blend(0.3),
        IkGoal::look_at("mixamorig:Head", Vec3::Z, target),
    ])
    .with_movable_root("mixamorig:Hips")
    .with_limits(IkJointLimits::Humanoid);
    assert_eq!(round_trip(&rig), rig);
}

#[test]
fn components_are_registered_for_reflection() {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin, IkPlugin::default()));
    let registry = app.world().resource::<AppTypeRegistry>().read();
    for (name, id) in [
        ("IkLimb", TypeId::of::<IkLimb>()),
        ("IkHumanoid", TypeId::of::<IkHumanoid>()),
        ("IkRig", TypeId::of::<IkRig>()),
        ("IkStatus", TypeId::of::<IkStatus>()),
        ("IkDisabled", TypeId::of::<IkDisabled>()),
    ] {
        let registration = registry
            .get(id)
            .unwrap_or_else(|| panic!("{name} is not registered"));
        assert!(
            registration.data::<ReflectComponent>().is_some(),
            "{name}: no ReflectComponent"
        );
        assert!(
            registration.data::<ReflectDefault>().is_some(),
            "{name}: no ReflectDefault"
        );
        assert!(
            registration.data::<ReflectSerialize>().is_some()
                && registration.data::<ReflectDeserialize>().is_some(),
            "{name}: no serde reflection data"
        );
    }
}

/// A spring collider saved in a scene while its shape was a reflected mirror enum loads into the
/// component that now embeds ik-core's `ColliderShape` (reflected as one opaque value, read and
/// written through serde: the same text), found at its old type path.
#[test]
fn spring_collider_loads_the_text_a_scene_saved() {
    use bevy::reflect::serde::{TypedReflectDeserializer, TypedReflectSerializer};
    use serde::de::DeserializeSeed;

    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin, IkPlugin::default()));
    let registry = app.world().resource::<AppTypeRegistry>().read();
    let registration = registry
        .get_with_type_path("bevy_ik::secondary::IkSpringCollider")
        .expect("registered at its type path");
    assert!(registration.data::<ReflectComponent>().is_some());
    // The struct, its shape as an enum's struct variant, each Vec3 as glam's tuple.
    let saved = "(shape: Capsule(offset: (0.0, 0.1, 0.0), tail: (0.0, 0.5, 0.0), radius: 0.05))";
    let expected = IkSpringCollider {
        shape: IkColliderShape::Capsule {
            offset: Vec3::new(0.0, 0.1, 0.0),
            tail: Vec3::new(0.0, 0.5, 0.0),
            radius: 0.05,
        },
    };
    let mut de = ron::Deserializer::from_str(saved).expect("ron");
    let value = TypedReflectDeserializer::new(registration, &registry)
        .deserialize(&mut de)
        .unwrap_or_else(|e| panic!("the saved text does not load: {e}"));
    let loaded = value
        .try_downcast_ref::<IkSpringCollider>()
        .copied()
        .expect("an IkSpringCollider");
    assert_eq!(loaded, expected);
    // Written back through reflection: the same text, but for white space.
    let written = ron::to_string(&TypedReflectSerializer::new(&loaded, &registry)).expect("ron");
    assert_eq!(
        written,
        saved.replace(' ', ""),
        "a scene saved now reads as before"
    );
}
