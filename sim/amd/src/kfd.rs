//! `SimKfd`: an in-process KFD (`/dev/kfd` of Linux's amdkfd) over the simulated [`Gpu`],
//! implementing hcq-amd's [`Kfd`] trait with the driver's semantics as tinygrad 0.14's
//! `KFDIface` uses them.
//!
//! # The shared virtual address space
//!
//! Under KFD a buffer's GPU address is its host address. Here every range the caller gets from
//! [`Kfd::map_anonymous`] is real, zeroed, page-aligned host memory ([`HostPages`]) owned by the
//! `SimKfd`. `ALLOC_MEMORY_OF_GPU` at a `va_addr` inside such a range (VRAM/GTT: tinygrad passes
//! its no-access reservation) or of a `USERPTR` inside an accessible one registers those very
//! pages with [`GpuMemory::adopt`](crate::GpuMemory::adopt) at `va_addr`: the host's stores through the [`Mapping`] and
//! the CP's and shaders' accesses reach the same words. `mmap_render` over the reservation
//! returns the same range. The reservation is not really `PROT_NONE` (in process nothing can
//! trap): it is readable and writable from the start. Host accesses racing the GPU should be
//! atomic or aligned word-sized volatile accesses (the GPU side's are atomic).
//!
//! # Doorbells
//!
//! The doorbell frame `mmap_kfd` returns for a queue's `doorbell_offset` is the GPU's own
//! doorbell page ([`Gpu::doorbell_page`]: 1024 `AtomicU64`s, 8 KiB, page-aligned). A plain
//! (volatile) 64-bit store to it cannot trap, so the `SimKfd` runs the GPU's CP thread
//! ([`Gpu::start`]) with doorbell polling on ([`Gpu::poll_doorbells`]): when idle the thread
//! re-runs its queues every 50 µs after activity, backing off to 1 ms, and a queue whose doorbell
//! moved past its read pointer runs. A store ordered after the ring's contents (x86-64 stores
//! are; elsewhere put a release fence before it) is all a submission needs.
//!
//! # Events
//!
//! As `kfd_events.c`: signal events take ids from 0 in the signal page (the first
//! `CREATE_EVENT` may hand in an `ALLOC_MEMORY_OF_GPU` handle of at least 32 KiB for it, as
//! tinygrad does; else the `SimKfd` makes its own, which `mmap_kfd(KFD_MMAP_TYPE_EVENTS)` maps);
//! their slots start unsignaled (all ones). A GPU interrupt with context `id` (a `RELEASE_MEM`
//! interrupt, an SDMA `TRAP`) sets event `id` only when its slot was written (not all ones),
//! else every signal event whose slot was written; it resets the slot. Other events get ids from
//! `0x8000_0000`. A queue's memory fault sets every `KFD_IOC_EVENT_MEMORY` event with
//! `kfd_hsa_memory_exception_data` (the faulting page's address, as the kernel reports
//! `page_addr << PAGE_SHIFT`; `NotPresent`), any other queue fault every
//! `KFD_IOC_EVENT_HW_EXCEPTION` event (`PER_ENGINE_RESET`, `GPU_HANG`, memory not lost: chosen,
//! only the faulting queue stops). `WAIT_EVENTS` copies that data into the entries of the events
//! it found signaled, and resets the auto-reset ones.
//!
//! # Errors
//!
//! `hcq::Error::Os { what, errno }` with the `what` strings of `LinuxKfd` (`"KFD
//! AMDKFD_IOC_CREATE_QUEUE"`, `"mmap /dev/kfd"`, ...) and the errno the driver gives for the same
//! request (each check names its source below). Why a call was refused is kept for tests and
//! logs: [`SimKfd::last_refusal`].
//!
//! # Not simulated
//!
//! AQL queues, doorbell and MMIO-remap allocations, `KFD_MMAP_TYPE_MMIO`/`RESERVED_MEM`, the CWSR
//! area's size check, GPU VAs outside a range of [`Kfd::map_anonymous`] (no host storage there),
//! partial `munmap`s; the render node's `drm_fd` is a chosen number. Each is refused with
//! `EINVAL` and a [`SimKfd::last_refusal`] saying so.

use crate::events::{HwException, MemoryException};
use crate::gpu::{DoorbellPage, Gpu, GpuConfig, QueueError, QueueHandle};
use crate::memory::{HostPages, MemError, PAGE};
use crate::{ComputeQueueDesc, SdmaQueueDesc};
use hcq::error::ResultExt;
use hcq::{Error, Result};
use hcq_amd::kfd::uapi::{self, mmap, *};
use hcq_amd::kfd::{Kfd, Mapping, TOPOLOGY_NODES};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Linux errno values (`asm-generic/errno-base.h`, `include/linux/errno.h`).
pub mod errno {
    /// Operation not permitted.
    pub const EPERM: i32 = 1;
    /// No such file or directory.
    pub const ENOENT: i32 = 2;
    /// No such process (`CREATE_QUEUE` before `ACQUIRE_VM`).
    pub const ESRCH: i32 = 3;
    /// Bad file descriptor.
    pub const EBADF: i32 = 9;
    /// Out of memory.
    pub const ENOMEM: i32 = 12;
    /// Bad address.
    pub const EFAULT: i32 = 14;
    /// Device or resource busy.
    pub const EBUSY: i32 = 16;
    /// No such device.
    pub const ENODEV: i32 = 19;
    /// Not a directory.
    pub const ENOTDIR: i32 = 20;
    /// Is a directory.
    pub const EISDIR: i32 = 21;
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// No space left (an id allocator is full).
    pub const ENOSPC: i32 = 28;
    /// The kernel-internal "operation is not supported" (`CREATE_QUEUE` of an unknown type).
    pub const ENOTSUPP: i32 = 524;
}
use errno::*;

/// The simulated GPU's KFD `gpu_id` (chosen: KFD hashes its own 16-bit id; any non-zero value).
pub const GPU_ID: u32 = 0xbaf5;
/// Its render node's minor (`/dev/dri/renderD128`, the first GPU's).
pub const RENDER_MINOR: u32 = 128;
/// The KFD ioctl version reported (1.17, Linux 6.12+; tinygrad needs 1.14 for `RUNTIME_ENABLE`).
pub const VERSION: (u32, u32) = (1, 17);
/// `UNSIGNALED_EVENT_SLOT` (`kfd_events.c`): a signal slot not written since its last interrupt.
pub const UNSIGNALED_EVENT_SLOT: u64 = u64::MAX;
/// The EOP buffer size a gfx11 node requires (`node_props.eop_buffer_size`; tinygrad's 0x1000).
pub const EOP_BUFFER_SIZE: u64 = 4096;
/// `KFD_EVENT_TIMEOUT_INFINITE`.
pub const TIMEOUT_INFINITE: u32 = u32::MAX;
/// The `drm_fd` `ACQUIRE_VM` reports (chosen; nothing is opened).
pub const RENDER_FD: u32 = 1000;
/// Where the render node's buffer-object mmap offsets start (`DRM_FILE_PAGE_OFFSET_START` pages
/// of 4 KiB).
pub const RENDER_OFFSET_BASE: u64 = 1 << 32;
/// The highest user address + 1 (x86-64 `TASK_SIZE_MAX`, what `access_ok` checks against).
pub const USER_LIMIT: u64 = 0x7fff_ffff_f000;
/// `KFD_FIRST_NONSIGNAL_EVENT_ID`.
pub const FIRST_NONSIGNAL_EVENT_ID: u32 = 0x8000_0000;
/// `KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`.
pub const MAX_QUEUES: u32 = 1024;
/// Bytes of the signal page: `KFD_SIGNAL_EVENT_LIMIT` 8-byte slots.
pub const SIGNAL_PAGE_BYTES: u64 = SIGNAL_EVENT_LIMIT as u64 * 8;

