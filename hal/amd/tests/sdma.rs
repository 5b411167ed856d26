//! The SDMA 6.0 encoder against tinygrad 0.14 itself: `tests/data/pm4/sdma.json` holds the words
//! tinygrad's own `AMDCopyQueue` emits (copies split at `max_copy_size`, fences, polls,
//! timestamps, writes, and a bound queue's `INDIRECT` packet with its NOP padding as `_submit`
//! writes it into the ring at several write pointers), from `tests/data/pm4/gen.py`. Then
//! patching and every error path.

use hcq::queue::{Command, Field, HwQueue};
use hcq_amd::pm4::Interrupt;
use hcq_amd::sdma::{self, SdmaConfig, SdmaEncoder, raw};
use hcq_testkit::ib::Ib;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

fn data() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pm4/sdma.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn hex(w: &[u32]) -> String {
    w.iter().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(" ")
}

fn encoded(enc: SdmaEncoder, cmd: Command) -> Vec<u32> {
    let mut ib = Ib::new(Arc::new(enc));
    ib.push(cmd).unwrap();
    ib.words().to_vec()
}

#[test]
fn every_command_encodes_to_the_words_tinygrad_emits() {
    let d = data();
    let mut seen = 0;
    for case in d["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let want: Vec<u32> = case["words"].as_array().unwrap().iter().map(|w| u(w) as u32).collect();
        let c = &case["cmd"];
        let got = if let Some(ib) = case.get("ib") {
            // tinygrad's _submit of a bound queue at ring write pointer `ring_put_bytes`
            let pos = (u(&ib["ring_put_bytes"]) / 4) as usize;
            let dwords = u(&ib["dwords"]) as usize;
            let mut body = vec![0u32; dwords];
            sdma::pad_ib(&mut body);
            assert_eq!(body.len() as u64, u(&case["ib_dwords"]), "{name}: padded IB");
            let mut w = vec![raw::op::NOP; sdma::ib_padding(pos)];
            w.extend(sdma::indirect(u(&ib["addr"]), body.len() as u32, 0).unwrap());
            assert_eq!((pos + w.len()) % 8, 0, "{name}: the packet ends on an 8-dword boundary");
            w
        } else if let Some(wr) = c.get("write") {
            let v = u(&wr["value"]);
            let data: Vec<u32> =
                if wr["b64"].as_bool().unwrap() { vec![v as u32, (v >> 32) as u32] } else { vec![v as u32] };
            let mut w = Vec::new();
            sdma::write(&mut w, u(&wr["addr"]), &data).unwrap();
            w
        } else {
            let cmd = if let Some(x) = c.get("copy") {
                Command::Copy { dst: u(&x["dst"]), src: u(&x["src"]), bytes: u(&x["bytes"]) }
            } else if let Some(s) = c.get("signal") {
                Command::Signal { addr: u(&s["addr"]), value: u(&s["value"]) }
            } else if let Some(s) = c.get("wait") {
                Command::Wait { addr: u(&s["addr"]), value: u(&s["value"]) }
            } else if let Some(s) = c.get("timestamp") {
                Command::Timestamp { addr: u(&s["addr"]) }
            } else {
                panic!("{name}: unknown case")
            };
            let interrupt = c.get("interrupt").map(|_| Interrupt {
                timeline: u(&c["signal"]["addr"]),
                mailbox: u(&d["mailbox"]),
                event_id: u(&d["event_id"]) as u32,
            });
            let max_copy_bytes = case.get("max_copy_size").map_or(raw::MAX_COPY_BYTES, u);
            encoded(SdmaEncoder::new(SdmaConfig { max_copy_bytes, interrupt }).unwrap(), cmd)
        };
        assert_eq!(hex(&got), hex(&want), "{name}: our words (left) vs tinygrad's (right)");
        seen += 1;
    }
    assert!(seen >= 18, "only {seen} cases in sdma.json");
}

