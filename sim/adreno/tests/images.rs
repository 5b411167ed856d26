//! tinygrad 0.14's own image dispatches on the simulated CP and ir3 core: the packets its
//! unmodified QCOM runtime emitted for a FLOAT16=1 IMAGE=1 NOLOCALS=1 conv2d + relu and a kernel
//! that spills (textures,
//! IBOs, samplers, border color table, private-memory registers), with the GPU objects each
//! dispatch read, replayed here; each dispatch must write exactly the bytes recorded (the
//! generator checked the final result against numpy before recording; data and generator in
//! `tests/data/images/`). Then the same dispatches with one descriptor word broken must fail with
//! an error naming the dispatch, the descriptor and what is wrong, writing nothing; and a
//! texture load moved into the packet (`SS6_DIRECT`) must give the same result. One recorded
//! kernel spills to private memory (pvtmem > 0): it needs `SP_CS_PVT_MEM_BASE` mapped.

use hcq_adreno::pm4::pkt7;
use hcq_sim_adreno::Ir3Dispatch;
use hcq_sim_adreno::cp::{Cp, Outcome, SparseMemory};
use serde_json::Value;

const IB: u64 = 0x1000_0000;

struct Obj {
    addr: u64,
    size: usize,
    bytes: Vec<u8>,
}

struct Rec {
    name: String,
    words: Vec<u32>,
    objects: Vec<Obj>,
    outputs: Vec<Obj>,
    tex_cnt: u64,
    ibo_cnt: u64,
    pvtmem: u64,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn obj(v: &Value) -> Obj {
    let size = v["size"].as_u64().unwrap() as usize;
    let mut bytes = hex(v["hex"].as_str().unwrap());
    bytes.resize(size, 0);
    Obj { addr: v["addr"].as_u64().unwrap(), size, bytes }
}

fn records() -> Vec<Rec> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/images/image_dispatches.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| Rec {
            name: d["name"].as_str().unwrap().into(),
            words: d["words"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap() as u32).collect(),
            objects: d["objects"].as_array().unwrap().iter().map(obj).collect(),
            outputs: d["outputs"].as_array().unwrap().iter().map(obj).collect(),
            tex_cnt: d["tex_cnt"].as_u64().unwrap(),
            ibo_cnt: d["ibo_cnt"].as_u64().unwrap(),
            pvtmem: d["pvtmem"].as_u64().unwrap(),
        })
        .collect()
}

fn memory(r: &Rec, words: &[u32]) -> SparseMemory {
    memory_without(r, words, None)
}

/// The dispatch's objects (all but object `skip`) and its IB.
fn memory_without(r: &Rec, words: &[u32], skip: Option<usize>) -> SparseMemory {
    let mut mem = SparseMemory::new();
    for (_, o) in r.objects.iter().enumerate().filter(|(k, _)| Some(*k) != skip) {
        mem.map(o.addr, o.size.next_multiple_of(4)).unwrap();
        mem.write_bytes(o.addr, &o.bytes).unwrap();
    }
    mem.map(IB, 4 * words.len()).unwrap();
    mem.write_words(IB, words).unwrap();
    mem
}

fn run(words: &[u32], mem: &mut SparseMemory) -> hcq::Result<Outcome> {
    Cp::new().submit(IB, words.len() as u32, mem, &mut Ir3Dispatch::new())
}

fn read(mem: &SparseMemory, o: &Obj) -> Vec<u8> {
    let mut b = vec![0; o.size];
    mem.read_bytes(o.addr, &mut b).unwrap();
    b
}

#[test]
fn tinygrads_image_dispatches_write_the_recorded_bytes() {
    let recs = records();
    assert!(recs.len() >= 3, "{} dispatches", recs.len());
    assert!(recs.iter().any(|r| r.tex_cnt > 0) && recs.iter().any(|r| r.ibo_cnt > 0));
    assert!(recs.iter().any(|r| r.pvtmem > 0), "no dispatch spills to private memory");
    for r in &recs {
        let mut mem = memory(r, &r.words);
        assert_eq!(run(&r.words, &mut mem).unwrap_or_else(|e| panic!("{}: {e}", r.name)), Outcome::Done);
        for (k, o) in r.outputs.iter().enumerate() {
            assert!(read(&mem, o) == o.bytes, "{}: output {k} at {:#x} differs from tinygrad's run", r.name, o.addr);
        }
    }
}

