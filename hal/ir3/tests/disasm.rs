//! The disassembler reproduces Mesa's listing (`*.a630.asm`) of every shipped a630 program, line
//! for line, whitespace aside.

mod common;

fn norm(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn listings_equal_mesa_for_every_bundle_program() {
    let mut programs = 0;
    let mut lines = 0;
    for dir in common::bundle_dirs() {
        let m = common::manifest(&dir);
        for p in common::programs(&dir, &m) {
            let Some(asm) = &p.asm else { continue };
            let instrs =
                hcq_ir3::decode_image(&p.image).unwrap_or_else(|e| panic!("{}: {}: {e}", dir.display(), p.name));
            let ours = hcq_ir3::listing(&instrs);
            let want: Vec<String> = asm.lines().map(norm).filter(|l| !l.is_empty()).collect();
            let got: Vec<String> = ours.lines().map(norm).collect();
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{} {} line {k}", dir.display(), p.name);
            }
            assert_eq!(got.len(), want.len(), "{} {}: line count", dir.display(), p.name);
            programs += 1;
            lines += got.len();
        }
    }
    assert!(programs >= 10, "only {programs} programs with listings found");
    eprintln!("{programs} programs, {lines} lines equal");
}
