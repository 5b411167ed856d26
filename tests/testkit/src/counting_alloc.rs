//! A global allocator for the allocation-count tests (a test installs it with
//! `#[global_allocator] static A: Counting = Counting;`). It forwards to the system allocator
//! and counts the allocations (`alloc`, `alloc_zeroed`, `realloc`) made while a measurement runs:
//!
//! - [`allocations_in`]: those the *calling* thread makes. The test harness's own threads, which
//!   allocate between and during tests (more often on a loaded machine or under qemu-user), never
//!   reach the count; code under test that allocates on threads of its own is not counted either:
//!   use it for single-threaded paths.
//! - [`allocations_on_every_thread`]: those of the whole process, for paths that run on threads
//!   of their own (a simulated device's command processor). One such measurement runs at a time
//!   (they take a lock), and the test binary should have no harness (`harness = false`), whose
//!   threads allocate while a test measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The counting allocator.
pub struct Counting;

thread_local! {
    // const-initialized and without Drop: accessing them never allocates (native TLS)
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

/// Counting on every thread (an [`allocations_on_every_thread`] runs).
static EVERYWHERE: AtomicBool = AtomicBool::new(false);
static EVERYWHERE_COUNT: AtomicU64 = AtomicU64::new(0);
static EVERYWHERE_BYTES: AtomicU64 = AtomicU64::new(0);
/// Backtraces still to print for allocations inside a process-wide measurement ([`trace_next`]).
static TRACE_LEFT: AtomicU64 = AtomicU64::new(0);
/// One process-wide measurement at a time.
static SERIAL: Mutex<()> = Mutex::new(());

thread_local! {
    /// Set while this thread prints a backtrace, whose own allocations are not counted or traced.
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
}

fn note(size: usize) {
    if EVERYWHERE.load(Ordering::Relaxed) && !IN_TRACE.try_with(Cell::get).unwrap_or(false) {
        EVERYWHERE_COUNT.fetch_add(1, Ordering::Relaxed);
        EVERYWHERE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
        if TRACE_LEFT.load(Ordering::Relaxed) > 0 {
            TRACE_LEFT.fetch_sub(1, Ordering::Relaxed);
            IN_TRACE.with(|t| t.set(true));
            let t = std::thread::current();
            eprintln!(
                "allocation of {size} bytes on thread {:?}:\n{}",
                t.name(),
                std::backtrace::Backtrace::force_capture()
            );
            IN_TRACE.with(|t| t.set(false));
        }
    }
    // `try_with`: while a thread is torn down its slots may be gone; nothing is counted then
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; counting touches only atomics
// and const-initialized thread-locals (it never allocates, but for a requested backtrace, which
// allocates through this same allocator re-entrantly, as `System` allows).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note(n);
        // SAFETY: as above; `p` came from `System` (every allocation goes through this wrapper).
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

/// Run `f` and count the allocations every thread of the process made meanwhile (one such
/// measurement at a time: a second waits for the first).
pub fn allocations_on_every_thread<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let (r, n, _) = allocations_and_bytes_on_every_thread(f);
    (r, n)
}

/// [`allocations_on_every_thread`] with the bytes they asked for.
pub fn allocations_and_bytes_on_every_thread<R>(f: impl FnOnce() -> R) -> (R, u64, u64) {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    EVERYWHERE_COUNT.store(0, Ordering::SeqCst);
    EVERYWHERE_BYTES.store(0, Ordering::SeqCst);
    EVERYWHERE.store(true, Ordering::SeqCst);
    let r = f();
    EVERYWHERE.store(false, Ordering::SeqCst);
    (r, EVERYWHERE_COUNT.load(Ordering::SeqCst), EVERYWHERE_BYTES.load(Ordering::SeqCst))
}

/// Print a backtrace for each of the next `n` allocations a process-wide measurement counts (to
/// find where a regression allocates; the tests read `HCQ_ALLOC_TRACE`).
pub fn trace_next(n: u64) {
    TRACE_LEFT.store(n, Ordering::SeqCst);
}
