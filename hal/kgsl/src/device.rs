//! The `QCOM` device: an Adreno 630 behind KGSL, over any [`KgslIoctl`] backend — the kernel
//! node (`QCOM`) or the simulated KGSL whose dispatches run on the ir3 interpreter
//! (`QCOM:SIM`) — and its bundle runner backend ([`QcomBackend`], driven by
//! `hcq::runner::Runner`).
//!
//! A load picks the bundle's `adreno_a630` objects, validates each program
//! (`hcq_adreno::Program::from_json`) and uploads its shader image once; allocates every base
//! buffer as a KGSL GPU object; lays out each launch's constant block as
//! `programs[].adreno.consts` says (argument addresses, integer values, immediates, local size)
//! in its own slot of one constant object; and captures the launch list as one PM4 queue
//! (`Pm4Queue`: exec + barrier per launch, then a signal). A call patches the signal value
//! (every word that carries it), copies the words into the IB object with word-sized volatile
//! stores, submits the IB (`GPU_COMMAND`, the kernel's ordering point) and sleeps in
//! `WAITTIMESTAMP`; a fault on the simulated device ends that wait at once with the fault's
//! IB offset, a hang ends it as a timeout.

use crate::backend::KgslIoctl;
use crate::capture::Capturing;
use crate::flags::{ContextFlags, MemFlags};
use crate::sim::SimKgsl;
use crate::sim_dispatch::{ArgSlots, Ir3Dispatch};
use crate::{Context, FreeAfter, GpuObject, Kgsl};
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, LruAllocator};
use hcq::bundle::Arch;
use hcq::bundle::hcqb::ProgramRef;
use hcq::device::{Device, DeviceLimits, DeviceProperties};
use hcq::error::device_name;
use hcq::mmio::{MmioBus, Width};
use hcq::queue::{Command, Field};
use hcq::runner::{Backend, Launch};
use hcq::{Error, Result};
use hcq_adreno::{A6xxEncoder, EncoderConfig, Pm4Queue, Program};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Default time a call waits for its submission.
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;
/// Largest single allocation (the simulated KGSL's limit; a630 GPU memory is shared RAM).
pub const MAX_ALLOC_BYTES: u64 = 1 << 32;

/// Which KGSL the device talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// The kernel driver at `/dev/kgsl-3d0`.
    Node,
    /// The simulated KGSL (`SimKgsl` + the ir3 interpreter).
    Sim,
}

/// An opened QCOM device (see the module docs).
pub struct QcomDevice {
    name: String,
    kgsl: Arc<Kgsl>,
    ctx: Arc<Context>,
    sim: Option<Arc<SimKgsl>>,
    arg_slots: Option<ArgSlots>,
    capture: Option<Arc<Capturing<Arc<dyn KgslIoctl>>>>,
    alloc: LruAllocator,
    timeout_ms: u32,
}

impl core::fmt::Debug for QcomDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QcomDevice").field("name", &self.name).field("kgsl", &self.kgsl).finish_non_exhaustive()
    }
}

impl QcomDevice {
    /// Open `QCOM` (the node) or `QCOM:SIM`; with `capture`, every submission is also recorded
    /// as a freedreno `.rd` capture ([`QcomDevice::rd_capture`]).
    pub fn open(backing: Backing, capture: bool) -> Result<Arc<QcomDevice>> {
        match backing {
            Backing::Node => {
                let io = crate::backend::RustixKgsl::open(crate::DEFAULT_NODE).map_err(crate::open_error)?;
                Self::with_backend("QCOM", Arc::new(io), None, None, capture)
            }
            Backing::Sim => Self::sim_with(Ir3Dispatch::new(), capture),
        }
    }

