//! Fuzz the simulated CP on raw IB trees: the input builds four IBs in GPU memory from a small
//! packet language (raw words, NOPs, register writes, `CP_INDIRECT_BUFFER`s calling any of the
//! four, with any size, waits, memory writes, dispatches) so that the fuzzer reaches nested and
//! recursive IB calls, which random words almost never form. Each tree runs as an IB submission
//! and through the ringbuffer. Every run must end in `Done`, `Blocked` or an error within the
//! packet budget of its submission, never a panic or a hang (before the budget a fan-out tree
//! ran ~10^10 packets).
#![no_main]

use hcq_adreno::pm4::{op, pkt4, pkt7};
use hcq_sim_adreno::cp::{ComputeState, Cp, GpuMemory, Outcome, ShaderCore, SparseMemory};
use libfuzzer_sys::fuzz_target;

const IBS: [u64; 4] = [0x10_0000, 0x11_0000, 0x12_0000, 0x13_0000];
const IB_BYTES: usize = 0x1_0000;
const DATA: u64 = 0x20_0000;
/// Packets per submission here (the default 2^24 takes ~1 s; the bound is what is tested).
const BUDGET: u64 = 1 << 14;

struct Count(u32);

impl ShaderCore for Count {
    fn dispatch(&mut self, s: &ComputeState<'_>, _mem: &mut dyn GpuMemory) -> hcq::Result<()> {
        assert!(s.local.iter().all(|l| (1..=1024).contains(l)));
        self.0 += 1;
        Ok(())
    }
}

fn build(data: &[u8]) -> [Vec<u32>; 4] {
    let mut ibs: [Vec<u32>; 4] = Default::default();
    let mut it = data.iter().copied();
    let mut cur = 0usize;
    while let Some(b) = it.next() {
        let mut next = || it.next().unwrap_or(0);
        let w = &mut ibs[cur];
        if w.len() > IB_BYTES / 4 - 16 {
            break;
        }
        match b % 8 {
            0 => cur = usize::from(next()) % 4,
            1 => {
                let _ = pkt7(w, op::CP_NOP, &[]);
            }
            2 => {
                // A call to IB k of (its words so far, or a fuzzed size).
                let k = usize::from(next()) % 4;
                let size = if next() & 1 == 0 { 0x4000 } else { u32::from(next()) * 4 };
                let _ = pkt7(w, op::CP_INDIRECT_BUFFER, &[IBS[k] as u32, 0, size]);
            }
            3 => {
                let v = u32::from_le_bytes([next(), next(), next(), next()]);
                w.push(v);
            }
            4 => {
                let _ = pkt4(w, u32::from(next()) << 8 | u32::from(next()), &[u32::from(next())]);
            }
            5 => {
                let _ = pkt7(w, op::CP_MEM_WRITE, &[DATA as u32 + 4 * u32::from(next()), 0, 1]);
            }
            6 => {
                let _ = pkt7(w, op::CP_WAIT_REG_MEM, &[0x13, DATA as u32, 0, u32::from(next()), 0xff, 1]);
            }
            _ => {
                let _ = pkt7(w, op::CP_EXEC_CS, &[0, u32::from(next()), 1, 1]);
            }
        }
    }
    ibs
}

fuzz_target!(|data: &[u8]| {
    let ibs = build(data);
    let mut mem = SparseMemory::new();
    for &a in &IBS {
        mem.map(a, IB_BYTES).unwrap();
    }
    mem.map(DATA, 0x1000).unwrap();
    for (ib, &a) in ibs.iter().zip(&IBS) {
        mem.write_words(a, ib).unwrap();
    }
    // IB 0 as a submission, twice (the budget is per submission).
    let mut cp = Cp::new();
    cp.set_packet_budget(BUDGET);
    for _ in 0..2 {
        let before = cp.packets();
        let r = cp.submit(IBS[0], ibs[0].len() as u32, &mut mem, &mut Count(0));
        assert!(cp.packets() - before <= BUDGET, "a submission ran past its packet budget");
        if let Ok(Outcome::Blocked { .. }) = r {
            break; // still blocked in a wait: the next submission would be refused
        }
    }
    // IB 0 as the ringbuffer, up to its end.
    let mut cp = Cp::new();
    cp.set_packet_budget(BUDGET);
    let size = (IB_BYTES / 4) as u32;
    let wptr = (ibs[0].len() as u32).min(size - 1);
    let before = cp.packets();
    if let Ok((_, rptr)) = cp.ring(IBS[0], size, wptr, &mut mem, &mut Count(0)) {
        assert!(rptr < size);
    }
    assert!(cp.packets() - before <= BUDGET, "a doorbell ran past its packet budget");
});
