//! `hcq` — the command line of the hcq runtime (Linux PCs and comma AGNOS).
//!
//! ```text
//! hcq devices                      enumerate devices (PASS/FAIL with reasons)
//! hcq inspect BUNDLE [--disasm]    header, programs, buffers, launches, sizes (+ a630 and gfx1100 listings)
//! hcq pack DIR -o FILE             a v1 bundle directory into one .hcqb file
//! hcq run BUNDLE [--device CPU|SIM|[KGSL+|MSM+]QCOM[:SIM]] [--iters N] [--check] [--profile trace.json] [--json]
//!                  [--allow-native] [--dump-rd FILE] [--timeout-ms MS]
//! hcq vkgsl -- CMD ARGS...         run CMD with the virtual devices of libhcq_vkgsl.so preloaded:
//!                                  /dev/kgsl-3d0 and the MSM render node (/dev/dri/renderD128),
//!                                  /dev/kfd and the AMD render node (renderD129); alias `hcq virtual`
//! ```
//!
//! BUNDLE is a v1 directory (with `manifest.json`) or a `.hcqb` file. Devices are opened and
//! bundles loaded through the front door (`hcq_runtime::open_with`, `Device::load`), which
//! also holds the device registry `hcq devices` lists; one `drive` times, checks and reports
//! any device's model.
//!
//! The binary is [`main`] over the process's arguments; a program that registers its own device
//! kinds ([`hcq_runtime::register`]) before calling [`main`] gets the same command line with
//! those devices in it (`tests/plugin` does so).

use clap::{Parser, Subcommand};
use hcq::device::ReportList;
use hcq::error::{Error, Result, ResultExt};
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_runner::{TOL_ABS, TOL_REL};
use hcq_runtime::{Model, Options, bundle_bytes};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "hcq", version, about = "Run compiled tinygrad models through hardware command queues")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List the known devices and whether each opens (like `python -m tinygrad.device`).
    Devices,
    /// Describe a bundle: header, programs, buffers, launches, sizes.
    Inspect {
        /// A v1 bundle directory or a .hcqb file.
        bundle: PathBuf,
        /// How many launches to list.
        #[arg(long, default_value_t = 16)]
        launches: usize,
        /// Also print each program's Adreno 630 shader listing (`NNNN [hi32_lo32] text`).
        #[arg(long)]
        disasm: bool,
    },
    /// Pack a v1 bundle directory into one .hcqb file.
    Pack {
        /// The v1 bundle directory.
        dir: PathBuf,
        /// The output file.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Run a bundle's forward pass on a device.
    Run {
        /// A v1 bundle directory or a .hcqb file.
        bundle: PathBuf,
        /// Device to run on (default: $DEV, else CPU).
        #[arg(long)]
        device: Option<String>,
        /// Timed calls after the first one (any u64; statistics use bounded memory).
        #[arg(long, default_value_t = 100)]
        iters: u64,
        /// Compare the outputs with the bundle's expected bytes; exit 1 on mismatch.
        #[arg(long)]
        check: bool,
        /// Write a Perfetto (Chrome trace JSON) profile of the timed calls here.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Print one JSON object with the results as the last line.
        #[arg(long)]
        json: bool,
        /// Run objects whose CPU level cannot be verified (bundles exported with `native`).
        #[arg(long)]
        allow_native: bool,
        /// QCOM devices: write every submitted command buffer and the buffers it points at as
        /// a freedreno `.rd` capture (Mesa's cffdump decodes it).
        #[arg(long)]
        dump_rd: Option<PathBuf>,
        /// Devices whose calls run on their own command processors (SIM, QCOM and their
        /// simulated forms; not CPU, whose calls run on this thread): give up on a call after
        /// this long without progress of the device (default: the timeline's 30 s).
        #[arg(long)]
        timeout_ms: Option<u64>,
    },
    /// Run a command with the virtual devices of libhcq_vkgsl.so (found next to this binary or
    /// at $HCQ_VKGSL_LIB) preloaded: the Adreno 630 (`/dev/kgsl-3d0`, the MSM render node
    /// `/dev/dri/renderD128`) and the AMD gfx1100 (`/dev/kfd`, `/dev/dri/renderD129`, its sysfs
    /// topology): `hcq virtual -- python3 model.py`.
    #[command(visible_alias = "virtual")]
    Vkgsl {
        /// The command and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<std::ffi::OsString>,
    },
}

