//! Every way a queue stops: each gives a report naming the queue, where the packet is and what
//! went wrong, raised on the event table as a memory or hardware exception — and the other
//! queues keep running.

mod common;

use common::*;
use hcq_rdna3::exec::FaultKind;
use hcq_sim_amd::cp::pm4::*;
use hcq_sim_amd::cp::regs::*;
use hcq_sim_amd::sdma::packets as sd;
use hcq_sim_amd::{Engine, Gpu, GpuConfig, QueueFault, QueueState, What, Where};
use std::time::Duration;

fn fault_of(gpu: &Gpu, ring: &Ring) -> QueueFault {
    match ring.state(gpu) {
        QueueState::Faulted(f) => f,
        s => panic!("queue {} is {s:?}, not faulted", ring.id()),
    }
}

/// Submit `words` to a fresh compute queue next to a healthy one; the fault, after checking the
/// healthy queue still runs and the faulted one ignores its doorbell.
fn compute_fault(gpu: &Gpu, words: &[u32]) -> QueueFault {
    let mut bad = compute_ring(gpu, 256);
    let mut good = compute_ring(gpu, 256);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    bad.submit(gpu, words);
    gpu.process();
    let f = fault_of(gpu, &bad);
    assert_eq!(f.queue, bad.id());
    good.submit(gpu, &signal(buf, 0x600d));
    bad.submit(gpu, &signal(buf + 4, 0xbad));
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf).unwrap(), 0x600d, "the other queue keeps running");
    assert_eq!(gpu.memory().read_u32(buf + 4).unwrap(), 0, "the faulted queue runs nothing more");
    assert_eq!(fault_of(gpu, &bad), f, "the report stays");
    f
}

fn hw_raised(gpu: &Gpu, f: &QueueFault) {
    let hw = gpu.events().hw_exceptions();
    assert!(hw.iter().any(|e| &e.fault == f), "the fault is raised as a hardware exception: {hw:?}");
}

#[test]
fn an_unknown_opcode_stops_the_queue_naming_it() {
    let gpu = Gpu::new(config());
    let mut w = pkt(NOP, &[0]);
    w.extend(pkt(0x37, &[0, 0, 0])); // WRITE_DATA: defined, not simulated
    let f = compute_fault(&gpu, &w);
    assert_eq!(f.at, Where::Ring { ptr: 2, index: 2 });
    assert_eq!(f.header, Some(header(0x37, 2)));
    assert_eq!(f.what, What::UnknownOpcode { opcode: 0x37, sub_op: None, name: Some("WRITE_DATA") });
    assert!(f.to_string().contains("WRITE_DATA"), "{f}");
    hw_raised(&gpu, &f);
    let f = compute_fault(&gpu, &pkt(0xee, &[0]));
    assert_eq!(f.what, What::UnknownOpcode { opcode: 0xee, sub_op: None, name: None });
    let f = compute_fault(&gpu, &[0x0000_1234]);
    assert_eq!(f.what, What::NotType3 { ty: 0 });
}

#[test]
fn a_packet_longer_than_the_ring_holds_is_truncated() {
    let gpu = Gpu::new(config());
    // A SET_SH_REG claiming 9 body dwords with 2 written before the write pointer.
    let f = compute_fault(&gpu, &[header(SET_SH_REG, 8), 0x240]);
    assert_eq!(f.what, What::Truncated { need: 10, have: 2 });
    // The same inside an IB: the count runs past the IB's end.
    let ib = gpu.memory().alloc(None, 4096).unwrap();
    gpu.memory().write_words(ib, &[header(SET_SH_REG, 8), 0x240, 1, 2]).unwrap();
    let f = compute_fault(&gpu, &indirect(ib, 4, false));
    assert_eq!(f.at, Where::Ib { va: ib, dword: 0, level: 1 });
    assert_eq!(f.what, What::Truncated { need: 10, have: 4 });
}

#[test]
fn a_register_outside_its_window_is_refused() {
    let gpu = Gpu::new(config());
    let f = compute_fault(&gpu, &set_sh(SH_REG_END - 1, &[1, 2]));
    assert_eq!(f.what, What::Register { reg: u64::from(SH_REG_END - 1), count: 2, window: "SH (SET_SH_REG)" });
    let f = compute_fault(&gpu, &pkt(SET_UCONFIG_REG, &[0xffff, 1, 2]));
    assert!(matches!(f.what, What::Register { reg: 0x1_bfff, count: 2, .. }), "{f}");
    // A register wait on a register the CP cannot read.
    let f = compute_fault(&gpu, &pkt(WAIT_REG_MEM, &[FUNC_EQ, 0x1000, 0, 0, 0, 4]));
    assert!(matches!(f.what, What::Register { reg: 0x1000, .. }), "{f}");
}

