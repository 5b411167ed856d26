//! Host cost per dispatch on `QCOM:SIM`: one call of a bundle through `hcq::runner::Runner` and
//! `QcomBackend` — patch the captured PM4 queue, copy it to the IB object, `GPU_COMMAND`, the
//! simulated CP running every packet, the ir3 interpreter running every shader, the timestamp
//! wait. Items = dispatches, so divan's throughput is dispatches per second.

use divan::Bencher;
use divan::counter::ItemsCount;
use hcq::bundle::hcqb::{self, Hcqb};
use hcq::runner::Runner;
use hcq_kgsl::device::{QcomBackend, QcomDevice};

fn main() {
    divan::main();
}

fn bench_bundle(b: Bencher, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    let bytes = hcqb::write(&hcq::bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = hcq_sim_adreno::open(false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    assert!(m.check().unwrap().ok);
    let n = m.kernels_per_call();
    b.counter(ItemsCount::new(n)).bench_local(|| m.call().unwrap());
}

/// 100 dispatches of a 16-element add (the shader is tiny: mostly the host path).
#[divan::bench(sample_count = 50)]
fn qcom_sim_call_chain100(b: Bencher) {
    bench_bundle(b, "chain100");
}

/// One dispatch of 4096 elements (exp2, rcp: the interpreter dominates).
#[divan::bench(sample_count = 50)]
fn qcom_sim_call_elementwise(b: Bencher) {
    bench_bundle(b, "elementwise");
}

/// chain100 with a shader core that does nothing: the host cost of one call through the core
/// engine's IB shape (patch the timeline wait and signal, copy the IB into a free slot with
/// 32-bit volatile stores, device write barrier, `GPU_COMMAND`, the simulated CP decoding 100
/// dispatches, the timeline wait).
#[divan::bench(sample_count = 50)]
fn qcom_sim_call_chain100_no_shader(b: Bencher) {
    use hcq_sim_adreno::cp::{ComputeState, Dispatch, GpuMemory};
    use hcq_sim_adreno::kgsl::SimKgsl;
    use std::sync::Arc;
    struct Nop;
    impl Dispatch for Nop {
        fn dispatch(&mut self, _s: &ComputeState<'_>, _mem: &mut dyn GpuMemory) -> hcq::Result<()> {
            Ok(())
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chain100");
    let bytes = hcqb::write(&hcq::bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let sim = Arc::new(SimKgsl::new(Box::new(Nop)));
    let dev = QcomDevice::with_backend("QCOM:SIM", sim, false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    b.counter(ItemsCount::new(m.kernels_per_call())).bench_local(|| m.call().unwrap());
}
