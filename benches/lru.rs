//! Allocator hot paths: a cached `LruAllocator` round trip (alloc hit + free), the same through
//! a `Buffer` (create, allocate, drop), an uncached host allocation, and kernel-argument packing.

use divan::Bencher;
use hcq::DType;
use hcq::allocator::{Allocator, BufferSpec, HostAllocator, LruAllocator};
use hcq::program::{KernargLayout, Param, ParamKind};
use std::hint::black_box;

fn main() {
    divan::main();
}

/// alloc from a warm cache + free back into it: the steady state of a runtime reusing buffers.
#[divan::bench(args = [64, 4096, 1 << 20])]
fn cached_round_trip(bencher: Bencher, size: u64) {
    let lru = LruAllocator::new("CPU", Box::new(HostAllocator::new()));
    let spec = BufferSpec::default();
    let warm = lru.alloc(size, &spec).unwrap();
    lru.free(warm, &spec);
    bencher.bench_local(|| {
        let m = lru.alloc(black_box(size), &spec).unwrap();
        lru.free(black_box(m), &spec);
    });
}

/// A cached round trip while other sizes and specs sit in the cache (a deeper map to search).
#[divan::bench]
fn cached_round_trip_busy_cache(bencher: Bencher) {
    let lru = LruAllocator::new("CPU", Box::new(HostAllocator::new()));
    let spec = BufferSpec::default();
    for i in 1..64u64 {
        for s in [spec, BufferSpec { host: true, ..spec }] {
            let m = lru.alloc(i * 256, &s).unwrap();
            lru.free(m, &s);
        }
    }
    bencher.bench_local(|| {
        let m = lru.alloc(black_box(8192), &spec).unwrap();
        lru.free(black_box(m), &spec);
    });
}

/// An uncached host allocation (`nolru`): what a cache miss costs.
#[divan::bench(args = [4096, 1 << 20])]
fn uncached_host_round_trip(bencher: Bencher, size: u64) {
    let lru = LruAllocator::new("CPU", Box::new(HostAllocator::new()));
    let spec = BufferSpec { nolru: true, ..Default::default() };
    bencher.bench_local(|| {
        let m = lru.alloc(black_box(size), &spec).unwrap();
        lru.free(black_box(m), &spec);
    });
}

/// Pack 3 pointers and 2 values (a typical elementwise kernel with a size argument).
#[divan::bench]
fn kernarg_pack(bencher: Bencher) {
    let p = |slot, dtype, kind| Param { name: None, slot, dtype, shape: Vec::new(), kind };
    let sig = [
        p(0, DType::F32, ParamKind::Buffer),
        p(1, DType::F32, ParamKind::Buffer),
        p(2, DType::F32, ParamKind::Buffer),
        p(3, DType::I32, ParamKind::Value),
        p(4, DType::I64, ParamKind::Value),
    ];
    let layout = KernargLayout::new(&sig).unwrap();
    let mut out = [0u8; 64];
    bencher
        .bench_local(|| layout.pack(black_box(&[0x1000, 0x2000, 0x3000]), black_box(&[1024, 7]), black_box(&mut out)));
}
