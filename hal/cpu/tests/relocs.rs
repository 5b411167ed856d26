//! Relocation, symbol, layout and entry tests on small synthetic objects (built by
//! `common::ObjBuilder`), for both architectures on any host: each patched field is compared with
//! a value computed by hand in the comments (the AArch64 encodings were checked with
//! `aarch64-linux-gnu-objdump`).

mod common;

use common::*;
use hcq::Error;
use hcq_cpu::ElfObject;
use hcq_cpu::elf::VENEER_SIZE;

fn u32_at(image: &[u8], at: usize) -> u32 {
    get_u32(image, at)
}

// ---------------------------------------------------------------- x86-64

/// .text (32 bytes, align 16) at image offset 0, .rodata (32 bytes, align 16) at 0x20.
/// Symbols: 1 .text section, 2 .rodata section, 3 local .LC0 = .rodata+8, 4 global `entry` =
/// .text+0, 5 undefined `ext`.
fn x86_object(relocs: &[(u64, u32, u32, i64)]) -> Vec<u8> {
    let mut b = ObjBuilder::new(EM_X86_64);
    let text = b.section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16, &[0u8; 32]);
    let rodata = b.rodata(16, &[0u8; 32]);
    b.symbol("", STB_LOCAL, STT_SECTION, text, 0);
    b.symbol("", STB_LOCAL, STT_SECTION, rodata, 0);
    b.symbol(".LC0", STB_LOCAL, STT_OBJECT, rodata, 8);
    b.func("entry", text, 0);
    b.undef("ext");
    for &(offset, sym, ty, addend) in relocs {
        b.rela(text, offset, sym, ty, addend);
    }
    b.build()
}

const X_BASE: u64 = 0x10_0000;

#[test]
fn x86_data_relocations_are_patched_as_computed_by_hand() {
    let obj = x86_object(&[
        (3, 3, 2, -4),       // PC32 .LC0-4:        S=X+0x28, P=X+3   -> 0x28-4-3 = 0x21
        (7, 2, 2, 0x10 - 4), // PC32 .rodata+0xc:  S=X+0x20, P=X+7   -> 0x20+0xc-7 = 0x25
        (11, 5, 4, -4),      // PLT32 ext-4:        S=X+0x5000, P=X+11 -> 0x5000-4-11 = 0x4ff1
        (16, 3, 1, 0x100),   // 64 .LC0+0x100:      X+0x128 = 0x100128
        (24, 4, 10, 4),      // 32 entry+4:         X+4 = 0x100004
        (28, 2, 11, -0x20),  // 32S .rodata-0x20:   X+0x20-0x20 = 0x100000
    ]);
    let resolve = |name: &str| (name == "ext").then_some(X_BASE + 0x5000);
    let (image, entry, layout) = load_at(&obj, X_BASE, "entry", &resolve).unwrap();
    assert_eq!(entry, X_BASE);
    assert_eq!(layout.sections[1], Some(0));
    assert_eq!(layout.sections[2], Some(0x20));
    assert_eq!(u32_at(&image, 3), 0x21);
    assert_eq!(u32_at(&image, 7), 0x25);
    assert_eq!(u32_at(&image, 11), 0x4ff1);
    assert_eq!(get_u64(&image, 16), 0x10_0128);
    assert_eq!(u32_at(&image, 24), 0x10_0004);
    assert_eq!(u32_at(&image, 28), 0x10_0000);
    // Untouched bytes stay as the section had them.
    assert_eq!(&image[0..3], &[0, 0, 0]);
}

#[test]
fn x86_far_plt32_call_goes_through_a_veneer() {
    // One PLT32 -> one veneer slot after .rodata (which ends at 0x40).
    let obj = x86_object(&[(11, 5, 4, -4)]);
    let far = 0x7fff_0000_1000u64;
    let (image, _, layout) = load_at(&obj, X_BASE, "entry", &|_| Some(far)).unwrap();
    assert_eq!((layout.veneer_offset, layout.veneer_slots), (0x40, 1));
    assert_eq!(layout.size, 0x40 + VENEER_SIZE);
    // call rel32 now reaches the veneer: 0x40 - 4 - 11 = 0x31.
    assert_eq!(u32_at(&image, 11), 0x31);
    let mut veneer = vec![0xff, 0x25, 0, 0, 0, 0];
    veneer.extend_from_slice(&far.to_le_bytes());
    veneer.extend_from_slice(&[0xcc, 0xcc]);
    assert_eq!(&image[0x40..0x50], veneer.as_slice());
}

