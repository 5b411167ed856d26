//! [`Pm4Queue`]: a PM4 command buffer built by [`A6xxEncoder`] whose every patchable word is
//! marked with the *form* in which it carries its value, so a replay rewrites all of them.
//!
//! A value can sit in several words and in derived forms: a work-group count is written raw to
//! `SP_CS_KERNEL_GROUP_X` and `CP_EXEC_CS`, and multiplied by the local size into
//! `SP_CS_NDRANGE_1`; a local size sits as `local − 1` in a 10-bit field of `SP_CS_NDRANGE_0`;
//! a 64-bit signal value is split into two event writes; a wait's compare function depends on
//! bit 31 of the value. [`Form`] names each of these, and [`Pm4Queue::patch`] recomputes every
//! marked word of the command from the updated command, allocating nothing.
//!
//! The core's `HwQueue` (today) patches only the first mark of a field and knows no forms;
//! the core [`hcq::queue::Encoder`] implementation therefore exposes only fields held in
//! exactly one raw word (see `A6xxEncoder`'s docs). What the core needs for the rest:
//! `Mark` gains a form (the enum below maps 1:1) and `patch` rewrites every mark of the field
//! from the updated `Command`.
//!
//! [`A6xxEncoder`]: crate::a6xx::A6xxEncoder

use crate::a6xx::encoder::A6xxEncoder;
use crate::pm4::raw::wait_reg_mem as wrm;
use alloc::sync::Arc;
use alloc::vec::Vec;
use hcq::queue::{Command, Field};
use hcq::{Error, Result};

/// How a marked word carries its field's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The value as one word (it must fit 32 bits).
    Raw32,
    /// The value as two words, low first.
    Raw64,
    /// Bits 31:0 of the value.
    Lo,
    /// Bits 63:32 of the value.
    Hi,
    /// `value + 4` as two words (the high half of a 64-bit signal).
    Plus4x64,
    /// Bits 31:0 with bit 31 flipped (`lo ± 2^31`): the far edge of a wrap-aware wait window.
    SignFlip,
    /// `CP_WAIT_REG_MEM` dword 0 with `function`, signed when bit 31 of the value is set.
    WaitFunction {
        /// `cp_cond_function` (LT or GE).
        function: u8,
    },
    /// `local[dim] − 1` packed in a 10-bit field at `shift` (SP_CS_NDRANGE_0).
    LocalMinusOne {
        /// Dimension.
        dim: u8,
        /// Bit position of the field.
        shift: u8,
    },
    /// `global[dim] × local[dim]`: the global size in threads (SP_CS_NDRANGE_1/3/5).
    Threads {
        /// Dimension.
        dim: u8,
    },
}

/// Dword 0 of a `CP_WAIT_REG_MEM` polling memory with `function`, signed when `lo` has bit 31.
#[inline]
pub(crate) const fn wait_d0(function: u32, lo: u32) -> u32 {
    function << wrm::FUNCTION_SHIFT | wrm::POLL_MEMORY << wrm::POLL_SHIFT | (lo >> 31) << wrm::SIGNED_COMPARE_BIT
}

impl Form {
    /// Recompute a marked word (and the next, for two-word forms) from the command after
    /// `field` changed. `words` starts at the mark.
    fn apply(self, field: Field, cmd: &Command, words: &mut [u32]) {
        let value = field_value(cmd, field);
        match self {
            Form::Raw32 | Form::Lo => words[0] = value as u32,
            Form::Hi => words[0] = (value >> 32) as u32,
            Form::Raw64 => {
                words[0] = value as u32;
                words[1] = (value >> 32) as u32;
            }
            Form::Plus4x64 => {
                let v = value.wrapping_add(4);
                words[0] = v as u32;
                words[1] = (v >> 32) as u32;
            }
            Form::SignFlip => words[0] = value as u32 ^ 0x8000_0000,
            Form::WaitFunction { function } => words[0] = wait_d0(function.into(), value as u32),
            Form::LocalMinusOne { dim, shift } => {
                if let Command::Exec { local, .. } = cmd {
                    let mask = 0x3ffu32 << shift;
                    words[0] = (words[0] & !mask) | ((local[dim as usize] - 1) << shift & mask);
                }
            }
            Form::Threads { dim } => {
                if let Command::Exec { global, local, .. } = cmd {
                    words[0] = global[dim as usize].wrapping_mul(local[dim as usize]);
                }
            }
        }
    }

    /// Words the form occupies.
    pub fn words(self) -> usize {
        match self {
            Form::Raw64 | Form::Plus4x64 => 2,
            _ => 1,
        }
    }
}

