//! The lifetime rule on the SIM device, with its latency injection making kernels slow:
//! memory the device may still use is never reused, and host copies wait for the device.

use hcq::buffer::Buffer;
use hcq::device::Device;
use hcq::dtype::DType;
use hcq::error::Error;
use hcq::program::{Param, ParamKind, ProgramImage};
use hcq_sim::SimHandle;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Bytes of every buffer here.
const N: usize = 4096;
/// What the `fill` kernel writes.
const FILLED: u8 = 0xAB;
/// The host's guard pattern.
const GUARD: u8 = 0x5A;

fn sim(name: &str) -> (Arc<SimHandle>, Arc<dyn Device>) {
    let h = Arc::new(SimHandle::open(name).unwrap());
    let dev: Arc<dyn Device> = h.clone();
    (h, dev)
}

/// A program taking one buffer.
fn image(name: &str) -> ProgramImage {
    ProgramImage {
        name: name.into(),
        target: "SIM".into(),
        binary: Arc::from(&[][..]),
        entry: name.into(),
        signature: vec![Param {
            name: None,
            slot: 0,
            dtype: DType::U8,
            shape: vec![N as u64],
            kind: ParamKind::Buffer,
        }],
    }
}

fn arg(args: &[u8]) -> u64 {
    u64::from_le_bytes(args[..8].try_into().unwrap())
}

/// `fill`: store `FILLED` over the `N` bytes at its buffer argument, as a kernel writes through
/// its pointer.
fn register_fill(h: &Arc<SimHandle>) {
    let w: Weak<SimHandle> = Arc::downgrade(h);
    h.register_named("fill", 8, move |args, _, _| {
        let h = w.upgrade().ok_or(Error::Unsupported { what: "device gone", value: 0 })?;
        h.sim().write_memory(arg(args), &[FILLED; N])
    })
    .unwrap();
}

/// `peek`: read the first byte at its buffer argument into `seen`.
fn register_peek(h: &Arc<SimHandle>, seen: Arc<AtomicU8>) {
    let w: Weak<SimHandle> = Arc::downgrade(h);
    h.register_named("peek", 8, move |args, _, _| {
        let h = w.upgrade().ok_or(Error::Unsupported { what: "device gone", value: 0 })?;
        let mut b = [0u8; 1];
        h.sim().read_memory(arg(args), &mut b)?;
        seen.store(b[0], Ordering::Release);
        Ok(())
    })
    .unwrap();
}

fn buffer(dev: &Arc<dyn Device>) -> Buffer {
    Buffer::new(dev.clone(), N as u64, DType::U8, Default::default()).unwrap()
}

#[test]
fn a_buffer_freed_under_a_slow_kernel_is_not_reused_until_the_kernel_ends() {
    let (h, dev) = sim("SIM");
    register_fill(&h);
    let fill = h.load_program(&image("fill")).unwrap();
    let a = buffer(&dev);
    let a_addr = a.device_addr().unwrap();
    // the device holds the launch until the host is done below (then runs it slowly), so the
    // kernel writes `a` after its last handle is gone whatever the machine's load
    h.sim().faults().stop_reading(true);
    fill.call(&[&a], &[], [1; 3], [1; 3], false).unwrap();
    drop(a);
    let pending = (dev.allocator().pending_frees(), dev.allocator().pending_bytes());
    // a new buffer of the same size, with a guard pattern, while the kernel has not run
    let b = buffer(&dev);
    b.copy_in(&[GUARD; N]).unwrap();
    let b_addr = b.device_addr().unwrap();
    h.sim().faults().set_latency(Duration::from_millis(20));
    h.sim().faults().stop_reading(false);
    dev.synchronize().unwrap();
    h.sim().faults().clear();
    let mut out = vec![0u8; N];
    b.copy_out(&mut out).unwrap();
    assert!(out.iter().all(|&x| x == GUARD), "the kernel wrote into freed memory that was handed out again");
    assert_ne!(b_addr, a_addr);
    assert_eq!(pending, (1, N as u64), "the freed block waited for the kernel");
    // once the device passed the kernel, the block comes back (to the cache) for reuse
    assert_eq!(dev.allocator().retire(), 1);
    assert_eq!(dev.allocator().pending_bytes(), 0);
    let c = buffer(&dev);
    assert_eq!(c.device_addr().unwrap(), a_addr, "the retired block is reused");
}

#[test]
fn copy_out_waits_for_the_kernel_that_writes_the_buffer() {
    let (h, dev) = sim("SIM");
    register_fill(&h);
    let fill = h.load_program(&image("fill")).unwrap();
    let a = buffer(&dev);
    a.copy_in(&[0; N]).unwrap();
    h.sim().faults().set_latency(Duration::from_millis(20));
    fill.call(&[&a], &[], [1; 3], [1; 3], false).unwrap();
    assert!(!a.last_write().is_zero());
    let mut out = vec![0u8; N];
    a.copy_out(&mut out).unwrap();
    h.sim().faults().clear();
    assert!(out.iter().all(|&x| x == FILLED), "copy_out read the buffer before its writer ran");
}

#[test]
fn copy_in_waits_for_the_kernel_that_reads_the_buffer() {
    let (h, dev) = sim("SIM");
    let seen = Arc::new(AtomicU8::new(0));
    register_peek(&h, seen.clone());
    let peek = h.load_program(&image("peek")).unwrap();
    let a = buffer(&dev);
    a.copy_in(&[1; N]).unwrap();
    h.sim().faults().set_latency(Duration::from_millis(20));
    peek.call(&[&a], &[], [1; 3], [1; 3], false).unwrap();
    a.copy_in(&[2; N]).unwrap();
    dev.synchronize().unwrap();
    h.sim().faults().clear();
    assert_eq!(seen.load(Ordering::Acquire), 1, "copy_in overwrote the buffer under a kernel reading it");
}

#[test]
fn a_buffer_of_another_device_is_refused() {
    let (h, _dev) = sim("SIM");
    let (_h2, other) = sim("SIM:1");
    register_fill(&h);
    let fill = h.load_program(&image("fill")).unwrap();
    let theirs = buffer(&other);
    let e = fill.call(&[&theirs], &[], [1; 3], [1; 3], true).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { value: 0, .. }), "{e:?}");
    assert!(!theirs.is_allocated(), "nothing was allocated or launched");
}

#[test]
fn a_launch_whose_wait_fails_still_keeps_its_buffers_alive() {
    let (h, dev) = sim("SIM");
    register_fill(&h);
    let fill = h.load_program(&image("fill")).unwrap();
    let hcq = h.sim().engine();
    hcq.timeline().set_policy(hcq::signal::WaitPolicy::with_timeout_ms(30));
    let a = buffer(&dev);
    a.allocate().unwrap();
    // the device stops: the launch is submitted, and its wait times out
    h.sim().faults().stop_reading(true);
    let e = fill.call(&[&a], &[], [1; 3], [1; 3], true).unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
    assert_eq!(a.last_write(), hcq.timeline().last_submitted(), "marked up to everything submitted");
    drop(a);
    assert_eq!(dev.allocator().pending_frees(), 1, "the memory waits for the launch that may still run");
    // after a reset the device runs it, and the memory comes back
    hcq.timeline().clear_hung();
    hcq.timeline().set_policy(hcq::signal::WaitPolicy::default());
    h.sim().faults().stop_reading(false);
    dev.synchronize().unwrap();
    assert_eq!(dev.allocator().retire(), 1);
}
