//! No program and no memory contents make the interpreter panic: short programs of random
//! instructions — every opcode of every table, all its other bits random, a random literal
//! after it — are loaded in wave32 and wave64 and, when the load accepts them, run over random
//! SGPRs, VGPRs, LDS and a small memory to their end, a fault or the step budget. (The fuzz
//! target `rdna3_exec` does the same from arbitrary bytes; this reaches every opcode on every
//! test run.)

mod common;

use common::*;
use hcq_rdna3::decode::decode;
use hcq_rdna3::exec::Program;
use hcq_rdna3::tables::{self, Op};

/// One instruction of a random opcode of a random table: (its dwords with a literal after).
fn inst(r: &mut Rng) -> [u32; 3] {
    let pick = |r: &mut Rng, t: &'static [Op]| u32::from(t[r.below(t.len() as u64) as usize].op);
    let bits = |r: &mut Rng, n: u32| (r.next() as u32) & ((1u32 << n) - 1);
    let (w1, lit) = (r.next() as u32, r.next() as u32);
    let w0 = match r.below(15) {
        0 => 0b10 << 30 | pick(r, tables::SOP2) << 23 | bits(r, 23),
        1 => 0b1011 << 28 | pick(r, tables::SOPK) << 23 | bits(r, 23),
        2 => 0x17d << 23 | bits(r, 7) << 16 | pick(r, tables::SOP1) << 8 | bits(r, 8),
        3 => 0x17e << 23 | pick(r, tables::SOPC) << 16 | bits(r, 16),
        4 => 0x17f << 23 | pick(r, tables::SOPP) << 16 | bits(r, 16),
        5 => 0x3d << 26 | pick(r, tables::SMEM) << 18 | bits(r, 18),
        6 => 0x3f << 25 | bits(r, 8) << 17 | pick(r, tables::VOP1) << 9 | bits(r, 9),
        7 => pick(r, tables::VOP2) << 25 | bits(r, 25),
        8 => 0x3e << 25 | pick(r, tables::VOPC) << 17 | bits(r, 17),
        9 | 10 => 0x35 << 26 | pick(r, tables::VOP3) << 16 | bits(r, 16),
        11 => 0xcc << 24 | pick(r, tables::VOP3P) << 16 | bits(r, 16),
        12 => 0x36 << 26 | pick(r, tables::DS) << 18 | bits(r, 18),
        13 => 0x37 << 26 | pick(r, tables::GLOBAL) << 18 | 2 << 16 | bits(r, 16),
        _ => {
            let (t, seg) = if r.below(2) == 0 { (tables::FLAT, 0) } else { (tables::SCRATCH, 1) };
            0x37 << 26 | pick(r, t) << 18 | seg << 16 | bits(r, 16)
        }
    };
    [w0, w1, lit]
}

#[test]
fn random_programs_of_every_opcode_load_or_are_refused_and_run_without_panicking() {
    let mut r = Rng(0x5eed_5a0e);
    let (mut loaded, mut ran) = (0usize, 0usize);
    for _ in 0..400_000 {
        let mut code = Vec::new();
        for _ in 0..1 + r.below(6) {
            let words = inst(&mut r);
            let tail = [words[0], words[1], words[2], 0xbfb0_0000];
            let Ok(i) = decode(&tail, 0) else { continue };
            code.extend_from_slice(&words[..i.len]);
        }
        code.push(0xbfb0_0000);
        let wave64 = r.below(2) == 1;
        let Ok(p) = Program::load(&code, 0, wave64) else { continue };
        loaded += 1;
        // Random user SGPRs (addresses sometimes inside the memory), memory, a budget.
        let user: Vec<u32> =
            (0..16).map(|_| if r.below(2) == 0 { 0x1000 + 4 * r.below(64) as u32 } else { r.next() as u32 }).collect();
        let mut d = dispatch(if wave64 { 64 } else { 32 } * (1 + r.below(2) as u32), wave64, &user);
        d.private_bytes = 64;
        d.max_steps = 64;
        let mut mem = Buf(0x1000, (0..512).map(|_| r.next() as u8).collect());
        let _ = p.run(&d, [1, 1, 1], &mut mem);
        ran += 1;
    }
    assert!(loaded > 100_000 && ran == loaded, "{loaded} programs loaded, {ran} ran");
}
