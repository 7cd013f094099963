//! Cost of foot grounding per character per frame: the grounding course's stepping clip
//! (`tests/support/grounding.rs`: probe the ground under both feet, hand the samples over,
//! solve the grounding stage) carried at 0.5 m/s up 18 cm stairs and across ±8 cm sine ground,
//! next to the full-body solver's tracking solve of a walk (`gameplay` Control scenario) on the
//! same rig in the same run. Rigs: the Mixamo-named test rig and the UAL CC0 character.
//!
//! Per iteration: 240 frames of the walk from the moment the controller starts (so planting,
//! releasing and blending across steps are all in the mix); the per-frame figure is the time
//! over the frame count (criterion's throughput, elements = frames).

use core::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/support/gameplay.rs"]
mod gameplay;
#[path = "../tests/support/grounding.rs"]
mod grounding_walk;

use gameplay::{Scenario, rigs, scenario_frames, track};
use grounding_walk::{Clip, Ground, Input, Run, STAND};

const FRAMES: usize = 240;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("grounding");
    group.throughput(criterion::Throughput::Elements(FRAMES as u64));
    for rig in rigs(true)
        .into_iter()
        .filter(|r| r.name.starts_with("Mixamo/PlusY") || r.name.starts_with("ual"))
    {
        let clip = Clip::new(&rig, Input::Stepping);
        for ground in [Ground::StairsUp, Ground::Sine] {
            let mut walk = Run::new(&rig, &clip, ground);
            let name = match ground {
                Ground::StairsUp => "stairs",
                _ => "sine_ground",
            };
            group.bench_function(format!("{}/{name}/grounding", rig.name), |b| {
                b.iter(|| {
                    walk.stage().reset();
                    for f in STAND..STAND + FRAMES {
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
