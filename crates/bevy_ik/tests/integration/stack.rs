//! Stacked characters in a headless app: a limb below a stage that moves the hips meets its
//! target, weights are stationary without animation, `[full body, analytic arm, custom
//! look-at]` in one frame with each stage seeing the previous one's output, no ambiguous
//! system pairs, one bad stage or character does not stop the others, per-frame parameters do
//! not rebuild, and the status is written only when it changes.

use crate::common;

use std::sync::{Arc, Mutex};

use bevy::ecs::schedule::{LogLevel, ScheduleBuildSettings};
use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::HumanoidBone as H;
use bevy_ik::ik_core::stack::{
    AnyStage, CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport,
};
use bevy_ik::ik_core::{BoneTransform, Skeleton};
use bevy_ik::kind::{
    IkBoneResolver, IkBuildContext, IkGatherContext, IkStageEntity, IkStageSummary,
};
use bevy_ik::prelude::*;
use common::*;

/// Indices into `POSITIONS`.
const HIPS: usize = 0;
const HEAD: usize = 4;
const L_UPPER: usize = 6;
const L_HAND: usize = 8;

/// The pelvis push of the probe: 11.2 cm.
const PUSH: Vec3 = Vec3::new(0.1, -0.05, 0.0);

fn spawn_target(app: &mut App, parent: Entity, at: Vec3) -> Entity {
    app.world_mut()
        .spawn((Transform::from_translation(at), ChildOf(parent)))
        .id()
}

/// A humanoid whose root carries an `IkRig` moving the hips to a target `PUSH` away, and
/// returns (root, bones, hips target).
fn hips_rig_character(app: &mut App, at: Vec3) -> (Entity, Vec<Entity>, Entity) {
    let root = app.world_mut().spawn(Transform::from_translation(at)).id();
    let bones = spawn_humanoid(app.world_mut(), root, &VRM_NAMES);
    let hips_target = spawn_target(app, root, Vec3::from(POSITIONS[HIPS].1) + PUSH);
    app.world_mut()
        .entity_mut(root)
        .insert(IkRig::new([IkGoal::position("hips", hips_target)]).with_movable_root("hips"));
    (root, bones, hips_target)
}

/// A reachable point for the left hand (root frame): below and in front of the rest hand.
fn left_hand_goal() -> Vec3 {
    Vec3::from(POSITIONS[L_HAND].1) + Vec3::new(-0.12, -0.15, 0.12)
}

#[test]
fn a_limb_below_a_stage_that_moves_the_hips_meets_its_target() {
    let mut app = app();
    let (root, bones, hips_target) = hips_rig_character(&mut app, Vec3::new(1.0, 0.0, -2.0));
    let hand_target = spawn_target(&mut app, root, left_hand_goal());
    // The arm by humanoid role, as a stage after the rig.
    let limb = app
        .world_mut()
        .spawn((
            IkLimb::new(H::LeftUpperArm, H::LeftLowerArm, H::LeftHand).with_target(hand_target),
            IkStageOf(root),
        ))
        .id();
    for frame in 0..3 {
        app.update();
        let hips = world_pos(&app, bones[HIPS]);
        let moved = hips.distance(world_pos(&app, hips_target));
        assert!(
            moved < 1e-4,
            "frame {frame}: the hips are {moved} from their target"
        );
        let miss = world_pos(&app, bones[L_HAND]).distance(world_pos(&app, hand_target));
        assert!(miss < 1e-4, "frame {frame}: the hand misses by {miss}");
        let s = status(&app, limb);
        assert!(s.solved && s.converged, "{s:?}");
        assert!(status(&app, root).solved);
    }
    // The hips did move the 11.2 cm (so the limb had to solve from the moved shoulder).
    let rest_hips = app
        .world()
        .get::<GlobalTransform>(root)
        .unwrap()
        .transform_point(Vec3::from(POSITIONS[HIPS].1));
    let d = world_pos(&app, bones[HIPS]).distance(rest_hips);
    assert!((d - PUSH.length()).abs() < 1e-4, "hips moved {d}");
}

