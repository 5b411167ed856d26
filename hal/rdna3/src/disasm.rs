//! [`Inst`] → LLVM's AMDGPU assembly syntax, as `llvm-objdump -d --mcpu=gfx1100` prints it.
//!
//! The operand forms follow the RDNA3 guide's operand encoding (chapter 15.1: SGPRs 0–105,
//! `vcc`, `ttmp`, `null`, `m0`, `exec`, inline integers 0–64 and −1…−16, the inline floats, a
//! literal, VGPRs at 256–511) written as LLVM writes them; what LLVM prints for each opcode's
//! operands (which fields, which register class, how many dwords) is the table entry
//! ([`crate::tables`]).

use crate::decode::{Encoding, Inst, LITERAL};
use core::fmt::{self, Write};

/// The type of a source operand, for its inline constants and literal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ty {
    F16,
    F32,
    F64,
    /// A 16-bit integer.
    I16,
    Int,
    /// Two packed f16 (`v_pk_*_f16`, `v_dot2*`, WMMA): a literal is the whole dword.
    V2F16,
    /// Two packed 16-bit integers.
    V2I16,
}

impl Ty {
    fn float(self) -> bool {
        matches!(self, Ty::F16 | Ty::F32 | Ty::F64 | Ty::V2F16)
    }
    fn bits16(self) -> bool {
        matches!(self, Ty::F16 | Ty::I16)
    }
}

/// Whether `name` reads packed 16-bit pairs (LLVM's `V2FP16`/`V2INT16` operands).
fn packed(name: &str) -> bool {
    let n = name.strip_prefix("v_dual_").or_else(|| name.strip_prefix("v_")).unwrap_or(name);
    n.starts_with("pk_") || n.starts_with("dot2") || n.starts_with("sat_pk_") || n.starts_with("wmma_")
}

/// The source type of a packed instruction.
fn packed_ty(name: &str) -> Ty {
    match src_ty(name) {
        Ty::F16 | Ty::F32 | Ty::F64 => Ty::V2F16,
        _ if name.starts_with("v_wmma_") => Ty::V2F16,
        _ => Ty::V2I16,
    }
}

/// The operand type LLVM uses for an instruction's sources: its last `_f16`/`_f32`/`_f64` suffix
/// (`v_cvt_f32_f16` reads f16), else an integer type.
fn src_ty(name: &str) -> Ty {
    for part in name.rsplit('_') {
        match part {
            "f16" | "bf16" => return Ty::F16,
            "f32" => return Ty::F32,
            "f64" => return Ty::F64,
            "i16" | "u16" | "b16" => return Ty::I16,
            "i32" | "u32" | "b32" | "i64" | "u64" | "b64" | "i8" | "u8" | "b8" => {
                return Ty::Int;
            }
            _ => {}
        }
    }
    Ty::Int
}

/// The type of the `k`th source from the table's probe (`h`/`w`/`f`/`i`), else `fallback`.
fn operand_ty(probe: Option<u8>, width: u32, fallback: Ty) -> Ty {
    match probe {
        Some(b'h') => Ty::F16,
        Some(b'w') => Ty::I16,
        Some(b'f') if width == 2 => Ty::F64,
        Some(b'f') => Ty::F32,
        Some(b'i') => Ty::Int,
        _ => fallback,
    }
}

/// A register range `s[a:b]`/`v[a:b]` or one register.
fn reg(f: &mut dyn Write, class: &str, n: u32, width: u32) -> fmt::Result {
    if width <= 1 { write!(f, "{class}{n}") } else { write!(f, "{class}[{n}:{}]", n + width - 1) }
}

/// An SGPR field: `s<n>`, or the special register's name (vcc_lo, exec_lo, null, m0, ttmp).
fn sreg(f: &mut dyn Write, code: u32, width: u32) -> fmt::Result {
    scalar_special(f, code, width).unwrap_or_else(|| reg(f, "s", code, width))
}

/// A scalar operand code (0–255) that names a register or a special value.
fn scalar_special(f: &mut dyn Write, code: u32, width: u32) -> Option<fmt::Result> {
    Some(match code {
        0..=105 => reg(f, "s", code, width),
        106 if width >= 2 => f.write_str("vcc"),
        106 => f.write_str("vcc_lo"),
        107 => f.write_str("vcc_hi"),
        108..=123 => reg(f, "ttmp", code - 108, width),
        124 => f.write_str("null"),
        125 => f.write_str("m0"),
        126 if width >= 2 => f.write_str("exec"),
        126 => f.write_str("exec_lo"),
        127 => f.write_str("exec_hi"),
        235 => f.write_str("src_shared_base"),
        236 => f.write_str("src_shared_limit"),
        237 => f.write_str("src_private_base"),
        238 => f.write_str("src_private_limit"),
        239 => f.write_str("src_pops_exiting_wave_id"),
        251 => f.write_str("src_vccz"),
        252 => f.write_str("src_execz"),
        253 => f.write_str("src_scc"),
        254 => f.write_str("src_lds_direct"),
        _ => return None,
    })
}

