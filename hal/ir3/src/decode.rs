//! 64-bit word → [`Instr`].
//!
//! Bit positions, opcode numbers and the fixed ("pattern") bits follow Mesa's isaspec files
//! `isa/ir3-cat0.xml` … `ir3-cat7.xml` and `ir3-common.xml` for a6xx (gen 600..699). A word whose
//! fixed bits match no encoding is an error naming the reason. `tests/xml.rs` checks both
//! directions against the XML: every a6xx encoding decodes to its own name, and every word this
//! decoder accepts matches an XML encoding of that name.

use alloc::vec::Vec;
use core::fmt;

use crate::isa::*;

/// An instruction word that is not a valid a6xx encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Index of the instruction (in 64-bit words from the start of the image).
    pub index: usize,
    pub word: u64,
    /// What did not match.
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "instruction {}: unknown encoding [{:08x}_{:08x}]: {}",
            self.index,
            (self.word >> 32) as u32,
            self.word as u32,
            self.reason
        )
    }
}

/// An error of [`decode_image`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageError {
    /// The image is not a whole number of 64-bit instructions.
    Length(usize),
    Decode(DecodeError),
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Length(n) => {
                write!(f, "shader image of {n} bytes is not a multiple of 8 (64-bit instructions)")
            }
            ImageError::Decode(e) => e.fmt(f),
        }
    }
}

impl From<DecodeError> for ImageError {
    fn from(e: DecodeError) -> Self {
        ImageError::Decode(e)
    }
}

