//! PM4 type-3 packets of the gfx11 MEC: opcodes and field layouts, as the command processor
//! decodes them. Public so tests (and an encoder's tests) assemble packets from the same numbers.
//!
//! Sources, cited at each constant:
//! - `[nvd]`: Linux `drivers/gpu/drm/amd/amdgpu/nvd.h` as tinygrad 0.14 ships it
//!   (`tinygrad/runtime/autogen/am/pm4_nv.py`), the packet header, opcodes and fields;
//! - `[sid]`: Mesa `src/amd/common/sid.h` (register windows);
//! - `[gfx11]`: Linux `gfx_v11_0.c` (how the kernel driver uses a packet);
//! - `[tg]`: tinygrad 0.14 `runtime/ops_amd.py`, `AMDComputeQueue` (what it emits).

/// Header bits 31:30: the packet type; only type 3 runs on the MEC here. `[nvd]` `PACKET_TYPE3`.
pub const PACKET_TYPE3: u32 = 3;

/// A type-3 header: `opcode` with `count` = body dwords − 1. `[nvd]` `PACKET3(op, n)`:
/// `3 << 30 | (op & 0xff) << 8 | (n & 0x3fff) << 16`.
pub const fn header(opcode: u32, count: u32) -> u32 {
    PACKET_TYPE3 << 30 | (opcode & 0xff) << 8 | (count & 0x3fff) << 16
}

/// A header's type (bits 31:30). `[nvd]` `CP_PACKET_GET_TYPE`.
pub const fn packet_type(h: u32) -> u32 {
    (h >> 30) & 3
}

/// A header's count (bits 29:16). `[nvd]` `CP_PACKET_GET_COUNT`.
pub const fn packet_count(h: u32) -> u32 {
    (h >> 16) & 0x3fff
}

/// A header's opcode (bits 15:8). `[nvd]` `CP_PACKET3_GET_OPCODE`.
pub const fn packet_opcode(h: u32) -> u32 {
    (h >> 8) & 0xff
}

/// `NOP` (body skipped). `[nvd]` `PACKET3_NOP 0x10`.
pub const NOP: u32 = 0x10;
/// A `NOP` with count 0x3fff is one dword long (the header alone): the ring filler the kernel
/// driver pads with. `[gfx11]` `.nop = PACKET3(PACKET3_NOP, 0x3FFF)`.
pub const NOP_ONE_DWORD_COUNT: u32 = 0x3fff;
/// `DISPATCH_DIRECT`: dim x, y, z (work-groups), `COMPUTE_DISPATCH_INITIATOR`. `[nvd]` `0x15`.
pub const DISPATCH_DIRECT: u32 = 0x15;
/// `PRED_EXEC`: one dword, XCC mask in bits 31:24 and the dwords it covers in the low bits
/// (`[tg]` `pred_exec`: `xcc_mask << 24`, then `|= len`). `[nvd]` `0x23`.
pub const PRED_EXEC: u32 = 0x23;
/// `PRED_EXEC` bits 31:24: the XCCs that execute the covered packets (gfx1100 has XCC 0 only).
pub const PRED_EXEC_XCC_SHIFT: u32 = 24;
/// `PRED_EXEC`'s count of covered dwords (a 14-bit field, like a header's count).
pub const PRED_EXEC_COUNT_MASK: u32 = 0x3fff;
/// `WAIT_REG_MEM`: control, addr lo / reg, addr hi / reg2, reference, mask, poll interval.
/// `[nvd]` `0x3C`.
pub const WAIT_REG_MEM: u32 = 0x3c;
/// `INDIRECT_BUFFER`: base lo (bits 31:2), base hi, control. `[nvd]` `0x3F`.
pub const INDIRECT_BUFFER: u32 = 0x3f;
/// `COPY_DATA`: control, src lo, src hi, dst lo, dst hi. `[nvd]` `0x40`.
pub const COPY_DATA: u32 = 0x40;
/// `EVENT_WRITE`: event type and index (an address follows for sample events). `[nvd]` `0x46`.
pub const EVENT_WRITE: u32 = 0x46;
/// `RELEASE_MEM`: event, data/int select, addr lo, addr hi, data lo, data hi, int ctxid.
/// `[nvd]` `0x49`.
pub const RELEASE_MEM: u32 = 0x49;
/// `ACQUIRE_MEM` (gfx10+): 0, coher size lo, hi, base lo, hi, poll interval, `GCR_CNTL`.
/// `[nvd]` `0x58`.
pub const ACQUIRE_MEM: u32 = 0x58;
/// `SET_SH_REG`: register offset from [`SH_REG_START`], then the values. `[nvd]` `0x76`.
pub const SET_SH_REG: u32 = 0x76;
/// `SET_UCONFIG_REG`: register offset from [`UCONFIG_REG_START`], then the values. `[nvd]` `0x79`.
pub const SET_UCONFIG_REG: u32 = 0x79;

