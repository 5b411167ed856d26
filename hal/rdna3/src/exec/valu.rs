//! The vector ALU: which lane function each mnemonic is (resolved once, at load), its operand
//! types, and the lane functions themselves — the RDNA3 ISA guide's (Feb 2023) chapter 16
//! ("Instructions") pseudo-code, per lane.

use super::divide;
use super::fp::{f2h, h2f};

/// An operand's type: its width and whether the float modifiers (abs, neg) and the float inline
/// constants apply as floats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum T {
    /// 16-bit integer.
    B16,
    /// binary16.
    F16,
    /// 32-bit integer.
    B32,
    /// binary32.
    F32,
    /// 64-bit integer.
    B64,
    /// binary64.
    F64,
}

impl T {
    pub fn bits(self) -> u32 {
        match self {
            T::B16 | T::F16 => 16,
            T::B32 | T::F32 => 32,
            T::B64 | T::F64 => 64,
        }
    }
    pub fn float(self) -> bool {
        matches!(self, T::F16 | T::F32 | T::F64)
    }
}

/// A compare's condition (`v_cmp_<cond>_<type>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    F,
    Lt,
    Eq,
    Le,
    Gt,
    Lg,
    Ge,
    O,
    U,
    Nge,
    Nlg,
    Ngt,
    Nle,
    Neq,
    Nlt,
    T,
    Ne,
    Class,
}

/// One lane function. `a`, `b`, `c` are the sources (raw bits, modifiers applied), `m` the lane's
/// bit of a mask source (carry-in, cndmask's selector).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L {
    Mov,
    Cndmask,
    // f32
    AddF32,
    SubF32,
    SubrevF32,
    MulF32,
    MulDx9F32,
    FmaF32,
    FmaDx9F32,
    FmaakF32,
    FmamkF32,
    MaxF32,
    MinF32,
    Max3F32,
    Min3F32,
    Med3F32,
    MaxminF32,
    MinmaxF32,
    LdexpF32,
    ExpF32,
    LogF32,
    RcpF32,
    RsqF32,
    SqrtF32,
    SinF32,
    CosF32,
    FloorF32,
    CeilF32,
    TruncF32,
    RndneF32,
    FractF32,
    FrexpMantF32,
    FrexpExpF32,
    CvtF32I32,
    CvtF32U32,
    CvtI32F32,
    CvtU32F32,
    CvtF16F32,
    CvtF32F16,
    CvtF32Ubyte(u8),
    CvtF64F32,
    CvtF32F64,
    CvtI32F64,
    CvtU32F64,
    CvtF64I32,
    CvtF64U32,
    Dot2F32F16,
    // f16
    AddF16,
    SubF16,
    SubrevF16,
    MulF16,
    FmaF16,
    FmaakF16,
    FmamkF16,
    MaxF16,
    MinF16,
    Max3F16,
    Min3F16,
    MaxminF16,
    MinmaxF16,
    LdexpF16,
    ExpF16,
    LogF16,
    RcpF16,
    RsqF16,
    SqrtF16,
    SinF16,
    CosF16,
    FloorF16,
    CeilF16,
    TruncF16,
    RndneF16,
    FractF16,
    CvtI16F16,
    CvtU16F16,
    CvtF16I16,
    CvtF16U16,
    CvtI32I16,
    CvtU32U16,
    PackB32F16,
    // f64
    AddF64,
    MulF64,
    FmaF64,
    MaxF64,
    MinF64,
    LdexpF64,
    RcpF64,
    RsqF64,
    SqrtF64,
    FloorF64,
    CeilF64,
    TruncF64,
    RndneF64,
    FractF64,
    FrexpMantF64,
    FrexpExpF64,
    // division: V_DIV_SCALE (VCC out), V_DIV_FMAS (VCC in), V_DIV_FIXUP (`divide`)
    DivScaleF32,
    DivScaleF64,
    DivFmasF32,
    DivFmasF64,
    DivFixupF16,
    DivFixupF32,
    DivFixupF64,
    // 32-bit integer
    AddU32,
    SubU32,
    SubrevU32,
    AddCo,
    SubCo,
    SubrevCo,
    AddCoCi,
    SubCoCi,
    SubrevCoCi,
    MulLoU32,
    MulHiU32,
    MulHiI32,
    MulU32U24,
    MulI32I24,
    MulHiU32U24,
    MulHiI32I24,
    MadU32U24,
    MadI32I24,
    MadU64U32,
    MadI64I32,
    LshlB32,
    LshrB32,
    AshrI32,
    LshlB64,
    LshrB64,
    AshrI64,
    LshlAdd,
    AddLshl,
    LshlOr,
    AndOr,
    Or3,
    Xor3,
    Add3,
    Xad,
    And,
    Or,
    Xor,
    Xnor,
    Not,
    Bfrev,
    Bcnt,
    Clz,
    Ctz,
    Cls,
    BfeU32,
    BfeI32,
    Bfi,
    Bfm,
    Alignbit,
    Alignbyte,
    MaxI32,
    MinI32,
    MaxU32,
    MinU32,
    Max3I32,
    Min3I32,
    Max3U32,
    Min3U32,
    Med3I32,
    Med3U32,
    MaxminU32,
    MinmaxU32,
    MaxminI32,
    MinmaxI32,
    Perm,
    // 16-bit integer
    AddU16,
    SubU16,
    AddI16,
    SubI16,
    MulLoU16,
    MadU16,
    MadI16,
    LshlB16,
    LshrB16,
    AshrI16,
    MaxU16,
    MinU16,
    MaxI16,
    MinI16,
    Max3U16,
    Min3U16,
    Max3I16,
    Min3I16,
    Med3U16,
    Med3I16,
    // more conversions, 16-bit and packed ops
    CvtNearestI32F32,
    CvtFloorI32F32,
    CvtOffF32I4,
    NotB16,
    AndB16,
    OrB16,
    XorB16,
    FrexpMantF16,
    FrexpExpF16,
    SatPkU8I16,
    CvtNormI16F16,
    CvtNormU16F16,
    CvtPkNormI16F16,
    CvtPkNormU16F16,
    CvtPkNormI16F32,
    CvtPkNormU16F32,
    CvtPkRtzF16F32,
    CvtPkU8F32,
    CvtPkI16F32,
    CvtPkU16F32,
    CvtPkU16U32,
    CvtPkI16I32,
    Med3F16,
    MadU32U16,
    MadI32I16,
    AddI32,
    SubI32,
    SadU8,
    SadHiU8,
    SadU16,
    SadU32,
    MsadU8,
    LerpU8,
    QsadPkU16U8,
    MqsadPkU16U8,
    Dot2F16F16,
    Dot2Bf16Bf16,
    PkFmacF16,
    TrigPreopF64,
    CubeId,
    CubeSc,
    CubeTc,
    CubeMa,
    MullitF32,
    // compares: the result bit
    Cmp(Cond),
}

/// How an op reads and writes: the lane function, the sources' and destination's types.
#[derive(Clone, Copy, Debug)]
pub struct Sig {
    pub l: L,
    pub src: [T; 3],
    pub dst: T,
    /// Sources read (0–3; fmac reads its destination as the third).
    pub n: u8,
    /// The op also accumulates into its destination (fmac: `c` is the old destination).
    pub acc: bool,
    /// A mask source (cndmask's selector, a carry-in).
    pub mask_in: bool,
    /// A carry/borrow-out mask destination.
    pub mask_out: bool,
}

const fn s(l: L, n: u8, src: T, dst: T) -> Sig {
    Sig { l, src: [src; 3], dst, n, acc: false, mask_in: false, mask_out: false }
}

/// Whether `l` takes its mask source from VCC in VOP3 too (`v_div_fmas`; `v_cndmask` and the
/// carry-ins take src2's SGPRs there).
pub fn mask_in_vcc(l: L) -> bool {
    matches!(l, L::DivFmasF32 | L::DivFmasF64)
}

/// A compare's condition and type from its mnemonic (`v_cmp_lt_f32_e32`, `v_cmpx_class_f16_e64`).
pub fn compare(name: &str) -> Option<(Cond, T, bool)> {
    let base = name.strip_suffix("_e32").or_else(|| name.strip_suffix("_e64")).unwrap_or(name);
    let (x, rest) =
        if let Some(r) = base.strip_prefix("v_cmpx_") { (true, r) } else { (false, base.strip_prefix("v_cmp_")?) };
    let (cond, ty) = rest.rsplit_once('_')?;
    let t = match ty {
        "f16" => T::F16,
        "f32" => T::F32,
        "f64" => T::F64,
        "i16" | "u16" => T::B16,
        "i32" | "u32" => T::B32,
        "i64" | "u64" => T::B64,
        _ => return None,
    };
    let c = match cond {
        "f" => Cond::F,
        "lt" => Cond::Lt,
        "eq" => Cond::Eq,
        "le" => Cond::Le,
        "gt" => Cond::Gt,
        "lg" => Cond::Lg,
        "ge" => Cond::Ge,
        "o" => Cond::O,
        "u" => Cond::U,
        "nge" => Cond::Nge,
        "nlg" => Cond::Nlg,
        "ngt" => Cond::Ngt,
        "nle" => Cond::Nle,
        "neq" => Cond::Neq,
        "nlt" => Cond::Nlt,
        "t" => Cond::T,
        "ne" => Cond::Ne,
        "class" => Cond::Class,
        _ => return None,
    };
    Some((c, t, x))
}

