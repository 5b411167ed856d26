//! A global allocator for the allocation-count tests of several crates (included by path: a
//! test installs it with `#[global_allocator]`). It forwards to the system allocator and counts
//! the allocations (`alloc`, `alloc_zeroed`, `realloc`) that the *calling* thread makes inside
//! [`allocations_in`]: the test harness's own threads, which allocate between and during tests
//! (more often on a loaded machine or under qemu-user), never reach a count. Code under test that
//! allocates on threads of its own is not counted: use it for single-threaded paths.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator.
pub struct Counting;

thread_local! {
    // const-initialized and without Drop: accessing them never allocates (native TLS)
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: while a thread is torn down its slots may be gone; nothing is counted then
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
}

/// Run `f` and count the allocations the calling thread made meanwhile.
pub fn allocations_in<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = COUNT.with(Cell::get);
    ON.with(|on| on.set(true));
    let r = f();
    ON.with(|on| on.set(false));
    (r, COUNT.with(Cell::get) - before)
}
