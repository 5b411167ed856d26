//! The PM4 compute encoder against tinygrad 0.14 itself: `tests/data/pm4/pm4.json` holds the
//! words tinygrad's own `AMDComputeQueue` emits for each command on a stand-in gfx1100
//! (`tests/data/pm4/gen.py`), and the registers and packet constants of its tables. Then patching
//! (words change exactly where the field lives) and every error path.

use hcq::queue::{Command, Encoder, Field, HwQueue};
use hcq_amd::codeobj::{CodeObject, Descriptor};
use hcq_amd::pm4::{self, Interrupt, Pm4Config, Pm4Encoder, Scratch, ScratchDevice, raw};
use hcq_amd::regs;
use hcq_testkit::ib::Ib;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

fn data() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pm4/pm4.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|w| u32::try_from(u(w)).unwrap()).collect()
}

fn grid(v: &Value) -> [u32; 3] {
    u32s(v).try_into().unwrap()
}

fn props(d: &Value) -> ScratchDevice {
    let p = &d["device"]["props"];
    let g = |k: &str| u32::try_from(u(&p[k])).unwrap();
    ScratchDevice {
        cu_count: g("simd_count") / g("simd_per_cu"),
        se_count: g("array_count") / g("simd_arrays_per_engine"),
        max_slots_scratch_cu: g("max_slots_scratch_cu"),
    }
}

fn encoder(d: &Value, private: u32, interrupt: Option<Interrupt>) -> Pm4Encoder {
    let scratch = Scratch::for_device(u(&d["device"]["scratch_va"]), private, props(d)).unwrap();
    Pm4Encoder::new(Pm4Config { scratch, waves_per_sh: 0, interrupt }).unwrap()
}

fn words(enc: Pm4Encoder, cmd: Command) -> Vec<u32> {
    let mut ib = Ib::new(Arc::new(enc));
    ib.push(cmd).unwrap();
    ib.words().to_vec()
}

fn hex(w: &[u32]) -> String {
    w.iter().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(" ")
}

/// The descriptor of the first kernel of `tests/data/kernels/<co>`, with gen.py's patch applied
/// the way its bytes were patched (properties, private bytes, rsrc2), and the object.
fn kernel(co: &str, patch: &Value) -> (CodeObject, Descriptor, usize) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernels").join(co);
    let obj = CodeObject::parse(&std::fs::read(p).unwrap()).unwrap();
    let k = &obj.kernels[0];
    let mut kd = k.kd;
    if let Some(pt) = patch.as_object() {
        if let Some(p) = pt.get("properties") {
            kd.properties = u16::try_from(u(p)).unwrap();
            kd.wave32 = kd.properties & 1 << 10 != 0;
            kd.dispatch_ptr = kd.properties & 1 << 1 != 0;
            kd.kernarg_ptr = kd.properties & 1 << 3 != 0;
        }
        if let Some(p) = pt.get("private_bytes") {
            kd.private_bytes = u32::try_from(u(p)).unwrap();
        }
        if let Some(r) = pt.get("rsrc2") {
            kd.rsrc2 = u32::try_from(u(r)).unwrap();
            kd.user_sgprs = (kd.rsrc2 >> 1) & 0x1f;
            kd.private_segment = kd.rsrc2 & 1 != 0;
        }
    }
    let entry = k.entry;
    (obj, kd, entry)
}

fn command(c: &Value) -> Command {
    let c = &c["cmd"];
    if let Some(w) = c.get("wait") {
        Command::Wait { addr: u(&w["addr"]), value: u(&w["value"]) }
    } else if let Some(s) = c.get("signal") {
        Command::Signal { addr: u(&s["addr"]), value: u(&s["value"]) }
    } else if let Some(t) = c.get("timestamp") {
        Command::Timestamp { addr: u(&t["addr"]) }
    } else if c.get("barrier").is_some() {
        Command::Barrier
    } else if let Some(e) = c.get("exec") {
        Command::Exec {
            program: u(&e["program"]),
            kernargs: u(&e["kernargs"]),
            global: grid(&e["global"]),
            local: grid(&e["local"]),
        }
    } else {
        panic!("unknown case {c}")
    }
}

