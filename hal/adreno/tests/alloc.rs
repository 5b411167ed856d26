//! The replay hot path allocates nothing: re-encoding into a cleared core `HwQueue` and patching
//! every dispatch of a captured queue leave a counting global allocator untouched, and so does
//! running the queue on the simulated CP once its buffers are warm.
//!
//! The counts are the test thread's own (`hcq_testkit::counting_alloc::allocations_in`): the harness's threads
//! allocate too.

mod common;

use common::*;
use hcq::queue::{Field, HwQueue};
use hcq_sim_adreno::cp::Cp;

use hcq_testkit::counting_alloc::{Counting, allocations_in};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn encoding_patching_and_simulating_a_warm_queue_allocate_nothing() {
    let prog = elementwise();
    let enc = encoder();
    let h = enc.add_program(&prog, CODE).unwrap();
    let mut mem = memory();
    mem.write_bytes(CODE, &prog.image).unwrap();
    // The timeline wait (command 0) is on SIGNALS; the signal at the end is on SIGNALS + 8.
    let mut q = HwQueue::with_capacity(enc, &timeline_at(SIGNALS), 100 * 64 + 64, 102).unwrap();
    let build = |q: &mut HwQueue| {
        q.clear().unwrap();
        for i in 0..100u64 {
            q.exec(h, CONSTS + 16 * i, [2, 1, 1], [32, 1, 1]).unwrap();
        }
        q.signal_at(SIGNALS + 8, 1).unwrap();
    };
    build(&mut q);
    let mut cp = Cp::new();
    let mut rec = Recorder::default();
    rec.seen.reserve(1000);
    let run = |q: &HwQueue, mem: &mut hcq_sim_adreno::cp::SparseMemory, cp: &mut Cp, rec: &mut Recorder| {
        mem.write_words(IB, q.words()).unwrap();
        cp.submit(IB, q.words().len() as u32, mem, rec).unwrap();
    };
    run(&q, &mut mem, &mut cp, &mut rec); // warm the CP's buffers
    rec.seen.clear();

    let ((), allocs) = allocations_in(|| {
        build(&mut q);
        for round in 1..=10u64 {
            q.patch(0, Field::Value, round - 1).unwrap();
            for i in 0..100 {
                q.patch(i + 1, Field::Kernargs, CONSTS + 16 * ((i as u64 + round) % 100)).unwrap();
                q.patch(i + 1, Field::Global(0), 1 + round % 3).unwrap();
            }
            q.patch(101, Field::Value, round).unwrap();
        }
    });
    assert_eq!(allocs, 0, "re-encoding and patching allocated");
    mem.write64(SIGNALS, 9).unwrap();
    let ((), allocs) = allocations_in(|| {
        mem.write_words(IB, q.words()).unwrap();
        cp.submit(IB, q.words().len() as u32, &mut mem, &mut NoRecord).unwrap();
    });
    assert_eq!(allocs, 0, "the simulated CP allocated");
    assert_eq!(mem.read64(SIGNALS + 8).unwrap(), 10);
}

/// A dispatch callback that keeps nothing (the recorder copies state into vectors).
struct NoRecord;

impl hcq_sim_adreno::cp::ShaderCore for NoRecord {
    fn dispatch(
        &mut self,
        s: &hcq_sim_adreno::cp::ComputeState<'_>,
        _m: &mut dyn hcq_sim_adreno::cp::GpuMemory,
    ) -> hcq::Result<()> {
        assert_eq!(s.local, [32, 1, 1]);
        Ok(())
    }
}
