//! cat3: three-source ALU (`mad`, `sel`, shift-and-mask).

use super::*;

pub(super) fn cat3(cx: &mut Ctx, wave: &mut Wave, c: &Cat3, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    use Cat3Op::*;
    // sad.s32 is a 32-bit op: Mesa builds 32-bit NIR iadd3 as sad.s32 on full registers (emit_alu:
    // `is_half(src[0]) ? SAD_S16 : SAD_S32`), though the ISA XML derives FULL=false for it ("We
    // think?"), which the decoder (and so the disassembly) follows. Run it on full registers.
    let full_sad;
    let c = if c.op == SadS32 && c.srcs[0].half {
        full_sad = Cat3 {
            srcs: c.srcs.map(|mut o| {
                o.half = false;
                o
            }),
            // the destination's size follows FULL (flipped by the conversion bit) below p0/a0
            dst_half: c.dst.0 <= 0xf7 && !c.dst_half,
            ..*c
        };
        &full_sad
    } else {
        c
    };
    let (kind, signed) = match c.op {
        MadF16 | MadF32 => (Kind::Float, false),
        MadS16 | MadS24 | SadS16 | SadS32 => (Kind::Int, true),
        MadU16 | MadU24 | MadshM16 => (Kind::Int, false),
        SelB16 | SelB32 | Shrm | Shlm | Shrg | Shlg | Andg => (Kind::Bits, false),
        op => return Err(unsupported(pc, op.name())),
    };
    // 16-bit integer and shift-and-mask ops on half sources wrap at 16 bits (`narrow16`); the
    // 24-bit and mixed-16 multiplies produce 32 bits.
    let half16 = c.srcs[0].half && kind != Kind::Float && !matches!(c.op, MadU24 | MadS24 | MadshM16 | SelB16 | SelB32);
    let mut a = [0u32; W];
    let mut b = [0u32; W];
    let mut d = [0u32; W];
    let n = active_len(exec);
    for k in 0..=fl.repeat {
        operand(cx, wave, &c.srcs[0], k, pc, exec, kind, signed, &mut a)?;
        operand(cx, wave, &c.srcs[1], k, pc, exec, kind, signed, &mut b)?;
        operand(cx, wave, &c.srcs[2], k, pc, exec, kind, signed, &mut d)?;
        match c.op {
            MadF16 | MadF32 => {
                for ((x, y), z) in a[..n].iter_mut().zip(&b[..n]).zip(&d[..n]) {
                    let p = ftz(f32::from_bits(*x) * f32::from_bits(*y));
                    *x = ftz(p + f32::from_bits(*z)).to_bits();
                }
            }
            MadU16 | MadS16 => {
                for l in 0..n {
                    a[l] = a[l].wrapping_mul(b[l]).wrapping_add(d[l]);
                }
            }
            MadU24 => {
                for l in 0..n {
                    a[l] = (a[l] & 0xff_ffff).wrapping_mul(b[l] & 0xff_ffff).wrapping_add(d[l]);
                }
            }
            MadS24 => {
                for l in 0..n {
                    let x = ((a[l] << 8) as i32) >> 8;
                    let y = ((b[l] << 8) as i32) >> 8;
                    a[l] = x.wrapping_mul(y).wrapping_add(d[l] as i32) as u32;
                }
            }
            MadshM16 => {
                // NIR imadsh_mix16: ((src1 & 0xffff) · (src2 >> 16)) << 16 + src3.
                for l in 0..n {
                    a[l] = ((a[l] & 0xffff).wrapping_mul(b[l] >> 16) << 16).wrapping_add(d[l]);
                }
            }
            SelB16 | SelB32 => {
                // sel.b32 d, a, c, b = c != 0 ? a : b (src2 is the condition).
                let m = if c.op == SelB16 { 0xffff } else { u32::MAX };
                for l in 0..n {
                    a[l] = if b[l] & m != 0 { a[l] } else { d[l] };
                }
            }
            Shrm => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shr(a[l] & 31) & d[l];
                }
            }
            Shlm => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shl(a[l] & 31) & d[l];
                }
            }
            Shrg => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shr(a[l] & 31) | d[l];
                }
            }
            Shlg => {
                for l in 0..n {
                    a[l] = b[l].wrapping_shl(a[l] & 31) | d[l];
                }
            }
            Andg => {
                for l in 0..n {
                    a[l] = (b[l] & a[l]) | d[l];
                }
            }
            SadS16 | SadS32 => {
                // NIR iadd3 (a + b + c): Mesa's emit_alu builds it as sad.s32 / sad.s16 on GPUs with
                // `has_sad` (ir3_compiler.c: `has_iadd3 = dev_info->a6xx.has_sad`).
                for l in 0..n {
                    a[l] = a[l].wrapping_add(b[l]).wrapping_add(d[l]);
                }
            }
            // The opcodes refused above.
            op => return Err(unsupported(pc, op.name())),
        }
        if half16 {
            narrow16(&mut a[..n], signed);
        }
        store(wave, c.dst.offset(k), c.dst_half, kind == Kind::Float, fl.sat, &mut a, exec);
    }
    Ok(())
}
