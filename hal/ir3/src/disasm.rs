//! [`Instr`] → text in Mesa's syntax (the `<display>` templates of the isaspec XML), and program
//! listings in the form of Mesa's `.asm` files: `NNNN [hi32_lo32] text`, with a label line
//! `NNNN [hi32_lo32] lNNN:` before every branch target.
//!
//! Floats print as C's `%f` (isaspec `float` fields), branch targets as `#lN` labels.

use alloc::string::String;
use core::fmt::{self, Write};

use crate::isa::*;

/// Print one instruction; `index` resolves branch targets to `#lN` labels (a target before
/// the start prints as the raw offset `#-N`, as Mesa does).
pub fn disasm(i: &Instr, index: usize) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_instr(&mut s, i, index, usize::MAX);
    s
}

/// A whole program as Mesa lists it: one `NNNN [hi32_lo32] text` line per instruction, and a
/// label line before each branch target.
pub fn listing(instrs: &[Instr]) -> String {
    // Only in-program targets get a label (as Mesa's pre-pass does).
    let mut targets = alloc::vec![false; instrs.len()];
    for (k, i) in instrs.iter().enumerate() {
        if let Some(t) = i.branch_target(k)
            && t >= 0
            && (t as usize) < instrs.len()
        {
            targets[t as usize] = true;
        }
    }
    let mut s = String::new();
    for (k, i) in instrs.iter().enumerate() {
        let hi = (i.word >> 32) as u32;
        let lo = i.word as u32;
        if targets[k] {
            let _ = writeln!(s, "{k:04} [{hi:08x}_{lo:08x}] l{k}:");
        }
        let _ = write!(s, "{k:04} [{hi:08x}_{lo:08x}] ");
        let _ = write_instr(&mut s, i, k, instrs.len());
        s.push('\n');
    }
    s
}

fn reg(f: &mut impl Write, r: Reg) -> fmt::Result {
    let c = b"xyzw"[r.comp() as usize] as char;
    match r.num() {
        61 => write!(f, "a0.{c}"),
        62 => write!(f, "p0.{c}"),
        n => write!(f, "r{n}.{c}"),
    }
}

/// `r{GPR}.{SWIZ}` without the a0/p0 special cases (XML `#cat6-src`, `#cat6-src-const-or-gpr`).
fn raw_reg(f: &mut impl Write, r: Reg) -> fmt::Result {
    write!(f, "r{}.{}", r.num(), b"xyzw"[r.comp() as usize] as char)
}

fn h(f: &mut impl Write, half: bool) -> fmt::Result {
    if half { f.write_char('h') } else { Ok(()) }
}

fn rel(f: &mut impl Write, file: char, off: i16, zero_short: bool) -> fmt::Result {
    if off == 0 && zero_short { write!(f, "{file}<a0.x>") } else { write!(f, "{file}<a0.x + {off}>") }
}

fn konst(f: &mut impl Write, n: u16) -> fmt::Result {
    write!(f, "c{}.{}", n >> 2, b"xyzw"[(n & 3) as usize] as char)
}

const FLUT_NAMES: [&str; 12] = [
    "(0.0)",
    "(0.5)",
    "(1.0)",
    "(2.0)",
    "(e)",
    "(pi)",
    "(1/pi)",
    "(1/log2(e))",
    "(log2(e))",
    "(1/log2(10))",
    "(log2(10))",
    "(4.0)",
];

fn absneg(f: &mut impl Write, o: &Operand) -> fmt::Result {
    f.write_str(match (o.neg, o.abs) {
        (false, false) => "",
        (true, false) => "(neg)",
        (false, true) => "(abs)",
        (true, true) => "(absneg)",
    })
}

fn r_flag(f: &mut impl Write, r: bool) -> fmt::Result {
    if r { f.write_str("(r)") } else { Ok(()) }
}

