//! What the core engine of a [`QcomBackend`](super::QcomBackend) runs on: GPU objects owned by
//! what points into them ([`Retiring`]) seen as MMIO buses ([`ObjBus`]), the IB submit hook
//! ([`GpuCommandHook`]), the timeline wait's hooks ([`QcomHooks`]), and the objects of a load
//! that go back to the kernel if the load fails ([`Fresh`]).

use super::free_after;
use crate::kernel::{BufferList, GpuKernel};
use crate::{Context, FreeAfter, GpuObject, TimestampHooks};
use hcq::Error;
use hcq::Result;
use hcq::mmio::{MmioBus, Width};
use hcq::signal::WaitHooks;
use hcq::stamp::Stamp;
use hcq::submit::IbSubmit;
use std::sync::Arc;

/// A GPU object owned by what points into it (the engine's IB and kernel-argument pools, the
/// timeline's signal page): when its last holder drops, it goes back to KGSL after the
/// context's last submission at that moment, so neither the CPU nor a submission still in
/// flight uses freed memory, and no object outlives its last holder.
pub(super) struct Retiring {
    kernel: Arc<dyn GpuKernel>,
    ctx: Arc<Context>,
    obj: Option<GpuObject>,
}

impl Retiring {
    pub(super) fn new(kernel: &Arc<dyn GpuKernel>, ctx: &Arc<Context>, obj: GpuObject) -> Self {
        Self { kernel: kernel.clone(), ctx: ctx.clone(), obj: Some(obj) }
    }

    pub(super) fn obj(&self) -> &GpuObject {
        // PANIC: never: `obj` is taken only in `drop`.
        self.obj.as_ref().expect("a retiring object is present until it drops")
    }
}

impl Drop for Retiring {
    fn drop(&mut self) {
        if let Some(o) = self.obj.take()
            && let Err(e) = self.kernel.free(o, free_after(&self.ctx))
        {
            log::warn!("QCOM: freeing a GPU object: {e}");
        }
    }
}

/// The first `len` bytes of a KGSL GPU object as a core MMIO bus (volatile accesses through its
/// CPU mapping): the memory of the engine's IB pool and of the kernel-argument pool.
pub(super) struct ObjBus {
    obj: Arc<Retiring>,
    len: usize,
}

impl ObjBus {
    pub(super) fn new(obj: Arc<Retiring>, len: usize) -> Result<Self> {
        hcq::mmio::check_range("QCOM object window", 0, len, obj.obj().bus().size())?;
        Ok(Self { obj, len })
    }
}

impl MmioBus for ObjBus {
    fn size(&self) -> usize {
        self.len
    }
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        hcq::mmio::check_range("QCOM object read", offset, width.bytes(), self.len)?;
        self.obj.obj().bus().read(offset, width)
    }
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        hcq::mmio::check_range("QCOM object write", offset, width.bytes(), self.len)?;
        self.obj.obj().bus().write(offset, width, value)
    }
    fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<()> {
        hcq::mmio::check_range("QCOM object write", offset, src.len(), self.len)?;
        hcq::mmio::write_bytes_by_words(self.obj.obj().bus(), "QCOM buffer write", offset, src)
    }
    fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        hcq::mmio::check_range("QCOM object read", offset, dst.len(), self.len)?;
        self.obj.obj().bus().read_bytes(offset, dst)
    }
}

/// A device error with the backend's fault report (a simulated CP's) as context, when there is
/// one.
pub(super) fn with_fault(kernel: &dyn GpuKernel, e: Error) -> Error {
    match kernel.fault_report() {
        Some(f) if matches!(e.root(), Error::DeviceHung { .. }) => e.context(f),
        _ => e,
    }
}

/// The IB engine's submit hook: `IOCTL_KGSL_GPU_COMMAND` (or MSM `GEM_SUBMIT`) with the IB
/// (the kernel's ring write and its barriers follow; the engine issued the device write barrier
/// before this call), referencing every object of the backend (its buffer list, built once at
/// the load).
pub(super) struct GpuCommandHook {
    pub(super) kernel: Arc<dyn GpuKernel>,
    pub(super) ctx: Arc<Context>,
    pub(super) buffers: BufferList,
}

impl IbSubmit for GpuCommandHook {
    fn submit_ib(&mut self, addr: u64, bytes: u64, _stamp: Stamp) -> Result<()> {
        // SAFETY: the engine calls this hook only from `Engine::submit`, whose caller
        // (`QcomBackend::submit_call`) vouched that the queue names this backend's live
        // objects; `addr` is the engine's IB slot it just wrote, in the IB pool object. Every
        // object of the backend is in `buffers` and goes back to the kernel only after the
        // context's last submission (`Retiring`, `free_after`), and a slot is rewritten only
        // once the call that used it passed its stamp.
        let r = unsafe { self.kernel.submit(&self.ctx, addr, bytes, &mut self.buffers) };
        r.map(|_| ()).map_err(|e| with_fault(&*self.kernel, e))
    }
}

/// The timeline wait's hooks: sleep in KGSL `WAITTIMESTAMP` on the context
/// ([`TimestampHooks`]); a fault seen there ends the wait at once, with the simulated CP's
/// report (the IB offset) as context on `QCOM:SIM`.
#[derive(Debug)]
pub(super) struct QcomHooks {
    pub(super) inner: TimestampHooks,
    pub(super) kernel: Arc<dyn GpuKernel>,
}

impl WaitHooks for QcomHooks {
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn yield_now(&self) {
        self.inner.yield_now()
    }
    fn sleep(&self, idle_ns: u64) {
        self.inner.sleep(idle_ns)
    }
    fn fault(&self) -> Option<Error> {
        self.inner.fault().map(|e| with_fault(&*self.kernel, e))
    }
}

/// A GPU object that goes back to KGSL (never submitted) if dropped before [`Fresh::keep`]:
/// what a load allocated before one of its steps failed is freed, not left to the file close.
/// (The engine's shared pools are [`Retiring`] objects, which free themselves.)
pub(super) struct Fresh<'a> {
    kernel: &'a dyn GpuKernel,
    obj: Option<GpuObject>,
}

impl<'a> Fresh<'a> {
    pub(super) fn new(kernel: &'a dyn GpuKernel, obj: GpuObject) -> Self {
        Self { kernel, obj: Some(obj) }
    }
    pub(super) fn get(&self) -> &GpuObject {
        // PANIC: `obj` is taken only by `keep` (which consumes self) and `drop`.
        self.obj.as_ref().expect("held until keep or drop")
    }
    pub(super) fn keep(mut self) -> GpuObject {
        // PANIC: as in `get`.
        self.obj.take().expect("held until keep or drop")
    }
}

impl Drop for Fresh<'_> {
    fn drop(&mut self) {
        let Some(o) = self.obj.take() else { return };
        let addr = o.gpuaddr();
        if let Err(e) = self.kernel.free(o, FreeAfter::NeverSubmitted) {
            log::warn!("QCOM: freeing GPU object at {addr:#x} after a failed load step: {e}");
        }
    }
}
