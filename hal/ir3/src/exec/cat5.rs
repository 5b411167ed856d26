//! cat5: texture fetches (`isam`, `isaml`, `sam`) through the dispatch's texture and sampler
//! descriptors (see [`super::image`] for the addressing and conversion model).

use super::image::ImgError;
use super::*;

/// Map an image access error of lane `l` to the dispatch's error.
#[allow(clippy::too_many_arguments)]
pub(super) fn img_err(
    cx: &Ctx,
    e: ImgError,
    pc: usize,
    w: usize,
    l: usize,
    write: bool,
    what: &'static str,
    slot: u32,
) -> ExecError {
    match e {
        ImgError::Fault(addr) => {
            let (group, lane) = cx.site(w, l);
            ExecError::Fault { index: pc, group, lane, addr, space: MemSpace::Global, write }
        }
        ImgError::TypeMismatch => ExecError::Image {
            index: pc,
            what,
            slot,
            reason: "the instruction's type and the image format differ in kind (float vs integer)",
        },
    }
}

pub(super) fn cat5(cx: &mut Ctx, wave: &mut Wave, c: &Cat5, pc: usize, exec: u64, w: usize) -> Res<()> {
    // Layered/3D coordinates, texel offsets and isam's immediate-offset form are not modelled.
    if c.d3 || c.array || c.offset || c.b53 || c.sv {
        return Err(unsupported(pc, CAT5_REFUSED));
    }
    let tex = *cx.images.textures.get(c.tex as usize).ok_or(ExecError::Image {
        index: pc,
        what: "texture t#",
        slot: c.tex.into(),
        reason: "no such texture descriptor was loaded (SP_CS_CONFIG NTEX / CP_LOAD_STATE6 SB6_CS_TEX)",
    })?;
    let samp = *cx.images.samplers.get(c.samp as usize).ok_or(ExecError::Image {
        index: pc,
        what: "sampler s#",
        slot: c.samp.into(),
        reason: "no such sampler was loaded (SP_CS_CONFIG NSAMP / CP_LOAD_STATE6 SB6_CS_TEX)",
    })?;
    let half_dst = c.ty.is_half();
    let border = samp.border(tex.format, c.ty);
    let bpp = tex.format.bpp() as usize;
    for l in lanes_of(exec) {
        let coord = |k: u8| -> u32 {
            let r = c.src1.0.wrapping_add(k);
            if c.full { wave.regs[r as usize][l] } else { wave.hget(r, l) }
        };
        let (x, y) = match c.op {
            Cat5Op::Isam | Cat5Op::Isaml => {
                let v = |k| if c.full { coord(k) as i32 as i64 } else { coord(k) as u16 as i16 as i64 };
                (v(0), v(1))
            }
            Cat5Op::Sam => {
                let v = |k, size: u32| {
                    let f = if c.full { f32::from_bits(coord(k)) } else { f16_to_f32(coord(k) as u16) };
                    let t = if samp.unnorm { f } else { f * size as f32 };
                    // Nearest filtering: the texel whose square holds the coordinate.
                    libm::floorf(t) as i64
                };
                (v(0, tex.width), v(1, tex.height))
            }
        };
        let texel = match (samp.wrap(0, x, tex.width), samp.wrap(1, y, tex.height)) {
            (Some(x), Some(y)) => {
                // PANIC: wrap() returns coordinates inside the image.
                let a = tex.texel_addr(x, y).expect("wrapped inside the image");
                let mut buf = [0u8; 16];
                cx.mem
                    .read(a, &mut buf[..bpp])
                    .map_err(|_| img_err(cx, ImgError::Fault(a), pc, w, l, false, "texture t#", c.tex.into()))?;
                tex.decode(&buf[..bpp], c.ty)
                    .map_err(|e| img_err(cx, e, pc, w, l, false, "texture t#", c.tex.into()))?
            }
            _ => border,
        };
        for comp in 0..4u8 {
            if c.wrmask >> comp & 1 == 0 {
                continue;
            }
            let v = match tex.swizzle[comp as usize] {
                s @ 0..=3 => texel[s as usize],
                4 => 0,
                _ => match c.ty {
                    Type::F32 => 1.0f32.to_bits(),
                    Type::F16 => f32_to_f16(1.0) as u32,
                    _ => 1,
                },
            };
            let r = c.dst.0.wrapping_add(comp);
            if half_dst {
                wave.hset(r, l, v);
            } else {
                wave.regs[r as usize][l] = v;
            }
        }
    }
    Ok(())
}
