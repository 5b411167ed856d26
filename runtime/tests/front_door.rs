//! The front door on every device that runs here without hardware: CPU, SIM and QCOM:SIM.

use hcq_runtime::{DType, Error, Options};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn mlp() -> PathBuf {
    hcq_testkit::example("mlp")
}

#[test]
fn names_are_canonical_and_dev_follows_tinygrads_syntax() {
    assert_eq!(hcq_runtime::canonical_name("cpu:0"), "CPU");
    assert_eq!(hcq_runtime::canonical_name(" sim:1 "), "SIM:1");
    assert_eq!(hcq_runtime::canonical_name("qcom:sim"), "QCOM:SIM");
    assert_eq!(hcq_runtime::dev_name("qcom:sim").as_deref(), Some("QCOM:SIM"));
    assert_eq!(hcq_runtime::dev_name("QCOM").as_deref(), Some("QCOM"));
    assert_eq!(hcq_runtime::dev_name("PCI+AMD:LLVM;CPU").as_deref(), Some("AMD"));
    assert_eq!(hcq_runtime::dev_name(""), None);
    // The kernel interface is part of a QCOM name, in tinygrad's `IFACE+DEVICE` syntax.
    assert_eq!(hcq_runtime::canonical_name("msm+qcom"), "MSM+QCOM");
    assert_eq!(hcq_runtime::canonical_name("Kgsl+Qcom:Sim"), "KGSL+QCOM:SIM");
    assert_eq!(hcq_runtime::dev_name("MSM+QCOM").as_deref(), Some("MSM+QCOM"));
    assert_eq!(hcq_runtime::dev_name("msm+qcom:sim").as_deref(), Some("MSM+QCOM:SIM"));
    assert_eq!(hcq_runtime::dev_name("KGSL+QCOM;CPU").as_deref(), Some("KGSL+QCOM"));
    assert_eq!(hcq_runtime::dev_name("PCI+QCOM").as_deref(), Some("QCOM"), "an interface QCOM has not: the device");
    let dev = hcq_runtime::open("cpu:0").unwrap();
    assert_eq!(dev.name(), "CPU");
    assert!(dev.description().starts_with("CPU ("), "{}", dev.description());
}

#[test]
fn an_unknown_device_says_so_and_a_cpu_refuses_qcom_only_options() {
    let e = hcq_runtime::open("NOPE").unwrap_err();
    assert!(matches!(e.root(), Error::UnknownDevice { .. }), "{e}");
    assert!(e.to_string().contains("device NOPE"), "{e}");
    let e = hcq_runtime::open_with("CPU", Options { capture_rd: true, ..Options::default() }).unwrap_err();
    assert!(e.to_string().contains(".rd capture"), "{e}");
    let e = hcq_runtime::open_with("CPU", Options { timeout: Some(Duration::from_millis(5)), ..Options::default() })
        .unwrap_err();
    assert!(e.to_string().contains("wait timeout") && e.to_string().contains("device CPU"), "{e}");
}

#[test]
fn tensors_have_names_shapes_and_dtypes() {
    let m = hcq_runtime::open("CPU").unwrap().load(&mlp()).unwrap();
    assert_eq!((m.name(), m.device(), m.kernels_per_call()), ("mlp", "CPU", 3));
    assert_eq!(Some(m.arch()), hcq_runtime::Arch::host());
    let (i, o) = (&m.inputs()[0], &m.outputs()[0]);
    assert_eq!((i.name.as_str(), i.shape.as_slice(), i.dtype, i.nbytes), ("input0", &[8u64, 32][..], DType::F32, 1024));
    assert_eq!((o.name.as_str(), o.shape.as_slice(), o.dtype, o.nbytes), ("output0", &[8u64, 10][..], DType::F32, 320));
}