/// Whether a compare of `name` compares as signed integers.
pub fn compare_signed(name: &str) -> bool {
    name.contains("_i16") || name.contains("_i32") || name.contains("_i64")
}

/// The signature of a VALU mnemonic (VOP1/VOP2/VOP3/VOP3P/VOPD; `_e32`/`_e64` and `v_dual_`
/// stripped), or `None`: an op this interpreter does not execute.
pub fn sig(name: &str) -> Option<Sig> {
    use L::*;
    use T::*;
    let base = name.strip_suffix("_e32").or_else(|| name.strip_suffix("_e64")).unwrap_or(name);
    let owned;
    let base = if let Some(r) = base.strip_prefix("v_dual_") {
        owned = ConcatV(r);
        owned.as_str()
    } else {
        base
    };
    let mut g = match base {
        "v_mov_b32" => s(Mov, 1, B32, B32),
        "v_cndmask_b32" => Sig { mask_in: true, ..s(Cndmask, 2, F32, B32) },
        "v_cndmask_b16" => Sig { mask_in: true, ..s(Cndmask, 2, F16, B16) },
        "v_add_f32" => s(AddF32, 2, F32, F32),
        "v_sub_f32" => s(SubF32, 2, F32, F32),
        "v_subrev_f32" => s(SubrevF32, 2, F32, F32),
        "v_mul_f32" => s(MulF32, 2, F32, F32),
        "v_mul_dx9_zero_f32" => s(MulDx9F32, 2, F32, F32),
        "v_fma_f32" => s(FmaF32, 3, F32, F32),
        "v_fma_dx9_zero_f32" => s(FmaDx9F32, 3, F32, F32),
        "v_fmac_f32" => Sig { acc: true, ..s(FmaF32, 2, F32, F32) },
        "v_fmac_dx9_zero_f32" => Sig { acc: true, ..s(FmaDx9F32, 2, F32, F32) },
        "v_fmaak_f32" => s(FmaakF32, 3, F32, F32),
        "v_fmamk_f32" => s(FmamkF32, 3, F32, F32),
        "v_max_f32" => s(MaxF32, 2, F32, F32),
        "v_min_f32" => s(MinF32, 2, F32, F32),
        "v_max3_f32" => s(Max3F32, 3, F32, F32),
        "v_min3_f32" => s(Min3F32, 3, F32, F32),
        "v_med3_f32" => s(Med3F32, 3, F32, F32),
        "v_maxmin_f32" => s(MaxminF32, 3, F32, F32),
        "v_minmax_f32" => s(MinmaxF32, 3, F32, F32),
        "v_maxmin_f16" => s(MaxminF16, 3, F16, F16),
        "v_minmax_f16" => s(MinmaxF16, 3, F16, F16),
        "v_maxmin_u32" => s(MaxminU32, 3, B32, B32),
        "v_minmax_u32" => s(MinmaxU32, 3, B32, B32),
        "v_maxmin_i32" => s(MaxminI32, 3, B32, B32),
        "v_minmax_i32" => s(MinmaxI32, 3, B32, B32),
        "v_ldexp_f32" => Sig { src: [F32, B32, B32], ..s(LdexpF32, 2, F32, F32) },
        "v_exp_f32" => s(ExpF32, 1, F32, F32),
        "v_log_f32" => s(LogF32, 1, F32, F32),
        "v_rcp_f32" | "v_rcp_iflag_f32" => s(RcpF32, 1, F32, F32),
        "v_rsq_f32" => s(RsqF32, 1, F32, F32),
        "v_sqrt_f32" => s(SqrtF32, 1, F32, F32),
        "v_sin_f32" => s(SinF32, 1, F32, F32),
        "v_cos_f32" => s(CosF32, 1, F32, F32),
        "v_floor_f32" => s(FloorF32, 1, F32, F32),
        "v_ceil_f32" => s(CeilF32, 1, F32, F32),
        "v_trunc_f32" => s(TruncF32, 1, F32, F32),
        "v_rndne_f32" => s(RndneF32, 1, F32, F32),
        "v_fract_f32" => s(FractF32, 1, F32, F32),
        "v_frexp_mant_f32" => s(FrexpMantF32, 1, F32, F32),
        "v_frexp_exp_i32_f32" => s(FrexpExpF32, 1, F32, B32),
        "v_cvt_f32_i32" => s(CvtF32I32, 1, B32, F32),
        "v_cvt_f32_u32" => s(CvtF32U32, 1, B32, F32),
        "v_cvt_i32_f32" => s(CvtI32F32, 1, F32, B32),
        "v_cvt_u32_f32" => s(CvtU32F32, 1, F32, B32),
        "v_cvt_f16_f32" => s(CvtF16F32, 1, F32, F16),
        "v_cvt_f32_f16" => s(CvtF32F16, 1, F16, F32),
        "v_cvt_f32_ubyte0" => s(CvtF32Ubyte(0), 1, B32, F32),
        "v_cvt_f32_ubyte1" => s(CvtF32Ubyte(1), 1, B32, F32),
        "v_cvt_f32_ubyte2" => s(CvtF32Ubyte(2), 1, B32, F32),
        "v_cvt_f32_ubyte3" => s(CvtF32Ubyte(3), 1, B32, F32),
        "v_cvt_f64_f32" => s(CvtF64F32, 1, F32, F64),
        "v_cvt_f32_f64" => s(CvtF32F64, 1, F64, F32),
        "v_cvt_i32_f64" => s(CvtI32F64, 1, F64, B32),
        "v_cvt_u32_f64" => s(CvtU32F64, 1, F64, B32),
        "v_cvt_f64_i32" => s(CvtF64I32, 1, B32, F64),
        "v_cvt_f64_u32" => s(CvtF64U32, 1, B32, F64),
        "v_dot2acc_f32_f16" => Sig { acc: true, src: [B32, B32, F32], ..s(Dot2F32F16, 2, B32, F32) },
        "v_add_f16" => s(AddF16, 2, F16, F16),
        "v_sub_f16" => s(SubF16, 2, F16, F16),
        "v_subrev_f16" => s(SubrevF16, 2, F16, F16),
        "v_mul_f16" => s(MulF16, 2, F16, F16),
        "v_fma_f16" => s(FmaF16, 3, F16, F16),
        "v_fmac_f16" => Sig { acc: true, ..s(FmaF16, 2, F16, F16) },
        "v_fmaak_f16" => s(FmaakF16, 3, F16, F16),
        "v_fmamk_f16" => s(FmamkF16, 3, F16, F16),
        "v_max_f16" => s(MaxF16, 2, F16, F16),
        "v_min_f16" => s(MinF16, 2, F16, F16),
        "v_max3_f16" => s(Max3F16, 3, F16, F16),
        "v_min3_f16" => s(Min3F16, 3, F16, F16),
        "v_ldexp_f16" => Sig { src: [F16, B16, B16], ..s(LdexpF16, 2, F16, F16) },
        "v_exp_f16" => s(ExpF16, 1, F16, F16),
        "v_log_f16" => s(LogF16, 1, F16, F16),
        "v_rcp_f16" => s(RcpF16, 1, F16, F16),
        "v_rsq_f16" => s(RsqF16, 1, F16, F16),
        "v_sqrt_f16" => s(SqrtF16, 1, F16, F16),
        "v_sin_f16" => s(SinF16, 1, F16, F16),
        "v_cos_f16" => s(CosF16, 1, F16, F16),
        "v_floor_f16" => s(FloorF16, 1, F16, F16),
        "v_ceil_f16" => s(CeilF16, 1, F16, F16),
        "v_trunc_f16" => s(TruncF16, 1, F16, F16),
        "v_rndne_f16" => s(RndneF16, 1, F16, F16),
        "v_fract_f16" => s(FractF16, 1, F16, F16),
        "v_cvt_i16_f16" => s(CvtI16F16, 1, F16, B16),
        "v_cvt_u16_f16" => s(CvtU16F16, 1, F16, B16),
        "v_cvt_f16_i16" => s(CvtF16I16, 1, B16, F16),
        "v_cvt_f16_u16" => s(CvtF16U16, 1, B16, F16),
        "v_cvt_i32_i16" => s(CvtI32I16, 1, B16, B32),
        "v_cvt_u32_u16" => s(CvtU32U16, 1, B16, B32),
        "v_pack_b32_f16" => s(PackB32F16, 2, F16, B32),
        "v_add_f64" => s(AddF64, 2, F64, F64),
        "v_mul_f64" => s(MulF64, 2, F64, F64),
        "v_fma_f64" => s(FmaF64, 3, F64, F64),
        "v_max_f64" => s(MaxF64, 2, F64, F64),
        "v_min_f64" => s(MinF64, 2, F64, F64),
        "v_ldexp_f64" => Sig { src: [F64, B32, B32], ..s(LdexpF64, 2, F64, F64) },
        "v_rcp_f64" => s(RcpF64, 1, F64, F64),
        "v_rsq_f64" => s(RsqF64, 1, F64, F64),
        "v_sqrt_f64" => s(SqrtF64, 1, F64, F64),
        "v_floor_f64" => s(FloorF64, 1, F64, F64),
        "v_ceil_f64" => s(CeilF64, 1, F64, F64),
        "v_trunc_f64" => s(TruncF64, 1, F64, F64),
        "v_rndne_f64" => s(RndneF64, 1, F64, F64),
        "v_fract_f64" => s(FractF64, 1, F64, F64),
        "v_frexp_mant_f64" => s(FrexpMantF64, 1, F64, F64),
        "v_frexp_exp_i32_f64" => s(FrexpExpF64, 1, F64, B32),
        "v_div_scale_f32" => Sig { mask_out: true, ..s(DivScaleF32, 3, F32, F32) },
        "v_div_scale_f64" => Sig { mask_out: true, ..s(DivScaleF64, 3, F64, F64) },
        "v_div_fmas_f32" => Sig { mask_in: true, ..s(DivFmasF32, 3, F32, F32) },
        "v_div_fmas_f64" => Sig { mask_in: true, ..s(DivFmasF64, 3, F64, F64) },
        "v_div_fixup_f16" => s(DivFixupF16, 3, F16, F16),
        "v_div_fixup_f32" => s(DivFixupF32, 3, F32, F32),
        "v_div_fixup_f64" => s(DivFixupF64, 3, F64, F64),
        "v_add_nc_u32" => s(AddU32, 2, B32, B32),
        "v_sub_nc_u32" => s(SubU32, 2, B32, B32),
        "v_subrev_nc_u32" => s(SubrevU32, 2, B32, B32),
        "v_add_co_u32" => Sig { mask_out: true, ..s(AddCo, 2, B32, B32) },
        "v_sub_co_u32" => Sig { mask_out: true, ..s(SubCo, 2, B32, B32) },
        "v_subrev_co_u32" => Sig { mask_out: true, ..s(SubrevCo, 2, B32, B32) },
        "v_add_co_ci_u32" => Sig { mask_out: true, mask_in: true, ..s(AddCoCi, 2, B32, B32) },
        "v_sub_co_ci_u32" => Sig { mask_out: true, mask_in: true, ..s(SubCoCi, 2, B32, B32) },
        "v_subrev_co_ci_u32" => Sig { mask_out: true, mask_in: true, ..s(SubrevCoCi, 2, B32, B32) },
        "v_mul_lo_u32" => s(MulLoU32, 2, B32, B32),
        "v_mul_hi_u32" => s(MulHiU32, 2, B32, B32),
        "v_mul_hi_i32" => s(MulHiI32, 2, B32, B32),
        "v_mul_u32_u24" => s(MulU32U24, 2, B32, B32),
        "v_mul_i32_i24" => s(MulI32I24, 2, B32, B32),
        "v_mul_hi_u32_u24" => s(MulHiU32U24, 2, B32, B32),
        "v_mul_hi_i32_i24" => s(MulHiI32I24, 2, B32, B32),
        "v_mad_u32_u24" => s(MadU32U24, 3, B32, B32),
        "v_mad_i32_i24" => s(MadI32I24, 3, B32, B32),
        "v_mad_u64_u32" => Sig { src: [B32, B32, B64], mask_out: true, ..s(MadU64U32, 3, B32, B64) },
        "v_mad_i64_i32" => Sig { src: [B32, B32, B64], mask_out: true, ..s(MadI64I32, 3, B32, B64) },
        "v_lshlrev_b32" => s(LshlB32, 2, B32, B32),
        "v_lshrrev_b32" => s(LshrB32, 2, B32, B32),
        "v_ashrrev_i32" => s(AshrI32, 2, B32, B32),
        "v_lshlrev_b64" => Sig { src: [B32, B64, B64], ..s(LshlB64, 2, B64, B64) },
        "v_lshrrev_b64" => Sig { src: [B32, B64, B64], ..s(LshrB64, 2, B64, B64) },
        "v_ashrrev_i64" => Sig { src: [B32, B64, B64], ..s(AshrI64, 2, B64, B64) },
        "v_lshl_add_u32" => s(LshlAdd, 3, B32, B32),
        "v_add_lshl_u32" => s(AddLshl, 3, B32, B32),
        "v_lshl_or_b32" => s(LshlOr, 3, B32, B32),
        "v_and_or_b32" => s(AndOr, 3, B32, B32),
        "v_or3_b32" => s(Or3, 3, B32, B32),
        "v_xor3_b32" => s(Xor3, 3, B32, B32),
        "v_add3_u32" => s(Add3, 3, B32, B32),
        "v_xad_u32" => s(Xad, 3, B32, B32),
        "v_and_b32" => s(And, 2, B32, B32),
        "v_or_b32" => s(Or, 2, B32, B32),
        "v_xor_b32" => s(Xor, 2, B32, B32),
        "v_xnor_b32" => s(Xnor, 2, B32, B32),
        "v_not_b32" => s(Not, 1, B32, B32),
        "v_bfrev_b32" => s(Bfrev, 1, B32, B32),
        "v_bcnt_u32_b32" => s(Bcnt, 2, B32, B32),
        "v_clz_i32_u32" => s(Clz, 1, B32, B32),
        "v_ctz_i32_b32" => s(Ctz, 1, B32, B32),
        "v_cls_i32" => s(Cls, 1, B32, B32),
        "v_bfe_u32" => s(BfeU32, 3, B32, B32),
        "v_bfe_i32" => s(BfeI32, 3, B32, B32),
        "v_bfi_b32" => s(Bfi, 3, B32, B32),
        "v_bfm_b32" => s(Bfm, 2, B32, B32),
        "v_alignbit_b32" => s(Alignbit, 3, B32, B32),
        "v_alignbyte_b32" => s(Alignbyte, 3, B32, B32),
        "v_max_i32" => s(MaxI32, 2, B32, B32),
        "v_min_i32" => s(MinI32, 2, B32, B32),
        "v_max_u32" => s(MaxU32, 2, B32, B32),
        "v_min_u32" => s(MinU32, 2, B32, B32),
        "v_max3_i32" => s(Max3I32, 3, B32, B32),
        "v_min3_i32" => s(Min3I32, 3, B32, B32),
        "v_max3_u32" => s(Max3U32, 3, B32, B32),
        "v_min3_u32" => s(Min3U32, 3, B32, B32),
        "v_med3_i32" => s(Med3I32, 3, B32, B32),
        "v_med3_u32" => s(Med3U32, 3, B32, B32),
        "v_perm_b32" => s(Perm, 3, B32, B32),
        "v_add_nc_u16" => s(AddU16, 2, B16, B16),
        "v_sub_nc_u16" => s(SubU16, 2, B16, B16),
        "v_add_nc_i16" => s(AddI16, 2, B16, B16),
        "v_sub_nc_i16" => s(SubI16, 2, B16, B16),
        "v_mul_lo_u16" => s(MulLoU16, 2, B16, B16),
        "v_mad_u16" => s(MadU16, 3, B16, B16),
        "v_mad_i16" => s(MadI16, 3, B16, B16),
        "v_lshlrev_b16" => s(LshlB16, 2, B16, B16),
        "v_lshrrev_b16" => s(LshrB16, 2, B16, B16),
        "v_ashrrev_i16" => s(AshrI16, 2, B16, B16),
        "v_max_u16" => s(MaxU16, 2, B16, B16),
        "v_min_u16" => s(MinU16, 2, B16, B16),
        "v_max_i16" => s(MaxI16, 2, B16, B16),
        "v_min_i16" => s(MinI16, 2, B16, B16),
        "v_max3_u16" => s(Max3U16, 3, B16, B16),
        "v_min3_u16" => s(Min3U16, 3, B16, B16),
        "v_max3_i16" => s(Max3I16, 3, B16, B16),
        "v_min3_i16" => s(Min3I16, 3, B16, B16),
        "v_med3_u16" => s(Med3U16, 3, B16, B16),
        "v_med3_i16" => s(Med3I16, 3, B16, B16),
        "v_cvt_nearest_i32_f32" => s(CvtNearestI32F32, 1, F32, B32),
        "v_cvt_floor_i32_f32" => s(CvtFloorI32F32, 1, F32, B32),
        "v_cvt_off_f32_i4" => s(CvtOffF32I4, 1, B32, F32),
        "v_not_b16" => s(NotB16, 1, B16, B16),
        "v_and_b16" => s(AndB16, 2, B16, B16),
        "v_or_b16" => s(OrB16, 2, B16, B16),
        "v_xor_b16" => s(XorB16, 2, B16, B16),
        "v_frexp_mant_f16" => s(FrexpMantF16, 1, F16, F16),
        "v_frexp_exp_i16_f16" => s(FrexpExpF16, 1, F16, B16),
        "v_sat_pk_u8_i16" => s(SatPkU8I16, 1, B32, B16),
        "v_cvt_norm_i16_f16" => s(CvtNormI16F16, 1, F16, B16),
        "v_cvt_norm_u16_f16" => s(CvtNormU16F16, 1, F16, B16),
        "v_cvt_pk_norm_i16_f16" => s(CvtPkNormI16F16, 2, F16, B32),
        "v_cvt_pk_norm_u16_f16" => s(CvtPkNormU16F16, 2, F16, B32),
        "v_cvt_pk_norm_i16_f32" => s(CvtPkNormI16F32, 2, F32, B32),
        "v_cvt_pk_norm_u16_f32" => s(CvtPkNormU16F32, 2, F32, B32),
        "v_cvt_pk_rtz_f16_f32" => s(CvtPkRtzF16F32, 2, F32, B32),
        "v_cvt_pk_u8_f32" => Sig { src: [F32, B32, B32], ..s(CvtPkU8F32, 3, F32, B32) },
        "v_cvt_pk_i16_f32" => s(CvtPkI16F32, 2, F32, B32),
        "v_cvt_pk_u16_f32" => s(CvtPkU16F32, 2, F32, B32),
        "v_cvt_pk_u16_u32" => s(CvtPkU16U32, 2, B32, B32),
        "v_cvt_pk_i16_i32" => s(CvtPkI16I32, 2, B32, B32),
        "v_med3_f16" => s(Med3F16, 3, F16, F16),
        "v_mad_u32_u16" => Sig { src: [B16, B16, B32], ..s(MadU32U16, 3, B16, B32) },
        "v_mad_i32_i16" => Sig { src: [B16, B16, B32], ..s(MadI32I16, 3, B16, B32) },
        "v_add_nc_i32" => s(AddI32, 2, B32, B32),
        "v_sub_nc_i32" => s(SubI32, 2, B32, B32),
        "v_sad_u8" => s(SadU8, 3, B32, B32),
        "v_sad_hi_u8" => s(SadHiU8, 3, B32, B32),
        "v_sad_u16" => s(SadU16, 3, B32, B32),
        "v_sad_u32" => s(SadU32, 3, B32, B32),
        "v_msad_u8" => s(MsadU8, 3, B32, B32),
        "v_lerp_u8" => s(LerpU8, 3, B32, B32),
        "v_qsad_pk_u16_u8" => Sig { src: [B64, B32, B64], ..s(QsadPkU16U8, 3, B64, B64) },
        "v_mqsad_pk_u16_u8" => Sig { src: [B64, B32, B64], ..s(MqsadPkU16U8, 3, B64, B64) },
        "v_dot2_f16_f16" => Sig { src: [B32, B32, F16], ..s(Dot2F16F16, 3, B32, F16) },
        "v_dot2_bf16_bf16" => Sig { src: [B32, B32, B16], ..s(Dot2Bf16Bf16, 3, B32, B16) },
        "v_pk_fmac_f16" => Sig { acc: true, ..s(PkFmacF16, 2, B32, B32) },
        "v_trig_preop_f64" => Sig { src: [F64, B32, B32], ..s(TrigPreopF64, 2, F64, F64) },
        "v_cubeid_f32" => s(CubeId, 3, F32, F32),
        "v_cubesc_f32" => s(CubeSc, 3, F32, F32),
        "v_cubetc_f32" => s(CubeTc, 3, F32, F32),
        "v_cubema_f32" => s(CubeMa, 3, F32, F32),
        "v_mullit_f32" => s(MullitF32, 3, F32, F32),
        _ => return None,
    };
    if g.l == FmaakF32 || g.l == FmamkF32 || g.l == FmaakF16 || g.l == FmamkF16 {
        g.n = 3;
    }
    Some(g)
}

