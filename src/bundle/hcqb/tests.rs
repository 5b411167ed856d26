//! Unit tests of the `.hcqb` header and section parsing (small enough for Miri).

use super::*;
use crate::bundle::model::tests::tiny;
use crate::bundle::model::{BundleModel, Launch};
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
    assert_eq!(file.version(), (raw::VERSION_MAJOR, raw::VERSION_MINOR));
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
    edit_header(&mut bytes, |h| h.version_major = 2.into());
    assert_eq!(Hcqb::parse(&bytes).unwrap_err(), Error::Unsupported { what: "hcqb version", value: 2 });
}

#[test]
fn a_newer_minor_version_is_accepted() {
    let mut bytes = packed();
    edit_header(&mut bytes, |h| h.version_minor = 7.into());
    assert_eq!(Hcqb::parse(&bytes).unwrap().version(), (1, 7));
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
