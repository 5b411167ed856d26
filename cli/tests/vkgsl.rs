//! hcq's own `QCOM` device (the real KGSL path: rustix ioctls through libc, mmap, uapi layouts)
//! on the virtual `/dev/kgsl-3d0` of `libhcq_vkgsl.so`, through `hcq vkgsl -- ...`: every
//! shipped bundle with Adreno 630 objects passes its check, a GPU fault is reported as KGSL
//! reports one, and a missing library is a clear error. The same for `MSM+QCOM` (the real MSM
//! DRM path: DRM and MSM ioctls, GEM mmap offsets, the uapi layouts) on the library's virtual
//! render node `/dev/dri/renderD128`, with the same outputs as on KGSL.
//!
//! The library is `$HCQ_VKGSL_LIB` when set, else built once with
//! `cargo build --release -p hcq-vkgsl --lib` into `target/vkgsl-test` (`hcq_testkit::vkgsl_lib`).
//! A build that fails fails the test.

use hcq_testkit::root;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lib() -> &'static Path {
    hcq_testkit::vkgsl_lib()
}

/// `hcq vkgsl -- hcq ARGS...` with the library at `$HCQ_VKGSL_LIB`, plus `env`.
fn under_vkgsl(args: &[&str], env: &[(&str, &str)]) -> Output {
    let hcq = env!("CARGO_BIN_EXE_hcq");
    let mut c = Command::new(hcq);
    c.arg("vkgsl").arg("--").arg(hcq).args(args).env("HCQ_VKGSL_LIB", lib()).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run hcq vkgsl")
}

fn a630_examples() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            std::fs::read_to_string(p.join("manifest.json")).is_ok_and(|m| {
                let m: serde_json::Value = serde_json::from_str(&m).unwrap();
                let progs = m["programs"].as_array().unwrap();
                !progs.is_empty() && progs.iter().all(|p| p["objects"].get("adreno_a630").is_some())
            })
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_a630_example_passes_its_check_on_qcom_under_the_virtual_node() {
    let bundles = a630_examples();
    assert!(bundles.len() >= 4, "{bundles:?}");
    for dir in bundles {
        let d = dir.to_string_lossy();
        let out = under_vkgsl(&["run", &d, "--device", "QCOM", "--check", "--json", "--iters", "2"], &[]);
        let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{d}: {se}\n{so}");
        let j: serde_json::Value = serde_json::from_str(so.lines().last().unwrap_or_default()).unwrap();
        assert_eq!(j["outputs_ok"], true, "{d}");
        assert_eq!((j["device"].as_str(), j["arch"].as_str()), (Some("QCOM"), Some("adreno_a630")), "{d}");
        assert!(so.contains("chip 0x06030001"), "the QCOM device opened the virtual A630: {so}");
    }
}

#[test]
fn every_a630_example_gives_the_kgsl_outputs_on_msm_qcom_under_the_virtual_render_node() {
    let bundles = a630_examples();
    assert!(bundles.len() >= 4, "{bundles:?}");
    for b in bundles {
        let d = b.to_string_lossy();
        let mut outs = Vec::new();
        for dev in ["MSM+QCOM", "KGSL+QCOM"] {
            // `--check` compares the outputs with the bundle's expected bytes; the JSON line
            // says which device ran and how far the outputs are from the expected ones (the
            // byte-for-byte comparison of the two interfaces is hal/qcom/tests/msm.rs's)
            let out = under_vkgsl(&["run", &d, "--device", dev, "--check", "--json", "--iters", "2"], &[]);
            let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "{d} on {dev}: {se}\n{so}");
            let j: serde_json::Value = serde_json::from_str(so.lines().last().unwrap_or_default()).unwrap();
            assert_eq!((j["outputs_ok"].as_bool(), j["device"].as_str()), (Some(true), Some(dev)), "{d}");
            outs.push(j["max_abs_diff"].clone());
            if dev == "MSM+QCOM" {
                // the node's DRM_IOCTL_VERSION and GET_PARAM answers, through the real MSM path
                assert!(
                    so.contains("(MSM DRM chip 0x06030001") && so.contains("MSM DRM 1.12.0"),
                    "the MSM path opened the virtual render node: {so}"
                );
            }
        }
        assert_eq!(outs[0], outs[1], "{d}: the same distance from the expected outputs on both interfaces");
    }
}

