//! The QCOM device through the MSM DRM interface (`hcq_qcom::msm::Msm`) on the simulated MSM
//! driver (`hcq_sim_adreno::SimMsm`, the same simulated GPU as `QCOM:SIM`): every example bundle
//! with Adreno 630 objects gives the same outputs on both kernel interfaces; and the errors a
//! user meets — a missing node, another driver's node, a chip the encoder cannot drive, a
//! submission the kernel refuses, a fence that does not pass in time, a GPU fault — are each one
//! clear error; the buffer list a submission sends keeps its objects alive while it runs, and
//! a dma-buf import is seen by the GPU.

use hcq::Error;
use hcq::mmio::{MmioBus, Width};
use hcq::queue::Command;
use hcq_adreno::{A6xxEncoder, EncoderConfig};
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_qcom::Mapping;
use hcq_qcom::device::{QcomBackend, QcomDevice};
use hcq_qcom::flags::MemFlags;
use hcq_qcom::kernel::{Access, BufferList, GpuKernel, Interface};
use hcq_qcom::msm::Msm;
use hcq_qcom::msm::ioctl::{DriverVersion, MsmIoctl};
use hcq_qcom::msm::uapi::*;
use hcq_qcom::{FreeAfter, GpuObject};
use hcq_runner::Runner;
use hcq_sim_adreno::dispatch::Ir3Dispatch;
use hcq_sim_adreno::{SimKgsl, SimMsm};
use hcq_testkit::ib::Ib;
use rustix::io::Errno;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Every example whose programs all have Adreno 630 objects (what runs on `QCOM:SIM`).
fn a630_examples() -> Vec<PathBuf> {
    hcq_testkit::examples()
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(p.join("manifest.json")).is_ok_and(|m| {
                m.contains("adreno_a630")
                    && hcq_bundle::v1::import_dir(p).is_ok_and(|b| {
                        let bytes = hcqb::write(&b).unwrap();
                        let f = Hcqb::parse(&bytes).unwrap();
                        f.n_programs() > 0 && f.programs().all(|p| p.object(hcq_bundle::Arch::AdrenoA630).is_some())
                    })
            })
        })
        .collect()
}

fn run(dev: Arc<QcomDevice>, bytes: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let file = Hcqb::parse(bytes).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    for _ in 0..2 {
        m.call().unwrap();
    }
    let outs = (0..m.n_outputs()).map(|i| m.output(i).unwrap()).collect();
    (outs, m.check().unwrap().ok)
}

#[test]
fn every_a630_example_gives_the_same_outputs_on_msm_as_on_kgsl() {
    let examples = a630_examples();
    assert!(examples.len() >= 3, "{examples:?}");
    for dir in examples {
        let bytes = hcqb::write(&hcq_bundle::v1::import_dir(&dir).unwrap()).unwrap();
        let msm = hcq_sim_adreno::open_msm(false).unwrap();
        assert_eq!(msm.kernel().interface(), Interface::Msm);
        let props = hcq::device::Device::properties(&*msm).notes;
        assert!(props.contains("MSM DRM 1.12.0") && props.contains("chip 0x06030001"), "{props}");
        let (on_msm, ok_msm) = run(msm, &bytes);
        let (on_kgsl, ok_kgsl) = run(hcq_sim_adreno::open(false).unwrap(), &bytes);
        assert!(ok_msm && ok_kgsl, "{}: check passes on both", dir.display());
        assert!(!on_msm.is_empty());
        assert_eq!(on_msm, on_kgsl, "{}: the same output bytes", dir.display());
    }
}

/// A simulated MSM with one answer changed.
struct Tweak {
    inner: SimMsm,
    driver: &'static str,
    chip: Option<u64>,
    submit: Option<Errno>,
}

impl Tweak {
    fn new() -> Self {
        Tweak {
            inner: SimMsm::new(SimKgsl::new(Box::new(Ir3Dispatch::new()))),
            driver: "msm",
            chip: None,
            submit: None,
        }
    }
}

