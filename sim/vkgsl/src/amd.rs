//! The virtual AMD GPU: `/dev/kfd` and the GPU's render node (`/dev/dri/renderD129`), answered by
//! hcq-sim-amd's [`SimKfd`] over a simulated gfx1100 (RX 7900 XTX), so that an unmodified KFD
//! client (tinygrad's `KFDIface`, hcq's own `LinuxKfd`) runs on it.
//!
//! # One KFD process per process
//!
//! As amdkfd keeps one `kfd_process` per address space, the library keeps one [`AmdSystem`] per
//! process, made at the first open of either node: the simulated GPU (its CP thread polling the
//! doorbells), and two memfds — the doorbell frame's (what `/dev/kfd` maps) and the buffer
//! objects' (what the render node maps). Every open of a node is a new open of its memfd
//! (`/proc/self/fd`), so descriptors, `dup`s and `close`s behave as a driver's files do. A `fork`
//! child that opens a node gets a system of its own, as KFD gives it a process of its own.
//!
//! # Memory: KFD's shared address space over the render node's memfd
//!
//! - **VRAM and GTT** (`ALLOC_MEMORY_OF_GPU` at the client's `va_addr`, for tinygrad its own
//!   `PROT_NONE` reservation): the buffer object is a fresh range of the render node's memfd at
//!   its `mmap_offset` (from 2^32 up, a page apart, never reused); the device maps those pages
//!   itself and registers them in the GPU's memory at GPU VA `va_addr`; the client then maps the
//!   render node at `va_addr` with that offset (`MAP_FIXED`), and both reach the same pages.
//!   Freed, the device's mapping goes and the pages are punched out of the file (a client
//!   mapping still there reads zeros, never another buffer).
//! - **`USERPTR`** (the user pointer in `mmap_offset`): a range of one shared mapping
//!   (`MAP_SHARED` anonymous memory, as tinygrad's host buffers and CPU buffers are; a memfd or
//!   a file) is pinned as the driver pins it: the device makes its own mapping of the same pages
//!   (`mremap` of size 0), which the GPU keeps reaching whatever the process later does with its
//!   own. Private memory cannot be pinned from user space: the GPU reaches the process's own
//!   pages, and the device checks in `/proc/self/maps` that the range is still mapped, writable,
//!   by the same mapping, before every ioctl and before every pass of the CP over its queues that
//!   follows a doorbell (or 10 ms after the last check); if not, the import is revoked (said on
//!   stderr): the GPU's view of it becomes unmapped fresh pages, so a GPU access faults (a
//!   memory-exception event), and `MAP_MEMORY_TO_GPU` of it is `EFAULT`. What no user-space
//!   check can catch: the process unmapping such a range while a dispatch already running reads
//!   or writes it. A range the process maps from one of the devices' own files is refused
//!   (`EFAULT`), as KGSL refuses its own mappings.
//!
//! # Doorbells and events
//!
//! The GPU's doorbell page is the first 8 KiB of the `/dev/kfd` memfd. KFD encodes a doorbell's
//! mmap offset as `KFD_MMAP_TYPE_DOORBELL | gpu_id << 46 | byte`, above 2^63, where no memfd can
//! be mapped: `CREATE_QUEUE` returns the frame's offset in the memfd (0) plus the doorbell's
//! byte instead, which a client that maps `doorbell_offset & ~0x1fff` (tinygrad, hcq) maps
//! unchanged. A client's plain store to the doorbell is what the CP thread polls for. The signal
//! page is the buffer object the client names in `CREATE_EVENT` (tinygrad's 32 KiB GTT buffer),
//! so the GPU writes its slots in the render node's memfd; a signal event made without one uses
//! a page of the simulator's own, which the client cannot map (its `KFD_MMAP_TYPE_EVENTS` offset
//! is past any memfd's).
//!
//! # ioctls
//!
//! Decoded as `kfd_ioctl` decodes them (`drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`): the number
//! alone selects the handler (the kernel's own direction and size are used; an unknown number is
//! `EINVAL`); the larger of the user's and the kernel's size is the buffer, the user's size is
//! copied in (`EFAULT`) and — whatever the handler returned — copied back. Handlers and their
//! errno values are [`SimKfd`]'s. Requests amdkfd has that are not simulated (clock counters,
//! apertures, SVM, CRIU, debugging…) are `EINVAL`, said once on stderr.
//!
//! # The command-stream capture
//!
//! With `$HCQ_VKGSL_AMD_CAPTURE` naming a file, the GPU hands every packet its compute CP and SDMA
//! engines execute to [`crate::amd_capture::AmdCapture`], one text line each (the ring's packets
//! and those of the IBs they call, marked as such; the decoded fields; the dwords).

