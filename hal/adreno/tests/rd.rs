//! `.rd` captures: a queue's IB and the buffers it points at are written and read back to the
//! same packets; malformed files are refused with the offset of the bad section.

mod common;

use common::*;
use hcq::queue::Command;
use hcq_adreno::pm4::decode;
use hcq_adreno::rd::{RdWriter, raw::sect, read, sections};

#[test]
fn a_capture_reads_back_to_the_same_packets() {
    let prog = elementwise();
    let enc = encoder();
    let h = enc.add_program(&prog, CODE).unwrap();
    // The timeline wait (command 0) on SIGNALS, patched to 9 as a submitter would.
    let mut q = hcq::queue::HwQueue::new(enc, &timeline_at(SIGNALS)).unwrap();
    q.patch(0, hcq::queue::Field::Value, 9).unwrap();
    q.push(Command::Exec { program: h, kernargs: CONSTS, global: [32, 1, 1], local: [32, 1, 1] }).unwrap();
    q.push(Command::Signal { addr: SIGNALS, value: 10 }).unwrap();
    let ib = words_to_bytes(q.words());
    let consts = vec![7u8; prog.const_block_bytes as usize];
    let mut w = RdWriter::new("hcq-test", 630, 0x0603_0001);
    for _ in 0..2 {
        w.submit([(IB, &ib[..]), (CODE, &prog.image[..]), (CONSTS, &consts[..])], IB, q.words().len() as u32).unwrap();
    }
    let cap = read(w.bytes()).unwrap();
    assert_eq!((cap.cmd.as_str(), cap.gpu_id, cap.chip_id), ("hcq-test", Some(630), Some(0x0603_0001)));
    assert_eq!(cap.submits.len(), 2);
    for s in &cap.submits {
        assert_eq!(s.buffers.len(), 3, "buffers are written again for every submission");
        let words = s.ib_words().unwrap();
        assert_eq!(decode(&words).unwrap(), decode(q.words()).unwrap());
        assert_eq!(s.buffers[1], (CODE, prog.image.clone()));
    }
}

#[test]
fn malformed_captures_name_the_bad_offset() {
    let mut w = RdWriter::new("x", 630, 0x0603_0001);
    w.submit([(IB, &[0u8; 8][..])], IB, 2).unwrap();
    let good = w.into_bytes();
    assert!(read(&good).is_ok());
    // Truncated inside the last section.
    let e = read(&good[..good.len() - 3]).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
    // An unknown section type at the first header.
    let mut bad = good.clone();
    bad[0] = 0x77;
    assert!(matches!(read(&bad).unwrap_err(), hcq::Error::Malformed { at: 0, .. }));
    // Buffer contents without an address.
    let secs = sections(&good).unwrap();
    let contents = secs.iter().find(|s| s.ty == sect::BUFFER_CONTENTS).unwrap();
    let mut bad = good.clone();
    let gpuaddr = secs.iter().find(|s| s.ty == sect::GPUADDR).unwrap().offset;
    bad[gpuaddr] = sect::TEST as u8;
    let e = read(&bad).unwrap_err();
    assert!(matches!(e, hcq::Error::Malformed { at, .. } if at == contents.offset as u64), "{e}");
    // Padding pairs are skipped.
    let mut padded = vec![0xff; 8];
    padded.extend_from_slice(&good);
    assert_eq!(read(&padded).unwrap(), read(&good).unwrap());
    // An IB that is in no buffer.
    let mut w = RdWriter::new("x", 630, 1);
    w.submit([], IB, 2).unwrap();
    assert!(read(w.bytes()).unwrap().submits[0].ib_words().is_err());
}
