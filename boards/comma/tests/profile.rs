//! The comma profile agrees with the KGSL layer and the simulated Adreno 630, the device check
//! accepts that device and refuses others, the smoke IB runs through KGSL, and the installed
//! wrapper makes QCOM the default device without overriding the user's choice.

use hcq_board_comma::{COMMA, SMOKE_FENCE, SMOKE_VALUE, smoke};
use hcq_qcom::DeviceInfo;
use hcq_qcom::kgsl::Kgsl;
use hcq_sim_adreno::cp::{ComputeState, GpuMemory, ShaderCore};
use hcq_sim_adreno::kgsl::{SIM_CHIP_ID, SimKgsl};
use std::process::Command;
use std::sync::Arc;

struct NoDispatch;

impl ShaderCore for NoDispatch {
    fn dispatch(&mut self, _: &ComputeState<'_>, _: &mut dyn GpuMemory) -> hcq::Result<()> {
        Err(hcq::Error::Unsupported { what: "test: no dispatch", value: 0 })
    }
}

fn sim() -> Kgsl {
    Kgsl::with_backend(Arc::new(SimKgsl::new(Box::new(NoDispatch)))).unwrap()
}

const EXE: &str = env!("CARGO_BIN_EXE_hcq-comma");

/// The emulator to start `hcq-comma` with: none, or qemu-user when this test is itself a
/// cross-built binary under qemu-user (CI's aarch64 step), where the host kernel cannot
/// execute the aarch64 `hcq-comma` directly (ENOEXEC; glibc then hands it to `sh`, which
/// fails). `hcq-comma profile` always succeeds where it can run.
fn runner() -> &'static [&'static str] {
    static R: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    R.get_or_init(|| {
        let runs = Command::new(EXE).arg("profile").output().is_ok_and(|o| o.status.success());
        if !runs && cfg!(target_arch = "aarch64") { &["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"] } else { &[] }
    })
}

fn bin() -> Command {
    match runner() {
        [] => Command::new(EXE),
        [emu, args @ ..] => {
            let mut c = Command::new(emu);
            c.args(args).arg(EXE);
            c
        }
    }
}

#[test]
fn the_profile_is_the_adreno_630_that_kgsl_and_the_sim_describe() {
    assert_eq!(COMMA.chip_id, 0x0603_0001);
    assert_eq!(COMMA.chip_id, SIM_CHIP_ID, "the simulated KGSL is the comma's GPU");
    assert_eq!(COMMA.kgsl_node, "/dev/kgsl-3d0");
    assert_eq!(COMMA.kgsl_node, hcq_qcom::kgsl::DEFAULT_NODE);
    assert_eq!(COMMA.default_device, "QCOM");
    assert_eq!(COMMA.target, "aarch64-unknown-linux-gnu");
    let k = sim();
    assert_eq!(k.info().gmem_bytes, COMMA.gmem_bytes, "1 MiB of GMEM");
    assert!(COMMA.check_info(&k.info()).iter().all(|c| c.ok), "{:?}", COMMA.check_info(&k.info()));
    let j = COMMA.to_json();
    assert_eq!(j["chip_id"], "0x06030001");
    assert_eq!(j["default_device"], "QCOM");
}

#[test]
fn other_gpus_fail_the_required_checks_and_a_patch_level_is_a_note() {
    let ok = sim().info();
    let failing = |info: DeviceInfo| -> Vec<&'static str> {
        COMMA.check_info(&info).into_iter().filter(|c| !c.ok && c.required).map(|c| c.what).collect()
    };
    assert_eq!(failing(DeviceInfo { chip_id: 0x0601_0500, ..ok }), ["Adreno chip (core.major.minor)"], "a615");
    assert_eq!(failing(DeviceInfo { gmem_bytes: 512 << 10, ..ok }), ["GMEM bytes"]);
    let patch = COMMA.check_info(&DeviceInfo { chip_id: 0x0603_0002, ..ok });
    assert!(patch.iter().any(|c| c.what == "chip patch level" && !c.ok && !c.required));
    assert!(patch.iter().filter(|c| c.required).all(|c| c.ok));
}

