//! VALU ops whose lanes are not independent, or whose registers are chosen at run time: the
//! masked bit counts (`v_mbcnt_lo/hi_u32_b32`, which read the lane's own number), the lane
//! permutations (`v_permlane16_b32`, `v_permlanex16_b32`, `v_permlane64_b32`), and the moves
//! and swaps of VGPRs indexed by M0 (`v_movrels/movreld/movrelsd(_2)_b32`, `v_swap_b32`,
//! `v_swaprel_b32`), per the RDNA3 guide's pseudo-code (ch. 16.8 VOP1, 16.12 VOP3).
//!
//! An M0-relative index past the 256 VGPRs reads 0 and writes nothing (the interpreter's waves
//! hold 256 VGPRs; what a hardware wave reads past its allocation is not modelled either way).

use super::valu::T;
use super::{Cx, Step, Wave};
use crate::decode::Encoding;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cross {
    /// `v_mbcnt_hi_u32_b32` (true) / `_lo` (false).
    Mbcnt(bool),
    /// `v_permlanex16_b32` (true) / `v_permlane16_b32`.
    Permlane16(bool),
    Permlane64,
    Swap,
    Swaprel,
    Movrels,
    Movreld,
    Movrelsd,
    Movrelsd2,
    /// `v_mov_b16_e32`, whose VGPR fields name a half: bit 7 the high one (`v1.h`), bits 6:0
    /// the register (LLVM 19's only such gfx1100 opcode).
    MovB16,
    /// `v_mqsad_u32_u8`: four masked SADs of S0's byte windows against S1, each added to a
    /// dword of the 128-bit S2 (VGPRs), into the 128-bit D.
    Mqsad,
}

/// The `Cross` op of a VALU mnemonic (`_e32`/`_e64` stripped).
pub(super) fn cross(name: &str) -> Option<Cross> {
    let base = name.strip_suffix("_e32").or_else(|| name.strip_suffix("_e64")).unwrap_or(name);
    Some(match base {
        "v_mbcnt_lo_u32_b32" => Cross::Mbcnt(false),
        "v_mbcnt_hi_u32_b32" => Cross::Mbcnt(true),
        "v_permlane16_b32" => Cross::Permlane16(false),
        "v_permlanex16_b32" => Cross::Permlane16(true),
        "v_permlane64_b32" => Cross::Permlane64,
        "v_swap_b32" => Cross::Swap,
        "v_swaprel_b32" => Cross::Swaprel,
        "v_movrels_b32" => Cross::Movrels,
        "v_movreld_b32" => Cross::Movreld,
        "v_movrelsd_b32" => Cross::Movrelsd,
        "v_movrelsd_2_b32" => Cross::Movrelsd2,
        "v_mov_b16" if name.ends_with("_e32") => Cross::MovB16,
        "v_mqsad_u32_u8" => Cross::Mqsad,
        _ => return None,
    })
}

/// VGPR `r` of `lane`, 0 past the 256.
fn get(w: &Wave, r: u32, lane: usize) -> u32 {
    if r < 256 { w.vgpr(r, lane) } else { 0 }
}

/// VGPR `r` of `lane` set, nothing past the 256.
fn put(w: &mut Wave, r: u32, lane: usize, x: u32) {
    if r < 256 {
        w.set_vgpr(r, lane, x);
    }
}

