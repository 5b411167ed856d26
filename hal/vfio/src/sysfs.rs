//! PCI discovery from sysfs, and binding a device to `vfio-pci`.
//!
//! Everything is read under an injectable root (normally `/sys`), so the same code runs on a
//! fake tree in unit tests. What is read (Linux `Documentation/ABI/testing/sysfs-bus-pci`,
//! `Documentation/PCI/sysfs-pci.rst`):
//!
//! - `bus/pci/devices/<addr>/{vendor,device,class}`: `0x`-prefixed hex;
//! - `bus/pci/devices/<addr>/resource`: one line per resource, `start end flags` in hex; lines
//!   0..=5 are the BARs, 6 the expansion ROM; an unused BAR is all zeros;
//! - `bus/pci/devices/<addr>/iommu_group`: a link whose last component is the group number
//!   (absent without an IOMMU);
//! - `bus/pci/devices/<addr>/driver`: a link to the bound driver (absent when unbound).
//!
//! [`Sysfs::bind_vfio_pci`] changes the system: it sets `driver_override` to `vfio-pci`,
//! unbinds the current driver and asks the kernel to probe the device again
//! (`bus/pci/drivers_probe`). It needs root (or write access to those files) and the
//! `vfio-pci` module loaded. It is never called implicitly.

use hcq::error::{Error, Result, ResultExt};
use std::fmt;
use std::path::{Path, PathBuf};

/// A PCI function address, `domain:bus:device.function` (`0000:00:03.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    /// PCI segment (domain).
    pub domain: u32,
    /// Bus number.
    pub bus: u8,
    /// Device number (0..32).
    pub device: u8,
    /// Function number (0..8).
    pub function: u8,
}

impl PciAddress {
    /// Parse `dddd:bb:dd.f` (the domain may be longer than four digits, as on some hosts).
    pub fn parse(s: &str) -> Result<Self> {
        let bad = |at: usize, reason| Error::Malformed { what: "pci address", at: at as u64, reason };
        let (domain, rest) = s.split_once(':').ok_or(bad(0, "expected domain:bus:device.function"))?;
        let (bus, rest) = rest.split_once(':').ok_or(bad(domain.len(), "expected bus:device.function"))?;
        let (dev, func) = rest.split_once('.').ok_or(bad(domain.len() + bus.len() + 2, "expected device.function"))?;
        let hex = |t: &str, max: u32, at: usize, reason| {
            if t.is_empty() || t.len() > 8 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(at, reason));
            }
            let v = u32::from_str_radix(t, 16).map_err(|_| bad(at, reason))?;
            if v > max { Err(bad(at, reason)) } else { Ok(v) }
        };
        let domain_v = hex(domain, u32::MAX, 0, "domain is not hex")?;
        let bus_v = hex(bus, 0xff, domain.len() + 1, "bus is not a hex byte")?;
        let at_dev = domain.len() + bus.len() + 2;
        let dev_v = hex(dev, 0x1f, at_dev, "device is not hex below 0x20")?;
        let func_v = hex(func, 7, at_dev + dev.len() + 1, "function is not 0..=7")?;
        // CAST: each value was range-checked against its field's maximum above.
        Ok(Self { domain: domain_v, bus: bus_v as u8, device: dev_v as u8, function: func_v as u8 })
    }
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.device, self.function)
    }
}

/// Address space of a BAR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarKind {
    /// Memory space (MMIO), mappable through VFIO.
    Memory {
        /// The BAR is 64-bit (it uses this and the next BAR slot).
        is_64bit: bool,
        /// Prefetchable memory.
        prefetchable: bool,
    },
    /// I/O port space.
    Io,
}

/// One populated BAR from the `resource` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    /// BAR index (0..=5).
    pub index: u8,
    /// Bus address of the BAR.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Memory or I/O.
    pub kind: BarKind,
}

// Linux include/linux/ioport.h resource flags.
const IORESOURCE_IO: u64 = 0x100;
const IORESOURCE_MEM: u64 = 0x200;
const IORESOURCE_PREFETCH: u64 = 0x2000;
const IORESOURCE_MEM_64: u64 = 0x0010_0000;

