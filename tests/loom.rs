//! Loom model check of the HCQ submission protocol: ring words, doorbell, timeline signal.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p hcq --test loom --release`
//! (with `CARGO_TARGET_DIR=target/loom`, the normal build's artifacts are not rebuilt).
//!
//! # What runs for real and what is modelled
//!
//! Under `--cfg loom`, `hcq::sync` re-exports loom's atomics and fence, so the **producer side
//! runs the crate's own code unchanged**: [`Engine`], `Submitter::{kernargs, submit}`, `HwQueue`
//! building and patching, `CommandRing::submit` (two-slice write, `fence(Release)`, doorbell
//! write), `KernargPool::alloc`, the `InFlight` stamp bookkeeping, `Timeline` and
//! `Signal::{value, set, wait}` over a `SignalPage::new_host` page. The consumer runs the
//! crate's own [`SoftCp::step`] (packet decoding off the ring).
//!
//! Modelled in this file, because the real ones are host memory or std threads loom cannot see:
//!
//! - [`LoomMem`]: ring memory, the kernel-argument pool and device "output" memory as one
//!   `loom::cell::UnsafeCell<u32>` per word. Loom reports any access to a word that is not
//!   ordered (happens-before) against a conflicting access by the other side: a consumer read of a
//!   word the producer has not published, and a producer write over a word the consumer may still
//!   read, are both reported as causality violations.
//! - [`Bell`]: the doorbell register, a loom `AtomicU64` written with a **Relaxed** store (an
//!   MMIO write orders nothing by itself; the real `Regs`/`MockMmio` registers store with Release,
//!   which is stronger). Ordering the ring words before it is entirely the job of the
//!   `fence(Release)` in `CommandRing::submit`.
//! - [`Cp`]: the command-processor loop of `hcq::soft::threaded::CpThread::run` — Acquire load of
//!   the doorbell, `SoftCp::step`, publish the read pointer — with `loom::thread::yield_now` in
//!   place of its spin/sleep phases, and a [`SoftTarget`] that mirrors `runner::Target`: waits
//!   are Acquire loads of the signal slot (`host_signals::load`), signals Release stores
//!   (`host_signals::store`), `exec` reads its kernel arguments from the pool and writes device
//!   memory.
//! - [`LoomHooks`]: a clock that never advances (a wait never times out; a protocol deadlock
//!   shows up as loom running out of branches) and loom's `yield_now`.
//!
//! The locks inside `Engine`/`Timeline` (std mutexes for submit/ring/kernargs, spin mutexes for
//! the fault and policy) are not loom-aware; that is sound here because only the producer
//! thread takes the submit/ring/kernarg locks, and the timeline's fault/policy
//! locks hold no loom operation inside (loom never switches threads while they are held).
//!
//! # Properties checked (in every interleaving loom explores)
//!
//! 1. The consumer never reads a ring word the producer has not published (fence + doorbell).
//! 2. The producer never overwrites a ring word or kernel-argument block the consumer has not
//!    finished with: the second and third submissions wrap a 32-word ring (21 words each) and a
//!    two-block kernarg pool, so each must wait for the stamp of the one before.
//! 3. A waiter that observes timeline value `v` sees every write the device made before
//!    signalling `v` (output words read after `Engine::wait`/`synchronize`).
//! 4. Two engines of one device run in timeline order: engine 1's exec reads what engine 0's
//!    exec wrote, ordered only by the timeline wait/signal.
//!
//! Two `should_panic` models show the checker catches the bugs it guards against: a doorbell
//! without the release fence, and a submission whose stamp does not cover its ring words.
//!
//! The positive models are not vacuous: with the `fence(Release)` of `CommandRing::submit`
//! commented out, or the stamp wait of `InFlight::reserve` skipped, they fail with a causality
//! violation (checked by hand when this file was written), as they do when the device's signal
//! store or wait load is weakened to Relaxed.
//!
//! Exploration is complete: no preemption bound (`LOOM_MAX_PREEMPTIONS` sets one), and a branch
//! limit of 100 000 per execution (`LOOM_MAX_BRANCHES` overrides it) because the host and device
//! wait loops spin with loom yields. The single-engine models explore 9 720 interleavings each
//! (the count stops growing from a bound of 20 preemptions on), the two-engine model 57; the
//! file runs in about 3 s in release mode.
#![cfg(loom)]

