//! The command-stream capture (`hcq_sim_amd::trace`): a known compute stream (a ring calling an
//! IB with a dispatch) and a known SDMA stream (every packet kind, ring filler, an IB) are
//! recorded packet for packet, line for line; a wait is recorded once, when it holds; a packet
//! that faults is not recorded.

mod common;

#[path = "common/shader_program.rs"]
mod shader_program;

use common::*;
use hcq_sim_amd::cp::pm4::*;
use hcq_sim_amd::cp::regs::*;
use hcq_sim_amd::sdma::packets as sd;
use hcq_sim_amd::trace::fnv1a64;
use hcq_sim_amd::{Gpu, Packet, PacketSink, QueueState};
use std::sync::{Arc, Mutex};

/// Every packet's line, in order.
#[derive(Default)]
struct Lines(Mutex<Vec<String>>);

impl PacketSink for Lines {
    fn packet(&self, p: &Packet<'_>) {
        self.0.lock().unwrap().push(p.to_string());
    }
}

impl Lines {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn traced(gpu: &Gpu) -> Arc<Lines> {
    let lines = Arc::new(Lines::default());
    assert!(gpu.trace_packets(lines.clone()));
    lines
}

fn raw(words: &[u32]) -> String {
    words.iter().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(" ")
}

fn lo(x: u64) -> u32 {
    x as u32
}

fn hi(x: u64) -> u32 {
    (x >> 32) as u32
}

/// The ring waits (already true), calls an IB (ACQUIRE_MEM, the program's registers, a dispatch
/// of 2 work-groups, CS_PARTIAL_FLUSH, a signal), then a one-dword NOP and a signal: 12 lines,
/// each with its place, its decoded fields and its dwords; the dispatch's with the program's
/// length and hash and the bytes its user data point at.
#[test]
fn a_compute_stream_with_an_ib_and_a_dispatch_is_recorded_exactly() {
    let gpu = Gpu::new(config());
    let lines = traced(&gpu);
    let mut ring = compute_ring(&gpu, 256);
    let m = gpu.memory();
    let code = m.alloc(None, 4096).unwrap();
    let program = shader_program::program();
    m.write_words(code, &program).unwrap();
    let out = m.alloc(None, 4096).unwrap();
    let ib = m.alloc(None, 4096).unwrap();
    let sig = m.alloc(None, 4096).unwrap();

    let acq = acquire_mem();
    let pgm = set_sh(COMPUTE_PGM_LO, &[lo(code >> 8), hi(code >> 8)]);
    let rsrc = set_sh(COMPUTE_PGM_RSRC1, &[0, 2 << 1 | 1 << 7]);
    let user = set_sh(COMPUTE_USER_DATA_0, &[lo(out), hi(out)]);
    let grid = set_sh(COMPUTE_START_X, &[0, 0, 0, 32, 1, 1]);
    let initiator = INITIATOR_COMPUTE_SHADER_EN | INITIATOR_FORCE_START_AT_000 | INITIATOR_CS_W32_EN;
    let go = pkt(DISPATCH_DIRECT, &[2, 1, 1, initiator]);
    let flush = cs_partial_flush();
    let sig7 = signal(sig, 7);
    let ib_packets = [&acq, &pgm, &rsrc, &user, &grid, &go, &flush, &sig7];
    let ib_words: Vec<u32> = ib_packets.iter().flat_map(|p| p.iter().copied()).collect();
    m.write_words(ib, &ib_words).unwrap();

    let wait = wait_mem(sig + 8, 0, u32::MAX, FUNC_GE);
    let call = indirect(ib, ib_words.len() as u32, false);
    let nop = vec![header(NOP, NOP_ONE_DWORD_COUNT)];
    let sig9 = signal(sig, 9);
    let ring_words: Vec<u32> = [&wait, &call, &nop, &sig9].iter().flat_map(|p| p.iter().copied()).collect();
    ring.submit(&gpu, &ring_words);
    gpu.process();
    assert_eq!(ring.state(&gpu), QueueState::Idle);
    assert_eq!(m.read_u32(out + 4).unwrap(), 1, "the dispatch ran");

    let r = ring.ring;
    let mut at = ib;
    let mut ib_at = |p: &Vec<u32>| {
        let a = at;
        at += 4 * p.len() as u64;
        a
    };
    let mut mem0 = vec![0u8; 256];
    mem0[4] = 1;
    let mem0: String = mem0.iter().map(|b| format!("{b:02x}")).collect();
    let want = vec![
        format!(
            "cp q=0 ring@{r:#x} WAIT_REG_MEM func=ge space=mem op=0 addr={:#x} ref=0x0 mask=0xffffffff poll=0x4 | {}",
            sig + 8,
            raw(&wait)
        ),
        format!(
            "cp q=0 ring@{:#x} INDIRECT_BUFFER addr={ib:#x} dwords={} chain=0 vmid=0 | {}",
            r + 28,
            ib_words.len(),
            raw(&call)
        ),
        format!(
            "cp q=0 ib1@{:#x} ACQUIRE_MEM cntl=0x0 size=0xffffffffffffffff base=0x0 poll=0x0 gcr=0xfbf1 | {}",
            ib_at(&acq),
            raw(&acq)
        ),
        format!(
            "cp q=0 ib1@{:#x} SET_SH_REG COMPUTE_PGM_LO={:#x} COMPUTE_PGM_HI={:#x} | {}",
            ib_at(&pgm),
            lo(code >> 8),
            hi(code >> 8),
            raw(&pgm)
        ),
        format!(
            "cp q=0 ib1@{:#x} SET_SH_REG COMPUTE_PGM_RSRC1=0x0 COMPUTE_PGM_RSRC2=0x84 | {}",
            ib_at(&rsrc),
            raw(&rsrc)
        ),
        format!(
            "cp q=0 ib1@{:#x} SET_SH_REG COMPUTE_USER_DATA_0={:#x} COMPUTE_USER_DATA_1={:#x} | {}",
            ib_at(&user),
            lo(out),
            hi(out),
            raw(&user)
        ),
        format!(
            "cp q=0 ib1@{:#x} SET_SH_REG COMPUTE_START_X=0x0 COMPUTE_START_Y=0x0 COMPUTE_START_Z=0x0 \
             COMPUTE_NUM_THREAD_X=0x20 COMPUTE_NUM_THREAD_Y=0x1 COMPUTE_NUM_THREAD_Z=0x1 | {}",
            ib_at(&grid),
            raw(&grid)
        ),
        format!(
            "cp q=0 ib1@{:#x} DISPATCH_DIRECT x=2 y=1 z=1 initiator=0x8005 pgm={code:#x} code_bytes=24 \
             code_fnv={:#018x} user_sgprs=2 user_data={:#x},{:#x} mem0={mem0} | {}",
            ib_at(&go),
            fnv1a64(&program),
            lo(out),
            hi(out),
            raw(&go)
        ),
        format!("cp q=0 ib1@{:#x} EVENT_WRITE event=CS_PARTIAL_FLUSH index=4 | {}", ib_at(&flush), raw(&flush)),
        format!(
            "cp q=0 ib1@{:#x} RELEASE_MEM event=CACHE_FLUSH_AND_INV_TS_EVENT index=5 gcr=0x0 dst=0 int_sel=0 \
             data_sel=1 addr={sig:#x} data=0x7 ctxid=0x0 | {}",
            ib_at(&sig7),
            raw(&sig7)
        ),
        format!("cp q=0 ring@{:#x} NOP dwords=1 | ffff1000", r + 44),
        format!(
            "cp q=0 ring@{:#x} RELEASE_MEM event=CACHE_FLUSH_AND_INV_TS_EVENT index=5 gcr=0x0 dst=0 int_sel=0 \
             data_sel=1 addr={sig:#x} data=0x9 ctxid=0x0 | {}",
            r + 48,
            raw(&sig9)
        ),
    ];
    assert_eq!(lines.take(), want);
    // FNV-1a 64 starts from its offset basis.
    assert_eq!(fnv1a64(&[]), 0xcbf2_9ce4_8422_2325);
}

/// Every SDMA packet tinygrad's copy queue emits, zero-dword filler up to the INDIRECT's
/// 8-dword boundary, and the IB's packet: one line each, the ring filler included.
#[test]
fn an_sdma_stream_with_filler_and_an_ib_is_recorded_exactly() {
    let gpu = Gpu::new(config());
    let lines = traced(&gpu);
    let mut ring = sdma_ring(&gpu, 256);
    let m = gpu.memory();
    let buf = m.alloc(None, 4096).unwrap();
    let ib = m.alloc(None, 4096).unwrap();
    let fence6 = sdma::fence(buf + 132, 6);
    m.write_words(ib, &fence6).unwrap();
    m.write_words(buf, &[1, 2, 3, 4]).unwrap();

    let copy = sdma::copy(buf + 64, buf, 16);
    let fence5 = sdma::fence(buf + 128, 5);
    let poll = sdma::poll(buf + 128, 5, u32::MAX, FUNC_EQ);
    let write = sdma::write(buf + 192, &[1, 2]);
    let stamp = sdma::timestamp(buf + 256);
    let trap = sdma::trap(3);
    let nop3 = vec![sd::header(sd::OP_NOP, 0, 2 << sd::NOP_COUNT_SHIFT), 0xdead, 0xbeef];
    let call = sdma::indirect(ib, fence6.len() as u32);
    let packets = [&copy, &fence5, &poll, &write, &stamp, &trap, &nop3];
    let mut words: Vec<u32> = packets.iter().flat_map(|p| p.iter().copied()).collect();
    assert_eq!(words.len(), 31);
    words.extend([0, 0, 0]);
    words.extend(&call);
    ring.submit(&gpu, &words);
    gpu.process();
    assert_eq!(ring.state(&gpu), QueueState::Idle);
    assert_eq!(m.read_u32(buf + 132).unwrap(), 6, "the IB ran");

    let s = ring.ring;
    let want = vec![
        format!(
            "sdma q=0 ring@{s:#x} COPY_LINEAR bytes=0x10 src={buf:#x} dst={:#x} backwards=0 | {}",
            buf + 64,
            raw(&copy)
        ),
        format!("sdma q=0 ring@{:#x} FENCE addr={:#x} data=0x5 mtype=3 | {}", s + 28, buf + 128, raw(&fence5)),
        format!(
            "sdma q=0 ring@{:#x} POLL_REGMEM mem=1 func=eq addr={:#x} ref=0x5 mask=0xffffffff interval=0x4 \
             retry=0xfff | {}",
            s + 44,
            buf + 128,
            raw(&poll)
        ),
        format!("sdma q=0 ring@{:#x} WRITE_LINEAR dst={:#x} dwords=2 | {}", s + 68, buf + 192, raw(&write)),
        format!("sdma q=0 ring@{:#x} TIMESTAMP_GET_GLOBAL addr={:#x} | {}", s + 92, buf + 256, raw(&stamp)),
        format!("sdma q=0 ring@{:#x} TRAP context=0x3 | {}", s + 104, raw(&trap)),
        format!("sdma q=0 ring@{:#x} NOP dwords=3 | 00020000", s + 112),
        format!("sdma q=0 ring@{:#x} NOP dwords=1 | 00000000", s + 124),
        format!("sdma q=0 ring@{:#x} NOP dwords=1 | 00000000", s + 128),
        format!("sdma q=0 ring@{:#x} NOP dwords=1 | 00000000", s + 132),
        format!("sdma q=0 ring@{:#x} INDIRECT addr={ib:#x} dwords=4 | {}", s + 136, raw(&call)),
        format!("sdma q=0 ib1@{ib:#x} FENCE addr={:#x} data=0x6 mtype=3 | {}", buf + 132, raw(&fence6)),
    ];
    assert_eq!(lines.take(), want);
}

/// A wait that does not hold is recorded once, when the host's write lets it pass; a packet that
/// faults (an unknown opcode) is not recorded, nor anything after it. A GPU takes one sink.
#[test]
fn a_wait_is_recorded_when_it_holds_and_a_fault_not_at_all() {
    let gpu = Gpu::new(config());
    let lines = traced(&gpu);
    assert!(!gpu.trace_packets(Arc::new(Lines::default())), "a second sink is refused");
    let mut ring = compute_ring(&gpu, 256);
    let sig = gpu.memory().alloc(None, 4096).unwrap();
    let wait = wait_mem(sig, 1, u32::MAX, FUNC_GE);
    ring.submit(&gpu, &wait);
    for _ in 0..3 {
        gpu.process();
    }
    assert_eq!(ring.state(&gpu), QueueState::Blocked);
    assert!(lines.take().is_empty(), "nothing ran yet");
    gpu.memory().write_u32(sig, 1).unwrap();
    gpu.process();
    let got = lines.take();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains(" WAIT_REG_MEM func=ge space=mem op=0 ") && got[0].ends_with(&raw(&wait)), "{got:?}");

