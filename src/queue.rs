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

impl Command {
    /// The value of `field` in this command (`None` when the command has no such field).
    pub fn field(&self, field: Field) -> Option<u64> {
        Some(match (*self, field) {
            (Command::Wait { value, .. } | Command::Signal { value, .. }, Field::Value) => value,
            (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => {
                addr
            }
            (Command::Exec { program, .. }, Field::Program) => program,
            (Command::Exec { kernargs, .. }, Field::Kernargs) => kernargs,
            (Command::Exec { global, .. }, Field::Global(d)) => u64::from(*global.get(usize::from(d))?),
            (Command::Exec { local, .. }, Field::Local(d)) => u64::from(*local.get(usize::from(d))?),
            (Command::Copy { dst, .. }, Field::Dst) => dst,
            (Command::Copy { src, .. }, Field::Src) => src,
            (Command::Copy { bytes, .. }, Field::Size) => bytes,
            _ => return None,
        })
    }

    /// Set `field` to `v`; `Ok(false)` when the command has no such field.
    ///
    /// Errors: [`Error::InvalidArgument`] when `v` does not fit a 32-bit field (grid sizes).
    pub fn set_field(&mut self, field: Field, v: u64) -> Result<bool> {
        let narrow = || {
            u32::try_from(v).map_err(|_| Error::InvalidArgument {
                what: "queue patch: value does not fit a 32-bit field",
                value: v,
            })
        };
        let slot: &mut u64 = match (self, field) {
            (Command::Wait { value, .. } | Command::Signal { value, .. }, Field::Value) => value,
            (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => {
                addr
            }
            (Command::Exec { program, .. }, Field::Program) => program,
            (Command::Exec { kernargs, .. }, Field::Kernargs) => kernargs,
            (Command::Exec { global, .. }, Field::Global(d)) => match global.get_mut(usize::from(d)) {
                Some(g) => {
                    *g = narrow()?;
                    return Ok(true);
                }
                None => return Ok(false),
            },
            (Command::Exec { local, .. }, Field::Local(d)) => match local.get_mut(usize::from(d)) {
                Some(l) => {
                    *l = narrow()?;
                    return Ok(true);
                }
                None => return Ok(false),
            },
            (Command::Copy { dst, .. }, Field::Dst) => dst,
            (Command::Copy { src, .. }, Field::Src) => src,
            (Command::Copy { bytes, .. }, Field::Size) => bytes,
            _ => return Ok(false),
        };
        *slot = v;
        Ok(true)
    }
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

/// How a marked word is computed from its command. Encoders write a value in several places and
/// in derived forms (a GPU's PM4 stream holds "local size − 1" in one register and "groups ×
/// local size" in another); each place gets its own [`Mark`] with the form that computes it, and
/// [`HwQueue::patch`] recomputes every mark that depends on the patched field.
#[derive(Clone, Copy, Debug)]
pub enum Form {
    /// The field's value as is.
    Plain,
    /// Bits 31:0 of the field's value, in a 32-bit mark (a 64-bit value split over places that
    /// are not adjacent, e.g. two event writes).
    Lo,
    /// Bits 63:32 of the field's value, in a 32-bit mark.
    Hi,
    /// The field's value plus a constant, wrapping (`Offset(-1)` for "local size − 1").
    Offset(i64),
    /// The field's value times a constant (a byte count in dwords is `Scale` of a dword count;
    /// overflow is an error).
    Scale(u64),
    /// The field's value times the current value of another field of the same command
    /// ("groups × local size" is `Global(d)` marked `Times(Local(d))`); recomputed when either
    /// changes; overflow is an error.
    Times(Field),
    /// Any function of the whole command (bit-packed control words); recomputed when its
    /// `field` is patched. A word computed from several fields gets one mark per field (same
    /// word, same function), so that patching any of them recomputes it.
    Fn(fn(&Command) -> u64),
}

/// Where a patchable field sits in the queue's words, and how the word is computed from it.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    /// Index of the command in the queue.
    pub cmd: u32,
    /// Which field the word is computed from.
    pub field: Field,
    /// First word of the field.
    pub word: u32,
    /// `true` for a 64-bit field (two words, low first), else 32-bit.
    pub wide: bool,
    /// How the word is computed from the field (and the command).
    pub form: Form,
}

impl Mark {
    /// Whether this mark carries `field` (so the field can be patched).
    #[inline]
    pub fn carries(&self, field: Field) -> bool {
        self.depends_on(field)
    }

    /// Whether patching `field` may change this mark's word.
    #[inline]
    pub fn depends_on(&self, field: Field) -> bool {
        match self.form {
            Form::Times(other) => self.field == field || other == field,
            _ => self.field == field,
        }
    }

    /// Whether the word is the field's value or a half of it, so a patch can store it without
    /// evaluating the form (it cannot overflow; only a narrow [`Form::Plain`] mark can refuse
    /// a value wider than 32 bits).
    #[inline]
    fn is_simple(&self) -> bool {
        matches!(self.form, Form::Plain | Form::Lo | Form::Hi)
    }

    /// The word (or, when wide, the two words as one value) this mark holds for `cmd`.
    ///
    /// Errors: [`Error::InvalidArgument`] when `cmd` has no such field, the form overflows, or
    /// the result does not fit a 32-bit mark.
    pub fn eval(&self, cmd: &Command) -> Result<u64> {
        let missing = || Error::InvalidArgument { what: "queue mark: the command has no such field", value: 0 };
        let overflow = |v: u64| Error::InvalidArgument { what: "queue mark: derived value overflows", value: v };
        let v = match self.form {
            Form::Fn(f) => f(cmd),
            form => {
                let v = cmd.field(self.field).ok_or_else(missing)?;
                match form {
                    Form::Lo => v & 0xffff_ffff,
                    Form::Hi => v >> 32,
                    Form::Offset(k) => v.wrapping_add_signed(k),
                    Form::Scale(k) => v.checked_mul(k).ok_or_else(|| overflow(v))?,
                    Form::Times(other) => {
                        v.checked_mul(cmd.field(other).ok_or_else(missing)?).ok_or_else(|| overflow(v))?
                    }
                    _ => v,
                }
            }
        };
        if !self.wide && v > u64::from(u32::MAX) {
            return Err(Error::InvalidArgument { what: "queue patch: value does not fit a 32-bit field", value: v });
        }
        Ok(v)
    }
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

    /// Append plain words.
    #[inline]
    pub fn words(&mut self, ws: &[u32]) {
        self.words.extend_from_slice(ws);
    }

    /// Append a 64-bit value as two words (low first).
    #[inline]
    pub fn word64(&mut self, v: u64) {
        // CAST: the low and high halves, by design.
        self.words.push(v as u32);
        self.words.push((v >> 32) as u32);
    }

    #[inline]
    fn mark(&mut self, field: Field, wide: bool, form: Form) {
        // CAST: a queue's words are counted in u32 (a ring is far smaller than 2^32 words).
        self.marks.push(Mark { cmd: self.cmd, field, word: self.words.len() as u32, wide, form });
    }

    /// Append a 32-bit patchable field holding `v`.
    #[inline]
    pub fn field32(&mut self, field: Field, v: u32) {
        self.mark(field, false, Form::Plain);
        self.words.push(v);
    }

    /// Append a 64-bit patchable field holding `v` (low word first).
    #[inline]
    pub fn field64(&mut self, field: Field, v: u64) {
        self.mark(field, true, Form::Plain);
        self.word64(v);
    }

    /// Append a 32-bit word computed from `cmd`'s `field` by `form`, marked so a patch of the
    /// field (or, for [`Form::Times`] and [`Form::Fn`], of what else it depends on) recomputes it.
    ///
    /// Errors: as [`Mark::eval`].
    pub fn derived32(&mut self, field: Field, form: Form, cmd: &Command) -> Result<()> {
        let m = Mark { cmd: self.cmd, field, word: 0, wide: false, form };
        let v = m.eval(cmd)?;
        self.mark(field, false, form);
        // CAST: `eval` checked that a 32-bit mark's value fits.
        self.words.push(v as u32);
        Ok(())
    }

    /// Append a 64-bit (two-word) value computed like [`CmdWriter::derived32`].
    pub fn derived64(&mut self, field: Field, form: Form, cmd: &Command) -> Result<()> {
        let m = Mark { cmd: self.cmd, field, word: 0, wide: true, form };
        let v = m.eval(cmd)?;
        self.mark(field, true, form);
        self.word64(v);
        Ok(())
    }

    /// Append a 32-bit word that the encoder computed as `form` of `field`, marked so a patch
    /// recomputes it: [`CmdWriter::derived32`] without evaluating the form again. The encoder
    /// vouches that `w` is what the form gives for the command (a word that differs would be
    /// replaced by the form's value at the next patch of the field).
    #[inline]
    pub fn computed32(&mut self, field: Field, form: Form, w: u32) {
        self.mark(field, false, form);
        self.words.push(w);
    }

    /// The 64-bit (two-word) form of [`CmdWriter::computed32`].
    #[inline]
    pub fn computed64(&mut self, field: Field, form: Form, v: u64) {
        self.mark(field, true, form);
        self.word64(v);
    }

    /// Mark the word written last (32-bit) once more, as carrying `field` by `form`: for a word
    /// that packs several fields ([`Form::Fn`]).
    ///
    /// Errors: [`Error::OutOfBounds`] when nothing was written yet.
    pub fn mark_last(&mut self, field: Field, form: Form) -> Result<()> {
        let Some(last) = self.words.len().checked_sub(1) else {
            return Err(Error::OutOfBounds { what: "queue word to mark", offset: 0, len: 1, limit: 0 });
        };
        // CAST: as in `mark`.
        self.marks.push(Mark { cmd: self.cmd, field, word: last as u32, wide: false, form });
        Ok(())
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

/// The fields ([`Field`]) that some mark of `marks` (one command's) computes by evaluating its
/// form, as a bit set for [`rewrite_marks`]: anything but [`Form::Plain`], [`Form::Lo`] and
/// [`Form::Hi`] (a [`Form::Times`] mark counts for both its fields). Computed once per command
/// when it is encoded.
pub fn derived_fields(marks: &[Mark]) -> u16 {
    marks
        .iter()
        .filter(|m| !m.is_simple())
        .fold(0, |acc, m| acc | field_bit(m.field) | if let Form::Times(other) = m.form { field_bit(other) } else { 0 })
}

/// Recompute and store every word of `marks` (the marks of one command, whose
/// [`derived_fields`] are `derived`) that depends on `field`, for the command as it is after the
/// patch (`new`, holding `value` in `field`). Every word is computed before any is stored, so on
/// error nothing changes; `Ok(false)` when no mark depends on the field (nothing stored).
/// Allocates nothing. The step of [`HwQueue::patch`] after the command is checked, public for
/// backends that keep core [`Mark`]s over words of their own.
///
/// Errors: as [`Mark::eval`].
pub fn rewrite_marks(
    words: &mut [u32],
    marks: &[Mark],
    derived: u16,
    field: Field,
    value: u64,
    new: &Command,
) -> Result<bool> {
    let mut put = |w: usize, v: u64, wide: bool| {
        // CAST: low and high halves; a 32-bit mark's value fits (checked before any store).
        if let Some(slot) = words.get_mut(w) {
            *slot = v as u32;
        }
        if wide && let Some(slot) = words.get_mut(w + 1) {
            *slot = (v >> 32) as u32;
        }
    };
    if derived & field_bit(field) == 0 {
        // every word that depends on the field is its value or a half of it (the common case):
        // the one way to fail is a value too wide for a narrow plain mark. A value of 32 bits
        // fits every mark (one pass); a wider one is checked against them all before any store.
        if value > u64::from(u32::MAX)
            && marks.iter().any(|m| m.field == field && !m.wide && matches!(m.form, Form::Plain))
        {
            return Err(Error::InvalidArgument { what: "queue patch: value does not fit a 32-bit field", value });
        }
        let mut any = false;
        for m in marks.iter().filter(|m| m.field == field) {
            any = true;
            let v = match m.form {
                Form::Lo => value & 0xffff_ffff,
                Form::Hi => value >> 32,
                _ => value,
            };
            put(m.word as usize, v, m.wide);
        }
        return Ok(any);
    }
    // some dependent word is derived: compute them all before storing any; up to `STAGED` are
    // kept on the stack (one evaluation each), more are evaluated again when stored
    const STAGED: usize = 8;
    let mut staged = [(0usize, 0u64, false); STAGED];
    let mut n = 0usize;
    for m in marks.iter().filter(|m| m.depends_on(field)) {
        let v = m.eval(new)?;
        if let Some(slot) = staged.get_mut(n) {
            *slot = (m.word as usize, v, m.wide);
        }
        n += 1;
    }
    if n <= STAGED {
        for &(w, v, wide) in staged.get(..n).unwrap_or_default() {
            put(w, v, wide);
        }
    } else {
        for m in marks.iter().filter(|m| m.depends_on(field)) {
            put(m.word as usize, m.eval(new)?, m.wide);
        }
    }
    Ok(n > 0)
}

/// A backend's command encoding.
///
/// `encode` appends the words of one command through the writer and marks every place it writes
/// a value of a [`Field`]: with `field32`/`field64` where the word is the value itself, with
/// `derived32`/`derived64` and a [`Form`] where it is computed from it (a field written in
/// three places gets three marks; a field it does not mark cannot be patched:
/// [`HwQueue::patch`] then returns an error). It returns an error for a
/// command the backend cannot run (e.g. a copy on a compute-only engine).
pub trait Encoder: Send + Sync {
    /// Append the words of `cmd`.
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()>;

    /// Check `cmd`, a command of the queue as it would be after [`HwQueue::patch`] set its
    /// `field`, the way [`Encoder::encode`] checks a command (what only the backend knows:
    /// address alignment, a program's thread limit, ...). Called before any word is written;
    /// an error refuses the patch and changes nothing. The default accepts every value (the
    /// marks' forms still refuse a value that does not fit its word).
    fn check_patch(&self, cmd: &Command, field: Field) -> Result<()> {
        let _ = (cmd, field);
        Ok(())
    }
}

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

/// One bit per patchable field (grid dimensions beyond 3 share the last bit: no command has
/// them, so a patch of one fails before the bit is used).
#[inline]
const fn field_bit(field: Field) -> u16 {
    let i = match field {
        Field::Value => 0,
        Field::Addr => 1,
        Field::Program => 2,
        Field::Kernargs => 3,
        Field::Global(d) if d < 3 => 4 + d,
        Field::Local(d) if d < 3 => 7 + d,
        Field::Dst => 10,
        Field::Src => 11,
        Field::Size => 12,
        Field::Global(_) | Field::Local(_) => 13,
    };
    1 << i
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
        let mut w = CmdWriter { words: &mut self.words, marks: &mut self.marks, cmd: idx };
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
mod tests {
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
}
