//! The CPU device as a backend of the core bundle runner ([`hcq_runner::Runner`]).
//!
//! [`CpuBackend`] does what the runner asks of a device, the CPU's way:
//! - [`prepare`](Backend::prepare): the objects are this host's, and the host has the features
//!   of the bundle's x86-64 level ([`check_arch_level`]; `native` or a missing level is refused
//!   unless [`CpuBackend::allow_unchecked_level`]);
//! - buffers: one [`Buffer`] of the device per base buffer (scratch-arena views stay views:
//!   `base + offset`), filled in chunks of at most 64 KiB;
//! - programs: each program's object loaded for the host ([`CpuDevice::load_kernel`]);
//! - launches: each run of consecutive kernel launches becomes one exec list of the device
//!   ([`CpuDevice::load_exec_list`]: kernels and arguments — buffer addresses, then the integer
//!   values, host-ABI 64-bit words — resolved and checked once), flushed at a copy and at
//!   `finish`, run by one exec packet; copies stay copy packets. The packets form one queue, or
//!   several when they would take more than a quarter of the command ring;
//! - [`replay`](Backend::replay): patch the timeline values, copy the words into the ring and,
//!   when the compute engine is free, run them on the calling thread
//!   ([`SoftDevice::run_inline`](hcq::soft::threaded::SoftDevice::run_inline)) — no encoding, no
//!   allocation, no hand-off to another thread.
//!
//! Lifetimes follow the core's rule: every buffer the launches touch carries the stamp of the
//! last submission that uses it ([`Buffer::mark_read`] / [`Buffer::mark_written`], from the
//! bundle's per-argument in/out flags), so reads and writes of inputs and outputs wait for
//! exactly the calls that use them and a dropped buffer's memory returns to the allocator only
//! once the device has passed its last use. The buffers are the backend's own (no handle leaves
//! it), so their stamps are brought up to date where something can look at them — before a host
//! read or write, and when the backend drops — not on every call: a call costs no atomic
//! operation per buffer. The exec lists (raw addresses) are unloaded on drop after the
//! backend's last submission retired.

use crate::device::{CpuDevice, ExecLaunch, MAX_ARGS};
use hcq::buffer::Buffer;
use hcq::device::{Device, DeviceLimits};
use hcq::dtype::DType;
use hcq::error::{Error, Result, ResultExt};
use hcq::queue::HwQueue;
use hcq::stamp::Stamp;
use hcq_bundle::Arch;
use hcq_bundle::hcqb::{Hcqb, KernelRef, ProgramRef};
use hcq_runner::{Backend, KernelLaunch};
use std::sync::Arc;
use std::vec::Vec;

/// The bundle architecture of this host's CPU, if bundles carry objects for it.
pub fn host_arch() -> Option<Arch> {
    Arch::host()
}

/// Check that this host can run objects built for `level` of `arch` (the bundle's
/// `arch_levels`): x86-64-v2/v3/v4 feature sets are checked with CPUID; `native` and unknown
/// levels cannot be checked and are refused unless `allow_unchecked`.
pub fn check_arch_level(arch: Arch, level: Option<&str>, allow_unchecked: bool) -> Result<()> {
    let unchecked = |why: &'static str| {
        if allow_unchecked {
            log::warn!("bundle objects for {}: {}; running anyway", arch.name(), why);
            Ok(())
        } else {
            Err(Error::Unsupported { what: why, value: 0 })
        }
    };
    match (arch, level) {
        (_, None) | (_, Some("native")) => {
            unchecked("objects were built for the exporting machine only (arch level native or missing)")
        }
        (Arch::Aarch64, Some("armv8-a")) => Ok(()),
        #[cfg(target_arch = "x86_64")]
        (Arch::X86_64, Some(l @ ("x86-64" | "x86-64-v2" | "x86-64-v3" | "x86-64-v4"))) => {
            use std::arch::is_x86_feature_detected as has;
            let v2 = has!("sse3")
                && has!("ssse3")
                && has!("sse4.1")
                && has!("sse4.2")
                && has!("popcnt")
                && has!("cmpxchg16b");
            let v3 = v2
                && has!("avx")
                && has!("avx2")
                && has!("bmi1")
                && has!("bmi2")
                && has!("fma")
                && has!("lzcnt")
                && has!("movbe")
                && has!("f16c");
            let v4 =
                v3 && has!("avx512f") && has!("avx512bw") && has!("avx512cd") && has!("avx512dq") && has!("avx512vl");
            let ok = match l {
                "x86-64" => true,
                "x86-64-v2" => v2,
                "x86-64-v3" => v3,
                _ => v4,
            };
            if ok {
                Ok(())
            } else {
                Err(Error::Unsupported { what: "this CPU lacks features the bundle's x86-64 level needs", value: 0 })
                    .with_context(|| std::format!("bundle objects need {l}"))
            }
        }
        _ => unchecked("unknown architecture level"),
    }
}

