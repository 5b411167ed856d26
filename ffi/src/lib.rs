//! libhcq: the C ABI of hcq (`include/hcq.h`, generated from this file by cbindgen).
//!
//! Open a device by name, load a bundle on it, list its inputs and outputs, set inputs (by
//! copy, or bound to the caller's memory zero-copy), run it (blocking, or submit and wait with
//! a timeout), read outputs (by copy, or a pointer valid until the next call), profile to a
//! Perfetto file, close. The ctypes Python package `hcq` (`python/hcq`) wraps exactly this.
//!
//! Rules every function follows:
//! - it returns an [`hcq_status`]; on failure [`hcq_last_error`] gives the message (the
//!   runtime's error, with its context) of the last call that failed on this thread;
//! - no panic crosses the boundary: one is caught and returned as `HCQ_ERR_PANIC`;
//! - every pointer is checked for null and alignment, every length against the tensor;
//! - handles are ids in a table, not pointers: a closed or never-opened handle is
//!   `HCQ_ERR_CLOSED`, never a use of freed memory.
//!
//! Everything device-specific sits behind the private `session` module.

// The C names are the ABI (cbindgen copies them into the header as they are).
#![allow(non_camel_case_types)]

mod session;

use hcq::error::Error;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

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

use hcq_status::*;

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
/// Alignment in bytes the memory of a bound input needs (`hcq_model_bind_input`).
pub const HCQ_BIND_ALIGN: usize = 16;
const _: () = assert!(HCQ_BIND_ALIGN as u64 == session::BIND_ALIGN);

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

// ---------------------------------------------------------------------------------------------
// errors

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A failure at the boundary: a status and its message.
struct Fail(hcq_status, String);

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

fn fail<T>(s: hcq_status, msg: impl Into<String>) -> Result<T, Fail> {
    Err(Fail(s, msg.into()))
}

