//! The backend side of a queue: the [`Encoder`] trait and the [`CmdWriter`] it appends a
//! command's words and marks through.

use super::{Command, Field, Form, Mark};
use crate::error::{Error, Result};
use alloc::vec::Vec;

/// Appends a command's words and records its patchable fields.
pub struct CmdWriter<'a> {
    words: &'a mut Vec<u32>,
    marks: &'a mut Vec<Mark>,
    cmd: u32,
}

impl<'a> CmdWriter<'a> {
    /// A writer appending command `cmd` to `words`, recording its patchable fields in `marks`
    /// (for backends that encode outside an [`HwQueue`](super::HwQueue), and tests).
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

/// A backend's command encoding.
///
/// `encode` appends the words of one command through the writer and marks every place it writes
/// a value of a [`Field`]: with `field32`/`field64` where the word is the value itself, with
/// `derived32`/`derived64` and a [`Form`] where it is computed from it (a field written in
/// three places gets three marks; a field it does not mark cannot be patched:
/// [`HwQueue::patch`](super::HwQueue::patch) then returns an error). It returns an error for a
/// command the backend cannot run (e.g. a copy on a compute-only engine).
pub trait Encoder: Send + Sync {
    /// Append the words of `cmd`.
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()>;

    /// Check `cmd`, a command of the queue as it would be after [`HwQueue::patch`](super::HwQueue::patch) set its
    /// `field`, the way [`Encoder::encode`] checks a command (what only the backend knows:
    /// address alignment, a program's thread limit, ...). Called before any word is written;
    /// an error refuses the patch and changes nothing. The default accepts every value (the
    /// marks' forms still refuse a value that does not fit its word).
    fn check_patch(&self, cmd: &Command, field: Field) -> Result<()> {
        let _ = (cmd, field);
        Ok(())
    }
}
