//! The `CPU` device: tinygrad's clang-built CPU kernels run through the HCQ engine.
//!
//! The device is a soft device ([`SoftDevice`]): queues are encoded in the reference encoding,
//! submitted to a command ring, and a command processor executes them — calling the loaded
//! kernels, copying memory, writing signals and timestamps — and signals the timeline. The
//! command processor is a thread of the device, or, for a synchronous call
//! ([`Program::call`] with `wait`, [`Runner::call`](hcq_runner::Runner::call) of a [`crate::model::CpuRunner`]), the calling
//! thread itself ([`SoftDevice::run_inline`]). An exec list ([`CpuDevice::load_exec_list`]) runs
//! a prebuilt sequence of launches from one exec packet.
//! A launch whose program has a `core_id` argument runs once per core id (`global[0]` calls)
//! in parallel on a pool of worker threads plus the command processor itself (tinygrad runs
//! them one after another); the command processor never waits for a worker to be scheduled
//! (it takes tids too), and sleeps rather than spins while a worker finishes its last call.
//!
//! Kernel calling convention: every argument is passed as a 64-bit integer in the C ABI of
//! the host (buffer addresses first, then integer values), as tinygrad does. That is exact on
//! x86-64 SysV and Linux AArch64, where each integer argument takes a register or an 8-byte
//! stack slot and an `int` parameter reads the low half; it is not the Apple arm64 ABI (which
//! packs stack arguments by size), so this backend refuses to build there. Up to 63 arguments.
//!
//! Buffers come from [`HostAllocator`] (page-aligned, so every bundle view keeps the 16-byte
//! alignment the kernels' vector loads need). A copy command may only touch memory this device
//! allocated.

use crate::elf::Machine;
use crate::exec::{LoadedObject, default_resolver};
use crate::fanout::{FanOut, Job};
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, HostAllocator, LruAllocator};
use hcq::device::{Device, DeviceProperties};
use hcq::engine::{Engine, Submitter};
use hcq::error::{Error, Result, ResultExt};

use hcq::profile::{Event, EventKind};
use hcq::program::{LaunchReport, ParamKind, Program, ProgramImage};
use hcq::soft::threaded::{Executor, Regs, SoftConfig, SoftContext, SoftDevice, soft_clock_ns};
use hcq::stamp::Stamp;
use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::sync::{Arc, RwLock, Weak};
use std::time::Instant;
use std::vec::Vec;

/// Most arguments a kernel may take (tinygrad's cap).
pub const MAX_ARGS: usize = 63;

macro_rules! call_arity {
    ($f:ident, $a:ident, $($n:literal: [$($i:literal)*]),* $(,)?) => {
        match $a.len() {
            $($n => {
                // SAFETY: `call_kernel`'s contract: `$f` is an `extern "C"` fn of exactly this
                // many integer arguments, which are what it expects (fn ptr and ptr are one size).
                unsafe {
                    let g = core::mem::transmute::<*const (), unsafe extern "C" fn($(call_arity!(@u64 $i)),*)>($f);
                    g($($a[$i]),*)
                }
            })*
            n => return Err(Error::Unsupported { what: "kernel argument count (max 63)", value: n as u64 }),
        }
    };
    (@u64 $i:literal) => { u64 };
}