    /// `QCOM:SIM` with `dispatch` (a step limit of one's choosing) as its shader core; the
    /// device registers each program's argument slots with it.
    pub fn sim_with(dispatch: Ir3Dispatch, capture: bool) -> Result<Arc<QcomDevice>> {
        let slots = ArgSlots::default();
        let sim = Arc::new(SimKgsl::new(Box::new(dispatch.with_arg_slots(slots.clone()))));
        Self::with_backend("QCOM:SIM", sim.clone(), Some(sim), Some(slots), capture)
    }

    /// A device over `io` (a fake, a wrapped backend); `sim` is the simulated KGSL behind it, if
    /// any, for fault reports, and `arg_slots` the table its dispatcher checks arguments with
    /// (the device registers every program it uploads).
    pub fn with_backend(
        name: &str,
        io: Arc<dyn KgslIoctl>,
        sim: Option<Arc<SimKgsl>>,
        arg_slots: Option<ArgSlots>,
        capture: bool,
    ) -> Result<Arc<QcomDevice>> {
        let (io, capture) = if capture {
            let c = Arc::new(Capturing::new(io, "hcq run"));
            (c.clone() as Arc<dyn KgslIoctl>, Some(c))
        } else {
            (io, None)
        };
        let kgsl = Arc::new(Kgsl::with_backend(io)?);
        let ctx = Arc::new(kgsl.create_context(ContextFlags::compute())?);
        let backend = KgslAllocator { kgsl: kgsl.clone(), ctx: ctx.clone(), objs: Mutex::new(HashMap::new()) };
        Ok(Arc::new(QcomDevice {
            name: name.into(),
            alloc: LruAllocator::new(name, Box::new(backend)),
            kgsl,
            ctx,
            sim,
            arg_slots,
            capture,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }))
    }

    /// The KGSL device.
    pub fn kgsl(&self) -> &Arc<Kgsl> {
        &self.kgsl
    }

    /// The device's context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The simulated KGSL, on `QCOM:SIM`.
    pub fn sim(&self) -> Option<&Arc<SimKgsl>> {
        self.sim.as_ref()
    }

    /// The `.rd` capture so far, when opened with `capture`.
    pub fn rd_capture(&self) -> Option<Vec<u8>> {
        self.capture.as_ref().map(|c| c.bytes())
    }

    /// Submit the IB of `bytes` at `ib` and wait for it (`timeout_ms`): a timeout is
    /// `Error::Timeout`, a fault `Error::DeviceHung` with the simulated CP's report as context.
    pub fn submit_and_wait(&self, ib: u64, bytes: u64, timeout_ms: u32) -> Result<u32> {
        let r = self
            .kgsl
            .submit(&self.ctx, ib, bytes)
            .and_then(|ts| self.kgsl.wait(&self.ctx, ts, timeout_ms).map(|()| ts));
        r.map_err(|e| match self.sim.as_ref().and_then(|s| s.fault()) {
            Some(f) if matches!(e, Error::DeviceHung { .. }) => e.context(f),
            _ => e,
        })
    }
}

impl Device for QcomDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn allocator(&self) -> &LruAllocator {
        &self.alloc
    }
    fn load_program(&self, _image: &hcq::program::ProgramImage) -> Result<Arc<dyn hcq::program::Program>> {
        Err(Error::Unsupported {
            what: "QCOM programs load from a bundle's adreno_a630 object and its programs[].adreno metadata \
                   (hcq::runner::Runner with hcq_kgsl::device::QcomBackend); a ProgramImage carries no a630 metadata",
            value: 0,
        })
    }
    fn synchronize(&self) -> Result<()> {
        if !self.ctx.has_submitted() {
            return Ok(());
        }
        self.kgsl.wait(&self.ctx, self.ctx.last_submitted(), self.timeout_ms)
    }
    fn properties(&self) -> DeviceProperties {
        let info = self.kgsl.info();
        let (maj, min) = self.kgsl.version();
        DeviceProperties {
            kind: "adreno".into(),
            arch: "a630".into(),
            cores: 1,
            memory_bytes: 0,
            timestamp_hz: 19_200_000,
            notes: format!(
                "{} chip {:#010x}, GMEM {} KiB, KGSL {maj}.{min}",
                if self.sim.is_some() { "simulated KGSL + ir3 interpreter," } else { "KGSL" },
                info.chip_id,
                info.gmem_bytes >> 10
            ),
        }
    }
    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            memory_bytes: MAX_ALLOC_BYTES,
            max_alloc_bytes: MAX_ALLOC_BYTES,
            alloc_align: 4096,
            max_kernel_args: hcq_adreno::program::MAX_ARGS,
            max_grid: [u32::MAX; 3],
        }
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}

