//! The host's share of one `AMD:SIM` call (hcq-kfd's backend over the simulated KFD), with the
//! `QCOM:SIM` peer in the same run.
//!
//! AMD: the time the calling thread spends in `AmdBackend::submit_call` — patching the timeline
//! wait and signal of the captured PM4 queue, storing the words that changed into a free IB
//! slot (the core engine's IB pool), the device write barrier, the 4-dword `INDIRECT_BUFFER`
//! packet into the KFD compute ring, the write pointer to the queue's wptr memory and doorbell —
//! for each call after the previous one completed, so the simulated GPU's CP thread is idle (its
//! shader work is not the host's). The whole call (submit and wait, through the CP thread's
//! doorbell polling) beside it.
//!
//! QCOM (the same bundle's a630 graph on the simulated KGSL with a shader core that does
//! nothing, as `cargo bench -p hcq-sim-adreno --bench qcom -- nothing` measures it): its
//! simulated KGSL runs the CP inside `GPU_COMMAND`, so its host share is the time minus the
//! simulated GPU's (`SimKgsl::busy_ns`): of `submit_call` (the figure comparable to AMD's), and of
//! the whole call (the figure of PERFORMANCE.md's QCOM rows).
//!
//! Medians of 2000 calls after 200 warm ones, AMD and QCOM alternating in rounds of 250.
//! `cargo bench -p hcq-sim-amd --bench host_share` (`HCQ_HOST_SHARE_BUNDLE=mlp`: another bundle
//! of `examples/amd/` and `examples/`). Under `cargo test --benches` it runs 3 calls of each and
//! checks them.

use hcq_bundle::hcqb::{self, Hcqb};
use hcq_kfd::{AmdBackend, AmdDevice};
use hcq_qcom::device::{QcomBackend, QcomDevice};
use hcq_runner::Runner;
use hcq_sim_adreno::cp::NoShader;
use hcq_sim_adreno::kgsl::SimKgsl;
use hcq_sim_amd::{GpuConfig, SimKfd};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench_mode = args.iter().any(|a| a == "--bench");
    let name = std::env::var("HCQ_HOST_SHARE_BUNDLE").unwrap_or_else(|_| "chain100".into());
    let (warm, rounds, per_round) = if bench_mode { (200, 8, 250) } else { (0, 1, 3) };
    host_share(&name, warm, rounds, per_round);
}

fn bundle(dir: &str) -> Vec<u8> {
    hcqb::write(&hcq_bundle::v1::import_dir(hcq_testkit::example(dir)).unwrap()).unwrap()
}

fn median(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    v[v.len() / 2] as f64 / 1e3
}

fn host_share(name: &str, warm: usize, rounds: usize, per_round: usize) {
    let amd_bytes = bundle(&format!("amd/{name}"));
    let sim = Arc::new(SimKfd::new(GpuConfig::default()));
    let dev = AmdDevice::open("AMD:SIM", sim).unwrap();
    let mut amd = Runner::load(AmdBackend::new(dev), &Hcqb::parse(&amd_bytes).unwrap()).unwrap();
    amd.call().unwrap();
    assert!(amd.check().unwrap().ok, "{name}: the first AMD call checks");

    let qcom_bytes = bundle(name);
    let kgsl = Arc::new(SimKgsl::new(Box::new(NoShader)));
    let qdev = QcomDevice::with_backend("QCOM:SIM", kgsl.clone(), false).unwrap();
    let mut qcom = Runner::load(QcomBackend::new(qdev).unwrap(), &Hcqb::parse(&qcom_bytes).unwrap()).unwrap();

    for _ in 0..warm {
        amd.call().unwrap();
        qcom.call().unwrap();
    }
    let n = rounds * per_round;
    let (mut a_submit, mut a_call) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut q_submit, mut q_call) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..rounds {
        for _ in 0..per_round {
            let t = Instant::now();
            let stamp = amd.backend_mut().submit_call().unwrap();
            let s = t.elapsed().as_nanos() as u64;
            amd.backend().wait(stamp).unwrap();
            a_call.push(t.elapsed().as_nanos() as u64);
            a_submit.push(s);
        }
        for _ in 0..per_round {
            let busy0 = kgsl.busy_ns();
            let t = Instant::now();
            let stamp = qcom.backend_mut().submit_call().unwrap();
            let s = (t.elapsed().as_nanos() as u64).saturating_sub(kgsl.busy_ns() - busy0);
            qcom.backend().wait(stamp).unwrap();
            let c = (t.elapsed().as_nanos() as u64).saturating_sub(kgsl.busy_ns() - busy0);
            q_submit.push(s);
            q_call.push(c);
        }
    }
    assert!(amd.check().unwrap().ok, "{name}: still right after {n} AMD calls");
    let (s, c) = (median(&mut a_submit), median(&mut a_call));
    let (qs, qc) = (median(&mut q_submit), median(&mut q_call));
    let k = amd.kernels_per_call();
    println!(
        "\nAMD:SIM host share per call ({name}, {k} dispatches, median of {n}): {s:.2} us to submit \
         ({:.3} us per dispatch); the whole call {c:.2} us (the simulated CP thread's doorbell polling \
         and its shader work included)",
        s / k as f64
    );
    println!(
        "QCOM:SIM in the same run ({name}, {} dispatches, shader core off, GPU time taken out): {qs:.2} us \
         to submit, {qc:.2} us of the whole call; AMD/QCOM submit {:.2}x",
        qcom.kernels_per_call(),
        s / qs
    );
}
