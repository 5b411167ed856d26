//! The registry entry of the simulated AMD device: `AMD:SIM` and `KFD+AMD:SIM` (tinygrad's
//! syntax) are hcq-kfd's [`AmdKind`], the same driver code as `AMD` over the real `/dev/kfd`,
//! over a [`SimKfd`] in process (a fresh simulated gfx1100, its CP thread polling the doorbells,
//! per opened device).

use crate::gpu::GpuConfig;
use crate::kfd::SimKfd;
use hcq::Result;
use hcq_amd::kfd::Kfd;
use hcq_kfd::AmdKind;
use std::sync::Arc;

/// The names the simulated device opens under.
pub const NAMES: &[&str] = &["AMD:SIM", "KFD+AMD:SIM"];

/// A new simulated KFD over a new simulated gfx1100 (default [`GpuConfig`]).
pub fn open_kfd() -> Result<Arc<dyn Kfd>> {
    Ok(Arc::new(SimKfd::new(GpuConfig::default())))
}

/// `AMD:SIM`, `KFD+AMD:SIM`: the AMD device over [`open_kfd`]'s simulated KFD.
pub const fn kind() -> AmdKind {
    AmdKind { names: NAMES, open_kfd }
}