/// Device memory of the QCOM device: KGSL GPU objects, copied with word-sized volatile
/// accesses, freed only once the context retired the last submission made before the free.
struct KgslAllocator {
    kgsl: Arc<Kgsl>,
    ctx: Arc<Context>,
    objs: Mutex<HashMap<u64, GpuObject>>,
}

impl KgslAllocator {
    fn with<T>(&self, mem: &DeviceMemory, f: impl FnOnce(&GpuObject) -> Result<T>) -> Result<T> {
        let objs = self.objs.lock().map_err(|_| Error::DeviceHung { device: device_name("QCOM") })?;
        let o = objs
            .get(&mem.addr())
            .ok_or(Error::InvalidArgument { what: "QCOM memory not made by this allocator", value: mem.addr() })?;
        f(o)
    }
}

impl Allocator for KgslAllocator {
    fn alloc(&self, size: u64, _spec: &BufferSpec) -> Result<DeviceMemory> {
        let o = self.kgsl.alloc(size, MemFlags::USE_CPU_MAP)?;
        // SAFETY: the object is live and owned by this allocator's table until `free`, which
        // releases it only after the context's last submission; no CPU pointer is handed out
        // (copies go through the object's volatile bus).
        let mem = unsafe { DeviceMemory::from_raw_parts_with_handle(o.gpuaddr(), size, None, o.id().into()) };
        self.objs.lock().map_err(|_| Error::DeviceHung { device: device_name("QCOM") })?.insert(o.gpuaddr(), o);
        Ok(mem)
    }
    fn free(&self, mem: DeviceMemory, _spec: &BufferSpec) {
        let Some(o) = self.objs.lock().ok().and_then(|mut m| m.remove(&mem.addr())) else { return };
        let after = if self.ctx.has_submitted() {
            FreeAfter::Timestamp { context: self.ctx.id(), timestamp: self.ctx.last_submitted() }
        } else {
            FreeAfter::NeverSubmitted
        };
        if let Err(e) = self.kgsl.free(o, after) {
            log::warn!("QCOM: freeing GPU object at {:#x}: {e}", mem.addr());
        }
    }
    fn copy_in(&self, dst: &DeviceMemory, offset: u64, src: &[u8]) -> Result<()> {
        dst.check_range("QCOM copy_in", offset, src.len() as u64)?;
        self.with(dst, |o| o.bus().write_bytes(offset as usize, src))
    }
    fn copy_out(&self, dst: &mut [u8], src: &DeviceMemory, offset: u64) -> Result<()> {
        src.check_range("QCOM copy_out", offset, dst.len() as u64)?;
        self.with(src, |o| o.bus().read_bytes(offset as usize, dst))
    }
}

/// Write `data` at byte `off` of `obj` with word-sized volatile stores (a tail shorter than a
/// word is merged into the word it shares).
fn write_words(obj: &GpuObject, off: u64, data: &[u8]) -> Result<()> {
    let bus = obj.bus();
    let off = usize::try_from(off).map_err(|_| Error::InvalidArgument { what: "QCOM write offset", value: off })?;
    hcq::mmio::check_range("QCOM buffer write", off, data.len(), bus.size())?;
    if off.is_multiple_of(4) && data.len().is_multiple_of(4) {
        for (i, c) in data.chunks_exact(4).enumerate() {
            bus.write(off + 4 * i, Width::U32, u32::from_le_bytes([c[0], c[1], c[2], c[3]]).into())?;
        }
        Ok(())
    } else {
        bus.write_bytes(off, data)
    }
}