#[test]
fn a_hung_dispatch_on_the_msm_node_is_device_hung_with_the_fault() {
    let out = under_vkgsl(
        &["run", "examples/elementwise", "--device", "MSM+QCOM", "--iters", "1"],
        &[("HCQ_VKGSL_MAX_STEPS", "1")],
    );
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    let faults: Vec<&str> =
        e.lines().filter(|l| l.starts_with("hcq-vkgsl: GPU fault on the MSM render node")).collect();
    assert_eq!(faults.len(), 1, "one fault line: {e}");
    assert!(faults[0].contains("IB 0x") && faults[0].contains("step"), "{e}");
    assert!(e.contains("MSM+QCOM is hung"), "the run reports the hang: {e}");
}

#[test]
fn a_hung_dispatch_is_a_kgsl_fault_said_once_and_the_run_fails() {
    // One wave-instruction per dispatch: every kernel hits the step limit.
    let out = under_vkgsl(
        &["run", "examples/elementwise", "--device", "QCOM", "--iters", "1"],
        &[("HCQ_VKGSL_MAX_STEPS", "1")],
    );
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    let faults: Vec<&str> = e.lines().filter(|l| l.starts_with("hcq-vkgsl: GPU fault")).collect();
    assert_eq!(faults.len(), 1, "one fault line: {e}");
    assert!(
        faults[0].contains("IB 0x")
            && faults[0].contains("word")
            && faults[0].contains("step")
            && faults[0].contains("after 0 finished dispatches"),
        "{e}"
    );
    assert!(e.contains("hung") || e.contains("Hung") || e.contains("fault"), "the run reports the hang: {e}");
}

/// `HCQ_VKGSL_SHADER=off` (host-cost measurements): the command processor still runs every packet,
/// so calls complete and retire, but no shader runs, so the outputs are not computed and the
/// check fails; one stderr line says so. (With the interpreter the same run passes: the test above.)
#[test]
fn with_the_shader_core_off_calls_retire_but_compute_nothing() {
    // the KGSL node and the MSM render node alike
    for dev in ["QCOM", "MSM+QCOM"] {
        let out = under_vkgsl(
            &["run", "examples/elementwise", "--device", dev, "--iters", "3", "--check"],
            &[("HCQ_VKGSL_SHADER", "off")],
        );
        let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(e.matches("HCQ_VKGSL_SHADER=off").count(), 1, "{dev}: said once: {e}");
        assert!(!e.contains("GPU fault"), "{dev}: no fault: {e}");
        assert!(o.contains("calls    3"), "{dev}: three calls completed: {o}");
        assert!(o.contains("check    FAIL"), "{dev}: nothing computed: {o}");
        assert_ne!(out.status.code(), Some(0));
    }
}

#[test]
fn a_missing_library_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_hcq"))
        .args(["vkgsl", "--", "true"])
        .env("HCQ_VKGSL_LIB", "/nonexistent/libhcq_vkgsl.so")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("cargo build --release -p hcq-vkgsl") && e.contains("/nonexistent"), "{e}");
}

/// `hcq virtual` (the same command) with the library: the AMD GPU's sysfs topology is there for
/// any program (`cat`, `ls`: open, opendir, stat through libc), and hcq's own `AMD` device (the
/// real KFD path: sysfs, /dev/kfd ioctls, render-node mmaps, the doorbell mapped from /dev/kfd)
/// passes every `examples/amd` bundle's check on the virtual gfx1100.
#[test]
fn hcq_virtual_serves_the_amd_gpu_and_every_amd_example_passes_on_it() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hcq"))
            .arg("virtual")
            .arg("--")
            .args(args)
            .env("HCQ_VKGSL_LIB", lib())
            .current_dir(root())
            .output()
            .expect("run hcq virtual");
        let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{args:?}: {e}\n{o}");
        o.into_owned()
    };
    let props = run(&["cat", "/sys/devices/virtual/kfd/kfd/topology/nodes/1/properties"]);
    assert!(props.contains("gfx_target_version 110000\n") && props.contains("drm_render_minor 129\n"), "{props}");
    let ips = run(&["ls", "/sys/class/drm/renderD129/device/ip_discovery/die/0"]);
    assert_eq!(ips.split_whitespace().collect::<Vec<_>>(), ["108", "11", "34", "41", "42", "43"], "{ips}");
    let hcq = env!("CARGO_BIN_EXE_hcq");
    for b in ["chain100", "convnet", "elementwise", "mlp", "wide"] {
        let d = format!("examples/amd/{b}");
        let o = run(&[hcq, "run", &d, "--device", "AMD", "--check", "--json", "--iters", "2"]);
        let j: serde_json::Value = serde_json::from_str(o.lines().last().unwrap_or_default()).unwrap();
        assert_eq!(j["outputs_ok"], true, "{d}: {o}");
        assert_eq!((j["device"].as_str(), j["arch"].as_str()), (Some("AMD"), Some("amd_gfx1100")), "{d}");
    }
}
