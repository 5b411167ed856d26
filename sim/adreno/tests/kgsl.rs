//! The whole KGSL path on the simulated KGSL: GPU objects, a program uploaded and encoded with
//! hcq-adreno, an IB submitted, timestamps awaited; faults surface at once with their IB offset.

use hcq::Error;
use hcq::mmio::{MmioBus, Width};
use hcq::queue::Command;
use hcq_adreno::{A6xxEncoder, EncoderConfig, Program};
use hcq_qcom::flags::{ContextFlags, MemFlags};
use hcq_qcom::kgsl::Kgsl;
use hcq_qcom::{Context, FreeAfter, GpuObject};
use hcq_sim_adreno::cp::{ComputeState, GpuMemory, ShaderCore};
use hcq_sim_adreno::kgsl::SimKgsl;
use hcq_sim_adreno::{HookedKgsl, KgslCall, KgslHook};
// PM4 words of commands encoded one after another by the a6xx encoder (an IB without the core
// queue's timeline wait and signal)
use hcq_testkit::ib::Ib;
use std::sync::Arc;
use std::time::Instant;

/// Stands in for the shader: writes `groups × local` (x) to the first argument's address.
struct Fake;

impl ShaderCore for Fake {
    fn dispatch(&mut self, s: &ComputeState<'_>, mem: &mut dyn GpuMemory) -> hcq::Result<()> {
        let out = u64::from(s.consts[0]) | u64::from(s.consts[1]) << 32;
        mem.write32(out, s.groups[0] * s.local[0])
    }
}

struct Rig {
    sim: Arc<SimKgsl>,
    k: Kgsl,
    ctx: Context,
    prog: Program,
    handle: u64,
    enc: Arc<A6xxEncoder>,
    consts: GpuObject,
    out: GpuObject,
    signals: GpuObject,
    ib: GpuObject,
    _keep: Vec<GpuObject>,
}

fn program() -> Program {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hal/adreno/tests/data");
    Program::from_json(
        &std::fs::read(dir.join("e_32_32_4.a630.bin")).unwrap(),
        &std::fs::read(dir.join("e_32_32_4.adreno.json")).unwrap(),
    )
    .unwrap()
}

fn rig() -> Rig {
    let sim = Arc::new(SimKgsl::new(Box::new(Fake)));
    let k = Kgsl::with_backend(sim.clone()).unwrap();
    let ctx = k.create_context(ContextFlags::compute()).unwrap();
    let f = MemFlags::USE_CPU_MAP;
    let prog = program();
    let code = k.alloc(prog.image.len() as u64, f).unwrap();
    code.bus().write_bytes(0, &prog.image).unwrap();
    let consts = k.alloc(prog.const_block_bytes.into(), f).unwrap();
    let pvt = k.alloc(prog.stack_bytes, f).unwrap();
    let scratch = k.alloc(4096, f).unwrap();
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig {
            scratch: scratch.gpuaddr(),
            pvt_mem: pvt.gpuaddr(),
            pvt_mem_bytes: pvt.size(),
        })
        .unwrap(),
    );
    let handle = enc.add_program(&prog, code.gpuaddr()).unwrap();
    let out = k.alloc(4096, f).unwrap();
    let signals = k.alloc(4096, f).unwrap();
    let ib = k.alloc(1 << 16, f).unwrap();
    Rig { sim, k, ctx, prog, handle, enc, consts, out, signals, ib, _keep: vec![code, pvt, scratch] }
}

impl Rig {
    fn fill(&self, arg0: u64) {
        let mut block = vec![0u8; self.prog.const_block_bytes as usize];
        self.prog.fill_consts(&mut block, &[arg0, 0, 0], &[], [32, 1, 1]).unwrap();
        self.consts.bus().write_bytes(0, &block).unwrap();
    }

    fn submit(&self, q: &Ib) -> u32 {
        for (i, w) in q.words().iter().enumerate() {
            self.ib.bus().write(4 * i, Width::U32, (*w).into()).unwrap();
        }
        // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
        unsafe { self.k.submit(&self.ctx, self.ib.gpuaddr(), 4 * q.words().len() as u64) }.unwrap()
    }