/// The host check both host-object backends (CPU, and `hcq_sim::cpu::SimBackend`) make in
/// `prepare`.
pub fn prepare_host(bundle: &Hcqb<'_>, arch: Arch, allow_unchecked_level: bool) -> Result<()> {
    if Some(arch) != Arch::host() {
        return Err(Error::Unsupported {
            what: "bundle architecture is not this host's",
            value: u64::from(arch.code()),
        });
    }
    check_arch_level(arch, bundle.arch_level(arch), allow_unchecked_level)
}

/// Bytes written per view when a buffer is filled at load time.
pub(crate) const FILL_CHUNK: usize = 64 << 10;

/// Write `initial` at the start of `buf` (`bytes` long) and zeros after it, through views of at
/// most [`FILL_CHUNK`] bytes: no host copy of the whole buffer, so a buffer that fits the device
/// never needs twice its size in host memory.
pub(crate) fn fill(buf: &Buffer, initial: &[u8], bytes: u64) -> Result<()> {
    static ZEROS: [u8; FILL_CHUNK] = [0; FILL_CHUNK];
    let mut off = 0u64;
    while off < bytes {
        let n = usize::try_from((bytes - off).min(FILL_CHUNK as u64)).unwrap_or(FILL_CHUNK);
        let rest = usize::try_from(off).ok().and_then(|o| initial.get(o..)).unwrap_or_default();
        let src = if rest.is_empty() { ZEROS.get(..n) } else { rest.get(..rest.len().min(n)) }.unwrap_or_default();
        if src.is_empty() {
            return Err(Error::InvalidArgument { what: "buffer fill made no progress", value: off });
        }
        buf.view(src.len() as u64, DType::U8, off)?.copy_in(src)?;
        off += src.len() as u64;
    }
    Ok(())
}

/// How a call uses a base buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    Unused,
    Read,
    Written,
}

/// The base buffers of a loaded bundle, with how a call uses each. No handle to them leaves
/// the backend: their stamps are brought up to date ([`Buffers::mark`]) before every host
/// access and before they drop.
pub struct Buffers {
    dev: Arc<dyn Device>,
    bufs: Vec<Buffer>,
    addrs: Vec<u64>,
    uses: Vec<Use>,
    /// `(buffer, written)` for every buffer a call uses: what [`Buffers::mark`] stamps.
    marks: Vec<(usize, bool)>,
}

impl Buffers {
    /// No buffers yet, on `dev`.
    pub fn new(dev: Arc<dyn Device>) -> Self {
        Self { dev, bufs: Vec::new(), addrs: Vec::new(), uses: Vec::new(), marks: Vec::new() }
    }

