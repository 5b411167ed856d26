//! Hardware queues: a builder of wait/signal/timestamp/exec/copy/barrier commands, encoded by a
//! backend's [`Encoder`] into command words.
//!
//! Encoding happens once, when the queue is built. The encoder marks the words that carry values
//! a replay may change (signal values, kernel-argument addresses, sizes, ...); [`HwQueue::patch`]
//! rewrites only those words, so replaying a captured graph with new values costs a few stores
//! on the host, and submitting copies the words into the device's ring (see `hcq`).
//!
//! Every queue starts with a wait on its device's timeline and ends with a signal of it (added
//! by [`HwQueue::new`] and [`HwQueue::finish`]); the submitter patches those two values for each
//! submission, which totally orders a device's submissions.

use crate::error::{Error, Result};
use crate::signal::Signal;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// One command, with device addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Wait until the signal at `addr` reaches `value`.
    Wait {
        /// Device address of the signal value.
        addr: u64,
        /// Value to wait for.
        value: u64,
    },
    /// Write `value` to the signal at `addr`.
    Signal {
        /// Device address of the signal value.
        addr: u64,
        /// Value to write.
        value: u64,
    },
    /// Write the device clock to the timestamp at `addr` (a signal's `+8`).
    Timestamp {
        /// Device address of the timestamp.
        addr: u64,
    },
    /// Run a program.
    Exec {
        /// Backend handle of the loaded program (a code address or a table index).
        program: u64,
        /// Device address of the kernel-argument block.
        kernargs: u64,
        /// Global size (work-groups, or calls for CPU `core_id` kernels).
        global: [u32; 3],
        /// Local size (threads per work-group).
        local: [u32; 3],
    },
    /// Copy `bytes` from `src` to `dst` (device addresses).
    Copy {
        /// Destination.
        dst: u64,
        /// Source.
        src: u64,
        /// Byte count.
        bytes: u64,
    },
    /// Make earlier memory writes visible to later commands.
    Barrier,
}

/// The fields of a command a replay can patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Signal/wait value.
    Value,
    /// Signal/wait/timestamp address.
    Addr,
    /// Exec: program handle.
    Program,
    /// Exec: kernel-argument address.
    Kernargs,
    /// Exec: global size, dimension 0..3.
    Global(u8),
    /// Exec: local size, dimension 0..3.
    Local(u8),
    /// Copy destination.
    Dst,
    /// Copy source.
    Src,
    /// Copy size.
    Size,
}

/// Where a patchable field sits in the queue's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Index of the command in the queue.
    pub cmd: u32,
    /// Which field.
    pub field: Field,
    /// First word of the field.
    pub word: u32,
    /// `true` for a 64-bit field (two words, low first), else 32-bit.
    pub wide: bool,
}

/// Appends a command's words and records its patchable fields.
pub struct CmdWriter<'a> {
    words: &'a mut Vec<u32>,
    marks: &'a mut Vec<Mark>,
    cmd: u32,
}

impl<'a> CmdWriter<'a> {
    /// A writer appending command `cmd` to `words`, recording its patchable fields in `marks`
    /// (for backends that encode outside an [`HwQueue`], and tests).
    pub fn new(words: &'a mut Vec<u32>, marks: &'a mut Vec<Mark>, cmd: u32) -> Self {
        Self { words, marks, cmd }
    }

    /// Append a plain word.
    #[inline]
    pub fn word(&mut self, w: u32) {
        self.words.push(w);
    }

    /// Append a 64-bit value as two words (low first).
    #[inline]
    pub fn word64(&mut self, v: u64) {
        self.words.push(v as u32);
        self.words.push((v >> 32) as u32);
    }

    /// Append a 32-bit patchable field.
    #[inline]
    pub fn field32(&mut self, field: Field, v: u32) {
        self.marks.push(Mark { cmd: self.cmd, field, word: self.words.len() as u32, wide: false });
        self.words.push(v);
    }

