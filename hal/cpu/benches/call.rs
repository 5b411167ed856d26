//! Cost of calling a loaded kernel: chain100's `E_4_4` (16 floats, `out = in + 1`) called through
//! its function pointer from executable memory, against a Rust function doing the same add,
//! called directly (not inlined). The ratio `loaded_kernel / rust_direct` is the overhead of
//! the indirect call into loaded code (plus any codegen difference). `load_object` is the
//! one-time cost of parse + mmap + relocate + mprotect + munmap.
//!
//! Run: `cargo bench -p hcq-cpu --bench call`.

use divan::{Bencher, black_box};
use hcq_cpu::Machine;
use hcq_cpu::exec::{LoadedObject, default_resolver};

fn main() {
    divan::main();
}

const X86: &[u8] = include_bytes!("../../../examples/chain100/prog_000_E_4_4.o");
const A64: &[u8] = include_bytes!("../../../examples/chain100/prog_000_E_4_4.aarch64.o");

fn object() -> &'static [u8] {
    match Machine::host() {
        Machine::X86_64 => X86,
        Machine::Aarch64 => A64,
    }
}

#[repr(C, align(16))]
struct F16([f32; 16]);

type Kernel = unsafe extern "C" fn(*mut f32, *const f32);

#[divan::bench]
fn loaded_kernel(bencher: Bencher) {
    let kernel = LoadedObject::load(object(), Machine::host(), "E_4_4", &default_resolver).unwrap();
    // SAFETY: E_4_4(float* restrict out, float* restrict in), 16 floats each.
    let f: Kernel = unsafe { kernel.as_fn() };
    let input = F16(core::array::from_fn(|i| i as f32));
    let mut out = F16([0.0; 16]);
    bencher.bench_local(|| {
        // SAFETY: both buffers are 16 aligned floats and outlive the call.
        unsafe { black_box(f)(black_box(out.0.as_mut_ptr()), black_box(input.0.as_ptr())) }
    });
    assert_eq!(out.0[3], 4.0);
}

/// The same computation in Rust, out of line. Reference parameters carry `noalias`, so LLVM
/// vectorises it like clang does the `restrict` C kernel.
#[inline(never)]
fn add_one_16(out: &mut [f32; 16], input: &[f32; 16]) {
    for (o, i) in out.iter_mut().zip(input) {
        *o = i + 1.0;
    }
}

#[divan::bench]
fn rust_direct(bencher: Bencher) {
    let input = F16(core::array::from_fn(|i| i as f32));
    let mut out = F16([0.0; 16]);
    bencher.bench_local(|| add_one_16(black_box(&mut out.0), black_box(&input.0)));
    assert_eq!(out.0[3], 4.0);
}

#[divan::bench(sample_count = 200)]
fn load_object() -> LoadedObject {
    LoadedObject::load(black_box(object()), Machine::host(), "E_4_4", &default_resolver).unwrap()
}
