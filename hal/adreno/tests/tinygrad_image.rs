//! A real tinygrad image kernel against tinygrad's own dispatch of it: the matmul
//! `r_4_8_16_4_4` (2 textures, 2 samplers, 1 IBO, fp16 inputs) that
//! `hal/qcom/tests/data/tinygrad_image/capture.py` recorded from tinygrad 0.14 on
//! `DEV=QCOM:IR3 FLOAT16=1 IMAGE=1` under the virtual KGSL node: its blob, `programs[].adreno`
//! metadata (IMAGE-SCHEMA.md), kernarg block and the PM4 words of `QCOMComputeQueue.exec`.
//!
//! hcq's constant block equals tinygrad's byte for byte (descriptors, samplers, immediates),
//! and hcq's encoder produces the same register state at `CP_EXEC_CS` and the same state loads
//! as tinygrad for that dispatch, addresses aside (each address is compared as "which object,
//! which offset"), except for the two registers decided otherwise (see
//! `Program::from_parts`). Changing a descriptor or a register makes the comparison fail.

use hcq::queue::{CmdWriter, Command, Encoder};
use hcq_adreno::Program;
use hcq_adreno::a6xx::{A6xxEncoder, EncoderConfig, encoder::BORDER_COLOR_OFFSET, regs};
use hcq_adreno::reg::Reg;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../qcom/tests/data/tinygrad_image")
}

struct Capture {
    blob: Vec<u8>,
    meta: Value,
    dispatch: Value,
}

fn capture() -> Capture {
    let d = dir();
    let dispatch: Value = serde_json::from_slice(&std::fs::read(d.join("dispatch.json")).unwrap()).unwrap();
    let stem = dispatch["program"].as_str().unwrap().to_string();
    let blob = std::fs::read(d.join(format!("{stem}.a630.bin"))).unwrap();
    let meta = serde_json::from_slice(&std::fs::read(d.join(format!("{stem}.adreno.json"))).unwrap()).unwrap();
    Capture { blob, meta, dispatch }
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}
fn u32x3(v: &Value) -> [u32; 3] {
    let v = u64s(v);
    [v[0] as u32, v[1] as u32, v[2] as u32]
}

/// What a dispatch leaves for the hardware at `CP_EXEC_CS`: every register's last value, the
/// state loads in order (`CP_LOAD_STATE6_FRAG` dword 0 and source), and the exec's group counts.
#[derive(Debug, Default, PartialEq, Eq)]
struct Dispatch {
    regs: BTreeMap<u32, u32>,
    loads: Vec<(u32, String)>,
    exec: Vec<u32>,
}

/// Replay `words` up to and including `CP_EXEC_CS`. 64-bit addresses in the address registers
/// and loads become `name+offset` of the object they point into (`objs`: name, base, bytes).
fn replay(words: &[u32], objs: &[(&str, u64, u64)]) -> Dispatch {
    let name = |a: u64| -> String {
        objs.iter()
            .find(|(_, b, n)| (*b..b + n).contains(&a))
            .map_or(format!("{a:#x}?"), |(nm, b, _)| format!("{nm}+{:#x}", a - b))
    };
    let addr_regs = [
        regs::SP_CS_BASE::REG,
        regs::SP_CS_PVT_MEM_BASE::REG,
        regs::SP_CS_SAMPLER_BASE::REG,
        regs::SP_CS_TEXMEMOBJ_BASE::REG,
        regs::SP_CS_UAV_BASE::REG,
        regs::TPL1_CS_BORDER_COLOR_BASE::REG,
    ];
    let mut d = Dispatch::default();
    let mut i = 0;
    while i < words.len() {
        let h = words[i];
        match h >> 28 {
            4 => {
                let (reg, n) = ((h >> 8) & 0x3ffff, (h & 0x7f) as usize);
                for k in 0..n {
                    d.regs.insert(reg + k as u32, words[i + 1 + k]);
                }
                i += 1 + n;
            }
            7 => {
                let (op, n) = ((h >> 16) & 0x7f, (h & 0x3fff) as usize);
                let p = &words[i + 1..i + 1 + n];
                match op {
                    0x34 => d.loads.push((p[0], name(u64::from(p[1]) | u64::from(p[2]) << 32))),
                    0x33 => {
                        d.exec = p.to_vec();
                        break;
                    }
                    _ => {}
                }
                i += 1 + n;
            }
            _ => panic!("packet header {h:#010x} at word {i}"),
        }
    }
    for r in addr_regs {
        if let (Some(lo), Some(hi)) = (d.regs.get(&r).copied(), d.regs.get(&(r + 1)).copied()) {
            d.regs.remove(&(r + 1));
            d.regs.insert(r, 0);
            d.loads.push((r, format!("reg {}", name(u64::from(lo) | u64::from(hi) << 32))));
        }
    }
    d
}

