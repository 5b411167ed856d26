//! Image kernels and caller memory on the QCOM device (`QCOM:SIM`): a bundle with tinygrad's
//! captured image matmul (`tests/data/tinygrad_image`, IMAGE-SCHEMA.md) written through
//! `hcq_bundle` types, image views checked at load, and a model input bound zero-copy to the
//! caller's memory (KGSL `MAP_USER_MEM`).

use hcq::DType;
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_bundle::model::{
    ArchLevels, ArgImage, Buffer, BundleModel, GpuLaunch, Image, KernelLaunch, Launch, Objects, Output, Param, Program,
};
use hcq_bundle::{Arch, ArgView, BufferRole};
use hcq_qcom::device::QcomBackend;
use hcq_runner::Runner;
use std::path::PathBuf;

fn data(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tinygrad_image").join(name)).unwrap()
}

/// The image views of the captured matmul's three arguments (its metadata's): the float32
/// output image (1 x 32 x 4) and the two float16 input images (1 x 96 x 4, 1 x 576 x 4).
const OUT: Image = Image { width: 32, height: 1, pitch: 512, format: DType::F32 };
const TEX0: Image = Image { width: 96, height: 1, pitch: 768, format: DType::F16 };
const TEX1: Image = Image { width: 576, height: 1, pitch: 4608, format: DType::F16 };

/// Where a test bundle says which image view each image binding has.
#[derive(Clone, Copy, PartialEq)]
enum Views {
    /// `launches[].args[j].image` (what the exporter writes).
    PerArg,
    /// `buffers[].image` only (older bundles).
    PerBuffer,
    /// Neither.
    None,
}

/// The captured matmul as a program, its metadata as captured or with `edit` applied.
fn matmul_program(edit: impl FnOnce(String) -> String) -> Program {
    let meta = edit(String::from_utf8(data("r_4_8_16_4_4.adreno.json")).unwrap()).into_bytes();
    let shapes = [OUT, TEX0, TEX1];
    Program {
        name: "r_4_8_16_4_4".into(),
        symbol: "r_4_8_16_4_4".into(),
        signature: (0..3)
            .map(|i| Param {
                name: None,
                slot: i as u32,
                dtype: shapes[i].format,
                shape: vec![1, u64::from(shapes[i].width), 4],
                is_buffer: true,
            })
            .collect(),
        n_buffer_args: 3,
        vars: vec![],
        core_id_arg: None,
        objects: Objects { adreno_a630: Some(data("r_4_8_16_4_4.a630.bin")), ..Objects::default() },
        adreno: Some(meta),
    }
}

/// A kernel launch of program `program` over `args` (each a view and the image view it is
/// bound under, if any), with the matmul's grid.
fn launch(program: u32, args: &[(ArgView, Option<Image>)], gpu: GpuLaunch) -> Launch {
    Launch::Kernel(KernelLaunch {
        program,
        name: if program == 0 { "r_4_8_16_4_4".into() } else { "E_16".into() },
        global_size: [1, 1, 1],
        local_size: [1, 1, 1],
        args: args.iter().map(|(v, _)| *v).collect(),
        vals: vec![],
        core_id_arg: None,
        outs: vec![0],
        ins: (1..args.len() as u32).collect(),
        gpu: Some(gpu),
        images: args
            .iter()
            .enumerate()
            .filter_map(|(j, (_, im))| im.map(|image| ArgImage { arg: j as u32, image }))
            .collect(),
    })
}

fn matmul_grid() -> GpuLaunch {
    GpuLaunch { global_size: [8, 1, 1], local_size: [4, 1, 1], vals: vec![] }
}

fn view(buffer: u32, offset: u64, nbytes: u64, dtype: DType) -> ArgView {
    ArgView { buffer, offset, nbytes, dtype }
}

