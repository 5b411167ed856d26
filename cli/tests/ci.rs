//! CI honesty: under `CI=true` a check that cannot run fails CI instead of printing `SKIP` and
//! passing. Covers the helper `.ci/run` uses for its Miri step (`.ci/lib.sh`, `cannot_run`) and
//! the exporter test `tools/test_export.sh`; elsewhere both still print `SKIP` and go on.
//!
//! CI's shape: each step's wall time and a closing table (also when a step fails), jobs run
//! beside a step (`ci_bg`/`ci_wait`), every install and release build once before the tests,
//! no step that repeats a test, and every check CI made before still made.

use hcq_testkit::cli::text;
use hcq_testkit::root;
use std::process::{Command, Output};

fn bash(script: &str, ci: Option<&str>, envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.args(["-c", script]).current_dir(root()).env_remove("CI");
    if let Some(v) = ci {
        c.env("CI", v);
    }
    c.envs(envs.iter().copied());
    c.output().expect("run bash")
}

#[test]
fn a_ci_step_that_cannot_run_fails_under_ci_and_skips_elsewhere() {
    let script = ". .ci/lib.sh; cannot_run 'no nightly here'; echo went-on";
    let o = bash(script, Some("true"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("FAIL: cannot run under CI=true: no nightly here"), "{}", text(&o));
    assert!(!text(&o).contains("went-on"));
    for ci in [None, Some("false")] {
        let o = bash(script, ci, &[]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("SKIP: no nightly here") && text(&o).contains("went-on"), "{}", text(&o));
    }
}

#[test]
fn the_miri_step_of_ci_uses_the_failing_helper() {
    let run = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(run.contains(". .ci/lib.sh"), ".ci/run sources the helper");
    let miri = &run[run.find("step \"Miri").expect("a Miri step")..];
    let miri = &miri[..miri.find("\nstep ").unwrap_or(miri.len())];
    assert!(miri.contains("cannot_run "), "the Miri step reports through cannot_run:\n{miri}");
    assert!(!run.contains("echo \"SKIP"), ".ci/run prints no SKIP of its own");
}

#[test]
fn the_exporter_test_fails_under_ci_when_it_cannot_run() {
    // no C compiler: the exporter cannot run (on a non-x86 host the architecture check says so)
    let env = [("CC", "/nonexistent/cc")];
    let o = bash("bash tools/test_export.sh", Some("true"), &env);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("FAIL: cannot run under CI=true"), "{}", text(&o));
    let o = bash("bash tools/test_export.sh", None, &env);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("SKIP: "), "{}", text(&o));
}

/// `.ci/run` with its comments dropped (the structural checks below look at what it runs).
fn ci_commands() -> String {
    let run = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    run.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n")
}

#[test]
fn every_step_prints_its_wall_time_and_a_table_closes_the_log_also_when_a_step_fails() {
    let script = "set -euo pipefail; . .ci/lib.sh; trap ci_finish EXIT; \
                  step 'first one'; sleep 1; step 'second one'; echo in-second; false; echo never";
    let o = bash(script, None, &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("=== first one (") && t.contains("--- first one: 1 s"), "{t}");
    assert!(t.contains("in-second") && !t.contains("never"), "{t}");
    let table = &t[t.find("=== step times").expect("a closing table")..];
    let row = |name: &str| {
        table.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("no row for {name}:\n{table}")).to_string()
    };
    let first = row("first one");
    let secs: u64 = first.split_whitespace().next().unwrap().parse().unwrap();
    assert!((1..5).contains(&secs), "{first}");
    assert!(first.contains(" ok "), "{first}");
    assert!(row("second one").contains("FAILED (exit 1)"), "{table}");
    assert!(row("total").trim_start().starts_with(|c: char| c.is_ascii_digit()), "{table}");

    // a passing run: every step ok, exit 0
    let o = bash("set -euo pipefail; . .ci/lib.sh; trap ci_finish EXIT; step a; step b", None, &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(!t.contains("FAILED") && t.matches(" ok ").count() == 2, "{t}");
}

