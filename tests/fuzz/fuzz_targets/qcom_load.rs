//! Fuzz the whole bundle path on `QCOM:SIM`: the input's checksums are recomputed (so mutations
//! reach past the CRCs), then `Hcqb::parse`, the limits check, `hcq_runner::Runner::load` on
//! the QCOM backend (a630 program validation, constant-block layout, PM4 capture) and one call:
//! the captured queue runs on the simulated CP and every dispatch's (mutated) shader on the ir3
//! interpreter — safe to run, unlike a mutated CPU object. Every input must give `Ok` or a clean
//! error; a panic, abort, overflow or an allocation past the budget is a bug.
//!
//! ```sh
//! mkdir -p tests/fuzz/corpus/qcom_load
//! for b in elementwise mlp chain100; do cargo hcq pack examples/$b -o tests/fuzz/corpus/qcom_load/$b.hcqb; done
//! cargo +nightly fuzz run --fuzz-dir tests/fuzz qcom_load tests/fuzz/corpus/qcom_load -- -max_total_time=300 -rss_limit_mb=2048
//! ```
#![no_main]

use hcq::device::DeviceLimits;
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_qcom::device::QcomBackend;
use hcq_runner::Runner;
use hcq_sim_adreno::dispatch::Ir3Dispatch;
use libfuzzer_sys::fuzz_target;

/// The memory budget of one load (checked before anything is allocated).
const BUDGET: u64 = 64 << 20;
/// Wave-instructions one dispatch may run (a mutated loop becomes a clean fault).
const STEPS: u64 = 20_000;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    let _ = hcqb::reseal(&mut bytes);
    let Ok(file) = Hcqb::parse(&bytes) else { return };
    let Ok(dev) = hcq_sim_adreno::open_with(Ir3Dispatch::with_max_steps(STEPS), false) else { return };
    // The device's own GPU limits (the simulator's), under this target's memory budget.
    let limits = DeviceLimits {
        memory_bytes: BUDGET,
        max_alloc_bytes: BUDGET,
        alloc_align: 4096,
        max_kernel_args: 64,
        max_grid: [u32::MAX; 3],
    };
    if file.check_limits(&limits).is_err() || hcq_qcom::device::check_limits(&file, &dev.gpu_limits(), 64).is_err() {
        return;
    }
    let Ok(backend) = QcomBackend::new(dev) else { return };
    if let Ok(mut m) = Runner::load(backend, &file) {
        backend_timeout(&mut m);
        let _ = m.call();
        let _ = m.check();
    }
});

/// A mutated wait may never be satisfied: wait 10 ms, not the default minute.
fn backend_timeout(m: &mut Runner<QcomBackend>) {
    m.backend_mut().set_timeout_ms(10);
}
