//! The bundle runner on the CPU device: long launch lists, inputs, outputs.
#![cfg(all(any(target_os = "linux", target_os = "macos"), any(target_arch = "x86_64", target_arch = "aarch64")))]

use hcq_bundle::hcqb::{self, Hcqb};
use hcq_bundle::{Arch, v1};
use hcq_cpu::device::CpuDevice;

use hcq_testkit::example as examples;

#[test]
fn a_launch_list_longer_than_the_ring_runs_as_one_exec_list() {
    // chain100's 100 launches repeated 300 times: 30,000 launches, five times what the 64
    // Ki-word ring could hold as exec packets. They run as one exec list: one small
    // submission. Every repetition recomputes the output from the input.
    let mut m = v1::import_dir(examples("chain100")).unwrap();
    let one = m.launches.clone();
    m.launches = (0..300).flat_map(|_| one.iter().cloned()).collect();
    let bytes = hcqb::write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = CpuDevice::new("CPU", 1).unwrap();
    let mut model = hcq_cpu::model::load(dev, &file, Arch::host().unwrap(), false).unwrap();
    assert_eq!(model.kernels_per_call(), 30_000);
    assert_eq!(model.backend().submissions_per_call(), 1);
    for _ in 0..3 {
        model.call().unwrap();
    }
    let r = model.check().unwrap();
    // exact where the expected outputs came from the same objects (x86-64), else the tolerance
    assert!(r.ok && r.exact == (Arch::host() == Some(Arch::X86_64)), "{r:?}");
}

#[test]
fn outputs_are_read_only_after_the_calls_in_flight() {
    let m = v1::import_dir(examples("chain100")).unwrap();
    let bytes = hcqb::write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = CpuDevice::new("CPU", 1).unwrap();
    let mut model = hcq_cpu::model::load(dev, &file, Arch::host().unwrap(), false).unwrap();
    model.call().unwrap();
    let old = model.output(0).unwrap();
    let input: Vec<u8> = (0..16).flat_map(|i| (i as f32 * 0.25 - 7.0).to_le_bytes()).collect();
    model.set_input(0, &input).unwrap();
    // 300 calls in flight on the command-processor thread (submitted, not waited for); the
    // output read right after must be the new input's, not what the buffer held before
    for _ in 0..300 {
        model.backend_mut().submit().unwrap();
    }
    let out = model.output(0).unwrap();
    let got: Vec<f32> = out.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let want: Vec<f32> = (0..16).map(|i| i as f32 * 0.25 - 7.0 + 100.0).collect();
    assert_ne!(out, old);
    assert_eq!(got, want);
    for _ in 0..300 {
        model.backend_mut().submit().unwrap();
    }
    assert!(!model.check().unwrap().ok, "check compares the finished outputs of the new input");
}

#[test]
fn a_new_input_gives_a_new_output() {
    let m = v1::import_dir(examples("chain100")).unwrap();
    let bytes = hcqb::write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let dev = CpuDevice::new("CPU", 1).unwrap();
    let mut model = hcq_cpu::model::load(dev, &file, Arch::host().unwrap(), false).unwrap();
    let input: Vec<u8> = (0..16).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
    model.set_input(0, &input).unwrap();
    model.call().unwrap();
    let out = model.output(0).unwrap();
    let got: Vec<f32> = out.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let want: Vec<f32> = (0..16).map(|i| i as f32 * 0.5 + 100.0).collect();
    assert_eq!(got, want);
    assert!(!model.check().unwrap().ok, "the expected bytes were for the bundle's own input");
    assert!(model.set_input(0, &input[..8]).is_err(), "wrong input size");
    assert!(model.set_input(3, &input).is_err(), "no such input");
    assert!(model.output(9).is_err(), "no such output");
}

#[test]
fn objects_for_another_architecture_are_refused() {
    let m = v1::import_dir(examples("mlp")).unwrap();
    let bytes = hcqb::write(&m).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let other = if Arch::host() == Some(Arch::X86_64) { Arch::Aarch64 } else { Arch::X86_64 };
    let e = hcq_cpu::model::load(CpuDevice::new("CPU", 1).unwrap(), &file, other, false).unwrap_err();
    assert!(e.to_string().contains("not this host"), "{e}");
}

#[test]
fn a_direct_call_computes_what_a_device_call_does() {
    for (name, cores) in [("mlp", 2), ("wide", 2), ("wide", 1)] {
        let m = v1::import_dir(examples(name)).unwrap();
        let bytes = hcqb::write(&m).unwrap();
        let file = Hcqb::parse(&bytes).unwrap();
        let mut model =
            hcq_cpu::model::load(CpuDevice::new("CPU", cores).unwrap(), &file, Arch::host().unwrap(), false).unwrap();
        model.backend_mut().call_direct().unwrap();
        assert!(model.check().unwrap().ok, "{name}: the direct call's outputs");
        model.call().unwrap();
        assert!(model.check().unwrap().ok, "{name}: the device call's outputs");
    }
}

/// `elementwise` (`out, x, w`) with its launch reading `x` in both input slots, and the same
/// with the weight buffer holding `x`'s bytes in the second slot instead.
fn read_twice() -> (hcq_bundle::model::BundleModel, hcq_bundle::model::BundleModel) {
    use hcq_bundle::model::Launch;
    let m = v1::import_dir(examples("elementwise")).unwrap();
    let mut aliased = m.clone();
    let Launch::Kernel(k) = &mut aliased.launches[0] else { panic!("a kernel") };
    k.args[2] = k.args[1];
    let mut copied = m.clone();
    let Launch::Kernel(k) = &copied.launches[0] else { panic!("a kernel") };
    let (x, w) = (k.args[1].buffer as usize, k.args[2].buffer as usize);
    copied.buffers[w].initial = copied.buffers[x].initial.clone();
    aliased.validate().unwrap();
    copied.validate().unwrap();
    (aliased, copied)
}

/// Issue 28 §1: one buffer view in two parameter slots of one kernel is bound in each: the CPU
/// device computes what it computes with a copy of the view in the second slot.
#[test]
fn one_view_in_two_parameter_slots_is_bound_in_each_on_the_cpu() {
    let (aliased, copied) = read_twice();
    let run = |m: &hcq_bundle::model::BundleModel| {
        let bytes = hcqb::write(m).unwrap();
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let mut model = hcq_cpu::model::load(dev, &file, Arch::host().unwrap(), false).unwrap();
        model.call().unwrap();
        model.output(0).unwrap()
    };
    let got = run(&aliased);
    assert_eq!(got, run(&copied));
    assert_ne!(Some(&got), aliased.outputs[0].expected.as_ref(), "the second slot's bytes changed the output");
}
