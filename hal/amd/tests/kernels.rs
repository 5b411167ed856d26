//! tinygrad's kernels on the interpreter: every case of `tests/data/kernels` (written by
//! `tools/amd_kernels.py`: a tinygrad 0.14 kernel compiled for gfx1100 by its AMD LLVM renderer,
//! with its buffers before the kernel and as tinygrad's CPU device left them after the same AST)
//! is laid out as tinygrad's AMD runtime lays it out — buffers, kernel arguments (their addresses,
//! then the int vals), user SGPRs from the kernel descriptor — run over its grid, and every
//! buffer must equal the CPU's: integers exactly, floats within a few ulps (the GPU's exp, log,
//! rcp and sqrt are the hardware's, the CPU's libm's).

use hcq_amd::codeobj::CodeObject;
use hcq_amd::launch::{self, Inputs};
use hcq_rdna3::exec::Memory;
use serde_json::Value;
use std::path::PathBuf;

/// Buffers at fixed addresses, as a GPU's VA space.
struct Mem {
    regions: Vec<(u64, Vec<u8>)>,
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
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn dims(v: &Value) -> [u32; 3] {
    let a = v.as_array().unwrap();
    let g = |i: usize| a.get(i).and_then(Value::as_u64).unwrap_or(1) as u32;
    [g(0), g(1), g(2)]
}

/// `got` against `want` as elements of `dtype`: None when they agree, else the first difference.
fn compare(dtype: &str, got: &[u8], want: &[u8]) -> Option<String> {
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

fn run_case(path: &std::path::Path) -> Result<(), String> {
    let j: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let co_file = path.with_file_name(j["co"].as_str().unwrap());
    let co = CodeObject::parse(&std::fs::read(&co_file).unwrap()).map_err(|e| e.to_string())?;
    let k = co.kernels.first().ok_or("no kernel")?;
    let prog = launch::program(&co, k).map_err(|e| e.to_string())?;
    let (groups, local) = (dims(&j["global"]), dims(&j["local"]));
    let bufs = j["bufs"].as_array().unwrap();
    let mut mem = Mem { regions: Vec::new() };
    let mut args = Vec::new();
    for (i, b) in bufs.iter().enumerate() {
        let addr = 0x1_0000_0000u64 + (i as u64) * 0x100_0000;
        mem.regions.push((addr, hex(b["init"].as_str().unwrap())));
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
    let d = launch::dispatch(k, local, &user, 1 << 24).map_err(|e| e.to_string())?;
    prog.run(&d, groups, &mut mem).map_err(|e| e.to_string())?;
    for (i, b) in bufs.iter().enumerate() {
        let want = hex(b["want"].as_str().unwrap());
        if let Some(e) = compare(b["dtype"].as_str().unwrap_or("uchar"), &mem.regions[i].1, &want) {
            return Err(format!("buffer {i} ({}): {e}", b["dtype"]));
        }
    }
    Ok(())
}

#[test]
fn tinygrads_kernels_compute_on_the_interpreter_what_its_cpu_device_computes() {
    let dir = hcq_testkit::root().join("hal/amd/tests/data/kernels");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "{} holds {} cases", dir.display(), cases.len());
    let mut bad = Vec::new();
    for c in &cases {
        if let Err(e) = run_case(c) {
            bad.push(format!("{}: {e}", c.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(bad.is_empty(), "{} of {} cases differ:\n{}", bad.len(), cases.len(), bad.join("\n"));
}

/// Every code object tinygrad compiled for its suites (`tests/data/tinygrad`, `tests/data/suites`,
/// or `HCQ_AMD_CORPUS=DIR`) loads on the interpreter: no instruction of them is refused.
#[test]
fn every_collected_tinygrad_object_loads_on_the_interpreter() {
    let dirs: Vec<PathBuf> = match std::env::var_os("HCQ_AMD_CORPUS") {
        Some(d) => vec![PathBuf::from(d)],
        None => ["tinygrad", "suites"].iter().map(|d| hcq_testkit::root().join("hal/amd/tests/data").join(d)).collect(),
    };
    let mut bad = Vec::new();
    let mut n = 0;
    for dir in dirs {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "co") {
                continue;
            }
            n += 1;
            let co = CodeObject::parse(&std::fs::read(&p).unwrap()).unwrap();
            for k in &co.kernels {
                if let Err(e) = launch::program(&co, k) {
                    bad.push(format!("{}: {e}", p.file_name().unwrap().to_string_lossy()));
                }
            }
        }
    }
    assert!(n >= 20);
    bad.sort();
    assert!(bad.is_empty(), "{} of {n} objects refused:\n{}", bad.len(), bad[..bad.len().min(30)].join("\n"));
}
