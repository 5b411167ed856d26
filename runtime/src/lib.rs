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
//! Names follow tinygrad's: case-insensitive, a trailing `:0` dropped. Bundles run on
//! `CPU` (the host's cores through the soft command processor, `hcq_cpu::backend`), `SIM` and
//! `SIM:1` (the host's CPU objects on simulated command processors, `hcq_sim::cpu`), `QCOM` (an
//! Adreno 630 through `/dev/kgsl-3d0`, else through the mainline MSM DRM driver's render node;
//! `KGSL+QCOM` and `MSM+QCOM` name the kernel interface) and `QCOM:SIM` (the same driver path
//! against a simulated KGSL and GPU, `hcq_qcom`; `MSM+QCOM:SIM` through the MSM path). [`open_default`] opens the device `$DEV` names (`DEV=QCOM`,
//! `DEV=QCOM:SIM`), else `CPU`. Any other name is looked up in the [`registry`] so that an
//! unknown or absent device says why; [`devices`] reports every kind (`hcq devices`).
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

use hcq::bundle::hcqb::{self, Hcqb};
use hcq::device::{DeviceReport, Registry};
use hcq::error::ResultExt;
use hcq::runner::Runner;
use hcq_cpu::backend::CpuBackend;
use hcq_cpu::device::CpuDevice;
use hcq_qcom::device::{QcomBackend, QcomDevice};
#[cfg(feature = "sim")]
use hcq_sim::cpu::SimBackend;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use hcq::bundle::Arch;
pub use hcq::dtype::DType;
pub use hcq::error::{Error, Result};
pub use hcq::runner::CheckReport;

mod model;
use model::Loaded;
pub use model::{BIND_ALIGN, Model, ProfilerHandle, Tensor};

/// The registry of every device kind this build knows (CPU, SIM, QCOM, QCOM:SIM): what
/// `hcq devices` lists and what explains a name that does not open.
pub fn registry() -> Registry {
    let r = Registry::new();
    r.register(hcq_cpu::device::cpu_kind());
    #[cfg(feature = "sim")]
    r.register(hcq_sim::sim_kind());
    r.register(hcq_qcom::device::qcom_kind());
    r.register(hcq_qcom::device::kgsl_qcom_kind());
    r.register(hcq_qcom::device::msm_qcom_kind());
    #[cfg(feature = "sim")]
    {
        r.register(hcq_sim_adreno::qcom_sim_kind());
        r.register(hcq_sim_adreno::kgsl_qcom_sim_kind());
        r.register(hcq_sim_adreno::msm_qcom_sim_kind());
    }
    r
}

/// The QCOM device names, as tinygrad spells a device with its interface (`IFACE+DEVICE`):
/// `QCOM` (whichever kernel node exists: KGSL, else MSM DRM), `KGSL+QCOM`, `MSM+QCOM`, and their
/// simulated devices (`QCOM:SIM` = `KGSL+QCOM:SIM`, `MSM+QCOM:SIM`).
pub const QCOM_NAMES: [&str; 6] = ["QCOM", "QCOM:SIM", "KGSL+QCOM", "MSM+QCOM", "KGSL+QCOM:SIM", "MSM+QCOM:SIM"];

/// Open the QCOM device `name` (canonical, one of [`QCOM_NAMES`]); `None` for another name.
pub fn open_qcom(name: &str, capture: bool) -> Option<Result<Arc<QcomDevice>>> {
    Some(match name {
        "QCOM" => QcomDevice::open(capture),
        "KGSL+QCOM" => QcomDevice::open_kgsl(capture),
        "MSM+QCOM" => QcomDevice::open_msm(capture),
        #[cfg(feature = "sim")]
        "QCOM:SIM" | "KGSL+QCOM:SIM" => hcq_sim_adreno::open(capture),
        #[cfg(feature = "sim")]
        "MSM+QCOM:SIM" => hcq_sim_adreno::open_msm(capture),
        #[cfg(not(feature = "sim"))]
        "QCOM:SIM" | "KGSL+QCOM:SIM" | "MSM+QCOM:SIM" => Err(Error::Unsupported {
            what: "the simulated Adreno: this build of hcq-runtime has no simulators (cargo feature `sim`)",
            value: 0,
        }),
        _ => return None,
    })
}

/// Try every registered kind and report which open and why the others do not (PASS/FAIL lines
/// with [`hcq::device::ReportList`]).
pub fn devices() -> Vec<DeviceReport> {
    registry().enumerate()
}

/// The canonical form of a device name as [`open`] uses it: [`hcq::device::canonicalize`]
/// (`"cpu:0"` → `"CPU"`), with the QCOM names ([`QCOM_NAMES`]: `QCOM:SIM`, `msm+qcom`, ...)
/// named whole in any case.
pub fn canonical_name(name: &str) -> String {
    let canon = hcq::device::canonicalize(name.trim());
    match QCOM_NAMES.iter().find(|n| n.eq_ignore_ascii_case(&canon)) {
        Some(n) => (*n).into(),
        None => canon,
    }
}

