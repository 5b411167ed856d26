//! Kernels in executable memory and the executor of the inline CPU device.
//!
//! [`Image::load`] lays an AArch64 relocatable object out with the CPU backend's no_std ELF
//! loader (`hcq_cpu::elf`) into a fresh heap block, then makes the new code visible to
//! instruction fetch: clean the data cache to the point of unification and invalidate the
//! instruction cache over the block, each by cache line, with the barriers between (Arm ARM
//! B2.4.4, "Concurrent modification and execution of instructions", and the D7.5.9 sequence for
//! self-modifying code). RAM is mapped executable (see `mmu`).
//!
//! [`Kernels`] is the executor: exec commands call a loaded kernel with its 64-bit arguments
//! (read from the device's kernel-argument memory), once per core id for `core_id` launches
//! (one after another: the board runs one core); copy commands move bytes between buffers the
//! runner registered, and refuse anything else.

use alloc::vec::Vec;
use core::alloc::Layout;
use core::arch::asm;
use core::ptr::NonNull;
use hcq::error::{Error, Result};
use hcq::soft::inline::{Executor, SoftContext};
use hcq_cpu::elf::{ElfObject, Machine};
use zerocopy::IntoBytes;

/// Most arguments a kernel may take (as the CPU device).
pub const MAX_ARGS: usize = 63;

unsafe extern "C" {
    // from compiler_builtins (its `mem` functions are built for bare-metal targets)
    fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
    fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
    fn memset(dst: *mut u8, c: i32, n: usize) -> *mut u8;
}

/// Undefined symbols a kernel may use: the memory functions clang emits for large copies and
/// fills. Everything else (libm) is not in this image: the load fails naming the symbol.
fn resolve(name: &str) -> Option<u64> {
    match name {
        "memcpy" => Some(memcpy as *const () as usize as u64),
        "memmove" => Some(memmove as *const () as usize as u64),
        "memset" => Some(memset as *const () as usize as u64),
        _ => None,
    }
}

/// A heap block holding relocated code. Freed on drop: the owner keeps it until the device
/// is idle (the board backend drops the device, and with it the kernels, after its last call).
pub struct Image {
    ptr: NonNull<u8>,
    layout: Layout,
    entry: u64,
}

// SAFETY: the block is owned by this value alone and never written after `load`.
unsafe impl Send for Image {}
// SAFETY: as above: shared access only reads (executes) it.
unsafe impl Sync for Image {}