use crate::maps;
use crate::user::{copy_in, copy_out};
use hcq_amd::kfd::Kfd;
use hcq_amd::kfd::uapi::*;
use hcq_sim_amd::{DoorbellPage, Gpu, GpuConfig, HostPages, SimKfd};
use rustix::io::Errno;
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The KFD node.
pub const KFD_NODE: &CStr = c"/dev/kfd";
/// The AMD GPU's render node minor: 129, beside the virtual MSM node's 128; the topology's
/// `drm_render_minor` says the same.
pub const RENDER_MINOR: u32 = 129;
/// Its render node.
pub const RENDER_NODE: &CStr = c"/dev/dri/renderD129";
/// The doorbell frame's offset in the `/dev/kfd` memfd.
pub const DOORBELL_FILE_OFFSET: u64 = 0;
/// Where buffer objects start in the render node's memfd (DRM's `DRM_FILE_PAGE_OFFSET_START`).
pub const BO_OFFSET_BASE: u64 = 1 << 32;
/// The simulated GPU's memory: an RX 7900 XTX's 24 GiB (the memfd's pages cost host memory only
/// once touched).
pub const VRAM_BYTES: u64 = 24 << 30;
/// `WAIT_EVENTS` entries at most (the kernel's bound is its allocator's; this keeps a garbage
/// count from allocating gigabytes).
pub const MAX_WAIT_EVENTS: u32 = 1 << 16;
/// `MAP`/`UNMAP_MEMORY_TO_GPU` devices at most (likewise).
pub const MAX_DEVICES: u32 = 1 << 16;
/// A private `USERPTR` import is checked by the CP at least this often while it has one.
const CP_CHECK_EVERY: Duration = Duration::from_millis(10);
const PAGE: u64 = 4096;
/// `DRM_IOCTL_VERSION`'s answers for the render node (`amdgpu_drv.c`: KMS 3.59).
const DRM_NAME: &str = "amdgpu";
const DRM_DATE: &str = "20150101";
const DRM_DESC: &str = "AMD GPU";
const DRM_VERSION: (i32, i32, i32) = (3, 59, 0);

const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

fn last_errno() -> Errno {
    Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The errno of a [`SimKfd`] refusal (`Os` carries the driver's; anything else is `EINVAL`).
fn errno_of(e: &hcq::Error) -> Errno {
    match e.root() {
        hcq::Error::Os { errno, .. } => Errno::from_raw_os_error(*errno),
        _ => Errno::INVAL,
    }
}

fn sim<T>(r: hcq::Result<T>) -> Result<T, Errno> {
    r.map_err(|e| errno_of(&e))
}

/// The simulated GPU's settings under the library: no hang timeout (a queue waiting on another
/// waits as on the hardware; `$HCQ_VKGSL_HANG_MS` sets one), `$HCQ_VKGSL_MAX_STEPS` wave
/// instructions at most (else the simulator's default), [`VRAM_BYTES`].
fn gpu_config() -> GpuConfig {
    let d = GpuConfig::default();
    let hang = std::env::var("HCQ_VKGSL_HANG_MS").ok().and_then(|s| s.parse().ok()).map(Duration::from_millis);
    let steps = std::env::var("HCQ_VKGSL_MAX_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(d.max_wave_steps);
    GpuConfig { hang_timeout: hang, max_wave_steps: steps, memory_limit: VRAM_BYTES, ..d }
}

/// A new memfd of `len` bytes (close-on-exec: the device's own).
fn memfd(name: &CStr, len: u64) -> Result<OwnedFd, Errno> {
    // SAFETY: memfd_create with a NUL-terminated name; returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    rustix::fs::ftruncate(&fd, len)?;
    Ok(fd)
}

/// `len` bytes of `fd` from `off`, shared, where the kernel chooses; `resident`: its pages made
/// and mapped now (`MAP_POPULATE`), not at their first touch.
fn map_shared(fd: BorrowedFd<'_>, off: u64, len: usize, resident: bool) -> Result<NonNull<u8>, Errno> {
    let off = i64::try_from(off).map_err(|_| Errno::NOMEM)?;
    let flags = libc::MAP_SHARED | if resident { libc::MAP_POPULATE } else { 0 };
    // SAFETY: a new shared mapping of a memfd at a kernel-chosen address: it aliases no Rust
    // object.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, fd.as_raw_fd(), off)
    };
    if p == libc::MAP_FAILED {
        return Err(last_errno());
    }
    NonNull::new(p.cast::<u8>()).ok_or(Errno::NOMEM)
}

/// What backs one buffer object.
#[derive(Debug)]
enum Storage {
    /// VRAM or GTT: pages of the render node's memfd at this offset.
    File,
    /// A `USERPTR` of a shared mapping: the device's own alias of its pages.
    Alias,
    /// A `USERPTR` of private memory: the process's own pages, `pieces` as at the import.
    Checked { host: u64, len: u64, pieces: Vec<maps::Piece> },
    /// A checked import whose memory the process no longer maps as it did.
    Revoked { host: u64, why: String },
}

#[derive(Debug)]
struct Bo {
    va: u64,
    bytes: u64,
    storage: Storage,
}

#[derive(Debug)]
struct Bos {
    next_off: u64,
    by_handle: HashMap<u64, Bo>,
}

/// The process's virtual AMD GPU (see the module docs).
pub struct AmdSystem {
    kfd: SimKfd,
    pid: u32,
    kfd_file: Arc<OwnedFd>,
    render_file: Arc<OwnedFd>,
    kfd_id: (u64, u64),
    render_id: (u64, u64),
    /// Every memory ioctl, and the import checks, in turn.
    bos: Mutex<Bos>,
    /// Checked (private) imports not revoked.
    checked: AtomicUsize,
    /// The doorbells and the time of the CP's last import check.
    cp_seen: Mutex<(Vec<u64>, Instant)>,
    fault_said: AtomicBool,
}

impl core::fmt::Debug for AmdSystem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AmdSystem").field("pid", &self.pid).finish_non_exhaustive()
    }
}

