//! The registry entries: `AMD` and `KFD+AMD` over the real `/dev/kfd` (the simulated
//! `AMD:SIM` / `KFD+AMD:SIM` kinds live in `hcq-sim-amd`, with the same [`AmdKind`] over its
//! simulated KFD).

use crate::backend::AmdBackend;
use crate::device::AmdDevice;
use hcq::Result;
use hcq::device::DeviceProperties;
use hcq_amd::kfd::Kfd;
use hcq_bundle::hcqb::Hcqb;
use hcq_runner::Runner;
use hcq_runner::plug::{Capabilities, DeviceKind, LoadedModel, OpenDevice, Options};
use std::sync::Arc;

/// Opens the kernel interface a kind runs over.
pub type KfdOpener = fn() -> Result<Arc<dyn Kfd>>;

fn linux_kfd() -> Result<Arc<dyn Kfd>> {
    Ok(Arc::new(hcq_amd::kfd::LinuxKfd::open()?))
}

/// A device kind of the AMD family: its names and how it opens its KFD.
#[derive(Clone, Copy, Debug)]
pub struct AmdKind {
    /// The names (tinygrad's syntax).
    pub names: &'static [&'static str],
    /// The kernel interface.
    pub open_kfd: KfdOpener,
}

impl AmdKind {
    /// `AMD` and `KFD+AMD`: the amdgpu driver's `/dev/kfd`.
    pub const fn kfd() -> AmdKind {
        AmdKind { names: &["AMD", "KFD+AMD"], open_kfd: linux_kfd }
    }
}

impl DeviceKind for AmdKind {
    fn names(&self) -> &[&'static str] {
        self.names
    }
    fn probe(&self, name: &str) -> Result<DeviceProperties> {
        Ok(AmdDevice::open(name, (self.open_kfd)()?)?.properties())
    }
    fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
        opts.refuse_unsupported(name, false, true)?;
        let dev = AmdDevice::open(name, (self.open_kfd)()?)?;
        Ok(Box::new(AmdOpen {
            dev,
            timeout_ms: opts.timeout.map(|t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
            profile: opts.profile,
        }))
    }
}

/// An opened AMD device.
pub struct AmdOpen {
    dev: Arc<AmdDevice>,
    timeout_ms: Option<u32>,
    /// `Options::profile`: every launch timestamped, the engine's profiler on.
    profile: bool,
}

impl OpenDevice for AmdOpen {
    fn name(&self) -> &str {
        self.dev.name()
    }
    fn description(&self) -> String {
        format!("{} (gfx1100 over KFD, gpu_id {})", self.dev.name(), self.dev.node().gpu_id)
    }
    fn load(&self, bundle: &Hcqb<'_>) -> Result<Box<dyn LoadedModel>> {
        let mut b = AmdBackend::new(self.dev.clone());
        b.set_profile(self.profile)?;
        if let Some(ms) = self.timeout_ms {
            b.set_timeout_ms(ms);
        }
        let r = Runner::load(b, bundle)?;
        if let Some(h) = r.backend().engine() {
            h.profiler().set_enabled(self.profile);
        }
        Ok(Box::new(r))
    }
}