/// Deterministic bytes for a float16 input (high bytes small: no NaN or infinity).
fn half_bytes(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|b| ((b * 7 + seed) % 11) as u8 >> (b % 2 * 2)).collect()
}

fn buffer(nbytes: u64, dtype: DType, initial: Option<Vec<u8>>) -> Buffer {
    let role = if initial.is_some() { BufferRole::Weight } else { BufferRole::Output };
    Buffer { nbytes, dtype, role, also_output: false, initial, image: None }
}

/// A graph-less model of `programs`, `buffers` and `launches` whose outputs are `outputs`
/// (whole buffers, no expected bytes).
fn model(programs: Vec<Program>, buffers: Vec<Buffer>, launches: Vec<Launch>, outputs: &[u32]) -> Vec<u8> {
    let outputs = outputs
        .iter()
        .map(|&b| {
            let (n, dt) = (buffers[b as usize].nbytes, buffers[b as usize].dtype);
            Output { view: view(b, 0, n, dt), shape: vec![n / dt.size() as u64], expected: None }
        })
        .collect();
    let m = BundleModel {
        name: "image_views".into(),
        format_version: 2,
        tinygrad_version: "0.14.0".into(),
        arch_levels: ArchLevels::default(),
        expected_from: Arch::AdrenoA630,
        buffers,
        inputs: vec![],
        outputs,
        programs,
        launches,
        graphs: vec![],
    };
    m.validate().unwrap();
    hcqb::write(&m).unwrap()
}

/// The captured matmul as a one-launch bundle: buffer 0 the float32 output image, 1 and 2 the
/// float16 input images, each `height × pitch` bytes; `views` says where their image views are.
fn image_bundle(views: Views) -> Vec<u8> {
    let ims = [OUT, TEX0, TEX1];
    let nbytes = |i: usize| u64::from(ims[i].height * ims[i].pitch);
    let mut buffers: Vec<Buffer> = (0..3)
        .map(|i| buffer(nbytes(i), ims[i].format, (i > 0).then(|| (0..nbytes(i)).map(|b| (b % 7) as u8).collect())))
        .collect();
    if views == Views::PerBuffer {
        for (b, im) in buffers.iter_mut().zip(ims) {
            b.image = Some(im);
        }
    }
    let per_arg = |i: usize| (views == Views::PerArg).then_some(ims[i]);
    let args: Vec<(ArgView, Option<Image>)> =
        (0..3).map(|i| (view(i as u32, 0, nbytes(i), ims[i].format), per_arg(i))).collect();
    model(vec![matmul_program(|m| m)], buffers, vec![launch(0, &args, matmul_grid())], &[0])
}

/// Load `bytes` on a fresh `QCOM:SIM`, make `calls` calls and return every output.
fn run(bytes: &[u8], calls: usize) -> hcq::Result<Vec<Vec<u8>>> {
    let file = Hcqb::parse(bytes)?;
    let mut m = Runner::load(QcomBackend::new(hcq_sim_adreno::open(false)?)?, &file)?;
    for _ in 0..calls {
        m.call()?;
    }
    (0..m.n_outputs()).map(|i| m.output(i)).collect()
}

#[test]
fn an_image_bundle_runs_on_qcom_sim() {
    // tinygrad's image matmul (2 textures, 2 samplers, 1 IBO) with this test's inputs: the
    // simulator executes its isam/stib through the descriptors hcq laid out (the capture has
    // no expected bytes for these inputs: the output must be written, and the same twice)
    let bytes = image_bundle(Views::PerArg);
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = hcq_sim_adreno::open(false).unwrap();
    let mut m = Runner::load(QcomBackend::new(dev).unwrap(), &file).unwrap();
    m.call().unwrap();
    let first = m.output(0).unwrap();
    assert_eq!(first.len(), 512);
    assert!(first.iter().any(|&b| b != 0), "the kernel wrote its output image");
    m.call().unwrap();
    assert_eq!(m.output(0).unwrap(), first, "a replay computes the same output");
    // an older bundle (views on the buffers) computes the same
    assert_eq!(run(&image_bundle(Views::PerBuffer), 1).unwrap(), [first]);
}

