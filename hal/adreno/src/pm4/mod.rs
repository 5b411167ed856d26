//! PM4 command packets (a5xx and later): TYPE4 register writes and TYPE7 CP opcodes, with
//! odd-parity headers, an encoder and a decoder.
//!
//! Layouts live in [`raw`]; this module builds and walks packet streams. Every opcode value is
//! from Mesa's `adreno_pm4.xml` (`adreno_pm4_type3_packets`) and cross-checked by
//! `tests/xml.rs`.

pub mod raw;

use alloc::vec::Vec;
use hcq::queue::{Field, Form};
use hcq::{Error, Result};
use raw::{Type4Header, Type7Header};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// CP opcodes this crate emits or interprets (`adreno_pm4_type3_packets`; unchanged from a6xx to
/// a7xx except where noted).
pub mod op {
    /// `CP_NOP`: payload ignored.
    pub const CP_NOP: u32 = 0x10;
    /// `CP_WAIT_MEM_WRITES`: wait until earlier memory writes landed.
    pub const CP_WAIT_MEM_WRITES: u32 = 0x12;
    /// `CP_WAIT_FOR_ME`.
    pub const CP_WAIT_FOR_ME: u32 = 0x13;
    /// `CP_WAIT_FOR_IDLE`: wait until the pipeline is idle.
    pub const CP_WAIT_FOR_IDLE: u32 = 0x26;
    /// `CP_EXEC_CS`: dispatch the compute state with the given group counts.
    pub const CP_EXEC_CS: u32 = 0x33;
    /// `CP_LOAD_STATE6_FRAG`: load state for the fragment and compute stages (A6XX-).
    pub const CP_LOAD_STATE6_FRAG: u32 = 0x34;
    /// `CP_WAIT_REG_MEM`: busy-wait on a register or memory compare.
    pub const CP_WAIT_REG_MEM: u32 = 0x3c;
    /// `CP_MEM_WRITE`: write inline dwords to memory.
    pub const CP_MEM_WRITE: u32 = 0x3d;
    /// `CP_REG_TO_MEM`: copy registers to memory.
    pub const CP_REG_TO_MEM: u32 = 0x3e;
    /// `CP_INDIRECT_BUFFER`: call an indirect buffer.
    pub const CP_INDIRECT_BUFFER: u32 = 0x3f;
    /// `CP_EVENT_WRITE` (A2XX-A6XX; `CP_EVENT_WRITE7` with another layout on A7XX-).
    pub const CP_EVENT_WRITE: u32 = 0x46;
    /// `CP_SET_MARKER` (A6XX-).
    pub const CP_SET_MARKER: u32 = 0x65;
    /// `CP_MEMCPY` (A6XX-): copy `DWORDS` dwords from `SRC` to `DST`.
    pub const CP_MEMCPY: u32 = 0x75;

    /// `(name, value)` of every opcode above, for the XML cross-check and the decoder's names.
    pub const ALL: &[(&str, u32)] = &[
        ("CP_NOP", CP_NOP),
        ("CP_WAIT_MEM_WRITES", CP_WAIT_MEM_WRITES),
        ("CP_WAIT_FOR_ME", CP_WAIT_FOR_ME),
        ("CP_WAIT_FOR_IDLE", CP_WAIT_FOR_IDLE),
        ("CP_EXEC_CS", CP_EXEC_CS),
        ("CP_LOAD_STATE6_FRAG", CP_LOAD_STATE6_FRAG),
        ("CP_WAIT_REG_MEM", CP_WAIT_REG_MEM),
        ("CP_MEM_WRITE", CP_MEM_WRITE),
        ("CP_REG_TO_MEM", CP_REG_TO_MEM),
        ("CP_INDIRECT_BUFFER", CP_INDIRECT_BUFFER),
        ("CP_EVENT_WRITE", CP_EVENT_WRITE),
        ("CP_SET_MARKER", CP_SET_MARKER),
        ("CP_MEMCPY", CP_MEMCPY),
    ];

    /// The name of a known opcode.
    pub fn name(opcode: u32) -> Option<&'static str> {
        ALL.iter().find(|(_, v)| *v == opcode).map(|(n, _)| *n)
    }
}

