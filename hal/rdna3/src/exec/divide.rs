//! The division helpers of the VALU (`v_div_scale`, `v_div_fmas`, `v_div_fixup`), on the raw
//! bits of binary16/32/64, and the exact arithmetic they rest on: an fma rounded once after a
//! power-of-two scale (`v_div_fmas`' "FMA with fused scale") and `ldexp`, both on integer
//! significands, so that a result in the subnormal range is rounded once, as the hardware
//! rounds it.
//!
//! The pseudo-code is the RDNA3 ISA guide's (Feb 2023, ch. 16.12: V_DIV_SCALE_F32/F64,
//! V_DIV_FMAS_F32/F64, V_DIV_FIXUP_F16/F32/F64). Three places of it cannot be what the hardware
//! does, because as printed LLVM's division sequence (`SITargetLowering::LowerFDIV32/64`: two
//! `v_div_scale`, `v_rcp`, Newton–Raphson fmas, `v_div_fmas`, `v_div_fixup`) would not divide;
//! each is marked where it is read otherwise, and `tests/fdiv.rs` runs the whole sequence
//! against correctly rounded division:
//! - `v_div_fmas` with VCC scales by 2^32 (f32) / 2^64 (f64), which undoes none of
//!   `v_div_scale`'s 2^±64 / 2^±128. Read, as tinygrad's RDNA3 emulator reads it: by 2^+64
//!   (2^+128) when the quotient (S2) is at least 2 — a denominator was scaled up — else by 2^-64
//!   (2^-128) — a numerator was.
//! - `v_div_scale`, when 1/S1 and S2/S1 are both subnormal, scales the denominator by 2^+64,
//!   which takes a denominator above 2^126 to infinity; read as 2^-64, as the case after it
//!   scales (the quotient then comes out 2^64 too large, as in the other cases that set VCC).
//! - `v_div_fixup`'s overflow case tests `exponent(S1) == 255`, never true there (an infinite or
//!   NaN S1 was taken before); read as the quotient's (S0's) exponent: a quotient the scaled
//!   steps overflowed (infinite, or a NaN out of ∞ − ∞) is the signed infinity.

/// A binary floating-point format: stored significand bits, exponent bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fmt {
    man: u32,
    exp: u32,
}

/// binary16.
pub const H: Fmt = Fmt { man: 10, exp: 5 };
/// binary32.
pub const S: Fmt = Fmt { man: 23, exp: 8 };
/// binary64.
pub const D: Fmt = Fmt { man: 52, exp: 11 };

impl Fmt {
    fn bias(self) -> i32 {
        (1 << (self.exp - 1)) - 1
    }
    /// The all-ones exponent field (infinities and NaNs).
    fn emax(self) -> u64 {
        (1 << self.exp) - 1
    }
    fn sign(self) -> u64 {
        1 << (self.man + self.exp)
    }
    fn bits(self) -> u64 {
        if self.man + self.exp == 63 { u64::MAX } else { (self.sign() << 1) - 1 }
    }
    /// The biased exponent field (`exponent()` of the guide's pseudo-code).
    fn field(self, x: u64) -> u64 {
        (x >> self.man) & self.emax()
    }
    fn frac(self, x: u64) -> u64 {
        x & ((1 << self.man) - 1)
    }
    fn neg(self, x: u64) -> bool {
        x & self.sign() != 0
    }
    fn is_nan(self, x: u64) -> bool {
        self.field(x) == self.emax() && self.frac(x) != 0
    }
    fn is_inf(self, x: u64) -> bool {
        self.field(x) == self.emax() && self.frac(x) == 0
    }
    fn is_zero(self, x: u64) -> bool {
        x & self.bits() & !self.sign() == 0
    }
    fn is_denorm(self, x: u64) -> bool {
        self.field(x) == 0 && self.frac(x) != 0
    }
    /// NaN made quiet (its payload kept).
    fn quiet(self, x: u64) -> u64 {
        (x | 1 << (self.man - 1)) & self.bits()
    }
    /// The default quiet NaN, with the sign bit as given (the guide's 0xffc00000 for 0/0).
    fn nan(self, neg: bool) -> u64 {
        self.emax() << self.man | 1 << (self.man - 1) | if neg { self.sign() } else { 0 }
    }
    fn inf(self, neg: bool) -> u64 {
        self.emax() << self.man | if neg { self.sign() } else { 0 }
    }
    fn zero(self, neg: bool) -> u64 {
        if neg { self.sign() } else { 0 }
    }
}