#[test]
fn an_image_binding_without_a_view_is_refused_naming_launch_and_argument() {
    let bytes = image_bundle(Views::None);
    let file = Hcqb::parse(&bytes).unwrap();
    let mut b = QcomBackend::new(hcq_sim_adreno::open(false).unwrap()).unwrap();
    let e = hcq_runner::Backend::prepare(&mut b, &file, Arch::AdrenoA630).unwrap_err();
    let t = e.to_string();
    assert!(t.contains("launch 0") && t.contains("argument 0") && t.contains("no image view"), "{t}");
}

#[test]
fn an_image_view_smaller_than_height_times_pitch_is_refused_at_load() {
    // buffer 2 declares 4672-byte rows (and is that large), the launch passes a 4608-byte view
    let ims = [OUT, TEX0, TEX1];
    let mut buffers: Vec<Buffer> = (0..3).map(|i| buffer(u64::from(ims[i].pitch) + 64, ims[i].format, None)).collect();
    for (b, im) in buffers.iter_mut().zip(ims) {
        b.image = Some(Image { pitch: im.pitch + 64, ..im });
    }
    let args: Vec<(ArgView, Option<Image>)> =
        (0..3).map(|i| (view(i as u32, 0, u64::from(ims[i].pitch), ims[i].format), None)).collect();
    let bytes = model(vec![matmul_program(|m| m)], buffers, vec![launch(0, &args, matmul_grid())], &[0]);
    let file = Hcqb::parse(&bytes).unwrap();
    let mut b = QcomBackend::new(hcq_sim_adreno::open(false).unwrap()).unwrap();
    // prepare checks the launch before the simulator's instruction check of load_program
    let e = hcq_runner::Backend::prepare(&mut b, &file, Arch::AdrenoA630).unwrap_err();
    let t = e.to_string();
    assert!(t.contains("smaller than height x pitch") && t.contains("launch 0"), "{t}");
}

#[test]
fn image_views_the_a630_cannot_take_are_refused_at_load() {
    for (im, want) in [
        (Image { pitch: 800, ..TEX0 }, "a multiple of 64"),
        (Image { width: 40000, pitch: 40000 * 8, height: 1, ..TEX0 }, "15-bit"),
    ] {
        let ims = [OUT, im, TEX1];
        let nbytes = |i: usize| u64::from(ims[i].height * ims[i].pitch);
        let buffers = (0..3).map(|i| buffer(nbytes(i), ims[i].format, None)).collect();
        let args: Vec<(ArgView, Option<Image>)> =
            (0..3).map(|i| (view(i as u32, 0, nbytes(i), ims[i].format), Some(ims[i]))).collect();
        let bytes = model(vec![matmul_program(|m| m)], buffers, vec![launch(0, &args, matmul_grid())], &[0]);
        let e = run(&bytes, 0).unwrap_err();
        let t = e.to_string();
        assert!(t.contains(want) && t.contains("launch 0") && t.contains("argument 1"), "{want}: {t}");
    }
}

/// chain100's `x + 1` kernel (16 floats: out, in) with its Adreno object and dispatch.
fn plus_one_program() -> (Program, GpuLaunch) {
    let m = hcq_bundle::v1::import_dir(hcq_testkit::example("chain100")).unwrap();
    let mut p = m.programs[0].clone();
    p.objects = Objects { adreno_a630: p.objects.adreno_a630.take(), ..Objects::default() };
    let Launch::Kernel(k) = &m.launches[0] else { panic!("a kernel") };
    (p, k.gpu.clone().unwrap())
}

