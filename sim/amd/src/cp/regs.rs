//! The compute queue's register file and the gfx11 registers a dispatch reads.
//!
//! Offsets are absolute dword offsets: the register's offset in tinygrad 0.14's
//! `autogen/am/regs.py` (`gc_11_0_0`, segment 0) plus `GC_BASE__INST0_SEG0 = 0x1260`
//! (`autogen/am/navi_offsets.py`), as tinygrad's `AMDReg.addr` computes them; fields from the same
//! table. `SET_SH_REG` takes them relative to [`SH_REG_START`].

use super::pm4::{SH_REG_END, SH_REG_START, UCONFIG_REG_END, UCONFIG_REG_START};
use crate::fault::What;

/// `COMPUTE_DISPATCH_INITIATOR` (`0x1ba0`): `COMPUTE_SHADER_EN` 0, `PARTIAL_TG_EN` 1,
/// `FORCE_START_AT_000` 2, `USE_THREAD_DIMENSIONS` 5, `CS_W32_EN` 15.
pub const COMPUTE_DISPATCH_INITIATOR: u32 = 0x2e00;
/// `COMPUTE_START_X` (`0x1ba4`); `_Y`, `_Z` follow.
pub const COMPUTE_START_X: u32 = 0x2e04;
/// `COMPUTE_NUM_THREAD_X` (`0x1ba7`): `NUM_THREAD_FULL` 15:0; `_Y`, `_Z` follow.
pub const COMPUTE_NUM_THREAD_X: u32 = 0x2e07;
/// `COMPUTE_PGM_LO` (`0x1bac`): the program address bits 39:8.
pub const COMPUTE_PGM_LO: u32 = 0x2e0c;
/// `COMPUTE_PGM_HI` (`0x1bad`): bits 47:40 in its bits 7:0.
pub const COMPUTE_PGM_HI: u32 = 0x2e0d;
/// `COMPUTE_DISPATCH_SCRATCH_BASE_LO` (`0x1bb0`): the scratch address bits 39:8.
pub const COMPUTE_DISPATCH_SCRATCH_BASE_LO: u32 = 0x2e10;
/// `COMPUTE_DISPATCH_SCRATCH_BASE_HI` (`0x1bb1`): bits 47:40 in its bits 7:0.
pub const COMPUTE_DISPATCH_SCRATCH_BASE_HI: u32 = 0x2e11;
/// `COMPUTE_PGM_RSRC1` (`0x1bb2`): `VGPRS` 5:0, `SGPRS` 9:6, `PRIV` 20, ...
pub const COMPUTE_PGM_RSRC1: u32 = 0x2e12;
/// `COMPUTE_PGM_RSRC2` (`0x1bb3`): `SCRATCH_EN` 0, `USER_SGPR` 5:1, `TGID_X/Y/Z_EN` 7–9,
/// `TG_SIZE_EN` 10, `TIDIG_COMP_CNT` 12:11, `LDS_SIZE` 23:15.
pub const COMPUTE_PGM_RSRC2: u32 = 0x2e13;
/// `COMPUTE_RESOURCE_LIMITS` (`0x1bb5`; no effect here).
pub const COMPUTE_RESOURCE_LIMITS: u32 = 0x2e15;
/// `COMPUTE_TMPRING_SIZE` (`0x1bb8`): `WAVES` 11:0, `WAVESIZE` 26:12.
pub const COMPUTE_TMPRING_SIZE: u32 = 0x2e18;
/// `COMPUTE_RESTART_X` (`0x1bbb`; no effect here).
pub const COMPUTE_RESTART_X: u32 = 0x2e1b;
/// `COMPUTE_PGM_RSRC3` (`0x1bc8`; no effect here).
pub const COMPUTE_PGM_RSRC3: u32 = 0x2e28;
/// `COMPUTE_USER_DATA_0` (`0x1be0`); `_1` … `_15` follow: the user SGPRs.
pub const COMPUTE_USER_DATA_0: u32 = 0x2e40;
/// `COMPUTE_USER_DATA_*` registers on gfx11.
pub const USER_DATA_COUNT: u32 = 16;

/// `COMPUTE_DISPATCH_INITIATOR.COMPUTE_SHADER_EN`.
pub const INITIATOR_COMPUTE_SHADER_EN: u32 = 1 << 0;
/// `.FORCE_START_AT_000`: the dispatch starts at work-group (0,0,0), not `COMPUTE_START_*`.
pub const INITIATOR_FORCE_START_AT_000: u32 = 1 << 2;
/// `.USE_THREAD_DIMENSIONS`: the dims are threads, not work-groups.
pub const INITIATOR_USE_THREAD_DIMENSIONS: u32 = 1 << 5;
/// `.CS_W32_EN`: waves of 32 lanes (else 64).
pub const INITIATOR_CS_W32_EN: u32 = 1 << 15;

