//! The guarantees of full-body tracking ([`FullBodySolver::solve`]), measured by forward
//! kinematics of the output on every test-rig convention:
//!
//! * still goals and a still (warm-started) input pose come to rest — feasible or not — and
//!   the output is then bit-identical frame after frame;
//! * no joint ever turns more than [`FullBodySettings::max_turn`] in one frame, and the pose
//!   stays within the limits;
//! * a hand held beyond reach does not drag the other hand, the feet or the pelvis off their
//!   goals (≤ 1 mm);
//! * 6D hand goals moving at the edge of reach and beyond flip no joint.

use glam::{Quat, Vec3};
use ik_core::humanoid::{
    Effector, EffectorGoal, FullBodyGoals, FullBodySettings, FullBodySolver, HumanoidBone as B,
    HumanoidMap, LookAtGoal,
};
use ik_core::pose::Pose;
use ik_core::skeleton::Skeleton;
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

const AXES: [RestAxes; 4] = [
    RestAxes::Identity,
    RestAxes::PlusY,
    RestAxes::PlusX,
    RestAxes::MinusZ,
];
/// Frames each still scenario runs.
const FRAMES: usize = 60;
/// The frame by which a still scenario must be at rest.
const SETTLE: usize = 30;
/// Slack on the turn bound for `f32` round-off of the angle measure (radians).
const ANGLE_EPS: f32 = 1e-4;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
    fn unit(&mut self) -> Vec3 {
        loop {
            let v = Vec3::new(self.next(), self.next(), self.next()) * 2.0 - Vec3::ONE;
            if let Some(n) = v.try_normalize()
                && v.length() <= 1.0
            {
                return n;
            }
        }
    }
}

fn angle(a: Quat, b: Quat) -> f32 {
    2.0 * a.dot(b).abs().min(1.0).acos()
}

/// The largest joint turn between two poses (radians).
fn max_turn(a: &Pose, b: &Pose) -> f32 {
    a.rotations
        .iter()
        .zip(&b.rotations)
        .map(|(&x, &y)| angle(x, y))
        .fold(0.0, f32::max)
}

struct Rig {
    s: Skeleton,
    map: HumanoidMap,
    solver: FullBodySolver,
}

fn rigs() -> Vec<Rig> {
    let mut out = Vec::new();
    for c in RigConvention::ALL {
        for a in AXES {
            let s = test_rig(c, a);
            let (map, _) = HumanoidMap::from_skeleton(&s);
            let solver = FullBodySolver::new(&s, &map).unwrap();
            out.push(Rig { s, map, solver });
        }
    }
    out
}

/// Model-space position of a bone.
fn pos(s: &Skeleton, pose: &Pose, b: usize) -> Vec3 {
    s.model_transforms(pose)[b].translation
}

fn arm_reach(r: &Rig) -> f32 {
    let rest = r.s.rest_pose();
    let m = r.s.model_transforms(&rest);
    let g = |b: B| m[r.map.get(b).unwrap()].translation;
    g(B::LeftUpperArm).distance(g(B::LeftLowerArm)) + g(B::LeftLowerArm).distance(g(B::LeftHand))
}

/// What a still run measured.
struct Still {
    /// The first frame from which the pose never changed again (bit for bit), if any.
    rest_from: Option<usize>,
    /// The largest joint turn of any frame.
    max_turn: f32,
    /// The largest distance of a watched effector from its goal at the end.
    watched_off: f32,
    in_limits: bool,
}

/// Runs `FRAMES` warm-started solves of still `goals` from `pose`.
fn run_still(r: &mut Rig, mut pose: Pose, goals: &FullBodyGoals, watched: &[Effector]) -> Still {
    let mut rest_from = None;
    let mut max_t = 0.0f32;
    let mut in_limits = true;
    for f in 0..FRAMES {
        let prev = pose.clone();
        r.solver.solve(&r.s, &mut pose, goals).unwrap();
        max_t = max_t.max(max_turn(&prev, &pose));
        in_limits &= r.solver.pose_within_limits(&r.s, &pose, 1e-4);
        let same = prev.rotations == pose.rotations && prev.translations == pose.translations;
        if !same {
            rest_from = None;
        } else if rest_from.is_none() {
            rest_from = Some(f);
        }
    }
    let m = r.s.model_transforms(&pose);
    let watched_off = watched
        .iter()
        .map(|&e| {
            let b = r.solver.effector_bones()[e as usize];
            m[b].translation.distance(goals.get(e).position)
        })
        .fold(0.0, f32::max);
    Still {
        rest_from,
        max_turn: max_t,
        watched_off,
        in_limits,
    }
}

