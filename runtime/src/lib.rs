//! The hcq front door: open a device by its name, load a bundle on it, run it, read its
//! outputs, profile it — without knowing which crate drives which device.
//!
//! ```
//! # let bundle = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/mlp");
//! let mut model = hcq_runtime::open("CPU")?.load(bundle)?;
//! model.run()?;
//! let logits = model.output("output0")?;
//! # assert_eq!(logits.len() as u64, model.outputs()[0].nbytes);
//! # assert!(model.check()?.ok);
//! # Ok::<(), hcq_runtime::Error>(())
//! ```
//!
//! The same three statements run it on the simulated Adreno 630 behind the KGSL driver:
//!
//! ```
//! # let bundle = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/mlp");
//! let mut model = hcq_runtime::open("QCOM:SIM")?.load(bundle)?;
//! model.run()?;
//! let logits = model.output("output0")?;
//! # assert!(model.check()?.ok);
//! # Ok::<(), hcq_runtime::Error>(())
//! ```
//!
//! # Devices
//!
//! Names follow tinygrad's: case-insensitive, a trailing `:0` dropped. Every device kind is one
//! entry of the [`registry`] (the plug-in point, [`hcq_runner::plug`]): the built-in kinds are
//! listed once, in `devices.rs` — `CPU` (the host's cores through the soft command processor,
//! `hcq_cpu::plug`), `SIM` and `SIM:1` (the host's CPU objects on simulated command
//! processors, `hcq_sim::plug`), `QCOM`, `KGSL+QCOM`, `MSM+QCOM` (an Adreno 630 through
//! `/dev/kgsl-3d0` or the mainline MSM DRM driver's render node, `hcq_qcom::device::QcomKind`)
//! and `QCOM:SIM`, `KGSL+QCOM:SIM`, `MSM+QCOM:SIM` (the same driver path against a simulated
//! KGSL and GPU, `hcq_sim_adreno::QcomSimKind`) — and a program adds its own with
//! [`register`]. The front door knows no device: it finds the kind by name, opens it into an
//! [`OpenDevice`] and loads bundles into [`LoadedModel`] trait objects. [`open_default`] opens
//! the device `$DEV` names (`DEV=QCOM`, `DEV=QCOM:SIM`), else `CPU`; an unknown name lists the
//! known ones; [`devices`] probes every kind (`hcq devices`).
//!
//! # A model
//!
//! [`Device::load`] takes a bundle path (a v1 directory or a `.hcqb` file) or the bytes of a
//! `.hcqb` file ([`Bundle`]). The [`Model`] it returns lists its [`inputs`](Model::inputs) and
//! [`outputs`](Model::outputs) ([`Tensor`]: name, shape, dtype, bytes; bundles record no names,
//! so they are tinygrad's `input0`, `output0`, ... by position), takes inputs by copy
//! ([`Model::set_input`]), runs blocking ([`Model::run`]) or as [`Model::submit`] then
//! [`Model::wait`] with a timeout, and reads outputs back ([`Model::output`],
//! [`Model::read_output`]). With [`Options::profile`] every call's events are recorded and
//! [`Model::write_profile`] writes them as a Perfetto (Chrome trace JSON) file.
//!
//! Errors are the core's [`Error`], with context naming the device and the bundle.
//!
//! A C ABI or a Python package wraps exactly this surface: `open(name) -> Device`,
//! `device.load(path or bytes) -> Model`, the model's tensors, `set_input`, `run` or
//! `submit` + `wait`, `output`, `write_profile`.

use hcq::device::DeviceReport;
use hcq::error::ResultExt;
use hcq_bundle::hcqb::{self, Hcqb};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub use hcq::dtype::DType;
pub use hcq::error::{Error, Result};
pub use hcq_bundle::Arch;
pub use hcq_runner::CheckReport;
pub use hcq_runner::plug::{
    Capabilities, DeviceKind, LoadedModel, OpenDevice, Options, ProfilerRef, ProfilerSource, Registry,
};

mod devices;
mod model;
pub use model::{BIND_ALIGN, Model, Tensor};

/// The process-wide registry of device kinds: the built-in ones (`devices.rs`), then those
/// added with [`register`]. What `hcq devices` lists and where [`open`] finds a name.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let r = Registry::new();
        devices::register_builtin(&r);
        r
    })
}

/// Add a device kind to the [`registry`] (a kind with the same first name replaces that one):
/// from then on [`open`], [`devices`], the CLI, the C ABI and the Python package of this
/// process see it.
pub fn register(kind: Arc<dyn DeviceKind>) {
    registry().register(kind);
}

/// Probe every registered kind and report which are there and why the others are not
/// (PASS/FAIL lines with [`hcq::device::ReportList`]); the default device is marked.
pub fn devices() -> Vec<DeviceReport> {
    let default = default_name();
    registry().enumerate(Some(&default))
}

/// The canonical form of a device name as [`open`] uses it: the spelling of the kind that
/// opens it (`"qcom:sim"` → `"QCOM:SIM"`, `"cpu:0"` → `"CPU"`), else
/// [`hcq::device::canonicalize`]'s.
pub fn canonical_name(name: &str) -> String {
    registry().canonical(name)
}

