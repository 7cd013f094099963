//! The VR body per frame over the scripted 60 s tracker recording (walk, turn, side-step,
//! crouch, reach; `tests/support/vr_recording.rs`), through an `IkStack` as a game runs it,
//! on the Mixamo-named test rig and the two CC0 characters in `assets/`.
//!
//! Prints per rig: median / p99 / max µs per frame over the whole recording (each frame timed
//! once with `Instant`, in order, as a game would run it). Then criterion times one frame
//! (frames taken in order, cycling through the recording) per rig.
//!
//! `IK_VR_FRAMES` limits the frames per rig (default: the whole recording, 3600).

use core::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::Pose;
use ik_core::stack::{IkStack, Stage};
use ik_core::vr::VrBody;

#[path = "../tests/support/gameplay.rs"]
mod gameplay;
#[path = "../tests/support/vr_recording.rs"]
mod vr_recording;

use gameplay::Rig;
use vr_recording::RecFrame;

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

struct Prepared {
    name: String,
    stack: IkStack,
    slot: usize,
    rest: Pose,
    frames: Vec<RecFrame>,
    next: usize,
}

impl Prepared {
    fn new(rig: Rig, limit: usize) -> Self {
        let mut body = VrBody::new(&rig.skeleton, &rig.map).expect("rig maps");
        body.calibration = vr_recording::calibration(&body);
        let mut frames = vr_recording::recording(&body, &rig.skeleton, &rig.map);
        frames.truncate(limit);
        let mut stack = IkStack::new(rig.skeleton.clone());
        let slot = stack.push(Stage::custom(body)).expect("valid stage");
        Self {
            name: rig.name,
            stack,
            slot,
            rest: rig.skeleton.rest_pose(),
            frames,
            next: 0,
        }
    }

    /// One frame, in order (the recording restarts from a reset body when it ends).
    fn frame(&mut self) {
        let f = self.next % self.frames.len();
        self.next += 1;
        let s = self.stack.slot_mut(self.slot).expect("slot");
        let body = s.stage.as_custom_mut::<VrBody>().expect("VR stage");
        if f == 0 {
            body.reset();
        }
        body.trackers = self.frames[f].trackers;
        self.stack.set_input(&self.rest).expect("pose fits");
        black_box(self.stack.solve());
    }
}

fn bench(c: &mut Criterion) {
    let limit: usize = std::env::var("IK_VR_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let mut rigs: Vec<Prepared> = gameplay::rigs(true)
        .into_iter()
        .filter(|r| r.name == "Mixamo/PlusY" || r.name.ends_with(".glb"))
        .map(|r| Prepared::new(r, limit))
        .collect();
    for p in &mut rigs {
        let n = p.frames.len();
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            p.frame();
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "vr_body {:<24} {n} frames: median {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            p.name,
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            percentile(&times, 1.0),
        );
    }
    let mut group = c.benchmark_group("vr_body");
    for p in &mut rigs {
        group.bench_function(p.name.clone(), |b| b.iter(|| p.frame()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
