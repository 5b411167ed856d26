//! `vkgsl-probe SCENARIO`: a small program the crate's tests run with `libhcq_vkgsl.so`
//! preloaded (`tests/descriptors.rs`), exercising the C boundary as a client process does: the
//! descriptors of `/dev/kgsl-3d0` through `close`, `dup*`, `fcntl`, `close_range`, raw system
//! calls, and `fork` from a multi-threaded process. It does not link the library (only the
//! preload brings it in). Each scenario prints what it saw and exits 0 when it held, 1 (with
//! `FAIL: ...` on stderr) when it did not, 2 on a usage error.
//!
//! Scenarios: `dup`, `dup2`, `close-range`, `closefrom`, `raw-close`, `fork-stress FORKS`.

use hcq_qcom::kgsl::uapi::{DevInfo, DeviceGetProperty, IOCTL_DEVICE_GETPROPERTY, PROP_DEVICE_INFO};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use zerocopy::{FromZeros, IntoBytes};

fn fail(what: String) -> ! {
    eprintln!("FAIL: {what}");
    std::process::exit(1)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn open_node() -> i32 {
    // SAFETY: open with a NUL-terminated path; returns a descriptor or -1.
    let fd = unsafe { libc::open(c"/dev/kgsl-3d0".as_ptr(), libc::O_RDWR) };
    if fd < 0 {
        fail(format!("open /dev/kgsl-3d0: errno {} (is libhcq_vkgsl.so preloaded?)", errno()));
    }
    fd
}

/// `GETPROPERTY(DEVICE_INFO)` on `fd`: the chip id, or the errno.
fn chip_id(fd: i32) -> Result<u32, i32> {
    let mut d = DevInfo::new_zeroed();
    let mut p = DeviceGetProperty {
        ty: PROP_DEVICE_INFO,
        _pad: 0,
        value: d.as_mut_bytes().as_mut_ptr() as u64,
        sizebytes: size_of::<DevInfo>() as u64,
    };
    // SAFETY: the KGSL request with a pointer to its argument struct, which points at `d`.
    let r = unsafe { libc::ioctl(fd, u64::from(IOCTL_DEVICE_GETPROPERTY), &mut p as *mut DeviceGetProperty) };
    if r == 0 { Ok(d.chip_id) } else { Err(errno()) }
}

fn expect_device(fd: i32, what: &str) {
    match chip_id(fd) {
        Ok(0x0603_0001) => println!("{what}: descriptor {fd} reaches the virtual Adreno 630"),
        r => fail(format!("{what}: GETPROPERTY on descriptor {fd}: {r:?}")),
    }
}

/// Descriptors of this process open on a device's memfd (the client's and each device's own).
fn memfds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("memfd:hcq-vkgsl")))
                .count()
        })
        .unwrap_or(0)
}

fn expect_no_device(what: &str) {
    match memfds() {
        0 => println!("{what}: no device left"),
        n => fail(format!("{what}: {n} descriptors of device memfds still open (a device stayed alive)")),
    }
}

/// A pipe with `n` bytes written into it: (read end, write end).
fn pipe_with(n: usize) -> (i32, i32) {
    let mut p = [0i32; 2];
    // SAFETY: pipe with a two-element array.
    if unsafe { libc::pipe(p.as_mut_ptr()) } != 0 {
        fail(format!("pipe: errno {}", errno()));
    }
    let bytes = vec![7u8; n];
    // SAFETY: writes `n` bytes from our buffer to the pipe's write end.
    if unsafe { libc::write(p[1], bytes.as_ptr().cast(), n) } != n as isize {
        fail(format!("write to the pipe: errno {}", errno()));
    }
    (p[0], p[1])
}

/// `FIONREAD` on `fd` (a pipe holding `n` bytes) must be libc's answer, not the device's.
fn expect_fionread(fd: i32, n: i32, what: &str) {
    let mut count: libc::c_int = -1;
    // SAFETY: FIONREAD with a pointer to an int.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut count as *mut libc::c_int) };
    if r != 0 || count != n {
        fail(format!(
            "{what}: ioctl(FIONREAD) on the pipe at {fd}: {r} (errno {}), count {count}, want 0 and {n}",
            errno()
        ));
    }
    println!("{what}: FIONREAD on the pipe at {fd}: {count} bytes");
}

fn close(fd: i32) {
    // SAFETY: closes a descriptor this program opened.
    unsafe { libc::close(fd) };
}

/// `dup` and `fcntl(F_DUPFD_CLOEXEC)` of a device reach the same device, which lives until
/// its last descriptor closes.
fn dup() {
    let fd = open_node();
    // SAFETY: dup of our own descriptor.
    let a = unsafe { libc::dup(fd) };
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) of our own descriptor.
    let b = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
    if a < 0 || b < 10 {
        fail(format!("dup {a}, F_DUPFD_CLOEXEC {b}: errno {}", errno()));
    }
    expect_device(a, "dup");
    expect_device(b, "F_DUPFD_CLOEXEC");
    close(fd);
    expect_device(a, "dup after the original closed");
    close(a);
    expect_device(b, "F_DUPFD_CLOEXEC after both others closed");
    close(b);
    expect_no_device("all three closed");
}

