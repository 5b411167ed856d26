//! a6xx registers used for compute dispatch and timing, declared once with the core's
//! `register!`. Source: Mesa `a6xx.xml` (domain `A6XX`, entries valid for variant A6XX);
//! offsets in the docs are dword indices. `tests/xml.rs` checks every offset and field.

use crate::reg::RegArray;

crate::__adreno_regs! {
    /// Compute shader control: thread mode, register footprints, branch stack, wave size. Dword `0xa9b0`.
    SP_CS_CNTL_0 @ 0x2a6c0 : u32 {
        /// SINGLE: one concurrent wave per SP.
        0:0 threadmode as bool;
        /// Half registers used (max_half_reg + 1).
        6:1 halfregfootprint as u8;
        /// Full registers used (max_reg + 1).
        12:7 fullregfootprint as u8;
        /// Branch stack depth.
        19:14 branchstack as u8;
        /// 0 = THREAD64, 1 = THREAD128 (`a6xx_threadsize`).
        20:20 threadsize as bool;
        /// Half registers overlap the full ones.
        31:31 mergedregs as bool;
    }
    /// Shared (local) memory size and the const/local RAM split. Dword `0xa9b1`.
    SP_CS_CNTL_1 @ 0x2a6c4 : u32 {
        /// 0 = all 32 KiB, else (n + 1) KiB.
        4:0 shared_size as u8;
        /// `a6xx_const_ram_mode`: CONSTLEN_128/192/256.
        6:5 constantrammode as u8;
    }
    /// Boolean control-flow mask (0 for our kernels). Dword `0xa9b2`.
    SP_CS_BOOLEAN_CF_MASK @ 0x2a6c8 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Entry offset inside the shader object. Dword `0xa9b3`.
    SP_CS_PROGRAM_COUNTER_OFFSET @ 0x2a6cc : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Shader code address (reg64, 32-byte aligned). Dword `0xa9b4`.
    SP_CS_BASE @ 0x2a6d0 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// Private memory per item and hardware stack size. Dword `0xa9b6`.
    SP_CS_PVT_MEM_PARAM @ 0x2a6d8 : u32 {
        /// Private bytes per item, shr 9 (units of 512 B).
        7:0 memsizeperitem as u8;
        /// Hardware return stack, units of 4 calls.
        31:24 hwstacksizeperthread as u8;
    }
    /// Private memory address (reg64). Dword `0xa9b7`.
    SP_CS_PVT_MEM_BASE @ 0x2a6dc : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// Total private memory. Dword `0xa9b9`.
    SP_CS_PVT_MEM_SIZE @ 0x2a6e4 : u32 {
        /// Bytes shr 12 (units of 4 KiB).
        17:0 totalpvtmemsize as u32;
        /// Per-wave instead of per-fiber layout.
        31:31 perwavememlayout as bool;
    }
    /// Texture state size. Dword `0xa9ba`.
    SP_CS_TSIZE @ 0x2a6e8 : u32 {
        /// Count.
        7:0 tsize as u8;
    }
    /// Compute stage enable and texture/sampler/UAV counts. Dword `0xa9bb`.
    SP_CS_CONFIG @ 0x2a6ec : u32 {
        /// Bindless textures.
        0:0 bindless_tex as bool;
        /// Bindless samplers.
        1:1 bindless_samp as bool;
        /// Bindless UAVs.
        2:2 bindless_uav as bool;
        /// Bindless UBOs.
        3:3 bindless_ubo as bool;
        /// Stage enabled.
        8:8 enabled as bool;
        /// Texture count.
        16:9 ntex as u8;
        /// Sampler count.
        21:17 nsamp as u8;
        /// UAV (IBO) count.
        28:22 nuav as u8;
    }
    /// Shader length in 128-byte units (`low=0 high=27`). Dword `0xa9bc`.
    SP_CS_INSTR_SIZE @ 0x2a6f0 : u32 {
        /// Units of 128 B.
        27:0 instr_size as u32;
    }
    /// Where the hardware stack starts in private memory. Dword `0xa9bd`.
    SP_CS_PVT_MEM_STACK_OFFSET @ 0x2a6f4 : u32 {
        /// Bytes shr 11 (units of 2 KiB). tinygrad writes the byte offset; we follow the XML.
        18:0 offset as u32;
    }
    /// Compute sampler descriptors (reg64, 16-byte aligned). Dword `0xa9e2`.
    SP_CS_SAMPLER_BASE @ 0x2a788 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// Compute texture descriptors (reg64, 64-byte aligned). Dword `0xa9e6`.
    SP_CS_TEXMEMOBJ_BASE @ 0x2a798 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// Compute UAV (IBO) descriptors (reg64, 16-byte aligned; A6XX offset). Dword `0xa9f2`.
    SP_CS_UAV_BASE @ 0x2a7c8 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// UAV state size. Dword `0xaa00`.
    SP_CS_USIZE @ 0x2a800 : u32 {
        /// Count.
        6:0 usize as u8;
    }
    /// Shader-processor mode: constant demotion, ISAM mode. Dword `0xab00`.
    SP_MODE_CNTL @ 0x2ac00 : u32 {
        /// Half loads from the const file demote 32-bit values.
        0:0 constant_demotion_enable as bool;
        /// `a6xx_isam_mode`: CL 1, GL 2.
        2:1 isammode as u8;
        /// Shared constants.
        3:3 shared_consts_enable as bool;
    }
    /// Per-stage enables of some performance counters (tinygrad sets CS). Dword `0xae0f`.
    SP_PERFCTR_SHADER_MASK @ 0x2b83c : u32 {
        /// Compute stage.
        5:5 cs as bool;
    }
    /// Compute border-colour table (reg64, 128-byte aligned). Dword `0xb180`.
    TPL1_CS_BORDER_COLOR_BASE @ 0x2c600 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// Texture pipe debug/ECO control (`usage="init"`). Dword `0xb600`.
    TPL1_DBG_ECO_CNTL @ 0x2d800 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Texture pipe mode. Dword `0xb309`.
    TPL1_MODE_CNTL @ 0x2cc24 : u32 {
        /// `a6xx_isam_mode`.
        1:0 isammode as u8;
    }
    /// Fragment input register ids (0xfc = unused; compute writes 0xfcfcfcfc). Dword `0xb983`.
    SP_REG_PROG_ID_0 @ 0x2e60c : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Fragment input register ids. Dword `0xb984`.
    SP_REG_PROG_ID_1 @ 0x2e610 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Fragment input register ids. Dword `0xb985`.
    SP_REG_PROG_ID_2 @ 0x2e614 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Fragment input register ids. Dword `0xb986`.
    SP_REG_PROG_ID_3 @ 0x2e618 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Constant file length and enable (`a6xx_xs_const_config`, A6XX offset). Dword `0xb987`.
    SP_CS_CONST_CONFIG @ 0x2e61c : u32 {
        /// Constants in vec4, shr 2 (units of 4 vec4). tinygrad writes the whole register as
        /// 0x100 (CONSTLEN 0, ENABLED); we follow the XML and write `load_vec4 >> 2`.
        7:0 constlen as u8;
        /// Constants enabled.
        8:8 enabled as bool;
    }
    /// Kernel dimensions and local size minus one (A6XX). Dword `0xb990`.
    SP_CS_NDRANGE_0 @ 0x2e640 : u32 {
        /// Dimensions.
        1:0 kerneldim as u8;
        /// Local size X − 1.
        11:2 localsizex as u16;
        /// Local size Y − 1.
        21:12 localsizey as u16;
        /// Local size Z − 1.
        31:22 localsizez as u16;
    }
    /// Global size X in threads. Dword `0xb991`.
    SP_CS_NDRANGE_1 @ 0x2e644 : u32 {
        /// Threads.
        31:0 globalsize_x as u32;
    }
    /// Global offset X. Dword `0xb992`.
    SP_CS_NDRANGE_2 @ 0x2e648 : u32 {
        /// Offset.
        31:0 globaloff_x as u32;
    }
    /// Global size Y in threads. Dword `0xb993`.
    SP_CS_NDRANGE_3 @ 0x2e64c : u32 {
        /// Threads.
        31:0 globalsize_y as u32;
    }
    /// Global offset Y. Dword `0xb994`.
    SP_CS_NDRANGE_4 @ 0x2e650 : u32 {
        /// Offset.
        31:0 globaloff_y as u32;
    }
    /// Global size Z in threads. Dword `0xb995`.
    SP_CS_NDRANGE_5 @ 0x2e654 : u32 {
        /// Threads.
        31:0 globalsize_z as u32;
    }
    /// Global offset Z. Dword `0xb996`.
    SP_CS_NDRANGE_6 @ 0x2e658 : u32 {
        /// Offset.
        31:0 globaloff_z as u32;
    }
    /// Registers that receive the work-group id, size, offset and local id. Dword `0xb997`.
    SP_CS_CONST_CONFIG_0 @ 0x2e65c : u32 {
        /// Work-group id regid.
        7:0 wgidconstid as u8;
        /// Work-group size regid (0xfc = unused).
        15:8 wgsizeconstid as u8;
        /// Work-group offset regid.
        23:16 wgoffsetconstid as u8;
        /// Local id regid.
        31:24 localidregid as u8;
    }
    /// Linear local id register and wave size (must match SP_CS_CNTL_0). Dword `0xb998`.
    SP_CS_WGE_CNTL @ 0x2e660 : u32 {
        /// Linear local id regid.
        7:0 linearlocalidregid as u8;
        /// Use one SP core.
        8:8 single_sp_core as bool;
        /// 0 = THREAD64, 1 = THREAD128.
        9:9 threadsize as bool;
    }
    /// Number of work-groups in X. Dword `0xb999`.
    SP_CS_KERNEL_GROUP_X @ 0x2e664 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Number of work-groups in Y. Dword `0xb99a`.
    SP_CS_KERNEL_GROUP_Y @ 0x2e668 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Number of work-groups in Z. Dword `0xb99b`.
    SP_CS_KERNEL_GROUP_Z @ 0x2e66c : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Clears pending CP_LOAD_STATE6 loads per state kind (A6XX offset). Dword `0xbb08`.
    SP_UPDATE_CNTL @ 0x2ec20 : u32 {
        /// Compute shader, UBO, texture and sampler state.
        5:5 cs_state as bool;
        /// Compute UAV state.
        6:6 cs_uav as bool;
    }
    /// CP ringbuffer base address (reg64; the GPU's register bus takes it as two 32-bit writes,
    /// low dword first, like Linux's `gpu_write64`). Dword `0x0800`.
    CP_RB_BASE @ 0x2000 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// CP ringbuffer control. `a6xx.xml` declares the register without fields; the fields are
    /// the common `CP_RB_CNTL` of `adreno_common.xml` (domain AXXX), which Linux's a6xx driver
    /// also uses. Dword `0x0802`.
    CP_RB_CNTL @ 0x2008 : u32 {
        /// Ring size: log2(bytes / 8).
        5:0 bufsz as u8;
        /// Read-pointer report block: log2(block bytes / 8).
        13:8 blksz as u8;
        /// Byte swap of ring fetches (0 = none).
        17:16 buf_swap as u8;
        /// Poll enable.
        20:20 poll_en as bool;
        /// Do not write the read pointer to `CP_RB_RPTR_ADDR`.
        27:27 no_update as bool;
        /// Allow the host to write `CP_RB_RPTR`.
        31:31 rptr_wr_en as bool;
    }
    /// GPU address the CP writes its read pointer to (the RPTR shadow; reg64). Dword `0x0804`.
    CP_RB_RPTR_ADDR @ 0x2010 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
    /// CP read pointer, in dwords from `CP_RB_BASE` (what the CP has fetched). Dword `0x0806`.
    CP_RB_RPTR @ 0x2018 : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// CP write pointer, in dwords from `CP_RB_BASE`: the doorbell. Dword `0x0807`.
    CP_RB_WPTR @ 0x201c : u32 {
        /// The whole register.
        31:0 value as u32;
    }
    /// Free-running 19.2 MHz counter (reg64, A6XX-A7XX offset). Dword `0x0980`.
    CP_ALWAYS_ON_COUNTER @ 0x2600 : u64 {
        /// The whole register.
        63:0 value as u64;
    }
}

/// `SP_CS_NDRANGE_0..6`: seven consecutive registers (A6XX).
pub const SP_CS_NDRANGE: RegArray = RegArray { name: "SP_CS_NDRANGE_", base: 0xb990, stride: 1, len: 7 };
/// `SP_REG_PROG_ID_0..3`.
pub const SP_REG_PROG_ID: RegArray = RegArray { name: "SP_REG_PROG_ID_", base: 0xb983, stride: 1, len: 4 };
/// `SP_CS_KERNEL_GROUP_X/Y/Z`.
pub const SP_CS_KERNEL_GROUP: RegArray = RegArray { name: "SP_CS_KERNEL_GROUP_", base: 0xb999, stride: 1, len: 3 };
/// Every register array above.
pub const ARRAYS: &[RegArray] = &[SP_CS_NDRANGE, SP_REG_PROG_ID, SP_CS_KERNEL_GROUP];