/// The little-endian 64-bit words of a shader image.
pub fn words(image: &[u8]) -> Result<Vec<u64>, ImageError> {
    if !image.len().is_multiple_of(8) {
        return Err(ImageError::Length(image.len()));
    }
    Ok(image
        .chunks_exact(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect())
}

/// Decode a whole shader image (little-endian u64 words, as uploaded to the GPU).
pub fn decode_image(image: &[u8]) -> Result<Vec<Instr>, ImageError> {
    decode_words(&words(image)?).map_err(ImageError::Decode)
}

/// Decode a sequence of instruction words.
pub fn decode_words(words: &[u64]) -> Result<Vec<Instr>, DecodeError> {
    words.iter().enumerate().map(|(i, &w)| decode_at(i, w)).collect()
}

/// Decode one word, naming `index` in the error.
pub fn decode_at(index: usize, word: u64) -> Result<Instr, DecodeError> {
    decode(word).map_err(|reason| DecodeError { index, word, reason })
}

#[inline]
const fn bits(w: u64, lo: u32, hi: u32) -> u64 {
    (w >> lo) & ((1u64 << (hi - lo + 1)) - 1)
}

#[inline]
const fn bit(w: u64, pos: u32) -> bool {
    (w >> pos) & 1 != 0
}

/// Sign-extend the low `n` bits.
#[inline]
const fn sext(v: u64, n: u32) -> i64 {
    ((v << (64 - n)) as i64) >> (64 - n)
}

type R<T> = Result<T, &'static str>;

/// Decode one 64-bit instruction word.
pub fn decode(w: u64) -> R<Instr> {
    let mut flags = Flags { sy: bit(w, 60), jp: bit(w, 59), ..Flags::default() };
    let body = match w >> 61 {
        0 => Body::Cat0(cat0(w, &mut flags)?),
        1 => Body::Cat1(cat1(w, &mut flags)?),
        2 => Body::Cat2(cat2(w, &mut flags)?),
        3 => cat3(w, &mut flags)?,
        4 => Body::Cat4(cat4(w, &mut flags)?),
        5 => cat5(w)?,
        6 => cat6(w)?,
        _ => Body::Cat7(cat7(w, &mut flags)?),
    };
    Ok(Instr { word: w, flags, body })
}

// ---------------------------------------------------------------------------------------------
// cat0 (XML ir3-cat0.xml)

fn cat0(w: u64, f: &mut Flags) -> R<Cat0> {
    let repeat = bits(w, 40, 42) as u8;
    if repeat > 5 {
        return Err("cat0 REPEAT 6/7 has no (rptN) form");
    }
    f.repeat = repeat;
    f.ss = bit(w, 44);
    f.eq = bit(w, 48);
    let hi = bit(w, 49);
    let opc = bits(w, 55, 58);
    let mut c = Cat0 {
        op: Cat0Op::Nop,
        immed: bits(w, 0, 31) as u32 as i32,
        inv1: bit(w, 52),
        comp1: bits(w, 53, 54) as u8,
        inv2: bit(w, 45),
        comp2: bits(w, 46, 47) as u8,
        index: 0,
    };
    use Cat0Op::*;
    // #instruction-cat0-0src: BRTYPE, src1 and src0 fields zero.
    let zero_src = bits(w, 37, 39) == 0 && bits(w, 45, 47) == 0 && bits(w, 52, 54) == 0;
    let op0 = |op| if zero_src { Ok(op) } else { Err("cat0 0-source form with non-zero source fields") };
    c.op = match (hi, opc) {
        (false, 0) => op0(Nop)?,
        (false, 6) => op0(End)?,
        (false, 4) => op0(Ret)?,
        (false, 7) => op0(Emit)?,
        (false, 8) => op0(Cut)?,
        (false, 9) => op0(Chmask)?,
        (false, 10) => op0(Chsh)?,
        (false, 11) => op0(FlowRev)?,
        (true, 8) => op0(Shpe)?,
        (true, 13) => op0(Predt)?,
        (true, 14) => op0(Predf)?,
        (true, 15) => op0(Prede)?,
        (false, 5) => {
            if bits(w, 32, 39) != 0 || bits(w, 45, 47) != 0 {
                return Err("kill with non-zero INDEX/BRTYPE/src1");
            }
            Kill
        }
        (false, 2) => Jump,
        (false, 3) => Call,
        (true, 0) => Bkt,
        (true, 4) => {
            c.index = bits(w, 52, 54) as u8;
            Getlast
        }
        (true, 5) => Getone,
        (true, 7) => Shps,
        (false, 1) => match bits(w, 37, 39) {
            0 => Br,
            1 => Brao,
            2 => Braa,
            3 => {
                c.index = bits(w, 32, 36) as u8;
                Brac
            }
            4 => Bany,
            5 => Ball,
            6 => Brax,
            _ => return Err("cat0 branch BRTYPE 7"),
        },
        _ => return Err("unknown cat0 opcode"),
    };
    Ok(c)
}

// ---------------------------------------------------------------------------------------------
// cat1 (XML ir3-cat1.xml)

fn cat1(w: u64, f: &mut Flags) -> R<Cat1> {
    if bit(w, 42) {
        return Err("cat1 bit 42 set");
    }
    f.ss = bit(w, 44);
    f.ul = bit(w, 45);
    let src_type = Type::from_bits(bits(w, 50, 52));
    let dst_type = Type::from_bits(bits(w, 46, 48));
    let round = bits(w, 55, 56) as u8;
    let dst_reg = Reg(bits(w, 32, 39) as u8);
    let dst = if bit(w, 49) { Dst::Rel(dst_reg.0) } else { Dst::Reg(dst_reg) };
    let src_r = bit(w, 43);
    let mut c = Cat1 {
        op: Cat1Op::Mov,
        src_type,
        dst_type,
        round,
        dst,
        src: Operand::reg(Reg(0), src_type.is_half() || src_type == Type::U8_32),
        extra: [Reg(0); 3],
    };
    match bits(w, 57, 58) {
        0 => {
            f.repeat = bits(w, 40, 41) as u8;
            let half = c.src.half;
            let lo = bits(w, 0, 31);
            c.src = match bits(w, 53, 54) {
                2 => Operand { src: Src::Imm32(lo as u32), half, neg: false, abs: false, r: src_r },
                1 => {
                    if bits(w, 11, 31) != 0 {
                        return Err("cat1 const source with bits 11..31 set");
                    }
                    Operand { src: Src::Const(bits(w, 0, 10) as u16), half, neg: false, abs: false, r: src_r }
                }
                0 => {
                    if bit(w, 11) {
                        if bits(w, 12, 31) != 0 {
                            return Err("cat1 relative source with bits 12..31 set");
                        }
                        let off = sext(bits(w, 0, 9), 10) as i16;
                        let src = if bit(w, 10) { Src::RelConst(off) } else { Src::RelReg(off) };
                        Operand { src, half, neg: false, abs: false, r: src_r }
                    } else {
                        if bits(w, 8, 9) != 0 || bits(w, 12, 31) != 0 {
                            return Err("cat1 register source with stray bits");
                        }
                        let reg = Reg(bits(w, 0, 7) as u8);
                        Operand { src: Src::Reg { reg, last: bit(w, 10) }, half, neg: false, abs: false, r: src_r }
                    }
                }
                _ => return Err("cat1 source mode 3"),
            };
            let raw_dst = bits(w, 32, 39);
            if raw_dst == 0xf4 && src_type == Type::S16 && dst_type == Type::S16 {
                c.op = Cat1Op::Mova;
            } else if raw_dst == 0xf5 && src_type == Type::U16 && dst_type == Type::U16 {
                c.op = Cat1Op::Mova1;
            }
        }
        2 => {
            if src_r || bit(w, 49) || bits(w, 53, 54) != 0 {
                return Err("cat1 swz/gat/sct with SRC_R, DST_REL or a source mode");
            }
            let b = |lo| Reg(bits(w, lo, lo + 7) as u8);
            c.src = Operand::reg(b(0), c.src.half);
            match bits(w, 40, 41) {
                0 => {
                    if bits(w, 24, 31) != 0 {
                        return Err("swz with bits 24..31 set");
                    }
                    c.op = Cat1Op::Swz;
                    c.extra = [b(8), b(16), Reg(0)];
                }
                1 => {
                    c.op = Cat1Op::Gat;
                    c.extra = [b(8), b(16), b(24)];
                }
                2 => {
                    c.op = Cat1Op::Sct;
                    c.extra = [b(8), b(16), b(24)];
                }
                _ => return Err("cat1 multi-move sub-opcode 3"),
            }
        }
        3 => {
            if bits(w, 0, 31) != 0 || src_r || dst_type != Type::U32 || src_type != Type::U32 || bits(w, 53, 54) != 0 {
                return Err("movmsk with stray bits");
            }
            f.repeat = bits(w, 40, 41) as u8;
            c.op = Cat1Op::Movmsk;
        }
        _ => return Err("cat1 opcode 1"),
    }
    Ok(c)
}

// ---------------------------------------------------------------------------------------------
// cat2 / cat4 sources (XML ir3-common.xml #multisrc)

fn multisrc(v: u64, full: bool, r: bool) -> R<Operand> {
    let neg = bit(v, 14);
    let abs = bit(v, 15);
    let half = !full;
    let (src, half) = match bits(v, 11, 13) {
        0 => {
            if bits(v, 8, 9) != 0 {
                return Err("register source with bits 8..9 set");
            }
            (Src::Reg { reg: Reg(bits(v, 0, 7) as u8), last: bit(v, 10) }, half)
        }
        2 | 6 => (Src::Const(bits(v, 0, 10) as u16), half),
        4 => (Src::Imm(sext(bits(v, 0, 10), 11) as i32), half),
        5 => {
            let idx = bits(v, 0, 9) as u8;
            if idx > 11 {
                return Err("float immediate table index above 11");
            }
            (Src::Flut(idx), bit(v, 10))
        }
        1 => {
            let off = sext(bits(v, 0, 9), 10) as i16;
            (if bit(v, 10) { Src::RelConst(off) } else { Src::RelReg(off) }, half)
        }
        _ => return Err("source kind 3 or 7"),
    };
    Ok(Operand { src, half, neg, abs, r })
}

fn dst_half(full: bool, dst_conv: bool, dst: Reg) -> bool {
    full == dst_conv && dst.0 <= 0xf7
}

// ---------------------------------------------------------------------------------------------
// cat2 (XML ir3-cat2.xml)

fn cat2(w: u64, f: &mut Flags) -> R<Cat2> {
    use Cat2Op::*;
    let op = match bits(w, 53, 58) {
        0 => AddF,
        1 => MinF,
        2 => MaxF,
        3 => MulF,
        4 => SignF,
        5 => CmpsF,
        6 => AbsnegF,
        7 => CmpvF,
        9 => FloorF,
        10 => CeilF,
        11 => RndneF,
        12 => RndazF,
        13 => TruncF,
        16 => AddU,
        17 => AddS,
        18 => SubU,
        19 => SubS,
        20 => CmpsU,
        21 => CmpsS,
        22 => MinU,
        23 => MinS,
        24 => MaxU,
        25 => MaxS,
        26 => AbsnegS,
        28 => AndB,
        29 => OrB,
        30 => NotB,
        31 => XorB,
        33 => CmpvU,
        34 => CmpvS,
        48 => MulU24,
        49 => MulS24,
        50 => MullU,
        51 => BfrevB,
        52 => ClzS,
        53 => ClzB,
        54 => ShlB,
        55 => ShrB,
        56 => AshrB,
        57 => {
            if bit(w, 50) {
                FlatB
            } else {
                BaryF
            }
        }
        58 => MgenB,
        59 => GetbitB,
        60 => Setrm,
        61 => CbitsB,
        62 => Shb,
        63 => Msad,
        _ => return Err("unknown cat2 opcode"),
    };
    let repeat = bits(w, 40, 41) as u8;
    f.repeat = repeat;
    f.sat = bit(w, 42);
    f.ss = bit(w, 44);
    f.ul = bit(w, 45);
    f.ei = bit(w, 47);
    let (mut r1, mut r2) = (bit(w, 43), bit(w, 51));
    // #cat2-cat3-nop-encoding: with REPEAT 0 the (r) bits count nop slots. bary.f/flat.b have
    // no nop override in the XML.
    if repeat == 0 && (r1 || r2) && !matches!(op, BaryF | FlatB) {
        f.nop = r1 as u8 | (r2 as u8) << 1;
        r1 = false;
        r2 = false;
    }
    let full = bit(w, 52);
    let dst = Reg(bits(w, 32, 39) as u8);
    let cond = if op.has_cond() {
        Some(match bits(w, 48, 50) {
            0 => Cond::Lt,
            1 => Cond::Le,
            2 => Cond::Gt,
            3 => Cond::Ge,
            4 => Cond::Eq,
            5 => Cond::Ne,
            _ => return Err("cat2 COND 6/7"),
        })
    } else {
        None
    };
    let src1 = multisrc(bits(w, 0, 15), full, r1)?;
    let src2 = if op.is_1src() { None } else { Some(multisrc(bits(w, 16, 31), full, r2)?) };
    Ok(Cat2 { op, cond, full, dst_half: dst_half(full, bit(w, 46), dst), dst, src1, src2 })
}

// ---------------------------------------------------------------------------------------------
// cat3 (XML ir3-cat3.xml)

fn cat3_src(v: u64, alt: bool, half: bool) -> R<Operand> {
    let src = match bits(v, 11, 12) {
        0 => {
            if bits(v, 8, 9) != 0 {
                return Err("cat3 register source with bits 8..9 set");
            }
            Src::Reg { reg: Reg(bits(v, 0, 7) as u8), last: bit(v, 10) }
        }
        _ if alt && bit(v, 12) => Src::Imm(bits(v, 0, 11) as i32),
        2 => Src::Const(bits(v, 0, 10) as u16),
        1 => {
            let off = sext(bits(v, 0, 9), 10) as i16;
            if bit(v, 10) { Src::RelConst(off) } else { Src::RelReg(off) }
        }
        _ => return Err("cat3 source kind 3"),
    };
    Ok(Operand { src, half, neg: false, abs: false, r: false })
}

fn cat3(w: u64, f: &mut Flags) -> R<Body> {
    use Cat3Op::*;
    let opc = bits(w, 55, 58);
    let alt = bit(w, 13);
    let op = if !alt {
        match opc {
            0 => MadU16,
            1 => MadshU16,
            2 => MadS16,
            3 => MadshM16,
            4 => MadU24,
            5 => MadS24,
            6 => MadF16,
            7 => MadF32,
            8 => SelB16,
            9 => SelB32,
            10 => SelS16,
            11 => SelS32,
            12 => SelF16,
            13 => SelF32,
            14 => SadS16,
            _ => SadS32,
        }
    } else {
        match opc {
            8 => Shrm,
            9 => Shlm,
            10 => Shrg,
            11 => Shlg,
            12 => Andg,
            13 => return Ok(Body::Unsupported(if bit(w, 46) { "dp4acc" } else { "dp2acc" })),
            14 => return Ok(Body::Unsupported(if bit(w, 42) { "wmm.accu" } else { "wmm" })),
            _ => return Err("cat3 alt-group opcode outside 8..14"),
        }
    };
    let repeat = bits(w, 40, 41) as u8;
    f.repeat = repeat;
    f.ss = bit(w, 44);
    f.ul = bit(w, 45);
    let full = if alt {
        bit(w, 42)
    } else {
        f.sat = bit(w, 42);
        !matches!(op, MadU16 | MadS16 | MadF16 | SelB16 | SelS16 | SelF16 | SadS16 | SadS32)
    };
    let (mut r1, mut r2, r3) = (bit(w, 43), bit(w, 15), bit(w, 29));
    let mut r3 = r3;
    if repeat == 0 && (r1 || r2) {
        f.nop = r1 as u8 | (r2 as u8) << 1;
        r1 = false;
        r2 = false;
        r3 = false;
    }
    let half = !full;
    let mut s1 = cat3_src(bits(w, 0, 12), alt, half)?;
    let mut s2 = Operand::reg(Reg(bits(w, 47, 54) as u8), half);
    let mut s3 = cat3_src(bits(w, 16, 28), alt, half)?;
    s1.neg = bit(w, 14);
    s2.neg = bit(w, 30);
    s3.neg = bit(w, 31);
    s1.r = r1;
    s2.r = r2;
    s3.r = r3;
    let dst = Reg(bits(w, 32, 39) as u8);
    Ok(Body::Cat3(Cat3 { op, full, dst_half: dst_half(full, bit(w, 46), dst), dst, srcs: [s1, s2, s3] }))
}

// ---------------------------------------------------------------------------------------------
// cat4 (XML ir3-cat4.xml)

fn cat4(w: u64, f: &mut Flags) -> R<Cat4> {
    use Cat4Op::*;
    let op = match bits(w, 53, 58) {
        0 => Rcp,
        1 => Rsq,
        2 => Log2,
        3 => Exp2,
        4 => Sin,
        5 => Cos,
        6 => Sqrt,
        9 => Hrsq,
        10 => Hlog2,
        11 => Hexp2,
        _ => return Err("unknown cat4 opcode"),
    };
    f.repeat = bits(w, 40, 41) as u8;
    f.sat = bit(w, 42);
    f.ss = bit(w, 44);
    f.ul = bit(w, 45);
    let full = bit(w, 52);
    let src = multisrc(bits(w, 0, 15), full, bit(w, 43))?;
    let dst = Reg(bits(w, 32, 39) as u8);
    Ok(Cat4 { op, full, dst_half: dst_half(full, bit(w, 46), dst), dst, src })
}

// ---------------------------------------------------------------------------------------------
// cat5 (XML ir3-cat5.xml): named only.

fn cat5_name(w: u64) -> R<&'static str> {
    const NAMES: [&str; 28] = [
        "isam", "isaml", "isamm", "sam", "samb", "saml", "samgq", "getlod", "conv", "convm", "getsize", "getbuf",
        "getpos", "getinfo", "dsx", "dsy", "gather4r", "gather4g", "gather4b", "gather4a", "samgp0", "samgp1",
        "samgp2", "samgp3", "dsxpp.1", "dsypp.1", "rgetpos", "rgetinfo",
    ];
    let opc = bits(w, 54, 58) as usize;
    match opc {
        0..=27 => Ok(NAMES[opc]),
        28 => Ok("tcinv"),
        31 if !bit(w, 53) => Ok("brcst.active"),
        31 => Ok(["quad_shuffle.brcst", "quad_shuffle.horiz", "quad_shuffle.vert", "quad_shuffle.diag"]
            [bits(w, 19, 20) as usize]),
        _ => Err("unknown cat5 opcode"),
    }
}

