//! The shader core's dispatch on several threads: work-groups spread over threads write the same
//! bytes as one thread does, a fault in the last work-group writes nothing, and byte stores of
//! different work-groups into one dword (made on different threads) leave the bytes no
//! work-group wrote as they were; small work-groups packed into shared waves split over threads
//! at whole waves.

use hcq_adreno::a6xx::regs;
use hcq_sim_adreno::Ir3Dispatch;
use hcq_sim_adreno::cp::{ComputeState, ShaderCore, SparseMemory};

const BASE: u64 = 0x1_0000_0000;

// Hand-encoded ir3 (the encodings of hal/ir3/tests/exec.rs).
const CAT2_FULL: u64 = 2 << 61 | 1 << 52;
fn konst(n: u64) -> u64 {
    2 << 11 | n
}
fn imm(v: i64) -> u64 {
    4 << 11 | (v as u64 & 0x7ff)
}
fn cat2(op: u64, dst: u64, s1: u64, s2: u64) -> u64 {
    CAT2_FULL | op << 53 | dst << 32 | s2 << 16 | s1
}
const SHL: u64 = 54;
const ADD_U: u64 = 16;
const XOR: u64 = 31;
const END: u64 = 0x0300_0000_0000_0000;
/// `stg.<ty> g[r(addr).. pair], r(src), 1` with the type field (bits 49..51): 3 u32, 7 u8_32.
fn stg(addr: u64, src: u64, ty: u64) -> u64 {
    (0xc0c6_0f00_0480_0020u64 & !(0xff << 41) & !(0xff << 1) & !(7 << 24) & !(7 << 49))
        | addr << 41
        | src << 1
        | 1 << 24
        | ty << 49
}
const R0X: u64 = 0;
const R0W: u64 = 3;
const R1X: u64 = 4;
const R1Y: u64 = 5;
const R1Z: u64 = 6;
const R2X: u64 = 8;
const R3X: u64 = 12;

const BAR: u64 = 0xe042_0000_0000_0000;

/// Fiber `id = group·2^local_log2 + lid` stores `id ^ 0x55` (as type `ty`) at
/// `c0 + (id << stride_log2)`. The work-group id is preloaded into r2.x, the local id into r0.x.
fn program(local_log2: i64, stride_log2: i64, ty: u64) -> Vec<u32> {
    words(&[
        cat2(SHL, R0W, R2X, imm(local_log2)),
        cat2(ADD_U, R0W, R0W, R0X),
        cat2(SHL, R3X, R0W, imm(stride_log2)),
        cat2(ADD_U, R1Y, konst(0), R3X),
        cat2(ADD_U, R1Z, konst(1), imm(0)),
        cat2(XOR, R1X, R0W, imm(0x55)),
        stg(R1Y, R1X, ty),
        END,
    ])
}

fn words(w: &[u64]) -> Vec<u32> {
    w.iter().flat_map(|x| [*x as u32, (x >> 32) as u32]).collect()
}

/// [`program`] with a barrier first: harmless, but it keeps each work-group in a wave of its own
/// (the interpreter packs small work-groups into one wave only when nothing makes lanes meet).
fn program_unpacked(local_log2: i64, stride_log2: i64, ty: u64) -> Vec<u32> {
    let mut w = words(&[BAR]);
    w.extend(program(local_log2, stride_log2, ty));
    w
}

