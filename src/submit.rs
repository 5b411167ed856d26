//! How a submission's words reach a device: the two shapes of an engine.
//!
//! - **Ring + doorbell** ([`CommandRing`]): the words go into a circular ring the device
//!   consumes, then a register (or shared word) is told the new write pointer. The software
//!   command processor, the bare-metal Adreno ringbuffer and PCIe devices work this way.
//! - **Indirect buffer** ([`IbPool`]): there is no ring the host may write (KGSL keeps the ring
//!   in the kernel); the words go into an IB slot in device-visible memory and a backend hook
//!   ([`IbSubmit`], `IOCTL_KGSL_GPU_COMMAND`) hands the device `(address, size)`.
//!
//! Both keep the same guarantee: a span of ring words or an IB slot is stamped with the timeline
//! value its submission signals, and the producer waits for the timeline to pass that stamp
//! before it writes there again ([`InFlight`]); both issue the backend's [`Barrier`] between the
//! last word written and the doorbell or submit call, and a hardware device's memory is written
//! with word-sized volatile stores ([`write_words`]), never a `memcpy`.
//!
//! [`write_words`]: crate::mmio::write_words
//!
//! [`Submission`] is the interface of a shape; [`Shape`] is the enum an
//! [`Channel`](crate::engine::Channel) holds, so the ring path pays one predictable branch and no
//! dynamic call.

#[cfg(feature = "ib")]
use crate::barrier::Barrier;
#[cfg(feature = "ib")]
use crate::error::Error;
use crate::error::Result;
#[cfg(feature = "ib")]
use crate::mmio::{MmioBus, write_words};
use crate::ring::{CommandRing, InFlight};
use crate::signal::WaitHooks;
use crate::stamp::Stamp;
use crate::timeline::Timeline;
#[cfg(feature = "ib")]
use alloc::boxed::Box;
#[cfg(feature = "ib")]
use alloc::sync::Arc;
#[cfg(feature = "ib")]
use alloc::vec;
#[cfg(feature = "ib")]
use alloc::vec::Vec;

/// One shape of submission (see the module docs).
pub trait Submission {
    /// Put `words` where the device will read them, for the submission whose last command
    /// signals `stamp`, without telling the device yet. Waits (on `tl`) until the space it
    /// needs is no longer used by a submission in flight; on error nothing is recorded.
    fn write(&mut self, words: &[u32], stamp: Stamp, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<()>;
    /// Issue the backend's barrier, then tell the device (doorbell write, submit call). Returns
    /// the position after the submission (ring words, or IBs submitted).
    fn kick(&mut self) -> Result<u64>;
    /// The largest submission in words.
    fn max_words(&self) -> u64;
    /// The monotonic position: the ring's write pointer in words, or the IBs written.
    fn position(&self) -> u64;
    /// What is in flight.
    fn in_flight(&self) -> &InFlight;
}

impl Submission for CommandRing {
    #[inline]
    fn write(&mut self, words: &[u32], stamp: Stamp, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<()> {
        CommandRing::write(self, words, stamp, tl, hooks)
    }
    #[inline]
    fn kick(&mut self) -> Result<u64> {
        CommandRing::kick(self)
    }
    fn max_words(&self) -> u64 {
        self.capacity_words()
    }
    fn position(&self) -> u64 {
        self.wptr()
    }
    fn in_flight(&self) -> &InFlight {
        CommandRing::in_flight(self)
    }
}

#[cfg(feature = "ib")]
/// The backend hook of the IB shape: hand the device the indirect buffer of `bytes` bytes at
/// device address `addr`, whose last command signals `stamp` on the device's timeline
/// (`IOCTL_KGSL_GPU_COMMAND` on KGSL). Called after the barrier; an error is the device's
/// fault (the timeline value is already taken).
pub trait IbSubmit: Send {
    /// Submit the IB.
    fn submit_ib(&mut self, addr: u64, bytes: u64, stamp: Stamp) -> Result<()>;
}

#[cfg(feature = "ib")]
/// Indirect buffers in device-visible memory: fixed-size slots used round-robin, each reused
/// only once the timeline passed the stamp of the submission that used it last.
///
/// The pool's memory is the pool's: the device only reads it (the commands the engine submits
/// never name an IB slot as a write target: `Submitter::submit`'s contract) and nothing else on
/// the host writes it. The pool keeps
/// a host copy of what it wrote to each slot and, when a slot is reused, stores only the words
/// that differ from it.
pub struct IbPool {
    mem: Arc<dyn MmioBus + Send>,
    device_base: u64,
    slot_bytes: usize,
    slots: u64,
    /// IBs written so far (monotonic); slot `next % slots` is the next one.
    next: u64,
    flight: InFlight,
    /// Written, not yet submitted: (device address, bytes, stamp).
    pending: Option<(u64, u64, Stamp)>,
    barrier: Barrier,
    hook: Box<dyn IbSubmit>,
    /// What the pool last wrote to each slot (`slot_bytes / 4` words a slot), and how many
    /// words at each slot's start are known to hold it. A slot is written again only where the
    /// new IB differs: a replayed call, whose words change only at its patched marks (timeline
    /// wait and signal, kernel arguments), costs a host-memory compare and a few device stores
    /// instead of a store per word.
    shadow: Vec<u32>,
    known: Vec<usize>,
}

#[cfg(feature = "ib")]
impl core::fmt::Debug for IbPool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IbPool")
            .field("device_base", &format_args!("{:#x}", self.device_base))
            .field("slot_bytes", &self.slot_bytes)
            .field("slots", &self.slots)
            .field("next", &self.next)
            .field("retired", &self.flight.retired())
            .field("barrier", &self.barrier)
            .finish()
    }
}

