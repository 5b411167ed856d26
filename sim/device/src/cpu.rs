//! The host's CPU objects run through the `SIM` device: a backend of the core bundle runner
//! ([`hcq_runner::Runner`]) whose every kernel is an exec packet of the simulated command
//! processors ([`SimDevice`](crate::SimDevice): doorbells and read pointers in mock MMIO, `SimFaults`
//! latency, stalls and hangs).
//!
//! What [`SimBackend`] does for the runner:
//! - `prepare`: as the CPU (this host's objects, its x86-64 level);
//! - buffers: [`Buffer`](hcq::buffer::Buffer)s of the SIM device (host blocks the simulated copy engine knows),
//!   filled in chunks like the CPU's;
//! - programs: each object loaded with the CPU's ELF loader into executable memory
//!   ([`LoadedObject`]);
//! - launches: each kernel launch gets its argument block (host-ABI 64-bit words: buffer
//!   addresses, then integer values) in one kernel-argument region of the device's, and is
//!   registered with the device ([`SimDevice::register`](crate::SimDevice::register)) as a
//!   host function that checks the block the command processor hands it against the recorded
//!   one and calls the kernel (`core_id` kernels once per tid, in order, on the command
//!   processor's thread); copies are copy packets. The packets form one queue, or several
//!   when they would take more than a quarter of the ring;
//! - `replay`: submit the queues through the SIM's rings (a doorbell write each) and wait on
//!   the timeline: an injected hang ends as the timeline's [`Error::Timeout`]
//!   ([`SimBackend::set_timeout_ms`]), a kernel that fails faults the device.
//!
//! Buffers carry the stamp of the last submission that uses them (as on the CPU: brought up to
//! date before host reads and writes and before they drop), so reads wait for the calls that
//! write and frees are deferred past the last use.

use crate::SimHandle;
use hcq::device::{Device, DeviceLimits};
use hcq::error::{Error, Result, ResultExt};
use hcq::mmio::{HostRegion, MmioBus};
use hcq::queue::HwQueue;
use hcq::signal::WaitPolicy;
use hcq::stamp::Stamp;
use hcq_bundle::Arch;
use hcq_bundle::hcqb::{Hcqb, ProgramRef};
use hcq_cpu::backend::{Buffers, launch_words, prepare_host};
use hcq_cpu::device::{MAX_ARGS, call_kernel, cpu_limits};
use hcq_cpu::exec::{LoadedObject, default_resolver};
use hcq_runner::build_queues;
use hcq_runner::{Backend, KernelLaunch};
use std::boxed::Box;
use std::format;
use std::sync::{Arc, RwLock};
use std::vec::Vec;

/// A program's object loaded for the host.
struct SimKernel {
    obj: LoadedObject,
    nargs: usize,
    core_id: Option<usize>,
}

/// One kernel launch as recorded: program, argument words, calls (`core_id` kernels).
struct Recorded {
    program: usize,
    args: Vec<u64>,
    calls: u32,
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Recorded launch `i`; an exec packet once registered.
    Kernel(usize),
    Copy {
        dst: u64,
        src: u64,
        bytes: u64,
    },
}

#[derive(Clone, Copy, Debug)]
enum Packet {
    Exec { handle: u64, kernargs: u64, global: u32 },
    Copy { dst: u64, src: u64, bytes: u64 },
}

/// The host's CPU objects on the SIM device, as a runner backend (see the module docs).
pub struct SimBackend {
    dev: Arc<SimHandle>,
    host: Option<Arch>,
    allow_unchecked_level: bool,
    bufs: Buffers,
    kernels: Vec<Arc<SimKernel>>,
    recorded: Vec<Recorded>,
    steps: Vec<Step>,
    /// The launches' argument blocks (a kernel-argument region of the device).
    region: Option<Arc<HostRegion>>,
    /// The loaded kernels the registered functions call, while the buffers they point at are
    /// alive: each call of one holds the read lock; the drop takes the write lock and empties
    /// it (the executable memory goes then; the device keeps only the small closures).
    live: Arc<RwLock<Option<Vec<Arc<SimKernel>>>>>,
    queues: Vec<HwQueue>,
    last: Stamp,
}

impl core::fmt::Debug for SimBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimBackend")
            .field("dev", &Device::name(&*self.dev))
            .field("launches", &self.recorded.len())
            .finish_non_exhaustive()
    }
}