const IOC_ALLOC: &str = "KFD AMDKFD_IOC_ALLOC_MEMORY_OF_GPU";
const IOC_FREE: &str = "KFD AMDKFD_IOC_FREE_MEMORY_OF_GPU";
const IOC_MAP: &str = "KFD AMDKFD_IOC_MAP_MEMORY_TO_GPU";
const IOC_UNMAP: &str = "KFD AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU";
const IOC_CREATE_EVENT: &str = "KFD AMDKFD_IOC_CREATE_EVENT";
const IOC_DESTROY_EVENT: &str = "KFD AMDKFD_IOC_DESTROY_EVENT";
const IOC_SET_EVENT: &str = "KFD AMDKFD_IOC_SET_EVENT";
const IOC_RESET_EVENT: &str = "KFD AMDKFD_IOC_RESET_EVENT";
const IOC_WAIT_EVENTS: &str = "KFD AMDKFD_IOC_WAIT_EVENTS";
const IOC_CREATE_QUEUE: &str = "KFD AMDKFD_IOC_CREATE_QUEUE";
const IOC_DESTROY_QUEUE: &str = "KFD AMDKFD_IOC_DESTROY_QUEUE";
const IOC_ACQUIRE_VM: &str = "KFD AMDKFD_IOC_ACQUIRE_VM";
const IOC_RUNTIME_ENABLE: &str = "KFD AMDKFD_IOC_RUNTIME_ENABLE";
const MMAP_KFD: &str = "mmap /dev/kfd";
const MMAP_ANON: &str = "mmap anonymous";
const MMAP_RENDER: &str = "mmap the DRM render node";
const MUNMAP: &str = "munmap";

/// A range of [`Kfd::map_anonymous`].
#[derive(Debug)]
struct HostRange {
    pages: Arc<HostPages>,
    access: bool,
}

/// A buffer object of `ALLOC_MEMORY_OF_GPU`.
#[derive(Debug)]
struct Bo {
    va: u64,
    /// Bytes registered (page-rounded).
    size: u64,
    flags: AllocFlags,
    mmap_offset: u64,
    mapped: bool,
    pages: Arc<HostPages>,
    /// Its first byte in `pages`.
    offset: u64,
}

#[derive(Debug)]
struct Ev {
    ty: u32,
    auto_reset: bool,
    signaled: bool,
    memory: HsaMemoryExceptionData,
    hw: HsaHwExceptionData,
}

impl Ev {
    fn gpu_signaled(&self) -> bool {
        self.ty == EVENT_SIGNAL || self.ty == EVENT_DEBUG_EVENT
    }
}

/// The signal page: `slots` 8-byte slots from byte `offset` of `pages`.
#[derive(Debug)]
struct SignalPage {
    pages: Arc<HostPages>,
    offset: usize,
    slots: u32,
    /// The buffer object it lives in (`None`: the SimKfd's own page).
    handle: Option<u64>,
}

impl SignalPage {
    fn word(&self, slot: u32, half: usize) -> &std::sync::atomic::AtomicU32 {
        // CAST: slot < slots ≤ 4096.
        &self.pages.words()[self.offset / 4 + 2 * slot as usize + half]
    }
    fn read(&self, slot: u32) -> u64 {
        u64::from(self.word(slot, 0).load(Ordering::Acquire))
            | u64::from(self.word(slot, 1).load(Ordering::Acquire)) << 32
    }
    fn unsignal(&self, slot: u32) {
        self.word(slot, 0).store(u32::MAX, Ordering::Release);
        self.word(slot, 1).store(u32::MAX, Ordering::Release);
    }
    fn addr(&self) -> u64 {
        // CAST: usize → u64, widening.
        self.pages.addr() + self.offset as u64
    }
}

