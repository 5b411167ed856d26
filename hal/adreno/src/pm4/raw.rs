//! PM4 packet layouts (a5xx and later): the two header words and the payloads of the
//! generation-neutral packets we emit, as plain bitfield and zerocopy types, apart from the
//! encoding logic. Packets whose layout belongs to one generation (`CP_LOAD_STATE6`) live in
//! that generation's module ([`crate::a6xx::packets`]).
//!
//! Source: Mesa `adreno_pm4.xml` (domains `CP_*`) and `freedreno_pm4.h` (header formats); see
//! `docs/adreno.md` (a). Every position here is cross-checked against the XML by
//! `tests/xml.rs`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `CP_TYPE4_PKT`: bits 31:28 of a TYPE4 header (adreno_pm4.xml `adreno_pm4_packet_type`).
pub const TYPE4_PKT: u32 = 0x4000_0000;
/// `CP_TYPE7_PKT`: bits 31:28 of a TYPE7 header.
pub const TYPE7_PKT: u32 = 0x7000_0000;

/// Odd parity of `v`: the bit that makes the count of set bits in `v` plus itself odd
/// (freedreno_pm4.h `pm4_odd_parity_bit`).
#[inline]
pub const fn odd_parity(v: u32) -> u32 {
    let mut v = v;
    v ^= v >> 16;
    v ^= v >> 8;
    v ^= v >> 4;
    v &= 0xf;
    (!0x6996u32 >> v) & 1
}

/// A TYPE4 header: write `count` registers from `reg` on.
///
/// Layout: `count[6:0] | parity(count)<<7 | reg[25:8] | parity(reg)<<27 | 0x4<<28`. The
/// register field is 18 bits as writers use it (readers accept 19, bit 26, which is always 0
/// from our writer and checked by the decoder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Type4Header(pub u32);

impl Type4Header {
    /// Largest register count a TYPE4 packet carries (Mesa asserts `cnt < 0x7f`).
    pub const MAX_COUNT: u32 = 0x7e;
    /// Largest register offset (18 bits).
    pub const MAX_REG: u32 = 0x3_ffff;
    /// Bit position of the count.
    pub const COUNT_SHIFT: u32 = 0;
    /// Width of the count.
    pub const COUNT_BITS: u32 = 7;
    /// Bit position of the count's parity bit.
    pub const COUNT_PARITY_BIT: u32 = 7;
    /// Bit position of the register offset.
    pub const REG_SHIFT: u32 = 8;
    /// Width of the register offset field as the decoder reads it (19 bits).
    pub const REG_BITS: u32 = 19;
    /// Bit position of the register's parity bit.
    pub const REG_PARITY_BIT: u32 = 27;

    /// The header for `count` registers at `reg` (both already range-checked by the caller).
    #[inline]
    pub const fn new(reg: u32, count: u32) -> Self {
        Self(
            TYPE4_PKT
                | (count & 0x7f)
                | odd_parity(count) << Self::COUNT_PARITY_BIT
                | (reg & Self::MAX_REG) << Self::REG_SHIFT
                | odd_parity(reg) << Self::REG_PARITY_BIT,
        )
    }

    /// Number of registers written.
    #[inline]
    pub const fn count(self) -> u32 {
        self.0 & 0x7f
    }

    /// First register (dword offset).
    #[inline]
    pub const fn reg(self) -> u32 {
        (self.0 >> Self::REG_SHIFT) & ((1 << Self::REG_BITS) - 1)
    }

    /// True when both parity bits are right.
    #[inline]
    pub const fn parity_ok(self) -> bool {
        (self.0 >> Self::COUNT_PARITY_BIT) & 1 == odd_parity(self.count())
            && (self.0 >> Self::REG_PARITY_BIT) & 1 == odd_parity(self.reg())
    }
}

/// A TYPE7 header: run CP opcode `opcode` with `count` payload words.
///
/// Layout: `count[13:0] | parity(count)<<15 | opcode[22:16] | parity(opcode)<<23 | 0x7<<28`;
/// bits 27:24 are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Type7Header(pub u32);

impl Type7Header {
    /// Largest payload length (14 bits).
    pub const MAX_COUNT: u32 = 0x3fff;
    /// Bit position of the count.
    pub const COUNT_SHIFT: u32 = 0;
    /// Width of the count.
    pub const COUNT_BITS: u32 = 14;
    /// Bit position of the count's parity bit.
    pub const COUNT_PARITY_BIT: u32 = 15;
    /// Bit position of the opcode.
    pub const OPCODE_SHIFT: u32 = 16;
    /// Width of the opcode.
    pub const OPCODE_BITS: u32 = 7;
    /// Bit position of the opcode's parity bit.
    pub const OPCODE_PARITY_BIT: u32 = 23;

