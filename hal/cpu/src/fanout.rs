//! The `core_id` fan-out: worker threads that run the calls of one launch in parallel with the
//! launching thread (the command processor of the `CPU` device).

use crate::device::{MAX_ARGS, call_kernel};
use hcq::error::{Error, Result};
use hcq::soft::runner::soft_clock_ns;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use std::vec::Vec;

/// A job for the core-id fan-out: one kernel, its arguments, and the tids still to run.
#[derive(Clone, Copy)]
pub(crate) struct Job {
    pub(crate) f: usize,
    pub(crate) args: [u64; MAX_ARGS],
    pub(crate) nargs: usize,
    pub(crate) slot: usize,
    pub(crate) n: u64,
}

struct FanShared {
    /// (generation, job): a launch bumps the generation.
    job: Mutex<(u64, Option<Job>)>,
    /// Workers asleep for the next generation wait here.
    cv: Condvar,
    generation: AtomicU64,
    /// How long an idle worker polls for the next launch before it sleeps, in ns: about twice
    /// the recent time between one launch's end and the next one's start (the caller's
    /// estimate), so the launches of a model call, and of calls in a row, find the workers
    /// awake, and an idle device's workers sleep soon.
    worker_spin_ns: AtomicU64,
    /// The next tid to hand out, tagged with its launch: `generation << 32 | tid`. A thread
    /// claims a tid only while the tag is its job's generation, so a worker that wakes late
    /// never runs an old job's arguments with a newer launch's tids.
    next: AtomicU64,
    /// Calls of the current launch that have finished.
    done: AtomicU64,
    stop: AtomicBool,
    /// Workers that have started running.
    started: AtomicUsize,
    /// Workers asleep on `cv` (under `job`'s lock): a launch notifies only when some are, so
    /// a launch to spinning workers makes no system call.
    sleeping: AtomicUsize,
    /// The launching thread has run out of tids and sleeps on `done_cv` for the last calls.
    caller_sleeping: AtomicBool,
    done_lock: Mutex<()>,
    done_cv: Condvar,
}

/// Worker threads that run the calls of a `core_id` launch in parallel with the launching
/// thread.
pub(crate) struct FanOut {
    shared: Arc<FanShared>,
    workers: Vec<JoinHandle<()>>,
    /// Launches so far (the tag of `FanShared::next`). One launch at a time: exec commands run
    /// one after another, as every queue of the device waits on the timeline value of the
    /// submission before it (whichever engine and command processor runs them).
    launches: AtomicU64,
    /// Launches still to run on the launching thread alone (after workers were late).
    solo_left: AtomicU32,
    /// How many launches the last late worker cost (doubles while workers keep being late).
    backoff: AtomicU32,
    /// When the last launch ended ([`soft_clock_ns`]; 0 before the first).
    last_end_ns: AtomicU64,
    /// Moving average of the time from one launch's end to the next one's start, in ns.
    gap_ns: AtomicU64,
}

/// Most launches run without the workers after they were late.
const SOLO_MAX: u32 = 64;

/// How long an idle worker polls for the next launch before it sleeps (launches come in
/// bursts: the `core_id` kernels of one model call).
const WORKER_SPIN_MIN: Duration = Duration::from_micros(20);
/// Longest an idle worker polls for the next launch.
const WORKER_SPIN_MAX: Duration = Duration::from_micros(500);

/// Longest the launching thread spins for the workers' last calls before it sleeps.
const CALLER_SPIN_MAX: Duration = Duration::from_micros(200);

