//! Property test: arbitrary goal sets (far, degenerate, partly disabled, odd weights) never
//! produce NaN or a limit violation, and a solve never returns a pose with a higher cost than
//! the one it started from.

use glam::{Quat, Vec3};
use ik_core::humanoid::{
    CenterOfMassGoal, EffectorGoal, FullBodyGoals, FullBodySolver, GoalFrame, HumanoidMap,
    LookAtGoal,
};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};
use proptest::prelude::*;

fn vec3(range: f32) -> impl Strategy<Value = Vec3> {
    (-range..range, -range..range, -range..range).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

fn quat() -> impl Strategy<Value = Quat> {
    vec3(3.0).prop_map(Quat::from_scaled_axis)
}

fn effector() -> impl Strategy<Value = EffectorGoal> {
    (
        vec3(3.0),
        quat(),
        0.0f32..4.0,
        0.0f32..4.0,
        any::<bool>(),
        0u8..3,
    )
        .prop_map(|(p, q, wp, wr, on, priority)| EffectorGoal {
            position: p + Vec3::Y,
            rotation: q,
            position_weight: wp,
            rotation_weight: wr,
            enabled: on,
            priority,
            frame: GoalFrame::Model,
        })
}

fn goals() -> impl Strategy<Value = FullBodyGoals> {
    (
        prop::array::uniform5(effector()),
        vec3(3.0),
        any::<bool>(),
        vec3(0.3),
        any::<bool>(),
    )
        .prop_map(|(effectors, look, look_on, com, com_on)| FullBodyGoals {
            effectors,
            look_at: LookAtGoal {
                target: look,
                weight: 1.0,
                enabled: look_on,
                ..LookAtGoal::default()
            },
            center_of_mass: CenterOfMassGoal {
                target: com,
                weight: 0.5,
                enabled: com_on,
                ..CenterOfMassGoal::default()
            },
        })
}

/// Per priority level (3 and above together): goal channels met at the default tolerances and
/// summed residuals in tolerances — the order in which cold solves compare results.
fn levels(g: &FullBodyGoals, r: &ik_core::humanoid::FullBodyReport) -> [(u32, f32); 4] {
    let s = ik_core::humanoid::FullBodySettings::default();
    let mut out = [(0u32, 0.0f32); 4];
    let mut add = |p: u8, on: bool, res: f32, tol: f32| {
        if on {
            let l = &mut out[usize::from(p.min(3))];
            if res <= tol {
                l.0 += 1;
            } else {
                l.1 += res / tol;
            }
        }
    };
    for (e, res) in g.effectors.iter().zip(&r.residuals) {
        let on = e.enabled;
        add(
            e.priority,
            on && e.position_weight > 0.0,
            res.position,
            s.position_tolerance,
        );
        add(
            e.priority,
            on && e.rotation_weight > 0.0,
            res.rotation,
            s.rotation_tolerance,
        );
    }
    let (l, c) = (&g.look_at, &g.center_of_mass);
    add(
        l.priority,
        l.enabled && l.weight > 0.0,
        r.look_at,
        s.rotation_tolerance,
    );
    add(
        c.priority,
        c.enabled && c.weight > 0.0,
        r.center_of_mass,
        s.com_tolerance,
    );
    out
}

/// Whether `b` is no worse than `a` by that order (beyond float noise: re-clamping an in-limit
/// pose moves it by rounding).
fn no_worse(a: [(u32, f32); 4], b: [(u32, f32); 4]) -> bool {
    for (x, y) in a.iter().zip(&b) {
        if x.0 != y.0 {
            return y.0 > x.0;
        }
        if (x.1 - y.1).abs() > 1e-4 * (1.0 + x.1.max(y.1)) {
            return y.1 < x.1;
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn arbitrary_goals_stay_finite_in_limits_and_never_worse(g in goals(), twice in any::<bool>()) {
        let s = test_rig(RigConvention::Unreal, RestAxes::MinusZ);
        let (map, _) = HumanoidMap::from_skeleton(&s);
        let mut solver = FullBodySolver::new(&s, &map).unwrap();
        let mut pose = s.rest_pose();
        let first = solver.solve_cold(&s, &mut pose, &g).unwrap();
        prop_assert!(pose.is_finite());
        prop_assert!(first.cost.is_finite());
        prop_assert!(solver.pose_within_limits(&s, &pose, 1e-4));
        if twice {
            let second = solver.solve_cold(&s, &mut pose, &g).unwrap();
            prop_assert!(pose.is_finite());
            prop_assert!(solver.pose_within_limits(&s, &pose, 1e-4));
            // Never worse by the order cold solves use.
            let (a, b) = (levels(&g, &first), levels(&g, &second));
            prop_assert!(no_worse(a, b), "{b:?} after {a:?}");
            // Tracking from there stays finite and in limits.
            let third = solver.solve(&s, &mut pose, &g).unwrap();
            prop_assert!(pose.is_finite() && third.cost.is_finite());
            prop_assert!(solver.pose_within_limits(&s, &pose, 1e-4));
        }
        // Bone lengths (local translations) are untouched except the floating hips.
        let hips = map.get(ik_core::humanoid::HumanoidBone::Hips).unwrap();
        for (i, b) in s.bones().iter().enumerate() {
            if i != hips {
                prop_assert_eq!(pose.translations[i], b.rest.translation);
            }
        }
    }
}
