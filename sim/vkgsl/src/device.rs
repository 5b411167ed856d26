//! One open `/dev/kgsl-3d0`: the ioctls, decoded as the msm KGSL driver decodes them, on a
//! [`SimKgsl`] whose objects live in the descriptor's memfd ([`crate::memfd`]).
//!
//! Argument handling follows `kgsl_ioctl_helper` in the driver (`drivers/gpu/msm/kgsl_ioctl.c`):
//! the request's number selects the handler (an unknown number is `-ENOIOCTLCMD`, which the VFS
//! reports as `ENOTTY`); `kgsl_ioctl_copy_in` copies the smaller of the user's and the
//! kernel's struct size and zero-fills the rest; the struct is copied back only when the
//! handler succeeded and both directions include read.

use crate::capture::RdCapture;
use crate::maps;
use crate::memfd::{AdoptSlot, MemfdBacking, ObjTable};
use crate::user::{copy_in, copy_out};
use hcq_qcom::kgsl::ioctl::KgslIoctl;
use hcq_qcom::kgsl::uapi::*;
use hcq_sim_adreno::dispatch::{DEFAULT_MAX_STEPS, Ir3Dispatch, PageFaults};
use hcq_sim_adreno::kgsl::SimKgsl;
use rustix::io::Errno;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// `IOCTL_KGSL_SETPROPERTY` (`_IOW(0x09, 0x32, struct kgsl_device_getproperty)`).
pub const IOCTL_SETPROPERTY: u32 = ioc(1, 0x32, size_of::<DeviceGetProperty>());
/// `KGSL_PROP_MMU_ENABLE`.
pub const PROP_MMU_ENABLE: u32 = 0x6;
/// `KGSL_PROP_PWR_CONSTRAINT`.
pub const PROP_PWR_CONSTRAINT: u32 = 0x12;
/// `KGSL_PROP_UCHE_GMEM_VADDR`.
pub const PROP_UCHE_GMEM_VADDR: u32 = 0x13;
/// `KGSL_PROP_HIGHEST_BANK_BIT`.
pub const PROP_HIGHEST_BANK_BIT: u32 = 0x17;
/// `KGSL_PROP_DEVICE_BITNESS`.
pub const PROP_DEVICE_BITNESS: u32 = 0x18;
/// `KGSL_PROP_MIN_ACCESS_LENGTH`.
pub const PROP_MIN_ACCESS_LENGTH: u32 = 0x1a;
/// `KGSL_PROP_UBWC_MODE`.
pub const PROP_UBWC_MODE: u32 = 0x1b;
/// `KGSL_MEMFLAGS_USE_CPU_MAP`.
pub const MEMFLAGS_USE_CPU_MAP: u64 = 0x1000_0000;
/// `KGSL_TIMESTAMP_CONSUMED`.
pub const TIMESTAMP_CONSUMED: u32 = 1;
/// `KGSL_TIMESTAMP_QUEUED`.
pub const TIMESTAMP_QUEUED: u32 = 3;
/// `KGSL_CMDLIST_IB`, `KGSL_CMDLIST_CTXTSWITCH_PREAMBLE`, `KGSL_CMDLIST_IB_PREAMBLE`.
const CMDLIST_ANY_IB: u32 = 0x1 | 0x2 | 0x4;
/// a6xx `ADRENO_UCHE_GMEM_BASE` (`adreno.h`): where GMEM appears to the UCHE.
const UCHE_GMEM_BASE: u64 = 0x10_0000;
/// `KGSL_MAX_NUMIBS` (`kgsl_drawobj.h`).
const MAX_NUMIBS: u32 = 100_000;
const PAGE: u64 = 4096;

/// `struct kgsl_device_constraint` (`SETPROPERTY(PWR_CONSTRAINT)`).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
struct DeviceConstraint {
    ty: u32,
    context_id: u32,
    data: u64,
    size: u64,
}

const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;
fn ioc_dir(req: u32) -> u32 {
    req >> 30
}
fn ioc_size(req: u32) -> usize {
    (req >> 16 & 0x3fff) as usize
}

