//! Executable memory for loaded kernels (std; Linux and macOS on x86-64 and AArch64).
//!
//! [`ExecMemory`] is an anonymous private mapping that is **never writable and executable at
//! once** (W^X): it is mapped read+write, filled, then switched to read+execute with `mprotect`,
//! and unmapped on drop. On AArch64 the instruction cache is synchronised over the range
//! (`__clear_cache`) before any code in it can run.
//!
//! The mapping calls go through `rustix` (`mmap_anonymous`, `mprotect`, `munmap`); the symbol
//! lookup stays on `libc`'s `dlopen`/`dlsym`, which rustix does not offer (they are the dynamic
//! loader's, not system calls).
//!
//! [`LoadedObject`] is an [`ElfObject`] relocated into such a mapping, with its entry address.
//! [`default_resolver`] resolves a small allow-list of libc/libm functions that clang may call
//! from kernels ([`DEFAULT_IMPORTS`]).
//!
//! Limits:
//! - The whole image, writable sections (`.data`, `.bss`) included, is read+execute after
//!   loading, so a kernel that writes a global variable faults. tinygrad kernels never do.
//! - macOS with the hardened runtime needs `MAP_JIT`, which this module does not use (plain
//!   `mmap` + `mprotect` works for ordinary, non-hardened processes). Tested on x86-64 Linux
//!   natively and on AArch64 Linux under `qemu-aarch64`; macOS is untested.

use crate::elf::{ElfObject, Machine};
use core::ffi::{CStr, c_void};
use core::ptr::NonNull;
use hcq::error::ResultExt;
use hcq::{Error, Result};

/// An anonymous mapping that is first writable, then only readable and executable.
#[derive(Debug)]
pub struct ExecMemory {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: an `ExecMemory` owns its mapping exclusively and never writes to it after
// construction (it is read+execute), so sharing or moving it across threads is sound.
unsafe impl Send for ExecMemory {}
// SAFETY: see `Send`: after construction the mapping is immutable.
unsafe impl Sync for ExecMemory {}

fn os(what: &'static str) -> impl FnOnce(rustix::io::Errno) -> Error {
    move |e| Error::Os { what, errno: e.raw_os_error() }
}

fn page_size() -> usize {
    rustix::param::page_size()
}

/// Bytes of RAM the host has: the CPU device's memory size in its
/// [`DeviceLimits`](hcq::device::DeviceLimits). `sysinfo(2)` on Linux, `sysconf` elsewhere.
pub fn host_memory_bytes() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let info = rustix::system::sysinfo();
        // CAST: `totalram` is a C `unsigned long`, u32 on 32-bit targets.
        #[allow(clippy::useless_conversion)]
        u64::from(info.totalram).saturating_mul(u64::from(info.mem_unit.max(1)))
    }
    #[cfg(not(target_os = "linux"))]
    {
        // rustix has no portable physical-memory query; sysconf(_SC_PHYS_PAGES) is POSIX-ish
        // and present on macOS.
        // SAFETY: sysconf has no preconditions; it returns -1 on error, handled below.
        let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
        u64::try_from(pages).unwrap_or(0).saturating_mul(page_size() as u64)
    }
}

impl ExecMemory {
    /// Map at least `len` bytes (rounded up to whole pages, at least one) read+write and
    /// zeroed, let `fill` write them (it gets the bytes and their address), then make the
    /// mapping read+execute. The value `fill` returns is handed back with the memory.
    ///
    /// Errors: `fill`'s error, or [`Error::Os`] from `mmap`/`mprotect`. On error nothing stays
    /// mapped.
    pub fn new<T>(len: usize, fill: impl FnOnce(&mut [u8], u64) -> Result<T>) -> Result<(ExecMemory, T)> {
        use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};
        let page = page_size();
        let len = len
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or(Error::InvalidArgument { what: "executable mapping length", value: len as u64 })?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choice (null hint)
        // touches no existing memory; failure is returned as an error.
        let raw = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .map_err(os("mmap (executable image)"))?;
        let ptr = NonNull::new(raw.cast::<u8>()).ok_or(Error::Os { what: "mmap (executable image)", errno: 0 })?;
        let mem = ExecMemory { ptr, len };
        // SAFETY: the mapping is `len` bytes, readable and writable, zero-filled by the kernel,
        // and owned only by `mem`; the slice's lifetime ends before the protection changes.
        let bytes = unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), len) };
        let value = fill(bytes, ptr.as_ptr() as u64)?;
        // SAFETY: changes the protection of this mapping only; no reference into it is alive.
        unsafe { rustix::mm::mprotect(raw, len, MprotectFlags::READ | MprotectFlags::EXEC) }
            .map_err(os("mprotect (read+execute)"))?;
        sync_icache(ptr.as_ptr(), len);
        Ok((mem, value))
    }

    /// Start address of the mapping.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Length of the mapping in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a mapping has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapped bytes (readable; the mapping is read+execute).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes, alive as long as `self`, and never
        // written after construction.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ExecMemory {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value owns; no borrow of it outlives `self`.
        // A failure would leave the pages mapped (a leak, not unsoundness), so it is ignored.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast::<c_void>(), self.len) };
    }
}