/// Run, change the input, run again: the outputs follow the input, on each device.
fn inputs_drive_the_outputs(device: &str) {
    let dev = hcq_runtime::open(device).unwrap();
    let mut m = dev.load(&mlp()).unwrap();
    m.run().unwrap();
    assert!(m.check().unwrap().ok, "{device}: the bundle's own input gives the expected output");
    let first = m.output("output0").unwrap();
    let original = std::fs::read(mlp().join("buf_000.bin")).unwrap();
    let doubled: Vec<u8> = original
        .chunks_exact(4)
        .flat_map(|c| (2.0 * f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes())
        .collect();
    m.set_input("input0", &doubled).unwrap();
    m.run().unwrap();
    assert_ne!(m.output("output0").unwrap(), first, "{device}: a new input changes the output");
    assert!(!m.check().unwrap().ok, "{device}");
    // submit + wait with a timeout, the original input back
    m.set_input_at(0, &original).unwrap();
    m.submit().unwrap();
    m.wait(Some(Duration::from_secs(30))).unwrap();
    let mut out = vec![0u8; 320];
    m.read_output("output0", &mut out).unwrap();
    assert_eq!(out, first, "{device}: submit + wait gives the same result as run");
}

#[test]
fn cpu_runs_and_follows_its_inputs() {
    inputs_drive_the_outputs("CPU");
}

#[test]
fn sim_runs_and_follows_its_inputs() {
    inputs_drive_the_outputs("SIM");
}

#[test]
fn qcom_sim_runs_and_follows_its_inputs() {
    inputs_drive_the_outputs("QCOM:SIM");
}

#[test]
fn msm_qcom_sim_runs_and_follows_its_inputs() {
    inputs_drive_the_outputs("MSM+QCOM:SIM");
    let dev = hcq_runtime::open("msm+qcom:sim").unwrap();
    assert_eq!(dev.name(), "MSM+QCOM:SIM");
    assert!(dev.description().contains("MSM DRM"), "{}", dev.description());
    let e = hcq_runtime::open_with("MSM+QCOM:SIM", Options { capture_rd: true, ..Options::default() }).unwrap_err();
    assert!(e.to_string().contains("KGSL+QCOM"), "an .rd capture is KGSL-only and says so: {e}");
}

#[test]
fn the_devices_list_has_both_kernel_interfaces_with_their_reasons() {
    let reports = hcq_runtime::devices();
    let names: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    for n in ["QCOM", "KGSL+QCOM", "MSM+QCOM", "QCOM:SIM", "KGSL+QCOM:SIM", "MSM+QCOM:SIM"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    let get = |n: &str| reports.iter().find(|r| r.name == n).unwrap();
    assert!(get("MSM+QCOM:SIM").result.is_ok() && get("KGSL+QCOM:SIM").result.is_ok());
    if !Path::new("/dev/kgsl-3d0").exists() {
        let e = get("KGSL+QCOM").result.as_ref().unwrap_err().to_string();
        assert!(e.contains("/dev/kgsl-3d0"), "{e}");
    }
    if std::env::var_os("HCQ_MSM_NODE").is_none() && !Path::new("/sys/module/msm").exists() {
        let e = get("MSM+QCOM").result.as_ref().unwrap_err().to_string();
        assert!(e.contains("render node") && e.contains("renderD128"), "{e}");
        if !Path::new("/dev/kgsl-3d0").exists() {
            let e = get("QCOM").result.as_ref().unwrap_err().to_string();
            assert!(e.contains("KGSL") && e.contains("MSM"), "QCOM says why neither opens: {e}");
        }
    }
}

#[test]
fn bytes_load_like_the_path_and_bad_tensors_are_clear_errors() {
    let bytes = hcq_runtime::bundle_bytes(&mlp()).unwrap();
    let dev = hcq_runtime::open("CPU").unwrap();
    let mut m = dev.load(&bytes).unwrap();
    m.run().unwrap();
    assert!(m.check().unwrap().ok);
    let e = m.set_input("input0", &[0u8; 3]).unwrap_err();
    assert!(matches!(e.root(), Error::Mismatch { expected: 1024, found: 3, .. }), "{e}");
    let e = m.output("logits").unwrap_err();
    assert!(e.to_string().contains("no tensor \"logits\" (the model has output0)"), "{e}");
    let e = m.read_output("output0", &mut [0u8; 4]).unwrap_err();
    assert!(matches!(e.root(), Error::Mismatch { expected: 320, found: 4, .. }), "{e}");
    let e = dev.load(&bytes[..100]).unwrap_err();
    assert!(e.to_string().contains("bundle (bytes)"), "{e}");
    let e = dev.load("/nonexistent/bundle.hcqb").unwrap_err();
    assert!(e.to_string().contains("bundle /nonexistent/bundle.hcqb"), "{e}");
}

#[test]
fn a_profiled_run_writes_a_perfetto_trace_with_its_kernels() {
    for device in ["CPU", "QCOM:SIM"] {
        let dev = hcq_runtime::open_with(device, Options { profile: true, ..Options::default() }).unwrap();
        let mut m = dev.load(&mlp()).unwrap();
        m.run().unwrap();
        assert!(m.profiler().is_some(), "{device}");
        let path = std::env::temp_dir().join(format!("hcq-runtime-{}-{device}.json", std::process::id()));
        let n = m.write_profile(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(n >= 3, "{device}: {n} events");
        assert!(text.contains("r_8_64_32"), "{device}: the first kernel is in the trace");
    }
    let m = hcq_runtime::open("CPU").unwrap().load(&mlp()).unwrap();
    assert!(m.profiler().is_none(), "off unless asked for");
}

#[test]
fn qcom_sim_keeps_an_rd_capture_when_asked() {
    let dev = hcq_runtime::open_with("QCOM:SIM", Options { capture_rd: true, ..Options::default() }).unwrap();
    let mut m = dev.load(&mlp()).unwrap();
    m.run().unwrap();
    let rd = dev.rd_capture().expect("a capture");
    assert!(rd.len() > 64, "{} bytes", rd.len());
    let e = hcq_runtime::open("CPU").unwrap().rd_capture().unwrap_err().to_string();
    assert!(e.contains(".rd capture") && e.contains("device CPU"), "{e}");
}

fn chain100() -> PathBuf {
    hcq_testkit::example("chain100")
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// What the C ABI needs of the front door, on CPU and QCOM:SIM: outputs read by index straight
/// into the caller's buffer (and pointed at where they lie on CPU only), a submitted call
/// reported in flight until it is waited for (`wait_for` gives true), inputs and outputs by an
/// index out of range named as such, `set_input` on a bound input refused (it would write memory
/// no kernel reads) and accepted again once the input is bound back.
#[test]
fn by_index_outputs_in_flight_state_and_set_input_on_a_bound_input() {
    for device in ["CPU", "QCOM:SIM"] {
        let mut m = hcq_runtime::open(device).unwrap().load(&chain100()).unwrap();
        let x: Vec<u8> = (0..16).flat_map(|i| (i as f32).to_le_bytes()).collect();
        m.set_input_at(0, &x).unwrap();
        m.submit().unwrap();
        assert!(m.in_flight(), "{device}");
        assert!(m.wait_for(Duration::from_secs(30)).unwrap(), "{device}");
        assert!(!m.in_flight(), "{device}");
        let mut y = [0u8; 64];
        m.read_output_at(0, &mut y).unwrap();
        assert_eq!(f32s(&y)[5], 105.0, "{device}");
        let e = m.read_output_at(0, &mut y[..60]).unwrap_err();
        assert!(matches!(e.root(), Error::Mismatch { .. }), "{device}: {e}");
        let e = m.read_output_at(1, &mut y).unwrap_err();
        assert!(matches!(e.root(), Error::OutOfBounds { .. }) && e.to_string().contains("model output index"), "{e}");
        let e = m.set_input_at(2, &x).unwrap_err();
        assert!(matches!(e.root(), Error::OutOfBounds { .. }), "{device}: {e}");
        let place = m.output_in_place(0).unwrap();
        assert_eq!(place.is_some(), device == "CPU", "{device}");
        if let Some(p) = place {
            // SAFETY: the front door points at the output's 64 bytes, valid until the next call.
            let here = unsafe { core::slice::from_raw_parts(p, 64) };
            assert_eq!(here, &y[..], "the output where it lies is the one read");
        }
        #[repr(C, align(64))]
        struct Frame([f32; 16]);
        let mut frame = Box::new(Frame([1.0; 16]));
        // SAFETY: the frame outlives the calls: it is bound back (which waits) before it drops.
        unsafe { m.bind_input_at(0, frame.0.as_mut_ptr().cast(), 64) }.unwrap();
        assert!(m.is_bound(0));
        let e = m.set_input_at(0, &x).unwrap_err();
        assert!(e.to_string().contains("bound to caller memory"), "{device}: {e}");
        m.run().unwrap();
        assert_eq!(f32s(&m.output_at(0).unwrap())[0], 101.0, "{device}");
        frame.0[0] = 2.0;
        m.run().unwrap();
        assert_eq!(f32s(&m.output_at(0).unwrap())[0], 102.0, "{device}: read in place");
        // SAFETY: null binds back to the model's memory.
        unsafe { m.bind_input_at(0, std::ptr::null_mut(), 0) }.unwrap();
        drop(frame);
        m.set_input_at(0, &x).unwrap();
        m.run().unwrap();
        assert_eq!(f32s(&m.output_at(0).unwrap())[5], 105.0, "{device}");
    }
}

/// `profile_begin` and `profile_end` on a device opened without profiling: the calls between
/// them are recorded as call events (and on CPU their kernels) into the Perfetto file; an end
/// without a begin is an error.
#[test]
fn profiling_begins_and_ends_on_a_model() {
    let mut m = hcq_runtime::open("CPU").unwrap().load(&chain100()).unwrap();
    m.run().unwrap();
    let path = std::env::temp_dir().join(format!("hcq-front-door-begin-{}.json", std::process::id()));
    assert!(m.profile_end(&path).is_err(), "an end without a begin");
    m.profile_begin().unwrap();
    m.run().unwrap();
    m.run().unwrap();
    let n = m.profile_end(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(n >= 200, "two calls of 100 kernels and their spans: {n} events");
    assert_eq!(text.matches("call chain100").count(), 2, "one call event per run");
}