/// Two arms reaching for the same local target, the first at weight 1 and the second at 0.5;
/// returns the arms and their limb (character) entities.
fn full_and_half_arms(app: &mut App) -> (Vec<Arm>, Vec<Entity>) {
    let (mut arms, mut limbs) = (Vec::new(), Vec::new());
    for (i, weight) in [1.0, 0.5].into_iter().enumerate() {
        let arm = spawn_arm(
            app.world_mut(),
            Transform::from_xyz(3.0 * i as f32, 0.0, 0.0),
        );
        let target = app
            .world_mut()
            .spawn((Transform::from_xyz(0.3, 1.2, 0.25), ChildOf(arm.character)))
            .id();
        let limb = app
            .world_mut()
            .spawn(
                IkLimb::new(arm.upper, arm.lower, arm.hand)
                    .with_target(target)
                    .with_weight(weight),
            )
            .id();
        arms.push(arm);
        limbs.push(limb);
    }
    (arms, limbs)
}

/// The half-weight arm's bones turned half of the full-weight arm's IK rotation.
fn assert_half_of_full(app: &App, arms: &[Arm], frame: usize) {
    let rest = [rest_upper().rotation, rest_lower().rotation];
    let rot = |e: Entity| app.world().get::<Transform>(e).unwrap().rotation;
    let (full, half) = (arms[0], arms[1]);
    for (k, (f, h)) in [(full.upper, half.upper), (full.lower, half.lower)]
        .into_iter()
        .enumerate()
    {
        let whole = rest[k].angle_between(rot(f));
        assert!(whole > 0.05, "the full-weight limb moved");
        let ratio = rest[k].angle_between(rot(h)) / whole;
        assert!(
            (ratio - 0.5).abs() < 1e-3,
            "frame {frame}, bone {k}: {ratio:.4} of the full IK rotation"
        );
    }
}

#[test]
fn weight_half_stays_half_over_60_frames_without_animation() {
    let mut app = app();
    let (arms, _) = full_and_half_arms(&mut app);
    for frame in 0..60 {
        app.update();
        assert_half_of_full(&app, &arms, frame);
    }
}

/// The input the plugin remembers for the bones it wrote (so weights do not creep without
/// animation) carries over when a structural change rebuilds the character's stack.
#[test]
fn weight_half_stays_half_across_a_rebuild() {
    let mut app = app();
    let (arms, limbs) = full_and_half_arms(&mut app);
    for frame in 0..10 {
        app.update();
        assert_half_of_full(&app, &arms, frame);
    }
    // A structural change: the half-weight limb names its tip instead (the same bone).
    let built = stack_id(&app, limbs[1]);
    {
        let mut limb = app.world_mut().get_mut::<IkLimb>(limbs[1]).unwrap();
        limb.tip = BoneRef::Name("hand".into());
        limb.hierarchy = Some(arms[1].character);
    }
    for frame in 10..30 {
        app.update();
        assert_half_of_full(&app, &arms, frame);
    }
    assert_ne!(
        stack_id(&app, limbs[1]),
        built,
        "the change rebuilt the stack"
    );
}

#[test]
fn the_plugin_has_no_ambiguous_system_pairs() {
    let mut app = app();
    app.edit_schedule(PostUpdate, |schedule| {
        schedule.set_build_settings(ScheduleBuildSettings {
            ambiguity_detection: LogLevel::Error,
            ..default()
        });
    });
    let (root, _, _) = hips_rig_character(&mut app, Vec3::ZERO);
    let t = spawn_target(&mut app, root, left_hand_goal());
    app.world_mut().spawn((
        IkLimb::new("leftUpperArm", "leftLowerArm", "leftHand").with_target(t),
        IkStageOf(root),
    ));
    let humanoid = app
        .world_mut()
        .spawn((Transform::from_xyz(3.0, 0.0, 0.0), IkHumanoid::auto()))
        .id();
    spawn_humanoid(app.world_mut(), humanoid, &MIXAMO_NAMES);
    let arm = spawn_arm(app.world_mut(), Transform::from_xyz(-3.0, 0.0, 0.0));
    let t = spawn_target(&mut app, arm.character, Vec3::new(0.3, 1.2, 0.25));
    app.world_mut()
        .spawn(IkLimb::new(arm.upper, arm.lower, arm.hand).with_target(t));
    // A schedule with an ambiguous pair of conflicting systems does not build: this panics.
    for _ in 0..3 {
        app.update();
    }
    assert!(status(&app, humanoid).solved);
}

