//! a6xx packet layouts: `CP_LOAD_STATE6` (the a6xx state-load packet; a5xx has
//! `CP_LOAD_STATE4`, and the state types, sources and blocks are a6xx enums).
//!
//! Source: Mesa `adreno_pm4.xml` (domain `CP_LOAD_STATE6`, enums `a6xx_state_type`,
//! `a6xx_state_src`, `a6xx_state_block`); cross-checked against the XML by `tests/xml.rs`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `CP_LOAD_STATE6` dword 0 (adreno_pm4.xml domain `CP_LOAD_STATE6`, reg32 offset 0).
pub mod load_state6 {
    /// `DST_OFF` low bit.
    pub const DST_OFF_SHIFT: u32 = 0;
    /// `DST_OFF` width.
    pub const DST_OFF_BITS: u32 = 14;
    /// `STATE_TYPE` low bit.
    pub const STATE_TYPE_SHIFT: u32 = 14;
    /// `STATE_TYPE` width.
    pub const STATE_TYPE_BITS: u32 = 2;
    /// `STATE_SRC` low bit.
    pub const STATE_SRC_SHIFT: u32 = 16;
    /// `STATE_SRC` width.
    pub const STATE_SRC_BITS: u32 = 2;
    /// `STATE_BLOCK` low bit.
    pub const STATE_BLOCK_SHIFT: u32 = 18;
    /// `STATE_BLOCK` width.
    pub const STATE_BLOCK_BITS: u32 = 4;
    /// `NUM_UNIT` low bit.
    pub const NUM_UNIT_SHIFT: u32 = 22;
    /// `NUM_UNIT` width.
    pub const NUM_UNIT_BITS: u32 = 10;

    /// `a6xx_state_type::ST6_SHADER`.
    pub const ST6_SHADER: u32 = 0;
    /// `a6xx_state_type::ST6_CONSTANTS`.
    pub const ST6_CONSTANTS: u32 = 1;
    /// `a6xx_state_type::ST6_UAV` (IBO descriptors).
    pub const ST6_UAV: u32 = 3;
    /// `a6xx_state_src::SS6_DIRECT`.
    pub const SS6_DIRECT: u32 = 0;
    /// `a6xx_state_src::SS6_INDIRECT`.
    pub const SS6_INDIRECT: u32 = 2;
    /// `a6xx_state_block::SB6_CS_TEX` (compute textures and samplers).
    pub const SB6_CS_TEX: u32 = 0x5;
    /// `a6xx_state_block::SB6_CS_SHADER`.
    pub const SB6_CS_SHADER: u32 = 0xd;

    /// Dword 0 from its fields (each masked to its width).
    #[inline]
    pub const fn dword0(dst_off: u32, state_type: u32, src: u32, block: u32, num_unit: u32) -> u32 {
        (dst_off & 0x3fff)
            | (state_type & 3) << STATE_TYPE_SHIFT
            | (src & 3) << STATE_SRC_SHIFT
            | (block & 0xf) << STATE_BLOCK_SHIFT
            | (num_unit & 0x3ff) << NUM_UNIT_SHIFT
    }
}

/// `CP_LOAD_STATE6*` payload with `SS6_INDIRECT`: dword 0 and `EXT_SRC_ADDR` (reg64 at 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct LoadState6Indirect {
    /// `DST_OFF | STATE_TYPE | STATE_SRC | STATE_BLOCK | NUM_UNIT`.
    pub d0: u32,
    /// `EXT_SRC_ADDR` low dword.
    pub addr_lo: u32,
    /// `EXT_SRC_ADDR` high dword.
    pub addr_hi: u32,
}

const _: () = assert!(size_of::<LoadState6Indirect>() == 12);
