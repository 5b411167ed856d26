//! The QCOM device end to end on the simulated KGSL: bundles through `hcq_runner::Runner` and
//! `QcomBackend` (PM4 + the ir3 interpreter), `.rd` captures of the runner's submissions, and
//! the device-level faults: a hung submission is a timeout, a hung shader and a corrupt IB word
//! are faults seen at once with where they happened, an argument outside every allocation
//! writes nothing, and both the 32-bit KGSL timestamps and the 32-bit halves of the 64-bit
//! signal cross their rollover.

use hcq::Error;
use hcq::mmio::{MmioBus, Width};
use hcq::queue::Command;
use hcq_adreno::{A6xxEncoder, EncoderConfig};
use hcq_bundle::hcqb::{self, Hcqb, LaunchRef};
use hcq_qcom::device::{QcomBackend, QcomDevice};
use hcq_qcom::flags::MemFlags;
use hcq_qcom::kernel::{Access, BufferList};
use hcq_runner::{Backend, KernelLaunch, Runner};
use hcq_sim_adreno::dispatch::{ArgSlots, Ir3Dispatch};
use hcq_sim_adreno::kgsl::SimKgsl;
use hcq_sim_adreno::{HookedKgsl, KgslCall, KgslHook};
use hcq_testkit::ib::Ib;
use std::sync::Arc;
use std::time::Instant;

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

fn bundle(name: &str) -> Vec<u8> {
    hcqb::write(&hcq_bundle::v1::import_dir(hcq_testkit::example(name)).unwrap()).unwrap()
}

fn sim_device(max_steps: u64, first_ts: u32, capture: bool) -> (Arc<QcomDevice>, Arc<SimKgsl>) {
    let slots = ArgSlots::default();
    let sim = Arc::new(
        SimKgsl::new(Box::new(Ir3Dispatch::with_max_steps(max_steps).with_arg_slots(slots.clone())))
            .with_arg_slots(slots),
    );
    sim.start_timestamps_at(first_ts);
    let dev = QcomDevice::with_backend("QCOM:SIM", sim.clone(), capture).unwrap();
    (dev, sim)
}

#[test]
fn every_example_with_a630_objects_runs_and_checks_through_the_runner() {
    for name in ["elementwise", "mlp", "chain100"] {
        let bytes = bundle(name);
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = hcq_sim_adreno::open(false).unwrap();
        let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
        assert_eq!(m.arch(), hcq_bundle::Arch::AdrenoA630);
        for _ in 0..2 {
            m.call().unwrap();
        }
        let r = m.check().unwrap();
        assert!(r.ok && r.compared > 0 && !r.exact, "{name}: {r:?}");
        assert_eq!(m.backend().calls(), 2);
    }
}

#[test]
fn a_changed_input_changes_the_output_on_the_next_call() {
    let bytes = bundle("elementwise");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(hcq_sim_adreno::open(false).unwrap()).unwrap(), &file).unwrap();
    m.call().unwrap();
    let before = m.output(0).unwrap();
    let n = file.inputs().next().unwrap().view.nbytes as usize;
    m.set_input(0, &vec![0u8; n]).unwrap();
    m.call().unwrap();
    assert_ne!(m.output(0).unwrap(), before, "the replay read the new input");
    assert!(!m.check().unwrap().ok, "and no longer matches the expected output");
}

#[test]
fn the_rd_capture_of_a_run_holds_the_runners_command_buffer() {
    let (dev, _) = sim_device(1 << 30, 0, true);
    let bytes = bundle("mlp");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev.clone()).unwrap(), &file).unwrap();
    m.call().unwrap();
    let cap = hcq_adreno::rd::read(&dev.rd_capture().unwrap()).unwrap();
    assert_eq!(cap.submits.len(), 1);
    let s = &cap.submits[0];
    assert_eq!(s.ib_words().unwrap(), m.backend().words(), "the IB reads back word for word");
    let packets: Vec<_> = hcq_adreno::pm4::Decoder::new(m.backend().words()).map(|p| p.unwrap().1.words()).collect();
    let decoded: Vec<_> = hcq_adreno::pm4::Decoder::new(&s.ib_words().unwrap()).map(|p| p.unwrap().1.words()).collect();
    assert_eq!(packets, decoded, "the same packets");
    for i in 0..file.n_buffers() {
        let a = m.backend().buffer_addr(i).unwrap();
        assert!(s.buffers.iter().any(|b| b.0 == a), "buffer {i} is in the capture");
    }
}

