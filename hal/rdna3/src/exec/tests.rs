//! The fast paths against the reference: random instructions of every VALU encoding (and the
//! memory and scalar ones the fast paths take) run on random wave states, once on a program
//! loaded with the lane-array paths and once on the same program on the per-lane paths
//! (`Program::load_with(.., false)`); every SGPR, VGPR, SCC, the result and the counts must be
//! equal, bit for bit.

extern crate std;

use super::*;
use crate::disasm::Text;
use crate::tables;
use std::format;
use std::string::String;

/// A random source; `nans`: values may be NaNs (as f32 or in either f16 half).
struct Rng(u64, bool);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u32) -> u32 {
        // CAST: the high bits, reduced below n.
        ((self.next() >> 32) % u64::from(n)) as u32
    }
    fn pick<T: Copy>(&mut self, s: &[T]) -> T {
        s[self.below(s.len() as u32) as usize]
    }
    fn op(&mut self, t: &'static [tables::Op]) -> &'static tables::Op {
        &t[self.below(t.len() as u32) as usize]
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }
}

/// Values that tell float and integer paths apart: zeros, ones, infinities, NaNs (quiet,
/// signalling, negative), subnormals, extremes, sign bits, halves.
const VALUES: &[u32] = &[
    0,
    0x8000_0000,
    0x3f80_0000,
    0xbf80_0000,
    0x3f00_0000,
    0x4000_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0x7f80_0001,
    0xffc0_0001,
    0x7fa0_1234,
    1,
    0x807f_ffff,
    0x7f7f_ffff,
    0x0080_0000,
    0xffff_ffff,
    0x7fff_ffff,
    0x3c00_3c00,
    0x7c00_fc00,
    0x7e00_0001,
    0x0001_8000,
    31,
    32,
    33,
    64,
    0x00ff_ffff,
    0xff80_0000,
];

fn value(r: &mut Rng) -> u32 {
    let x = any_value(r);
    if !r.1 && (nan32(x) || nan16(x) || nan16(x >> 16)) { 0x3f80_0000 } else { x }
}

fn nan32(x: u32) -> bool {
    x & 0x7f80_0000 == 0x7f80_0000 && x & 0x7f_ffff != 0
}

fn nan16(x: u32) -> bool {
    x & 0x7c00 == 0x7c00 && x & 0x3ff != 0
}

/// Equal, or NaNs both (as f32, or in each f16 half): which NaN a float op returns when two
/// meet is the host's choice — Rust leaves open which operand's NaN `a + b` returns, and the
/// compiler may swap the operands of a commutative op — on either path.
fn same_or_nans(a: u32, b: u32) -> bool {
    let half = |a: u32, b: u32| a & 0xffff == b & 0xffff || (nan16(a) && nan16(b));
    a == b || (nan32(a) && nan32(b)) || (half(a, b) && half(a >> 16, b >> 16))
}

fn any_value(r: &mut Rng) -> u32 {
    match r.below(4) {
        0 => r.pick(VALUES),
        // CAST: random bits.
        1 => r.next() as u32,
        2 => (r.below(2001) as f32 / 100.0 - 10.0).to_bits(),
        _ => r.below(70).wrapping_sub(5),
    }
}

/// A source field: VGPRs 0–7 mostly, SGPRs, inline constants, the literal, vccz/execz/scc.
fn src(r: &mut Rng) -> u32 {
    match r.below(20) {
        0..=7 => 256 + r.below(8),
        8..=11 => r.pick(&[0, 1, 2, 3, 4, 5, 106, 107, 126, 127, 124, 125]),
        // Without NaNs: not −1..−16, NaNs in both f16 halves.
        12..=13 => 128 + r.below(if r.1 { 81 } else { 65 }),
        14..=15 => 240 + r.below(9),
        16..=18 => 255,
        _ => 251 + r.below(3),
    }
}

fn vgpr(r: &mut Rng) -> u32 {
    r.below(8)
}

/// An SGPR destination field (a mask, a carry-out).
fn sdst(r: &mut Rng) -> u32 {
    r.pick(&[0, 2, 4, 5, 106, 126, 124])
}

