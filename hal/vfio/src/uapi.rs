//! The VFIO uapi (`include/uapi/linux/vfio.h`): structs from the `vfio-bindings` crate, ioctl
//! numbers, and the one `ioctl` wrapper the rest of the crate calls.
//!
//! Every VFIO ioctl is `_IO(VFIO_TYPE, VFIO_BASE + n)` with `VFIO_TYPE = ';'` and
//! `VFIO_BASE = 100`: the argument size is not encoded in the number, the kernel reads `argsz`
//! from the struct instead (vfio.h, "IOCTL interface" comment).

use hcq::error::{Error, Result};
use rustix::fd::AsFd;
use rustix::ioctl::{Ioctl, IoctlOutput, Opcode, opcode};

pub use vfio_bindings::bindings::vfio::{
    VFIO_API_VERSION, VFIO_DEVICE_FLAGS_PCI, VFIO_DEVICE_FLAGS_RESET, VFIO_DMA_MAP_FLAG_READ, VFIO_DMA_MAP_FLAG_WRITE,
    VFIO_GROUP_FLAGS_VIABLE, VFIO_IRQ_INFO_EVENTFD, VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_ACTION_UNMASK,
    VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE, VFIO_NOIOMMU_IOMMU, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_INTX_IRQ_INDEX, VFIO_PCI_MSI_IRQ_INDEX, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_REGION_INFO_FLAG_MMAP,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE, VFIO_TYPE, VFIO_TYPE1_IOMMU, VFIO_TYPE1v2_IOMMU,
    vfio_device_info, vfio_group_status, vfio_iommu_type1_dma_map, vfio_iommu_type1_dma_unmap, vfio_irq_info,
    vfio_irq_set, vfio_region_info,
};

/// `VFIO_BASE` in vfio.h.
const VFIO_BASE: u8 = 100;

const fn op(n: u8) -> Opcode {
    opcode::none(VFIO_TYPE, VFIO_BASE + n)
}

/// `VFIO_GET_API_VERSION` (container).
pub const GET_API_VERSION: Opcode = op(0);
/// `VFIO_CHECK_EXTENSION` (container, integer argument).
pub const CHECK_EXTENSION: Opcode = op(1);
/// `VFIO_SET_IOMMU` (container, integer argument).
pub const SET_IOMMU: Opcode = op(2);
/// `VFIO_GROUP_GET_STATUS` (group, `vfio_group_status`).
pub const GROUP_GET_STATUS: Opcode = op(3);
/// `VFIO_GROUP_SET_CONTAINER` (group, pointer to the container fd).
pub const GROUP_SET_CONTAINER: Opcode = op(4);
/// `VFIO_GROUP_GET_DEVICE_FD` (group, NUL-terminated device name; returns an fd).
pub const GROUP_GET_DEVICE_FD: Opcode = op(6);
/// `VFIO_DEVICE_GET_INFO` (device, `vfio_device_info`).
pub const DEVICE_GET_INFO: Opcode = op(7);
/// `VFIO_DEVICE_GET_REGION_INFO` (device, `vfio_region_info`).
pub const DEVICE_GET_REGION_INFO: Opcode = op(8);
/// `VFIO_DEVICE_GET_IRQ_INFO` (device, `vfio_irq_info`).
pub const DEVICE_GET_IRQ_INFO: Opcode = op(9);
/// `VFIO_DEVICE_SET_IRQS` (device, `vfio_irq_set` + data).
pub const DEVICE_SET_IRQS: Opcode = op(10);
/// `VFIO_DEVICE_RESET` (device, no argument).
pub const DEVICE_RESET: Opcode = op(11);
/// `VFIO_IOMMU_MAP_DMA` (container, `vfio_iommu_type1_dma_map`).
pub const IOMMU_MAP_DMA: Opcode = op(13);
/// `VFIO_IOMMU_UNMAP_DMA` (container, `vfio_iommu_type1_dma_unmap`).
pub const IOMMU_UNMAP_DMA: Opcode = op(14);

// Layouts the kernel expects (vfio.h); vfio-bindings asserts them too, these keep them visible
// here where the structs are used.
const _: () = {
    assert!(size_of::<vfio_group_status>() == 8);
    assert!(size_of::<vfio_device_info>() == 24);
    assert!(size_of::<vfio_region_info>() == 32);
    assert!(core::mem::offset_of!(vfio_region_info, offset) == 24);
    assert!(size_of::<vfio_irq_info>() == 16);
    assert!(size_of::<vfio_irq_set>() == 20);
    assert!(size_of::<vfio_iommu_type1_dma_map>() == 32);
    assert!(core::mem::offset_of!(vfio_iommu_type1_dma_map, iova) == 16);
    assert!(size_of::<vfio_iommu_type1_dma_unmap>() == 24);
    assert!(size_of::<IrqSet>() == 20 + 4 * MAX_IRQ_FDS);
    assert!(core::mem::offset_of!(IrqSet, fds) == 20);
};

/// Most eventfds one [`IrqSet`] carries.
pub const MAX_IRQ_FDS: usize = 32;

/// `vfio_irq_set` followed by up to [`MAX_IRQ_FDS`] eventfds (the flexible `data` member);
/// `argsz` covers only the fds in use.
#[repr(C)]
#[derive(Debug)]
pub struct IrqSet {
    /// The header.
    pub hdr: vfio_irq_set,
    /// Eventfds, `hdr.count` of them in use.
    pub fds: [i32; MAX_IRQ_FDS],
}

/// An ioctl whose argument is a pointer or an integer and whose return value is wanted.
struct Raw<const OP: Opcode> {
    arg: *mut core::ffi::c_void,
}

// SAFETY: `ioctl` below is `unsafe` and its callers promise that `arg` is what opcode `OP`
// expects; this impl passes it through unchanged and returns the syscall's result.
unsafe impl<const OP: Opcode> Ioctl for Raw<OP> {
    type Output = IoctlOutput;
    const IS_MUTATING: bool = true;
    fn opcode(&self) -> Opcode {
        OP
    }
    fn as_ptr(&mut self) -> *mut core::ffi::c_void {
        self.arg
    }
    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut core::ffi::c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// Issue VFIO ioctl `OP` on `fd` with argument `arg` (a pointer cast to `*mut c_void`, or an
/// integer cast the same way); returns the syscall's non-negative result or [`Error::Os`]
/// named `what`.
///
/// # Safety
/// `arg` must be what the kernel expects for `OP` (vfio.h): a pointer to a live, writable,
/// correctly laid out struct whose `argsz` is its real size, or an integer.
pub unsafe fn ioctl<const OP: Opcode>(fd: impl AsFd, arg: *mut core::ffi::c_void, what: &'static str) -> Result<i32> {
    // SAFETY: forwarded from this function's contract.
    unsafe { rustix::ioctl::ioctl(fd, Raw::<OP> { arg }) }.map_err(|e| Error::Os { what, errno: e.raw_os_error() })
}

/// `argsz` for a struct of type `T`.
pub const fn argsz<T>() -> u32 {
    // CAST: every vfio struct is a few dozen bytes.
    size_of::<T>() as u32
}
