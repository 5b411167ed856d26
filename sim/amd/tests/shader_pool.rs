//! The shader core's threads are kept between dispatches (as the a630's shader core keeps its
//! own): one test in a process of its own, counting the process's threads.

mod common;

#[path = "common/shader_program.rs"]
mod shader_program;

use common::*;
use hcq_sim_amd::QueueState;
use shader_program::*;

/// The threads are kept: the first dispatch on 4 shader threads starts 3 (the CP's thread is the
/// fourth), a hundred more start none and the 3 stay.
#[cfg(target_os = "linux")]
#[test]
fn the_shader_threads_are_kept_between_dispatches() {
    let tasks = || std::fs::read_dir("/proc/self/task").unwrap().count();
    let before = tasks();
    let gpu = gpu(4);
    let (code, out) = load(&gpu);
    let mut ring = compute_ring(&gpu, 1 << 12);
    ring.submit(&gpu, &dispatch(code, out, 64));
    gpu.process();
    let after_first = tasks();
    assert_eq!(after_first, before + 3, "the pool's threads run after the dispatch");
    for _ in 0..100 {
        ring.submit(&gpu, &dispatch(code, out, 64));
        gpu.process();
    }
    assert_eq!(ring.state(&gpu), QueueState::Idle);
    assert_eq!(tasks(), after_first, "no thread started or ended");
    assert_eq!(gpu.memory().read_u32(out + 4 * 63).unwrap(), 63);
}
