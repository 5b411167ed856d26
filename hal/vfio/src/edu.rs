//! A driver for QEMU's `edu` device (PCI `1234:11e8`, QEMU `docs/specs/edu.rst`,
//! `hw/misc/edu.c`): our reference PCIe device.
//!
//! BAR0 (1 MiB) holds the registers below. Only 32-bit accesses are valid below 0x80, 32- or
//! 64-bit ones from 0x80 (edu.rst "MMIO area spec"); the register types below match that. The
//! DMA engine copies between host memory (an IOVA, masked to 28 bits by default: `dma_mask`)
//! and a 4 KiB buffer inside the device at device address 0x40000; each transfer completes
//! after a 100 ms (virtual clock) timer and can raise interrupt status bit 0x100.
//!
//! [`Edu`] is the register-level driver (identification, liveness, factorial, DMA, interrupts,
//! fences). [`EduHandle`] is the `EDU` device of an hcq registry: its memory is the device's
//! 4 KiB buffer and its copy queue is the DMA engine — a copy command on the queue becomes one
//! DMA transfer per chunk, and the transfer's completion interrupt lets the queue's command
//! processor signal the timeline. So `Buffer::copy_in`/`copy_out` on an `EDU` buffer stage
//! through a DMA-mapped host page and go through the real engine.
//!
//! QEMU aborts the guest on an edu DMA whose device-side range leaves the 4 KiB buffer in some
//! versions, and silently clamps host addresses above the DMA mask: both are refused here
//! before the engine is programmed.

use crate::dma::{DmaBuffer, DmaMapping, IovaSpace};
use crate::irq::{EventFd, IrqHooks};
use crate::sysfs::PciAddress;
use crate::vfio::{BarMapping, IrqKind, VfioDevice, VfioPaths};
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, LruAllocator};
use hcq::error::{DeviceName, Error, Result, ResultExt, device_name};
use hcq::memory::RangeAllocator;
use hcq::mmio::MmioBus;
use hcq::signal::{Signal, SignalPage, WaitPolicy};
use hcq::soft::threaded::{Executor, Regs, SoftConfig, SoftContext, SoftDevice};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// PCI vendor id of edu.
pub const VENDOR: u16 = 0x1234;
/// PCI device id of edu.
pub const DEVICE: u16 = 0x11e8;
/// Device address of the DMA buffer inside edu.
pub const BUF_BASE: u64 = 0x40000;
/// Size of the DMA buffer inside edu.
pub const BUF_SIZE: u64 = 4096;
/// The last 8 bytes of the device buffer are the fence slot ([`Edu::start_fence`]); buffers
/// handed out by [`EduHandle`] live below it.
pub const FENCE_SLOT: u64 = BUF_BASE + BUF_SIZE - 8;
/// Highest host address + 1 edu reaches with its default 28-bit `dma_mask`.
pub const DMA_LIMIT: u64 = 1 << 28;
/// The IOVA window the driver maps host memory into: 1 MiB up to the DMA limit.
pub const IOVA_BASE: u64 = 0x10_0000;
/// How long one DMA may take before it is reported as a timeout (the engine needs 100 ms of
/// virtual time; under TCG that can stretch).
// TIMEOUT: 20x the device's 100 ms DMA timer.
pub const DMA_TIMEOUT: Duration = Duration::from_secs(2);

