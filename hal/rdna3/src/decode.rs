//! Instruction words → [`Inst`]: which encoding, which opcode (looked up in [`crate::tables`]),
//! and how many dwords the instruction takes (its literal constant and DPP word included).
//!
//! The encodings are those of AMD's "RDNA3 Instruction Set Architecture" reference guide
//! (February 2023), chapter 15 ("Microcode formats"): the encoding is told by the top bits of the
//! first dword, the opcode sits in a fixed field per encoding.

use crate::tables::{self, Op};
use core::fmt;

/// The instruction encodings of gfx11.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Scalar ALU, two sources.
    Sop2,
    /// Scalar ALU with a 16-bit immediate.
    Sopk,
    /// Scalar ALU, one source.
    Sop1,
    /// Scalar compare.
    Sopc,
    /// Scalar program control (branches, waits, messages).
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, one source (32-bit encoding).
    Vop1,
    /// Vector ALU, two sources (32-bit encoding).
    Vop2,
    /// Vector compare (32-bit encoding).
    Vopc,
    /// Vector ALU, up to three sources with modifiers (64-bit encoding).
    Vop3,
    /// Packed (and mixed-precision, WMMA) vector ALU.
    Vop3p,
    /// Dual-issue vector ALU.
    Vopd,
    /// LDS and GDS.
    Ds,
    /// Flat memory.
    Flat,
    /// Scratch (private) memory.
    Scratch,
    /// Global memory.
    Global,
    /// Untyped buffer memory.
    Mubuf,
    /// Typed buffer memory.
    Mtbuf,
    /// Image memory.
    Mimg,
    /// Exports.
    Exp,
    /// Parameter interpolation.
    Vinterp,
    /// LDS parameter loads.
    Ldsdir,
}

impl Encoding {
    /// The name AMD's guide (and LLVM) give the encoding.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sop2 => "SOP2",
            Self::Sopk => "SOPK",
            Self::Sop1 => "SOP1",
            Self::Sopc => "SOPC",
            Self::Sopp => "SOPP",
            Self::Smem => "SMEM",
            Self::Vop1 => "VOP1",
            Self::Vop2 => "VOP2",
            Self::Vopc => "VOPC",
            Self::Vop3 => "VOP3",
            Self::Vop3p => "VOP3P",
            Self::Vopd => "VOPD",
            Self::Ds => "DS",
            Self::Flat => "FLAT",
            Self::Scratch => "SCRATCH",
            Self::Global => "GLOBAL",
            Self::Mubuf => "MUBUF",
            Self::Mtbuf => "MTBUF",
            Self::Mimg => "MIMG",
            Self::Exp => "EXP",
            Self::Vinterp => "VINTERP",
            Self::Ldsdir => "LDSDIR",
        }
    }

    /// The opcode table of the encoding, where this crate has one.
    pub fn table(self) -> Option<&'static [Op]> {
        Some(match self {
            Self::Sop2 => tables::SOP2,
            Self::Sopk => tables::SOPK,
            Self::Sop1 => tables::SOP1,
            Self::Sopc => tables::SOPC,
            Self::Sopp => tables::SOPP,
            Self::Smem => tables::SMEM,
            Self::Vop1 => tables::VOP1,
            Self::Vop2 => tables::VOP2,
            Self::Vopc => tables::VOPC,
            Self::Vop3 => tables::VOP3,
            Self::Vop3p => tables::VOP3P,
            Self::Ds => tables::DS,
            Self::Flat => tables::FLAT,
            Self::Scratch => tables::SCRATCH,
            Self::Global => tables::GLOBAL,
            Self::Vopd => tables::VOPDX,
            _ => return None,
        })
    }

    /// Dwords of the encoding without a literal or DPP word.
    pub const fn base_dwords(self) -> usize {
        match self {
            Self::Sop2 | Self::Sopk | Self::Sop1 | Self::Sopc | Self::Sopp | Self::Vop1 | Self::Vop2 | Self::Vopc => 1,
            Self::Ldsdir => 1,
            _ => 2,
        }
    }
}

