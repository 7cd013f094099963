//! Detached IK-control feet on the real Quaternius worker rig (`Foot.L`/`Foot.R` children of
//! `Root`, not of the legs): end bones added under the lower legs, the full body solved to foot
//! goals, then the [`DetachedFeet`] stage moves the foot bones along — measured by FK, and
//! without allocating per solve after set-up (a counting global allocator).

use crate::gameplay as gltf_rig;

use ik_core::Skeleton;
use ik_core::glam::Vec3;
use ik_core::humanoid::{DetachedFeet, Effector, FullBodySolver, HumanoidBone as H, HumanoidMap};
use ik_core::stack::{FullBodyStage, IkStack};

use crate::alloc;

#[test]
fn worker_feet_follow_the_legs_without_allocating() {
    let s = gltf_rig::load_skeleton("quaternius_worker.gltf").unwrap();
    let (_, report) = HumanoidMap::from_skeleton(&s);
    assert_eq!(report.missing_required, [H::LeftFoot, H::RightFoot]);
    let mut bones = s.bones().to_vec();
    bones.extend(HumanoidMap::lower_leg_ends_for_detached_feet(&s, &report));
    let s = Skeleton::try_new(bones).unwrap();
    let (map, report) = HumanoidMap::from_skeleton(&s);
    assert!(report.is_complete(), "{report}");
    let pairs = DetachedFeet::pairs_of(&map, &report);
    let feet = [s.find("Foot.L").unwrap(), s.find("Foot.R").unwrap()];
    assert_eq!(pairs.len(), 2);
    assert!(pairs.iter().all(|&(_, f)| feet.contains(&f)), "{pairs:?}");

    let mut solver = FullBodySolver::new(&s, &map).unwrap();
    let rest = s.rest_pose();
    let rest_model = s.model_transforms(&rest);
    let goals = solver.goals_at_pose(&s, &rest);
    let mut stack = IkStack::new(s.clone());
    stack
        .push(FullBodyStage::new(solver, goals, s.len()))
        .unwrap();
    stack
        .push(DetachedFeet::try_new(&s, &pairs).unwrap())
        .unwrap();
    let left0 = goals.get(Effector::LeftFoot).position;
    let right0 = goals.get(Effector::RightFoot).position;
    let lift = |f: usize| Vec3::new(0.0, 0.06 * (0.2 * f as f32).sin().abs(), 0.02);
    let frame = |stack: &mut IkStack, f: usize| {
        let slots = stack.slots_mut();
        let g = &mut slots[0].stage.as_full_body_mut().unwrap().goals;
        g.get_mut(Effector::LeftFoot).position = left0 + lift(f);
        g.get_mut(Effector::RightFoot).position = right0 + lift(f + 7);
        stack.set_input(&rest).unwrap();
        let report = stack.solve();
        assert_eq!(report.failed, 0);
    };
    for f in 0..3 {
        frame(&mut stack, f);
    }
    let ((), allocations) = alloc::allocations_during(|| {
        for f in 3..40 {
            frame(&mut stack, f);
            let _ = stack.model_transforms();
        }
    });
    assert_eq!(allocations, 0);

    // The last frame, measured: the ends reached the goals and the detached feet moved with
    // them by the same offset (feet rest where the ends do; goal rotations unchanged).
    let f = 39;
    let model = stack.model_transforms().to_vec();
    for (k, (&(end, foot), delta)) in pairs.iter().zip([lift(f), lift(f + 7)]).enumerate() {
        let want = rest_model[foot].translation + delta;
        let end_err = model[end]
            .translation
            .distance(rest_model[end].translation + delta);
        let foot_err = model[foot].translation.distance(want);
        assert!(end_err < 1e-3, "foot {k}: end misses by {end_err}");
        assert!(foot_err < 1e-3, "foot {k}: detached foot off by {foot_err}");
        assert!(delta.length() > 0.01);
        let turned = model[foot]
            .rotation
            .angle_between(rest_model[foot].rotation);
        assert!(turned < 1e-2, "foot {k} turned by {turned}");
    }
    assert!(stack.pose().is_finite());
}
