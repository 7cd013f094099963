//! Crowd of grounded characters: N humanoids (the 21-bone test humanoid, 1.2 m apart) in a
//! headless `App` (`MinimalPlugins` + `TransformPlugin` + `AssetPlugin` + `IkPlugin`), each with
//! an `IkGrounding` stage, on a terrain of 100 tilted 4 m tiles (128 triangles each, marked
//! `IkGround`, with their `Aabb`). One `app.update()` per iteration, three modes in the same
//! run:
//!
//! * `idle`: grounding disabled (`IkDisabled`): the cost of everything else;
//! * `samples`: the ground written by a game system (flat, no casts): + the grounding solve;
//! * `meshes`: the plugin's Bevy mesh ray casts (2 per foot): + the casts.
//!
//! So the solve is `samples - idle` and the casts `meshes - samples`. `IK_CROWD` sets N
//! (default 1000). Needs the `mesh-ground` feature (CI's `--all-features`).
//!
//! `IK_FULL_BODY=1`: grounding on top of the full-body solve. Each character is an
//! `IkHumanoid::auto()` (ik-core's full-body solver) whose hand, foot, pelvis and look-at targets
//! follow the crowd bench's walk cycle (`benches/crowd.rs`, each character at its own phase),
//! with the `IkGrounding` stage after it (`IkStageOf`): the stack runs [full body, grounding]
//! on one pose. A fourth mode, `full_body` (the grounding stage `IkDisabled`), sits between
//! `idle` (the whole character `IkDisabled`) and `samples`, so the full-body solve is
//! `full_body - idle`, the grounding solve `samples - full_body` and the casts
//! `meshes - samples`.
//!
//! After the criterion runs, one `grounding_crowd/summary` line gives each mode's median frame
//! (30 frames) and those differences.

use std::hint::black_box;
use std::time::Duration;

use bevy::asset::AssetPlugin;
use bevy::camera::primitives::{Aabb, MeshAabb};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_ik::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/integration/common/mod.rs"]
mod common;
use common::{MIXAMO_NAMES, spawn_humanoid};

// `benches/crowd.rs`'s walk cycle and its targets.
#[path = "walk/mod.rs"]
mod walk;
use walk::{
    CYCLE, Frame, Track, compute_on_every_core, median_frame, move_targets, spawn_bones,
    walk_cycle, walk_targets,
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Idle,
    /// `IK_FULL_BODY` only: the full body solves, grounding is disabled.
    FullBody,
    Samples,
    Meshes,
}

/// The game's own ground source for `Mode::Samples`: flat ground at y = 0 under each foot.
fn write_flat_samples(mut q: Query<(&mut IkGroundSamples, &IkGroundingState)>) {
    for (mut samples, state) in &mut q {
        let n = state.feet.len().max(2);
        samples.feet.resize(n, IkFootGround::default());
        for (s, f) in samples.feet.iter_mut().zip(&state.feet) {
            let hit = IkGroundHit {
                point: Vec3::new(f.goal.x, 0.0, f.goal.z),
                normal: Vec3::Y,
            };
            s.heel = Some(hit);
            s.toe = Some(hit);
        }
    }
}