fn set_last_error(msg: &str) {
    // a message with a NUL in it is cut there
    let bytes: Vec<u8> = msg.bytes().take_while(|&b| b != 0).collect();
    let c = CString::new(bytes).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// Run `f` at the boundary: its failure becomes a status and the thread's last error, a
/// panic becomes `HCQ_ERR_PANIC`.
fn guard(what: &str, f: impl FnOnce() -> Result<(), Fail>) -> hcq_status {
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

// ---------------------------------------------------------------------------------------------
// pointer checks

/// `p` as a writable reference: not null, aligned for `T`.
fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Fail> {
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
fn bytes_in<'a>(p: *const c_void, len: usize, what: &str) -> Result<&'a [u8], Fail> {
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
fn bytes_out<'a>(p: *mut c_void, len: usize, what: &str) -> Result<&'a mut [u8], Fail> {
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
fn str_in<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, Fail> {
    if p.is_null() {
        return Ok(None);
    }
    // Not null; the caller's contract: a NUL-terminated string.
    // SAFETY: the C contract of every string argument.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map(Some).or_else(|_| fail(HCQ_ERR_INVALID_ARGUMENT, format!("{what} is not UTF-8")))
}

/// Copy `s` and a NUL into `buf` (`cap` bytes); `len` (if not NULL) gets `s.len() + 1`.
fn str_out(s: &str, buf: *mut c_char, cap: usize, len: *mut usize) -> Result<(), Fail> {
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

// ---------------------------------------------------------------------------------------------
// handles

/// A tensor's name and shape as the header hands them out.
type Info = (CString, Vec<u64>);

/// A model and what the header hands out about it (owned here, so the pointers stay valid).
struct ModelCell {
    model: Mutex<Option<session::Model>>,
    infos_in: Vec<Info>,
    infos_out: Vec<Info>,
    tensors_in: Vec<session::Tensor>,
    tensors_out: Vec<session::Tensor>,
}

// Every field is Send + Sync except through the raw pointers the C side gets, which point into
// this cell's own immutable vectors.

struct Table<T> {
    map: RwLock<HashMap<u64, Arc<T>>>,
}

impl<T> Table<T> {
    fn get(&self, id: u64, what: &str) -> Result<Arc<T>, Fail> {
        let m = self.map.read().unwrap_or_else(|p| p.into_inner());
        match m.get(&id) {
            Some(x) => Ok(x.clone()),
            None => fail(HCQ_ERR_CLOSED, format!("{what} handle {id} is closed or was never opened")),
        }
    }
    fn insert(&self, x: T) -> u64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.map.write().unwrap_or_else(|p| p.into_inner()).insert(id, Arc::new(x));
        id
    }
    fn remove(&self, id: u64, what: &str) -> Result<Arc<T>, Fail> {
        let mut m = self.map.write().unwrap_or_else(|p| p.into_inner());
        match m.remove(&id) {
            Some(x) => Ok(x),
            None => fail(HCQ_ERR_CLOSED, format!("{what} handle {id} is closed or was never opened")),
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A device and the lock its loads take (one load at a time per device).
struct DeviceCell {
    dev: session::Device,
    loading: Mutex<()>,
}

impl DeviceCell {
    fn load(
        &self,
        f: impl FnOnce(&session::Device) -> hcq::error::Result<session::Model>,
    ) -> Result<session::Model, Fail> {
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        Ok(f(&self.dev)?)
    }
}

fn devices() -> &'static Table<DeviceCell> {
    static T: std::sync::OnceLock<Table<DeviceCell>> = std::sync::OnceLock::new();
    T.get_or_init(|| Table { map: RwLock::new(HashMap::new()) })
}

fn models() -> &'static Table<ModelCell> {
    static T: std::sync::OnceLock<Table<ModelCell>> = std::sync::OnceLock::new();
    T.get_or_init(|| Table { map: RwLock::new(HashMap::new()) })
}

/// Run `f` on model `m` under its lock.
fn with_model<R>(m: hcq_model, f: impl FnOnce(&mut session::Model) -> Result<R, Fail>) -> Result<R, Fail> {
    let cell = models().get(m.id, "model")?;
    let mut g = match cell.model.lock() {
        Ok(g) => g,
        Err(_) => return fail(HCQ_ERR_PANIC, "model is unusable after an internal panic; close it"),
    };
    match g.as_mut() {
        Some(model) => f(model),
        None => fail(HCQ_ERR_CLOSED, format!("model handle {} is closed", m.id)),
    }
}

// ---------------------------------------------------------------------------------------------
// the API

/// The message of the last call that failed on this thread (NUL-terminated, never NULL; empty
/// when none failed). Valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_last_error() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
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

/// The library's version (`"0.1.0"`), static.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_version() -> *const c_char {
    static V: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => c"?",
    };
    V.as_ptr()
}

/// Bytes per element of `dtype` (an `hcq_dtype` value; 0 for a value that is none).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_dtype_size(dtype: i32) -> usize {
    u8::try_from(dtype).ok().and_then(|c| hcq::dtype::DType::from_code(c).ok()).map_or(0, |d| d.size())
}

/// The registry's report, one PASS/FAIL line per device kind (what `hcq devices` prints), into
/// `buf` (`cap` bytes, NUL-terminated). `len` (may be NULL) gets the bytes needed with the NUL;
/// `HCQ_ERR_BUFFER_TOO_SMALL` when `cap` is less.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_devices(buf: *mut c_char, cap: usize, len: *mut usize) -> hcq_status {
    guard("hcq_devices", || str_out(&session::devices_report(), buf, cap, len))
}

/// Open device `name` (`"CPU"`, `"SIM"`, `"QCOM"`, `"QCOM:SIM"`, any case; NULL or `""`: the
/// device `$DEV` names, else CPU) with `flags` (`HCQ_OPEN_*`) into `*out`.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_device_open(name: *const c_char, flags: u32, out_dev: *mut hcq_device) -> hcq_status {
    guard("hcq_device_open", || {
        let o = out(out_dev, "out")?;
        let name = str_in(name, "name")?.unwrap_or("");
        if flags & !(HCQ_OPEN_PROFILE | HCQ_OPEN_ALLOW_NATIVE) != 0 {
            return fail(HCQ_ERR_INVALID_ARGUMENT, format!("unknown flags {flags:#x}"));
        }
        let opts = session::Options {
            profile: flags & HCQ_OPEN_PROFILE != 0,
            allow_native: flags & HCQ_OPEN_ALLOW_NATIVE != 0,
        };
        let d = session::open(name, opts)?;
        *o = hcq_device { id: devices().insert(DeviceCell { dev: d, loading: Mutex::new(()) }) };
        Ok(())
    })
}

/// The device's canonical name and description (`"CPU (8 cores)"`) into `buf`, as
/// [`hcq_devices`] writes strings.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_device_describe(dev: hcq_device, buf: *mut c_char, cap: usize, len: *mut usize) -> hcq_status {
    guard("hcq_device_describe", || {
        let d = devices().get(dev.id, "device")?;
        str_out(d.dev.description(), buf, cap, len)
    })
}

