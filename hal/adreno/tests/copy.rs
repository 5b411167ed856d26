//! Copies on the GPU (`CP_MEMCPY`) and per-kernel timestamps, through the encoder, the decoder
//! and the simulated CP.

mod common;

use common::*;
use hcq::queue::{Command, Field, HwQueue};
use hcq_adreno::pm4::raw::MemCpy;
use hcq_adreno::pm4::{Packet, decode, op, pkt7_struct};
use hcq_sim_adreno::cp::{COPY_CHUNK_DWORDS, Cp, Outcome, SparseMemory};
use proptest::prelude::*;

/// A source region at `SRC` and a destination at `DST`, beside the usual layout.
const SRC: u64 = 0x200_0000;
const DST: u64 = 0x300_0000;
const REGION: usize = 0x4000;

fn copy_memory() -> SparseMemory {
    let mut m = memory();
    m.map(SRC, REGION).unwrap();
    m.map(DST, REGION).unwrap();
    let pattern: Vec<u8> = (0..REGION).map(|i| (i * 7 + 3) as u8).collect();
    m.write_bytes(SRC, &pattern).unwrap();
    m
}

fn run(words: &[u32], mem: &mut SparseMemory, cp: &mut Cp) -> hcq::Result<Outcome> {
    mem.write_bytes(IB, &words_to_bytes(words))?;
    cp.submit(IB, words.len() as u32, mem, &mut Recorder::default())
}

fn bytes_at(mem: &SparseMemory, addr: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    mem.read_bytes(addr, &mut v).unwrap();
    v
}

#[test]
fn a_copy_decodes_back_to_its_command() {
    let words =
        encoded(&encoder(), Command::Copy { dst: 0x1_2345_6780, src: 0xab_cdef_0004, bytes: 0x4_0000_0000 - 4 })
            .unwrap();
    let pkts = decode(&words).unwrap();
    assert!(matches!(pkts[0], Packet::Type7 { opcode: op::CP_WAIT_FOR_IDLE, .. }));
    assert!(matches!(pkts[1], Packet::Type7 { opcode: op::CP_MEMCPY, payload } if payload.len() == 5));
    let p: MemCpy = pkts[1].payload_as().unwrap();
    assert_eq!((p.dst(), p.src(), p.bytes()), (0x1_2345_6780, 0xab_cdef_0004, 0x4_0000_0000 - 4));
    assert_eq!(p.dwords, u32::MAX, "the largest copy one packet holds");
    // and the raw layout encodes back to the same words
    let mut w = Vec::new();
    pkt7_struct(&mut w, op::CP_MEMCPY, &p).unwrap();
    assert_eq!(&w[..], &words[1..]);
}

#[test]
fn copies_the_packet_cannot_hold_are_refused_with_their_reason() {
    let mut q = queue(encoder());
    let before = q.words().to_vec();
    let cases = [
        (Command::Copy { dst: DST, src: SRC, bytes: 0 }, "0 bytes"),
        (Command::Copy { dst: DST, src: SRC, bytes: 6 }, "whole dwords"),
        (Command::Copy { dst: DST + 2, src: SRC, bytes: 8 }, "destination"),
        (Command::Copy { dst: DST, src: SRC + 1, bytes: 8 }, "source"),
        (Command::Copy { dst: DST, src: SRC, bytes: 0x4_0000_0000 }, "32-bit DWORDS"),
        (Command::Copy { dst: 1 << 48, src: SRC, bytes: 4 }, "48 bits"),
    ];
    for (c, why) in cases {
        let err = q.push(c).unwrap_err().to_string();
        assert!(err.contains(why), "{c:?}: {err}");
    }
    assert_eq!(q.words(), &before[..], "nothing was appended");
    assert_eq!(q.len(), 1, "only the timeline wait");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any dword-aligned copy inside the regions lands exactly, and nothing else changes.
    #[test]
    fn the_simulated_cp_copies_exactly_the_range(off_s in 0u64..1024, off_d in 0u64..1024, dwords in 1u64..2048) {
        let mut mem = copy_memory();
        let (src, dst, n) = (SRC + 4 * off_s, DST + 4 * off_d, 4 * dwords);
        let mut q = queue(encoder());
        q.copy(dst, src, n).unwrap();
        prop_assert_eq!(run(q.words(), &mut mem, &mut Cp::new()).unwrap(), Outcome::Done);
        let want = bytes_at(&mem, src, n as usize);
        prop_assert_eq!(bytes_at(&mem, dst, n as usize), want);
        prop_assert!(bytes_at(&mem, DST, (4 * off_d) as usize).iter().all(|&b| b == 0), "before the range");
        let end = (4 * (off_d + dwords)) as usize;
        prop_assert!(bytes_at(&mem, DST + end as u64, REGION - end).iter().all(|&b| b == 0), "after the range");
    }
}

#[test]
fn a_copy_larger_than_the_cps_buffer_and_a_patched_copy_run() {
    let mut mem = copy_memory();
    let n = 4 * (3 * COPY_CHUNK_DWORDS as u64 + 5);
    let mut q = queue(encoder());
    let c = q.push(Command::Copy { dst: DST, src: SRC, bytes: n }).unwrap();
    let mut cp = Cp::new();
    assert_eq!(run(q.words(), &mut mem, &mut cp).unwrap(), Outcome::Done);
    assert_eq!(bytes_at(&mem, DST, n as usize), bytes_at(&mem, SRC, n as usize));
    // replay with every field patched
    q.patch(c, Field::Src, SRC + 0x100).unwrap();
    q.patch(c, Field::Dst, DST + 0x2000).unwrap();
    q.patch(c, Field::Size, 64).unwrap();
    assert!(q.patch(c, Field::Size, 62).is_err(), "whole dwords");
    assert!(q.patch(c, Field::Size, 0).is_err());
    assert!(q.patch(c, Field::Dst, DST + 1).is_err());
    assert_eq!(run(q.words(), &mut mem, &mut cp).unwrap(), Outcome::Done);
    assert_eq!(bytes_at(&mem, DST + 0x2000, 64), bytes_at(&mem, SRC + 0x100, 64));
    assert_eq!(bytes_at(&mem, DST + 0x2040, 4), [0; 4], "64 bytes, not more");
}