/// An encoder and IB on `dev` for hand-made submissions.
struct Raw {
    q: Ib,
    ib: hcq_qcom::GpuObject,
    mem: hcq_qcom::GpuObject,
    _scratch: hcq_qcom::GpuObject,
}

fn raw(dev: &QcomDevice) -> Raw {
    let k = dev.kernel();
    let scratch = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig { scratch: scratch.gpuaddr(), pvt_mem: scratch.gpuaddr(), pvt_mem_bytes: 4096 })
            .unwrap(),
    );
    Raw {
        q: Ib::new(enc),
        ib: k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap(),
        mem: k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap(),
        _scratch: scratch,
    }
}

impl Raw {
    fn submit(&self, dev: &QcomDevice, words: &[u32], timeout_ms: u32) -> hcq::Result<u32> {
        for (i, w) in words.iter().enumerate() {
            self.ib.bus().write(4 * i, Width::U32, (*w).into()).unwrap();
        }
        let mut list = BufferList::new();
        for o in [&self.ib, &self.mem, &self._scratch] {
            list.push(o, Access::ReadWrite);
        }
        // SAFETY: the words are commands over this harness's objects (the IB, its memory word
        // and the scratch), all in the list; dropping a GpuObject unmaps only its CPU side, so
        // the GPU memory stays allocated until the device closes, after any submission.
        unsafe { dev.submit_and_wait(self.ib.gpuaddr(), 4 * words.len() as u64, &mut list, timeout_ms) }
    }
}

#[test]
fn a_hung_submission_surfaces_as_the_timeout_error() {
    let (dev, sim) = sim_device(1 << 30, 0, false);
    let mut r = raw(&dev);
    r.q.push(Command::Wait { addr: r.mem.gpuaddr(), value: 1 }).unwrap();
    r.q.push(Command::Signal { addr: r.mem.gpuaddr() + 8, value: 7 }).unwrap();
    let t0 = Instant::now();
    let e = r.submit(&dev, r.q.words(), 30).unwrap_err();
    assert!(matches!(e, Error::Timeout { timeout_ms: 30, .. }), "{e}");
    assert!(t0.elapsed().as_millis() >= 30);
    assert!(sim.fault().is_none(), "a hang is not a fault");
    // The host releases it: the device is fine afterwards.
    r.mem.bus().write(0, Width::U64, 1).unwrap();
    hcq::device::Device::synchronize(&*dev).unwrap();
    assert_eq!(r.mem.bus().read(8, Width::U64).unwrap(), 7);
}

#[test]
fn a_hung_shader_is_a_fault_seen_at_once_not_a_timeout() {
    let (dev, _) = sim_device(1000, 0, false);
    let bytes = bundle("mlp");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    let t0 = Instant::now();
    let e = m.call().unwrap_err().to_string();
    assert!(t0.elapsed().as_secs() < 5, "no 60 s timeout");
    assert!(e.contains("hung") && e.contains("step limit") && e.contains("word"), "{e}");
}