/// Close a device handle. Models loaded on it stay usable until they are closed.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_device_close(dev: hcq_device) -> hcq_status {
    guard("hcq_device_close", || devices().remove(dev.id, "device").map(drop))
}

fn cell(model: session::Model) -> ModelCell {
    let info = |t: &session::Tensor| (CString::new(t.name.clone()).unwrap_or_default(), t.shape.clone());
    ModelCell {
        infos_in: model.inputs().iter().map(info).collect(),
        infos_out: model.outputs().iter().map(info).collect(),
        tensors_in: model.inputs().to_vec(),
        tensors_out: model.outputs().to_vec(),
        model: Mutex::new(Some(model)),
    }
}

/// Load the bundle at `path` (a v1 directory with `manifest.json`, or a `.hcqb` file) on `dev`
/// into `*out`: buffers allocated and filled, programs loaded, launches captured.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_load(dev: hcq_device, path: *const c_char, out_model: *mut hcq_model) -> hcq_status {
    guard("hcq_model_load", || {
        let o = out(out_model, "out")?;
        let Some(path) = str_in(path, "path")? else { return fail(HCQ_ERR_NULL_POINTER, "path is NULL") };
        let d = devices().get(dev.id, "device")?;
        let m = d.load(|d| d.load_path(Path::new(path)))?;
        *o = hcq_model { id: models().insert(cell(m)) };
        Ok(())
    })
}

/// Load a bundle from the `len` bytes of a `.hcqb` file at `data` (copied as needed; the
/// memory may be freed when this returns).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_load_bytes(
    dev: hcq_device,
    data: *const c_void,
    len: usize,
    out_model: *mut hcq_model,
) -> hcq_status {
    guard("hcq_model_load_bytes", || {
        let o = out(out_model, "out")?;
        let bytes = bytes_in(data, len, "data")?;
        let d = devices().get(dev.id, "device")?;
        let m = d.load(|d| d.load_bytes(bytes, "(bytes)"))?;
        *o = hcq_model { id: models().insert(cell(m)) };
        Ok(())
    })
}

/// The model's name (the bundle's) into `buf`, as [`hcq_devices`] writes strings.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_name(m: hcq_model, buf: *mut c_char, cap: usize, len: *mut usize) -> hcq_status {
    guard("hcq_model_name", || {
        let name = with_model(m, |x| Ok(x.name().to_string()))?;
        str_out(&name, buf, cap, len)
    })
}

/// The number of inputs and outputs (either pointer may be NULL).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_count(m: hcq_model, n_inputs: *mut usize, n_outputs: *mut usize) -> hcq_status {
    guard("hcq_model_count", || {
        let c = models().get(m.id, "model")?;
        if !n_inputs.is_null() {
            *out(n_inputs, "n_inputs")? = c.tensors_in.len();
        }
        if !n_outputs.is_null() {
            *out(n_outputs, "n_outputs")? = c.tensors_out.len();
        }
        Ok(())
    })
}