/// `v_` + the rest of a VOPD mnemonic, without allocating.
struct ConcatV<'a>(&'a str);

impl ConcatV<'_> {
    fn as_str(&self) -> &str {
        // The VOPD mnemonics map onto the VOP1/VOP2 names they share.
        match self.0 {
            "fmac_f32" => "v_fmac_f32",
            "fmaak_f32" => "v_fmaak_f32",
            "fmamk_f32" => "v_fmamk_f32",
            "mul_f32" => "v_mul_f32",
            "add_f32" => "v_add_f32",
            "sub_f32" => "v_sub_f32",
            "subrev_f32" => "v_subrev_f32",
            "mul_dx9_zero_f32" => "v_mul_dx9_zero_f32",
            "mov_b32" => "v_mov_b32",
            "cndmask_b32" => "v_cndmask_b32",
            "max_f32" => "v_max_f32",
            "min_f32" => "v_min_f32",
            "dot2acc_f32_f16" => "v_dot2acc_f32_f16",
            "add_nc_u32" => "v_add_nc_u32",
            "lshlrev_b32" => "v_lshlrev_b32",
            "and_b32" => "v_and_b32",
            _ => "",
        }
    }
}

#[inline]
fn f(x: u64) -> f32 {
    // CAST: the low 32 bits are the f32.
    f32::from_bits(x as u32)
}
#[inline]
fn fb(x: f32) -> u64 {
    u64::from(x.to_bits())
}
#[inline]
fn h(x: u64) -> f32 {
    // CAST: the low 16 bits are the f16.
    h2f(x as u16)
}
#[inline]
fn hb(x: f32) -> u64 {
    u64::from(f2h(x))
}
#[inline]
fn d(x: u64) -> f64 {
    f64::from_bits(x)
}
#[inline]
fn db(x: f64) -> u64 {
    x.to_bits()
}
#[inline]
fn u(x: u64) -> u32 {
    // CAST: the low 32 bits.
    x as u32
}
#[inline]
fn i(x: u64) -> i32 {
    // CAST: the low 32 bits, as signed.
    x as u32 as i32
}
#[inline]
fn w(x: u64) -> u16 {
    // CAST: the low 16 bits.
    x as u16
}
#[inline]
fn iw(x: u64) -> i16 {
    // CAST: the low 16 bits, as signed.
    x as u16 as i16
}

