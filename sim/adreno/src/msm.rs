//! A simulated MSM DRM driver: an [`MsmIoctl`] over the same simulated GPU as [`SimKgsl`] (its
//! memory, command processor, shader core and fault reporting), so `MSM+QCOM:SIM` runs the MSM
//! code path of hcq-qcom on the very simulator `QCOM:SIM` runs the KGSL one on.
//!
//! The MSM ioctls are answered as `drivers/gpu/drm/msm` answers them, on top of the simulated
//! KGSL's objects, contexts and timestamps:
//!
//! - a GEM object is a simulated GPU object (its handle is the object id; its mmap offset
//!   `id << 12`, as the KGSL side maps it; its IOVA where the simulated GPU sees it);
//! - a submit queue is a simulated context; a fence is its timestamp (from 1, as the kernel's
//!   per-queue fence ids);
//! - `GEM_SUBMIT` checks what the kernel checks (queue, pipe and flags, every buffer's flags and
//!   handle, no handle twice, each command's buffer index, offset and size) and runs the
//!   commands on the CP; every listed buffer is held until the submission retires, so a
//!   `GEM_CLOSE` during one frees the object only after it (an object the IB uses but that is
//!   not listed is freed at once, and the GPU faults on it, as it would on the kernel);
//! - `WAIT_FENCE` takes the absolute `CLOCK_MONOTONIC` deadline: `EINVAL` for a fence never
//!   submitted, `ETIMEDOUT` at the deadline. The simulated CP stops at its first fault, and, as
//!   the kernel's recovery retires the faulting submission, waits then pass and every queue
//!   that submitted work reports one fault (`SUBMITQUEUE_QUERY(FAULTS)`); later submissions
//!   are refused with `EIO`;
//! - `PRIME_FD_TO_HANDLE` maps any mappable descriptor (a memfd: udmabuf makes one a dma-buf
//!   on Linux) and lets the GPU see it.

use crate::kgsl::{Backing, SimKgsl};
use hcq_adreno::limits::GpuLimits;
use hcq_ir3::isa::Instr;
use hcq_qcom::Mapping;
use hcq_qcom::kgsl::ioctl::KgslIoctl;
use hcq_qcom::kgsl::uapi::{
    CommandObject, DrawctxtCreate, DrawctxtDestroy, GPU_EVENT_TIMESTAMP, GPUOBJ_FREE_ON_EVENT, GpuCommand,
    GpuEventTimestamp, GpuobjAlloc, GpuobjFree, GpuobjInfo, MapUserMem, SharedmemFree, WaitTimestampCtxtid,
};
use hcq_qcom::msm::ioctl::{DriverVersion, MsmIoctl};
use hcq_qcom::msm::uapi::*;
use rustix::io::Errno;
use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::Mutex;

/// `MSM_PIPE_ID_MASK`.
const PIPE_ID_MASK: u32 = 0xffff;
/// `MSM_SUBMIT_FLAGS`: every valid submit flag.
const SUBMIT_FLAGS: u32 = 0xfe00_0000;
/// `MSM_BO_FLAGS`: scanout, GPU read-only, the cache mode.
const BO_FLAGS: u32 = 0x0000_0001 | 0x0000_0002 | 0x000f_0000;
/// The buffer flags of which a listed buffer needs one (`MANDATORY_FLAGS` in msm_gem_submit.c).
const MANDATORY_FLAGS: u32 = MSM_SUBMIT_BO_READ | MSM_SUBMIT_BO_WRITE;
/// `MSM_WAIT_FENCE_FLAGS`.
const WAIT_FENCE_FLAGS: u32 = 0x1;
/// Priorities a queue may ask for (0 the highest).
const PRIORITIES: u32 = 3;
/// `MSM_SUBMIT_CMD_BUF` .. `MSM_SUBMIT_CMD_CTX_RESTORE_BUF`.
const CMD_TYPES: core::ops::RangeInclusive<u32> = 1..=3;
/// Handles of imported dma-bufs start here (object ids stay below).
const IMPORT_HANDLE_BASE: u32 = 0x4000_0000;
/// The driver version the simulated node reports.
pub const SIM_DRIVER_VERSION: (i32, i32, i32) = (1, 12, 0);

#[derive(Clone, Copy)]
struct Bo {
    iova: u64,
    size: u64,
}

struct Import {
    ptr: NonNull<u8>,
    len: usize,
}

