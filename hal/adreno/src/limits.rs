//! What an Adreno gives one program and one dispatch ([`GpuLimits`]), and the checks of a
//! program's metadata (`programs[].adreno`) and a launch's dispatch against them: the Adreno
//! half of a bundle's limits step, which the QCOM backend runs before it allocates anything
//! (the device-neutral half, sizes and counts, is `hcq_bundle`'s `Hcqb::check_limits`).

use alloc::vec::Vec;
use hcq::error::{Error, Result};
use hcq::limits::DeviceLimits;
use serde::Deserialize;
use serde::de::IgnoredAny;

/// The resources a GPU gives one program and one dispatch (the QCOM device states the a630's,
/// [`crate::program::A630_LIMITS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpuLimits {
    /// Constant RAM a dispatch loads, in bytes: the constant block a launch provides
    /// (`consts.kernarg_alloc_size`) and what the CP loads of it (`consts.load_vec4` × 16).
    pub const_bytes: u32,
    /// Largest shader code image, in bytes.
    pub code_bytes: u32,
    /// Private (spill) memory per thread, in bytes.
    pub private_bytes_per_thread: u32,
    /// Largest private/stack buffer one program asks for, in bytes.
    pub stack_bytes: u64,
    /// Shared (local) memory per work-group, in bytes.
    pub shared_bytes: u32,
    /// Full registers per thread (the register footprint).
    pub full_regs: u32,
    /// Half registers per thread.
    pub half_regs: u32,
    /// Branch stack depth.
    pub branch_stack: u32,
    /// Threads per work-group (each dimension and their product).
    pub workgroup_threads: u32,
    /// Work-groups per dimension of one dispatch.
    pub max_groups: [u32; 3],
    /// Work-groups of one dispatch in total (the product of the three).
    pub max_total_groups: u64,
}

impl GpuLimits {
    /// Each field the smaller of `self` and `other`.
    pub fn min(&self, other: &GpuLimits) -> GpuLimits {
        GpuLimits {
            const_bytes: self.const_bytes.min(other.const_bytes),
            code_bytes: self.code_bytes.min(other.code_bytes),
            private_bytes_per_thread: self.private_bytes_per_thread.min(other.private_bytes_per_thread),
            stack_bytes: self.stack_bytes.min(other.stack_bytes),
            shared_bytes: self.shared_bytes.min(other.shared_bytes),
            full_regs: self.full_regs.min(other.full_regs),
            half_regs: self.half_regs.min(other.half_regs),
            branch_stack: self.branch_stack.min(other.branch_stack),
            workgroup_threads: self.workgroup_threads.min(other.workgroup_threads),
            max_groups: core::array::from_fn(|d| self.max_groups[d].min(other.max_groups[d])),
            max_total_groups: self.max_total_groups.min(other.max_total_groups),
        }
    }
}

/// A launch's GPU dispatch (`groups` work-groups of `local` threads) against `gpu`.
pub fn check_dispatch(groups: [u32; 3], local: [u32; 3], gpu: &GpuLimits) -> Result<()> {
    const GROUPS: [&str; 3] = [
        "launch gpu_global_size[0] (work-groups) vs device max work-groups",
        "launch gpu_global_size[1] (work-groups) vs device max work-groups",
        "launch gpu_global_size[2] (work-groups) vs device max work-groups",
    ];
    const LOCAL: [&str; 3] = [
        "launch gpu_local_size[0] vs device work-group threads",
        "launch gpu_local_size[1] vs device work-group threads",
        "launch gpu_local_size[2] vs device work-group threads",
    ];
    const THREADS: [&str; 3] = [
        "launch gpu threads in x (work-groups x local size) vs 2^32 - 1",
        "launch gpu threads in y (work-groups x local size) vs 2^32 - 1",
        "launch gpu threads in z (work-groups x local size) vs 2^32 - 1",
    ];
    let wg = u64::from(gpu.workgroup_threads);
    for d in 0..3 {
        DeviceLimits::at_most(GROUPS[d], groups[d].into(), gpu.max_groups[d].into())?;
        DeviceLimits::at_most(LOCAL[d], local[d].into(), wg)?;
        if local[d] == 0 {
            return Err(Error::InvalidArgument { what: "launch gpu_local_size: a dimension is 0", value: 0 });
        }
        let threads = u64::from(groups[d]) * u64::from(local[d]);
        DeviceLimits::at_most(THREADS[d], threads, u64::from(u32::MAX))?;
    }
    let total: u64 = groups.iter().map(|&g| u64::from(g)).product();
    DeviceLimits::at_most(
        "launch gpu work-groups in total vs device max work-groups per dispatch",
        total,
        gpu.max_total_groups,
    )?;
    let threads: u64 = local.iter().map(|&l| u64::from(l)).product();
    DeviceLimits::at_most("launch gpu work-group threads (product of gpu_local_size) vs device", threads, wg)
}