hcq::register! {
    /// Identification (0x00, RO): `0xRRrr00ed`.
    pub ID @ 0x00 : u32 {
        /// Always 0x00ed.
        15:0 magic as u16;
        /// Minor version.
        23:16 minor as u8;
        /// Major version.
        31:24 major as u8;
    }
    /// Liveness check (0x04, RW): reads back the bitwise inverse of the last write.
    pub LIVENESS @ 0x04 : u32 {
        /// The value.
        31:0 value as u32;
    }
    /// Factorial (0x08, RW): write n, read n! once the status says done.
    pub FACTORIAL @ 0x08 : u32 {
        /// The operand / result (mod 2^32).
        31:0 value as u32;
    }
    /// Status (0x20, RW).
    pub STATUS @ 0x20 : u32 {
        /// A factorial is being computed (RO).
        0:0 computing as bool;
        /// Raise interrupt 0x1 when the factorial is done.
        7:7 irq_on_factorial as bool;
    }
    /// Interrupt status (0x24, RO): the raised interrupt bits.
    pub IRQ_STATUS @ 0x24 : u32 {
        /// A factorial finished.
        0:0 factorial as bool;
        /// A DMA finished.
        8:8 dma as bool;
    }
    /// Interrupt raise (0x60, WO): OR the value into the interrupt status and interrupt.
    pub IRQ_RAISE @ 0x60 : u32 {
        /// Bits to raise.
        31:0 bits as u32;
    }
    /// Interrupt acknowledge (0x64, WO): clear these bits of the interrupt status.
    pub IRQ_ACK @ 0x64 : u32 {
        /// Bits to clear.
        31:0 bits as u32;
    }
    /// DMA source address (0x80).
    pub DMA_SRC @ 0x80 : u64 {
        /// The address.
        63:0 addr as u64;
    }
    /// DMA destination address (0x88).
    pub DMA_DST @ 0x88 : u64 {
        /// The address.
        63:0 addr as u64;
    }
    /// DMA transfer count in bytes (0x90).
    pub DMA_COUNT @ 0x90 : u64 {
        /// Bytes.
        63:0 bytes as u64;
    }
    /// DMA command (0x98).
    pub DMA_CMD @ 0x98 : u64 {
        /// Start (reads 1 while the transfer runs).
        0:0 start as bool;
        /// Direction: 0 host→edu, 1 edu→host.
        1:1 to_host as bool;
        /// Raise interrupt 0x100 when done.
        2:2 irq as bool;
    }
}

/// Direction of an edu DMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Host memory (an IOVA) into the device buffer.
    ToDevice,
    /// The device buffer into host memory.
    ToHost,
}

/// The register-level edu driver over VFIO.
#[derive(Debug)]
pub struct Edu {
    dev: VfioDevice,
    bar: Arc<BarMapping>,
    irq: Arc<EventFd>,
    /// The interrupt in use (MSI, else INTx); changed only under the engine lock.
    irq_kind: Mutex<IrqKind>,
    iova: Arc<IovaSpace>,
    /// Serialises users of the DMA engine and of the interrupt status.
    engine: Mutex<()>,
    /// A page the fence value is staged in.
    fence_src: DmaMapping,
    name: DeviceName,
}

fn timeout_err(name: &DeviceName, what: u64, ms: u128) -> Error {
    Error::Timeout { device: name.clone(), awaited: what, last: 0, timeout_ms: ms as u64 }
}

impl Edu {
    /// Open the edu device at `addr` (bound to `vfio-pci`): check its ids, enable memory and bus
    /// mastering, map BAR0, check the identification register, route its interrupt (MSI, else
    /// INTx) to an eventfd.
    pub fn open(paths: &VfioPaths, addr: PciAddress) -> Result<Self> {
        let dev = VfioDevice::open(paths, addr)?;
        Self::from_device(dev)
    }

    /// Take over an already opened VFIO device (see [`Edu::open`]).
    pub fn from_device(dev: VfioDevice) -> Result<Self> {
        let name = device_name(&format!("EDU {}", dev.address()));
        {
            let cfg = dev.config()?;
            let (v, d) = (crate::config::VENDOR_ID::read(&cfg)?.id(), crate::config::DEVICE_ID::read(&cfg)?.id());
            if (v, d) != (VENDOR, DEVICE) {
                return Err(Error::Mismatch {
                    what: "edu PCI vendor:device",
                    expected: u64::from(VENDOR) << 16 | u64::from(DEVICE),
                    found: u64::from(v) << 16 | u64::from(d),
                });
            }
        }
        dev.enable_bus_master()?;
        let bar = dev.map_bar(0)?;
        let id = ID::read(&*bar)?;
        if id.magic() != 0x00ed {
            return Err(Error::Mismatch {
                what: "edu identification register",
                expected: 0xed,
                found: u64::from(id.raw()),
            })
            .with_context(|| dev.address().to_string());
        }
        let irq = Arc::new(EventFd::new()?);
        let irq_kind = if dev.irq_count(IrqKind::Msi)? > 0 { IrqKind::Msi } else { IrqKind::Intx };
        dev.enable_irq(irq_kind, &[irq.fd()])?;
        let iova = IovaSpace::new(IOVA_BASE, DMA_LIMIT - IOVA_BASE)?;
        let fence_src = DmaMapping::alloc(dev.container(), &iova, 8)?;
        Ok(Self { dev, bar, irq, irq_kind: Mutex::new(irq_kind), iova, engine: Mutex::new(()), fence_src, name })
    }

