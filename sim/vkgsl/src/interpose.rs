//! The C boundary: `open`/`openat` (and `open64`, `openat64`, glibc's fortified `__open_2`
//! family) of `/dev/kgsl-3d0` make a KGSL device, of the MSM render node
//! (`/dev/dri/renderD128`, or `$HCQ_VKGSL_RENDER_NODE`) an MSM one; `ioctl` and `close` on
//! their descriptors reach them, `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD*)` make another
//! descriptor of the same device (as with a driver's file) or replace one, and `close_range`
//! and `closefrom` close them; every other call goes to the next definition (libc's) untouched,
//! found with `dlsym(RTLD_NEXT)`. Which descriptors are devices is [`crate::fds`]: lock-free for
//! every other descriptor, so `close` stays async-signal-safe and a `fork` child never waits
//! for a lock. A device descriptor closed or replaced behind libc's back (a raw system call)
//! is caught at its next `ioctl`: the file behind the number is no longer the device's memfd,
//! so the entry goes and the call is libc's. Nothing here unwinds into C: each entry runs its
//! Rust part under `catch_unwind` and turns a panic into `EIO`.
//!
//! `mmap`/`munmap` are not intercepted: the descriptor is a memfd that the kernel maps itself
//! (tinygrad calls libc's `mmap` through its own handle, which no preload could catch).

use crate::amd::{AmdSystem, VAmdRender, VKfd};
use crate::device::VDev;
use crate::fds;
use crate::render::VMsm;
use libc::{c_char, c_int, c_uint, c_ulong, c_void};
use std::ffi::CStr;
use std::os::fd::BorrowedFd;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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

impl Node for VKfd {
    fn ioctl(&self, request: u32, arg: u64) -> Result<(), rustix::io::Errno> {
        VKfd::ioctl(self, request, arg)
    }
}

impl Node for VAmdRender {
    fn ioctl(&self, request: u32, arg: u64) -> Result<(), rustix::io::Errno> {
        VAmdRender::ioctl(self, request, arg)
    }
}

/// Which device a path opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Kgsl,
    Msm,
    Kfd,
    AmdRender,
}

/// What a path is to the library.
enum Route {
    /// One of the virtual devices' nodes.
    Device(Kind),
    /// A virtual sysfs file or directory: the path to use instead ([`crate::sysfs`]).
    Redirect(std::ffi::CString),
    /// Anything else.
    Pass,
}

fn route(path: *const c_char) -> Route {
    if let Some(k) = node_kind(path) {
        return Route::Device(k);
    }
    if path.is_null() {
        return Route::Pass;
    }
    // SAFETY: the caller's contract: a non-null path is a NUL-terminated string.
    let p = unsafe { CStr::from_ptr(path) };
    match catch_unwind(|| crate::sysfs::redirect(p)) {
        Ok(Some(to)) => Route::Redirect(to),
        _ => Route::Pass,
    }
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
    } else if p == crate::amd::KFD_NODE {
        Some(Kind::Kfd)
    } else if p == crate::amd::RENDER_NODE {
        Some(Kind::AmdRender)
    } else {
        None
    }
}

/// Open an AMD node: a new open of the process's system's memfd for it.
fn open_amd(flags: c_int, kind: Kind) -> Result<c_int, c_int> {
    let cloexec = flags & libc::O_CLOEXEC != 0;
    let sys = AmdSystem::get().map_err(|e| e.raw_os_error())?;
    let (fd, node): (std::os::fd::OwnedFd, Arc<dyn Node>) = if kind == Kind::Kfd {
        (sys.open_kfd(cloexec).map_err(|e| e.raw_os_error())?, Arc::new(VKfd::new(sys)))
    } else {
        (sys.open_render(cloexec).map_err(|e| e.raw_os_error())?, Arc::new(VAmdRender::new(sys)))
    };
    let file = rustix::fs::fstat(&fd).map(|st| (st.st_dev, st.st_ino)).map_err(|e| e.raw_os_error())?;
    at_fork_once();
    let fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
    trace(format_args!("open {kind:?} node -> {fd}"));
    drop(fds::insert(fd, file, node));
    Ok(fd)
}