#[test]
fn a_corrupt_ib_word_is_reported_with_its_offset() {
    let (dev, sim) = sim_device(1 << 30, 0, false);
    let mut r = raw(&dev);
    r.q.push(Command::Barrier).unwrap();
    r.q.push(Command::Signal { addr: r.mem.gpuaddr(), value: 1 }).unwrap();
    // Corrupt the header of the signal's first packet (the last packet before its first mark).
    let first_signal_word = r.q.marks(1).next().map(|m| m.word as usize).unwrap();
    let mut hdr_at = 0;
    for p in hcq_adreno::pm4::Decoder::new(r.q.words()) {
        let (off, _) = p.unwrap();
        if off < first_signal_word {
            hdr_at = off;
        }
    }
    let mut words = r.q.words().to_vec();
    words[hdr_at] ^= 1 << 3; // parity breaks
    let t0 = Instant::now();
    let e = r.submit(&dev, &words, 10_000).unwrap_err();
    assert!(t0.elapsed().as_secs() < 5);
    assert!(matches!(e.root(), Error::DeviceHung { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&format!("word {hdr_at}")), "{msg}");
    assert!(sim.fault().unwrap().contains(&format!("word {hdr_at}")));
    assert_eq!(r.mem.bus().read(0, Width::U64).unwrap(), 0, "nothing after the corrupt word ran");
}

#[test]
fn an_argument_outside_every_allocation_is_a_fault_that_writes_nothing() {
    // elementwise's E_32_32_4: out[i] = f(in1[i], in2[i]) over 4096 floats in 32 work-groups.
    // The second input points at a 4 KiB object: the first 8 work-groups read inside it, the
    // ninth reads past it (outside every allocation). Without the dispatch journal, groups
    // 0..7 would already have written their outputs.
    let (dev, sim) = sim_device(1 << 30, 0, false);
    let bytes = bundle("elementwise");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut b = QcomBackend::new(dev.clone()).unwrap();
    let mut addrs = Vec::new();
    for (i, buf) in file.buffers().enumerate() {
        addrs.push(b.alloc(i, buf.nbytes.next_multiple_of(4096), buf.initial.unwrap_or_default()).unwrap());
    }
    let p = file.programs().next().unwrap();
    let prog =
        b.load_program(0, &p, hcq_bundle::Arch::AdrenoA630, p.object(hcq_bundle::Arch::AdrenoA630).unwrap()).unwrap();
    let small = dev.kernel().alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let LaunchRef::Kernel(k) = file.launches().next().unwrap() else { panic!("a kernel launch") };
    let mut args: Vec<u64> = k.args().map(|a| addrs[a.buffer as usize] + a.offset).collect();
    let out_arg = k.outs().next().unwrap() as usize;
    let in_arg = (0..args.len()).find(|&j| j != out_arg).unwrap();
    args[in_arg] = small.gpuaddr();
    b.record_kernel(&prog, &KernelLaunch { index: 0, kernel: &k, args: &args }).unwrap();
    b.finish().unwrap();
    let out = k.arg(out_arg).unwrap();
    let mut before = vec![0u8; out.nbytes as usize];
    b.read(out.buffer as usize, out.offset, &mut before).unwrap();
    let t0 = Instant::now();
    let e = b.replay().unwrap_err();
    assert!(t0.elapsed().as_secs() < 5, "seen at once");
    let msg = e.to_string();
    assert!(msg.contains("outside every allocation") && msg.contains("nothing of the dispatch written"), "{msg}");
    assert!(sim.fault().is_some());
    let mut after = vec![0u8; out.nbytes as usize];
    b.read(out.buffer as usize, out.offset, &mut after).unwrap();
    let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert_eq!(changed, 0, "the faulted dispatch wrote nothing");
}

#[test]
fn the_32_bit_rollovers_are_crossed() {
    // KGSL timestamps start 2 below 2^32 and the 64-bit signal 2 below 2^32: four calls
    // cross both rollovers, each call waiting on its own (wrapped) timestamp.
    let (dev, _) = sim_device(1 << 30, u32::MAX - 1, false);
    let bytes = bundle("chain100");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev.clone()).unwrap(), &file).unwrap();
    m.backend_mut().set_calls(u64::from(u32::MAX) - 1).unwrap();
    let mut stamps = Vec::new();
    for _ in 0..4 {
        m.call().unwrap();
        stamps.push(dev.context().last_submitted());
    }
    assert_eq!(stamps, [u32::MAX, 0, 1, 2], "KGSL timestamps wrapped");
    assert_eq!(dev.kernel().retired(dev.context()).unwrap(), 2);
    assert_eq!(m.backend().calls(), (1 << 32) + 2, "the signal's high word carried");
    assert!(m.check().unwrap().ok);
}

