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
//! And it presents a virtual AMD gfx1100 (RX 7900 XTX) behind Linux's KFD ([`amd`]): `/dev/kfd`
//! and the GPU's render node `/dev/dri/renderD129`, answered by hcq-sim-amd's `SimKfd` (the PM4
//! compute CP, SDMA and the RDNA3 interpreter), one KFD process per process, buffer objects in the
//! render node's memfd at their mmap offsets, the doorbells in `/dev/kfd`'s; and the sysfs files a
//! KFD client reads first (the topology, IP discovery), written to a private directory and
//! redirected there by `open`, `opendir`, `stat` and `access` ([`sysfs`]).
//!
//! In someone else's process the library behaves as the driver's file would:
//! - Descriptors ([`fds`]): which numbers are devices is a lock-free table, so `close` and
//!   `ioctl` of every other descriptor take no lock (`close` stays async-signal-safe, and a
//!   `fork` child of a multi-threaded process never waits for one). `dup`, `dup2`, `dup3` and
//!   `fcntl(F_DUPFD*)` of a device give another descriptor of the same device, which goes with
//!   its last descriptor; `dup2`/`dup3` over a device's number, `close_range` and `closefrom`
//!   close it; one closed behind libc's back (a raw `close` system call) is noticed at the next
//!   `ioctl` on its number (the file there is no longer the device's memfd) and the call is
//!   libc's.
//! - `MAP_USER_MEM` ([`device::VDev`]): the driver pins the imported pages. A range of one
//!   shared mapping (a memfd, a file, shared anonymous memory) is pinned alike: the device maps
//!   the same pages itself, and the GPU keeps reaching them after the process unmaps or
//!   replaces its own mapping. Private memory cannot be pinned from user space: before every
//!   ioctl the device checks in `/proc/self/maps` that the range is still mapped writable by
//!   the same mapping; if not, the import is revoked (said on stderr) and a GPU access to it
//!   faults its context (`EDEADLK` from the waits, the fault said on stderr) instead of
//!   writing into whatever the process maps there now. A private anonymous mapping replaced
//!   by an identical one at the same address between two ioctls cannot be told apart.
//!
//! `unsafe` lives in [`interpose`] (the C boundary), [`user`] (copies of ioctl arguments),
//! [`memfd`], [`device`] and [`amd`] (the devices' own mappings).

pub mod amd;
pub mod amd_capture;
pub mod capture;
pub mod device;
pub mod fds;
pub mod interpose;
pub mod maps;
pub mod memfd;
pub mod render;
pub mod sysfs;
pub mod user;