#[cfg(target_arch = "aarch64")]
fn sync_icache(start: *mut u8, len: usize) {
    unsafe extern "C" {
        // From libgcc (Linux) or compiler-rt (macOS): cleans the data cache and invalidates
        // the instruction cache over [start, end).
        fn __clear_cache(start: *mut core::ffi::c_char, end: *mut core::ffi::c_char);
    }
    // SAFETY: [start, start + len) is one live, readable mapping owned by the caller.
    unsafe { __clear_cache(start.cast(), start.wrapping_add(len).cast()) };
}

#[cfg(not(target_arch = "aarch64"))]
fn sync_icache(_start: *mut u8, _len: usize) {
    // x86-64 hardware keeps instruction fetch coherent with earlier stores to the same
    // addresses (self-modifying code is detected); no maintenance is needed.
}

/// A relocatable object loaded into executable memory.
///
/// The function pointers it hands out are valid only while it is alive.
#[derive(Debug)]
pub struct LoadedObject {
    mem: ExecMemory,
    entry: u64,
    arch: Machine,
}

impl LoadedObject {
    /// Parse `bytes` (which must be an object for `arch`, and `arch` must be this host's),
    /// lay it out in fresh [`ExecMemory`], relocate it with `resolve` for undefined symbols,
    /// and find `entry_symbol`.
    ///
    /// Errors: every [`ElfObject::parse_for`] and [`ElfObject::load_into`] error, an
    /// [`Error::Mismatch`] if `arch` is not the host, or an [`Error::Os`] from the mapping.
    pub fn load(
        bytes: &[u8],
        arch: Machine,
        entry_symbol: &str,
        resolve: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<LoadedObject> {
        let host = Machine::host();
        if arch != host {
            return Err(Error::Mismatch {
                what: "elf e_machine (object arch vs host)",
                expected: host.e_machine().into(),
                found: arch.e_machine().into(),
            })
            .with_context(|| std::format!("cannot execute {arch} code on a {host} host"));
        }
        let obj = ElfObject::parse_for(bytes, arch)?;
        let size = obj.layout().size as usize; // at most MAX_IMAGE_SIZE
        let (mem, entry) = ExecMemory::new(size, |image, addr| obj.load_into(image, addr, entry_symbol, resolve))?;
        Ok(LoadedObject { mem, entry, arch })
    }

    /// Address of the entry function.
    pub fn entry(&self) -> *const () {
        self.entry as usize as *const ()
    }

    /// The entry function as a function pointer of type `F` (e.g.
    /// `unsafe extern "C" fn(*mut f32, *const f32)`).
    ///
    /// # Safety
    ///
    /// `F` must be a function-pointer type whose ABI and signature match the entry function
    /// (for tinygrad kernels: `extern "C"`, buffer pointers first, then `i32`s). The pointer
    /// must not be called after this `LoadedObject` is dropped, and calling it has whatever
    /// preconditions the kernel has (valid, large enough, 16-byte-aligned buffers).
    pub unsafe fn as_fn<F: Copy>(&self) -> F {
        const { assert!(size_of::<F>() == size_of::<*const ()>(), "F must be a function pointer") };
        let entry = self.entry();
        // SAFETY: F is pointer-sized (checked at compile time); the caller guarantees it is a
        // function-pointer type matching the code at `entry`.
        unsafe { core::mem::transmute_copy::<*const (), F>(&entry) }
    }

    /// The architecture of the loaded code (always the host's).
    pub fn arch(&self) -> Machine {
        self.arch
    }

    /// The relocated image, as it sits in executable memory (page-rounded).
    pub fn image(&self) -> &[u8] {
        self.mem.bytes()
    }
}

/// Names [`default_resolver`] resolves: memory functions clang emits for large copies and
/// fills, and the `float`/`double` libm functions kernels may call.
pub const DEFAULT_IMPORTS: &[&CStr] = &[
    c"memset", c"memcpy", c"memmove", c"sqrtf", c"sqrt", c"expf", c"exp", c"exp2f", c"exp2", c"logf", c"log", c"log2f",
    c"log2", c"sinf", c"sin", c"cosf", c"cos", c"powf", c"pow", c"tanhf", c"tanh", c"floorf", c"floor", c"ceilf",
    c"ceil", c"fmaf", c"fma",
];

/// Resolve an undefined symbol of a kernel object against this process, for the names in
/// [`DEFAULT_IMPORTS`] only.
///
/// The lookup is `dlsym(RTLD_DEFAULT, name)`, which finds everything in the loaded libc (and on
/// macOS libSystem, which holds libm too). On Linux a Rust program often does not load libm
/// (the linker drops it when nothing uses it), so a name not found that way is looked up in
/// `libm.so.6`, opened once with `dlopen` and kept open for the life of the process.
///
/// Every other name gives `None` (the load then fails naming the symbol): a kernel object
/// must not reach arbitrary process symbols.
pub fn default_resolver(name: &str) -> Option<u64> {
    let cname = DEFAULT_IMPORTS.iter().find(|c| c.to_bytes() == name.as_bytes())?;
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the name up.
    let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, cname.as_ptr()) };
    if !addr.is_null() {
        return Some(addr as u64);
    }
    let libm = libm_handle()?;
    // SAFETY: `libm` is a live handle from dlopen (never closed); the name is NUL-terminated.
    let addr = unsafe { libc::dlsym(libm.0, cname.as_ptr()) };
    (!addr.is_null()).then_some(addr as u64)
}