/// Parse the text of a device's `resource` file into its populated BARs (lines 0..=5).
pub fn parse_resource(text: &str) -> Result<Vec<Bar>> {
    let mut bars = Vec::new();
    for (i, line) in text.lines().enumerate().take(6) {
        let bad = |reason| Error::Malformed { what: "pci resource file", at: i as u64, reason };
        let mut it = line.split_whitespace().map(|t| {
            let t = t.strip_prefix("0x").ok_or(bad("field without 0x prefix"))?;
            u64::from_str_radix(t, 16).map_err(|_| bad("field is not hex"))
        });
        let (Some(start), Some(end), Some(flags), None) = (it.next(), it.next(), it.next(), it.next()) else {
            return Err(bad("expected three fields: start end flags"));
        };
        let (start, end, flags) = (start?, end?, flags?);
        if start == 0 && end == 0 {
            continue;
        }
        if end < start {
            return Err(bad("end before start"));
        }
        let kind = if flags & IORESOURCE_MEM != 0 {
            BarKind::Memory { is_64bit: flags & IORESOURCE_MEM_64 != 0, prefetchable: flags & IORESOURCE_PREFETCH != 0 }
        } else if flags & IORESOURCE_IO != 0 {
            BarKind::Io
        } else {
            return Err(bad("resource is neither memory nor I/O"));
        };
        // CAST: `i < 6` (take(6)).
        bars.push(Bar { index: i as u8, start, size: end - start + 1, kind });
    }
    Ok(bars)
}

/// What sysfs says about one PCI function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciDevice {
    /// Its address.
    pub address: PciAddress,
    /// Vendor id.
    pub vendor: u16,
    /// Device id.
    pub device: u16,
    /// Class code (base class, subclass, programming interface: 24 bits).
    pub class: u32,
    /// The populated BARs.
    pub bars: Vec<Bar>,
    /// IOMMU group number, when the device has one.
    pub iommu_group: Option<u32>,
    /// Name of the bound driver, when one is bound.
    pub driver: Option<String>,
}

impl PciDevice {
    /// BAR `index`, when populated.
    pub fn bar(&self, index: u8) -> Option<&Bar> {
        self.bars.iter().find(|b| b.index == index)
    }

    /// True when the device is bound to `vfio-pci`.
    pub fn is_vfio_bound(&self) -> bool {
        self.driver.as_deref() == Some("vfio-pci")
    }
}

/// PCI sysfs under a root directory (`/sys` on a real system).
#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Self::new("/sys")
    }
}

fn io_err(what: &'static str, e: &std::io::Error) -> Error {
    Error::Os { what, errno: e.raw_os_error().unwrap_or(0) }
}

fn read_trim(path: &Path, what: &'static str) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| io_err(what, &e))
        .with_context(|| path.display().to_string())
}

fn parse_hex(path: &Path, text: &str, what: &'static str, max: u64) -> Result<u64> {
    let t = text.strip_prefix("0x").unwrap_or(text);
    match u64::from_str_radix(t, 16) {
        Ok(v) if v <= max => Ok(v),
        _ => Err(Error::Malformed { what, at: 0, reason: "expected a 0x-prefixed hex number in range" })
            .with_context(|| path.display().to_string()),
    }
}