#[cfg(feature = "ib")]
impl IbPool {
    /// A pool of `mem.size() / slot_bytes` slots over `mem`, which the device sees at
    /// `device_base`; each IB is handed to `hook` after `barrier` ([`Barrier::DeviceWrite`] for
    /// hardware). `slot_bytes` must be a non-zero multiple of 4 no larger than `mem`, and
    /// `device_base` 4-byte aligned.
    pub fn new(
        mem: Arc<dyn MmioBus + Send>,
        device_base: u64,
        slot_bytes: usize,
        barrier: Barrier,
        hook: Box<dyn IbSubmit>,
    ) -> Result<Self> {
        if slot_bytes == 0 || !slot_bytes.is_multiple_of(4) {
            return Err(Error::InvalidArgument {
                what: "IB pool: the slot size must be a non-zero multiple of 4 bytes",
                value: slot_bytes as u64,
            });
        }
        if !device_base.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "IB pool: device address", value: device_base, align: 4 });
        }
        // CAST: usize is at most 64 bits on every target.
        let slots = (mem.size() / slot_bytes) as u64;
        if slots == 0 {
            return Err(Error::OutOfSpace {
                what: "IB pool: memory for one slot",
                requested: slot_bytes as u64,
                capacity: mem.size() as u64,
            });
        }
        // CAST: a slot count that fits memory fits a usize.
        let n = slots as usize;
        Ok(Self {
            mem,
            device_base,
            slot_bytes,
            slots,
            next: 0,
            flight: InFlight::new(slots, n),
            pending: None,
            barrier,
            hook,
            shadow: vec![0; n * (slot_bytes / 4)],
            known: vec![0; n],
        })
    }

    /// Number of slots (IBs in flight at most).
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Bytes per slot.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Device address of slot `i`.
    pub fn slot_addr(&self, i: u64) -> u64 {
        // CAST: usize is at most 64 bits.
        self.device_base + (i % self.slots) * self.slot_bytes as u64
    }

    /// The pool's memory.
    pub fn memory(&self) -> &Arc<dyn MmioBus + Send> {
        &self.mem
    }

    /// The barrier issued before each submit.
    pub fn barrier(&self) -> &Barrier {
        &self.barrier
    }

    /// Make slot `slot` (at byte `off`) hold `words`: where the host copy says the slot holds
    /// a word already, store only the words that differ (compared in blocks, so an unchanged
    /// block costs a compare); past what is known, store every word. On an error the slot is
    /// taken as unknown, so the next IB there is written whole.
    fn write_slot(&mut self, slot: usize, off: usize, words: &[u32]) -> Result<()> {
        /// Words compared at a time (an unchanged block is one slice compare).
        const BLOCK: usize = 32;
        let per_slot = self.slot_bytes / 4;
        let shadow = &mut self.shadow[slot * per_slot..][..words.len()];
        let was_known = self.known[slot];
        let known = was_known.min(words.len());
        self.known[slot] = 0;
        let mem = &*self.mem;
        for (b, (new, old)) in words[..known].chunks(BLOCK).zip(shadow[..known].chunks_mut(BLOCK)).enumerate() {
            if new == old {
                continue;
            }
            for (i, (n, o)) in new.iter().zip(old.iter_mut()).enumerate() {
                if n != o {
                    mem.write(off + 4 * (b * BLOCK + i), crate::mmio::Width::U32, u64::from(*n))?;
                    *o = *n;
                }
            }
        }
        write_words(mem, off + 4 * known, &words[known..])?;
        shadow[known..].copy_from_slice(&words[known..]);
        // the words past this IB are what they were: still known when they were
        self.known[slot] = words.len().max(was_known);
        Ok(())
    }
}

