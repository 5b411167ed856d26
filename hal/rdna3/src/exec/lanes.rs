//! The lane-array paths of the VALU: an instruction whose sources and result are all 32 bits
//! wide (VOP1, VOP2, VOP3, both halves of a VOPD, a VOPC/VOP3 compare) is resolved at load into
//! a [`V32`] or [`C32`] — its operands named once (a VGPR, an SGPR, a constant), its modifiers
//! as sign-bit masks — and executed a whole wave at a time: each source read into an array of
//! `N` lanes, the lane function run over the arrays (one loop per op, which the compiler
//! vectorizes), the result written to the lanes EXEC enables.
//!
//! Every lane function is [`valu::eval`] or [`valu::cmp`] itself (inlined with the op fixed), so
//! the results are those of the per-lane path (`Cx::valu`, `Cx::vcmp`, `Cx::vopd`, which still
//! run what this does not take: 16- and 64-bit operands). Lanes EXEC disables are computed too
//! (no lane function panics or has an effect) but never written, and never set a bit of a
//! carry-out or compare mask. The differential tests below run both paths on random
//! instructions and states.

use super::valu::{self, Cond, L, Sig, T};
use super::{Mods, Wave, inline_const, post};
use crate::decode::{Encoding, Inst};

/// A 32-bit source, resolved at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Src {
    /// VGPR `n`.
    V(u8),
    /// SGPR `n` (< 128; `null` reads as the constant 0).
    S(u8),
    /// A constant: inline, literal or 0.
    K(u32),
    /// `vccz`.
    Vccz,
    /// `execz`.
    Execz,
    /// `scc`.
    Scc,
}

impl Src {
    /// Source field `code` read as type `t` (32 bits wide), `lit` the instruction's literal.
    pub(super) fn of(code: u32, t: T, lit: Option<u32>) -> Src {
        match code {
            // CAST: a VGPR index < 256.
            256..=511 => Src::V((code - 256) as u8),
            124 => Src::K(0),
            // CAST: an SGPR index < 128.
            0..=127 => Src::S(code as u8),
            251 => Src::Vccz,
            252 => Src::Execz,
            253 => Src::Scc,
            255 => Src::K(lit.unwrap_or(0)),
            // CAST: the constant's low 32 bits (its type is 32 bits wide).
            c => Src::K(inline_const(c, t).unwrap_or(0) as u32),
        }
    }
}

/// A VALU op on 32-bit operands, resolved.
#[derive(Clone, Copy, Debug)]
pub(super) struct V32 {
    pub l: L,
    /// Destination VGPR.
    pub dst: u8,
    /// The result's type (for clamp and omod).
    pub dst_t: T,
    /// The sources (those the op does not read: `Src::K(0)`).
    pub src: [Src; 3],
    /// Per source: the sign bit where `abs` clears it, else 0.
    pub abs: [u32; 3],
    /// Per source: the sign bit where `neg` flips it, else 0.
    pub neg: [u32; 3],
    /// Clamp or omod: the result goes through `post`.
    pub post: bool,
    pub clamp: bool,
    pub omod: u32,
    /// The SGPR code of the mask source (cndmask's selector, a carry-in).
    pub mask_in: Option<u32>,
    /// The SGPR code of the carry-out mask.
    pub mask_out: Option<u32>,
}

fn all32(ts: &[T]) -> bool {
    ts.iter().all(|t| t.bits() == 32)
}

/// The sign bit, where the modifier applies (float sources only).
fn sign(on: bool, t: T) -> u32 {
    if on && t.float() { 0x8000_0000 } else { 0 }
}

