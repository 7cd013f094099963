//! A counting global allocator for the "does not allocate per solve" tests.
//!
//! A test binary installs it and wraps the code under test:
//!
//! ```ignore
//! #[path = "support/alloc.rs"]
//! mod alloc;
//! #[global_allocator]
//! static GLOBAL: alloc::Counting = alloc::Counting;
//! let (_, allocations) = alloc::allocations_during(|| solver.solve(..));
//! assert_eq!(allocations, 0);
//! ```
//!
//! Only the calling thread's allocations (and reallocations) count: the test harness's own
//! threads allocate too.

use core::cell::Cell;
use std::alloc::{GlobalAlloc, Layout, System};

/// Forwards to the system allocator; counts `alloc` and `realloc` on threads that asked.
pub struct Counting;

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: the allocator also runs while thread-locals are being torn down.
    let active = ACTIVE.try_with(Cell::get).unwrap_or(false);
    if active {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
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

/// Runs `f` and returns its result with the number of allocations this thread made during it.
/// Counts only where [`Counting`] is the binary's global allocator (else always 0).
pub fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = COUNT.with(Cell::get);
    ACTIVE.with(|a| a.set(true));
    let result = f();
    ACTIVE.with(|a| a.set(false));
    (result, COUNT.with(Cell::get) - before)
}

/// The binary that includes this module really counts (its global allocator is [`Counting`]):
/// a zero from [`allocations_during`] is then evidence, not a disconnected counter.
#[test]
fn the_counter_sees_an_allocation() {
    let (v, allocations) = allocations_during(|| std::hint::black_box(vec![1u8; 64]));
    assert_eq!(v.len(), 64);
    assert!(allocations >= 1, "counted {allocations}");
}
