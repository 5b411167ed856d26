//! Entry, stack, FP/SIMD, exception vectors.
//!
//! `_start` (the ELF entry, inside the first entry of the vector table, which is linked first,
//! at 0x4008_0000) parks every core but core 0, sets the boot stack,
//! enables FP/SIMD (`CPACR_EL1.FPEN = 0b11`, Arm ARM D19.2.30: rustc emits SIMD even for plain
//! code, and QEMU starts the guest with FP trapped), installs the vector table, zeroes `.bss`
//! and calls `rust_main`. Nothing here touches an atomic: the MMU is still off, so all memory
//! is Device memory, where exclusives are not guaranteed to work.
//!
//! The vector table (Arm ARM D1.10.2: 16 entries of 0x80 bytes, 2 KiB aligned) sends every
//! exception to [`exception`] on a stack of its own, which prints the exception class,
//! ESR/FAR/ELR and exits non-zero through semihosting. Nothing returns from an exception: the
//! image never enables interrupts, so any exception is a fault.

use crate::{semihosting, uart};
use core::arch::global_asm;
use core::fmt::Write;

global_asm!(
    r#"
    .section .text.vectors, "ax"
    .balign 2048
    .global __vectors
__vectors:
    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    // entry n at its fixed offset; an entry longer than 0x80 bytes fails to assemble
    .org __vectors + \n * 0x80
    ldr   x1, =_exc_stack_top
    mov   sp, x1
    mov   x0, #\n
    b     hcq_board_exception
    .if \n == 0
    // `_start` in the rest of the first entry (32 instructions; its stub takes 4): no code
    // space is spent on padding
    .global _start
_start:
    mrs   x0, mpidr_el1
    and   x0, x0, #0xff
    cbnz  x0, 2f
    ldr   x0, =_stack_top
    mov   sp, x0
    mov   x0, #(3 << 20)
    msr   cpacr_el1, x0
    isb
    ldr   x0, =__vectors
    msr   vbar_el1, x0
    isb
    ldr   x0, =__bss_start
    ldr   x1, =__bss_end
1:  cmp   x0, x1
    b.hs  3f
    str   xzr, [x0], #8
    b     1b
3:  bl    rust_main
2:  wfe
    b     2b
    .endif
    .endr
"#
);

/// Exception class names (Arm ARM D19.2.41, ESR_ELx.EC) for the classes a fault can show.
fn class_name(ec: u64) -> &'static str {
    match ec {
        0x00 => "unknown reason (undefined instruction)",
        0x01 => "WFI/WFE trap",
        0x07 => "FP/SIMD access trap",
        0x0e => "illegal execution state",
        0x15 => "SVC",
        0x18 => "MSR/MRS trap",
        0x20 => "instruction abort (lower EL)",
        0x21 => "instruction abort (same EL)",
        0x22 => "PC alignment fault",
        0x24 => "data abort (lower EL)",
        0x25 => "data abort (same EL)",
        0x26 => "SP alignment fault",
        0x2c => "floating-point exception",
        0x2f => "SError",
        0x3c => "BRK",
        _ => "other",
    }
}

/// The fault status code of an abort (ISS[5:0], DFSC/IFSC, Arm ARM D19.2.41).
fn fault_status(esr: u64) -> (&'static str, Option<u64>) {
    let fsc = esr & 0x3f;
    let level = Some(fsc & 3);
    match fsc >> 2 {
        0b0000 => ("address size fault", level),
        0b0001 => ("translation fault", level),
        0b0010 => ("access flag fault", level),
        0b0011 => ("permission fault", level),
        _ if fsc == 0b010000 => ("synchronous external abort", None),
        _ if fsc == 0b100001 => ("alignment fault", None),
        _ => ("other fault status", None),
    }
}

/// Every vector lands here with its index (0..16) on the exception stack.
#[unsafe(no_mangle)]
extern "C" fn hcq_board_exception(vector: u64) -> ! {
    let (esr, far, elr): (u64, u64, u64);
    // SAFETY: reading the EL1 syndrome registers has no side effects.
    unsafe {
        core::arch::asm!(
            "mrs {0}, esr_el1",
            "mrs {1}, far_el1",
            "mrs {2}, elr_el1",
            out(reg) esr, out(reg) far, out(reg) elr,
            options(nomem, nostack),
        )
    };
    let origin = ["current EL with SP_EL0", "current EL with SP_ELx", "lower EL (AArch64)", "lower EL (AArch32)"];
    let kind = ["synchronous", "IRQ", "FIQ", "SError"];
    // PANIC: never: `vector < 16` (the table has 16 entries), so both indices are below 4.
    let (o, k) = (origin[(vector / 4) as usize & 3], kind[(vector % 4) as usize]);
    let ec = (esr >> 26) & 0x3f;
    let mut u = uart::Uart::get();
    let _ = writeln!(
        u,
        "EXCEPTION: {k} from {o}: class {ec:#04x} {}, ESR {esr:#010x}, FAR {far:#x}, ELR {elr:#x}",
        class_name(ec)
    );
    if matches!(ec, 0x20 | 0x21 | 0x24 | 0x25) {
        match fault_status(esr) {
            (what, Some(level)) => {
                let _ = writeln!(u, "EXCEPTION: {what}, level {level}, at address {far:#x}");
            }
            (what, None) => {
                let _ = writeln!(u, "EXCEPTION: {what} at address {far:#x}");
            }
        }
    }
    semihosting::exit(3)
}
