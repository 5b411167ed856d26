//! The a6xx encoder through the simulated CP: dispatch state, signals, timestamps, barriers,
//! waits across the 32-bit rollover, patching every marked word, and faults with their offsets.

mod common;

use common::*;
use hcq::queue::Form;
use hcq::queue::{Command, Field, HwQueue};
use hcq_adreno::Program;
use hcq_adreno::a6xx::regs;
use hcq_adreno::pm4::{Packet, decode, op, pkt7};
use hcq_adreno::reg::Reg;
use hcq_sim_adreno::cp::{Cp, Outcome, SparseMemory};
use proptest::prelude::*;

fn run(q: &HwQueue, mem: &mut SparseMemory, cp: &mut Cp, rec: &mut Recorder) -> hcq::Result<Outcome> {
    mem.write_bytes(IB, &words_to_bytes(q.words()))?;
    cp.submit(IB, q.words().len() as u32, mem, rec)
}

fn setup(prog: &Program) -> (HwQueue, SparseMemory, u64) {
    let enc = encoder();
    let mut mem = memory();
    mem.write_bytes(CODE, &prog.image).unwrap();
    let h = enc.add_program(prog, CODE).unwrap();
    (queue(enc), mem, h)
}

#[test]
fn a_dispatch_reaches_the_callback_with_the_programs_state() {
    let prog = elementwise();
    let (mut q, mut mem, h) = setup(&prog);
    let mut block = vec![0u8; prog.const_block_bytes as usize];
    prog.fill_consts(&mut block, &[0xa000, 0xb000, 0xc000], &[], [32, 1, 1]).unwrap();
    mem.write_bytes(CONSTS, &block).unwrap();
    q.push(Command::Exec { program: h, kernargs: CONSTS, global: [32, 1, 1], local: [32, 1, 1] }).unwrap();
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    assert_eq!(run(&q, &mut mem, &mut cp, &mut rec).unwrap(), Outcome::Done);
    let s = &rec.seen[0];
    assert_eq!(s.shader_addr, CODE);
    assert_eq!(words_to_bytes(&s.shader), prog.image, "the loaded code is the program image");
    assert_eq!(s.consts_addr, CONSTS);
    assert_eq!(s.consts.len() as u32, prog.load_vec4 * 4);
    assert_eq!(&s.consts[..6], &[0xa000, 0, 0xb000, 0, 0xc000, 0], "argument addresses at offsets 0/8/16");
    assert_eq!(s.consts[16], 1073741824, "first immediate at byte 64");
    assert_eq!((s.groups, s.local), ([32, 1, 1], [32, 1, 1]));
    assert_eq!(s.wgid_reg, 192, "SP_CS_CONST_CONFIG_0 from the metadata: wgid in r48.x");
    // The XML encodings: CONSTLEN = 256 vec4 >> 2, stack offset 4096 B >> 11.
    assert_eq!(cp.reg(regs::SP_CS_CONST_CONFIG::REG), 64 | 1 << 8);
    assert_eq!(cp.reg(regs::SP_CS_PVT_MEM_STACK_OFFSET::REG), 2);
    assert_eq!(cp.reg(regs::SP_CS_INSTR_SIZE::REG), 7);
}

#[test]
fn signal_timestamp_and_barrier_write_memory() {
    let (mut q, mut mem, _) = setup(&elementwise());
    q.push(Command::Barrier).unwrap();
    q.push(Command::Timestamp { addr: SIGNALS + 8 }).unwrap();
    q.push(Command::Signal { addr: SIGNALS, value: 0x1234_5678_9abc_def0 }).unwrap();
    q.push(Command::Timestamp { addr: SIGNALS + 16 }).unwrap();
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    assert_eq!(run(&q, &mut mem, &mut cp, &mut rec).unwrap(), Outcome::Done);
    assert_eq!(mem.read64(SIGNALS).unwrap(), 0x1234_5678_9abc_def0);
    let (t0, t1) = (mem.read64(SIGNALS + 8).unwrap(), mem.read64(SIGNALS + 16).unwrap());
    assert!(t0 > 0 && t1 > t0, "always-on counter moves forward: {t0} {t1}");
}

