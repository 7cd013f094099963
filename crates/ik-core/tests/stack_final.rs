//! Honest results of the whole stack: every stage's goals measured on the final pose, the
//! flag that a later stage moved them, and stages that must keep their goals.

use glam::{Quat, Vec3};
use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::stack::{
    AnyStage, CustomReport, IkStack, NonFinite, PoseBuffer, StackError, Stage, StageError,
    StageOutcome, StageReport, TwoBoneStage,
};
use ik_core::{Bone, BoneTransform, Skeleton};

/// A later stage that turns one bone to a fixed local rotation (a look-at's spine turn).
#[derive(Debug)]
struct Turn {
    bone: [usize; 1],
    rotation: Quat,
}

impl Stage for Turn {
    fn bones(&self) -> &[usize] {
        &self.bone
    }

    fn solve(&mut self, _: &Skeleton, buffer: &mut PoseBuffer) -> Result<StageReport, StackError> {
        let b = self.bone[0];
        let t = buffer.pose().translations[b];
        buffer.set_local(b, self.rotation, t);
        Ok(CustomReport {
            converged: true,
            iterations: 1,
            ..CustomReport::default()
        }
        .into())
    }
}

/// chest → shoulder → elbow → wrist, and a head beside the arm (after it in flat order).
fn skeleton() -> Skeleton {
    Skeleton::try_new(vec![
        Bone::new("chest", None, BoneTransform::IDENTITY),
        Bone::new(
            "shoulder",
            Some(0),
            BoneTransform::from_translation(Vec3::new(0.2, 0.4, 0.0)),
        ),
        Bone::new(
            "elbow",
            Some(1),
            BoneTransform::from_translation_rotation(Vec3::X * 0.3, Quat::from_rotation_y(-0.2)),
        ),
        Bone::new(
            "wrist",
            Some(2),
            BoneTransform::from_translation(Vec3::X * 0.25),
        ),
        Bone::new(
            "head",
            Some(0),
            BoneTransform::from_translation(Vec3::Y * 0.6),
        ),
    ])
    .expect("a valid skeleton")
}

const TARGET: Vec3 = Vec3::new(0.6, 0.3, 0.1);

/// The chest turn of most tests: moves the hand by centimetres, the target stays in reach.
const SMALL_TURN: f32 = 0.15;

/// The arm reaching for [`TARGET`], then a turn of `bone` by [`SMALL_TURN`].
fn stack(turned: usize) -> IkStack {
    stack_turning(turned, SMALL_TURN)
}

/// The arm reaching for [`TARGET`], then a turn of `bone` by `angle` about Z.
fn stack_turning(turned: usize, angle: f32) -> IkStack {
    let s = skeleton();
    let ik = TwoBoneIk::from_names(&s, "shoulder", "elbow", "wrist").expect("an arm");
    let arm = TwoBoneStage::new(&s, ik, LimbGoal::new(TARGET).with_pole(Vec3::NEG_Z));
    let mut stack = IkStack::new(s.clone());
    stack.push(arm).expect("in range");
    stack
        .push(Turn {
            bone: [turned],
            rotation: Quat::from_rotation_z(angle),
        })
        .expect("in range");
    stack.set_input(&s.rest_pose()).expect("matches");
    stack
}

fn own_residual(stack: &IkStack, slot: usize) -> f32 {
    match &stack.slot(slot).expect("a slot").outcome {
        StageOutcome::Solved(r) => r.position_residual(),
        other => panic!("not solved: {other:?}"),
    }
}

#[test]
fn a_later_stage_that_moves_the_goal_is_reported_on_the_final_pose() {
    let mut stack = stack(0);
    let report = stack.solve();
    // The arm's own report: on the cup.
    assert!(own_residual(&stack, 0) < 1e-5);
    // The character's final pose: the chest turn carried the hand away, and the stack says so.
    let wrist = stack.model_transform(3).translation;
    let moved = wrist.distance(TARGET);
    assert!(moved > 0.05, "the turn moves the hand ({moved})");
    let arm = stack.slot(0).expect("the arm");
    let measured = arm.final_residual.expect("measured").position;
    assert!((measured - moved).abs() < 1e-5, "{measured} vs {moved}");
    assert!(arm.goals_moved);
    assert_eq!(report.goals_moved, 1);
    // The turn's own goal is not moved by anyone after it.
    assert!(!stack.slot(1).expect("the turn").goals_moved);
}

#[test]
fn a_stage_that_keeps_its_goals_is_solved_again_on_the_final_pose() {
    let mut stack = stack(0);
    stack.slot_mut(0).expect("the arm").keep_goals = true;
    let report = stack.solve();
    let arm = stack.slot(0).expect("the arm");
    assert!(!arm.goals_moved, "{arm:?}");
    assert!(
        arm.final_residual.expect("measured").position < 1e-5,
        "{arm:?} {:?}",
        stack.pose()
    );
    assert_eq!(report.goals_moved, 0);
    // The hand is on the target in the pose the character shows, and the turn is kept.
    assert!(stack.model_transform(3).translation.distance(TARGET) < 1e-5);
    assert!(stack.pose().rotations[0].angle_between(Quat::from_rotation_z(SMALL_TURN)) < 1e-6);
}