/// IEEE-mode max/min: a NaN operand yields the other (RDNA3 guide: V_MAX_F32 with IEEE set).
fn fmax(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        // +0 is greater than -0.
        return f32::from_bits(a.to_bits() & b.to_bits());
    }
    if a > b { a } else { b }
}
fn fmin(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return f32::from_bits(a.to_bits() | b.to_bits());
    }
    if a < b { a } else { b }
}
fn dmax(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b {
        a
    } else {
        b
    }
}
fn dmin(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b {
        a
    } else {
        b
    }
}
fn med3f(a: f32, b: f32, c: f32) -> f32 {
    fmax(fmin(a, b), fmin(fmax(a, b), c))
}
fn ldexpf(x: f32, e: i32) -> f32 {
    libm::ldexpf(x, e)
}
fn fractf(x: f32) -> f32 {
    if x.is_infinite() {
        return f32::NAN;
    }
    let r = x - libm::floorf(x);
    // The largest f32 below 1.0: fract never returns 1.
    if r >= 1.0 { f32::from_bits(0x3f7f_ffff) } else { r }
}
fn fractd(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    let r = x - libm::floor(x);
    if r >= 1.0 { f64::from_bits(0x3fef_ffff_ffff_ffff) } else { r }
}
/// Round half to even.
fn rintf(x: f32) -> f32 {
    libm::rintf(x)
}
/// f32 → i32 as the hardware converts: NaN → 0, saturating.
fn f2i(x: f32) -> u64 {
    // CAST: Rust's float → int `as` saturates and maps NaN to 0, as V_CVT_I32_F32 does.
    u64::from(x as i32 as u32)
}
fn f2u(x: f32) -> u64 {
    // CAST: saturating, NaN → 0 (V_CVT_U32_F32).
    u64::from(x as u32)
}
fn d2i(x: f64) -> u64 {
    // CAST: saturating, NaN → 0.
    u64::from(x as i32 as u32)
}
fn d2u(x: f64) -> u64 {
    // CAST: saturating, NaN → 0.
    u64::from(x as u32)
}
/// f16_to_snorm / f32_to_snorm: the value clamped to [−1, 1] × 32767, rounded to nearest even
/// (NaN → 0).
fn snorm(x: f32) -> u16 {
    let v = if x.is_nan() { 0.0 } else { x.clamp(-1.0, 1.0) };
    // CAST: |v · 32767| ≤ 32767.
    libm::rint(f64::from(v) * 32767.0) as i16 as u16
}
/// f16_to_unorm / f32_to_unorm: clamped to [0, 1] × 65535, rounded to nearest even.
fn unorm(x: f32) -> u16 {
    let v = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    // CAST: 0 ≤ v · 65535 ≤ 65535.
    libm::rint(f64::from(v) * 65535.0) as u16
}
/// f32 → f16 bits rounded toward zero (overflow to the largest finite, NaN quiet).
fn f2h_rtz(x: f32) -> u16 {
    let h = f2h(x);
    if x.is_nan() || x.is_infinite() {
        return h;
    }
    // Rounded to nearest: step back one toward zero when that moved away from zero.
    if h2f(h).abs() > x.abs() { h - 1 } else { h }
}
/// The sum of the absolute differences of the four byte pairs of `a` and `b` (`masked`: a zero
/// byte of `b` counts nothing — V_MSAD_U8).
fn sad8(a: u32, b: u32, masked: bool) -> u32 {
    (0..4)
        .map(|k| {
            let (x, y) = ((a >> (8 * k)) & 0xff, (b >> (8 * k)) & 0xff);
            if masked && y == 0 { 0 } else { x.abs_diff(y) }
        })
        .sum()
}
/// 2/π's first 1,584 fractional bits, 24 a word (fdlibm's `ipio2`, as in the libm crate).
const TWO_OVER_PI: [u32; 66] = [
    0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163, 0xABDEBB, 0xC561B7,
    0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129, 0xA73EE8, 0x8235F5, 0x2EBB44, 0x84E99C,
    0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C, 0x845F8B, 0xBDF928, 0x3B1FF8, 0x97FFDE, 0x05980F, 0xEF2F11,
    0x8B5A0A, 0x6D1F6D, 0x367ECF, 0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D, 0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7,
    0x8A5292, 0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B, 0x6BABF0, 0xCFBC20, 0x9AF436, 0x1DA9E3, 0x91615E,
    0xE61B08, 0x659985, 0x5F14A0, 0x68408D, 0xFFD880, 0x4D7327, 0x310606, 0x1556CA, 0x73A8C9, 0x60E27B, 0xC08C6B,
];
/// Fractional bit `k` (1-based: bit 1 is the 1/2 place) of 2/π, the first 1,201 of them (the
/// guide's 1201-bit constant), 0 past them.
fn two_over_pi_bit(k: u64) -> u64 {
    if k == 0 || k > 1201 {
        return 0;
    }
    // CAST: k ≤ 1201.
    let i = (k - 1) as usize;
    u64::from((TWO_OVER_PI[i / 24] >> (23 - i % 24)) & 1)
}
/// V_TRIG_PREOP_F64: the 53 bits of 2/π after `shift` = S1[4:0] · 53 (+ exponent(S0) − 1077
/// above 1077), scaled by 2^(−53 − shift) (+128 when exponent(S0) ≥ 1968), toward zero.
fn trig_preop(s0: u64, s1: u32) -> u64 {
    let e = (s0 >> 52) & 0x7ff;
    let mut shift = u64::from(s1 & 31) * 53;
    if e > 1077 {
        shift += e - 1077;
    }
    let mut r = 0u64;
    for k in 1..=53 {
        r = r << 1 | two_over_pi_bit(shift + k);
    }
    // CAST: shift < 2^12.
    let mut scale = -53 - shift as i32;
    if e >= 1968 {
        scale += 128;
    }
    ldexp_rtz(r, scale)
}
/// m · 2^e (m < 2^53) as an f64, rounded toward zero where it is subnormal.
fn ldexp_rtz(m: u64, e: i32) -> u64 {
    if m == 0 {
        return 0;
    }
    // CAST: m < 2^53.
    let top = 63 - m.leading_zeros() as i32;
    if top + e >= -1022 {
        // Normal: exact.
        return libm::ldexp(m as f64, e).to_bits();
    }
    // Subnormal: the bits below 2^-1074 dropped.
    let drop = -1074 - e;
    if drop >= 64 {
        0
    } else if drop <= 0 {
        m << -drop
    } else {
        m >> drop
    }
}
/// V_CUBEID/SC/TC/MA_F32 for the direction (x, y, z).
fn cube(l: L, x: f32, y: f32, z: f32) -> f32 {
    let zmaj = z.abs() >= x.abs() && z.abs() >= y.abs();
    let ymaj = !zmaj && y.abs() >= x.abs();
    match l {
        L::CubeId => {
            if zmaj {
                if z < 0.0 { 5.0 } else { 4.0 }
            } else if ymaj {
                if y < 0.0 { 3.0 } else { 2.0 }
            } else if x < 0.0 {
                1.0
            } else {
                0.0
            }
        }
        L::CubeSc => {
            if zmaj {
                if z < 0.0 { -x } else { x }
            } else if ymaj {
                x
            } else if x < 0.0 {
                z
            } else {
                -z
            }
        }
        L::CubeTc => {
            if zmaj {
                -y
            } else if ymaj {
                if y < 0.0 { -z } else { z }
            } else {
                -y
            }
        }
        _ => {
            if zmaj {
                z * 2.0
            } else if ymaj {
                y * 2.0
            } else {
                x * 2.0
            }
        }
    }
}
fn sext24(x: u32) -> i64 {
    i64::from(((x << 8) as i32) >> 8)
}

