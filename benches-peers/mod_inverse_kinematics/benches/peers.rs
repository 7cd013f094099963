//! `bevy_ik`'s `IkLimb` against its best-known Bevy peer, `bevy_mod_inverse_kinematics` 0.12
//! (its Bevy 0.19 release), in the same run on the same scene: N shoulder → elbow → wrist
//! chains (default 1000, `IK_PEERS` to change) whose wrist target and elbow pole entities
//! move every frame (the target up to about 1.5 cm per frame).
//!
//! One headless `App` per contender (`MinimalPlugins` + `TransformPlugin` + the plugin), the
//! same hierarchies and the same motion, plus a baseline app with no IK at all (the cost of the
//! motion system and transform propagation, which both pay). Per contender it prints the median
//! frame time per 1000 chains, the IK's own share (frame − baseline), and the wrist's residual
//! measured from its `GlobalTransform` after the frame against the target's position *in that
//! frame* and against its position one frame earlier: a solver that reads last frame's target
//! (the peer runs in `Update` and reads the target's `GlobalTransform`, which transform
//! propagation updates only in `PostUpdate`) is off by the target's motion per frame, and its
//! residual against the previous frame's position is the small one.
//!
//! Peer settings: `IkConstraint { chain_length: 2, iterations: 20, pole_target, pole_angle: 0 }`
//! on the wrist (20 iterations as in its README; it stops iterating once the tip is within
//! √0.001 ≈ 3.16 cm, a threshold in its source). `IkLimb`: root/mid/tip, target and pole, the
//! defaults otherwise. Both plugins get all cores in Bevy's compute pool (as `crowd.rs` does;
//! `IK_THREADS=1` gives compute one thread). `bevy_ik` solves its limbs in parallel; the peer's
//! system is one sequential loop.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_ik::prelude::*;
use bevy_mod_inverse_kinematics::{IkConstraint, InverseKinematicsPlugin};
use criterion::{Criterion, criterion_group, criterion_main};

/// Which IK the app runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Contender {
    /// No IK: motion and propagation only.
    Baseline,
    /// `bevy_ik`'s analytic limb.
    IkLimb,
    /// `bevy_mod_inverse_kinematics`.
    Peer,
}

/// A chain's moving target and pole: both orbit around points near the shoulder.
#[derive(Component)]
struct Orbit {
    /// The shoulder's global position.
    shoulder: Vec3,
    phase: f32,
    /// Whether this is the pole (else the wrist target).
    pole: bool,
}

/// The chain's wrist, target and pole entities, for the residuals.
#[derive(Component)]
struct ChainEnds {
    wrist: Entity,
    target: Entity,
}

#[derive(Resource, Default)]
struct Frame(u32);

/// The target's position in the chain's frame at time `t` (seconds): a loop within reach
/// (upper arm 0.28, forearm 0.25: reach 0.53) in front of and beside the shoulder, moving up
/// to about 1.5 cm per frame at 60 fps (a hand in a brisk gesture; the crowd bench's walking
/// hands move up to 3 cm).
fn target_at(t: f32) -> Vec3 {
    Vec3::new(
        0.30 + 0.08 * (6.5 * t).sin(),
        -0.10 + 0.12 * (4.5 * t).cos(),
        0.15 + 0.10 * (5.5 * t).sin(),
    )
}

/// The pole's position (elbow direction: down and back), moving too.
fn pole_at(t: f32) -> Vec3 {
    Vec3::new(
        0.2 + 0.1 * (3.5 * t).sin(),
        -0.4,
        -0.3 + 0.1 * (4.0 * t).cos(),
    )
}

const DT: f32 = 1.0 / 60.0;

fn move_targets(mut frame: ResMut<Frame>, mut q: Query<(&Orbit, &mut Transform)>) {
    frame.0 += 1;
    let t = frame.0 as f32 * DT;
    q.par_iter_mut().for_each(|(o, mut tr)| {
        let local = if o.pole {
            pole_at(t + o.phase)
        } else {
            target_at(t + o.phase)
        };
        tr.translation = o.shoulder + local;
    });
}