/// A value of a format, its significand an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Zero(bool),
    /// (−1)^s · m · 2^e, m > 0.
    Fin(bool, u64, i32),
    Inf(bool),
    Nan,
}

fn unpack(f: Fmt, x: u64) -> Num {
    let (s, e, m) = (f.neg(x), f.field(x), f.frac(x));
    // CAST: a biased exponent field of at most 11 bits.
    let e = e as i32;
    if e == f.emax() as i32 {
        if m != 0 { Num::Nan } else { Num::Inf(s) }
    } else if e == 0 {
        if m == 0 { Num::Zero(s) } else { Num::Fin(s, m, 1 - f.bias() - f.man as i32) }
    } else {
        Num::Fin(s, m | 1 << f.man, e - f.bias() - f.man as i32)
    }
}

/// The index of the highest set bit of `m` (> 0).
fn msb(m: u128) -> i32 {
    // CAST: at most 127.
    127 - m.leading_zeros() as i32
}

/// (−1)^neg · (m + δ) · 2^e rounded to nearest even in `f` (subnormals, overflow to infinity),
/// where δ is 0 without `sticky` and strictly between 0 and 1 with it. With `sticky`, `m` has at
/// least two bits below the result's last place (the callers' `m` reaches bit 120 or above).
fn round(f: Fmt, neg: bool, m: u128, e: i32, sticky: bool) -> u64 {
    if m == 0 {
        return f.zero(neg);
    }
    let top = msb(m).saturating_add(e);
    let emin = 1 - f.bias();
    // CAST: man ≤ 52.
    let man = f.man as i32;
    // The exponent of the result's last place, and how many bits of m lie below it.
    let mut lsb = top.max(emin) - man;
    let shift = i64::from(lsb) - i64::from(e);
    let mut q = if shift <= 0 {
        // Exact: m · 2^-shift has at most man + 1 bits.
        // CAST: 0 ≤ -shift ≤ man.
        m << (-shift) as u32
    } else if shift > 128 {
        // Below half the last place (m < 2^128 ≤ 2^(shift − 1)).
        0
    } else {
        // CAST: 1 ≤ shift ≤ 128.
        let sh = shift as u32;
        let (q, rem) = if sh == 128 { (0, m) } else { (m >> sh, m & ((1u128 << sh) - 1)) };
        let half = 1u128 << (sh - 1);
        let up = rem > half || (rem == half && (sticky || q & 1 == 1));
        q + u128::from(up)
    };
    if q >> (man + 1) != 0 {
        q >>= 1;
        lsb += 1;
    }
    let s = f.zero(neg);
    // CAST (both): q < 2^(man + 1) ≤ 2^53.
    if q >> man == 0 {
        // Subnormal (lsb is the subnormals' last place); 2^man would be the smallest normal, which
        // its bits already encode.
        return s | q as u64;
    }
    let biased = i64::from(lsb) + i64::from(man) + i64::from(f.bias());
    // CAST: checked against the field's range first.
    if biased >= f.emax() as i64 {
        return f.inf(neg);
    }
    s | (biased as u64) << f.man | (q as u64 & ((1 << f.man) - 1))
}