/// The process's system, made at the first open of a node (a `fork` child makes its own).
static SYSTEM: Mutex<Option<Arc<AmdSystem>>> = Mutex::new(None);

thread_local! {
    /// [`SYSTEM`]'s lock, held by the forking thread from [`before_fork`] to [`after_fork`].
    static HELD: std::cell::RefCell<Option<MutexGuard<'static, Option<Arc<AmdSystem>>>>> =
        const { std::cell::RefCell::new(None) };
}

/// `pthread_atfork`'s prepare handler: no other thread holds the process system's lock in the copy.
pub fn before_fork() {
    let g = lock(&SYSTEM);
    HELD.with(|h| *h.borrow_mut() = Some(g));
}

/// `pthread_atfork`'s parent and child handlers.
pub fn after_fork() {
    let g = HELD.with(|h| h.borrow_mut().take());
    drop(g);
}

fn identity(fd: BorrowedFd<'_>) -> Result<(u64, u64), Errno> {
    let st = rustix::fs::fstat(fd)?;
    Ok((st.st_dev, st.st_ino))
}

impl AmdSystem {
    /// The process's system, made if this process has none.
    pub fn get() -> Result<Arc<AmdSystem>, Errno> {
        let me = std::process::id();
        let mut g = lock(&SYSTEM);
        if let Some(s) = g.as_ref()
            && s.pid == me
        {
            return Ok(s.clone());
        }
        // A fork child's copy of its parent's system has no CP thread (and joining it would
        // wait forever): forgotten, never dropped.
        if let Some(old) = g.take() {
            std::mem::forget(old);
        }
        let s = Self::new()?;
        *g = Some(s.clone());
        Ok(s)
    }

    fn new() -> Result<Arc<AmdSystem>, Errno> {
        let kfd_file = memfd(c"hcq-vkgsl-kfd", mmap::DOORBELL_BYTES as u64)?;
        let render_file = memfd(c"hcq-vkgsl-amdgpu", 0)?;
        let (kfd_id, render_id) = (identity(kfd_file.as_fd())?, identity(render_file.as_fd())?);
        let kfd_file = Arc::new(kfd_file);
        let render_file = Arc::new(render_file);
        let bells_len = mmap::DOORBELL_BYTES;
        let bells = map_shared(kfd_file.as_fd(), DOORBELL_FILE_OFFSET, bells_len, true)?;
        let keep = kfd_file.clone();
        let at = bells.as_ptr() as usize;
        let release = Box::new(move || {
            // SAFETY: the device's own mapping of the doorbell frame, unused once the doorbell
            // page (its only holder) is gone.
            unsafe { libc::munmap(at as *mut libc::c_void, bells_len) };
            drop(keep);
        });
        // SAFETY: a fresh shared mapping of `bells_len` bytes (page-aligned, whole pages), kept
        // until `release` unmaps it; the GPU reaches it only through atomics, the client through
        // its own mapping (raw stores).
        let pages = unsafe { HostPages::external(bells, bells_len, release) }.ok_or(Errno::INVAL)?;
        let page = DoorbellPage::on(Arc::new(pages)).ok_or(Errno::INVAL)?;
        let mut gpu = Gpu::with_doorbells(gpu_config(), page);
        if let Some(c) = crate::amd_capture::AmdCapture::from_env() {
            gpu.trace_packets(Arc::new(c));
        }
        gpu.poll_doorbells(true);
        gpu.start();
        crate::fds::mark_internal(kfd_file.as_raw_fd(), true);
        crate::fds::mark_internal(render_file.as_raw_fd(), true);
        let sys = Arc::new(AmdSystem {
            kfd: SimKfd::with_gpu(gpu, RENDER_MINOR),
            pid: std::process::id(),
            kfd_file,
            render_file,
            kfd_id,
            render_id,
            bos: Mutex::new(Bos { next_off: BO_OFFSET_BASE, by_handle: HashMap::new() }),
            checked: AtomicUsize::new(0),
            cp_seen: Mutex::new((Vec::new(), Instant::now())),
            fault_said: AtomicBool::new(false),
        });
        let weak: Weak<AmdSystem> = Arc::downgrade(&sys);
        sys.kfd.gpu().before_pass(Some(Arc::new(move || {
            if let Some(s) = weak.upgrade() {
                s.cp_check();
            }
        })));
        crate::interpose::trace(format_args!("virtual AMD GPU made (gfx1100, render node {RENDER_MINOR})"));
        Ok(sys)
    }