    fn queue(&self) -> Ib {
        Ib::new(self.enc.clone())
    }

    fn signal(&self, off: usize) -> u64 {
        self.signals.bus().read(off, Width::U64).unwrap()
    }
}

#[test]
fn a_dispatch_runs_and_signals_through_kgsl() {
    let r = rig();
    r.fill(r.out.gpuaddr() + 16);
    let mut q = r.queue();
    q.push(Command::Exec { program: r.handle, kernargs: r.consts.gpuaddr(), global: [4, 1, 1], local: [32, 1, 1] })
        .unwrap();
    q.push(Command::Barrier).unwrap();
    q.push(Command::Timestamp { addr: r.signals.gpuaddr() + 8 }).unwrap();
    q.push(Command::Signal { addr: r.signals.gpuaddr(), value: 0x1_0000_0002 }).unwrap();
    let ts = r.submit(&q);
    r.k.wait(&r.ctx, ts, 1000).unwrap();
    assert_eq!(r.k.retired(&r.ctx).unwrap(), ts);
    assert_eq!(r.out.bus().read(16, Width::U32).unwrap(), 128, "the dispatch ran with 4 groups of 32");
    assert_eq!(r.signal(0), 0x1_0000_0002);
    assert!(r.signal(8) > 0, "timestamp written");
    assert!(r.sim.fault().is_none());
}

#[test]
fn a_wait_on_host_memory_blocks_until_the_host_signals() {
    let r = rig();
    let mut q = r.queue();
    q.push(Command::Wait { addr: r.signals.gpuaddr() + 32, value: 5 }).unwrap();
    q.push(Command::Signal { addr: r.signals.gpuaddr(), value: 9 }).unwrap();
    let ts = r.submit(&q);
    assert!(matches!(r.k.wait(&r.ctx, ts, 5).unwrap_err(), Error::Timeout { .. }));
    assert_eq!(r.signal(0), 0);
    r.signals.bus().write(32, Width::U64, 5).unwrap();
    r.k.wait(&r.ctx, ts, 1000).unwrap();
    assert_eq!(r.signal(0), 9);
}

/// A wait nobody satisfies is a hang after KGSL's dispatcher timeout (2 s), as the kernel driver
/// reports it: the waiter (here with a 10 s timeout, as tinygrad sleeps with an infinite one)
/// fails with `DeviceHung` naming the wait, and the context takes no more work.
#[test]
fn a_wait_blocked_past_the_dispatcher_timeout_is_a_hang() {
    let r = rig();
    let mut q = r.queue();
    q.push(Command::Wait { addr: r.signals.gpuaddr() + 32, value: 5 }).unwrap();
    q.push(Command::Signal { addr: r.signals.gpuaddr(), value: 9 }).unwrap();
    // from before the submission: the CP may already block in it (the dispatcher's clock starts
    // there), which on a slow host (qemu-user) takes a visible part of the timeout
    let t0 = Instant::now();
    let ts = r.submit(&q);
    assert!(matches!(r.k.wait(&r.ctx, ts, 10_000).unwrap_err(), Error::DeviceHung { .. }));
    let took = t0.elapsed();
    assert!(took >= hcq_sim_adreno::kgsl::HANG_TIMEOUT && took.as_millis() < 5000, "hang declared after {took:?}");
    let f = r.sim.fault().unwrap();
    assert!(f.contains("GPU hang: CP_WAIT_REG_MEM") && f.contains(&format!("IB {:#x} word", r.ib.gpuaddr())), "{f}");
    // the host's late write does not bring it back
    r.signals.bus().write(32, Width::U64, 5).unwrap();
    assert!(matches!(r.k.wait(&r.ctx, ts, 100).unwrap_err(), Error::DeviceHung { .. }));
    assert_eq!(r.signal(0), 0, "nothing after the wait ran");
}

