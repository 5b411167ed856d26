//! The in-VM test of `cargo qemu-vfio`: runs as the initramfs's test program inside a QEMU q35
//! guest with an intel-iommu and two `edu` devices:
//!
//! - edu **A** alone behind a PCIe root port (its own IOMMU group; a bus reset can reset it);
//! - edu **B** at function 0 of a multifunction slot whose function 1 is a virtio-rng bound to
//!   `virtio-pci`: the two share an IOMMU group that is not viable while virtio holds function 1.
//!
//! Every check prints `PASS name` or `FAIL name: why`; the exit status is the number of failed
//! checks (0 = all passed). Needs root, the vfio modules loaded and no driver on the edu devices.

use hcq::DType;
use hcq::allocator::BufferSpec;
use hcq::buffer::Buffer;
use hcq::device::Device;
use hcq::error::Error;
use hcq::mmio::{MmioBus, Width};
use hcq::signal::WaitPolicy;
use hcq_vfio::config::{self, Capability};
use hcq_vfio::dma::DmaBuffer;
use hcq_vfio::edu::{self, DmaSignal, Edu, EduHandle};
use hcq_vfio::{IrqKind, PciAddress, Sysfs, VfioDevice, VfioPaths};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Checks {
    failed: u32,
    passed: u32,
}

