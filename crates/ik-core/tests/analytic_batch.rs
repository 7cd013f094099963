//! `TwoBoneBatch` against the scalar `TwoBoneIk::solve_with_parent`: the same joint positions
//! (within 1e-5 of the limb length, by forward kinematics of both outputs), tip rotations,
//! statuses and report flags, on the analytic bench's goal mix and on random rigs with any rest
//! bone axes; bad input as a per-limb status with no NaN written; no allocation per call.

#[path = "../benches/support/analytic_goals.rs"]
mod analytic_goals;

use ik_core::analytic::batch::{BatchError, BatchScratch, LaneGoals, LanePoses, TwoBoneBatch};
use ik_core::analytic::{AnalyticError, LimbGoal, LimbReport, LimbSettings, TwoBoneIk};
use ik_core::glam::{Quat, Vec3};
use ik_core::{Bone, BoneTransform, Pose, Skeleton};
use proptest::prelude::*;

/// One limb of a test: its skeleton, solver, incoming pose and the root's parent transform.
#[derive(Clone, Debug)]
struct Limb {
    skeleton: Skeleton,
    ik: TwoBoneIk,
    pose: Pose,
    parent: BoneTransform,
}

impl Limb {
    fn new(skeleton: Skeleton, ik: TwoBoneIk, pose: Pose) -> Self {
        let parent = skeleton
            .parent(ik.bones()[0])
            .map_or(BoneTransform::IDENTITY, |p| {
                skeleton.model_transform(&pose, p)
            });
        Self {
            skeleton,
            ik,
            pose,
            parent,
        }
    }

    fn rotations(&self) -> [Quat; 3] {
        self.ik.bones().map(|b| self.pose.rotations[b])
    }

    /// Model positions of mid and tip, and the tip's model rotation, for local rotations
    /// `rotations` of root, mid and tip.
    fn fk(&self, rotations: [Quat; 3]) -> (Vec3, Vec3, Quat) {
        let mut pose = self.pose.clone();
        for (b, q) in self.ik.bones().into_iter().zip(rotations) {
            pose.rotations[b] = q;
        }
        let [_, mid, tip] = self.ik.bones();
        let tip = self.skeleton.model_transform(&pose, tip);
        (
            self.skeleton.model_transform(&pose, mid).translation,
            tip.translation,
            tip.rotation,
        )
    }
}

fn angle_between(a: Quat, b: Quat) -> f32 {
    let r = a.normalize() * b.normalize().conjugate();
    2.0 * r.xyz().length().atan2(r.w.abs())
}

/// Whether a `Keep` goal's incoming bend axis lies within 0.05 rad of the root→target line,
/// where the scalar solve's bend-plane normal (one Gram–Schmidt step on a nearly collinear
/// vector) is off by about 3e-7 / sin rad: 1.4e-5 rad at sin 0.023, found by this test.
fn keep_plane_ill_conditioned(limb: &Limb, goal: &LimbGoal) -> bool {
    if !matches!(goal.pole, ik_core::analytic::Pole::Keep) {
        return false;
    }
    let [root, ..] = limb.ik.bones();
    let model = limb.skeleton.model_transform(&limb.pose, root);
    let axis = model.rotation * limb.ik.bend_axis();
    let Some(dir) = (goal.target - model.translation).try_normalize() else {
        return false;
    };
    axis.normalize().cross(dir).length() < 0.05
}

