//! Interpreter behaviour on small hand-encoded programs: divergent branches reconverge,
//! barriers order shared-memory traffic across waves, out-of-bounds accesses fault with the
//! instruction, lane and address, runaway loops hit the step limit.

use hcq_ir3::exec::{Buffers, Dispatch, ExecError, Interp, MemSpace, Meta, Shader};

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

fn program(words: &[u64], shmem: u32) -> Shader {
    let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let meta =
        Meta { fregs: 4, hregs: 0, wgid: 0xfc, lid: 0, shmem, pvtmem: 0, merged_regs: false, const_demotion: false };
    Shader::new(&image, meta).unwrap()
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
    // cat5 `gather4r` (opc 16): decoded by name, refused by the interpreter.
    let p = program(&[5 << 61 | 16 << 54, END], 0);
    let e = Interp::new()
        .run(&p, &Dispatch { consts: &[], grid: [1, 1, 1], local: [1, 1, 1] }, &mut Buffers::default())
        .unwrap_err();
    assert_eq!(e, ExecError::Unsupported { index: 0, name: "gather4r" });
}

#[test]
fn const_read_beyond_the_file_is_an_error() {
    let p = program(&[cat2(ADD_U, R1Y, konst(40), imm(0)), END], 0);
    let e = Interp::new()
        .run(&p, &Dispatch { consts: &[0; 64], grid: [1, 1, 1], local: [1, 1, 1] }, &mut Buffers::default())
        .unwrap_err();
    assert_eq!(e, ExecError::ConstOutOfRange { index: 0, word: 40 });
}

// ---------------------------------------------------------------------------------------------
// Semantics of single instructions and control-flow shapes, observed through r1.x of every
// lane (stored to out[lid] after the body).

const R2Y: u64 = 9;
const R3Y: u64 = 13;
const R4X: u64 = 16;
const R10W: u64 = 43;
const R11Y: u64 = 45;
const R11Z: u64 = 46;

fn collect(body: &[u64], local: u32, shmem: u32) -> Vec<u32> {
    let mut w = vec![
        cat2(SHL, R10W, reg(R0X), imm(2)),
        cat2(ADD_U, R11Y, konst(0), reg(R10W)),
        cat2(ADD_U, R11Z, konst(1), imm(0)),
    ];
    w.extend_from_slice(body);
    w.extend([stg(R11Y, R1X) | 1 << 59, END]);
    let p = program(&w, shmem);
    let mut mem = Buffers { bufs: vec![(BASE, vec![0; 4 * local as usize])] };
    let k = consts();
    Interp::new().run(&p, &Dispatch { consts: &k, grid: [1, 1, 1], local: [local, 1, 1] }, &mut mem).unwrap();
    out_words(&mem)
}

fn cmps_u(cond: u64, dst: u64, s1: u64, s2: u64) -> u64 {
    cat2(20, dst, s1, s2) | cond << 48
}

#[test]
fn divergent_loop_runs_each_lane_its_own_trip_count() {
    let body = [
        mov_imm(R1X, 0),
        mov_imm(R3X, 0),
        cmps_u(3, P0X, reg(R3X), reg(R0X)), // head: p0.x = r3.x >= lid
        br_p0x(4),                          // → exit
        cat2(ADD_U, R1X, reg(R1X), reg(R3X)),
        cat2(ADD_U, R3X, reg(R3X), imm(1)),
        jump(-4), // → head
    ];
    let out = collect(&body, 70, 0);
    let want: Vec<u32> = (0..70).map(|i| i * (i.max(1) - 1) / 2).collect();
    assert_eq!(out, want);
}

#[test]
fn predt_predf_prede_mask_without_branching() {
    let predt = 1u64 << 49 | 13 << 55;
    let predf = 1u64 << 49 | 14 << 55;
    let prede = 1u64 << 49 | 15 << 55;
    let body =
        [mov_imm(R1X, 0), cmps_u_lt(P0X, reg(R0X), imm(10)), predt, mov_imm(R1X, 1), predf, mov_imm(R1X, 2), prede];
    let out = collect(&body, 64, 0);
    assert_eq!(out, (0..64).map(|i| if i < 10 { 1 } else { 2 }).collect::<Vec<_>>());
}

#[test]
fn getone_sends_one_fiber_to_the_target() {
    let getone = 1u64 << 49 | 5 << 55 | 2;
    let out = collect(&[mov_imm(R1X, 7), getone, mov_imm(R1X, 5)], 64, 0);
    assert_eq!(out[0], 7);
    assert!(out[1..].iter().all(|&v| v == 5));
}

