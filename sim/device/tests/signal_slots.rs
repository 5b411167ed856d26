//! Host signal slots come back: `SimProgram::call_raw` used to take two slots of the
//! process-wide pool per call and give them back only from a call that waited, so every
//! `wait = false` call and every error return leaked two. (One test in its own process: the
//! pool is process-wide.)

use hcq::buffer::Buffer;
use hcq::device::Device;
use hcq::dtype::DType;
use hcq::program::{Param, ParamKind, ProgramImage};
use hcq::soft::HOST_SIGNALS;
use hcq_sim::SimHandle;
use std::sync::Arc;

#[test]
fn calls_that_do_not_wait_and_calls_that_fail_give_their_signal_slots_back() {
    let h = Arc::new(SimHandle::open("SIM").unwrap());
    let dev: Arc<dyn Device> = h.clone();
    h.register_named("nop", 8, |_, _, _| Ok(())).unwrap();
    let image = ProgramImage {
        name: "nop".into(),
        target: "SIM".into(),
        binary: Arc::from(&[][..]),
        entry: "nop".into(),
        signature: vec![Param { name: None, slot: 0, dtype: DType::U8, shape: vec![64], kind: ParamKind::Buffer }],
    };
    let prog = h.load_program(&image).unwrap();
    let buf = Buffer::new(dev.clone(), 64, DType::U8, Default::default()).unwrap();
    let pages = HOST_SIGNALS.pages();
    // 2 000 calls: 4 000 slots (16 pages) if each leaked its two
    for i in 0..2_000 {
        prog.call(&[&buf], &[], [1; 3], [1; 3], i % 2 == 0).unwrap();
    }
    dev.synchronize().unwrap();
    assert!(HOST_SIGNALS.pages() <= pages + 1, "{} pages of signal slots after 2 000 calls", HOST_SIGNALS.pages());
    // calls that fail: the first faults the device (its host function fails), the rest are
    // refused at submission, after the call took its slots
    h.register_named("boom", 8, |_, _, _| Err(hcq::Error::Unsupported { what: "test kernel fails", value: 0 }))
        .unwrap();
    let boom = h.load_program(&ProgramImage { name: "boom".into(), entry: "boom".into(), ..image }).unwrap();
    for _ in 0..1_000 {
        assert!(boom.call(&[&buf], &[], [1; 3], [1; 3], true).is_err());
    }
    assert!(
        HOST_SIGNALS.pages() <= pages + 1,
        "{} pages of signal slots after 1 000 failed calls",
        HOST_SIGNALS.pages()
    );
}