#[test]
fn an_unmapped_address_is_a_memory_exception_naming_it() {
    let gpu = Gpu::new(config());
    let va = 0x7777_0000;
    let f = compute_fault(&gpu, &signal(va, 1));
    assert_eq!(f.memory(), Some((va, true)));
    assert!(matches!(f.what, What::Memory { what: "RELEASE_MEM's write", .. }), "{f}");
    let me = gpu.events().memory_exceptions();
    assert!(me.iter().any(|e| e.va == va && e.write && e.fault == f), "{me:?}");
    // An IB outside memory.
    let f = compute_fault(&gpu, &indirect(va, 16, false));
    assert_eq!(f.memory(), Some((va, false)));
    // An unmapped (but allocated) buffer is outside memory for the GPU too.
    let buf = gpu.memory().allocate(None, 4096).unwrap();
    let f = compute_fault(&gpu, &wait_mem(buf, 0, 0, FUNC_EQ));
    assert_eq!(f.memory(), Some((buf, false)));
}

#[test]
fn sdma_faults_name_their_packet_and_the_engine_keeps_others_running() {
    let gpu = Gpu::new(config());
    let good_buf = gpu.memory().alloc(None, 4096).unwrap();
    // Alone in its part of the address space: nothing mapped right after it.
    let src = gpu.memory().alloc(Some(0x5000_0000), 4096).unwrap();
    type Check = Box<dyn Fn(&QueueFault) -> bool>;
    let cases: Vec<(Vec<u32>, Check)> = vec![
        (sdma::copy(0x9999_0000, src, 64), Box::new(|f| f.memory() == Some((0x9999_0000, true)))),
        (sdma::copy(src, src + 4000, 200), Box::new(move |f| f.memory() == Some((src + 4096, false)))),
        (
            vec![sd::header(sd::OP_COPY, 4, 0), 0, 0, 0, 0, 0, 0],
            Box::new(|f| matches!(f.what, What::UnknownOpcode { opcode: 1, sub_op: Some(4), .. })),
        ),
        (
            vec![sd::header(11, 0, 0)],
            Box::new(|f| matches!(f.what, What::UnknownOpcode { name: Some("CONST_FILL"), .. })),
        ),
        (vec![sd::header(sd::OP_FENCE, 0, 0), 0], Box::new(|f| f.what == What::Truncated { need: 4, have: 2 })),
        (sdma::indirect(src, 8), Box::new(|f| matches!(&f.what, What::Malformed(s) if s.contains("8-dword boundary")))),
        (
            [vec![0, 0], sdma::indirect(src + 4, 8)].concat(),
            Box::new(|f| matches!(&f.what, What::Malformed(s) if s.contains("32-byte"))),
        ),
        (sdma::timestamp(src + 4), Box::new(|f| matches!(&f.what, What::Malformed(s) if s.contains("8-byte")))),
    ];
    for (k, (words, ok)) in cases.iter().enumerate() {
        let mut bad = sdma_ring(&gpu, 4096);
        let mut good = sdma_ring(&gpu, 4096);
        bad.submit(&gpu, words);
        good.submit(&gpu, &sdma::fence(good_buf, k as u32 + 1));
        gpu.process();
        let f = fault_of(&gpu, &bad);
        assert_eq!(f.engine, Engine::Sdma);
        assert!(ok(&f), "case {k}: {f}");
        assert_eq!(gpu.memory().read_u32(good_buf).unwrap(), k as u32 + 1, "case {k}: the other queue ran");
    }
    // An INDIRECT inside an IB.
    let ib = gpu.memory().alloc(None, 4096).unwrap();
    gpu.memory().write_words(ib, &[vec![0, 0], sdma::indirect(ib, 8)].concat()).unwrap();
    let mut bad = sdma_ring(&gpu, 4096);
    bad.submit(&gpu, &[vec![0, 0], sdma::indirect(ib, 8)].concat());
    gpu.process();
    let f = fault_of(&gpu, &bad);
    assert_eq!(f.at, Where::Ib { va: ib, dword: 2, level: 1 });
    assert!(matches!(&f.what, What::Malformed(s) if s.contains("inside an IB")), "{f}");
}

