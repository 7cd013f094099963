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

use std::hint::black_box;

use bevy::asset::AssetPlugin;
use bevy::camera::primitives::{Aabb, MeshAabb};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_ik::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/common/mod.rs"]
mod common;
use common::{MIXAMO_NAMES, spawn_humanoid};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Idle,
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

fn crowd(n: usize, mode: Mode) -> App {
    let mut app = App::new();
    let mut pools = TaskPoolOptions::default();
    pools.compute.min_threads =
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    app.add_plugins((
        MinimalPlugins.set(TaskPoolPlugin {
            task_pool_options: pools,
        }),
        TransformPlugin,
        AssetPlugin::default(),
        IkPlugin::default(),
    ))
    .init_asset::<Mesh>()
    .insert_resource(TimeUpdateStrategy::ManualDuration(
        core::time::Duration::from_secs_f64(1.0 / 60.0),
    ));
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
    for i in 0..n {
        let at = Vec3::new(
            (i % side) as f32 * 1.2 + 0.6,
            0.0,
            (i / side) as f32 * 1.2 + 0.6,
        );
        let root = app.world_mut().spawn(Transform::from_translation(at)).id();
        spawn_humanoid(app.world_mut(), root, &MIXAMO_NAMES);
        let grounding = IkGrounding::new([
            IkLeg::new(n_legs[13], n_legs[14], n_legs[15]).with_toe(n_legs[16]),
            IkLeg::new(n_legs[17], n_legs[18], n_legs[19]).with_toe(n_legs[20]),
        ])
        .with_source(if mode == Mode::Meshes {
            IkGroundSource::Meshes
        } else {
            IkGroundSource::Samples
        });
        let mut e = app.world_mut().entity_mut(root);
        e.insert(grounding);
        if mode == Mode::Idle {
            e.insert(IkDisabled);
        }
    }
    for _ in 0..3 {
        app.update();
    }
    if mode != Mode::Idle {
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
    let mut group = c.benchmark_group("grounding_crowd");
    for (label, mode) in [
        ("idle", Mode::Idle),
        ("samples", Mode::Samples),
        ("meshes", Mode::Meshes),
    ] {
        let mut app = crowd(n, mode);
        group.bench_function(format!("{label}/{n}"), |b| {
            b.iter(|| {
                app.update();
                black_box(app.world().entities().len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
