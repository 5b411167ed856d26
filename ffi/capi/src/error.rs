//! Statuses and messages: a runtime error becomes an [`hcq_status`] and the calling thread's
//! last error; [`guard`] runs every entry point, catching a panic at the boundary.

use crate::hcq_status::{self, *};
use hcq::error::Error;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// What [`hcq_last_error`] gives on a thread whose error slot is gone: a call made from a
/// thread-local destructor (a pthread key's, a C++ `thread_local`'s) that runs after the
/// library's own slot was destroyed, as the thread exits. The status is still the call's.
const SLOT_GONE: &CStr = c"hcq: the message of a call made while this thread exits is not kept (the thread's error \
slot is gone); the call's status says what failed";

/// A failure at the boundary: a status and its message.
pub(crate) struct Fail(pub(crate) hcq_status, pub(crate) String);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        let s = match e.root() {
            Error::InvalidArgument { .. } => HCQ_ERR_INVALID_ARGUMENT,
            Error::Misaligned { .. } => HCQ_ERR_MISALIGNED,
            Error::Mismatch { .. } => HCQ_ERR_SIZE,
            Error::OutOfBounds { .. } => HCQ_ERR_OUT_OF_RANGE,
            Error::UnknownDevice { .. } | Error::DeviceUnavailable { .. } => HCQ_ERR_NO_DEVICE,
            Error::Malformed { .. } | Error::LimitExceeded { .. } => HCQ_ERR_BUNDLE,
            Error::Unsupported { .. } => HCQ_ERR_UNSUPPORTED,
            Error::Timeout { .. } => HCQ_ERR_TIMEOUT,
            Error::DeviceHung { .. } => HCQ_ERR_DEVICE_HUNG,
            Error::OutOfMemory { .. } | Error::OutOfSpace { .. } => HCQ_ERR_OUT_OF_MEMORY,
            Error::Os { .. } => HCQ_ERR_OS,
            _ => HCQ_ERR_OTHER,
        };
        Fail(s, e.to_string())
    }
}

pub(crate) fn fail<T>(s: hcq_status, msg: impl Into<String>) -> Result<T, Fail> {
    Err(Fail(s, msg.into()))
}

fn set_last_error(msg: &str) {
    // a message with a NUL in it is cut there
    let bytes: Vec<u8> = msg.bytes().take_while(|&b| b != 0).collect();
    let c = CString::new(bytes).unwrap_or_default();
    // During thread exit the slot may be destroyed already (`try_with` fails): the message
    // is dropped, and `hcq_last_error` says so. A borrow held elsewhere cannot happen (no
    // borrow outlives these two functions), but is not a panic either.
    let _ = LAST_ERROR.try_with(|l| {
        if let Ok(mut slot) = l.try_borrow_mut() {
            *slot = c;
        }
    });
}

/// Run `f` at the boundary: its failure becomes a status and the thread's last error, a
/// panic becomes `HCQ_ERR_PANIC`.
pub(crate) fn guard(what: &str, f: impl FnOnce() -> Result<(), Fail>) -> hcq_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => HCQ_OK,
        Ok(Err(Fail(s, msg))) => {
            set_last_error(&format!("{what}: {msg}"));
            s
        }
        Err(p) => {
            let m = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            set_last_error(&format!("{what}: internal panic (a bug in libhcq): {m}"));
            HCQ_ERR_PANIC
        }
    }
}

/// The message of the last call that failed on this thread (NUL-terminated, never NULL; empty
/// when none failed). Valid until the next failing call on this thread. Called while the
/// thread exits (from a thread-local destructor that runs after the library's own), where
/// the thread's message slot is gone: a fixed message saying so (the failing call's status
/// is still right).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|l| l.try_borrow().map(|c| c.as_ptr()).unwrap_or(SLOT_GONE.as_ptr()))
        .unwrap_or(SLOT_GONE.as_ptr())
}

/// A status's name (`"HCQ_ERR_TIMEOUT"`), static; `"HCQ_UNKNOWN"` for a value that is none.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_status_name(status: i32) -> *const c_char {
    const ALL: [hcq_status; 17] = [
        HCQ_OK,
        HCQ_ERR_INVALID_ARGUMENT,
        HCQ_ERR_NULL_POINTER,
        HCQ_ERR_MISALIGNED,
        HCQ_ERR_SIZE,
        HCQ_ERR_OUT_OF_RANGE,
        HCQ_ERR_CLOSED,
        HCQ_ERR_NO_DEVICE,
        HCQ_ERR_BUNDLE,
        HCQ_ERR_UNSUPPORTED,
        HCQ_ERR_TIMEOUT,
        HCQ_ERR_DEVICE_HUNG,
        HCQ_ERR_OUT_OF_MEMORY,
        HCQ_ERR_OS,
        HCQ_ERR_BUFFER_TOO_SMALL,
        HCQ_ERR_PANIC,
        HCQ_ERR_OTHER,
    ];
    let Some(&status) = ALL.iter().find(|s| **s as i32 == status) else { return c"HCQ_UNKNOWN".as_ptr() };
    let s: &'static CStr = match status {
        HCQ_OK => c"HCQ_OK",
        HCQ_ERR_INVALID_ARGUMENT => c"HCQ_ERR_INVALID_ARGUMENT",
        HCQ_ERR_NULL_POINTER => c"HCQ_ERR_NULL_POINTER",
        HCQ_ERR_MISALIGNED => c"HCQ_ERR_MISALIGNED",
        HCQ_ERR_SIZE => c"HCQ_ERR_SIZE",
        HCQ_ERR_OUT_OF_RANGE => c"HCQ_ERR_OUT_OF_RANGE",
        HCQ_ERR_CLOSED => c"HCQ_ERR_CLOSED",
        HCQ_ERR_NO_DEVICE => c"HCQ_ERR_NO_DEVICE",
        HCQ_ERR_BUNDLE => c"HCQ_ERR_BUNDLE",
        HCQ_ERR_UNSUPPORTED => c"HCQ_ERR_UNSUPPORTED",
        HCQ_ERR_TIMEOUT => c"HCQ_ERR_TIMEOUT",
        HCQ_ERR_DEVICE_HUNG => c"HCQ_ERR_DEVICE_HUNG",
        HCQ_ERR_OUT_OF_MEMORY => c"HCQ_ERR_OUT_OF_MEMORY",
        HCQ_ERR_OS => c"HCQ_ERR_OS",
        HCQ_ERR_BUFFER_TOO_SMALL => c"HCQ_ERR_BUFFER_TOO_SMALL",
        HCQ_ERR_PANIC => c"HCQ_ERR_PANIC",
        HCQ_ERR_OTHER => c"HCQ_ERR_OTHER",
    };
    s.as_ptr()
}