#[test]
fn ibs_deeper_than_ib2_are_refused() {
    let gpu = Gpu::new(config());
    let m = gpu.memory();
    let (ib1, ib2, ib3) = (m.alloc(None, 4096).unwrap(), m.alloc(None, 4096).unwrap(), m.alloc(None, 4096).unwrap());
    m.write_words(ib3, &pkt(NOP, &[0])).unwrap();
    m.write_words(ib2, &indirect(ib3, 2, false)).unwrap();
    m.write_words(ib1, &indirect(ib2, 4, false)).unwrap();
    let f = compute_fault(&gpu, &indirect(ib1, 4, false));
    assert_eq!(f.what, What::IbDepth { limit: 2 });
    assert_eq!(f.at, Where::Ib { va: ib2, dword: 0, level: 2 });
}

#[test]
fn an_ib_chaining_to_itself_exhausts_the_packet_budget() {
    let gpu = Gpu::new(GpuConfig { packet_budget: 10_000, ..config() });
    let ib = gpu.memory().alloc(None, 4096).unwrap();
    gpu.memory().write_words(ib, &indirect(ib, 4, true)).unwrap();
    let f = compute_fault(&gpu, &indirect(ib, 4, false));
    assert_eq!(f.what, What::Budget { packets: 10_000 });
}

#[test]
fn a_wait_that_never_holds_becomes_a_hang_report() {
    let gpu = Gpu::new(GpuConfig { hang_timeout: Some(Duration::from_millis(100)), ..config() });
    let mut ring = compute_ring(&gpu, 256);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    let mut w = signal(buf + 4, 1);
    w.extend(wait_mem(buf, 1, 1, FUNC_EQ));
    ring.submit(&gpu, &w);
    gpu.run_until_idle(Duration::from_secs(10));
    let f = fault_of(&gpu, &ring);
    assert_eq!(f.at, Where::Ring { ptr: 8, index: 8 }, "the wait packet");
    match &f.what {
        What::Hang { waited, what } => {
            assert!(*waited >= Duration::from_millis(100));
            assert!(what.contains(&format!("{buf:#x}")) && what.contains("last value 0x0"), "{what}");
        }
        w => panic!("{w:?}"),
    }
    hw_raised(&gpu, &f);
    // SDMA's poll the same way.
    let mut s = sdma_ring(&gpu, 4096);
    s.submit(&gpu, &sdma::poll(buf, 1, 1, FUNC_EQ));
    gpu.run_until_idle(Duration::from_secs(10));
    assert!(matches!(fault_of(&gpu, &s).what, What::Hang { .. }));
}

#[test]
fn a_bad_write_pointer_is_refused() {
    let gpu = Gpu::new(config());
    let ring = compute_ring(&gpu, 256);
    gpu.ring_doorbell(ring.id(), 257).unwrap();
    gpu.process();
    let f = fault_of(&gpu, &ring);
    assert_eq!(f.at, Where::Doorbell { value: 257 });
    assert!(matches!(&f.what, What::Pointer(s) if s.contains("more than the ring's 256 dwords")), "{f}");
    let s = sdma_ring(&gpu, 4096);
    gpu.ring_doorbell(s.id(), 6).unwrap();
    gpu.process();
    assert!(matches!(&fault_of(&gpu, &s).what, What::Pointer(m) if m.contains("multiple of 4")));
}

#[test]
fn release_mem_needs_an_eop_buffer() {
    use hcq_sim_amd::ComputeQueueDesc;
    let gpu = Gpu::new(config());
    let m = gpu.memory();
    let ring = m.alloc(None, 1024).unwrap();
    let ptrs = m.alloc(None, 4096).unwrap();
    let q = gpu
        .create_compute_queue(ComputeQueueDesc {
            ring,
            ring_bytes: 1024,
            rptr: ptrs,
            wptr: ptrs + 8,
            eop: 0,
            eop_bytes: 0,
        })
        .unwrap();
    let mut r = Ring { q, ring, dwords: 256, put: 0, rptr: ptrs, wptr: ptrs + 8, sdma: false };
    r.submit(&gpu, &signal(ptrs + 64, 1));
    gpu.process();
    assert!(matches!(&fault_of(&gpu, &r).what, What::Malformed(s) if s.contains("EOP buffer")));
}