    /// Append a 64-bit patchable field (low word first).
    #[inline]
    pub fn field64(&mut self, field: Field, v: u64) {
        self.marks.push(Mark { cmd: self.cmd, field, word: self.words.len() as u32, wide: true });
        self.word64(v);
    }

    /// Words written so far in the whole queue (to compute packet lengths).
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True when the queue holds no words yet.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Overwrite an already written word (a packet header whose length is known at the end).
    pub fn set(&mut self, index: usize, w: u32) -> Result<()> {
        let len = self.words.len();
        let slot = self.words.get_mut(index).ok_or(Error::OutOfBounds {
            what: "queue word",
            offset: index as u64,
            len: 1,
            limit: len as u64,
        })?;
        *slot = w;
        Ok(())
    }
}

/// A backend's command encoding.
///
/// `encode` appends the words of one command through the writer and marks every field that
/// [`Field`] names for that command kind with `field32`/`field64` (a field it does not mark
/// cannot be patched: [`HwQueue::patch`] then returns an error). It returns an error for a
/// command the backend cannot run (e.g. a copy on a compute-only engine).
pub trait Encoder: Send + Sync {
    /// Append the words of `cmd`.
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()>;
}

#[derive(Clone, Copy, Debug)]
struct CmdInfo {
    cmd: Command,
    first_mark: u32,
    marks: u32,
}

/// A queue of encoded commands.
pub struct HwQueue {
    encoder: Arc<dyn Encoder>,
    words: Vec<u32>,
    marks: Vec<Mark>,
    cmds: Vec<CmdInfo>,
    timeline_addr: u64,
    finished: bool,
}

impl core::fmt::Debug for HwQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HwQueue").field("commands", &self.cmds.len()).field("words", &self.words.len()).finish()
    }
}

impl HwQueue {
    /// An empty queue for the device whose timeline signal is `timeline`, encoded by `encoder`.
    /// It starts with the timeline wait (value patched at submit).
    pub fn new(encoder: Arc<dyn Encoder>, timeline: &Signal) -> Result<Self> {
        let mut q = Self {
            encoder,
            words: Vec::with_capacity(64),
            marks: Vec::with_capacity(16),
            cmds: Vec::with_capacity(8),
            timeline_addr: timeline.addr(),
            finished: false,
        };
        q.push(Command::Wait { addr: q.timeline_addr, value: 0 })?;
        Ok(q)
    }

    fn push(&mut self, cmd: Command) -> Result<&mut Self> {
        if self.finished {
            return Err(Error::InvalidArgument {
                what: "queue is finished: no more commands",
                value: self.cmds.len() as u64,
            });
        }
        let idx = self.cmds.len() as u32;
        let (words0, marks0) = (self.words.len(), self.marks.len());
        let mut w = CmdWriter { words: &mut self.words, marks: &mut self.marks, cmd: idx };
        if let Err(e) = self.encoder.encode(&cmd, &mut w) {
            self.words.truncate(words0);
            self.marks.truncate(marks0);
            return Err(e);
        }
        self.cmds.push(CmdInfo { cmd, first_mark: marks0 as u32, marks: (self.marks.len() - marks0) as u32 });
        Ok(self)
    }

    /// Wait until `signal` reaches `value` (another device's timeline, a kick signal, ...).
    pub fn wait(&mut self, signal: &Signal, value: u64) -> Result<&mut Self> {
        self.push(Command::Wait { addr: signal.addr(), value })
    }

    /// Set `signal` to `value`.
    pub fn signal(&mut self, signal: &Signal, value: u64) -> Result<&mut Self> {
        self.push(Command::Signal { addr: signal.addr(), value })
    }

    /// Wait on the signal value at a raw device address (a signal another backend owns).
    pub fn wait_at(&mut self, addr: u64, value: u64) -> Result<&mut Self> {
        self.push(Command::Wait { addr, value })
    }

    /// Write `value` to the signal value at a raw device address.
    pub fn signal_at(&mut self, addr: u64, value: u64) -> Result<&mut Self> {
        self.push(Command::Signal { addr, value })
    }

