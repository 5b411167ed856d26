//! MMU on with an identity map, before any lock or allocation.
//!
//! With the MMU off every data access is Device-nGnRnE, where exclusive loads/stores (the
//! atomics behind `spin` and the heap lock) are not guaranteed to work (Arm ARM B2.9.5), and the
//! caches are off. So `rust_main` calls [`enable`] first.
//!
//! Translation regime: EL1&0, TTBR0 only, 4 KiB granule, 39-bit input addresses
//! (`T0SZ = 25`), so the walk starts at level 1 and every level-1 entry maps a 1 GiB block
//! (Arm ARM D8.2). The map of QEMU `virt` (hw/arm/virt.c `base_memmap`):
//!
//! | VA = PA | block | attributes |
//! |---|---|---|
//! | 0x0000_0000..0x4000_0000 | flash, GIC, PL011, RTC, virtio-mmio, ... | Device-nGnRnE, never executable |
//! | 0x4000_0000..0x8000_0000 | RAM (the image, its stacks, the heap) | Normal, write-back cacheable, inner shareable |
//! | anything else | — | invalid: an access is a translation fault |
//!
//! RAM is executable at EL1 (kernels are loaded into the heap and run from there); it is not
//! W^X — a deliberate simplification of a single-image board.

use core::arch::asm;
use core::ptr::{addr_of_mut, write_volatile};

#[repr(C, align(4096))]
struct Table([u64; 512]);

/// The level-1 table (in `.bss`, zeroed by `_start`: every entry starts invalid).
static mut L1: Table = Table([0; 512]);

/// Block descriptor (Arm ARM D8.3.1): bits[1:0] = 0b01 at level 1.
const BLOCK: u64 = 0b01;
/// AttrIndx[4:2]: index into MAIR_EL1.
const fn attr(i: u64) -> u64 {
    i << 2
}
/// SH[9:8] = 0b11: inner shareable.
const INNER_SHAREABLE: u64 = 0b11 << 8;
/// AF[10]: access flag set (no access-flag faults).
const AF: u64 = 1 << 10;
/// PXN[53]: never executable at EL1.
const PXN: u64 = 1 << 53;
/// UXN[54]: never executable at EL0.
const UXN: u64 = 1 << 54;

/// MAIR_EL1 (Arm ARM D19.2.97): attribute 0 = Device-nGnRnE (0x00), attribute 1 = Normal
/// memory, inner and outer write-back, read- and write-allocate, non-transient (0xff).
const MAIR: u64 = u64::from_le_bytes([0x00, 0xff, 0, 0, 0, 0, 0, 0]);
const ATTR_DEVICE: u64 = 0;
const ATTR_NORMAL: u64 = 1;

/// TCR_EL1 (Arm ARM D19.2.139): T0SZ = 25; IRGN0/ORGN0 = 0b01 (write-back, write-allocate
/// walks); SH0 = 0b11; TG0 = 0b00 (4 KiB); EPD1 = 1 (no TTBR1 walks); IPS = 0b010 (40-bit
/// physical addresses).
const TCR: u64 = 25 | 0b01 << 8 | 0b01 << 10 | 0b11 << 12 | 1 << 23 | 0b010 << 32;

/// SCTLR_EL1 bits (Arm ARM D19.2.118).
const SCTLR_M: u64 = 1 << 0;
const SCTLR_A: u64 = 1 << 1;
const SCTLR_C: u64 = 1 << 2;
const SCTLR_I: u64 = 1 << 12;
const SCTLR_WXN: u64 = 1 << 19;

/// The level-1 index of the first address that is mapped invalid: [`fault_address`] lies there.
#[cfg(feature = "fault-test")]
pub const FIRST_UNMAPPED_GIB: u64 = 2;

/// An address the map leaves invalid (for the fault test).
#[cfg(feature = "fault-test")]
pub const fn fault_address() -> u64 {
    FIRST_UNMAPPED_GIB << 30 | 0x1230
}

/// Build the identity map and turn on the MMU and both caches. Call once, at EL1, before any
/// atomic operation.
pub fn enable() {
    let t = addr_of_mut!(L1).cast::<u64>();
    // SAFETY: runs once on the one running core before anything else uses the table; the two
    // writes stay inside the 512-entry table.
    unsafe {
        write_volatile(t, BLOCK | attr(ATTR_DEVICE) | AF | PXN | UXN);
        write_volatile(t.add(1), 0x4000_0000 | BLOCK | attr(ATTR_NORMAL) | INNER_SHAREABLE | AF | UXN);
    }
    // SAFETY: the table maps the code, stacks and data this image runs from to themselves, so
    // execution continues at the same addresses once translation is on. The sequence follows
    // Arm ARM D8.11 (write tables, DSB, set TTBR/TCR/MAIR, ISB, invalidate TLBs, enable).
    unsafe {
        asm!(
            "msr mair_el1, {mair}",
            "msr tcr_el1, {tcr}",
            "msr ttbr0_el1, {ttbr}",
            "dsb ish",
            "isb",
            "tlbi vmalle1",
            "dsb ish",
            "isb",
            "mrs {tmp}, sctlr_el1",
            "orr {tmp}, {tmp}, {on}",
            "bic {tmp}, {tmp}, {off}",
            "msr sctlr_el1, {tmp}",
            "isb",
            mair = in(reg) MAIR,
            tcr = in(reg) TCR,
            ttbr = in(reg) t as u64,
            on = in(reg) SCTLR_M | SCTLR_C | SCTLR_I,
            off = in(reg) SCTLR_A | SCTLR_WXN,
            tmp = out(reg) _,
            options(nostack),
        );
    }
}

/// The current exception level (CurrentEL, Arm ARM D19.2.32).
pub fn current_el() -> u64 {
    let el: u64;
    // SAFETY: reading CurrentEL has no side effects.
    unsafe { asm!("mrs {}, CurrentEL", out(reg) el, options(nomem, nostack)) };
    (el >> 2) & 3
}

/// True when SCTLR_EL1 has the MMU and both caches on.
pub fn is_on() -> bool {
    let s: u64;
    // SAFETY: reading SCTLR_EL1 has no side effects.
    unsafe { asm!("mrs {}, sctlr_el1", out(reg) s, options(nomem, nostack)) };
    s & (SCTLR_M | SCTLR_C | SCTLR_I) == SCTLR_M | SCTLR_C | SCTLR_I
}
