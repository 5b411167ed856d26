//! The compute CP's packets, each against what it must do to memory, registers and events.

mod common;

use common::*;
use hcq_sim_amd::cp::pm4::*;
use hcq_sim_amd::cp::regs::*;
use hcq_sim_amd::{GPU_CLOCK_HZ, Gpu, QueueState};
use std::time::{Duration, Instant};

fn setup() -> (Gpu, Ring, u64) {
    let gpu = Gpu::new(config());
    let ring = compute_ring(&gpu, 1024);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    (gpu, ring, buf)
}

/// `RELEASE_MEM` writes the 32-bit low word, all 64 bits, or the clock, and raises an
/// interrupt with its context id only when `INT_SEL` asks.
#[test]
fn release_mem_writes_its_data_and_raises_the_interrupt() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    m.write_u64(buf, u64::MAX).unwrap();
    m.write_u64(buf + 16, 0).unwrap();
    let t0 = gpu.clock();
    let mut w = release_mem(buf, 0x1111_2222_3333_4444, DATA_SEL_32, INT_SEL_NONE, 0);
    w.extend(release_mem(buf + 8, 0x5555_6666_7777_8888, DATA_SEL_64, INT_SEL_NONE, 0));
    w.extend(release_mem(buf + 16, 0, DATA_SEL_GPU_CLOCK, INT_SEL_NONE, 0));
    w.extend(release_mem(buf + 24, 9, DATA_SEL_32, INT_SEL_SEND_AFTER_WRITE, 7));
    ring.submit(&gpu, &w);
    gpu.process();
    let t1 = gpu.clock();
    assert_eq!(m.read_u64(buf).unwrap(), 0xffff_ffff_3333_4444, "32-bit low leaves the high word");
    assert_eq!(m.read_u64(buf + 8).unwrap(), 0x5555_6666_7777_8888);
    let ts = m.read_u64(buf + 16).unwrap();
    assert!(t0 < ts && ts < t1, "the timestamp {ts} lies between the host's clock reads {t0} and {t1}");
    assert_eq!(m.read_u32(buf + 24).unwrap(), 9);
    let ev = gpu.events().snapshot();
    assert_eq!(ev.signaled_count(7), Some(1), "event 7 signaled once: {ev:?}");
    assert_eq!(ev.interrupts, 1, "only the one RELEASE_MEM that asks interrupts");
    assert!(gpu.events().reset(7));
    assert!(!gpu.events().is_signaled(7));
}

/// The GPU clock runs at 100 MHz: 10 ms of host time are about a million ticks.
#[test]
fn the_gpu_clock_counts_at_100_mhz() {
    let gpu = Gpu::new(config());
    let (a, t) = (gpu.clock(), Instant::now());
    std::thread::sleep(Duration::from_millis(20));
    let (b, dt) = (gpu.clock(), t.elapsed());
    let expect = dt.as_secs_f64() * GPU_CLOCK_HZ as f64;
    let got = (b - a) as f64;
    assert!((got - expect).abs() < 0.05 * expect, "{got} ticks in {dt:?}, expected about {expect}");
}

/// tinygrad's `timestamp`: a release with an interrupt to context 0 and no data, then the clock
/// into the signal's timestamp, then ACQUIRE_MEM; the stamps around a dispatch-free stretch rise.
#[test]
fn tinygrad_timestamps_rise_and_its_context_0_interrupt_lands_under_id_0() {
    let (gpu, mut ring, buf) = setup();
    let mut w = Vec::new();
    for k in 0..3 {
        w.extend(release_mem(0, 0, DATA_SEL_NONE, INT_SEL_SEND_AFTER_WRITE, 0));
        w.extend(release_mem(buf + 8 * k, 0, DATA_SEL_GPU_CLOCK, INT_SEL_NONE, 0));
        w.extend(acquire_mem());
    }
    ring.submit(&gpu, &w);
    gpu.process();
    let m = gpu.memory();
    let ts: Vec<u64> = (0..3).map(|k| m.read_u64(buf + 8 * k).unwrap()).collect();
    assert!(ts[0] < ts[1] && ts[1] < ts[2], "{ts:?}");
    assert_eq!(gpu.events().snapshot().signaled_count(0), Some(3));
}

