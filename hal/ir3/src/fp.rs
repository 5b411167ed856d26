//! IEEE binary16 ⇄ binary32 conversions (round to nearest even, or in a directed [`Round`] mode), for
//! half registers.

/// binary16 bits → f32 (exact). Branch-free (selects only), so that lane loops vectorize: the
/// exponent is rebiased; infinities and NaNs get the all-ones exponent; zeros and subnormals
/// (value `man · 2^-24`) are `2^-14 · (1 + man/1024) − 2^-14`, an exact subtraction.
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let em = u32::from(h & 0x7fff) << 13;
    let exp = em & 0x0f80_0000;
    let normal = em + ((127 - 15) << 23);
    let bits = if exp == 0x0f80_0000 {
        normal + ((128 - 16) << 23)
    } else if exp == 0 {
        (f32::from_bits(normal + (1 << 23)) - f32::from_bits(113 << 23)).to_bits()
    } else {
        normal
    };
    f32::from_bits(bits | sign)
}

/// A rounding direction: cat1's ROUND field (`ir3-cat1.xml` `#round`: 0 is the default, named
/// toward zero in Mesa's `round_t`, and what `cov` does with it depends on the destination type:
/// see `exec::cat1`; 1 `(even)`, 2 `(pos_infinity)`, 3 `(neg_infinity)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Round {
    /// Toward zero (field 0).
    Zero,
    /// To nearest, ties to even (field 1).
    Even,
    /// Toward +∞ (field 2).
    PosInf,
    /// Toward −∞ (field 3).
    NegInf,
}

impl Round {
    /// The ROUND field's value (two bits; higher bits ignored).
    pub fn from_field(v: u8) -> Round {
        match v & 3 {
            0 => Round::Zero,
            1 => Round::Even,
            2 => Round::PosInf,
            _ => Round::NegInf,
        }
    }

    /// Whether a magnitude truncated to `q`, with `rem` of `half·2` dropped, rounds up (away
    /// from zero) for a value of sign `neg`.
    fn up(self, neg: bool, q: u32, rem: u32, half: u32) -> bool {
        match self {
            Round::Zero => false,
            Round::Even => rem > half || (rem == half && (q & 1) == 1),
            Round::PosInf => rem != 0 && !neg,
            Round::NegInf => rem != 0 && neg,
        }
    }
}

/// f32 → binary16 bits, rounding to nearest even; NaN stays NaN (quiet), overflow → ±inf.
pub fn f32_to_f16(x: f32) -> u16 {
    f32_to_f16_round(x, Round::Even)
}

