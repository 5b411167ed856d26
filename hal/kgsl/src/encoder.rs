//! [`CoreA6xx`]: the a6xx encoder behind the core's [`Encoder`] with every mark it makes, so a
//! core `HwQueue` (what `hcq::hcq::Hcq` submits) can patch its timeline wait and signal — and
//! every other field — in every place and form the PM4 stream carries it.
//!
//! `hcq_adreno::A6xxEncoder`'s own core `Encoder` implementation exposes only fields held in
//! one raw word (exec kernel arguments, timestamp address): with it, `HwQueue::new`'s timeline
//! wait and the closing signal cannot be patched (their values sit in derived words: low and
//! high halves, the wait's `lo ^ 2^31` window edge, the compare function chosen by bit 31). The
//! core queue now has forms ([`Form`]), so this adapter maps each of the a6xx encoder's marks
//! ([`hcq_adreno::queue::Form`]) to one, and checks at encode time that the core form computes
//! exactly the word the a6xx encoder wrote (a mapping that disagrees is an error, never a word
//! that a patch would later get wrong). Once `A6xxEncoder` exposes these marks itself, the
//! device can use it directly.

use hcq::queue::{CmdWriter, Command, Encoder, Field, Form, Mark};
use hcq::{Error, Result};
use hcq_adreno::A6xxEncoder;
use hcq_adreno::a6xx::regs::SP_CS_NDRANGE_0;
use hcq_adreno::pm4::raw::wait_reg_mem as wrm;
use hcq_adreno::queue::{Form as A6Form, Sink};
use std::sync::Arc;

/// The a6xx encoder with all its marks (see the module docs).
#[derive(Debug, Clone)]
pub struct CoreA6xx(pub Arc<A6xxEncoder>);

impl Encoder for CoreA6xx {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        let mut s = FormSink { w, cmd, err: None };
        self.0.encode_to(cmd, &mut s)?;
        s.err.map_or(Ok(()), Err)
    }
}

fn value(c: &Command) -> u64 {
    c.field(Field::Value).unwrap_or(0)
}
fn value_lo(c: &Command) -> u64 {
    value(c) & 0xffff_ffff
}
fn value_hi(c: &Command) -> u64 {
    value(c) >> 32
}
fn value_sign_flip(c: &Command) -> u64 {
    value_lo(c) ^ 0x8000_0000
}
/// `CP_WAIT_REG_MEM` dword 0 polling memory with `function`, signed when bit 31 is set.
fn wait_d0(function: u32, c: &Command) -> u64 {
    let lo = value_lo(c);
    u64::from(function << wrm::FUNCTION_SHIFT | wrm::POLL_MEMORY << wrm::POLL_SHIFT)
        | (lo >> 31) << wrm::SIGNED_COMPARE_BIT
}
fn wait_lt(c: &Command) -> u64 {
    wait_d0(wrm::WRITE_LT, c)
}
fn wait_ge(c: &Command) -> u64 {
    wait_d0(wrm::WRITE_GE, c)
}
/// `SP_CS_NDRANGE_0`: three dimensions, each local size − 1 in its 10-bit field.
fn ndrange0(c: &Command) -> u64 {
    let Command::Exec { local, .. } = c else { return 0 };
    let mut w = SP_CS_NDRANGE_0::default().set_kerneldim(3).raw();
    for (d, shift) in [(0, 2), (1, 12), (2, 22)] {
        w |= (local[d].wrapping_sub(1) & 0x3ff) << shift;
    }
    u64::from(w)
}

/// Adapts the a6xx encoder's [`Sink`] to the core writer, form by form.
struct FormSink<'a, 'b> {
    w: &'a mut CmdWriter<'b>,
    cmd: &'a Command,
    err: Option<Error>,
}

impl FormSink<'_, '_> {
    fn fail(&mut self, field: Field, form: A6Form) {
        self.err.get_or_insert(Error::Unsupported {
            what: "a6xx encoder: a mark whose form the core queue cannot express (field, form in context)",
            value: 0,
        });
        log::error!("a6xx mark without a core form: {field:?} {form:?}");
    }

    /// The core form of a one-word a6xx mark, if there is one.
    fn core_form(field: Field, form: A6Form) -> Option<Form> {
        Some(match (field, form) {
            (_, A6Form::Raw32) => Form::Plain,
            (Field::Value, A6Form::Lo) => Form::Fn(value_lo),
            (Field::Value, A6Form::Hi) => Form::Fn(value_hi),
            (Field::Value, A6Form::SignFlip) => Form::Fn(value_sign_flip),
            (Field::Value, A6Form::WaitFunction { function }) if u32::from(function) == wrm::WRITE_LT => {
                Form::Fn(wait_lt)
            }
            (Field::Value, A6Form::WaitFunction { function }) if u32::from(function) == wrm::WRITE_GE => {
                Form::Fn(wait_ge)
            }
            (Field::Local(_), A6Form::LocalMinusOne { .. }) => Form::Fn(ndrange0),
            (Field::Global(d), A6Form::Threads { dim }) if d == dim => Form::Times(Field::Local(d)),
            _ => return None,
        })
    }