    /// The simulated KFD.
    pub fn kfd(&self) -> &SimKfd {
        &self.kfd
    }

    /// A new open of the `/dev/kfd` memfd (`cloexec` as the client asked).
    pub fn open_kfd(&self, cloexec: bool) -> Result<OwnedFd, Errno> {
        reopen(self.kfd_file.as_fd(), cloexec)
    }

    /// A new open of the render node's memfd.
    pub fn open_render(&self, cloexec: bool) -> Result<OwnedFd, Errno> {
        sim(self.kfd.open_render(RENDER_MINOR))?;
        reopen(self.render_file.as_fd(), cloexec)
    }

    /// Whether `fd` is a descriptor of this system's render node.
    fn is_render(&self, fd: RawFd) -> bool {
        if fd < 0 {
            return false;
        }
        // SAFETY: fstat of a descriptor number; the kernel answers EBADF if it is not open.
        identity(unsafe { BorrowedFd::borrow_raw(fd) }).is_ok_and(|id| id == self.render_id)
    }

    /// Say the first queue fault on stderr.
    fn report_fault(&self) {
        if self.fault_said.load(Ordering::Relaxed) {
            return;
        }
        if let Some(f) = self.kfd.gpu().events().first_fault()
            && !self.fault_said.swap(true, Ordering::Relaxed)
        {
            eprintln!("hcq-vkgsl: AMD GPU fault: {f}");
        }
    }

    // ---------------------------------------------------------------- memory

    /// `ALLOC_MEMORY_OF_GPU`: storage first (a range of the render memfd; a user pointer's
    /// pages), then [`SimKfd::alloc_memory_on`] over it; what the simulator refuses leaves
    /// nothing behind.
    fn alloc(&self, a: &mut AllocMemoryOfGpuArgs) -> Result<(), Errno> {
        let mut bos = lock(&self.bos);
        let flags = AllocFlags::from_bits_retain(a.flags);
        let bytes = a.size.checked_next_multiple_of(PAGE).filter(|&b| b != 0);
        if flags.contains(AllocFlags::USERPTR) {
            return self.alloc_userptr(&mut bos, a, bytes);
        }
        let Some(bytes) = bytes.filter(|_| flags.intersects(AllocFlags::VRAM | AllocFlags::GTT)) else {
            // No storage to make: the simulator says why (size, flags) in its order.
            return sim(self.kfd.alloc_memory_of_gpu(a));
        };
        let len = usize::try_from(bytes).map_err(|_| Errno::NOMEM)?;
        let off = bos.next_off;
        let end = off.checked_add(bytes).filter(|&e| i64::try_from(e).is_ok()).ok_or(Errno::NOMEM)?;
        if rustix::fs::fstat(self.render_file.as_fd())?.st_size < end as i64 {
            rustix::fs::ftruncate(self.render_file.as_fd(), end)?;
        }
        // Resident from the start, as amdgpu's buffer objects are once mapped for the GPU (VRAM is
        // the board's memory, GTT pinned system pages): the GPU's first access to a fresh buffer
        // does not pay the host's page faults (on a 2-core VM ~0.5 GB/s, which made a timed
        // 200 MB SDMA copy between fresh buffers 20x slower than the copy itself). The pages
        // cost host memory from here on, as they cost the board's.
        let own = map_shared(self.render_file.as_fd(), off, len, true)?;
        let file = self.render_file.clone();
        let at = own.as_ptr() as usize;
        let release = Box::new(move || {
            // SAFETY: the device's own mapping of this buffer, no longer used by anyone (the
            // last holder of its pages just dropped them).
            unsafe { libc::munmap(at as *mut libc::c_void, len) };
            // The pages go (a client mapping still there reads zeros, never another buffer).
            let _ = rustix::fs::fallocate(
                file.as_fd(),
                rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
                off,
                bytes,
            );
        });
        // SAFETY: a fresh shared mapping of `len` bytes of our memfd, unmapped only by
        // `release`; the GPU reaches it through atomics, the client through its own mapping.
        let pages = unsafe { HostPages::external(own, len, release) }.ok_or(Errno::INVAL)?;
        let va = a.va_addr;
        sim(self.kfd.alloc_memory_on(a, va, Arc::new(pages), false))?;
        bos.next_off = end + PAGE;
        a.mmap_offset = off;
        crate::interpose::trace(format_args!(
            "ALLOC {:#x} bytes at {va:#x} (flags {:#x}): handle {:#x}, render offset {off:#x}",
            a.size, a.flags, a.handle
        ));
        bos.by_handle.insert(a.handle, Bo { va, bytes, storage: Storage::File });
        Ok(())
    }