#[derive(Default)]
struct State {
    /// Live GEM objects by handle.
    bos: HashMap<u32, Bo>,
    imports: HashMap<u32, Import>,
    next_import: u32,
    /// Queue id → its last fence.
    queues: HashMap<u32, u32>,
    /// Handle → the (queue, fence) of the last submission that listed it.
    last_use: HashMap<u32, (u32, u32)>,
    /// One list of command objects, reused by every submission.
    cmds: Vec<CommandObject>,
}

// SAFETY: `Import` is an address range of a mapping this simulator made and alone unmaps; the
// state is only reached under the mutex.
unsafe impl Send for State {}

/// The simulated MSM DRM device (see the module docs).
pub struct SimMsm {
    kgsl: SimKgsl,
    state: Mutex<State>,
}

impl core::fmt::Debug for SimMsm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimMsm").finish_non_exhaustive()
    }
}

impl SimMsm {
    /// The MSM interface over `kgsl` (a simulated GPU, its dispatch and backing chosen).
    pub fn new(kgsl: SimKgsl) -> Self {
        Self { kgsl, state: Mutex::new(State { next_import: IMPORT_HANDLE_BASE, ..State::default() }) }
    }

    /// A simulated Adreno 630 with `dispatch` as its shader core and `backing` for its memory.
    pub fn with_backing(dispatch: Box<dyn crate::cp::ShaderCore + Send>, backing: Box<dyn Backing>) -> Self {
        Self::new(SimKgsl::with_backing(dispatch, backing))
    }

    /// The simulated GPU underneath (pause it, read its fault, count its objects).
    pub fn sim(&self) -> &SimKgsl {
        &self.kgsl
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>, Errno> {
        self.state.lock().map_err(|_| Errno::IO)
    }

    fn faulted(&self) -> bool {
        self.kgsl.fault().is_some()
    }
}

impl Drop for SimMsm {
    fn drop(&mut self) {
        if let Ok(s) = self.state.get_mut() {
            for (_, i) in s.imports.drain() {
                // SAFETY: our own mapping of the imported descriptor; the GPU side (the
                // simulated KGSL's block) is never accessed again once this device drops.
                let _ = unsafe { rustix::mm::munmap(i.ptr.as_ptr().cast(), i.len) };
            }
        }
    }
}

impl MsmIoctl for SimMsm {
    fn version(&self) -> Result<DriverVersion, Errno> {
        Ok(DriverVersion { name: "msm".into(), version: SIM_DRIVER_VERSION })
    }

    fn get_param(&self, arg: &mut Param) -> Result<(), Errno> {
        if arg.pipe != MSM_PIPE_3D0 || arg.pad != 0 {
            return Err(Errno::INVAL);
        }
        let mut d = hcq_qcom::kgsl::uapi::DevInfo::default();
        self.kgsl.get_property(hcq_qcom::kgsl::uapi::PROP_DEVICE_INFO, zerocopy::IntoBytes::as_mut_bytes(&mut d))?;
        arg.value = match arg.param {
            MSM_PARAM_GPU_ID => d.gpu_id.into(),
            MSM_PARAM_CHIP_ID => d.chip_id.into(),
            MSM_PARAM_GMEM_SIZE => d.gmem_sizebytes,
            // a6xx: GMEM appears at 0x100000 to the UCHE.
            MSM_PARAM_GMEM_BASE => 0x10_0000,
            MSM_PARAM_FAULTS => u64::from(self.faulted()),
            _ => return Err(Errno::INVAL),
        };
        Ok(())
    }

    fn submitqueue_new(&self, arg: &mut Submitqueue) -> Result<(), Errno> {
        if arg.flags != 0 || arg.prio >= PRIORITIES {
            return Err(Errno::INVAL);
        }
        let mut c = DrawctxtCreate::default();
        self.kgsl.drawctxt_create(&mut c)?;
        arg.id = c.drawctxt_id;
        self.lock()?.queues.insert(c.drawctxt_id, 0);
        Ok(())
    }

    fn submitqueue_close(&self, id: u32) -> Result<(), Errno> {
        if self.lock()?.queues.remove(&id).is_none() {
            return Err(Errno::NOENT);
        }
        self.kgsl.drawctxt_destroy(&DrawctxtDestroy { drawctxt_id: id })
    }

    fn submitqueue_query(&self, id: u32, param: u32, out: &mut [u8]) -> Result<(), Errno> {
        let submitted = *self.lock()?.queues.get(&id).ok_or(Errno::NOENT)? != 0;
        if param != MSM_SUBMITQUEUE_PARAM_FAULTS {
            return Err(Errno::INVAL);
        }
        let faults = u32::from(submitted && self.faulted()).to_ne_bytes();
        let n = out.len().min(faults.len());
        out[..n].copy_from_slice(&faults[..n]);
        Ok(())
    }

