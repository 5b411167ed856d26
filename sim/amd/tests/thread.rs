//! The CP on its own thread: it sleeps until a doorbell, runs the queues while the host goes on,
//! and polls a blocked wait until the host's write lands.

mod common;

use common::*;
use hcq_sim_amd::cp::pm4::*;
use hcq_sim_amd::{Gpu, QueueState};
use std::time::{Duration, Instant};

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

#[test]
fn a_doorbell_wakes_the_cp_thread() {
    let mut gpu = Gpu::new(config());
    gpu.start();
    assert!(gpu.threaded());
    let mut ring = compute_ring(&gpu, 1024);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    for k in 1..=50u32 {
        ring.submit(&gpu, &signal(buf, k));
        wait_for("the signal", || gpu.memory().read_u32(buf).unwrap() == k);
    }
    gpu.stop();
    assert!(!gpu.threaded());
}

#[test]
fn the_cp_thread_proceeds_when_the_host_writes_what_a_wait_waits_for() {
    let mut gpu = Gpu::new(config());
    gpu.start();
    let mut ring = compute_ring(&gpu, 1024);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    let mut w = wait_mem(buf, 1, 1, FUNC_EQ);
    w.extend(release_mem(buf + 8, 3, DATA_SEL_32, INT_SEL_SEND_AFTER_WRITE, 5));
    ring.submit(&gpu, &w);
    wait_for("the queue to block", || ring.state(&gpu) == QueueState::Blocked);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(gpu.memory().read_u32(buf + 8).unwrap(), 0);
    // The host's write, no doorbell: the thread's poll sees it.
    gpu.memory().write_u32(buf, 1).unwrap();
    assert_eq!(gpu.events().wait_any(&[5], Duration::from_secs(5)), Some(5), "the interrupt after the wait");
    assert_eq!(gpu.memory().read_u32(buf + 8).unwrap(), 3);
}

/// The host writes one buffer while the CP thread runs kernels over others.
#[test]
fn kernels_run_on_the_cp_thread_while_the_host_writes_memory() {
    let mut gpu = Gpu::new(config());
    gpu.start();
    let mut ring = compute_ring(&gpu, 1 << 14);
    let sig = gpu.memory().alloc(None, 4096).unwrap();
    let other = gpu.memory().alloc(None, 1 << 16).unwrap();
    let cases: Vec<Case> = ["matmul_f32", "softmax_0", "add_f32"]
        .iter()
        .map(|n| load_case(&gpu, &kernels_dir().join(format!("{n}.json"))))
        .collect();
    for (k, c) in cases.iter().enumerate() {
        let mut w = c.exec.clone();
        w.extend(signal(sig, k as u32 + 1));
        ring.submit(&gpu, &w);
    }
    let mut x = 0u32;
    while gpu.memory().read_u32(sig).unwrap() != cases.len() as u32 {
        gpu.memory().write_u32(other + 4 * u64::from(x % 16384), x).unwrap();
        x = x.wrapping_add(1);
        assert!(!matches!(ring.state(&gpu), QueueState::Faulted(_)));
    }
    for c in &cases {
        c.check(&gpu).unwrap();
    }
    drop(gpu); // stops the thread
}