    /// `USERPTR`: the user pointer's range pinned (one shared mapping) or checked (private).
    fn alloc_userptr(&self, bos: &mut Bos, a: &mut AllocMemoryOfGpuArgs, bytes: Option<u64>) -> Result<(), Errno> {
        let host = a.mmap_offset;
        let Some(bytes) = bytes else { return sim(self.kfd.alloc_memory_of_gpu(a)) };
        let first = host & !(PAGE - 1);
        let span = host.checked_add(bytes).and_then(|e| e.checked_next_multiple_of(PAGE)).map(|e| e - first);
        let vmas = maps::read_self();
        let pieces = span.and_then(|s| maps::pieces(&vmas, first, s));
        let ours = |p: &maps::Piece| p.inode != 0 && self.own_file(p.inode);
        let Some((pieces, span)) = pieces.zip(span).filter(|(p, _)| !p.iter().any(ours)) else {
            // Not wholly mapped writable (or one of the devices' own files): no range, and the
            // simulator refuses it (EFAULT) after its earlier checks.
            return sim(self.kfd.alloc_memory_of_gpu(a));
        };
        let len = usize::try_from(span).map_err(|_| Errno::NOMEM)?;
        if host != first {
            // Misaligned: the simulator refuses it (EINVAL) in its order; stand-in storage the
            // length of the range, never registered.
            let stand_in = HostPages::new(span).ok_or(Errno::NOMEM)?;
            return sim(self.kfd.alloc_memory_on(a, first, Arc::new(stand_in), true));
        }
        let (pages, storage) = match pieces[..] {
            [p] if p.shared => match alias(host, len) {
                Some(pages) => (pages, Storage::Alias),
                None => (self.checked_pages(host, len)?, Storage::Checked { host, len: span, pieces }),
            },
            _ => (self.checked_pages(host, len)?, Storage::Checked { host, len: span, pieces }),
        };
        let va = a.va_addr;
        sim(self.kfd.alloc_memory_on(a, host, Arc::new(pages), true))?;
        crate::interpose::trace(format_args!(
            "USERPTR {host:#x} + {:#x} at {va:#x}: {} (handle {:#x})",
            a.size,
            if matches!(storage, Storage::Alias) { "shared, pinned" } else { "private, checked at every ioctl" },
            a.handle
        ));
        if matches!(storage, Storage::Checked { .. }) {
            self.checked.fetch_add(1, Ordering::AcqRel);
        }
        bos.by_handle.insert(a.handle, Bo { va, bytes, storage });
        Ok(())
    }

    /// The process's own private pages at `host` as GPU storage (see the module docs).
    fn checked_pages(&self, host: u64, len: usize) -> Result<HostPages, Errno> {
        let ptr = NonNull::new(host as *mut u8).ok_or(Errno::FAULT)?;
        // SAFETY: `host..host + len` is mapped readable and writable (checked in
        // /proc/self/maps just before); the device revokes the GPU's registration of it
        // (`check_imports`, before every ioctl and before the CP's passes that follow a
        // doorbell) once the process no longer maps it so, which the module docs state with the
        // window no user-space check closes (an unmap during a running dispatch). Nothing is
        // released: the pages are the process's.
        unsafe { HostPages::external(ptr, len, Box::new(|| {})) }.ok_or(Errno::INVAL)
    }

    /// Whether `inode` is one of this system's files.
    fn own_file(&self, inode: u64) -> bool {
        inode == self.kfd_id.1 || inode == self.render_id.1
    }

    /// `FREE_MEMORY_OF_GPU`.
    fn free(&self, a: &FreeMemoryOfGpuArgs) -> Result<(), Errno> {
        let mut bos = lock(&self.bos);
        sim(self.kfd.free_memory_of_gpu(a))?;
        if let Some(bo) = bos.by_handle.remove(&a.handle)
            && matches!(bo.storage, Storage::Checked { .. })
        {
            self.checked.fetch_sub(1, Ordering::AcqRel);
        }
        crate::interpose::trace(format_args!("FREE handle {:#x}", a.handle));
        Ok(())
    }

    /// `MAP_MEMORY_TO_GPU` / `UNMAP_MEMORY_FROM_GPU` (`kfd_ioctl_map_memory_to_gpu`): no devices
    /// or `n_success` past them is `EINVAL`, the device array is read (`EFAULT`); a revoked
    /// import cannot be mapped again (`EFAULT`, as the driver's `get_user_pages` of its gone
    /// pages).
    fn map(&self, map: bool, handle: u64, devices: u64, n_devices: u32, n_success: &mut u32) -> Result<(), Errno> {
        if n_devices == 0 || *n_success > n_devices {
            return Err(Errno::INVAL);
        }
        if n_devices > MAX_DEVICES {
            return Err(Errno::NOMEM);
        }
        let mut gpus = vec![0u32; n_devices as usize];
        copy_in(devices, gpus.as_mut_bytes())?;
        let bos = lock(&self.bos);
        if map && let Some(Bo { storage: Storage::Revoked { host, why }, .. }) = bos.by_handle.get(&handle) {
            crate::interpose::trace(format_args!("MAP of revoked USERPTR {host:#x} ({why}): EFAULT"));
            return Err(Errno::FAULT);
        }
        if map {
            let mut m =
                MapMemoryToGpuArgs { handle, device_ids_array_ptr: devices, n_devices: 0, n_success: *n_success };
            let r = sim(self.kfd.map_memory_to_gpu(&mut m, &gpus));
            *n_success = m.n_success;
            r
        } else {
            let mut m =
                UnmapMemoryFromGpuArgs { handle, device_ids_array_ptr: devices, n_devices: 0, n_success: *n_success };
            let r = sim(self.kfd.unmap_memory_from_gpu(&mut m, &gpus));
            *n_success = m.n_success;
            r
        }
    }

