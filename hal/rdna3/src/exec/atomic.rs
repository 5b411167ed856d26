//! Atomics (LDS `ds_*`, `global_atomic_*`, `flat_atomic_*`) and the LDS instructions that move
//! data between lanes or address by lane (`ds_swizzle_b32`, `ds_permute_b32`, `ds_bpermute_b32`,
//! `ds_{load,store}_addtid_b32`, `ds_append`, `ds_consume`), as the RDNA3 guide's pseudo-code
//! (ch. 16.13 FLAT/GLOBAL, 16.15 LDS) defines them.
//!
//! An atomic runs lane by lane in lane order, each lane's read-modify-write whole before the
//! next lane's (an order the hardware may choose). Global ones go through [`Memory::atomic`],
//! which a memory shared by threads makes atomic; the LDS belongs to one work-group, run by one
//! thread. The old value goes to VDST when the op returns it: `_rtn` in an LDS mnemonic, the GLC
//! bit of a global or flat one. A lane whose access is outside the LDS or memory stops the
//! instruction there with a fault naming it; the lanes before it are done.

use super::{Cx, Fault, FaultKind, Space, Step, Wave};

/// What an atomic computes from the memory value `tmp`, DATA (`src`) and DATA2 (`d2`: the mask
/// OR'd in by mskor, the compare value of cmpswap, the addend of wrap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Atom {
    Add,
    Sub,
    Rsub,
    Inc,
    Dec,
    MinI,
    MaxI,
    MinU,
    MaxU,
    And,
    Or,
    Xor,
    Mskor,
    Swap,
    Cmpswap,
    CmpswapF,
    MinF,
    MaxF,
    AddF,
    Wrap,
    Csub,
}

/// An atomic: its op, 64-bit (else 32), whether it returns the old value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AtomOp {
    pub op: Atom,
    pub wide: bool,
    pub rtn: bool,
    /// FLAT: an address in an aperture reaches the LDS or the lane's scratch.
    pub flat: bool,
}

/// `{op}[_rtn]_{type}` (what follows `ds_`, `global_atomic_`, `flat_atomic_`): the op, 64-bit,
/// and `_rtn`.
pub(super) fn parse(rest: &str) -> Option<(Atom, bool, bool)> {
    use Atom::*;
    let (body, ty) = rest.rsplit_once('_')?;
    let wide = match ty {
        "u32" | "i32" | "b32" | "f32" => false,
        "u64" | "i64" | "b64" | "f64" => true,
        _ => return None,
    };
    let (float, signed) = (ty.starts_with('f'), ty.starts_with('i'));
    let (body, rtn) = match body.strip_suffix("_rtn") {
        Some(b) => (b, true),
        None => (body, false),
    };
    let op = match body {
        "add" if float => AddF,
        "add" => Add,
        "sub" => Sub,
        "rsub" => Rsub,
        "inc" => Inc,
        "dec" => Dec,
        "min" if float => MinF,
        "min" if signed => MinI,
        "min" => MinU,
        "max" if float => MaxF,
        "max" if signed => MaxI,
        "max" => MaxU,
        "and" => And,
        "or" => Or,
        "xor" => Xor,
        "mskor" => Mskor,
        "storexchg" | "swap" => Swap,
        "cmpstore" | "cmpswap" if float => CmpswapF,
        "cmpstore" | "cmpswap" => Cmpswap,
        "wrap" => Wrap,
        "csub" => Csub,
        _ => return None,
    };
    Some((op, wide, rtn))
}

