//! The PL011 UART of QEMU `virt` (at 0x0900_0000), driven through the core's MMIO interface.
//!
//! Registers from the "PrimeCell UART (PL011) Technical Reference Manual" (Arm DDI 0183G),
//! section 3.2, declared with the core's `register!` macro over a [`VolatileRegion`] (32-bit
//! volatile accesses to Device memory). Transmit only: the image prints, it reads nothing.
//!
//! A [`Uart`] is only a handle (a base address); making one has no side effects, so the
//! exception handler makes its own without locks or allocation.

use core::ptr::NonNull;
use hcq::mmio::VolatileRegion;

/// Base address of UART0 on `virt` (hw/arm/virt.c `VIRT_UART`).
pub const BASE: usize = 0x0900_0000;
/// Size of the register block.
const SIZE: usize = 0x1000;
/// UARTCLK of `virt`'s PL011 (the 24 MHz `apb-pclk` fixed clock in QEMU's device tree).
const UARTCLK_HZ: u32 = 24_000_000;
const BAUD: u32 = 115_200;

hcq::register! {
    /// UARTDR, data register (DDI 0183G 3.3.1).
    pub DR @ 0x000 : u32 {
        /// Byte to send.
        7:0 data as u8;
    }
    /// UARTFR, flag register (3.3.3).
    pub FR @ 0x018 : u32 {
        /// Transmit FIFO full.
        5:5 txff as bool;
        /// Busy sending.
        3:3 busy as bool;
    }
    /// UARTIBRD, integer baud-rate divisor (3.3.6).
    pub IBRD @ 0x024 : u32 {
        /// Integer part of UARTCLK / (16 × baud).
        15:0 divint as u16;
    }
    /// UARTFBRD, fractional baud-rate divisor (3.3.7).
    pub FBRD @ 0x028 : u32 {
        /// Fraction × 64, rounded.
        5:0 divfrac as u8;
    }
    /// UARTLCR_H, line control (3.3.7).
    pub LCR_H @ 0x02c : u32 {
        /// Word length: 0b11 = 8 bits.
        6:5 wlen as u8;
        /// Enable the FIFOs.
        4:4 fen as bool;
    }
    /// UARTCR, control (3.3.8).
    pub CR @ 0x030 : u32 {
        /// Receive enable.
        9:9 rxe as bool;
        /// Transmit enable.
        8:8 txe as bool;
        /// UART enable.
        0:0 uarten as bool;
    }
}

/// A handle to UART0.
pub struct Uart {
    regs: VolatileRegion,
}

impl Uart {
    /// The UART (no side effects).
    pub fn get() -> Uart {
        // PANIC: never: BASE is a non-zero constant.
        let base = NonNull::new(BASE as *mut u8).unwrap_or(NonNull::dangling());
        // SAFETY: [BASE, BASE + SIZE) is the PL011 register block on `virt`, mapped as Device
        // memory by the identity map (and always accessible with the MMU off); it is only
        // touched with volatile 32-bit accesses through the region. BASE is 8-byte aligned.
        let regs = unsafe { VolatileRegion::new(base, SIZE) };
        match regs {
            Ok(regs) => Uart { regs },
            Err(_) => unreachable!("BASE is aligned"),
        }
    }

    /// Program 8N1 at 115200 baud with FIFOs, transmitter on (DDI 0183G 3.3.8: disable,
    /// set the divisors and line control, enable).
    pub fn init(&self) -> hcq::Result<()> {
        CR::default().write(&self.regs)?;
        // divisor = UARTCLK / (16 × baud) = 13.02: integer 13, fraction round(0.02 × 64) = 1
        let div64 = (UARTCLK_HZ * 8 / BAUD).div_ceil(2); // 64 × divisor, rounded
        IBRD::default().set_divint((div64 / 64) as u16).write(&self.regs)?;
        FBRD::default().set_divfrac((div64 % 64) as u8).write(&self.regs)?;
        LCR_H::default().set_wlen(0b11).set_fen(true).write(&self.regs)?;
        CR::default().set_uarten(true).set_txe(true).write(&self.regs)
    }

    /// Send one byte (waits while the transmit FIFO is full).
    pub fn put(&self, b: u8) {
        // TIMEOUT: a FIFO that stays full for a million polls (a stuck UART) loses the byte
        // instead of hanging the image; QEMU drains it at once.
        for _ in 0..1_000_000 {
            if !FR::read(&self.regs).map(|f| f.txff()).unwrap_or(false) {
                break;
            }
            core::hint::spin_loop();
        }
        let _ = DR::default().set_data(b).write(&self.regs);
    }
}

impl core::fmt::Write for Uart {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}

/// Print a line of plain text on the UART.
#[macro_export]
macro_rules! println {
    ($($t:tt)*) => {{
        use core::fmt::Write as _;
        let _ = writeln!($crate::uart::Uart::get(), $($t)*);
    }};
}