/// `a·b + c`, then × 2^`scale`, rounded once to nearest even in `f` (IEEE fma when `scale` is 0).
/// A NaN operand gives that NaN made quiet (the first of a, b, c), ∞·0 and ∞ − ∞ the default NaN.
pub fn fma_scaled(f: Fmt, a: u64, b: u64, c: u64, scale: i32) -> u64 {
    use Num::*;
    for x in [a, b, c] {
        if f.is_nan(x) {
            return f.quiet(x);
        }
    }
    let (x, y, z) = (unpack(f, a), unpack(f, b), unpack(f, c));
    let ps = f.neg(a) != f.neg(b);
    if matches!(x, Inf(_)) || matches!(y, Inf(_)) {
        if matches!(x, Zero(_)) || matches!(y, Zero(_)) {
            return f.nan(false);
        }
        return match z {
            Inf(zs) if zs != ps => f.nan(false),
            _ => f.inf(ps),
        };
    }
    let (xm, xe, ym, ye) = match (x, y) {
        (Fin(_, xm, xe), Fin(_, ym, ye)) => (xm, xe, ym, ye),
        // A zero product: c, or a signed zero (−0 only when both are −0).
        _ => {
            return match z {
                Inf(_) => c & f.bits(),
                Zero(zs) => f.zero(ps && zs),
                Fin(zs, zm, ze) => round(f, zs, u128::from(zm), ze.saturating_add(scale), false),
                Nan => f.nan(false),
            };
        }
    };
    let p = u128::from(xm) * u128::from(ym);
    let pe = xe + ye;
    let (zs, zm, ze) = match z {
        Inf(_) => return c & f.bits(),
        Zero(_) | Nan => return round(f, ps, p, pe.saturating_add(scale), false),
        Fin(zs, zm, ze) => (zs, u128::from(zm), ze),
    };
    // The term whose top bit is higher is X, placed with its top bit at bit 125; the other, Y,
    // at the same base, its bits below bit 0 gathered into a sticky bit.
    let ((sx, mx, ex), (sy, my, ey)) =
        if msb(p) + pe >= msb(zm) + ze { ((ps, p, pe), (zs, zm, ze)) } else { ((zs, zm, ze), (ps, p, pe)) };
    let sh = 125 - msb(mx);
    // CAST: 0 ≤ sh ≤ 125 (mx < 2^106).
    let xs = mx << sh as u32;
    let e0 = ex - sh;
    let d = ey - e0;
    let (ys, sticky) = if d >= 0 {
        // Y's top is at or below X's: at most bit 125.
        // CAST: 0 ≤ d ≤ 125.
        (my << d as u32, false)
    } else if d <= -128 {
        (0, true)
    } else {
        // CAST: 1 ≤ -d ≤ 127.
        let r = (-d) as u32;
        (my >> r, my & ((1u128 << r) - 1) != 0)
    };
    let e = e0.saturating_add(scale);
    if sx == sy {
        return round(f, sx, xs + ys, e, sticky);
    }
    if sticky {
        // Y has bits below X's last place, so Y < X / 2^18: X − Y = (xs − ys − 1) + (1 − δ).
        return round(f, sx, xs - ys - 1, e, true);
    }
    match xs.cmp(&ys) {
        core::cmp::Ordering::Greater => round(f, sx, xs - ys, e, false),
        core::cmp::Ordering::Less => round(f, sy, ys - xs, e, false),
        // Exact cancellation: +0 when rounding to nearest.
        core::cmp::Ordering::Equal => f.zero(false),
    }
}

/// `ldexp(x, k)`: x · 2^k rounded once (NaN, infinities and zeros as they are).
pub fn ldexp(f: Fmt, x: u64, k: i32) -> u64 {
    match unpack(f, x) {
        Num::Fin(s, m, e) => round(f, s, u128::from(m), e.saturating_add(k), false),
        _ => x & f.bits(),
    }
}

/// |a| < |b| · 2^k, exactly (finite a, b; a zero a is below any finite non-zero b).
fn below_scaled(f: Fmt, a: u64, b: u64, k: i32) -> bool {
    match (unpack(f, a), unpack(f, b)) {
        (Num::Fin(_, ma, ea), Num::Fin(_, mb, eb)) => {
            let (na, nb) = (msb(u128::from(ma)), msb(u128::from(mb)));
            let (ta, tb) = (ea + na, eb.saturating_add(nb).saturating_add(k));
            // CAST (both): 0 ≤ 63 − n ≤ 63.
            if ta != tb { ta < tb } else { (ma << (63 - na) as u32) < (mb << (63 - nb) as u32) }
        }
        (Num::Zero(_), Num::Fin(..)) => true,
        _ => false,
    }
}

/// The float comparison `x == y` of the pseudo-code (NaN equal to nothing, +0 == −0).
fn feq(f: Fmt, x: u64, y: u64) -> bool {
    !f.is_nan(x) && !f.is_nan(y) && (x & f.bits() == y & f.bits() || (f.is_zero(x) && f.is_zero(y)))
}

