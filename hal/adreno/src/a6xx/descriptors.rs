//! a6xx texture, IBO and sampler descriptors of an image kernel (IMAGE-SCHEMA.md), built from
//! the image metadata the way tinygrad's `QCOMArgsState` builds them (hardware-proven on a630)
//! and checked against the words the metadata carries.
//!
//! Field positions: Mesa `a6xx_descriptors.xml`, domains `A6XX_TEX_CONST` (16 dwords) and
//! `A6XX_TEX_SAMP` (4 dwords); enum values from `a6xx_enums.xml`. `tests/xml.rs` checks every
//! one against the XML.

use super::program::{Meta, Slot};
use alloc::vec::Vec;
use hcq::{Error, Result};

/// Texture descriptors the a6xx compute stage loads at most: tinygrad loads `min(16, tex_cnt)`
/// units of `SB6_CS_TEX` constants, and 16 is Mesa's a6xx per-stage texture limit.
pub const MAX_TEXTURES: u32 = 16;
/// Samplers at most (Mesa's a6xx per-stage sampler limit; tinygrad's IR3 path has one per
/// texture).
pub const MAX_SAMPLERS: u32 = 16;
/// IBOs at most (`SP_CS_CONFIG.NUAV`, 7 bits).
pub const MAX_IBOS: u32 = 127;
/// Bytes of a texture or IBO descriptor (`A6XX_TEX_CONST`, 16 dwords).
pub const TEX_BYTES: u32 = 64;
/// Bytes of a sampler (`A6XX_TEX_SAMP`, 4 dwords).
pub const SAMP_BYTES: u32 = 16;

/// `A6XX_TEX_CONST` dword fields (low bit, width).
pub mod tex_const {
    /// Dword 0 `SWIZ_X` (`a6xx_tex_swiz`).
    pub const SWIZ_X: (u32, u32) = (4, 3);
    /// Dword 0 `SWIZ_Y`.
    pub const SWIZ_Y: (u32, u32) = (7, 3);
    /// Dword 0 `SWIZ_Z`.
    pub const SWIZ_Z: (u32, u32) = (10, 3);
    /// Dword 0 `SWIZ_W`.
    pub const SWIZ_W: (u32, u32) = (13, 3);
    /// Dword 0 `FMT` (`a6xx_format`).
    pub const FMT: (u32, u32) = (22, 8);
    /// Dword 1 `WIDTH`.
    pub const WIDTH: (u32, u32) = (0, 15);
    /// Dword 1 `HEIGHT`.
    pub const HEIGHT: (u32, u32) = (15, 15);
    /// Dword 2 `PITCHALIGN`: log2(pitch alignment / 64).
    pub const PITCHALIGN: (u32, u32) = (0, 4);
    /// Dword 2 `PITCH` (bytes).
    pub const PITCH: (u32, u32) = (7, 22);
    /// Dword 2 `TYPE` (`a6xx_tex_type`).
    pub const TYPE: (u32, u32) = (29, 3);
    /// Dword 6 `PLANE_PITCH`.
    pub const PLANE_PITCH: (u32, u32) = (8, 24);
    /// `a6xx_tex_swiz::A6XX_TEX_X` .. `A6XX_TEX_W` (the enum is not in ../shared/reference/adreno;
    /// tinygrad writes swiz 0, 1, 2, 3).
    pub const SWIZ_XYZW: [u32; 4] = [0, 1, 2, 3];
    /// `a6xx_tex_type::A6XX_TEX_2D`.
    pub const A6XX_TEX_2D: u32 = 1;
    /// `a6xx_format::FMT6_16_16_16_16_FLOAT`.
    pub const FMT6_16_16_16_16_FLOAT: u32 = 0x62;
    /// `a6xx_format::FMT6_32_32_32_32_FLOAT`.
    pub const FMT6_32_32_32_32_FLOAT: u32 = 0x82;
}