/// Rarely set: a modifier bit that often makes the op refused or changes little.
fn rare(r: &mut Rng, percent: u32) -> u32 {
    u32::from(r.chance(percent))
}

/// One random VALU instruction's dwords, a literal after them (used or not).
fn valu_inst(r: &mut Rng) -> [u32; 3] {
    let lit = value(r);
    match r.below(5) {
        0 => {
            let o = r.op(tables::VOP1);
            [0x3f << 25 | vgpr(r) << 17 | u32::from(o.op) << 9 | src(r), lit, 0]
        }
        1 => {
            let o = r.op(tables::VOP2);
            [u32::from(o.op) << 25 | vgpr(r) << 17 | vgpr(r) << 9 | src(r), lit, 0]
        }
        2 => {
            let o = r.op(tables::VOPC);
            [0x3e << 25 | u32::from(o.op) << 17 | vgpr(r) << 9 | src(r), lit, 0]
        }
        3 => {
            let o = r.op(tables::VOP3);
            let name = o.name;
            // VOP3SD (carry-out) and compares: an SGPR destination; the rest a VGPR.
            let sd = name.starts_with("v_cmp") || name.contains("_co_") || name.starts_with("v_mad_u64");
            let d = if name.starts_with("v_cmp") { sdst(r) } else { vgpr(r) };
            let mid = if sd && !name.starts_with("v_cmp") {
                sdst(r)
            } else {
                // abs (3 bits), op_sel (4 bits), clamp.
                (r.below(8) * rare(r, 40)) | (r.below(16) * rare(r, 20)) << 3 | rare(r, 5) << 7
            };
            let w0 = 0x35 << 26 | u32::from(o.op) << 16 | (mid & 0xff) << 8 | d;
            let (a, b, c) = (src(r), src(r), src(r));
            let neg = r.below(8) * rare(r, 40);
            let omod = r.below(4) * rare(r, 5);
            [w0, neg << 29 | omod << 27 | c << 18 | b << 9 | a, lit]
        }
        _ => {
            let (x, y) = (r.op(tables::VOPDX), r.op(tables::VOPDY));
            let (dx, dy) = (vgpr(r), vgpr(r));
            let w0 = 0x32 << 26 | u32::from(x.op) << 22 | u32::from(y.op) << 17 | vgpr(r) << 9 | src(r);
            [w0, dx << 24 | (dy >> 1) << 17 | vgpr(r) << 9 | src(r), lit]
        }
    }
}

/// One random VOP3P instruction (packed 16-bit math, fma_mix, WMMA): registers among v0–v15,
/// op_sel / op_sel_hi / neg bits random; WMMA's A and B in VGPRs, C a VGPR or 0.
fn vop3p_inst(r: &mut Rng) -> [u32; 3] {
    let o = r.op(tables::VOP3P);
    let wmma = o.name.starts_with("v_wmma");
    let v = |r: &mut Rng| 256 + r.below(if wmma { 9 } else { 8 });
    let (a, b) = if wmma || r.chance(60) { (v(r), v(r)) } else { (src(r), src(r)) };
    let c = if wmma && r.chance(30) {
        128
    } else if wmma || r.chance(60) {
        v(r)
    } else {
        src(r)
    };
    let d = r.below(if wmma { 9 } else { 8 });
    // WMMA: neg and clamp rare (most are refused on the float forms).
    let (neg_hi, neg_lo) =
        if wmma { (r.below(8) * rare(r, 10), r.below(8) * rare(r, 20)) } else { (r.below(8), r.below(8)) };
    let clamp = rare(r, 5);
    let w0 = 0xcc << 24 | u32::from(o.op) << 16 | r.below(1 << 4) << 11 | neg_hi << 8 | clamp << 15 | d;
    let w1 = neg_lo << 29 | r.below(4) << 27 | c << 18 | b << 9 | a;
    [w0, w1, value(r)]
}