/// The inline float of code 240–248 for an operand of type `ty` and `width` dwords.
fn inline_float(code: u32, ty: Ty, width: u32) -> &'static str {
    match code {
        240 => "0.5",
        241 => "-0.5",
        242 => "1.0",
        243 => "-1.0",
        244 => "2.0",
        245 => "-2.0",
        246 => "4.0",
        247 => "-4.0",
        _ if ty == Ty::F64 || width == 2 => "0.15915494309189532",
        _ => "0.15915494",
    }
}

/// The f16 bits of inline float code 240–248 (what LLVM prints for a 16-bit integer operand).
fn inline_f16_bits(code: u32) -> u32 {
    [0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118][(code - 240) as usize]
}

/// The inline-constant code whose value a literal holds, for an operand of type `ty` and
/// `width` dwords: LLVM prints such a literal as the constant.
fn inlinable(v: u32, ty: Ty, width: u32) -> Option<u32> {
    // CAST: reinterpreting the literal's bits as signed.
    let i = v as i32;
    if (0..=64).contains(&i) {
        return Some(128 + v);
    }
    if (-16..0).contains(&i) {
        // CAST: -16..-1 → 193..208.
        return Some((192 - i) as u32);
    }
    let floats: [u32; 9] = match (ty, width) {
        // A 64-bit float literal is the high dword of the double.
        (Ty::F64, _) => [
            0x3fe0_0000,
            0xbfe0_0000,
            0x3ff0_0000,
            0xbff0_0000,
            0x4000_0000,
            0xc000_0000,
            0x4010_0000,
            0xc010_0000,
            0x3fc4_5f30,
        ],
        (_, 2) => return None,
        (Ty::F16, _) => [0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118],
        _ => [
            0x3f00_0000,
            0xbf00_0000,
            0x3f80_0000,
            0xbf80_0000,
            0x4000_0000,
            0xc000_0000,
            0x4080_0000,
            0xc080_0000,
            0x3e22_f983,
        ],
    };
    // CAST: at most 9.
    floats.iter().position(|&f| f == v).map(|k| 240 + k as u32)
}

/// The inline integer code of a 16-bit value, when it is one (-16..=64).
fn inlinable_i16(v: u32) -> Option<u32> {
    // CAST: the low half as a signed 16-bit value.
    let i = i32::from(v as u16 as i16);
    match i {
        // CAST: 0..=64 and -16..=-1 map to 128..=192 and 193..=208.
        0..=64 => Some(128 + i as u32),
        -16..=-1 => Some((192 - i) as u32),
        _ => None,
    }
}

/// A source operand (a 9-bit code, or 8-bit for scalar ALU) of `width` dwords.
fn src(f: &mut dyn Write, code: u32, width: u32, ty: Ty, lit: Option<u32>) -> fmt::Result {
    if code >= 256 {
        return reg(f, "v", code - 256, width);
    }
    if let Some(r) = scalar_special(f, code, width) {
        return r;
    }
    match code {
        128..=192 => write!(f, "{}", code - 128),
        193..=208 => write!(f, "-{}", code - 192),
        240..=248 if ty == Ty::I16 => write!(f, "{:#x}", inline_f16_bits(code)),
        240..=248 => f.write_str(inline_float(code, ty, width)),
        LITERAL => {
            let v = lit.unwrap_or(0);
            // A 16-bit operand's literal is the dword's low half (a 16-bit integer operand's
            // literal is first read as a 32-bit float, as LLVM does).
            // A packed or 16-bit integer operand's literal is first read as a whole-dword integer
            // and then as a 32-bit float (a packed f16's as an f16 when it fits 16 bits): LLVM's
            // printImmediateInt16 and printImmediateV216.
            let int32 = inlinable(v, Ty::Int, 1).filter(|&c| c < 240);
            let c = match ty {
                Ty::F16 => inlinable_i16(v & 0xffff).or_else(|| inlinable(v & 0xffff, ty, width).filter(|&c| c >= 240)),
                Ty::I16 => int32.or_else(|| inlinable(v, Ty::F32, 1).filter(|&c| c >= 240)),
                Ty::V2I16 => int32.or_else(|| inlinable(v, Ty::F32, 1).filter(|&c| c >= 240)),
                Ty::V2F16 => int32.or_else(|| inlinable(v, Ty::F16, 1).filter(|&c| c >= 240 && v <= 0xffff)),
                _ => inlinable(v, ty, width),
            };
            let shown = match ty {
                Ty::I16 | Ty::V2I16 => Ty::F32,
                Ty::V2F16 => Ty::F16,
                t => t,
            };
            match c {
                Some(c) => src(f, c, width, shown, None),
                None if ty == Ty::I16 => write!(f, "{:#x}", v & 0xffff),
                None if ty.bits16() => write!(f, "{:#x}", v & 0xffff),
                None => write!(f, "{v:#x}"),
            }
        }
        _ => write!(f, "/*invalid operand {code}*/"),
    }
}

/// One operand element of the table (`F:c:w` or `=text`).
struct Elem<'a> {
    field: u8,
    class: u8,
    width: u32,
    text: &'a str,
}

fn elem(e: &str) -> Elem<'_> {
    if let Some(t) = e.strip_prefix('=') {
        return Elem { field: b'=', class: 0, width: 0, text: t };
    }
    if e == "I" || e == "K" {
        return Elem { field: e.as_bytes()[0], class: 0, width: 0, text: "" };
    }
    let b = e.as_bytes();
    let width = e[4..].parse().unwrap_or(1);
    Elem { field: b[0], class: b[2], width, text: "" }
}

