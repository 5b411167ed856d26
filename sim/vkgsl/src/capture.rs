//! `HCQ_VKGSL_RD=path`: every submission of the process, whoever the client is, as a freedreno
//! `.rd` capture (the format `hcq run --dump-rd` writes; Mesa's `cffdump` decodes it). At each
//! `GPU_COMMAND` the capture gets, per object, the runs of 4 KiB pages whose contents changed
//! since they were last written (everything the first time) and always the pages holding the
//! submitted IBs, then the IBs; user-memory mappings are not captured. (Whole objects each time
//! made tinygrad's test_tiny a 3.7 GB capture: its command and kernarg buffers are 16 MiB.)

use crate::memfd::ObjTable;
use hcq_adreno::rd::RdWriter;
use hcq_qcom::kgsl::uapi::CommandObject;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::io::Write;
use std::sync::Mutex;

const PAGE: usize = 4096;

/// Per object id, the hash of each page as last written.
type PageHashes = HashMap<u32, Vec<Option<u64>>>;

/// An open capture file.
#[derive(Debug)]
pub struct RdCapture {
    /// The file, and per object the hash of each page as last written.
    file: Mutex<(std::fs::File, PageHashes)>,
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
            for (&id, o) in objs.iter().filter(|(_, o)| !o.import) {
                let gpu = o.client.unwrap_or(o.own as u64);
                let pages = o.bytes / PAGE;
                let hashes = written.entry(id).or_default();
                hashes.resize(pages, None);
                let mut run: Option<(usize, Vec<u8>)> = None;
                for (p, last) in hashes.iter_mut().enumerate() {
                    let at = gpu + (p * PAGE) as u64;
                    let holds_ib = cmds.iter().any(|c| {
                        let (ib, end) = (c.gpuaddr + c.offset, c.gpuaddr + c.offset + c.size);
                        ib < at + PAGE as u64 && end > at
                    });
                    let mut bytes = [0u8; PAGE];
                    for (i, c) in bytes.chunks_exact_mut(4).enumerate() {
                        // SAFETY: `own` is the device's live shared mapping of `bytes` bytes
                        // (see above), page aligned; `p * PAGE + 4 * i + 4 <= o.bytes`. Read a
                        // word at a time, volatile: the client shares the pages.
                        let w = unsafe { ((o.own + p * PAGE + 4 * i) as *const u32).read_volatile() };
                        c.copy_from_slice(&w.to_le_bytes());
                    }
                    let mut h = DefaultHasher::new();
                    h.write(&bytes);
                    let h = Some(h.finish());
                    if holds_ib || *last != h {
                        *last = h;
                        run.get_or_insert_with(|| (p, Vec::new())).1.extend_from_slice(&bytes);
                    } else if let Some((first, b)) = run.take() {
                        buffers.push((gpu + (first * PAGE) as u64, b));
                    }
                }
                if let Some((first, b)) = run.take() {
                    buffers.push((gpu + (first * PAGE) as u64, b));
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
