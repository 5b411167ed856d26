//! Bundles end to end: import the example v1 directories, pack them into `.hcqb`, parse them
//! back, and refuse every kind of broken input with the right error.
#![cfg(feature = "std")]

use std::fs;
use std::path::{Path, PathBuf};

use hcq::Error;
use hcq_bundle::hcqb::{self, Hcqb, LaunchRef};
use hcq_bundle::model::{BundleModel, Launch};
use hcq_bundle::{Arch, BufferRole, inspect, inspect_with, v1};
use serde_json::Value;

const EXAMPLES: [&str; 3] = ["elementwise", "mlp", "chain100"];

fn example(name: &str) -> PathBuf {
    hcq_testkit::example(name)
}

fn import(name: &str) -> BundleModel {
    v1::import_dir(example(name)).unwrap_or_else(|e| panic!("import {name}: {e}"))
}

fn pack(name: &str) -> Vec<u8> {
    hcqb::write(&import(name)).unwrap()
}

/// A writable copy of an example bundle in the temp directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn copy_of(name: &str, tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("hcq-bundle-test-{}-{name}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        for entry in fs::read_dir(example(name)).unwrap() {
            let entry = entry.unwrap();
            fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
        Scratch(dir)
    }

    fn edit_manifest(&self, f: impl FnOnce(&mut Value)) {
        let path = self.0.join("manifest.json");
        let mut v: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        f(&mut v);
        fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }

    fn import(&self) -> hcq::Result<BundleModel> {
        v1::import_dir(&self.0)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn kind(e: &Error) -> &'static str {
    match e.root() {
        Error::Malformed { .. } => "malformed",
        Error::Mismatch { .. } => "mismatch",
        Error::Unsupported { .. } => "unsupported",
        Error::OutOfBounds { .. } => "outofbounds",
        Error::InvalidArgument { .. } => "invalidargument",
        Error::Os { .. } => "os",
        Error::LimitExceeded { .. } => "limit",
        _ => "other",
    }
}

#[test]
fn the_examples_import_with_the_documented_shapes() {
    // (model, programs, launches, buffers) from the bundles README.
    for (name, programs, launches, buffers) in [("elementwise", 1, 1, 3), ("mlp", 3, 3, 9), ("chain100", 1, 100, 3)] {
        let m = import(name);
        assert_eq!(m.name, name);
        assert_eq!((m.programs.len(), m.launches.len(), m.buffers.len()), (programs, launches, buffers), "{name}");
        assert_eq!(m.tinygrad_version, "0.14.0");
        assert_eq!(m.arch_levels.x86_64.as_deref(), Some("x86-64-v2"));
        assert_eq!(m.arch_levels.aarch64.as_deref(), Some("armv8-a"));
        assert_eq!(m.expected_from, Arch::X86_64);
        for p in &m.programs {
            assert!(p.objects.x86_64.as_ref().is_some_and(|o| o.starts_with(b"\x7fELF")), "{name} {}", p.name);
            assert!(p.objects.aarch64.as_ref().is_some_and(|o| o.starts_with(b"\x7fELF")), "{name} {}", p.name);
            assert!(p.objects.adreno_a630.is_some() && p.adreno.is_some());
            assert_eq!(p.core_id_arg, None);
        }
        assert_eq!(m.outputs.len(), 1);
        assert_eq!(m.outputs[0].expected.as_ref().map(Vec::len), Some(m.outputs[0].view.nbytes as usize));
    }
}

#[test]
fn imported_bytes_are_the_files_bytes() {
    let m = import("mlp");
    let dir = example("mlp");
    assert_eq!(m.buffers[2].initial.as_deref(), Some(&fs::read(dir.join("buf_002.bin")).unwrap()[..]));
    assert_eq!(
        m.programs[1].objects.aarch64.as_deref(),
        Some(&fs::read(dir.join("prog_001_r_8_64_16_4.aarch64.o")).unwrap()[..])
    );
    assert_eq!(m.outputs[0].expected.as_deref(), Some(&fs::read(dir.join("expected_000.bin")).unwrap()[..]));
    assert_eq!(m.buffers[1].role, BufferRole::Scratch);
    assert_eq!(m.buffers[1].initial, None);
    // The opaque Adreno metadata is the manifest's `adreno` object.
    let meta: Value = serde_json::from_slice(m.programs[0].adreno.as_deref().unwrap()).unwrap();
    assert_eq!(meta["function_name"], "r_8_64_16_2");
}

