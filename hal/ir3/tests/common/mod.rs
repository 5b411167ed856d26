//! Bundle access for the tests: the a630 programs of every bundle in `examples/` and
//! `../shared/bundles/` (the latter must exist: a missing `../shared` fails the test).
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;

/// The repository root, every bundle directory with a manifest (examples first, then
/// `../shared/bundles`, required under `CI=true`), and what a missing `../shared` means: the
/// workspace's test helpers.
#[allow(unused_imports)] // each test file uses some of them
pub use hcq_testkit::{examples_and_shared as bundle_dirs, root as repo_root, shared_missing};

pub fn manifest(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// One a630 program of a bundle.
pub struct Program {
    pub index: usize,
    pub name: String,
    pub image: Vec<u8>,
    pub asm: Option<String>,
    pub adreno: Value,
}

pub fn programs(dir: &Path, m: &Value) -> Vec<Program> {
    let mut out = Vec::new();
    for (index, p) in m["programs"].as_array().unwrap().iter().enumerate() {
        let Some(obj) = p["objects"].get("adreno_a630") else { continue };
        let adreno = p["adreno"].clone();
        let blob = std::fs::read(dir.join(obj["file"].as_str().unwrap())).unwrap();
        let off = adreno["blob"]["image_offset"].as_u64().unwrap() as usize;
        let n = adreno["blob"]["image_nbytes"].as_u64().unwrap() as usize;
        let asm = adreno["disasm_file"].as_str().map(|f| std::fs::read_to_string(dir.join(f)).unwrap());
        out.push(Program {
            index,
            name: p["name"].as_str().unwrap_or("?").to_string(),
            image: blob[off..off + n].to_vec(),
            asm,
            adreno,
        });
    }
    out
}

/// GPU address of buffer `id` in the harness's memory map (16 MiB apart from 4 GiB up, so that
/// address arithmetic crosses the 32-bit boundary as on a device).
pub fn buffer_base(id: u64) -> u64 {
    0xffff_0000 + id * 0x100_0000
}

/// The memory and programs of one bundle, ready to run launch by launch.
pub struct Bundle {
    pub name: String,
    pub manifest: Value,
    pub mem: hcq_ir3::exec::Buffers,
    /// Decoded programs by manifest program index.
    pub programs: Vec<Option<hcq_ir3::exec::Shader>>,
}

pub fn load_bundle(dir: &Path) -> Bundle {
    let m = manifest(dir);
    let mut mem = hcq_ir3::exec::Buffers::default();
    for b in m["buffers"].as_array().unwrap() {
        let id = b["id"].as_u64().unwrap();
        let n = b["nbytes"].as_u64().unwrap() as usize;
        assert!(n <= 0x100_0000);
        let data = match b["file"].as_str() {
            Some(f) => std::fs::read(dir.join(f)).unwrap(),
            None => vec![0; n],
        };
        assert_eq!(data.len(), n);
        mem.bufs.push((buffer_base(id), data));
    }
    let n = m["programs"].as_array().unwrap().len();
    let mut programs: Vec<Option<hcq_ir3::exec::Shader>> = (0..n).map(|_| None).collect();
    for p in self::programs(dir, &m) {
        let a = &p.adreno;
        let meta = hcq_ir3::exec::Meta {
            fregs: a["fregs"].as_u64().unwrap() as u32,
            hregs: a["hregs"].as_u64().unwrap() as u32,
            wgid: a["wgid"].as_u64().unwrap() as u8,
            lid: a["lid"].as_u64().unwrap() as u8,
            shmem: a["shmem"].as_u64().unwrap() as u32,
            pvtmem: a["pvtmem"].as_u64().unwrap() as u32,
            // SP_CS_CNTL_0 bit 31 (a6xx.xml MERGEDREGS).
            merged_regs: a["regs"]["SP_CS_CNTL_0"]["value"].as_u64().unwrap() >> 31 & 1 == 1,
            // SP_MODE_CNTL bit 0 (a6xx.xml CONSTANT_DEMOTION_ENABLE).
            const_demotion: a["regs"]["SP_MODE_CNTL"]["value"].as_u64().unwrap() & 1 == 1,
        };
        let reg = |n: &str| a["regs"][n]["value"].as_u64().unwrap() as u32;
        let from_regs = hcq_ir3::exec::Meta::from_regs(
            reg("SP_CS_CNTL_0"),
            reg("SP_CS_CNTL_1"),
            reg("SP_CS_CONST_CONFIG_0"),
            reg("SP_CS_PVT_MEM_PARAM"),
            reg("SP_MODE_CNTL"),
        );
        assert_eq!(from_regs, hcq_ir3::exec::Meta { shmem: from_regs.shmem, ..meta }, "{}: Meta::from_regs", p.name);
        assert!(from_regs.shmem >= meta.shmem);
        programs[p.index] = Some(hcq_ir3::exec::Shader::new(&p.image, meta).unwrap());
    }
    Bundle { name: dir.file_name().unwrap().to_string_lossy().into_owned(), manifest: m, mem, programs }
}

/// The constant file of one launch, laid out as `programs[].adreno.consts` says (4 KiB: the
/// 256 vec4 that CP_LOAD_STATE6 loads).
pub fn consts_for(b: &Bundle, launch: &Value) -> Vec<u8> {
    let p = &b.manifest["programs"][launch["program"].as_u64().unwrap() as usize];
    let c = &p["adreno"]["consts"];
    let mut k = vec![0u8; 4096];
    let mut put = |off: usize, bytes: &[u8]| k[off..off + bytes.len()].copy_from_slice(bytes);
    for a in c["args"].as_array().unwrap() {
        let arg = &launch["args"][a["arg"].as_u64().unwrap() as usize];
        let addr = buffer_base(arg["buffer"].as_u64().unwrap()) + arg["offset"].as_u64().unwrap();
        put(a["offset"].as_u64().unwrap() as usize, &addr.to_le_bytes()[..a["size"].as_u64().unwrap() as usize]);
    }
    let gvals = launch["gpu_vals"].as_array().unwrap();
    for (i, v) in c["vals"].as_array().unwrap().iter().enumerate() {
        let x = gvals[i].as_i64().unwrap();
        put(v["offset"].as_u64().unwrap() as usize, &x.to_le_bytes()[..v["size"].as_u64().unwrap() as usize]);
    }
    for im in c["immediates"].as_array().unwrap() {
        let x = im["value"].as_u64().unwrap();
        put(im["offset"].as_u64().unwrap() as usize, &x.to_le_bytes()[..im["size"].as_u64().unwrap() as usize]);
    }
    if let Some(o) = c["local_size_offset"].as_u64() {
        for (i, v) in launch["gpu_local_size"].as_array().unwrap().iter().enumerate() {
            put(o as usize + 4 * i, &(v.as_u64().unwrap() as u32).to_le_bytes());
        }
    }
    k
}

pub fn dims(v: &Value) -> [u32; 3] {
    let a = v.as_array().unwrap();
    [0, 1, 2].map(|i| a.get(i).and_then(|x| x.as_u64()).unwrap_or(1) as u32)
}

/// One launch, prepared: program index, constant file, grid, local size.
pub struct Launch {
    pub name: String,
    pub program: usize,
    pub consts: Vec<u8>,
    pub grid: [u32; 3],
    pub local: [u32; 3],
}

pub fn launches(b: &Bundle) -> Vec<Launch> {
    b.manifest["launches"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(li, l)| {
            assert_eq!(l["kind"], "kernel", "launch {li}");
            Launch {
                name: format!("launch {li} ({})", l["name"]),
                program: l["program"].as_u64().unwrap() as usize,
                consts: consts_for(b, l),
                grid: dims(&l["gpu_global_size"]),
                local: dims(&l["gpu_local_size"]),
            }
        })
        .collect()
}

/// Run the prepared launches in order; returns the interpreter's summed counters.
pub fn run_launches(
    b: &mut Bundle,
    launches: &[Launch],
    interp: &mut hcq_ir3::exec::Interp,
) -> Result<hcq_ir3::exec::Stats, String> {
    let mut total = hcq_ir3::exec::Stats::default();
    for l in launches {
        let prog = b.programs[l.program]
            .as_ref()
            .ok_or_else(|| format!("{}: program {} has no a630 object", l.name, l.program))?;
        let d = hcq_ir3::exec::Dispatch { consts: &l.consts, grid: l.grid, local: l.local };
        let s = interp.run(prog, &d, &mut b.mem).map_err(|e| format!("{} {}: {e}", b.name, l.name))?;
        total.steps += s.steps;
        total.lane_instructions += s.lane_instructions;
    }
    Ok(total)
}

/// Run every launch of the bundle in order.
pub fn run_all(b: &mut Bundle, interp: &mut hcq_ir3::exec::Interp) -> Result<hcq_ir3::exec::Stats, String> {
    let l = launches(b);
    run_launches(b, &l, interp)
}

/// Comparison of a bundle's outputs with its expected files.
pub struct Deviation {
    /// Largest |got − expected|, and the expected and got values there.
    pub max: f64,
    pub at_expected: f64,
    pub at_got: f64,
    /// Worst excess over the tolerance 1e-5 + 1e-4·|expected| (≤ 0 passes).
    pub worst_excess: f64,
    /// Elements compared, and how many are bit-identical.
    pub n: usize,
    pub exact: usize,
}

pub fn compare(dir: &Path, b: &Bundle) -> Deviation {
    let mut d = Deviation { max: 0.0, at_expected: 0.0, at_got: 0.0, worst_excess: f64::NEG_INFINITY, n: 0, exact: 0 };
    for o in b.manifest["outputs"].as_array().unwrap() {
        assert_eq!(o["dtype"], "float32");
        let exp = std::fs::read(dir.join(o["file"].as_str().unwrap())).unwrap();
        let id = o["buffer"].as_u64().unwrap();
        let off = o["offset"].as_u64().unwrap() as usize;
        let buf = &b.mem.bufs.iter().find(|(base, _)| *base == buffer_base(id)).unwrap().1;
        for (k, e) in exp.chunks_exact(4).enumerate() {
            let e = f32::from_le_bytes(e.try_into().unwrap()) as f64;
            let g = f32::from_le_bytes(buf[off + 4 * k..off + 4 * k + 4].try_into().unwrap()) as f64;
            let dev = if g.is_nan() || e.is_nan() {
                if g.is_nan() && e.is_nan() { 0.0 } else { f64::INFINITY }
            } else {
                (g - e).abs()
            };
            if dev > d.max {
                (d.max, d.at_expected, d.at_got) = (dev, e, g);
            }
            d.worst_excess = d.worst_excess.max(dev - (1e-5 + 1e-4 * e.abs()));
            d.n += 1;
            d.exact += (g.to_bits() == e.to_bits()) as usize;
        }
    }
    d
}
