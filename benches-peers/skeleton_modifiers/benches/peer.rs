//! Same-run comparison with `bevy_skeleton_modifiers` 0.1.1 (its engine-free core): 16
//! six-bone chains hanging from a root that turns and moves every frame.
//!
//! - springs: stiffness 1, drag 0.4, gravity 0.5 down, hit radius 0.02, a 0.1 tail past the
//!   last bone, a sphere (r 0.25) and a capsule (r 0.08) collider on the root, 60 Hz;
//! - FABRIK / CCD: a target moving on a circle inside reach, at most 10 iterations, 1 mm
//!   tolerance, warm start as each library does it by default (the peer keeps its joint
//!   positions; ik-core's stage starts from the animated pose every frame), the peer's
//!   per-iteration angle limit lifted (ik-core has none) so both solve the same problem.
//!
//! Each benchmark's time is per update of all 16 chains; the ratio per chain is printed at
//! the end.

use bevy_skeleton_modifiers as peer;
use criterion::{Criterion, criterion_group};
use glam32::{Affine3A as A32, Quat as Q32, Vec3 as V32};
use ik_core::chain::{ChainGoal, ChainIk, ChainIkStage, ChainMethod, ChainSettings};
use ik_core::glam::Vec3;
use ik_core::spring::{
    ColliderDesc, ColliderShape, SpringBoneStage, SpringChainDesc, SpringJointDesc, SpringTail,
};
use ik_core::stack::IkStack;
use ik_core::{Bone, BoneTransform, Skeleton};
use std::hint::black_box;
use std::time::{Duration, Instant};

const CHAINS: usize = 16;
const BONES: usize = 6;
const LENGTH: f32 = 0.1;
const DT: f32 = 1.0 / 60.0;

fn chain_root(c: usize) -> usize {
    1 + c * BONES
}

/// (parent, local translation) per bone: a root and `CHAINS` chains hanging down.
fn layout() -> Vec<(Option<usize>, Vec3)> {
    let mut out = vec![(None, Vec3::ZERO)];
    for c in 0..CHAINS {
        let first = out.len();
        let a = c as f32 / CHAINS as f32 * core::f32::consts::TAU;
        for i in 0..BONES {
            out.push(if i == 0 {
                (Some(0), Vec3::new(a.cos(), 0.0, a.sin()) * 0.3)
            } else {
                (Some(first + i - 1), Vec3::NEG_Y * LENGTH)
            });
        }
    }
    out
}

fn ours_skeleton() -> Skeleton {
    let bones = layout()
        .into_iter()
        .enumerate()
        .map(|(i, (p, t))| Bone::new(format!("b{i}"), p, BoneTransform::from_translation(t)))
        .collect();
    Skeleton::try_new(bones).unwrap()
}

fn v(x: Vec3) -> V32 {
    V32::new(x.x, x.y, x.z)
}

/// The root's animation at frame `k`: a turn about Y and a move in the world.
fn root_motion(k: u32) -> (f32, Vec3) {
    let t = k as f32 * DT;
    (0.8 * (3.0 * t).sin(), Vec3::new(t.sin(), 0.0, t.cos()))
}

fn target(root: Vec3, k: u32) -> Vec3 {
    let t = k as f32 * DT;
    root + Vec3::new(0.2 * (2.0 * t).cos(), -0.3, 0.2 * (2.0 * t).sin())
}

struct Peer {
    parents: Vec<Option<u16>>,
    rest: Vec<peer::BonePose>,
    local: Vec<peer::BonePose>,
    chains: Vec<peer::ChainIndices>,
}

impl Peer {
    fn new() -> Self {
        let l = layout();
        let parents: Vec<Option<u16>> = l.iter().map(|(p, _)| p.map(|p| p as u16)).collect();
        let rest: Vec<peer::BonePose> = l
            .iter()
            .map(|(_, t)| peer::BonePose {
                translation: v(*t),
                ..Default::default()
            })
            .collect();
        let mut local = rest.clone();
        let view = peer::SkeletonView {
            parents: &parents,
            rest: &rest,
            local: &mut local,
            root_global: A32::IDENTITY,
        };
        let chains = (0..CHAINS)
            .map(|c| {
                view.chain(chain_root(c) as u16, (chain_root(c) + BONES - 1) as u16)
                    .unwrap()
            })
            .collect();
        Self {
            local: rest.clone(),
            parents,
            rest,
            chains,
        }
    }

    /// The animated input: rest, the root turned.
    fn reset_input(&mut self, angle: f32) {
        self.local.copy_from_slice(&self.rest);
        self.local[0].rotation = Q32::from_rotation_y(angle);
    }
}