/// Every number is read as u64 (the validator's narrower types refuse more, never less), a
/// missing one as 0 (the validator names it).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Claims {
    image_size: u64,
    instr_size_128: u64,
    prg_offset: u64,
    fregs: u64,
    hregs: u64,
    branchstack: u64,
    pvtmem: u64,
    shmem: u64,
    pvtmem_size_per_item: u64,
    pvtmem_size_total: u64,
    hw_stack_offset: u64,
    stack_bytes: u64,
    max_threads: u64,
    blob: Blob,
    consts: Consts,
    signature: Vec<IgnoredAny>,
    vars: Vec<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Blob {
    image_nbytes: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Consts {
    kernarg_alloc_size: u64,
    load_vec4: u64,
    buf_off: u64,
    max_const_offset_vec4: u64,
    local_size_offset: Option<u64>,
    args: Vec<IgnoredAny>,
    vals: Vec<IgnoredAny>,
    immediates: Vec<IgnoredAny>,
}

/// The sizes and counts program metadata `meta` (`programs[].adreno`, JSON) claims, against
/// `gpu` and the device's `max_args` kernel arguments: every field that sizes an allocation, a
/// loaded range or a hardware field, refused with [`Error::LimitExceeded`] naming it
/// (`"adreno consts.kernarg_alloc_size vs device constant RAM (bytes)"`). Numbers are read as
/// `u64` here, so an absurd size is named as such rather than failing the parse.
pub fn check_meta(meta: &[u8], gpu: &GpuLimits, max_args: u64) -> Result<()> {
    let c: Claims = serde_json::from_slice(meta).map_err(|e| {
        Error::Malformed {
            what: "adreno metadata json",
            at: e.line() as u64,
            reason: "not the adreno object of a bundle manifest (a number where a size belongs?)",
        }
        .context(alloc::format!("{e}"))
    })?;
    let cb = u64::from(gpu.const_bytes);
    let code = u64::from(gpu.code_bytes);
    let pvt = u64::from(gpu.private_bytes_per_thread);
    let checks: [(&'static str, u64, u64); 23] = [
        ("adreno consts.kernarg_alloc_size vs device constant RAM (bytes)", c.consts.kernarg_alloc_size, cb),
        ("adreno consts.load_vec4 vs device constant RAM (vec4)", c.consts.load_vec4, cb / 16),
        ("adreno consts.buf_off vs device constant RAM (bytes)", c.consts.buf_off, cb),
        ("adreno consts.max_const_offset_vec4 vs device constant RAM (vec4)", c.consts.max_const_offset_vec4, cb / 16),
        ("adreno consts.local_size_offset vs device constant RAM (bytes)", c.consts.local_size_offset.unwrap_or(0), cb),
        ("adreno consts.args count vs device max kernel arguments", c.consts.args.len() as u64, max_args),
        ("adreno consts.vals count vs device max kernel arguments", c.consts.vals.len() as u64, max_args),
        ("adreno consts.immediates count vs device constant RAM (u32 words)", c.consts.immediates.len() as u64, cb / 4),
        ("adreno signature length vs device max kernel arguments", c.signature.len() as u64, max_args),
        ("adreno vars count vs device max kernel arguments", c.vars.len() as u64, max_args),
        ("adreno image_size vs device shader code (bytes)", c.image_size, code),
        ("adreno blob.image_nbytes vs device shader code (bytes)", c.blob.image_nbytes, code),
        ("adreno instr_size_128 vs device shader code (128-byte units)", c.instr_size_128, code / 128),
        ("adreno prg_offset vs device shader code (bytes)", c.prg_offset, code),
        ("adreno fregs vs device full registers", c.fregs, gpu.full_regs.into()),
        ("adreno hregs vs device half registers", c.hregs, gpu.half_regs.into()),
        ("adreno branchstack vs device branch stack", c.branchstack, gpu.branch_stack.into()),
        ("adreno pvtmem vs device private memory per thread (bytes)", c.pvtmem, pvt),
        (
            "adreno pvtmem_size_per_item vs device private memory per thread (512 B)",
            c.pvtmem_size_per_item,
            pvt.div_ceil(512),
        ),
        ("adreno pvtmem_size_total vs device private/stack buffer (bytes)", c.pvtmem_size_total, gpu.stack_bytes),
        ("adreno hw_stack_offset vs device private/stack buffer (bytes)", c.hw_stack_offset, gpu.stack_bytes),
        ("adreno stack_bytes vs device private/stack buffer (bytes)", c.stack_bytes, gpu.stack_bytes),
        ("adreno shmem vs device shared memory (bytes)", c.shmem, gpu.shared_bytes.into()),
    ];
    for (what, value, limit) in checks {
        DeviceLimits::at_most(what, value, limit)?;
    }
    DeviceLimits::at_most(
        "adreno max_threads vs device work-group threads",
        c.max_threads,
        gpu.workgroup_threads.into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: GpuLimits = GpuLimits {
        const_bytes: 4096,
        code_bytes: 1 << 17,
        private_bytes_per_thread: 512,
        stack_bytes: 1 << 20,
        shared_bytes: 1 << 15,
        full_regs: 48,
        half_regs: 48,
        branch_stack: 63,
        workgroup_threads: 1024,
        max_groups: [65535; 3],
        max_total_groups: 1 << 40,
    };

    #[test]
    fn min_takes_the_smaller_of_each_field() {
        let small = GpuLimits { stack_bytes: 4096, max_groups: [1, 2, 3], ..G };
        let m = G.min(&small);
        assert_eq!((m.stack_bytes, m.max_groups, m.const_bytes), (4096, [1, 2, 3], 4096));
        assert_eq!(G.min(&G), G);
    }
}
