//! The shader core's test helpers: hand-encoded ir3 (the encodings of hal/ir3/tests/exec.rs), a
//! program that stores an id per fiber, and one dispatch through `Ir3Dispatch` over a
//! `SparseMemory`.
#![allow(dead_code)]

use hcq_adreno::a6xx::regs;
use hcq_sim_adreno::Ir3Dispatch;
use hcq_sim_adreno::cp::{ComputeState, ShaderCore, SparseMemory};

pub const BASE: u64 = 0x1_0000_0000;

// Hand-encoded ir3 (the encodings of hal/ir3/tests/exec.rs).
pub const CAT2_FULL: u64 = 2 << 61 | 1 << 52;
pub fn konst(n: u64) -> u64 {
    2 << 11 | n
}
pub fn imm(v: i64) -> u64 {
    4 << 11 | (v as u64 & 0x7ff)
}
pub fn cat2(op: u64, dst: u64, s1: u64, s2: u64) -> u64 {
    CAT2_FULL | op << 53 | dst << 32 | s2 << 16 | s1
}
pub const SHL: u64 = 54;
pub const ADD_U: u64 = 16;
pub const XOR: u64 = 31;
pub const END: u64 = 0x0300_0000_0000_0000;
/// `stg.<ty> g[r(addr).. pair], r(src), 1` with the type field (bits 49..51): 3 u32, 7 u8_32.
pub fn stg(addr: u64, src: u64, ty: u64) -> u64 {
    (0xc0c6_0f00_0480_0020u64 & !(0xff << 41) & !(0xff << 1) & !(7 << 24) & !(7 << 49))
        | addr << 41
        | src << 1
        | 1 << 24
        | ty << 49
}
pub const R0X: u64 = 0;
pub const R0W: u64 = 3;
pub const R1X: u64 = 4;
pub const R1Y: u64 = 5;
pub const R1Z: u64 = 6;
pub const R2X: u64 = 8;
pub const R3X: u64 = 12;

pub const BAR: u64 = 0xe042_0000_0000_0000;

/// Fiber `id = group·2^local_log2 + lid` stores `id ^ 0x55` (as type `ty`) at
/// `c0 + (id << stride_log2)`. The work-group id is preloaded into r2.x, the local id into r0.x.
pub fn program(local_log2: i64, stride_log2: i64, ty: u64) -> Vec<u32> {
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

pub fn words(w: &[u64]) -> Vec<u32> {
    w.iter().flat_map(|x| [*x as u32, (x >> 32) as u32]).collect()
}

/// [`program`] with a barrier first: harmless, but it keeps each work-group in a wave of its own
/// (the interpreter packs small work-groups into one wave only when nothing makes lanes meet).
pub fn program_unpacked(local_log2: i64, stride_log2: i64, ty: u64) -> Vec<u32> {
    let mut w = words(&[BAR]);
    w.extend(program(local_log2, stride_log2, ty));
    w
}

pub fn dispatch(
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

pub fn memory(bytes: usize) -> SparseMemory {
    let mut mem = SparseMemory::new();
    mem.map(BASE, bytes).unwrap();
    mem.write_bytes(BASE, &vec![0xee; bytes]).unwrap();
    mem
}

pub fn bytes(mem: &SparseMemory) -> Vec<u8> {
    mem.allocations().next().unwrap().1.to_vec()
}