/// Call `f` with `args`, each passed as a 64-bit integer.
///
/// # Safety
/// `f` must be the entry of a live kernel taking exactly `args.len()` integer or pointer
/// arguments (see the module docs for the ABI), and every pointer argument must point at
/// memory the kernel may read and write for the extent it uses.
pub unsafe fn call_kernel(f: *const (), args: &[u64]) -> Result<()> {
    call_arity!(f, args,
        0: [],
        1: [0],
        2: [0 1],
        3: [0 1 2],
        4: [0 1 2 3],
        5: [0 1 2 3 4],
        6: [0 1 2 3 4 5],
        7: [0 1 2 3 4 5 6],
        8: [0 1 2 3 4 5 6 7],
        9: [0 1 2 3 4 5 6 7 8],
        10: [0 1 2 3 4 5 6 7 8 9],
        11: [0 1 2 3 4 5 6 7 8 9 10],
        12: [0 1 2 3 4 5 6 7 8 9 10 11],
        13: [0 1 2 3 4 5 6 7 8 9 10 11 12],
        14: [0 1 2 3 4 5 6 7 8 9 10 11 12 13],
        15: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14],
        16: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15],
        17: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16],
        18: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17],
        19: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18],
        20: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19],
        21: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20],
        22: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21],
        23: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22],
        24: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23],
        25: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24],
        26: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25],
        27: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26],
        28: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27],
        29: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28],
        30: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29],
        31: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30],
        32: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31],
        33: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32],
        34: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33],
        35: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34],
        36: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35],
        37: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36],
        38: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37],
        39: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38],
        40: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39],
        41: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40],
        42: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41],
        43: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42],
        44: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43],
        45: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44],
        46: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45],
        47: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46],
        48: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47],
        49: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48],
        50: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49],
        51: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50],
        52: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51],
        53: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52],
        54: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53],
        55: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54],
        56: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55],
        57: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56],
        58: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57],
        59: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58],
        60: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59],
        61: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60],
        62: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61],
        63: [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62]    );
    Ok(())
}

/// A kernel loaded on the CPU device.
pub struct CpuKernel {
    obj: LoadedObject,
    name: String,
    nargs: usize,
    core_id: Option<usize>,
    profile_name: u32,
}

impl CpuKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of 64-bit arguments.
    pub fn nargs(&self) -> usize {
        self.nargs
    }
    /// The argument slot that takes the core id, if any.
    pub fn core_id_arg(&self) -> Option<usize> {
        self.core_id
    }
}

/// Tag of exec-list program handles (kernel handles are table indices below it).
const LIST_TAG: u64 = 1 << 48;

/// One launch of an exec list, as [`CpuDevice::load_exec_list`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct ExecLaunch<'a> {
    /// The kernel's handle ([`CpuDevice::load_kernel`]).
    pub kernel: u64,
    /// Its arguments, one 64-bit integer each (buffer addresses, then values); the `core_id`
    /// slot's value is replaced by the tid.
    pub args: &'a [u64],
    /// `global[0]`: for a `core_id` kernel the number of calls (tids); ignored otherwise.
    pub calls: u32,
}

/// A launch of an exec list, validated and resolved when the list was loaded.
struct ListEntry {
    f: usize,
    nargs: usize,
    args_at: usize,
    core_id: Option<usize>,
    calls: u64,
    profile_name: u32,
}

/// A prebuilt sequence of kernel launches that one exec command runs in order.
struct ExecList {
    entries: Vec<ListEntry>,
    args: Vec<u64>,
    /// Keeps the kernels' code mapped while the list exists.
    _kernels: Vec<Arc<CpuKernel>>,
}

/// What the CPU device's command processor does for exec and copy commands.
struct CpuExec {
    kernels: RwLock<Vec<Arc<CpuKernel>>>,
    lists: RwLock<Vec<Option<ExecList>>>,
    memory: Arc<RwLock<BTreeMap<u64, u64>>>,
    fan: FanOut,
}

fn in_memory(m: &BTreeMap<u64, u64>, addr: u64, len: u64) -> Result<()> {
    let ok = m
        .range(..=addr)
        .next_back()
        .is_some_and(|(&base, &size)| addr.checked_add(len).is_some_and(|end| end <= base.saturating_add(size)));
    if ok {
        Ok(())
    } else {
        Err(Error::OutOfBounds { what: "CPU copy: not device memory", offset: addr, len, limit: 0 })
    }
}

impl CpuExec {
    /// Run every launch of `list` in order.
    fn run_list(&self, ctx: &SoftContext, list: &ExecList) -> Result<()> {
        let prof = engine_of(ctx)?.profiler();
        let on = prof.is_enabled();
        for e in &list.entries {
            let args = list.args.get(e.args_at..e.args_at + e.nargs).ok_or_else(|| Error::OutOfBounds {
                what: "CPU exec list arguments",
                offset: e.args_at as u64,
                len: e.nargs as u64,
                limit: list.args.len() as u64,
            })?;
            let st = if on { soft_clock_ns() } else { 0 };
            match e.core_id {
                Some(slot) => {
                    let mut job = Job { f: e.f, args: [0; MAX_ARGS], nargs: e.nargs, slot, n: e.calls };
                    job.args[..e.nargs].copy_from_slice(args);
                    self.fan.run(job);
                }
                // SAFETY: `load_exec_list`'s contract: a kernel of this device taking `nargs`
                // arguments (kept loaded by the list), with arguments valid while the list runs.
                None => unsafe { call_kernel(e.f as *const (), args)? },
            }
            if on {
                prof.record(Event {
                    kind: EventKind::Program,
                    name: e.profile_name,
                    start_ns: st,
                    end_ns: soft_clock_ns(),
                    arg: e.calls,
                });
            }
        }
        Ok(())
    }
}

