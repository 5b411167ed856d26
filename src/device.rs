//! Devices and the device registry.
//!
//! A [`Device`] is one opened accelerator (or the host CPU): it owns the [`LruAllocator`] its
//! buffers come from and loads [`ProgramImage`]s into runnable [`Program`]s. Devices are named
//! like tinygrad's: an upper-case kind and an optional index (`"CPU"`, `"SIM:1"`); see
//! [`canonicalize`]. The [`Registry`] maps names to device kinds, opens each canonical name at
//! most once, picks the default device (explicit setting, then the `DEV` environment variable
//! with `std`, then the first kind that opens) and reports what is available, as
//! `python -m tinygrad.device` does.
//!
//! Limits: the part after `':'` must be a decimal index for the registry to open it (tinygrad's
//! path-named devices such as `DISK:/file` canonicalize but do not open); `DEV`'s interface,
//! renderer and architecture fields are parsed past and ignored.

use crate::allocator::LruAllocator;
use crate::error::{Error, Result, device_name};
use crate::program::{Program, ProgramImage};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

pub use crate::limits::{DeviceLimits, GpuLimits};

/// What a device says about itself (for reports and traces).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The kind of device (`"cpu"`, `"adreno"`, `"sim"`).
    pub kind: String,
    /// Its architecture (`"x86_64"`, `"a630"`).
    pub arch: String,
    /// Compute units or cores.
    pub cores: u32,
    /// Memory the device can use, in bytes (0 when unknown).
    pub memory_bytes: u64,
    /// Ticks per second of the device's timestamp counter (0 when it has none).
    pub timestamp_hz: u64,
    /// Anything else worth showing (driver version, interface).
    pub notes: String,
}

/// One opened device.
pub trait Device: Send + Sync + 'static {
    /// The canonical name (`"CPU"`, `"SIM:1"`).
    fn name(&self) -> &str;
    /// The allocator buffers on this device come from.
    fn allocator(&self) -> &LruAllocator;
    /// Load a compiled program.
    fn load_program(&self, image: &ProgramImage) -> Result<Arc<dyn Program>>;
    /// Wait until all submitted work has finished.
    fn synchronize(&self) -> Result<()>;
    /// Release the device at the end of the process (the registry's [`Registry::finalize_all`]).
    /// The default does nothing.
    fn finalize(&self) {}
    /// What the device is.
    fn properties(&self) -> DeviceProperties;
    /// What the device can do (memory size, largest allocation, kernel arguments, grid): sizes
    /// and counts read from a file are checked against these before anything is allocated.
    fn limits(&self) -> DeviceLimits;
    /// For downcasting to the concrete device type.
    fn as_any(&self) -> &dyn core::any::Any;
    /// The device's HCQ engine state (timeline, queues, profiler), for devices driven through
    /// command rings. Default: none.
    fn engine(&self) -> Option<&crate::engine::Engine> {
        None
    }
}

impl fmt::Debug for dyn Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("name", &self.name()).finish_non_exhaustive()
    }
}

/// The canonical form of a device name: the part before the first `':'` upper-cased, the rest
/// kept verbatim, a trailing `":0"` dropped (`"cpu:0"` → `"CPU"`, `"sim:1"` → `"SIM:1"`,
/// `"disk:/a/b"` → `"DISK:/a/b"`).
pub fn canonicalize(name: &str) -> String {
    let (kind, rest) = match name.find(':') {
        Some(i) => name.split_at(i),
        None => (name, ""),
    };
    let mut out = kind.to_ascii_uppercase();
    out.push_str(rest);
    if out.ends_with(":0") {
        out.truncate(out.len() - 2);
    }
    out
}

/// Canonical names of one device or a group of devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CanonicalNames {
    /// A single device.
    One(String),
    /// A group of devices (never of length one).
    Many(Vec<String>),
}

/// Canonicalize a group of names: a group of one collapses to [`CanonicalNames::One`], any other
/// length stays a group.
pub fn canonicalize_many(names: &[&str]) -> CanonicalNames {
    match names {
        [one] => CanonicalNames::One(canonicalize(one)),
        _ => CanonicalNames::Many(names.iter().map(|n| canonicalize(n)).collect()),
    }
}