    /// Write the device clock to `signal`'s timestamp.
    pub fn timestamp(&mut self, signal: &Signal) -> Result<&mut Self> {
        self.push(Command::Timestamp { addr: signal.timestamp_addr() })
    }

    /// Run `program` with the kernel arguments at `kernargs`.
    pub fn exec(&mut self, program: u64, kernargs: u64, global: [u32; 3], local: [u32; 3]) -> Result<&mut Self> {
        self.push(Command::Exec { program, kernargs, global, local })
    }

    /// Copy `bytes` from `src` to `dst`.
    pub fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<&mut Self> {
        self.push(Command::Copy { dst, src, bytes })
    }

    /// A memory barrier.
    pub fn memory_barrier(&mut self) -> Result<&mut Self> {
        self.push(Command::Barrier)
    }

    /// Append the timeline signal and close the queue; called by the submitter, idempotent.
    pub fn finish(&mut self) -> Result<()> {
        if !self.finished {
            self.push(Command::Signal { addr: self.timeline_addr, value: 0 })?;
            self.finished = true;
        }
        Ok(())
    }

    /// True once [`HwQueue::finish`] ran.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Number of commands, including the timeline wait (and signal once finished).
    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    /// Always false: a queue holds at least its timeline wait.
    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// The encoded words.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Command `i` as last built or patched.
    pub fn command(&self, i: usize) -> Option<Command> {
        self.cmds.get(i).map(|c| c.cmd)
    }

    /// Change `field` of command `cmd` to `value`, rewriting only its words. Errors when the
    /// command does not exist or its encoding has no such patchable field. Allocates nothing.
    pub fn patch(&mut self, cmd: usize, field: Field, value: u64) -> Result<()> {
        let info = self.cmds.get_mut(cmd).ok_or(Error::OutOfBounds {
            what: "queue command index",
            offset: cmd as u64,
            len: 1,
            limit: 0,
        })?;
        let first = info.first_mark as usize;
        let marks = &self.marks[first..first + info.marks as usize];
        let m = marks.iter().find(|m| m.field == field).ok_or(Error::InvalidArgument {
            what: "queue patch: the command has no such patchable field",
            value: cmd as u64,
        })?;
        let w = m.word as usize;
        if m.wide {
            self.words[w] = value as u32;
            self.words[w + 1] = (value >> 32) as u32;
        } else {
            if value > u64::from(u32::MAX) {
                return Err(Error::InvalidArgument { what: "queue patch: value does not fit a 32-bit field", value });
            }
            self.words[w] = value as u32;
        }
        update_command(&mut info.cmd, field, value);
        Ok(())
    }

    /// Patch the timeline wait (first command) and signal (last command) values.
    pub(crate) fn patch_timeline(&mut self, wait_for: u64, signal: u64) -> Result<()> {
        self.patch(0, Field::Value, wait_for)?;
        let last = self.cmds.len() - 1;
        self.patch(last, Field::Value, signal)
    }
}

fn update_command(cmd: &mut Command, field: Field, v: u64) {
    match (cmd, field) {
        (Command::Wait { value, .. } | Command::Signal { value, .. }, Field::Value) => *value = v,
        (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => {
            *addr = v
        }
        (Command::Exec { program, .. }, Field::Program) => *program = v,
        (Command::Exec { kernargs, .. }, Field::Kernargs) => *kernargs = v,
        (Command::Exec { global, .. }, Field::Global(d)) if d < 3 => global[d as usize] = v as u32,
        (Command::Exec { local, .. }, Field::Local(d)) if d < 3 => local[d as usize] = v as u32,
        (Command::Copy { dst, .. }, Field::Dst) => *dst = v,
        (Command::Copy { src, .. }, Field::Src) => *src = v,
        (Command::Copy { bytes, .. }, Field::Size) => *bytes = v,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::SignalPool;
    use crate::soft::{SoftEncoder, decode};

    fn queue() -> (HwQueue, Signal) {
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
        assert_eq!(
            cmds[1],
            Command::Exec { program: 7, kernargs: 0xdead_beef_0000, global: [2, 1, 1], local: [1, 1, 1] }
        );
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
}
