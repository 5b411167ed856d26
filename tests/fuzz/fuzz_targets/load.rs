//! Fuzz the whole bundle load path on the CPU device: the input's checksums are recomputed
//! (so mutations reach past the CRCs), then `Hcqb::parse` (structure and semantic rules),
//! `check_limits` (every size against the device), buffer allocation and filling, ELF loading
//! and relocation of every program into executable memory, and kernel-argument capture — all
//! of `hcq_cpu::model::load_within`, on a fresh CPU device per input. Nothing is called (a mutated object's
//! code must not run). Every input must give `Ok` or a clean error; a panic, abort, overflow or
//! an allocation past the budget is a bug. From the repository root:
//!
//! ```sh
//! mkdir -p tests/fuzz/corpus/load && cp tests/data/bundles-bad/*.hcqb tests/fuzz/corpus/load/
//! for b in elementwise mlp chain100 wide; do cargo hcq pack examples/$b -o tests/fuzz/corpus/load/$b.hcqb; done
//! cargo +nightly fuzz run --fuzz-dir tests/fuzz load tests/fuzz/corpus/load -- -max_total_time=300 -rss_limit_mb=2048
//! ```
#![no_main]

use hcq::device::DeviceLimits;
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_cpu::device::{CpuDevice, cpu_limits};
use hcq_runner::Backend as _;

use libfuzzer_sys::fuzz_target;

/// The memory budget of one load: well under libFuzzer's RSS limit, so a size that got past
/// the limits check and then allocated would be caught as an out-of-memory crash.
const BUDGET: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    // Inputs whose header or sections lie outside the file cannot be resealed; parse them as is.
    let _ = hcqb::reseal(&mut bytes);
    let Ok(file) = Hcqb::parse(&bytes) else { return };
    let Some(arch) = hcq_cpu::model::host_arch() else { return };
    let limits = DeviceLimits { memory_bytes: BUDGET, max_alloc_bytes: BUDGET, ..cpu_limits() };
    if let Err(e) = file.check_limits(&limits) {
        assert!(matches!(e.root(), hcq::Error::LimitExceeded { .. }), "check_limits gave {e}");
        return;
    }
    let Ok(dev) = CpuDevice::new("CPU", 2) else { return };
    if let Ok(model) = hcq_cpu::model::load_within(dev, &file, arch, true, &limits) {
        // A file with one graph per target loads the graph of the CPU's objects: one address
        // per buffer of that graph (not of the whole file: an AMD bundle's graphs differ).
        let graph = file.for_archs(model.backend().archs()).expect("a loaded file has a graph for its device");
        assert_eq!(model.backend().buffer_addrs().len(), graph.n_buffers());
    }
});