/// The runner backend of the QCOM device (see the module docs).
pub struct QcomBackend {
    dev: Arc<QcomDevice>,
    buffers: Vec<GpuObject>,
    /// Each program's shader image, uploaded once.
    code: Vec<GpuObject>,
    programs: Vec<(Program, u64)>,
    enc: Option<Arc<A6xxEncoder>>,
    queue: Option<Pm4Queue>,
    /// Scratch (16 B for the barrier's flush event), private memory, signal, IB objects.
    scratch: Option<GpuObject>,
    pvt: Option<GpuObject>,
    signal: Option<GpuObject>,
    ib: Option<GpuObject>,
    consts: Vec<GpuObject>,
    signal_cmd: usize,
    calls: u64,
    block: Vec<u8>,
    timeout_ms: u32,
}

impl core::fmt::Debug for QcomBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QcomBackend").field("dev", &self.dev.name).field("calls", &self.calls).finish_non_exhaustive()
    }
}

const ARCHS: [Arch; 1] = [Arch::AdrenoA630];
/// Constant blocks per constant object (each launch has its own 4 KiB slot).
const CONSTS_PER_OBJECT: usize = 256;

impl QcomBackend {
    /// A backend on `dev`.
    pub fn new(dev: Arc<QcomDevice>) -> Result<Self> {
        let signal = dev.kgsl.alloc(4096, MemFlags::USE_CPU_MAP)?;
        let timeout_ms = dev.timeout_ms;
        Ok(Self {
            dev,
            buffers: Vec::new(),
            code: Vec::new(),
            programs: Vec::new(),
            enc: None,
            queue: None,
            scratch: None,
            pvt: None,
            signal: Some(signal),
            ib: None,
            consts: Vec::new(),
            signal_cmd: 0,
            calls: 0,
            block: Vec::new(),
            timeout_ms,
        })
    }

    /// Wait at most `ms` per call (default [`DEFAULT_TIMEOUT_MS`]).
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.timeout_ms = ms;
    }

    /// Calls made so far; the next call signals `calls + 1` (set it to resume the timeline of
    /// an earlier run).
    pub fn set_calls(&mut self, calls: u64) {
        self.calls = calls;
    }

    /// The signal value of the last call (its completion on the 64-bit timeline).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The device.
    pub fn device(&self) -> &Arc<QcomDevice> {
        &self.dev
    }

    /// The captured PM4 words (after the load).
    pub fn words(&self) -> &[u32] {
        self.queue.as_ref().map_or(&[], |q| q.words())
    }

    /// Device address of base buffer `i`.
    pub fn buffer_addr(&self, i: usize) -> Option<u64> {
        self.buffers.get(i).map(GpuObject::gpuaddr)
    }

    /// The encoder, created at the first launch with private memory for the largest program.
    fn encoder(&mut self) -> Result<Arc<A6xxEncoder>> {
        if let Some(e) = &self.enc {
            return Ok(e.clone());
        }
        let kgsl = &self.dev.kgsl;
        let stack = self.programs.iter().map(|(p, _)| p.stack_bytes).max().unwrap_or(0).max(4096);
        let scratch = kgsl.alloc(4096, MemFlags::USE_CPU_MAP)?;
        let pvt = kgsl.alloc(stack, MemFlags::USE_CPU_MAP)?;
        let enc = Arc::new(A6xxEncoder::new(EncoderConfig {
            scratch: scratch.gpuaddr(),
            pvt_mem: pvt.gpuaddr(),
            pvt_mem_bytes: pvt.size(),
        })?);
        for (p, code) in &mut self.programs {
            if let Some(slots) = &self.dev.arg_slots {
                let args = p.slots.iter().filter_map(|&(o, s)| match s {
                    hcq_adreno::program::Slot::Arg { arg } => Some((arg, o)),
                    _ => None,
                });
                slots.register(*code, args.collect());
            }
            *code = enc.add_program(p, *code)?;
        }
        self.queue = Some(Pm4Queue::new(enc.clone()));
        self.scratch = Some(scratch);
        self.pvt = Some(pvt);
        self.enc = Some(enc.clone());
        Ok(enc)
    }
}

