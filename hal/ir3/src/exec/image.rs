//! Images as the texture unit and the IBO path see them: what a dispatch's texture, IBO and
//! sampler descriptors say (the device decodes the descriptor words; see
//! `hcq-sim-adreno`'s `images` module), and the texel arithmetic of cat5 fetches and cat6
//! `ldib`/`stib`.
//!
//! Model (a6xx, linear 2D images only, one level, one sample):
//! - Texel `(x, y)` of an image lies at `base + y·pitch + x·bpp` (`A6XX_TEX_CONST` PITCH in bytes,
//!   TILE_MODE linear).
//! - A texture fetch resolves coordinates outside the image by the sampler's wrap mode per axis:
//!   `CLAMP_TO_BORDER` returns the border color, `CLAMP_TO_EDGE` clamps, `REPEAT` wraps
//!   (the only modes modelled). Filtering is nearest (the only filter modelled); `sam` with
//!   normalized coordinates scales by the size first, with `UNNORM_COORDS` takes texel units.
//! - `ldib` outside the image reads zeros and `stib` outside the image is dropped (Vulkan's robust
//!   image access, which turnip exposes on a6xx without lowering it in the shader).
//! - Format conversion: a float format read into an f32/f16 result converts exactly (f16 → f32)
//!   or rounds to nearest even (f32 → f16); a store of f32 values into a 16-bit float format
//!   rounds to nearest even. Integer formats move raw bits (zero- or sign-extended, truncated on
//!   store). A float format read or written with an integer type (or the reverse) is refused.

use crate::fp::{f16_to_f32, f32_to_f16};
use crate::isa::Type;

/// Texel formats modelled (`a6xx_format`, a6xx_enums.xml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `FMT6_16_16_16_16_FLOAT` (0x62).
    Rgba16Float,
    /// `FMT6_16_16_16_16_UINT` (0x63).
    Rgba16Uint,
    /// `FMT6_16_16_16_16_SINT` (0x64).
    Rgba16Sint,
    /// `FMT6_32_32_32_32_FLOAT` (0x82).
    Rgba32Float,
    /// `FMT6_32_32_32_32_UINT` (0x83).
    Rgba32Uint,
    /// `FMT6_32_32_32_32_SINT` (0x84).
    Rgba32Sint,
    /// `FMT6_16_FLOAT` (0x17).
    R16Float,
    /// `FMT6_32_FLOAT` (0x4a).
    R32Float,
}

impl Format {
    /// The format of `a6xx_format` value `v`, if modelled.
    pub const fn from_fmt6(v: u32) -> Option<Format> {
        Some(match v {
            0x62 => Format::Rgba16Float,
            0x63 => Format::Rgba16Uint,
            0x64 => Format::Rgba16Sint,
            0x82 => Format::Rgba32Float,
            0x83 => Format::Rgba32Uint,
            0x84 => Format::Rgba32Sint,
            0x17 => Format::R16Float,
            0x4a => Format::R32Float,
            _ => return None,
        })
    }
    /// Components stored per texel.
    pub const fn components(self) -> u32 {
        match self {
            Format::R16Float | Format::R32Float => 1,
            _ => 4,
        }
    }
    /// Bytes per component.
    pub const fn component_bytes(self) -> u32 {
        match self {
            Format::Rgba16Float | Format::Rgba16Uint | Format::Rgba16Sint | Format::R16Float => 2,
            _ => 4,
        }
    }
    /// Bytes per texel.
    pub const fn bpp(self) -> u32 {
        self.components() * self.component_bytes()
    }
    /// A float format.
    pub const fn is_float(self) -> bool {
        matches!(self, Format::Rgba16Float | Format::Rgba32Float | Format::R16Float | Format::R32Float)
    }
    const fn signed(self) -> bool {
        matches!(self, Format::Rgba16Sint | Format::Rgba32Sint)
    }
}

/// A texture or IBO: a linear 2D image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    /// GPU address of texel (0, 0).
    pub base: u64,
    pub width: u32,
    pub height: u32,
    /// Row pitch in bytes.
    pub pitch: u32,
    pub format: Format,
    /// Result component `c` takes texel component `swizzle[c]` (0..3 = x..w, 4 = 0, 5 = 1;
    /// `a6xx_tex_swiz`). IBO accesses ignore it.
    pub swizzle: [u8; 4],
}

/// A wrap (clamp) mode of one axis (`a6xx_tex_clamp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// `A6XX_TEX_REPEAT` (0).
    Repeat,
    /// `A6XX_TEX_CLAMP_TO_EDGE` (1).
    ClampToEdge,
    /// `A6XX_TEX_CLAMP_TO_BORDER` (3).
    ClampToBorder,
}

/// A sampler (`A6XX_TEX_SAMP`), with its border color already fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampler {
    /// WRAP_S, WRAP_T (x, y).
    pub wrap: [Wrap; 2],
    /// UNNORM_COORDS: `sam` coordinates are in texels.
    pub unnorm: bool,
    /// The border color as f32 bits (float formats) per component.
    pub border_f32: [u32; 4],
    /// The border color as 16-bit float bits per component (read by 16-bit float formats).
    pub border_f16: [u16; 4],
    /// The border color as integers (read by integer formats).
    pub border_int: [u32; 4],
}

