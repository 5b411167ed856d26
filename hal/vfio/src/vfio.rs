//! The VFIO type1 container / group / device sequence (Linux `Documentation/driver-api/vfio.rst`),
//! region info, BAR mappings, config space, interrupts and reset.
//!
//! Opening a device ([`VfioDevice::open`]):
//! 1. sysfs: the device must be bound to `vfio-pci` and have an IOMMU group;
//! 2. `/dev/vfio/vfio`: a container, API version checked, type1v2 (else type1) IOMMU available;
//! 3. `/dev/vfio/<group>`: the group must be *viable* (every device in it bound to vfio or to
//!    no driver); it joins the container, then the container's IOMMU type is set;
//! 4. `VFIO_GROUP_GET_DEVICE_FD` with the device address gives the device fd.
//!
//! Each failure is an error that names the device or file and says what to do.
//!
//! **No-IOMMU mode** ([`VfioDevice::open_noiommu`], `unsafe`): for kernels built with
//! `CONFIG_VFIO_NOIOMMU` and `vfio.enable_unsafe_noiommu_mode=1` on hosts without an IOMMU (as
//! tinygrad's PCI interface does). The device then reaches *all* of physical memory: a wrong
//! DMA address corrupts the kernel or another process, nothing translates or checks it, and
//! DMA addresses are physical addresses read from `/proc/self/pagemap` (root only). Use it only
//! on a machine you are willing to crash.

use crate::config;
use crate::sysfs::{PciAddress, Sysfs};
use crate::uapi::{self, argsz};
use hcq::error::{Error, Result, ResultExt, device_name};
use hcq::mmio::{MmioBus, VolatileRegion, Width};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

/// Where VFIO looks for things: the sysfs root and the VFIO device directory.
#[derive(Clone, Debug)]
pub struct VfioPaths {
    /// PCI sysfs.
    pub sysfs: Sysfs,
    /// The VFIO character devices (`/dev/vfio`).
    pub dev_vfio: PathBuf,
}

impl Default for VfioPaths {
    fn default() -> Self {
        Self { sysfs: Sysfs::default(), dev_vfio: PathBuf::from("/dev/vfio") }
    }
}

/// How DMA addresses are translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IommuMode {
    /// A type1 IOMMU: the device sees only IOVAs mapped through the container.
    Type1,
    /// No IOMMU: the device sees physical memory (see the module docs).
    NoIommu,
}

fn unavailable(addr: PciAddress, reason: &'static str) -> Error {
    Error::DeviceUnavailable { device: device_name(&addr.to_string()), reason }
}

fn open_file(path: &Path, what: &'static str) -> Result<OwnedFd> {
    rustix::fs::open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::Os { what, errno: e.raw_os_error() })
        .with_context(|| path.display().to_string())
}

/// A VFIO container with its one group attached: the IOMMU address space devices of the group
/// DMA through.
#[derive(Debug)]
pub struct Container {
    fd: OwnedFd,
    group: OwnedFd,
    group_number: u32,
    mode: IommuMode,
}

impl Container {
    /// The IOMMU mode.
    pub fn mode(&self) -> IommuMode {
        self.mode
    }

    /// The IOMMU group number.
    pub fn group(&self) -> u32 {
        self.group_number
    }

