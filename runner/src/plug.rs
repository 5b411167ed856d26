//! The plug-in point: every device kind that runs bundles is one [`DeviceKind`] in a
//! [`Registry`].
//!
//! A kind names itself in tinygrad's syntax ([`DeviceKind::names`]: `"CPU"`, `"QCOM:SIM"`,
//! `"MSM+QCOM"`), says what it is without loading anything ([`DeviceKind::probe`], one line of
//! `hcq devices`) and opens into an [`OpenDevice`], whose [`OpenDevice::load`] turns a parsed
//! bundle into a [`LoadedModel`] trait object. The front door (`hcq-runtime`), the CLI, the C
//! ABI and the Python package only ever see these three traits: adding a device is one crate
//! that implements them plus one registry line.
//!
//! Most kinds load through the generic [`Runner`] over their [`Backend`]; the part of a model
//! that differs per device (asynchronous submit, waits with a timeout, binding caller memory,
//! host pointers, the profiler) is the [`Capabilities`] trait, whose defaults are honest: an
//! [`Error::Unsupported`] naming what the device cannot do, or `None`. `Runner<B>` is a
//! [`LoadedModel`] for every `B: Backend + Capabilities`.
//!
//! Waits never touch shared state: a wait with a timeout passes its own policy
//! ([`hcq::engine::Engine::wait_with`]), and a bounded poll ([`LoadedModel::try_wait`]) gives up
//! without declaring the device hung ([`hcq::engine::Engine::try_wait`]).

use crate::{Backend, CheckReport, Runner};
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;
use hcq::device::{DeviceProperties, DeviceReport, canonicalize, parse_dev};
use hcq::engine::Engine;
use hcq::error::{Error, Result, ResultExt, device_name};
use hcq::profile::Profiler;
use hcq::signal::WaitPolicy;
use hcq::stamp::Stamp;
use hcq_bundle::hcqb::Hcqb;
use hcq_bundle::{Arch, ArgView};

/// How a device is opened and what its models record. The default: nothing extra.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Record every call's events (buffer allocations, kernels, copies) for the model's
    /// profiler ([`LoadedModel::profiler`]).
    pub profile: bool,
    /// CPU objects: run objects whose CPU level cannot be verified (bundles exported with
    /// `native`).
    pub allow_native: bool,
    /// Keep every submitted command buffer as a freedreno `.rd` capture
    /// ([`OpenDevice::rd_capture`]); refused by a kind that submits no Adreno command buffers.
    pub capture_rd: bool,
    /// Give up on a wait after this long without progress of the device (default: the
    /// timeline's 30 s); the device is then hung. Refused by a kind whose calls run on the
    /// caller's thread.
    pub timeout: Option<Duration>,
}

impl Options {
    /// Refuse the options a kind named `device` does not support (`rd`: it can capture `.rd`
    /// files; `timeout`: its waits can time out), naming the device and the option.
    pub fn refuse_unsupported(&self, device: &str, rd: bool, timeout: bool) -> Result<()> {
        let ctx = || alloc::format!("device {device}");
        if self.capture_rd && !rd {
            return Err(Error::Unsupported {
                what: "an .rd capture (this device submits no Adreno command buffers)",
                value: 0,
            })
            .with_context(ctx);
        }
        if self.timeout.is_some() && !timeout {
            return Err(Error::Unsupported {
                what: "a wait timeout (this device's calls run on the caller's thread)",
                value: 0,
            })
            .with_context(ctx);
        }
        Ok(())
    }

    /// The timeout in whole milliseconds (saturating), when one is set.
    pub fn timeout_ms(&self) -> Option<u64> {
        self.timeout.map(millis)
    }
}

/// `d` in whole milliseconds, saturating.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One kind of device: its names, its probe and how it opens. Object safe.
pub trait DeviceKind: Send + Sync + 'static {
    /// The canonical names this kind opens, in tinygrad's syntax; the first is the one
    /// `hcq devices` lists (`["QCOM", "KGSL+QCOM", "MSM+QCOM"]`). Matched case-insensitively.
    fn names(&self) -> &[&'static str];
    /// How many devices of the first name exist as `NAME:i` (`SIM:1`); 1 when only `NAME`.
    fn indexed(&self) -> u32 {
        1
    }
    /// What the device is, without loading anything (one line of `hcq devices`); an error
    /// says why it is not there.
    fn probe(&self, name: &str) -> Result<DeviceProperties>;
    /// Open `name` (one of [`DeviceKind::names`], or `NAME:i`) as `opts` say; options the
    /// kind does not support are refused ([`Options::refuse_unsupported`]).
    fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>>;
}