/// A look-at-like custom stage: turns the head so that its rest-relative `aim` axis points at
/// the target entity, and records where it saw the left hand (model space).
#[derive(Debug)]
struct LookAt {
    head: [usize; 1],
    hand: usize,
    aim: Vec3,
    target: Option<Vec3>,
    seen: Arc<Mutex<Option<Vec3>>>,
}

impl Stage for LookAt {
    fn bones(&self) -> &[usize] {
        &self.head
    }

    fn set_target(&mut self, target: Option<BoneTransform>) {
        self.target = target.map(|t| t.translation);
    }

    fn solve(
        &mut self,
        skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let target = self.target.ok_or(StackError::NonFinite(NonFinite::Goal))?;
        *self.seen.lock().unwrap() = Some(buffer.model_transform(skeleton, self.hand).translation);
        let head = self.head[0];
        let model = buffer.model_transform(skeleton, head);
        let turn = Quat::from_rotation_arc(
            (model.rotation * self.aim).normalize(),
            (target - model.translation).normalize(),
        );
        let parent = model.rotation * buffer.pose().rotations[head].inverse();
        let local = (parent.inverse() * turn * model.rotation).normalize();
        let t = buffer.pose().translations[head];
        buffer.set_local(head, local, t);
        Ok(CustomReport {
            converged: true,
            iterations: 1,
            ..CustomReport::default()
        }
        .into())
    }
}

