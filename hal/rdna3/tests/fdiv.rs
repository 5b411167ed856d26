//! LLVM's division sequences on the interpreter, against correctly rounded division.
//!
//! f32 and f64: what `SITargetLowering::LowerFDIV32/LowerFDIV64` (LLVM 19) emit for gfx1100 —
//! `v_div_scale` of the denominator and of the numerator (VCC), `v_rcp`, Newton–Raphson fmas,
//! `v_div_fmas` (scaled back by VCC), `v_div_fixup` — over pairs of every kind (zeros,
//! subnormals, infinities, NaNs, quotients near overflow, near and inside the subnormals, below
//! them, near halfway points, random bits), each lane its own pair, in wave32 and wave64: every
//! quotient must be Rust's `n / d` bit for bit (any NaN where it is a NaN). The interpreter's
//! `v_rcp_f32`/`v_rcp_f64` are correctly rounded (the guide gives the hardware's 1 ulp and
//! 2^29 ulps); a reciprocal off by that much leaves the sequences a last-place error where the
//! quotient is within 2^-48 (2^-106) of a midpoint, e.g. 2^127 / (2^128 − 2^104), so they are
//! not perturbed here.
//!
//! f16: LLVM 19's `LowerFDIV16` (the operands widened to f32, `v_rcp_f32`, `v_mul_f32`,
//! `v_cvt_f16_f32`, `v_div_fixup_f16`): its quotient must be the correctly rounded one, found
//! here by exact comparison with the midpoints, except where the exact quotient is itself a
//! midpoint (a tie the f32 reciprocal moves off; then one of its two neighbours).

mod common;

use common::*;
use hcq_rdna3::exec::Program;

const BASE: u64 = 0x10_0000;
/// Elements per dispatch: one work-group of 1024 work-items.
const CHUNK: usize = 1024;

/// Run `code` over `n` and `d` (elements of `size` bytes) and return the quotients' bytes.
fn run(code: &[u32], wave64: bool, size: usize, n: &[u8], d: &[u8]) -> Vec<u8> {
    let p = Program::load(code, 0, wave64).unwrap();
    let count = n.len() / size;
    assert_eq!(count % CHUNK, 0);
    let bytes = size * CHUNK;
    let mut out = Vec::with_capacity(n.len());
    for c in 0..count / CHUNK {
        let mut mem = Buf(BASE, [&n[c * bytes..][..bytes], &d[c * bytes..][..bytes], &vec![0; bytes]].concat());
        let a = |k: u64| BASE + k * bytes as u64;
        let user = [a(0) as u32, 0, a(1) as u32, 0, a(2) as u32, 0];
        p.run(&dispatch(CHUNK as u32, wave64, &user), [1, 1, 1], &mut mem).unwrap();
        out.extend_from_slice(&mem.1[2 * bytes..]);
    }
    out
}

/// LLVM's f32 sequence; `v0` the work-item id, s[0:1] n, s[2:3] d, s[4:5] the quotients.
fn f32_code() -> Vec<u32> {
    let v = |r: u32| V + r;
    prog(&[
        vop2("v_lshlrev_b32_e32", 1, int(2), v(0)),
        global("global_load_b32", 2, 1, 0, 0),
        global("global_load_b32", 3, 1, 0, 2),
        vop3sd("v_div_scale_f32", 4, 10, v(3), v(3), v(2), 0),
        vop3sd("v_div_scale_f32", 5, VCC, v(2), v(3), v(2), 0),
        vop1("v_rcp_f32_e32", 6, v(4)),
        vop3m("v_fma_f32", 7, v(4), v(6), ONE, 1),
        vop2("v_fmac_f32_e32", 6, v(7), v(6)),
        vop2("v_mul_f32_e32", 7, v(5), v(6)),
        vop3m("v_fma_f32", 8, v(4), v(7), v(5), 1),
        vop2("v_fmac_f32_e32", 7, v(8), v(6)),
        vop3m("v_fma_f32", 4, v(4), v(7), v(5), 1),
        vop3("v_div_fmas_f32", 4, v(4), v(6), v(7)),
        vop3("v_div_fixup_f32", 4, v(4), v(3), v(2)),
        global("global_store_b32", 0, 1, 4, 4),
        sopp("s_endpgm", 0),
    ])
}

