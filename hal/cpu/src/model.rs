//! A model bundle loaded on the CPU device and ready to call: the core bundle runner
//! ([`hcq_runner::Runner`]) over the CPU backend ([`CpuBackend`]) — [`CpuRunner`] is that runner.
//!
//! [`load`] refuses objects for another architecture, then hands the bundle to
//! [`Runner::load`]: the host's x86-64 level is checked, every base buffer is allocated once
//! and filled, each program's object is loaded for the host, and the launch list is captured as
//! exec lists of the device (see [`crate::backend`]). [`Runner::call`] replays it on the calling
//! thread ([`SoftDevice::run_inline`](hcq::soft::threaded::SoftDevice::run_inline)) — no
//! encoding, no allocation, no hand-off to another thread. The CPU's extras are the backend's
//! ([`Runner::backend`], [`Runner::backend_mut`]): [`CpuBackend::submit`] queues a call for the
//! command-processor thread instead, [`CpuBackend::call_direct`] calls every kernel directly
//! (the floor a call is measured against), [`CpuBackend::device`], [`CpuBackend::buffer_addrs`]
//! and [`CpuBackend::submissions_per_call`]. [`Runner::output`] and [`Runner::check`] wait for
//! the calls that write the outputs before they read (the buffers carry the stamps of the calls
//! that use them).
//!
//! [`Runner::check`] is the core's: outputs compared with the bundle's expected bytes exactly
//! when the objects are those that produced them, else within the bundle format's tolerance
//! `|got - expected| <= 1e-5 + 1e-4 * |expected|` (FMA contraction differs between
//! architectures).

use crate::backend::CpuBackend;
use crate::device::CpuDevice;
use hcq::device::{Device, DeviceLimits};
use hcq::error::{Error, Result};
use hcq_bundle::Arch;
use hcq_bundle::hcqb::Hcqb;
use hcq_runner::Runner;
use std::sync::Arc;

pub use crate::backend::{check_arch_level, host_arch};
/// The bundle tolerance, the comparison and its report live in the core runner, shared by
/// every backend.
pub use hcq_runner::{CheckReport, TOL_ABS, TOL_REL, compare};

/// A bundle loaded on a CPU device: the core runner over the CPU backend.
pub type CpuRunner = Runner<CpuBackend>;

/// Load `bundle` on `dev`, running the objects built for `arch` (this host's; any other is
/// refused). `allow_unchecked_level`: run objects whose CPU level cannot be verified
/// (`native`).
pub fn load(dev: Arc<CpuDevice>, bundle: &Hcqb<'_>, arch: Arch, allow_unchecked_level: bool) -> Result<CpuRunner> {
    let limits = dev.limits();
    load_within(dev, bundle, arch, allow_unchecked_level, &limits)
}

