//! The C boundary: `open`/`openat` (and `open64`, `openat64`, glibc's fortified `__open_2`
//! family) of `/dev/kgsl-3d0` make a KGSL device, of the MSM render node
//! (`/dev/dri/renderD128`, or `$HCQ_VKGSL_RENDER_NODE`) an MSM one; `ioctl` and `close` on
//! their descriptors reach them,
//! and every other call goes to the next definition (libc's) untouched, found with
//! `dlsym(RTLD_NEXT)`. Nothing here unwinds into C: each entry runs its Rust part under
//! `catch_unwind` and turns a panic into `EIO`.
//!
//! `mmap`/`munmap` are not intercepted: the descriptor is a memfd that the kernel maps itself
//! (tinygrad calls libc's `mmap` through its own handle, which no preload could catch).

use crate::device::VDev;
use crate::render::VMsm;
use libc::{c_char, c_int, c_uint, c_ulong, c_void};
use std::ffi::CStr;
use std::os::fd::BorrowedFd;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The device node this library answers for.
pub const NODE: &CStr = c"/dev/kgsl-3d0";

/// An open device: what its descriptor's ioctls reach.
pub trait Node: Send + Sync {
    /// One ioctl with the client's argument pointer.
    fn ioctl(&self, request: u32, arg: u64) -> Result<(), rustix::io::Errno>;
}

impl Node for VDev {
    fn ioctl(&self, request: u32, arg: u64) -> Result<(), rustix::io::Errno> {
        VDev::ioctl(self, request, arg)
    }
}

impl Node for VMsm {
    fn ioctl(&self, request: u32, arg: u64) -> Result<(), rustix::io::Errno> {
        VMsm::ioctl(self, request, arg)
    }
}

/// Which device a path opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Kgsl,
    Msm,
}

/// The MSM render node's path (`$HCQ_VKGSL_RENDER_NODE`, else `/dev/dri/renderD128`).
fn render_node() -> &'static [u8] {
    static P: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        use std::os::unix::ffi::OsStrExt;
        std::env::var_os(crate::render::RENDER_NODE_ENV)
            .filter(|p| !p.is_empty())
            .map_or_else(|| crate::render::DEFAULT_RENDER_NODE.as_bytes().to_vec(), |p| p.as_bytes().to_vec())
    })
}

/// Open devices by descriptor, with the process that opened them.
///
/// A child made with `vfork` (CPython's `subprocess` uses it) runs in its parent's memory
/// until it execs, so its `close` of inherited descriptors must not touch this table; a
/// `fork` child has a copy of it but not the device's threads of control. So a device belongs
/// to the process id that opened it, and any other process's calls pass through to libc.
static DEVICES: Mutex<Vec<Open>> = Mutex::new(Vec::new());
/// One open device: its descriptor, the process that opened it, the device.
type Open = (c_int, libc::pid_t, Arc<dyn Node>);
/// How many are open (a lock-free "none" for every other process's ioctls and closes).
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// `HCQ_VKGSL_TRACE=1`: say opens and closes of the device on stderr.
pub(crate) fn trace(what: std::fmt::Arguments<'_>) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("HCQ_VKGSL_TRACE").is_some_and(|v| v == "1")) {
        eprintln!("hcq-vkgsl: {what}");
    }
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}

/// The next definition of `name` (a NUL-terminated symbol), resolved once into `slot`.
fn next(slot: &AtomicUsize, name: &CStr) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p != 0 {
        return p;
    }
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name; it only looks the symbol up.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    slot.store(p, Ordering::Release);
    p
}

macro_rules! real {
    ($slot:ident, $name:literal, $ty:ty) => {{
        static $slot: AtomicUsize = AtomicUsize::new(0);
        let p = next(&$slot, $name);
        if p == 0 {
            None
        } else {
            // SAFETY: `p` is libc's definition of this symbol, whose C signature is `$ty`.
            Some(unsafe { std::mem::transmute::<usize, $ty>(p) })
        }
    }};
}