fn cache_lines() -> (usize, usize) {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 has no side effects.
    unsafe { asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
    // CTR_EL0.DminLine[19:16] and IminLine[3:0]: log2 of the line size in 4-byte words
    (4 << ((ctr >> 16) & 0xf), 4 << (ctr & 0xf))
}

/// Make `[start, start + len)` (just written) safe to execute.
fn sync_icache(start: usize, len: usize) {
    let (dline, iline) = cache_lines();
    let end = start + len;
    let mut a = start & !(dline - 1);
    while a < end {
        // SAFETY: clean by VA to PoU on mapped RAM the caller owns; no architectural side effect
        // beyond the cache.
        unsafe { asm!("dc cvau, {}", in(reg) a, options(nostack)) };
        a += dline;
    }
    // SAFETY: a barrier.
    unsafe { asm!("dsb ish", options(nostack)) };
    let mut a = start & !(iline - 1);
    while a < end {
        // SAFETY: invalidate instruction cache by VA to PoU on mapped RAM.
        unsafe { asm!("ic ivau, {}", in(reg) a, options(nostack)) };
        a += iline;
    }
    // SAFETY: barriers; the ISB makes this core fetch the new instructions.
    unsafe { asm!("dsb ish", "isb", options(nostack)) };
}

impl Image {
    /// Parse `object` (AArch64 ELF64 relocatable), lay it out in a fresh heap block, relocate
    /// it, find `symbol`, and synchronise the caches.
    pub fn load(object: &[u8], symbol: &str) -> Result<Image> {
        let obj = ElfObject::parse_for(object, Machine::Aarch64)?;
        let l = obj.layout();
        // CAST: the loader caps images at MAX_IMAGE_SIZE (256 MiB) and alignment at 4 KiB.
        let layout = Layout::from_size_align((l.size as usize).max(1), (l.align as usize).max(64))
            .map_err(|_| Error::InvalidArgument { what: "kernel image alignment", value: l.align })?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc::alloc_zeroed(layout) }).ok_or(Error::OutOfSpace {
            what: "heap (kernel image)",
            requested: l.size,
            capacity: crate::heap::size() as u64,
        })?;
        let mut img = Image { ptr, layout, entry: 0 };
        // SAFETY: the block is `layout.size()` bytes, freshly allocated and owned by `img`.
        let bytes = unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), layout.size()) };
        img.entry = obj.load_into(bytes, ptr.as_ptr() as u64, symbol, &resolve)?;
        sync_icache(ptr.as_ptr() as usize, layout.size());
        Ok(img)
    }

    /// Address of the entry function.
    pub fn entry(&self) -> u64 {
        self.entry
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        // SAFETY: allocated in `load` with this layout, freed once.
        unsafe { alloc::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

// `hcq_board_call_kernel(entry, args)`: calls `entry` with the 63 u64 values at `args` as its
// arguments under AAPCS64 (IHI 0055, 6.8.2): the first eight in x0-x7, the other 55 in stack
// slots of 8 bytes from the stack pointer up, in a 448-byte block the caller allocates and
// frees (the stack pointer stays 16-byte aligned). One copy loop instead of the 55 loads and
// stores a Rust call through a 63-parameter `fn` pointer compiles to (640 bytes of code).
// x29 keeps the frame across the call (callee-saved); x9-x13 are scratch.
core::arch::global_asm!(
    r#"
    .section .text.hcq_board_call_kernel, "ax"
    .global hcq_board_call_kernel
    .balign 4
hcq_board_call_kernel:
    stp   x29, x30, [sp, #-16]!
    mov   x29, sp
    sub   sp, sp, #448
    mov   x9, x0
    mov   x10, x1
    add   x11, x1, #64
    mov   x12, sp
    mov   x13, #55
1:  ldr   x0, [x11], #8
    str   x0, [x12], #8
    subs  x13, x13, #1
    b.ne  1b
    ldp   x0, x1, [x10]
    ldp   x2, x3, [x10, #16]
    ldp   x4, x5, [x10, #32]
    ldp   x6, x7, [x10, #48]
    blr   x9
    mov   sp, x29
    ldp   x29, x30, [sp], #16
    ret
"#
);

// the trampoline passes exactly 8 register and 55 stack arguments
const _: () = assert!(MAX_ARGS == 8 + 55);

unsafe extern "C" {
    /// See the `global_asm!` above: `entry(args[0], ..., args[62])`.
    fn hcq_board_call_kernel(entry: u64, args: *const u64);
}

/// Call `f` with the 63 values of `args`, each as a 64-bit integer.
///
/// A kernel with fewer parameters ignores the rest: under AAPCS64 (IHI 0055, 6.8.2) the first
/// eight go in x0-x7 and the rest in stack slots the caller allocates and frees, so a callee
/// declared with fewer parameters reads exactly its own.
///
/// # Safety
/// `f` must be the entry of a live kernel taking at most [`MAX_ARGS`] integer or pointer
/// arguments, the first of `args` in order, and every pointer argument must point at memory
/// the kernel may use for the extent it uses.
unsafe fn call_kernel(f: u64, args: &[u64; MAX_ARGS]) {
    // SAFETY: the caller's contract; `args` holds the 63 values the trampoline reads, and the
    // trampoline follows AAPCS64 (see above), so the kernel sees a normal call.
    unsafe { hcq_board_call_kernel(f, args.as_ptr()) }
}

/// One loaded kernel.
pub struct Kernel {
    /// The code.
    pub image: Image,
    /// Number of 64-bit arguments.
    pub nargs: usize,
    /// The argument slot that takes the core id, if any.
    pub core_id: Option<usize>,
}

/// The executor: loaded kernels (program handle = index) and the buffers copies may touch.
pub struct Kernels {
    /// Kernels by program handle.
    pub kernels: Vec<Kernel>,
    /// `(address, bytes)` of every buffer of the running bundle.
    pub buffers: Vec<(u64, u64)>,
}

impl Kernels {
    fn check_mem(&self, addr: u64, len: u64) -> Result<()> {
        let inside = self.buffers.iter().any(|&(b, n)| addr >= b && addr.checked_add(len).is_some_and(|e| e <= b + n));
        if inside {
            Ok(())
        } else {
            Err(Error::OutOfBounds { what: "board copy: not a buffer of the bundle", offset: addr, len, limit: 0 })
        }
    }
}

impl Executor for Kernels {
    fn exec(&self, ctx: &SoftContext, program: u64, kernargs: u64, global: [u32; 3], _: [u32; 3]) -> Result<()> {
        let k = usize::try_from(program)
            .ok()
            .and_then(|p| self.kernels.get(p))
            .ok_or(Error::InvalidArgument { what: "board exec: unknown program handle", value: program })?;
        // the 64-bit little-endian arguments read straight into their slots (AArch64 is
        // little-endian, so the bytes are the values)
        let mut args = [0u64; MAX_ARGS];
        let used = args
            .get_mut(..k.nargs)
            .ok_or(Error::Unsupported { what: "kernel argument count (max 63)", value: k.nargs as u64 })?;
        ctx.read_kernargs(kernargs, used.as_mut_bytes())?;
        let calls = if k.core_id.is_some() { u64::from(global[0]) } else { 1 };
        for tid in 0..calls {
            if let Some(slot) = k.core_id {
                args[slot] = tid;
            }
            // SAFETY: `k` was loaded from a bundle whose launches were validated against the
            // program's signature (`nargs` arguments, at most 63; the slots after them are 0);
            // the arguments were recorded by the board backend from live buffers of that bundle, which
            // stay allocated until the device is idle.
            unsafe { call_kernel(k.image.entry(), &args) };
        }
        Ok(())
    }

    fn copy(&self, _: &SoftContext, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.check_mem(src, bytes)?;
        self.check_mem(dst, bytes)?;
        // SAFETY: both ranges lie inside live buffers (checked above); `copy` allows overlap.
        unsafe { core::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes as usize) };
        Ok(())
    }

    fn timestamp_ns(&self) -> u64 {
        crate::time::now_ns()
    }
}
