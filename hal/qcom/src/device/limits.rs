//! The Adreno half of a bundle's limits step: every program's metadata (`programs[].adreno`)
//! and every launch's GPU dispatch against the device's [`GpuLimits`], before the backend
//! allocates anything (the sizes every device has are [`Hcqb::check_limits`]'s).

use hcq::error::{Result, ResultExt};
use hcq_adreno::limits::{GpuLimits, check_dispatch, check_meta};
use hcq_bundle::hcqb::{Hcqb, LaunchRef};

/// Check `bundle`'s Adreno metadata and GPU dispatches against `gpu` (and `max_args` kernel
/// arguments), naming the program or launch (`"program 0: adreno fregs vs device full
/// registers: ..."`).
pub fn check_limits(bundle: &Hcqb<'_>, gpu: &GpuLimits, max_args: u32) -> Result<()> {
    for (i, p) in bundle.programs().enumerate() {
        if let Some(meta) = p.adreno {
            check_meta(meta, gpu, max_args.into()).with_context(|| format!("program {i}"))?;
        }
    }
    for (i, l) in bundle.launches().enumerate() {
        if let LaunchRef::Kernel(k) = l
            && let Some(d) = &k.gpu
        {
            check_dispatch(d.global_size, d.local_size, gpu).with_context(|| format!("launch {i}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcq::device::DeviceLimits;
    use hcq::error::Error;
    use hcq_bundle::hcqb;
    use hcq_bundle::model::{BundleModel, Launch};
    use hcq_bundle::testing::tiny;

    const LIMITS: DeviceLimits = DeviceLimits {
        memory_bytes: 1 << 20,
        max_alloc_bytes: 1 << 16,
        alloc_align: 16,
        max_kernel_args: 3,
        max_grid: [4, 1, 1],
    };

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

    fn hcqb_of<T>(m: &BundleModel, f: impl FnOnce(&Hcqb<'_>) -> T) -> T {
        let bytes = hcqb::write(m).unwrap();
        f(&Hcqb::parse(&bytes).unwrap())
    }

    fn check(m: &BundleModel, gpu: &GpuLimits) -> Result<()> {
        hcqb_of(m, |f| check_limits(f, gpu, LIMITS.max_kernel_args))
    }

    /// Every size of the Adreno metadata at its extremes (before: not read by the limits step,
    /// so `kernarg_alloc_size` 0xF0000000 allocated ~8 GB) is refused naming the field; the CPU
    /// (no GPU limits) never reads the metadata.
    #[test]
    fn the_adreno_metadata_is_checked_against_the_gpu_limits() {
        check(&tiny(), &GPU).unwrap();
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
                let e = check(&m, &GPU).unwrap_err();
                assert!(e.to_string().starts_with(&format!("program 0: adreno {field} vs device")), "{e}");
                assert!(matches!(e.root(), Error::LimitExceeded { value, .. } if *value == n), "{e}");
                // The device-neutral step does not read the GPU metadata.
                hcqb_of(&m, |f| f.check_limits(&LIMITS)).unwrap();
            }
        }
        // Counts of the constant tables.
        let many = |k: &str, n: usize| format!("{{\"consts\":{{\"{k}\":[{}]}}}}", vec!["{}"; n].join(","));
        for (k, n, what) in
            [("args", 4, "args count"), ("vals", 4, "vals count"), ("immediates", 1025, "immediates count")]
        {
            let mut m = tiny();
            m.programs[0].adreno = Some(many(k, n).into_bytes());
            let e = check(&m, &GPU).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        }
        // Not a number where a size belongs, and not JSON.
        for bad in [&br#"{"stack_bytes":-1}"#[..], br#"{"stack_bytes":1.5}"#, br#"{"fregs":"ten"}"#, b"{"] {
            let mut m = tiny();
            m.programs[0].adreno = Some(bad.to_vec());
            let e = check(&m, &GPU).unwrap_err();
            assert!(
                e.to_string().starts_with("program 0: ") && e.to_string().contains("malformed adreno metadata json"),
                "{e}"
            );
        }
    }

    /// Absurd GPU grids are refused naming the dimension (before: only the CPU grid was checked).
    #[test]
    fn gpu_grids_are_bounded() {
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
            let e = check(&m, &GPU).unwrap_err();
            assert!(
                e.to_string().starts_with("launch 0: ") && e.to_string().contains(want),
                "{groups:?} {local:?}: {e}"
            );
            // the device-neutral step does not read the GPU dispatch
            hcqb_of(&m, |f| f.check_limits(&LIMITS)).unwrap();
        }
        let big = GpuLimits { max_total_groups: u64::MAX, ..GPU };
        let mut m = tiny();
        if let Launch::Kernel(k) = &mut m.launches[0] {
            k.gpu.as_mut().unwrap().global_size = [65535, 1, 1];
            k.gpu.as_mut().unwrap().local_size = [1024, 1, 1];
        }
        check(&m, &big).unwrap();
        let limits = GpuLimits { max_groups: [u32::MAX; 3], ..big };
        if let Launch::Kernel(k) = &mut m.launches[0] {
            k.gpu.as_mut().unwrap().global_size = [1 << 23, 1, 1];
        }
        let e = check(&m, &limits).unwrap_err();
        assert!(e.to_string().contains("threads in x"), "{e}");
    }
}
