//! The decoded form of one ir3 instruction: the stable centre of this crate.
//!
//! Every field mirrors a field of Mesa's isaspec description (`isa/ir3-*.xml`, copied from Mesa, MIT;
//! `tests/xml.rs` checks the decoder against those files). Decoding is done by [`crate::decode()`],
//! printing by [`crate::disasm()`], execution by [`crate::exec`].

/// A register id as the ISA encodes it: `4·n + component` (XML ir3-common.xml `#reg-gpr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reg(pub u8);

impl Reg {
    /// Register number n (r0..r63; 61 = a0, 62 = p0).
    pub const fn num(self) -> u8 {
        self.0 >> 2
    }
    /// Component 0..3 (x, y, z, w).
    pub const fn comp(self) -> u8 {
        self.0 & 3
    }
    /// `p0.c` (regid 0xf8..0xfb).
    pub const fn is_pred(self) -> bool {
        self.num() == 62
    }
    /// `a0.c` (regid 0xf4..0xf7): a0.x, or a1.x at 0xf5.
    pub const fn is_addr(self) -> bool {
        self.num() == 61
    }
    /// The register `k` components further (consecutive regids, used by (rpt), vectors, pairs).
    pub const fn offset(self, k: u8) -> Reg {
        Reg(self.0.wrapping_add(k))
    }
}

/// Element/operand types (XML ir3-common.xml `#type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    F16 = 0,
    F32 = 1,
    U16 = 2,
    U32 = 3,
    S16 = 4,
    S32 = 5,
    U8 = 6,
    /// Displayed `u8_32` in the XML's `#type` enum (an 8-bit value in a 32-bit register).
    U8_32 = 7,
}

impl Type {
    pub(crate) const fn from_bits(v: u64) -> Type {
        match v & 7 {
            0 => Type::F16,
            1 => Type::F32,
            2 => Type::U16,
            3 => Type::U32,
            4 => Type::S16,
            5 => Type::S32,
            6 => Type::U8,
            _ => Type::U8_32,
        }
    }
    /// Name as Mesa prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Type::F16 => "f16",
            Type::F32 => "f32",
            Type::U16 => "u16",
            Type::U32 => "u32",
            Type::S16 => "s16",
            Type::S32 => "s32",
            Type::U8 => "u8",
            Type::U8_32 => "u8_32",
        }
    }
    /// Whether a register of this type is a half register (XML `#type-half`).
    pub const fn is_half(self) -> bool {
        matches!(self, Type::F16 | Type::U16 | Type::S16 | Type::U8)
    }
    /// Bytes per element in memory.
    pub const fn mem_bytes(self) -> u32 {
        match self {
            Type::F16 | Type::U16 | Type::S16 => 2,
            Type::U8 | Type::U8_32 => 1,
            _ => 4,
        }
    }
}

/// Comparison condition (XML `#cond`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Cond {
    pub const fn name(self) -> &'static str {
        match self {
            Cond::Lt => "lt",
            Cond::Le => "le",
            Cond::Gt => "gt",
            Cond::Ge => "ge",
            Cond::Eq => "eq",
            Cond::Ne => "ne",
        }
    }
}

/// A source operand value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Src {
    /// A GPR (or p0/a0); `last` is the (last) hint.
    Reg { reg: Reg, last: bool },
    /// `cN.c`: const word `4·N + c`.
    Const(u16),
    /// `r<a0.x + off>`.
    RelReg(i16),
    /// `c<a0.x + off>`.
    RelConst(i16),
    /// An integer immediate (cat2 11-bit signed, cat3 12-bit unsigned, cat6 8-bit unsigned).
    Imm(i32),
    /// A cat1 32-bit immediate: the raw bits, read by the source type.
    Imm32(u32),
    /// An entry of the float lookup table (`#flut`), index 0..=11 (larger values decode to an error).
    Flut(u8),
}

