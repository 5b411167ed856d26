//! Unit tests of the `.hcqb` header and section parsing (small enough for Miri).

use super::*;
use crate::model::tests::tiny;
use crate::model::{BundleModel, Launch};
use alloc::string::ToString;
use alloc::vec::Vec;
use zerocopy::FromBytes;

fn packed() -> Vec<u8> {
    write(&tiny()).unwrap()
}

/// Edit the header of a packed file, then fix every checksum so only the edit is wrong.
fn edit_header(bytes: &mut [u8], f: impl FnOnce(&mut raw::Header)) {
    let (h, _) = raw::Header::mut_from_prefix(bytes).unwrap();
    f(h);
    reseal(bytes).unwrap();
}

fn section_entry(bytes: &[u8], kind: SectionKind) -> raw::SectionEntry {
    raw::Header::ref_from_prefix(bytes).unwrap().0.sections[kind as usize]
}

#[test]
fn a_packed_model_parses_and_unpacks_to_the_same_model() {
    let bytes = packed();
    let file = Hcqb::parse(&bytes).unwrap();
    // no launch names an image view: written as 2.0, what 2.0 readers read
    assert_eq!(file.version(), (raw::VERSION_MAJOR, 0));
    assert_eq!(file.model_name(), "tiny");
    assert_eq!(file.arch_level(Arch::X86_64), Some("x86-64-v2"));
    assert_eq!(file.arch_level(Arch::Aarch64), None);
    assert_eq!(file.to_model(), tiny());
}

#[test]
fn accessors_borrow_from_the_file() {
    let bytes = packed();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.object(0, Arch::X86_64), Some(&[0x7f, b'E', b'L', b'F'][..]));
    assert_eq!(file.object(0, Arch::Aarch64), None);
    assert_eq!(file.object(1, Arch::AdrenoA630).map(<[u8]>::len), Some(5));
    assert_eq!(file.object(2, Arch::X86_64), None);
    assert_eq!(file.initial_data(0), Some(&[1u8; 16][..]));
    assert_eq!(file.initial_data(1), None);
    let p = file.program(1).unwrap();
    assert_eq!(p.vars().collect::<Vec<_>>(), ["n", "core_id"]);
    assert_eq!(p.params().len(), 3);
    assert_eq!(p.params().nth(1).unwrap().name, Some("n"));
    let Some(LaunchRef::Kernel(k)) = file.launch(1) else { panic!("launch 1 is a kernel") };
    assert_eq!(k.vals().collect::<Vec<_>>(), [Some(-3), None]);
    assert_eq!(k.core_id_arg, Some(2));
    assert_eq!(k.gpu.unwrap().vals().collect::<Vec<_>>(), [-3]);
    assert_eq!(k.outs().collect::<Vec<_>>(), [0]);
    assert!(matches!(file.launch(2), Some(LaunchRef::Copy { .. })));
    assert!(file.launch(3).is_none());
    // A name is a slice of the file itself, not a copy.
    let range = bytes.as_ptr_range();
    assert!(range.contains(&file.model_name().as_ptr()));
}

#[test]
fn bad_magic_is_malformed_at_zero() {
    let mut bytes = packed();
    bytes[0] = b'X';
    assert!(matches!(Hcqb::parse(&bytes), Err(Error::Malformed { what: "hcqb header", at: 0, .. })));
}

#[test]
fn another_major_version_is_unsupported() {
    let mut bytes = packed();
    edit_header(&mut bytes, |h| h.version_major = 3.into());
    assert_eq!(Hcqb::parse(&bytes).unwrap_err(), Error::Unsupported { what: "hcqb version", value: 3 });
    let mut bytes = packed();
    edit_header(&mut bytes, |h| h.version_major = 0.into());
    assert_eq!(Hcqb::parse(&bytes).unwrap_err(), Error::Unsupported { what: "hcqb version", value: 0 });
}

#[test]
fn a_newer_minor_version_is_accepted() {
    let mut bytes = packed();
    edit_header(&mut bytes, |h| h.version_minor = 7.into());
    assert_eq!(Hcqb::parse(&bytes).unwrap().version(), (2, 7));
}