#[test]
fn jobs_beside_a_step_run_side_by_side_get_rows_of_their_own_and_a_failing_one_fails_the_step() {
    let script = "set -euo pipefail; . .ci/lib.sh; trap ci_finish EXIT; step 'side by side'; \
                  ci_bg 'job a' bash -c 'sleep 2; echo out-a'; ci_bg 'job b' bash -c 'sleep 2; echo out-b'; ci_wait";
    let dir = std::env::temp_dir().join(format!("hcq-ci-test-{}", std::process::id()));
    let logs = dir.to_string_lossy().into_owned();
    let o = bash(script, None, &[("CI_LOG_DIR", &logs)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("out-a") && t.contains("out-b"), "the jobs' logs are printed: {t}");
    let table = &t[t.find("=== step times").unwrap()..];
    let secs = |name: &str| -> u64 {
        let l = table.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("no row {name}: {table}"));
        l.split_whitespace().next().unwrap().parse().unwrap()
    };
    assert!(secs("  | job a") >= 2 && secs("  | job b") >= 2, "{table}");
    // side by side: the step took about one job's time, not two
    assert!((2..4).contains(&secs("side by side")), "{table}");

    let script = "set -euo pipefail; . .ci/lib.sh; trap ci_finish EXIT; step 'with a failing job'; \
                  ci_bg 'good' true; ci_bg 'bad' bash -c 'echo why-bad; exit 3'; ci_wait; echo never";
    let o = bash(script, None, &[("CI_LOG_DIR", &logs)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("why-bad") && t.contains("FAIL: bad") && !t.contains("never"), "{t}");
    let table = &t[t.find("=== step times").unwrap()..];
    assert!(table.lines().any(|l| l.contains("FAILED (exit 3)") && l.ends_with("  | bad")), "{table}");
    assert!(table.lines().any(|l| l.contains(" ok ") && l.ends_with("  | good")), "{table}");
    assert!(table.lines().any(|l| l.contains("FAILED") && l.ends_with("with a failing job")), "{table}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ci_builds_and_installs_each_thing_once_before_the_tests_and_repeats_no_test() {
    let run = ci_commands();
    assert!(run.contains("trap ci_finish EXIT"), "the closing table is printed on every exit");
    // installs once: one rustup target step, one apt update, the aarch64 cross tools once
    assert_eq!(run.matches("rustup target add").count(), 1, "{run}");
    assert_eq!(run.matches("apt-get update").count(), 1, "{run}");
    assert_eq!(run.matches("gcc-aarch64-linux-gnu").count(), 1, "{run}");
    assert_eq!(run.matches("qemu-system-arm").count(), 1, "{run}");
    // release builds once, before the tests, with what the tests and tools use exported
    let release: Vec<&str> = run.lines().filter(|l| l.contains("cargo build --release")).collect();
    assert_eq!(release.len(), 1, "{release:?}");
    assert!(["hcq-cli", "hcq-vkgsl", "hcq-ffi"].iter().all(|p| release[0].contains(p)), "{release:?}");
    assert_eq!(run.lines().filter(|l| l.trim() == "cargo comma-build").count(), 1, "{run}");
    assert!(!run.contains("cargo run --release") && !run.contains("cargo run -q --release"), "no second release build");
    let tests = run.find("cargo test --workspace").expect("the README's test command");
    for before in ["cargo build --release", "\ncargo comma-build", "export HCQ_BIN=", "export HCQ_VKGSL_LIB="] {
        assert!(run.find(before).is_some_and(|i| i < tests), "{before} comes before cargo test");
    }
    let test_line = run.lines().find(|l| l.contains("cargo test --workspace")).unwrap();
    assert!(test_line.contains("HCQ_LIB="), "ffi/tests/c_example.rs uses the release libhcq.so: {test_line}");
    // no step repeats cli/tests/vkgsl.rs (every a630 bundle on KGSL+QCOM and MSM+QCOM)
    assert!(!run.contains("KGSL+QCOM") && !run.contains("MSM+QCOM"), "{run}");
    // each aarch64 test crate is built once
    assert_eq!(run.matches("--target aarch64-unknown-linux-gnu").count(), 1, "{run}");
    // rustdoc is checked
    assert!(run.contains("RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps"), "{run}");
}

#[test]
fn ci_keeps_every_check() {
    let run = ci_commands();
    for check in [
        "cargo fmt --all -- --check",
        "cargo fmt --manifest-path tests/fuzz/Cargo.toml -- --check",
        "cargo clippy --workspace --all-targets -- -D warnings",
        "cargo test --workspace",
        "--target aarch64-unknown-none --no-default-features --features alloc,defmt",
        "-p hcq-bundle -p hcq-runner --lib --target aarch64-unknown-none",
        "-p hcq-adreno --lib --target aarch64-unknown-none",
        "-p hcq-ir3 --lib --target aarch64-unknown-none",
        "-p hcq-rdna3 -p hcq-amd --lib --target aarch64-unknown-none",
        "--cfg loom",
        "miri test -p hcq --lib",
        "miri test -p hcq-bundle -p hcq-runner --lib",
        "cargo test -p hcq-cpu -p hcq-qcom -p hcq-adreno -p hcq-sim-adreno -p hcq-board-comma --target",
        "python -m pytest -q python/tests",
        "tools/build_wheels.sh",
        "tools/test_export.sh",
        "tools/soak.sh examples/mlp CPU",
        "tools/soak.sh examples/chain100 QCOM:SIM",
        "tools/test_qcom_capture.sh",
        "tools/tinygrad_on_vkgsl.sh",
        "TG_FLAGS=\"FLOAT16=1 IMAGE=1 NOLOCALS=1\"",
        "TG_VDEV=AMD bash tools/tinygrad_on_vkgsl.sh",
        "tools/test_amd_capture.sh",
        "tools/test_amd_stream_diff.sh",
        "libllvm19",
        "tools/test_plugin.sh",
        "cargo qemu-virt",
        "boards/qemu-virt/fault-check.sh",
        "boards/qemu-virt/defmt-check.sh",
        "cargo qemu-vfio",
        "tools/fuzz_smoke.sh",
        "hcq-comma\" check --sim",
        "--device QCOM:SIM --check",
    ] {
        assert!(run.contains(check), "CI no longer runs {check}");
    }
    // nothing that cannot run is skipped: the nightly steps report through cannot_run
    assert_eq!(run.matches("cannot_run ").count(), 2, "{run}");
}
