//! The behaviours do not allocate per solve: a counting global allocator around many frames of
//! an `IkStack` with a look-at chain, an aim chain and a twist distribution (custom stages), a
//! two-bone arm whose goal a `GoalMotion` moves, with moving targets.

use glam::Vec3;
use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::behaviours::aim::AimChain;
use ik_core::behaviours::look_at::{LookAtChain, LookAtSettings};
use ik_core::behaviours::motion::{Easing, GoalMotion, MotionTiming};
use ik_core::behaviours::twist::TwistDistribution;
use ik_core::humanoid::{HumanoidBone as H, HumanoidMap};
use ik_core::stack::{IkStack, TwoBoneStage};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

use crate::alloc;

#[test]
fn behaviour_stages_do_not_allocate() {
    let s = test_rig(RigConvention::Unreal, RestAxes::PlusX);
    let (map, _) = HumanoidMap::from_skeleton(&s);
    let g = |r: H| map.get(r).unwrap();
    let look = LookAtChain::from_humanoid(&s, &map, None, LookAtSettings::default()).unwrap();
    let aim = AimChain::try_new(
        &s,
        g(H::Chest),
        g(H::RightHand),
        Vec3::X,
        Vec3::Y * 0.05,
        None,
    )
    .unwrap()
    .with_pole_axis(Vec3::Y)
    .unwrap();
    let twist = TwistDistribution::from_humanoid(&s, &map);
    assert!(!twist.segments().is_empty());
    let arm =
        TwoBoneIk::try_new(&s, g(H::LeftUpperArm), g(H::LeftLowerArm), g(H::LeftHand)).unwrap();
    let mut stack = IkStack::new(s.clone());
    let li = stack.push(look).unwrap();
    let ai = stack.push(aim).unwrap();
    let ti = stack.push(twist).unwrap();
    let hand = g(H::LeftHand);
    let from = stack.model_transform(hand).translation;
    let wi = stack
        .push(TwoBoneStage::new(&s, arm, LimbGoal::new(from)))
        .unwrap();
    let mut motion = GoalMotion::try_new(MotionTiming::Speed(1.0), Easing::SmoothStep).unwrap();
    motion.engage();
    let input = s.rest_pose();
    let frame = |k: usize, stack: &mut IkStack, motion: &mut GoalMotion| {
        let t = k as f32 / 60.0;
        let target = Vec3::new(t.sin(), 1.5 + 0.3 * t.cos(), 1.0);
        stack.set_input(&input).unwrap();
        let slots = stack.slots_mut();
        let l = slots[li].stage.as_custom_mut::<LookAtChain>().unwrap();
        l.target = Some(target);
        l.dt = 1.0 / 60.0;
        let a = slots[ai].stage.as_custom_mut::<AimChain>().unwrap();
        a.target = Some(target);
        a.pole = Some(Vec3::Y);
        assert!(
            slots[ti]
                .stage
                .as_custom_mut::<TwistDistribution>()
                .is_some()
        );
        if k == 40 {
            motion.release();
        }
        let to = Vec3::new(0.3, 1.2, 0.4);
        motion.advance(1.0 / 60.0, from, to);
        slots[wi].stage.as_two_bone_mut().unwrap().goal = LimbGoal::new(motion.position(from, to));
        let report = stack.solve();
        assert_eq!(report.failed, 0);
    };
    // Warm up (first solves size nothing, but keep the measured frames steady-state).
    frame(0, &mut stack, &mut motion);
    let ((), allocations) = alloc::allocations_during(|| {
        for k in 1..120 {
            frame(k, &mut stack, &mut motion);
        }
    });
    assert_eq!(allocations, 0);
}
