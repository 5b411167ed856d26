//! The C boundary in a client process: `vkgsl-probe` (`src/bin/probe.rs`) runs with
//! `libhcq_vkgsl.so` preloaded and checks what happens to device descriptors through `dup`,
//! `dup2`/`dup3`, `fcntl(F_DUPFD_CLOEXEC)`, `close_range`, `closefrom`, a raw `close` system call,
//! and `fork` from a multi-threaded process.
//!
//! The library is `$HCQ_VKGSL_LIB` when set, else built once with
//! `cargo build --release -p hcq-vkgsl --lib` into `target/vkgsl-test` (`hcq_testkit::vkgsl_lib`,
//! as `hcq-cli`'s vkgsl test: the outer `cargo test` holds the lock of the usual target
//! directory, and does not refresh the crate's `.so` there). A build that fails fails the test.

use std::path::Path;
use std::process::Command;

fn lib() -> &'static Path {
    hcq_testkit::vkgsl_lib()
}

/// Run the probe's `scenario` under the library: its stdout, after asserting it succeeded.
fn probe(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vkgsl-probe"))
        .args(args)
        .env("LD_PRELOAD", lib())
        .output()
        .expect("run vkgsl-probe");
    let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "vkgsl-probe {args:?}: {:?}\nstdout:\n{so}\nstderr:\n{se}", out.status);
    so.into_owned()
}

#[test]
fn a_duplicate_of_a_device_reaches_the_same_device_until_the_last_one_closes() {
    let out = probe(&["dup"]);
    assert!(out.contains("F_DUPFD_CLOEXEC after both others closed: descriptor"), "{out}");
    assert!(out.contains("all three closed: no device left"), "{out}");
}

#[test]
fn dup2_over_a_device_descriptor_gives_the_number_to_the_new_file() {
    let out = probe(&["dup2"]);
    assert!(out.contains("dup2 over the device: FIONREAD on the pipe at"), "{out}");
    assert!(out.contains("dup3 of the device over the pipe's write end: descriptor"), "{out}");
}

#[test]
fn close_range_and_closefrom_close_devices() {
    let out = probe(&["close-range"]);
    assert!(out.contains("close_range: no device left") && out.contains("close_range: FIONREAD"), "{out}");
    let out = probe(&["closefrom"]);
    assert!(out.contains("closefrom: no device left") && out.contains("closefrom: FIONREAD"), "{out}");
}

#[test]
fn a_raw_close_syscall_then_a_pipe_at_the_number_gets_libcs_ioctl() {
    let out = probe(&["raw-close"]);
    assert!(out.contains("raw SYS_close then pipe: FIONREAD on the pipe at"), "{out}");
}

#[test]
fn forked_children_of_a_threaded_device_user_never_hang_in_close() {
    let out = probe(&["fork-stress", "3000"]);
    assert!(out.contains("fork-stress: 3000 children, 0 hung, 0 failed"), "{out}");
}