/// Opcodes the gfx11 CP defines that this simulator does not run, by name, for fault reports.
/// `[nvd]`.
pub const KNOWN_UNSIMULATED: &[(u32, &str)] = &[
    (0x11, "SET_BASE"),
    (0x12, "CLEAR_STATE"),
    (0x16, "DISPATCH_INDIRECT"),
    (0x1d, "ATOMIC_GDS"),
    (0x1e, "ATOMIC_MEM"),
    (0x20, "SET_PREDICATION"),
    (0x21, "REG_RMW"),
    (0x22, "COND_EXEC"),
    (0x28, "CONTEXT_CONTROL"),
    (0x33, "INDIRECT_BUFFER_CNST"),
    (0x37, "WRITE_DATA"),
    (0x39, "MEM_SEMAPHORE"),
    (0x41, "CP_DMA"),
    (0x42, "PFP_SYNC_ME"),
    (0x45, "COND_WRITE"),
    (0x47, "EVENT_WRITE_EOP"),
    (0x48, "EVENT_WRITE_EOS"),
    (0x4a, "PREAMBLE_CNTL"),
    (0x50, "DMA_DATA"),
    (0x5a, "INTERRUPT"),
    (0x5e, "LOAD_UCONFIG_REG"),
    (0x5f, "LOAD_SH_REG"),
    (0x62, "LOAD_COMPUTE_STATE"),
    (0x68, "SET_CONFIG_REG"),
    (0x69, "SET_CONTEXT_REG"),
    (0x77, "SET_SH_REG_OFFSET"),
    (0x78, "SET_QUEUE_REG"),
    (0x7a, "SET_UCONFIG_REG_INDEX"),
    (0x93, "WAIT_REG_MEM64"),
    (0x95, "HDP_FLUSH"),
    (0x98, "INVALIDATE_TLBS"),
    (0x99, "AQL_PACKET"),
    (0x9a, "DMA_DATA_FILL_MULTI"),
    (0x9b, "SET_SH_REG_INDEX"),
    (0xa0, "SET_RESOURCES"),
    (0xa1, "MAP_PROCESS"),
    (0xa2, "MAP_QUEUES"),
    (0xa3, "UNMAP_QUEUES"),
    (0xa4, "QUERY_STATUS"),
    (0xa5, "RUN_LIST"),
];

/// The persistent SH registers `SET_SH_REG` reaches: dword offsets `[0x2c00, 0x3000)`.
/// `[nvd]` `PACKET3_SET_SH_REG_START`/`_END`; `[sid]` `SI_SH_REG_OFFSET 0xB000`..`0xC000` (bytes).
pub const SH_REG_START: u32 = 0x2c00;
/// End of the SH window (exclusive).
pub const SH_REG_END: u32 = 0x3000;
/// The user-config registers `SET_UCONFIG_REG` reaches: `[0xc000, 0x10000)`, its 16-bit offset's
/// whole range. `[nvd]` `PACKET3_SET_UCONFIG_REG_START 0xc000`; `[sid]`
/// `CIK_UCONFIG_REG_OFFSET 0x30000`..`CIK_UCONFIG_REG_END 0x40000` (bytes; nvd.h's older
/// `_END 0xc400` is CIK's first block only, and tinygrad writes `SPI_CONFIG_CNTL` at 0xc440).
pub const UCONFIG_REG_START: u32 = 0xc000;
/// End of the user-config window (exclusive).
pub const UCONFIG_REG_END: u32 = 0x10000;