    fn open(paths: &VfioPaths, addr: PciAddress, group: u32, mode: IommuMode) -> Result<Self> {
        if !paths.dev_vfio.is_dir() {
            return Err(unavailable(addr, "/dev/vfio is missing: load the vfio and vfio-pci kernel modules"))
                .with_context(|| paths.dev_vfio.display().to_string());
        }
        let cpath = paths.dev_vfio.join("vfio");
        let fd = open_file(&cpath, "open VFIO container")?;
        // SAFETY: GET_API_VERSION takes no argument.
        let v =
            unsafe { uapi::ioctl::<{ uapi::GET_API_VERSION }>(&fd, core::ptr::null_mut(), "VFIO_GET_API_VERSION") }?;
        if v != uapi::VFIO_API_VERSION as i32 {
            return Err(Error::Mismatch {
                what: "VFIO API version",
                expected: u64::from(uapi::VFIO_API_VERSION),
                found: v as u64,
            });
        }
        let iommu_type = match mode {
            IommuMode::NoIommu => uapi::VFIO_NOIOMMU_IOMMU,
            IommuMode::Type1 => {
                let has = |t: u32| {
                    // SAFETY: CHECK_EXTENSION takes an integer.
                    unsafe { uapi::ioctl::<{ uapi::CHECK_EXTENSION }>(&fd, t as usize as _, "VFIO_CHECK_EXTENSION") }
                        .is_ok_and(|r| r > 0)
                };
                if has(uapi::VFIO_TYPE1v2_IOMMU) {
                    uapi::VFIO_TYPE1v2_IOMMU
                } else if has(uapi::VFIO_TYPE1_IOMMU) {
                    uapi::VFIO_TYPE1_IOMMU
                } else {
                    return Err(unavailable(
                        addr,
                        "the VFIO container offers no type1 IOMMU (vfio_iommu_type1 not loaded?)",
                    ));
                }
            }
        };
        let gname = match mode {
            IommuMode::Type1 => group.to_string(),
            IommuMode::NoIommu => format!("noiommu-{group}"),
        };
        let gpath = paths.dev_vfio.join(gname);
        let gfd = open_file(&gpath, "open VFIO group")?;
        let mut st = uapi::vfio_group_status { argsz: argsz::<uapi::vfio_group_status>(), flags: 0 };
        // SAFETY: GROUP_GET_STATUS takes a pointer to a vfio_group_status with argsz set.
        unsafe { uapi::ioctl::<{ uapi::GROUP_GET_STATUS }>(&gfd, (&raw mut st).cast(), "VFIO_GROUP_GET_STATUS") }
            .with_context(|| gpath.display().to_string())?;
        if st.flags & uapi::VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(unavailable(
                addr,
                "IOMMU group is not viable: bind every device of the group to vfio-pci (or unbind it)",
            ))
            .with_context(|| gpath.display().to_string());
        }
        let mut cfd = fd.as_raw_fd();
        // SAFETY: GROUP_SET_CONTAINER takes a pointer to the container fd (an int).
        unsafe {
            uapi::ioctl::<{ uapi::GROUP_SET_CONTAINER }>(&gfd, (&raw mut cfd).cast(), "VFIO_GROUP_SET_CONTAINER")
        }
        .with_context(|| gpath.display().to_string())?;
        // SAFETY: SET_IOMMU takes an integer.
        unsafe { uapi::ioctl::<{ uapi::SET_IOMMU }>(&fd, iommu_type as usize as _, "VFIO_SET_IOMMU") }
            .with_context(|| cpath.display().to_string())?;
        Ok(Self { fd, group: gfd, group_number: group, mode })
    }

    /// Map `size` bytes of host memory at `vaddr` to `iova` for device reads and writes.
    ///
    /// # Safety
    /// `[vaddr, vaddr + size)` must stay allocated (and not be reused) until it is unmapped:
    /// the device may write it at any time. [`crate::dma::DmaMapping`] is the safe owner.
    pub(crate) unsafe fn map_dma(&self, vaddr: usize, iova: u64, size: u64) -> Result<()> {
        if self.mode != IommuMode::Type1 {
            return Err(Error::Unsupported { what: "IOMMU mapping in no-IOMMU mode", value: iova });
        }
        let mut m = uapi::vfio_iommu_type1_dma_map {
            argsz: argsz::<uapi::vfio_iommu_type1_dma_map>(),
            flags: uapi::VFIO_DMA_MAP_FLAG_READ | uapi::VFIO_DMA_MAP_FLAG_WRITE,
            vaddr: vaddr as u64,
            iova,
            size,
        };
        // SAFETY: MAP_DMA takes a pointer to a vfio_iommu_type1_dma_map; the memory contract is
        // this function's.
        unsafe { uapi::ioctl::<{ uapi::IOMMU_MAP_DMA }>(&self.fd, (&raw mut m).cast(), "VFIO_IOMMU_MAP_DMA") }
            .map(|_| ())
    }

    /// Remove the mapping at `iova` of `size` bytes.
    pub(crate) fn unmap_dma(&self, iova: u64, size: u64) -> Result<()> {
        let mut u = uapi::vfio_iommu_type1_dma_unmap {
            argsz: argsz::<uapi::vfio_iommu_type1_dma_unmap>(),
            flags: 0,
            iova,
            size,
            data: Default::default(),
        };
        // SAFETY: UNMAP_DMA takes a pointer to a vfio_iommu_type1_dma_unmap with argsz set.
        unsafe { uapi::ioctl::<{ uapi::IOMMU_UNMAP_DMA }>(&self.fd, (&raw mut u).cast(), "VFIO_IOMMU_UNMAP_DMA") }?;
        if u.size != size {
            return Err(Error::Mismatch { what: "VFIO_IOMMU_UNMAP_DMA unmapped size", expected: size, found: u.size });
        }
        Ok(())
    }
}