#[test]
fn x86_near_plt32_leaves_the_veneer_slot_unused() {
    let obj = x86_object(&[(11, 5, 4, -4)]);
    let (image, _, layout) = load_at(&obj, X_BASE, "entry", &|_| Some(X_BASE + 0x100)).unwrap();
    assert_eq!(layout.veneer_slots, 1);
    assert_eq!(u32_at(&image, 11), 0x100 - 4 - 11);
    assert!(image[0x40..0x50].iter().all(|&b| b == 0), "unused veneer slot stays zero");
}

fn err_text(result: hcq::Result<(Vec<u8>, u64, hcq_cpu::Layout)>) -> (Error, String) {
    let err = result.expect_err("load must fail");
    let text = err.to_string();
    (err, text)
}

#[test]
fn x86_32_bit_results_out_of_range_name_the_relocation_and_offset() {
    // R_X86_64_32 at .text+0x18 against entry, image above 4 GiB.
    let obj = x86_object(&[(24, 4, 10, 0)]);
    let (_, msg) = err_text(load_at(&obj, 0x1_0000_0000, "entry", &no_imports));
    assert!(msg.contains("R_X86_64_32 (type 10) at .text+0x18"), "{msg}");
    assert!(msg.contains("unsigned 32-bit"), "{msg}");

    // R_X86_64_32S at .text+0x1c, image at 2 GiB (positive, above i32::MAX).
    let obj = x86_object(&[(28, 4, 11, 0)]);
    let (_, msg) = err_text(load_at(&obj, 0x8000_0000, "entry", &no_imports));
    assert!(msg.contains("R_X86_64_32S (type 11) at .text+0x1c"), "{msg}");

    // PC32 to a far external (data access): no veneer can help.
    let obj = x86_object(&[(3, 5, 2, -4)]);
    let (_, msg) = err_text(load_at(&obj, X_BASE, "entry", &|_| Some(0x7fff_0000_0000)));
    assert!(msg.contains("R_X86_64_PC32 (type 2) at .text+0x3") && msg.contains("`ext`"), "{msg}");
    assert!(msg.contains("signed 32-bit"), "{msg}");

    // PLT32 with an addend other than the call's -4 cannot use a veneer.
    let obj = x86_object(&[(11, 5, 4, -8)]);
    let (_, msg) = err_text(load_at(&obj, X_BASE, "entry", &|_| Some(0x7fff_0000_0000)));
    assert!(msg.contains("R_X86_64_PLT32"), "{msg}");
}

#[test]
fn x86_unknown_relocations_are_unsupported_with_name_type_and_offset() {
    let obj = x86_object(&[(3, 5, 9, -4)]); // R_X86_64_GOTPCREL
    let (err, msg) = err_text(load_at(&obj, X_BASE, "entry", &|_| Some(0x1000)));
    assert_eq!(err.root(), &Error::Unsupported { what: "elf relocation type", value: 9 });
    assert!(msg.contains("R_X86_64_GOTPCREL (type 9) at .text+0x3"), "{msg}");

    let obj = x86_object(&[(4, 3, 200, 0)]);
    let (err, msg) = err_text(load_at(&obj, X_BASE, "entry", &no_imports));
    assert_eq!(err.root(), &Error::Unsupported { what: "elf relocation type", value: 200 });
    assert!(msg.contains("unknown relocation (type 200) at .text+0x4"), "{msg}");
}

#[test]
fn relocation_none_is_ignored() {
    let obj = x86_object(&[(3, 0, 0, 0)]);
    let (image, _, _) = load_at(&obj, X_BASE, "entry", &no_imports).unwrap();
    assert!(image[..32].iter().all(|&b| b == 0));
}

// ---------------------------------------------------------------- AArch64

const A_BASE: u64 = 0x10ff0;