/// `INDIRECT_BUFFER` control: IB size in dwords, bits 19:0. `[nvd]` `PACKET3_INDIRECT_BUFFER__IB_SIZE`.
pub const IB_SIZE_MASK: u32 = 0xf_ffff;
/// `INDIRECT_BUFFER` control bit 20: chain (the IB replaces the one it is in: no return).
/// `[nvd]` `PACKET3_INDIRECT_BUFFER__CHAIN`.
pub const IB_CHAIN: u32 = 1 << 20;
/// `INDIRECT_BUFFER` control bit 23: valid. `[nvd]` `INDIRECT_BUFFER_VALID`.
pub const IB_VALID: u32 = 1 << 23;

/// `WAIT_REG_MEM` control bits 2:0: compare function. `[nvd]` `WAIT_REG_MEM_FUNCTION`.
pub const WAIT_FUNCTION_MASK: u32 = 0x7;
/// Bits 5:4: 0 register space, 1 memory space. `[nvd]` `WAIT_REG_MEM_MEM_SPACE`.
pub const WAIT_MEM_SPACE_SHIFT: u32 = 4;
/// Bits 7:6: 0 wait, 1 write-wait-write (write reg 1, wait on reg 2), 3 preemptable memory
/// wait. `[nvd]` `WAIT_REG_MEM_OPERATION`, `PACKET3_WAIT_REG_MEM__OPERATION__*`.
pub const WAIT_OPERATION_SHIFT: u32 = 6;
/// Bits 9:8: the engine that waits (0 ME; the MEC has only its own). `[nvd]` `WAIT_REG_MEM_ENGINE`.
pub const WAIT_ENGINE_SHIFT: u32 = 8;
/// Compare functions (`(value & mask) OP reference`). `[nvd]` `PACKET3_WAIT_REG_MEM__FUNCTION__*`.
pub const FUNC_ALWAYS: u32 = 0;
/// `<`.
pub const FUNC_LT: u32 = 1;
/// `<=`.
pub const FUNC_LE: u32 = 2;
/// `==` (tinygrad's `WAIT_REG_MEM_FUNCTION_EQ`).
pub const FUNC_EQ: u32 = 3;
/// `!=`.
pub const FUNC_NE: u32 = 4;
/// `>=` (tinygrad's `WAIT_REG_MEM_FUNCTION_GEQ`, its signal waits).
pub const FUNC_GE: u32 = 5;
/// `>`.
pub const FUNC_GT: u32 = 6;

