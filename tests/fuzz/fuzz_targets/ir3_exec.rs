//! Fuzz the ir3 interpreter: arbitrary instruction streams (undecodable words replaced by
//! `nop`, so that most of the input executes) run over a small dispatch with a bounded number
//! of steps. The interpreter must return a result or a clear error (fault, step limit,
//! unsupported, control flow out of the program...), never panic or touch memory outside its
//! allocations.
//!
//! Input layout: byte 0 = local size x (1..=128), byte 1 = grid x (1..=4), bytes 2..66 = the
//! first 16 const words, the rest = instruction words.
#![no_main]

use std::hint::black_box;

use hcq_ir3::exec::{Buffers, Dispatch, Interp, Meta, Shader};
use hcq_ir3::isa::{Body, Cat0, Cat0Op, Flags, Instr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 74 {
        return;
    }
    let local = (data[0] % 128) as u32 + 1;
    let grid = (data[1] % 4) as u32 + 1;
    let mut consts = vec![0u8; 4096];
    consts[..64].copy_from_slice(&data[2..66]);
    // c0.x/c0.y: the address of the fuzz buffer, so that ldg/stg often hit it.
    consts[..8].copy_from_slice(&0x1_0000_0000u64.to_le_bytes());
    let nop = Instr {
        word: 0,
        flags: Flags::default(),
        body: Body::Cat0(Cat0 { op: Cat0Op::Nop, immed: 0, inv1: false, comp1: 0, inv2: false, comp2: 0, index: 0 }),
    };
    let instrs: Vec<Instr> = data[66..]
        .chunks_exact(8)
        .map(|c| hcq_ir3::decode(u64::from_le_bytes(c.try_into().unwrap())).unwrap_or(nop))
        .collect();
    let meta = Meta {
        fregs: 48,
        hregs: 48,
        wgid: 192,
        lid: 0,
        shmem: 256,
        pvtmem: 64,
        merged_regs: data[0] & 0x80 != 0,
        const_demotion: data[1] & 0x80 != 0,
    };
    let prog = Shader { instrs, meta };
    let mut mem = Buffers { bufs: vec![(0x1_0000_0000, vec![0; 4096])] };
    let mut it = Interp::new();
    it.max_steps = 20_000;
    let r = it.run(&prog, &Dispatch { consts: &consts, grid: [grid, 1, 1], local: [local, 1, 1] }, &mut mem);
    if let Err(e) = r {
        black_box(e.to_string());
    }
});