impl Cx<'_, '_> {
    pub(super) fn cross(&mut self, w: &mut Wave, step: &Step, op: Cross) {
        let i = &step.inst;
        let (w0, w1) = (i.words[0], i.words[1]);
        // VOP1: vdst 24:17, src0 8:0; VOP3: vdst 7:0, sources in the second word.
        let (dst, srcs) = match i.enc {
            Encoding::Vop1 => ((w0 >> 17) & 0xff, [w0 & 0x1ff, 0, 0]),
            _ => (w0 & 0xff, [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff]),
        };
        let exec = w.exec();
        let lanes = w.lanes;
        let m0 = w.s[125];
        // src0 as a VGPR number (the ops that need one are refused at load otherwise).
        let v0 = srcs[0].wrapping_sub(256) & 0xff;
        let active = |l: usize| exec >> l & 1 == 1;
        match op {
            Cross::Mbcnt(hi) => {
                for l in (0..lanes).filter(|&l| active(l)) {
                    let s0 = Self::src(w, srcs[0], l, T::B32, i.literal);
                    let s1 = Self::src(w, srcs[1], l, T::B32, i.literal);
                    // ThreadMask = (1 << laneId) − 1, its low or high 32 bits.
                    let mask = (1u64 << l) - 1;
                    let part = if hi { mask >> 32 } else { mask & 0xffff_ffff };
                    // CAST: 32-bit values.
                    let r = (s0 & part).count_ones().wrapping_add(s1 as u32);
                    w.set_vgpr(dst, l, r);
                }
            }
            Cross::Permlane16(x) => {
                // lanesel = {S2, S1}: lane i of each row of 16 takes lane lanesel[4i+3:4i] of its
                // row (x16: of the other row of its pair). OPSEL[0] is DPP's FI (a disabled
                // source lane is read anyway), OPSEL[1] its BOUND_CTRL (else: 0 from it, or,
                // without BOUND_CTRL, no write).
                let (fi, bound) = ((w0 >> 11) & 1 == 1, (w0 >> 12) & 1 == 1);
                let sel =
                    Self::src(w, srcs[1], 0, T::B32, i.literal) | Self::src(w, srcs[2], 0, T::B32, i.literal) << 32;
                let tmp: [u32; 64] = core::array::from_fn(|l| if l < lanes { w.vgpr(v0, l) } else { 0 });
                for l in (0..lanes).filter(|&l| active(l)) {
                    let (row, k) = (l / 16, l % 16);
                    let from_row = if x { row ^ 1 } else { row };
                    // CAST: a 4-bit lane select.
                    let src = from_row * 16 + ((sel >> (4 * k)) & 0xf) as usize;
                    if fi || active(src) {
                        w.set_vgpr(dst, l, tmp[src]);
                    } else if bound {
                        w.set_vgpr(dst, l, 0);
                    }
                }
            }
            Cross::Permlane64 => {
                // Wave64 (wave32 is refused at load): each active lane takes lane l ^ 32.
                let tmp: [u32; 64] = core::array::from_fn(|l| if l < lanes { w.vgpr(v0, l) } else { 0 });
                for l in (0..lanes).filter(|&l| active(l)) {
                    w.set_vgpr(dst, l, tmp[l ^ 32]);
                }
            }
            Cross::Swap | Cross::Swaprel => {
                let (s, d) =
                    if op == Cross::Swap { (v0, dst) } else { (v0 + (m0 & 0x3ff), dst + ((m0 >> 16) & 0x3ff)) };
                for l in (0..lanes).filter(|&l| active(l)) {
                    let (a, b) = (get(w, s, l), get(w, d, l));
                    put(w, d, l, a);
                    put(w, s, l, b);
                }
            }
            Cross::Mqsad => {
                // D[32k+31:32k] = v_msad_u8(S0[8k+31:8k], S1, S2[32k+31:32k]), k = 0..3.
                let c = srcs[2].wrapping_sub(256) & 0xff;
                let mut out = [[0u32; 4]; 64];
                for l in (0..lanes).filter(|&l| active(l)) {
                    let s0 = Self::src(w, srcs[0], l, T::B64, i.literal);
                    // CAST: a 32-bit source.
                    let s1 = Self::src(w, srcs[1], l, T::B32, i.literal) as u32;
                    for (k, o) in out[l].iter_mut().enumerate() {
                        // CAST: the 32-bit window from byte k.
                        let win = (s0 >> (8 * k)) as u32;
                        let sad: u32 = (0..4)
                            .map(|b| {
                                let (x, y) = ((win >> (8 * b)) & 0xff, (s1 >> (8 * b)) & 0xff);
                                if y == 0 { 0 } else { x.abs_diff(y) }
                            })
                            .sum();
                        // CAST: k < 4.
                        *o = sad.wrapping_add(w.vgpr(c + k as u32, l));
                    }
                }
                for l in (0..lanes).filter(|&l| active(l)) {
                    for (k, &x) in out[l].iter().enumerate() {
                        // CAST: k < 4.
                        w.set_vgpr(dst + k as u32, l, x);
                    }
                }
            }
            Cross::MovB16 => {
                let (d, dhi) = (dst & 0x7f, dst & 0x80 != 0);
                for l in (0..lanes).filter(|&l| active(l)) {
                    let x = if srcs[0] >= 256 {
                        let r = srcs[0] - 256;
                        let v = w.vgpr(r & 0x7f, l);
                        if r & 0x80 != 0 { v >> 16 } else { v & 0xffff }
                    } else {
                        // CAST: the low 16 bits of an SGPR or constant.
                        Self::src(w, srcs[0], l, T::B16, i.literal) as u32 & 0xffff
                    };
                    let old = w.vgpr(d, l);
                    w.set_vgpr(d, l, if dhi { (old & 0xffff) | x << 16 } else { (old & 0xffff_0000) | x });
                }
            }
            Cross::Movrels | Cross::Movreld | Cross::Movrelsd | Cross::Movrelsd2 => {
                let (sa, da) = match op {
                    Cross::Movrels => (v0.saturating_add(m0), dst),
                    Cross::Movreld => (0, dst.saturating_add(m0)),
                    Cross::Movrelsd => (v0.saturating_add(m0), dst.saturating_add(m0)),
                    _ => (v0 + (m0 & 0x3ff), dst + ((m0 >> 16) & 0x3ff)),
                };
                for l in (0..lanes).filter(|&l| active(l)) {
                    let x = if op == Cross::Movreld {
                        // CAST: a 32-bit source.
                        Self::src(w, srcs[0], l, T::B32, i.literal) as u32
                    } else {
                        get(w, sa, l)
                    };
                    put(w, da, l, x);
                }
            }
        }
        self.st.lane_insts += u64::from(exec.count_ones());
    }
}
