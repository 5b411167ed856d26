//! A parsed bundle against what a device states it can do ([`DeviceLimits`]).
//!
//! [`Hcqb::parse`] proves a file self-consistent (every view inside its buffer); it cannot know
//! whether the device has 2^40 bytes for a buffer. [`Hcqb::check_limits`] is that second step,
//! run by a loader before it allocates anything: every size is rounded to the device's granule
//! with checked arithmetic and compared with the largest allocation, the buffers' total with the
//! memory size, each program's and launch's argument count with the kernel-argument limit, each
//! launch grid with the device's grid, and the kernel-argument table's total size. For a GPU
//! ([`DeviceLimits::gpu`]) also every program's GPU metadata (`programs[].adreno`: constant
//! block, code, private memory, stack, shared memory, register footprints, branch stack,
//! work-group size, constant-slot counts) and every launch's GPU grid (work-groups per dimension
//! and in total, work-group size, threads per dimension). No allocation but the parse of that
//! metadata (std); with `alloc` the error names the place (`"buffer 1: ..."`).
//!
//! This is the limits step: that the numbers fit the device. That the metadata agrees with
//! itself and with its blob is the GPU backend's validation (`hcq_adreno::Program`), which the
//! QCOM backend also runs before anything is allocated.

use super::hcqb::{Hcqb, LaunchRef};
use super::{Loc, at};
use crate::error::Result;
use crate::limits::{DeviceLimits, GpuLimits};

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
        if let Some(gpu) = &limits.gpu {
            for (i, p) in self.programs().enumerate() {
                if let Some(meta) = p.adreno {
                    adreno::check(meta, gpu, max_args).map_err(|e| at(e, Loc::Program(i)))?;
                }
            }
        }
        let mut kernarg_bytes: u64 = 0;
        for (i, l) in self.launches().enumerate() {
            let LaunchRef::Kernel(k) = l else { continue };
            if let (Some(gpu), Some(d)) = (&limits.gpu, &k.gpu) {
                check_gpu_grid(d.global_size, d.local_size, gpu).map_err(|e| at(e, Loc::Launch(i)))?;
            }
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

/// A launch's GPU dispatch (`groups` work-groups of `local` threads) against `gpu`.
fn check_gpu_grid(groups: [u32; 3], local: [u32; 3], gpu: &GpuLimits) -> Result<()> {
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
            return Err(crate::Error::InvalidArgument { what: "launch gpu_local_size: a dimension is 0", value: 0 });
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

/// The sizes and counts a program's Adreno metadata (`programs[].adreno`, JSON) claims, against
/// [`GpuLimits`]: every field that sizes an allocation, a loaded range or a hardware field.
/// Which fields these are and what they mean: `examples/FORMAT.md`, "programs[].adreno".
#[cfg(feature = "std")]
mod adreno {
    use super::{DeviceLimits, GpuLimits};
    use crate::error::{Error, Result};
    use alloc::vec::Vec;
    use serde::Deserialize;
    use serde::de::IgnoredAny;

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

    pub(super) fn check(meta: &[u8], gpu: &GpuLimits, max_args: u64) -> Result<()> {
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
            (
                "adreno consts.max_const_offset_vec4 vs device constant RAM (vec4)",
                c.consts.max_const_offset_vec4,
                cb / 16,
            ),
            (
                "adreno consts.local_size_offset vs device constant RAM (bytes)",
                c.consts.local_size_offset.unwrap_or(0),
                cb,
            ),
            ("adreno consts.args count vs device max kernel arguments", c.consts.args.len() as u64, max_args),
            ("adreno consts.vals count vs device max kernel arguments", c.consts.vals.len() as u64, max_args),
            (
                "adreno consts.immediates count vs device constant RAM (u32 words)",
                c.consts.immediates.len() as u64,
                cb / 4,
            ),
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
}

/// Without `std` the metadata cannot be read: a device that states GPU limits gets every bundle
/// whose programs carry it refused, never run unchecked.
#[cfg(not(feature = "std"))]
mod adreno {
    use super::GpuLimits;
    use crate::error::{Error, Result};

    pub(super) fn check(_meta: &[u8], _gpu: &GpuLimits, _max_args: u64) -> Result<()> {
        Err(Error::Unsupported { what: "adreno metadata limits need the std feature (its JSON parser)", value: 0 })
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::bundle::hcqb;
    use crate::bundle::model::Launch;
    use crate::bundle::model::tests::tiny;
    use crate::error::Error;
    use alloc::string::ToString;

    const LIMITS: DeviceLimits = DeviceLimits {
        memory_bytes: 1 << 20,
        max_alloc_bytes: 1 << 16,
        alloc_align: 16,
        max_kernel_args: 3,
        max_grid: [4, 1, 1],
        gpu: None,
    };

    fn check(m: &crate::bundle::model::BundleModel, limits: &DeviceLimits) -> Result<()> {
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

    #[cfg(feature = "std")]
    const GPU: GpuLimits = GpuLimits {
        const_bytes: 4096,
        code_bytes: 1023 * 128,
        private_bytes_per_thread: 255 * 512,
        stack_bytes: 1 << 30,
        shared_bytes: 32 * 1024,
        full_regs: 48,
        half_regs: 48,
        branch_stack: 63,
        workgroup_threads: 1024,
        max_groups: [65535; 3],
        max_total_groups: 1 << 16,
    };

    /// Every size of the Adreno metadata at its extremes (before: not read by the limits step,
    /// so `kernarg_alloc_size` 0xF0000000 allocated ~8 GB) is refused naming the field; the CPU
    /// (no GPU limits) never reads the metadata.
    #[cfg(feature = "std")]
    #[test]
    fn the_adreno_metadata_is_checked_against_the_gpu_limits() {
        let limits = DeviceLimits { gpu: Some(GPU), ..LIMITS };
        check(&tiny(), &limits).unwrap();
        let fields: [(&str, &str); 22] = [
            ("consts.kernarg_alloc_size", r#"{"consts":{"kernarg_alloc_size":N}}"#),
            ("consts.load_vec4", r#"{"consts":{"load_vec4":N}}"#),
            ("consts.buf_off", r#"{"consts":{"buf_off":N}}"#),
            ("consts.max_const_offset_vec4", r#"{"consts":{"max_const_offset_vec4":N}}"#),
            ("consts.local_size_offset", r#"{"consts":{"local_size_offset":N}}"#),
            ("image_size", r#"{"image_size":N}"#),
            ("blob.image_nbytes", r#"{"blob":{"image_nbytes":N}}"#),
            ("instr_size_128", r#"{"instr_size_128":N}"#),
            ("prg_offset", r#"{"prg_offset":N}"#),
            ("fregs", r#"{"fregs":N}"#),
            ("hregs", r#"{"hregs":N}"#),
            ("branchstack", r#"{"branchstack":N}"#),
            ("pvtmem", r#"{"pvtmem":N}"#),
            ("pvtmem_size_per_item", r#"{"pvtmem_size_per_item":N}"#),
            ("pvtmem_size_total", r#"{"pvtmem_size_total":N}"#),
            ("hw_stack_offset", r#"{"hw_stack_offset":N}"#),
            ("stack_bytes", r#"{"stack_bytes":N}"#),
            ("shmem", r#"{"shmem":N}"#),
            ("max_threads", r#"{"max_threads":N}"#),
            ("consts.kernarg_alloc_size", r#"{"arch":"a630","consts":{"kernarg_alloc_size":N}}"#),
            ("stack_bytes", r#"{"stack_bytes":N,"arch":"a630"}"#),
            ("shmem", r#"{"shmem":N}"#),
        ];
        // Under Miri (memory safety, not arithmetic) every 7th field and one value: the whole
        // sweep parses 66 JSON documents and took six minutes there.
        let (every, values) = if cfg!(miri) { (7, 1) } else { (1, 3) };
        for (field, json) in fields.into_iter().step_by(every) {
            for n in [u64::MAX, 0xF000_0000u64, 1 << 40].into_iter().take(values) {
                let mut m = tiny();
                m.programs[0].adreno = Some(json.replace('N', &n.to_string()).into_bytes());
                let e = check(&m, &limits).unwrap_err();
                assert!(e.to_string().starts_with(&alloc::format!("program 0: adreno {field} vs device")), "{e}");
                assert!(matches!(e.root(), Error::LimitExceeded { value, .. } if *value == n), "{e}");
                // The CPU does not run the GPU metadata, and does not read it.
                check(&m, &LIMITS).unwrap();
            }
        }
        // Counts of the constant tables.
        let many =
            |k: &str, n: usize| alloc::format!("{{\"consts\":{{\"{k}\":[{}]}}}}", alloc::vec!["{}"; n].join(","));
        for (k, n, what) in
            [("args", 4, "args count"), ("vals", 4, "vals count"), ("immediates", 1025, "immediates count")]
        {
            let mut m = tiny();
            m.programs[0].adreno = Some(many(k, n).into_bytes());
            let e = check(&m, &limits).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        }
        // Not a number where a size belongs, and not JSON.
        for bad in [&br#"{"stack_bytes":-1}"#[..], br#"{"stack_bytes":1.5}"#, br#"{"fregs":"ten"}"#, b"{"] {
            let mut m = tiny();
            m.programs[0].adreno = Some(bad.to_vec());
            let e = check(&m, &limits).unwrap_err();
            assert!(
                e.to_string().starts_with("program 0: ") && e.to_string().contains("malformed adreno metadata json"),
                "{e}"
            );
        }
    }

    /// Absurd GPU grids are refused naming the dimension (before: only the CPU grid was checked).
    #[cfg(feature = "std")]
    #[test]
    fn gpu_grids_are_bounded() {
        let limits = DeviceLimits { gpu: Some(GPU), ..LIMITS };
        let cases: [([u32; 3], [u32; 3], &str); 8] = [
            ([u32::MAX, 1, 1], [4, 1, 1], "launch gpu_global_size[0] (work-groups)"),
            ([1, 65536, 1], [4, 1, 1], "launch gpu_global_size[1] (work-groups)"),
            ([1, 1, u32::MAX], [4, 1, 1], "launch gpu_global_size[2] (work-groups)"),
            ([65535, 65535, 65535], [1, 1, 1], "work-groups in total"),
            ([1, 1, 1], [2048, 1, 1], "launch gpu_local_size[0]"),
            ([1, 1, 1], [64, 64, 1], "work-group threads"),
            ([65535, 1, 1], [1, 1025, 1], "launch gpu_local_size[1]"),
            ([1, 1, 1], [4, 0, 1], "a dimension is 0"),
        ];
        for (groups, local, want) in cases {
            let mut m = tiny();
            if let Launch::Kernel(k) = &mut m.launches[0] {
                k.gpu.as_mut().unwrap().global_size = groups;
                k.gpu.as_mut().unwrap().local_size = local;
            }
            let e = check(&m, &limits).unwrap_err();
            assert!(
                e.to_string().starts_with("launch 0: ") && e.to_string().contains(want),
                "{groups:?} {local:?}: {e}"
            );
            check(&m, &LIMITS).unwrap();
        }
        let big = GpuLimits { max_total_groups: u64::MAX, ..GPU };
        let mut m = tiny();
        if let Launch::Kernel(k) = &mut m.launches[0] {
            k.gpu.as_mut().unwrap().global_size = [65535, 1, 1];
            k.gpu.as_mut().unwrap().local_size = [1024, 1, 1];
        }
        check(&m, &DeviceLimits { gpu: Some(big), ..LIMITS }).unwrap();
        let limits = DeviceLimits { gpu: Some(GpuLimits { max_groups: [u32::MAX; 3], ..big }), ..LIMITS };
        if let Launch::Kernel(k) = &mut m.launches[0] {
            k.gpu.as_mut().unwrap().global_size = [1 << 23, 1, 1];
        }
        let e = check(&m, &limits).unwrap_err();
        assert!(e.to_string().contains("threads in x"), "{e}");
    }
}