/// [`load`] within `limits` as well as the device's own (each field the smaller): for a caller
/// with a memory budget below the host's RAM (the `load` fuzz target). Every size and count is
/// checked ([`Hcqb::check_limits`]) before anything is allocated.
pub fn load_within(
    dev: Arc<CpuDevice>,
    bundle: &Hcqb<'_>,
    arch: Arch,
    allow_unchecked_level: bool,
    limits: &DeviceLimits,
) -> Result<CpuRunner> {
    if Some(arch) != Arch::host() {
        return Err(Error::Unsupported {
            what: "bundle architecture is not this host's",
            value: u64::from(arch.code()),
        });
    }
    let backend = CpuBackend::new(dev).allow_unchecked_level(allow_unchecked_level);
    Runner::load_within(backend, bundle, limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcq_bundle::hcqb;
    use std::vec::Vec;

    fn example(name: &str) -> Vec<u8> {
        hcqb::write(&hcq_bundle::v1::import_dir(hcq_testkit::example(name)).unwrap()).unwrap()
    }

    #[test]
    fn a_loaded_model_is_the_runner_over_the_cpu_backend() {
        let bytes = example("elementwise");
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let mut m = load(dev.clone(), &file, Arch::host().unwrap(), true).unwrap();
        let dm: &mut dyn hcq_runner::plug::LoadedModel = &mut m;
        dm.call().unwrap();
        let r = dm.check().unwrap();
        assert!(r.ok && r.compared > 0, "{r:?}");
        assert_eq!(dm.output(0).unwrap(), m.output(0).unwrap());
        // the same bundle through the core runner directly gives the same bytes
        let mut r = Runner::load(CpuBackend::new(dev).allow_unchecked_level(true), &file).unwrap();
        r.call().unwrap();
        assert_eq!(r.output(0).unwrap(), m.output(0).unwrap());
    }

    #[test]
    fn a_bundle_with_an_unverifiable_level_needs_the_allowance() {
        let mut model = hcq_bundle::v1::import_dir(hcq_testkit::example("elementwise")).unwrap();
        model.arch_levels = Default::default(); // no level stated: cannot be checked
        let bytes = hcqb::write(&model).unwrap();
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let e = load(dev.clone(), &file, Arch::host().unwrap(), false).unwrap_err();
        assert!(std::format!("{e}").contains("arch level"), "{e}");
        assert_eq!(dev.allocator().used_bytes(), 0, "refused before any allocation");
        load(dev, &file, Arch::host().unwrap(), true).unwrap();
    }

    #[test]
    fn buffers_carry_the_stamp_of_the_last_call_that_uses_them() {
        let bytes = example("chain100");
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let mut m = load(dev.clone(), &file, Arch::host().unwrap(), false).unwrap();
        let v = m.backend_mut().submit().unwrap();
        let hcq = dev.soft().engine();
        assert_eq!(hcq.timeline().last_submitted().get(), v);
        // the output read waits for the submitted call (its buffer is marked with `v`)
        m.output(0).unwrap();
        assert!(hcq.timeline().passed(hcq::stamp::Stamp::new(v)));
        m.call().unwrap();
        assert!(m.check().unwrap().ok);
    }

    #[test]
    fn a_rebound_input_is_read_from_the_callers_memory_and_rebinding_back_restores_it() {
        #[repr(C, align(16))]
        struct Frame([f32; 16]);
        let bytes = example("chain100");
        let file = Hcqb::parse(&bytes).unwrap();
        let view = file.inputs().next().unwrap().view;
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let mut m = load(dev, &file, Arch::host().unwrap(), false).unwrap();
        let from = m.backend().buffer_addrs()[view.buffer as usize] + view.offset;
        let f32s =
            |b: Vec<u8>| -> Vec<f32> { b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect() };
        m.call().unwrap();
        let before = f32s(m.output(0).unwrap());
        let mut frame = Frame([0.0; 16]);
        for (i, x) in frame.0.iter_mut().enumerate() {
            *x = 1000.0 + i as f32;
        }
        let to = frame.0.as_mut_ptr() as u64;
        // SAFETY: `frame` (16 floats, 16-aligned) outlives every call below, the backend is
        // rebound back before it drops, and the chain's views of the input are the whole buffer.
        unsafe { m.backend_mut().rebind(from, view.nbytes, to).unwrap() };
        m.call().unwrap();
        let got = f32s(m.output(0).unwrap());
        let want: Vec<f32> = (0..16).map(|i| 1000.0 + i as f32 + 100.0).collect();
        assert_eq!(got, want, "the call read the caller's memory");
        frame.0[3] = -5.0;
        // the kernels read `frame` through the address taken above, which the lint cannot see
        std::hint::black_box(&frame);
        m.call().unwrap();
        assert_eq!(f32s(m.output(0).unwrap())[3], 95.0, "zero-copy: a later write to the memory is seen");
        // SAFETY: rebinding back to the model's own input buffer.
        unsafe { m.backend_mut().rebind(to, view.nbytes, from).unwrap() };
        m.call().unwrap();
        assert_eq!(f32s(m.output(0).unwrap()), before);
        assert!(m.check().unwrap().ok);
    }
}
