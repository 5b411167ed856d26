//! One open MSM DRM render node (`/dev/dri/renderD128`, or `$HCQ_VKGSL_RENDER_NODE`): the DRM
//! ioctls the mainline driver answers, decoded as `drm_ioctl` decodes them, on a [`SimMsm`]
//! (the same simulated GPU as the KGSL node) whose objects live in the descriptor's memfd
//! ([`crate::memfd`]): a GEM object's mmap offset (`GEM_INFO(GET_OFFSET)`) is its memfd
//! offset, so the client's own `mmap` maps it, and its IOVA is where the device maps it.
//!
//! Argument handling follows `drm_ioctl` (`drivers/gpu/drm/drm_ioctl.c`): the request's number
//! selects the handler (one it has no entry for is `-EINVAL`, and so is any request not of DRM's
//! type `'d'`, which `drm_ioctl` would route by its number alone); the user's size is copied in when
//! both the request and the handler's own number have the in direction (zero-filled up to the
//! kernel's struct), and copied back when both have the out direction, whatever the handler
//! returned. `DRM_IOCTL_VERSION` answers `msm`, as the driver does.

use crate::memfd::{MemfdBacking, ObjTable};
use crate::user::{copy_in, copy_out};
use hcq_qcom::msm::ioctl::MsmIoctl;
use hcq_qcom::msm::uapi::*;
use hcq_sim_adreno::SimMsm;
use rustix::io::Errno;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// The render node this library answers for unless `$HCQ_VKGSL_RENDER_NODE` names another.
pub const DEFAULT_RENDER_NODE: &str = "/dev/dri/renderD128";
/// The environment variable naming the render node path.
pub const RENDER_NODE_ENV: &str = "HCQ_VKGSL_RENDER_NODE";
/// The driver's description and date (`msm_drv.c`).
const DESC: &str = "MSM Snapdragon DRM";
const DATE: &str = "20130625";
/// `GEM_SUBMIT` buffers and commands at most (the kernel bounds them by memory; this keeps a
/// garbage count from allocating gigabytes).
const MAX_SUBMIT_ENTRIES: u32 = 1 << 16;

const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// Said once per process for each unimplemented request (stderr).
static UNKNOWN_SAID: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// One open render node.
pub struct VMsm {
    sim: SimMsm,
    fault_said: AtomicBool,
}

impl core::fmt::Debug for VMsm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VMsm").finish_non_exhaustive()
    }
}

