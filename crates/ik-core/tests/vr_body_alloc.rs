//! The VR body does not allocate per frame: a counting global allocator around the scripted
//! tracker recording (walking, turning, crouching, reaching: steps start and land, the
//! full-body solver iterates on limits) on an `IkStack`, on every procedural rig convention.

#[path = "support/gameplay.rs"]
mod gameplay;
#[path = "support/vr_recording.rs"]
mod vr_recording;

use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};

use ik_core::stack::{IkStack, Stage};
use ik_core::vr::VrBody;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Only this thread's allocations count (the test harness's own threads allocate too).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if ACTIVE.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn vr_body_does_not_allocate_per_frame() {
    for rig in gameplay::rigs(false) {
        let mut body = VrBody::new(&rig.skeleton, &rig.map).unwrap();
        body.calibration = vr_recording::calibration(&body);
        let frames = vr_recording::recording(&body, &rig.skeleton, &rig.map);
        let mut stack = IkStack::new(rig.skeleton.clone());
        let slot = stack.push(Stage::custom(body)).unwrap();
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
        ALLOCATIONS.store(0, Ordering::Relaxed);
        ACTIVE.with(|a| a.set(true));
        for f in (3..frames.len()).step_by(3) {
            frame(&mut stack, f);
        }
        ACTIVE.with(|a| a.set(false));
        assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "{}", rig.name);
    }
}
