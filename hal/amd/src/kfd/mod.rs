//! AMD's KFD (`/dev/kfd`, the ROCm kernel driver's compute interface), as tinygrad 0.14's
//! `KFDIface` uses it.
//!
//! - [`uapi`]: the ioctl argument structs as zerocopy types with size/offset assertions, the
//!   request numbers and flags (`tests/kfd_uapi.rs` proves them against `linux/kfd_ioctl.h`).
//! - [`Kfd`]: every ioctl tinygrad issues behind an object-safe trait, plus the memory maps
//!   (doorbell and event pages on `/dev/kfd`, buffer objects on the DRM render node, anonymous
//!   reservations) and the sysfs reads of the topology. The real driver (`LinuxKfd`, feature
//!   `std`) implements it with `ioctl`/`mmap`; a simulated KFD implements the same trait in
//!   process: user pointers inside the uapi structs (`events_ptr`, `device_ids_array_ptr`) and
//!   the render node's `drm_fd` are filled in by the real backend only, so implementations see
//!   plain slices.
//! - [`Topology`]: the KFD topology nodes with a GPU, their properties and the IP versions of
//!   the GPU's IP discovery, parsed from their text with errors naming the file and line.
//!
//! Errors are `hcq::Error::Os { what, errno }` naming the ioctl (`"KFD AMDKFD_IOC_CREATE_QUEUE"`)
//! or the call, as the KGSL backend's are.

pub mod uapi;

#[cfg(feature = "std")]
mod linux;
#[cfg(feature = "std")]
pub use linux::LinuxKfd;

use crate::pm4::ScratchDevice;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ptr::NonNull;
use hcq::error::ResultExt;
use hcq::{Error, Result};
use uapi::*;

/// The KFD device node.
pub const KFD_NODE: &str = "/dev/kfd";
/// The KFD topology's nodes (`/sys/devices/virtual/kfd/kfd/topology/nodes`; tinygrad reads
/// them there).
pub const TOPOLOGY_NODES: &str = "/sys/devices/virtual/kfd/kfd/topology/nodes";
/// The oldest KFD with `RUNTIME_ENABLE` (tinygrad calls it from 1.14 on).
pub const RUNTIME_ENABLE_VERSION: (u32, u32) = (1, 14);

/// A memory range a [`Kfd`] backend mapped for the caller.
#[derive(Debug, PartialEq, Eq)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mapping is an address range, not a reference; who reads or writes through it is the
// caller's (unsafe) business, on any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above: `&Mapping` gives out the address only.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// A mapping of `len` bytes at `ptr`.
    ///
    /// # Safety
    /// The range is mapped, owned by the backend that returns it, and stays so until it is
    /// given back to that backend's [`Kfd::munmap`].
    pub unsafe fn new(ptr: NonNull<u8>, len: usize) -> Mapping {
        Mapping { ptr, len }
    }
    /// Its first byte.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }
    /// Its address as a number (a GPU address too, for KFD's shared virtual address space).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for an empty mapping.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The KFD kernel interface: one method per ioctl tinygrad's `KFDIface` issues, the memory maps