#[test]
fn full_body_then_arm_then_custom_look_at_in_one_frame() {
    let mut app = app();
    let root = app
        .world_mut()
        .spawn((
            Transform::from_xyz(-1.0, 0.0, 2.0).with_rotation(Quat::from_rotation_y(0.5)),
            IkHumanoid::auto(),
        ))
        .id();
    let bones = spawn_humanoid(app.world_mut(), root, &MIXAMO_NAMES);
    let hand_target = spawn_target(&mut app, root, left_hand_goal());
    let limb = app
        .world_mut()
        .spawn((
            Name::new("left arm"),
            IkLimb::new(H::LeftUpperArm, H::LeftLowerArm, H::LeftHand).with_target(hand_target),
            IkStageOf(root),
        ))
        .id();
    let look_target = spawn_target(&mut app, root, Vec3::new(0.8, 1.9, 2.0));
    let seen = Arc::new(Mutex::new(None));
    let seen_in_stage = seen.clone();
    let look = app
        .world_mut()
        .spawn((
            Name::new("look at"),
            IkCustom::new(
                [H::Head, H::LeftHand],
                move |_: &Skeleton, bones: &[usize]| {
                    Ok(LookAt {
                        head: [bones[0]],
                        hand: bones[1],
                        aim: Vec3::Z,
                        target: None,
                        seen: seen_in_stage.clone(),
                    })
                },
            )
            .with_target(look_target),
            IkStageOf(root),
        ))
        .id();
    // Set-up frame: mapping, targets, the stack.
    app.update();
    let targets = app.world().get::<IkHumanoidTargets>(root).unwrap().clone();
    let ch = app.world().get::<IkCharacter>(root).unwrap();
    assert_eq!(ch.stages().collect::<Vec<_>>(), vec![root, limb, look]);
    // Push the pelvis, move the hand target. The full body tracks in bounded mode (ik-core's
    // default): no joint turns more than `max_turn` a frame, so the hips reach the pushed
    // pelvis target within the frames the legs' turns need (`frames_to_carry`, feet planted);
    // the arm and the custom stage act on its output in every one of those frames.
    let push = app
        .world()
        .get::<GlobalTransform>(root)
        .unwrap()
        .affine()
        .transform_vector3(PUSH);
    let max_turn = IkHumanoid::auto().full_body_settings.max_turn;
    let frames = [(13, 14, 15), (17, 18, 19)]
        .into_iter()
        .map(|(upper, lower, foot)| {
            let (r, m, e) = (
                world_pos(&app, bones[upper]),
                world_pos(&app, bones[lower]),
                world_pos(&app, bones[foot]),
            );
            frames_to_carry(
                (r, r + push),
                (e, e),
                r.distance(m),
                m.distance(e),
                max_turn,
            )
        })
        .max()
        .unwrap();
    let pelvis = targets.pelvis.unwrap();
    app.world_mut()
        .get_mut::<Transform>(pelvis)
        .unwrap()
        .translation += PUSH;
    app.world_mut()
        .get_mut::<Transform>(hand_target)
        .unwrap()
        .translation += Vec3::new(0.02, 0.03, -0.02);
    // The bones only the full body writes (not the arm's or the look-at's).
    let body: Vec<Entity> = (0..bones.len())
        .filter(|&i| i != HEAD && !(L_UPPER..=L_HAND).contains(&i))
        .map(|i| bones[i])
        .collect();
    let mut last = local_rotations(&app, &body);
    let mut met = None;
    for frame in 1..=frames {
        *seen.lock().unwrap() = None;
        app.update();
        let now = local_rotations(&app, &body);
        let turn = largest_turn(&last, &now);
        assert!(
            turn <= max_turn + TURN_READ_SLACK,
            "frame {frame}: the full body turned a joint {turn} rad (bound {max_turn})"
        );
        last = now;
        // Stage 2, the arm, on the full body's output: the hand is on its own target (not on
        // the full-body stage's left-hand target).
        let miss = world_pos(&app, bones[L_HAND]).distance(world_pos(&app, hand_target));
        assert!(miss < 1e-4, "frame {frame}: the hand misses by {miss}");
        assert!(
            world_pos(&app, bones[L_HAND]).distance(world_pos(&app, targets.left_hand.unwrap()))
                > 0.05
        );
        // Stage 3 saw the arm's output: the hand where the arm put it (model = root frame).
        let seen = seen.lock().unwrap().expect("the custom stage ran");
        let root_global = *app.world().get::<GlobalTransform>(root).unwrap();
        let seen_world = root_global.transform_point(seen);
        assert!(
            seen_world.distance(world_pos(&app, hand_target)) < 1e-4,
            "frame {frame}: the look-at saw the hand {} from where the arm put it",
            seen_world.distance(world_pos(&app, hand_target))
        );
        // ... and turned the head: its aim axis points at the look target.
        let head = app.world().get::<GlobalTransform>(bones[HEAD]).unwrap();
        let want = (world_pos(&app, look_target) - head.translation()).normalize();
        let aim_world = head.rotation() * Vec3::Z;
        assert!(
            aim_world.angle_between(want) < 1e-3,
            "frame {frame}: {}",
            aim_world.angle_between(want)
        );
        // Stage 1, full body: the hips follow the pelvis target.
        if world_pos(&app, bones[HIPS]).distance(world_pos(&app, pelvis)) < 1e-3 {
            met = Some(frame);
            break;
        }
    }
    let d = world_pos(&app, bones[HIPS]).distance(world_pos(&app, pelvis));
    assert!(
        met.is_some(),
        "after {frames} frames the hips are {d} from the pelvis target"
    );
    eprintln!("stack: met in frame {met:?} of {frames}");
    for e in [root, limb, look] {
        let s = status(&app, e);
        assert!(s.solved && s.last_error.is_none(), "{e}: {s:?}");
    }
    // The upper arm was written by the arm stage, not left at the full body's output.
    assert!(
        app.world()
            .get::<Transform>(bones[L_UPPER])
            .unwrap()
            .rotation
            .is_finite()
    );
}

