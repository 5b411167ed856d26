//! Code objects: a real one (tinygrad 0.14's AMD_LLVM output, `tests/data/tinygrad`) lays out as
//! tinygrad's elf_loader lays it out and its descriptor reads as LLVM wrote it; every malformed
//! variant — truncated anywhere, another machine, a bad section, relocation or descriptor field —
//! is an error naming the field, never a panic.

use hcq_amd::codeobj::{CodeObject, Descriptor, MAX_LDS};

fn sample() -> Vec<u8> {
    let dir = hcq_testkit::root().join("hal/amd/tests/data/tinygrad");
    let mut objs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "co"))
        .collect();
    objs.sort();
    std::fs::read(&objs[0]).unwrap()
}

fn msg(file: &[u8]) -> String {
    CodeObject::parse(file).unwrap_err().to_string()
}

/// The image offset of the first kernel's descriptor, and the file offset of `.rodata`.
fn kd_in_file(file: &[u8]) -> usize {
    let co = CodeObject::parse(file).unwrap();
    let k = &co.kernels[0];
    let ro = co.sections.iter().find(|s| s.range.contains(&k.descriptor_at)).unwrap();
    // find the section's bytes in the file: the descriptor's 64 bytes are copied verbatim except
    // the relocated entry offset, so search for its first 16 bytes
    let needle = &co.image[k.descriptor_at..k.descriptor_at + 16];
    let at = file.windows(16).position(|w| w == needle).unwrap();
    assert!(ro.range.len() >= 64);
    at
}

#[test]
fn a_tinygrad_object_lays_out_like_tinygrads_loader() {
    let file = sample();
    let co = CodeObject::parse(&file).unwrap();
    let text = co.sections.iter().find(|s| s.name == ".text").unwrap();
    let ro = co.sections.iter().find(|s| s.name == ".rodata").unwrap();
    assert!(text.exec && !ro.exec);
    assert_eq!(text.range.start, 0, ".text is the first PROGBITS, at 0");
    assert_eq!(ro.range.start % 64, 0);
    assert_eq!(co.kernels.len(), 1);
    let k = &co.kernels[0];
    assert_eq!(k.descriptor_at, ro.range.start);
    // the relocated entry offset points back at the code: R_AMDGPU_REL64 applied
    assert_eq!(k.entry, text.range.start);
    assert!(k.code_bytes > 0 && k.code_bytes <= text.range.len());
    assert!(k.kd.wave32, "tinygrad's gfx1100 kernels are wave32");
    assert!(k.kd.kernarg_ptr);
    assert!(k.kd.vgprs >= 8 && k.kd.vgprs <= 256);
}

#[test]
fn truncated_anywhere_is_an_error() {
    let file = sample();
    for n in (0..file.len()).step_by(7) {
        let e = CodeObject::parse(&file[..n]).unwrap_err();
        assert!(e.to_string().starts_with("code object: "), "{n}: {e}");
    }
}

#[test]
fn every_flipped_byte_is_an_object_or_an_error() {
    let file = sample();
    for at in 0..file.len() {
        for bit in [0x01u8, 0x80] {
            let mut f = file.clone();
            f[at] ^= bit;
            let _ = CodeObject::parse(&f);
        }
    }
}

#[test]
fn another_machine_or_arch_is_refused_by_name() {
    let mut f = sample();
    f[18] = 62; // EM_X86_64
    assert!(msg(&f).contains("is not EM_AMDGPU"), "{}", msg(&f));
    let mut f = sample();
    f[48] = 0x2f; // gfx1030
    assert!(msg(&f).contains("EF_AMDGPU_MACH 0x2f is not gfx1100"), "{}", msg(&f));
    let mut f = sample();
    f[0] = b'X';
    assert!(msg(&f).contains("no \\x7fELF magic"), "{}", msg(&f));
}

#[test]
fn bad_descriptor_fields_are_refused_naming_the_field() {
    let file = sample();
    let kd = kd_in_file(&file);
    let put = |off: usize, v: u32| {
        let mut f = file.clone();
        f[kd + off..kd + off + 4].copy_from_slice(&v.to_le_bytes());
        f
    };
    assert!(msg(&put(0, MAX_LDS + 4)).contains("group_segment_fixed_size"));
    assert!(msg(&put(4, Descriptor::max_private(true) + 1)).contains("private_segment_fixed_size"));
    assert!(msg(&put(8, 1 << 20)).contains("kernarg_size"));
    assert!(msg(&put(12, 1)).contains("reserved bytes"));
    let rsrc1 = u32::from_le_bytes(file[kd + 48..kd + 52].try_into().unwrap());
    assert!(msg(&put(48, rsrc1 | 0x3f)).contains("VGPRs, more than a wave's 256"));
    let rsrc2 = u32::from_le_bytes(file[kd + 52..kd + 56].try_into().unwrap());
    assert!(msg(&put(52, rsrc2 | 3 << 11)).contains("ENABLE_VGPR_WORKITEM_ID"));
}

#[test]
fn a_relocation_of_another_type_is_refused_by_number() {
    let file = sample();
    // the .rela.rodata entry: r_info's low word is the type (5); find it by its r_offset 16
    let pos = (0..file.len() - 24)
        .step_by(8)
        .find(|&p| file[p..p + 8] == 16u64.to_le_bytes() && file[p + 8..p + 12] == 5u32.to_le_bytes())
        .expect("the R_AMDGPU_REL64 of the descriptor's entry offset");
    let mut f = file.clone();
    f[pos + 8] = 3;
    assert!(msg(&f).contains("relocation type 3"), "{}", msg(&f));
    let mut f = file.clone();
    f[pos..pos + 8].copy_from_slice(&0x1000u64.to_le_bytes());
    assert!(msg(&f).contains("outside its section"), "{}", msg(&f));
}