/// Solves the same input with `TwoBoneBatch::solve_lanes` (resident lanes), with and without
/// reports, and checks that it gives exactly what `solve` gave: `rotations` and `reports` (its
/// output from `before`), and `fallback` limbs on the scalar solve.
#[allow(clippy::too_many_arguments)]
fn check_lanes_like_solve(
    batch: &TwoBoneBatch,
    goals: &[LimbGoal],
    parents: &[BoneTransform],
    before: &[[Quat; 3]],
    rotations: &[[Quat; 3]],
    reports: &[Result<LimbReport, AnalyticError>],
    fallback: usize,
) {
    let n = goals.len();
    let mut lane_goals = LaneGoals::new(n);
    for (i, goal) in goals.iter().enumerate() {
        lane_goals.set(i, goal).unwrap();
    }
    let bits = |r: [Quat; 3]| r.map(|q| q.to_array().map(f32::to_bits));
    for with_reports in [true, false] {
        let mut poses = LanePoses::new(n);
        for (i, (parent, r)) in parents.iter().zip(before).enumerate() {
            poses.set(i, parent, *r).unwrap();
            // (As text: a NaN is unequal to itself.)
            assert_eq!(
                format!("{:?}", poses.parent(i).unwrap()),
                format!("{parent:?}")
            );
        }
        let mut lane_reports = vec![Ok(LimbReport::default()); n];
        let lanes_fallback = batch
            .solve_lanes(
                &lane_goals,
                &mut poses,
                with_reports.then_some(lane_reports.as_mut_slice()),
                &mut BatchScratch::new(),
            )
            .unwrap();
        assert_eq!(lanes_fallback, fallback);
        for i in 0..n {
            assert_eq!(
                bits(poses.rotations(i).unwrap()),
                bits(rotations[i]),
                "limb {i}: solve_lanes (reports: {with_reports}) vs solve"
            );
            assert_eq!(poses.error(i), reports[i].as_ref().err(), "limb {i}");
            if with_reports {
                assert_eq!(lane_reports[i], reports[i], "limb {i}");
            }
        }
    }
}

/// Solves `limbs` toward `goals` with the batch and with the scalar solve, checks that they
/// agree, and returns the batch's count of scalar-solved limbs. Each limb's pose is then the
/// scalar result (the next round's incoming pose).
fn compare(limbs: &mut [Limb], goals: &[LimbGoal]) -> usize {
    let batch = TwoBoneBatch::try_new(limbs.iter().map(|l| (&l.skeleton, &l.ik))).unwrap();
    let parents: Vec<_> = limbs.iter().map(|l| l.parent).collect();
    let mut rotations: Vec<_> = limbs.iter().map(Limb::rotations).collect();
    let before = rotations.clone();
    let mut reports = vec![Ok(LimbReport::default()); limbs.len()];
    let fallback = batch
        .solve(
            goals,
            &parents,
            &mut rotations,
            &mut reports,
            &mut BatchScratch::new(),
        )
        .unwrap();
    check_lanes_like_solve(
        &batch, goals, &parents, &before, &rotations, &reports, fallback,
    );
    for (i, (limb, goal)) in limbs.iter_mut().zip(goals).enumerate() {
        let scale = limb.ik.rest_lengths().iter().sum::<f32>();
        let mut pose = limb.pose.clone();
        let scalar = limb
            .ik
            .solve_with_parent(&limb.skeleton, &mut pose, goal, &limb.parent);
        assert!(
            rotations[i].iter().all(|q| q.is_finite()),
            "limb {i}: NaN written"
        );
        match (&reports[i], scalar) {
            (Ok(b), Ok(s)) if keep_plane_ill_conditioned(limb, goal) => {
                // The scalar solve's own frame is off by ~1e-5 rad here (one Gram–Schmidt step
                // on a nearly collinear normal; the batch takes two): the flags must agree,
                // the positions need not to 1e-5.
                assert_eq!(
                    (b.reachable, b.pole_fallback),
                    (s.reachable, s.pole_fallback)
                );
            }
            (Ok(b), Ok(s)) => {
                let scalar_rot = limb.ik.bones().map(|b| pose.rotations[b]);
                let (bm, bt, bq) = limb.fk(rotations[i]);
                let (sm, st, sq) = limb.fk(scalar_rot);
                let tol = 1e-5 * scale;
                assert!(
                    bm.distance(sm) < tol && bt.distance(st) < tol,
                    "limb {i} {goal:?}: mid {bm} vs {sm}, tip {bt} vs {st}\n{b:?}\n{s:?}"
                );
                assert!(angle_between(bq, sq) < 1e-4, "limb {i}: tip {bq} vs {sq}");
                assert_eq!(
                    (b.reachable, b.flex_limited, b.pole_fallback),
                    (s.reachable, s.flex_limited, s.pole_fallback),
                    "limb {i} {goal:?}\n{b:?}\n{s:?}"
                );
                assert!((b.flex_angle - s.flex_angle).abs() < 1e-4, "limb {i}");
                assert!(
                    (b.target_distance - s.target_distance).abs() < tol,
                    "limb {i}"
                );
                // The batch's residual is measured by forward kinematics; so is this one.
                let w = goal.position_weight.clamp(0.0, 1.0);
                let target = limb.fk(limb.rotations()).1.lerp(goal.target, w);
                let measured = st.distance(target);
                assert!(
                    (b.position_error - measured).abs() < tol,
                    "limb {i}: {} vs {measured}",
                    b.position_error
                );
            }
            (Err(b), Err(s)) => {
                assert_eq!(*b, s, "limb {i}");
                assert_eq!(
                    format!("{:?}", rotations[i]),
                    format!("{:?}", before[i]),
                    "limb {i}: changed on error"
                );
            }
            (b, s) => panic!("limb {i} {goal:?}: batch {b:?}, scalar {s:?}"),
        }
        limb.pose = pose;
    }
    fallback
}

