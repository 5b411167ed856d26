//! The simulated gfx1100's costs: the compute CP per packet, the SDMA engine's copy bandwidth,
//! and tinygrad's kernels through the CP on 1, 2 and 4 shader threads (the work-group spread's
//! speedup).
//!
//! `cargo bench -p hcq-sim-amd --bench cp`

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use divan::Bencher;
use hcq_sim_amd::{Gpu, GpuConfig, QueueState};
use std::time::Duration;

fn main() {
    divan::main();
}

fn gpu(threads: usize) -> Gpu {
    Gpu::new(GpuConfig { shader_threads: threads, hang_timeout: Some(Duration::from_secs(10)), ..GpuConfig::default() })
}

/// 1000 `RELEASE_MEM` signals from the ring: the CP's cost per packet (fetch, decode, write).
#[divan::bench]
fn compute_1000_signals(b: Bencher) {
    let gpu = gpu(1);
    let mut ring = compute_ring(&gpu, 1 << 16);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    let words: Vec<u32> = (0..1000).flat_map(|k| signal(buf, k)).collect();
    b.bench_local(|| {
        ring.submit(&gpu, &words);
        gpu.process();
    });
}

/// One 1 MiB `COPY LINEAR`.
#[divan::bench]
fn sdma_copy_1mib(b: Bencher) {
    let gpu = gpu(1);
    let mut ring = sdma_ring(&gpu, 4096);
    let src = gpu.memory().alloc(None, 1 << 20).unwrap();
    let dst = gpu.memory().alloc(None, 1 << 20).unwrap();
    let words = sdma::copy(dst, src, 1 << 20);
    b.counter(divan::counter::BytesCount::new(1usize << 20)).bench_local(|| {
        ring.submit(&gpu, &words);
        gpu.process();
    });
}

/// Every kernel case's dispatch, replayed (programs cached), with `threads` shader threads.
#[divan::bench(args = [1, 2, 4], sample_count = 10)]
fn all_kernel_cases(b: Bencher, threads: usize) {
    let gpu = gpu(threads);
    let mut ring = compute_ring(&gpu, 1 << 16);
    let cases: Vec<Case> = all_cases().iter().map(|p| load_case(&gpu, p)).collect();
    let words: Vec<u32> = cases.iter().flat_map(|c| c.exec.iter().copied()).collect();
    b.bench_local(|| {
        ring.submit(&gpu, &words);
        gpu.process();
        assert_eq!(ring.state(&gpu), QueueState::Idle);
    });
}

/// The largest-grid cases alone (most work-groups to spread), with `threads` shader threads.
#[divan::bench(args = [1, 2, 4], sample_count = 10)]
fn wide_kernels(b: Bencher, threads: usize) {
    let gpu = gpu(threads);
    let mut ring = compute_ring(&gpu, 1 << 16);
    let mut cases: Vec<Case> = all_cases().iter().map(|p| load_case(&gpu, p)).collect();
    cases.sort_by_key(|c| std::cmp::Reverse(c.groups));
    let words: Vec<u32> = cases.iter().take(10).flat_map(|c| c.exec.iter().copied()).collect();
    b.bench_local(|| {
        ring.submit(&gpu, &words);
        gpu.process();
        assert_eq!(ring.state(&gpu), QueueState::Idle);
    });
}