#[test]
fn every_command_encodes_to_the_words_tinygrad_emits() {
    let d = data();
    let mut seen = 0;
    for case in d["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let want = u32s(&case["words"]);
        let got = if let Some(ib) = case.get("ib") {
            pm4::indirect_buffer(u(&ib["addr"]), u32::try_from(u(&ib["dwords"])).unwrap()).unwrap().to_vec()
        } else {
            let cmd = command(case);
            let interrupt = case["cmd"].get("interrupt").map(|_| Interrupt {
                timeline: u(&case["cmd"]["signal"]["addr"]),
                mailbox: u(&d["mailbox"]),
                event_id: u32::try_from(u(&d["event_id"])).unwrap(),
            });
            let private = case.get("max_private_segment_size").map_or(128, |v| u32::try_from(u(v)).unwrap());
            let enc = encoder(&d, private, interrupt);
            if let Command::Exec { program, .. } = cmd {
                // tinygrad's scratch for this program is ours
                assert_eq!(
                    enc.config().scratch.tmpring_size,
                    u32::try_from(u(&case["tmpring_size"])).unwrap(),
                    "{name}"
                );
                assert_eq!(enc.config().scratch.bytes, u(&case["scratch_bytes"]), "{name}");
                let (_, kd, entry) = kernel(case["co"].as_str().unwrap(), &case["patch"]);
                // our loader lays the kernel out where tinygrad's does
                assert_eq!(u(&case["code_va"]) + entry as u64, program, "{name}: entry address");
                assert_eq!(enc.add_program(program, &kd).unwrap(), program);
                let p = enc.program(program).unwrap();
                assert_eq!(
                    [p.rsrc1, p.rsrc2, p.rsrc3].map(u64::from),
                    [u(&case["rsrc1"]), u(&case["rsrc2"]), u(&case["rsrc3"])],
                    "{name}: rsrc1/2/3"
                );
            }
            words(enc, cmd)
        };
        assert_eq!(hex(&got), hex(&want), "{name}: our words (left) vs tinygrad's (right)");
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} cases in pm4.json");
}

#[test]
fn scratch_is_laid_out_as_tinygrad_lays_it_out() {
    let d = data();
    let s = Scratch::for_device(u(&d["device"]["scratch_va"]), 128, props(&d)).unwrap();
    assert_eq!(u64::from(s.tmpring_size), u(&d["device"]["tmpring_size"]));
    assert_eq!(s.bytes, u(&d["device"]["scratch_bytes"]));
    assert_eq!(regs::COMPUTE_TMPRING_SIZE(s.tmpring_size).waves(), 512);
    assert_eq!(regs::COMPUTE_TMPRING_SIZE(s.tmpring_size).wavesize(), 32);
}

#[test]
fn registers_and_fields_equal_tinygrads_gc_11_0_0_tables() {
    let d = data();
    let tables = d["regs"].as_object().unwrap();
    assert_eq!(regs::ALL.len(), tables.len(), "one declaration per register gen.py exports");
    for r in regs::ALL {
        let t = tables.get(r.name).unwrap_or_else(|| panic!("{} not in tinygrad's table", r.name));
        assert_eq!(u64::from(r.reg), u(&t["addr"]), "{} address", r.name);
        let fields = t["fields"].as_object().unwrap();
        assert_eq!(r.fields.len(), fields.len(), "{} field count", r.name);
        for f in r.fields {
            let name = f.name.trim_end_matches('_');
            let lohi = u32s(&fields[name]);
            assert_eq!([f.lo, f.hi], [lohi[0], lohi[1]], "{}.{}", r.name, f.name);
        }
    }
    assert_eq!(u64::from(regs::nbio::GPU_HDP_FLUSH_REQ), u(&d["nbio"]["BIF_BX_PF0_GPU_HDP_FLUSH_REQ"]));
    assert_eq!(u64::from(regs::nbio::GPU_HDP_FLUSH_DONE), u(&d["nbio"]["BIF_BX_PF0_GPU_HDP_FLUSH_DONE"]));
}