#[test]
fn every_example_round_trips_through_hcqb() {
    for name in EXAMPLES {
        let model = import(name);
        let bytes = hcqb::write(&model).unwrap();
        let file = Hcqb::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(file.to_model(), model, "{name}");
        // Packing the unpacked model gives the same file.
        assert_eq!(hcqb::write(&file.to_model()).unwrap(), bytes, "{name}");
    }
}

#[test]
fn packed_accessors_agree_with_the_model() {
    let model = import("mlp");
    let bytes = hcqb::write(&model).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.model_name(), "mlp");
    assert_eq!(file.n_programs(), 3);
    for (i, p) in model.programs.iter().enumerate() {
        let r = file.program(i).unwrap();
        assert_eq!((r.name, r.symbol, r.n_buffer_args), (p.name.as_str(), p.symbol.as_str(), p.n_buffer_args));
        for arch in Arch::ALL {
            assert_eq!(file.object(i, arch), p.objects.get(arch), "program {i} {arch}");
        }
    }
    for (i, b) in model.buffers.iter().enumerate() {
        assert_eq!(file.initial_data(i), b.initial.as_deref());
    }
    let out = file.outputs().next().unwrap();
    assert_eq!(out.expected, model.outputs[0].expected.as_deref());
    assert_eq!(out.shape().collect::<Vec<_>>(), [8, 10]);
    assert_eq!(file.launches().len(), 3);
}

#[test]
fn scratch_views_stay_aliases_of_one_buffer() {
    // chain100 ping-pongs through one arena: launch i writes offset 256*(i%2) and reads the other.
    let bytes = pack("chain100");
    let file = Hcqb::parse(&bytes).unwrap();
    let LaunchRef::Kernel(k) = file.launch(1).unwrap() else { panic!("launch 1 is a kernel") };
    let args: Vec<_> = k.args().collect();
    assert_eq!((args[0].buffer, args[0].offset), (1, 256));
    assert_eq!((args[1].buffer, args[1].offset), (1, 0));
    let arena = file.buffer(1).unwrap();
    assert_eq!((arena.role, arena.nbytes), (BufferRole::Scratch, 512));
    // 100 launches of one program share one stored object and one stored name.
    assert!(bytes.len() < 64 * 1024, "{} bytes", bytes.len());
}

#[test]
fn a_launch_argument_out_of_range_is_refused_before_anything_runs() {
    let mut model = import("mlp");
    let Launch::Kernel(k) = &mut model.launches[2] else { panic!("launch 2 is a kernel") };
    k.args[1].offset = 4096 - 1024; // arena is 4096 bytes; the view is 2048 long
    let e = model.validate().unwrap_err();
    assert!(e.to_string().starts_with("launch 2 arg 1: "), "{e}");
    assert!(matches!(e.root(), Error::OutOfBounds { offset: 3072, len: 2048, limit: 4096, .. }));
    // The packed file is refused by the parser with the same location.
    let bytes = hcqb::write(&model).unwrap();
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(e.to_string().starts_with("launch 2 arg 1: "), "{e}");
}

#[test]
fn a_corrupted_byte_fails_a_checksum() {
    let bytes = pack("elementwise");
    // Flip one bit in the middle of the file (inside the data section) and one in the header.
    for at in [bytes.len() / 2, 30] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        let e = Hcqb::parse(&bad).unwrap_err();
        assert!(matches!(e, Error::Mismatch { what, .. } if what.starts_with("hcqb checksum")), "flip at {at}: {e}");
    }
}

#[test]
fn every_truncation_of_every_packed_example_is_an_error() {
    for name in EXAMPLES {
        let bytes = pack(name);
        for len in 0..bytes.len() {
            match Hcqb::parse(&bytes[..len]) {
                Err(Error::Malformed { .. }) => {}
                other => panic!("{name}: prefix of {len} bytes gave {other:?}"),
            }
        }
    }
}

#[test]
fn a_wrong_format_or_version_is_unsupported() {
    let s = Scratch::copy_of("chain100", "version");
    s.edit_manifest(|m| m["version"] = 3.into());
    let e = s.import().unwrap_err();
    assert_eq!(e.root(), &Error::Unsupported { what: "tg-cpu-bundle version (this importer reads 1 and 2)", value: 3 });
    s.edit_manifest(|m| m["format"] = "tg-gpu-bundle".into());
    let e = s.import().unwrap_err();
    assert!(matches!(e.root(), Error::Unsupported { .. }) && e.to_string().contains("tg-gpu-bundle"), "{e}");
}

