//! The opened device: KFD's version, the GPU's topology node, its virtual memory and the
//! memory-exception event (tinygrad 0.14's `KFDIface.__init__` order).

use crate::memory::GpuBuf;
use hcq::device::{DeviceLimits, DeviceProperties};
use hcq::{Error, Result};
use hcq_amd::kfd::uapi::{
    AcquireVmArgs, AllocFlags, CreateEventArgs, EVENT_HW_EXCEPTION, EVENT_MEMORY, EventData,
    HW_EXCEPTION_PER_ENGINE_RESET, RUNTIME_ENABLE_MODE_ENABLE_MASK, RuntimeEnableArgs, WAIT_RESULT_COMPLETE,
    WaitEventsArgs,
};
use hcq_amd::kfd::{GpuNode, Kfd, RUNTIME_ENABLE_VERSION, Topology};
use std::sync::Arc;

/// Default time a call waits for its submission without progress.
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;
/// Largest single allocation this backend makes (the RX 7900 XTX has 24 GiB of VRAM).
pub const MAX_ALLOC_BYTES: u64 = 1 << 34;
/// `gfx_target_version` of the one target this driver runs: gfx1100.
pub const GFX1100: u32 = 110_000;

/// An opened AMD device (see the crate docs).
pub struct AmdDevice {
    pub(crate) name: String,
    pub(crate) kfd: Arc<dyn Kfd>,
    pub(crate) node: GpuNode,
    pub(crate) version: (u32, u32),
    /// The memory-exception event (auto-reset off: it stays set once the GPU faulted).
    pub(crate) fault_event: u32,
    /// The hardware-exception event (a queue or GPU reset: a hang), as tinygrad's
    /// `hw_fault_event` (auto-reset off).
    pub(crate) hw_event: u32,
    pub(crate) timeout_ms: u32,
    /// The process that opened it: KFD serves no other (`kfd_ioctl` refuses another process
    /// with `EBADF`; its doorbell mappings are not inherited by a forked child).
    pid: u32,
}

/// Why an AMD device cannot run work in a forked child.
pub const FORKED_REASON: &str = "opened before fork(): KFD serves only the process that opened it (a \
forked child inherits neither its queues nor its doorbell mappings; open the device, or load the model, in the child)";

impl core::fmt::Debug for AmdDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AmdDevice").field("name", &self.name).field("gpu_id", &self.node.gpu_id).finish_non_exhaustive()
    }
}