/// A VOP1/VOP2/VOP3 instruction of signature `g` as a [`V32`] (its fields as `Cx::valu` reads
/// them), or `None` when an operand is not 32 bits wide.
pub(super) fn v32(i: &Inst, g: Sig, m: Mods) -> Option<V32> {
    let n = usize::from(g.n) + usize::from(g.acc);
    let mut src_t = g.src;
    if g.acc {
        src_t[2] = g.dst;
    }
    if n > 3 || g.dst.bits() != 32 || !all32(&src_t[..n]) {
        return None;
    }
    let (w0, w1) = (i.words[0], i.words[1]);
    let (dst, mut srcs, mask_in, mask_out) = match i.enc {
        Encoding::Vop1 => ((w0 >> 17) & 0xff, [w0 & 0x1ff, 0, 0], 106, 106),
        Encoding::Vop2 => ((w0 >> 17) & 0xff, [w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff), 0], 106, 106),
        Encoding::Vop3 => {
            (w0 & 0xff, [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff], (w1 >> 18) & 0x1ff, (w0 >> 8) & 0x7f)
        }
        _ => return None,
    };
    if g.acc {
        srcs[2] = 256 + dst;
    }
    if matches!(g.l, L::FmaakF32 | L::FmamkF32 | L::FmaakF16 | L::FmamkF16) {
        srcs[2] = 255;
    }
    let mut src = [Src::K(0); 3];
    let (mut abs, mut neg) = ([0; 3], [0; 3]);
    for k in 0..n {
        src[k] = Src::of(srcs[k], src_t[k], i.literal);
        abs[k] = sign(m.abs[k], src_t[k]);
        neg[k] = sign(m.neg[k], src_t[k]);
    }
    Some(V32 {
        l: g.l,
        // CAST: an 8-bit field.
        dst: dst as u8,
        dst_t: g.dst,
        src,
        abs,
        neg,
        post: m.clamp || m.omod != 0,
        clamp: m.clamp,
        omod: m.omod,
        mask_in: g.mask_in.then_some(if valu::mask_in_vcc(g.l) { 106 } else { mask_in }),
        mask_out: g.mask_out.then_some(mask_out),
    })
}

/// Both halves of a VOPD instruction (X, Y) as `Cx::vopd` reads them, or `None` when an
/// operand is not 32 bits wide.
pub(super) fn vopd32(i: &Inst, x: Sig, y: Sig) -> Option<[V32; 2]> {
    let (w0, w1) = (i.words[0], i.words[1]);
    let dx = w1 >> 24;
    let dy = (((w1 >> 17) & 0x7f) << 1) | ((dx & 1) ^ 1);
    let half = |g: Sig, d: u32, s: [u32; 2]| -> Option<V32> {
        let n = usize::from(g.n).min(2);
        if g.dst.bits() != 32 || !all32(&g.src[..n]) {
            return None;
        }
        let mut src = [Src::K(0); 3];
        src[0] = Src::of(s[0], g.src[0], i.literal);
        if g.n >= 2 {
            src[1] = Src::of(s[1], g.src[1], i.literal);
        }
        src[2] = if g.acc {
            // CAST: an 8-bit register number.
            Src::V(d as u8)
        } else if matches!(g.l, L::FmaakF32 | L::FmamkF32) {
            Src::K(i.literal.unwrap_or(0))
        } else {
            Src::K(0)
        };
        Some(V32 {
            l: g.l,
            // CAST: an 8-bit register number.
            dst: d as u8,
            dst_t: g.dst,
            src,
            abs: [0; 3],
            neg: [0; 3],
            post: false,
            clamp: false,
            omod: 0,
            mask_in: g.mask_in.then_some(106),
            mask_out: None,
        })
    };
    let hx = half(x, dx, [w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff)])?;
    let hy = half(y, dy, [w1 & 0x1ff, 256 + ((w1 >> 9) & 0xff)])?;
    Some([hx, hy])
}

/// A compare of 32-bit operands, resolved.
#[derive(Clone, Copy, Debug)]
pub(super) struct C32 {
    pub cond: Cond,
    pub t: T,
    pub signed: bool,
    pub src: [Src; 2],
    pub abs: [u32; 2],
    pub neg: [u32; 2],
    /// The mask written: EXEC for v_cmpx, else VCC or VOP3's SGPR.
    pub dst: u32,
}

