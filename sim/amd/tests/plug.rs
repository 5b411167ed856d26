//! hcq-kfd's AMD device and runner backend over the simulated KFD, as `AMD:SIM` runs them, with
//! the simulated GPU at hand: a faulting kernel and a hung queue end a call with a clear error
//! naming the fault and the KFD queue, never a hang of the host or a panic.

use hcq::Error;
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_kfd::{AmdBackend, AmdDevice};
use hcq_runner::Runner;
use hcq_runner::plug::{Capabilities, DeviceKind};
use hcq_sim_amd::{GpuConfig, SimKfd};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn bundle(name: &str) -> Vec<u8> {
    let model = hcq_bundle::v1::import_dir(hcq_testkit::example(&format!("amd/{name}"))).unwrap();
    hcqb::write(&model).unwrap()
}

/// `bundle` loaded on a fresh simulated gfx1100 with `config`, the simulated KFD kept.
fn load(name: &str, config: GpuConfig) -> (Arc<SimKfd>, Runner<AmdBackend>) {
    let sim = Arc::new(SimKfd::new(config));
    let dev = AmdDevice::open("AMD:SIM", sim.clone()).unwrap();
    let bytes = bundle(name);
    let runner = Runner::load(AmdBackend::new(dev), &Hcqb::parse(&bytes).unwrap()).unwrap();
    (sim, runner)
}

#[test]
fn the_registry_entries_name_both_spellings_and_probe_a_gfx1100() {
    let kinds = hcq_sim_amd::plug::kinds();
    let names: Vec<&str> = kinds.iter().flat_map(|k| k.names().iter().copied()).collect();
    assert_eq!(names, ["AMD:SIM", "KFD+AMD:SIM"]);
    for (k, n) in kinds.iter().zip(names) {
        let p = k.probe(n).unwrap();
        assert_eq!((p.kind.as_str(), p.arch.as_str()), ("amd", "gfx1100"), "{n}");
        assert!(p.notes.contains("KFD 1.17"), "{}", p.notes);
    }
}

#[test]
fn a_call_runs_again_and_again_with_the_same_result() {
    let (_sim, mut r) = load("chain100", GpuConfig::default());
    for _ in 0..3 {
        r.call().unwrap();
        let c = r.check().unwrap();
        assert!(c.ok && c.mismatches == 0, "{c:?}");
    }
}

/// A kernel reading memory the GPU cannot reach: KFD's memory-exception event ends the call with
/// the faulting address and the queue; the next call says the device is hung at once; the
/// backend drops cleanly.
#[test]
fn a_kernel_reading_an_unmapped_buffer_is_a_memory_exception_naming_the_address_and_queue() {
    let (sim, mut r) = load("elementwise", GpuConfig::default());
    r.call().unwrap();
    assert!(r.check().unwrap().ok);
    let input = r.backend().buffer_addr(0).unwrap();
    sim.gpu().memory().unmap(input).unwrap();
    let t = Instant::now();
    let e = r.call().unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(10), "the fault ends the wait: {:?}", t.elapsed());
    assert!(matches!(e.root(), Error::DeviceHung { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("GPU memory exception") && msg.contains(&format!("{input:#x}")), "{msg}");
    assert!(msg.contains("KFD compute queue"), "the queue is named: {msg}");
    let again = r.call().unwrap_err();
    assert!(matches!(again.root(), Error::DeviceHung { .. }), "{again}");
    sim.gpu().memory().map(input).unwrap();
    drop(r);
}

/// Rewind the timeline behind the queue's back: the next call's first packet (its wait on the
/// previous call's value) never passes. The host's timeout names the device, the values and the
/// queue's read pointer.
#[test]
fn a_queue_that_never_passes_its_wait_times_out_naming_the_queue() {
    let (sim, mut r) = load("chain100", GpuConfig { hang_timeout: None, ..GpuConfig::default() });
    r.call().unwrap();
    let addr = r.backend().engine().unwrap().timeline().signal().addr();
    sim.gpu().memory().write_u64(addr, 0).unwrap();
    r.backend_mut().set_timeout_ms(300);
    let t = Instant::now();
    let e = r.call().unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(matches!(e.root(), Error::Timeout { awaited: 2, last: 0, .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("AMD:SIM") && msg.contains("KFD compute queue") && msg.contains("read pointer"), "{msg}");
    // the device is hung from now on, and dropping it does not wait again
    assert!(matches!(r.call().unwrap_err().root(), Error::DeviceHung { .. }));
    let t = Instant::now();
    drop(r);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// The same hang with the GPU's own hang detection on: KFD's hardware-exception event (a queue
/// reset after a hang) ends the wait long before the host's timeout.
#[test]
fn a_hang_the_gpu_detects_is_a_hardware_exception_naming_the_queue() {
    let config = GpuConfig { hang_timeout: Some(Duration::from_millis(200)), ..GpuConfig::default() };
    let (sim, mut r) = load("chain100", config);
    r.call().unwrap();
    let addr = r.backend().engine().unwrap().timeline().signal().addr();
    sim.gpu().memory().write_u64(addr, 0).unwrap();
    r.backend_mut().set_timeout_ms(60_000);
    let t = Instant::now();
    let e = r.call().unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(matches!(e.root(), Error::DeviceHung { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("hardware exception") && msg.contains("hang"), "{msg}");
    assert!(msg.contains("KFD compute queue"), "{msg}");
}

/// A code object that is not one is refused at load, naming the program, before the device
/// allocates anything.
#[test]
fn a_broken_code_object_is_refused_at_load_naming_the_program() {
    let mut model = hcq_bundle::v1::import_dir(hcq_testkit::example("amd/elementwise")).unwrap();
    let mut broke = 0;
    for p in model.programs.iter_mut() {
        if let Some(obj) = p.objects.amd_gfx1100.as_mut() {
            obj.truncate(obj.len() / 2);
            broke += 1;
        }
    }
    assert!(broke > 0);
    let bytes = hcqb::write(&model).unwrap();
    let sim = Arc::new(SimKfd::new(GpuConfig::default()));
    let dev = AmdDevice::open("AMD:SIM", sim).unwrap();
    let e = Runner::load(AmdBackend::new(dev), &Hcqb::parse(&bytes).unwrap()).unwrap_err();
    assert!(e.to_string().contains("program 0"), "{e}");
}