    /// Allocate base buffer `index` of `nbytes`, filled with `initial` then zeros.
    pub fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        if index != self.bufs.len() {
            return Err(Error::Mismatch {
                what: "runner buffer index (buffers are allocated in order)",
                expected: self.bufs.len() as u64,
                found: index as u64,
            });
        }
        let buf = Buffer::new(self.dev.clone(), nbytes, DType::U8, Default::default())?;
        fill(&buf, initial, nbytes)?;
        let a = buf.device_addr()?;
        self.bufs.push(buf);
        self.addrs.push(a);
        self.uses.push(Use::Unused);
        Ok(a)
    }

    fn note(&mut self, buffer: usize, u: Use) {
        if let Some(cur) = self.uses.get_mut(buffer)
            && (*cur == Use::Unused || u == Use::Written)
        {
            *cur = u;
        }
    }

    /// Record the buffers kernel launch `k` reads and writes (an argument flagged neither way
    /// counts as written).
    pub fn note_kernel(&mut self, k: &KernelRef<'_>) {
        let outs: Vec<u32> = k.outs().collect();
        let ins: Vec<u32> = k.ins().collect();
        for (j, a) in k.args().enumerate() {
            let j = j as u32;
            let u = if outs.contains(&j) || !ins.contains(&j) { Use::Written } else { Use::Read };
            self.note(a.buffer as usize, u);
        }
    }

    /// The buffer holding device address range `[addr, addr + len)`.
    fn find(&self, addr: u64, len: u64) -> Result<usize> {
        self.addrs
            .iter()
            .zip(&self.bufs)
            .position(|(&a, b)| addr >= a && addr.checked_add(len).is_some_and(|end| end <= a + b.nbytes()))
            .ok_or(Error::OutOfBounds { what: "copy range inside a base buffer", offset: addr, len, limit: 0 })
    }

    /// Record a copy's buffers.
    pub fn note_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        let (d, s) = (self.find(dst, bytes)?, self.find(src, bytes)?);
        self.note(s, Use::Read);
        self.note(d, Use::Written);
        Ok(())
    }

    /// Close the record: the list of buffers to mark per call.
    pub fn finish(&mut self) {
        self.marks = self
            .uses
            .iter()
            .enumerate()
            .filter(|(_, u)| **u != Use::Unused)
            .map(|(i, u)| (i, *u == Use::Written))
            .collect();
    }

    /// Mark every used buffer with `stamp`, the backend's last submission (which uses every
    /// one of them). Allocates nothing.
    pub fn mark(&self, stamp: Stamp) {
        for &(i, written) in &self.marks {
            if let Some(b) = self.bufs.get(i) {
                if written {
                    b.mark_written(stamp);
                } else {
                    b.mark_read(stamp);
                }
            }
        }
    }

    /// Device addresses of the buffers, in index order.
    pub fn addrs(&self) -> &[u64] {
        &self.addrs
    }

    fn get(&self, buffer: usize) -> Result<&Buffer> {
        self.bufs.get(buffer).ok_or(Error::OutOfBounds {
            what: "runner buffer index",
            offset: buffer as u64,
            len: 1,
            limit: self.bufs.len() as u64,
        })
    }

    /// Copy bytes of `buffer` at `offset` out, once the device passed its last writer (`last`:
    /// the backend's last submission).
    pub fn read(&self, last: Stamp, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        self.mark(last);
        self.get(buffer)?.view(out.len() as u64, DType::U8, offset)?.copy_out(out)
    }

    /// Copy `data` into `buffer` at `offset`, once the device passed its last user.
    pub fn write(&self, last: Stamp, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        self.mark(last);
        self.get(buffer)?.view(data.len() as u64, DType::U8, offset)?.copy_in(data)
    }
}

/// One step of a CPU call.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A run of kernel launches: an exec list of the device.
    List(u64),
    /// A buffer-to-buffer copy.
    Copy { dst: u64, src: u64, bytes: u64 },
}

/// A kernel launch as recorded: `(kernel, arguments, calls)` and how many of the arguments
/// (the first ones) are buffer addresses.
#[derive(Clone, Debug)]
struct Recorded {
    kernel: u64,
    args: Vec<u64>,
    calls: u32,
    nbufs: usize,
}

/// The CPU device as a runner backend (see the module docs).
pub struct CpuBackend {
    dev: Arc<CpuDevice>,
    /// This host's architecture, the only one whose objects run here.
    host: Option<Arch>,
    allow_unchecked_level: bool,
    bufs: Buffers,
    /// Kernel launches not yet in an exec list.
    pending: Vec<Recorded>,
    steps: Vec<Step>,
    /// The exec lists this backend loaded (unloaded on drop).
    lists: Vec<u64>,
    /// The launches of each exec list (`lists[i]`), kept for [`CpuBackend::rebind`].
    recorded: Vec<Vec<Recorded>>,
    queues: Vec<HwQueue>,
    /// Stamp of the last submission.
    last: Stamp,
}

