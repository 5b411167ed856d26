//! What a dispatch hands a kernel: the user SGPRs in the order the kernel descriptor enables
//! them, the HSA dispatch packet some kernels read through their dispatch pointer, and the
//! interpreter's [`Dispatch`] for a kernel — as tinygrad 0.14's `AMDComputeQueue.exec` sets
//! `COMPUTE_USER_DATA_*` (private segment buffer, dispatch pointer, kernarg pointer) and AMDGPUUsage
//! ("Initial Kernel Execution State") orders them.

use crate::codeobj::{CodeObject, Descriptor, Kernel};
use alloc::vec::Vec;
use core::fmt;
use hcq_rdna3::exec::{Dispatch, LoadError, Program};

/// `kernel_code_properties` bits tinygrad's runtime does not set up (queue pointer, dispatch id,
/// flat scratch init, private segment size): a kernel that enables one is refused, since its
/// SGPRs would be read from the wrong place.
const UNSUPPORTED_PROPERTIES: [(u16, &str); 4] = [
    (1 << 2, "ENABLE_SGPR_QUEUE_PTR"),
    (1 << 4, "ENABLE_SGPR_DISPATCH_ID"),
    (1 << 5, "ENABLE_SGPR_FLAT_SCRATCH_INIT"),
    (1 << 6, "ENABLE_SGPR_PRIVATE_SEGMENT_SIZE"),
];

/// Why a kernel cannot be launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The descriptor enables an SGPR input no AMD runtime here provides.
    Property(&'static str),
    /// `USER_SGPR_COUNT` disagrees with the inputs the properties enable.
    UserSgprs {
        /// What the descriptor says.
        count: u32,
        /// What its enabled inputs take.
        enabled: u32,
    },
    /// The work-group size is 0 or more than 1024 work-items.
    Local([u32; 3]),
    /// The kernel's entry is not in an executable section.
    Entry(usize),
    /// The interpreter refuses the code.
    Load(LoadError),
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Property(p) => {
                write!(f, "kernel descriptor enables {p}, which the AMD runtime does not set up")
            }
            LaunchError::UserSgprs { count, enabled } => {
                write!(f, "kernel descriptor: USER_SGPR_COUNT {count}, but its enabled inputs take {enabled}")
            }
            LaunchError::Local([x, y, z]) => write!(f, "work-group size {x}x{y}x{z}: 1 to 1024 work-items"),
            LaunchError::Entry(e) => write!(f, "kernel entry {e:#x} is not in an executable section"),
            LaunchError::Load(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for LaunchError {}

/// Where the driver put what the kernel's user SGPRs point at.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs {
    /// The kernel argument block's address.
    pub kernarg: u64,
    /// The dispatch packet's address (see [`dispatch_packet`]), for kernels that read it.
    pub dispatch_packet: u64,
    /// The scratch base, for the private segment buffer descriptor.
    pub scratch: u64,
}

/// The user SGPRs of `kd`, in order: the private segment buffer (4, a buffer descriptor over the
/// scratch ring as tinygrad writes it), the dispatch pointer (2), the kernarg pointer (2).
pub fn user_sgprs(kd: &Descriptor, inputs: &Inputs) -> Result<Vec<u32>, LaunchError> {
    for (bit, name) in UNSUPPORTED_PROPERTIES {
        if kd.properties & bit != 0 {
            return Err(LaunchError::Property(name));
        }
    }
    let lo = |x: u64| x as u32;
    let hi = |x: u64| (x >> 32) as u32;
    let mut v = Vec::new();
    if kd.properties & 1 != 0 {
        // tinygrad 0.14 ops_amd.py: scratch address, bit 31 of word 1 (swizzle), all-ones
        // size, and word 3 0x20c14000 (its format and index stride).
        v.extend_from_slice(&[lo(inputs.scratch), hi(inputs.scratch) | 1 << 31, 0xffff_ffff, 0x20c1_4000]);
    }
    if kd.dispatch_ptr {
        v.extend_from_slice(&[lo(inputs.dispatch_packet), hi(inputs.dispatch_packet)]);
    }
    if kd.kernarg_ptr {
        v.extend_from_slice(&[lo(inputs.kernarg), hi(inputs.kernarg)]);
    }
    // CAST: at most 8 SGPRs.
    let enabled = v.len() as u32;
    if kd.user_sgprs < enabled {
        return Err(LaunchError::UserSgprs { count: kd.user_sgprs, enabled });
    }
    Ok(v)
}

/// The 64-byte `hsa_kernel_dispatch_packet_t` the dispatch pointer names: work-group and grid
/// sizes, segment sizes, the kernel object and the kernarg address (HSA runtime spec 2.9.6;
/// tinygrad fills the same fields).
pub fn dispatch_packet(
    kd: &Descriptor,
    local: [u32; 3],
    groups: [u32; 3],
    kernel_object: u64,
    kernarg: u64,
) -> [u8; 64] {
    let mut p = [0u8; 64];
    // header: HSA_PACKET_TYPE_KERNEL_DISPATCH (2); setup: 3 dimensions.
    p[0..2].copy_from_slice(&2u16.to_le_bytes());
    p[2..4].copy_from_slice(&3u16.to_le_bytes());
    for d in 0..3 {
        // CAST: a work-group dimension ≤ 1024.
        p[4 + 2 * d..6 + 2 * d].copy_from_slice(&(local[d] as u16).to_le_bytes());
        p[12 + 4 * d..16 + 4 * d].copy_from_slice(&local[d].wrapping_mul(groups[d]).to_le_bytes());
    }
    p[24..28].copy_from_slice(&kd.private_bytes.to_le_bytes());
    p[28..32].copy_from_slice(&kd.lds_bytes.to_le_bytes());
    p[32..40].copy_from_slice(&kernel_object.to_le_bytes());
    p[40..48].copy_from_slice(&kernarg.to_le_bytes());
    p
}

/// The interpreter's program for `k` of `co`: its executable section from the entry on.
pub fn program(co: &CodeObject, k: &Kernel) -> Result<Program, LaunchError> {
    let s = co.sections.iter().find(|s| s.exec && s.range.contains(&k.entry)).ok_or(LaunchError::Entry(k.entry))?;
    let words: Vec<u32> =
        co.image[s.range.clone()].chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Program::load(&words, (k.entry - s.range.start) / 4, !k.kd.wave32).map_err(LaunchError::Load)
}

/// The interpreter's dispatch of `k` with work-group size `local` and these user SGPRs.
pub fn dispatch<'a>(k: &Kernel, local: [u32; 3], user: &'a [u32], max_steps: u64) -> Result<Dispatch<'a>, LaunchError> {
    let n = u64::from(local[0]) * u64::from(local[1]) * u64::from(local[2]);
    if n == 0 || n > 1024 {
        return Err(LaunchError::Local(local));
    }
    let r2 = k.kd.rsrc2;
    Ok(Dispatch {
        wave64: !k.kd.wave32,
        local,
        user_sgprs: user,
        user_sgpr_count: k.kd.user_sgprs,
        tgid: k.kd.workgroup_id,
        tg_size: r2 & 1 << 10 != 0,
        wave_offset: k.kd.private_segment,
        lds_bytes: k.kd.lds_bytes,
        private_bytes: k.kd.private_bytes,
        max_steps,
    })
}