/// The device a `DEV` value names ([`hcq::device::parse_dev`]: `"PCI+AMD:LLVM"` → `"AMD"`),
/// with the QCOM names kept whole (`QCOM:SIM` is a device here, not `QCOM` with a renderer;
/// `MSM+QCOM` names the kernel interface, [`QCOM_NAMES`]); `None` when it
/// names none.
pub fn dev_name(value: &str) -> Option<String> {
    let target = value.split(';').next().unwrap_or("").trim();
    let (iface, device) = target.split_once('+').map_or(("", target), |(i, d)| (i.trim(), d));
    let mut parts = device.split(':').map(str::trim);
    if let Some(k) = parts.next()
        && k.eq_ignore_ascii_case("QCOM")
    {
        // the kernel interface is part of the name here (`MSM+QCOM`, `KGSL+QCOM`)
        let sim = parts.next().is_some_and(|v| v.eq_ignore_ascii_case("SIM"));
        let name = format!("{iface}{}QCOM{}", if iface.is_empty() { "" } else { "+" }, if sim { ":SIM" } else { "" });
        if let Some(n) = QCOM_NAMES.iter().find(|n| n.eq_ignore_ascii_case(&name)) {
            return Some((*n).into());
        }
    }
    hcq::device::parse_dev(value)
}

/// The name [`open_default`] opens: the device `$DEV` names, else `CPU`.
pub fn default_name() -> String {
    std::env::var("DEV").ok().and_then(|v| dev_name(&v)).unwrap_or_else(|| "CPU".into())
}

/// How a device is opened and what its models record. The default: nothing extra.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Record every call's events (buffer allocations, kernels, copies) for
    /// [`Model::write_profile`]. QCOM: each launch bracketed by always-on-counter timestamps.
    pub profile: bool,
    /// CPU and SIM: run objects whose CPU level cannot be verified (bundles exported with
    /// `native`).
    pub allow_native: bool,
    /// QCOM devices: keep every submitted command buffer as a freedreno `.rd` capture
    /// ([`Device::rd_capture`]).
    pub capture_rd: bool,
    /// SIM and QCOM devices: give up on a wait after this long without progress of the device
    /// (default: the timeline's 30 s). The device is then hung.
    pub timeout: Option<Duration>,
}

enum Backed {
    Cpu(Arc<CpuDevice>),
    #[cfg(feature = "sim")]
    Sim(Arc<hcq_sim::SimHandle>),
    Qcom(Arc<QcomDevice>),
}

impl core::fmt::Debug for Backed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Backed::Cpu(_) => "Cpu",
            #[cfg(feature = "sim")]
            Backed::Sim(_) => "Sim",
            Backed::Qcom(_) => "Qcom",
        })
    }
}

/// A SIM device (`SIM`, `SIM:n`) and its description, set up as `opts` say.
#[cfg(feature = "sim")]
fn open_sim(name: &str, opts: &Options) -> Result<(Backed, String)> {
    let dev = Arc::new(hcq_sim::SimHandle::open(name)?);
    let hcq = dev.sim().engine();
    hcq.profiler().set_enabled(opts.profile);
    if let Some(t) = opts.timeout {
        hcq.timeline().set_policy(hcq::signal::WaitPolicy::with_timeout_ms(millis(t)));
    }
    let d = format!(
        "{name} ({}, host {} objects)",
        hcq::device::Device::properties(&*dev).notes,
        Arch::host().map_or("?", |a| a.name())
    );
    Ok((Backed::Sim(dev), d))
}

/// Without the `sim` feature no name is a SIM device (`open_with` never calls this).
#[cfg(not(feature = "sim"))]
fn open_sim(_name: &str, _opts: &Options) -> Result<(Backed, String)> {
    Err(Error::Unsupported { what: "SIM: this build of hcq-runtime has no simulators (cargo feature `sim`)", value: 0 })
}

/// An opened device that runs bundles ([`open`]).
#[derive(Debug)]
pub struct Device {
    name: String,
    description: String,
    opts: Options,
    backed: Backed,
}

