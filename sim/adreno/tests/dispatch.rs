//! The shader core's dispatch on several threads: work-groups spread over threads write the same
//! bytes as one thread does, a fault in the last work-group writes nothing, and byte stores of
//! different work-groups into one dword (made on different threads) leave the bytes no
//! work-group wrote as they were; small work-groups packed into shared waves split over threads
//! at whole waves.

mod common;

use common::*;
use hcq_sim_adreno::{Ir3Dispatch, PageFaults};

/// One thread, and several (spread whatever the work-group cost).
fn cores() -> (Ir3Dispatch, Ir3Dispatch) {
    (Ir3Dispatch::new().with_threads(1), Ir3Dispatch::new().with_threads(4).with_parallel_min_steps(0))
}

#[test]
fn work_groups_on_several_threads_write_the_bytes_one_thread_writes() {
    let (groups, local) = (37u32, 64u32);
    let shader = program(6, 2, 3);
    let n = (groups * local) as usize;
    let (mut one, mut many) = cores();
    let (mut a, mut b) = (memory(4 * n), memory(4 * n));
    dispatch(&mut one, &shader, groups, local, &mut a).unwrap();
    dispatch(&mut many, &shader, groups, local, &mut b).unwrap();
    let want: Vec<u8> = (0..n as u32).flat_map(|i| (i ^ 0x55).to_le_bytes()).collect();
    assert!(bytes(&a) == want, "one thread");
    assert!(bytes(&b) == want, "several threads");
    assert_eq!(one.lane_instructions(), many.lane_instructions());
    assert_eq!(one.lane_instructions(), 8 * n as u64);
    // The same core again (its threads' interpreters and overlays reused).
    let mut c = memory(4 * n);
    dispatch(&mut many, &shader, groups, local, &mut c).unwrap();
    assert!(bytes(&c) == want);
    assert_eq!(many.dispatches(), 2);
}

#[test]
fn a_fault_in_the_last_work_group_writes_nothing() {
    let (groups, local) = (37u32, 64u32);
    let shader = program(6, 2, 3);
    let n = (groups * local) as usize;
    for mut core in [cores().0, cores().1] {
        // One dword short: the last lane of the last work-group stores outside the allocation.
        let mut mem = memory(4 * (n - 1));
        let e = dispatch(&mut core, &shader, groups, local, &mut mem).unwrap_err().to_string();
        assert!(e.contains("nothing of the dispatch written") && e.contains("work-group [36, 0, 0]"), "{e}");
        assert!(bytes(&mem).iter().all(|b| *b == 0xee), "a faulting dispatch wrote memory");
        assert_eq!(core.dispatches(), 0);
    }
}

#[test]
fn under_kgsl_default_page_fault_policy_the_store_outside_is_dropped_and_the_rest_lands() {
    let (groups, local) = (37u32, 64u32);
    let shader = program(6, 2, 3);
    let n = (groups * local) as usize;
    let (one, many) = cores();
    for mut core in [one, many].map(|c| c.with_page_faults(PageFaults::Terminate)) {
        // One dword short, as above: only the last lane's store lies outside the allocation.
        let mut mem = memory(4 * (n - 1));
        dispatch(&mut core, &shader, groups, local, &mut mem).unwrap();
        let want: Vec<u8> = (0..n as u32 - 1).flat_map(|i| (i ^ 0x55).to_le_bytes()).collect();
        assert!(bytes(&mem) == want, "every store inside the allocation landed");
        assert_eq!((core.dispatches(), core.terminated()), (1, 1), "one store terminated, the dispatch finished");
        // A dispatch with every store inside adds none.
        let mut mem = memory(4 * n);
        dispatch(&mut core, &shader, groups, local, &mut mem).unwrap();
        assert_eq!((core.dispatches(), core.terminated()), (2, 1));
    }
}

#[test]
fn byte_stores_of_different_work_groups_into_one_dword_keep_the_other_bytes() {
    // 63 work-groups of one fiber; work-group g stores one byte at 2g: dword k holds the bytes of
    // work-groups 2k and 2k + 1, and bytes 1 and 3 are never written. With 4 threads the
    // work-groups after the first split at 16, 32 and 47: dword 23 (work-groups 46 and 47) is
    // written by two threads. (A barrier keeps the work-groups in waves of their own: packed 64
    // to a wave, they would all run in one.)
    let groups = 63u32;
    let shader = program_unpacked(0, 1, 7);
    let (mut one, mut many) = cores();
    let (mut a, mut b) = (memory(4 * 32), memory(4 * 32));
    dispatch(&mut one, &shader, groups, 1, &mut a).unwrap();
    dispatch(&mut many, &shader, groups, 1, &mut b).unwrap();
    let mut want = vec![0xee; 4 * 32];
    for g in 0..groups as usize {
        want[2 * g] = (g as u8) ^ 0x55;
    }
    assert!(bytes(&a) == want, "one thread: {:x?}", bytes(&a));
    assert!(bytes(&b) == want, "several threads: {:x?}", bytes(&b));
}

/// One-fiber work-groups (tinygrad's NOLOCALS kernels), which the interpreter packs 64 to a wave:
/// 255 of them, the first wave on the calling thread and the other three on three threads, write
/// what one thread writes and count the same lane-instructions; a fault in work-group 200 names
/// that work-group on both, at the program's first dispatch and at a later one, and writes
/// nothing.
#[test]
fn packed_work_groups_on_several_threads_write_the_bytes_one_thread_writes() {
    let groups = 255u32;
    let shader = program(0, 2, 3);
    let n = groups as usize;
    let (mut one, mut many) = cores();
    let (mut a, mut b) = (memory(4 * n), memory(4 * n));
    dispatch(&mut one, &shader, groups, 1, &mut a).unwrap();
    dispatch(&mut many, &shader, groups, 1, &mut b).unwrap();
    let want: Vec<u8> = (0..n as u32).flat_map(|i| (i ^ 0x55).to_le_bytes()).collect();
    assert!(bytes(&a) == want, "one thread");
    assert!(bytes(&b) == want, "several threads");
    assert_eq!(one.lane_instructions(), many.lane_instructions());
    assert_eq!(one.lane_instructions(), 8 * n as u64);
    // Fresh cores, and the two that know the program's cost from the dispatch above (they
    // split from the start).
    let (a, b) = cores();
    for mut core in [a, b, one, many] {
        let mut mem = memory(4 * 200);
        let e = dispatch(&mut core, &shader, groups, 1, &mut mem).unwrap_err().to_string();
        assert!(e.contains("nothing of the dispatch written") && e.contains("work-group [200, 0, 0]"), "{e}");
        assert!(bytes(&mem).iter().all(|b| *b == 0xee), "a faulting dispatch wrote memory");
    }
}