/// Run `wait(target)` then `signal(SIGNALS+64, 1)` with the awaited signal at `current`.
fn wait_passes(target: u64, current: u64) -> bool {
    let (mut q, mut mem, _) = setup(&elementwise());
    mem.write64(SIGNALS, current).unwrap();
    q.push(Command::Wait { addr: SIGNALS, value: target }).unwrap();
    q.push(Command::Signal { addr: SIGNALS + 64, value: 1 }).unwrap();
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    let out = run(&q, &mut mem, &mut cp, &mut rec).unwrap();
    let done = mem.read64(SIGNALS + 64).unwrap() == 1;
    assert_eq!(done, out == Outcome::Done);
    done
}

#[test]
fn waits_are_right_across_the_32_bit_rollover() {
    let cases: &[(u64, u64, bool)] = &[
        (0x1_0000_0000, 0x0_ffff_ffff, false),
        (0x1_0000_0000, 0x1_0000_0000, true),
        (0x1_0000_0000, 0x1_0000_0005, true),
        (0x0_ffff_ffff, 0x1_0000_0000, true), // value wrapped past the target's low word
        (0x0_ffff_fffe, 0x0_ffff_fffd, false),
        (0x1_8000_0000, 0x1_7fff_ffff, false),
        (0x1_8000_0000, 0x1_8000_0000, true),
        (0x1_8000_0000, 0x1_ffff_0001, true),
        (0x1_f000_0000, 0x2_0000_0010, true), // the low word wrapped past 0 (window: 2^31)
        (0x2_0000_0010, 0x1_f000_0000, false),
        (0x1_8000_0000, 0x1_0000_0001, false),
        (0x1_7fff_ffff, 0x1_8000_0000, true),
        (5, 4, false),
        (5, 5, true),
        (0, 0, true),
    ];
    for &(t, v, want) in cases {
        assert_eq!(wait_passes(t, v), want, "wait for {t:#x} with the signal at {v:#x}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn a_wait_passes_exactly_when_the_64_bit_value_is_reached(t in 1u64 << 31..u64::MAX >> 1, delta in -(1i64 << 31) + 1..1i64 << 31) {
        let v = t.wrapping_add_signed(delta);
        prop_assert_eq!(wait_passes(t, v), v >= t);
    }
}

#[test]
fn a_blocked_wait_resumes_when_the_signal_moves() {
    let (mut q, mut mem, _) = setup(&elementwise());
    mem.write64(SIGNALS, 0xffff_fff0).unwrap();
    let at = q.words().len(); // after the timeline wait, which passes
    q.push(Command::Wait { addr: SIGNALS, value: 0x1_0000_0002 }).unwrap();
    q.push(Command::Signal { addr: SIGNALS + 64, value: 7 }).unwrap();
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    let out = run(&q, &mut mem, &mut cp, &mut rec).unwrap();
    assert!(matches!(out, Outcome::Blocked { ib: IB, word } if word as usize == at), "{out:?}");
    mem.write64(SIGNALS, 0x1_0000_0001).unwrap();
    assert!(matches!(cp.resume(&mut mem, &mut rec).unwrap(), Outcome::Blocked { .. }));
    mem.write64(SIGNALS, 0x1_0000_0002).unwrap();
    assert_eq!(cp.resume(&mut mem, &mut rec).unwrap(), Outcome::Done);
    assert_eq!(mem.read64(SIGNALS + 64).unwrap(), 7);
}

#[test]
fn patching_rewrites_every_form_of_a_value() {
    let prog = elementwise();
    let (mut q, mut mem, h) = setup(&prog);
    let w = q.push(Command::Wait { addr: SIGNALS, value: 3 }).unwrap();
    let e = q.push(Command::Exec { program: h, kernargs: CONSTS, global: [32, 1, 1], local: [32, 1, 1] }).unwrap();
    let s = q.push(Command::Signal { addr: SIGNALS + 64, value: 1 }).unwrap();
    // Every derived word is marked: local sizes in NDRANGE_0 (one mark per dimension, same
    // word), threads = groups × local.
    let ndr0: Vec<_> = q.marks(e).iter().filter(|m| matches!(m.form, Form::Fn(_))).collect();
    assert_eq!(ndr0.len(), 3);
    assert!(ndr0.iter().all(|m| m.word == ndr0[0].word));
    assert!(
        q.marks(e)
            .iter()
            .any(|m| m.field == Field::Global(1) && matches!(m.form, Form::Times(Field::Local(1))) && !m.wide)
    );
    q.patch(e, Field::Global(0), 4).unwrap();
    q.patch(e, Field::Local(0), 16).unwrap();
    q.patch(e, Field::Global(2), 3).unwrap();
    q.patch(e, Field::Local(1), 2).unwrap();
    q.patch(e, Field::Kernargs, CONSTS + 0x1000).unwrap();
    q.patch(s, Field::Value, 0x5_0000_0009).unwrap();
    q.patch(w, Field::Value, 0x1_8000_0000).unwrap(); // across bit 31: the compare turns signed
    q.patch(w, Field::Addr, SIGNALS + 128).unwrap();
    q.patch(s, Field::Addr, SIGNALS + 64).unwrap();
    assert!(q.patch(s, Field::Addr, SIGNALS + 4).is_err(), "a signal is 8-byte aligned");
    assert_eq!(
        q.command(e),
        Some(Command::Exec { program: h, kernargs: CONSTS + 0x1000, global: [4, 1, 3], local: [16, 2, 1] })
    );
    // The patched stream equals a freshly encoded one, word for word.
    let enc2 = encoder();
    let h2 = enc2.add_program(&prog, CODE).unwrap();
    let mut fresh = queue(enc2);
    fresh.push(Command::Wait { addr: SIGNALS + 128, value: 0x1_8000_0000 }).unwrap();
    fresh.push(Command::Exec { program: h2, kernargs: CONSTS + 0x1000, global: [4, 1, 3], local: [16, 2, 1] }).unwrap();
    fresh.push(Command::Signal { addr: SIGNALS + 64, value: 0x5_0000_0009 }).unwrap();
    assert_eq!(q.words(), fresh.words());
    // And it runs: the sim checks NDRANGE = groups × local against CP_EXEC_CS.
    mem.write64(SIGNALS + 128, 0x1_8000_0000).unwrap();
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    assert_eq!(run(&q, &mut mem, &mut cp, &mut rec).unwrap(), Outcome::Done);
    assert_eq!((rec.seen[0].groups, rec.seen[0].local), ([4, 1, 3], [16, 2, 1]));
    assert_eq!(rec.seen[0].consts_addr, CONSTS + 0x1000);
    assert_eq!(mem.read64(SIGNALS + 64).unwrap(), 0x5_0000_0009);
}

#[test]
fn bad_patches_and_bad_commands_change_nothing() {
    let prog = elementwise();
    let (mut q, _mem, h) = setup(&prog);
    let e = q.push(Command::Exec { program: h, kernargs: CONSTS, global: [32, 1, 1], local: [32, 1, 1] }).unwrap();
    let before = q.words().to_vec();
    assert!(q.patch(e, Field::Local(0), 0).is_err(), "local size 0");
    assert!(q.patch(e, Field::Local(1), 64).is_err(), "32 × 64 threads > max_threads 1024");
    assert!(q.patch(e, Field::Global(0), u64::from(u32::MAX)).is_err(), "threads overflow 32 bits");
    assert!(q.patch(e, Field::Kernargs, CONSTS + 4).is_err(), "misaligned constants");
    assert!(q.patch(e, Field::Program, 0).is_err(), "the program is not patchable");
    assert!(q.patch(9, Field::Value, 0).is_err());
    assert_eq!(q.words(), &before[..]);
    assert!(q.push(Command::Exec { program: 7, kernargs: CONSTS, global: [1; 3], local: [1; 3] }).is_err());
    assert!(q.push(Command::Exec { program: h, kernargs: CONSTS, global: [1; 3], local: [2048, 1, 1] }).is_err());
    assert!(q.push(Command::Copy { dst: SCRATCH, src: SCRATCH + 64, bytes: 6 }).is_err(), "whole dwords only");
    assert!(q.push(Command::Copy { dst: SCRATCH + 2, src: SCRATCH + 64, bytes: 8 }).is_err(), "aligned dst");
    assert!(q.push(Command::Copy { dst: SCRATCH, src: SCRATCH + 64, bytes: 0 }).is_err(), "no empty copy");
    assert_eq!(q.words(), &before[..], "refused commands append nothing");
}

#[test]
fn a_corrupt_ib_word_is_reported_with_its_offset() {
    let (mut q, mut mem, _) = setup(&elementwise());
    let wait = q.words().len();
    q.push(Command::Barrier).unwrap();
    q.push(Command::Signal { addr: SIGNALS, value: 1 }).unwrap();
    let mut words = q.words().to_vec();
    let bad_at = wait + 9; // after the timeline wait and the barrier: the signal's CP_WAIT_FOR_IDLE
    assert!(matches!(decode(&words[bad_at..]).unwrap()[0], Packet::Type7 { opcode: op::CP_WAIT_FOR_IDLE, .. }));
    words[bad_at] ^= 1 << 20;
    mem.write_bytes(IB, &words_to_bytes(&words)).unwrap();
    let err = Cp::new().submit(IB, words.len() as u32, &mut mem, &mut Recorder::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&format!("IB {IB:#x} word {bad_at}")), "{msg}");
    assert_eq!(mem.read64(SIGNALS).unwrap(), 0, "nothing after the bad word ran");
}