#[test]
fn packet_constants_equal_tinygrads_pm4_nv_tables() {
    let d = data();
    let c = &d["consts"];
    let k = |n: &str| u32::try_from(u(&c[n])).unwrap_or_else(|_| panic!("{n}"));
    for &(name, v) in raw::op::ALL {
        assert_eq!(v, k(name), "{name}");
    }
    for &(name, v) in raw::gcr::ALL {
        assert_eq!(v, k(&format!("PACKET3_ACQUIRE_MEM_GCR_CNTL_{name}")), "GCR_CNTL {name}");
    }
    for &(name, v) in raw::release_mem::GCR_ALL {
        assert_eq!(v, k(&format!("PACKET3_RELEASE_MEM_GCR_{name}")), "RELEASE_MEM GCR {name}");
    }
    use raw::release_mem as rm;
    assert_eq!(regs::SH_REG_START, k("PACKET3_SET_SH_REG_START"));
    assert_eq!(regs::SH_REG_END, k("PACKET3_SET_SH_REG_END"));
    assert_eq!(regs::UCONFIG_REG_START, k("PACKET3_SET_UCONFIG_REG_START"));
    assert_eq!(raw::indirect_buffer::VALID, k("INDIRECT_BUFFER_VALID"));
    assert_eq!(raw::event::CACHE_FLUSH_AND_INV_TS_EVENT, k("CACHE_FLUSH_AND_INV_TS_EVENT"));
    assert_eq!(raw::event::CS_PARTIAL_FLUSH, k("CS_PARTIAL_FLUSH"));
    assert_eq!(raw::event_write::INDEX_CS_PARTIAL_FLUSH, k("EVENT_INDEX_PARTIAL_FLUSH"));
    assert_eq!(raw::wait_reg_mem::FUNCTION_GEQ, k("WAIT_REG_MEM_FUNCTION_GEQ"));
    assert_eq!(raw::wait_reg_mem::FUNCTION_EQ, k("WAIT_REG_MEM_FUNCTION_EQ"));
    assert_eq!(rm::EVENT_INDEX_END_OF_PIPE, k("event_index__mec_release_mem__end_of_pipe"));
    assert_eq!(rm::DATA_32_LOW, k("data_sel__mec_release_mem__send_32_bit_low"));
    assert_eq!(rm::DATA_64, k("data_sel__mec_release_mem__send_64_bit_data"));
    assert_eq!(rm::DATA_GPU_CLOCK, k("data_sel__mec_release_mem__send_gpu_clock_counter"));
    assert_eq!(rm::INT_NONE, k("int_sel__mec_release_mem__none"));
    assert_eq!(rm::INT_AFTER_WRITE_CONFIRM, k("int_sel__mec_release_mem__send_interrupt_after_write_confirm"));
    let shifted = |s: u32| 1u32 << s;
    use raw::wait_reg_mem as wrm;
    assert_eq!(shifted(wrm::FUNCTION_SHIFT), k("WAIT_REG_MEM_FUNCTION(1)"));
    assert_eq!(shifted(wrm::MEM_SPACE_SHIFT), k("WAIT_REG_MEM_MEM_SPACE(1)"));
    assert_eq!(shifted(wrm::OPERATION_SHIFT), k("WAIT_REG_MEM_OPERATION(1)"));
    assert_eq!(shifted(wrm::ENGINE_SHIFT), k("WAIT_REG_MEM_ENGINE(1)"));
    assert_eq!(shifted(rm::EVENT_TYPE_SHIFT), k("PACKET3_RELEASE_MEM_EVENT_TYPE(1)"));
    assert_eq!(shifted(rm::EVENT_INDEX_SHIFT), k("PACKET3_RELEASE_MEM_EVENT_INDEX(1)"));
    assert_eq!(shifted(rm::DATA_SEL_SHIFT), k("PACKET3_RELEASE_MEM_DATA_SEL(1)"));
    assert_eq!(shifted(rm::INT_SEL_SHIFT), k("PACKET3_RELEASE_MEM_INT_SEL(1)"));
    assert_eq!(shifted(rm::DST_SEL_SHIFT), k("PACKET3_RELEASE_MEM_DST_SEL(1)"));
}