/// The device kind named by a `DEV` value: the device part of its first `';'`-separated target
/// (form `[IFACE[:INDICES]+]DEVICE[:RENDERER[:ARCH]]`), upper-cased. `"PCI+AMD:LLVM"` → `"AMD"`;
/// `None` when that target names no device.
pub fn parse_dev(value: &str) -> Option<String> {
    let target = value.split(';').next().unwrap_or("").trim();
    let device = match target.split_once('+') {
        Some((_iface, dev)) => dev,
        None => target,
    };
    let kind = device.split(':').next().unwrap_or("").trim();
    if kind.is_empty() { None } else { Some(kind.to_ascii_uppercase()) }
}

/// A kind of device the registry can open.
#[derive(Clone, Copy)]
pub struct DeviceKind {
    /// The kind's name (`"CPU"`); matched case-insensitively.
    pub name: &'static str,
    /// How many devices of this kind are present; an error says why none can be.
    pub count: fn() -> Result<u32>,
    /// Open device `index` of this kind.
    pub open: fn(index: u32) -> Result<Arc<dyn Device>>,
}

impl fmt::Debug for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceKind").field("name", &self.name).finish_non_exhaustive()
    }
}

/// One line of [`Registry::enumerate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceReport {
    /// The device kind's name.
    pub name: String,
    /// Whether it is the default device.
    pub default: bool,
    /// Its properties, or why it could not be opened.
    pub result: Result<DeviceProperties, Error>,
}

impl fmt::Display for DeviceReport {
    /// `"* CPU     : PASS cpu x86_64, 16 cores, 64.0 GiB"` or `"  SIM     : FAIL <error>"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.default { '*' } else { ' ' };
        write!(f, "{mark} {:8}: ", self.name)?;
        match &self.result {
            Ok(p) => {
                write!(f, "PASS {} {}, {} cores", p.kind, p.arch, p.cores)?;
                if p.memory_bytes > 0 {
                    write!(f, ", {}", Bytes(p.memory_bytes))?;
                }
                if !p.notes.is_empty() {
                    write!(f, " ({})", p.notes)?;
                }
                Ok(())
            }
            Err(e) => write!(f, "FAIL {e}"),
        }
    }
}

/// A list of reports, displayed one per line.
#[derive(Clone, Copy, Debug)]
pub struct ReportList<'a>(pub &'a [DeviceReport]);

impl fmt::Display for ReportList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Byte counts in binary units with one decimal.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v = self.0 as f64;
        let mut unit = "B";
        for next in ["KiB", "MiB", "GiB", "TiB"] {
            if v < 1024.0 {
                break;
            }
            v /= 1024.0;
            unit = next;
        }
        if unit == "B" { write!(f, "{} B", self.0) } else { write!(f, "{v:.1} {unit}") }
    }
}

type Slot = Arc<spin::Once<Arc<dyn Device>>>;

/// The table of device kinds and opened devices.
///
/// Kinds are tried for the default device in registration order. Each canonical name is opened
/// at most once; concurrent first opens of one name wait for a single open, and a failed open is
/// retried by the next call. [`Registry::global`] is the process-wide table.
pub struct Registry {
    kinds: spin::Mutex<Vec<DeviceKind>>,
    opened: spin::Mutex<BTreeMap<String, Slot>>,
    default: spin::Mutex<Option<String>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<&'static str> = self.kinds.lock().iter().map(|k| k.name).collect();
        f.debug_struct("Registry").field("kinds", &kinds).finish_non_exhaustive()
    }
}

static GLOBAL: Registry = Registry::new();

impl Registry {
    /// An empty registry.
    pub const fn new() -> Self {
        Self {
            kinds: spin::Mutex::new(Vec::new()),
            opened: spin::Mutex::new(BTreeMap::new()),
            default: spin::Mutex::new(None),
        }
    }

