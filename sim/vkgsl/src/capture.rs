//! `HCQ_VKGSL_RD=path`: every submission of the process, whoever the client is, as a freedreno
//! `.rd` capture (the format `hcq run --dump-rd` writes; Mesa's `cffdump` decodes it). At each
//! `GPU_COMMAND` the capture gets the objects whose contents changed since they were last
//! written (all of them the first time), always the objects holding the submitted IBs, and the
//! IBs; user-memory mappings are not captured.

use crate::memfd::ObjTable;
use hcq_adreno::rd::RdWriter;
use hcq_kgsl::uapi::CommandObject;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::io::Write;
use std::sync::Mutex;

/// An open capture file.
#[derive(Debug)]
pub struct RdCapture {
    file: Mutex<(std::fs::File, HashMap<u32, u64>)>,
}

impl RdCapture {
    /// Create (truncate) `path` and write the header (process name, Adreno 630 ids).
    pub fn create(path: &std::path::Path) -> std::io::Result<RdCapture> {
        let mut file = std::fs::File::create(path)?;
        let cmd = std::env::args().next().unwrap_or_else(|| "hcq-vkgsl".into());
        file.write_all(RdWriter::new(&cmd, 630, 0x0603_0001).bytes())?;
        Ok(RdCapture { file: Mutex::new((file, HashMap::new())) })
    }

    /// Record one submission of `cmds` (objects from `objs`, addressed as the GPU sees them).
    pub fn record(&self, objs: &ObjTable, cmds: &[CommandObject]) -> std::io::Result<()> {
        let Ok(mut f) = self.file.lock() else { return Ok(()) };
        let (file, written) = &mut *f;
        let mut buffers: Vec<(u64, Vec<u8>)> = Vec::new();
        {
            // The table lock is held while the objects are read: an object leaves it (and its
            // mapping goes) only under this lock, in MemfdBacking::release.
            let Ok(objs) = objs.lock() else { return Ok(()) };
            for (&id, o) in objs.iter() {
                let gpu = o.client.unwrap_or(o.own as u64);
                let holds_ib = cmds.iter().any(|c| {
                    let ib = c.gpuaddr + c.offset;
                    ib >= gpu && ib < gpu + o.bytes as u64
                });
                let mut bytes = vec![0u8; o.bytes];
                for (i, c) in bytes.chunks_exact_mut(4).enumerate() {
                    // SAFETY: `own` is the device's live shared mapping of `bytes` bytes (see
                    // above), page aligned; `4 * i + 4 <= bytes`. Read a word at a time,
                    // volatile: the client shares the pages.
                    let w = unsafe { ((o.own + 4 * i) as *const u32).read_volatile() };
                    c.copy_from_slice(&w.to_le_bytes());
                }
                let mut h = DefaultHasher::new();
                h.write(&bytes);
                let h = h.finish();
                if holds_ib || written.get(&id) != Some(&h) {
                    written.insert(id, h);
                    buffers.push((gpu, bytes));
                }
            }
            written.retain(|id, _| objs.contains_key(id));
        }
        buffers.sort_by_key(|b| b.0);
        let mut rd = RdWriter::default();
        for (i, c) in cmds.iter().enumerate() {
            // CAST: KGSL IB sizes are bytes < 4 GiB; the rd section holds dwords.
            let dwords = (c.size / 4) as u32;
            let bufs = if i == 0 { &buffers[..] } else { &[][..] };
            rd.submit(bufs.iter().map(|(a, b)| (*a, &b[..])), c.gpuaddr + c.offset, dwords)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        file.write_all(rd.bytes())
    }
}