/// `WAIT_REG_MEM` stops the queue at the packet until the host's write makes it true; the
/// packets after it have not run meanwhile, and run after.
#[test]
fn wait_reg_mem_blocks_until_the_hosts_write_then_proceeds() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    let mut w = wait_mem(buf, 5, 0xffff_ffff, FUNC_GE);
    w.extend(signal(buf + 4, 1));
    ring.submit(&gpu, &w);
    let p = gpu.process();
    assert_eq!(p.blocked, 1);
    assert_eq!(ring.state(&gpu), QueueState::Blocked);
    assert_eq!(m.read_u32(buf + 4).unwrap(), 0, "the signal after the wait has not run");
    assert_eq!(ring.read_pointer(&gpu), 0, "the read pointer stays at the wait");
    m.write_u32(buf, 4).unwrap();
    assert_eq!(gpu.process().blocked, 1, "4 >= 5 is false: still blocked");
    m.write_u32(buf, 5).unwrap();
    gpu.process();
    assert_eq!(ring.state(&gpu), QueueState::Idle);
    assert_eq!(m.read_u32(buf + 4).unwrap(), 1);
    assert_eq!(ring.read_pointer(&gpu), w.len() as u64);
}

/// One queue waits on what another queue writes: one `process` runs both to the end.
#[test]
fn wait_reg_mem_proceeds_when_another_queues_write_lands() {
    let (gpu, mut a, buf) = setup();
    let mut b = compute_ring(&gpu, 256);
    let mut w = wait_mem(buf, 3, 0xff, FUNC_EQ);
    w.extend(signal(buf + 4, 0xa));
    a.submit(&gpu, &w);
    b.submit(&gpu, &signal(buf, 0x7703));
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf + 4).unwrap(), 0xa, "queue a passed its wait on (value & 0xff) == 3");
    assert_eq!(a.state(&gpu), QueueState::Idle);
}

/// Every compare function of `WAIT_REG_MEM` against the value 5 (masked).
#[test]
fn wait_reg_mem_compare_functions() {
    let table = [
        (FUNC_ALWAYS, 0, true),
        (FUNC_LT, 6, true),
        (FUNC_LT, 5, false),
        (FUNC_LE, 5, true),
        (FUNC_LE, 4, false),
        (FUNC_EQ, 5, true),
        (FUNC_EQ, 6, false),
        (FUNC_NE, 6, true),
        (FUNC_NE, 5, false),
        (FUNC_GE, 5, true),
        (FUNC_GE, 6, false),
        (FUNC_GT, 4, true),
        (FUNC_GT, 5, false),
    ];
    for (func, reference, pass) in table {
        let (gpu, mut ring, buf) = setup();
        gpu.memory().write_u32(buf, 0xf005).unwrap();
        ring.submit(&gpu, &wait_mem(buf, reference, 0xff, func));
        let p = gpu.process();
        assert_eq!(p.blocked == 0, pass, "function {func} against reference {reference}");
    }
}

/// tinygrad's `memory_barrier` (the HDP flush's write-wait-write on the NBIO registers, then
/// ACQUIRE_MEM) completes at once.
#[test]
fn the_hdp_flush_barrier_completes() {
    let (gpu, mut ring, buf) = setup();
    let mut w = memory_barrier();
    w.extend(signal(buf, 1));
    ring.submit(&gpu, &w);
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf).unwrap(), 1);
}

/// Register waits read the register file: a `SET_UCONFIG_REG` value satisfies them.
#[test]
fn a_register_wait_reads_the_register_file() {
    let (gpu, mut ring, buf) = setup();
    let reg = 0xc200; // GRBM_GFX_INDEX
    let mut w = set_uconfig(reg, &[0x1234]);
    w.extend(pkt(WAIT_REG_MEM, &[FUNC_EQ, reg, 0, 0x1234, u32::MAX, 4]));
    w.extend(signal(buf, 2));
    ring.submit(&gpu, &w);
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf).unwrap(), 2);
    assert_eq!(gpu.compute_register(ring.id(), reg).unwrap(), 0x1234);
}