/// What keeps a `mmap_kfd` range alive.
#[derive(Debug)]
enum Keep {
    Doorbells(#[allow(dead_code)] Arc<DoorbellPage>),
    Host(#[allow(dead_code)] Arc<HostPages>),
}

#[derive(Debug, Default)]
struct State {
    render_open: bool,
    vm: bool,
    runtime: bool,
    ranges: BTreeMap<u64, HostRange>,
    bos: BTreeMap<u32, Bo>,
    next_render: u64,
    events: BTreeMap<u32, Ev>,
    signal_page: Option<SignalPage>,
    queues: BTreeMap<u32, QueueHandle>,
    kfd_maps: Vec<(u64, usize, Keep)>,
    seen_memory: usize,
    seen_hw: usize,
}

impl State {
    /// The range of `map_anonymous` holding `[addr, addr + len)`: its base and itself.
    fn range(&self, addr: u64, len: u64) -> Option<(u64, &HostRange)> {
        let (&base, r) = self.ranges.range(..=addr).next_back()?;
        // CAST: usize → u64, widening.
        let end = base + r.pages.len() as u64;
        (addr.checked_add(len)? <= end).then_some((base, r))
    }
}

/// The simulated KFD over a simulated gfx1100 (see the [module docs](self)).
#[derive(Debug)]
pub struct SimKfd {
    gpu: Gpu,
    gpu_id: u32,
    render_minor: u32,
    files: BTreeMap<String, String>,
    state: Mutex<State>,
    why: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn page_up(n: u64) -> Option<u64> {
    n.checked_next_multiple_of(PAGE)
}

/// `access_ok` on x86-64: the range lies below the user limit.
fn user_ok(addr: u64, len: u64) -> bool {
    addr.checked_add(len).is_some_and(|e| e <= USER_LIMIT)
}

/// The lowest id in `from..to` that `taken` does not hold (`idr_alloc`).
fn lowest_free<V>(taken: &BTreeMap<u32, V>, from: u32, to: u32) -> Option<u32> {
    let mut want = from;
    for &k in taken.range(from..to).map(|(k, _)| k) {
        if k != want {
            break;
        }
        want = want.checked_add(1)?;
    }
    (want < to).then_some(want)
}

impl Default for SimKfd {
    fn default() -> Self {
        Self::new(GpuConfig::default())
    }
}

impl SimKfd {
    /// A KFD with one simulated gfx1100 (node 1, [`GPU_ID`]) behind a CPU node (node 0), its CP
    /// thread started and polling the doorbell page.
    pub fn new(config: GpuConfig) -> SimKfd {
        let mut gpu = Gpu::new(config);
        gpu.poll_doorbells(true);
        gpu.start();
        SimKfd::with_gpu(gpu, RENDER_MINOR)
    }

    /// A KFD over `gpu` as it is (its CP thread and doorbell polling as the caller set them up),
    /// whose render node is `/dev/dri/renderD<render_minor>` (in the topology and for
    /// [`Kfd::open_render`]).
    pub fn with_gpu(gpu: Gpu, render_minor: u32) -> SimKfd {
        let state = State { next_render: RENDER_OFFSET_BASE, ..State::default() };
        SimKfd {
            gpu,
            gpu_id: GPU_ID,
            render_minor,
            files: sysfs(GPU_ID, render_minor),
            state: Mutex::new(state),
            why: Mutex::new(None),
        }
    }

    /// The simulated GPU (its memory, events, queue states), for tests and tools.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The GPU's KFD id.
    pub fn gpu_id(&self) -> u32 {
        self.gpu_id
    }

    /// Why the last refused call was refused (`"KFD AMDKFD_IOC_CREATE_QUEUE: ring size 3000 is
    /// not a power of two"`), if any was.
    pub fn last_refusal(&self) -> Option<String> {
        lock(&self.why).clone()
    }

    /// The simulated queue behind a KFD `queue_id`.
    pub fn queue(&self, queue_id: u32) -> Option<QueueHandle> {
        lock(&self.state).queues.get(&queue_id).copied()
    }

    /// The sysfs files it serves (path → text).
    pub fn sysfs_files(&self) -> &BTreeMap<String, String> {
        &self.files
    }

    fn refuse(&self, what: &'static str, errno: i32, why: impl std::fmt::Display) -> Error {
        *lock(&self.why) = Some(format!("{what}: {why}"));
        Error::Os { what, errno }
    }

    fn handle_bo(&self, what: &'static str, handle: u64) -> Result<u32> {
        if handle >> 32 != u64::from(self.gpu_id) {
            return Err(self.refuse(what, EINVAL, format_args!("handle {handle:#x} names no GPU of this process")));
        }
        // CAST: GET_IDR_HANDLE, the low 32 bits.
        Ok(handle as u32)
    }

    fn mem_error(&self, what: &'static str, e: &MemError) -> Error {
        let errno = if matches!(e, MemError::OutOfMemory { .. }) { ENOMEM } else { EINVAL };
        self.refuse(what, errno, e)
    }

    /// Take what the GPU raised since the last call into the KFD events: interrupts (by the
    /// signal slots), memory and hardware exceptions.
    fn pump(&self, st: &mut State) {
        // under the table's lock (this KFD's state lock, held by the caller, comes first, as
        // everywhere): the interrupts taken (their events reset) in id order, then the exceptions
        // not seen yet; nothing copied, so a call's wait allocates nothing
        self.gpu.events().update(|snap| {
            for (id, _) in snap.signaled.drain(..) {
                interrupt(st, id);
            }
            for m in snap.memory.iter().skip(st.seen_memory) {
                let d = self.memory_data(m);
                for e in st.events.values_mut().filter(|e| e.ty == EVENT_MEMORY) {
                    e.memory = d;
                    e.signaled = true;
                }
            }
            st.seen_memory = snap.memory.len();
            for h in snap.hw.iter().skip(st.seen_hw) {
                let d = self.hw_data(h);
                for e in st.events.values_mut().filter(|e| e.ty == EVENT_HW_EXCEPTION) {
                    e.hw = d;
                    e.signaled = true;
                }
            }
            st.seen_hw = snap.hw.len();
        });
    }

    /// `kfd_signal_vm_fault_event`'s data: the faulting page, not present.
    fn memory_data(&self, m: &MemoryException) -> HsaMemoryExceptionData {
        HsaMemoryExceptionData {
            failure: MemoryExceptionFailure { not_present: 1, read_only: 0, no_execute: 0, imprecise: 0 },
            va: m.va & !(PAGE - 1),
            gpu_id: self.gpu_id,
            error_type: MEM_ERR_NO_RAS,
        }
    }

    fn hw_data(&self, _h: &HwException) -> HsaHwExceptionData {
        HsaHwExceptionData {
            reset_type: HW_EXCEPTION_PER_ENGINE_RESET,
            reset_cause: HW_EXCEPTION_GPU_HANG,
            memory_lost: 0,
            gpu_id: self.gpu_id,
        }
    }

    fn sysfs_error(what: &'static str, errno: i32, verb: &str, path: &str) -> Error {
        Error::Os { what, errno }.context(format!("{verb} {path}"))
    }
}

/// `kfd_signal_event_interrupt` with a 32-bit context id.
fn interrupt(st: &mut State, id: u32) {
    let Some(page) = &st.signal_page else { return };
    if id < page.slots
        && page.read(id) != UNSIGNALED_EVENT_SLOT
        && let Some(e) = st.events.get_mut(&id)
        && e.gpu_signaled()
    {
        page.unsignal(id);
        e.signaled = true;
        return;
    }
    // The id did not name a written slot: every signal event whose slot was written.
    for (&k, e) in st.events.range_mut(..page.slots) {
        if e.gpu_signaled() && page.read(k) != UNSIGNALED_EVENT_SLOT {
            page.unsignal(k);
            e.signaled = true;
        }
    }
}

impl Drop for SimKfd {
    fn drop(&mut self) {
        // Ranges the caller never unmapped stay valid (Mapping's contract: until `munmap`): their
        // storage is leaked rather than freed under a live pointer.
        let st = std::mem::take(&mut *lock(&self.state));
        for (_, r) in st.ranges {
            std::mem::forget(r.pages);
        }
        for (_, _, k) in st.kfd_maps {
            std::mem::forget(k);
        }
        self.gpu.stop();
    }
}

/// The sysfs tree of one RX 7900 XTX (see [`SimKfd::sysfs_files`]).
///
/// Node 1's properties are an RX 7900 XTX's: those tinygrad reads follow from the chip (Navi 31:
/// 96 CUs of 2 SIMDs = 192, 6 shader engines of 2 shader arrays = 12 arrays, 8 CUs an array, 16
/// waves a SIMD, 32 scratch slots a CU, 64 KiB LDS, wave32, PCI 0x1002:0x744c); the identifiers,
/// clocks and firmware versions are values recalled from public dumps of that card, and
/// `location_id`, `gpu_id` are chosen. IP versions: GC 11.0.0, SDMA0/1 6.0.0, NBIF (NBIO) 4.3.0,
/// MMHUB 3.0.0, HDP 6.0.0 (amdgpu's `amdgpu_discovery.c` tables for gfx1100).
fn sysfs(gpu_id: u32, render_minor: u32) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let topo = "/sys/devices/virtual/kfd/kfd/topology";
    f.insert(format!("{topo}/generation_id"), "1\n".to_string());
    f.insert(format!("{topo}/system_properties"), "platform_oem 0\nplatform_id 0\nplatform_rev 0\n".to_string());
    let cpu: &[(&str, u64)] = &[
        ("cpu_cores_count", 16),
        ("simd_count", 0),
        ("mem_banks_count", 1),
        ("caches_count", 0),
        ("io_links_count", 1),
        ("p2p_links_count", 0),
        ("cpu_core_id_base", 0),
        ("simd_id_base", 0),
        ("max_waves_per_simd", 0),
        ("lds_size_in_kb", 0),
        ("gds_size_in_kb", 0),
        ("num_gws", 0),
        ("wave_front_size", 0),
        ("array_count", 0),
        ("simd_arrays_per_engine", 0),
        ("cu_per_simd_array", 0),
        ("simd_per_cu", 0),
        ("max_slots_scratch_cu", 0),
        ("gfx_target_version", 0),
        ("vendor_id", 0),
        ("device_id", 0),
        ("location_id", 0),
        ("domain", 0),
        ("drm_render_minor", 0),
        ("hive_id", 0),
        ("num_sdma_engines", 0),
        ("num_sdma_xgmi_engines", 0),
        ("num_sdma_queues_per_engine", 0),
        ("num_cp_queues", 0),
        ("max_engine_clk_ccompute", 5881),
    ];
    let gpu: &[(&str, u64)] = &[
        ("cpu_cores_count", 0),
        ("simd_count", 192),
        ("mem_banks_count", 1),
        ("caches_count", 206),
        ("io_links_count", 1),
        ("p2p_links_count", 0),
        ("cpu_core_id_base", 0),
        ("simd_id_base", 2_147_487_744),
        ("max_waves_per_simd", 16),
        ("lds_size_in_kb", 64),
        ("gds_size_in_kb", 0),
        ("num_gws", 64),
        ("wave_front_size", 32),
        ("array_count", 12),
        ("simd_arrays_per_engine", 2),
        ("cu_per_simd_array", 8),
        ("simd_per_cu", 2),
        ("max_slots_scratch_cu", 32),
        ("gfx_target_version", 110_000),
        ("vendor_id", 4098),
        ("device_id", 29772),
        ("location_id", 768),
        ("domain", 0),
        ("drm_render_minor", u64::from(render_minor)),
        ("hive_id", 0),
        ("num_sdma_engines", 2),
        ("num_sdma_xgmi_engines", 0),
        ("num_sdma_queues_per_engine", 6),
        ("num_cp_queues", 8),
        ("max_engine_clk_fcompute", 2482),
        ("local_mem_size", 0),
        ("fw_version", 2140),
        ("capability", 671_588_992),
        ("debug_prop", 1495),
        ("sdma_fw_version", 21),
        ("unique_id", 0),
        ("num_xcc", 1),
        ("max_engine_clk_ccompute", 5881),
    ];
    for (node, id, props) in [(0u32, 0u32, cpu), (1, gpu_id, gpu)] {
        let mut text = String::new();
        for (k, v) in props {
            let _ = writeln!(text, "{k} {v}");
        }
        f.insert(format!("{TOPOLOGY_NODES}/{node}/gpu_id"), format!("{id}\n"));
        f.insert(format!("{TOPOLOGY_NODES}/{node}/properties"), text);
    }
    let ip = format!("/sys/class/drm/renderD{render_minor}/device/ip_discovery/die/0");
    // (hwid, version): soc15_hw_ip.h ids.
    for (hwid, v) in
        [(11u32, (11, 0, 0)), (42, (6, 0, 0)), (43, (6, 0, 0)), (108, (4, 3, 0)), (34, (3, 0, 0)), (41, (6, 0, 0))]
    {
        let (a, b, c): (u32, u32, u32) = v;
        for (part, n) in [("major", a), ("minor", b), ("revision", c)] {
            f.insert(format!("{ip}/{hwid}/0/{part}"), format!("{n}\n"));
        }
    }
    f
}

impl Kfd for SimKfd {
    fn get_version(&self) -> Result<GetVersionArgs> {
        Ok(GetVersionArgs { major_version: VERSION.0, minor_version: VERSION.1 })
    }

    fn open_render(&self, minor: u32) -> Result<()> {
        if minor != self.render_minor {
            return Err(Error::Os { what: "open the DRM render node", errno: ENOENT })
                .with_context(|| format!("open /dev/dri/renderD{minor}"));
        }
        lock(&self.state).render_open = true;
        Ok(())
    }

    fn acquire_vm(&self, args: &mut AcquireVmArgs) -> Result<()> {
        let mut st = lock(&self.state);
        if !st.render_open {
            return Err(Error::InvalidArgument {
                what: "KFD: the render node is not open (open_render first)",
                value: 0,
            });
        }
        args.drm_fd = RENDER_FD;
        // kfd_ioctl_acquire_vm: an unknown gpu_id is EINVAL; the same render node again is 0.
        if args.gpu_id != self.gpu_id {
            return Err(self.refuse(IOC_ACQUIRE_VM, EINVAL, format_args!("no GPU {:#x}", args.gpu_id)));
        }
        st.vm = true;
        Ok(())
    }

    fn runtime_enable(&self, args: &mut RuntimeEnableArgs) -> Result<()> {
        // kfd_ioctl_runtime_enable: ENABLE_MASK enables (EBUSY when enabled), else disables.
        let mut st = lock(&self.state);
        if args.mode_mask & RUNTIME_ENABLE_MODE_ENABLE_MASK != 0 {
            if st.runtime {
                return Err(self.refuse(IOC_RUNTIME_ENABLE, EBUSY, "the runtime is enabled already"));
            }
            st.runtime = true;
        } else {
            st.runtime = false;
        }
        Ok(())
    }

    fn alloc_memory_of_gpu(&self, args: &mut AllocMemoryOfGpuArgs) -> Result<()> {
        const W: &str = IOC_ALLOC;
        let mut st = lock(&self.state);
        // kfd_ioctl_alloc_memory_of_gpu: kfd_process_device_data_by_id → EINVAL; unbound (no
        // ACQUIRE_VM) → kfd_bind_process_to_device's ENODEV.
        if args.gpu_id != self.gpu_id {
            return Err(self.refuse(W, EINVAL, format_args!("no GPU {:#x}", args.gpu_id)));
        }
        if !st.vm {
            return Err(self.refuse(W, ENODEV, "the process has no VM on the GPU (ACQUIRE_VM first)"));
        }
        let flags = AllocFlags::from_bits_retain(args.flags);
        let userptr = flags.contains(AllocFlags::USERPTR);
        if !(flags.intersects(AllocFlags::VRAM | AllocFlags::GTT) || userptr) {
            let why = if flags.intersects(AllocFlags::DOORBELL | AllocFlags::MMIO_REMAP) {
                "doorbell and MMIO-remap allocations are not simulated"
            } else {
                "no memory type (VRAM, GTT or USERPTR)"
            };
            return Err(self.refuse(W, EINVAL, why));
        }
        let va = args.va_addr;
        let Some(size) = page_up(args.size).filter(|&s| s != 0) else {
            return Err(self.refuse(W, EINVAL, format_args!("size {:#x}", args.size)));
        };
        if !va.is_multiple_of(PAGE) {
            // amdgpu_vm_bo_map: an unaligned address is EINVAL.
            return Err(self.refuse(W, EINVAL, format_args!("va {va:#x} is not page-aligned")));
        }
        let (pages, offset) = if userptr {
            // The user's pages: get_user_pages on anything but an accessible mapping is EFAULT.
            let host = args.mmap_offset;
            match st.range(host, size) {
                Some((base, r)) if r.access && host.is_multiple_of(PAGE) => (Arc::clone(&r.pages), host - base),
                Some((_, r)) if r.access => {
                    return Err(self.refuse(W, EINVAL, format_args!("user pointer {host:#x} is not page-aligned")));
                }
                _ => {
                    return Err(self.refuse(
                        W,
                        EFAULT,
                        format_args!(
                            "user pointer {host:#x} ({size:#x} bytes) is not accessible memory of this process \
                             (only map_anonymous(.., true) ranges of this SimKfd are)"
                        ),
                    ));
                }
            }
        } else {
            match st.range(va, size) {
                Some((base, r)) => (Arc::clone(&r.pages), va - base),
                None => {
                    return Err(self.refuse(
                        W,
                        EINVAL,
                        format_args!(
                            "va {va:#x} ({size:#x} bytes) is not inside a map_anonymous range (the simulation has \
                             no host storage elsewhere)"
                        ),
                    ));
                }
            }
        };
        let Some(idr) = lowest_free(&st.bos, 0, u32::MAX) else {
            return Err(self.refuse(W, ENOMEM, "no free handle"));
        };
        self.gpu.memory().adopt(va, &pages, offset, size).map_err(|e| self.mem_error(W, &e))?;
        let mmap_offset = st.next_render;
        st.next_render += size;
        st.bos.insert(idr, Bo { va, size, flags, mmap_offset, mapped: false, pages, offset });
        args.handle = u64::from(self.gpu_id) << 32 | u64::from(idr);
        args.mmap_offset = mmap_offset;
        Ok(())
    }

    fn free_memory_of_gpu(&self, args: &FreeMemoryOfGpuArgs) -> Result<()> {
        const W: &str = IOC_FREE;
        let mut st = lock(&self.state);
        let idr = self.handle_bo(W, args.handle)?;
        // kfd_ioctl_free_memory_of_gpu: the signal page's BO is EPERM; an unknown handle EINVAL;
        // amdgpu_amdkfd_gpuvm_free_memory_of_gpu: still mapped is EBUSY.
        if st.signal_page.as_ref().is_some_and(|p| p.handle == Some(args.handle)) {
            return Err(self.refuse(W, EPERM, "the signal page's buffer cannot be freed"));
        }
        let Some(bo) = st.bos.get(&idr) else {
            return Err(self.refuse(W, EINVAL, format_args!("no buffer with handle {:#x}", args.handle)));
        };
        if bo.mapped {
            return Err(self.refuse(
                W,
                EBUSY,
                format_args!("buffer {:#x} at {:#x} is still mapped", args.handle, bo.va),
            ));
        }
        let va = bo.va;
        self.gpu.memory().free(va).map_err(|e| self.mem_error(W, &e))?;
        st.bos.remove(&idr);
        Ok(())
    }

    fn map_memory_to_gpu(&self, args: &mut MapMemoryToGpuArgs, gpus: &[u32]) -> Result<()> {
        self.map_or_unmap(IOC_MAP, true, args.handle, &mut args.n_devices, &mut args.n_success, gpus)
    }

    fn unmap_memory_from_gpu(&self, args: &mut UnmapMemoryFromGpuArgs, gpus: &[u32]) -> Result<()> {
        self.map_or_unmap(IOC_UNMAP, false, args.handle, &mut args.n_devices, &mut args.n_success, gpus)
    }

    fn create_event(&self, args: &mut CreateEventArgs) -> Result<()> {
        const W: &str = IOC_CREATE_EVENT;
        let mut st = lock(&self.state);
        if args.event_page_offset != 0 {
            // kfd_ioctl_create_event: the handle's GPU and BO (EINVAL), a kernel mapping of it
            // (a user pointer cannot: EINVAL), kfd_event_page_set (a page set already, or one
            // smaller than the slots: EINVAL); the slots start unsignaled.
            let handle = args.event_page_offset;
            let idr = self.handle_bo(W, handle)?;
            let Some(bo) = st.bos.get(&idr) else {
                return Err(self.refuse(W, EINVAL, format_args!("no buffer with handle {handle:#x}")));
            };
            if bo.flags.contains(AllocFlags::USERPTR) {
                return Err(self.refuse(W, EINVAL, "a user-pointer buffer cannot be the signal page"));
            }
            if st.signal_page.is_some() {
                return Err(self.refuse(W, EINVAL, "the process has a signal page already"));
            }
            if bo.size < SIGNAL_PAGE_BYTES {
                return Err(self.refuse(W, EINVAL, format_args!("event page of {:#x} bytes is too small", bo.size)));
            }
            // CAST: an offset inside host pages.
            let page = SignalPage {
                pages: Arc::clone(&bo.pages),
                offset: bo.offset as usize,
                slots: SIGNAL_EVENT_LIMIT,
                handle: Some(handle),
            };
            for s in 0..page.slots {
                page.unsignal(s);
            }
            st.signal_page = Some(page);
        }
        let ty = args.event_type;
        if ty > EVENT_MEMORY {
            return Err(self.refuse(W, EINVAL, format_args!("event type {ty}")));
        }
        let ev = Ev {
            ty,
            auto_reset: args.auto_reset != 0,
            signaled: false,
            memory: HsaMemoryExceptionData::default(),
            hw: HsaHwExceptionData::default(),
        };
        let id = if ev.gpu_signaled() {
            if st.signal_page.is_none() {
                let Some(pages) = HostPages::new(SIGNAL_PAGE_BYTES) else {
                    return Err(self.refuse(W, ENOMEM, "no memory for the signal page"));
                };
                let page = SignalPage { pages: Arc::new(pages), offset: 0, slots: SIGNAL_EVENT_LIMIT, handle: None };
                for s in 0..page.slots {
                    page.unsignal(s);
                }
                st.signal_page = Some(page);
            }
            let slots = st.signal_page.as_ref().map_or(0, |p| p.slots);
            let Some(id) = lowest_free(&st.events, 0, slots) else {
                return Err(self.refuse(W, ENOSPC, "every signal slot is taken"));
            };
            if let Some(p) = &st.signal_page {
                p.unsignal(id);
            }
            args.event_page_offset = mmap::TYPE_EVENTS;
            args.event_slot_index = id;
            id
        } else {
            let Some(id) = lowest_free(&st.events, FIRST_NONSIGNAL_EVENT_ID, u32::MAX) else {
                return Err(self.refuse(W, ENOSPC, "every event id is taken"));
            };
            id
        };
        st.events.insert(id, ev);
        args.event_id = id;
        args.event_trigger_data = id;
        Ok(())
    }

    fn destroy_event(&self, args: &DestroyEventArgs) -> Result<()> {
        let mut st = lock(&self.state);
        if st.events.remove(&args.event_id).is_none() {
            return Err(self.refuse(IOC_DESTROY_EVENT, EINVAL, format_args!("no event {:#x}", args.event_id)));
        }
        Ok(())
    }

    fn set_event(&self, args: &SetEventArgs) -> Result<()> {
        // kfd_set_event: unknown, or not CPU-signalable (signal events only), is EINVAL.
        let mut st = lock(&self.state);
        match st.events.get_mut(&args.event_id) {
            Some(e) if e.ty == EVENT_SIGNAL => {
                e.signaled = true;
                Ok(())
            }
            Some(e) => {
                let ty = e.ty;
                Err(self.refuse(
                    IOC_SET_EVENT,
                    EINVAL,
                    format_args!("event {:#x} of type {ty} cannot be set", args.event_id),
                ))
            }
            None => Err(self.refuse(IOC_SET_EVENT, EINVAL, format_args!("no event {:#x}", args.event_id))),
        }
    }

    fn reset_event(&self, args: &ResetEventArgs) -> Result<()> {
        let mut st = lock(&self.state);
        match st.events.get_mut(&args.event_id) {
            Some(e) => {
                e.signaled = false;
                Ok(())
            }
            None => Err(self.refuse(IOC_RESET_EVENT, EINVAL, format_args!("no event {:#x}", args.event_id))),
        }
    }

    fn wait_events(&self, args: &mut WaitEventsArgs, events: &mut [EventData]) -> Result<()> {
        const W: &str = IOC_WAIT_EVENTS;
        args.num_events = u32::try_from(events.len()).unwrap_or(u32::MAX);
        let all = args.wait_for_all != 0;
        let deadline = (args.timeout != TIMEOUT_INFINITE)
            .then(|| Instant::now().checked_add(Duration::from_millis(u64::from(args.timeout))))
            .flatten();
        {
            let st = lock(&self.state);
            if let Some(e) = events.iter().find(|e| !st.events.contains_key(&e.event_id)) {
                return Err(self.refuse(W, EINVAL, format_args!("no event {:#x}", e.event_id)));
            }
        }
        // kfd_wait_on_events: a waiter is activated by its event being signaled (an auto-reset
        // event is reset as it activates one); done when any (or all) are.
        // no allocation for the waits every call makes (tinygrad's and hcq's wait on 3 events)
        let mut few = [false; 8];
        let mut many = Vec::new();
        let activated: &mut [bool] = match few.get_mut(..events.len()) {
            Some(a) => a,
            None => {
                many.resize(events.len(), false);
                &mut many
            }
        };
        loop {
            let seq = self.gpu.events().seq();
            let mut st = lock(&self.state);
            self.pump(&mut st);
            for (a, d) in activated.iter_mut().zip(events.iter()) {
                let Some(e) = st.events.get_mut(&d.event_id) else {
                    return Err(self.refuse(W, EINVAL, format_args!("event {:#x} was destroyed", d.event_id)));
                };
                if !*a && e.signaled {
                    *a = true;
                    if e.auto_reset {
                        e.signaled = false;
                    }
                }
            }
            let done = if all { activated.iter().all(|&a| a) } else { activated.iter().any(|&a| a) };
            if done {
                for (a, d) in activated.iter().zip(events.iter_mut()) {
                    let Some(e) = st.events.get(&d.event_id) else { continue };
                    if *a && e.ty == EVENT_MEMORY {
                        d.set_memory_exception(&e.memory);
                    } else if *a && e.ty == EVENT_HW_EXCEPTION {
                        d.set_hw_exception(&e.hw);
                    }
                }
                args.wait_result = WAIT_RESULT_COMPLETE;
                return Ok(());
            }
            drop(st);
            let left = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => l,
                    _ => {
                        args.wait_result = WAIT_RESULT_TIMEOUT;
                        return Ok(());
                    }
                },
                None => Duration::from_secs(3600),
            };
            // The GPU's table wakes this at once; a set_event from another thread within 1 ms.
            self.gpu.events().wait(left.min(Duration::from_millis(1)), |s| s.seq != seq);
        }
    }

