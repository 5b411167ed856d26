//! The C example (`examples/c/hcq_example.c`) built against `include/hcq.h` and this build's
//! `libhcq.so` with the system C compiler, and run on the sample bundles: it checks the outputs
//! against the bundles' expected bytes, the error statuses, and chain100 with a bound input.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding this profile's `libhcq.so` (`target/<profile>`, next to `deps/`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for d in [deps.parent().unwrap(), deps] {
        if d.join("libhcq.so").exists() {
            return d.to_path_buf();
        }
    }
    panic!("libhcq.so not found next to {}", deps.display());
}

/// The newest modification time of the files under `dir`.
fn newest(dir: &Path) -> std::time::SystemTime {
    let mut t = std::time::SystemTime::UNIX_EPOCH;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let m = if p.is_dir() { newest(&p) } else { e.metadata().and_then(|m| m.modified()).unwrap_or(t) };
        t = t.max(m);
    }
    t
}

#[test]
fn the_c_example_builds_and_checks_the_sample_bundles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lib = lib_dir();
    // the library is a cdylib only, which tests do not depend on: it must have been built from
    // the sources as they are (`cargo build -p hcq-ffi` first)
    let built = std::fs::metadata(lib.join("libhcq.so")).and_then(|m| m.modified()).unwrap();
    for src in ["ffi/src", "src", "hal/cpu/src", "hal/sim/src", "hal/kgsl/src", "hal/adreno/src", "hal/ir3/src"] {
        assert!(
            newest(&root.join(src)) <= built,
            "{}/libhcq.so is older than {src}: run `cargo build -p hcq-ffi` before `cargo test -p hcq-ffi`",
            lib.display()
        );
    }
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hcq_example");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(root.join("examples/c/hcq_example.c"))
        .arg("-I")
        .arg(root.join("include"))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lhcq")
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C compiler (cc)");
    assert!(st.success(), "compiling examples/c/hcq_example.c failed");
    for bundle in ["chain100", "mlp"] {
        let out = Command::new(&exe)
            .env("LD_LIBRARY_PATH", &lib)
            .arg(root.join("examples").join(bundle))
            .arg("CPU")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{bundle}: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("check PASS"), "{text}");
        assert!(text.contains("HCQ_ERR_SIZE") && text.contains("HCQ_ERR_CLOSED"), "{text}");
        if bundle == "chain100" {
            assert!(text.contains("bound input: 3 frames PASS"), "{text}");
        }
    }
}