#[test]
fn shfl_xor_reads_the_partner_lane() {
    let mov_r2x_r0x = 1u64 << 61 | 3 << 50 | 3 << 46 | R2X << 32 | R0X;
    let shfl = 6u64 << 61 | 27 << 54 | 3 << 49 | 1 << 53 | R2X << 1 | 1 << 23 | 1 << 24 | R1X << 32 | 1 << 45;
    let out = collect(&[mov_r2x_r0x, shfl], 64, 0);
    assert_eq!(out, (0..64).map(|i| i ^ 1).collect::<Vec<_>>());
}

#[test]
fn cov_float_to_int_follows_the_rounding_field() {
    let mov_f32 = |dst: u64, v: f32| 1u64 << 61 | 2 << 53 | 1 << 50 | 1 << 46 | dst << 32 | v.to_bits() as u64;
    let cov = |round: u64| 1u64 << 61 | round << 55 | 1 << 50 | 5 << 46 | R1X << 32 | R2X;
    for (round, want) in [(0, -2i32), (1, -2), (2, -2), (3, -3)] {
        let out = collect(&[mov_f32(R2X, -2.5), cov(round)], 1, 0);
        assert_eq!(out[0] as i32, want, "round {round}");
    }
    // u32 → f32 → f16 → f32 widening through a half register keeps the value.
    let cov_f32f16 = 1u64 << 61 | 1 << 50 | R2Y << 32 | R2X; // hr2.y = f16(r2.x)
    let cov_f16f32 = 1u64 << 61 | 1 << 46 | R1X << 32 | R2Y;
    let out = collect(&[mov_f32(R2X, 1.5), cov_f32f16, cov_f16f32], 1, 0);
    assert_eq!(f32::from_bits(out[0]), 1.5);
}

/// `cov` to a float follows the ROUND field too (0 the default, nearest even as the ALU's own
/// conversion; 1 nearest even, 2 +inf, 3 -inf), checked with values that are inexact in the
/// destination type; field 0 overflows f16 to inf (tinygrad's fp16 `exp(12)`).
#[test]
fn cov_to_float_follows_the_rounding_field() {
    let mov_f32 = |dst: u64, v: f32| 1u64 << 61 | 2 << 53 | 1 << 50 | 1 << 46 | dst << 32 | v.to_bits() as u64;
    let mov_s32 = |dst: u64, v: i32| 1u64 << 61 | 2 << 53 | 5 << 50 | 5 << 46 | dst << 32 | v as u32 as u64;
    // cov.{src}{dst} with rounding: types 0 f16, 1 f32, 3 u32, 5 s32
    let cov = |round: u64, src: u64, dst_ty: u64, dst: u64, from: u64| {
        1u64 << 61 | round << 55 | src << 50 | dst_ty << 46 | dst << 32 | from
    };
    // f16 → f32 is exact: the half result widened into r1.x
    let widen = cov(0, 0, 1, R1X, R2Y);
    // f32 → f16: 1 + 2^-11 + 2^-13 lies between 1.0 and 1 + 2^-10, above the midpoint
    let x = 1.0 + 1.0 / 2048.0 + 1.0 / 8192.0;
    let (lo, hi) = (1.0f32, 1.0 + 1.0 / 1024.0);
    for (round, pos, neg) in [(0, hi, -hi), (1, hi, -hi), (2, hi, -lo), (3, lo, -hi)] {
        for (v, want) in [(x, pos), (-x, neg)] {
            let out = collect(&[mov_f32(R2X, v), cov(round, 1, 0, R2Y, R2X), widen], 1, 0);
            assert_eq!(f32::from_bits(out[0]), want, "cov.f32f16 of {v} with round {round}");
        }
    }
    // s32 → f32: ±(2^24 + 3) lies between 2^24 + 2 and 2^24 + 4 (a tie: even is + 4)
    let (lo, hi) = (16_777_218.0f32, 16_777_220.0f32);
    for (round, pos, neg) in [(0, hi, -hi), (1, hi, -hi), (2, hi, -lo), (3, lo, -hi)] {
        for (v, want) in [(16_777_219, pos), (-16_777_219, neg)] {
            let out = collect(&[mov_s32(R2X, v), cov(round, 5, 1, R1X, R2X)], 1, 0);
            assert_eq!(f32::from_bits(out[0]), want, "cov.s32f32 of {v} with round {round}");
        }
    }
    // u32 → f32: 2^32 - 1 lies between 2^32 - 256 and 2^32
    for (round, want) in [(0, 4_294_967_296.0f32), (1, 4_294_967_296.0), (2, 4_294_967_296.0), (3, 4_294_967_040.0)] {
        let out = collect(&[mov_s32(R2X, -1), cov(round, 3, 1, R1X, R2X)], 1, 0);
        assert_eq!(f32::from_bits(out[0]), want, "cov.u32f32 of 2^32 - 1 with round {round}");
    }
    // s32 → f16: 2051 lies between 2050 and 2052 (a tie: even is 2052)
    for (round, want) in [(0, 2052.0f32), (1, 2052.0), (2, 2052.0), (3, 2050.0)] {
        let out = collect(&[mov_s32(R2X, 2051), cov(round, 5, 0, R2Y, R2X), widen], 1, 0);
        assert_eq!(f32::from_bits(out[0]), want, "cov.s32f16 of 2051 with round {round}");
    }
    // f32 -> f16 beyond 65504: inf in the default mode and toward +inf, the largest half toward 0
    for (round, want) in [(0, f32::INFINITY), (1, f32::INFINITY), (2, f32::INFINITY), (3, 65504.0)] {
        let out = collect(&[mov_f32(R2X, 162_754.8), cov(round, 1, 0, R2Y, R2X), widen], 1, 0);
        assert_eq!(f32::from_bits(out[0]), want, "cov.f32f16 of 162754.8 with round {round}");
    }
}

