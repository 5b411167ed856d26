//! PM4 encoding and replay costs on the host.
//!
//! - `encode_1000_dispatches`: a core `HwQueue` of 1000 exec commands encoded by the
//!   `A6xxEncoder` from scratch (the queue emptied with `clear` between iterations, keeping its
//!   buffers, as a backend recapturing a graph would). Goal < 100 µs.
//! - `encode_1000_dispatches_core_cmdwriter`: the same commands through the core's `CmdWriter`
//!   into reused buffers, without the queue.
//! - `patch_replay_1000_dispatches`: the captured queue of 1000 dispatches between its timeline
//!   wait and signal, replayed with new values: the wait and signal values and the constant
//!   block address of every dispatch patched (1002 patches, each checked by the encoder's
//!   `check_patch`, every marked form rewritten). Goal < 20 µs. `..._and_copy` adds copying the
//!   words into the IB buffer a submit uses.

use divan::{Bencher, black_box};
use hcq::queue::{CmdWriter, Command, Encoder, Field, HwQueue};
use hcq_adreno::{A6xxEncoder, EncoderConfig, Program};
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
/// queue around them.
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

/// The captured queue (timeline wait, 1000 dispatches, timeline signal) and the pool that owns
/// its timeline signal.
fn captured() -> (HwQueue, hcq::signal::SignalPool) {
    let (enc, h) = encoder();
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::with_capacity(enc, &tl, N * 80, N + 2).unwrap();
    for i in 0..N {
        q.exec(h, kernargs(i), [32, 1, 1], [32, 1, 1]).unwrap();
    }
    q.finish().unwrap();
    (q, pool)
}

/// The patches of one replay: the timeline wait and signal values, as the core's submit patches
/// them, and every dispatch's constant block.
fn replay(q: &mut HwQueue, round: u64) {
    q.patch(0, Field::Value, round).unwrap();
    for i in 0..N {
        q.patch(i + 1, Field::Kernargs, 0x200_0000 + 0x1000 * (i as u64 + round % 2)).unwrap();
    }
    q.patch(N + 1, Field::Value, round + 1).unwrap();
}

#[divan::bench]
fn patch_replay_1000_dispatches(b: Bencher) {
    let (mut q, _pool) = captured();
    let mut round = 0u64;
    b.bench_local(|| {
        round += 1;
        replay(&mut q, round);
        black_box(q.words()[0])
    });
}

#[divan::bench]
fn patch_replay_1000_dispatches_and_copy(b: Bencher) {
    let (mut q, _pool) = captured();
    let mut ib = vec![0u32; q.words().len()];
    let mut round = 0u64;
    b.bench_local(|| {
        round += 1;
        replay(&mut q, round);
        ib.copy_from_slice(q.words());
        black_box(ib[0])
    });
}
