//! Robustness: thousands of random command streams (a fixed seed, so a failure replays) into
//! compute and SDMA rings — packets with random opcodes, counts and fields, addresses that hit
//! mapped memory, IBs, real and random programs — never panic the simulator: every queue ends
//! idle, blocked or faulted with a report that prints.

mod common;

use common::*;
use hcq_sim_amd::cp::pm4::*;
use hcq_sim_amd::cp::regs::*;
use hcq_sim_amd::sdma::packets as sd;
use hcq_sim_amd::{Gpu, GpuConfig, QueueState};
use std::time::Duration;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const DATA: u64 = 0x1000_0000;
const CODE: u64 = 0x2000_0000;
const IB: u64 = 0x3000_0000;

/// A field value: often an address in mapped memory, a small number, or anything.
fn field(r: &mut Rng) -> u32 {
    match r.below(6) {
        0 => (DATA + 4 * r.below(1024)) as u32,
        1 => (IB + 4 * r.below(256)) as u32,
        2 => r.below(16) as u32,
        3 => 0,
        _ => r.u32(),
    }
}

fn pm4_packet(r: &mut Rng, out: &mut Vec<u32>) {
    const OPS: [u32; 13] = [
        NOP,
        SET_SH_REG,
        SET_UCONFIG_REG,
        ACQUIRE_MEM,
        EVENT_WRITE,
        RELEASE_MEM,
        WAIT_REG_MEM,
        COPY_DATA,
        INDIRECT_BUFFER,
        PRED_EXEC,
        DISPATCH_DIRECT,
        0x37,
        0xff,
    ];
    match r.below(10) {
        // A random word.
        0 => out.push(r.u32()),
        // A well-formed program setup (so DISPATCH_DIRECT sometimes reaches the shader core).
        1 => {
            let pgm = CODE + 256 * r.below(4);
            out.extend(set_sh(COMPUTE_PGM_LO, &[(pgm >> 8) as u32, 0]));
            out.extend(set_sh(COMPUTE_PGM_RSRC1, &[r.below(4) as u32, (r.u32() & 0x7f_ffff) | 1 << 7]));
            out.extend(set_sh(COMPUTE_NUM_THREAD_X, &[1 + r.below(64) as u32, 1, 1]));
            out.extend(set_sh(COMPUTE_USER_DATA_0, &[DATA as u32, 0, field(r), field(r)]));
            let w32 = if r.below(2) == 0 { INITIATOR_CS_W32_EN } else { 0 };
            out.extend(pkt(
                DISPATCH_DIRECT,
                &[
                    1 + r.below(4) as u32,
                    1 + r.below(2) as u32,
                    1,
                    INITIATOR_COMPUTE_SHADER_EN | INITIATOR_FORCE_START_AT_000 | w32,
                ],
            ));
        }
        2 => out.extend(signal(DATA + 4 * r.below(1024), r.u32())),
        3 => out.extend(wait_mem(DATA + 4 * r.below(1024), r.u32(), r.u32(), r.below(8) as u32)),
        4 => out.extend(indirect(IB + 4 * r.below(64), r.below(96) as u32, r.below(4) == 0)),
        _ => {
            let op = OPS[r.below(OPS.len() as u64) as usize];
            let count = if r.below(20) == 0 { r.below(0x4000) as u32 } else { r.below(8) as u32 };
            out.push(header(op, count));
            for _ in 0..=count.min(8) {
                out.push(field(r));
            }
        }
    }
}

fn sdma_packet(r: &mut Rng, out: &mut Vec<u32>) {
    let a = DATA + 4 * r.below(1024);
    let b = DATA + 4 * r.below(1024);
    match r.below(10) {
        0 => out.push(r.u32()),
        1 => out.extend(sdma::copy(a, b, 1 + r.below(512) as u32)),
        2 => out.extend(sdma::fence(a, r.u32())),
        3 => out.extend(sdma::poll(a, r.u32(), r.u32(), r.below(8) as u32)),
        4 => out.extend(sdma::timestamp(a & !7)),
        5 => out.extend(sdma::trap(r.u32())),
        6 => out.extend(sdma::indirect(IB + 32 * r.below(8), r.below(64) as u32)),
        7 => out.extend(sdma::write(a, &[r.u32(), r.u32()][..1 + r.below(2) as usize])),
        _ => {
            out.push(sd::header(r.below(20) as u32, r.below(4) as u32, (r.u32() & 0xffff) << 16));
            for _ in 0..r.below(8) {
                out.push(field(r));
            }
        }
    }
}

