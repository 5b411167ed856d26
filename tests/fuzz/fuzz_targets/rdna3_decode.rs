//! Fuzz the RDNA3 decoder and disassembler: any byte string, read as little-endian dwords, must
//! decode instruction by instruction (each within the dwords left, its text printable) or stop at
//! an error naming an offset inside the code, never panic.
#![no_main]

use std::fmt::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let code: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut text = String::new();
    let mut end = 0;
    for r in hcq_rdna3::decode::decode_all(&code) {
        match r {
            Ok((at, i)) => {
                assert_eq!(at, end, "instructions follow one another");
                assert!(i.len >= 1 && at + i.len <= code.len());
                assert_eq!(&i.words[..i.len], &code[at..at + i.len]);
                end = at + i.len;
                text.clear();
                write!(text, "{}", hcq_rdna3::disasm::Text(&i)).unwrap();
            }
            Err(e) => {
                text.clear();
                write!(text, "{e}").unwrap();
                assert!(text.starts_with("rdna3: "));
            }
        }
    }
});