#[test]
fn unknown_opcodes_and_faults_stop_the_cp_with_the_offset() {
    let mut mem = memory();
    let mut w = Vec::new();
    pkt7(&mut w, op::CP_NOP, &[1, 2]).unwrap();
    pkt7(&mut w, 0x7e, &[]).unwrap();
    mem.write_bytes(IB, &words_to_bytes(&w)).unwrap();
    let err = Cp::new().submit(IB, w.len() as u32, &mut mem, &mut Recorder::default()).unwrap_err();
    assert!(err.to_string().contains("word 3") && err.to_string().contains("opcode"), "{err}");
    let mut w = Vec::new();
    pkt7(&mut w, op::CP_MEM_WRITE, &[0xdead_0000, 0, 1]).unwrap();
    mem.write_bytes(IB, &words_to_bytes(&w)).unwrap();
    let err = Cp::new().submit(IB, w.len() as u32, &mut mem, &mut Recorder::default()).unwrap_err();
    assert!(err.to_string().contains("outside every allocation") && err.to_string().contains("word 0"), "{err}");
}

#[test]
fn indirect_buffers_nest_and_return() {
    let mut mem = memory();
    let mut inner = Vec::new();
    pkt7(&mut inner, op::CP_MEM_WRITE, &[SIGNALS as u32, 0, 11]).unwrap();
    let inner_at = IB + 0x8000;
    mem.write_bytes(inner_at, &words_to_bytes(&inner)).unwrap();
    let mut outer = Vec::new();
    pkt7(&mut outer, op::CP_INDIRECT_BUFFER, &[inner_at as u32, 0, inner.len() as u32]).unwrap();
    pkt7(&mut outer, op::CP_MEM_WRITE, &[SIGNALS as u32 + 4, 0, 22]).unwrap();
    mem.write_bytes(IB, &words_to_bytes(&outer)).unwrap();
    let mut cp = Cp::new();
    assert_eq!(cp.submit(IB, outer.len() as u32, &mut mem, &mut Recorder::default()).unwrap(), Outcome::Done);
    assert_eq!(mem.read64(SIGNALS).unwrap(), 22 << 32 | 11);
    // An IB calling itself runs out of nesting levels instead of looping forever.
    let mut selfcall = Vec::new();
    pkt7(&mut selfcall, op::CP_INDIRECT_BUFFER, &[IB as u32, 0, 4]).unwrap();
    mem.write_bytes(IB, &words_to_bytes(&selfcall)).unwrap();
    assert!(cp.submit(IB, 4, &mut mem, &mut Recorder::default()).is_err());
}

