//! The CPU device: kernels through queues, core_id fan-out, copies, errors.
#![cfg(all(any(target_os = "linux", target_os = "macos"), any(target_arch = "x86_64", target_arch = "aarch64")))]

use hcq::buffer::Buffer;
use hcq::device::Device;
use hcq::dtype::DType;
use hcq::error::Error;
use hcq::program::{Param, ParamKind, ProgramImage};
use hcq_cpu::device::{CpuDevice, host_cores};
use std::sync::Arc;

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
/// Load a kernel in a test: `load!(dev, object, symbol, nargs, core_id)`.
macro_rules! load {
    ($dev:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: the test objects are the repository's clang-built kernels (or garbage the
        // loader refuses); they are called only with buffers that cover what they access.
        unsafe { $dev.load_kernel($($arg),+) }
    }};
}

macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

fn obj(dir: &str, stem: &str) -> Vec<u8> {
    let suffix = if cfg!(target_arch = "aarch64") { ".aarch64.o" } else { ".o" };
    // the sample bundles live in the repo's examples/; test-only objects in tests/data/
    let base = if dir == "coreid" { "tests/data" } else { "../../examples" };
    std::fs::read(format!("{}/{base}/{dir}/{stem}{suffix}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// A program image whose buffer parameters each span `elems` elements.
fn image(name: &str, binary: Vec<u8>, elems: u64, sig: &[(Option<&str>, DType, ParamKind)]) -> ProgramImage {
    ProgramImage {
        name: name.into(),
        target: "CPU".into(),
        binary: Arc::from(binary),
        entry: name.into(),
        signature: sig
            .iter()
            .enumerate()
            .map(|(i, (n, d, k))| {
                let shape = if *k == ParamKind::Buffer { vec![elems] } else { vec![] };
                Param { name: n.map(Into::into), slot: i as u32, dtype: *d, shape, kind: *k }
            })
            .collect(),
    }
}

#[test]
fn chain100_runs_through_the_queue_and_matches_tinygrad_bit_for_bit() {
    let dev = CpuDevice::new("CPU", host_cores()).unwrap();
    assert_eq!(dev.name(), "CPU");
    let buf = |n| Buffer::new(dev.clone(), n, DType::F32, Default::default()).unwrap();
    let prog = dev
        .load_program(&image(
            "E_4_4",
            obj("chain100", "prog_000_E_4_4"),
            16,
            &[(None, DType::F32, ParamKind::Buffer), (None, DType::F32, ParamKind::Buffer)],
        ))
        .unwrap();
    let (a, b) = (buf(16), buf(16));
    let input = std::fs::read(format!("{}/../../examples/chain100/buf_000.bin", env!("CARGO_MANIFEST_DIR"))).unwrap();
    a.copy_in(&input).unwrap();
    for i in 0..100 {
        let (dst, src) = if i % 2 == 0 { (&b, &a) } else { (&a, &b) };
        prog.call(&[dst, src], &[], [1; 3], [1; 3], false).unwrap();
    }
    dev.synchronize().unwrap();
    let mut out = vec![0u8; 64];
    a.copy_out(&mut out).unwrap();
    let expected =
        std::fs::read(format!("{}/../../examples/chain100/expected_000.bin", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert_eq!(f32s(&out), f32s(&expected));
    assert_eq!(f32s(&out)[0], f32s(&input)[0] + 100.0);
}

#[test]
fn core_id_launches_run_every_tid_exactly_once() {
    let dev = CpuDevice::new("CPU", 3).unwrap();
    assert_eq!(dev.cores(), 3);
    let prog = dev
        .load_program(&image(
            "fill",
            obj("coreid", "fill"),
            37_000,
            &[
                (None, DType::I32, ParamKind::Buffer),
                (Some("n"), DType::I32, ParamKind::Value),
                (Some("core_id"), DType::I32, ParamKind::Value),
            ],
        ))
        .unwrap();
    let per = 1000u64;
    let cores = 37u32;
    let out = Buffer::new(dev.clone(), per * cores as u64, DType::I32, Default::default()).unwrap();
    for _ in 0..20 {
        prog.call(&[&out], &[per as i64, 0], [cores, 1, 1], [1; 3], true).unwrap();
    }
    let mut got = vec![0u8; out.nbytes() as usize];
    out.copy_out(&mut got).unwrap();
    for (idx, c) in got.chunks(4).enumerate() {
        let mut x = (idx as u32).wrapping_mul(2654435761);
        for _ in 0..64 {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
        }
        assert_eq!(i32::from_le_bytes(c.try_into().unwrap()), (x >> 1) as i32, "element {idx}");
    }
}

#[test]
fn copies_stay_inside_device_memory() {
    let dev = CpuDevice::new("CPU", 1).unwrap();
    let dyn_dev: Arc<dyn Device> = dev.clone();
    let a = Buffer::new(dyn_dev.clone(), 64, DType::U8, Default::default()).unwrap();
    let b = Buffer::new(dyn_dev.clone(), 64, DType::U8, Default::default()).unwrap();
    a.copy_in(&[7u8; 64]).unwrap();
    let hcq = dev.soft().engine();
    let mut q = hcq.queue().unwrap();
    q.copy(b.device_addr().unwrap(), a.device_addr().unwrap(), 64).unwrap();
    submit!(hcq, 1, &mut q).unwrap();
    hcq.synchronize().unwrap();
    let mut out = [0u8; 64];
    b.copy_out(&mut out).unwrap();
    assert_eq!(out, [7u8; 64]);
    // a copy out of bounds of the allocation faults the device with a clear error
    let mut q = hcq.queue().unwrap();
    q.copy(b.device_addr().unwrap(), a.device_addr().unwrap(), 1 << 20).unwrap();
    submit!(hcq, 1, &mut q).unwrap();
    let e = hcq.synchronize().unwrap_err();
    assert!(matches!(e.root(), Error::OutOfBounds { what: "CPU copy: not device memory", .. }), "{e}");
}

#[test]
fn bad_objects_and_argument_counts_are_errors() {
    let dev = CpuDevice::new("CPU", 1).unwrap();
    assert!(load!(dev, b"not an elf", "x", 1, None).is_err());
    let o = obj("chain100", "prog_000_E_4_4");
    assert!(load!(dev, &o, "no_such_symbol", 2, None).is_err());
    assert!(matches!(load!(dev, &o, "E_4_4", 64, None), Err(Error::Unsupported { .. })));
    assert!(matches!(load!(dev, &o, "E_4_4", 2, Some(2)), Err(Error::OutOfBounds { .. })));
    let p = dev
        .load_program(&image(
            "E_4_4",
            o,
            16,
            &[(None, DType::F32, ParamKind::Buffer), (None, DType::F32, ParamKind::Buffer)],
        ))
        .unwrap();
    let one = Buffer::new(dev.clone(), 4, DType::F32, Default::default()).unwrap();
    assert!(matches!(p.call(&[&one], &[], [1; 3], [1; 3], true), Err(Error::Mismatch { .. })));
    // 4 floats for parameters declared 16: refused before the kernel runs (it would read and
    // write 64 bytes through each)
    let e = p.call(&[&one, &one], &[], [1; 3], [1; 3], true).unwrap_err();
    assert!(matches!(e.root(), Error::OutOfBounds { len: 64, limit: 16, .. }), "{e}");
    // a buffer parameter without a shape cannot be checked: refused at load
    let mut unshaped =
        image("E_4_4", obj("chain100", "prog_000_E_4_4"), 16, &[(None, DType::F32, ParamKind::Buffer); 2]);
    unshaped.signature[1].shape.clear();
    assert!(matches!(dev.load_program(&unshaped), Err(Error::InvalidArgument { value: 1, .. })));
}

#[test]
fn core_id_launches_repeat_correctly_on_a_one_core_device() {
    // the inline path (no workers) must restart the tid counter for every launch
    let dev = CpuDevice::new("CPU", 1).unwrap();
    let prog = dev
        .load_program(&image(
            "fill",
            obj("coreid", "fill"),
            64,
            &[
                (None, DType::I32, ParamKind::Buffer),
                (Some("n"), DType::I32, ParamKind::Value),
                (Some("core_id"), DType::I32, ParamKind::Value),
            ],
        ))
        .unwrap();
    let out = Buffer::new(dev.clone(), 64, DType::I32, Default::default()).unwrap();
    for round in 0..3 {
        out.copy_in(&[0u8; 256]).unwrap();
        prog.call(&[&out], &[16, 0], [4, 1, 1], [1; 3], true).unwrap();
        let mut got = vec![0u8; 256];
        out.copy_out(&mut got).unwrap();
        assert!(got.chunks(4).all(|c| c != [0, 0, 0, 0]), "round {round}: every tid ran");
    }
}

#[test]
fn exec_lists_are_checked_once_at_load_and_run_in_order() {
    use hcq_cpu::device::ExecLaunch;
    let dev = CpuDevice::new("CPU", 2).unwrap();
    let add = load!(dev, &obj("chain100", "prog_000_E_4_4"), "E_4_4", 2, None).unwrap();
    let fill = load!(dev, &obj("coreid", "fill"), "fill", 3, Some(2)).unwrap();
    let dyn_dev: Arc<dyn Device> = dev.clone();
    let buf = |n| Buffer::new(dyn_dev.clone(), n, DType::F32, Default::default()).unwrap();
    let (a, b, c) = (buf(16), buf(16), buf(4 * 8));
    a.copy_in(&[0u8; 64]).unwrap();
    let (pa, pb, pc) = (a.device_addr().unwrap(), b.device_addr().unwrap(), c.device_addr().unwrap());
    // a -> b -> a -> b (+1 each), then a core_id launch of 4 calls writing 8 ints each
    let launches = [
        ExecLaunch { kernel: add, args: &[pb, pa], calls: 1 },
        ExecLaunch { kernel: add, args: &[pa, pb], calls: 1 },
        ExecLaunch { kernel: add, args: &[pb, pa], calls: 1 },
        ExecLaunch { kernel: fill, args: &[pc, 8, 0], calls: 4 },
    ];
    // The buffers are kept until the list is unloaded below, after the device finished with it.
    // SAFETY: every pointer argument is a live buffer of this device.
    let list = unsafe { dev.load_exec_list(&launches) }.unwrap();
    let hcq = dev.soft().engine();
    let mut q = hcq.queue().unwrap();
    q.exec(list, 0, [1; 3], [1; 3]).unwrap();
    dev.soft().run_inline(0, |s| submit!(s, 0, &mut q)).unwrap();
    let mut out = vec![0u8; 64];
    b.copy_out(&mut out).unwrap();
    assert!(f32s(&out).iter().all(|&x| x == 3.0), "three adds ran in order: {:?}", f32s(&out));
    let mut ints = vec![0u8; 4 * 8 * 4];
    assert_eq!(c.nbytes(), 128);
    c.copy_out(&mut ints).unwrap();
    assert!(ints.chunks(4).all(|w| w != [0; 4]), "every tid of the core_id launch wrote its slice");

    // refused at load, naming the launch: unknown kernel, wrong argument count, core_id with no
    // call. A refused list never runs.
    let refused = |launches: &[ExecLaunch<'_>]| {
        // The lists are refused before anything could run them.
        // SAFETY: the pointer arguments are live buffers of this device.
        unsafe { dev.load_exec_list(launches) }.unwrap_err()
    };
    let e = refused(&[ExecLaunch { kernel: 99, args: &[], calls: 1 }]);
    assert!(e.to_string().contains("launch 0"), "{e}");
    let e = refused(&[launches[0], ExecLaunch { kernel: add, args: &[pa], calls: 1 }]);
    assert!(
        matches!(e.root(), Error::Mismatch { expected: 2, found: 1, .. }) && e.to_string().contains("launch 1"),
        "{e}"
    );
    let e = refused(&[ExecLaunch { kernel: fill, args: &[pc, 8, 0], calls: 0 }]);
    assert!(matches!(e.root(), Error::InvalidArgument { .. }), "{e}");

    // unloaded: a second unload and a run of the stale handle are errors (a device fault)
    dev.unload_exec_list(list).unwrap();
    assert!(dev.unload_exec_list(list).is_err());
    assert!(dev.unload_exec_list(add).is_err(), "a kernel handle is no exec list");
    let mut q = hcq.queue().unwrap();
    q.exec(list, 0, [1; 3], [1; 3]).unwrap();
    let e = dev.soft().run_inline(0, |s| submit!(s, 0, &mut q)).unwrap_err();
    assert!(matches!(e.root(), Error::InvalidArgument { what: "CPU exec: unknown exec-list handle", .. }), "{e}");
}
