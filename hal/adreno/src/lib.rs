//! hcq Adreno HAL (a6xx: Adreno 630 / SDM845).
//!
//! - [`chip`], [`hal`]: the generation of a chip id, and the compute encoder for it chosen once
//!   ([`compute_encoder`], a [`ComputeEncoder`] trait object); callers name no generation.
//! - [`pm4`]: TYPE4/TYPE7 packets with parity, an encoder and a decoder (generation-neutral).
//! - [`a6xx`]: registers (declared with the core's `register!`), events, `CP_LOAD_STATE6`,
//!   programs, the bare-metal ring and [`A6xxEncoder`], the compute encoder behind the core's
//!   [`hcq::queue::Encoder`]: the core `HwQueue` built with it patches every word that carries
//!   a command field (derived forms such as `local − 1` and `groups × local` included), and its
//!   `check_patch` refuses a patched value the encoder would refuse.
//! - [`program`] (in `a6xx/`): an a630 shader blob plus its bundle metadata becomes a validated
//!   [`Program`].
//! - [`rd`]: freedreno `.rd` capture writer and reader.
//! - [`ring`] (in `a6xx/`): the bare-metal CP ringbuffer ([`ring::A6xxRing`]) over the core's MMIO bus and
//!   [`hcq::ring::CommandRing`], with the backend's device write barrier before the doorbell.
//!
//! The simulated Adreno (a PM4 interpreter for its command processor, and the shader core) is
//! the `hcq-sim-adreno` crate under `sim/adreno`.
//!
//! `no_std` + `alloc`.

#![no_std]

extern crate alloc;

pub mod a6xx;
pub mod chip;
pub mod hal;
pub mod limits;
pub mod pm4;
pub mod rd;
pub mod reg;

pub use a6xx::{program, ring};

pub use a6xx::{A6xxEncoder, EncoderConfig};
pub use hal::{ComputeEncoder, compute_encoder};
pub use program::Program;
