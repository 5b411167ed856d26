//! Vector memory (global, flat, scratch and LDS loads and stores), resolved at load: the
//! address form, offsets and registers of each instruction named once ([`VMem`]), then every
//! lane EXEC enables, in lane order, addressed and accessed — whole dwords gathered from memory
//! and written a VGPR at a time, the rest (sub-dword, d16, scratch, two-address LDS) through
//! `Cx::access`, the per-lane path (`Cx::memop`) itself. As there, a lane that faults stops the
//! instruction with the lanes before it done (their loads written, their stores in memory).

use super::lanes::{full, vreg, write};
use super::{Cx, Ext, Fault, FaultKind, MemOp, Space, Step, Wave};
use crate::decode::{Encoding, Inst};

/// Where a lane's address comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Addr {
    /// The 64-bit address in VGPRs `v`, `v + 1` (flat, or global without `saddr`).
    V64(u8),
    /// The SGPR pair `s` plus the 32-bit VGPR offset `v` (global with `saddr`).
    Sv { s: u8, v: u8 },
    /// Scratch: the VGPR `v` (when SVE), plus the SGPR `s` (when not null), 32 bits wide.
    Scratch { v: Option<u8>, s: Option<u8> },
    /// LDS: the VGPR `v`.
    Lds(u8),
}

/// A vector memory instruction, resolved.
#[derive(Clone, Copy, Debug)]
pub(super) struct VMem {
    pub m: MemOp,
    pub addr: Addr,
    /// The byte offset added to the address (LDS: of the first access).
    pub off: u64,
    /// `ds_*_2addr`: the second access's byte offset.
    pub off2: u64,
    pub vdst: u8,
    pub vdata: u8,
    /// `ds_*_2addr`: the second access's data VGPR.
    pub data1: u8,
}

/// `Sem::Mem(m)` of `i` as `Cx::memop` reads its fields.
pub(super) fn vmem(i: &Inst, m: MemOp) -> VMem {
    let (w0, w1) = (i.words[0], i.words[1]);
    // CAST (the register fields): 8 bits wide, or 7 for SGPRs.
    let (vdst, vdata) = ((w1 >> 24) as u8, ((w1 >> 8) & 0xff) as u8);
    let raw = w0 & 0x1fff;
    // CAST: a 13-bit signed offset, sign-extended to 64 bits.
    let signed = i64::from(((raw << 19) as i32) >> 19) as u64;
    let (addr, off, off2, data1) = match m.space {
        Space::Global => {
            let saddr = (w1 >> 16) & 0x7f;
            let vaddr = (w1 & 0xff) as u8;
            if i.enc == Encoding::Flat {
                (Addr::V64(vaddr), u64::from(raw), 0, 0)
            } else if saddr == 124 {
                (Addr::V64(vaddr), signed, 0, 0)
            } else {
                (Addr::Sv { s: saddr as u8, v: vaddr }, signed, 0, 0)
            }
        }
        Space::Scratch => {
            let saddr = (w1 >> 16) & 0x7f;
            let sve = (w1 >> 23) & 1 == 1;
            let v = sve.then_some((w1 & 0xff) as u8);
            let s = (saddr != 124).then_some(saddr as u8);
            (Addr::Scratch { v, s }, signed, 0, 0)
        }
        Space::Lds => {
            let (o0, o1) = (u64::from(w0 & 0xff), u64::from((w0 >> 8) & 0xff));
            let a = Addr::Lds((w1 & 0xff) as u8);
            match m.two {
                Some(stride) => {
                    let s = u64::from(m.bytes) * u64::from(stride);
                    (a, o0 * s, o1 * s, ((w1 >> 16) & 0xff) as u8)
                }
                None => (a, o0 | o1 << 8, 0, 0),
            }
        }
    };
    VMem { m, addr, off, off2, vdst, vdata, data1 }
}

