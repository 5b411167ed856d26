//! Every WMMA form in both wave sizes against a matrix product computed here from the matrices
//! themselves: A, B and C laid out in the registers as the RDNA3 guide (7.9) lays them out —
//! lane l holds row l % 16 of A and column l % 16 of B along K, element (row, column) of C and
//! D is in lane column + 16·(row % R), VGPR row / R (R = 2 in wave32, 4 in wave64) — loaded,
//! multiplied, stored, and D read back by the same rule. Float forms: f32 products of random
//! values against the f32 fma chain over K, and small integers (exact in any order) for the
//! 16-bit outputs, each in the half op_sel[2] names with the other half kept; integer forms:
//! signed and unsigned bytes and nibbles, wrapping and (clamp) saturating.

// Matrices are indexed by row and column.
#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use hcq_rdna3::exec::{FaultKind, Program};

const BASE: u64 = 0x20_0000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    F32F16,
    F32Bf16,
    F16F16,
    Bf16Bf16,
    I32Iu8,
    I32Iu4,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::F32F16 => "v_wmma_f32_16x16x16_f16",
            Kind::F32Bf16 => "v_wmma_f32_16x16x16_bf16",
            Kind::F16F16 => "v_wmma_f16_16x16x16_f16",
            Kind::Bf16Bf16 => "v_wmma_bf16_16x16x16_bf16",
            Kind::I32Iu8 => "v_wmma_i32_16x16x16_iu8",
            Kind::I32Iu4 => "v_wmma_i32_16x16x16_iu4",
        }
    }
    /// Bits of an A/B element.
    fn bits(self) -> usize {
        match self {
            Kind::I32Iu8 => 8,
            Kind::I32Iu4 => 4,
            _ => 16,
        }
    }
}

fn f16_of(x: f32) -> u16 {
    // Small integers and f16-exact values only: exact.
    let b = x.to_bits();
    if x == 0.0 {
        return (b >> 16) as u16 & 0x8000;
    }
    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
    assert!((1..31).contains(&e) && b & 0x1fff == 0, "{x} is not an f16");
    ((b >> 16) & 0x8000) as u16 | (e as u16) << 10 | ((b >> 13) & 0x3ff) as u16
}

fn f16_val(h: u16) -> f32 {
    let (s, e, m) = (h >> 15, i32::from((h >> 10) & 0x1f), f32::from(h & 0x3ff));
    let v = if e == 0 { m * 2f32.powi(-24) } else { (1.0 + m / 1024.0) * 2f32.powi(e - 15) };
    if s == 1 { -v } else { v }
}

/// One run: `a`, `b` as element bits (row-major A, column-major B: [n][k]), `c` as 32-bit
/// accumulator bits (or 16-bit values in the named half), `d_old` the VGPRs D holds before.
#[allow(clippy::too_many_arguments)]
fn run(
    kind: Kind,
    wave64: bool,
    a: &[[u32; 16]; 16],
    b: &[[u32; 16]; 16],
    c: &[[u32; 16]; 16],
    hi: bool,
    mods: u32,
) -> (Vec<[u32; 8]>, Vec<[u32; 8]>) {
    let lanes = if wave64 { 64 } else { 32 };
    let per = lanes / 16;
    let bits = kind.bits();
    let mut mem = Buf(BASE, vec![0; 128 * lanes]);
    let mut rng = Rng(0x5eed_3333);
    let mut d_old = vec![[0u32; 8]; lanes];
    for l in 0..lanes {
        // A row l % 16 and B column l % 16, K packed along the registers.
        for k in 0..16 {
            let (reg, sh) = (k * bits / 32, (k * bits) % 32);
            let mask = if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 };
            for (m, base) in [(a[l % 16][k], 0), (b[l % 16][k], 8)] {
                let w = mem.word(32 * l + base + reg);
                mem.set_word(32 * l + base + reg, w | (m & mask) << sh);
            }
        }
        for r in 0..8 {
            let old = rng.next() as u32;
            d_old[l][r] = old;
            mem.set_word(32 * l + 24 + r, old);
            mem.set_word(32 * l + 16 + r, rng.next() as u32);
        }
    }
    for row in 0..16 {
        for col in 0..16 {
            let (l, r) = (col + 16 * (row % per), row / per);
            let x = c[row][col];
            let w = if kind.bits() == 16 && matches!(kind, Kind::F16F16 | Kind::Bf16Bf16) {
                let old = mem.word(32 * l + 16 + r);
                if hi { (old & 0xffff) | x << 16 } else { (old & 0xffff_0000) | x }
            } else {
                x
            };
            mem.set_word(32 * l + 16 + r, w);
        }
    }
    let v = |r: u32| V + r;
    let mut wm = vop3p(kind.name(), 24, v(0), v(8), v(16), if hi { 4 } else { 0 }, 0);
    wm[0] |= mods & 0xff00 & !(7 << 11);
    wm[1] |= mods & 0xe000_0000;
    let mut parts = vec![vop2("v_lshlrev_b32_e32", 40, int(7), v(0))];
    for k in 0..8 {
        parts.push(global_off("global_load_b128", 4 * k, 40, 0, 0, 16 * k as i32));
    }
    parts.push(wm);
    parts.push(global_off("global_store_b128", 0, 40, 24, 0, 96));
    parts.push(global_off("global_store_b128", 0, 40, 28, 0, 112));
    parts.push(sopp("s_endpgm", 0));
    let code = prog(&parts);
    let p = Program::load(&code, 0, wave64).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
    let user = [BASE as u32, 0];
    p.run(&dispatch(lanes as u32, wave64, &user), [1, 1, 1], &mut mem).unwrap();
    let d = (0..lanes).map(|l| core::array::from_fn(|r| mem.word(32 * l + 24 + r))).collect();
    (d, d_old)
}