/// The class bits of V_CMP_CLASS: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0,
/// 7 +denormal, 8 +normal, 9 +inf.
fn class(bits: u64, exp_bits: u32, man_bits: u32, mask: u32) -> bool {
    let sign = (bits >> (exp_bits + man_bits)) & 1 == 1;
    let exp = (bits >> man_bits) & ((1 << exp_bits) - 1);
    let man = bits & ((1 << man_bits) - 1);
    let all = (1 << exp_bits) - 1;
    let k = if exp == all && man != 0 {
        if man >> (man_bits - 1) & 1 == 1 { 1 } else { 0 }
    } else if exp == all {
        if sign { 2 } else { 9 }
    } else if exp == 0 && man == 0 {
        if sign { 5 } else { 6 }
    } else if exp == 0 {
        if sign { 4 } else { 7 }
    } else if sign {
        3
    } else {
        8
    };
    mask >> k & 1 == 1
}

/// A compare of two values of type `t` (`signed` for the integer types named `i…`).
#[inline(always)]
pub fn cmp(c: Cond, t: T, signed: bool, a: u64, b: u64) -> bool {
    use core::cmp::Ordering::*;
    if c == Cond::Class {
        let m = u(b);
        return match t {
            T::F16 => class(a & 0xffff, 5, 10, m),
            T::F64 => class(a, 11, 52, m),
            _ => class(a & 0xffff_ffff, 8, 23, m),
        };
    }
    let ord = match t {
        T::F16 => h(a).partial_cmp(&h(b)),
        T::F32 => f(a).partial_cmp(&f(b)),
        T::F64 => d(a).partial_cmp(&d(b)),
        T::B16 if signed => Some(iw(a).cmp(&iw(b))),
        T::B16 => Some(w(a).cmp(&w(b))),
        T::B32 if signed => Some(i(a).cmp(&i(b))),
        T::B32 => Some(u(a).cmp(&u(b))),
        // CAST: as signed 64-bit.
        T::B64 if signed => Some((a as i64).cmp(&(b as i64))),
        T::B64 => Some(a.cmp(&b)),
    };
    match (c, ord) {
        (Cond::F, _) => false,
        (Cond::T, _) => true,
        (Cond::Lt, o) => o == Some(Less),
        (Cond::Eq, o) => o == Some(Equal),
        (Cond::Le, o) => matches!(o, Some(Less | Equal)),
        (Cond::Gt, o) => o == Some(Greater),
        (Cond::Lg, o) => matches!(o, Some(Less | Greater)),
        (Cond::Ne, o) => o != Some(Equal),
        (Cond::Ge, o) => matches!(o, Some(Greater | Equal)),
        (Cond::O, o) => o.is_some(),
        (Cond::U, o) => o.is_none(),
        (Cond::Nge, o) => !matches!(o, Some(Greater | Equal)),
        (Cond::Nlg, o) => !matches!(o, Some(Less | Greater)),
        (Cond::Ngt, o) => o != Some(Greater),
        (Cond::Nle, o) => !matches!(o, Some(Less | Equal)),
        (Cond::Neq, o) => o != Some(Equal),
        (Cond::Nlt, o) => o != Some(Less),
        (Cond::Class, _) => false,
    }
}