/// and the sysfs reads. See the [module docs](self).
pub trait Kfd: Send + Sync {
    /// `AMDKFD_IOC_GET_VERSION`.
    fn get_version(&self) -> Result<GetVersionArgs>;
    /// Open the DRM render node `/dev/dri/renderD<minor>` that [`Kfd::acquire_vm`] and
    /// [`Kfd::mmap_render`] use (the node's `drm_render_minor` property).
    fn open_render(&self, minor: u32) -> Result<()>;
    /// `AMDKFD_IOC_ACQUIRE_VM` for `gpu_id` (the backend sets `drm_fd` to its render node).
    fn acquire_vm(&self, args: &mut AcquireVmArgs) -> Result<()>;
    /// `AMDKFD_IOC_RUNTIME_ENABLE` (KFD 1.14+).
    fn runtime_enable(&self, args: &mut RuntimeEnableArgs) -> Result<()>;
    /// `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`.
    fn alloc_memory_of_gpu(&self, args: &mut AllocMemoryOfGpuArgs) -> Result<()>;
    /// `AMDKFD_IOC_FREE_MEMORY_OF_GPU`.
    fn free_memory_of_gpu(&self, args: &FreeMemoryOfGpuArgs) -> Result<()>;
    /// `AMDKFD_IOC_MAP_MEMORY_TO_GPU` on the GPUs `gpus` (the backend sets the array pointer and
    /// `n_devices`).
    fn map_memory_to_gpu(&self, args: &mut MapMemoryToGpuArgs, gpus: &[u32]) -> Result<()>;
    /// `AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU` from the GPUs `gpus` (as the map).
    fn unmap_memory_from_gpu(&self, args: &mut UnmapMemoryFromGpuArgs, gpus: &[u32]) -> Result<()>;
    /// `AMDKFD_IOC_CREATE_EVENT`.
    fn create_event(&self, args: &mut CreateEventArgs) -> Result<()>;
    /// `AMDKFD_IOC_DESTROY_EVENT`.
    fn destroy_event(&self, args: &DestroyEventArgs) -> Result<()>;
    /// `AMDKFD_IOC_SET_EVENT`.
    fn set_event(&self, args: &SetEventArgs) -> Result<()>;
    /// `AMDKFD_IOC_RESET_EVENT`.
    fn reset_event(&self, args: &ResetEventArgs) -> Result<()>;
    /// `AMDKFD_IOC_WAIT_EVENTS` on `events` (the backend sets `events_ptr` and `num_events`;
    /// KFD fills the entries' exception data).
    fn wait_events(&self, args: &mut WaitEventsArgs, events: &mut [EventData]) -> Result<()>;
    /// `AMDKFD_IOC_CREATE_QUEUE`.
    fn create_queue(&self, args: &mut CreateQueueArgs) -> Result<()>;
    /// `AMDKFD_IOC_DESTROY_QUEUE`.
    fn destroy_queue(&self, args: &DestroyQueueArgs) -> Result<()>;
    /// Map `len` bytes of `/dev/kfd` at the encoded offset `offset` (the doorbell pages of
    /// [`uapi::mmap::doorbell_pages`], the event page), shared, read-write.
    fn mmap_kfd(&self, offset: u64, len: usize) -> Result<Mapping>;
    /// An anonymous range of `len` bytes: read-write and shared when `access` (host memory for
    /// a `USERPTR` allocation), else a reservation without access (the virtual addresses of a
    /// VRAM/GTT object, mapped over by [`Kfd::mmap_render`]), as tinygrad's `anon_mmap`s.
    fn map_anonymous(&self, len: usize, access: bool) -> Result<Mapping>;
    /// Map a buffer object's render-node mmap offset (`ALLOC_MEMORY_OF_GPU`'s `mmap_offset`)
    /// over the reservation `at` (its `va_addr`), shared, read-write; returns the same range.
    fn mmap_render(&self, at: Mapping, offset: u64) -> Result<Mapping>;
    /// Unmap a range this backend mapped.
    fn munmap(&self, m: Mapping) -> Result<()>;
    /// The text of the sysfs file `path`.
    fn read_text(&self, path: &str) -> Result<String>;
    /// The entry names of the sysfs directory `path` (any order).
    fn list_dir(&self, path: &str) -> Result<Vec<String>>;
}

/// The hardware ids of the IP blocks tinygrad reads versions of (Linux `soc15_hw_ip.h`): the
/// directory names under `ip_discovery/die/0/`.
pub mod hwid {
    /// `GC_HWID`: graphics and compute.
    pub const GC: u32 = 11;
    /// `SDMA0_HWID`.
    pub const SDMA0: u32 = 42;
    /// `NBIF_HWID`: the northbridge interface (NBIO).
    pub const NBIF: u32 = 108;
}

/// An IP block's version (`major.minor.revision`).
pub type IpVersion = (u32, u32, u32);

/// The IP versions tinygrad reads from a GPU's IP discovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpVersions {
    /// GC (11.0.0 on gfx1100).
    pub gc: IpVersion,
    /// SDMA0 (6.0.0).
    pub sdma: IpVersion,
    /// NBIF (4.3.0).
    pub nbif: IpVersion,
}