/// The bench's 1000 goals on 1000 copies of its limb, twice (the second round starts from the
/// first's result, with the goals shifted by one): the same as the scalar solve, and nearly all
/// limbs on the lanes' path (only the degenerate goals take the scalar solve).
#[test]
fn matches_scalar_on_the_bench_goal_mix() {
    let setup = analytic_goals::setup();
    let mut limbs: Vec<_> = setup
        .goals
        .iter()
        .map(|_| Limb::new(setup.skeleton.clone(), setup.ik.clone(), setup.pose.clone()))
        .collect();
    let fallback = compare(&mut limbs, &setup.goals);
    assert!(fallback <= 100, "{fallback} limbs took the scalar solve");
    let mut shifted = setup.goals.clone();
    shifted.rotate_left(1);
    let fallback = compare(&mut limbs, &shifted);
    assert!(fallback <= 100, "{fallback} limbs took the scalar solve");
}

fn rotation() -> impl Strategy<Value = Quat> {
    prop::array::uniform3(-3.0f32..3.0).prop_map(|v| Quat::from_scaled_axis(v.into()))
}

fn direction() -> impl Strategy<Value = Vec3> {
    prop::array::uniform3(-1.0f32..1.0)
        .prop_filter("non-zero", |v| Vec3::from(*v).length() > 0.1)
        .prop_map(|v| Vec3::from(v).normalize())
}

prop_compose! {
    /// A limb with random rest rotations, bone axes (any direction, not one assumed axis),
    /// lengths, scale, settings and incoming pose, and a goal of a random kind.
    fn random_limb()(
        rests in prop::array::uniform4(rotation()),
        axes in prop::array::uniform2(direction()),
        lengths in prop::array::uniform2(0.05f32..2.0),
        scale in 0.5f32..2.0,
        current in prop::array::uniform3(rotation()),
        flex in (0.0f32..0.6, 2.0f32..core::f32::consts::PI),
        soft in prop_oneof![Just(0.0f32), 0.01f32..0.3],
        bend in prop::option::of(direction()),
        target in prop::array::uniform3(-4.0f32..4.0),
        pole in prop::array::uniform3(-4.0f32..4.0),
        orientation in rotation(),
        kind in 0usize..8,
        weights in prop::array::uniform3(0.0f32..1.5),
    ) -> (Limb, LimbGoal) {
        let skeleton = Skeleton::try_new(vec![
            Bone::new("base", None, BoneTransform {
                scale: Vec3::splat(scale),
                ..BoneTransform::from_rotation(rests[0])
            }),
            Bone::new("root", Some(0), BoneTransform::from_translation_rotation(Vec3::Y, rests[1])),
            Bone::new(
                "mid",
                Some(1),
                BoneTransform::from_translation_rotation(axes[0] * lengths[0], rests[2]),
            ),
            Bone::new(
                "tip",
                Some(2),
                BoneTransform::from_translation_rotation(axes[1] * lengths[1], rests[3]),
            ),
        ])
        .unwrap();
        let mut settings = LimbSettings::default()
            .with_flex_limits(flex.0, flex.1)
            .with_soft_reach(soft);
        settings.bend_axis = bend;
        let ik = TwoBoneIk::try_with_settings(&skeleton, 1, 2, 3, settings)
            .or_else(|_| TwoBoneIk::try_new(&skeleton, 1, 2, 3))
            .unwrap();
        let mut pose = skeleton.rest_pose();
        pose.rotations[1] = current[0];
        pose.rotations[2] = current[1];
        pose.rotations[3] = current[2];
        let goal = LimbGoal::new(Vec3::from(target));
        let goal = match kind {
            0 | 1 => goal.with_pole(pole.into()),
            2 => goal.with_pole(pole.into()).with_orientation(orientation),
            3 => goal.with_swivel(pole[0]),
            4 => goal.with_orientation(orientation),
            5 => goal.with_pole(pole.into()).with_weights(weights[0], weights[1], weights[2]),
            6 => goal
                .with_orientation(orientation)
                .with_weights(weights[0], weights[1], weights[2]),
            _ => goal,
        };
        (Limb::new(skeleton, ik, pose), goal)
    }
}