/// The value an atomic leaves in memory (32 or 64 bits).
pub(super) fn apply(op: Atom, wide: bool, tmp: u64, src: u64, d2: u64) -> u64 {
    use Atom::*;
    let mask = if wide { u64::MAX } else { 0xffff_ffff };
    let (tmp, src, d2) = (tmp & mask, src & mask, d2 & mask);
    // CAST (both): the value as a signed integer of its width.
    let int = |x: u64| if wide { x as i64 } else { i64::from(x as u32 as i32) };
    // CAST: an f32 is exact in f64; comparisons of the two agree.
    let fl = |x: u64| if wide { f64::from_bits(x) } else { f64::from(f32::from_bits(x as u32)) };
    let r = match op {
        Add => tmp.wrapping_add(src),
        Sub => tmp.wrapping_sub(src),
        Rsub => src.wrapping_sub(tmp),
        Inc => {
            if tmp >= src {
                0
            } else {
                tmp + 1
            }
        }
        Dec => {
            if tmp == 0 || tmp > src {
                src
            } else {
                tmp - 1
            }
        }
        MinI => {
            if int(src) < int(tmp) {
                src
            } else {
                tmp
            }
        }
        MaxI => {
            if int(src) >= int(tmp) {
                src
            } else {
                tmp
            }
        }
        MinU => src.min(tmp),
        MaxU => src.max(tmp),
        And => tmp & src,
        Or => tmp | src,
        Xor => tmp ^ src,
        Mskor => (tmp & !src) | d2,
        Swap => src,
        Cmpswap => {
            if tmp == d2 {
                src
            } else {
                tmp
            }
        }
        // Float compares: a NaN equals nothing and orders with nothing, +0 == −0.
        CmpswapF => {
            if fl(tmp) == fl(d2) {
                src
            } else {
                tmp
            }
        }
        MinF => {
            if fl(src) < fl(tmp) {
                src
            } else {
                tmp
            }
        }
        MaxF => {
            if fl(src) > fl(tmp) {
                src
            } else {
                tmp
            }
        }
        // CAST: f32 bits (there is no 64-bit float add).
        AddF => u64::from((f32::from_bits(tmp as u32) + f32::from_bits(src as u32)).to_bits()),
        Wrap => {
            if tmp >= src {
                tmp - src
            } else {
                tmp.wrapping_add(d2)
            }
        }
        Csub => tmp.saturating_sub(src),
    };
    r & mask
}

/// VGPR `r` (and `r + 1` when `wide`) of `lane`.
fn reg(w: &Wave, r: u32, lane: usize, wide: bool) -> u64 {
    let lo = u64::from(w.vgpr(r, lane));
    if wide { lo | u64::from(w.vgpr(r + 1, lane)) << 32 } else { lo }
}

fn set_reg(w: &mut Wave, r: u32, lane: usize, wide: bool, x: u64) {
    // CAST (both): the low and high dwords.
    w.set_vgpr(r, lane, x as u32);
    if wide {
        w.set_vgpr(r + 1, lane, (x >> 32) as u32);
    }
}

/// The lanes of `exec`, lowest first.
fn each(exec: u64) -> impl Iterator<Item = usize> {
    let mut e = exec;
    core::iter::from_fn(move || {
        if e == 0 {
            return None;
        }
        // CAST: a lane < 64.
        let l = e.trailing_zeros() as usize;
        e &= e - 1;
        Some(l)
    })
}

/// The read-modify-write of `n` (4 or 8) LDS bytes at `at`: the old value, `None` outside.
fn lds_rmw(lds: &mut [u8], at: u64, n: usize, f: impl FnOnce(u64) -> u64) -> Option<u64> {
    let a = usize::try_from(at).ok()?;
    let s = lds.get_mut(a..a.checked_add(n)?)?;
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(s);
    let old = u64::from_le_bytes(b);
    s.copy_from_slice(&f(old).to_le_bytes()[..n]);
    Some(old)
}

/// The 16-bit offset of a DS instruction (offset1:offset0).
fn ds_offset(w0: u32) -> u32 {
    w0 & 0xffff
}

/// How a DS instruction that is not a plain load or store moves its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lds {
    /// An atomic at ADDR + offset.
    Atomic(AtomOp),
    /// ds_storexchg_2addr(_stride64)_rtn: two swaps at offset0 and offset1 × the element size
    /// (× 64).
    Xchg2 {
        wide: bool,
        stride: u32,
    },
    /// ds_condxchg32_rtn_b64.
    Condxchg,
    /// ds_append (+) / ds_consume (−): one counter at M0[15:0] + offset.
    Append(bool),
    /// ds_store_addtid_b32 (store) / ds_load_addtid_b32: M0[15:0] + offset + lane · 4.
    Addtid(bool),
    Swizzle,
    Permute,
    Bpermute,
}

