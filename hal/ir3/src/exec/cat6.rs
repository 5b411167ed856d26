//! cat6: global, shared and private memory, atomics.

use super::*;

/// An element of `e.len()` (1, 2 or 4) bytes.
#[inline(always)]
fn elem(e: &[u8]) -> u32 {
    match *e {
        [b] => b as u32,
        [b0, b1] => u16::from_le_bytes([b0, b1]) as u32,
        [b0, b1, b2, b3] => u32::from_le_bytes([b0, b1, b2, b3]),
        _ => 0,
    }
}

#[inline(always)]
fn load_elem(bytes: &[u8], ty: Type) -> u32 {
    match ty.mem_bytes() {
        1 => bytes[0] as u32,
        2 => u16::from_le_bytes([bytes[0], bytes[1]]) as u32,
        _ => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
    }
}

fn atomic(op: AtomicOp, ty: Type, old: u32, v: u32, cmp: u32) -> u32 {
    let signed = matches!(ty, Type::S32 | Type::S16);
    match op {
        AtomicOp::Add => old.wrapping_add(v),
        AtomicOp::Sub => old.wrapping_sub(v),
        AtomicOp::Xchg => v,
        AtomicOp::Inc => old.wrapping_add(1),
        AtomicOp::Dec => old.wrapping_sub(1),
        AtomicOp::Cmpxchg => {
            if old == cmp {
                v
            } else {
                old
            }
        }
        AtomicOp::Min if signed => (old as i32).min(v as i32) as u32,
        AtomicOp::Max if signed => (old as i32).max(v as i32) as u32,
        AtomicOp::Min => old.min(v),
        AtomicOp::Max => old.max(v),
        AtomicOp::And => old & v,
        AtomicOp::Or => old | v,
        AtomicOp::Xor => old ^ v,
    }
}

fn src6(wave: &Wave, s: Cat6Src, l: usize) -> u32 {
    match s {
        Cat6Src::Reg(r) => wave.regs[r.0 as usize][l],
        Cat6Src::Imm(v) => v as u32,
    }
}

/// The largest global vector access done as one memory access (more: element by element).
const VEC_BYTES: usize = 32;

/// The largest span of addresses a wave's global load reads in one memory access.
const SPAN_BYTES: usize = 2048;