/// The modelled cat5 forms (isam, isaml, sam) in the normal binding model: not s2en/bindless
/// (bit 51 clear), the XML's asserts for that case hold (BASE_LO bit 47 and BASE_HI bits 19..20
/// zero, SRC2 zero when not displayed) and, for isaml/sam, the `#instruction-cat5-tex` pattern
/// bit 18 is clear. Every other cat5 word is decoded to its name only.
fn cat5(w: u64) -> R<Body> {
    let name = cat5_name(w)?;
    let op = match bits(w, 54, 58) {
        0 => Cat5Op::Isam,
        1 => Cat5Op::Isaml,
        3 => Cat5Op::Sam,
        _ => return Ok(Body::Unsupported(name)),
    };
    let isam = op == Cat5Op::Isam;
    let o = bit(w, 52);
    let src2_shown = o || op.num_src() > 1 || (isam && bit(w, 53));
    if bit(w, 51) || bit(w, 47) || bits(w, 19, 20) != 0 || (!isam && bit(w, 18)) || (!src2_shown && bits(w, 9, 16) != 0)
    {
        return Ok(Body::Unsupported(name));
    }
    Ok(Body::Cat5(Cat5 {
        op,
        ty: Type::from_bits(bits(w, 44, 46)),
        wrmask: bits(w, 40, 43) as u8,
        dst: Reg(bits(w, 32, 39) as u8),
        full: bit(w, 0),
        src1: Reg(bits(w, 1, 8) as u8),
        src2: Reg(bits(w, 9, 16) as u8),
        samp: bits(w, 21, 24) as u8,
        tex: bits(w, 25, 31) as u8,
        d3: bit(w, 48),
        array: bit(w, 49),
        offset: o,
        sv: bit(w, 50),
        b53: bit(w, 53),
        b18: bit(w, 18),
    }))
}

