//! GPU objects as regions of one `memfd` per open device: object `id` lives at file offset
//! `id << 12`, so the client's own `mmap(fd, id << 12)` — through libc, which nothing
//! intercepts — maps the object's pages, and the device reaches the same pages through its own
//! shared mapping. Offsets are handed out upwards with a one-page gap between objects (so the
//! kernel never merges two objects' client mappings into one line of `/proc/self/maps`) and
//! never reused; a freed object's pages are punched out of the file.

use hcq_sim_adreno::kgsl::Backing;
use rustix::io::Errno;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

const PAGE: u64 = 4096;

/// One GPU object as the device knows it.
#[derive(Clone, Copy, Debug)]
pub struct Obj {
    /// File offset (`id << 12`).
    pub off: u64,
    /// Bytes (page multiple).
    pub bytes: usize,
    /// The device's own mapping.
    pub own: usize,
    /// `KGSL_MEMFLAGS_*` of the allocation.
    pub flags: u64,
    /// The client's mapping (= the GPU address with `USE_CPU_MAP`), once seen.
    pub client: Option<u64>,
}

/// The objects of one device, by id (shared by the backing and the device front end).
pub type ObjTable = Arc<Mutex<HashMap<u32, Obj>>>;

fn last_errno() -> Errno {
    Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

/// The memfd backing of one open device.
#[derive(Debug)]
pub struct MemfdBacking {
    fd: OwnedFd,
    next_off: u64,
    len: u64,
    objs: ObjTable,
}

impl MemfdBacking {
    /// Objects in `fd` (the device's own duplicate of the client's descriptor), recorded in
    /// `objs`.
    pub fn new(fd: OwnedFd, objs: ObjTable) -> Self {
        // Offset 0 is id 0, which KGSL never hands out.
        Self { fd, next_off: PAGE, len: 0, objs }
    }
}

impl Backing for MemfdBacking {
    fn alloc(&mut self, bytes: usize) -> Result<(u32, NonNull<u8>), Errno> {
        let off = self.next_off;
        let end = off.checked_add(bytes as u64).ok_or(Errno::NOMEM)?;
        let id = u32::try_from(off / PAGE).map_err(|_| Errno::NOMEM)?;
        if bytes == 0 || id == 0 {
            return Err(Errno::NOMEM);
        }
        if end > self.len {
            let len = i64::try_from(end).map_err(|_| Errno::NOMEM)?;
            // SAFETY: ftruncate on our own descriptor; no memory is touched.
            if unsafe { libc::ftruncate(self.fd.as_raw_fd(), len) } != 0 {
                return Err(Errno::NOMEM);
            }
            self.len = end;
        }
        let foff = i64::try_from(off).map_err(|_| Errno::NOMEM)?;
        // SAFETY: a fresh shared mapping of our memfd at a kernel-chosen address: it aliases no
        // Rust object; the file range was never handed out before, so its pages are zero.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                foff,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(last_errno());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Errno::NOMEM)?;
        self.next_off = end + PAGE;
        if let Ok(mut o) = self.objs.lock() {
            o.insert(id, Obj { off, bytes, own: p as usize, flags: 0, client: None });
        }
        Ok((id, ptr))
    }

    unsafe fn release(&mut self, id: u32, ptr: NonNull<u8>, bytes: usize) {
        let off = self.objs.lock().ok().and_then(|mut o| o.remove(&id)).map(|o| o.off);
        // SAFETY: the caller passes the mapping `alloc` made for `id`, unreferenced now.
        unsafe { libc::munmap(ptr.as_ptr().cast(), bytes) };
        if let Some(off) = off.and_then(|o| i64::try_from(o).ok()) {
            // SAFETY: fallocate on our own descriptor; it frees the pages of a range no longer
            // handed out (a client mapping still there reads zeros, never another object).
            unsafe {
                libc::fallocate(
                    self.fd.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    off,
                    bytes as i64,
                )
            };
        }
    }
}