impl FanOut {
    pub(crate) fn new(workers: usize) -> Result<Self> {
        let shared = Arc::new(FanShared {
            job: Mutex::new((0, None)),
            cv: Condvar::new(),
            generation: AtomicU64::new(0),
            worker_spin_ns: AtomicU64::new(WORKER_SPIN_MIN.as_nanos() as u64),
            next: AtomicU64::new(0),
            done: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            started: AtomicUsize::new(0),
            sleeping: AtomicUsize::new(0),
            caller_sleeping: AtomicBool::new(false),
            done_lock: Mutex::new(()),
            done_cv: Condvar::new(),
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
        hcq::soft::runner::wait_started(&shared.started, workers);
        Ok(Self {
            shared,
            workers: ws,
            launches: AtomicU64::new(0),
            solo_left: AtomicU32::new(0),
            backoff: AtomicU32::new(0),
            last_end_ns: AtomicU64::new(0),
            gap_ns: AtomicU64::new(0),
        })
    }

    /// How many worker threads there are (the launching thread not counted).
    pub(crate) fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Run `job` for every tid in `0..job.n`, on the workers and this thread; returns when all
    /// calls are done.
    ///
    /// This thread takes tids like the workers do, so a launch never waits for a worker to be
    /// scheduled: on a busy machine it may run every call itself. Once no tid is left it waits
    /// only for calls a worker has started: it spins for about as long as one call took here
    /// (at most one call per worker is still running), then sleeps until the last one wakes
    /// it, so it never spins for long on a CPU a worker needs. A worker that needed the sleep
    /// was preempted (a machine busier than the device has cores): the next launches run on
    /// this thread alone (1, 2, 4, ... up to 64 of them while it keeps happening).
    pub(crate) fn run(&self, job: Job) {
        if !self.workers.is_empty() {
            self.note_gap();
        }
        self.launch(job);
        if !self.workers.is_empty() {
            self.last_end_ns.store(soft_clock_ns().max(1), Ordering::Relaxed);
        }
    }

    /// Update the workers' idle spin from the time since the last launch ended.
    fn note_gap(&self) {
        let end = self.last_end_ns.load(Ordering::Relaxed);
        if end == 0 {
            return;
        }
        let gap = soft_clock_ns().saturating_sub(end);
        // an average over about 8 launches (the launches of a call alternate short and long gaps)
        let avg = match self.gap_ns.load(Ordering::Relaxed) {
            0 => gap,
            a => a - a / 8 + gap / 8,
        };
        self.gap_ns.store(avg, Ordering::Relaxed);
        let spin = avg.saturating_mul(2).clamp(WORKER_SPIN_MIN.as_nanos() as u64, WORKER_SPIN_MAX.as_nanos() as u64);
        self.shared.worker_spin_ns.store(spin, Ordering::Relaxed);
    }

    fn launch(&self, job: Job) {
        let s = &self.shared;
        // 32-bit tags, never 0 (what idle workers start from); tids fit the low 32 bits
        // (`global[0]` is a u32)
        let launch = match (self.launches.load(Ordering::Relaxed) + 1) & 0xffff_ffff {
            0 => 1,
            g => g,
        };
        self.launches.store(launch, Ordering::Relaxed);
        s.done.store(0, Ordering::Release);
        s.next.store(launch << 32, Ordering::Release);
        let solo = self.solo_left.load(Ordering::Relaxed);
        if self.workers.is_empty() || job.n <= 1 || solo > 0 {
            self.solo_left.store(solo.saturating_sub(1), Ordering::Relaxed);
            run_tids(s, &job, launch);
            return;
        }
        {
            let mut g = s.job.lock().unwrap_or_else(|p| p.into_inner());
            g.0 = launch;
            g.1 = Some(job);
            s.generation.store(launch, Ordering::Release);
            if s.sleeping.load(Ordering::Acquire) > 0 {
                s.cv.notify_all();
            }
        }
        let t0 = Instant::now();
        let ran = run_tids(s, &job, launch);
        if s.done.load(Ordering::Acquire) >= job.n {
            self.backoff.store(0, Ordering::Relaxed);
            return;
        }
        // spin for about one call's time
        let per_call = t0.elapsed() / ran.max(1) as u32;
        let spin = per_call.clamp(Duration::from_micros(2), CALLER_SPIN_MAX);
        let t1 = Instant::now();
        while t1.elapsed() < spin {
            for _ in 0..64 {
                if s.done.load(Ordering::Acquire) >= job.n {
                    self.backoff.store(0, Ordering::Relaxed);
                    return;
                }
                core::hint::spin_loop();
            }
        }
        // A worker's call ran well past this thread's: on a machine busier than the device has
        // cores, a worker is preempted mid-call and the launch waits for a scheduler quantum.
        // Run the next launches on this thread alone, twice as many each time this happens in
        // a row (up to SOLO_MAX), then try the workers again.
        let backoff = (self.backoff.load(Ordering::Relaxed) * 2).clamp(1, SOLO_MAX);
        self.backoff.store(backoff, Ordering::Relaxed);
        self.solo_left.store(backoff, Ordering::Relaxed);
        // then sleep. Dekker with `run_tids` on a worker: this sets `caller_sleeping` then reads
        // the count; a worker adds to the count then reads `caller_sleeping`
        s.caller_sleeping.store(true, Ordering::SeqCst);
        let mut g = s.done_lock.lock().unwrap_or_else(|p| p.into_inner());
        while s.done.load(Ordering::SeqCst) < job.n {
            // TIMEOUT: a bound on a lost wake-up only; the loop re-checks the count
            g = match s.done_cv.wait_timeout(g, Duration::from_millis(1)) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        drop(g);
        s.caller_sleeping.store(false, Ordering::SeqCst);
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

/// Claim and run tids of `job` (launch `launch`) until none is left or a newer launch began;
/// returns how many this thread ran.
fn run_tids(s: &FanShared, job: &Job, launch: u64) -> u64 {
    let mut args = job.args;
    let mut ran = 0;
    let mut cur = s.next.load(Ordering::Acquire);
    loop {
        if cur >> 32 != launch || cur & 0xffff_ffff >= job.n {
            break;
        }
        if let Err(now) = s.next.compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire) {
            cur = now;
            continue;
        }
        args[job.slot] = cur & 0xffff_ffff;
        // The job comes from `CpuExec`: a loaded kernel of `nargs` arguments (it stays loaded
        // until the device drops, which first stops this pool) and the launch's arguments.
        // SAFETY: see above; `f` takes exactly `nargs` integer arguments.
        let _ = unsafe { call_kernel(job.f as *const (), &args[..job.nargs]) };
        ran += 1;
        s.done.fetch_add(1, Ordering::SeqCst);
        if s.caller_sleeping.load(Ordering::SeqCst) {
            let _g = s.done_lock.lock().unwrap_or_else(|p| p.into_inner());
            s.done_cv.notify_one();
        }
        cur = s.next.load(Ordering::Acquire);
    }
    ran
}

fn worker(s: Arc<FanShared>) {
    s.started.fetch_add(1, Ordering::AcqRel);
    let mut seen = 0u64;
    loop {
        // spin a little for the next launch, then sleep. No `yield_now` in between: on a busy
        // machine a yielding thread goes to the back of the run queue and misses launches by
        // milliseconds, while a sleeping one is woken (and scheduled) when a launch comes.
        let spin_until = Instant::now() + Duration::from_nanos(s.worker_spin_ns.load(Ordering::Relaxed));
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
        }
        let job = {
            let mut g = s.job.lock().unwrap_or_else(|p| p.into_inner());
            if g.0 == seen {
                s.sleeping.fetch_add(1, Ordering::AcqRel);
                while g.0 == seen && !s.stop.load(Ordering::Acquire) {
                    g = s.cv.wait(g).unwrap_or_else(|p| p.into_inner());
                }
                s.sleeping.fetch_sub(1, Ordering::AcqRel);
            }
            if s.stop.load(Ordering::Acquire) {
                return;
            }
            seen = g.0;
            g.1
        };
        if let Some(job) = job {
            run_tids(&s, &job, seen);
        }
    }
}