#[test]
fn a_bad_stage_or_character_does_not_stop_the_others() {
    let mut app = app();
    let mut characters = Vec::new();
    for i in 0..3 {
        let (root, bones, hips_target) =
            hips_rig_character(&mut app, Vec3::new(3.0 * i as f32, 0.0, 0.0));
        let hand_target = spawn_target(&mut app, root, left_hand_goal());
        let limb = app
            .world_mut()
            .spawn((
                IkLimb::new("leftUpperArm", "leftLowerArm", "leftHand").with_target(hand_target),
                IkStageOf(root),
            ))
            .id();
        characters.push((root, bones, hips_target, hand_target, limb));
    }
    app.update();
    // Character 0: its limb's target is despawned (a stage problem: the rig still runs).
    app.world_mut().despawn(characters[0].3);
    // Character 1: a NaN hips target (the rig fails; the limb still runs on the input hips).
    app.world_mut()
        .get_mut::<Transform>(characters[1].2)
        .unwrap()
        .translation
        .x = f32::NAN;
    for _ in 0..2 {
        app.update();
    }
    let (root0, bones0, hips0, gone, limb0) = &characters[0];
    assert_eq!(
        status(&app, *limb0).last_error,
        Some(IkError::MissingTarget(*gone))
    );
    assert!(status(&app, *root0).solved);
    assert!(world_pos(&app, bones0[HIPS]).distance(world_pos(&app, *hips0)) < 1e-4);
    let (root1, bones1, hips1, hand1, limb1) = &characters[1];
    let s = status(&app, *root1);
    assert_eq!(
        s.last_error,
        Some(IkError::NonFiniteTarget(*hips1)),
        "{s:?}"
    );
    assert!(status(&app, *limb1).solved);
    assert!(world_pos(&app, bones1[L_HAND]).distance(world_pos(&app, *hand1)) < 1e-4);
    for &b in bones1 {
        assert!(
            app.world()
                .get::<GlobalTransform>(b)
                .unwrap()
                .translation()
                .is_finite()
        );
    }
    let (root2, bones2, hips2, hand2, limb2) = &characters[2];
    assert!(status(&app, *root2).solved && status(&app, *limb2).solved);
    assert!(world_pos(&app, bones2[HIPS]).distance(world_pos(&app, *hips2)) < 1e-4);
    assert!(world_pos(&app, bones2[L_HAND]).distance(world_pos(&app, *hand2)) < 1e-4);
}

/// How many times the character's skeleton and stack were built.
fn stack_id(app: &App, root: Entity) -> u32 {
    app.world().get::<IkCharacter>(root).unwrap().set_ups()
}

#[test]
fn parameters_do_not_rebuild_structure_does() {
    let mut app = app();
    let (root, _, hips_target) = hips_rig_character(&mut app, Vec3::ZERO);
    app.update();
    let built = stack_id(&app, root);
    // Per-frame parameters: goal weight and blend, rig weight, iterations, tolerance.
    for k in 0..4 {
        {
            let mut rig = app.world_mut().get_mut::<IkRig>(root).unwrap();
            rig.goals[0].weight = 0.5 + 0.1 * k as f32;
            rig.goals[0].blend = 0.9;
            rig.weight = 0.8;
            rig.settings.max_iterations = 20 + k;
            rig.settings.position_tolerance = 1e-5;
        }
        app.update();
        assert_eq!(stack_id(&app, root), built, "rebuilt for a parameter");
        assert!(status(&app, root).solved);
    }
    // Structure: another goal bone.
    let t = spawn_target(&mut app, root, Vec3::from(POSITIONS[HEAD].1));
    app.world_mut()
        .get_mut::<IkRig>(root)
        .unwrap()
        .goals
        .push(IkGoal::position("head", t));
    app.update();
    assert_ne!(stack_id(&app, root), built, "a new goal bone rebuilds");
    let _ = hips_target;
}