impl core::fmt::Debug for CpuBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CpuBackend").field("dev", &self.dev).field("lists", &self.lists.len()).finish_non_exhaustive()
    }
}

impl CpuBackend {
    /// A backend on `dev`.
    pub fn new(dev: Arc<CpuDevice>) -> Self {
        let ddev: Arc<dyn Device> = dev.clone();
        Self {
            dev,
            host: Arch::host(),
            allow_unchecked_level: false,
            bufs: Buffers::new(ddev),
            pending: Vec::new(),
            steps: Vec::new(),
            lists: Vec::new(),
            recorded: Vec::new(),
            queues: Vec::new(),
            last: Stamp::ZERO,
        }
    }

    /// Run objects whose CPU level cannot be verified (`native`, or none stated), with a
    /// warning (the CLI's `--allow-native`).
    pub fn allow_unchecked_level(mut self, allow: bool) -> Self {
        self.allow_unchecked_level = allow;
        self
    }

    /// The device.
    pub fn device(&self) -> &Arc<CpuDevice> {
        &self.dev
    }

    /// Device addresses of the base buffers.
    pub fn buffer_addrs(&self) -> &[u64] {
        self.bufs.addrs()
    }

    /// Number of submissions one call makes (1 unless the launch list is longer than a quarter
    /// of the command ring).
    pub fn submissions_per_call(&self) -> usize {
        self.queues.len()
    }

    /// Submit one forward pass without waiting; returns the timeline value that completes it.
    pub fn submit(&mut self) -> Result<u64> {
        // The queues hold exec lists and copies recorded from the bundle's launches, whose views
        // `Hcqb::parse` checked against the buffers; the backend owns those buffers and outlives
        // its submissions (its `Drop` waits for `last`).
        // SAFETY: every command names this backend's live buffers inside their bounds.
        unsafe { hcq_runner::submit_queues(self.dev.soft().engine(), &mut self.queues, &mut self.last) }
    }