/// The `Lds` of a DS mnemonic, if it is one.
pub(super) fn lds(name: &str) -> Option<Lds> {
    let rest = name.strip_prefix("ds_")?;
    Some(match rest {
        "swizzle_b32" => Lds::Swizzle,
        "permute_b32" => Lds::Permute,
        "bpermute_b32" => Lds::Bpermute,
        "append" => Lds::Append(true),
        "consume" => Lds::Append(false),
        "store_addtid_b32" => Lds::Addtid(true),
        "load_addtid_b32" => Lds::Addtid(false),
        "condxchg32_rtn_b64" => Lds::Condxchg,
        "storexchg_2addr_rtn_b32" => Lds::Xchg2 { wide: false, stride: 1 },
        "storexchg_2addr_rtn_b64" => Lds::Xchg2 { wide: true, stride: 1 },
        "storexchg_2addr_stride64_rtn_b32" => Lds::Xchg2 { wide: false, stride: 64 },
        "storexchg_2addr_stride64_rtn_b64" => Lds::Xchg2 { wide: true, stride: 64 },
        _ => {
            let (op, wide, rtn) = parse(rest)?;
            Lds::Atomic(AtomOp { op, wide, rtn, flat: false })
        }
    })
}

impl Cx<'_, '_> {
    fn lds_fault(&self, step: &Step, lane: usize, at: u64, write: bool) -> Fault {
        // CAST: the LDS size fits u32 (at most 64 KiB).
        self.fault(step, Some(lane), at, FaultKind::Lds { write, size: self.lds.len() as u32 })
    }

