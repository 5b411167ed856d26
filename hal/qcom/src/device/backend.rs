//! The runner backend of the QCOM device ([`QcomBackend`], driven by `hcq_runner::Runner`): a
//! load validates, uploads the shaders, allocates the buffers, lays out each launch's constant
//! block and captures the launch list as one PM4 queue; a call patches and submits it through
//! the core engine's IB pool (see the [`crate::device`] docs).

use super::engine::{Fresh, GpuCommandHook, ObjBus, QcomHooks, Retiring, with_fault};
use super::validate::{check_launch, check_shader_support, image_views, validate_program, write_image_descriptors};
use super::{QcomDevice, free_after, write_words};
use crate::flags::MemFlags;
use crate::kernel::{Access, BufferList};
use crate::{GpuObject, TimestampHooks};
use hcq::barrier::Barrier;
use hcq::device::{Device, DeviceLimits};
use hcq::engine::{Channel, Engine};
use hcq::error::{ResultExt, device_name};
use hcq::mmio::MmioBus;
use hcq::profile::EventKind;
use hcq::queue::HwQueue;
use hcq::ring::KernargPool;
use hcq::signal::{OwnedSignal, SignalPage, Slot, WaitPolicy};
use hcq::stamp::Stamp;
use hcq::submit::IbPool;
use hcq::{Error, Result};
use hcq_adreno::{ComputeEncoder, EncoderConfig, Program};
use hcq_bundle::Arch;
use hcq_bundle::hcqb::{Hcqb, LaunchRef, ProgramRef};
use hcq_runner::{Backend, KernelLaunch};
use std::sync::Arc;

/// IB slots of a [`QcomBackend`] unless [`QcomBackend::set_ib_slots`] says otherwise: calls in
/// flight at most.
pub const DEFAULT_IB_SLOTS: usize = 4;
/// Signal slots in the timeline's GPU object (one page; the timeline uses the first).
const SIGNAL_SLOTS: usize = 4096 / 16;

/// The runner backend of the QCOM device (see the module docs).
pub struct QcomBackend {
    // Dropped first (see `Drop`): the captured queue, then the engine state, whose timeline
    // signal lies in `signal`'s mapping.
    pub(super) queue: Option<HwQueue>,
    pub(super) hcq: Option<Arc<Engine>>,
    /// The timeline signal until the engine takes it (its page owns the signal object).
    pub(super) timeline: Option<OwnedSignal>,
    pub(super) dev: Arc<QcomDevice>,
    pub(super) buffers: Vec<GpuObject>,
    /// Each program's shader image, uploaded once.
    pub(super) code: Vec<GpuObject>,
    /// Every program, validated by `prepare` before anything was allocated; taken by `load_program`.
    pub(super) prepared: Vec<Option<Program>>,
    pub(super) programs: Vec<(Program, u64)>,
    pub(super) enc: Option<Arc<dyn ComputeEncoder>>,
    /// Scratch (16 B for the barrier's flush event), private memory, timeline signal, IB pool
    /// and kernel-argument pool objects.
    pub(super) scratch: Option<GpuObject>,
    pub(super) pvt: Option<GpuObject>,
    pub(super) signal: Option<GpuObject>,
    pub(super) ib: Option<Arc<Retiring>>,
    pub(super) kernarg_mem: Option<Arc<Retiring>>,
    pub(super) consts: Vec<GpuObject>,
    /// Next free byte of the last constant object.
    pub(super) const_off: u64,
    pub(super) launches: usize,
    pub(super) ib_slots: usize,
    /// The timeline value the engine starts from (see `set_calls`).
    pub(super) start: u64,
    pub(super) block: Vec<u8>,
    pub(super) timeout_ms: u32,
    /// `--profile`: every launch bracketed by always-on-counter timestamps.
    pub(super) profile: bool,
    /// Timestamp objects (begin and end, 8 bytes each, per launch; [`STAMPS_PER_OBJECT`] launches
    /// per object).
    pub(super) stamps: Vec<GpuObject>,
    /// Per profiled launch: event kind, name (interned once the engine exists), argument.
    pub(super) profiled: Vec<(EventKind, String, u64)>,
    pub(super) profiled_ids: Vec<(EventKind, u32, u64)>,
    /// Objects listed for the submissions' buffer list before `finish` (the timeline signal's,
    /// whose page owns it from `encoder()` on).
    pub(super) listed: BufferList,
    /// Every kernel launch's constant block as recorded (to rewrite it when a buffer is
    /// rebound), and every copy launch (dst, src, bytes).
    pub(super) recorded: Vec<RecordedLaunch>,
    pub(super) copies: Vec<(u64, u64, u64)>,
    /// Ranges of device memory the calls use caller memory for ([`QcomBackend::bind_host`]).
    pub(super) binds: Vec<HostBind>,
}