// ---- patch and replay ----

const CODE: u64 = 0x1_0000_0000;
const ARGS: u64 = 0x10_0000_0000;

fn compute(private: u32, interrupt: Option<Interrupt>) -> Arc<Pm4Encoder> {
    Arc::new(encoder(&data(), private, interrupt))
}

/// The indices of the words that differ.
fn diff(a: &[u32], b: &[u32]) -> Vec<usize> {
    assert_eq!(a.len(), b.len(), "a patch changes no word count");
    (0..a.len()).filter(|&i| a[i] != b[i]).collect()
}

/// Encode `cmd` afresh in its own queue (timeline wait first): what a patch must produce.
fn fresh(enc: Arc<Pm4Encoder>, tl: &hcq::Signal, cmd: Command) -> Vec<u32> {
    let mut q = HwQueue::new(enc, tl).unwrap();
    q.push(cmd).unwrap();
    q.words().to_vec()
}

#[test]
fn a_patched_signal_value_changes_exactly_the_release_data_word() {
    let pool = hcq::signal::SignalPool::new();
    let (tl, s) = (pool.alloc(0), pool.alloc(0));
    let enc = compute(128, None);
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    let i = q.push(Command::Signal { addr: s.addr(), value: 5 }).unwrap();
    let before = q.words().to_vec();
    q.patch(i, Field::Value, 0xdead_beef).unwrap();
    let changed = diff(&before, q.words());
    // the timeline wait takes 7 words; RELEASE_MEM's data low word is its 6th
    assert_eq!(changed, [7 + 5]);
    assert_eq!(q.words()[7 + 5], 0xdead_beef);
    assert_eq!(q.words(), fresh(enc, &tl, Command::Signal { addr: s.addr(), value: 0xdead_beef }));
    // beyond 32 bits: refused, nothing changes
    let now = q.words().to_vec();
    assert!(q.patch(i, Field::Value, 1 << 32).is_err());
    assert_eq!(q.words(), now);
}

#[test]
fn a_patched_wait_value_and_address_change_exactly_their_words() {
    let pool = hcq::signal::SignalPool::new();
    let (tl, s) = (pool.alloc(0), pool.alloc(0));
    let enc = compute(128, None);
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    let i = q.push(Command::Wait { addr: s.addr(), value: 1 }).unwrap();
    let before = q.words().to_vec();
    q.patch(i, Field::Value, 77).unwrap();
    assert_eq!(diff(&before, q.words()), [7 + 4]);
    let t = pool.alloc(0);
    q.patch(i, Field::Addr, t.addr()).unwrap();
    assert_eq!(q.words(), fresh(enc, &tl, Command::Wait { addr: t.addr(), value: 77 }));
    assert!(q.patch(i, Field::Addr, t.addr() + 2).is_err(), "a misaligned wait address");
}

/// add_f32's kernel registered at CODE (+ its entry), and its handle.
fn add_f32(enc: &Pm4Encoder) -> u64 {
    let (_, kd, entry) = kernel("add_f32.co", &Value::Null);
    enc.add_program(CODE + entry as u64, &kd).unwrap()
}

