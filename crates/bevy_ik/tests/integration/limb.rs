//! Analytic limbs in a headless app: the tip reaches a target moved this frame, the IK/FK
//! blend weight, and robustness (despawned / NaN targets, missing and zero-length bones).

use crate::common;

use bevy::app::AnimationSystems;
use bevy::prelude::*;
use bevy_ik::ik_core::StackError;
use bevy_ik::prelude::*;
use common::*;

fn spawn_target(app: &mut App, at: Vec3) -> Entity {
    app.world_mut().spawn(Transform::from_translation(at)).id()
}

#[test]
fn tip_reaches_target_moved_this_frame() {
    let mut app = app();
    let arm = spawn_arm(
        app.world_mut(),
        Transform::from_xyz(1.0, 0.5, -2.0).with_rotation(Quat::from_rotation_y(0.7)),
    );
    // The target is the child of a handle: moving the handle moves the target, and the
    // plugin must see that this very frame (no one-frame lag through GlobalTransform).
    let handle = app.world_mut().spawn(Transform::default()).id();
    let target = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 0.0), ChildOf(handle)))
        .id();
    let pole = app
        .world_mut()
        .spawn(Transform::from_xyz(0.0, 0.0, 5.0))
        .id();
    app.world_mut().spawn(
        IkLimb::new(arm.upper, arm.lower, arm.hand)
            .with_target(target)
            .with_pole(pole),
    );
    app.update();
    let rest_hand = world_pos(&app, arm.hand);
    let lengths = (
        world_pos(&app, arm.upper).distance(world_pos(&app, arm.lower)),
        world_pos(&app, arm.lower).distance(world_pos(&app, arm.hand)),
    );

    for (i, dir) in [
        Vec3::new(1.0, -1.0, 0.3),
        Vec3::new(-0.2, 0.5, 1.0),
        Vec3::NEG_Y,
    ]
    .into_iter()
    .enumerate()
    {
        let goal = reachable_point(&app, &arm, dir, 0.6 + 0.1 * i as f32);
        app.world_mut()
            .get_mut::<Transform>(handle)
            .unwrap()
            .translation = goal;
        app.update();
        let tip = world_pos(&app, arm.hand);
        assert!(
            tip.distance(goal) < 1e-4,
            "goal {i}: tip {tip} is {} from target {goal}",
            tip.distance(goal)
        );
        assert!(tip.distance(rest_hand) > 1e-2, "the arm did move");
        // Bone lengths unchanged.
        let l0 = world_pos(&app, arm.upper).distance(world_pos(&app, arm.lower));
        let l1 = world_pos(&app, arm.lower).distance(world_pos(&app, arm.hand));
        assert!((l0 - lengths.0).abs() < 1e-5 && (l1 - lengths.1).abs() < 1e-5);
        let holder = target_holder(&mut app);
        let s = status(&app, holder);
        assert!(s.ready && s.solved && s.converged, "{s:?}");
        assert!(s.position_residual < 1e-4);
    }
}

/// The entity holding the only `IkLimb` in the world.
fn target_holder(app: &mut App) -> Entity {
    let mut q = app.world_mut().query_filtered::<Entity, With<IkLimb>>();
    q.single(app.world()).unwrap()
}

/// Rotations an "animation" writes every frame (in `AnimationSystems`, as `bevy_animation` does).
#[derive(Component, Clone, Copy)]
struct Animated(Quat);

fn animate(mut bones: Query<(&Animated, &mut Transform)>) {
    for (a, mut t) in &mut bones {
        t.rotation = a.0;
    }
}

fn animated_arm(app: &mut App, root: Transform, target_offset: Vec3) -> (Arm, Entity) {
    let arm = spawn_arm(app.world_mut(), root);
    let anim_upper = rest_upper().rotation * Quat::from_rotation_x(0.4);
    let anim_lower = rest_lower().rotation * Quat::from_rotation_z(-0.5);
    app.world_mut()
        .entity_mut(arm.upper)
        .insert(Animated(anim_upper));
    app.world_mut()
        .entity_mut(arm.lower)
        .insert(Animated(anim_lower));
    let target = app
        .world_mut()
        .spawn((
            Transform::from_translation(target_offset),
            ChildOf(arm.character),
        ))
        .id();
    (arm, target)
}

