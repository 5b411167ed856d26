//! What a device states it can do: memory size, largest allocation, kernel arguments, grid —
//! the sizes every device has. What one GPU program and dispatch may ask for is the device
//! family's own (the Adreno's: `hcq_adreno::limits::GpuLimits`), checked by its backend.
//!
//! A [`DeviceLimits`] is what [`Device::limits`](crate::device::Device::limits) returns and what
//! a bundle is checked against ([`Hcqb::check_limits`](https://docs.rs/hcq-bundle))
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

    /// Each field the smaller (the granule the larger) of `self` and `other`: what fits both.
    pub fn min(&self, other: &DeviceLimits) -> DeviceLimits {
        DeviceLimits {
            memory_bytes: self.memory_bytes.min(other.memory_bytes),
            max_alloc_bytes: self.max_alloc_bytes.min(other.max_alloc_bytes),
            alloc_align: self.alloc_align.max(other.alloc_align),
            max_kernel_args: self.max_kernel_args.min(other.max_kernel_args),
            max_grid: core::array::from_fn(|d| self.max_grid[d].min(other.max_grid[d])),
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
            }
        );
    }

    #[test]
    fn at_most_is_inclusive() {
        assert!(DeviceLimits::at_most("n", 63, 63).is_ok());
        assert_eq!(DeviceLimits::at_most("n", 64, 63), Err(Error::LimitExceeded { what: "n", value: 64, limit: 63 }));
    }
}
