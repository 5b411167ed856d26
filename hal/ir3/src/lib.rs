//! # hcq-ir3: the Adreno 630 (a6xx) ir3 shader ISA on any host
//!
//! - [`mod@decode`]: 64-bit instruction words → [`isa::Instr`] (cat0–cat4, cat6, cat7; cat5 and the
//!   bindless cat6 forms are named and refused), from Mesa's isaspec XML.
//! - [`mod@disasm`]: [`isa::Instr`] → Mesa's text syntax and `NNNN [hi32_lo32] text` listings.
//! - [`exec`]: a compute-dispatch interpreter: work-groups of 64-fiber waves, wave-wide ALU,
//!   divergence and reconvergence, barriers, shared/private memory and global memory through a
//!   caller-supplied bounds-checked [`exec::Memory`].
//!
//! `no_std` + `alloc`. See `hal/ir3/README.md` for the model and its sources.
//!
//! ```
//! use hcq_ir3::exec::{Buffers, Dispatch, Interp, Meta, Shader};
//!
//! // shl.b r0.w, r0.x, 2 / add.u r1.y, c0.x, r0.w / add.u r1.z, c0.y, 0 / stg.u32 g[r1.y], r0.x, 1 / end
//! let words = [0x46d0_0003_2002_0000u64, 0x4210_0005_0003_1000, 0x4210_0006_2000_1001, 0xc0c6_0b00_0180_0000, 0x0300_0000_0000_0000];
//! let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
//! let instrs = hcq_ir3::decode_image(&image).unwrap();
//! assert_eq!(hcq_ir3::disasm(&instrs[3], 3), "stg.u32 g[r1.y], r0.x, 1");
//!
//! // Every fiber stores its local id x at out[x].
//! let meta = Meta { fregs: 2, hregs: 0, wgid: 0xfc, lid: 0, shmem: 0, pvtmem: 0, merged_regs: false, const_demotion: true };
//! let prog = Shader::new(&image, meta).unwrap();
//! let base = 0x1_0000_0000u64;
//! let mut consts = [0u8; 16];
//! consts[..8].copy_from_slice(&base.to_le_bytes());
//! let mut mem = Buffers { bufs: vec![(base, vec![0; 4 * 100])] };
//! let stats = Interp::new().run(&prog, &Dispatch { consts: &consts, grid: [1, 1, 1], local: [100, 1, 1] }, &mut mem).unwrap();
//! assert_eq!(u32::from_le_bytes(mem.bufs[0].1[4 * 99..].try_into().unwrap()), 99);
//! assert_eq!(stats.lane_instructions, 5 * 100);
//! ```
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
