//! The shader core's thread pool in a forked child (Python's multiprocessing forks on Linux): a
//! dispatch that spreads over threads in the parent made the pool; in the child, whose copy of
//! that pool has no threads, a dispatch that spreads must make its own and finish, not wait
//! forever for threads that do not exist. One test in its own binary, so that no other test's
//! thread holds a lock when the process forks.

use hcq_adreno::a6xx::regs;
use hcq_sim_adreno::Ir3Dispatch;
use hcq_sim_adreno::cp::{ComputeState, ShaderCore, SparseMemory};
use std::time::{Duration, Instant};

const BASE: u64 = 0x1_0000_0000;
const CAT2_FULL: u64 = 2 << 61 | 1 << 52;
fn cat2(op: u64, dst: u64, s1: u64, s2: u64) -> u64 {
    CAT2_FULL | op << 53 | dst << 32 | s2 << 16 | s1
}
fn konst(n: u64) -> u64 {
    2 << 11 | n
}
fn imm(v: i64) -> u64 {
    4 << 11 | (v as u64 & 0x7ff)
}
const SHL: u64 = 54;
const ADD_U: u64 = 16;
const XOR: u64 = 31;
const END: u64 = 0x0300_0000_0000_0000;
/// `stg.u32 g[r1.y..], r1.x, 1`
const STG: u64 = (0xc0c6_0f00_0480_0020u64 & !(0xff << 41) & !(0xff << 1) & !(7 << 24)) | 5 << 41 | 4 << 1 | 1 << 24;

/// Fiber `id = group·64 + lid` stores `id ^ 0x55` at `c0 + 4·id` (work-group id in r2.x, local
/// id in r0.x).
fn program() -> Vec<u32> {
    let w = [
        cat2(SHL, 3, 8, imm(6)),
        cat2(ADD_U, 3, 3, 0),
        cat2(SHL, 12, 3, imm(2)),
        cat2(ADD_U, 5, konst(0), 12),
        cat2(ADD_U, 6, konst(1), imm(0)),
        cat2(XOR, 4, 3, imm(0x55)),
        STG,
        END,
    ];
    w.iter().flat_map(|x| [*x as u32, (x >> 32) as u32]).collect()
}

/// 37 work-groups of 64 fibers on a 4-thread core that always spreads; true when every word came
/// out right.
fn run(core: &mut Ir3Dispatch) -> bool {
    let (groups, n) = (37u32, 37 * 64);
    let shader = program();
    let mut mem = SparseMemory::new();
    mem.map(BASE, 4 * n).unwrap();
    let consts = [BASE as u32, (BASE >> 32) as u32, 0, 0];
    let state = ComputeState {
        shader_addr: 0x2000_0000,
        shader: &shader,
        entry: 0,
        consts_addr: 0x3000_0000,
        consts: &consts,
        groups: [groups, 1, 1],
        local: [64, 1, 1],
        cntl_0: regs::SP_CS_CNTL_0(0),
        const_config_0: regs::SP_CS_CONST_CONFIG_0(8),
        wge_cntl: regs::SP_CS_WGE_CNTL(0),
        cntl_1: regs::SP_CS_CNTL_1(1),
        pvt_mem_param: regs::SP_CS_PVT_MEM_PARAM(0),
        mode_cntl: regs::SP_MODE_CNTL(0),
        samplers: &[],
        textures: &[],
        ibos: &[],
        border_color_base: 0,
        pvt_mem_base: 0,
        pvt_mem_size: 0,
        pvt_mem_stack_offset: 0,
        tpl1_mode_cntl: 0,
    };
    if core.dispatch(&state, &mut mem).is_err() {
        return false;
    }
    let bytes = mem.allocations().next().unwrap().1.to_vec();
    bytes.chunks_exact(4).enumerate().all(|(i, w)| u32::from_le_bytes(w.try_into().unwrap()) == i as u32 ^ 0x55)
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