/// A source with its modifiers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operand {
    pub src: Src,
    /// Half register / half constant (`h` prefix); for `Flut`, the fp16 form.
    pub half: bool,
    /// (neg): float negate, integer negate or bitwise not depending on the opcode.
    pub neg: bool,
    /// (abs).
    pub abs: bool,
    /// (r): the source advances with (rptN).
    pub r: bool,
}

impl Operand {
    pub(crate) const fn reg(reg: Reg, half: bool) -> Operand {
        Operand { src: Src::Reg { reg, last: false }, half, neg: false, abs: false, r: false }
    }
}

/// The float lookup table for `#flut` immediates (XML ir3-common.xml `#mulitsrc-immed-flut`).
pub const FLUT: [f32; 12] = [
    0.0,
    0.5,
    1.0,
    2.0,
    core::f32::consts::E,
    core::f32::consts::PI,
    core::f32::consts::FRAC_1_PI,
    core::f32::consts::LN_2, // 1/log2(e)
    core::f32::consts::LOG2_E,
    core::f32::consts::LOG10_2, // 1/log2(10)
    core::f32::consts::LOG2_10,
    4.0,
];

/// Flags shared by most categories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// (sy): wait for sy producers.
    pub sy: bool,
    /// (ss): wait for ss producers.
    pub ss: bool,
    /// (jp): a reconvergence point.
    pub jp: bool,
    /// (ul) (cat1-4).
    pub ul: bool,
    /// (sat) (cat2-4).
    pub sat: bool,
    /// (ei) (cat2): on add.u/add.s a halving add.
    pub ei: bool,
    /// (eq) (cat0).
    pub eq: bool,
    /// (rptN): the instruction runs `repeat + 1` times.
    pub repeat: u8,
    /// (nopN) (cat2/cat3 with repeat 0): idle slots after the instruction.
    pub nop: u8,
}

/// Cat0 (flow control) opcodes (XML ir3-cat0.xml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat0Op {
    Nop,
    End,
    Ret,
    Emit,
    Cut,
    Chmask,
    Chsh,
    FlowRev,
    Shpe,
    Predt,
    Predf,
    Prede,
    Kill,
    Jump,
    Call,
    Bkt,
    Getlast,
    Getone,
    Shps,
    Brac,
    Brax,
    Br,
    Bany,
    Ball,
    Brao,
    Braa,
}

impl Cat0Op {
    pub const fn name(self) -> &'static str {
        match self {
            Cat0Op::Nop => "nop",
            Cat0Op::End => "end",
            Cat0Op::Ret => "ret",
            Cat0Op::Emit => "emit",
            Cat0Op::Cut => "cut",
            Cat0Op::Chmask => "chmask",
            Cat0Op::Chsh => "chsh",
            Cat0Op::FlowRev => "flow_rev",
            Cat0Op::Shpe => "shpe",
            Cat0Op::Predt => "predt",
            Cat0Op::Predf => "predf",
            Cat0Op::Prede => "prede",
            Cat0Op::Kill => "kill",
            Cat0Op::Jump => "jump",
            Cat0Op::Call => "call",
            Cat0Op::Bkt => "bkt",
            Cat0Op::Getlast => "getlast",
            Cat0Op::Getone => "getone",
            Cat0Op::Shps => "shps",
            Cat0Op::Brac => "brac",
            Cat0Op::Brax => "brax",
            Cat0Op::Br => "br",
            Cat0Op::Bany => "bany",
            Cat0Op::Ball => "ball",
            Cat0Op::Brao => "brao",
            Cat0Op::Braa => "braa",
        }
    }
    /// Whether IMMED is a branch target (signed offset in instructions from this one).
    pub const fn has_target(self) -> bool {
        matches!(
            self,
            Cat0Op::Jump
                | Cat0Op::Call
                | Cat0Op::Bkt
                | Cat0Op::Getlast
                | Cat0Op::Getone
                | Cat0Op::Shps
                | Cat0Op::Brac
                | Cat0Op::Brax
                | Cat0Op::Br
                | Cat0Op::Bany
                | Cat0Op::Ball
                | Cat0Op::Brao
                | Cat0Op::Braa
        )
    }
}