/// Said once per process for each unimplemented request (stderr).
static UNKNOWN_SAID: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// One `MAP_USER_MEM` import, by its GPU address.
#[derive(Debug)]
enum Import {
    /// Of a shared mapping: the device's own alias of its pages (object `id`), which the client
    /// unmapping its view does not take away, as the driver's pinned pages.
    Alias { id: u32 },
    /// Of private memory: the client's pages themselves, `len` bytes mapped as `pieces`, checked
    /// before every ioctl ([`VDev::check_imports`]).
    Checked { len: u64, pieces: Vec<maps::Piece> },
    /// A checked import whose memory the client unmapped or replaced: no longer GPU memory.
    Revoked { len: u64, why: String },
}

/// One open device.
pub struct VDev {
    sim: SimKgsl,
    objs: ObjTable,
    adopt: AdoptSlot,
    /// Held around setting `adopt` and the allocation that takes it (and every other one).
    alloc_lock: Mutex<()>,
    imports: Mutex<HashMap<u64, Import>>,
    inode: u64,
    /// Context → last timestamp `GPU_COMMAND` returned (`KGSL_TIMESTAMP_QUEUED`).
    queued: Mutex<HashMap<u32, u32>>,
    fault_said: AtomicBool,
    rd: Option<RdCapture>,
}

impl core::fmt::Debug for VDev {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VDev").field("inode", &self.inode).finish_non_exhaustive()
    }
}

fn last_errno() -> Errno {
    Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

/// Wave-instructions a dispatch may run (`HCQ_VKGSL_MAX_STEPS`, else the simulator's default).
pub(crate) fn max_steps() -> u64 {
    std::env::var("HCQ_VKGSL_MAX_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_MAX_STEPS)
}

/// `HCQ_VKGSL_SHADER=off`: a shader core that runs nothing. The command processor still decodes
/// and executes every packet (waits, signals, timestamps, state), so a client's host cost per
/// call can be measured without the interpreter's time; what the kernels would write is not
/// written. Any other value (or none) is the ir3 interpreter.
pub(crate) fn shader_off() -> bool {
    std::env::var("HCQ_VKGSL_SHADER").is_ok_and(|v| v == "off")
}

/// What a shader's load or store outside every GPU object does (`HCQ_VKGSL_PAGEFAULT`):
/// `terminate`, the default, is KGSL's own default page-fault policy on the a6xx-generation msm
/// kernels (no GPU halt: the access is terminated, a load reads 0, a store is dropped, the fault
/// is logged and the context goes on; see [`PageFaults::Terminate`]); `halt` is KGSL with
/// `ft_pagefault_policy`'s GPU-halt bit set, what hcq's own QCOM device does: the dispatch
/// faults, nothing of it is written, and every later wait of the context fails. Another value
/// is said once on stderr and the default used.
pub(crate) fn page_faults() -> PageFaults {
    page_faults_from(std::env::var("HCQ_VKGSL_PAGEFAULT").ok().as_deref())
}

fn page_faults_from(value: Option<&str>) -> PageFaults {
    static SAID: AtomicBool = AtomicBool::new(false);
    match value {
        None | Some("" | "terminate") => PageFaults::Terminate,
        Some("halt") => PageFaults::Fault,
        Some(other) => {
            if !SAID.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "hcq-vkgsl: HCQ_VKGSL_PAGEFAULT={other:?} is neither terminate nor halt: terminate (KGSL's default)"
                );
            }
            PageFaults::Terminate
        }
    }
}

/// The shader core of a device the library opens (the KGSL node and the MSM render node): the ir3
/// interpreter with [`max_steps`] and [`page_faults`], or nothing when [`shader_off`] (said once
/// on stderr).
pub(crate) fn shader_core() -> Box<dyn hcq_sim_adreno::cp::ShaderCore + Send> {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !shader_off() {
        return Box::new(Ir3Dispatch::with_max_steps(max_steps()).with_page_faults(page_faults()));
    }
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("hcq-vkgsl: HCQ_VKGSL_SHADER=off: dispatches run no shader (host-cost measurements only)");
    }
    Box::new(hcq_sim_adreno::cp::NoShader)
}

