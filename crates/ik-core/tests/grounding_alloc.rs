//! The grounding walk (`tests/support/grounding.rs`) does not allocate after set-up: a
//! counting global allocator around the probes, ground samples and stack solves of a walk up a
//! staircase (planting, releasing, smoothing all exercised).

use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};

#[path = "support/gameplay.rs"]
mod gameplay;
#[path = "support/grounding.rs"]
mod grounding_walk;

use grounding_walk::{Terrain, Walk};

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
fn grounding_walk_does_not_allocate() {
    let rig = gameplay::rigs(false).into_iter().next().expect("a rig");
    let mut walk = Walk::new(&rig, Terrain::Stairs { steps: 4 }, 240);
    // Warm up: the first frame may size internal buffers.
    walk.step(0);
    ACTIVE.with(|a| a.set(true));
    for f in 1..240 {
        walk.step(f);
    }
    ACTIVE.with(|a| a.set(false));
    let planted = walk.stage().output().feet.iter().any(|f| f.grounded);
    assert!(planted);
    assert_eq!(
        ALLOCATIONS.load(Ordering::Relaxed),
        0,
        "allocations during the walk"
    );
}