proptest! {
    /// Random rigs (any rest bone axes, lengths, scales, flex limits, soft reach, bend axes),
    /// several per batch so lanes differ, with goals of every kind: the batch gives what the
    /// scalar solve gives, twice in a row.
    #[test]
    fn matches_scalar_on_random_rigs(cases in prop::collection::vec(random_limb(), 1..11)) {
        let (mut limbs, goals): (Vec<_>, Vec<_>) = cases.into_iter().unzip();
        compare(&mut limbs, &goals);
        let shifted: Vec<_> = goals.iter().map(|g| LimbGoal { target: g.target * 0.7, ..*g }).collect();
        compare(&mut limbs, &shifted);
    }
}

/// Bad values in some lanes are those limbs' statuses (the scalar solve's errors), their
/// rotations left unchanged; the other lanes of the same blocks solve normally; no NaN is
/// written, not even for a NaN incoming tip rotation that the scalar solve passes through.
#[test]
fn bad_input_is_a_per_limb_status() {
    let setup = analytic_goals::setup();
    let nan = f32::NAN;
    let good = setup.goals[1];
    let mut goals = vec![good; 9];
    goals[1].target.y = nan;
    goals[3] = good.with_weights(1.0, f32::INFINITY, 1.0);
    goals[6] = good.with_pole(Vec3::new(0.0, nan, 0.0));
    goals[8] = good.with_orientation(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0));
    let mut limbs: Vec<_> = (0..9)
        .map(|_| Limb::new(setup.skeleton.clone(), setup.ik.clone(), setup.pose.clone()))
        .collect();
    limbs[4].parent.translation.x = nan;
    limbs[5].parent.rotation = Quat::from_xyzw(nan, 0.0, 0.0, 1.0);
    let mut tip_nan = limbs[7].pose.clone();
    tip_nan.rotations[setup.ik.bones()[2]] = Quat::from_xyzw(nan, 0.0, 0.0, 1.0);

    let batch = TwoBoneBatch::try_new(limbs.iter().map(|l| (&l.skeleton, &l.ik))).unwrap();
    let parents: Vec<_> = limbs.iter().map(|l| l.parent).collect();
    let mut rotations: Vec<_> = limbs.iter().map(Limb::rotations).collect();
    rotations[7][2] = tip_nan.rotations[setup.ik.bones()[2]];
    let before = rotations.clone();
    let mut reports = vec![Ok(LimbReport::default()); 9];
    batch
        .solve(
            &goals,
            &parents,
            &mut rotations,
            &mut reports,
            &mut BatchScratch::new(),
        )
        .unwrap();
    check_lanes_like_solve(&batch, &goals, &parents, &before, &rotations, &reports, 7);
    for i in [1, 3, 6, 8] {
        assert!(
            matches!(reports[i], Err(AnalyticError::NonFiniteGoal(_))),
            "limb {i}: {:?}",
            reports[i]
        );
    }
    for i in [4, 5, 7] {
        assert_eq!(reports[i], Err(AnalyticError::DegeneratePose), "limb {i}");
    }
    for i in [1, 3, 4, 5, 6, 7, 8] {
        // (Compared as text: the NaN tip is unequal to itself.)
        assert_eq!(
            format!("{:?}", rotations[i]),
            format!("{:?}", before[i]),
            "limb {i}"
        );
    }
    for i in [0, 2] {
        let report = reports[i].as_ref().unwrap();
        assert!(
            report.reachable && report.position_error < 1e-5,
            "{report:?}"
        );
        assert!(rotations[i].iter().all(|q| q.is_finite()));
    }
    // The scalar solve does pass the NaN tip through (the batch's stricter rule is the point).
    let limb = &limbs[7];
    let mut pose = tip_nan;
    assert!(
        limb.ik
            .solve_with_parent(&limb.skeleton, &mut pose, &good, &limb.parent)
            .is_ok()
    );
}

