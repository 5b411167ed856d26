//! What the simulated Adreno states about itself to the QCOM device, through both of its kernel
//! interfaces ([`SimKgsl`](crate::SimKgsl) and [`SimMsm`](crate::SimMsm)): its limits (the
//! chip's, with a work-group budget per dispatch) and the shader instructions its ir3
//! interpreter does not run. The device refuses a bundle past either at load, before anything
//! is allocated or submitted.

use hcq_adreno::limits::GpuLimits;
use hcq_ir3::isa::Instr;

/// Work-groups one dispatch may have on the simulated GPU: the ir3 interpreter runs each in
/// turn, so the simulator states a budget (2^16, 128× the largest dispatch of the sample
/// bundles) where the a630 has only its per-dimension grid.
pub const SIM_MAX_GROUPS: u64 = 1 << 16;

/// The simulator's limits for a chip whose own are `chip`: those, with at most
/// [`SIM_MAX_GROUPS`] work-groups per dispatch.
pub fn gpu_limits(chip: GpuLimits) -> GpuLimits {
    GpuLimits { max_total_groups: chip.max_total_groups.min(SIM_MAX_GROUPS), ..chip }
}

/// Why the ir3 interpreter does not run `ins`, if it does not
/// ([`hcq_ir3::exec::refused`]: encodings it knows by name only, and the decoded forms it does
/// not model).
pub fn unsupported_instruction(ins: &Instr) -> Option<&'static str> {
    hcq_ir3::exec::refused(ins)
}
