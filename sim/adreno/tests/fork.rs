//! The shader core's thread pool in a forked child (Python's multiprocessing forks on Linux): a
//! dispatch that spreads over threads in the parent made the pool; in the child, whose copy of
//! that pool has no threads, a dispatch that spreads must make its own and finish, not wait
//! forever for threads that do not exist. One test in its own binary, so that no other test's
//! thread holds a lock when the process forks.

mod common;

use common::{bytes, dispatch, memory, program};
use hcq_sim_adreno::Ir3Dispatch;
use std::time::{Duration, Instant};

/// 37 work-groups of 64 fibers (each fiber stores its id ^ 0x55) on `core`; true when every word
/// came out right.
fn run(core: &mut Ir3Dispatch) -> bool {
    let (groups, n) = (37u32, 37 * 64);
    let mut mem = memory(4 * n);
    if dispatch(core, &program(6, 2, 3), groups, 64, &mut mem).is_err() {
        return false;
    }
    bytes(&mem).chunks_exact(4).enumerate().all(|(i, w)| u32::from_le_bytes(w.try_into().unwrap()) == i as u32 ^ 0x55)
}

#[test]
// CI runs the aarch64 build of this crate's tests under qemu-user, which aborts when a forked child
// of a multi-threaded guest starts a thread (`qemu_plugin_vcpu_init_hook: assertion failed`, then
// `cpu_exec: assertion failed (cpu == current_cpu)`): the emulator's limit, not this code's; the
// x86-64 run covers the behaviour.
#[cfg_attr(
    target_arch = "aarch64",
    ignore = "qemu-user aborts a forked child of a multi-threaded guest that starts a thread"
)]
fn a_forked_child_makes_its_own_pool() {
    let mut core = Ir3Dispatch::new().with_threads(4).with_parallel_min_steps(0);
    assert!(run(&mut core), "parent, first dispatch");
    // SAFETY: the child only runs a dispatch on `core` (allocation and thread creation, which
    // glibc supports after fork) and leaves with _exit; this binary has no other test whose
    // threads could hold a lock at the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = run(&mut core);
        // SAFETY: _exit ends the child without running the parent's atexit handlers or the test
        // harness's teardown.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let mut st = 0;
        // SAFETY: waits for our own child, writing its status into `st`.
        let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        if r == pid {
            break Some(st);
        }
        if Instant::now() > deadline {
            // SAFETY: kills our own child, hung past the deadline.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let st = status.expect("the child's dispatch hung (waiting for the parent's pool threads)");
    assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "child failed: status {st:#x}");
    assert!(run(&mut core), "parent, after the fork");
}
