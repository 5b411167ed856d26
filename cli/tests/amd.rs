//! `hcq run --device AMD:SIM`: every bundle of `examples/amd` runs its gfx1100 code objects
//! through hcq-kfd's PM4 compute queue on the simulated KFD and GPU (the RDNA3 interpreter) and
//! matches its expected outputs, call after call; `hcq devices` lists the device; bundles it
//! cannot run are one-line errors with exit code 2; copy launches run on the SDMA queue;
//! `--profile` writes every dispatch with the GPU clock's times.

use hcq_testkit::cli::{last_json, text};
use hcq_testkit::root;
use std::path::Path;
use std::process::Output;

const BUNDLES: [&str; 5] = ["chain100", "convnet", "elementwise", "mlp", "wide"];

/// `hcq ARGS...` in the repository root.
fn hcq(args: &[&str]) -> Output {
    hcq_testkit::cli::run(env!("CARGO_BIN_EXE_hcq"), args)
}

#[test]
fn every_amd_example_passes_its_check_on_amd_sim() {
    for b in BUNDLES {
        let d = format!("examples/amd/{b}");
        let out = hcq(&["run", &d, "--device", "AMD:SIM", "--check", "--json", "--iters", "5"]);
        assert!(out.status.success(), "{d}: {}", text(&out));
        let j = last_json(&out);
        assert_eq!(j["outputs_ok"], true, "{d}");
        assert_eq!((j["device"].as_str(), j["arch"].as_str()), (Some("AMD:SIM"), Some("amd_gfx1100")), "{d}");
        assert_eq!(j["calls"], 5, "{d}");
        let dev = j["max_abs_diff"].as_f64().unwrap();
        assert!(dev < 1e-5, "{d}: max |got - expected| = {dev:e}");
    }
}