/// cat2/cat4 source (XML `#multisrc`).
fn multisrc(f: &mut impl Write, o: &Operand) -> fmt::Result {
    match o.src {
        Src::Reg { reg: r, last } => {
            if last {
                f.write_str("(last)")?;
            }
            absneg(f, o)?;
            r_flag(f, o.r)?;
            h(f, o.half)?;
            reg(f, r)
        }
        Src::Const(n) => {
            absneg(f, o)?;
            r_flag(f, o.r)?;
            h(f, o.half)?;
            konst(f, n)
        }
        Src::RelReg(off) | Src::RelConst(off) => {
            absneg(f, o)?;
            r_flag(f, o.r)?;
            h(f, o.half)?;
            rel(f, if matches!(o.src, Src::RelReg(_)) { 'r' } else { 'c' }, off, true)
        }
        Src::Imm(v) => {
            absneg(f, o)?;
            r_flag(f, o.r)?;
            if o.half { write!(f, "h({v})") } else { write!(f, "{v}") }
        }
        Src::Flut(i) => {
            absneg(f, o)?;
            r_flag(f, o.r)?;
            h(f, o.half)?;
            f.write_str(FLUT_NAMES.get(i as usize).copied().unwrap_or("(?)"))
        }
        Src::Imm32(v) => write!(f, "{v}"),
    }
}

/// cat3 SRC1/SRC3 (XML `#cat3-src`), after the (neg)(r) prefix.
fn cat3_src(f: &mut impl Write, o: &Operand) -> fmt::Result {
    match o.src {
        Src::Reg { reg: r, last } => {
            if last {
                f.write_str("(last)")?;
            }
            h(f, o.half)?;
            reg(f, r)
        }
        Src::Const(n) => {
            h(f, o.half)?;
            konst(f, n)
        }
        Src::RelReg(off) => {
            h(f, o.half)?;
            rel(f, 'r', off, false)
        }
        Src::RelConst(off) => {
            h(f, o.half)?;
            rel(f, 'c', off, false)
        }
        Src::Imm(v) => write!(f, "{v}"),
        Src::Imm32(v) => write!(f, "{v}"),
        Src::Flut(i) => write!(f, "{i}"),
    }
}

fn neg(f: &mut impl Write, n: bool) -> fmt::Result {
    if n { f.write_str("(neg)") } else { Ok(()) }
}

fn cat1_half(t: Type) -> bool {
    t.is_half() || t == Type::U8_32
}

/// C `%f` of an f32 / f16 value.
fn c_float(f: &mut impl Write, v: f64) -> fmt::Result {
    if v.is_nan() {
        f.write_str(if v.is_sign_negative() { "-nan" } else { "nan" })
    } else if v.is_infinite() {
        f.write_str(if v < 0.0 { "-inf" } else { "inf" })
    } else {
        write!(f, "{v:.6}")
    }
}

/// cat1 source (XML `#cat1-immed-src`, `#cat1-const-src`, `#cat1-gpr-src`, relative forms).
fn cat1_src(f: &mut impl Write, c: &Cat1) -> fmt::Result {
    let o = &c.src;
    match o.src {
        Src::Imm32(v) => match c.src_type {
            Type::F16 => {
                f.write_str("h(")?;
                c_float(f, crate::fp::f16_to_f32(v as u16) as f64)?;
                f.write_char(')')
            }
            Type::F32 => {
                f.write_char('(')?;
                c_float(f, f32::from_bits(v) as f64)?;
                f.write_char(')')
            }
            Type::U32 if v > 0x1000 => write!(f, "0x{v:x}"),
            Type::S16 => write!(f, "{}", v as u16 as i16),
            Type::S32 => write!(f, "{}", v as i32),
            _ => write!(f, "{v}"),
        },
        Src::Const(n) => {
            r_flag(f, o.r)?;
            h(f, o.half)?;
            konst(f, n)
        }
        Src::Reg { reg: r, last } => {
            if last {
                f.write_str("(last)")?;
            }
            r_flag(f, o.r)?;
            h(f, o.half)?;
            reg(f, r)
        }
        Src::RelReg(off) => {
            r_flag(f, o.r)?;
            h(f, o.half)?;
            rel(f, 'r', off, true)
        }
        Src::RelConst(off) => {
            r_flag(f, o.r)?;
            h(f, o.half)?;
            rel(f, 'c', off, true)
        }
        Src::Imm(v) => write!(f, "{v}"),
        Src::Flut(i) => write!(f, "{i}"),
    }
}

fn cat1_dst(f: &mut impl Write, d: Dst) -> fmt::Result {
    match d {
        Dst::Reg(r) => reg(f, r),
        Dst::Rel(0) => f.write_str("r<a0.x>"),
        Dst::Rel(off) => write!(f, "r<a0.x + {off}>"),
    }
}

