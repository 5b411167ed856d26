//! # hcq-sim-adreno — the simulated Adreno 630
//!
//! The GPU behind the `QCOM:SIM` device, one part per module:
//!
//! - [`cp`]: the command processor, a PM4 interpreter over GPU memory ([`cp::Cp`], and
//!   [`cp::RingCp`] for the bare-metal ring registers), with a [`cp::Dispatch`] hook for the
//!   shader core;
//! - [`kgsl`]: [`SimKgsl`], a simulated KGSL: `hcq_kgsl::backend::KgslIoctl` over host memory
//!   whose submissions run on the CP;
//! - [`dispatch`]: [`Ir3Dispatch`], the shader core: each `CP_EXEC_CS` runs on `hcq-ir3`'s
//!   interpreter, its argument addresses checked against the allocations ([`ArgSlots`]);
//! - [`images`]: the texture, sampler and IBO descriptors of a dispatch, decoded and checked.
//!
//! [`open`] makes the `QCOM:SIM` device (`hcq_kgsl::device::QcomDevice` over a [`SimKgsl`]
//! with the ir3 core) and [`qcom_sim_kind`] is its registry entry.

extern crate alloc;

pub mod cp;
pub mod dispatch;
pub mod images;
pub mod kgsl;

pub use dispatch::{ArgSlots, Ir3Dispatch};
pub use kgsl::{SIM_CHIP_ID, SimKgsl};

use hcq::Result;
use hcq::device::Device;
use hcq_kgsl::device::QcomDevice;
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

/// The registry entry for `QCOM:SIM` (the simulated KGSL running shaders on the ir3 interpreter).
pub fn qcom_sim_kind() -> hcq::device::DeviceKind {
    fn count() -> Result<u32> {
        Ok(1)
    }
    fn open(_: u32) -> Result<Arc<dyn Device>> {
        Ok(crate::open(false)?)
    }
    hcq::device::DeviceKind { name: "QCOM:SIM", count, open }
}
