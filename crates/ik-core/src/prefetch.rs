//! Cache prefetch hints for crowds.
//!
//! A crowd touches every character's solver state once a frame, so that state is cold in
//! cache every frame, and it lives in a few dozen heap blocks a character (pose buffer, stage
//! slots, lanes…). Read in the order the solve needs them, their cache misses come one after
//! the other. [`IkStack::prefetch`](crate::stack::IkStack::prefetch) and
//! [`LimbBatch::prefetch`](crate::stack::LimbBatch::prefetch) ask for all of them at once
//! before the solve starts, so the misses overlap. They are hints: nothing is read, nothing
//! changes, and on targets without a prefetch instruction they do nothing.

/// Bytes in a cache line (the prefetch stride).
const LINE: usize = 64;

/// Asks the CPU to bring the cache line holding `value` into cache (a hint; no effect on
/// targets without a prefetch instruction).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    safe_arch::prefetch_t0(value);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = value;
}

/// Asks the CPU to bring every cache line of `items` into cache (elements larger than a line:
/// the line of each element's start, and of every `LINE`-th element otherwise).
#[inline]
pub fn prefetch_slice<T>(items: &[T]) {
    let size = size_of::<T>().max(1);
    let step = (LINE / size).max(1);
    for item in items.iter().step_by(step) {
        prefetch(item);
    }
    if let Some(last) = items.last() {
        prefetch(last);
    }
}
