//! Register and operand access: lane masks, register reads and writes (full and half), source
//! operands with their modifiers, flush-to-zero, and the lane-wise helpers the ALU ops share.

use super::*;

/// Flush an f32 denormal to a zero of its sign.
#[inline(always)]
pub(super) fn ftz(x: f32) -> f32 {
    f32::from_bits(ftz_bits(x.to_bits()))
}

/// [`ftz`] on bits: a zero exponent field keeps only the sign (zeros are unchanged); branch-free
/// so that lane loops vectorize.
#[inline(always)]
pub(super) fn ftz_bits(b: u32) -> u32 {
    if b & 0x7f80_0000 == 0 { b & 0x8000_0000 } else { b }
}

pub(super) fn lanes_of(mask: u64) -> impl Iterator<Item = usize> {
    let mut m = mask;
    core::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Register and operand access

#[inline]
pub(super) fn write_lanes(dst: &mut Lanes, val: &Lanes, exec: u64) {
    if exec == u64::MAX {
        *dst = *val;
    } else if exec & exec.wrapping_add(1) == 0 {
        // lanes 0..n
        let n = active_len(exec);
        dst[..n].copy_from_slice(&val[..n]);
    } else {
        for l in lanes_of(exec) {
            dst[l] = val[l];
        }
    }
}

#[inline]
pub(super) fn write_half(dst: &mut Lanes, val: &Lanes, exec: u64, hi: bool) {
    let sh = if hi { 16 } else { 0 };
    let keep = !(0xffffu32 << sh);
    if exec == u64::MAX {
        for l in 0..W {
            dst[l] = (dst[l] & keep) | ((val[l] & 0xffff) << sh);
        }
    } else {
        for l in lanes_of(exec) {
            dst[l] = (dst[l] & keep) | ((val[l] & 0xffff) << sh);
        }
    }
}

/// Write a register (full: regid; half: half regid) for the exec lanes.
#[inline]
pub(super) fn write_reg(wave: &mut Wave, reg: u8, half: bool, val: &Lanes, exec: u64) {
    if half && !wave.merged {
        write_half(&mut wave.hregs[reg as usize], val, exec, false);
    } else if half {
        write_half(&mut wave.regs[(reg >> 1) as usize], val, exec, reg & 1 != 0);
    } else {
        write_lanes(&mut wave.regs[reg as usize], val, exec);
    }
}

#[inline]
pub(super) fn read_reg(wave: &Wave, reg: u8, half: bool, out: &mut Lanes) {
    if half && !wave.merged {
        let r = &wave.hregs[reg as usize];
        for l in 0..W {
            out[l] = r[l] & 0xffff;
        }
    } else if half {
        let r = &wave.regs[(reg >> 1) as usize];
        let sh = (reg & 1) * 16;
        for l in 0..W {
            out[l] = (r[l] >> sh) & 0xffff;
        }
    } else {
        *out = wave.regs[reg as usize];
    }
}

pub(super) fn const_word(cx: &Ctx, word: u32, pc: usize) -> Res<u32> {
    let o = word as usize * 4;
    match cx.consts.get(o..o + 4) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(ExecError::ConstOutOfRange { index: pc, word }),
    }
}