#[test]
fn short_inputs_are_truncated_files() {
    let bytes = packed();
    for len in [0, 3, 5, 100, raw::HEADER_SIZE - 1] {
        let e = Hcqb::parse(&bytes[..len]).unwrap_err();
        assert!(matches!(e, Error::Malformed { reason, .. } if reason.starts_with("truncated")), "{len}: {e}");
    }
    let e = Hcqb::parse(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(matches!(e, Error::Malformed { what: "hcqb file", .. }), "{e}");
}

#[test]
fn a_flipped_header_bit_fails_the_header_checksum() {
    let mut bytes = packed();
    bytes[20] ^= 0x10; // inside file_size
    assert!(matches!(Hcqb::parse(&bytes), Err(Error::Mismatch { what: "hcqb checksum of the header", .. })));
}

#[test]
fn a_flipped_data_bit_fails_that_sections_checksum() {
    let mut bytes = packed();
    let data = section_entry(&bytes, SectionKind::Data);
    bytes[data.offset.get() as usize + 3] ^= 1;
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(matches!(e, Error::Mismatch { what: "hcqb checksum of the data section", .. }), "{e}");
}

#[test]
fn trailing_bytes_after_the_file_are_ignored() {
    let mut bytes = packed();
    let n = bytes.len();
    bytes.extend_from_slice(&[0xAA; 100]);
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.as_bytes().len(), n);
}

#[test]
fn unknown_header_flags_are_unsupported() {
    let mut bytes = packed();
    edit_header(&mut bytes, |h| h.flags = 4.into());
    assert!(matches!(Hcqb::parse(&bytes), Err(Error::Unsupported { what: "hcqb header flags", value: 4 })));
}

#[test]
fn misaligned_overlapping_and_oversized_sections_are_malformed_with_their_offset() {
    let mut bytes = packed();
    let launches = section_entry(&bytes, SectionKind::Launches);
    edit_header(&mut bytes, |h| {
        let e = &mut h.sections[SectionKind::Launches as usize];
        e.offset = (e.offset.get() + 4).into();
    });
    let e = Hcqb::parse(&bytes).unwrap_err();
    let want = launches.offset.get() + 4;
    assert!(matches!(e, Error::Malformed { at, reason, .. } if at == want && reason.contains("aligned")), "{e}");

    let mut bytes = packed();
    let args = section_entry(&bytes, SectionKind::Args);
    edit_header(&mut bytes, |h| h.sections[SectionKind::Vals as usize].offset = args.offset);
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(matches!(e, Error::Malformed { what: "hcqb section table", reason: "sections overlap", .. }), "{e}");

    let mut bytes = packed();
    edit_header(&mut bytes, |h| h.sections[SectionKind::Strings as usize].offset = 8.into());
    assert!(matches!(Hcqb::parse(&bytes), Err(Error::Malformed { at: 8, reason: "section overlaps the header", .. })));

    let mut bytes = packed();
    edit_header(&mut bytes, |h| {
        let e = &mut h.sections[SectionKind::Buffers as usize];
        e.count = (e.count.get() + 1).into();
    });
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(matches!(e, Error::Malformed { what: "hcqb buffer table", .. }), "{e}");
}

#[test]
fn a_string_section_that_is_not_utf8_is_malformed() {
    let mut bytes = packed();
    let s = section_entry(&bytes, SectionKind::Strings);
    bytes[s.offset.get() as usize] = 0xFF;
    reseal(&mut bytes).unwrap();
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(matches!(e, Error::Malformed { what: "hcqb string section", reason: "not UTF-8", .. }), "{e}");
}

fn with_model(f: impl FnOnce(&mut BundleModel)) -> Vec<u8> {
    let mut m = tiny();
    f(&mut m);
    write(&m).unwrap()
}

#[test]
fn a_launch_argument_out_of_range_is_refused_at_parse_with_its_location() {
    let bytes = with_model(|m| {
        if let Launch::Kernel(k) = &mut m.launches[0] {
            k.args[1].nbytes = 32;
        }
    });
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(e.to_string().starts_with("launch 0 arg 1: "), "{e}");
    assert!(matches!(e.root(), Error::OutOfBounds { what: "launch argument view", len: 32, limit: 16, .. }));
}

