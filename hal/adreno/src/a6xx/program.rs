//! a630 programs: a shader blob plus its bundle metadata (`programs[].adreno`, see the shared
//! bundles README "Adreno 630 objects") becomes a validated [`Program`].
//!
//! Validation checks everything the encoder and the constant-block writer rely on: the code
//! image lies inside the blob and fits the packet fields, the register footprints fit their
//! fields and agree with the metadata's own `SP_CS_CNTL_0`, every constant (argument address,
//! integer value, immediate, local size) lies inside the block the GPU loads and no two
//! overlap, and the local size respects `max_threads`. Textures, samplers and IBOs are refused
//! ("not supported yet").

use crate::a6xx::regs;
use crate::reg::Reg;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use hcq::{Error, Result};
use serde::Deserialize;

/// Largest work-group the a6xx accepts (`SP_CS_NDRANGE_0` local sizes, Mesa's limit).
pub const MAX_WORKGROUP_THREADS: u32 = 1024;
/// Code units of 128 bytes that `CP_LOAD_STATE6` `NUM_UNIT` (10 bits) can load.
pub const MAX_CODE_UNITS: u32 = 0x3ff;
/// Most kernel arguments a launch may have (tinygrad caps them at 63).
pub const MAX_ARGS: u32 = 64;
/// Shared memory on a630 (SP_CS_CNTL_1 SHARED_SIZE = 0 means all of it).
pub const MAX_SHARED_BYTES: u32 = 32 * 1024;

/// The metadata as the bundle writes it (unknown fields are ignored).
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct Meta {
    pub arch: String,
    #[serde(default)]
    pub function_name: String,
    pub blob: BlobMeta,
    pub image_size: u32,
    pub instr_size_128: u32,
    pub prg_offset: u32,
    pub threadsize: String,
    pub fregs: u32,
    pub hregs: u32,
    pub branchstack: u32,
    pub pvtmem: u32,
    pub shmem: u32,
    pub hw_stack_offset: u32,
    pub stack_bytes: u64,
    pub shared_size: u32,
    pub max_threads: u32,
    pub consts: ConstsMeta,
    pub descriptors: DescriptorsMeta,
    pub regs: BTreeMap<String, RegValue>,
}

/// `adreno.blob`: where the parts of the blob lie.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct BlobMeta {
    pub image_offset: u64,
    pub image_nbytes: u64,
}

/// `adreno.consts`.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ConstsMeta {
    pub kernarg_alloc_size: u32,
    pub load_vec4: u32,
    pub args: Vec<ArgMeta>,
    pub vals: Vec<ValMeta>,
    pub immediates: Vec<ImmMeta>,
    pub local_size_offset: Option<u32>,
}

/// A buffer address slot.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ArgMeta {
    pub arg: u32,
    pub offset: u32,
    pub size: u32,
}

/// An integer argument slot.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ValMeta {
    pub offset: u32,
    pub size: u32,
}

/// An immediate constant.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ImmMeta {
    pub offset: u32,
    pub size: u32,
    pub value: u32,
}

/// `adreno.descriptors` counts.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct DescriptorsMeta {
    pub tex_cnt: u32,
    pub ibo_cnt: u32,
    pub samp_cnt: u32,
}

/// One entry of `adreno.regs`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct RegValue {
    pub reg: u32,
    pub value: u32,
}

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
}

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
            bad("adreno metadata json", e.line() as u64, "not the adreno object of a bundle manifest")
                .context(alloc::format!("json column {}: {e}", e.column()))
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
    pub fn from_parts(blob: &[u8], m: &Meta) -> Result<Program> {
        if m.arch != "a630" {
            return Err(bad("adreno metadata arch", 0, "only a630 (a6xx gen1) programs are supported"));
        }
        let d = &m.descriptors;
        if d.tex_cnt != 0 || d.ibo_cnt != 0 || d.samp_cnt != 0 {
            return Err(Error::Unsupported {
                what: "adreno program uses textures/samplers/IBOs: not supported yet (count)",
                value: u64::from(d.tex_cnt) + u64::from(d.ibo_cnt) + u64::from(d.samp_cnt),
            });
        }
        if m.pvtmem != 0 {
            return Err(Error::Unsupported {
                what: "adreno program uses private (spill) memory: not supported yet (bytes per thread)",
                value: m.pvtmem.into(),
            });
        }
        // Code image.
        let off = m.blob.image_offset;
        let len = m.blob.image_nbytes;
        let end = off.checked_add(len).ok_or(bad("adreno blob image", off, "offset + size overflows"))?;
        if end > blob.len() as u64 {
            return Err(Error::OutOfBounds { what: "adreno blob image", offset: off, len, limit: blob.len() as u64 });
        }
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
        let block = c.kernarg_alloc_size.max(c.load_vec4 * 16);
        let mut slots: Vec<(u32, u32, Slot)> = Vec::new();
        let mut n_args = 0u32;
        for a in &c.args {
            if a.size != 8 || !a.offset.is_multiple_of(8) {
                return Err(bad("adreno consts.args", a.offset.into(), "an address slot is 8 bytes, 8-byte aligned"));
            }
            if a.arg >= MAX_ARGS {
                return Err(Error::InvalidArgument {
                    what: "adreno consts.args: argument index beyond 63",
                    value: a.arg.into(),
                });
            }
            n_args = n_args.max(a.arg + 1);
            slots.push((a.offset, 8, Slot::Arg { arg: a.arg }));
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
        slots.sort_by_key(|s| s.0);
        let mut prev_end = 0u32;
        for &(o, n, _) in &slots {
            let end = o.checked_add(n).filter(|e| *e <= c.load_vec4 * 16).ok_or(Error::OutOfBounds {
                what: "adreno constant slot (outside the loaded constant block)",
                offset: o.into(),
                len: n.into(),
                limit: u64::from(c.load_vec4) * 16,
            })?;
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
        let regs = ProgramRegs {
            cntl_0,
            cntl_1,
            pvt_mem_param: regs::SP_CS_PVT_MEM_PARAM(need_reg::<regs::SP_CS_PVT_MEM_PARAM>(m)?),
            pvt_mem_size: regs::SP_CS_PVT_MEM_SIZE(need_reg::<regs::SP_CS_PVT_MEM_SIZE>(m)?),
            config: regs::SP_CS_CONFIG(need_reg::<regs::SP_CS_CONFIG>(m)?),
            mode_cntl: regs::SP_MODE_CNTL(need_reg::<regs::SP_MODE_CNTL>(m)?),
            tpl1_mode_cntl: regs::TPL1_MODE_CNTL(need_reg::<regs::TPL1_MODE_CNTL>(m)?),
            const_config_0: regs::SP_CS_CONST_CONFIG_0(need_reg::<regs::SP_CS_CONST_CONFIG_0>(m)?),
            wge_cntl,
            const_config,
            stack_offset,
        };
        if !regs.config.enabled() || regs.config.ntex() != 0 || regs.config.nsamp() != 0 || regs.config.nuav() != 0 {
            return Err(bad(
                "adreno metadata SP_CS_CONFIG",
                regs.config.raw().into(),
                "not ENABLED, or names textures/UAVs",
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