/// A topology node's `properties`: `name value` lines, integers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeProperties {
    /// Every line, in file order.
    pub values: Vec<(String, u64)>,
}

fn malformed(path: &str, line: usize, reason: &'static str) -> Error {
    Error::Malformed { what: "KFD topology file", at: line as u64, reason }.context(format!("{path}: line {line}"))
}

impl NodeProperties {
    /// Parse the `properties` file at `path` (for the errors) whose text is `text`: every
    /// non-empty line is a name and a decimal integer (tinygrad: `{p[0]: int(p[1])}`).
    ///
    /// Errors: a line that is not `name value`, or whose value is not an unsigned integer,
    /// naming the file and the line (1-based).
    pub fn parse(path: &str, text: &str) -> Result<NodeProperties> {
        let mut values = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let mut it = line.split_whitespace();
            let Some(name) = it.next() else { continue };
            let (Some(v), None) = (it.next(), it.next()) else {
                return Err(malformed(path, i + 1, "expected `name value`"));
            };
            let v = v.parse::<u64>().map_err(|_| malformed(path, i + 1, "value is not an unsigned integer"))?;
            values.push((name.to_string(), v));
        }
        Ok(NodeProperties { values })
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// The value of `name` as a `u32`, or an error naming the property and the file.
    pub fn require(&self, path: &str, name: &str) -> Result<u32> {
        let v = self.get(name).ok_or(Error::Malformed {
            what: "KFD topology properties",
            at: 0,
            reason: "a property tinygrad reads is missing",
        });
        let v = v.and_then(|v| {
            u32::try_from(v)
                .map_err(|_| Error::InvalidArgument { what: "KFD topology property beyond 32 bits", value: v })
        });
        v.with_context(|| format!("{path}: property {name}"))
    }
}

/// One text file holding one integer (`gpu_id`, an IP version part).
pub fn parse_int(path: &str, text: &str) -> Result<u64> {
    text.trim().parse::<u64>().map_err(|_| malformed(path, 1, "expected one unsigned integer"))
}

/// A topology node with a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuNode {
    /// The node number (the directory name).
    pub node: u32,
    /// Its `gpu_id` (what the ioctls name it by).
    pub gpu_id: u32,
    /// Its properties.
    pub props: NodeProperties,
    /// `gfx_target_version` (110000 for gfx1100).
    pub gfx_target_version: u32,
    /// `drm_render_minor`: the render node is `/dev/dri/renderD<minor>`.
    pub drm_render_minor: u32,
    /// The IP versions.
    pub ip: IpVersions,
}

impl GpuNode {
    /// The target `(major, minor, stepping)` tinygrad derives from `gfx_target_version`
    /// (`(11, 0, 0)` for gfx1100).
    pub fn target(&self) -> (u32, u32, u32) {
        let v = self.gfx_target_version;
        (v / 10000, (v / 100) % 100, v % 100)
    }

    /// The render node's device path.
    pub fn render_node(&self) -> String {
        format!("/dev/dri/renderD{}", self.drm_render_minor)
    }

    /// What the scratch layout depends on, as tinygrad's `AMDDevice` computes it (`num_xcc`
    /// defaults to 1): CUs `simd_count / simd_per_cu / xccs`, shader engines
    /// `array_count / simd_arrays_per_engine / xccs`, `max_slots_scratch_cu`.
    ///
    /// Errors: a property missing or 0 where it divides.
    pub fn scratch_device(&self) -> Result<ScratchDevice> {
        let path = "KFD topology properties";
        let p = |n: &str| self.props.require(path, n);
        let xccs = self.props.get("num_xcc").map_or(Ok(1), |_| p("num_xcc"))?;
        let div = |a: u32, b: u32, what: &'static str| {
            a.checked_div(b).ok_or(Error::InvalidArgument { what, value: u64::from(a) })
        };
        let cu = div(
            div(p("simd_count")?, p("simd_per_cu")?, "KFD topology: simd_per_cu is 0")?,
            xccs,
            "KFD topology: num_xcc is 0",
        )?;
        let se = div(
            div(p("array_count")?, p("simd_arrays_per_engine")?, "KFD topology: simd_arrays_per_engine is 0")?,
            xccs,
            "KFD topology: num_xcc is 0",
        )?;
        Ok(ScratchDevice { cu_count: cu, se_count: se, max_slots_scratch_cu: p("max_slots_scratch_cu")? })
    }
}

