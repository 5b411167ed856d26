//! The `CPU` device: tinygrad's clang-built CPU kernels run through the HCQ engine.
//!
//! The device is a soft device ([`SoftDevice`]): queues are encoded in the reference encoding,
//! submitted to a command ring, and a command-processor thread executes them — calling the
//! loaded kernels, copying memory, writing signals and timestamps — and signals the timeline.
//! A launch whose program has a `core_id` argument runs once per core id (`global[0]` calls)
//! in parallel on a pool of worker threads plus the command processor itself (tinygrad runs
//! them one after another).
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

use crate::elf::Arch;
use crate::exec::{LoadedObject, default_resolver};
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, HostAllocator, LruAllocator};
use hcq::device::{Device, DeviceKind, DeviceProperties};
use hcq::error::{Error, Result, ResultExt};
use hcq::hcq::Hcq;

use hcq::profile::{Event, EventKind};
use hcq::program::{Launch, ParamKind, Program, ProgramImage};
use hcq::soft::runner::{Executor, Regs, SoftConfig, SoftContext, SoftDevice, soft_clock_ns};
use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
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

/// A job for the core-id fan-out: one kernel, its arguments, and the tids still to run.
#[derive(Clone, Copy)]
struct Job {
    f: usize,
    args: [u64; MAX_ARGS],
    nargs: usize,
    slot: usize,
    n: u64,
}

struct FanShared {
    job: Mutex<(u64, Option<Job>)>,
    cv: Condvar,
    generation: AtomicU64,
    next: AtomicU64,
    done_workers: AtomicUsize,
    stop: std::sync::atomic::AtomicBool,
}

/// Worker threads that run the calls of a `core_id` launch in parallel.
struct FanOut {
    shared: Arc<FanShared>,
    workers: Vec<JoinHandle<()>>,
}

impl FanOut {
    fn new(workers: usize) -> Result<Self> {
        let shared = Arc::new(FanShared {
            job: Mutex::new((0, None)),
            cv: Condvar::new(),
            generation: AtomicU64::new(0),
            next: AtomicU64::new(0),
            done_workers: AtomicUsize::new(0),
            stop: std::sync::atomic::AtomicBool::new(false),
        });
        let mut ws = Vec::with_capacity(workers);
        for i in 0..workers {
            let s = shared.clone();
            let t = std::thread::Builder::new()
                .name(std::format!("CPU-core{}", i + 1))
                .spawn(move || worker(s))
                .map_err(|e| Error::Os { what: "spawn core-id worker", errno: e.raw_os_error().unwrap_or(0) })?;
            ws.push(t);
        }
        Ok(Self { shared, workers: ws })
    }

    /// Run `job` for every tid in `0..job.n`, on the workers and this thread; returns when all
    /// calls are done.
    fn run(&self, job: Job) {
        let s = &self.shared;
        // every launch hands out tids from 0, on the inline path too (no worker still reads
        // `next`: the previous `run` returned only after all of them checked in)
        s.next.store(0, Ordering::Release);
        if self.workers.is_empty() || job.n <= 1 {
            run_tids(s, &job);
            return;
        }
        s.done_workers.store(0, Ordering::Release);
        {
            let mut g = s.job.lock().unwrap_or_else(|p| p.into_inner());
            g.0 += 1;
            g.1 = Some(job);
            s.generation.store(g.0, Ordering::Release);
            s.cv.notify_all();
        }
        run_tids(s, &job);
        // every worker checks in for every generation, so none can still read this job later;
        // yield between polls so that a worker sharing this CPU (a busy machine) gets to finish
        while s.done_workers.load(Ordering::Acquire) < self.workers.len() {
            for _ in 0..64 {
                if s.done_workers.load(Ordering::Acquire) >= self.workers.len() {
                    return;
                }
                core::hint::spin_loop();
            }
            std::thread::yield_now();
        }
    }
}