/// A kernel launch's constant block: where it lies and what it was filled from.
#[derive(Debug)]
pub(super) struct RecordedLaunch {
    pub(super) consts: usize,
    pub(super) off: u64,
    pub(super) program: usize,
    /// Argument device addresses (as the calls see them now) and view sizes.
    pub(super) args: Vec<u64>,
    pub(super) sizes: Vec<u64>,
    pub(super) vals: Vec<i32>,
    pub(super) local: [u32; 3],
    /// The launch's image views (argument, view): what its descriptors are built from.
    pub(super) images: Vec<(u32, hcq_bundle::hcqb::ImageRef)>,
}

/// Device memory `[own, own + len)` replaced in the calls by the GPU address `to` (the
/// mapping of caller memory, when hcq made one).
#[derive(Debug)]
pub(super) struct HostBind {
    pub(super) own: u64,
    pub(super) len: u64,
    pub(super) to: u64,
    pub(super) map: Option<crate::UserMapping>,
}

impl core::fmt::Debug for QcomBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QcomBackend").field("dev", &self.dev.name).field("calls", &self.calls()).finish_non_exhaustive()
    }
}

const ARCHS: [Arch; 1] = [Arch::AdrenoA630];
/// Constant blocks per constant object (each launch has its own 4 KiB slot).
const CONSTS_PER_OBJECT: usize = 256;

impl QcomBackend {
    /// A backend on `dev`.
    pub fn new(dev: Arc<QcomDevice>) -> Result<Self> {
        let signal = dev.kernel.alloc(4096, MemFlags::USE_CPU_MAP)?;
        let timeout_ms = dev.timeout_ms;
        Ok(Self {
            queue: None,
            hcq: None,
            timeline: None,
            dev,
            buffers: Vec::new(),
            code: Vec::new(),
            prepared: Vec::new(),
            programs: Vec::new(),
            enc: None,
            scratch: None,
            pvt: None,
            signal: Some(signal),
            ib: None,
            kernarg_mem: None,
            consts: Vec::new(),
            const_off: 0,
            launches: 0,
            ib_slots: DEFAULT_IB_SLOTS,
            start: 0,
            block: Vec::new(),
            timeout_ms,
            profile: false,
            stamps: Vec::new(),
            profiled: Vec::new(),
            profiled_ids: Vec::new(),
            listed: BufferList::new(),
            recorded: Vec::new(),
            copies: Vec::new(),
            binds: Vec::new(),
        })
    }