#[test]
fn the_smoke_ib_runs_through_kgsl_and_writes_both_values() {
    let k = sim();
    let s = smoke(&k, 1000).unwrap();
    assert_eq!((s.written, s.fence), (SMOKE_VALUE, SMOKE_FENCE));
    assert_eq!(s.timestamp, 1, "the first submission of a new context");
    let s2 = smoke(&k, 1000).unwrap();
    assert_eq!(s2.written, SMOKE_VALUE, "a second run on the same device works too");
}

#[test]
fn check_passes_on_the_simulated_kgsl_and_names_a_missing_node() {
    let out = bin().args(["check", "--sim"]).output().unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{so}{}", String::from_utf8_lossy(&out.stderr));
    assert!(so.contains("smoke IB retired") && so.contains("DEV=QCOM"), "{so}");
    let out = bin().args(["check", "--node", "/nonexistent/kgsl-3d0"]).output().unwrap();
    assert!(!out.status.success());
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(se.contains("/nonexistent/kgsl-3d0") && se.contains("missing"), "{se}");
}

#[test]
fn the_wrapper_defaults_dev_to_qcom_and_keeps_the_users_choice() {
    let dir = std::env::temp_dir().join(format!("hcq-comma-wrapper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let real = dir.join("hcq.bin");
    std::fs::write(&real, "#!/bin/sh\necho \"DEV=$DEV args=$*\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = bin().args(["wrapper", "--real", real.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    let wrapper = dir.join("hcq");
    std::fs::write(&wrapper, &out.stdout).unwrap();
    let run = |dev: Option<&str>| {
        let mut c = Command::new("sh");
        c.arg(&wrapper).args(["run", "b c"]).env_remove("DEV");
        if let Some(d) = dev {
            c.env("DEV", d);
        }
        let o = c.env("PATH", "/usr/bin:/bin").output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    };
    assert_eq!(run(None).trim(), "DEV=QCOM args=run b c");
    assert_eq!(run(Some("CPU")).trim(), "DEV=CPU args=run b c", "the user's DEV wins");
    let bad = bin().args(["wrapper", "--real", "/x'y"]).output().unwrap();
    assert!(!bad.status.success());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_profile_command_prints_what_the_deploy_script_reads() {
    let out = bin().args(["profile", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["install_dir"], "/data/hcq");
    assert_eq!(v["ssh_user"], "comma");
    assert_eq!(v["kgsl_node"], "/dev/kgsl-3d0");
}

#[test]
fn deploy_copies_the_cli_the_wrapper_and_the_examples_to_the_profile_dir() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy.sh");
    let deploy = |args: &[&str]| {
        Command::new("bash")
            .arg(&script)
            .args(args)
            .env("HCQ_COMMA", EXE)
            .env("HCQ_COMMA_RUNNER", runner().join(" "))
            .env_remove("SSH_USER")
            .output()
            .unwrap()
    };
    let out = deploy(&["10.0.0.5", "--dry-run", "--no-build"]);
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{so}{}", String::from_utf8_lossy(&out.stderr));
    for line in [
        "+ ssh comma@10.0.0.5 mkdir -p '/data/hcq/bin' '/data/hcq/examples'",
        "+ scp target/aarch64-unknown-linux-gnu/release/hcq comma@10.0.0.5:/data/hcq/bin/hcq.bin",
        "+ scp -r examples/. comma@10.0.0.5:/data/hcq/examples/",
        "+ ssh comma@10.0.0.5 '/data/hcq/bin/hcq-comma' check",
    ] {
        assert!(so.lines().any(|l| l == line), "missing `{line}` in\n{so}");
    }
    let built = deploy(&["10.0.0.5", "--dry-run"]);
    assert!(String::from_utf8_lossy(&built.stdout).lines().any(|l| l == "+ cargo comma-build"));
    assert_eq!(deploy(&[]).status.code(), Some(2), "no host is a usage error");
    assert_eq!(deploy(&["h", "--bogus"]).status.code(), Some(2));
}