/// A VOPC/VOP3 compare as `Cx::vcmp` reads it, or `None` when an operand is not 32 bits wide.
pub(super) fn c32(i: &Inst, cond: Cond, t: T, signed: bool, x: bool, m: Mods) -> Option<C32> {
    let (w0, w1) = (i.words[0], i.words[1]);
    let (sd, a, b) = match i.enc {
        Encoding::Vopc => (106, w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff)),
        Encoding::Vop3 => (w0 & 0xff, w1 & 0x1ff, (w1 >> 9) & 0x1ff),
        _ => return None,
    };
    let bt = if cond == Cond::Class { T::B32 } else { t };
    if t.bits() != 32 || bt.bits() != 32 {
        return None;
    }
    Some(C32 {
        cond,
        t,
        signed,
        src: [Src::of(a, t, i.literal), Src::of(b, bt, i.literal)],
        abs: [sign(m.abs[0], t), sign(m.abs[1], bt)],
        neg: [sign(m.neg[0], t), sign(m.neg[1], bt)],
        dst: if x { 126 } else { sd },
    })
}

/// All lanes of a wave of `N`.
#[inline(always)]
pub(super) const fn full<const N: usize>() -> u64 {
    if N >= 64 { u64::MAX } else { (1u64 << N) - 1 }
}

/// VGPR `r` of a wave of `N` lanes.
#[inline(always)]
pub(super) fn vreg<const N: usize>(w: &Wave, r: u8) -> &[u32; N] {
    let b = usize::from(r) * N;
    // PANIC: a wave of N lanes has 256 × N VGPRs (`Wave::new`), r < 256; the slice is N long.
    (&w.v[b..b + N]).try_into().expect("a VGPR of N lanes")
}

#[inline(always)]
pub(super) fn vreg_mut<const N: usize>(w: &mut Wave, r: u8) -> &mut [u32; N] {
    w.hi = w.hi.max(usize::from(r) + 1);
    let b = usize::from(r) * N;
    // PANIC: as in `vreg`.
    (&mut w.v[b..b + N]).try_into().expect("a VGPR of N lanes")
}

/// Source `s` of every lane, with its abs and neg masks.
#[inline(always)]
fn fetch<const N: usize>(w: &Wave, s: Src, abs: u32, neg: u32) -> [u32; N] {
    let k = match s {
        Src::V(r) => {
            let mut x = *vreg::<N>(w, r);
            if abs | neg != 0 {
                for x in x.iter_mut() {
                    *x = (*x & !abs) ^ neg;
                }
            }
            return x;
        }
        Src::S(r) => w.s[usize::from(r) & 0x7f],
        Src::K(x) => x,
        Src::Vccz => u32::from(w.mask(106) == 0),
        Src::Execz => u32::from(w.exec() == 0),
        Src::Scc => u32::from(w.scc),
    };
    [(k & !abs) ^ neg; N]
}

/// Source `$k` of `$op` as an array reference: the VGPR itself when no modifier applies, else
/// `$tmp` filled (a deferred `let`, so nothing is zeroed first).
macro_rules! operand {
    ($w:expr, $op:expr, $k:expr, $tmp:ident) => {
        match $op.src[$k] {
            Src::V(r) if $op.abs[$k] | $op.neg[$k] == 0 => vreg::<N>($w, r),
            s => {
                $tmp = fetch::<N>($w, s, $op.abs[$k], $op.neg[$k]);
                &$tmp
            }
        }
    };
}

/// Bit `k` of a 32-lane mask, per lane: tests of a mask against these (and not shifts by the
/// lane number) are what the compiler vectorizes.
const BIT: [u32; 32] = {
    let mut b = [0; 32];
    let mut k = 0;
    while k < 32 {
        b[k] = 1 << k;
        k += 1;
    }
    b
};

/// Lane `l`'s bit of `mask`, as all ones or zero.
#[inline(always)]
fn lane_mask(mask: u64, l: usize) -> u32 {
    // CAST: the 32 bits of the half holding lane l.
    let half = (mask >> (l & 32)) as u32;
    0u32.wrapping_sub(u32::from(half & BIT[l % 32] != 0))
}

