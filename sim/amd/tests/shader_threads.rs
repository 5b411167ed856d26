//! The shader core's threads: whatever the threads, a faulting dispatch reports its lowest
//! faulting work-group and the work-groups below it wrote what one thread writes. (That the
//! threads are kept between dispatches: `tests/shader_pool.rs`, a process of its own.)

mod common;

#[path = "common/shader_program.rs"]
mod shader_program;
use shader_program::*;

use common::*;
use hcq_rdna3::exec::FaultKind;
use hcq_sim_amd::{QueueState, What};

/// 2,000 work-groups into a 4 KiB buffer: those from 1,024 on store outside it. On 1, 2 and 4
/// threads the fault is work-group 1,024's, and every work-group below it stored its id.
#[test]
fn a_faulting_dispatch_reports_its_lowest_faulting_work_group_on_any_threads() {
    for threads in [1, 2, 4] {
        for _ in 0..5 {
            let gpu = gpu(threads);
            let m = gpu.memory();
            let mut ring = compute_ring(&gpu, 256);
            // out is the last allocation: nothing mapped after it.
            let (code, out) = load(&gpu);
            ring.submit(&gpu, &dispatch(code, out, 2000));
            gpu.process();
            let f = match ring.state(&gpu) {
                QueueState::Faulted(f) => f,
                s => panic!("{threads} threads: {s:?}"),
            };
            match f.what {
                What::Shader { fault, .. } => {
                    assert_eq!(fault.group, [1024, 0, 0], "{threads} threads: {fault}");
                    assert_eq!(fault.lane, Some(0));
                    assert_eq!(fault.addr, out + 4096);
                    assert!(matches!(fault.kind, FaultKind::Memory { write: true, bytes: 4 }));
                }
                w => panic!("{threads} threads: {w:?}"),
            }
            // The work-groups below the fault all ran (a thread stops claiming once one faults,
            // but the fault is the lowest: no lower work-group was left unclaimed).
            let mut got = vec![0u32; 1024];
            for (k, x) in got.iter_mut().enumerate() {
                *x = m.read_u32(out + 4 * k as u64).unwrap();
            }
            assert!(got.iter().enumerate().all(|(k, &x)| x == k as u32), "{threads} threads");
        }
    }
}