/// `EVENT_WRITE` / `RELEASE_MEM` bits 5:0: the event type. `[nvd]` `EVENT_TYPE`.
pub const EVENT_TYPE_MASK: u32 = 0x3f;
/// Bits 11:8: the event index. `[nvd]` `EVENT_INDEX(x) ((x) << 8)`.
pub const EVENT_INDEX_SHIFT: u32 = 8;
/// `CS_PARTIAL_FLUSH` (after every dispatch, `[tg]` exec). tinygrad `autogen/am/soc_11.py`.
pub const CS_PARTIAL_FLUSH: u32 = 7;
/// `CACHE_FLUSH_AND_INV_TS_EVENT` (tinygrad's `RELEASE_MEM` event). `[nvd]`, `soc_11.py` 20.
pub const CACHE_FLUSH_AND_INV_TS_EVENT: u32 = 20;
/// `BOTTOM_OF_PIPE_TS`. `soc_11.py` 40.
pub const BOTTOM_OF_PIPE_TS: u32 = 40;
/// `EVENT_INDEX` of a `CS_PARTIAL_FLUSH` (`[tg]` `EVENT_INDEX_PARTIAL_FLUSH = 4`).
pub const EVENT_INDEX_PARTIAL_FLUSH: u32 = 4;
/// `RELEASE_MEM` event index 5: end of pipe. `[nvd]` `event_index__mec_release_mem__end_of_pipe`.
pub const RELEASE_EVENT_INDEX_EOP: u32 = 5;
/// `RELEASE_MEM` event index 6: shader done. `[nvd]` `event_index__mec_release_mem__shader_done`.
pub const RELEASE_EVENT_INDEX_SHADER_DONE: u32 = 6;
/// `RELEASE_MEM` dword 2 bits 17:16: destination (0 memory controller, 1 TC L2; 2 and 3 the queue's
/// write pointer register). `[nvd]` `PACKET3_RELEASE_MEM_DST_SEL(x) ((x) << 16)`.
pub const RELEASE_DST_SEL_SHIFT: u32 = 16;
/// Dword 2 bits 26:24: interrupt select. `[nvd]` `PACKET3_RELEASE_MEM_INT_SEL(x) ((x) << 24)`.
pub const RELEASE_INT_SEL_SHIFT: u32 = 24;
/// Dword 2 bits 31:29: data select. `[nvd]` `PACKET3_RELEASE_MEM_DATA_SEL(x) ((x) << 29)`.
pub const RELEASE_DATA_SEL_SHIFT: u32 = 29;
/// Data select: write nothing. `[nvd]` `data_sel__mec_release_mem__none`.
pub const DATA_SEL_NONE: u32 = 0;
/// Data select: the low 32 bits of the data (tinygrad's signals). `send_32_bit_low`.
pub const DATA_SEL_32: u32 = 1;
/// Data select: all 64 bits. `send_64_bit_data`.
pub const DATA_SEL_64: u32 = 2;
/// Data select: the GPU clock counter, 64 bits (tinygrad's timestamps). `send_gpu_clock_counter`.
pub const DATA_SEL_GPU_CLOCK: u32 = 3;
/// Interrupt select: none. `[nvd]` `int_sel__mec_release_mem__none`.
pub const INT_SEL_NONE: u32 = 0;
/// Interrupt select: send the interrupt only. `send_interrupt_only`.
pub const INT_SEL_SEND: u32 = 1;
/// Interrupt select: send it once the write is confirmed (tinygrad's timeline interrupt).
/// `send_interrupt_after_write_confirm`.
pub const INT_SEL_SEND_AFTER_WRITE: u32 = 2;
/// Interrupt select: write the data once confirmed, no interrupt. `send_data_after_write_confirm`.
pub const INT_SEL_DATA_AFTER_WRITE: u32 = 3;
/// Interrupt select: send the interrupt with its context id, unconditionally.
/// `unconditionally_send_int_ctxid`.
pub const INT_SEL_SEND_CTXID: u32 = 4;

/// `COPY_DATA` control bits 3:0: source select. `[nvd]` `PACKET3_COPY_DATA__SRC_SEL`.
pub const COPY_SRC_SEL_MASK: u32 = 0xf;
/// Bits 11:8: destination select. `[nvd]` `PACKET3_COPY_DATA__DST_SEL`.
pub const COPY_DST_SEL_SHIFT: u32 = 8;
/// Bit 16: 64 bits (else 32). `[nvd]` `PACKET3_COPY_DATA__COUNT_SEL`.
pub const COPY_COUNT_SEL_64: u32 = 1 << 16;
/// Bit 20: wait for the write's confirmation. `[nvd]` `PACKET3_COPY_DATA__WR_CONFIRM`.
pub const COPY_WR_CONFIRM: u32 = 1 << 20;
/// Select: a memory-mapped register. `[nvd]` `PACKET3_COPY_DATA__SRC_SEL__MEM_MAPPED_REGISTER`.
pub const SEL_REGISTER: u32 = 0;
/// Select: memory through the L2 (tinygrad's destination). `__SRC_SEL__TC_L2`.
pub const SEL_MEMORY: u32 = 2;
/// Source: a performance counter register (tinygrad's PMC reads). `__SRC_SEL__PERFCOUNTERS`.
pub const SEL_PERFCOUNTER: u32 = 4;
/// Source: the immediate in src lo (hi). Destination 5: memory (`__DST_SEL__TC_L2_OBSOLETE`).
pub const SEL_IMMEDIATE: u32 = 5;
/// Source: the GPU clock counter. `__SRC_SEL__GPU_CLOCK_COUNT`.
pub const SEL_GPU_CLOCK: u32 = 9;
/// Source: the system clock counter. `__SRC_SEL__SYSTEM_CLOCK_COUNT`.
pub const SEL_SYSTEM_CLOCK: u32 = 10;