/// The differences between two dispatches, one line each.
fn differences(a: &Dispatch, b: &Dispatch) -> Vec<String> {
    let mut out = vec![];
    for r in a.regs.keys().chain(b.regs.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (x, y) = (a.regs.get(r), b.regs.get(r));
        if x != y {
            out.push(format!("register {r:#06x}: tinygrad {x:x?}, hcq {y:x?}"));
        }
    }
    if a.loads != b.loads {
        out.push(format!("state loads / bases: tinygrad {:x?}, hcq {:x?}", a.loads, b.loads));
    }
    if a.exec != b.exec {
        out.push(format!("CP_EXEC_CS: tinygrad {:?}, hcq {:?}", a.exec, b.exec));
    }
    out
}

const SCRATCH: u64 = 0x7_0000;

fn hcq_words(c: &Capture, prog: &Program) -> Vec<u32> {
    let a = &c.dispatch["addrs"];
    let stack = a["stack"].as_u64().unwrap();
    let enc =
        A6xxEncoder::new(EncoderConfig { scratch: SCRATCH, pvt_mem: stack, pvt_mem_bytes: prog.stack_bytes }).unwrap();
    let h = enc.add_program(prog, a["code"].as_u64().unwrap()).unwrap();
    let cmd = Command::Exec {
        program: h,
        kernargs: a["kernargs"].as_u64().unwrap(),
        global: u32x3(&c.dispatch["global_size"]),
        local: u32x3(&c.dispatch["local_size"]),
    };
    let (mut w, mut m) = (vec![], vec![]);
    enc.encode(&cmd, &mut CmdWriter::new(&mut w, &mut m, 0)).unwrap();
    w
}

fn objects(c: &Capture, prog: &Program, border: u64) -> Vec<(&'static str, u64, u64)> {
    let a = &c.dispatch["addrs"];
    let g = |k: &str| a[k].as_u64().unwrap();
    vec![
        ("kernargs", g("kernargs"), 4096),
        ("code", g("code"), prog.image.len() as u64),
        ("stack", g("stack"), prog.stack_bytes),
        ("border", border, 128),
    ]
}

#[test]
fn the_metadata_loads_and_rebuilds_tinygrads_kernarg_block() {
    let c = capture();
    let prog = Program::from_json(&c.blob, c.meta.to_string().as_bytes()).unwrap();
    let d = prog.descriptors;
    assert_eq!((d.tex_cnt, d.samp_cnt, d.ibo_cnt), (2, 2, 1), "the matmul reads two images and writes one");
    let bufs = u64s(&c.dispatch["addrs"]["bufs"]);
    let mut block = vec![0xa5u8; prog.const_block_bytes as usize];
    prog.fill_consts(&mut block, &bufs, &[], u32x3(&c.dispatch["local_size"])).unwrap();
    let tiny = hex(c.dispatch["kernarg_block"].as_str().unwrap());
    assert_eq!(&block[..tiny.len()], &tiny[..], "descriptors, samplers and immediates as tinygrad wrote them");
    assert!(block[tiny.len()..].iter().all(|&b| b == 0));
    // fp16 images: both textures are float16, the output float32 (IMAGE=1 FLOAT16=1)
    let fmts: Vec<&str> =
        c.meta["descriptors"]["images"].as_array().unwrap().iter().map(|i| i["format"].as_str().unwrap()).collect();
    assert_eq!(fmts, ["float32", "float16", "float16"]);
}