/// f32 → binary16 bits, rounded in direction `r`; NaN stays NaN (quiet), ±inf stays ±inf. An
/// overflow is ±inf where `r` rounds away from zero, else the largest finite half (IEEE 754).
pub fn f32_to_f16_round(x: f32, r: Round) -> u16 {
    let b = x.to_bits();
    let neg = b >> 31 != 0;
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
    }
    let overflow = sign | if r.up(neg, 0, 1, 1) || r == Round::Even { 0x7c00 } else { 0x7bff };
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return overflow;
    }
    if e <= 0 {
        // Subnormal or zero in f16: shift the full mantissa (with implicit 1) right.
        if e < -10 {
            // below half the smallest subnormal (or an f32 zero/subnormal): 0, or the smallest
            // subnormal when rounding away from zero
            let nonzero = exp != 0 || man != 0;
            return sign | u16::from(nonzero && r.up(neg, 0, 1, 2));
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32; // 13 + (1 - e)
        let q = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        let q = if r.up(neg, q, rem, half) { q + 1 } else { q };
        return sign | q as u16;
    }
    let q = (e as u32) << 10 | (man >> 13);
    let rem = man & 0x1fff;
    let q = if r.up(neg, q, rem, 0x1000) { q + 1 } else { q };
    // A carry into the exponent field is the correct rounding (up to inf, or the overflow value).
    if q >= 0x7c00 {
        return overflow;
    }
    sign | q as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The straightforward decoding [`f16_to_f32`] must agree with on every half.
    fn f16_to_f32_reference(h: u16) -> f32 {
        let sign = ((h >> 15) as u32) << 31;
        let exp = ((h >> 10) & 0x1f) as u32;
        let man = (h & 0x3ff) as u32;
        let bits = match exp {
            0 if man == 0 => sign,
            0 => {
                // Subnormal: value = man · 2^-24.
                let v = man as f32 * (1.0 / 16_777_216.0);
                return if sign != 0 { -v } else { v };
            }
            0x1f => sign | 0x7f80_0000 | (man << 13),
            _ => sign | ((exp + 112) << 23) | (man << 13),
        };
        f32::from_bits(bits)
    }

    #[test]
    fn f16_to_f32_matches_the_reference_on_every_half() {
        for h in 0..=u16::MAX {
            assert_eq!(f16_to_f32(h).to_bits(), f16_to_f32_reference(h).to_bits(), "{h:#x}");
        }
    }

    #[test]
    fn round_trips_every_half() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#x}");
            }
        }
    }

    #[test]
    fn rounds_to_nearest_even() {
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00); // tie → even
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02); // tie → even (up)
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // rounds to inf
        assert_eq!(f32_to_f16(1e-8), 0);
    }

    #[test]
    fn every_rounding_direction() {
        use Round::*;
        // 1 + 2^-11 + 2^-13: between 1.0 (0x3c00) and 1 + 2^-10 (0x3c01), above the midpoint
        let x = 1.0 + 1.0 / 2048.0 + 1.0 / 8192.0;
        for (r, pos, neg) in
            [(Zero, 0x3c00, 0xbc00), (Even, 0x3c01, 0xbc01), (PosInf, 0x3c01, 0xbc00), (NegInf, 0x3c00, 0xbc01)]
        {
            assert_eq!(f32_to_f16_round(x, r), pos, "{r:?}");
            assert_eq!(f32_to_f16_round(-x, r), neg, "{r:?} negative");
        }
        // overflow: inf only where the direction rounds away from zero
        for (r, pos, neg) in
            [(Zero, 0x7bff, 0xfbff), (Even, 0x7c00, 0xfc00), (PosInf, 0x7c00, 0xfbff), (NegInf, 0x7bff, 0xfc00)]
        {
            assert_eq!(f32_to_f16_round(70000.0, r), pos, "{r:?}");
            assert_eq!(f32_to_f16_round(-70000.0, r), neg, "{r:?} negative");
            assert_eq!(f32_to_f16_round(65519.0, r), if r == Even { 0x7bff } else { pos }, "{r:?}");
        }
        // below the smallest subnormal (2^-24)
        for (r, pos, neg) in [(Zero, 0, 0x8000), (Even, 0, 0x8000), (PosInf, 1, 0x8000), (NegInf, 0, 0x8001)] {
            assert_eq!(f32_to_f16_round(1e-9, r), pos, "{r:?}");
            assert_eq!(f32_to_f16_round(-1e-9, r), neg, "{r:?} negative");
        }
        // a subnormal half: 3.5 · 2^-24 (0x0003 or 0x0004)
        let s = 3.5 / 16_777_216.0;
        for (r, want) in [(Zero, 3), (Even, 4), (PosInf, 4), (NegInf, 3)] {
            assert_eq!(f32_to_f16_round(s, r), want, "{r:?}");
        }
        // exact values and zeros, inf and NaN are the same in every direction
        for r in [Zero, Even, PosInf, NegInf] {
            assert_eq!(f32_to_f16_round(1.5, r), 0x3e00);
            assert_eq!(f32_to_f16_round(0.0, r), 0);
            assert_eq!(f32_to_f16_round(f32::NEG_INFINITY, r), 0xfc00);
            assert_eq!(f32_to_f16_round(f32::NAN, r) & 0x7e00, 0x7e00);
        }
    }
}