/// Where an encoder writes packets: plain words and words marked with the core's [`Form`]
/// (the core's `CmdWriter` behind `hcq::queue::Encoder`, or a plain command buffer).
pub trait Sink {
    /// Append a plain word.
    fn word(&mut self, w: u32);
    /// Append static words.
    fn words(&mut self, ws: &[u32]);
    /// Append a 32-bit word `w` carrying `field` in `form` (`w` is the form's value).
    fn mark32(&mut self, field: Field, form: Form, w: u32);
    /// Append two words (low first) carrying `field` in `form` (`v` is the form's value).
    fn mark64(&mut self, field: Field, form: Form, v: u64);
    /// Mark the last appended (32-bit) word as also carrying `field` in `form`: a word holding
    /// several fields' bits.
    fn also(&mut self, field: Field, form: Form);
}

/// The header of a TYPE4 packet writing `count` registers at dword offset `reg`.
pub fn type4_header(reg: u32, count: u32) -> Result<u32> {
    if count == 0 || count > Type4Header::MAX_COUNT {
        return Err(Error::InvalidArgument { what: "pm4 type4: register count must be 1..=126", value: count.into() });
    }
    if reg > Type4Header::MAX_REG || reg + count - 1 > Type4Header::MAX_REG {
        return Err(Error::InvalidArgument { what: "pm4 type4: register offset beyond 18 bits", value: reg.into() });
    }
    Ok(Type4Header::new(reg, count).0)
}

/// The header of a TYPE7 packet running `opcode` with `count` payload words.
pub fn type7_header(opcode: u32, count: u32) -> Result<u32> {
    if opcode > 0x7f {
        return Err(Error::InvalidArgument { what: "pm4 type7: opcode beyond 7 bits", value: opcode.into() });
    }
    if count > Type7Header::MAX_COUNT {
        return Err(Error::InvalidArgument { what: "pm4 type7: payload beyond 16383 words", value: count.into() });
    }
    Ok(Type7Header::new(opcode, count).0)
}

/// Append a TYPE4 packet writing `values` to consecutive registers from `reg`.
pub fn pkt4(out: &mut Vec<u32>, reg: u32, values: &[u32]) -> Result<()> {
    out.push(type4_header(reg, values.len() as u32)?);
    out.extend_from_slice(values);
    Ok(())
}

/// Append a TYPE7 packet `opcode` with `payload`.
pub fn pkt7(out: &mut Vec<u32>, opcode: u32, payload: &[u32]) -> Result<()> {
    out.push(type7_header(opcode, payload.len() as u32)?);
    out.extend_from_slice(payload);
    Ok(())
}

/// Append a TYPE7 packet whose payload is a zerocopy layout from [`raw`].
pub fn pkt7_struct<T: IntoBytes + Immutable>(out: &mut Vec<u32>, opcode: u32, payload: &T) -> Result<()> {
    let bytes = payload.as_bytes();
    // PANIC: the raw layouts are all made of u32 fields, so their size is a multiple of 4.
    debug_assert!(bytes.len().is_multiple_of(4));
    out.push(type7_header(opcode, (bytes.len() / 4) as u32)?);
    out.extend(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
    Ok(())
}

/// One decoded packet, borrowing its payload from the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A register write burst.
    Type4 {
        /// First register (dword offset).
        reg: u32,
        /// Values for `reg`, `reg + 1`, ...
        values: &'a [u32],
    },
    /// A CP opcode.
    Type7 {
        /// The opcode.
        opcode: u32,
        /// Payload words.
        payload: &'a [u32],
    },
}

impl<'a> Packet<'a> {
    /// Number of words the packet occupies, header included.
    pub fn words(&self) -> usize {
        1 + match self {
            Packet::Type4 { values, .. } => values.len(),
            Packet::Type7 { payload, .. } => payload.len(),
        }
    }

    /// Read the payload as a [`raw`] layout (`None` when it is too short).
    pub fn payload_as<T: FromBytes + KnownLayout + Immutable + Copy>(&self) -> Option<T> {
        let Packet::Type7 { payload, .. } = self else { return None };
        T::read_from_prefix(payload.as_bytes()).ok().map(|(v, _)| v)
    }
}

