//! A dispatch's image state: the descriptor words the CP loaded (`CP_LOAD_STATE6` of samplers,
//! textures and IBOs) decoded into `hcq-ir3`'s [`Image`] and [`Sampler`], each checked before the
//! dispatch runs. Field positions from Mesa's `a6xx_descriptors.xml` (`A6XX_TEX_CONST`,
//! `A6XX_TEX_SAMP`) and `a6xx_enums.xml` (`a6xx_format`, `a6xx_tex_type`, `a6xx_tex_clamp`,
//! `a6xx_tex_filter`).
//!
//! A descriptor the model cannot run faithfully (an unknown format, a type other than 2D, a
//! tiled or multisampled layout, a pitch below the row's bytes, a base outside every GPU object,
//! a filter other than nearest or a wrap mode other than repeat / clamp-to-edge /
//! clamp-to-border) is an error naming the descriptor and what is wrong; the dispatch does not
//! run.

use crate::cp::GpuMemory;
use alloc::format;
use alloc::vec::Vec;
use hcq::{Error, Result};
use hcq_ir3::exec::{Format, Image, Sampler, Wrap};

/// `a6xx_tex_type::A6XX_TEX_2D`.
const A6XX_TEX_2D: u32 = 1;
/// Bytes of one border color entry (Mesa's `struct bcolor_entry`, 128-byte aligned): `fp32[4]`
/// at 0, `ui16[4]` at 16, `si16[4]` at 24, `fp16[4]` at 32, ...
const BCOLOR_ENTRY: u64 = 128;

fn bad(what: &'static str, index: usize, reason: &'static str) -> Error {
    Error::Malformed { what, at: index as u64, reason }
}

/// Decode texture or IBO descriptor `index` (16 dwords) and check that its base lies in GPU
/// memory (texels past it are checked where a kernel reads or writes them). `what` names the kind ("adreno sim: texture descriptor" / "... IBO descriptor").
pub fn image(words: &[u32], index: usize, what: &'static str, mem: &dyn GpuMemory) -> Result<Image> {
    let w = |k: usize| words.get(k).copied().unwrap_or(0);
    // A6XX_TEX_CONST_0: TILE_MODE 0..1, SWIZ_X..W 4..15 (3 bits each), SAMPLES 20..21, FMT 22..29.
    let d0 = w(0);
    if d0 & 3 != 0 {
        return Err(bad(what, index, "TILE_MODE is not linear (tiled layouts are not modelled)"));
    }
    if (d0 >> 20) & 3 != 0 {
        return Err(bad(what, index, "SAMPLES is not 1 (multisampled images are not modelled)"));
    }
    let fmt = (d0 >> 22) & 0xff;
    let format = Format::from_fmt6(fmt).ok_or(bad(
        what,
        index,
        "FMT is not a modelled format (FMT6_16_16_16_16_FLOAT/UINT/SINT, FMT6_32_32_32_32_FLOAT/UINT/SINT, FMT6_16_FLOAT, FMT6_32_FLOAT)",
    ))?;
    let swizzle = [(d0 >> 4) & 7, (d0 >> 7) & 7, (d0 >> 10) & 7, (d0 >> 13) & 7].map(|s| s as u8);
    // A6XX_TEX_CONST_1: WIDTH 0..14, HEIGHT 15..29.
    let (width, height) = (w(1) & 0x7fff, (w(1) >> 15) & 0x7fff);
    // A6XX_TEX_CONST_2: PITCH 7..28 (bytes), TYPE 29..31.
    let (pitch, ty) = ((w(2) >> 7) & 0x3f_ffff, w(2) >> 29);
    if ty != A6XX_TEX_2D {
        return Err(bad(what, index, "TYPE is not A6XX_TEX_2D"));
    }
    if width == 0 || height == 0 {
        return Err(bad(what, index, "WIDTH or HEIGHT is 0"));
    }
    let row = u64::from(width) * u64::from(format.bpp());
    if u64::from(pitch) < row {
        return Err(bad(what, index, "PITCH is smaller than WIDTH × bytes per texel"));
    }
    // A6XX_TEX_CONST_4: BASE_LO 5..31 (shr 5); _5: BASE_HI 0..16.
    let base = u64::from(w(4) & !0x1f) | u64::from(w(5) & 0x1_ffff) << 32;
    // Only the base is checked here. The descriptor's extent may reach past its GPU object, as
    // tinygrad's do: its QCOM runtime takes width and height from the kernel's image dtype, not
    // from the buffer under it (seen in the zoo: an 11520×1 half4 view past the end of its
    // object during tinygrad's local-size search). The hardware fetches only the texels a kernel
    // addresses, so a texel outside GPU memory is a fault at the access (`hcq-ir3`'s exec),
    // naming the lane and the address, not a refusal of the descriptor.
    if mem.read32(base).is_err() {
        return Err(Error::OutOfBounds {
            what: "adreno sim: image base outside every GPU object (address, row bytes)",
            offset: base,
            len: row,
            limit: 0,
        })
        .map_err(|e| e.context(alloc::format!("{what} {index}: base {base:#x}, {width}×{height}, pitch {pitch}")));
    }
    Ok(Image { base, width, height, pitch, format, swizzle })
}