    fn create_queue(&self, args: &mut CreateQueueArgs) -> Result<()> {
        const W: &str = IOC_CREATE_QUEUE;
        // set_queue_properties_from_user, in its order.
        if args.queue_percentage & 0xff > MAX_QUEUE_PERCENTAGE {
            return Err(self.refuse(W, EINVAL, format_args!("queue percentage {}", args.queue_percentage & 0xff)));
        }
        if args.queue_priority > MAX_QUEUE_PRIORITY {
            return Err(self.refuse(W, EINVAL, format_args!("queue priority {}", args.queue_priority)));
        }
        if args.ring_base_address != 0 && !user_ok(args.ring_base_address, 8) {
            return Err(self.refuse(W, EFAULT, format_args!("ring address {:#x}", args.ring_base_address)));
        }
        if args.ring_size != 0 && !args.ring_size.is_power_of_two() {
            return Err(self.refuse(
                W,
                EINVAL,
                format_args!("ring size {} is not a power of two or 0", args.ring_size),
            ));
        }
        args.ring_size = args.ring_size.max(MIN_QUEUE_RING_SIZE);
        for (what, va) in [
            ("read pointer", args.read_pointer_address),
            ("write pointer", args.write_pointer_address),
            ("EOP buffer", args.eop_buffer_address),
            ("context save area", args.ctx_save_restore_address),
        ] {
            let optional = matches!(what, "EOP buffer" | "context save area");
            if !(user_ok(va, 4) || optional && va == 0) {
                return Err(self.refuse(W, EFAULT, format_args!("{what} address {va:#x}")));
            }
        }
        let compute = match args.queue_type {
            QUEUE_TYPE_COMPUTE => true,
            QUEUE_TYPE_SDMA | QUEUE_TYPE_SDMA_XGMI => false,
            QUEUE_TYPE_COMPUTE_AQL => return Err(self.refuse(W, EINVAL, "AQL queues are not simulated")),
            t => return Err(self.refuse(W, ENOTSUPP, format_args!("queue type {t}"))),
        };
        // kfd_ioctl_create_queue: the GPU (EINVAL), bound to the process (ESRCH).
        if args.gpu_id != self.gpu_id {
            return Err(self.refuse(W, EINVAL, format_args!("no GPU {:#x}", args.gpu_id)));
        }
        let mut st = lock(&self.state);
        if !st.vm {
            return Err(self.refuse(W, ESRCH, "the process has no VM on the GPU (ACQUIRE_VM first)"));
        }
        // kfd_queue_acquire_buffers → kfd_queue_buffer_get: the ring (and EOP buffer, context save
        // area) must each start a mapped buffer of their size in pages; the EOP buffer's size the
        // node's (EINVAL).
        let m = self.gpu.memory();
        let ring = args.ring_base_address;
        let ring_bytes = u64::from(args.ring_size);
        let starts_mapped = |va: u64, bytes: u64| match m.allocation(va) {
            Some((start, len, true)) => start == va && (bytes < PAGE || len / PAGE == bytes / PAGE),
            _ => false,
        };
        if !starts_mapped(ring, ring_bytes) {
            return Err(self.refuse(
                W,
                EINVAL,
                format_args!("the ring at {ring:#x} ({ring_bytes:#x} bytes) is not a mapped buffer of that size"),
            ));
        }
        if args.eop_buffer_address != 0 {
            if args.eop_buffer_size != EOP_BUFFER_SIZE {
                return Err(self.refuse(
                    W,
                    EINVAL,
                    format_args!("EOP buffer size {:#x}, the node's is {EOP_BUFFER_SIZE:#x}", args.eop_buffer_size),
                ));
            }
            if !starts_mapped(args.eop_buffer_address, args.eop_buffer_size) {
                return Err(self.refuse(
                    W,
                    EINVAL,
                    format_args!("EOP buffer {:#x} is not mapped", args.eop_buffer_address),
                ));
            }
        }
        if args.ctx_save_restore_address != 0 && !starts_mapped(args.ctx_save_restore_address, 0) {
            return Err(self.refuse(
                W,
                EINVAL,
                format_args!("context save area {:#x} is not mapped", args.ctx_save_restore_address),
            ));
        }
        let Some(qid) = lowest_free(&st.queues, 0, MAX_QUEUES) else {
            return Err(self.refuse(W, ENOMEM, "the process has every queue slot taken"));
        };
        let (rptr, wptr) = (args.read_pointer_address, args.write_pointer_address);
        let made = if compute {
            let eop = args.eop_buffer_address;
            let eop_bytes = if eop == 0 { 0 } else { args.eop_buffer_size };
            self.gpu.create_compute_queue(ComputeQueueDesc { ring, ring_bytes, rptr, wptr, eop, eop_bytes })
        } else {
            self.gpu.create_sdma_queue(SdmaQueueDesc { ring, ring_bytes, rptr, wptr })
        };
        let q = made.map_err(|e| {
            let errno = match e {
                // The CP writes the read pointer through the GPU's VA: unmapped, the user's
                // address is no good to it.
                QueueError::Unmapped { .. } => EFAULT,
                // allocate_doorbell: none left is EBUSY.
                QueueError::NoDoorbell => EBUSY,
                QueueError::Invalid(_) | QueueError::NoQueue(_) => EINVAL,
            };
            self.refuse(W, errno, &e)
        })?;
        st.queues.insert(qid, q);
        args.queue_id = qid;
        // The doorbell's byte offset in the process's two-page doorbell frame (SOC15).
        // CAST: a doorbell index below 1024.
        args.doorbell_offset = mmap::TYPE_DOORBELL | mmap::gpu_id(self.gpu_id) | (8 * q.doorbell as u64);
        Ok(())
    }