impl VDev {
    /// The device behind `fd`, a memfd the client holds (and maps objects from); with
    /// `$HCQ_VKGSL_RD` set, every submission is captured there ([`crate::capture`]).
    pub fn new(fd: BorrowedFd<'_>) -> Result<VDev, Errno> {
        Self::with_capture(
            fd,
            std::env::var_os("HCQ_VKGSL_RD").filter(|p| !p.is_empty()).map(std::path::PathBuf::from).as_deref(),
        )
    }

    /// [`VDev::new`] with the `.rd` capture at `rd`, if any (a file that cannot be created is
    /// said on stderr and the device runs without it).
    pub fn with_capture(fd: BorrowedFd<'_>, rd: Option<&std::path::Path>) -> Result<VDev, Errno> {
        // The device keeps its own descriptor of the file (for its mappings and for punching
        // freed objects out), so a client that closes and reuses the number cannot aim it
        // elsewhere.
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor we borrow; it returns a new one.
        let own = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if own < 0 {
            return Err(last_errno());
        }
        // SAFETY: `own` is a fresh descriptor nobody else owns.
        let own = unsafe { OwnedFd::from_raw_fd(own) };
        let inode = rustix::fs::fstat(&own).map_err(|_| Errno::IO)?.st_ino;
        let objs = ObjTable::default();
        let backing = MemfdBacking::new(own, objs.clone());
        let adopt = backing.adopt_slot();
        let sim = SimKgsl::with_backing(shader_core(), Box::new(backing));
        let rd = rd.and_then(|p| {
            RdCapture::create(p)
                .map_err(|e| eprintln!("hcq-vkgsl: cannot create the .rd capture {}: {e}", p.display()))
                .ok()
        });
        Ok(VDev {
            sim,
            objs,
            adopt,
            alloc_lock: Mutex::new(()),
            imports: Mutex::new(HashMap::new()),
            inode,
            queued: Mutex::new(HashMap::new()),
            fault_said: AtomicBool::new(false),
            rd,
        })
    }

    /// The simulated KGSL behind it.
    pub fn sim(&self) -> &SimKgsl {
        &self.sim
    }

    /// Learn where the client mapped `USE_CPU_MAP` objects it had not mapped yet (their GPU
    /// address), from `/proc/self/maps`; does nothing when every such object is known.
    pub fn learn_mappings(&self) {
        let pending: Vec<(u32, u64, usize, usize)> = match self.objs.lock() {
            Ok(o) => o
                .iter()
                .filter(|(_, o)| o.flags & MEMFLAGS_USE_CPU_MAP != 0 && o.client.is_none())
                .map(|(&id, o)| (id, o.off, o.bytes, o.own))
                .collect(),
            Err(_) => return,
        };
        if pending.is_empty() {
            return;
        }
        let vmas = maps::read_self();
        let mut found = Vec::new();
        for v in vmas.iter().filter(|v| v.inode == self.inode) {
            let len = v.end - v.start;
            for &(id, off, _, own) in &pending {
                if off >= v.offset && off < v.offset + len {
                    let va = v.start + (off - v.offset);
                    if va != own as u64 {
                        found.push((id, va));
                    }
                }
            }
        }
        for (id, va) in found {
            let r = self.sim.set_gpu_address(id, va);
            crate::interpose::trace(format_args!("object {id} mapped by the client at {va:#x}: {r:?}"));
            if r.is_ok()
                && let Ok(mut o) = self.objs.lock()
                && let Some(o) = o.get_mut(&id)
            {
                o.client = Some(va);
            }
        }
    }

    /// Say the device's fault on stderr, once.
    fn report_fault(&self) {
        if let Some(f) = self.sim.fault()
            && !self.fault_said.swap(true, Ordering::Relaxed)
        {
            eprintln!("hcq-vkgsl: GPU fault, context invalidated: {f}");
            if let Ok(i) = self.imports.lock() {
                for (at, imp) in i.iter() {
                    if let Import::Revoked { len, why } = imp {
                        eprintln!("hcq-vkgsl:   (MAP_USER_MEM {at:#x} + {len:#x} was revoked before: {why})");
                    }
                }
            }
            if let Ok(o) = self.objs.lock() {
                for (id, o) in o.iter() {
                    crate::interpose::trace(format_args!(
                        "  object {id}: {} bytes, client {:x?}, own {:#x}",
                        o.bytes, o.client, o.own
                    ));
                }
            }
        }
    }

