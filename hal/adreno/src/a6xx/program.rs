//! a630 programs: a shader blob plus its bundle metadata (`programs[].adreno`, see the shared
//! bundles README "Adreno 630 objects") becomes a validated [`Program`].
//!
//! Validation checks everything the encoder and the constant-block writer rely on: the code
//! image lies inside the blob and fits the packet fields, the register footprints fit their
//! fields and agree with the metadata's own `SP_CS_CNTL_0`, every constant (argument address,
//! integer value, immediate, local size) lies inside the block the GPU loads and no two
//! overlap, and the local size respects `max_threads`. Textures, samplers and IBOs are checked
//! by [`crate::a6xx::descriptors`]: the descriptors are rebuilt from the image metadata and must
//! equal the words the metadata carries.
//!
//! Nothing the metadata says is taken on trust where it could contradict itself or the blob:
//! the four blob parts lie inside the blob, the immediates equal the blob's, every register
//! entry is one of the a6xx dispatch registers at its database offset and the values the
//! metadata states twice agree (`SP_CS_INSTR_SIZE`, `SP_CS_PROGRAM_COUNTER_OFFSET`,
//! `SP_CS_PVT_MEM_*`, `SP_CS_CONST_CONFIG_0` = `wgid`/`wgsz`/`lid`), each address slot names a
//! buffer of the signature at `buf_off + 8·slot`, the work-group id lies in the shared register
//! file, the local id inside the register footprint, the private-memory sizes follow from
//! `pvtmem` and the shared size from `shmem` (formulas: `examples/FORMAT.md`,
//! "programs[].adreno"). The sizes the device bounds are [`A630_LIMITS`], which the core's
//! `Hcqb::check_limits` applies before this runs.

use crate::a6xx::regs;
use crate::limits::GpuLimits;
use crate::reg::Reg;
use alloc::string::String;
use alloc::vec::Vec;
use hcq::{Error, Result};

mod meta;

use meta::json_key_before;
pub use meta::{ArgMeta, BlobMeta, ConstsMeta, DescriptorsMeta, ImageMeta, ImmMeta, Meta, RegValue, SigMeta, ValMeta};

/// Largest work-group the a6xx accepts (`SP_CS_NDRANGE_0` local sizes, Mesa's limit).
pub const MAX_WORKGROUP_THREADS: u32 = 1024;
/// Code units of 128 bytes that `CP_LOAD_STATE6` `NUM_UNIT` (10 bits) can load.
pub const MAX_CODE_UNITS: u32 = 0x3ff;
/// Most kernel arguments a launch may have (tinygrad caps them at 63).
pub const MAX_ARGS: u32 = 64;
/// Shared memory on a630 (SP_CS_CNTL_1 SHARED_SIZE = 0 means all of it).
pub const MAX_SHARED_BYTES: u32 = 32 * 1024;
/// General-purpose registers r0..r47 per fiber (`shared/notes/adreno-ir3-isa.md` §2, Mesa
/// `ir3.h` GPR_REG_SIZE); half registers hr0..hr47 overlay r0..r23 (merged file, a6xx).
pub const GPRS: u32 = 48;
/// First regid of the shared (per-wave) registers r48.x..r55.w, where the work-group id goes
/// (`ir3.h` SHARED_REG_START; notes §2, §7).
pub const SHARED_REGID_FIRST: u32 = 4 * 48;
/// Last regid of the shared registers (r55.w).
pub const SHARED_REGID_LAST: u32 = 4 * 56 - 1;
/// Mesa's INVALID_REG regid (0xfc, r63.x): "not assigned" in the dispatch registers.
pub const REGID_NONE: u32 = 0xfc;

/// What an a630 gives one program and one dispatch (the QCOM device states these; the core's
/// `Hcqb::check_limits` compares every program's metadata and every launch's grid with them
/// before anything is allocated). Sources, `shared/reference/adreno/a6xx.xml` unless named:
/// - constant RAM: 256 vec4 = 4 KiB, the largest `a6xx_const_ram_mode` (CONSTLEN_256; Mesa
///   `ir3_compiler.c` max_const_compute = 256, notes `adreno-ir3-isa.md` §3); a launch's
///   texture, IBO and sampler descriptors lie in its kernarg block too (tinygrad: from 2 KiB),
///   inside these 4 KiB;
/// - code: 1023 units of 128 bytes (`CP_LOAD_STATE6` NUM_UNIT, [`MAX_CODE_UNITS`]);
/// - private memory per fiber: MEMSIZEPERITEM, 8 bits in units of 512 B
///   (`a6xx_sp_xs_pvt_mem_param`): 255 × 512 bytes;
/// - private/stack buffer: TOTALPVTMEMSIZE, 18 bits in units of 4 KiB (`a6xx_sp_xs_pvt_mem_size`);
/// - shared memory: 32 KiB (SP_CS_CNTL_1 SHARED_SIZE, [`MAX_SHARED_BYTES`]);
/// - registers: [`GPRS`] full and half registers; branch stack: BRANCHSTACK, 6 bits
///   (`a6xx_sp_xs_cntl_0`);
/// - work-group: 1024 threads ([`MAX_WORKGROUP_THREADS`]);
/// - grid: 65535 work-groups per dimension, what Mesa's Vulkan driver for a6xx states
///   (turnip `tu_device.cc`, maxComputeWorkGroupCount); no total beyond that (a simulator states
///   its own).
pub const A630_LIMITS: GpuLimits = GpuLimits {
    const_bytes: 256 * 16,
    code_bytes: MAX_CODE_UNITS * 128,
    private_bytes_per_thread: 255 * 512,
    stack_bytes: ((1 << 18) - 1) * 4096,
    shared_bytes: MAX_SHARED_BYTES,
    full_regs: GPRS,
    half_regs: GPRS,
    branch_stack: 63,
    workgroup_threads: MAX_WORKGROUP_THREADS,
    max_groups: [65535; 3],
    max_total_groups: 65535 * 65535 * 65535,
};