use hcq::engine::{Channel, Engine};
use hcq::error::{Error, Result, device_name};
use hcq::mmio::{MmioBus, Width};
use hcq::queue::{Command, Encoder, Field};
use hcq::ring::{CommandRing, Doorbell, KernargPool};
use hcq::signal::{OwnedSignal, SignalPage, WaitHooks};
use hcq::soft::{SoftCp, SoftEncoder, SoftTarget, Step};
use hcq::stamp::Stamp;
use hcq::timeline::Timeline;

/// `submit!(s, engine, &mut q)` for `submit!(s, engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: the model's queues run programs STORE and INCREMENT, which write only the
        // model's `out` words, with argument blocks from the submitter's kernel-argument pool.
        unsafe { $target.submit($($arg),+) }
    }};
}
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Run `f` under loom in every interleaving (at least two, or the model is degenerate). No
/// preemption bound unless `LOOM_MAX_PREEMPTIONS` sets one: these models are small enough to
/// explore completely.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        // the wait loops spin (with loom yields) while the other side works
        b.max_branches = 100_000;
    }
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let r = runs.clone();
    b.check(move || {
        r.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    let n = runs.load(std::sync::atomic::Ordering::Relaxed);
    println!("loom explored {n} interleavings");
    assert!(n > 1, "the model has a single interleaving: nothing runs concurrently");
}

/// Device-visible memory as one loom cell per 32-bit word (see the module docs).
struct LoomMem {
    words: Box<[UnsafeCell<u32>]>,
}

// SAFETY: every access goes through loom's `UnsafeCell::with`/`with_mut`, which is exactly what
// loom checks: two unordered conflicting accesses from different threads fail the model.
unsafe impl Sync for LoomMem {}

impl LoomMem {
    fn new(words: usize) -> Arc<Self> {
        Arc::new(Self { words: (0..words).map(|_| UnsafeCell::new(0)).collect() })
    }

    fn cell(&self, offset: usize, len: usize) -> Result<&[UnsafeCell<u32>]> {
        hcq::mmio::check_range("loom memory", offset, len, self.size())?;
        if !offset.is_multiple_of(4) || !len.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "loom memory access", value: offset as u64, align: 4 });
        }
        Ok(&self.words[offset / 4..(offset + len) / 4])
    }

    fn load(&self, i: usize) -> u32 {
        // SAFETY: a plain read of the cell; loom checks it is ordered after the last write.
        self.words[i].with(|p| unsafe { *p })
    }
}

impl MmioBus for LoomMem {
    fn size(&self) -> usize {
        self.words.len() * 4
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        let cells = self.cell(offset, width.bytes().max(4))?;
        let mut v = 0u64;
        for (k, c) in cells.iter().enumerate() {
            // SAFETY: as in `load`.
            v |= u64::from(c.with(|p| unsafe { *p })) << (32 * k);
        }
        Ok(v & width.mask())
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        let cells = self.cell(offset, width.bytes().max(4))?;
        for (k, c) in cells.iter().enumerate() {
            // SAFETY: a plain write of the cell; loom checks no unordered access races with it.
            c.with_mut(|p| unsafe { *p = (value >> (32 * k)) as u32 });
        }
        Ok(())
    }
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        let cells = self.cell(offset, src.len())?;
        for (c, b) in cells.iter().zip(src.chunks_exact(4)) {
            let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            // SAFETY: as in `write`.
            c.with_mut(|p| unsafe { *p = w });
        }
        Ok(())
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        let cells = self.cell(offset, dst.len())?;
        for (c, b) in cells.iter().zip(dst.chunks_exact_mut(4)) {
            // SAFETY: as in `load`.
            b.copy_from_slice(&c.with(|p| unsafe { *p }).to_le_bytes());
        }
        Ok(())
    }
}

/// A doorbell register: a Relaxed store, an Acquire load on the device side.
struct Bell {
    wptr: AtomicU64,
}

impl MmioBus for Bell {
    fn size(&self) -> usize {
        8
    }
    fn read(&self, _offset: usize, _width: Width) -> Result<u64> {
        Ok(self.wptr.load(Ordering::Relaxed))
    }
    fn write(&self, _offset: usize, _width: Width, value: u64) -> Result<()> {
        self.wptr.store(value, Ordering::Relaxed);
        Ok(())
    }
}