#[test]
fn mismatched_slices_and_twist_bones_are_errors() {
    let setup = analytic_goals::setup();
    let batch = TwoBoneBatch::try_new([(&setup.skeleton, &setup.ik); 3]).unwrap();
    assert_eq!(batch.len(), 3);
    let mut rotations = vec![[Quat::IDENTITY; 3]; 3];
    let mut reports = vec![Ok(LimbReport::default()); 3];
    let e = batch.solve(
        &setup.goals[..2],
        &[setup.parent; 3],
        &mut rotations,
        &mut reports,
        &mut BatchScratch::new(),
    );
    assert_eq!(
        e,
        Err(BatchError::LengthMismatch {
            limbs: 3,
            slice: "goals",
            found: 2
        })
    );
    // The resident lanes: sized for another batch, or a limb out of range.
    let e = batch.solve_lanes(
        &LaneGoals::new(3),
        &mut LanePoses::new(4),
        None,
        &mut BatchScratch::new(),
    );
    assert_eq!(
        e,
        Err(BatchError::LengthMismatch {
            limbs: 3,
            slice: "poses",
            found: 4
        })
    );
    let e = batch.solve_lanes(
        &LaneGoals::new(3),
        &mut LanePoses::new(3),
        Some(&mut reports[..2]),
        &mut BatchScratch::new(),
    );
    assert!(matches!(
        e,
        Err(BatchError::LengthMismatch {
            slice: "reports",
            ..
        })
    ));
    let out_of_range = BatchError::IndexOutOfRange { index: 3, limbs: 3 };
    assert_eq!(
        LaneGoals::new(3).set(3, &setup.goals[0]),
        Err(out_of_range.clone())
    );
    assert_eq!(
        LanePoses::new(3).set(3, &setup.parent, [Quat::IDENTITY; 3]),
        Err(out_of_range.clone())
    );
    assert_eq!(LanePoses::new(3).rotations(3), Err(out_of_range));
    assert_eq!(LanePoses::new(3).error(3), None);
    // clavicle → forearm → hand has the upper arm between root and mid.
    let twist = TwoBoneIk::try_new(&setup.skeleton, 2, 4, 5).unwrap();
    assert_eq!(
        TwoBoneBatch::try_new([(&setup.skeleton, &setup.ik), (&setup.skeleton, &twist)])
            .unwrap_err(),
        BatchError::BonesBetween { limb: 1 }
    );
}

use crate::alloc;

/// After set-up, solving (lanes and scalar fallback alike, errors included) allocates nothing.
#[test]
fn solving_does_not_allocate() {
    let setup = analytic_goals::setup();
    let n = setup.goals.len();
    let batch = TwoBoneBatch::try_new((0..n).map(|_| (&setup.skeleton, &setup.ik))).unwrap();
    let mut goals = setup.goals.clone();
    goals[5].target.x = f32::NAN;
    goals[17] = goals[17].with_swivel(0.4).with_weights(0.5, 0.5, 0.5);
    let parents = vec![setup.parent; n];
    let mut rotations = vec![[Quat::IDENTITY; 3]; n];
    let mut reports = vec![Ok(LimbReport::default()); n];
    let mut scratch = BatchScratch::new();
    let ((), allocations) = alloc::allocations_during(|| {
        for _ in 0..3 {
            batch
                .solve(&goals, &parents, &mut rotations, &mut reports, &mut scratch)
                .unwrap();
        }
    });
    assert_eq!(allocations, 0);
    assert!(reports[5].is_err() && reports[17].is_ok());

    // The resident lanes, with and without reports.
    let mut lane_goals = LaneGoals::new(n);
    let mut poses = LanePoses::new(n);
    let ((), allocations) = alloc::allocations_during(|| {
        for round in 0..3 {
            for (i, goal) in goals.iter().enumerate() {
                lane_goals.set(i, goal).unwrap();
                poses.set(i, &parents[i], [Quat::IDENTITY; 3]).unwrap();
            }
            let reports = (round == 1).then_some(reports.as_mut_slice());
            batch
                .solve_lanes(&lane_goals, &mut poses, reports, &mut scratch)
                .unwrap();
            assert!(poses.rotations(17).unwrap()[0].is_finite());
        }
    });
    assert_eq!(allocations, 0);
    assert!(poses.error(5).is_some() && poses.error(17).is_none());
}