#[test]
fn the_interface_spelling_runs_too_and_devices_lists_amd_sim_passing() {
    let out = hcq(&["run", "examples/amd/chain100", "--device", "kfd+amd:sim", "--check", "--iters", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("KFD+AMD:SIM"), "{}", text(&out));
    let out = hcq(&["devices"]);
    assert!(out.status.success(), "{}", text(&out));
    let list = String::from_utf8_lossy(&out.stdout);
    for n in ["AMD:SIM ", "KFD+AMD:SIM"] {
        let line = list.lines().find(|l| l.trim_start_matches(['*', ' ']).starts_with(n)).unwrap_or_default();
        assert!(line.contains(": PASS amd gfx1100"), "{n}: {list}");
    }
}

#[test]
fn a_bundle_without_gfx1100_objects_is_refused_on_amd_sim() {
    let out = hcq(&["run", "examples/mlp", "--device", "AMD:SIM", "--iters", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("no complete object set") && e.contains("amd_gfx1100"), "{e}");
    assert_eq!(e.lines().count(), 1, "one line: {e}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// A program whose symbol the code object does not define is refused at load, naming the
/// program and the kernels the object has.
#[test]
fn a_symbol_the_code_object_lacks_is_refused_naming_the_program() {
    let dir = std::env::temp_dir().join(format!("hcq-amd-symbol-{}", std::process::id()));
    copy_dir(&root().join("examples/amd/elementwise"), &dir);
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let graphs = m["graphs"].as_array_mut().unwrap();
    let amd = graphs.iter_mut().find(|g| g["target"] == "amd").unwrap();
    amd["programs"][0]["symbol"] = serde_json::json!("not_a_kernel");
    std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    let out = hcq(&["run", &dir.to_string_lossy(), "--device", "AMD:SIM", "--iters", "0"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("program 0") && e.contains("not_a_kernel") && e.contains("E_32_32_4"), "{e}");
}

/// `--profile` on AMD:SIM: every dispatch bracketed by two `RELEASE_MEM`s of the 100 MHz GPU
/// clock, one `program` event per kernel per call, in launch order, each inside its call.
#[test]
fn profile_on_amd_sim_records_every_dispatch_from_the_gpu_clock_inside_its_call() {
    let tmp = std::env::temp_dir().join(format!("hcq-prof-amd-{}.json", std::process::id()));
    let out =
        hcq(&["run", "examples/amd/mlp", "--device", "AMD:SIM", "--iters", "2", "--profile", tmp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tmp).unwrap()).unwrap();
    std::fs::remove_file(&tmp).ok();
    let evs = j["traceEvents"].as_array().unwrap();
    let span = |e: &serde_json::Value| {
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap())
    };
    let programs: Vec<(f64, f64)> = evs.iter().filter(|e| e["cat"] == "program").map(span).collect();
    assert_eq!(programs.len(), 9, "3 kernels x (the first call + 2 timed calls)");
    assert!(programs.windows(2).all(|w| w[0].0 < w[1].0), "dispatches in launch order: {programs:?}");
    let calls: Vec<(f64, f64)> = evs.iter().filter(|e| e["cat"] == "call").map(span).collect();
    assert_eq!(calls.len(), 3, "the first call + 2 timed calls");
    for (i, &(s, e)) in programs.iter().enumerate() {
        // 2 ns of slack: `ts` and `dur` are each rounded to 1 ns in the trace
        assert!(calls.iter().any(|&(cs, ce)| cs - 0.002 <= s && e <= ce + 0.002), "kernel {i} [{s}, {e}] in no call");
    }
    assert!(text(&out).contains("r_8_64_16_4"), "the summary names the kernels: {}", text(&out));
}

/// examples/amd/chain100 with copy launches in its amd graph (the input copied to a buffer the
/// first kernel reads; kernel 49's output copied to a buffer kernel 50 reads): `--check` passes
/// (x + 100), so each copy ran on the SDMA queue between the dispatches around it; profiled,
/// the copies are `copy` events.
#[test]
fn copy_launches_run_on_amd_sim_between_the_dispatches_around_them() {
    let dir = std::env::temp_dir().join(format!("hcq-amd-copies-{}", std::process::id()));
    copy_dir(&root().join("examples/amd/chain100"), &dir);
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let graphs = m["graphs"].as_array_mut().unwrap();
    let amd = graphs.iter_mut().find(|g| g["target"] == "amd").unwrap();
    let buffers = amd["buffers"].as_array_mut().unwrap();
    let (b0, b1) = (buffers.len(), buffers.len() + 1);
    for id in [b0, b1] {
        buffers.push(serde_json::json!({"id": id, "nbytes": 64, "dtype": "float32", "role": "scratch"}));
    }
    let view = |b: usize| serde_json::json!({"buffer": b, "offset": 0, "nbytes": 64, "dtype": "float32"});
    let launches = amd["launches"].as_array_mut().unwrap();
    let mid = launches[49]["args"][0].clone();
    assert_eq!(launches[50]["args"][1], mid, "kernel 50 reads kernel 49's output");
    launches[50]["args"][1] = view(b1);
    launches.insert(50, serde_json::json!({"kind": "copy", "dst": view(b1), "src": mid}));
    let input = launches[0]["args"][1].clone();
    launches[0]["args"][1] = view(b0);
    launches.insert(0, serde_json::json!({"kind": "copy", "dst": view(b0), "src": input}));
    std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    let tmp = dir.join("trace.json");
    let d = dir.to_string_lossy().to_string();
    let out = hcq(&[
        "run",
        &d,
        "--device",
        "AMD:SIM",
        "--check",
        "--json",
        "--iters",
        "3",
        "--profile",
        tmp.to_str().unwrap(),
    ]);
    let trace = std::fs::read_to_string(&tmp).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", text(&out));
    let j = last_json(&out);
    assert_eq!(j["outputs_ok"], true);
    assert_eq!(j["kernels_per_call"], 100, "{j}");
    let t: serde_json::Value = serde_json::from_str(&trace).unwrap();
    let copies = t["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "copy").count();
    assert_eq!(copies, 2 * 4, "2 copies x (the first call + 3 timed calls)");
}
