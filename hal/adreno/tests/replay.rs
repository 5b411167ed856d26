//! Replays through the core's queue shapes: the core `HwQueue` built with the `A6xxEncoder`
//! patches every field of every command (every place and derived form) exactly as encoding the
//! patched command from scratch, and refuses exactly the patches whose command the encoder
//! refuses (through `Encoder::check_patch`), writing nothing; the timeline wait and signal
//! the core adds to a queue are patched for each submission, across the 32-bit rollover.

mod common;

use common::*;
use hcq::error::device_name;
use hcq::mmio::{HostRegion, MmioBus, Width};
use hcq::queue::{Command, Field, HwQueue};
use hcq::ring::{CommandRing, Doorbell, KernargPool};
use hcq::signal::{OwnedSignal, SignalPool, StdHooks};
use hcq_adreno::A6xxEncoder;
use hcq_sim_adreno::cp::{Cp, Outcome, SparseMemory};
use proptest::prelude::*;
use std::sync::Arc;

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

/// A command drawn from small ranges (every address aligned as the encoder wants it).
fn command(programs: [u64; 2]) -> impl Strategy<Value = Command> {
    let local = (1u32..=16, 1u32..=8, 1u32..=4);
    prop_oneof![
        (0u64..64, any::<u64>()).prop_map(|(k, value)| Command::Wait { addr: SIGNALS + 16 * k, value }),
        (0u64..64, any::<u64>()).prop_map(|(k, value)| Command::Signal { addr: SIGNALS + 16 * k, value }),
        // the index of one of `Rig::stamps` (the core's queue writes a timestamp of a signal)
        (0u64..8).prop_map(|k| Command::Timestamp { addr: k }),
        (0usize..2, 0u64..256, (1u32..=64, 1u32..=64, 1u32..=8), local).prop_map(
            move |(p, k, (gx, gy, gz), (lx, ly, lz))| Command::Exec {
                program: programs[p],
                kernargs: CONSTS + 16 * k,
                global: [gx, gy, gz],
                local: [lx, ly, lz],
            }
        ),
        Just(Command::Barrier),
        (0u64..1024, 0u64..1024, 1u64..=512).prop_map(|(d, s, n)| Command::Copy {
            dst: SCRATCH + 4 * d,
            src: CONSTS + 4 * s,
            bytes: 4 * n
        }),
    ]
}

/// A patch of command `i % len` (the timeline wait excluded): the field picked among the
/// command's fields by `f`, a value from `v` in the field's range (sometimes out of it).
fn patch_for(cmds: &[Command], stamps: &[u64], i: usize, f: u8, v: u64) -> Option<(usize, Field, u64)> {
    let i = 1 + i % cmds.len();
    let (field, value) = match cmds[i - 1] {
        Command::Wait { .. } | Command::Signal { .. } => {
            if f.is_multiple_of(2) {
                (Field::Value, v)
            } else {
                (Field::Addr, SIGNALS + 16 * (v % 64))
            }
        }
        Command::Timestamp { .. } => (Field::Addr, stamps[(v % stamps.len() as u64) as usize]),
        Command::Exec { .. } => match f % 5 {
            0 => (Field::Kernargs, CONSTS + 16 * (v % 256)),
            1 | 2 => (Field::Global(f % 3), 1 + v % 100),
            3 => (Field::Local(f % 3), 1 + v % 24),
            // a value out of range now and then: 0, too many threads, misaligned
            _ => [(Field::Local(0), 0), (Field::Global(1), 1 << 31), (Field::Kernargs, CONSTS + 8)][(v % 3) as usize],
        },
        Command::Copy { .. } => match f % 3 {
            0 => (Field::Dst, SCRATCH + 4 * (v % 1024)),
            1 => (Field::Src, CONSTS + 4 * (v % 1024)),
            _ => (Field::Size, 4 * (1 + v % 2048)),
        },
        Command::Barrier => return None,
    };
    Some((i, field, value))
}

struct Rig {
    enc: Arc<A6xxEncoder>,
    programs: [u64; 2],
    _pool: SignalPool,
    tl: OwnedSignal,
    stamps: Vec<OwnedSignal>,
}

fn rig() -> Rig {
    let enc = encoder();
    let programs = [enc.add_program(&elementwise(), CODE).unwrap(), enc.add_program(&reduction(), CODE).unwrap()];
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let stamps = (0..8).map(|_| pool.alloc(0)).collect();
    Rig { enc, programs, _pool: pool, tl, stamps }
}

