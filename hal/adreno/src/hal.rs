//! The per-generation HAL: the compute encoder a chip needs, chosen once from its chip id.
//!
//! The shape is nova-core's `fb/hal.rs`: a trait ([`ComputeEncoder`]) with one implementation
//! per GPU generation, and one function ([`compute_encoder`]) that matches on the generation
//! ([`crate::chip::generation`]) and hands back a trait object. Callers (the KGSL backend, the
//! bare-metal ring) name no generation: an a7xx module is a sibling of [`crate::a6xx`] plus one
//! arm here, not a fork of its callers.

use crate::a6xx::{A6xxEncoder, EncoderConfig};
use crate::chip::{Generation, generation};
use crate::program::Program;
use alloc::sync::Arc;
use hcq::Result;
use hcq::queue::Encoder;

/// What a generation's compute encoder offers beyond the core's [`Encoder`] (which the core
/// `HwQueue` drives): its generation and the registration of programs.
pub trait ComputeEncoder: Encoder + core::fmt::Debug {
    /// The generation whose packets it writes.
    fn generation(&self) -> Generation;
    /// Register `program`, its shader image at device address `code_addr`; returns the handle
    /// an exec command names.
    fn add_program(&self, program: &Program, code_addr: u64) -> Result<u64>;
}

impl ComputeEncoder for A6xxEncoder {
    fn generation(&self) -> Generation {
        Generation::A6xx
    }
    fn add_program(&self, program: &Program, code_addr: u64) -> Result<u64> {
        A6xxEncoder::add_program(self, program, code_addr)
    }
}

/// The compute encoder for the chip `chip_id` (`KGSL_PROP_DEVICE_INFO`, `RD_CHIP_ID`) with
/// `cfg`'s memory, or the error of [`generation`] for a chip not supported.
pub fn compute_encoder(chip_id: u32, cfg: EncoderConfig) -> Result<Arc<dyn ComputeEncoder>> {
    Ok(match generation(chip_id)? {
        Generation::A6xx => Arc::new(A6xxEncoder::new(cfg)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip::A630_CHIP_ID;
    use alloc::string::ToString;
    use alloc::vec::Vec;
    use hcq::queue::{CmdWriter, Command};

    const CFG: EncoderConfig = EncoderConfig { scratch: 0x1000, pvt_mem: 0x10_0000, pvt_mem_bytes: 1 << 16 };

    #[test]
    fn the_630_gets_the_a6xx_encoder_and_writes_its_packets() {
        let enc = compute_encoder(A630_CHIP_ID, CFG).unwrap();
        assert_eq!(enc.generation(), Generation::A6xx);
        // the same words as the a6xx encoder named directly
        let cmd = Command::Signal { addr: 0x2000, value: 7 };
        let (mut a, mut am, mut b, mut bm) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        enc.encode(&cmd, &mut CmdWriter::new(&mut a, &mut am, 0)).unwrap();
        A6xxEncoder::new(CFG).unwrap().encode(&cmd, &mut CmdWriter::new(&mut b, &mut bm, 0)).unwrap();
        assert!(!a.is_empty());
        assert_eq!(a, b);
    }

    #[test]
    fn other_chips_are_refused_before_anything_is_built() {
        let e = compute_encoder(0x4305_0a01, CFG).unwrap_err();
        assert!(e.to_string().contains("a7xx is not supported yet"), "{e}");
        // a bad config is the encoder's own error
        let e = compute_encoder(A630_CHIP_ID, EncoderConfig { scratch: 0x1001, ..CFG }).unwrap_err();
        assert!(e.to_string().contains("scratch"), "{e}");
    }
}