/// Open a device: a memfd (close-on-exec when the caller asked for it) behind a new [`VDev`]
/// or [`VMsm`]; the AMD nodes: a new open of their system's memfd ([`open_amd`]).
fn open_device(flags: c_int, kind: Kind) -> c_int {
    let r = catch_unwind(|| {
        if matches!(kind, Kind::Kfd | Kind::AmdRender) {
            return open_amd(flags, kind);
        }
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
            Kind::Kfd | Kind::AmdRender => Err(rustix::io::Errno::INVAL),
        };
        match dev {
            Ok(d) => {
                let file = match rustix::fs::fstat(borrowed) {
                    Ok(st) => (st.st_dev, st.st_ino),
                    Err(e) => {
                        // SAFETY: our own descriptor, not handed out.
                        unsafe { libc::close(fd) };
                        return Err(e.raw_os_error());
                    }
                };
                at_fork_once();
                trace(format_args!("open {kind:?} node -> memfd {fd}"));
                drop(fds::insert(fd, file, d));
                Ok(fd)
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

/// The device at `fd` in this process, if `fd` still refers to the file it was opened as: a
/// descriptor closed behind libc's back (a raw `close` system call) and reused by another file
/// loses its entry here, and its calls go to libc.
fn device(fd: c_int) -> Option<Arc<dyn Node>> {
    if !fds::maybe_ours(fd) {
        return None;
    }
    let e = fds::get(fd)?;
    // SAFETY: fstat of a descriptor number; the kernel answers EBADF if it is not open.
    let now = rustix::fs::fstat(unsafe { BorrowedFd::borrow_raw(fd) }).ok().map(|st| (st.st_dev, st.st_ino));
    if now == Some(e.file) {
        return Some(e.node);
    }
    trace(format_args!("descriptor {fd} is no longer the device it was opened as: its entry goes"));
    let gone = fds::remove_if(fd, |x| Arc::ptr_eq(&x.node, &e.node) && x.file == e.file);
    drop(e);
    drop(gone);
    None
}

/// Identity of the file behind `fd` now.
fn file_of(fd: c_int) -> Option<fds::FileId> {
    // SAFETY: fstat of a descriptor number; the kernel answers EBADF if it is not open.
    rustix::fs::fstat(unsafe { BorrowedFd::borrow_raw(fd) }).ok().map(|st| (st.st_dev, st.st_ino))
}

extern "C" fn before_fork() {
    // The AMD system's lock first: its creation takes the table's lock under it.
    let _ = catch_unwind(crate::amd::before_fork);
    let _ = catch_unwind(fds::before_fork);
}

extern "C" fn after_fork() {
    let _ = catch_unwind(fds::after_fork);
    let _ = catch_unwind(crate::amd::after_fork);
}

/// Register the fork handlers ([`fds::before_fork`]) once, with the first device.
fn at_fork_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers three `extern "C" fn()` that never unwind; no preconditions.
        let r = unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
        if r != 0 {
            eprintln!(
                "hcq-vkgsl: pthread_atfork failed ({r}): a fork while a device is being opened may hang the child"
            );
        }
    });
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
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPEN, c"open", OpenFn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to libc's open, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(to.as_ptr(), flags, mode) },
            // SAFETY: forwarded with the caller's arguments to libc's open.
            None => unsafe { f(path, flags, mode) },
        },
        None => enosys(),
    }
}

/// `open64`.
///
/// # Safety
/// libc's contract for `open64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPEN64, c"open64", OpenFn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to libc's open64, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(to.as_ptr(), flags, mode) },
            // SAFETY: forwarded with the caller's arguments to libc's open64.
            None => unsafe { f(path, flags, mode) },
        },
        None => enosys(),
    }
}

/// `openat(2)` (an absolute path ignores `dirfd`, as the kernel does).
///
/// # Safety
/// libc's contract for `openat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPENAT, c"openat", OpenatFn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to libc's openat, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(dirfd, to.as_ptr(), flags, mode) },
            // SAFETY: forwarded with the caller's arguments to libc's openat.
            None => unsafe { f(dirfd, path, flags, mode) },
        },
        None => enosys(),
    }
}

/// `openat64`.
///
/// # Safety
/// libc's contract for `openat64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPENAT64, c"openat64", OpenatFn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to libc's openat64, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(dirfd, to.as_ptr(), flags, mode) },
            // SAFETY: forwarded with the caller's arguments to libc's openat64.
            None => unsafe { f(dirfd, path, flags, mode) },
        },
        None => enosys(),
    }
}

/// glibc's `_FORTIFY_SOURCE` `open` (no mode).
///
/// # Safety
/// glibc's contract for `__open_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPEN_2, c"__open_2", Open2Fn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to glibc's __open_2, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(to.as_ptr(), flags) },
            // SAFETY: forwarded with the caller's arguments to glibc's __open_2.
            None => unsafe { f(path, flags) },
        },
        None => enosys(),
    }
}