/// Write `x` into VGPR `r` of the lanes `exec` enables.
#[inline(always)]
pub(super) fn write<const N: usize>(w: &mut Wave, r: u8, exec: u64, x: &[u32; N]) {
    let d = vreg_mut::<N>(w, r);
    let exec = exec & full::<N>();
    if exec == full::<N>() {
        *d = *x;
        return;
    }
    for l in 0..N {
        let m = lane_mask(exec, l);
        d[l] = (x[l] & m) | (d[l] & !m);
    }
}

/// [`valu::eval`] of op `l` on 32-bit lanes (no mask bit, no carry).
#[inline(always)]
fn ev(l: L, x: u32, y: u32, z: u32) -> u32 {
    // CAST: a 32-bit result.
    valu::eval(l, x.into(), y.into(), z.into(), false).0 as u32
}

#[inline(always)]
fn map<const N: usize>(r: &mut [u32; N], a: &[u32; N], b: &[u32; N], c: &[u32; N], f: impl Fn(u32, u32, u32) -> u32) {
    for l in 0..N {
        r[l] = f(a[l], b[l], c[l]);
    }
}

/// `fmaf(a, b, c)` on every lane ([`valu::fmaf`]: the wide path, then libm's for the lanes it
/// cannot round).
#[inline(always)]
fn fma_lanes<const N: usize>(r: &mut [u32; N], a: &[u32; N], b: &[u32; N], c: &[u32; N]) {
    let mut hard = false;
    for l in 0..N {
        let (x, ok) = valu::fma_wide(f32::from_bits(a[l]), f32::from_bits(b[l]), f32::from_bits(c[l]));
        r[l] = x.to_bits();
        hard |= !ok;
    }
    if hard {
        for l in 0..N {
            r[l] = valu::fmaf(f32::from_bits(a[l]), f32::from_bits(b[l]), f32::from_bits(c[l])).to_bits();
        }
    }
}

/// A lane function with a carry-out over the source arrays into `r` (its mask bit of `min`):
/// the carry-out of every lane.
#[inline(always)]
fn carries<const N: usize>(
    r: &mut [u32; N],
    a: &[u32; N],
    b: &[u32; N],
    c: &[u32; N],
    min: u64,
    f: impl Fn(u64, u64, u64, bool) -> (u64, bool),
) -> u64 {
    let mut co = 0u64;
    for h in 0..N.div_ceil(32) {
        let mut half = 0u32;
        for k in 0..32.min(N) {
            let l = 32 * h + k;
            let (x, o) = f(a[l].into(), b[l].into(), c[l].into(), lane_mask(min, l) != 0);
            // CAST: a 32-bit result.
            r[l] = x as u32;
            half |= if o { BIT[k] } else { 0 };
        }
        co |= u64::from(half) << (32 * h);
    }
    co
}

