//! The real KFD: `/dev/kfd` and the DRM render node through `ioctl` and `mmap` (libc), sysfs
//! through `std::fs`.

use super::uapi::*;
use super::{Kfd, Mapping};
use alloc::string::String;
use alloc::vec::Vec;
use core::ptr::NonNull;
use hcq::error::ResultExt;
use hcq::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;
use zerocopy::IntoBytes;

/// `/dev/kfd` (and, once opened, the GPU's render node).
#[derive(Debug)]
pub struct LinuxKfd {
    kfd: File,
    render: OnceLock<File>,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn io_error(what: &'static str, e: &std::io::Error) -> Error {
    Error::Os { what, errno: e.raw_os_error().unwrap_or(0) }
}

impl LinuxKfd {
    /// Open [`super::KFD_NODE`] read-write.
    pub fn open() -> Result<LinuxKfd> {
        Self::open_path(super::KFD_NODE)
    }

    /// Open the KFD node at `path` read-write.
    ///
    /// Errors: the open's errno, naming the path.
    pub fn open_path(path: &str) -> Result<LinuxKfd> {
        let kfd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_error("open the KFD node", &e))
            .with_context(|| alloc::format!("open {path}"))?;
        Ok(LinuxKfd { kfd, render: OnceLock::new() })
    }

    fn call<T: IntoBytes>(&self, what: &'static str, fd: &File, request: u32, arg: &mut T) -> Result<()> {
        if (request >> 16 & 0x3fff) as usize != size_of::<T>() {
            return Err(Error::Mismatch {
                what: "KFD ioctl request size vs its argument",
                expected: size_of::<T>() as u64,
                found: u64::from(request >> 16 & 0x3fff),
            });
        }
        // CAST (`request as _`): the request number, as the libc ioctl type of this target.
        // SAFETY: `arg` is a live, exclusively borrowed `#[repr(C)]` struct of the size the
        // request encodes (checked above); the kernel reads and writes only it and the user
        // pointers the caller put in it, which point at live buffers for the call.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, (arg as *mut T).cast::<libc::c_void>()) };
        if r < 0 { Err(Error::Os { what, errno: errno() }) } else { Ok(()) }
    }

    fn kfd_call<T: IntoBytes>(&self, what: &'static str, request: u32, arg: &mut T) -> Result<()> {
        self.call(what, &self.kfd, request, arg)
    }

    fn render(&self) -> Result<&File> {
        self.render
            .get()
            .ok_or(Error::InvalidArgument { what: "KFD: the render node is not open (open_render first)", value: 0 })
    }

    fn mmap(
        what: &'static str,
        addr: *mut libc::c_void,
        len: usize,
        prot: i32,
        flags: i32,
        fd: i32,
        off: u64,
    ) -> Result<Mapping> {
        let off = libc::off_t::try_from(off)
            .map_err(|_| Error::InvalidArgument { what: "mmap offset beyond off_t", value: off })?;
        // SAFETY: a new mapping; with MAP_FIXED the caller passes a range this backend reserved
        // (a Mapping it owns and gives up), so no other object is replaced.
        let p = unsafe { libc::mmap(addr, len, prot, flags, fd, off) };
        if p == libc::MAP_FAILED {
            return Err(Error::Os { what, errno: errno() });
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Error::Os { what, errno: libc::ENOMEM })?;
        // SAFETY: the range was just mapped and is given to the caller until `munmap`.
        Ok(unsafe { Mapping::new(ptr, len) })
    }
}