#[test]
fn an_argument_pointing_nowhere_is_refused_before_the_shader_runs() {
    let (dev, sim) = sim_device(1 << 30, 0, false);
    let bytes = bundle("elementwise");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut b = QcomBackend::new(dev.clone()).unwrap();
    let mut addrs = Vec::new();
    for (i, buf) in file.buffers().enumerate() {
        addrs.push(b.alloc(i, buf.nbytes.next_multiple_of(4096), buf.initial.unwrap_or_default()).unwrap());
    }
    let p = file.programs().next().unwrap();
    let a630 = hcq_bundle::Arch::AdrenoA630;
    let prog = b.load_program(0, &p, a630, p.object(a630).unwrap()).unwrap();
    let LaunchRef::Kernel(k) = file.launches().next().unwrap() else { panic!("a kernel launch") };
    let mut args: Vec<u64> = k.args().map(|a| addrs[a.buffer as usize] + a.offset).collect();
    let last = args.len() - 1;
    args[last] = 0xdead_0000;
    b.record_kernel(&prog, &KernelLaunch { index: 0, kernel: &k, args: &args }).unwrap();
    b.finish().unwrap();
    let msg = b.replay().unwrap_err().to_string();
    assert!(msg.contains(&format!("argument {last}")) && msg.contains("0xdead0000"), "{msg}");
    assert!(msg.contains("nothing ran") && msg.contains("word"), "{msg}");
    assert!(sim.fault().is_some());
}

#[test]
fn calls_in_flight_block_the_producer_and_never_reuse_an_ib_slot_early() {
    // Two IB slots and a stalled CP: two calls go out at once, the third must wait until the
    // first one's stamp passes (the CP resumes after 500 ms). The simulated KGSL faults on any
    // IB whose words change between GPU_COMMAND and the end of its execution.
    let (dev, sim) = sim_device(1 << 30, 0, false);
    let bytes = bundle("chain100");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut b = QcomBackend::new(dev.clone()).unwrap();
    b.set_ib_slots(2).unwrap();
    let mut m = Runner::load(b, &file).unwrap();
    assert!(m.backend_mut().set_ib_slots(3).is_err(), "only before the load finished");
    sim.pause(true);
    let release = {
        let sim = sim.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(500));
            sim.pause(false);
        })
    };
    let t0 = Instant::now();
    let mut calls = Vec::new();
    for _ in 0..6 {
        let stamp = m.backend_mut().submit_call().unwrap();
        calls.push((stamp.get(), t0.elapsed().as_millis()));
    }
    release.join().unwrap();
    let stamps: Vec<u64> = calls.iter().map(|c| c.0).collect();
    assert_eq!(stamps, [1, 2, 3, 4, 5, 6]);
    assert!(calls[1].1 < 400, "the first two calls fill the two slots at once: {calls:?}");
    assert!(calls[2].1 >= 400, "the third waited for the CP to retire the first: {calls:?}");
    m.backend().synchronize().unwrap();
    assert!(sim.fault().is_none(), "an IB slot was rewritten before its stamp passed: {:?}", sim.fault());
    assert_eq!(sim.max_pending(), 2, "two calls in flight at most, one per IB slot");
    assert_eq!(dev.kernel().retired(dev.context()).unwrap(), 6);
    assert_eq!(m.backend().calls(), 6);
    assert!(m.check().unwrap().ok, "the calls computed the right outputs");
}

