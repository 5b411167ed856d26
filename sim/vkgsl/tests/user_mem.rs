//! `MAP_USER_MEM` imports when the client unmaps or replaces the memory (in process, through
//! `VDev::ioctl`, as `tests/device.rs`): the GPU never writes into memory the process no longer
//! maps there. A shared mapping's pages stay the device's (the write lands in them, as in the
//! driver's pinned pages); private memory's import is revoked and the access faults the context.

use hcq_adreno::pm4::{op, pkt7};
use hcq_qcom::kgsl::uapi::*;
use hcq_vkgsl::device::{MEMFLAGS_USE_CPU_MAP, VDev};
use rustix::io::Errno;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

const PAGE: usize = 4096;

struct Client {
    fd: OwnedFd,
    dev: VDev,
}

fn memfd(name: &std::ffi::CStr) -> OwnedFd {
    // SAFETY: memfd_create with a NUL-terminated name.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: a fresh descriptor owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// `pages` pages mapped read-write: `flags` (`MAP_PRIVATE | MAP_ANONYMOUS`, `MAP_SHARED` of
/// `fd`, ...), at `at` with `MAP_FIXED` when given.
fn map(at: Option<*mut u8>, pages: usize, flags: i32, fd: i32) -> *mut u8 {
    let fixed = if at.is_some() { libc::MAP_FIXED } else { 0 };
    // SAFETY: a fresh mapping; with MAP_FIXED it replaces only pages this test mapped and
    // unmapped itself (no Rust object lives there).
    let p = unsafe {
        libc::mmap(
            at.unwrap_or(std::ptr::null_mut()).cast(),
            pages * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            flags | fixed,
            fd,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
    p.cast()
}

fn unmap(p: *mut u8, pages: usize) {
    // SAFETY: a mapping this test made, referenced by no Rust object.
    assert_eq!(unsafe { libc::munmap(p.cast(), pages * PAGE) }, 0);
}

fn word(p: *mut u8, i: usize) -> u32 {
    // SAFETY: `p` is a live mapping of at least `4 * i + 4` bytes (the callers' pages).
    unsafe { p.cast::<u32>().add(i).read_volatile() }
}

impl Client {
    fn new() -> Client {
        let fd = memfd(c"vkgsl-user-mem-test");
        let dev = VDev::with_capture(fd.as_fd(), None).unwrap();
        Client { fd, dev }
    }

    fn io<T: IntoBytes>(&self, req: u32, arg: &mut T) -> Result<(), Errno> {
        self.dev.ioctl(req, (arg as *mut T) as u64)
    }

    fn import(&self, host: *mut u8, pages: usize) -> Result<u64, Errno> {
        let mut m = MapUserMem {
            hostptr: host as u64,
            len: (pages * PAGE) as u64,
            memtype: USER_MEM_TYPE_ADDR,
            ..MapUserMem::new_zeroed()
        };
        self.io(IOCTL_MAP_USER_MEM, &mut m).map(|()| m.gpuaddr)
    }

    /// A one-page IB in a KGSL object the client maps.
    fn ib(&self) -> *mut u32 {
        let mut a = GpuobjAlloc { size: 4096, flags: MEMFLAGS_USE_CPU_MAP, ..GpuobjAlloc::new_zeroed() };
        self.io(IOCTL_GPUOBJ_ALLOC, &mut a).unwrap();
        map_obj(&self.fd, a.id)
    }

    fn context(&self) -> u32 {
        let mut c = DrawctxtCreate { flags: 0x10 | 0x200 | 0x2, drawctxt_id: 0 };
        self.io(IOCTL_DRAWCTXT_CREATE, &mut c).unwrap();
        c.drawctxt_id
    }

    /// Submit a `CP_MEM_WRITE` of `value` at `gpu` and wait for it.
    fn write_and_wait(&self, ctx: u32, ib: *mut u32, gpu: u64, value: u32) -> Result<(), Errno> {
        let mut words = Vec::new();
        pkt7(&mut words, op::CP_MEM_WRITE, &[gpu as u32, (gpu >> 32) as u32, value]).unwrap();
        for (i, w) in words.iter().enumerate() {
            // SAFETY: `ib` is a live one-page client mapping; the IB is four words.
            unsafe { ib.add(i).write_volatile(*w) };
        }
        let cmd = [CommandObject { gpuaddr: ib as u64, size: 4 * words.len() as u64, flags: 1, ..Default::default() }];
        let mut g = GpuCommand {
            cmdlist: cmd.as_ptr() as u64,
            cmdsize: size_of::<CommandObject>() as u32,
            numcmds: 1,
            context_id: ctx,
            ..Default::default()
        };
        self.io(IOCTL_GPU_COMMAND, &mut g)?;
        self.io(
            IOCTL_DEVICE_WAITTIMESTAMP_CTXTID,
            &mut WaitTimestampCtxtid { context_id: ctx, timestamp: g.timestamp, timeout: 1000 },
        )
    }
}

fn map_obj(fd: &OwnedFd, id: u32) -> *mut u32 {
    // SAFETY: a fresh shared mapping of the device's memfd at the object's offset.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            (u64::from(id) << 12) as i64,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p.cast()
}

#[test]
fn private_memory_replaced_at_the_same_address_is_not_written_and_the_context_faults() {
    let c = Client::new();
    let ib = c.ib();
    let ctx = c.context();
    let host = map(None, 2, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1);
    let gpu = c.import(host, 2).unwrap();
    assert_eq!(gpu, host as u64);
    // While it is mapped, the GPU writes the client's pages.
    c.write_and_wait(ctx, ib, gpu + 8, 0x1111_1111).unwrap();
    assert_eq!(word(host, 2), 0x1111_1111);
    // Unmapped, and a file mapped at the same address: the old GPU address must not reach it.
    unmap(host, 2);
    let other = memfd(c"vkgsl-unrelated");
    // SAFETY: ftruncate of our own memfd; no memory is touched.
    assert_eq!(unsafe { libc::ftruncate(other.as_raw_fd(), 2 * PAGE as i64) }, 0);
    let now = map(Some(host), 2, libc::MAP_SHARED, other.as_raw_fd());
    assert_eq!(now, host);
    assert_eq!(c.write_and_wait(ctx, ib, gpu + 8, 0x2222_2222), Err(Errno::DEADLK), "the access faults the context");
    assert_eq!(word(now, 2), 0, "the unrelated mapping is untouched");
    let f = c.dev.sim().fault().unwrap_or_default();
    assert!(f.contains("outside every allocation"), "{f}");
    // The client's own free of the revoked import still succeeds, once.
    c.io(IOCTL_SHAREDMEM_FREE, &mut SharedmemFree { gpuaddr: gpu }).unwrap();
    assert_eq!(c.io(IOCTL_SHAREDMEM_FREE, &mut SharedmemFree { gpuaddr: gpu }), Err(Errno::INVAL));
    unmap(now, 2);
}

#[test]
fn private_memory_unmapped_faults_instead_of_crashing() {
    let c = Client::new();
    let ib = c.ib();
    let ctx = c.context();
    let host = map(None, 1, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1);
    let gpu = c.import(host, 1).unwrap();
    unmap(host, 1);
    // Without the check this CP_MEM_WRITE lands in an unmapped page: SIGSEGV.
    assert_eq!(c.write_and_wait(ctx, ib, gpu, 5), Err(Errno::DEADLK));
}

#[test]
fn private_memory_that_grew_or_moved_neighbours_stays_imported() {
    // The heap's mapping growing past the import (a merge into a bigger line of
    // /proc/self/maps) is the same memory: no revocation.
    let c = Client::new();
    let ib = c.ib();
    let ctx = c.context();
    let area = map(None, 4, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1);
    unmap(area.wrapping_add(3 * PAGE), 1);
    let gpu = c.import(area.wrapping_add(PAGE), 1).unwrap();
    let grown = map(Some(area.wrapping_add(3 * PAGE)), 1, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1);
    c.write_and_wait(ctx, ib, gpu + 4, 77).unwrap();
    assert_eq!(word(area.wrapping_add(PAGE), 1), 77);
    unmap(grown, 1);
    unmap(area, 3);
}

#[test]
fn shared_memory_stays_pinned_after_the_client_unmaps_it() {
    let c = Client::new();
    let ib = c.ib();
    let ctx = c.context();
    let file = memfd(c"vkgsl-imported");
    // SAFETY: ftruncate of our own memfd; no memory is touched.
    assert_eq!(unsafe { libc::ftruncate(file.as_raw_fd(), 2 * PAGE as i64) }, 0);
    let host = map(None, 2, libc::MAP_SHARED, file.as_raw_fd());
    let gpu = c.import(host, 2).unwrap();
    assert_eq!(gpu, host as u64);
    c.write_and_wait(ctx, ib, gpu + PAGE as u64, 0xaaaa_0001).unwrap();
    assert_eq!(word(host, PAGE / 4), 0xaaaa_0001, "the client sees the GPU's write");
    // Unmapped, anonymous memory mapped at the same address: the GPU still writes the file's
    // pages (the driver's pinned pages), never the new mapping.
    unmap(host, 2);
    let now = map(Some(host), 2, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1);
    assert_eq!(now, host);
    c.write_and_wait(ctx, ib, gpu + PAGE as u64 + 4, 0xaaaa_0002).unwrap();
    assert_eq!((word(now, PAGE / 4), word(now, PAGE / 4 + 1)), (0, 0), "the new mapping is untouched");
    let mut got = [0u8; 8];
    // SAFETY: pread into our own buffer.
    let n = unsafe { libc::pread(file.as_raw_fd(), got.as_mut_ptr().cast(), 8, PAGE as i64) };
    assert_eq!(n, 8);
    assert_eq!(got, [1, 0, 0xaa, 0xaa, 2, 0, 0xaa, 0xaa], "both writes are in the imported file's pages");
    assert!(c.dev.sim().fault().is_none());
    c.io(IOCTL_SHAREDMEM_FREE, &mut SharedmemFree { gpuaddr: gpu }).unwrap();
    assert_eq!(c.io(IOCTL_SHAREDMEM_FREE, &mut SharedmemFree { gpuaddr: gpu }), Err(Errno::INVAL));
    // Freed: the address is no GPU memory any more.
    assert_eq!(c.write_and_wait(ctx, ib, gpu, 3), Err(Errno::DEADLK));
    assert_eq!(word(now, 0), 0);
    unmap(now, 2);
}
