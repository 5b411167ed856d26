//! PM4 encoding and replay costs on the host.
//!
//! - `encode_1000_dispatches`: a queue of 1000 exec commands built from scratch (buffers kept
//!   between iterations, as a reused command buffer would be). Goal < 100 µs.
//! - `patch_replay_1000_dispatches`: a captured queue of 1000 dispatches between a timeline
//!   wait and signal, replayed with new values: the wait and signal values and the constant
//!   block address of every dispatch patched (1002 patches, every marked form rewritten).
//!   Goal < 20 µs. `..._and_copy` adds copying the words into the IB buffer a submit uses.
//! - `encode_1000_dispatches_core_hwqueue`: the same through the core `HwQueue` with the
//!   `A6xxEncoder` (a new queue each time: the core queue has no `clear`; its `CmdWriter`
//!   appends word by word).
//! - `patch_replay_1000_dispatches_core_hwqueue`: the captured queue as a core `HwQueue`
//!   (timeline wait and signal included), the same 1002 patches.

use divan::{Bencher, black_box};
use hcq::queue::{CmdWriter, Command, Encoder, Field, HwQueue};
use hcq_adreno::{A6xxEncoder, EncoderConfig, Pm4Queue, Program};
use std::sync::Arc;

fn main() {
    divan::main();
}

fn program() -> Program {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    Program::from_json(
        &std::fs::read(dir.join("e_32_32_4.a630.bin")).unwrap(),
        &std::fs::read(dir.join("e_32_32_4.adreno.json")).unwrap(),
    )
    .unwrap()
}

fn encoder() -> (Arc<A6xxEncoder>, u64) {
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig { scratch: 0x1000, pvt_mem: 0x10_0000, pvt_mem_bytes: 1 << 20 }).unwrap(),
    );
    let h = enc.add_program(&program(), 0x20_0000).unwrap();
    (enc, h)
}

const N: usize = 1000;

fn kernargs(i: usize) -> u64 {
    0x100_0000 + 0x1000 * i as u64
}

fn exec(h: u64, i: usize) -> Command {
    Command::Exec { program: h, kernargs: kernargs(i), global: [32, 1, 1], local: [32, 1, 1] }
}

#[divan::bench]
fn encode_1000_dispatches(b: Bencher) {
    let (enc, h) = encoder();
    let mut q = Pm4Queue::with_capacity(enc, N * 64, N);
    b.bench_local(|| {
        q.clear();
        for i in 0..N {
            q.push(exec(h, i)).unwrap();
        }
        black_box(q.words().len())
    });
}

#[divan::bench]
fn encode_1000_dispatches_core_hwqueue(b: Bencher) {
    let (enc, h) = encoder();
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    // one queue, emptied and re-encoded each time (as a backend recapturing a graph would)
    let mut q = HwQueue::with_capacity(enc, &tl, N * 80, N + 2).unwrap();
    b.bench_local(|| {
        q.clear().unwrap();
        for i in 0..N {
            q.exec(h, kernargs(i), [32, 1, 1], [32, 1, 1]).unwrap();
        }
        black_box(q.words().len())
    });
}

/// The encoder through the core's `CmdWriter` into reused buffers: the core marks without the
/// cost of growing a new `HwQueue` each time.
#[divan::bench]
fn encode_1000_dispatches_core_cmdwriter(b: Bencher) {
    let (enc, h) = encoder();
    let (mut words, mut marks) = (Vec::with_capacity(N * 80), Vec::with_capacity(N * 16));
    b.bench_local(|| {
        words.clear();
        marks.clear();
        for i in 0..N {
            let mut w = CmdWriter::new(&mut words, &mut marks, i as u32);
            Encoder::encode(&*enc, &exec(h, i), &mut w).unwrap();
        }
        black_box(words.len())
    });
}

fn captured() -> Pm4Queue {
    let (enc, h) = encoder();
    let mut q = Pm4Queue::with_capacity(enc, N * 64 + 64, N + 2);
    q.push(Command::Wait { addr: 0x2000, value: 1 }).unwrap();
    for i in 0..N {
        q.push(exec(h, i)).unwrap();
    }
    q.push(Command::Signal { addr: 0x2000, value: 2 }).unwrap();
    q
}

fn replay(q: &mut Pm4Queue, round: u64) {
    q.patch(0, Field::Value, round).unwrap();
    for i in 0..N {
        q.patch(i + 1, Field::Kernargs, 0x200_0000 + 0x1000 * (i as u64 + round % 2)).unwrap();
    }
    q.patch(N + 1, Field::Value, round + 1).unwrap();
}

#[divan::bench]
fn patch_replay_1000_dispatches(b: Bencher) {
    let mut q = captured();
    let mut round = 0u64;
    b.bench_local(|| {
        round += 1;
        replay(&mut q, round);
        black_box(q.words()[0])
    });
}

#[divan::bench]
fn patch_replay_1000_dispatches_and_copy(b: Bencher) {
    let mut q = captured();
    let mut ib = vec![0u32; q.words().len()];
    let mut round = 0u64;
    b.bench_local(|| {
        round += 1;
        replay(&mut q, round);
        ib.copy_from_slice(q.words());
        black_box(ib[0])
    });
}

fn captured_core() -> (HwQueue, hcq::signal::SignalPool) {
    let (enc, h) = encoder();
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(enc, &tl).unwrap();
    for i in 0..N {
        q.exec(h, kernargs(i), [32, 1, 1], [32, 1, 1]).unwrap();
    }
    q.finish().unwrap();
    (q, pool)
}

#[divan::bench]
fn patch_replay_1000_dispatches_core_hwqueue(b: Bencher) {
    let (mut q, _pool) = captured_core();
    let mut round = 0u64;
    b.bench_local(|| {
        round += 1;
        // the timeline wait and signal, as the core's submit patches them
        q.patch(0, Field::Value, round).unwrap();
        for i in 0..N {
            q.patch(i + 1, Field::Kernargs, 0x200_0000 + 0x1000 * (i as u64 + round % 2)).unwrap();
        }
        q.patch(N + 1, Field::Value, round + 1).unwrap();
        black_box(q.words()[0])
    });
}
