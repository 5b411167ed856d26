//! `hcq inspect BUNDLE --disasm` prints each program's a630 listing equal to the `.a630.asm`
//! Mesa wrote for it (whitespace aside).

use hcq_testkit::root;
use std::process::Command;

#[test]
fn inspect_disasm_prints_mesa_listings() {
    let out = Command::new(env!("CARGO_BIN_EXE_hcq"))
        .args(["inspect", "examples/mlp", "--disasm"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for (i, asm) in ["prog_000_r_8_64_32", "prog_001_r_8_64_16_4", "prog_002_r_8_10_16_4"].iter().enumerate() {
        let want = std::fs::read_to_string(root().join(format!("examples/mlp/{asm}.a630.asm"))).unwrap();
        let header = text.lines().position(|l| l.starts_with(&format!("program {i} "))).expect("program header");
        let got: Vec<String> = text
            .lines()
            .skip(header + 1)
            .take(want.lines().filter(|l| !l.trim().is_empty()).count())
            .map(norm)
            .collect();
        let want: Vec<String> = want.lines().map(norm).filter(|l| !l.is_empty()).collect();
        assert_eq!(got, want, "program {i}");
    }
}
