//! What a device states it can do: memory size, largest allocation, kernel arguments, grid, and
//! for a GPU the resources one program and one launch may ask for ([`GpuLimits`]).
//!
//! A [`DeviceLimits`] is what [`Device::limits`](crate::device::Device::limits) returns and what
//! a bundle is checked against ([`Hcqb::check_limits`](crate::bundle::hcqb::Hcqb::check_limits))
//! before anything is allocated, so that a size read from a file (a buffer claiming 2^63 bytes)
//! is refused with [`Error::LimitExceeded`] naming the field and the limit instead of failing
//! inside an allocator. Needs neither `std` nor `alloc`.

use crate::error::{Error, Result};

/// A device's stated limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceLimits {
    /// Bytes of memory the device can give to buffers in total (for the CPU: the host's RAM).
    pub memory_bytes: u64,
    /// The largest single buffer, in bytes (at most `memory_bytes`).
    pub max_alloc_bytes: u64,
    /// Allocation granule: buffer sizes are rounded up to a multiple of it (a power of two).
    pub alloc_align: u64,
    /// Most 64-bit kernel arguments (buffer pointers plus integer values) one launch passes.
    pub max_kernel_args: u32,
    /// Largest launch grid (`global_size`) per dimension.
    pub max_grid: [u32; 3],
    /// For a GPU: what one program and one dispatch may ask for, checked against every
    /// program's GPU metadata (`programs[].adreno`) and every launch's GPU grid
    /// ([`Hcqb::check_limits`](crate::bundle::hcqb::Hcqb::check_limits)). `None` for a device
    /// that runs no GPU programs (the CPU), which never reads that metadata.
    pub gpu: Option<GpuLimits>,
}

/// The resources a GPU gives one program and one dispatch (the QCOM device states the a630's,
/// `hcq_adreno::program::A630_LIMITS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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

impl DeviceLimits {
    /// `nbytes` rounded up to the allocation granule (a zero-byte buffer still takes one
    /// granule), or [`Error::LimitExceeded`] `what` when that is beyond the largest allocation
    /// (checked arithmetic: `u64::MAX` is refused, never wrapped to 0).
    pub fn alloc_size(&self, what: &'static str, nbytes: u64) -> Result<u64> {
        let align = self.alloc_align.max(1);
        let padded = nbytes.max(1).div_ceil(align).checked_mul(align);
        match padded {
            Some(p) if p <= self.max_alloc_bytes => Ok(p),
            _ => Err(Error::LimitExceeded { what, value: nbytes, limit: self.max_alloc_bytes }),
        }
    }

    /// Each field the smaller (the granule the larger) of `self` and `other`: what fits both
    /// (GPU limits: those of the side that states them, the smaller of each field when both do).
    pub fn min(&self, other: &DeviceLimits) -> DeviceLimits {
        DeviceLimits {
            memory_bytes: self.memory_bytes.min(other.memory_bytes),
            max_alloc_bytes: self.max_alloc_bytes.min(other.max_alloc_bytes),
            alloc_align: self.alloc_align.max(other.alloc_align),
            max_kernel_args: self.max_kernel_args.min(other.max_kernel_args),
            max_grid: core::array::from_fn(|d| self.max_grid[d].min(other.max_grid[d])),
            gpu: match (&self.gpu, &other.gpu) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(*b),
            },
        }
    }

    /// `value` is at most `limit`, else [`Error::LimitExceeded`] `what`.
    pub fn at_most(what: &'static str, value: u64, limit: u64) -> Result<()> {
        if value > limit { Err(Error::LimitExceeded { what, value, limit }) } else { Ok(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: DeviceLimits = DeviceLimits {
        memory_bytes: 1 << 30,
        max_alloc_bytes: 1 << 30,
        alloc_align: 16,
        max_kernel_args: 63,
        max_grid: [1 << 16, 1, 1],
        gpu: None,
    };

    #[test]
    fn alloc_sizes_round_up_and_refuse_what_does_not_fit_without_wrapping() {
        assert_eq!(L.alloc_size("x", 0).unwrap(), 16);
        assert_eq!(L.alloc_size("x", 17).unwrap(), 32);
        assert_eq!(L.alloc_size("x", 1 << 30).unwrap(), 1 << 30);
        for huge in [(1 << 30) + 1, 1 << 40, 1 << 62, 1 << 63, u64::MAX] {
            assert_eq!(
                L.alloc_size("buffer nbytes", huge),
                Err(Error::LimitExceeded { what: "buffer nbytes", value: huge, limit: 1 << 30 }),
                "{huge}"
            );
        }
    }

    #[test]
    fn min_takes_what_fits_both() {
        let other = DeviceLimits {
            memory_bytes: 1 << 40,
            max_alloc_bytes: 1 << 20,
            alloc_align: 4096,
            max_kernel_args: 64,
            max_grid: [1, 1 << 20, 1],
            gpu: None,
        };
        let m = L.min(&other);
        assert_eq!(
            m,
            DeviceLimits {
                memory_bytes: 1 << 30,
                max_alloc_bytes: 1 << 20,
                alloc_align: 4096,
                max_kernel_args: 63,
                max_grid: [1, 1, 1],
                gpu: None,
            }
        );
    }

    #[test]
    fn at_most_is_inclusive() {
        assert!(DeviceLimits::at_most("n", 63, 63).is_ok());
        assert_eq!(DeviceLimits::at_most("n", 64, 63), Err(Error::LimitExceeded { what: "n", value: 64, limit: 63 }));
    }

    #[test]
    fn min_keeps_the_gpu_limits_of_the_side_that_states_them() {
        let g = GpuLimits {
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
        let gpu = DeviceLimits { gpu: Some(g), ..L };
        assert_eq!(L.min(&gpu).gpu, Some(g));
        assert_eq!(gpu.min(&L).gpu, Some(g));
        assert_eq!(L.min(&L).gpu, None);
        let small = GpuLimits { stack_bytes: 4096, max_groups: [1, 2, 3], ..g };
        let m = gpu.min(&DeviceLimits { gpu: Some(small), ..L }).gpu.unwrap();
        assert_eq!((m.stack_bytes, m.max_groups, m.const_bytes), (4096, [1, 2, 3], 4096));
    }
}