/// Prints one scenario's figures (`cargo test -- --nocapture`): the same test file run on
/// another build gives the same-run comparison.
fn summary(name: &str, runs: &[Still]) {
    let at_rest = runs
        .iter()
        .filter(|s| s.rest_from.is_some_and(|f| f <= SETTLE))
        .count();
    let latest = runs.iter().filter_map(|s| s.rest_from).max();
    let turn = runs.iter().map(|s| s.max_turn).fold(0.0, f32::max);
    let off = runs.iter().map(|s| s.watched_off).fold(0.0, f32::max);
    let out = runs.iter().filter(|s| !s.in_limits).count();
    eprintln!(
        "{name}: {at_rest}/{} runs at rest (bit-identical) by frame {SETTLE}, latest rest frame \
         {latest:?}, largest turn {:.2}°, watched goals ≤ {:.3} mm, {out} runs left the limits",
        runs.len(),
        turn.to_degrees(),
        off * 1e3
    );
}

fn check_still(name: &str, st: &Still, bound: f32) -> Result<(), String> {
    match st.rest_from {
        Some(f) if f <= SETTLE => {}
        other => return Err(format!("{name}: not at rest by frame {SETTLE} ({other:?})")),
    }
    if st.max_turn > bound + ANGLE_EPS {
        return Err(format!(
            "{name}: a joint turned {}°",
            st.max_turn.to_degrees()
        ));
    }
    if !st.in_limits {
        return Err(format!("{name}: left the limits"));
    }
    Ok(())
}

#[test]
fn hand_held_beyond_reach_settles_and_leaves_the_other_goals() {
    let mut failures = Vec::new();
    let mut runs = Vec::new();
    let mut worst_off = 0.0f32;
    for (i, r) in rigs().iter_mut().enumerate() {
        let mut rng = Rng(0x5eed + i as u64);
        let reach = arm_reach(r);
        for run in 0..2 {
            let limits = r.solver.limits().clone();
            let pose = random_pose_within_limits(&r.s, &r.map, &limits, 0.3, &mut || rng.next());
            let mut goals = r.solver.goals_at_pose(&r.s, &pose);
            let shoulder = pos(&r.s, &pose, r.map.get(B::LeftUpperArm).unwrap());
            let beyond = 1.1 + 0.3 * rng.next();
            let hand = goals.get_mut(Effector::LeftHand);
            *hand = EffectorGoal::position(shoulder + rng.unit() * reach * beyond);
            let st = run_still(
                r,
                pose,
                &goals,
                &[
                    Effector::RightHand,
                    Effector::LeftFoot,
                    Effector::RightFoot,
                    Effector::Pelvis,
                ],
            );
            worst_off = worst_off.max(st.watched_off);
            let name = format!("rig {i} run {run}");
            if let Err(e) = check_still(&name, &st, r.solver.settings().max_turn) {
                failures.push(e);
            }
            if st.watched_off > 1e-3 {
                failures.push(format!(
                    "{name}: other goals {} mm off",
                    st.watched_off * 1e3
                ));
            }
            runs.push(st);
        }
    }
    summary("hand 10-40 % beyond reach", &runs);
    assert!(
        failures.is_empty(),
        "{} failures (worst other goal {:.3} mm): {failures:#?}",
        failures.len(),
        worst_off * 1e3
    );
}