#[test]
fn hcq_encodes_the_dispatch_tinygrad_encoded() {
    let c = capture();
    let prog = Program::from_json(&c.blob, c.meta.to_string().as_bytes()).unwrap();
    let tiny_words: Vec<u32> = u64s(&c.dispatch["words"]).into_iter().map(|w| w as u32).collect();
    let tiny = replay(&tiny_words, &objects(&c, &prog, c.dispatch["addrs"]["border_color"].as_u64().unwrap()));
    let ours_words = hcq_words(&c, &prog);
    let ours = replay(&ours_words, &objects(&c, &prog, SCRATCH + BORDER_COLOR_OFFSET));
    // The two registers decided against tinygrad's encoding (Program::from_parts: Mesa's
    // turnip writes both through the XML's shifts): everything else is tinygrad's.
    let mut want = tiny;
    assert_eq!(want.regs.insert(regs::SP_CS_CONST_CONFIG::REG, 0x140), Some(0x100), "tinygrad: CONSTLEN 0 | ENABLED");
    assert_eq!(want.regs.insert(regs::SP_CS_PVT_MEM_STACK_OFFSET::REG, 0x2), Some(0x1000), "tinygrad: bytes");
    let diff = differences(&want, &ours);
    assert!(diff.is_empty(), "hcq differs from tinygrad:\n{}", diff.join("\n"));
    // tinygrad's loads (constants, code, samplers, textures, IBOs) and six bases; and the registers it writes
    // before each dispatch that hcq once did not (TPL1_DBG_ECO_CNTL = 0).
    assert_eq!(ours.loads.len(), 5 + 6, "{:x?}", ours.loads);
    assert_eq!(ours.regs.get(&regs::TPL1_DBG_ECO_CNTL::REG), Some(&0));

    // The comparison sees a changed register and a changed load.
    for (what, at) in [("SP_CS_CONFIG", regs::SP_CS_CONFIG::REG), ("TPL1_DBG_ECO_CNTL", regs::TPL1_DBG_ECO_CNTL::REG)] {
        let mut w = ours_words.clone();
        let i = (0..w.len())
            .rev()
            .find(|&i| w[i] >> 28 == 4 && (w[i] >> 8) & 0x3ffff <= at && at < ((w[i] >> 8) & 0x3ffff) + (w[i] & 0x7f))
            .unwrap();
        let k = i + 1 + (at - ((w[i] >> 8) & 0x3ffff)) as usize;
        w[k] ^= 1 << 9;
        let d = replay(&w, &objects(&c, &prog, SCRATCH + BORDER_COLOR_OFFSET));
        assert!(!differences(&want, &d).is_empty(), "{what}");
    }
    let mut w = ours_words.clone();
    let i = w.iter().rposition(|&h| h >> 28 == 7 && (h >> 16) & 0x7f == 0x34).unwrap();
    w[i + 1] += 1 << 22; // one more IBO
    assert!(!differences(&want, &replay(&w, &objects(&c, &prog, SCRATCH + BORDER_COLOR_OFFSET))).is_empty());
}