/// Lane function `l` over the source arrays into `r`; the carry-out of every lane.
#[inline(always)]
fn compute<const N: usize>(l: L, a: &[u32; N], b: &[u32; N], c: &[u32; N], min: u64, r: &mut [u32; N]) -> u64 {
    macro_rules! plain {
        ($($v:ident),* $(,)?) => {
            match l {
                $(L::$v => {
                    map(r, a, b, c, |x, y, z| ev(L::$v, x, y, z));
                    return 0;
                })*
                _ => {}
            }
        };
    }
    plain!(
        Mov,
        AddF32,
        SubF32,
        SubrevF32,
        MulF32,
        MulDx9F32,
        MaxF32,
        MinF32,
        Max3F32,
        Min3F32,
        Med3F32,
        LdexpF32,
        ExpF32,
        LogF32,
        RcpF32,
        RsqF32,
        SqrtF32,
        FloorF32,
        CeilF32,
        TruncF32,
        RndneF32,
        FractF32,
        CvtF32I32,
        CvtF32U32,
        CvtI32F32,
        CvtU32F32,
        AddU32,
        SubU32,
        SubrevU32,
        MulLoU32,
        MulHiU32,
        MulHiI32,
        MulU32U24,
        MulI32I24,
        MulHiU32U24,
        MulHiI32I24,
        MadU32U24,
        MadI32I24,
        LshlB32,
        LshrB32,
        AshrI32,
        LshlAdd,
        AddLshl,
        LshlOr,
        AndOr,
        Or3,
        Xor3,
        Add3,
        Xad,
        And,
        Or,
        Xor,
        Xnor,
        Not,
        Bfrev,
        Bcnt,
        BfeU32,
        BfeI32,
        Bfi,
        Bfm,
        Alignbit,
        Alignbyte,
        MaxI32,
        MinI32,
        MaxU32,
        MinU32,
        Max3I32,
        Min3I32,
        Max3U32,
        Min3U32,
        Med3I32,
        Med3U32,
    );
    match l {
        L::FmaF32 | L::FmaakF32 => fma_lanes(r, a, b, c),
        L::FmamkF32 => fma_lanes(r, a, c, b),
        L::FmaDx9F32 => {
            fma_lanes(r, a, b, c);
            for k in 0..N {
                if f32::from_bits(a[k]) == 0.0 || f32::from_bits(b[k]) == 0.0 {
                    r[k] = c[k];
                }
            }
        }
        L::Cndmask => {
            for k in 0..N {
                let m = lane_mask(min, k);
                r[k] = (b[k] & m) | (a[k] & !m);
            }
        }
        L::AddCo | L::SubCo | L::SubrevCo | L::AddCoCi | L::SubCoCi | L::SubrevCoCi => {
            macro_rules! carry {
                ($($v:ident),*) => {
                    match l {
                        $(L::$v => return carries(r, a, b, c, min, |x, y, z, m| valu::eval(L::$v, x, y, z, m)),)*
                        _ => {}
                    }
                };
            }
            carry!(AddCo, SubCo, SubrevCo, AddCoCi, SubCoCi, SubrevCoCi);
        }
        _ => {
            // Everything else: the lane function as it is.
            let mut co = 0u64;
            for k in 0..N {
                let (x, o) = valu::eval(l, a[k].into(), b[k].into(), c[k].into(), min >> k & 1 == 1);
                // CAST: a 32-bit result.
                r[k] = x as u32;
                co |= u64::from(o) << k;
            }
            return co;
        }
    }
    0
}

/// `op` on every lane of `w` into `r`; the carry-out mask (every lane's).
#[inline(always)]
pub(super) fn eval_v32<const N: usize>(w: &Wave, op: &V32, r: &mut [u32; N]) -> u64 {
    // Sources past `n` are `Src::K(0)`.
    let (t0, t1, t2);
    let a = operand!(w, op, 0, t0);
    let b = operand!(w, op, 1, t1);
    let c = operand!(w, op, 2, t2);
    let min = op.mask_in.map_or(0, |c| w.mask(c));
    let co = compute::<N>(op.l, a, b, c, min, r);
    if op.post {
        for x in r.iter_mut() {
            // CAST: a 32-bit result.
            *x = post(u64::from(*x), op.dst_t, op.clamp, op.omod) as u32;
        }
    }
    co
}

/// One bit per lane: `f` of its two sources.
#[inline(always)]
fn bits<const N: usize>(a: &[u32; N], b: &[u32; N], f: impl Fn(u32, u32) -> bool) -> u64 {
    let mut r = 0u64;
    for h in 0..N.div_ceil(32) {
        let mut half = 0u32;
        for k in 0..32.min(N) {
            let l = 32 * h + k;
            half |= if f(a[l], b[l]) { BIT[k] } else { 0 };
        }
        r |= u64::from(half) << (32 * h);
    }
    r
}

