//! Image kernels and caller memory on the QCOM device (`QCOM:SIM`): a bundle with tinygrad's
//! captured image matmul (`tests/data/tinygrad_image`, IMAGE-SCHEMA.md) written through
//! `hcq::bundle` types, image views checked at load, and a model input bound zero-copy to the
//! caller's memory (KGSL `MAP_USER_MEM`).

use hcq::DType;
use hcq::bundle::hcqb::{self, Hcqb};
use hcq::bundle::model::{
    ArchLevels, Buffer, BundleModel, GpuLaunch, Input, KernelLaunch, Launch, Objects, Output, Param, Program,
};
use hcq::bundle::{Arch, ArgView, BufferRole};
use hcq::runner::Runner;
use hcq_qcom::device::QcomBackend;
use std::path::PathBuf;

fn data(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tinygrad_image").join(name)).unwrap()
}

/// The captured matmul as a one-launch bundle: buffer 0 the float32 output image (1 × 32 × 4),
/// 1 and 2 the float16 input images (1 × 96 × 4, 1 × 576 × 4), each `height × pitch` bytes.
/// `padded`: the metadata gives the second texture rows of 4672 bytes (its pitch and
/// descriptor word 2 rewritten) while its buffer keeps 4608-byte rows.
fn image_bundle(padded: bool) -> Vec<u8> {
    let mut meta = String::from_utf8(data("r_4_8_16_4_4.adreno.json")).unwrap();
    if padded {
        // TEX_CONST_2 for pitch 4608 (PITCH << 7 | PITCHALIGN 3 | TYPE 2D) becomes pitch 4672 (PITCHALIGN 0).
        assert_eq!(meta.matches("\"pitch\": 4608").count(), 1);
        meta = meta.replace("\"pitch\": 4608", "\"pitch\": 4672").replace("537460739", "537468928");
    }
    let meta = meta.into_bytes();
    let blob = data("r_4_8_16_4_4.a630.bin");
    let shapes: [(DType, u64, u64, u64); 3] = [(DType::F32, 1, 32, 4), (DType::F16, 1, 96, 2), (DType::F16, 1, 576, 2)];
    let nbytes = |i: usize| shapes[i].1 * shapes[i].2 * 4 * shapes[i].3;
    let view = |i: usize| ArgView { buffer: i as u32, offset: 0, nbytes: nbytes(i), dtype: shapes[i].0 };

    let buffers = (0..3)
        .map(|i| Buffer {
            nbytes: nbytes(i),
            dtype: shapes[i].0,
            role: if i == 0 { BufferRole::Output } else { BufferRole::Input },
            also_output: false,
            initial: (i > 0).then(|| (0..nbytes(i)).map(|b| (b % 7) as u8).collect()),
            image: None,
        })
        .collect();
    let signature = (0..3)
        .map(|i| Param {
            name: None,
            slot: i as u32,
            dtype: shapes[i].0,
            shape: vec![shapes[i].1, shapes[i].2, 4],
            is_buffer: true,
        })
        .collect();
    let m = BundleModel {
        name: "image_matmul".into(),
        format_version: 1,
        tinygrad_version: "0.14.0".into(),
        arch_levels: ArchLevels::default(),
        expected_from: Arch::AdrenoA630,
        buffers,
        inputs: (1..3).map(|i| Input { view: view(i), shape: vec![shapes[i].1, shapes[i].2, 4] }).collect(),
        outputs: vec![Output { view: view(0), shape: vec![1, 32, 4], expected: None }],
        programs: vec![Program {
            name: "r_4_8_16_4_4".into(),
            symbol: "r_4_8_16_4_4".into(),
            signature,
            n_buffer_args: 3,
            vars: vec![],
            core_id_arg: None,
            objects: Objects { adreno_a630: Some(blob), ..Objects::default() },
            adreno: Some(meta),
        }],
        launches: vec![Launch::Kernel(KernelLaunch {
            program: 0,
            name: "r_4_8_16_4_4".into(),
            global_size: [1, 1, 1],
            local_size: [1, 1, 1],
            args: (0..3).map(view).collect(),
            vals: vec![],
            core_id_arg: None,
            outs: vec![0],
            ins: vec![1, 2],
            gpu: Some(GpuLaunch { global_size: [8, 1, 1], local_size: [4, 1, 1], vals: vec![] }),
        })],
        graphs: vec![],
    };
    hcqb::write(&m).unwrap()
}

