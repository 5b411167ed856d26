//! Host cost per dispatch on the simulated KGSL: a 1000-dispatch IB (the elementwise a630
//! program, a dispatch callback that does nothing) submitted through `Kgsl::submit` and awaited.
//! This is the PM4 interpretation and state checking around each dispatch, without the shader.

use divan::Bencher;
use hcq::mmio::{MmioBus, Width};
use hcq::queue::Command;
use hcq_adreno::{A6xxEncoder, EncoderConfig, Program};
use hcq_qcom::flags::{ContextFlags, MemFlags};
use hcq_qcom::kgsl::Kgsl;
use hcq_sim_adreno::cp::NoShader;
use hcq_sim_adreno::kgsl::SimKgsl;
use std::sync::Arc;

fn main() {
    divan::main();
}

#[divan::bench]
fn sim_submit_1000_dispatches(b: Bencher) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hal/adreno/tests/data");
    let prog = Program::from_json(
        &std::fs::read(dir.join("e_32_32_4.a630.bin")).unwrap(),
        &std::fs::read(dir.join("e_32_32_4.adreno.json")).unwrap(),
    )
    .unwrap();
    let k = Kgsl::with_backend(Arc::new(SimKgsl::new(Box::new(NoShader)))).unwrap();
    let ctx = k.create_context(ContextFlags::compute()).unwrap();
    let f = MemFlags::USE_CPU_MAP;
    let code = k.alloc(prog.image.len() as u64, f).unwrap();
    code.bus().write_bytes(0, &prog.image).unwrap();
    let consts = k.alloc(prog.const_block_bytes.into(), f).unwrap();
    let pvt = k.alloc(prog.stack_bytes, f).unwrap();
    let scratch = k.alloc(4096, f).unwrap();
    let enc = Arc::new(
        A6xxEncoder::new(EncoderConfig {
            scratch: scratch.gpuaddr(),
            pvt_mem: pvt.gpuaddr(),
            pvt_mem_bytes: pvt.size(),
        })
        .unwrap(),
    );
    let h = enc.add_program(&prog, code.gpuaddr()).unwrap();
    // the IB: 1000 dispatches encoded by the encoder's core `Encoder` impl
    let (mut words, mut marks) = (Vec::new(), Vec::new());
    for i in 0..1000 {
        let exec = Command::Exec { program: h, kernargs: consts.gpuaddr(), global: [32, 1, 1], local: [32, 1, 1] };
        hcq::queue::Encoder::encode(&*enc, &exec, &mut hcq::queue::CmdWriter::new(&mut words, &mut marks, i)).unwrap();
    }
    let ib = k.alloc(4 * words.len() as u64, f).unwrap();
    for (i, w) in words.iter().enumerate() {
        ib.bus().write(4 * i, Width::U32, (*w).into()).unwrap();
    }
    let bytes = 4 * words.len() as u64;
    b.bench_local(|| {
        // SAFETY: the IB's dispatches name this bench's live objects (code, constants, private memory, scratch), all alive past the wait.
        let ts = unsafe { k.submit(&ctx, ib.gpuaddr(), bytes) }.unwrap();
        k.wait(&ctx, ts, 10_000).unwrap();
    });
}