impl Backend for QcomBackend {
    type Program = usize;

    fn archs(&self) -> &[Arch] {
        &ARCHS
    }

    fn limits(&self) -> DeviceLimits {
        self.dev.limits()
    }

    fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        debug_assert_eq!(index, self.buffers.len());
        let o = self.dev.kgsl.alloc(nbytes, MemFlags::USE_CPU_MAP)?;
        write_words(&o, 0, initial)?;
        let a = o.gpuaddr();
        self.buffers.push(o);
        Ok(a)
    }

    fn load_program(&mut self, _index: usize, p: &ProgramRef<'_>, _arch: Arch, object: &[u8]) -> Result<usize> {
        if self.enc.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: program loaded after the first launch", value: 0 });
        }
        let meta = p.adreno.ok_or(Error::Malformed {
            what: "bundle program",
            at: 0,
            reason: "an adreno_a630 object without its programs[].adreno metadata",
        })?;
        let prog = Program::from_json(object, meta)?;
        let code = self.dev.kgsl.alloc(prog.image.len() as u64, MemFlags::USE_CPU_MAP)?;
        write_words(&code, 0, &prog.image)?;
        // Until the encoder exists the second field holds the code address.
        self.programs.push((prog, code.gpuaddr()));
        self.code.push(code);
        Ok(self.programs.len() - 1)
    }

    fn record_kernel(&mut self, program: &usize, l: &Launch<'_, '_>) -> Result<()> {
        let gpu = l.kernel.gpu.ok_or(Error::Malformed {
            what: "bundle launch",
            at: l.index as u64,
            reason: "no Adreno dispatch (gpu_global_size/gpu_local_size/gpu_vals)",
        })?;
        self.encoder()?;
        let (prog, handle) = &self.programs[*program];
        prog.check_local(gpu.local_size)?;
        let vals: Vec<i32> = gpu
            .vals()
            .map(|v| {
                i32::try_from(v)
                    .map_err(|_| Error::InvalidArgument { what: "adreno integer argument (32-bit)", value: v as u64 })
            })
            .collect::<Result<_>>()?;
        self.block.resize(prog.const_block_bytes as usize, 0);
        prog.fill_consts(&mut self.block, l.args, &vals, gpu.local_size)?;
        // One 4 KiB-aligned slot per launch.
        let slot_bytes = (prog.const_block_bytes as usize).next_multiple_of(4096).max(4096);
        let n = self.queue.as_ref().map_or(0, |q| q.len());
        let slot = n / 2; // exec + barrier per launch
        if slot / CONSTS_PER_OBJECT >= self.consts.len() {
            self.consts
                .push(self.dev.kgsl.alloc((CONSTS_PER_OBJECT * 4096.max(slot_bytes)) as u64, MemFlags::USE_CPU_MAP)?);
        }
        let obj = &self.consts[slot / CONSTS_PER_OBJECT];
        let off = ((slot % CONSTS_PER_OBJECT) * slot_bytes) as u64;
        if off + slot_bytes as u64 > obj.size() {
            return Err(Error::OutOfSpace {
                what: "QCOM constant object",
                requested: off + slot_bytes as u64,
                capacity: obj.size(),
            });
        }
        write_words(obj, off, &self.block)?;
        let kernargs = obj.gpuaddr() + off;
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let q = self.queue.as_mut().expect("created by encoder()");
        q.push(Command::Exec { program: *handle, kernargs, global: gpu.global_size, local: gpu.local_size })?;
        q.push(Command::Barrier)?;
        Ok(())
    }

    fn record_copy(&mut self, _dst: u64, _src: u64, bytes: u64) -> Result<()> {
        Err(Error::Unsupported { what: "QCOM: copy launches (the a6xx encoder is compute-only; bytes)", value: bytes })
    }

    fn finish(&mut self) -> Result<()> {
        self.encoder()?;
        let signal = self.signal.as_ref().map_or(0, GpuObject::gpuaddr);
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let q = self.queue.as_mut().expect("created by encoder()");
        self.signal_cmd = q.push(Command::Signal { addr: signal, value: 0 })?;
        let bytes = 4 * q.words().len() as u64;
        self.ib = Some(self.dev.kgsl.alloc(bytes, MemFlags::USE_CPU_MAP)?);
        Ok(())
    }

    fn replay(&mut self) -> Result<()> {
        let (Some(q), Some(ib), Some(sig)) = (self.queue.as_mut(), self.ib.as_ref(), self.signal.as_ref()) else {
            return Err(Error::InvalidArgument { what: "QCOM: call before the load finished", value: 0 });
        };
        self.calls += 1;
        // Replay with patching: the signal value (every word that carries it) is this call's.
        q.patch(self.signal_cmd, Field::Value, self.calls)?;
        let bus = ib.bus();
        for (i, w) in q.words().iter().enumerate() {
            bus.write(4 * i, Width::U32, (*w).into())?;
        }
        self.dev.submit_and_wait(ib.gpuaddr(), 4 * q.words().len() as u64, self.timeout_ms)?;
        let seen = sig.bus().read(0, Width::U64)?;
        if seen != self.calls {
            return Err(Error::Mismatch {
                what: "QCOM: the call's signal after its timestamp retired",
                expected: self.calls,
                found: seen,
            });
        }
        Ok(())
    }

    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        let o = self.buffers.get(buffer).ok_or(Error::OutOfBounds {
            what: "QCOM buffer index",
            offset: buffer as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })?;
        let off =
            usize::try_from(offset).map_err(|_| Error::InvalidArgument { what: "QCOM read offset", value: offset })?;
        o.bus().read_bytes(off, out)
    }

    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        let o = self.buffers.get(buffer).ok_or(Error::OutOfBounds {
            what: "QCOM buffer index",
            offset: buffer as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })?;
        write_words(o, offset, data)
    }
}