#[test]
fn every_effector_at_random_still_places_settles() {
    let mut failures = Vec::new();
    let mut runs = Vec::new();
    for (i, r) in rigs().iter_mut().enumerate() {
        let mut rng = Rng(0xfeed + i as u64);
        let m = r.s.model_transforms(&r.s.rest_pose());
        let hips = m[r.map.get(B::Hips).unwrap()].translation;
        let height = hips.distance(m[r.map.get(B::Head).unwrap()].translation)
            + hips.distance(m[r.map.get(B::LeftFoot).unwrap()].translation);
        for run in 0..2 {
            let mut goals = FullBodyGoals::default();
            for e in Effector::ALL {
                let p = hips
                    + (Vec3::new(rng.next(), rng.next(), rng.next()) * 2.0 - Vec3::ONE) * height;
                let q = Quat::from_scaled_axis(rng.unit() * 3.0 * rng.next());
                *goals.get_mut(e) = EffectorGoal::new(p, q);
            }
            goals.look_at = LookAtGoal {
                target: hips + rng.unit() * height,
                enabled: true,
                ..LookAtGoal::default()
            };
            let st = run_still(r, r.s.rest_pose(), &goals, &[]);
            if let Err(e) = check_still(
                &format!("rig {i} run {run}"),
                &st,
                r.solver.settings().max_turn,
            ) {
                failures.push(e);
            }
            runs.push(st);
        }
    }
    summary("every effector and the look-at random", &runs);
    assert!(
        failures.is_empty(),
        "{} failures: {failures:#?}",
        failures.len()
    );
}

#[test]
fn six_d_hands_at_the_edge_of_reach_never_flip_a_joint() {
    let mut worst = 0.0f32;
    let mut outside = 0;
    for (i, r) in rigs().iter_mut().enumerate() {
        let reach = arm_reach(r);
        let mut pose = r.s.rest_pose();
        let base = r.solver.goals_at_pose(&r.s, &pose);
        let m = r.s.model_transforms(&pose);
        let sl = m[r.map.get(B::LeftUpperArm).unwrap()].translation;
        let sr = m[r.map.get(B::RightUpperArm).unwrap()].translation;
        let mut rng = Rng(0xabc + i as u64);
        let (mut dl, mut dr) = (rng.unit(), rng.unit());
        for f in 0..240 {
            // Directions wander; the distance sweeps 95–105 % of the arm, now and then far out.
            dl = (dl + rng.unit() * 0.15).normalize();
            dr = (dr + rng.unit() * 0.15).normalize();
            let t = f as f32 * 0.05;
            let k = if f % 60 < 10 {
                1.6
            } else {
                1.0 + 0.05 * t.sin()
            };
            let mut goals = base;
            *goals.get_mut(Effector::LeftHand) = EffectorGoal::new(
                sl + dl * reach * k,
                Quat::from_scaled_axis(Vec3::new(t.sin(), t.cos(), 0.5 * t) * 1.5),
            );
            *goals.get_mut(Effector::RightHand) = EffectorGoal::new(
                sr + dr * reach * k,
                Quat::from_scaled_axis(Vec3::new(t.cos(), 0.7 * t, t.sin()) * 1.5),
            );
            let prev = pose.clone();
            r.solver.solve(&r.s, &mut pose, &goals).unwrap();
            worst = worst.max(max_turn(&prev, &pose));
            outside += usize::from(!r.solver.pose_within_limits(&r.s, &pose, 1e-4));
        }
    }
    eprintln!(
        "6D hands at 95-105 % of the arm and 1.6x: largest turn {:.2}°, {outside} frames outside the limits",
        worst.to_degrees()
    );
    let bound = FullBodySettings::default().max_turn;
    assert!(bound <= 15f32.to_radians() + 1e-6);
    assert!(
        worst <= bound + ANGLE_EPS,
        "largest turn in one frame {}°",
        worst.to_degrees()
    );
    assert_eq!(outside, 0, "frames outside the limits");
}