/// .text = `insns` (align 4) at image offset 0, .rodata (64 bytes, align 16) at 0x20 (address
/// A_BASE + 0x20 = 0x11010). Symbols: 1 .text section, 2 .rodata section, 3 local .LC = .rodata+0x10
/// (0x11020), 4 global `entry` = .text+0, 5 undefined `ext`.
fn a64_object(insns: &[u32], text_relocs: &[(u64, u32, u32, i64)], data_relocs: &[(u64, u32, u32, i64)]) -> Vec<u8> {
    let mut b = ObjBuilder::new(EM_AARCH64);
    let code: Vec<u8> = insns.iter().flat_map(|i| i.to_le_bytes()).collect();
    let text = b.text(&code);
    let rodata = b.rodata(16, &[0u8; 64]);
    b.symbol("", STB_LOCAL, STT_SECTION, text, 0);
    b.symbol("", STB_LOCAL, STT_SECTION, rodata, 0);
    b.symbol(".LC", STB_LOCAL, STT_OBJECT, rodata, 0x10);
    b.func("entry", text, 0);
    b.undef("ext");
    for &(offset, sym, ty, addend) in text_relocs {
        b.rela(text, offset, sym, ty, addend);
    }
    for &(offset, sym, ty, addend) in data_relocs {
        b.rela(rodata, offset, sym, ty, addend);
    }
    b.build()
}

const ADRP_X0: u32 = 0x9000_0000;
const ADD_X0: u32 = 0x9100_0000;
const LDR_S0: u32 = 0xbd40_0000;
const LDR_Q0: u32 = 0x3dc0_0000;
const LDRB_W0: u32 = 0x3940_0000;
const LDRH_W0: u32 = 0x7940_0000;
const LDR_X0: u32 = 0xf940_0000;
const BL: u32 = 0x9400_0000;
const B: u32 = 0x1400_0000;

#[test]
fn a64_page_lo12_and_branch_relocations_match_hand_encodings() {
    let insns = [ADRP_X0, ADD_X0, LDR_S0, LDR_Q0, LDRB_W0, LDRH_W0, LDR_X0, BL];
    let obj = a64_object(
        &insns,
        &[
            (0x00, 3, 275, 0),    // ADR_PREL_PG_HI21 .LC: page 0x11000 - page 0x10000 = 1 page
            (0x04, 3, 277, 0),    // ADD_ABS_LO12_NC .LC: lo12 0x020
            (0x08, 2, 285, 0x14), // LDST32 .rodata+0x14 = 0x11024: 0x24 >> 2 = 9
            (0x0c, 2, 299, 0x20), // LDST128 .rodata+0x20 = 0x11030: 0x30 >> 4 = 3
            (0x10, 2, 278, 0x07), // LDST8 .rodata+0x7 = 0x11017: 0x17
            (0x14, 2, 284, 0x06), // LDST16 .rodata+0x6 = 0x11016: 0x16 >> 1 = 0xb
            (0x18, 2, 286, 0x28), // LDST64 .rodata+0x28 = 0x11038: 0x38 >> 3 = 7
            (0x1c, 4, 283, 0),    // CALL26 entry from 0x1100c: -0x1c >> 2 = -7
        ],
        &[
            (0x30, 4, 257, 8), // ABS64 entry+8 = 0x10ff8
            (0x3c, 4, 261, 0), // PREL32 entry - (0x11010 + 0x3c) = -0x5c
        ],
    );
    let (image, entry, layout) = load_at(&obj, A_BASE, "entry", &no_imports).unwrap();
    assert_eq!(entry, A_BASE);
    assert_eq!(layout.sections[2], Some(0x20));
    let words: Vec<u32> = (0..8).map(|i| u32_at(&image, i * 4)).collect();
    assert_eq!(
        words,
        [
            0xb000_0000, // adrp x0, 0x11000
            0x9100_8000, // add x0, x0, #0x20
            0xbd40_2400, // ldr s0, [x0, #36]
            0x3dc0_0c00, // ldr q0, [x0, #48]
            0x3940_5c00, // ldrb w0, [x0, #23]
            0x7940_2c00, // ldrh w0, [x0, #22]
            0xf940_1c00, // ldr x0, [x0, #56]
            0x97ff_fff9, // bl 0x10ff0
        ]
    );
    assert_eq!(get_u64(&image, 0x20 + 0x30), 0x10ff8);
    assert_eq!(u32_at(&image, 0x20 + 0x3c), (-0x5ci32) as u32);
}

