//! The bare-metal ring path against the simulated CP through mock MMIO: the ring registers are
//! programmed on a `MockMmio` register bus, and a hook on the `CP_RB_WPTR` write (the doorbell)
//! makes the simulated CP run the ring words up to the new write pointer and publish its read
//! pointer to `CP_RB_RPTR` and the RPTR shadow. The timeline signal lives in host memory the CP
//! writes through the same bus interface.

use hcq::Error;
use hcq::error::device_name;
use hcq::mmio::{HostRegion, MmioBus, Width};
use hcq::queue::{CmdWriter, Command, Encoder};
use hcq::signal::{OwnedSignal, SignalPage, WaitHooks, WaitPolicy, host_clock_ns};
use hcq::stamp::Stamp;
use hcq::timeline::Timeline;
use hcq_adreno::a6xx::regs::{CP_RB_BASE, CP_RB_CNTL, CP_RB_RPTR, CP_RB_RPTR_ADDR, CP_RB_WPTR};
use hcq_adreno::pm4::{op, pkt7};
use hcq_adreno::ring::{A6xxRing, RingConfig, WriteBarrier};
use hcq_adreno::{A6xxEncoder, EncoderConfig};
use hcq_sim::{MockMmio, WriteAction};
use hcq_sim_adreno::cp::{BusMemory, ComputeState, GpuMemory, Outcome, RingCp, ShaderCore};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The timeline's signal page as a bus: the CP writes the 64-bit slots as two dwords, each an
/// atomic update of its half (how a device's 32-bit writes land in the slot).
struct SignalBus(Arc<SignalPage>);

