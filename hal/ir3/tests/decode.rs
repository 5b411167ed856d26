//! Decoder errors name the instruction index and the 64-bit word; images must be whole words.

use hcq_ir3::{DecodeError, ImageError, decode_image, decode_words};

#[test]
fn unknown_encoding_names_index_and_word() {
    // cat2 opcode 8 does not exist (XML ir3-cat2.xml has no bitset for 001000).
    let bad = 2u64 << 61 | 8 << 53;
    let e = decode_words(&[0, 0x0300_0000_0000_0000, bad]).unwrap_err();
    assert_eq!(e, DecodeError { index: 2, word: bad, reason: "unknown cat2 opcode" });
    assert_eq!(e.to_string(), "instruction 2: unknown encoding [41000000_00000000]: unknown cat2 opcode");
    let image: Vec<u8> = [0u64, bad].iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(
        decode_image(&image).unwrap_err(),
        ImageError::Decode(DecodeError { index: 1, word: bad, reason: "unknown cat2 opcode" })
    );
}

#[test]
fn image_must_be_whole_instructions() {
    let e = decode_image(&[0u8; 12]).unwrap_err();
    assert_eq!(e, ImageError::Length(12));
    assert!(e.to_string().contains("12 bytes"));
}

#[test]
fn a7xx_only_and_cat5_words() {
    // cat7 opc 7 (lock/unlock) is a7xx-only: unknown on a630.
    assert!(hcq_ir3::decode(7u64 << 61 | 7 << 55).is_err());
    // A modelled cat5 form (sam) decodes fully; others (gather4r) to their name only.
    let i = hcq_ir3::decode(5u64 << 61 | 3 << 54).unwrap();
    assert_eq!(i.mnemonic(), "sam");
    assert_eq!(hcq_ir3::disasm(&i, 0), "sam (f16)()hr0.x, hr0.x, s#0, t#0");
    let i = hcq_ir3::decode(5u64 << 61 | 16 << 54).unwrap();
    assert_eq!(i.mnemonic(), "gather4r");
    assert_eq!(hcq_ir3::disasm(&i, 0), "gather4r");
}