fn dispatch(
    core: &mut Ir3Dispatch,
    shader: &[u32],
    groups: u32,
    local: u32,
    mem: &mut SparseMemory,
) -> hcq::Result<()> {
    let consts = [BASE as u32, (BASE >> 32) as u32, 0, 0];
    let state = ComputeState {
        shader_addr: 0x2000_0000,
        shader,
        entry: 0,
        consts_addr: 0x3000_0000,
        consts: &consts,
        groups: [groups, 1, 1],
        local: [local, 1, 1],
        cntl_0: regs::SP_CS_CNTL_0(0),
        // work-group id in r2.x.. (regid 8), local id in r0.x..
        const_config_0: regs::SP_CS_CONST_CONFIG_0(8),
        wge_cntl: regs::SP_CS_WGE_CNTL(0),
        // SHARED_SIZE 1: 2 KiB of shared memory
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
    core.dispatch(&state, mem)
}

fn memory(bytes: usize) -> SparseMemory {
    let mut mem = SparseMemory::new();
    mem.map(BASE, bytes).unwrap();
    mem.write_bytes(BASE, &vec![0xee; bytes]).unwrap();
    mem
}

fn bytes(mem: &SparseMemory) -> Vec<u8> {
    mem.allocations().next().unwrap().1.to_vec()
}

/// One thread, and several (spread whatever the work-group cost).
fn cores() -> (Ir3Dispatch, Ir3Dispatch) {
    (Ir3Dispatch::new().with_threads(1), Ir3Dispatch::new().with_threads(4).with_parallel_min_steps(0))
}

#[test]
fn work_groups_on_several_threads_write_the_bytes_one_thread_writes() {
    let (groups, local) = (37u32, 64u32);
    let shader = program(6, 2, 3);
    let n = (groups * local) as usize;
    let (mut one, mut many) = cores();
    let (mut a, mut b) = (memory(4 * n), memory(4 * n));
    dispatch(&mut one, &shader, groups, local, &mut a).unwrap();
    dispatch(&mut many, &shader, groups, local, &mut b).unwrap();
    let want: Vec<u8> = (0..n as u32).flat_map(|i| (i ^ 0x55).to_le_bytes()).collect();
    assert!(bytes(&a) == want, "one thread");
    assert!(bytes(&b) == want, "several threads");
    assert_eq!(one.lane_instructions(), many.lane_instructions());
    assert_eq!(one.lane_instructions(), 8 * n as u64);
    // The same core again (its threads' interpreters and overlays reused).
    let mut c = memory(4 * n);
    dispatch(&mut many, &shader, groups, local, &mut c).unwrap();
    assert!(bytes(&c) == want);
    assert_eq!(many.dispatches(), 2);
}

#[test]
fn a_fault_in_the_last_work_group_writes_nothing() {
    let (groups, local) = (37u32, 64u32);
    let shader = program(6, 2, 3);
    let n = (groups * local) as usize;
    for mut core in [cores().0, cores().1] {
        // One dword short: the last lane of the last work-group stores outside the allocation.
        let mut mem = memory(4 * (n - 1));
        let e = dispatch(&mut core, &shader, groups, local, &mut mem).unwrap_err().to_string();
        assert!(e.contains("nothing of the dispatch written") && e.contains("work-group [36, 0, 0]"), "{e}");
        assert!(bytes(&mem).iter().all(|b| *b == 0xee), "a faulting dispatch wrote memory");
        assert_eq!(core.dispatches(), 0);
    }
}

#[test]
fn byte_stores_of_different_work_groups_into_one_dword_keep_the_other_bytes() {
    // 63 work-groups of one fiber; work-group g stores one byte at 2g: dword k holds the bytes of
    // work-groups 2k and 2k + 1, and bytes 1 and 3 are never written. With 4 threads the
    // work-groups after the first split at 16, 32 and 47: dword 23 (work-groups 46 and 47) is
    // written by two threads. (A barrier keeps the work-groups in waves of their own: packed 64
    // to a wave, they would all run in one.)
    let groups = 63u32;
    let shader = program_unpacked(0, 1, 7);
    let (mut one, mut many) = cores();
    let (mut a, mut b) = (memory(4 * 32), memory(4 * 32));
    dispatch(&mut one, &shader, groups, 1, &mut a).unwrap();
    dispatch(&mut many, &shader, groups, 1, &mut b).unwrap();
    let mut want = vec![0xee; 4 * 32];
    for g in 0..groups as usize {
        want[2 * g] = (g as u8) ^ 0x55;
    }
    assert!(bytes(&a) == want, "one thread: {:x?}", bytes(&a));
    assert!(bytes(&b) == want, "several threads: {:x?}", bytes(&b));
}

/// One-fiber work-groups (tinygrad's NOLOCALS kernels), which the interpreter packs 64 to a wave:
/// 255 of them, the first wave on the calling thread and the other three on three threads, write
/// what one thread writes and count the same lane-instructions; a fault in work-group 200 names
/// that work-group on both, at the program's first dispatch and at a later one, and writes
/// nothing.
#[test]
fn packed_work_groups_on_several_threads_write_the_bytes_one_thread_writes() {
    let groups = 255u32;
    let shader = program(0, 2, 3);
    let n = groups as usize;
    let (mut one, mut many) = cores();
    let (mut a, mut b) = (memory(4 * n), memory(4 * n));
    dispatch(&mut one, &shader, groups, 1, &mut a).unwrap();
    dispatch(&mut many, &shader, groups, 1, &mut b).unwrap();
    let want: Vec<u8> = (0..n as u32).flat_map(|i| (i ^ 0x55).to_le_bytes()).collect();
    assert!(bytes(&a) == want, "one thread");
    assert!(bytes(&b) == want, "several threads");
    assert_eq!(one.lane_instructions(), many.lane_instructions());
    assert_eq!(one.lane_instructions(), 8 * n as u64);
    // Fresh cores, and the two that know the program's cost from the dispatch above (they
    // split from the start).
    let (a, b) = cores();
    for mut core in [a, b, one, many] {
        let mut mem = memory(4 * 200);
        let e = dispatch(&mut core, &shader, groups, 1, &mut mem).unwrap_err().to_string();
        assert!(e.contains("nothing of the dispatch written") && e.contains("work-group [200, 0, 0]"), "{e}");
        assert!(bytes(&mem).iter().all(|b| *b == 0xee), "a faulting dispatch wrote memory");
    }
}
