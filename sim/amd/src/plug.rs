//! The registry entries of the simulated AMD device: `AMD:SIM` and `KFD+AMD:SIM` (tinygrad's
//! syntax; listed one a line by `hcq devices`, as the simulated QCOM's interfaces are) are
//! hcq-kfd's [`AmdKind`], the same driver code as `AMD` over the real `/dev/kfd`, over a
//! [`SimKfd`] in process (a fresh simulated gfx1100, its CP thread polling the doorbells, per
//! opened device). KFD is the one interface the simulated GPU has, so both names open the same
//! thing.

use crate::gpu::GpuConfig;
use crate::kfd::SimKfd;
use hcq::Result;
use hcq_amd::kfd::Kfd;
use hcq_kfd::AmdKind;
use std::sync::Arc;

/// A new simulated KFD over a new simulated gfx1100 (default [`GpuConfig`]).
pub fn open_kfd() -> Result<Arc<dyn Kfd>> {
    Ok(Arc::new(SimKfd::new(GpuConfig::default())))
}

/// `AMD:SIM` and `KFD+AMD:SIM`: the AMD device over [`open_kfd`]'s simulated KFD, one kind
/// per name, in the order `hcq devices` lists them.
pub const fn kinds() -> [AmdKind; 2] {
    [AmdKind { names: &["AMD:SIM"], open_kfd }, AmdKind { names: &["KFD+AMD:SIM"], open_kfd }]
}