#[test]
fn status_is_written_only_when_it_changes() {
    let mut app = app();
    let (root, _, _) = hips_rig_character(&mut app, Vec3::ZERO);
    for _ in 0..3 {
        app.update();
    }
    let tick = |app: &App| {
        app.world()
            .entity(root)
            .get_ref::<IkStatus>()
            .unwrap()
            .last_changed()
    };
    let before = tick(&app);
    for _ in 0..3 {
        app.update();
    }
    assert_eq!(tick(&app), before, "a still character rewrote its status");
    assert!(status(&app, root).solved);
}

/// A user's own stage: turns one bone about its local Y by an angle that its input hands in
/// every frame.
#[derive(Debug)]
struct Turn {
    bone: [usize; 1],
    angle: f32,
    /// The stage entity's model-space position of a probe entity, as the context read it.
    probe: Option<Vec3>,
}

impl Stage for Turn {
    fn bones(&self) -> &[usize] {
        &self.bone
    }

    fn solve(
        &mut self,
        _skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        let b = self.bone[0];
        let input = buffer.pose().rotations[b];
        let t = buffer.pose().translations[b];
        buffer.set_local(b, input * Quat::from_rotation_y(self.angle), t);
        Ok(CustomReport {
            converged: true,
            iterations: 1,
            ..CustomReport::default()
        }
        .into())
    }
}

/// The user's per-frame input component for [`Turn`].
#[derive(Component, Debug, Clone, Copy)]
struct TurnInput {
    angle: f32,
    weight: f32,
    probe: Entity,
}

impl IkStageInput for TurnInput {
    type Stage = Turn;
    type Data = &'static TurnInput;

    fn apply(input: &TurnInput, stage: &mut Turn, cx: &IkStageContext) {
        stage.angle = input.angle;
        stage.probe = cx.in_model_space(input.probe).map(|t| t.translation);
    }

    fn weight(input: &&TurnInput) -> Option<f32> {
        Some(input.weight)
    }
}

fn turn_stage(key: u32) -> IkCustom {
    IkCustom::new([H::Head], |_: &Skeleton, bones: &[usize]| {
        Ok(Turn {
            bone: [bones[0]],
            angle: 0.0,
            probe: None,
        })
    })
    .with_key(key)
}

#[test]
fn a_user_stage_input_changes_the_pose_every_frame_without_a_rebuild() {
    let mut app = app();
    app.add_plugins(IkStageInputPlugin::<TurnInput>::new());
    let root = app
        .world_mut()
        .spawn(Transform::from_xyz(1.0, 0.0, -1.0).with_rotation(Quat::from_rotation_y(0.7)))
        .id();
    let bones = spawn_humanoid(app.world_mut(), root, &MIXAMO_NAMES);
    let probe_at = Vec3::new(0.2, 1.5, 0.4);
    let probe = spawn_target(&mut app, root, probe_at);
    let rest = app.world().get::<Transform>(bones[HEAD]).unwrap().rotation;
    let stage = app
        .world_mut()
        .spawn((
            turn_stage(1),
            TurnInput {
                angle: 0.0,
                weight: 1.0,
                probe,
            },
            IkStageOf(root),
        ))
        .id();
    app.update();
    let built = stack_id(&app, root);
    let head = |app: &App| app.world().get::<Transform>(bones[HEAD]).unwrap().rotation;
    for frame in 1..=12 {
        let angle = 0.1 * frame as f32;
        app.world_mut().get_mut::<TurnInput>(stage).unwrap().angle = angle;
        app.update();
        let want = rest * Quat::from_rotation_y(angle);
        // Compared by the axes it turns (`angle_between` of near-equal f32 quaternions is
        // no finer than ~1e-3 rad).
        let err = [Vec3::X, Vec3::Y, Vec3::Z]
            .map(|a| (head(&app) * a).distance(want * a))
            .into_iter()
            .fold(0.0, f32::max);
        assert!(err < 1e-5, "frame {frame}: the head's axes are {err} off");
        assert_eq!(stack_id(&app, root), built, "frame {frame}: rebuilt");
        // The context read the probe in the character's model space.
        let seen = app
            .world()
            .get::<IkCharacter>(root)
            .unwrap()
            .custom_stage::<Turn>(stage)
            .and_then(|t| t.probe)
            .expect("the input ran");
        assert!(seen.distance(probe_at) < 1e-5, "probe seen at {seen}");
    }
    // The weight goes in the same way: half the turn.
    app.world_mut().get_mut::<TurnInput>(stage).unwrap().weight = 0.5;
    app.update();
    let half = head(&app).angle_between(rest);
    assert!((half - 0.6).abs() < 1e-3, "weight 0.5 turned {half} of 1.2");
    assert_eq!(stack_id(&app, root), built);
    // A new `IkCustom` with the same bones and key keeps the built stage; another key rebuilds.
    app.world_mut().entity_mut(stage).insert(turn_stage(1));
    app.update();
    assert_eq!(stack_id(&app, root), built, "same key rebuilt");
    app.world_mut().entity_mut(stage).insert(turn_stage(2));
    app.update();
    assert_eq!(stack_id(&app, root), built + 1, "a new key rebuilds once");
    assert!(status(&app, stage).solved);
}

