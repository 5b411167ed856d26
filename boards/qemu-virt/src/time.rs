//! Time from the generic timer's virtual counter (Arm ARM D11.2: CNTVCT_EL0 counts at
//! CNTFRQ_EL0 Hz; QEMU `virt` runs it at 62.5 MHz or 1 GHz depending on the version).

use core::arch::asm;

fn counter() -> (u64, u64) {
    let (cnt, frq): (u64, u64);
    // SAFETY: reading the counter and its frequency has no side effects; the ISB keeps the
    // counter read from being taken early (Arm ARM D11.2.2).
    unsafe { asm!("isb", "mrs {0}, cntvct_el0", "mrs {1}, cntfrq_el0", out(reg) cnt, out(reg) frq, options(nostack)) };
    (cnt, frq.max(1))
}

/// Nanoseconds since the counter started (power-on of the emulated machine).
pub fn now_ns() -> u64 {
    let (cnt, frq) = counter();
    // whole seconds and the remainder apart, so nothing overflows for a counter below 2^32 Hz
    // (the remainder times 1e9 stays under 2^62) and no 128-bit division is linked in
    (cnt / frq) * 1_000_000_000 + (cnt % frq) * 1_000_000_000 / frq
}

/// Microseconds since the counter started.
pub fn now_us() -> u64 {
    now_ns() / 1000
}
