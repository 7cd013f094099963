//! Cost of foot grounding per character per frame: the walk up a staircase and across a
//! seeded height field (`tests/support/grounding.rs`: probe the ground under both feet, hand
//! the samples over, solve the grounding stage), next to the full-body solver's tracking solve
//! of the same walk (`gameplay` Control scenario) on the same rig in the same run, and their
//! ratio. Rigs: the Mixamo-named test rig and the UAL CC0 character.
//!
//! Per iteration: one whole 240-frame sequence (so planting, releasing and smoothing are all
//! in the mix); the per-frame figure is the time over the frame count (criterion's
//! throughput, elements = frames).

use core::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/support/gameplay.rs"]
mod gameplay;
#[path = "../tests/support/grounding.rs"]
mod grounding_walk;

use gameplay::{Scenario, rigs, scenario_frames, track};
use grounding_walk::{Terrain, Walk};

const FRAMES: usize = 240;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("grounding");
    group.throughput(criterion::Throughput::Elements(FRAMES as u64));
    for rig in rigs(true)
        .into_iter()
        .filter(|r| r.name.starts_with("Mixamo/PlusY") || r.name.starts_with("ual"))
    {
        for terrain in [Terrain::Stairs { steps: 4 }, Terrain::HeightField(7)] {
            let mut walk = Walk::new(&rig, terrain, FRAMES);
            let name = match terrain {
                Terrain::Stairs { .. } => "stairs",
                Terrain::HeightField(_) => "height_field",
            };
            group.bench_function(format!("{}/{name}/grounding", rig.name), |b| {
                b.iter(|| {
                    walk.stage().reset();
                    for f in 0..FRAMES {
                        walk.step(black_box(f));
                    }
                    black_box(walk.stage().output().pelvis_offset)
                });
            });
        }
        let frames = scenario_frames(&rig, Scenario::Control, FRAMES, 1);
        let mut solver = rig.solver();
        let mut pose = frames[0].input.clone();
        group.bench_function(format!("{}/full_body_walk", rig.name), |b| {
            b.iter(|| {
                pose.copy_from(&frames[0].input);
                for (f, frame) in frames.iter().enumerate() {
                    black_box(track(
                        &mut solver,
                        &rig.skeleton,
                        &mut pose,
                        black_box(&frame.goals),
                        f,
                    ));
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
