//! freedreno `.rd` captures: every submitted IB and the buffers it points at, in the format
//! Mesa's `cffdump` decodes; and a reader for them.
//!
//! A capture is `RD_CMD`, `RD_GPU_ID`/`RD_CHIP_ID`, then per submission every live buffer as
//! `RD_GPUADDR` + `RD_BUFFER_CONTENTS` followed by `RD_CMDSTREAM_ADDR`. cffdump forgets the
//! buffers after each command stream, so [`RdWriter::submit`] writes them again per submission.

pub mod raw;

use alloc::string::String;
use alloc::vec::Vec;
use hcq::{Error, Result};
use raw::{CmdStreamAddr, GpuAddr, SectionHeader, sect};
use zerocopy::{FromBytes, IntoBytes};

/// Largest section the reader accepts (a buffer of 1 GiB).
pub const MAX_SECTION_BYTES: u32 = 1 << 30;

/// Builds a capture in memory.
#[derive(Clone, Debug, Default)]
pub struct RdWriter {
    out: Vec<u8>,
}

impl RdWriter {
    /// A capture that starts with the process name and the GPU's ids.
    pub fn new(cmd: &str, gpu_id: u32, chip_id: u64) -> Self {
        let mut w = Self { out: Vec::new() };
        w.section(sect::CMD, cmd.as_bytes());
        w.section(sect::GPU_ID, &gpu_id.to_le_bytes());
        w.section(sect::CHIP_ID, &chip_id.to_le_bytes());
        w
    }

    fn section(&mut self, ty: u32, payload: &[u8]) {
        // CAST: payloads come from buffers the runtime allocated; the reader refuses > 1 GiB.
        let h = SectionHeader { ty, size: payload.len() as u32 };
        self.out.extend_from_slice(h.as_bytes());
        self.out.extend_from_slice(payload);
    }

    /// One submission: the buffers (`(gpu address, contents)`, including the IB itself, the
    /// shader code and the constant blocks) and the IB of `dwords` words at `ib`.
    pub fn submit<'a>(
        &mut self,
        buffers: impl IntoIterator<Item = (u64, &'a [u8])>,
        ib: u64,
        dwords: u32,
    ) -> Result<()> {
        for (addr, bytes) in buffers {
            let size =
                u32::try_from(bytes.len()).ok().filter(|s| *s <= MAX_SECTION_BYTES).ok_or(Error::InvalidArgument {
                    what: "rd capture: buffer larger than 1 GiB",
                    value: bytes.len() as u64,
                })?;
            let a = GpuAddr { addr_lo: addr as u32, size, addr_hi: (addr >> 32) as u32 };
            self.section(sect::GPUADDR, a.as_bytes());
            self.section(sect::BUFFER_CONTENTS, bytes);
        }
        let c = CmdStreamAddr { addr_lo: ib as u32, dwords, addr_hi: (ib >> 32) as u32 };
        self.section(sect::CMDSTREAM_ADDR, c.as_bytes());
        Ok(())
    }

    /// The capture's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.out
    }

    /// Take the capture's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.out
    }
}

/// One section of a capture, borrowing its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section<'a> {
    /// Byte offset of the section header in the file.
    pub offset: usize,
    /// `rd_sect_type`.
    pub ty: u32,
    /// Payload.
    pub payload: &'a [u8],
}

/// Split a capture into sections (skipping `0xffffffff 0xffffffff` padding pairs as cffdump
/// does). Errors name the byte offset of the bad header.
pub fn sections(data: &[u8]) -> Result<Vec<Section<'_>>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        let Ok((h, _)) = SectionHeader::read_from_prefix(&data[at..]) else {
            return Err(Error::Malformed {
                what: "rd section header",
                at: at as u64,
                reason: "file ends inside a header",
            });
        };
        if h.ty == u32::MAX && h.size == u32::MAX {
            at += 8;
            continue;
        }
        if h.ty > sect::MAX {
            return Err(Error::Malformed { what: "rd section header", at: at as u64, reason: "unknown section type" });
        }
        if h.size > MAX_SECTION_BYTES {
            return Err(Error::Malformed {
                what: "rd section header",
                at: at as u64,
                reason: "section larger than 1 GiB",
            });
        }
        let start = at + 8;
        let end = start + h.size as usize;
        let payload = data.get(start..end).ok_or(Error::Malformed {
            what: "rd section",
            at: at as u64,
            reason: "payload runs past the end of the file",
        })?;
        out.push(Section { offset: at, ty: h.ty, payload });
        at = end;
    }
    Ok(out)
}