fn rpt(f: &mut impl Write, n: u8) -> fmt::Result {
    if n > 0 { write!(f, "(rpt{n})") } else { Ok(()) }
}

fn flag(f: &mut impl Write, on: bool, s: &str) -> fmt::Result {
    if on { f.write_str(s) } else { Ok(()) }
}

fn offset(f: &mut impl Write, off: i32) -> fmt::Result {
    if off != 0 { write!(f, "{off:+}") } else { Ok(()) }
}

fn uoffset(f: &mut impl Write, off: u8) -> fmt::Result {
    if off != 0 { write!(f, "+{off}") } else { Ok(()) }
}

fn cat6_src(f: &mut impl Write, s: Cat6Src) -> fmt::Result {
    match s {
        Cat6Src::Reg(r) => raw_reg(f, r),
        Cat6Src::Imm(v) => write!(f, "{v}"),
    }
}

fn pred(f: &mut impl Write, inv: bool, comp: u8) -> fmt::Result {
    flag(f, inv, "!")?;
    write!(f, "p0.{}", b"xyzw"[comp as usize & 3] as char)
}

/// isaspec `branch` fields: a label when the target lies inside the program, else the raw
/// signed offset (Mesa `isaspec/decode.c` `display_field`, TYPE_BRANCH).
fn target(f: &mut impl Write, c: &Cat0, index: usize, n: usize) -> fmt::Result {
    let t = index as i64 + c.immed as i64;
    if t >= 0 && (t as u64) < n as u64 { write!(f, "#l{t}") } else { write!(f, "#{}", c.immed) }
}

