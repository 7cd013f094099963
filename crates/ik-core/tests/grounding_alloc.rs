//! The grounding course (`tests/support/grounding.rs`) does not allocate after set-up: a
//! counting global allocator around the probes, ground samples and stack solves of the stepping
//! clip up the stairs (planting, releasing, blending across steps all exercised).

use crate::gameplay;
use crate::grounding_course as grounding_walk;

use grounding_walk::{Clip, FRAMES, Ground, Input, Run, STAND};

use crate::alloc;

#[test]
fn grounding_walk_does_not_allocate() {
    let rig = gameplay::rigs(false).into_iter().next().expect("a rig");
    let clip = Clip::new(&rig, Input::Stepping);
    let mut walk = Run::new(&rig, &clip, Ground::StairsUp);
    // Warm up: the first frame may size internal buffers.
    walk.step(0);
    let mut blended = false;
    let ((), allocations) = alloc::allocations_during(|| {
        for f in 1..FRAMES.min(STAND + 480) {
            walk.step(f);
            blended |= walk.stage().output().feet.iter().any(|f| f.blend != 0.0);
        }
    });
    let grounded = walk.stage().output().feet.iter().any(|f| f.grounded);
    assert!(grounded && blended);
    assert_eq!(allocations, 0, "allocations during the walk");
}