/// LLVM's f64 sequence.
fn f64_code() -> Vec<u32> {
    let v = |r: u32| V + r;
    prog(&[
        vop2("v_lshlrev_b32_e32", 1, int(3), v(0)),
        global("global_load_b64", 2, 1, 0, 0),
        global("global_load_b64", 4, 1, 0, 2),
        vop3sd("v_div_scale_f64", 6, 10, v(4), v(4), v(2), 0),
        vop1("v_rcp_f64_e32", 8, v(6)),
        vop3m("v_fma_f64", 10, v(6), v(8), ONE, 1),
        vop3("v_fma_f64", 8, v(8), v(10), v(8)),
        vop3m("v_fma_f64", 10, v(6), v(8), ONE, 1),
        vop3sd("v_div_scale_f64", 12, VCC, v(2), v(4), v(2), 0),
        vop3("v_fma_f64", 8, v(8), v(10), v(8)),
        vop3("v_mul_f64", 10, v(12), v(8), 0),
        vop3m("v_fma_f64", 6, v(6), v(10), v(12), 1),
        vop3("v_div_fmas_f64", 6, v(6), v(8), v(10)),
        vop3("v_div_fixup_f64", 6, v(6), v(4), v(2)),
        global("global_store_b64", 0, 1, 6, 4),
        sopp("s_endpgm", 0),
    ])
}

/// LLVM 19's f16 sequence.
fn f16_code() -> Vec<u32> {
    let v = |r: u32| V + r;
    prog(&[
        vop2("v_lshlrev_b32_e32", 1, int(1), v(0)),
        global("global_load_u16", 2, 1, 0, 0),
        global("global_load_u16", 3, 1, 0, 2),
        vop1("v_cvt_f32_f16_e32", 4, v(2)),
        vop1("v_cvt_f32_f16_e32", 5, v(3)),
        vop1("v_rcp_f32_e32", 5, v(5)),
        vop2("v_mul_f32_e32", 4, v(4), v(5)),
        vop1("v_cvt_f16_f32_e32", 4, v(4)),
        vop3("v_div_fixup_f16", 4, v(4), v(3), v(2)),
        global("global_store_b16", 0, 1, 4, 4),
        sopp("s_endpgm", 0),
    ])
}

/// An f32 of every kind: specials, random bits, subnormals, or 2^e·(1 + random) for e in range.
fn f32_any(r: &mut Rng) -> u32 {
    const K: &[u32] = &[
        0,
        0x8000_0000,
        1,
        2,
        0x007f_ffff,
        0x0080_0000,
        0x0080_0001,
        0x3f80_0000,
        0xbf80_0000,
        0x4040_0000,
        0x3eaa_aaab,
        0x7f7f_ffff,
        0x7f00_0000,
        0x7e80_0000,
        0x7e80_0001,
        0x0100_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_1234,
        0x7f80_0001,
        0x3380_0000,
        0x1f80_0000,
        0x5f80_0000,
    ];
    let sign = ((r.next() & 1) as u32) << 31;
    match r.below(6) {
        0 => K[r.below(K.len() as u64) as usize],
        1 => r.next() as u32,
        2 => (r.below(0x0080_0000) as u32) | sign,
        _ => ((r.below(254) as u32 + 1) << 23) | (r.below(0x0080_0000) as u32) | sign,
    }
}

/// Pairs whose quotient lands where the scaling matters: near the largest float, near and
/// inside the subnormals and below them, with a denominator above 2^126 or subnormal, with a
/// tiny numerator, and near halfway points between two floats.
fn f32_pair(r: &mut Rng) -> (u32, u32) {
    fn sig(r: &mut Rng) -> u32 {
        r.below(0x0080_0000) as u32
    }
    fn sign(r: &mut Rng) -> u32 {
        ((r.next() & 1) as u32) << 31
    }
    fn at(r: &mut Rng, e: i64) -> u32 {
        let e = e.clamp(1, 254) as u32;
        (e << 23) | sig(r) | sign(r)
    }
    match r.below(8) {
        0 | 1 => (f32_any(r), f32_any(r)),
        // Quotient near 2^±126, 2^-149, 2^128: exponent difference chosen.
        2 => {
            let target = [127 + 126, 127 - 126, 127 - 149, 127 - 150, 127 + 127, 0][r.below(6) as usize] as i64;
            let ed = 1 + r.below(254) as i64;
            let en = ed + target - 127 + r.below(3) as i64 - 1;
            (at(r, en), at(r, ed))
        }
        // A denominator above 2^126.
        3 => {
            let e = 253 + r.below(2) as i64;
            (f32_any(r), at(r, e))
        }
        // A subnormal denominator.
        4 => (f32_any(r), sig(r) | sign(r)),
        // A tiny numerator.
        5 => {
            let e = 1 + r.below(30) as i64;
            let mask = if r.below(4) == 0 { 0x807f_ffff } else { u32::MAX };
            (at(r, e) & mask, f32_any(r))
        }
        // Near a halfway point: n = d · (q + half an ulp), rounded.
        _ => {
            let (ed, eq) = (100 + r.below(50) as i64, 100 + r.below(50) as i64);
            let d = at(r, ed);
            let q = at(r, eq);
            let half = f64::from(f32::from_bits(q)) * (1.0 + 2f64.powi(-24));
            let n = (f64::from(f32::from_bits(d)) * half) as f32;
            (n.to_bits(), d)
        }
    }
}