/// `inst` in LLVM's syntax (no address or encoding).
pub struct Text<'a>(pub &'a Inst);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_inst(f, self.0)
    }
}

fn write_inst(f: &mut dyn Write, i: &Inst) -> fmt::Result {
    match i.enc {
        Encoding::Sopp => return sopp(f, i),
        Encoding::Sopk => return sopk(f, i),
        Encoding::Smem => return smem(f, i),
        Encoding::Sop1 if i.op.name.starts_with("s_sendmsg_rtn") => {
            let w = i.op.operands.first().map_or(1, |o| elem(o).width);
            write!(f, "{} ", i.op.name)?;
            reg(f, "s", (i.words[0] >> 16) & 0x7f, w)?;
            let id = i.words[0] & 0xff;
            return match msg_name(id) {
                Some(m) => write!(f, ", sendmsg({m})"),
                None => write!(f, ", sendmsg({id}, 0, 0)"),
            };
        }
        Encoding::Flat | Encoding::Scratch | Encoding::Global => return flat(f, i),
        Encoding::Vopd => return vopd(f, i),
        _ => {}
    }
    let name = i.op.name;
    f.write_str(name)?;
    // Scalar ALU sources are whole dwords (`s_pack_*_b32_b16` reads two); packed VALU sources
    // are pairs; VOP3P's others take 32-bit literals and inline constants unless probed.
    let fallback = match (i.enc, src_ty(name)) {
        (Encoding::Sop1 | Encoding::Sop2 | Encoding::Sopc, t) if t.bits16() => Ty::Int,
        _ if packed(name) => packed_ty(name),
        (Encoding::Vop3p, t) if t.float() => Ty::F32,
        (Encoding::Vop3p, _) => Ty::Int,
        (_, t) => t,
    };
    let mut first = true;
    let mut k = 0;
    for e in i.op.operands {
        let e = elem(e);
        f.write_str(if first { " " } else { ", " })?;
        first = false;
        let ty = if matches!(e.field, b'A' | b'B' | b'C') {
            let probe = i.op.srcs.as_bytes().get(k).copied();
            k += 1;
            match probe {
                Some(b'f' | b'i') if packed(name) => fallback,
                // The accumulator of v_sad_u16 is a u32, v_dot2_f32_*'s an f32.
                _ if name == "v_sad_u16" && e.field == b'C' => Ty::Int,
                _ if name.starts_with("v_dot2_f32_") && e.field == b'C' => Ty::F32,
                _ => operand_ty(probe, e.width, fallback),
            }
        } else {
            fallback
        };
        operand(f, i, &e, ty)?;
    }
    modifiers(f, i)
}

/// The field of `i` an operand element reads: its raw code.
fn field(i: &Inst, e: &Elem<'_>) -> u32 {
    let (w0, w1) = (i.words[0], i.words[1]);
    match (i.enc, e.field) {
        (Encoding::Sop2 | Encoding::Sop1 | Encoding::Sopk, b'D') => (w0 >> 16) & 0x7f,
        (Encoding::Sop2 | Encoding::Sopc | Encoding::Sop1, b'A') => w0 & 0xff,
        (Encoding::Sop2 | Encoding::Sopc, b'B') => (w0 >> 8) & 0xff,
        (Encoding::Smem, b'D') => (w0 >> 6) & 0x7f,
        (Encoding::Smem, b'A') => (w0 & 0x3f) << 1,
        (Encoding::Vop1 | Encoding::Vop2, b'D') => (w0 >> 17) & 0xff,
        (Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc, b'A') => w0 & 0x1ff,
        (Encoding::Vop2 | Encoding::Vopc, b'B') => 256 + ((w0 >> 9) & 0xff),
        (Encoding::Vop3 | Encoding::Vop3p, b'D') => w0 & 0xff,
        (Encoding::Vop3, b'E') => (w0 >> 8) & 0x7f,
        (Encoding::Vop3 | Encoding::Vop3p, b'A') => w1 & 0x1ff,
        (Encoding::Vop3 | Encoding::Vop3p, b'B') => (w1 >> 9) & 0x1ff,
        (Encoding::Vop3 | Encoding::Vop3p, b'C') => (w1 >> 18) & 0x1ff,
        (Encoding::Ds, b'D') => w1 >> 24,
        (Encoding::Ds, b'A') => w1 & 0xff,
        (Encoding::Ds, b'B') => (w1 >> 8) & 0xff,
        (Encoding::Ds, b'C') => (w1 >> 16) & 0xff,
        (Encoding::Flat | Encoding::Scratch | Encoding::Global, b'D') => w1 >> 24,
        (Encoding::Flat | Encoding::Scratch | Encoding::Global, b'A') => w1 & 0xff,
        (Encoding::Flat | Encoding::Scratch | Encoding::Global, b'B') => (w1 >> 8) & 0xff,
        _ => 0,
    }
}

