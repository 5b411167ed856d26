//! hcq-vkgsl: a virtual Adreno 630 behind the real KGSL interface.
//!
//! Built as `target/release/libhcq_vkgsl.so` and loaded with `LD_PRELOAD` (or through
//! `hcq vkgsl -- CMD ARGS...`), it makes `/dev/kgsl-3d0` exist in any process: `open` of the
//! node returns a memfd the library answers `ioctl`s on ([`device::VDev`], the msm KGSL
//! driver's structs and errno values) with hcq-qcom's simulated KGSL (`SimKgsl`: the simulated
//! command processor, the ir3 interpreter as its shader core). GPU objects live in that memfd
//! at offset `id << 12` ([`memfd`]), so the client's own `mmap` maps them, and the device
//! learns where (the GPU address of a `USE_CPU_MAP` object) from `/proc/self/maps` ([`maps`]).
//!
//! It also presents the mainline kernel's MSM DRM render node (`/dev/dri/renderD128`, or
//! `$HCQ_VKGSL_RENDER_NODE`): [`render::VMsm`] answers the DRM and MSM ioctls with the
//! simulated MSM driver (`SimMsm`) over the same simulated GPU; GEM objects live in that
//! node's memfd at their mmap offset (`id << 12`), at the IOVA where the device maps them.
//!
//! `unsafe` lives in [`interpose`] (the C boundary), [`user`] (copies of ioctl arguments) and
//! [`memfd`] (the device's own mappings).

pub mod capture;
pub mod device;
pub mod interpose;
pub mod maps;
pub mod memfd;
pub mod render;
pub mod user;
