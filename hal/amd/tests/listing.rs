//! The listing against llvm-objdump-19: every code object of `tests/data/tinygrad` (compiled by
//! tinygrad 0.14's AMD_LLVM renderer for test_tiny.py, `tools/amd_corpus.py`) and of
//! `tests/data/suites` (120 objects of test_ops, test_dtype_alu, test_jit and test_hcq chosen to
//! cover 1,025 of the 1,372 instruction forms those suites compile to, `--cover`) lays out,
//! checks, and lists exactly as `llvm-objdump-19 -d --mcpu=gfx1100` printed it, line for line.
//! `HCQ_AMD_CORPUS=DIR` runs the same over another collection (the whole suites: 2,452 objects).

use hcq_amd::codeobj::CodeObject;
use hcq_amd::listing::Listing;
use std::path::PathBuf;

fn corpus() -> Vec<PathBuf> {
    match std::env::var_os("HCQ_AMD_CORPUS") {
        Some(d) => vec![PathBuf::from(d)],
        None => ["tinygrad", "suites"].iter().map(|d| hcq_testkit::root().join("hal/amd/tests/data").join(d)).collect(),
    }
}

#[test]
fn every_tinygrad_code_object_lists_as_llvm_objdump_does() {
    let mut objs = Vec::new();
    for dir in corpus() {
        let before = objs.len();
        objs.extend(
            std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "co")),
        );
        assert!(objs.len() - before >= 20, "{} holds {} code objects", dir.display(), objs.len() - before);
    }
    objs.sort();
    let mut bad = Vec::new();
    let mut lines = 0;
    for p in &objs {
        let co = CodeObject::parse(&std::fs::read(p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let want = std::fs::read_to_string(p.with_extension("txt")).unwrap();
        let name = p.file_name().unwrap().to_str().unwrap();
        let got = Listing { co: &co, path: name }.to_string();
        lines += want.lines().count();
        for (k, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            if g != w {
                bad.push(format!("{name}:{}\n  llvm: {w}\n  hcq:  {g}", k + 1));
                break;
            }
        }
        if got.lines().count() != want.lines().count() {
            bad.push(format!("{name}: {} lines, llvm-objdump {}", got.lines().count(), want.lines().count()));
        }
    }
    let n = bad.len();
    bad.truncate(20);
    assert!(n == 0, "{n} of {} code objects ({lines} lines) differ:\n{}", objs.len(), bad.join("\n"));
}