    /// The header for `opcode` with `count` payload words.
    #[inline]
    pub const fn new(opcode: u32, count: u32) -> Self {
        Self(
            TYPE7_PKT
                | (count & Self::MAX_COUNT)
                | odd_parity(count) << Self::COUNT_PARITY_BIT
                | (opcode & 0x7f) << Self::OPCODE_SHIFT
                | odd_parity(opcode) << Self::OPCODE_PARITY_BIT,
        )
    }

    /// Payload length in words.
    #[inline]
    pub const fn count(self) -> u32 {
        self.0 & Self::MAX_COUNT
    }

    /// The CP opcode.
    #[inline]
    pub const fn opcode(self) -> u32 {
        (self.0 >> Self::OPCODE_SHIFT) & 0x7f
    }

    /// True when both parity bits are right and bits 27:24 and 14 are clear.
    #[inline]
    pub const fn parity_ok(self) -> bool {
        (self.0 >> Self::COUNT_PARITY_BIT) & 1 == odd_parity(self.count())
            && (self.0 >> Self::OPCODE_PARITY_BIT) & 1 == odd_parity(self.opcode())
    }

    /// True when the unused bits (27:24 and 14) are zero.
    #[inline]
    pub const fn reserved_clear(self) -> bool {
        self.0 & 0x0f00_4000 == 0
    }
}

/// `CP_EVENT_WRITE` dword 0 (domain `CP_EVENT_WRITE`, A2XX-A6XX).
pub mod event_write {
    /// `EVENT` low bit.
    pub const EVENT_SHIFT: u32 = 0;
    /// `EVENT` width.
    pub const EVENT_BITS: u32 = 8;
    /// `TIMESTAMP`: write the GPU timestamp instead of the packet's value.
    pub const TIMESTAMP_BIT: u32 = 30;
    /// `IRQ`: raise an interrupt when the event retires.
    pub const IRQ_BIT: u32 = 31;
}

/// `CP_WAIT_REG_MEM` dword 0 (domain `CP_WAIT_REG_MEM`).
pub mod wait_reg_mem {
    /// `FUNCTION` low bit (`cp_cond_function`).
    pub const FUNCTION_SHIFT: u32 = 0;
    /// `FUNCTION` width.
    pub const FUNCTION_BITS: u32 = 3;
    /// `SIGNED_COMPARE`.
    pub const SIGNED_COMPARE_BIT: u32 = 3;
    /// `POLL` low bit (`poll_memory_type`).
    pub const POLL_SHIFT: u32 = 4;
    /// `POLL` width.
    pub const POLL_BITS: u32 = 2;
    /// `WRITE_MEMORY`.
    pub const WRITE_MEMORY_BIT: u32 = 8;
    /// `cp_cond_function::WRITE_LT`.
    pub const WRITE_LT: u32 = 1;
    /// `cp_cond_function::WRITE_EQ`.
    pub const WRITE_EQ: u32 = 3;
    /// `cp_cond_function::WRITE_GE`.
    pub const WRITE_GE: u32 = 5;
    /// `poll_memory_type::POLL_REGISTER`.
    pub const POLL_REGISTER: u32 = 0;
    /// `poll_memory_type::POLL_MEMORY`.
    pub const POLL_MEMORY: u32 = 1;
}

/// `CP_REG_TO_MEM` dword 0 (domain `CP_REG_TO_MEM`).
pub mod reg_to_mem {
    /// `REG` low bit.
    pub const REG_SHIFT: u32 = 0;
    /// `REG` width.
    pub const REG_BITS: u32 = 18;
    /// `CNT` low bit.
    pub const CNT_SHIFT: u32 = 18;
    /// `CNT` width.
    pub const CNT_BITS: u32 = 12;
    /// `64B`: the registers are 64-bit.
    pub const B64_BIT: u32 = 30;
    /// `ACCUMULATE`.
    pub const ACCUMULATE_BIT: u32 = 31;
}

/// `CP_SET_MARKER` dword 0 (domain `CP_SET_MARKER`, A6XX-).
pub mod set_marker {
    /// `MODE` low bit.
    pub const MODE_SHIFT: u32 = 0;
    /// `MODE` width.
    pub const MODE_BITS: u32 = 4;
    /// `a6xx_marker::RM6_COMPUTE`.
    pub const RM6_COMPUTE: u32 = 8;
}