impl Checks {
    fn check(&mut self, name: &str, r: Result<String, String>) {
        match r {
            Ok(note) => {
                self.passed += 1;
                println!("PASS {name}{}{note}", if note.is_empty() { "" } else { ": " });
            }
            Err(why) => {
                self.failed += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
}

fn err(e: Error) -> String {
    e.to_string()
}

/// Kernel log lines that mention a DMA remapping fault (read non-blocking from /dev/kmsg).
fn dmar_faults() -> Vec<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut out = Vec::new();
    let Ok(mut f) = std::fs::OpenOptions::new().read(true).custom_flags(0o4000 /* O_NONBLOCK */).open("/dev/kmsg")
    else {
        return out;
    };
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = f.read(&mut buf) {
        if n == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buf[..n]);
        if line.contains("DMAR") && line.contains("fault addr") {
            out.push(line.trim().to_string());
        }
    }
    out
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn main() {
    let mut c = Checks { failed: 0, passed: 0 };
    let t0 = Instant::now();
    let sysfs = Sysfs::default();
    let paths = VfioPaths::default();

    // --- discovery
    let edus = sysfs.find(edu::VENDOR, edu::DEVICE).unwrap_or_default();
    let a = edus.iter().find(|d| d.address.bus != 0).map(|d| d.address);
    let b = edus.iter().find(|d| d.address.bus == 0).map(|d| d.address);
    c.check(
        "discovery: two edu devices with BAR0 of 1 MiB",
        match (&a, &b) {
            (Some(_), Some(_)) if edus.iter().all(|d| d.bar(0).is_some_and(|b| b.size == 1 << 20)) => Ok(edus
                .iter()
                .map(|d| format!("{} group {:?} class {:#08x}", d.address, d.iommu_group, d.class))
                .collect::<Vec<_>>()
                .join(", ")),
            _ => Err(format!("found {edus:?}")),
        },
    );
    let (Some(a), Some(b)) = (a, b) else {
        println!("VFIO_EDU_RESULT failed={} passed={}", c.failed + 1, c.passed);
        std::process::exit(1);
    };

    // --- a device not bound to vfio-pci
    c.check(
        "error: device not bound to vfio-pci",
        match VfioDevice::open(&paths, a) {
            Err(e) if matches!(e.root(), Error::DeviceUnavailable { reason, .. } if reason.starts_with("not bound")) => {
                Ok(e.to_string())
            }
            other => Err(format!("{other:?}")),
        },
    );
    c.check(
        "bind to vfio-pci (driver_override + drivers_probe)",
        sysfs.bind_vfio_pci(a).map(|d| format!("{} -> {:?}", d.address, d.driver)).map_err(err),
    );

    // --- /dev/vfio missing (a real bound device, the VFIO directory looked up elsewhere)
    let missing = VfioPaths { sysfs: sysfs.clone(), dev_vfio: "/dev/vfio-missing".into() };
    c.check(
        "error: missing /dev/vfio",
        match VfioDevice::open(&missing, a) {
            Err(e) if matches!(e.root(), Error::DeviceUnavailable { reason, .. } if reason.starts_with("/dev/vfio is missing")) => {
                Ok(e.to_string())
            }
            other => Err(format!("{other:?}")),
        },
    );

    // --- a non-viable group: edu B shares its group with a virtio device bound to virtio-pci
    let b_fn1 = PciAddress { function: 1, ..b };
    c.check(
        "error: non-viable IOMMU group",
        (|| {
            sysfs.bind_vfio_pci(b).map_err(err)?;
            let other = sysfs.device(b_fn1).map_err(err)?;
            let e = match VfioDevice::open(&paths, b) {
                Err(e) => e,
                Ok(_) => return Err(format!("opened although {b_fn1} is bound to {:?}", other.driver)),
            };
            if !matches!(e.root(), Error::DeviceUnavailable { reason, .. } if reason.starts_with("IOMMU group is not viable")) {
                return Err(format!("wrong error: {e}"));
            }
            // the cure: release the other device; the same open then succeeds
            std::fs::write(sysfs.device_dir(b_fn1).join("driver/unbind"), b_fn1.to_string()).map_err(|e| e.to_string())?;
            VfioDevice::open(&paths, b).map_err(|e| format!("still failing after unbinding {b_fn1}: {e}"))?;
            Ok(format!("{e} (with {b_fn1} on {:?}); opens once it is unbound", other.driver))
        })(),
    );

    // --- open A
    let edu = match Edu::open(&paths, a) {
        Ok(e) => e,
        Err(e) => {
            c.check("open edu through VFIO type1", Err(err(e)));
            println!("VFIO_EDU_RESULT failed={} passed={}", c.failed, c.passed);
            std::process::exit(c.failed as i32);
        }
    };
    c.check("open edu through VFIO type1", Ok(format!("group {}", edu.device().container().group())));
    c.check(
        "config space: bus master on, MSI capability found",
        (|| {
            let cfg = edu.device().config().map_err(err)?;
            let cmd = config::COMMAND::read(&cfg).map_err(err)?;
            let caps = config::capabilities(&cfg).map_err(err)?;
            let msi = caps.iter().find(|c| matches!(c, Capability::Msi { .. }));
            match (cmd.bus_master() && cmd.memory(), msi) {
                (true, Some(m)) => Ok(format!("{cmd:?}, {m:?}")),
                _ => Err(format!("{cmd:?} {caps:?}")),
            }
        })(),
    );
    c.check(
        "identification through the mapped BAR",
        match edu.identify() {
            Ok(id) if id.magic() == 0xed && id.major() == 1 => Ok(format!("{:#010x}", id.raw())),
            other => Err(format!("{other:?}")),
        },
    );
    c.check(
        "liveness through the mapped BAR",
        (|| {
            for v in [0x1234_5678u32, 0, 0xffff_ffff, 0xdead_beef] {
                let r = edu.liveness(v).map_err(err)?;
                if r != !v {
                    return Err(format!("wrote {v:#x}, read {r:#x}"));
                }
            }
            Ok("4 values inverted".into())
        })(),
    );
    c.check(
        "factorial (polled)",
        match edu.factorial(10, Duration::from_secs(2)) {
            Ok(3_628_800) => Ok("10! = 3628800".into()),
            other => Err(format!("{other:?}")),
        },
    );
    c.check(
        "MSI completion (factorial interrupt)",
        match (edu.irq_kind(), edu.factorial_irq(5, Duration::from_secs(2))) {
            (IrqKind::Msi, Ok(120)) => Ok("5! = 120 on MSI".into()),
            other => Err(format!("{other:?}")),
        },
    );

    c.check(
        "IOVA is not the physical address (translation by the IOMMU)",
        (|| {
            let m = edu.map(4096).map_err(err)?;
            let phys = m.buffer().phys_addr(0).map_err(err)?;
            if phys == m.iova() {
                return Err(format!("IOVA {:#x} equals the physical address", m.iova()));
            }
            Ok(format!("IOVA {:#x}, physical {phys:#x}", m.iova()))
        })(),
    );
    c.check(
        "INTx completion (factorial interrupt on the legacy line, unmasked per interrupt)",
        (|| {
            edu.set_irq_kind(IrqKind::Intx).map_err(err)?;
            let r = (|| {
                Ok::<_, Error>((
                    edu.factorial_irq(6, Duration::from_secs(2))?,
                    edu.factorial_irq(4, Duration::from_secs(2))?,
                ))
            })();
            edu.set_irq_kind(IrqKind::Msi).map_err(err)?;
            match r.map_err(err)? {
                (720, 24) => Ok("6! = 720 and 4! = 24 on INTx; back on MSI".into()),
                other => Err(format!("{other:?}")),
            }
        })(),
    );

    // --- the EDU device: Buffer copies through the copy queue
    let edu = Arc::new(edu);
    let handle = match EduHandle::new("EDU", Arc::try_unwrap(edu).unwrap_or_else(|_| unreachable!())) {
        Ok(h) => Arc::new(h),
        Err(e) => {
            c.check("EDU device", Err(err(e)));
            std::process::exit(c.failed as i32);
        }
    };
    let dev: Arc<dyn Device> = handle.clone();
    let reg = hcq_runner::plug::Registry::new();
    reg.register(Arc::new(edu::EduKind));
    c.check(
        "registry: EDU kind opens the bound device and refuses bundles naming it",
        match reg.open("EDU", &Default::default()) {
            // index 0 is the lowest address bound to vfio-pci: edu B (A is held open here)
            Ok(d) if d.description().contains(&b.to_string()) => {
                let bytes = hcq_bundle::hcqb::write(&hcq_bundle::testing::tiny());
                match bytes.and_then(|b| hcq_bundle::hcqb::Hcqb::parse(&b).map(|f| d.load(&f).map(|_| ()))) {
                    Ok(Err(e)) if e.to_string().contains("EDU") => Ok(d.description()),
                    other => Err(format!("a bundle on EDU: {other:?}")),
                }
            }
            Ok(d) => Err(format!("opened {}", d.description())),
            Err(e) => Err(err(e)),
        },
    );
    let hcq = dev.engine().expect("EDU has an HCQ engine");
    let before = hcq.timeline().completed();
    let sizes = [1usize, 8, 61, 512, 1000, 4088];
    c.check(
        "DMA host->device->host through the copy queue, several sizes, byte-verified",
        (|| {
            let mut rt = Vec::new();
            for (i, &n) in sizes.iter().enumerate() {
                let buf = Buffer::new(dev.clone(), n as u64, DType::U8, BufferSpec::default()).map_err(err)?;
                let data = pattern(n, i as u8 + 1);
                let t = Instant::now();
                buf.copy_in(&data).map_err(err)?;
                let mut back = vec![0u8; n];
                buf.copy_out(&mut back).map_err(err)?;
                rt.push(format!("{n} B {:.0} ms", t.elapsed().as_secs_f64() * 1e3));
                if back != data {
                    let at = back.iter().zip(&data).position(|(a, b)| a != b).unwrap_or(0);
                    return Err(format!("{n} bytes: first difference at {at}: {} != {}", back[at], data[at]));
                }
            }
            let after = hcq.timeline().completed();
            if after.get() < before.get() + 2 * sizes.len() as u64 {
                return Err(format!("timeline advanced {before} -> {after}, expected one value per copy"));
            }
            Ok(format!("round trips: {}; timeline {before} -> {after}", rt.join(", ")))
        })(),
    );
    c.check(
        "copy queue refuses a device range outside the 4 KiB buffer",
        match Buffer::new(dev.clone(), 8192, DType::U8, BufferSpec::default()).and_then(|b| b.allocate()) {
            Err(e) => Ok(e.to_string()),
            Ok(()) => Err("an 8 KiB buffer was allocated in 4 KiB of device memory".into()),
        },
    );

    let edu = handle.edu().clone();
    let hooks = edu.irq_hooks();
    let policy = WaitPolicy { spin_ns: 0, yield_ns: 0, timeout_ns: 1_500_000_000 };
    let name = edu.name().clone();

    // --- device-written fence into mapped memory, awaited as a signal sleeping on the MSI
    c.check(
        "fence: device writes a signal, the wait sleeps on MSI",
        (|| {
            let m = Arc::new(edu.map(4096).map_err(err)?);
            let s = DmaSignal::mapped(m).map_err(err)?;
            let t = Instant::now();
            edu.start_fence(s.signal().addr(), 42).map_err(err)?;
            s.signal().wait(42, &policy, &hooks, &name).map_err(err)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            edu.wait_idle(Duration::from_secs(2)).map_err(err)?;
            Ok(format!("value 42 seen after {ms:.1} ms"))
        })(),
    );

    // --- negative: DMA aimed at an unmapped IOVA
    c.check(
        "IOMMU: DMA to an unmapped IOVA faults, times out, changes no other buffer",
        (|| {
            let a = edu.map(4096).map_err(err)?;
            let b = edu.map(4096).map_err(err)?;
            a.buffer().fill(0x11).map_err(err)?;
            b.buffer().fill(0x22).map_err(err)?;
            let victim = Arc::new(DmaBuffer::new(4096).map_err(err)?);
            // an IOVA that was mapped and is not any more (its guard dropped)
            let gone = edu.map(4096).map_err(err)?;
            let iova = gone.iova();
            drop(gone);
            let _ = dmar_faults(); // skip older log lines
            // fill the device buffer with a recognisable pattern, then write it to the dead IOVA
            a.buffer().fill(0x77).map_err(err)?;
            edu.dma(edu::Direction::ToDevice, edu::BUF_BASE, a.iova(), 4088).map_err(err)?;
            a.buffer().fill(0x11).map_err(err)?;
            edu.dma(edu::Direction::ToHost, edu::BUF_BASE, iova, 4088).map_err(err)?;
            let s = DmaSignal::unmapped(victim.clone(), iova + 4088).map_err(err)?;
            edu.start_fence(iova + 4088, 7).map_err(err)?;
            let r = s.signal().wait(7, &policy, &hooks, &name);
            edu.wait_idle(Duration::from_secs(2)).map_err(err)?;
            let e = match r {
                Err(e @ Error::Timeout { .. }) => e,
                other => return Err(format!("expected a timeout, got {other:?}")),
            };
            for (what, buf, byte) in [("A", a.buffer(), 0x11u8), ("B", b.buffer(), 0x22)] {
                let mut v = vec![0u8; buf.len()];
                buf.read_bytes(0, &mut v).map_err(err)?;
                if let Some(i) = v.iter().position(|&x| x != byte) {
                    return Err(format!("buffer {what} changed at {i}: {:#x}", v[i]));
                }
            }
            let mut v = vec![0u8; victim.len()];
            victim.read_bytes(0, &mut v).map_err(err)?;
            if v.iter().any(|&x| x != 0) {
                return Err("the unmapped host memory changed".into());
            }
            std::thread::sleep(Duration::from_millis(50));
            let faults = dmar_faults();
            if faults.is_empty() {
                return Err(format!("{e}, but no DMAR fault in the kernel log"));
            }
            Ok(format!("{e}; kernel: {}", faults[0]))
        })(),
    );

    // --- reset
    c.check(
        "device reset (VFIO_DEVICE_RESET) and the device works after it",
        (|| {
            if !edu.device().can_reset() {
                return Err("the device reports no reset method".into());
            }
            edu.reset().map_err(err)?;
            let live = edu.liveness(0x0f0f_0f0f).map_err(err)?;
            let buf = Buffer::new(dev.clone(), 256, DType::U8, BufferSpec::default()).map_err(err)?;
            let data = pattern(256, 9);
            buf.copy_in(&data).map_err(err)?;
            let mut back = vec![0u8; 256];
            buf.copy_out(&mut back).map_err(err)?;
            if live != !0x0f0f_0f0f || back != data {
                return Err(format!("after reset: liveness {live:#x}, copy ok {}", back == data));
            }
            Ok("liveness and a 256-byte round trip work after reset".into())
        })(),
    );

    // --- BAR access rules
    c.check(
        "BAR bulk access is word-sized only",
        match edu.bar().write_bytes(2, &[0; 4]) {
            Err(Error::Misaligned { .. }) => edu.bar().read(0, Width::U32).map(|v| format!("id {v:#x}")).map_err(err),
            other => Err(format!("{other:?}")),
        },
    );

    println!("VFIO_EDU_RESULT failed={} passed={} in {:.2} s", c.failed, c.passed, t0.elapsed().as_secs_f64());
    std::process::exit(c.failed as i32);
}