/// A `dlopen` handle that is never closed.
struct Handle(*mut c_void);
// SAFETY: a dlopen handle is an opaque token that the dynamic loader lets any thread use.
unsafe impl Send for Handle {}
// SAFETY: as for `Send`; dlsym on one handle is thread-safe.
unsafe impl Sync for Handle {}

fn libm_handle() -> Option<&'static Handle> {
    static LIBM: std::sync::OnceLock<Option<Handle>> = std::sync::OnceLock::new();
    LIBM.get_or_init(|| {
        let name: &CStr = if cfg!(target_os = "macos") { c"/usr/lib/libSystem.B.dylib" } else { c"libm.so.6" };
        // SAFETY: dlopen of a system library by name; RTLD_LOCAL keeps its symbols out of the
        // global namespace. A null result (library missing) is handled.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        (!handle.is_null()).then_some(Handle(handle))
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_memory_is_filled_then_read_only() {
        let (mem, addr) = ExecMemory::new(10, |bytes, addr| {
            assert!(bytes.iter().all(|&b| b == 0));
            bytes[..4].copy_from_slice(&[1, 2, 3, 4]);
            Ok(addr)
        })
        .unwrap();
        assert_eq!(addr, mem.as_ptr() as u64);
        assert_eq!(mem.len() % page_size(), 0);
        assert_eq!(&mem.bytes()[..5], &[1, 2, 3, 4, 0]);
    }

    #[test]
    fn fill_error_is_returned_and_nothing_leaks() {
        let err = ExecMemory::new(64, |_, _| -> Result<()> { Err(Error::InvalidArgument { what: "x", value: 7 }) })
            .unwrap_err();
        assert_eq!(err, Error::InvalidArgument { what: "x", value: 7 });
    }

    #[test]
    fn default_resolver_allows_only_the_list() {
        assert!(default_resolver("sinf").is_some());
        assert!(default_resolver("memcpy").is_some());
        assert!(default_resolver("fma").is_some());
        // In libc, but not on the allow-list.
        assert_eq!(default_resolver("system"), None);
        assert_eq!(default_resolver("no_such_function"), None);
    }

    #[test]
    fn default_resolver_gives_the_real_function() {
        let addr = default_resolver("sqrtf").unwrap();
        // SAFETY: sqrtf has this signature in every libm.
        let f: extern "C" fn(f32) -> f32 = unsafe { core::mem::transmute(addr as usize) };
        assert_eq!(f(2.25), 1.5);
    }
}