fn tensor_info(
    m: hcq_model,
    i: usize,
    info: *mut hcq_tensor_info,
    pick: fn(&ModelCell) -> (&[Info], &[session::Tensor]),
    what: &str,
) -> Result<(), Fail> {
    let o = out(info, "info")?;
    let c = models().get(m.id, "model")?;
    let (infos, tensors) = pick(&c);
    let (Some((name, shape)), Some(t)) = (infos.get(i), tensors.get(i)) else {
        return fail(HCQ_ERR_OUT_OF_RANGE, format!("{what} {i} (the model has {})", tensors.len()));
    };
    // The strings and shapes live in the cell, which the table keeps until the model is closed.
    *o = hcq_tensor_info {
        name: name.as_ptr(),
        dtype: hcq_dtype::from_core(t.dtype),
        ndim: shape.len(),
        shape: shape.as_ptr(),
        nbytes: t.nbytes as usize,
    };
    Ok(())
}

/// Input `i`'s name, dtype, shape and size.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_input(m: hcq_model, i: usize, info: *mut hcq_tensor_info) -> hcq_status {
    guard("hcq_model_input", || tensor_info(m, i, info, |c| (&c.infos_in, &c.tensors_in), "input"))
}

/// Output `i`'s name, dtype, shape and size.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_output(m: hcq_model, i: usize, info: *mut hcq_tensor_info) -> hcq_status {
    guard("hcq_model_output", || tensor_info(m, i, info, |c| (&c.infos_out, &c.tensors_out), "output"))
}

/// Whether an array of element type `dtype` (an `hcq_dtype` value) and shape `shape` (`ndim`
/// sizes) fits input `i`: `HCQ_OK`, else `HCQ_ERR_INVALID_ARGUMENT` (dtype) or `HCQ_ERR_SIZE`
/// (shape) with a message naming both. For wrappers that check arrays (the Python package).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_check_input(
    m: hcq_model,
    i: usize,
    dtype: i32,
    ndim: usize,
    shape: *const u64,
) -> hcq_status {
    guard("hcq_model_check_input", || {
        let c = models().get(m.id, "model")?;
        let Some(t) = c.tensors_in.get(i) else {
            return fail(HCQ_ERR_OUT_OF_RANGE, format!("input {i} (the model has {})", c.tensors_in.len()));
        };
        let Some(bytes) = ndim.checked_mul(size_of::<u64>()) else {
            return fail(HCQ_ERR_SIZE, format!("ndim {ndim} is beyond any shape"));
        };
        let raw = bytes_in(shape.cast(), bytes, "shape")?;
        if !(raw.as_ptr() as usize).is_multiple_of(align_of::<u64>()) {
            return fail(HCQ_ERR_MISALIGNED, "shape is not aligned to 8 bytes");
        }
        let got: Vec<u64> = raw.chunks_exact(8).map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default())).collect();
        let want = t.dtype;
        let name = |d: i32| {
            u8::try_from(d).ok().and_then(|c| hcq::dtype::DType::from_code(c).ok()).map_or("unknown", |d| d.name())
        };
        if dtype != i32::from(want.code()) {
            return fail(
                HCQ_ERR_INVALID_ARGUMENT,
                format!("input {i} ({}): dtype {}, the model takes {}", t.name, name(dtype), want.name()),
            );
        }
        if got != t.shape {
            return fail(HCQ_ERR_SIZE, format!("input {i} ({}): shape {got:?}, the model takes {:?}", t.name, t.shape));
        }
        Ok(())
    })
}

/// Copy `len` bytes (exactly input `i`'s size) from `data` into input `i`, after a call in
/// flight. Refused for an input bound to caller memory.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_set_input(m: hcq_model, i: usize, data: *const c_void, len: usize) -> hcq_status {
    guard("hcq_model_set_input", || {
        let d = bytes_in(data, len, "data")?;
        with_model(m, |x| Ok(x.set_input(i, d)?))
    })
}