#[test]
fn a_patched_exec_changes_exactly_the_kernarg_and_grid_words() {
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    let enc = compute(128, None);
    let h = add_f32(&enc);
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    let i = q.push(Command::Exec { program: h, kernargs: ARGS, global: [253, 1, 1], local: [1, 1, 1] }).unwrap();
    let before = q.words().to_vec();
    let w = |q: &HwQueue| q.words().to_vec();
    // kernargs: the two USER_DATA words of the kernarg pointer
    q.patch(i, Field::Kernargs, ARGS + 0x1_0000_0100).unwrap();
    let k = diff(&before, &w(&q));
    assert_eq!(k.len(), 2, "kernarg pointer words: {k:?}");
    assert_eq!([q.words()[k[0]], q.words()[k[1]]], [0x100, 0x11]);
    // global size: DISPATCH_DIRECT's x
    let mid = w(&q);
    q.patch(i, Field::Global(0), 7).unwrap();
    let g = diff(&mid, &w(&q));
    assert_eq!(g.len(), 1);
    assert_eq!(q.words()[g[0]], 7);
    assert_eq!(q.words()[g[0] - 1] >> 8 & 0xff, raw::op::DISPATCH_DIRECT, "the word after DISPATCH_DIRECT's header");
    // local size: COMPUTE_NUM_THREAD_Y
    let mid = w(&q);
    q.patch(i, Field::Local(1), 4).unwrap();
    assert_eq!(diff(&mid, &w(&q)).len(), 1);
    let want = fresh(
        enc,
        &tl,
        Command::Exec { program: h, kernargs: ARGS + 0x1_0000_0100, global: [7, 1, 1], local: [1, 4, 1] },
    );
    assert_eq!(hex(q.words()), hex(&want), "patched vs freshly encoded");
    // refused patches change nothing
    let now = w(&q);
    assert!(q.patch(i, Field::Global(2), 0).is_err(), "0 groups");
    assert!(q.patch(i, Field::Local(0), 2048).is_err(), "2048 work-items");
    assert!(q.patch(i, Field::Kernargs, ARGS + 8).is_err(), "kernargs not 16-aligned");
    assert!(q.patch(i, Field::Kernargs, 1 << 48).is_err(), "kernargs beyond 48 bits");
    assert!(q.patch(i, Field::Program, CODE).is_err(), "the program is not patchable");
    assert_eq!(q.words(), now);
}

#[test]
fn a_dispatch_pointer_follows_the_patched_kernargs() {
    let pool = hcq::signal::SignalPool::new();
    let tl = pool.alloc(0);
    let enc = compute(512, None);
    let (_, mut kd, entry) = kernel("add_f32.co", &Value::Null);
    kd.properties |= 1 << 1 | 1;
    kd.dispatch_ptr = true;
    kd.rsrc2 = (kd.rsrc2 & !(0x1f << 1)) | 8 << 1 | 1;
    kd.user_sgprs = 8;
    let h = enc.add_program(CODE + entry as u64, &kd).unwrap();
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    let cmd = Command::Exec { program: h, kernargs: ARGS, global: [1, 1, 1], local: [1, 1, 1] };
    let i = q.push(cmd).unwrap();
    let before = q.words().to_vec();
    q.patch(i, Field::Kernargs, ARGS + 0x40).unwrap();
    // the dispatch packet pointer (kernargs + kernarg_bytes) and the kernarg pointer: low words
    let d = diff(&before, q.words());
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(q.words()[d[0]], (ARGS + 0x40 + u64::from(kd.kernarg_bytes)) as u32);
    assert_eq!(q.words()[d[1]], (ARGS + 0x40) as u32);
    let want = fresh(enc, &tl, Command::Exec { program: h, kernargs: ARGS + 0x40, global: [1; 3], local: [1; 3] });
    assert_eq!(q.words(), want);
}