    /// Check that `form` computes `expected` for the command (the a6xx encoder's word).
    fn agrees(&mut self, field: Field, form: Form, wide: bool, expected: u64) -> bool {
        let m = Mark { cmd: 0, field, word: 0, wide, form };
        match m.eval(self.cmd) {
            Ok(v) if v == expected => true,
            Ok(v) => {
                self.err.get_or_insert(Error::Mismatch {
                    what: "a6xx encoder: a core form computes another word than the encoder wrote",
                    expected,
                    found: v,
                });
                false
            }
            Err(e) => {
                self.err.get_or_insert(e);
                false
            }
        }
    }
}

impl Sink for FormSink<'_, '_> {
    fn word(&mut self, w: u32) {
        self.w.word(w);
    }
    fn words(&mut self, ws: &[u32]) {
        for &x in ws {
            self.w.word(x);
        }
    }
    fn marked(&mut self, field: Field, form: A6Form, w: u32) {
        match Self::core_form(field, form) {
            Some(Form::Plain) => self.w.field32(field, w),
            Some(f) if self.agrees(field, f, false, w.into()) => {
                if let Err(e) = self.w.derived32(field, f, self.cmd) {
                    self.err.get_or_insert(e);
                }
            }
            Some(_) => self.w.word(w),
            None => {
                self.fail(field, form);
                self.w.word(w);
            }
        }
    }
    fn marked64(&mut self, field: Field, form: A6Form, v: u64) {
        let f = match form {
            A6Form::Raw64 => Form::Plain,
            A6Form::Plus4x64 => Form::Offset(4),
            _ => {
                self.fail(field, form);
                self.w.word64(v);
                return;
            }
        };
        if matches!(f, Form::Plain) {
            self.w.field64(field, v);
        } else if self.agrees(field, f, true, v) {
            if let Err(e) = self.w.derived64(field, f, self.cmd) {
                self.err.get_or_insert(e);
            }
        } else {
            self.w.word64(v);
        }
    }
    fn also(&mut self, field: Field, form: A6Form) {
        match (field, form) {
            // the thread count is marked `Global(d) × Local(d)`: one mark carries both fields
            (Field::Local(d), A6Form::Threads { dim }) if d == dim => {}
            (Field::Local(_), A6Form::LocalMinusOne { .. }) => {
                if let Err(e) = self.w.mark_last(field, Form::Fn(ndrange0)) {
                    self.err.get_or_insert(e);
                }
            }
            _ => self.fail(field, form),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcq::queue::HwQueue;
    use hcq::signal::SignalPool;
    use hcq_adreno::{EncoderConfig, Pm4Queue, Program};

    fn program() -> Program {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../adreno/tests/data");
        Program::from_json(
            &std::fs::read(dir.join("e_32_32_4.a630.bin")).unwrap(),
            &std::fs::read(dir.join("e_32_32_4.adreno.json")).unwrap(),
        )
        .unwrap()
    }

    /// Every field of every command patched through the core queue gives the words a fresh
    /// a6xx encoding of the patched commands gives.
    #[test]
    fn core_patches_of_every_field_equal_a_fresh_a6xx_encoding() {
        let enc = Arc::new(
            A6xxEncoder::new(EncoderConfig { scratch: 0x10_0000, pvt_mem: 0x20_0000, pvt_mem_bytes: 1 << 16 }).unwrap(),
        );
        let h = enc.add_program(&program(), 0x30_0000).unwrap();
        let pool = SignalPool::new();
        let tl = pool.alloc(0);
        let mut q = HwQueue::new(Arc::new(CoreA6xx(enc.clone())), &tl).unwrap();
        q.exec(h, 0x40_0000, [4, 2, 1], [32, 1, 1]).unwrap();
        q.memory_barrier().unwrap();
        q.timestamp(&tl).unwrap();
        q.wait_at(0x50_0000, 7).unwrap();
        q.finish().unwrap();
        let last = q.len() - 1;
        let patches: &[(usize, Field, u64)] = &[
            (0, Field::Value, 0xffff_ffff),
            (last, Field::Value, 0x1_0000_0000),
            (0, Field::Value, 0x1_8000_0001),
            (last, Field::Value, 0x2_7fff_ffff),
            (1, Field::Kernargs, 0x41_0000),
            (1, Field::Global(0), 16),
            (1, Field::Local(0), 64),
            (1, Field::Global(1), 3),
            (1, Field::Local(1), 2),
            (3, Field::Addr, 0x60_0008),
            (4, Field::Addr, 0x50_0100),
            (4, Field::Value, 0x8000_0000),
            (last, Field::Addr, 0x70_0000),
        ];
        for &(cmd, field, value) in patches {
            q.patch(cmd, field, value).unwrap();
            let mut fresh = Pm4Queue::new(enc.clone());
            for i in 0..q.len() {
                fresh.push(q.command(i).unwrap()).unwrap();
            }
            assert_eq!(q.words(), fresh.words(), "after patching {field:?} of command {cmd} to {value:#x}");
        }
        assert_eq!(q.command(last), Some(Command::Signal { addr: 0x70_0000, value: 0x2_7fff_ffff }));
    }
}