    let mut bad = pkt(0x12, &[0]);
    bad.extend(signal(sig, 3));
    ring.submit(&gpu, &bad);
    gpu.process();
    assert!(matches!(ring.state(&gpu), QueueState::Faulted(_)));
    assert!(lines.take().is_empty(), "the faulting packet and what follows it are not recorded");
}

/// Without a sink the engines run as before and a packet's line can still be made by hand: an
/// opcode the CP does not name is `OP_0x..`, a register without a name `SH_0x..`.
#[test]
fn lines_of_unnamed_opcodes_and_registers() {
    let q = hcq_sim_amd::QueueId(3);
    let body = [0x3ff, 5];
    let p = Packet {
        queue: q,
        engine: hcq_sim_amd::Engine::Compute,
        at: hcq_sim_amd::Where::Ib { va: 0x1000, dword: 0, level: 2 },
        addr: 0x1000,
        header: header(SET_SH_REG, 1),
        body: &body,
        dispatch: None,
    };
    assert_eq!(p.to_string(), "cp q=3 ib2@0x1000 SET_SH_REG SH_0x2fff=0x5 | c0017600 000003ff 00000005");
    let p = Packet { header: header(0xee, 1), ..p };
    assert_eq!(p.to_string(), "cp q=3 ib2@0x1000 OP_0xee | c001ee00 000003ff 00000005");
    let p = Packet { engine: hcq_sim_amd::Engine::Sdma, header: 0x0000_0b30, body: &[], ..p };
    assert_eq!(p.to_string(), "sdma q=3 ib2@0x1000 OP_0x30_0xb | 00000b30");
}