impl MsmIoctl for Tweak {
    fn version(&self) -> Result<DriverVersion, Errno> {
        Ok(DriverVersion { name: self.driver.into(), ..self.inner.version()? })
    }
    fn get_param(&self, arg: &mut Param) -> Result<(), Errno> {
        self.inner.get_param(arg)?;
        if let (MSM_PARAM_CHIP_ID, Some(c)) = (arg.param, self.chip) {
            arg.value = c;
        }
        Ok(())
    }
    fn submitqueue_new(&self, arg: &mut Submitqueue) -> Result<(), Errno> {
        self.inner.submitqueue_new(arg)
    }
    fn submitqueue_close(&self, id: u32) -> Result<(), Errno> {
        self.inner.submitqueue_close(id)
    }
    fn submitqueue_query(&self, id: u32, param: u32, out: &mut [u8]) -> Result<(), Errno> {
        self.inner.submitqueue_query(id, param, out)
    }
    fn gem_new(&self, arg: &mut GemNew) -> Result<(), Errno> {
        self.inner.gem_new(arg)
    }
    fn gem_info(&self, arg: &mut GemInfo) -> Result<(), Errno> {
        self.inner.gem_info(arg)
    }
    fn gem_close(&self, arg: &GemClose) -> Result<(), Errno> {
        self.inner.gem_close(arg)
    }
    fn prime_fd_to_handle(&self, fd: BorrowedFd<'_>, arg: &mut PrimeHandle) -> Result<(), Errno> {
        self.inner.prime_fd_to_handle(fd, arg)
    }
    fn gem_submit(&self, arg: &mut GemSubmit, bos: &[GemSubmitBo], cmds: &[GemSubmitCmd]) -> Result<(), Errno> {
        match self.submit {
            Some(e) => Err(e),
            None => self.inner.gem_submit(arg, bos, cmds),
        }
    }
    fn wait_fence(&self, arg: &WaitFence) -> Result<(), Errno> {
        self.inner.wait_fence(arg)
    }
    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno> {
        self.inner.mmap(len, offset)
    }
    unsafe fn munmap(&self, m: &Mapping) {
        // SAFETY: forwarded with the caller's contract.
        unsafe { self.inner.munmap(m) }
    }
}

#[test]
fn a_missing_node_is_device_unavailable_naming_the_node() {
    let e = Msm::open_path("/nonexistent/dri/renderD128").unwrap_err();
    assert!(matches!(e.root(), Error::DeviceUnavailable { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("/nonexistent/dri/renderD128") && msg.contains("MSM+QCOM"), "{msg}");
    // No msm node anywhere on this machine (or only other drivers'): the probe says so.
    if std::env::var_os(hcq_qcom::msm::NODE_ENV).is_none() && !Path::new("/sys/module/msm").exists() {
        let e = Msm::open().unwrap_err();
        assert!(matches!(e.root(), Error::DeviceUnavailable { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("renderD128"), "the nodes tried are named: {msg}");
    }
}

#[test]
fn another_drivers_node_and_an_unsupported_chip_are_refused_by_name() {
    let e = Msm::with_backend(Arc::new(Tweak { driver: "i915", ..Tweak::new() })).unwrap_err();
    assert!(matches!(e.root(), Error::DeviceUnavailable { .. }) && e.to_string().contains("\"i915\""), "{e}");
    let e = Msm::with_backend(Arc::new(Tweak { chip: Some(0x0604_0001), ..Tweak::new() })).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e.root(), Error::Unsupported { .. }) && msg.contains("0x06040001"), "{msg}");
    let e = Msm::with_backend(Arc::new(Tweak { chip: Some(0x4305_0a01), ..Tweak::new() })).unwrap_err();
    assert!(e.to_string().contains("0x43050a01") && e.to_string().contains("a7xx"), "{e}");
    let e = Msm::with_backend(Arc::new(Tweak { chip: Some(1 << 40), ..Tweak::new() })).unwrap_err();
    assert!(e.to_string().contains("wider than 32 bits"), "{e}");
    assert!(Msm::with_backend(Arc::new(Tweak::new())).is_ok(), "the sim's own chip is the 630");
}

/// An IB (PM4 through the a6xx encoder) and a memory object on an MSM device.
struct Raw {
    q: Ib,
    ib: GpuObject,
    mem: GpuObject,
    scratch: GpuObject,
}

fn raw(k: &dyn GpuKernel) -> Raw {
    let scratch = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig { scratch: scratch.gpuaddr(), pvt_mem: scratch.gpuaddr(), pvt_mem_bytes: 4096 })
            .unwrap(),
    );
    let ib = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let mem = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    Raw { q: Ib::new(enc), ib, mem, scratch }
}

impl Raw {
    fn write_ib(&self) -> u64 {
        for (i, w) in self.q.words().iter().enumerate() {
            self.ib.bus().write(4 * i, Width::U32, (*w).into()).unwrap();
        }
        4 * self.q.words().len() as u64
    }
    fn list(&self) -> BufferList {
        let mut l = BufferList::new();
        l.push(&self.ib, Access::Read);
        l.push(&self.mem, Access::ReadWrite);
        l.push(&self.scratch, Access::ReadWrite);
        l
    }
}

fn msm_device(sim: SimMsm) -> (Arc<QcomDevice>, Arc<SimMsm>) {
    let sim = Arc::new(sim);
    (QcomDevice::with_msm_backend("MSM+QCOM:SIM", sim.clone(), false).unwrap(), sim)
}

