//! The simulated AMD gfx1100 (`AMD:SIM`, `KFD+AMD:SIM`: hcq-kfd's driver over hcq-sim-amd's
//! simulated KFD) through the front door, as any other device.

use hcq_runtime::{Error, Options};
use std::path::PathBuf;
use std::time::Duration;

const BUNDLES: [&str; 5] = ["chain100", "convnet", "elementwise", "mlp", "wide"];

fn amd(name: &str) -> PathBuf {
    hcq_testkit::example(&format!("amd/{name}"))
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Every bundle of `examples/amd` loads on `AMD:SIM`, runs its gfx1100 objects and gives the
/// bundle's expected outputs, call after call.
#[test]
fn every_amd_example_passes_its_check_on_amd_sim_call_after_call() {
    let dev = hcq_runtime::open("AMD:SIM").unwrap();
    assert_eq!(dev.name(), "AMD:SIM");
    assert!(dev.description().contains("gfx1100"), "{}", dev.description());
    for b in BUNDLES {
        let mut m = dev.load(&amd(b)).unwrap();
        assert_eq!((m.device(), m.arch()), ("AMD:SIM", hcq_runtime::Arch::AmdGfx1100), "{b}");
        let mut first = Vec::new();
        for call in 0..3 {
            m.run().unwrap_or_else(|e| panic!("{b} call {call}: {e}"));
            let c = m.check().unwrap();
            assert!(c.ok && c.compared > 0 && c.mismatches == 0, "{b} call {call}: {c:?}");
            let out = m.output_at(0).unwrap();
            if call == 0 {
                first = out;
            } else {
                assert_eq!(out, first, "{b}: call {call} gives the first call's bytes");
            }
        }
    }
}

/// The interface spelling opens the same driver; names are matched in any case.
#[test]
fn kfd_amd_sim_is_the_same_device_by_its_interface_name() {
    assert_eq!(hcq_runtime::canonical_name("kfd+amd:sim"), "KFD+AMD:SIM");
    assert_eq!(hcq_runtime::dev_name("amd:sim").as_deref(), Some("AMD:SIM"));
    assert_eq!(hcq_runtime::dev_name("KFD+AMD:SIM").as_deref(), Some("KFD+AMD:SIM"));
    let dev = hcq_runtime::open("kfd+amd:sim").unwrap();
    assert_eq!(dev.name(), "KFD+AMD:SIM");
    let mut m = dev.load(&amd("chain100")).unwrap();
    m.run().unwrap();
    assert!(m.check().unwrap().ok);
}

/// A new input changes the output; submit and wait (with a timeout) give what run gives.
#[test]
fn inputs_drive_the_outputs_and_submit_wait_equals_run() {
    let dev =
        hcq_runtime::open_with("AMD:SIM", Options { timeout: Some(Duration::from_secs(60)), ..Options::default() })
            .unwrap();
    let mut m = dev.load(&amd("chain100")).unwrap();
    let x: Vec<u8> = (0..16).flat_map(|i| (i as f32).to_le_bytes()).collect();
    m.set_input_at(0, &x).unwrap();
    m.run().unwrap();
    let y = f32s(&m.output_at(0).unwrap());
    assert_eq!(y, (0..16).map(|i| i as f32 + 100.0).collect::<Vec<_>>());
    assert!(!m.check().unwrap().ok, "another input than the bundle's");
    let x2: Vec<u8> = (0..16).flat_map(|i| (2.0 * i as f32).to_le_bytes()).collect();
    m.set_input_at(0, &x2).unwrap();
    m.submit().unwrap();
    assert!(m.in_flight());
    m.wait(Some(Duration::from_secs(30))).unwrap();
    assert!(!m.in_flight());
    assert_eq!(f32s(&m.output_at(0).unwrap())[3], 106.0);
    m.submit().unwrap();
    assert!(m.wait_for(Duration::from_secs(30)).unwrap());
}

/// `hcq devices`' list: both names are there and pass, with the KFD they found.
#[test]
fn the_devices_list_has_amd_sim_and_kfd_amd_sim_passing() {
    let reports = hcq_runtime::devices();
    for n in ["AMD:SIM", "KFD+AMD:SIM"] {
        let r = reports.iter().find(|r| r.name == n).unwrap_or_else(|| panic!("{n} is listed"));
        let p = r.result.as_ref().unwrap();
        assert_eq!((p.kind.as_str(), p.arch.as_str()), ("amd", "gfx1100"), "{n}");
        assert!(p.notes.contains("KFD"), "{}", p.notes);
    }
    assert!(reports.iter().any(|r| r.name == "AMD"), "the real one beside them");
}

/// A profiled run: every dispatch of a call is a `Program` event whose times come from the
/// GPU clock (`RELEASE_MEM` of the 100 MHz counter before and after it), in launch order, each
/// inside its call; the Perfetto trace names the kernel.
#[test]
fn a_profiled_run_has_an_event_per_dispatch_from_the_gpu_clock() {
    let dev = hcq_runtime::open_with("AMD:SIM", Options { profile: true, ..Options::default() }).unwrap();
    let mut m = dev.load(&amd("mlp")).unwrap();
    let t0 = hcq::signal::host_clock_ns();
    m.run().unwrap();
    let t1 = hcq::signal::host_clock_ns();
    assert!(m.check().unwrap().ok);
    let prof = m.profiler().expect("a profiler when asked for");
    let p = prof.profiler();
    let kernels: Vec<_> = p.events().into_iter().filter(|e| e.kind == hcq::profile::EventKind::Program).collect();
    assert_eq!(kernels.len(), m.kernels_per_call(), "one event per dispatch");
    for w in kernels.windows(2) {
        assert!(w[0].end_ns <= w[1].start_ns, "dispatches in order: {w:?}");
    }
    for e in &kernels {
        assert!(t0 <= e.start_ns && e.start_ns <= e.end_ns && e.end_ns <= t1, "{e:?} inside [{t0}, {t1}]");
    }
    assert!(kernels.iter().any(|e| e.end_ns > e.start_ns), "the GPU clock moved over a dispatch");
    let path = std::env::temp_dir().join(format!("hcq-amd-sim-{}.json", std::process::id()));
    let n = m.write_profile(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(n >= kernels.len(), "{n} events written");
    let name = p.name(kernels[0].name).unwrap();
    assert!(text.contains(&*name), "the first kernel ({name}) is in the trace");
    let plain = hcq_runtime::open("AMD:SIM").unwrap().load(&amd("mlp")).unwrap();
    assert!(plain.profiler().is_none_or(|p| p.profiler().events().is_empty()), "off unless asked for");
}

/// What the device cannot do, and bundles it cannot run, are clear errors naming them.
#[test]
fn bundles_without_gfx1100_objects_and_unsupported_options_are_clear_errors() {
    let dev = hcq_runtime::open("AMD:SIM").unwrap();
    let e = dev.load(&hcq_testkit::example("mlp")).unwrap_err();
    assert!(matches!(e.root(), Error::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("amd_gfx1100"), "{e}");
    let e = hcq_runtime::open_with("AMD:SIM", Options { capture_rd: true, ..Options::default() }).unwrap_err();
    assert!(e.to_string().contains(".rd capture"), "{e}");
    let mut m = dev.load(&amd("chain100")).unwrap();
    let mut frame = [0f32; 16];
    // The device registers caller memory with KFD (USERPTR); the simulated KFD pins only pages
    // it mapped itself, so this stack frame is EFAULT, naming the device.
    // SAFETY: refused before anything is bound (the frame outlives the call either way).
    let e = unsafe { m.bind_input_at(0, frame.as_mut_ptr().cast(), 64) }.unwrap_err();
    assert!(matches!(e.root(), Error::Os { errno: 14, .. }), "{e}");
    assert!(e.to_string().contains("AMD:SIM") && e.to_string().contains("ALLOC_MEMORY_OF_GPU"), "{e}");
    m.run().unwrap();
    assert!(m.check().unwrap().ok, "nothing changed");
    let e = m.set_input_at(0, &[0u8; 60]).unwrap_err();
    assert!(matches!(e.root(), Error::Mismatch { .. }), "{e}");
}