/// Bind input `i` to the caller's memory at `ptr` (`len`: exactly the input's size; aligned to
/// `HCQ_BIND_ALIGN`), zero-copy: every later call reads the input there, so the caller writes
/// its next frame in place. `ptr` NULL unbinds it (the model's own buffer again, as it was
/// before the bind). Waits for a call in flight first. CPU device only (others:
/// `HCQ_ERR_UNSUPPORTED`), and only for an input the bundle's launches use whole.
///
/// Lifetime rule: the memory must stay valid, and unwritten while a call runs, until the
/// input is unbound or rebound or the model closed; each of these waits for the calls that
/// use it.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_bind_input(m: hcq_model, i: usize, ptr: *mut c_void, len: usize) -> hcq_status {
    guard("hcq_model_bind_input", || {
        with_model(m, |x| {
            // The header states the lifetime rule this relies on; size and alignment are
            // checked inside.
            // SAFETY: the caller's memory stays valid as `bind` requires (the C contract).
            unsafe { x.bind(i, ptr.cast(), len) }?;
            Ok(())
        })
    })
}

/// One forward pass: submit and wait (a submitted call is waited for first).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_run(m: hcq_model) -> hcq_status {
    guard("hcq_model_run", || with_model(m, |x| Ok(x.run()?)))
}

/// Start one forward pass without waiting (`hcq_model_wait` waits; a call still in flight is
/// waited for first).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_submit(m: hcq_model) -> hcq_status {
    guard("hcq_model_submit", || with_model(m, |x| Ok(x.submit()?)))
}

/// Wait for the submitted call (`HCQ_OK` at once when none is in flight). `timeout_ms` < 0: the
/// device's own policy (30 s without progress). Otherwise a call not done after `timeout_ms`
/// is `HCQ_ERR_TIMEOUT` and stays in flight: wait again, or close (which waits).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_wait(m: hcq_model, timeout_ms: i64) -> hcq_status {
    guard("hcq_model_wait", || {
        let t = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        with_model(m, |x| {
            if x.wait(t)? {
                Ok(())
            } else {
                fail(
                    HCQ_ERR_TIMEOUT,
                    format!(
                        "the call submitted on {} is still running after {timeout_ms} ms (wait again, or close the model, which waits)",
                        x.device()
                    ),
                )
            }
        })
    })
}

/// Whether a submitted call was not waited for yet (`*in_flight` 1 or 0).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_in_flight(m: hcq_model, in_flight: *mut i32) -> hcq_status {
    guard("hcq_model_in_flight", || {
        let o = out(in_flight, "in_flight")?;
        *o = with_model(m, |x| Ok(i32::from(x.in_flight())))?;
        Ok(())
    })
}

/// Copy output `i` (`len`: exactly its size) into `data`, after a call in flight.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_read_output(m: hcq_model, i: usize, data: *mut c_void, len: usize) -> hcq_status {
    guard("hcq_model_read_output", || {
        let d = bytes_out(data, len, "data")?;
        with_model(m, |x| Ok(x.read_output(i, d)?))
    })
}

/// A pointer to output `i`'s bytes (`*len`: its size; may be NULL) after a call in flight,
/// valid until the next run, submit, input write, bind or close of the model. CPU: the
/// output's device memory itself; other devices: a host copy made by this call.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_output_ptr(m: hcq_model, i: usize, ptr: *mut *const c_void, len: *mut usize) -> hcq_status {
    guard("hcq_model_output_ptr", || {
        let o = out(ptr, "ptr")?;
        let (p, n) = with_model(m, |x| {
            let p = x.output_ptr(i)?;
            Ok((p, x.outputs()[i].nbytes as usize))
        })?;
        if !len.is_null() {
            *out(len, "len")? = n;
        }
        *o = p.cast();
        Ok(())
    })
}

