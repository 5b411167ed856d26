//! tinygrad's kernels on the interpreter: every case of `tests/data/kernels` (written by
//! `tools/amd_kernels.py`: a tinygrad 0.14 kernel compiled for gfx1100 by its AMD LLVM renderer,
//! with its buffers before the kernel and as tinygrad's CPU device left them after the same AST)
//! is laid out as tinygrad's AMD runtime lays it out — buffers, kernel arguments (their addresses,
//! then the int vals), user SGPRs from the kernel descriptor — run over its grid, and every
//! buffer must equal the CPU's: integers exactly, floats within a few ulps (the GPU's exp, log,
//! rcp and sqrt are the hardware's, the CPU's libm's).

mod common;

use common::Case;
use hcq_amd::codeobj::CodeObject;
use hcq_amd::launch;
use std::path::PathBuf;

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
    let mut c = Case::load(path)?;
    c.run()?;
    for (i, (dtype, want)) in c.want.iter().enumerate() {
        if let Some(e) = compare(dtype, &c.mem.regions[i].1, want) {
            return Err(format!("buffer {i} ({dtype}): {e}"));
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