impl SimBackend {
    /// A backend on the SIM device `dev`.
    pub fn new(dev: Arc<SimHandle>) -> Self {
        let ddev: Arc<dyn Device> = dev.clone();
        Self {
            dev,
            host: Arch::host(),
            allow_unchecked_level: false,
            bufs: Buffers::new(ddev),
            kernels: Vec::new(),
            recorded: Vec::new(),
            steps: Vec::new(),
            region: None,
            live: Arc::new(RwLock::new(None)),
            queues: Vec::new(),
            last: Stamp::ZERO,
        }
    }

    /// Run objects whose CPU level cannot be verified (`native`, or none stated).
    pub fn allow_unchecked_level(mut self, allow: bool) -> Self {
        self.allow_unchecked_level = allow;
        self
    }

    /// The SIM device (its faults, its mock MMIO, its engine state).
    pub fn device(&self) -> &Arc<SimHandle> {
        &self.dev
    }

    /// Give up on a call after `ms` without progress of the device's timeline (the default is
    /// the timeline's policy, 30 s). Applies to every wait on this device.
    pub fn set_timeout_ms(&self, ms: u64) {
        self.dev.sim().engine().timeline().set_policy(WaitPolicy::with_timeout_ms(ms));
    }

    /// Number of submissions (doorbell writes) one call makes.
    pub fn submissions_per_call(&self) -> usize {
        self.queues.len()
    }

    /// Device addresses of the base buffers.
    pub fn buffer_addrs(&self) -> &[u64] {
        self.bufs.addrs()
    }

    /// Submit one forward pass without waiting; returns the timeline value that completes it.
    pub fn submit(&mut self) -> Result<u64> {
        // The queues run host functions registered here, which check every argument against
        // the one recorded at load (views `Hcqb::parse` checked against the backend's buffers).
        // SAFETY: every command names this backend's live buffers inside their bounds.
        unsafe { hcq_runner::submit_queues(self.dev.sim().engine(), &mut self.queues, &mut self.last) }
    }

    /// Register recorded launch `i` (its block at `kernargs` in the region) as a host function
    /// of the device; returns its program handle.
    fn register(&self, i: usize, kernargs: &[u8]) -> Result<u64> {
        let rec = &self.recorded[i];
        let expected: Box<[u64]> = rec.args.clone().into_boxed_slice();
        let (program, calls, live) = (rec.program, rec.calls, self.live.clone());
        let n = expected.len();
        debug_assert_eq!(kernargs.len(), 8 * n);
        self.dev.sim().register(8 * n, move |block, global, _local| {
            let live = live.read().unwrap_or_else(|p| p.into_inner());
            let Some(kernel) = live.as_ref().and_then(|k| k.get(program)) else {
                return Err(Error::InvalidArgument {
                    what: "SIM: exec of a CPU kernel whose model was dropped",
                    value: 0,
                });
            };
            let mut words = [0u64; MAX_ARGS];
            if block.len() != 8 * n {
                return Err(Error::Mismatch {
                    what: "SIM: kernel argument bytes",
                    expected: 8 * n as u64,
                    found: block.len() as u64,
                });
            }
            for (w, c) in words.iter_mut().zip(block.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                *w = u64::from_le_bytes(b);
            }
            if let Some(j) = (0..n).find(|&j| words[j] != expected[j]) {
                return Err(Error::Mismatch {
                    what: "SIM: a kernel argument differs from the one recorded at load",
                    expected: expected[j],
                    found: words[j],
                });
            }
            let args = &mut words[..n];
            match kernel.core_id {
                Some(slot) => {
                    if global[0] != calls {
                        return Err(Error::Mismatch {
                            what: "SIM: core_id calls of the exec packet",
                            expected: calls.into(),
                            found: global[0].into(),
                        });
                    }
                    for tid in 0..u64::from(calls) {
                        args[slot] = tid;
                        // The words are those recorded at load (pointers: base buffers plus validated
                        // view offsets). `live` holds the kernels while the read guard above is held,
                        // and the backend's drop empties it (write lock) before its buffers go.
                        // SAFETY: `kernel`'s live entry takes `kernel.nargs == n` integer arguments.
                        unsafe { call_kernel(kernel.obj.entry(), args)? };
                    }
                    Ok(())
                }
                // SAFETY: as above.
                None => unsafe { call_kernel(kernel.obj.entry(), args) },
            }
        })
    }
}

impl Backend for SimBackend {
    type Program = usize;

    fn archs(&self) -> &[Arch] {
        self.host.as_slice()
    }