#[test]
fn an_argument_outside_every_allocation_is_a_fault_seen_at_once() {
    let r = rig();
    r.fill(0xdead_0000);
    let mut q = r.queue();
    q.push(Command::Exec { program: r.handle, kernargs: r.consts.gpuaddr(), global: [1, 1, 1], local: [32, 1, 1] })
        .unwrap();
    q.push(Command::Signal { addr: r.signals.gpuaddr(), value: 1 }).unwrap();
    let ts = r.submit(&q);
    let t0 = Instant::now();
    assert!(matches!(r.k.wait(&r.ctx, ts, 10_000).unwrap_err(), Error::DeviceHung { .. }));
    assert!(t0.elapsed().as_millis() < 1000, "not a timeout");
    let f = r.sim.fault().unwrap();
    assert!(f.contains("outside every allocation") && f.contains(&format!("IB {:#x} word", r.ib.gpuaddr())), "{f}");
    assert_eq!(r.signal(0), 0, "nothing after the fault ran");
    // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
    assert!(unsafe { r.k.submit(&r.ctx, r.ib.gpuaddr(), 4) }.is_err(), "a hung device refuses work");
}

#[test]
fn a_corrupt_ib_word_is_reported_with_its_offset() {
    let r = rig();
    let mut q = r.queue();
    q.push(Command::Barrier).unwrap();
    q.push(Command::Signal { addr: r.signals.gpuaddr(), value: 1 }).unwrap();
    let mut words = q.words().to_vec();
    words[9] ^= 1 << 3; // the signal's CP_WAIT_FOR_IDLE header: count parity breaks
    for (i, w) in words.iter().enumerate() {
        r.ib.bus().write(4 * i, Width::U32, (*w).into()).unwrap();
    }
    // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
    let ts = unsafe { r.k.submit(&r.ctx, r.ib.gpuaddr(), 4 * words.len() as u64) }.unwrap();
    assert!(matches!(r.k.wait(&r.ctx, ts, 1000).unwrap_err(), Error::DeviceHung { .. }));
    assert!(r.sim.fault().unwrap().contains("word 9"), "{:?}", r.sim.fault());
}

#[test]
fn objects_are_released_only_after_their_timestamp() {
    let r = rig();
    let extra = r.k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let live = r.sim.live_blocks();
    let mut q = r.queue();
    q.push(Command::Wait { addr: r.signals.gpuaddr() + 32, value: 1 }).unwrap();
    let ts = r.submit(&q);
    r.k.free(extra, FreeAfter::Timestamp { context: r.ctx.id(), timestamp: ts }).unwrap();
    assert_eq!(r.sim.live_blocks(), live, "still in use by a blocked submission");
    r.signals.bus().write(32, Width::U64, 1).unwrap();
    r.k.wait(&r.ctx, ts, 1000).unwrap();
    assert_eq!(r.sim.live_blocks(), live - 1, "released once retired");
}

#[test]
fn submissions_are_captured_in_rd_format() {
    use hcq_qcom::kgsl::capture::Capturing;
    let cap = Arc::new(Capturing::new(SimKgsl::new(Box::new(Fake)), "hcq-test"));
    let k = Kgsl::with_backend(cap.clone()).unwrap();
    let ctx = k.create_context(ContextFlags::compute()).unwrap();
    let sig = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let ib = k.alloc(4096, MemFlags::empty()).unwrap();
    let scratch = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig { scratch: scratch.gpuaddr(), pvt_mem: scratch.gpuaddr(), pvt_mem_bytes: 4096 })
            .unwrap(),
    );
    let mut q = Ib::new(enc);
    q.push(Command::Barrier).unwrap();
    q.push(Command::Signal { addr: sig.gpuaddr(), value: 3 }).unwrap();
    for (i, w) in q.words().iter().enumerate() {
        ib.bus().write(4 * i, Width::U32, (*w).into()).unwrap();
    }
    for _ in 0..2 {
        // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
        let ts = unsafe { k.submit(&ctx, ib.gpuaddr(), 4 * q.words().len() as u64) }.unwrap();
        k.wait(&ctx, ts, 1000).unwrap();
    }
    let rd = hcq_adreno::rd::read(&cap.bytes()).unwrap();
    assert_eq!((rd.gpu_id, rd.submits.len()), (Some(630), 2));
    let s = &rd.submits[1];
    assert_eq!(s.buffers.len(), 3, "every mapped object, again for each submission");
    assert_eq!(s.ib_words().unwrap(), q.words(), "the IB reads back word for word");
    let sig_buf = s.buffers.iter().find(|b| b.0 == sig.gpuaddr()).unwrap();
    assert_eq!(sig_buf.1[0], 3, "the second capture shows the first submission's signal");
}