impl Executor for CpuExec {
    fn exec(&self, ctx: &SoftContext, program: u64, kernargs: u64, global: [u32; 3], _local: [u32; 3]) -> Result<()> {
        if program & LIST_TAG != 0 {
            // the read lock is held while the list runs: unloading one waits for it
            let lists = self.lists.read().unwrap_or_else(|p| p.into_inner());
            let list = usize::try_from(program & !LIST_TAG)
                .ok()
                .and_then(|i| lists.get(i))
                .and_then(Option::as_ref)
                .ok_or_else(|| Error::InvalidArgument { what: "CPU exec: unknown exec-list handle", value: program })?;
            return self.run_list(ctx, list);
        }
        let ks = self.kernels.read().unwrap_or_else(|p| p.into_inner());
        let k = ks
            .get(usize::try_from(program).unwrap_or(usize::MAX))
            .ok_or_else(|| Error::InvalidArgument { what: "CPU exec: unknown program handle", value: program })?;
        let mut args = [0u64; MAX_ARGS];
        let words = &mut args[..k.nargs];
        ctx.read_kernargs(kernargs, zerocopy::IntoBytes::as_mut_bytes(words))?;
        for a in words.iter_mut() {
            *a = u64::from_le(*a);
        }
        let prof = engine_of(ctx)?.profiler();
        let st = if prof.is_enabled() { soft_clock_ns() } else { 0 };
        match k.core_id {
            Some(slot) => {
                let job = Job { f: k.obj.entry() as usize, args, nargs: k.nargs, slot, n: u64::from(global[0]) };
                self.fan.run(job);
            }
            // SAFETY: `k` was loaded by this device with `nargs` arguments; the argument block
            // was built by the submitter from buffers of this device (see `CpuDevice` docs).
            None => unsafe { call_kernel(k.obj.entry(), &args[..k.nargs])? },
        }
        if prof.is_enabled() {
            prof.record(Event {
                kind: EventKind::Program,
                name: k.profile_name,
                start_ns: st,
                end_ns: soft_clock_ns(),
                arg: u64::from(global[0]),
            });
        }
        Ok(())
    }

    fn copy(&self, ctx: &SoftContext, dst: u64, src: u64, bytes: u64) -> Result<()> {
        // the read lock is held across the copy: the allocator removes a range (write lock)
        // before it frees it, so neither range can be freed while it is copied
        let m = self.memory.read().unwrap_or_else(|p| p.into_inner());
        in_memory(&m, src, bytes)?;
        in_memory(&m, dst, bytes)?;
        let st = soft_clock_ns();
        // SAFETY: both ranges lie inside live allocations (checked above, and kept alive by the
        // lock held until the copy is done); `copy` allows overlap.
        unsafe { core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes as usize) };
        drop(m);
        let prof = engine_of(ctx)?.profiler();
        if prof.is_enabled() {
            let name = prof.intern("copy");
            prof.record(Event { kind: EventKind::Copy, name, start_ns: st, end_ns: soft_clock_ns(), arg: bytes });
        }
        Ok(())
    }
}

/// The CPU device's allocator: page-aligned host memory whose ranges the copy engine checks;
/// allocations and frees are profile events.
struct TrackedHost {
    host: HostAllocator,
    memory: Arc<RwLock<BTreeMap<u64, u64>>>,
    hcq: std::sync::OnceLock<Weak<Engine>>,
}