/// Issue 28 §1: one buffer (X, float16, 4608 bytes) bound under two image views by two
/// launches — the second texture of launch 0 (576 x 1 texels), the first texture of launch 1
/// under a narrower view than the program's 96 texels (one texel at a 64-byte pitch: the
/// texels past it read the zero border) — and as a plain float32 buffer by a third (`x + 1`
/// over its first 64 bytes). The same bundle with each view's bytes in a buffer of their own
/// (the narrow view's tail zeroed, as the border reads) gives the same outputs, bit for bit.
#[test]
fn one_buffer_under_two_image_views_and_as_a_plain_buffer_runs_exact_on_qcom_sim() {
    let (plus, plus_grid) = plus_one_program();
    let x = half_bytes(4608, 1);
    let y = half_bytes(4608, 5);
    let narrow = Image { width: 1, height: 1, pitch: 64, format: DType::F16 };
    let out_bufs = || vec![buffer(512, DType::F32, None), buffer(512, DType::F32, None), buffer(64, DType::F32, None)];
    // buffers 0..3 the outputs, 3 Y, 4 X (aliased) or X1 (split), 5 X2, 6 X3 (split only)
    let aliased = |x_view_1: Image| {
        let mut b = out_bufs();
        b.push(buffer(4608, DType::F16, Some(y.clone())));
        b.push(buffer(4608, DType::F16, Some(x.clone())));
        let launches = vec![
            launch(
                0,
                &[
                    (view(0, 0, 512, DType::F32), Some(OUT)),
                    (view(3, 0, 768, DType::F16), Some(TEX0)),
                    (view(4, 0, 4608, DType::F16), Some(TEX1)),
                ],
                matmul_grid(),
            ),
            launch(
                0,
                &[
                    (view(1, 0, 512, DType::F32), Some(OUT)),
                    (view(4, 0, 768, DType::F16), Some(x_view_1)),
                    (view(3, 0, 4608, DType::F16), Some(TEX1)),
                ],
                matmul_grid(),
            ),
            launch(1, &[(view(2, 0, 64, DType::F32), None), (view(4, 0, 64, DType::F32), None)], plus_grid.clone()),
        ];
        model(vec![matmul_program(|m| m), plus.clone()], b, launches, &[0, 1, 2])
    };
    let split = {
        let mut b = out_bufs();
        b.push(buffer(4608, DType::F16, Some(y.clone())));
        b.push(buffer(4608, DType::F16, Some(x.clone())));
        let mut x2 = x[..8].to_vec();
        x2.resize(768, 0);
        b.push(buffer(768, DType::F16, Some(x2)));
        b.push(buffer(64, DType::F32, Some(x[..64].to_vec())));
        let launches = vec![
            launch(
                0,
                &[
                    (view(0, 0, 512, DType::F32), Some(OUT)),
                    (view(3, 0, 768, DType::F16), Some(TEX0)),
                    (view(4, 0, 4608, DType::F16), Some(TEX1)),
                ],
                matmul_grid(),
            ),
            launch(
                0,
                &[
                    (view(1, 0, 512, DType::F32), Some(OUT)),
                    (view(5, 0, 768, DType::F16), Some(TEX0)),
                    (view(3, 0, 4608, DType::F16), Some(TEX1)),
                ],
                matmul_grid(),
            ),
            launch(1, &[(view(2, 0, 64, DType::F32), None), (view(6, 0, 64, DType::F32), None)], plus_grid.clone()),
        ];
        model(vec![matmul_program(|m| m), plus.clone()], b, launches, &[0, 1, 2])
    };
    let bytes = aliased(narrow);
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.version(), (2, 1));
    let got = run(&bytes, 2).unwrap();
    let want = run(&split, 1).unwrap();
    assert_eq!(got, want, "the aliased bundle computes what the split one does");
    assert!(got.iter().all(|o| o.iter().any(|&b| b != 0)), "every launch wrote its output");
    // the plain launch read X's bytes as float32 and added one
    let plus_one: Vec<u8> =
        x[..64].chunks_exact(4).flat_map(|c| (f32::from_le_bytes(c.try_into().unwrap()) + 1.0).to_le_bytes()).collect();
    assert_eq!(got[2], plus_one);
    // not vacuous: the narrow view changes launch 1's output (its descriptor is the launch's,
    // not the program's 96-texel one)
    let full = run(&aliased(TEX0), 1).unwrap();
    assert_eq!(full[0], got[0]);
    assert_ne!(full[1], got[1], "the texels past the narrow view are read as the border");
}