    /// The VFIO device.
    pub fn device(&self) -> &VfioDevice {
        &self.dev
    }

    /// BAR0.
    pub fn bar(&self) -> &Arc<BarMapping> {
        &self.bar
    }

    /// The device's name in errors (`EDU 0000:00:03.0`).
    pub fn name(&self) -> &DeviceName {
        &self.name
    }

    /// The interrupt eventfd.
    pub fn irq(&self) -> &Arc<EventFd> {
        &self.irq
    }

    /// Which interrupt is in use (MSI, or INTx when the device offers no MSI).
    pub fn irq_kind(&self) -> IrqKind {
        *self.irq_kind.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Switch the interrupt to `kind` (MSI or INTx; edu has no MSI-X): the old route is torn
    /// down, the eventfd stays the same.
    pub fn set_irq_kind(&self, kind: IrqKind) -> Result<()> {
        let _g = self.lock();
        let mut cur = self.irq_kind.lock().unwrap_or_else(|p| p.into_inner());
        self.dev.disable_irq(*cur)?;
        self.dev.enable_irq(kind, &[self.irq.fd()])?;
        *cur = kind;
        let _ = self.irq.take()?;
        Ok(())
    }

    /// Wait hooks that sleep on this device's interrupt (for [`Signal::wait`]).
    pub fn irq_hooks(&self) -> IrqHooks {
        IrqHooks::new(self.irq.clone(), Duration::from_millis(10))
    }

    /// The IOVA space host memory is mapped into.
    pub fn iova_space(&self) -> &Arc<IovaSpace> {
        &self.iova
    }

    /// Map `len` bytes of fresh host memory for this device's DMA.
    pub fn map(&self, len: usize) -> Result<DmaMapping> {
        DmaMapping::alloc(self.dev.container(), &self.iova, len)
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The identification register.
    pub fn identify(&self) -> Result<ID> {
        ID::read(&*self.bar)
    }

    /// Write `v` to the liveness register and read it back (the device returns `!v`).
    pub fn liveness(&self, v: u32) -> Result<u32> {
        LIVENESS::from_raw(v).write(&*self.bar)?;
        Ok(LIVENESS::read(&*self.bar)?.value())
    }

    /// Compute `n!` (mod 2^32) on the device, polling the status register.
    pub fn factorial(&self, n: u32, timeout: Duration) -> Result<u32> {
        let _g = self.lock();
        STATUS::default().write(&*self.bar)?;
        FACTORIAL::from_raw(n).write(&*self.bar)?;
        let t0 = Instant::now();
        while STATUS::read(&*self.bar)?.computing() {
            if t0.elapsed() > timeout {
                return Err(timeout_err(&self.name, u64::from(n), timeout.as_millis()));
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        Ok(FACTORIAL::read(&*self.bar)?.value())
    }

    /// Compute `n!` on the device and wait for its completion interrupt (no polling).
    pub fn factorial_irq(&self, n: u32, timeout: Duration) -> Result<u32> {
        let _g = self.lock();
        self.clear_irq()?;
        STATUS::default().set_irq_on_factorial(true).write(&*self.bar)?;
        FACTORIAL::from_raw(n).write(&*self.bar)?;
        let r = self.wait_irq(IRQ_STATUS::default().set_factorial(true), timeout);
        STATUS::default().write(&*self.bar)?;
        r?;
        Ok(FACTORIAL::read(&*self.bar)?.value())
    }

    /// Wait for an interrupt whose status has `want`'s bits, acknowledging every raised bit.
    fn wait_irq(&self, want: IRQ_STATUS, timeout: Duration) -> Result<()> {
        let t0 = Instant::now();
        loop {
            let st = self.ack_irq()?;
            if st.raw() & want.raw() != 0 {
                return Ok(());
            }
            let left = timeout.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Err(timeout_err(&self.name, u64::from(want.raw()), timeout.as_millis()));
            }
            self.irq.wait(left)?;
        }
    }

    /// Acknowledge every raised interrupt bit (and unmask INTx, which VFIO masks on each
    /// interrupt; unmasking an unmasked line is harmless); returns the status seen.
    fn ack_irq(&self) -> Result<IRQ_STATUS> {
        let st = IRQ_STATUS::read(&*self.bar)?;
        if st.raw() != 0 {
            IRQ_ACK::from_raw(st.raw()).write(&*self.bar)?;
        }
        if self.irq_kind() == IrqKind::Intx {
            self.dev.unmask_intx()?;
        }
        Ok(st)
    }

    /// Forget interrupts raised before the operation about to start (stale status bits and
    /// eventfd counts would otherwise complete its wait early).
    fn clear_irq(&self) -> Result<()> {
        self.ack_irq()?;
        self.irq.take().map(|_| ())
    }

    fn check_dma(&self, edu_addr: u64, iova: u64, len: u64) -> Result<()> {
        if len == 0 || edu_addr < BUF_BASE || edu_addr.checked_add(len).is_none_or(|e| e > BUF_BASE + BUF_SIZE) {
            return Err(Error::OutOfBounds {
                what: "edu DMA: device-side range outside the 4 KiB buffer at 0x40000",
                offset: edu_addr,
                len,
                limit: BUF_BASE + BUF_SIZE,
            });
        }
        if iova.checked_add(len).is_none_or(|e| e > DMA_LIMIT) {
            return Err(Error::InvalidArgument {
                what: "edu DMA: host address above the 28-bit DMA mask",
                value: iova,
            });
        }
        Ok(())
    }

    /// Program one transfer and start it (caller holds the engine lock).
    fn start(&self, dir: Direction, edu_addr: u64, iova: u64, len: u64) -> Result<()> {
        self.check_dma(edu_addr, iova, len)?;
        if DMA_CMD::read(&*self.bar)?.start() {
            return Err(Error::DeviceUnavailable { device: self.name.clone(), reason: "edu DMA engine busy" });
        }
        self.clear_irq()?;
        let (src, dst) = match dir {
            Direction::ToDevice => (iova, edu_addr),
            Direction::ToHost => (edu_addr, iova),
        };
        DMA_SRC::from_raw(src).write(&*self.bar)?;
        DMA_DST::from_raw(dst).write(&*self.bar)?;
        DMA_COUNT::from_raw(len).write(&*self.bar)?;
        // the doorbell: host memory the device reads must be visible before the start bit
        crate::barrier::device_write_barrier();
        DMA_CMD::default().set_start(true).set_to_host(dir == Direction::ToHost).set_irq(true).write(&*self.bar)
    }

    /// One DMA transfer of `len` bytes between the device buffer at device address `edu_addr`
    /// and host memory at `iova`, completed by its interrupt.
    ///
    /// Errors: [`Error::OutOfBounds`] for a device-side range outside the buffer,
    /// [`Error::InvalidArgument`] for a host address beyond the DMA mask, [`Error::Timeout`]
    /// when no completion interrupt comes within [`DMA_TIMEOUT`].
    pub fn dma(&self, dir: Direction, edu_addr: u64, iova: u64, len: u64) -> Result<()> {
        let _g = self.lock();
        self.start(dir, edu_addr, iova, len)?;
        self.wait_irq(IRQ_STATUS::default().set_dma(true), DMA_TIMEOUT)?;
        if DMA_CMD::read(&*self.bar)?.start() {
            return Err(Error::DeviceUnavailable {
                device: self.name.clone(),
                reason: "edu DMA interrupt before completion",
            });
        }
        Ok(())
    }

    /// Have the device write the 64-bit `value` to host memory at `iova` (a device-written
    /// fence, like a GPU's end-of-pipe write): the value is staged into the device's fence slot
    /// by one DMA, and a second DMA, started here and not awaited, writes it out. Whoever waits
    /// for the value (a [`Signal`] over that memory, sleeping on [`Edu::irq_hooks`]) learns
    /// that the device's writes to `iova` land. Call [`Edu::wait_idle`] before the next DMA.
    pub fn start_fence(&self, iova: u64, value: u64) -> Result<()> {
        self.fence_src.write(0, hcq::mmio::Width::U64, value)?;
        self.dma(Direction::ToDevice, FENCE_SLOT, self.fence_src.iova(), 8)?;
        let _g = self.lock();
        self.start(Direction::ToHost, FENCE_SLOT, iova, 8)
    }

    /// Wait until the DMA engine is idle (polls the start bit), then acknowledge interrupts.
    pub fn wait_idle(&self, timeout: Duration) -> Result<()> {
        let _g = self.lock();
        let t0 = Instant::now();
        while DMA_CMD::read(&*self.bar)?.start() {
            if t0.elapsed() > timeout {
                return Err(timeout_err(&self.name, 0, timeout.as_millis()));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.clear_irq()
    }

    /// Reset the device (`VFIO_DEVICE_RESET`) and bring it back up: bus mastering and the
    /// interrupt route are set again.
    pub fn reset(&self) -> Result<()> {
        let _g = self.lock();
        self.dev.reset()?;
        self.dev.enable_bus_master()?;
        let kind = self.irq_kind();
        self.dev.disable_irq(kind)?;
        self.dev.enable_irq(kind, &[self.irq.fd()])?;
        let _ = self.irq.take()?;
        Ok(())
    }
}

/// A signal in DMA-mapped host memory that a device writes (for fences).
pub struct DmaSignal {
    signal: Signal,
    mapping: Option<Arc<DmaMapping>>,
    _buf: Option<Arc<DmaBuffer>>,
}

impl std::fmt::Debug for DmaSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaSignal").field("signal", &self.signal).finish()
    }
}

impl DmaSignal {
    /// A signal over the first 16 bytes of `mapping` (device address: the mapping's IOVA).
    pub fn mapped(mapping: Arc<DmaMapping>) -> Result<Self> {
        let base = mapping.buffer().addr();
        let iova = mapping.iova();
        let signal = Self::signal_at(base, iova, Box::new(mapping.clone()))?;
        Ok(Self { signal, mapping: Some(mapping), _buf: None })
    }

    /// A signal over host memory the IOMMU does **not** map, that the device is told lives at
    /// `claimed_iova`: a device write there faults in the IOMMU and never lands (the negative
    /// test's victim).
    pub fn unmapped(buf: Arc<DmaBuffer>, claimed_iova: u64) -> Result<Self> {
        let signal = Self::signal_at(buf.addr(), claimed_iova, Box::new(buf.clone()))?;
        Ok(Self { signal, mapping: None, _buf: Some(buf) })
    }

    fn signal_at(base: usize, device_addr: u64, owner: Box<dyn std::any::Any + Send + Sync>) -> Result<Signal> {
        let ptr = std::ptr::NonNull::new(base as *mut hcq::signal::Slot)
            .ok_or(Error::InvalidArgument { what: "DMA signal at null", value: 0 })?;
        // SAFETY: `base` is the start of a page-aligned DmaBuffer of at least one page (16-byte
        // aligned, 16 bytes valid, zeroed) that `owner` (its Arc, or its mapping's) keeps alive
        // as long as the page, which owns it, lives (every Signal clone holds the page); the
        // host touches it only through the signal's atomics.
        let page = unsafe { SignalPage::from_raw_owning(ptr, 1, device_addr, owner) };
        Signal::new(Arc::new(page), 0)
    }

    /// The signal.
    pub fn signal(&self) -> &Signal {
        &self.signal
    }

    /// The mapping behind it, when it is mapped.
    pub fn mapping(&self) -> Option<&Arc<DmaMapping>> {
        self.mapping.as_ref()
    }
}

/// The copy engine of the `EDU` device: copy commands from the queue become DMA transfers.
struct EduExec {
    edu: Arc<Edu>,
}

impl Executor for EduExec {
    fn exec(&self, _: &SoftContext, program: u64, _: u64, _: [u32; 3], _: [u32; 3]) -> Result<()> {
        Err(Error::Unsupported { what: "programs on the EDU device (it has a copy engine only)", value: program })
    }

    fn copy(&self, _: &SoftContext, dst: u64, src: u64, bytes: u64) -> Result<()> {
        let in_dev = |a: u64| (BUF_BASE..BUF_BASE + BUF_SIZE).contains(&a);
        let (dir, edu_addr, iova) = match (in_dev(dst), in_dev(src)) {
            (true, false) => (Direction::ToDevice, dst, src),
            (false, true) => (Direction::ToHost, src, dst),
            _ => {
                return Err(Error::Unsupported {
                    what: "EDU copy: exactly one side must be device memory (0x40000..0x41000)",
                    value: dst,
                });
            }
        };
        self.edu.dma(dir, edu_addr, iova, bytes)
    }
}

struct EduInner {
    edu: Arc<Edu>,
    soft: SoftDevice,
    /// Host staging page for copy_in/copy_out, with the lock that serialises its users.
    staging: Mutex<DmaMapping>,
    name: String,
}

impl EduInner {
    /// Copy `bytes` between device address `dev_addr` and the staging page through the queue.
    fn queue_copy(&self, dir: Direction, dev_addr: u64, staging_iova: u64, bytes: u64) -> Result<()> {
        let hcq = self.soft.engine();
        let mut q = hcq.queue()?;
        match dir {
            Direction::ToDevice => q.copy(dev_addr, staging_iova, bytes)?,
            Direction::ToHost => q.copy(staging_iova, dev_addr, bytes)?,
        };
        // SAFETY: the copy moves `bytes` between the card's own buffer (a range the caller checked
        // against an allocation) and the staging page, a DMA mapping this device owns for its
        // whole life; the IOMMU confines the card's DMA to mapped pages, so no host memory but
        // the staging page is touched.
        let v = unsafe { hcq.submit(0, &mut q)? };
        hcq.wait(v)
    }
}

/// Device memory of `EDU`: ranges of the 4 KiB device buffer (below the fence slot).
struct EduAllocator {
    inner: std::sync::Weak<EduInner>,
    heap: Mutex<RangeAllocator>,
}

impl EduAllocator {
    fn inner(&self) -> Result<Arc<EduInner>> {
        self.inner.upgrade().ok_or(Error::DeviceUnavailable { device: device_name("EDU"), reason: "device closed" })
    }

    fn copy(&self, dir: Direction, mem: &DeviceMemory, offset: u64, host: HostSide<'_>) -> Result<()> {
        let len = host.len() as u64;
        mem.check_range("EDU copy", offset, len)?;
        let inner = self.inner()?;
        let staging = inner.staging.lock().unwrap_or_else(|p| p.into_inner());
        let chunk = staging.len() as u64;
        let mut done = 0u64;
        let mut host = host;
        while done < len {
            let n = (len - done).min(chunk);
            // CAST: `done + n <= len`, a host slice length.
            let (a, b) = (done as usize, (done + n) as usize);
            let dev = mem.addr() + offset + done;
            match (&mut host, dir) {
                (HostSide::In(src), Direction::ToDevice) => {
                    staging.write_bytes(0, &src[a..b])?;
                    inner.queue_copy(dir, dev, staging.iova(), n)?;
                }
                (HostSide::Out(dst), Direction::ToHost) => {
                    inner.queue_copy(dir, dev, staging.iova(), n)?;
                    staging.read_bytes(0, &mut dst[a..b])?;
                }
                _ => return Err(Error::InvalidArgument { what: "EDU copy direction", value: 0 }),
            }
            done += n;
        }
        Ok(())
    }
}

enum HostSide<'a> {
    In(&'a [u8]),
    Out(&'a mut [u8]),
}

impl HostSide<'_> {
    fn len(&self) -> usize {
        match self {
            HostSide::In(s) => s.len(),
            HostSide::Out(s) => s.len(),
        }
    }
}

impl Allocator for EduAllocator {
    fn alloc(&self, size: u64, spec: &BufferSpec) -> Result<DeviceMemory> {
        if size == 0 {
            return Err(Error::InvalidArgument { what: "allocation size must be non-zero", value: 0 });
        }
        if spec.external.is_some() || spec.cpu_access || spec.host {
            return Err(Error::Unsupported {
                what: "EDU memory: external, host or CPU-accessible buffers",
                value: size,
            });
        }
        let addr = self.heap.lock().unwrap_or_else(|p| p.into_inner()).alloc(size, 8)?;
        // SAFETY: `[addr, addr + size)` is a range of the device buffer just reserved in the heap;
        // only `free` gives it back. There is no CPU mapping.
        let mem = unsafe { DeviceMemory::from_raw_parts(addr, size, None) };
        if spec.zero {
            let zeros = vec![0u8; size as usize];
            if let Err(e) = self.copy(Direction::ToDevice, &mem, 0, HostSide::In(&zeros)) {
                self.free(mem, spec);
                return Err(e);
            }
        }
        Ok(mem)
    }

    fn free(&self, mem: DeviceMemory, _spec: &BufferSpec) {
        if let Err(e) = self.heap.lock().unwrap_or_else(|p| p.into_inner()).free(mem.addr()) {
            log::warn!("EDU: free of {:#x}: {e}", mem.addr());
        }
    }

    fn copy_in(&self, dst: &DeviceMemory, offset: u64, src: &[u8]) -> Result<()> {
        self.copy(Direction::ToDevice, dst, offset, HostSide::In(src))
    }

    fn copy_out(&self, dst: &mut [u8], src: &DeviceMemory, offset: u64) -> Result<()> {
        self.copy(Direction::ToHost, src, offset, HostSide::Out(dst))
    }
}

/// The `EDU` device at the engine's level (buffers, copies); [`EduKind`] is its registry entry.
pub struct EduHandle {
    inner: Arc<EduInner>,
    alloc: LruAllocator,
}

impl std::fmt::Debug for EduHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EduHandle").field("name", &self.inner.name).finish()
    }
}

impl EduHandle {
    /// Wrap an opened [`Edu`] as the hcq device `name`: a soft command processor thread drives
    /// its DMA engine as the copy queue.
    pub fn new(name: &str, edu: Edu) -> Result<Self> {
        let edu = Arc::new(edu);
        let config = SoftConfig {
            engines: vec!["copy"],
            ring_bytes: 64 << 10,
            kernarg_bytes: 4096,
            max_in_flight: 64,
            idle_spin: Duration::from_micros(200),
        };
        let soft = SoftDevice::new(name, &config, Arc::new(Regs::new(2)), Arc::new(EduExec { edu: edu.clone() }))?;
        // TIMEOUT: each command is one DMA (100 ms of device time); a stalled engine is reported
        // after 10 s without progress.
        soft.engine().timeline().set_policy(WaitPolicy::with_timeout_ms(10_000));
        let staging = Mutex::new(edu.map(4096)?);
        let inner = Arc::new(EduInner { edu, soft, staging, name: name.to_string() });
        let heap = Mutex::new(RangeAllocator::new(BUF_BASE, FENCE_SLOT - BUF_BASE));
        let alloc = LruAllocator::new(name, Box::new(EduAllocator { inner: Arc::downgrade(&inner), heap }));
        Ok(Self { inner, alloc })
    }