#[test]
fn a_timeline_signal_interrupts_and_cannot_be_patched_onto_the_timeline() {
    let pool = hcq::signal::SignalPool::new();
    let (tl, s) = (pool.alloc(0), pool.alloc(0));
    let irq = Interrupt { timeline: tl.addr(), mailbox: 0x5_0000_0018, event_id: 7 };
    let enc = compute(128, Some(irq));
    let mut q = HwQueue::new(enc.clone(), &tl).unwrap();
    let i = q.push(Command::Signal { addr: s.addr(), value: 1 }).unwrap();
    q.finish().unwrap();
    // wait (7) + plain signal (8) + timeline signal (8 + 8 interrupting)
    assert_eq!(q.words().len(), 7 + 8 + 16);
    assert_eq!(q.words()[7 + 8 + 8 + 2], 0x2200_0000, "DATA_SEL 32-bit low | INT_SEL after write confirm");
    assert!(q.patch(i, Field::Addr, tl.addr()).is_err());
    let last = q.len() - 1;
    q.patch(last, Field::Value, 3).unwrap();
}

// ---- errors ----

#[test]
fn copy_is_refused_naming_the_compute_queue() {
    let enc = compute(128, None);
    let mut ib = Ib::new(enc);
    let e = ib.push(Command::Copy { dst: 0x1000, src: 0x2000, bytes: 64 }).unwrap_err();
    assert!(e.to_string().contains("compute queue"), "{e}");
    assert!(ib.words().is_empty());
}

#[test]
fn an_unregistered_program_is_refused_by_its_address() {
    let enc = compute(128, None);
    let h = add_f32(&enc);
    let mut ib = Ib::new(enc.clone());
    let e = ib.push(Command::Exec { program: h + 0x100, kernargs: ARGS, global: [1; 3], local: [1; 3] }).unwrap_err();
    assert!(matches!(e, hcq::Error::InvalidArgument { value, .. } if value == h + 0x100), "{e}");
    assert!(enc.remove_program(h));
    assert!(ib.push(Command::Exec { program: h, kernargs: ARGS, global: [1; 3], local: [1; 3] }).is_err());
    assert!(!enc.remove_program(h));
}

#[test]
fn absurd_grids_addresses_and_values_are_refused() {
    let enc = compute(128, None);
    let h = add_f32(&enc);
    let mut ib = Ib::new(enc.clone());
    let exec = |global: [u32; 3], local: [u32; 3], kernargs: u64| Command::Exec { program: h, kernargs, global, local };
    for (cmd, why) in [
        (exec([0, 1, 1], [1; 3], ARGS), "0 groups"),
        (exec([1; 3], [0, 1, 1], ARGS), "a 0 local size"),
        (exec([1; 3], [32, 32, 2], ARGS), "2048 work-items"),
        (exec([1; 3], [u32::MAX, u32::MAX, 2], ARGS), "an overflowing work-group"),
        (exec([1; 3], [1; 3], ARGS + 4), "misaligned kernargs"),
        (Command::Signal { addr: 0x1000, value: 1 << 32 }, "a 33-bit signal value"),
        (Command::Wait { addr: 0x1000, value: u64::MAX }, "a 64-bit wait value"),
        (Command::Signal { addr: 0x1004, value: 1 }, "a misaligned signal"),
        (Command::Timestamp { addr: 0x1004 }, "a misaligned timestamp"),
        (Command::Wait { addr: 1 << 48, value: 1 }, "a wait beyond 48 bits"),
    ] {
        assert!(ib.push(cmd).is_err(), "{why} accepted");
    }
    assert!(ib.words().is_empty(), "nothing appended on error");
}