/// The kernarg block (the first object) holds the descriptors at 2048: textures, then IBOs.
fn broken(r: &Rec, word: usize, f: impl Fn(u32) -> u32) -> String {
    let mut mem = memory(r, &r.words);
    patch(r, &mut mem, word, f);
    let before: Vec<Vec<u8>> = r.outputs.iter().map(|o| read(&mem, o)).collect();
    let e = run(&r.words, &mut mem).expect_err("a broken descriptor must stop the dispatch");
    let after: Vec<Vec<u8>> = r.outputs.iter().map(|o| read(&mem, o)).collect();
    assert!(before == after, "{}: a refused dispatch wrote memory", r.name);
    format!("{e}")
}

#[test]
fn broken_descriptors_are_errors_naming_the_dispatch_and_descriptor() {
    let recs = records();
    let r = recs.iter().find(|r| r.tex_cnt > 0 && r.ibo_cnt > 0).expect("a dispatch with a texture and an IBO");
    let ibo = 16 * r.tex_cnt as usize;
    type Case = (usize, fn(u32) -> u32, &'static str);
    let cases: [Case; 6] = [
        (0, |w| w & !(0xff << 22) | 0x01 << 22, "FMT is not a modelled format"),
        (2, |w| w & !(7 << 29) | 3 << 29, "TYPE is not A6XX_TEX_2D"),
        (2, |w| w & !(0x3f_ffff << 7) | 8 << 7, "PITCH is smaller"),
        (5, |_| 0x1_0000, "outside every GPU object"),
        (0, |w| w | 1, "TILE_MODE"),
        (1, |w| w & !0x7fff, "WIDTH or HEIGHT is 0"),
    ];
    // The sampler follows the textures and IBOs (16 dwords each): a linear filter is refused.
    let samp = ibo + 16 * r.ibo_cnt as usize;
    let e = broken(r, samp, |w| w | 1 << 1);
    assert!(e.contains("sampler 0") && e.contains("XY_MAG") && e.contains("dispatch 0"), "{e}");
    for (word, f, want) in cases {
        for (base, kind) in [(0, "texture descriptor 0"), (ibo, "IBO descriptor 0")] {
            let e = broken(r, base + word, f);
            assert!(e.contains(want) && e.contains(kind) && e.contains("dispatch 0"), "{kind}, word {word}: {e}");
        }
    }
}

#[test]
fn a_direct_texture_load_equals_the_indirect_one() {
    let recs = records();
    let r = recs.iter().find(|r| r.tex_cnt > 0).unwrap();
    // Find the CP_LOAD_STATE6_FRAG of ST6_CONSTANTS / SB6_CS_TEX and inline its descriptors.
    let (mut out, mut short, mut k, mut moved) = (Vec::new(), Vec::new(), 0, false);
    let mem0 = memory(r, &r.words);
    while k < r.words.len() {
        let h = r.words[k];
        let n = if h >> 28 == 7 { (h & 0x3fff) as usize } else { ((h & 0x7f) as usize).max(1) };
        let opcode = (h >> 16) & 0x7f;
        let d0 = r.words.get(k + 1).copied().unwrap_or(0);
        // CP_LOAD_STATE6_0: STATE_TYPE 14..15, STATE_SRC 16..17, STATE_BLOCK 18..21, NUM_UNIT 22..31.
        if h >> 28 == 7 && opcode == 0x34 && (d0 >> 14) & 3 == 1 && (d0 >> 16) & 3 == 2 && (d0 >> 18) & 0xf == 5 {
            let units = (d0 >> 22) as usize;
            let addr = u64::from(r.words[k + 2]) | u64::from(r.words[k + 3]) << 32;
            let mut data = vec![0u8; 64 * units];
            mem0.read_bytes(addr, &mut data).unwrap();
            let mut payload = vec![d0 & !(3 << 16), 0, 0];
            payload.extend(data.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
            pkt7(&mut out, 0x34, &payload).unwrap();
            pkt7(&mut short, 0x34, &payload[..payload.len() - 1]).unwrap();
            moved = true;
        } else {
            out.extend_from_slice(&r.words[k..k + 1 + n]);
            short.extend_from_slice(&r.words[k..k + 1 + n]);
        }
        k += 1 + n;
    }
    assert!(moved, "no indirect texture load in {}", r.name);
    let mut mem = memory(r, &out);
    assert_eq!(run(&out, &mut mem).unwrap(), Outcome::Done);
    for o in &r.outputs {
        assert!(read(&mem, o) == o.bytes, "{}: output at {:#x}", r.name, o.addr);
    }
    // A direct load whose packet is shorter than NUM_UNIT units is malformed.
    let mut mem = memory(r, &short);
    let e = run(&short, &mut mem).unwrap_err().to_string();
    assert!(e.contains("SS6_DIRECT") && e.contains("shorter than NUM_UNIT"), "{e}");
}

#[test]
fn a_spilling_dispatch_needs_its_private_memory_mapped() {
    let recs = records();
    let r = recs.iter().find(|r| r.pvtmem > 0).expect("a dispatch with pvtmem > 0");
    // Objects: kernargs, shader, border color table, private-memory stack, buffers..., dummy page.
    let mut mem = memory_without(r, &r.words, Some(3));
    let e = run(&r.words, &mut mem).unwrap_err().to_string();
    assert!(e.contains("SP_CS_PVT_MEM_BASE") && e.contains("dispatch 0"), "{e}");
}

/// Set descriptor `word` of the kernarg block (textures first, then IBOs) in `mem`.
fn patch(r: &Rec, mem: &mut SparseMemory, word: usize, f: impl Fn(u32) -> u32) {
    let at = r.objects[0].addr + 2048 + 4 * word as u64;
    let mut b = [0u8; 4];
    mem.read_bytes(at, &mut b).unwrap();
    mem.write_bytes(at, &f(u32::from_le_bytes(b)).to_le_bytes()).unwrap();
}

/// tinygrad's QCOM runtime takes a descriptor's width and height from the kernel's image dtype,
/// not from the buffer under it: a texture whose extent reaches past every GPU object runs, as
/// on the hardware, which fetches only the texels a kernel addresses.
#[test]
fn a_texture_reaching_past_its_object_runs_where_the_kernel_reads_inside_it() {
    let recs = records();
    let mut n = 0;
    for r in recs.iter().filter(|r| r.tex_cnt > 0) {
        let mut mem = memory(r, &r.words);
        for t in 0..r.tex_cnt as usize {
            // A6XX_TEX_CONST_1: HEIGHT 15..29 at its largest: the extent is far past any object
            patch(r, &mut mem, 16 * t + 1, |w| w | 0x7fff << 15);
        }
        assert_eq!(run(&r.words, &mut mem).unwrap_or_else(|e| panic!("{}: {e}", r.name)), Outcome::Done);
        for (k, o) in r.outputs.iter().enumerate() {
            assert!(read(&mem, o) == o.bytes, "{}: output {k} differs from tinygrad's run", r.name);
        }
        n += 1;
    }
    assert!(n > 0, "no dispatch with a texture");
}

/// A texel fetch outside GPU memory is a fault at the access, naming the instruction, the
/// work-group, the lane and the address: the object under texture 0 is mapped for its first
/// 32 bytes only (its base stays in GPU memory, so the descriptor itself is taken).
#[test]
fn a_texel_fetched_outside_gpu_memory_is_a_fault_naming_the_address() {
    let recs = records();
    let r = recs.iter().find(|r| r.tex_cnt > 0).expect("a dispatch with a texture");
    let full = memory(r, &r.words);
    let mut d = [0u8; 8];
    full.read_bytes(r.objects[0].addr + 2048 + 16, &mut d).unwrap();
    let base = u64::from(u32::from_le_bytes([d[0], d[1], d[2], d[3]]) & !0x1f)
        | u64::from(u32::from_le_bytes([d[4], d[5], d[6], d[7]]) & 0x1_ffff) << 32;
    let (k, o) = r.objects.iter().enumerate().find(|(_, o)| (o.addr..o.addr + o.size as u64).contains(&base)).unwrap();
    assert!(k > 0, "texture 0 is not in the kernarg object");
    let mut mem = memory_without(r, &r.words, Some(k));
    mem.map(o.addr, (base - o.addr + 32) as usize).unwrap();
    let e = run(&r.words, &mut mem).expect_err("texels outside GPU memory").to_string();
    let at = e.split("fault at address 0x").nth(1).and_then(|t| u64::from_str_radix(t.split(' ').next()?, 16).ok());
    let at = at.unwrap_or_else(|| panic!("no fault address: {e}"));
    assert!(at >= base + 32 && at < o.addr + o.size as u64 && e.contains("lane"), "{e}");
}
