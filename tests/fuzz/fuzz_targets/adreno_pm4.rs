//! Fuzz the PM4 decoder and the simulated CP: any word stream decodes to packets or an error at
//! a word offset inside the stream, and running it on the simulated CP (with a few mapped
//! buffers) ends in `Done`, `Blocked` or an error, never a panic or a hang — as an IB and as
//! the ringbuffer (from a fuzzed read to a fuzzed write pointer, wrapping, then a second doorbell).
#![no_main]

use hcq_adreno::pm4::Decoder;
use hcq_sim_adreno::cp::{ComputeState, Cp, GpuMemory, ShaderCore, SparseMemory};
use libfuzzer_sys::fuzz_target;

struct Count(u32);

impl ShaderCore for Count {
    fn dispatch(&mut self, s: &ComputeState<'_>, _mem: &mut dyn GpuMemory) -> hcq::Result<()> {
        assert!(s.local.iter().all(|l| (1..=1024).contains(l)));
        self.0 += 1;
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    for r in Decoder::new(&words) {
        match r {
            Ok((at, p)) => assert!(at + p.words() <= words.len()),
            Err(hcq::Error::Malformed { at, .. }) => assert!((at as usize) < words.len()),
            Err(e) => panic!("unexpected decoder error {e:?}"),
        }
    }
    let mut mem = SparseMemory::new();
    mem.map(0x1000, 0x1000).unwrap();
    mem.map(0x10_0000, 0x1_0000).unwrap();
    if mem.write_words(0x10_0000, &words[..words.len().min(0x4000)]).is_err() {
        return;
    }
    let mut cp = Cp::new();
    let _ = cp.submit(0x10_0000, words.len().min(0x4000) as u32, &mut mem, &mut Count(0));
    // The same words as a 16 KiB ring: doorbells at two write pointers taken from the input.
    let size = 0x1000u32;
    let mut cp = Cp::new();
    for w in words.iter().take(2) {
        let wptr = w % size;
        match cp.ring(0x10_0000, size, wptr, &mut mem, &mut Count(0)) {
            Ok((_, rptr)) => assert!(rptr < size),
            Err(_) => break,
        }
    }
});