/// The compare's bit of every lane (EXEC not applied).
#[inline(always)]
pub(super) fn eval_c32<const N: usize>(w: &Wave, op: &C32) -> u64 {
    let (t0, t1);
    let a = operand!(w, op, 0, t0);
    let b = operand!(w, op, 1, t1);
    macro_rules! spec {
        ($(($c:ident, $t:ident, $s:literal)),* $(,)?) => {
            match (op.cond, op.t, op.signed) {
                $((Cond::$c, T::$t, $s) => {
                    return bits(a, b, |x, y| valu::cmp(Cond::$c, T::$t, $s, x.into(), y.into()));
                })*
                _ => {}
            }
        };
    }
    spec!(
        (Lt, F32, false),
        (Le, F32, false),
        (Gt, F32, false),
        (Ge, F32, false),
        (Eq, F32, false),
        (Lg, F32, false),
        (Neq, F32, false),
        (Nlt, F32, false),
        (Nle, F32, false),
        (Ngt, F32, false),
        (Nge, F32, false),
        (U, F32, false),
        (O, F32, false),
        (Lt, B32, false),
        (Le, B32, false),
        (Gt, B32, false),
        (Ge, B32, false),
        (Eq, B32, false),
        (Ne, B32, false),
        (Lt, B32, true),
        (Le, B32, true),
        (Gt, B32, true),
        (Ge, B32, true),
        (Eq, B32, true),
        (Ne, B32, true),
    );
    let (c, t, s) = (op.cond, op.t, op.signed);
    bits(a, b, |x, y| valu::cmp(c, t, s, x.into(), y.into()))
}

/// A source of a [`VW`] op, resolved (`K`: the constant as the source's type reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SrcW {
    /// VGPR `n` (and `n + 1` for a 64-bit source).
    V(u8),
    /// SGPR `n` (and `n + 1`).
    S(u8),
    K(u64),
    Vccz,
    Execz,
    Scc,
}

/// A VALU op with 64-bit operands (and 32-bit ones; none of 16 bits), resolved: lanes of u64.
#[derive(Clone, Copy, Debug)]
pub(super) struct VW {
    pub l: L,
    pub dst: u8,
    pub dst_t: T,
    pub src: [SrcW; 3],
    /// The sources' types (for their width).
    pub t: [T; 3],
    /// Per source: its sign bit where `abs` clears it, else 0.
    pub abs: [u64; 3],
    /// Per source: its sign bit where `neg` flips it, else 0.
    pub neg: [u64; 3],
    pub post: bool,
    pub clamp: bool,
    pub omod: u32,
    pub mask_in: Option<u32>,
    pub mask_out: Option<u32>,
}

fn src_w(code: u32, t: T, lit: Option<u32>) -> SrcW {
    let mask = if t.bits() == 64 { u64::MAX } else { 0xffff_ffff };
    match code {
        // CAST: a VGPR index < 256.
        256..=511 => SrcW::V((code - 256) as u8),
        124 => SrcW::K(0),
        // CAST: an SGPR index < 128.
        0..=127 => SrcW::S(code as u8),
        251 => SrcW::Vccz,
        252 => SrcW::Execz,
        253 => SrcW::Scc,
        255 => {
            let l = u64::from(lit.unwrap_or(0));
            SrcW::K(if t == T::F64 { l << 32 } else { l } & mask)
        }
        c => SrcW::K(inline_const(c, t).unwrap_or(0) & mask),
    }
}

/// A VOP1/VOP2/VOP3 instruction of signature `g` with a 64-bit operand and none of 16 bits as a
/// [`VW`] (its fields as `Cx::valu` reads them), else `None`.
pub(super) fn vw(i: &Inst, g: Sig, m: Mods) -> Option<VW> {
    let n = usize::from(g.n) + usize::from(g.acc);
    let mut src_t = g.src;
    if g.acc {
        src_t[2] = g.dst;
    }
    let ts = &src_t[..n.min(3)];
    if n > 3 || g.dst.bits() == 16 || ts.iter().any(|t| t.bits() == 16) {
        return None;
    }
    if g.dst.bits() != 64 && ts.iter().all(|t| t.bits() != 64) {
        return None;
    }
    let (w0, w1) = (i.words[0], i.words[1]);
    let (dst, mut srcs, mask_in, mask_out) = match i.enc {
        Encoding::Vop1 => ((w0 >> 17) & 0xff, [w0 & 0x1ff, 0, 0], 106, 106),
        Encoding::Vop2 => ((w0 >> 17) & 0xff, [w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff), 0], 106, 106),
        Encoding::Vop3 => {
            (w0 & 0xff, [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff], (w1 >> 18) & 0x1ff, (w0 >> 8) & 0x7f)
        }
        _ => return None,
    };
    if g.acc {
        srcs[2] = 256 + dst;
    }
    if matches!(g.l, L::FmaakF32 | L::FmamkF32 | L::FmaakF16 | L::FmamkF16) {
        srcs[2] = 255;
    }
    let mut src = [SrcW::K(0); 3];
    let mut t = [T::B32; 3];
    let (mut abs, mut neg) = ([0u64; 3], [0u64; 3]);
    for k in 0..n {
        src[k] = src_w(srcs[k], src_t[k], i.literal);
        t[k] = src_t[k];
        let sign = if src_t[k].float() { 1u64 << (src_t[k].bits() - 1) } else { 0 };
        abs[k] = if m.abs[k] { sign } else { 0 };
        neg[k] = if m.neg[k] { sign } else { 0 };
    }
    Some(VW {
        l: g.l,
        // CAST: an 8-bit field.
        dst: dst as u8,
        dst_t: g.dst,
        src,
        t,
        abs,
        neg,
        post: m.clamp || m.omod != 0,
        clamp: m.clamp,
        omod: m.omod,
        mask_in: g.mask_in.then_some(if valu::mask_in_vcc(g.l) { 106 } else { mask_in }),
        mask_out: g.mask_out.then_some(mask_out),
    })
}

