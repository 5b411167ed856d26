//! IEEE binary16 ⇄ binary32/64 conversions (round to nearest even) for the 16-bit VALU ops.

/// binary16 bits → f32 (exact).
pub fn h2f(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // A subnormal: m · 2^-24, exact in f32.
            // CAST: m < 1024, exact in f32.
            let v = (m as f32) * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// f32 → binary16 bits, rounded to nearest even (overflow to infinity, NaN stays quiet NaN).
pub fn f2h(f: f32) -> u16 {
    let x = f.to_bits();
    // CAST: the sign bit moved to bit 15.
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Subnormal or zero in f16: shift the full significand, round to nearest even.
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        // CAST: 14..=24, in range.
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let r = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let r = if rem > half || (rem == half && r & 1 == 1) { r + 1 } else { r };
        // CAST: r ≤ 0x400, fits.
        return sign | r as u16;
    }
    let r = man >> 13;
    let rem = man & 0x1fff;
    // CAST: e in 1..=30.
    let mut h = ((e as u32) << 10) | r;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        h += 1; // may carry into the exponent, up to infinity: correct rounding
    }
    // CAST: h ≤ 0x7c00.
    sign | h as u16
}

/// f32 → bfloat16 bits, rounded to nearest even (NaN stays a quiet NaN).
pub fn f2bf(f: f32) -> u16 {
    let x = f.to_bits();
    if f.is_nan() {
        // CAST: the high half, made quiet.
        return ((x >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((x >> 16) & 1);
    // CAST: the high half after rounding (a carry may reach infinity, as rounding does).
    (x.wrapping_add(round) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_f16_round_trips_through_f32() {
        for h in 0..=u16::MAX {
            let f = h2f(h);
            if f.is_nan() {
                assert_eq!(f2h(f) & 0x7c00, 0x7c00);
                continue;
            }
            assert_eq!(f2h(f), h, "{h:#x} -> {f}");
        }
    }

    #[test]
    fn f32_rounds_to_bfloat16_to_nearest_even() {
        assert_eq!(f2bf(1.0), 0x3f80);
        assert_eq!(f2bf(f32::from_bits(0x3f80_8000)), 0x3f80); // halfway, even stays
        assert_eq!(f2bf(f32::from_bits(0x3f81_8000)), 0x3f82); // halfway, odd rounds up
        assert_eq!(f2bf(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(f2bf(f32::MAX), 0x7f80);
        assert_eq!(f2bf(f32::from_bits(0x7f80_0001)) & 0x7fc0, 0x7fc0);
    }

    #[test]
    fn f32_rounds_to_nearest_even() {
        assert_eq!(f2h(1.0 + 1.0 / 2048.0), 0x3c00); // halfway, even stays
        assert_eq!(f2h(1.0 + 3.0 / 2048.0), 0x3c02); // halfway, odd rounds up
        assert_eq!(f2h(65520.0), 0x7c00);
        assert_eq!(f2h(65519.0), 0x7bff);
        assert_eq!(f2h(f32::from_bits(0x3380_0000)), 1); // 2^-24
        assert_eq!(f2h(f32::from_bits(0x3300_0000)), 0); // 2^-25: halfway to 0, even
    }
}
