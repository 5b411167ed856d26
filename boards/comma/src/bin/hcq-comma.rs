//! `hcq-comma`: the comma three / 3X board tool.
//!
//! ```text
//! hcq-comma profile [--json]          the board profile (what the deploy script installs where)
//! hcq-comma check [--sim] [--node P]  open KGSL, compare the GPU with the profile, run one IB
//! hcq-comma wrapper --real PATH       print the `hcq` wrapper that makes QCOM the default device
//! ```
//!
//! `check` exits non-zero when the node is missing or not accessible, the GPU is not the
//! profile's, or the smoke IB does not run; `--sim` runs the same path on the simulated KGSL
//! (no board needed).

use clap::{Parser, Subcommand};
use hcq_board_comma::{COMMA, smoke};
use hcq_qcom::kgsl::Kgsl;
#[cfg(feature = "sim")]
use hcq_sim_adreno::cp::{ComputeState, GpuMemory, ShaderCore};
#[cfg(feature = "sim")]
use hcq_sim_adreno::kgsl::SimKgsl;
use std::process::ExitCode;
#[cfg(feature = "sim")]
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "hcq-comma",
    about = "comma three / 3X board profile: check the GPU, print the profile and the hcq wrapper"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print the board profile.
    Profile {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Open KGSL, compare the GPU with the profile and run one IB through it.
    Check {
        /// Use the simulated KGSL instead of the node.
        #[arg(long)]
        sim: bool,
        /// The KGSL node (default: the profile's).
        #[arg(long)]
        node: Option<String>,
        /// How long to wait for the IB, in milliseconds.
        #[arg(long, default_value_t = 2000)]
        timeout_ms: u32,
    },
    /// Print the `hcq` wrapper script for the device.
    Wrapper {
        /// Path of the real `hcq` binary on the device.
        #[arg(long)]
        real: String,
    },
}

/// The smoke IB has no dispatch; one would be a bug.
#[cfg(feature = "sim")]
struct NoDispatch;

#[cfg(feature = "sim")]
impl ShaderCore for NoDispatch {
    fn dispatch(&mut self, _: &ComputeState<'_>, _: &mut dyn GpuMemory) -> hcq::Result<()> {
        Err(hcq::Error::Unsupported { what: "hcq-comma: the smoke IB dispatches nothing", value: 0 })
    }
}

/// The simulated KGSL for `check --sim`.
#[cfg(feature = "sim")]
fn sim_kgsl() -> Result<hcq::Result<Kgsl>, String> {
    Ok(Kgsl::with_backend(Arc::new(SimKgsl::new(Box::new(NoDispatch)))))
}

/// Built without the simulator: `--sim` says so.
#[cfg(not(feature = "sim"))]
fn sim_kgsl() -> Result<hcq::Result<Kgsl>, String> {
    Err("--sim: this hcq-comma is built without the simulated Adreno (cargo feature `sim`)".into())
}

fn check(sim: bool, node: Option<String>, timeout_ms: u32) -> Result<(), String> {
    let node = node.unwrap_or_else(|| COMMA.kgsl_node.to_string());
    let (kgsl, source) =
        if sim { (sim_kgsl()?, "simulated KGSL".to_string()) } else { (Kgsl::open_path(&node), node.clone()) };
    let kgsl = kgsl.map_err(|e| format!("{source}: {e}"))?;
    let info = kgsl.info();
    let (maj, min) = kgsl.version();
    println!("board    {} ({}, {})", COMMA.name, COMMA.soc, COMMA.gpu);
    println!("kgsl     {source}: driver {maj}.{min}, chip {:#010x}, gpu id {}", info.chip_id, info.gpu_id);
    let mut bad = 0;
    for c in COMMA.check_info(&info) {
        let tag = match (c.ok, c.required) {
            (true, _) => "ok  ",
            (false, true) => "FAIL",
            (false, false) => "note",
        };
        println!("{tag}     {}: expected {}, found {}", c.what, c.expected, c.found);
        if !c.ok && c.required {
            bad += 1;
        }
    }
    if bad > 0 {
        return Err(format!("{bad} required check(s) failed: this is not a {} GPU", COMMA.gpu));
    }
    let s = smoke(&kgsl, timeout_ms).map_err(|e| e.to_string())?;
    println!(
        "ok       smoke IB retired at timestamp {}: CP_MEM_WRITE {:#x}, event fence {:#x}",
        s.timestamp, s.written, s.fence
    );
    println!("ready    run bundles with: DEV={} hcq run BUNDLE --check", COMMA.default_device);
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Profile { json } => {
            if json {
                println!("{}", COMMA.to_json());
            } else {
                for (k, v) in COMMA.to_json().as_object().into_iter().flatten() {
                    println!("{k:<15} {}", v.as_str().map_or_else(|| v.to_string(), str::to_string));
                }
            }
            Ok(())
        }
        Cmd::Check { sim, node, timeout_ms } => check(sim, node, timeout_ms),
        Cmd::Wrapper { real } => COMMA.wrapper_script(&real).map(|s| print!("{s}")).map_err(|e| e.to_string()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hcq-comma: {e}");
            ExitCode::FAILURE
        }
    }
}