#[test]
fn a64_adrp_reaches_far_and_negative_pages() {
    let resolve = |name: &str| match name {
        "ext" => Some(0x1234_5678),
        "low" => Some(0),
        _ => None,
    };
    let mut b = ObjBuilder::new(EM_AARCH64);
    let code: Vec<u8> = [ADRP_X0, ADRP_X0].iter().flat_map(|i| i.to_le_bytes()).collect();
    let text = b.text(&code);
    let ext = b.undef("ext");
    let low = b.undef("low");
    b.func("entry", text, 0);
    b.rela(text, 0, ext, 275, 0); // page 0x12345000 - page 0x10000 = 0x12335 pages
    b.rela(text, 4, low, 275, 0); // page 0 - page 0x10000 (P = 0x10ff4) = -16 pages
    let (image, _, _) = load_at(&b.build(), A_BASE, "entry", &resolve).unwrap();
    assert_eq!(u32_at(&image, 0), 0xb009_19a0); // immlo = 1, immhi = 0x48cd
    assert_eq!(u32_at(&image, 4), 0x90ff_ff80); // imm = 0x1ffff0 (21-bit -16)
}

#[test]
fn a64_far_branches_use_veneers_near_ones_do_not() {
    let far = 0x7f00_0000_1000u64;
    let obj = a64_object(&[BL, B], &[(0, 5, 283, 0), (4, 5, 282, 0)], &[]);
    // .text is 8 bytes, .rodata at 0x10..0x50 (align 16), veneers from 0x50.
    let base = 0x10000;
    let (image, _, layout) = load_at(&obj, base, "entry", &|_| Some(far)).unwrap();
    assert_eq!((layout.veneer_offset, layout.veneer_slots), (0x50, 2));
    assert_eq!(u32_at(&image, 0), BL | (0x50 >> 2)); // bl veneer 0
    assert_eq!(u32_at(&image, 4), B | ((0x60 - 4) >> 2)); // b veneer 1
    for slot in [0x50, 0x60] {
        assert_eq!(u32_at(&image, slot), 0x5800_0050, "ldr x16, #8");
        assert_eq!(u32_at(&image, slot + 4), 0xd61f_0200, "br x16");
        assert_eq!(get_u64(&image, slot + 8), far);
    }

    // Within +-128 MiB the branch is direct: ext = base + 0x7ff_fffc is the last reachable word
    // for the bl at offset 0.
    let near = base + 0x7ff_fffc;
    let (image, _, _) = load_at(&obj, base, "entry", &|_| Some(near)).unwrap();
    assert_eq!(u32_at(&image, 0), BL | 0x01ff_ffff);
    assert!(image[0x50..0x70].iter().all(|&b| b == 0));
    // One word further needs the veneer.
    let (image, _, _) = load_at(&obj, base, "entry", &|_| Some(near + 4)).unwrap();
    assert_eq!(u32_at(&image, 0), BL | (0x50 >> 2));
}

#[test]
fn a64_misaligned_and_out_of_range_targets_are_errors() {
    // LDST32 to .rodata+2: not 4-aligned.
    let obj = a64_object(&[LDR_S0], &[(0, 2, 285, 2)], &[]);
    let (err, msg) = err_text(load_at(&obj, A_BASE, "entry", &no_imports));
    assert!(matches!(err.root(), Error::Misaligned { align: 4, .. }), "{err:?}");
    assert!(msg.contains("R_AARCH64_LDST32_ABS_LO12_NC (type 285) at .text+0x0"), "{msg}");

    // LDST128 to .rodata+0x18: 8- but not 16-aligned.
    let obj = a64_object(&[LDR_Q0], &[(0, 2, 299, 0x18)], &[]);
    let (err, _) = err_text(load_at(&obj, A_BASE, "entry", &no_imports));
    assert!(matches!(err.root(), Error::Misaligned { align: 16, .. }), "{err:?}");

    // CALL26 to a target that is not a multiple of 4.
    let obj = a64_object(&[BL], &[(0, 4, 283, 2)], &[]);
    let (err, _) = err_text(load_at(&obj, A_BASE, "entry", &no_imports));
    assert!(matches!(err.root(), Error::Misaligned { what: "branch target", .. }), "{err:?}");

    // ADRP more than 4 GiB away.
    let obj = a64_object(&[ADRP_X0], &[(0, 5, 275, 0)], &[]);
    let (_, msg) = err_text(load_at(&obj, A_BASE, "entry", &|_| Some(0x2_0000_0000)));
    assert!(msg.contains("R_AARCH64_ADR_PREL_PG_HI21") && msg.contains("4 GiB"), "{msg}");

    // PREL32 to a far symbol.
    let obj = a64_object(&[0], &[], &[(0, 5, 261, 0)]);
    let (_, msg) = err_text(load_at(&obj, A_BASE, "entry", &|_| Some(0x7f00_0000_0000)));
    assert!(msg.contains("R_AARCH64_PREL32 (type 261) at .rodata+0x0"), "{msg}");
}