impl Kfd for LinuxKfd {
    fn get_version(&self) -> Result<GetVersionArgs> {
        let mut a = GetVersionArgs::default();
        self.kfd_call("KFD AMDKFD_IOC_GET_VERSION", IOC_GET_VERSION, &mut a)?;
        Ok(a)
    }
    fn open_render(&self, minor: u32) -> Result<()> {
        let path = alloc::format!("/dev/dri/renderD{minor}");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("open the DRM render node", &e))
            .with_context(|| alloc::format!("open {path}"))?;
        // a second open of the same backend keeps the first node
        let _ = self.render.set(f);
        Ok(())
    }
    fn acquire_vm(&self, args: &mut AcquireVmArgs) -> Result<()> {
        let fd = self.render()?.as_raw_fd();
        args.drm_fd = u32::try_from(fd).map_err(|_| Error::InvalidArgument { what: "render node fd", value: 0 })?;
        self.kfd_call("KFD AMDKFD_IOC_ACQUIRE_VM", IOC_ACQUIRE_VM, args)
    }
    fn runtime_enable(&self, args: &mut RuntimeEnableArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_RUNTIME_ENABLE", IOC_RUNTIME_ENABLE, args)
    }
    fn alloc_memory_of_gpu(&self, args: &mut AllocMemoryOfGpuArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", IOC_ALLOC_MEMORY_OF_GPU, args)
    }
    fn free_memory_of_gpu(&self, args: &FreeMemoryOfGpuArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_FREE_MEMORY_OF_GPU", IOC_FREE_MEMORY_OF_GPU, &mut args.clone())
    }
    fn map_memory_to_gpu(&self, args: &mut MapMemoryToGpuArgs, gpus: &[u32]) -> Result<()> {
        args.device_ids_array_ptr = gpus.as_ptr() as u64;
        args.n_devices = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
        self.kfd_call("KFD AMDKFD_IOC_MAP_MEMORY_TO_GPU", IOC_MAP_MEMORY_TO_GPU, args)
    }
    fn unmap_memory_from_gpu(&self, args: &mut UnmapMemoryFromGpuArgs, gpus: &[u32]) -> Result<()> {
        args.device_ids_array_ptr = gpus.as_ptr() as u64;
        args.n_devices = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
        self.kfd_call("KFD AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU", IOC_UNMAP_MEMORY_FROM_GPU, args)
    }
    fn create_event(&self, args: &mut CreateEventArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_CREATE_EVENT", IOC_CREATE_EVENT, args)
    }
    fn destroy_event(&self, args: &DestroyEventArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_DESTROY_EVENT", IOC_DESTROY_EVENT, &mut args.clone())
    }
    fn set_event(&self, args: &SetEventArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_SET_EVENT", IOC_SET_EVENT, &mut args.clone())
    }
    fn reset_event(&self, args: &ResetEventArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_RESET_EVENT", IOC_RESET_EVENT, &mut args.clone())
    }
    fn wait_events(&self, args: &mut WaitEventsArgs, events: &mut [EventData]) -> Result<()> {
        args.events_ptr = events.as_mut_ptr() as u64;
        args.num_events = u32::try_from(events.len()).unwrap_or(u32::MAX);
        self.kfd_call("KFD AMDKFD_IOC_WAIT_EVENTS", IOC_WAIT_EVENTS, args)
    }
    fn create_queue(&self, args: &mut CreateQueueArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_CREATE_QUEUE", IOC_CREATE_QUEUE, args)
    }
    fn destroy_queue(&self, args: &DestroyQueueArgs) -> Result<()> {
        self.kfd_call("KFD AMDKFD_IOC_DESTROY_QUEUE", IOC_DESTROY_QUEUE, &mut args.clone())
    }
    fn mmap_kfd(&self, offset: u64, len: usize) -> Result<Mapping> {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        Self::mmap("mmap /dev/kfd", core::ptr::null_mut(), len, rw, libc::MAP_SHARED, self.kfd.as_raw_fd(), offset)
    }
    fn map_anonymous(&self, len: usize, access: bool) -> Result<Mapping> {
        let (prot, flags) = if access {
            (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_ANONYMOUS)
        } else {
            (libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE)
        };
        Self::mmap("mmap anonymous", core::ptr::null_mut(), len, prot, flags, -1, 0)
    }
    fn mmap_render(&self, at: Mapping, offset: u64) -> Result<Mapping> {
        let fd = self.render()?.as_raw_fd();
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let m = Self::mmap(
            "mmap the DRM render node",
            at.ptr().as_ptr().cast(),
            at.len(),
            rw,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd,
            offset,
        )?;
        // the fixed map replaced the reservation `at` (the same range, now `m`)
        Ok(m)
    }
    fn munmap(&self, m: Mapping) -> Result<()> {
        // SAFETY: `m` is a range this backend mapped (Mapping's contract), given up here.
        let r = unsafe { libc::munmap(m.ptr().as_ptr().cast(), m.len()) };
        if r < 0 { Err(Error::Os { what: "munmap", errno: errno() }) } else { Ok(()) }
    }
    fn read_text(&self, path: &str) -> Result<String> {
        std::fs::read_to_string(path)
            .map_err(|e| io_error("read a sysfs file", &e))
            .with_context(|| alloc::format!("read {path}"))
    }
    fn list_dir(&self, path: &str) -> Result<Vec<String>> {
        let rd = std::fs::read_dir(path)
            .map_err(|e| io_error("list a sysfs directory", &e))
            .with_context(|| alloc::format!("list {path}"))?;
        let mut out = Vec::new();
        for e in rd {
            let e =
                e.map_err(|e| io_error("list a sysfs directory", &e)).with_context(|| alloc::format!("list {path}"))?;
            out.push(e.file_name().to_string_lossy().into_owned());
        }
        Ok(out)
    }
}
