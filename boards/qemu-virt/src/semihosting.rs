//! Arm semihosting (QEMU `-semihosting`): exit with a status, write to a host file.
//!
//! Calls are `HLT #0xF000` with the operation in `w0` and a pointer to its argument block in
//! `x1`; the result comes back in `x0` ("Semihosting for AArch32 and AArch64", Arm IHI 0080,
//! section 5: SYS_OPEN 0x01, SYS_WRITE 0x05, SYS_EXIT 0x18). Without `-semihosting` the
//! instruction is undefined and the guest takes an exception.

const SYS_OPEN: u32 = 0x01;
const SYS_WRITE: u32 = 0x05;
const SYS_EXIT: u32 = 0x18;
/// ADP_Stopped_ApplicationExit: with SYS_EXIT's sub-code, QEMU exits with that status.
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;
/// SYS_OPEN mode "wb" (IHI 0080 table 5-3).
const MODE_WB: u64 = 5;

fn call(op: u32, block: &[u64]) -> i64 {
    let ret: i64;
    // SAFETY: a semihosting call reads only the argument block (and the buffers it points to,
    // which the callers keep alive for the call); QEMU returns in x0.
    unsafe {
        core::arch::asm!(
            "hlt #0xf000",
            inout("x0") u64::from(op) => ret,
            in("x1") block.as_ptr(),
            options(nostack),
        )
    };
    ret
}

/// End the emulation: QEMU exits with `code`.
pub fn exit(code: u32) -> ! {
    call(SYS_EXIT, &[ADP_STOPPED_APPLICATION_EXIT, u64::from(code)]);
    // only reached without -semihosting support for SYS_EXIT: stop here
    loop {
        core::hint::spin_loop();
    }
}

/// Open (create or truncate) host file `path` for writing; the handle, or `None`.
pub fn create(path: &str) -> Option<u64> {
    // the name must be NUL-terminated for some hosts; QEMU also takes the length
    let mut name = [0u8; 256];
    let n = path.len().min(name.len() - 1);
    name[..n].copy_from_slice(&path.as_bytes()[..n]);
    let h = call(SYS_OPEN, &[name.as_ptr() as u64, MODE_WB, n as u64]);
    // CAST: non-negative handles only.
    (h >= 0).then_some(h as u64)
}

/// Write `bytes` to an open host file; true when all were written.
pub fn write(handle: u64, bytes: &[u8]) -> bool {
    bytes.is_empty() || call(SYS_WRITE, &[handle, bytes.as_ptr() as u64, bytes.len() as u64]) == 0
}
