//! The pointers, lengths and strings the C side passes: each checked for null, alignment and
//! size before it becomes a reference, with a message naming the argument.

use crate::error::{Fail, fail};
use crate::hcq_status::*;
use std::ffi::{CStr, c_char, c_void};

/// `p` as a writable reference: not null, aligned for `T`.
pub(crate) fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Fail> {
    if p.is_null() {
        return fail(HCQ_ERR_NULL_POINTER, format!("{what} is NULL"));
    }
    if !(p as usize).is_multiple_of(align_of::<T>()) {
        return fail(HCQ_ERR_MISALIGNED, format!("{what} {p:p} is not aligned to {} bytes", align_of::<T>()));
    }
    // Checked above: not null and aligned; the caller passes memory for one `T` it lets us write.
    // SAFETY: the C contract of every out-parameter: valid for writing one `T`.
    Ok(unsafe { &mut *p })
}

/// `len` bytes at `p` (`p` may be NULL only when `len` is 0).
pub(crate) fn bytes_in<'a>(p: *const c_void, len: usize, what: &str) -> Result<&'a [u8], Fail> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return fail(HCQ_ERR_NULL_POINTER, format!("{what} is NULL ({len} bytes)"));
    }
    if len > isize::MAX as usize {
        return fail(HCQ_ERR_SIZE, format!("{what}: length {len} is beyond any object"));
    }
    // Not null, len within isize; the caller's contract: `len` readable bytes at `p`.
    // SAFETY: the C contract of every (pointer, length) input.
    Ok(unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes at `p` (`p` may be NULL only when `len` is 0).
pub(crate) fn bytes_out<'a>(p: *mut c_void, len: usize, what: &str) -> Result<&'a mut [u8], Fail> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return fail(HCQ_ERR_NULL_POINTER, format!("{what} is NULL ({len} bytes)"));
    }
    if len > isize::MAX as usize {
        return fail(HCQ_ERR_SIZE, format!("{what}: length {len} is beyond any object"));
    }
    // Not null, len within isize; the caller's contract: `len` writable bytes at `p`.
    // SAFETY: the C contract of every (pointer, length) output.
    Ok(unsafe { core::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// A NUL-terminated UTF-8 string; NULL is `None`.
pub(crate) fn str_in<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, Fail> {
    if p.is_null() {
        return Ok(None);
    }
    // Not null; the caller's contract: a NUL-terminated string.
    // SAFETY: the C contract of every string argument.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map(Some).or_else(|_| fail(HCQ_ERR_INVALID_ARGUMENT, format!("{what} is not UTF-8")))
}

/// Copy `s` and a NUL into `buf` (`cap` bytes); `len` (if not NULL) gets `s.len() + 1`.
pub(crate) fn str_out(s: &str, buf: *mut c_char, cap: usize, len: *mut usize) -> Result<(), Fail> {
    let need = s.len() + 1;
    if !len.is_null() {
        *out(len, "len")? = need;
    }
    if cap < need {
        return fail(HCQ_ERR_BUFFER_TOO_SMALL, format!("buffer of {cap} bytes, {need} needed"));
    }
    let dst = bytes_out(buf.cast(), need, "buf")?;
    dst[..s.len()].copy_from_slice(s.as_bytes());
    dst[s.len()] = 0;
    Ok(())
}
