//! The library's own calls (version, dtype sizes, the device registry), devices, and loading
//! a bundle on one into a model.

use crate::error::{fail, guard};
use crate::handle::{DeviceCell, ModelCell, devices, models};
use crate::hcq_status::*;
use crate::ptr::{bytes_in, out, str_in, str_out};
use crate::{HCQ_OPEN_ALLOW_NATIVE, HCQ_OPEN_PROFILE, hcq_device, hcq_model, hcq_status};
use hcq_runtime::Bundle;
use std::ffi::{CStr, c_char, c_void};
use std::path::Path;
use std::sync::Mutex;

/// The PASS/FAIL lines of `hcq devices` (the front door's registry report).
fn devices_report() -> String {
    let reports = hcq_runtime::devices();
    hcq::device::ReportList(&reports).to_string().trim_end().to_string()
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
    guard("hcq_devices", || str_out(&devices_report(), buf, cap, len))
}

/// Open device `name` (`"CPU"`, `"SIM"`, `"QCOM"`, `"QCOM:SIM"`, `"AMD"`, `"AMD:SIM"`, any name
/// `hcq_devices` lists, any case; NULL or `""`: the device `$DEV` names, else CPU) with `flags` (`HCQ_OPEN_*`) into `*out`.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_device_open(name: *const c_char, flags: u32, out_dev: *mut hcq_device) -> hcq_status {
    guard("hcq_device_open", || {
        let o = out(out_dev, "out")?;
        let name = str_in(name, "name")?.unwrap_or("");
        if flags & !(HCQ_OPEN_PROFILE | HCQ_OPEN_ALLOW_NATIVE) != 0 {
            return fail(HCQ_ERR_INVALID_ARGUMENT, format!("unknown flags {flags:#x}"));
        }
        let opts = hcq_runtime::Options {
            profile: flags & HCQ_OPEN_PROFILE != 0,
            allow_native: flags & HCQ_OPEN_ALLOW_NATIVE != 0,
            ..hcq_runtime::Options::default()
        };
        let d = hcq_runtime::open_with(name, opts)?;
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
        str_out(&d.dev.description(), buf, cap, len)
    })
}

/// Close a device handle. Models loaded on it stay usable until they are closed.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_device_close(dev: hcq_device) -> hcq_status {
    guard("hcq_device_close", || devices().remove(dev.id, "device").map(drop))
}

/// Load the bundle at `path` (a v1 directory with `manifest.json`, or a `.hcqb` file) on `dev`
/// into `*out`: buffers allocated and filled, programs loaded, launches captured.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_load(dev: hcq_device, path: *const c_char, out_model: *mut hcq_model) -> hcq_status {
    guard("hcq_model_load", || {
        let o = out(out_model, "out")?;
        let Some(path) = str_in(path, "path")? else { return fail(HCQ_ERR_NULL_POINTER, "path is NULL") };
        let d = devices().get(dev.id, "device")?;
        let m = d.load(Bundle::Path(Path::new(path)))?;
        *o = hcq_model { id: models().insert(ModelCell::new(m)) };
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
        let m = d.load(Bundle::Bytes(bytes))?;
        *o = hcq_model { id: models().insert(ModelCell::new(m)) };
        Ok(())
    })
}