    /// The register-level driver.
    pub fn edu(&self) -> &Arc<Edu> {
        &self.inner.edu
    }
}

impl hcq::device::Device for EduHandle {
    fn name(&self) -> &str {
        &self.inner.name
    }
    fn allocator(&self) -> &LruAllocator {
        &self.alloc
    }
    fn synchronize(&self) -> Result<()> {
        self.inner.soft.engine().synchronize()
    }
    fn properties(&self) -> hcq::device::DeviceProperties {
        hcq::device::DeviceProperties {
            kind: "edu".into(),
            arch: "qemu-edu".into(),
            cores: 1,
            memory_bytes: FENCE_SLOT - BUF_BASE,
            timestamp_hz: 1_000_000_000,
            notes: format!("VFIO {} ({:?} interrupts)", self.inner.edu.device().address(), self.inner.edu.irq_kind()),
        }
    }
    fn limits(&self) -> hcq::device::DeviceLimits {
        // edu has 4 KiB of device memory below the fence slot and runs no programs
        hcq::device::DeviceLimits {
            memory_bytes: FENCE_SLOT - BUF_BASE,
            max_alloc_bytes: FENCE_SLOT - BUF_BASE,
            alloc_align: 8,
            max_kernel_args: 0,
            max_grid: [0, 0, 0],
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn engine(&self) -> Option<&hcq::engine::Engine> {
        Some(self.inner.soft.engine())
    }
}

/// The edu devices bound to `vfio-pci`, sorted by address.
pub fn find(paths: &VfioPaths) -> Result<Vec<PciAddress>> {
    Ok(paths.sysfs.find(VENDOR, DEVICE)?.into_iter().filter(|d| d.is_vfio_bound()).map(|d| d.address).collect())
}

/// Open edu device `i` (address order) as `name`.
fn open_index(name: &str, i: u32) -> Result<EduHandle> {
    let paths = VfioPaths::default();
    let addr = *find(&paths)?
        .get(i as usize)
        .ok_or(Error::DeviceUnavailable { device: device_name(name), reason: "no edu device at this index" })?;
    EduHandle::new(name, Edu::open(&paths, addr)?)
}

/// `EDU` as a device kind of the plug-in point (`hcq_runner::plug`): every edu device bound to
/// `vfio-pci`, in address order (`EDU`, `EDU:1`, ...). It opens and describes itself; loading a
/// bundle on it is refused, naming it (a copy engine runs no kernels).
#[derive(Clone, Copy, Debug, Default)]
pub struct EduKind;

impl hcq_runner::plug::DeviceKind for EduKind {
    fn names(&self) -> &[&'static str] {
        &["EDU"]
    }
    fn indexed(&self) -> u32 {
        find(&VfioPaths::default()).map_or(1, |v| u32::try_from(v.len()).unwrap_or(u32::MAX).max(1))
    }
    fn probe(&self, name: &str) -> Result<hcq::device::DeviceProperties> {
        use hcq::device::Device;
        Ok(open_index(name, 0)?.properties())
    }
    fn open(&self, name: &str, opts: &hcq_runner::plug::Options) -> Result<Box<dyn hcq_runner::plug::OpenDevice>> {
        opts.refuse_unsupported(name, false, false)?;
        let i = name.split_once(':').and_then(|(_, i)| i.parse().ok()).unwrap_or(0);
        Ok(Box::new(EduOpen(Arc::new(open_index(name, i)?))))
    }
}

/// An opened edu device ([`EduKind`]); [`EduOpen::handle`] is the device for buffers and copies.
pub struct EduOpen(Arc<EduHandle>);

impl EduOpen {
    /// The device.
    pub fn handle(&self) -> &Arc<EduHandle> {
        &self.0
    }
}

impl hcq_runner::plug::OpenDevice for EduOpen {
    fn name(&self) -> &str {
        &self.0.inner.name
    }
    fn description(&self) -> String {
        use hcq::device::Device;
        format!("{} ({})", self.0.inner.name, self.0.properties().notes)
    }
    fn load(&self, _bundle: &hcq_bundle::hcqb::Hcqb<'_>) -> Result<Box<dyn hcq_runner::plug::LoadedModel>> {
        Err(Error::Unsupported { what: "bundle kernels on EDU (a copy engine only, no programs)", value: 0 })
    }
}