    fn destroy_queue(&self, args: &DestroyQueueArgs) -> Result<()> {
        let mut st = lock(&self.state);
        // pqm_destroy_queue: an unknown queue id is EINVAL.
        let Some(q) = st.queues.remove(&args.queue_id) else {
            return Err(self.refuse(IOC_DESTROY_QUEUE, EINVAL, format_args!("no queue {}", args.queue_id)));
        };
        self.gpu.destroy_queue(q.id).map_err(|e| self.refuse(IOC_DESTROY_QUEUE, EINVAL, &e))
    }

    fn mmap_kfd(&self, offset: u64, len: usize) -> Result<Mapping> {
        const W: &str = MMAP_KFD;
        // mmap: an unaligned offset or no length is EINVAL; kfd_mmap by the offset's type.
        if !offset.is_multiple_of(PAGE) || len == 0 {
            return Err(self.refuse(W, EINVAL, format_args!("offset {offset:#x}, {len} bytes")));
        }
        let dev = mmap::get_gpu_id(offset) == self.gpu_id;
        let mut st = lock(&self.state);
        let (ptr, keep) = match mmap::get_type(offset) {
            mmap::TYPE_DOORBELL => {
                if !dev {
                    return Err(self.refuse(W, ENODEV, format_args!("doorbells of no GPU ({offset:#x})")));
                }
                // kfd_doorbell_mmap: exactly the process's doorbell frame.
                if len != mmap::DOORBELL_BYTES {
                    return Err(self.refuse(W, EINVAL, format_args!("doorbell frame of {len} bytes, not 8 KiB")));
                }
                let page = self.gpu.doorbell_page_shared();
                (NonNull::from(page.doorbells()).cast::<u8>(), Keep::Doorbells(page))
            }
            mmap::TYPE_EVENTS => {
                // kfd_event_mmap: the size is the signal page's (EINVAL), which must exist (EINVAL).
                // CAST: usize → u64, widening.
                if page_up(len as u64) != Some(SIGNAL_PAGE_BYTES) {
                    return Err(self.refuse(W, EINVAL, format_args!("event page of {len} bytes, not 32 KiB")));
                }
                let Some(p) = &st.signal_page else {
                    return Err(self.refuse(W, EINVAL, "no signal page (create a signal event first)"));
                };
                let ptr = NonNull::new(p.addr() as *mut u8).ok_or(Error::Os { what: W, errno: ENOMEM })?;
                (ptr, Keep::Host(Arc::clone(&p.pages)))
            }
            _ if !dev => return Err(self.refuse(W, ENODEV, format_args!("offset {offset:#x} names no GPU"))),
            _ => return Err(self.refuse(W, EINVAL, "MMIO and reserved-memory maps are not simulated")),
        };
        st.kfd_maps.push((ptr.as_ptr() as u64, len, keep));
        // SAFETY: `ptr` is the GPU's doorbell page (8 KiB, `len` checked) or the signal page
        // (32 KiB, `len` checked), kept alive by the `Keep` recorded above until `munmap` (or
        // leaked when the SimKfd drops first).
        Ok(unsafe { Mapping::new(ptr, len) })
    }