#[test]
fn weight_blends_solved_and_animated_pose() {
    let mut app = app();
    app.add_systems(PostUpdate, animate.in_set(AnimationSystems));
    let offset = Vec3::new(0.3, 1.2, 0.25);
    let mut arms = Vec::new();
    for (i, weight) in [1.0, 0.5, 0.0].into_iter().enumerate() {
        let root = Transform::from_xyz(3.0 * i as f32, 0.0, 0.0);
        let (arm, target) = animated_arm(&mut app, root, offset);
        let limb = app
            .world_mut()
            .spawn(
                IkLimb::new(arm.upper, arm.lower, arm.hand)
                    .with_target(target)
                    .with_weight(weight),
            )
            .id();
        arms.push((arm, target, limb));
    }
    for _ in 0..3 {
        app.update();
    }
    let rot = |e: Entity| app.world().get::<Transform>(e).unwrap().rotation;
    let anim = |e: Entity| app.world().get::<Animated>(e).unwrap().0;
    let (full, full_target, _) = arms[0];
    // Weight 1: the target is reached although the animation wrote other rotations.
    assert!(world_pos(&app, full.hand).distance(world_pos(&app, full_target)) < 1e-4);
    assert!(rot(full.upper).angle_between(anim(full.upper)) > 1e-2);
    // Weight 0: the animated rotations are untouched.
    let (none, none_target, none_limb) = arms[2];
    assert_eq!(rot(none.upper), anim(none.upper));
    assert_eq!(rot(none.lower), anim(none.lower));
    assert!(world_pos(&app, none.hand).distance(world_pos(&app, none_target)) > 1e-2);
    // Faded out: not solved at all (nothing to blend), and the status says so.
    assert!(!status(&app, none_limb).solved);
    assert!(status(&app, none_limb).ready);
    // Weight 0.5: halfway (slerp) between the animated and the fully solved rotations.
    let (half, _, _) = arms[1];
    for (h, f) in [(half.upper, full.upper), (half.lower, full.lower)] {
        let expected = anim(h).slerp(rot(f), 0.5);
        // Compare rotated axes (`angle_between` is acos-limited to ~7e-4 rad near zero).
        let err = [Vec3::X, Vec3::Y, Vec3::Z]
            .map(|v| (rot(h) * v).distance(expected * v))
            .into_iter()
            .fold(0.0, f32::max);
        assert!(err < 1e-5, "bone {h}: {err} from the halfway pose");
        assert!(rot(h).angle_between(anim(h)) > 1e-2, "bone {h} moved");
    }
}

#[test]
fn broken_characters_keep_animated_pose_and_others_still_solve() {
    let mut app = app();
    app.add_systems(PostUpdate, animate.in_set(AnimationSystems));
    let offset = Vec3::new(0.3, 1.2, 0.25);
    let (good, good_target) = animated_arm(&mut app, Transform::default(), offset);
    let good_limb = app
        .world_mut()
        .spawn(IkLimb::new(good.upper, good.lower, good.hand).with_target(good_target))
        .id();
    let (gone, gone_target) = animated_arm(&mut app, Transform::from_xyz(3.0, 0.0, 0.0), offset);
    let gone_limb = app
        .world_mut()
        .spawn(IkLimb::new(gone.upper, gone.lower, gone.hand).with_target(gone_target))
        .id();
    let (nan, nan_target) = animated_arm(&mut app, Transform::from_xyz(6.0, 0.0, 0.0), offset);
    let nan_limb = app
        .world_mut()
        .spawn(IkLimb::new(nan.upper, nan.lower, nan.hand).with_target(nan_target))
        .id();
    let (named, named_target) = animated_arm(&mut app, Transform::from_xyz(9.0, 0.0, 0.0), offset);
    let missing_limb = app
        .world_mut()
        .spawn(
            IkLimb::new("upper", "no_such_bone", "hand")
                .in_hierarchy(named.character)
                .with_target(named_target),
        )
        .id();
    app.update();
    assert!(status(&app, gone_limb).solved);

    app.world_mut().despawn(gone_target);
    app.world_mut()
        .get_mut::<Transform>(nan_target)
        .unwrap()
        .translation
        .x = f32::NAN;
    let anim = |app: &App, e: Entity| app.world().get::<Animated>(e).unwrap().0;
    for _ in 0..3 {
        app.update();
        let rot = |e: Entity| app.world().get::<Transform>(e).unwrap().rotation;
        for arm in [gone, nan, named] {
            assert_eq!(rot(arm.upper), anim(&app, arm.upper));
            assert_eq!(rot(arm.lower), anim(&app, arm.lower));
        }
        assert!(world_pos(&app, good.hand).distance(world_pos(&app, good_target)) < 1e-4);
        assert!(status(&app, good_limb).solved);
    }
    let s = status(&app, gone_limb);
    assert!(
        !s.solved && s.last_error == Some(IkError::MissingTarget(gone_target)),
        "{s:?}"
    );
    let s = status(&app, nan_limb);
    assert!(
        !s.solved && s.last_error == Some(IkError::NonFiniteTarget(nan_target)),
        "{s:?}"
    );
    let s = status(&app, missing_limb);
    assert!(
        !s.ready && s.last_error == Some(IkError::MissingBone("no_such_bone".into())),
        "{s:?}"
    );
    for arm in [gone, nan, named] {
        let h = world_pos(&app, arm.hand);
        assert!(h.is_finite());
    }

    // A target that becomes valid again is followed again.
    app.world_mut()
        .get_mut::<Transform>(nan_target)
        .unwrap()
        .translation = offset;
    app.update();
    let s = status(&app, nan_limb);
    assert!(s.solved && s.last_error.is_none(), "{s:?}");
    assert!(world_pos(&app, nan.hand).distance(world_pos(&app, nan_target)) < 1e-4);
}

