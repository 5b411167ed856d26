//! Shared test helpers: the copied a630 programs and a simulated GPU memory layout.
#![allow(dead_code)]

use hcq_adreno::{A6xxEncoder, EncoderConfig, Program};
use hcq_sim_adreno::cp::{ComputeState, GpuMemory, ShaderCore, SparseMemory};
use std::sync::Arc;

pub const CODE: u64 = 0x10_0000;
pub const CONSTS: u64 = 0x20_0000;
pub const PVT: u64 = 0x30_0000;
pub const SCRATCH: u64 = 0x40_0000;
pub const SIGNALS: u64 = 0x50_0000;
pub const IB: u64 = 0x100_0000;
pub const IB_BYTES: usize = 1 << 20;

pub fn data(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)).unwrap()
}

pub fn elementwise() -> Program {
    Program::from_json(&data("e_32_32_4.a630.bin"), &data("e_32_32_4.adreno.json")).unwrap()
}

pub fn reduction() -> Program {
    Program::from_json(&data("r_8_64_16_2.a630.bin"), &data("r_8_64_16_2.adreno.json")).unwrap()
}

/// Memory with code, constants, private memory, scratch, signals and an IB region mapped.
pub fn memory() -> SparseMemory {
    let mut m = SparseMemory::new();
    m.map(CODE, 0x1_0000).unwrap();
    m.map(CONSTS, 0x1_0000).unwrap();
    m.map(PVT, 0x1_0000).unwrap();
    m.map(SCRATCH, 0x1000).unwrap();
    m.map(SIGNALS, 0x1000).unwrap();
    m.map(IB, IB_BYTES).unwrap();
    m
}

pub fn encoder() -> Arc<A6xxEncoder> {
    Arc::new(A6xxEncoder::new(EncoderConfig { scratch: SCRATCH, pvt_mem: PVT, pvt_mem_bytes: 0x1_0000 }).unwrap())
}

/// A dispatch callback that records what it saw.
#[derive(Default, Debug)]
pub struct Recorder {
    pub seen: Vec<Seen>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub shader_addr: u64,
    pub shader: Vec<u32>,
    pub consts_addr: u64,
    pub consts: Vec<u32>,
    pub groups: [u32; 3],
    pub local: [u32; 3],
    pub wgid_reg: u8,
}

impl ShaderCore for Recorder {
    fn dispatch(&mut self, s: &ComputeState<'_>, mem: &mut dyn GpuMemory) -> hcq::Result<()> {
        // Touch memory the way a shader would: write a marker after the constant block.
        mem.write32(SCRATCH + 8, s.groups[0])?;
        self.seen.push(Seen {
            shader_addr: s.shader_addr,
            shader: s.shader.to_vec(),
            consts_addr: s.consts_addr,
            consts: s.consts.to_vec(),
            groups: s.groups,
            local: s.local,
            wgid_reg: s.const_config_0.wgidconstid(),
        });
        Ok(())
    }
}

pub fn words_to_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Device address of the timeline signal of [`queue`]'s queues: in the mapped, zeroed signal
/// region of [`memory`], so a queue's leading timeline wait (for 0) passes in the simulated CP.
pub const TIMELINE: u64 = SIGNALS + 0xf00;

/// A timeline signal seen by the device at `addr` (its CPU side is a host slot of its own).
pub fn timeline_at(addr: u64) -> hcq::signal::OwnedSignal {
    use hcq::signal::{OwnedSignal, SignalPage, Slot};
    let slots: Box<[Slot]> = vec![Slot::default()].into_boxed_slice();
    let ptr = std::ptr::NonNull::from(&slots[0]);
    // SAFETY: `slots` is one initialised, 16-aligned slot on the heap; the page owns the box, so
    // the slot lives as long as the page, and only the page's atomics touch it.
    let page = unsafe { SignalPage::from_raw_owning(ptr, 1, addr, Box::new(slots)) };
    OwnedSignal::new(Arc::new(page), 0).unwrap()
}

/// An empty core queue (its timeline wait, command 0, on [`TIMELINE`]) encoded by `enc`.
pub fn queue(enc: Arc<A6xxEncoder>) -> hcq::queue::HwQueue {
    hcq::queue::HwQueue::new(enc, &timeline_at(TIMELINE)).unwrap()
}

/// The words `enc` writes for `cmd` alone (no queue around it, so no timeline wait).
pub fn encoded(enc: &A6xxEncoder, cmd: hcq::queue::Command) -> hcq::Result<Vec<u32>> {
    use hcq::queue::Encoder;
    let mut words = Vec::new();
    enc.encode(&cmd, &mut hcq::queue::CmdWriter::new(&mut words, &mut Vec::new(), 0))?;
    Ok(words)
}