/// Read a source operand (without modifiers) for all lanes: 32-bit values, or 16-bit values in
/// the low bits for half operands. `k` is the (rpt) iteration.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_src(
    cx: &Ctx,
    wave: &Wave,
    o: &Operand,
    k: u8,
    pc: usize,
    exec: u64,
    float: bool,
    out: &mut Lanes,
) -> Res<()> {
    let k = if o.r { k } else { 0 };
    match o.src {
        Src::Reg { reg, .. } => read_reg(wave, reg.0.wrapping_add(k), o.half, out),
        Src::Const(n) => {
            let n = n as u32 + k as u32;
            let v = if o.half && cx.prog.meta.const_demotion {
                let w = const_word(cx, n, pc)?;
                if float { f32_to_f16(f32::from_bits(w)) as u32 } else { w & 0xffff }
            } else if o.half {
                let w = const_word(cx, n >> 1, pc)?;
                (w >> ((n & 1) * 16)) & 0xffff
            } else {
                const_word(cx, n, pc)?
            };
            *out = [v; W];
        }
        Src::Imm(v) => *out = [if o.half { v as u32 & 0xffff } else { v as u32 }; W],
        Src::Imm32(v) => *out = [v; W],
        Src::Flut(i) => {
            let f = FLUT[i as usize % 12];
            *out = [if o.half { f32_to_f16(f) as u32 } else { f.to_bits() }; W];
        }
        Src::RelReg(off) | Src::RelConst(off) => {
            let a0 = &wave.regs[0xf4];
            for l in lanes_of(exec) {
                let idx = a0[l] as i32 as i16 as i64 + off as i64 + k as i64;
                let v = match o.src {
                    Src::RelReg(_) => {
                        if !(0..256).contains(&idx) {
                            return Err(relative(cx, wave, pc, l, idx));
                        }
                        let r = idx as usize;
                        if o.half { wave.hget(r as u8, l) } else { wave.regs[r][l] }
                    }
                    _ => {
                        if !(0..2048).contains(&idx) {
                            return Err(relative(cx, wave, pc, l, idx));
                        }
                        const_word(cx, idx as u32, pc)?
                    }
                };
                out[l] = v;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ALU operands and results (cat2, cat3, cat4)

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Float,
    Int,
    Bits,
}

/// Read an operand and apply (neg)/(abs) for its kind; floats come back as f32 bits, integers
/// sign- or zero-extended from 16 bits for half operands. Only the lanes up to the highest
/// active one are written (lanes above it are never stored).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn operand(
    cx: &Ctx,
    wave: &Wave,
    o: &Operand,
    k: u8,
    pc: usize,
    exec: u64,
    kind: Kind,
    signed: bool,
    out: &mut Lanes,
) -> Res<()> {
    let n = active_len(exec);
    let out = &mut out[..n];
    match o.src {
        // Registers: read and modify in one pass, straight from the register file.
        Src::Reg { reg, .. } => {
            let reg = reg.0.wrapping_add(if o.r { k } else { 0 });
            if !o.half {
                modify(kind, o, signed, &wave.regs[reg as usize][..n], out, |x| x);
            } else if !wave.merged {
                modify(kind, o, signed, &wave.hregs[reg as usize][..n], out, |x| x & 0xffff);
            } else {
                let sh = u32::from(reg & 1) * 16;
                modify(kind, o, signed, &wave.regs[(reg >> 1) as usize][..n], out, move |x| (x >> sh) & 0xffff);
            }
        }
        Src::RelReg(_) | Src::RelConst(_) => {
            let mut t = [0u32; W];
            read_src(cx, wave, o, k, pc, exec, kind == Kind::Float, &mut t)?;
            modify(kind, o, signed, &t[..n], out, |x| x);
        }
        // The same value in every lane: modify it once.
        _ => {
            let mut t = [0u32; W];
            read_src(cx, wave, o, k, pc, exec, kind == Kind::Float, &mut t)?;
            let mut v = [0u32];
            modify(kind, o, signed, &t[..1], &mut v, |x| x);
            out.fill(v[0]);
        }
    }
    Ok(())
}

/// `out[l] = modifiers(get(src[l]))` for an operand's kind: the per-operand decisions are taken
/// once, outside the lane loops.
#[inline(always)]
pub(super) fn modify(kind: Kind, o: &Operand, signed: bool, src: &[u32], out: &mut [u32], get: impl Fn(u32) -> u32) {
    #[inline(always)]
    pub(super) fn lanes(out: &mut [u32], src: &[u32], f: impl Fn(u32) -> u32) {
        for (d, s) in out.iter_mut().zip(src) {
            *d = f(*s);
        }
    }
    let g = &get;
    match kind {
        Kind::Float => {
            // (abs) clears and (neg) flips the sign bit, after the denormal flush.
            let and = if o.abs { 0x7fff_ffff } else { u32::MAX };
            let xor = if o.neg { 0x8000_0000 } else { 0 };
            if o.half {
                // f16 values are never f32 denormals: nothing to flush
                lanes(out, src, |x| (f16_to_f32(g(x) as u16).to_bits() & and) ^ xor)
            } else {
                lanes(out, src, |x| (ftz_bits(g(x)) & and) ^ xor)
            }
        }
        Kind::Int => {
            let ext = |x: u32| -> u32 {
                if !o.half {
                    x
                } else if signed {
                    x as u16 as i16 as i32 as u32
                } else {
                    x & 0xffff
                }
            };
            match (o.abs, o.neg) {
                (false, false) if !o.half => lanes(out, src, g),
                (false, false) if signed => lanes(out, src, |x| g(x) as u16 as i16 as i32 as u32),
                (false, false) => lanes(out, src, |x| g(x) & 0xffff),
                (abs, neg) => lanes(out, src, |x| {
                    let mut x = ext(g(x));
                    if abs {
                        x = (x as i32).unsigned_abs();
                    }
                    if neg {
                        x = x.wrapping_neg();
                    }
                    x
                }),
            }
        }
        Kind::Bits => {
            if o.neg {
                lanes(out, src, |x| !g(x))
            } else {
                lanes(out, src, g)
            }
        }
    }
}

/// One past the highest active lane.
#[inline]
pub(super) fn active_len(exec: u64) -> usize {
    W - exec.leading_zeros() as usize
}

#[inline]
pub(super) fn map1(a: &mut [u32], f: impl Fn(u32) -> u32) {
    for x in a.iter_mut() {
        *x = f(*x);
    }
}

#[inline]
pub(super) fn map2(a: &mut [u32], b: &[u32], f: impl Fn(u32, u32) -> u32) {
    for (x, y) in a.iter_mut().zip(b.iter()) {
        *x = f(*x, *y);
    }
}

#[inline]
pub(super) fn ff(f: impl Fn(f32, f32) -> f32) -> impl Fn(u32, u32) -> u32 {
    move |a, b| ftz(f(f32::from_bits(a), f32::from_bits(b))).to_bits()
}

/// `a[l] = (f(a[l]) cond f(b[l])) as u32`, the condition chosen once for all lanes.
#[inline(always)]
pub(super) fn cmp_lanes<T: PartialOrd>(a: &mut [u32], b: &[u32], c: Cond, f: impl Fn(u32) -> T) {
    match c {
        Cond::Lt => map2(a, b, |x, y| (f(x) < f(y)) as u32),
        Cond::Le => map2(a, b, |x, y| (f(x) <= f(y)) as u32),
        Cond::Gt => map2(a, b, |x, y| (f(x) > f(y)) as u32),
        Cond::Ge => map2(a, b, |x, y| (f(x) >= f(y)) as u32),
        Cond::Eq => map2(a, b, |x, y| (f(x) == f(y)) as u32),
        Cond::Ne => map2(a, b, |x, y| (f(x) != f(y)) as u32),
    }
}

/// Store an ALU result: floats (f32 bits) are rounded to f16 for half destinations, integers
/// truncated; (sat) clamps float results to [0, 1].
/// The result of an integer or bitwise op on half sources: the ALU computes in 16 bits, and a full
/// destination receives the 16-bit result zero- or sign-extended by the opcode's signedness. Mesa's
/// ir3_cf.c relies on it: it folds a `cov.u16u32`/`cov.s16s32` of a half result into the op that
/// made it (swapping `add.u` and `add.s` to match the conversion), except after `mul.u24`/`mul.s24`,
/// "which always return 32b result regardless of its sources size, hence we cannot guarantee the high
/// 16b of dst being zero or sign extended". A half destination keeps the low 16 bits either way.
pub(super) fn narrow16(v: &mut [u32], signed: bool) {
    if signed {
        map1(v, |x| x as u16 as i16 as i32 as u32);
    } else {
        map1(v, |x| x & 0xffff);
    }
}

pub(super) fn store(wave: &mut Wave, dst: Reg, half: bool, float: bool, sat: bool, v: &mut Lanes, exec: u64) {
    let n = active_len(exec);
    if float && sat {
        map1(&mut v[..n], |x| f32::from_bits(x).clamp(0.0, 1.0).to_bits());
    }
    if half && float {
        map1(&mut v[..n], |x| f32_to_f16(f32::from_bits(x)) as u32);
    }
    // p0 and a0 destinations are never half.
    let half = half && dst.0 < 0xf4;
    write_reg(wave, dst.0, half, v, exec);
}
