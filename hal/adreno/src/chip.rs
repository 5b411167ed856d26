//! Chip ids and GPU generations: which register set and packet layouts a chip needs.
//!
//! The chip id (`KGSL_PROP_DEVICE_INFO`, `RD_CHIP_ID`) is `core << 24 | major << 16 |
//! minor << 8 | patch` for a6xx parts (a630: 0x0603000p). Register sets are per generation
//! (`a6xx` here; a7xx moves the compute registers and replaces `CP_EVENT_WRITE`, see
//! `docs/adreno.md` (i)), so a new generation is a sibling module and a new arm here.

use hcq::{Error, Result};

/// A GPU generation this crate can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// a6xx gen1 (Adreno 630): the `a6xx` module.
    A6xx,
}

/// The Adreno 630's chip id as SDM845 v2 reports it.
pub const A630_CHIP_ID: u32 = 0x0603_0001;

/// The generation of `chip_id`, or a clear error for chips not supported yet.
pub fn generation(chip_id: u32) -> Result<Generation> {
    let [core, major, minor, _patch] = chip_id.to_be_bytes();
    match (core, major, minor) {
        (6, 3, 0) => Ok(Generation::A6xx),
        (6, _, _) => Err(Error::Unsupported {
            what: "Adreno a6xx chip other than the 630 (other a6xx gens differ in compute registers; not supported yet)",
            value: chip_id.into(),
        }),
        // a7xx ids (0x07..., 0x43...) and everything else.
        _ => Err(Error::Unsupported {
            what: "Adreno chip id (only the Adreno 630, chip 6.3.0.x, is supported; a7xx is not supported yet)",
            value: chip_id.into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn only_the_630_is_a6xx_here() {
        assert_eq!(generation(A630_CHIP_ID), Ok(Generation::A6xx));
        assert_eq!(generation(0x0603_0000), Ok(Generation::A6xx));
        assert!(generation(0x0604_0000).unwrap_err().to_string().contains("other than the 630"));
        assert!(generation(0x4305_0a01).unwrap_err().to_string().contains("a7xx"));
    }
}