#[test]
fn an_ib_rewritten_before_its_timestamp_retired_is_a_fault() {
    let r = rig();
    let mut q = r.queue();
    q.push(Command::Barrier).unwrap();
    q.push(Command::Signal { addr: r.signals.gpuaddr(), value: 1 }).unwrap();
    // a busy CP: the IB is queued, not run
    r.sim.pause(true);
    let ts = r.submit(&q);
    assert!(matches!(r.k.wait(&r.ctx, ts, 5).unwrap_err(), Error::Timeout { .. }), "stalled");
    assert_eq!(r.sim.max_pending(), 1);
    // the host reuses the IB memory too early
    r.ib.bus().write(4 * 3, Width::U32, 0xdead).unwrap();
    r.sim.pause(false);
    assert!(matches!(r.k.wait(&r.ctx, ts, 1000).unwrap_err(), Error::DeviceHung { .. }));
    let f = r.sim.fault().unwrap();
    assert!(f.contains("word 3 was rewritten before it ran") && f.contains("0x0000dead"), "{f}");
    assert_eq!(r.signal(0), 0, "the rewritten IB did not run");
}

#[test]
fn a_stalled_cp_queues_ibs_and_runs_them_in_order_when_it_resumes() {
    let r = rig();
    r.sim.pause(true);
    let ib2 = r.k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let mut stamps = Vec::new();
    for (v, ib) in [(1u64, &r.ib), (2, &ib2)] {
        let mut q = r.queue();
        q.push(Command::Signal { addr: r.signals.gpuaddr(), value: v }).unwrap();
        for (i, w) in q.words().iter().enumerate() {
            ib.bus().write(4 * i, Width::U32, (*w).into()).unwrap();
        }
        // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
        stamps.push(unsafe { r.k.submit(&r.ctx, ib.gpuaddr(), 4 * q.words().len() as u64) }.unwrap());
    }
    assert_eq!(r.sim.max_pending(), 2);
    assert_eq!(r.signal(0), 0);
    r.sim.pause(false);
    r.k.wait(&r.ctx, stamps[1], 1000).unwrap();
    assert_eq!(r.signal(0), 2, "both ran, in order");
    assert!(r.sim.fault().is_none());
}

/// A hook recording the timestamp of every `WAITTIMESTAMP`.
#[derive(Default)]
struct Recording {
    waits: std::sync::Mutex<Vec<u32>>,
}

impl KgslHook for Recording {
    fn before(&self, call: KgslCall<'_>) -> Result<(), rustix::io::Errno> {
        if let KgslCall::WaitTimestamp(a) = call {
            self.waits.lock().unwrap().push(a.timestamp);
        }
        Ok(())
    }
}

/// With two submissions in flight, the signal wait's sleep hook blocks until the *older* one
/// retires (a wait for the first call does not sleep through the second); with nothing in
/// flight it waits on the last submission (returns at once).
#[test]
fn the_sleep_hook_waits_for_the_oldest_submission_in_flight() {
    use hcq::signal::WaitHooks;
    let sim = Arc::new(SimKgsl::new(Box::new(Fake)));
    let io = Arc::new(HookedKgsl::new(sim.clone(), Recording::default()));
    let k = Arc::new(Kgsl::with_backend(io.clone()).unwrap());
    let ctx = Arc::new(k.create_context(ContextFlags::compute()).unwrap());
    let ib = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    // a one-word IB: a CP_NOP with no payload
    ib.bus()
        .write(0, Width::U32, hcq_adreno::pm4::type7_header(hcq_adreno::pm4::op::CP_NOP, 0).unwrap().into())
        .unwrap();
    sim.pause(true);
    // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
    let t1 = unsafe { k.submit(&ctx, ib.gpuaddr(), 4) }.unwrap();
    // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
    let t2 = unsafe { k.submit(&ctx, ib.gpuaddr(), 4) }.unwrap();
    assert!(t2 != t1);
    let hooks = hcq_qcom::TimestampHooks::new(k.clone(), ctx.clone());
    hooks.sleep(0);
    assert_eq!(io.hook().waits.lock().unwrap().last(), Some(&t1), "the older submission, not the newest ({t2})");
    sim.pause(false);
    k.wait(&ctx, t2, 1000).unwrap();
    hooks.sleep(0);
    assert_eq!(io.hook().waits.lock().unwrap().last(), Some(&t2), "nothing in flight: the last submission");
    assert!(hooks.fault().is_none());
}