/// D's element (row, col) from the lanes' registers.
fn d_at(d: &[[u32; 8]], wave64: bool, row: usize, col: usize) -> u32 {
    let per = if wave64 { 4 } else { 2 };
    d[col + 16 * (row % per)][row / per]
}

#[test]
fn float_wmma_is_the_f32_fma_chain_over_k() {
    for wave64 in [false, true] {
        for kind in [Kind::F32F16, Kind::F32Bf16] {
            let mut r = Rng(0x5eed_4444 + wave64 as u64);
            let mut a = [[0u32; 16]; 16];
            let mut b = [[0u32; 16]; 16];
            let mut c = [[0u32; 16]; 16];
            let (mut av, mut bv) = ([[0f32; 16]; 16], [[0f32; 16]; 16]);
            for i in 0..16 {
                for k in 0..16 {
                    // Finite halves (f16: exponent below 31; bf16: modest exponents).
                    let h = |r: &mut Rng| -> (u32, f32) {
                        let x = r.next() as u16;
                        if kind == Kind::F32F16 {
                            let x = if x & 0x7c00 == 0x7c00 { x & 0xbfff } else { x };
                            (u32::from(x), f16_val(x))
                        } else {
                            let x = (x & 0x80ff) | ((120 + (r.next() % 16) as u16) << 7);
                            (u32::from(x), f32::from_bits(u32::from(x) << 16))
                        }
                    };
                    (a[i][k], av[i][k]) = h(&mut r);
                    (b[i][k], bv[i][k]) = h(&mut r);
                }
                for j in 0..16 {
                    c[i][j] = ((r.next() % 2001) as f32 / 100.0 - 10.0).to_bits();
                }
            }
            let (d, _) = run(kind, wave64, &a, &b, &c, false, 0);
            for row in 0..16 {
                for col in 0..16 {
                    let mut s = f32::from_bits(c[row][col]);
                    for k in 0..16 {
                        s = libm::fmaf(av[row][k], bv[col][k], s);
                    }
                    let got = d_at(&d, wave64, row, col);
                    assert_eq!(got, s.to_bits(), "{kind:?} wave64 {wave64}: D[{row}][{col}]");
                }
            }
        }
    }
}

