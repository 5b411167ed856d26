//! libhcq: the C ABI of hcq (`include/hcq.h`, generated from these files by cbindgen).
//!
//! Open a device by name, load a bundle on it, list its inputs and outputs, set inputs (by
//! copy, or bound to the caller's memory zero-copy), run it (blocking, or submit and wait with
//! a timeout), read outputs (by copy, or a pointer valid until the next call), profile to a
//! Perfetto file, close. The ctypes Python package `hcq` (`python/hcq`) wraps exactly this.
//!
//! It is written on the front door, `hcq-runtime`, and nothing else: every device is opened,
//! every bundle loaded and run through `hcq_runtime` (this crate depends on no device crate).
//! What it adds is the boundary:
//!
//! - `lib.rs`: the types the header declares (statuses, dtypes, handles, tensor info, flags);
//! - `error`: statuses from the runtime's errors, the thread's last error, the panic guard;
//! - `ptr`: every pointer, length and string the C side passes, checked;
//! - `handle`: handles as ids in tables (a closed handle is an error, never freed memory);
//! - `device`: library, registry and device calls, and loading a model;
//! - `model`: the calls on a model.
//!
//! Rules every function follows:
//! - it returns an [`hcq_status`]; on failure [`hcq_last_error`] gives the message (the
//!   runtime's error, with its context) of the last call that failed on this thread;
//! - no panic crosses the boundary: one is caught and returned as `HCQ_ERR_PANIC`;
//! - every pointer is checked for null and alignment, every length against the tensor;
//! - handles are ids in a table, not pointers: a closed or never-opened handle is
//!   `HCQ_ERR_CLOSED`, never a use of freed memory.

// The C names are the ABI (cbindgen copies them into the header as they are).
#![allow(non_camel_case_types)]

mod device;
mod error;
mod handle;
mod model;
mod ptr;
#[cfg(test)]
mod tests;

pub use device::*;
pub use error::{hcq_last_error, hcq_status_name};
pub use model::*;

use std::ffi::c_char;

/// What a call returns. `HCQ_OK` is 0; every other value is a failure whose message
/// [`hcq_last_error`] gives.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum hcq_status {
    /// Success.
    HCQ_OK = 0,
    /// An argument out of its domain (a flag, a name that is not UTF-8, a bad state).
    HCQ_ERR_INVALID_ARGUMENT = 1,
    /// A required pointer was NULL.
    HCQ_ERR_NULL_POINTER = 2,
    /// A pointer not aligned as its type (or a bound input) needs.
    HCQ_ERR_MISALIGNED = 3,
    /// A length that does not match the tensor (or a count that does not match the model).
    HCQ_ERR_SIZE = 4,
    /// An index or range out of bounds (input or output index).
    HCQ_ERR_OUT_OF_RANGE = 5,
    /// A handle that is closed, or was never opened.
    HCQ_ERR_CLOSED = 6,
    /// The device is unknown or cannot be opened here.
    HCQ_ERR_NO_DEVICE = 7,
    /// The bundle is malformed, or beyond the device's limits.
    HCQ_ERR_BUNDLE = 8,
    /// Something this build or device does not do.
    HCQ_ERR_UNSUPPORTED = 9,
    /// A wait ran out of time (the call is still in flight).
    HCQ_ERR_TIMEOUT = 10,
    /// The device hung or faulted earlier and runs nothing more.
    HCQ_ERR_DEVICE_HUNG = 11,
    /// Out of device or host memory.
    HCQ_ERR_OUT_OF_MEMORY = 12,
    /// An operating-system call failed (a file, a device node).
    HCQ_ERR_OS = 13,
    /// A caller's buffer is too small for a string; the length it needs was written.
    HCQ_ERR_BUFFER_TOO_SMALL = 14,
    /// A panic inside the library, caught at the boundary (a bug; the message says where).
    HCQ_ERR_PANIC = 15,
    /// Any other error of the runtime.
    HCQ_ERR_OTHER = 16,
}

