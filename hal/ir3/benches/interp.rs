//! Interpreter throughput on the bundles' a630 shaders, in lane-instructions per second (one
//! lane executing one instruction = 1; (rptN) counts N+1). Run with
//! `cargo bench -p hcq-ir3 --bench interp`; needs `../shared` only for the shared bundles
//! (these use the copies in `examples/` and `benches/bundles/`).

#[path = "../tests/common/mod.rs"]
mod common;

use divan::Bencher;
use divan::counter::ItemsCount;

fn main() {
    divan::main();
}

fn bench_bundle(bencher: Bencher, name: &str) {
    // the samples in examples/, the benchmark bundles (matmul, convnet) in benches/bundles/
    let root = common::repo_root();
    let dir = [root.join("examples").join(name), root.join("benches/bundles").join(name)]
        .into_iter()
        .find(|d| d.join("manifest.json").is_file())
        .unwrap_or_else(|| panic!("no bundle {name}"));
    let mut b = common::load_bundle(&dir);
    let launches = common::launches(&b);
    let mut it = hcq_ir3::exec::Interp::new();
    let stats = common::run_launches(&mut b, &launches, &mut it).unwrap();
    bencher
        .counter(ItemsCount::new(stats.lane_instructions))
        .bench_local(|| common::run_launches(&mut b, &launches, &mut it).unwrap());
}

/// mlp: three reduction kernels (ldg, mad.f32, shared memory, barriers, predication).
#[divan::bench]
fn mlp(bencher: Bencher) {
    bench_bundle(bencher, "mlp");
}

/// elementwise: one 1024×4 kernel of SFU-heavy float math.
#[divan::bench]
fn elementwise(bencher: Bencher) {
    bench_bundle(bencher, "elementwise");
}

/// matmul (`benches/bundles/matmul`): relu(x·w + b), 192×192, one kernel of 4×8 work-groups of
/// 8×16 fibers (ldg-heavy mad.f32 loops).
#[divan::bench(sample_count = 20)]
fn matmul(bencher: Bencher) {
    bench_bundle(bencher, "matmul");
}

/// convnet (`benches/bundles/convnet`): two 3×3 convolutions with ReLU and max-pooling, a linear
/// layer and log-softmax (7 kernels; the convolutions dominate).
#[divan::bench(sample_count = 20)]
fn convnet(bencher: Bencher) {
    bench_bundle(bencher, "convnet");
}