#[test]
fn the_core_hwqueue_patches_every_field_of_an_exec() {
    let enc = encoder();
    let prog = elementwise();
    let h = enc.add_program(&prog, CODE).unwrap();
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    q.exec(h, CONSTS, [32, 1, 1], [32, 1, 1]).unwrap();
    q.patch(1, Field::Kernargs, CONSTS + 0x100).unwrap();
    q.patch(1, Field::Global(0), 2).unwrap();
    q.patch(1, Field::Local(1), 4).unwrap();
    q.patch(1, Field::Global(1), 3).unwrap();
    let pkts = decode(q.words()).unwrap();
    let ls = pkts.iter().find_map(|p| match p {
        Packet::Type7 { opcode: op::CP_LOAD_STATE6_FRAG, payload } if payload[0] >> 14 & 3 == 1 => Some(payload[1]),
        _ => None,
    });
    assert_eq!(ls, Some(CONSTS as u32 + 0x100));
    let nd = pkts.iter().find_map(|p| match p {
        Packet::Type4 { reg, values } if *reg == regs::SP_CS_NDRANGE_0::REG => Some(values.to_vec()),
        _ => None,
    });
    let nd = nd.unwrap();
    let nd0 = regs::SP_CS_NDRANGE_0(nd[0]);
    assert_eq!((nd0.localsizex(), nd0.localsizey(), nd0.localsizez()), (31, 3, 0), "local − 1");
    assert_eq!((nd[1], nd[3], nd[5]), (64, 12, 1), "groups × local");
    assert_eq!(&nd[9..12], &[2, 3, 1], "SP_CS_KERNEL_GROUP_*");
    let exec = pkts.iter().find_map(|p| match p {
        Packet::Type7 { opcode: op::CP_EXEC_CS, payload } => Some(payload[1..4].to_vec()),
        _ => None,
    });
    assert_eq!(exec.unwrap(), [2, 3, 1]);
    // A local size the NDRANGE_0 field cannot hold, or threads beyond 32 bits, is refused and
    // changes nothing.
    let before = q.words().to_vec();
    assert!(q.patch(1, Field::Local(0), 0).is_err());
    assert!(q.patch(1, Field::Local(0), 2048).is_err());
    assert!(q.patch(1, Field::Global(0), u64::from(u32::MAX)).is_err());
    assert!(q.patch(1, Field::Program, 0).is_err(), "the program is not patchable");
    assert_eq!(q.words(), &before[..]);
    assert_eq!(
        q.command(1),
        Some(Command::Exec { program: h, kernargs: CONSTS + 0x100, global: [2, 3, 1], local: [32, 4, 1] })
    );
    // The patched words are a fresh encoding's of the patched command.
    let mut fresh = HwQueue::new(enc, &tl).unwrap();
    fresh.exec(h, CONSTS + 0x100, [2, 3, 1], [32, 4, 1]).unwrap();
    assert_eq!(q.words(), fresh.words());
}