/// Decode sampler `index` (4 dwords), fetching its border color entry from the table at
/// `border_base` (`TPL1_CS_BORDER_COLOR_BASE`) when it clamps to the border.
pub fn sampler(words: &[u32], index: usize, border_base: u64, mem: &dyn GpuMemory) -> Result<Sampler> {
    const WHAT: &str = "adreno sim: sampler";
    let w = |k: usize| words.get(k).copied().unwrap_or(0);
    // A6XX_TEX_SAMP_0: XY_MAG 1..2, XY_MIN 3..4 (A6XX_TEX_NEAREST = 0), WRAP_S 5..7, WRAP_T 8..10.
    if (w(0) >> 1) & 0xf != 0 {
        return Err(bad(WHAT, index, "XY_MAG/XY_MIN is not A6XX_TEX_NEAREST (only nearest filtering is modelled)"));
    }
    let wrap = |v: u32| match v {
        0 => Ok(Wrap::Repeat),
        1 => Ok(Wrap::ClampToEdge),
        3 => Ok(Wrap::ClampToBorder),
        _ => Err(bad(WHAT, index, "WRAP_S/WRAP_T is a mirror mode (not modelled)")),
    };
    let wraps = [wrap((w(0) >> 5) & 7)?, wrap((w(0) >> 8) & 7)?];
    // A6XX_TEX_SAMP_1: UNNORM_COORDS 5.
    let unnorm = (w(1) >> 5) & 1 != 0;
    let mut s = Sampler { wrap: wraps, unnorm, border_f32: [0; 4], border_f16: [0; 4], border_int: [0; 4] };
    if wraps.contains(&Wrap::ClampToBorder) {
        // A6XX_TEX_SAMP_2: BCOLOR 7..31, the entry's byte offset in the table.
        let entry = border_base.wrapping_add(u64::from(w(2) & !0x7f));
        let mut e = [0u32; (BCOLOR_ENTRY / 4) as usize];
        mem.read_words(entry, &mut e[..12]).map_err(|err| {
            err.context(alloc::format!(
                "{WHAT} {index}: border color entry at {entry:#x} (TPL1_CS_BORDER_COLOR_BASE {border_base:#x})"
            ))
        })?;
        s.border_f32 = [e[0], e[1], e[2], e[3]];
        s.border_int = s.border_f32;
        s.border_f16 = [e[8] as u16, (e[8] >> 16) as u16, e[9] as u16, (e[9] >> 16) as u16];
    }
    Ok(s)
}

/// The decoded image state of one dispatch (reused between dispatches).
#[derive(Debug, Default)]
pub struct ImageState {
    pub textures: Vec<Image>,
    pub samplers: Vec<Sampler>,
    pub ibos: Vec<Image>,
}

impl ImageState {
    /// Decode every descriptor the CP passed (see the module docs).
    pub fn load(
        &mut self,
        textures: &[u32],
        samplers: &[u32],
        ibos: &[u32],
        border_base: u64,
        mem: &dyn GpuMemory,
    ) -> Result<()> {
        self.textures.clear();
        self.samplers.clear();
        self.ibos.clear();
        for (k, d) in textures.chunks(16).enumerate() {
            self.textures.push(
                image(d, k, "adreno sim: texture descriptor", mem)
                    .map_err(|e| e.context(format!("texture descriptor {k}")))?,
            );
        }
        for (k, d) in ibos.chunks(16).enumerate() {
            self.ibos.push(
                image(d, k, "adreno sim: IBO descriptor", mem).map_err(|e| e.context(format!("IBO descriptor {k}")))?,
            );
        }
        for (k, d) in samplers.chunks(4).enumerate() {
            self.samplers.push(sampler(d, k, border_base, mem).map_err(|e| e.context(format!("sampler {k}")))?);
        }
        Ok(())
    }
}