#[test]
fn a_fence_that_does_not_pass_is_the_timeout_error_and_the_device_recovers() {
    let (dev, _) = msm_device(SimMsm::new(SimKgsl::new(Box::new(Ir3Dispatch::new()))));
    let mut r = raw(&**dev.kernel());
    r.q.push(Command::Wait { addr: r.mem.gpuaddr(), value: 1 }).unwrap();
    r.q.push(Command::Signal { addr: r.mem.gpuaddr() + 8, value: 7 }).unwrap();
    let bytes = r.write_ib();
    let mut list = r.list();
    let t0 = Instant::now();
    // SAFETY: the IB waits on and signals `mem`, in the list and alive past the synchronize below.
    let e = unsafe { dev.submit_and_wait(r.ib.gpuaddr(), bytes, &mut list, 40) }.unwrap_err();
    assert!(matches!(e, Error::Timeout { timeout_ms: 40, awaited: 1, last: 0, .. }), "{e}");
    assert!(t0.elapsed().as_millis() >= 40);
    assert_eq!(dev.kernel().retired(dev.context()).unwrap(), 0);
    r.mem.bus().write(0, Width::U64, 1).unwrap();
    hcq::device::Device::synchronize(&*dev).unwrap();
    assert_eq!(r.mem.bus().read(8, Width::U64).unwrap(), 7);
    assert_eq!(dev.kernel().retired(dev.context()).unwrap(), 1);
}

