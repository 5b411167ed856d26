//! The simulated KGSL with a hook in front: [`HookedKgsl`] forwards every [`KgslIoctl`] call to
//! a [`SimKgsl`] after its [`KgslHook`] has seen it (and may refuse it with an errno), and
//! states what the hook says in place of the simulator's limits and shader support. How a test
//! makes one call fail, records what the device asks, or narrows what the backend states,
//! without writing out every ioctl again.

use crate::SimKgsl;
use hcq_adreno::limits::GpuLimits;
use hcq_ir3::isa::Instr;
use hcq_qcom::Mapping;
use hcq_qcom::kgsl::ioctl::KgslIoctl;
use hcq_qcom::kgsl::uapi::*;
use rustix::io::Errno;
use std::sync::Arc;

/// One KGSL ioctl as the hook sees it, before the simulator does.
#[derive(Clone, Copy, Debug)]
pub enum KgslCall<'a> {
    /// `DEVICE_GETPROPERTY` of property `ty`.
    GetProperty {
        /// The property.
        ty: u32,
    },
    /// `DRAWCTXT_CREATE`.
    DrawctxtCreate(&'a DrawctxtCreate),
    /// `DRAWCTXT_DESTROY`.
    DrawctxtDestroy(&'a DrawctxtDestroy),
    /// `GPUOBJ_ALLOC`.
    GpuobjAlloc(&'a GpuobjAlloc),
    /// `GPUOBJ_INFO`.
    GpuobjInfo(&'a GpuobjInfo),
    /// `GPUOBJ_FREE`, with its timestamp event.
    GpuobjFree(&'a GpuobjFree, Option<&'a GpuEventTimestamp>),
    /// `MAP_USER_MEM`.
    MapUserMem(&'a MapUserMem),
    /// `SHAREDMEM_FREE`.
    SharedmemFree(&'a SharedmemFree),
    /// `GPU_COMMAND` with its command objects.
    GpuCommand(&'a GpuCommand, &'a [CommandObject]),
    /// `DEVICE_WAITTIMESTAMP_CTXTID`.
    WaitTimestamp(&'a WaitTimestampCtxtid),
    /// `CMDSTREAM_READTIMESTAMP_CTXTID`.
    ReadTimestamp(&'a ReadTimestampCtxtid),
    /// The mmap of `len` bytes at `offset` (object id × 4096).
    Mmap {
        /// Bytes.
        len: usize,
        /// The mmap offset.
        offset: u64,
    },
}

/// What a [`HookedKgsl`] does besides forwarding; every method has the default "change
/// nothing".
pub trait KgslHook: Send + Sync {
    /// Called before `call` reaches the simulator: an `Err` is the ioctl's answer, and the
    /// simulator never sees the call.
    fn before(&self, call: KgslCall<'_>) -> Result<(), Errno> {
        let _ = call;
        Ok(())
    }
    /// The limits the backend states, given the simulator's (`sim`).
    fn gpu_limits(&self, sim: GpuLimits) -> GpuLimits {
        sim
    }
    /// Why the backend's shader core does not run `ins`, given the simulator's answer (`sim`).
    fn unsupported_instruction(&self, ins: &Instr, sim: Option<&'static str>) -> Option<&'static str> {
        let _ = ins;
        sim
    }
}

/// A [`SimKgsl`] behind a [`KgslHook`] (see the module docs).
pub struct HookedKgsl<H> {
    sim: Arc<SimKgsl>,
    hook: H,
}

impl<H> core::fmt::Debug for HookedKgsl<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HookedKgsl").field("sim", &self.sim).finish_non_exhaustive()
    }
}

impl<H: KgslHook> HookedKgsl<H> {
    /// `sim` behind `hook`.
    pub fn new(sim: Arc<SimKgsl>, hook: H) -> Self {
        Self { sim, hook }
    }
    /// The simulator.
    pub fn sim(&self) -> &Arc<SimKgsl> {
        &self.sim
    }
    /// The hook (to change or read its state while the device runs).
    pub fn hook(&self) -> &H {
        &self.hook
    }
}

impl<H: KgslHook> KgslIoctl for HookedKgsl<H> {
    fn get_property(&self, ty: u32, out: &mut [u8]) -> Result<(), Errno> {
        self.hook.before(KgslCall::GetProperty { ty })?;
        self.sim.get_property(ty, out)
    }
    fn drawctxt_create(&self, arg: &mut DrawctxtCreate) -> Result<(), Errno> {
        self.hook.before(KgslCall::DrawctxtCreate(arg))?;
        self.sim.drawctxt_create(arg)
    }
    fn drawctxt_destroy(&self, arg: &DrawctxtDestroy) -> Result<(), Errno> {
        self.hook.before(KgslCall::DrawctxtDestroy(arg))?;
        self.sim.drawctxt_destroy(arg)
    }
    fn gpuobj_alloc(&self, arg: &mut GpuobjAlloc) -> Result<(), Errno> {
        self.hook.before(KgslCall::GpuobjAlloc(arg))?;
        self.sim.gpuobj_alloc(arg)
    }
    fn gpuobj_info(&self, arg: &mut GpuobjInfo) -> Result<(), Errno> {
        self.hook.before(KgslCall::GpuobjInfo(arg))?;
        self.sim.gpuobj_info(arg)
    }
    fn gpuobj_free(&self, arg: &GpuobjFree, event: Option<&GpuEventTimestamp>) -> Result<(), Errno> {
        self.hook.before(KgslCall::GpuobjFree(arg, event))?;
        self.sim.gpuobj_free(arg, event)
    }
    fn map_user_mem(&self, arg: &mut MapUserMem) -> Result<(), Errno> {
        self.hook.before(KgslCall::MapUserMem(arg))?;
        self.sim.map_user_mem(arg)
    }
    fn sharedmem_free(&self, arg: &SharedmemFree) -> Result<(), Errno> {
        self.hook.before(KgslCall::SharedmemFree(arg))?;
        self.sim.sharedmem_free(arg)
    }
    fn gpu_command(&self, arg: &mut GpuCommand, cmds: &[CommandObject]) -> Result<(), Errno> {
        self.hook.before(KgslCall::GpuCommand(arg, cmds))?;
        self.sim.gpu_command(arg, cmds)
    }
    fn wait_timestamp(&self, arg: &WaitTimestampCtxtid) -> Result<(), Errno> {
        self.hook.before(KgslCall::WaitTimestamp(arg))?;
        self.sim.wait_timestamp(arg)
    }
    fn read_timestamp(&self, arg: &mut ReadTimestampCtxtid) -> Result<(), Errno> {
        self.hook.before(KgslCall::ReadTimestamp(arg))?;
        self.sim.read_timestamp(arg)
    }
    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno> {
        self.hook.before(KgslCall::Mmap { len, offset })?;
        self.sim.mmap(len, offset)
    }
    unsafe fn munmap(&self, m: &Mapping) {
        // SAFETY: forwarded: `m` came from the simulator's mmap (ours forwards it) and the
        // caller's contract is the simulator's.
        unsafe { self.sim.munmap(m) }
    }
    fn fault_report(&self) -> Option<String> {
        self.sim.fault_report()
    }
    fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]) {
        self.sim.note_program(shader_addr, arg_slots)
    }
    fn describe(&self) -> &'static str {
        self.sim.describe()
    }
    fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits {
        self.hook.gpu_limits(self.sim.gpu_limits(chip))
    }
    fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str> {
        self.hook.unsupported_instruction(ins, self.sim.unsupported_instruction(ins))
    }
}