#[test]
fn a_missing_required_field_is_named() {
    let s = Scratch::copy_of("mlp", "missing");
    s.edit_manifest(|m| {
        m["buffers"][2].as_object_mut().unwrap().remove("nbytes");
    });
    let e = s.import().unwrap_err();
    assert!(matches!(e.root(), Error::Malformed { reason: "missing required field", .. }), "{e}");
    assert!(e.to_string().contains("buffers[2].nbytes"), "{e}");

    s.edit_manifest(|m| {
        m["buffers"][2]["nbytes"] = 8192.into();
        m["launches"][1]["args"][0].as_object_mut().unwrap().remove("offset");
    });
    let e = s.import().unwrap_err();
    assert!(e.to_string().contains("launches[1].args[0].offset"), "{e}");
}

#[test]
fn a_sha256_or_size_mismatch_names_the_file() {
    let s = Scratch::copy_of("mlp", "sha");
    let mut data = fs::read(s.0.join("buf_003.bin")).unwrap();
    data[0] ^= 1;
    fs::write(s.0.join("buf_003.bin"), &data).unwrap();
    let e = s.import().unwrap_err();
    assert!(matches!(e.root(), Error::Mismatch { what: "bundle file sha256", .. }), "{e}");
    assert!(e.to_string().contains("buf_003.bin") && e.to_string().contains("buffers[3].sha256"), "{e}");

    let s = Scratch::copy_of("mlp", "size");
    s.edit_manifest(|m| m["programs"][0]["objects"]["aarch64"]["nbytes"] = 1000.into());
    let e = s.import().unwrap_err();
    assert!(matches!(e.root(), Error::Mismatch { what: "bundle file size", expected: 1000, found: 1024 }), "{e}");
    assert!(e.to_string().contains("prog_000_r_8_64_32.aarch64.o"), "{e}");
}

#[test]
fn a_bundle_without_gpu_objects_or_arch_levels_imports_with_documented_defaults() {
    let s = Scratch::copy_of("mlp", "old");
    s.edit_manifest(|m| {
        let root = m.as_object_mut().unwrap();
        root.remove("arch_levels");
        root.remove("expected_from");
        for p in root["programs"].as_array_mut().unwrap() {
            let p = p.as_object_mut().unwrap();
            p.remove("adreno");
            p.remove("objects"); // the oldest form: only the top-level x86-64 `file`
        }
        for l in root["launches"].as_array_mut().unwrap() {
            let l = l.as_object_mut().unwrap();
            l.remove("gpu_global_size");
            l.remove("gpu_local_size");
            l.remove("gpu_vals");
        }
    });
    let m = s.import().unwrap();
    assert_eq!(m.arch_levels.x86_64, None);
    assert!(!m.arch_levels.is_portable(Arch::X86_64));
    assert_eq!(m.expected_from, Arch::X86_64);
    for p in &m.programs {
        assert!(p.objects.x86_64.is_some() && p.objects.aarch64.is_none() && p.objects.adreno_a630.is_none());
        assert_eq!(p.adreno, None);
    }
    assert_eq!(m.programs[0].objects.x86_64, import("mlp").programs[0].objects.x86_64);
    let bytes = hcqb::write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.arch_level(Arch::X86_64), None);
    assert_eq!(file.to_model(), m);
}

#[test]
fn file_names_cannot_leave_the_bundle_directory() {
    let s = Scratch::copy_of("chain100", "escape");
    s.edit_manifest(|m| m["buffers"][0]["file"] = "../chain100/buf_000.bin".into());
    let e = s.import().unwrap_err();
    assert!(matches!(e.root(), Error::Malformed { what: "bundle file name", .. }), "{e}");
}

