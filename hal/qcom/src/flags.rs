//! KGSL flag words as `bitflags` types (`msm_kgsl.h`; `docs/adreno.md` (e)).

use bitflags::bitflags;

bitflags! {
    /// `KGSL_CONTEXT_*` for `DRAWCTXT_CREATE`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ContextFlags: u32 {
        /// `KGSL_CONTEXT_SAVE_GMEM`.
        const SAVE_GMEM = 0x1;
        /// `KGSL_CONTEXT_NO_GMEM_ALLOC`.
        const NO_GMEM_ALLOC = 0x2;
        /// `KGSL_CONTEXT_SUBMIT_IB_LIST`.
        const SUBMIT_IB_LIST = 0x4;
        /// `KGSL_CONTEXT_CTX_SWITCH`.
        const CTX_SWITCH = 0x8;
        /// `KGSL_CONTEXT_PREAMBLE`.
        const PREAMBLE = 0x10;
        /// `KGSL_CONTEXT_TRASH_STATE`.
        const TRASH_STATE = 0x20;
        /// `KGSL_CONTEXT_PER_CONTEXT_TS`.
        const PER_CONTEXT_TS = 0x40;
        /// `KGSL_CONTEXT_USER_GENERATED_TS`.
        const USER_GENERATED_TS = 0x80;
        /// `KGSL_CONTEXT_END_OF_FRAME`.
        const END_OF_FRAME = 0x100;
        /// `KGSL_CONTEXT_NO_FAULT_TOLERANCE`.
        const NO_FAULT_TOLERANCE = 0x200;
        /// `KGSL_CONTEXT_SYNC`.
        const SYNC = 0x400;
        /// `KGSL_CONTEXT_PWR_CONSTRAINT`.
        const PWR_CONSTRAINT = 0x800;
        /// `KGSL_CONTEXT_PRIORITY_MASK` (priority in bits 15:12).
        const PRIORITY_MASK = 0xf000;
        /// `KGSL_CONTEXT_IFH_NOP`.
        const IFH_NOP = 0x1_0000;
        /// `KGSL_CONTEXT_SECURE`.
        const SECURE = 0x2_0000;
        /// `KGSL_CONTEXT_NO_SNAPSHOT`.
        const NO_SNAPSHOT = 0x4_0000;
        /// `KGSL_CONTEXT_TYPE_MASK` (type in bits 24:20).
        const TYPE_MASK = 0x01f0_0000;
        /// `KGSL_CONTEXT_TYPE_CL << 20`.
        const TYPE_CL = 2 << 20;
        /// `KGSL_CONTEXT_PREEMPT_STYLE_MASK` (bits 27:25).
        const PREEMPT_STYLE_MASK = 0x0e00_0000;
        /// `KGSL_CONTEXT_PREEMPT_STYLE_FINEGRAIN << 25`.
        const PREEMPT_FINEGRAIN = 2 << 25;
        /// `KGSL_CONTEXT_INVALIDATE_ON_FAULT`.
        const INVALIDATE_ON_FAULT = 0x1000_0000;
    }
}

impl ContextFlags {
    /// The priority field (0 highest .. 15).
    pub fn with_priority(self, prio: u8) -> Self {
        (self - Self::PRIORITY_MASK) | Self::from_bits_retain(u32::from(prio & 0xf) << 12)
    }

    /// What tinygrad uses for compute: preamble, power constraint, no fault tolerance, no GMEM,
    /// priority 8, fine-grain preemption.
    pub fn compute() -> Self {
        (Self::PREAMBLE
            | Self::PWR_CONSTRAINT
            | Self::NO_FAULT_TOLERANCE
            | Self::NO_GMEM_ALLOC
            | Self::PREEMPT_FINEGRAIN)
            .with_priority(8)
    }
}

bitflags! {
    /// `KGSL_MEMFLAGS_*` for `GPUOBJ_ALLOC` and `MAP_USER_MEM`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MemFlags: u64 {
        /// `KGSL_MEMFLAGS_SECURE`.
        const SECURE = 0x8;
        /// `KGSL_MEMFLAGS_USERMEM_MASK` (bits 7:5).
        const USERMEM_MASK = 0xe0;
        /// `(KGSL_USER_MEM_TYPE_ADDR + 1) << 5`.
        const USERMEM_ADDR = 0x60;
        /// `KGSL_MEMTYPE_MASK` (bits 15:8).
        const MEMTYPE_MASK = 0xff00;
        /// `KGSL_MEMALIGN_MASK` (log2 alignment in bits 23:16).
        const MEMALIGN_MASK = 0x00ff_0000;
        /// `KGSL_MEMFLAGS_GPUREADONLY`.
        const GPUREADONLY = 0x0100_0000;
        /// `KGSL_MEMFLAGS_GPUWRITEONLY`.
        const GPUWRITEONLY = 0x0200_0000;
        /// `KGSL_CACHEMODE_MASK` (bits 27:26).
        const CACHEMODE_MASK = 0x0c00_0000;
        /// `KGSL_CACHEMODE_UNCACHED << 26`.
        const CACHEMODE_UNCACHED = 1 << 26;
        /// `KGSL_CACHEMODE_WRITEBACK << 26`.
        const CACHEMODE_WRITEBACK = 3 << 26;
        /// `KGSL_MEMFLAGS_USE_CPU_MAP`: the GPU address equals the CPU mapping's address.
        const USE_CPU_MAP = 0x1000_0000;
        /// `KGSL_MEMFLAGS_IOCOHERENT`.
        const IOCOHERENT = 0x8000_0000;
        /// `KGSL_MEMFLAGS_FORCE_32BIT`.
        const FORCE_32BIT = 1 << 32;
    }
}

impl MemFlags {
    /// Alignment `1 << log2` in the MEMALIGN field.
    pub fn with_align_log2(self, log2: u8) -> Self {
        (self - Self::MEMALIGN_MASK) | Self::from_bits_retain(u64::from(log2) << 16)
    }
}

bitflags! {
    /// `KGSL_CMDLIST_*` for a command object.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct CmdlistFlags: u32 {
        /// `KGSL_CMDLIST_IB`.
        const IB = 0x1;
        /// `KGSL_CMDLIST_CTXTSWITCH_PREAMBLE`.
        const CTXTSWITCH_PREAMBLE = 0x2;
        /// `KGSL_CMDLIST_IB_PREAMBLE`.
        const IB_PREAMBLE = 0x4;
    }
}

bitflags! {
    /// `KGSL_CMDBATCH_*` for `GPU_COMMAND`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct CmdbatchFlags: u64 {
        /// `KGSL_CMDBATCH_MEMLIST`.
        const MEMLIST = 0x1;
        /// `KGSL_CMDBATCH_MARKER`.
        const MARKER = 0x2;
        /// `KGSL_CMDBATCH_PROFILING`.
        const PROFILING = 0x10;
        /// `KGSL_CMDBATCH_PROFILING_KTIME`.
        const PROFILING_KTIME = 0x20;
    }
}