fn write_instr(f: &mut impl Write, i: &Instr, index: usize, n: usize) -> fmt::Result {
    let fl = &i.flags;
    match &i.body {
        Body::Cat0(c) => {
            use Cat0Op::*;
            flag(f, fl.sy, "(sy)")?;
            flag(f, fl.ss, "(ss)")?;
            let eq = !matches!(c.op, Jump | Call | Bkt | Getone | Shps | Getlast);
            flag(f, fl.eq && eq, "(eq)")?;
            flag(f, fl.jp, "(jp)")?;
            match c.op {
                Nop | End | Ret | Emit | Cut | Chmask | Chsh | FlowRev | Shpe | Predt | Predf | Prede => {
                    rpt(f, fl.repeat)?;
                    f.write_str(c.op.name())
                }
                Kill => {
                    write!(f, "kill ")?;
                    pred(f, c.inv1, c.comp1)
                }
                Jump | Call | Bkt | Getone | Shps | Brax => {
                    write!(f, "{} ", c.op.name())?;
                    target(f, c, index, n)
                }
                Getlast => {
                    write!(f, "getlast.w{} ", 2u32 << c.index)?;
                    target(f, c, index, n)
                }
                Brac => {
                    write!(f, "brac.{} ", c.index)?;
                    target(f, c, index, n)
                }
                Br | Bany | Ball => {
                    write!(f, "{} ", c.op.name())?;
                    pred(f, c.inv1, c.comp1)?;
                    f.write_str(", ")?;
                    target(f, c, index, n)
                }
                Brao | Braa => {
                    write!(f, "{} ", c.op.name())?;
                    pred(f, c.inv1, c.comp1)?;
                    f.write_str(", ")?;
                    pred(f, c.inv2, c.comp2)?;
                    f.write_str(", ")?;
                    target(f, c, index, n)
                }
            }
        }
        Body::Cat1(c) => {
            flag(f, fl.sy, "(sy)")?;
            flag(f, fl.ss, "(ss)")?;
            flag(f, fl.jp, "(jp)")?;
            let st = c.src_type.name();
            let dt = c.dst_type.name();
            let round = ["", "(even)", "(pos_infinity)", "(neg_infinity)"][c.round as usize & 3];
            let dh = cat1_half(c.dst_type);
            let sh = cat1_half(c.src_type);
            match c.op {
                Cat1Op::Mov | Cat1Op::Mova | Cat1Op::Mova1 => {
                    rpt(f, fl.repeat)?;
                    flag(f, fl.ul, "(ul)")?;
                    match c.op {
                        Cat1Op::Mov => {
                            let name = if c.src_type == c.dst_type { "mov" } else { "cov" };
                            write!(f, "{name}.{st}{dt} {round}")?;
                            h(f, dh)?;
                            cat1_dst(f, c.dst)?;
                        }
                        Cat1Op::Mova => write!(f, "mova {round}a0.x")?,
                        _ => write!(f, "mova1 {round}a1.x")?,
                    }
                    f.write_str(", ")?;
                    if c.op != Cat1Op::Mov {
                        r_flag(f, c.src.r)?;
                    }
                    cat1_src(f, c)
                }
                Cat1Op::Swz | Cat1Op::Gat | Cat1Op::Sct => {
                    flag(f, fl.ul, "(ul)")?;
                    let name = match c.op {
                        Cat1Op::Swz => "swz",
                        Cat1Op::Gat => "gat",
                        _ => "sct",
                    };
                    write!(f, "{name}.{st}{dt} {round}")?;
                    let Dst::Reg(d0) = c.dst else { return Ok(()) };
                    let s0 = match c.src.src {
                        Src::Reg { reg, .. } => reg,
                        _ => Reg(0),
                    };
                    let list: [(bool, Reg); 5] = match c.op {
                        Cat1Op::Swz => [(dh, d0), (dh, c.extra[1]), (sh, s0), (sh, c.extra[0]), (false, Reg(0))],
                        Cat1Op::Gat => [(dh, d0), (sh, s0), (sh, c.extra[0]), (sh, c.extra[1]), (sh, c.extra[2])],
                        _ => [(dh, d0), (dh, c.extra[0]), (dh, c.extra[1]), (dh, c.extra[2]), (sh, s0)],
                    };
                    let n = if c.op == Cat1Op::Swz { 4 } else { 5 };
                    for (k, (half, r)) in list[..n].iter().enumerate() {
                        if k > 0 {
                            f.write_str(", ")?;
                        }
                        h(f, *half)?;
                        reg(f, *r)?;
                    }
                    Ok(())
                }
                Cat1Op::Movmsk => {
                    flag(f, fl.ul, "(ul)")?;
                    write!(f, "movmsk.w{} ", (fl.repeat as u32 + 1) * 32)?;
                    cat1_dst(f, c.dst)
                }
            }
        }
        Body::Cat2(c) => {
            alu_prefix(f, fl)?;
            f.write_str(c.op.name())?;
            if let Some(cond) = c.cond {
                write!(f, ".{}", cond.name())?;
            }
            f.write_char(' ')?;
            flag(f, fl.ei, "(ei)")?;
            h(f, c.dst_half)?;
            reg(f, c.dst)?;
            f.write_str(", ")?;
            multisrc(f, &c.src1)?;
            if let Some(s2) = &c.src2 {
                f.write_str(", ")?;
                multisrc(f, s2)?;
            }
            Ok(())
        }
        Body::Cat3(c) => {
            alu_prefix(f, fl)?;
            write!(f, "{} ", c.op.name())?;
            h(f, c.dst_half)?;
            reg(f, c.dst)?;
            let [s1, s2, s3] = &c.srcs;
            f.write_str(", ")?;
            neg(f, s1.neg)?;
            r_flag(f, s1.r)?;
            cat3_src(f, s1)?;
            f.write_str(", ")?;
            neg(f, s2.neg)?;
            r_flag(f, s2.r)?;
            h(f, s2.half)?;
            if let Src::Reg { reg: r, .. } = s2.src {
                reg(f, r)?;
            }
            f.write_str(", ")?;
            neg(f, s3.neg)?;
            r_flag(f, s3.r)?;
            cat3_src(f, s3)
        }
        Body::Cat4(c) => {
            alu_prefix(f, fl)?;
            write!(f, "{} ", c.op.name())?;
            h(f, c.dst_half)?;
            reg(f, c.dst)?;
            f.write_str(", ")?;
            multisrc(f, &c.src)
        }
        Body::Cat5(c) => {
            flag(f, fl.sy, "(sy)")?;
            flag(f, fl.jp, "(jp)")?;
            cat5(f, c)
        }
        Body::Cat6(c) => {
            flag(f, fl.sy, "(sy)")?;
            flag(f, fl.jp, "(jp)")?;
            cat6(f, c)
        }
        Body::Cat7(c) => {
            flag(f, fl.sy, "(sy)")?;
            flag(f, fl.ss, "(ss)")?;
            flag(f, fl.jp, "(jp)")?;
            f.write_str(c.op.name())?;
            match c.op {
                Cat7Op::Bar | Cat7Op::Fence => {
                    flag(f, c.g, ".g")?;
                    flag(f, c.l, ".l")?;
                    flag(f, c.r, ".r")?;
                    flag(f, c.w, ".w")
                }
                Cat7Op::Sleep => f.write_str(if c.bit51 { ".l" } else { ".s" }),
                Cat7Op::Icinv => Ok(()),
                _ => f.write_str(if c.bit51 { ".all" } else { ".shr" }),
            }
        }
        Body::Unsupported(name) => {
            flag(f, fl.sy, "(sy)")?;
            flag(f, fl.jp, "(jp)")?;
            f.write_str(name)
        }
    }
}