/// What `VFIO_DEVICE_GET_REGION_INFO` says about one region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// Region index (BARs 0..=5, ROM 6, config 7).
    pub index: u32,
    /// Size in bytes (0 for an unimplemented BAR).
    pub size: u64,
    /// Offset of the region in the device fd (for `mmap`, `pread`, `pwrite`).
    pub offset: u64,
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
}

impl RegionInfo {
    /// The region may be mmapped.
    pub fn mappable(&self) -> bool {
        self.flags & uapi::VFIO_REGION_INFO_FLAG_MMAP != 0
    }
}

/// Which interrupt a VFIO irq index is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqKind {
    /// Legacy INTx (level triggered: VFIO masks it on each interrupt; unmask to get the next).
    Intx,
    /// MSI.
    Msi,
    /// MSI-X.
    MsiX,
}

impl IrqKind {
    fn index(self) -> u32 {
        match self {
            IrqKind::Intx => uapi::VFIO_PCI_INTX_IRQ_INDEX,
            IrqKind::Msi => uapi::VFIO_PCI_MSI_IRQ_INDEX,
            IrqKind::MsiX => uapi::VFIO_PCI_MSIX_IRQ_INDEX,
        }
    }
}

/// A PCI device opened through VFIO.
#[derive(Debug)]
pub struct VfioDevice {
    fd: OwnedFd,
    address: PciAddress,
    flags: u32,
    num_regions: u32,
    num_irqs: u32,
    container: Arc<Container>,
}

impl VfioDevice {
    /// Open the device at `addr` through a type1 IOMMU container.
    ///
    /// Errors ([`Error::DeviceUnavailable`] naming the device, with a path as context where one
    /// is involved): the device is not bound to `vfio-pci`; it has no IOMMU group; `/dev/vfio`
    /// is missing; the group is not viable; or an ioctl fails ([`Error::Os`]).
    pub fn open(paths: &VfioPaths, addr: PciAddress) -> Result<Self> {
        Self::open_mode(paths, addr, IommuMode::Type1)
    }

    /// Open the device at `addr` in VFIO's no-IOMMU mode.
    ///
    /// # Safety
    /// The device can then DMA to any physical address: the caller must program it only with
    /// addresses of memory it owns and keeps alive and locked while the device may use it (see
    /// the module docs). Needs `CONFIG_VFIO_NOIOMMU` and `enable_unsafe_noiommu_mode=1`.
    pub unsafe fn open_noiommu(paths: &VfioPaths, addr: PciAddress) -> Result<Self> {
        Self::open_mode(paths, addr, IommuMode::NoIommu)
    }

