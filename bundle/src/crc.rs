//! CRC-32 (IEEE 802.3, catalogued as CRC-32/ISO-HDLC: reflected polynomial `0xEDB88320`,
//! initial value and final XOR `0xFFFFFFFF`), the checksum of `.hcqb` files. The same CRC as
//! zlib, PNG and Ethernet, so any standard tool can check a section. This module only names the
//! one CRC the format uses and picks the implementation. With `std`: the maintained `crc32fast`
//! crate, which picks at run time the carry-less multiply (PCLMULQDQ on x86-64) or the ARMv8
//! CRC32 instructions where the CPU has them, and slice-by-16 elsewhere: loading a bundle checks
//! every byte of its weights, and slice-by-16 took ~25 ms of CPU for 50 MB (`tools/bench_load.py`).
//! Without `std`: the maintained `crc` crate bit by bit (no table), where image size counts more
//! than checksum speed (a bare-metal image such as `boards/qemu-virt`, held to 128 KiB of code
//! and constants, checks each bundle once, at load). Both give the same CRC. It detects
//! accidental corruption (flash bit flips, truncated copies); it is not a cryptographic hash and
//! does not authenticate a file.

#[cfg(not(feature = "std"))]
use crc::{CRC_32_ISO_HDLC, Crc, Digest, Table};

/// The `.hcqb` CRC without `std`: bit by bit, no table.
#[cfg(not(feature = "std"))]
static CRC: Crc<u32, Table<0>> = Crc::<u32, Table<0>>::new(&CRC_32_ISO_HDLC);

/// A running CRC-32 over data fed in pieces.
#[cfg(feature = "std")]
#[derive(Clone)]
pub struct Crc32(crc32fast::Hasher);

/// A running CRC-32 over data fed in pieces.
#[cfg(not(feature = "std"))]
#[derive(Clone)]
pub struct Crc32(Digest<'static, u32, Table<0>>);

impl core::fmt::Debug for Crc32 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Crc32").field(&self.finish()).finish()
    }
}

impl Default for Crc32 {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32 {
    /// A CRC over no data yet.
    #[cfg(feature = "std")]
    pub fn new() -> Self {
        Crc32(crc32fast::Hasher::new())
    }

    /// A CRC over no data yet.
    #[cfg(not(feature = "std"))]
    pub fn new() -> Self {
        Crc32(CRC.digest())
    }

    /// Feed `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The CRC of everything fed so far.
    pub fn finish(&self) -> u32 {
        self.0.clone().finalize()
    }
}

/// CRC-32 of `data`.
#[cfg(feature = "std")]
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// CRC-32 of `data`.
#[cfg(not(feature = "std"))]
pub fn crc32(data: &[u8]) -> u32 {
    CRC.checksum(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_check_value() {
        // The catalogued check value of CRC-32/ISO-HDLC over "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"a"), 0xE8B7_BE43);
    }

    #[test]
    fn pieces_give_the_same_crc_as_the_whole() {
        let data = b"The quick brown fox jumps over the lazy dog";
        assert_eq!(crc32(data), 0x414F_A339);
        let mut c = Crc32::new();
        c.update(&data[..10]);
        c.update(&data[10..]);
        assert_eq!(c.finish(), crc32(data));
    }

    /// The table-per-byte CRC this module had first: files written then must still verify, so
    /// the CRC must agree with it on every input.
    fn reference(data: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
            }
        }
        c ^ 0xFFFF_FFFF
    }

    /// Under Miri (which checks memory safety, not arithmetic) the loops below take every
    /// `MIRI_STEP`-th case: the full sweeps take minutes there.
    const MIRI_STEP: usize = if cfg!(miri) { 23 } else { 1 };

    #[test]
    fn agrees_with_the_bitwise_definition_on_every_length() {
        let data: [u8; 300] = core::array::from_fn(|i| (i as u8).wrapping_mul(167).wrapping_add(13));
        for n in (0..data.len()).step_by(MIRI_STEP) {
            assert_eq!(crc32(&data[..n]), reference(&data[..n]), "length {n}");
        }
    }

    /// Builds without `std` compute the CRC bit by bit (the host tests run with `std`): the same
    /// `Crc` without a table must give the same CRC on every length, in one piece and in two.
    #[test]
    fn the_no_std_tableless_crc_gives_the_same_crc() {
        use crc::{CRC_32_ISO_HDLC, Crc, Table};
        static BITWISE: Crc<u32, Table<0>> = Crc::<u32, Table<0>>::new(&CRC_32_ISO_HDLC);
        let data: [u8; 300] = core::array::from_fn(|i| (i as u8).wrapping_mul(71).wrapping_add(5));
        for n in (0..data.len()).step_by(MIRI_STEP) {
            assert_eq!(BITWISE.checksum(&data[..n]), reference(&data[..n]), "length {n}");
            let mut d = BITWISE.digest();
            d.update(&data[..n / 3]);
            d.update(&data[n / 3..n]);
            assert_eq!(d.finalize(), crc32(&data[..n]), "length {n} in two pieces");
        }
    }

    /// The accelerated paths (carry-less multiply, CRC32 instructions) work on 16- to 64-byte
    /// blocks after an unaligned head: lengths and start offsets around those sizes, and a long
    /// run fed in uneven pieces, must give the bitwise CRC.
    #[test]
    fn agrees_with_the_bitwise_definition_on_long_unaligned_data() {
        let data: std::vec::Vec<u8> = (0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        for start in (0..17).step_by(MIRI_STEP.min(8)) {
            for n in [63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4096, 4983 - start]
                .into_iter()
                .step_by(MIRI_STEP.min(4))
            {
                let d = &data[start..start + n];
                assert_eq!(crc32(d), reference(d), "offset {start} length {n}");
            }
        }
        let mut c = Crc32::new();
        for piece in data.chunks(333) {
            c.update(piece);
        }
        assert_eq!(c.finish(), reference(&data));
    }

    #[test]
    fn every_single_bit_flip_changes_the_crc() {
        let mut data = *b"hcqb section";
        let good = crc32(&data);
        for i in 0..data.len() {
            for bit in 0..8 {
                data[i] ^= 1 << bit;
                assert_ne!(crc32(&data), good, "flip byte {i} bit {bit}");
                data[i] ^= 1 << bit;
            }
        }
    }
}