impl Drop for QcomBackend {
    fn drop(&mut self) {
        // Every object goes back to KGSL only after the context's last submission retired.
        let ctx = &self.dev.ctx;
        let after = if ctx.has_submitted() {
            FreeAfter::Timestamp { context: ctx.id(), timestamp: ctx.last_submitted() }
        } else {
            FreeAfter::NeverSubmitted
        };
        let objs = self.buffers.drain(..).chain(self.code.drain(..)).chain(self.consts.drain(..));
        let objs =
            objs.chain(self.scratch.take()).chain(self.pvt.take()).chain(self.ib.take()).chain(self.signal.take());
        for o in objs {
            if let Err(e) = self.dev.kgsl.free(o, after) {
                log::warn!("QCOM: freeing a GPU object: {e}");
            }
        }
    }
}

/// The registry entry for `QCOM` (the KGSL node; a missing node is a clear error).
pub fn qcom_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(QcomDevice::open(Backing::Node, false)?)
    }
    hcq::device::DeviceKind { name: "QCOM", count, open }
}

/// The registry entry for `QCOM:SIM` (the simulated KGSL running shaders on the ir3 interpreter).
pub fn qcom_sim_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(QcomDevice::open(Backing::Sim, false)?)
    }
    hcq::device::DeviceKind { name: "QCOM:SIM", count, open }
}
