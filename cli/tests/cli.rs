//! The `hcq` command line end to end: every sample bundle runs and checks, from its directory
//! and from a packed file; malformed bundles give a clear error and never a panic.

use hcq_testkit::cli::last_json;
use hcq_testkit::root;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `hcq ARGS...` in the repository root.
fn hcq(args: &[&str]) -> Output {
    hcq_testkit::cli::run(env!("CARGO_BIN_EXE_hcq"), args)
}

const BUNDLES: [&str; 3] = ["mlp", "elementwise", "chain100"];

#[test]
fn every_sample_bundle_runs_and_matches_its_expected_outputs() {
    for b in BUNDLES {
        let dir = format!("examples/{b}");
        let out = hcq(&["run", &dir, "--check", "--json", "--iters", "20"]);
        assert!(out.status.success(), "{b}: {}", String::from_utf8_lossy(&out.stderr));
        let j = last_json(&out);
        assert_eq!(j["outputs_ok"], true, "{b}");
        assert_eq!(j["bundle"], b);
        assert_eq!(j["device"], "CPU");
        assert_eq!(j["calls"], 20);
        for k in ["call_us_median", "call_us_min", "max_abs_diff", "kernels_per_call"] {
            assert!(j[k].is_number(), "{b}: {k} missing");
        }
    }
}

/// `--json` reports the load (reading the bundle to a model ready to call) and the first call,
/// as positive times: `tools/bench_load.py` reads both, with `--iters 0` (no timed calls).
#[test]
fn json_reports_load_and_first_call_times() {
    for b in ["examples/chain100", "examples/mlp"] {
        let out = hcq(&["run", b, "--iters", "0", "--json"]);
        assert!(out.status.success(), "{b}: {}", String::from_utf8_lossy(&out.stderr));
        let j = last_json(&out);
        assert_eq!(j["calls"], 0, "{b}");
        for k in ["load_us", "first_call_us"] {
            let v = j[k].as_f64().unwrap_or_else(|| panic!("{b}: {k} missing or not a number: {j}"));
            assert!(v > 0.0 && v < 60e6, "{b}: {k} = {v} us");
        }
    }
}

