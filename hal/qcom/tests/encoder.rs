//! The QCOM backend's queues: every field of every command patched through the core queue with
//! the a6xx encoder gives the words a fresh a6xx encoding of the patched commands gives.

use hcq::queue::{CmdWriter, Command, Encoder, Field, HwQueue};
use hcq::signal::SignalPool;
use hcq_adreno::{A6xxEncoder, EncoderConfig, Program};
use std::sync::Arc;

/// The words of encoding `q`'s commands, as they are now, from scratch.
fn fresh(enc: &A6xxEncoder, q: &HwQueue) -> Vec<u32> {
    let (mut words, mut marks) = (Vec::new(), Vec::new());
    for i in 0..q.len() {
        // CAST: a test queue has a handful of commands.
        enc.encode(&q.command(i).unwrap(), &mut CmdWriter::new(&mut words, &mut marks, i as u32)).unwrap();
    }
    words
}

fn program() -> Program {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../adreno/tests/data");
    Program::from_json(
        &std::fs::read(dir.join("e_32_32_4.a630.bin")).unwrap(),
        &std::fs::read(dir.join("e_32_32_4.adreno.json")).unwrap(),
    )
    .unwrap()
}

/// Every field of every command patched through the core queue gives the words a fresh
/// a6xx encoding of the patched commands gives.
#[test]
fn core_patches_of_every_field_equal_a_fresh_a6xx_encoding() {
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig { scratch: 0x10_0000, pvt_mem: 0x20_0000, pvt_mem_bytes: 1 << 16 }).unwrap(),
    );
    let h = enc.add_program(&program(), 0x30_0000).unwrap();
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    q.exec(h, 0x40_0000, [4, 2, 1], [32, 1, 1]).unwrap();
    q.memory_barrier().unwrap();
    q.timestamp(&tl).unwrap();
    q.wait_at(0x50_0000, 7).unwrap();
    q.finish().unwrap();
    let last = q.len() - 1;
    let patches: &[(usize, Field, u64)] = &[
        (0, Field::Value, 0xffff_ffff),
        (last, Field::Value, 0x1_0000_0000),
        (0, Field::Value, 0x1_8000_0001),
        (last, Field::Value, 0x2_7fff_ffff),
        (1, Field::Kernargs, 0x41_0000),
        (1, Field::Global(0), 16),
        (1, Field::Local(0), 64),
        (1, Field::Global(1), 3),
        (1, Field::Local(1), 2),
        (3, Field::Addr, 0x60_0008),
        (4, Field::Addr, 0x50_0100),
        (4, Field::Value, 0x8000_0000),
        (last, Field::Addr, 0x70_0000),
    ];
    for &(cmd, field, value) in patches {
        q.patch(cmd, field, value).unwrap();
        assert_eq!(q.words(), fresh(&enc, &q), "after patching {field:?} of command {cmd} to {value:#x}");
    }
    assert_eq!(q.command(last), Some(Command::Signal { addr: 0x70_0000, value: 0x2_7fff_ffff }));
}

/// The image matmul tinygrad dispatched (tests/data/tinygrad_image): patching its exec's
/// constant-block address moves every descriptor load and base with it (the `Kernargs`
/// `Offset(off)` marks), through the core queue, as a fresh encoding.
#[test]
fn an_image_execs_descriptor_addresses_follow_a_patched_constant_block() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tinygrad_image");
    let prog = Program::from_json(
        &std::fs::read(dir.join("r_4_8_16_4_4.a630.bin")).unwrap(),
        &std::fs::read(dir.join("r_4_8_16_4_4.adreno.json")).unwrap(),
    )
    .unwrap();
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig { scratch: 0x10_0000, pvt_mem: 0x20_0000, pvt_mem_bytes: 1 << 16 }).unwrap(),
    );
    let h = enc.add_program(&prog, 0x30_0000).unwrap();
    let pool = SignalPool::new();
    let tl = pool.alloc(0);
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    q.exec(h, 0x40_0000, [8, 1, 1], [4, 1, 1]).unwrap();
    q.finish().unwrap();
    let count = |w: &[u32], a: u64| w.windows(2).filter(|p| p[0] == a as u32 && p[1] == (a >> 32) as u32).count();
    // samplers, textures, IBOs: a load and a base each, at 0x8c0, 0x800, 0x880
    for off in [0x800, 0x880, 0x8c0] {
        assert_eq!(count(q.words(), 0x40_0000 + off), 2, "{off:#x}");
    }
    q.patch(1, Field::Kernargs, 0x1_2345_6000).unwrap();
    assert_eq!(q.words(), fresh(&enc, &q));
    for off in [0x800, 0x880, 0x8c0] {
        assert_eq!(count(q.words(), 0x40_0000 + off), 0, "{off:#x}");
        assert_eq!(count(q.words(), 0x1_2345_6000 + off), 2, "{off:#x}");
    }
    assert_eq!(
        q.command(1),
        Some(Command::Exec { program: h, kernargs: 0x1_2345_6000, global: [8, 1, 1], local: [4, 1, 1] })
    );
}
