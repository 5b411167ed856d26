//! Hazard tracking on one buffer holding about 1,000 live ranges (a suballocated arena shared
//! by many kernels).

use divan::{Bencher, black_box};
use hcq::deps::{Access, DepsTracker};

fn main() {
    divan::main();
}

const RANGES: u64 = 1000;
const CHUNK: u64 = 256;

fn chunk(i: u64) -> (u64, u64) {
    let r = i % RANGES;
    (r * CHUNK, r * CHUNK + CHUNK)
}

/// 1,000 disjoint writer ranges; each iteration rewrites one of them (WAW on its writer).
#[divan::bench]
fn write_over_1k_writers(bencher: Bencher) {
    let mut t = DepsTracker::new();
    let mut out = Vec::with_capacity(16);
    for i in 0..RANGES {
        let (s, e) = chunk(i);
        t.access(&[Access::write(7, s, e)], i, &mut out).unwrap();
    }
    let mut k = RANGES;
    bencher.bench_local(|| {
        let (s, e) = chunk(k * 37);
        out.clear();
        t.access(black_box(&[Access::write(7, s, e)]), k, &mut out).unwrap();
        k += 1;
    });
    assert_eq!(t.live_ranges(), RANGES as usize);
}

/// 1,000 writer ranges plus about 1,000 reader ranges; each iteration is a kernel that reads
/// one range and writes another (RAW on both writers, WAR on the written range's reader).
#[divan::bench]
fn kernel_read_write_2k_live(bencher: Bencher) {
    let mut t = DepsTracker::new();
    let mut out = Vec::with_capacity(16);
    for i in 0..RANGES {
        let (s, e) = chunk(i);
        t.access(&[Access::write(7, s, e)], i, &mut out).unwrap();
        t.access(&[Access::read(7, s, e)], RANGES + i, &mut out).unwrap();
    }
    let mut k = 2 * RANGES;
    bencher.bench_local(|| {
        let (rs, re) = chunk(k * 37);
        let (ws, we) = chunk((k + 1) * 37);
        out.clear();
        t.access(black_box(&[Access::read(7, rs, re), Access::write(7, ws, we)]), k, &mut out).unwrap();
        k += 1;
    });
    assert!(t.live_ranges() >= 2 * RANGES as usize - 2);
}

/// 1,000 writer ranges; each iteration writes a range straddling two of them, so both are cut
/// and the list shifts (the cut-and-splice path). Converges to 2,000 half-size writers.
#[divan::bench]
fn straddling_write_1k_writers(bencher: Bencher) {
    let mut t = DepsTracker::new();
    let mut out = Vec::with_capacity(16);
    for i in 0..RANGES {
        let (s, e) = chunk(i);
        t.access(&[Access::write(7, s, e)], i, &mut out).unwrap();
    }
    let mut k = RANGES;
    bencher.bench_local(|| {
        let (s, e) = chunk(k * 37 % (RANGES - 1));
        out.clear();
        t.access(black_box(&[Access::write(7, s + CHUNK / 2, e + CHUNK / 2)]), k, &mut out).unwrap();
        k += 1;
    });
}