/// The last path component of a link's target (`../../kernel/iommu_groups/7` → `7`), or `None`
/// when the link does not exist.
fn link_name(path: &Path) -> Result<Option<String>> {
    match std::fs::read_link(path) {
        Ok(t) => Ok(t.file_name().map(|n| n.to_string_lossy().into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("readlink", &e)).with_context(|| path.display().to_string()),
    }
}

impl Sysfs {
    /// PCI sysfs under `root` (the directory that holds `bus/pci`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn devices_dir(&self) -> PathBuf {
        self.root.join("bus/pci/devices")
    }

    /// The sysfs directory of the device at `addr`.
    pub fn device_dir(&self, addr: PciAddress) -> PathBuf {
        self.devices_dir().join(addr.to_string())
    }

    /// Every PCI function, sorted by address.
    pub fn devices(&self) -> Result<Vec<PciDevice>> {
        let dir = self.devices_dir();
        let rd = std::fs::read_dir(&dir)
            .map_err(|e| io_err("list pci devices", &e))
            .with_context(|| dir.display().to_string())?;
        let mut out = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| io_err("list pci devices", &e)).with_context(|| dir.display().to_string())?;
            let name = ent.file_name();
            let addr = PciAddress::parse(&name.to_string_lossy()).with_context(|| ent.path().display().to_string())?;
            out.push(self.device(addr)?);
        }
        out.sort_by_key(|d| d.address);
        Ok(out)
    }

    /// The functions with this vendor and device id, sorted by address.
    pub fn find(&self, vendor: u16, device: u16) -> Result<Vec<PciDevice>> {
        Ok(self.devices()?.into_iter().filter(|d| d.vendor == vendor && d.device == device).collect())
    }

    /// Read one device.
    ///
    /// Errors: [`Error::DeviceUnavailable`] when the device does not exist; [`Error::Os`] or
    /// [`Error::Malformed`] (with the file's path as context) when a file cannot be read or
    /// parsed.
    pub fn device(&self, addr: PciAddress) -> Result<PciDevice> {
        let d = self.device_dir(addr);
        if !d.exists() {
            return Err(Error::DeviceUnavailable {
                device: hcq::error::device_name(&addr.to_string()),
                reason: "no such PCI device in sysfs",
            })
            .with_context(|| d.display().to_string());
        }
        let f = |name: &str| d.join(name);
        let vendor = parse_hex(&f("vendor"), &read_trim(&f("vendor"), "read pci vendor")?, "pci vendor id", 0xffff)?;
        let device = parse_hex(&f("device"), &read_trim(&f("device"), "read pci device")?, "pci device id", 0xffff)?;
        let class = parse_hex(&f("class"), &read_trim(&f("class"), "read pci class")?, "pci class", 0xff_ffff)?;
        let res = f("resource");
        let bars = parse_resource(&read_trim(&res, "read pci resource")?).with_context(|| res.display().to_string())?;
        let iommu_group = match link_name(&f("iommu_group"))? {
            Some(n) => Some(
                n.parse::<u32>()
                    .map_err(|_| Error::Malformed {
                        what: "iommu_group link",
                        at: 0,
                        reason: "the link target does not end in a group number",
                    })
                    .with_context(|| f("iommu_group").display().to_string())?,
            ),
            None => None,
        };
        let driver = link_name(&f("driver"))?;
        // CAST: each id was range-checked by `parse_hex`.
        Ok(PciDevice {
            address: addr,
            vendor: vendor as u16,
            device: device as u16,
            class: class as u32,
            bars,
            iommu_group,
            driver,
        })
    }

    /// Bind the device at `addr` to `vfio-pci`: write `vfio-pci` to its `driver_override`,
    /// unbind its current driver (if any other is bound), and write its address to
    /// `bus/pci/drivers_probe`. Returns the device as read afterwards.
    ///
    /// This changes the running system (the device's previous driver lets go of it) and needs
    /// write access to sysfs and the `vfio-pci` module loaded. Every other device in the same
    /// IOMMU group must also be bound to `vfio-pci` (or to no driver) before the group is
    /// usable.
    ///
    /// Errors: [`Error::Os`] naming the file that could not be written;
    /// [`Error::DeviceUnavailable`] when the kernel did not bind `vfio-pci` after the probe.
    pub fn bind_vfio_pci(&self, addr: PciAddress) -> Result<PciDevice> {
        let d = self.device_dir(addr);
        let cur = self.device(addr)?;
        if cur.is_vfio_bound() {
            return Ok(cur);
        }
        let write = |path: PathBuf, what: &'static str, value: &str| {
            std::fs::write(&path, value).map_err(|e| io_err(what, &e)).with_context(|| path.display().to_string())
        };
        write(d.join("driver_override"), "write driver_override", "vfio-pci")?;
        if cur.driver.is_some() {
            write(d.join("driver/unbind"), "unbind driver", &addr.to_string())?;
        }
        write(self.root.join("bus/pci/drivers_probe"), "write drivers_probe", &addr.to_string())?;
        let now = self.device(addr)?;
        if !now.is_vfio_bound() {
            return Err(Error::DeviceUnavailable {
                device: hcq::error::device_name(&addr.to_string()),
                reason: "vfio-pci did not bind after drivers_probe (is the vfio-pci module loaded?)",
            });
        }
        Ok(now)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A throwaway directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(pub PathBuf);
    impl TempDir {
        pub(crate) fn new(tag: &str) -> Self {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("hcq-vfio-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Self(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const EDU_RESOURCE: &str = "0x00000000fea00000 0x00000000feafffff 0x0000000000040200\n\
        0x0000000000000000 0x0000000000000000 0x0000000000000000\n\
        0x000000000000c000 0x000000000000c01f 0x0000000000040101\n\
        0x0000000000000000 0x0000000000000000 0x0000000000000000\n\
        0x0000000800000000 0x0000000803ffffff 0x000000000014220c\n\
        0x0000000000000000 0x0000000000000000 0x0000000000000000\n\
        0x0000000000000000 0x0000000000000000 0x0000000000000000\n";

    /// A fake sysfs with an edu device (bound to vfio-pci, group 3) and an unbound NIC.
    pub(crate) fn fake_sysfs() -> TempDir {
        let t = TempDir::new("sysfs");
        let root = &t.0;
        let add = |addr: &str, vendor: &str, device: &str, class: &str, group: Option<u32>, driver: Option<&str>| {
            let d = root.join("bus/pci/devices").join(addr);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vendor"), format!("{vendor}\n")).unwrap();
            std::fs::write(d.join("device"), format!("{device}\n")).unwrap();
            std::fs::write(d.join("class"), format!("{class}\n")).unwrap();
            std::fs::write(d.join("resource"), EDU_RESOURCE).unwrap();
            std::fs::write(d.join("driver_override"), "(null)\n").unwrap();
            if let Some(g) = group {
                symlink(format!("../../../kernel/iommu_groups/{g}"), d.join("iommu_group")).unwrap();
            }
            if let Some(drv) = driver {
                let dd = root.join("bus/pci/drivers").join(drv);
                std::fs::create_dir_all(&dd).unwrap();
                std::fs::write(dd.join("unbind"), "").unwrap();
                symlink(&dd, d.join("driver")).unwrap();
            }
        };
        add("0000:00:03.0", "0x1234", "0x11e8", "0x00ff00", Some(3), Some("vfio-pci"));
        add("0000:00:02.0", "0x8086", "0x10d3", "0x020000", Some(2), Some("e1000e"));
        add("0000:01:00.0", "0x1234", "0x11e8", "0x00ff00", None, None);
        std::fs::write(root.join("bus/pci/drivers_probe"), "").unwrap();
        t
    }

    #[test]
    fn addresses_parse_and_print_round_trip() {
        let a = PciAddress::parse("0000:00:03.0").unwrap();
        assert_eq!(a, PciAddress { domain: 0, bus: 0, device: 3, function: 0 });
        assert_eq!(a.to_string(), "0000:00:03.0");
        assert_eq!(PciAddress::parse("10000:ff:1f.7").unwrap().to_string(), "10000:ff:1f.7");
        for bad in ["", "0000:00:03", "0000:00:20.0", "0000:00:03.8", "0000:100:00.0", "zz:00:00.0", "0000:00:0g.0"] {
            assert!(matches!(PciAddress::parse(bad), Err(Error::Malformed { .. })), "{bad:?} must not parse");
        }
    }

    #[test]
    fn resource_lines_become_bars() {
        let bars = parse_resource(EDU_RESOURCE).unwrap();
        assert_eq!(bars.len(), 3, "empty lines are skipped: {bars:?}");
        assert_eq!(
            bars[0],
            Bar {
                index: 0,
                start: 0xfea0_0000,
                size: 1 << 20,
                kind: BarKind::Memory { is_64bit: false, prefetchable: false }
            }
        );
        assert_eq!(bars[1], Bar { index: 2, start: 0xc000, size: 32, kind: BarKind::Io });
        assert_eq!(bars[2].kind, BarKind::Memory { is_64bit: true, prefetchable: true });
        assert_eq!(bars[2].size, 64 << 20);
        assert!(parse_resource("0x1 0x2\n").is_err(), "two fields");
        assert!(parse_resource("0x10 0x1 0x200\n").is_err(), "end before start");
        assert!(parse_resource("10 20 200\n").is_err(), "no 0x prefix");
        assert!(parse_resource("0x10 0x20 0x0\n").is_err(), "neither memory nor I/O");
    }

    #[test]
    fn discovery_reads_ids_group_and_driver() {
        let t = fake_sysfs();
        let s = Sysfs::new(&t.0);
        let all = s.devices().unwrap();
        let addrs: Vec<String> = all.iter().map(|d| d.address.to_string()).collect();
        assert_eq!(addrs, ["0000:00:02.0", "0000:00:03.0", "0000:01:00.0"]);
        let edu = &all[1];
        assert_eq!((edu.vendor, edu.device, edu.class), (0x1234, 0x11e8, 0x00ff00));
        assert_eq!(edu.iommu_group, Some(3));
        assert_eq!(edu.driver.as_deref(), Some("vfio-pci"));
        assert!(edu.is_vfio_bound());
        assert_eq!(edu.bar(0).unwrap().size, 1 << 20);
        assert!(edu.bar(1).is_none());
        assert_eq!(all[0].driver.as_deref(), Some("e1000e"));
        let unbound = &all[2];
        assert_eq!((unbound.iommu_group, unbound.driver.as_deref()), (None, None));
        assert_eq!(s.find(0x1234, 0x11e8).unwrap().len(), 2);
    }

    #[test]
    fn missing_device_and_malformed_files_are_clear_errors() {
        let t = fake_sysfs();
        let s = Sysfs::new(&t.0);
        let e = s.device(PciAddress::parse("0000:07:00.0").unwrap()).unwrap_err();
        assert!(matches!(e.root(), Error::DeviceUnavailable { .. }), "{e}");
        assert!(e.to_string().contains("0000:07:00.0"), "{e}");
        std::fs::write(t.0.join("bus/pci/devices/0000:00:03.0/vendor"), "banana\n").unwrap();
        let e = s.device(PciAddress::parse("0000:00:03.0").unwrap()).unwrap_err();
        assert!(matches!(e.root(), Error::Malformed { what: "pci vendor id", .. }), "{e}");
        assert!(e.to_string().contains("0000:00:03.0/vendor"), "the error names the file: {e}");
        let e = Sysfs::new(t.0.join("nope")).devices().unwrap_err();
        assert!(matches!(e.root(), Error::Os { .. }), "{e}");
    }

    #[test]
    fn binding_writes_override_unbind_and_probe() {
        let t = fake_sysfs();
        let s = Sysfs::new(&t.0);
        let nic = PciAddress::parse("0000:00:02.0").unwrap();
        // a fake kernel does not rebind, so the call must report that vfio-pci did not bind ...
        let e = s.bind_vfio_pci(nic).unwrap_err();
        assert!(matches!(e, Error::DeviceUnavailable { .. }), "{e}");
        // ... after writing the three files in the documented way
        let dir = s.device_dir(nic);
        assert_eq!(std::fs::read_to_string(dir.join("driver_override")).unwrap(), "vfio-pci");
        assert_eq!(std::fs::read_to_string(t.0.join("bus/pci/drivers/e1000e/unbind")).unwrap(), "0000:00:02.0");
        assert_eq!(std::fs::read_to_string(t.0.join("bus/pci/drivers_probe")).unwrap(), "0000:00:02.0");
        // an already bound device is left alone
        let edu = s.bind_vfio_pci(PciAddress::parse("0000:00:03.0").unwrap()).unwrap();
        assert!(edu.is_vfio_bound());
    }
}
