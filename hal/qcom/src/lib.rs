//! hcq's QCOM device: the Adreno of Qualcomm SoCs behind its kernel driver, through either of
//! its two kernel interfaces. One folder per interface, one file per shared concept:
//!
//! - [`kernel`]: [`kernel::GpuKernel`], what the device needs of a kernel interface (contexts,
//!   GPU objects, submissions, fences, what the backend states: limits and shader support), and
//!   [`DeviceInfo`];
//! - [`kgsl`]: Qualcomm's KGSL (`/dev/kgsl-3d0`, Android and comma's AGNOS): uapi, ioctls
//!   behind [`kgsl::ioctl::KgslIoctl`], [`kgsl::Kgsl`], `.rd` captures;
//! - [`msm`]: the mainline MSM DRM driver (`/dev/dri/renderD*`): uapi, ioctls behind
//!   [`msm::MsmIoctl`], [`msm::Msm`];
//! - [`memory`]: GPU objects and mappings; [`context`]: contexts and the signal wait's hooks
//!   on one; [`flags`]: KGSL's flag words as `bitflags` (the allocation flags of both);
//! - [`device`]: the `QCOM` device ([`device::QcomDevice`]) and its bundle runner backend
//!   ([`device::QcomBackend`]).
//!
//! The simulated GPU (`QCOM:SIM`, `MSM+QCOM:SIM`: the simulated Adreno CP and shader core
//! behind both interfaces' ioctl traits) is the `hcq-sim-adreno` crate under `sim/adreno`.

pub mod context;
pub mod device;
pub mod flags;
mod forward;
pub mod kernel;
pub mod kgsl;
pub mod memory;
pub mod msm;

pub use context::{Context, TimestampHooks};
pub use kernel::DeviceInfo;
pub use memory::{FreeAfter, GpuObject, Mapping, UserMapping};
