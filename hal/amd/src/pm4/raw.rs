//! PM4 type-3 packet numbers and field encoders for the gfx11 MEC (compute) queue: every opcode
//! and bit position in one place, the packet logic in [`super`].
//!
//! Sources: Linux `drivers/gpu/drm/amd/amdgpu/nvd.h` (the gfx10/gfx11 PM4 opcodes and field
//! macros) and `drivers/gpu/drm/amd/amdkfd/kfd_pm4_headers_ai.h` (the `enum
//! mec_release_mem_*` values) — tinygrad 0.14's `autogen/am/pm4_nv.py` is generated from these
//! two — and the VGT event types of `asic_reg/gc/gc_11_0_0_enum.h` (`CS_PARTIAL_FLUSH`,
//! `CACHE_FLUSH_AND_INV_TS_EVENT`; tinygrad's `autogen/am/soc_11.py`). `tests/pm4.rs` checks every value against tinygrad's
//! tables (`tests/data/pm4/pm4.json`).

/// `PACKET_TYPE3`: bits 31:30 of a type-3 header.
pub const PACKET_TYPE3: u32 = 3;
/// The largest `count` a type-3 header holds (bits 29:16, 14 bits): payload words − 1.
pub const MAX_COUNT: u32 = 0x3fff;

/// Type-3 opcodes (`PACKET3_*`, bits 15:8 of the header).
pub mod op {
    /// `PACKET3_NOP`: the payload is skipped.
    pub const NOP: u32 = 0x10;
    /// `PACKET3_DISPATCH_DIRECT`: group counts x, y, z and `COMPUTE_DISPATCH_INITIATOR`.
    pub const DISPATCH_DIRECT: u32 = 0x15;
    /// `PACKET3_WAIT_REG_MEM`: poll a register or memory until a compare passes.
    pub const WAIT_REG_MEM: u32 = 0x3c;
    /// `PACKET3_INDIRECT_BUFFER`: run an indirect buffer.
    pub const INDIRECT_BUFFER: u32 = 0x3f;
    /// `PACKET3_EVENT_WRITE`: raise a pipeline event.
    pub const EVENT_WRITE: u32 = 0x46;
    /// `PACKET3_RELEASE_MEM`: at an end-of-pipe event, flush caches, write data, interrupt.
    pub const RELEASE_MEM: u32 = 0x49;
    /// `PACKET3_ACQUIRE_MEM`: invalidate/write back caches over a range before what follows.
    pub const ACQUIRE_MEM: u32 = 0x58;
    /// `PACKET3_SET_SH_REG`: write consecutive SH registers.
    pub const SET_SH_REG: u32 = 0x76;
    /// `PACKET3_SET_UCONFIG_REG`: write consecutive user-config registers.
    pub const SET_UCONFIG_REG: u32 = 0x79;

    /// `(name, value)` of every opcode above (the cross-check against tinygrad's table).
    pub const ALL: &[(&str, u32)] = &[
        ("PACKET3_NOP", NOP),
        ("PACKET3_DISPATCH_DIRECT", DISPATCH_DIRECT),
        ("PACKET3_WAIT_REG_MEM", WAIT_REG_MEM),
        ("PACKET3_INDIRECT_BUFFER", INDIRECT_BUFFER),
        ("PACKET3_EVENT_WRITE", EVENT_WRITE),
        ("PACKET3_RELEASE_MEM", RELEASE_MEM),
        ("PACKET3_ACQUIRE_MEM", ACQUIRE_MEM),
        ("PACKET3_SET_SH_REG", SET_SH_REG),
        ("PACKET3_SET_UCONFIG_REG", SET_UCONFIG_REG),
    ];
}

/// The header `PACKET3(op, count)`: `count` is the number of payload words − 1; `None` when it
/// does not fit its 14 bits (or `op` its 8).
pub const fn header(op: u32, count: u32) -> Option<u32> {
    if count > MAX_COUNT || op > 0xff {
        return None;
    }
    Some(PACKET_TYPE3 << 30 | count << 16 | op << 8)
}