/// Source `s` of type `t` of every lane, with its modifiers.
#[inline(always)]
fn fetch_w<const N: usize>(w: &Wave, s: SrcW, t: T, abs: u64, neg: u64) -> [u64; N] {
    let wide = t.bits() == 64;
    let mut x: [u64; N] = match s {
        SrcW::V(r) => {
            let lo = vreg::<N>(w, r);
            if wide {
                let hi = vreg::<N>(w, r.wrapping_add(1));
                core::array::from_fn(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32)
            } else {
                core::array::from_fn(|l| u64::from(lo[l]))
            }
        }
        SrcW::S(r) => {
            let lo = u64::from(w.s[usize::from(r) & 0x7f]);
            [if wide { lo | u64::from(w.s[(usize::from(r) + 1) & 0x7f]) << 32 } else { lo }; N]
        }
        SrcW::K(k) => [k; N],
        SrcW::Vccz => [u64::from(w.mask(106) == 0); N],
        SrcW::Execz => [u64::from(w.exec() == 0); N],
        SrcW::Scc => [u64::from(w.scc); N],
    };
    if abs | neg != 0 {
        for v in x.iter_mut() {
            *v = (*v & !abs) ^ neg;
        }
    }
    x
}

/// `op` on every lane into `r` (the result's bits: 32 or 64); the carry-out of every lane.
#[inline(always)]
pub(super) fn eval_vw<const N: usize>(w: &Wave, op: &VW, r: &mut [u64; N]) -> u64 {
    let a = fetch_w::<N>(w, op.src[0], op.t[0], op.abs[0], op.neg[0]);
    let b = fetch_w::<N>(w, op.src[1], op.t[1], op.abs[1], op.neg[1]);
    let c = fetch_w::<N>(w, op.src[2], op.t[2], op.abs[2], op.neg[2]);
    let min = op.mask_in.map_or(0, |c| w.mask(c));
    let mut co = 0u64;
    macro_rules! spec {
        ($($v:ident),* $(,)?) => {
            match op.l {
                $(L::$v => {
                    for k in 0..N {
                        let (x, o) = valu::eval(L::$v, a[k], b[k], c[k], min >> k & 1 == 1);
                        r[k] = x;
                        co |= u64::from(o) << k;
                    }
                })*
                l => {
                    for k in 0..N {
                        let (x, o) = valu::eval(l, a[k], b[k], c[k], min >> k & 1 == 1);
                        r[k] = x;
                        co |= u64::from(o) << k;
                    }
                }
            }
        };
    }
    spec!(LshlB64, LshrB64, AshrI64, MadU64U32, MadI64I32, AddF64, MulF64, FmaF64, CvtF64F32, CvtF32F64, CvtF64I32);
    if op.post {
        for x in r.iter_mut() {
            *x = post(*x, op.dst_t, op.clamp, op.omod);
        }
    }
    co
}