    /// A DS instruction of kind `k` over the lanes EXEC enables.
    pub(super) fn lds_op(&mut self, w: &mut Wave, step: &Step, k: Lds) -> Result<(), Fault> {
        let (w0, w1) = (step.inst.words[0], step.inst.words[1]);
        let (addr, d0, d1, vdst) = (w1 & 0xff, (w1 >> 8) & 0xff, (w1 >> 16) & 0xff, w1 >> 24);
        let exec = w.exec();
        let off = u64::from(ds_offset(w0));
        match k {
            Lds::Atomic(a) => {
                let n = if a.wide { 8 } else { 4 };
                for lane in each(exec) {
                    let at = u64::from(w.vgpr(addr, lane)) + off;
                    let (src, d2) = (reg(w, d0, lane, a.wide), reg(w, d1, lane, a.wide));
                    let Some(old) = lds_rmw(self.lds, at, n, |t| apply(a.op, a.wide, t, src, d2)) else {
                        return Err(self.lds_fault(step, lane, at, true));
                    };
                    if a.rtn {
                        set_reg(w, vdst, lane, a.wide, old);
                    }
                }
            }
            Lds::Xchg2 { wide, stride } => {
                let n = if wide { 8 } else { 4 };
                // CAST: 4 or 8.
                let step_bytes = n as u64 * u64::from(stride);
                let (o0, o1) = (u64::from(w0 & 0xff) * step_bytes, u64::from((w0 >> 8) & 0xff) * step_bytes);
                for lane in each(exec) {
                    let base = u64::from(w.vgpr(addr, lane));
                    let (x0, x1) = (reg(w, d0, lane, wide), reg(w, d1, lane, wide));
                    let mut old = [0u64; 2];
                    for (k, (at, x)) in [(base + o0, x0), (base + o1, x1)].into_iter().enumerate() {
                        match lds_rmw(self.lds, at, n, |_| x) {
                            Some(v) => old[k] = v,
                            None => return Err(self.lds_fault(step, lane, at, true)),
                        }
                    }
                    let half = if wide { 2 } else { 1 };
                    set_reg(w, vdst, lane, wide, old[0]);
                    set_reg(w, vdst + half, lane, wide, old[1]);
                }
            }
            Lds::Condxchg => {
                for lane in each(exec) {
                    // ADDR0 = (ADDR + offset) & 0xfff8; each half written (its bit 31 cleared)
                    // when its bit 31 is set; the old dwords returned.
                    let a0 = (u64::from(w.vgpr(addr, lane)) + off) & 0xfff8;
                    let data = reg(w, d0, lane, true);
                    let mut old = 0u64;
                    for k in 0..2 {
                        // CAST: the half's dword.
                        let x = (data >> (32 * k)) as u32;
                        let at = a0 + 4 * k;
                        let put = |t: u64| if x >> 31 == 1 { u64::from(x & 0x7fff_ffff) } else { t };
                        match lds_rmw(self.lds, at, 4, put) {
                            Some(v) => old |= v << (32 * k),
                            None => return Err(self.lds_fault(step, lane, at, true)),
                        }
                    }
                    set_reg(w, vdst, lane, true, old);
                }
            }
            Lds::Append(add) => {
                if exec != 0 {
                    // One add (subtract) of the active lane count, its old value to every lane.
                    let at = u64::from(w.s[125] & 0xffff) + off;
                    let count = u64::from(exec.count_ones());
                    let f = |t: u64| if add { t.wrapping_add(count) } else { t.wrapping_sub(count) };
                    let first = each(exec).next().unwrap_or(0);
                    let Some(old) = lds_rmw(self.lds, at, 4, f) else {
                        return Err(self.lds_fault(step, first, at, true));
                    };
                    for lane in each(exec) {
                        // CAST: a dword.
                        w.set_vgpr(vdst, lane, old as u32);
                    }
                }
            }
            Lds::Addtid(store) => {
                for lane in each(exec) {
                    // CAST: a lane < 64.
                    let at = u64::from(w.s[125] & 0xffff) + off + 4 * lane as u64;
                    let a = usize::try_from(at).unwrap_or(usize::MAX);
                    let Some(s) = self.lds.get_mut(a..a.saturating_add(4)) else {
                        return Err(self.lds_fault(step, lane, at, store));
                    };
                    if store {
                        s.copy_from_slice(&w.vgpr(d0, lane).to_le_bytes());
                    } else {
                        let x = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                        w.set_vgpr(vdst, lane, x);
                    }
                }
            }
            Lds::Swizzle => self.swizzle(w, ds_offset(w0), d0, vdst),
            Lds::Permute | Lds::Bpermute => {
                // The lane an address names: (ADDR + offset) / 4 mod 32 — "regardless of wave
                // size": a wave64 permutes inside each half of 32 lanes, as it runs them.
                let lanes = w.lanes;
                let pick = |w: &Wave, i: usize| {
                    // CAST: a lane index below 32.
                    (i & !31) | ((w.vgpr(addr, i).wrapping_add(ds_offset(w0)) / 4) % 32) as usize
                };
                let mut out = [0u32; 64];
                if k == Lds::Bpermute {
                    for i in 0..lanes {
                        let src = pick(w, i);
                        if exec >> src & 1 == 1 {
                            out[i] = w.vgpr(d0, src);
                        }
                    }
                } else {
                    // Forward: each active lane sends its data to the lane it names (the
                    // highest-numbered sender wins).
                    for i in each(exec) {
                        out[pick(w, i)] = w.vgpr(d0, i);
                    }
                }
                for lane in each(exec) {
                    w.set_vgpr(vdst, lane, out[lane]);
                }
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        Ok(())
    }

    /// DS_SWIZZLE_B32: each active lane gets DATA0 of the lane `offset` names (0 from a lane
    /// EXEC disables); no LDS access.
    fn swizzle(&mut self, w: &mut Wave, offset: u32, data: u32, vdst: u32) {
        let exec = w.exec();
        let lanes = w.lanes;
        let src = |i: usize| -> usize {
            // CAST (the masks and amounts): 5-bit fields.
            if offset >= 0xe000 {
                // FFT: bit-reversed within the 32, shifted by the mask's population.
                let mask = (offset & 0x1f) as usize;
                let j = ((i & 0x1f) as u32).reverse_bits() >> 27;
                ((j >> mask.count_ones()) as usize) | (i & mask) | (i & 0x20)
            } else if offset >= 0xc000 {
                // Rotate left (offset[10] clear) or right by offset[9:5], the masked bits kept.
                let mask = (offset & 0x1f) as usize;
                let r = ((offset >> 5) & 0x1f) as usize;
                let moved = if offset >> 10 & 1 == 1 { i + 32 - r } else { i + r };
                (i & mask) | (moved & 0x1f & !mask) | (i & 0x20)
            } else if offset >> 15 == 1 {
                // Within each 4 lanes: lane k of the group takes offset[2k+1:2k].
                (i & !3) | ((offset >> (2 * (i & 3))) & 3) as usize
            } else {
                let (and, or, xor) =
                    ((offset & 0x1f) as usize, ((offset >> 5) & 0x1f) as usize, ((offset >> 10) & 0x1f) as usize);
                ((((i & 0x1f) & and) | or) ^ xor) | (i & 0x20)
            }
        };
        let mut out = [0u32; 64];
        for i in 0..lanes {
            let j = src(i);
            if j < lanes && exec >> j & 1 == 1 {
                out[i] = w.vgpr(data, j);
            }
        }
        for lane in each(exec) {
            w.set_vgpr(vdst, lane, out[lane]);
        }
    }

    /// A global or flat atomic (the address as the loads and stores form it), returning the old
    /// value when `a.rtn` (GLC).
    pub(super) fn global_atomic(&mut self, w: &mut Wave, step: &Step, a: AtomOp) -> Result<(), Fault> {
        let w1 = step.inst.words[1];
        let (vdata, vdst) = ((w1 >> 8) & 0xff, w1 >> 24);
        let n = if a.wide { 8 } else { 4 };
        let exec = w.exec();
        for lane in each(exec) {
            let at = super::global_addr(w, &step.inst, lane);
            // cmpswap's DATA is {src, cmp}: the compare value in the register(s) after.
            let src = reg(w, vdata, lane, a.wide);
            let cmp = if matches!(a.op, Atom::Cmpswap | Atom::CmpswapF) {
                reg(w, vdata + if a.wide { 2 } else { 1 }, lane, a.wide)
            } else {
                0
            };
            let f = |t| apply(a.op, a.wide, t, src, cmp);
            let done = match super::aperture(a.flat, at) {
                None => self.mem.atomic(at, n, &f).ok_or(FaultKind::Memory { write: true, bytes: n as u32 }),
                // CAST: the LDS size fits u32.
                Some((Space::Lds, o)) => {
                    lds_rmw(self.lds, o, n, f).ok_or(FaultKind::Lds { write: true, size: self.lds.len() as u32 })
                }
                Some((_, o)) => {
                    let pb = w.private_bytes;
                    let seg = w.private.get_mut(lane * pb..(lane + 1) * pb).unwrap_or_default();
                    // CAST: the private size fits u32.
                    lds_rmw(seg, o, n, f).ok_or(FaultKind::Scratch { write: true, size: pb as u32 })
                }
            };
            let old = match done {
                Ok(old) => old,
                Err(kind) => return Err(self.fault(step, Some(lane), at, kind)),
            };
            if a.rtn {
                set_reg(w, vdst, lane, a.wide, old);
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        Ok(())
    }
}

impl Cx<'_, '_> {
    /// GLOBAL_LOAD_ADDTID_B32 / GLOBAL_STORE_ADDTID_B32: SADDR + offset + lane · 4 (the VGPR
    /// address unused; `off` as SADDR reads 0).
    pub(super) fn global_addtid(&mut self, w: &mut Wave, step: &Step, store: bool) -> Result<(), Fault> {
        let (w0, w1) = (step.inst.words[0], step.inst.words[1]);
        let saddr = (w1 >> 16) & 0x7f;
        let base = if saddr == 124 { 0 } else { w.mask_pair(saddr) };
        let off = u64::from(w0 & 0xfff);
        let (vdata, vdst) = ((w1 >> 8) & 0xff, w1 >> 24);
        let exec = w.exec();
        for lane in each(exec) {
            // CAST: a lane < 64.
            let at = base.wrapping_add(off).wrapping_add(4 * lane as u64);
            let ok = if store {
                self.mem.write(at, &w.vgpr(vdata, lane).to_le_bytes())
            } else {
                let mut b = [0u8; 4];
                let ok = self.mem.read(at, &mut b);
                if ok {
                    w.set_vgpr(vdst, lane, u32::from_le_bytes(b));
                }
                ok
            };
            if !ok {
                return Err(self.fault(step, Some(lane), at, FaultKind::Memory { write: store, bytes: 4 }));
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ops_are_the_guides() {
        use Atom::*;
        let f = |x: f32| u64::from(x.to_bits());
        let cases: &[(Atom, bool, u64, u64, u64, u64)] = &[
            (Add, false, 0xffff_ffff, 2, 0, 1),
            (Sub, false, 1, 2, 0, 0xffff_ffff),
            (Rsub, false, 1, 2, 0, 1),
            (Inc, false, 5, 5, 0, 0),
            (Inc, false, 4, 5, 0, 5),
            (Dec, false, 0, 7, 0, 7),
            (Dec, false, 9, 7, 0, 7),
            (Dec, false, 3, 7, 0, 2),
            (MinI, false, 5, 0xffff_fffe, 0, 0xffff_fffe),
            (MaxI, false, 5, 0xffff_fffe, 0, 5),
            (MinU, false, 5, 0xffff_fffe, 0, 5),
            (MaxU, true, 5, u64::MAX, 0, u64::MAX),
            (MinI, true, 5, u64::MAX, 0, u64::MAX),
            (Mskor, false, 0xff00, 0x0f00, 0x000f, 0xf00f),
            (Swap, true, 1, 2, 0, 2),
            (Cmpswap, false, 7, 9, 7, 9),
            (Cmpswap, false, 7, 9, 8, 7),
            (CmpswapF, false, f(0.0), 9, f(-0.0), 9),
            (CmpswapF, false, f(f32::NAN), 9, f(f32::NAN), f(f32::NAN)),
            (MinF, false, f(1.0), f(-2.0), 0, f(-2.0)),
            (MinF, false, f(1.0), f(f32::NAN), 0, f(1.0)),
            (MaxF, false, f(1.0), f(f32::NAN), 0, f(1.0)),
            (MaxF, true, 1.0f64.to_bits(), 2.5f64.to_bits(), 0, 2.5f64.to_bits()),
            (AddF, false, f(1.5), f(2.25), 0, f(3.75)),
            (Wrap, false, 5, 3, 100, 2),
            (Wrap, false, 2, 3, 100, 102),
            (Csub, false, 2, 3, 0, 0),
            (Csub, false, 5, 3, 0, 2),
        ];
        for &(op, wide, tmp, src, d2, want) in cases {
            assert_eq!(apply(op, wide, tmp, src, d2), want, "{op:?} wide {wide} ({tmp:#x}, {src:#x}, {d2:#x})");
        }
    }

    #[test]
    fn mnemonics_parse_into_their_op() {
        assert_eq!(parse("add_rtn_u32"), Some((Atom::Add, false, true)));
        assert_eq!(parse("cmpstore_rtn_f64"), Some((Atom::CmpswapF, true, true)));
        assert_eq!(parse("min_i64"), Some((Atom::MinI, true, false)));
        assert_eq!(parse("csub_u32"), Some((Atom::Csub, false, false)));
        assert_eq!(parse("load_b32"), None);
        assert_eq!(lds("ds_swizzle_b32"), Some(Lds::Swizzle));
        assert_eq!(
            lds("ds_storexchg_rtn_b64"),
            Some(Lds::Atomic(AtomOp { op: Atom::Swap, wide: true, rtn: true, flat: false }))
        );
    }
}
