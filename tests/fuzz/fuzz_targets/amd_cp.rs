//! Fuzz the simulated gfx1100's command processors on raw streams: the input builds a compute
//! ring, an indirect buffer and an SDMA ring from a small packet language (raw words, type-3
//! headers with any opcode and count, `SET_SH_REG` program setups with `DISPATCH_DIRECT` over
//! code the input also writes, `RELEASE_MEM`, `WAIT_REG_MEM`, `INDIRECT_BUFFER`s into the IB
//! with any size, chained or not, and SDMA copies, fences, polls, traps, writes and indirect
//! buffers), so that the fuzzer reaches nested IBs, dispatches and both engines, which random
//! words almost never form. Every queue must end idle, blocked or faulted with a report that
//! prints, within its packet budget: never a panic or a hang of the simulator.
#![no_main]

use hcq_sim_amd::cp::pm4::{self, *};
use hcq_sim_amd::cp::regs::*;
use hcq_sim_amd::sdma::packets as sd;
use hcq_sim_amd::{ComputeQueueDesc, Gpu, GpuConfig, QueueState, SdmaQueueDesc};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

const DATA: u64 = 0x1000_0000;
const CODE: u64 = 0x2000_0000;
const IB: u64 = 0x3000_0000;
const RING: u64 = 0x4000_0000;
const SDMA_RING: u64 = 0x5000_0000;
const PTRS: u64 = 0x6000_0000;
/// Dwords of the compute ring, the IB and the SDMA ring.
const RING_DWORDS: usize = 1024;
const IB_DWORDS: usize = 1024;
const SDMA_DWORDS: usize = 1024;

fn pkt(out: &mut Vec<u32>, op: u32, body: &[u32]) {
    out.push(pm4::header(op, body.len() as u32 - 1));
    out.extend_from_slice(body);
}

fn set_sh(out: &mut Vec<u32>, reg: u32, vals: &[u32]) {
    let mut b = vec![reg - SH_REG_START];
    b.extend_from_slice(vals);
    pkt(out, SET_SH_REG, &b);
}

