//! A parsed bundle against what a device states it can do ([`DeviceLimits`]).
//!
//! [`Hcqb::parse`] proves a file self-consistent (every view inside its buffer); it cannot know
//! whether the device has 2^40 bytes for a buffer. [`Hcqb::check_limits`] is that second step,
//! run by a loader before it allocates anything: every size is rounded to the device's granule
//! with checked arithmetic and compared with the largest allocation, the buffers' total with the
//! memory size, each program's and launch's argument count with the kernel-argument limit, each
//! launch grid with the device's grid, and the kernel-argument table's total size. No
//! allocation; with `alloc` the error names the place (`"buffer 1: ..."`).
//!
//! These are the sizes every device has. A device family's own metadata (the Adreno's
//! `programs[].adreno`: constant block, code, registers, private and shared memory, and each
//! launch's GPU dispatch) is checked by its backend before it allocates anything
//! (`hcq_qcom::device::check_limits` over `hcq_adreno::limits`), with its own typed schema.

use super::hcqb::{Hcqb, LaunchRef};
use super::{Loc, at};
use hcq::error::Result;
use hcq::limits::DeviceLimits;

impl Hcqb<'_> {
    /// Check every size and count of this bundle against `limits`, before anything is allocated.
    ///
    /// Errors: [`Error::LimitExceeded`](crate::Error::LimitExceeded) naming the field and the
    /// limit, at the first record that breaks one (`"buffer 1: buffer nbytes vs device largest
    /// allocation: 1099511627776 exceeds the device limit of ..."`).
    pub fn check_limits(&self, limits: &DeviceLimits) -> Result<()> {
        let mut total: u64 = 0;
        for (i, b) in self.buffers().enumerate() {
            let padded = limits
                .alloc_size("buffer nbytes vs device largest allocation (bytes)", b.nbytes)
                .map_err(|e| at(e, Loc::Buffer(i)))?;
            total = total.saturating_add(padded);
            DeviceLimits::at_most("total buffer bytes vs device memory size (bytes)", total, limits.memory_bytes)
                .map_err(|e| at(e, Loc::Buffer(i)))?;
        }
        let max_args = u64::from(limits.max_kernel_args);
        for (i, p) in self.programs().enumerate() {
            DeviceLimits::at_most(
                "program parameter count vs device max kernel arguments",
                p.n_params() as u64,
                max_args,
            )
            .map_err(|e| at(e, Loc::Program(i)))?;
        }
        let mut kernarg_bytes: u64 = 0;
        for (i, l) in self.launches().enumerate() {
            let LaunchRef::Kernel(k) = l else { continue };
            let n = (k.n_args() as u64).saturating_add(k.vals().len() as u64);
            DeviceLimits::at_most("launch argument count vs device max kernel arguments", n, max_args)
                .map_err(|e| at(e, Loc::Launch(i)))?;
            for (d, (&g, &max)) in k.global_size.iter().zip(&limits.max_grid).enumerate() {
                const WHAT: [&str; 3] = [
                    "launch global_size[0] vs device max grid",
                    "launch global_size[1] vs device max grid",
                    "launch global_size[2] vs device max grid",
                ];
                DeviceLimits::at_most(WHAT[d], u64::from(g), u64::from(max)).map_err(|e| at(e, Loc::Launch(i)))?;
            }
            kernarg_bytes = kernarg_bytes.saturating_add(n.saturating_mul(8));
        }
        limits
            .alloc_size("kernel argument bytes of all launches vs device largest allocation", kernarg_bytes)
            .map(|_| ())
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::hcqb;
    use crate::model::Launch;
    use crate::model::tests::tiny;
    use alloc::string::ToString;
    use hcq::error::Error;

    const LIMITS: DeviceLimits = DeviceLimits {
        memory_bytes: 1 << 20,
        max_alloc_bytes: 1 << 16,
        alloc_align: 16,
        max_kernel_args: 3,
        max_grid: [4, 1, 1],
    };

    fn check(m: &crate::model::BundleModel, limits: &DeviceLimits) -> Result<()> {
        let bytes = hcqb::write(m).unwrap();
        Hcqb::parse(&bytes).unwrap().check_limits(limits)
    }

    #[test]
    fn the_tiny_model_fits_small_limits() {
        check(&tiny(), &LIMITS).unwrap();
    }

    #[test]
    fn huge_buffers_are_refused_naming_the_buffer_and_the_limit() {
        for huge in [(1 << 16) + 1, 1 << 40, 1 << 62, 1 << 63, u64::MAX] {
            let mut m = tiny();
            m.buffers[2].nbytes = huge;
            let e = check(&m, &LIMITS).unwrap_err();
            assert!(e.to_string().starts_with("buffer 2: buffer nbytes vs device largest allocation"), "{e}");
            assert_eq!(
                e.root(),
                &Error::LimitExceeded {
                    what: "buffer nbytes vs device largest allocation (bytes)",
                    value: huge,
                    limit: 1 << 16
                }
            );
        }
    }

    #[test]
    fn the_total_of_the_buffers_must_fit_the_memory() {
        let limits = DeviceLimits { memory_bytes: 512, ..LIMITS };
        let e = check(&tiny(), &limits).unwrap_err();
        // 16 + 512 bytes: buffer 1 takes the total past 512.
        assert!(e.to_string().starts_with("buffer 1: total buffer bytes vs device memory size"), "{e}");
        assert!(matches!(e.root(), Error::LimitExceeded { value: 528, limit: 512, .. }));
    }

    #[test]
    fn argument_counts_and_grids_are_bounded() {
        let limits = DeviceLimits { max_kernel_args: 2, ..LIMITS };
        let e = check(&tiny(), &limits).unwrap_err();
        assert!(e.to_string().starts_with("program 1: program parameter count"), "{e}");
        let mut m = tiny();
        if let Launch::Kernel(k) = &mut m.launches[1] {
            k.global_size = [5, 1, 1];
        }
        let e = check(&m, &LIMITS).unwrap_err();
        assert!(e.to_string().starts_with("launch 1: launch global_size[0] vs device max grid"), "{e}");
        let mut m = tiny();
        if let Launch::Kernel(k) = &mut m.launches[0] {
            k.global_size = [1, 2, 1];
        }
        let e = check(&m, &LIMITS).unwrap_err();
        assert!(matches!(e.root(), Error::LimitExceeded { value: 2, limit: 1, .. }), "{e}");
    }
}