#[test]
fn packet_constants_equal_tinygrads_sdma_6_0_0_tables() {
    let d = data();
    let c = &d["consts"];
    for &(name, v) in raw::op::ALL.iter().chain(raw::subop::ALL) {
        assert_eq!(u64::from(v), u(&c[name]), "{name}");
    }
    for &(name, b) in raw::FIELDS {
        assert_eq!([u64::from(b.mask), u64::from(b.shift)], [u(&c[name]["mask"]), u(&c[name]["shift"])], "{name}");
    }
}

fn enc(max: u64) -> Arc<SdmaEncoder> {
    Arc::new(SdmaEncoder::new(SdmaConfig { max_copy_bytes: max, interrupt: None }).unwrap())
}

fn diff(a: &[u32], b: &[u32]) -> Vec<usize> {
    assert_eq!(a.len(), b.len());
    (0..a.len()).filter(|&i| a[i] != b[i]).collect()
}

#[test]
fn a_patched_split_copy_moves_every_chunk_and_a_one_chunk_copy_resizes() {
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    let e = enc(0x1000);
    let mut q = HwQueue::new(e.clone(), &tl).unwrap();
    let split = q.push(Command::Copy { dst: 0x2_0000, src: 0x1_0000, bytes: 0x2801 }).unwrap();
    let one = q.push(Command::Copy { dst: 0x5_0000, src: 0x4_0000, bytes: 0x80 }).unwrap();
    let before = q.words().to_vec();
    q.patch(split, Field::Src, 0x9_0000).unwrap();
    // three chunks: each source low word (the high words stay 0)
    assert_eq!(diff(&before, q.words()).len(), 3);
    q.patch(split, Field::Dst, 0x1_0000_0000).unwrap();
    q.patch(one, Field::Size, 0x1000).unwrap();
    let mut fresh = HwQueue::new(e, &tl).unwrap();
    fresh.push(Command::Copy { dst: 0x1_0000_0000, src: 0x9_0000, bytes: 0x2801 }).unwrap();
    fresh.push(Command::Copy { dst: 0x5_0000, src: 0x4_0000, bytes: 0x1000 }).unwrap();
    assert_eq!(hex(q.words()), hex(fresh.words()), "patched vs freshly encoded");
    // sizes that would change the packet count are refused, changing nothing
    let now = q.words().to_vec();
    assert!(q.patch(one, Field::Size, 0x1001).is_err(), "a one-chunk copy grown to two chunks");
    assert!(q.patch(one, Field::Size, 0).is_err(), "0 bytes");
    assert!(q.patch(split, Field::Size, 0x2800).is_err(), "a split copy's size is not patchable");
    assert!(q.patch(split, Field::Src, (1 << 48) - 0x100).is_err(), "a source range beyond 48 bits");
    assert_eq!(q.words(), now);
}

#[test]
fn a_patched_fence_value_changes_exactly_its_data_word() {
    let pool = hcq::signal::SignalPool::new();
    let (tl, s) = (pool.alloc(0), pool.alloc(0));
    let mut q = HwQueue::new(enc(raw::MAX_COPY_BYTES), &tl).unwrap();
    let i = q.push(Command::Signal { addr: s.addr(), value: 1 }).unwrap();
    let before = q.words().to_vec();
    q.patch(i, Field::Value, 0x1234_5678).unwrap();
    // after the timeline poll (6 words): FENCE header, address (2), value
    assert_eq!(diff(&before, q.words()), [6 + 3]);
    assert!(q.patch(i, Field::Value, 1 << 32).is_err(), "a value beyond the fence's dword");
    q.finish().unwrap();
    let last = q.len() - 1;
    q.patch(last, Field::Value, 2).unwrap();
}

#[test]
fn exec_and_barrier_are_refused_naming_the_sdma_queue() {
    let mut ib = Ib::new(enc(raw::MAX_COPY_BYTES));
    let e = ib.push(Command::Exec { program: 0x1000, kernargs: 0, global: [1; 3], local: [1; 3] }).unwrap_err();
    assert!(e.to_string().contains("SDMA"), "{e}");
    let e = ib.push(Command::Barrier).unwrap_err();
    assert!(e.to_string().contains("SDMA"), "{e}");
    assert!(ib.words().is_empty());
}