#[test]
fn inspect_summarises_programs_buffers_and_launches() {
    let bytes = pack("chain100");
    let file = Hcqb::parse(&bytes).unwrap();
    let text = inspect(&file);
    assert!(text.starts_with("bundle \"chain100\""), "{text}");
    assert!(text.contains("[0] E_4_4 (symbol E_4_4) args(float32*[16], float32*[16])"), "{text}");
    assert!(
        text.contains("x86_64=872B") && text.contains("aarch64=656B") && text.contains("adreno_a630=3720B"),
        "{text}"
    );
    assert!(text.contains("[1] scratch int8"), "{text}");
    assert!(text.contains("launches: 100 (100 kernel, 0 copy)"), "{text}");
    assert!(text.contains("program [0] E_4_4: 100"), "{text}");
    assert!(text.contains("#15 ") && !text.contains("#16 ") && text.contains("... 84 more"), "{text}");
    let short = inspect_with(&file, 2);
    assert!(short.contains("#1 ") && !short.contains("#2 ") && short.contains("... 98 more"), "{short}");
}

/// A file longer than its manifest entry allows is refused from its length on disk, before a
/// byte is read or memory reserved: here 1 TiB sparse files (no disk used) in the place of a
/// buffer's data, an expected output and an object. Before, the importer tried to read the whole
/// file (`os error 0` when the memory could not be reserved, a read of 1 TiB where it could).
#[test]
fn a_file_longer_than_its_entry_allows_is_refused_without_reading_it() {
    for (file, want) in
        [("buf_000.bin", "outofbounds"), ("expected_000.bin", "outofbounds"), ("prog_000_E_1024_4.o", "mismatch")]
    {
        let s = Scratch::copy_of("elementwise", "sparse");
        let f = fs::OpenOptions::new().write(true).open(s.0.join(file)).unwrap();
        f.set_len(1 << 40).unwrap();
        drop(f);
        let t = std::time::Instant::now();
        let e = s.import().expect_err(file);
        assert_eq!(kind(&e), want, "{file}: {e}");
        assert!(e.to_string().contains(&format!("file {file} has 1099511627776 bytes")), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{file}: refused at once, not after reading");
    }
}

/// A buffer's data or an expected output shorter than its `nbytes` is refused naming the file,
/// its length and the nbytes: a cut input would run on zeros, and a cut expected output would
/// make `--check` compare fewer bytes than the output holds.
#[test]
fn a_file_shorter_than_its_nbytes_is_refused_naming_the_file_its_length_and_the_nbytes() {
    for (file, field) in [("buf_000.bin", "buffers[0].nbytes"), ("expected_000.bin", "outputs[0].nbytes")] {
        let s = Scratch::copy_of("elementwise", "short");
        let f = fs::OpenOptions::new().write(true).open(s.0.join(file)).unwrap();
        f.set_len(100).unwrap();
        drop(f);
        let e = s.import().expect_err(file);
        assert!(matches!(e.root(), Error::Mismatch { expected: 16384, found: 100, .. }), "{file}: {e}");
        let text = e.to_string();
        assert!(text.contains(&format!("{field}: file {file} has 100 bytes, nbytes says 16384")), "{text}");
    }
}

/// `launches[].args[j].image` is read per argument; `buffers[].image` stays accepted.
#[test]
fn image_views_are_read_per_launch_argument() {
    let s = Scratch::copy_of("elementwise", "images");
    s.edit_manifest(|m| {
        let args = m["launches"][0]["args"].as_array_mut().unwrap();
        for a in args.iter_mut() {
            a["image"] = serde_json::json!({"width": 64, "height": 16, "pitch": 1024, "format": "float32"});
        }
        m["buffers"][0]["image"] = serde_json::json!({"width": 64, "height": 16, "pitch": 1024, "format": "float32"});
    });
    let m = s.import().unwrap();
    let Launch::Kernel(k) = &m.launches[0] else { panic!("a kernel") };
    let n = k.args.len() as u32;
    assert_eq!(k.images.iter().map(|im| im.arg).collect::<Vec<_>>(), (0..n).collect::<Vec<_>>());
    assert_eq!(k.image_of(0).map(|im| (im.width, im.height, im.pitch)), Some((64, 16, 1024)));
    assert!(m.buffers[0].image.is_some());
    let bytes = hcqb::write(&m).unwrap();
    assert_eq!(Hcqb::parse(&bytes).unwrap().version(), (2, 1));
    // a view whose format is not its argument's dtype is refused, naming launch and argument
    s.edit_manifest(|m| m["launches"][0]["args"][1]["image"]["format"] = "float16".into());
    let e = s.import().unwrap_err();
    assert!(e.to_string().contains("launch 0 arg 1 image"), "{e}");
    assert!(matches!(e.root(), Error::Mismatch { .. }), "{e}");
}

/// A manifest past `MAX_MANIFEST_BYTES` is refused by its size before it is read or parsed.
#[test]
fn an_oversized_manifest_is_refused_by_its_size() {
    let s = Scratch::copy_of("elementwise", "bigmanifest");
    let f = fs::OpenOptions::new().append(true).open(s.0.join("manifest.json")).unwrap();
    f.set_len(v1::MAX_MANIFEST_BYTES + 1).unwrap();
    drop(f);
    let e = s.import().unwrap_err();
    assert!(matches!(e.root(), Error::LimitExceeded { limit: v1::MAX_MANIFEST_BYTES, .. }), "{e}");
}

// ---- The committed malformed corpus -------------------------------------------------------

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/bundles-bad")
}