#[test]
fn an_image_bundle_runs_on_qcom_sim() {
    // tinygrad's image matmul (2 textures, 2 samplers, 1 IBO) with this test's inputs: the
    // simulator executes its isam/stib through the descriptors hcq laid out (the capture has
    // no expected bytes for these inputs: the output must be written, and the same twice)
    let bytes = image_bundle(false);
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = hcq_sim_adreno::open(false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    let first = m.output(0).unwrap();
    assert_eq!(first.len(), 512);
    assert!(first.iter().any(|&b| b != 0), "the kernel wrote its output image");
    m.call().unwrap();
    assert_eq!(m.output(0).unwrap(), first, "a replay computes the same output");
}

#[test]
fn an_image_view_smaller_than_height_times_pitch_is_refused_at_load() {
    let bytes = image_bundle(true);
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = hcq_sim_adreno::open(false).unwrap();
    let mut b = QcomBackend::new(dev).unwrap();
    // prepare checks the launch before the simulator's instruction check of load_program
    let e = hcq::runner::Backend::prepare(&mut b, &file, Arch::AdrenoA630).unwrap_err();
    let t = e.to_string();
    assert!(t.contains("smaller than height x pitch") && t.contains("launch 0"), "{t}");
}

/// Page-aligned caller memory of `n` bytes (inside a larger allocation, so the page-rounded
/// mapping stays inside memory this test owns).
struct Caller {
    buf: Vec<u8>,
    at: usize,
    n: usize,
}

impl Caller {
    fn new(data: &[u8]) -> Caller {
        let n = data.len();
        let mut buf = vec![0u8; n.next_multiple_of(4096) + 4096];
        let at = (buf.as_ptr() as usize).next_multiple_of(4096) - buf.as_ptr() as usize;
        buf[at..at + n].copy_from_slice(data);
        Caller { buf, at, n }
    }
    fn ptr(&mut self) -> *mut u8 {
        self.buf[self.at..].as_mut_ptr()
    }
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.buf[self.at..self.at + self.n]
    }
}

