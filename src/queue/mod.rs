//! Hardware queues: a builder of wait/signal/timestamp/exec/copy/barrier commands, encoded by a
//! backend's [`Encoder`] into command words.
//!
//! Encoding happens once, when the queue is built. The encoder marks the words that carry values
//! a replay may change (signal values, kernel-argument addresses, sizes, ...), every place it
//! writes one and in whatever derived form (a [`Form`]: "local size − 1", "groups × local
//! size"); [`HwQueue::patch`] recomputes exactly the words that depend on the patched field, so replaying a captured graph with new values costs a few stores
//! on the host, and submitting copies the words into the device's ring (see `hcq`).
//!
//! Every queue starts with a wait on its device's timeline and ends with a signal of it (added
//! by [`HwQueue::new`] and [`HwQueue::finish`]); the submitter patches those two values for each
//! submission, which totally orders a device's submissions.

mod command;
mod encoder;
mod patch;

pub use command::{Command, Field};
pub use encoder::{CmdWriter, Encoder};
pub use patch::{Form, Mark, derived_fields, rewrite_marks};

use crate::error::{Error, Result};
use crate::signal::Signal;
use alloc::sync::Arc;
use alloc::vec::Vec;

#[derive(Clone, Copy, Debug)]
struct CmdInfo {
    cmd: Command,
    first_mark: u32,
    marks: u32,
    /// The fields ([`field_bit`]) some mark of the command computes by evaluating its form
    /// (anything but [`Form::Plain`], [`Form::Lo`] and [`Form::Hi`]): a patch of any other
    /// field stores the value without evaluating anything.
    derived: u16,
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
        Self::with_capacity(encoder, timeline, 64, 8)
    }

    /// [`HwQueue::new`] with room for `words` words and `cmds` commands (and 16 marks per
    /// command) reserved up front, so building a queue of that size allocates once.
    pub fn with_capacity(encoder: Arc<dyn Encoder>, timeline: &Signal, words: usize, cmds: usize) -> Result<Self> {
        let mut q = Self {
            encoder,
            words: Vec::with_capacity(words),
            marks: Vec::with_capacity(cmds.saturating_mul(16)),
            cmds: Vec::with_capacity(cmds),
            timeline_addr: timeline.addr(),
            finished: false,
        };
        q.push(Command::Wait { addr: q.timeline_addr, value: 0 })?;
        Ok(q)
    }

    /// Empty the queue for reuse, keeping its memory: it holds only its timeline wait again
    /// (re-encoding a graph of the same size allocates nothing).
    pub fn clear(&mut self) -> Result<()> {
        self.words.clear();
        self.marks.clear();
        self.cmds.clear();
        self.finished = false;
        self.push(Command::Wait { addr: self.timeline_addr, value: 0 }).map(|_| ())
    }

    /// Encode and append `cmd` (any command, as the builder methods below append them);
    /// returns its index for [`HwQueue::patch`]. On error nothing is appended.
    pub fn push(&mut self, cmd: Command) -> Result<usize> {
        if self.finished {
            return Err(Error::InvalidArgument {
                what: "queue is finished: no more commands",
                value: self.cmds.len() as u64,
            });
        }
        // CAST: a queue's commands are counted in u32 (each takes at least one word of a ring
        // far smaller than 2^32 words).
        let idx = self.cmds.len() as u32;
        let (words0, marks0) = (self.words.len(), self.marks.len());
        let mut w = CmdWriter::new(&mut self.words, &mut self.marks, idx);
        if let Err(e) = self.encoder.encode(&cmd, &mut w) {
            self.words.truncate(words0);
            self.marks.truncate(marks0);
            return Err(e);
        }
        let derived = derived_fields(self.marks.get(marks0..).unwrap_or_default());
        self.cmds.push(CmdInfo { cmd, first_mark: marks0 as u32, marks: (self.marks.len() - marks0) as u32, derived });
        Ok(idx as usize)
    }

    fn append(&mut self, cmd: Command) -> Result<&mut Self> {
        self.push(cmd)?;
        Ok(self)
    }

    /// Wait until `signal` reaches `value` (another device's timeline stamp, `Stamp::get`; a
    /// kick signal's count, ...).
    pub fn wait(&mut self, signal: &Signal, value: u64) -> Result<&mut Self> {
        self.append(Command::Wait { addr: signal.addr(), value })
    }

    /// Set `signal` to `value`.
    pub fn signal(&mut self, signal: &Signal, value: u64) -> Result<&mut Self> {
        self.append(Command::Signal { addr: signal.addr(), value })
    }

    /// Wait on the signal value at a raw device address (a signal another backend owns).
    pub fn wait_at(&mut self, addr: u64, value: u64) -> Result<&mut Self> {
        self.append(Command::Wait { addr, value })
    }

    /// Write `value` to the signal value at a raw device address.
    pub fn signal_at(&mut self, addr: u64, value: u64) -> Result<&mut Self> {
        self.append(Command::Signal { addr, value })
    }

    /// Write the device clock to `signal`'s timestamp.
    pub fn timestamp(&mut self, signal: &Signal) -> Result<&mut Self> {
        self.append(Command::Timestamp { addr: signal.timestamp_addr() })
    }

    /// Write the device clock to the 64-bit timestamp at a raw device address (a profiling
    /// slot of the backend's).
    pub fn timestamp_at(&mut self, addr: u64) -> Result<&mut Self> {
        self.append(Command::Timestamp { addr })
    }

    /// Run `program` with the kernel arguments at `kernargs`.
    pub fn exec(&mut self, program: u64, kernargs: u64, global: [u32; 3], local: [u32; 3]) -> Result<&mut Self> {
        self.append(Command::Exec { program, kernargs, global, local })
    }

    /// Copy `bytes` from `src` to `dst`.
    pub fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<&mut Self> {
        self.append(Command::Copy { dst, src, bytes })
    }

    /// A memory barrier.
    pub fn memory_barrier(&mut self) -> Result<&mut Self> {
        self.append(Command::Barrier)
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

    /// The marks of command `i` (word indices into [`HwQueue::words`]); empty when there is no
    /// such command.
    pub fn marks(&self, i: usize) -> &[Mark] {
        self.cmds.get(i).map_or(&[], |c| {
            self.marks.get(c.first_mark as usize..(c.first_mark + c.marks) as usize).unwrap_or_default()
        })
    }

    /// Change `field` of command `cmd` to `value` and rewrite every word that depends on it:
    /// each place the encoder marked the field, in each form it marked it (see [`Form`]).
    /// The patched command is first checked by the encoder ([`Encoder::check_patch`]).
    /// Nothing changes on error. Allocates nothing (unless the encoder's check does).
    ///
    /// Errors: [`Error::OutOfBounds`] when the command does not exist;
    /// [`Error::InvalidArgument`] when the command has no such field, no word depends on it, or
    /// a value does not fit its word; the encoder's error when its check refuses the command.
    pub fn patch(&mut self, cmd: usize, field: Field, value: u64) -> Result<()> {
        let limit = self.cmds.len() as u64;
        let info = self.cmds.get_mut(cmd).ok_or_else(|| Error::OutOfBounds {
            what: "queue command index",
            offset: cmd as u64,
            len: 1,
            limit,
        })?;
        let no_field = || Error::InvalidArgument {
            what: "queue patch: the command has no such patchable field",
            value: cmd as u64,
        };
        let mut new = info.cmd;
        if !new.set_field(field, value)? {
            return Err(no_field());
        }
        self.encoder.check_patch(&new, field)?;
        let first = info.first_mark as usize;
        let marks = self.marks.get(first..first + info.marks as usize).unwrap_or_default();
        if !rewrite_marks(&mut self.words, marks, info.derived, field, value, &new)? {
            return Err(no_field());
        }
        info.cmd = new;
        Ok(())
    }

    /// Patch the timeline wait (first command) and signal (last command) values.
    pub(crate) fn patch_timeline(&mut self, wait_for: u64, signal: u64) -> Result<()> {
        self.patch(0, Field::Value, wait_for)?;
        let last = self.cmds.len() - 1;
        self.patch(last, Field::Value, signal)
    }
}

#[cfg(test)]
mod tests;
