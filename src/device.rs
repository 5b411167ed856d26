//! Devices as the engine sees them, and their names.
//!
//! A [`Device`] is one opened accelerator (or the host CPU) at the engine's level: it owns the
//! [`LruAllocator`] its buffers come from, synchronizes, states its [`DeviceProperties`] and
//! [`DeviceLimits`] and, when driven through command rings, its [`Engine`](crate::engine::Engine).
//! Running programs is not its promise: a device kind that runs bundles is an entry of the
//! plug-in registry (`hcq_runner::plug`), which loads whole bundles through the device's own
//! backend. Devices are named like tinygrad's: an upper-case kind and an optional index
//! (`"CPU"`, `"SIM:1"`); see [`canonicalize`] and [`parse_dev`] (`DEV`'s interface, renderer and
//! architecture fields are parsed past). [`DeviceReport`] and [`ReportList`] are the lines of
//! `hcq devices`, as `python -m tinygrad.device` prints them.

use crate::allocator::LruAllocator;
use crate::error::{Error, Result};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

pub use crate::limits::DeviceLimits;

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
    /// Wait until all submitted work has finished.
    fn synchronize(&self) -> Result<()>;
    /// Release the device at the end of the process. The default does nothing.
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

/// One line of a device enumeration (`hcq devices`).
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::allocator::tests::{FakeAllocator, Shared};
    use alloc::boxed::Box;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::sync::Arc;
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
            }
        }
        fn as_any(&self) -> &dyn core::any::Any {
            self
        }
    }

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
    fn byte_sizes_format_in_binary_units() {
        assert_eq!(format!("{}", Bytes(512)), "512 B");
        assert_eq!(format!("{}", Bytes(1536)), "1.5 KiB");
        assert_eq!(format!("{}", Bytes(64 << 30)), "64.0 GiB");
        assert_eq!(format!("{}", Bytes(5 << 40)), "5.0 TiB");
    }
}
