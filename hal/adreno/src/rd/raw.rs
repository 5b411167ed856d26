//! freedreno `.rd` on-disk layouts (Mesa `src/freedreno/common/redump.h`, `decode/rdutil.h`):
//! a flat sequence of `{u32 type, u32 size}` headers, each followed by `size` payload bytes,
//! little-endian.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `enum rd_sect_type` values.
pub mod sect {
    /// `RD_NONE`.
    pub const NONE: u32 = 0;
    /// `RD_TEST`: test name.
    pub const TEST: u32 = 1;
    /// `RD_CMD`: command line / process name.
    pub const CMD: u32 = 2;
    /// `RD_GPUADDR`: `{addr_lo, size_bytes, addr_hi}` of the next `RD_BUFFER_CONTENTS`.
    pub const GPUADDR: u32 = 3;
    /// `RD_CONTEXT`.
    pub const CONTEXT: u32 = 4;
    /// `RD_CMDSTREAM`.
    pub const CMDSTREAM: u32 = 5;
    /// `RD_CMDSTREAM_ADDR`: `{addr_lo, size_dwords, addr_hi}` of a submitted IB.
    pub const CMDSTREAM_ADDR: u32 = 6;
    /// `RD_PARAM`.
    pub const PARAM: u32 = 7;
    /// `RD_FLUSH`.
    pub const FLUSH: u32 = 8;
    /// `RD_PROGRAM`.
    pub const PROGRAM: u32 = 9;
    /// `RD_VERT_SHADER`.
    pub const VERT_SHADER: u32 = 10;
    /// `RD_FRAG_SHADER`.
    pub const FRAG_SHADER: u32 = 11;
    /// `RD_BUFFER_CONTENTS`: bytes of the buffer named by the preceding `RD_GPUADDR`.
    pub const BUFFER_CONTENTS: u32 = 12;
    /// `RD_GPU_ID`: u32 (630).
    pub const GPU_ID: u32 = 13;
    /// `RD_CHIP_ID`: u64 (`0x06030001`).
    pub const CHIP_ID: u32 = 14;
    /// Largest known type.
    pub const MAX: u32 = CHIP_ID;
}

/// A section header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SectionHeader {
    /// `rd_sect_type`.
    pub ty: u32,
    /// Payload bytes.
    pub size: u32,
}

/// `RD_GPUADDR` payload (64-bit form: 12 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GpuAddr {
    /// Address bits 31:0.
    pub addr_lo: u32,
    /// Buffer size in bytes.
    pub size: u32,
    /// Address bits 63:32.
    pub addr_hi: u32,
}

/// `RD_CMDSTREAM_ADDR` payload (64-bit form: 12 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CmdStreamAddr {
    /// Address bits 31:0.
    pub addr_lo: u32,
    /// IB size in dwords.
    pub dwords: u32,
    /// Address bits 63:32.
    pub addr_hi: u32,
}

const _: () = assert!(size_of::<SectionHeader>() == 8);
const _: () = assert!(size_of::<GpuAddr>() == 12);
const _: () = assert!(size_of::<CmdStreamAddr>() == 12);