    /// One ioctl: `request` with the client's argument pointer `arg`.
    pub fn ioctl(&self, request: u32, arg: u64) -> Result<(), Errno> {
        self.check_imports();
        let r = self.dispatch(request, arg);
        self.report_fault();
        r
    }

    fn dispatch(&self, req: u32, arg: u64) -> Result<(), Errno> {
        if req >> 8 & 0xff != IOC_TYPE {
            return unknown(req);
        }
        match req & 0xff {
            0x02 => call(req, IOCTL_DEVICE_GETPROPERTY, arg, |a: &mut DeviceGetProperty| self.get_property(a)),
            0x07 => call(req, IOCTL_DEVICE_WAITTIMESTAMP_CTXTID, arg, |a: &mut WaitTimestampCtxtid| {
                self.learn_mappings();
                self.sim.wait_timestamp(a)
            }),
            0x13 => call(req, IOCTL_DRAWCTXT_CREATE, arg, |a: &mut DrawctxtCreate| self.sim.drawctxt_create(a)),
            0x14 => call(req, IOCTL_DRAWCTXT_DESTROY, arg, |a: &mut DrawctxtDestroy| {
                self.learn_mappings();
                self.sim.drawctxt_destroy(a)?;
                if let Ok(mut q) = self.queued.lock() {
                    q.remove(&a.drawctxt_id);
                }
                Ok(())
            }),
            0x15 => call(req, IOCTL_MAP_USER_MEM, arg, |a: &mut MapUserMem| self.map_user_mem(a)),
            0x16 => call(req, IOCTL_CMDSTREAM_READTIMESTAMP_CTXTID, arg, |a: &mut ReadTimestampCtxtid| {
                self.read_timestamp(a)
            }),
            0x21 => call(req, IOCTL_SHAREDMEM_FREE, arg, |a: &mut SharedmemFree| self.sharedmem_free(a)),
            0x32 => call(req, IOCTL_SETPROPERTY, arg, |a: &mut DeviceGetProperty| self.set_property(a)),
            0x45 => call(req, IOCTL_GPUOBJ_ALLOC, arg, |a: &mut GpuobjAlloc| self.gpuobj_alloc(a)),
            0x46 => call(req, IOCTL_GPUOBJ_FREE, arg, |a: &mut GpuobjFree| self.gpuobj_free(a)),
            0x47 => call(req, IOCTL_GPUOBJ_INFO, arg, |a: &mut GpuobjInfo| self.gpuobj_info(a)),
            0x4a => call(req, IOCTL_GPU_COMMAND, arg, |a: &mut GpuCommand| self.gpu_command(a)),
            _ => unknown(req),
        }
    }

    /// `adreno_getproperty` (`adreno.c`): each property checks `sizebytes` against its own
    /// size (`-EINVAL`) and copies out (`-EFAULT`); an unknown one is `-EINVAL`.
    fn get_property(&self, a: &mut DeviceGetProperty) -> Result<(), Errno> {
        let u32v = |v: u32| v.to_ne_bytes().to_vec();
        let v: Vec<u8> = match a.ty {
            PROP_DEVICE_INFO | PROP_VERSION => {
                let mut v = vec![0u8; if a.ty == PROP_VERSION { 16 } else { 40 }];
                self.sim.get_property(a.ty, &mut v)?;
                v
            }
            PROP_MMU_ENABLE => u32v(1),
            PROP_UCHE_GMEM_VADDR => UCHE_GMEM_BASE.to_ne_bytes().to_vec(),
            // sdm845's device tree: qcom,highest-bank-bit = <15>, qcom,min-access-length = <32>,
            // qcom,ubwc-mode = <2> (KGSL_UBWC_2_0); a 64-bit MMU is 48 bits.
            PROP_HIGHEST_BANK_BIT => u32v(15),
            PROP_DEVICE_BITNESS => u32v(48),
            PROP_MIN_ACCESS_LENGTH => u32v(32),
            PROP_UBWC_MODE => u32v(2),
            _ => return Err(Errno::INVAL),
        };
        if a.sizebytes != v.len() as u64 {
            return Err(Errno::INVAL);
        }
        copy_out(a.value, &v)
    }