/// The program-specific register values the encoder writes (from `adreno.regs`, checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramRegs {
    /// `SP_CS_CNTL_0`.
    pub cntl_0: regs::SP_CS_CNTL_0,
    /// `SP_CS_CNTL_1`.
    pub cntl_1: regs::SP_CS_CNTL_1,
    /// `SP_CS_PVT_MEM_PARAM`.
    pub pvt_mem_param: regs::SP_CS_PVT_MEM_PARAM,
    /// `SP_CS_PVT_MEM_SIZE`.
    pub pvt_mem_size: regs::SP_CS_PVT_MEM_SIZE,
    /// `SP_CS_CONFIG`.
    pub config: regs::SP_CS_CONFIG,
    /// `SP_MODE_CNTL`.
    pub mode_cntl: regs::SP_MODE_CNTL,
    /// `TPL1_MODE_CNTL`.
    pub tpl1_mode_cntl: regs::TPL1_MODE_CNTL,
    /// `SP_CS_CONST_CONFIG_0` (work-group id / size / local id registers).
    pub const_config_0: regs::SP_CS_CONST_CONFIG_0,
    /// `SP_CS_WGE_CNTL`.
    pub wge_cntl: regs::SP_CS_WGE_CNTL,
    /// `SP_CS_CONST_CONFIG`, encoded as the XML says (CONSTLEN in units of 4 vec4), not as the
    /// metadata's tinygrad value (which leaves CONSTLEN at 0): see [`Program::from_parts`].
    pub const_config: regs::SP_CS_CONST_CONFIG,
    /// `SP_CS_PVT_MEM_STACK_OFFSET`, encoded as the XML says (units of 2 KiB).
    pub stack_offset: regs::SP_CS_PVT_MEM_STACK_OFFSET,
}

/// What a constant-block slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The 64-bit address of launch argument `arg`.
    Arg {
        /// Index into the launch's arguments.
        arg: u32,
    },
    /// Integer argument `index` (32-bit).
    Val {
        /// Index into the launch's integer values.
        index: u32,
    },
    /// An immediate constant.
    Imm {
        /// Its value.
        value: u32,
    },
    /// The three u32 of the local size.
    LocalSize,
    /// A texture or IBO descriptor (16 dwords) of image launch argument `arg`: `words` with
    /// the argument's device address in dwords 4 (low) and 5 (high), as tinygrad's
    /// `QCOMArgsState` writes them.
    Image {
        /// Index into the launch's arguments.
        arg: u32,
        /// The descriptor, address dwords 0.
        words: [u32; 16],
    },
    /// A sampler descriptor (4 dwords).
    Sampler {
        /// The descriptor.
        words: [u32; 4],
    },
}

/// The texture, IBO and sampler state of a program: counts and where in the constant block
/// their descriptors lie (byte offsets; `CP_LOAD_STATE6` loads them from there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Descriptors {
    /// Textures (`SB6_CS_TEX` constants, 16 dwords each), at `tex_off`.
    pub tex_cnt: u32,
    /// IBOs (`ST6_UAV` in `SB6_CS_SHADER`, 16 dwords each), at `ibo_off`.
    pub ibo_cnt: u32,
    /// Samplers (`ST6_SHADER` in `SB6_CS_TEX`, 4 dwords each), at `samp_off`.
    pub samp_cnt: u32,
    /// Byte offset of the texture descriptors.
    pub tex_off: u32,
    /// Byte offset of the IBO descriptors.
    pub ibo_off: u32,
    /// Byte offset of the samplers.
    pub samp_off: u32,
}

/// A validated a630 program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// GPU kernel name.
    pub name: String,
    /// The shader machine code (what gets uploaded, 128-byte units, zero padded).
    pub image: Vec<u8>,
    /// Code length in 128-byte units (`SP_CS_INSTR_SIZE`, `CP_LOAD_STATE6` `NUM_UNIT`).
    pub code_units: u32,
    /// Entry offset in the code.
    pub entry: u32,
    /// Registers.
    pub regs: ProgramRegs,
    /// vec4 constants loaded per dispatch (`CP_LOAD_STATE6` `NUM_UNIT`).
    pub load_vec4: u32,
    /// Bytes of the constant block a launch must provide (`max(kernarg_alloc_size, load_vec4 × 16)`:
    /// the GPU reads `load_vec4 × 16` bytes even where tinygrad only allocates 2 KiB).
    pub const_block_bytes: u32,
    /// Byte offset → slot, sorted by offset, non-overlapping.
    pub slots: Vec<(u32, Slot)>,
    /// Largest work-group (threads).
    pub max_threads: u32,
    /// Private memory per thread (bytes); 0 for every shared bundle.
    pub pvtmem: u32,
    /// Private/stack buffer the dispatch needs (bytes).
    pub stack_bytes: u64,
    /// Number of buffer arguments the launch must pass.
    pub n_args: u32,
    /// Number of integer arguments.
    pub n_vals: u32,
    /// Textures, IBOs and samplers.
    pub descriptors: Descriptors,
    /// The image arguments: launch argument, and the bytes its buffer must hold (height ×
    /// pitch).
    pub images: Vec<(u32, u64)>,
}