    fn open_mode(paths: &VfioPaths, addr: PciAddress, mode: IommuMode) -> Result<Self> {
        let ctx = || format!("VFIO open {addr}");
        let pci = paths.sysfs.device(addr).with_context(ctx)?;
        if !pci.is_vfio_bound() {
            return Err(unavailable(
                addr,
                "not bound to vfio-pci (bind it first: Sysfs::bind_vfio_pci, or driver_override + drivers_probe)",
            ))
            .with_context(|| match &pci.driver {
                Some(d) => format!("{}: bound to {d}", ctx()),
                None => format!("{}: bound to no driver", ctx()),
            });
        }
        let group = pci
            .iommu_group
            .ok_or(unavailable(addr, "no IOMMU group: enable the IOMMU (intel_iommu=on) or use the no-IOMMU opt-in"))
            .with_context(ctx)?;
        let container = Arc::new(Container::open(paths, addr, group, mode).with_context(ctx)?);
        let name = std::ffi::CString::new(addr.to_string()).map_err(|_| unavailable(addr, "address with NUL"))?;
        // SAFETY: GET_DEVICE_FD takes a pointer to a NUL-terminated device name.
        let raw = unsafe {
            uapi::ioctl::<{ uapi::GROUP_GET_DEVICE_FD }>(
                &container.group,
                name.as_ptr().cast_mut().cast(),
                "VFIO_GROUP_GET_DEVICE_FD",
            )
        }
        .with_context(ctx)?;
        // SAFETY: on success the ioctl returns a new file descriptor that we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut info = uapi::vfio_device_info { argsz: argsz::<uapi::vfio_device_info>(), ..Default::default() };
        // SAFETY: DEVICE_GET_INFO takes a pointer to a vfio_device_info with argsz set.
        unsafe { uapi::ioctl::<{ uapi::DEVICE_GET_INFO }>(&fd, (&raw mut info).cast(), "VFIO_DEVICE_GET_INFO") }
            .with_context(ctx)?;
        if info.flags & uapi::VFIO_DEVICE_FLAGS_PCI == 0 {
            return Err(unavailable(addr, "the VFIO device is not a PCI device"));
        }
        Ok(Self {
            fd,
            address: addr,
            flags: info.flags,
            num_regions: info.num_regions,
            num_irqs: info.num_irqs,
            container,
        })
    }

    /// The device's PCI address.
    pub fn address(&self) -> PciAddress {
        self.address
    }

    /// The container (IOMMU address space) the device DMAs through.
    pub fn container(&self) -> &Arc<Container> {
        &self.container
    }

    /// Number of regions and of irq indices the device reports.
    pub fn counts(&self) -> (u32, u32) {
        (self.num_regions, self.num_irqs)
    }

    /// True when `VFIO_DEVICE_RESET` is supported (the device has a reset method: FLR, PM, or a
    /// bus reset it can do alone).
    pub fn can_reset(&self) -> bool {
        self.flags & uapi::VFIO_DEVICE_FLAGS_RESET != 0
    }

    /// Region `index`'s info.
    pub fn region_info(&self, index: u32) -> Result<RegionInfo> {
        let mut r = uapi::vfio_region_info { argsz: argsz::<uapi::vfio_region_info>(), index, ..Default::default() };
        // SAFETY: GET_REGION_INFO takes a pointer to a vfio_region_info with argsz and index set.
        unsafe {
            uapi::ioctl::<{ uapi::DEVICE_GET_REGION_INFO }>(
                &self.fd,
                (&raw mut r).cast(),
                "VFIO_DEVICE_GET_REGION_INFO",
            )
        }?;
        Ok(RegionInfo { index, size: r.size, offset: r.offset, flags: r.flags })
    }