fn spring_ours(c: &mut Criterion) -> (f64, f64) {
    let s = ours_skeleton();
    let colliders = [
        ColliderDesc {
            bone: Some(0),
            shape: ColliderShape::Sphere {
                offset: Vec3::new(0.0, -0.3, 0.0),
                radius: 0.25,
            },
        },
        ColliderDesc {
            bone: Some(0),
            shape: ColliderShape::Capsule {
                offset: Vec3::new(-0.4, -0.5, 0.0),
                tail: Vec3::new(0.4, -0.5, 0.0),
                radius: 0.08,
            },
        },
    ];
    let chains: Vec<SpringChainDesc> = (0..CHAINS)
        .map(|k| SpringChainDesc {
            joints: (0..BONES)
                .map(|i| SpringJointDesc {
                    bone: chain_root(k) + i,
                    stiffness: 1.0,
                    gravity_power: 0.5,
                    drag_force: 0.4,
                    hit_radius: 0.02,
                    ..SpringJointDesc::default()
                })
                .collect(),
            tail: SpringTail::Virtual { length: LENGTH },
            colliders: vec![0, 1],
            ..SpringChainDesc::default()
        })
        .collect();
    let stage = SpringBoneStage::try_new(&s, &chains, &colliders).unwrap();
    let mut stack = IkStack::new(s.clone());
    let slot = stack.push(stage).unwrap();
    let mut input = s.rest_pose();
    let mut k = 0u32;
    let mut ours = || {
        k += 1;
        let (angle, at) = root_motion(k);
        input.rotations[0] = ik_core::glam::Quat::from_rotation_y(angle);
        stack.set_input(&input).unwrap();
        let st = stack
            .slot_mut(slot)
            .unwrap()
            .stage
            .as_custom_mut::<SpringBoneStage>()
            .unwrap();
        st.dt = DT;
        st.model_to_world = BoneTransform::from_translation(at);
        black_box(stack.solve());
    };
    let mut p = Peer::new();
    let settings = peer::SpringBoneSettings {
        stiffness: 1.0,
        drag: 0.4,
        gravity: 0.5,
        gravity_direction: V32::NEG_Y,
        radius: 0.02,
        extend_end_bone: true,
        end_bone_length: LENGTH,
        ..Default::default()
    };
    let mut states: Vec<peer::SpringBoneState> = (0..CHAINS).map(|_| Default::default()).collect();
    let mut j = 0u32;
    let mut theirs = || {
        j += 1;
        let (angle, at) = root_motion(j);
        p.reset_input(angle);
        let root_global = A32::from_translation(v(at));
        // The colliders on the root, in the world (the peer takes world poses).
        let root_world = root_global * A32::from_quat(Q32::from_rotation_y(angle));
        let colliders = [
            (
                peer::SpringCollider::Sphere {
                    radius: 0.25,
                    inside: false,
                },
                root_world * A32::from_translation(V32::new(0.0, -0.3, 0.0)),
            ),
            (
                // Y-aligned capsule turned onto X, height including the caps.
                peer::SpringCollider::Capsule {
                    radius: 0.08,
                    height: 0.8 + 2.0 * 0.08,
                    inside: false,
                },
                root_world
                    * A32::from_rotation_translation(
                        Q32::from_rotation_z(core::f32::consts::FRAC_PI_2),
                        V32::new(0.0, -0.5, 0.0),
                    ),
            ),
        ];
        let mut view = peer::SkeletonView {
            parents: &p.parents,
            rest: &p.rest,
            local: &mut p.local,
            root_global,
        };
        for (chain, state) in p.chains.iter().zip(&mut states) {
            peer::process_spring_bones(
                &mut view,
                chain,
                &settings,
                state,
                &colliders,
                V32::ZERO,
                DT,
            );
        }
        black_box(&p.local);
    };
    compare(c, "spring_6_joints_2_colliders", &mut ours, &mut theirs)
}