#[test]
fn a64_unknown_relocations_are_unsupported_with_name() {
    let obj = a64_object(&[ADRP_X0], &[(0, 5, 311, 0)], &[]);
    let (err, msg) = err_text(load_at(&obj, A_BASE, "entry", &|_| Some(0x1000)));
    assert_eq!(err.root(), &Error::Unsupported { what: "elf relocation type", value: 311 });
    assert!(msg.contains("aarch64 R_AARCH64_ADR_GOT_PAGE (type 311) at .text+0x0 against symbol 5 `ext`"), "{msg}");
    // An x86-64 type number means something else (or nothing) on AArch64.
    let obj = a64_object(&[0], &[(0, 4, 2, 0)], &[]);
    let (err, _) = err_text(load_at(&obj, A_BASE, "entry", &no_imports));
    assert_eq!(err.root(), &Error::Unsupported { what: "elf relocation type", value: 2 });
}

// ---------------------------------------------------------------- symbols, layout, entry

#[test]
fn unresolved_symbols_are_named_and_weak_ones_are_zero() {
    let mut b = ObjBuilder::new(EM_X86_64);
    let text = b.section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16, &[0u8; 16]);
    b.func("entry", text, 0);
    let missing = b.undef("missing_fn");
    let weak = b.symbol("weak_fn", STB_WEAK, STT_FUNC, SHN_UNDEF, 0);
    b.rela(text, 8, weak, 1, 0x10); // R_X86_64_64 weak+0x10 -> 0x10
    let ok = b.build();
    let (image, _, _) = load_at(&ok, X_BASE, "entry", &no_imports).unwrap();
    assert_eq!(get_u64(&image, 8), 0x10);

    b.rela(text, 0, missing, 1, 0);
    let obj = b.build();
    let parsed = ElfObject::parse(&obj).unwrap();
    assert_eq!(parsed.undefined_symbols().unwrap(), ["weak_fn", "missing_fn"]);
    let (_, msg) = err_text(load_at(&obj, X_BASE, "entry", &no_imports));
    assert!(msg.contains("unresolved symbol `missing_fn`"), "{msg}");
    // The resolver is asked by name.
    let (image, _, _) = load_at(&obj, X_BASE, "entry", &|n: &str| (n == "missing_fn").then_some(0xabcdef)).unwrap();
    assert_eq!(get_u64(&image, 0), 0xabcdef);
}

#[test]
fn abs_symbols_and_global_symbols_in_other_sections_resolve() {
    let mut b = ObjBuilder::new(EM_X86_64);
    let text = b.section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16, &[0u8; 24]);
    let data = b.section(".data", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 8, &[7u8; 8]);
    let abs = b.symbol("answer", STB_LOCAL, STT_NOTYPE, SHN_ABS, 42);
    b.func("entry", text, 0);
    let var = b.symbol("var", STB_GLOBAL, STT_OBJECT, data, 4);
    b.rela(text, 0, abs, 1, 0); // 42
    b.rela(text, 8, var, 1, 1); // X + 0x18 (.data, 8-aligned after 24 bytes) + 4 + 1
    let (image, _, layout) = load_at(&b.build(), X_BASE, "entry", &no_imports).unwrap();
    assert_eq!(layout.sections[2], Some(0x18));
    assert_eq!(get_u64(&image, 0), 42);
    assert_eq!(get_u64(&image, 8), X_BASE + 0x1d);
    assert_eq!(&image[0x18..0x20], &[7u8; 8]);
}

