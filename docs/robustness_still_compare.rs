//! Same-run comparison tool (not part of the suite): the still-goal scenarios of
//! `tests/support/robustness.rs` on the 24 test rigs, written against the API both today's
//! tree and commit 9485701 have (no gameplay support, no CC0 loader). Prints one line per kind.
use ik_core::glam::{Quat, Vec3};
use ik_core::humanoid::{
    BodyFrame, Effector, FullBodyGoals, FullBodySolver, HumanoidBone as B, HumanoidMap, RestAxes,
    RigConvention, random_pose_within_limits, test_rig,
};
use ik_core::{Pose, Skeleton};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    }
    fn signed(&mut self) -> f32 {
        2.0 * self.next() - 1.0
    }
    fn vec(&mut self) -> Vec3 {
        Vec3::new(self.signed(), self.signed(), self.signed())
    }
}

fn angle_deg(a: Quat, b: Quat) -> f32 {
    let d = a.conjugate() * b;
    (2.0 * Vec3::new(d.x, d.y, d.z).length().atan2(d.w.abs())).to_degrees()
}

const ARMS: [[B; 3]; 2] = [
    [B::LeftUpperArm, B::LeftLowerArm, B::LeftHand],
    [B::RightUpperArm, B::RightLowerArm, B::RightHand],
];

fn err(
    sk: &Skeleton,
    s: &FullBodySolver,
    pose: &Pose,
    g: &FullBodyGoals,
    k: usize,
    scale: f32,
) -> f32 {
    let model = sk.model_transforms(pose);
    let e = &g.effectors[k];
    let m = model[s.effector_bones()[k]];
    let p = if e.position_weight > 0.0 {
        m.translation.distance(e.position) / (1e-3 * scale)
    } else {
        0.0
    };
    let r = if e.rotation_weight > 0.0 {
        m.rotation.angle_between(e.rotation).to_degrees()
    } else {
        0.0
    };
    p.max(r)
}

#[test]
fn still_compare() {
    let frames: usize = std::env::var("STILL_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let seeds: usize = std::env::var("STILL_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(36);
    let mut rigs = Vec::new();
    for c in RigConvention::ALL {
        for a in [
            RestAxes::Identity,
            RestAxes::PlusY,
            RestAxes::PlusX,
            RestAxes::MinusZ,
        ] {
            let sk = test_rig(c, a);
            let (map, _) = HumanoidMap::from_skeleton(&sk);
            rigs.push((format!("{c:?}/{a:?}"), sk, map));
        }
    }
    for kind in 0..4 {
        let (
            mut runs,
            mut settled,
            mut stationary,
            mut never,
            mut max_turn,
            mut late,
            mut over15,
            mut over20,
            mut others_bad,
            mut others,
        ) = (0, 0, 0, 0, 0.0f32, 0.0f32, 0, 0, 0, 0.0f32);
        for (r, (_, sk, map)) in rigs.iter().enumerate() {
            let mut solver = FullBodySolver::new(sk, map).unwrap();
            let frame = BodyFrame::from_rest(sk, map).unwrap();
            let rest = sk.rest_model_transforms();
            let at = |b: B| rest[map.get(b).unwrap()].translation;
            let scale = (at(B::LeftUpperLeg).distance(at(B::LeftLowerLeg))
                + at(B::LeftLowerLeg).distance(at(B::LeftFoot)))
                / 0.9;
            let height = at(B::Head).dot(frame.up)
                - at(B::LeftFoot)
                    .dot(frame.up)
                    .min(at(B::RightFoot).dot(frame.up));
            let arms = ARMS.map(|[u, l, h]| at(u).distance(at(l)) + at(l).distance(at(h)));
            for k in 0..seeds {
                let seed = (r as u64 + 1) * 0x1_0000 + k as u64 * 0x100 + 1;
                let mut rng = Rng(seed);
                let target =
                    random_pose_within_limits(sk, map, solver.limits(), 0.6, &mut || rng.next());
                let other =
                    random_pose_within_limits(sk, map, solver.limits(), 0.6, &mut || rng.next());
                let mut start = target.clone();
                start.blend_toward(&other, 0.35);
                let mut goals = solver.goals_at_pose(sk, &target);
                if seed % 2 == 0 {
                    goals.get_mut(Effector::LeftHand).rotation_weight = 0.0;
                    goals.get_mut(Effector::RightHand).rotation_weight = 0.0;
                }
                let model = sk.model_transforms(&target);
                let side = usize::from(rng.next() < 0.5);
                let hand = [Effector::LeftHand, Effector::RightHand][side];
                let shoulder = model[map.get(ARMS[side][0]).unwrap()].translation;
                let mut infeasible = None;
                match kind {
                    1 => {
                        let g = goals.get_mut(hand);
                        let dir = (g.position - shoulder)
                            .try_normalize()
                            .unwrap_or(frame.forward);
                        let f = 0.1 + 0.3 * rng.next();
                        g.position = shoulder + dir * arms[side] * (1.0 + f);
                        infeasible = Some(side);
                    }
                    2 => {
                        let dir = loop {
                            if let Some(d) = rng.vec().try_normalize() {
                                break d;
                            }
                        };
                        let f = 1.0 + 2.0 * rng.next();
                        goals.get_mut(hand).position = shoulder + dir * arms[side] * f;
                        infeasible = Some(side);
                    }
                    3 => {
                        let centre = model[map.get(B::Hips).unwrap()].translation;
                        for g in &mut goals.effectors {
                            g.position = centre + rng.vec() * height;
                            g.rotation = Quat::from_scaled_axis(rng.vec() * core::f32::consts::PI)
                                .normalize();
                        }
                        goals.look_at.target = centre + rng.vec() * height;
                    }
                    _ => {}
                }
                let mut s = FullBodySolver::new(sk, map).unwrap();
                let mut pose = start.clone();
                let mut prev = pose.clone();
                let (mut last_moving, mut last_change, mut oe) = (0, 0, 0.0f32);
                for f in 0..frames {
                    prev.copy_from(&pose);
                    let _ = s.solve(sk, &mut pose, &goals);
                    let mut turn = 0.0f32;
                    for (a, b) in prev.rotations.iter().zip(&pose.rotations) {
                        let t = angle_deg(*a, *b);
                        over15 += usize::from(t > 15.0);
                        over20 += usize::from(t > 20.0);
                        turn = turn.max(t);
                    }
                    max_turn = max_turn.max(turn);
                    if f >= 30 {
                        late = late.max(turn);
                    }
                    if turn > 0.01 {
                        last_moving = f;
                    }
                    if pose != prev {
                        last_change = f;
                    }
                    if let Some(side) = infeasible
                        && f >= 30
                    {
                        for e in (0..5).filter(|&e| e != side) {
                            oe = oe.max(err(sk, &s, &pose, &goals, e, scale));
                        }
                    }
                }
                runs += 1;
                settled += usize::from(last_change + 1 < frames && last_change <= 30);
                if last_moving + 1 < frames {
                    stationary += usize::from(last_moving + 1 <= 30);
                } else {
                    never += 1;
                }
                others = others.max(oe);
                others_bad += usize::from(oe > 1.0);
            }
        }
        println!(
            "kind {kind}: runs {runs} settled {settled} stationary<=30 {stationary} never {never} max turn {max_turn:.1} after30 {late:.2} >15 {over15} >20 {over20} others>1 {others_bad} ({others:.2})"
        );
    }
}
