//! Fuzz the `.rd` capture reader: any bytes give a capture or an error naming an offset inside
//! the file; a capture it accepts can be written back and read to the same submissions.
#![no_main]

use hcq_adreno::rd::{RdWriter, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match read(data) {
        Ok(cap) => {
            let mut w = RdWriter::new(&cap.cmd, cap.gpu_id.unwrap_or(0), cap.chip_id.unwrap_or(0));
            for s in &cap.submits {
                w.submit(s.buffers.iter().map(|(a, b)| (*a, &b[..])), s.ib, s.dwords).unwrap();
                let _ = s.ib_words();
            }
            let again = read(w.bytes()).unwrap();
            assert_eq!(again.submits, cap.submits);
        }
        Err(hcq::Error::Malformed { at, .. }) => assert!((at as usize) < data.len()),
        Err(e) => panic!("unexpected rd error {e:?}"),
    }
});