// ---------------------------------------------------------------------------------------------
// cat6 (XML ir3-cat6.xml)

fn cat6_src(v: u64, imm: bool) -> Cat6Src {
    if imm { Cat6Src::Imm(v as u8) } else { Cat6Src::Reg(Reg(v as u8)) }
}

fn cat6(w: u64) -> R<Body> {
    cat6_a3xx(w).or_else(|e| {
        // ldib.b/stib.b with HAS_OFFSET (bit 23) keep part of their offset in the opcode bits
        // 54..58 (XML `#instruction-cat6-a6xx-ibo-load-store`).
        let ibo = bit(w, 53) && !bit(w, 52) && !bit(w, 40) && bit(w, 23) && bits(w, 20, 22) == 0b110;
        match bits(w, 14, 19) {
            0b000110 if ibo => Ok(ibo_body(w, IboOp::Load)),
            0b011101 if ibo && !bit(w, 0) => Ok(ibo_body(w, IboOp::Store)),
            _ => Err(e),
        }
    })
}

fn cat6_a3xx(w: u64) -> R<Body> {
    let opc = bits(w, 54, 58);
    let ty = Type::from_bits(bits(w, 49, 51));
    let b52 = bit(w, 52);
    let b53 = bit(w, 53);
    let reg = |lo: u32| Reg(bits(w, lo, lo + 7) as u8);
    let body = match opc {
        0 if !b53 && !b52 => {
            // #instruction-cat6-ldg
            if !bit(w, 0) || !bit(w, 23) || bits(w, 30, 31) != 0 {
                return Err("ldg with bit 0 or 23 clear or bits 30..31 set");
            }
            let size = bits(w, 24, 26) as u8;
            if bit(w, 22) {
                if bit(w, 11) {
                    return Err("ldg.a with bit 11 set");
                }
                Cat6::LdgA {
                    ty,
                    dst: reg(32),
                    addr: reg(14),
                    index: reg(1),
                    shift: bits(w, 12, 13) as u8,
                    off: bits(w, 9, 10) as u8,
                    size,
                }
            } else {
                Cat6::Ldg { ty, dst: reg(32), addr: reg(14), off: sext(bits(w, 1, 13), 13) as i32, size }
            }
        }
        0 if !b53 => {
            if !bit(w, 0) || bit(w, 22) || bits(w, 30, 31) != 0 {
                return Err("ldg.k with stray bits");
            }
            return Ok(Body::Unsupported("ldg.k"));
        }
        0 => return cat6_a6xx(w),
        1 | 2 | 10 => {
            if !bit(w, 0) || !bit(w, 23) {
                return Err("ldl/ldp/ldlw with bit 0 or 23 clear");
            }
            let space = match opc {
                1 => Space::Local,
                2 => Space::Private,
                _ => Space::LocalW,
            };
            Cat6::Ld {
                space,
                ty,
                dst: reg(32),
                addr: reg(14),
                off: sext(bits(w, 1, 13), 13) as i32,
                size: bits(w, 24, 31) as u8,
            }
        }
        3 => {
            if b53 || bits(w, 30, 31) != 0 || !bit(w, 23) {
                return Err("stg with bit 53 or bits 30..31 set or bit 23 clear");
            }
            let size = bits(w, 24, 26) as u8;
            if b52 {
                if bit(w, 11) {
                    return Err("stg.a with bit 11 set");
                }
                Cat6::StgA {
                    ty,
                    addr: reg(41),
                    index: reg(32),
                    shift: bits(w, 12, 13) as u8,
                    off: bits(w, 9, 10) as u8,
                    src: reg(1),
                    size,
                }
            } else {
                let off = (sext(bits(w, 9, 13), 5) << 8) | bits(w, 32, 39) as i64;
                Cat6::Stg { ty, addr: reg(41), off: off as i32, src: reg(1), size }
            }
        }
        4 | 5 | 11 => {
            if !bit(w, 23) || !bit(w, 40) || (opc == 5 && bit(w, 0)) {
                return Err("stl/stp/stlw with stray bits");
            }
            let space = match opc {
                4 => Space::Local,
                5 => Space::Private,
                _ => Space::LocalW,
            };
            let off = (sext(bits(w, 9, 13), 5) << 8) | bits(w, 32, 39) as i64;
            Cat6::St { space, ty, addr: reg(41), off: off as i32, src: reg(1), size: bits(w, 24, 31) as u8 }
        }
        31 => {
            if bit(w, 0) || bits(w, 14, 21) != 0 || bits(w, 22, 23) != 3 {
                return Err("ldlv with stray bits");
            }
            return Ok(Body::Unsupported("ldlv"));
        }
        28 => {
            if bits(w, 14, 22) != 0 || !bit(w, 23) {
                return Err("stc with stray bits");
            }
            return Ok(Body::Unsupported("stc"));
        }
        15 => {
            if bits(w, 14, 23) != 0 || bit(w, 40) {
                return Err("resinfo with stray bits");
            }
            return Ok(Body::Unsupported("resinfo"));
        }
        16..=26 => {
            if !bit(w, 0) || bits(w, 1, 8) != 0 || bits(w, 41, 48) != 0 || b53 {
                return Err("atomic with stray bits");
            }
            let op = [
                AtomicOp::Add,
                AtomicOp::Sub,
                AtomicOp::Xchg,
                AtomicOp::Inc,
                AtomicOp::Dec,
                AtomicOp::Cmpxchg,
                AtomicOp::Min,
                AtomicOp::Max,
                AtomicOp::And,
                AtomicOp::Or,
                AtomicOp::Xor,
            ][(opc - 16) as usize];
            let typed = bit(w, 11);
            let d = bits(w, 9, 10) as u8 + 1;
            let type_size = bits(w, 12, 13) as u8 + 1;
            let dst = reg(32);
            let src1 = cat6_src(bits(w, 14, 21), bit(w, 22));
            let src2 = cat6_src(bits(w, 24, 31), bit(w, 23));
            if b52 {
                Cat6::AtomicG { op, ty, typed, d, type_size, dst, src1, src2 }
            } else {
                Cat6::AtomicL { op, ty, typed, d, type_size, dst, src1, src2 }
            }
        }
        27 => {
            if bit(w, 0) || bits(w, 9, 22) != 0 || !b53 || b52 {
                return Err("shfl with stray bits");
            }
            let mode = bits(w, 45, 47) as u8;
            if !matches!(mode, 1 | 2 | 3 | 6 | 7) {
                return Err("shfl mode 0, 4 or 5");
            }
            Cat6::Shfl { mode, ty, dst: reg(32), src1: reg(1), src2: cat6_src(bits(w, 24, 31), bit(w, 23)) }
        }
        _ => return Err("unknown cat6 opcode"),
    };
    Ok(Body::Cat6(body))
}