/// Packets that straddle the ring's end run as if the ring were contiguous, and the read
/// pointer keeps counting past the ring's size.
#[test]
fn packets_wrap_around_the_ring() {
    let gpu = Gpu::new(config());
    let mut ring = compute_ring(&gpu, 16);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    for k in 0..20u32 {
        // 8 dwords each: every other packet straddles the 16-dword ring's end after a 3-dword NOP.
        let mut w = pkt(NOP, &[0, 0]);
        w.extend(&signal(buf, k)[..5]);
        ring.write(&gpu, &w);
        ring.write(&gpu, &signal(buf, k)[5..]);
        ring.kick(&gpu);
        gpu.process();
        assert_eq!(gpu.memory().read_u32(buf).unwrap(), k, "round {k}");
    }
    assert_eq!(ring.read_pointer(&gpu), 20 * 11);
}

/// One-dword NOPs (count 0x3fff) and NOPs with bodies are skipped.
#[test]
fn nops_are_skipped() {
    let (gpu, mut ring, buf) = setup();
    let mut w = vec![header(NOP, NOP_ONE_DWORD_COUNT), header(NOP, NOP_ONE_DWORD_COUNT)];
    w.extend(pkt(NOP, &[0xdead_beef; 5]));
    w.extend(signal(buf, 3));
    ring.submit(&gpu, &w);
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf).unwrap(), 3);
    assert_eq!(ring.read_pointer(&gpu), w.len() as u64);
}

/// The ring calls IB1, which calls IB2 and then chains to another IB1; the ring's read pointer
/// passes the ring's INDIRECT_BUFFER only when all of them are done.
#[test]
fn ibs_nest_and_chain() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    let ib2 = m.alloc(None, 4096).unwrap();
    let ib1b = m.alloc(None, 4096).unwrap();
    let ib1 = m.alloc(None, 4096).unwrap();
    let w2 = signal(buf + 4, 2);
    m.write_words(ib2, &w2).unwrap();
    let mut w1b = signal(buf + 8, 3);
    w1b.extend(wait_mem(buf + 12, 1, 1, FUNC_EQ));
    m.write_words(ib1b, &w1b).unwrap();
    let mut w1 = signal(buf, 1);
    w1.extend(indirect(ib2, w2.len() as u32, false));
    w1.extend(indirect(ib1b, w1b.len() as u32, true));
    w1.extend(signal(buf + 16, 0xbad)); // after the chain: never runs
    m.write_words(ib1, &w1).unwrap();
    let mut w = indirect(ib1, w1.len() as u32, false);
    w.extend(signal(buf + 20, 4));
    ring.submit(&gpu, &w);
    gpu.process();
    assert_eq!(ring.state(&gpu), QueueState::Blocked, "stopped at the wait in the chained IB");
    assert_eq!(ring.read_pointer(&gpu), 0, "the ring's IB packet is not passed while its IB runs");
    m.write_u32(buf + 12, 1).unwrap();
    gpu.process();
    let got: Vec<u32> = (0..6).map(|k| m.read_u32(buf + 4 * k).unwrap()).collect();
    assert_eq!(got, [1, 2, 3, 1, 0, 4], "IB1, IB2, the chained IB, then the ring; not the words after the chain");
    assert_eq!(ring.read_pointer(&gpu), w.len() as u64);
}

/// `SET_SH_REG` and `SET_UCONFIG_REG` write consecutive registers from their offset.
#[test]
fn set_reg_packets_write_the_register_file() {
    let (gpu, mut ring, _) = setup();
    let mut w = set_sh(COMPUTE_USER_DATA_0, &[1, 2, 3, 4]);
    w.extend(set_sh(SH_REG_END - 1, &[9]));
    w.extend(set_uconfig(UCONFIG_REG_END - 2, &[7, 8]));
    ring.submit(&gpu, &w);
    gpu.process();
    let r = |x| gpu.compute_register(ring.id(), x).unwrap();
    assert_eq!([r(COMPUTE_USER_DATA_0), r(COMPUTE_USER_DATA_0 + 3), r(SH_REG_END - 1)], [1, 4, 9]);
    assert_eq!([r(UCONFIG_REG_END - 2), r(UCONFIG_REG_END - 1)], [7, 8]);
}

