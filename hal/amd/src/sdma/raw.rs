//! SDMA 6.0 packet numbers and field positions (gfx11's system DMA engine): every opcode and bit
//! in one place, the packet logic in [`super`].
//!
//! Source: Linux `drivers/gpu/drm/amd/amdgpu/sdma_v6_0_0_pkt_open.h` (`SDMA_OP_*`,
//! `SDMA_SUBOP_*`, `SDMA_PKT_<packet>_<dword>_<field>_{offset,mask,shift}`), from which tinygrad
//! 0.14's `autogen/am/sdma_6_0_0.py` is generated. `tests/sdma.rs` checks every value against
//! tinygrad's table (`tests/data/pm4/sdma.json`).

/// Opcodes (`SDMA_OP_*`, bits 7:0 of a packet's header).
pub mod op {
    /// `SDMA_OP_NOP` (a zero dword is a one-dword NOP).
    pub const NOP: u32 = 0;
    /// `SDMA_OP_COPY`.
    pub const COPY: u32 = 1;
    /// `SDMA_OP_WRITE`.
    pub const WRITE: u32 = 2;
    /// `SDMA_OP_INDIRECT`: run an indirect buffer.
    pub const INDIRECT: u32 = 4;
    /// `SDMA_OP_FENCE`: write a dword to memory after what came before.
    pub const FENCE: u32 = 5;
    /// `SDMA_OP_TRAP`: raise an interrupt with a context id.
    pub const TRAP: u32 = 6;
    /// `SDMA_OP_POLL_REGMEM`: poll a register or memory until a compare passes.
    pub const POLL_REGMEM: u32 = 8;
    /// `SDMA_OP_TIMESTAMP`.
    pub const TIMESTAMP: u32 = 13;

    /// `(name, value)` of every opcode above (the cross-check).
    pub const ALL: &[(&str, u32)] = &[
        ("SDMA_OP_NOP", NOP),
        ("SDMA_OP_COPY", COPY),
        ("SDMA_OP_WRITE", WRITE),
        ("SDMA_OP_INDIRECT", INDIRECT),
        ("SDMA_OP_FENCE", FENCE),
        ("SDMA_OP_TRAP", TRAP),
        ("SDMA_OP_POLL_REGMEM", POLL_REGMEM),
        ("SDMA_OP_TIMESTAMP", TIMESTAMP),
    ];
}

/// Sub-opcodes (`SDMA_SUBOP_*`, bits 15:8 of the header).
pub mod subop {
    /// `SDMA_SUBOP_COPY_LINEAR`.
    pub const COPY_LINEAR: u32 = 0;
    /// `SDMA_SUBOP_TIMESTAMP_GET_GLOBAL`: the global (GPU clock) timestamp.
    pub const TIMESTAMP_GET_GLOBAL: u32 = 2;
    /// `SDMA_SUBOP_WRITE_LINEAR`.
    pub const WRITE_LINEAR: u32 = 0;

    /// `(name, value)` of every sub-opcode above (the cross-check).
    pub const ALL: &[(&str, u32)] = &[
        ("SDMA_SUBOP_COPY_LINEAR", COPY_LINEAR),
        ("SDMA_SUBOP_TIMESTAMP_GET_GLOBAL", TIMESTAMP_GET_GLOBAL),
        ("SDMA_SUBOP_WRITE_LINEAR", WRITE_LINEAR),
    ];
}

/// One packet field: its mask (unshifted) and shift in its dword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bits {
    /// `_mask`.
    pub mask: u32,
    /// `_shift`.
    pub shift: u32,
}

impl Bits {
    /// `v` in place, or `None` when it does not fit the mask.
    pub const fn put(self, v: u32) -> Option<u32> {
        if v & !self.mask != 0 { None } else { Some(v << self.shift) }
    }
}

