//! Fuzz the RDNA3 interpreter: the instructions arbitrary bytes decode to (up to the first that
//! does not decode, then `s_endpgm`) either are refused at load with an error, or run one
//! work-group of two waves over 4 KiB of memory, 1 KiB of LDS and 64 private bytes a lane to its
//! end or a fault (a bad address, a trap, the step budget as a hang): never a panic.
#![no_main]

use hcq_rdna3::exec::{Dispatch, Memory, Program};
use libfuzzer_sys::fuzz_target;

struct Mem(Vec<u8>);

impl Memory for Mem {
    fn read(&mut self, a: u64, b: &mut [u8]) -> bool {
        let n = b.len();
        match usize::try_from(a).ok().and_then(|a| self.0.get(a..a.checked_add(n)?)) {
            Some(s) => {
                b.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, a: u64, d: &[u8]) -> bool {
        let n = d.len();
        match usize::try_from(a).ok().and_then(|a| self.0.get_mut(a..a.checked_add(n)?)) {
            Some(s) => {
                s.copy_from_slice(d);
                true
            }
            None => false,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (wave64, data) = match data.split_first() {
        Some((&b, rest)) => (b & 1 == 1, rest),
        None => return,
    };
    let mut code: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut end = 0;
    for r in hcq_rdna3::decode::decode_all(&code) {
        match r {
            Ok((at, i)) => end = at + i.len,
            Err(_) => break,
        }
    }
    code.truncate(end);
    code.push(0xbfb0_0000); // s_endpgm
    let Ok(p) = Program::load(&code, 0, wave64) else { return };
    let user = [0u32, 0, 16, 0];
    let d = Dispatch {
        wave64,
        local: [64, 1, 1],
        user_sgprs: &user,
        user_sgpr_count: 4,
        tgid: [true, true, false],
        tg_size: true,
        wave_offset: true,
        lds_bytes: 1024,
        private_bytes: 64,
        max_steps: 2000,
    };
    let mut m = Mem(vec![0; 4096]);
    if let Err(f) = p.run(&d, [1, 1, 1], &mut m) {
        assert!(f.to_string().starts_with("gfx1100 fault: "));
    }
});