/// The registers `adreno.regs` may name (`examples/FORMAT.md`), at their a6xx database offsets.
pub const DISPATCH_REGS: [(&str, u32); 14] = [
    (regs::SP_CS_CNTL_0::NAME, regs::SP_CS_CNTL_0::REG),
    (regs::SP_CS_CNTL_1::NAME, regs::SP_CS_CNTL_1::REG),
    (regs::SP_CS_BOOLEAN_CF_MASK::NAME, regs::SP_CS_BOOLEAN_CF_MASK::REG),
    (regs::SP_CS_PROGRAM_COUNTER_OFFSET::NAME, regs::SP_CS_PROGRAM_COUNTER_OFFSET::REG),
    (regs::SP_CS_PVT_MEM_PARAM::NAME, regs::SP_CS_PVT_MEM_PARAM::REG),
    (regs::SP_CS_PVT_MEM_SIZE::NAME, regs::SP_CS_PVT_MEM_SIZE::REG),
    (regs::SP_CS_CONST_CONFIG::NAME, regs::SP_CS_CONST_CONFIG::REG),
    (regs::SP_CS_PVT_MEM_STACK_OFFSET::NAME, regs::SP_CS_PVT_MEM_STACK_OFFSET::REG),
    (regs::SP_CS_INSTR_SIZE::NAME, regs::SP_CS_INSTR_SIZE::REG),
    (regs::SP_CS_CONFIG::NAME, regs::SP_CS_CONFIG::REG),
    (regs::SP_MODE_CNTL::NAME, regs::SP_MODE_CNTL::REG),
    (regs::TPL1_MODE_CNTL::NAME, regs::TPL1_MODE_CNTL::REG),
    (regs::SP_CS_CONST_CONFIG_0::NAME, regs::SP_CS_CONST_CONFIG_0::REG),
    (regs::SP_CS_WGE_CNTL::NAME, regs::SP_CS_WGE_CNTL::REG),
];

fn bad(what: &'static str, at: u64, reason: &'static str) -> Error {
    Error::Malformed { what, at, reason }
}

fn need_reg<R: Reg>(m: &Meta) -> Result<u32> {
    let v = m.regs.get(R::NAME).ok_or(bad("adreno metadata regs", 0, "a required register is missing"))?;
    if v.reg != R::REG {
        return Err(Error::Mismatch {
            what: "adreno metadata regs: register offset differs from the a6xx register database",
            expected: R::REG.into(),
            found: v.reg.into(),
        })
        .map_err(|e| e.context(alloc::format!("register {}", R::NAME)));
    }
    Ok(v.value)
}

impl Program {
    /// Parse the metadata JSON (`programs[].adreno`) and validate it against `blob`.
    pub fn from_json(blob: &[u8], meta_json: &[u8]) -> Result<Program> {
        let meta: Meta = serde_json::from_slice(meta_json).map_err(|e| {
            let field = json_key_before(meta_json, e.line(), e.column());
            bad("adreno metadata json", e.line() as u64, "not the adreno object of a bundle manifest")
                .context(alloc::format!("json column {}: field {field:?}: {e}", e.column()))
        })?;
        Self::from_parts(blob, &meta)
    }