/// One random vector memory instruction (global, flat, scratch, LDS; every opcode of their
/// tables), its registers among v0–v7, global's base SGPR pair s[0:1], s[2:3] or none.
fn mem_inst(r: &mut Rng) -> [u32; 3] {
    let (vdst, data, addr) = (vgpr(r), vgpr(r), vgpr(r));
    // Small offsets, now and then negative (13-bit two's complement).
    let off = if r.chance(20) { 0x2000 - 4 * r.below(8) } else { 4 * r.below(16) + rare(r, 10) } & 0x1fff;
    match r.below(4) {
        0 => {
            let o = r.op(tables::GLOBAL);
            let saddr = r.pick(&[0, 2, 124, 124]);
            [0x37 << 26 | u32::from(o.op) << 18 | 2 << 16 | off, vdst << 24 | saddr << 16 | data << 8 | addr, 0]
        }
        1 => {
            let o = r.op(tables::FLAT);
            [0x37 << 26 | u32::from(o.op) << 18 | (off & 0xfff), vdst << 24 | 124 << 16 | data << 8 | addr, 0]
        }
        2 => {
            let o = r.op(tables::SCRATCH);
            let saddr = r.pick(&[4, 124]);
            let sve = rare(r, 50);
            let w1 = vdst << 24 | sve << 23 | saddr << 16 | data << 8 | addr;
            [0x37 << 26 | u32::from(o.op) << 18 | 1 << 16 | (off & 0x3f), w1, 0]
        }
        _ => {
            let o = r.op(tables::DS);
            let mut field = || {
                let n = if r.chance(50) { 8 } else { 256 };
                r.below(n)
            };
            let (o0, o1) = (field(), field());
            [0x36 << 26 | u32::from(o.op) << 18 | o1 << 8 | o0, vdst << 24 | vgpr(r) << 16 | data << 8 | addr, 0]
        }
    }
}

/// Global memory: `bytes` at `base`.
#[derive(Clone, PartialEq, Eq)]
struct Buf {
    base: u64,
    bytes: Vec<u8>,
}