#[test]
fn a_goal_the_stage_cannot_keep_is_reported() {
    // A chest turn so large that the target leaves the arm's reach: re-solving the arm on the
    // final pose brings the hand as close as it can, and the stack says the goal was lost.
    const LARGE_TURN: f32 = 1.2;
    let mut stack = stack_turning(0, LARGE_TURN);
    stack.slot_mut(0).expect("the arm").keep_goals = true;
    let report = stack.solve();
    let shoulder = stack.model_transform(1).translation;
    let reach = 0.3 + 0.25;
    let gap = shoulder.distance(TARGET) - reach;
    assert!(gap > 0.1, "out of reach after the turn ({gap})");
    let arm = stack.slot(0).expect("the arm");
    assert!(arm.goals_moved);
    assert_eq!(report.goals_moved, 1);
    let measured = arm.final_residual.expect("measured").position;
    let shown = stack.model_transform(3).translation.distance(TARGET);
    assert!((measured - shown).abs() < 1e-5, "{measured} vs {shown}");
    assert!(
        (shown - gap).abs() < 1e-4,
        "as close as it can: {shown} vs {gap}"
    );
}

#[test]
fn a_later_stage_on_other_bones_costs_no_measurement_and_moves_nothing() {
    let mut stack = stack(4);
    let report = stack.solve();
    let arm = stack.slot(0).expect("the arm");
    assert!(!arm.goals_moved);
    assert_eq!(report.goals_moved, 0);
    assert_eq!(
        arm.final_residual.expect("its own figure").position,
        own_residual(&stack, 0)
    );
}

#[test]
fn a_stage_replaced_or_reordered_through_the_slots_is_measured_by_its_new_bones() {
    // Planned with the turn on the head (nothing to measure), then the turn replaced in place
    // by one on the chest: the next solve finds the new bones and reports the moved hand.
    let mut stack = stack(4);
    assert_eq!(stack.solve().goals_moved, 0);
    stack.slots_mut()[1].stage = AnyStage::new(Turn {
        bone: [0],
        rotation: Quat::from_rotation_z(SMALL_TURN),
    });
    assert_eq!(stack.solve().goals_moved, 1);
    assert!(stack.slot(0).expect("the arm").goals_moved);
    // Swapped through the slots (the turn first, the arm last): nothing after the arm.
    stack.slots_mut().swap(0, 1);
    assert_eq!(stack.solve().goals_moved, 0);
    let arm = stack.slot(1).expect("the arm");
    assert!(!arm.goals_moved);
    assert!(arm.final_residual.expect("its own figure").position < 1e-5);
}

#[test]
fn stages_are_reached_by_type_and_errors_are_typed() {
    let mut stack = stack(0);
    // The limb is held inline whichever way it came in.
    assert!(stack.slot(0).expect("arm").stage.as_two_bone().is_some());
    let s = skeleton();
    let ik = TwoBoneIk::from_names(&s, "shoulder", "elbow", "wrist").expect("an arm");
    let boxed: Box<dyn Stage> = Box::new(TwoBoneStage::new(&s, ik, LimbGoal::new(TARGET)));
    assert!(AnyStage::from_boxed(boxed).as_two_bone().is_some());
    let turn = stack
        .slot_mut(1)
        .expect("turn")
        .stage_mut::<Turn>()
        .expect("a Turn");
    turn.rotation = Quat::from_rotation_z(0.1);
    assert!(
        stack
            .slot(1)
            .expect("turn")
            .stage::<TwoBoneStage>()
            .is_none()
    );

    // A user's own error type comes back typed.
    #[derive(Debug, PartialEq)]
    struct Jammed;
    impl core::fmt::Display for Jammed {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("jammed")
        }
    }
    impl std::error::Error for Jammed {}
    let report =
        stack.solve_stage_with(1, |_, _, _| Err(StackError::Stage(StageError::new(Jammed))));
    assert_eq!(report.failed, 1);
    let StageOutcome::Failed(StackError::Stage(e)) = &stack.slot(1).expect("turn").outcome else {
        panic!("a typed stage error");
    };
    assert_eq!(e.get().downcast_ref::<Jammed>(), Some(&Jammed));
    // The built-ins' own problems are typed too: a non-finite input pose fails the turn
    // with a variant, not a message.
    let mut bad = skeleton().rest_pose();
    bad.rotations[1] = Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0);
    stack.set_input(&bad).expect("matches");
    stack.solve();
    assert!(matches!(
        stack.slot(0).expect("arm").outcome,
        StageOutcome::Failed(StackError::Analytic(_))
    ));
    assert!(stack.pose().rotations[2].is_finite());
    assert_eq!(
        StackError::NonFinite(NonFinite::InputPose).to_string(),
        "the input pose is not finite"
    );
}
