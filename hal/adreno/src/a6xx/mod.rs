//! The a6xx generation (Adreno 630 and its family): registers, events and the compute encoder.
//!
//! A later generation (a7xx moves the compute registers and replaces `CP_EVENT_WRITE`, see
//! `docs/adreno.md` (i)) gets its own sibling module; nothing here is shared by accident.

pub mod descriptors;
pub mod encoder;
pub mod events;
pub mod packets;
pub mod program;
pub mod regs;
pub mod ring;

pub use encoder::{A6xxEncoder, EncoderConfig};