    /// The process-wide registry.
    pub fn global() -> &'static Registry {
        &GLOBAL
    }

    /// Add a device kind. A kind registered again under the same name replaces the earlier one
    /// in place (keeping its priority).
    pub fn register(&self, kind: DeviceKind) {
        let mut kinds = self.kinds.lock();
        match kinds.iter_mut().find(|k| k.name.eq_ignore_ascii_case(kind.name)) {
            Some(k) => *k = kind,
            None => kinds.push(kind),
        }
    }

    /// Names of the registered kinds, in priority order.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.kinds.lock().iter().map(|k| k.name).collect()
    }

    /// Open (or return the already opened) device `name`.
    ///
    /// Errors: [`Error::UnknownDevice`] when no kind has that name or the index is not a decimal
    /// number; [`Error::DeviceUnavailable`] when the index is beyond the devices present; the
    /// kind's own error when counting or opening fails.
    pub fn open(&self, name: &str) -> Result<Arc<dyn Device>> {
        let mut canon = canonicalize(name);
        // A kind whose own name has a ':' (`QCOM:SIM`, a variant of `QCOM`) is named whole, in
        // any case, and opened under its own spelling.
        let whole = self
            .kinds
            .lock()
            .iter()
            .find(|k| k.name.contains(':') && k.name.eq_ignore_ascii_case(&canon))
            .map(|k| k.name);
        if let Some(k) = whole {
            canon = k.into();
        }
        let (kind_name, index) = match canon.split_once(':') {
            _ if whole.is_some() => (canon.as_str(), 0),
            Some((k, i)) => (k, i.parse::<u32>().map_err(|_| Error::UnknownDevice { name: device_name(&canon) })?),
            None => (canon.as_str(), 0),
        };
        let kind = self
            .kinds
            .lock()
            .iter()
            .find(|k| k.name.eq_ignore_ascii_case(kind_name))
            .copied()
            .ok_or(Error::UnknownDevice { name: device_name(&canon) })?;
        let slot = self.opened.lock().entry(canon.clone()).or_default().clone();
        let dev = slot.try_call_once(|| {
            let count = (kind.count)()?;
            if index >= count {
                return Err(Error::DeviceUnavailable {
                    device: device_name(&canon),
                    reason: "no device at this index",
                });
            }
            let dev = (kind.open)(index)?;
            debug!("opened device {}", canon.as_str());
            Ok(dev)
        })?;
        Ok(dev.clone())
    }

    /// Make `name` the default device.
    pub fn set_default(&self, name: &str) {
        *self.default.lock() = Some(canonicalize(name));
    }

    /// The default device's canonical name: the one set with [`Registry::set_default`], else
    /// (with `std`) the device named by the `DEV` environment variable, else the first registered
    /// kind that opens.
    ///
    /// Errors: [`Error::DeviceUnavailable`] when nothing is set and no kind opens.
    pub fn default_name(&self) -> Result<String> {
        #[cfg(feature = "std")]
        let dev = std::env::var("DEV").ok();
        #[cfg(not(feature = "std"))]
        let dev: Option<String> = None;
        self.resolve_default(dev.as_deref())
    }

    /// [`Registry::default_name`] with the `DEV` value passed in.
    fn resolve_default(&self, dev: Option<&str>) -> Result<String> {
        if let Some(name) = self.default.lock().clone() {
            return Ok(name);
        }
        if let Some(kind) = dev.and_then(parse_dev) {
            return Ok(canonicalize(&kind));
        }
        for kind in self.kinds() {
            match self.open(kind) {
                Ok(dev) => return Ok(canonicalize(dev.name())),
                Err(e) => debug!("default device: {} does not open: {}", kind, crate::allocator::Shown(&e)),
            }
        }
        Err(Error::DeviceUnavailable {
            device: device_name("default device"),
            reason: "no registered device kind opens",
        })
    }

    /// Try every registered kind (device 0 of each) and report what opened.
    pub fn enumerate(&self) -> Vec<DeviceReport> {
        let default = self.default_name().ok();
        self.report(default.as_deref())
    }

    fn report(&self, default: Option<&str>) -> Vec<DeviceReport> {
        self.kinds()
            .into_iter()
            .map(|kind| {
                let name = canonicalize(kind);
                DeviceReport {
                    default: default == Some(name.as_str()),
                    result: self.open(&name).map(|d| d.properties()),
                    name,
                }
            })
            .collect()
    }

    /// Finalize every opened device and forget it (a later [`Registry::open`] opens it anew).
    pub fn finalize_all(&self) {
        let opened = core::mem::take(&mut *self.opened.lock());
        for (name, slot) in opened {
            if let Some(dev) = slot.get() {
                debug!("finalizing device {}", name.as_str());
                dev.finalize();
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::allocator::tests::{FakeAllocator, Shared};
    use alloc::boxed::Box;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec;
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// A device over a fake heap; it runs no programs.
    pub(crate) struct FakeDevice {
        pub name: String,
        pub alloc: LruAllocator,
        pub heap: Arc<FakeAllocator>,
        pub finalized: AtomicUsize,
        pub syncs: AtomicUsize,
    }

    impl FakeDevice {
        pub(crate) fn new(name: &str, capacity: u64) -> Arc<FakeDevice> {
            let heap = Arc::new(FakeAllocator::new(capacity));
            Arc::new(FakeDevice {
                name: name.to_string(),
                alloc: LruAllocator::new(name, Box::new(Shared(heap.clone()))),
                heap,
                finalized: AtomicUsize::new(0),
                syncs: AtomicUsize::new(0),
            })
        }
    }

    impl Device for FakeDevice {
        fn name(&self) -> &str {
            &self.name
        }
        fn allocator(&self) -> &LruAllocator {
            &self.alloc
        }
        fn load_program(&self, _image: &ProgramImage) -> Result<Arc<dyn Program>> {
            Err(Error::Unsupported { what: "programs on the fake device", value: 0 })
        }
        fn synchronize(&self) -> Result<()> {
            self.syncs.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        fn finalize(&self) {
            self.finalized.fetch_add(1, Ordering::Relaxed);
        }
        fn properties(&self) -> DeviceProperties {
            DeviceProperties {
                kind: "fake".into(),
                arch: "none".into(),
                cores: 2,
                memory_bytes: 3 << 29,
                timestamp_hz: 0,
                notes: String::new(),
            }
        }
        fn limits(&self) -> DeviceLimits {
            let capacity = self.heap.capacity;
            DeviceLimits {
                memory_bytes: capacity,
                max_alloc_bytes: capacity,
                alloc_align: 16,
                max_kernel_args: 0,
                max_grid: [1, 1, 1],
                gpu: None,
            }
        }
        fn as_any(&self) -> &dyn core::any::Any {
            self
        }
    }

    fn two() -> Result<u32> {
        Ok(2)
    }
    fn open_fake(index: u32) -> Result<Arc<dyn Device>> {
        let name = if index == 0 { "FAKE".to_string() } else { format!("FAKE:{index}") };
        Ok(FakeDevice::new(&name, 1 << 20))
    }
    fn none() -> Result<u32> {
        Err(Error::DeviceUnavailable { device: device_name("BROKEN"), reason: "no driver loaded" })
    }
    fn never(_: u32) -> Result<Arc<dyn Device>> {
        Err(Error::DeviceUnavailable { device: device_name("BROKEN"), reason: "should not be opened" })
    }

    const FAKE: DeviceKind = DeviceKind { name: "FAKE", count: two, open: open_fake };
    const BROKEN: DeviceKind = DeviceKind { name: "BROKEN", count: none, open: never };

    #[test]
    fn canonicalize_table() {
        for (input, want) in [
            ("cpu", "CPU"),
            ("cpu:0", "CPU"),
            ("CPU:0", "CPU"),
            ("sim:1", "SIM:1"),
            ("Sim:10", "SIM:10"),
            ("disk:/a/b", "DISK:/a/b"),
            ("disk:/Mixed/Case:0", "DISK:/Mixed/Case"),
            ("qcom", "QCOM"),
            ("", ""),
        ] {
            assert_eq!(canonicalize(input), want, "canonicalize({input:?})");
        }
    }

    #[test]
    fn canonicalize_many_collapses_single_names() {
        assert_eq!(canonicalize_many(&["cpu:0"]), CanonicalNames::One("CPU".into()));
        assert_eq!(canonicalize_many(&["sim:0", "sim:1"]), CanonicalNames::Many(vec!["SIM".into(), "SIM:1".into()]));
        assert_eq!(canonicalize_many(&[]), CanonicalNames::Many(vec![]));
    }

    #[test]
    fn dev_variable_parsing() {
        for (input, want) in [
            ("AMD", Some("AMD")),
            ("PCI+AMD:LLVM", Some("AMD")),
            ("PCI:0-3+amd", Some("AMD")),
            ("QCOM:IR3", Some("QCOM")),
            ("MOCK+NV;CPU", Some("NV")),
            ("cpu:LLVM:x86_64;QCOM", Some("CPU")),
            (" sim ", Some("SIM")),
            ("", None),
            ("PCI+", None),
            (":LLVM", None),
            (";CPU", None),
        ] {
            assert_eq!(parse_dev(input).as_deref(), want, "parse_dev({input:?})");
        }
    }

    #[test]
    fn open_caches_one_instance_per_canonical_name() {
        let r = Registry::new();
        r.register(FAKE);
        let a = r.open("fake").unwrap();
        let b = r.open("FAKE:0").unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the same canonical name gives the same device");
        let c = r.open("fake:1").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.name(), "FAKE:1");
    }

    fn open_variant(_: u32) -> Result<Arc<dyn Device>> {
        Ok(FakeDevice::new("FAKE:SIM", 1 << 20))
    }

    #[test]
    fn a_kind_named_with_a_colon_is_opened_by_its_whole_name() {
        let r = Registry::new();
        r.register(FAKE);
        r.register(DeviceKind { name: "FAKE:SIM", count: two, open: open_variant });
        let v = r.open("fake:sim").unwrap();
        assert_eq!(v.name(), "FAKE:SIM");
        assert!(Arc::ptr_eq(&v, &r.open("FAKE:SIM").unwrap()));
        assert_eq!(r.open("fake:1").unwrap().name(), "FAKE:1", "indices of the plain kind still work");
        assert_eq!(r.open("fake:simx").unwrap_err(), Error::UnknownDevice { name: device_name("FAKE:simx") });
        assert!(r.enumerate().iter().any(|d| d.name == "FAKE:SIM" && d.result.is_ok()));
    }

    #[test]
    fn unknown_and_absent_devices_are_errors() {
        let r = Registry::new();
        r.register(FAKE);
        assert_eq!(r.open("nope").unwrap_err(), Error::UnknownDevice { name: device_name("NOPE") });
        assert_eq!(r.open("fake:/x").unwrap_err(), Error::UnknownDevice { name: device_name("FAKE:/x") });
        assert_eq!(
            r.open("fake:2").unwrap_err(),
            Error::DeviceUnavailable { device: device_name("FAKE:2"), reason: "no device at this index" }
        );
        // A failing kind reports its own reason.
        r.register(BROKEN);
        assert!(matches!(r.open("broken"), Err(Error::DeviceUnavailable { reason: "no driver loaded", .. })));
    }

    #[test]
    fn default_prefers_explicit_then_dev_then_first_that_opens() {
        let r = Registry::new();
        assert!(matches!(r.resolve_default(None), Err(Error::DeviceUnavailable { .. })));
        r.register(BROKEN);
        r.register(FAKE);
        assert_eq!(r.resolve_default(None).unwrap(), "FAKE", "BROKEN is first but does not open");
        assert_eq!(r.resolve_default(Some("PCI+sim:LLVM")).unwrap(), "SIM");
        r.set_default("fake:1");
        assert_eq!(r.resolve_default(Some("SIM")).unwrap(), "FAKE:1");
    }

    #[test]
    fn enumeration_reports_pass_and_fail() {
        let r = Registry::new();
        r.register(FAKE);
        r.register(BROKEN);
        let reports = r.report(Some("FAKE"));
        assert_eq!(reports.len(), 2);
        assert!(reports[0].default && !reports[1].default);
        assert!(reports[0].result.is_ok());
        assert_eq!(
            reports[1].result,
            Err(Error::DeviceUnavailable { device: device_name("BROKEN"), reason: "no driver loaded" })
        );
        let text = format!("{}", ReportList(&reports));
        assert_eq!(
            text,
            "* FAKE    : PASS fake none, 2 cores, 1.5 GiB\n  BROKEN  : FAIL BROKEN is unavailable: no driver loaded"
        );
    }

    #[test]
    fn finalize_all_finalizes_each_opened_device_once() {
        let r = Registry::new();
        r.register(FAKE);
        let a = r.open("fake").unwrap();
        let b = r.open("fake:1").unwrap();
        r.finalize_all();
        for d in [&a, &b] {
            let fake = d.as_any().downcast_ref::<FakeDevice>().unwrap();
            assert_eq!(fake.finalized.load(Ordering::Relaxed), 1);
        }
        let again = r.open("fake").unwrap();
        assert!(!Arc::ptr_eq(&a, &again), "a finalized device is opened anew");
    }

    #[test]
    fn byte_sizes_format_in_binary_units() {
        assert_eq!(format!("{}", Bytes(512)), "512 B");
        assert_eq!(format!("{}", Bytes(1536)), "1.5 KiB");
        assert_eq!(format!("{}", Bytes(64 << 30)), "64.0 GiB");
        assert_eq!(format!("{}", Bytes(5 << 40)), "5.0 TiB");
    }
}
