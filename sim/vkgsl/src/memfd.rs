//! GPU objects as regions of one `memfd` per open device: object `id` lives at file offset
//! `id << 12`, so the client's own `mmap(fd, id << 12)` — through libc, which nothing
//! intercepts — maps the object's pages, and the device reaches the same pages through its own
//! shared mapping. Offsets are handed out upwards with a one-page gap between objects (so the
//! kernel never merges two objects' client mappings into one line of `/proc/self/maps`) and
//! never reused; a freed object's pages are punched out of the file.
//!
//! The device's own mappings live in one address range reserved when the device opens (at
//! reservation base + file offset), not where the kernel would put the next mapping. So the
//! client's mappings — the GPU addresses, with `USE_CPU_MAP` — lie next to one another as they
//! do under real KGSL, where the driver maps nothing into the client: a kernel that reads a
//! little past its buffer reads the neighbouring object, as on the device, instead of faulting
//! on the device's own alias that would otherwise sit right above it (tinygrad 0.14's
//! local-size search binds image views wider than the buffers it allocates for the search).

use hcq_sim_adreno::kgsl::Backing;
use rustix::io::Errno;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

const PAGE: u64 = 4096;

/// Address space reserved for one device's own mappings, largest first (a smaller one where the
/// host's address space is smaller); an object past the reservation is mapped where the kernel
/// chooses.
const RESERVE: [u64; 4] = [1 << 38, 1 << 36, 1 << 34, 1 << 32];

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
    /// Not a region of the memfd: user memory (`MAP_USER_MEM`) of a shared mapping, `own` the
    /// device's alias of its pages ([`MemfdBacking::adopt_slot`]).
    pub import: bool,
}

/// The next [`Backing::alloc`] returns this mapping (address, bytes) instead of a region of
/// the memfd: how the device hands its alias of imported user pages to the simulator. The
/// device sets it and allocates under one lock of its own, so no other allocation takes it.
pub type AdoptSlot = Arc<Mutex<Option<(usize, usize)>>>;

/// The objects of one device, by id (shared by the backing and the device front end).
pub type ObjTable = Arc<Mutex<HashMap<u32, Obj>>>;

