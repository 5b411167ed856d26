//! The host's share of one `AMD:SIM` call (hcq-kfd's backend over the simulated KFD): the time
//! the calling thread spends submitting a captured call — patching the timeline wait and signal
//! of the captured PM4 queue, copying its words into the KFD compute queue's ring with volatile
//! stores, the device write barrier, the write pointer to the queue's wptr memory and doorbell —
//! measured around `AmdBackend::submit_call` for each call after the previous one completed, so
//! the simulated GPU's CP thread is idle (its shader work is not the host's). Medians of 2000
//! calls after 200; the whole call (submit and wait, through the CP thread's doorbell polling)
//! beside it.
//!
//! `cargo bench -p hcq-sim-amd --bench host_share` (`HCQ_HOST_SHARE_BUNDLE=amd/mlp`: another
//! bundle of `examples/`). Under `cargo test --benches` it runs 3 calls of chain100 and checks
//! them.

use hcq_bundle::hcqb::{self, Hcqb};
use hcq_kfd::{AmdBackend, AmdDevice};
use hcq_runner::Runner;
use hcq_sim_amd::{GpuConfig, SimKfd};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench_mode = args.iter().any(|a| a == "--bench");
    let name = std::env::var("HCQ_HOST_SHARE_BUNDLE").unwrap_or_else(|_| "amd/chain100".into());
    let (warm, n) = if bench_mode { (200, 2000) } else { (0, 3) };
    host_share(&name, warm, n);
}

fn host_share(name: &str, warm: usize, n: usize) {
    let model = hcq_bundle::v1::import_dir(hcq_testkit::example(name)).unwrap();
    let bytes = hcqb::write(&model).unwrap();
    let sim = Arc::new(SimKfd::new(GpuConfig::default()));
    let dev = AmdDevice::open("AMD:SIM", sim).unwrap();
    let mut m = Runner::load(AmdBackend::new(dev), &Hcqb::parse(&bytes).unwrap()).unwrap();
    m.call().unwrap();
    assert!(m.check().unwrap().ok, "{name}: the first call checks");
    for _ in 0..warm {
        m.call().unwrap();
    }
    let (mut submit, mut call) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        let stamp = m.backend_mut().submit_call().unwrap();
        let s = t.elapsed().as_nanos() as u64;
        m.backend().wait(stamp).unwrap();
        call.push(t.elapsed().as_nanos() as u64);
        submit.push(s);
    }
    assert!(m.check().unwrap().ok, "{name}: still right after {n} calls");
    let med = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / 1e3
    };
    let (s, c) = (med(&mut submit), med(&mut call));
    let k = m.kernels_per_call();
    println!(
        "\nAMD:SIM host share per call ({name}, {k} dispatches, median of {n}): {s:.2} us to submit \
         ({:.3} us per dispatch); the whole call {c:.2} us (the simulated CP thread's doorbell polling \
         and its shader work included)",
        s / k as f64
    );
}
