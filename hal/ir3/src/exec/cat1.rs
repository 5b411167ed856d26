//! cat1: `mov`, `cov` and relative moves.

use super::*;

/// An integer (|i| ≤ 2^32) → f32, rounded in direction `r`.
fn int_to_f32(i: i64, r: Round) -> f32 {
    // CAST: `as` rounds to nearest even; the result is within one ulp of `i`, and every f32
    // of magnitude ≤ 2^32 is an exact i64, so the comparison below is exact.
    let near = i as f32;
    let back = near as i64;
    match r {
        Round::Even => near,
        _ if back == i => near,
        Round::Zero if back.unsigned_abs() > i.unsigned_abs() => libm::nextafterf(near, 0.0),
        Round::PosInf if back < i => libm::nextafterf(near, f32::INFINITY),
        Round::NegInf if back > i => libm::nextafterf(near, f32::NEG_INFINITY),
        _ => near,
    }
}

fn cvt(v: u32, from: Type, to: Type, round: u8) -> u32 {
    // Read the source as a number.
    enum N {
        F(f32),
        I(i64),
    }
    let n = match from {
        Type::F16 => N::F(f16_to_f32(v as u16)),
        Type::F32 => N::F(f32::from_bits(v)),
        Type::U16 => N::I((v & 0xffff) as i64),
        Type::U32 => N::I(v as i64),
        Type::S16 => N::I(v as u16 as i16 as i64),
        Type::S32 => N::I(v as i32 as i64),
        // An 8-bit source is read sign-extended whatever its name: Mesa's ir3 builds `i2i16`/`i2i32`
        // of an 8-bit value as a plain `cov.u8s16`/`cov.u8s32` and masks with `and.b 0xff`
        // instead of a `cov` wherever it needs zero-extension, because "zero-extension of 8-bit
        // values doesn't work with `cov`" (ir3_compiler_nir.c, create_cov). s8 in later Mesa;
        // the XML's u8_32 is the same 8-bit value.
        Type::U8 | Type::U8_32 => N::I(v as u8 as i8 as i64),
    };
    // ROUND 0 is the default conversion, which the disassembler prints as nothing: to an integer it
    // truncates (Mesa builds f2i32 as a plain `cov.f32s32`), to a float it rounds to nearest even
    // like the ALU's own output conversion. Mesa's ir3_cf.c folds a cat1 conversion into the ALU
    // op that feeds it only when its ROUND is 0, so a field-0 `cov.f32f16` must round the way an
    // ALU op with a half destination does; tinygrad's fp16 `exp(12)` overflows to inf through it,
    // as numpy's does (1, 2, 3: `(even)`, `(pos_infinity)`, `(neg_infinity)` as named).
    let round = match round & 3 {
        0 if matches!(to, Type::F16 | Type::F32) => Round::Even,
        r => Round::from_field(r),
    };
    let rnd = |f: f32| -> f32 {
        match round {
            Round::Even => libm::rintf(f),
            Round::PosInf => libm::ceilf(f),
            Round::NegInf => libm::floorf(f),
            Round::Zero => libm::truncf(f),
        }
    };
    match to {
        // f16 → f16 is a move; f32 → f16 and every integer → f16 round once in `round`'s
        // direction (an integer above 2^24 rounds to f32 first, which cannot change the f16
        // result: every such value overflows f16 in every direction).
        Type::F16 => match (n, from) {
            (N::F(_), Type::F16) => v & 0xffff,
            (N::F(f), _) => f32_to_f16_round(f, round) as u32,
            (N::I(i), _) => f32_to_f16_round(int_to_f32(i, round), round) as u32,
        },
        Type::F32 => match n {
            N::F(f) => f.to_bits(),
            N::I(i) => int_to_f32(i, round).to_bits(),
        },
        _ => {
            let i: i64 = match n {
                N::F(f) => {
                    let r = rnd(f);
                    let (lo, hi) = match to {
                        Type::U16 => (0, 0xffff),
                        Type::S16 => (-0x8000, 0x7fff),
                        Type::U32 => (0, u32::MAX as i64),
                        Type::S32 => (i32::MIN as i64, i32::MAX as i64),
                        Type::U8 => (0, 0xff),
                        _ => (-0x80, 0x7f),
                    };
                    if r.is_nan() { 0 } else { (r as i64).clamp(lo, hi) }
                }
                N::I(i) => i,
            };
            match to {
                Type::U16 | Type::S16 => i as u32 & 0xffff,
                Type::U8 | Type::U8_32 => i as u32 & 0xff,
                _ => i as u32,
            }
        }
    }
}

