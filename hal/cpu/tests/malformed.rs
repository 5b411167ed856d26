//! Malformed input: every failure is an `hcq::Error` with a message naming what is wrong, never a
//! panic. Real objects are truncated at every length and byte-mutated; synthetic ones get single
//! corrupted fields.

mod common;

use common::*;
use hcq::Error;
use hcq_cpu::elf::MAX_IMAGE_SIZE;
use hcq_cpu::{ElfObject, Machine};

const OBJECTS: [(&str, &[u8]); 6] = [
    ("chain100 x86", include_bytes!("../../../examples/chain100/prog_000_E_4_4.o")),
    ("chain100 a64", include_bytes!("../../../examples/chain100/prog_000_E_4_4.aarch64.o")),
    ("elementwise x86", include_bytes!("../../../examples/elementwise/prog_000_E_1024_4.o")),
    ("mlp0 a64", include_bytes!("../../../examples/mlp/prog_000_r_8_64_32.aarch64.o")),
    ("relocs x86", include_bytes!("data/relocs/relocs.o")),
    ("relocs a64", include_bytes!("data/relocs/relocs.aarch64.o")),
];

/// Parse, lay out and load into a Vec at a fixed address with a resolver that knows every name.
fn try_load(bytes: &[u8], entry: &str) -> hcq::Result<u64> {
    let obj = ElfObject::parse(bytes)?;
    let size = obj.layout().size;
    if size > 1 << 20 {
        return Err(Error::OutOfSpace { what: "test image", requested: size, capacity: 1 << 20 });
    }
    let mut image = vec![0u8; size as usize];
    obj.load_into(&mut image, 0x7f00_0000_0000, entry, &|_| Some(0x7f00_1000_0000))
}