/// `a·b + c` in f64 — the product exact: two f32 have at most 48 significant bits and an
/// exponent inside f64's normal range — rounded once to f64, then to f32; and whether that f32 is
/// the correctly rounded fma. It is unless the f64 sum is a NaN (whose payload libm's fma
/// chooses), an f32 subnormal (the check below is for the normal binades' halfway points), or
/// exactly halfway between two f32 (bits 28..0 = 1 << 28): every halfway point of f32 is an
/// f64, so a sum rounded to the nearest f64 that is not one lies on the same side of all of them
/// as the exact value, and f32 rounding of the two agrees.
#[inline(always)]
pub fn fma_wide(a: f32, b: f32, c: f32) -> (f32, bool) {
    let s = f64::from(a) * f64::from(b) + f64::from(c);
    let normal = s.abs() >= f64::from(f32::MIN_POSITIVE) || s == 0.0;
    // CAST: f64 → f32 rounds to nearest, ties to even.
    (s as f32, normal && s.to_bits() & 0x1fff_ffff != 0x1000_0000)
}

/// [`fma_wide`] that also takes a halfway sum when it is exact (then rounded once: libm's
/// `fma_wide_round` tests the same, and exactness the same way): sums of products of halves
/// (WMMA's), whose few significant bits often land on a halfway point exactly.
#[inline(always)]
pub fn fma_wide_exact(a: f32, b: f32, c: f32) -> (f32, bool) {
    let (p, c) = (f64::from(a) * f64::from(b), f64::from(c));
    let s = p + c;
    let normal = s.abs() >= f64::from(f32::MIN_POSITIVE) || s == 0.0;
    let exact = s - p == c && s - c == p;
    // CAST: f64 → f32 rounds to nearest, ties to even.
    (s as f32, normal && (s.to_bits() & 0x1fff_ffff != 0x1000_0000 || exact))
}

/// `fmaf(a, b, c)`, bit for bit what `libm::fmaf` returns: [`fma_wide`] where it rounds
/// correctly, libm's otherwise.
#[inline(always)]
pub fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    match fma_wide(a, b, c) {
        (r, true) => r,
        _ => libm::fmaf(a, b, c),
    }
}