    /// `adreno_setproperty`: `PWR_CONSTRAINT` takes a `kgsl_device_constraint` (size checked,
    /// `-EINVAL`), naming a context of this file (`-EINVAL` otherwise); the simulated GPU has
    /// one power level, so the constraint has nothing to change. Others are `-EINVAL`.
    fn set_property(&self, a: &mut DeviceGetProperty) -> Result<(), Errno> {
        match a.ty {
            PROP_PWR_CONSTRAINT => {
                if a.sizebytes != size_of::<DeviceConstraint>() as u64 {
                    return Err(Errno::INVAL);
                }
                let mut c = DeviceConstraint::new_zeroed();
                copy_in(a.value, c.as_mut_bytes())?;
                let mut t = ReadTimestampCtxtid { context_id: c.context_id, ty: TIMESTAMP_RETIRED, timestamp: 0 };
                self.sim.read_timestamp(&mut t).map_err(|_| Errno::INVAL)
            }
            _ => Err(Errno::INVAL),
        }
    }

    /// `kgsl_ioctl_gpuobj_alloc`: size 0 (`kgsl_allocate_user`) is `-EINVAL`.
    fn gpuobj_alloc(&self, a: &mut GpuobjAlloc) -> Result<(), Errno> {
        if a.size == 0 {
            return Err(Errno::INVAL);
        }
        {
            let _one = self.alloc_lock.lock().map_err(|_| Errno::IO)?;
            self.sim.gpuobj_alloc(a)?;
        }
        crate::interpose::trace(format_args!("GPUOBJ_ALLOC {} bytes flags {:#x}: id {}", a.size, a.flags, a.id));
        if let Ok(mut o) = self.objs.lock()
            && let Some(o) = o.get_mut(&a.id)
        {
            o.flags = a.flags;
        }
        Ok(())
    }

    /// `kgsl_ioctl_gpuobj_free`: with `FREE_ON_EVENT` the event is read from `priv` (its
    /// `len` must be the event's size and the type `GPU_EVENT_TIMESTAMP`, else `-EINVAL`).
    fn gpuobj_free(&self, a: &mut GpuobjFree) -> Result<(), Errno> {
        crate::interpose::trace(format_args!("GPUOBJ_FREE id {} flags {:#x}", a.id, a.flags));
        self.learn_mappings();
        if a.flags & GPUOBJ_FREE_ON_EVENT == 0 {
            return self.sim.gpuobj_free(a, None);
        }
        if a.ty != GPU_EVENT_TIMESTAMP || a.len as usize != size_of::<GpuEventTimestamp>() {
            return Err(Errno::INVAL);
        }
        let mut ev = GpuEventTimestamp::new_zeroed();
        copy_in(a.priv_, ev.as_mut_bytes())?;
        self.sim.gpuobj_free(a, Some(&ev))
    }

    /// `kgsl_ioctl_gpuobj_info`: an unknown id is `-EINVAL`. A `USE_CPU_MAP` object has its GPU
    /// address once the client mapped it (0 before, as KGSL's SVM objects).
    fn gpuobj_info(&self, a: &mut GpuobjInfo) -> Result<(), Errno> {
        self.learn_mappings();
        let id = a.id;
        let o = self.objs.lock().map_err(|_| Errno::IO)?.get(&id).copied().ok_or(Errno::INVAL)?;
        self.sim.gpuobj_info(a)?;
        a.flags = o.flags;
        a.va_len = o.bytes as u64;
        if o.flags & MEMFLAGS_USE_CPU_MAP != 0 {
            a.gpuaddr = o.client.unwrap_or(0);
            a.va_addr = a.gpuaddr;
        }
        Ok(())
    }

