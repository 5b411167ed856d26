//! Copies between the client's memory (the pointers inside ioctl arguments) and the device, as
//! the kernel's `copy_from_user`/`copy_to_user` do: a null pointer is `EFAULT`, and so is an
//! unmapped one where the kernel lets us ask (`process_vm_readv`/`writev` on our own process
//! check every page and fail with `EFAULT` instead of faulting). Where a sandbox refuses those
//! calls the copy is a plain one, and a bad pointer faults in the client as it would in any
//! library it passed it to.

use rustix::io::Errno;
use std::sync::atomic::{AtomicBool, Ordering};

/// `process_vm_*` answered `EPERM`/`ENOSYS` once: copy directly from then on.
static DIRECT: AtomicBool = AtomicBool::new(false);

fn checked(addr: u64, len: usize, write: bool, local: *mut u8) -> Option<Result<(), Errno>> {
    if DIRECT.load(Ordering::Relaxed) {
        return None;
    }
    let l = libc::iovec { iov_base: local.cast(), iov_len: len };
    let r = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: len };
    // SAFETY: `l` is our own buffer of `len` bytes; the kernel checks `r` (the client's range)
    // page by page and reports EFAULT instead of touching an unmapped page.
    let n = unsafe {
        if write {
            libc::process_vm_writev(libc::getpid(), &l, 1, &r, 1, 0)
        } else {
            libc::process_vm_readv(libc::getpid(), &l, 1, &r, 1, 0)
        }
    };
    if n == len as isize {
        return Some(Ok(()));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EPERM | libc::ENOSYS | libc::EACCES) if n < 0 => {
            DIRECT.store(true, Ordering::Relaxed);
            None
        }
        _ => Some(Err(Errno::FAULT)),
    }
}

/// Read `out.len()` bytes at client address `addr`.
pub fn copy_in(addr: u64, out: &mut [u8]) -> Result<(), Errno> {
    if out.is_empty() {
        return Ok(());
    }
    if addr == 0 {
        return Err(Errno::FAULT);
    }
    if let Some(r) = checked(addr, out.len(), false, out.as_mut_ptr()) {
        return r;
    }
    // SAFETY: the client passed `addr` as the address of `out.len()` readable bytes (the ioctl's
    // contract); it is non-null, and `out` is ours and does not overlap client memory we read.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len()) };
    Ok(())
}

/// Write `data` at client address `addr`.
pub fn copy_out(addr: u64, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    if addr == 0 {
        return Err(Errno::FAULT);
    }
    if let Some(r) = checked(addr, data.len(), true, data.as_ptr().cast_mut()) {
        return r;
    }
    // SAFETY: the client passed `addr` as the address of `data.len()` writable bytes (the
    // ioctl's contract); it is non-null and no Rust reference points into it.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_round_trip_and_bad_addresses_are_efault() {
        let mut src = [1u8, 2, 3, 4];
        let mut got = [0u8; 4];
        copy_in(src.as_ptr() as u64, &mut got).unwrap();
        assert_eq!(got, [1, 2, 3, 4]);
        copy_out(src.as_mut_ptr() as u64, &[9, 8]).unwrap();
        assert_eq!(src, [9, 8, 3, 4]);
        assert_eq!(copy_in(0, &mut got), Err(Errno::FAULT));
        assert_eq!(copy_out(0, &[1]), Err(Errno::FAULT));
        if !DIRECT.load(Ordering::Relaxed) {
            // Page 1 is never mapped in a Linux process (mmap_min_addr).
            assert_eq!(copy_in(0x1000, &mut got), Err(Errno::FAULT));
        }
    }
}
