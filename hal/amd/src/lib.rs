//! hcq's AMD RDNA3 (gfx1100) driver pieces, `no_std` + `alloc`.
//!
//! - [`codeobj`]: HSA code objects (what LLVM's AMDGPU backend writes for tinygrad's `AMD_LLVM=1`
//!   renderer) laid out as tinygrad's runtime lays them out, relocated, and every kernel
//!   descriptor checked before anything is allocated.
//! - [`listing`]: a code object's `.text` as `llvm-objdump -d --mcpu=gfx1100` prints it, over
//!   `hcq-rdna3`'s disassembler.
//!
//! The queues (PM4 compute, SDMA), KFD's kernel interface and the simulated GPU come next.
#![no_std]

extern crate alloc;

pub mod codeobj;
pub mod launch;
pub mod listing;
