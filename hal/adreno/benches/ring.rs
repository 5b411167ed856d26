//! Host cost of the bare-metal ring path.
//!
//! `ring_submit_with_sim_cp`: one submission (a `CP_MEM_WRITE` and the timeline signal's two
//! `CACHE_FLUSH_TS` event writes, 14 words) built into a reused buffer and handed to
//! `A6xxRing::submit` on a 32 KiB ring (Linux's size): ring write, barrier, `CP_RB_WPTR` write
//! on hcq-sim's `MockMmio`, whose hook runs the simulated CP over the new words and publishes
//! RPTR. The figure is the host cost per submission including the simulated CP; the ring wraps
//! every ~585 submissions, so wrap-around is part of the steady state.

use divan::Bencher;
use hcq::Error;
use hcq::error::device_name;
use hcq::mmio::{HostRegion, MmioBus, Width};
use hcq::signal::{OwnedSignal, SignalPage, StdHooks};
use hcq::timeline::Timeline;
use hcq_adreno::a6xx::events;
use hcq_adreno::a6xx::regs::CP_RB_WPTR;
use hcq_adreno::pm4::{op, pkt7};
use hcq_adreno::ring::{A6xxRing, DsbSt, RingConfig};
use hcq_sim::{MockMmio, WriteAction};
use hcq_sim_adreno::cp::{BusMemory, ComputeState, GpuMemory, RingCp, ShaderCore};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

fn main() {
    divan::main();
}

/// The signal page as dword-addressed memory for the CP.
struct SignalBus(Arc<SignalPage>);

impl SignalBus {
    fn half(&self, offset: usize) -> hcq::Result<(&AtomicU64, u32)> {
        let (slot, ts) = self.0.resolve(self.0.device_addr(0) + (offset & !7) as u64).ok_or(Error::OutOfBounds {
            what: "signal page",
            offset: offset as u64,
            len: 4,
            limit: 0,
        })?;
        // This bus is the device's write path into the slot (the CP's 32-bit signal writes).
        // SAFETY: the CP model stores the timeline value of each IB it ran to its end.
        let (value, timestamp) = unsafe { slot.device_words() };
        Ok((if ts { timestamp } else { value }, if offset & 4 != 0 { 32 } else { 0 }))
    }
}

impl MmioBus for SignalBus {
    fn size(&self) -> usize {
        16 * self.0.len()
    }
    fn read(&self, offset: usize, _: Width) -> hcq::Result<u64> {
        let (a, shift) = self.half(offset)?;
        Ok(a.load(Ordering::Acquire) >> shift & 0xffff_ffff)
    }
    fn write(&self, offset: usize, _: Width, value: u64) -> hcq::Result<()> {
        let (a, shift) = self.half(offset)?;
        let mask = 0xffff_ffffu64 << shift;
        let _ =
            a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(v & !mask | (value & 0xffff_ffff) << shift));
        Ok(())
    }
}

struct NoDispatch;

impl ShaderCore for NoDispatch {
    fn dispatch(&mut self, _: &ComputeState<'_>, _: &mut dyn GpuMemory) -> hcq::Result<()> {
        Err(Error::Unsupported { what: "bench: no dispatch", value: 0 })
    }
}

#[divan::bench]
fn ring_submit_with_sim_cp(b: Bencher) {
    let regs = MockMmio::new(0x40000).unwrap();
    let ring_mem = Arc::new(HostRegion::new(32 << 10, 4096).unwrap());
    let shadow = Arc::new(HostRegion::new(64, 64).unwrap());
    let data = Arc::new(HostRegion::new(4096, 4096).unwrap());
    let page = Arc::new(SignalPage::new_host(1));
    let mut mem = BusMemory::new();
    mem.map(ring_mem.addr(), ring_mem.clone()).unwrap();
    mem.map(shadow.addr(), shadow.clone()).unwrap();
    mem.map(data.addr(), data.clone()).unwrap();
    mem.map(page.device_addr(0), Arc::new(SignalBus(page.clone()))).unwrap();
    let cp = Arc::new(Mutex::new((RingCp::new(), mem)));
    let (c, weak) = (cp.clone(), Arc::downgrade(&regs));
    regs.on_write(CP_RB_WPTR::OFFSET, move |wptr| {
        let regs: Arc<MockMmio> = Weak::upgrade(&weak).unwrap();
        let mut g = c.lock().unwrap();
        let (rcp, mem) = &mut *g;
        rcp.doorbell(&regs.device(), wptr, mem, &mut NoDispatch).unwrap();
        WriteAction::Store(wptr)
    })
    .unwrap();
    let cfg = RingConfig { ring_gpu: ring_mem.addr(), rptr_gpu: shadow.addr(), max_in_flight: 1024 };
    let mut ring = A6xxRing::new(regs.clone(), ring_mem, shadow, 0, cfg, DsbSt).unwrap();
    let tl = Timeline::new(device_name("QCOM:RING"), OwnedSignal::new(page, 0).unwrap());
    let sig = tl.signal().addr();
    let out = data.addr();
    let mut words: Vec<u32> = Vec::with_capacity(32);
    b.bench_local(|| {
        let (_, stamp) = tl.reserve().unwrap();
        let v = stamp.get();
        words.clear();
        pkt7(&mut words, op::CP_MEM_WRITE, &[out as u32, (out >> 32) as u32, v as u32]).unwrap();
        for (addr, half) in [(sig, v as u32), (sig + 4, (v >> 32) as u32)] {
            pkt7(&mut words, op::CP_EVENT_WRITE, &[events::CACHE_FLUSH_TS, addr as u32, (addr >> 32) as u32, half])
                .unwrap();
        }
        ring.submit(&words, stamp, &tl, &StdHooks).unwrap();
    });
    assert!(tl.completed() == tl.last_submitted(), "every submission ran");
}