/// The a6xx encoder's checks of a patched value reach the core queue through
/// `Encoder::check_patch`: each of these values fits its words (the marks' forms accept it), so
/// without the hook the core would write it.
#[test]
fn the_core_hwqueue_refuses_what_the_a6xx_encoder_refuses_and_writes_nothing() {
    let enc = encoder();
    let h = enc.add_program(&elementwise(), CODE).unwrap();
    let mut q = queue(enc);
    let e = q.push(Command::Exec { program: h, kernargs: CONSTS, global: [4, 1, 1], local: [32, 1, 1] }).unwrap();
    let s = q.push(Command::Signal { addr: SIGNALS, value: 1 }).unwrap();
    let c = q.push(Command::Copy { dst: SCRATCH, src: SCRATCH + 64, bytes: 16 }).unwrap();
    let (before, cmds) = (q.words().to_vec(), [q.command(e), q.command(s), q.command(c)]);
    let refused = [
        (e, Field::Local(1), 64, "exec: 32 × 64 threads beyond the program's max_threads (1024)"),
        (e, Field::Kernargs, CONSTS + 8, "exec: constants not 16-byte aligned"),
        (e, Field::Kernargs, 1 << 48, "exec: constants beyond 48 bits"),
        (e, Field::Global(0), 0, "exec: no work-groups"),
        (s, Field::Addr, SIGNALS + 4, "signal: not 8-byte aligned"),
        (c, Field::Dst, SCRATCH + 2, "copy: destination not 4-byte aligned"),
        (c, Field::Src, SCRATCH + 66, "copy: source not 4-byte aligned"),
    ];
    for (i, field, v, why) in refused {
        assert!(q.patch(i, field, v).is_err(), "{why}");
        assert_eq!(q.words(), &before[..], "{why}: nothing written");
    }
    assert_eq!([q.command(e), q.command(s), q.command(c)], cmds, "the commands are unchanged");
    // the same fields take a value the encoder accepts
    q.patch(e, Field::Local(1), 32).unwrap();
    q.patch(e, Field::Kernargs, CONSTS + 16).unwrap();
    q.patch(s, Field::Addr, SIGNALS + 8).unwrap();
    q.patch(c, Field::Dst, SCRATCH + 4).unwrap();
    assert_ne!(q.words(), &before[..]);
}

