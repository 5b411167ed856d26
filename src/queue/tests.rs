use super::*;
use crate::signal::SignalPool;
use crate::soft::{SoftEncoder, decode};

fn queue() -> (HwQueue, crate::signal::OwnedSignal) {
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    (HwQueue::new(Arc::new(SoftEncoder), &tl).unwrap(), tl)
}

#[test]
fn a_queue_is_bracketed_by_timeline_wait_and_signal() {
    let (mut q, tl) = queue();
    q.exec(7, 0x1000, [2, 1, 1], [1, 1, 1]).unwrap();
    q.finish().unwrap();
    assert_eq!(q.command(0), Some(Command::Wait { addr: tl.addr(), value: 0 }));
    assert_eq!(q.command(2), Some(Command::Signal { addr: tl.addr(), value: 0 }));
    assert!(q.exec(1, 2, [1; 3], [1; 3]).is_err(), "no commands after finish");
}

#[test]
fn patching_rewrites_exactly_the_field_words() {
    let (mut q, _tl) = queue();
    q.exec(7, 0x1000, [2, 1, 1], [1, 1, 1]).unwrap();
    q.copy(0x10, 0x20, 64).unwrap();
    q.finish().unwrap();
    let before = q.words().to_vec();
    q.patch(1, Field::Kernargs, 0xdead_beef_0000).unwrap();
    q.patch(2, Field::Size, 128).unwrap();
    q.patch_timeline(4, 5).unwrap();
    let changed = before.iter().zip(q.words()).filter(|(a, b)| a != b).count();
    // kernargs (2 words, both differ) + size low word + wait value low word + signal value low word
    assert_eq!(changed, 5);
    let cmds: Vec<Command> = decode(q.words()).map(|r| r.unwrap()).collect();
    assert_eq!(cmds[1], Command::Exec { program: 7, kernargs: 0xdead_beef_0000, global: [2, 1, 1], local: [1, 1, 1] });
    assert_eq!(cmds[2], Command::Copy { dst: 0x10, src: 0x20, bytes: 128 });
    assert!(matches!(cmds[0], Command::Wait { value: 4, .. }));
    assert!(matches!(cmds[3], Command::Signal { value: 5, .. }));
    assert_eq!(q.command(2), Some(cmds[2]));
}

#[test]
fn patching_a_missing_field_or_command_is_an_error() {
    let (mut q, _tl) = queue();
    q.memory_barrier().unwrap();
    assert!(q.patch(1, Field::Kernargs, 1).is_err());
    assert!(q.patch(9, Field::Value, 1).is_err());
}

/// An encoder in the manner of a GPU's PM4 stream: the kernel-argument address in two
/// places (a constant register and a descriptor), "local size − 1" in a size register, and
/// "groups × local size" in an ND-range register, besides the plain fields.
struct Pm4Like;

fn packed(c: &Command) -> u64 {
    match c {
        // a control word packing local x − 1 in bits 0..10 and local y − 1 in bits 10..20
        Command::Exec { local, .. } => u64::from(local[0] - 1) | u64::from(local[1] - 1) << 10,
        _ => 0,
    }
}

impl Encoder for Pm4Like {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        match *cmd {
            Command::Exec { program, kernargs, .. } => {
                w.word(0xE0);
                w.field64(Field::Program, program);
                w.field64(Field::Kernargs, kernargs);
                w.derived32(Field::Local(0), Form::Offset(-1), cmd)?;
                w.derived32(Field::Global(0), Form::Times(Field::Local(0)), cmd)?;
                w.derived32(Field::Local(0), Form::Fn(packed), cmd)?;
                w.mark_last(Field::Local(1), Form::Fn(packed))?;
                w.field64(Field::Kernargs, kernargs);
                w.derived32(Field::Global(1), Form::Scale(4), cmd)?;
            }
            Command::Wait { addr, value } | Command::Signal { addr, value } => {
                w.word(0xE1);
                w.field64(Field::Addr, addr);
                w.field64(Field::Value, value);
            }
            _ => w.word(0xEF),
        }
        Ok(())
    }
}