fn f32_pairs(seed: u64, count: usize) -> (Vec<u32>, Vec<u32>) {
    let mut r = Rng(seed);
    let mut n = Vec::with_capacity(count);
    let mut d = Vec::with_capacity(count);
    // Every pair of the specials first.
    const S: &[u32] = &[
        0,
        0x8000_0000,
        1,
        0x807f_ffff,
        0x0080_0000,
        0x3f80_0000,
        0xc040_0000,
        0x7f7f_ffff,
        0x7e80_0001,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x0000_0003,
    ];
    for &a in S {
        for &b in S {
            n.push(a);
            d.push(b);
        }
    }
    while n.len() < count {
        let (a, b) = f32_pair(&mut r);
        n.push(a);
        d.push(b);
    }
    (n, d)
}

fn le32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn llvms_f32_division_is_correctly_rounded() {
    for (wave64, seed, count) in [(false, 0x5eed_f32a, 160 * CHUNK), (true, 0x5eed_f32b, 64 * CHUNK)] {
        let (n, d) = f32_pairs(seed, count);
        let out = run(&f32_code(), wave64, 4, &le32(&n), &le32(&d));
        for (k, q) in out.chunks(4).enumerate() {
            let got = f32::from_bits(u32::from_le_bytes(q.try_into().unwrap()));
            let want = f32::from_bits(n[k]) / f32::from_bits(d[k]);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "wave64 {wave64}: {:#010x} / {:#010x} ({:e} / {:e}) = {want:e} ({:#010x}), got {got:e} ({:#010x})",
                n[k],
                d[k],
                f32::from_bits(n[k]),
                f32::from_bits(d[k]),
                want.to_bits(),
                got.to_bits()
            );
        }
    }
}

fn f64_any(r: &mut Rng) -> u64 {
    const K: &[u64] = &[
        0,
        1 << 63,
        1,
        0x000f_ffff_ffff_ffff,
        0x0010_0000_0000_0000,
        0x3ff0_0000_0000_0000,
        0x4008_0000_0000_0000,
        0x7fef_ffff_ffff_ffff,
        0x7fe0_0000_0000_0000,
        0x7fd0_0000_0000_0001,
        0x7ff0_0000_0000_0000,
        0xfff0_0000_0000_0000,
        0x7ff8_0000_0000_0000,
    ];
    let sign = (r.next() & 1) << 63;
    let sig = r.next() & 0x000f_ffff_ffff_ffff;
    match r.below(8) {
        0 => K[r.below(K.len() as u64) as usize],
        1 => r.next(),
        2 => sig | sign,
        // Exponents near the ends and the middle.
        3 => ((1 + r.below(80)) << 52) | sig | sign,
        4 => ((2046 - r.below(80)) << 52) | sig | sign,
        _ => ((1 + r.below(2046)) << 52) | sig | sign,
    }
}

#[test]
fn llvms_f64_division_is_correctly_rounded() {
    for (wave64, seed, count) in [(false, 0x5eed_f64a, 96 * CHUNK), (true, 0x5eed_f64b, 32 * CHUNK)] {
        let mut r = Rng(seed);
        let (mut n, mut d) = (Vec::new(), Vec::new());
        while n.len() < count {
            let (a, b) = match r.below(4) {
                // Quotient exponent near the ends: ±1022, −1074, 1024.
                0 => {
                    let t =
                        [1023 + 1022, 1023 - 1022, 1023 - 1074, 1023 - 1075, 1023 + 1023][r.below(5) as usize] as i64;
                    let ed = 1 + r.below(2046) as i64;
                    let en = (ed + t - 1023 + r.below(3) as i64 - 1).clamp(1, 2046) as u64;
                    let sig = |r: &mut Rng| r.next() & 0x000f_ffff_ffff_ffff;
                    ((en << 52) | sig(&mut r), ((ed as u64) << 52) | sig(&mut r) | (r.next() & 1) << 63)
                }
                _ => (f64_any(&mut r), f64_any(&mut r)),
            };
            n.push(a);
            d.push(b);
        }
        let le = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let out = run(&f64_code(), wave64, 8, &le(&n), &le(&d));
        for (k, q) in out.chunks(8).enumerate() {
            let got = f64::from_bits(u64::from_le_bytes(q.try_into().unwrap()));
            let want = f64::from_bits(n[k]) / f64::from_bits(d[k]);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "wave64 {wave64}: {:#018x} / {:#018x} = {want:e} ({:#018x}), got {got:e} ({:#018x})",
                n[k],
                d[k],
                want.to_bits(),
                got.to_bits()
            );
        }
    }
}

