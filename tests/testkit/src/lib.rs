//! Test helpers shared by the workspace's tests, in one place (a dev-dependency only; never a
//! dependency of shipped code):
//!
//! - [`root`], [`example`], [`examples`], [`examples_and_shared`]: the repository, its sample
//!   bundles (`examples/*/` with a `manifest.json`) and the reference bundles of
//!   `../shared/bundles`, wherever the test's crate lies;
//! - [`vkgsl_lib`]: the virtual KGSL/MSM device library (`$HCQ_VKGSL_LIB`, or built once);
//! - [`cli`]: running a CLI binary from the repository root and reading its `--json` line;
//! - [`counting_alloc`]: a global allocator that counts allocations, on the calling thread or on
//!   every thread, for the "steady state allocates nothing" tests;
//! - [`ib::Ib`]: commands encoded one after another by a backend's [`hcq::queue::Encoder`]
//!   (an indirect buffer without the core queue's timeline wait and signal), with their marks.

use std::path::{Path, PathBuf};

pub mod cli;
pub mod counting_alloc;
pub mod ib;

/// The repository's root directory (the workspace root).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The sample bundle `examples/NAME`. Panics, naming it, when it has no `manifest.json`.
pub fn example(name: &str) -> PathBuf {
    let dir = root().join("examples").join(name);
    assert!(dir.join("manifest.json").is_file(), "no sample bundle {name}: {} has no manifest.json", dir.display());
    dir
}

/// Every sample bundle (`examples/*/` with a `manifest.json`: not `examples/c` or
/// `examples/python`), sorted by name.
pub fn examples() -> Vec<PathBuf> {
    bundles_in(&root().join("examples"))
}

/// Every sample bundle ([`examples`]), then every bundle of `../shared/bundles/` (the reference
/// bundles beside the development checkout). A missing `../shared/bundles` is
/// [`shared_missing`]: a failure under `CI=true`, said on stderr elsewhere.
pub fn examples_and_shared() -> Vec<PathBuf> {
    let mut out = examples();
    let shared = root().join("../shared/bundles");
    if shared.is_dir() {
        out.extend(bundles_in(&shared));
    } else {
        shared_missing(&shared);
    }
    out
}

/// `what` (something under `../shared`, which exists only beside the development checkout) is
/// missing: panics under `CI=true`, where it is required; elsewhere prints `SKIP: ...` to stderr
/// and returns `true`, so a test can go on without it (`if p.is_dir() || !shared_missing(&p)`).
pub fn shared_missing(what: &Path) -> bool {
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{} is missing (required under CI=true)", what.display());
    eprintln!("SKIP: {} is missing (it exists only beside the development checkout)", what.display());
    true
}

/// `libhcq_vkgsl.so`, the virtual KGSL/MSM device library: `$HCQ_VKGSL_LIB` when set (CI's
/// release build; it must exist), else built once per test process with
/// `cargo build --release -p hcq-vkgsl --lib` into `target/vkgsl-test` (a target directory of its
/// own: the outer `cargo test` holds the lock of the usual one). A build that fails fails the
/// test.
pub fn vkgsl_lib() -> &'static Path {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        if let Some(p) = std::env::var_os("HCQ_VKGSL_LIB") {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "HCQ_VKGSL_LIB={} does not exist", p.display());
            return p;
        }
        let dir = root().join("target/vkgsl-test");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args(["build", "--release", "-p", "hcq-vkgsl", "--lib"])
            .env("CARGO_TARGET_DIR", &dir)
            .current_dir(root())
            .output()
            .expect("run cargo build --release -p hcq-vkgsl");
        assert!(out.status.success(), "building libhcq_vkgsl.so failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let p = dir.join("release/libhcq_vkgsl.so");
        assert!(p.is_file(), "{} missing after the build", p.display());
        p
    })
}

/// Every bundle directory directly under `base` (a directory with a `manifest.json`), sorted;
/// empty when `base` does not exist.
pub fn bundles_in(base: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(base) else { return Vec::new() };
    let mut out: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("manifest.json").is_file()).collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_bundles_are_found_and_a_missing_one_is_named() {
        let all = examples();
        assert!(all.len() >= 4, "{all:?}");
        assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted: {all:?}");
        assert!(all.iter().all(|p| p.join("manifest.json").is_file()));
        assert!(!all.iter().any(|p| p.ends_with("c") || p.ends_with("python")), "{all:?}");
        assert_eq!(example("mlp"), root().join("examples/mlp"));
        let e = std::panic::catch_unwind(|| example("no-such-bundle")).unwrap_err();
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("no sample bundle no-such-bundle"), "{msg}");
        assert!(bundles_in(&root().join("no-such-dir")).is_empty());
    }
}