impl Drop for FanOut {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _g = self.shared.job.lock().unwrap_or_else(|p| p.into_inner());
            self.shared.cv.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn run_tids(s: &FanShared, job: &Job) {
    let mut args = job.args;
    loop {
        let tid = s.next.fetch_add(1, Ordering::AcqRel);
        if tid >= job.n {
            break;
        }
        args[job.slot] = tid;
        // The job comes from `CpuExec::exec`: a loaded kernel of `nargs` arguments (it stays
        // loaded until the device drops, which first stops this pool) and the launch's arguments.
        // SAFETY: see above; `f` takes exactly `nargs` integer arguments.
        let _ = unsafe { call_kernel(job.f as *const (), &args[..job.nargs]) };
    }
}

fn worker(s: Arc<FanShared>) {
    let mut seen = 0u64;
    loop {
        // spin a little for the next generation (launches come in bursts), then sleep
        let spin_until = Instant::now() + Duration::from_micros(100);
        while s.generation.load(Ordering::Acquire) == seen && Instant::now() < spin_until {
            if s.stop.load(Ordering::Acquire) {
                return;
            }
            for _ in 0..64 {
                if s.generation.load(Ordering::Acquire) != seen {
                    break;
                }
                core::hint::spin_loop();
            }
            // let the command processor (or anything else waiting for this CPU) run
            std::thread::yield_now();
        }
        let job = {
            let mut g = s.job.lock().unwrap_or_else(|p| p.into_inner());
            while g.0 == seen && !s.stop.load(Ordering::Acquire) {
                g = s.cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
            if s.stop.load(Ordering::Acquire) {
                return;
            }
            seen = g.0;
            g.1
        };
        if let Some(job) = job {
            run_tids(&s, &job);
        }
        s.done_workers.fetch_add(1, Ordering::AcqRel);
    }
}

/// What the CPU device's command processor does for exec and copy commands.
struct CpuExec {
    kernels: RwLock<Vec<Arc<CpuKernel>>>,
    memory: Arc<RwLock<BTreeMap<u64, u64>>>,
    fan: FanOut,
}

impl CpuExec {
    fn check_mem(&self, addr: u64, len: u64) -> Result<()> {
        let m = self.memory.read().unwrap_or_else(|p| p.into_inner());
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
}

impl Executor for CpuExec {
    fn exec(&self, ctx: &SoftContext, program: u64, kernargs: u64, global: [u32; 3], _local: [u32; 3]) -> Result<()> {
        let k = {
            let ks = self.kernels.read().unwrap_or_else(|p| p.into_inner());
            ks.get(usize::try_from(program).unwrap_or(usize::MAX))
                .cloned()
                .ok_or_else(|| Error::InvalidArgument { what: "CPU exec: unknown program handle", value: program })?
        };
        let mut args = [0u64; MAX_ARGS];
        let mut raw = [0u8; MAX_ARGS * 8];
        let bytes = &mut raw[..k.nargs * 8];
        ctx.read_kernargs(kernargs, bytes)?;
        for (a, c) in args.iter_mut().zip(bytes.chunks_exact(8)) {
            *a = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        }
        let prof = ctx.hcq().profiler();
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
        self.check_mem(src, bytes)?;
        self.check_mem(dst, bytes)?;
        let st = soft_clock_ns();
        // The allocator removes a range only on free, after the device is idle.
        // SAFETY: both ranges lie inside live allocations (checked above); `copy` allows overlap.
        unsafe { core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes as usize) };
        let prof = ctx.hcq().profiler();
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
    hcq: std::sync::OnceLock<Weak<Hcq>>,
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
    pub fn load_kernel(&self, object: &[u8], symbol: &str, nargs: usize, core_id: Option<usize>) -> Result<u64> {
        if nargs > MAX_ARGS {
            return Err(Error::Unsupported { what: "kernel argument count (max 63)", value: nargs as u64 });
        }
        if let Some(s) = core_id
            && s >= nargs
        {
            return Err(Error::OutOfBounds {
                what: "core_id argument slot",
                offset: s as u64,
                len: 1,
                limit: nargs as u64,
            });
        }
        let obj = LoadedObject::load(object, Arch::host(), symbol, &default_resolver)
            .with_context(|| std::format!("loading kernel {symbol}"))?;
        let profile_name = self.soft.hcq().profiler().intern(symbol);
        let k = Arc::new(CpuKernel { obj, name: symbol.to_string(), nargs, core_id, profile_name });
        let mut ks = self.exec.kernels.write().unwrap_or_else(|p| p.into_inner());
        ks.push(k);
        Ok((ks.len() - 1) as u64)
    }

    /// The kernel behind a handle.
    pub fn kernel(&self, handle: u64) -> Option<Arc<CpuKernel>> {
        self.exec.kernels.read().unwrap_or_else(|p| p.into_inner()).get(handle as usize).cloned()
    }

    /// Threads a `core_id` launch runs on.
    pub fn cores(&self) -> usize {
        self.exec.fan.workers.len() + 1
    }
}

/// A program loaded through [`Device::load_program`].
struct CpuProgram {
    dev: Weak<CpuDevice>,
    handle: u64,
    name: String,
    nbufs: usize,
    nvals: usize,
}

impl Program for CpuProgram {
    fn name(&self) -> &str {
        &self.name
    }

    fn is_on(&self, device: &dyn Device) -> bool {
        device.as_any().downcast_ref::<CpuDevice>().is_some_and(|d| std::ptr::eq(d, self.dev.as_ptr()))
    }

    unsafe fn call_raw(
        &self,
        bufs: &[u64],
        vals: &[i64],
        global: [u32; 3],
        local: [u32; 3],
        wait: bool,
    ) -> Result<Launch> {
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
        let hcq = dev.soft.hcq();
        let mut q = hcq.queue()?;
        let t0 = Instant::now();
        let v = {
            let mut s = hcq.lock();
            let ka = s.kernargs(&raw[..n], n.max(8) as u64, 8)?;
            q.exec(self.handle, ka, global, local)?;
            s.submit(0, &mut q)?
        };
        let stamp = Some(v);
        if wait {
            hcq.wait(v)?;
            return Ok(Launch { stamp, time_us: Some(t0.elapsed().as_secs_f64() * 1e6) });
        }
        Ok(Launch { stamp, time_us: None })
    }
}

impl Device for CpuDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn allocator(&self) -> &LruAllocator {
        &self.alloc
    }
    fn load_program(&self, image: &ProgramImage) -> Result<Arc<dyn Program>> {
        let nbufs = image.signature.iter().filter(|p| p.kind == ParamKind::Buffer).count();
        let nvals = image.signature.len() - nbufs;
        let core_id = image.signature.iter().position(|p| p.name.as_deref() == Some("core_id"));
        let handle = self.load_kernel(&image.binary, &image.entry, nbufs + nvals, core_id)?;
        Ok(Arc::new(CpuProgram { dev: self.me.clone(), handle, name: image.name.clone(), nbufs, nvals }))
    }
    fn synchronize(&self) -> Result<()> {
        self.soft.hcq().synchronize()
    }
    fn properties(&self) -> DeviceProperties {
        DeviceProperties {
            kind: "cpu".into(),
            arch: Arch::host().to_string(),
            cores: self.cores() as u32,
            memory_bytes: 0,
            timestamp_hz: 1_000_000_000,
            notes: "kernels from ELF relocatable objects; command processor on a host thread".into(),
        }
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
    fn hcq(&self) -> Option<&Hcq> {
        Some(self.soft.hcq())
    }
}

/// The registry entry for `CPU` (one device, using every host core).
pub fn cpu_kind() -> DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_i: u32) -> Result<Arc<dyn Device>> {
        Ok(CpuDevice::new("CPU", host_cores())?)
    }
    DeviceKind { name: "CPU", count, open }
}