#[test]
fn a_hung_submission_through_the_core_engine_is_the_timeout_error() {
    let (dev, sim) = sim_device(1 << 30, 0, false);
    let bytes = bundle("chain100");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev.clone()).unwrap(), &file).unwrap();
    m.backend_mut().set_timeout_ms(30);
    m.call().unwrap();
    // A queue of one's own on the device's engine: it waits on memory nobody writes.
    let mem = dev.kernel().alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let hcq = m.backend().engine().unwrap().clone();
    let mut q = hcq.queue().unwrap();
    q.wait_at(mem.gpuaddr(), 1).unwrap();
    let stamp = submit!(hcq, 0, &mut q).unwrap();
    assert_eq!(stamp.get(), 2);
    let t0 = Instant::now();
    let e = m.backend().wait(stamp).unwrap_err();
    assert!(matches!(e, Error::Timeout { awaited: 2, last: 1, .. }), "{e}");
    assert!(t0.elapsed().as_millis() >= 30);
    assert!(sim.fault().is_none(), "a hang is not a fault");
    // The host releases it; after a reset of the hung state the device runs calls again.
    mem.bus().write(0, Width::U64, 1).unwrap();
    hcq.timeline().clear_hung();
    // (a timeout a loaded machine's scheduler cannot miss: the released work must finish)
    m.backend_mut().set_timeout_ms(10_000);
    m.backend().synchronize().unwrap();
    m.call().unwrap();
    assert!(m.check().unwrap().ok);
}

/// elementwise with a copy launch after its kernel: the kernel's output copied into a second
/// output buffer (`CP_MEMCPY` on the simulated CP), both checked against the expected bytes, and
/// the copy re-runs on every call (a changed input reaches both outputs).
#[test]
fn a_copy_launch_runs_as_cp_memcpy_after_the_kernel() {
    use hcq_bundle::model::{Buffer, Launch as BLaunch, Output};
    use hcq_bundle::{ArgView, BufferRole};
    let mut m = hcq_bundle::v1::import_dir(hcq_testkit::example("elementwise")).unwrap();
    let out = m.outputs[0].clone();
    let dtype = out.view.dtype;
    m.buffers.push(Buffer {
        nbytes: out.view.nbytes,
        dtype,
        role: BufferRole::Output,
        also_output: false,
        image: None,
        initial: None,
    });
    let copy = ArgView { buffer: (m.buffers.len() - 1) as u32, offset: 0, nbytes: out.view.nbytes, dtype };
    m.launches.push(BLaunch::Copy { dst: copy, src: out.view });
    m.outputs.push(Output { view: copy, shape: out.shape.clone(), expected: out.expected.clone() });
    m.validate().unwrap();
    let bytes = hcqb::write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let mut r = Runner::load(QcomBackend::new(hcq_sim_adreno::open(false).unwrap()).unwrap(), &file).unwrap();
    r.call().unwrap();
    let rep = r.check().unwrap();
    assert!(rep.ok && rep.compared == 2, "{rep:?}");
    assert_eq!(r.output(0).unwrap(), r.output(1).unwrap(), "the copy holds the kernel's output");
    let n = file.inputs().next().unwrap().view.nbytes as usize;
    r.set_input(0, &vec![0u8; n]).unwrap();
    r.call().unwrap();
    assert_eq!(r.output(0).unwrap(), r.output(1).unwrap(), "the copy ran again with the new output");
    assert!(!r.check().unwrap().ok, "a zero input changes the output");
}

/// A hook on the simulated KGSL: every `GPUOBJ_ALLOC` after the first `ok` refused (`ENOMEM`),
/// `limits` stated in place of the simulator's when set, and (`refuse_end`) a shader core that
/// does not run `end`.
struct FailingAlloc {
    ok: std::sync::atomic::AtomicUsize,
    limits: Option<hcq_adreno::limits::GpuLimits>,
    refuse_end: bool,
}

impl FailingAlloc {
    /// The simulated KGSL behind a hook that changes nothing until told.
    fn hooked(sim: &Arc<SimKgsl>) -> HookedKgsl<Self> {
        Self::hooked_with(sim, None, false)
    }