/// Open the device `name` (`"CPU"`, `"SIM:1"`, `"QCOM"`, `"QCOM:SIM"`; an empty name is
/// [`default_name`]) with default [`Options`].
///
/// Errors: [`Error::UnknownDevice`] for a name no kind has, the kind's own error when it does
/// not open, [`Error::Unsupported`] for a registered device that cannot run bundles.
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
    let ctx = || format!("device {name}");
    let is_qcom = QCOM_NAMES.contains(&name.as_str());
    #[cfg(feature = "sim")]
    let is_sim = name == "SIM"
        || name
            .strip_prefix("SIM:")
            .and_then(|i| i.parse::<u32>().ok())
            .is_some_and(|i| i < hcq_sim::device::SIM_DEVICES);
    #[cfg(not(feature = "sim"))]
    let is_sim = false;
    if opts.capture_rd && !is_qcom {
        return Err(Error::Unsupported {
            what: "an .rd capture records Adreno submissions: open QCOM or QCOM:SIM",
            value: 0,
        })
        .with_context(ctx);
    }
    if opts.timeout.is_some() && !(is_sim || is_qcom) {
        return Err(Error::Unsupported { what: "a wait timeout applies to SIM and QCOM devices", value: 0 })
            .with_context(ctx);
    }
    let (backed, description) = if name == "CPU" {
        let cpu = CpuDevice::new("CPU", hcq_cpu::device::host_cores()).with_context(ctx)?;
        // from before the load, so the trace shows the buffer allocations too
        cpu.soft().engine().profiler().set_enabled(opts.profile);
        let d = format!("{name} ({} cores)", cpu.cores());
        (Backed::Cpu(cpu), d)
    } else if is_sim {
        open_sim(&name, &opts).with_context(ctx)?
    } else if is_qcom {
        // PANIC: `is_qcom` says the name is one of QCOM_NAMES, which open_qcom opens.
        let dev = open_qcom(&name, opts.capture_rd).expect("a QCOM name").with_context(ctx)?;
        let d = format!("{name} ({})", hcq::device::Device::properties(&*dev).notes);
        (Backed::Qcom(dev), d)
    } else {
        // open it anyway, so an unknown or absent device reports why
        registry().open(&name).with_context(ctx)?;
        return Err(Error::Unsupported {
            what: "this device cannot run bundle kernels (CPU, SIM, QCOM and QCOM:SIM can)",
            value: 0,
        })
        .with_context(ctx);
    };
    Ok(Device { name, description, opts, backed })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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

/// The bytes of a file, read as every bundle file is (`hcq::bundle::v1::read_regular`): only a
/// regular file (`hcq inspect /dev/zero` or a FIFO is refused before it is opened), with the
/// memory for it reserved fallibly (a file larger than the memory the process can get is an
/// error, never an allocation abort), and no more than its stated length.
fn read_fallibly(path: &Path) -> Result<Vec<u8>> {
    hcq::bundle::v1::read_regular(path, None, |_| Ok(()))
}

/// The bytes of the bundle at `path`: a `.hcqb` file as is, a v1 directory imported and packed
/// in memory. Errors name the path.
pub fn bundle_bytes(path: &Path) -> Result<Vec<u8>> {
    let ctx = || format!("bundle {}", path.display());
    if path.is_dir() {
        let model = hcq::bundle::v1::import_dir(path).with_context(ctx)?;
        hcqb::write(&model).with_context(ctx)
    } else {
        read_fallibly(path).with_context(ctx)
    }
}

impl Device {
    /// The canonical name (`"CPU"`, `"QCOM:SIM"`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One line about the device (`"CPU (8 cores)"`, `"QCOM:SIM (...)"`).
    pub fn description(&self) -> &str {
        &self.description
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
        let allow = self.opts.allow_native;
        let runner = match &self.backed {
            Backed::Cpu(cpu) => {
                let b = CpuBackend::new(cpu.clone()).allow_unchecked_level(allow);
                Loaded::Cpu(Runner::load(b, &file).with_context(ctx)?)
            }
            #[cfg(feature = "sim")]
            Backed::Sim(dev) => {
                let b = SimBackend::new(dev.clone()).allow_unchecked_level(allow);
                Loaded::Sim(Runner::load(b, &file).with_context(ctx)?)
            }
            Backed::Qcom(dev) => {
                let mut b = QcomBackend::new(dev.clone())?;
                b.set_profile(self.opts.profile)?;
                if let Some(t) = self.opts.timeout {
                    b.set_timeout_ms(u32::try_from(millis(t)).unwrap_or(u32::MAX));
                }
                let r = Runner::load(b, &file).with_context(ctx)?;
                if let Some(h) = r.backend().engine() {
                    h.profiler().set_enabled(self.opts.profile);
                }
                Loaded::Qcom(Box::new(r))
            }
        };
        Ok(Model::new(runner, &file, self.name.clone(), self.opts.profile))
    }

    /// QCOM devices opened with [`Options::capture_rd`]: the freedreno `.rd` capture of every
    /// submission so far (Mesa's `cffdump` decodes it). `None` for other devices.
    pub fn rd_capture(&self) -> Option<Vec<u8>> {
        match &self.backed {
            Backed::Qcom(d) => d.rd_capture(),
            _ => None,
        }
    }
}