/// The KFD topology's GPU nodes, in node order (tinygrad's `KFDIface.gpus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// The nodes with a usable GPU (a readable, non-zero `gpu_id`).
    pub gpus: Vec<GpuNode>,
}

impl Topology {
    /// Read the topology through `kfd` as tinygrad does: the numbered entries of
    /// [`TOPOLOGY_NODES`] in numeric order; a node whose `gpu_id` cannot be read or is 0 (a CPU)
    /// is skipped; for the others `properties`, then the IP versions under
    /// `/sys/class/drm/renderD<drm_render_minor>/device/ip_discovery/die/0/<hwid>/0/`.
    ///
    /// Errors: an unreadable directory, properties or IP version file, or text that does not
    /// parse, naming the path (and line).
    pub fn read(kfd: &dyn Kfd) -> Result<Topology> {
        let mut nodes: Vec<u32> =
            kfd.list_dir(TOPOLOGY_NODES).context(TOPOLOGY_NODES)?.iter().filter_map(|n| n.parse().ok()).collect();
        nodes.sort_unstable();
        let mut gpus = Vec::new();
        for node in nodes {
            let dir = format!("{TOPOLOGY_NODES}/{node}");
            let id_path = format!("{dir}/gpu_id");
            let Ok(text) = kfd.read_text(&id_path) else { continue };
            let gpu_id = parse_int(&id_path, &text)?;
            if gpu_id == 0 {
                continue;
            }
            let gpu_id = u32::try_from(gpu_id)
                .map_err(|_| Error::InvalidArgument { what: "KFD gpu_id beyond 32 bits", value: gpu_id })
                .context(id_path)?;
            let props_path = format!("{dir}/properties");
            let props = NodeProperties::parse(&props_path, &kfd.read_text(&props_path).context(props_path.clone())?)?;
            let gfx_target_version = props.require(&props_path, "gfx_target_version")?;
            let drm_render_minor = props.require(&props_path, "drm_render_minor")?;
            let ip = read_ip_versions(kfd, drm_render_minor)?;
            gpus.push(GpuNode { node, gpu_id, props, gfx_target_version, drm_render_minor, ip });
        }
        Ok(Topology { gpus })
    }
}

/// The IP versions of the GPU whose render node is `renderD<minor>`.
pub fn read_ip_versions(kfd: &dyn Kfd, minor: u32) -> Result<IpVersions> {
    let base = format!("/sys/class/drm/renderD{minor}/device/ip_discovery/die/0");
    let present: Vec<u32> = kfd.list_dir(&base).context(base.clone())?.iter().filter_map(|n| n.parse().ok()).collect();
    let version = |hwid: u32| -> Result<IpVersion> {
        if !present.contains(&hwid) {
            return Err(Error::Malformed {
                what: "AMD IP discovery",
                at: u64::from(hwid),
                reason: "no directory for an IP block tinygrad needs (GC 11, SDMA0 42, NBIF 108)",
            })
            .context(base.clone());
        }
        let mut v = [0u32; 3];
        for (slot, part) in v.iter_mut().zip(["major", "minor", "revision"]) {
            let path = format!("{base}/{hwid}/0/{part}");
            let n = parse_int(&path, &kfd.read_text(&path).context(path.clone())?)?;
            *slot = u32::try_from(n)
                .map_err(|_| Error::InvalidArgument { what: "AMD IP version part beyond 32 bits", value: n })
                .context(path)?;
        }
        Ok((v[0], v[1], v[2]))
    };
    Ok(IpVersions { gc: version(hwid::GC)?, sdma: version(hwid::SDMA0)?, nbif: version(hwid::NBIF)? })
}