#[test]
fn a_bound_input_is_read_from_the_callers_memory_without_a_copy() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/elementwise");
    let bytes = hcqb::write(&hcq::bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let input = file.inputs().next().unwrap().view;
    let initial =
        file.initial_data(input.buffer as usize).unwrap()[input.offset as usize..][..input.nbytes as usize].to_vec();
    let dev = hcq_sim_adreno::open(false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    let before = m.output(0).unwrap();
    assert!(m.check().unwrap().ok);

    let own = m.backend().buffer_addr(input.buffer as usize).unwrap() + input.offset;
    let mut caller = Caller::new(&initial);
    // SAFETY: `caller` outlives every call below and is unbound (waiting for them) before it drops.
    unsafe { m.backend_mut().bind_host(own, input.nbytes, caller.ptr()) }.unwrap();
    m.call().unwrap();
    assert_eq!(m.output(0).unwrap(), before, "the caller's copy of the input gives the same output");
    // The kernels read the caller's bytes: changing them (no set_input, no copy) changes the
    // output, and the model's own input memory is untouched.
    for (i, b) in caller.bytes().chunks_exact_mut(4).enumerate() {
        b.copy_from_slice(&(i as f32).to_le_bytes());
    }
    m.call().unwrap();
    let bound = m.output(0).unwrap();
    assert_ne!(bound, before);
    let mut own_now = vec![0u8; initial.len()];
    hcq::runner::Backend::read(m.backend(), input.buffer as usize, input.offset, &mut own_now).unwrap();
    assert_eq!(own_now, initial, "the bound input was not copied into the model's memory");
    // Bound back: the model's own memory again.
    // SAFETY: a null pointer binds the range back to the model's memory.
    unsafe { m.backend_mut().bind_host(own, input.nbytes, std::ptr::null_mut()) }.unwrap();
    m.call().unwrap();
    assert_eq!(m.output(0).unwrap(), before);
    assert!(m.check().unwrap().ok);
    drop(caller);
}

#[test]
fn binding_caller_memory_is_refused_where_an_argument_reaches_across_it() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/elementwise");
    let bytes = hcqb::write(&hcq::bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let input = file.inputs().next().unwrap().view;
    let dev = hcq_sim_adreno::open(false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    let own = m.backend().buffer_addr(input.buffer as usize).unwrap() + input.offset;
    let mut caller = Caller::new(&vec![0u8; input.nbytes as usize]);
    // half the input: the kernel's argument (the whole input) reaches across the range's edge
    // SAFETY: refused before anything is mapped.
    let e = unsafe { m.backend_mut().bind_host(own, input.nbytes / 2, caller.ptr()) }.unwrap_err();
    assert!(e.to_string().contains("reaches across the range's edge"), "{e}");
    m.call().unwrap();
    assert!(m.check().unwrap().ok, "nothing changed");
}

/// Every `image-*` entry of the GPU hostile corpus (`tests/data/bundles-gpu-bad`, made by its
/// generate.py from the captured image matmul) is refused at load on `QCOM:SIM`, before
/// anything runs, for the reason its `expect` file names (not for the simulator's missing image
/// instructions, which the metadata checks come before).
#[test]
fn every_hostile_image_entry_is_refused_at_load_naming_its_field() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/bundles-gpu-bad");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("image-"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "{names:?}");
    for d in names {
        let want = std::fs::read_to_string(d.join("expect")).unwrap();
        let err = (|| -> hcq::Result<()> {
            let bytes = hcqb::write(&hcq::bundle::v1::import_dir(&d)?)?;
            let file = Hcqb::parse(&bytes)?;
            let dev = hcq_sim_adreno::open(false)?;
            Runner::load(QcomBackend::new(dev)?, &file).map(|_| ())
        })()
        .unwrap_err();
        let t = err.to_string();
        assert!(t.contains(want.trim()), "{}: {t}", d.display());
        assert!(!t.contains("shader core does not run"), "{}: {t}", d.display());
    }
}

/// Decision (issue 18 §2, tinygrad's `HCQProgram.__call__`): a call starts with its timeline
/// wait, then a cache flush and invalidate (the barrier), before its first dispatch.
#[test]
fn a_call_flushes_and_invalidates_the_caches_before_its_first_dispatch() {
    use hcq_adreno::pm4::op;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/elementwise");
    let bytes = hcqb::write(&hcq::bundle::v1::import_dir(&dir).unwrap()).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let m = Runner::load(QcomBackend::new(hcq_sim_adreno::open(false).unwrap()).unwrap(), &file).unwrap();
    let w = m.backend().words();
    // the type-7 opcodes up to the first CP_SET_MARKER (the dispatch's first packet)
    let (mut ops, mut i) = (vec![], 0);
    while i < w.len() && w[i] >> 28 == 7 {
        let op7 = (w[i] >> 16) & 0x7f;
        if op7 == op::CP_SET_MARKER {
            break;
        }
        ops.push((op7, w.get(i + 1).copied().unwrap_or(0) & 0xff));
        i += 1 + (w[i] & 0x3fff) as usize;
    }
    let events: Vec<u32> = ops.iter().filter(|&&(o, _)| o == op::CP_EVENT_WRITE).map(|&(_, e)| e).collect();
    assert_eq!(events, [4, 49], "CACHE_FLUSH_TS, then CACHE_INVALIDATE (a6xx event numbers)");
    let ops: Vec<u32> = ops.iter().map(|&(o, _)| o).collect();
    assert_eq!(
        ops,
        [
            op::CP_WAIT_REG_MEM,
            op::CP_WAIT_REG_MEM,
            op::CP_EVENT_WRITE,
            op::CP_EVENT_WRITE,
            op::CP_WAIT_MEM_WRITES,
            op::CP_WAIT_FOR_IDLE
        ],
        "wait, then flush (CACHE_FLUSH_TS), invalidate (CACHE_INVALIDATE), wait for writes and idle"
    );
}