    /// `kgsl_ioctl_map_user_mem` with `KGSL_USER_MEM_TYPE_ADDR` (`kgsl_setup_useraddr`): the
    /// range must be page aligned and non-empty (`-EINVAL`) and wholly mapped writable
    /// (`get_user_pages` fails: `-EFAULT`); other memory types are `-EOPNOTSUPP` here (ION and
    /// dma-buf imports have no meaning without those drivers).
    ///
    /// The driver pins the pages, so the GPU keeps reaching them whatever the process does
    /// with its mapping. A range of one shared mapping (a memfd, a file, `MAP_SHARED`
    /// anonymous memory) is pinned alike: the device makes its own mapping of the same pages
    /// (`mremap` of size 0) and the GPU reaches them there, also after the client unmapped or
    /// replaced its own. Private memory cannot be pinned from user space: the GPU reaches the
    /// client's pages, and before every ioctl the device checks that the range is still
    /// mapped, writable, and by the same mapping (the same file and offset, or anonymous
    /// memory) as at the import (`/proc/self/maps`); if not, the import is revoked (said on
    /// stderr) and a GPU access to it is a fault of its context, never a write into whatever
    /// the process maps there now. (A private anonymous mapping replaced by another at the
    /// same address between two ioctls reads the same in `/proc/self/maps`, and is not told
    /// apart.)
    fn map_user_mem(&self, a: &mut MapUserMem) -> Result<(), Errno> {
        if a.memtype != USER_MEM_TYPE_ADDR {
            return Err(Errno::OPNOTSUPP);
        }
        if a.len == 0 || !a.len.is_multiple_of(PAGE) || !a.hostptr.is_multiple_of(PAGE) {
            return Err(Errno::INVAL);
        }
        let vmas = maps::read_self();
        let pieces = maps::pieces(&vmas, a.hostptr, a.len).ok_or(Errno::FAULT)?;
        // KGSL's own mappings are not user memory (`memdesc_sg_virt`'s `check_vma` refuses a
        // VMA of the device file: `-EFAULT`); tinygrad then takes the pointer for the GPU
        // address it already is.
        if pieces.iter().any(|p| p.inode == self.inode && p.inode != 0) {
            return Err(Errno::FAULT);
        }
        let len = usize::try_from(a.len).map_err(|_| Errno::INVAL)?;
        // A range imported again replaces the earlier import at that address.
        self.release_import(a.hostptr);
        if let [p] = pieces[..]
            && p.shared
            && let Some(id) = self.alias(a.hostptr, len)
        {
            crate::interpose::trace(format_args!(
                "MAP_USER_MEM {:#x} + {:#x}: shared, pinned (object {id})",
                a.hostptr, a.len
            ));
            self.imports.lock().map_err(|_| Errno::IO)?.insert(a.hostptr, Import::Alias { id });
            a.gpuaddr = a.hostptr;
            return Ok(());
        }
        crate::interpose::trace(format_args!("MAP_USER_MEM {:#x} + {:#x}: checked at every ioctl", a.hostptr, a.len));
        self.sim.map_user_mem(a)?;
        self.imports.lock().map_err(|_| Errno::IO)?.insert(a.hostptr, Import::Checked { len: a.len, pieces });
        Ok(())
    }

