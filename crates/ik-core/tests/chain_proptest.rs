//! Property test of the FABRIK and CCD chain solvers: a random chain (2–16 bones, any rest
//! axis, plain / rotated / scaled rests) with random swing–twist limits → a random in-limit
//! pose → its tip as the target → solve from a perturbed in-limit start: every joint stays
//! inside its limit, bone lengths are unchanged, nothing is NaN, and without limits the tip is
//! on target within 1 mm.

use glam::{Quat, Vec2};
use ik_core::chain::{ChainGoal, ChainIk, ChainMethod, ChainSettings};
use ik_core::limits::{JointLimit, SwingTwistLimit};
use proptest::prelude::*;

use crate::chains;
use crate::rng;

use chains::{AXES, STYLES, chain_rig};
use rng::Rng;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn chains_respect_limits_and_reach(
        seed in any::<u64>(),
        n in 2usize..16,
        axis in 0usize..6,
        style in 0usize..3,
        ccd in any::<bool>(),
        limited in any::<bool>(),
    ) {
        let axis = AXES[axis];
        let s = chain_rig(n, axis, STYLES[style], seed);
        let chain = s.chain(1, n).unwrap();
        let mut rng = Rng(seed);
        let limits: Vec<JointLimit> = if limited {
            (0..n)
                .map(|_| JointLimit::SwingTwist(SwingTwistLimit {
                    twist_axis: axis,
                    swing_axis: axis.any_orthonormal_vector(),
                    swing_half_angles: Vec2::new(0.2 + rng.next(), 0.2 + rng.next()),
                    twist_min: -0.5 * rng.next(),
                    twist_max: 0.5 * rng.next(),
                }))
                .collect()
        } else {
            Vec::new()
        };
        let method = if ccd { ChainMethod::Ccd } else { ChainMethod::Fabrik };
        let settings = ChainSettings { method, max_iterations: 1000, tolerance: Some(1e-4) };
        let ik = ChainIk::try_new(&s, &chain, &limits, settings).unwrap();
        // A random pose inside the limits: random turns, clamped.
        let in_limits = |rng: &mut Rng, angle: f32| {
            let mut pose = s.rest_pose();
            for (i, &b) in chain.bones().iter().enumerate() {
                let rest = s.bones()[b].rest;
                let mut q = rest.rotation * Quat::from_scaled_axis(rng.vec() * angle);
                if let Some(l) = limits.get(i) {
                    let mut t = pose.translations[b];
                    l.clamp(rest.rotation, rest.translation, &mut q, &mut t);
                }
                pose.rotations[b] = q;
            }
            pose
        };
        let target_pose = in_limits(&mut rng, 0.5);
        let target = s.model_transforms(&target_pose)[n].translation;
        let mut pose = in_limits(&mut rng, 0.3);
        let before = chain.segment_lengths(&s, &pose);
        let parent = s.model_transforms(&pose)[0];
        let report = ik
            .solve_with_parent(&mut pose, &ChainGoal::new(target), &parent, &mut ik.scratch())
            .unwrap();
        prop_assert!(pose.rotations.iter().all(|q| q.is_finite()));
        for (a, b) in before.iter().zip(chain.segment_lengths(&s, &pose)) {
            prop_assert!((a - b).abs() <= 1e-5 * a.max(1.0));
        }
        for (i, &b) in chain.bones().iter().enumerate() {
            if let Some(l) = limits.get(i) {
                let rest = s.bones()[b].rest;
                prop_assert!(l.contains(rest.rotation, rest.translation, pose.rotations[b], pose.translations[b], 1e-4));
            }
        }
        let err = s.model_transforms(&pose)[n].translation.distance(target);
        prop_assert!((report.position_error - err).abs() < 1e-5);
        if !limited {
            prop_assert!(err < 1e-3, "{method:?}: {report:?}");
        }
    }
}
