//! Seeded fuzzing of every public entry point with hostile values (NaN, ±∞, ±1e±30, ±1e19,
//! subnormals, zeros, non-normalised quaternions) mixed into otherwise valid input.
//!
//! Every case runs under `catch_unwind` and asserts: no panic, no NaN/∞ in any returned pose or
//! value the docs promise finite, `Err` only where the docs allow it (malformed set-up,
//! non-finite or out-of-range input), and the pose untouched (bit for bit) on `Err`.
//!
//! `IK_FUZZ_CASES` sets the total number of cases (default 100 000, split between the suites
//! by fixed weights), `IK_FUZZ_SEED` the base seed. A failure prints the suite and the case
//! seed; `IK_FUZZ_REPLAY=<suite>:<case seed>` reruns that one case with the default panic
//! output. See the crate README's "Fuzzing" section.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use glam::{Quat, Vec2, Vec3};
use ik_core::analytic::{LimbGoal, LimbSettings, Pole, TwoBoneIk};
use ik_core::humanoid::{
    CenterOfMassGoal, DetachedFeet, EffectorGoal, FullBodyGoals, FullBodySolver, GoalFrame,
    HumanoidBone, HumanoidError, HumanoidLimits, HumanoidMap, LookAtGoal, MappingOptions,
};
use ik_core::jacobian::{
    AxisMask, BoneMass, JacobianSolver, JointKind, JointSpec, PostureReference, SolverSettings,
    TaskKind, TaskSpec,
};
use ik_core::limits::{JointLimit, SwingTwistLimit};
use ik_core::pose::{BoneTransform, Pose};
use ik_core::rotation::{
    self, BoneFrame, EulerOrder, from_rest_delta, from_rotation_vector, from_swing_twist,
    from_swing_vector_twist, rest_delta, rotation_angle_between, shortest_arc, swing_twist,
    swing_vector, to_rotation_vector, twist_angle,
};
use ik_core::skeleton::{Bone, MAX_COORDINATE, Skeleton};
use ik_core::stack::{PoseBuffer, Stage};
use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

// ---------------------------------------------------------------------------------------------
// Generator
// ---------------------------------------------------------------------------------------------

/// `SplitMix64`: small, seedable, good enough to spread cases.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// A value in `[-r, r]`, or with probability `h` a hostile one.
    fn val(&mut self, r: f32, h: f32) -> f32 {
        if self.chance(h) {
            self.pick(&HOSTILE)
        } else {
            self.range(-r, r)
        }
    }

    fn vec3(&mut self, r: f32, h: f32) -> Vec3 {
        if self.chance(h * 0.3) {
            return self.pick(&[Vec3::ZERO, Vec3::NAN, Vec3::INFINITY, Vec3::splat(1e30)]);
        }
        Vec3::new(self.val(r, h), self.val(r, h), self.val(r, h))
    }

    fn unit_vec3(&mut self) -> Vec3 {
        loop {
            let v = Vec3::new(
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
            );
            if v.length_squared() > 0.01 {
                return v.normalize();
            }
        }
    }

    fn unit_quat(&mut self) -> Quat {
        Quat::from_scaled_axis(self.unit_vec3() * self.range(0.0, 3.2))
    }

    /// A unit quaternion, or with probability `h` a hostile one (zero, scaled, drifted,
    /// non-finite components).
    fn quat(&mut self, h: f32) -> Quat {
        let q = self.unit_quat();
        if !self.chance(h) {
            return q;
        }
        match self.below(5) {
            0 => Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
            1 => Quat::from_vec4(glam::Vec4::from(q) * self.pick(&HOSTILE_SCALES)),
            2 => Quat::from_vec4(glam::Vec4::from(q) * (1.0 + self.range(-1e-4, 1e-4))),
            3 => Quat::from_xyzw(self.val(1.0, 0.5), q.y, self.val(1.0, 0.5), q.w),
            _ => Quat::from_xyzw(self.pick(&HOSTILE), q.y, q.z, q.w),
        }
    }

    /// A hostility level for one case: many cases nearly clean (deep solver paths), some
    /// saturated with bad values.
    fn hostility(&mut self) -> f32 {
        self.pick(&[0.0, 0.01, 0.05, 0.2, 0.6])
    }
}

const HOSTILE: [f32; 20] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1e30,
    -1e30,
    1e-30,
    -1e-30,
    1e-40,
    -1e-40,
    0.0,
    -0.0,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    1e19,
    -1e19,
    1e-6,
    1e6,
    1e15,
    -1e15,
];

const HOSTILE_SCALES: [f32; 8] = [0.0, 1e-20, 1e-3, 2.0, 1e3, 1e20, -1.0, 1e-40];

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Whether this thread runs a case (its panics are recorded, not printed).
    static IN_CASE: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| {
        let s = s.trim().replace('_', "");
        s.strip_prefix("0x")
            .map_or_else(|| s.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
    })
}

fn total_cases() -> u64 {
    env_u64("IK_FUZZ_CASES").unwrap_or(100_000)
}

/// Suite weights (per mille of the total).
const WEIGHTS: [(&str, u64); 8] = [
    ("rotation", 300),
    ("limits", 280),
    ("skeleton", 120),
    ("two_bone", 200),
    ("jacobian", 60),
    ("full_body", 15),
    ("with_limits", 5),
    ("mapper", 20),
];