fn operand(f: &mut dyn Write, i: &Inst, e: &Elem<'_>, ty: Ty) -> fmt::Result {
    match e.field {
        b'=' => return f.write_str(e.text),
        b'I' => return write!(f, "{:#x}", i.words[0] & 0xffff),
        b'K' => return konst(f, i.literal.unwrap_or(0)),
        _ => {}
    }
    let code = field(i, e);
    let vector_field = matches!(
        (i.enc, e.field),
        (Encoding::Vop1 | Encoding::Vop2 | Encoding::Vop3 | Encoding::Vop3p, b'D')
            | (Encoding::Ds | Encoding::Flat | Encoding::Scratch | Encoding::Global, _)
    );
    let (neg, abs) = if ty.float() { vop3_src_mods(i, e.field) } else { (false, false) };
    // An integer source of a float instruction has LLVM's Int32InputMods: the neg bit is sext.
    let sext = ty == Ty::Int && src_ty(i.op.name).float() && !has_sdst(i) && vop3_src_mods(i, e.field).0;
    if sext {
        f.write_str("sext(")?;
    }
    // LLVM writes a negated constant that is an integer or already negative as neg(...).
    let neg_call = neg && !abs && !vector_field && matches!(code, 128..=208 | 240..=248 | LITERAL);
    if neg_call {
        f.write_str("neg(")?;
    } else if neg {
        f.write_str("-")?;
    }
    if abs {
        f.write_str("|")?;
    }
    if vector_field && e.class == b'v' {
        reg(f, "v", code, e.width)?;
    } else if vector_field && e.class == b'h' {
        write!(f, "v{}.{}", code & 0x7f, if code & 0x80 != 0 { 'h' } else { 'l' })?;
    } else if e.class == b'h' && code >= 256 {
        write!(f, "v{}.{}", (code - 256) & 0x7f, if code & 0x80 != 0 { 'h' } else { 'l' })?;
    } else if vector_field {
        // A VOP destination field naming an SGPR (v_readfirstlane, VOP3 compares): vcc_lo,
        // exec_lo, null, m0 and ttmps by name.
        sreg(f, code, e.width)?;
    } else {
        src(f, code, e.width, ty, i.literal)?;
    }
    if abs {
        f.write_str("|")?;
    }
    if neg_call || sext {
        f.write_str(")")?;
    }
    Ok(())
}

/// The constant `K` of fmaak/fmamk: the literal dword in hex (also for the f16 forms).
fn konst(f: &mut dyn Write, k: u32) -> fmt::Result {
    write!(f, "{k:#x}")
}

/// VOPD: `X :: Y`, each half `name vdst, src0[, vsrc1][, K]` in its table's order. X's fields:
/// vdstx [63:56], srcx0 [8:0], vsrcx1 [16:9]; Y's: vdsty [55:49] (its low bit the inverse of
/// vdstx's), srcy0 [40:32], vsrcy1 [48:41].
fn vopd(f: &mut dyn Write, i: &Inst) -> fmt::Result {
    let (w0, w1) = (i.words[0], i.words[1]);
    let vdstx = w1 >> 24;
    let halves = [
        (i.op, vdstx, w0 & 0x1ff, (w0 >> 9) & 0xff),
        (i.y.unwrap_or(i.op), ((w1 >> 17) & 0x7f) << 1 | (!vdstx & 1), w1 & 0x1ff, (w1 >> 9) & 0xff),
    ];
    for (n, (op, d, a, b)) in halves.into_iter().enumerate() {
        if n == 1 {
            f.write_str(" :: ")?;
        }
        f.write_str(op.name)?;
        // v_dual_dot2acc_f32_f16's src0 is a packed pair, unless the pair's literal is also an
        // fmaak/fmamk constant: LLVM then prints it as that 32-bit constant.
        let shares_k = i.op.operands.contains(&"K") || i.y.is_some_and(|y| y.operands.contains(&"K"));
        let ty = match (packed(op.name), shares_k) {
            (true, false) => packed_ty(op.name),
            (true, true) => Ty::F32,
            _ => src_ty(op.name),
        };
        for (k, e) in op.operands.iter().enumerate() {
            f.write_str(if k == 0 { " " } else { ", " })?;
            let e = elem(e);
            match e.field {
                b'D' => reg(f, "v", d, 1)?,
                b'A' => src(f, a, 1, ty, i.literal)?,
                b'B' => reg(f, "v", b, 1)?,
                b'K' => konst(f, i.literal.unwrap_or(0))?,
                _ => f.write_str(e.text)?,
            }
        }
    }
    Ok(())
}

/// Whether a VOP3 instruction has a scalar carry-out where other VOP3s have abs and op_sel (VOP3SD).
fn has_sdst(i: &Inst) -> bool {
    i.op.operands.iter().any(|o| o.starts_with('E'))
}

/// VOP3's neg and abs bits for source field `field` (`A`/`B`/`C`).
fn vop3_src_mods(i: &Inst, field: u8) -> (bool, bool) {
    let k = match field {
        b'A' => 0,
        b'B' => 1,
        b'C' => 2,
        _ => return (false, false),
    };
    // neg (VOP3P: neg_lo) in the second dword, abs (VOP3P: neg_hi) in the first; VOP3SD has no
    // abs (its bits hold the carry-out); v_fma_mix* is the VOP3P that reads them as neg and abs.
    let neg = (i.words[1] >> (29 + k)) & 1 != 0;
    let abs = (i.words[0] >> (8 + k)) & 1 != 0;
    match i.enc {
        Encoding::Vop3 if has_sdst(i) => (neg, false),
        Encoding::Vop3 => (neg, abs),
        Encoding::Vop3p if is_mix(i) => (neg, abs),
        _ => (false, false),
    }
}