#[test]
fn zero_length_bone_is_reported_not_solved() {
    let mut app = app();
    let root = app.world_mut().spawn(Transform::default()).id();
    let upper = app
        .world_mut()
        .spawn((Transform::default(), ChildOf(root)))
        .id();
    // `lower` sits exactly on `upper`'s origin: the upper bone has zero length.
    let lower = app
        .world_mut()
        .spawn((Transform::default(), ChildOf(upper)))
        .id();
    let hand = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 0.3), ChildOf(lower)))
        .id();
    let target = spawn_target(&mut app, Vec3::new(0.1, 0.1, 0.1));
    let limb = app
        .world_mut()
        .spawn(IkLimb::new(upper, lower, hand).with_target(target))
        .id();
    app.update();
    app.update();
    let s = status(&app, limb);
    assert!(!s.solved, "{s:?}");
    // The core's error comes through typed (the analytic limb's zero-length bone), not as a
    // message.
    assert!(
        matches!(
            &s.last_error,
            Some(IkError::InvalidChain(e)) if matches!(
                e.get(),
                StackError::Analytic(_) | StackError::Skeleton(_)
            )
        ),
        "{s:?}"
    );
    assert_eq!(
        app.world().get::<Transform>(upper).unwrap().rotation,
        Quat::IDENTITY
    );
}

#[test]
fn bones_found_by_name_once_they_appear() {
    let mut app = app();
    let character = app.world_mut().spawn(Transform::default()).id();
    let target = spawn_target(&mut app, Vec3::ZERO);
    let limb = app
        .world_mut()
        .spawn(
            IkLimb::new("upper", "lower", "hand")
                .in_hierarchy(character)
                .with_target(target),
        )
        .id();
    app.update();
    assert_eq!(
        status(&app, limb).last_error,
        Some(IkError::MissingBone("upper".into()))
    );
    // The bones appear later, as a glTF scene's do.
    let arm = spawn_arm(app.world_mut(), Transform::from_xyz(0.5, 0.0, 0.0));
    app.world_mut()
        .entity_mut(arm.character)
        .insert(ChildOf(character));
    app.update();
    let goal = reachable_point(&app, &arm, Vec3::new(0.3, -1.0, 0.2), 0.75);
    app.world_mut()
        .get_mut::<Transform>(target)
        .unwrap()
        .translation = goal;
    app.update();
    let s = status(&app, limb);
    assert!(s.ready && s.solved, "{s:?}");
    assert!(world_pos(&app, arm.hand).distance(goal) < 1e-4);
}

#[test]
fn disabled_limb_is_left_alone() {
    let mut app = app();
    let arm = spawn_arm(app.world_mut(), Transform::default());
    let target = spawn_target(&mut app, Vec3::new(0.5, 1.0, 0.5));
    let limb = app
        .world_mut()
        .spawn((
            IkLimb::new(arm.upper, arm.lower, arm.hand).with_target(target),
            IkDisabled,
        ))
        .id();
    app.update();
    assert_eq!(
        app.world().get::<Transform>(arm.upper).unwrap().rotation,
        rest_upper().rotation
    );
    app.world_mut().entity_mut(limb).remove::<IkDisabled>();
    app.update();
    assert!(status(&app, limb).solved);
}

