//! Test helpers: packets assembled from the crate's own constants, rings on a `Gpu`, and the
//! kernel cases of `hal/amd/tests/data/kernels` laid out in GPU memory as tinygrad 0.14 lays them
//! out.
// Each test file uses what it needs.
#![allow(dead_code)]

use hcq_sim_amd::cp::pm4::{self, *};
use hcq_sim_amd::cp::regs::*;
use hcq_sim_amd::sdma::packets as sd;
use hcq_sim_amd::{ComputeQueueDesc, Gpu, GpuConfig, QueueHandle, QueueId, QueueState, SdmaQueueDesc};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A type-3 packet.
pub fn pkt(op: u32, body: &[u32]) -> Vec<u32> {
    let mut v = vec![pm4::header(op, body.len() as u32 - 1)];
    v.extend_from_slice(body);
    v
}

/// `SET_SH_REG` of `vals` from absolute register `reg`.
pub fn set_sh(reg: u32, vals: &[u32]) -> Vec<u32> {
    let mut b = vec![reg - SH_REG_START];
    b.extend_from_slice(vals);
    pkt(SET_SH_REG, &b)
}

/// `SET_UCONFIG_REG` of `vals` from absolute register `reg`.
pub fn set_uconfig(reg: u32, vals: &[u32]) -> Vec<u32> {
    let mut b = vec![reg - UCONFIG_REG_START];
    b.extend_from_slice(vals);
    pkt(SET_UCONFIG_REG, &b)
}

fn lo(x: u64) -> u32 {
    x as u32
}

fn hi(x: u64) -> u32 {
    (x >> 32) as u32
}

/// `RELEASE_MEM` at end of pipe (tinygrad's event and index).
pub fn release_mem(addr: u64, data: u64, data_sel: u32, int_sel: u32, ctxid: u32) -> Vec<u32> {
    let event = CACHE_FLUSH_AND_INV_TS_EVENT | RELEASE_EVENT_INDEX_EOP << EVENT_INDEX_SHIFT;
    let sel = data_sel << RELEASE_DATA_SEL_SHIFT | int_sel << RELEASE_INT_SEL_SHIFT;
    pkt(RELEASE_MEM, &[event, sel, lo(addr), hi(addr), lo(data), hi(data), ctxid])
}

/// tinygrad's `signal`: a 32-bit write of `value`, no interrupt.
pub fn signal(addr: u64, value: u32) -> Vec<u32> {
    release_mem(addr, value.into(), DATA_SEL_32, INT_SEL_NONE, 0)
}

/// `WAIT_REG_MEM` on memory.
pub fn wait_mem(addr: u64, reference: u32, mask: u32, func: u32) -> Vec<u32> {
    pkt(WAIT_REG_MEM, &[func | 1 << WAIT_MEM_SPACE_SHIFT, lo(addr), hi(addr), reference, mask, 4])
}

/// tinygrad's `memory_barrier`: the HDP flush (write-wait-write on the NBIO registers), then
/// `ACQUIRE_MEM`.
pub fn memory_barrier() -> Vec<u32> {
    let mut v =
        pkt(WAIT_REG_MEM, &[FUNC_GE | 1 << WAIT_OPERATION_SHIFT, HDP_FLUSH_REQ, HDP_FLUSH_DONE, u32::MAX, u32::MAX, 4]);
    v.extend(acquire_mem());
    v
}

/// `ACQUIRE_MEM` of everything (tinygrad's default flags).
pub fn acquire_mem() -> Vec<u32> {
    pkt(ACQUIRE_MEM, &[0, u32::MAX, u32::MAX, 0, 0, 0, 0xfbf1])
}

/// `EVENT_WRITE CS_PARTIAL_FLUSH`.
pub fn cs_partial_flush() -> Vec<u32> {
    pkt(EVENT_WRITE, &[CS_PARTIAL_FLUSH | EVENT_INDEX_PARTIAL_FLUSH << EVENT_INDEX_SHIFT])
}

/// `INDIRECT_BUFFER` of `dwords` at `va`.
pub fn indirect(va: u64, dwords: u32, chain: bool) -> Vec<u32> {
    pkt(INDIRECT_BUFFER, &[lo(va), hi(va), dwords | IB_VALID | if chain { IB_CHAIN } else { 0 }])
}

/// A ring of either engine on a `Gpu`, and the host's put pointer.
pub struct Ring {
    pub q: QueueHandle,
    pub ring: u64,
    pub dwords: u64,
    pub put: u64,
    pub rptr: u64,
    pub wptr: u64,
    pub sdma: bool,
}

