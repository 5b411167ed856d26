//! Bundle access for the tests: the a630 programs of every bundle in `examples/` and
//! `../shared/bundles/` (the latter must exist: a missing `../shared` fails the test).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every bundle directory that has a manifest, examples first. Panics (fails the test) when
/// `../shared/bundles` is missing.
pub fn bundle_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let shared = repo_root().join("../shared/bundles");
    assert!(shared.is_dir(), "{} is missing: these tests compare against the shared reference", shared.display());
    for base in [repo_root().join("examples"), shared] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&base)
            .unwrap_or_else(|e| panic!("{}: {e}", base.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("manifest.json").is_file())
            .collect();
        dirs.sort();
        out.extend(dirs);
    }
    out
}

pub fn manifest(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// One a630 program of a bundle.
pub struct Program {
    pub index: usize,
    pub name: String,
    pub image: Vec<u8>,
    pub asm: Option<String>,
    pub adreno: Value,
}

pub fn programs(dir: &Path, m: &Value) -> Vec<Program> {
    let mut out = Vec::new();
    for (index, p) in m["programs"].as_array().unwrap().iter().enumerate() {
        let Some(obj) = p["objects"].get("adreno_a630") else { continue };
        let adreno = p["adreno"].clone();
        let blob = std::fs::read(dir.join(obj["file"].as_str().unwrap())).unwrap();
        let off = adreno["blob"]["image_offset"].as_u64().unwrap() as usize;
        let n = adreno["blob"]["image_nbytes"].as_u64().unwrap() as usize;
        let asm = adreno["disasm_file"].as_str().map(|f| std::fs::read_to_string(dir.join(f)).unwrap());
        out.push(Program {
            index,
            name: p["name"].as_str().unwrap_or("?").to_string(),
            image: blob[off..off + n].to_vec(),
            asm,
            adreno,
        });
    }
    out
}