/// `cov` from an 8-bit source sign-extends it, as Mesa's ir3 relies on: tinygrad's int8 `>>` and
/// `maximum` load bytes with `ldg.u8` and widen them with `cov.u8s16` (i2i16); a zero-extending
/// `cov` made `-128 >> 2` come out 32 and `maximum(0, -1)` come out -1.
#[test]
fn cov_from_u8_sign_extends() {
    // mov.u16u16 hrN, imm: the byte in a half register, as `ldg.u8` leaves it
    let mov_u16 = |dst: u64, v: u32| 1u64 << 61 | 2 << 53 | 2 << 50 | 2 << 46 | dst << 32 | v as u64;
    // cov.{src}{dst}: types 2 u16, 4 s16, 5 s32, 6 u8; the byte in hr2.x, the half result in hr2.y
    let cov = |src: u64, dst_ty: u64, dst: u64, from: u64| 1u64 << 61 | src << 50 | dst_ty << 46 | dst << 32 | from;
    // widen the half result back to r1.x as s16 -> s32 (sign-preserving) to read it
    let widen = cov(4, 5, R1X, R2Y);
    for (byte, want) in [(0x80, -128i32), (0xfb, -5), (0x7f, 127), (0x01, 1), (0x1ff, -1)] {
        let out = collect(&[mov_u16(R2X, byte), cov(6, 4, R2Y, R2X), widen], 1, 0);
        assert_eq!(out[0] as i32, want, "cov.u8s16 of {byte:#x}");
        let out = collect(&[mov_u16(R2X, byte), cov(6, 5, R1X, R2X)], 1, 0);
        assert_eq!(out[0] as i32, want, "cov.u8s32 of {byte:#x}");
    }
}

/// Integer and bitwise cat2 ops on half sources compute in 16 bits, and a full destination gets the
/// 16-bit result zero- or sign-extended by the opcode (Mesa's ir3_cf folds `cov.u16u32`/`cov.s16s32`
/// into them): tinygrad's fp16 `sin` builds `add.u r1.x, hc4.y, hr2.x` (exponent plus a negative
/// bias, wrapping at 16 bits), and an int16 `>>` is `ashr.b` on half registers.
#[test]
fn half_integer_ops_wrap_at_16_bits() {
    let mov_u16 = |dst: u64, v: u32| 1u64 << 61 | 2 << 53 | 2 << 50 | 2 << 46 | dst << 32 | v as u64;
    // cat2 with half sources (no FULL bit); DST_CONV (bit 46) makes the destination full
    let half_to_full =
        |op: u64, dst: u64, s1: u64, s2: u64| 2u64 << 61 | op << 53 | 1 << 46 | dst << 32 | s2 << 16 | s1;
    const ADD_S: u64 = 17;
    const SUB_U: u64 = 18;
    const SUB_S: u64 = 19;
    const ASHR: u64 = 56;
    let set = [mov_u16(R2X, 0xfff1), mov_u16(R2Y, 19)]; // hr2.x = -15 (16-bit), hr2.y = 19
    for (op, want, what) in [(ADD_U, 4u32, "add.u"), (ADD_S, 4, "add.s")] {
        let out = collect(&[set[0], set[1], half_to_full(op, R1X, R2X, R2Y)], 1, 0);
        assert_eq!(out[0], want, "{what} of 0xfff1 and 19 into a full register");
    }
    // 19 - (-15)... and (-15) - 19 = -34: zero-extended by sub.u, sign-extended by sub.s
    for (op, want, what) in [(SUB_U, 0xffde_u32, "sub.u"), (SUB_S, (-34i32) as u32, "sub.s")] {
        let out = collect(&[set[0], set[1], half_to_full(op, R1X, R2X, R2Y)], 1, 0);
        assert_eq!(out[0], want, "{what} of 0xfff1 and 19 into a full register");
    }
    // ashr.b of a half -128 by 2 is -32, shifted in from bit 15
    let out = collect(&[mov_u16(R2X, 0xff80), mov_u16(R2Y, 2), half_to_full(ASHR, R1X, R2X, R2Y)], 1, 0);
    assert_eq!(out[0] as i32, -32, "ashr.b of a half -128 by 2");
}