#[cfg(feature = "ib")]
impl Submission for IbPool {
    fn write(&mut self, words: &[u32], stamp: Stamp, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<()> {
        if self.pending.is_some() {
            return Err(Error::InvalidArgument {
                what: "IB pool: an IB was written and not submitted yet (kick before the next write)",
                value: self.next,
            });
        }
        let bytes = (words.len() as u64).saturating_mul(4);
        if words.is_empty() || bytes > self.slot_bytes as u64 {
            return Err(Error::OutOfSpace { what: "IB pool slot", requested: bytes, capacity: self.slot_bytes as u64 });
        }
        self.flight.retire_completed(tl);
        // the slot is free once the IB written `slots` IBs ago has retired
        self.flight.reserve(self.next + 1, "IB pool", tl, hooks)?;
        let slot = self.next % self.slots;
        // CAST: `slot * slot_bytes` lies inside the pool's memory, whose size is a usize.
        let off = (slot as usize) * self.slot_bytes;
        self.write_slot(slot as usize, off, words)?;
        self.next += 1;
        self.flight.push(self.next, stamp);
        self.pending = Some((self.slot_addr(slot), bytes, stamp));
        Ok(())
    }

    fn kick(&mut self) -> Result<u64> {
        let Some((addr, bytes, stamp)) = self.pending.take() else {
            return Ok(self.next);
        };
        // The IB words must reach memory before the device is told where they are.
        self.barrier.issue();
        self.hook.submit_ib(addr, bytes, stamp)?;
        Ok(self.next)
    }

    fn max_words(&self) -> u64 {
        (self.slot_bytes / 4) as u64
    }

    fn position(&self) -> u64 {
        self.next
    }

    fn in_flight(&self) -> &InFlight {
        &self.flight
    }
}

/// The shape of an engine (see the module docs).
#[derive(Debug)]
pub enum Shape {
    /// A ring and its doorbell.
    Ring(CommandRing),
    /// Indirect buffers handed to a submit hook (feature `ib`).
    #[cfg(feature = "ib")]
    Ib(IbPool),
}

impl From<CommandRing> for Shape {
    fn from(r: CommandRing) -> Self {
        Shape::Ring(r)
    }
}

#[cfg(feature = "ib")]
impl From<IbPool> for Shape {
    fn from(p: IbPool) -> Self {
        Shape::Ib(p)
    }
}

impl Submission for Shape {
    #[inline]
    fn write(&mut self, words: &[u32], stamp: Stamp, tl: &Timeline, hooks: &dyn WaitHooks) -> Result<()> {
        match self {
            Shape::Ring(r) => r.write(words, stamp, tl, hooks),
            #[cfg(feature = "ib")]
            Shape::Ib(p) => Submission::write(p, words, stamp, tl, hooks),
        }
    }
    #[inline]
    fn kick(&mut self) -> Result<u64> {
        match self {
            Shape::Ring(r) => r.kick(),
            #[cfg(feature = "ib")]
            Shape::Ib(p) => Submission::kick(p),
        }
    }
    fn max_words(&self) -> u64 {
        match self {
            Shape::Ring(r) => r.capacity_words(),
            #[cfg(feature = "ib")]
            Shape::Ib(p) => p.max_words(),
        }
    }
    fn position(&self) -> u64 {
        match self {
            Shape::Ring(r) => r.wptr(),
            #[cfg(feature = "ib")]
            Shape::Ib(p) => p.position(),
        }
    }
    fn in_flight(&self) -> &InFlight {
        match self {
            Shape::Ring(r) => CommandRing::in_flight(r),
            #[cfg(feature = "ib")]
            Shape::Ib(p) => Submission::in_flight(p),
        }
    }
}

#[cfg(all(test, feature = "ib", not(loom)))]
mod tests {
    use super::*;
    use crate::barrier::DeviceBarrier;
    use crate::error::device_name;
    use crate::mmio::{HostRegion, Width};
    use crate::ring::Doorbell;
    use crate::signal::{SignalPool, StdHooks, WaitPolicy};
    use alloc::vec::Vec;
    use std::sync::Mutex;