impl AmdDevice {
    /// Open the first gfx1100 of `kfd`'s topology as device `name`.
    ///
    /// Errors: KFD's own (naming the ioctl and errno); no GPU node, or one of another target
    /// ([`Error::Unsupported`] with its `gfx_target_version`).
    pub fn open(name: &str, kfd: Arc<dyn Kfd>) -> Result<Arc<AmdDevice>> {
        let v = kfd.get_version()?;
        let version = (v.major_version, v.minor_version);
        let topo = Topology::read(&*kfd)?;
        let node = topo.gpus.first().cloned().ok_or(Error::DeviceUnavailable {
            device: hcq::error::device_name(name),
            reason: "the KFD topology has no GPU node",
        })?;
        if node.gfx_target_version != GFX1100 {
            return Err(Error::Unsupported {
                what: "AMD GPU target (gfx_target_version; this driver runs gfx1100, 110000)",
                value: u64::from(node.gfx_target_version),
            });
        }
        kfd.open_render(node.drm_render_minor)?;
        kfd.acquire_vm(&mut AcquireVmArgs { gpu_id: node.gpu_id, ..Default::default() })?;
        if version >= RUNTIME_ENABLE_VERSION {
            let mut r = RuntimeEnableArgs { mode_mask: RUNTIME_ENABLE_MODE_ENABLE_MASK, ..Default::default() };
            kfd.runtime_enable(&mut r)?;
        }
        let mut ev =
            CreateEventArgs { event_type: EVENT_MEMORY, auto_reset: 0, node_id: node.node, ..Default::default() };
        kfd.create_event(&mut ev)?;
        let mut hw =
            CreateEventArgs { event_type: EVENT_HW_EXCEPTION, auto_reset: 0, node_id: node.node, ..Default::default() };
        if let Err(e) = kfd.create_event(&mut hw) {
            let _ = kfd
                .destroy_event(&hcq_amd::kfd::uapi::DestroyEventArgs { event_id: ev.event_id, ..Default::default() });
            return Err(e);
        }
        Ok(Arc::new(AmdDevice {
            name: name.to_string(),
            kfd,
            node,
            version,
            fault_event: ev.event_id,
            hw_event: hw.event_id,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            pid: std::process::id(),
        }))
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its topology node.
    pub fn node(&self) -> &GpuNode {
        &self.node
    }

    /// The kernel interface.
    pub fn kfd(&self) -> &Arc<dyn Kfd> {
        &self.kfd
    }

    /// Whether this is a forked child of the process that opened the device.
    pub fn in_forked_child(&self) -> bool {
        std::process::id() != self.pid
    }

    /// Refuse work in a forked child ([`Error::DeviceUnavailable`], [`FORKED_REASON`]) at once,
    /// instead of ringing a doorbell no one serves and waiting for the timeout.
    pub fn check_process(&self) -> Result<()> {
        if self.in_forked_child() {
            return Err(Error::DeviceUnavailable {
                device: hcq::error::device_name(&self.name),
                reason: FORKED_REASON,
            });
        }
        Ok(())
    }

    /// A buffer object: device memory, CPU-visible (tinygrad's default buffers) or, with
    /// `uncached`, coherent uncached GTT (rings, signals).
    pub fn alloc(&self, size: u64, uncached: bool) -> Result<GpuBuf> {
        if size > MAX_ALLOC_BYTES {
            return Err(Error::LimitExceeded { what: "AMD allocation bytes", value: size, limit: MAX_ALLOC_BYTES });
        }
        GpuBuf::alloc(&self.kfd, self.node.gpu_id, size, AllocFlags::tinygrad(false, uncached, true))
    }

    /// The memory or hardware exception KFD reported, if the GPU faulted or a queue hung (a
    /// `WAIT_EVENTS` on both events that does not wait; tinygrad's `_wait_signal` reads the
    /// same two after a timeout).
    pub fn fault(&self) -> Option<Error> {
        let mut data = [EventData::for_event(self.fault_event), EventData::for_event(self.hw_event)];
        let mut w = WaitEventsArgs { num_events: 2, wait_for_all: 0, timeout: 0, ..Default::default() };
        match self.kfd.wait_events(&mut w, &mut data) {
            Ok(()) if w.wait_result == WAIT_RESULT_COMPLETE => {
                let hung = || Error::DeviceHung { device: hcq::error::device_name(&self.name) };
                let (m, h) = (data[0].memory_exception(), data[1].hw_exception());
                // KFD fills only the entries of the events that fired (the others stay zero).
                if m.gpu_id != 0 {
                    let access = if m.failure.read_only != 0 {
                        "write to a read-only page"
                    } else if m.failure.no_execute != 0 {
                        "execute of a no-execute page"
                    } else {
                        "page not present"
                    };
                    Some(hung().context(format!(
                        "{}: GPU memory exception at {:#x} ({access}; gpu {:#x}, KFD memory-exception event {:#x})",
                        self.name, m.va, m.gpu_id, self.fault_event
                    )))
                } else {
                    let reset =
                        if h.reset_type == HW_EXCEPTION_PER_ENGINE_RESET { "a queue reset" } else { "a GPU reset" };
                    let cause = if h.reset_cause == hcq_amd::kfd::uapi::HW_EXCEPTION_ECC { "ECC" } else { "hang" };
                    Some(hung().context(format!(
                        "{}: GPU hardware exception: {reset} after a {cause} (gpu {:#x}, memory lost: {}, KFD \
                         hardware-exception event {:#x})",
                        self.name,
                        h.gpu_id,
                        h.memory_lost != 0,
                        self.hw_event
                    )))
                }
            }
            Ok(()) => None,
            Err(e) => Some(e),
        }
    }

    /// What `hcq devices` prints.
    pub fn properties(&self) -> DeviceProperties {
        DeviceProperties {
            kind: "amd".into(),
            arch: "gfx1100".into(),
            cores: self.node.scratch_device().map_or(0, |d| d.cu_count),
            memory_bytes: MAX_ALLOC_BYTES,
            // tinygrad: AMDSignal timestamp_divider 100 (a 100 MHz counter)
            timestamp_hz: 100_000_000,
            notes: format!(
                "KFD {}.{}, gpu_id {}, node {}, render node {}",
                self.version.0,
                self.version.1,
                self.node.gpu_id,
                self.node.node,
                self.node.render_node()
            ),
        }
    }

    /// What a bundle may ask of the device.
    pub fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            memory_bytes: MAX_ALLOC_BYTES,
            max_alloc_bytes: MAX_ALLOC_BYTES,
            alloc_align: 4096,
            // tinygrad's AMD kernels take 64-bit buffer addresses and 32-bit values in a
            // kernarg segment of at most 64 KiB (checked per kernel against its descriptor)
            max_kernel_args: 1024,
            // COMPUTE_DIM_X/Y/Z: DISPATCH_DIRECT's 32-bit work-group counts
            max_grid: [u32::MAX; 3],
        }
    }
}

impl Drop for AmdDevice {
    fn drop(&mut self) {
        if self.in_forked_child() {
            // The parent's KFD is not this process's to tear down (its calls would be refused,
            // a simulated one's threads are not here to stop): leave it as the fork left it.
            core::mem::forget(self.kfd.clone());
            return;
        }
        for (id, what) in [(self.fault_event, "memory"), (self.hw_event, "hardware")] {
            let d = hcq_amd::kfd::uapi::DestroyEventArgs { event_id: id, ..Default::default() };
            if let Err(e) = self.kfd.destroy_event(&d) {
                log::warn!("AMD: destroying the {what}-exception event: {e}");
            }
        }
    }
}