/// v_fma_mix_f32, v_fma_mixlo_f16, v_fma_mixhi_f16: VOP3P with VOP3's source modifiers.
fn is_mix(i: &Inst) -> bool {
    i.op.name.starts_with("v_fma_mix")
}

fn modifiers(f: &mut dyn Write, i: &Inst) -> fmt::Result {
    let (w0, w1) = (i.words[0], i.words[1]);
    match i.enc {
        Encoding::Vop3 => {
            let mut opsel = (w0 >> 11) & 0xf;
            if i.op.name.starts_with("v_dot2") {
                // The packed sources have no op_sel (LLVM prints only src2's and the dst's).
                opsel &= 0b1100;
            }
            if i.op.name.starts_with("v_permlane") && opsel & 3 != 0 {
                // op_sel[0:1] are fetch-inactive and bound-ctrl.
                write!(f, " op_sel:[{},{}]", opsel & 1, (opsel >> 1) & 1)?;
            } else if opsel != 0 && i.op.opsel && !i.op.name.starts_with("v_permlane") {
                let nsrc = i.op.operands.iter().filter(|o| matches!(o.as_bytes()[0], b'A' | b'B' | b'C')).count();
                let mut l = heapless_list::List::new();
                for k in 0..nsrc {
                    l.push((opsel >> k) & 1);
                }
                l.push(opsel >> 3);
                write!(f, " op_sel:{l}")?;
            }
            if (w0 >> 15) & 1 != 0 {
                f.write_str(" clamp")?;
            }
            match (w1 >> 27) & 3 {
                1 => f.write_str(" mul:2")?,
                2 => f.write_str(" mul:4")?,
                3 => f.write_str(" div:2")?,
                _ => {}
            }
        }
        Encoding::Vop3p => {
            let opsel = (w0 >> 11) & 7;
            let opsel_hi = (w1 >> 27) & 3 | ((w0 >> 14) & 1) << 2;
            let nsrc = i.op.operands.iter().filter(|o| matches!(o.as_bytes()[0], b'A' | b'B' | b'C')).count();
            let bits = |v: u32| {
                let mut s = heapless_list::List::new();
                for k in 0..nsrc {
                    s.push((v >> k) & 1);
                }
                s
            };
            // WMMA with a 32-bit result has neither op_sel nor op_sel_hi; v_fma_mix* prints
            // op_sel_hi when set (it picks f16 sources) and its neg bits as source modifiers.
            let wmma = i.op.name.starts_with("v_wmma_f32_") || i.op.name.starts_with("v_wmma_i32_");
            if opsel != 0 && !wmma {
                write!(f, " op_sel:{}", bits(opsel))?;
            }
            let default_hi = if is_mix(i) { 0 } else { (1 << nsrc) - 1 };
            if opsel_hi != default_hi && !wmma {
                write!(f, " op_sel_hi:{}", bits(opsel_hi))?;
            }
            let (neg_lo, neg_hi) = if is_mix(i) { (0, 0) } else { (w1 >> 29, (w0 >> 8) & 7) };
            if neg_lo != 0 {
                write!(f, " neg_lo:{}", bits(neg_lo))?;
            }
            if neg_hi != 0 {
                write!(f, " neg_hi:{}", bits(neg_hi))?;
            }
            if (w0 >> 15) & 1 != 0 {
                f.write_str(" clamp")?;
            }
        }
        Encoding::Ds => {
            let (o0, o1) = (w0 & 0xff, (w0 >> 8) & 0xff);
            if i.op.name.contains("2addr") {
                if o0 != 0 {
                    write!(f, " offset0:{o0}")?;
                }
                if o1 != 0 {
                    write!(f, " offset1:{o1}")?;
                }
            } else if i.op.name == "ds_swizzle_b32" && w0 & 0xffff != 0 {
                swizzle(f, w0 & 0xffff)?;
            } else if w0 & 0xffff != 0 {
                write!(f, " offset:{}", w0 & 0xffff)?;
            }
            if (w0 >> 17) & 1 != 0 {
                f.write_str(" gds")?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// ds_swizzle_b32's offset as LLVM's printSwizzle writes it: `QUAD_PERM` (bit 15 set, bits
/// 8–14 clear), else with bit 15 clear the and/or/xor lane masks (bits 0–4, 5–9, 10–14) as
/// `SWAP`, `REVERSE`, `BROADCAST` or `BITMASK_PERM`, else the number.
fn swizzle(f: &mut dyn Write, imm: u32) -> fmt::Result {
    if imm & 0xff00 == 0x8000 {
        let l = |k: u32| (imm >> (2 * k)) & 3;
        return write!(f, " offset:swizzle(QUAD_PERM,{},{},{},{})", l(0), l(1), l(2), l(3));
    }
    if imm & 0x8000 != 0 {
        return write!(f, " offset:{imm}");
    }
    let (and, or, xor) = (imm & 0x1f, (imm >> 5) & 0x1f, (imm >> 10) & 0x1f);
    if and == 0x1f && or == 0 && xor.count_ones() == 1 {
        return write!(f, " offset:swizzle(SWAP,{xor})");
    }
    if and == 0x1f && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
        return write!(f, " offset:swizzle(REVERSE,{})", xor + 1);
    }
    let group = 0x1f - and + 1;
    if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
        return write!(f, " offset:swizzle(BROADCAST,{group},{or})");
    }
    let (p0, p1) = (or ^ xor, ((0x1f & and) | or) ^ xor);
    f.write_str(" offset:swizzle(BITMASK_PERM,\"")?;
    for b in (0..5).rev() {
        let (a, c) = ((p0 >> b) & 1, (p1 >> b) & 1);
        f.write_str(match (a, c) {
            (0, 0) => "0",
            (1, 1) => "1",
            (0, _) => "p",
            _ => "i",
        })?;
    }
    f.write_str("\")")
}

/// SMEM: `sdata, sbase, soffset-or-offset [offset:] [glc] [dlc]`.
fn smem(f: &mut dyn Write, i: &Inst) -> fmt::Result {
    let (w0, w1) = (i.words[0], i.words[1]);
    f.write_str(i.op.name)?;
    let mut sep = " ";
    for e in i.op.operands {
        let e = elem(e);
        if e.field == b'=' {
            continue;
        }
        f.write_str(sep)?;
        sep = ", ";
        match e.field {
            b'D' => sreg(f, (w0 >> 6) & 0x7f, e.width)?,
            // sbase is in pairs; a 4-dword buffer descriptor starts at a multiple of 4
            _ => reg(f, "s", ((w0 & 0x3f) << 1) & !(e.width.max(2) / 2 * 2 - 1), e.width)?,
        }
    }
    if i.op.operands.is_empty() {
        return Ok(());
    }
    // CAST: a 21-bit signed byte offset.
    let offset = ((w1 << 11) as i32) >> 11;
    let soffset = w1 >> 25;
    let hex = |v: i32| if v < 0 { alloc_free_hex(-(v as i64)) } else { alloc_free_hex(v as i64) };
    if soffset == 124 {
        if offset == 0 {
            f.write_str(", null")?;
        } else {
            write!(f, ", {}{}", if offset < 0 { "-" } else { "" }, hex(offset))?;
        }
    } else {
        f.write_str(", ")?;
        src(f, soffset, 1, Ty::Int, None)?;
        if offset != 0 {
            write!(f, " offset:{}{}", if offset < 0 { "-" } else { "" }, hex(offset))?;
        }
    }
    if (w0 >> 14) & 1 != 0 {
        f.write_str(" glc")?;
    }
    if (w0 >> 13) & 1 != 0 {
        f.write_str(" dlc")?;
    }
    Ok(())
}

/// `0x…` of a magnitude.
fn alloc_free_hex(v: i64) -> Hex {
    Hex(v.unsigned_abs())
}

struct Hex(u64);

impl fmt::Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// FLAT, GLOBAL, SCRATCH: `[vdst,] vaddr, [vdata,] saddr|off [offset:] [glc] [slc] [dlc]`.
fn flat(f: &mut dyn Write, i: &Inst) -> fmt::Result {
    let (w0, w1) = (i.words[0], i.words[1]);
    let name = i.op.name;
    f.write_str(name)?;
    let glc = (w0 >> 14) & 1 != 0;
    let saddr = (w1 >> 16) & 0x7f;
    let sve = (w1 >> 23) & 1 != 0;
    let width = |c: u8| i.op.operands.iter().find(|o| o.as_bytes()[0] == c).map(|o| elem(o).width);
    let has_vaddr = width(b'A').is_some() || i.op.operands.iter().filter(|o| o.starts_with('=')).count() == 2;
    let mut sep = " ";
    let mut put = |f: &mut dyn Write| -> fmt::Result {
        let r = f.write_str(sep);
        sep = ", ";
        r
    };
    if let Some(w) = width(b'D') {
        put(f)?;
        reg(f, "v", w1 >> 24, w)?;
    } else if name.contains("_atomic_") && glc {
        // An atomic with glc returns the old value: LLVM prints its destination first.
        let data = width(b'B').unwrap_or(1);
        put(f)?;
        reg(f, "v", w1 >> 24, if name.contains("cmpswap") { (data / 2).max(1) } else { data })?;
    }
    if has_vaddr {
        put(f)?;
        match i.enc {
            Encoding::Scratch if !sve => f.write_str("off")?,
            Encoding::Scratch => reg(f, "v", w1 & 0xff, 1)?,
            Encoding::Global if saddr != 124 => reg(f, "v", w1 & 0xff, 1)?,
            _ => reg(f, "v", w1 & 0xff, width(b'A').unwrap_or(2))?,
        }
    }
    if let Some(w) = width(b'B') {
        put(f)?;
        reg(f, "v", (w1 >> 8) & 0xff, w)?;
    }
    if i.enc != Encoding::Flat {
        put(f)?;
        match (i.enc, saddr) {
            (_, 124) => f.write_str("off")?,
            (Encoding::Global, s) => src(f, s, 2, Ty::Int, None)?,
            (_, s) => src(f, s, 1, Ty::Int, None)?,
        }
    }
    let raw = w0 & 0x1fff;
    // CAST: GLOBAL and SCRATCH take a 13-bit signed offset, FLAT an unsigned one.
    let off = if i.enc == Encoding::Flat { raw as i32 } else { ((raw << 19) as i32) >> 19 };
    if off != 0 {
        write!(f, " offset:{off}")?;
    }
    if glc {
        f.write_str(" glc")?;
    }
    if (w0 >> 15) & 1 != 0 {
        f.write_str(" slc")?;
    }
    if (w0 >> 13) & 1 != 0 {
        f.write_str(" dlc")?;
    }
    Ok(())
}

/// `[a,b,c]` lists of modifier bits, without allocating.
mod heapless_list {
    use core::fmt;

    pub struct List {
        v: [u32; 4],
        n: usize,
    }

    impl List {
        pub fn new() -> Self {
            Self { v: [0; 4], n: 0 }
        }
        pub fn push(&mut self, b: u32) {
            if self.n < 4 {
                self.v[self.n] = b;
                self.n += 1;
            }
        }
    }

    impl fmt::Display for List {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("[")?;
            for (k, b) in self.v[..self.n].iter().enumerate() {
                if k > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{b}")?;
            }
            f.write_str("]")
        }
    }
}

/// A 16-bit immediate as LLVM prints one: decimal when it is an inline integer (0..=64), else hex.
fn u16_imm(f: &mut dyn Write, v: u32) -> fmt::Result {
    if v <= 64 { write!(f, "{v}") } else { write!(f, "{v:#x}") }
}

/// The name of hardware register `id` (s_getreg/s_setreg), where LLVM gives one.
fn hwreg_name(id: u32) -> Option<&'static str> {
    Some(match id {
        1 => "HW_REG_MODE",
        2 => "HW_REG_STATUS",
        3 => "HW_REG_TRAPSTS",
        5 => "HW_REG_GPR_ALLOC",
        6 => "HW_REG_LDS_ALLOC",
        7 => "HW_REG_IB_STS",
        15 => "HW_REG_SH_MEM_BASES",
        18 => "HW_REG_PERF_SNAPSHOT_PC_LO",
        19 => "HW_REG_PERF_SNAPSHOT_PC_HI",
        20 => "HW_REG_FLAT_SCR_LO",
        21 => "HW_REG_FLAT_SCR_HI",
        23 => "HW_REG_HW_ID1",
        24 => "HW_REG_HW_ID2",
        27 => "HW_REG_PERF_SNAPSHOT_DATA",
        29 => "HW_REG_SHADER_CYCLES",
        _ => return None,
    })
}

