//! Fuzz the ir3 decoder and disassembler: any byte string, read as little-endian 64-bit
//! instruction words, must decode to instructions or to a `DecodeError` naming the index and
//! word, never panic; every decoded instruction must disassemble, and a whole image must either
//! decode (then list) or report the first bad word.
#![no_main]

use std::hint::black_box;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut instrs = Vec::new();
    for (i, c) in data.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(c.try_into().unwrap());
        match hcq_ir3::decode::decode_at(i, w) {
            Ok(ins) => {
                assert_eq!(ins.word, w);
                black_box(hcq_ir3::disasm(&ins, i));
                black_box(ins.mnemonic());
                instrs.push(ins);
            }
            Err(e) => {
                assert_eq!((e.index, e.word), (i, w));
                black_box(e.to_string());
            }
        }
    }
    black_box(hcq_ir3::listing(&instrs));
    match hcq_ir3::decode_image(data) {
        Ok(all) => assert_eq!(all.len(), data.len() / 8),
        Err(e) => black_box(e.to_string()).truncate(0),
    }
});