#[test]
fn sel_picks_by_a_full_register_condition() {
    let sel = 3u64 << 61 | 9 << 55 | R2X << 47 | R1X << 32 | R4X << 16 | R3X;
    let body = [cmps_u_lt(R2X, reg(R0X), imm(5)), mov_imm(R3X, 100), mov_imm(R4X, 200), sel];
    let out = collect(&body, 8, 0);
    assert_eq!(out, vec![100, 100, 100, 100, 100, 200, 200, 200]);
}

#[test]
fn sfu_results_are_correctly_rounded() {
    let mov_f32 = |dst: u64, v: f32| 1u64 << 61 | 2 << 53 | 1 << 50 | 1 << 46 | dst << 32 | v.to_bits() as u64;
    let sfu = |op: u64| 4u64 << 61 | op << 53 | 1 << 52 | R1X << 32 | R2X;
    assert_eq!(f32::from_bits(collect(&[mov_f32(R2X, 3.0), sfu(0)], 1, 0)[0]), 1.0 / 3.0);
    assert_eq!(f32::from_bits(collect(&[mov_f32(R2X, 2.0), sfu(6)], 1, 0)[0]), 2f32.sqrt());
    assert_eq!(f32::from_bits(collect(&[mov_f32(R2X, 10.0), sfu(3)], 1, 0)[0]), 1024.0);
    assert_eq!(f32::from_bits(collect(&[mov_f32(R2X, 8.0), sfu(2)], 1, 0)[0]), 3.0);
}

#[test]
fn local_atomic_add_returns_each_fiber_a_distinct_old_value() {
    // atomic.add.untyped.1d.u32.1.l r1.x, l[0], 1
    let atomic = 6u64 << 61 | 16 << 54 | 3 << 49 | 1 | 1 << 22 | 1 << 23 | 1 << 24 | R1X << 32;
    let mut out = collect(&[atomic], 100, 16);
    out.sort();
    assert_eq!(out, (0..100).collect::<Vec<_>>());
}

#[test]
fn rpt_walks_consecutive_registers_and_r_sources() {
    // r3.y, r3.z, r3.w = 1, 2, 3; (rpt2)add.u r1.x, (r)r3.y, 10 → r1.x..r1.z = 11, 12, 13.
    let rpt_add = cat2(ADD_U, R1X, reg(R3Y), imm(10)) | 2 << 40 | 1 << 43;
    let body =
        [mov_imm(R3Y, 1), mov_imm(R3Y + 1, 2), mov_imm(R3Y + 2, 3), rpt_add, cat2(ADD_U, R1X, reg(R1X + 2), imm(0))];
    assert_eq!(collect(&body, 1, 0), vec![13]);
}

/// clz.b of 0 is all ones (not 32): Mesa's ir3 compiles NIR `ufind_msb(x)` (-1 for x = 0) as
/// `sel.b32 (31 - clz.b x), x, (clz.b x)`, which yields clz.b(0) itself for x = 0 (seen in the
/// shader tinymesa 25.2.7.2 builds for tinygrad's u64 -> f32 cast: instructions 24-30, `sub.u
/// r6.y, 31, r5.y` / `sel.b32 r6.y, r6.y, r0.z, r5.y`); with 32 there, u64 1 cast to f32 was 0.
#[test]
fn clz_b_of_zero_is_all_ones() {
    const CLZ_B: u64 = 53;
    let out = collect(&[cat2(CLZ_B, R1X, reg(R0X), 0)], 8, 0);
    assert_eq!(out, vec![u32::MAX, 31, 30, 30, 29, 29, 29, 29]);
}