/// Element types, numbered as the bundle format numbers them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum hcq_dtype {
    /// 1-byte boolean.
    HCQ_BOOL = 0,
    /// Signed 8-bit integer.
    HCQ_INT8 = 1,
    /// Signed 16-bit integer.
    HCQ_INT16 = 2,
    /// Signed 32-bit integer.
    HCQ_INT32 = 3,
    /// Signed 64-bit integer.
    HCQ_INT64 = 4,
    /// Unsigned 8-bit integer.
    HCQ_UINT8 = 5,
    /// Unsigned 16-bit integer.
    HCQ_UINT16 = 6,
    /// Unsigned 32-bit integer.
    HCQ_UINT32 = 7,
    /// Unsigned 64-bit integer.
    HCQ_UINT64 = 8,
    /// IEEE half precision.
    HCQ_FLOAT16 = 9,
    /// bfloat16.
    HCQ_BFLOAT16 = 10,
    /// IEEE single precision.
    HCQ_FLOAT32 = 11,
    /// IEEE double precision.
    HCQ_FLOAT64 = 12,
}

impl hcq_dtype {
    fn from_core(d: hcq::dtype::DType) -> Self {
        use hcq::dtype::DType as D;
        match d {
            D::Bool => Self::HCQ_BOOL,
            D::I8 => Self::HCQ_INT8,
            D::I16 => Self::HCQ_INT16,
            D::I32 => Self::HCQ_INT32,
            D::I64 => Self::HCQ_INT64,
            D::U8 => Self::HCQ_UINT8,
            D::U16 => Self::HCQ_UINT16,
            D::U32 => Self::HCQ_UINT32,
            D::U64 => Self::HCQ_UINT64,
            D::F16 => Self::HCQ_FLOAT16,
            D::BF16 => Self::HCQ_BFLOAT16,
            D::F32 => Self::HCQ_FLOAT32,
            D::F64 => Self::HCQ_FLOAT64,
        }
    }
}

/// `hcq_device_open` flag: record events from the open on (the buffer allocations of every
/// load, every call; QCOM: every launch bracketed by GPU timestamps, which needs this flag).
pub const HCQ_OPEN_PROFILE: u32 = 1;
/// `hcq_device_open` flag: run objects whose CPU level cannot be verified (bundles exported
/// with `native`), with a warning.
pub const HCQ_OPEN_ALLOW_NATIVE: u32 = 2;
/// Alignment in bytes the memory of a bound input needs (`hcq_model_bind_input`), on every
/// device. (On QCOM an input a kernel reads as an image needs 64, its texture base: that bind
/// is `HCQ_ERR_UNSUPPORTED` naming the launch, and a 64-aligned frame avoids it.)
pub const HCQ_BIND_ALIGN: usize = 16;
const _: () = assert!(HCQ_BIND_ALIGN == hcq_runtime::BIND_ALIGN);

/// An opened device.
///
/// Thread-safety: a device handle may be used from any thread, concurrently (loads on one
/// device are serialized inside). Closing it does not end the models loaded on it: each keeps
/// the device open until it is closed itself.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct hcq_device {
    /// Opaque id (0 is never a valid handle).
    pub id: u64,
}

/// A bundle loaded on a device.
///
/// Thread-safety: a model handle may be used from any thread; calls on one model are
/// serialized by a lock inside it (one runs at a time; a second waits), calls on different
/// models run concurrently. `hcq_model_close` from another thread waits for the call in
/// progress and for a submitted call, then frees the model; every later call on the handle is
/// `HCQ_ERR_CLOSED`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct hcq_model {
    /// Opaque id (0 is never a valid handle).
    pub id: u64,
}

/// An input or output of a model (`hcq_model_input`, `hcq_model_output`). The pointers are
/// owned by the model and valid until it is closed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hcq_tensor_info {
    /// `input0`, `output0`, ... (NUL-terminated).
    pub name: *const c_char,
    /// Element type.
    pub dtype: hcq_dtype,
    /// Number of dimensions.
    pub ndim: usize,
    /// `ndim` sizes, row-major.
    pub shape: *const u64,
    /// Size in bytes (what set, bind and read take).
    pub nbytes: usize,
}
