//! `hcq` — the command line of the hcq runtime (Linux PCs and comma AGNOS).
//!
//! ```text
//! hcq devices                      enumerate devices (PASS/FAIL with reasons)
//! hcq inspect BUNDLE [--disasm]    header, programs, buffers, launches, sizes (+ a630 listings)
//! hcq pack DIR -o FILE             a v1 bundle directory into one .hcqb file
//! hcq run BUNDLE [--device CPU] [--iters N] [--check] [--profile trace.json] [--json]
//! ```
//!
//! BUNDLE is a v1 directory (with `manifest.json`) or a `.hcqb` file.

use clap::{Parser, Subcommand};
use hcq::bundle::hcqb::{self, Hcqb};
use hcq::device::{Registry, ReportList};
use hcq::error::{Error, Result, ResultExt};
use hcq::profile::{Event, EventKind};
use hcq_cpu::device::{CpuDevice, cpu_kind};
use hcq_cpu::model::{Model, TOL_ABS, TOL_REL};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

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
        /// Timed calls after the first one.
        #[arg(long, default_value_t = 100)]
        iters: usize,
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
    },
}

fn registry() -> Registry {
    let r = Registry::new();
    r.register(cpu_kind());
    r.register(hcq_sim::sim_kind());
    r
}

/// The bytes of a bundle: a .hcqb file as is, a v1 directory imported and packed in memory.
fn bundle_bytes(path: &Path) -> Result<Vec<u8>> {
    let ctx = || format!("bundle {}", path.display());
    if path.is_dir() {
        let model = hcq::bundle::v1::import_dir(path).with_context(ctx)?;
        hcqb::write(&model).with_context(ctx)
    } else {
        std::fs::read(path)
            .map_err(|e| Error::Os { what: "read bundle file", errno: e.raw_os_error().unwrap_or(0) })
            .with_context(ctx)
    }
}