    fn gem_new(&self, arg: &mut GemNew) -> Result<(), Errno> {
        if arg.flags & !BO_FLAGS != 0 || arg.size == 0 {
            return Err(Errno::INVAL);
        }
        let mut a = GpuobjAlloc { size: arg.size, ..GpuobjAlloc::default() };
        self.kgsl.gpuobj_alloc(&mut a)?;
        let mut i = GpuobjInfo { id: a.id, ..GpuobjInfo::default() };
        self.kgsl.gpuobj_info(&mut i)?;
        self.lock()?.bos.insert(a.id, Bo { iova: i.gpuaddr, size: a.mmapsize });
        arg.handle = a.id;
        Ok(())
    }

    fn gem_info(&self, arg: &mut GemInfo) -> Result<(), Errno> {
        let mut s = self.lock()?;
        if let Some(i) = s.imports.get(&arg.handle) {
            return match arg.info {
                MSM_INFO_GET_IOVA => {
                    arg.value = i.ptr.as_ptr() as u64;
                    Ok(())
                }
                _ => Err(Errno::INVAL),
            };
        }
        let bo = s.bos.get_mut(&arg.handle).ok_or(Errno::NOENT)?;
        match arg.info {
            MSM_INFO_GET_OFFSET => arg.value = u64::from(arg.handle) << 12,
            MSM_INFO_GET_IOVA => arg.value = bo.iova,
            MSM_INFO_SET_IOVA => {
                self.kgsl.set_gpu_address(arg.handle, arg.value)?;
                bo.iova = arg.value;
            }
            _ => return Err(Errno::INVAL),
        }
        Ok(())
    }

    fn gem_close(&self, arg: &GemClose) -> Result<(), Errno> {
        let mut s = self.lock()?;
        if let Some(i) = s.imports.remove(&arg.handle) {
            s.last_use.remove(&arg.handle);
            let gpuaddr = i.ptr.as_ptr() as u64;
            // The GPU stops seeing it before the host mapping goes.
            let r = self.kgsl.sharedmem_free(&SharedmemFree { gpuaddr });
            // SAFETY: our own mapping of the imported descriptor, no longer in the GPU's
            // memory (freed just above), referenced by nothing else.
            let _ = unsafe { rustix::mm::munmap(i.ptr.as_ptr().cast(), i.len) };
            return r;
        }
        if s.bos.remove(&arg.handle).is_none() {
            return Err(Errno::INVAL);
        }
        // The kernel holds every buffer of a submission until it retires.
        let free = match s.last_use.remove(&arg.handle) {
            Some((queue, fence)) => (
                GpuobjFree {
                    flags: GPUOBJ_FREE_ON_EVENT,
                    id: arg.handle,
                    ty: GPU_EVENT_TIMESTAMP,
                    ..Default::default()
                },
                Some(GpuEventTimestamp { context_id: queue, timestamp: fence }),
            ),
            None => (GpuobjFree { id: arg.handle, ..Default::default() }, None),
        };
        drop(s);
        self.kgsl.gpuobj_free(&free.0, free.1.as_ref())
    }

    fn prime_fd_to_handle(&self, fd: BorrowedFd<'_>, arg: &mut PrimeHandle) -> Result<(), Errno> {
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        let len = usize::try_from(rustix::fs::fstat(fd)?.st_size).map_err(|_| Errno::INVAL)?;
        if len == 0 || len % 4096 != 0 {
            return Err(Errno::INVAL);
        }
        // SAFETY: a fresh shared mapping of the descriptor at a kernel-chosen address: it
        // aliases no Rust object, and only the simulated GPU's volatile accesses reach it.
        let p =
            unsafe { mmap(core::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, fd, 0)? };
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Errno::NOMEM)?;
        let mut m = MapUserMem { hostptr: ptr.as_ptr() as u64, len: len as u64, ..MapUserMem::default() };
        let mut s = self.lock()?;
        if let Err(e) = self.kgsl.map_user_mem(&mut m) {
            // SAFETY: just mapped, handed to nobody.
            let _ = unsafe { rustix::mm::munmap(p, len) };
            return Err(e);
        }
        let handle = s.next_import;
        s.next_import += 1;
        s.imports.insert(handle, Import { ptr, len });
        arg.handle = handle;
        Ok(())
    }