impl Memory for Buf {
    fn read(&mut self, a: u64, b: &mut [u8]) -> bool {
        let n = b.len();
        match a.checked_sub(self.base).and_then(|o| usize::try_from(o).ok()).and_then(|o| self.bytes.get(o..o + n)) {
            Some(s) => {
                b.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, a: u64, d: &[u8]) -> bool {
        let n = d.len();
        match a.checked_sub(self.base).and_then(|o| usize::try_from(o).ok()).and_then(|o| self.bytes.get_mut(o..o + n))
        {
            Some(s) => {
                s.copy_from_slice(d);
                true
            }
            None => false,
        }
    }
}

const BASE: u64 = 0x1000;

/// Addresses in v0–v7 (byte offsets, global addresses' low halves, zeros, now and then
/// anything), base pairs in s[0:1] and s[2:3], a scratch offset in s4; random memory.
fn addressed<const N: usize>(r: &mut Rng, w: &mut Wave) -> (Buf, Vec<u8>) {
    for reg in 0..8 {
        for l in 0..N {
            w.v[reg * N + l] = match r.below(20) {
                // CAST: BASE is small.
                0..=7 => BASE as u32 + 4 * r.below(130),
                8..=12 => 4 * r.below(70),
                13..=16 => 0,
                17..=18 => r.below(300),
                _ => value(r),
            };
        }
    }
    // CAST: BASE is small.
    (w.s[0], w.s[1], w.s[2], w.s[3]) = (BASE as u32, 0, 64, 0);
    w.s[4] = r.below(8);
    for x in w.private.iter_mut() {
        // CAST: a random byte.
        *x = r.next() as u8;
    }
    // CAST (both): random bytes.
    let mem = Buf { base: BASE, bytes: (0..600).map(|_| r.next() as u8).collect() };
    (mem, (0..256).map(|_| r.next() as u8).collect())
}

const ENDPGM: u32 = 0xbfb0_0000;

/// The instruction of `words` (as much of them as it takes), then `s_endpgm`.
fn program(words: &[u32]) -> Option<(Vec<u32>, Inst)> {
    let mut code = words.to_vec();
    code.push(ENDPGM);
    let i = decode(&code, 0).ok()?;
    code.truncate(i.len);
    code.push(ENDPGM);
    Some((code, i))
}

fn dispatch(lanes: u32) -> Dispatch<'static> {
    Dispatch {
        wave64: lanes == 64,
        local: [lanes, 1, 1],
        user_sgprs: &[],
        user_sgpr_count: 0,
        tgid: [false; 3],
        tg_size: false,
        wave_offset: false,
        lds_bytes: 256,
        private_bytes: 16,
        max_steps: 100,
    }
}

/// A wave of `N` lanes with random SGPRs, VGPRs 0–15, EXEC (all, some or none) and SCC.
fn wave<const N: usize>(r: &mut Rng) -> Wave {
    let mut w = Wave::new(&dispatch(N as u32), [0; 3], 0, 1, N);
    for s in w.s.iter_mut() {
        *s = value(r);
    }
    for x in w.v[..16 * N].iter_mut() {
        *x = value(r);
    }
    let exec = match r.below(10) {
        0 => 0,
        1..=5 => u64::MAX,
        // CAST: random bits.
        _ => r.next(),
    };
    // CAST: the halves.
    w.s[126] = exec as u32;
    w.s[127] = if N == 64 { (exec >> 32) as u32 } else { w.s[127] };
    w.scc = r.chance(50);
    w
}

/// Run `w` on `p` from its first instruction until it ends or faults.
fn run<const N: usize>(p: &Program, w: &mut Wave, mem: &mut dyn Memory, lds: &mut [u8]) -> (Result<(), Fault>, Stats) {
    let d = dispatch(N as u32);
    let mut st = Stats::default();
    let mut cx = Cx { p, d: &d, group: [0; 3], wave: 0, mem, lds, st: &mut st };
    let r = cx.run::<N>(w);
    (r, st)
}

fn differ(a: &Wave, b: &Wave, n: usize, nans: bool) -> Option<String> {
    if a.scc != b.scc {
        return Some(format!("scc {} against {}", a.scc, b.scc));
    }
    if let Some(k) = (0..128).find(|&k| a.s[k] != b.s[k]) {
        return Some(format!("s{k} {:#x} against {:#x}", a.s[k], b.s[k]));
    }
    // A NaN as f32, in each f16 half, or as the f64 of this VGPR and the next or the one before.
    let nan64 = |w: &Wave, lo: usize| {
        let hi = lo + n;
        hi < w.v.len() && f64::from_bits(u64::from(w.v[lo]) | u64::from(w.v[hi]) << 32).is_nan()
    };
    let same = |k: usize| {
        a.v[k] == b.v[k]
            || (nans
                && (same_or_nans(a.v[k], b.v[k])
                    || (nan64(a, k) && nan64(b, k))
                    || (k >= n && nan64(a, k - n) && nan64(b, k - n))))
    };
    if let Some(k) = (0..a.v.len()).find(|&k| !same(k)) {
        return Some(format!("v{} lane {}: {:#x} against {:#x}", k / n, k % n, a.v[k], b.v[k]));
    }
    if a.private != b.private {
        return Some("scratch".into());
    }
    None
}

/// `trials` random instructions from `inst`, each on 4 random states, both ways: the states run
/// and the programs that took a lane path.
fn differential<const N: usize>(
    seed: u64,
    nans: bool,
    trials: usize,
    mut inst: impl FnMut(&mut Rng) -> [u32; 3],
    mem: bool,
) -> (usize, usize) {
    let mut r = Rng(seed, nans);
    let (mut ran, mut lanes) = (0, 0);
    for _ in 0..trials {
        let words = inst(&mut r);
        let Some((code, i)) = program(&words) else { continue };
        let fast = Program::load_with(&code, 0, N == 64, true);
        let slow = Program::load_with(&code, 0, N == 64, false);
        let (fast, slow) = match (fast, slow) {
            (Ok(f), Ok(s)) => (f, s),
            (Err(a), Err(b)) => {
                assert_eq!(a, b);
                continue;
            }
            (a, b) => panic!("{}: loads differ: {:?} / {:?}", Text(&i), a.err(), b.err()),
        };
        lanes += usize::from(fast.steps.iter().any(|s| {
            matches!(s.sem, Sem::V32(_) | Sem::Vopd32(_) | Sem::C32(_) | Sem::VMem(_) | Sem::VW(_) | Sem::WmmaLanes(_))
        }));
        for _ in 0..4 {
            let mut w0 = wave::<N>(&mut r);
            let (m0, l0) =
                if mem { addressed::<N>(&mut r, &mut w0) } else { (Buf { base: 0, bytes: Vec::new() }, vec![0; 256]) };
            let (mut a, mut b) = (w0.clone(), w0.clone());
            let (mut ma, mut mb, mut la, mut lb) = (m0.clone(), m0, l0.clone(), l0);
            let ra = run::<N>(&fast, &mut a, &mut ma, &mut la);
            let rb = run::<N>(&slow, &mut b, &mut mb, &mut lb);
            assert_eq!(ra, rb, "{} ({:#x?}): result or counts", Text(&i), &code);
            if let Some(d) = differ(&a, &b, N, nans) {
                let regs: Vec<String> = (0..8).map(|r| format!("v{r} {:#x?}", &w0.v[r * N..r * N + N])).collect();
                panic!(
                    "{} ({:#x?}), wave{N}: lane paths against per-lane: {d}\nbefore: exec {:#x}:{:#x} vcc {:#x} scc {}\n{}",
                    Text(&i),
                    &code,
                    w0.s[127],
                    w0.s[126],
                    w0.s[106],
                    w0.scc,
                    regs.join("\n")
                );
            }
            assert!(ma == mb, "{} ({:#x?}), wave{N}: memory differs", Text(&i), &code);
            assert!(la == lb, "{} ({:#x?}), wave{N}: LDS differs", Text(&i), &code);
            ran += 1;
        }
    }
    (ran, lanes)
}

/// Without NaN operands, bit for bit; with them, any NaN where two NaNs meet.
#[test]
fn lane_paths_compute_what_the_per_lane_paths_compute_wave32() {
    let (ran, lanes) = differential::<32>(0x5eed_0001, false, 30_000, valu_inst, false);
    assert!(ran > 30_000 && 2 * lanes > ran / 4, "{ran} states ran, {lanes} programs on the lane paths");
    let (ran, lanes) = differential::<32>(0x5eed_0011, true, 30_000, valu_inst, false);
    assert!(ran > 30_000 && 2 * lanes > ran / 4, "{ran} states ran, {lanes} programs on the lane paths");
}

#[test]
fn lane_paths_compute_what_the_per_lane_paths_compute_wave64() {
    let (ran, lanes) = differential::<64>(0x5eed_0002, false, 15_000, valu_inst, false);
    assert!(ran > 15_000 && 2 * lanes > ran / 4, "{ran} states ran, {lanes} programs on the lane paths");
    let (ran, lanes) = differential::<64>(0x5eed_0012, true, 15_000, valu_inst, false);
    assert!(ran > 15_000 && 2 * lanes > ran / 4, "{ran} states ran, {lanes} programs on the lane paths");
}

/// Packed math, fma_mix and WMMA (each of its dot products the same chain of fmas).
#[test]
fn lane_paths_run_vop3p_as_the_per_lane_paths_do() {
    let (ran, lanes) = differential::<32>(0x5eed_0301, false, 20_000, vop3p_inst, false);
    assert!(ran > 20_000 && lanes > 100, "{ran} states ran, {lanes} WMMA programs");
    let (ran, lanes) = differential::<32>(0x5eed_0302, true, 20_000, vop3p_inst, false);
    assert!(ran > 20_000 && lanes > 100, "{ran} states ran, {lanes} WMMA programs");
}

/// Loads and stores of every width and extension, in every space, over addresses in and out of
/// memory: the same registers, memory, LDS and scratch, the same fault at the same lane.
#[test]
fn lane_paths_access_memory_as_the_per_lane_paths_do() {
    for seed in 0..2 {
        let (ran, lanes) = differential::<32>(0x5eed_0100 + seed, true, 20_000, mem_inst, true);
        assert!(ran > 20_000 && 2 * lanes > ran / 4, "{ran} states ran, {lanes} programs on the lane paths");
        let (ran, lanes) = differential::<64>(0x5eed_0200 + seed, true, 10_000, mem_inst, true);
        assert!(ran > 10_000 && 2 * lanes > ran / 4, "{ran} states ran, {lanes} programs on the lane paths");
    }
}

/// Near the halfway points of f32: `a·b + c` whose exact value is within a few f64 ulps of a
/// point between two f32, in every binade from the subnormals up, and overflow.
fn hard_fma(r: &mut Rng) -> (f32, f32, f32) {
    let e = r.below(60) as i32 - 30;
    // CAST: random 24-bit significands.
    let a = f32::from_bits(0x3f80_0000 | (r.next() as u32 & 0x7f_ffff)) * libm::exp2f(e as f32);
    let scale = match r.below(4) {
        0 => -140.0,
        1 => -100.0,
        2 => 100.0,
        _ => 0.0,
    };
    let b = f32::from_bits(0x3f80_0000 | (r.next() as u32 & 0x7f_ffff)) * libm::exp2f(scale - e as f32);
    let p = f64::from(a) * f64::from(b);
    let q = p as f32;
    let ulp = f64::from(f32::from_bits(q.to_bits() + 1)) - f64::from(q);
    let mid = f64::from(q) + ulp / 2.0;
    let c = (mid - p) as f32;
    let c = match r.below(3) {
        0 => c,
        1 => f32::from_bits(c.to_bits().wrapping_add(1)),
        _ => f32::from_bits(c.to_bits().wrapping_sub(1)),
    };
    let sign = |x: f32| if r_sign(x) { -x } else { x };
    (a, sign(b), c)
}

fn r_sign(x: f32) -> bool {
    x.to_bits() & 1 == 1
}

#[test]
fn the_wide_fma_rounds_as_libm_does() {
    let mut r = Rng(0x5eed_0003, true);
    let (mut fallback, mut exact) = (0, 0);
    // A finite half (WMMA's operands).
    let half = |r: &mut Rng| {
        // CAST: random bits of a half, its exponent below 31.
        let h = r.next() as u16;
        fp::h2f(if h & 0x7c00 == 0x7c00 { h & 0xbfff } else { h })
    };
    for k in 0..1_200_000 {
        let (a, b, c) = match k % 3 {
            0 => hard_fma(&mut r),
            1 => (f32::from_bits(value(&mut r)), f32::from_bits(value(&mut r)), f32::from_bits(value(&mut r))),
            // A product of halves onto a sum of a few.
            _ => {
                let mut c = 0f32;
                for _ in 0..r.below(6) {
                    c = libm::fmaf(half(&mut r), half(&mut r), c);
                }
                (half(&mut r), half(&mut r), c)
            }
        };
        let want = libm::fmaf(a, b, c);
        let (w, ok) = valu::fma_wide(a, b, c);
        fallback += usize::from(!ok);
        if ok {
            assert_eq!(w.to_bits(), want.to_bits(), "fma({a:e}, {b:e}, {c:e}) = {want:e}, wide {w:e}");
        }
        let (w, ok_exact) = valu::fma_wide_exact(a, b, c);
        exact += usize::from(ok_exact && !ok);
        if ok_exact {
            assert_eq!(w.to_bits(), want.to_bits(), "fma({a:e}, {b:e}, {c:e}) = {want:e}, wide (exact) {w:e}");
        }
        assert_eq!(valu::fmaf(a, b, c).to_bits(), want.to_bits());
    }
    // The halfway and subnormal cases are there, and most lanes still take the wide path; exact
    // halfway sums (of halves) are there.
    assert!(fallback > 1000 && fallback < 500_000, "{fallback} fallbacks");
    assert!(exact > 1000, "{exact} exact halfway sums");
}
