//! tinygrad's gfx1100 kernels through the compute CP: each case of `hal/amd/tests/data/kernels`
//! (a kernel with its buffers before and as tinygrad's CPU device left them) is laid out in GPU
//! memory, its dispatch assembled as PM4 packets the way tinygrad 0.14's `AMDComputeQueue.exec`
//! emits them (program registers by `SET_SH_REG`, `DISPATCH_DIRECT`), written into a ring and
//! run by a doorbell; every buffer must then hold the CPU's bytes.
//!
//! This proves the CP builds the dispatch the kernel needs from registers alone: the program
//! address from `COMPUTE_PGM_LO/HI`, the user SGPRs from `COMPUTE_USER_DATA_*` and `USER_SGPR`,
//! the work-group ids from `TGID_*_EN`, LDS from `LDS_SIZE`, the wave size from `CS_W32_EN`, the
//! work-group size from `COMPUTE_NUM_THREAD_*` and the grid from `DISPATCH_DIRECT` — a wrong one
//! gives wrong bytes or a fault.

mod common;

use common::*;
use hcq_sim_amd::{Gpu, GpuConfig, QueueState};
use std::time::{Duration, Instant};

/// Run `names` (or all cases) through one GPU's compute ring; the failures.
fn run(gpu: &Gpu, names: Option<&[&str]>) -> (usize, Vec<String>) {
    let mut ring = compute_ring(gpu, 1 << 14);
    let sig = gpu.memory().alloc(None, 4096).unwrap();
    let mut bad = Vec::new();
    let mut n = 0;
    for (k, path) in all_cases().iter().enumerate() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if names.is_some_and(|ns| !ns.contains(&stem.as_str())) {
            continue;
        }
        n += 1;
        let case = load_case(gpu, path);
        let mut words = case.exec.clone();
        words.extend(signal(sig, k as u32 + 1));
        ring.submit(gpu, &words);
        gpu.process();
        match ring.state(gpu) {
            QueueState::Idle => {}
            s => panic!("{stem}: the queue is {s:?}"),
        }
        assert_eq!(gpu.memory().read_u32(sig).unwrap(), k as u32 + 1, "{stem}: the signal after the dispatch");
        if let Err(e) = case.check(gpu) {
            bad.push(e);
        }
        case.free(gpu);
    }
    let st = gpu.queue_status(ring.id()).unwrap().stats;
    assert_eq!(st.dispatches, n as u64, "one dispatch a case");
    assert!(st.lane_insts > 1000 * n as u64, "the kernels ran: {st:?}");
    eprintln!("{n} cases: {st:?}");
    (n, bad)
}

#[test]
fn an_elementwise_an_lds_reduction_and_a_wmma_matmul_compute_the_cpus_bytes() {
    let gpu = Gpu::new(config());
    let names = ["add_f32", "matvec_f32", "sum_all_f32", "matmul_f32", "matmul_half_wmma"];
    let (n, bad) = run(&gpu, Some(&names));
    assert_eq!(n, names.len(), "every named case exists");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_kernel_case_through_the_cp_computes_the_cpus_bytes() {
    let gpu = Gpu::new(config());
    let t = Instant::now();
    let (n, bad) = run(&gpu, None);
    assert!(n >= 100, "{n} cases");
    assert!(bad.is_empty(), "{} of {n} cases differ:\n{}", bad.len(), bad.join("\n"));
    eprintln!("{n} cases through the CP in {:.2} s", t.elapsed().as_secs_f64());
}

/// A dispatch's work-groups on several threads write what one thread writes.
#[test]
fn threads_compute_what_one_thread_computes() {
    for threads in [1, 2, 4] {
        let gpu = Gpu::new(GpuConfig {
            shader_threads: threads,
            hang_timeout: Some(Duration::from_secs(2)),
            ..GpuConfig::default()
        });
        let (n, bad) = run(&gpu, Some(&["matmul_f32", "add_f32", "softmax_0", "conv2d"]));
        assert_eq!(n, 4);
        assert!(bad.is_empty(), "{threads} threads: {}", bad.join("\n"));
    }
}

/// A replayed dispatch reuses the decoded program; a rewritten program is loaded again.
#[test]
fn the_program_cache_reuses_a_program_and_reloads_a_rewritten_one() {
    let gpu = Gpu::new(config());
    let mut ring = compute_ring(&gpu, 1 << 12);
    let case = load_case(&gpu, &kernels_dir().join("add_f32.json"));
    ring.submit(&gpu, &case.exec);
    ring.submit(&gpu, &case.exec);
    gpu.process();
    assert_eq!(gpu.program_cache_stats(), (1, 1), "one load, one reuse");
    case.check(&gpu).unwrap();
    // Rewrite the first instruction with s_endpgm (SOPP 0x30: 0xbfb00000): the kernel now ends at
    // once, so a reload shows in the outputs being left alone.
    let code = case.allocs[0];
    let out = case.bufs[0].0;
    gpu.memory().write(out, &vec![0u8; case.bufs[0].2.len()]).unwrap();
    let first = gpu.memory().read_u32(code).unwrap();
    gpu.memory().write_u32(code, 0xbfb0_0000).unwrap();
    ring.submit(&gpu, &case.exec);
    gpu.process();
    assert_eq!(gpu.program_cache_stats(), (2, 1), "the rewritten program is loaded again");
    assert_eq!(gpu.memory().read_u32(out).unwrap(), 0, "the new program ran (it writes nothing)");
    gpu.memory().write_u32(code, first).unwrap();
    ring.submit(&gpu, &case.exec);
    gpu.process();
    case.check(&gpu).unwrap();
}