fn field_value(cmd: &Command, field: Field) -> u64 {
    match (*cmd, field) {
        (Command::Wait { value, .. } | Command::Signal { value, .. }, Field::Value) => value,
        (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => addr,
        (Command::Exec { program, .. }, Field::Program) => program,
        (Command::Exec { kernargs, .. }, Field::Kernargs) => kernargs,
        (Command::Exec { global, .. }, Field::Global(d)) => global[usize::from(d % 3)].into(),
        (Command::Exec { local, .. }, Field::Local(d)) => local[usize::from(d % 3)].into(),
        (Command::Copy { dst, .. }, Field::Dst) => dst,
        (Command::Copy { src, .. }, Field::Src) => src,
        (Command::Copy { bytes, .. }, Field::Size) => bytes,
        _ => 0,
    }
}

/// A marked word of a [`Pm4Queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pm4Mark {
    /// Field it carries.
    pub field: Field,
    /// Word index in the queue.
    pub word: u32,
    /// How.
    pub form: Form,
}

/// Where an encoder writes: plain words and marked words.
pub trait Sink {
    /// Append a plain word.
    fn word(&mut self, w: u32);
    /// Append static words.
    fn words(&mut self, ws: &[u32]);
    /// Append a word carrying `field` in `form` (one-word forms).
    fn marked(&mut self, field: Field, form: Form, w: u32);
    /// Append two words carrying `field` in a two-word `form`.
    fn marked64(&mut self, field: Field, form: Form, v: u64);
    /// Mark the last appended word as also carrying `field` in `form` (a word derived from
    /// two fields, or holding several fields' bits).
    fn also(&mut self, field: Field, form: Form);
}

struct QueueSink<'a> {
    words: &'a mut Vec<u32>,
    marks: &'a mut Vec<Pm4Mark>,
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
    fn marked(&mut self, field: Field, form: Form, w: u32) {
        self.marks.push(Pm4Mark { field, word: self.words.len() as u32, form });
        self.words.push(w);
    }
    #[inline]
    fn marked64(&mut self, field: Field, form: Form, v: u64) {
        self.marks.push(Pm4Mark { field, word: self.words.len() as u32, form });
        self.words.push(v as u32);
        self.words.push((v >> 32) as u32);
    }
    #[inline]
    fn also(&mut self, field: Field, form: Form) {
        self.marks.push(Pm4Mark { field, word: self.words.len() as u32 - 1, form });
    }
}

#[derive(Clone, Copy, Debug)]
struct CmdInfo {
    cmd: Command,
    first_mark: u32,
    marks: u32,
    /// `max_threads` of an exec's program (for local-size patches), else 0.
    max_threads: u32,
}

/// A PM4 command buffer with forms-aware patching (see the module docs).
#[derive(Debug)]
pub struct Pm4Queue {
    encoder: Arc<A6xxEncoder>,
    words: Vec<u32>,
    marks: Vec<Pm4Mark>,
    cmds: Vec<CmdInfo>,
}

impl Pm4Queue {
    /// An empty queue.
    pub fn new(encoder: Arc<A6xxEncoder>) -> Self {
        Self { encoder, words: Vec::new(), marks: Vec::new(), cmds: Vec::new() }
    }

    /// An empty queue with room for `words` words and `cmds` commands.
    pub fn with_capacity(encoder: Arc<A6xxEncoder>, words: usize, cmds: usize) -> Self {
        Self {
            encoder,
            words: Vec::with_capacity(words),
            marks: Vec::with_capacity(cmds * 8),
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
        let mut sink = QueueSink { words: &mut self.words, marks: &mut self.marks };
        let r = self.encoder.encode_to(&cmd, &mut sink);
        let max_threads = match r {
            Ok(t) => t,
            Err(e) => {
                self.words.truncate(w0);
                self.marks.truncate(m0);
                return Err(e);
            }
        };
        self.cmds.push(CmdInfo { cmd, first_mark: m0 as u32, marks: (self.marks.len() - m0) as u32, max_threads });
        Ok(self.cmds.len() - 1)
    }

    /// The PM4 words (an IB).
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Marks of command `i`.
    pub fn marks(&self, i: usize) -> &[Pm4Mark] {
        self.cmds.get(i).map_or(&[], |c| &self.marks[c.first_mark as usize..(c.first_mark + c.marks) as usize])
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

    /// Set `field` of command `cmd` to `value` and rewrite every word that carries it, in
    /// every form. The value is checked as encoding checks it (alignment, local size ≤ the
    /// program's `max_threads`, thread counts within 32 bits); on error nothing changes.
    /// Allocates nothing.
    pub fn patch(&mut self, cmd: usize, field: Field, value: u64) -> Result<()> {
        let info = self.cmds.get_mut(cmd).ok_or(Error::OutOfBounds {
            what: "pm4 queue command index",
            offset: cmd as u64,
            len: 1,
            limit: 0,
        })?;
        let mut next = info.cmd;
        update(&mut next, field, value, info.max_threads)?;
        let marks = &self.marks[info.first_mark as usize..(info.first_mark + info.marks) as usize];
        let mut found = false;
        for m in marks.iter().filter(|m| m.field == field) {
            found = true;
            let w = m.word as usize;
            m.form.apply(field, &next, &mut self.words[w..w + m.form.words()]);
        }
        if !found {
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
        _ => {
            return Err(Error::InvalidArgument {
                what: "pm4 queue patch: the command has no such patchable field",
                value: v,
            });
        }
    }
    Ok(())
}