/// `hcq vkgsl`: exec `command` with libhcq_vkgsl.so first in `LD_PRELOAD`; returns only on error.
fn vkgsl(command: &[std::ffi::OsString]) -> Result<bool> {
    use std::os::unix::process::CommandExt;
    const LIB: &str = "libhcq_vkgsl.so";
    let lib = match std::env::var_os("HCQ_VKGSL_LIB") {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()
            .map_err(|e| Error::Os { what: "find the hcq binary", errno: e.raw_os_error().unwrap_or(0) })?
            .with_file_name(LIB),
    };
    if !lib.is_file() {
        return Err(Error::DeviceUnavailable {
            device: hcq::error::device_name("QCOM"),
            reason: "libhcq_vkgsl.so is neither next to the hcq binary nor at $HCQ_VKGSL_LIB: build it with \
                     `cargo build --release -p hcq-vkgsl` (target/release/libhcq_vkgsl.so)",
        })
        .with_context(|| lib.display().to_string());
    }
    let lib = lib.canonicalize().unwrap_or(lib);
    let mut preload = lib.into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let (prog, args) =
        command.split_first().ok_or(Error::InvalidArgument { what: "hcq vkgsl: no command", value: 0 })?;
    let err = std::process::Command::new(prog).args(args).env("LD_PRELOAD", preload).exec();
    Err(Error::Os { what: "exec the command", errno: err.raw_os_error().unwrap_or(0) })
        .with_context(|| prog.to_string_lossy().into_owned())
}

/// Print each program's a630 shader as an ir3 listing: the code image of the program as the
/// QCOM backend loads it (`hcq_adreno::Program::from_json`: its metadata, `programs[].adreno`,
/// parsed with its one typed schema and checked against its blob). False if any failed.
fn print_a630_listings(f: &Hcqb, out: &mut String) -> bool {
    let mut ok = true;
    for (i, p) in f.programs().enumerate() {
        let Some(blob) = p.object(hcq_bundle::Arch::AdrenoA630) else { continue };
        let image = p
            .adreno
            .ok_or_else(|| "no adreno metadata (programs[].adreno)".to_string())
            .and_then(|m| hcq_adreno::Program::from_json(blob, m).map_err(|e| e.to_string()))
            .map(|prog| prog.image);
        writeln!(out, "program {i} {} (a630):", p.name).ok();
        match image.and_then(|img| hcq_ir3::decode_image(&img).map_err(|e| e.to_string())) {
            Ok(instrs) => out.push_str(&hcq_ir3::listing(&instrs)),
            Err(e) => {
                eprintln!("hcq: program {i} {}: a630 shader: {e}", p.name);
                ok = false;
            }
        }
    }
    ok
}

/// The gfx1100 listing of every program with an AMD code object, as `llvm-objdump -d
/// --mcpu=gfx1100` prints it (`hcq_amd::listing`); a code object that does not parse is reported
/// and makes the command fail.
fn print_amd_listings(f: &Hcqb, out: &mut String) -> bool {
    let mut ok = true;
    for (i, p) in f.programs().enumerate() {
        let Some(co) = p.object(hcq_bundle::Arch::AmdGfx1100) else { continue };
        writeln!(out, "program {i} {} (gfx1100):", p.name).ok();
        match hcq_amd::codeobj::CodeObject::parse(co) {
            Ok(co) => {
                let path = format!("program {i} {}", p.name);
                writeln!(out, "{}", hcq_amd::listing::Listing { co: &co, path: &path }).ok();
            }
            Err(e) => {
                eprintln!("hcq: program {i} {}: gfx1100 code object: {e}", p.name);
                ok = false;
            }
        }
    }
    ok
}

