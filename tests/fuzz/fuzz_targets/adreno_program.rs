//! Fuzz a630 program validation: any (blob, metadata JSON) pair either becomes a `Program`
//! or a clear error, never a panic; a program it accepts can be registered with the encoder,
//! encoded for a launch inside its limits, and its constant block filled.
//!
//! Input: a u16 length split, then the blob, then the metadata JSON. Seeds: the program pairs
//! in `hal/adreno/tests/data` (blob ++ json with the split in front).
#![no_main]

use hcq::queue::{CmdWriter, Command, Encoder};
use hcq_adreno::{A6xxEncoder, EncoderConfig, Program};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let split = usize::from(u16::from_le_bytes([data[0], data[1]])).min(data.len() - 2);
    let (blob, meta) = data[2..].split_at(split);
    let Ok(p) = Program::from_json(blob, meta) else { return };
    assert_eq!(p.image.len() as u32, p.code_units * 128);
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig { scratch: 0x1000, pvt_mem: 0x2000, pvt_mem_bytes: u64::MAX }).unwrap(),
    );
    let h = enc.add_program(&p, 0x10_0000).unwrap();
    let (mut words, mut marks) = (Vec::new(), Vec::new());
    let exec = Command::Exec { program: h, kernargs: 0x20_0000, global: [2, 1, 1], local: [1, 1, 1] };
    enc.encode(&exec, &mut CmdWriter::new(&mut words, &mut marks, 0)).unwrap();
    assert!(hcq_adreno::pm4::decode(&words).is_ok());
    let mut block = vec![0u8; p.const_block_bytes as usize];
    let args = vec![0u64; p.n_args as usize];
    let vals = vec![0i32; p.n_vals as usize];
    p.fill_consts(&mut block, &args, &vals, [1, 1, 1]).unwrap();
});