#[test]
fn packed_files_run_like_their_directories() {
    let tmp = std::env::temp_dir().join(format!("hcq-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for b in BUNDLES {
        let file = tmp.join(format!("{b}.hcqb"));
        let out = hcq(&["pack", &format!("examples/{b}"), "-o", file.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let out = hcq(&["run", file.to_str().unwrap(), "--check", "--json", "--iters", "5"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let j = last_json(&out);
        assert_eq!(j["outputs_ok"], true);
        let kernels = if b == "chain100" {
            100
        } else if b == "mlp" {
            3
        } else {
            1
        };
        assert_eq!(j["kernels_per_call"], kernels);
        let out = hcq(&["inspect", file.to_str().unwrap()]);
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains(b));
    }
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn a_corrupted_expected_output_fails_the_check_with_exit_1() {
    let tmp = std::env::temp_dir().join(format!("hcq-cli-bad-{}", std::process::id()));
    let src = root().join("examples/elementwise");
    std::fs::create_dir_all(&tmp).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.join(e.file_name())).unwrap();
    }
    // change one expected float and fix up its sha256 in the manifest so only the values differ
    let exp = tmp.join("expected_000.bin");
    let mut bytes = std::fs::read(&exp).unwrap();
    let v = f32::from_le_bytes(bytes[0..4].try_into().unwrap()) + 0.5;
    bytes[0..4].copy_from_slice(&v.to_le_bytes());
    std::fs::write(&exp, &bytes).unwrap();
    let manifest = std::fs::read_to_string(tmp.join("manifest.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    if let Some(o) = m["outputs"][0].as_object_mut() {
        o.remove("sha256");
    }
    std::fs::write(tmp.join("manifest.json"), m.to_string()).unwrap();
    let out = hcq(&["run", tmp.to_str().unwrap(), "--check", "--json", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let j = last_json(&out);
    assert_eq!(j["outputs_ok"], false);
    assert!(j["max_abs_diff"].as_f64().unwrap() >= 0.49);
    std::fs::remove_dir_all(&tmp).ok();
}

/// `--check` never passes on nothing: a bundle whose outputs carry no expected bytes fails it
/// (exit 1, `outputs_ok` false) and says why, while a run without `--check` still succeeds.
#[test]
fn check_without_expected_outputs_fails_instead_of_passing_on_nothing() {
    let tmp = std::env::temp_dir().join(format!("hcq-cli-noexp-{}", std::process::id()));
    let src = root().join("examples/chain100");
    std::fs::create_dir_all(&tmp).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "expected_000.bin" {
            std::fs::copy(e.path(), tmp.join(e.file_name())).unwrap();
        }
    }
    let manifest = std::fs::read_to_string(tmp.join("manifest.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    if let Some(o) = m["outputs"][0].as_object_mut() {
        o.remove("file");
        o.remove("sha256");
    }
    std::fs::write(tmp.join("manifest.json"), m.to_string()).unwrap();
    let out = hcq(&["run", tmp.to_str().unwrap(), "--check", "--json", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to compare"));
    assert_eq!(last_json(&out)["outputs_ok"], false);
    let out = hcq(&["run", tmp.to_str().unwrap(), "--iters", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&tmp).ok();
}

/// Every entry of the malformed corpus (`tests/data/bundles-bad`, directories and `.hcqb`
/// files, `limit-*` sizes included) through `hcq run`: exit 2 (so no signal, abort or panic
/// exit), one line on stderr naming the bundle, nothing that looks like a panic.
#[test]
fn every_corpus_entry_is_refused_with_exit_2_and_one_line() {
    let bad = root().join("tests/data/bundles-bad");
    let mut n = 0;
    let mut limits = 0;
    for e in std::fs::read_dir(&bad).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name == "README.md" || name == "ok-control" {
            continue;
        }
        let out = hcq(&["run", p.to_str().unwrap(), "--check", "--iters", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: expected an error exit ({:?})\n{stderr}", out.status);
        assert!(stderr.starts_with("hcq: error: bundle "), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        if name.starts_with("limit-") {
            assert!(stderr.contains("exceeds the device limit of"), "{name}: {stderr}");
            limits += 1;
        }
        n += 1;
    }
    assert!(n >= 28, "the malformed corpus is there ({n} cases)");
    assert_eq!(
        limits, 8,
        "the three output limit cases, as directories and .hcqb files, the .hcqb 1.0 packing of one, and the 2^62 input with 16 stored bytes (.hcqb)"
    );
    let out = hcq(&["run", "no/such/bundle", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/bundle"));
}

#[test]
fn devices_lists_cpu_and_sim_and_unknown_devices_are_refused() {
    let out = hcq(&["devices"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.lines().any(|l| l.contains("CPU") && l.contains("PASS")), "{s}");
    assert!(s.lines().any(|l| l.contains("SIM") && l.contains("PASS")), "{s}");
    let out = hcq(&["run", "examples/mlp", "--device", "nope", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown device"));
    let out = hcq(&["run", "examples/mlp", "--device", "SIM:9", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(2), "the registry has SIM and SIM:1 only");
    let out = hcq(&["run", "examples/mlp", "--device", "CPU", "--timeout-ms", "5", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("wait timeout") && err.contains("device CPU"), "{err}");
}

/// Every bundle in examples/ runs on the SIM device (the host's CPU objects, one exec packet
/// per kernel through the simulated command processors) and matches its expected outputs.
#[test]
fn every_example_bundle_passes_check_on_sim() {
    let mut n = 0;
    for e in std::fs::read_dir(root().join("examples")).unwrap() {
        let dir = e.unwrap().path();
        if !dir.join("manifest.json").is_file() {
            continue;
        }
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let rel = format!("examples/{name}");
        for dev in ["SIM", "sim:1"] {
            let out =
                hcq(&["run", &rel, "--device", dev, "--check", "--json", "--iters", "3", "--timeout-ms", "30000"]);
            assert!(out.status.success(), "{name} on {dev}: {}", String::from_utf8_lossy(&out.stderr));
            let j = last_json(&out);
            assert_eq!(j["outputs_ok"], true, "{name} on {dev}");
            assert_eq!(j["device"], dev.to_uppercase());
            assert!(j["kernels_per_call"].as_u64().unwrap() >= 1);
        }
        n += 1;
    }
    assert!(n >= 4, "examples/ holds the four sample bundles, found {n}");
}

#[test]
fn profile_on_sim_records_every_call() {
    let tmp = std::env::temp_dir().join(format!("hcq-prof-sim-{}.json", std::process::id()));
    let out = hcq(&["run", "examples/mlp", "--device", "SIM", "--iters", "4", "--profile", tmp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tmp).unwrap()).unwrap();
    let evs = j["traceEvents"].as_array().unwrap();
    // one call event per call, the untimed first call's too (the front door records them; the
    // CLI adds none of its own)
    assert_eq!(evs.iter().filter(|e| e["cat"] == "call").count(), 5);
    std::fs::remove_file(&tmp).ok();
}

/// `--profile` on QCOM:SIM: every dispatch bracketed by always-on-counter timestamps, one
/// `program` event per kernel per call (the simulated CP's model clock: durations grow with the
/// work-groups a dispatch runs), in launch order and not overlapping.
#[test]
fn profile_on_qcom_sim_records_every_dispatch_from_gpu_timestamps() {
    let tmp = std::env::temp_dir().join(format!("hcq-prof-qcom-{}.json", std::process::id()));
    let out = hcq(&["run", "examples/mlp", "--device", "QCOM:SIM", "--iters", "2", "--profile", tmp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tmp).unwrap()).unwrap();
    let evs = j["traceEvents"].as_array().unwrap();
    let programs: Vec<_> = evs.iter().filter(|e| e["cat"] == "program").collect();
    assert_eq!(programs.len(), 9, "3 kernels x (the first call + 2 timed calls)");
    assert!(programs.iter().all(|e| e["dur"].as_f64().unwrap() > 0.0), "every dispatch takes device time");
    let ts: Vec<f64> = programs.iter().map(|e| e["ts"].as_f64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "dispatches in launch order: {ts:?}");
    assert_eq!(evs.iter().filter(|e| e["cat"] == "call").count(), 3, "the first call + 2 timed calls");
    assert!(String::from_utf8_lossy(&out.stdout).contains("r_8_64_32"), "the summary names the kernels");
    std::fs::remove_file(&tmp).ok();
}

/// On `QCOM:SIM` the kernel events (device clock) are aligned to the call events (host clock):
/// every kernel lies inside its call's event in the trace (before: the second call's kernels
/// were drawn at 61 µs, the call at 9.7 ms), the untimed first call's too.
#[test]
fn profile_on_qcom_sim_draws_every_kernel_inside_its_call() {
    let tmp = std::env::temp_dir().join(format!("hcq-prof-qcom-align-{}.json", std::process::id()));
    let out = hcq(&["run", "examples/mlp", "--device", "QCOM:SIM", "--iters", "3", "--profile", tmp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tmp).unwrap()).unwrap();
    std::fs::remove_file(&tmp).ok();
    let evs = j["traceEvents"].as_array().unwrap();
    let span = |e: &serde_json::Value| {
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap())
    };
    let mut calls: Vec<(f64, f64)> = evs.iter().filter(|e| e["cat"] == "call").map(span).collect();
    calls.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(calls.len(), 4, "the first call + 3 timed calls");
    let programs: Vec<(f64, f64)> = evs.iter().filter(|e| e["cat"] == "program").map(span).collect();
    assert_eq!(programs.len(), 12, "3 kernels x (the first call + 3 timed calls)");
    let mut per_call = vec![0; calls.len()];
    for (i, &(s, e)) in programs.iter().enumerate() {
        // 2 ns of slack: `ts` and `dur` are each rounded to 1 ns in the trace
        match calls.iter().position(|&(cs, ce)| cs - 0.002 <= s && e <= ce + 0.002) {
            Some(c) => per_call[c] += 1,
            None => panic!("kernel {i} [{s}, {e}] µs lies in no call: {calls:?}"),
        }
    }
    assert_eq!(per_call, [3, 3, 3, 3], "each call holds its three kernels");
}

#[test]
fn profile_writes_a_perfetto_trace_with_every_kernel() {
    let tmp = std::env::temp_dir().join(format!("hcq-prof-{}.json", std::process::id()));
    let out = hcq(&["run", "examples/mlp", "--iters", "3", "--profile", tmp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tmp).unwrap()).unwrap();
    let evs = j["traceEvents"].as_array().unwrap();
    let programs: Vec<_> = evs.iter().filter(|e| e["cat"] == "program").collect();
    assert_eq!(programs.len(), 12, "3 kernels x (the first call + 3 timed calls)");
    assert!(programs.iter().all(|e| e["dur"].as_f64().unwrap() >= 0.0));
    assert_eq!(evs.iter().filter(|e| e["cat"] == "call").count(), 4, "the first call + 3 timed calls");
    assert_eq!(evs.iter().filter(|e| e["cat"] == "alloc").count(), 9, "one per mlp buffer");
    std::fs::remove_file(&tmp).ok();
}

/// `--iters u64::MAX` (before: a capacity-overflow panic) runs calls in bounded memory: still
/// running after a few seconds, resident memory flat; a count past u64 is a usage error.
#[test]
fn the_largest_iteration_count_runs_in_bounded_memory_without_panicking() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hcq"))
        .args(["run", "examples/elementwise", "--iters", "18446744073709551615"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hcq");
    let rss_kib = |pid: u32| -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let early = rss_kib(child.id());
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let late = rss_kib(child.id());
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().ok();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(still_running, "hcq stopped early: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    if let (Some(a), Some(b)) = (early, late) {
        assert!(b < a + 8 * 1024, "resident memory grew from {a} KiB to {b} KiB while calling");
    }
    let out = hcq(&["run", "examples/elementwise", "--iters", "18446744073709551616"]);
    assert_eq!(out.status.code(), Some(2), "a count past u64 is a usage error");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

/// Output into a closed pipe (`hcq inspect ... | head -1`; before: a panic, exit 101) ends
/// quietly with the command's own status, for every command that prints.
#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    let cases: [&[&str]; 4] = [
        &["inspect", "examples/chain100", "--launches", "1000"],
        &["devices"],
        &["run", "examples/elementwise", "--iters", "2", "--json", "--check"],
        &["run", "tests/data/bundles-bad/limit-output-2p63", "--iters", "1"],
    ];
    for args in cases {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader); // every write to `writer` now fails with EPIPE
        let out = Command::new(env!("CARGO_BIN_EXE_hcq"))
            .args(args)
            .current_dir(root())
            .stdout(writer)
            .output()
            .expect("run hcq");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = if args.iter().any(|a| a.contains("bundles-bad")) { 2 } else { 0 };
        assert_eq!(out.status.code(), Some(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        if want == 0 {
            assert!(stderr.is_empty(), "{args:?}: quiet, but said {stderr}");
        }
    }
}

/// A `.hcqb` larger than the memory the process can get (a sparse file of 2^62 bytes, or at
/// least 2^47, past the x86-64 user address space, so no overcommit setting can grant it) is an
/// error with exit 2 naming the allocation (before: `read bundle file failed: os error 0`).
#[test]
fn a_packed_file_too_large_for_memory_is_an_error_not_an_abort() {
    // tmpfs takes sparse files up to 2^63 - 1 bytes; ext4 stops at 16 TiB
    let dir = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let path = dir.join(format!("hcq-huge-{}.hcqb", std::process::id()));
    let f = std::fs::File::create(&path).unwrap();
    let size = [1u64 << 62, 1 << 50, 1 << 47].into_iter().find(|&n| f.set_len(n).is_ok());
    drop(f);
    assert!(size.is_some(), "{} cannot hold a sparse file of 2^47 bytes", dir.display());
    for cmd in ["run", "inspect"] {
        let out = hcq(&[cmd, path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("allocation of") && stderr.lines().count() == 1, "{cmd}: {stderr}");
    }
    std::fs::remove_file(&path).ok();
}

/// `hcq run` opens devices through the front door: `$DEV` in tinygrad's syntax picks the
/// device when `--device` is absent, and `QCOM:SIM` stays the simulated device (it was read as
/// `QCOM` with a renderer `SIM` before).
#[test]
fn dev_picks_the_device_through_the_front_door() {
    let run = |dev: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_hcq"))
            .args(["run", "examples/mlp", "--check", "--json", "--iters", "1"])
            .env("DEV", dev)
            .current_dir(root())
            .output()
            .expect("run hcq");
        assert!(out.status.success(), "DEV={dev}: {}", String::from_utf8_lossy(&out.stderr));
        last_json(&out)
    };
    for (dev, name) in [("qcom:sim", "QCOM:SIM"), ("sim", "SIM"), ("cpu", "CPU")] {
        let j = run(dev);
        assert_eq!(j["device"], name, "DEV={dev}");
        assert_eq!(j["outputs_ok"], true, "DEV={dev}");
    }
}

/// `hcq ARGS` under an address-space limit of `limit_kib` (`ulimit -v`, i.e. RLIMIT_AS, set by
/// the shell that then execs hcq) and a wall-clock deadline: the output, or a failure naming
/// the arguments when hcq was still running at the deadline (it is killed).
fn hcq_limited(args: &[&str], limit_kib: u64, secs: u64) -> Output {
    use std::process::Stdio;
    let bin = env!("CARGO_BIN_EXE_hcq");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib} && exec \"$0\" \"$@\""))
        .arg(bin)
        .args(args)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hcq under sh");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("hcq {args:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// 2 GB of address space, as the GPU corpus must be refused within.
const LIMIT_2G_KIB: u64 = 2 << 20;

/// Every entry of the GPU malformed-input corpus (`tests/data/bundles-gpu-bad`, made by its
/// `generate.py` from a one-program cut of examples/mlp) through `hcq run --device QCOM:SIM`
/// under a 2 GB address-space limit: exit 2 and one line naming the bundle, within seconds,
/// nothing that looks like a panic. Before: `consts.kernarg_alloc_size` 0xF0000000 allocated ~8 GB
/// (abort, exit 134), `stack_bytes` and the other sizes were not bounded, metadata that
/// contradicts itself or the blob ran, and garbage or all-zero shaders reached the simulated GPU.
/// The control entry runs under the same limit (so the limit is not what refuses the others).
#[test]
fn every_gpu_corpus_entry_is_refused_within_2gb_with_exit_2_and_one_line() {
    let dir = root().join("tests/data/bundles-gpu-bad");
    let control = ["run", "tests/data/bundles-gpu-bad/ok-gpu-control", "--device", "QCOM:SIM", "--iters", "1"];
    let out = hcq_limited(&control, LIMIT_2G_KIB, 30);
    assert!(out.status.success(), "the control runs: {}", String::from_utf8_lossy(&out.stderr));
    let mut n = 0;
    let t = std::time::Instant::now();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n != "ok-gpu-control" && dir.join(n).is_dir())
        .collect();
    names.sort();
    for name in names {
        let p = format!("tests/data/bundles-gpu-bad/{name}");
        let out = hcq_limited(&["run", &p, "--device", "QCOM:SIM", "--check", "--iters", "1"], LIMIT_2G_KIB, 20);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: expected an error exit ({:?})\n{stderr}", out.status);
        assert!(stderr.starts_with("hcq: error: bundle "), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        n += 1;
    }
    assert!(n >= 100, "the GPU corpus is there ({n} cases)");
    assert!(t.elapsed().as_secs() < 120, "{n} cases took {:?}", t.elapsed());
}

/// Reading hostile files (before: `hcq inspect /dev/zero` grew to 4 GB in 5 s, a FIFO in a
/// bundle directory blocked forever in open, a symbolic link out of the directory was read):
/// only regular files are read, and links must stay inside the bundle directory. A link inside
/// the directory still works.
#[test]
fn devices_fifos_and_links_out_of_the_bundle_are_refused() {
    let out = hcq_limited(&["inspect", "/dev/zero"], LIMIT_2G_KIB, 10);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a regular file") && stderr.lines().count() == 1, "{stderr}");
    let tmp = std::env::temp_dir().join(format!("hcq-hostile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let copy = |name: &str| {
        let d = tmp.join(name);
        std::fs::create_dir_all(&d).unwrap();
        for e in std::fs::read_dir(root().join("examples/mlp")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), d.join(e.file_name())).unwrap();
        }
        d
    };
    // A FIFO where a buffer file belongs.
    let fifo = copy("fifo");
    std::fs::remove_file(fifo.join("buf_000.bin")).unwrap();
    let st = Command::new("mkfifo").arg(fifo.join("buf_000.bin")).status().expect("mkfifo");
    assert!(st.success());
    for cmd in ["inspect", "run"] {
        let out = hcq_limited(&[cmd, fifo.to_str().unwrap()], LIMIT_2G_KIB, 10);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("not a regular file") && stderr.contains("buf_000.bin"), "{cmd}: {stderr}");
    }
    let out = hcq_limited(&["inspect", fifo.join("buf_000.bin").to_str().unwrap()], LIMIT_2G_KIB, 10);
    assert_eq!(out.status.code(), Some(2), "a FIFO given as the .hcqb: {}", String::from_utf8_lossy(&out.stderr));
    // A link out of the directory, to a file with exactly the bytes the manifest wants.
    let out_link = copy("link-out");
    let outside = tmp.join("outside.bin");
    std::fs::rename(out_link.join("buf_000.bin"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, out_link.join("buf_000.bin")).unwrap();
    let out = hcq_limited(&["run", out_link.to_str().unwrap(), "--iters", "1"], LIMIT_2G_KIB, 30);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("a symbolic link out of the bundle directory"), "{stderr}");
    // The same link relative, through `..`.
    std::fs::remove_file(out_link.join("buf_000.bin")).unwrap();
    std::os::unix::fs::symlink("../outside.bin", out_link.join("buf_000.bin")).unwrap();
    let out = hcq_limited(&["inspect", out_link.to_str().unwrap()], LIMIT_2G_KIB, 30);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    // A link inside the directory is read.
    let inside = copy("link-in");
    std::fs::rename(inside.join("buf_000.bin"), inside.join("data.bin")).unwrap();
    std::os::unix::fs::symlink("data.bin", inside.join("buf_000.bin")).unwrap();
    let out = hcq_limited(&["run", inside.to_str().unwrap(), "--check", "--iters", "1"], LIMIT_2G_KIB, 30);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&tmp).ok();
}

/// `hcq inspect --disasm` lists a bundle's gfx1100 code objects (the `amd` graph of
/// examples/amd/mlp) as llvm-objdump does, and the CPU device still runs the bundle's graph for
/// any target beside it; a code object with a broken ELF header makes the listing fail, naming
/// the program.
#[test]
fn inspect_disasm_lists_the_amd_graphs_code_objects() {
    let dir = root().join("examples/amd/mlp");
    let out = hcq(&["inspect", dir.to_str().unwrap(), "--disasm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("amd (target amd, expected outputs from x86_64): 3 programs"), "{text}");
    assert_eq!(text.matches("(gfx1100):").count(), 3, "{text}");
    assert!(text.contains("s_endpgm") && text.contains("global_load_b"), "{text}");
    let out = hcq(&["run", dir.to_str().unwrap(), "--check"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let tmp = std::env::temp_dir().join(format!("hcq-cli-amd-bad-co-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, tmp.join(p.file_name().unwrap())).unwrap();
    }
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(tmp.join("manifest.json")).unwrap()).unwrap();
    let obj = &m["graphs"][1]["programs"][0]["objects"]["amd_gfx1100"];
    let co = tmp.join(obj["file"].as_str().unwrap());
    let mut bytes = std::fs::read(&co).unwrap();
    bytes[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes()); // e_phoff far outside the file
    bytes[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes()); // e_shoff too
    std::fs::write(&co, &bytes).unwrap();
    let mut m = m;
    if let Some(o) = m["graphs"][1]["programs"][0]["objects"]["amd_gfx1100"].as_object_mut() {
        o.remove("sha256");
    }
    std::fs::write(tmp.join("manifest.json"), serde_json::to_vec(&m).unwrap()).unwrap();
    let out = hcq(&["inspect", tmp.to_str().unwrap(), "--disasm"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a broken code object listed without error");
    assert!(err.contains("gfx1100 code object"), "{err}");
    std::fs::remove_dir_all(&tmp).ok();
}

/// The AMD kind is one registry entry (hcq-kfd's `AmdKind`): `hcq devices` lists it, and where
/// this host has no `/dev/kfd` the line and a run on it name the node instead of failing
/// silently or panicking.
#[test]
fn devices_lists_amd_and_a_missing_kfd_is_named() {
    let out = hcq(&["devices"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line =
        text.lines().find(|l| l.trim_start().starts_with("AMD ")).unwrap_or_else(|| panic!("no AMD line:\n{text}"));
    if Path::new("/dev/kfd").exists() {
        assert!(line.contains("PASS") || line.contains("FAIL"), "{line}");
        return;
    }
    assert!(line.contains("FAIL") && line.contains("/dev/kfd"), "{line}");
    let out = hcq(&["run", "examples/amd/mlp", "--device", "KFD+AMD", "--check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("/dev/kfd"), "{err}");
}