    fn gem_submit(&self, arg: &mut GemSubmit, bos: &[GemSubmitBo], cmds: &[GemSubmitCmd]) -> Result<(), Errno> {
        if arg.flags & PIPE_ID_MASK != MSM_PIPE_3D0 || arg.flags & !(PIPE_ID_MASK | SUBMIT_FLAGS) != 0 {
            return Err(Errno::INVAL);
        }
        let mut s = self.lock()?;
        let st = &mut *s;
        if !st.queues.contains_key(&arg.queueid) {
            return Err(Errno::NOENT);
        }
        if self.faulted() {
            return Err(Errno::IO);
        }
        for (i, b) in bos.iter().enumerate() {
            if b.flags & !MSM_SUBMIT_BO_FLAGS != 0 || b.flags & MANDATORY_FLAGS == 0 {
                return Err(Errno::INVAL);
            }
            if !st.bos.contains_key(&b.handle) && !st.imports.contains_key(&b.handle) {
                return Err(Errno::INVAL);
            }
            if bos[..i].iter().any(|o| o.handle == b.handle) {
                return Err(Errno::INVAL);
            }
        }
        st.cmds.clear();
        for c in cmds {
            if !CMD_TYPES.contains(&c.ty) || c.nr_relocs != 0 {
                return Err(Errno::INVAL);
            }
            let b = bos.get(c.submit_idx as usize).ok_or(Errno::INVAL)?;
            let bo = st.bos.get(&b.handle).copied().ok_or(Errno::INVAL)?;
            let end = u64::from(c.submit_offset) + u64::from(c.size);
            if c.size == 0 || c.size % 4 != 0 || c.submit_offset % 4 != 0 || end > bo.size {
                return Err(Errno::INVAL);
            }
            // Only plain command buffers run (an IB target is reached from another one).
            if c.ty == MSM_SUBMIT_CMD_BUF {
                st.cmds.push(CommandObject {
                    gpuaddr: bo.iova + u64::from(c.submit_offset),
                    size: c.size.into(),
                    flags: 1,
                    ..Default::default()
                });
            }
        }
        if st.cmds.is_empty() {
            return Err(Errno::INVAL);
        }
        let mut g = GpuCommand { context_id: arg.queueid, ..GpuCommand::default() };
        self.kgsl.gpu_command(&mut g, &st.cmds).map_err(|e| if e == Errno::DEADLK { Errno::IO } else { e })?;
        for b in bos {
            st.last_use.insert(b.handle, (arg.queueid, g.timestamp));
        }
        st.queues.insert(arg.queueid, g.timestamp);
        arg.fence = g.timestamp;
        Ok(())
    }

    fn wait_fence(&self, arg: &WaitFence) -> Result<(), Errno> {
        if arg.flags & !WAIT_FENCE_FLAGS != 0 {
            return Err(Errno::INVAL);
        }
        let last = *self.lock()?.queues.get(&arg.queueid).ok_or(Errno::NOENT)?;
        if arg.fence.wrapping_sub(last) as i32 > 0 {
            return Err(Errno::INVAL);
        }
        let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        let ns = |sec: i64, nsec: i64| i128::from(sec) * 1_000_000_000 + i128::from(nsec);
        let left = ns(arg.timeout.tv_sec, arg.timeout.tv_nsec) - ns(now.tv_sec as i64, now.tv_nsec as i64);
        // CAST: clamped to [0, u32::MAX] milliseconds, rounded up.
        let ms = ((left.max(0) + 999_999) / 1_000_000).min(u32::MAX.into()) as u32;
        match self.kgsl.wait_timestamp(&WaitTimestampCtxtid {
            context_id: arg.queueid,
            timestamp: arg.fence,
            timeout: ms,
        }) {
            // The kernel's recovery retires the faulting submission (the fault is counted).
            Err(Errno::DEADLK) => Ok(()),
            r => r,
        }
    }

    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno> {
        self.kgsl.mmap(len, offset)
    }

    unsafe fn munmap(&self, m: &Mapping) {
        // SAFETY: forwarded: the caller's contract is the simulated KGSL's.
        unsafe { self.kgsl.munmap(m) }
    }

    fn fault_report(&self) -> Option<String> {
        self.kgsl.fault()
    }
    fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]) {
        self.kgsl.note_program(shader_addr, arg_slots)
    }
    fn describe(&self) -> &'static str {
        "simulated MSM DRM + ir3 interpreter,"
    }
    fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits {
        crate::limits::gpu_limits(chip)
    }
    fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str> {
        crate::limits::unsupported_instruction(ins)
    }
}