#[test]
fn patching_rewrites_every_place_and_form_a_field_was_written() {
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(Arc::new(Pm4Like), &tl).unwrap();
    q.exec(3, 0x1111_0000_2222, [10, 2, 1], [64, 4, 1]).unwrap();
    // exec starts after the 5-word wait: header, program (2), kernargs (2), then the rest
    let exec = 5;
    let at = |q: &HwQueue, i: usize| q.words()[exec + i];
    assert_eq!((at(&q, 5), at(&q, 6), at(&q, 7)), (63, 640, 63 | 3 << 10));
    assert_eq!((at(&q, 8), at(&q, 9), at(&q, 10)), (0x0000_2222, 0x1111, 8));
    q.patch(1, Field::Kernargs, 0xaaaa_0000_bbbb).unwrap();
    assert_eq!((at(&q, 3), at(&q, 4)), (0x0000_bbbb, 0xaaaa), "first place");
    assert_eq!((at(&q, 8), at(&q, 9)), (0x0000_bbbb, 0xaaaa), "second place");
    q.patch(1, Field::Local(0), 128).unwrap();
    assert_eq!(at(&q, 5), 127, "local - 1");
    assert_eq!(at(&q, 6), 1280, "groups x local follows the local size");
    assert_eq!(at(&q, 7), 127 | 3 << 10, "packed control word");
    q.patch(1, Field::Global(0), 3).unwrap();
    assert_eq!(at(&q, 6), 384, "groups x local follows the group count");
    q.patch(1, Field::Global(1), 5).unwrap();
    assert_eq!(at(&q, 10), 20);
    q.patch(1, Field::Local(1), 2).unwrap();
    assert_eq!(at(&q, 7), 127 | 1 << 10, "a packed word is patched through either field");
    assert_eq!(
        q.command(1),
        Some(Command::Exec { program: 3, kernargs: 0xaaaa_0000_bbbb, global: [3, 5, 1], local: [128, 2, 1] })
    );
}

#[test]
fn a_patch_that_does_not_fit_changes_nothing() {
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(Arc::new(Pm4Like), &tl).unwrap();
    q.exec(3, 0x1000, [10, 2, 1], [64, 4, 1]).unwrap();
    let before = q.words().to_vec();
    // 2^31 groups x 64 overflows the 32-bit ND-range word although the group count fits
    assert!(q.patch(1, Field::Global(0), 1 << 31).is_err());
    assert!(q.patch(1, Field::Global(0), 1 << 32).is_err(), "grid sizes are 32-bit");
    // Global(2) is part of the command but no word depends on it
    assert!(q.patch(1, Field::Global(2), 7).is_err());
    assert!(q.patch(1, Field::Size, 7).is_err(), "not a field of exec");
    assert_eq!(q.words(), &before[..]);
    assert_eq!(q.command(1).and_then(|c| c.field(Field::Global(0))), Some(10));
}

/// [`SoftEncoder`]'s words, but a copy size must be a multiple of 4 (checked at encode and,
/// through the hook, at patch).
struct Dwords;

impl Encoder for Dwords {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        self.check_patch(cmd, Field::Size)?;
        SoftEncoder.encode(cmd, w)
    }

    fn check_patch(&self, cmd: &Command, field: Field) -> Result<()> {
        match (*cmd, field) {
            (Command::Copy { bytes, .. }, Field::Size) if !bytes.is_multiple_of(4) => {
                Err(Error::InvalidArgument { what: "test copy size: not whole dwords", value: bytes })
            }
            _ => Ok(()),
        }
    }
}

#[test]
fn the_encoders_check_refuses_a_patch_before_anything_is_written() {
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(Arc::new(Dwords), &tl).unwrap();
    let c = q.push(Command::Copy { dst: 0x10, src: 0x20, bytes: 64 }).unwrap();
    assert_eq!(c, 1, "push returns the index after the timeline wait");
    let before = q.words().to_vec();
    // the value fits the word: only the hook can refuse it
    assert!(q.patch(c, Field::Size, 66).is_err());
    assert_eq!(q.words(), &before[..], "a refused patch writes nothing");
    assert_eq!(q.command(c), Some(Command::Copy { dst: 0x10, src: 0x20, bytes: 64 }));
    q.patch(c, Field::Size, 68).unwrap();
    q.patch(c, Field::Dst, 0x11).unwrap();
    assert_eq!(q.command(c), Some(Command::Copy { dst: 0x11, src: 0x20, bytes: 68 }));
    assert_eq!(q.marks(c).len(), 3, "dst, src and size are marked");
    assert!(q.marks(9).is_empty());
}

