//! A SIM device in a forked child (Python's multiprocessing forks on Linux): its command
//! processors are threads of the parent, which the child does not have, so a submission in the
//! child must fail at once with an error that says so, not wait 30 s and call the device hung;
//! the parent's device keeps working. One test in its own binary, so that no other test's
//! thread holds a lock when the process forks.

use hcq::error::Error;
use hcq::mmio::{MmioBus, Width};
use hcq_sim::SimDevice;
use std::time::{Duration, Instant};

// The three libc calls this needs (the crate has no libc dependency).
unsafe extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn kill(pid: i32, sig: i32) -> i32;
    fn _exit(code: i32) -> !;
}
const WNOHANG: i32 = 1;
const SIGKILL: i32 = 9;

/// Store `val` at word 0 of a fresh buffer through an exec on `dev` and wait for it: the
/// result of the wait, and the word.
fn store(dev: &SimDevice, prog: u64, mem: &hcq::mmio::HostRegion, val: u64) -> Result<u64, Error> {
    let ka = dev.engine().lock().kernargs(&val.to_le_bytes(), 8, 16)?;
    let mut q = dev.engine().queue()?;
    q.exec(prog, ka, [1; 3], [1; 3])?;
    // SAFETY: the exec runs this test's host function, which writes only the buffer the test
    // keeps alive until the wait below returns.
    let v = unsafe { dev.engine().submit(0, &mut q) }?;
    dev.engine().wait(v)?;
    mem.read(0, Width::U64)
}

#[test]
// CI runs the aarch64 build of this crate's tests under qemu-user, which aborts a forked child
// of a multi-threaded guest in ways of its own (see sim/adreno/tests/fork.rs): the emulator's
// limit; the x86-64 run covers the behaviour.
#[cfg_attr(target_arch = "aarch64", ignore = "qemu-user aborts a forked child of a multi-threaded guest")]
fn a_submission_in_a_forked_child_fails_at_once_and_the_parent_keeps_working() {
    let dev = SimDevice::with_defaults("SIM").unwrap();
    let mem = dev.alloc(64).unwrap();
    let target = mem.clone();
    let prog = dev
        .register(8, move |args, _, _| target.write(0, Width::U64, u64::from_le_bytes(args[..8].try_into().unwrap())))
        .unwrap();
    assert_eq!(store(&dev, prog, &mem, 11).unwrap(), 11, "parent, before the fork");
    // a call in flight at the fork: it takes 300 ms in the parent, and never ends in the child
    dev.faults().set_latency(Duration::from_millis(300));
    let ka = dev.engine().lock().kernargs(&12u64.to_le_bytes(), 8, 16).unwrap();
    let mut q = dev.engine().queue().unwrap();
    q.exec(prog, ka, [1; 3], [1; 3]).unwrap();
    // SAFETY: as in `store`: the test's host function writes only `mem`, alive until the end.
    let in_flight = unsafe { dev.engine().submit(0, &mut q) }.unwrap();
    // SAFETY: the child only builds and submits a queue (allocation, which glibc supports after
    // fork, and the locks of this device, which no thread holds: the parent's CP threads sleep
    // outside them) and leaves with _exit; this binary has no other test.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let t0 = Instant::now();
        // the wait for the parent's call ends at once with the device's fault
        if !matches!(dev.engine().wait(in_flight), Err(Error::DeviceUnavailable { .. })) {
            // SAFETY: as below.
            unsafe { _exit(5) };
        }
        let r = store(&dev, prog, &mem, 22);
        let quick = t0.elapsed() < Duration::from_secs(5);
        let code = match r {
            Err(Error::DeviceUnavailable { reason, .. }) if reason.contains("fork") && quick => {
                // a second call fails at once too (the device's fault is recorded)
                match store(&dev, prog, &mem, 33) {
                    Err(Error::DeviceUnavailable { .. }) if t0.elapsed() < Duration::from_secs(5) => 0,
                    _ => 4,
                }
            }
            Err(_) => 2,
            Ok(_) => 3,
        };
        // dropping the device in the child does not join the parent's threads (which panicked)
        let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(dev))) {
            Ok(()) => code,
            Err(_) => 6,
        };
        // SAFETY: _exit ends the child without running the parent's atexit handlers or the test
        // harness's teardown.
        unsafe { _exit(code) };
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let mut st = 0;
        // SAFETY: waits for our own child, writing its status into `st`.
        let r = unsafe { waitpid(pid, &mut st, WNOHANG) };
        if r == pid {
            break Some(st);
        }
        if Instant::now() > deadline {
            // SAFETY: kills our own child, hung past the deadline.
            unsafe { kill(pid, SIGKILL) };
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let st = status.expect("the child's submission hung (waiting for the parent's command-processor threads)");
    // exited normally (low 7 bits 0) with code 0
    assert!(
        st & 0x7f == 0 && (st >> 8) & 0xff == 0,
        "child failed: status {st:#x} (exit code 2: another error, 3: ran, 4: second call, 5: the wait, 6: the drop)"
    );
    dev.engine().wait(in_flight).expect("the parent's call in flight ends in the parent");
    dev.faults().set_latency(Duration::ZERO);
    assert_eq!(store(&dev, prog, &mem, 44).unwrap(), 44, "parent, after the fork");
}