    /// Validate parsed metadata against `blob`.
    ///
    /// Two registers are re-encoded as the XML says, not as tinygrad (whose values the
    /// metadata carries) writes them: `SP_CS_CONST_CONFIG.CONSTLEN` is in units of 4 vec4
    /// (`shr="2"`, a6xx.xml `a6xx_xs_const_config`) and `SP_CS_PVT_MEM_STACK_OFFSET.OFFSET` in
    /// units of 2 KiB (`shr="11"`, `a6xx_sp_xs_pvt_mem_stack_offset`). tinygrad writes 0x100
    /// (CONSTLEN 0) and the byte offset; tinygrad PR #18048 calls both bugs.
    ///
    /// Decisions (issue 18 §2; the default is tinygrad's hardware-proven stream, but Mesa's
    /// turnip, also hardware-proven on a630, shows otherwise for both): turnip's `tu6_emit_xs`
    /// writes `SP_xS_CONST_CONFIG(.constlen = xs->constlen, .enabled = true)` through the packer,
    /// which shifts CONSTLEN right by 2 (0x140 for 256 vec4, what we write; tinygrad's 0x100 is
    /// `constlen=256` overflowing the 8-bit field into ENABLED), and
    /// `A6XX_SP_xS_PVT_MEM_HW_STACK_OFFSET_OFFSET(pvtmem->per_sp_size)`, again shifted right by
    /// 11 (0x2 for tinygrad's 4 KiB offset, what we write; tinygrad's raw 0x1000 would mean
    /// 8 MiB, past its 16 KiB stack buffer).
    pub fn from_parts(blob: &[u8], m: &Meta) -> Result<Program> {
        if m.arch != "a630" {
            return Err(bad("adreno metadata arch", 0, "only a630 (a6xx gen1) programs are supported"));
        }
        if m.pvtmem > A630_LIMITS.private_bytes_per_thread {
            return Err(Error::LimitExceeded {
                what: "adreno metadata pvtmem (private bytes per fiber) vs SP_CS_PVT_MEM_PARAM.MEMSIZEPERITEM (255 x 512)",
                value: m.pvtmem.into(),
                limit: A630_LIMITS.private_bytes_per_thread.into(),
            });
        }
        // The blob's parts, each inside it, in order and not overlapping.
        let b = &m.blob;
        let parts = [
            ("adreno blob.variant (offset, nbytes) vs the blob", b.variant_offset, b.variant_nbytes),
            ("adreno blob.const_state (offset, nbytes) vs the blob", b.const_state_offset, b.const_state_nbytes),
            ("adreno blob.immediates (offset, nbytes) vs the blob", b.immediates_offset, b.immediates_nbytes),
            ("adreno blob image", b.image_offset, b.image_nbytes),
        ];
        let mut prev_end = 0u64;
        for (what, off, len) in parts {
            let end = off.checked_add(len).ok_or(bad(what, off, "offset + size overflows"))?;
            if end > blob.len() as u64 {
                return Err(Error::OutOfBounds { what, offset: off, len, limit: blob.len() as u64 });
            }
            if off < prev_end {
                return Err(bad(what, off, "overlaps the part before it (variant, const_state, immediates, image)"));
            }
            prev_end = end;
        }
        // Code image.
        let off = m.blob.image_offset;
        let len = m.blob.image_nbytes;
        let end = off + len;
        if len != u64::from(m.image_size) || len == 0 {
            return Err(bad("adreno metadata image_size", len, "empty, or differs from blob.image_nbytes"));
        }
        let units = m.image_size.div_ceil(128);
        if units != m.instr_size_128 {
            return Err(Error::Mismatch {
                what: "adreno metadata instr_size_128 is not ceil(image_size / 128)",
                expected: units.into(),
                found: m.instr_size_128.into(),
            });
        }
        if units > MAX_CODE_UNITS {
            return Err(Error::OutOfSpace {
                what: "adreno shader code (CP_LOAD_STATE6 loads at most 1023 units of 128 bytes)",
                requested: len,
                capacity: u64::from(MAX_CODE_UNITS) * 128,
            });
        }
        if m.prg_offset >= m.image_size || !m.prg_offset.is_multiple_of(8) {
            return Err(bad(
                "adreno metadata prg_offset",
                m.prg_offset.into(),
                "entry outside the code or not 8-byte aligned",
            ));
        }
        let mut image = blob[off as usize..end as usize].to_vec();
        image.resize(units as usize * 128, 0);

        // Register footprints and wave size: the fields must hold them, and the metadata's own
        // SP_CS_CNTL_0 must say the same.
        let threadsize = match m.threadsize.as_str() {
            "THREAD64" => false,
            "THREAD128" => true,
            _ => return Err(bad("adreno metadata threadsize", 0, "neither THREAD64 nor THREAD128")),
        };
        for (what, v) in [("fregs", m.fregs), ("hregs", m.hregs), ("branchstack", m.branchstack)] {
            if v > 63 {
                return Err(Error::InvalidArgument { what: field_err(what), value: v.into() });
            }
        }
        let cntl_0 = regs::SP_CS_CNTL_0(need_reg::<regs::SP_CS_CNTL_0>(m)?);
        if cntl_0.fullregfootprint() != m.fregs as u8
            || cntl_0.halfregfootprint() != m.hregs as u8
            || cntl_0.branchstack() != m.branchstack as u8
            || cntl_0.threadsize() != threadsize
        {
            return Err(Error::Mismatch {
                what: "adreno metadata: SP_CS_CNTL_0 disagrees with fregs/hregs/branchstack/threadsize",
                expected: u64::from(
                    regs::SP_CS_CNTL_0::default()
                        .set_fullregfootprint(m.fregs as u8)
                        .set_halfregfootprint(m.hregs as u8)
                        .set_branchstack(m.branchstack as u8)
                        .set_threadsize(threadsize)
                        .raw(),
                ),
                found: cntl_0.raw().into(),
            });
        }
        let cntl_1 = regs::SP_CS_CNTL_1(need_reg::<regs::SP_CS_CNTL_1>(m)?);
        if m.shmem > MAX_SHARED_BYTES || m.shared_size > 31 || u32::from(cntl_1.shared_size()) != m.shared_size {
            return Err(bad(
                "adreno metadata shmem/shared_size",
                m.shmem.into(),
                "beyond 32 KiB or not SP_CS_CNTL_1.SHARED_SIZE",
            ));
        }
        // FORMAT.md: shared_size = max(1, (shmem − 1) // 1024) (floor division, so 1 for shmem 0).
        let want_shared = if m.shmem == 0 { 1 } else { ((m.shmem - 1) / 1024).max(1) };
        if m.shared_size != want_shared {
            return Err(Error::Mismatch {
                what: "adreno metadata shared_size vs max(1, (shmem - 1) // 1024)",
                expected: want_shared.into(),
                found: m.shared_size.into(),
            });
        }
        if m.fregs > GPRS || m.hregs > GPRS {
            return Err(Error::InvalidArgument {
                what: "adreno metadata fregs/hregs beyond the 48 registers of the register file",
                value: m.fregs.max(m.hregs).into(),
            });
        }
        // Regids: the work-group id (3 components) in the shared registers, the local id (3
        // components) inside the register footprint, the work-group size (3 dwords) inside the
        // loaded constants (checked with the constants below).
        if m.wgid != REGID_NONE && !(SHARED_REGID_FIRST..=SHARED_REGID_LAST - 2).contains(&m.wgid) {
            return Err(Error::OutOfBounds {
                what: "adreno metadata wgid (work-group id regid) vs the shared registers r48.x..r55.w",
                offset: m.wgid.into(),
                len: 3,
                limit: (SHARED_REGID_LAST + 1).into(),
            });
        }
        if m.lid != REGID_NONE && m.lid.checked_add(3).is_none_or(|e| e > 4 * m.fregs) {
            return Err(Error::OutOfBounds {
                what: "adreno metadata lid (local id regid) vs the register footprint (4 x fregs)",
                offset: m.lid.into(),
                len: 3,
                limit: (4 * m.fregs).into(),
            });
        }
        // FORMAT.md: max_threads = min(1024, 384·32 / ((fregs + ceil(hregs/2))·128) · 128); a
        // larger value would launch work-groups the register file cannot hold.
        let footprint = (m.fregs + m.hregs.div_ceil(2)).max(1);
        let reg_threads = (384 * 32 / (footprint * 128) * 128).min(MAX_WORKGROUP_THREADS);
        if m.max_threads > reg_threads {
            return Err(Error::LimitExceeded {
                what: "adreno metadata max_threads vs what the register footprint allows",
                value: m.max_threads.into(),
                limit: reg_threads.into(),
            });
        }
        // Private memory (FORMAT.md): per item = ceil(pvtmem / 512), total = that × 128 × 2,
        // hw_stack_offset = round_up(next_pow2(round_up(pvtmem, 512)) × 128 × 16, 4096),
        // stack_bytes = 4 × hw_stack_offset.
        let per_item = m.pvtmem.div_ceil(512);
        let stack = u64::from(m.pvtmem.next_multiple_of(512).next_power_of_two()) * 128 * 16;
        let stack = stack.next_multiple_of(4096);
        for (what, want, found) in [
            (
                "adreno metadata pvtmem_size_per_item vs ceil(pvtmem / 512)",
                u64::from(per_item),
                m.pvtmem_size_per_item.into(),
            ),
            (
                "adreno metadata pvtmem_size_total vs pvtmem_size_per_item x 256",
                u64::from(per_item) * 256,
                m.pvtmem_size_total.into(),
            ),
            ("adreno metadata hw_stack_offset vs the private memory layout of pvtmem", stack, m.hw_stack_offset.into()),
            ("adreno metadata stack_bytes vs 4 x hw_stack_offset", 4 * stack, m.stack_bytes),
        ] {
            if want != found {
                return Err(Error::Mismatch { what, expected: want, found });
            }
        }
        let wge_cntl = regs::SP_CS_WGE_CNTL(need_reg::<regs::SP_CS_WGE_CNTL>(m)?);
        if wge_cntl.threadsize() != threadsize {
            return Err(bad(
                "adreno metadata SP_CS_WGE_CNTL",
                wge_cntl.raw().into(),
                "THREADSIZE differs from SP_CS_CNTL_0",
            ));
        }
        if m.max_threads == 0 || m.max_threads > MAX_WORKGROUP_THREADS {
            return Err(Error::InvalidArgument {
                what: "adreno metadata max_threads must be 1..=1024",
                value: m.max_threads.into(),
            });
        }

        // Constants. CONSTANTRAMMODE (SP_CS_CNTL_1) bounds how many vec4 the SP keeps.
        let c = &m.consts;
        let ram_vec4 = match cntl_1.constantrammode() {
            0 => 128,
            1 => 192,
            2 => 256,
            x => {
                return Err(Error::Unsupported {
                    what: "adreno SP_CS_CNTL_1.CONSTANTRAMMODE on a6xx",
                    value: x.into(),
                });
            }
        };
        if c.load_vec4 == 0 || c.load_vec4 > ram_vec4 || !c.load_vec4.is_multiple_of(4) {
            return Err(Error::InvalidArgument {
                what: "adreno consts.load_vec4: must be a multiple of 4 within CONSTANTRAMMODE",
                value: c.load_vec4.into(),
            });
        }
        if c.kernarg_alloc_size > A630_LIMITS.const_bytes {
            return Err(Error::LimitExceeded {
                what: "adreno consts.kernarg_alloc_size vs the constant RAM (bytes)",
                value: c.kernarg_alloc_size.into(),
                limit: A630_LIMITS.const_bytes.into(),
            });
        }
        let block = c.kernarg_alloc_size.max(c.load_vec4 * 16);
        // The signature: slots are positions; the buffers are its first `len - vars` entries.
        for (j, p) in m.signature.iter().enumerate() {
            if p.slot as usize != j {
                return Err(Error::Mismatch {
                    what: "adreno signature slot vs position",
                    expected: j as u64,
                    found: p.slot.into(),
                });
            }
        }
        let n_buffers = m.signature.len().checked_sub(m.vars.len()).ok_or(Error::Mismatch {
            what: "adreno vars count vs signature length (the vars are the signature's last entries)",
            expected: m.signature.len() as u64,
            found: m.vars.len() as u64,
        })?;
        // Image parameters have descriptors, not address slots (tinygrad's QCOMArgsState
        // writes only the plain buffers' addresses, in signature order, from buf_off).
        let is_image: Vec<bool> = m.signature.iter().take(n_buffers).map(|p| p.image).collect();
        if m.signature.iter().skip(n_buffers).any(|p| p.image) {
            return Err(bad("adreno signature", 0, "an integer parameter (vars) marked as an image"));
        }
        let n_images = is_image.iter().filter(|&&i| i).count();
        if c.args.len() != n_buffers - n_images || c.vals.len() != m.vars.len() {
            return Err(Error::Mismatch {
                what: "adreno consts.args / consts.vals counts vs the signature's plain (non-image) buffers / vars",
                expected: ((n_buffers - n_images) as u64) << 32 | m.vars.len() as u64,
                found: (c.args.len() as u64) << 32 | c.vals.len() as u64,
            });
        }
        let mut slots: Vec<(u32, u32, Slot)> = Vec::new();
        // CAST: at most 64 buffers (checked: the address slots must fit MAX_ARGS).
        let n_args = n_buffers as u32;
        if n_args > MAX_ARGS {
            return Err(Error::InvalidArgument {
                what: "adreno signature: more buffers than 64",
                value: n_args.into(),
            });
        }
        let (mut seen_arg, mut seen_slot) = (0u64, 0u64);
        for a in &c.args {
            if a.size != 8 || !a.offset.is_multiple_of(8) {
                return Err(bad("adreno consts.args", a.offset.into(), "an address slot is 8 bytes, 8-byte aligned"));
            }
            if a.arg >= n_args || seen_arg >> a.arg & 1 != 0 {
                return Err(Error::OutOfBounds {
                    what: "adreno consts.args[].arg: a launch argument index outside the signature's buffers, or twice",
                    offset: a.arg.into(),
                    len: 1,
                    limit: n_args.into(),
                });
            }
            if a.slot >= n_args || seen_slot >> a.slot & 1 != 0 || is_image[a.slot as usize] {
                return Err(Error::OutOfBounds {
                    what: "adreno consts.args[].slot: a constant slot outside the signature's plain buffers, or twice",
                    offset: a.slot.into(),
                    len: 1,
                    limit: n_args.into(),
                });
            }
            seen_arg |= 1 << a.arg;
            seen_slot |= 1 << a.slot;
            let rank = is_image[..a.slot as usize].iter().filter(|&&i| !i).count() as u64;
            let want = u64::from(c.buf_off) + 8 * rank;
            if u64::from(a.offset) != want {
                return Err(Error::Mismatch {
                    what: "adreno consts.args[].offset vs buf_off + 8 x (the slot's rank among the plain buffers)",
                    expected: want,
                    found: a.offset.into(),
                });
            }
            slots.push((a.offset, 8, Slot::Arg { arg: a.arg }));
        }
        for (k, imm) in c.immediates.iter().enumerate() {
            let want = u64::from(c.max_const_offset_vec4) * 16 + 4 * k as u64;
            if u64::from(imm.offset) != want {
                return Err(Error::Mismatch {
                    what: "adreno consts.immediates[].offset vs max_const_offset_vec4 x 16 + 4 x index",
                    expected: want,
                    found: imm.offset.into(),
                });
            }
        }
        // The immediates are part 3 of the blob, word for word.
        if b.immediates_nbytes != 4 * c.immediates.len() as u64 {
            return Err(Error::Mismatch {
                what: "adreno blob.immediates_nbytes vs 4 x consts.immediates count",
                expected: 4 * c.immediates.len() as u64,
                found: b.immediates_nbytes,
            });
        }
        // CAST: inside the blob (checked above).
        let imm_bytes = &blob[b.immediates_offset as usize..(b.immediates_offset + b.immediates_nbytes) as usize];
        for (k, (imm, w)) in c.immediates.iter().zip(imm_bytes.chunks_exact(4)).enumerate() {
            let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            if imm.value != word {
                return Err(Error::Mismatch {
                    what: "adreno consts.immediates[].value vs the blob's immediates",
                    expected: word.into(),
                    found: imm.value.into(),
                })
                .map_err(|e| e.context(alloc::format!("immediate {k}")));
            }
        }
        let want_ls = (m.wgsz != REGID_NONE).then(|| u64::from(m.wgsz) * 4);
        if c.local_size_offset.map(u64::from) != want_ls {
            return Err(Error::Mismatch {
                what: "adreno consts.local_size_offset vs wgsz x 4 (null when wgsz is 0xfc)",
                expected: want_ls.unwrap_or(u64::MAX),
                found: c.local_size_offset.map_or(u64::MAX, u64::from),
            });
        }
        for (i, v) in c.vals.iter().enumerate() {
            if v.size != 4 || !v.offset.is_multiple_of(4) {
                return Err(bad("adreno consts.vals", v.offset.into(), "an integer slot is 4 bytes, 4-byte aligned"));
            }
            slots.push((v.offset, 4, Slot::Val { index: i as u32 }));
        }
        for imm in &c.immediates {
            if imm.size != 4 || !imm.offset.is_multiple_of(4) {
                return Err(bad(
                    "adreno consts.immediates",
                    imm.offset.into(),
                    "an immediate is 4 bytes, 4-byte aligned",
                ));
            }
            slots.push((imm.offset, 4, Slot::Imm { value: imm.value }));
        }
        if let Some(o) = c.local_size_offset {
            if !o.is_multiple_of(4) {
                return Err(bad("adreno consts.local_size_offset", o.into(), "not 4-byte aligned"));
            }
            slots.push((o, 12, Slot::LocalSize));
        }
        for &(o, n, _) in &slots {
            if o.checked_add(n).is_none_or(|e| e > c.load_vec4 * 16) {
                return Err(Error::OutOfBounds {
                    what: "adreno constant slot (outside the loaded constant block)",
                    offset: o.into(),
                    len: n.into(),
                    limit: u64::from(c.load_vec4) * 16,
                });
            }
        }
        let (descriptors, images) =
            crate::a6xx::descriptors::check(m, &is_image, seen_arg, n_args, c.kernarg_alloc_size, &mut slots)?;
        slots.sort_by_key(|s| s.0);
        let mut prev_end = 0u32;
        for &(o, n, _) in &slots {
            // Inside the block: constants were checked against the loaded part above, descriptors
            // against the kernarg block by `descriptors::check`.
            let end = o + n;
            if o < prev_end {
                return Err(bad("adreno constant slots", o.into(), "two slots overlap"));
            }
            prev_end = end;
        }
        let const_config =
            regs::SP_CS_CONST_CONFIG::default().try_set_constlen((c.load_vec4 >> 2) as u8)?.set_enabled(true);
        let stack_offset = regs::SP_CS_PVT_MEM_STACK_OFFSET::default().try_set_offset(m.hw_stack_offset >> 11)?;
        if !m.hw_stack_offset.is_multiple_of(2048) {
            return Err(bad("adreno metadata hw_stack_offset", m.hw_stack_offset.into(), "not a multiple of 2 KiB"));
        }
        for (name, v) in &m.regs {
            // The bits the register database declares for it: a value that sets others is not
            // one of its encodings.
            let fields = regs::ALL
                .iter()
                .find(|r| r.name == name.as_str())
                .map_or(0u64, |r| r.fields.iter().fold(0, |m, f| m | f.mask()));
            let e = match DISPATCH_REGS.iter().find(|&&(n, _)| n == name.as_str()) {
                Some(&(_, reg)) if reg == v.reg && u64::from(v.value) & !fields == 0 => continue,
                // tinygrad's SP_CS_PVT_MEM_STACK_OFFSET is the byte offset written unmasked (2 MiB
                // for 1 KiB of spills: bits past the 19-bit field); it is compared with
                // hw_stack_offset below, and the encoder writes the XML encoding instead.
                Some(&(n, reg)) if reg == v.reg && n == regs::SP_CS_PVT_MEM_STACK_OFFSET::NAME => continue,
                Some(&(_, reg)) if reg == v.reg => Error::Malformed {
                    what: "adreno metadata regs: value sets bits outside the register's fields",
                    at: v.value.into(),
                    reason: "not an encoding of this register (a6xx register database)",
                },
                Some(&(_, reg)) => Error::Mismatch {
                    what: "adreno metadata regs: register offset differs from the a6xx register database",
                    expected: reg.into(),
                    found: v.reg.into(),
                },
                None => Error::Malformed {
                    what: "adreno metadata regs",
                    at: v.reg.into(),
                    reason: "not one of the a6xx dispatch registers (examples/FORMAT.md) in the register database",
                },
            };
            return Err(e.context(alloc::format!("register {name}")));
        }
        let const_config_0 = regs::SP_CS_CONST_CONFIG_0(need_reg::<regs::SP_CS_CONST_CONFIG_0>(m)?);
        let pvt_mem_param = regs::SP_CS_PVT_MEM_PARAM(need_reg::<regs::SP_CS_PVT_MEM_PARAM>(m)?);
        let pvt_mem_size = regs::SP_CS_PVT_MEM_SIZE(need_reg::<regs::SP_CS_PVT_MEM_SIZE>(m)?);
        // Values the metadata states twice.
        let const_config_value = need_reg::<regs::SP_CS_CONST_CONFIG>(m)?;
        let xml_const_config = 0x100 | c.load_vec4 >> 2;
        if const_config_value != 0x100 && const_config_value != xml_const_config {
            return Err(Error::Mismatch {
                what: "adreno regs SP_CS_CONST_CONFIG vs ENABLED with CONSTLEN 0 (tinygrad) or load_vec4 / 4 (XML)",
                expected: xml_const_config.into(),
                found: const_config_value.into(),
            });
        }
        let twice: [(&'static str, u64, u64); 9] = [
            (
                "adreno regs SP_CS_BOOLEAN_CF_MASK vs 0 (the encoder writes 0: no boolean control flow)",
                0,
                need_reg::<regs::SP_CS_BOOLEAN_CF_MASK>(m)?.into(),
            ),
            (
                "adreno regs SP_CS_INSTR_SIZE vs instr_size_128",
                units.into(),
                need_reg::<regs::SP_CS_INSTR_SIZE>(m)?.into(),
            ),
            (
                "adreno regs SP_CS_PROGRAM_COUNTER_OFFSET vs prg_offset",
                m.prg_offset.into(),
                need_reg::<regs::SP_CS_PROGRAM_COUNTER_OFFSET>(m)?.into(),
            ),
            (
                "adreno regs SP_CS_PVT_MEM_STACK_OFFSET vs hw_stack_offset (tinygrad writes bytes)",
                m.hw_stack_offset.into(),
                need_reg::<regs::SP_CS_PVT_MEM_STACK_OFFSET>(m)?.into(),
            ),
            (
                "adreno regs SP_CS_PVT_MEM_PARAM.MEMSIZEPERITEM vs pvtmem_size_per_item",
                per_item.into(),
                pvt_mem_param.memsizeperitem().into(),
            ),
            (
                // pvtmem_size_total is in the field's units (4 KiB, shr="12"): tinygrad writes it
                // as is, and it equals Mesa's per-SP size >> 12 (turnip tu6_emit_xs:
                // TOTALPVTMEMSIZE(per_sp_size), per_sp_size = per-fiber bytes × 128 × 16 fibers
                // on a630), so it is compared as is (it was compared / 4096 before: 0 for every
                // pvtmem-free kernel, and a refusal of every tinygrad kernel that spills).
                "adreno regs SP_CS_PVT_MEM_SIZE.TOTALPVTMEMSIZE vs pvtmem_size_total (4 KiB units)",
                u64::from(m.pvtmem_size_total),
                pvt_mem_size.totalpvtmemsize().into(),
            ),
            (
                "adreno regs SP_CS_CONST_CONFIG_0.WGIDCONSTID vs wgid",
                m.wgid.into(),
                const_config_0.wgidconstid().into(),
            ),
            (
                "adreno regs SP_CS_CONST_CONFIG_0.WGSIZECONSTID vs wgsz",
                m.wgsz.into(),
                const_config_0.wgsizeconstid().into(),
            ),
            (
                "adreno regs SP_CS_CONST_CONFIG_0.LOCALIDREGID vs lid",
                m.lid.into(),
                const_config_0.localidregid().into(),
            ),
        ];
        for (what, expected, found) in twice {
            if expected != found {
                return Err(Error::Mismatch { what, expected, found });
            }
        }
        let linear = u32::from(wge_cntl.linearlocalidregid());
        if linear != REGID_NONE && linear >= 4 * m.fregs {
            return Err(Error::OutOfBounds {
                what: "adreno regs SP_CS_WGE_CNTL.LINEARLOCALIDREGID vs the register footprint (4 x fregs)",
                offset: linear.into(),
                len: 1,
                limit: (4 * m.fregs).into(),
            });
        }
        let regs = ProgramRegs {
            cntl_0,
            cntl_1,
            pvt_mem_param,
            pvt_mem_size,
            config: regs::SP_CS_CONFIG(need_reg::<regs::SP_CS_CONFIG>(m)?),
            mode_cntl: regs::SP_MODE_CNTL(need_reg::<regs::SP_MODE_CNTL>(m)?),
            tpl1_mode_cntl: regs::TPL1_MODE_CNTL(need_reg::<regs::TPL1_MODE_CNTL>(m)?),
            const_config_0,
            wge_cntl,
            const_config,
            stack_offset,
        };
        if !regs.config.enabled()
            || u32::from(regs.config.ntex()) != descriptors.tex_cnt
            || u32::from(regs.config.nsamp()) != descriptors.samp_cnt
            || u32::from(regs.config.nuav()) != descriptors.ibo_cnt
            || regs.config.bindless_tex()
            || regs.config.bindless_samp()
            || regs.config.bindless_uav()
            || regs.config.bindless_ubo()
        {
            return Err(bad(
                "adreno metadata SP_CS_CONFIG",
                regs.config.raw().into(),
                "not ENABLED, bindless, or NTEX/NSAMP/NUAV differ from descriptors.tex_cnt/samp_cnt/ibo_cnt",
            ));
        }
        Ok(Program {
            name: m.function_name.clone(),
            image,
            code_units: units,
            entry: m.prg_offset,
            regs,
            load_vec4: c.load_vec4,
            const_block_bytes: block,
            slots: slots.into_iter().map(|(o, _, s)| (o, s)).collect(),
            max_threads: m.max_threads,
            pvtmem: m.pvtmem,
            stack_bytes: m.stack_bytes,
            n_args,
            n_vals: c.vals.len() as u32,
            descriptors,
            images,
        })
    }

    /// Check a launch's local size: every dimension 1..=1024 and the product ≤ `max_threads`.
    pub fn check_local(&self, local: [u32; 3]) -> Result<()> {
        check_local(local, self.max_threads)
    }

    /// Write the constant block of one launch: argument addresses, integer values, immediates
    /// and the local size, in place; other bytes are zeroed.
    pub fn fill_consts(&self, block: &mut [u8], args: &[u64], vals: &[i32], local: [u32; 3]) -> Result<()> {
        if block.len() < self.const_block_bytes as usize {
            return Err(Error::OutOfSpace {
                what: "adreno constant block",
                requested: self.const_block_bytes.into(),
                capacity: block.len() as u64,
            });
        }
        if args.len() != self.n_args as usize || vals.len() != self.n_vals as usize {
            return Err(Error::Mismatch {
                what: "adreno launch: argument count differs from the program's",
                expected: u64::from(self.n_args) << 32 | u64::from(self.n_vals),
                found: (args.len() as u64) << 32 | vals.len() as u64,
            });
        }
        block.fill(0);
        for &(o, slot) in &self.slots {
            let o = o as usize;
            match slot {
                Slot::Arg { arg } => block[o..o + 8].copy_from_slice(&args[arg as usize].to_le_bytes()),
                Slot::Val { index } => block[o..o + 4].copy_from_slice(&vals[index as usize].to_le_bytes()),
                Slot::Imm { value } => block[o..o + 4].copy_from_slice(&value.to_le_bytes()),
                Slot::LocalSize => {
                    for (i, l) in local.iter().enumerate() {
                        block[o + 4 * i..o + 4 * i + 4].copy_from_slice(&l.to_le_bytes());
                    }
                }
                Slot::Image { arg, mut words } => {
                    let a = args[arg as usize];
                    // TEX_CONST_4.BASE_LO has shr 5; the a6xx texture base is 64-byte aligned
                    // (a6xx.xml SP_CS_TEXMEMOBJ_BASE align="64"; KGSL objects are page aligned).
                    if !a.is_multiple_of(64) {
                        return Err(Error::Misaligned { what: "adreno image buffer address", value: a, align: 64 });
                    }
                    words[4] = a as u32;
                    words[5] |= (a >> 32) as u32;
                    for (i, w) in words.iter().enumerate() {
                        block[o + 4 * i..o + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
                    }
                }
                Slot::Sampler { words } => {
                    for (i, w) in words.iter().enumerate() {
                        block[o + 4 * i..o + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
                    }
                }
            }
        }
        Ok(())
    }
}

fn field_err(what: &str) -> &'static str {
    match what {
        "fregs" => "adreno metadata fregs does not fit FULLREGFOOTPRINT (6 bits)",
        "hregs" => "adreno metadata hregs does not fit HALFREGFOOTPRINT (6 bits)",
        _ => "adreno metadata branchstack does not fit BRANCHSTACK (6 bits)",
    }
}

/// Check a local size against the hardware's field widths and `max_threads`.
pub fn check_local(local: [u32; 3], max_threads: u32) -> Result<()> {
    for l in local {
        if l == 0 || l > MAX_WORKGROUP_THREADS {
            return Err(Error::InvalidArgument {
                what: "adreno local size: each dimension must be 1..=1024",
                value: l.into(),
            });
        }
    }
    let n = u64::from(local[0]) * u64::from(local[1]) * u64::from(local[2]);
    if n > u64::from(max_threads) {
        return Err(Error::InvalidArgument {
            what: "adreno local size: more threads than the program's max_threads",
            value: n,
        });
    }
    Ok(())
}