/// `CP_INDIRECT_BUFFER` dword 2 (domain `CP_INDIRECT_BUFFER`, A5XX-).
pub mod indirect_buffer {
    /// `IB_SIZE` low bit (size in dwords).
    pub const IB_SIZE_SHIFT: u32 = 0;
    /// `IB_SIZE` width.
    pub const IB_SIZE_BITS: u32 = 20;
}

/// `CP_EXEC_CS` payload: dword 0 is 0, then the group counts (domain `CP_EXEC_CS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ExecCs {
    /// Dword 0 (no fields).
    pub d0: u32,
    /// `NGROUPS_X/Y/Z`.
    pub ngroups: [u32; 3],
}

/// `CP_EVENT_WRITE` payload with an address: `EVENT | TIMESTAMP | IRQ`, `ADDR` (reg64 at 1),
/// then the value written when the event retires (dword 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct EventWrite {
    /// Dword 0.
    pub d0: u32,
    /// `ADDR` low.
    pub addr_lo: u32,
    /// `ADDR` high.
    pub addr_hi: u32,
    /// Value.
    pub value: u32,
}

/// `CP_WAIT_REG_MEM` payload (6 dwords).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WaitRegMem {
    /// `FUNCTION | SIGNED_COMPARE | POLL | WRITE_MEMORY`.
    pub d0: u32,
    /// `POLL_ADDR` low.
    pub addr_lo: u32,
    /// `POLL_ADDR` high.
    pub addr_hi: u32,
    /// `REF`.
    pub reference: u32,
    /// `MASK`.
    pub mask: u32,
    /// `DELAY_LOOP_CYCLES`.
    pub delay: u32,
}

/// `CP_REG_TO_MEM` payload: `REG | CNT | 64B | ACCUMULATE`, `DEST` (reg64 at 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RegToMem {
    /// Dword 0.
    pub d0: u32,
    /// `DEST` low.
    pub dest_lo: u32,
    /// `DEST` high.
    pub dest_hi: u32,
}

/// `CP_INDIRECT_BUFFER` payload: `IB_BASE` (reg64 at 0), `IB_SIZE` in dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct IndirectBuffer {
    /// `IB_BASE` low.
    pub base_lo: u32,
    /// `IB_BASE` high.
    pub base_hi: u32,
    /// `IB_SIZE` (dwords, bits 19:0).
    pub size: u32,
}

/// `CP_MEM_WRITE` payload head: `ADDR` (reg64 at 0); the data dwords follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct MemWriteHead {
    /// `ADDR` low.
    pub addr_lo: u32,
    /// `ADDR` high.
    pub addr_hi: u32,
}

/// `CP_MEMCPY` payload (domain `CP_MEMCPY`, A6XX-): `DWORDS` (the whole dword 0), `SRC_LO/HI`,
/// `DST_LO/HI`. The CP copies whole dwords: addresses and size are in units of 4 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct MemCpy {
    /// `DWORDS`: number of dwords to copy.
    pub dwords: u32,
    /// `SRC_LO`.
    pub src_lo: u32,
    /// `SRC_HI`.
    pub src_hi: u32,
    /// `DST_LO`.
    pub dst_lo: u32,
    /// `DST_HI`.
    pub dst_hi: u32,
}

impl MemCpy {
    /// The payload copying `dwords` dwords from `src` to `dst`.
    pub const fn new(dst: u64, src: u64, dwords: u32) -> Self {
        // CAST: the low and high halves of the addresses, by design.
        Self { dwords, src_lo: src as u32, src_hi: (src >> 32) as u32, dst_lo: dst as u32, dst_hi: (dst >> 32) as u32 }
    }

    /// Source address.
    pub const fn src(&self) -> u64 {
        self.src_lo as u64 | (self.src_hi as u64) << 32
    }

    /// Destination address.
    pub const fn dst(&self) -> u64 {
        self.dst_lo as u64 | (self.dst_hi as u64) << 32
    }

    /// Bytes copied.
    pub const fn bytes(&self) -> u64 {
        self.dwords as u64 * 4
    }
}

const _: () = assert!(size_of::<ExecCs>() == 16);
const _: () = assert!(size_of::<EventWrite>() == 16);
const _: () = assert!(size_of::<WaitRegMem>() == 24);
const _: () = assert!(size_of::<RegToMem>() == 12);
const _: () = assert!(size_of::<IndirectBuffer>() == 12);
const _: () = assert!(size_of::<MemWriteHead>() == 8);
const _: () = assert!(size_of::<MemCpy>() == 20);
