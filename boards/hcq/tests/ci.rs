//! CI honesty: under `CI=true` a check that cannot run fails CI instead of printing `SKIP` and
//! passing. Covers the helper `.ci/run` uses for its Miri step (`.ci/lib.sh`, `cannot_run`) and
//! the exporter test `tools/test_export.sh`; elsewhere both still print `SKIP` and go on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bash(script: &str, ci: Option<&str>, envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.args(["-c", script]).current_dir(root()).env_remove("CI");
    if let Some(v) = ci {
        c.env("CI", v);
    }
    c.envs(envs.iter().copied());
    c.output().expect("run bash")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
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
