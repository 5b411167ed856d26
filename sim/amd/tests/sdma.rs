//! The SDMA engine's packets, as tinygrad's `AMDCopyQueue` emits them.

mod common;

use common::sdma::*;
use common::{Ring, compute_ring, config, sdma_ring, signal};
use hcq_sim_amd::cp::pm4::{FUNC_EQ, FUNC_GE};
use hcq_sim_amd::sdma::packets as sd;
use hcq_sim_amd::{Gpu, QueueState};

fn setup() -> (Gpu, Ring, u64) {
    let gpu = Gpu::new(config());
    let ring = sdma_ring(&gpu, 4096);
    let buf = gpu.memory().alloc(None, 1 << 16).unwrap();
    (gpu, ring, buf)
}

/// COPY LINEAR moves count + 1 bytes (any alignment), FENCE writes its 32-bit value after it,
/// and the read pointer (in bytes) reaches the write pointer.
#[test]
fn copy_then_fence() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
    m.write(buf + 1, &src).unwrap();
    let mut w = copy(buf + 0x4003, buf + 1, src.len() as u32);
    w.extend(fence(buf + 0x8000, 0x1234));
    ring.submit(&gpu, &w);
    gpu.process();
    let mut got = vec![0u8; src.len() + 2];
    m.read(buf + 0x4002, &mut got).unwrap();
    assert_eq!(got[0], 0, "the byte before the destination is untouched");
    assert_eq!(&got[1..=src.len()], &src[..]);
    assert_eq!(got[src.len() + 1], 0, "the byte after it is untouched (count is bytes - 1)");
    assert_eq!(m.read_u32(buf + 0x8000).unwrap(), 0x1234);
    assert_eq!(ring.read_pointer(&gpu), 4 * w.len() as u64, "the read pointer counts bytes");
}

/// An overlapping copy upward moves the bytes as memmove would.
#[test]
fn an_overlapping_copy_moves_as_memmove() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    let src: Vec<u8> = (0..256u32).map(|i| i as u8).collect();
    m.write(buf, &src).unwrap();
    ring.submit(&gpu, &copy(buf + 16, buf, 256));
    gpu.process();
    let mut got = vec![0u8; 256];
    m.read(buf + 16, &mut got).unwrap();
    assert_eq!(got, src);
}

/// POLL_REGMEM blocks the queue until memory satisfies it; what follows runs after.
#[test]
fn poll_regmem_blocks_until_memory_changes() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    let mut w = poll(buf, 10, u32::MAX, FUNC_GE);
    w.extend(fence(buf + 4, 1));
    ring.submit(&gpu, &w);
    assert_eq!(gpu.process().blocked, 1);
    assert_eq!(ring.state(&gpu), QueueState::Blocked);
    assert_eq!(m.read_u32(buf + 4).unwrap(), 0);
    m.write_u32(buf, 11).unwrap();
    gpu.process();
    assert_eq!(m.read_u32(buf + 4).unwrap(), 1);
    assert_eq!(ring.state(&gpu), QueueState::Idle);
}

/// A compute queue's signal releases an SDMA queue's poll in the same `process`.
#[test]
fn an_sdma_poll_waits_on_a_compute_queues_signal() {
    let (gpu, mut ring, buf) = setup();
    let mut c = compute_ring(&gpu, 256);
    let mut w = poll(buf, 3, 0xf, FUNC_EQ);
    w.extend(fence(buf + 4, 9));
    ring.submit(&gpu, &w);
    c.submit(&gpu, &signal(buf, 0x13));
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf + 4).unwrap(), 9);
}

/// TIMESTAMP GET_GLOBAL writes the 64-bit 100 MHz clock, rising between packets.
#[test]
fn timestamps_rise() {
    let (gpu, mut ring, buf) = setup();
    let t0 = gpu.clock();
    let mut w = timestamp(buf);
    w.extend(copy(buf + 0x1000, buf + 0x2000, 4096));
    w.extend(timestamp(buf + 8));
    ring.submit(&gpu, &w);
    gpu.process();
    let (a, b) = (gpu.memory().read_u64(buf).unwrap(), gpu.memory().read_u64(buf + 8).unwrap());
    assert!(t0 < a && a < b && b < gpu.clock(), "{t0} < {a} < {b}");
}

/// tinygrad's timeline signal: FENCE the value, FENCE the event id into the mailbox, TRAP with
/// the id: event `id` is signaled.
#[test]
fn trap_raises_its_context_as_the_event() {
    let (gpu, mut ring, buf) = setup();
    let mut w = fence(buf, 5);
    w.extend(fence(buf + 8, 42));
    w.extend(trap(42 | 0xf000_0000)); // the context is 28 bits
    ring.submit(&gpu, &w);
    gpu.process();
    assert_eq!(gpu.memory().read_u32(buf + 8).unwrap(), 42);
    assert!(gpu.events().is_signaled(42));
    assert_eq!(gpu.events().wait_any(&[41, 42], std::time::Duration::from_millis(1)), Some(42));
}

/// WRITE LINEAR writes count + 1 dwords (tinygrad's 32- and 64-bit writes).
#[test]
fn write_linear_writes_its_dwords() {
    let (gpu, mut ring, buf) = setup();
    let mut w = write(buf, &[0xaaaa_aaaa]);
    w.extend(write(buf + 8, &[0x1111_1111, 0x2222_2222]));
    ring.submit(&gpu, &w);
    gpu.process();
    let m = gpu.memory();
    assert_eq!(m.read_u32(buf).unwrap(), 0xaaaa_aaaa);
    assert_eq!(m.read_u32(buf + 4).unwrap(), 0, "one dword only");
    assert_eq!(m.read_u64(buf + 8).unwrap(), 0x2222_2222_1111_1111);
}

/// INDIRECT runs an IB (32-byte aligned, the packet ending on an 8-dword boundary, as tinygrad's
/// bound copy queue pads it) and the ring continues after it.
#[test]
fn indirect_runs_its_ib() {
    let (gpu, mut ring, buf) = setup();
    let m = gpu.memory();
    let ib = m.alloc(None, 4096).unwrap();
    let mut body = fence(buf, 1);
    body.extend(write(buf + 4, &[2]));
    body.resize(body.len().div_ceil(8) * 8, 0);
    m.write_words(ib, &body).unwrap();
    let mut w = vec![0, 0]; // two NOPs: the 6-dword packet then ends at dword 8
    w.extend(indirect(ib, body.len() as u32));
    w.extend(fence(buf + 8, 3));
    ring.submit(&gpu, &w);
    gpu.process();
    let got: Vec<u32> = (0..3).map(|k| m.read_u32(buf + 4 * k).unwrap()).collect();
    assert_eq!(got, [1, 2, 3]);
}

/// Packets straddle the ring's end, and NOP headers with a count skip their dwords; the read
/// pointer keeps counting bytes past the ring's size.
#[test]
fn packets_wrap_and_nops_skip() {
    let gpu = Gpu::new(config());
    let mut ring = sdma_ring(&gpu, 256);
    let buf = gpu.memory().alloc(None, 4096).unwrap();
    let mut total = 0;
    for k in 0..40u32 {
        let mut w = vec![sd::header(sd::OP_NOP, 0, 2 << sd::NOP_COUNT_SHIFT), 0xdead, 0xbeef];
        w.extend(fence(buf, k));
        total += 4 * w.len() as u64;
        ring.submit(&gpu, &w);
        gpu.process();
        assert_eq!(gpu.memory().read_u32(buf).unwrap(), k);
    }
    assert_eq!(ring.read_pointer(&gpu), total);
}