/// Wait hooks: a stopped clock (waits never time out) and loom's yield.
struct LoomHooks;

impl WaitHooks for LoomHooks {
    fn now_ns(&self) -> u64 {
        0
    }
    fn yield_now(&self) {
        loom::thread::yield_now();
    }
}

/// Program 0: `out[a0] = a1`. Program 1: `out[a1] = out[a0] + 1`. (`a0`, `a1`: the two u32
/// kernel arguments.)
const STORE: u64 = 0;
const INCREMENT: u64 = 1;

/// The device side of one engine (mirrors `runner::CpThread` and `runner::Target`).
struct Cp {
    ring: Arc<LoomMem>,
    bell: Arc<Bell>,
    rptr: AtomicU64,
    page: Arc<SignalPage>,
    kernargs: Arc<LoomMem>,
    kernarg_base: u64,
    out: Arc<LoomMem>,
}

impl SoftTarget for &Cp {
    fn wait_reached(&mut self, addr: u64, value: u64) -> Result<bool> {
        let (slot, ts) = self.page.resolve(addr).ok_or(Error::InvalidArgument { what: "signal", value: addr })?;
        assert!(!ts, "waits are on signal values");
        Ok(slot.value() >= value)
    }
    fn signal(&mut self, addr: u64, value: u64) -> Result<()> {
        let (slot, _) = self.page.resolve(addr).ok_or(Error::InvalidArgument { what: "signal", value: addr })?;
        // SAFETY: this is the device's command processor: it stores the value of a signal
        // command of the queue it runs in order (the timeline's closing signal).
        unsafe { slot.device_words() }.0.store(value, Ordering::Release);
        Ok(())
    }
    fn timestamp(&mut self, addr: u64) -> Result<()> {
        let (slot, _) = self.page.resolve(addr).ok_or(Error::InvalidArgument { what: "signal", value: addr })?;
        // SAFETY: as above; a timestamp word.
        unsafe { slot.device_words() }.1.store(1, Ordering::Release);
        Ok(())
    }
    fn exec(&mut self, program: u64, kernargs: u64, _: [u32; 3], _: [u32; 3]) -> Result<()> {
        let mut a = [0u8; 8];
        self.kernargs.read_bytes((kernargs - self.kernarg_base) as usize, &mut a)?;
        let a0 = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
        let a1 = u32::from_le_bytes([a[4], a[5], a[6], a[7]]);
        match program {
            STORE => self.out.write(a0 as usize * 4, Width::U32, u64::from(a1)),
            INCREMENT => {
                let v = self.out.read(a0 as usize * 4, Width::U32)?;
                self.out.write(a1 as usize * 4, Width::U32, v + 1)
            }
            _ => Err(Error::InvalidArgument { what: "program", value: program }),
        }
    }
    fn copy(&mut self, _: u64, _: u64, bytes: u64) -> Result<()> {
        Err(Error::Unsupported { what: "copy", value: bytes })
    }
}

impl Cp {
    /// Run the ring until the command processor has signalled the timeline `last` (the
    /// device's final submission on this engine).
    fn run(&self, timeline: u64, last: u64) {
        let words = (self.ring.size() / 4) as u64;
        let mut cp = SoftCp::new();
        let mut t = self;
        loop {
            let wptr = self.bell.wptr.load(Ordering::Acquire);
            match cp.step(&*self.ring, words, wptr, &mut t).expect("command processor fault") {
                Step::Ran(Command::Signal { addr, value }) if addr == timeline && value == last => {
                    self.rptr.store(cp.rptr(), Ordering::Release);
                    return;
                }
                Step::Ran(_) => self.rptr.store(cp.rptr(), Ordering::Release),
                Step::Blocked { .. } | Step::Held | Step::Idle => loom::thread::yield_now(),
            }
        }
    }
}

/// A device with `engines` rings of `ring_words` words and a kernarg pool of `kernarg_bytes`.
struct Rig {
    hcq: Arc<Engine>,
    cps: Vec<Arc<Cp>>,
    out: Arc<LoomMem>,
}

const KERNARG_BASE: u64 = 0x10_0000;