impl TrackedHost {
    fn record(&self, kind: EventKind, bytes: u64) {
        if let Some(hcq) = self.hcq.get().and_then(Weak::upgrade) {
            let p = hcq.profiler();
            if p.is_enabled() {
                let name = p.intern(if kind == EventKind::Alloc { "alloc" } else { "free" });
                let t = soft_clock_ns();
                p.record(Event { kind, name, start_ns: t, end_ns: t, arg: bytes });
            }
        }
    }
}

impl Allocator for TrackedHost {
    fn alloc(&self, size: u64, spec: &BufferSpec) -> Result<DeviceMemory> {
        let m = self.host.alloc(size, spec)?;
        self.memory.write().unwrap_or_else(|p| p.into_inner()).insert(m.addr(), m.size());
        self.record(EventKind::Alloc, size);
        Ok(m)
    }
    fn free(&self, mem: DeviceMemory, spec: &BufferSpec) {
        self.memory.write().unwrap_or_else(|p| p.into_inner()).remove(&mem.addr());
        self.record(EventKind::Free, mem.size());
        self.host.free(mem, spec)
    }
}

/// The CPU device.
pub struct CpuDevice {
    soft: SoftDevice,
    exec: Arc<CpuExec>,
    alloc: LruAllocator,
    name: String,
    me: Weak<CpuDevice>,
}

impl core::fmt::Debug for CpuDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CpuDevice").field("name", &self.name).finish()
    }
}

/// The engine state of the CPU device's soft device (a threaded one, whose executor context
/// carries it).
#[inline]
fn engine_of(ctx: &SoftContext) -> Result<&hcq::engine::Engine> {
    ctx.engine()
        .ok_or(Error::InvalidArgument { what: "CPU executor outside the CPU device's threaded soft device", value: 0 })
}

/// Check a kernel signature the host ABI can call: at most [`MAX_ARGS`] 64-bit arguments, the
/// `core_id` slot (if any) one of them.
pub fn check_signature(nargs: usize, core_id: Option<usize>) -> Result<()> {
    if nargs > MAX_ARGS {
        return Err(Error::Unsupported { what: "kernel argument count (max 63)", value: nargs as u64 });
    }
    match core_id {
        Some(s) if s >= nargs => {
            Err(Error::OutOfBounds { what: "core_id argument slot", offset: s as u64, len: 1, limit: nargs as u64 })
        }
        _ => Ok(()),
    }
}