    /// Revoke every checked import whose range the process no longer maps as at the import:
    /// the GPU's view of it becomes fresh unmapped pages, so its accesses fault.
    pub fn check_imports(&self) {
        if self.checked.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut bos = lock(&self.bos);
        let vmas = maps::read_self();
        let mem = self.kfd.gpu().memory();
        for (handle, bo) in bos.by_handle.iter_mut() {
            let Storage::Checked { host, len, pieces } = &bo.storage else { continue };
            let now = maps::pieces(&vmas, *host, *len);
            if now.as_ref() == Some(pieces) {
                continue;
            }
            let why = match now {
                None => "the process unmapped it (or made it read-only)".to_string(),
                Some(_) => "the process maps other memory there now".to_string(),
            };
            let host = *host;
            // The GPU's registration goes at once; what stands in its place is unmapped, so a
            // GPU access is a fault (a memory exception), never a write into the process.
            let mapped = mem.allocation(bo.va).is_some_and(|(_, _, m)| m);
            let _ = mem.free(bo.va);
            if let Some(fresh) = HostPages::new(bo.bytes) {
                let _ = mem.adopt(bo.va, &Arc::new(fresh), 0, bo.bytes);
            }
            eprintln!(
                "hcq-vkgsl: USERPTR {host:#x} + {:#x} (handle {handle:#x}, GPU VA {:#x}{}) revoked: {why}; a GPU \
                 access to it faults",
                bo.bytes,
                bo.va,
                if mapped { ", mapped" } else { "" }
            );
            bo.storage = Storage::Revoked { host, why };
            self.checked.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The CP's check before a pass: only while a checked import exists, and then when a
    /// doorbell moved since the last check or [`CP_CHECK_EVERY`] passed.
    fn cp_check(&self) {
        if self.checked.load(Ordering::Acquire) == 0 {
            return;
        }
        let bells: Vec<u64> =
            self.kfd.gpu().doorbell_page().iter().map(|d| d.load(Ordering::Acquire)).collect::<Vec<_>>();
        {
            let mut seen = lock(&self.cp_seen);
            if seen.0 == bells && seen.1.elapsed() < CP_CHECK_EVERY {
                return;
            }
            *seen = (bells, Instant::now());
        }
        self.check_imports();
    }
}

/// A new open file description of `fd`'s memfd (`/proc/self/fd`), read-write.
fn reopen(fd: BorrowedFd<'_>, cloexec: bool) -> Result<OwnedFd, Errno> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let mut flags = rustix::fs::OFlags::RDWR;
    if cloexec {
        flags |= rustix::fs::OFlags::CLOEXEC;
    }
    rustix::fs::open(path.as_str(), flags, rustix::fs::Mode::empty())
}

/// The device's own mapping of the shared pages at `host` (`mremap` of size 0), as storage that
/// unmaps it when released; `None` where the kernel refuses.
fn alias(host: u64, len: usize) -> Option<HostPages> {
    // SAFETY: mremap with old size 0 makes a second mapping of the same pages of a shared mapping
    // at a kernel-chosen address (`host..host + len` is one shared mapping, checked by the
    // caller); it aliases no Rust object, and the client's mapping is unchanged.
    let own = unsafe { libc::mremap(host as *mut libc::c_void, 0, len, libc::MREMAP_MAYMOVE) };
    if own == libc::MAP_FAILED {
        return None;
    }
    let ptr = NonNull::new(own.cast::<u8>())?;
    let at = ptr.as_ptr() as usize;
    let release = Box::new(move || {
        // SAFETY: the device's own alias, which nothing else unmaps, unused by now.
        unsafe { libc::munmap(at as *mut libc::c_void, len) };
    });
    // SAFETY: the alias is `len` bytes (whole pages, page-aligned) of shared memory, mapped until
    // `release`; the GPU reaches it through atomics, the process through its own mapping.
    let pages = unsafe { HostPages::external(ptr, len, release) };
    if pages.is_none() {
        // SAFETY: our own alias, not handed out.
        unsafe { libc::munmap(own, len) };
    }
    pages
}

// ---------------------------------------------------------------- ioctls

/// Said once per process for each request not simulated (stderr).
static SAID: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn say_once(key: u32, what: &str) {
    let mut said = lock(&SAID);
    if !said.contains(&key) {
        said.push(key);
        eprintln!("hcq-vkgsl: {what}");
    }
}

/// amdkfd's request names by number (`kfd_ioctl.h`), for what is not simulated.
fn kfd_name(nr: u32) -> Option<&'static str> {
    Some(match nr {
        0x04 => "SET_MEMORY_POLICY",
        0x05 => "GET_CLOCK_COUNTERS",
        0x06 => "GET_PROCESS_APERTURES",
        0x07 => "UPDATE_QUEUE",
        0x0d..=0x10 => "DBG_*_DEPRECATED",
        0x11 => "SET_SCRATCH_BACKING_VA",
        0x12 => "GET_TILE_CONFIG",
        0x13 => "SET_TRAP_HANDLER",
        0x14 => "GET_PROCESS_APERTURES_NEW",
        0x1a => "SET_CU_MASK",
        0x1b => "GET_QUEUE_WAVE_STATE",
        0x1c => "GET_DMABUF_INFO",
        0x1d => "IMPORT_DMABUF",
        0x1e => "ALLOC_QUEUE_GWS",
        0x1f => "SMI_EVENTS",
        0x20 => "SVM",
        0x21 => "SET_XNACK_MODE",
        0x22 => "CRIU_OP",
        0x23 => "AVAILABLE_MEMORY",
        0x24 => "EXPORT_DMABUF",
        0x26 => "DBG_TRAP",
        _ => return None,
    })
}

/// `kfd_ioctl`'s argument protocol around `f` (see the module docs): `kernel` is the kernel's
/// request (its direction), `req` the user's (its size: the bytes copied both ways; past the
/// kernel's struct they mean nothing and go back as they came, or zeroed for a read-only request).
fn call<T: FromBytes + IntoBytes + Immutable + KnownLayout>(
    req: u32,
    kernel: u32,
    arg: u64,
    f: impl FnOnce(&mut T) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let user = (req >> 16 & 0x3fff) as usize;
    let kdir = kernel >> 30;
    let mut buf = vec![0u8; user.max(size_of::<T>())];
    if kdir & IOC_WRITE != 0 {
        copy_in(arg, &mut buf[..user])?;
    }
    let mut t = T::read_from_bytes(&buf[..size_of::<T>()]).map_err(|_| Errno::INVAL)?;
    let r = f(&mut t);
    if kdir & IOC_READ != 0 {
        buf[..size_of::<T>()].copy_from_slice(t.as_bytes());
        copy_out(arg, &buf[..user])?;
    }
    r
}

/// One open `/dev/kfd`.
#[derive(Debug)]
pub struct VKfd {
    sys: Arc<AmdSystem>,
}

impl VKfd {
    /// A descriptor's device over the process's system.
    pub fn new(sys: Arc<AmdSystem>) -> VKfd {
        VKfd { sys }
    }