/// V_DIV_SCALE_F32/F64 (S0 the value to scale, S1 the denominator, S2 the numerator): the
/// result and VCC's bit. `f` is `S` (scale 2^64, thresholds 96 and 23) or `D` (2^128, 768, 53).
pub fn div_scale(f: Fmt, s0: u64, s1: u64, s2: u64) -> (u64, bool) {
    let (k, gap, tiny) = if f == D { (128, 768, 53) } else { (64, 96, 23) };
    let min_normal = 1 - f.bias();
    // CAST: biased exponent fields, at most 11 bits.
    let (e1, e2) = (f.field(s1) as i64, f.field(s2) as i64);
    let finite = |x: u64| f.field(x) != f.emax();
    // 1 / S1 is subnormal: |S1| > 2^-min_normal.
    let rcp_denorm = finite(s1) && !f.is_zero(s1) && below_scaled(f, f.ldexp_one(-min_normal), s1, 0);
    // S2 / S1 is subnormal (or rounds to zero): |S2| < |S1| · 2^min_normal.
    let quot_denorm = finite(s1) && finite(s2) && below_scaled(f, s2, s1, min_normal);
    let s0 = s0 & f.bits();
    if f.is_zero(s2) || f.is_zero(s1) {
        (f.nan(false), false)
    } else if e2 - e1 >= gap {
        // N/D near the largest float: only the denominator scaled.
        (if feq(f, s0, s1) { ldexp(f, s0, k) } else { s0 }, true)
    } else if f.is_denorm(s1) {
        (ldexp(f, s0, k), false)
    } else if rcp_denorm && quot_denorm {
        // The guide: ldexp(S0, +k) here (see the module's notes).
        (if feq(f, s0, s1) { ldexp(f, s0, -k) } else { s0 }, true)
    } else if rcp_denorm {
        (ldexp(f, s0, -k), false)
    } else if quot_denorm {
        // Only the numerator scaled.
        (if feq(f, s0, s2) { ldexp(f, s0, k) } else { s0 }, true)
    } else if e2 <= tiny {
        // The numerator is tiny: both scaled.
        (ldexp(f, s0, k), false)
    } else {
        (s0, false)
    }
}

impl Fmt {
    /// 2^e as a value of the format (e inside its normal range).
    fn ldexp_one(self, e: i32) -> u64 {
        // CAST: a biased exponent inside the field.
        ((e + self.bias()) as u64) << self.man
    }
}

/// V_DIV_FMAS_F32/F64: fma(S0, S1, S2), with VCC scaled by 2^±64 (2^±128) and rounded once.
pub fn div_fmas(f: Fmt, s0: u64, s1: u64, s2: u64, vcc: bool) -> u64 {
    let scale = if !vcc {
        0
    } else {
        let k = if f == D { 128 } else { 64 };
        // CAST: a biased exponent field.
        if f.field(s2) as i32 > f.bias() { k } else { -k }
    };
    fma_scaled(f, s0, s1, s2, scale)
}