#[test]
fn a_gpu_fault_is_device_hung_with_the_fault_report() {
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(hcq_testkit::example("mlp")).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = hcq_sim_adreno::open_msm_with(Ir3Dispatch::with_max_steps(1000), false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    let t0 = Instant::now();
    let e = m.call().unwrap_err();
    assert!(t0.elapsed().as_secs() < 5, "no 60 s timeout");
    assert!(matches!(e.root(), Error::DeviceHung { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("MSM+QCOM") && msg.contains("step limit") && msg.contains("word"), "{msg}");
    assert!(msg.contains("1 GPU fault(s) on MSM submit queue"), "the kernel's own count: {msg}");
    let e = m.call().unwrap_err();
    assert!(matches!(e.root(), Error::DeviceHung { .. }), "a faulted device refuses more work: {e}");
}

#[test]
fn a_submission_the_kernel_refuses_is_one_error_naming_gem_submit() {
    let (dev, _) = msm_device(SimMsm::new(SimKgsl::new(Box::new(Ir3Dispatch::new()))));
    let k = dev.kernel();
    let mut r = raw(&**k);
    r.q.push(Command::Signal { addr: r.mem.gpuaddr(), value: 3 }).unwrap();
    let bytes = r.write_ib();
    // A handle the kernel does not know (closed): EINVAL from GEM_SUBMIT.
    let gone = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let mut list = r.list();
    list.push(&gone, Access::Read);
    k.free(gone, FreeAfter::NeverSubmitted).unwrap();
    // SAFETY: the IB signals `mem` (listed, alive); the kernel refuses it before it runs.
    let e = unsafe { dev.submit_and_wait(r.ib.gpuaddr(), bytes, &mut list, 1000) }.unwrap_err();
    assert!(
        matches!(e, Error::Os { errno, .. } if errno == Errno::INVAL.raw_os_error())
            && e.to_string().contains("GEM_SUBMIT"),
        "{e}"
    );
    // An IB outside the submission's buffer list never reaches the kernel.
    let mut short = BufferList::new();
    short.push(&r.mem, Access::ReadWrite);
    // SAFETY: refused before the ioctl (the IB is in no listed buffer).
    let e = unsafe { dev.submit_and_wait(r.ib.gpuaddr(), bytes, &mut short, 1000) }.unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { .. }) && e.to_string().contains("buffer list"), "{e}");
    // The kernel refusing for its own reasons (here: out of memory) is said with its errno.
    let t = Arc::new(Tweak { submit: Some(Errno::NOMEM), ..Tweak::new() });
    let dev = QcomDevice::with_msm_backend("MSM+QCOM:SIM", t, false).unwrap();
    let r = raw(&**dev.kernel());
    let mut list = r.list();
    // SAFETY: refused by the backend before anything runs.
    let e = unsafe { dev.submit_and_wait(r.ib.gpuaddr(), 4, &mut list, 1000) }.unwrap_err();
    assert!(matches!(e, Error::Os { errno, .. } if errno == Errno::NOMEM.raw_os_error()), "{e}");
    assert_eq!(r.mem.bus().read(0, Width::U64).unwrap(), 0, "nothing ran");
}

#[test]
fn a_closed_object_lives_while_a_submission_that_lists_it_runs() {
    for listed in [true, false] {
        let (dev, sim) = msm_device(SimMsm::new(SimKgsl::new(Box::new(Ir3Dispatch::new()))));
        let k = dev.kernel();
        let mut r = raw(&**k);
        let target = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
        r.q.push(Command::Signal { addr: target.gpuaddr(), value: 5 }).unwrap();
        r.q.push(Command::Signal { addr: r.mem.gpuaddr(), value: 9 }).unwrap();
        let bytes = r.write_ib();
        let mut list = r.list();
        if listed {
            list.push(&target, Access::ReadWrite);
        }
        sim.sim().pause(true);
        // SAFETY: the IB writes `target` and `mem`; `target` is closed while it runs, which
        // the kernel (and the simulated one) makes safe exactly when it is listed; the
        // unlisted case is the fault this test expects, inside the simulator's checked memory.
        let fence = unsafe { k.submit(dev.context(), r.ib.gpuaddr(), bytes, &mut list) }.unwrap();
        k.free(target, FreeAfter::NeverSubmitted).unwrap();
        sim.sim().pause(false);
        let res = k.wait(dev.context(), fence, 5000);
        if listed {
            res.unwrap();
            assert_eq!(r.mem.bus().read(0, Width::U64).unwrap(), 9, "it ran to the end");
        } else {
            let e = res.unwrap_err();
            assert!(matches!(e.root(), Error::DeviceHung { .. }), "{e}");
            assert!(sim.fault_report().unwrap().contains("outside every allocation"), "{:?}", sim.fault_report());
            assert_eq!(r.mem.bus().read(0, Width::U64).unwrap(), 0);
        }
    }
}

#[test]
fn an_imported_dma_buf_is_seen_by_the_gpu_and_host_memory_is_refused() {
    let (dev, sim) = msm_device(SimMsm::new(SimKgsl::new(Box::new(Ir3Dispatch::new()))));
    let k = dev.kernel();
    let fd = rustix::fs::memfd_create("hcq-test-dmabuf", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, 4096).unwrap();
    let mut data = [0u8; 64];
    for (i, b) in data.iter_mut().enumerate() {
        *b = i as u8 ^ 0x5a;
    }
    rustix::io::pwrite(&fd, &data, 0).unwrap();
    let before = sim.sim().live_blocks();
    let imp = k.import_dmabuf(std::os::fd::AsFd::as_fd(&fd)).unwrap();
    assert_eq!(imp.size, 4096);
    let mut r = raw(&**k);
    r.q.push(Command::Copy { dst: r.mem.gpuaddr(), src: imp.gpuaddr, bytes: 64 }).unwrap();
    let bytes = r.write_ib();
    let mut list = r.list();
    list.push_import(&imp, Access::Read);
    // SAFETY: a CP copy from the import (listed, alive until released below) into `mem`.
    unsafe { dev.submit_and_wait(r.ib.gpuaddr(), bytes, &mut list, 5000) }.unwrap();
    let mut got = [0u8; 64];
    r.mem.bus().read_bytes(0, &mut got).unwrap();
    assert_eq!(got, data, "the GPU read the dma-buf's bytes");
    k.release_import(imp).unwrap();
    assert_eq!(sim.sim().live_blocks(), before + 3, "the import is gone (the raw harness's 3 objects stay)");
    let mut host = vec![0u8; 4096];
    // SAFETY: refused before anything maps it.
    let e = unsafe { k.map_user(host.as_mut_ptr(), host.len()) }.unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("dma-buf"), "{e}");
}

#[test]
fn fences_count_from_one_per_queue_and_waiting_on_an_unsubmitted_one_is_refused() {
    let k = Msm::with_backend(Arc::new(SimMsm::new(SimKgsl::new(Box::new(Ir3Dispatch::new()))))).unwrap();
    let ctx = k.create_context().unwrap();
    let e = k.wait(&ctx, 3, 10).unwrap_err();
    assert!(matches!(e, Error::Os { errno, .. } if errno == Errno::INVAL.raw_os_error()), "{e}");
    let mut r = raw(&k);
    r.q.push(Command::Signal { addr: r.mem.gpuaddr(), value: 1 }).unwrap();
    let bytes = r.write_ib();
    let mut list = r.list();
    for want in 1..=3 {
        // SAFETY: the IB signals `mem`, listed and alive past the wait.
        let f = unsafe { k.submit(&ctx, r.ib.gpuaddr(), bytes, &mut list) }.unwrap();
        assert_eq!(f, want);
        k.wait(&ctx, f, 5000).unwrap();
        assert_eq!(k.retired(&ctx).unwrap(), want);
    }
    assert_eq!(k.faults(&ctx).unwrap(), 0);
    k.destroy_context(ctx).unwrap();
}
