//! Cost of the HCQ engine's hot paths on the simulated device, and a thread round trip through
//! `std::sync::mpsc` for scale.
//!
//! - `sim::build_submit_one_exec`: build a one-exec queue, fill its kernel arguments, submit;
//!   the SIM command processor consumes in the background (when it falls behind, the ring's
//!   stamp check makes the host wait, so this is the pipeline's throughput).
//! - `sim::replay_100_patch_submit` / `sim::replay_100_kernargs_patch_submit`: replay a captured
//!   100-exec queue: patch the 100 kernel-argument addresses (to fixed blocks, or to blocks
//!   freshly filled through `Submitter::kernargs`) and submit. Throughput is per command.
//! - `host_only::*`: the same host work against an engine whose "device" completes a submission
//!   the moment it is submitted (the timeline is set by the host), so nothing waits: the host
//!   cost alone.
//! - `round_trip::sim_submit_synchronize`: submit a captured one-exec queue and wait for its
//!   timeline value: host → ring → CP thread → signal → host. `..._yielding_wait` is the same
//!   with a wait policy that yields the CPU from the first poll instead of spinning 20 µs first
//!   (it matters when the host and the CP thread share a core).
//! - `round_trip::mpsc_pair` / `round_trip::atomic_spin_pair`: the same two-thread round trip as
//!   a message over a pair of `std::sync::mpsc` channels, and as a spinning atomic handshake.
//!
//! The machine these run on is shared: compare medians, and run with nothing else busy.

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use hcq::engine::{Channel, Engine};
use hcq::error::device_name;
use hcq::mmio::{HostRegion, Width};
use hcq::queue::{Field, HwQueue};
use hcq::ring::{CommandRing, Doorbell, KernargPool};
use hcq::signal::{StdHooks, WaitPolicy};
use hcq::soft::{HOST_SIGNALS, SoftEncoder};
use hcq_sim::SimDevice;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

fn main() {
    divan::main();
}

const ARGS: [u8; 16] = [7; 16];

fn sim() -> (SimDevice, u64) {
    let dev = SimDevice::with_defaults("SIM").unwrap();
    let prog = dev.register(16, |args, _, _| {
        black_box(args);
        Ok(())
    });
    (dev, prog.unwrap())
}

/// An engine over host memory whose device never runs: callers retire each submission by
/// setting the timeline themselves.
fn host_only() -> Engine {
    let ring = Arc::new(HostRegion::new(256 << 10, 64).unwrap());
    let bell = Arc::new(HostRegion::new(8, 8).unwrap());
    let kmem = Arc::new(HostRegion::new(1 << 20, 4096).unwrap());
    let doorbell = Doorbell { bus: bell, offset: 0, width: Width::U64 };
    let engine = Channel::new("compute", CommandRing::new(ring, 1024, doorbell).unwrap());
    let kpool = KernargPool::new(kmem.clone(), kmem.addr(), 1024);
    Engine::new(
        device_name("HOST"),
        HOST_SIGNALS.alloc(0),
        Arc::new(SoftEncoder),
        vec![engine],
        kpool,
        Arc::new(StdHooks),
    )
    .unwrap()
}

fn build_submit(hcq: &Engine, prog: u64) -> u64 {
    let mut s = hcq.lock();
    let ka = s.kernargs(&ARGS, 16, 16).unwrap();
    let mut q = hcq.queue().unwrap();
    q.exec(prog, ka, [1; 3], [1; 3]).unwrap();
    submit!(s, 0, &mut q).unwrap().get()
}

fn captured_100(hcq: &Engine, prog: u64) -> (HwQueue, Vec<u64>) {
    let mut q = hcq.queue().unwrap();
    let mut blocks = Vec::new();
    for _ in 0..100 {
        let ka = hcq.lock().kernargs(&ARGS, 16, 16).unwrap();
        blocks.push(ka);
        q.exec(prog, ka, [1; 3], [1; 3]).unwrap();
    }
    hcq.synchronize().unwrap();
    (q, blocks)
}

fn patch_submit(hcq: &Engine, q: &mut HwQueue, blocks: &[u64], turn: usize) -> u64 {
    let mut s = hcq.lock();
    // a different block per command each turn, so every patch changes the words
    let rotated = blocks.iter().cycle().skip(turn % blocks.len()).take(blocks.len());
    for (c, &ka) in rotated.enumerate() {
        q.patch(c + 1, Field::Kernargs, ka).unwrap();
    }
    submit!(s, 0, q).unwrap().get()
}

fn kernargs_patch_submit(hcq: &Engine, q: &mut HwQueue) -> u64 {
    let mut s = hcq.lock();
    for c in 1..=100 {
        let ka = s.kernargs(&ARGS, 16, 16).unwrap();
        q.patch(c, Field::Kernargs, ka).unwrap();
    }
    submit!(s, 0, q).unwrap().get()
}

mod sim {
    use super::*;

    #[divan::bench]
    fn build_submit_one_exec(b: Bencher) {
        let (dev, prog) = sim();
        b.bench_local(|| build_submit(dev.engine(), prog));
        dev.engine().synchronize().unwrap();
    }

