//! Running a CLI binary (`env!("CARGO_BIN_EXE_hcq")` of the calling test) from the repository
//! root, and reading the JSON line its `--json` prints last.

use std::ffi::OsStr;
use std::process::{Command, Output};

/// Run `exe ARGS...` in the repository root and wait for it.
pub fn run(exe: impl AsRef<OsStr>, args: &[&str]) -> Output {
    let exe = exe.as_ref();
    Command::new(exe)
        .args(args)
        .current_dir(crate::root())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.to_string_lossy()))
}

/// The last line of `out`'s stdout as JSON. Panics with the whole stdout when it is not JSON.
pub fn last_json(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {stdout}"))
}

/// stdout and stderr of `out`, one after the other (for assertion messages).
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_happens_in_the_root_and_its_last_line_is_read_as_json() {
        let out = run("sh", &["-c", "test -f Cargo.toml && test -d examples && echo noise && echo '{\"ok\": 1}'"]);
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(last_json(&out)["ok"], 1);
        let out = run("sh", &["-c", "echo not-json; echo oops >&2"]);
        assert_eq!(text(&out), "not-json\noops\n");
        assert!(std::panic::catch_unwind(|| last_json(&out)).is_err());
    }
}