/// `hwreg(id[, offset, size])`: id [5:0], offset [10:6], size − 1 [15:11].
fn hwreg(f: &mut dyn Write, v: u32) -> fmt::Result {
    let (id, off, size) = (v & 0x3f, (v >> 6) & 0x1f, (v >> 11) + 1);
    f.write_str("hwreg(")?;
    match hwreg_name(id) {
        Some(n) => f.write_str(n)?,
        None => write!(f, "{id}")?,
    }
    if off != 0 || size != 32 {
        write!(f, ", {off}, {size}")?;
    }
    f.write_str(")")
}

/// SOPK: a register and the 16-bit immediate.
fn sopk(f: &mut dyn Write, i: &Inst) -> fmt::Result {
    let name = i.op.name;
    f.write_str(name)?;
    let imm = i.words[0] & 0xffff;
    let sd = (i.words[0] >> 16) & 0x7f;
    let width = i.op.operands.iter().find(|o| o.starts_with('D')).map_or(1, |o| elem(o).width);
    match name {
        "s_getreg_b32" => {
            f.write_str(" ")?;
            src(f, sd, 1, Ty::Int, None)?;
            f.write_str(", ")?;
            hwreg(f, imm)
        }
        "s_setreg_b32" => {
            f.write_str(" ")?;
            hwreg(f, imm)?;
            f.write_str(", ")?;
            src(f, sd, 1, Ty::Int, None)
        }
        "s_setreg_imm32_b32" => {
            f.write_str(" ")?;
            hwreg(f, imm)?;
            write!(f, ", {:#x}", i.literal.unwrap_or(0))
        }
        _ => {
            let mut first = true;
            for e in i.op.operands {
                let e = elem(e);
                f.write_str(if first { " " } else { ", " })?;
                first = false;
                match e.field {
                    b'I' if name.starts_with("s_call") || name.starts_with("s_subvector_loop") => write!(f, "{imm}")?,
                    b'I' => write!(f, "{imm:#x}")?,
                    _ => src(f, sd, width, Ty::Int, None)?,
                }
            }
            Ok(())
        }
    }
}