    /// What happened, in order: barriers, submits (with the IB's words as the device would
    /// read them then) and doorbell writes.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Ev {
        Barrier,
        Submit { addr: u64, words: Vec<u32>, stamp: u64 },
        Doorbell(u64),
    }

    type Log = Arc<Mutex<Vec<Ev>>>;

    struct LogBarrier(Log);
    impl DeviceBarrier for LogBarrier {
        fn device_write_barrier(&self) {
            self.0.lock().unwrap().push(Ev::Barrier);
        }
    }

    /// The fake submit hook: reads the IB back from the pool's memory at submit time.
    struct Hook {
        log: Log,
        mem: Arc<HostRegion>,
        base: u64,
    }
    impl IbSubmit for Hook {
        fn submit_ib(&mut self, addr: u64, bytes: u64, stamp: Stamp) -> Result<()> {
            let off = (addr - self.base) as usize;
            let words = (0..bytes as usize / 4).map(|i| self.mem.read(off + 4 * i, Width::U32).unwrap() as u32);
            self.log.lock().unwrap().push(Ev::Submit { addr, words: words.collect(), stamp: stamp.get() });
            Ok(())
        }
    }

    struct Bell(Log);
    impl MmioBus for Bell {
        fn size(&self) -> usize {
            8
        }
        fn read(&self, _: usize, _: Width) -> Result<u64> {
            Ok(0)
        }
        fn write(&self, _: usize, _: Width, v: u64) -> Result<()> {
            self.0.lock().unwrap().push(Ev::Doorbell(v));
            Ok(())
        }
    }

    const BASE: u64 = 0x10_0000;

    fn pool(slots: usize, slot_bytes: usize) -> (IbPool, Arc<HostRegion>, Log, Timeline) {
        let log = Log::default();
        let mem = Arc::new(HostRegion::new(slots * slot_bytes, 8).unwrap());
        let hook = Hook { log: log.clone(), mem: mem.clone(), base: BASE };
        let barrier = Barrier::Custom(Arc::new(LogBarrier(log.clone())));
        let p = IbPool::new(mem.clone(), BASE, slot_bytes, barrier, Box::new(hook)).unwrap();
        let sigs = SignalPool::new();
        let tl = Timeline::new(device_name("T"), sigs.alloc(0));
        tl.set_policy(WaitPolicy::with_timeout_ms(20));
        (p, mem, log, tl)
    }

    fn submit(p: &mut impl Submission, words: &[u32], stamp: u64, tl: &Timeline) -> Result<u64> {
        p.write(words, Stamp::new(stamp), tl, &StdHooks)?;
        p.kick()
    }