/// `BIF_BX_PF0_GPU_HDP_FLUSH_REQ`: NBIO 4.3.0 (gfx1100's) offset `0x106`, segment 2, plus
/// `NBIO_BASE__INST0_SEG2 = 0xd20` (tinygrad `regs.py` `nbio_4_3_0`, `navi_offsets.py`); the
/// register tinygrad's `memory_barrier` writes.
pub const HDP_FLUSH_REQ: u32 = 0xe26;
/// `BIF_BX_PF0_GPU_HDP_FLUSH_DONE` (`0x107`, segment 2): what the barrier waits on. Nothing sits
/// between host and GPU memory in the simulator, so every client's flush is done: it reads as all
/// ones.
pub const HDP_FLUSH_DONE: u32 = 0xe27;

/// The LDS granularity of `LDS_SIZE` for compute on gfx7+: 128 dwords. Mesa `ac_gpu_info.c`
/// `lds_encode_granularity`; tinygrad encodes `(group_segment_size + 511) // 512`.
pub const LDS_GRANULE: u32 = 512;
/// gfx1100's LDS per work-group.
pub const MAX_LDS: u32 = 64 << 10;
/// `COMPUTE_TMPRING_SIZE.WAVESIZE` units on gfx11: 256 bytes a wave (Mesa `gfx11.json`; tinygrad
/// `mem_alignment_size = 256`).
pub const WAVESIZE_GRANULE: u32 = 256;

/// `x` as an index.
#[inline]
fn idx(x: u32) -> usize {
    // CAST: u32 → usize, widening on the 32- and 64-bit hosts the simulator runs on.
    x as usize
}

/// The queue's registers: the SH and user-config windows.
#[derive(Clone, Debug)]
pub struct RegFile {
    sh: Box<[u32]>,
    uconfig: Box<[u32]>,
}

impl Default for RegFile {
    fn default() -> Self {
        Self::new()
    }
}

impl RegFile {
    /// Every register 0.
    pub fn new() -> Self {
        Self {
            sh: vec![0; idx(SH_REG_END - SH_REG_START)].into_boxed_slice(),
            uconfig: vec![0; idx(UCONFIG_REG_END - UCONFIG_REG_START)].into_boxed_slice(),
        }
    }

    fn slot(&mut self, reg: u32) -> Option<&mut u32> {
        match reg {
            SH_REG_START..SH_REG_END => self.sh.get_mut(idx(reg - SH_REG_START)),
            UCONFIG_REG_START..UCONFIG_REG_END => self.uconfig.get_mut(idx(reg - UCONFIG_REG_START)),
            _ => None,
        }
    }

    /// Write `values` from `start` on, all inside `[lo, hi)` (the packet's window, `name`).
    pub fn write_window(
        &mut self,
        start: u64,
        values: &[u32],
        lo: u32,
        hi: u32,
        name: &'static str,
    ) -> Result<(), What> {
        // CAST: a count of at most 2^14 values.
        let n = values.len() as u64;
        if start < u64::from(lo) || start + n > u64::from(hi) {
            return Err(What::Register { reg: start, count: n, window: name });
        }
        for (k, v) in values.iter().enumerate() {
            // CAST: inside the window, below 2^16.
            let r = (start + k as u64) as u32;
            if let Some(s) = self.slot(r) {
                *s = *v;
            }
        }
        Ok(())
    }

    /// Read register `reg` as `WAIT_REG_MEM` or `COPY_DATA` does: the SH and user-config windows,
    /// and `HDP_FLUSH_DONE` (all ones).
    pub fn read(&self, reg: u64) -> Result<u32, What> {
        let bad = What::Register { reg, count: 1, window: "readable (SH, user-config, HDP flush)" };
        let r = u32::try_from(reg).map_err(|_| bad.clone())?;
        match r {
            HDP_FLUSH_DONE => Ok(u32::MAX),
            SH_REG_START..SH_REG_END => Ok(self.sh[idx(r - SH_REG_START)]),
            UCONFIG_REG_START..UCONFIG_REG_END => Ok(self.uconfig[idx(r - UCONFIG_REG_START)]),
            _ => Err(bad),
        }
    }

    /// Write register `reg` as `WAIT_REG_MEM`'s write form or `COPY_DATA` does: the windows, and
    /// `HDP_FLUSH_REQ` (the flush completes at once).
    pub fn write(&mut self, reg: u64, v: u32) -> Result<(), What> {
        let bad = What::Register { reg, count: 1, window: "writable (SH, user-config, HDP flush)" };
        let r = u32::try_from(reg).map_err(|_| bad.clone())?;
        if r == HDP_FLUSH_REQ {
            return Ok(());
        }
        *self.slot(r).ok_or(bad)? = v;
        Ok(())
    }

    /// The value of an SH or user-config register (0 for any other offset).
    pub fn get(&self, reg: u32) -> u32 {
        match reg {
            SH_REG_START..SH_REG_END => self.sh[idx(reg - SH_REG_START)],
            UCONFIG_REG_START..UCONFIG_REG_END => self.uconfig[idx(reg - UCONFIG_REG_START)],
            _ => 0,
        }
    }
}