fn last_errno() -> Errno {
    Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

impl VMsm {
    /// The node behind `fd`, a memfd the client holds (and maps objects from).
    pub fn new(fd: BorrowedFd<'_>) -> Result<VMsm, Errno> {
        // The device keeps its own descriptor of the file (see `VDev::with_capture`).
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor we borrow; it returns a new one.
        let own = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if own < 0 {
            return Err(last_errno());
        }
        // SAFETY: `own` is a fresh descriptor nobody else owns.
        let own = unsafe { OwnedFd::from_raw_fd(own) };
        let backing = MemfdBacking::new(own, ObjTable::default());
        let sim = SimMsm::with_backing(crate::device::shader_core(), Box::new(backing));
        Ok(VMsm { sim, fault_said: AtomicBool::new(false) })
    }

    /// The simulated MSM driver behind it.
    pub fn sim(&self) -> &SimMsm {
        &self.sim
    }

    /// One ioctl: `request` with the client's argument pointer `arg`.
    pub fn ioctl(&self, request: u32, arg: u64) -> Result<(), Errno> {
        let r = self.dispatch(request, arg);
        if let Some(f) = self.sim.fault_report()
            && !self.fault_said.swap(true, Ordering::Relaxed)
        {
            eprintln!("hcq-vkgsl: GPU fault on the MSM render node, queue faulted: {f}");
        }
        r
    }

    fn dispatch(&self, req: u32, arg: u64) -> Result<(), Errno> {
        if req >> 8 & 0xff != DRM_IOCTL_TYPE {
            return unknown(req);
        }
        let s = &self.sim;
        match req & 0xff {
            0x00 => call(req, DRM_IOCTL_VERSION, arg, |a: &mut DrmVersion| self.version(a)),
            0x09 => call(req, DRM_IOCTL_GEM_CLOSE, arg, |a: &mut GemClose| s.gem_close(a)),
            0x2e => call(req, DRM_IOCTL_PRIME_FD_TO_HANDLE, arg, |a: &mut PrimeHandle| {
                // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
                if unsafe { libc::fcntl(a.fd, libc::F_GETFD) } < 0 {
                    return Err(Errno::BADF);
                }
                // SAFETY: the client's descriptor, open (checked just above) for this call,
                // whose duration the borrow does not outlive.
                let fd = unsafe { BorrowedFd::borrow_raw(a.fd) };
                s.prime_fd_to_handle(fd, a)
            }),
            0x40 => call(req, DRM_IOCTL_MSM_GET_PARAM, arg, |a: &mut Param| s.get_param(a)),
            0x42 => call(req, DRM_IOCTL_MSM_GEM_NEW, arg, |a: &mut GemNew| s.gem_new(a)),
            0x43 => call(req, DRM_IOCTL_MSM_GEM_INFO, arg, |a: &mut GemInfo| s.gem_info(a)),
            0x46 => call(req, DRM_IOCTL_MSM_GEM_SUBMIT, arg, |a: &mut GemSubmit| self.gem_submit(a)),
            0x47 => call(req, DRM_IOCTL_MSM_WAIT_FENCE, arg, |a: &mut WaitFence| s.wait_fence(a)),
            0x4a => call(req, DRM_IOCTL_MSM_SUBMITQUEUE_NEW, arg, |a: &mut Submitqueue| s.submitqueue_new(a)),
            0x4b => call(req, DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE, arg, |a: &mut u32| s.submitqueue_close(*a)),
            0x4c => call(req, DRM_IOCTL_MSM_SUBMITQUEUE_QUERY, arg, |a: &mut SubmitqueueQuery| {
                // `msm_submitqueue_query_faults`: at most the value's size, and `len` set to it.
                let mut v = [0u8; 4];
                s.submitqueue_query(a.id, a.param, &mut v)?;
                let n = (a.len as usize).min(v.len());
                a.len = v.len() as u32;
                if a.data != 0 {
                    copy_out(a.data, &v[..n])?;
                }
                Ok(())
            }),
            _ => unknown(req),
        }
    }

    /// `drm_version`: each string is copied up to the user's buffer length, and its length
    /// field set to the string's whole length (`drm_copy_field`).
    fn version(&self, a: &mut DrmVersion) -> Result<(), Errno> {
        let v = self.sim.version()?;
        (a.version_major, a.version_minor, a.version_patchlevel) = v.version;
        for (buf, len, text) in [
            (a.name, &mut a.name_len, v.name.as_str()),
            (a.date, &mut a.date_len, DATE),
            (a.desc, &mut a.desc_len, DESC),
        ] {
            let n = usize::try_from(*len).unwrap_or(usize::MAX).min(text.len());
            *len = text.len() as u64;
            if n > 0 && buf != 0 {
                copy_out(buf, &text.as_bytes()[..n])?;
            }
        }
        Ok(())
    }

    /// `msm_ioctl_gem_submit`: the buffer list and the commands are read from the client's
    /// arrays (`nr_bos` × 16 and `nr_cmds` × 32 bytes); syncobjs and fence fds are not simulated
    /// (`EOPNOTSUPP`, said on stderr).
    fn gem_submit(&self, a: &mut GemSubmit) -> Result<(), Errno> {
        if a.nr_bos > MAX_SUBMIT_ENTRIES || a.nr_cmds > MAX_SUBMIT_ENTRIES {
            return Err(Errno::INVAL);
        }
        const FENCE_FD_IN: u32 = 0x4000_0000;
        const FENCE_FD_OUT: u32 = 0x2000_0000;
        const SYNCOBJ_IN: u32 = 0x0800_0000;
        const SYNCOBJ_OUT: u32 = 0x0400_0000;
        const FENCE_SN_IN: u32 = 0x0200_0000;
        if a.flags & (FENCE_FD_IN | FENCE_FD_OUT | SYNCOBJ_IN | SYNCOBJ_OUT | FENCE_SN_IN) != 0 {
            say_once(DRM_IOCTL_MSM_GEM_SUBMIT, "GEM_SUBMIT with fence fds, syncobjs or a given fence is not simulated");
            return Err(Errno::OPNOTSUPP);
        }
        let mut bos = vec![GemSubmitBo::new_zeroed(); a.nr_bos as usize];
        copy_in(a.bos, bos.as_mut_bytes())?;
        let mut cmds = vec![GemSubmitCmd::new_zeroed(); a.nr_cmds as usize];
        copy_in(a.cmds, cmds.as_mut_bytes())?;
        self.sim.gem_submit(a, &bos, &cmds)
    }
}

/// `drm_ioctl`'s argument protocol around `f` (see the module docs).
fn call<T: FromBytes + IntoBytes + Immutable + KnownLayout>(
    req: u32,
    kernel: u32,
    arg: u64,
    f: impl FnOnce(&mut T) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let size = ((req >> 16 & 0x3fff) as usize).min(size_of::<T>());
    let (dir, kdir) = (req >> 30, kernel >> 30);
    let mut t = T::new_zeroed();
    if dir & kdir & IOC_WRITE != 0 {
        copy_in(arg, &mut t.as_mut_bytes()[..size])?;
    }
    let r = f(&mut t);
    if dir & kdir & IOC_READ != 0 {
        copy_out(arg, &t.as_bytes()[..size])?;
    }
    r
}

fn say_once(req: u32, what: &str) {
    if let Ok(mut said) = UNKNOWN_SAID.lock()
        && !said.contains(&req)
    {
        said.push(req);
        eprintln!("hcq-vkgsl: {what} (request {req:#010x})");
    }
}

/// A request the node has no handler for: `EINVAL` (`drm_ioctl`'s answer), said once.
fn unknown(req: u32) -> Result<(), Errno> {
    say_once(req, "ioctl not implemented by the virtual MSM render node, answered EINVAL");
    Err(Errno::INVAL)
}