    /// Wait at most `ms` without progress per wait (default [`DEFAULT_TIMEOUT_MS`](super::DEFAULT_TIMEOUT_MS)).
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.timeout_ms = ms;
        if let Some(h) = &self.hcq {
            h.timeline().set_policy(WaitPolicy::with_timeout_ms(ms.into()));
        }
    }

    /// IB slots of the engine (calls in flight at most; default [`DEFAULT_IB_SLOTS`]). Only
    /// before the load finished.
    pub fn set_ib_slots(&mut self, slots: usize) -> Result<()> {
        if self.hcq.is_some() || slots == 0 {
            return Err(Error::InvalidArgument {
                what: "QCOM IB slots: at least one, set before the load finishes",
                value: slots as u64,
            });
        }
        self.ib_slots = slots;
        Ok(())
    }

    /// Continue the timeline at `calls`: the next call signals `calls + 1` (to resume the
    /// timeline of an earlier run). Errors while a call is in flight.
    pub fn set_calls(&mut self, calls: u64) -> Result<()> {
        match &self.hcq {
            Some(h) => h.resume_at(Stamp::new(calls)),
            None => {
                self.start = calls;
                Ok(())
            }
        }
    }

    /// The timeline value of the last call submitted (its completion on the 64-bit timeline).
    pub fn calls(&self) -> u64 {
        self.hcq.as_ref().map_or(self.start, |h| h.timeline().last_submitted().get())
    }

    /// The device.
    pub fn device(&self) -> &Arc<QcomDevice> {
        &self.dev
    }

    /// The engine state (after the load): timeline, IB engine, profiler.
    pub fn engine(&self) -> Option<&Arc<Engine>> {
        self.hcq.as_ref()
    }

    /// The captured PM4 words (after the load; patched for the last call submitted).
    pub fn words(&self) -> &[u32] {
        self.queue.as_ref().map_or(&[], |q| q.words())
    }

    /// Base buffer `i`, or an error naming the index.
    fn buffer(&self, i: usize) -> Result<&GpuObject> {
        self.buffers.get(i).ok_or(Error::OutOfBounds {
            what: "QCOM buffer index",
            offset: i as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })
    }

    /// Device address of base buffer `i`.
    pub fn buffer_addr(&self, i: usize) -> Option<u64> {
        self.buffers.get(i).map(GpuObject::gpuaddr)
    }

    /// Submit one call (the captured queue, its timeline wait and signal patched) without
    /// waiting; returns the timeline value that completes it. Blocks when every IB slot holds a
    /// call whose stamp has not passed.
    pub fn submit_call(&mut self) -> Result<Stamp> {
        let (Some(h), Some(q)) = (self.hcq.as_ref(), self.queue.as_mut()) else {
            return Err(Error::InvalidArgument { what: "QCOM: call before the load finished", value: 0 });
        };
        // The captured queue was built from the bundle's checked launches over this backend's
        // objects, which live until the backend drops (after the context's last submission).
        // SAFETY: every command names this backend's live objects inside their bounds.
        unsafe { h.submit(0, q) }.map_err(|e| with_fault(&self.dev.kernel, e))
    }

    /// Wait (sleeping in KGSL `WAITTIMESTAMP`) until the timeline reaches `stamp`.
    pub fn wait(&self, stamp: Stamp) -> Result<()> {
        match &self.hcq {
            Some(h) => h.wait(stamp).map_err(|e| with_fault(&self.dev.kernel, e)),
            None => Ok(()),
        }
    }

    /// Wait for every call submitted.
    pub fn synchronize(&self) -> Result<()> {
        match &self.hcq {
            Some(h) => self.wait(h.timeline().last_submitted()),
            None => Ok(()),
        }
    }

    /// Before a host access to a buffer: wait for the calls in flight. A device that faulted
    /// or hung runs nothing more of them, so its memory is read (or written) as it is.
    pub(super) fn settle(&self) -> Result<()> {
        match self.synchronize() {
            Err(e) if !matches!(e.root(), Error::DeviceHung { .. }) => Err(e),
            _ => Ok(()),
        }
    }

    /// The encoder, created at the first launch with private memory for the largest program;
    /// with it the timeline signal and the captured queue.
    fn encoder(&mut self) -> Result<Arc<dyn ComputeEncoder>> {
        if let Some(e) = &self.enc {
            return Ok(e.clone());
        }
        let kernel = &self.dev.kernel;
        let stack = self.programs.iter().map(|(p, _)| p.stack_bytes).max().unwrap_or(0).max(4096);
        let scratch = Fresh::new(kernel, kernel.alloc(4096, MemFlags::USE_CPU_MAP)?);
        let pvt = Fresh::new(kernel, kernel.alloc(stack, MemFlags::USE_CPU_MAP)?);
        let enc = hcq_adreno::compute_encoder(
            kernel.info().chip_id,
            EncoderConfig {
                scratch: scratch.get().gpuaddr(),
                pvt_mem: pvt.get().gpuaddr(),
                pvt_mem_bytes: pvt.get().size(),
            },
        )?;
        for (p, code) in &mut self.programs {
            let args: Vec<(u32, u32)> = p
                .slots
                .iter()
                .filter_map(|&(o, s)| match s {
                    hcq_adreno::program::Slot::Arg { arg } => Some((arg, o)),
                    _ => None,
                })
                .collect();
            kernel.note_program(*code, &args);
            *code = enc.add_program(p, *code)?;
        }
        let sig = self.signal.take().ok_or(Error::InvalidArgument { what: "QCOM: no signal object", value: 0 })?;
        self.listed.push(&sig, Access::ReadWrite);
        let (base, gpuaddr) = (sig.bus().base().cast::<Slot>(), sig.gpuaddr());
        let owner = Box::new(Retiring::new(kernel, &self.dev.ctx, sig));
        // The page owns the object: every Signal and engine pointing into it keeps it mapped,
        // and it goes back to KGSL after the last of them (and the last submission) is done.
        // SAFETY: a zeroed, page-aligned mapping of SIGNAL_SLOTS × 16 bytes, seen by the GPU at
        // `gpuaddr`, mapped until `owner` drops; the CPU uses its atomics only.
        let page = unsafe { SignalPage::from_raw_owning(base, SIGNAL_SLOTS, gpuaddr, owner) };
        let timeline = OwnedSignal::new(Arc::new(page), 0)?;
        let mut queue = HwQueue::new(enc.clone(), &timeline)?;
        // Decision (issue 18 §2): a call starts, after its timeline wait, with a cache flush and
        // invalidate (the barrier), as tinygrad's HCQProgram.__call__ does
        // (`wait(...).memory_barrier().exec(...)`): what the host wrote between calls (inputs,
        // a rebound buffer) is not hidden behind lines the texture cache or UCHE kept from the
        // last call. Mesa agrees: turnip invalidates every cache at the start of a command
        // buffer (tu_cmd_buffer_begin: pending_flush_bits = TU_CMD_FLAG_ALL_INVALIDATE).
        queue.memory_barrier()?;
        self.queue = Some(queue);
        self.timeline = Some(timeline);
        self.scratch = Some(scratch.keep());
        self.pvt = Some(pvt.keep());
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
        let o = Fresh::new(&self.dev.kernel, self.dev.kernel.alloc(nbytes, MemFlags::USE_CPU_MAP)?);
        write_words(o.get(), 0, initial)?;
        let a = o.get().gpuaddr();
        self.buffers.push(o.keep());
        Ok(a)
    }

    /// Validate every program and every launch against its program, before anything is
    /// allocated (the limits were checked by the core just before): a bundle the device would
    /// refuse at its first launch is refused here, with nothing allocated.
    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        // the Adreno half of the limits step (the runner ran the device-neutral one)
        super::check_limits(bundle, &self.dev.gpu_limits(), self.limits().max_kernel_args)?;
        let mut progs = Vec::with_capacity(bundle.n_programs());
        for (i, p) in bundle.programs().enumerate() {
            let prog = p
                .object(arch)
                .ok_or(Error::Unsupported {
                    what: "bundle has no object for this architecture",
                    value: arch.code().into(),
                })
                .and_then(|o| validate_program(&p, o))
                .with_context(|| format!("program {i} ({})", p.name))?;
            progs.push(prog);
        }
        for (i, l) in bundle.launches().enumerate() {
            let LaunchRef::Kernel(k) = l else { continue };
            let prog = progs.get(k.program as usize).ok_or(Error::OutOfBounds {
                what: "launch program index",
                offset: k.program.into(),
                len: 1,
                limit: progs.len() as u64,
            });
            prog.and_then(|p| check_launch(p, &k)).with_context(|| format!("launch {i} ({})", k.name))?;
        }
        // Last, what the backend's shader core lacks (the simulator's interpreter): the metadata
        // and the launches are the bundle's own errors, reported first.
        for (i, (prog, p)) in progs.iter().zip(bundle.programs()).enumerate() {
            check_shader_support(prog, &*self.dev.kernel).with_context(|| format!("program {i} ({})", p.name))?;
        }
        self.prepared = progs.into_iter().map(Some).collect();
        Ok(())
    }

    fn load_program(&mut self, index: usize, p: &ProgramRef<'_>, _arch: Arch, object: &[u8]) -> Result<usize> {
        if self.enc.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: program loaded after the first launch", value: 0 });
        }
        let prog = match self.prepared.get_mut(index).and_then(Option::take) {
            Some(p) => p,
            None => {
                let prog = validate_program(p, object)?;
                check_shader_support(&prog, &*self.dev.kernel)?;
                prog
            }
        };
        let code = Fresh::new(&self.dev.kernel, self.dev.kernel.alloc(prog.image.len() as u64, MemFlags::USE_CPU_MAP)?);
        write_words(code.get(), 0, &prog.image)?;
        // Until the encoder exists the second field holds the code address.
        self.programs.push((prog, code.get().gpuaddr()));
        self.code.push(code.keep());
        Ok(self.programs.len() - 1)
    }

    fn record_kernel(&mut self, program: &usize, l: &KernelLaunch<'_, '_>) -> Result<()> {
        let gpu = l.kernel.gpu.ok_or(Error::Malformed {
            what: "bundle launch",
            at: l.index as u64,
            reason: "no Adreno dispatch (gpu_global_size/gpu_local_size/gpu_vals)",
        })?;
        self.encoder()?;
        let (prog, _) = &self.programs[*program];
        prog.check_local(gpu.local_size)?;
        let vals: Vec<i32> = gpu
            .vals()
            .map(|v| {
                i32::try_from(v)
                    .map_err(|_| Error::InvalidArgument { what: "adreno integer argument (32-bit)", value: v as u64 })
            })
            .collect::<Result<_>>()?;
        let images = image_views(prog, l.kernel)?;
        self.block.resize(prog.const_block_bytes as usize, 0);
        prog.fill_consts(&mut self.block, l.args, &vals, gpu.local_size)?;
        write_image_descriptors(prog, &mut self.block, l.args, &images)?;
        // One 4 KiB-aligned slot per launch, at the constant objects' cursor: slots of programs
        // with larger blocks take more room, and never overlap the next launch's.
        let slot_bytes = u64::from(prog.const_block_bytes).next_multiple_of(4096).max(4096);
        let fits = self.consts.last().is_some_and(|o| self.const_off + slot_bytes <= o.size());
        if !fits {
            let bytes = (CONSTS_PER_OBJECT as u64 * 4096).max(slot_bytes);
            self.consts.push(self.dev.kernel.alloc(bytes, MemFlags::USE_CPU_MAP)?);
            self.const_off = 0;
        }
        // PANIC: an object was pushed above when there was none.
        let obj = self.consts.last().expect("a constant object");
        let off = self.const_off;
        self.const_off += slot_bytes;
        write_words(obj, off, &self.block)?;
        let kernargs = obj.gpuaddr() + off;
        self.recorded.push(RecordedLaunch {
            consts: self.consts.len() - 1,
            off,
            program: *program,
            args: l.args.to_vec(),
            sizes: l.kernel.args().map(|a| a.nbytes).collect(),
            vals: vals.clone(),
            local: gpu.local_size,
            images,
        });
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let stamps = if self.profile {
            let name = l.kernel.name.to_string();
            Some(self.stamp_pair(EventKind::Program, &name, u64::from(gpu.global_size.iter().product::<u32>()))?)
        } else {
            None
        };
        let (_, handle) = &self.programs[*program];
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let q = self.queue.as_mut().expect("created by encoder()");
        if let Some((t0, _)) = stamps {
            q.timestamp_at(t0)?;
        }
        q.exec(*handle, kernargs, gpu.global_size, gpu.local_size)?;
        if let Some((_, t1)) = stamps {
            q.timestamp_at(t1)?;
        }
        q.memory_barrier()?;
        self.launches += 1;
        Ok(())
    }

    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        // CP_MEMCPY after the dispatches before it (the encoder waits for idle), then a barrier
        // (cache flush and invalidate) so later dispatches read the copied bytes.
        self.encoder()?;
        let stamps = if self.profile { Some(self.stamp_pair(EventKind::Copy, "copy", bytes)?) } else { None };
        // PANIC: `encoder()` succeeded above, and it creates the queue with the encoder.
        let q = self.queue.as_mut().expect("created by encoder()");
        if let Some((t0, _)) = stamps {
            q.timestamp_at(t0)?;
        }
        q.copy(dst, src, bytes)?;
        self.copies.push((dst, src, bytes));
        if let Some((_, t1)) = stamps {
            q.timestamp_at(t1)?;
        }
        q.memory_barrier()?;
        self.launches += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if self.hcq.is_some() {
            return Err(Error::InvalidArgument { what: "QCOM: the load finished already", value: 0 });
        }
        let enc = self.encoder()?;
        // PANIC: `encoder()` succeeded above, and it creates the queue and the timeline signal.
        let q = self.queue.as_mut().expect("created by encoder()");
        let timeline = self.timeline.take().expect("created by encoder()");
        q.finish()?;
        let kernel = &self.dev.kernel;
        // One IB slot holds the whole captured queue.
        let slot_bytes = (4 * q.words().len()).next_multiple_of(256);
        let pool_bytes = slot_bytes * self.ib_slots;
        let ctx = &self.dev.ctx;
        let ib = Arc::new(Retiring::new(kernel, ctx, kernel.alloc(pool_bytes as u64, MemFlags::USE_CPU_MAP)?));
        let kernarg_mem = Arc::new(Retiring::new(kernel, ctx, kernel.alloc(4096, MemFlags::USE_CPU_MAP)?));
        // Every object a call references, listed once (MSM sends it with each submission).
        let mut buffers = std::mem::take(&mut self.listed);
        let rw = self.buffers.iter().chain(&self.stamps).chain(&self.scratch).chain(&self.pvt);
        rw.for_each(|o| buffers.push(o, Access::ReadWrite));
        for o in self.code.iter().chain(&self.consts).chain([ib.obj(), kernarg_mem.obj()]) {
            buffers.push(o, Access::Read);
        }
        let hook = GpuCommandHook { kernel: kernel.clone(), ctx: self.dev.ctx.clone(), buffers };
        let pool = IbPool::new(
            Arc::new(ObjBus::new(ib.clone(), pool_bytes)?),
            ib.obj().gpuaddr(),
            slot_bytes,
            Barrier::DeviceWrite,
            Box::new(hook),
        )?;
        // The runner's constant blocks live in the constant objects above (captured once); this
        // pool serves `Submitter::kernargs` for work built at run time.
        let kernargs =
            KernargPool::new(Arc::new(ObjBus::new(kernarg_mem.clone(), 4096)?), kernarg_mem.obj().gpuaddr(), 16);
        let hooks =
            QcomHooks { inner: TimestampHooks::new(kernel.clone(), self.dev.ctx.clone()), kernel: kernel.clone() };
        let hcq = Engine::new(
            device_name(&self.dev.name),
            timeline,
            enc,
            vec![Channel::new("compute", pool)],
            kernargs,
            Arc::new(hooks),
        )?;
        hcq.timeline().set_policy(WaitPolicy::with_timeout_ms(self.timeout_ms.into()));
        if self.start != 0 {
            hcq.resume_at(Stamp::new(self.start))?;
        }
        self.ib = Some(ib);
        self.kernarg_mem = Some(kernarg_mem);
        self.hcq = Some(Arc::new(hcq));
        Ok(())
    }

    fn replay(&mut self) -> Result<()> {
        let submitted = hcq::signal::host_clock_ns();
        let stamp = self.submit_call()?;
        self.wait(stamp)?;
        if self.profile {
            self.record_profile(submitted, hcq::signal::host_clock_ns())?;
        }
        Ok(())
    }

    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        let o = self.buffer(buffer)?;
        let off =
            usize::try_from(offset).map_err(|_| Error::InvalidArgument { what: "QCOM read offset", value: offset })?;
        self.settle()?;
        o.bus().read_bytes(off, out)
    }

    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        let o = self.buffer(buffer)?;
        self.settle()?;
        write_words(o, offset, data)
    }
}