/// `{SY}{SS}{JP}{SAT}{REPEAT}{UL}` or `{SY}{SS}{JP}{SAT}(nopN) {UL}` (cat2-4).
fn alu_prefix(f: &mut impl Write, fl: &Flags) -> fmt::Result {
    flag(f, fl.sy, "(sy)")?;
    flag(f, fl.ss, "(ss)")?;
    flag(f, fl.jp, "(jp)")?;
    flag(f, fl.sat, "(sat)")?;
    if fl.nop > 0 {
        write!(f, "(nop{}) ", fl.nop)?;
    } else {
        rpt(f, fl.repeat)?;
    }
    flag(f, fl.ul, "(ul)")
}

/// `{NAME}{3D}{A}{O}{P}{SV}{1D} {TYPE}({WRMASK}){DST_HALF}{DST}{SRC1}{SRC2}{SAMP}{TEX}`
/// (`#instruction-cat5`; isam's bit 50 prints `.v`, bit 18 `.1d` when clear, bit 53 makes SRC2 an
/// immediate offset; the others' bit 50 prints `.s`, bit 53 `.p`).
fn cat5(f: &mut impl Write, c: &Cat5) -> fmt::Result {
    let isam = c.op == Cat5Op::Isam;
    f.write_str(c.op.name())?;
    flag(f, c.d3, ".3d")?;
    flag(f, c.array, ".a")?;
    flag(f, c.offset, ".o")?;
    flag(f, !isam && c.b53, ".p")?;
    flag(f, c.sv, if isam { ".v" } else { ".s" })?;
    flag(f, isam && !c.b18, ".1d")?;
    write!(f, " ({})(", c.ty.name())?;
    for (k, ch) in ['x', 'y', 'z', 'w'].iter().enumerate() {
        if c.wrmask >> k & 1 != 0 {
            f.write_char(*ch)?;
        }
    }
    f.write_char(')')?;
    h(f, c.ty.is_half())?;
    reg(f, c.dst)?;
    f.write_str(", ")?;
    h(f, !c.full)?;
    reg(f, c.src1)?;
    if c.offset || c.op.num_src() > 1 {
        f.write_str(", ")?;
        h(f, !c.full)?;
        reg(f, c.src2)?;
    } else if isam && c.b53 {
        uoffset(f, c.src2.0)?;
    }
    write!(f, ", s#{}, t#{}", c.samp, c.tex)
}