/// A compute queue with a ring of `dwords`, its pointers and an EOP buffer.
pub fn compute_ring(gpu: &Gpu, dwords: u64) -> Ring {
    let m = gpu.memory();
    let ring = m.alloc(None, 4 * dwords).unwrap();
    let ptrs = m.alloc(None, 4096).unwrap();
    let eop = m.alloc(None, 4096).unwrap();
    let desc = ComputeQueueDesc { ring, ring_bytes: 4 * dwords, rptr: ptrs, wptr: ptrs + 8, eop, eop_bytes: 4096 };
    let q = gpu.create_compute_queue(desc).unwrap();
    Ring { q, ring, dwords, put: 0, rptr: ptrs, wptr: ptrs + 8, sdma: false }
}

/// An SDMA queue with a ring of `bytes`.
pub fn sdma_ring(gpu: &Gpu, bytes: u64) -> Ring {
    let m = gpu.memory();
    let ring = m.alloc(None, bytes).unwrap();
    let ptrs = m.alloc(None, 4096).unwrap();
    let q = gpu.create_sdma_queue(SdmaQueueDesc { ring, ring_bytes: bytes, rptr: ptrs, wptr: ptrs + 8 }).unwrap();
    Ring { q, ring, dwords: bytes / 4, put: 0, rptr: ptrs, wptr: ptrs + 8, sdma: true }
}

impl Ring {
    pub fn id(&self) -> QueueId {
        self.q.id
    }

    /// The put pointer in dwords.
    fn put_dwords(&self) -> u64 {
        if self.sdma { self.put / 4 } else { self.put }
    }

    /// Write `words` at the put pointer (wrapping) and move it.
    pub fn write(&mut self, gpu: &Gpu, words: &[u32]) {
        let start = self.put_dwords();
        for (k, w) in words.iter().enumerate() {
            let i = (start + k as u64) % self.dwords;
            gpu.memory().write_u32(self.ring + 4 * i, *w).unwrap();
        }
        self.put += words.len() as u64 * if self.sdma { 4 } else { 1 };
    }

    /// Publish the put pointer: the write pointer's memory, then the doorbell.
    pub fn kick(&self, gpu: &Gpu) {
        gpu.memory().write_u64(self.wptr, self.put).unwrap();
        gpu.ring_doorbell(self.q.id, self.put).unwrap();
    }

    /// Write and kick.
    pub fn submit(&mut self, gpu: &Gpu, words: &[u32]) {
        self.write(gpu, words);
        self.kick(gpu);
    }

    /// The read pointer the engine wrote.
    pub fn read_pointer(&self, gpu: &Gpu) -> u64 {
        gpu.memory().read_u64(self.rptr).unwrap()
    }

    /// The queue's state.
    pub fn state(&self, gpu: &Gpu) -> QueueState {
        gpu.queue_status(self.q.id).unwrap().state
    }
}

/// A config for tests: a short hang timeout.
pub fn config() -> GpuConfig {
    GpuConfig { hang_timeout: Some(Duration::from_millis(200)), ..GpuConfig::default() }
}

/// SDMA packets.
pub mod sdma {
    use super::*;

    pub fn copy(dst: u64, src: u64, bytes: u32) -> Vec<u32> {
        vec![sd::header(sd::OP_COPY, sd::SUB_COPY_LINEAR, 0), bytes - 1, 0, lo(src), hi(src), lo(dst), hi(dst)]
    }

    pub fn fence(addr: u64, value: u32) -> Vec<u32> {
        vec![sd::header(sd::OP_FENCE, 0, 3 << sd::FENCE_MTYPE_SHIFT), lo(addr), hi(addr), value]
    }

    pub fn trap(ctx: u32) -> Vec<u32> {
        vec![sd::header(sd::OP_TRAP, 0, 0), ctx]
    }

    pub fn poll(addr: u64, reference: u32, mask: u32, func: u32) -> Vec<u32> {
        vec![
            sd::header(sd::OP_POLL_REGMEM, 0, func << sd::POLL_FUNC_SHIFT | sd::POLL_MEM),
            lo(addr),
            hi(addr),
            reference,
            mask,
            0x04 | 0xfff << sd::POLL_RETRY_SHIFT,
        ]
    }

    pub fn timestamp(addr: u64) -> Vec<u32> {
        vec![sd::header(sd::OP_TIMESTAMP, sd::SUB_TIMESTAMP_GET_GLOBAL, 0), lo(addr), hi(addr)]
    }

    pub fn write(addr: u64, data: &[u32]) -> Vec<u32> {
        let mut v = vec![sd::header(sd::OP_WRITE, sd::SUB_WRITE_LINEAR, 0), lo(addr), hi(addr), data.len() as u32 - 1];
        v.extend_from_slice(data);
        v
    }