    /// One forward pass with every kernel called directly on this thread, one after another
    /// (`core_id` tids in order), without queues, timeline or command processor: the floor
    /// that a call is measured against (the sum of the kernels' own time). Waits for this
    /// backend's submissions first.
    pub fn call_direct(&mut self) -> Result<()> {
        self.dev.soft().engine().wait(self.last)?;
        for st in &self.steps {
            match *st {
                // Only this backend submits work on its buffers, and `&mut self` keeps new calls out.
                // SAFETY: the list's arguments are this backend's live buffers, idle (waited above).
                Step::List(h) => unsafe { self.dev.run_exec_list_here(h)? },
                Step::Copy { dst, src, bytes } => {
                    // Both ranges were checked against the buffers when recorded (`Buffers::note_copy`).
                    // SAFETY: both ranges lie inside this backend's live buffers; `copy` allows overlap.
                    unsafe { core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes as usize) }
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // Views were checked against their buffers by `Hcqb::parse`; the backend owns the buffers
        // and unloads the list in its `Drop` after its last submission retired, before they drop.
        // SAFETY: every pointer argument is a base buffer of this backend plus a validated view offset.
        let h = unsafe { load_list(&self.dev, &self.pending)? };
        self.lists.push(h);
        self.steps.push(Step::List(h));
        self.recorded.push(core::mem::take(&mut self.pending));
        Ok(())
    }

    /// Make the calls use the memory at `to` in place of the device memory `[from, from + len)`
    /// (a model input bound to the caller's memory, zero-copy): every kernel's buffer argument
    /// inside that range moves by `to - from`. Waits for this backend's calls in flight first
    /// (none of them uses the new memory, and the old memory is unused from here on); the exec
    /// lists and queues are rebuilt, so this allocates and is meant for binding, not for every
    /// call. `rebind(to, len, from)` undoes it. Refused, with nothing changed, when a copy
    /// launch touches the range (the copy engine copies device memory only).
    ///
    /// # Safety
    /// `[to, to + len)` must be valid for every read and write the kernels make through the
    /// moved arguments, each time a call runs, until the backend is rebound away from it or
    /// dropped (both wait for the calls that use it), and no one else may write it while a call
    /// runs. The caller makes sure that no kernel argument starts inside the range and reaches
    /// past its end, or starts before it and reaches into it (views of the bundle are either
    /// inside the bound view or disjoint from it).
    pub unsafe fn rebind(&mut self, from: u64, len: u64, to: u64) -> Result<()> {
        let inside = |a: u64| a >= from && a - from < len;
        let touches = |a: u64, n: u64| a < from.saturating_add(len) && from < a.saturating_add(n);
        if self
            .steps
            .iter()
            .any(|s| matches!(*s, Step::Copy { dst, src, bytes } if touches(dst, bytes) || touches(src, bytes)))
        {
            return Err(Error::Unsupported { what: "a copy launch touches the memory to rebind", value: from });
        }
        self.dev.soft().engine().wait(self.last)?;
        let moved: Vec<Vec<Recorded>> = self
            .recorded
            .iter()
            .map(|list| {
                list.iter()
                    .map(|r| {
                        let mut r = r.clone();
                        for a in r.args.iter_mut().take(r.nbufs) {
                            if inside(*a) {
                                *a = to + (*a - from);
                            }
                        }
                        r
                    })
                    .collect()
            })
            .collect();
        let mut new_lists = Vec::with_capacity(moved.len());
        for list in &moved {
            // The caller's contract covers the moved arguments; the others are unchanged.
            // SAFETY: every pointer argument is a live buffer of this backend or the caller's memory.
            match unsafe { load_list(&self.dev, list) } {
                Ok(h) => new_lists.push(h),
                Err(e) => {
                    for h in new_lists {
                        let _ = self.dev.unload_exec_list(h);
                    }
                    return Err(e);
                }
            }
        }
        let mut steps = self.steps.clone();
        let mut k = 0;
        for st in &mut steps {
            if let Step::List(h) = st {
                *h = new_lists[k];
                k += 1;
            }
        }
        let queues = match hcq_runner::build_queues(self.dev.soft().engine(), &steps, push_step) {
            Ok(q) => q,
            Err(e) => {
                for h in new_lists {
                    let _ = self.dev.unload_exec_list(h);
                }
                return Err(e);
            }
        };
        // waited above, and `&mut self` keeps new calls out: the old lists are idle
        for h in core::mem::replace(&mut self.lists, new_lists) {
            let _ = self.dev.unload_exec_list(h);
        }
        self.recorded = moved;
        self.steps = steps;
        self.queues = queues;
        Ok(())
    }
}

impl Backend for CpuBackend {
    type Program = u64;

    fn archs(&self) -> &[Arch] {
        self.host.as_slice()
    }

    fn limits(&self) -> DeviceLimits {
        self.dev.limits()
    }

    fn prepare(&mut self, bundle: &Hcqb<'_>, arch: Arch) -> Result<()> {
        prepare_host(bundle, arch, self.allow_unchecked_level)
    }

    fn alloc(&mut self, index: usize, nbytes: u64, initial: &[u8]) -> Result<u64> {
        self.bufs.alloc(index, nbytes, initial)
    }

    fn load_program(&mut self, _index: usize, p: &ProgramRef<'_>, _arch: Arch, object: &[u8]) -> Result<u64> {
        // The runner calls the kernel only with the launches its bundle records, whose views
        // `Hcqb::parse` checked against the buffers (the bundle's objects are trusted as the
        // kernels it describes, as `prepare` checked their architecture and level).
        // SAFETY: every call passes the kernel views of this backend's buffers, as recorded.
        unsafe { self.dev.load_kernel(object, p.symbol, p.n_params(), p.core_id_arg.map(|s| s as usize)) }
    }

    fn record_kernel(&mut self, program: &u64, l: &KernelLaunch<'_, '_>) -> Result<()> {
        let args = launch_words(l)?;
        self.pending.push(Recorded { kernel: *program, args, calls: l.kernel.global_size[0], nbufs: l.args.len() });
        self.bufs.note_kernel(l.kernel);
        Ok(())
    }

    fn record_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.bufs.note_copy(dst, src, bytes)?;
        self.flush()?;
        self.steps.push(Step::Copy { dst, src, bytes });
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.flush().context("last launches")?;
        self.bufs.finish();
        self.queues = hcq_runner::build_queues(self.dev.soft().engine(), &self.steps, push_step)?;
        Ok(())
    }

    /// One forward pass: submit and wait. When the device's compute engine is free, the
    /// commands run on the calling thread: each kernel is an indirect call from an exec list,
    /// `core_id` kernels fan out over the device's workers and this thread. Allocates nothing.
    #[inline]
    fn replay(&mut self) -> Result<()> {
        let queues = &mut self.queues;
        let mut last = self.last;
        let r = self.dev.soft().run_inline(0, |s| {
            for q in queues.iter_mut() {
                // SAFETY: as in `CpuBackend::submit`: the queues hold exec lists and copies
                // recorded from the bundle's checked launches over this backend's live buffers.
                last = unsafe { s.submit(0, q)? };
            }
            Ok(last)
        });
        self.last = last;
        r
    }

    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        self.bufs.read(self.last, buffer, offset, out)
    }