#[test]
fn the_parser_applies_the_models_semantic_rules() {
    let bytes = with_model(|m| {
        if let Launch::Kernel(k) = &mut m.launches[1] {
            k.vals[1] = Some(0);
        }
    });
    assert!(Hcqb::parse(&bytes).unwrap_err().to_string().starts_with("launch 1 val 1"));
    let bytes = with_model(|m| {
        if let Launch::Kernel(k) = &mut m.launches[0] {
            k.program = 9;
        }
    });
    assert!(matches!(Hcqb::parse(&bytes).unwrap_err().root(), Error::OutOfBounds { what: "launch program index", .. }));
    let bytes = with_model(|m| m.buffers[0].initial = Some(alloc::vec![0; 17]));
    assert!(Hcqb::parse(&bytes).unwrap_err().to_string().starts_with("buffer 0"));
    let bytes = with_model(|m| m.outputs[0].expected = Some(alloc::vec![0; 4]));
    assert!(Hcqb::parse(&bytes).unwrap_err().to_string().starts_with("output 0"));
}

#[test]
fn a_record_range_past_its_table_is_malformed_not_a_panic() {
    let mut bytes = packed();
    let launches = section_entry(&bytes, SectionKind::Launches);
    // Launch 0's args_first (offset 40 in the record) points far past the argument table.
    let at = launches.offset.get() as usize + 40;
    bytes[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
    reseal(&mut bytes).unwrap();
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(matches!(e.root(), Error::Malformed { what: "hcqb launch table", .. }), "{e}");
}

#[test]
#[cfg_attr(miri, ignore)] // one parse per length: too slow under Miri, and tests/bundle.rs covers the real bundles
fn every_truncation_is_an_error() {
    let bytes = packed();
    for len in 0..bytes.len() {
        assert!(Hcqb::parse(&bytes[..len]).is_err(), "prefix of {len} bytes parsed");
    }
}

// ---- 2.0: graphs, images, and 1.x files --------------------------------------------------

use crate::GraphTarget;
use crate::model::{Graph, Image, Objects, Span};
use hcq::dtype::DType;

/// The same file as a 1.x writer laid it out: a 1.x header (13 sections) in front of the same
/// sections (a 2.0 file's sections start after the larger header, so they fit as they are).
fn as_v1(bytes: &[u8]) -> Vec<u8> {
    let (h, _) = raw::Header::ref_from_prefix(bytes).unwrap();
    let mut sections = [raw::SectionEntry::default(); raw::SECTION_COUNT_V1];
    sections.copy_from_slice(&h.sections[..raw::SECTION_COUNT_V1]);
    let v1 = raw::HeaderV1 {
        magic: raw::MAGIC,
        version_major: 1.into(),
        version_minor: 0.into(),
        flags: 0.into(),
        source_version: h.source_version,
        file_size: h.file_size,
        model: h.model,
        tinygrad_version: h.tinygrad_version,
        level_x86_64: h.level_x86_64,
        level_aarch64: h.level_aarch64,
        expected_from: h.expected_from,
        reserved0: [0; 7],
        sections,
        reserved1: 0.into(),
        header_crc: 0.into(),
    };
    let mut out = bytes.to_vec();
    out[..raw::HEADER_SIZE].fill(0);
    out[..raw::HEADER_SIZE_V1].copy_from_slice(v1.as_bytes());
    reseal(&mut out).unwrap();
    out
}

#[test]
fn a_1x_file_still_parses_as_one_graph_for_any_target() {
    let v2 = packed();
    let v1 = as_v1(&v2);
    let file = Hcqb::parse(&v1).unwrap();
    assert_eq!(file.version(), (1, 0));
    assert_eq!(file.n_graphs(), 0);
    assert_eq!(file.to_model(), tiny());
    for arch in Arch::ALL {
        assert_eq!(file.for_archs(&[arch]).unwrap().n_launches(), 3);
    }
    // its 1.x header checksum is checked like a 2.0 one
    let mut bad = v1.clone();
    bad[20] ^= 1;
    assert!(matches!(Hcqb::parse(&bad), Err(Error::Mismatch { what: "hcqb checksum of the header", .. })));
}

/// `tiny` as a CPU graph plus a QCOM graph of one kernel and a copy, with an image buffer and
/// the weights (buffer 0's bytes) stored once for both.
pub(crate) fn two_graphs() -> BundleModel {
    let mut m = tiny();
    m.programs[1].objects.x86_64 = Some(alloc::vec![0x7f, b'E', b'L', b'F']);
    let n = |v: usize| v as u32;
    let cpu = Graph {
        name: "cpu".to_string(),
        target: GraphTarget::Cpu,
        expected_from: Arch::X86_64,
        buffers: Span::all(m.buffers.len()),
        inputs: Span::all(m.inputs.len()),
        outputs: Span::all(m.outputs.len()),
        programs: Span::all(m.programs.len()),
        launches: Span::all(m.launches.len()),
    };
    let qcom = Graph {
        name: "qcom".to_string(),
        target: GraphTarget::Qcom,
        expected_from: Arch::AdrenoA630,
        buffers: Span { first: n(m.buffers.len()), len: 4 },
        inputs: Span { first: n(m.inputs.len()), len: 1 },
        outputs: Span { first: n(m.outputs.len()), len: 1 },
        programs: Span { first: n(m.programs.len()), len: 1 },
        launches: Span { first: n(m.launches.len()), len: 2 },
    };
    let mut buffers = m.buffers.clone();
    buffers.push(Buffer {
        nbytes: 64,
        dtype: DType::F16,
        role: BufferRole::Scratch,
        also_output: false,
        initial: None,
        image: Some(Image { width: 2, height: 2, pitch: 16, format: DType::F16 }),
    });
    m.buffers.extend(buffers);
    m.inputs.push(m.inputs[0].clone());
    m.outputs.push(m.outputs[0].clone());
    let mut p = m.programs[0].clone();
    p.objects = Objects { x86_64: None, aarch64: None, adreno_a630: Some(alloc::vec![7; 8]), amd_gfx1100: None };
    m.programs.push(p);
    m.launches.push(m.launches[0].clone());
    m.launches.push(m.launches[2].clone());
    m.graphs = alloc::vec![cpu, qcom];
    m.validate().unwrap();
    m
}

use crate::model::Buffer;

#[test]
fn graphs_and_images_round_trip_and_weights_are_stored_once() {
    let m = two_graphs();
    let bytes = write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.to_model(), m);
    assert_eq!(file.n_graphs(), 2);
    let g = file.graph(1).unwrap();
    assert_eq!((g.name, g.target, g.expected_from), ("qcom", GraphTarget::Qcom, Arch::AdrenoA630));
    assert_eq!(g.counts, [4, 1, 1, 1, 2]);
    // buffer 0 of each graph: the same stored bytes
    let (a, b) = (file.buffer(0).unwrap().initial.unwrap(), file.buffer(3).unwrap().initial.unwrap());
    assert_eq!(a.as_ptr(), b.as_ptr());
    let q = file.graph_view(1).unwrap();
    assert_eq!((q.n_buffers(), q.n_programs(), q.n_launches(), q.view_of()), (4, 1, 2, Some(1)));
    assert_eq!(q.buffer(3).unwrap().image, Some(ImageRef { width: 2, height: 2, pitch: 16, format: DType::F16 }));
    assert_eq!(q.buffer(0).unwrap().image, None);
    assert_eq!(q.expected_from(), Arch::AdrenoA630);
    assert_eq!(q.to_model(), m.graph_model(1).unwrap());
    // a view is one graph: no graph table of its own (the whole file's ranges would index its
    // own tables), so it is its own only graph and walks as a file without graphs
    assert_eq!((q.n_graphs(), q.graphs().count()), (0, 0));
    let again = q.graph_view(0).unwrap();
    assert_eq!((again.view_of(), again.n_buffers(), again.n_launches()), (Some(1), 4, 2));
    assert!(q.graph_view(1).is_none());
    assert!(crate::inspect(&q).contains("launches"));
}