    fn map_anonymous(&self, len: usize, access: bool) -> Result<Mapping> {
        if len == 0 {
            return Err(self.refuse(MMAP_ANON, EINVAL, "zero length"));
        }
        // CAST: usize → u64, widening.
        let Some(pages) = HostPages::new(len as u64) else {
            return Err(self.refuse(MMAP_ANON, ENOMEM, format_args!("no host memory for {len} bytes")));
        };
        let ptr = pages.as_ptr();
        lock(&self.state).ranges.insert(pages.addr(), HostRange { pages: Arc::new(pages), access });
        // SAFETY: `ptr` starts a live allocation of at least `len` bytes, owned by the range
        // recorded above until `munmap` (or leaked when the SimKfd drops first).
        Ok(unsafe { Mapping::new(ptr, len) })
    }

    fn mmap_render(&self, at: Mapping, offset: u64) -> Result<Mapping> {
        const W: &str = MMAP_RENDER;
        let st = lock(&self.state);
        if !st.render_open {
            return Err(Error::InvalidArgument {
                what: "KFD: the render node is not open (open_render first)",
                value: 0,
            });
        }
        // drm_gem_mmap: an offset of no object is EINVAL, a range longer than it EINVAL.
        let Some(bo) = st.bos.values().find(|b| b.mmap_offset == offset) else {
            return Err(self.refuse(W, EINVAL, format_args!("no buffer at render offset {offset:#x}")));
        };
        // CAST: usize → u64, widening.
        if page_up(at.len() as u64).is_none_or(|l| l > bo.size) {
            return Err(self.refuse(W, EINVAL, format_args!("{} bytes over a buffer of {}", at.len(), bo.size)));
        }
        if bo.pages.addr() + bo.offset != at.addr() {
            return Err(self.refuse(
                W,
                EINVAL,
                format_args!(
                    "the buffer's storage is at {:#x}, not at {:#x} (only over its own reservation)",
                    bo.pages.addr() + bo.offset,
                    at.addr()
                ),
            ));
        }
        // SAFETY: the same range as `at` (a live range of this SimKfd, which `at`'s contract
        // gave), whose storage is the buffer's; kept until `munmap` as `at` was.
        Ok(unsafe { Mapping::new(at.ptr(), at.len()) })
    }