fn rig(engines: usize, ring_words: usize, kernarg_bytes: usize) -> Rig {
    let page = Arc::new(SignalPage::new_host(2));
    let tl = OwnedSignal::new(page.clone(), 0).unwrap();
    let kmem = LoomMem::new(kernarg_bytes / 4);
    let out = LoomMem::new(4);
    let mut engs = Vec::new();
    let mut cps = Vec::new();
    for e in 0..engines {
        let ring = LoomMem::new(ring_words);
        let bell = Arc::new(Bell { wptr: AtomicU64::new(0) });
        let db = Doorbell { bus: bell.clone(), offset: 0, width: Width::U64 };
        engs.push(Channel::new(
            if e == 0 { "compute" } else { "copy" },
            CommandRing::new(ring.clone(), 4, db).unwrap(),
        ));
        cps.push(Arc::new(Cp {
            ring,
            bell,
            rptr: AtomicU64::new(0),
            page: page.clone(),
            kernargs: kmem.clone(),
            kernarg_base: KERNARG_BASE,
            out: out.clone(),
        }));
    }
    let kpool = KernargPool::new(kmem, KERNARG_BASE, 4);
    let encoder: Arc<dyn Encoder> = Arc::new(SoftEncoder);
    let hcq = Engine::new(device_name("LOOM"), tl, encoder, engs, kpool, Arc::new(LoomHooks)).unwrap();
    Rig { hcq: Arc::new(hcq), cps, out }
}

fn args(a0: u32, a1: u32) -> [u8; 8] {
    let mut a = [0u8; 8];
    a[..4].copy_from_slice(&a0.to_le_bytes());
    a[4..].copy_from_slice(&a1.to_le_bytes());
    a
}

fn spawn_cp(r: &Rig, e: usize, last: u64) -> loom::thread::JoinHandle<()> {
    let cp = r.cps[e].clone();
    let tl = r.hcq.timeline().signal().addr();
    loom::thread::spawn(move || cp.run(tl, last))
}

/// Words of a queue with one exec: timeline wait (5) + exec (11) + timeline signal (5).
const ONE_EXEC_WORDS: u64 = 21;

/// Properties 1–3 with freshly built queues: three one-exec submissions through a 32-word ring
/// (each wraps or lands on words of the previous one) and a kernarg pool of two 16-byte blocks
/// (the third block reuses the first one's), while the device runs concurrently.
#[test]
fn submissions_wrap_the_ring_and_kernarg_pool_without_overwriting_in_flight_work() {
    model(|| {
        let r = rig(1, 32, 32);
        let cp = spawn_cp(&r, 0, 3);
        for i in 0..3u32 {
            let mut s = r.hcq.lock();
            let ka = s.kernargs(&args(i, 100 + i), 16, 16).unwrap();
            let mut q = r.hcq.queue().unwrap();
            q.exec(STORE, ka, [1; 3], [1; 3]).unwrap();
            assert_eq!(submit!(s, 0, &mut q).unwrap().get(), u64::from(i) + 1);
            assert_eq!(q.words().len() as u64, ONE_EXEC_WORDS);
        }
        // property 3: once the waiter sees value 1, the device's write before it is visible
        r.hcq.wait(1).unwrap();
        assert_eq!(r.out.load(0), 100);
        r.hcq.synchronize().unwrap();
        assert_eq!([r.out.load(0), r.out.load(1), r.out.load(2)], [100, 101, 102]);
        cp.join().unwrap();
        assert_eq!(r.cps[0].rptr.load(Ordering::Acquire), 3 * ONE_EXEC_WORDS);
    });
}

/// The same properties on the replay path: one captured queue, its kernarg field patched and
/// resubmitted (the timeline wait/signal values are patched by the submitter).
#[test]
fn replaying_a_patched_queue_never_overwrites_in_flight_work() {
    model(|| {
        let r = rig(1, 32, 32);
        let cp = spawn_cp(&r, 0, 3);
        let mut q = r.hcq.queue().unwrap();
        q.exec(STORE, KERNARG_BASE, [1; 3], [1; 3]).unwrap();
        for i in 0..3u32 {
            let mut s = r.hcq.lock();
            let ka = s.kernargs(&args(i, 7 * i + 1), 16, 16).unwrap();
            q.patch(1, Field::Kernargs, ka).unwrap();
            submit!(s, 0, &mut q).unwrap();
        }
        r.hcq.synchronize().unwrap();
        assert_eq!([r.out.load(0), r.out.load(1), r.out.load(2)], [1, 8, 15]);
        cp.join().unwrap();
    });
}

