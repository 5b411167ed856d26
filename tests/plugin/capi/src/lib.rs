//! `libhcq_count.so`: every `hcq_*` function of `include/hcq.h` ([`hcq_capi`]), with the
//! `COUNT` device kind registered as the library loads, before any call can open a device.

pub use hcq_capi::*;

/// Registers COUNT when the dynamic loader runs the library's initializers.
extern "C" fn register_count() {
    hcq_plugin_count::register();
}

// A function pointer in `.init_array` is run by the loader as the library loads (ELF).
// SAFETY: `register_count` takes no arguments, and only adds a kind to the front door's
// registry (a lazily built, locked table); it touches no other library's state and cannot
// unwind (registration allocates and locks, neither panics on a working allocator).
#[used]
#[unsafe(link_section = ".init_array")]
static REGISTER_COUNT: extern "C" fn() = register_count;
