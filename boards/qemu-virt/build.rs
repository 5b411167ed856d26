//! Build script of the QEMU `virt` image.
//!
//! - Passes the linker scripts (`link.x`, defmt's `defmt.x`) for bare-metal targets only.
//! - Packs the bundles the image runs into `.hcqb` files with the core's writer and generates
//!   `bundles.rs`, which embeds them with `include_bytes!` in the `.hcq_bundles` section.
//!   By default: every bundle directory in the repository's `examples/`. With
//!   `HCQ_BOARD_BUNDLES=PATH[,PATH...]`: those bundle directories (tinygrad v1 exports) or packed
//!   `.hcqb` files instead; relative paths are taken from the directory cargo was started in
//!   (`PWD`; the repository root when it is not set).
//!   Only the AArch64 objects are kept; a bundle without one for some program is a build error
//!   naming it.
//! - Tells the image where to write its defmt frames: `hcq-board-qemu-virt.defmt` next to
//!   the ELF (`BOARD_DEFMT_PATH`).

use hcq_bundle::hcqb::{self, Hcqb};
use hcq_bundle::{Arch, model::BundleModel, v1};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn fail(msg: String) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

/// Keep only the AArch64 objects (the image runs nothing else); every program needs one.
fn aarch64_only(mut m: BundleModel, from: &Path) -> BundleModel {
    for (i, p) in m.programs.iter_mut().enumerate() {
        let obj = p.objects.get(Arch::Aarch64).map(<[u8]>::to_vec);
        if obj.is_none() {
            fail(format!(
                "bundle {}: program {i} ({}) has no aarch64 object; the board runs AArch64 code only",
                from.display(),
                p.name
            ));
        }
        for a in Arch::ALL {
            p.objects.set(a, None);
        }
        p.objects.set(Arch::Aarch64, obj);
    }
    m
}

fn load(path: &Path) -> BundleModel {
    println!("cargo:rerun-if-changed={}", path.display());
    if path.is_dir() {
        let m = v1::import_dir(path).unwrap_or_else(|e| fail(format!("bundle directory {}: {e}", path.display())));
        aarch64_only(m, path)
    } else {
        let bytes = std::fs::read(path).unwrap_or_else(|e| fail(format!("bundle file {}: {e}", path.display())));
        let file = Hcqb::parse(&bytes).unwrap_or_else(|e| fail(format!("bundle file {}: {e}", path.display())));
        let m = file.to_model();
        aarch64_only(m, path)
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target = std::env::var("TARGET").unwrap();
    if target.ends_with("-none") {
        println!("cargo:rustc-link-arg-bins=-T{}", manifest.join("link.x").display());
        println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
        // Fold identical functions (monomorphised copies the compiler could not merge): the
        // image budget. No code of the image compares function addresses.
        println!("cargo:rustc-link-arg-bins=--icf=all");
    }
    println!("cargo:rerun-if-changed=link.x");
    println!("cargo:rerun-if-env-changed=HCQ_BOARD_BUNDLES");

    let repo = manifest.join("../..");
    let paths: Vec<PathBuf> = match std::env::var("HCQ_BOARD_BUNDLES") {
        Ok(list) if !list.trim().is_empty() => {
            // relative to where the user started cargo (build scripts run in the package dir)
            let cwd = std::env::var("PWD").map(PathBuf::from).unwrap_or_else(|_| repo.clone());
            list.split(',').filter(|s| !s.trim().is_empty()).map(|s| cwd.join(s.trim())).collect()
        }
        _ => {
            let ex = repo.join("examples");
            println!("cargo:rerun-if-changed={}", ex.display());
            let mut v: Vec<PathBuf> = std::fs::read_dir(&ex)
                .unwrap_or_else(|e| fail(format!("{}: {e}", ex.display())))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("manifest.json").is_file())
                .collect();
            v.sort();
            v
        }
    };
    if paths.is_empty() {
        fail("no bundles to embed (HCQ_BOARD_BUNDLES names none, or examples/ has no bundle)".into());
    }

    let mut code = String::from(
        "/// Packed bundles embedded in the image: (name, bytes).\n\
         pub static BUNDLES: &[(&str, &[u8])] = &[\n",
    );
    let mut statics = String::new();
    for (i, p) in paths.iter().enumerate() {
        let model = load(p);
        let bytes = hcqb::write(&model).unwrap_or_else(|e| fail(format!("packing {}: {e}", p.display())));
        let file = out.join(format!("bundle_{i}.hcqb"));
        std::fs::write(&file, &bytes).unwrap_or_else(|e| fail(format!("{}: {e}", file.display())));
        let name = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| format!("bundle{i}"));
        writeln!(code, "    ({name:?}, &BUNDLE_{i}.0),").unwrap();
        writeln!(
            statics,
            "#[unsafe(link_section = \".hcq_bundles\")]\n\
             static BUNDLE_{i}: Aligned<[u8; {n}]> = Aligned(*include_bytes!({file:?}));",
            n = bytes.len(),
        )
        .unwrap();
    }
    code.push_str("];\n\n/// 16-byte alignment for embedded files.\n#[repr(C, align(16))]\nstruct Aligned<T>(T);\n\n");
    code.push_str(&statics);
    std::fs::write(out.join("bundles.rs"), code).unwrap();

    // the ELF lands in <target-dir>/<triple>/<profile>/; OUT_DIR is <that>/build/<pkg>-<hash>/out
    let elf_dir = out.ancestors().nth(3).unwrap_or(&out).to_path_buf();
    println!("cargo:rustc-env=BOARD_DEFMT_PATH={}", elf_dir.join("hcq-board-qemu-virt.defmt").display());
}