/// A cat0 instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cat0 {
    pub op: Cat0Op,
    /// IMMED (bits 0..31): branch offset in instructions for branch forms.
    pub immed: i32,
    /// First predicate source: invert (bit 52) and component (53..54).
    pub inv1: bool,
    pub comp1: u8,
    /// Second predicate source (brao/braa): invert (45), component (46..47).
    pub inv2: bool,
    pub comp2: u8,
    /// brac INDEX (32..36); getlast W (52..54).
    pub index: u8,
}

/// Cat1 forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat1Op {
    /// mov (same types) or cov (different types); `mova`/`mova1` are the a0.x / a1.x forms.
    Mov,
    Mova,
    Mova1,
    Swz,
    Gat,
    Sct,
    Movmsk,
}

/// A cat1 destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dst {
    Reg(Reg),
    /// `r<a0.x + off>` (DST_REL).
    Rel(u8),
}

/// A cat1 instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cat1 {
    pub op: Cat1Op,
    pub src_type: Type,
    pub dst_type: Type,
    /// ROUND (55..56): 0 default (round toward zero for float→int), 1 even, 2 +inf, 3 -inf.
    pub round: u8,
    pub dst: Dst,
    /// mov/cov: `srcs[0]`; swz: dst0,dst1 ← src0,src1; gat: 4 sources; sct: 1 source.
    pub src: Operand,
    /// Extra registers of swz/gat/sct: swz [src1, dst1], gat [src1, src2, src3], sct [dst1, dst2, dst3].
    pub extra: [Reg; 3],
}

/// Cat2 opcodes (XML ir3-cat2.xml), numbered as bits 53..58.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat2Op {
    AddF,
    MinF,
    MaxF,
    MulF,
    SignF,
    CmpsF,
    AbsnegF,
    CmpvF,
    FloorF,
    CeilF,
    RndneF,
    RndazF,
    TruncF,
    AddU,
    AddS,
    SubU,
    SubS,
    CmpsU,
    CmpsS,
    MinU,
    MinS,
    MaxU,
    MaxS,
    AbsnegS,
    AndB,
    OrB,
    NotB,
    XorB,
    CmpvU,
    CmpvS,
    MulU24,
    MulS24,
    MullU,
    BfrevB,
    ClzS,
    ClzB,
    ShlB,
    ShrB,
    AshrB,
    BaryF,
    FlatB,
    MgenB,
    GetbitB,
    Setrm,
    CbitsB,
    Shb,
    Msad,
}

impl Cat2Op {
    pub const fn name(self) -> &'static str {
        use Cat2Op::*;
        match self {
            AddF => "add.f",
            MinF => "min.f",
            MaxF => "max.f",
            MulF => "mul.f",
            SignF => "sign.f",
            CmpsF => "cmps.f",
            AbsnegF => "absneg.f",
            CmpvF => "cmpv.f",
            FloorF => "floor.f",
            CeilF => "ceil.f",
            RndneF => "rndne.f",
            RndazF => "rndaz.f",
            TruncF => "trunc.f",
            AddU => "add.u",
            AddS => "add.s",
            SubU => "sub.u",
            SubS => "sub.s",
            CmpsU => "cmps.u",
            CmpsS => "cmps.s",
            MinU => "min.u",
            MinS => "min.s",
            MaxU => "max.u",
            MaxS => "max.s",
            AbsnegS => "absneg.s",
            AndB => "and.b",
            OrB => "or.b",
            NotB => "not.b",
            XorB => "xor.b",
            CmpvU => "cmpv.u",
            CmpvS => "cmpv.s",
            MulU24 => "mul.u24",
            MulS24 => "mul.s24",
            MullU => "mull.u",
            BfrevB => "bfrev.b",
            ClzS => "clz.s",
            ClzB => "clz.b",
            ShlB => "shl.b",
            ShrB => "shr.b",
            AshrB => "ashr.b",
            BaryF => "bary.f",
            FlatB => "flat.b",
            MgenB => "mgen.b",
            GetbitB => "getbit.b",
            Setrm => "setrm",
            CbitsB => "cbits.b",
            Shb => "shb",
            Msad => "msad",
        }
    }
    /// One-source forms (`#instruction-cat2-1src`).
    pub const fn is_1src(self) -> bool {
        use Cat2Op::*;
        matches!(
            self,
            SignF
                | AbsnegF
                | FloorF
                | CeilF
                | RndneF
                | RndazF
                | TruncF
                | AbsnegS
                | NotB
                | BfrevB
                | ClzS
                | ClzB
                | Setrm
                | CbitsB
        )
    }
    /// Forms with a COND field.
    pub const fn has_cond(self) -> bool {
        use Cat2Op::*;
        matches!(self, CmpsF | CmpvF | CmpsU | CmpsS | CmpvU | CmpvS)
    }
}