    /// Map BAR `index` (0..=5) into this process: an [`MmioBus`] with word-sized volatile
    /// access only.
    ///
    /// Errors: [`Error::Unsupported`] for an empty or unmappable BAR (an I/O BAR);
    /// [`Error::Os`] when `mmap` fails.
    pub fn map_bar(&self, index: u32) -> Result<Arc<BarMapping>> {
        if index > 5 {
            return Err(Error::InvalidArgument { what: "BAR index (0..=5)", value: u64::from(index) });
        }
        let info = self.region_info(index)?;
        if info.size == 0 || !info.mappable() {
            return Err(Error::Unsupported {
                what: "mmap of a BAR that is empty or not mappable",
                value: u64::from(index),
            });
        }
        let len =
            usize::try_from(info.size).map_err(|_| Error::InvalidArgument { what: "BAR size", value: info.size })?;
        // SAFETY: a fresh shared mapping of the device fd at the region's offset; the kernel
        // chooses the address, so no existing memory is replaced.
        let p = unsafe {
            rustix::mm::mmap(
                core::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                &self.fd,
                info.offset,
            )
        }
        .map_err(|e| Error::Os { what: "mmap BAR", errno: e.raw_os_error() })
        .with_context(|| format!("{} BAR{index}", self.address))?;
        let base = NonNull::new(p.cast::<u8>()).ok_or(Error::Os { what: "mmap BAR returned null", errno: 0 })?;
        // SAFETY: `[base, base + len)` is the mapping just made, page aligned, and it lives until
        // the BarMapping that owns it is dropped; nothing else references it.
        let region = unsafe { VolatileRegion::new(base, len)? };
        Ok(Arc::new(BarMapping { region, len, index }))
    }

