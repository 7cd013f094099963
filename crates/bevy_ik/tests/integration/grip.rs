//! `IkGrip` on an `IkHumanoid`: the left hand held relative to the right hand (a two-handed
//! prop) or to a prop entity in the right hand follows the right hand in the same frame while
//! the right hand's target moves along a circle: within 1 mm and 1°, every frame, measured on
//! the bones' `GlobalTransform`s.

use crate::common;

use bevy::prelude::*;
use bevy_ik::prelude::*;
use common::*;

/// Indices in `POSITIONS` order.
const LEFT_HAND: usize = 8;
const RIGHT_HAND: usize = 12;

fn global(app: &App, e: Entity) -> GlobalTransform {
    *app.world().get::<GlobalTransform>(e).unwrap()
}

/// Moves a target (a child of the character) to the world position `p`.
fn move_target(app: &mut App, character: Entity, target: Entity, p: Vec3) {
    let parent = global(app, character);
    let local = GlobalTransform::from_translation(p).reparented_to(&parent);
    app.world_mut()
        .get_mut::<Transform>(target)
        .unwrap()
        .translation = local.translation;
}

/// A rifle in the right hand: a child of the hand bone, 10 cm along the hand's X.
const PROP_LOCAL: Transform = Transform::from_xyz(0.1, 0.0, 0.0);

/// Holds both hands in front of the chest, then sets the grip made by `grip` (from the prop
/// entity and the left hand's settled transform in the right hand's frame) and runs the right
/// hand along a path; returns the worst grip error (m, degrees) and how far the right hand
/// moved in all.
fn hold_while_moving(grip: impl Fn(Entity, Transform) -> IkGrip) -> ((f32, f32), f32) {
    let mut app = app();
    let character = app
        .world_mut()
        .spawn((Transform::from_xyz(0.3, 0.0, -0.2), IkHumanoid::auto()))
        .id();
    let bones = spawn_humanoid(app.world_mut(), character, &MIXAMO_NAMES);
    let prop = app
        .world_mut()
        .spawn((PROP_LOCAL, ChildOf(bones[RIGHT_HAND])))
        .id();
    app.update();
    let targets = app
        .world()
        .get::<IkHumanoidTargets>(character)
        .unwrap()
        .clone();
    let (right_target, left_target) = (targets.right_hand.unwrap(), targets.left_hand.unwrap());
    // Both hands a little lower and forward (a long pole held at arm's length, the hands
    // keeping their rest rotations); settle there without a grip.
    let lower = Vec3::new(0.0, -0.1, 0.12);
    let start = global(&app, right_target).translation() + lower;
    move_target(&mut app, character, right_target, start);
    let left_start = global(&app, left_target).translation() + lower;
    move_target(&mut app, character, left_target, left_start);
    for _ in 0..20 {
        app.update();
    }
    // The grip is where the left hand now is, in the right hand's frame (feasible by
    // construction: measured on the solved pose).
    let offset = global(&app, bones[RIGHT_HAND]).affine().inverse()
        * global(&app, bones[LEFT_HAND]).affine();
    let offset = Transform::from_matrix(offset.into());
    app.world_mut()
        .get_mut::<IkHumanoid>(character)
        .unwrap()
        .grip = Some(grip(prop, offset));
    app.update();
    let (mut worst, mut travel) = ((0.0f32, 0.0f32), 0.0f32);
    let mut last = global(&app, bones[RIGHT_HAND]).translation();
    for f in 0..60 {
        let t = f as f32 / 60.0 * std::f32::consts::TAU;
        let p = start + Vec3::new(0.0, 0.04 * (1.0 - t.cos()), 0.04 * t.sin());
        move_target(&mut app, character, right_target, p);
        app.update();
        let s = status(&app, character);
        assert!(s.last_error.is_none(), "frame {f}: {s:?}");
        let right = global(&app, bones[RIGHT_HAND]);
        // Whatever the anchor, the grip puts the left hand at `offset` in the right hand's
        // frame (the prop is rigid in the hand).
        let want = right.mul_transform(offset);
        let left = global(&app, bones[LEFT_HAND]);
        // Same frame, no lag: the grip holds every frame the right hand moved.
        let (d, a) = (
            left.translation().distance(want.translation()),
            left.rotation().angle_between(want.rotation()).to_degrees(),
        );
        worst.0 = worst.0.max(d);
        worst.1 = worst.1.max(a);
        travel += right.translation().distance(last);
        last = right.translation();
        assert!(
            right.translation().distance(p) < 1e-3,
            "frame {f}: the right hand follows its target"
        );
    }
    (worst, travel)
}

#[test]
fn left_hand_grip_on_the_right_hand_follows_it_in_the_same_frame() {
    let (worst, travel) = hold_while_moving(|_, offset| IkGrip::left_on_right(offset));
    assert!(travel > 0.2, "the right hand moved {travel} m");
    assert!(
        worst.0 <= 1e-3 && worst.1 <= 1.0,
        "grip error {worst:?} (m, °)"
    );
}

#[test]
fn left_hand_grip_on_a_prop_in_the_right_hand_follows_it() {
    let (worst, travel) = hold_while_moving(|prop, offset| {
        // The same grip, expressed in the prop's frame.
        let in_prop = Transform::from_matrix(PROP_LOCAL.to_matrix().inverse() * offset.to_matrix());
        IkGrip::on_entity(IkGripHand::Left, prop, in_prop)
    });
    assert!(travel > 0.2, "the right hand moved {travel} m");
    assert!(
        worst.0 <= 1e-3 && worst.1 <= 1.0,
        "grip error {worst:?} (m, °)"
    );
}