/// Property 4: a submission on engine 1 waits for engine 0's (the timeline), so its exec reads
/// what engine 0's exec wrote; loom checks that read is ordered after the write. Channel 1's
/// processor runs while both queues are submitted; engine 0's starts once they are (a third
/// thread spinning during submission makes the model too large to finish at this bound), and
/// the host joins instead of spinning on the timeline (property 3 is checked above).
#[test]
fn two_engines_of_a_device_run_in_timeline_order() {
    model(|| {
        let r = rig(2, 32, 64);
        let cp1 = spawn_cp(&r, 1, 2);
        {
            let mut s = r.hcq.lock();
            let ka = s.kernargs(&args(0, 41), 16, 16).unwrap();
            let mut q = r.hcq.queue().unwrap();
            q.exec(STORE, ka, [1; 3], [1; 3]).unwrap();
            submit!(s, 0, &mut q).unwrap();
        }
        {
            let mut s = r.hcq.lock();
            let ka = s.kernargs(&args(0, 1), 16, 16).unwrap();
            let mut q = r.hcq.queue().unwrap();
            q.exec(INCREMENT, ka, [1; 3], [1; 3]).unwrap();
            submit!(s, 1, &mut q).unwrap();
        }
        let cp0 = spawn_cp(&r, 0, 1);
        cp0.join().unwrap();
        cp1.join().unwrap();
        assert_eq!((r.out.load(0), r.out.load(1)), (41, 42));
        assert_eq!(r.hcq.timeline().completed(), Stamp::new(2));
    });
}

/// The checker is not blind to the first bug: a producer that rings the doorbell (Relaxed) without
/// the release fence lets the consumer read ring words that are not published.
#[test]
#[should_panic(expected = "Causality violation")]
fn model_catches_a_doorbell_without_release_fence() {
    model(|| {
        let r = rig(1, 32, 32);
        let cp = spawn_cp(&r, 0, 1);
        let mut q = r.hcq.queue().unwrap();
        q.memory_barrier().unwrap();
        q.finish().unwrap();
        // submitted by hand: the timeline wait stays at 0, the closing signal is patched to 1
        q.patch(q.len() - 1, Field::Value, 1).unwrap();
        let ring = &r.cps[0].ring;
        ring.write_bytes(0, le_bytes(q.words()).as_slice()).unwrap();
        // BUG: no fence(Release) here
        r.cps[0].bell.write(0, Width::U64, q.words().len() as u64).unwrap();
        r.hcq.timeline().signal().wait(1, &Default::default(), &LoomHooks, &device_name("LOOM")).unwrap();
        cp.join().unwrap();
    });
}

/// ... nor to the second: a submission stamped with a value the timeline has already reached
/// (so the ring does not wait for it to be consumed) is overwritten by the next one while the
/// device may still read it.
#[test]
#[should_panic(expected = "Causality violation")]
fn model_catches_a_ring_slot_reused_before_its_stamp() {
    model(|| {
        let r = rig(1, 32, 32);
        let tl: &Timeline = r.hcq.timeline();
        let cp = spawn_cp(&r, 0, 2);
        let mut ring = CommandRing::new(
            r.cps[0].ring.clone(),
            4,
            Doorbell { bus: r.cps[0].bell.clone(), offset: 0, width: Width::U64 },
        )
        .unwrap();
        for v in 1..=2u64 {
            // 5 + 11 + 5 = 21 words: the second submission wraps onto words 0..10 of the first
            let mut q = r.hcq.queue().unwrap();
            for _ in 0..11 {
                q.memory_barrier().unwrap();
            }
            q.finish().unwrap();
            q.patch(0, Field::Value, v - 1).unwrap();
            q.patch(q.len() - 1, Field::Value, v).unwrap();
            // BUG: stamp 0 (already reached) instead of `v`: nothing protects these words
            ring.submit(q.words(), Stamp::ZERO, tl, &LoomHooks).unwrap();
        }
        tl.signal().wait(2, &Default::default(), &LoomHooks, &device_name("LOOM")).unwrap();
        cp.join().unwrap();
    });
}

fn le_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