impl Rig {
    /// Push `c` with the core queue's builder methods (a timestamp through its signal).
    fn push(&self, q: &mut HwQueue, c: Command) -> hcq::Result<()> {
        match c {
            Command::Wait { addr, value } => q.wait_at(addr, value),
            Command::Signal { addr, value } => q.signal_at(addr, value),
            Command::Timestamp { addr } => match self.stamps.iter().find(|s| s.timestamp_addr() == addr) {
                Some(s) => q.timestamp(s),
                None => panic!("no signal of the rig has its timestamp at {addr:#x}"),
            },
            Command::Exec { program, kernargs, global, local } => q.exec(program, kernargs, global, local),
            Command::Copy { dst, src, bytes } => q.copy(dst, src, bytes),
            Command::Barrier => q.memory_barrier(),
        }
        .map(|_| ())
    }

    /// The strategy's placeholder timestamp (a signal index) as the signal's timestamp address.
    fn resolve(&self, c: Command) -> Command {
        match c {
            Command::Timestamp { addr } => Command::Timestamp { addr: self.stamps[addr as usize].timestamp_addr() },
            c => c,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn patched_queues_equal_fresh_encodings(
        cmds in prop::collection::vec(command([0, 1]), 1..12),
        patches in prop::collection::vec((any::<usize>(), any::<u8>(), any::<u64>()), 0..24),
    ) {
        let r = rig();
        // the strategy's program indices are the handles `rig` registered, in order
        prop_assert_eq!(r.programs, [0, 1]);
        let mut core = HwQueue::new(r.enc.clone(), &r.tl).unwrap();
        let mut kept = Vec::new();
        for c in cmds.iter().map(|c| r.resolve(*c)) {
            // a local size beyond the program's max_threads is refused by the queue as by the
            // encoder
            let a = r.push(&mut core, c);
            prop_assert_eq!(a.is_ok(), encoded(&r.enc, c).is_ok(), "{:?}: {:?}", c, a);
            if a.is_ok() {
                kept.push(c);
            }
        }
        if kept.is_empty() {
            return Ok(());
        }
        let stamp_addrs: Vec<u64> = r.stamps.iter().map(|s| s.timestamp_addr()).collect();
        for (i, f, v) in patches {
            let Some((i, field, value)) = patch_for(&kept, &stamp_addrs, i, f, v) else { continue };
            let (before, old) = (core.words().to_vec(), core.command(i).unwrap());
            // the patch is accepted exactly when the encoder accepts the patched command
            let mut next = old;
            let valid = next.set_field(field, value).unwrap_or(false) && encoded(&r.enc, next).is_ok();
            let res = core.patch(i, field, value);
            prop_assert_eq!(res.is_ok(), valid, "patching {:?} of {} to {:#x}: {:?}", field, i, value, res);
            if !valid {
                prop_assert_eq!(core.words(), &before[..], "a refused patch changes nothing");
                prop_assert_eq!(core.command(i), Some(old));
            }
        }
        // the words equal encoding the patched commands from scratch
        let mut fresh = HwQueue::new(r.enc.clone(), &r.tl).unwrap();
        for i in 1..core.len() {
            r.push(&mut fresh, core.command(i).unwrap()).unwrap();
        }
        prop_assert_eq!(core.words(), fresh.words());
    }
}

/// Run `words` on a fresh CP over `mem` (the IB at `IB`).
fn run(words: &[u32], mem: &mut SparseMemory) -> Outcome {
    mem.write_bytes(IB, &words_to_bytes(words)).unwrap();
    Cp::new().submit(IB, words.len() as u32, mem, &mut Recorder::default()).unwrap()
}

#[test]
fn the_timeline_wait_and_signal_are_patched_across_the_32_bit_rollover() {
    let r = rig();
    let prog = elementwise();
    let h = r.programs[0];
    let mut q = HwQueue::new(r.enc.clone(), &r.tl).unwrap();
    q.exec(h, CONSTS, [4, 1, 1], [32, 1, 1]).unwrap();
    q.memory_barrier().unwrap();
    q.copy(SCRATCH + 0x100, SIGNALS + 0x100, 16).unwrap();
    q.finish().unwrap();
    let last = q.len() - 1;
    assert_eq!(q.command(0), Some(Command::Wait { addr: r.tl.addr(), value: 0 }));
    assert_eq!(q.command(last), Some(Command::Signal { addr: r.tl.addr(), value: 0 }));
    let mut mem = memory();
    mem.write_bytes(CODE, &prog.image).unwrap();
    // the timeline signal's slot, at its (host) address, in the simulated GPU's memory
    mem.map(r.tl.addr(), 16).unwrap();
    for (wait_for, signal) in [
        (0, 1),
        (0x7fff_ffff, 0x8000_0000),
        (0xffff_fffe, 0xffff_ffff),
        (0xffff_ffff, 0x1_0000_0000),
        (0x1_0000_0000, 0x1_0000_0001),
        (0x1_ffff_ffff, 0x2_0000_0000),
    ] {
        // what `Submitter::submit` does through `patch_timeline`
        q.patch(0, Field::Value, wait_for).unwrap();
        q.patch(last, Field::Value, signal).unwrap();
        let fresh: Vec<u32> = (0..q.len()).flat_map(|i| encoded(&r.enc, q.command(i).unwrap()).unwrap()).collect();
        assert_eq!(q.words(), fresh, "timeline {wait_for:#x} -> {signal:#x}");
        // one short of the value: the queue blocks in the timeline wait (its first two
        // packets, 7 words each); at the value it runs through and signals the next
        mem.write64(r.tl.addr(), wait_for.wrapping_sub(1)).unwrap();
        if wait_for > 0 {
            let out = run(q.words(), &mut mem);
            assert!(matches!(out, Outcome::Blocked { word: 0 | 7, .. }), "{wait_for:#x}: {out:?}");
        }
        mem.write64(r.tl.addr(), wait_for).unwrap();
        assert_eq!(run(q.words(), &mut mem), Outcome::Done, "{wait_for:#x}");
        assert_eq!(mem.read64(r.tl.addr()).unwrap(), signal);
    }
}

/// A doorbell register nobody listens to.
struct Quiet;

impl MmioBus for Quiet {
    fn size(&self) -> usize {
        8
    }
    fn read(&self, _: usize, _: Width) -> hcq::Result<u64> {
        Ok(0)
    }
    fn write(&self, _: usize, _: Width, _: u64) -> hcq::Result<()> {
        Ok(())
    }
}

#[test]
fn submitting_through_the_core_patches_the_timeline_into_the_a6xx_words() {
    let r = rig();
    let pool = SignalPool::new();
    let ring_mem = Arc::new(HostRegion::new(1 << 16, 8).unwrap());
    let ring =
        CommandRing::new(ring_mem.clone(), 8, Doorbell { bus: Arc::new(Quiet), offset: 0, width: Width::U32 }).unwrap();
    let kernargs = KernargPool::new(Arc::new(HostRegion::new(4096, 16).unwrap()), CONSTS, 8);
    let hcq = hcq::engine::Engine::new(
        device_name("QCOM:TEST"),
        pool.alloc(0),
        r.enc.clone(),
        vec![hcq::engine::Channel::new("compute", ring)],
        kernargs,
        Arc::new(StdHooks),
    )
    .unwrap();
    let tl = hcq.timeline().signal().addr();
    let mut at = 0usize;
    for n in 1..=3u64 {
        let mut q = hcq.queue().unwrap();
        q.exec(r.programs[1], CONSTS + 16 * n, [2, 1, 1], [64, 1, 1]).unwrap();
        let stamp = submit!(hcq, 0, &mut q).unwrap();
        assert_eq!(stamp.get(), n);
        assert_eq!(q.command(0), Some(Command::Wait { addr: tl, value: n - 1 }));
        assert_eq!(q.command(q.len() - 1), Some(Command::Signal { addr: tl, value: n }));
        // the ring holds exactly the words of encoding the patched commands from scratch
        let fresh: Vec<u32> = (0..q.len()).flat_map(|i| encoded(&r.enc, q.command(i).unwrap()).unwrap()).collect();
        let ring_words: Vec<u32> =
            (0..fresh.len()).map(|k| ring_mem.read(4 * (at + k), Width::U32).unwrap() as u32).collect();
        assert_eq!(ring_words, fresh, "submission {n}");
        at += fresh.len();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// What `HwQueue::patch` relies on: each `Form::Fn` mark of the encoder reads only its own
    /// field (a word packing several fields has one mark per field), so changing any other
    /// field leaves its word as it was.
    #[test]
    fn each_derived_word_depends_only_on_the_fields_that_mark_it(c in command([0, 0]), v in 1u64..16) {
        let r = rig();
        let c = r.resolve(c);
        let mut q = queue(r.enc.clone());
        let i = q.push(c).unwrap();
        let fields = [
            Field::Value, Field::Addr, Field::Program, Field::Kernargs, Field::Dst, Field::Src, Field::Size,
            Field::Global(0), Field::Global(1), Field::Global(2), Field::Local(0), Field::Local(1), Field::Local(2),
        ];
        let marks = q.marks(i);
        for m in marks.iter().filter(|m| matches!(m.form, hcq::queue::Form::Fn(_))) {
            let same_word: Vec<Field> = marks.iter().filter(|o| o.word == m.word).map(|o| o.field).collect();
            let before = m.eval(&c).unwrap();
            prop_assert_eq!(before, u64::from(q.words()[m.word as usize]));
            for f in fields.iter().filter(|f| !same_word.contains(f)) {
                let mut changed = c;
                if changed.set_field(*f, 4 * v).unwrap() {
                    prop_assert_eq!(m.eval(&changed).unwrap(), before, "{:?} word {} after {:?}", m.field, m.word, f);
                }
            }
        }
    }
}
