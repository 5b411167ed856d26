//! The host's CPU objects on the SIM device through the core runner: every kernel an exec
//! packet of the simulated command processors, doorbells in mock MMIO, faults injected.
#![cfg(all(
    any(target_os = "linux", target_os = "macos"),
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(all(target_os = "macos", target_arch = "aarch64"))
))]

use hcq::device::Device;
use hcq::error::Error;
use hcq_bundle::hcqb::{self, Hcqb};
use hcq_runner::Runner;
use hcq_sim::cpu::SimBackend;
use hcq_sim::{AccessKind, SimHandle};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

fn bundle(name: &str) -> Vec<u8> {
    let dir = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    hcqb::write(&hcq_bundle::v1::import_dir(&dir).unwrap()).unwrap()
}

fn load(name: &str) -> (Arc<SimHandle>, Runner<SimBackend>) {
    let bytes = bundle(name);
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = Arc::new(SimHandle::open("SIM").unwrap());
    let r = Runner::load(SimBackend::new(dev.clone()), &file).unwrap();
    (dev, r)
}

#[test]
fn every_sample_bundle_matches_its_expected_outputs_on_sim() {
    for name in ["chain100", "elementwise", "mlp", "wide"] {
        let (dev, mut r) = load(name);
        dev.sim().mmio().set_logging(true);
        for _ in 0..3 {
            r.call().unwrap();
        }
        let rep = r.check().unwrap();
        assert!(rep.ok && rep.compared > 0, "{name}: {rep:?}");
        // one doorbell write (engine 0's write pointer) per submission
        let bells = dev.sim().mmio().take_log().iter().filter(|a| a.offset == 0 && a.kind == AccessKind::Write).count();
        assert_eq!(bells, 3 * r.backend().submissions_per_call(), "{name}");
    }
}

#[test]
fn a_new_input_on_sim_gives_a_new_output() {
    let (_dev, mut r) = load("chain100");
    let input: Vec<u8> = (0..16).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
    r.set_input(0, &input).unwrap();
    // calls in flight (not waited for): the read waits for the one that writes the output
    for _ in 0..20 {
        r.backend_mut().submit().unwrap();
    }
    let got: Vec<f32> = r.output(0).unwrap().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let want: Vec<f32> = (0..16).map(|i| i as f32 * 0.5 + 100.0).collect();
    assert_eq!(got, want);
}

#[test]
fn injected_latency_applies_to_every_kernel() {
    let (dev, mut r) = load("chain100");
    r.call().unwrap();
    dev.sim().faults().set_latency(Duration::from_millis(1));
    let t = Instant::now();
    r.call().unwrap();
    let took = t.elapsed();
    dev.sim().faults().clear();
    assert!(took >= Duration::from_millis(100), "100 exec packets at 1 ms each took {took:?}");
    assert!(r.check().unwrap().ok);
}

#[test]
fn a_stall_shorter_than_the_timeout_is_waited_for() {
    let (dev, mut r) = load("mlp");
    r.backend().set_timeout_ms(2_000);
    dev.sim().faults().stall_at(2, Duration::from_millis(100));
    let t = Instant::now();
    r.call().unwrap();
    assert!(t.elapsed() >= Duration::from_millis(100), "the stalled command held the call");
    assert!(r.check().unwrap().ok);
}

#[test]
fn an_injected_hang_surfaces_as_the_timeout_error_through_the_runner() {
    let (dev, mut r) = load("chain100");
    r.call().unwrap();
    r.backend().set_timeout_ms(200);
    // the command processor counts commands per engine from 0: this one lies in the next call
    let n = 3 * 102; // far enough for any count of commands per call the first one made
    dev.sim().faults().hang_at(n);
    let t = Instant::now();
    let mut err = None;
    for _ in 0..4 {
        if let Err(e) = r.call() {
            err = Some(e);
            break;
        }
    }
    let e = err.expect("a call hung");
    assert!(matches!(e.root(), Error::Timeout { .. }), "expected the timeline's timeout, got {e}");
    assert!(t.elapsed() >= Duration::from_millis(200), "{:?}", t.elapsed());
    assert!(dev.sim().engine().timeline().is_hung());
    assert!(matches!(r.call().unwrap_err().root(), Error::DeviceHung { .. }), "a hung device takes no more calls");
    // the buffers the hung call may still use are not given back when the model drops
    drop(r);
    assert!(dev.allocator().pending_frees() > 0, "memory of a hung submission must not be reused");
}

#[test]
fn a_dropped_model_gives_its_memory_back_after_its_last_call() {
    let (dev, mut r) = load("mlp");
    for _ in 0..5 {
        r.backend_mut().submit().unwrap();
    }
    assert!(dev.allocator().used_bytes() > 0);
    drop(r);
    dev.sim().engine().synchronize().unwrap();
    dev.allocator().retire();
    assert_eq!(dev.allocator().used_bytes(), 0, "every buffer freed once the device passed its last use");
}

#[test]
fn a_dropped_models_kernels_refuse_to_run_instead_of_touching_freed_memory() {
    let (dev, r) = load("elementwise");
    drop(r);
    // the launch's host function (program handle 0 of this fresh device) is still registered
    let hcq = dev.sim().engine();
    let mut q = hcq.queue().unwrap();
    let v = {
        let mut s = hcq.lock();
        let ka = s.kernargs(&[0u8; 512], 512, 16).unwrap();
        q.exec(0, ka, [1; 3], [1; 3]).unwrap();
        submit!(s, 0, &mut q).unwrap()
    };
    let e = hcq.wait(v).unwrap_err();
    assert!(format!("{e}").contains("model was dropped"), "{e}");
}

/// Issue 28 §1: one buffer view in two parameter slots of one kernel (elementwise reads its
/// input `x` in both input slots) is bound in each on the SIM device: it computes what it
/// computes with the weight buffer holding `x`'s bytes in the second slot.
#[test]
fn one_view_in_two_parameter_slots_is_bound_in_each_on_sim() {
    use hcq_bundle::model::Launch;
    let dir = format!("{}/../../examples/elementwise", env!("CARGO_MANIFEST_DIR"));
    let m = hcq_bundle::v1::import_dir(&dir).unwrap();
    let mut aliased = m.clone();
    let Launch::Kernel(k) = &mut aliased.launches[0] else { panic!("a kernel") };
    k.args[2] = k.args[1];
    let mut copied = m.clone();
    let Launch::Kernel(k) = &copied.launches[0] else { panic!("a kernel") };
    let (x, w) = (k.args[1].buffer as usize, k.args[2].buffer as usize);
    copied.buffers[w].initial = copied.buffers[x].initial.clone();
    let run = |m: &hcq_bundle::model::BundleModel| {
        m.validate().unwrap();
        let bytes = hcqb::write(m).unwrap();
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = Arc::new(SimHandle::open("SIM").unwrap());
        let mut r = Runner::load(SimBackend::new(dev), &file).unwrap();
        r.call().unwrap();
        r.output(0).unwrap()
    };
    let got = run(&aliased);
    assert_eq!(got, run(&copied));
    assert_ne!(Some(&got), m.outputs[0].expected.as_ref(), "the second slot's bytes changed the output");
}