#[allow(clippy::too_many_arguments)]
pub(super) fn cat6(
    cx: &mut Ctx,
    wave: &mut Wave,
    c: &Cat6,
    pc: usize,
    exec: u64,
    w: usize,
    shared: &mut [u8],
    private: &mut [u8],
) -> Res<()> {
    let at = cx.at;
    let site = |l: usize| at.site(w, l);
    let fault = |l: usize, addr: u64, space, write| {
        let (group, lane) = site(l);
        ExecError::Fault { index: pc, group, lane, addr, space, write }
    };
    let addr64 = |wave: &Wave, r: Reg, l: usize| -> u64 {
        wave.regs[r.0 as usize][l] as u64 | (wave.regs[r.offset(1).0 as usize][l] as u64) << 32
    };
    match *c {
        Cat6::Ldg { ty, dst, addr, off, size } | Cat6::Ld { ty, dst, addr, off, size, .. } => {
            let space = match c {
                Cat6::Ld { space: Space::Private, .. } => MemSpace::Private,
                Cat6::Ld { .. } => MemSpace::Shared,
                _ => MemSpace::Global,
            };
            let half = ty.is_half();
            let eb = ty.mem_bytes() as usize;
            let pvt = cx.prog.meta.pvtmem as usize;
            let total = size as usize * eb;
            if space == MemSpace::Global && total <= VEC_BYTES && exec != 0 {
                // All the lanes' accesses as one memory access when they lie in a short span that
                // is all mapped (coalesced and broadcast loads); otherwise lane by lane below.
                let mut bases = [0u64; W];
                let (mut lo, mut hi) = (u64::MAX, 0u64);
                for l in lanes_of(exec) {
                    let b = addr64(wave, addr, l).wrapping_add(off as i64 as u64);
                    bases[l] = b;
                    lo = lo.min(b);
                    hi = hi.max(b);
                }
                let span = hi.checked_add(total as u64).map(|end| end - lo);
                if let Some(span) = span.filter(|&s| s <= SPAN_BYTES as u64) {
                    let mut buf = [0u8; SPAN_BYTES];
                    let buf = &mut buf[..span as usize];
                    if cx.mem.read(lo, buf).is_ok() {
                        for l in lanes_of(exec) {
                            let at = &buf[(bases[l] - lo) as usize..][..total];
                            for (k, e) in at.chunks_exact(eb).enumerate() {
                                let (r, v) = (dst.0.wrapping_add(k as u8), elem(e));
                                if half {
                                    wave.hset(r, l, v);
                                } else {
                                    wave.regs[r as usize][l] = v;
                                }
                            }
                        }
                        return Ok(());
                    }
                }
            }
            for l in lanes_of(exec) {
                let base = match space {
                    MemSpace::Global => addr64(wave, addr, l).wrapping_add(off as i64 as u64),
                    _ => (wave.regs[addr.0 as usize][l] as u64).wrapping_add(off as i64 as u64) & 0xffff_ffff,
                };
                // A global vector load is one memory access when all of it is mapped; otherwise
                // element by element below, which names the element that faults.
                let mut all = [0u8; VEC_BYTES];
                if space == MemSpace::Global && total <= VEC_BYTES && cx.mem.read(base, &mut all[..total]).is_ok() {
                    for k in 0..size as usize {
                        let v = load_elem(&all[k * eb..], ty);
                        let r = dst.0.wrapping_add(k as u8);
                        if half {
                            wave.hset(r, l, v);
                        } else {
                            wave.regs[r as usize][l] = v;
                        }
                    }
                    continue;
                }
                for k in 0..size as usize {
                    let a = base.wrapping_add((k * eb) as u64);
                    let mut buf = [0u8; 4];
                    match space {
                        MemSpace::Global => cx.mem.read(a, &mut buf[..eb]).map_err(|_| fault(l, a, space, false))?,
                        MemSpace::Shared => {
                            let s = shared.get(a as usize..a as usize + eb).ok_or(fault(l, a, space, false))?;
                            buf[..eb].copy_from_slice(s);
                        }
                        MemSpace::Private => {
                            if a as usize + eb > pvt {
                                return Err(fault(l, a, space, false));
                            }
                            let o = l * pvt + a as usize;
                            buf[..eb].copy_from_slice(&private[o..o + eb]);
                        }
                    }
                    let v = load_elem(&buf, ty);
                    let r = dst.0.wrapping_add(k as u8);
                    if half {
                        wave.hset(r, l, v);
                    } else {
                        wave.regs[r as usize][l] = v;
                    }
                }
            }
        }
        Cat6::Stg { ty, addr, off, src, size } | Cat6::St { ty, addr, off, src, size, .. } => {
            let space = match c {
                Cat6::St { space: Space::Private, .. } => MemSpace::Private,
                Cat6::St { .. } => MemSpace::Shared,
                _ => MemSpace::Global,
            };
            let half = ty.is_half();
            let eb = ty.mem_bytes() as usize;
            let pvt = cx.prog.meta.pvtmem as usize;
            for l in lanes_of(exec) {
                let base = match space {
                    MemSpace::Global => addr64(wave, addr, l).wrapping_add(off as i64 as u64),
                    _ => (wave.regs[addr.0 as usize][l] as u64).wrapping_add(off as i64 as u64) & 0xffff_ffff,
                };
                // A global vector store is one memory access when all of it is mapped (a
                // refused access writes nothing); otherwise element by element below.
                let total = size as usize * eb;
                if space == MemSpace::Global && total <= VEC_BYTES {
                    let mut all = [0u8; VEC_BYTES];
                    for k in 0..size as usize {
                        let r = src.0.wrapping_add(k as u8);
                        let v = if half { wave.hget(r, l) } else { wave.regs[r as usize][l] };
                        all[k * eb..(k + 1) * eb].copy_from_slice(&v.to_le_bytes()[..eb]);
                    }
                    if cx.mem.write(base, &all[..total]).is_ok() {
                        continue;
                    }
                }
                for k in 0..size as usize {
                    let a = base.wrapping_add((k * eb) as u64);
                    let r = src.0.wrapping_add(k as u8);
                    let v = if half { wave.hget(r, l) } else { wave.regs[r as usize][l] };
                    let bytes = v.to_le_bytes();
                    match space {
                        MemSpace::Global => cx.mem.write(a, &bytes[..eb]).map_err(|_| fault(l, a, space, true))?,
                        MemSpace::Shared => {
                            let s = shared.get_mut(a as usize..a as usize + eb).ok_or(fault(l, a, space, true))?;
                            s.copy_from_slice(&bytes[..eb]);
                        }
                        MemSpace::Private => {
                            if a as usize + eb > pvt {
                                return Err(fault(l, a, space, true));
                            }
                            let o = l * pvt + a as usize;
                            private[o..o + eb].copy_from_slice(&bytes[..eb]);
                        }
                    }
                }
            }
        }
        Cat6::LdgA { .. } | Cat6::StgA { .. } => {
            // address = src1 pair + (src2 << (shift + 2)) + (off << 2) (XML ir3-cat6.xml ldg.a display).
            let (ty, addr, index, shift, off, reg, size, store) = match *c {
                Cat6::LdgA { ty, dst, addr, index, shift, off, size } => {
                    (ty, addr, index, shift, off, dst, size, false)
                }
                Cat6::StgA { ty, addr, index, shift, off, src, size } => (ty, addr, index, shift, off, src, size, true),
                // Only LdgA/StgA reach this arm.
                _ => return Err(unsupported(pc, "ldg.a/stg.a")),
            };
            let half = ty.is_half();
            let eb = ty.mem_bytes() as usize;
            for l in lanes_of(exec) {
                let idx = wave.regs[index.0 as usize][l] as u64;
                let base = addr64(wave, addr, l).wrapping_add(idx << (shift + 2)).wrapping_add((off as u64) << 2);
                for k in 0..size as usize {
                    let a = base.wrapping_add((k * eb) as u64);
                    let r = reg.0.wrapping_add(k as u8);
                    if store {
                        let v = if half { wave.hget(r, l) } else { wave.regs[r as usize][l] };
                        cx.mem.write(a, &v.to_le_bytes()[..eb]).map_err(|_| fault(l, a, MemSpace::Global, true))?;
                    } else {
                        let mut buf = [0u8; 4];
                        cx.mem.read(a, &mut buf[..eb]).map_err(|_| fault(l, a, MemSpace::Global, false))?;
                        let v = load_elem(&buf, ty);
                        if half {
                            wave.hset(r, l, v);
                        } else {
                            wave.regs[r as usize][l] = v;
                        }
                    }
                }
            }
        }
        Cat6::AtomicL { op, ty, dst, src1, src2, .. } | Cat6::AtomicG { op, ty, dst, src1, src2, .. } => {
            if ty.mem_bytes() != 4 {
                return Err(unsupported(pc, "16/8-bit atomics"));
            }
            let global = matches!(c, Cat6::AtomicG { .. });
            let space = if global { MemSpace::Global } else { MemSpace::Shared };
            for l in lanes_of(exec) {
                let a = if global {
                    match src1 {
                        Cat6Src::Reg(r) => addr64(wave, r, l),
                        Cat6Src::Imm(v) => v as u64,
                    }
                } else {
                    src6(wave, src1, l) as u64
                };
                let v = src6(wave, src2, l);
                // cmpxchg: src2 holds the new value, src2+1 the comparison (Mesa collects
                // (data, compare)).
                let cmpv = match src2 {
                    Cat6Src::Reg(r) => wave.regs[r.offset(1).0 as usize][l],
                    Cat6Src::Imm(_) => 0,
                };
                let mut buf = [0u8; 4];
                if global {
                    cx.mem.read(a, &mut buf).map_err(|_| fault(l, a, space, false))?;
                } else {
                    buf.copy_from_slice(shared.get(a as usize..a as usize + 4).ok_or(fault(l, a, space, false))?);
                }
                let old = u32::from_le_bytes(buf);
                let new = atomic(op, ty, old, v, cmpv).to_le_bytes();
                if global {
                    cx.mem.write(a, &new).map_err(|_| fault(l, a, space, true))?;
                } else {
                    shared[a as usize..a as usize + 4].copy_from_slice(&new);
                }
                wave.regs[dst.0 as usize][l] = old;
            }
        }
        Cat6::Shfl { mode, ty, dst, src1, src2 } => {
            let half = ty.is_half();
            let mut v = [0u32; W];
            read_reg(wave, src1.0, half, &mut v);
            let mut out = v;
            for l in lanes_of(exec) {
                let dl = src6(wave, src2, l) as i64;
                let li = l as i64;
                let from = match mode {
                    1 => li ^ dl,
                    2 => li - dl,
                    3 => li + dl,
                    6 => (li - dl).rem_euclid(W as i64),
                    _ => (li + dl).rem_euclid(W as i64),
                };
                if (0..W as i64).contains(&from) {
                    out[l] = v[from as usize];
                }
            }
            write_reg(wave, dst.0, half, &out, exec);
        }
        Cat6::Ibo { op, typed, d, ty, type_size, val, coord, ibo, offset } => {
            if !typed || d > 2 || offset.is_some_and(|o| o != 0) {
                return Err(unsupported(pc, IBO_REFUSED));
            }
            let img = *cx.images.ibos.get(ibo as usize).ok_or(ExecError::Image {
                index: pc,
                what: "IBO",
                slot: ibo.into(),
                reason: "no such IBO descriptor was loaded (SP_CS_CONFIG NUAV / CP_LOAD_STATE6 ST6_UAV)",
            })?;
            let n = type_size as usize;
            if op == IboOp::Store && n != img.format.components() as usize {
                return Err(ExecError::Image {
                    index: pc,
                    what: "IBO",
                    slot: ibo.into(),
                    reason: "stib writes a different number of components than the image format has",
                });
            }
            let half = ty.is_half();
            let bpp = img.format.bpp() as usize;
            for l in lanes_of(exec) {
                let x = wave.regs[coord.0 as usize][l] as i32 as i64;
                let y = if d > 1 { wave.regs[coord.offset(1).0 as usize][l] as i32 as i64 } else { 0 };
                let at = img.texel_addr(x, y);
                let mut buf = [0u8; 16];
                match op {
                    IboOp::Store => {
                        let Some(a) = at else { continue };
                        let mut v = [0u32; 4];
                        for (k, x) in v.iter_mut().enumerate().take(n) {
                            let r = val.0.wrapping_add(k as u8);
                            *x = if half { wave.hget(r, l) } else { wave.regs[r as usize][l] };
                        }
                        img.encode(&v, ty, &mut buf[..bpp])
                            .map_err(|e| super::cat5::img_err(cx, e, pc, w, l, true, "IBO", ibo.into()))?;
                        cx.mem.write(a, &buf[..bpp]).map_err(|_| fault(l, a, MemSpace::Global, true))?;
                    }
                    IboOp::Load => {
                        let v = match at {
                            Some(a) => {
                                cx.mem.read(a, &mut buf[..bpp]).map_err(|_| fault(l, a, MemSpace::Global, false))?;
                                img.decode(&buf[..bpp], ty)
                                    .map_err(|e| super::cat5::img_err(cx, e, pc, w, l, false, "IBO", ibo.into()))?
                            }
                            None => [0; 4],
                        };
                        for (k, x) in v.iter().enumerate().take(n) {
                            let r = val.0.wrapping_add(k as u8);
                            if half {
                                wave.hset(r, l, *x);
                            } else {
                                wave.regs[r as usize][l] = *x;
                            }
                        }
                    }
                }
            }
        }
        Cat6::GetId { which, dst, .. } => {
            let mut v = [0u32; W];
            for (l, x) in v.iter_mut().enumerate() {
                *x = match which {
                    GetId::Fiber => l as u32,
                    GetId::Wave => w as u32,
                    GetId::Sp => 0,
                };
            }
            write_reg(wave, dst.0, false, &v, exec);
        }
    }
    Ok(())
}
