//! # hcq-ir3: the Adreno 630 (a6xx) ir3 shader ISA on any host
//!
//! - [`decode`]: 64-bit instruction words → [`isa::Instr`] (cat0–cat4, cat6, cat7; cat5 and the
//!   bindless cat6 forms are named and refused), from Mesa's isaspec XML.
//! - [`disasm`]: [`isa::Instr`] → Mesa's text syntax and `NNNN [hi32_lo32] text` listings.
//! - [`exec`]: a compute-dispatch interpreter: work-groups of 64-fiber waves, wave-wide ALU,
//!   divergence and reconvergence, barriers, shared/private memory and global memory through a
//!   caller-supplied bounds-checked [`exec::Memory`].
//!
//! `no_std` + `alloc`.
#![no_std]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod decode;
pub mod disasm;
pub mod exec;
pub mod fp;
pub mod isa;

pub use decode::{DecodeError, ImageError, decode, decode_image, decode_words};
pub use disasm::{disasm, listing};
pub use isa::Instr;
