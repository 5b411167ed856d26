//! # hcq-vfio — a PCIe userspace HAL over Linux VFIO
//!
//! The PC half of hcq's hardware layer: a userspace driver owns a PCIe device through VFIO.
//!
//! - [`sysfs`]: PCI discovery (address, ids, class, BARs, IOMMU group, bound driver) under an
//!   injectable sysfs root, and the explicit [`sysfs::Sysfs::bind_vfio_pci`].
//! - [`vfio`]: the type1 container/group/device sequence, region info, BAR mappings (the core's
//!   [`hcq::mmio::MmioBus`], word-sized volatile access only), config space, interrupts to
//!   eventfds, reset; a no-IOMMU fallback behind an `unsafe` opt-in.
//! - [`dma`]: locked page-aligned host buffers, an IOVA allocator, and [`dma::DmaMapping`], the
//!   guard that keeps memory alive while the IOMMU maps it.
//! - [`irq`]: interrupt eventfds, waits with a timeout, and [`irq::IrqHooks`] (a signal's sleep
//!   hook that sleeps on the interrupt).
//! - [`edu`]: a driver for QEMU's `edu` device and the `EDU` hcq device whose copy queue is
//!   edu's DMA engine.
//! - [`config`]: typed config-space registers and the capability walk (MSI, MSI-X).
//! - [`barrier`]: the device write barrier a doorbell needs.
//! - [`uapi`]: the VFIO ioctl numbers and structs.
#![warn(missing_docs)]

pub mod barrier;
pub mod config;
pub mod dma;
pub mod edu;
pub mod irq;
pub mod sysfs;
pub mod uapi;
pub mod vfio;

pub use sysfs::{Bar, BarKind, PciAddress, PciDevice, Sysfs};
pub use vfio::{BarMapping, IommuMode, IrqKind, RegionInfo, VfioDevice, VfioPaths};