#[test]
fn half_output_wmma_writes_the_half_op_sel_names() {
    for wave64 in [false, true] {
        for kind in [Kind::F16F16, Kind::Bf16Bf16] {
            for hi in [false, true] {
                let mut r = Rng(0x5eed_5555);
                let enc =
                    |x: f32| -> u32 { if kind == Kind::F16F16 { u32::from(f16_of(x)) } else { x.to_bits() >> 16 } };
                // Sums exact in the output type: below 2048 (f16), 256 (bf16).
                let span = if kind == Kind::F16F16 { 4 } else { 2 };
                let small = |r: &mut Rng| (r.next() % (2 * span + 1)) as f32 - span as f32;
                let (mut a, mut b, mut c) = ([[0u32; 16]; 16], [[0u32; 16]; 16], [[0u32; 16]; 16]);
                let (mut av, mut bv, mut cv) = ([[0f32; 16]; 16], [[0f32; 16]; 16], [[0f32; 16]; 16]);
                for i in 0..16 {
                    for k in 0..16 {
                        av[i][k] = small(&mut r);
                        bv[i][k] = small(&mut r);
                        cv[i][k] = small(&mut r) * span as f32 * 2.0;
                        (a[i][k], b[i][k], c[i][k]) = (enc(av[i][k]), enc(bv[i][k]), enc(cv[i][k]));
                    }
                }
                let (d, old) = run(kind, wave64, &a, &b, &c, hi, 0);
                let per = if wave64 { 4 } else { 2 };
                for row in 0..16 {
                    for col in 0..16 {
                        let want: f32 = cv[row][col] + (0..16).map(|k| av[row][k] * bv[col][k]).sum::<f32>();
                        let (l, reg) = (col + 16 * (row % per), row / per);
                        let w = d[l][reg];
                        let (mine, other) = if hi { (w >> 16, w & 0xffff) } else { (w & 0xffff, w >> 16) };
                        let keep = if hi { old[l][reg] & 0xffff } else { old[l][reg] >> 16 };
                        assert_eq!(mine, enc(want), "{kind:?} wave64 {wave64} hi {hi}: D[{row}][{col}]");
                        assert_eq!(other, keep, "{kind:?} wave64 {wave64} hi {hi}: the other half");
                    }
                }
                // D's VGPRs past the matrix (wave64 has 4) are untouched.
                if wave64 {
                    assert!(d.iter().zip(&old).all(|(x, y)| x[4..] == y[4..]));
                }
            }
        }
    }
}

#[test]
fn integer_wmma_signs_wraps_and_clamps_as_asked() {
    for wave64 in [false, true] {
        for kind in [Kind::I32Iu8, Kind::I32Iu4] {
            for (sa, sb, clamp) in
                [(false, false, false), (true, false, false), (false, true, true), (true, true, true)]
            {
                let mut r = Rng(0x5eed_6666);
                let bits = kind.bits() as u32;
                let (mut a, mut b, mut c) = ([[0u32; 16]; 16], [[0u32; 16]; 16], [[0u32; 16]; 16]);
                for i in 0..16 {
                    for k in 0..16 {
                        a[i][k] = (r.next() as u32) & ((1 << bits) - 1);
                        b[i][k] = (r.next() as u32) & ((1 << bits) - 1);
                        // Near the ends now and then, for the wrap and the clamp.
                        c[i][k] = match r.next() % 3 {
                            0 => 0x7fff_fff0u32.wrapping_add((r.next() % 32) as u32),
                            1 => 0x8000_0010u32.wrapping_sub((r.next() % 32) as u32),
                            _ => r.next() as u32,
                        };
                    }
                }
                let val = |x: u32, signed: bool| -> i64 {
                    if signed { i64::from(((x << (32 - bits)) as i32) >> (32 - bits)) } else { i64::from(x) }
                };
                let mods = u32::from(sa) << 29 | u32::from(sb) << 30 | u32::from(clamp) << 15;
                let (d, _) = run(kind, wave64, &a, &b, &c, false, mods);
                for row in 0..16 {
                    for col in 0..16 {
                        let s = i64::from(c[row][col] as i32)
                            + (0..16).map(|k| val(a[row][k], sa) * val(b[col][k], sb)).sum::<i64>();
                        let want =
                            if clamp { s.clamp(i32::MIN.into(), i32::MAX.into()) as i32 as u32 } else { s as u32 };
                        assert_eq!(
                            d_at(&d, wave64, row, col),
                            want,
                            "{kind:?} wave64 {wave64} {sa} {sb} {clamp}: D[{row}][{col}]"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_wmma_with_lanes_off_faults_and_float_negation_is_refused() {
    let v = |r: u32| V + r;
    let code = prog(&[
        sop1("s_mov_b32", EXEC, int(7)),
        vop3p("v_wmma_f16_16x16x16_f16", 24, v(0), v(8), v(16), 0, 0),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let f = p.run(&dispatch(32, false, &[]), [1, 1, 1], &mut Buf(0, vec![])).unwrap_err();
    assert_eq!((f.kind, f.inst), (FaultKind::Lanes, "v_wmma_f16_16x16x16_f16"));
    let mut neg = vop3p("v_wmma_f32_16x16x16_f16", 24, v(0), v(8), v(16), 0, 0);
    neg[1] |= 1 << 29;
    let e = Program::load(&prog(&[neg, sopp("s_endpgm", 0)]), 0, false).unwrap_err();
    assert!(e.to_string().contains("neg or clamp on a float WMMA"), "{e}");
}