/// A cat2 instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cat2 {
    pub op: Cat2Op,
    pub cond: Option<Cond>,
    /// FULL (bit 52): full-precision sources.
    pub full: bool,
    /// The destination is a half register (XML `#dest-half`).
    pub dst_half: bool,
    pub dst: Reg,
    pub src1: Operand,
    /// Absent for one-source forms.
    pub src2: Option<Operand>,
}

/// Cat3 opcodes (XML ir3-cat3.xml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat3Op {
    MadU16,
    MadshU16,
    MadS16,
    MadshM16,
    MadU24,
    MadS24,
    MadF16,
    MadF32,
    SelB16,
    SelB32,
    SelS16,
    SelS32,
    SelF16,
    SelF32,
    SadS16,
    SadS32,
    Shrm,
    Shlm,
    Shrg,
    Shlg,
    Andg,
}

impl Cat3Op {
    pub const fn name(self) -> &'static str {
        use Cat3Op::*;
        match self {
            MadU16 => "mad.u16",
            MadshU16 => "madsh.u16",
            MadS16 => "mad.s16",
            MadshM16 => "madsh.m16",
            MadU24 => "mad.u24",
            MadS24 => "mad.s24",
            MadF16 => "mad.f16",
            MadF32 => "mad.f32",
            SelB16 => "sel.b16",
            SelB32 => "sel.b32",
            SelS16 => "sel.s16",
            SelS32 => "sel.s32",
            SelF16 => "sel.f16",
            SelF32 => "sel.f32",
            SadS16 => "sad.s16",
            SadS32 => "sad.s32",
            Shrm => "shrm",
            Shlm => "shlm",
            Shrg => "shrg",
            Shlg => "shlg",
            Andg => "andg",
        }
    }
    /// The a6xx "alt" group (bit 13 = 1): immediates allowed in SRC1/SRC3, FULL from bit 42.
    pub const fn is_alt(self) -> bool {
        matches!(self, Cat3Op::Shrm | Cat3Op::Shlm | Cat3Op::Shrg | Cat3Op::Shlg | Cat3Op::Andg)
    }
}

/// A cat3 instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cat3 {
    pub op: Cat3Op,
    pub full: bool,
    pub dst_half: bool,
    pub dst: Reg,
    pub srcs: [Operand; 3],
}

/// Cat4 (SFU) opcodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat4Op {
    Rcp,
    Rsq,
    Log2,
    Exp2,
    Sin,
    Cos,
    Sqrt,
    Hrsq,
    Hlog2,
    Hexp2,
}

impl Cat4Op {
    pub const fn name(self) -> &'static str {
        match self {
            Cat4Op::Rcp => "rcp",
            Cat4Op::Rsq => "rsq",
            Cat4Op::Log2 => "log2",
            Cat4Op::Exp2 => "exp2",
            Cat4Op::Sin => "sin",
            Cat4Op::Cos => "cos",
            Cat4Op::Sqrt => "sqrt",
            Cat4Op::Hrsq => "hrsq",
            Cat4Op::Hlog2 => "hlog2",
            Cat4Op::Hexp2 => "hexp2",
        }
    }
}