/// Solving a batch in ranges (as threads would split it) gives exactly what one call gives;
/// a range must start on a lane block and stay within the batch.
#[test]
fn ranges_solve_like_the_whole_batch() {
    let setup = analytic_goals::setup();
    let n = 103;
    let batch = TwoBoneBatch::try_new((0..n).map(|_| (&setup.skeleton, &setup.ik))).unwrap();
    let goals = &setup.goals[..n];
    let parents = vec![setup.parent; n];
    let [r, m, t] = setup.ik.bones();
    let start = [
        setup.pose.rotations[r],
        setup.pose.rotations[m],
        setup.pose.rotations[t],
    ];
    let mut whole = vec![start; n];
    let mut whole_reports = vec![Ok(LimbReport::default()); n];
    let mut scratch = BatchScratch::new();
    batch
        .solve(
            goals,
            &parents,
            &mut whole,
            &mut whole_reports,
            &mut scratch,
        )
        .unwrap();
    let mut parts = vec![start; n];
    let mut part_reports = vec![Ok(LimbReport::default()); n];
    let chunk = 3 * TwoBoneBatch::LANES;
    for (c, ((rot, rep), (g, p))) in parts
        .chunks_mut(chunk)
        .zip(part_reports.chunks_mut(chunk))
        .zip(goals.chunks(chunk).zip(parents.chunks(chunk)))
        .enumerate()
    {
        batch
            .solve_range(c * chunk, g, p, rot, rep, &mut scratch)
            .unwrap();
    }
    assert_eq!(format!("{whole:?}"), format!("{parts:?}"));
    assert_eq!(whole_reports, part_reports);
    let mut one = [start];
    let mut one_report = [Ok(LimbReport::default())];
    // Not on a block boundary; past the last limb.
    for first in [1, 104] {
        assert!(matches!(
            batch.solve_range(
                first,
                &goals[..1],
                &parents[..1],
                &mut one,
                &mut one_report,
                &mut scratch
            ),
            Err(BatchError::IndexOutOfRange { .. })
        ));
    }
}

/// Poles nearly collinear with the target (the scalar solve re-orthogonalises the bend normal
/// there) and orientations of huge or tiny norm (bad goals for the scalar solve): the batch
/// agrees, in its lanes for the former.
#[test]
fn near_collinear_poles_and_extreme_orientations_match_scalar() {
    let setup = analytic_goals::setup();
    let shoulder = setup.skeleton.model_transform(&setup.pose, 3).translation;
    let mut goals = Vec::new();
    for (i, sin) in [3e-3f32, 1e-3, 3e-4, 1e-4, 3e-5].into_iter().enumerate() {
        let dir = Quat::from_rotation_y(i as f32) * Vec3::new(0.6, 0.3, 0.2).normalize();
        let side = dir.any_orthonormal_vector();
        let target = shoulder + dir * 0.4;
        for far in [0.5f32, 2.0, 40.0] {
            goals.push(LimbGoal::new(target).with_pole(shoulder + (dir + side * sin) * far));
        }
    }
    let o = Quat::from_rotation_x(0.3);
    for scale in [1e-7f32, 2e6, 0.5] {
        goals.push(
            LimbGoal::new(shoulder + Vec3::new(0.2, 0.1, 0.3))
                .with_pole(shoulder + Vec3::Z)
                .with_orientation(Quat::from_vec4(glam::Vec4::from(o) * scale)),
        );
    }
    let mut limbs: Vec<_> = goals
        .iter()
        .map(|_| Limb::new(setup.skeleton.clone(), setup.ik.clone(), setup.pose.clone()))
        .collect();
    let fallback = compare(&mut limbs, &goals);
    // Only the two bad orientations take the scalar solve.
    assert_eq!(fallback, 2);
}

