//! A steady-state `Runner::call()` of a CPU runner (`CpuRunner`) allocates nothing, on any thread.
//!
//! A counting global allocator wraps the system allocator and counts every `alloc`,
//! `alloc_zeroed` and `realloc` in the process — the test thread, the device's
//! command-processor threads and the core-id workers alike. The sample bundles are loaded and
//! warmed up, then 1000 calls must leave the counters where they were.
//!
//! The file has no test harness (`harness = false` in `Cargo.toml`): the counters are
//! process-wide, and libtest's main thread allocates while a test runs — when a test finishes,
//! and when one has run for 60 seconds (its "has been running for over 60 seconds" notice). The
//! second made this test flaky under qemu-user, where the five models take more than a minute:
//! the notice landed in the last counting window ("wide on 2 core(s): 3 heap allocations (758
//! bytes)") about once in four runs. Without the harness, the only threads are this one and the
//! devices' own.
//!
//! Set `HCQ_ALLOC_TRACE=1` to print a backtrace for the first few allocations inside a counting
//! window (to find where a regression allocates).
/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

#[cfg(all(
    any(target_os = "linux", target_os = "macos"),
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(all(target_os = "macos", target_arch = "aarch64"))
))]
fn main() {
    supported::steady_state_model_calls_allocate_nothing_on_any_thread();

    println!("model_alloc: steady-state model calls allocate nothing on any thread: ok");
}

#[cfg(not(all(
    any(target_os = "linux", target_os = "macos"),
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(all(target_os = "macos", target_arch = "aarch64"))
)))]
fn main() {
    println!("model_alloc: the CPU device does not run on this host");
}

#[cfg(all(
    any(target_os = "linux", target_os = "macos"),
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(all(target_os = "macos", target_arch = "aarch64"))
))]
mod supported {

    use hcq::device::Device;
    use hcq::dtype::DType;
    use hcq::program::{Param, ParamKind, ProgramImage};
    use hcq_bundle::hcqb::{self, Hcqb};
    use hcq_cpu::device::CpuDevice;
    use hcq_cpu::model::host_arch;
    use hcq_testkit::counting_alloc::{Counting, allocations_and_bytes_on_every_thread, trace_next};
    use std::sync::Arc;

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Allocations (count, bytes) made by everything in the process while `f` runs.
    fn count_allocs(f: impl FnOnce()) -> (u64, u64) {
        let ((), n, b) = allocations_and_bytes_on_every_thread(f);
        (n, b)
    }

    fn bundle_bytes(name: &str) -> Vec<u8> {
        let model = hcq_bundle::v1::import_dir(hcq_testkit::example(name)).unwrap();
        hcqb::write(&model).unwrap()
    }

    /// Make every thread of `dev` do its work once: both engines' command-processor threads (an
    /// empty queue on each, submitted for the thread: model calls run inline on the caller) and
    /// the core-id workers (a `core_id` launch of the test kernel `fill`). A device's threads
    /// have started before `CpuDevice::new` returns (a thread that had never been scheduled owed
    /// std's one-time start-up, a copy of its name: the 7 bytes of "CPU-cp0" that once landed in
    /// a counting window on a busy machine); this covers anything lazy in their first command.
    fn start_every_thread(dev: &Arc<CpuDevice>) {
        let hcq = dev.soft().engine();
        for engine in [0, 1] {
            let mut q = hcq.queue().unwrap();
            let v = submit!(hcq, engine, &mut q).unwrap();
            hcq.wait(v).unwrap();
        }
        let suffix = if cfg!(target_arch = "aarch64") { ".aarch64.o" } else { ".o" };
        let obj = std::fs::read(format!("{}/tests/data/coreid/fill{suffix}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let param = |slot, name: Option<&str>, kind| Param {
            name: name.map(Into::into),
            slot,
            dtype: DType::I32,
            // the output buffer below: 4 ints per tid
            shape: vec![dev.cores() as u64 * 4],
            kind,
        };
        let prog = dev
            .load_program(&ProgramImage {
                name: "fill".into(),
                target: "CPU".into(),
                binary: Arc::from(obj),
                entry: "fill".into(),
                signature: vec![
                    param(0, None, ParamKind::Buffer),
                    param(1, Some("n"), ParamKind::Value),
                    param(2, Some("core_id"), ParamKind::Value),
                ],
            })
            .unwrap();
        let ddev: Arc<dyn Device> = dev.clone();
        let tids = dev.cores() as u32;
        let out = hcq::buffer::Buffer::new(ddev, u64::from(tids) * 4, DType::I32, Default::default()).unwrap();
        prog.call(&[&out], &[1, 0], [tids, 1, 1], [1; 3], true).unwrap();
    }

    /// Load `name` on a device with `cores` threads, warm it up, then count allocations over 1000
    /// calls; the outputs must still match the bundle afterwards (the calls did run).
    fn steady_state_allocs(name: &str, cores: usize) -> (u64, u64) {
        let bytes = bundle_bytes(name);
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = CpuDevice::new("CPU", cores).unwrap();
        let mut model = hcq_cpu::model::load(dev.clone(), &file, host_arch().unwrap(), false).unwrap();
        start_every_thread(&dev);
        for _ in 0..20 {
            model.call().unwrap();
        }
        trace_next(if std::env::var_os("HCQ_ALLOC_TRACE").is_some() { 8 } else { 0 });
        let mut failed = None;
        let counted = count_allocs(|| {
            for i in 0..1000 {
                if let Err(e) = model.call() {
                    failed = Some((i, e));
                    break;
                }
            }
        });
        trace_next(0);
        if let Some((i, e)) = failed {
            panic!("{name}: call {i} failed: {e}");
        }
        let rep = model.check().unwrap();
        assert!(rep.ok, "{name}: outputs after 1000 calls do not match the bundle: {rep:?}");
        counted
    }

    pub fn steady_state_model_calls_allocate_nothing_on_any_thread() {
        // The counter sees allocations made on other threads (else a zero below proves nothing).
        let (n, b) = count_allocs(|| {
            std::thread::spawn(|| std::hint::black_box(vec![0u8; 100])).join().unwrap();
        });
        assert!(n >= 1 && b >= 100, "the counting allocator missed a worker thread's allocation ({n}, {b})");

        // chain100: 100 launches per call through the ring; mlp: 3 kernels with weights; wide:
        // core_id kernels run inline (1 core) and fanned out over a worker thread (2 cores). The
        // output check after the 1000 calls also catches core_id launches that stop running their
        // tids after the first call (the 1-core fan-out once never reset its tid counter).
        for (name, cores) in [("chain100", 1), ("chain100", 2), ("mlp", 2), ("wide", 1), ("wide", 2)] {
            let (n, b) = steady_state_allocs(name, cores);
            assert_eq!(
                (n, b),
                (0, 0),
                "{name} on {cores} core(s): 1000 steady-state calls made {n} heap allocations ({b} bytes); \
             rerun with HCQ_ALLOC_TRACE=1 to see where"
            );
        }
    }
}