/// An opened device that loads bundles.
pub trait OpenDevice: Send + Sync {
    /// Its canonical name (`"CPU"`, `"QCOM:SIM"`).
    fn name(&self) -> &str;
    /// One line about it (`"CPU (8 cores)"`).
    fn description(&self) -> String;
    /// Load `bundle`: every buffer allocated and filled, every program loaded, every launch
    /// captured, ready to call.
    fn load(&self, bundle: &Hcqb<'_>) -> Result<Box<dyn LoadedModel>>;
    /// The freedreno `.rd` capture of every submission so far, for a device opened with
    /// [`Options::capture_rd`].
    fn rd_capture(&self) -> Result<Vec<u8>> {
        Err(Error::Unsupported { what: "an .rd capture", value: 0 })
            .with_context(|| alloc::format!("device {}", self.name()))
    }
}

/// Something that owns a [`Profiler`] and can be shared with a caller that records its own
/// events while the model runs (an engine, a device).
pub trait ProfilerSource: Send + Sync {
    /// The profiler.
    fn profiler(&self) -> &Profiler;
}

impl ProfilerSource for Engine {
    fn profiler(&self) -> &Profiler {
        Engine::profiler(self)
    }
}

/// An owned handle on a model's profiler ([`LoadedModel::profiler`]).
pub type ProfilerRef = Arc<dyn ProfilerSource>;

/// A bundle loaded on a device: what every front end drives. Object safe.
pub trait LoadedModel: Send {
    /// The model's name (as the bundle records it).
    fn name(&self) -> &str;
    /// The architecture whose objects run.
    fn arch(&self) -> Arch;
    /// Kernel launches per call.
    fn kernels_per_call(&self) -> usize;
    /// The graph of the bundle that runs (a bundle with one graph per target), `None` for a
    /// bundle of one graph.
    fn graph(&self) -> Option<usize>;
    /// Copy `data` (exactly its size) into input `i`.
    fn set_input(&self, i: usize, data: &[u8]) -> Result<()>;
    /// One forward pass, to completion.
    fn call(&mut self) -> Result<()>;
    /// Start one forward pass; the stamp that completes it.
    fn submit(&mut self) -> Result<u64>;
    /// Wait for `stamp`; with a timeout, a device without progress for that long is hung.
    fn wait(&self, stamp: u64, timeout: Option<Duration>) -> Result<()>;
    /// Wait up to `within` for `stamp`: `false` when it has not passed by then (the device is
    /// not declared hung). A fault is an error.
    fn try_wait(&self, stamp: u64, within: Duration) -> Result<bool>;
    /// The bytes of output `i`.
    fn output(&self, i: usize) -> Result<Vec<u8>>;
    /// Copy bytes of base buffer `buffer` from `offset` into `out`.
    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()>;
    /// Compare the outputs with the bundle's expected bytes.
    fn check(&self) -> Result<CheckReport>;
    /// Bind `view` (an input's) to the caller's memory at `ptr`, or back to the model's own
    /// memory with a null `ptr`; `current` is where it is bound now (`None`: its own memory).
    /// Returns where it is bound afterwards (`None`: its own memory).
    ///
    /// # Safety
    /// `[ptr, ptr + view.nbytes)` must stay allocated and valid for the kernels' reads and
    /// writes, each time a call runs, until the view is bound elsewhere or the model is dropped;
    /// no call may be in flight.
    unsafe fn bind_host(&mut self, view: ArgView, current: Option<u64>, ptr: *mut u8) -> Result<Option<u64>>;
    /// Where `view`'s bytes lie in host memory, when the device's memory is the host's.
    fn host_ptr(&self, view: ArgView) -> Option<*const u8>;
    /// The device's profiler, shared.
    fn profiler(&self) -> Option<ProfilerRef>;
}

/// The part of a model that differs per device, for a [`Backend`] run by a [`Runner`].
/// Every method has an honest default: unsupported, naming the device, or absent.
pub trait Capabilities: Backend {
    /// The device's canonical name, for errors.
    fn device_name(&self) -> &str;
    /// The engine whose timeline the calls signal, if the backend has one.
    fn engine(&self) -> Option<&Engine> {
        None
    }
    /// Start the captured call without waiting; the stamp that completes it.
    fn submit(&mut self) -> Result<u64> {
        Err(Error::Unsupported { what: "an asynchronous submit", value: 0 })
            .with_context(|| alloc::format!("device {}", self.device_name()))
    }
    /// Wait for `stamp` (the engine's timeline; with a timeout, that policy for this wait only).
    fn wait(&self, stamp: u64, timeout: Option<Duration>) -> Result<()> {
        let Some(e) = self.engine() else { return Ok(()) };
        match timeout {
            Some(t) => e.wait_with(Stamp::new(stamp), &policy_within(e, t)),
            None => e.wait(Stamp::new(stamp)),
        }
    }
    /// Wait up to `within` for `stamp` without declaring a hang.
    fn try_wait(&self, stamp: u64, within: Duration) -> Result<bool> {
        match self.engine() {
            Some(e) => e.try_wait(Stamp::new(stamp), &policy_within(e, within)),
            None => Ok(true),
        }
    }
    /// Bind `view` to caller memory ([`LoadedModel::bind_host`]).
    ///
    /// # Safety
    /// As [`LoadedModel::bind_host`].
    unsafe fn bind_host(&mut self, view: ArgView, current: Option<u64>, ptr: *mut u8) -> Result<Option<u64>> {
        let _ = (view, current, ptr);
        Err(Error::Unsupported {
            what: "binding caller memory (this device copies between its own memories)",
            value: 0,
        })
        .with_context(|| alloc::format!("device {}", self.device_name()))
    }
    /// Where `view`'s bytes lie in host memory ([`LoadedModel::host_ptr`]).
    fn host_ptr(&self, view: ArgView) -> Option<*const u8> {
        let _ = view;
        None
    }
    /// The profiler, shared ([`LoadedModel::profiler`]).
    fn profiler(&self) -> Option<ProfilerRef> {
        None
    }
}

/// The engine's policy with its timeout replaced by `t` (for one wait; the shared policy is
/// untouched).
pub fn policy_within(e: &Engine, t: Duration) -> WaitPolicy {
    WaitPolicy { timeout_ns: u64::try_from(t.as_nanos()).unwrap_or(u64::MAX), ..e.timeline().policy() }
}

impl<B: Backend + Capabilities + Send> LoadedModel for Runner<B> {
    fn name(&self) -> &str {
        Runner::name(self)
    }
    fn arch(&self) -> Arch {
        Runner::arch(self)
    }
    fn kernels_per_call(&self) -> usize {
        Runner::kernels_per_call(self)
    }
    fn graph(&self) -> Option<usize> {
        Runner::graph(self)
    }
    fn set_input(&self, i: usize, data: &[u8]) -> Result<()> {
        Runner::set_input(self, i, data)
    }
    #[inline]
    fn call(&mut self) -> Result<()> {
        Runner::call(self)
    }
    fn submit(&mut self) -> Result<u64> {
        self.backend_mut().submit()
    }
    fn wait(&self, stamp: u64, timeout: Option<Duration>) -> Result<()> {
        self.backend().wait(stamp, timeout)
    }
    fn try_wait(&self, stamp: u64, within: Duration) -> Result<bool> {
        self.backend().try_wait(stamp, within)
    }
    fn output(&self, i: usize) -> Result<Vec<u8>> {
        Runner::output(self, i)
    }
    fn read(&self, buffer: usize, offset: u64, out: &mut [u8]) -> Result<()> {
        self.backend().read(buffer, offset, out)
    }
    fn check(&self) -> Result<CheckReport> {
        Runner::check(self)
    }
    unsafe fn bind_host(&mut self, view: ArgView, current: Option<u64>, ptr: *mut u8) -> Result<Option<u64>> {
        // SAFETY: the caller's contract is this method's.
        unsafe { self.backend_mut().bind_host(view, current, ptr) }
    }
    fn host_ptr(&self, view: ArgView) -> Option<*const u8> {
        self.backend().host_ptr(view)
    }
    fn profiler(&self) -> Option<ProfilerRef> {
        self.backend().profiler()
    }
}

/// The table of device kinds: what `hcq devices` lists and what `open` finds a name in.
/// Kinds are listed (and tried for nothing else) in registration order.
#[derive(Default)]
pub struct Registry {
    kinds: spin::RwLock<Vec<Arc<dyn DeviceKind>>>,
}

impl core::fmt::Debug for Registry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Registry").field("kinds", &self.listed()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub const fn new() -> Self {
        Self { kinds: spin::RwLock::new(Vec::new()) }
    }

    /// Add a kind. A kind whose first name is already registered replaces that one in place
    /// (keeping its position).
    pub fn register(&self, kind: Arc<dyn DeviceKind>) {
        let mut kinds = self.kinds.write();
        let first = kind.names().first().copied().unwrap_or("");
        match kinds.iter_mut().find(|k| k.names().first().is_some_and(|n| n.eq_ignore_ascii_case(first))) {
            Some(k) => *k = kind,
            None => kinds.push(kind),
        }
    }

    /// The listed name of every kind, in order.
    pub fn listed(&self) -> Vec<&'static str> {
        self.kinds.read().iter().filter_map(|k| k.names().first().copied()).collect()
    }

    /// The kind that opens `name` and its canonical spelling there: tinygrad's canonical form
    /// ([`canonicalize`]: `"cpu:0"` → `"CPU"`), matched against every kind's names in any case,
    /// `NAME:i` for an indexed kind.
    pub fn find(&self, name: &str) -> Option<(Arc<dyn DeviceKind>, String)> {
        let canon = canonicalize(name.trim());
        let kinds = self.kinds.read();
        for k in kinds.iter() {
            if let Some(n) = k.names().iter().find(|n| n.eq_ignore_ascii_case(&canon)) {
                return Some((k.clone(), (*n).to_string()));
            }
        }
        let (base, index) = canon.rsplit_once(':')?;
        let index: u32 = index.parse().ok()?;
        for k in kinds.iter() {
            if let Some(n) = k.names().first().filter(|n| n.eq_ignore_ascii_case(base))
                && index < k.indexed()
            {
                return Some((k.clone(), alloc::format!("{n}:{index}")));
            }
        }
        None
    }

    /// The canonical form of `name`: its kind's spelling, else [`canonicalize`]'s.
    pub fn canonical(&self, name: &str) -> String {
        self.find(name).map_or_else(|| canonicalize(name.trim()), |(_, n)| n)
    }

    /// The device a `DEV` value names: the whole target (before any `;`) when a kind has that
    /// name (`MSM+QCOM:SIM`: the interface and `:SIM` are part of the name there), else
    /// tinygrad's reading ([`parse_dev`]: `"PCI+AMD:LLVM"` → `"AMD"`). `None` when it names none.
    pub fn dev_name(&self, value: &str) -> Option<String> {
        let target = value.split(';').next().unwrap_or("").trim();
        if let Some((_, n)) = self.find(target) {
            return Some(n);
        }
        parse_dev(value).map(|k| self.canonical(&k))
    }

    /// Open `name` as `opts` say. An unknown name is [`Error::UnknownDevice`], with the known
    /// names in its context.
    pub fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
        let Some((kind, canon)) = self.find(name) else {
            let known = self.listed().join(", ");
            return Err(Error::UnknownDevice { name: device_name(&canonicalize(name.trim())) })
                .with_context(|| alloc::format!("known devices: {known}"));
        };
        kind.open(&canon, opts)
    }

    /// Probe every kind (its listed name) and report what is there; `default` is marked.
    pub fn enumerate(&self, default: Option<&str>) -> Vec<DeviceReport> {
        let kinds: Vec<Arc<dyn DeviceKind>> = self.kinds.read().clone();
        kinds
            .iter()
            .filter_map(|k| {
                let name = *k.names().first()?;
                Some(DeviceReport { default: default == Some(name), result: k.probe(name), name: name.to_string() })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(&'static [&'static str], u32);

    struct FakeOpen(String);

    impl OpenDevice for FakeOpen {
        fn name(&self) -> &str {
            &self.0
        }
        fn description(&self) -> String {
            alloc::format!("{} (fake)", self.0)
        }
        fn load(&self, _bundle: &Hcqb<'_>) -> Result<Box<dyn LoadedModel>> {
            Err(Error::Unsupported { what: "fake loads", value: 0 })
        }
    }

    impl DeviceKind for Fake {
        fn names(&self) -> &[&'static str] {
            self.0
        }
        fn indexed(&self) -> u32 {
            self.1
        }
        fn probe(&self, name: &str) -> Result<DeviceProperties> {
            if name == "GONE" {
                return Err(Error::DeviceUnavailable { device: device_name(name), reason: "no node" });
            }
            Ok(DeviceProperties { kind: "fake".into(), notes: name.into(), ..Default::default() })
        }
        fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
            opts.refuse_unsupported(name, false, false)?;
            Ok(Box::new(FakeOpen(name.into())))
        }
    }

    fn registry() -> Registry {
        let r = Registry::new();
        r.register(Arc::new(Fake(&["CPU"], 1)));
        r.register(Arc::new(Fake(&["SIM"], 2)));
        r.register(Arc::new(Fake(&["QCOM", "KGSL+QCOM", "MSM+QCOM"], 1)));
        r.register(Arc::new(Fake(&["QCOM:SIM", "KGSL+QCOM:SIM", "MSM+QCOM:SIM"], 1)));
        r.register(Arc::new(Fake(&["GONE"], 1)));
        r
    }

    /// Names open in any case, with a trailing `:0` dropped, under the kind's own spelling;
    /// `NAME:i` only below the kind's count; an unknown name lists the known ones.
    #[test]
    fn names_resolve_to_the_kinds_spelling() {
        let r = registry();
        for (asked, canon) in [
            ("cpu", "CPU"),
            ("CPU:0", "CPU"),
            (" sim:1 ", "SIM:1"),
            ("qcom:sim", "QCOM:SIM"),
            ("msm+qcom", "MSM+QCOM"),
            ("Msm+Qcom:Sim", "MSM+QCOM:SIM"),
        ] {
            assert_eq!(r.find(asked).map(|(_, n)| n).as_deref(), Some(canon), "{asked}");
            assert_eq!(r.open(asked, &Options::default()).unwrap().name(), canon);
        }
        assert!(r.find("SIM:2").is_none(), "SIM has 2 devices");
        assert!(r.find("CPU:1").is_none(), "CPU has one");
        let e = r.open("AMD", &Options::default()).err().unwrap();
        assert!(matches!(e.root(), Error::UnknownDevice { .. }), "{e}");
        assert!(e.to_string().contains("CPU, SIM, QCOM, QCOM:SIM, GONE"), "{e}");
    }

    /// `DEV` values: a kind's whole name first (the interface and `:SIM` kept), else
    /// tinygrad's kind with interface and renderer dropped.
    #[test]
    fn dev_values_name_kinds_whole_then_as_tinygrad_reads_them() {
        let r = registry();
        assert_eq!(r.dev_name("MSM+QCOM:SIM").as_deref(), Some("MSM+QCOM:SIM"));
        assert_eq!(r.dev_name("qcom:sim;x").as_deref(), Some("QCOM:SIM"));
        assert_eq!(r.dev_name("CPU:LLVM").as_deref(), Some("CPU"));
        assert_eq!(r.dev_name("PCI+AMD:LLVM").as_deref(), Some("AMD"));
        assert_eq!(r.dev_name(""), None);
    }

    /// A kind registered again under its first name replaces the earlier one in place.
    #[test]
    fn registering_a_name_again_replaces_in_place() {
        let r = registry();
        r.register(Arc::new(Fake(&["SIM"], 5)));
        assert_eq!(r.listed(), ["CPU", "SIM", "QCOM", "QCOM:SIM", "GONE"]);
        assert!(r.find("SIM:4").is_some());
    }

    /// Enumeration probes every kind: PASS with its properties, FAIL with why, the default
    /// marked.
    #[test]
    fn enumeration_reports_each_kind() {
        let reports = registry().enumerate(Some("CPU"));
        let lines = alloc::format!("{}", hcq::device::ReportList(&reports));
        assert!(lines.starts_with("* CPU     : PASS fake"), "{lines}");
        assert!(lines.contains("  GONE    : FAIL GONE is unavailable: no node"), "{lines}");
        assert_eq!(reports.len(), 5);
    }

    /// Options a kind does not support are refused, naming the device.
    #[test]
    fn unsupported_options_are_refused_naming_the_device() {
        let r = registry();
        let opts = Options { timeout: Some(Duration::from_millis(5)), ..Default::default() };
        let e = r.open("CPU", &opts).err().unwrap();
        assert!(e.to_string().contains("wait timeout") && e.to_string().contains("device CPU"), "{e}");
        let opts = Options { capture_rd: true, ..Default::default() };
        assert!(r.open("SIM", &opts).err().unwrap().to_string().contains(".rd capture"));
    }
}