/// A clip that keys only a bone's translation (a body bob, as the CC0 robot's `Idle` keys its
/// body) leaves in the rotation what the plugin wrote: that rotation is not input. Switched
/// off, the bone gets its own rotation back with the animated translation — before, the
/// last IK rotation was read back as input and stayed.
#[test]
fn a_translation_only_clip_does_not_make_the_ik_rotation_input() {
    let mut app = app();
    let arm = spawn_arm(app.world_mut(), Transform::default());
    let target = spawn_target(&mut app, Vec3::new(0.5, 1.0, 0.5));
    let limb = app
        .world_mut()
        .spawn(IkLimb::new(arm.upper, arm.lower, arm.hand).with_target(target))
        .id();
    let bob = |frame: u32| rest_upper().translation + Vec3::Y * (0.01 * frame as f32);
    let mut solved = Quat::IDENTITY;
    for frame in 0..5 {
        // The "animation" keys the upper arm's translation only, every frame.
        app.world_mut()
            .get_mut::<Transform>(arm.upper)
            .unwrap()
            .translation = bob(frame);
        app.update();
        solved = app.world().get::<Transform>(arm.upper).unwrap().rotation;
        assert!(status(&app, limb).solved);
    }
    assert!(
        solved.angle_between(rest_upper().rotation) > 0.1,
        "the limb turned the upper arm"
    );
    app.world_mut().entity_mut(limb).insert(IkDisabled);
    app.world_mut()
        .get_mut::<Transform>(arm.upper)
        .unwrap()
        .translation = bob(5);
    app.update();
    let upper = *app.world().get::<Transform>(arm.upper).unwrap();
    assert_eq!(
        upper.rotation,
        rest_upper().rotation,
        "the rotation the plugin wrote is not input"
    );
    assert_eq!(upper.translation, bob(5), "the animated translation stays");
}

/// Switching a limb off gives its bones their input back once, then the plugin leaves the
/// character alone (no write, no change tick) until it is switched on again.
#[test]
fn a_disabled_limb_is_restored_once_then_costs_nothing() {
    let mut app = app();
    let arm = spawn_arm(app.world_mut(), Transform::default());
    let target = spawn_target(&mut app, Vec3::new(0.5, 1.0, 0.5));
    let limb = app
        .world_mut()
        .spawn(IkLimb::new(arm.upper, arm.lower, arm.hand).with_target(target))
        .id();
    app.update();
    let rot = |app: &App, e: Entity| app.world().get::<Transform>(e).unwrap().rotation;
    assert_ne!(
        rot(&app, arm.upper),
        rest_upper().rotation,
        "the limb solved"
    );
    app.world_mut().entity_mut(limb).insert(IkDisabled);
    app.update();
    assert_eq!(
        rot(&app, arm.upper),
        rest_upper().rotation,
        "input given back"
    );
    assert_eq!(
        rot(&app, arm.lower),
        rest_lower().rotation,
        "input given back"
    );
    app.update();
    let ticks = |app: &App| {
        (
            app.world()
                .entity(arm.upper)
                .get_ref::<Transform>()
                .unwrap()
                .last_changed(),
            app.world()
                .entity(limb)
                .get_ref::<IkCharacter>()
                .unwrap()
                .last_changed(),
        )
    };
    let before = ticks(&app);
    // Animation moves the bone while IK is off: it stays as animated.
    let animated = Quat::from_rotation_z(0.3) * rest_upper().rotation;
    app.update();
    assert_eq!(ticks(&app), before, "nothing written while off");
    app.world_mut()
        .get_mut::<Transform>(arm.upper)
        .unwrap()
        .rotation = animated;
    app.update();
    assert_eq!(rot(&app, arm.upper), animated);
    app.world_mut().entity_mut(limb).remove::<IkDisabled>();
    app.update();
    assert!(status(&app, limb).solved);
    assert_ne!(rot(&app, arm.upper), animated, "solving again");
}

#[test]
fn rest_axes_and_bone_indices_are_read_from_the_character() {
    let mut app = app();
    let arm = spawn_arm(app.world_mut(), Transform::default());
    let target = spawn_target(&mut app, Vec3::new(0.3, 1.3, 0.3));
    app.world_mut()
        .entity_mut(arm.character)
        .insert(IkLimb::new(arm.upper, arm.lower, arm.hand).with_target(target));
    app.update();
    let ch = app.world().get::<IkCharacter>(arm.character).unwrap();
    let upper = ch.bone_index(arm.upper).expect("a bone of the character");
    assert_eq!(ch.bones()[upper], arm.upper);
    assert_eq!(ch.bone_index(target), None);
    // The upper arm points at the elbow: measured in the world, brought into its local frame.
    let g = |e| *app.world().get::<GlobalTransform>(e).unwrap();
    let (u, l) = (g(arm.upper), g(arm.lower));
    let want = (u.rotation().inverse() * (l.translation() - u.translation())).normalize();
    let axis = ch.rest_axis(arm.upper).expect("one child");
    assert!(axis.distance(want) < 1e-5, "{axis} vs {want}");
    assert!(ch.rest_axis_toward(arm.upper, arm.hand).is_some());
    assert_eq!(ch.rest_axis(arm.hand), None, "no child bone");
    assert_eq!(ch.rest_axis_toward(arm.hand, arm.upper), None);
}