/// The header's sub-opcode (every packet): `SDMA_PKT_*_HEADER_sub_op`.
pub const HEADER_SUB_OP: Bits = Bits { mask: 0xff, shift: 8 };
/// `SDMA_PKT_COPY_LINEAR_COUNT_count`: bytes − 1 (30 bits).
pub const COPY_LINEAR_COUNT: Bits = Bits { mask: 0x3fff_ffff, shift: 0 };
/// `SDMA_PKT_FENCE_HEADER_mtype`: the memory type of the fence write.
pub const FENCE_HEADER_MTYPE: Bits = Bits { mask: 0x7, shift: 16 };
/// `SDMA_PKT_POLL_REGMEM_HEADER_func`: the compare (`3` `==`, `5` `>=`, as PM4's).
pub const POLL_REGMEM_HEADER_FUNC: Bits = Bits { mask: 0x7, shift: 28 };
/// `SDMA_PKT_POLL_REGMEM_HEADER_mem_poll`: poll memory (else a register).
pub const POLL_REGMEM_HEADER_MEM_POLL: Bits = Bits { mask: 0x1, shift: 31 };
/// `SDMA_PKT_POLL_REGMEM_DW5_interval`: the poll interval.
pub const POLL_REGMEM_DW5_INTERVAL: Bits = Bits { mask: 0xffff, shift: 0 };
/// `SDMA_PKT_POLL_REGMEM_DW5_retry_count`: retries (0xfff: for ever).
pub const POLL_REGMEM_DW5_RETRY_COUNT: Bits = Bits { mask: 0xfff, shift: 16 };
/// `SDMA_PKT_TRAP_INT_CONTEXT_int_context`: the interrupt's context id (28 bits).
pub const TRAP_INT_CONTEXT: Bits = Bits { mask: 0x0fff_ffff, shift: 0 };
/// `SDMA_PKT_INDIRECT_HEADER_vmid`: the VMID the IB runs under (0: the queue's).
pub const INDIRECT_HEADER_VMID: Bits = Bits { mask: 0xf, shift: 16 };
/// `SDMA_PKT_INDIRECT_IB_SIZE_ib_size`: the IB's length in dwords (20 bits).
pub const INDIRECT_IB_SIZE: Bits = Bits { mask: 0xf_ffff, shift: 0 };
/// `SDMA_PKT_WRITE_UNTILED_DW_3_count`: dwords − 1 of a linear write (20 bits).
pub const WRITE_UNTILED_COUNT: Bits = Bits { mask: 0xf_ffff, shift: 0 };

/// `(name, field)` of every field above (the cross-check; names as `sdma_v6_0_0_pkt_open.h`).
pub const FIELDS: &[(&str, Bits)] = &[
    ("SDMA_PKT_COPY_LINEAR_HEADER_sub_op", HEADER_SUB_OP),
    ("SDMA_PKT_TIMESTAMP_GET_HEADER_sub_op", HEADER_SUB_OP),
    ("SDMA_PKT_COPY_LINEAR_COUNT_count", COPY_LINEAR_COUNT),
    ("SDMA_PKT_FENCE_HEADER_mtype", FENCE_HEADER_MTYPE),
    ("SDMA_PKT_POLL_REGMEM_HEADER_func", POLL_REGMEM_HEADER_FUNC),
    ("SDMA_PKT_POLL_REGMEM_HEADER_mem_poll", POLL_REGMEM_HEADER_MEM_POLL),
    ("SDMA_PKT_POLL_REGMEM_DW5_interval", POLL_REGMEM_DW5_INTERVAL),
    ("SDMA_PKT_POLL_REGMEM_DW5_retry_count", POLL_REGMEM_DW5_RETRY_COUNT),
    ("SDMA_PKT_TRAP_INT_CONTEXT_int_context", TRAP_INT_CONTEXT),
    ("SDMA_PKT_INDIRECT_HEADER_vmid", INDIRECT_HEADER_VMID),
    ("SDMA_PKT_INDIRECT_IB_SIZE_ib_size", INDIRECT_IB_SIZE),
];

/// The fence's memory type on gfx11 (tinygrad: `SDMA_PKT_FENCE_HEADER_MTYPE(3)` unless gfx9;
/// 3 = uncached).
pub const FENCE_MTYPE_GFX11: u32 = 3;
/// `POLL_REGMEM` compare `>=` (the function numbers of PM4's `WAIT_REG_MEM`).
pub const FUNC_GEQ: u32 = 5;
/// `POLL_REGMEM` compare `==`.
pub const FUNC_EQ: u32 = 3;
/// The poll interval tinygrad uses.
pub const POLL_INTERVAL: u32 = 4;
/// The retry count tinygrad uses (`0xfff`: retry for ever).
pub const POLL_RETRY: u32 = 0xfff;
/// The largest copy one `COPY_LINEAR` makes on SDMA 5 and later (its 30-bit count of
/// bytes − 1); tinygrad's `max_copy_size` for SDMA ≥ 5.
pub const MAX_COPY_BYTES: u64 = 0x4000_0000;
/// An indirect buffer, and the `INDIRECT` packet in the ring, end on this dword boundary
/// (tinygrad's "An IB packet must end on a 8 DW boundary").
pub const IB_ALIGN_DWORDS: usize = 8;