fn chains_app(n: usize, contender: Contender) -> App {
    let mut app = App::new();
    let mut pools = TaskPoolOptions::default();
    // All cores to compute (as crowd.rs); `IK_THREADS=1`: one compute thread, so both plugins
    // run on one core (the peer's system is a sequential loop either way).
    let threads = std::env::var("IK_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    pools.compute.min_threads = threads;
    pools.compute.max_threads = threads;
    app.add_plugins((
        MinimalPlugins.set(TaskPoolPlugin {
            task_pool_options: pools,
        }),
        TransformPlugin,
    ))
    .init_resource::<Frame>()
    .add_systems(Update, move_targets);
    match contender {
        Contender::Baseline => {}
        Contender::IkLimb => {
            app.add_plugins(IkPlugin::default());
        }
        Contender::Peer => {
            app.add_plugins(InverseKinematicsPlugin);
        }
    }
    let side = (n as f32).sqrt().ceil() as usize;
    for i in 0..n {
        let base_at = Vec3::new((i % side) as f32 * 2.0, 0.0, (i / side) as f32 * 2.0);
        let world = app.world_mut();
        let base = world.spawn(Transform::from_translation(base_at)).id();
        // Bones along their local +X, the elbow slightly bent at rest.
        let shoulder = world
            .spawn((Transform::from_xyz(0.0, 1.4, 0.0), ChildOf(base)))
            .id();
        let elbow = world
            .spawn((
                Transform::from_xyz(0.28, 0.0, 0.0).with_rotation(Quat::from_rotation_y(0.2)),
                ChildOf(shoulder),
            ))
            .id();
        let wrist = world
            .spawn((Transform::from_xyz(0.25, 0.0, 0.0), ChildOf(elbow)))
            .id();
        let shoulder_at = base_at + Vec3::new(0.0, 1.4, 0.0);
        let phase = i as f32 * 0.37;
        let target = world
            .spawn((
                Transform::from_translation(shoulder_at + target_at(phase)),
                Orbit {
                    shoulder: shoulder_at,
                    phase,
                    pole: false,
                },
            ))
            .id();
        let pole = world
            .spawn((
                Transform::from_translation(shoulder_at + pole_at(phase)),
                Orbit {
                    shoulder: shoulder_at,
                    phase,
                    pole: true,
                },
            ))
            .id();
        world.entity_mut(base).insert(ChainEnds { wrist, target });
        match contender {
            Contender::Baseline => {}
            Contender::IkLimb => {
                world.entity_mut(base).insert(
                    IkLimb::new(shoulder, elbow, wrist)
                        .with_target(target)
                        .with_pole(pole),
                );
            }
            Contender::Peer => {
                world.entity_mut(wrist).insert(IkConstraint {
                    chain_length: 2,
                    iterations: 20,
                    target,
                    pole_target: Some(pole),
                    pole_angle: 0.0,
                    enabled: true,
                });
            }
        }
    }
    // Set-up frames (bevy_ik finishes set-up on its first frame).
    for _ in 0..3 {
        app.update();
    }
    app
}

/// Median wall time of one frame over `frames` frames.
fn median_frame(app: &mut App, frames: usize) -> Duration {
    let mut times: Vec<Duration> = (0..frames)
        .map(|_| {
            let start = Instant::now();
            app.update();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Wrist residuals after the last frame, against the target's position in that frame and in
/// the frame before: (median, max) of each, metres.
fn residuals(app: &mut App) -> ((f32, f32), (f32, f32)) {
    let frame = app.world().resource::<Frame>().0;
    let mut q = app.world_mut().query::<&ChainEnds>();
    let ends: Vec<(Entity, Entity)> = q.iter(app.world()).map(|c| (c.wrist, c.target)).collect();
    let mut orbit = app.world_mut().query::<&Orbit>();
    let (mut now, mut before) = (Vec::new(), Vec::new());
    for (wrist, target) in ends {
        let tip = app
            .world()
            .get::<GlobalTransform>(wrist)
            .expect("wrist")
            .translation();
        let o = orbit.get(app.world(), target).expect("target orbit");
        let at = |f: u32| o.shoulder + target_at(f as f32 * DT + o.phase);
        // (The target entity's propagated position is `at(frame)`; checked here.)
        let global = app.world().get::<GlobalTransform>(target).expect("target");
        assert!(global.translation().distance(at(frame)) < 1e-4);
        now.push(tip.distance(at(frame)));
        before.push(tip.distance(at(frame - 1)));
    }
    let summary = |v: &mut Vec<f32>| {
        v.sort_by(f32::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    };
    (summary(&mut now), summary(&mut before))
}

fn bench_peers(c: &mut Criterion) {
    let n: usize = std::env::var("IK_PEERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let per_1000 = |d: Duration| d.as_secs_f64() * 1e3 * 1000.0 / n as f64;
    let mut group = c.benchmark_group("peers");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    let contenders = [Contender::Baseline, Contender::IkLimb, Contender::Peer];
    let mut apps: Vec<App> = contenders.iter().map(|&c| chains_app(n, c)).collect();
    for (contender, app) in contenders.iter().zip(&mut apps) {
        group.bench_function(format!("{contender:?}/{n}"), |b| {
            b.iter(|| {
                app.update();
                black_box(app.world().entities().len())
            });
        });
    }
    group.finish();
    // Medians in alternating rounds, so that a change of machine load hits all alike.
    let mut rounds: Vec<Vec<Duration>> = vec![Vec::new(); contenders.len()];
    for _ in 0..5 {
        for (i, app) in apps.iter_mut().enumerate() {
            rounds[i].push(median_frame(app, 20));
        }
    }
    let medians: Vec<Duration> = rounds
        .iter_mut()
        .map(|r| {
            r.sort();
            r[r.len() / 2]
        })
        .collect();
    let base = medians[0];
    println!(
        "{n} shoulder→elbow→wrist chains, targets and poles moving every frame; median frame time per 1000 chains:"
    );
    println!(
        "  baseline (motion + propagation, no IK): {:.3} ms",
        per_1000(base)
    );
    let mut costs = Vec::new();
    for ((contender, app), frame) in contenders.iter().zip(&mut apps).zip(&medians).skip(1) {
        let ik = frame.saturating_sub(base);
        costs.push(ik);
        let ((now_med, now_max), (before_med, before_max)) = residuals(app);
        println!(
            "  {contender:?}: {:.3} ms/frame, IK share {:.3} ms; wrist residual vs this frame's \
             target median {:.2e} m (max {:.2e}), vs last frame's {:.2e} m (max {:.2e})",
            per_1000(*frame),
            per_1000(ik),
            now_med,
            now_max,
            before_med,
            before_max
        );
    }
    let (limb, peer) = (medians[1], medians[2]);
    println!(
        "  frame time peer / IkLimb: {:.2}x; IK share peer / IkLimb: {:.2}x",
        peer.as_secs_f64() / limb.as_secs_f64(),
        costs[1].as_secs_f64() / costs[0].as_secs_f64().max(1e-9)
    );
}

criterion_group!(benches, bench_peers);
criterion_main!(benches);