#[test]
fn a_signal_writes_the_low_word_first() {
    // Between the two event writes a reader must never see more than the new value: going from
    // 0x0_ffff_ffff to 0x1_0000_0000, high-first would show 0x1_ffff_ffff.
    let (mut q, mut mem, _) = setup(&elementwise());
    mem.write64(SIGNALS, 0x0_ffff_ffff).unwrap();
    let wait = q.words().len();
    q.push(Command::Signal { addr: SIGNALS, value: 0x1_0000_0000 }).unwrap();
    let words = q.words().to_vec();
    // Run only up to the end of the first event write (after the timeline wait: WFI 1 word +
    // EVENT_WRITE 5 words).
    mem.write_bytes(IB, &words_to_bytes(&words)).unwrap();
    let mut cp = Cp::new();
    cp.submit(IB, (wait + 6) as u32, &mut mem, &mut Recorder::default()).unwrap();
    let mid = mem.read64(SIGNALS).unwrap();
    assert_eq!(mid, 0x0_0000_0000, "the low word is written first");
    assert!(mid <= 0x1_0000_0000, "transient value {mid:#x}");
    cp.submit(IB, words.len() as u32, &mut mem, &mut Recorder::default()).unwrap();
    assert_eq!(mem.read64(SIGNALS).unwrap(), 0x1_0000_0000);
}

/// A tree of IBs, each `fanout` `CP_INDIRECT_BUFFER`s to the next level, three levels deep
/// (the nesting limit), the last of `fanout` NOPs: `fanout + fanout² + fanout³` packets from one
/// submission of `fanout` words × 4.
fn ib_tree(mem: &mut SparseMemory, fanout: u32) -> u32 {
    let levels = [IB, IB + 0x4_0000, IB + 0x8_0000];
    let mut nops = Vec::new();
    for _ in 0..fanout {
        pkt7(&mut nops, op::CP_NOP, &[]).unwrap();
    }
    mem.write_bytes(levels[2], &words_to_bytes(&nops)).unwrap();
    let mut callee = (levels[2], nops.len() as u32);
    for &at in levels[..2].iter().rev() {
        let mut w = Vec::new();
        for _ in 0..fanout {
            pkt7(&mut w, op::CP_INDIRECT_BUFFER, &[callee.0 as u32, 0, callee.1]).unwrap();
        }
        mem.write_bytes(at, &words_to_bytes(&w)).unwrap();
        callee = (at, w.len() as u32);
    }
    callee.1
}

/// A crafted IB tree (before: ~10^10 packets run while holding the device, no bound) stops at the
/// packet budget of a submission with a fault naming it, in a fraction of a second; the next
/// submission has the whole budget again, and a tree within the budget runs to the end.
#[test]
fn a_submission_stops_at_its_packet_budget() {
    let mut mem = memory();
    // 300 + 300² + 300³ ≈ 2.7·10^7 packets: past the default budget of 2^24.
    let words = ib_tree(&mut mem, 300);
    let mut cp = Cp::new();
    assert_eq!(cp.packet_budget(), hcq_sim_adreno::cp::DEFAULT_PACKET_BUDGET);
    let t = std::time::Instant::now();
    let err = cp.submit(IB, words, &mut mem, &mut Recorder::default()).unwrap_err();
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    assert!(err.to_string().contains("packets of one submission"), "{err}");
    assert!(matches!(err.root(), hcq::Error::OutOfSpace { capacity, .. } if *capacity == 1 << 24), "{err}");
    assert_eq!(cp.packets(), 1 << 24);
    // 10 + 100 + 1000 packets fit a budget of 1110, and a second submission starts afresh.
    let words = ib_tree(&mut mem, 10);
    cp.set_packet_budget(1110);
    for _ in 0..2 {
        assert_eq!(cp.submit(IB, words, &mut mem, &mut Recorder::default()).unwrap(), Outcome::Done);
    }
    cp.set_packet_budget(1109);
    let err = cp.submit(IB, words, &mut mem, &mut Recorder::default()).unwrap_err();
    assert!(matches!(err.root(), hcq::Error::OutOfSpace { requested: 1110, capacity: 1109, .. }), "{err}");
}