    /// The device's own mapping of the shared pages at `host`, as object `id` at GPU address
    /// `host`; `None` (nothing left behind) where the kernel or the simulator refuses.
    fn alias(&self, host: u64, len: usize) -> Option<u32> {
        // SAFETY: mremap with old size 0 makes a second mapping of the same pages of a shared
        // mapping at a kernel-chosen address (`host..host + len` is one shared mapping, checked
        // by the caller); it aliases no Rust object, and the client's mapping is unchanged.
        let own = unsafe { libc::mremap(host as *mut libc::c_void, 0, len, libc::MREMAP_MAYMOVE) };
        if own == libc::MAP_FAILED {
            return None;
        }
        let undo = || {
            // SAFETY: our own alias, never handed out (the simulator did not take it).
            unsafe { libc::munmap(own, len) };
        };
        let mut g = GpuobjAlloc { size: len as u64, ..GpuobjAlloc::new_zeroed() };
        let id = {
            let Ok(_one) = self.alloc_lock.lock() else {
                undo();
                return None;
            };
            if let Ok(mut slot) = self.adopt.lock() {
                *slot = Some((own as usize, len));
            }
            let r = self.sim.gpuobj_alloc(&mut g);
            let left = self.adopt.lock().ok().and_then(|mut s| s.take());
            match (r, left) {
                (Ok(()), None) => g.id,
                (Ok(()), Some(_)) => {
                    // Cannot happen (the allocation takes the slot first), but then the object
                    // is a memfd region: give it back, the alias was not taken.
                    let _ = self.sim.gpuobj_free(&GpuobjFree { id: g.id, ..GpuobjFree::new_zeroed() }, None);
                    undo();
                    return None;
                }
                (Err(_), _) => {
                    undo();
                    return None;
                }
            }
        };
        if let Ok(mut o) = self.objs.lock()
            && let Some(o) = o.get_mut(&id)
        {
            o.client = Some(host);
        }
        if self.sim.set_gpu_address(id, host).is_err() {
            // The object (and with it the alias) goes back through the backing.
            let _ = self.sim.gpuobj_free(&GpuobjFree { id, ..GpuobjFree::new_zeroed() }, None);
            return None;
        }
        Some(id)
    }

    /// Drop the import at `gpuaddr`, if any: `true` if there was one.
    fn release_import(&self, gpuaddr: u64) -> bool {
        let Some(imp) = self.imports.lock().ok().and_then(|mut i| i.remove(&gpuaddr)) else { return false };
        match imp {
            Import::Alias { id } => {
                let _ = self.sim.gpuobj_free(&GpuobjFree { id, ..GpuobjFree::new_zeroed() }, None);
            }
            Import::Checked { .. } => {
                let _ = self.sim.sharedmem_free(&SharedmemFree { gpuaddr });
            }
            Import::Revoked { .. } => {}
        }
        true
    }

    /// `kgsl_ioctl_sharedmem_free`: an address that is not an import is `-EINVAL`.
    fn sharedmem_free(&self, a: &mut SharedmemFree) -> Result<(), Errno> {
        if self.release_import(a.gpuaddr) { Ok(()) } else { self.sim.sharedmem_free(a) }
    }

    /// Revoke every checked import whose range the client no longer maps as it did at the
    /// import (`MAP_USER_MEM`, see the crate docs): its GPU mapping goes, so the GPU faults on it
    /// instead of writing whatever the process maps there now.
    pub fn check_imports(&self) {
        let Ok(mut imports) = self.imports.lock() else { return };
        if !imports.values().any(|i| matches!(i, Import::Checked { .. })) {
            return;
        }
        let vmas = maps::read_self();
        for (&at, imp) in imports.iter_mut() {
            let Import::Checked { len, pieces } = imp else { continue };
            let now = maps::pieces(&vmas, at, *len);
            if now.as_ref() == Some(pieces) {
                continue;
            }
            let why = match now {
                None => "the process unmapped it (or made it read-only)".to_string(),
                Some(_) => "the process maps other memory there now".to_string(),
            };
            let _ = self.sim.sharedmem_free(&SharedmemFree { gpuaddr: at });
            eprintln!(
                "hcq-vkgsl: MAP_USER_MEM {at:#x} + {len:#x} revoked: {why}; a GPU access to it faults its context"
            );
            *imp = Import::Revoked { len: *len, why };
        }
    }

    /// `kgsl_ioctl_cmdstream_readtimestamp_ctxtid`: `CONSUMED` and `RETIRED` read the retired
    /// timestamp (the simulated CP consumes and retires together), `QUEUED` the last one
    /// submitted; other types and unknown contexts are `-EINVAL`.
    fn read_timestamp(&self, a: &mut ReadTimestampCtxtid) -> Result<(), Errno> {
        self.learn_mappings();
        match a.ty {
            TIMESTAMP_CONSUMED | TIMESTAMP_RETIRED => self.sim.read_timestamp(a),
            TIMESTAMP_QUEUED => {
                let mut r = *a;
                self.sim.read_timestamp(&mut r)?;
                a.timestamp =
                    self.queued.lock().map_err(|_| Errno::IO)?.get(&a.context_id).copied().unwrap_or(r.timestamp);
                Ok(())
            }
            _ => Err(Errno::INVAL),
        }
    }

