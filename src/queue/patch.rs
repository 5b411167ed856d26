//! Patch and replay: where a patchable field sits in a queue's words ([`Mark`]), in which
//! derived form ([`Form`]), and the rewrite of the words that depend on a patched field.

use super::{Command, Field};
use crate::error::{Error, Result};

/// How a marked word is computed from its command. Encoders write a value in several places and
/// in derived forms (a GPU's PM4 stream holds "local size − 1" in one register and "groups ×
/// local size" in another); each place gets its own [`Mark`] with the form that computes it, and
/// [`HwQueue::patch`](super::HwQueue::patch) recomputes every mark that depends on the patched field.
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
/// Allocates nothing. The step of [`HwQueue::patch`](super::HwQueue::patch) after the command is checked, public for
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