/// glibc's fortified `open64`.
///
/// # Safety
/// glibc's contract for `__open64_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPEN64_2, c"__open64_2", Open2Fn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to glibc's __open64_2, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(to.as_ptr(), flags) },
            // SAFETY: forwarded with the caller's arguments to glibc's __open64_2.
            None => unsafe { f(path, flags) },
        },
        None => enosys(),
    }
}

/// glibc's fortified `openat`.
///
/// # Safety
/// glibc's contract for `__openat_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPENAT_2, c"__openat_2", Openat2Fn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to glibc's __openat_2, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(dirfd, to.as_ptr(), flags) },
            // SAFETY: forwarded with the caller's arguments to glibc's __openat_2.
            None => unsafe { f(dirfd, path, flags) },
        },
        None => enosys(),
    }
}

/// glibc's fortified `openat64`.
///
/// # Safety
/// glibc's contract for `__openat64_2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let to = match route(path) {
        Route::Device(kind) => return open_device(flags, kind),
        Route::Redirect(to) => Some(to),
        Route::Pass => None,
    };
    match real!(REAL_OPENAT64_2, c"__openat64_2", Openat2Fn) {
        Some(f) => match &to {
            // SAFETY: the caller's arguments to glibc's __openat64_2, the path redirected to the virtual
            // sysfs tree (a NUL-terminated string alive for the call).
            Some(to) => unsafe { f(dirfd, to.as_ptr(), flags) },
            // SAFETY: forwarded with the caller's arguments to glibc's __openat64_2.
            None => unsafe { f(dirfd, path, flags) },
        },
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

/// `close(2)`: a device's descriptor drops its entry (the device goes with its last
/// descriptor: its objects with it, as when the last reference to a KGSL file goes) before the
/// descriptor closes. Any other descriptor goes straight to libc without a lock
/// ([`fds::maybe_ours`]), so `close` stays async-signal-safe for them.
///
/// # Safety
/// libc's contract for `close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if fds::is_internal(fd) {
        // A device's own descriptor, which on a real system would not exist (a client closing
        // every number, say): nothing is open there as far as the client knows.
        set_errno(libc::EBADF);
        return -1;
    }
    if fds::maybe_ours(fd) {
        let _ = catch_unwind(|| {
            if let Some(e) = fds::remove(fd) {
                trace(format_args!("close {fd}: its device entry goes"));
                drop(e);
            }
        });
    }
    match real!(REAL_CLOSE, c"close", CloseFn) {
        // SAFETY: forwarded with the caller's argument to libc's close.
        Some(f) => unsafe { f(fd) },
        None => enosys(),
    }
}

/// After `new` became a duplicate of `old` (or was replaced by one): `new` drops the device it
/// was, and reaches `old`'s device if `old` is one.
fn duplicated(old: c_int, new: c_int) {
    if !(fds::maybe_ours(old) || fds::maybe_ours(new)) {
        return;
    }
    let _ = catch_unwind(|| {
        let replaced = fds::duplicate(old, new, file_of(new));
        if replaced.is_some() {
            trace(format_args!("descriptor {new} replaced by a duplicate of {old}: its device entry goes"));
        }
        drop(replaced);
    });
}

type DupFn = unsafe extern "C" fn(c_int) -> c_int;
type Dup2Fn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type Dup3Fn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;

/// `dup(2)`: a duplicate of a device's descriptor reaches the same device (as a duplicate of a
/// driver's descriptor reaches the same open file).
///
/// # Safety
/// libc's contract for `dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(old: c_int) -> c_int {
    let r = match real!(REAL_DUP, c"dup", DupFn) {
        // SAFETY: forwarded with the caller's argument to libc's dup.
        Some(f) => unsafe { f(old) },
        None => return enosys(),
    };
    if r >= 0 {
        duplicated(old, r);
    }
    r
}

/// `dup2(2)`: `new`, if it was a device's descriptor, is closed (its entry goes); it becomes
/// `old`'s device if `old` is one.
///
/// # Safety
/// libc's contract for `dup2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    if fds::is_internal(new) {
        // Onto a device's own descriptor: refused as a dup2 racing an open is.
        set_errno(libc::EBUSY);
        return -1;
    }
    let r = match real!(REAL_DUP2, c"dup2", Dup2Fn) {
        // SAFETY: forwarded with the caller's arguments to libc's dup2.
        Some(f) => unsafe { f(old, new) },
        None => return enosys(),
    };
    if r >= 0 && old != new {
        duplicated(old, new);
    }
    r
}

