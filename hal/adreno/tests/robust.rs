//! Stable-toolchain stand-ins for the cargo-fuzz targets in `tests/fuzz` (adreno_pm4 as IB and
//! ringbuffer,
//! adreno_rd, adreno_program): random and mutated inputs give results or clear errors, never
//! panics or hangs.

mod common;

use common::*;
use hcq_adreno::Program;
use hcq_adreno::pm4::Decoder;
use hcq_adreno::rd::{RdWriter, read};
use hcq_sim_adreno::cp::{Cp, SparseMemory};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_words_decode_or_fail_at_an_offset_and_never_hang_the_cp(words in prop::collection::vec(
        prop_oneof![any::<u32>(), (0u32..0x80, 0u32..8).prop_map(|(o, n)| hcq_adreno::pm4::type7_header(o, n).unwrap())],
        0..64,
    )) {
        for r in Decoder::new(&words) {
            match r {
                Ok((at, p)) => prop_assert!(at + p.words() <= words.len()),
                Err(hcq::Error::Malformed { at, .. }) => prop_assert!((at as usize) < words.len()),
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
        }
        let mut mem = SparseMemory::new();
        mem.map(0, 0x1000).unwrap();
        mem.map(IB, 0x1000).unwrap();
        mem.write_words(IB, &words).unwrap();
        let _ = Cp::new().submit(IB, words.len() as u32, &mut mem, &mut Recorder::default());
    }

    #[test]
    fn random_words_in_the_ringbuffer_run_or_fail_with_rptr_inside_the_ring(
        words in prop::collection::vec(
            prop_oneof![any::<u32>(), (0u32..0x80, 0u32..8).prop_map(|(o, n)| hcq_adreno::pm4::type7_header(o, n).unwrap())],
            64,
        ),
        bells in prop::collection::vec(0u32..64, 1..4),
    ) {
        // A 64-dword ring holding random words, rung at random write pointers (wrapping).
        let mut mem = SparseMemory::new();
        mem.map(0, 0x1000).unwrap();
        mem.map(IB, 0x1000).unwrap();
        mem.write_words(IB, &words).unwrap();
        let mut cp = Cp::new();
        for wptr in bells {
            match cp.ring(IB, 64, wptr, &mut mem, &mut Recorder::default()) {
                Ok((_, rptr)) => prop_assert!(rptr < 64),
                Err(e) => {
                    prop_assert!(e.to_string().contains("adreno sim"), "{}", e);
                    break;
                }
            }
        }
    }

    #[test]
    fn random_rd_bytes_read_or_fail_inside_the_file(data in prop::collection::vec(any::<u8>(), 0..256)) {
        match read(&data) {
            Ok(c) => {
                let mut w = RdWriter::new(&c.cmd, 0, 0);
                for s in &c.submits {
                    w.submit(s.buffers.iter().map(|(a, b)| (*a, &b[..])), s.ib, s.dwords).unwrap();
                    let _ = s.ib_words();
                }
                prop_assert_eq!(read(w.bytes()).unwrap().submits, c.submits);
            }
            Err(hcq::Error::Malformed { at, .. }) => prop_assert!((at as usize) < data.len()),
            Err(e) => prop_assert!(false, "unexpected {:?}", e),
        }
    }

    #[test]
    fn mutated_metadata_validates_or_is_refused(edits in prop::collection::vec((0usize..4000, any::<u8>()), 1..4)) {
        let blob = data("e_32_32_4.a630.bin");
        let mut meta = data("e_32_32_4.adreno.json");
        for (i, b) in edits {
            let i = i % meta.len();
            meta[i] = if b.is_ascii_digit() || b == b'-' { b } else { b'0' + b % 10 };
        }
        if let Ok(p) = Program::from_json(&blob, &meta) {
            let enc = encoder();
            let h = enc.add_program(&p, CODE);
            prop_assert!(h.is_ok() || p.stack_bytes > 0x1_0000);
            let mut block = vec![0u8; p.const_block_bytes as usize];
            p.fill_consts(&mut block, &vec![0; p.n_args as usize], &vec![0; p.n_vals as usize], [1, 1, 1]).unwrap();
        }
    }
}
