//! [`Pm4Queue`]: a PM4 command buffer built by [`A6xxEncoder`], patched in place for replays.
//!
//! A value can sit in several words and in derived forms: a work-group count is written raw to
//! `SP_CS_KERNEL_GROUP_X` and `CP_EXEC_CS`, and multiplied by the local size into
//! `SP_CS_NDRANGE_1`; a local size sits as `local − 1` in a 10-bit field of `SP_CS_NDRANGE_0`;
//! a 64-bit signal value is split into two event writes; a wait's compare function depends on
//! bit 31 of the value. The encoder marks each of these words with the core's
//! [`hcq::queue::Form`] (the table at [`A6xxEncoder`]), the same marks the core `HwQueue`
//! records through the encoder's `hcq::queue::Encoder` impl; [`Pm4Queue`] is a thin layer over
//! them for a backend that submits an IB without the core's timeline wait and signal (KGSL).
//! [`Pm4Queue::patch`] checks the new value the way the encoder checks a command (address
//! alignment, local size against the program's `max_threads`, thread counts within 32 bits,
//! copy sizes) and then recomputes every marked word of the command that depends on the field,
//! allocating nothing.
//!
//! [`A6xxEncoder`]: crate::a6xx::A6xxEncoder

use crate::a6xx::encoder::A6xxEncoder;
use crate::pm4::Sink;
use alloc::sync::Arc;
use alloc::vec::Vec;
use hcq::queue::{Command, Field, Form, Mark};
use hcq::{Error, Result};

struct QueueSink<'a> {
    words: &'a mut Vec<u32>,
    marks: &'a mut Vec<Mark>,
    cmd: u32,
}

impl QueueSink<'_> {
    #[inline]
    fn mark(&mut self, field: Field, wide: bool, form: Form, word: usize) {
        // CAST: a queue's words and commands are counted in u32 (an IB is far smaller).
        self.marks.push(Mark { cmd: self.cmd, field, word: word as u32, wide, form });
    }
}

impl Sink for QueueSink<'_> {
    #[inline]
    fn word(&mut self, w: u32) {
        self.words.push(w);
    }
    #[inline]
    fn words(&mut self, ws: &[u32]) {
        self.words.extend_from_slice(ws);
    }
    #[inline]
    fn mark32(&mut self, field: Field, form: Form, w: u32) {
        self.mark(field, false, form, self.words.len());
        self.words.push(w);
    }
    #[inline]
    fn mark64(&mut self, field: Field, form: Form, v: u64) {
        self.mark(field, true, form, self.words.len());
        // CAST: the low and high halves, by design.
        self.words.extend_from_slice(&[v as u32, (v >> 32) as u32]);
    }
    #[inline]
    fn also(&mut self, field: Field, form: Form) {
        self.mark(field, false, form, self.words.len().saturating_sub(1));
    }
}

#[derive(Clone, Copy, Debug)]
struct CmdInfo {
    cmd: Command,
    first_mark: u32,
    marks: u32,
    /// `max_threads` of an exec's program (for local-size patches), else 0.
    max_threads: u32,
    /// The fields some mark computes from a form (`hcq::queue::derived_fields`).
    derived: u16,
}

/// A PM4 command buffer whose every marked word is patched on replay (see the module docs).
#[derive(Debug)]
pub struct Pm4Queue {
    encoder: Arc<A6xxEncoder>,
    words: Vec<u32>,
    marks: Vec<Mark>,
    cmds: Vec<CmdInfo>,
}

impl Pm4Queue {
    /// An empty queue.
    pub fn new(encoder: Arc<A6xxEncoder>) -> Self {
        Self { encoder, words: Vec::new(), marks: Vec::new(), cmds: Vec::new() }
    }

    /// An empty queue with room for `words` words and `cmds` commands (16 marks each: an exec
    /// has 13).
    pub fn with_capacity(encoder: Arc<A6xxEncoder>, words: usize, cmds: usize) -> Self {
        Self {
            encoder,
            words: Vec::with_capacity(words),
            marks: Vec::with_capacity(cmds * 16),
            cmds: Vec::with_capacity(cmds),
        }
    }

    /// Drop every command, keeping the allocations.
    pub fn clear(&mut self) {
        self.words.clear();
        self.marks.clear();
        self.cmds.clear();
    }