/// Number of hardware threads (at least 1).
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl CpuDevice {
    /// Open a CPU device called `name` with `cores` threads for `core_id` launches (the
    /// command processor plus `cores - 1` workers).
    pub fn new(name: &str, cores: usize) -> Result<Arc<Self>> {
        let memory = Arc::new(RwLock::new(BTreeMap::new()));
        let exec = Arc::new(CpuExec {
            kernels: RwLock::new(Vec::new()),
            lists: RwLock::new(Vec::new()),
            memory: memory.clone(),
            fan: FanOut::new(cores.max(1) - 1)?,
        });
        let cfg = SoftConfig { engines: std::vec!["compute", "copy"], ..SoftConfig::default() };
        let soft = SoftDevice::new(name, &cfg, Arc::new(Regs::new(4)), exec.clone())?;
        let hcq = std::sync::OnceLock::new();
        let _ = hcq.set(Arc::downgrade(soft.hcq_arc()));
        let alloc =
            LruAllocator::new(name, std::boxed::Box::new(TrackedHost { host: HostAllocator::new(), memory, hcq }));
        // buffer memory returns for reuse only once the device has passed its last use
        alloc.attach_completion(soft.hcq_arc().clone());
        Ok(Arc::new_cyclic(|me| CpuDevice { soft, exec, alloc, name: name.to_string(), me: me.clone() }))
    }

    /// The soft device underneath (engine state, kernarg regions).
    pub fn soft(&self) -> &SoftDevice {
        &self.soft
    }

    /// Load an ELF relocatable object for this host and make `symbol` a kernel taking `nargs`
    /// 64-bit arguments, `core_id` naming the slot that takes the core id. Returns the program
    /// handle exec commands use.
    ///
    /// # Safety
    /// `object` is native code that runs on this process's threads with nothing checked: the
    /// caller promises that `symbol` is a function of the CPU kernel ABI (`nargs` 64-bit
    /// arguments, the core id in slot `core_id`) that, called with the arguments of any exec
    /// the caller submits, accesses only the memory those arguments name (each exec's
    /// contract is then [`hcq::engine::Submitter::submit`]'s), and does nothing else that is
    /// undefined behaviour. (The safe way to load and call a kernel is
    /// [`CpuDevice::load_program`] and [`hcq::program::Program::call`], which check
    /// each buffer against the signature.)
    ///
    /// Loading machine code takes `unsafe`:
    ///
    /// ```compile_fail,E0133
    /// fn repro(dev: &hcq_cpu::device::CpuDevice, object: &[u8]) -> hcq::Result<u64> {
    ///     dev.load_kernel(object, "kernel", 1, None)
    /// }
    /// ```
    ///
    /// ```
    /// fn load(dev: &hcq_cpu::device::CpuDevice, object: &[u8]) -> hcq::Result<u64> {
    ///     // SAFETY: (the caller's promise about `object`, as above)
    ///     unsafe { dev.load_kernel(object, "kernel", 1, None) }
    /// }
    /// ```
    pub unsafe fn load_kernel(&self, object: &[u8], symbol: &str, nargs: usize, core_id: Option<usize>) -> Result<u64> {
        check_signature(nargs, core_id)?;
        let obj = LoadedObject::load(object, Machine::host(), symbol, &default_resolver)
            .with_context(|| std::format!("loading kernel {symbol}"))?;
        let profile_name = self.soft.engine().profiler().intern(symbol);
        let k = Arc::new(CpuKernel { obj, name: symbol.to_string(), nargs, core_id, profile_name });
        let mut ks = self.exec.kernels.write().unwrap_or_else(|p| p.into_inner());
        ks.push(k);
        Ok((ks.len() - 1) as u64)
    }

    /// Build an exec list: `launches` run in order, on the device's command processor, by one
    /// exec command whose program is the returned handle (kernel arguments and grid of the
    /// command are ignored; a `core_id` launch fans out as usual). Everything is checked here,
    /// once: the kernels exist, each launch has exactly its kernel's argument count, a
    /// `core_id` launch makes at least one call. Running the list then costs an indirect call
    /// per kernel, with no argument block to read.
    ///
    /// # Safety
    /// Every argument a kernel uses as a pointer must point at memory that stays valid for
    /// every access the kernel makes, each time the list runs, until the list is unloaded with
    /// [`CpuDevice::unload_exec_list`] (after the device finished its last run).
    pub unsafe fn load_exec_list(&self, launches: &[ExecLaunch<'_>]) -> Result<u64> {
        let ks = self.exec.kernels.read().unwrap_or_else(|p| p.into_inner());
        let mut list = ExecList {
            entries: Vec::with_capacity(launches.len()),
            args: Vec::new(),
            _kernels: Vec::with_capacity(launches.len()),
        };
        for (i, l) in launches.iter().enumerate() {
            let k = usize::try_from(l.kernel)
                .ok()
                .and_then(|h| ks.get(h))
                .ok_or(Error::InvalidArgument { what: "exec list: unknown kernel handle", value: l.kernel })
                .with_context(|| std::format!("exec list launch {i}"))?;
            if l.args.len() != k.nargs {
                return Err(Error::Mismatch {
                    what: "exec list: argument count of the kernel",
                    expected: k.nargs as u64,
                    found: l.args.len() as u64,
                })
                .with_context(|| std::format!("exec list launch {i} ({})", k.name));
            }
            if k.core_id.is_some() && l.calls == 0 {
                return Err(Error::InvalidArgument {
                    what: "exec list: a core_id launch needs global[0] >= 1",
                    value: 0,
                })
                .with_context(|| std::format!("exec list launch {i} ({})", k.name));
            }
            list.entries.push(ListEntry {
                f: k.obj.entry() as usize,
                nargs: k.nargs,
                args_at: list.args.len(),
                core_id: k.core_id,
                calls: u64::from(l.calls),
                profile_name: k.profile_name,
            });
            list.args.extend_from_slice(l.args);
            list._kernels.push(k.clone());
        }
        drop(ks);
        let mut lists = self.exec.lists.write().unwrap_or_else(|p| p.into_inner());
        let i = match lists.iter().position(Option::is_none) {
            Some(i) => {
                lists[i] = Some(list);
                i
            }
            None => {
                lists.push(Some(list));
                lists.len() - 1
            }
        };
        Ok(LIST_TAG | i as u64)
    }

    /// Drop an exec list. The caller waits for the device to finish every run of it first
    /// (a run still queued afterwards fails with an unknown-handle fault).
    pub fn unload_exec_list(&self, handle: u64) -> Result<()> {
        let mut lists = self.exec.lists.write().unwrap_or_else(|p| p.into_inner());
        let slot = usize::try_from(handle & !LIST_TAG)
            .ok()
            .filter(|_| handle & LIST_TAG != 0)
            .and_then(|i| lists.get_mut(i))
            .filter(|l| l.is_some())
            .ok_or(Error::InvalidArgument { what: "unknown exec-list handle", value: handle })?;
        *slot = None;
        Ok(())
    }

    /// Run the launches of exec list `handle` on this thread, one after another (`core_id`
    /// tids in order), without the command processor: the floor a device call of the list is
    /// measured against.
    ///
    /// # Safety
    /// As for running the list on the device: its arguments are valid now (the caller also
    /// makes sure no device work touches the same memory meanwhile).
    pub unsafe fn run_exec_list_here(&self, handle: u64) -> Result<()> {
        let lists = self.exec.lists.read().unwrap_or_else(|p| p.into_inner());
        let list = usize::try_from(handle & !LIST_TAG)
            .ok()
            .and_then(|i| lists.get(i))
            .and_then(Option::as_ref)
            .ok_or(Error::InvalidArgument { what: "unknown exec-list handle", value: handle })?;
        let mut args = [0u64; MAX_ARGS];
        for e in &list.entries {
            let a = &mut args[..e.nargs];
            a.copy_from_slice(&list.args[e.args_at..e.args_at + e.nargs]);
            match e.core_id {
                Some(slot) => {
                    for tid in 0..e.calls {
                        a[slot] = tid;
                        // SAFETY: the caller's contract; the kernel takes `nargs` arguments.
                        unsafe { call_kernel(e.f as *const (), a)? };
                    }
                }
                // SAFETY: as above.
                None => unsafe { call_kernel(e.f as *const (), a)? },
            }
        }
        Ok(())
    }

    /// The kernel behind a handle.
    pub fn kernel(&self, handle: u64) -> Option<Arc<CpuKernel>> {
        self.exec.kernels.read().unwrap_or_else(|p| p.into_inner()).get(handle as usize).cloned()
    }

    /// Load one compiled program (an ELF relocatable object and its signature) to call through
    /// [`Program::call`], which holds every buffer to the footprint its signature states. What
    /// runs bundles is the backend ([`crate::backend::CpuBackend`]); this is the one-program
    /// path (benchmarks, tests, a caller with its own kernels).
    pub fn load_program(&self, image: &ProgramImage) -> Result<Arc<dyn Program>> {
        let nbufs = image.signature.iter().filter(|p| p.kind == ParamKind::Buffer).count();
        let nvals = image.signature.len() - nbufs;
        let core_id = image.signature.iter().position(|p| p.name.as_deref() == Some("core_id"));
        let footprints = hcq::program::buffer_footprints(&image.signature)?;
        // The image's signature is what the program is called through: `Program::call` holds
        // every buffer to its footprint and takes the memory from live buffers.
        // SAFETY: loading machine code from a program image is this method's contract (see
        // `hcq::program::Program`): the image's kernel accesses through each buffer at most the
        // footprint its signature states, and calls go through `Program::call`'s checks.
        let handle = unsafe { self.load_kernel(&image.binary, &image.entry, nbufs + nvals, core_id)? };
        Ok(Arc::new(CpuProgram { dev: self.me.clone(), handle, name: image.name.clone(), nbufs, nvals, footprints }))
    }

    /// Threads a `core_id` launch runs on.
    pub fn cores(&self) -> usize {
        self.exec.fan.workers() + 1
    }
}

/// A program loaded through [`CpuDevice::load_program`].
struct CpuProgram {
    dev: Weak<CpuDevice>,
    handle: u64,
    name: String,
    nbufs: usize,
    nvals: usize,
    footprints: Vec<u64>,
}

impl Program for CpuProgram {
    fn name(&self) -> &str {
        &self.name
    }

    fn is_on(&self, device: &dyn Device) -> bool {
        device.as_any().downcast_ref::<CpuDevice>().is_some_and(|d| std::ptr::eq(d, self.dev.as_ptr()))
    }

    fn buffer_footprints(&self) -> &[u64] {
        &self.footprints
    }

    unsafe fn call_raw(
        &self,
        bufs: &[u64],
        vals: &[i64],
        global: [u32; 3],
        local: [u32; 3],
        wait: bool,
    ) -> Result<LaunchReport> {
        let dev = self
            .dev
            .upgrade()
            .ok_or(Error::DeviceUnavailable { device: hcq::error::device_name("CPU"), reason: "device closed" })?;
        if bufs.len() != self.nbufs || vals.len() != self.nvals {
            return Err(Error::Mismatch {
                what: "CPU program argument count",
                expected: (self.nbufs + self.nvals) as u64,
                found: (bufs.len() + vals.len()) as u64,
            });
        }
        let mut raw = [0u8; MAX_ARGS * 8];
        for (i, a) in bufs.iter().copied().chain(vals.iter().map(|v| *v as u64)).enumerate() {
            raw[i * 8..i * 8 + 8].copy_from_slice(&a.to_le_bytes());
        }
        let n = (self.nbufs + self.nvals) * 8;
        let hcq = dev.soft.engine();
        let mut q = hcq.queue()?;
        let t0 = Instant::now();
        let submitted = core::cell::Cell::new(Stamp::ZERO);
        let mut submit = |s: &mut Submitter<'_>| {
            let ka = s.kernargs(&raw[..n], n.max(8) as u64, 8)?;
            q.exec(self.handle, ka, global, local)?;
            // SAFETY: the exec runs this program's kernel (loaded with the signature whose
            // argument count was checked above) on a block packed from the caller's arguments;
            // the memory they name is the caller's contract (`call_raw`).
            let v = unsafe { s.submit(0, &mut q)? };
            submitted.set(v);
            Ok(v)
        };
        if wait {
            // a synchronous call: the kernel runs on this thread when the engine is free
            dev.soft.run_inline(0, submit)?;
            let stamp = Some(submitted.get());
            return Ok(LaunchReport { stamp, time_us: Some(t0.elapsed().as_secs_f64() * 1e6) });
        }
        let v = submit(&mut hcq.lock())?;
        Ok(LaunchReport { stamp: Some(v), time_us: None })
    }
}

