//! The virtual AMD GPU in a client process: `vkfd-probe` (`src/bin/kfd_probe.rs`) runs with
//! `libhcq_vkgsl.so` preloaded and does what tinygrad's `KFDIface` does — the topology and IP
//! discovery from sysfs, `/dev/kfd` and the render node, buffers at its own reservations mapped
//! from the render node, a PM4 compute queue rung through the doorbell it maps from `/dev/kfd`, a
//! `RELEASE_MEM` that writes memory and interrupts, the wait for its event — and checks the
//! driver's errno values for malformed arguments.
//!
//! The library is `$HCQ_VKGSL_LIB` when set, else built once (`hcq_testkit::vkgsl_lib`, see
//! `tests/descriptors.rs`).

use std::process::Command;

/// Run the probe's `scenario` under the library: its stdout and stderr, after asserting it
/// succeeded.
fn probe(scenario: &str) -> (String, String) {
    probe_with(scenario, &[])
}

/// [`probe`] with more environment.
fn probe_with(scenario: &str, env: &[(&str, &std::path::Path)]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vkfd-probe"))
        .arg(scenario)
        .env("LD_PRELOAD", hcq_testkit::vkgsl_lib())
        .envs(env.iter().copied())
        .output()
        .expect("run vkfd-probe");
    let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "vkfd-probe {scenario}: {:?}\nstdout:\n{so}\nstderr:\n{se}", out.status);
    (so.into_owned(), se.into_owned())
}

#[test]
fn a_kfd_client_writes_memory_through_a_pm4_queue_and_waits_for_its_event() {
    let (out, _) = probe("sequence");
    assert!(
        out.contains(
            "topology: nodes [\"0\", \"1\"], GPU node 1: gpu_id 0xbaf5, gfx_target_version 110000, render minor 129"
        ),
        "{out}"
    );
    assert!(out.contains("ip discovery: hwids [\"108\", \"11\", \"34\", \"41\", \"42\", \"43\"], GC 11.0.0"), "{out}");
    assert!(out.contains("KFD version 1.17"), "{out}");
    assert!(out.contains("doorbell offset 0x0"), "the doorbell is at the frame's offset in the kfd memfd: {out}");
    assert!(out.contains("the GPU wrote 0xc0ffee01"), "{out}");
    assert!(out.contains("shared USERPTR at") && out.contains("the GPU wrote 0x5aa50002"), "{out}");
    assert!(out.contains("private USERPTR at") && out.contains("the GPU wrote 0x77770003"), "{out}");
    assert!(out.contains("FREE of the signal page's buffer: errno 1"), "{out}");
    assert!(out.contains("sequence: done"), "{out}");
}

#[test]
fn a_private_user_pointer_the_process_replaced_faults_instead_of_being_written() {
    let (out, err) = probe("revoke");
    assert!(err.contains("revoked: the process maps other memory there now"), "{err}");
    assert!(out.contains("memory exception gpu_id 0xbaf5"), "{out}");
    assert!(out.contains("the new mapping holds 0x11111111"), "{out}");
    assert!(out.contains("MAP_MEMORY_TO_GPU of the revoked import: errno 14"), "{out}");
}

#[test]
fn malformed_kfd_arguments_get_the_drivers_errno() {
    let (out, err) = probe("errno");
    for line in [
        "GET_VERSION to a null pointer: errno 14",
        "GET_VERSION to an unmapped page: errno 14",
        "request 0x30 (past amdkfd's): errno 22",
        "GET_CLOCK_COUNTERS (not simulated): errno 22",
        "ALLOC on no GPU: errno 22",
        "ALLOC of 0 bytes: errno 22",
        "ALLOC at a misaligned VA: errno 22",
        "USERPTR of read-only memory: errno 14",
        "USERPTR at a misaligned pointer: errno 22",
        "USERPTR of the device's own mapping: errno 14",
        "FREE of a bad handle: errno 22",
        "FREE of a buffer still mapped: errno 16",
        "MAP with a bad device array: errno 14",
        "MAP to no devices: errno 22",
        "MAP of a bad handle: errno 22",
        "WAIT_EVENTS with a bad event array: errno 14",
        "WAIT_EVENTS on no event: errno 22",
        "DESTROY_QUEUE of no queue: errno 22",
        "CREATE_QUEUE on a ring that is no buffer: errno 22",
        "CREATE_QUEUE with a ring of 3000 bytes: errno 22",
        "DESTROY_EVENT of no event: errno 22",
        "ACQUIRE_VM with a pipe for the render node: errno 22",
        "ACQUIRE_VM with no descriptor: errno 22",
        "ACQUIRE_VM on no GPU: errno 22",
        "render node driver: amdgpu",
        "an amdgpu request on the render node: errno 22",
        "errno: done",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    assert!(err.contains("AMDKFD_IOC_GET_CLOCK_COUNTERS is not simulated"), "{err}");
}

#[test]
fn memory_and_queues_before_acquire_vm_are_refused() {
    let (out, _) = probe("before-vm");
    assert!(out.contains("ALLOC before ACQUIRE_VM: errno 19"), "{out}");
    assert!(out.contains("CREATE_QUEUE before ACQUIRE_VM: errno 3"), "{out}");
    assert!(out.contains("CREATE_EVENT of type 99: errno 22"), "{out}");
}

/// The hex number after `key` in `text` (up to the next space, comma or end of line).
fn hex_after(text: &str, key: &str) -> u64 {
    let at = text.find(key).unwrap_or_else(|| panic!("no {key:?} in\n{text}")) + key.len();
    let s: String = text[at..].chars().take_while(|c| c.is_ascii_hexdigit() || *c == 'x').collect();
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|e| panic!("{key:?} {s:?}: {e}"))
}