impl SignalBus {
    fn half(&self, offset: usize) -> hcq::Result<(&AtomicU64, u32)> {
        let (slot, ts) = self.0.resolve(self.0.device_addr(0) + (offset & !7) as u64).ok_or(Error::OutOfBounds {
            what: "signal page",
            offset: offset as u64,
            len: 4,
            limit: 16 * self.0.len() as u64,
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
    fn read(&self, offset: usize, width: Width) -> hcq::Result<u64> {
        assert_eq!(width, Width::U32, "the CP accesses dwords");
        let (a, shift) = self.half(offset)?;
        Ok(a.load(Ordering::Acquire) >> shift & 0xffff_ffff)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> hcq::Result<()> {
        assert_eq!(width, Width::U32, "the CP accesses dwords");
        let (a, shift) = self.half(offset)?;
        let mask = 0xffff_ffffu64 << shift;
        a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(v & !mask | (value & 0xffff_ffff) << shift))
            .map(|_| ())
            .map_err(|_| Error::InvalidArgument { what: "signal update", value })
    }
}

/// No dispatches in these tests: one is a failure.
struct NoDispatch;

impl ShaderCore for NoDispatch {
    fn dispatch(&mut self, _: &ComputeState<'_>, _: &mut dyn GpuMemory) -> hcq::Result<()> {
        Err(Error::Unsupported { what: "test: no dispatch expected", value: 0 })
    }
}

/// The simulated GPU behind the doorbell.
struct Gpu {
    cp: RingCp,
    mem: BusMemory,
    /// A stalled CP takes doorbells (the register keeps the value) but fetches nothing.
    stalled: bool,
    fault: Option<Error>,
    last: Option<Outcome>,
    /// `CP_RB_WPTR` writes seen (stalled or not).
    bells: u64,
    /// Doorbells that came after a device write barrier (one barrier per doorbell).
    ordered: u64,
}

/// The backend's barrier, counted so the test can see one precedes every doorbell.
#[derive(Clone)]
struct CountingBarrier(Arc<AtomicU64>);

impl WriteBarrier for CountingBarrier {
    fn device_write_barrier(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Wait hooks: host clock, and the CP's fault seen at once.
struct Hooks(Arc<Mutex<Gpu>>);

impl WaitHooks for Hooks {
    fn now_ns(&self) -> u64 {
        host_clock_ns()
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn fault(&self) -> Option<Error> {
        self.0.lock().unwrap().fault.clone()
    }
}

const RING_WORDS: usize = 64;

struct Rig {
    regs: Arc<MockMmio>,
    gpu: Arc<Mutex<Gpu>>,
    ring: A6xxRing<CountingBarrier>,
    shadow: Arc<HostRegion>,
    data: Arc<HostRegion>,
    tl: Timeline,
    hooks: Hooks,
    barriers: Arc<AtomicU64>,
    ring_gpu: u64,
}

/// Run the CP up to the write pointer in the register file (a doorbell, or an un-stall).
fn run(gpu: &mut Gpu, regs: &MockMmio, wptr: u64) {
    if gpu.stalled || gpu.fault.is_some() {
        return;
    }
    let Gpu { cp, mem, .. } = gpu;
    match cp.doorbell(&regs.device(), wptr, mem, &mut NoDispatch) {
        Ok(o) => gpu.last = Some(o),
        Err(e) => gpu.fault = Some(e),
    }
}

fn rig_with(ring_words: usize) -> Rig {
    let regs = MockMmio::new(0x40000).unwrap();
    let ring_mem = Arc::new(HostRegion::new(4 * ring_words, 4096).unwrap());
    let shadow = Arc::new(HostRegion::new(64, 64).unwrap());
    let data = Arc::new(HostRegion::new(4096, 4096).unwrap());
    let page = Arc::new(SignalPage::new_host(2));
    let mut mem = BusMemory::new();
    mem.map(ring_mem.addr(), ring_mem.clone()).unwrap();
    mem.map(shadow.addr(), shadow.clone()).unwrap();
    mem.map(data.addr(), data.clone()).unwrap();
    mem.map(page.device_addr(0), Arc::new(SignalBus(page.clone()))).unwrap();
    let barriers = Arc::new(AtomicU64::new(0));
    let gpu = Arc::new(Mutex::new(Gpu {
        cp: RingCp::new(),
        mem,
        stalled: false,
        fault: None,
        last: None,
        bells: 0,
        ordered: 0,
    }));
    let (g, weak, b) = (gpu.clone(), Arc::downgrade(&regs), barriers.clone());
    regs.on_write(CP_RB_WPTR::OFFSET, move |wptr| {
        let regs: Arc<MockMmio> = Weak::upgrade(&weak).expect("bus alive while written");
        let mut gpu = g.lock().unwrap();
        gpu.bells += 1;
        if b.load(Ordering::SeqCst) == gpu.bells {
            gpu.ordered += 1;
        }
        // The hook runs before the store: the CP takes the value from the write itself.
        run(&mut gpu, &regs, wptr);
        WriteAction::Store(wptr)
    })
    .unwrap();
    let ring_gpu = ring_mem.addr();
    let cfg = RingConfig { ring_gpu, rptr_gpu: shadow.addr() + 8, max_in_flight: 16 };
    let ring =
        A6xxRing::new(regs.clone(), ring_mem, shadow.clone(), 8, cfg, CountingBarrier(barriers.clone())).unwrap();
    let tl = Timeline::new(device_name("QCOM:RING"), OwnedSignal::new(page, 0).unwrap());
    tl.set_policy(WaitPolicy::with_timeout_ms(2_000));
    Rig { regs, hooks: Hooks(gpu.clone()), gpu, ring, shadow, data, tl, barriers, ring_gpu }
}

fn rig() -> Rig {
    rig_with(RING_WORDS)
}

impl Rig {
    /// A submission: `CP_MEM_WRITE` of `value` to data word `slot`, then the timeline signal
    /// (the a6xx encoder's `CACHE_FLUSH_TS` pair) with the next stamp. Returns the stamp.
    fn submit_write(&mut self, slot: usize, value: u32) -> hcq::Result<Stamp> {
        let words = self.write_words(slot, value);
        let (_, stamp) = self.tl.reserve()?;
        self.ring.submit(&words, stamp, &self.tl, &self.hooks)?;
        Ok(stamp)
    }

    fn write_words(&self, slot: usize, value: u32) -> Vec<u32> {
        let addr = self.data.addr() + 4 * slot as u64;
        let mut words = Vec::new();
        pkt7(&mut words, op::CP_MEM_WRITE, &[addr as u32, (addr >> 32) as u32, value]).unwrap();
        let enc =
            A6xxEncoder::new(EncoderConfig { scratch: self.data.addr() + 2048, pvt_mem: 0, pvt_mem_bytes: 0 }).unwrap();
        // The encoder's signal alone (no queue: the ring adds no timeline wait of its own).
        let signal = Command::Signal { addr: self.tl.signal().addr(), value: self.tl.last_submitted().get() + 1 };
        enc.encode(&signal, &mut CmdWriter::new(&mut words, &mut Vec::new(), 0)).unwrap();
        words
    }

    fn data(&self, slot: usize) -> u32 {
        self.data.read(4 * slot, Width::U32).unwrap() as u32
    }

    fn reg(&self, off: usize) -> u64 {
        self.regs.device_read(off, Width::U32).unwrap()
    }
}

#[test]
fn new_programs_the_ring_registers() {
    let r = rig();
    let base = r.reg(CP_RB_BASE::OFFSET) | r.reg(CP_RB_BASE::OFFSET + 4) << 32;
    assert_eq!(base, r.ring_gpu, "CP_RB_BASE = the ring's GPU address, low then high dword");
    let shadow = r.reg(CP_RB_RPTR_ADDR::OFFSET) | r.reg(CP_RB_RPTR_ADDR::OFFSET + 4) << 32;
    assert_eq!(shadow, r.shadow.addr() + 8, "CP_RB_RPTR_ADDR = the shadow");
    let cntl = CP_RB_CNTL::from_raw(r.reg(CP_RB_CNTL::OFFSET) as u32);
    assert_eq!(cntl.bufsz(), 5, "256-byte ring: log2(256 / 8)");
    assert_eq!(cntl.blksz(), 2, "32-byte report block, as Linux");
    assert!(!cntl.no_update(), "the CP writes the shadow");
    assert_eq!(r.gpu.lock().unwrap().cp.doorbells(), 0, "no doorbell before the first submission");
}

#[test]
fn a_submission_runs_and_advances_the_timeline() {
    let mut r = rig();
    let stamp = r.submit_write(3, 0xdead_beef).unwrap();
    r.tl.wait(stamp, &r.hooks).unwrap();
    assert_eq!(r.tl.completed(), stamp, "the CP's event write advanced the timeline signal");
    assert_eq!(r.data(3), 0xdead_beef, "the CP_MEM_WRITE landed");
    let wptr = r.ring.wptr();
    assert!(wptr > 0);
    assert_eq!(r.reg(CP_RB_WPTR::OFFSET), wptr, "the doorbell wrote the write pointer");
    assert_eq!(r.ring.rptr().unwrap() as u64, wptr, "the CP published its read pointer to the shadow");
    assert_eq!(r.reg(CP_RB_RPTR::OFFSET), wptr, "and to CP_RB_RPTR");
    let g = r.gpu.lock().unwrap();
    assert_eq!(g.last, Some(Outcome::Done));
    assert_eq!((g.cp.doorbells(), g.bells, g.ordered), (1, 1, 1), "one doorbell, after one device write barrier");
}

#[test]
fn the_ring_wraps_and_every_submission_runs_once() {
    let mut r = rig();
    let per = r.write_words(0, 0).len() as u64;
    assert!(!(RING_WORDS as u64).is_multiple_of(per), "submissions must straddle the end of the ring");
    let n = 4 * RING_WORDS as u64 / per + 1;
    let mut straddled = 0;
    for i in 0..n {
        let before = r.ring.wptr();
        let stamp = r.submit_write(i as usize % 512, 1000 + i as u32).unwrap();
        if before % RING_WORDS as u64 + per > RING_WORDS as u64 {
            straddled += 1;
        }
        r.tl.wait(stamp, &r.hooks).unwrap();
        assert_eq!(r.data(i as usize % 512), 1000 + i as u32, "submission {i} ran");
        assert_eq!(u64::from(r.ring.rptr().unwrap()), r.ring.wptr() % RING_WORDS as u64, "after {i}");
    }
    assert!(straddled >= 2, "{straddled} submissions spanned the end of the ring");
    assert!(r.ring.wptr() > 4 * RING_WORDS as u64, "the ring wrapped four times");
    let g = r.gpu.lock().unwrap();
    assert!(g.fault.is_none(), "{:?}", g.fault);
    assert_eq!(g.cp.doorbells(), n);
    assert_eq!((g.bells, g.ordered), (n, n), "every doorbell came after a barrier");
    // Each submission is one CP_MEM_WRITE, a wait-for-idle and two event writes.
    assert_eq!(g.cp.cp.packets(), 4 * n, "no packet ran twice or was skipped");
    drop(g);
    assert_eq!(r.tl.completed().get(), n, "the timeline counted every submission");
}

#[test]
fn a_stalled_cp_is_a_timeout_and_marks_the_device_hung() {
    let mut r = rig();
    r.tl.set_policy(WaitPolicy::with_timeout_ms(50));
    r.gpu.lock().unwrap().stalled = true;
    let stamp = r.submit_write(0, 7).unwrap();
    assert_eq!(r.reg(CP_RB_WPTR::OFFSET), r.ring.wptr(), "the doorbell was rung");
    let e = r.tl.wait(stamp, &r.hooks).unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert!(r.tl.is_hung());
    assert_eq!(r.data(0), 0, "nothing ran");
    assert!(matches!(r.submit_write(1, 1).unwrap_err(), Error::DeviceHung { .. }));
}

#[test]
fn a_full_ring_waits_for_the_cp_and_a_stall_there_is_a_timeout() {
    let mut r = rig();
    let per = r.write_words(0, 0).len();
    // Fill the ring to just below a multiple of a submission, CP running.
    let mut i = 0;
    while (r.ring.wptr() as usize) + 2 * per <= RING_WORDS {
        let s = r.submit_write(i, 1).unwrap();
        r.tl.wait(s, &r.hooks).unwrap();
        i += 1;
    }
    // Stall, then submit until the ring holds RING_WORDS unfetched words but one submission.
    r.gpu.lock().unwrap().stalled = true;
    let fetched = r.ring.wptr();
    let mut pending = 0;
    while pending + 2 * per <= RING_WORDS {
        r.submit_write(100 + pending, 2).unwrap();
        pending += per;
    }
    assert!(pending + per <= RING_WORDS);
    // The next submission fits (everything older than `fetched` retired), and its doorbell
    // must wait only when it would fill the ring exactly; make that happen with a custom size.
    let room = RING_WORDS - pending;
    let mut words = Vec::new();
    let nops = room - per;
    if nops > 0 {
        pkt7(&mut words, op::CP_NOP, &vec![0; nops - 1]).unwrap();
    }
    words.extend(r.write_words(200, 3));
    assert_eq!(words.len(), room, "this submission makes RING_WORDS words pending");
    let (_, stamp) = r.tl.reserve().unwrap();
    r.tl.set_policy(WaitPolicy::with_timeout_ms(50));
    let e = r.ring.submit(&words, stamp, &r.tl, &r.hooks).unwrap_err();
    assert!(matches!(e.root(), Error::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("full ring"), "{e}");
    assert_eq!(
        r.reg(CP_RB_WPTR::OFFSET),
        (fetched + pending as u64) % RING_WORDS as u64,
        "WPTR was not written: it would read as empty"
    );
    assert_eq!(r.barriers.load(Ordering::SeqCst), r.gpu.lock().unwrap().bells, "no barrier without its doorbell");
    assert_eq!(r.data(200), 0);
}

#[test]
fn a_full_ring_doorbell_goes_out_once_the_cp_fetches() {
    let mut r = rig();
    let per = r.write_words(0, 0).len();
    r.gpu.lock().unwrap().stalled = true;
    let mut pending = 0;
    let mut stamps = Vec::new();
    while pending + 2 * per <= RING_WORDS {
        stamps.push(r.submit_write(pending, 5).unwrap());
        pending += per;
    }
    let room = RING_WORDS - pending;
    let mut words = Vec::new();
    pkt7(&mut words, op::CP_NOP, &vec![0; room - per - 1]).unwrap();
    words.extend(r.write_words(300, 6));
    let (_, stamp) = r.tl.reserve().unwrap();
    // Un-stall the CP from another thread after a while: it runs what it was told about.
    let (gpu, regs) = (r.gpu.clone(), r.regs.clone());
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        let mut g = gpu.lock().unwrap();
        g.stalled = false;
        let wptr = regs.device_read(CP_RB_WPTR::OFFSET, Width::U32).unwrap();
        run(&mut g, &regs, wptr);
    });
    r.ring.submit(&words, stamp, &r.tl, &r.hooks).unwrap();
    t.join().unwrap();
    r.tl.wait(stamp, &r.hooks).unwrap();
    assert_eq!(r.data(300), 6, "the submission that filled the ring ran after the CP caught up");
    assert_eq!(r.ring.wptr(), RING_WORDS as u64);
    assert_eq!(r.ring.rptr().unwrap(), 0, "the CP consumed the whole ring");
}

#[test]
fn a_cp_fault_is_seen_at_once_with_its_ring_index() {
    let mut r = rig();
    r.submit_write(0, 1).unwrap();
    let at = r.ring.wptr();
    let mut words = Vec::new();
    pkt7(&mut words, op::CP_MEM_WRITE, &[0x10, 0, 5]).unwrap(); // unmapped GPU address
    let (_, stamp) = r.tl.reserve().unwrap();
    r.ring.submit(&words, stamp, &r.tl, &r.hooks).unwrap();
    // A wait that missed the fault would end in the timeline's timeout (30 s here), not in the
    // CP's error.
    r.tl.set_policy(WaitPolicy::with_timeout_ms(30_000));
    let e = r.tl.wait(stamp, &r.hooks).unwrap_err();
    assert!(matches!(e.root(), Error::OutOfBounds { .. }), "the CP's fault, not a timeout: {e}");
    assert!(e.to_string().contains(&format!("ringbuffer {:#x} word {at}", r.ring_gpu)), "{e}");
}

#[test]
fn a_submission_as_large_as_the_ring_is_refused() {
    let mut r = rig_with(16);
    let words = vec![0x7000_0000; 16];
    let (_, stamp) = r.tl.reserve().unwrap();
    let e = r.ring.submit(&words, stamp, &r.tl, &r.hooks).unwrap_err();
    assert!(matches!(e, Error::OutOfSpace { .. }), "{e}");
    assert_eq!(r.ring.wptr(), 0, "nothing written");
    assert_eq!(r.gpu.lock().unwrap().bells, 0);
}

#[test]
fn bad_rings_are_refused() {
    let regs = MockMmio::new(0x40000).unwrap();
    let shadow = Arc::new(HostRegion::new(64, 64).unwrap());
    let cfg = RingConfig { ring_gpu: 0x10_0000, rptr_gpu: 0x20_0000, max_in_flight: 4 };
    let b = CountingBarrier(Arc::new(AtomicU64::new(0)));
    let mk = |bytes: usize, cfg: RingConfig| {
        A6xxRing::new(regs.clone(), Arc::new(HostRegion::new(bytes, 8).unwrap()), shadow.clone(), 0, cfg, b.clone())
    };
    assert!(matches!(mk(96, cfg).unwrap_err(), Error::InvalidArgument { .. }), "not a power of two");
    assert!(matches!(mk(8, cfg).unwrap_err(), Error::InvalidArgument { .. }), "below 16 bytes");
    assert!(matches!(mk(256, RingConfig { ring_gpu: 2, ..cfg }).unwrap_err(), Error::Misaligned { .. }));
    assert!(matches!(mk(256, RingConfig { rptr_gpu: 0, ..cfg }).unwrap_err(), Error::Misaligned { .. }));
    let e = A6xxRing::new(regs.clone(), Arc::new(HostRegion::new(256, 8).unwrap()), shadow.clone(), 64, cfg, b.clone())
        .unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { .. }), "shadow outside its bus: {e}");
    regs.device_write(CP_RB_RPTR::OFFSET, Width::U32, 12).unwrap();
    let e = mk(256, cfg).unwrap_err();
    assert!(e.to_string().contains("CP_RB_RPTR reads 0xc"), "{e}");
}

#[test]
fn the_sim_refuses_a_ring_it_cannot_run() {
    let regs = MockMmio::new(0x40000).unwrap();
    let mut cp = RingCp::new();
    let mut mem = BusMemory::new();
    let e = cp.doorbell(&regs.device(), 4, &mut mem, &mut NoDispatch).unwrap_err();
    assert!(e.to_string().contains("CP_RB_BASE"), "{e}");
    regs.device_write(CP_RB_BASE::OFFSET, Width::U32, 0x1000).unwrap();
    regs.device_write(CP_RB_CNTL::OFFSET, Width::U32, 40).unwrap();
    let e = cp.doorbell(&regs.device(), 4, &mut mem, &mut NoDispatch).unwrap_err();
    assert!(e.to_string().contains("BUFSZ"), "{e}");
    regs.device_write(CP_RB_CNTL::OFFSET, Width::U32, 2).unwrap(); // 8 dwords
    let e = cp.doorbell(&regs.device(), 8, &mut mem, &mut NoDispatch).unwrap_err();
    assert!(e.to_string().contains("outside the ring"), "{e}");
    assert_eq!(cp.cp.ring_rptr(), 0);
}