    #[test]
    fn ibs_go_round_robin_and_each_submit_follows_a_barrier() {
        let (mut p, _mem, log, tl) = pool(2, 64);
        submit(&mut p, &[1, 2, 3], 1, &tl).unwrap();
        submit(&mut p, &[4, 5], 2, &tl).unwrap();
        tl.signal().set(1); // the device finished the first IB: its slot may be reused
        submit(&mut p, &[6; 16], 3, &tl).unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log,
            [
                Ev::Barrier,
                Ev::Submit { addr: BASE, words: alloc::vec![1, 2, 3], stamp: 1 },
                Ev::Barrier,
                Ev::Submit { addr: BASE + 64, words: alloc::vec![4, 5], stamp: 2 },
                Ev::Barrier,
                Ev::Submit { addr: BASE, words: alloc::vec![6; 16], stamp: 3 },
            ]
        );
        assert_eq!(p.position(), 3);
    }

    /// Device memory that counts its stores, and can refuse them from the `fail_at`-th on.
    struct Counting {
        mem: Arc<HostRegion>,
        stores: core::sync::atomic::AtomicUsize,
        fail_at: core::sync::atomic::AtomicUsize,
    }
    impl MmioBus for Counting {
        fn size(&self) -> usize {
            self.mem.size()
        }
        fn read(&self, o: usize, w: Width) -> Result<u64> {
            self.mem.read(o, w)
        }
        fn write(&self, o: usize, w: Width, v: u64) -> Result<()> {
            use core::sync::atomic::Ordering::SeqCst;
            if self.stores.fetch_add(1, SeqCst) >= self.fail_at.load(SeqCst) {
                return Err(Error::OutOfBounds { what: "test store refused", offset: o as u64, len: 4, limit: 0 });
            }
            self.mem.write(o, w, v)
        }
    }

    /// A reused slot gets stores only where the new IB differs from what the pool wrote there
    /// (a replayed call: its patched marks), and reads back whole; a slot never written, and
    /// the part of a longer IB past what the slot held, are written word by word; a failed
    /// write leaves the slot unknown, so the next IB there is written whole. On the old pool
    /// every IB cost a store per word.
    #[test]
    fn a_reused_slot_is_stored_only_where_the_ib_changed() {
        use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let mem = Arc::new(HostRegion::new(2 * 256, 8).unwrap());
        let bus =
            Arc::new(Counting { mem: mem.clone(), stores: AtomicUsize::new(0), fail_at: AtomicUsize::new(usize::MAX) });
        let hook = Hook { log: Log::default(), mem: mem.clone(), base: BASE };
        let mut p = IbPool::new(bus.clone(), BASE, 256, Barrier::Host, Box::new(hook)).unwrap();
        let tl = Timeline::new(device_name("T"), SignalPool::new().alloc(0));
        tl.set_policy(WaitPolicy::with_timeout_ms(20));
        let stores = || bus.stores.swap(0, SeqCst);
        let slot0 = |n: usize| (0..n).map(|i| mem.read(4 * i, Width::U32).unwrap() as u32).collect::<Vec<_>>();
        let mut ib: Vec<u32> = (0..60).map(|i| 0x7000_0000 | i).collect();
        submit(&mut p, &ib, 1, &tl).unwrap();
        assert_eq!(stores(), 60, "a fresh slot: every word");
        submit(&mut p, &[9; 8], 2, &tl).unwrap();
        stores();
        tl.signal().set(2);
        // the replay: the same IB with its wait and signal values patched
        ib[3] = 0xdead;
        ib[57] = 0xbeef;
        submit(&mut p, &ib, 3, &tl).unwrap();
        assert_eq!(stores(), 2, "only the two patched words");
        assert_eq!(slot0(60), ib);
        // slot 1 held 8 words: a 20-word IB there stores the changed ones of the 8 and the 12 after
        tl.signal().set(3);
        let mut b = alloc::vec![9u32; 20];
        b[1] = 1;
        submit(&mut p, &b, 4, &tl).unwrap();
        assert_eq!(stores(), 1 + 12);
        // a shorter IB in slot 0 keeps the rest of the slot known: the long one after it costs 1
        tl.signal().set(4);
        submit(&mut p, &ib[..10], 5, &tl).unwrap();
        assert_eq!(stores(), 0, "the first 10 words are there already");
        submit(&mut p, &b, 6, &tl).unwrap();
        tl.signal().set(6);
        ib[40] = 1;
        submit(&mut p, &ib, 7, &tl).unwrap();
        assert_eq!(stores(), 1);
        assert_eq!(slot0(60), ib);
        // a store refused mid-IB: the write fails, and the next IB in that slot is stored whole
        tl.signal().set(7);
        submit(&mut p, &b, 8, &tl).unwrap();
        tl.signal().set(8);
        ib[0] = 2;
        ib[59] = 2;
        bus.fail_at.store(1, SeqCst);
        stores();
        assert!(submit(&mut p, &ib, 9, &tl).is_err());
        bus.fail_at.store(usize::MAX, SeqCst);
        stores();
        submit(&mut p, &ib, 9, &tl).unwrap();
        assert_eq!(stores(), 60, "unknown after the failure: every word again");
        assert_eq!(slot0(60), ib);
    }

    #[test]
    fn a_slot_is_not_rewritten_before_its_stamp_passes() {
        let (mut p, mem, log, tl) = pool(2, 64);
        submit(&mut p, &[1; 4], 1, &tl).unwrap();
        submit(&mut p, &[2; 4], 2, &tl).unwrap();
        // both slots in flight: the third IB must wait for stamp 1, which never comes
        let e = submit(&mut p, &[3; 4], 3, &tl).unwrap_err();
        assert!(matches!(e, Error::Timeout { awaited: 1, .. }), "{e:?}");
        assert_eq!(mem.read(0, Width::U32).unwrap(), 1, "slot 0 still holds the IB in flight");
        assert_eq!(p.position(), 2, "nothing recorded");
        assert_eq!(log.lock().unwrap().len(), 4, "nothing submitted");
    }

    #[test]
    fn bad_sizes_and_unpaired_writes_are_errors() {
        let (mut p, _mem, _log, tl) = pool(2, 64);
        assert!(matches!(submit(&mut p, &[0; 17], 1, &tl), Err(Error::OutOfSpace { requested: 68, .. })));
        assert!(matches!(submit(&mut p, &[], 1, &tl), Err(Error::OutOfSpace { .. })));
        p.write(&[1], Stamp::new(1), &tl, &StdHooks).unwrap();
        assert!(matches!(p.write(&[1], Stamp::new(2), &tl, &StdHooks), Err(Error::InvalidArgument { .. })));
        assert_eq!(p.kick().unwrap(), 1);
        assert_eq!(p.kick().unwrap(), 1, "a kick with nothing written submits nothing");
        let mem = Arc::new(HostRegion::new(64, 8).unwrap());
        let hook = || Box::new(Hook { log: Log::default(), mem: mem.clone(), base: 0 });
        assert!(IbPool::new(mem.clone(), 0, 6, Barrier::Host, hook()).is_err());
        assert!(IbPool::new(mem.clone(), 0, 128, Barrier::Host, hook()).is_err());
        assert!(IbPool::new(mem.clone(), 2, 64, Barrier::Host, hook()).is_err());
    }

    #[test]
    fn a_ring_with_a_backend_barrier_issues_it_before_every_doorbell() {
        let log = Log::default();
        let mem = Arc::new(HostRegion::new(64, 8).unwrap());
        let bell = Doorbell { bus: Arc::new(Bell(log.clone())), offset: 0, width: Width::U64 };
        let mut r = CommandRing::new(mem.clone(), 4, bell)
            .unwrap()
            .with_barrier(Barrier::Custom(Arc::new(LogBarrier(log.clone()))));
        let sigs = SignalPool::new();
        let tl = Timeline::new(device_name("T"), sigs.alloc(0));
        submit(&mut r, &[7; 3], 1, &tl).unwrap();
        submit(&mut r, &[8; 2], 2, &tl).unwrap();
        assert_eq!(*log.lock().unwrap(), [Ev::Barrier, Ev::Doorbell(3), Ev::Barrier, Ev::Doorbell(5)]);
        assert_eq!(mem.read(12, Width::U32).unwrap(), 8, "words written one by one");
    }
}