    /// The config space as an [`MmioBus`] (reads and writes go through `pread`/`pwrite` on the
    /// config region; vfio-pci virtualises parts of it).
    pub fn config(&self) -> Result<ConfigRegion<'_>> {
        let info = self.region_info(uapi::VFIO_PCI_CONFIG_REGION_INDEX)?;
        let size = usize::try_from(info.size.min(4096)).unwrap_or(256);
        Ok(ConfigRegion { fd: self.fd.as_fd(), offset: info.offset, size })
    }

    /// Reset the device (`VFIO_DEVICE_RESET`). Config space returns to its reset state: bus
    /// mastering and MSI are off afterwards.
    ///
    /// Errors: [`Error::Unsupported`] when the device has no reset method; [`Error::Os`] when
    /// the reset fails.
    pub fn reset(&self) -> Result<()> {
        if !self.can_reset() {
            return Err(Error::Unsupported { what: "VFIO_DEVICE_RESET: the device has no reset method", value: 0 })
                .with_context(|| self.address.to_string());
        }
        // SAFETY: DEVICE_RESET takes no argument.
        unsafe { uapi::ioctl::<{ uapi::DEVICE_RESET }>(&self.fd, core::ptr::null_mut(), "VFIO_DEVICE_RESET") }
            .map(|_| ())
    }

    /// How many vectors interrupt `kind` offers (0 when the device lacks it).
    pub fn irq_count(&self, kind: IrqKind) -> Result<u32> {
        let mut i =
            uapi::vfio_irq_info { argsz: argsz::<uapi::vfio_irq_info>(), index: kind.index(), ..Default::default() };
        // SAFETY: GET_IRQ_INFO takes a pointer to a vfio_irq_info with argsz and index set.
        unsafe {
            uapi::ioctl::<{ uapi::DEVICE_GET_IRQ_INFO }>(&self.fd, (&raw mut i).cast(), "VFIO_DEVICE_GET_IRQ_INFO")
        }?;
        Ok(if i.flags & uapi::VFIO_IRQ_INFO_EVENTFD != 0 { i.count } else { 0 })
    }

    /// Route vectors `0..fds.len()` of interrupt `kind` to the eventfds `fds` (enables MSI /
    /// MSI-X in the device's config space as a side effect).
    pub fn enable_irq(&self, kind: IrqKind, fds: &[BorrowedFd<'_>]) -> Result<()> {
        let avail = self.irq_count(kind)?;
        if fds.is_empty() || fds.len() > uapi::MAX_IRQ_FDS || fds.len() as u32 > avail {
            return Err(Error::InvalidArgument {
                what: "interrupt vector count (1..=device's count)",
                value: fds.len() as u64,
            });
        }
        let mut set = uapi::IrqSet {
            hdr: uapi::vfio_irq_set {
                // CAST: at most MAX_IRQ_FDS (32) fds, checked above.
                argsz: argsz::<uapi::vfio_irq_set>() + 4 * fds.len() as u32,
                flags: uapi::VFIO_IRQ_SET_DATA_EVENTFD | uapi::VFIO_IRQ_SET_ACTION_TRIGGER,
                index: kind.index(),
                start: 0,
                count: fds.len() as u32,
                data: Default::default(),
            },
            fds: [-1; uapi::MAX_IRQ_FDS],
        };
        for (d, s) in set.fds.iter_mut().zip(fds) {
            *d = s.as_raw_fd();
        }
        // SAFETY: SET_IRQS takes a vfio_irq_set followed by `count` eventfds; argsz covers them.
        unsafe { uapi::ioctl::<{ uapi::DEVICE_SET_IRQS }>(&self.fd, (&raw mut set).cast(), "VFIO_DEVICE_SET_IRQS") }
            .map(|_| ())
    }

    /// Tear down interrupt `kind` (all vectors).
    pub fn disable_irq(&self, kind: IrqKind) -> Result<()> {
        self.set_irqs_none(kind, uapi::VFIO_IRQ_SET_ACTION_TRIGGER, 0)
    }

    /// Unmask INTx after handling an interrupt (VFIO masks the level-triggered line on each
    /// interrupt).
    pub fn unmask_intx(&self) -> Result<()> {
        self.set_irqs_none(IrqKind::Intx, uapi::VFIO_IRQ_SET_ACTION_UNMASK, 1)
    }

    fn set_irqs_none(&self, kind: IrqKind, action: u32, count: u32) -> Result<()> {
        let mut set = uapi::vfio_irq_set {
            argsz: argsz::<uapi::vfio_irq_set>(),
            flags: uapi::VFIO_IRQ_SET_DATA_NONE | action,
            index: kind.index(),
            start: 0,
            count,
            data: Default::default(),
        };
        // SAFETY: SET_IRQS with DATA_NONE takes just the header.
        unsafe { uapi::ioctl::<{ uapi::DEVICE_SET_IRQS }>(&self.fd, (&raw mut set).cast(), "VFIO_DEVICE_SET_IRQS") }
            .map(|_| ())
    }

    /// Turn on memory decoding and bus mastering (vfio-pci leaves bus mastering off; without it
    /// the device's DMA and MSI writes go nowhere).
    pub fn enable_bus_master(&self) -> Result<config::COMMAND> {
        config::enable_bus_master(&self.config()?)
    }
}

/// The config region of a [`VfioDevice`] as an [`MmioBus`] (`pread`/`pwrite` on the device fd).
#[derive(Debug)]
pub struct ConfigRegion<'a> {
    fd: BorrowedFd<'a>,
    offset: u64,
    size: usize,
}

impl ConfigRegion<'_> {
    fn check(&self, offset: usize, width: Width) -> Result<u64> {
        hcq::mmio::check_range("pci config access", offset, width.bytes(), self.size)?;
        Ok(self.offset + offset as u64)
    }
}

