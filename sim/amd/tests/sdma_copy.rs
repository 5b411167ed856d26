//! `COPY LINEAR` and `MemView::copy` as bulk copies: every relative alignment, ranges across
//! allocations, copies spread over the shader threads, overlapping copies (the same allocation or
//! two allocations of the same host pages) as the engine copied them before copies went direct,
//! and faults that write nothing.

mod common;

use common::sdma::copy;
use common::{config, sdma_ring};
use hcq_sim_amd::memory::{COPY_CHUNK_BYTES, SPREAD_MIN_BYTES};
use hcq_sim_amd::sdma::packets as sd;
use hcq_sim_amd::{Gpu, GpuConfig, GpuMemory, HostPages, MemFault, QueueState};
use std::sync::Arc;

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// How the engine copied before copies went direct: `COPY_CHUNK_BYTES` at a time through a
/// buffer, from the end down when `down`; over one host buffer `mem` (source at `s`, destination
/// at `d`, which may overlap).
fn chunked(mem: &mut [u8], s: usize, d: usize, n: usize, down: bool) {
    let mut done = 0;
    while done < n {
        let k = (n - done).min(COPY_CHUNK_BYTES);
        let off = if down { n - done - k } else { done };
        let buf = mem[s + off..s + off + k].to_vec();
        mem[d + off..d + off + k].copy_from_slice(&buf);
        done += k;
    }
}

/// Every source and destination offset in a word, lengths 0 to 9 and longer, with bytes either
/// side of the destination untouched.
#[test]
fn every_alignment_and_length_copies_exactly_the_bytes() {
    let m = GpuMemory::new();
    let a = m.alloc(None, 1 << 16).unwrap();
    let b = m.alloc(None, 1 << 16).unwrap();
    let src = pattern(1 << 16, 7);
    m.write(a, &src).unwrap();
    let fill = vec![0xa5u8; 1 << 16];
    for n in (0..=9).chain([31, 64, 1000, 4097]) {
        for so in 0..4 {
            for d0 in 0..4 {
                m.write(b, &fill).unwrap();
                let (s, d) = (a + 100 + so, b + 200 + d0);
                m.view().copy(s, d, n, false, None).unwrap();
                let mut got = vec![0u8; n as usize + 16];
                m.read(d - 8, &mut got).unwrap();
                let n = n as usize;
                assert_eq!(&got[..8], &[0xa5; 8], "before: n {n} src +{so} dst +{d0}");
                assert_eq!(&got[8..8 + n], &src[100 + so as usize..][..n], "n {n} src +{so} dst +{d0}");
                assert_eq!(&got[8 + n..], &[0xa5; 8], "after: n {n} src +{so} dst +{d0}");
            }
        }
    }
}

/// A copy whose source spans two adjacent allocations and whose destination spans two others
/// (at other boundaries).
#[test]
fn ranges_across_adjacent_allocations() {
    let m = GpuMemory::new();
    let s0 = m.alloc(Some(0x10_0000), 0x3000).unwrap();
    m.alloc(Some(0x10_3000), 0x5000).unwrap();
    let d0 = m.alloc(Some(0x20_0000), 0x1000).unwrap();
    m.alloc(Some(0x20_1000), 0x7000).unwrap();
    let src = pattern(0x8000, 3);
    m.write(s0, &src).unwrap();
    m.view().copy(s0 + 0x1001, d0 + 0x802, 0x5000, false, None).unwrap();
    let mut got = vec![0u8; 0x5000];
    m.read(d0 + 0x802, &mut got).unwrap();
    assert_eq!(got, &src[0x1001..0x6001]);
}

/// A large copy spreads over the shader threads (4 and 2) and moves the same bytes as on one,
/// at every relative alignment.
#[test]
fn a_spread_copy_moves_every_byte() {
    let n = SPREAD_MIN_BYTES as usize + 12345;
    let src = pattern(n + 8, 11);
    for threads in [1, 2, 4] {
        let gpu = Gpu::new(GpuConfig { shader_threads: threads, ..config() });
        let m = gpu.memory();
        let a = m.alloc(None, n as u64 + 8).unwrap();
        let b = m.alloc(None, n as u64 + 8).unwrap();
        m.write(a, &src).unwrap();
        let mut ring = sdma_ring(&gpu, 4096);
        for (so, d0) in [(0, 0), (1, 3), (3, 0)] {
            m.write(b, &vec![0; n + 8]).unwrap();
            ring.submit(&gpu, &copy(b + d0, a + so, n as u32));
            gpu.process();
            assert_eq!(ring.state(&gpu), QueueState::Idle);
            let mut got = vec![0u8; n + 8];
            m.read(b, &mut got).unwrap();
            let d0 = d0 as usize;
            assert_eq!(&got[d0..d0 + n], &src[so as usize..so as usize + n], "{threads} threads, +{so} → +{d0}");
            assert!(got[..d0].iter().chain(&got[d0 + n..]).all(|&x| x == 0), "{threads} threads: outside untouched");
        }
    }
}