/// `PACKET3_WAIT_REG_MEM` dword 1 (`WAIT_REG_MEM_*` of `nvd.h`) and its compare functions.
pub mod wait_reg_mem {
    /// `WAIT_REG_MEM_FUNCTION(x)`: bits 2:0.
    pub const FUNCTION_SHIFT: u32 = 0;
    /// `WAIT_REG_MEM_MEM_SPACE(x)`: bits 5:4 (0 register, 1 memory).
    pub const MEM_SPACE_SHIFT: u32 = 4;
    /// `WAIT_REG_MEM_OPERATION(x)`: bits 7:6 (0 wait, 1 write the first register then wait on the
    /// second).
    pub const OPERATION_SHIFT: u32 = 6;
    /// `WAIT_REG_MEM_ENGINE(x)`: bits 9:8 (0 = ME).
    pub const ENGINE_SHIFT: u32 = 8;
    /// Function `==` (`PACKET3_WAIT_REG_MEM__FUNCTION__EQUAL_TO_THE_REFERENCE_VALUE`; tinygrad's
    /// `WAIT_REG_MEM_FUNCTION_EQ`).
    pub const FUNCTION_EQ: u32 = 3;
    /// Function `>=` (`...__GREATER_THAN_OR_EQUAL_REFERENCE_VALUE`; `WAIT_REG_MEM_FUNCTION_GEQ`).
    pub const FUNCTION_GEQ: u32 = 5;
    /// `MEM_SPACE` register.
    pub const SPACE_REGISTER: u32 = 0;
    /// `MEM_SPACE` memory.
    pub const SPACE_MEMORY: u32 = 1;
    /// `OPERATION` wait.
    pub const OP_WAIT: u32 = 0;
    /// `OPERATION` write-wait-write (`WR_WAIT_WR_REG`).
    pub const OP_WRITE_WAIT: u32 = 1;
    /// `ENGINE` ME (the micro engine that runs the packet).
    pub const ENGINE_ME: u32 = 0;
    /// The poll interval tinygrad uses (dword 6).
    pub const POLL_INTERVAL: u32 = 4;

    /// Dword 1 from its four fields.
    pub const fn info(function: u32, space: u32, operation: u32, engine: u32) -> u32 {
        function << FUNCTION_SHIFT | space << MEM_SPACE_SHIFT | operation << OPERATION_SHIFT | engine << ENGINE_SHIFT
    }
}

/// `PACKET3_ACQUIRE_MEM` dword 7, `GCR_CNTL` (`PACKET3_ACQUIRE_MEM_GCR_CNTL_*` of `nvd.h`): one
/// bit per cache action.
pub mod gcr {
    /// Invalidate the instruction cache.
    pub const GLI_INV: u32 = 1 << 0;
    /// Range-based L1 action.
    pub const GL1_RANGE: u32 = 1 << 2;
    /// Write back the metadata cache.
    pub const GLM_WB: u32 = 1 << 4;
    /// Invalidate the metadata cache.
    pub const GLM_INV: u32 = 1 << 5;
    /// Write back the scalar (constant) cache.
    pub const GLK_WB: u32 = 1 << 6;
    /// Invalidate the scalar cache.
    pub const GLK_INV: u32 = 1 << 7;
    /// Invalidate the vector L0.
    pub const GLV_INV: u32 = 1 << 8;
    /// Invalidate the L1.
    pub const GL1_INV: u32 = 1 << 9;
    /// L2 unsynchronized.
    pub const GL2_US: u32 = 1 << 10;
    /// Range-based L2 action.
    pub const GL2_RANGE: u32 = 1 << 11;
    /// Discard L2.
    pub const GL2_DISCARD: u32 = 1 << 13;
    /// Invalidate the L2.
    pub const GL2_INV: u32 = 1 << 14;
    /// Write back the L2.
    pub const GL2_WB: u32 = 1 << 15;
    /// Sequence the actions.
    pub const SEQ: u32 = 1 << 16;

