//! hcq's AMD RDNA3 (gfx1100) driver pieces, `no_std` + `alloc`.
//!
//! - [`codeobj`]: HSA code objects (what LLVM's AMDGPU backend writes for tinygrad's `AMD_LLVM=1`
//!   renderer) laid out as tinygrad's runtime lays them out, relocated, and every kernel
//!   descriptor checked before anything is allocated.
//! - [`listing`]: a code object's `.text` as `llvm-objdump -d --mcpu=gfx1100` prints it, over
//!   `hcq-rdna3`'s disassembler.
//! - [`regs`]: the gfx11 (GC 11.0.0) registers the compute queue writes.
//! - [`pm4`]: PM4 packets of the MEC compute queue and [`pm4::Pm4Encoder`], as tinygrad 0.14's
//!   `AMDComputeQueue` emits them.
//! - [`sdma`]: SDMA 6.0 packets and [`sdma::SdmaEncoder`], as tinygrad's `AMDCopyQueue`.
//! - [`kfd`]: KFD's uapi, the [`kfd::Kfd`] trait over its ioctls, maps and sysfs topology (the
//!   real `/dev/kfd` with feature `std`).
//!
//! The simulated GPU (`sim/amd`) comes next.
#![no_std]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod codeobj;
pub mod kfd;
pub mod launch;
pub mod listing;
pub mod pm4;
pub mod regs;
pub mod sdma;