/// An f16's value (exact in f64).
fn half(h: u16) -> f64 {
    let (s, e, m) = (h >> 15, (h >> 10) & 0x1f, f64::from(h & 0x3ff));
    let v = match e {
        0 => m * 2f64.powi(-24),
        0x1f if m == 0.0 => f64::INFINITY,
        0x1f => f64::NAN,
        _ => (1.0 + m / 1024.0) * 2f64.powi(i32::from(e) - 15),
    };
    if s == 1 { -v } else { v }
}

/// The correctly rounded f16 of n / d (finite, d ≠ 0), and whether n / d is exactly a midpoint:
/// the neighbours of |n / d| found among the f16 magnitudes (65536 standing for the overflow
/// to infinity), then |n| against the midpoint · |d|, exactly (a 12-bit midpoint times an
/// 11-bit d is exact in f64).
fn f16_div(n: u16, d: u16) -> (u16, bool, [u16; 2]) {
    let sign = (n ^ d) & 0x8000;
    let (an, ad) = (half(n).abs(), half(d).abs());
    let q = an / ad;
    let mag = |h: u16| if h == 0x7c00 { 65536.0 } else { half(h) };
    // The largest magnitude at or below q.
    let (mut lo, mut hi) = (0u16, 0x7c00u16);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if mag(mid) <= q { lo = mid } else { hi = mid }
    }
    if mag(hi) <= q {
        lo = hi;
    }
    if mag(lo) * ad == an {
        return (sign | lo, false, [sign | lo; 2]);
    }
    let up = (lo + 1).min(0x7c00);
    let m = (mag(lo) + mag(up)) / 2.0;
    let r = if an < m * ad {
        lo
    } else if an > m * ad {
        up
    } else if lo & 1 == 0 {
        lo
    } else {
        up
    };
    (sign | r, an == m * ad, [sign | lo, sign | up])
}

#[test]
fn llvm_19s_f16_division_is_correctly_rounded_but_at_ties() {
    let mut r = Rng(0x5eed_f16a);
    let count = 128 * CHUNK;
    let (mut n, mut d) = (Vec::new(), Vec::new());
    const S: &[u16] = &[0, 0x8000, 1, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x4200, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x0003];
    for &a in S {
        for &b in S {
            n.push(a);
            d.push(b);
        }
    }
    while n.len() < count {
        // CAST: random halves.
        n.push(r.next() as u16);
        d.push(if r.below(4) == 0 { ((r.below(16) as u16) * 3) | (r.next() as u16 & 0x8000) } else { r.next() as u16 });
    }
    let le = |v: &[u16]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let out = run(&f16_code(), false, 2, &le(&n), &le(&d));
    let mut ties = 0;
    for (k, q) in out.chunks(2).enumerate() {
        let got = u16::from_le_bytes(q.try_into().unwrap());
        let (a, b) = (n[k], d[k]);
        let (fa, fb) = (half(a), half(b));
        let special = fa.is_nan() || fb.is_nan() || fa.is_infinite() || fb.is_infinite() || fb == 0.0;
        if special {
            let want = fa / fb;
            let g = half(got);
            assert!(
                (g.is_nan() && want.is_nan()) || (g == want && g.is_sign_negative() == want.is_sign_negative()),
                "{a:#06x} / {b:#06x} = {want}, got {got:#06x}"
            );
            continue;
        }
        let (want, tie, around) = f16_div(a, b);
        if tie {
            ties += 1;
            assert!(around.contains(&got), "{a:#06x} / {b:#06x} is the midpoint of {around:#06x?}, got {got:#06x}");
        } else {
            assert_eq!(got, want, "{a:#06x} / {b:#06x} ({fa:e} / {fb:e})");
        }
    }
    assert!(ties > 0, "no midpoint among the pairs");
}