/// A 64-bit value split over two places that are not adjacent, as two 32-bit marks.
struct Split;

impl Encoder for Split {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        match *cmd {
            Command::Wait { value, .. } | Command::Signal { value, .. } => {
                w.derived32(Field::Value, Form::Lo, cmd)?;
                w.word(0x5eed);
                w.derived32(Field::Value, Form::Hi, cmd)?;
                w.field64(Field::Value, value);
            }
            _ => w.word(0),
        }
        Ok(())
    }
}

#[test]
fn low_and_high_halves_are_patched_in_place_and_clear_starts_over() {
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::with_capacity(Arc::new(Split), &tl, 16, 4).unwrap();
    q.finish().unwrap();
    q.patch_timeline(0x1_0000_0002, 0xffff_ffff_0000_0003).unwrap();
    assert_eq!(q.words(), &[2, 0x5eed, 1, 2, 1, 3, 0x5eed, 0xffff_ffff, 3, 0xffff_ffff]);
    let cap = q.words.capacity();
    q.clear().unwrap();
    assert_eq!(q.len(), 1, "only the timeline wait again");
    assert!(!q.is_finished());
    q.finish().unwrap();
    assert_eq!(q.words(), &[0, 0x5eed, 0, 0, 0, 0, 0x5eed, 0, 0, 0]);
    assert_eq!(q.words.capacity(), cap, "clear keeps the memory");
}

/// Writes the kernel-argument address in 20 places (more than `patch` keeps on its stack),
/// and once more in a derived form.
struct Many;

impl Encoder for Many {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        match *cmd {
            Command::Exec { kernargs, .. } => {
                for _ in 0..20 {
                    w.field64(Field::Kernargs, kernargs);
                }
                w.derived64(Field::Kernargs, Form::Offset(16), cmd)?;
            }
            Command::Wait { value, .. } | Command::Signal { value, .. } => w.field64(Field::Value, value),
            _ => w.word(0),
        }
        Ok(())
    }
}

/// Writes a wait/signal value twice: 64 bits, then (after it) 32 bits as is.
struct NarrowAfterWide;

impl Encoder for NarrowAfterWide {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        match *cmd {
            Command::Wait { value, .. } | Command::Signal { value, .. } => {
                w.field64(Field::Value, value);
                w.field32(Field::Value, value as u32);
            }
            _ => w.word(0),
        }
        Ok(())
    }
}

#[test]
fn a_value_too_wide_for_a_later_narrow_mark_writes_nothing() {
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(Arc::new(NarrowAfterWide), &tl).unwrap();
    q.patch(0, Field::Value, 0xffff_ffff).unwrap();
    assert_eq!(&q.words()[..3], &[0xffff_ffff, 0, 0xffff_ffff]);
    let before = q.words().to_vec();
    let err = q.patch(0, Field::Value, 1 << 33).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { what, .. } if what.contains("does not fit a 32-bit field")),
        "{err:?}"
    );
    assert_eq!(q.words(), &before[..], "the wide mark before the narrow one must not be written");
    assert_eq!(q.command(0), Some(Command::Wait { addr: tl.addr(), value: 0xffff_ffff }));
}

#[test]
fn patching_a_field_written_in_many_places_rewrites_them_all() {
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(Arc::new(Many), &tl).unwrap();
    q.exec(1, 0x1_0000_0002, [1; 3], [1; 3]).unwrap();
    q.patch(1, Field::Kernargs, 0x3_0000_0004).unwrap();
    let exec = &q.words()[2..42];
    assert!(exec.chunks(2).all(|c| c == [4, 3]), "{exec:?}");
    assert_eq!(&q.words()[42..44], &[20, 3]);
}