/// A program with the work-group id in r2.x..r2.z and the local id in r0.x..r0.z.
fn program_with_wgid(words: &[u64]) -> Shader {
    let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let meta =
        Meta { fregs: 12, hregs: 0, wgid: 8, lid: 0, shmem: 0, pvtmem: 0, merged_regs: false, const_demotion: false };
    Shader::new(&image, meta).unwrap()
}

/// Runs `p` with work-groups packed into waves and one by one; both must agree on every byte,
/// the statistics and the error.
fn packed_and_one_by_one(
    p: &Shader,
    d: &Dispatch,
    bytes: usize,
) -> (Result<hcq_ir3::exec::Stats, ExecError>, Vec<u32>) {
    let mut runs = Vec::new();
    for pack in [true, false] {
        let mut mem = Buffers { bufs: vec![(BASE, vec![0; bytes])] };
        let mut it = Interp::new();
        it.pack = pack;
        let r = it.run(p, d, &mut mem);
        runs.push((r, out_words(&mem)));
    }
    let one = runs.pop().unwrap();
    let packed = runs.pop().unwrap();
    assert_eq!(packed.0, one.0, "packed and one-by-one runs differ in their result");
    if one.0.is_ok() {
        assert_eq!(packed.1, one.1, "packed and one-by-one runs wrote different bytes");
    }
    packed
}

/// Work-groups of 3 fibers (a size that does not divide 64), 21 of them in one wave, each fiber
/// looping `wgid.x + lid` times: the packed run computes every fiber's own result and counts
/// each work-group's wave-instructions as its own wave would (divergent trip counts inside a
/// work-group and across the packed ones).
#[test]
fn small_work_groups_share_a_wave_with_the_results_and_counts_of_their_own() {
    let w = [
        cat2(SHL, R10W, reg(R2X), imm(4)),      // 0: 16 bytes per work-group
        cat2(SHL, R3Y, reg(R0X), imm(2)),       // 1
        cat2(ADD_U, R10W, reg(R10W), reg(R3Y)), // 2
        cat2(ADD_U, R11Y, konst(0), reg(R10W)), // 3
        cat2(ADD_U, R11Z, konst(1), imm(0)),    // 4
        cat2(ADD_U, R4X, reg(R2X), reg(R0X)),   // 5: trip count
        mov_imm(R1X, 0),                        // 6
        mov_imm(R3X, 0),                        // 7
        cmps_u(3, P0X, reg(R3X), reg(R4X)),     // 8: head: p0.x = r3.x >= n
        br_p0x(4),                              // 9: → 13
        cat2(ADD_U, R1X, reg(R1X), reg(R3X)),   // 10
        cat2(ADD_U, R3X, reg(R3X), imm(1)),     // 11
        jump(-4),                               // 12: → 8
        stg(R11Y, R1X) | 1 << 59,               // 13
        END,
    ];
    let p = program_with_wgid(&w);
    assert_eq!(hcq_ir3::exec::groups_per_wave(&p, 3), 21);
    let k = consts();
    let groups = 50u32;
    let d = Dispatch { consts: &k, grid: [groups, 1, 1], local: [3, 1, 1] };
    let (r, out) = packed_and_one_by_one(&p, &d, 16 * groups as usize);
    let s = r.unwrap();
    for g in 0..groups {
        for l in 0..3 {
            let n = g + l;
            assert_eq!(out[(g * 4 + l) as usize], n * n.saturating_sub(1) / 2, "work-group {g} fiber {l}");
        }
    }
    // (`packed_and_one_by_one` compared the counts with the one-by-one run.) Every work-group
    // runs at least the 15 instructions of a zero-trip path.
    assert!(s.steps > u64::from(groups) * 15, "{s:?}");
}