/// Per-call times in bounded memory: the count, the minimum and a uniform sample of at most
/// [`CallStats::SAMPLE`] calls (reservoir sampling, Vitter's algorithm R, with a fixed-seed
/// xorshift so runs are reproducible). The median is exact up to `SAMPLE` calls and an estimate
/// from the sample above that; `--iters 18446744073709551615` runs in constant memory.
///
/// The sample's memory is allocated and written once, before the first timed call, for at most
/// as many calls as the run makes: the timed loop allocates nothing and the process's resident
/// memory does not grow with the sample (a soak's figure is the runtime's, not the CLI's).
struct CallStats {
    n: u64,
    min: f64,
    /// `filled` kept values, then spare slots written at creation.
    sample: Vec<f64>,
    filled: usize,
    rng: u64,
}

impl CallStats {
    /// Calls kept for the median (512 KiB of `f64`).
    const SAMPLE: usize = 1 << 16;

    /// Room for `cap` values, or `calls` when the run makes fewer.
    fn new(cap: usize, calls: u64) -> Self {
        let len = usize::try_from(calls).map_or(cap, |c| c.min(cap)).max(1);
        CallStats { n: 0, min: f64::INFINITY, sample: vec![f64::NAN; len], filled: 0, rng: 0x9e37_79b9_7f4a_7c15 }
    }

    fn push(&mut self, x: f64) {
        self.n += 1;
        self.min = self.min.min(x);
        if let Some(slot) = self.sample.get_mut(self.filled) {
            *slot = x;
            self.filled += 1;
            return;
        }
        // keep the n-th value with probability cap / n, in place of a uniformly chosen one
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let j = self.rng % self.n;
        if let Some(slot) = usize::try_from(j).ok().and_then(|j| self.sample.get_mut(j)) {
            *slot = x;
        }
    }

    fn median(&self) -> f64 {
        let mut v = self.sample[..self.filled].to_vec();
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
    }
}

/// `x` rounded to 3 decimals for the JSON line (non-finite values become `null`).
fn round3(x: f64) -> serde_json::Value {
    if x.is_finite() { serde_json::json!((x * 1000.0).round() / 1000.0) } else { serde_json::Value::Null }
}

struct RunOpts {
    device: Option<String>,
    iters: u64,
    check: bool,
    profile: Option<PathBuf>,
    json: bool,
    allow_native: bool,
    dump_rd: Option<PathBuf>,
    timeout_ms: Option<u64>,
}

/// What a run ended with: whether its check passed (or none was asked), and the `--json` line.
struct Ran {
    ok: bool,
    json: Option<serde_json::Value>,
}

/// `hcq run`: the report, then (`--json`) the JSON object as the very last line, after every
/// other line a device writes once the calls are done (`--dump-rd`'s `rd ... bytes written`).
fn run(path: &Path, o: RunOpts, out: &mut String) -> Result<bool> {
    let name = o.device.as_deref().map_or_else(hcq_runtime::default_name, hcq_runtime::canonical_name);
    // which options a device supports (`--dump-rd`, `--timeout-ms`) is the device kind's to say
    let opts = Options {
        profile: o.profile.is_some(),
        allow_native: o.allow_native,
        capture_rd: o.dump_rd.is_some(),
        timeout: o.timeout_ms.map(Duration::from_millis),
    };
    let dev = hcq_runtime::open_with(&name, opts)?;
    // Load: from reading the file to a model ready to call (what a user waits for at startup).
    let t_load = Instant::now();
    let bytes = hcq_runtime::bundle_bytes(path)?;
    let mut model = dev.load(&bytes).with_context(|| format!("bundle {}", path.display()))?;
    let load_us = t_load.elapsed().as_secs_f64() * 1e6;
    let res = drive(&mut model, path, dev.name(), &dev.description(), load_us, &o, out);
    // The capture is written even when a call failed: it shows what was submitted.
    if let Some(p) = &o.dump_rd {
        let rd = dev.rd_capture()?;
        std::fs::write(p, &rd)
            .map_err(|e| Error::Os { what: "write .rd capture", errno: e.raw_os_error().unwrap_or(0) })
            .with_context(|| p.display().to_string())?;
        writeln!(out, "rd       {} bytes written to {}", rd.len(), p.display()).ok();
    }
    let ran = res?;
    if let Some(j) = ran.json {
        writeln!(out, "{j}").ok();
    }
    Ok(ran.ok)
}

