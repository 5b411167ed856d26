//! Fuzz the GPU load path at the metadata a bundle claims: the fuzz input is a list of edits to
//! a real bundle (examples/mlp, with its adreno_a630 objects) — any number of its
//! `programs[].adreno` objects set to any u64, u32-edge or negative value, launch grids and
//! work-group sizes, bytes of a shader image — and each edited bundle goes the whole way:
//! `hcqb::write` → `Hcqb::parse` → `check_limits` against the `QCOM:SIM` device's own limits
//! (within a 64 MiB budget) → `Runner::load` (program validation, KGSL allocation, PM4 capture)
//! → one call on the simulated CP and the ir3 interpreter. Every input must give `Ok` or a
//! clean error; a panic, abort, overflow or an allocation past the budget (`-rss_limit_mb`) is a
//! bug. Mutating the `.hcqb` bytes (`qcom_load`) rarely reaches these fields with valid JSON.
//!
//! ```sh
//! cargo +nightly fuzz run --fuzz-dir tests/fuzz qcom_meta -- -max_total_time=60 -rss_limit_mb=2048
//! ```
#![no_main]

use hcq::device::DeviceLimits;
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_bundle::model::{BundleModel, Launch};
use hcq_qcom::device::QcomBackend;
use hcq_runner::Runner;
use hcq_sim_adreno::dispatch::Ir3Dispatch;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;

/// The memory budget of one load (checked before anything is allocated).
const BUDGET: u64 = 64 << 20;
/// Wave-instructions one dispatch may run.
const STEPS: u64 = 20_000;

fn base() -> &'static (BundleModel, Vec<Value>) {
    static BASE: OnceLock<(BundleModel, Vec<Value>)> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mlp");
        let m = hcq_bundle::v1::import_dir(dir).expect("examples/mlp imports");
        let metas = m.programs.iter().map(|p| serde_json::from_slice(p.adreno.as_deref().unwrap()).unwrap()).collect();
        (m, metas)
    })
}

/// The `n`-th number of a JSON tree (depth first, in key order), `n` taken modulo their count.
fn nth_number(v: &mut Value, n: usize) -> Option<&mut Value> {
    fn count(v: &Value) -> usize {
        match v {
            Value::Object(o) => o.values().map(count).sum(),
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Number(_) => 1,
            _ => 0,
        }
    }
    fn walk<'a>(v: &'a mut Value, n: &mut usize) -> Option<&'a mut Value> {
        if v.is_number() {
            if *n == 0 {
                return Some(v);
            }
            *n -= 1;
            return None;
        }
        match v {
            Value::Object(o) => o.values_mut().find_map(|v| walk(v, n)),
            Value::Array(a) => a.iter_mut().find_map(|v| walk(v, n)),
            _ => None,
        }
    }
    let total = count(v);
    let mut n = n % total.max(1);
    walk(v, &mut n)
}

/// A value of the kinds a file can claim, from `kind` and 8 bytes.
fn value(kind: u8, raw: u64) -> Value {
    match kind % 8 {
        0 => Value::from(raw),
        1 => Value::from(raw % 4096),
        2 => Value::from(0xF000_0000u64),
        3 => Value::from(u64::from(u32::MAX) + (raw % 3)),
        4 => Value::from(-((raw % 1000) as i64) - 1),
        5 => Value::from(raw % 300),
        6 => Value::from(u64::MAX - raw % 2),
        _ => Value::from(1u64 << (raw % 64)),
    }
}

fuzz_target!(|data: &[u8]| {
    let (model, metas) = base();
    let mut m = model.clone();
    let mut metas = metas.clone();
    // Edits of 11 bytes: target (program or launch), field index, kind, 8 value bytes.
    for e in data.chunks_exact(11) {
        let raw = u64::from_le_bytes(e[3..11].try_into().unwrap());
        match e[0] % 4 {
            // A number of a program's adreno metadata.
            0 | 1 => {
                let p = (e[0] as usize / 4) % metas.len();
                if let Some(v) = nth_number(&mut metas[p], usize::from(e[1])) {
                    *v = value(e[2], raw);
                }
            }
            // A launch's GPU grid or work-group size (u32 fields: the low bits of the value).
            2 => {
                let l = (e[0] as usize / 4) % m.launches.len();
                if let Launch::Kernel(k) = &mut m.launches[l]
                    && let Some(g) = k.gpu.as_mut()
                {
                    let d = usize::from(e[1] % 3);
                    let v = match e[2] % 4 {
                        0 => raw as u32,
                        1 => (raw % 70_000) as u32,
                        2 => u32::MAX,
                        _ => (raw % 2048) as u32,
                    };
                    if e[1] & 0x80 == 0 { g.global_size[d] = v } else { g.local_size[d] = v }
                }
            }
            // A byte of a program's a630 object (its shader image or the immediates).
            _ => {
                let p = (e[0] as usize / 4) % m.programs.len();
                if let Some(o) = m.programs[p].objects.adreno_a630.as_mut()
                    && !o.is_empty()
                {
                    let at = (raw as usize) % o.len();
                    o[at] = e[2];
                }
            }
        }
    }
    for (p, meta) in m.programs.iter_mut().zip(&metas) {
        p.adreno = Some(serde_json::to_vec(meta).unwrap());
    }
    let Ok(bytes) = hcqb::write(&m) else { return };
    let Ok(file) = Hcqb::parse(&bytes) else { return };
    let Ok(dev) = hcq_sim_adreno::open_with(Ir3Dispatch::with_max_steps(STEPS), false) else { return };
    let budget = DeviceLimits { memory_bytes: BUDGET, max_alloc_bytes: BUDGET, ..hcq::device::Device::limits(&*dev) };
    let Ok(backend) = QcomBackend::new(dev) else { return };
    if let Ok(mut r) = Runner::load_within(backend, &file, &budget) {
        r.backend_mut().set_timeout_ms(10);
        let _ = r.call();
        let _ = r.check();
    }
});