#[test]
fn random_streams_never_panic() {
    let gpu = Gpu::new(GpuConfig {
        hang_timeout: Some(Duration::ZERO),
        max_wave_steps: 5_000,
        max_groups: 16,
        shader_threads: 2,
        packet_budget: 20_000,
        ..GpuConfig::default()
    });
    let m = gpu.memory();
    m.alloc(Some(DATA), 4096).unwrap();
    m.alloc(Some(CODE), 4096).unwrap();
    m.alloc(Some(IB), 4096).unwrap();
    let mut r = Rng(0x5eed_cafe_f00d_1234);
    // The code page: a real kernel's code (add_f32) at CODE, random words after it.
    let co = hcq_amd::codeobj::CodeObject::parse(&std::fs::read(kernels_dir().join("add_f32.co")).unwrap()).unwrap();
    let entry = co.kernels[0].entry;
    m.write(CODE, &co.image[entry..(entry + 256).min(co.image.len())]).unwrap();
    let (mut faulted, mut idle, mut blocked) = (0, 0, 0);
    let mut kinds = std::collections::BTreeMap::<String, u32>::new();
    for round in 0..3000u32 {
        // Fresh random IB words now and then (IBs call IBs).
        if round % 16 == 0 {
            let mut ib = Vec::new();
            while ib.len() < 1024 {
                pm4_packet(&mut r, &mut ib);
            }
            m.write_words(IB, &ib[..1024]).unwrap();
            let junk: Vec<u32> = (0..512).map(|_| r.u32()).collect();
            m.write_words(CODE + 1024, &junk).unwrap();
        }
        let sdma = round % 3 == 2;
        let mut ring = if sdma { sdma_ring(&gpu, 1024) } else { compute_ring(&gpu, 256) };
        let mut words = Vec::new();
        let n = 1 + r.below(12);
        for _ in 0..n {
            if sdma {
                sdma_packet(&mut r, &mut words);
            } else {
                pm4_packet(&mut r, &mut words);
            }
        }
        words.truncate(ring.dwords as usize - 1);
        ring.write(&gpu, &words);
        if r.below(16) == 0 {
            // A random write pointer.
            gpu.ring_doorbell(ring.id(), r.next() % 2048).unwrap();
        } else {
            ring.kick(&gpu);
        }
        gpu.process();
        match ring.state(&gpu) {
            QueueState::Faulted(f) => {
                assert!(!f.to_string().is_empty());
                let kind = format!("{:?}", f.what);
                *kinds.entry(kind.split(['(', ' ', '{']).next().unwrap_or("").to_string()).or_insert(0) += 1;
                faulted += 1;
            }
            QueueState::Idle => idle += 1,
            QueueState::Blocked => blocked += 1,
            QueueState::Pending => panic!("round {round}: a queue left work pending after process"),
        }
        gpu.destroy_queue(ring.id()).unwrap();
        for a in [ring.ring, ring.rptr] {
            m.free(a).unwrap();
        }
        if !sdma {
            // The EOP buffer follows the pointer page.
            m.free(ring.rptr + 4096).unwrap();
        }
    }
    eprintln!("3000 streams: {idle} idle, {blocked} blocked, {faulted} faulted: {kinds:?}");
    assert!(faulted > 100 && idle > 100, "the streams reach both ends: {idle} idle, {faulted} faulted");
    for k in ["Shader", "Load", "Memory", "Hang", "Register", "Truncated", "UnknownOpcode", "Dispatch"] {
        assert!(kinds.contains_key(k), "no stream reached a {k} fault: {kinds:?}");
    }
}

#[test]
fn random_bytes_as_a_program_never_panic() {
    let gpu = Gpu::new(GpuConfig { max_wave_steps: 2_000, max_groups: 4, ..config() });
    let m = gpu.memory();
    m.alloc(Some(DATA), 1 << 16).unwrap();
    m.alloc(Some(CODE), 4096).unwrap();
    let mut r = Rng(42);
    let mut ring = compute_ring(&gpu, 1 << 12);
    for round in 0..300 {
        // Random dwords, ending in s_code_end so the program is a slice of them.
        let mut code: Vec<u32> = (0..64).map(|_| r.u32()).collect();
        code.push(0xbf9f_0000);
        m.write_words(CODE, &code).unwrap();
        let mut w = set_sh(COMPUTE_PGM_LO, &[(CODE >> 8) as u32, 0]);
        w.extend(set_sh(COMPUTE_PGM_RSRC1, &[0, 4 << 1 | 1 << 7]));
        w.extend(set_sh(COMPUTE_NUM_THREAD_X, &[32, 1, 1]));
        w.extend(set_sh(COMPUTE_USER_DATA_0, &[DATA as u32, 0, DATA as u32, 0]));
        w.extend(pkt(DISPATCH_DIRECT, &[2, 1, 1, INITIATOR_COMPUTE_SHADER_EN | INITIATOR_CS_W32_EN]));
        ring.submit(&gpu, &w);
        gpu.process();
        if let QueueState::Faulted(f) = ring.state(&gpu) {
            assert!(!f.to_string().is_empty(), "round {round}");
            gpu.destroy_queue(ring.id()).unwrap();
            ring = compute_ring(&gpu, 1 << 12);
        }
    }
}