#[test]
fn the_runner_picks_the_graph_of_its_target_and_names_a_missing_one() {
    let m = two_graphs();
    let bytes = write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.for_archs(&[Arch::X86_64]).unwrap().view_of(), Some(0));
    assert_eq!(file.for_archs(&[Arch::AdrenoA630]).unwrap().view_of(), Some(1));
    // graph 0 has no aarch64 object for program 0: an aarch64 device has no graph
    assert!(file.for_archs(&[Arch::Aarch64]).is_err());
    // only the QCOM graph: a CPU device is refused, naming what it needs and what there is
    let mut q = m.graph_model(1).unwrap();
    q.graphs = alloc::vec![Graph {
        buffers: Span::all(4),
        inputs: Span::all(1),
        outputs: Span::all(1),
        programs: Span::all(1),
        launches: Span::all(2),
        ..m.graphs[1].clone()
    }];
    q.validate().unwrap();
    let bytes = write(&q).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let e = file.for_archs(&[Arch::X86_64]).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("needs a cpu graph") && text.contains("qcom (qcom)"), "{text}");
    assert!(matches!(e.root(), Error::Unsupported { what, .. } if what.starts_with("bundle has no graph")), "{e}");
    assert_eq!(file.for_archs(&[Arch::AdrenoA630]).unwrap().n_launches(), 2);
}