fn suite_cases(name: &str) -> u64 {
    let w = WEIGHTS.iter().find(|(n, _)| *n == name).expect("suite").1;
    (total_cases() * w).div_ceil(1000)
}

fn case_seed(base: u64, suite: &str, i: u64) -> u64 {
    let mut h = base ^ 0xA076_1D64_78BD_642F;
    for b in suite.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
    }
    let mut r = Rng(h ^ i.wrapping_mul(0xE703_7ED1_A0B4_28DB));
    r.next_u64()
}

/// Runs `count` cases of `suite`, each under `catch_unwind` with its own seeded generator;
/// fails with the first failures' seeds and messages.
fn run_suite(suite: &str, case: impl Fn(&mut Rng)) {
    static HOOK: Once = Once::new();
    if let Ok(replay) = std::env::var("IK_FUZZ_REPLAY") {
        let (s, seed) = replay
            .split_once(':')
            .expect("IK_FUZZ_REPLAY=<suite>:<case seed>");
        if s == suite {
            let seed = seed
                .strip_prefix("0x")
                .map_or_else(|| seed.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
                .expect("case seed");
            case(&mut Rng(seed));
        }
        return;
    }
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CASE.with(core::cell::Cell::get) {
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
            } else {
                default(info);
            }
        }));
    });
    let base = env_u64("IK_FUZZ_SEED").unwrap_or(0x1C0F_FEE5);
    let count = suite_cases(suite);
    let mut failures = Vec::new();
    let mut failed = 0u64;
    for i in 0..count {
        let seed = case_seed(base, suite, i);
        IN_CASE.with(|c| c.set(true));
        let result = catch_unwind(AssertUnwindSafe(|| case(&mut Rng(seed))));
        IN_CASE.with(|c| c.set(false));
        if result.is_err() {
            failed += 1;
            if failures.len() < 8 {
                let msg = LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_default();
                failures.push(format!("IK_FUZZ_REPLAY={suite}:{seed:#x}\n    {msg}"));
            }
        }
    }
    assert!(
        failed == 0,
        "{failed} of {count} `{suite}` cases failed; first ones:\n{}",
        failures.join("\n")
    );
}

/// Bit-exact pose equality (NaN compares equal to itself).
fn same_bits(a: &Pose, b: &Pose) -> bool {
    let q = |p: &Pose| -> Vec<u32> {
        p.rotations
            .iter()
            .flat_map(|q| q.to_array().map(f32::to_bits))
            .chain(
                p.translations
                    .iter()
                    .flat_map(|t| t.to_array().map(f32::to_bits)),
            )
            .collect()
    };
    a.len() == b.len() && q(a) == q(b)
}

/// Finite, and within the coordinate range the crate accepts.
fn sane_vec(v: Vec3) -> bool {
    v.is_finite() && v.abs().max_element() <= MAX_COORDINATE
}

/// A solver's output: finite, unit rotations, translations in range (a goal placed at the
/// edge of the range may put a bone a rounding error beyond it).
fn solved_pose_ok(p: &Pose) -> bool {
    p.rotations.iter().all(|&q| unit_quat_ok(q))
        && p.translations
            .iter()
            .all(|t| t.is_finite() && t.abs().max_element() <= 1.01 * MAX_COORDINATE)
}

fn unit_quat_ok(q: Quat) -> bool {
    q.is_finite() && (q.length() - 1.0).abs() <= 1e-3
}

fn finite_quat(q: Quat) -> bool {
    q.is_finite()
}

// ---------------------------------------------------------------------------------------------
// Rotation toolkit
// ---------------------------------------------------------------------------------------------