/// The rare routes of the target frame, in lanes: a target at the root (the frame aimed at the
/// incoming tip) and targets near and far, each with `Pole::Keep` (the incoming bend plane),
/// with and without an orientation, with a pole, a pole at the root and a pole collinear with
/// the target (the incoming plane, flagged as a pole fallback); and a pole so far that the
/// scaled frame's products would leave f32's range (taken by the scalar solve): all as the
/// scalar solve gives them, from two incoming poses (the rest pose, then the scalar's result).
#[test]
fn rare_target_frames_match_scalar() {
    let setup = analytic_goals::setup();
    let shoulder = setup.skeleton.model_transform(&setup.pose, 3).translation;
    let dir = Vec3::new(0.6, 0.3, 0.2).normalize();
    let o = Quat::from_rotation_x(0.7);
    let mut goals = Vec::new();
    for target in [0.0f32, 0.05, 0.4, 2.0].map(|d| shoulder + dir * d) {
        let goal = LimbGoal::new(target);
        goals.extend([
            goal,
            goal.with_orientation(o),
            goal.with_pole(shoulder + Vec3::Z * 0.5),
            goal.with_pole(shoulder),
            goal.with_pole(shoulder + dir * 1.5).with_orientation(o),
            goal.with_pole(shoulder + Vec3::Z * 1e17),
        ]);
    }
    let mut limbs: Vec<_> = goals
        .iter()
        .map(|_| Limb::new(setup.skeleton.clone(), setup.ik.clone(), setup.pose.clone()))
        .collect();
    // Only the poles 1e17 away whose frame's products would pass 1e30 take the scalar solve:
    // for the targets 0.4 and 2 from the root, and for the target at the root from the rest
    // pose (the frame on the incoming tip's direction; the second round comes in folded, the
    // tip near the root, and the products stay in range).
    for expected in [3, 2] {
        assert_eq!(compare(&mut limbs, &goals), expected);
    }
}

/// `LaneGoals` rewritten in place (orientations taken off every goal, then put back on some)
/// solve exactly like lanes written once with the same goals: the solve skips the tips' work
/// only while no goal has an orientation, and then keeps the incoming tip rotations.
#[test]
fn rewritten_goal_lanes_solve_like_fresh_ones() {
    let setup = analytic_goals::setup();
    let n = setup.goals.len();
    let batch =
        TwoBoneBatch::try_new((0..n).map(|_| (&setup.skeleton, &setup.ik))).expect("valid limbs");
    let incoming = setup.ik.bones().map(|b| setup.pose.rotations[b]);
    let solve = |goals: &LaneGoals| {
        let mut poses = LanePoses::new(n);
        for i in 0..n {
            poses.set(i, &setup.parent, incoming).unwrap();
        }
        batch
            .solve_lanes(goals, &mut poses, None, &mut BatchScratch::new())
            .unwrap();
        (0..n)
            .map(|i| {
                poses
                    .rotations(i)
                    .unwrap()
                    .map(|q| q.to_array().map(f32::to_bits))
            })
            .collect::<Vec<_>>()
    };
    let fresh = |goals: &[LimbGoal]| {
        let mut lanes = LaneGoals::new(n);
        for (i, goal) in goals.iter().enumerate() {
            lanes.set(i, goal).unwrap();
        }
        lanes
    };
    let mut lanes = fresh(&setup.goals);
    assert!(setup.goals.iter().any(|g| g.orientation.is_some()));
    let mut goals = setup.goals.clone();
    // Off every other goal first (some remain), then off all.
    for step in [3, 1] {
        for (i, goal) in goals.iter_mut().enumerate().step_by(step) {
            goal.orientation = None;
            lanes.set(i, goal).unwrap();
        }
        if step == 3 {
            assert!(goals.iter().any(|g| g.orientation.is_some()));
            assert_eq!(solve(&lanes), solve(&fresh(&goals)));
        }
    }
    let rewritten = solve(&lanes);
    assert_eq!(rewritten, solve(&fresh(&goals)));
    let tip = incoming[2].to_array().map(f32::to_bits);
    assert!(rewritten.iter().all(|r| r[2] == tip), "tips kept");
    // Orientations back on every third goal.
    for (i, goal) in goals.iter_mut().enumerate().step_by(3) {
        *goal = goal.with_orientation(Quat::from_rotation_y(0.01 * i as f32));
        lanes.set(i, goal).unwrap();
    }
    let rewritten = solve(&lanes);
    assert_eq!(rewritten, solve(&fresh(&goals)));
    assert!(rewritten.iter().step_by(3).filter(|r| r[2] != tip).count() > n / 6);
}
