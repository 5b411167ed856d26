//! The `core_id` fan-out: worker threads that run the calls of one launch in parallel with the
//! launching thread (the command processor of the `CPU` device).

use crate::device::{MAX_ARGS, call_kernel};
use hcq::error::{Error, Result};
use hcq::soft::threaded::soft_clock_ns;
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
    /// When the launching thread claimed the call it is running ([`soft_clock_ns`]).
    caller_claim_ns: AtomicU64,
    /// How long one call of this launch took on the launching thread, in ns (0 until its first
    /// call finished).
    call_ns: AtomicU64,
    /// When a worker last claimed a call of this launch, and how long a worker's call took.
    worker_claim_ns: AtomicU64,
    worker_call_ns: AtomicU64,
    done_lock: Mutex<()>,
    done_cv: Condvar,
    /// The workers' kernel thread ids (Linux), for keeping them off the launching thread's core.
    #[cfg(target_os = "linux")]
    tids: Mutex<Vec<libc::pid_t>>,
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
    /// The core the launching thread ran on at the last fanned-out launch (-1: none yet); the
    /// workers are kept off it ([`FanOut::keep_off`]).
    #[cfg(target_os = "linux")]
    caller_cpu: core::sync::atomic::AtomicI32,
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
/// Slack on a worker call's expected end (clock reads, cache misses of a cold worker).
const CALLER_SLACK_NS: u64 = 200_000;
/// Slack on a launch's time against the launching thread alone (the wake-up system call).
const PAY_SLACK_NS: u64 = 20_000;

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
            caller_claim_ns: AtomicU64::new(0),
            call_ns: AtomicU64::new(0),
            worker_claim_ns: AtomicU64::new(0),
            worker_call_ns: AtomicU64::new(0),
            done_lock: Mutex::new(()),
            done_cv: Condvar::new(),
            #[cfg(target_os = "linux")]
            tids: Mutex::new(Vec::with_capacity(workers)),
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
        hcq::soft::threaded::wait_started(&shared.started, workers);
        Ok(Self {
            shared,
            workers: ws,
            launches: AtomicU64::new(0),
            solo_left: AtomicU32::new(0),
            backoff: AtomicU32::new(0),
            last_end_ns: AtomicU64::new(0),
            gap_ns: AtomicU64::new(0),
            #[cfg(target_os = "linux")]
            caller_cpu: core::sync::atomic::AtomicI32::new(-1),
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
    /// scheduled: on a busy machine, or when the workers slept and wake late (the first
    /// calls, calls after a gap), it may run every call itself. A worker that wakes late takes
    /// the last tid only when that ends the launch sooner than this thread would (it has run
    /// less than 3/4 of its current call). Once no tid is left this thread waits only for calls
    /// a worker has started: it spins until they are due (`due_by`), [`CALLER_SPIN_MAX`] at
    /// most, then sleeps until the last call wakes it. A launch slower than this thread alone
    /// would have been (`paid_off`: a preemption, on a machine busier than the device has
    /// cores) makes the next launches run on this thread alone (1, 2, 4, ... up to 64 of them
    /// while it keeps happening). A late *wake* does not: it costs nothing, as the late worker
    /// takes no call that would hold this thread up (before, it counted as a preemption, and
    /// the solo runs it started kept the workers asleep, so the next fanned-out launch woke
    /// them late again: the first hundreds of calls ran on one core).
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
            run_tids(s, &job, launch, true);
            return;
        }
        #[cfg(target_os = "linux")]
        self.keep_off_caller_cpu();
        let t0 = soft_clock_ns();
        s.call_ns.store(0, Ordering::Relaxed);
        s.caller_claim_ns.store(t0, Ordering::Relaxed);
        s.worker_claim_ns.store(0, Ordering::Relaxed);
        s.worker_call_ns.store(0, Ordering::Relaxed);
        {
            let mut g = s.job.lock().unwrap_or_else(|p| p.into_inner());
            g.0 = launch;
            g.1 = Some(job);
            s.generation.store(launch, Ordering::Release);
            if s.sleeping.load(Ordering::Acquire) > 0 {
                s.cv.notify_all();
            }
        }
        let ran = run_tids(s, &job, launch, true);
        if s.done.load(Ordering::Acquire) >= job.n {
            self.finished(t0, job.n);
            return;
        }
        // the workers' calls in flight are due about a call's time after the last claim
        let now = soft_clock_ns();
        let call = match s.call_ns.load(Ordering::Acquire) {
            0 => now.saturating_sub(t0) / ran.max(1),
            c => c,
        };
        let claimed = match s.worker_claim_ns.load(Ordering::Acquire) {
            0 => now,
            t => t,
        };
        let due = due_by(claimed, call);
        let spin_until = due.min(soft_clock_ns() + CALLER_SPIN_MAX.as_nanos() as u64);
        while soft_clock_ns() < spin_until {
            for _ in 0..64 {
                if s.done.load(Ordering::Acquire) >= job.n {
                    self.finished(t0, job.n);
                    return;
                }
                core::hint::spin_loop();
            }
        }
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
        self.finished(t0, job.n);
    }

    /// Keep the workers off the core this (launching) thread runs on: when it differs from the
    /// last launch's, every worker's affinity becomes this thread's minus that core.
    ///
    /// Why: Linux places a thread woken by a `futex` wake near its waker (wake-affine). A worker
    /// that slept (the first calls after a load, a caller at 20 Hz) was woken onto the launching
    /// thread's core and time-shared it while the other core idled: measured on a 2-core VM,
    /// calls 50 ms apart ran the `matmul` bundle's 4 `core_id` tids at 1.04x of one core, half
    /// of the launches with the worker running 3 tids to the launching thread's 1 in a serial
    /// call's time. A thread that cannot run on the waker's core is woken on another one.
    /// Costs one `sched_getcpu` (vDSO) per launch, and `sched_setaffinity` per worker only when
    /// the launching thread moved. A worker left with no core (a caller pinned to one core) is
    /// left as it is.
    #[cfg(target_os = "linux")]
    fn keep_off_caller_cpu(&self) {
        use core::sync::atomic::Ordering::Relaxed;
        // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 || cpu == self.caller_cpu.load(Relaxed) || cpu as usize >= libc::CPU_SETSIZE as usize {
            return;
        }
        self.caller_cpu.store(cpu, Relaxed);
        // SAFETY: a zeroed cpu_set_t is the empty set (a plain bit array).
        let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
        // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; 0 is this thread.
        if unsafe { libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
            return;
        }
        // SAFETY: `cpu` < CPU_SETSIZE (checked above); CPU_CLR and CPU_COUNT only touch `set`'s bits.
        let left = unsafe {
            libc::CPU_CLR(cpu as usize, &mut set);
            libc::CPU_COUNT(&set)
        };
        if left == 0 {
            return;
        }
        let tids = self.shared.tids.lock().unwrap_or_else(|p| p.into_inner());
        for &tid in tids.iter() {
            // a failure (a seccomp filter, a cgroup) leaves the worker where the scheduler puts it
            // SAFETY: `set` is a valid cpu_set_t of the size passed; `tid` is a live worker thread
            // of this process (the workers outlive this pool's launches).
            let _ = unsafe { libc::sched_setaffinity(tid, core::mem::size_of::<libc::cpu_set_t>(), &set) };
        }
    }

    /// After a launch of `n` calls that began at `t0`: one that took longer than this thread
    /// alone would have (`paid_off`: a worker preempted mid-call, or this thread preempted by
    /// the worker it woke, on a machine busier than the device has cores) makes the next
    /// launches run on this thread alone, twice as many each time this happens in a row (up to
    /// SOLO_MAX), then the workers are tried again. A worker that slept and woke late costs
    /// nothing (it leaves the calls to this thread), so it never starts a solo run.
    fn finished(&self, t0: u64, n: u64) {
        let s = &self.shared;
        let call = match s.call_ns.load(Ordering::Acquire) {
            0 => s.worker_call_ns.load(Ordering::Acquire),
            c => c,
        };
        if paid_off(soft_clock_ns().saturating_sub(t0), n, call) {
            self.backoff.store(0, Ordering::Relaxed);
            return;
        }
        let backoff = (self.backoff.load(Ordering::Relaxed) * 2).clamp(1, SOLO_MAX);
        self.backoff.store(backoff, Ordering::Relaxed);
        self.solo_left.store(backoff, Ordering::Relaxed);
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

/// When a worker call claimed at `claimed` should have ended, for calls of `call` ns as timed
/// on the launching thread: twice that (a worker on a core that was idle runs at a lower
/// clock at first) plus [`CALLER_SLACK_NS`]. The launching thread spins until then
/// ([`CALLER_SPIN_MAX`] at most), then sleeps.
fn due_by(claimed: u64, call: u64) -> u64 {
    claimed.saturating_add(call.saturating_mul(2).saturating_add(CALLER_SLACK_NS))
}

/// Whether a fanned-out launch of `n` calls of `call` ns that took `total` ns was no slower
/// than the launching thread alone (`n · call`), within a quarter and [`PAY_SLACK_NS`]
/// (the wake-up system call, a worker on a core that was idle). A preemption costs a
/// scheduler quantum, milliseconds.
fn paid_off(total: u64, n: u64, call: u64) -> bool {
    let alone = n.saturating_mul(call);
    total <= alone.saturating_add(alone / 4).saturating_add(PAY_SLACK_NS)
}

/// Whether a worker taking the last tid at `now` ends the launch sooner than the launching
/// thread would, running it after the call it claimed at `caller_claim` (`call` ns each, 0
/// while unknown: then take it): while that call is less than 3/4 done, or once it overran by
/// a quarter (the launching thread was preempted).
fn last_tid_helps(now: u64, caller_claim: u64, call: u64) -> bool {
    let ran = now.saturating_sub(caller_claim);
    call == 0 || ran <= call / 4 * 3 || ran > call + call / 4
}

/// Claim and run tids of `job` (launch `launch`) until none is left or a newer launch began;
/// returns how many this thread ran. `caller`: this is the launching thread (else a worker,
/// which leaves the last tid to the launching thread when that would finish sooner).
fn run_tids(s: &FanShared, job: &Job, launch: u64, caller: bool) -> u64 {
    let mut args = job.args;
    let mut ran = 0;
    let mut cur = s.next.load(Ordering::Acquire);
    loop {
        if cur >> 32 != launch || cur & 0xffff_ffff >= job.n {
            break;
        }
        let t = soft_clock_ns();
        if !caller {
            // The last tid, while the launching thread runs a call: taking it helps only if
            // this ends before the launching thread would have finished it after its own (the
            // calls take about as long): `last_tid_helps`.
            if cur & 0xffff_ffff == job.n - 1
                && !last_tid_helps(t, s.caller_claim_ns.load(Ordering::Acquire), s.call_ns.load(Ordering::Acquire))
            {
                break;
            }
            // before the claim, so the launching thread never sees a claimed call without it
            s.worker_claim_ns.fetch_max(t, Ordering::AcqRel);
        }
        if let Err(now) = s.next.compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire) {
            cur = now;
            continue;
        }
        if caller {
            s.caller_claim_ns.store(t, Ordering::Release);
        }
        args[job.slot] = cur & 0xffff_ffff;
        // The job comes from `CpuExec`: a loaded kernel of `nargs` arguments (it stays loaded
        // until the device drops, which first stops this pool) and the launch's arguments.
        // SAFETY: see above; `f` takes exactly `nargs` integer arguments.
        let _ = unsafe { call_kernel(job.f as *const (), &args[..job.nargs]) };
        ran += 1;
        let end = soft_clock_ns();
        if caller {
            s.call_ns.store(end.saturating_sub(t).max(1), Ordering::Release);
        } else {
            s.worker_call_ns.store(end.saturating_sub(t).max(1), Ordering::Release);
        }
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
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid takes no arguments and touches no memory.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::pid_t;
        s.tids.lock().unwrap_or_else(|p| p.into_inner()).push(tid);
    }
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
            run_tids(&s, &job, seen, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls a worker ran, and how long a worker waits before its call (its late start).
    static WORKER_CALLS: AtomicU64 = AtomicU64::new(0);
    static WORKER_DELAY_US: AtomicU64 = AtomicU64::new(0);

    /// A 20 ms call; on a worker it starts `WORKER_DELAY_US` late.
    extern "C" fn twenty_ms(_tid: u64) {
        if std::thread::current().name().is_some_and(|n| n.starts_with("CPU-core")) {
            WORKER_CALLS.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_micros(WORKER_DELAY_US.load(Ordering::SeqCst)));
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(20) {
            core::hint::spin_loop();
        }
    }

    /// Launches of two 20 ms calls after the worker slept, its call starting `delay_us` late;
    /// returns `solo_left` after the first launch in which the worker took a call.
    fn solo_after_a_late_worker(delay_us: u64) -> u32 {
        WORKER_DELAY_US.store(delay_us, Ordering::SeqCst);
        let fan = FanOut::new(1).unwrap();
        let job = Job { f: twenty_ms as *const () as usize, args: [0; MAX_ARGS], nargs: 1, slot: 0, n: 2 };
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(5)); // the worker sleeps
            let before = WORKER_CALLS.load(Ordering::SeqCst);
            fan.run(job);
            if WORKER_CALLS.load(Ordering::SeqCst) > before {
                return fan.solo_left.load(Ordering::Relaxed);
            }
            fan.solo_left.store(0, Ordering::Relaxed);
        }
        panic!("in 20 launches of two 20 ms calls the worker never took one");
    }

    /// A worker that wakes (or starts its call) late still ends the launch sooner than the
    /// launching thread alone: no solo run (before: any wait past 200 µs for it started one,
    /// and the solo runs kept the workers asleep, so the first calls ran on one core). A
    /// worker 200 ms late made the launch slower than one thread: that starts one.
    #[test]
    fn a_late_worker_does_not_start_a_solo_run_unless_the_launch_was_slower() {
        assert_eq!(solo_after_a_late_worker(1_000), 0);
        assert!(solo_after_a_late_worker(200_000) >= 1);
    }

    extern "C" fn nothing(_tid: u64) {}

    /// After a fanned-out launch the worker may not run on the launching thread's core (where
    /// a futex wake-up would put it, to time-share that core while another one idles), and
    /// may run on every other core the launching thread may use. Fails without `keep_off`:
    /// the worker's mask then holds every core.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_worker_is_kept_off_the_launching_threads_core() {
        // SAFETY: zeroed cpu_set_t is the empty set; the calls below write only `mine`/`theirs`.
        let mut mine: libc::cpu_set_t = unsafe { core::mem::zeroed() };
        let size = core::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: a valid cpu_set_t of `size` bytes; 0 is this thread.
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut mine) }, 0);
        // SAFETY: reads `mine`'s bits only.
        if unsafe { libc::CPU_COUNT(&mine) } < 2 {
            panic!("this test needs a machine with two cores this thread may run on");
        }
        let fan = FanOut::new(1).unwrap();
        let job = Job { f: nothing as *const () as usize, args: [0; MAX_ARGS], nargs: 1, slot: 0, n: 2 };
        fan.run(job);
        let cpu = fan.caller_cpu.load(Ordering::Relaxed);
        assert!(cpu >= 0, "the launch recorded the launching thread's core");
        let tid = fan.shared.tids.lock().unwrap()[0];
        // SAFETY: as above.
        let mut theirs: libc::cpu_set_t = unsafe { core::mem::zeroed() };
        // SAFETY: a valid cpu_set_t of `size` bytes; `tid` is the pool's live worker.
        assert_eq!(unsafe { libc::sched_getaffinity(tid, size, &mut theirs) }, 0);
        for c in 0..libc::CPU_SETSIZE as usize {
            // SAFETY: c < CPU_SETSIZE; reads bits only.
            let (m, t) = unsafe { (libc::CPU_ISSET(c, &mine), libc::CPU_ISSET(c, &theirs)) };
            if c == cpu as usize {
                assert!(!t, "the worker may still run on the launching thread's core {c}");
            } else {
                assert_eq!(m, t, "core {c}: the worker's mask differs from the launching thread's");
            }
        }
    }

    #[test]
    fn a_launch_pays_off_unless_slower_than_the_launching_thread_alone() {
        // 4 calls of 300 µs: 1.2 ms alone
        assert!(paid_off(700_000, 4, 300_000), "fanned out");
        assert!(paid_off(1_250_000, 4, 300_000), "the workers woke late and left every call to it");
        assert!(!paid_off(4_500_000, 4, 300_000), "a preempted thread: a scheduler quantum more");
        assert_eq!(due_by(250_000, 300_000), 250_000 + 600_000 + CALLER_SLACK_NS);
    }

    #[test]
    fn a_late_worker_leaves_the_last_tid_to_the_launching_thread() {
        let call = 300_000;
        assert!(last_tid_helps(1_000_000 + 100_000, 1_000_000, call), "a third into its call: help");
        assert!(!last_tid_helps(1_000_000 + 250_000, 1_000_000, call), "nearly done: it does it sooner");
        assert!(last_tid_helps(1_000_000 + 1_000_000, 1_000_000, call), "overran: it was preempted");
        assert!(last_tid_helps(5_000_000, 1_000_000, 0), "no call timed yet: take it");
    }
}