    /// One ioctl: `request` with the client's argument pointer `arg`.
    pub fn ioctl(&self, request: u32, arg: u64) -> Result<(), Errno> {
        self.sys.check_imports();
        let r = self.dispatch(request, arg);
        self.sys.report_fault();
        r
    }

    fn dispatch(&self, req: u32, arg: u64) -> Result<(), Errno> {
        let (s, k) = (&self.sys, &self.sys.kfd);
        match req & 0xff {
            0x01 => call(req, IOC_GET_VERSION, arg, |a: &mut GetVersionArgs| {
                *a = sim(k.get_version())?;
                Ok(())
            }),
            0x02 => call(req, IOC_CREATE_QUEUE, arg, |a: &mut CreateQueueArgs| {
                sim(k.create_queue(a))?;
                // The doorbell's byte in the frame, at the frame's offset in our memfd.
                let (_, byte) = mmap::doorbell_pages(a.doorbell_offset);
                a.doorbell_offset = DOORBELL_FILE_OFFSET + byte;
                crate::interpose::trace(format_args!(
                    "CREATE_QUEUE type {} ring {:#x}+{:#x}: queue {}, doorbell offset {:#x}",
                    a.queue_type, a.ring_base_address, a.ring_size, a.queue_id, a.doorbell_offset
                ));
                Ok(())
            }),
            0x03 => call(req, IOC_DESTROY_QUEUE, arg, |a: &mut DestroyQueueArgs| sim(k.destroy_queue(a))),
            0x08 => call(req, IOC_CREATE_EVENT, arg, |a: &mut CreateEventArgs| sim(k.create_event(a))),
            0x09 => call(req, IOC_DESTROY_EVENT, arg, |a: &mut DestroyEventArgs| sim(k.destroy_event(a))),
            0x0a => call(req, IOC_SET_EVENT, arg, |a: &mut SetEventArgs| sim(k.set_event(a))),
            0x0b => call(req, IOC_RESET_EVENT, arg, |a: &mut ResetEventArgs| sim(k.reset_event(a))),
            0x0c => call(req, IOC_WAIT_EVENTS, arg, |a: &mut WaitEventsArgs| self.wait_events(a)),
            0x15 => call(req, IOC_ACQUIRE_VM, arg, |a: &mut AcquireVmArgs| {
                // kfd_ioctl_acquire_vm: a descriptor that is not open, or not this GPU's render
                // node (amdgpu_file_to_fpriv), is EINVAL.
                // CAST: the kernel's fget takes the number as an int.
                if !s.is_render(a.drm_fd as i32) {
                    return Err(Errno::INVAL);
                }
                let mut v = *a;
                sim(k.acquire_vm(&mut v))
            }),
            0x16 => call(req, IOC_ALLOC_MEMORY_OF_GPU, arg, |a: &mut AllocMemoryOfGpuArgs| s.alloc(a)),
            0x17 => call(req, IOC_FREE_MEMORY_OF_GPU, arg, |a: &mut FreeMemoryOfGpuArgs| s.free(a)),
            0x18 => call(req, IOC_MAP_MEMORY_TO_GPU, arg, |a: &mut MapMemoryToGpuArgs| {
                s.map(true, a.handle, a.device_ids_array_ptr, a.n_devices, &mut a.n_success)
            }),
            0x19 => call(req, IOC_UNMAP_MEMORY_FROM_GPU, arg, |a: &mut UnmapMemoryFromGpuArgs| {
                s.map(false, a.handle, a.device_ids_array_ptr, a.n_devices, &mut a.n_success)
            }),
            0x25 => call(req, IOC_RUNTIME_ENABLE, arg, |a: &mut RuntimeEnableArgs| sim(k.runtime_enable(a))),
            nr => {
                if let Some(name) = kfd_name(nr) {
                    say_once(nr, &format!("AMDKFD_IOC_{name} is not simulated by the virtual KFD: EINVAL"));
                }
                Err(Errno::INVAL)
            }
        }
    }