/// The limits `limit-*` corpus entries are checked against: a 64 GiB device (each entry asks for
/// at least 2^40 bytes).
const CORPUS_LIMITS: hcq::device::DeviceLimits = hcq::device::DeviceLimits {
    memory_bytes: 64 << 30,
    max_alloc_bytes: 64 << 30,
    alloc_align: 16,
    max_kernel_args: 63,
    max_grid: [1 << 16, 1, 1],
};

/// A corpus entry read as a loader does: imported (directories) or parsed (`.hcqb`), and then,
/// for `limit-*` entries, which are well-formed, checked against [`CORPUS_LIMITS`].
fn load_corpus_entry(path: &Path) -> hcq::Result<()> {
    let bytes = if path.is_dir() { hcqb::write(&v1::import_dir(path)?)? } else { fs::read(path).unwrap() };
    Hcqb::parse(&bytes)?.check_limits(&CORPUS_LIMITS)
}

/// Each corpus entry is named `<kind>-<what>` (`.hcqb` file or v1 directory); `<kind>` is the
/// error it must give.
#[test]
fn every_corpus_entry_gives_its_expected_error_kind() {
    let mut checked = 0;
    for entry in fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "README.md" {
            continue;
        }
        let want = name.split('-').next().unwrap();
        assert!(path.is_dir() || name.ends_with(".hcqb"), "unexpected corpus file {name}");
        if want == "limit" {
            // well-formed: only the device limits refuse it
            let parsed = if path.is_dir() {
                v1::import_dir(&path).map(|_| ())
            } else {
                Hcqb::parse(&fs::read(&path).unwrap()).map(|_| ())
            };
            parsed.unwrap_or_else(|e| panic!("{name} is well-formed: {e}"));
        }
        let result = load_corpus_entry(&path);
        if want == "ok" {
            result.unwrap_or_else(|e| panic!("{name} must import: {e}"));
        } else {
            let e = result.expect_err(&name);
            assert_eq!(kind(&e), want, "{name}: {e}");
        }
        checked += 1;
    }
    assert!(checked >= 28, "only {checked} corpus entries");
}

/// A small valid model to corrupt: chain100 cut to two launches, without the GPU parts.
fn small_model() -> BundleModel {
    let mut m = import("chain100");
    m.launches.truncate(2);
    for p in &mut m.programs {
        p.adreno = None;
        p.objects.adreno_a630 = None;
    }
    for l in &mut m.launches {
        if let Launch::Kernel(k) = l {
            k.gpu = None;
        }
    }
    // Two launches leave the result at arena offset 256; copy it out so the model stays whole.
    m.launches.push(Launch::Copy {
        dst: m.outputs[0].view,
        src: hcq_bundle::ArgView { buffer: 1, offset: 256, nbytes: 64, dtype: hcq::DType::F32 },
    });
    m.validate().unwrap();
    m
}

/// `small_model` twice: a CPU graph and a "QCOM" graph of the same tables (the structure of a
/// two-graph bundle; the second graph's objects are the CPU ones, which the format allows).
fn two_graph_model() -> BundleModel {
    use hcq_bundle::GraphTarget;
    use hcq_bundle::model::{Graph, Span};
    let one = small_model();
    let mut m = one.clone();
    m.buffers.extend(one.buffers.iter().cloned());
    m.inputs.extend(one.inputs.iter().cloned());
    m.outputs.extend(one.outputs.iter().cloned());
    m.programs.extend(one.programs.iter().cloned());
    m.launches.extend(one.launches.iter().cloned());
    let span = |first: usize, len: usize| Span { first: first as u32, len: len as u32 };
    let graph = |k: usize, name: &str, target, expected_from| Graph {
        name: name.to_string(),
        target,
        expected_from,
        buffers: span(k * one.buffers.len(), one.buffers.len()),
        inputs: span(k * one.inputs.len(), one.inputs.len()),
        outputs: span(k * one.outputs.len(), one.outputs.len()),
        programs: span(k * one.programs.len(), one.programs.len()),
        launches: span(k * one.launches.len(), one.launches.len()),
    };
    m.graphs =
        vec![graph(0, "cpu", GraphTarget::Cpu, Arch::X86_64), graph(1, "qcom", GraphTarget::Qcom, Arch::AdrenoA630)];
    m.validate().unwrap();
    m
}