impl Cx<'_, '_> {
    /// `op` over the lanes EXEC enables.
    #[inline(always)]
    pub(super) fn vmem<const N: usize>(&mut self, w: &mut Wave, step: &Step, op: &VMem) -> Result<(), Fault> {
        let exec = w.exec() & full::<N>();
        let m = op.m;
        // Every lane's address (each reads only its own lane's registers, which only its own
        // access writes, so all of them first is as lane by lane).
        let base: [u64; N] = match op.addr {
            Addr::V64(v) => {
                let (lo, hi) = (vreg::<N>(w, v), vreg::<N>(w, v.wrapping_add(1)));
                core::array::from_fn(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32)
            }
            Addr::Sv { s, v } => {
                let (sb, vo) = (w.mask_pair(u32::from(s)), vreg::<N>(w, v));
                core::array::from_fn(|l| sb.wrapping_add(u64::from(vo[l])))
            }
            Addr::Scratch { v, s } => {
                let so = s.map_or(0, |s| u64::from(w.s[usize::from(s) & 0x7f]));
                let vo = v.map(|v| vreg::<N>(w, v));
                core::array::from_fn(|l| vo.map_or(0, |vo| u64::from(vo[l])).wrapping_add(so))
            }
            Addr::Lds(v) => {
                let a = vreg::<N>(w, v);
                core::array::from_fn(|l| u64::from(a[l]))
            }
        };
        let first = |l: usize| match m.space {
            Space::Scratch => base[l].wrapping_add(op.off) & 0xffff_ffff,
            _ => base[l].wrapping_add(op.off),
        };
        if m.ext == Ext::Plain && m.bytes.is_multiple_of(4) && m.space != Space::Scratch && m.two.is_none() && !m.flat {
            return self.plain::<N>(w, step, exec, m, &first, op.vdata, op.vdst);
        }
        if m.flat {
            // FLAT: each lane's address may be in an aperture (no second access).
            let mut e = exec;
            while e != 0 {
                // CAST: a lane < 64.
                let lane = e.trailing_zeros() as usize;
                e &= e - 1;
                self.access_flat(w, step, lane, m, first(lane), u32::from(op.vdata), u32::from(op.vdst))?;
            }
            self.st.lane_insts += u64::from(exec.count_ones());
            return Ok(());
        }
        let mut e = exec;
        while e != 0 {
            // CAST: a lane < 64.
            let lane = e.trailing_zeros() as usize;
            e &= e - 1;
            self.access(w, step, lane, m, first(lane), u32::from(op.vdata), u32::from(op.vdst))?;
            if m.two.is_some() {
                let dst = op.vdst.wrapping_add(m.bytes / 4);
                self.access(w, step, lane, m, base[lane].wrapping_add(op.off2), u32::from(op.data1), u32::from(dst))?;
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        Ok(())
    }

    /// Whole dwords (global or LDS, one access a lane): `Cx::access` for `Ext::Plain`, the
    /// loaded dwords gathered (global: by the memory, a wave at a time) and written a VGPR at a
    /// time.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn plain<const N: usize>(
        &mut self,
        w: &mut Wave,
        step: &Step,
        exec: u64,
        m: MemOp,
        addr: impl Fn(usize) -> u64,
        data: u8,
        dst: u8,
    ) -> Result<(), Fault> {
        let n = usize::from(m.bytes).min(16);
        let dwords = n / 4;
        let mut vals = [[0u32; N]; 4];
        if m.store {
            for k in 0..dwords {
                // CAST: k < 4.
                vals[k] = *vreg::<N>(w, data.wrapping_add(k as u8));
            }
        }
        let fault = if m.space == Space::Lds {
            self.plain_lds::<N>(exec, m, &addr, &mut vals)
        } else {
            let addrs: [u64; N] = core::array::from_fn(&addr);
            let r = if m.store {
                self.mem.scatter_dwords(&addrs, exec, dwords, vals.as_flattened())
            } else {
                self.mem.gather_dwords(&addrs, exec, dwords, vals.as_flattened_mut())
            };
            r.err().map(|l| (l, addrs[l % N]))
        };
        // The lanes that loaded (all, or those before the one that faulted).
        let done = match fault {
            Some((lane, _)) => exec & ((1u64 << lane.min(63)) - 1),
            None => exec,
        };
        if !m.store {
            for k in 0..dwords {
                // CAST: k < 4.
                write::<N>(w, dst.wrapping_add(k as u8), done, &vals[k]);
            }
        }
        if let Some((lane, a)) = fault {
            // CAST: at most 16 bytes; the LDS size fits u32.
            let kind = match m.space {
                Space::Lds => FaultKind::Lds { write: m.store, size: self.lds.len() as u32 },
                _ => FaultKind::Memory { write: m.store, bytes: n as u32 },
            };
            return Err(self.fault(step, Some(lane), a, kind));
        }
        self.st.lane_insts += u64::from(exec.count_ones());
        Ok(())
    }

    /// The LDS accesses of `plain`, lane by lane: the faulting lane and address, if one faults.
    #[inline(always)]
    fn plain_lds<const N: usize>(
        &mut self,
        exec: u64,
        m: MemOp,
        addr: &impl Fn(usize) -> u64,
        vals: &mut [[u32; N]; 4],
    ) -> Option<(usize, u64)> {
        let n = usize::from(m.bytes).min(16);
        let mut e = exec;
        while e != 0 {
            // CAST: a lane < 64.
            let lane = e.trailing_zeros() as usize;
            e &= e - 1;
            let a = addr(lane);
            let at = usize::try_from(a).unwrap_or(usize::MAX);
            let Some(s) = self.lds.get_mut(at..at.saturating_add(n)) else { return Some((lane, a)) };
            for (k, c) in s.chunks_exact_mut(4).enumerate() {
                if m.store {
                    c.copy_from_slice(&vals[k][lane].to_le_bytes());
                } else {
                    vals[k][lane] = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            }
        }
        None
    }
}