fn entry_of(name: &str) -> &'static str {
    match name {
        n if n.starts_with("chain100") => "E_4_4",
        n if n.starts_with("elementwise") => "E_1024_4",
        n if n.starts_with("mlp0") => "r_8_64_32",
        _ => "relocs_kernel",
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_truncation_of_a_real_object_is_an_error() {
    for (name, bytes) in OBJECTS {
        assert!(try_load(bytes, entry_of(name)).is_ok(), "{name} loads whole");
        // The section header table is at the end of a clang object, so every proper prefix
        // loses part of it.
        for len in 0..bytes.len() {
            let err = try_load(&bytes[..len], entry_of(name)).expect_err(name);
            assert!(!err.to_string().is_empty());
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn random_byte_mutations_never_panic() {
    // xorshift64*, fixed seed: deterministic.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let (mut ok, mut err) = (0, 0);
    for (name, bytes) in OBJECTS {
        for _ in 0..3000 {
            let mut m = bytes.to_vec();
            for _ in 0..1 + next() % 4 {
                let at = (next() % m.len() as u64) as usize;
                m[at] = match next() % 4 {
                    0 => 0,
                    1 => 0xff,
                    2 => m[at] ^ (1 << (next() % 8)),
                    _ => next() as u8,
                };
            }
            match try_load(&m, entry_of(name)) {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    err += 1;
                }
            }
        }
    }
    // Both outcomes occur (mutations of unused bytes still load).
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
}

fn base_object() -> (Vec<u8>, u16, u32) {
    let mut b = ObjBuilder::new(EM_X86_64);
    let text = b.section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16, &[0u8; 16]);
    b.rodata(16, &[0u8; 16]);
    let lc = b.symbol(".LC", STB_LOCAL, STT_OBJECT, 2, 0);
    b.func("entry", text, 0);
    b.rela(text, 3, lc, 2, -4);
    (b.build(), text, lc)
}

fn load_err(bytes: &[u8]) -> Error {
    try_load(bytes, "entry").expect_err("must fail")
}

#[test]
fn base_object_loads() {
    let (obj, _, _) = base_object();
    try_load(&obj, "entry").unwrap();
}

#[test]
fn corrupted_ident_and_header_fields_are_named() {
    let (obj, _, _) = base_object();
    let with = |at: usize, bytes: &[u8]| {
        let mut m = obj.clone();
        m[at..at + bytes.len()].copy_from_slice(bytes);
        load_err(&m)
    };
    assert!(matches!(with(0, b"\x7fELG"), Error::Malformed { reason, .. } if reason.contains("magic")));
    assert_eq!(with(4, &[1]), Error::Unsupported { what: "elf class (only ELFCLASS64 = 2 loads)", value: 1 });
    assert!(matches!(with(5, &[2]), Error::Unsupported { value: 2, .. }));
    assert!(matches!(with(6, &[0]), Error::Unsupported { value: 0, .. }));
    let e = with(0x10, &2u16.to_le_bytes());
    assert!(e.to_string().contains("ET_REL"), "{e}");
    let e = with(0x12, &40u16.to_le_bytes()); // EM_ARM
    assert!(e.to_string().contains("e_machine") && e.to_string().contains("0x28"), "{e}");
    assert_eq!(with(0x3a, &32u16.to_le_bytes()), Error::Mismatch { what: "elf e_shentsize", expected: 64, found: 32 });
    assert!(matches!(with(0x28, &0u64.to_le_bytes()), Error::Malformed { at: 0x28, .. }));
    let past = obj.len() as u64;
    assert!(matches!(with(0x28, &past.to_le_bytes()), Error::OutOfBounds { what: "elf section header", .. }));
    assert!(matches!(with(0x28, &u64::MAX.to_le_bytes()), Error::OutOfBounds { .. }));
    assert!(matches!(
        with(0x3c, &0xffffu16.to_le_bytes()),
        Error::OutOfBounds { what: "elf section header table", .. }
    ));
    assert!(matches!(with(0x3e, &500u16.to_le_bytes()), Error::OutOfBounds { what: "elf e_shstrndx", .. }));
    // e_shstrndx pointing at .text (not a string table).
    assert!(
        matches!(with(0x3e, &1u16.to_le_bytes()), Error::Malformed { reason, .. } if reason.contains("SHT_STRTAB"))
    );
}

#[test]
fn wrong_arch_names_expected_and_found_machines() {
    let (obj, _, _) = base_object();
    let err = ElfObject::parse_for(&obj, Machine::Aarch64).unwrap_err();
    assert_eq!(err.root(), &Error::Mismatch { what: "elf e_machine", expected: 183, found: 62 });
    assert_eq!(
        err.to_string(),
        "object is for x86_64, expected aarch64: elf e_machine mismatch: expected 0xb7, found 0x3e"
    );
}

/// Apply `f` to the section header of `index` (a mutable 64-byte record) and load.
fn with_shdr(obj: &[u8], index: usize, f: impl Fn(&mut [u8])) -> Error {
    let mut m = obj.to_vec();
    let at = shdr_offset(&m, index);
    f(&mut m[at..at + 64]);
    load_err(&m)
}

#[test]
fn corrupted_section_headers_are_errors() {
    let (obj, text, _) = base_object();
    let text = usize::from(text);
    let len = obj.len() as u64;
    // .text data past the end of the file.
    let e = with_shdr(&obj, text, |h| put_u64(h, 0x18, len));
    assert!(matches!(e.root(), Error::OutOfBounds { what: "elf section data", .. }), "{e:?}");
    assert!(e.to_string().contains("section 1 (.text)"), "{e}");
    // Size overflowing offset + size.
    let e = with_shdr(&obj, text, |h| put_u64(h, 0x20, u64::MAX));
    assert!(matches!(e.root(), Error::OutOfBounds { .. }), "{e:?}");
    // Alignment not a power of two, and too large.
    let e = with_shdr(&obj, text, |h| put_u64(h, 0x30, 24));
    assert!(e.to_string().contains("power of two"), "{e}");
    let e = with_shdr(&obj, text, |h| put_u64(h, 0x30, 1 << 20));
    assert!(matches!(e.root(), Error::Unsupported { value: 0x10_0000, .. }), "{e:?}");
    // A thread-local section.
    let e = with_shdr(&obj, text, |h| put_u64(h, 8, SHF_ALLOC | SHF_EXECINSTR | SHF_TLS));
    assert!(e.to_string().contains("SHF_TLS"), "{e}");

    // RELA: target index out of range, wrong entsize, ragged size, sh_link not the symtab, REL.
    let rela = find_section(&obj, SHT_RELA).unwrap();
    let e = with_shdr(&obj, rela, |h| put_u32(h, 0x2c, 99));
    assert!(e.to_string().contains("target section index"), "{e}");
    let e = with_shdr(&obj, rela, |h| put_u64(h, 0x38, 16));
    assert!(matches!(e.root(), Error::Mismatch { what: "SHT_RELA sh_entsize", .. }), "{e:?}");
    let e = with_shdr(&obj, rela, |h| put_u64(h, 0x20, 25));
    assert!(e.to_string().contains("multiple of 24"), "{e}");
    let e = with_shdr(&obj, rela, |h| put_u32(h, 0x28, 1));
    assert!(e.to_string().contains("sh_link is not the symbol table"), "{e}");
    let e = with_shdr(&obj, rela, |h| put_u64(h, 0x18, len - 8));
    assert!(matches!(e.root(), Error::OutOfBounds { what: "elf relocation entries", .. }), "{e:?}");
    let e = with_shdr(&obj, rela, |h| put_u32(h, 4, SHT_REL));
    assert!(e.to_string().contains("SHT_REL"), "{e}");

    // SYMTAB: wrong entsize, ragged size, bad string-table link, a second symbol table.
    let symtab = find_section(&obj, SHT_SYMTAB).unwrap();
    let e = with_shdr(&obj, symtab, |h| put_u64(h, 0x38, 16));
    assert!(matches!(e.root(), Error::Mismatch { what: "SHT_SYMTAB sh_entsize", .. }), "{e:?}");
    let e = with_shdr(&obj, symtab, |h| put_u64(h, 0x20, 25));
    assert!(e.to_string().contains("multiple of 24"), "{e}");
    let e = with_shdr(&obj, symtab, |h| put_u32(h, 0x28, 1));
    assert!(e.to_string().contains("not a string table"), "{e}");
    let e = with_shdr(&obj, symtab, |h| put_u32(h, 0x28, 4000));
    assert!(e.to_string().contains("not a string table"), "{e}");
    let e = with_shdr(&obj, text, |h| put_u32(h, 4, SHT_SYMTAB));
    assert!(e.to_string().contains("second SHT_SYMTAB"), "{e}");
}

#[test]
fn huge_nobits_sections_are_refused_before_allocating() {
    let mut b = ObjBuilder::new(EM_AARCH64);
    let text = b.text(&[0u8; 4]);
    b.nobits(".bss", MAX_IMAGE_SIZE, 16);
    b.func("entry", text, 0);
    let e = ElfObject::parse(&b.build()).unwrap_err();
    assert!(matches!(e.root(), Error::OutOfSpace { what: "elf load image", capacity: MAX_IMAGE_SIZE, .. }), "{e:?}");
}

/// The single RELA entry of `base_object` is at the RELA section's offset.
fn rela_entry_offset(obj: &[u8]) -> usize {
    let rela = find_section(obj, SHT_RELA).unwrap();
    get_u64(obj, shdr_offset(obj, rela) + 0x18) as usize
}

#[test]
fn corrupted_relocation_entries_are_errors() {
    let (obj, _, _) = base_object();
    let at = rela_entry_offset(&obj);
    let with_entry = |f: &dyn Fn(&mut [u8])| {
        let mut m = obj.clone();
        f(&mut m[at..at + 24]);
        load_err(&m)
    };
    // Symbol index out of range.
    let e = with_entry(&|r| put_u64(r, 8, (1000u64 << 32) | 2));
    assert_eq!(e.root(), &Error::OutOfBounds { what: "elf symbol index", offset: 1000, len: 1, limit: 3 });
    assert!(e.to_string().contains("symbol 1000 (out of range)"), "{e}");
    // r_offset past the end of .text (16 bytes), and wrapping.
    let e = with_entry(&|r| put_u64(r, 0, 13));
    assert_eq!(e.root(), &Error::OutOfBounds { what: "relocation r_offset", offset: 13, len: 4, limit: 16 });
    let e = with_entry(&|r| put_u64(r, 0, u64::MAX - 1));
    assert!(matches!(e.root(), Error::OutOfBounds { what: "relocation r_offset", .. }), "{e:?}");
    // Unknown type.
    let e = with_entry(&|r| put_u64(r, 8, (1u64 << 32) | 0x7fff_ffff));
    assert_eq!(e.root(), &Error::Unsupported { what: "elf relocation type", value: 0x7fff_ffff });
}

#[test]
fn corrupted_symbols_are_errors() {
    let (obj, _, lc) = base_object();
    let symtab = find_section(&obj, SHT_SYMTAB).unwrap();
    let sym_at = get_u64(&obj, shdr_offset(&obj, symtab) + 0x18) as usize + lc as usize * 24;
    let with_sym = |f: &dyn Fn(&mut [u8])| {
        let mut m = obj.clone();
        f(&mut m[sym_at..sym_at + 24]);
        load_err(&m)
    };
    // st_shndx out of range, in a non-loaded section, reserved, COMMON, XINDEX.
    let e = with_sym(&|s| put_u16(s, 6, 200));
    assert!(matches!(e.root(), Error::OutOfBounds { what: "symbol st_shndx", .. }), "{e:?}");
    let strtab = find_section(&obj, SHT_STRTAB).unwrap() as u16;
    let e = with_sym(&|s| put_u16(s, 6, strtab));
    assert!(e.to_string().contains("not loaded"), "{e}");
    let e = with_sym(&|s| put_u16(s, 6, 0xff20));
    assert!(e.to_string().contains("reserved section index"), "{e}");
    let e = with_sym(&|s| put_u16(s, 6, SHN_COMMON));
    assert!(e.to_string().contains("SHN_COMMON"), "{e}");
    let e = with_sym(&|s| put_u16(s, 6, 0xffff));
    assert!(e.to_string().contains("SHN_XINDEX"), "{e}");
    // st_value past its section, TLS type.
    let e = with_sym(&|s| put_u64(s, 8, 17));
    assert!(matches!(e.root(), Error::OutOfBounds { what: "symbol st_value", .. }), "{e:?}");
    let e = with_sym(&|s| s[4] = 6);
    assert!(e.to_string().contains("STT_TLS"), "{e}");
    // Undefined with a name offset outside the string table / not NUL-terminated.
    let e = with_sym(&|s| {
        put_u16(s, 6, 0);
        put_u32(s, 0, 0xffff);
    });
    assert!(matches!(e.root(), Error::OutOfBounds { what: "elf symbol name", .. }), "{e:?}");
}

#[test]
fn entry_name_lookup_survives_bad_string_offsets() {
    let (obj, _, _) = base_object();
    let symtab = find_section(&obj, SHT_SYMTAB).unwrap();
    let entry_sym = get_u64(&obj, shdr_offset(&obj, symtab) + 0x18) as usize + 2 * 24;
    let mut m = obj.clone();
    put_u32(&mut m, entry_sym, 0x7fff_ffff);
    let e = load_err(&m);
    assert!(matches!(e.root(), Error::OutOfBounds { what: "elf symbol name", .. }), "{e:?}");
}