#[test]
fn a_two_graph_model_packs_with_its_weights_stored_once() {
    let m = two_graph_model();
    let bytes = hcqb::write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.to_model(), m);
    let n0 = small_model().buffers.len();
    let (a, b) = (file.buffer(0).unwrap().initial.unwrap(), file.buffer(n0).unwrap().initial.unwrap());
    assert_eq!(a.as_ptr(), b.as_ptr(), "graph 1's input shares graph 0's bytes");
    let one = hcqb::write(&small_model()).unwrap();
    assert!(bytes.len() < 2 * one.len(), "{} vs {}", bytes.len(), one.len());
}

#[test]
fn the_small_corpus_model_is_valid_and_packs() {
    let bytes = hcqb::write(&small_model()).unwrap();
    Hcqb::parse(&bytes).unwrap();
}

/// Regenerate the `.hcqb` part of the corpus after a deliberate format change:
/// `cargo test -p hcq --test bundle -- --ignored regenerate`.
#[test]
#[ignore = "rewrites tests/data/bundles-bad; run by hand after a format change"]
fn regenerate_bad_hcqb_corpus() {
    use zerocopy::FromBytes;
    let dir = corpus_dir();
    let good = hcqb::write(&small_model()).unwrap();
    let put = |name: &str, bytes: &[u8]| fs::write(dir.join(name), bytes).unwrap();
    let header_edit = |f: &dyn Fn(&mut hcqb::raw::Header)| {
        let mut b = good.clone();
        f(hcqb::raw::Header::mut_from_prefix(&mut b).unwrap().0);
        hcqb::reseal(&mut b).unwrap();
        b
    };
    let section =
        |kind: hcqb::raw::SectionKind| hcqb::raw::Header::ref_from_prefix(&good).unwrap().0.sections[kind as usize];

    put("malformed-empty.hcqb", b"");
    put("malformed-truncated.hcqb", &good[..good.len() / 2]);
    put("malformed-header-only.hcqb", &good[..hcqb::raw::HEADER_SIZE - 1]);
    let mut b = good.clone();
    b[..4].copy_from_slice(b"ELF\x7f");
    put("malformed-bad-magic.hcqb", &b);
    put("unsupported-version-3.hcqb", &header_edit(&|h| h.version_major = 3.into()));
    let mut b = good.clone();
    b[40] ^= 1;
    put("mismatch-header-crc.hcqb", &b);
    let mut b = good.clone();
    let data = section(hcqb::raw::SectionKind::Data);
    b[data.offset.get() as usize + 1] ^= 0x80;
    put("mismatch-data-crc.hcqb", &b);
    let launches = section(hcqb::raw::SectionKind::Launches);
    put(
        "malformed-overlapping-sections.hcqb",
        &header_edit(&|h| h.sections[hcqb::raw::SectionKind::Args as usize].offset = launches.offset),
    );
    put(
        "malformed-misaligned-section.hcqb",
        &header_edit(&|h| {
            let e = &mut h.sections[hcqb::raw::SectionKind::Strings as usize];
            e.offset = (e.offset.get() + 1).into();
        }),
    );
    let mut m = small_model();
    if let Launch::Kernel(k) = &mut m.launches[1] {
        k.args[0].offset = 512;
    }
    put("outofbounds-launch-arg.hcqb", &hcqb::write(&m).unwrap());
    let mut m = small_model();
    if let Launch::Kernel(k) = &mut m.launches[0] {
        k.args.pop();
    }
    put("mismatch-arg-count.hcqb", &hcqb::write(&m).unwrap());
    // hcqb 2.0: graphs and images
    let mut m = two_graph_model();
    let arena = m.graphs[1].buffers.first as usize + 1;
    m.buffers[arena].image = Some(hcq_bundle::model::Image { width: 0, height: 1, pitch: 64, format: hcq::DType::F32 });
    put("invalidargument-image-zero-width.hcqb", &hcqb::write(&m).unwrap());
    let mut m = two_graph_model();
    m.graphs[1].launches.first = m.launches.len() as u32;
    put("outofbounds-graph-launch-range.hcqb", &hcqb::write(&m).unwrap());
    // graph 1's input buffer shares graph 0's stored bytes but says it is twice as large
    let mut b = hcqb::write(&two_graph_model()).unwrap();
    let t = hcqb::raw::Header::ref_from_prefix(&b).unwrap().0.sections[hcqb::raw::SectionKind::Buffers as usize];
    let n0 = small_model().buffers.len();
    let rec = t.offset.get() as usize + n0 * size_of::<hcqb::raw::Buffer>();
    let r = hcqb::raw::Buffer::mut_from_bytes(&mut b[rec..rec + size_of::<hcqb::raw::Buffer>()]).unwrap();
    r.nbytes = (r.nbytes.get() * 2).into();
    hcqb::reseal(&mut b).unwrap();
    put("mismatch-shared-weights-two-sizes.hcqb", &b);
    // hcqb 2.1: image views per launch argument
    let im = |arg: u32, format| hcq_bundle::model::ArgImage {
        arg,
        image: hcq_bundle::model::Image { width: 4, height: 1, pitch: 64, format },
    };
    let mut m = small_model();
    if let Launch::Kernel(k) = &mut m.launches[0] {
        k.images = vec![im(0, hcq::DType::F16)];
    }
    put("mismatch-launch-image-format-vs-dtype.hcqb", &hcqb::write(&m).unwrap());
    let mut m = small_model();
    if let Launch::Kernel(k) = &mut m.launches[0] {
        k.images = vec![im(1, hcq::DType::F32), im(0, hcq::DType::F32)];
    }
    put("malformed-launch-images-out-of-order.hcqb", &hcqb::write(&m).unwrap());
    let mut m = small_model();
    m.launches.clear();
    put("malformed-no-launches.hcqb", &hcqb::write(&m).unwrap());
    // an input of 2^62 bytes whose stored bytes are 16 (a v1 file shorter than its nbytes is
    // refused at import, so this one is packed from the model)
    let mut m = v1::import_dir(dir.join("ok-control")).unwrap();
    m.buffers[0].nbytes = 1 << 62;
    put("limit-buffer-2p62-with-data.hcqb", &hcqb::write(&m).unwrap());
    // the packed forms of the well-formed, too-large `limit-*` directories
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() && name.starts_with("limit-") {
            put(&format!("{name}.hcqb"), &hcqb::write(&v1::import_dir(&path).unwrap()).unwrap());
        }
    }
}