#[test]
fn reachable_still_goals_are_met_and_then_bit_identical() {
    let mut failures = Vec::new();
    let mut runs = Vec::new();
    let mut met = 0;
    let mut total = 0;
    for (i, r) in rigs().iter_mut().enumerate() {
        let mut rng = Rng(0x77 + i as u64);
        let limits = r.solver.limits().clone();
        let start = random_pose_within_limits(&r.s, &r.map, &limits, 0.3, &mut || rng.next());
        let target = random_pose_within_limits(&r.s, &r.map, &limits, 0.3, &mut || rng.next());
        let goals = r.solver.goals_at_pose(&r.s, &target);
        let st = run_still(r, start.clone(), &goals, &[]);
        if let Err(e) = check_still(&format!("rig {i}"), &st, r.solver.settings().max_turn) {
            failures.push(e);
        }
        runs.push(st);
        let mut pose = start;
        let mut last = None;
        for _ in 0..FRAMES {
            last = Some(r.solver.solve(&r.s, &mut pose, &goals).unwrap());
        }
        total += 1;
        let last = last.unwrap();
        met += usize::from(last.converged);
    }
    summary("reachable", &runs);
    eprintln!("reachable: {met}/{total} goal sets met after {FRAMES} frames");
    assert!(
        failures.is_empty(),
        "{} failures: {failures:#?}",
        failures.len()
    );
    assert!(
        met * 20 >= total * 19,
        "only {met} of {total} reachable goal sets met"
    );
}

/// Per-bone stiffness ([`FullBodySettings::stiffness`]): a hand held 20 % beyond reach pulls
/// the trunk (pull 1). With the spine, chest and upper chest at stiffness 1 they are
/// bit-identical from the first output on (the first solve may clamp the input into the
/// limits); at 0.5 they still move; a stiffness that is not a number acts as 0 (the same
/// output bit for bit). How far a half-stiff trunk turns is not compared with a free one:
/// the acceptance rule makes the frame-to-frame paths differ (measured: less on 7 of 11
/// rigs, more on 4).
#[test]
fn stiffness_holds_the_trunk() {
    let trunk = [B::Spine, B::Chest, B::UpperChest];
    let (mut pulled, mut half_moved) = (0, 0);
    for (i, r) in rigs().iter_mut().enumerate() {
        let mut rng = Rng(0x57_1ff + i as u64);
        let reach = arm_reach(r);
        let limits = r.solver.limits().clone();
        let start = random_pose_within_limits(&r.s, &r.map, &limits, 0.3, &mut || rng.next());
        let mut goals = r.solver.goals_at_pose(&r.s, &start);
        let shoulder = pos(&r.s, &start, r.map.get(B::LeftUpperArm).unwrap());
        let hand = pos(&r.s, &start, r.map.get(B::LeftHand).unwrap());
        let dir = (hand - shoulder).normalize();
        *goals.get_mut(Effector::LeftHand) = EffectorGoal::position(shoulder + dir * reach * 1.2);
        let bones: Vec<usize> = trunk.iter().filter_map(|&b| r.map.get(b)).collect();
        // The trunk's summed turn from the first output to the 20th, and the last pose.
        let run = |r: &mut Rig, stiffness: f32| {
            let mut solver = r.solver.clone();
            for b in trunk {
                solver.settings_mut().stiffness[b.index()] = stiffness;
            }
            let mut pose = start.clone();
            solver.solve(&r.s, &mut pose, &goals).unwrap();
            let first = pose.clone();
            for _ in 1..20 {
                solver.solve(&r.s, &mut pose, &goals).unwrap();
            }
            assert!(pose.is_finite(), "rig {i}, stiffness {stiffness}");
            // (Bit for bit first: `angle` reads two equal rotations up to 7e-4 rad apart.)
            let turn = bones
                .iter()
                .filter(|&&b| first.rotations[b] != pose.rotations[b])
                .map(|&b| angle(first.rotations[b], pose.rotations[b]))
                .sum::<f32>();
            (turn, pose)
        };
        let (free, free_pose) = run(r, 0.0);
        let (half, _) = run(r, 0.5);
        let (held, _) = run(r, 1.0);
        let (_, nan_pose) = run(r, f32::NAN);
        assert_eq!(held, 0.0, "rig {i}: a stiffness-1 trunk turned");
        assert!(
            nan_pose == free_pose,
            "rig {i}: NaN stiffness differs from 0"
        );
        pulled += usize::from(free > 1e-3);
        half_moved += usize::from(half > 1e-3);
    }
    // Not vacuous: the out-of-reach hand turns a free or half-stiff trunk on most rigs.
    assert!(
        pulled >= 12 && half_moved >= 12,
        "{pulled} / {half_moved} rigs"
    );
}
