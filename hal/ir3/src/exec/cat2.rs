//! cat2: two-source ALU.

use super::*;

fn cat2_kind(op: Cat2Op) -> Kind {
    use Cat2Op::*;
    match op {
        AddF | MinF | MaxF | MulF | SignF | CmpsF | AbsnegF | FloorF | CeilF | RndneF | RndazF | TruncF => Kind::Float,
        AndB | OrB | NotB | XorB | BfrevB | ClzB | ShlB | ShrB | AshrB | CbitsB | GetbitB => Kind::Bits,
        _ => Kind::Int,
    }
}

pub(super) fn cat2(cx: &mut Ctx, wave: &mut Wave, c: &Cat2, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    use Cat2Op::*;
    let kind = cat2_kind(c.op);
    let signed = matches!(c.op, AddS | SubS | CmpsS | MinS | MaxS | AbsnegS | MulS24 | ClzS | AshrB);
    // Integer and bitwise ops on half sources compute in 16 bits (see `narrow16`); the 24-bit
    // multiplies and `mull.u` return 32 bits whatever their sources (ir3_cf.c).
    let half16 = c.src1.half && kind != Kind::Float && !matches!(c.op, MulU24 | MulS24 | MullU);
    let mut a = [0u32; W];
    let mut b = [0u32; W];
    let n = active_len(exec);
    for k in 0..=fl.repeat {
        operand(cx, wave, &c.src1, k, pc, exec, kind, signed, &mut a)?;
        if let Some(s2) = &c.src2 {
            operand(cx, wave, s2, k, pc, exec, kind, signed, &mut b)?;
        }
        if half16 && c.op == AshrB {
            // an arithmetic shift of a 16-bit value shifts in its own sign bit
            map1(&mut a[..n], |x| x as u16 as i16 as i32 as u32);
        }
        let mut float_result = kind == Kind::Float;
        match c.op {
            AddF => map2(&mut a[..n], &b[..n], ff(|x, y| x + y)),
            MulF => map2(&mut a[..n], &b[..n], ff(|x, y| x * y)),
            MinF => map2(&mut a[..n], &b[..n], ff(f32::min)),
            MaxF => map2(&mut a[..n], &b[..n], ff(f32::max)),
            SignF => map1(&mut a[..n], |x| {
                let f = f32::from_bits(x);
                (if f > 0.0 {
                    1.0f32
                } else if f < 0.0 {
                    -1.0
                } else {
                    f
                })
                .to_bits()
            }),
            AbsnegF => {}
            FloorF => map1(&mut a[..n], |x| libm::floorf(f32::from_bits(x)).to_bits()),
            CeilF => map1(&mut a[..n], |x| libm::ceilf(f32::from_bits(x)).to_bits()),
            RndneF => map1(&mut a[..n], |x| libm::rintf(f32::from_bits(x)).to_bits()),
            RndazF => map1(&mut a[..n], |x| libm::roundf(f32::from_bits(x)).to_bits()),
            TruncF => map1(&mut a[..n], |x| libm::truncf(f32::from_bits(x)).to_bits()),
            CmpsF => {
                let cond = c.cond.unwrap_or(Cond::Eq);
                cmp_lanes(&mut a[..n], &b[..n], cond, f32::from_bits);
                float_result = false;
            }
            AddU | AddS => {
                if fl.ei {
                    // (ei): halving add (NIR uhadd / ihadd).
                    if signed {
                        map2(&mut a[..n], &b[..n], |x, y| ((x as i32 as i64 + y as i32 as i64) >> 1) as u32)
                    } else {
                        map2(&mut a[..n], &b[..n], |x, y| ((x as u64 + y as u64) >> 1) as u32)
                    }
                } else {
                    map2(&mut a[..n], &b[..n], u32::wrapping_add)
                }
            }
            SubU | SubS => map2(&mut a[..n], &b[..n], u32::wrapping_sub),
            CmpsU => {
                let cond = c.cond.unwrap_or(Cond::Eq);
                cmp_lanes(&mut a[..n], &b[..n], cond, |x| x)
            }
            CmpsS => {
                let cond = c.cond.unwrap_or(Cond::Eq);
                cmp_lanes(&mut a[..n], &b[..n], cond, |x| x as i32)
            }
            MinU => map2(&mut a[..n], &b[..n], u32::min),
            MaxU => map2(&mut a[..n], &b[..n], u32::max),
            MinS => map2(&mut a[..n], &b[..n], |x, y| (x as i32).min(y as i32) as u32),
            MaxS => map2(&mut a[..n], &b[..n], |x, y| (x as i32).max(y as i32) as u32),
            AbsnegS => {}
            AndB => map2(&mut a[..n], &b[..n], |x, y| x & y),
            OrB => map2(&mut a[..n], &b[..n], |x, y| x | y),
            XorB => map2(&mut a[..n], &b[..n], |x, y| x ^ y),
            NotB => map1(&mut a[..n], |x| !x),
            MulU24 => map2(&mut a[..n], &b[..n], |x, y| (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff)),
            MulS24 => {
                map2(&mut a[..n], &b[..n], |x, y| (((x << 8) as i32) >> 8).wrapping_mul(((y << 8) as i32) >> 8) as u32)
            }
            MullU => map2(&mut a[..n], &b[..n], |x, y| (x & 0xffff) * (y & 0xffff)),
            BfrevB if half16 => map1(&mut a[..n], |x| (x as u16).reverse_bits() as u32),
            BfrevB => map1(&mut a[..n], u32::reverse_bits),
            ClzB if half16 => map1(&mut a[..n], |x| if x as u16 == 0 { u32::MAX } else { (x as u16).leading_zeros() }),
            ClzS if half16 => map1(&mut a[..n], |x| {
                let v = x as u16;
                if (v as i16) < 0 { (!v).leading_zeros() } else { v.leading_zeros() }
            }),
            // clz.b(0) is all ones, not 32: Mesa's ir3 builds NIR ufind_msb(x) (-1 at 0) as
            // `sel.b32 (31 - clz.b x), x, (clz.b x)` (the tinygrad u64 -> f32 shaders rely on it; see
            // tests/exec.rs clz_b_of_zero_is_all_ones; ../shared/notes/adreno-ir3-isa.md §12).
            ClzB => map1(&mut a[..n], |x| if x == 0 { u32::MAX } else { x.leading_zeros() }),
            ClzS => map1(&mut a[..n], |x| {
                let v = x as i32;
                if v < 0 { (!x).leading_zeros() } else { x.leading_zeros() }
            }),
            ShlB => map2(&mut a[..n], &b[..n], |x, y| x.wrapping_shl(y & 31)),
            ShrB => map2(&mut a[..n], &b[..n], |x, y| x.wrapping_shr(y & 31)),
            AshrB => map2(&mut a[..n], &b[..n], |x, y| (x as i32).wrapping_shr(y & 31) as u32),
            CbitsB => map1(&mut a[..n], u32::count_ones),
            GetbitB => map2(&mut a[..n], &b[..n], |x, y| (x >> (y & 31)) & 1),
            op => return Err(unsupported(pc, op.name())),
        }
        if half16 && !matches!(c.op, CmpsU | CmpsS) {
            narrow16(&mut a[..n], signed);
        } else if float_result && c.src1.half && !c.dst_half {
            // an f16 op with a full destination: the f16 result, widened exactly (ir3_cf folds the
            // `cov.f16f32` of a half result into the op)
            map1(&mut a[..n], |x| f16_to_f32(f32_to_f16(f32::from_bits(x))).to_bits());
        }
        store(wave, c.dst.offset(k), c.dst_half, float_result, fl.sat, &mut a, exec);
    }
    Ok(())
}
