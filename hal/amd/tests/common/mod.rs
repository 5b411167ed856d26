//! The kernel cases of `tests/data/kernels` (`tools/amd_kernels.py`), laid out as tinygrad's AMD
//! runtime lays them out and run on the interpreter: shared by `tests/kernels.rs` and the benchmark.
// Each user takes what it needs (the benchmark resets buffers, the test compares them).
#![allow(dead_code)]

use hcq_amd::codeobj::CodeObject;
use hcq_amd::launch::{self, Inputs};
use hcq_rdna3::exec::{Memory, Program, Stats};
use serde_json::Value;
use std::path::Path;

/// Buffers at fixed addresses, as a GPU's VA space.
pub struct Mem {
    /// (base address, bytes), buffers first in argument order.
    pub regions: Vec<(u64, Vec<u8>)>,
}

impl Mem {
    fn find(&mut self, addr: u64, n: usize) -> Option<&mut [u8]> {
        for (base, b) in &mut self.regions {
            if addr >= *base {
                let off = usize::try_from(addr - *base).ok()?;
                if off.checked_add(n).is_some_and(|e| e <= b.len()) {
                    return Some(&mut b[off..off + n]);
                }
            }
        }
        None
    }
}

impl Memory for Mem {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        let n = buf.len();
        self.find(addr, n).map(|s| buf.copy_from_slice(s)).is_some()
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        self.find(addr, data.len()).map(|s| s.copy_from_slice(data)).is_some()
    }
    fn read_dwords(&mut self, addr: u64, out: &mut [u32]) -> bool {
        let Some(s) = self.find(addr, 4 * out.len()) else { return false };
        for (x, c) in out.iter_mut().zip(s.chunks_exact(4)) {
            *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        true
    }
    fn write_dwords(&mut self, addr: u64, data: &[u32]) -> bool {
        let Some(s) = self.find(addr, 4 * data.len()) else { return false };
        for (x, c) in data.iter().zip(s.chunks_exact_mut(4)) {
            c.copy_from_slice(&x.to_le_bytes());
        }
        true
    }
}

/// One case, loaded and laid out, ready to run (again: `reset` restores the buffers).
pub struct Case {
    pub prog: Program,
    pub user: Vec<u32>,
    pub local: [u32; 3],
    pub groups: [u32; 3],
    pub mem: Mem,
    pub init: Vec<Vec<u8>>,
    pub want: Vec<(String, Vec<u8>)>,
    pub kernel: hcq_amd::codeobj::Kernel,
}

pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn dims(v: &Value) -> [u32; 3] {
    let a = v.as_array().unwrap();
    let g = |i: usize| a.get(i).and_then(Value::as_u64).unwrap_or(1) as u32;
    [g(0), g(1), g(2)]
}

impl Case {
    pub fn load(path: &Path) -> Result<Case, String> {
        let j: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let co_file = path.with_file_name(j["co"].as_str().unwrap());
        let co = CodeObject::parse(&std::fs::read(&co_file).unwrap()).map_err(|e| e.to_string())?;
        let k = co.kernels.first().ok_or("no kernel")?.clone();
        let prog = launch::program(&co, &k).map_err(|e| e.to_string())?;
        let (groups, local) = (dims(&j["global"]), dims(&j["local"]));
        let bufs = j["bufs"].as_array().unwrap();
        let mut mem = Mem { regions: Vec::new() };
        let mut args = Vec::new();
        let mut init = Vec::new();
        let mut want = Vec::new();
        for (i, b) in bufs.iter().enumerate() {
            let addr = 0x1_0000_0000u64 + (i as u64) * 0x100_0000;
            init.push(hex(b["init"].as_str().unwrap()));
            want.push((b["dtype"].as_str().unwrap_or("uchar").to_string(), hex(b["want"].as_str().unwrap())));
            mem.regions.push((addr, init[i].clone()));
            args.extend_from_slice(&addr.to_le_bytes());
        }
        for v in j["vals"].as_array().unwrap() {
            args.extend_from_slice(&(v.as_i64().unwrap() as u32).to_le_bytes());
        }
        let (kernarg, packet) = (0x8000_0000u64, 0x8100_0000u64);
        args.resize(args.len().max(k.kd.kernarg_bytes as usize), 0);
        mem.regions.push((kernarg, args));
        mem.regions.push((packet, launch::dispatch_packet(&k.kd, local, groups, 0, kernarg).to_vec()));
        let user = launch::user_sgprs(&k.kd, &Inputs { kernarg, dispatch_packet: packet, scratch: 0 })
            .map_err(|e| e.to_string())?;
        Ok(Case { prog, user, local, groups, mem, init, want, kernel: k })
    }

    /// Run it over its grid.
    pub fn run(&mut self) -> Result<Stats, String> {
        let d = launch::dispatch(&self.kernel, self.local, &self.user, 1 << 24).map_err(|e| e.to_string())?;
        self.prog.run(&d, self.groups, &mut self.mem).map_err(|e| e.to_string())
    }

    /// The buffers back as they were before the kernel.
    pub fn reset(&mut self) {
        for (i, b) in self.init.iter().enumerate() {
            self.mem.regions[i].1.copy_from_slice(b);
        }
    }
}
