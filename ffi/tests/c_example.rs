//! The C example (`examples/c/hcq_example.c`) built against `include/hcq.h` and this build's
//! `libhcq.so` with the system C compiler, and run on the sample bundles: it checks the outputs
//! against the bundles' expected bytes, the error statuses, and chain100 with a bound input (on
//! CPU and on QCOM:SIM, where the frame is imported with KGSL `MAP_USER_MEM`); the gfx1100
//! bundles of `examples/amd` on AMD:SIM.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory of `libhcq.so`: `$HCQ_LIB`'s when set (CI's release build, so that this test
/// builds no second tree), else built here from the sources as they are. The library is a
/// cdylib, which tests do not depend on, and the cargo running this test holds its target
/// directory: the build goes to a target directory of its own (`target/c-example`; a no-op when
/// nothing changed).
fn build_lib(root: &Path) -> PathBuf {
    if let Some(lib) = std::env::var_os("HCQ_LIB") {
        let lib = PathBuf::from(lib);
        assert!(lib.is_file(), "HCQ_LIB={} does not exist", lib.display());
        assert!(lib.file_name().is_some_and(|n| n == "libhcq.so"), "HCQ_LIB={} is not a libhcq.so", lib.display());
        return lib.parent().expect("a file has a directory").to_path_buf();
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("c-example");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(root)
        .args(["build", "-q", "-p", "hcq-ffi", "--target-dir"])
        .arg(&target)
        .status()
        .expect("cargo");
    assert!(st.success(), "cargo build -p hcq-ffi failed");
    let dir = target.join("debug");
    assert!(dir.join("libhcq.so").exists(), "no libhcq.so in {}", dir.display());
    dir
}

#[test]
fn the_c_example_builds_and_checks_the_sample_bundles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lib = build_lib(&root);
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
    for (bundle, device) in [
        ("chain100", "CPU"),
        ("mlp", "CPU"),
        ("chain100", "QCOM:SIM"),
        ("amd/chain100", "AMD:SIM"),
        ("amd/mlp", "AMD:SIM"),
    ] {
        let out = Command::new(&exe)
            .env("LD_LIBRARY_PATH", &lib)
            .arg(root.join("examples").join(bundle))
            .arg(device)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{bundle}: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("check PASS"), "{text}");
        assert!(text.contains("HCQ_ERR_SIZE") && text.contains("HCQ_ERR_CLOSED"), "{text}");
        if bundle == "amd/chain100" {
            // AMD:SIM registers the frame with its KFD as a user pointer, which the simulated
            // KFD refuses (EFAULT) for memory it did not map: the bind says so
            assert!(text.contains("bind: ") && text.contains("ALLOC_MEMORY_OF_GPU"), "{device}: {text}");
        }
        if bundle == "chain100" {
            // zero-copy on QCOM:SIM too: the frame's pages imported with KGSL MAP_USER_MEM
            assert!(text.contains("bound input: 3 frames PASS"), "{device}: {text}");
            assert!(text.contains("bad binds: HCQ_ERR_MISALIGNED HCQ_ERR_SIZE HCQ_ERR_NULL_POINTER"), "{text}");
        }
    }
}
