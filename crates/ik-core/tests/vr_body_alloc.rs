//! The VR body does not allocate per frame: a counting global allocator around the scripted
//! tracker recording (walking, turning, crouching, reaching: steps start and land, the
//! full-body solver iterates on limits) on an `IkStack`, on every procedural rig convention.

use crate::gameplay;
use crate::vr_recording;

use ik_core::stack::IkStack;
use ik_core::vr::VrBody;

use crate::alloc;

#[test]
fn vr_body_does_not_allocate_per_frame() {
    for rig in gameplay::rigs(false) {
        let mut body = VrBody::new(&rig.skeleton, &rig.map).unwrap();
        body.calibration = vr_recording::calibration(&body);
        let frames = vr_recording::recording(&body, &rig.skeleton, &rig.map);
        let mut stack = IkStack::new(rig.skeleton.clone());
        let slot = stack.push(body).unwrap();
        let rest = rig.skeleton.rest_pose();
        let frame = |stack: &mut IkStack, f: usize| {
            let s = stack.slot_mut(slot).unwrap();
            let body = s.stage.as_custom_mut::<VrBody>().unwrap();
            body.trackers = frames[f].trackers;
            stack.set_input(&rest).unwrap();
            let report = stack.solve();
            assert_eq!(report.failed, 0, "{}", rig.name);
        };
        // Warm-up: the first solves may size internal buffers.
        for f in 0..3 {
            frame(&mut stack, f);
        }
        let ((), allocations) = alloc::allocations_during(|| {
            for f in (3..frames.len()).step_by(3) {
                frame(&mut stack, f);
            }
        });
        assert_eq!(allocations, 0, "{}", rig.name);
    }
}