/// The dispatch of `a_dispatch_reaches_the_callback_with_the_programs_state` with
/// `SP_CS_CONST_CONFIG` rewritten to `value` in the command stream.
fn dispatch_with_const_config(value: u32) -> hcq::Result<Outcome> {
    let prog = elementwise();
    let (mut q, mut mem, h) = setup(&prog);
    let mut block = vec![0u8; prog.const_block_bytes as usize];
    prog.fill_consts(&mut block, &[0xa000, 0xb000, 0xc000], &[], [32, 1, 1]).unwrap();
    mem.write_bytes(CONSTS, &block).unwrap();
    q.push(Command::Exec { program: h, kernargs: CONSTS, global: [32, 1, 1], local: [32, 1, 1] }).unwrap();
    let mut words = q.words().to_vec();
    let reg = regs::SP_CS_CONST_CONFIG::REG;
    // The type-4 packet whose burst covers the register (header: count in bits 0..7, first
    // register in bits 8..26); packets are walked from the start so payloads are skipped.
    let (mut i, mut slot) = (0, None);
    while i < words.len() && slot.is_none() {
        let w = words[i];
        let n = if w >> 28 == 4 { w & 0x7f } else { w & 0x3fff };
        let first = (w >> 8) & 0x3_ffff;
        if w >> 28 == 4 && (first..first + n).contains(&reg) {
            slot = Some(i + 1 + (reg - first) as usize);
        }
        i += 1 + n as usize;
    }
    words[slot.expect("the encoder writes SP_CS_CONST_CONFIG")] = value;
    mem.write_bytes(IB, &words_to_bytes(&words))?;
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    cp.submit(IB, words.len() as u32, &mut mem, &mut rec)
}

#[test]
fn constlen_zero_is_the_whole_constant_file_as_tinygrad_writes_it() {
    // tinygrad's QCOM runtime writes 0x100 (enabled, CONSTLEN 0) with 256 vec4 loaded.
    assert_eq!(dispatch_with_const_config(0x100).unwrap(), Outcome::Done);
    // Disabled constants and a CONSTLEN below the load are still refused.
    assert!(dispatch_with_const_config(0x000).is_err());
    assert!(dispatch_with_const_config(0x100 | 1).is_err());
}

#[test]
fn a_constant_load_past_the_end_of_its_object_reads_zeros_but_one_outside_faults() {
    let prog = elementwise();
    // Constants in the last 64 bytes of the 64 KiB constant mapping: the 256-vec4 load runs
    // past its end.
    let tail = CONSTS + 0x1_0000 - 64;
    let (mut q, mut mem, h) = setup(&prog);
    let mut block = vec![0u8; 64];
    block[..4].copy_from_slice(&0xa000u32.to_le_bytes());
    mem.write_bytes(tail, &block).unwrap();
    q.push(Command::Exec { program: h, kernargs: tail, global: [32, 1, 1], local: [32, 1, 1] }).unwrap();
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    assert_eq!(run(&q, &mut mem, &mut cp, &mut rec).unwrap(), Outcome::Done);
    assert_eq!(rec.seen[0].consts[0], 0xa000);
    assert!(rec.seen[0].consts[16..].iter().all(|&w| w == 0), "beyond the object: zeros");
    // Starting outside every object is a fault.
    let (mut q, mut mem, h) = setup(&prog);
    q.push(Command::Exec { program: h, kernargs: CONSTS + 0x2_0000, global: [32, 1, 1], local: [32, 1, 1] }).unwrap();
    let (mut cp, mut rec) = (Cp::new(), Recorder::default());
    assert!(run(&q, &mut mem, &mut cp, &mut rec).is_err());
}