    pub fn indirect(va: u64, dwords: u32) -> Vec<u32> {
        vec![sd::header(sd::OP_INDIRECT, 0, 0), lo(va), hi(va), dwords, 0, 0]
    }
}

/// The kernel cases' directory.
pub fn kernels_dir() -> PathBuf {
    hcq_testkit::root().join("hal/amd/tests/data/kernels")
}

/// Every case file, sorted.
pub fn all_cases() -> Vec<PathBuf> {
    let dir = kernels_dir();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn dims(v: &serde_json::Value) -> [u32; 3] {
    let a = v.as_array().unwrap();
    let g = |i: usize| a.get(i).and_then(serde_json::Value::as_u64).unwrap_or(1) as u32;
    [g(0), g(1), g(2)]
}

/// A case in GPU memory with the PM4 words that run it.
pub struct Case {
    pub name: String,
    /// (address, dtype, expected bytes) per buffer.
    pub bufs: Vec<(u64, String, Vec<u8>)>,
    /// Every allocation made for it.
    pub allocs: Vec<u64>,
    /// ACQUIRE_MEM, the program registers, DISPATCH_DIRECT, CS_PARTIAL_FLUSH, as tinygrad's
    /// `AMDComputeQueue.exec` emits them.
    pub exec: Vec<u32>,
    pub groups: u64,
}

/// Lay case `path` out in `gpu`'s memory.
pub fn load_case(gpu: &Gpu, path: &Path) -> Case {
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let co = std::fs::read(path.with_file_name(j["co"].as_str().unwrap())).unwrap();
    let bufs: Vec<(Vec<u8>, String, Vec<u8>)> = j["bufs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let dtype = b["dtype"].as_str().unwrap_or("uchar").to_string();
            (hex(b["init"].as_str().unwrap()), dtype, hex(b["want"].as_str().unwrap()))
        })
        .collect();
    let vals: Vec<i64> = j["vals"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    layout(gpu, &name, &co, (dims(&j["global"]), dims(&j["local"])), bufs, &vals)
}

/// Lay out a kernel of code object `co` in `gpu`'s memory as tinygrad 0.14 does: its buffers
/// (initial bytes, dtype, expected bytes), `vals`, the kernel arguments and dispatch packet,
/// scratch, and the packets of one dispatch of `(global, local)`.
pub fn layout(
    gpu: &Gpu,
    name: &str,
    co: &[u8],
    (groups, local): ([u32; 3], [u32; 3]),
    buffers: Vec<(Vec<u8>, String, Vec<u8>)>,
    vals: &[i64],
) -> Case {
    use hcq_amd::codeobj::CodeObject;
    use hcq_amd::launch;
    let co = CodeObject::parse(co).unwrap();
    let k = co.kernels[0].clone();
    let m = gpu.memory();
    let mut allocs = Vec::new();
    let code = m.alloc(None, co.image.len().div_ceil(4096) as u64 * 4096).unwrap();
    m.write(code, &co.image).unwrap();
    allocs.push(code);
    let mut args = Vec::new();
    let mut bufs = Vec::new();
    for (init, dtype, want) in buffers {
        let va = m.alloc(None, init.len().max(1) as u64).unwrap();
        m.write(va, &init).unwrap();
        allocs.push(va);
        args.extend_from_slice(&va.to_le_bytes());
        bufs.push((va, dtype, want));
    }
    for v in vals {
        args.extend_from_slice(&(*v as u32).to_le_bytes());
    }
    // tinygrad: the dispatch packet follows the kernel arguments (`kernargs_segment_size`).
    let kbytes = (k.kd.kernarg_bytes as usize).max(args.len());
    args.resize(kbytes, 0);
    let kernarg = m.alloc(None, kbytes as u64 + 64).unwrap();
    allocs.push(kernarg);
    let packet = kernarg + kbytes as u64;
    let pgm = code + k.entry as u64;
    args.extend_from_slice(&launch::dispatch_packet(&k.kd, local, groups, pgm, kernarg));
    m.write(kernarg, &args).unwrap();
    // Scratch: tinygrad's sizing (`_ensure_has_local_memory`, 128 bytes a lane at least) for a
    // few waves, the ring it names mapped.
    let per_lane = k.kd.private_bytes.max(128).div_ceil(4) * 4;
    let wavesize = (64 * per_lane).div_ceil(WAVESIZE_GRANULE);
    let waves = 16u32;
    let scratch = m.alloc(None, u64::from(waves * wavesize * WAVESIZE_GRANULE)).unwrap();
    allocs.push(scratch);
    let user = launch::user_sgprs(&k.kd, &launch::Inputs { kernarg, dispatch_packet: packet, scratch }).unwrap();
    let lds = (k.kd.lds_bytes.div_ceil(LDS_GRANULE)) & 0x1ff;
    let rsrc1 = k.kd.rsrc1 | 1 << 20;
    let rsrc2 = k.kd.rsrc2 | lds << 15;
    let mut w = acquire_mem();
    w.extend(set_sh(COMPUTE_PGM_LO, &[(pgm >> 8) as u32, (pgm >> 40) as u32]));
    w.extend(set_sh(COMPUTE_PGM_RSRC1, &[rsrc1, rsrc2]));
    w.extend(set_sh(COMPUTE_PGM_RSRC3, &[k.kd.rsrc3]));
    w.extend(set_sh(COMPUTE_TMPRING_SIZE, &[waves | wavesize << 12]));
    w.extend(set_sh(COMPUTE_DISPATCH_SCRATCH_BASE_LO, &[(scratch >> 8) as u32, (scratch >> 40) as u32]));
    w.extend(set_sh(COMPUTE_RESTART_X, &[0, 0, 0]));
    w.extend(set_sh(COMPUTE_USER_DATA_0, &user));
    w.extend(set_sh(COMPUTE_RESOURCE_LIMITS, &[0]));
    w.extend(set_sh(COMPUTE_START_X, &[0, 0, 0, local[0], local[1], local[2], 0, 0]));
    let initiator =
        INITIATOR_COMPUTE_SHADER_EN | INITIATOR_FORCE_START_AT_000 | if k.kd.wave32 { INITIATOR_CS_W32_EN } else { 0 };
    w.extend(pkt(DISPATCH_DIRECT, &[groups[0], groups[1], groups[2], initiator]));
    w.extend(cs_partial_flush());
    let g = groups.iter().map(|&x| u64::from(x)).product();
    Case { name: name.to_string(), bufs, allocs, exec: w, groups: g }
}

impl Case {
    /// Every buffer against the CPU's bytes: `Err` names the first difference.
    pub fn check(&self, gpu: &Gpu) -> Result<(), String> {
        for (i, (va, dtype, want)) in self.bufs.iter().enumerate() {
            let mut got = vec![0u8; want.len()];
            gpu.memory().read(*va, &mut got).unwrap();
            if let Some(e) = compare(dtype, &got, want) {
                return Err(format!("{}: buffer {i} ({dtype}): {e}", self.name));
            }
        }
        Ok(())
    }

    pub fn free(&self, gpu: &Gpu) {
        for a in &self.allocs {
            gpu.memory().free(*a).unwrap();
        }
    }
}

/// `got` against `want` as elements of `dtype` (floats within a few ulps, as hal/amd's
/// `tests/kernels.rs` compares the interpreter with tinygrad's CPU device).
pub fn compare(dtype: &str, got: &[u8], want: &[u8]) -> Option<String> {
    let (size, float) = match dtype {
        "float" => (4, true),
        "half" => (2, true),
        "double" => (8, true),
        _ => (1, false),
    };
    if !float {
        return (got != want).then(|| {
            let k = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            format!("byte {k}: {:#x}, CPU {:#x}", got[k], want[k])
        });
    }
    for (k, (g, w)) in got.chunks(size).zip(want.chunks(size)).enumerate() {
        let (g, w) = match size {
            4 => (
                f64::from(f32::from_le_bytes(g.try_into().unwrap())),
                f64::from(f32::from_le_bytes(w.try_into().unwrap())),
            ),
            8 => (f64::from_le_bytes(g.try_into().unwrap()), f64::from_le_bytes(w.try_into().unwrap())),
            _ => (half(u16::from_le_bytes(g.try_into().unwrap())), half(u16::from_le_bytes(w.try_into().unwrap()))),
        };
        let eps = if size == 2 { 2e-3 } else { 1e-5 };
        let same = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= eps * w.abs().max(1.0);
        if !same {
            return Some(format!("element {k}: {g}, CPU {w}"));
        }
    }
    None
}

fn half(h: u16) -> f64 {
    let (s, e, m) = (h >> 15, (h >> 10) & 0x1f, h & 0x3ff);
    let v = match e {
        0 => f64::from(m) * 2f64.powi(-24),
        0x1f if m == 0 => f64::INFINITY,
        0x1f => f64::NAN,
        _ => (1.0 + f64::from(m) / 1024.0) * 2f64.powi(i32::from(e) - 15),
    };
    if s == 1 { -v } else { v }
}