impl Device for CpuDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn allocator(&self) -> &LruAllocator {
        &self.alloc
    }
    fn synchronize(&self) -> Result<()> {
        self.soft.engine().synchronize()
    }
    fn properties(&self) -> DeviceProperties {
        DeviceProperties {
            kind: "cpu".into(),
            arch: Machine::host().to_string(),
            cores: self.cores() as u32,
            memory_bytes: crate::exec::host_memory_bytes(),
            timestamp_hz: 1_000_000_000,
            notes: "kernels from ELF relocatable objects; command processor on a host thread".into(),
        }
    }
    fn limits(&self) -> hcq::device::DeviceLimits {
        cpu_limits()
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
    fn engine(&self) -> Option<&Engine> {
        Some(self.soft.engine())
    }
}

/// Most calls one `core_id` launch makes (`global_size[0]`); CPU kernels take no other grid
/// dimension, so `global_size[1..]` must be 1.
pub const CPU_MAX_THREADS: u32 = 1 << 16;

/// What the CPU device states it can do: the host's RAM for memory (and the largest buffer),
/// 16-byte buffer granules, [`MAX_ARGS`] kernel arguments, a one-dimensional grid of at most
/// [`CPU_MAX_THREADS`] calls.
pub fn cpu_limits() -> hcq::device::DeviceLimits {
    let memory = crate::exec::host_memory_bytes();
    hcq::device::DeviceLimits {
        memory_bytes: memory,
        max_alloc_bytes: memory,
        alloc_align: 16,
        max_kernel_args: MAX_ARGS as u32,
        max_grid: [CPU_MAX_THREADS, 1, 1],
    }
}
