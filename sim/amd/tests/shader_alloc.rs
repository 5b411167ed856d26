//! The shader core keeps each thread's wave storage between dispatches: one test in a process of
//! its own, counting the bytes every thread allocates.

mod common;

#[path = "common/shader_program.rs"]
mod shader_program;

use common::*;
use hcq_sim_amd::QueueState;
use hcq_testkit::counting_alloc::{Counting, allocations_and_bytes_on_every_thread};
use shader_program::*;

#[global_allocator]
static A: Counting = Counting;

/// A wave's VGPR file: 256 registers of 32 lanes.
const WAVE_VGPR_BYTES: u64 = 256 * 32 * 4;

/// Once each of the 4 shader threads has run a work-group, each of a hundred more dispatches of
/// 64 one-wave work-groups allocates, on every thread together, under an eighth of one wave's
/// VGPRs: the CP's thread and the pool's keep their waves (a dispatch that made them afresh
/// allocated 4 × 32 KiB and zeroed them), and a cached program is compared with memory without
/// a copy. What is left is the pool's: its job handles and each thread's result.
/// (`HCQ_ALLOC_TRACE=1` prints where the first allocations are made.)
#[test]
fn warm_dispatches_make_no_wave_storage() {
    let gpu = gpu(4);
    let (code, out) = load(&gpu);
    let mut ring = compute_ring(&gpu, 1 << 14);
    for _ in 0..20 {
        ring.submit(&gpu, &dispatch(code, out, 64));
        gpu.process();
    }
    let words: Vec<Vec<u32>> = (0..100).map(|_| dispatch(code, out, 64)).collect();
    if std::env::var_os("HCQ_ALLOC_TRACE").is_some() {
        hcq_testkit::counting_alloc::trace_next(8);
    }
    let ((), n, bytes) = allocations_and_bytes_on_every_thread(|| {
        for w in &words {
            ring.submit(&gpu, w);
            gpu.process();
        }
    });
    assert_eq!(ring.state(&gpu), QueueState::Idle);
    assert_eq!(gpu.memory().read_u32(out + 4 * 63).unwrap(), 63);
    assert!(
        bytes < 100 * WAVE_VGPR_BYTES / 8,
        "100 warm dispatches allocated {bytes} bytes in {n} allocations (one wave's VGPRs: {WAVE_VGPR_BYTES})"
    );
}