/// A GPU object freed while the host still maps it is gone for the GPU (KGSL unmaps it from the
/// GPU at the free; the pages live on only for the host's mapping): an IB that writes it faults
/// instead of writing memory that is no longer the GPU's.
#[test]
fn an_object_freed_while_still_mapped_is_a_fault_for_the_gpu() {
    use hcq_qcom::kgsl::ioctl::KgslIoctl;
    use zerocopy::FromZeros;
    let r = rig();
    let obj = r.k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    // the raw ioctl, with the object's mapping still alive (`Kgsl::free` unmaps first)
    r.sim.gpuobj_free(&hcq_qcom::kgsl::uapi::GpuobjFree { id: obj.id(), ..FromZeros::new_zeroed() }, None).unwrap();
    let mut q = r.queue();
    q.push(Command::Signal { addr: obj.gpuaddr(), value: 7 }).unwrap();
    let ts = r.submit(&q);
    assert!(matches!(r.k.wait(&r.ctx, ts, 1000).unwrap_err(), Error::DeviceHung { .. }));
    let f = r.sim.fault().unwrap();
    assert!(f.contains("outside every allocation") && f.contains(&format!("{:#x}", obj.gpuaddr())), "{f}");
    assert_eq!(obj.bus().read(0, Width::U64).unwrap(), 0, "nothing was written");
    let live = r.sim.live_blocks();
    drop(obj);
    assert_eq!(r.sim.live_blocks(), live - 1, "the unmap releases it");
}

/// With everything retired and the awaited signal not written (a faulted IB, or a signal only
/// the host writes), the sleep hook sleeps on the host: before, KGSL's wait returned at once and
/// the core's wait loop spun at 100 % CPU until its timeout.
#[test]
fn the_sleep_hook_does_not_return_at_once_when_nothing_is_in_flight() {
    use hcq::signal::WaitHooks;
    let sim = Arc::new(SimKgsl::new(Box::new(Fake)));
    let io = Arc::new(HookedKgsl::new(sim.clone(), Recording::default()));
    let k = Arc::new(Kgsl::with_backend(io.clone()).unwrap());
    let ctx = Arc::new(k.create_context(ContextFlags::compute()).unwrap());
    let ib = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    ib.bus()
        .write(0, Width::U32, hcq_adreno::pm4::type7_header(hcq_adreno::pm4::op::CP_NOP, 0).unwrap().into())
        .unwrap();
    // SAFETY: the simulated KGSL runs the IB on its CP over its own bounds-checked memory: an address outside every allocation is a GPU fault, never a host access.
    let ts = unsafe { k.submit(&ctx, ib.gpuaddr(), 4) }.unwrap();
    k.wait(&ctx, ts, 1000).unwrap();
    let hooks = hcq_qcom::TimestampHooks::new(k.clone(), ctx.clone());
    let t = Instant::now();
    for _ in 0..20 {
        hooks.sleep(0);
    }
    let took = t.elapsed();
    assert!(took >= std::time::Duration::from_millis(2), "20 sleeps with nothing in flight took {took:?}");
    assert_eq!(io.hook().waits.lock().unwrap().len(), 1 + 20, "each still asks KGSL (a fault ends the wait)");
    assert!(hooks.fault().is_none());
}