/// Copy inputs in, run, copy outputs out, in one call: `inputs[j]` (`input_lens[j]` bytes) for
/// each of the model's `n_inputs` inputs (a NULL entry keeps that input as it is, e.g. bound),
/// `outputs[j]` (`output_lens[j]` bytes) for each of its `n_outputs` outputs (a NULL entry is
/// not read). The counts must be the model's.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_call(
    m: hcq_model,
    inputs: *const *const c_void,
    input_lens: *const usize,
    n_inputs: usize,
    outputs: *const *mut c_void,
    output_lens: *const usize,
    n_outputs: usize,
) -> hcq_status {
    guard("hcq_model_call", || {
        let array = |p: *const usize, n: usize, what: &str| -> Result<&[usize], Fail> {
            let Some(bytes) = n.checked_mul(size_of::<usize>()) else {
                return fail(HCQ_ERR_SIZE, format!("{what}: {n} entries is beyond any array"));
            };
            let b = bytes_in(p.cast(), bytes, what)?;
            if !(b.as_ptr() as usize).is_multiple_of(align_of::<usize>()) {
                return fail(HCQ_ERR_MISALIGNED, format!("{what} is not aligned"));
            }
            // Checked: not null (when n > 0), aligned, n elements long.
            // SAFETY: the caller's array of `n` elements.
            Ok(unsafe { core::slice::from_raw_parts(b.as_ptr().cast::<usize>(), n) })
        };
        let ins = array(inputs.cast(), n_inputs, "inputs")?;
        let in_lens = array(input_lens, n_inputs, "input_lens")?;
        let outs = array(outputs.cast(), n_outputs, "outputs")?;
        let out_lens = array(output_lens, n_outputs, "output_lens")?;
        with_model(m, |x| {
            if n_inputs != x.inputs().len() || n_outputs != x.outputs().len() {
                return fail(
                    HCQ_ERR_SIZE,
                    format!(
                        "{n_inputs} inputs and {n_outputs} outputs given, the model has {} and {}",
                        x.inputs().len(),
                        x.outputs().len()
                    ),
                );
            }
            for (j, (&p, &n)) in ins.iter().zip(in_lens).enumerate() {
                if p != 0 {
                    x.set_input(j, bytes_in(p as *const c_void, n, "inputs[j]")?)?;
                }
            }
            x.run()?;
            for (j, (&p, &n)) in outs.iter().zip(out_lens).enumerate() {
                if p != 0 {
                    x.read_output(j, bytes_out(p as *mut c_void, n, "outputs[j]")?)?;
                }
            }
            Ok(())
        })
    })
}

/// Compare every output that has expected bytes in the bundle with what the last call left:
/// `*ok` 1 when all match (exactly, or within the bundle format's tolerance across
/// architectures), `*compared` (may be NULL) the number compared.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_check(m: hcq_model, ok: *mut i32, compared: *mut usize) -> hcq_status {
    guard("hcq_model_check", || {
        let o = out(ok, "ok")?;
        let (good, n) = with_model(m, |x| Ok(x.check()?))?;
        if !compared.is_null() {
            *out(compared, "compared")? = n;
        }
        *o = i32::from(good);
        Ok(())
    })
}

/// Start recording a profile of this model's calls (each call; on CPU and SIM each kernel and
/// copy). Events recorded before on the device are dropped.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_profile_begin(m: hcq_model) -> hcq_status {
    guard("hcq_model_profile_begin", || with_model(m, |x| Ok(x.profile_begin()?)))
}

/// Stop recording and write the profile as a Perfetto (Chrome trace JSON) file at `path`
/// (open it in ui.perfetto.dev). `events` (may be NULL) gets the number of events written.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_profile_end(m: hcq_model, path: *const c_char, events: *mut usize) -> hcq_status {
    guard("hcq_model_profile_end", || {
        let Some(path) = str_in(path, "path")? else { return fail(HCQ_ERR_NULL_POINTER, "path is NULL") };
        let n = with_model(m, |x| Ok(x.profile_end(Path::new(path))?))?;
        if !events.is_null() {
            *out(events, "events")? = n;
        }
        Ok(())
    })
}