/// V_DIV_FIXUP_F16/F32/F64 (S0 the quotient, S1 the denominator, S2 the numerator).
pub fn div_fixup(f: Fmt, s0: u64, s1: u64, s2: u64) -> u64 {
    let (s0, s1, s2) = (s0 & f.bits(), s1 & f.bits(), s2 & f.bits());
    let neg = f.neg(s1) != f.neg(s2);
    if f.is_nan(s2) {
        f.quiet(s2)
    } else if f.is_nan(s1) {
        f.quiet(s1)
    } else if (f.is_zero(s1) && f.is_zero(s2)) || (f.is_inf(s1) && f.is_inf(s2)) {
        // 0/0, ∞/∞.
        f.nan(true)
    } else if f.is_zero(s1) || f.is_inf(s2) {
        f.inf(neg)
    } else if f.is_inf(s1) || f.is_zero(s2) {
        f.zero(neg)
    } else if f != H && {
        // CAST (both): exponent fields.
        let under = if f == D { -1075 } else { -150 };
        (f.field(s2) as i64) - (f.field(s1) as i64) < under
    } {
        // Underflow: below half the smallest subnormal, rounded to zero.
        f.zero(neg)
    } else if f != H && f.field(s0) == f.emax() {
        // Overflow (the guide prints exponent(S1); see the module's notes).
        f.inf(neg)
    } else {
        f.zero(neg) | (s0 & !f.sign())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Bits that reach the corners: zeros, subnormals, extremes, infinities, NaNs, near 1.
    fn special32(r: &mut Rng) -> u32 {
        const K: &[u32] = &[
            0,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_0000,
            0x3f7f_ffff,
            0x3f80_0001,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            0x0040_0000,
            0x3380_0000,
            0x4b80_0000,
        ];
        match r.next() % 4 {
            0 => K[(r.next() % K.len() as u64) as usize],
            // CAST: random bits.
            1 => r.next() as u32,
            // Near each other's exponents.
            2 => (0x3f00_0000 + (r.next() % 0x0200_0000) as u32) | ((r.next() & 1) as u32) << 31,
            // Subnormal or small.
            _ => (r.next() % 0x0100_0000) as u32 | ((r.next() & 1) as u32) << 31,
        }
    }

    fn same32(a: u32, b: u32) -> bool {
        a == b || (f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan())
    }

    /// The exact fma with no scale is libm's fmaf / fma, bit for bit (NaN payloads aside).
    #[test]
    fn the_exact_fma_is_libms() {
        let mut r = Rng(0x5eed_d1f1);
        for _ in 0..400_000 {
            let (a, b, c) = (special32(&mut r), special32(&mut r), special32(&mut r));
            let want = libm::fmaf(f32::from_bits(a), f32::from_bits(b), f32::from_bits(c)).to_bits();
            // CAST: a 32-bit result.
            let got = fma_scaled(S, a.into(), b.into(), c.into(), 0) as u32;
            assert!(same32(got, want), "fma({a:#x}, {b:#x}, {c:#x}) = {want:#x}, got {got:#x}");
        }
        for _ in 0..400_000 {
            let pick = |r: &mut Rng| match r.next() % 3 {
                0 => r.next(),
                1 => (0x3fe0_0000_0000_0000 + r.next() % 0x0040_0000_0000_0000) | (r.next() & 1) << 63,
                _ => r.next() % 0x0020_0000_0000_0000,
            };
            let (a, b, c) = (pick(&mut r), pick(&mut r), pick(&mut r));
            let want = libm::fma(f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
            let got = f64::from_bits(fma_scaled(D, a, b, c, 0));
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "fma64 {a:#x} {b:#x} {c:#x}");
        }
    }

    /// With a scale, the result is the exact value × 2^k rounded once: against the f64 fma of the
    /// f32 operands (exact when the product and sum fit 53 bits: sums of near operands) scaled
    /// in f64 and rounded to f32 once.
    #[test]
    fn the_scaled_fma_rounds_once() {
        let mut r = Rng(0x5eed_d1f2);
        for _ in 0..200_000 {
            // 12-bit significands: a·b + c exact in f64 whenever the exponents are near.
            let small = |r: &mut Rng, e: u64| -> u32 {
                // CAST: a 12-bit significand under a chosen exponent.
                ((e as u32) << 23) | (((r.next() % 4096) as u32) << 11) | ((r.next() & 1) as u32) << 31
            };
            let e = 100 + r.next() % 50;
            let ec = 127 + r.next() % 3;
            let (a, b, c) = (small(&mut r, e), small(&mut r, 254 - e), small(&mut r, ec));
            let k = [-64, 64, -150, -140, -130, 10][(r.next() % 6) as usize];
            let exact = f64::from(f32::from_bits(a)) * f64::from(f32::from_bits(b)) + f64::from(f32::from_bits(c));
            let want = libm::ldexp(exact, k);
            // f64 → f32 once: `want` is exact (the scale of an exact f64 in range), so one rounding.
            let want = (want as f32).to_bits();
            // CAST: a 32-bit result.
            let got = fma_scaled(S, a.into(), b.into(), c.into(), k) as u32;
            assert_eq!(got, want, "fma({a:#x}, {b:#x}, {c:#x}) × 2^{k}");
        }
    }

    #[test]
    fn ldexp_rounds_into_the_subnormals_once() {
        // 1.5 · 2^-149 → halfway between 1 and 2 subnormal units: even (2).
        assert_eq!(ldexp(S, 0x3fc0_0000, -149), 2);
        // 1.25 · 2^-149 → 1 unit.
        assert_eq!(ldexp(S, 0x3fa0_0000, -149), 1);
        // 0.5 units → 0 (even), a hair more → 1.
        assert_eq!(ldexp(S, 0x3f80_0000, -150), 0);
        assert_eq!(ldexp(S, 0x3f80_0001, -150), 1);
        assert_eq!(ldexp(S, 0x7f7f_ffff, 1), 0x7f80_0000);
        assert_eq!(ldexp(S, 1, 149), 0x3f80_0000);
        assert_eq!(ldexp(D, 1, 1074), 0x3ff0_0000_0000_0000);
        assert_eq!(ldexp(H, 0x3c00, -24), 1);
    }

    #[test]
    fn div_fixup_takes_the_special_cases_of_the_guide() {
        let q = 0x4040_0000u64; // 3.0, a quotient
        let cases: &[(u32, u32, u32)] = &[
            // (denominator, numerator, expected)
            (0x7fa0_0000, 0x3f80_0000, 0x7fe0_0000), // NaN denominator, quieted
            (0x3f80_0000, 0xffa0_0001, 0xffe0_0001), // NaN numerator first
            (0, 0x8000_0000, 0xffc0_0000),           // 0/0
            (0xff80_0000, 0x7f80_0000, 0xffc0_0000), // ∞/∞
            (0x8000_0000, 0x3f80_0000, 0xff80_0000), // x/−0 = −∞
            (0x3f80_0000, 0xff80_0000, 0xff80_0000), // −∞/y
            (0xff80_0000, 0x3f80_0000, 0x8000_0000), // x/−∞ = −0
            (0x3f80_0000, 0x8000_0000, 0x8000_0000), // −0/y
            (0x7f00_0000, 0x0000_0001, 0),           // far below the subnormals
            (0xbf80_0000, 0x3f80_0000, 0xc040_0000), // sign of the quotient from n and d
        ];
        for &(d, n, want) in cases {
            // CAST: 32-bit results.
            assert_eq!(div_fixup(S, q, d.into(), n.into()) as u32, want, "fixup(3, {d:#x}, {n:#x})");
        }
        // An overflowed quotient (∞, or NaN out of ∞ − ∞): the signed infinity.
        assert_eq!(div_fixup(S, 0x7fc0_0000, 0xbf80_0000, 0x3f80_0000), 0xff80_0000);
        assert_eq!(div_fixup(D, 0x7ff0_0000_0000_0000, 1, 0x3ff0_0000_0000_0000), 0x7ff0_0000_0000_0000);
        assert_eq!(div_fixup(H, 0x4200, 0x0000, 0x0000), 0xfe00);
        assert_eq!(div_fixup(H, 0x4200, 0xbc00, 0x3c00), 0xc200);
    }

    #[test]
    fn div_scale_scales_as_the_guide_says() {
        let one = 0x3f80_0000u64;
        // Ordinary operands: unchanged, VCC clear.
        assert_eq!(div_scale(S, 0x4000_0000, 0x4000_0000, one), (0x4000_0000, false));
        // A zero: NaN.
        assert_eq!(div_scale(S, one, 0, one).0, 0x7fc0_0000);
        // N/D near the largest float: the denominator ×2^64, VCC.
        let (n, d) = (0x7f00_0000u64, 0x0100_0000u64);
        assert_eq!(div_scale(S, d, d, n), (0x2100_0000, true));
        assert_eq!(div_scale(S, n, d, n), (n, true));
        // A subnormal denominator (the numerator 2^-40 not 96 binades above it): both ×2^64.
        let n = 0x2b80_0000u64;
        assert_eq!(div_scale(S, 1, 1, n), (0x1500_0000, false));
        assert_eq!(div_scale(S, n, 1, n), (0x4b80_0000, false));
        // A subnormal quotient: the numerator ×2^64, VCC.
        let (n, d) = (0x0100_0000u64, 0x4100_0000u64);
        assert_eq!(div_scale(S, n, d, n), (0x2100_0000, true));
        assert_eq!(div_scale(S, d, d, n), (d, true));
        // 1/D subnormal: both ×2^-64.
        let d = 0x7f00_0000u64;
        assert_eq!(div_scale(S, d, d, 0x7e80_0000), (0x5f00_0000, false));
        // A tiny numerator: both ×2^64.
        assert_eq!(div_scale(S, 0x0b00_0000, 0x0a80_0000, 0x0b00_0000), (0x2b00_0000, false));
        // f64: 1/D subnormal and a subnormal quotient.
        let d = 0x7fe0_0000_0000_0000u64;
        assert_eq!(div_scale(D, d, d, 0x3ff0_0000_0000_0000), (0x77e0_0000_0000_0000, true));
    }

    #[test]
    fn div_fmas_scales_back_by_the_quotients_size() {
        let (one, two) = (0x3f80_0000u64, 0x4000_0000u64);
        assert_eq!(div_fmas(S, one, one, one, false), two);
        // Quotient (S2) below 2: ×2^-64; at least 2: ×2^64.
        assert_eq!(div_fmas(S, one, one, one, true), 0x2000_0000);
        assert_eq!(div_fmas(S, 0, one, two, true), 0x6000_0000);
        // Below: ×2^-64, rounded once into the subnormals.
        assert_eq!(div_fmas(S, 0, one, 0x1f80_0000, true), 0x0020_0000);
        assert_eq!(div_fmas(D, 0, 0, 0x4000_0000_0000_0000, true), 0x4800_0000_0000_0000);
    }
}
