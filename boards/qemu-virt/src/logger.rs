//! defmt on this target: frames go to a host file through semihosting.
//!
//! Plain-text results go to the UART; defmt frames (rzcobs-encoded, as `defmt-print` reads
//! them) go to `hcq-board-qemu-virt.defmt` next to the ELF (the path is fixed at build time,
//! `BOARD_DEFMT_PATH`), so the binary frames never mix with the text on the console. Decode on
//! the host with the board's `defmt-log` (or `defmt-print -e ELF < FRAMES`, the same lines):
//!
//! ```sh
//! cargo run -q --release --manifest-path boards/qemu-virt/defmt-log/Cargo.toml -- \
//!   boards/qemu-virt/target/aarch64-unknown-none/release/hcq-board-qemu-virt
//! ```
//!
//! One frame is collected in a buffer and written with one semihosting call at its end. The
//! image is single-core and never enables interrupts, so a flag is enough to catch a nested
//! use (which would interleave frames) — it panics, as defmt's own loggers do.

use crate::semihosting;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Host file handle + 1 (0: no file, frames are dropped).
static HANDLE: AtomicU64 = AtomicU64::new(0);
static TAKEN: AtomicBool = AtomicBool::new(false);

struct Frame {
    encoder: defmt::Encoder,
    buf: [u8; 256],
    len: usize,
}

struct FrameCell(UnsafeCell<Frame>);
// SAFETY: the frame is only touched between `acquire` and `release`, which the TAKEN flag makes
// exclusive (single core, no interrupts).
unsafe impl Sync for FrameCell {}

static FRAME: FrameCell = FrameCell(UnsafeCell::new(Frame { encoder: defmt::Encoder::new(), buf: [0; 256], len: 0 }));

/// Open the frame file; returns its path, or `None` when the host refused (frames are then
/// dropped). Call after the MMU is on.
pub fn init() -> Option<&'static str> {
    let path = env!("BOARD_DEFMT_PATH");
    let h = semihosting::create(path)?;
    HANDLE.store(h + 1, Ordering::Release);
    Some(path)
}

fn write_host(bytes: &[u8]) {
    let h = HANDLE.load(Ordering::Acquire);
    if h != 0 {
        semihosting::write(h - 1, bytes);
    }
}

/// Where the encoder's output goes: the frame buffer, written out when full.
fn sink<'a>(buf: &'a mut [u8; 256], len: &'a mut usize) -> impl FnMut(&[u8]) + 'a {
    move |bytes: &[u8]| {
        for &b in bytes {
            if *len == buf.len() {
                write_host(&buf[..]);
                *len = 0;
            }
            buf[*len] = b;
            *len += 1;
        }
    }
}

/// The frame, held exclusively between `acquire` and `release`.
///
/// # Safety
/// Only between `acquire` and `release` (the TAKEN flag), and never twice at once.
unsafe fn frame() -> &'static mut Frame {
    // SAFETY: the caller's contract: the TAKEN flag gives exclusive access.
    unsafe { &mut *FRAME.0.get() }
}

#[defmt::global_logger]
struct Logger;

// SAFETY: acquire/release bracket every frame and the TAKEN flag keeps frames from nesting.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        if TAKEN.swap(true, Ordering::Acquire) {
            panic!("defmt logger taken reentrantly");
        }
        // SAFETY: the flag was just taken: exclusive until `release`.
        let Frame { encoder, buf, len } = unsafe { frame() };
        encoder.start_frame(sink(buf, len));
    }

    unsafe fn flush() {}

    unsafe fn release() {
        // SAFETY: defmt calls `release` after `acquire`, while the flag is held.
        let Frame { encoder, buf, len } = unsafe { frame() };
        encoder.end_frame(sink(buf, len));
        write_host(&buf[..*len]);
        *len = 0;
        TAKEN.store(false, Ordering::Release);
    }

    unsafe fn write(bytes: &[u8]) {
        // SAFETY: defmt calls `write` between `acquire` and `release`.
        let Frame { encoder, buf, len } = unsafe { frame() };
        encoder.write(bytes, sink(buf, len));
    }
}

defmt::timestamp!("{=u64:us}", crate::time::now_us());
