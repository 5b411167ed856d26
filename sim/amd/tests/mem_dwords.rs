//! The shader core's dword accesses (`Memory::read_dwords` / `write_dwords`, the interpreter's
//! whole-dword loads and stores) read and write what the byte accesses (`read` / `write`) do:
//! aligned or not, inside one allocation, across two adjacent ones, at an edge, unmapped.

use hcq_rdna3::exec::Memory;
use hcq_sim_amd::GpuMemory;

/// Allocations of 4096 bytes at 0x10_0000, 98 bytes right after it (not a multiple of 4: its
/// last word is half outside), 4096 bytes a page later (unmapped), random contents.
fn memory(seed: u64) -> GpuMemory {
    let m = GpuMemory::new();
    let a = m.alloc(Some(0x10_0000), 4096).unwrap();
    let b = m.alloc(Some(0x10_1000), 98).unwrap();
    let c = m.alloc(Some(0x10_3000), 4096).unwrap();
    let mut x = seed;
    for (va, n) in [(a, 4096u64), (b, 98), (c, 4096)] {
        let bytes: Vec<u8> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        m.write(va, &bytes).unwrap();
    }
    m.unmap(c).unwrap();
    m
}

fn snapshot(m: &GpuMemory) -> Vec<u8> {
    let mut v = vec![0u8; 4096 + 98];
    m.host_read(0x10_0000, &mut v[..4096]).unwrap();
    m.host_read(0x10_1000, &mut v[4096..]).unwrap();
    v
}

#[test]
fn dword_accesses_are_the_byte_accesses() {
    let addrs: Vec<u64> = [
        0u64,
        4,
        8,
        1,
        2,
        3,
        4080,
        4084,
        4088,
        4092,
        4093,
        4095,
        4096 + 84,
        4096 + 88,
        4096 + 90,
        4096 + 92,
        4096 + 94,
        4096 + 96,
    ]
    .iter()
    .map(|o| 0x10_0000 + o)
    .chain([0x10_2ffc, 0x10_3000, 0x10_3004, 0x0, u64::MAX - 7])
    .collect();
    for (k, &va) in addrs.iter().enumerate() {
        for n in 1..=4usize {
            let (bytes, words) = (memory(k as u64 + 1), memory(k as u64 + 1));
            let (mut vb, mut vw) = (bytes.view(), words.view());
            // Reads.
            let mut b = vec![0u8; 4 * n];
            let mut w = vec![0u32; n];
            let ok = Memory::read(&mut vb, va, &mut b);
            assert_eq!(vw.read_dwords(va, &mut w), ok, "read {n} dwords at {va:#x}");
            if ok {
                let want: Vec<u32> = b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
                assert_eq!(w, want, "read {n} dwords at {va:#x}");
            }
            // Writes.
            let data: Vec<u32> = (0..n as u32).map(|i| 0xa5a5_0000 | i << 8 | k as u32).collect();
            let b: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
            let ok = Memory::write(&mut vb, va, &b);
            assert_eq!(vw.write_dwords(va, &data), ok, "write {n} dwords at {va:#x}");
            assert!(snapshot(&bytes) == snapshot(&words), "write {n} dwords at {va:#x}: memory differs");
        }
    }
}

/// A wave's gather (`gather_dwords`) reads what its lanes' byte reads read, lane by lane, and
/// stops at the same lane: addresses across both allocations, unaligned, at the edges, unmapped.
#[test]
fn a_gather_is_its_lanes_byte_reads() {
    let m = memory(99);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let pool: Vec<u64> =
        (0..4096 + 98 + 8).map(|o| 0x10_0000 + o).chain([0x10_2ffc, 0x10_3000, 0x10_3004, 0x0, u64::MAX - 7]).collect();
    for trial in 0..3000 {
        let lanes = if trial % 2 == 0 { 32 } else { 64 };
        // Every fourth wave all aligned inside the first allocation, its last words included.
        let inside = trial % 4 == 3;
        let addrs: Vec<u64> = (0..lanes)
            .map(|_| {
                let r = next();
                match if inside { 0 } else { r % 10 } {
                    // Aligned inside the first allocation, now and then anywhere in the pool.
                    0..=6 if inside && r % 5 == 0 => 0x10_1000 - 4 * (1 + (r >> 8) % 4),
                    0..=6 => 0x10_0000 + (r >> 8) % 1024 * 4,
                    7 => 0x10_1000 + (r >> 8) % 25 * 4,
                    _ => pool[(r >> 8) as usize % pool.len()],
                }
            })
            .collect();
        let exec = match trial % 3 {
            0 => u64::MAX,
            _ => next(),
        } & if lanes == 32 { 0xffff_ffff } else { u64::MAX };
        let n = 1 + trial % 4;
        let mut view = m.view();
        let mut got = vec![0u32; 4 * lanes];
        let r = view.gather_dwords(&addrs, exec, n, &mut got);
        // Lane by lane through the byte reads.
        let mut want = vec![0u32; 4 * lanes];
        let mut stop = Ok(());
        for l in (0..lanes).filter(|&l| exec >> l & 1 == 1) {
            let mut b = vec![0u8; 4 * n];
            if !Memory::read(&mut view, addrs[l], &mut b) {
                stop = Err(l);
                break;
            }
            for k in 0..n {
                want[k * lanes + l] = u32::from_le_bytes(b[4 * k..4 * k + 4].try_into().unwrap());
            }
        }
        assert_eq!(r, stop, "trial {trial}");
        assert!(got == want, "trial {trial}: dwords differ");
    }
}