fn node_kind(path: *const c_char) -> Option<Kind> {
    if path.is_null() {
        return None;
    }
    // SAFETY: open's contract: a non-null path is a NUL-terminated string.
    let p = unsafe { CStr::from_ptr(path) };
    if p == NODE {
        Some(Kind::Kgsl)
    } else if p.to_bytes() == render_node() {
        Some(Kind::Msm)
    } else {
        None
    }
}

/// Open a device: a memfd (close-on-exec when the caller asked for it) behind a new [`VDev`]
/// or [`VMsm`].
fn open_device(flags: c_int, kind: Kind) -> c_int {
    let r = catch_unwind(|| {
        let mfd = if flags & libc::O_CLOEXEC != 0 { libc::MFD_CLOEXEC } else { 0 };
        // SAFETY: memfd_create with a NUL-terminated name; returns a new descriptor or -1.
        let fd = unsafe { libc::memfd_create(c"hcq-vkgsl".as_ptr(), mfd) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
        }
        // SAFETY: `fd` was just created and stays open for this borrow.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let dev: Result<Arc<dyn Node>, rustix::io::Errno> = match kind {
            Kind::Kgsl => VDev::new(borrowed).map(|d| Arc::new(d) as Arc<dyn Node>),
            Kind::Msm => VMsm::new(borrowed).map(|d| Arc::new(d) as Arc<dyn Node>),
        };
        match dev {
            Ok(d) => {
                if let Ok(mut devs) = DEVICES.lock() {
                    trace(format_args!("open {kind:?} node -> memfd {fd}"));
                    // SAFETY: getpid has no preconditions.
                    devs.push((fd, unsafe { libc::getpid() }, d));
                    OPEN.fetch_add(1, Ordering::AcqRel);
                    return Ok(fd);
                }
                // SAFETY: our own descriptor, not handed out.
                unsafe { libc::close(fd) };
                Err(libc::EIO)
            }
            Err(e) => {
                // SAFETY: our own descriptor, not handed out.
                unsafe { libc::close(fd) };
                Err(e.raw_os_error())
            }
        }
    });
    match r {
        Ok(Ok(fd)) => fd,
        Ok(Err(e)) => {
            set_errno(e);
            -1
        }
        Err(_) => {
            set_errno(libc::EIO);
            -1
        }
    }
}

fn device(fd: c_int) -> Option<Arc<dyn Node>> {
    if OPEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    DEVICES.lock().ok()?.iter().find(|(f, p, _)| *f == fd && *p == pid).map(|(_, _, d)| d.clone())
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int;
type Open2Fn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type Openat2Fn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;

fn enosys() -> c_int {
    set_errno(libc::ENOSYS);
    -1
}

// `open` and friends are variadic in C (`mode` only with O_CREAT/O_TMPFILE). On the Linux
// x86-64 and AArch64 calling conventions a variadic integer argument travels in the same
// register as a fixed one, so these definitions read `mode` where the caller put it (garbage
// when it passed none, and then libc does not read it either) and forward it unchanged.

/// `open(2)`.
///
/// # Safety
/// libc's contract for `open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPEN, c"open", OpenFn) {
        // SAFETY: forwarded with the caller's arguments to libc's open.
        Some(f) => unsafe { f(path, flags, mode) },
        None => enosys(),
    }
}

/// `open64`.
///
/// # Safety
/// libc's contract for `open64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPEN64, c"open64", OpenFn) {
        // SAFETY: forwarded with the caller's arguments to libc's open64.
        Some(f) => unsafe { f(path, flags, mode) },
        None => enosys(),
    }
}

/// `openat(2)` (an absolute path ignores `dirfd`, as the kernel does).
///
/// # Safety
/// libc's contract for `openat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPENAT, c"openat", OpenatFn) {
        // SAFETY: forwarded with the caller's arguments to libc's openat.
        Some(f) => unsafe { f(dirfd, path, flags, mode) },
        None => enosys(),
    }
}

