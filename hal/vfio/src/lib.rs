//! # hcq-vfio — a PCIe userspace HAL over Linux VFIO
//!
//! The PC half of hcq's hardware layer: a userspace driver owns a PCIe device through VFIO.
//!
//! - [`sysfs`]: PCI discovery (address, ids, class, BARs, IOMMU group, bound driver) under an
//!   injectable sysfs root, and the explicit [`sysfs::Sysfs::bind_vfio_pci`].
#![warn(missing_docs)]

pub mod sysfs;

pub use sysfs::{Bar, BarKind, PciAddress, PciDevice, Sysfs};