    fn munmap(&self, m: Mapping) -> Result<()> {
        let mut st = lock(&self.state);
        if let Some(i) = st.kfd_maps.iter().position(|(a, l, _)| *a == m.addr() && *l == m.len()) {
            st.kfd_maps.swap_remove(i);
            return Ok(());
        }
        // CAST: usize → u64, widening.
        let whole = st.ranges.get(&m.addr()).is_some_and(|r| page_up(m.len() as u64) == Some(r.pages.len() as u64));
        if whole {
            // The storage lives on while a buffer object still holds it.
            st.ranges.remove(&m.addr());
            return Ok(());
        }
        Err(self.refuse(
            MUNMAP,
            EINVAL,
            format_args!("{:#x} ({} bytes) is no whole range this SimKfd mapped", m.addr(), m.len()),
        ))
    }

    fn read_text(&self, path: &str) -> Result<String> {
        const W: &str = "read a sysfs file";
        let p = path.trim_end_matches('/');
        if let Some(t) = self.files.get(p) {
            return Ok(t.clone());
        }
        let dir = format!("{p}/");
        let errno = if self.files.range(dir.clone()..).next().is_some_and(|(k, _)| k.starts_with(&dir)) {
            EISDIR
        } else {
            ENOENT
        };
        Err(Self::sysfs_error(W, errno, "read", path))
    }