    /// `kfd_wait_on_events`: the entries are read from `events_ptr` (`EFAULT`), an unknown event
    /// is `EINVAL`; after the wait the exception data of the events that fired is written back.
    fn wait_events(&self, a: &mut WaitEventsArgs) -> Result<(), Errno> {
        if a.num_events > MAX_WAIT_EVENTS {
            return Err(Errno::NOMEM);
        }
        let n = a.num_events as usize;
        let mut events = vec![EventData::default(); n];
        copy_in(a.events_ptr, events.as_mut_bytes())?;
        let before = events.clone();
        sim(self.sys.kfd.wait_events(a, &mut events))?;
        let stride = size_of::<EventData>() as u64;
        for (i, (e, b)) in events.iter().zip(&before).enumerate() {
            if e.exception != b.exception {
                // The whole array was read from there, so the sum does not overflow.
                copy_out(a.events_ptr.wrapping_add(i as u64 * stride), e.exception.as_bytes())?;
            }
        }
        Ok(())
    }
}

/// One open render node of the AMD GPU: buffer objects are mapped from it; its only ioctl is
/// `DRM_IOCTL_VERSION` (`amdgpu`): the amdgpu DRM interface itself (GEM, command submission)
/// is not simulated (`EINVAL`, as `drm_ioctl` answers a request it has no entry for, said once).
#[derive(Debug)]
pub struct VAmdRender {
    _sys: Arc<AmdSystem>,
}

impl VAmdRender {
    /// A descriptor's device over the process's system.
    pub fn new(sys: Arc<AmdSystem>) -> VAmdRender {
        VAmdRender { _sys: sys }
    }

    /// One ioctl.
    pub fn ioctl(&self, req: u32, arg: u64) -> Result<(), Errno> {
        use hcq_qcom::msm::uapi::{DRM_IOCTL_TYPE, DRM_IOCTL_VERSION, DrmVersion};
        if req >> 8 & 0xff == DRM_IOCTL_TYPE && req & 0xff == 0 {
            return drm_call(req, DRM_IOCTL_VERSION, arg, |a: &mut DrmVersion| {
                (a.version_major, a.version_minor, a.version_patchlevel) = DRM_VERSION;
                for (buf, len, text) in [
                    (a.name, &mut a.name_len, DRM_NAME),
                    (a.date, &mut a.date_len, DRM_DATE),
                    (a.desc, &mut a.desc_len, DRM_DESC),
                ] {
                    let n = usize::try_from(*len).unwrap_or(usize::MAX).min(text.len());
                    *len = text.len() as u64;
                    if n > 0 && buf != 0 {
                        copy_out(buf, &text.as_bytes()[..n])?;
                    }
                }
                Ok(())
            });
        }
        say_once(req, &format!("ioctl {req:#010x} on the AMD render node is not simulated (only KFD is): EINVAL"));
        Err(Errno::INVAL)
    }
}

/// `drm_ioctl`'s argument protocol (see `crate::render`).
fn drm_call<T: FromBytes + IntoBytes + Immutable + KnownLayout>(
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