impl MmioBus for ConfigRegion<'_> {
    fn size(&self) -> usize {
        self.size
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        let at = self.check(offset, width)?;
        let mut b = [0u8; 8];
        let n = rustix::io::pread(self.fd, &mut b[..width.bytes()], at)
            .map_err(|e| Error::Os { what: "pread pci config", errno: e.raw_os_error() })?;
        if n != width.bytes() {
            return Err(Error::Mismatch {
                what: "pread pci config length",
                expected: width.bytes() as u64,
                found: n as u64,
            });
        }
        Ok(u64::from_le_bytes(b))
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        let at = self.check(offset, width)?;
        let b = value.to_le_bytes();
        let n = rustix::io::pwrite(self.fd, &b[..width.bytes()], at)
            .map_err(|e| Error::Os { what: "pwrite pci config", errno: e.raw_os_error() })?;
        if n != width.bytes() {
            return Err(Error::Mismatch {
                what: "pwrite pci config length",
                expected: width.bytes() as u64,
                found: n as u64,
            });
        }
        Ok(())
    }
}

/// A BAR mapped into this process: the core's [`MmioBus`] over a [`VolatileRegion`], restricted
/// to word-sized volatile accesses.
///
/// Bulk copies ([`MmioBus::write_bytes`]/[`MmioBus::read_bytes`]) go 32-bit word by word —
/// never `memcpy`, whose wide or unaligned accesses can fault on device memory (Arm) or be
/// split in ways the device does not accept — and need 4-byte aligned offsets and lengths.
/// Before a doorbell write that must follow earlier writes, call
/// [`crate::barrier::device_write_barrier`] (or use [`BarMapping::doorbell`]).
#[derive(Debug)]
pub struct BarMapping {
    region: VolatileRegion,
    len: usize,
    index: u32,
}

impl BarMapping {
    /// `len` bytes of anonymous shared host memory (rounded up to pages) behind the same type
    /// and code path as a BAR: for tests and benchmarks without a device. Its index is
    /// `u32::MAX`.
    pub fn host_memory(len: usize) -> Result<Arc<Self>> {
        let len = len.max(1).next_multiple_of(rustix::param::page_size());
        // SAFETY: a fresh shared anonymous mapping at a kernel-chosen address replaces nothing.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED | rustix::mm::MapFlags::POPULATE,
            )
        }
        .map_err(|e| Error::Os { what: "mmap anonymous", errno: e.raw_os_error() })?;
        let base = NonNull::new(p.cast::<u8>()).ok_or(Error::Os { what: "mmap returned null", errno: 0 })?;
        // SAFETY: the mapping just made: `len` bytes, page aligned, owned by the BarMapping
        // (unmapped on drop), no Rust reference to it.
        let region = unsafe { VolatileRegion::new(base, len)? };
        Ok(Arc::new(Self { region, len, index: u32::MAX }))
    }

    /// The BAR index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The mapping's start address (for benchmarks that compare against a raw pointer).
    pub fn base(&self) -> NonNull<u8> {
        self.region.base()
    }

    /// Make every earlier write to device and DMA memory visible to the device, then write
    /// `value` at `offset` (a doorbell).
    #[inline]
    pub fn doorbell(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        crate::barrier::device_write_barrier();
        self.region.write(offset, width, value)
    }
}

fn check_words(what: &'static str, offset: usize, len: usize) -> Result<()> {
    if !offset.is_multiple_of(4) || !len.is_multiple_of(4) {
        return Err(Error::Misaligned { what, value: (offset | len) as u64, align: 4 });
    }
    Ok(())
}

impl MmioBus for BarMapping {
    #[inline]
    fn size(&self) -> usize {
        self.len
    }
    #[inline]
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.region.read(offset, width)
    }
    #[inline]
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.region.write(offset, width, value)
    }
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        hcq::mmio::check_range("BAR write_bytes", offset, src.len(), self.len)?;
        check_words("BAR write_bytes (32-bit words only)", offset, src.len())?;
        hcq::mmio::write_bytes_by_words(&self.region, "BAR write_bytes", offset, src)
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        hcq::mmio::check_range("BAR read_bytes", offset, dst.len(), self.len)?;
        check_words("BAR read_bytes (32-bit words only)", offset, dst.len())?;
        for (i, w) in dst.chunks_exact_mut(4).enumerate() {
            // CAST: a 32-bit read.
            let v = self.region.read(offset + 4 * i, Width::U32)? as u32;
            w.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    }
}

