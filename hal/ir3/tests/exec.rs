//! Interpreter behaviour on small hand-encoded programs: divergent branches reconverge,
//! barriers order shared-memory traffic across waves, out-of-bounds accesses fault with the
//! instruction, lane and address, runaway loops hit the step limit.

use hcq_ir3::exec::{Buffers, Dispatch, ExecError, Interp, MemSpace, Meta, Program};

const CAT2_FULL: u64 = 2 << 61 | 1 << 52;
fn reg(r: u64) -> u64 {
    r
}
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
fn cmps_u_lt(dst: u64, s1: u64, s2: u64) -> u64 {
    cat2(20, dst, s1, s2)
}
fn mov_imm(dst: u64, v: u32) -> u64 {
    0x204c_c000_0000_0000 | dst << 32 | v as u64
}
fn br_p0x(off: i32) -> u64 {
    1 << 55 | off as u32 as u64
}
fn jump(off: i32) -> u64 {
    2 << 55 | off as u32 as u64
}
const END: u64 = 0x0300_0000_0000_0000;
const BAR: u64 = 0xe042_0000_0000_0000;
fn stg(addr: u64, src: u64) -> u64 {
    (0xc0c6_0f00_0480_0020u64 & !(0xff << 41) & !(0xff << 1) & !(7 << 24)) | addr << 41 | src << 1 | 1 << 24
}
fn stl(addr: u64, src: u64) -> u64 {
    (0xc106_0700_0180_0044u64 & !(0xff << 41) & !(0xff << 1)) | addr << 41 | src << 1
}
fn ldl(dst: u64, addr: u64) -> u64 {
    (0xc046_0025_0482_0001u64 & !(0xff << 32) & !(0xff << 14) & !(0xff << 24)) | dst << 32 | addr << 14 | 1 << 24
}
fn ldg(dst: u64, addr: u64) -> u64 {
    (0xc006_000c_0481_4001u64 & !(0xff << 32) & !(0xff << 14) & !(7 << 24)) | dst << 32 | addr << 14 | 1 << 24
}

const R0X: u64 = 0;
const R0W: u64 = 3;
const R1X: u64 = 4;
const R1Y: u64 = 5;
const R1Z: u64 = 6;
const R2X: u64 = 8;
const R3X: u64 = 12;
const P0X: u64 = 0xf8;

fn program(words: &[u64], shmem: u32) -> Program {
    let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let meta =
        Meta { fregs: 4, hregs: 0, wgid: 0xfc, lid: 0, shmem, pvtmem: 0, merged_regs: false, const_demotion: false };
    Program::new(&image, meta).unwrap()
}

const BASE: u64 = 0x1_0000_0000;

fn consts() -> Vec<u8> {
    let mut k = vec![0u8; 64];
    k[..8].copy_from_slice(&BASE.to_le_bytes());
    k
}

/// out[lid] address into r1.y/r1.z: r0.w = lid·4; r1.y = c0.x + r0.w; r1.z = c0.y.
fn addr_prologue() -> Vec<u64> {
    vec![cat2(SHL, R0W, reg(R0X), imm(2)), cat2(ADD_U, R1Y, konst(0), reg(R0W)), cat2(ADD_U, R1Z, konst(1), imm(0))]
}