/// `dup3(2)`: as [`dup2`].
///
/// # Safety
/// libc's contract for `dup3`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    if fds::is_internal(new) {
        // Onto a device's own descriptor: refused as a dup2 racing an open is.
        set_errno(libc::EBUSY);
        return -1;
    }
    let r = match real!(REAL_DUP3, c"dup3", Dup3Fn) {
        // SAFETY: forwarded with the caller's arguments to libc's dup3.
        Some(f) => unsafe { f(old, new, flags) },
        None => return enosys(),
    };
    if r >= 0 {
        duplicated(old, new);
    }
    r
}

type FcntlFn = unsafe extern "C" fn(c_int, c_int, ...) -> c_int;

/// `fcntl(2)` (variadic in C with at most one integer or pointer argument, passed like a fixed
/// one, see `open`): `F_DUPFD` and `F_DUPFD_CLOEXEC` of a device's descriptor reach the same
/// device, as [`dup`]; everything else is libc's.
///
/// # Safety
/// libc's contract for `fcntl`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let r = match real!(REAL_FCNTL, c"fcntl", FcntlFn) {
        // SAFETY: forwarded with the caller's arguments to libc's fcntl (a variadic call).
        Some(f) => unsafe { f(fd, cmd, arg) },
        None => return enosys(),
    };
    if r >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
        duplicated(fd, r);
    }
    r
}

/// glibc's `fcntl64` (what `fcntl` is with 64-bit file offsets): as [`fcntl`].
///
/// # Safety
/// libc's contract for `fcntl64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let r = match real!(REAL_FCNTL64, c"fcntl64", FcntlFn) {
        // SAFETY: forwarded with the caller's arguments to glibc's fcntl64 (a variadic call).
        Some(f) => unsafe { f(fd, cmd, arg) },
        None => return enosys(),
    };
    if r >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
        duplicated(fd, r);
    }
    r
}

/// Drop the entries of this process's devices at `first..=last` (their descriptors were closed).
fn closed_range(first: c_uint, last: c_uint) {
    if !fds::any_in(first, last) {
        return;
    }
    let _ = catch_unwind(|| {
        let gone = fds::remove_range(first, last);
        if !gone.is_empty() {
            trace(format_args!("close_range {first}..={last}: {} device entries go", gone.len()));
        }
        drop(gone);
    });
}

type CloseRangeFn = unsafe extern "C" fn(c_uint, c_uint, c_int) -> c_int;

/// libc's `close_range` (the system call where libc has none).
fn real_close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    match real!(REAL_CLOSE_RANGE, c"close_range", CloseRangeFn) {
        // SAFETY: forwarded with the caller's arguments to libc's close_range.
        Some(f) => unsafe { f(first, last, flags) },
        // SAFETY: the system call itself, where libc has no wrapper; no memory is passed.
        None => unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) as c_int },
    }
}

/// `close_range` over `first..=last` except the devices' own descriptors ([`fds::internal_in`]),
/// then the devices among the closed descriptors drop their entries (unless
/// `CLOSE_RANGE_CLOEXEC`, which only marks them).
fn close_range_around_devices(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let skips = fds::internal_in(first, last);
    if skips.is_empty() {
        let r = real_close_range(first, last, flags);
        // CAST: CLOSE_RANGE_CLOEXEC is a small flag bit.
        if r == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
            closed_range(first, last);
        }
        return r;
    }
    // `internal_in` gives numbers below 2^16, so `skip + 1` does not overflow.
    let mut at = first;
    let mut r = 0;
    for skip in skips {
        if skip > at {
            r = real_close_range(at, skip - 1, flags);
            if r != 0 {
                return r;
            }
        }
        at = skip + 1;
    }
    if at <= last {
        r = real_close_range(at, last, flags);
    }
    // CAST: CLOSE_RANGE_CLOEXEC is a small flag bit.
    if r == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        closed_range(first, last);
    }
    r
}

/// `close_range(2)`: as libc's, except that a device's own descriptors stay open (they would
/// not exist on a real system) and the devices among the closed descriptors drop their
/// entries. Lock-free unless one of the numbers is a device of this process (see [`close`]).
///
/// # Safety
/// libc's contract for `close_range`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    close_range_around_devices(first, last, flags)
}

type ClosefromFn = unsafe extern "C" fn(c_int);

/// glibc's `closefrom(3)`: as [`close_range`] from `low` up.
///
/// # Safety
/// libc's contract for `closefrom`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn closefrom(low: c_int) {
    // CAST: a negative start closes from 0.
    let low = low.max(0) as c_uint;
    if fds::internal_in(low, c_uint::MAX).is_empty()
        && let Some(f) = real!(REAL_CLOSEFROM, c"closefrom", ClosefromFn)
    {
        // SAFETY: forwarded with the caller's argument to glibc's closefrom.
        unsafe { f(low as c_int) };
        closed_range(low, c_uint::MAX);
        return;
    }
    close_range_around_devices(low, c_uint::MAX, 0);
}