impl Drop for BarMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `map_bar` with this length and is unmapped once; the
        // BarMapping is being dropped, so no access through it can follow.
        if let Err(e) = unsafe { rustix::mm::munmap(self.region.base().as_ptr().cast(), self.len) } {
            log::error!("munmap of BAR{} failed: {e}", self.index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysfs::tests::{TempDir, fake_sysfs};

    fn paths(t: &TempDir) -> VfioPaths {
        VfioPaths { sysfs: Sysfs::new(&t.0), dev_vfio: t.0.join("dev/vfio") }
    }

    #[test]
    fn bar_bulk_access_is_word_by_word_and_aligned() {
        let bar = BarMapping::host_memory(64).unwrap();
        bar.write_bytes(8, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(bar.read(8, Width::U64).unwrap(), 0x0807_0605_0403_0201);
        let mut out = [0u8; 4];
        bar.read_bytes(12, &mut out).unwrap();
        assert_eq!(out, [5, 6, 7, 8]);
        assert!(matches!(bar.write_bytes(2, &[0; 4]), Err(Error::Misaligned { .. })), "unaligned offset");
        assert!(matches!(bar.read_bytes(0, &mut [0; 3]), Err(Error::Misaligned { .. })), "partial word");
        assert!(matches!(bar.write_bytes(bar.size() - 4, &[0; 8]), Err(Error::OutOfBounds { .. })));
        bar.doorbell(0, Width::U32, 0xabcd).unwrap();
        assert_eq!(bar.read(0, Width::U32).unwrap(), 0xabcd);
    }

    #[test]
    fn a_device_not_bound_to_vfio_pci_is_a_clear_error() {
        let t = fake_sysfs();
        let e = VfioDevice::open(&paths(&t), PciAddress::parse("0000:00:02.0").unwrap()).unwrap_err();
        assert!(
            matches!(e.root(), Error::DeviceUnavailable { reason, .. } if reason.starts_with("not bound to vfio-pci"))
        );
        let s = e.to_string();
        assert!(s.contains("0000:00:02.0") && s.contains("bound to e1000e"), "{s}");
    }

    #[test]
    fn a_device_without_an_iommu_group_is_a_clear_error() {
        let t = fake_sysfs();
        let a = PciAddress::parse("0000:01:00.0").unwrap();
        std::os::unix::fs::symlink(
            t.0.join("bus/pci/drivers/vfio-pci"),
            t.0.join("bus/pci/devices/0000:01:00.0/driver"),
        )
        .unwrap();
        let e = VfioDevice::open(&paths(&t), a).unwrap_err();
        assert!(
            matches!(e.root(), Error::DeviceUnavailable { reason, .. } if reason.starts_with("no IOMMU group")),
            "{e}"
        );
    }

    #[test]
    fn a_missing_dev_vfio_is_a_clear_error() {
        let t = fake_sysfs();
        let e = VfioDevice::open(&paths(&t), PciAddress::parse("0000:00:03.0").unwrap()).unwrap_err();
        assert!(
            matches!(e.root(), Error::DeviceUnavailable { reason, .. } if reason.starts_with("/dev/vfio is missing")),
            "{e}"
        );
        assert!(e.to_string().contains("dev/vfio"), "{e}");
    }

    #[test]
    fn a_missing_container_node_names_the_file() {
        let t = fake_sysfs();
        std::fs::create_dir_all(t.0.join("dev/vfio")).unwrap();
        let e = VfioDevice::open(&paths(&t), PciAddress::parse("0000:00:03.0").unwrap()).unwrap_err();
        assert!(matches!(e.root(), Error::Os { what: "open VFIO container", .. }), "{e}");
        assert!(e.to_string().contains("dev/vfio/vfio"), "{e}");
    }
}