    fn hooked_with(
        sim: &Arc<SimKgsl>,
        limits: Option<hcq_adreno::limits::GpuLimits>,
        refuse_end: bool,
    ) -> HookedKgsl<Self> {
        HookedKgsl::new(sim.clone(), Self { ok: usize::MAX.into(), limits, refuse_end })
    }
}

impl KgslHook for FailingAlloc {
    fn before(&self, call: KgslCall<'_>) -> Result<(), rustix::io::Errno> {
        use std::sync::atomic::Ordering;
        if let KgslCall::GpuobjAlloc(_) = call
            && self.ok.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_err()
        {
            return Err(rustix::io::Errno::NOMEM);
        }
        Ok(())
    }
    fn gpu_limits(&self, sim: hcq_adreno::limits::GpuLimits) -> hcq_adreno::limits::GpuLimits {
        self.limits.unwrap_or(sim)
    }
    fn unsupported_instruction(&self, ins: &hcq_ir3::isa::Instr, sim: Option<&'static str>) -> Option<&'static str> {
        use hcq_ir3::isa::{Body, Cat0Op};
        match ins.body {
            Body::Cat0(c) if self.refuse_end && c.op == Cat0Op::End => Some("end (refused by this test's core)"),
            _ => sim,
        }
    }
}

/// The device states the limits its backend states: a backend narrower than the chip (8
/// work-groups per dispatch) gets a bundle past them (elementwise: 32 work-groups) refused at
/// load, naming the limit, before anything is allocated (every allocation after the backend's
/// own timeline object fails here, so an allocation would be the error).
#[test]
fn a_backend_stating_smaller_limits_gets_a_bundle_refused_before_any_allocation() {
    let bytes = bundle("elementwise");
    let file = Hcqb::parse(&bytes).unwrap();
    let sim = Arc::new(SimKgsl::new(Box::new(Ir3Dispatch::new())));
    let chip = hcq_qcom::kernel::chip_limits(hcq_adreno::chip::Generation::A6xx);
    let small = hcq_adreno::limits::GpuLimits { max_total_groups: 8, ..chip };
    let io = Arc::new(FailingAlloc::hooked_with(&sim, Some(small), false));
    let dev = QcomDevice::with_backend("QCOM:SIM", io.clone(), false).unwrap();
    assert_eq!(dev.gpu_limits(), small);
    let b = QcomBackend::new(dev).unwrap();
    io.hook().ok.store(0, std::sync::atomic::Ordering::Release);
    let live = sim.live_blocks();
    let e = Runner::load(b, &file).unwrap_err().to_string();
    assert!(e.contains("max work-groups per dispatch") && e.contains('8'), "{e}");
    assert!(!e.contains("allocation of"), "refused by an allocation, not the limits: {e}");
    assert_eq!(sim.live_blocks(), live - 1, "only the backend's own timeline object, freed with it");
}

/// The simulator states its own limits, and they are the device's: the chip's with at most
/// `SIM_MAX_GROUPS` work-groups per dispatch, through both kernel interfaces and through an `.rd`
/// capture around the simulated KGSL (whose `Arc` forwards the provided methods too).
#[test]
fn the_simulators_stated_limits_are_the_devices() {
    let chip = hcq_qcom::kernel::chip_limits(hcq_adreno::chip::Generation::A6xx);
    let sim = hcq_sim_adreno::limits::gpu_limits(chip);
    assert_eq!(sim.max_total_groups, hcq_sim_adreno::SIM_MAX_GROUPS);
    assert_eq!(hcq_adreno::limits::GpuLimits { max_total_groups: chip.max_total_groups, ..sim }, chip);
    for dev in
        [hcq_sim_adreno::open(false), hcq_sim_adreno::open(true), hcq_sim_adreno::open_msm(false)].map(Result::unwrap)
    {
        assert_eq!(dev.gpu_limits(), sim, "{}", hcq::device::Device::name(&*dev));
    }
}

/// A program with an instruction the backend's shader core states it does not run is refused at
/// load, naming the instruction, its index and the core, before anything of the bundle is
/// allocated; the same bundle loads where the core runs it.
#[test]
fn a_program_with_an_instruction_the_backends_core_refuses_is_refused_at_load() {
    let bytes = bundle("elementwise");
    let file = Hcqb::parse(&bytes).unwrap();
    for refuse_end in [true, false] {
        let sim = Arc::new(SimKgsl::new(Box::new(Ir3Dispatch::new())));
        let io = Arc::new(FailingAlloc::hooked_with(&sim, None, refuse_end));
        let dev = QcomDevice::with_backend("QCOM:SIM", io.clone(), false).unwrap();
        let b = QcomBackend::new(dev).unwrap();
        match Runner::load(b, &file) {
            Err(e) if refuse_end => {
                let e = e.to_string();
                assert!(e.contains("shader core does not run") && e.contains("end (refused"), "{e}");
                assert!(e.contains("program 0") && e.contains("simulated KGSL"), "{e}");
            }
            Ok(mut m) if !refuse_end => {
                m.call().unwrap();
                assert!(m.check().unwrap().ok);
            }
            r => panic!("refuse_end {refuse_end}: {:?}", r.map(|_| ()).map_err(|e| e.to_string())),
        }
    }
}

/// A load that fails at any GPU object allocation (every one in turn, the encoder's scratch and
/// private memory, the IB and kernel-argument pools included) gives back every object it made:
/// before, those held only in locals were dropped without `Kgsl::free` and stayed allocated
/// until the device file closed.
#[test]
fn a_load_that_fails_at_any_allocation_frees_every_object_it_made() {
    let bytes = bundle("elementwise");
    let file = Hcqb::parse(&bytes).unwrap();
    for profile in [false, true] {
        for ok in 0.. {
            let slots = ArgSlots::default();
            let sim = Arc::new(
                SimKgsl::new(Box::new(Ir3Dispatch::new().with_arg_slots(slots.clone()))).with_arg_slots(slots),
            );
            let io = Arc::new(FailingAlloc::hooked(&sim));
            let dev = QcomDevice::with_backend("QCOM:SIM", io.clone(), false).unwrap();
            let live = sim.live_blocks();
            io.hook().ok.store(ok, std::sync::atomic::Ordering::Release);
            let mut b = match QcomBackend::new(dev.clone()) {
                Ok(b) => b,
                Err(e) => {
                    assert!(e.to_string().contains("allocation of"), "{e}");
                    assert_eq!(sim.live_blocks(), live, "failing at allocation {ok}");
                    continue;
                }
            };
            b.set_profile(profile).unwrap();
            match Runner::load(b, &file) {
                Err(e) => {
                    assert!(e.to_string().contains("allocation of"), "{e}");
                    assert_eq!(sim.live_blocks(), live, "profile {profile}: failing at allocation {ok}: leaked");
                }
                Ok(mut m) => {
                    m.call().unwrap();
                    assert!(m.check().unwrap().ok);
                    drop(m);
                    assert_eq!(sim.live_blocks(), live, "profile {profile}: after a good load and call");
                    assert!(ok > 4, "the sweep reached the encoder and the pools ({ok} allocations)");
                    break;
                }
            }
        }
    }
}

#[test]
fn the_engine_owns_its_memory_a_clone_keeps_it_and_the_last_holder_frees_it() {
    let (dev, sim) = sim_device(1 << 20, 0, false);
    let before = sim.live_blocks();
    let bytes = bundle("elementwise");
    let file = Hcqb::parse(&bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev.clone()).unwrap(), &file).unwrap();
    m.call().unwrap();
    m.backend().synchronize().unwrap();
    let hcq = m.backend().engine().unwrap().clone();
    drop(m);
    // the clone keeps the timeline signal, IB and kernel-argument objects (and nothing else)
    assert_eq!(sim.live_blocks(), before + 3, "the engine's objects are freed under a live clone");
    assert_eq!(hcq.timeline().signal().value(), 1, "the timeline still reads its memory");
    drop(hcq);
    assert_eq!(sim.live_blocks(), before, "the last holder of the engine leaked its objects");
}
