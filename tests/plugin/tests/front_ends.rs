//! The COUNT device kind, registered from outside the front door, seen and run by the Rust
//! front door and the command line (`hcq-count`, the `hcq` CLI with COUNT registered). The C
//! ABI and the Python package are driven by `tools/test_plugin.sh` over the `hcq-count-capi`
//! library.

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    hcq_testkit::example(name)
}

/// The front door opens COUNT by name in any case once it is registered, lists it, and runs a
/// bundle on it exactly; every call's kernels are counted, so the launches are the COUNT
/// backend's and not another device's.
#[test]
fn the_rust_front_door_runs_a_bundle_on_a_registered_kind() {
    hcq_plugin_count::register();
    let reports = hcq_runtime::devices();
    let count = reports.iter().find(|r| r.name == "COUNT").expect("COUNT in the device list");
    assert!(count.result.is_ok(), "{:?}", count.result);
    let dev = hcq_runtime::open("count:0").unwrap();
    assert_eq!(dev.name(), "COUNT");
    let mut m = dev.load(example("mlp").as_path()).unwrap();
    let k = m.kernels_per_call() as u64;
    assert!(k > 0);
    let before = hcq_plugin_count::launches();
    for _ in 0..3 {
        m.run().unwrap();
    }
    m.submit().unwrap();
    m.wait(None).unwrap();
    // other tests of this binary may run COUNT models at the same time: at least ours
    assert!(
        hcq_plugin_count::launches() >= before + 4 * k,
        "{} launches, {before} before",
        hcq_plugin_count::launches()
    );
    assert!(m.check().unwrap().ok);
    // what COUNT does not do is refused naming it (the plug-in's honest defaults)
    let n = m.inputs()[0].nbytes as usize;
    let mut buf = vec![0u8; n + 64];
    let at = (buf.as_ptr() as usize).next_multiple_of(16) - buf.as_ptr() as usize;
    // SAFETY: refused before anything is bound (COUNT binds no caller memory).
    let e = unsafe { m.bind_input_at(0, buf[at..].as_mut_ptr(), n) }.unwrap_err().to_string();
    assert!(e.contains("binding caller memory") && e.contains("COUNT"), "{e}");
    let e = hcq_runtime::open_with("COUNT", hcq_runtime::Options { capture_rd: true, ..Default::default() })
        .unwrap_err()
        .to_string();
    assert!(e.contains(".rd capture") && e.contains("COUNT"), "{e}");
}

fn hcq_count(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hcq-count")).args(args).output().unwrap()
}

/// `hcq-count devices` lists COUNT beside the built-in kinds, and `hcq-count run --device COUNT`
/// runs and checks a bundle on it, through the unmodified command line.
#[test]
fn the_command_line_lists_and_runs_the_registered_kind() {
    let out = hcq_count(&["devices"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.lines().any(|l| l.contains("COUNT") && l.contains("PASS count")), "{s}");
    assert!(s.lines().any(|l| l.contains("CPU") && l.contains("PASS")), "{s}");
    for bundle in ["mlp", "chain100"] {
        let b = example(bundle);
        let out = hcq_count(&["run", b.to_str().unwrap(), "--device", "count", "--check", "--iters", "5", "--json"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{bundle}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        let last: serde_like::Line = serde_like::parse(stdout.lines().last().unwrap());
        assert_eq!(last.device, "COUNT", "{stdout}");
        assert!(last.outputs_ok, "{stdout}");
        assert!(stdout.contains("device   COUNT (counting launches"), "{stdout}");
    }
    let out = hcq_count(&["run", example("mlp").to_str().unwrap(), "--device", "COUNT", "--timeout-ms", "5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("wait timeout") && err.contains("device COUNT"), "{err}");
}

/// The two fields of `hcq run --json`'s last line this test reads.
mod serde_like {
    pub struct Line {
        pub device: String,
        pub outputs_ok: bool,
    }
    pub fn parse(line: &str) -> Line {
        let field = |k: &str| {
            let at = line.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("no {k} in {line}")) + k.len() + 3;
            line[at..].split([',', '}']).next().unwrap().trim().trim_matches('"').to_string()
        };
        Line { device: field("device"), outputs_ok: field("outputs_ok") == "true" }
    }
}