/// `HCQ_VKGSL_AMD_CAPTURE`: the probe's sequence (three writes, each a `RELEASE_MEM` of the value
/// and one of the event id to its mailbox with an interrupt) is the capture's header and its six
/// packets, line for line: sequence number, pid, the ring and the packet's place in it, the
/// decoded fields, the dwords as hcq-amd's encoder writes them. A second run appends.
#[test]
fn the_command_stream_capture_records_every_packet_of_the_process() {
    use hcq_amd::pm4::raw::release_mem as rm;
    use hcq_amd::pm4::{D, ReleaseMem, W, release_mem};
    let dir = std::env::temp_dir().join(format!("hcq-vkgsl-amd-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stream.txt");
    let _ = std::fs::remove_file(&path);
    let (out, _) = probe_with("sequence", &[("HCQ_VKGSL_AMD_CAPTURE", &path)]);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{text}");
    let header = lines[0];
    assert!(
        header.starts_with("# hcq-vkgsl AMD command-stream capture 1: pid ") && header.contains("vkfd-probe sequence")
    );
    let pid: u32 = header.split(' ').nth(7).unwrap().trim_end_matches(':').parse().unwrap();
    let ring = hex_after(&out, "ring at ");
    let mailbox = hex_after(&out, "with its mailbox at ");
    let ev = out.split(", event ").nth(1).unwrap().split(' ').next().unwrap().parse::<u32>().unwrap();
    let targets = [
        hex_after(&out, "VRAM at ") + 4,
        hex_after(&out, "shared USERPTR at ") + 8,
        hex_after(&out, "private USERPTR at ") + 12,
    ];
    let values = [0xC0FF_EE01u32, 0x5AA5_0002, 0x7777_0003];
    let mut want = Vec::new();
    for (k, (&addr, &value)) in targets.iter().zip(&values).enumerate() {
        for (j, (addr, value, irq)) in [(addr, value, None), (mailbox, ev, Some(ev))].into_iter().enumerate() {
            let mut words = Vec::new();
            let r = ReleaseMem {
                gcr: 0,
                data_sel: rm::DATA_32_LOW,
                int_sel: if irq.is_some() { rm::INT_AFTER_WRITE_CONFIRM } else { rm::INT_NONE },
                addr: D::Lit(addr),
                data_lo: W::Lit(value),
                data_hi: W::Lit(0),
                ctxid: irq.unwrap_or(0),
            };
            release_mem(&mut words, r).unwrap();
            let n = 2 * k + j;
            let raw: Vec<String> = words.iter().map(|w| format!("{w:08x}")).collect();
            want.push(format!(
                "{n} {pid} cp q=0 ring@{:#x} RELEASE_MEM event=CACHE_FLUSH_AND_INV_TS_EVENT index=5 gcr=0x0 dst=0 \
                 int_sel={} data_sel=1 addr={addr:#x} data={value:#x} ctxid={:#x} | {}",
                ring + 4 * 8 * n as u64,
                if irq.is_some() { 2 } else { 0 },
                irq.unwrap_or(0),
                raw.join(" ")
            ));
        }
    }
    assert_eq!(lines[1..], want.iter().map(String::as_str).collect::<Vec<_>>()[..]);
    probe_with("sequence", &[("HCQ_VKGSL_AMD_CAPTURE", &path)]);
    let again = std::fs::read_to_string(&path).unwrap();
    assert!(again.starts_with(&text) && again.lines().count() == 14, "a second process appends:\n{again}");
    let _ = std::fs::remove_dir_all(&dir);
}