/// The caller's path, or where [`crate::sysfs`] redirects it (kept alive in `to`).
fn sysfs_path(path: *const c_char, to: &mut Option<std::ffi::CString>) -> *const c_char {
    if let Route::Redirect(t) = route(path) {
        return to.insert(t).as_ptr();
    }
    path
}

/// A libc function taking a path that may be one of the virtual sysfs files: `$call` runs with
/// `$p` the path to use (the caller's, or the redirected one).
macro_rules! with_path {
    ($slot:ident, $name:literal, $ty:ty, $path:expr, |$f:ident, $p:ident| $call:expr) => {{
        let mut keep = None;
        let $p = sysfs_path($path, &mut keep);
        match real!($slot, $name, $ty) {
            // SAFETY: forwarded to libc's definition with the caller's arguments, the path
            // possibly redirected to the virtual sysfs tree (NUL-terminated, alive in `keep`).
            Some($f) => unsafe { $call },
            None => enosys(),
        }
    }};
}

type OpendirFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;

/// `opendir(3)`: the virtual sysfs directories are listed from their tree ([`crate::sysfs`]).
///
/// # Safety
/// libc's contract for `opendir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut c_void {
    let mut keep = None;
    let p = sysfs_path(path, &mut keep);
    match real!(REAL_OPENDIR, c"opendir", OpendirFn) {
        // SAFETY: forwarded to libc's opendir, the path possibly redirected (NUL-terminated,
        // alive in `keep`).
        Some(f) => unsafe { f(p) },
        None => {
            set_errno(libc::ENOSYS);
            std::ptr::null_mut()
        }
    }
}

type StatFn = unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int;
type FstatatFn = unsafe extern "C" fn(c_int, *const c_char, *mut c_void, c_int) -> c_int;
type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type FaccessatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_int) -> c_int;
type StatxFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint, *mut c_void) -> c_int;

/// `stat(2)` (the virtual sysfs paths are their tree's).
///
/// # Safety
/// libc's contract for `stat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stat(path: *const c_char, buf: *mut c_void) -> c_int {
    with_path!(REAL_STAT, c"stat", StatFn, path, |f, p| f(p, buf))
}

/// `stat64`.
///
/// # Safety
/// libc's contract for `stat64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stat64(path: *const c_char, buf: *mut c_void) -> c_int {
    with_path!(REAL_STAT64, c"stat64", StatFn, path, |f, p| f(p, buf))
}

/// `lstat(2)`.
///
/// # Safety
/// libc's contract for `lstat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lstat(path: *const c_char, buf: *mut c_void) -> c_int {
    with_path!(REAL_LSTAT, c"lstat", StatFn, path, |f, p| f(p, buf))
}

/// `lstat64`.
///
/// # Safety
/// libc's contract for `lstat64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lstat64(path: *const c_char, buf: *mut c_void) -> c_int {
    with_path!(REAL_LSTAT64, c"lstat64", StatFn, path, |f, p| f(p, buf))
}

/// `fstatat(2)` (an absolute path ignores `dirfd`, as the kernel does).
///
/// # Safety
/// libc's contract for `fstatat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstatat(dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int) -> c_int {
    with_path!(REAL_FSTATAT, c"fstatat", FstatatFn, path, |f, p| f(dirfd, p, buf, flags))
}

/// `fstatat64`.
///
/// # Safety
/// libc's contract for `fstatat64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstatat64(dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int) -> c_int {
    with_path!(REAL_FSTATAT64, c"fstatat64", FstatatFn, path, |f, p| f(dirfd, p, buf, flags))
}

/// `statx(2)`.
///
/// # Safety
/// libc's contract for `statx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut c_void,
) -> c_int {
    with_path!(REAL_STATX, c"statx", StatxFn, path, |f, p| f(dirfd, p, flags, mask, buf))
}

/// `access(2)`.
///
/// # Safety
/// libc's contract for `access`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    with_path!(REAL_ACCESS, c"access", AccessFn, path, |f, p| f(p, mode))
}

/// `faccessat(2)`.
///
/// # Safety
/// libc's contract for `faccessat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int {
    with_path!(REAL_FACCESSAT, c"faccessat", FaccessatFn, path, |f, p| f(dirfd, p, mode, flags))
}