/// Issue 28 §1: one buffer in two parameter slots of one kernel, under two image views (the
/// matmul's two textures both from X), gives what two copies of X give.
#[test]
fn one_buffer_in_two_image_slots_of_one_launch_runs_exact_on_qcom_sim() {
    let x = half_bytes(4608, 3);
    let bufs = |extra: bool| {
        let mut b = vec![buffer(512, DType::F32, None), buffer(4608, DType::F16, Some(x.clone()))];
        if extra {
            b.push(buffer(4608, DType::F16, Some(x.clone())));
        }
        b
    };
    let args = |second: u32| {
        [
            (view(0, 0, 512, DType::F32), Some(OUT)),
            (view(1, 0, 768, DType::F16), Some(TEX0)),
            (view(second, 0, 4608, DType::F16), Some(TEX1)),
        ]
    };
    let one = model(vec![matmul_program(|m| m)], bufs(false), vec![launch(0, &args(1), matmul_grid())], &[0]);
    let two = model(vec![matmul_program(|m| m)], bufs(true), vec![launch(0, &args(2), matmul_grid())], &[0]);
    let got = run(&one, 1).unwrap();
    assert_eq!(got, run(&two, 1).unwrap());
    assert!(got[0].iter().any(|&b| b != 0));
}

/// Issue 28 §1: one view in two plain parameter slots (elementwise reads its input twice) runs
/// on `QCOM:SIM` as it does with a copy of the input in the second slot.
#[test]
fn one_view_in_two_plain_slots_runs_as_a_copy_in_the_second_does_on_qcom_sim() {
    let m = hcq_bundle::v1::import_dir(hcq_testkit::example("elementwise")).unwrap();
    let (aliased, copied) = read_twice(&m);
    let got = run(&hcqb::write(&aliased).unwrap(), 1).unwrap();
    assert_eq!(got, run(&hcqb::write(&copied).unwrap(), 1).unwrap());
    assert_ne!(Some(&got[0]), m.outputs[0].expected.as_ref(), "the second slot's bytes changed the output");
}

/// `m` (elementwise: `out, x, w`) with its launch reading `x` in both input slots, and the same
/// with a weight buffer holding `x`'s bytes in the second.
fn read_twice(m: &BundleModel) -> (BundleModel, BundleModel) {
    let mut aliased = m.clone();
    let Launch::Kernel(k) = &mut aliased.launches[0] else { panic!("a kernel") };
    k.args[2] = k.args[1];
    let mut copied = m.clone();
    let Launch::Kernel(k) = &copied.launches[0] else { panic!("a kernel") };
    let (x, w) = (k.args[1].buffer as usize, k.args[2].buffer as usize);
    copied.buffers[w].initial = copied.buffers[x].initial.clone();
    aliased.validate().unwrap();
    copied.validate().unwrap();
    (aliased, copied)
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
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(hcq_testkit::example("elementwise")).unwrap()).unwrap();
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
    hcq_runner::Backend::read(m.backend(), input.buffer as usize, input.offset, &mut own_now).unwrap();
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
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(hcq_testkit::example("elementwise")).unwrap()).unwrap();
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
            let bytes = hcqb::write(&hcq_bundle::v1::import_dir(&d)?)?;
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
    let bytes = hcqb::write(&hcq_bundle::v1::import_dir(hcq_testkit::example("elementwise")).unwrap()).unwrap();
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