/// The a6xx "new" encodings (opc 0, bit 53 set; `#instruction-cat6-a6xx-base`).
fn cat6_a6xx(w: u64) -> R<Body> {
    if bit(w, 40) {
        return Err("a6xx cat6 form with bit 40 set");
    }
    let sub = bits(w, 14, 19);
    let b52 = bit(w, 52);
    let ty = Type::from_bits(bits(w, 49, 51));
    let plain = bits(w, 4, 5) == 0; // opc bits 54..58 are zero here
    let name = match sub {
        0b011110 if plain && bit(w, 22) && bits(w, 49, 50) == 3 => {
            if b52 {
                "ldc.k"
            } else {
                "ldc"
            }
        }
        0b100100..=0b100110 if plain && !bit(w, 0) && bit(w, 22) => {
            let which = match sub {
                0b100100 => GetId::Sp,
                0b100101 => GetId::Wave,
                _ if bit(w, 23) => GetId::Fiber,
                _ => return Err("getfiberid with bit 23 clear"),
            };
            return Ok(Body::Cat6(Cat6::GetId { which, ty, dst: Reg(bits(w, 32, 39) as u8) }));
        }
        0b001111 if plain && !bit(w, 0) && bits(w, 20, 23) == 0b0110 => "resinfo.b",
        0b011101 if !b52 && !bit(w, 0) && bits(w, 20, 22) == 0b110 && (bit(w, 23) || plain) => {
            return Ok(ibo_body(w, IboOp::Store));
        }
        0b000110 if !b52 && bits(w, 20, 22) == 0b110 && (bit(w, 23) || plain) => return Ok(ibo_body(w, IboOp::Load)),
        // PANIC: sub is 16..=26 and not 19/20 here, so the index is 0..=10 and names an entry.
        0b010000..=0b011010 if b52 && plain && bits(w, 20, 23) == 0b0110 && !matches!(sub, 0b010011 | 0b010100) => [
            "atomic.b.add",
            "atomic.b.sub",
            "atomic.b.xchg",
            "",
            "",
            "atomic.b.cmpxchg",
            "atomic.b.min",
            "atomic.b.max",
            "atomic.b.and",
            "atomic.b.or",
            "atomic.b.xor",
        ][(sub - 0b010000) as usize],
        _ => return Err("unknown a6xx cat6 encoding"),
    };
    Ok(Body::Unsupported(name))
}