    fn limits(&self) -> DeviceLimits {
        self.dev.limits().min(&cpu_limits())
    }

    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        prepare_host(bundle, arch, self.allow_unchecked_level)
    }

    fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        self.bufs.alloc(index, nbytes, initial)
    }

    fn load_program(&mut self, _index: usize, p: &ProgramRef<'_>, _arch: Arch, object: &[u8]) -> Result<usize> {
        let nargs = p.n_params();
        let core_id = p.core_id_arg.map(|s| s as usize);
        hcq_cpu::device::check_signature(nargs, core_id)?;
        let obj = LoadedObject::load(object, hcq_cpu::elf::Machine::host(), p.symbol, &default_resolver)
            .with_context(|| format!("loading kernel {}", p.symbol))?;
        self.kernels.push(Arc::new(SimKernel { obj, nargs, core_id }));
        Ok(self.kernels.len() - 1)
    }

    fn record_kernel(&mut self, program: &usize, l: &KernelLaunch<'_, '_>) -> Result<()> {
        let args = launch_words(l)?;
        let k = self.kernels.get(*program).ok_or(Error::InvalidArgument { what: "SIM program", value: 0 })?;
        if args.len() != k.nargs {
            return Err(Error::Mismatch {
                what: "launch arguments vs the program's parameters",
                expected: k.nargs as u64,
                found: args.len() as u64,
            });
        }
        let calls = l.kernel.global_size[0];
        if k.core_id.is_some() && calls == 0 {
            return Err(Error::InvalidArgument { what: "a core_id launch needs global[0] >= 1", value: 0 });
        }
        self.recorded.push(Recorded { program: *program, args, calls });
        self.steps.push(Step::Kernel(self.recorded.len() - 1));
        self.bufs.note_kernel(l.kernel);
        Ok(())
    }

    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.bufs.note_copy(dst, src, bytes)?;
        self.steps.push(Step::Copy { dst, src, bytes });
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        *self.live.write().unwrap_or_else(|p| p.into_inner()) = Some(self.kernels.clone());
        // every launch's argument block, 16-byte aligned, in one region of the device
        let mut offs = Vec::with_capacity(self.recorded.len());
        let mut total = 0usize;
        for r in &self.recorded {
            offs.push(total);
            total += (8 * r.args.len()).next_multiple_of(16);
        }
        let region = Arc::new(HostRegion::new(total.max(16), 64)?);
        let mut block = Vec::new();
        let mut handles = Vec::with_capacity(self.recorded.len());
        for (i, r) in self.recorded.iter().enumerate() {
            block.clear();
            block.extend(r.args.iter().flat_map(|w| w.to_le_bytes()));
            region.write_bytes(offs[i], &block)?;
            handles.push(self.register(i, &block).with_context(|| format!("launch {i}"))?);
        }
        self.dev.sim().soft().add_kernarg_region(region.clone());
        let base = region.addr();
        self.region = Some(region);
        let packets: Vec<Packet> = self
            .steps
            .iter()
            .map(|st| match *st {
                Step::Kernel(i) => {
                    Packet::Exec { handle: handles[i], kernargs: base + offs[i] as u64, global: self.recorded[i].calls }
                }
                Step::Copy { dst, src, bytes } => Packet::Copy { dst, src, bytes },
            })
            .collect();
        self.bufs.finish();
        self.queues = build_queues(self.dev.sim().engine(), &packets, |q, p| {
            match *p {
                Packet::Exec { handle, kernargs, global } => q.exec(handle, kernargs, [global, 1, 1], [1, 1, 1])?,
                Packet::Copy { dst, src, bytes } => q.copy(dst, src, bytes)?,
            };
            Ok(())
        })?;
        Ok(())
    }

    fn replay(&mut self) -> Result<()> {
        self.submit()?;
        self.dev.sim().engine().wait(self.last)
    }

    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        self.bufs.read(self.last, buffer, offset, out)
    }

    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        self.bufs.write(self.last, buffer, offset, data)
    }
}

impl Drop for SimBackend {
    fn drop(&mut self) {
        if let Err(e) = self.dev.sim().engine().wait(self.last) {
            log::warn!("SIM: waiting for a model's last call before unloading it: {e}");
        }
        // from here on the registered functions refuse to run (their buffers are going)
        *self.live.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.kernels.clear();
        if let Some(r) = self.region.take() {
            self.dev.sim().soft().remove_kernarg_region(&r);
        }
        // the buffers drop next: their memory is freed once the device passed this stamp
        self.bufs.mark(self.last);
    }
}