#[test]
fn programs_the_queue_cannot_run_are_refused_at_registration() {
    let enc = compute(128, None);
    let (_, kd, entry) = kernel("add_f32.co", &Value::Null);
    assert!(enc.add_program(CODE + entry as u64 + 4, &kd).is_err(), "an entry not 256-byte aligned");
    assert!(enc.add_program(1 << 48, &kd).is_err(), "an entry beyond 48 bits");
    let mut big = kd;
    big.private_bytes = 129;
    let e = enc.add_program(CODE, &big).unwrap_err();
    assert!(matches!(e, hcq::Error::LimitExceeded { value: 129, limit: 128, .. }), "{e}");
    let mut lds = kd;
    lds.lds_bytes = 64 * 1024 + 1;
    assert!(enc.add_program(CODE, &lds).is_err(), "LDS beyond 64 KiB");
    let mut queue_ptr = kd;
    queue_ptr.properties |= 1 << 2;
    let e = enc.add_program(CODE, &queue_ptr).unwrap_err();
    assert!(e.to_string().contains("ENABLE_SGPR_QUEUE_PTR"), "{e}");
    assert!(enc.program(CODE).is_none(), "nothing registered on error");
}

#[test]
fn configurations_and_raw_packets_refuse_what_does_not_fit() {
    let d = data();
    let dev = props(&d);
    assert!(Scratch::for_device(0x180, 128, dev).is_err(), "scratch base not 256-byte aligned");
    assert!(Scratch::for_device(0x1000, 0, dev).is_err(), "0 private bytes");
    assert!(Scratch::for_device(0x1000, 128, ScratchDevice { cu_count: 0, ..dev }).is_err(), "no CUs");
    assert!(Scratch::for_device(0x1000, 1 << 20, dev).is_err(), "a wave beyond TMPRING_SIZE.WAVESIZE");
    let scratch = Scratch::for_device(0x1000, 128, dev).unwrap();
    assert!(
        Pm4Encoder::new(Pm4Config { scratch, waves_per_sh: 1024, interrupt: None }).is_err(),
        "WAVES_PER_SH > 10 bits"
    );
    let irq = Interrupt { timeline: 0x1000, mailbox: 0x1004, event_id: 1 };
    assert!(
        Pm4Encoder::new(Pm4Config { scratch, waves_per_sh: 0, interrupt: Some(irq) }).is_err(),
        "misaligned mailbox"
    );
    assert!(pm4::indirect_buffer(0x1000, 0).is_err(), "an empty IB");
    assert!(pm4::indirect_buffer(0x1000, 1 << 20).is_err(), "an IB beyond IB_SIZE");
    assert!(pm4::indirect_buffer(0x1002, 4).is_err(), "a misaligned IB");
    let mut v = Vec::new();
    assert!(pm4::nop(&mut v, 0).is_err() && pm4::nop(&mut v, 0x4001).is_err());
    pm4::nop(&mut v, 3).unwrap();
    assert_eq!(v, [raw::header(raw::op::NOP, 2).unwrap(), 0, 0, 0]);
    let mut v = Vec::new();
    assert!(pm4::set_sh_reg(&mut v, 0x1000, &[pm4::R::Lit(0)]).is_err(), "outside both windows");
    assert!(pm4::set_sh_reg(&mut v, 0xc000, &[pm4::R::Lit(0)]).is_err(), "a UCONFIG register by SET_SH_REG");
    assert!(pm4::set_sh_reg(&mut v, 0x2fff, &[pm4::R::Lit(0), pm4::R::Lit(0)]).is_err(), "past the window");
    assert!(pm4::set_sh_reg(&mut v, 0x2e00, &[]).is_err(), "no values");
    assert!(v.is_empty());
    pm4::set_reg(&mut v, 0xc200, &[pm4::R::Lit(9)]).unwrap();
    assert_eq!(v, [raw::header(raw::op::SET_UCONFIG_REG, 1).unwrap(), 0x200, 9]);
    assert!(raw::header(raw::op::NOP, 0x4000).is_none());
}

#[test]
fn the_encoder_is_an_object_safe_core_encoder() {
    let enc: Arc<dyn Encoder> = compute(128, None);
    let mut ib = Ib::new(enc);
    ib.push(Command::Barrier).unwrap();
    assert_eq!(ib.words().len(), 7 + 8);
}