struct Bytes<'a>(std::slice::Iter<'a, u8>);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        self.0.next().copied().unwrap_or(0)
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// An address: mostly inside the data page, else the IB, else anything.
    fn addr(&mut self) -> u64 {
        match self.u8() % 4 {
            0 | 1 => DATA + 4 * u64::from(self.u8()),
            2 => IB + 4 * u64::from(self.u8() % 64),
            _ => u64::from(self.u32()) << (self.u8() % 16),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let gpu = Gpu::new(GpuConfig {
        hang_timeout: Some(Duration::ZERO),
        max_wave_steps: 2_000,
        max_groups: 8,
        shader_threads: 1,
        packet_budget: 4_096,
        ..GpuConfig::default()
    });
    let m = gpu.memory();
    for (at, bytes) in [(DATA, 4096), (CODE, 4096), (IB, 4 * IB_DWORDS as u64), (PTRS, 3 * 4096)] {
        m.alloc(Some(at), bytes).unwrap();
    }
    m.alloc(Some(RING), 4 * RING_DWORDS as u64).unwrap();
    m.alloc(Some(SDMA_RING), 4 * SDMA_DWORDS as u64).unwrap();
    let mut b = Bytes(data.iter());
    // the code page: the input's first 256 bytes, then `s_endpgm`s
    let code: Vec<u32> = (0..64).map(|_| b.u32()).chain(std::iter::repeat_n(0xbfb0_0000, 960)).collect();
    m.write_words(CODE, &code).unwrap();
    let (mut ring, mut ib, mut sdma) = (Vec::new(), Vec::new(), Vec::new());
    let mut to_ib = false;
    // room for the longest step (a program setup and its dispatch: 24 dwords) in every area
    while b.0.len() > 0 && ring.len() < RING_DWORDS - 32 && ib.len() < IB_DWORDS - 32 && sdma.len() < SDMA_DWORDS - 32 {
        let w = if to_ib { &mut ib } else { &mut ring };
        match b.u8() % 10 {
            0 => to_ib = !to_ib,
            1 => w.push(b.u32()),
            2 => {
                // any opcode and count, a few body words
                let (op, count) = (u32::from(b.u8()), u32::from(b.u8() % 16));
                w.push(pm4::header(op, count));
                for _ in 0..count.min(6) {
                    w.push(b.u32());
                }
            }
            3 => {
                // a program setup and a dispatch over the input's code
                let pgm = CODE + 256 * u64::from(b.u8() % 4);
                set_sh(w, COMPUTE_PGM_LO, &[(pgm >> 8) as u32, 0]);
                set_sh(w, COMPUTE_PGM_RSRC1, &[u32::from(b.u8() % 4), b.u32() & 0x7f_ffff | 1 << 7]);
                set_sh(w, COMPUTE_NUM_THREAD_X, &[1 + u32::from(b.u8() % 64), 1, 1]);
                set_sh(w, COMPUTE_USER_DATA_0, &[DATA as u32, 0, b.u32(), b.u32()]);
                let w32 = if b.u8() & 1 == 0 { INITIATOR_CS_W32_EN } else { 0 };
                let init = INITIATOR_COMPUTE_SHADER_EN | INITIATOR_FORCE_START_AT_000 | w32;
                pkt(w, DISPATCH_DIRECT, &[1 + u32::from(b.u8() % 4), 1 + u32::from(b.u8() % 2), 1, init]);
            }
            4 => {
                let a = b.addr();
                let event = CACHE_FLUSH_AND_INV_TS_EVENT | RELEASE_EVENT_INDEX_EOP << EVENT_INDEX_SHIFT;
                let sel =
                    u32::from(b.u8() % 4) << RELEASE_DATA_SEL_SHIFT | u32::from(b.u8() % 5) << RELEASE_INT_SEL_SHIFT;
                pkt(w, RELEASE_MEM, &[event, sel, a as u32, (a >> 32) as u32, b.u32(), b.u32(), b.u32()]);
            }
            5 => {
                let a = b.addr();
                let func = u32::from(b.u8() % 8) | 1 << WAIT_MEM_SPACE_SHIFT;
                pkt(w, WAIT_REG_MEM, &[func, a as u32, (a >> 32) as u32, b.u32(), b.u32(), 4]);
            }
            6 => {
                // an IB into the IB area (possibly into itself), any size, chained or not
                let at = IB + 4 * u64::from(b.u8() % 64);
                let size = if b.u8() & 1 == 0 { u32::from(b.u8()) } else { b.u32() & IB_SIZE_MASK };
                let chain = if b.u8() & 3 == 0 { IB_CHAIN } else { 0 };
                pkt(w, INDIRECT_BUFFER, &[at as u32, (at >> 32) as u32, size | IB_VALID | chain]);
            }
            7 => {
                let (dst, src) = (b.addr(), b.addr());
                sdma.push(sd::header(sd::OP_COPY, sd::SUB_COPY_LINEAR, 0));
                sdma.extend([b.u32() & 0xffff, 0, src as u32, (src >> 32) as u32, dst as u32, (dst >> 32) as u32]);
            }
            8 => {
                let a = b.addr();
                match b.u8() % 5 {
                    0 => sdma.extend([sd::header(sd::OP_FENCE, 0, 0), a as u32, (a >> 32) as u32, b.u32()]),
                    1 => sdma.extend([sd::header(sd::OP_TRAP, 0, 0), b.u32()]),
                    2 => sdma.extend([
                        sd::header(sd::OP_POLL_REGMEM, 0, sd::POLL_MEM | u32::from(b.u8() % 8) << sd::POLL_FUNC_SHIFT),
                        a as u32,
                        (a >> 32) as u32,
                        b.u32(),
                        b.u32(),
                        b.u32(),
                    ]),
                    3 => sdma.extend([
                        sd::header(sd::OP_WRITE, sd::SUB_WRITE_LINEAR, 0),
                        a as u32,
                        (a >> 32) as u32,
                        0,
                        b.u32(),
                    ]),
                    _ => {
                        let at = IB + 32 * u64::from(b.u8() % 8);
                        sdma.extend([
                            sd::header(sd::OP_INDIRECT, 0, 0),
                            at as u32,
                            (at >> 32) as u32,
                            u32::from(b.u8()),
                            0,
                            0,
                        ]);
                    }
                }
            }
            _ => {
                // an SDMA header with any op, sub-op and extra bits
                sdma.push(sd::header(u32::from(b.u8()), u32::from(b.u8()), b.u32() & 0xffff_0000));
                for _ in 0..b.u8() % 6 {
                    sdma.push(b.u32());
                }
            }
        }
    }
    m.write_words(IB, &ib).unwrap();
    let compute = gpu
        .create_compute_queue(ComputeQueueDesc {
            ring: RING,
            ring_bytes: 4 * RING_DWORDS as u64,
            rptr: PTRS,
            wptr: PTRS + 8,
            eop: PTRS + 4096,
            eop_bytes: 4096,
        })
        .unwrap();
    let copy = gpu
        .create_sdma_queue(SdmaQueueDesc {
            ring: SDMA_RING,
            ring_bytes: 4 * SDMA_DWORDS as u64,
            rptr: PTRS + 2 * 4096,
            wptr: PTRS + 2 * 4096 + 8,
        })
        .unwrap();
    m.write_words(RING, &ring).unwrap();
    m.write_words(SDMA_RING, &sdma).unwrap();
    // the compute ring's write pointer in dwords, the SDMA ring's in bytes
    for (q, wptr, put) in
        [(compute.id, PTRS + 8, ring.len() as u64), (copy.id, PTRS + 2 * 4096 + 8, 4 * sdma.len() as u64)]
    {
        m.write_u64(wptr, put).unwrap();
        gpu.ring_doorbell(q, put).unwrap();
    }
    gpu.process();
    for q in [compute.id, copy.id] {
        match gpu.queue_status(q).unwrap().state {
            QueueState::Faulted(f) => assert!(!f.to_string().is_empty()),
            QueueState::Idle | QueueState::Blocked => {}
            QueueState::Pending => panic!("a queue left work pending after process"),
        }
    }
});