    #[divan::bench]
    fn replay_100_patch_submit(b: Bencher) {
        let (dev, prog) = sim();
        let (mut q, blocks) = captured_100(dev.engine(), prog);
        let mut turn = 0;
        b.counter(ItemsCount::new(100usize)).bench_local(|| {
            turn += 1;
            patch_submit(dev.engine(), &mut q, &blocks, turn)
        });
        dev.engine().synchronize().unwrap();
    }

    #[divan::bench]
    fn replay_100_kernargs_patch_submit(b: Bencher) {
        let (dev, prog) = sim();
        let (mut q, _) = captured_100(dev.engine(), prog);
        b.counter(ItemsCount::new(100usize)).bench_local(|| kernargs_patch_submit(dev.engine(), &mut q));
        dev.engine().synchronize().unwrap();
    }
}

mod host_only {
    use super::*;

    /// Stand in for the device: the engine of `host_only` has no command processor, so each
    /// submission is marked done at once.
    fn complete(hcq: &Engine, v: u64) {
        // SAFETY: nothing runs these rings: no command of a submission ever accesses memory,
        // and `v` is the value just submitted (the timeline moves forward only).
        unsafe { hcq.timeline().device_complete(v) }
    }

    #[divan::bench]
    fn build_submit_one_exec(b: Bencher) {
        let hcq = host_only();
        b.bench_local(|| complete(&hcq, build_submit(&hcq, 0)));
    }

    #[divan::bench]
    fn replay_100_patch_submit(b: Bencher) {
        let hcq = host_only();
        let mut q = hcq.queue().unwrap();
        let mut blocks = Vec::new();
        for _ in 0..100 {
            let ka = hcq.lock().kernargs(&ARGS, 16, 16).unwrap();
            blocks.push(ka);
            q.exec(0, ka, [1; 3], [1; 3]).unwrap();
        }
        let mut turn = 0;
        b.counter(ItemsCount::new(100usize)).bench_local(|| {
            turn += 1;
            complete(&hcq, patch_submit(&hcq, &mut q, &blocks, turn))
        });
    }

    #[divan::bench]
    fn replay_100_kernargs_patch_submit(b: Bencher) {
        let hcq = host_only();
        let mut q = hcq.queue().unwrap();
        for _ in 0..100 {
            q.exec(0, 0, [1; 3], [1; 3]).unwrap();
        }
        b.counter(ItemsCount::new(100usize)).bench_local(|| complete(&hcq, kernargs_patch_submit(&hcq, &mut q)));
    }
}

mod round_trip {
    use super::*;
    use std::sync::mpsc;

    #[divan::bench]
    fn sim_submit_synchronize(b: Bencher) {
        submit_synchronize(b, false);
    }

    #[divan::bench]
    fn sim_submit_synchronize_yielding_wait(b: Bencher) {
        submit_synchronize(b, true);
    }

    fn submit_synchronize(b: Bencher, yielding: bool) {
        let (dev, prog) = sim();
        let hcq = dev.engine();
        if yielding {
            // no spin phase: the host yields its core from the first poll on
            hcq.timeline().set_policy(WaitPolicy { spin_ns: 0, ..WaitPolicy::default() });
        }
        let ka = hcq.lock().kernargs(&ARGS, 16, 16).unwrap();
        let mut q = hcq.queue().unwrap();
        q.exec(prog, ka, [1; 3], [1; 3]).unwrap();
        b.bench_local(|| {
            submit!(hcq, 0, &mut q).unwrap();
            hcq.synchronize().unwrap();
        });
    }

    #[divan::bench]
    fn mpsc_pair(b: Bencher) {
        let (to_peer, peer_rx) = mpsc::channel::<u64>();
        let (peer_tx, from_peer) = mpsc::channel::<u64>();
        let peer = std::thread::spawn(move || {
            while let Ok(v) = peer_rx.recv() {
                if peer_tx.send(v + 1).is_err() {
                    break;
                }
            }
        });
        b.bench_local(|| {
            to_peer.send(black_box(1)).unwrap();
            from_peer.recv().unwrap()
        });
        drop(to_peer);
        peer.join().unwrap();
    }

    #[divan::bench]
    fn atomic_spin_pair(b: Bencher) {
        // even: the host's turn; odd: the peer's; u64::MAX: stop
        let flag = Arc::new(AtomicU64::new(0));
        let f = flag.clone();
        let peer = std::thread::spawn(move || {
            loop {
                let v = f.load(Ordering::Acquire);
                if v == u64::MAX {
                    break;
                }
                if v % 2 == 1 {
                    f.store(v + 1, Ordering::Release);
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 1u64;
        b.bench_local(|| {
            flag.store(next, Ordering::Release);
            while flag.load(Ordering::Acquire) != next + 1 {
                std::hint::spin_loop();
            }
            next += 2;
        });
        flag.store(u64::MAX, Ordering::Release);
        peer.join().unwrap();
    }
}
