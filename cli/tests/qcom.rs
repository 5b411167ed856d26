//! `hcq run --device QCOM:SIM`: every shipped bundle with Adreno 630 objects runs through PM4
//! command buffers on the simulated CP with its shaders executed by the ir3 interpreter, and
//! matches its expected outputs within the bundle tolerance; malformed a630 programs, a missing
//! KGSL node and `.rd` captures through the CLI.

use hcq_testkit::cli::last_json;
use hcq_testkit::root;
use std::path::{Path, PathBuf};
use std::process::Output;

/// `hcq ARGS...` in the repository root.
fn hcq(args: &[&str]) -> Output {
    hcq_testkit::cli::run(env!("CARGO_BIN_EXE_hcq"), args)
}

/// Every bundle directory (examples/, then ../shared/bundles/, which must exist) whose
/// programs all carry an adreno_a630 object.
fn a630_bundles() -> Vec<PathBuf> {
    hcq_testkit::examples_and_shared()
        .into_iter()
        .filter(|d| {
            let m: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
            let progs = m["programs"].as_array().unwrap();
            !progs.is_empty() && progs.iter().all(|p| p["objects"].get("adreno_a630").is_some())
        })
        .collect()
}

#[test]
fn every_a630_bundle_passes_its_check_on_qcom_sim() {
    let bundles = a630_bundles();
    assert!(bundles.len() >= 6, "{bundles:?}");
    for dir in bundles {
        let d = dir.to_string_lossy();
        let out = hcq(&["run", &d, "--device", "QCOM:SIM", "--check", "--json", "--iters", "1"]);
        assert!(out.status.success(), "{d}: {}", String::from_utf8_lossy(&out.stderr));
        let j = last_json(&out);
        assert_eq!(j["outputs_ok"], true, "{d}");
        assert_eq!((j["device"].as_str(), j["arch"].as_str()), (Some("QCOM:SIM"), Some("adreno_a630")), "{d}");
        let dev = j["max_abs_diff"].as_f64().unwrap();
        // The largest deviation per bundle (docs/qcom.md, "The QCOM backend").
        eprintln!("{d}: max |got - expected| = {dev:e}");
        assert!(dev < 1e-5, "{d}: {dev}");
    }
}

#[test]
fn a_bundle_without_a630_objects_is_refused_on_qcom_sim() {
    // a CPU-only bundle (the corpus control entry carries x86-64 objects alone)
    let out = hcq(&["run", "tests/data/bundles-bad/ok-control", "--device", "QCOM:SIM", "--iters", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("no complete object set") && e.contains("adreno_a630"), "{e}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_malformed_a630_program_is_refused_with_its_reason() {
    let cases: [(&str, serde_json::Value, &str); 3] = [
        ("max_threads", serde_json::json!(0), "max_threads"),
        ("image_size", serde_json::json!(12), "image_size"),
        ("arch", serde_json::json!("a740"), "only a630"),
    ];
    for (field, value, says) in cases {
        let dir = std::env::temp_dir().join(format!("hcq-qcom-malformed-{}-{field}", std::process::id()));
        copy_dir(&root().join("examples/elementwise"), &dir);
        let path = dir.join("manifest.json");
        let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        m["programs"][0]["adreno"][field] = value;
        std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
        let out = hcq(&["run", &dir.to_string_lossy(), "--device", "QCOM:SIM", "--iters", "0"]);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(out.status.code(), Some(2), "{field}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("program 0") && e.contains(says), "{field}: {e}");
        assert_eq!(e.lines().count(), 1, "one line, no panic: {e}");
    }
}

#[test]
fn qcom_without_a_kgsl_node_is_a_clear_error() {
    if Path::new("/dev/kgsl-3d0").exists() {
        // On a board the node opens; the run itself is the test then.
        let out = hcq(&["run", "examples/elementwise", "--device", "QCOM", "--check", "--iters", "1"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    let out = hcq(&["run", "examples/elementwise", "--device", "QCOM", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("/dev/kgsl-3d0") && e.contains("missing"), "{e}");
}

#[test]
fn devices_lists_qcom_and_qcom_sim() {
    let out = hcq(&["devices"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.lines().any(|l| l.contains("QCOM:SIM") && l.contains("PASS") && l.contains("a630")), "{s}");
    assert!(s.lines().any(|l| l.trim_start_matches('*').trim_start().starts_with("QCOM ")), "{s}");
}

#[test]
fn dump_rd_writes_every_submission_and_reads_back_to_the_same_packets() {
    let rd = std::env::temp_dir().join(format!("hcq-qcom-{}.rd", std::process::id()));
    let out = hcq(&["run", "examples/mlp", "--device", "QCOM:SIM", "--iters", "2", "--dump-rd", &rd.to_string_lossy()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&rd).unwrap();
    let _ = std::fs::remove_file(&rd);
    let cap = hcq_adreno::rd::read(&bytes).unwrap();
    assert_eq!(cap.gpu_id, Some(630));
    assert_eq!(cap.submits.len(), 3, "first call + 2 timed calls");
    let first = cap.submits[0].ib_words().unwrap();
    let mut execs = 0;
    for p in hcq_adreno::pm4::Decoder::new(&first) {
        let (_, p) = p.unwrap();
        if matches!(p, hcq_adreno::pm4::Packet::Type7 { opcode, .. } if opcode == hcq_adreno::pm4::op::CP_EXEC_CS) {
            execs += 1;
        }
    }
    assert_eq!(execs, 3, "one CP_EXEC_CS per mlp launch");
    // Replays differ only in the patched signal value.
    let second = cap.submits[1].ib_words().unwrap();
    assert_eq!(first.len(), second.len());
    let diff: Vec<usize> = (0..first.len()).filter(|&i| first[i] != second[i]).collect();
    assert!(!diff.is_empty() && diff.len() <= 4, "{diff:?}");
    // Every buffer the IB points at is in the capture.
    assert!(cap.submits[0].buffers.len() >= 6, "{}", cap.submits[0].buffers.len());
}

/// With `--json` the JSON object is the last line of `hcq run`, also after `--dump-rd`'s
/// `rd ... bytes written` line (which used to come last).
#[test]
fn with_json_and_dump_rd_the_last_line_is_the_json_object() {
    let rd = std::env::temp_dir().join(format!("hcq-qcom-json-{}.rd", std::process::id()));
    let out = hcq(&[
        "run",
        "examples/elementwise",
        "--device",
        "QCOM:SIM",
        "--iters",
        "1",
        "--check",
        "--json",
        "--dump-rd",
        &rd.to_string_lossy(),
    ]);
    let _ = std::fs::remove_file(&rd);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("rd ") && l.contains("bytes written")), "{stdout}");
    let j = last_json(&out);
    assert_eq!(j["device"], "QCOM:SIM");
    assert_eq!(j["outputs_ok"], true);
}
