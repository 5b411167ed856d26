//! The CPU copy engine keeps the memory it copies alive for the whole copy.
//!
//! A copy command checks that its source and destination lie inside live allocations, under the
//! read side of the device's allocation map; the allocator takes the write side before it
//! returns a block to the host. If the copy released the map before copying, a block freed in
//! between would be unmapped under the copy (a segfault, or a write into memory that has been
//! handed to someone else). This test frees the source of a large copy *while the copy runs*:
//! the free must wait for the copy, and the copy must complete with the right bytes.
#![cfg(all(any(target_os = "linux", target_os = "macos"), any(target_arch = "x86_64", target_arch = "aarch64")))]

use hcq::allocator::BufferSpec;
use hcq::device::Device;
use hcq_cpu::device::CpuDevice;
use std::time::{Duration, Instant};

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

/// Large enough that the host allocator maps it on its own (glibc's mmap threshold is at most
/// 32 MiB), so a free unmaps it at once, and that the copy takes tens of milliseconds.
const BYTES: u64 = 256 << 20;

/// Bytes compared at a time.
const CHUNK: usize = 1 << 20;

/// The bytes of chunk `i` of the source (never zero, different per chunk).
fn pattern(i: usize) -> Vec<u8> {
    (0..CHUNK).map(|j| ((i * 7 + j) % 251) as u8 + 1).collect()
}

/// Most copies tried before the test gives up on landing the free inside one.
const ATTEMPTS: usize = 8;

#[test]
fn a_source_freed_during_a_copy_is_released_only_after_the_copy() {
    let dev = CpuDevice::new("CPU", 1).unwrap();
    // Every attempt checks the bytes; one whose free landed after the copy had already finished
    // proves nothing about the race, so the test tries again, and fails if no free ever landed
    // inside a copy (on a quiet machine the first one does).
    let hit = (0..ATTEMPTS).position(|_| free_during_copy(&dev));
    assert!(hit.is_some(), "in {ATTEMPTS} copies the free never landed while the copy was running");
}

/// Free the source of a running copy; the bytes must all be there when the free returns.
/// Returns whether the copy was still running when the free was called.
fn free_during_copy(dev: &CpuDevice) -> bool {
    // Raw blocks from the device's own allocator backend: no cache, no deferred free — the
    // copy engine's lock is all that protects them.
    let backend = dev.allocator().backend();
    let spec = BufferSpec { nolru: true, ..BufferSpec::default() };
    let src = backend.alloc(BYTES, &spec).unwrap();
    let dst = backend.alloc(BYTES, &spec).unwrap();
    for (i, chunk) in (0..BYTES).step_by(CHUNK).enumerate() {
        src.write_cpu(chunk, &pattern(i)).unwrap();
    }
    let dptr = dst.cpu_ptr().unwrap().as_ptr();
    let (dst_addr, src_addr) = (dst.addr(), src.addr());

    let hcq = dev.soft().engine();
    let copy = hcq.channel_id("copy").expect("the CPU device has a copy engine");
    let mut q = hcq.queue().unwrap();
    q.copy(dst_addr, src_addr, BYTES).unwrap();
    let stamp = submit!(hcq, copy, &mut q).unwrap();

    // Wait until the copy has visibly started (a byte an eighth from either end changed: not
    // the ends themselves, which a large `memcpy` stores last), so the free below lands while
    // it runs.
    let probe = |off: u64| {
        // Volatile: the copy engine writes the block concurrently.
        // SAFETY: `dst` is a live block of BYTES bytes (freed only at the end of this function).
        unsafe { dptr.add(off as usize).read_volatile() }
    };
    let started = Instant::now();
    let (early, late) = (BYTES / 8, BYTES - BYTES / 8);
    while probe(early) == 0 && probe(late) == 0 && !hcq.timeline().passed(stamp) {
        assert!(started.elapsed() < Duration::from_secs(30), "the copy never started");
        std::hint::spin_loop();
    }
    // Still copying: one of the two probes not written yet (only the copy writes them).
    let running = probe(early) == 0 || probe(late) == 0;
    // Free the source for real while the copy is still reading it. With the lock held across
    // the copy this blocks until the copy is done; without it the block would be unmapped under
    // the copy.
    backend.free(src, &spec);
    // The free returned: the copy must already have written every byte (it held the map until
    // its last byte). Read before waiting on the timeline, so this checks the free's order.
    let mut got = vec![0u8; CHUNK];
    for (i, chunk) in (0..BYTES).step_by(CHUNK).enumerate() {
        dst.read_cpu(chunk, &mut got).unwrap();
        assert!(got == pattern(i), "chunk {i}: the free returned before the copy had finished");
    }
    hcq.wait(stamp).expect("the copy completes normally");
    backend.free(dst, &spec);
    if !running {
        eprintln!("note: the copy finished before the free; trying again");
    }
    running
}