/// Why words are not an instruction this crate knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer dwords left than the instruction takes (`need` dwords at dword offset `at`).
    Truncated { at: usize, need: usize },
    /// The encoding is recognised but this crate does not decode it (yet): named.
    Unsupported { at: usize, encoding: Encoding },
    /// An opcode value gfx11 does not define in that encoding.
    UnknownOpcode { at: usize, encoding: Encoding, op: u16 },
    /// A DPP or SDWA form (a VOP1/VOP2/VOPC/VOP3 source 0 of 0xe9, 0xea or 0xfa), not decoded.
    Dpp { at: usize },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { at, need } => {
                write!(f, "rdna3: instruction at dword {at} needs {need} dwords, the code ends first")
            }
            Self::Unsupported { at, encoding } => {
                write!(f, "rdna3: {} instruction at dword {at}: encoding not decoded", encoding.name())
            }
            Self::UnknownOpcode { at, encoding, op } => {
                write!(f, "rdna3: {} opcode {op:#x} at dword {at} is not a gfx1100 instruction", encoding.name())
            }
            Self::Dpp { at } => write!(f, "rdna3: DPP form at dword {at}: not decoded"),
        }
    }
}

impl core::error::Error for DecodeError {}

/// One decoded instruction: its encoding, opcode entry and dwords (literal included).
#[derive(Clone, Copy, Debug)]
pub struct Inst {
    /// The encoding.
    pub enc: Encoding,
    /// The opcode's table entry (VOPD: its X half).
    pub op: &'static Op,
    /// VOPD's Y half.
    pub y: Option<&'static Op>,
    /// The instruction's dwords: `words[..len]`.
    pub words: [u32; 3],
    /// Dwords it takes.
    pub len: usize,
    /// The 32-bit literal constant, when a source field says 255 (or the opcode always has one).
    pub literal: Option<u32>,
}

impl Inst {
    /// Bits `hi..=lo` of the 64-bit instruction (dword 0 low, dword 1 high).
    #[inline]
    pub fn bits(&self, hi: u32, lo: u32) -> u32 {
        let q = u64::from(self.words[0]) | u64::from(self.words[1]) << 32;
        // CAST: at most 32 bits wide.
        ((q >> lo) & ((1u64 << (hi - lo + 1)) - 1)) as u32
    }
}

/// The encoding of an instruction whose first dword is `w`.
pub fn encoding(w: u32) -> Option<Encoding> {
    Some(match w >> 30 {
        0b10 => match w >> 23 {
            0x17d => Encoding::Sop1,
            0x17e => Encoding::Sopc,
            0x17f => Encoding::Sopp,
            _ if w >> 28 == 0xb => Encoding::Sopk,
            _ => Encoding::Sop2,
        },
        0b00 | 0b01 => match w >> 25 {
            0x3e => Encoding::Vopc,
            0x3f => Encoding::Vop1,
            _ => Encoding::Vop2,
        },
        _ => match w >> 26 {
            0x35 => Encoding::Vop3,
            0x33 => match w >> 24 {
                0xcc => Encoding::Vop3p,
                0xcd => Encoding::Vinterp,
                0xce => Encoding::Ldsdir,
                _ => return None,
            },
            0x32 => Encoding::Vopd,
            0x36 => Encoding::Ds,
            0x37 => match (w >> 16) & 3 {
                0 => Encoding::Flat,
                1 => Encoding::Scratch,
                2 => Encoding::Global,
                _ => return None,
            },
            0x3d => Encoding::Smem,
            0x38 => Encoding::Mubuf,
            0x3a => Encoding::Mtbuf,
            0x3c => Encoding::Mimg,
            0x3e => Encoding::Exp,
            _ => return None,
        },
    })
}

/// The opcode field of an instruction of encoding `enc`.
fn opcode(enc: Encoding, w0: u32) -> u16 {
    // CAST: every opcode field is at most 10 bits.
    (match enc {
        Encoding::Sop2 => (w0 >> 23) & 0x7f,
        Encoding::Sopk => (w0 >> 23) & 0x1f,
        Encoding::Sop1 => (w0 >> 8) & 0xff,
        Encoding::Sopc | Encoding::Sopp => (w0 >> 16) & 0x7f,
        Encoding::Vop1 => (w0 >> 9) & 0xff,
        Encoding::Vop2 => (w0 >> 25) & 0x3f,
        Encoding::Vopc => (w0 >> 17) & 0xff,
        Encoding::Vop3 => (w0 >> 16) & 0x3ff,
        Encoding::Vop3p => (w0 >> 16) & 0x7f,
        Encoding::Smem | Encoding::Ds => (w0 >> 18) & 0xff,
        Encoding::Flat | Encoding::Scratch | Encoding::Global => (w0 >> 18) & 0x7f,
        Encoding::Vopd => (w0 >> 22) & 0xf,
        _ => 0,
    }) as u16
}