/// One-fiber work-groups (tinygrad's NOLOCALS kernels) run 64 to a wave; an access out of bounds
/// names the work-group and fiber that made it, as when each runs alone.
#[test]
fn a_packed_fault_names_its_own_work_group() {
    let w = [
        cat2(SHL, R10W, reg(R2X), imm(2)),
        cat2(ADD_U, R11Y, konst(0), reg(R10W)),
        cat2(ADD_U, R11Z, konst(1), imm(0)),
        stg(R11Y, R2X),
        END,
    ];
    let p = program_with_wgid(&w);
    assert_eq!(hcq_ir3::exec::groups_per_wave(&p, 1), 64);
    let k = consts();
    let d = Dispatch { consts: &k, grid: [100, 1, 1], local: [1, 1, 1] };
    let (r, out) = packed_and_one_by_one(&p, &d, 4 * 100);
    assert_eq!(r.unwrap().steps, 100 * 5);
    assert_eq!(out, (0..100).collect::<Vec<u32>>());
    let e = packed_and_one_by_one(&p, &d, 4 * 70).0.unwrap_err();
    assert_eq!(
        e,
        ExecError::Fault {
            index: 3,
            group: [70, 0, 0],
            lane: 0,
            addr: BASE + 280,
            space: MemSpace::Global,
            write: true
        }
    );
    // A barrier, shared memory or a cross-lane op keeps work-groups in waves of their own.
    let mut with_bar = w.to_vec();
    with_bar.insert(0, BAR);
    assert_eq!(hcq_ir3::exec::groups_per_wave(&program_with_wgid(&with_bar), 1), 1);
    let mut with_ldl = w.to_vec();
    with_ldl.insert(0, ldl(R3X, R10W));
    assert_eq!(hcq_ir3::exec::groups_per_wave(&program_with_wgid(&with_ldl), 1), 1);
    assert_eq!(hcq_ir3::exec::groups_per_wave(&p, 33), 1);
}

/// `sad.s32` adds its three sources in 32 bits: Mesa's ir3 builds NIR `iadd3` with it on GPUs
/// with `has_sad` (and on full registers, though the ISA XML derives FULL=false for it).
#[test]
fn sad_s32_adds_three_full_registers() {
    let sad = 3u64 << 61 | 15 << 55 | R2X << 47 | R1X << 32 | R4X << 16 | R3X;
    let body = [mov_imm(R3X, 0x1234_5678), mov_imm(R2X, 0xf000_0000), mov_imm(R4X, 0x0111_1111), sad];
    let out = collect(&body, 2, 0);
    assert_eq!(out, vec![0x1234_5678u32.wrapping_add(0xf000_0000).wrapping_add(0x0111_1111); 2]);
}

/// Opcodes Mesa's ir3 never emits, whose semantics are undocumented, are refused with the
/// reason, at load (`refused`) and when reached.
#[test]
fn never_emitted_alu_opcodes_are_refused_with_the_reason() {
    let sel_f32 = 3u64 << 61 | 13 << 55 | R2X << 47 | R1X << 32 | R4X << 16 | R3X;
    let cmpv_u = cat2(33, R1X, reg(R0X), imm(1));
    for (word, name) in [(sel_f32, "sel.f32"), (cmpv_u, "cmpv.u")] {
        let p = program(&[word, END], 0);
        let why = hcq_ir3::exec::refused(&p.instrs[0]).expect("refused at load");
        assert!(why.contains(name) && why.contains("never emitted by Mesa"), "{why}");
        let e = Interp::new()
            .run(&p, &Dispatch { consts: &[], grid: [1, 1, 1], local: [1, 1, 1] }, &mut Buffers::default())
            .unwrap_err();
        assert_eq!(e, ExecError::Unsupported { index: 0, name });
        assert!(e.to_string().contains(why), "{e}");
    }
    // bary.f interpolates fragment varyings
    let bary = cat2(57, R1X, reg(R0X), reg(R0X));
    assert!(hcq_ir3::exec::refused(&program(&[bary, END], 0).instrs[0]).unwrap().contains("fragment"));
}

/// A relative register read out of range names the work-group and fiber that made it, packed
/// (one-fiber work-groups, 64 to a wave) or not.
#[test]
fn a_relative_access_out_of_range_names_its_work_group() {
    // mov.u32u32 r1.x, r<a0.x + 300> (a0.x = 0): past the 256 regids
    let mov_rel = 0x200c_c004_0000_092cu64;
    let w = [cmps_u_lt(P0X, reg(R2X), imm(70)), br_p0x(2), mov_rel, END];
    let p = program_with_wgid(&w);
    let d = Dispatch { consts: &[], grid: [100, 1, 1], local: [1, 1, 1] };
    let e = packed_and_one_by_one(&p, &d, 4).0.unwrap_err();
    assert_eq!(e, ExecError::Relative { index: 2, group: [70, 0, 0], lane: 0, value: 300 });
    assert!(e.to_string().contains("work-group [70, 0, 0], lane 0"), "{e}");
}
