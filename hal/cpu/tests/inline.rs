//! The thread-less runner (`hcq::soft::inline`) runs whole bundles on the host: kernels loaded
//! by the CPU backend's ELF loader, launched through the HCQ queue and command ring, and the
//! command processor driven by the submitting thread alone.
#![cfg(all(any(target_os = "linux", target_os = "macos"), any(target_arch = "x86_64", target_arch = "aarch64")))]
#![cfg(not(all(target_os = "macos", target_arch = "aarch64")))]

use hcq::error::{Error, Result};
use hcq::mmio::{HostRegion, MmioBus};
use hcq::signal::host_clock_ns;
use hcq::soft::inline::{Executor, InlineDevice, SoftConfig, SoftContext};
use hcq_bundle::hcqb::{self, Hcqb, LaunchRef};
use hcq_bundle::{Arch, v1};
use hcq_cpu::device::{MAX_ARGS, call_kernel};
use hcq_cpu::exec::{LoadedObject, default_resolver};
use hcq_cpu::model::compare;
use std::sync::Arc;
use std::thread::ThreadId;

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

/// Loaded kernels; records which thread ran them.
struct Kernels {
    objs: Vec<(LoadedObject, usize, Option<usize>)>,
    ran_on: std::sync::Mutex<Vec<ThreadId>>,
}

impl Executor for Kernels {
    fn exec(&self, ctx: &SoftContext, program: u64, kernargs: u64, global: [u32; 3], _: [u32; 3]) -> Result<()> {
        let (obj, nargs, core_id) = self
            .objs
            .get(program as usize)
            .ok_or(Error::InvalidArgument { what: "unknown program", value: program })?;
        let mut raw = [0u8; MAX_ARGS * 8];
        ctx.read_kernargs(kernargs, &mut raw[..nargs * 8])?;
        let mut args: Vec<u64> =
            raw[..nargs * 8].chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        self.ran_on.lock().unwrap().push(std::thread::current().id());
        let tids = if core_id.is_some() { global[0] as u64 } else { 1 };
        for tid in 0..tids {
            if let Some(slot) = core_id {
                args[*slot] = tid;
            }
            // SAFETY: the kernel was loaded with `nargs` arguments from its bundle, and the
            // arguments are views of this test's live buffers that the bundle validated.
            unsafe { call_kernel(obj.entry(), &args)? };
        }
        Ok(())
    }

    fn copy(&self, _: &SoftContext, dst: u64, src: u64, bytes: u64) -> Result<()> {
        // SAFETY: copy launches of a validated bundle stay inside its buffers, which live
        // until the run ends.
        unsafe { core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes as usize) };
        Ok(())
    }
}

/// Run every launch of `name` (from examples/) once with the inline runner; returns the
/// number of outputs that matched the expected bytes and the number of kernel calls.
fn run_example(name: &str) -> (usize, usize) {
    let model = v1::import_dir(hcq_testkit::example(name)).unwrap();
    let bytes = hcqb::write(&model).unwrap();
    let file = Hcqb::parse(&bytes).unwrap();
    let arch = Arch::host().unwrap();
    // buffers: 64-byte aligned host memory with the bundle's starting bytes
    let bufs: Vec<HostRegion> = file
        .buffers()
        .map(|b| {
            let r = HostRegion::new(b.nbytes.max(1).div_ceil(16) as usize * 16, 64).unwrap();
            if let Some(d) = b.initial {
                r.write_bytes(0, d).unwrap();
            }
            r
        })
        .collect();
    let objs = file
        .programs()
        .map(|p| {
            let obj =
                LoadedObject::load(p.object(arch).unwrap(), hcq_cpu::Machine::host(), p.symbol, &default_resolver)
                    .unwrap();
            (obj, p.n_params(), p.core_id_arg.map(|s| s as usize))
        })
        .collect();
    let exec = Arc::new(Kernels { objs, ran_on: Default::default() });
    let dev = InlineDevice::new("CPU-INLINE", &SoftConfig::compact(), exec.clone(), host_clock_ns).unwrap();
    let hcq = dev.engine();
    let mut q = hcq.queue().unwrap();
    let mut calls = 0;
    let mut s = hcq.lock();
    for l in file.launches() {
        match l {
            LaunchRef::Kernel(k) => {
                let mut argv: Vec<u8> = Vec::new();
                for a in k.args() {
                    argv.extend((bufs[a.buffer as usize].addr() + a.offset).to_le_bytes());
                }
                for v in k.vals() {
                    argv.extend((v.unwrap_or(0) as u64).to_le_bytes());
                }
                let ka = s.kernargs(&argv, argv.len().max(8) as u64, 8).unwrap();
                q.exec(u64::from(k.program), ka, k.global_size, k.local_size).unwrap();
                calls += 1;
            }
            LaunchRef::Copy { dst, src } => {
                let (d, sr) =
                    (bufs[dst.buffer as usize].addr() + dst.offset, bufs[src.buffer as usize].addr() + src.offset);
                q.copy(d, sr, dst.nbytes).unwrap();
            }
        }
    }
    let v = submit!(s, 0, &mut q).unwrap();
    drop(s);
    assert_eq!(
        hcq.timeline().completed(),
        hcq::stamp::Stamp::ZERO,
        "nothing ran before the submitter drove the device"
    );
    dev.run_until(v).unwrap();
    let me = std::thread::current().id();
    let ran_on = exec.ran_on.lock().unwrap();
    assert_eq!(ran_on.len(), calls);
    assert!(ran_on.iter().all(|t| *t == me), "every kernel ran on the submitting thread");
    let mut matched = 0;
    for o in file.outputs() {
        let Some(exp) = o.expected else { continue };
        let mut got = vec![0u8; o.view.nbytes as usize];
        bufs[o.view.buffer as usize].read_bytes(o.view.offset as usize, &mut got).unwrap();
        let (bad, max) = compare(o.view.dtype, &got, exp, false);
        assert_eq!(bad, 0, "{name}: output differs from the expected bytes (max |diff| {max})");
        matched += 1;
    }
    (matched, calls)
}

#[test]
fn the_sample_bundles_run_on_the_submitting_thread_with_the_inline_runner() {
    assert_eq!(run_example("mlp"), (1, 3));
    assert_eq!(run_example("chain100"), (1, 100));
    assert_eq!(run_example("wide"), (2, 6));
    let (matched, _) = run_example("elementwise");
    assert_eq!(matched, 1);
}