fn crowd(n: usize, mode: Mode, full_body: bool) -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins.set(TaskPoolPlugin {
            task_pool_options: compute_on_every_core(),
        }),
        TransformPlugin,
        AssetPlugin::default(),
        IkPlugin::default(),
    ))
    .init_asset::<Mesh>()
    .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
        1.0 / 60.0,
    )));
    // Terrain: 10 × 10 tiles, each tilted a little, 128 triangles.
    let side = (n as f32).sqrt().ceil() as usize;
    let extent = side as f32 * 1.2;
    let tiles = 10;
    let size = extent / tiles as f32 + 0.2;
    let mesh = Plane3d::default()
        .mesh()
        .size(size, size)
        .subdivisions(7)
        .build();
    let aabb = mesh.compute_aabb().expect("tile has positions");
    let handle = app.world_mut().resource_mut::<Assets<Mesh>>().add(mesh);
    for i in 0..tiles * tiles {
        let (x, z) = ((i % tiles) as f32, (i / tiles) as f32);
        let tilt = Quat::from_euler(
            EulerRot::XYZ,
            0.05 * (x * 1.7).sin(),
            0.0,
            0.05 * (z * 2.3).cos(),
        );
        app.world_mut().spawn((
            Mesh3d(handle.clone()),
            aabb,
            Transform::from_xyz(
                (x + 0.5) * (extent / tiles as f32),
                0.0,
                (z + 0.5) * (extent / tiles as f32),
            )
            .with_rotation(tilt),
            IkGround,
        ));
    }
    let _: Aabb = aabb;
    if mode == Mode::Samples {
        app.add_systems(Update, write_flat_samples);
    }
    let n_legs = MIXAMO_NAMES;
    if full_body {
        app.init_resource::<Frame>()
            .insert_resource(walk_cycle())
            .add_systems(Update, move_targets);
    }
    for i in 0..n {
        let at = Vec3::new(
            (i % side) as f32 * 1.2 + 0.6,
            0.0,
            (i / side) as f32 * 1.2 + 0.6,
        );
        let root = app.world_mut().spawn(Transform::from_translation(at)).id();
        let grounding = IkGrounding::new([
            IkLeg::new(n_legs[13], n_legs[14], n_legs[15]).with_toe(n_legs[16]),
            IkLeg::new(n_legs[17], n_legs[18], n_legs[19]).with_toe(n_legs[20]),
        ])
        .with_source(if mode == Mode::Meshes {
            IkGroundSource::Meshes
        } else {
            IkGroundSource::Samples
        });
        if full_body {
            spawn_bones(app.world_mut(), root);
            app.world_mut().entity_mut(root).insert(IkHumanoid::auto());
            // [full body, grounding]: the grounding stage after the humanoid's.
            let stage = app.world_mut().spawn((grounding, IkStageOf(root))).id();
            if mode == Mode::FullBody {
                app.world_mut().entity_mut(stage).insert(IkDisabled);
            }
        } else {
            spawn_humanoid(app.world_mut(), root, &MIXAMO_NAMES);
            app.world_mut().entity_mut(root).insert(grounding);
        }
        if mode == Mode::Idle {
            app.world_mut().entity_mut(root).insert(IkDisabled);
        }
    }
    if full_body {
        // Every character walks the cycle at its own phase (a seeded spread).
        app.update();
        let mut q = app.world_mut().query::<&IkHumanoidTargets>();
        let targets: Vec<IkHumanoidTargets> = q.iter(app.world()).cloned().collect();
        assert_eq!(targets.len(), n, "every character was mapped");
        for (i, t) in targets.into_iter().enumerate() {
            let phase = (i * 37) % CYCLE;
            for (slot, e) in walk_targets(&t) {
                app.world_mut().entity_mut(e).insert(Track { slot, phase });
            }
        }
    }
    for _ in 0..3 {
        app.update();
    }
    if matches!(mode, Mode::Samples | Mode::Meshes) {
        let mut q = app.world_mut().query::<&IkGroundingState>();
        let grounded = q
            .iter(app.world())
            .filter(|s| s.feet.iter().all(|f| f.grounded))
            .count();
        assert_eq!(grounded, n, "every character found its ground ({mode:?})");
    }
    app
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("IK_CROWD")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let full_body = std::env::var("IK_FULL_BODY").is_ok_and(|v| v != "0");
    let mut group = c.benchmark_group("grounding_crowd");
    let mut modes = vec![("idle", Mode::Idle)];
    if full_body {
        modes.push(("full_body", Mode::FullBody));
    }
    modes.extend([("samples", Mode::Samples), ("meshes", Mode::Meshes)]);
    let prefix = if full_body { "full_body+" } else { "" };
    let mut medians = Vec::new();
    for (label, mode) in modes {
        let mut app = crowd(n, mode, full_body);
        group.bench_function(format!("{prefix}{label}/{n}"), |b| {
            b.iter(|| {
                app.update();
                black_box(app.world().entities().len())
            });
        });
        medians.push((mode, median_frame(&mut app, 30)));
    }
    group.finish();
    let ms = |m: Mode| {
        medians
            .iter()
            .find(|x| x.0 == m)
            .map_or(0.0, |x| x.1.as_secs_f64() * 1e3)
    };
    let (idle, samples, meshes) = (ms(Mode::Idle), ms(Mode::Samples), ms(Mode::Meshes));
    let body = if full_body {
        format!(" + full-body solve {:.2} ms", ms(Mode::FullBody) - idle)
    } else {
        String::new()
    };
    let before_grounding = if full_body { ms(Mode::FullBody) } else { idle };
    println!(
        "grounding_crowd/summary n={n}{}: total {meshes:.2} ms per frame = everything else {idle:.2} ms{body} + grounding solve {:.2} ms + {} mesh casts {:.2} ms (medians of 30 frames)",
        if full_body {
            " [full body, grounding]"
        } else {
            " [grounding]"
        },
        samples - before_grounding,
        4 * n,
        meshes - samples
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