#[test]
fn an_image_with_zero_width_is_refused_by_model_and_file() {
    let mut m = two_graphs();
    m.buffers[6].image = Some(Image { width: 0, height: 2, pitch: 16, format: DType::F16 });
    let e = m.validate().unwrap_err();
    assert!(e.to_string().starts_with("graph 1: image of buffer 3"), "{e}");
    let e = Hcqb::parse(&write(&m).unwrap()).unwrap_err();
    assert!(matches!(e.root(), Error::InvalidArgument { what, .. } if what.starts_with("image width")), "{e}");
    assert!(e.to_string().starts_with("image of buffer 6"), "{e}");
    // a pitch below the row, rows past the buffer, an integer format
    for im in [
        Image { width: 4, height: 2, pitch: 16, format: DType::F16 },
        Image { width: 2, height: 5, pitch: 16, format: DType::F16 },
        Image { width: 2, height: 2, pitch: 16, format: DType::I16 },
    ] {
        let mut m = two_graphs();
        m.buffers[6].image = Some(im);
        assert!(m.validate().is_err(), "{im:?}");
        assert!(Hcqb::parse(&write(&m).unwrap()).is_err(), "{im:?}");
    }
}

#[test]
fn a_graph_range_out_of_range_is_refused() {
    let mut m = two_graphs();
    m.graphs[1].programs.first = 5;
    let e = m.validate().unwrap_err();
    assert!(matches!(e.root(), Error::OutOfBounds { what: "graph program range", .. }), "{e}");
    let e = Hcqb::parse(&write(&m).unwrap()).unwrap_err();
    assert!(matches!(e.root(), Error::OutOfBounds { what: "graph program range", .. }), "{e}");
    assert!(e.to_string().starts_with("graph 1"), "{e}");
    // a launch of graph 1 indexes programs from the graph's first: program 1 is past its one program
    let mut m = two_graphs();
    if let Launch::Kernel(k) = &mut m.launches[3] {
        k.program = 1;
    }
    assert!(m.validate().unwrap_err().to_string().starts_with("graph 1: launch 0"));
    assert!(Hcqb::parse(&write(&m).unwrap()).unwrap_err().to_string().starts_with("graph 1: launch 0"));
}

#[test]
fn two_graphs_for_one_target_or_disagreeing_inputs_are_refused() {
    let mut m = two_graphs();
    m.graphs[1].target = GraphTarget::Cpu;
    assert!(matches!(m.validate().unwrap_err().root(), Error::Malformed { reason: "two graphs for one target", .. }));
    assert!(Hcqb::parse(&write(&m).unwrap()).is_err());
    let mut m = two_graphs();
    m.inputs[1].view.dtype = DType::I32;
    let e = m.validate().unwrap_err();
    assert!(e.to_string().starts_with("graph 1: input 0"), "{e}");
    assert!(Hcqb::parse(&write(&m).unwrap()).unwrap_err().to_string().starts_with("graph 1: input 0"));
    // same bytes, another shape: the graphs would not take the same tensor
    let mut m = two_graphs();
    m.inputs[1].shape = alloc::vec![2, 2];
    let e = m.validate().unwrap_err();
    assert!(matches!(e.root(), Error::Malformed { reason: "shapes differ", .. }), "{e}");
    assert!(Hcqb::parse(&write(&m).unwrap()).unwrap_err().to_string().starts_with("graph 1: input 0"));
}