fn ik_pair(c: &mut Criterion, method: ChainMethod) -> (f64, f64) {
    let s = ours_skeleton();
    let mut stack = IkStack::new(s.clone());
    let settings = ChainSettings {
        method,
        max_iterations: 10,
        tolerance: Some(1e-3),
    };
    let mut slots = Vec::new();
    for k in 0..CHAINS {
        let chain = s.chain(chain_root(k), chain_root(k) + BONES - 1).unwrap();
        let ik = ChainIk::try_new(&s, &chain, &[], settings).unwrap();
        let slot = stack
            .push(ChainIkStage::new(ik, ChainGoal::new(Vec3::ZERO)))
            .unwrap();
        // Warm start (the stack's: the animated input does not change, so each solve starts
        // from the last output), as the peer does by default.
        stack.slot_mut(slot).unwrap().warm_start = true;
        slots.push(slot);
    }
    let roots: Vec<Vec3> = (0..CHAINS)
        .map(|k| stack.model_transform(chain_root(k)).translation)
        .collect();
    let input = s.rest_pose();
    let mut f = 0u32;
    let mut ours = || {
        f += 1;
        stack.set_input(&input).unwrap();
        for (k, &slot) in slots.iter().enumerate() {
            stack
                .slot_mut(slot)
                .unwrap()
                .stage
                .as_custom_mut::<ChainIkStage>()
                .unwrap()
                .goal
                .target = target(roots[k], f);
        }
        black_box(stack.solve());
    };
    let mut p = Peer::new();
    let solver = match method {
        ChainMethod::Fabrik => peer::IkSolver::Fabrik,
        _ => peer::IkSolver::Ccd,
    };
    let it = peer::IterateSettings {
        max_iterations: 10,
        min_distance: 1e-3,
        angular_delta_limit: core::f64::consts::PI,
        deterministic: false,
    };
    let limits = [None; BONES];
    let mut states: Vec<peer::IterateState> = (0..CHAINS).map(|_| Default::default()).collect();
    let mut g = 0u32;
    let mut theirs = || {
        g += 1;
        p.reset_input(0.0);
        let mut view = peer::SkeletonView {
            parents: &p.parents,
            rest: &p.rest,
            local: &mut p.local,
            root_global: A32::IDENTITY,
        };
        for (k, (chain, state)) in p.chains.iter().zip(&mut states).enumerate() {
            peer::process_chain_ik(
                &mut view,
                chain,
                solver,
                &it,
                &limits,
                v(target(roots[k], g)),
                state,
            );
        }
        black_box(&p.local);
    };
    let name = format!("{method:?}_6_bones_moving_target").to_lowercase();
    let times = compare(c, &name, &mut ours, &mut theirs);
    // What each left on the last frame it solved: the tips' mean distance to their targets.
    let (mut e_ours, mut e_theirs) = (0.0, 0.0);
    let view = peer::SkeletonView {
        parents: &p.parents,
        rest: &p.rest,
        local: &mut p.local,
        root_global: A32::IDENTITY,
    };
    for (k, chain) in p.chains.iter().enumerate() {
        let tip = chain_root(k) + BONES - 1;
        e_ours += stack
            .model_transform(tip)
            .translation
            .distance(target(roots[k], f));
        let t = view.skeleton_pose(chain.as_slice()[BONES - 1]).translation;
        e_theirs += V32::from(t).distance(v(target(roots[k], g)));
    }
    println!(
        "{name}: mean tip error on the last frame: ik-core {:.3} mm, bevy_skeleton_modifiers {:.3} mm",
        e_ours / CHAINS as f32 * 1e3,
        e_theirs / CHAINS as f32 * 1e3
    );
    times
}

/// Benches both closures in one group (criterion's figures) and also times them alternately
/// for the printed ratio (mean ns per update of all chains).
fn compare(
    c: &mut Criterion,
    name: &str,
    ours: &mut dyn FnMut(),
    theirs: &mut dyn FnMut(),
) -> (f64, f64) {
    let mut g = c.benchmark_group(name);
    g.bench_function("ik_core", |b| b.iter(&mut *ours));
    g.bench_function("bevy_skeleton_modifiers", |b| b.iter(&mut *theirs));
    g.finish();
    // Alternating rounds, the same run: per update of all chains.
    let (mut a, mut b) = (Duration::ZERO, Duration::ZERO);
    let rounds = 2000;
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..rounds / 20 {
            ours();
        }
        a += t.elapsed();
        let t = Instant::now();
        for _ in 0..rounds / 20 {
            theirs();
        }
        b += t.elapsed();
    }
    (
        a.as_nanos() as f64 / rounds as f64,
        b.as_nanos() as f64 / rounds as f64,
    )
}

fn all(c: &mut Criterion) {
    let rows = [
        ("spring, 6 joints, 2 colliders", spring_ours(c)),
        (
            "FABRIK, 6 bones, moving target",
            ik_pair(c, ChainMethod::Fabrik),
        ),
        ("CCD, 6 bones, moving target", ik_pair(c, ChainMethod::Ccd)),
    ];
    println!("\nper chain per update (alternating rounds, {CHAINS} chains):");
    for (name, (ours, theirs)) in rows {
        let (o, t) = (ours / CHAINS as f64, theirs / CHAINS as f64);
        println!(
            "  {name}: ik-core {o:.0} ns, bevy_skeleton_modifiers {t:.0} ns, ratio {:.2}x",
            t / o
        );
    }
}

criterion_group!(benches, all);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
