//! # hcq-cpu — the CPU backend of hcq
//!
//! Runs tinygrad's clang-built CPU kernels natively. The [`elf`] module (`no_std` + `alloc`)
//! parses, lays out and relocates ELF64 relocatable objects for x86-64 and AArch64 into any byte
//! buffer; the `exec` module (feature `std`, Linux/macOS on x86-64/AArch64) puts them into W^X
//! executable memory and hands out callable entry points.
//!
//! With `std` on Linux/macOS (x86-64, AArch64 Linux): the `CPU` device (`device`), its backend
//! of the core bundle runner (`backend::CpuBackend`, and `model::CpuRunner`, the runner over it
//! with the CPU's extras). The same host objects run through the `SIM` device's simulated
//! command processors with `hcq_sim::cpu::SimBackend` (in the simulator's crate, which uses
//! this crate's buffer, queue and call helpers: [`backend::Buffers`], [`backend::launch_words`]).
//!
//! Features: `std` (default; enables `exec` and `hcq/std`). Without it the crate is `no_std`
//! and needs only `alloc`.
//!
//! Testing: `cargo test -p hcq-cpu` runs the host architecture's kernels natively and checks
//! both architectures' relocations on synthetic objects. The AArch64 kernels run under QEMU user
//! mode with the cross toolchain (`gcc-aarch64-linux-gnu`, `qemu-user`):
//!
//! ```sh
//! CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
//! CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \
//!   cargo test -p hcq-cpu --target aarch64-unknown-linux-gnu
//! ```
//!
//! The loader is fuzzed by `tests/fuzz` (target `elf`, see there).
#![no_std]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

/// The modules that run this host's kernels through the bundle runner (feature `std`; Linux or
/// macOS on x86-64 or AArch64, but not macOS on AArch64): one gate, written once.
macro_rules! runs_here {
    ($($item:item)*) => {$(
        #[cfg(all(
            feature = "std",
            any(target_os = "linux", target_os = "macos"),
            any(target_arch = "x86_64", target_arch = "aarch64"),
            not(all(target_os = "macos", target_arch = "aarch64"))
        ))]
        $item
    )*};
}

runs_here! {
    pub mod backend;
    pub mod device;
    mod fanout;
    pub mod model;
    pub mod plug;
}
pub mod elf;
#[cfg(all(
    feature = "std",
    any(target_os = "linux", target_os = "macos"),
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod exec;

pub use elf::{ElfObject, Layout, Machine};
