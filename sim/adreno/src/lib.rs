//! # hcq-sim-adreno — the simulated Adreno 630
//!
//! The GPU behind the `QCOM:SIM` device, one part per module:
//!
//! - [`cp`]: the command processor, a PM4 interpreter over GPU memory ([`cp::Cp`], and
//!   [`cp::RingCp`] for the bare-metal ring registers), with a [`cp::ShaderCore`] hook for the
//!   shader core;
//! - [`kgsl`]: [`SimKgsl`], a simulated KGSL: `hcq_qcom::kgsl::ioctl::KgslIoctl` over host memory
//!   whose submissions run on the CP; [`hooked`]: [`HookedKgsl`], the same with a test's hook
//!   in front (refuse a call, record one, state other limits);
//! - [`msm`]: [`SimMsm`], the simulated MSM DRM driver over the same simulated GPU
//!   (`hcq_qcom::msm::MsmIoctl`, the `MSM+QCOM:SIM` device);
//! - [`dispatch`]: [`Ir3Dispatch`], the shader core: each `CP_EXEC_CS` runs on `hcq-ir3`'s
//!   interpreter, its argument addresses checked against the allocations ([`ArgSlots`]);
//! - [`images`]: the texture, sampler and IBO descriptors of a dispatch, decoded and checked;
//! - [`limits`]: what the simulated GPU states to the device through both interfaces: its
//!   work-group budget ([`SIM_MAX_GROUPS`]) and the instructions its interpreter does not run.
//!
//! [`open`] makes the `QCOM:SIM` device (`hcq_qcom::device::QcomDevice` over a [`SimKgsl`]
//! with the ir3 core) and [`QcomSimKind`]`(Interface::Any)` is its registry entry; [`open_msm`]
//! makes `MSM+QCOM:SIM` (the same device over a [`SimMsm`]), with `QcomSimKind(Interface::Msm)`
//! and `QcomSimKind(Interface::Kgsl)` (`KGSL+QCOM:SIM`, `QCOM:SIM` by its interface's name).

extern crate alloc;

pub mod cp;
pub mod dispatch;
pub mod hooked;
pub mod images;
pub mod kgsl;
pub mod limits;
pub mod msm;
mod overlay;

pub use dispatch::{ArgSlots, Ir3Dispatch, PageFaults};
pub use hooked::{HookedKgsl, KgslCall, KgslHook};
pub use kgsl::{SIM_CHIP_ID, SimKgsl};
pub use limits::SIM_MAX_GROUPS;
pub use msm::SimMsm;

use hcq::Result;
use hcq::device::{Device, DeviceProperties};
use hcq_qcom::device::{Interface, QcomDevice, QcomOpen};
use hcq_runner::plug::{DeviceKind, OpenDevice, Options};
use std::sync::Arc;

/// Open `QCOM:SIM`: the QCOM device over a simulated KGSL whose shader core is the ir3
/// interpreter. With `capture`, every submission is also recorded as a freedreno `.rd` capture.
pub fn open(capture: bool) -> Result<Arc<QcomDevice>> {
    open_with(Ir3Dispatch::new(), capture)
}

/// `QCOM:SIM` with `dispatch` (a step limit of one's choosing) as its shader core; the device
/// announces each program's argument slots to it (through the simulated KGSL).
pub fn open_with(dispatch: Ir3Dispatch, capture: bool) -> Result<Arc<QcomDevice>> {
    let slots = ArgSlots::default();
    let sim = SimKgsl::new(Box::new(dispatch.with_arg_slots(slots.clone()))).with_arg_slots(slots);
    QcomDevice::with_backend("QCOM:SIM", Arc::new(sim), capture)
}

/// Open `MSM+QCOM:SIM`: the QCOM device through its MSM DRM path, over a simulated MSM driver
/// on the same simulated GPU as `QCOM:SIM` (`.rd` captures are KGSL-only: `capture` is refused).
pub fn open_msm(capture: bool) -> Result<Arc<QcomDevice>> {
    open_msm_with(Ir3Dispatch::new(), capture)
}

/// `MSM+QCOM:SIM` with `dispatch` as its shader core.
pub fn open_msm_with(dispatch: Ir3Dispatch, capture: bool) -> Result<Arc<QcomDevice>> {
    let slots = ArgSlots::default();
    let sim = SimKgsl::new(Box::new(dispatch.with_arg_slots(slots.clone()))).with_arg_slots(slots);
    QcomDevice::with_msm_backend("MSM+QCOM:SIM", Arc::new(SimMsm::new(sim)), capture)
}

/// The simulated QCOM kinds of the plug-in point: `QCOM:SIM` (= `KGSL+QCOM:SIM`, the simulated
/// KGSL running shaders on the ir3 interpreter) and `MSM+QCOM:SIM` (the MSM DRM path over a
/// simulated MSM driver); each opens into hcq-qcom's [`QcomOpen`], as the hardware does.
#[derive(Clone, Copy, Debug)]
pub struct QcomSimKind(pub Interface);

impl QcomSimKind {
    fn open_device(&self, capture: bool) -> Result<Arc<QcomDevice>> {
        match self.0 {
            Interface::Any => open(capture),
            Interface::Kgsl => {
                let slots = ArgSlots::default();
                let sim =
                    SimKgsl::new(Box::new(Ir3Dispatch::new().with_arg_slots(slots.clone()))).with_arg_slots(slots);
                QcomDevice::with_backend("KGSL+QCOM:SIM", Arc::new(sim), capture)
            }
            Interface::Msm => open_msm(capture),
        }
    }
}

impl DeviceKind for QcomSimKind {
    fn names(&self) -> &[&'static str] {
        match self.0 {
            Interface::Any => &["QCOM:SIM"],
            Interface::Kgsl => &["KGSL+QCOM:SIM"],
            Interface::Msm => &["MSM+QCOM:SIM"],
        }
    }
    fn probe(&self, _name: &str) -> Result<DeviceProperties> {
        Ok(self.open_device(false)?.properties())
    }
    fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
        opts.refuse_unsupported(name, true, true)?;
        Ok(Box::new(QcomOpen::new(self.open_device(opts.capture_rd)?, opts)))
    }
}
