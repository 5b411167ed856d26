//! The disassembler against LLVM 19: every instance of `tests/data/llvm19.txt` (random operands,
//! inline constants, literals, modifiers and offsets for every opcode of the tables, as
//! `llvm-mc-19 --disassemble --mcpu=gfx1100` printed them; `tools/rdna3_tables.py --corpus`)
//! decodes to its length and prints LLVM's text exactly; truncated and unknown words are errors
//! that name their offset, never a panic.

use hcq_rdna3::decode::{DecodeError, decode, decode_all};
use hcq_rdna3::disasm::Text;

fn corpus() -> Vec<(Vec<u32>, String)> {
    let text = std::fs::read_to_string(hcq_testkit::root().join("hal/rdna3/tests/data/llvm19.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (hex, asm) = l.split_once('\t').unwrap();
            (hex.split(' ').map(|w| u32::from_str_radix(w, 16).unwrap()).collect(), asm.to_string())
        })
        .collect()
}

#[test]
fn every_corpus_instance_prints_what_llvm_prints() {
    let cases = corpus();
    assert!(cases.len() > 3000, "the corpus holds {} instances", cases.len());
    let mut bad = Vec::new();
    for (words, want) in &cases {
        let got = match decode(words, 0) {
            Ok(i) if i.len != words.len() => format!("<length {} of {}>", i.len, words.len()),
            Ok(i) => format!("{}", Text(&i)),
            Err(e) => format!("<{e}>"),
        };
        if &got != want {
            bad.push(format!("{words:08x?}\n  llvm: {want}\n  hcq:  {got}"));
        }
    }
    let n = bad.len();
    if std::env::var_os("RDNA3_ALL").is_none() {
        bad.truncate(40);
    }
    assert!(n == 0, "{n} of {} differ, the first:\n{}", cases.len(), bad.join("\n"));
}

#[test]
fn truncated_and_unknown_words_are_errors_with_their_offset() {
    // s_mov_b32 s0, literal: the literal dword is missing.
    assert_eq!(decode(&[0xbe80_00ff], 0).unwrap_err(), DecodeError::Truncated { at: 0, need: 2 });
    // global_load_b32 needs two dwords.
    assert_eq!(decode(&[0xbfb0_0000, 0xdc50_0000], 1).unwrap_err(), DecodeError::Truncated { at: 1, need: 2 });
    // decode_all stops at the first error and says where.
    let errs: Vec<_> = decode_all(&[0xbfb0_0000, 0xbe80_00ff]).collect();
    assert!(errs[0].is_ok());
    assert_eq!(errs[1].as_ref().unwrap_err(), &DecodeError::Truncated { at: 1, need: 2 });
    assert_eq!(errs.len(), 2);
}

#[test]
fn every_dword_decodes_or_is_an_error_never_a_panic() {
    // A deterministic sweep of dword pairs over every encoding's top bits.
    let mut x = 0x9e37_79b9u32;
    for top in 0..256u32 {
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let code = [top << 24 | (x & 0x00ff_ffff), x.rotate_left(7), x.rotate_left(15)];
            if let Ok(i) = decode(&code, 0) {
                assert!(i.len >= 1 && i.len <= 3);
                let _ = format!("{}", Text(&i));
            }
        }
    }
}
