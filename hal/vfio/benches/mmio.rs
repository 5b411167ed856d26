//! Cost of a register read through a [`BarMapping`] (the `register!` path and the plain
//! `MmioBus::read`) against a raw `read_volatile` of the same word. On the host the "BAR" is an
//! anonymous shared page ([`BarMapping::host_memory`]): this measures the software layers (bounds
//! and alignment checks, width dispatch), not the bus. Goal: no measurable overhead.

use divan::{Bencher, black_box};
use hcq::mmio::{MmioBus, Width};
use hcq_vfio::BarMapping;
use hcq_vfio::edu::ID;

fn main() {
    divan::main();
}

#[divan::bench]
fn raw_read_volatile_u32(b: Bencher) {
    let bar = BarMapping::host_memory(4096).unwrap();
    let p = bar.base().as_ptr().cast::<u32>();
    // SAFETY: `p` is the start of a live, page-aligned 4 KiB mapping owned by `bar`.
    b.bench_local(|| unsafe { core::ptr::read_volatile(black_box(p)) });
}

#[divan::bench]
fn bar_mapping_read_u32(b: Bencher) {
    let bar = BarMapping::host_memory(4096).unwrap();
    b.bench_local(|| bar.read(black_box(0), Width::U32).unwrap());
}

#[divan::bench]
fn register_read_through_bar(b: Bencher) {
    let bar = BarMapping::host_memory(4096).unwrap();
    b.bench_local(|| ID::read(black_box(&*bar)).unwrap().raw());
}

#[divan::bench]
fn bar_mapping_write_u32(b: Bencher) {
    let bar = BarMapping::host_memory(4096).unwrap();
    b.bench_local(|| bar.write(black_box(4), Width::U32, black_box(7)).unwrap());
}

#[divan::bench]
fn raw_write_volatile_u32(b: Bencher) {
    let bar = BarMapping::host_memory(4096).unwrap();
    // SAFETY: offset 4 of a live 4 KiB mapping owned by `bar`.
    let p = unsafe { bar.base().as_ptr().add(4).cast::<u32>() };
    // SAFETY: as above.
    b.bench_local(|| unsafe { core::ptr::write_volatile(black_box(p), black_box(7)) });
}