    /// `(name, value)` of every bit above (the cross-check).
    pub const ALL: &[(&str, u32)] = &[
        ("GLI_INV", GLI_INV),
        ("GL1_RANGE", GL1_RANGE),
        ("GLM_WB", GLM_WB),
        ("GLM_INV", GLM_INV),
        ("GLK_WB", GLK_WB),
        ("GLK_INV", GLK_INV),
        ("GLV_INV", GLV_INV),
        ("GL1_INV", GL1_INV),
        ("GL2_US", GL2_US),
        ("GL2_RANGE", GL2_RANGE),
        ("GL2_DISCARD", GL2_DISCARD),
        ("GL2_INV", GL2_INV),
        ("GL2_WB", GL2_WB),
        ("SEQ", SEQ),
    ];

    /// What tinygrad's `acquire_mem()` asks for by default: every cache written back and
    /// invalidated (instruction, metadata, scalar, vector L0, L1, L2).
    pub const ALL_CACHES: u32 = GLI_INV | GLM_INV | GLM_WB | GLK_INV | GLK_WB | GLV_INV | GL1_INV | GL2_INV | GL2_WB;
    /// What tinygrad's `exec` acquires before a dispatch (`acquire_mem(gli=0, gl2=0)`): the
    /// shader-side caches only, the instruction cache and L2 left alone.
    pub const SHADER_CACHES: u32 = GLM_INV | GLM_WB | GLK_INV | GLK_WB | GLV_INV | GL1_INV;
}

/// `PACKET3_RELEASE_MEM` dwords 1 and 2 (`PACKET3_RELEASE_MEM_*` of `nvd.h`, the
/// `enum mec_release_mem_*` values of `kfd_pm4_headers_ai.h`).
pub mod release_mem {
    /// `EVENT_TYPE(x)`: bits 5:0 of dword 1.
    pub const EVENT_TYPE_SHIFT: u32 = 0;
    /// `EVENT_INDEX(x)`: bits 11:8 of dword 1.
    pub const EVENT_INDEX_SHIFT: u32 = 8;
    /// `GCR_GLM_WB`.
    pub const GCR_GLM_WB: u32 = 1 << 12;
    /// `GCR_GLM_INV`.
    pub const GCR_GLM_INV: u32 = 1 << 13;
    /// `GCR_GLV_INV`.
    pub const GCR_GLV_INV: u32 = 1 << 14;
    /// `GCR_GL1_INV`.
    pub const GCR_GL1_INV: u32 = 1 << 15;
    /// `GCR_GL2_US`.
    pub const GCR_GL2_US: u32 = 1 << 16;
    /// `GCR_GL2_RANGE`.
    pub const GCR_GL2_RANGE: u32 = 1 << 17;
    /// `GCR_GL2_DISCARD`.
    pub const GCR_GL2_DISCARD: u32 = 1 << 19;
    /// `GCR_GL2_INV`.
    pub const GCR_GL2_INV: u32 = 1 << 20;
    /// `GCR_GL2_WB`.
    pub const GCR_GL2_WB: u32 = 1 << 21;
    /// `GCR_SEQ`.
    pub const GCR_SEQ: u32 = 1 << 22;
    /// `DST_SEL(x)`: bits 17:16 of dword 2 (0 = memory).
    pub const DST_SEL_SHIFT: u32 = 16;
    /// `INT_SEL(x)`: bits 26:24 of dword 2.
    pub const INT_SEL_SHIFT: u32 = 24;
    /// `DATA_SEL(x)`: bits 31:29 of dword 2.
    pub const DATA_SEL_SHIFT: u32 = 29;

    /// `event_index__mec_release_mem__end_of_pipe`.
    pub const EVENT_INDEX_END_OF_PIPE: u32 = 5;
    /// `data_sel__mec_release_mem__none`.
    pub const DATA_NONE: u32 = 0;
    /// `data_sel__mec_release_mem__send_32_bit_low`.
    pub const DATA_32_LOW: u32 = 1;
    /// `data_sel__mec_release_mem__send_64_bit_data`.
    pub const DATA_64: u32 = 2;
    /// `data_sel__mec_release_mem__send_gpu_clock_counter`.
    pub const DATA_GPU_CLOCK: u32 = 3;
    /// `int_sel__mec_release_mem__none`.
    pub const INT_NONE: u32 = 0;
    /// `int_sel__mec_release_mem__send_interrupt_after_write_confirm`.
    pub const INT_AFTER_WRITE_CONFIRM: u32 = 2;