    /// `kgsl_ioctl_gpu_command` (`kgsl.c`, `kgsl_drawobj.c`): `numcmds` above `KGSL_MAX_NUMIBS`
    /// or a command list without a stride is `-EINVAL`; each object is read with the user's
    /// stride (`cmdsize`, the smaller of it and the kernel's struct, zero-filled); only IB
    /// objects run. Sync points and markers are refused (`-EOPNOTSUPP`, said on stderr): the
    /// simulated CP runs every context in order, so no client of this device needs them yet.
    fn gpu_command(&self, a: &mut GpuCommand) -> Result<(), Errno> {
        if a.numcmds > MAX_NUMIBS || (a.numcmds > 0 && a.cmdsize == 0) {
            return Err(Errno::INVAL);
        }
        if a.numsyncs > 0 || a.numcmds == 0 {
            say_once(0x4a, "GPU_COMMAND with sync points or without IBs (markers) is not simulated");
            return Err(Errno::OPNOTSUPP);
        }
        let stride = a.cmdsize as usize;
        let take = stride.min(size_of::<CommandObject>());
        let mut cmds = Vec::with_capacity(a.numcmds as usize);
        for i in 0..u64::from(a.numcmds) {
            let mut c = CommandObject::new_zeroed();
            let at = a.cmdlist.checked_add(i * stride as u64).ok_or(Errno::FAULT)?;
            copy_in(at, &mut c.as_mut_bytes()[..take])?;
            if c.flags & CMDLIST_ANY_IB != 0 {
                cmds.push(c);
            }
        }
        self.learn_mappings();
        if let Some(rd) = &self.rd
            && let Err(e) = rd.record(&self.objs, &cmds)
        {
            say_once(0x4a, &format!("writing the .rd capture failed: {e}"));
        }
        self.sim.gpu_command(a, &cmds)?;
        if let Ok(mut q) = self.queued.lock() {
            q.insert(a.context_id, a.timestamp);
        }
        Ok(())
    }
}

/// `kgsl_ioctl_helper`'s argument protocol around `f` (see the module docs).
fn call<T: FromBytes + IntoBytes + Immutable + KnownLayout>(
    req: u32,
    kernel: u32,
    arg: u64,
    f: impl FnOnce(&mut T) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let copy = ioc_size(req).min(size_of::<T>());
    let mut t = T::new_zeroed();
    if ioc_dir(kernel) & IOC_WRITE != 0 && ioc_dir(req) & IOC_WRITE != 0 {
        copy_in(arg, &mut t.as_mut_bytes()[..copy])?;
    }
    f(&mut t)?;
    if ioc_dir(kernel) & IOC_READ != 0 && ioc_dir(req) & IOC_READ != 0 {
        copy_out(arg, &t.as_bytes()[..copy])?;
    }
    Ok(())
}

fn say_once(req: u32, what: &str) {
    if let Ok(mut said) = UNKNOWN_SAID.lock()
        && !said.contains(&req)
    {
        said.push(req);
        eprintln!("hcq-vkgsl: {what} (request {req:#010x})");
    }
}

/// An ioctl the device does not implement: `ENOTTY` (the driver's `-ENOIOCTLCMD`), said once.
fn unknown(req: u32) -> Result<(), Errno> {
    say_once(req, "ioctl not implemented by the virtual KGSL device, answered ENOTTY");
    Err(Errno::NOTTY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_faults_terminate_unless_halt_is_asked_for() {
        assert_eq!(page_faults_from(None), PageFaults::Terminate, "KGSL's default policy");
        assert_eq!(page_faults_from(Some("terminate")), PageFaults::Terminate);
        assert_eq!(page_faults_from(Some("halt")), PageFaults::Fault);
        assert_eq!(page_faults_from(Some("HALT!")), PageFaults::Terminate, "an unknown value keeps the default");
    }
}
