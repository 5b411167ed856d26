//! The simulated gfx1100's costs: the compute CP per packet, the SDMA engine's copy bandwidth,
//! tinygrad's kernels through the CP on 1, 2 and 4 shader threads (the work-group spread's
//! speedup), and the interpreter's throughput through the CP on a convolution and a matmul, in
//! lane-instructions per second (one lane executing one vector instruction; `shader_core`).
//!
//! `cargo bench -p hcq-sim-amd --bench cp` (`-- shader_core` for the throughput alone)

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use divan::Bencher;
use divan::counter::ItemsCount;
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

/// tinygrad's `test_speed_copy_bandwidth`: 200 MB.
const BIG_COPY: usize = 200_000_000;

/// One 200 MB `COPY LINEAR` (tinygrad's `test_speed_copy_bandwidth`) on `threads` shader
/// threads (the copy spreads over the same pool), both buffers written first (so their pages are
/// the host's already: the copy, not first-touch page faults, is measured).
#[divan::bench(args = [1, 2], sample_count = 5, sample_size = 1)]
fn sdma_copy_200mb(b: Bencher, threads: usize) {
    let gpu = gpu(threads);
    let mut ring = sdma_ring(&gpu, 4096);
    let m = gpu.memory();
    let src = m.alloc(None, BIG_COPY as u64).unwrap();
    let dst = m.alloc(None, BIG_COPY as u64).unwrap();
    let pattern: Vec<u8> = (0..BIG_COPY).map(|i| (i * 7 + 3) as u8).collect();
    m.write(src, &pattern).unwrap();
    m.write(dst, &vec![0; BIG_COPY]).unwrap();
    let words = sdma::copy(dst, src, BIG_COPY as u32);
    b.counter(divan::counter::BytesCount::new(BIG_COPY)).bench_local(|| {
        ring.submit(&gpu, &words);
        gpu.process();
    });
    assert_eq!(ring.state(&gpu), QueueState::Idle);
}

/// The floor for `sdma_copy_200mb`: the host's own memcpy of 200 MB (`copy_from_slice` between
/// two `Vec<u8>`s already written), in the same run.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn memcpy_200mb(b: Bencher) {
    let src: Vec<u8> = (0..BIG_COPY).map(|i| (i * 7 + 3) as u8).collect();
    let mut dst = vec![1u8; BIG_COPY];
    b.counter(divan::counter::BytesCount::new(BIG_COPY)).bench_local(|| {
        dst.copy_from_slice(divan::black_box(&src));
    });
    divan::black_box(&dst);
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

/// Launch `launch` of the `amd` graph of the example bundle `examples/amd/BUNDLE`: its code
/// object, its arguments' buffers (the bundle's bytes where it has them, zeros elsewhere), its
/// grid.
fn bundle_kernel(gpu: &Gpu, bundle: &str, launch: usize) -> Case {
    let dir = hcq_testkit::root().join("examples/amd").join(bundle);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let g = m["graphs"].as_array().unwrap().iter().find(|g| g["name"] == "amd").unwrap();
    let l = &g["launches"][launch];
    let p = &g["programs"][l["program"].as_u64().unwrap() as usize];
    let co = std::fs::read(dir.join(p["objects"]["amd_gfx1100"]["file"].as_str().unwrap())).unwrap();
    let bufs = l["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let b = &g["buffers"][a["buffer"].as_u64().unwrap() as usize];
            let n = a["nbytes"].as_u64().unwrap() as usize;
            let mut init = match b["file"].as_str() {
                Some(f) => std::fs::read(dir.join(f)).unwrap(),
                None => vec![0; n],
            };
            init.resize(n, 0);
            (init, "uchar".to_string(), Vec::new())
        })
        .collect();
    let dim = |v: &serde_json::Value| [0, 1, 2].map(|i| v[i].as_u64().unwrap() as u32);
    let vals: Vec<i64> = l["vals"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap_or(0)).collect();
    let name = format!("{bundle}/{}", l["name"].as_str().unwrap());
    layout(gpu, &name, &co, (dim(&l["global_size"]), dim(&l["local_size"])), bufs, &vals)
}

/// One kernel's dispatch replayed through the CP on `threads` shader threads, counted in the
/// lane-instructions it executes.
fn shader_core(b: Bencher, threads: usize, load: impl Fn(&Gpu) -> Case) {
    let gpu = gpu(threads);
    let mut ring = compute_ring(&gpu, 1 << 16);
    let case = load(&gpu);
    let before = gpu.queue_status(ring.id()).unwrap().stats.lane_insts;
    ring.submit(&gpu, &case.exec);
    gpu.process();
    assert_eq!(ring.state(&gpu), QueueState::Idle, "{}", case.name);
    let lanes = gpu.queue_status(ring.id()).unwrap().stats.lane_insts - before;
    b.counter(ItemsCount::new(lanes)).bench_local(|| {
        ring.submit(&gpu, &case.exec);
        gpu.process();
    });
    assert_eq!(ring.state(&gpu), QueueState::Idle, "{}", case.name);
}

/// The interpreter's throughput through the CP, 1 and 2 shader threads, on tinygrad's gfx1100
/// kernels: two convolutions and a matmul of the example bundles (`convnet`'s first layer: 98
/// work-groups of 8 work-items; its second: 25 of 32; `wide`'s first matmul: 4 of 128), and the
/// conv2d and matmul_f32 kernel cases (3 and 2 work-groups of 128: at most 1.5× and 2× on 2).
#[divan::bench_group(sample_count = 20)]
mod shader_core {
    use super::*;

    #[divan::bench(args = [1, 2])]
    fn convnet_conv1(b: Bencher, threads: usize) {
        shader_core(b, threads, |g| bundle_kernel(g, "convnet", 0));
    }

    #[divan::bench(args = [1, 2])]
    fn convnet_conv2(b: Bencher, threads: usize) {
        shader_core(b, threads, |g| bundle_kernel(g, "convnet", 2));
    }

    #[divan::bench(args = [1, 2])]
    fn wide_matmul(b: Bencher, threads: usize) {
        shader_core(b, threads, |g| bundle_kernel(g, "wide", 0));
    }

    #[divan::bench(args = [1, 2])]
    fn conv2d(b: Bencher, threads: usize) {
        shader_core(b, threads, |g| load_case(g, &kernels_dir().join("conv2d.json")));
    }

    #[divan::bench(args = [1, 2])]
    fn matmul_f32(b: Bencher, threads: usize) {
        shader_core(b, threads, |g| load_case(g, &kernels_dir().join("matmul_f32.json")));
    }
}