/// The kernel cases with a broken setup: each fault names the program and what.
#[test]
fn dispatch_faults_name_the_program() {
    let gpu = Gpu::new(config());
    let path = kernels_dir().join("sum_all_f32.json");
    // LDS_SIZE left out of RSRC2 (the compiler's value; tinygrad adds it): the first LDS access
    // is outside the work-group's 0 bytes.
    let case = load_case(&gpu, &path);
    let pgm = gpu.memory().allocation(case.allocs[0]).unwrap().0;
    let mut w = case.exec.clone();
    let i = w.iter().position(|&x| x == COMPUTE_PGM_RSRC1 - SH_REG_START).unwrap();
    w[i + 2] &= !(0x1ff << 15);
    let f = compute_fault(&gpu, &w);
    match f.what {
        What::Shader { program, fault } => {
            assert_eq!(program >> 12, pgm >> 12);
            assert!(matches!(fault.kind, FaultKind::Lds { size: 0, .. }), "{fault}");
        }
        w => panic!("{w:?}"),
    }
    // An input buffer unmapped: a memory exception at its address.
    let case = load_case(&gpu, &kernels_dir().join("add_f32.json"));
    let input = case.bufs[1].0;
    gpu.memory().unmap(input).unwrap();
    let f = compute_fault(&gpu, &case.exec);
    let (va, write) = f.memory().unwrap();
    assert!(!write && va >= input && va < input + 4096, "{f}");
    assert!(gpu.events().memory_exceptions().iter().any(|e| e.fault == f));
    // The program's memory unmapped.
    let case = load_case(&gpu, &kernels_dir().join("add_f32.json"));
    gpu.memory().unmap(case.allocs[0]).unwrap();
    let f = compute_fault(&gpu, &case.exec);
    assert!(matches!(f.what, What::Memory { what: "reading the program", .. }), "{f}");
    // A program that does not load: a MUBUF instruction (decoded, refused by name).
    let case = load_case(&gpu, &kernels_dir().join("add_f32.json"));
    gpu.memory().write_words(case.allocs[0], &[0xe000_0000, 0, 0xbf9f_0000]).unwrap();
    let f = compute_fault(&gpu, &case.exec);
    assert!(matches!(f.what, What::Load { .. }), "{f}");
    // A work-group of 0 threads.
    let mut w = set_sh(COMPUTE_NUM_THREAD_X, &[0, 1, 1]);
    w.extend(pkt(DISPATCH_DIRECT, &[1, 1, 1, INITIATOR_COMPUTE_SHADER_EN]));
    let f = compute_fault(&gpu, &w);
    assert!(matches!(&f.what, What::Dispatch(s) if s.contains("1 to 1024")), "{f}");
    // More user SGPRs than COMPUTE_USER_DATA registers.
    let mut w = set_sh(COMPUTE_NUM_THREAD_X, &[1, 1, 1]);
    w.extend(set_sh(COMPUTE_PGM_RSRC2, &[17 << 1]));
    w.extend(pkt(DISPATCH_DIRECT, &[1, 1, 1, INITIATOR_COMPUTE_SHADER_EN]));
    let f = compute_fault(&gpu, &w);
    assert!(matches!(&f.what, What::Dispatch(s) if s.contains("USER_SGPR 17")), "{f}");
}

/// Malformed fields of packets the CP knows.
#[test]
fn malformed_packets_are_refused() {
    let gpu = Gpu::new(config());
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    let cases = [
        pkt(ACQUIRE_MEM, &[0, 0, 0]),
        pkt(INDIRECT_BUFFER, &[buf as u32, (buf >> 32) as u32, 4]), // no VALID
        indirect(buf, 4, true),                                     // CHAIN in the ring
        pkt(PRED_EXEC, &[1 << 24 | 2]),                             // in the ring
        release_mem(buf + 4, 0, DATA_SEL_64, INT_SEL_NONE, 0),      // 64-bit at a 4-byte address
        pkt(RELEASE_MEM, &[CACHE_FLUSH_AND_INV_TS_EVENT, 0, 0, 0, 0, 0, 0]), // event index 0
        pkt(EVENT_WRITE, &[0, 0, 0]),
        pkt(WAIT_REG_MEM, &[7 | 1 << 4, buf as u32, 0, 0, 0, 4]),
    ];
    for (k, w) in cases.iter().enumerate() {
        let f = compute_fault(&gpu, w);
        assert!(matches!(f.what, What::Malformed(_)), "case {k}: {f}");
    }
}