#[test]
fn layout_follows_section_order_and_alignment_and_zeroes_nobits() {
    let mut b = ObjBuilder::new(EM_X86_64);
    let text = b.section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 4, &[0x90; 5]);
    b.section(".comment", SHT_PROGBITS, 0, 1, b"not loaded"); // not SHF_ALLOC
    let ro = b.section(".rodata.cst16", SHT_PROGBITS, SHF_ALLOC, 16, &[1u8; 16]);
    let bss = b.nobits(".bss", 100, 64);
    let last = b.section(".rodata.str", SHT_PROGBITS, SHF_ALLOC, 1, b"hi\0");
    b.func("entry", text, 0);
    let obj = b.build();
    let parsed = ElfObject::parse(&obj).unwrap();
    let layout = parsed.layout();
    assert_eq!(layout.sections[usize::from(text)], Some(0));
    assert_eq!(layout.sections[2], None, ".comment is not allocated");
    assert_eq!(layout.sections[usize::from(ro)], Some(16));
    assert_eq!(layout.sections[usize::from(bss)], Some(64));
    assert_eq!(layout.sections[usize::from(last)], Some(164));
    assert_eq!(layout.align, 64);
    assert_eq!((layout.veneer_offset, layout.veneer_slots), (176, 0));
    assert_eq!(layout.size, 176);
    let mut image = vec![0xeeu8; 200];
    parsed.load_into(&mut image, 0x1000, "entry", &no_imports).unwrap();
    assert_eq!(&image[..5], &[0x90; 5]);
    assert!(image[5..16].iter().all(|&b| b == 0), "alignment padding is zero");
    assert_eq!(&image[16..32], &[1u8; 16]);
    assert!(image[64..164].iter().all(|&b| b == 0), ".bss is zero-filled");
    assert_eq!(&image[164..167], b"hi\0");
    assert!(image[176..].iter().all(|&b| b == 0xee), "nothing past layout.size is written");
}

#[test]
fn image_size_and_address_alignment_are_checked() {
    let obj = x86_object(&[]);
    let parsed = ElfObject::parse(&obj).unwrap();
    let mut small = vec![0u8; parsed.layout().size as usize - 1];
    let err = parsed.load_into(&mut small, X_BASE, "entry", &no_imports).unwrap_err();
    assert!(matches!(err, Error::OutOfSpace { what: "elf load image", .. }), "{err:?}");
    let mut image = vec![0u8; parsed.layout().size as usize];
    let err = parsed.load_into(&mut image, X_BASE + 8, "entry", &no_imports).unwrap_err();
    assert_eq!(err, Error::Misaligned { what: "elf load image address", value: X_BASE + 8, align: 16 });
    let err = parsed.load_into(&mut image, u64::MAX - 15, "entry", &no_imports).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
}

#[test]
fn entry_must_be_a_defined_function_in_executable_code() {
    let mut b = ObjBuilder::new(EM_X86_64);
    let text = b.section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16, &[0u8; 32]);
    let rodata = b.rodata(16, &[0u8; 16]);
    let dbg = b.section(".debug_x", SHT_PROGBITS, SHF_EXECINSTR, 1, &[0u8; 4]);
    b.symbol("dup", STB_LOCAL, STT_FUNC, text, 8);
    b.symbol("data", STB_GLOBAL, STT_OBJECT, rodata, 0);
    b.symbol("in_rodata", STB_GLOBAL, STT_FUNC, rodata, 0);
    b.symbol("in_debug", STB_GLOBAL, STT_FUNC, dbg, 0);
    b.symbol("past_end", STB_GLOBAL, STT_FUNC, text, 32);
    b.symbol("dup", STB_GLOBAL, STT_FUNC, text, 16);
    b.undef("undef_fn");
    let obj = b.build();
    let parsed = ElfObject::parse(&obj).unwrap();
    assert_eq!(parsed.entry_offset("dup").unwrap(), 16, "the global definition wins over the local one");
    for (name, needle) in [
        ("nope", "no defined symbol"),
        ("undef_fn", "no defined symbol"),
        ("data", "not a function"),
        ("in_rodata", "not in a loaded executable section"),
        ("in_debug", "not in a loaded executable section"),
        ("past_end", "entry symbol value"),
    ] {
        let msg = parsed.entry_offset(name).unwrap_err().to_string();
        assert!(msg.contains(&format!("`{name}`")) && msg.contains(needle), "{name}: {msg}");
    }
}

#[test]
fn rela_eh_frame_and_relocations_of_unloaded_sections_are_skipped() {
    let mut b = ObjBuilder::new(EM_AARCH64);
    let text = b.text(&[0u8; 8]);
    let eh = b.section(".eh_frame", SHT_PROGBITS, SHF_ALLOC, 8, &[0u8; 16]);
    let dbg = b.section(".debug_info", SHT_PROGBITS, 0, 1, &[0u8; 16]);
    b.func("entry", text, 0);
    let ext = b.undef("never_resolved");
    b.rela(eh, 0, ext, 261, 0); // would fail: unresolved
    b.rela(dbg, 0, ext, 9999, 0); // would fail: unknown type
    let (image, _, layout) = load_at(&b.build(), 0x1000, "entry", &no_imports).unwrap();
    assert_eq!(layout.sections[usize::from(eh)], Some(8), ".eh_frame itself is laid out");
    assert!(image.iter().all(|&b| b == 0));
}
