//! Faults and refusals: the encodings the interpreter refuses rather than guesses ([`refused`]),
//! and the errors of an access out of range.

use super::*;

/// Why the interpreter refuses `i` (it stops with [`ExecError::Unsupported`] there), or `None`
/// when it runs it: encodings decoded to their name only, and the decoded image forms whose
/// behaviour is not modelled (layered/3D/offset/projected cat5 fetches, untyped, 3D or offset
/// ldib/stib). A loader can refuse such a program before it runs.
pub fn refused(i: &Instr) -> Option<&'static str> {
    match &i.body {
        Body::Unsupported(name) => Some(name),
        Body::Cat2(c) => alu_refusal(c.op.name()),
        Body::Cat3(c) => alu_refusal(c.op.name()),
        Body::Cat5(c) if c.d3 || c.array || c.offset || c.b53 || c.sv => Some(CAT5_REFUSED),
        Body::Cat6(Cat6::Ibo { typed, d, offset, .. }) if !typed || *d > 2 || offset.is_some_and(|o| o != 0) => {
            Some(IBO_REFUSED)
        }
        _ => None,
    }
}

/// The decoded ALU opcodes the interpreter refuses, each with why. Mesa's NIR→ir3 compiler (which
/// builds every a6xx compute shader tinygrad and turnip run) never creates these: `ir3.h` has
/// builders for them that nothing calls, and no NIR op lowers to them (bcsel becomes `sel.b16`/
/// `sel.b32`, comparisons `cmps.*`, 32-bit multiplies `madsh.m16`); what they compute is
/// undocumented, so they are refused rather than guessed. `sad.s16`/`sad.s32` are run: Mesa emits
/// them for NIR `iadd3` (a + b + c) on a6xx gen4 and a7xx (`has_sad`; never on an A630).
pub(super) const ALU_REFUSED: [(&str, &str); 14] = [
    ("cmpv.f", CMPV_REFUSED),
    ("cmpv.u", CMPV_REFUSED),
    ("cmpv.s", CMPV_REFUSED),
    ("sel.s16", SEL_REFUSED),
    ("sel.s32", SEL_REFUSED),
    ("sel.f16", SEL_REFUSED),
    ("sel.f32", SEL_REFUSED),
    (
        "madsh.u16",
        "madsh.u16: never emitted by Mesa's ir3 compiler (32-bit multiplies use madsh.m16); semantics undocumented",
    ),
    ("mgen.b", OTHER_REFUSED),
    ("setrm", OTHER_REFUSED),
    ("shb", OTHER_REFUSED),
    ("msad", OTHER_REFUSED),
    ("bary.f", VARYING_REFUSED),
    ("flat.b", VARYING_REFUSED),
];
pub(super) const CMPV_REFUSED: &str =
    "cmpv.f/cmpv.u/cmpv.s: never emitted by Mesa's ir3 compiler (comparisons use cmps.*); semantics undocumented";
pub(super) const SEL_REFUSED: &str = "sel.s16/sel.s32/sel.f16/sel.f32: never emitted by Mesa's ir3 compiler (selects use sel.b16/sel.b32); semantics undocumented";
pub(super) const OTHER_REFUSED: &str =
    "mgen.b/setrm/shb/msad: never emitted by Mesa's ir3 compiler (no NIR op lowers to them); semantics undocumented";
pub(super) const VARYING_REFUSED: &str =
    "bary.f/flat.b: fragment-shader varying interpolation, which no compute shader has";

/// Why the interpreter refuses the ALU opcode `name` (see [`ALU_REFUSED`]).
pub(super) fn alu_refusal(name: &str) -> Option<&'static str> {
    ALU_REFUSED.iter().find(|(n, _)| *n == name).map(|(_, why)| *why)
}

pub(super) const CAT5_REFUSED: &str = "cat5 with .3d/.a/.o/.p/.s/.v or an immediate offset";
pub(super) const IBO_REFUSED: &str = "ldib/stib untyped, 3d or with an offset";

/// A relative register or const access out of range in lane `l`, naming its work-group and fiber.
pub(super) fn relative(cx: &Ctx, wave: &Wave, pc: usize, l: usize, value: i64) -> ExecError {
    let (group, lane) = cx.site(wave.index, l);
    ExecError::Relative { index: pc, group, lane, value }
}

pub(super) fn unsupported(pc: usize, name: &'static str) -> ExecError {
    ExecError::Unsupported { index: pc, name }
}