    /// Encode and append `cmd`; returns its index. On error nothing is appended.
    pub fn push(&mut self, cmd: Command) -> Result<usize> {
        let (w0, m0) = (self.words.len(), self.marks.len());
        // CAST: commands are counted in u32, as in the core's HwQueue.
        let mut sink = QueueSink { words: &mut self.words, marks: &mut self.marks, cmd: self.cmds.len() as u32 };
        let r = self.encoder.encode_to(&cmd, &mut sink);
        let max_threads = match r {
            Ok(t) => t,
            Err(e) => {
                self.words.truncate(w0);
                self.marks.truncate(m0);
                return Err(e);
            }
        };
        let derived = hcq::queue::derived_fields(self.marks.get(m0..).unwrap_or_default());
        self.cmds.push(CmdInfo {
            cmd,
            first_mark: m0 as u32,
            marks: (self.marks.len() - m0) as u32,
            max_threads,
            derived,
        });
        Ok(self.cmds.len() - 1)
    }

    /// The PM4 words (an IB).
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Marks of command `i` (the core's [`Mark`]s, word indices into [`Pm4Queue::words`]).
    pub fn marks(&self, i: usize) -> &[Mark] {
        self.cmds.get(i).map_or(&[], |c| {
            self.marks.get(c.first_mark as usize..(c.first_mark + c.marks) as usize).unwrap_or_default()
        })
    }

    /// Command `i` as last built or patched.
    pub fn command(&self, i: usize) -> Option<Command> {
        self.cmds.get(i).map(|c| c.cmd)
    }

    /// Number of commands.
    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    /// True when no command was pushed.
    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Set `field` of command `cmd` to `value` and rewrite every word that depends on it, in
    /// every form. The value is checked as encoding checks it (alignment, local size ≤ the
    /// program's `max_threads`, thread counts within 32 bits, copy sizes); on error nothing
    /// changes. Allocates nothing.
    pub fn patch(&mut self, cmd: usize, field: Field, value: u64) -> Result<()> {
        let limit = self.cmds.len() as u64;
        let info = self.cmds.get_mut(cmd).ok_or(Error::OutOfBounds {
            what: "pm4 queue command index",
            offset: cmd as u64,
            len: 1,
            limit,
        })?;
        let mut next = info.cmd;
        update(&mut next, field, value, info.max_threads)?;
        let first = info.first_mark as usize;
        let marks = self.marks.get(first..first + info.marks as usize).unwrap_or_default();
        // The words that depend on `field` are the marks that carry it (a `Form::Fn` is
        // recomputed when its mark's field changes, and a word packing several fields has one
        // mark per field); the core's rewrite computes them all before storing any.
        // `tests/replay.rs` checks the result against fresh encodings.
        if !hcq::queue::rewrite_marks(&mut self.words, marks, info.derived, field, value, &next)? {
            return Err(Error::InvalidArgument {
                what: "pm4 queue patch: the command has no such patchable field",
                value: cmd as u64,
            });
        }
        info.cmd = next;
        Ok(())
    }
}

/// Apply a patch to a command, checking the value the way the encoder does.
fn update(cmd: &mut Command, field: Field, v: u64, max_threads: u32) -> Result<()> {
    let small = |v: u64| -> Result<u32> {
        u32::try_from(v).map_err(|_| Error::InvalidArgument { what: "pm4 patch: value does not fit 32 bits", value: v })
    };
    match (cmd, field) {
        (Command::Wait { value, .. } | Command::Signal { value, .. }, Field::Value) => *value = v,
        (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => {
            A6xxEncoder::check_addr("signal address", v, 8)?;
            *addr = v;
        }
        (Command::Exec { kernargs, .. }, Field::Kernargs) => {
            A6xxEncoder::check_addr("constant block address", v, 16)?;
            *kernargs = v;
        }
        (Command::Exec { global, local, .. }, Field::Global(d)) if d < 3 => {
            let mut g = *global;
            g[usize::from(d)] = small(v)?;
            A6xxEncoder::check_grid(g, *local)?;
            *global = g;
        }
        (Command::Exec { global, local, .. }, Field::Local(d)) if d < 3 => {
            let mut l = *local;
            l[usize::from(d)] = small(v)?;
            crate::program::check_local(l, max_threads)?;
            A6xxEncoder::check_grid(*global, l)?;
            *local = l;
        }
        (Command::Copy { dst, .. }, Field::Dst) => {
            A6xxEncoder::check_addr("adreno copy destination address", v, 4)?;
            *dst = v;
        }
        (Command::Copy { src, .. }, Field::Src) => {
            A6xxEncoder::check_addr("adreno copy source address", v, 4)?;
            *src = v;
        }
        (Command::Copy { bytes, .. }, Field::Size) => {
            A6xxEncoder::check_copy_size(v)?;
            *bytes = v;
        }
        _ => {
            return Err(Error::InvalidArgument {
                what: "pm4 queue patch: the command has no such patchable field",
                value: v,
            });
        }
    }
    Ok(())
}