/// `dup2` of a pipe over a device's descriptor: the number is the pipe's now.
fn dup2() {
    let fd = open_node();
    expect_device(fd, "open");
    let (r, w) = pipe_with(5);
    // SAFETY: dup2 of our own descriptors.
    if unsafe { libc::dup2(r, fd) } != fd {
        fail(format!("dup2: errno {}", errno()));
    }
    expect_fionread(fd, 5, "dup2 over the device");
    expect_no_device("dup2 over the device");
    // And the other way: dup3 of a device over a pipe's number reaches the device.
    let dev = open_node();
    // SAFETY: dup3 of our own descriptors.
    if unsafe { libc::dup3(dev, w, libc::O_CLOEXEC) } != w {
        fail(format!("dup3: errno {}", errno()));
    }
    expect_device(w, "dup3 of the device over the pipe's write end");
    close(dev);
    close(w);
    close(r);
    close(fd);
    expect_no_device("everything closed");
}

/// `close_range` (or `closefrom`) over a device's descriptor, then a pipe at its number.
fn close_range(from: bool) {
    let what = if from { "closefrom" } else { "close_range" };
    let fd = open_node();
    expect_device(fd, "open");
    let r = if from {
        // glibc has closefrom since 2.34; looked up as a client's dynamic call would find it
        // (the preloaded library's first).
        // SAFETY: dlsym with a NUL-terminated name; it only looks the symbol up.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"closefrom".as_ptr()) };
        if p.is_null() {
            fail("closefrom: no such function in this process".into());
        }
        // SAFETY: `p` is `closefrom`, `void closefrom(int)`.
        let closefrom = unsafe { std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn(libc::c_int)>(p) };
        // SAFETY: closes our own descriptors (the device's and anything above it).
        unsafe { closefrom(fd) };
        0
    } else {
        // SAFETY: closes our own descriptor.
        unsafe { libc::close_range(fd as u32, fd as u32, 0) }
    };
    if r != 0 {
        fail(format!("{what}: errno {}", errno()));
    }
    expect_no_device(what);
    let (pr, pw) = pipe_with(3);
    if pr != fd {
        fail(format!("{what}: the pipe got descriptor {pr}, not the closed device's {fd}"));
    }
    expect_fionread(pr, 3, what);
    close(pr);
    close(pw);
}

/// A raw `close` system call (libc never sees it), then a pipe at the device's number.
fn raw_close() {
    let fd = open_node();
    expect_device(fd, "open");
    // SAFETY: the close system call on our own descriptor.
    if unsafe { libc::syscall(libc::SYS_close, fd) } != 0 {
        fail(format!("SYS_close: errno {}", errno()));
    }
    let (pr, pw) = pipe_with(4);
    if pr != fd {
        fail(format!("raw close: the pipe got descriptor {pr}, not the closed device's {fd}"));
    }
    expect_fionread(pr, 4, "raw SYS_close then pipe");
    expect_no_device("raw SYS_close: the device went at the next ioctl on its number");
    close(pr);
    close(pw);
}

/// Threads open and close devices while the main thread forks `forks` children that each
/// close a few descriptors (one in ten opens a device first) and `_exit(0)`: every child must
/// exit within 10 s.
fn fork_stress(forks: usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let fd = open_node();
                    if n.is_multiple_of(8) {
                        let _ = chip_id(fd);
                    }
                    close(fd);
                    n += 1;
                }
                n
            })
        })
        .collect();
    // A device that stays open, whose descriptor the children close.
    let kept = open_node();
    let mut children = Vec::with_capacity(forks);
    for i in 0..forks {
        // SAFETY: fork; the child only calls close (async-signal-safe) and _exit, and one in
        // ten opens a device of its own first (the table's lock, which the fork handlers keep
        // free of other threads at the fork, and glibc's malloc, which is fork-safe).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            if i % 10 == 0 {
                // SAFETY: open with a NUL-terminated path, then close of what it returned.
                unsafe {
                    let fd = libc::open(c"/dev/kgsl-3d0".as_ptr(), libc::O_RDWR);
                    if fd < 0 {
                        libc::_exit(3);
                    }
                    libc::close(fd);
                }
            }
            for fd in [kept, 3, 4, 5, 6, 7, 8, 9, 200] {
                // SAFETY: close in the forked child, on descriptor numbers it may or may not have.
                unsafe { libc::close(fd) };
            }
            // SAFETY: ends the child without running the parent's atexit handlers.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            fail(format!("fork: errno {}", errno()));
        }
        children.push(pid);
    }
    stop.store(true, Ordering::Relaxed);
    let opened: u64 = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    // TIMEOUT: 10 s for all children to exit (each needs microseconds); a hung one is killed.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut hung = 0;
    let mut bad = 0;
    for pid in children {
        let mut status = 0;
        loop {
            // SAFETY: waitpid on our own child with a pointer to an int.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                    bad += 1;
                }
                break;
            }
            if Instant::now() >= deadline {
                hung += 1;
                // SAFETY: kill and reap our own hung child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    println!("fork-stress: {forks} children, {hung} hung, {bad} failed; the threads opened {opened} devices meanwhile");
    if hung > 0 || bad > 0 || opened == 0 {
        fail(format!("fork-stress: {hung} of {forks} children hung, {bad} exited badly, {opened} devices opened"));
    }
    expect_device(kept, "the parent's device after the forks");
    close(kept);
    expect_no_device("fork-stress done");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("dup") => dup(),
        Some("dup2") => dup2(),
        Some("close-range") => close_range(false),
        Some("closefrom") => close_range(true),
        Some("raw-close") => raw_close(),
        Some("fork-stress") => match args.get(2).and_then(|n| n.parse().ok()) {
            Some(n) => fork_stress(n),
            None => {
                eprintln!("usage: vkgsl-probe fork-stress FORKS");
                std::process::exit(2)
            }
        },
        _ => {
            eprintln!("usage: vkgsl-probe dup|dup2|close-range|closefrom|raw-close|fork-stress FORKS");
            std::process::exit(2)
        }
    }
}