    /// The cache actions of a signal's release (tinygrad's `cache_flush=True`): write back and
    /// invalidate metadata and L2, invalidate vector L0 and L1, in sequence.
    pub const GCR_CACHE_FLUSH: u32 =
        GCR_GLV_INV | GCR_GL1_INV | GCR_GL2_INV | GCR_GLM_WB | GCR_GLM_INV | GCR_GL2_WB | GCR_SEQ;

    /// `(name, value)` of every `GCR_*` bit above (the cross-check).
    pub const GCR_ALL: &[(&str, u32)] = &[
        ("GLM_WB", GCR_GLM_WB),
        ("GLM_INV", GCR_GLM_INV),
        ("GLV_INV", GCR_GLV_INV),
        ("GL1_INV", GCR_GL1_INV),
        ("GL2_US", GCR_GL2_US),
        ("GL2_RANGE", GCR_GL2_RANGE),
        ("GL2_DISCARD", GCR_GL2_DISCARD),
        ("GL2_INV", GCR_GL2_INV),
        ("GL2_WB", GCR_GL2_WB),
        ("SEQ", GCR_SEQ),
    ];

    /// Dword 1: the event, its index, and the cache actions.
    pub const fn event(event_type: u32, event_index: u32, gcr: u32) -> u32 {
        event_type << EVENT_TYPE_SHIFT | event_index << EVENT_INDEX_SHIFT | gcr
    }

    /// Dword 2: what is written and whether an interrupt follows (destination: memory).
    pub const fn select(data_sel: u32, int_sel: u32) -> u32 {
        data_sel << DATA_SEL_SHIFT | int_sel << INT_SEL_SHIFT
    }
}

/// `PACKET3_EVENT_WRITE` dword 1 (`EVENT_TYPE(x)`, `EVENT_INDEX(x)` of `nvd.h`).
pub mod event_write {
    /// `EVENT_TYPE(x)`: bits 5:0.
    pub const EVENT_TYPE_SHIFT: u32 = 0;
    /// `EVENT_INDEX(x)`: bits 11:8.
    pub const EVENT_INDEX_SHIFT: u32 = 8;
    /// `PACKET3_EVENT_WRITE__EVENT_INDEX__CS_PARTIAL_FLUSH` (tinygrad's
    /// `EVENT_INDEX_PARTIAL_FLUSH`, "based on a comment in nvd.h").
    pub const INDEX_CS_PARTIAL_FLUSH: u32 = 4;

    /// Dword 1.
    pub const fn dword(event_type: u32, event_index: u32) -> u32 {
        event_type << EVENT_TYPE_SHIFT | event_index << EVENT_INDEX_SHIFT
    }
}

/// VGT event types (`enum VGT_EVENT_TYPE`, `gc_11_0_0_enum.h`).
pub mod event {
    /// `CS_PARTIAL_FLUSH`: wait for the compute shaders before it to finish.
    pub const CS_PARTIAL_FLUSH: u32 = 7;
    /// `CACHE_FLUSH_AND_INV_TS_EVENT`: the end-of-pipe event `RELEASE_MEM` waits for.
    pub const CACHE_FLUSH_AND_INV_TS_EVENT: u32 = 20;
}

/// `PACKET3_INDIRECT_BUFFER` dword 3 (`nvd.h`).
pub mod indirect_buffer {
    /// `INDIRECT_BUFFER_VALID`.
    pub const VALID: u32 = 1 << 23;
    /// `IB_SIZE`: bits 19:0, the IB's length in dwords.
    pub const SIZE_MASK: u32 = 0xf_ffff;
}