/// One submission read back: the IB and the buffers that were live.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Submit {
    /// IB address.
    pub ib: u64,
    /// IB length in dwords.
    pub dwords: u32,
    /// `(address, contents)` of every buffer written before it.
    pub buffers: Vec<(u64, Vec<u8>)>,
}

impl Submit {
    /// The IB's words, taken from the buffer that holds them.
    pub fn ib_words(&self) -> Result<Vec<u32>> {
        let len = u64::from(self.dwords) * 4;
        for (addr, bytes) in &self.buffers {
            let buf_end = addr.checked_add(bytes.len() as u64);
            if self.ib >= *addr && self.ib.checked_add(len).zip(buf_end).is_some_and(|(end, b)| end <= b) {
                let o = (self.ib - addr) as usize;
                return Ok(bytes[o..o + len as usize]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect());
            }
        }
        Err(Error::OutOfBounds { what: "rd submit: the IB is in no captured buffer", offset: self.ib, len, limit: 0 })
    }
}

/// A capture read back.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Capture {
    /// `RD_CMD`.
    pub cmd: String,
    /// `RD_GPU_ID`.
    pub gpu_id: Option<u32>,
    /// `RD_CHIP_ID`.
    pub chip_id: Option<u64>,
    /// Submissions in order.
    pub submits: Vec<Submit>,
}

/// Read a capture written by [`RdWriter`] (or by Mesa's tools, for the sections above).
pub fn read(data: &[u8]) -> Result<Capture> {
    let mut cap = Capture::default();
    let mut pending: Option<(u64, u32, usize)> = None;
    let mut buffers = Vec::new();
    for s in sections(data)? {
        let bad = |reason| Error::Malformed { what: "rd section payload", at: s.offset as u64, reason };
        match s.ty {
            sect::CMD => cap.cmd = String::from_utf8_lossy(s.payload).into(),
            sect::GPU_ID => {
                cap.gpu_id = Some(u32::read_from_bytes(s.payload).map_err(|_| bad("RD_GPU_ID is not 4 bytes"))?)
            }
            sect::CHIP_ID => {
                cap.chip_id = Some(u64::read_from_bytes(s.payload).map_err(|_| bad("RD_CHIP_ID is not 8 bytes"))?)
            }
            sect::GPUADDR => {
                // 8 bytes: a 32-bit address; 12: 64-bit (cffdump reads hi when size > 8).
                let a = GpuAddr::read_from_bytes(&widen(s.payload).ok_or(bad("RD_GPUADDR is neither 8 nor 12 bytes"))?)
                    .map_err(|_| bad("RD_GPUADDR"))?;
                pending = Some((u64::from(a.addr_lo) | u64::from(a.addr_hi) << 32, a.size, s.offset));
            }
            sect::BUFFER_CONTENTS => {
                let (addr, size, _) = pending.take().ok_or(bad("RD_BUFFER_CONTENTS without a preceding RD_GPUADDR"))?;
                if size as usize != s.payload.len() {
                    return Err(bad("RD_BUFFER_CONTENTS size differs from its RD_GPUADDR"));
                }
                buffers.push((addr, s.payload.to_vec()));
            }
            sect::CMDSTREAM_ADDR => {
                let c = CmdStreamAddr::read_from_bytes(
                    &widen(s.payload).ok_or(bad("RD_CMDSTREAM_ADDR is neither 8 nor 12 bytes"))?,
                )
                .map_err(|_| bad("RD_CMDSTREAM_ADDR"))?;
                cap.submits.push(Submit {
                    ib: u64::from(c.addr_lo) | u64::from(c.addr_hi) << 32,
                    dwords: c.dwords,
                    buffers: core::mem::take(&mut buffers),
                });
            }
            _ => {}
        }
    }
    Ok(cap)
}

/// An 8- or 12-byte address payload as 12 bytes (the high word 0 for the 32-bit form).
fn widen(p: &[u8]) -> Option<[u8; 12]> {
    let mut b = [0u8; 12];
    match p.len() {
        8 | 12 => {
            b[..p.len()].copy_from_slice(p);
            Some(b)
        }
        _ => None,
    }
}
