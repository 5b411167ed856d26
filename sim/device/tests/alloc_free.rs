//! The steady-state submission paths allocate nothing: neither the host side (kernel arguments,
//! patching, submit, synchronize) nor the simulated device's command-processor thread.
//!
//! A counting global allocator (`hcq_testkit::counting_alloc`) counts every allocation, reallocation and zeroed allocation of
//! the whole process (all threads) while a measurement window is open.
//!
//! The file has no test harness (`harness = false` in `Cargo.toml`; `main` below runs the tests
//! one after another on this thread): the counters are process-wide, and libtest's threads
//! allocate while another test measures — a finished test's thread reports its result over a
//! channel after the next test has started. That made these tests fail now and then under
//! load ("2 heap allocations in 200 steady-state replays"). Without the harness, the only
//! threads are this one and the devices' own.

use hcq::engine::Engine;
use hcq::error::Result;
use hcq::queue::Field;
use hcq::soft::threaded::SoftConfig;
use hcq_sim::SimDevice;
// `allocations(f)`: the allocations of every thread made while `f` runs
use hcq_testkit::counting_alloc::{Counting, allocations_on_every_thread as allocations};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One measurement at a time: the count is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// A program that adds its one u64 kernel argument to a running sum (so a test can tell every
/// submission really ran, with the arguments it was given).
fn summing_program(dev: &SimDevice) -> (u64, std::sync::Arc<AtomicU64>) {
    let sum = std::sync::Arc::new(AtomicU64::new(0));
    let s = sum.clone();
    let prog = dev
        .register(8, move |args, _, _| {
            let mut a = [0u8; 8];
            a.copy_from_slice(args);
            s.fetch_add(u64::from_le_bytes(a), Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    (prog, sum)
}

/// Fill a kernarg block with `v` and patch command `cmd` of `q` to use it.
fn patch_args(hcq: &Engine, q: &mut hcq::queue::HwQueue, cmd: usize, v: u64) -> Result<()> {
    let ka = hcq.lock().kernargs(&v.to_le_bytes(), 8, 8)?;
    q.patch(cmd, Field::Kernargs, ka)
}

fn the_counting_allocator_sees_allocations_on_any_thread() {
    // the zero results below mean something only if the counter sees what it should
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let ((), n) = allocations(|| {
        let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(4));
        drop(v);
        std::thread::scope(|s| {
            s.spawn(|| drop(std::hint::black_box(Box::new(1u64))));
        });
    });
    assert!(n >= 2, "one Vec here and one Box on another thread, counted {n}");
}

/// `rounds` submit + synchronize rounds after a warm-up; `pause` between rounds lets the
/// command processor go from spinning on its doorbell to sleeping on the register file.
fn steady_submits(cfg: &SoftConfig, rounds: u64, pause: Option<std::time::Duration>) {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dev = SimDevice::new("SIM", cfg).unwrap();
    let hcq = dev.engine();
    let (prog, sum) = summing_program(&dev);
    let mut q = hcq.queue().unwrap();
    q.exec(prog, 0, [1; 3], [1; 3]).unwrap();
    let mut expect = 0;
    let mut round = |i: u64| {
        patch_args(hcq, &mut q, 1, i).unwrap();
        submit!(hcq, 0, &mut q).unwrap();
        hcq.synchronize().unwrap();
        expect += i;
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
    };
    // warm-up: first submissions grow what grows once (the register file's write table,
    // lazily initialised clocks, the queue's closing signal)
    for i in 0..rounds / 5 {
        round(i);
    }
    let ((), n) = allocations(|| {
        for i in 0..rounds {
            round(rounds + i);
        }
    });
    assert_eq!(sum.load(Ordering::Relaxed), expect, "every submission ran with its own arguments");
    assert_eq!(n, 0, "{n} heap allocations in {rounds} steady-state submit + synchronize rounds");
}

fn steady_state_submit_and_synchronize_allocate_nothing() {
    steady_submits(&SoftConfig::default(), 1000, None);
}

fn steady_state_submits_that_wrap_ring_and_kernarg_pool_allocate_nothing() {
    // 1000 rounds of 21 ring words and 8 kernarg bytes wrap a 1 KiB ring ~80 times and a 1 KiB
    // kernarg pool ~8 times
    let cfg = SoftConfig { ring_bytes: 1024, kernarg_bytes: 1024, max_in_flight: 8, ..SoftConfig::default() };
    steady_submits(&cfg, 1000, None);
}

fn submits_that_wake_a_sleeping_command_processor_allocate_nothing() {
    // the CP spins on its doorbell for 200 µs after work, then sleeps on the register file's
    // condition variable: each round here finds it asleep
    steady_submits(&SoftConfig::default(), 50, Some(std::time::Duration::from_millis(1)));
}

fn replaying_a_captured_100_command_queue_with_patches_allocates_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dev = SimDevice::with_defaults("SIM").unwrap();
    let hcq = dev.engine();
    let (prog, sum) = summing_program(&dev);
    let mut q = hcq.queue().unwrap();
    for _ in 0..100 {
        q.exec(prog, 0, [1; 3], [1; 3]).unwrap();
    }
    let mut expect = 0;
    let mut replay = |r: u64| {
        // commands 1..=100 are the execs (0 is the timeline wait)
        for c in 1..=100u64 {
            patch_args(hcq, &mut q, c as usize, r * 1000 + c).unwrap();
            expect += r * 1000 + c;
        }
        submit!(hcq, 0, &mut q).unwrap();
        hcq.synchronize().unwrap();
    };
    for r in 0..20 {
        replay(r);
    }
    let ((), n) = allocations(|| {
        for r in 20..220 {
            replay(r);
        }
    });
    assert_eq!(sum.load(Ordering::Relaxed), expect, "every exec ran with its patched arguments");
    assert_eq!(n, 0, "{n} heap allocations in 200 steady-state replays of 100 commands");
}

fn deferred_frees_of_memory_in_flight_allocate_nothing_in_steady_state() {
    use hcq::allocator::{Allocator, BufferSpec};
    use hcq::device::Device;
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let h = hcq_sim::SimHandle::open("SIM").unwrap();
    let (alloc, hcq) = (h.allocator(), h.sim().engine());
    let spec = BufferSpec::default();
    let mut q = hcq.queue().unwrap();
    q.memory_barrier().unwrap();
    // each round: a submission the device holds, 64 blocks freed after it (parked), the device
    // released, the blocks retired to the cache and handed out again next round
    let mut round = || {
        h.sim().faults().stop_reading(true);
        let v = submit!(hcq, 0, &mut q).unwrap();
        for _ in 0..64 {
            let m = alloc.alloc(4096, &spec).unwrap();
            assert!(alloc.free_after(m, &spec, v).is_ok());
        }
        assert_eq!(alloc.pending_frees(), 64, "the device has not passed the stamp");
        h.sim().faults().stop_reading(false);
        hcq.synchronize().unwrap();
        assert_eq!(alloc.retire(), 64);
    };
    for _ in 0..3 {
        round();
    }
    let ((), n) = allocations(|| {
        for _ in 0..20 {
            round();
        }
    });
    assert_eq!(n, 0, "{n} heap allocations in 20 rounds of 64 deferred frees");
}

fn main() {
    let tests: &[(&str, fn())] = &[
        (
            "the_counting_allocator_sees_allocations_on_any_thread",
            the_counting_allocator_sees_allocations_on_any_thread,
        ),
        ("steady_state_submit_and_synchronize_allocate_nothing", steady_state_submit_and_synchronize_allocate_nothing),
        (
            "steady_state_submits_that_wrap_ring_and_kernarg_pool_allocate_nothing",
            steady_state_submits_that_wrap_ring_and_kernarg_pool_allocate_nothing,
        ),
        (
            "submits_that_wake_a_sleeping_command_processor_allocate_nothing",
            submits_that_wake_a_sleeping_command_processor_allocate_nothing,
        ),
        (
            "replaying_a_captured_100_command_queue_with_patches_allocates_nothing",
            replaying_a_captured_100_command_queue_with_patches_allocates_nothing,
        ),
        (
            "deferred_frees_of_memory_in_flight_allocate_nothing_in_steady_state",
            deferred_frees_of_memory_in_flight_allocate_nothing_in_steady_state,
        ),
    ];
    for (name, test) in tests {
        test();
        println!("alloc_free: {name}: ok");
    }
}