/// The name of message `id` (s_sendmsg), where LLVM gives one.
fn msg_name(id: u32) -> Option<&'static str> {
    Some(match id {
        1 => "MSG_INTERRUPT",
        2 => "MSG_HS_TESSFACTOR",
        3 => "MSG_DEALLOC_VGPRS",
        5 => "MSG_STALL_WAVE_GEN",
        6 => "MSG_HALT_WAVES",
        9 => "MSG_GS_ALLOC_REQ",
        128 => "MSG_RTN_GET_DOORBELL",
        129 => "MSG_RTN_GET_DDID",
        130 => "MSG_RTN_GET_TMA",
        131 => "MSG_RTN_GET_REALTIME",
        _ => return None,
    })
}

/// s_waitcnt_depctr's fields (LLVM's DepCtrInfo for gfx11): name, shift, width. A field at its
/// maximum is the default, left out unless all are; bits outside the fields print the
/// immediate in hex.
const DEPCTR: [(&str, u32, u32); 7] = [
    ("depctr_hold_cnt", 7, 1),
    ("depctr_sa_sdst", 0, 1),
    ("depctr_va_vdst", 12, 4),
    ("depctr_va_sdst", 9, 3),
    ("depctr_va_ssrc", 8, 1),
    ("depctr_va_vcc", 1, 1),
    ("depctr_vm_vsrc", 2, 3),
];