/// Opcodes that carry a literal whatever their sources say (the `*mk*`/`*ak*` forms of VOP2
/// and VOPD: their constant `K`).
fn always_literal(op: &Op) -> bool {
    op.operands.contains(&"K")
}

/// The source fields (9-bit operand codes) of an instruction, for the literal check.
fn sources(enc: Encoding, w0: u32, w1: u32) -> [u32; 3] {
    const NONE: u32 = 0;
    match enc {
        Encoding::Sop2 | Encoding::Sopc => [w0 & 0xff, (w0 >> 8) & 0xff, NONE],
        Encoding::Sop1 => [w0 & 0xff, NONE, NONE],
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc => [w0 & 0x1ff, NONE, NONE],
        Encoding::Vop3 | Encoding::Vop3p => [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff],
        // srcx0 and srcy0 (the vsrc1 fields name VGPRs only)
        Encoding::Vopd => [w0 & 0x1ff, w1 & 0x1ff, NONE],
        _ => [NONE; 3],
    }
}

/// Operand code of a 32-bit literal that follows the instruction.
pub const LITERAL: u32 = 255;

/// Decode the instruction at dword `at` of `code`.
pub fn decode(code: &[u32], at: usize) -> Result<Inst, DecodeError> {
    let w0 = *code.get(at).ok_or(DecodeError::Truncated { at, need: 1 })?;
    let enc = encoding(w0).ok_or(DecodeError::UnknownOpcode { at, encoding: Encoding::Vop3, op: (w0 >> 26) as u16 })?;
    let table = enc.table().ok_or(DecodeError::Unsupported { at, encoding: enc })?;
    let base = enc.base_dwords();
    if code.len() - at < base {
        return Err(DecodeError::Truncated { at, need: base });
    }
    let w1 = if base > 1 { code[at + 1] } else { 0 };
    let opv = opcode(enc, w0);
    let op = table.binary_search_by_key(&opv, |o| o.op).map(|i| &table[i]).map_err(|_| DecodeError::UnknownOpcode {
        at,
        encoding: enc,
        op: opv,
    })?;
    let srcs = sources(enc, w0, w1);
    let vop = matches!(enc, Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3);
    if vop && matches!(srcs[0], 0xe9 | 0xea | 0xfa) {
        return Err(DecodeError::Dpp { at });
    }
    let y = if enc == Encoding::Vopd {
        // CAST: a 5-bit field.
        let opy = ((w0 >> 17) & 0x1f) as u16;
        let t = tables::VOPDY;
        Some(t.binary_search_by_key(&opy, |o| o.op).map(|i| &t[i]).map_err(|_| DecodeError::UnknownOpcode {
            at,
            encoding: Encoding::Vopd,
            op: opy,
        })?)
    } else {
        None
    };
    let scalar = matches!(enc, Encoding::Sop2 | Encoding::Sopc | Encoding::Sop1);
    let wants_literal = always_literal(op)
        || y.is_some_and(always_literal)
        || srcs.iter().any(|&s| s == LITERAL && (scalar || vop || matches!(enc, Encoding::Vop3p | Encoding::Vopd)))
        || (enc == Encoding::Sopk && op.name == "s_setreg_imm32_b32");
    let len = base + usize::from(wants_literal);
    if code.len() - at < len {
        return Err(DecodeError::Truncated { at, need: len });
    }
    let mut words = [0; 3];
    words[..len].copy_from_slice(&code[at..at + len]);
    let literal = wants_literal.then(|| words[len - 1]);
    Ok(Inst { enc, op, y, words, len, literal })
}

/// Decode every instruction of `code` in order: `(dword offset, instruction)`, stopping at the
/// first error (which names its offset).
pub fn decode_all(code: &[u32]) -> impl Iterator<Item = Result<(usize, Inst), DecodeError>> + '_ {
    let mut at = 0;
    let mut failed = false;
    core::iter::from_fn(move || {
        if failed || at >= code.len() {
            return None;
        }
        match decode(code, at) {
            Ok(i) => {
                let here = at;
                at += i.len;
                Some(Ok((here, i)))
            }
            Err(e) => {
                failed = true;
                Some(Err(e))
            }
        }
    })
}
