//! The gfx11 (GC 11.0.0, gfx1100) registers the compute queue writes, declared once with their
//! fields (`hi:lo`) through the core's `register!`.
//!
//! Sources: Linux `drivers/gpu/drm/amd/include/asic_reg/gc/gc_11_0_0_offset.h` and
//! `gc_11_0_0_sh_mask.h` (`regCOMPUTE_*`, all `BASE_IDX 0`, GC segment 0 at dword `0x1260`:
//! `navi31_ip_offset.h` `GC_BASE__INST0_SEG0`), which Mesa's `src/amd/common/sid.h` names by byte
//! address (`R_00B830_COMPUTE_PGM_LO`, ...) and `src/amd/registers/gfx11.json` lists; tinygrad
//! 0.14 reads the same numbers from its `autogen/am/regs.py` (`gc_11_0_0`). `OFFSET` (the core
//! macro's) is the byte address, [`GcReg::REG`] the dword address PM4's `SET_SH_REG` counts from
//! [`SH_REG_START`]. `tests/pm4.rs` checks every address and field against tinygrad's tables
//! (`tests/data/pm4/pm4.json`).

/// One bit field of a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// Its name, lower case as in `gc_11_0_0_sh_mask.h` without the register prefix (a Rust
    /// keyword gets a trailing `_`: `priv_`).
    pub name: &'static str,
    /// Low bit.
    pub lo: u32,
    /// High bit.
    pub hi: u32,
}

/// One register: name, dword address and fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegInfo {
    /// Its name without `reg`/`mm` (`COMPUTE_PGM_LO`).
    pub name: &'static str,
    /// Dword address (segment base + offset).
    pub reg: u32,
    /// Fields.
    pub fields: &'static [FieldInfo],
}

/// A declared GC register's dword address and name.
pub trait GcReg {
    /// Its name.
    const NAME: &'static str;
    /// Dword address (what `SET_SH_REG` offsets are relative to, from [`SH_REG_START`]).
    const REG: u32;
}

/// `PACKET3_SET_SH_REG_START` (Linux `nvd.h`): the first dword address of the SH register window
/// that `SET_SH_REG` writes (offsets in the packet are relative to it).
pub const SH_REG_START: u32 = 0x2c00;
/// `PACKET3_SET_SH_REG_END` (Linux `nvd.h`): one past the window.
pub const SH_REG_END: u32 = 0x3000;
/// `PACKET3_SET_UCONFIG_REG_START` (Linux `nvd.h`): the first dword address of the user-config
/// window that `SET_UCONFIG_REG` writes.
pub const UCONFIG_REG_START: u32 = 0xc000;
/// One past the user-config window as tinygrad's `wreg` bounds it (`START + 2^16 - 1`).
pub const UCONFIG_REG_END: u32 = UCONFIG_REG_START + 0xffff;