#[test]
fn the_core_hwqueue_patches_a_copy() {
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(encoder(), &tl).unwrap();
    q.copy(DST, SRC, 4096).unwrap();
    q.patch(1, Field::Size, 8).unwrap();
    q.patch(1, Field::Src, 0x12_0000_0010).unwrap();
    q.patch(1, Field::Dst, DST + 4).unwrap();
    let before = q.words().to_vec();
    assert!(q.patch(1, Field::Size, 6).is_err(), "not a whole number of dwords: refused by the form");
    assert!(q.patch(1, Field::Size, 0).is_err());
    assert!(q.patch(1, Field::Size, 4 << 32).is_err(), "beyond DWORDS");
    assert_eq!(q.words(), &before[..]);
    let pkts = decode(q.words()).unwrap();
    let p: MemCpy =
        pkts.iter().find(|p| matches!(p, Packet::Type7 { opcode: op::CP_MEMCPY, .. })).unwrap().payload_as().unwrap();
    assert_eq!((p.dst(), p.src(), p.bytes()), (DST + 4, 0x12_0000_0010, 8));
}

#[test]
fn an_out_of_range_copy_is_a_fault_at_its_packet_and_writes_nothing() {
    for (dst, src, bytes) in [
        (DST, SRC + REGION as u64 - 8, 16), // source runs off its allocation
        (DST + REGION as u64 - 4, SRC, 8),  // destination runs off its allocation
        (0xdead_0000, SRC, 4),              // destination unmapped
        (DST, 0xdead_0000, 4),              // source unmapped
    ] {
        let mut mem = copy_memory();
        let mut q = queue(encoder());
        let wait = q.words().len();
        q.memory_barrier().unwrap().copy(dst, src, bytes).unwrap().signal_at(SIGNALS, 9).unwrap();
        let err = run(q.words(), &mut mem, &mut Cp::new()).unwrap_err().to_string();
        // after the timeline wait, the barrier is 9 words, the copy's CP_WAIT_FOR_IDLE 1
        let at = format!("IB {IB:#x} word {}", wait + 10);
        assert!(err.contains(&at) && err.contains("outside every allocation"), "{err}");
        assert!(bytes_at(&mem, DST, REGION).iter().all(|&b| b == 0), "{dst:#x} <- {src:#x}: nothing written");
        assert_eq!(mem.read64(SIGNALS).unwrap(), 0, "the CP stopped at the fault");
    }
}

#[test]
fn timestamps_bracket_each_dispatch_and_grow_with_its_size() {
    let prog = elementwise();
    let enc = encoder();
    let h = enc.add_program(&prog, CODE).unwrap();
    let mut mem = memory();
    mem.write_bytes(CODE, &prog.image).unwrap();
    let mut q = queue(enc);
    // timestamp, dispatch, timestamp, for dispatches of 1, 64 and 8 work-groups
    let sizes = [1u32, 64, 8];
    q.push(Command::Timestamp { addr: SIGNALS }).unwrap();
    for (i, g) in sizes.iter().enumerate() {
        q.push(Command::Exec { program: h, kernargs: CONSTS, global: [*g, 1, 1], local: [32, 1, 1] }).unwrap();
        q.push(Command::Timestamp { addr: SIGNALS + 8 * (i as u64 + 1) }).unwrap();
    }
    let mut cp = Cp::new();
    assert_eq!(run(q.words(), &mut mem, &mut cp).unwrap(), Outcome::Done);
    let t: Vec<u64> = (0..4).map(|i| mem.read64(SIGNALS + 8 * i).unwrap()).collect();
    assert!(t.windows(2).all(|w| w[1] > w[0]), "strictly increasing: {t:?}");
    let d: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(d[1] > d[2] && d[2] > d[0], "a dispatch's duration follows its work-groups: {d:?}");
    // the clock keeps going across submissions on the same CP
    let mut q2 = queue(encoder());
    q2.timestamp_at(SIGNALS + 64).unwrap();
    assert_eq!(run(q2.words(), &mut mem, &mut cp).unwrap(), Outcome::Done);
    assert!(mem.read64(SIGNALS + 64).unwrap() > t[3]);
}

#[test]
fn an_event_write_with_the_timestamp_bit_writes_the_same_clock() {
    use hcq_adreno::a6xx::events;
    use hcq_adreno::pm4::raw::event_write as ev;
    let mut mem = memory();
    let stamp = |addr: u64| encoded(&encoder(), Command::Timestamp { addr }).unwrap();
    let mut w = stamp(SIGNALS);
    let d0 = events::CACHE_FLUSH_TS << ev::EVENT_SHIFT | 1 << ev::TIMESTAMP_BIT;
    hcq_adreno::pm4::pkt7(&mut w, op::CP_EVENT_WRITE, &[d0, SIGNALS as u32 + 8, 0, 0]).unwrap();
    w.extend_from_slice(&stamp(SIGNALS + 16));
    assert_eq!(run(&w, &mut mem, &mut Cp::new()).unwrap(), Outcome::Done);
    let t: Vec<u64> = (0..3).map(|i| mem.read64(SIGNALS + 8 * i).unwrap()).collect();
    assert!(t[0] < t[1] && t[1] < t[2], "{t:?}");
}