/// Call a loaded model (any device, through the front door's `Model`), time it, check it, report.
#[allow(clippy::too_many_arguments)]
fn drive(
    model: &mut Model,
    path: &Path,
    name: &str,
    desc: &str,
    load_us: f64,
    o: &RunOpts,
    out: &mut String,
) -> Result<Ran> {
    let prof = model.profiler();
    let prof = prof.as_deref().map(|p| p.profiler());
    let t0 = Instant::now();
    model.run()?;
    let first_us = t0.elapsed().as_secs_f64() * 1e6;
    let mut times = CallStats::new(CallStats::SAMPLE, o.iters);
    let progress = std::io::stderr().is_terminal() && o.iters >= 1000;
    for i in 0..o.iters {
        // while profiling, the front door records each call's span (the first call's too)
        let t = Instant::now();
        model.run()?;
        let dt = t.elapsed();
        times.push(dt.as_secs_f64() * 1e6);
        if progress && i % 500 == 0 {
            let _ = write!(std::io::stderr(), "\r  {}/{} calls", i, o.iters);
        }
    }
    if progress {
        let _ = writeln!(std::io::stderr(), "\r  {}/{} calls", o.iters, o.iters);
    }
    if let Some(p) = prof {
        p.set_enabled(false);
    }
    let min = times.min;
    let med = times.median();
    let report = if o.check { Some(model.check()?) } else { None };
    writeln!(out, "bundle   {} ({})", model.name(), path.display()).ok();
    writeln!(out, "device   {}, objects {}", desc, model.arch().name()).ok();
    writeln!(
        out,
        "kernels  {} per call; load {:.1} us; first call {:.1} us",
        model.kernels_per_call(),
        load_us,
        first_us
    )
    .ok();
    if o.iters > 0 {
        writeln!(
            out,
            "calls    {}: median {:.2} us, min {:.2} us, {:.3} us per kernel (median)",
            o.iters,
            med,
            min,
            med / model.kernels_per_call().max(1) as f64
        )
        .ok();
    }
    if let Some(r) = &report {
        let (h_abs, h_rel) = hcq_runner::tolerance(hcq::DType::F16);
        let mode = if r.exact {
            "exact".to_string()
        } else {
            format!("|d| <= {TOL_ABS:e} + {TOL_REL:e}*|expected|, f16 {h_abs:e} + {h_rel:e}*|expected|")
        };
        // --check never passes on nothing: a bundle without expected outputs fails it
        let pass = r.ok && r.compared > 0;
        if r.compared == 0 {
            writeln!(out, "check    FAIL (no output of the bundle has expected bytes: nothing to compare)").ok();
        }
        writeln!(
            out,
            "check    {} ({} outputs, {}, max abs diff {:e}, {} mismatches)",
            if pass { "PASS" } else { "FAIL" },
            r.compared,
            mode,
            r.max_abs_diff,
            r.mismatches
        )
        .ok();
    }
    if let (Some(p), Some(prof)) = (&o.profile, prof) {
        let json = hcq::profile::chrome::trace_json(&[(name, prof)]);
        std::fs::write(p, json)
            .map_err(|e| Error::Os { what: "write profile", errno: e.raw_os_error().unwrap_or(0) })
            .with_context(|| p.display().to_string())?;
        write!(out, "{}", prof.summary_table()).ok();
        writeln!(out, "profile  {} events written to {}", prof.events().len(), p.display()).ok();
    }
    let json = o.json.then(|| {
        serde_json::json!({
            "bundle": model.name(),
            "device": name,
            "arch": model.arch().name(),
            "calls": o.iters,
            "kernels_per_call": model.kernels_per_call(),
            "load_us": round3(load_us),
            "first_call_us": round3(first_us),
            "call_us_median": round3(med),
            "call_us_min": round3(min),
            "kernel_us_median": round3(med / model.kernels_per_call().max(1) as f64),
            "outputs_ok": report.as_ref().map(|r| r.ok && r.compared > 0),
            "max_abs_diff": report.as_ref().map(|r| r.max_abs_diff).filter(|d| d.is_finite()),
        })
    });
    Ok(Ran { ok: report.is_none_or(|r| r.ok && r.compared > 0), json })
}

