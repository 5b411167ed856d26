//! The compute queue's submit hook for the core engine's indirect-buffer shape
//! ([`hcq::submit::IbPool`]), as tinygrad 0.14's graph submits a bound `AMDComputeQueue`: the
//! captured commands stay in an IB in GPU memory and the KFD ring gets only the
//! `INDIRECT_BUFFER` packet that calls it, then the write pointer and the doorbell.
//!
//! The pool writes the IB (only the words a replay changed, into a slot whose last submission
//! retired) and issues the device write barrier; then [`RingIb::submit_ib`] writes the 4-dword
//! packet at the ring's write pointer with volatile word stores, issues the barrier again, and
//! rings the doorbell ([`QueueDoorbell`]: the write pointer memory first, as tinygrad).
//!
//! **Ring space.** Every submission on the ring is one 4-dword packet, and the pool lets at
//! most `slots` submissions be in flight: it writes an IB only once the submission that used
//! the slot `slots` IBs ago retired, and the CP passes an `INDIRECT_BUFFER` in the ring only
//! after the IB it calls (whose last command is the timeline signal). So when the hook writes
//! packet `n`, packets `n - slots` and before have been consumed, and the ring, holding
//! `ring_dwords / 4 > slots` packets, never overwrites one in flight ([`RingIb::new`] refuses
//! a ring that small). A packet never spans the ring's end (4 divides the ring's dwords).

use crate::memory::{GpuBuf, QueueDoorbell};
use hcq::mmio::{MmioBus, Width, write_words};
use hcq::stamp::Stamp;
use hcq::submit::IbSubmit;
use hcq::{Error, Result};
use std::sync::Arc;

/// Dwords of one ring submission: the `INDIRECT_BUFFER` packet.
const PACKET_DWORDS: u64 = 4;

/// The hook: the compute ring, its write pointer and its doorbell.
pub(crate) struct RingIb {
    ring: Arc<GpuBuf>,
    /// Ring size in dwords (a multiple of [`PACKET_DWORDS`]).
    dwords: u64,
    /// The write pointer in dwords, monotonic (tinygrad's `put_value`).
    wptr: u64,
    bell: QueueDoorbell,
}

impl RingIb {
    /// A hook over `ring` for a pool of `slots` IB slots, ringing `bell`.
    ///
    /// Errors: a ring whose dwords are not a multiple of 4, or that holds no more packets than
    /// the pool has slots (one could be overwritten in flight).
    pub(crate) fn new(ring: Arc<GpuBuf>, slots: u64, bell: QueueDoorbell) -> Result<RingIb> {
        let dwords = ring.size() / 4;
        if !dwords.is_multiple_of(PACKET_DWORDS) || dwords / PACKET_DWORDS <= slots {
            return Err(Error::LimitExceeded {
                what: "AMD compute ring: INDIRECT_BUFFER packets it holds vs the IB slots in flight",
                value: slots,
                limit: dwords / PACKET_DWORDS,
            });
        }
        Ok(RingIb { ring, dwords, wptr: 0, bell })
    }
}

impl IbSubmit for RingIb {
    fn submit_ib(&mut self, addr: u64, bytes: u64, _stamp: Stamp) -> Result<()> {
        let dwords = u32::try_from(bytes / 4)
            .map_err(|_| Error::InvalidArgument { what: "AMD IB dwords beyond 32 bits", value: bytes })?;
        let pkt = hcq_amd::pm4::indirect_buffer(addr, dwords)?;
        // CAST: `wptr % dwords` lies inside the ring, whose byte size is a usize.
        let at = ((self.wptr % self.dwords) * 4) as usize;
        write_words(self.ring.bus(), at, &pkt)?;
        self.wptr += PACKET_DWORDS;
        // The packet's words reach memory before the write pointer and the doorbell do.
        hcq::barrier::device_write_barrier();
        self.bell.write(self.bell.bell, Width::U64, self.wptr)
    }
}
