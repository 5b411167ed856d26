//! Loom model of the indirect-buffer engine shape (`hcq::submit::IbPool`): the host writes IBs
//! into one slot and submits them through a hook; a device thread reads each IB once the hook
//! told it, then signals the IB's stamp on the timeline.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p hcq --test loom_ib --release`.
//!
//! Properties checked in every interleaving:
//! 1. The device never reads an IB word the host has not made visible: the pool's barrier
//!    (`Barrier::Host`, a release fence) orders the word stores before the hook's relaxed store
//!    (the "ioctl"), which the device reads with acquire.
//! 2. The host never rewrites the slot while the device may still read the IB in it: the second
//!    IB waits for the first one's stamp (the device's release store of the signal).
//!
//! The negative model replaces the barrier with one that does nothing: loom then finds the
//! device reading IB words that race with the host's stores. The positive model is not vacuous:
//! with the stamp wait of `IbPool::write` (`InFlight::reserve`) removed it fails with a
//! causality violation (checked by hand when this file was written). It explores 1 342
//! interleavings in well under a second in release mode.
#![cfg(loom)]

use hcq::barrier::{Barrier, DeviceBarrier};
use hcq::error::{Error, Result, device_name};
use hcq::mmio::{MmioBus, Width};
use hcq::signal::{OwnedSignal, SignalPage, WaitHooks};
use hcq::stamp::Stamp;
use hcq::submit::{IbPool, IbSubmit, Submission};
use hcq::timeline::Timeline;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Device-visible memory as one loom cell per 32-bit word: loom reports any two unordered
/// conflicting accesses.
struct LoomMem {
    words: Box<[UnsafeCell<u32>]>,
}

// SAFETY: every access goes through loom's `UnsafeCell::with`/`with_mut`, which is what loom
// checks: two unordered conflicting accesses from different threads fail the model.
unsafe impl Sync for LoomMem {}

impl LoomMem {
    fn cell(&self, offset: usize) -> Result<&UnsafeCell<u32>> {
        if !offset.is_multiple_of(4) {
            return Err(Error::Misaligned { what: "loom memory access", value: offset as u64, align: 4 });
        }
        self.words.get(offset / 4).ok_or(Error::OutOfBounds {
            what: "loom memory",
            offset: offset as u64,
            len: 4,
            limit: self.size() as u64,
        })
    }
}

impl MmioBus for LoomMem {
    fn size(&self) -> usize {
        self.words.len() * 4
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        // SAFETY: a plain read of the cell; loom checks it is ordered after the last write.
        Ok(u64::from(self.cell(offset)?.with(|p| unsafe { *p })) & width.mask())
    }
    fn write(&self, offset: usize, _width: Width, value: u64) -> Result<()> {
        // SAFETY: a plain write of the cell; loom checks no unordered access races with it.
        self.cell(offset)?.with_mut(|p| unsafe { *p = value as u32 });
        Ok(())
    }
}

/// The "ioctl": tells the device how many IBs were submitted, with a relaxed store (ordering
/// is the pool's barrier's job).
struct Hook(Arc<AtomicU64>);

impl IbSubmit for Hook {
    fn submit_ib(&mut self, _addr: u64, _bytes: u64, stamp: Stamp) -> Result<()> {
        self.0.store(stamp.get(), Ordering::Relaxed);
        Ok(())
    }
}

struct NoBarrier;

impl DeviceBarrier for NoBarrier {
    fn device_write_barrier(&self) {}
}

/// Waits never time out (a stopped clock) and yield to loom.
struct LoomHooks;

impl WaitHooks for LoomHooks {
    fn now_ns(&self) -> u64 {
        0
    }
    fn yield_now(&self) {
        loom::thread::yield_now();
    }
}

const WORDS: usize = 2;
const IBS: u64 = 2;

/// Two IBs of `WORDS` words through a one-slot pool; the device checks each IB holds its stamp.
fn two_ibs_through_one_slot(barrier: fn() -> Barrier) {
    let mut b = loom::model::Builder::new();
    b.max_branches = 100_000;
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let r = runs.clone();
    b.check(move || {
        r.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mem = Arc::new(LoomMem { words: (0..WORDS).map(|_| UnsafeCell::new(0)).collect() });
        let told = Arc::new(AtomicU64::new(0));
        let page = Arc::new(SignalPage::new_host(1));
        let tl = Arc::new(Timeline::new(device_name("L"), OwnedSignal::new(page, 0).unwrap()));
        let device = {
            let (mem, told, tl) = (mem.clone(), told.clone(), tl.clone());
            loom::thread::spawn(move || {
                for stamp in 1..=IBS {
                    while told.load(Ordering::Acquire) < stamp {
                        loom::thread::yield_now();
                    }
                    for i in 0..WORDS {
                        assert_eq!(mem.read(4 * i, Width::U32).unwrap(), stamp, "the IB of stamp {stamp}");
                    }
                    // SAFETY: this thread is the device: it checked the IB of `stamp` (its
                    // only work) before completing it, in order.
                    unsafe { tl.device_complete(stamp) };
                }
            })
        };
        let mut pool = IbPool::new(mem, 0, 4 * WORDS, barrier(), Box::new(Hook(told))).unwrap();
        for stamp in 1..=IBS {
            let words = [stamp as u32; WORDS];
            pool.write(&words, Stamp::new(stamp), &tl, &LoomHooks).unwrap();
            pool.kick().unwrap();
        }
        device.join().unwrap();
    });
    let n = runs.load(std::sync::atomic::Ordering::Relaxed);
    println!("loom explored {n} interleavings");
    assert!(n > 1, "the model has a single interleaving: nothing runs concurrently");
}

#[test]
fn an_ib_slot_is_read_after_its_barrier_and_rewritten_only_after_its_stamp() {
    two_ibs_through_one_slot(|| Barrier::Host);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn without_the_barrier_the_device_reads_words_that_race_with_the_host() {
    two_ibs_through_one_slot(|| Barrier::Custom(Arc::new(NoBarrier)));
}
