//! Property tests (stable counterparts of the fuzz targets in tests/fuzz): the decoder and
//! disassembler never panic on any word; the interpreter never panics on arbitrary instruction
//! streams and always stops within its step limit.

use hcq_ir3::exec::{Buffers, Dispatch, Interp, Meta, Shader};
use hcq_ir3::isa::{Body, Cat0, Cat0Op, Flags, Instr};
use proptest::prelude::*;

fn nop() -> Instr {
    Instr {
        word: 0,
        flags: Flags::default(),
        body: Body::Cat0(Cat0 { op: Cat0Op::Nop, immed: 0, inv1: false, comp1: 0, inv2: false, comp2: 0, index: 0 }),
    }
}

/// Words biased toward valid encodings: a category, then random bits, sometimes sparse.
fn word() -> impl Strategy<Value = u64> {
    (0u64..8, any::<u64>(), any::<u64>(), any::<bool>()).prop_map(|(cat, a, b, sparse)| {
        let bits = if sparse { a & b } else { a };
        (bits & !(7 << 61)) | cat << 61
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn decoder_and_disassembler_never_panic(w in any::<u64>(), i in 0usize..10_000) {
        match hcq_ir3::decode::decode_at(i, w) {
            Ok(ins) => {
                prop_assert_eq!(ins.word, w);
                prop_assert!(!hcq_ir3::disasm(&ins, i).is_empty());
            }
            Err(e) => {
                prop_assert_eq!((e.index, e.word), (i, w));
                let word = format!("{:08x}_{:08x}", w >> 32, w as u32);
                prop_assert!(e.to_string().contains(&word));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn interpreter_never_panics_and_stops(words in prop::collection::vec(word(), 1..48), local in 1u32..100, grid in 1u32..3, consts in prop::collection::vec(any::<u8>(), 0..128), merged: bool, demote: bool) {
        let instrs: Vec<Instr> = words.iter().map(|&w| hcq_ir3::decode(w).unwrap_or_else(|_| nop())).collect();
        let meta = Meta { fregs: 48, hregs: 48, wgid: 192, lid: 0, shmem: 128, pvtmem: 32, merged_regs: merged, const_demotion: demote };
        let prog = Shader { instrs, meta };
        let mut consts = consts;
        consts.resize(consts.len().max(8), 0);
        consts[..8].copy_from_slice(&0x1_0000_0000u64.to_le_bytes());
        let mut mem = Buffers { bufs: vec![(0x1_0000_0000, vec![0; 1024])] };
        let mut it = Interp::new();
        it.max_steps = 5_000;
        match it.run(&prog, &Dispatch { consts: &consts, grid: [grid, 1, 1], local: [local, 1, 1] }, &mut mem) {
            Ok(s) => prop_assert!(s.steps <= 5_000),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        // The buffer keeps its size: no write escaped it.
        prop_assert_eq!(mem.bufs[0].1.len(), 1024);
    }
}