/// `COPY_DATA`: register → memory (tinygrad's PMC reads), memory → memory, immediate and
/// clock sources, memory → register.
#[test]
fn copy_data_moves_registers_memory_and_clocks() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    m.write_u64(buf + 64, 0x0102_0304_0506_0708).unwrap();
    let reg = 0xd000; // a user-config register (a perf counter's window)
    let lo = |x: u64| x as u32;
    let hi = |x: u64| (x >> 32) as u32;
    let d = |k: u64| buf + 8 * k;
    let mut w = set_uconfig(reg, &[0xabcd]);
    w.extend(pkt(COPY_DATA, &[SEL_PERFCOUNTER | SEL_MEMORY << COPY_DST_SEL_SHIFT, reg, 0, lo(d(0)), hi(d(0))]));
    w.extend(pkt(
        COPY_DATA,
        &[
            SEL_MEMORY | SEL_MEMORY << COPY_DST_SEL_SHIFT | COPY_COUNT_SEL_64,
            lo(buf + 64),
            hi(buf + 64),
            lo(d(1)),
            hi(d(1)),
        ],
    ));
    w.extend(pkt(
        COPY_DATA,
        &[SEL_IMMEDIATE | SEL_MEMORY << COPY_DST_SEL_SHIFT | COPY_WR_CONFIRM, 0x55, 0, lo(d(2)), hi(d(2))],
    ));
    w.extend(pkt(
        COPY_DATA,
        &[SEL_GPU_CLOCK | SEL_MEMORY << COPY_DST_SEL_SHIFT | COPY_COUNT_SEL_64, 0, 0, lo(d(3)), hi(d(3))],
    ));
    w.extend(pkt(
        COPY_DATA,
        &[SEL_MEMORY | SEL_REGISTER << COPY_DST_SEL_SHIFT, lo(buf + 64), hi(buf + 64), reg + 1, 0],
    ));
    ring.submit(&gpu, &w);
    gpu.process();
    assert_eq!(ring.state(&gpu), QueueState::Idle);
    assert_eq!(m.read_u32(d(0)).unwrap(), 0xabcd);
    assert_eq!(m.read_u64(d(1)).unwrap(), 0x0102_0304_0506_0708);
    assert_eq!(m.read_u32(d(2)).unwrap(), 0x55);
    assert!(m.read_u64(d(3)).unwrap() > 0);
    assert_eq!(gpu.compute_register(ring.id(), reg + 1).unwrap(), 0x0506_0708);
}

/// `PRED_EXEC` in an IB runs the packets it covers for XCC 0 and skips them otherwise.
#[test]
fn pred_exec_runs_or_skips_what_it_covers() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    let ib = m.alloc(None, 4096).unwrap();
    let s = signal(buf, 1);
    let mut w = pkt(PRED_EXEC, &[1 << PRED_EXEC_XCC_SHIFT | s.len() as u32]);
    w.extend(&s);
    w.extend(pkt(PRED_EXEC, &[2 << PRED_EXEC_XCC_SHIFT | s.len() as u32]));
    w.extend(signal(buf + 4, 1));
    w.extend(signal(buf + 8, 1));
    m.write_words(ib, &w).unwrap();
    ring.submit(&gpu, &indirect(ib, w.len() as u32, false));
    gpu.process();
    let got: Vec<u32> = (0..3).map(|k| m.read_u32(buf + 4 * k).unwrap()).collect();
    assert_eq!(got, [1, 0, 1], "XCC 0's packets run, XCC 1's are skipped");
}

/// A dispatch's stream with tinygrad's ACQUIRE_MEM / EVENT_WRITE around it, of zero groups,
/// does nothing and completes.
#[test]
fn a_zero_group_dispatch_completes() {
    let (gpu, mut ring, buf) = setup();
    let mut w = acquire_mem();
    w.extend(set_sh(COMPUTE_NUM_THREAD_X, &[1, 1, 1]));
    w.extend(pkt(DISPATCH_DIRECT, &[0, 1, 1, INITIATOR_COMPUTE_SHADER_EN | INITIATOR_FORCE_START_AT_000]));
    w.extend(cs_partial_flush());
    w.extend(signal(buf, 1));
    ring.submit(&gpu, &w);
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf).unwrap(), 1);
}