    fn list_dir(&self, path: &str) -> Result<Vec<String>> {
        const W: &str = "list a sysfs directory";
        let p = path.trim_end_matches('/');
        if self.files.contains_key(p) {
            return Err(Self::sysfs_error(W, ENOTDIR, "list", path));
        }
        let dir = format!("{p}/");
        let mut out: Vec<String> = Vec::new();
        for k in self.files.range(dir.clone()..).map(|(k, _)| k).take_while(|k| k.starts_with(&dir)) {
            let name = k[dir.len()..].split('/').next().unwrap_or_default();
            if out.last().is_none_or(|l| l != name) {
                out.push(name.to_string());
            }
        }
        if out.is_empty() {
            return Err(Self::sysfs_error(W, ENOENT, "list", path));
        }
        Ok(out)
    }
}

impl SimKfd {
    /// `MAP_MEMORY_TO_GPU` / `UNMAP_MEMORY_FROM_GPU` (`kfd_ioctl_map_memory_to_gpu`): no devices
    /// or `n_success` past them (EINVAL), the handle's GPU and BO (EINVAL), then each device from
    /// `n_success` on (an unknown one EINVAL), `n_success` counting; unmapping what is not mapped
    /// is EINVAL.
    fn map_or_unmap(
        &self,
        what: &'static str,
        map: bool,
        handle: u64,
        n_devices: &mut u32,
        n_success: &mut u32,
        gpus: &[u32],
    ) -> Result<()> {
        *n_devices = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
        if gpus.is_empty() {
            return Err(self.refuse(what, EINVAL, "no devices"));
        }
        if *n_success as usize > gpus.len() {
            return Err(self.refuse(what, EINVAL, format_args!("n_success {} > {} devices", *n_success, gpus.len())));
        }
        let idr = self.handle_bo(what, handle)?;
        let mut st = lock(&self.state);
        let Some(bo) = st.bos.get_mut(&idr) else {
            return Err(self.refuse(what, EINVAL, format_args!("no buffer with handle {handle:#x}")));
        };
        for (i, &g) in gpus.iter().enumerate().skip(*n_success as usize) {
            if g != self.gpu_id {
                return Err(self.refuse(what, EINVAL, format_args!("no GPU {g:#x}")));
            }
            if map {
                self.gpu.memory().map(bo.va).map_err(|e| self.mem_error(what, &e))?;
                bo.mapped = true;
            } else {
                if !bo.mapped {
                    return Err(self.refuse(what, EINVAL, format_args!("buffer {handle:#x} is not mapped")));
                }
                self.gpu.memory().unmap(bo.va).map_err(|e| self.mem_error(what, &e))?;
                bo.mapped = false;
            }
            // CAST: at most gpus.len(), which fits (n_devices).
            *n_success = i as u32 + 1;
        }
        Ok(())
    }
}

/// Buffers on storage the caller supplies: a virtual device whose buffer objects live in a file
/// its client maps itself (the render node's), not in ranges of [`Kfd::map_anonymous`].
impl SimKfd {
    /// [`Kfd::alloc_memory_of_gpu`] where, for this call, the host range starting at `at` (the
    /// VA of a VRAM or GTT buffer, the page of a `USERPTR`'s user pointer) is `pages`, accessible
    /// user memory when `access` (what a `USERPTR` must be): the same checks in the same order
    /// with the same errno values, and the buffer object keeps `pages` (at `va_addr` in the GPU's
    /// address space) until it is freed. Calls must not race [`Kfd::map_anonymous`] ranges at
    /// `at` nor each other (the caller serialises them).
    pub fn alloc_memory_on(
        &self,
        args: &mut AllocMemoryOfGpuArgs,
        at: u64,
        pages: Arc<HostPages>,
        access: bool,
    ) -> Result<()> {
        let before = lock(&self.state).ranges.insert(at, HostRange { pages, access });
        let r = self.alloc_memory_of_gpu(args);
        let mut st = lock(&self.state);
        match before {
            Some(b) => st.ranges.insert(at, b),
            None => st.ranges.remove(&at),
        };
        r
    }

    /// The sysfs tree of a KFD with one simulated gfx1100 whose render node has `render_minor`
    /// (path → text): what [`SimKfd::sysfs_files`] of [`SimKfd::with_gpu`] serves, without
    /// making one.
    pub fn sysfs_for(render_minor: u32) -> BTreeMap<String, String> {
        sysfs(GPU_ID, render_minor)
    }
}

const _: () = {
    assert!(uapi::mmap::DOORBELL_BYTES == 8 * crate::gpu::DOORBELLS);
};