/// Walks a packet stream; yields each packet with its word offset, and stops after the first
/// error (bad header type, bad parity, reserved bits, or a packet running past the end).
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    words: &'a [u32],
    pos: usize,
    failed: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder over `words`.
    pub fn new(words: &'a [u32]) -> Self {
        Self { words, pos: 0, failed: false }
    }

    /// Word offset of the next packet.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn next_packet(&mut self) -> Result<Packet<'a>> {
        let at = self.pos;
        let hdr = self.words[at];
        let (len, pkt) = match hdr >> 28 {
            0x4 => {
                let h = Type4Header(hdr);
                if !h.parity_ok() {
                    return Err(malformed(at, "type4 header parity is wrong"));
                }
                if h.count() == 0 {
                    return Err(malformed(at, "type4 packet writes no register"));
                }
                let n = h.count() as usize;
                let values = self.payload(at, n)?;
                (n, Packet::Type4 { reg: h.reg(), values })
            }
            0x7 => {
                let h = Type7Header(hdr);
                if !h.reserved_clear() {
                    return Err(malformed(at, "type7 header bits 27:24 or 14 are not zero"));
                }
                if !h.parity_ok() {
                    return Err(malformed(at, "type7 header parity is wrong"));
                }
                let n = h.count() as usize;
                let payload = self.payload(at, n)?;
                (n, Packet::Type7 { opcode: h.opcode(), payload })
            }
            _ => return Err(malformed(at, "not a type4 or type7 packet header")),
        };
        self.pos = at + 1 + len;
        Ok(pkt)
    }

    fn payload(&self, at: usize, n: usize) -> Result<&'a [u32]> {
        self.words.get(at + 1..at + 1 + n).ok_or(Error::Malformed {
            what: "pm4 packet",
            at: at as u64,
            reason: "payload runs past the end of the stream",
        })
    }
}

fn malformed(at: usize, reason: &'static str) -> Error {
    Error::Malformed { what: "pm4 packet (word offset)", at: at as u64, reason }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<(usize, Packet<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.words.len() {
            return None;
        }
        let at = self.pos;
        match self.next_packet() {
            Ok(p) => Some(Ok((at, p))),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Decode a whole stream into packets, or the first error.
pub fn decode(words: &[u32]) -> Result<Vec<Packet<'_>>> {
    Decoder::new(words).map(|r| r.map(|(_, p)| p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_match_the_computed_test_vectors() {
        // docs/adreno.md (a): vectors computed from freedreno_pm4.h's formulas.
        assert_eq!(type7_header(0x26, 0).unwrap(), 0x7026_8000);
        assert_eq!(type7_header(0x10, 0).unwrap(), 0x7010_8000);
        assert_eq!(type7_header(0x46, 4).unwrap(), 0x7046_0004);
        assert_eq!(type7_header(0x33, 4).unwrap(), 0x70b3_0004);
        assert_eq!(type7_header(0x65, 1).unwrap(), 0x70e5_0001);
        assert_eq!(type7_header(0x34, 3).unwrap(), 0x7034_8003);
        assert_eq!(type7_header(0x3c, 6).unwrap(), 0x70bc_8006);
        assert_eq!(type7_header(0x3f, 3).unwrap(), 0x70bf_8003);
        assert_eq!(type4_header(0xb990, 12).unwrap(), 0x40b9_908c);
        assert_eq!(type4_header(0xa9b0, 10).unwrap(), 0x40a9_b08a);
        assert_eq!(type4_header(0xa9bb, 1).unwrap(), 0x48a9_bb01);
    }

    #[test]
    fn out_of_range_headers_are_refused() {
        assert!(type4_header(0x1_0000, 0).is_err());
        assert!(type4_header(0x1_0000, 127).is_err());
        assert!(type4_header(0x4_0000, 1).is_err());
        assert!(type4_header(0x3_ffff, 2).is_err(), "the burst would run past 18 bits");
        assert!(type7_header(0x80, 0).is_err());
        assert!(type7_header(0x10, 0x4000).is_err());
    }

    #[test]
    fn a_flipped_bit_is_reported_at_its_word_offset() {
        let mut w = Vec::new();
        pkt7(&mut w, op::CP_WAIT_FOR_IDLE, &[]).unwrap();
        pkt4(&mut w, 0xa9bb, &[0x100]).unwrap();
        pkt7(&mut w, op::CP_EXEC_CS, &[0, 1, 2, 3]).unwrap();
        assert_eq!(decode(&w).unwrap().len(), 3);
        let mut bad = w.clone();
        bad[3] ^= 1 << 16; // opcode bit of the EXEC_CS header: parity no longer holds
        let err = decode(&bad).unwrap_err();
        assert!(matches!(err, Error::Malformed { at: 3, .. }), "{err:?}");
        let err = decode(&w[..5]).unwrap_err();
        assert!(matches!(err, Error::Malformed { at: 3, reason, .. } if reason.contains("past the end")), "{err:?}");
    }
}