/// Write `text` to stdout. A closed pipe (`hcq inspect ... | head -1`) is not an error: the
/// reader has what it wanted, so the write stops quietly, as standard Unix tools do. Any other
/// write error is reported.
fn emit(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// The `hcq` command line over `std::env::args_os()`: the exit code to return (0, 1 for a
/// failed `--check`, 2 for an error, which goes to stderr as one line).
pub fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let mut out = String::new();
    let res = match cli.cmd {
        Cmd::Devices => {
            let reports = hcq_runtime::devices();
            writeln!(out, "{}", ReportList(&reports).to_string().trim_end()).ok();
            Ok(true)
        }
        Cmd::Inspect { bundle, launches, disasm } => bundle_bytes(&bundle).and_then(|b| {
            let f = Hcqb::parse(&b).with_context(|| format!("bundle {}", bundle.display()))?;
            out.push_str(&hcq_bundle::inspect_with(&f, launches));
            writeln!(out, "file size: {} bytes (packed)", b.len()).ok();
            Ok(!disasm || (print_a630_listings(&f, &mut out) & print_amd_listings(&f, &mut out)))
        }),
        Cmd::Pack { dir, output } => hcq_bundle::v1::import_dir(&dir)
            .with_context(|| format!("bundle {}", dir.display()))
            .and_then(|m| hcqb::write(&m))
            .and_then(|b| {
                Hcqb::parse(&b)?;
                std::fs::write(&output, &b)
                    .map_err(|e| Error::Os { what: "write .hcqb", errno: e.raw_os_error().unwrap_or(0) })
                    .with_context(|| output.display().to_string())?;
                writeln!(out, "packed {} -> {} ({} bytes)", dir.display(), output.display(), b.len()).ok();
                Ok(true)
            }),
        Cmd::Run { bundle, device, iters, check, profile, json, allow_native, dump_rd, timeout_ms } => {
            run(&bundle, RunOpts { device, iters, check, profile, json, allow_native, dump_rd, timeout_ms }, &mut out)
        }
        Cmd::Vkgsl { command } => vkgsl(&command),
    };
    let written = emit(&out);
    let code = match res {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            // stderr may be closed too: nothing more to say then
            let _ = writeln!(std::io::stderr(), "hcq: error: {e}");
            return ExitCode::from(2);
        }
    };
    match written {
        Ok(()) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "hcq: error: writing the output: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_stats_keep_a_bounded_sample_with_exact_small_medians() {
        let mut s = CallStats::new(8, u64::MAX);
        let buf = s.sample.as_ptr();
        for x in [5.0, 1.0, 4.0, 2.0, 3.0] {
            s.push(x);
        }
        assert_eq!((s.n, s.min, s.median()), (5, 1.0, 3.0), "exact while under the sample size");
        for i in 0..100_000u32 {
            s.push(f64::from(i % 100));
        }
        assert_eq!((s.filled, s.sample.len()), (8, 8), "never more than the sample size");
        assert_eq!(s.sample.capacity(), 8, "no growth past it");
        assert_eq!(s.sample.as_ptr(), buf, "allocated once, before the first call");
        assert_eq!(CallStats::new(8, 3).sample.len(), 3, "a short run allocates only what it uses");
        assert_eq!(s.n, 100_005);
        assert_eq!(s.min, 0.0);
    }

    #[test]
    fn the_sampled_median_estimates_the_true_one() {
        let mut s = CallStats::new(4096, 1_000_000);
        // 1..=1_000_000 in a scrambled order: median 500_000.5
        let mut x: u64 = 1;
        for _ in 0..1_000_000 {
            x = (x * 48_271) % 2_147_483_647;
            s.push((x % 1_000_000) as f64);
        }
        let m = s.median();
        assert!((m - 500_000.0).abs() < 40_000.0, "median estimate {m}");
    }

    #[test]
    fn json_numbers_round_to_three_decimals_and_non_finite_is_null() {
        assert_eq!(round3(1.23456), serde_json::json!(1.235));
        assert_eq!(round3(f64::NAN), serde_json::Value::Null);
        assert_eq!(round3(f64::INFINITY), serde_json::Value::Null);
    }
}