#[test]
fn absurd_copies_values_and_packets_are_refused() {
    let mut ib = Ib::new(enc(raw::MAX_COPY_BYTES));
    for (cmd, why) in [
        (Command::Copy { dst: 0x1000, src: 0x2000, bytes: 0 }, "0 bytes"),
        (Command::Copy { dst: (1 << 48) - 8, src: 0x2000, bytes: 16 }, "a destination range beyond 48 bits"),
        (Command::Copy { dst: 0x1000, src: 0x2000, bytes: u64::MAX }, "an overflowing range"),
        (Command::Signal { addr: 0x1000, value: 1 << 32 }, "a 33-bit signal value"),
        (Command::Signal { addr: 0x1004, value: 1 }, "a misaligned signal"),
        (Command::Wait { addr: 0x1002, value: 1 }, "a misaligned wait"),
        (Command::Wait { addr: 0x1000, value: u64::MAX }, "a 64-bit wait value"),
        (Command::Timestamp { addr: 0x1004 }, "a misaligned timestamp"),
    ] {
        assert!(ib.push(cmd).is_err(), "{why} accepted");
    }
    assert!(ib.words().is_empty());
    assert!(SdmaEncoder::new(SdmaConfig { max_copy_bytes: 0, interrupt: None }).is_err());
    assert!(SdmaEncoder::new(SdmaConfig { max_copy_bytes: raw::MAX_COPY_BYTES + 1, interrupt: None }).is_err());
    let irq = Interrupt { timeline: 0x1001, mailbox: 0x2000, event_id: 1 };
    assert!(SdmaEncoder::new(SdmaConfig { max_copy_bytes: 0x1000, interrupt: Some(irq) }).is_err());
    assert!(sdma::indirect(0x1010, 8, 0).is_err(), "an IB not 32-byte aligned");
    assert!(sdma::indirect(0x1000, 12, 0).is_err(), "an IB not a multiple of 8 dwords");
    assert!(sdma::indirect(0x1000, 0, 0).is_err(), "an empty IB");
    assert!(sdma::indirect(0x1000, 1 << 20, 0).is_err(), "an IB beyond 20 bits");
    assert!(sdma::indirect(0x1000, 8, 16).is_err(), "a VMID beyond 4 bits");
    let mut w = Vec::new();
    assert!(sdma::trap(&mut w, 1 << 28).is_err(), "a trap context beyond 28 bits");
    assert!(sdma::write(&mut w, 0x1000, &[]).is_err(), "a write of nothing");
    assert!(sdma::write(&mut w, 0x1002, &[1]).is_err(), "a misaligned write");
    assert!(w.is_empty());
}

#[test]
fn a_timeline_fence_traps_with_the_event_and_stays_off_other_signals() {
    let pool = hcq::signal::SignalPool::new();
    let (tl, s) = (pool.alloc(0), pool.alloc(0));
    let irq = Interrupt { timeline: tl.addr(), mailbox: 0x5_0000_0018, event_id: 7 };
    let e = Arc::new(SdmaEncoder::new(SdmaConfig { interrupt: Some(irq), ..SdmaConfig::default() }).unwrap());
    let mut q = HwQueue::new(e, &tl).unwrap();
    let i = q.push(Command::Signal { addr: s.addr(), value: 1 }).unwrap();
    q.finish().unwrap();
    // poll (6) + fence (4) + timeline fence (4) + mailbox fence (4) + trap (2)
    assert_eq!(q.words().len(), 6 + 4 + 10);
    assert_eq!(&q.words()[18..], [raw::op::TRAP, 7]);
    assert!(q.patch(i, Field::Addr, tl.addr()).is_err(), "a signal patched onto the timeline");
}
