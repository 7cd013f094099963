//! The grounding walk (`tests/support/grounding.rs`) does not allocate after set-up: a
//! counting global allocator around the probes, ground samples and stack solves of a walk up a
//! staircase (planting, releasing, smoothing all exercised).

#[path = "support/gameplay.rs"]
mod gameplay;
#[path = "support/grounding.rs"]
mod grounding_walk;

use grounding_walk::{Terrain, Walk};

#[path = "support/alloc.rs"]
mod alloc;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

#[test]
fn grounding_walk_does_not_allocate() {
    let rig = gameplay::rigs(false).into_iter().next().expect("a rig");
    let mut walk = Walk::new(&rig, Terrain::Stairs { steps: 4 }, 240);
    // Warm up: the first frame may size internal buffers.
    walk.step(0);
    let ((), allocations) = alloc::allocations_during(|| {
        for f in 1..240 {
            walk.step(f);
        }
    });
    let planted = walk.stage().output().feet.iter().any(|f| f.grounded);
    assert!(planted);
    assert_eq!(allocations, 0, "allocations during the walk");
}