fn last_errno() -> Errno {
    Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

/// The memfd backing of one open device.
#[derive(Debug)]
pub struct MemfdBacking {
    fd: OwnedFd,
    /// The reserved range of the device's own mappings (start, bytes), `PROT_NONE` where no
    /// object is.
    reserve: Option<(usize, u64)>,
    next_off: u64,
    len: u64,
    objs: ObjTable,
    adopt: AdoptSlot,
}

impl MemfdBacking {
    /// Objects in `fd` (the device's own duplicate of the client's descriptor), recorded in
    /// `objs`.
    pub fn new(fd: OwnedFd, objs: ObjTable) -> Self {
        // A real driver has no descriptor of its own: the client's close_range/closefrom must
        // pass over this one ([`crate::fds`]).
        crate::fds::mark_internal(fd.as_raw_fd(), true);
        let reserve = RESERVE.iter().find_map(|&len| {
            // SAFETY: a fresh inaccessible anonymous mapping at a kernel-chosen address: it
            // aliases nothing; only this backing maps into it (MAP_FIXED) and unmaps it.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    usize::try_from(len).ok()?,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            (p != libc::MAP_FAILED).then_some((p as usize, len))
        });
        // Offset 0 is id 0, which KGSL never hands out.
        Self { fd, reserve, next_off: PAGE, len: 0, objs, adopt: AdoptSlot::default() }
    }

    /// Where the device puts a mapping for the next allocation to adopt.
    pub fn adopt_slot(&self) -> AdoptSlot {
        self.adopt.clone()
    }
}

impl Drop for MemfdBacking {
    fn drop(&mut self) {
        // Unmarked first, so that the close of `fd` that follows is not refused.
        crate::fds::mark_internal(self.fd.as_raw_fd(), false);
        if let Some((base, len)) = self.reserve {
            // SAFETY: the reservation made in `new`; every object in it was released before
            // (the simulator releases its objects before its backing drops), so nothing
            // accesses the range.
            unsafe { libc::munmap(base as *mut libc::c_void, len as usize) };
        }
    }
}

impl Backing for MemfdBacking {
    fn alloc(&mut self, bytes: usize) -> Result<(u32, NonNull<u8>), Errno> {
        if let Some((own, len)) = self.adopt.lock().ok().and_then(|mut a| a.take()) {
            // An import: an id of its own (one page of offsets, never mapped), no file pages.
            let off = self.next_off;
            let id = u32::try_from(off / PAGE).map_err(|_| Errno::NOMEM)?;
            let ptr = NonNull::new(own as *mut u8).ok_or(Errno::FAULT)?;
            if len != bytes {
                return Err(Errno::INVAL);
            }
            self.next_off = off + PAGE;
            if let Ok(mut o) = self.objs.lock() {
                o.insert(id, Obj { off, bytes, own, flags: 0, client: None, import: true });
            }
            return Ok((id, ptr));
        }
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
        // inside the reservation (at its offset) when it fits there, else where the kernel chooses
        let (at, fixed) = match self.reserve {
            Some((base, len)) if end <= len => ((base as u64 + off) as *mut libc::c_void, libc::MAP_FIXED),
            _ => (std::ptr::null_mut(), 0),
        };
        // SAFETY: a shared mapping of our memfd either at a kernel-chosen address or, with
        // MAP_FIXED, over pages of our own PROT_NONE reservation that hold no object (offsets
        // are never reused): it aliases no Rust object; the file range was never handed out
        // before, so its pages are zero.
        let p = unsafe {
            libc::mmap(
                at,
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | fixed,
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
            o.insert(id, Obj { off, bytes, own: p as usize, flags: 0, client: None, import: false });
        }
        Ok((id, ptr))
    }

    unsafe fn release(&mut self, id: u32, ptr: NonNull<u8>, bytes: usize) {
        let obj = self.objs.lock().ok().and_then(|mut o| o.remove(&id));
        let start = ptr.as_ptr() as usize;
        match self.reserve {
            // SAFETY: the caller passes the mapping `alloc` made inside the reservation for `id`,
            // unreferenced now; it becomes reserved (PROT_NONE) again, so the kernel never places
            // another mapping there.
            Some((base, len)) if obj.is_some_and(|o| !o.import) && start >= base && start - base < len as usize => unsafe {
                libc::mmap(
                    ptr.as_ptr().cast(),
                    bytes,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                    -1,
                    0,
                );
            },
            // SAFETY: the caller passes the mapping `alloc` made (or adopted) for `id`,
            // unreferenced now; an adopted one is the device's own alias, which nothing else
            // unmaps.
            _ => unsafe {
                libc::munmap(ptr.as_ptr().cast(), bytes);
            },
        }
        let off = obj.filter(|o| !o.import).map(|o| o.off);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    fn backing() -> MemfdBacking {
        // SAFETY: memfd_create with a NUL-terminated name; returns a new descriptor or -1.
        let fd = unsafe { libc::memfd_create(c"hcq-vkgsl-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        MemfdBacking::new(unsafe { OwnedFd::from_raw_fd(fd) }, ObjTable::default())
    }

    /// The device's own mappings are at reservation base + file offset, never where the kernel
    /// would put a client's next mapping: a client mapping of an object is not followed by the
    /// device's alias of it (the page after it is not the device's).
    #[test]
    fn the_devices_own_mappings_stay_in_their_reservation_away_from_the_clients() {
        let mut b = backing();
        let (base, len) = b.reserve.expect("a reservation on a 64-bit host");
        let mut got = Vec::new();
        for bytes in [4096usize, 3 * 4096, 4096] {
            let (id, p) = b.alloc(bytes).unwrap();
            let o = b.objs.lock().unwrap()[&id];
            assert_eq!(p.as_ptr() as usize, base + o.off as usize, "object {id} outside its place in the reservation");
            assert!(o.off + bytes as u64 <= len);
            // the client's mapping of the object, where the kernel chooses
            // SAFETY: a fresh shared mapping of the backing's memfd; unmapped below.
            let c = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    b.fd.as_raw_fd(),
                    o.off as i64,
                )
            };
            assert_ne!(c, libc::MAP_FAILED);
            let end = c as usize + bytes;
            assert!(!(base..base + len as usize).contains(&end), "a client mapping ends at the device's reservation");
            got.push((id, p, bytes, c));
        }
        for (id, p, bytes, c) in got {
            // SAFETY: the test's own client mapping and the mapping `alloc` made for `id`.
            unsafe {
                libc::munmap(c, bytes);
                b.release(id, p, bytes);
            }
        }
    }
}
