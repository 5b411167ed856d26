//! A profiled run on the simulated device, written as a Chrome trace.
//!
//! `cargo run -p hcq-sim --example trace [-- OUT.json]` runs the fill/scale/reduce programs of
//! [`hcq_sim::trace::profile_run`] with timestamps around each one, writes the trace to `OUT.json`
//! (default `sim.trace.json`; open it in <https://ui.perfetto.dev>) and prints the per-program
//! summary.

use hcq_sim::SimDevice;
use hcq_sim::trace::profile_run;
use std::process::ExitCode;

const ROUNDS: u32 = 8;
const ELEMS: usize = 1 << 16;

fn main() -> ExitCode {
    let path = std::env::args().nth(1).unwrap_or_else(|| "sim.trace.json".to_string());
    let run = match SimDevice::with_defaults("SIM").and_then(|dev| profile_run(&dev, ROUNDS, ELEMS)) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("trace: the profiled run failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(&path, &run.trace_json) {
        eprintln!("trace: cannot write {path}: {e}");
        return ExitCode::FAILURE;
    }
    print!("{}", run.summary);
    println!(
        "{} program and {} allocation events written to {path} (sum {} = 3 x {ROUNDS} x {ELEMS})",
        run.program_events, run.alloc_events, run.sum
    );
    ExitCode::SUCCESS
}
