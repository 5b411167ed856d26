//! The shader core's atomics (`Memory::atomic` on `MemView`): threads, each with its own view,
//! adding to one aligned dword, one qword and one unaligned dword lose no update; an atomic
//! touching an unmapped byte writes nothing and says so.

use hcq_rdna3::exec::Memory;
use hcq_sim_amd::GpuMemory;

#[test]
fn atomics_of_many_threads_lose_no_update() {
    let m = GpuMemory::new();
    let va = m.alloc(Some(0x10_0000), 4096).unwrap();
    let (threads, each) = (4u64, 20_000u64);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let mut v = m.view();
            s.spawn(move || {
                for _ in 0..each {
                    v.atomic(va, 4, &|x| x.wrapping_add(1)).unwrap();
                    v.atomic(va + 8, 8, &|x| x.wrapping_add((1 << 32) | 1)).unwrap();
                    v.atomic(va + 17, 4, &|x| (x + 3) & 0xffff_ffff).unwrap();
                }
            });
        }
    });
    assert_eq!(m.read_u32(va).unwrap(), (threads * each) as u32);
    assert_eq!(m.read_u64(va + 8).unwrap(), ((threads * each) << 32) | (threads * each));
    let mut b = [0u8; 4];
    m.read(va + 17, &mut b).unwrap();
    assert_eq!(u32::from_le_bytes(b), (3 * threads * each) as u32);
}

#[test]
fn an_atomic_past_the_allocation_writes_nothing() {
    let m = GpuMemory::new();
    let va = m.alloc(Some(0x10_0000), 4096).unwrap();
    m.write_u32(va + 4092, 7).unwrap();
    let mut v = m.view();
    assert_eq!(v.atomic(va + 4092, 8, &|x| x + 1), None);
    assert_eq!(v.atomic(va + 4096, 4, &|x| x + 1), None);
    assert_eq!(m.read_u32(va + 4092).unwrap(), 7);
    assert_eq!(v.atomic(va + 4092, 4, &|x| x + 1), Some(7));
    assert_eq!(m.read_u32(va + 4092).unwrap(), 8);
}