#[test]
fn fuzz_rotation_toolkit() {
    run_suite("rotation", |r| {
        let h = r.hostility().max(0.05);
        let (a, b) = (r.quat(h), r.quat(h));
        let (v, axis) = (r.vec3(4.0, h), r.vec3(1.0, h));
        let angle = r.val(10.0, h);
        // Documented to treat zero / non-finite input as identity or zero: finite always.
        assert!(
            rotation_angle_between(a, b).is_finite(),
            "angle_between {a} {b}"
        );
        assert!(finite_quat(rest_delta(a, b)), "rest_delta {a} {b}");
        assert!(
            finite_quat(from_rest_delta(a, b)),
            "from_rest_delta {a} {b}"
        );
        assert!(
            rotation::angle_about_axis(a, axis).is_finite(),
            "{a} {axis}"
        );
        assert!(twist_angle(a, axis).is_finite(), "twist_angle {a} {axis}");
        let (s, t) = swing_twist(a, axis);
        assert!(finite_quat(s) && finite_quat(t), "swing_twist {a} {axis}");
        assert!(swing_vector(a, axis).is_finite(), "swing_vector {a} {axis}");
        let q = from_swing_vector_twist(v, axis, angle);
        assert!(
            unit_quat_ok(q),
            "from_swing_vector_twist {v} {axis} {angle} -> {q}"
        );
        assert!(to_rotation_vector(a).is_finite(), "to_rotation_vector {a}");
        let q = from_rotation_vector(v);
        assert!(unit_quat_ok(q), "from_rotation_vector {v} -> {q}");
        assert!(
            unit_quat_ok(shortest_arc(v, axis)),
            "shortest_arc {v} {axis}"
        );
        let order = r.pick(&EulerOrder::ALL);
        let angles = [r.val(4.0, h), r.val(4.0, h), r.val(4.0, h)];
        let q = rotation::euler_compose(order, angles);
        assert!(unit_quat_ok(q), "euler_compose {order:?} {angles:?} -> {q}");
        let e = rotation::euler_decompose(order, a);
        assert!(
            e.iter().all(|x| x.is_finite()),
            "euler_decompose {order:?} {a}"
        );
        // Pass-through helpers: finite in, finite out.
        let w = rotation::wrap_angle(angle);
        assert!(!angle.is_finite() || (w.is_finite() && w.abs() <= core::f32::consts::PI + 1e-6));
        let n = rotation::normalize_hemisphere(a, b);
        assert!(!a.is_finite() || n.is_finite());
        // Products of finite unit rotations stay finite.
        if unit_quat_ok(a) && unit_quat_ok(b) {
            assert!(finite_quat(from_swing_twist(a, b)));
        }
        // Bone frames.
        let hint = r.vec3(1.0, h);
        if let Ok(frame) = BoneFrame::try_new(axis, hint) {
            for d in [frame.along(), frame.forward(), frame.side()] {
                assert!(
                    d.is_finite() && (d.length() - 1.0).abs() < 1e-3,
                    "frame {axis} {hint}"
                );
            }
            assert!(finite_quat(frame.basis()));
            assert!(finite_quat(frame.delta_to_frame(a)), "delta_to_frame {a}");
            assert!(
                finite_quat(frame.delta_from_frame(a)),
                "delta_from_frame {a}"
            );
            let e = frame.euler_angles(order, a);
            assert!(e.iter().all(|x| x.is_finite()), "frame euler {a}");
            assert!(unit_quat_ok(frame.delta_from_euler(order, angles)));
            let aim = frame.aim(b, order, v, angle);
            assert!(
                finite_quat(aim.delta)
                    && finite_quat(aim.local)
                    && aim.angles.iter().all(|x| x.is_finite()),
                "aim {b} {v} {angle}: {aim:?}"
            );
        } else {
            assert!(
                !axis.is_finite()
                    || !hint.is_finite()
                    || axis.length() < 1e-3
                    || hint.length() < 1e-3
                    || axis.length_squared() > 1e30
                    || hint.length_squared() > 1e30
                    || axis.normalize().cross(hint.normalize()).length() < 1e-2,
                "BoneFrame::try_new({axis}, {hint}) failed"
            );
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

fn random_limit(r: &mut Rng, h: f32) -> JointLimit {
    let range = |r: &mut Rng| {
        let a = r.val(4.0, h);
        let b = a + r.range(0.0, 4.0).max(r.val(7.0, h));
        if r.chance(h) { (b, a) } else { (a, b) }
    };
    let axis = |r: &mut Rng| {
        if r.chance(h) {
            r.vec3(1.0, 0.5)
        } else {
            r.unit_vec3()
        }
    };
    match r.below(5) {
        0 => JointLimit::Free,
        1 => JointLimit::Locked,
        2 => {
            let (min, max) = range(r);
            JointLimit::Hinge {
                axis: axis(r),
                min,
                max,
            }
        }
        3 => {
            let (min, max) = range(r);
            JointLimit::Slider {
                axis: axis(r),
                min,
                max,
            }
        }
        _ => {
            let twist_axis = axis(r);
            let swing_axis = if r.chance(h) {
                axis(r)
            } else {
                twist_axis.any_orthonormal_vector()
            };
            let (twist_min, twist_max) = range(r);
            JointLimit::SwingTwist(SwingTwistLimit {
                twist_axis,
                swing_axis,
                swing_half_angles: Vec2::new(r.val(2.0, h).abs(), r.val(2.0, h)),
                twist_min,
                twist_max,
            })
        }
    }
}

#[test]
fn fuzz_limits() {
    run_suite("limits", |r| {
        let h = r.hostility();
        let limit = random_limit(r, h);
        let rest_r = r.quat(h);
        let rest_t = r.vec3(3.0, h);
        let mut q = r.quat(h);
        let mut t = rest_t + r.vec3(3.0, h);
        let tol = r.pick(&[0.0, 1e-4, 0.5]);
        let inside = limit.contains(rest_r, rest_t, q, t, tol);
        let (q0, t0) = (q, t);
        let moved = limit.clamp(rest_r, rest_t, &mut q, &mut t);
        if !limit.is_valid() {
            assert!(inside && !moved, "malformed limit {limit:?} acts as Free");
            return;
        }
        let bits = |q: Quat, t: Vec3| {
            (
                q.to_array().map(f32::to_bits),
                t.to_array().map(f32::to_bits),
            )
        };
        if !moved {
            assert_eq!(bits(q, t), bits(q0, t0), "unchanged unless moved");
        }
        let finite_in =
            q0.is_finite() && t0.is_finite() && rest_r.is_finite() && rest_t.is_finite();
        if finite_in {
            assert!(
                q.is_finite() && t.is_finite(),
                "{limit:?}: {q0} {t0} -> {q} {t}"
            );
        }
        let sane = unit_quat_ok(rest_r)
            && unit_quat_ok(q0)
            && t0.is_finite()
            && rest_t.is_finite()
            && t0.abs().max_element() < 1e3
            && rest_t.abs().max_element() < 1e3;
        if sane {
            // (Slider offsets are placed to f32 precision of the result.)
            let tol = match limit {
                JointLimit::Slider { .. } => 1e-3 * t.abs().max_element().max(1.0),
                _ => 1e-3,
            };
            assert!(
                limit.contains(rest_r, rest_t, q, t, tol),
                "{limit:?}: clamped {q0} {t0} to {q} {t}, not inside"
            );
            // Clamping again changes nothing.
            let (q1, t1) = (q, t);
            if !limit.clamp(rest_r, rest_t, &mut q, &mut t) {
                assert_eq!(bits(q, t), bits(q1, t1));
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Skeleton construction and forward kinematics
// ---------------------------------------------------------------------------------------------

fn random_rest(r: &mut Rng, h: f32, scale: f32) -> BoneTransform {
    BoneTransform {
        translation: r.vec3(scale, h),
        rotation: r.quat(h),
        scale: if r.chance(h) {
            r.vec3(2.0, 0.5)
        } else {
            Vec3::splat(r.pick(&[1.0, 1.0, 0.5, 2.0, 100.0]))
        },
    }
}

fn random_bones(r: &mut Rng, h: f32, n: usize, ordered: bool) -> Vec<Bone> {
    (0..n)
        .map(|i| {
            let parent = if i == 0 && !r.chance(h) {
                None
            } else if r.chance(h) {
                Some(r.below(n + 2))
            } else if ordered && i > 0 {
                Some(r.below(i))
            } else if r.chance(0.1) {
                None
            } else {
                Some(r.below(n))
            };
            Bone::new(format!("b{i}"), parent, random_rest(r, h, 1.0))
        })
        .collect()
}

fn random_pose(r: &mut Rng, s: &Skeleton, h: f32) -> Pose {
    let mut pose = s.rest_pose();
    for i in 0..pose.len() {
        if r.chance(0.5) {
            pose.rotations[i] = r.quat(h);
        }
        if r.chance(h) {
            pose.translations[i] = r.vec3(1.0, 0.5);
        }
    }
    pose
}

#[test]
fn fuzz_skeleton_and_fk() {
    run_suite("skeleton", |r| {
        let h = r.hostility();
        let n = 1 + r.below(9);
        let ordered = r.chance(0.5);
        let bones = random_bones(r, h, n, ordered);
        let built = if r.chance(0.5) {
            Skeleton::try_new(bones.clone())
        } else {
            Skeleton::try_from_unordered(bones.clone()).map(|(s, _)| s)
        };
        let Ok(s) = built else {
            return;
        };
        // Everything Ok is in range: the rest pose in model space is finite.
        let rest = s.rest_model_transforms();
        assert!(
            rest.iter().all(BoneTransform::is_finite),
            "rest FK of {bones:?}"
        );
        for b in s.bones() {
            assert!(b.rest.is_finite());
        }
        // Chains and directions never panic.
        let (a, b) = (r.below(n + 1), r.below(n + 1));
        let _ = s.chain(a, b);
        let _ = BoneFrame::from_rest(&s, a, b, r.vec3(1.0, h));
        // FK of a valid pose is finite.
        let pose = random_pose(r, &s, h);
        let fk = s.model_transforms(&pose);
        if pose.validate(&s).is_ok() {
            assert!(
                fk.iter().all(BoneTransform::is_finite),
                "FK of a valid pose"
            );
            let i = r.below(n);
            assert!(s.model_transform(&pose, i).is_finite());
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Two-bone IK
// ---------------------------------------------------------------------------------------------

#[test]
fn fuzz_two_bone() {
    run_suite("two_bone", |r| {
        let h = r.hostility();
        let scale = r.pick(&[1e-3, 0.3, 1.0, 100.0, 1e5]);
        let between = r.chance(0.2);
        let mut bones = vec![Bone::new("root", None, random_rest(r, h * 0.2, scale))];
        let mut add = |r: &mut Rng, name: &str| {
            let p = bones.len() - 1;
            let mut rest = random_rest(r, h * 0.3, scale);
            if !r.chance(h) {
                rest.translation = r.unit_vec3() * scale * r.range(0.3, 1.0);
                rest.scale = Vec3::ONE;
            }
            bones.push(Bone::new(name, Some(p), rest));
        };
        add(r, "upper");
        if between {
            add(r, "upper_twist");
        }
        add(r, "lower");
        add(r, "hand");
        let Ok(s) = Skeleton::try_new(bones) else {
            return;
        };
        let n = s.len();
        let (root, mid, tip) = (1, n - 2, n - 1);
        let settings = if r.chance(0.3) {
            LimbSettings {
                flex_min: r.val(1.0, h).abs(),
                flex_max: r.val(3.2, h).abs(),
                soft_reach: r.val(1.0, h).abs(),
                bend_axis: r.chance(0.5).then(|| r.vec3(1.0, h)),
            }
        } else {
            LimbSettings::default()
        };
        let Ok(ik) = TwoBoneIk::try_with_settings(&s, root, mid, tip, settings) else {
            return;
        };
        let shoulder = s.model_transform(&s.rest_pose(), root).translation;
        let target = match r.below(4) {
            0 => shoulder + r.vec3(scale * 3.0, h),
            1 => shoulder + r.unit_vec3() * r.pick(&[0.0, 1e-8, 1e-6, 1e-4]) * scale,
            2 => r.vec3(scale * 1e3, h),
            _ => shoulder + r.unit_vec3() * scale * r.range(0.0, 2.0),
        };
        let mut goal = LimbGoal::new(target);
        goal.pole = match r.below(4) {
            0 => Pole::Keep,
            1 => Pole::Swivel(r.val(7.0, h)),
            2 => Pole::Position(shoulder + (target - shoulder) * r.range(-2.0, 2.0)),
            _ => Pole::Position(shoulder + r.vec3(scale * 2.0, h)),
        };
        if r.chance(0.4) {
            goal.orientation = Some(r.quat(h));
        }
        if r.chance(0.3) {
            goal.position_weight = r.val(1.5, h);
            goal.rotation_weight = r.val(1.5, h);
            goal.pole_weight = r.val(1.5, h);
        }
        let mut pose = random_pose(r, &s, h);
        let before = pose.clone();
        let use_parent = r.chance(0.5);
        let parent = BoneTransform {
            translation: r.vec3(scale, h),
            rotation: r.quat(h),
            scale: if r.chance(h) {
                r.vec3(2.0, 0.5)
            } else {
                Vec3::ONE
            },
        };
        let result = if use_parent {
            ik.solve_with_parent(&s, &mut pose, &goal, &parent)
        } else {
            ik.solve(&s, &mut pose, &goal)
        };
        let goal_finite = goal.target.is_finite()
            && goal
                .orientation
                .is_none_or(|q| (1e-12..=1e12).contains(&q.length_squared()))
            && match goal.pole {
                Pole::Position(p) => p.is_finite(),
                Pole::Swivel(a) => a.is_finite(),
                Pole::Keep => true,
            }
            && goal.position_weight.is_finite()
            && goal.rotation_weight.is_finite()
            && goal.pole_weight.is_finite();
        let parent_ok = !use_parent
            || (sane_vec(parent.translation)
                && unit_quat_ok(parent.rotation)
                && parent.scale.is_finite()
                && parent.scale.min_element() > 0.1
                && parent.scale.max_element() < 10.0);
        // A pose translation may collapse a segment (documented as `DegeneratePose`).
        let limb_rest = (1..n).all(|i| before.translations[i] == s.bones()[i].rest.translation);
        let inputs_ok = goal_finite
            && limb_rest
            && sane_vec(goal.target)
            && parent_ok
            && before.validate(&s).is_ok()
            && match goal.pole {
                Pole::Position(p) => sane_vec(p),
                _ => true,
            };
        match result {
            Ok(report) => {
                let limb_finite = [root, mid, tip]
                    .iter()
                    .all(|&b| pose.rotations[b].is_finite());
                // Bones other than the limb's are passed through untouched.
                assert!(
                    limb_finite || !before.is_finite(),
                    "Ok with a non-finite limb rotation: {goal:?}"
                );
                if before.validate(&s).is_ok() {
                    assert!(pose.is_finite(), "Ok with a non-finite pose: {goal:?}");
                    assert!(
                        report.position_error.is_finite() || !inputs_ok,
                        "{report:?}"
                    );
                }
            }
            Err(e) => {
                assert!(same_bits(&pose, &before), "pose changed on Err({e})");
                assert!(
                    !inputs_ok,
                    "Err({e}) for valid input: {goal:?}, parent {parent:?}"
                );
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Jacobian solver
// ---------------------------------------------------------------------------------------------

fn random_chain(r: &mut Rng, h: f32) -> Option<Skeleton> {
    let n = 3 + r.below(5);
    let scale = r.pick(&[0.01, 1.0, 1.0, 100.0]);
    let bones = (0..n)
        .map(|i| {
            let parent = if i == 0 {
                None
            } else if r.chance(0.2) {
                Some(r.below(i))
            } else {
                Some(i - 1)
            };
            let mut rest = BoneTransform::from_translation(r.unit_vec3() * scale);
            if r.chance(0.5) {
                rest.rotation = r.unit_quat();
            }
            if r.chance(h) {
                rest = random_rest(r, h, scale);
            }
            Bone::new(format!("j{i}"), parent, rest)
        })
        .collect();
    Skeleton::try_new(bones).ok()
}

fn random_joint(r: &mut Rng, h: f32, bone: usize) -> JointSpec {
    let axis = if r.chance(h) {
        r.vec3(1.0, 0.5)
    } else {
        r.unit_vec3()
    };
    let mut j = match r.below(6) {
        0 => JointSpec::hinge(bone, axis, -r.range(0.0, 3.0), r.range(0.0, 3.0)),
        1 => JointSpec::slider(bone, axis, -r.range(0.0, 1.0), r.range(0.0, 1.0)),
        2 => JointSpec::floating(bone),
        3 => JointSpec::fixed(bone),
        _ => JointSpec::ball(bone),
    };
    if r.chance(0.4) {
        let limit = random_limit(r, h);
        j = j.with_limit(match (j.kind, limit) {
            // Mostly limits that fit the kind.
            (JointKind::Hinge { axis }, JointLimit::Hinge { min, max, .. }) if !r.chance(h) => {
                JointLimit::Hinge { axis, min, max }
            }
            _ => limit,
        });
    }
    if r.chance(h) {
        j = j.with_stiffness(r.val(3.0, 0.5));
    } else if r.chance(0.2) {
        j = j.with_stiffness(r.range(0.1, 10.0));
    }
    j.with_locked(r.chance(0.05))
}

fn random_task(r: &mut Rng, h: f32, n: usize, joints: usize) -> TaskSpec {
    let bone = if r.chance(h * 0.2) {
        n + r.below(3)
    } else {
        r.below(n)
    };
    let mask = || AxisMask::ALL;
    let kind = match r.below(6) {
        0 | 1 => TaskKind::Position {
            bone,
            local_point: r.vec3(0.5, h),
            axes: mask(),
        },
        2 => TaskKind::Orientation { bone, axes: mask() },
        3 => TaskKind::LookAt {
            bone,
            local_axis: r.vec3(1.0, h),
        },
        4 => TaskKind::CenterOfMass {
            masses: (0..1 + r.below(n))
                .map(|_| BoneMass {
                    bone: r.below(n),
                    mass: r.val(5.0, h).abs(),
                    local_center: r.vec3(0.5, h),
                })
                .collect(),
            up: r.vec3(1.0, h),
        },
        _ => TaskKind::Posture {
            reference: if r.chance(0.5) {
                PostureReference::Rest
            } else {
                PostureReference::Incoming
            },
            joint_weights: (0..joints).map(|_| r.val(1.0, h).abs()).collect(),
            gain: r.val(1.0, h).abs(),
        },
    };
    let mut t = TaskSpec::new(kind).at_level(r.below(3) as u8);
    if r.chance(h) {
        t = t.with_weight(r.val(2.0, 0.5));
    }
    t
}

#[test]
fn fuzz_jacobian() {
    run_suite("jacobian", |r| {
        let h = r.hostility();
        let Some(s) = random_chain(r, h) else {
            return;
        };
        let n = s.len();
        let mut bones: Vec<usize> = (0..n).collect();
        let joints: Vec<JointSpec> = (0..1 + r.below(n))
            .filter_map(|_| {
                if bones.is_empty() {
                    return None;
                }
                let b = bones.swap_remove(r.below(bones.len()));
                Some(random_joint(r, h, b))
            })
            .collect();
        let tasks: Vec<TaskSpec> = (0..1 + r.below(3))
            .map(|_| random_task(r, h, n, joints.len()))
            .collect();
        let mut settings = SolverSettings {
            max_iterations: 1 + r.below(24) as u32,
            ..SolverSettings::default()
        };
        if r.chance(h) {
            settings.length_scale = Some(r.val(10.0, 0.5));
            settings.min_damping = r.val(1.0, 0.5);
            settings.max_step_angle = r.val(1.0, 0.5);
        }
        let Ok(solver) = JacobianSolver::try_new(&s, joints, tasks, settings) else {
            return;
        };
        let mut goals = solver.goals();
        let mut targets_ok = true;
        let fk = s.rest_model_transforms();
        for g in &mut goals.tasks {
            let reach = fk
                .iter()
                .map(|m| m.translation.length())
                .fold(0.0, f32::max);
            g.point = if r.chance(0.7) {
                r.vec3(reach * 1.5, h)
            } else {
                r.vec3(1e6, h)
            };
            g.rotation = r.quat(h);
            if r.chance(h) {
                g.weight = r.val(2.0, 0.5);
                g.channel_weights = r.vec3(1.0, 0.5);
            }
            if r.chance(0.2) {
                g.support_polygon = (0..r.below(5)).map(|_| r.vec3(1.0, h)).collect();
            }
            g.enabled = !r.chance(0.1);
            let ok = g.weight.is_finite()
                && g.weight >= 0.0
                && g.channel_weights.is_finite()
                && sane_vec(g.point)
                && g.rotation.is_finite()
                && g.rotation.length_squared() > 1e-12
                && g.support_polygon.iter().all(|v| v.is_finite());
            targets_ok &= ok || !g.enabled;
        }
        for l in &mut goals.joints_locked {
            *l = r.chance(0.1);
        }
        let mut scratch = solver.scratch();
        let mut pose = random_pose(r, &s, h);
        for _ in 0..1 + r.below(2) {
            let before = pose.clone();
            match solver.solve(&s, &mut pose, &goals, &mut scratch) {
                Ok(report) => {
                    assert!(
                        pose.is_finite(),
                        "Ok with a non-finite pose {pose:?} from {before:?}; {:?} {:?} {:?} {goals:?} {report:?}",
                        solver.joints(),
                        solver.tasks(),
                        solver.settings()
                    );
                    assert!(solved_pose_ok(&pose), "Ok with an invalid pose: {report:?}");
                    assert!(
                        report.max_position_residual.is_finite()
                            && report.max_angle_residual.is_finite(),
                        "{report:?} {:?} {:?} {goals:?}",
                        solver.tasks(),
                        solver.joints()
                    );
                }
                Err(e) => {
                    assert!(same_bits(&pose, &before), "pose changed on Err({e})");
                    assert!(
                        !(targets_ok && before.validate(&s).is_ok()),
                        "Err({e}) for valid input"
                    );
                    return;
                }
            }
            let _ = solver.evaluate_pose(&s, &pose, &goals, &mut scratch);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Full-body solver and humanoid mapping
// ---------------------------------------------------------------------------------------------

const CONVENTIONS: [RigConvention; 6] = [
    RigConvention::Mixamo,
    RigConvention::Vrm,
    RigConvention::VRoid,
    RigConvention::Rigify,
    RigConvention::Unreal,
    RigConvention::Mixamo,
];
const AXES: [RestAxes; 3] = [RestAxes::PlusY, RestAxes::MinusZ, RestAxes::PlusY];

fn random_effector(r: &mut Rng, h: f32, at: Vec3) -> EffectorGoal {
    EffectorGoal {
        position: at + r.vec3(0.5, h),
        rotation: r.quat(h),
        position_weight: r.val(1.5, h).abs(),
        rotation_weight: r.val(1.5, h).abs(),
        enabled: r.chance(0.7),
        priority: r.below(3) as u8,
        frame: GoalFrame::Model,
    }
}

/// As documented by `FullBodyGoals::validate`: every goal, enabled or not, finite and in range.
fn full_body_goals_finite(g: &FullBodyGoals) -> bool {
    g.effectors.iter().all(|e| {
        sane_vec(e.position)
            && (1e-12..=1e12).contains(&e.rotation.length_squared())
            && e.position_weight.is_finite()
            && e.rotation_weight.is_finite()
    }) && sane_vec(g.look_at.target)
        && g.look_at.weight.is_finite()
        && sane_vec(g.center_of_mass.target)
        && g.center_of_mass.weight.is_finite()
}

fn check_full_body_solve(
    r: &mut Rng,
    h: f32,
    s: &Skeleton,
    solver: &mut FullBodySolver,
    map: &HumanoidMap,
) {
    let mut pose = if r.chance(0.5) {
        let limits = solver.limits().clone();
        let mut next = || r.unit();
        random_pose_within_limits(s, map, &limits, 0.8, &mut next)
    } else {
        random_pose(r, s, h * 0.3)
    };
    let at = solver.goals_at_pose(s, &s.rest_pose());
    let mut goals = FullBodyGoals::default();
    for (g, a) in goals.effectors.iter_mut().zip(at.effectors.iter()) {
        *g = random_effector(r, h, a.position);
    }
    goals.look_at = LookAtGoal {
        target: r.vec3(3.0, h),
        weight: r.val(1.0, h).abs(),
        enabled: r.chance(0.3),
        priority: 0,
    };
    goals.center_of_mass = CenterOfMassGoal {
        target: r.vec3(0.3, h),
        weight: r.val(1.0, h).abs(),
        enabled: r.chance(0.2),
        priority: 0,
    };
    let before = pose.clone();
    match solver.solve(s, &mut pose, &goals) {
        Ok(report) => {
            assert!(pose.is_finite(), "full body: Ok with a non-finite pose");
            assert!(
                solved_pose_ok(&pose),
                "full body: Ok with an invalid pose {pose:?}"
            );
            assert!(report.cost.is_finite(), "full body cost {report:?}");
        }
        Err(e) => {
            assert!(
                same_bits(&pose, &before),
                "full body: pose changed on Err({e})"
            );
            assert!(
                !(full_body_goals_finite(&goals) && before.validate(s).is_ok()),
                "full body: Err({e}) for valid input {goals:?}"
            );
        }
    }
}

#[test]
fn fuzz_full_body() {
    run_suite("full_body", |r| {
        let h = r.hostility();
        let s = test_rig(r.pick(&CONVENTIONS), r.pick(&AXES));
        let (map, _) = HumanoidMap::from_skeleton(&s);
        let mut solver = FullBodySolver::new(&s, &map).expect("test rigs build");
        solver.settings_mut().max_iterations = 4 + r.below(12) as u32;
        check_full_body_solve(r, h, &s, &mut solver, &map);
    });
}

#[test]
fn fuzz_full_body_with_limits() {
    run_suite("with_limits", |r| {
        let h = r.hostility().max(0.05);
        let s = test_rig(r.pick(&CONVENTIONS), r.pick(&AXES));
        let (map, _) = HumanoidMap::from_skeleton(&s);
        let mut limits = HumanoidLimits::anatomical(&s, &map).expect("test rigs");
        for _ in 0..1 + r.below(4) {
            let role = r.pick(&HumanoidBone::ALL);
            let l = random_limit(r, h);
            limits.set(role, l);
        }
        let valid = limits.validate().is_ok();
        match FullBodySolver::with_limits(&s, &map, limits) {
            Ok(mut solver) => {
                assert!(valid, "with_limits accepted a malformed limit");
                solver.settings_mut().max_iterations = 8;
                check_full_body_solve(r, h, &s, &mut solver, &map);
            }
            Err(e) => assert!(
                !valid && matches!(e, HumanoidError::InvalidLimit { .. }),
                "with_limits: {e} (limits valid: {valid})"
            ),
        }
    });
}

/// Bone names from real rigs and conventions, plus junk.
const NAMES: [&str; 48] = [
    "Hips",
    "mixamorig:Hips",
    "Spine",
    "mixamorig:Spine1",
    "Chest",
    "Neck",
    "Head",
    "HEAD",
    "head",
    "LeftUpperArm",
    "mixamorig:LeftArm",
    "upper_arm.L",
    "upper_arm.l_Armature",
    "b_LeftUpperArm_09",
    "LeftLowerArm",
    "lowerarm_l",
    "DEF-forearm.L",
    "LeftHand",
    "hand.R",
    "RightUpperArm",
    "RightForeArm",
    "RightHand",
    "LeftUpLeg",
    "thigh_l",
    "UpperLeg.L",
    "LeftLeg",
    "calf_l",
    "LowerLeg.L",
    "LeftFoot",
    "Foot.L",
    "RightUpLeg",
    "RightLeg",
    "RightFoot",
    "foot_r",
    "LeftShoulder",
    "clavicle_l",
    "Toe.L",
    "pelvis_Armature",
    "PoleTarget.L",
    "IK_foot.L",
    "Root",
    "",
    "_",
    ":::",
    "L",
    "Ĥëàd",
    "spine.001.002.003",
    "LeftHandIndex1",
];

/// The detached-feet stage on `pairs`: set-up errors instead of panics, and a solve that
/// either errs or leaves every foot it moved finite.
fn check_detached_feet(r: &mut Rng, h: f32, s: &Skeleton, pairs: &[(usize, usize)]) {
    let Ok(mut stage) = DetachedFeet::try_new(s, pairs) else {
        return;
    };
    let mut buffer = PoseBuffer::new(s);
    buffer.set_pose(&random_pose(r, s, h));
    if stage.solve(s, &mut buffer).is_ok() {
        for &foot in stage.bones() {
            let p = buffer.pose();
            assert!(
                finite_quat(p.rotations[foot]) && p.translations[foot].is_finite(),
                "detached foot {foot} not finite after Ok"
            );
        }
    }
}

#[test]
fn fuzz_humanoid_mapper() {
    run_suite("mapper", |r| {
        let h = r.hostility();
        let n = 1 + r.below(40);
        let bones: Vec<Bone> = (0..n)
            .map(|i| {
                let name = if r.chance(0.05) {
                    "x".repeat(r.below(300))
                } else {
                    r.pick(&NAMES).to_owned()
                };
                let parent = (i > 0).then(|| if r.chance(0.7) { i - 1 } else { r.below(i) });
                let mut rest = BoneTransform::from_translation(r.unit_vec3() * 0.2);
                if r.chance(h) {
                    rest = random_rest(r, h, 0.2);
                }
                Bone::new(name, parent, rest)
            })
            .collect();
        let Ok(s) = Skeleton::try_new(bones) else {
            return;
        };
        let options = if r.chance(0.5) {
            let flags = (0..r.below(n + 3)).map(|_| r.chance(0.7)).collect();
            MappingOptions::default().with_skinned(flags)
        } else {
            MappingOptions::default()
        };
        let (map, report) = HumanoidMap::from_skeleton_with(&s, &options);
        assert_eq!(
            report.mapped.len() + report.unmapped.len(),
            HumanoidBone::COUNT
        );
        let _ = report.to_string();
        let table: Vec<(HumanoidBone, usize)> = (0..r.below(30))
            .map(|_| (r.pick(&HumanoidBone::ALL), r.below(n + 2)))
            .collect();
        let (tmap, treport) = HumanoidMap::from_table(&s, &table, &options);
        assert_eq!(
            treport.mapped.len() + treport.unmapped.len(),
            HumanoidBone::COUNT
        );
        for (role, b) in tmap.iter() {
            assert!(b < s.len(), "table map {role:?} -> {b}");
        }
        let _ = tmap.validate(&s);
        let extra = HumanoidMap::lower_leg_ends_for_detached_feet(&s, &report);
        if !extra.is_empty() {
            let mut bones = s.bones().to_vec();
            bones.extend(extra);
            if let Ok(s2) = Skeleton::try_new(bones) {
                let (map2, report2) = HumanoidMap::from_skeleton(&s2);
                check_detached_feet(r, h, &s2, &DetachedFeet::pairs_of(&map2, &report2));
            }
        }
        // Any pairs, in range or not.
        let pairs: Vec<(usize, usize)> = (0..r.below(4))
            .map(|_| (r.below(n + 2), r.below(n + 2)))
            .collect();
        check_detached_feet(r, h, &s, &pairs);
        for (role, b) in map.iter() {
            assert!(b < s.len(), "{role:?} -> {b}");
        }
        let _ = report.is_complete();
        if map.validate(&s).is_ok()
            && let Ok(mut solver) = FullBodySolver::new(&s, &map)
        {
            solver.settings_mut().max_iterations = 4;
            check_full_body_solve(r, h, &s, &mut solver, &map);
        }
    });
}
