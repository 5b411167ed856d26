//! The simulated CP behind the a6xx ringbuffer registers: what a `CP_RB_WPTR` write does.
//!
//! A host (the bare-metal ring backend, [`hcq_adreno::ring::A6xxRing`]) programs `CP_RB_BASE`,
//! `CP_RB_CNTL` and `CP_RB_RPTR_ADDR` on the GPU's register bus and rings the doorbell by
//! writing `CP_RB_WPTR`. A test hooks that write (hcq-sim's `MockMmio::on_write`) and calls
//! [`RingCp::doorbell`] with the value: the CP reads the ring registers from the register file,
//! runs the ring words from its read pointer up to the new write pointer, and publishes the read
//! pointer to `CP_RB_RPTR` and, unless `CP_RB_CNTL.NO_UPDATE` is set, to the RPTR shadow at
//! `CP_RB_RPTR_ADDR`.

use super::{Cp, GpuMemory, Outcome, ShaderCore};
use hcq::mmio::{MmioBus, Width};
use hcq::{Error, Result};
use hcq_adreno::a6xx::regs::{CP_RB_BASE, CP_RB_CNTL, CP_RB_RPTR, CP_RB_RPTR_ADDR};

/// Largest `CP_RB_CNTL.BUFSZ` the sim accepts: 8 << 24 bytes = 128 MiB (the hardware field is
/// 6 bits wide; real rings are 32 KiB).
pub const MAX_BUFSZ: u8 = 24;

/// The simulated CP with its ringbuffer front end (see the module docs).
#[derive(Debug, Default)]
pub struct RingCp {
    /// The PM4 interpreter.
    pub cp: Cp,
    doorbells: u64,
}

impl RingCp {
    /// A CP with a zeroed register file and read pointer.
    pub fn new() -> Self {
        Self::default()
    }

    /// `CP_RB_WPTR` writes handled so far.
    pub fn doorbells(&self) -> u64 {
        self.doorbells
    }

    /// Handle a write of `wptr` to `CP_RB_WPTR`: read the ring registers from `regs` (the
    /// register bus as the device sees it), run the ring up to `wptr`, publish the read pointer.
    /// A bad ring setup (zero base, `BUFSZ` out of range, a write pointer outside the ring) or a
    /// CP error (fault, bad packet, named by its ring index) is returned; the read pointer then
    /// stays where it was.
    pub fn doorbell(
        &mut self,
        regs: &dyn MmioBus,
        wptr: u64,
        mem: &mut dyn GpuMemory,
        d: &mut dyn ShaderCore,
    ) -> Result<Outcome> {
        self.doorbells += 1;
        let base = read64(regs, CP_RB_BASE::OFFSET)?;
        let cntl = CP_RB_CNTL::from_raw(read32(regs, CP_RB_CNTL::OFFSET)?);
        if base == 0 {
            return Err(Error::InvalidArgument { what: "adreno sim: CP_RB_BASE not programmed", value: 0 });
        }
        if cntl.bufsz() < 1 || cntl.bufsz() > MAX_BUFSZ {
            return Err(Error::InvalidArgument { what: "adreno sim: CP_RB_CNTL.BUFSZ", value: cntl.bufsz().into() });
        }
        // BUFSZ = log2(bytes / 8): the ring holds 2 << BUFSZ dwords.
        let size = 2u32 << cntl.bufsz();
        let wptr =
            u32::try_from(wptr).map_err(|_| Error::InvalidArgument { what: "adreno sim: CP_RB_WPTR", value: wptr })?;
        let (outcome, rptr) = self.cp.ring(base, size, wptr, mem, d)?;
        regs.write(CP_RB_RPTR::OFFSET, Width::U32, rptr.into())?;
        if !cntl.no_update() {
            let shadow = read64(regs, CP_RB_RPTR_ADDR::OFFSET)?;
            if shadow != 0 {
                mem.write32(shadow, rptr)?;
            }
        }
        Ok(outcome)
    }
}

fn read32(regs: &dyn MmioBus, offset: usize) -> Result<u32> {
    // CAST: a 32-bit read.
    Ok(regs.read(offset, Width::U32)? as u32)
}

/// A reg64 as the register bus holds it: low dword, then high dword.
fn read64(regs: &dyn MmioBus, offset: usize) -> Result<u64> {
    Ok(u64::from(read32(regs, offset)?) | u64::from(read32(regs, offset + 4)?) << 32)
}