    fn write(&self, buffer: usize, offset: u64, data: &[u8]) -> Result<()> {
        self.bufs.write(self.last, buffer, offset, data)
    }
}

impl Drop for CpuBackend {
    fn drop(&mut self) {
        // the exec lists hold raw addresses: unload them only once the last call that runs
        // them retired (the buffers themselves are freed past their stamps by the allocator);
        // a device that never gets there keeps running into the unloaded handle, which is a
        // fault of that run, never a use of freed memory
        if let Err(e) = self.dev.soft().engine().wait(self.last) {
            log::warn!("CPU: waiting for a model's last call before unloading it: {e}");
        }
        for h in self.lists.drain(..) {
            let _ = self.dev.unload_exec_list(h);
        }
        // the buffers drop next: their memory is freed once the device passed this stamp
        self.bufs.mark(self.last);
    }
}

/// Load `launches` as an exec list of `dev`.
///
/// # Safety
/// As [`CpuDevice::load_exec_list`]: every pointer argument stays valid while the list exists.
unsafe fn load_list(dev: &CpuDevice, launches: &[Recorded]) -> Result<u64> {
    let l: Vec<ExecLaunch<'_>> =
        launches.iter().map(|r| ExecLaunch { kernel: r.kernel, args: &r.args, calls: r.calls }).collect();
    // SAFETY: the caller's contract.
    unsafe { dev.load_exec_list(&l) }
}

/// Add one step of a call to the queue being built.
fn push_step(q: &mut HwQueue, st: &Step) -> Result<()> {
    match *st {
        Step::List(h) => q.exec(h, 0, [1, 1, 1], [1, 1, 1])?,
        Step::Copy { dst, src, bytes } => q.copy(dst, src, bytes)?,
    };
    Ok(())
}

/// A kernel launch's argument words in the host ABI: the buffer addresses, then the integer
/// values (0 at the `core_id` slot, which the device fills per call).
pub fn launch_words(l: &KernelLaunch<'_, '_>) -> Result<Vec<u64>> {
    let k = l.kernel;
    let n = l.args.len() + k.vals().len();
    if n > MAX_ARGS {
        return Err(Error::Unsupported { what: "kernel argument count (max 63)", value: n as u64 });
    }
    let mut args = Vec::with_capacity(n);
    args.extend_from_slice(l.args);
    args.extend(k.vals().map(|v| v.unwrap_or(0) as u64));
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_writes_the_initial_bytes_then_zeros_over_stale_contents_across_chunks() {
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let ddev: Arc<dyn Device> = dev.clone();
        let bytes = 3 * FILL_CHUNK as u64 + 48;
        let buf = Buffer::new(ddev, bytes, DType::U8, Default::default()).unwrap();
        buf.copy_in(&std::vec![0xaa; bytes as usize]).unwrap(); // stale contents
        let initial: Vec<u8> = (0..FILL_CHUNK + 100).map(|i| (i % 251) as u8 + 1).collect();
        fill(&buf, &initial, bytes).unwrap();
        let mut got = std::vec![0u8; bytes as usize];
        buf.copy_out(&mut got).unwrap();
        assert_eq!(&got[..initial.len()], &initial[..]);
        assert!(got[initial.len()..].iter().all(|&b| b == 0), "zeros after the initial bytes");
    }
}