/// A cat4 instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cat4 {
    pub op: Cat4Op,
    pub full: bool,
    pub dst_half: bool,
    pub dst: Reg,
    pub src: Operand,
}

/// Atomic operations (cat6 opc 16..26).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Sub,
    Xchg,
    Inc,
    Dec,
    Cmpxchg,
    Min,
    Max,
    And,
    Or,
    Xor,
}

impl AtomicOp {
    pub const fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Sub => "sub",
            AtomicOp::Xchg => "xchg",
            AtomicOp::Inc => "inc",
            AtomicOp::Dec => "dec",
            AtomicOp::Cmpxchg => "cmpxchg",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
        }
    }
}

/// A cat6 source that is a GPR or an 8-bit immediate (`#cat6-src`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat6Src {
    Reg(Reg),
    Imm(u8),
}

/// Memory spaces of the a3xx-style load/store forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// `l[]` shared (local) memory of the work-group (ldl/stl).
    Local,
    /// `l[]` through ldlw/stlw (same memory, different name).
    LocalW,
    /// `p[]` per-fiber private memory.
    Private,
}

/// Cat6 (memory) instructions modelled by the interpreter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cat6 {
    /// `ldg.T dst, g[src+off], size`: src, src+1 hold the 64-bit address.
    Ldg { ty: Type, dst: Reg, addr: Reg, off: i32, size: u8 },
    /// `ldg.a` (a6xx form): address = src1 pair + (src2 << (shift+2)) + (off << 2).
    LdgA { ty: Type, dst: Reg, addr: Reg, index: Reg, shift: u8, off: u8, size: u8 },
    /// `stg.T g[dst+off], src, size`.
    Stg { ty: Type, addr: Reg, off: i32, src: Reg, size: u8 },
    /// `stg.a` (a6xx form).
    StgA { ty: Type, addr: Reg, index: Reg, shift: u8, off: u8, src: Reg, size: u8 },
    /// ldl / ldlw / ldp: `dst, l[src+off], size` (32-bit byte address register).
    Ld { space: Space, ty: Type, dst: Reg, addr: Reg, off: i32, size: u8 },
    /// stl / stlw / stp: `l[dst+off], src, size`.
    St { space: Space, ty: Type, addr: Reg, off: i32, src: Reg, size: u8 },
    /// Local-memory atomics `atomic.OP.typed.Nd.T.S.l dst, l[src1], src2`.
    AtomicL { op: AtomicOp, ty: Type, typed: bool, d: u8, type_size: u8, dst: Reg, src1: Cat6Src, src2: Cat6Src },
    /// Global atomics `atomic.g.OP... dst, src1 (address pair), src2 (value; cmpxchg: value, compare)`.
    AtomicG { op: AtomicOp, ty: Type, typed: bool, d: u8, type_size: u8, dst: Reg, src1: Cat6Src, src2: Cat6Src },
    /// `shfl.MODE.T dst, src1, src2`.
    Shfl { mode: u8, ty: Type, dst: Reg, src1: Reg, src2: Cat6Src },
    /// getfiberid / getwid / getspid `.T dst`.
    GetId { which: GetId, ty: Type, dst: Reg },
    /// `ldib.b` / `stib.b` with an immediate IBO index (MODE 0, not bindless):
    /// `{op}.{typed}.{d}d.{ty}.{type_size}.imm {val}, {coord}{+offset}, {ibo}`. `val` is the
    /// first of `type_size` value registers (the destination of ldib), `coord` the first of `d`
    /// coordinate registers.
    Ibo { op: IboOp, typed: bool, d: u8, ty: Type, type_size: u8, val: Reg, coord: Reg, ibo: u8, offset: Option<u8> },
}