fn out_words(mem: &Buffers) -> Vec<u32> {
    mem.bufs[0].1.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn divergent_branch_reconverges_across_two_waves() {
    let mut w = addr_prologue();
    w.extend([
        cmps_u_lt(P0X, reg(R0X), imm(3)), // 3
        br_p0x(3),                        // 4: lanes < 3 → 7
        mov_imm(R1X, 1),                  // 5
        jump(2),                          // 6 → 8
        mov_imm(R1X, 2),                  // 7
        stg(R1Y, R1X) | 1 << 59,          // 8: (jp) join
        END,
    ]);
    let p = program(&w, 0);
    let mut mem = Buffers { bufs: vec![(BASE, vec![0; 4 * 70])] };
    let k = consts();
    let s = Interp::new().run(&p, &Dispatch { consts: &k, grid: [1, 1, 1], local: [70, 1, 1] }, &mut mem).unwrap();
    let out = out_words(&mem);
    let want: Vec<u32> = (0..70).map(|i| if i < 3 { 2 } else { 1 }).collect();
    assert_eq!(out, want);
    // Wave 0 diverges (10 instructions + one extra for the split path); wave 1 (6 lanes) does not.
    assert!(s.steps >= 19, "{s:?}");
}

#[test]
fn barrier_orders_shared_memory_between_waves() {
    let mut w =
        vec![cat2(SHL, R0W, reg(R0X), imm(2)), stl(R0W, R0X), BAR, cat2(XOR, R2X, reg(R0W), imm(256)), ldl(R3X, R2X)];
    w.extend([cat2(ADD_U, R1Y, konst(0), reg(R0W)), cat2(ADD_U, R1Z, konst(1), imm(0)), stg(R1Y, R3X), END]);
    let p = program(&w, 512);
    let mut mem = Buffers { bufs: vec![(BASE, vec![0; 4 * 128])] };
    let k = consts();
    Interp::new().run(&p, &Dispatch { consts: &k, grid: [1, 1, 1], local: [128, 1, 1] }, &mut mem).unwrap();
    let want: Vec<u32> = (0..128).map(|i| i ^ 64).collect();
    assert_eq!(out_words(&mem), want);

    // Without the barrier, wave 0 runs to its end first and reads wave 1's slots unwritten.
    let mut nobar = w.clone();
    nobar[2] = 0; // nop
    let p = program(&nobar, 512);
    let mut mem = Buffers { bufs: vec![(BASE, vec![0; 4 * 128])] };
    Interp::new().run(&p, &Dispatch { consts: &k, grid: [1, 1, 1], local: [128, 1, 1] }, &mut mem).unwrap();
    assert_eq!(out_words(&mem)[0], 0);
}

#[test]
fn out_of_bounds_global_read_faults_with_instruction_lane_and_address() {
    let mut w = addr_prologue();
    w.extend([cat2(ADD_U, R1Y, reg(R1Y), imm(64)), ldg(R3X, R1Y), END]);
    let p = program(&w, 0);
    let mut mem = Buffers { bufs: vec![(BASE, vec![0; 4 * 20])] };
    let k = consts();
    let e = Interp::new().run(&p, &Dispatch { consts: &k, grid: [2, 1, 1], local: [20, 1, 1] }, &mut mem).unwrap_err();
    // Lanes 0..3 read inside (64 + 4·lid < 80); lane 4 is the first outside.
    assert_eq!(
        e,
        ExecError::Fault {
            index: 4,
            group: [0, 0, 0],
            lane: 4,
            addr: BASE + 80,
            space: MemSpace::Global,
            write: false
        }
    );
    assert!(e.to_string().contains("instruction 4"), "{e}");
}

#[test]
fn out_of_bounds_shared_store_faults() {
    let w = vec![cat2(SHL, R0W, reg(R0X), imm(2)), stl(R0W, R0X), END];
    let p = program(&w, 16);
    let mut mem = Buffers::default();
    let e = Interp::new().run(&p, &Dispatch { consts: &[], grid: [1, 1, 1], local: [8, 1, 1] }, &mut mem).unwrap_err();
    assert!(
        matches!(e, ExecError::Fault { index: 1, lane: 4, addr: 16, space: MemSpace::Shared, write: true, .. }),
        "{e:?}"
    );
}

#[test]
fn infinite_loop_hits_the_step_limit() {
    let p = program(&[jump(0)], 0);
    let mut it = Interp::new();
    it.max_steps = 1000;
    let e =
        it.run(&p, &Dispatch { consts: &[], grid: [1, 1, 1], local: [64, 1, 1] }, &mut Buffers::default()).unwrap_err();
    assert_eq!(e, ExecError::StepLimit { steps: 1000 });
}

#[test]
fn running_off_the_end_and_unsupported_ops_are_errors() {
    let p = program(&[0], 0); // a lone nop, no end
    let e = Interp::new()
        .run(&p, &Dispatch { consts: &[], grid: [1, 1, 1], local: [1, 1, 1] }, &mut Buffers::default())
        .unwrap_err();
    assert!(matches!(e, ExecError::PcOutOfRange { pc: 1, .. }), "{e:?}");
    // cat5 `isam` (opc 0): decoded by name, refused by the interpreter.
    let p = program(&[5 << 61, END], 0);
    let e = Interp::new()
        .run(&p, &Dispatch { consts: &[], grid: [1, 1, 1], local: [1, 1, 1] }, &mut Buffers::default())
        .unwrap_err();
    assert_eq!(e, ExecError::Unsupported { index: 0, name: "isam" });
}

#[test]
fn const_read_beyond_the_file_is_an_error() {
    let p = program(&[cat2(ADD_U, R1Y, konst(40), imm(0)), END], 0);
    let e = Interp::new()
        .run(&p, &Dispatch { consts: &[0; 64], grid: [1, 1, 1], local: [1, 1, 1] }, &mut Buffers::default())
        .unwrap_err();
    assert_eq!(e, ExecError::ConstOutOfRange { index: 0, word: 40 });
}