/// Overlapping copies in one allocation, up and down, shorter and longer than a chunk, with and
/// without the header's `backwards` bit: the bytes the chunked engine left.
#[test]
fn overlapping_copies_give_what_the_chunked_engine_gave() {
    let big = 3 * COPY_CHUNK_BYTES + 999;
    let size = big + 2 * COPY_CHUNK_BYTES;
    for threads in [1, 4] {
        let gpu = Gpu::new(GpuConfig { shader_threads: threads, ..config() });
        let m = gpu.memory();
        let buf = m.alloc(None, size as u64).unwrap();
        let mut ring = sdma_ring(&gpu, 4096);
        let init = pattern(size, 5);
        for (s, d, n) in [(0, 16, 256), (16, 0, 256), (0, 1, big), (1, 0, big), (5, 40_003, big), (40_003, 5, big)] {
            for backwards in [false, true] {
                m.write(buf, &init).unwrap();
                let mut w = copy(buf + d as u64, buf + s as u64, n as u32);
                if backwards {
                    w[0] |= sd::COPY_BACKWARDS;
                }
                ring.submit(&gpu, &w);
                gpu.process();
                assert_eq!(ring.state(&gpu), QueueState::Idle);
                let mut want = init.clone();
                chunked(&mut want, s, d, n, backwards || (d > s && d < s + n));
                let mut got = vec![0u8; size];
                m.read(buf, &mut got).unwrap();
                assert!(got == want, "{threads} threads: {s} → {d}, {n} bytes, backwards {backwards}");
            }
        }
        // A short upward overlap is memmove.
        m.write(buf, &init).unwrap();
        ring.submit(&gpu, &copy(buf + 16, buf, 256));
        gpu.process();
        let mut got = vec![0u8; 256];
        m.read(buf + 16, &mut got).unwrap();
        assert_eq!(got, &init[..256]);
    }
}

/// Two allocations of the same host pages overlap in host memory though their addresses do not:
/// the copy goes through the buffer, as before.
#[test]
fn copies_between_aliases_of_the_same_pages() {
    let size = 3 * COPY_CHUNK_BYTES;
    let pages = Arc::new(HostPages::new(size as u64).unwrap());
    let m = GpuMemory::new();
    let (x, y) = (0x100_0000_0000u64, 0x200_0000_0000u64);
    m.adopt(x, &pages, 0, size as u64).unwrap();
    m.adopt(y, &pages, 0, size as u64).unwrap();
    m.map(x).unwrap();
    m.map(y).unwrap();
    let init = pattern(size, 9);
    let n = 2 * COPY_CHUNK_BYTES + 7;
    for (s, d) in [(0usize, 3usize), (3, 0), (0, 4096), (4096, 0)] {
        for down in [false, true] {
            m.write(x, &init).unwrap();
            // Source through one alias, destination through the other: `down` only when asked
            // (the addresses are far apart).
            m.view().copy(x + s as u64, y + d as u64, n as u64, down, None).unwrap();
            let mut want = init.clone();
            chunked(&mut want, s, d, n, down);
            let mut got = vec![0u8; size];
            m.read(x, &mut got).unwrap();
            assert!(got == want, "{s} → {d} down {down}");
        }
    }
}

/// A copy reaching unmapped memory faults on the first unmapped byte (source first) and writes
/// nothing, spread or not.
#[test]
fn faults_name_the_first_unmapped_byte_and_write_nothing() {
    let n = SPREAD_MIN_BYTES * 2;
    let m = GpuMemory::new();
    let a = m.alloc(Some(0x1000_0000), n).unwrap();
    let b = m.alloc(Some(0x2000_0000), n).unwrap();
    // Adjacent to b, allocated but not mapped.
    m.allocate(Some(0x2000_0000 + n), 4096).unwrap();
    m.write(a, &pattern(n as usize, 1)).unwrap();
    let zero = |m: &GpuMemory| {
        let mut got = vec![0u8; n as usize];
        m.read(b, &mut got).unwrap();
        got.iter().all(|&x| x == 0)
    };
    let pool = rayon_core_pool();
    for pool in [None, Some(&pool)] {
        let f = m.view().copy(a + 8, b, n, false, pool).unwrap_err();
        assert_eq!(f, MemFault { va: a + n, start: a + 8, len: n, write: false });
        let f = m.view().copy(a, b + 100, n, false, pool).unwrap_err();
        assert_eq!(f, MemFault { va: b + n, start: b + 100, len: n, write: true });
        // Both bad: the source is named.
        let f = m.view().copy(a + 1, b + 1, n, false, pool).unwrap_err();
        assert!(!f.write);
        // Wrapping the address space.
        let f = m.view().copy(a, u64::MAX - 10, 100, false, pool).unwrap_err();
        assert_eq!((f.va, f.write), (u64::MAX - 10, true));
        assert!(zero(&m), "nothing written");
    }
}

fn rayon_core_pool() -> rayon_core::ThreadPool {
    rayon_core::ThreadPoolBuilder::new().num_threads(3).build().unwrap()
}