/// The id returned by getfiberid / getwid / getspid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetId {
    Fiber,
    Wave,
    Sp,
}

/// Cat5 (texture) opcodes modelled by the interpreter (XML ir3-cat5.xml, OPC bits 54..58).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat5Op {
    /// `isam`: fetch at integer texel coordinates (opc 0).
    Isam,
    /// `isaml`: `isam` with an explicit level of detail in SRC2 (opc 1).
    Isaml,
    /// `sam`: sample at float coordinates (opc 3).
    Sam,
}

impl Cat5Op {
    pub const fn name(self) -> &'static str {
        match self {
            Cat5Op::Isam => "isam",
            Cat5Op::Isaml => "isaml",
            Cat5Op::Sam => "sam",
        }
    }
    /// Register sources (XML `NUM_SRC`): coordinates, and for `isaml` the lod.
    pub const fn num_src(self) -> u8 {
        match self {
            Cat5Op::Isaml => 2,
            _ => 1,
        }
    }
}

/// A cat5 texture fetch in the "normal" (not s2en, not bindless) form (`#instruction-cat5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cat5 {
    pub op: Cat5Op,
    /// Result type (TYPE, bits 44..46); half types write half registers.
    pub ty: Type,
    /// Components written (WRMASK, bits 40..43): component `c` goes to `dst + c`.
    pub wrmask: u8,
    pub dst: Reg,
    /// FULL (bit 0): the sources are full registers.
    pub full: bool,
    /// SRC1 (bits 1..8): the first coordinate register (the others follow it).
    pub src1: Reg,
    /// SRC2 (bits 9..16): the lod of `isaml`, or the offset register with `.o`.
    pub src2: Reg,
    /// SAMP (bits 21..24) and TEX (bits 25..31).
    pub samp: u8,
    pub tex: u8,
    /// .3d (48), .a (49), .o (52).
    pub d3: bool,
    pub array: bool,
    pub offset: bool,
    /// Bit 50: `.v` on isam, `.s` on the others.
    pub sv: bool,
    /// Bit 53: isam's SRC2_IMM_OFFSET (SRC2 is an immediate offset), `.p` on the others.
    pub b53: bool,
    /// Bit 18 of isam (`bool_inv`, printed `.1d` when clear).
    pub b18: bool,
}

/// Which image instruction of the a6xx IBO group (`#instruction-cat6-a6xx-ibo-load-store`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IboOp {
    /// `ldib.b`: load from an image.
    Load,
    /// `stib.b`: store to an image.
    Store,
}

/// Cat7 instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat7Op {
    Bar,
    Fence,
    Sleep,
    Icinv,
    Dccln,
    Dcinv,
    Dcflu,
}

impl Cat7Op {
    pub const fn name(self) -> &'static str {
        match self {
            Cat7Op::Bar => "bar",
            Cat7Op::Fence => "fence",
            Cat7Op::Sleep => "sleep",
            Cat7Op::Icinv => "icinv",
            Cat7Op::Dccln => "dccln",
            Cat7Op::Dcinv => "dcinv",
            Cat7Op::Dcflu => "dcflu",
        }
    }
}

/// A cat7 instruction: `bar`/`fence` with .g .l .r .w, `sleep` (.s/.l), cache ops with .shr/.all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cat7 {
    pub op: Cat7Op,
    pub g: bool,
    pub l: bool,
    pub r: bool,
    pub w: bool,
    /// sleep: long; dccln/dcinv/dcflu: `.all` (else `.shr`).
    pub bit51: bool,
}

/// What an instruction does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Body {
    Cat0(Cat0),
    Cat1(Cat1),
    Cat2(Cat2),
    Cat3(Cat3),
    Cat4(Cat4),
    Cat5(Cat5),
    Cat6(Cat6),
    Cat7(Cat7),
    /// An encoding the XML names but this crate does not model (cat5 ops other than
    /// isam/isaml/sam and their s2en/bindless forms, bindless or register-indexed IBO cat6 forms, const-file stores, `dp4acc`, `wmm`...): decoded to its name only. The
    /// disassembler prints the name; the interpreter refuses it.
    Unsupported(&'static str),
}

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instr {
    /// The raw 64-bit word.
    pub word: u64,
    pub flags: Flags,
    pub body: Body,
}