/// The image state of one dispatch: descriptors indexed by `t#`, `s#` and the IBO index.
#[derive(Clone, Copy, Debug, Default)]
pub struct Images<'a> {
    pub textures: &'a [Image],
    pub samplers: &'a [Sampler],
    pub ibos: &'a [Image],
}

/// Why an image access cannot be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ImgError {
    /// The result/value type does not match the format's kind (float vs integer).
    TypeMismatch,
    /// A global-memory fault at this address.
    Fault(u64),
}

impl Image {
    /// Byte address of texel (x, y), when inside the image.
    pub fn texel_addr(&self, x: i64, y: i64) -> Option<u64> {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return None;
        }
        Some(self.base + y as u64 * u64::from(self.pitch) + x as u64 * u64::from(self.format.bpp()))
    }

    /// Decode a texel's bytes into 4 components in the result type's form: f32 bits for float
    /// results (f16 bits for half float results), integers otherwise. Missing components read
    /// as 0 (x) and 1 (w), as OpenGL's texel-to-RGBA rule.
    pub(crate) fn decode(&self, bytes: &[u8], ty: Type) -> Result<[u32; 4], ImgError> {
        let float_ty = matches!(ty, Type::F16 | Type::F32);
        if float_ty != self.format.is_float() {
            return Err(ImgError::TypeMismatch);
        }
        let cb = self.format.component_bytes() as usize;
        let mut out = [0u32; 4];
        for (c, o) in out.iter_mut().enumerate() {
            if c as u32 >= self.format.components() {
                *o = if c == 3 { if float_ty { 1.0f32.to_bits() } else { 1 } } else { 0 };
                if c == 3 && ty == Type::F16 {
                    *o = f32_to_f16(1.0) as u32;
                }
                continue;
            }
            let b = &bytes[c * cb..c * cb + cb];
            let raw = if cb == 2 {
                u32::from(u16::from_le_bytes([b[0], b[1]]))
            } else {
                u32::from_le_bytes([b[0], b[1], b[2], b[3]])
            };
            *o = match (self.format.is_float(), cb, ty) {
                (true, 2, Type::F16) => raw,
                (true, 2, _) => f16_to_f32(raw as u16).to_bits(),
                (true, _, Type::F16) => f32_to_f16(f32::from_bits(raw)) as u32,
                (true, _, _) => raw,
                (false, 2, _) if self.format.signed() => raw as u16 as i16 as i32 as u32,
                (false, _, _) => raw,
            };
        }
        Ok(out)
    }

    /// Encode 4 values of type `ty` (f32 bits, f16 bits, or integers) as a texel.
    pub(crate) fn encode(&self, vals: &[u32; 4], ty: Type, out: &mut [u8]) -> Result<(), ImgError> {
        let float_ty = matches!(ty, Type::F16 | Type::F32);
        if float_ty != self.format.is_float() {
            return Err(ImgError::TypeMismatch);
        }
        let cb = self.format.component_bytes() as usize;
        for c in 0..self.format.components() as usize {
            let v = vals[c];
            let raw = match (self.format.is_float(), cb, ty) {
                (true, 2, Type::F16) => v & 0xffff,
                (true, 2, _) => f32_to_f16(f32::from_bits(v)) as u32,
                (true, _, Type::F16) => f16_to_f32(v as u16).to_bits(),
                _ => v,
            };
            out[c * cb..c * cb + cb].copy_from_slice(&raw.to_le_bytes()[..cb]);
        }
        Ok(())
    }
}

impl Sampler {
    /// The border color for `format` read as type `ty`.
    pub(crate) fn border(&self, format: Format, ty: Type) -> [u32; 4] {
        let mut out = [0u32; 4];
        for (c, o) in out.iter_mut().enumerate() {
            *o = if !format.is_float() {
                self.border_int[c]
            } else if format.component_bytes() == 2 {
                let h = self.border_f16[c];
                if ty == Type::F16 { u32::from(h) } else { f16_to_f32(h).to_bits() }
            } else {
                let f = self.border_f32[c];
                if ty == Type::F16 { f32_to_f16(f32::from_bits(f)) as u32 } else { f }
            };
        }
        out
    }

    /// Resolve coordinate `v` of axis `axis` (0 = x, 1 = y) of an image `size` texels long:
    /// `None` means the border color.
    pub(crate) fn wrap(&self, axis: usize, v: i64, size: u32) -> Option<i64> {
        let n = i64::from(size.max(1));
        match self.wrap[axis] {
            Wrap::ClampToBorder => (0..n).contains(&v).then_some(v),
            Wrap::ClampToEdge => Some(v.clamp(0, n - 1)),
            Wrap::Repeat => Some(v.rem_euclid(n)),
        }
    }
}