/// One lane: `(result, carry/borrow out)`.
#[inline(always)]
pub fn eval(l: L, a: u64, b: u64, c: u64, m: bool) -> (u64, bool) {
    use L::*;
    let r = match l {
        Mov => a,
        Cndmask => {
            if m {
                b
            } else {
                a
            }
        }
        AddF32 => fb(f(a) + f(b)),
        SubF32 => fb(f(a) - f(b)),
        SubrevF32 => fb(f(b) - f(a)),
        MulF32 => fb(f(a) * f(b)),
        MulDx9F32 => fb(if f(a) == 0.0 || f(b) == 0.0 { 0.0 } else { f(a) * f(b) }),
        FmaF32 => fb(libm::fmaf(f(a), f(b), f(c))),
        FmaDx9F32 => fb(if f(a) == 0.0 || f(b) == 0.0 { f(c) } else { libm::fmaf(f(a), f(b), f(c)) }),
        FmaakF32 => fb(libm::fmaf(f(a), f(b), f(c))),
        FmamkF32 => fb(libm::fmaf(f(a), f(c), f(b))),
        MaxF32 => fb(fmax(f(a), f(b))),
        MinF32 => fb(fmin(f(a), f(b))),
        Max3F32 => fb(fmax(fmax(f(a), f(b)), f(c))),
        Min3F32 => fb(fmin(fmin(f(a), f(b)), f(c))),
        Med3F32 => fb(med3f(f(a), f(b), f(c))),
        // V_MAXMIN_F32: v_min_f32(v_max_f32(S0, S1), S2); V_MINMAX_F32 the other way.
        MaxminF32 => fb(fmin(fmax(f(a), f(b)), f(c))),
        MinmaxF32 => fb(fmax(fmin(f(a), f(b)), f(c))),
        LdexpF32 => fb(ldexpf(f(a), i(b))),
        ExpF32 => fb(libm::exp2f(f(a))),
        LogF32 => fb(libm::log2f(f(a))),
        RcpF32 => fb(1.0 / f(a)),
        RsqF32 => fb(1.0 / libm::sqrtf(f(a))),
        SqrtF32 => fb(libm::sqrtf(f(a))),
        // The hardware's sine and cosine take revolutions: sin(2π·x).
        SinF32 => fb(libm::sin(f64::from(f(a)) * core::f64::consts::TAU) as f32),
        CosF32 => fb(libm::cos(f64::from(f(a)) * core::f64::consts::TAU) as f32),
        FloorF32 => fb(libm::floorf(f(a))),
        CeilF32 => fb(libm::ceilf(f(a))),
        TruncF32 => fb(libm::truncf(f(a))),
        RndneF32 => fb(rintf(f(a))),
        FractF32 => fb(fractf(f(a))),
        FrexpMantF32 => {
            let x = f(a);
            fb(if x.is_nan() || x.is_infinite() { x } else { libm::frexpf(x).0 })
        }
        FrexpExpF32 => {
            let x = f(a);
            // CAST: the exponent as an i32's bits.
            if x.is_nan() || x.is_infinite() { 0 } else { u64::from(libm::frexpf(x).1 as u32) }
        }
        // CAST (these conversions): the value rounds to nearest, as the hardware's default mode.
        CvtF32I32 => fb(i(a) as f32),
        CvtF32U32 => fb(u(a) as f32),
        CvtI32F32 => f2i(f(a)),
        CvtU32F32 => f2u(f(a)),
        CvtF16F32 => hb(f(a)),
        CvtF32F16 => fb(h(a)),
        CvtF32Ubyte(k) => fb(f32::from((u(a) >> (8 * u32::from(k))) as u8)),
        CvtF64F32 => db(f64::from(f(a))),
        CvtF32F64 => fb(d(a) as f32),
        CvtI32F64 => d2i(d(a)),
        CvtU32F64 => d2u(d(a)),
        CvtF64I32 => db(f64::from(i(a))),
        CvtF64U32 => db(f64::from(u(a))),
        Dot2F32F16 => {
            let (a0, a1, b0, b1) = (h(a), h(a >> 16), h(b), h(b >> 16));
            fb(a0 * b0 + a1 * b1 + f(c))
        }
        AddF16 => hb(h(a) + h(b)),
        SubF16 => hb(h(a) - h(b)),
        SubrevF16 => hb(h(b) - h(a)),
        MulF16 => hb(h(a) * h(b)),
        // An f16 fma computed in f32 and rounded once to f16: the f32 product of two f16 is exact.
        FmaF16 | FmaakF16 => hb(libm::fma(f64::from(h(a)) * f64::from(h(b)), 1.0, f64::from(h(c))) as f32),
        FmamkF16 => hb((f64::from(h(a)) * f64::from(h(c)) + f64::from(h(b))) as f32),
        MaxF16 => hb(fmax(h(a), h(b))),
        MinF16 => hb(fmin(h(a), h(b))),
        Max3F16 => hb(fmax(fmax(h(a), h(b)), h(c))),
        Min3F16 => hb(fmin(fmin(h(a), h(b)), h(c))),
        MaxminF16 => hb(fmin(fmax(h(a), h(b)), h(c))),
        MinmaxF16 => hb(fmax(fmin(h(a), h(b)), h(c))),
        LdexpF16 => hb(ldexpf(h(a), i32::from(iw(b)))),
        ExpF16 => hb(libm::exp2f(h(a))),
        LogF16 => hb(libm::log2f(h(a))),
        RcpF16 => hb(1.0 / h(a)),
        RsqF16 => hb(1.0 / libm::sqrtf(h(a))),
        SqrtF16 => hb(libm::sqrtf(h(a))),
        SinF16 => hb(libm::sinf(h(a) * core::f32::consts::TAU)),
        CosF16 => hb(libm::cosf(h(a) * core::f32::consts::TAU)),
        FloorF16 => hb(libm::floorf(h(a))),
        CeilF16 => hb(libm::ceilf(h(a))),
        TruncF16 => hb(libm::truncf(h(a))),
        RndneF16 => hb(rintf(h(a))),
        FractF16 => hb(fractf(h(a))),
        // CAST: saturating, NaN → 0.
        CvtI16F16 => u64::from(h(a) as i16 as u16),
        CvtU16F16 => u64::from(h(a) as u16),
        CvtF16I16 => hb(f32::from(iw(a))),
        CvtF16U16 => hb(f32::from(w(a))),
        CvtI32I16 => u64::from(i32::from(iw(a)) as u32),
        CvtU32U16 => u64::from(w(a)),
        PackB32F16 => (a & 0xffff) | (b & 0xffff) << 16,
        AddF64 => db(d(a) + d(b)),
        MulF64 => db(d(a) * d(b)),
        FmaF64 => db(libm::fma(d(a), d(b), d(c))),
        MaxF64 => db(dmax(d(a), d(b))),
        MinF64 => db(dmin(d(a), d(b))),
        LdexpF64 => db(libm::ldexp(d(a), i(b))),
        RcpF64 => db(1.0 / d(a)),
        RsqF64 => db(1.0 / libm::sqrt(d(a))),
        SqrtF64 => db(libm::sqrt(d(a))),
        FloorF64 => db(libm::floor(d(a))),
        CeilF64 => db(libm::ceil(d(a))),
        TruncF64 => db(libm::trunc(d(a))),
        RndneF64 => db(libm::rint(d(a))),
        FractF64 => db(fractd(d(a))),
        FrexpMantF64 => {
            let x = d(a);
            db(if x.is_nan() || x.is_infinite() { x } else { libm::frexp(x).0 })
        }
        FrexpExpF64 => {
            let x = d(a);
            // CAST: the exponent as an i32's bits.
            if x.is_nan() || x.is_infinite() { 0 } else { u64::from(libm::frexp(x).1 as u32) }
        }
        DivScaleF32 => return divide::div_scale(divide::S, a, b, c),
        DivScaleF64 => return divide::div_scale(divide::D, a, b, c),
        DivFmasF32 => divide::div_fmas(divide::S, a, b, c, m),
        DivFmasF64 => divide::div_fmas(divide::D, a, b, c, m),
        DivFixupF16 => divide::div_fixup(divide::H, a, b, c),
        DivFixupF32 => divide::div_fixup(divide::S, a, b, c),
        DivFixupF64 => divide::div_fixup(divide::D, a, b, c),
        AddU32 => u64::from(u(a).wrapping_add(u(b))),
        SubU32 => u64::from(u(a).wrapping_sub(u(b))),
        SubrevU32 => u64::from(u(b).wrapping_sub(u(a))),
        AddCo => {
            let (r, o) = u(a).overflowing_add(u(b));
            return (u64::from(r), o);
        }
        SubCo => {
            let (r, o) = u(a).overflowing_sub(u(b));
            return (u64::from(r), o);
        }
        SubrevCo => {
            let (r, o) = u(b).overflowing_sub(u(a));
            return (u64::from(r), o);
        }
        AddCoCi => {
            let s = u64::from(u(a)) + u64::from(u(b)) + u64::from(m);
            return (s & 0xffff_ffff, s >> 32 != 0);
        }
        SubCoCi => {
            let (x, y) = (u64::from(u(a)), u64::from(u(b)) + u64::from(m));
            return (x.wrapping_sub(y) & 0xffff_ffff, y > x);
        }
        SubrevCoCi => {
            let (x, y) = (u64::from(u(b)), u64::from(u(a)) + u64::from(m));
            return (x.wrapping_sub(y) & 0xffff_ffff, y > x);
        }
        MulLoU32 => u64::from(u(a).wrapping_mul(u(b))),
        MulHiU32 => (u64::from(u(a)) * u64::from(u(b))) >> 32,
        // CAST: the high 32 bits of the signed 64-bit product.
        MulHiI32 => u64::from(((i64::from(i(a)) * i64::from(i(b))) >> 32) as u32),
        MulU32U24 => (u64::from(u(a) & 0xff_ffff) * u64::from(u(b) & 0xff_ffff)) & 0xffff_ffff,
        // CAST: the low 32 bits of the product of two signed 24-bit values.
        MulI32I24 => u64::from((sext24(u(a)) * sext24(u(b))) as u32),
        MulHiU32U24 => (u64::from(u(a) & 0xff_ffff) * u64::from(u(b) & 0xff_ffff)) >> 32,
        // CAST: bits 63:32 of the 48-bit signed product.
        MulHiI32I24 => u64::from(((sext24(u(a)) * sext24(u(b))) >> 32) as u32),
        MadU32U24 => u64::from(((u(a) & 0xff_ffff).wrapping_mul(u(b) & 0xff_ffff)).wrapping_add(u(c))),
        // CAST: low 32 bits.
        MadI32I24 => u64::from((sext24(u(a)) * sext24(u(b))).wrapping_add(i64::from(i(c))) as u32),
        MadU64U32 => {
            let p = u128::from(u(a)) * u128::from(u(b)) + u128::from(c);
            // CAST: the low 64 bits; the carry is bit 64.
            return (p as u64, p >> 64 != 0);
        }
        MadI64I32 => {
            // CAST: c as signed 64-bit.
            let p = i128::from(i(a)) * i128::from(i(b)) + i128::from(c as i64);
            // CAST: the low 64 bits; "carry" is signed overflow of the 64-bit result.
            return (p as u64, p != i128::from(p as i64));
        }
        LshlB32 => u64::from(u(b) << (u(a) & 31)),
        LshrB32 => u64::from(u(b) >> (u(a) & 31)),
        AshrI32 => u64::from((i(b) >> (u(a) & 31)) as u32),
        LshlB64 => b << (u(a) & 63),
        LshrB64 => b >> (u(a) & 63),
        // CAST: arithmetic shift of the 64-bit value.
        AshrI64 => ((b as i64) >> (u(a) & 63)) as u64,
        LshlAdd => u64::from((u(a) << (u(b) & 31)).wrapping_add(u(c))),
        AddLshl => u64::from(u(a).wrapping_add(u(b)) << (u(c) & 31)),
        LshlOr => u64::from((u(a) << (u(b) & 31)) | u(c)),
        AndOr => u64::from((u(a) & u(b)) | u(c)),
        Or3 => u64::from(u(a) | u(b) | u(c)),
        Xor3 => u64::from(u(a) ^ u(b) ^ u(c)),
        Add3 => u64::from(u(a).wrapping_add(u(b)).wrapping_add(u(c))),
        Xad => u64::from((u(a) ^ u(b)).wrapping_add(u(c))),
        And => u64::from(u(a) & u(b)),
        Or => u64::from(u(a) | u(b)),
        Xor => u64::from(u(a) ^ u(b)),
        Xnor => u64::from(!(u(a) ^ u(b))),
        Not => u64::from(!u(a)),
        Bfrev => u64::from(u(a).reverse_bits()),
        Bcnt => u64::from(u(a).count_ones().wrapping_add(u(b))),
        Clz => u64::from(if u(a) == 0 { u32::MAX } else { u(a).leading_zeros() }),
        Ctz => u64::from(if u(a) == 0 { u32::MAX } else { u(a).trailing_zeros() }),
        Cls => {
            let x = i(a);
            u64::from(if x == 0 || x == -1 { u32::MAX } else { (x ^ (x >> 31)).leading_zeros() - 1 })
        }
        BfeU32 => {
            let (off, wd) = (u(b) & 31, u(c) & 31);
            u64::from(if wd == 0 { 0 } else { (u(a) >> off) & ((1u32 << wd).wrapping_sub(1)) })
        }
        BfeI32 => {
            let (off, wd) = (u(b) & 31, u(c) & 31);
            if wd == 0 {
                0
            } else {
                let x = u(a) >> off << (32 - wd);
                // CAST: sign-extend the field.
                u64::from(((x as i32) >> (32 - wd)) as u32)
            }
        }
        Bfi => u64::from((u(a) & u(b)) | (!u(a) & u(c))),
        Bfm => u64::from(((1u64 << (u(a) & 31)) as u32).wrapping_sub(1) << (u(b) & 31)),
        Alignbit => ((u64::from(u(a)) << 32 | u64::from(u(b))) >> (u(c) & 31)) & 0xffff_ffff,
        Alignbyte => ((u64::from(u(a)) << 32 | u64::from(u(b))) >> (8 * (u(c) & 3))) & 0xffff_ffff,
        MaxI32 => u64::from(i(a).max(i(b)) as u32),
        MinI32 => u64::from(i(a).min(i(b)) as u32),
        MaxU32 => u64::from(u(a).max(u(b))),
        MinU32 => u64::from(u(a).min(u(b))),
        Max3I32 => u64::from(i(a).max(i(b)).max(i(c)) as u32),
        Min3I32 => u64::from(i(a).min(i(b)).min(i(c)) as u32),
        Max3U32 => u64::from(u(a).max(u(b)).max(u(c))),
        Min3U32 => u64::from(u(a).min(u(b)).min(u(c))),
        Med3I32 => u64::from(i(a).min(i(b)).max(i(a).max(i(b)).min(i(c))) as u32),
        Med3U32 => u64::from(u(a).min(u(b)).max(u(a).max(u(b)).min(u(c)))),
        MaxminU32 => u64::from(u(a).max(u(b)).min(u(c))),
        MinmaxU32 => u64::from(u(a).min(u(b)).max(u(c))),
        MaxminI32 => u64::from(i(a).max(i(b)).min(i(c)) as u32),
        MinmaxI32 => u64::from(i(a).min(i(b)).max(i(c)) as u32),
        Perm => {
            let src = u64::from(u(a)) << 32 | u64::from(u(b));
            let mut r = 0u32;
            for k in 0..4 {
                let sel = (u(c) >> (8 * k)) & 0xff;
                let byte = match sel {
                    0..=7 => ((src >> (8 * sel)) & 0xff) as u32,
                    8..=11 => {
                        // The sign of byte 1, 3, 5, 7 replicated.
                        let bi = 2 * (sel - 8) + 1;
                        if (src >> (8 * bi + 7)) & 1 == 1 { 0xff } else { 0 }
                    }
                    12 => 0,
                    _ => 0xff,
                };
                r |= byte << (8 * k);
            }
            u64::from(r)
        }
        AddU16 => u64::from(w(a).wrapping_add(w(b))),
        SubU16 => u64::from(w(a).wrapping_sub(w(b))),
        // V_ADD_NC_I16 / V_SUB_NC_I16: wrapping (clamp, their saturation, is refused at load).
        AddI16 => u64::from(iw(a).wrapping_add(iw(b)) as u16),
        SubI16 => u64::from(iw(a).wrapping_sub(iw(b)) as u16),
        MulLoU16 => u64::from(w(a).wrapping_mul(w(b))),
        MadU16 => u64::from(w(a).wrapping_mul(w(b)).wrapping_add(w(c))),
        MadI16 => u64::from(iw(a).wrapping_mul(iw(b)).wrapping_add(iw(c)) as u16),
        LshlB16 => u64::from(w(b) << (w(a) & 15)),
        LshrB16 => u64::from(w(b) >> (w(a) & 15)),
        AshrI16 => u64::from((iw(b) >> (w(a) & 15)) as u16),
        MaxU16 => u64::from(w(a).max(w(b))),
        MinU16 => u64::from(w(a).min(w(b))),
        MaxI16 => u64::from(iw(a).max(iw(b)) as u16),
        MinI16 => u64::from(iw(a).min(iw(b)) as u16),
        Max3U16 => u64::from(w(a).max(w(b)).max(w(c))),
        Min3U16 => u64::from(w(a).min(w(b)).min(w(c))),
        Max3I16 => u64::from(iw(a).max(iw(b)).max(iw(c)) as u16),
        Min3I16 => u64::from(iw(a).min(iw(b)).min(iw(c)) as u16),
        Med3U16 => u64::from(w(a).min(w(b)).max(w(a).max(w(b)).min(w(c)))),
        Med3I16 => u64::from(iw(a).min(iw(b)).max(iw(a).max(iw(b)).min(iw(c))) as u16),
        // D0.i = f32_to_i32(floor(S0.f + 0.5F)) (the sum rounded in f32, as written).
        CvtNearestI32F32 => f2i(libm::floorf(f(a) + 0.5)),
        CvtFloorI32F32 => f2i(libm::floorf(f(a))),
        // The table is S0[3:0] as a signed nibble × 1/16.
        CvtOffF32I4 => fb(f32::from(((u(a) << 28) as i32 >> 28) as i8) / 16.0),
        NotB16 => u64::from(!w(a)),
        AndB16 => u64::from(w(a) & w(b)),
        OrB16 => u64::from(w(a) | w(b)),
        XorB16 => u64::from(w(a) ^ w(b)),
        FrexpMantF16 => {
            let x = h(a);
            if x.is_nan() || x.is_infinite() { a & 0xffff } else { hb(libm::frexpf(x).0) }
        }
        FrexpExpF16 => {
            let x = h(a);
            // CAST: the exponent as an i16's bits (|e| < 30).
            if x.is_nan() || x.is_infinite() { 0 } else { u64::from(libm::frexpf(x).1 as i16 as u16) }
        }
        SatPkU8I16 => {
            let sat = |x: i16| u64::from(x.clamp(0, 255) as u16);
            sat(iw(a)) | sat(iw(a >> 16)) << 8
        }
        CvtNormI16F16 => u64::from(snorm(h(a))),
        CvtNormU16F16 => u64::from(unorm(h(a))),
        CvtPkNormI16F16 => u64::from(snorm(h(a))) | u64::from(snorm(h(b))) << 16,
        CvtPkNormU16F16 => u64::from(unorm(h(a))) | u64::from(unorm(h(b))) << 16,
        CvtPkNormI16F32 => u64::from(snorm(f(a))) | u64::from(snorm(f(b))) << 16,
        CvtPkNormU16F32 => u64::from(unorm(f(a))) | u64::from(unorm(f(b))) << 16,
        CvtPkRtzF16F32 => u64::from(f2h_rtz(f(a))) | u64::from(f2h_rtz(f(b))) << 16,
        CvtPkU8F32 => {
            let sh = 8 * (u(b) & 3);
            // CAST: f32_to_u8 saturates (NaN → 0) and truncates, as the other conversions.
            let byte = u32::from(f(a) as u8);
            u64::from((u(c) & !(0xff << sh)) | byte << sh)
        }
        // CAST (these): saturating, NaN → 0.
        CvtPkI16F32 => u64::from(f(a) as i16 as u16) | u64::from(f(b) as i16 as u16) << 16,
        CvtPkU16F32 => u64::from(f(a) as u16) | u64::from(f(b) as u16) << 16,
        CvtPkU16U32 => u64::from(u(a).min(0xffff)) | u64::from(u(b).min(0xffff)) << 16,
        CvtPkI16I32 => {
            let sat = |x: i32| u64::from(x.clamp(-0x8000, 0x7fff) as i16 as u16);
            sat(i(a)) | sat(i(b)) << 16
        }
        Med3F16 => hb(med3f(h(a), h(b), h(c))),
        MadU32U16 => u64::from(u32::from(w(a)) * u32::from(w(b))).wrapping_add(u64::from(u(c))) & 0xffff_ffff,
        MadI32I16 => u64::from((i32::from(iw(a)) * i32::from(iw(b))).wrapping_add(i(c)) as u32),
        AddI32 => u64::from(i(a).wrapping_add(i(b)) as u32),
        SubI32 => u64::from(i(a).wrapping_sub(i(b)) as u32),
        SadU8 => u64::from(sad8(u(a), u(b), false).wrapping_add(u(c))),
        SadHiU8 => u64::from((sad8(u(a), u(b), false) << 16).wrapping_add(u(c))),
        SadU16 => {
            let d = |k: u32| (u(a) >> k & 0xffff).abs_diff(u(b) >> k & 0xffff);
            u64::from(u(c).wrapping_add(d(16)).wrapping_add(d(0)))
        }
        SadU32 => u64::from(u(a).abs_diff(u(b)).wrapping_add(u(c))),
        MsadU8 => u64::from(sad8(u(a), u(b), true).wrapping_add(u(c))),
        LerpU8 => {
            let mut r = 0u32;
            for k in 0..4 {
                let byte = |x: u32| (x >> (8 * k)) & 0xff;
                r |= ((byte(u(a)) + byte(u(b)) + (byte(u(c)) & 1)) >> 1) << (8 * k);
            }
            u64::from(r)
        }
        QsadPkU16U8 | MqsadPkU16U8 => {
            // D[16k+15 : 16k] = sad(S0[8k+31 : 8k], S1, S2[16k+15 : 16k]), k = 0..3.
            let masked = l == MqsadPkU16U8;
            let mut r = 0u64;
            for k in 0..4 {
                // CAST: the 32 bits from byte k, and the 16-bit accumulator.
                let window = (a >> (8 * k)) as u32;
                let acc = (c >> (16 * k)) as u32 & 0xffff;
                r |= u64::from(sad8(window, u(b), masked).wrapping_add(acc) & 0xffff) << (16 * k);
            }
            r
        }
        // Products and sums in f32, the result rounded once to f16 (bf16).
        Dot2F16F16 => hb(h(a) * h(b) + h(a >> 16) * h(b >> 16) + h(c)),
        Dot2Bf16Bf16 => {
            let bf = |x: u64| f32::from_bits((u(x) & 0xffff) << 16);
            u64::from(super::fp::f2bf(bf(a) * bf(b) + bf(a >> 16) * bf(b >> 16) + bf(c)))
        }
        PkFmacF16 => {
            let fma16 = |k: u32| {
                let (x, y, z) = (h(a >> k), h(b >> k), h(c >> k));
                hb(libm::fma(f64::from(x) * f64::from(y), 1.0, f64::from(z)) as f32)
            };
            fma16(0) | fma16(16) << 16
        }
        TrigPreopF64 => trig_preop(a, u(b)),
        CubeId | CubeSc | CubeTc | CubeMa => fb(cube(l, f(a), f(b), f(c))),
        MullitF32 => {
            let (y, z) = (f(b), f(c));
            if y == -f32::MAX || y == f32::NEG_INFINITY || y.is_nan() || z <= 0.0 || z.is_nan() {
                fb(-f32::MAX)
            } else {
                fb(f(a) * y)
            }
        }
        Cmp(_) => 0,
    };
    (r, false)
}