#[test]
fn a_device_takes_its_own_targets_graph_before_the_graph_for_any_target() {
    // graph 0 for any target (x86-64 objects), graph 1 for QCOM: the Adreno takes graph 1 even
    // though graph 0 comes first, a CPU takes graph 0; an AMD device has neither and is refused.
    let mut m = two_graphs();
    m.graphs[0].target = GraphTarget::Any;
    m.validate().unwrap();
    let bytes = write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.for_archs(&[Arch::AdrenoA630]).unwrap().view_of(), Some(1));
    assert_eq!(file.for_archs(&[Arch::X86_64]).unwrap().view_of(), Some(0));
    assert!(file.for_archs(&[Arch::AmdGfx1100]).is_err());
    // an Adreno object in the any graph too: the QCOM graph still wins
    m.programs[0].objects.adreno_a630 = Some(alloc::vec![1; 4]);
    let bytes = write(&m).unwrap();
    assert_eq!(Hcqb::parse(&bytes).unwrap().for_archs(&[Arch::AdrenoA630]).unwrap().view_of(), Some(1));
}

#[test]
fn weights_stored_once_but_declared_with_two_sizes_are_refused() {
    let m = two_graphs();
    let mut bytes = write(&m).unwrap();
    let t = section_entry(&bytes, SectionKind::Buffers);
    let rec = |i: usize| t.offset.get() as usize + i * size_of::<raw::Buffer>();
    // graph 1's buffer 0 (record 3) shares record 0's bytes; give it another size
    let (r0, r3) = (rec(0), rec(3));
    let b0 = raw::Buffer::read_from_bytes(&bytes[r0..r0 + 32]).unwrap();
    let mut b3 = raw::Buffer::read_from_bytes(&bytes[r3..r3 + 32]).unwrap();
    assert_eq!((b3.initial.offset.get(), b3.initial.len.get()), (b0.initial.offset.get(), b0.initial.len.get()));
    b3.nbytes = 32.into();
    bytes[r3..r3 + 32].copy_from_slice(b3.as_bytes());
    reseal(&mut bytes).unwrap();
    let e = Hcqb::parse(&bytes).unwrap_err();
    assert!(matches!(e.root(), Error::Mismatch { expected: 16, found: 32, .. }), "{e}");
    assert!(e.to_string().contains("weights stored once"), "{e}");
    // buffers of equal bytes but different sizes are written with their own copies, so they parse
    let mut m = two_graphs();
    m.buffers[3].nbytes = 32;
    Hcqb::parse(&write(&m).unwrap()).unwrap();
}

#[test]
fn inspect_lists_the_graphs_and_images() {
    let bytes = write(&two_graphs()).unwrap();
    let text = crate::inspect(&Hcqb::parse(&bytes).unwrap());
    assert!(text.contains("graphs: 2"), "{text}");
    assert!(
        text.contains("qcom (target qcom, expected outputs from adreno_a630): 1 programs, 2 launches, 4 buffers"),
        "{text}"
    );
    assert!(text.contains("graph 1 qcom (target qcom):"), "{text}");
    assert!(text.contains("image 2x2 float16 pitch 16B"), "{text}");
}

// ---- 2.1: image views per launch argument, and what a bundle may not say -----------------

use crate::model::{ArgImage, KernelLaunch};

fn kernel(m: &mut BundleModel, i: usize) -> &mut KernelLaunch {
    match &mut m.launches[i] {
        Launch::Kernel(k) => k,
        Launch::Copy { .. } => panic!("launch {i} is a copy"),
    }
}

fn f32_image(width: u32, height: u32, pitch: u32) -> Image {
    Image { width, height, pitch, format: DType::F32 }
}

/// `two_graphs` where scratch buffer 1 is bound under two image views by two launches (graph 0's
/// launch 0 as 2 x 2 texels, graph 1's launch 0, the file's launch 3, as 4 x 1) and as a plain
/// buffer by graph 0's launch 1; graph 1's launch also passes one view of buffer 0 in two slots.
fn with_launch_images() -> BundleModel {
    let mut m = two_graphs();
    let k = kernel(&mut m, 0);
    k.args[0].nbytes = 64;
    k.images = alloc::vec![ArgImage { arg: 0, image: f32_image(2, 2, 32) }];
    let k = kernel(&mut m, 3);
    k.args[0].nbytes = 64;
    k.args[1] = k.args[0];
    k.images =
        alloc::vec![ArgImage { arg: 0, image: f32_image(4, 1, 64) }, ArgImage { arg: 1, image: f32_image(4, 1, 64) }];
    m.validate().unwrap();
    m
}