/// `openat64`.
///
/// # Safety
/// libc's contract for `openat64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPENAT64, c"openat64", OpenatFn) {
        // SAFETY: forwarded with the caller's arguments to libc's openat64.
        Some(f) => unsafe { f(dirfd, path, flags, mode) },
        None => enosys(),
    }
}

/// glibc's `_FORTIFY_SOURCE` `open` (no mode).
///
/// # Safety
/// glibc's contract for `__open_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPEN_2, c"__open_2", Open2Fn) {
        // SAFETY: forwarded with the caller's arguments to glibc's __open_2.
        Some(f) => unsafe { f(path, flags) },
        None => enosys(),
    }
}

/// glibc's fortified `open64`.
///
/// # Safety
/// glibc's contract for `__open64_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPEN64_2, c"__open64_2", Open2Fn) {
        // SAFETY: forwarded with the caller's arguments to glibc's __open64_2.
        Some(f) => unsafe { f(path, flags) },
        None => enosys(),
    }
}

/// glibc's fortified `openat`.
///
/// # Safety
/// glibc's contract for `__openat_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPENAT_2, c"__openat_2", Openat2Fn) {
        // SAFETY: forwarded with the caller's arguments to glibc's __openat_2.
        Some(f) => unsafe { f(dirfd, path, flags) },
        None => enosys(),
    }
}

/// glibc's fortified `openat64`.
///
/// # Safety
/// glibc's contract for `__openat64_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    if let Some(kind) = node_kind(path) {
        return open_device(flags, kind);
    }
    match real!(REAL_OPENAT64_2, c"__openat64_2", Openat2Fn) {
        // SAFETY: forwarded with the caller's arguments to glibc's __openat64_2.
        Some(f) => unsafe { f(dirfd, path, flags) },
        None => enosys(),
    }
}

type IoctlFn = unsafe extern "C" fn(c_int, c_ulong, *mut c_void) -> c_int;

/// `ioctl(2)`. Variadic in C with one pointer-sized argument, which the Linux x86-64 and
/// AArch64 conventions pass like a fixed one (see `open`).
///
/// # Safety
/// libc's contract for `ioctl`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if let Some(dev) = device(fd) {
        // CAST: Linux ioctl request numbers are 32-bit; the upper half of the long is unused.
        let req = request as u32;
        return match catch_unwind(AssertUnwindSafe(|| dev.ioctl(req, arg as u64))) {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                set_errno(e.raw_os_error());
                -1
            }
            Err(_) => {
                set_errno(libc::EIO);
                -1
            }
        };
    }
    match real!(REAL_IOCTL, c"ioctl", IoctlFn) {
        // SAFETY: forwarded with the caller's arguments to libc's ioctl.
        Some(f) => unsafe { f(fd, request, arg) },
        None => enosys(),
    }
}

type CloseFn = unsafe extern "C" fn(c_int) -> c_int;

/// `close(2)`: a device's descriptor drops the device (its objects go with it, as when the
/// last reference to a KGSL file goes) before the descriptor closes.
///
/// # Safety
/// libc's contract for `close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if OPEN.load(Ordering::Acquire) != 0 {
        let _ = catch_unwind(|| {
            // SAFETY: getpid has no preconditions.
            let pid = unsafe { libc::getpid() };
            let dev = DEVICES.lock().ok().and_then(|mut devs| {
                let i = devs.iter().position(|(f, p, _)| *f == fd && *p == pid)?;
                trace(format_args!("close {fd}: the device goes"));
                OPEN.fetch_sub(1, Ordering::AcqRel);
                Some(devs.swap_remove(i).2)
            });
            drop(dev);
        });
    }
    match real!(REAL_CLOSE, c"close", CloseFn) {
        // SAFETY: forwarded with the caller's argument to libc's close.
        Some(f) => unsafe { f(fd) },
        None => enosys(),
    }
}