impl Instr {
    /// Category 0..7 (bits 61..63).
    pub const fn category(&self) -> u8 {
        (self.word >> 61) as u8
    }
    /// Branch target index for branch forms, given this instruction's index.
    pub fn branch_target(&self, index: usize) -> Option<i64> {
        match self.body {
            Body::Cat0(c) if c.op.has_target() => Some(index as i64 + c.immed as i64),
            _ => None,
        }
    }
}

const ATOMIC_L: [&str; 11] = [
    "atomic.add",
    "atomic.sub",
    "atomic.xchg",
    "atomic.inc",
    "atomic.dec",
    "atomic.cmpxchg",
    "atomic.min",
    "atomic.max",
    "atomic.and",
    "atomic.or",
    "atomic.xor",
];
const ATOMIC_G: [&str; 11] = [
    "atomic.g.add",
    "atomic.g.sub",
    "atomic.g.xchg",
    "atomic.g.inc",
    "atomic.g.dec",
    "atomic.g.cmpxchg",
    "atomic.g.min",
    "atomic.g.max",
    "atomic.g.and",
    "atomic.g.or",
    "atomic.g.xor",
];

impl Instr {
    /// The instruction's name: the isaspec bitset name (`add.f`, `ldg`, `atomic.g.add`,
    /// `bar`...), except cat1 moves, named `mov`, `cov`, `mova` or `mova1` as printed.
    pub fn mnemonic(&self) -> &'static str {
        match &self.body {
            Body::Cat0(c) => c.op.name(),
            Body::Cat1(c) => match c.op {
                Cat1Op::Mov if c.src_type == c.dst_type => "mov",
                Cat1Op::Mov => "cov",
                Cat1Op::Mova => "mova",
                Cat1Op::Mova1 => "mova1",
                Cat1Op::Swz => "swz",
                Cat1Op::Gat => "gat",
                Cat1Op::Sct => "sct",
                Cat1Op::Movmsk => "movmsk",
            },
            Body::Cat2(c) => c.op.name(),
            Body::Cat3(c) => c.op.name(),
            Body::Cat4(c) => c.op.name(),
            Body::Cat5(c) => c.op.name(),
            Body::Cat6(c) => match c {
                Cat6::Ldg { .. } => "ldg",
                Cat6::LdgA { .. } => "ldg.a",
                Cat6::Stg { .. } => "stg",
                Cat6::StgA { .. } => "stg.a",
                Cat6::Ld { space: Space::Local, .. } => "ldl",
                Cat6::Ld { space: Space::LocalW, .. } => "ldlw",
                Cat6::Ld { space: Space::Private, .. } => "ldp",
                Cat6::St { space: Space::Local, .. } => "stl",
                Cat6::St { space: Space::LocalW, .. } => "stlw",
                Cat6::St { space: Space::Private, .. } => "stp",
                Cat6::AtomicL { op, .. } => ATOMIC_L[*op as usize],
                Cat6::AtomicG { op, .. } => ATOMIC_G[*op as usize],
                Cat6::Shfl { .. } => "shfl",
                Cat6::GetId { which: GetId::Fiber, .. } => "getfiberid",
                Cat6::GetId { which: GetId::Wave, .. } => "getwid",
                Cat6::GetId { which: GetId::Sp, .. } => "getspid",
                Cat6::Ibo { op: IboOp::Load, .. } => "ldib.b",
                Cat6::Ibo { op: IboOp::Store, .. } => "stib.b",
            },
            Body::Cat7(c) => c.op.name(),
            Body::Unsupported(name) => name,
        }
    }
}