#[test]
fn launch_image_views_round_trip_as_hcqb_2_1() {
    let m = with_launch_images();
    let bytes = write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    assert_eq!(file.version(), (2, 1));
    assert_eq!(file.to_model(), m);
    let LaunchRef::Kernel(k) = file.launch(0).unwrap() else { panic!("a kernel") };
    let want = ImageRef { width: 2, height: 2, pitch: 32, format: DType::F32 };
    assert_eq!((k.arg_image(0), k.image(0), k.arg_image(1)), (Some(want), Some(want), None));
    let LaunchRef::Kernel(plain) = file.launch(1).unwrap() else { panic!("a kernel") };
    assert_eq!((plain.arg(0).unwrap().buffer, plain.image(0)), (1, None), "the same buffer, bound plain");
    // graph 1's launch 0 is the file's launch 3: its views, not graph 0's
    let q = file.graph_view(1).unwrap();
    let LaunchRef::Kernel(k) = q.launch(0).unwrap() else { panic!("a kernel") };
    let want = ImageRef { width: 4, height: 1, pitch: 64, format: DType::F32 };
    assert_eq!(k.images().collect::<Vec<_>>(), [(0, want), (1, want)]);
    assert_eq!(k.arg(0), k.arg(1), "one view in two parameter slots");
    assert_eq!(q.to_model(), m.graph_model(1).unwrap());
    let text = crate::inspect(&file);
    assert!(text.contains("image 2x2 float32 pitch 32B") && text.contains("image 4x1 float32 pitch 64B"), "{text}");
}

#[test]
fn an_argument_without_a_view_takes_its_buffers_image() {
    // older bundles: the image view is the buffer's (`buffers[].image`)
    let m = two_graphs();
    let file_bytes = write(&m).unwrap();
    let file = Hcqb::parse(&file_bytes).unwrap();
    let q = file.graph_view(1).unwrap();
    let mut m1 = q.to_model();
    kernel(&mut m1, 0).args[1] = ArgView { buffer: 3, offset: 0, nbytes: 64, dtype: DType::F16 };
    m1.validate().unwrap();
    let bytes = write(&m1).unwrap();
    let f = Hcqb::parse(&bytes).unwrap();
    let LaunchRef::Kernel(k) = f.launch(0).unwrap() else { panic!("a kernel") };
    assert_eq!(k.arg_image(1), None);
    assert_eq!(k.image(1), Some(ImageRef { width: 2, height: 2, pitch: 16, format: DType::F16 }));
    assert_eq!(k.image(0), None);
}

#[test]
fn a_2_1_file_is_refused_where_its_flag_is_unknown_and_its_extension_is_checked() {
    let bytes = write(&with_launch_images()).unwrap();
    // what a 2.0 reader sees: a flag it does not know (here: the same file marked 2.0)
    let mut as_20 = bytes.clone();
    edit_header(&mut as_20, |h| h.version_minor = 0.into());
    let e = Hcqb::parse(&as_20).unwrap_err();
    assert!(matches!(e, Error::Unsupported { what: "hcqb header flags", value: 1 }), "{e}");
    // a changed byte of the extension fails its checksum
    let mut bad = bytes.clone();
    bad[raw::HEADER_SIZE] ^= 1;
    let e = Hcqb::parse(&bad).unwrap_err();
    assert!(matches!(e, Error::Mismatch { what: "hcqb checksum of the header extension", .. }), "{e}");
    // every truncation is an error, never a panic
    for n in [raw::HEADER_SIZE, raw::HEADER_SIZE + 8, raw::HEADER_SIZE + raw::HEADER_EXT_SIZE, bytes.len() - 1] {
        let mut cut = bytes[..n].to_vec();
        let _ = reseal(&mut cut);
        assert!(Hcqb::parse(&cut).is_err(), "{n}");
    }
}

/// The launch image records of a packed file, to edit in place.
fn launch_images(bytes: &mut [u8]) -> &mut [raw::LaunchImage] {
    let ext = raw::HeaderExt::ref_from_prefix(&bytes[raw::HEADER_SIZE..]).unwrap().0;
    let e = ext.sections[0];
    let (off, size) = (e.offset.get() as usize, e.size.get() as usize);
    <[raw::LaunchImage]>::mut_from_bytes(&mut bytes[off..off + size]).unwrap()
}

