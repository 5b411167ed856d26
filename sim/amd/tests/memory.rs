//! GPU memory: allocation, mapping, faults, and words shared between threads.

use hcq_sim_amd::memory::{AUTO_VA_BASE, PAGE};
use hcq_sim_amd::{GpuMemory, MemError, MemFault};

#[test]
fn allocations_at_chosen_and_picked_addresses() {
    let m = GpuMemory::new();
    let a = m.alloc(Some(0x1_0000_0000), 100).unwrap();
    assert_eq!(a, 0x1_0000_0000);
    let b = m.alloc(None, 5000).unwrap();
    let c = m.alloc(None, 1).unwrap();
    assert!(b >= AUTO_VA_BASE && b.is_multiple_of(PAGE));
    assert_eq!(c, b + 2 * PAGE, "picked a page apart, after the last");
    assert_eq!(m.used(), 5101);
    assert_eq!(m.alloc(Some(0x1_0000_0000 + 4096), 1).unwrap(), 0x1_0000_1000);
    assert!(matches!(m.alloc(Some(0x1_0000_0000), 1), Err(MemError::Overlap { other: 0x1_0000_0000, .. })));
    assert!(matches!(m.alloc(Some(0x1234), 1), Err(MemError::Misaligned { .. })));
    assert!(matches!(m.alloc(Some(0), 1), Err(MemError::OutOfRange { .. })));
    assert!(matches!(m.alloc(Some(1 << 48), 1), Err(MemError::OutOfRange { .. })));
    assert!(matches!(m.alloc(None, 0), Err(MemError::Empty { .. })));
    m.free(b).unwrap();
    assert_eq!(m.alloc(None, 4096).unwrap(), b, "a freed range is found again");
    assert!(matches!(m.free(b + 8), Err(MemError::NotAllocated { .. })));
    let small = GpuMemory::with_limit(1 << 20);
    assert!(matches!(small.alloc(None, 2 << 20), Err(MemError::OutOfMemory { .. })));
}

#[test]
fn accesses_outside_mapped_memory_fault_naming_the_first_unmapped_byte() {
    let m = GpuMemory::new();
    let a = m.alloc(Some(0x10_0000), 4096).unwrap();
    let mut b = [0u8; 8];
    assert_eq!(m.read(a + 4092, &mut b), Err(MemFault { va: a + 4096, start: a + 4092, len: 8, write: false }));
    m.write_u32(a + 4092, 0x1122_3344).unwrap();
    assert_eq!(m.write(a + 4094, &[9; 4]), Err(MemFault { va: a + 4096, start: a + 4094, len: 4, write: true }));
    assert_eq!(m.read_u32(a + 4092).unwrap(), 0x1122_3344, "a faulting write writes nothing");
    // Adjacent allocations are one range.
    let n = m.alloc(Some(a + 4096), 4096).unwrap();
    m.write(a + 4094, &[9; 4]).unwrap();
    assert_eq!(m.read_u32(n).unwrap() & 0xffff, 0x0909);
    // Unmapped: the GPU faults, the host still reaches it.
    m.unmap(n).unwrap();
    assert!(m.read_u32(n).is_err());
    let mut h = [0u8; 2];
    m.host_read(n, &mut h).unwrap();
    assert_eq!(h, [9, 9]);
    m.host_write(n, &[1, 2]).unwrap();
    m.map(n).unwrap();
    assert_eq!(m.read_u32(n).unwrap() & 0xffff, 0x0201);
    assert_eq!(m.allocation(n + 5), Some((n, 4096, true)));
}

#[test]
fn unaligned_and_byte_accesses_change_only_their_bytes() {
    let m = GpuMemory::new();
    let a = m.alloc(None, 64).unwrap();
    m.write(a, &[0xff; 16]).unwrap();
    m.write(a + 3, &[1, 2, 3, 4, 5, 6]).unwrap();
    let mut b = [0u8; 12];
    m.read(a, &mut b).unwrap();
    assert_eq!(b, [0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 0xff, 0xff, 0xff]);
}

/// Threads storing bytes and shorts into the same words never lose each other's stores.
#[test]
fn concurrent_byte_stores_to_one_word_keep_every_byte() {
    let m = GpuMemory::new();
    let a = m.alloc(None, 4096).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let m = &m;
            s.spawn(move || {
                let mut v = m.view();
                for round in 0..2000u32 {
                    for w in 0..16u64 {
                        v.write(a + 4 * w + u64::from(t), &[t.wrapping_add(round as u8)]).unwrap();
                    }
                }
            });
        }
    });
    for w in 0..16 {
        let got = m.read_u32(a + 4 * w).unwrap().to_le_bytes();
        let want: Vec<u8> = (0..4u8).map(|t| t.wrapping_add(1999u32 as u8)).collect();
        assert_eq!(got.to_vec(), want, "word {w}");
    }
}

/// A view taken before a free still reaches the freed allocation; a new view does not.
#[test]
fn a_view_keeps_what_it_saw() {
    let m = GpuMemory::new();
    let a = m.alloc(None, 4096).unwrap();
    m.write_u32(a, 7).unwrap();
    let mut v = m.view();
    m.free(a).unwrap();
    assert_eq!(v.read_u32(a).unwrap(), 7);
    assert!(m.view().read_u32(a).is_err());
}