#[test]
fn a_changed_descriptor_or_image_field_is_refused_naming_it() {
    let c = capture();
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("texture word", Box::new(|m| m["descriptors"]["images"][1]["tex_words"][2] = 0.into()), "texture dword 2"),
        ("ibo word", Box::new(|m| m["descriptors"]["images"][0]["ibo_words"][0] = 0.into()), "ibo dword 0"),
        ("sampler", Box::new(|m| m["descriptors"]["sampler_words"][1][0] = 0.into()), "sampler_words"),
        ("width 0", Box::new(|m| m["descriptors"]["images"][1]["width"] = 0.into()), "width"),
        ("narrow pitch", Box::new(|m| m["descriptors"]["images"][2]["pitch"] = 64.into()), "pitch below"),
        ("format", Box::new(|m| m["descriptors"]["images"][2]["format"] = "int8".into()), "unknown image format"),
        ("slot", Box::new(|m| m["descriptors"]["images"][2]["slot"] = 7.into()), "images[].slot"),
        ("17 textures", Box::new(|m| m["descriptors"]["tex_cnt"] = 17.into()), "16"),
        ("outside", Box::new(|m| m["descriptors"]["samp_off"] = 4096.into()), "outside the kernarg block"),
        ("pvtmem", Box::new(|m| m["pvtmem"] = (1u64 << 30).into()), "pvtmem"),
    ];
    for (name, f, want) in cases {
        let mut m = c.meta.clone();
        f(&mut m);
        let e = Program::from_json(&c.blob, m.to_string().as_bytes()).unwrap_err();
        let t = format!("{e}");
        assert!(t.contains(want), "{name}: {t}");
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The captured program with `pvtmem` bytes of private memory per fiber and every value
/// tinygrad derives from it (QCOMProgram: per item ceil(pvtmem / 512), total per item × 256,
/// stack offset round_up(next_pow2(round_up(pvtmem, 512)) × 2048, 4096), stack 4 × offset),
/// the registers as tinygrad writes them.
fn with_pvtmem(meta: &Value, pvtmem: u32) -> Value {
    let per_item = pvtmem.div_ceil(512);
    let total = per_item * 256;
    let offset = (u64::from(pvtmem.next_multiple_of(512).next_power_of_two()) * 2048).next_multiple_of(4096);
    let mut m = meta.clone();
    m["pvtmem"] = pvtmem.into();
    m["pvtmem_size_per_item"] = per_item.into();
    m["pvtmem_size_total"] = total.into();
    m["hw_stack_offset"] = offset.into();
    m["stack_bytes"] = (4 * offset).into();
    m["regs"]["SP_CS_PVT_MEM_PARAM"]["value"] = per_item.into();
    m["regs"]["SP_CS_PVT_MEM_SIZE"]["value"] = total.into();
    m["regs"]["SP_CS_PVT_MEM_STACK_OFFSET"]["value"] = offset.into();
    m
}

#[test]
fn a_program_with_private_memory_gets_its_registers_and_stack() {
    let c = capture();
    let m = with_pvtmem(&c.meta, 1000);
    let prog = Program::from_json(&c.blob, m.to_string().as_bytes()).unwrap();
    assert_eq!((prog.pvtmem, prog.stack_bytes), (1000, 4 * 2 * 1024 * 1024));
    let w = hcq_words(&c, &prog);
    let d = replay(&w, &objects(&c, &prog, SCRATCH + BORDER_COLOR_OFFSET));
    assert_eq!(d.regs[&regs::SP_CS_PVT_MEM_PARAM::REG], 2, "MEMSIZEPERITEM: 2 x 512 bytes");
    assert_eq!(d.regs[&regs::SP_CS_PVT_MEM_SIZE::REG], 512, "TOTALPVTMEMSIZE: 512 x 4 KiB per SP");
    assert_eq!(d.regs[&regs::SP_CS_PVT_MEM_STACK_OFFSET::REG], (2 << 20) >> 11, "the stack 2 MiB in, in 2 KiB units");
    assert!(
        d.loads.iter().any(|(r, at)| *r == regs::SP_CS_PVT_MEM_BASE::REG && at == "reg stack+0x0"),
        "{:?}",
        d.loads
    );
    // An encoder whose private memory is smaller than the program's stack refuses it.
    let a = &c.dispatch["addrs"];
    let enc = A6xxEncoder::new(EncoderConfig {
        scratch: SCRATCH,
        pvt_mem: a["stack"].as_u64().unwrap(),
        pvt_mem_bytes: prog.stack_bytes - 4096,
    })
    .unwrap();
    assert!(enc.add_program(&prog, a["code"].as_u64().unwrap()).unwrap_err().to_string().contains("private/stack"));
    // The derived values must agree with pvtmem.
    let mut bad = m.clone();
    bad["regs"]["SP_CS_PVT_MEM_SIZE"]["value"] = (512 / 4096).into();
    let e = Program::from_json(&c.blob, bad.to_string().as_bytes()).unwrap_err().to_string();
    assert!(e.contains("TOTALPVTMEMSIZE"), "{e}");
}