/// `A6XX_TEX_SAMP` dword fields (low bit, width).
pub mod tex_samp {
    /// Dword 0 `WRAP_S` (`a6xx_tex_clamp`).
    pub const WRAP_S: (u32, u32) = (5, 3);
    /// Dword 0 `WRAP_T`.
    pub const WRAP_T: (u32, u32) = (8, 3);
    /// Dword 0 `WRAP_R`.
    pub const WRAP_R: (u32, u32) = (11, 3);
    /// Dword 1 `CUBEMAPSEAMLESSFILTOFF`.
    pub const CUBEMAPSEAMLESSFILTOFF: (u32, u32) = (4, 1);
    /// Dword 1 `UNNORM_COORDS`.
    pub const UNNORM_COORDS: (u32, u32) = (5, 1);
    /// `a6xx_tex_clamp::A6XX_TEX_CLAMP_TO_BORDER` (the enum is not in ../shared/reference/adreno; the
    /// value is tinygrad's `mesa.A6XX_TEX_CLAMP_TO_BORDER`, from Mesa's generated headers).
    pub const A6XX_TEX_CLAMP_TO_BORDER: u32 = 3;
}

const fn f(field: (u32, u32), v: u32) -> u32 {
    (v & ((1u32 << field.1) - 1)) << field.0
}

fn fits(field: (u32, u32), v: u32) -> bool {
    u64::from(v) < 1u64 << field.1
}

/// The element type of an image: `(itemsize, a6xx format)`.
fn format(name: &str) -> Option<(u32, u32)> {
    match name {
        "float16" => Some((2, tex_const::FMT6_16_16_16_16_FLOAT)),
        "float32" => Some((4, tex_const::FMT6_32_32_32_32_FLOAT)),
        _ => None,
    }
}

/// A texture (`ibo` false) or IBO descriptor of a 2D RGBA image, the address dwords 4 and 5
/// zero, as tinygrad's `QCOMArgsState._tex` writes it: dword 0 the format (a texture also the
/// identity swizzle and bit 3, which the XML does not name and tinygrad sets), dword 1 the
/// size, dword 2 type 2D, pitch and `PITCHALIGN = ctz(pitch) − 6`, dword 6 `PLANE_PITCH =
/// 0x400000`, dword 7 = 13 (tinygrad's value; the XML's `A6XX_TEX_CONST_7` is the flag-buffer
/// address low bits).
pub fn image_words(fmt: u32, width: u32, height: u32, pitch: u32, ibo: bool) -> [u32; 16] {
    use tex_const as t;
    let mut w = [0u32; 16];
    w[0] = f(t::FMT, fmt);
    if !ibo {
        w[0] |= 0x8
            | f(t::SWIZ_X, t::SWIZ_XYZW[0])
            | f(t::SWIZ_Y, t::SWIZ_XYZW[1])
            | f(t::SWIZ_Z, t::SWIZ_XYZW[2])
            | f(t::SWIZ_W, t::SWIZ_XYZW[3]);
    }
    w[1] = f(t::WIDTH, width) | f(t::HEIGHT, height);
    w[2] = f(t::TYPE, t::A6XX_TEX_2D) | f(t::PITCH, pitch) | f(t::PITCHALIGN, pitch.trailing_zeros().saturating_sub(6));
    w[6] = f(t::PLANE_PITCH, 0x40_0000);
    w[7] = 13;
    w
}

/// The sampler tinygrad's IR3 path writes for every texture: clamp to border in S, T and R,
/// unnormalized coordinates, seamless cube-map filtering off.
pub fn sampler_words() -> [u32; 4] {
    use tex_samp as s;
    let c = s::A6XX_TEX_CLAMP_TO_BORDER;
    [
        f(s::WRAP_S, c) | f(s::WRAP_T, c) | f(s::WRAP_R, c),
        f(s::UNNORM_COORDS, 1) | f(s::CUBEMAPSEAMLESSFILTOFF, 1),
        0,
        0,
    ]
}

fn bad(what: &'static str, at: u64, reason: &'static str) -> Error {
    Error::Malformed { what, at, reason }
}