impl Drop for QcomBackend {
    fn drop(&mut self) {
        // The engine's objects (timeline signal page, IB and kernel-argument pools) are owned by
        // what points into them: they go back to KGSL when the last holder drops, this backend
        // or a clone of its engine ([`QcomBackend::hcq`]).
        self.queue = None;
        self.hcq = None;
        self.timeline = None;
        self.ib = None;
        self.kernarg_mem = None;
        // Caller memory is unmapped after the calls that use it.
        for b in self.binds.drain(..) {
            if let Some(m) = b.map
                && let Err(e) =
                    self.dev.kernel.unmap_user(m, &self.dev.ctx, self.dev.ctx.last_submitted(), self.timeout_ms)
            {
                log::warn!("QCOM: unmapping caller memory at {:#x}: {e}", b.to);
            }
        }
        // Every other object goes back to KGSL only after the context's last submission retired.
        let after = free_after(&self.dev.ctx);
        let objs =
            self.buffers.drain(..).chain(self.code.drain(..)).chain(self.consts.drain(..)).chain(self.stamps.drain(..));
        let objs = objs.chain(self.scratch.take()).chain(self.pvt.take()).chain(self.signal.take());
        for o in objs {
            if let Err(e) = self.dev.kernel.free(o, after) {
                log::warn!("QCOM: freeing a GPU object: {e}");
            }
        }
    }
}