/// [`cvt`] for every value of `v`, with the common conversions (f16 ⇄ f32 rounding to nearest
/// even, integer → integer) as plain lane loops.
fn cvt_lanes(v: &mut [u32], from: Type, to: Type, round: u8) {
    use Type::*;
    let int = |t: Type| !matches!(t, F16 | F32);
    match (from, to) {
        (F16, F32) => map1(v, |x| f16_to_f32(x as u16).to_bits()),
        // ROUND 0 and 1 both round to nearest even to a float (see `cvt`)
        (F32, F16) if round & 3 <= 1 => map1(v, |x| f32_to_f16(f32::from_bits(x)) as u32),
        (F16 | F32, _) | (_, F16 | F32) => map1(v, |x| cvt(x, from, to, round)),
        _ => {
            debug_assert!(int(from) && int(to));
            // integer → integer: extend the source as `cvt` reads it, keep the destination's bits
            let (sh, signed) = match from {
                U16 => (16, false),
                S16 => (16, true),
                U8 | U8_32 => (24, true),
                _ => (0, false),
            };
            let mask = match to {
                U16 | S16 => 0xffff,
                U8 | U8_32 => 0xff,
                _ => u32::MAX,
            };
            if signed {
                map1(v, |x| (((x << sh) as i32) >> sh) as u32 & mask)
            } else {
                map1(v, |x| ((x << sh) >> sh) & mask)
            }
        }
    }
}

fn cat1_dst_half(t: Type) -> bool {
    t.is_half() || t == Type::U8_32
}

pub(super) fn cat1(cx: &mut Ctx, wave: &mut Wave, c: &Cat1, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    let mut v = [0u32; W];
    // Lanes above the highest active one are never written.
    let n = active_len(exec);
    match c.op {
        Cat1Op::Mov | Cat1Op::Mova | Cat1Op::Mova1 => {
            for k in 0..=fl.repeat {
                let mut src = c.src;
                if matches!(src.src, Src::Imm32(_)) {
                    src.r = false; // (r) on an immediate is a mova hazard marker
                }
                read_src(cx, wave, &src, k, pc, exec, c.src_type == Type::F16, &mut v)?;
                if c.src_type != c.dst_type {
                    cvt_lanes(&mut v[..n], c.src_type, c.dst_type, c.round);
                }
                match (c.op, c.dst) {
                    (Cat1Op::Mova, _) | (Cat1Op::Mova1, _) => {
                        let r = if c.op == Cat1Op::Mova { 0xf4 } else { 0xf5 };
                        map1(&mut v[..n], |x| x as u16 as i16 as i32 as u32);
                        write_lanes(&mut wave.regs[r], &v, exec);
                    }
                    (_, Dst::Reg(r)) => write_reg(wave, r.0.wrapping_add(k), cat1_dst_half(c.dst_type), &v, exec),
                    (_, Dst::Rel(off)) => {
                        let half = cat1_dst_half(c.dst_type);
                        for l in lanes_of(exec) {
                            let idx = wave.regs[0xf4][l] as i32 as i16 as i64 + off as i64 + k as i64;
                            if !(0..256).contains(&idx) {
                                return Err(relative(cx, wave, pc, l, idx));
                            }
                            let i = idx as usize;
                            if half {
                                wave.hset(i as u8, l, v[l]);
                            } else {
                                wave.regs[i][l] = v[l];
                            }
                        }
                    }
                }
            }
        }
        Cat1Op::Swz | Cat1Op::Gat | Cat1Op::Sct => {
            let sh = cat1_dst_half(c.src_type);
            let dh = cat1_dst_half(c.dst_type);
            let Src::Reg { reg: s0, .. } = c.src.src else { return Ok(()) };
            let Dst::Reg(d0) = c.dst else { return Ok(()) };
            let (srcs, dsts): ([Reg; 4], [Reg; 4]) = match c.op {
                Cat1Op::Swz => ([s0, c.extra[0], s0, s0], [d0, c.extra[1], d0, d0]),
                Cat1Op::Gat => {
                    ([s0, c.extra[0], c.extra[1], c.extra[2]], [d0, d0.offset(1), d0.offset(2), d0.offset(3)])
                }
                _ => ([s0, s0.offset(1), s0.offset(2), s0.offset(3)], [d0, c.extra[0], c.extra[1], c.extra[2]]),
            };
            let count = if c.op == Cat1Op::Swz { 2 } else { 4 };
            let mut vals = [[0u32; W]; 4];
            for i in 0..count {
                read_reg(wave, srcs[i].0, sh, &mut vals[i]);
                if c.src_type != c.dst_type {
                    cvt_lanes(&mut vals[i][..n], c.src_type, c.dst_type, c.round);
                }
            }
            for i in 0..count {
                write_reg(wave, dsts[i].0, dh, &vals[i], exec);
            }
        }
        Cat1Op::Movmsk => {
            let Dst::Reg(d) = c.dst else { return Err(unsupported(pc, "movmsk with a relative destination")) };
            for k in 0..=fl.repeat {
                let part = if k < 2 { (exec >> (32 * k)) as u32 } else { 0 };
                write_reg(wave, d.0.wrapping_add(k), false, &[part; W], exec);
            }
        }
    }
    Ok(())
}