/// Check `m`'s descriptors against the signature (`is_image`: which of the buffers are images;
/// `seen_args`: the launch arguments the plain buffers' address slots take) and the kernarg
/// block of `kernarg_bytes`; push the descriptor slots onto `slots` (offset, bytes, slot).
/// Returns the counts and offsets, and per image its launch argument and the bytes its buffer
/// must hold.
pub(crate) fn check(
    m: &Meta,
    is_image: &[bool],
    seen_args: u64,
    n_args: u32,
    kernarg_bytes: u32,
    slots: &mut Vec<(u32, u32, Slot)>,
) -> Result<(super::program::Descriptors, Vec<(u32, u64)>)> {
    let d = &m.descriptors;
    for (what, n, max) in [
        ("adreno descriptors.tex_cnt: more textures than the a6xx compute stage loads (16)", d.tex_cnt, MAX_TEXTURES),
        ("adreno descriptors.samp_cnt: more samplers than 16", d.samp_cnt, MAX_SAMPLERS),
        ("adreno descriptors.ibo_cnt: more IBOs than SP_CS_CONFIG.NUAV holds (127)", d.ibo_cnt, MAX_IBOS),
    ] {
        if n > max {
            return Err(Error::LimitExceeded { what, value: n.into(), limit: max.into() });
        }
    }
    let n_images = is_image.iter().filter(|&&i| i).count();
    if d.images.len() != n_images {
        return Err(Error::Mismatch {
            what: "adreno descriptors.images count vs the signature's image parameters",
            expected: n_images as u64,
            found: d.images.len() as u64,
        });
    }
    // Regions of the kernarg block: every descriptor inside it, 16-byte aligned (64 for
    // textures: SP_CS_TEXMEMOBJ_BASE align="64"; SP_CS_UAV_BASE, SP_CS_SAMPLER_BASE align="16").
    for (what, n, off, each, align) in [
        ("adreno descriptors.tex_off (texture descriptors)", d.tex_cnt, d.tex_off, TEX_BYTES, 64),
        ("adreno descriptors.ibo_off (IBO descriptors)", d.ibo_cnt, d.ibo_off, TEX_BYTES, 16),
        ("adreno descriptors.samp_off (samplers)", d.samp_cnt, d.samp_off, SAMP_BYTES, 16),
    ] {
        if n == 0 {
            continue;
        }
        if !off.is_multiple_of(align) {
            return Err(Error::Misaligned { what, value: off.into(), align: align.into() });
        }
        let len = u64::from(n) * u64::from(each);
        if u64::from(off) + len > u64::from(kernarg_bytes) {
            return Err(Error::OutOfBounds { what, offset: off.into(), len, limit: kernarg_bytes.into() })
                .map_err(|e| e.context("a descriptor outside the kernarg block (consts.kernarg_alloc_size)"));
        }
    }
    let (mut tex_seen, mut ibo_seen, mut slot_seen, mut args) = (0u128, 0u128, 0u64, seen_args);
    let mut images = Vec::with_capacity(n_images);
    for (k, im) in d.images.iter().enumerate() {
        let ctx = |e: Error| e.context(alloc::format!("descriptors.images[{k}] (slot {})", im.slot));
        let r = (|| -> Result<()> {
            if !is_image.get(im.slot as usize).copied().unwrap_or(false) || slot_seen >> im.slot & 1 != 0 {
                return Err(Error::OutOfBounds {
                    what: "adreno descriptors.images[].slot: not an image parameter of the signature, or twice",
                    offset: im.slot.into(),
                    len: 1,
                    limit: is_image.len() as u64,
                });
            }
            slot_seen |= 1 << im.slot;
            let arg = im.arg.unwrap_or(im.slot);
            if arg >= n_args || args >> arg & 1 != 0 {
                return Err(Error::OutOfBounds {
                    what: "adreno descriptors.images[].arg: a launch argument outside the buffers, or taken twice",
                    offset: arg.into(),
                    len: 1,
                    limit: n_args.into(),
                });
            }
            args |= 1 << arg;
            let (itemsize, fmt) = format(&im.format).ok_or(bad(
                "adreno descriptors.images[].format",
                0,
                "unknown image format (float16 or float32)",
            ))?;
            let sig = &m.signature[im.slot as usize];
            if sig.dtype.as_deref() != Some(im.format.as_str()) {
                return Err(bad("adreno descriptors.images[].format", 0, "differs from the signature's dtype"));
            }
            if im.width == 0
                || im.height == 0
                || !fits(tex_const::WIDTH, im.width)
                || !fits(tex_const::HEIGHT, im.height)
            {
                return Err(Error::InvalidArgument {
                    what: "adreno descriptors.images[] width/height: 0, or beyond TEX_CONST_1's 15-bit fields",
                    value: u64::from(im.width) << 32 | u64::from(im.height),
                });
            }
            let want_shape = serde_json::json!([im.height, im.width, 4]);
            if sig.shape.as_ref() != Some(&want_shape) {
                return Err(bad("adreno signature shape of an image", 0, "not [height, width, 4] of its images entry"));
            }
            let row = u64::from(im.width) * 4 * u64::from(itemsize);
            if u64::from(im.pitch) < row {
                return Err(Error::LimitExceeded {
                    what: "adreno descriptors.images[].pitch below width x 4 x itemsize (a row would overlap the next)",
                    value: im.pitch.into(),
                    limit: row,
                });
            }
            if !im.pitch.is_multiple_of(64) || !fits(tex_const::PITCH, im.pitch) {
                return Err(Error::Misaligned {
                    what: "adreno descriptors.images[].pitch: a multiple of 64 (PITCHALIGN) within TEX_CONST_2.PITCH",
                    value: im.pitch.into(),
                    align: 64,
                });
            }
            let mut bind = |idx: Option<u32>,
                            words: &Option<[u32; 16]>,
                            cnt: u32,
                            off: u32,
                            ibo: bool,
                            seen: &mut u128|
             -> Result<()> {
                let kind = if ibo { "ibo" } else { "texture" };
                let Some(i) = idx else {
                    return match words {
                        Some(_) => Err(bad("adreno descriptors.images[]", 0, "descriptor words without an index"))
                            .map_err(|e| e.context(kind)),
                        None => Ok(()),
                    };
                };
                if i >= cnt || *seen >> i & 1 != 0 {
                    return Err(Error::OutOfBounds {
                        what: "adreno descriptors.images[]: texture/IBO index outside tex_cnt/ibo_cnt, or twice",
                        offset: i.into(),
                        len: 1,
                        limit: cnt.into(),
                    })
                    .map_err(|e| e.context(kind));
                }
                *seen |= 1 << i;
                let want = image_words(fmt, im.width, im.height, im.pitch, ibo);
                match words {
                    Some(w) if *w == want => {}
                    Some(w) => {
                        let j = (0..16).find(|&j| w[j] != want[j]).unwrap_or(0);
                        return Err(Error::Mismatch {
                            what: "adreno descriptors.images[] descriptor word vs the one built from format/width/height/pitch",
                            expected: want[j].into(),
                            found: w[j].into(),
                        })
                        .map_err(|e| e.context(alloc::format!("{kind} dword {j}")));
                    }
                    None => {
                        return Err(bad("adreno descriptors.images[]", 0, "an index without descriptor words"))
                            .map_err(|e| e.context(kind));
                    }
                }
                slots.push((off + TEX_BYTES * i, TEX_BYTES, Slot::Image { arg, words: want }));
                Ok(())
            };
            bind(im.texture, &im.tex_words, d.tex_cnt, d.tex_off, false, &mut tex_seen)?;
            bind(im.ibo, &im.ibo_words, d.ibo_cnt, d.ibo_off, true, &mut ibo_seen)?;
            if im.texture.is_none() && im.ibo.is_none() {
                return Err(bad("adreno descriptors.images[]", 0, "neither a texture nor an IBO"));
            }
            images.push((arg, u64::from(im.height) * u64::from(im.pitch)));
            Ok(())
        })();
        r.map_err(ctx)?;
    }
    if tex_seen.count_ones() != d.tex_cnt || ibo_seen.count_ones() != d.ibo_cnt {
        return Err(Error::Mismatch {
            what: "adreno descriptors: textures / IBOs named by images[] vs tex_cnt / ibo_cnt",
            expected: u64::from(d.tex_cnt) << 32 | u64::from(d.ibo_cnt),
            found: u64::from(tex_seen.count_ones()) << 32 | u64::from(ibo_seen.count_ones()),
        });
    }
    if d.sampler_words.len() != d.samp_cnt as usize {
        return Err(Error::Mismatch {
            what: "adreno descriptors.sampler_words count vs samp_cnt",
            expected: d.samp_cnt.into(),
            found: d.sampler_words.len() as u64,
        });
    }
    let want = sampler_words();
    for (i, w) in d.sampler_words.iter().enumerate() {
        if *w != want {
            return Err(bad("adreno descriptors.sampler_words", i as u64, "not tinygrad's clamp-to-border sampler"));
        }
        slots.push((d.samp_off + SAMP_BYTES * i as u32, SAMP_BYTES, Slot::Sampler { words: want }));
    }
    let desc = super::program::Descriptors {
        tex_cnt: d.tex_cnt,
        ibo_cnt: d.ibo_cnt,
        samp_cnt: d.samp_cnt,
        tex_off: d.tex_off,
        ibo_off: d.ibo_off,
        samp_off: d.samp_off,
    };
    Ok((desc, images))
}