#[test]
fn solve_time_is_written_only_for_characters_that_ask_for_it() {
    let mut app = app();
    let (timed, _, _) = hips_rig_character(&mut app, Vec3::ZERO);
    let (untimed, _, _) = hips_rig_character(&mut app, Vec3::new(3.0, 0.0, 0.0));
    app.world_mut()
        .entity_mut(timed)
        .insert(IkSolveTime::default());
    for _ in 0..3 {
        app.update();
    }
    assert!(status(&app, timed).solved && status(&app, untimed).solved);
    let last = app.world().get::<IkSolveTime>(timed).unwrap().last;
    assert!(
        last > std::time::Duration::ZERO,
        "a solved character's time is not written: {last:?}"
    );
    assert!(
        app.world().get::<IkSolveTime>(untimed).is_none(),
        "timing was added to a character that did not ask for it"
    );
    // A disabled character is not gathered: its time stays the last solve's.
    app.world_mut().entity_mut(timed).insert(IkDisabled);
    app.world_mut().get_mut::<IkSolveTime>(timed).unwrap().last = std::time::Duration::ZERO;
    app.update();
    assert_eq!(
        app.world().get::<IkSolveTime>(timed).unwrap().last,
        std::time::Duration::ZERO,
        "a disabled character was timed"
    );
}

/// A user's stage kind registered exactly as the built-ins are: turns its bone about `axis`
/// (the bone's local frame) by `angle`; its structure is the bone and axis, its per-frame
/// parameters the angle and weight.
#[derive(Component)]
struct SpinKind {
    bone: BoneRef,
    axis: Vec3,
    angle: f32,
    weight: f32,
}

/// The ik-core stage it builds.
#[derive(Debug)]
struct SpinStage {
    bone: [usize; 1],
    axis: Vec3,
    angle: f32,
}

impl Stage for SpinStage {
    fn bones(&self) -> &[usize] {
        &self.bone
    }

    fn solve(&mut self, _: &Skeleton, pose: &mut PoseBuffer) -> Result<StageReport, StackError> {
        let b = self.bone[0];
        let (q, t) = (pose.pose().rotations[b], pose.pose().translations[b]);
        pose.set_local(b, q * Quat::from_axis_angle(self.axis, self.angle), t);
        Ok(CustomReport {
            converged: true,
            iterations: 1,
            ..default()
        }
        .into())
    }
}

impl IkStageComponent for SpinKind {
    type Key = (BoneRef, [u32; 3]);
    /// How many times `gather` ran on this build (kept beside the stage).
    type State = u32;