macro_rules! gc_regs {
    ($(
        $(#[$meta:meta])*
        $name:ident @ $offset:literal {
            $( $(#[$fmeta:meta])* $hi:literal : $lo:literal $field:ident $kind:tt $fty:tt ; )*
        }
    )*) => {
        hcq::register! {$(
            $(#[$meta])*
            pub $name @ $offset : u32 {
                $( $(#[$fmeta])* $hi : $lo $field $kind $fty ; )*
            }
        )*}
        $(
            impl GcReg for $name {
                const NAME: &'static str = stringify!($name);
                // CAST: byte addresses below 2^18.
                const REG: u32 = ($offset / 4) as u32;
            }
        )*
        /// Every register declared here (the cross-check against tinygrad's tables).
        pub const ALL: &[RegInfo] = &[$(
            RegInfo {
                name: stringify!($name),
                // CAST: as above.
                reg: ($offset / 4) as u32,
                fields: &[$( FieldInfo { name: stringify!($field), lo: $lo, hi: $hi } ),*],
            }
        ),*];
    };
}

gc_regs! {
    /// Starts a dispatch (written by `DISPATCH_DIRECT`'s last dword). `R_00B800`, dword `0x2e00`.
    COMPUTE_DISPATCH_INITIATOR @ 0xb800 {
        /// Run the compute shader.
        0:0 compute_shader_en as bool;
        /// Partial thread groups.
        1:1 partial_tg_en as bool;
        /// Start at group (0, 0, 0), ignoring `COMPUTE_START_*`'s restart state.
        2:2 force_start_at_000 as bool;
        /// Ordered append.
        3:3 ordered_append_enbl as bool;
        /// Ordered append mode.
        4:4 ordered_append_mode as bool;
        /// Dimensions in threads instead of groups.
        5:5 use_thread_dimensions as bool;
        /// Order mode.
        6:6 order_mode as bool;
        /// Invalidate the scalar L1 for volatile accesses.
        10:10 scalar_l1_inv_vol as bool;
        /// Invalidate the vector L1 for volatile accesses.
        11:11 vector_l1_inv_vol as bool;
        /// Reserved.
        12:12 reserved as bool;
        /// Tunnel.
        13:13 tunnel_enable as bool;
        /// Restore.
        14:14 restore as bool;
        /// Wave32 (else wave64).
        15:15 cs_w32_en as bool;
        /// Amplification shader.
        16:16 amp_shader_en as bool;
        /// Disable dispatch preemption.
        17:17 disable_disp_prempt_en as bool;
    }
    /// First work-group, x. `R_00B810`, dword `0x2e04`.
    COMPUTE_START_X @ 0xb810 {
        /// Start.
        31:0 start as u32;
    }
    /// First work-group, y. `R_00B814`, dword `0x2e05`.
    COMPUTE_START_Y @ 0xb814 {
        /// Start.
        31:0 start as u32;
    }
    /// First work-group, z. `R_00B818`, dword `0x2e06`.
    COMPUTE_START_Z @ 0xb818 {
        /// Start.
        31:0 start as u32;
    }
    /// Work-group size, x. `R_00B81C`, dword `0x2e07`.
    COMPUTE_NUM_THREAD_X @ 0xb81c {
        /// Threads of a full group.
        15:0 num_thread_full as u16;
        /// Threads of a partial group.
        31:16 num_thread_partial as u16;
    }
    /// Work-group size, y. `R_00B820`, dword `0x2e08`.
    COMPUTE_NUM_THREAD_Y @ 0xb820 {
        /// Threads of a full group.
        15:0 num_thread_full as u16;
        /// Threads of a partial group.
        31:16 num_thread_partial as u16;
    }
    /// Work-group size, z. `R_00B824`, dword `0x2e09`.
    COMPUTE_NUM_THREAD_Z @ 0xb824 {
        /// Threads of a full group.
        15:0 num_thread_full as u16;
        /// Threads of a partial group.
        31:16 num_thread_partial as u16;
    }
    /// Shader code address bits 39:8 (the code is 256-byte aligned). `R_00B830`, dword `0x2e0c`.
    COMPUTE_PGM_LO @ 0xb830 {
        /// Address >> 8, low 32 bits.
        31:0 data as u32;
    }
    /// Shader code address bits 47:40. `R_00B834`, dword `0x2e0d`.
    COMPUTE_PGM_HI @ 0xb834 {
        /// Address >> 40.
        7:0 data as u8;
    }
    /// Architected flat scratch base bits 39:8. `R_00B840`, dword `0x2e10`.
    COMPUTE_DISPATCH_SCRATCH_BASE_LO @ 0xb840 {
        /// Base >> 8, low 32 bits.
        31:0 data as u32;
    }
    /// Architected flat scratch base bits 47:40. `R_00B844`, dword `0x2e11`.
    COMPUTE_DISPATCH_SCRATCH_BASE_HI @ 0xb844 {
        /// Base >> 40.
        7:0 data as u8;
    }
    /// Shader resources 1 (the kernel descriptor's `compute_pgm_rsrc1`). `R_00B848`, dword `0x2e12`.
    COMPUTE_PGM_RSRC1 @ 0xb848 {
        /// VGPR blocks − 1.
        5:0 vgprs as u8;
        /// SGPR blocks − 1 (ignored on gfx10+).
        9:6 sgprs as u8;
        /// Priority.
        11:10 priority as u8;
        /// Float modes (round and denorm).
        19:12 float_mode as u8;
        /// Privileged (tinygrad sets it on gfx11, a CWSR workaround).
        20:20 priv_ as bool;
        /// DX10 clamp.
        21:21 dx10_clamp as bool;
        /// IEEE mode.
        23:23 ieee_mode as bool;
        /// Bulky.
        24:24 bulky as bool;
        /// FP16 overflow.
        26:26 fp16_ovfl as bool;
        /// WGP mode (else CU mode).
        29:29 wgp_mode as bool;
        /// Memory ordered.
        30:30 mem_ordered as bool;
        /// Forward progress.
        31:31 fwd_progress as bool;
    }
    /// Shader resources 2 (`compute_pgm_rsrc2`, plus the LDS size). `R_00B84C`, dword `0x2e13`.
    COMPUTE_PGM_RSRC2 @ 0xb84c {
        /// Scratch (private segment) wave offset SGPR.
        0:0 scratch_en as bool;
        /// User SGPRs loaded from `COMPUTE_USER_DATA_*`.
        5:1 user_sgpr as u8;
        /// Trap handler present.
        6:6 trap_present as bool;
        /// Work-group id x SGPR.
        7:7 tgid_x_en as bool;
        /// Work-group id y SGPR.
        8:8 tgid_y_en as bool;
        /// Work-group id z SGPR.
        9:9 tgid_z_en as bool;
        /// Thread-group size SGPR.
        10:10 tg_size_en as bool;
        /// Work-item id VGPRs: 0 = x, 1 = x, y, 2 = x, y, z.
        12:11 tidig_comp_cnt as u8;
        /// Exception enables, high bits.
        14:13 excp_en_msb as u8;
        /// LDS per work-group in 512-byte blocks (tinygrad ORs it in).
        23:15 lds_size as u16;
        /// Exception enables.
        30:24 excp_en as u8;
    }
    /// Wave limits. `R_00B854`, dword `0x2e15`.
    COMPUTE_RESOURCE_LIMITS @ 0xb854 {
        /// Waves per shader array (0 = no limit).
        9:0 waves_per_sh as u16;
        /// Thread groups per CU.
        15:12 tg_per_cu as u8;
        /// Lock threshold.
        21:16 lock_threshold as u8;
        /// SIMD destination control.
        22:22 simd_dest_cntl as bool;
        /// Force SIMD distribution.
        23:23 force_simd_dist as bool;
        /// CU group count.
        26:24 cu_group_count as u8;
    }
    /// Scratch ring: waves and bytes per wave. `R_00B860`, dword `0x2e18`.
    COMPUTE_TMPRING_SIZE @ 0xb860 {
        /// Waves with scratch at once.
        11:0 waves as u16;
        /// Scratch per wave in 256-byte units.
        26:12 wavesize as u16;
    }
    /// Restart group, x. `R_00B86C`, dword `0x2e1b`.
    COMPUTE_RESTART_X @ 0xb86c {
        /// Restart.
        31:0 restart as u32;
    }
    /// Restart group, y. `R_00B870`, dword `0x2e1c`.
    COMPUTE_RESTART_Y @ 0xb870 {
        /// Restart.
        31:0 restart as u32;
    }
    /// Restart group, z. `R_00B874`, dword `0x2e1d`.
    COMPUTE_RESTART_Z @ 0xb874 {
        /// Restart.
        31:0 restart as u32;
    }
    /// Shader resources 3 (`compute_pgm_rsrc3`). `R_00B8A0`, dword `0x2e28`.
    COMPUTE_PGM_RSRC3 @ 0xb8a0 {
        /// Shared VGPR count.
        3:0 shared_vgpr_cnt as u8;
        /// Instruction prefetch size.
        9:4 inst_pref_size as u8;
        /// Trap on start.
        10:10 trap_on_start as bool;
        /// Trap on end.
        11:11 trap_on_end as bool;
        /// Image op.
        31:31 image_op as bool;
    }
    /// User SGPR 0. `R_00B900`, dword `0x2e40`.
    COMPUTE_USER_DATA_0 @ 0xb900 { 31:0 data as u32; }
    /// User SGPR 1. `R_00B904`.
    COMPUTE_USER_DATA_1 @ 0xb904 { 31:0 data as u32; }
    /// User SGPR 2. `R_00B908`.
    COMPUTE_USER_DATA_2 @ 0xb908 { 31:0 data as u32; }
    /// User SGPR 3. `R_00B90C`.
    COMPUTE_USER_DATA_3 @ 0xb90c { 31:0 data as u32; }
    /// User SGPR 4. `R_00B910`.
    COMPUTE_USER_DATA_4 @ 0xb910 { 31:0 data as u32; }
    /// User SGPR 5. `R_00B914`.
    COMPUTE_USER_DATA_5 @ 0xb914 { 31:0 data as u32; }
    /// User SGPR 6. `R_00B918`.
    COMPUTE_USER_DATA_6 @ 0xb918 { 31:0 data as u32; }
    /// User SGPR 7. `R_00B91C`.
    COMPUTE_USER_DATA_7 @ 0xb91c { 31:0 data as u32; }
    /// User SGPR 8. `R_00B920`.
    COMPUTE_USER_DATA_8 @ 0xb920 { 31:0 data as u32; }
    /// User SGPR 9. `R_00B924`.
    COMPUTE_USER_DATA_9 @ 0xb924 { 31:0 data as u32; }
    /// User SGPR 10. `R_00B928`.
    COMPUTE_USER_DATA_10 @ 0xb928 { 31:0 data as u32; }
    /// User SGPR 11. `R_00B92C`.
    COMPUTE_USER_DATA_11 @ 0xb92c { 31:0 data as u32; }
    /// User SGPR 12. `R_00B930`.
    COMPUTE_USER_DATA_12 @ 0xb930 { 31:0 data as u32; }
    /// User SGPR 13. `R_00B934`.
    COMPUTE_USER_DATA_13 @ 0xb934 { 31:0 data as u32; }
    /// User SGPR 14. `R_00B938`.
    COMPUTE_USER_DATA_14 @ 0xb938 { 31:0 data as u32; }
    /// User SGPR 15. `R_00B93C`, dword `0x2e4f`.
    COMPUTE_USER_DATA_15 @ 0xb93c { 31:0 data as u32; }
}

/// The user SGPR registers `COMPUTE_USER_DATA_0..15` in order (consecutive dwords).
pub const USER_DATA_COUNT: u32 = 16;

/// The NBIO 4.3 (gfx1100's NBIF) HDP flush registers `memory_barrier` polls, as dword
/// addresses: Linux `asic_reg/nbio/nbio_4_3_0_offset.h` `regBIF_BX_PF0_GPU_HDP_FLUSH_REQ` `0x0106`
/// and `regBIF_BX_PF0_GPU_HDP_FLUSH_DONE` `0x0107`, both `BASE_IDX 2`, NBIO segment 2 at
/// `0x0d20` (`navi31_ip_offset.h` `NBIO_BASE__INST0_SEG2`); tinygrad's `AMDIP('nbio', (4, 3, 0))`
/// resolves them the same way (PF0, since the NBIO version is not 7.11).
pub mod nbio {
    /// `NBIO_BASE__INST0_SEG2`.
    pub const SEG2_BASE: u32 = 0x0d20;
    /// `regBIF_BX_PF0_GPU_HDP_FLUSH_REQ`: the flush request (written by the CP's wait-write).
    pub const GPU_HDP_FLUSH_REQ: u32 = SEG2_BASE + 0x0106;
    /// `regBIF_BX_PF0_GPU_HDP_FLUSH_DONE`: polled until the request's bits are back.
    pub const GPU_HDP_FLUSH_DONE: u32 = SEG2_BASE + 0x0107;
}

/// Where `reg` (a dword address) lies for a PM4 register write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// The SH window: `SET_SH_REG` with this offset from [`SH_REG_START`].
    Sh(u32),
    /// The user-config window: `SET_UCONFIG_REG` with this offset from [`UCONFIG_REG_START`].
    Uconfig(u32),
}

/// The window of dword address `reg`, or an error naming it when PM4 cannot write it (tinygrad's
/// `wreg` refuses the same way).
pub fn window(reg: u32) -> hcq::Result<Window> {
    if (SH_REG_START..SH_REG_END).contains(&reg) {
        Ok(Window::Sh(reg - SH_REG_START))
    } else if (UCONFIG_REG_START..UCONFIG_REG_END).contains(&reg) {
        Ok(Window::Uconfig(reg - UCONFIG_REG_START))
    } else {
        Err(hcq::Error::InvalidArgument {
            what: "gfx11 register outside the SH (0x2c00..0x3000) and UCONFIG (0xc000..) windows PM4 writes",
            value: u64::from(reg),
        })
    }
}