/// Print each program's a630 shader (the code image inside its blob, located by the adreno
/// metadata's `blob.image_offset`/`image_nbytes`) as an ir3 listing. False if any failed.
fn print_a630_listings(f: &Hcqb) -> bool {
    let mut ok = true;
    for (i, p) in f.programs().enumerate() {
        let Some(blob) = p.object(hcq::bundle::Arch::AdrenoA630) else { continue };
        let image = p.adreno.and_then(|m| serde_json::from_slice::<serde_json::Value>(m).ok()).and_then(|m| {
            let off = m["blob"]["image_offset"].as_u64()? as usize;
            let n = m["blob"]["image_nbytes"].as_u64()? as usize;
            blob.get(off..off.checked_add(n)?)
        });
        println!("program {i} {} (a630):", p.name);
        match image
            .ok_or("no adreno blob.image_offset/image_nbytes inside the blob".to_string())
            .and_then(|img| hcq_ir3::decode_image(img).map_err(|e| e.to_string()))
        {
            Ok(instrs) => print!("{}", hcq_ir3::listing(&instrs)),
            Err(e) => {
                eprintln!("hcq: program {i} {}: a630 shader: {e}", p.name);
                ok = false;
            }
        }
    }
    ok
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_num(x: f64) -> String {
    if x.is_finite() { format!("{x:.3}") } else { "null".into() }
}

struct RunOpts {
    device: Option<String>,
    iters: usize,
    check: bool,
    profile: Option<PathBuf>,
    json: bool,
    allow_native: bool,
}

fn run(path: &Path, o: RunOpts) -> Result<bool> {
    let bytes = bundle_bytes(path)?;
    let file = Hcqb::parse(&bytes).with_context(|| format!("bundle {}", path.display()))?;
    let reg = registry();
    let name = match o.device {
        Some(d) => hcq::device::canonicalize(&d),
        None => std::env::var("DEV").ok().and_then(|v| hcq::device::parse_dev(&v)).unwrap_or_else(|| "CPU".into()),
    };
    let cpu: Arc<CpuDevice> = if name == "CPU" {
        CpuDevice::new("CPU", hcq_cpu::device::host_cores())?
    } else {
        // open it anyway, so an unknown or absent device reports why
        reg.open(&name)?;
        return Err(Error::Unsupported {
            what: "this device cannot run bundle kernels (only CPU can today)",
            value: 0,
        })
        .with_context(|| format!("device {name}"));
    };
    let arch = hcq_cpu::model::host_arch().ok_or(Error::Unsupported { what: "host architecture", value: 0 })?;
    if o.profile.is_some() {
        // from before the load, so the trace shows the buffer allocations too
        cpu.soft().hcq().profiler().set_enabled(true);
    }
    let t_load = Instant::now();
    let mut model =
        Model::load(cpu.clone(), &file, arch, o.allow_native).with_context(|| format!("bundle {}", path.display()))?;
    let load_us = t_load.elapsed().as_secs_f64() * 1e6;
    let t0 = Instant::now();
    model.call()?;
    let first_us = t0.elapsed().as_secs_f64() * 1e6;
    let hcq = cpu.soft().hcq();
    let prof = hcq.profiler();
    let call_name = prof.intern(&format!("call {}", model.name()));
    let mut times = Vec::with_capacity(o.iters);
    let progress = std::io::stderr().is_terminal() && o.iters >= 1000;
    for i in 0..o.iters {
        let start_ns = if o.profile.is_some() { hcq::soft::runner::soft_clock_ns() } else { 0 };
        let t = Instant::now();
        model.call()?;
        let dt = t.elapsed();
        if o.profile.is_some() {
            let end_ns = hcq::soft::runner::soft_clock_ns();
            prof.record(Event { kind: EventKind::Call, name: call_name, start_ns, end_ns, arg: i as u64 });
        }
        times.push(dt.as_secs_f64() * 1e6);
        if progress && i % 500 == 0 {
            eprint!("\r  {}/{} calls", i, o.iters);
        }
    }
    if progress {
        eprintln!("\r  {}/{} calls", o.iters, o.iters);
    }
    prof.set_enabled(false);
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let med = median(&mut times.clone());
    let report = if o.check { Some(model.check()?) } else { None };
    println!("bundle   {} ({})", model.name(), path.display());
    println!("device   {} ({} cores), objects {}", name, cpu.cores(), model.arch().name());
    println!("kernels  {} per call; load {:.1} us; first call {:.1} us", model.kernels_per_call(), load_us, first_us);
    if o.iters > 0 {
        println!(
            "calls    {}: median {:.2} us, min {:.2} us, {:.3} us per kernel (median)",
            o.iters,
            med,
            min,
            med / model.kernels_per_call().max(1) as f64
        );
    }
    if let Some(r) = &report {
        let mode = if r.exact { "exact".to_string() } else { format!("|d| <= {TOL_ABS:e} + {TOL_REL:e}*|expected|") };
        println!(
            "check    {} ({} outputs, {}, max abs diff {:e}, {} mismatches)",
            if r.ok { "PASS" } else { "FAIL" },
            r.compared,
            mode,
            r.max_abs_diff,
            r.mismatches
        );
    }
    if let Some(p) = &o.profile {
        let json = hcq::profile::chrome::trace_json(&[(name.as_str(), prof)]);
        std::fs::write(p, json)
            .map_err(|e| Error::Os { what: "write profile", errno: e.raw_os_error().unwrap_or(0) })
            .with_context(|| p.display().to_string())?;
        print!("{}", prof.summary_table());
        println!("profile  {} events written to {}", prof.events().len(), p.display());
    }
    if o.json {
        let (ok, diff) = match &report {
            Some(r) => (
                if r.ok { "true" } else { "false" }.to_string(),
                if r.max_abs_diff.is_finite() { format!("{:e}", r.max_abs_diff) } else { "null".into() },
            ),
            None => ("null".into(), "null".into()),
        };
        println!(
            "{{\"bundle\":{},\"device\":{},\"arch\":{},\"calls\":{},\"kernels_per_call\":{},\"first_call_us\":{},\"call_us_median\":{},\"call_us_min\":{},\"kernel_us_median\":{},\"outputs_ok\":{},\"max_abs_diff\":{}}}",
            json_str(model.name()),
            json_str(&name),
            json_str(model.arch().name()),
            o.iters,
            model.kernels_per_call(),
            json_num(first_us),
            json_num(med),
            json_num(min),
            json_num(med / model.kernels_per_call().max(1) as f64),
            ok,
            diff
        );
    }
    let _ = std::io::stdout().flush();
    Ok(report.is_none_or(|r| r.ok))
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Devices => {
            let reg = registry();
            let reports = reg.enumerate();
            println!("{}", ReportList(&reports).to_string().trim_end());
            Ok(true)
        }
        Cmd::Inspect { bundle, launches, disasm } => bundle_bytes(&bundle).and_then(|b| {
            let f = Hcqb::parse(&b).with_context(|| format!("bundle {}", bundle.display()))?;
            print!("{}", hcq::bundle::inspect_with(&f, launches));
            println!("file size: {} bytes (packed)", b.len());
            Ok(!disasm || print_a630_listings(&f))
        }),
        Cmd::Pack { dir, output } => hcq::bundle::v1::import_dir(&dir)
            .with_context(|| format!("bundle {}", dir.display()))
            .and_then(|m| hcqb::write(&m))
            .and_then(|b| {
                Hcqb::parse(&b)?;
                std::fs::write(&output, &b)
                    .map_err(|e| Error::Os { what: "write .hcqb", errno: e.raw_os_error().unwrap_or(0) })
                    .with_context(|| output.display().to_string())?;
                println!("packed {} -> {} ({} bytes)", dir.display(), output.display(), b.len());
                Ok(true)
            }),
        Cmd::Run { bundle, device, iters, check, profile, json, allow_native } => {
            run(&bundle, RunOpts { device, iters, check, profile, json, allow_native })
        }
    };
    match res {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("hcq: error: {e}");
            ExitCode::from(2)
        }
    }
}