fn depctr(f: &mut dyn Write, imm: u32) -> fmt::Result {
    let mask = DEPCTR.iter().fold(0, |m, &(_, sh, w)| m | ((1 << w) - 1) << sh);
    if imm & !mask & 0xffff != 0 {
        return write!(f, " {imm:#x}");
    }
    let field = |sh: u32, w: u32| (imm >> sh) & ((1 << w) - 1);
    let all_default = DEPCTR.iter().all(|&(_, sh, w)| field(sh, w) == (1 << w) - 1);
    for &(name, sh, w) in &DEPCTR {
        let v = field(sh, w);
        if all_default || v != (1 << w) - 1 {
            write!(f, " {name}({v})")?;
        }
    }
    Ok(())
}

/// SOPP: program control, its 16-bit immediate printed per opcode.
fn sopp(f: &mut dyn Write, i: &Inst) -> fmt::Result {
    let name = i.op.name;
    f.write_str(name)?;
    let imm = i.words[0] & 0xffff;
    if i.op.operands.is_empty() {
        // s_endpgm and the like print a non-zero immediate as it is.
        return if imm != 0 { write!(f, " {imm}") } else { Ok(()) };
    }
    match name {
        "s_waitcnt" => {
            // gfx11: vmcnt [15:10], lgkmcnt [9:4], expcnt [2:0]; the counters at their maximum
            // are left out, unless all are.
            let (vm, lgkm, exp) = (imm >> 10, (imm >> 4) & 0x3f, imm & 7);
            let all = vm == 0x3f && exp == 7 && lgkm == 0x3f;
            if all || vm != 0x3f {
                write!(f, " vmcnt({vm})")?;
            }
            if all || exp != 7 {
                write!(f, " expcnt({exp})")?;
            }
            if all || lgkm != 0x3f {
                write!(f, " lgkmcnt({lgkm})")?;
            }
            Ok(())
        }
        "s_delay_alu" => {
            let id0 = imm & 0xf;
            let skip = (imm >> 4) & 7;
            let id1 = (imm >> 7) & 0xf;
            let dep = |v: u32| match v {
                0 => "NO_DEP",
                1..=4 => ["VALU_DEP_1", "VALU_DEP_2", "VALU_DEP_3", "VALU_DEP_4"][v as usize - 1],
                5 => "TRANS32_DEP_1",
                6 => "TRANS32_DEP_2",
                7 => "TRANS32_DEP_3",
                8 => "FMA_ACCUM_CYCLE_1",
                9 => "SALU_CYCLE_1",
                10 => "SALU_CYCLE_2",
                11 => "SALU_CYCLE_3",
                _ => "",
            };
            // LLVM's printDelayFlag: the fields that are not zero, bits 11–15 ignored.
            let skips = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"];
            let mut sep = " ";
            if id0 != 0 {
                let n = dep(id0);
                write!(f, "{sep}instid0({})", if n.is_empty() { "/* invalid instid value */" } else { n })?;
                sep = " | ";
            }
            if skip != 0 {
                let n = skips.get(skip as usize).copied().unwrap_or("/* invalid instskip value */");
                write!(f, "{sep}instskip({n})")?;
                sep = " | ";
            }
            if id1 != 0 {
                let n = dep(id1);
                write!(f, "{sep}instid1({})", if n.is_empty() { "/* invalid instid value */" } else { n })?;
                sep = " | ";
            }
            if sep == " " {
                f.write_str(" 0")?;
            }
            Ok(())
        }
        // A message LLVM does not know is its id when that is all the immediate holds, else
        // the number.
        "s_sendmsg" | "s_sendmsghalt" => match msg_name(imm) {
            Some(m) => write!(f, " sendmsg({m})"),
            None if imm <= 0xff => write!(f, " sendmsg({imm}, 0, 0)"),
            None => write!(f, " {imm}"),
        },
        "s_endpgm" if imm == 0 => Ok(()),
        "s_endpgm" => write!(f, " {imm}"),
        "s_waitcnt_depctr" => depctr(f, imm),
        n if n.starts_with("s_branch") || n.starts_with("s_cbranch") => write!(f, " {imm}"),
        "s_set_inst_prefetch_distance" | "s_clause" | "s_round_mode" | "s_wait_event" | "s_ttracedata_imm" => {
            write!(f, " {imm:#x}")
        }
        _ => {
            f.write_str(" ")?;
            u16_imm(f, imm)
        }
    }
}