/// `ldib.b` / `stib.b` (`#instruction-cat6-a6xx-ibo-load-store`): modelled with an immediate
/// IBO index (MODE 0) and not bindless (bit 8 clear); other forms are decoded to their name.
fn ibo_body(w: u64, op: IboOp) -> Body {
    let name = match op {
        IboOp::Load => "ldib.b",
        IboOp::Store => "stib.b",
    };
    if bit(w, 8) || bits(w, 6, 7) != 0 {
        return Body::Unsupported(name);
    }
    let offset = bit(w, 23).then(|| ((bits(w, 4, 5) << 5) | bits(w, 54, 58)) as u8);
    Body::Cat6(Cat6::Ibo {
        op,
        typed: bit(w, 11),
        d: bits(w, 9, 10) as u8 + 1,
        ty: Type::from_bits(bits(w, 49, 51)),
        type_size: bits(w, 12, 13) as u8 + 1,
        val: Reg(bits(w, 32, 39) as u8),
        coord: Reg(bits(w, 24, 31) as u8),
        ibo: bits(w, 41, 48) as u8,
        offset,
    })
}

// ---------------------------------------------------------------------------------------------
// cat7 (XML ir3-cat7.xml)

fn cat7(w: u64, f: &mut Flags) -> R<Cat7> {
    f.ss = bit(w, 44);
    let op = match bits(w, 55, 58) {
        0 => Cat7Op::Bar,
        1 => Cat7Op::Fence,
        2 => Cat7Op::Sleep,
        3 => Cat7Op::Icinv,
        4 => Cat7Op::Dccln,
        5 => Cat7Op::Dcinv,
        6 => Cat7Op::Dcflu,
        _ => return Err("unknown cat7 opcode (or an a7xx-only one)"),
    };
    match op {
        Cat7Op::Bar | Cat7Op::Fence if !bit(w, 49) => return Err("bar/fence with bit 49 clear"),
        Cat7Op::Dccln | Cat7Op::Dcinv | Cat7Op::Dcflu if bit(w, 52) => return Err("cache op with bit 52 set"),
        _ => {}
    }
    let barrier = matches!(op, Cat7Op::Bar | Cat7Op::Fence);
    Ok(Cat7 {
        op,
        g: barrier && bit(w, 54),
        l: barrier && bit(w, 53),
        r: barrier && bit(w, 52),
        w: barrier && bit(w, 51),
        bit51: bit(w, 51),
    })
}