/// Deterministic xorshift64*, so a failure is reproducible from its iteration number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random edits of the tables of a packed file, with the checksums fixed afterwards so the
/// edits reach the record checks: the parser never panics, and whatever it accepts is a valid
/// model that repacks to a file that parses to the same model.
#[test]
fn resealed_random_edits_never_panic_and_accepted_files_are_valid() {
    let good = hcqb::write(&small_model()).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut accepted, mut refused) = (0, 0);
    for iteration in 0..3000 {
        let mut bytes = good.clone();
        for _ in 0..1 + rng.below(4) {
            // Mostly small values (counts, indices, codes) at random places after the magic.
            let at = 8 + rng.below(bytes.len() - 8);
            bytes[at] = match rng.below(4) {
                0 => 0,
                1 => 0xFF,
                2 => rng.below(8) as u8,
                _ => rng.next() as u8,
            };
        }
        if hcqb::reseal(&mut bytes).is_err() {
            refused += 1;
            continue;
        }
        match Hcqb::parse(&bytes) {
            Ok(file) => {
                accepted += 1;
                let model = file.to_model();
                model.validate().unwrap_or_else(|e| panic!("iteration {iteration}: parsed but invalid: {e}"));
                let again = hcqb::write(&model).unwrap();
                assert_eq!(Hcqb::parse(&again).unwrap().to_model(), model, "iteration {iteration}");
                let _ = inspect(&file);
            }
            Err(_) => refused += 1,
        }
    }
    // Both outcomes must occur, or the edits are not reaching the checks.
    assert!(accepted > 50 && refused > 50, "accepted {accepted}, refused {refused}");
}
