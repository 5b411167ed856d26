//! Interpreter throughput on the bundles' a630 shaders, in lane-instructions per second (one
//! lane executing one instruction = 1; (rptN) counts N+1). Run with
//! `cargo bench -p hcq-ir3 --bench interp`; needs `../shared` only for the shared bundles
//! (these use the copies in `examples/`).

#[path = "../tests/common/mod.rs"]
mod common;

use divan::Bencher;
use divan::counter::ItemsCount;

fn main() {
    divan::main();
}

fn bench_bundle(bencher: Bencher, name: &str) {
    let dir = common::repo_root().join("examples").join(name);
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
