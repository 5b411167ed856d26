//! Allocator hot paths: bump allocation (kernel-argument and command rings) and range
//! allocate/free with about 100 live blocks (device heap / VA space).

use divan::{Bencher, black_box};
use hcq::memory::{BumpAllocator, RangeAllocator};

fn main() {
    divan::main();
}

/// A small xorshift generator: deterministic, allocation-free request sizes.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One 200-byte, 16-aligned allocation from a wrapping 16 MiB ring (wraps every ~80k calls).
#[divan::bench]
fn bump_alloc(bencher: Bencher) {
    let mut ring = BumpAllocator::new(16 << 20, 0x7000_0000, true);
    bencher.bench_local(|| ring.alloc(black_box(200), black_box(16)));
}

/// Free the oldest of 100 live blocks and allocate a new one (4 KiB..68 KiB, 256-aligned) in
/// a 1 GiB range: one free with coalescing plus one good-fit allocation per iteration.
#[divan::bench]
fn range_free_alloc_100_live(bencher: Bencher) {
    let mut heap = RangeAllocator::new(0x1_0000_0000, 1 << 30);
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut live: Vec<u64> = (0..100).map(|_| heap.alloc(4096 + rng.next() % 65536, 256).unwrap()).collect();
    let mut i = 0usize;
    bencher.bench_local(|| {
        let slot = i % live.len();
        i += 1;
        heap.free(live[slot]).unwrap();
        live[slot] = heap.alloc(black_box(4096 + rng.next() % 65536), 256).unwrap();
    });
}
