//! The RDNA3 interpreter's throughput on tinygrad's own kernels (`tests/data/kernels`), in
//! lane-instructions per second (one lane executing one vector instruction = 1; a scalar
//! instruction counts 0). Run with `cargo bench -p hcq-amd --bench interp`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::Case;
use divan::Bencher;
use divan::counter::ItemsCount;

fn main() {
    divan::main();
}

fn bench_case(bencher: Bencher, name: &str) {
    let path = hcq_testkit::root().join("hal/amd/tests/data/kernels").join(format!("{name}.json"));
    let mut c = Case::load(&path).unwrap();
    let st = c.run().unwrap();
    bencher.counter(ItemsCount::new(st.lane_insts)).bench_local(|| {
        c.reset();
        c.run().unwrap()
    });
}

/// matmul_f32: 64×64 @ 64×64 f32, 2 work-groups of 8×16 (global loads, v_fmac/VOPD loops).
#[divan::bench(sample_count = 20)]
fn matmul_f32(bencher: Bencher) {
    bench_case(bencher, "matmul_f32");
}

/// matmul_half_wmma: 64×64×64 f16 with f32 accumulation on v_wmma_f32_16x16x16_f16.
#[divan::bench(sample_count = 20)]
fn matmul_half_wmma(bencher: Bencher) {
    bench_case(bencher, "matmul_half_wmma");
}

/// conv2d: a small NCHW convolution, 3 work-groups of 8×4×4.
#[divan::bench(sample_count = 20)]
fn conv2d(bencher: Bencher) {
    bench_case(bencher, "conv2d");
}

/// softmax_0: a row reduction through LDS with barriers.
#[divan::bench(sample_count = 20)]
fn softmax_lds(bencher: Bencher) {
    bench_case(bencher, "softmax_0");
}
