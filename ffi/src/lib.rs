//! `libhcq.so`: the C ABI of [`hcq_capi`] (every `hcq_*` function of `include/hcq.h`) as a
//! shared library. The code and its tests live in `ffi/capi`; this crate only links it.

pub use hcq_capi::*;
