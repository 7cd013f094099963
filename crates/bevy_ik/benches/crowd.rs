//! Crowd benchmark: N humanoids in a headless `App` (`MinimalPlugins` + `TransformPlugin` +
//! `IkPlugin`), every hand, foot, pelvis and head target moving every frame; one `app.update()`
//! per iteration (gather, solve in parallel, write back, propagate). Full-body humanoids
//! (`IkHumanoid::auto()`: ik-core's hybrid full-body solver) are compared with four analytic
//! limbs per character (`IkHumanoid::limbs()`) in the same run, and the ratio printed.
//!
//! Environment knobs: `IK_CROWD` (characters, default 1000), `IK_SPACING` (metres between
//! characters), `IK_HEAD=0` (no look-at), `IK_TOL` (position tolerance), `IK_RESTARTS`,
//! `IK_ITERS`, `IK_POSTURE`, `IK_PELVIS_WAVE` (pelvis target amplitude), `IK_STILL` (targets
//! do not move), `IK_BASELINE` (IK disabled: the cost of everything else), `IK_DEBUG`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_ik::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};

/// (parent index, T-pose model position) of a 21-bone humanoid.
const POSITIONS: [(Option<usize>, [f32; 3]); 21] = [
    (None, [0.0, 1.0, 0.0]),
    (Some(0), [0.0, 1.1, -0.01]),
    (Some(1), [0.0, 1.3, -0.02]),
    (Some(2), [0.0, 1.5, 0.0]),
    (Some(3), [0.0, 1.6, 0.02]),
    (Some(2), [0.05, 1.45, 0.02]),
    (Some(5), [0.17, 1.45, -0.01]),
    (Some(6), [0.45, 1.44, -0.04]),
    (Some(7), [0.71, 1.44, 0.0]),
    (Some(2), [-0.05, 1.45, 0.02]),
    (Some(9), [-0.17, 1.45, -0.01]),
    (Some(10), [-0.45, 1.44, -0.04]),
    (Some(11), [-0.71, 1.44, 0.0]),
    (Some(0), [0.09, 0.95, 0.0]),
    (Some(13), [0.09, 0.52, 0.02]),
    (Some(14), [0.09, 0.08, -0.02]),
    (Some(15), [0.09, 0.0, 0.12]),
    (Some(0), [-0.09, 0.95, 0.0]),
    (Some(17), [-0.09, 0.52, 0.02]),
    (Some(18), [-0.09, 0.08, -0.02]),
    (Some(19), [-0.09, 0.0, 0.12]),
];

const NAMES: [&str; 21] = [
    "mixamorig:Hips",
    "mixamorig:Spine",
    "mixamorig:Spine1",
    "mixamorig:Neck",
    "mixamorig:Head",
    "mixamorig:LeftShoulder",
    "mixamorig:LeftArm",
    "mixamorig:LeftForeArm",
    "mixamorig:LeftHand",
    "mixamorig:RightShoulder",
    "mixamorig:RightArm",
    "mixamorig:RightForeArm",
    "mixamorig:RightHand",
    "mixamorig:LeftUpLeg",
    "mixamorig:LeftLeg",
    "mixamorig:LeftFoot",
    "mixamorig:LeftToeBase",
    "mixamorig:RightUpLeg",
    "mixamorig:RightLeg",
    "mixamorig:RightFoot",
    "mixamorig:RightToeBase",
];

/// A small deterministic generator (seeded; the same crowd every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A target's start position and its wave phase.
#[derive(Component)]
struct Wave {
    base: Vec3,
    phase: f32,
    amplitude: f32,
}

#[derive(Resource, Default)]
struct Frame(u32);

fn move_targets(mut frame: ResMut<Frame>, mut targets: Query<(&Wave, &mut Transform)>) {
    if std::env::var("IK_STILL").is_ok() {
        return;
    }
    frame.0 += 1;
    let t = frame.0 as f32 * 0.05;
    targets.par_iter_mut().for_each(|(w, mut tr)| {
        let s = (t + w.phase).sin() * w.amplitude;
        let c = (t * 0.7 + w.phase).cos() * w.amplitude;
        tr.translation = w.base + Vec3::new(c * 0.5, s, c);
    });
}

fn spawn_character(world: &mut World, at: Vec3, humanoid: IkHumanoid) {
    let root = world
        .spawn((Transform::from_translation(at), humanoid))
        .id();
    let mut bones: Vec<Entity> = Vec::new();
    for (i, &(parent, p)) in POSITIONS.iter().enumerate() {
        let parent_pos = parent.map_or(Vec3::ZERO, |j| Vec3::from(POSITIONS[j].1));
        let parent_entity = parent.map_or(root, |j| bones[j]);
        bones.push(
            world
                .spawn((
                    Name::new(NAMES[i]),
                    Transform::from_translation(Vec3::from(p) - parent_pos),
                    ChildOf(parent_entity),
                ))
                .id(),
        );
    }
}

