//! CRC-32 (IEEE 802.3: reflected polynomial `0xEDB88320`, initial value and final XOR
//! `0xFFFFFFFF`), the checksum of `.hcqb` files. The same CRC as zlib, PNG and Ethernet, so
//! any standard tool can check a section. Computed by the maintained `crc32fast` crate
//! (`no_std`; table-driven, with SIMD folding where the target has it); this module only names
//! the one CRC the format uses. It detects accidental corruption (flash bit flips, truncated
//! copies); it is not a cryptographic hash and does not authenticate a file.

/// A running CRC-32 over data fed in pieces.
#[derive(Clone, Debug, Default)]
pub struct Crc32(crc32fast::Hasher);

impl Crc32 {
    /// A CRC over no data yet.
    pub fn new() -> Self {
        Crc32(crc32fast::Hasher::new())
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
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
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

    /// The table-per-byte CRC this module had before it used `crc32fast`: files written then
    /// must still verify, so the two must agree on every input.
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

    #[test]
    fn agrees_with_the_bitwise_definition_on_every_length() {
        let data: [u8; 300] = core::array::from_fn(|i| (i as u8).wrapping_mul(167).wrapping_add(13));
        for n in 0..data.len() {
            assert_eq!(crc32(&data[..n]), reference(&data[..n]), "length {n}");
        }
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