/// The device a `DEV` value names ([`Registry::dev_name`]: a kind's whole name, `MSM+QCOM:SIM`,
/// else tinygrad's reading, `"PCI+AMD:LLVM"` → `"AMD"`); `None` when it names none.
pub fn dev_name(value: &str) -> Option<String> {
    registry().dev_name(value)
}

/// The name [`open_default`] opens: the device `$DEV` names, else `CPU`.
pub fn default_name() -> String {
    std::env::var("DEV").ok().and_then(|v| dev_name(&v)).unwrap_or_else(|| "CPU".into())
}

/// An opened device that runs bundles ([`open`]).
pub struct Device {
    opts: Options,
    inner: Box<dyn OpenDevice>,
}

impl core::fmt::Debug for Device {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Device").field("name", &self.name()).field("opts", &self.opts).finish_non_exhaustive()
    }
}

/// Open the device `name` (`"CPU"`, `"SIM:1"`, `"QCOM"`, `"QCOM:SIM"`; an empty name is
/// [`default_name`]) with default [`Options`].
///
/// Errors: [`Error::UnknownDevice`] for a name no kind has, the kind's own error when it does
/// not open (an option it does not support included).
pub fn open(name: &str) -> Result<Device> {
    open_with(name, Options::default())
}

/// [`open`] the device `$DEV` names, else `CPU`.
pub fn open_default() -> Result<Device> {
    open(&default_name())
}

/// [`open`] with `opts`.
pub fn open_with(name: &str, opts: Options) -> Result<Device> {
    let name = if name.trim().is_empty() { default_name() } else { canonical_name(name) };
    let inner = registry().open(&name, &opts).with_context(|| format!("device {name}"))?;
    Ok(Device { opts, inner })
}

/// A bundle to load: a path (a v1 directory with `manifest.json`, or a `.hcqb` file) or the
/// bytes of a `.hcqb` file.
#[derive(Clone, Copy, Debug)]
pub enum Bundle<'a> {
    /// A v1 directory or a `.hcqb` file.
    Path(&'a Path),
    /// A `.hcqb` file's bytes.
    Bytes(&'a [u8]),
}

impl<'a> From<&'a Path> for Bundle<'a> {
    fn from(p: &'a Path) -> Self {
        Bundle::Path(p)
    }
}
impl<'a> From<&'a PathBuf> for Bundle<'a> {
    fn from(p: &'a PathBuf) -> Self {
        Bundle::Path(p)
    }
}
impl<'a> From<&'a str> for Bundle<'a> {
    fn from(p: &'a str) -> Self {
        Bundle::Path(Path::new(p))
    }
}
impl<'a> From<&'a [u8]> for Bundle<'a> {
    fn from(b: &'a [u8]) -> Self {
        Bundle::Bytes(b)
    }
}
impl<'a> From<&'a Vec<u8>> for Bundle<'a> {
    fn from(b: &'a Vec<u8>) -> Self {
        Bundle::Bytes(b)
    }
}

/// The bytes of a file, read as every bundle file is (`hcq_bundle::v1::read_regular`): only a
/// regular file (`hcq inspect /dev/zero` or a FIFO is refused before it is opened), with the
/// memory for it reserved fallibly (a file larger than the memory the process can get is an
/// error, never an allocation abort), and no more than its stated length.
fn read_fallibly(path: &Path) -> Result<Vec<u8>> {
    hcq_bundle::v1::read_regular(path, None, |_| Ok(()))
}

/// The bytes of the bundle at `path`: a `.hcqb` file as is, a v1 directory imported and packed
/// in memory. Errors name the path.
pub fn bundle_bytes(path: &Path) -> Result<Vec<u8>> {
    let ctx = || format!("bundle {}", path.display());
    if path.is_dir() {
        let model = hcq_bundle::v1::import_dir(path).with_context(ctx)?;
        hcqb::write(&model).with_context(ctx)
    } else {
        read_fallibly(path).with_context(ctx)
    }
}

impl Device {
    /// The canonical name (`"CPU"`, `"QCOM:SIM"`).
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// One line about the device (`"CPU (8 cores)"`, `"QCOM:SIM (...)"`).
    pub fn description(&self) -> String {
        self.inner.description()
    }

    /// The options it was opened with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Load `bundle` (a path, or `.hcqb` bytes) on this device: every buffer allocated and
    /// filled, every program loaded, every launch captured, ready to [`Model::run`].
    pub fn load<'a>(&self, bundle: impl Into<Bundle<'a>>) -> Result<Model> {
        let (bytes, label) = match bundle.into() {
            Bundle::Path(p) => (std::borrow::Cow::Owned(bundle_bytes(p)?), p.display().to_string()),
            Bundle::Bytes(b) => (std::borrow::Cow::Borrowed(b), "(bytes)".to_string()),
        };
        let ctx = || format!("bundle {label}");
        let file = Hcqb::parse(&bytes).with_context(ctx)?;
        let loaded = self.inner.load(&file).with_context(ctx)?;
        Ok(Model::new(loaded, &file, self.name().to_string(), self.opts.profile))
    }

    /// The freedreno `.rd` capture of every submission so far (Mesa's `cffdump` decodes it),
    /// for a device opened with [`Options::capture_rd`]; an error on a device that has none.
    pub fn rd_capture(&self) -> Result<Vec<u8>> {
        self.inner.rd_capture()
    }
}