fn cat6(f: &mut impl Write, c: &Cat6) -> fmt::Result {
    match *c {
        Cat6::Ibo { op, typed, d, ty, type_size, val, coord, ibo, offset } => {
            let name = if op == IboOp::Load { "ldib.b" } else { "stib.b" };
            let t = if typed { "typed" } else { "untyped" };
            write!(f, "{name}.{t}.{d}d.{}.{type_size}.imm ", ty.name())?;
            h(f, ty.is_half())?;
            reg(f, val)?;
            f.write_str(", ")?;
            reg(f, coord)?;
            uoffset(f, offset.unwrap_or(0))?;
            write!(f, ", {ibo}")
        }
        Cat6::Ldg { ty, dst, addr, off, size } => {
            write!(f, "ldg.{} ", ty.name())?;
            h(f, ty.is_half())?;
            reg(f, dst)?;
            f.write_str(", g[")?;
            raw_reg(f, addr)?;
            offset(f, off)?;
            write!(f, "], {size}")
        }
        Cat6::LdgA { ty, dst, addr, index, shift, off, size } => {
            write!(f, "ldg.a.{} ", ty.name())?;
            h(f, ty.is_half())?;
            reg(f, dst)?;
            f.write_str(", g[")?;
            raw_reg(f, addr)?;
            addr_a(f, index, shift, off)?;
            write!(f, "], {size}")
        }
        Cat6::Stg { ty, addr, off, src, size } => {
            write!(f, "stg.{} g[", ty.name())?;
            raw_reg(f, addr)?;
            offset(f, off)?;
            f.write_str("], ")?;
            h(f, ty.is_half())?;
            reg(f, src)?;
            write!(f, ", {size}")
        }
        Cat6::StgA { ty, addr, index, shift, off, src, size } => {
            write!(f, "stg.a.{} g[", ty.name())?;
            raw_reg(f, addr)?;
            addr_a(f, index, shift, off)?;
            f.write_str("], ")?;
            h(f, ty.is_half())?;
            reg(f, src)?;
            write!(f, ", {size}")
        }
        Cat6::Ld { space, ty, dst, addr, off, size } => {
            let (name, file) = match space {
                Space::Local => ("ldl", 'l'),
                Space::LocalW => ("ldlw", 'l'),
                Space::Private => ("ldp", 'p'),
            };
            write!(f, "{name}.{} ", ty.name())?;
            if space == Space::Private {
                h(f, ty.is_half())?;
            }
            reg(f, dst)?;
            write!(f, ", {file}[")?;
            reg(f, addr)?;
            offset(f, off)?;
            write!(f, "], {size}")
        }
        Cat6::St { space, ty, addr, off, src, size } => {
            let (name, file) = match space {
                Space::Local => ("stl", 'l'),
                Space::LocalW => ("stlw", 'l'),
                Space::Private => ("stp", 'p'),
            };
            write!(f, "{name}.{} {file}[", ty.name())?;
            reg(f, addr)?;
            offset(f, off)?;
            f.write_str("], ")?;
            reg(f, src)?;
            write!(f, ", {size}")
        }
        Cat6::AtomicL { op, ty, typed, d, type_size, dst, src1, src2 } => {
            let t = if typed { "typed" } else { "untyped" };
            write!(f, "atomic.{}.{t}.{d}d.{}.{type_size}.l ", op.name(), ty.name())?;
            reg(f, dst)?;
            f.write_str(", l[")?;
            cat6_src(f, src1)?;
            f.write_str("], ")?;
            cat6_src(f, src2)
        }
        Cat6::AtomicG { op, ty, typed, d, type_size, dst, src1, src2 } => {
            let t = if typed { "typed" } else { "untyped" };
            write!(f, "atomic.g.{}.{t}.{d}d.{}.{type_size}.g ", op.name(), ty.name())?;
            reg(f, dst)?;
            f.write_str(", ")?;
            cat6_src(f, src1)?;
            f.write_str(", ")?;
            cat6_src(f, src2)
        }
        Cat6::Shfl { mode, ty, dst, src1, src2 } => {
            let m = match mode {
                1 => "xor",
                2 => "up",
                3 => "down",
                6 => "rup",
                _ => "rdown",
            };
            write!(f, "shfl.{m}.{} ", ty.name())?;
            h(f, ty.is_half())?;
            reg(f, dst)?;
            f.write_str(", ")?;
            h(f, ty.is_half())?;
            reg(f, src1)?;
            f.write_str(", ")?;
            cat6_src(f, src2)
        }
        Cat6::GetId { which, ty, dst } => {
            let name = match which {
                GetId::Fiber => "getfiberid",
                GetId::Wave => "getwid",
                GetId::Sp => "getspid",
            };
            write!(f, "{name}.{} ", ty.name())?;
            reg(f, dst)
        }
    }
}

/// `+({SRC2}{OFF})<<{SHIFT}` or `+{SRC2}<<{SHIFT}{OFF}<<2` (ldg.a / stg.a, a6xx).
fn addr_a(f: &mut impl Write, index: Reg, shift: u8, off: u8) -> fmt::Result {
    if shift > 0 {
        f.write_char('+')?;
        reg(f, index)?;
        write!(f, "<<{}", shift + 2)?;
        uoffset(f, off)?;
        f.write_str("<<2")
    } else {
        f.write_str("+(")?;
        reg(f, index)?;
        uoffset(f, off)?;
        f.write_str(")<<2")
    }
}