/// Close a model: waits for the call in progress on another thread and for a submitted call,
/// then frees it (a bound input's memory is not used after this returns). Later calls on the
/// handle are `HCQ_ERR_CLOSED`.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_close(m: hcq_model) -> hcq_status {
    guard("hcq_model_close", || {
        let c = models().remove(m.id, "model")?;
        let taken = match c.model.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        drop(taken);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: `hcq_last_error` returns a NUL-terminated string of this thread.
        unsafe { CStr::from_ptr(hcq_last_error()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_is_caught_and_becomes_a_status_and_a_message() {
        let s = guard("test", || panic!("boom {}", 7));
        assert_eq!(s, HCQ_ERR_PANIC);
        assert!(last().contains("boom 7"), "{}", last());
        assert_eq!(guard("test", || Ok(())), HCQ_OK);
    }

    fn chain100() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/chain100")
    }

    fn cpu() -> hcq_device {
        let mut d = hcq_device { id: 0 };
        assert_eq!(hcq_device_open(c"cpu".as_ptr(), 0, &mut d), HCQ_OK, "{}", last());
        d
    }

    #[test]
    fn a_bundle_loads_from_bytes_in_memory_and_runs() {
        let bytes = session::bundle_bytes(&chain100()).unwrap();
        let d = cpu();
        let mut m = hcq_model { id: 0 };
        assert_eq!(hcq_model_load_bytes(d, bytes.as_ptr().cast(), bytes.len(), &mut m), HCQ_OK, "{}", last());
        drop(bytes); // the model does not keep the caller's bytes
        let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
        let mut y = [0f32; 16];
        assert_eq!(hcq_model_set_input(m, 0, x.as_ptr().cast(), 64), HCQ_OK);
        assert_eq!(hcq_model_run(m), HCQ_OK);
        assert_eq!(hcq_model_read_output(m, 0, y.as_mut_ptr().cast(), 64), HCQ_OK);
        assert_eq!(y[5], 105.0);
        let mut flight = 7;
        assert_eq!(hcq_model_submit(m), HCQ_OK);
        assert_eq!(hcq_model_in_flight(m, &mut flight), HCQ_OK);
        assert_eq!(flight, 1);
        assert_eq!(hcq_model_wait(m, -1), HCQ_OK);
        assert_eq!(hcq_model_in_flight(m, &mut flight), HCQ_OK);
        assert_eq!(flight, 0);
        assert_eq!(hcq_model_close(m), HCQ_OK);
        assert_eq!(hcq_device_close(d), HCQ_OK);
        assert_eq!(hcq_device_close(d), HCQ_ERR_CLOSED);
        let garbage = [0u8; 64];
        assert_eq!(hcq_model_load_bytes(cpu(), garbage.as_ptr().cast(), 64, &mut m), HCQ_ERR_BUNDLE, "{}", last());
    }

    #[test]
    fn pointers_lengths_and_flags_are_checked() {
        let d = cpu();
        let path = CString::new(chain100().to_str().unwrap()).unwrap();
        assert_eq!(hcq_model_load(d, path.as_ptr(), core::ptr::null_mut()), HCQ_ERR_NULL_POINTER);
        assert!(last().contains("out is NULL"), "{}", last());
        let mut words = [0u64; 3];
        let odd = (words.as_mut_ptr() as usize + 4) as *mut hcq_model;
        assert_eq!(hcq_model_load(d, path.as_ptr(), odd), HCQ_ERR_MISALIGNED, "{}", last());
        let mut m = hcq_model { id: 0 };
        assert_eq!(hcq_model_load(d, core::ptr::null(), &mut m), HCQ_ERR_NULL_POINTER);
        assert_eq!(hcq_model_load(d, path.as_ptr(), &mut m), HCQ_OK, "{}", last());
        assert_eq!(hcq_model_set_input(m, 0, core::ptr::null(), 64), HCQ_ERR_NULL_POINTER);
        assert_eq!(hcq_model_set_input(m, 0, words.as_ptr().cast(), 24), HCQ_ERR_SIZE);
        assert_eq!(hcq_model_set_input(m, 9, words.as_ptr().cast(), 24), HCQ_ERR_OUT_OF_RANGE);
        assert_eq!(hcq_model_read_output(m, 0, words.as_mut_ptr().cast(), 24), HCQ_ERR_SIZE);
        let mut info = core::mem::MaybeUninit::<hcq_tensor_info>::uninit();
        assert_eq!(hcq_model_output(m, 1, info.as_mut_ptr()), HCQ_ERR_OUT_OF_RANGE);
        assert_eq!(hcq_model_input(m, 0, info.as_mut_ptr()), HCQ_OK);
        // SAFETY: written by the call above.
        let info = unsafe { info.assume_init() };
        assert_eq!((info.dtype, info.ndim, info.nbytes), (hcq_dtype::HCQ_FLOAT32, 1, 64));
        // SAFETY: `shape` points at `ndim` sizes owned by the open model.
        assert_eq!(unsafe { *info.shape }, 16);
        // a string into a buffer too small: the length needed comes back
        let mut need = 0usize;
        let mut small = [0 as c_char; 4];
        assert_eq!(hcq_model_name(m, small.as_mut_ptr(), 4, &mut need), HCQ_ERR_BUFFER_TOO_SMALL);
        assert_eq!(need, "chain100".len() + 1);
        // hcq_model_call: counts must be the model's
        let ins = [core::ptr::null::<c_void>()];
        let lens = [64usize];
        let outs = [core::ptr::null_mut::<c_void>()];
        assert_eq!(hcq_model_call(m, ins.as_ptr(), lens.as_ptr(), 1, outs.as_ptr(), lens.as_ptr(), 1), HCQ_OK);
        assert_eq!(hcq_model_call(m, ins.as_ptr(), lens.as_ptr(), 2, outs.as_ptr(), lens.as_ptr(), 1), HCQ_ERR_SIZE);
        let huge = usize::MAX;
        assert_eq!(hcq_model_call(m, ins.as_ptr(), lens.as_ptr(), huge, outs.as_ptr(), lens.as_ptr(), 1), HCQ_ERR_SIZE);
        assert!(last().contains("beyond any array"), "{}", last());
        // flags, status names, dtype sizes
        let mut d2 = hcq_device { id: 0 };
        assert_eq!(hcq_device_open(core::ptr::null(), 0x80, &mut d2), HCQ_ERR_INVALID_ARGUMENT);
        // SAFETY: static NUL-terminated strings.
        let name = |s: i32| unsafe { CStr::from_ptr(hcq_status_name(s)) }.to_str().unwrap();
        assert_eq!(name(10), "HCQ_ERR_TIMEOUT");
        assert_eq!(name(99), "HCQ_UNKNOWN");
        assert_eq!((hcq_dtype_size(11), hcq_dtype_size(10), hcq_dtype_size(-1)), (4, 2, 0));
        assert_eq!(hcq_model_close(m), HCQ_OK);
        assert_eq!(hcq_model_run(m), HCQ_ERR_CLOSED);
        assert_eq!(hcq_model_run(hcq_model { id: 0 }), HCQ_ERR_CLOSED);
        assert_eq!(hcq_device_close(d), HCQ_OK);
    }

    #[test]
    fn a_model_outlives_its_device_handle_and_errors_stay_per_thread() {
        let d = cpu();
        let path = CString::new(chain100().to_str().unwrap()).unwrap();
        let mut m = hcq_model { id: 0 };
        assert_eq!(hcq_model_load(d, path.as_ptr(), &mut m), HCQ_OK);
        assert_eq!(hcq_device_close(d), HCQ_OK);
        assert_eq!(hcq_model_run(m), HCQ_OK, "{}", last());
        assert_eq!(hcq_model_run(hcq_model { id: u64::MAX }), HCQ_ERR_CLOSED);
        let here = last();
        let other = std::thread::spawn(last).join().unwrap();
        assert!(here.contains("closed") && other.is_empty(), "{here:?} {other:?}");
        assert_eq!(hcq_model_close(m), HCQ_OK);
    }
}