#[test]
fn launch_image_records_out_of_order_or_naming_what_is_not_there_are_refused() {
    let good = write(&with_launch_images()).unwrap();
    type Edit = fn(&mut [raw::LaunchImage]);
    let cases: [(&str, Edit); 4] = [
        ("ascending", |t| t.swap(1, 2)),
        ("argument of an image view", |t| t[0].arg = 2.into()),
        ("copy launch", |t| t[0].launch = 2.into()),
        ("launch index", |t| t[2].launch = 9.into()),
    ];
    for (want, edit) in cases {
        let mut bytes = good.clone();
        edit(launch_images(&mut bytes));
        reseal(&mut bytes).unwrap();
        let e = Hcqb::parse(&bytes).unwrap_err();
        assert!(alloc::format!("{e} {e:?}").contains(want), "{want}: {e}");
    }
}

#[test]
fn an_image_view_must_lie_in_its_argument_with_its_dtype_and_an_aligned_offset() {
    type Edit = fn(&mut KernelLaunch);
    let cases: [(Edit, &str); 5] = [
        (|k| k.images[0].image.format = DType::F16, "format vs the argument's dtype"),
        (|k| k.images[0].image.height = 3, "image rows vs its buffer"),
        (|k| k.images[0].image.pitch = 16, "row pitch vs its width"),
        (|k| k.args[0].offset = 288, "view offset"),
        (|k| k.images.push(ArgImage { arg: 0, image: f32_image(1, 1, 16) }), "ascending by argument"),
    ];
    for (edit, want) in cases {
        let mut m = with_launch_images();
        edit(kernel(&mut m, 0));
        let e = m.validate().unwrap_err();
        assert!(e.to_string().starts_with("graph 0: launch 0 arg 0 image"), "{want}: {e}");
        assert!(alloc::format!("{e} {e:?}").contains(want), "{want}: {e}");
        if want != "ascending by argument" {
            let e = Hcqb::parse(&write(&m).unwrap()).unwrap_err();
            assert!(e.to_string().starts_with("launch 0 arg 0 image"), "{want}: {e}");
            assert!(alloc::format!("{e} {e:?}").contains(want), "{want}: {e}");
        }
    }
}

#[test]
fn a_buffer_image_of_another_format_than_its_dtype_is_refused() {
    let mut m = two_graphs();
    m.buffers[6].image = Some(Image { width: 1, height: 2, pitch: 16, format: DType::F32 });
    let e = m.validate().unwrap_err();
    assert!(e.to_string().starts_with("graph 1: image of buffer 3"), "{e}");
    assert!(matches!(e.root(), Error::Mismatch { what, .. } if what.contains("the buffer's dtype")), "{e}");
    let e = Hcqb::parse(&write(&m).unwrap()).unwrap_err();
    assert!(matches!(e.root(), Error::Mismatch { what, .. } if what.contains("the buffer's dtype")), "{e}");
}

#[test]
fn a_graph_without_launches_is_refused() {
    let mut m = tiny();
    m.launches.clear();
    let e = m.validate().unwrap_err();
    assert!(matches!(e.root(), Error::Malformed { what: "bundle graph", .. }), "{e}");
    assert!(matches!(
        Hcqb::parse(&write(&m).unwrap()).unwrap_err().root(),
        Error::Malformed { what: "bundle graph", .. }
    ));
    // one graph of two without launches
    let mut m = two_graphs();
    m.launches.truncate(3);
    m.graphs[1].launches = Span { first: 3, len: 0 };
    let e = m.validate().unwrap_err();
    assert!(e.to_string().starts_with("graph 1"), "{e}");
    let e = Hcqb::parse(&write(&m).unwrap()).unwrap_err();
    assert!(e.to_string().starts_with("graph 1") && e.to_string().contains("no launches"), "{e}");
}

#[test]
fn one_buffer_in_several_parameter_slots_is_a_valid_launch() {
    // read twice: E_4's two parameters get the same view of the input
    let mut m = tiny();
    kernel(&mut m, 0).args[0] = kernel(&mut m, 0).args[1];
    m.validate().unwrap();
    let bytes = write(&m).unwrap();
    let f = Hcqb::parse(&bytes).unwrap();
    let LaunchRef::Kernel(k) = f.launch(0).unwrap() else { panic!("a kernel") };
    assert_eq!(k.args().collect::<Vec<_>>(), [k.arg(1).unwrap(); 2]);
    assert_eq!(f.to_model(), m);
}
