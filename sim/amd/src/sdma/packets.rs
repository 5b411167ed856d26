//! SDMA 6.0 packets: opcodes and fields, as the engine decodes them (public for tests).
//!
//! Sources: `[sdma]` Linux `sdma_v6_0_0_pkt_open.h` as tinygrad 0.14 ships it
//! (`tinygrad/runtime/autogen/am/sdma_6_0_0.py`); `[v6]` Linux `sdma_v6_0.c` (how the kernel
//! driver emits them); `[tg]` tinygrad 0.14 `ops_amd.py`, `AMDCopyQueue`.

/// Header bits 7:0: the opcode. `[sdma]` `SDMA_PKT_*_HEADER_op_mask 0xff`.
pub const OP_MASK: u32 = 0xff;
/// Header bits 15:8: the sub-opcode. `[sdma]` `SDMA_PKT_*_HEADER_sub_op_shift 8`.
pub const SUB_OP_SHIFT: u32 = 8;

/// `NOP`: the header's count (bits 29:16) dwords follow. `[sdma]` `SDMA_OP_NOP 0`,
/// `SDMA_PKT_NOP_HEADER_count` (`[v6]` `sdma_v6_0_ring_insert_nop` pads with
/// `NOP | COUNT(n - 1)` and n − 1 more). A zero dword is a one-dword NOP (tinygrad's ring filler).
pub const OP_NOP: u32 = 0;
/// `NOP` header bits 29:16: the dwords after the header.
pub const NOP_COUNT_SHIFT: u32 = 16;
/// Its width.
pub const NOP_COUNT_MASK: u32 = 0x3fff;
/// `COPY`. `[sdma]` `SDMA_OP_COPY 1`.
pub const OP_COPY: u32 = 1;
/// `COPY` sub-op `LINEAR`: count (bytes − 1, bits 29:0), parameter, src lo, hi, dst lo, hi.
/// `[sdma]` `SDMA_SUBOP_COPY_LINEAR 0`, `SDMA_PKT_COPY_LINEAR_COUNT_count_mask 0x3FFFFFFF`;
/// `[v6]` `sdma_v6_0_emit_copy_buffer` writes `byte_count - 1`.
pub const SUB_COPY_LINEAR: u32 = 0;
/// `COPY LINEAR` count mask.
pub const COPY_COUNT_MASK: u32 = 0x3fff_ffff;
/// `COPY LINEAR` header bit 25: copy from the end down (overlapping ranges).
/// `[sdma]` `SDMA_PKT_COPY_LINEAR_HEADER_backwards_shift 25`.
pub const COPY_BACKWARDS: u32 = 1 << 25;
/// `WRITE`: dst lo, hi, count (dwords − 1, bits 19:0), then the data. `[sdma]` `SDMA_OP_WRITE 2`,
/// `SDMA_PKT_WRITE_UNTILED_DW_3_count_mask 0xFFFFF`; `[v6]` `sdma_v6_0_ring_test_ring` writes
/// `COUNT(0)` for one dword; tinygrad writes `1 if b64 else 0`.
pub const OP_WRITE: u32 = 2;
/// `WRITE` sub-op `LINEAR`. `[sdma]` `SDMA_SUBOP_WRITE_LINEAR 0`.
pub const SUB_WRITE_LINEAR: u32 = 0;
/// `WRITE` count mask.
pub const WRITE_COUNT_MASK: u32 = 0xf_ffff;
/// `INDIRECT`: base lo, hi, size (dwords, bits 19:0), csa lo, hi. `[sdma]` `SDMA_OP_INDIRECT 4`,
/// `SDMA_PKT_INDIRECT_IB_SIZE_ib_size_mask 0xFFFFF`.
pub const OP_INDIRECT: u32 = 4;
/// `INDIRECT` size mask.
pub const INDIRECT_SIZE_MASK: u32 = 0xf_ffff;
/// An IB's base is 32-byte aligned: `[v6]` `sdma_v6_0_ring_emit_ib` writes
/// `lower_32_bits(ib->gpu_addr) & 0xffffffe0`.
pub const INDIRECT_BASE_ALIGN: u64 = 32;
/// An `INDIRECT` packet must end on an 8-dword boundary of the ring: `[v6]`
/// `sdma_v6_0_ring_emit_ib` ("IB packet must end on a 8 DW boundary"); `[tg]` `_submit` pads for it.
pub const INDIRECT_END_ALIGN_DWORDS: u64 = 8;
/// `FENCE`: addr lo, hi, data (a 32-bit write). `[sdma]` `SDMA_OP_FENCE 5`.
pub const OP_FENCE: u32 = 5;
/// `FENCE` header bits 18:16: the memory type (tinygrad sets 3; no effect here).
/// `[sdma]` `SDMA_PKT_FENCE_HEADER_mtype_shift 16`.
pub const FENCE_MTYPE_SHIFT: u32 = 16;
/// `TRAP`: the interrupt context (bits 27:0). `[sdma]` `SDMA_OP_TRAP 6`,
/// `SDMA_PKT_TRAP_INT_CONTEXT_int_context_mask 0x0FFFFFFF`.
pub const OP_TRAP: u32 = 6;
/// `TRAP` context mask.
pub const TRAP_CONTEXT_MASK: u32 = 0x0fff_ffff;
/// `POLL_REGMEM`: addr lo, hi, value, mask, dw5 (interval 15:0, retry count 27:16).
/// `[sdma]` `SDMA_OP_POLL_REGMEM 8`.
pub const OP_POLL_REGMEM: u32 = 8;
/// `POLL_REGMEM` header bit 26: HDP flush (register form). `[sdma]` `..._hdp_flush_shift 26`.
pub const POLL_HDP_FLUSH: u32 = 1 << 26;
/// `POLL_REGMEM` header bits 30:28: compare function (the PM4 functions:
/// [`crate::cp::pm4::FUNC_GE`] …). `[sdma]` `..._func_shift 28`.
pub const POLL_FUNC_SHIFT: u32 = 28;
/// `POLL_REGMEM` header bit 31: poll memory (else a register). `[sdma]` `..._mem_poll_shift 31`.
pub const POLL_MEM: u32 = 1 << 31;
/// `POLL_REGMEM` dw5 bits 15:0: the poll interval. `[sdma]` `SDMA_PKT_POLL_REGMEM_DW5_interval`.
pub const POLL_INTERVAL_MASK: u32 = 0xffff;
/// `POLL_REGMEM` dw5 bits 27:16: the retry count (0xfff: retry forever, `[tg]` `wait`).
pub const POLL_RETRY_SHIFT: u32 = 16;
/// `TIMESTAMP`. `[sdma]` `SDMA_OP_TIMESTAMP 13`.
pub const OP_TIMESTAMP: u32 = 13;
/// `TIMESTAMP` sub-op `GET_GLOBAL`: addr lo (bits 31:3, 8-byte aligned), hi; writes the 64-bit
/// global timestamp. `[sdma]` `SDMA_SUBOP_TIMESTAMP_GET_GLOBAL 2`,
/// `SDMA_PKT_TIMESTAMP_GET_GLOBAL_WRITE_ADDR_LO_write_addr_31_3_shift 3`.
pub const SUB_TIMESTAMP_GET_GLOBAL: u32 = 2;

/// Opcodes SDMA 6.0 defines that the simulator does not run. `[sdma]`.
pub const KNOWN_UNSIMULATED: &[(u32, &str)] = &[
    (7, "SEM"),
    (9, "COND_EXE"),
    (10, "ATOMIC"),
    (11, "CONST_FILL"),
    (12, "PTEPDE"),
    (14, "SRBM_WRITE"),
    (15, "PRE_EXE"),
    (16, "GPUVM_INV"),
    (17, "GCR_REQ"),
    (32, "DUMMY_TRAP"),
];

/// A header: `op | sub_op << 8 | extra` (extra: the op's header fields).
pub const fn header(op: u32, sub_op: u32, extra: u32) -> u32 {
    (op & OP_MASK) | (sub_op & 0xff) << SUB_OP_SHIFT | extra
}
