//! The board's backend of the core bundle runner ([`hcq_runner::Runner`]): the CPU of the
//! board, over the core's thread-less soft device ([`InlineDevice`]).
//!
//! What [`BoardBackend`] does for the runner (which parses, checks the limits, allocates,
//! loads, resolves every launch's buffer arguments and compares the outputs):
//! - `prepare`: refuses objects built for anything but plain ARMv8-A (the emulated Cortex-A57);
//! - buffers: heap blocks (64-byte aligned) with the bundle's starting bytes, the rest zeroed;
//! - programs: each AArch64 object loaded into executable memory ([`Image::load`]);
//! - launches: every launch's 64-bit arguments (buffer addresses, then integer values) in one
//!   kernel-argument region of their own, recorded as exec packets (copies as copy packets);
//!   `finish` builds the device with the [`Kernels`] executor and the queues
//!   ([`hcq_runner::build_queues`]);
//! - `replay`: submit the queues and drive the device with [`InlineDevice::run_until`] on this
//!   one core.

use crate::exec::{Image, Kernel, Kernels, MAX_ARGS};
use alloc::sync::Arc;
use alloc::vec::Vec;
use hcq::device::DeviceLimits;
use hcq::error::{Error, Result, ResultExt};
use hcq::mmio::{HostRegion, MmioBus};
use hcq::queue::HwQueue;
use hcq::soft::inline::{InlineDevice, SoftConfig};
use hcq::stamp::Stamp;
use hcq_bundle::Arch;
use hcq_bundle::hcqb::{Hcqb, ProgramRef};
use hcq_runner::{Backend, KernelLaunch};

/// One step of a call, as recorded.
#[derive(Clone, Copy)]
enum Step {
    /// Program, word offset of its arguments in the region, grid, local size.
    Exec {
        program: u64,
        arg_word: usize,
        global: [u32; 3],
        local: [u32; 3],
    },
    Copy {
        dst: u64,
        src: u64,
        bytes: u64,
    },
}

/// The board's CPU as a runner backend (see the module docs).
#[derive(Default)]
pub struct BoardBackend {
    bufs: Vec<HostRegion>,
    kernels: Vec<Kernel>,
    argv: Vec<u64>,
    steps: Vec<Step>,
    /// Built by `finish`. Nothing runs on it unless it is driven (`replay` drives it to the
    /// end of each call), so it may drop after the buffers its kernels use.
    dev: Option<InlineDevice>,
    queues: Vec<HwQueue>,
    kernargs: Option<Arc<HostRegion>>,
    last: Stamp,
}

impl BoardBackend {
    fn buf(&self, buffer: usize) -> Result<&HostRegion> {
        self.bufs.get(buffer).ok_or(Error::OutOfBounds {
            what: "board buffer index",
            offset: buffer as u64,
            len: 1,
            limit: self.bufs.len() as u64,
        })
    }
}

impl Backend for BoardBackend {
    type Program = usize;

    fn archs(&self) -> &[Arch] {
        &[Arch::Aarch64]
    }