fn crowd(n: usize, humanoid: &IkHumanoid) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, TransformPlugin, IkPlugin::default()))
        .init_resource::<Frame>()
        .add_systems(Update, move_targets);
    let side = (n as f32).sqrt().ceil() as usize;
    for i in 0..n {
        let spacing = std::env::var("IK_SPACING")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.0);
        let at = Vec3::new(
            (i % side) as f32 * spacing,
            0.0,
            (i / side) as f32 * spacing,
        );
        spawn_character(app.world_mut(), at, humanoid.clone());
    }
    app.update();
    // Give every target a wave: hands swing widely, feet and pelvis a little, head turns.
    let mut rng = Lcg(0x5eed);
    let mut q = app.world_mut().query::<&IkHumanoidTargets>();
    let targets: Vec<IkHumanoidTargets> = q.iter(app.world()).cloned().collect();
    assert_eq!(targets.len(), n, "every character was mapped");
    let pelvis_wave = std::env::var("IK_PELVIS_WAVE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.02);
    for t in targets {
        // Offsets of the wave centres from the T-pose (character frame): hands in front of the
        // body and feet slightly raised, so every target stays within reach.
        for (e, offset, amplitude) in [
            (t.left_hand, Vec3::new(-0.25, -0.2, 0.15), 0.08),
            (t.right_hand, Vec3::new(0.25, -0.2, 0.15), 0.08),
            (t.left_foot, Vec3::new(0.0, 0.1, 0.05), 0.04),
            (t.right_foot, Vec3::new(0.0, 0.1, 0.05), 0.04),
            (t.pelvis, Vec3::new(0.0, -0.05, 0.0), pelvis_wave),
            (t.head, Vec3::ZERO, 0.0),
        ] {
            let Some(e) = e else { continue };
            let base = app.world().get::<Transform>(e).unwrap().translation + offset;
            let phase = rng.next() * std::f32::consts::TAU;
            app.world_mut().entity_mut(e).insert(Wave {
                base,
                phase,
                amplitude,
            });
        }
    }
    app.update();
    if std::env::var("IK_BASELINE").is_ok() {
        // Everything but the solve: IK disabled on every character.
        let mut q = app.world_mut().query_filtered::<Entity, With<IkStatus>>();
        let all: Vec<Entity> = q.iter(app.world()).collect();
        for e in all {
            app.world_mut().entity_mut(e).insert(IkDisabled);
        }
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

fn bench_crowd(c: &mut Criterion) {
    let n: usize = std::env::var("IK_CROWD")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let env = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<f32>().ok());
    let mut full_body = IkHumanoid::auto();
    if let Some(v) = env("IK_ITERS") {
        full_body.full_body_settings.max_iterations = v as u32;
    }
    if let Some(v) = env("IK_TOL") {
        full_body.full_body_settings.position_tolerance = v;
        full_body.full_body_settings.rotation_tolerance = v * 10.0;
    }
    if let Some(v) = env("IK_RESTARTS") {
        full_body.full_body_settings.max_restarts = v as u32;
    }
    if let Some(v) = env("IK_HEAD") {
        full_body.head = v > 0.0;
    }
    if let Some(v) = env("IK_POSTURE") {
        full_body.full_body_settings.posture_gain = v;
    }
    let modes = [("full_body", full_body), ("limbs", IkHumanoid::limbs())];
    let mut group = c.benchmark_group("crowd");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    let mut medians = Vec::new();
    for (label, humanoid) in &modes {
        let mut app = crowd(n, humanoid);
        group.bench_function(format!("{label}/{n}"), |b| {
            b.iter(|| {
                app.update();
                black_box(app.world().entities().len())
            });
        });
        medians.push((label, median_frame(&mut app, 30)));
        // Report how well the crowd is tracking.
        let mut q = app.world_mut().query::<&IkStatus>();
        let (mut solved, mut converged, mut iterations, mut worst) = (0usize, 0usize, 0u32, 0f32);
        if std::env::var("IK_DEBUG").is_ok() {
            for s in q
                .iter(app.world())
                .filter(|s| s.position_residual > 1e-3)
                .take(5)
            {
                println!(
                    "{:?} it {} res {:?}",
                    s.converged, s.iterations, s.residuals
                );
            }
        }
        for s in q.iter(app.world()) {
            if s.solved {
                solved += 1;
                converged += usize::from(s.converged);
                iterations += s.iterations;
                worst = worst.max(s.position_residual);
            }
        }
        println!(
            "crowd {label}/{n}: {solved} solved, {converged} converged, mean iterations {:.1}, \
             worst position residual {worst:.2e}",
            iterations as f32 / solved.max(1) as f32
        );
    }
    group.finish();
    let (full, limbs) = (medians[0].1, medians[1].1);
    println!(
        "crowd of {n}: full body {:.2} ms/frame, four analytic limbs {:.2} ms/frame (ratio {:.2}); budget 16.7 ms",
        full.as_secs_f64() * 1e3,
        limbs.as_secs_f64() * 1e3,
        full.as_secs_f64() / limbs.as_secs_f64()
    );
}

criterion_group!(benches, bench_crowd);
criterion_main!(benches);