    fn key(&self) -> Self::Key {
        (self.bone.clone(), self.axis.to_array().map(f32::to_bits))
    }

    fn resolve(&self, bones: &mut IkBoneResolver) -> Result<Vec<Entity>, IkError> {
        let character = bones.character();
        Ok(vec![bones.find(&self.bone, character)?])
    }

    fn build(&self, _cx: &IkBuildContext, bones: &[usize]) -> Result<(AnyStage, u32), IkError> {
        let stage = SpinStage {
            bone: [bones[0]],
            axis: self.axis.try_normalize().ok_or(IkError::NotAChain)?,
            angle: 0.0,
        };
        Ok((stage.into(), 0))
    }

    fn weight(&self) -> f32 {
        self.weight
    }

    fn gather(
        &self,
        _entity: &IkStageEntity,
        stage: &mut AnyStage,
        gathered: &mut u32,
        _cx: &mut IkGatherContext,
    ) -> Result<(), IkError> {
        *gathered += 1;
        stage
            .get_mut::<SpinStage>()
            .ok_or(IkError::StageTypeMismatch)?
            .angle = self.angle;
        Ok(())
    }

    fn summarise(_stage: &mut AnyStage, gathered: &u32, summary: &mut IkStageSummary) {
        // The count, as a residual the test can read back through `IkStatus::residuals`.
        summary.push_residual(*gathered as f32);
    }
}

#[test]
fn a_user_stage_kind_registers_like_the_built_ins() {
    let mut app = app();
    app.register_ik_stage::<SpinKind>();
    let root = app.world_mut().spawn(Transform::default()).id();
    let bones = spawn_humanoid(app.world_mut(), root, &MIXAMO_NAMES);
    let rest = app.world().get::<Transform>(bones[HEAD]).unwrap().rotation;
    let stage = app
        .world_mut()
        .spawn((
            SpinKind {
                bone: BoneRef::Role(H::Head),
                axis: Vec3::new(0.3, 1.0, -0.2),
                angle: 0.0,
                weight: 1.0,
            },
            IkStageOf(root),
        ))
        .id();
    app.update();
    let built = stack_id(&app, root);
    // The registration added the status (and the character got its runtime).
    assert!(status(&app, stage).ready, "{:?}", status(&app, stage));
    let head = |app: &App| app.world().get::<Transform>(bones[HEAD]).unwrap().rotation;
    for frame in 1..=5 {
        let angle = 0.2 * frame as f32;
        app.world_mut().get_mut::<SpinKind>(stage).unwrap().angle = angle;
        app.update();
        let turned = head(&app).angle_between(rest);
        assert!(
            (turned - angle).abs() < 1e-3,
            "frame {frame}: {turned} for {angle}"
        );
        assert_eq!(stack_id(&app, root), built, "frame {frame}: rebuilt");
        // Its state went from build through every gather to its summary.
        assert_eq!(status(&app, stage).residuals, [(frame + 1) as f32]);
    }
    // The weight is read every frame: half the turn, no rebuild.
    app.world_mut().get_mut::<SpinKind>(stage).unwrap().weight = 0.5;
    app.update();
    let half = head(&app).angle_between(rest);
    assert!((half - 0.5).abs() < 1e-3, "weight 0.5 turned {half} of 1.0");
    assert_eq!(stack_id(&app, root), built);
    // A structural change (another bone) rebuilds it, with a fresh state.
    app.world_mut().get_mut::<SpinKind>(stage).unwrap().bone = BoneRef::Role(H::Neck);
    app.update();
    assert_ne!(stack_id(&app, root), built, "the key changed: rebuilt");
    assert_eq!(status(&app, stage).residuals, [1.0]);
    // A bone that is not there is reported in its status, not panicked on.
    app.world_mut().get_mut::<SpinKind>(stage).unwrap().bone = BoneRef::from("no such bone");
    app.update();
    let s = status(&app, stage);
    assert!(
        !s.ready && matches!(s.last_error, Some(IkError::MissingBone(_))),
        "{s:?}"
    );
}