    fn limits(&self) -> DeviceLimits {
        let heap = crate::heap::size() as u64;
        DeviceLimits {
            memory_bytes: heap,
            max_alloc_bytes: heap,
            alloc_align: 16,
            max_kernel_args: MAX_ARGS as u32,
            max_grid: [u32::MAX; 3],
        }
    }

    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        match bundle.arch_level(arch) {
            Some("armv8-a") => Ok(()),
            other => {
                log_level(other);
                Err(Error::Unsupported {
                    what: "bundle aarch64 objects are not built for plain armv8-a (the emulated Cortex-A57)",
                    value: 0,
                })
            }
        }
    }

    fn alloc(&mut self, _index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        // `nbytes` is rounded to the 16-byte granule by the runner (`limits`)
        let n = usize::try_from(nbytes).map_err(|_| Error::InvalidArgument { what: "buffer size", value: nbytes })?;
        let r = HostRegion::new(n, 64)?;
        if !initial.is_empty() {
            r.write_bytes(0, initial)?;
        }
        let a = r.addr();
        self.bufs.push(r);
        Ok(a)
    }

    fn load_program(&mut self, _index: usize, p: &ProgramRef<'_>, _arch: Arch, object: &[u8]) -> Result<usize> {
        let image = Image::load(object, p.symbol)?;
        self.kernels.push(Kernel { image, nargs: p.n_params(), core_id: p.core_id_arg.map(|s| s as usize) });
        Ok(self.kernels.len() - 1)
    }

    fn record_kernel(&mut self, program: &usize, l: &KernelLaunch<'_, '_>) -> Result<()> {
        let k = l.kernel;
        let n = l.args.len() + k.vals().len();
        if n > MAX_ARGS {
            return Err(Error::Unsupported { what: "kernel argument count (max 63)", value: n as u64 });
        }
        let arg_word = self.argv.len();
        self.argv.extend_from_slice(l.args);
        self.argv.extend(k.vals().map(|v| v.unwrap_or(0) as u64));
        self.steps.push(Step::Exec { program: *program as u64, arg_word, global: k.global_size, local: k.local_size });
        Ok(())
    }

    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.steps.push(Step::Copy { dst, src, bytes });
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        // every launch's arguments, in a region the wrapping pool never reuses
        let kernargs = Arc::new(HostRegion::new((self.argv.len() * 8).max(8), 64)?);
        for (i, a) in self.argv.iter().enumerate() {
            kernargs.write_bytes(i * 8, &a.to_le_bytes())?;
        }
        let buffers = self.bufs.iter().map(|b| (b.addr(), b.size() as u64)).collect();
        let exec = Arc::new(Kernels { kernels: core::mem::take(&mut self.kernels), buffers });
        let dev = InlineDevice::new("CPU", &SoftConfig::compact(), exec, crate::time::now_ns)?;
        dev.add_kernarg_region(kernargs.addr(), kernargs.clone());
        let base = kernargs.addr();
        self.queues = hcq_runner::build_queues(dev.engine(), &self.steps, |q, st| {
            match *st {
                Step::Exec { program, arg_word, global, local } => {
                    q.exec(program, base + 8 * arg_word as u64, global, local)?
                }
                Step::Copy { dst, src, bytes } => q.copy(dst, src, bytes)?,
            };
            Ok(())
        })
        .context("recording the launches")?;
        self.kernargs = Some(kernargs);
        self.dev = Some(dev);
        Ok(())
    }

    fn replay(&mut self) -> Result<()> {
        let dev = self.dev.as_ref().ok_or(Error::InvalidArgument { what: "board: replay before finish", value: 0 })?;
        // SAFETY: the queues were built in `finish` from the bundle's checked launches: every
        // exec names a kernel this backend loaded and an argument block in `kernargs`, whose
        // words are addresses of buffers in `bufs`; both live in `self` as long as the device,
        // and `run_until` below drives the device to the end of the call before returning.
        unsafe { hcq_runner::submit_queues(dev.engine(), &mut self.queues, &mut self.last)? };
        dev.run_until(self.last)
    }

    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        // every call ran to its end in `replay` (one core drives the device)
        let off = usize::try_from(offset).map_err(|_| Error::InvalidArgument { what: "read offset", value: offset })?;
        self.buf(buffer)?.read_bytes(off, out)
    }

    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        let off =
            usize::try_from(offset).map_err(|_| Error::InvalidArgument { what: "write offset", value: offset })?;
        self.buf(buffer)?.write_bytes(off, data)
    }
}

fn log_level(level: Option<&str>) {
    if let Some(l) = level {
        defmt::warn!("bundle objects are built for aarch64 level {=str}", l);
    } else {
        defmt::warn!("bundle objects have no aarch64 level (built for the exporting machine only)");
    }
}
