//! Steady state allocates nothing: once an `Interp` has run a bundle's launches, running them
//! again performs no heap allocation (a counting global allocator watches the second pass).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Counting;

static ARMED: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call unchanged to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARMED.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn second_pass_over_a_bundle_allocates_nothing() {
    for name in ["mlp", "elementwise", "chain100"] {
        let dir = common::repo_root().join("examples").join(name);
        let mut b = common::load_bundle(&dir);
        let launches = common::launches(&b);
        let mut it = hcq_ir3::exec::Interp::new();
        common::run_launches(&mut b, &launches, &mut it).unwrap();
        ALLOCS.store(0, Ordering::Relaxed);
        ARMED.store(true, Ordering::Relaxed);
        let r = common::run_launches(&mut b, &launches, &mut it);
        ARMED.store(false, Ordering::Relaxed);
        let stats = r.unwrap();
        assert!(stats.lane_instructions > 0);
        assert_eq!(ALLOCS.load(Ordering::Relaxed), 0, "{name}: allocations in the second pass");
    }
}
