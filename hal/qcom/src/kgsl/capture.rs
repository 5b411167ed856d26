//! `.rd` captures of KGSL submissions: [`Capturing`] wraps any [`KgslIoctl`] (the device node or
//! the simulated KGSL), forwards every call, and at each `GPU_COMMAND` writes every mapped GPU
//! object and the submitted IBs to a freedreno `.rd` capture (Mesa's `cffdump` decodes it;
//! `hcq_adreno::rd::read` reads it back).

use super::ioctl::KgslIoctl;
use super::uapi::*;
use crate::Mapping;
use crate::flags::MemFlags;
use hcq::mmio::{MmioBus, VolatileRegion, Width};
use hcq_adreno::limits::GpuLimits;
use hcq_adreno::rd::RdWriter;
use hcq_ir3::isa::Instr;
use rustix::io::Errno;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
struct Obj {
    use_cpu_map: bool,
    gpuaddr: u64,
    map: Option<VolatileRegion>,
}

// SAFETY: the region is an address range read with volatile word loads, and only while the
// mapping is live (it is dropped before the mapping's munmap is forwarded).
unsafe impl Send for Obj {}

/// A backend that records every submission in a `.rd` capture.
pub struct Capturing<B: KgslIoctl> {
    inner: B,
    objs: Mutex<HashMap<u32, Obj>>,
    rd: Mutex<RdWriter>,
}

impl<B: KgslIoctl> core::fmt::Debug for Capturing<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Capturing").finish_non_exhaustive()
    }
}

impl<B: KgslIoctl> Capturing<B> {
    /// Wrap `inner`; the capture starts with `RD_CMD` = `cmd` and the Adreno 630's ids.
    pub fn new(inner: B, cmd: &str) -> Self {
        Self { inner, objs: Mutex::new(HashMap::new()), rd: Mutex::new(RdWriter::new(cmd, 630, 0x0603_0001)) }
    }

    /// The capture so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.rd.lock().map(|r| r.bytes().to_vec()).unwrap_or_default()
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    fn record(&self, cmds: &[CommandObject]) -> Result<(), Errno> {
        let objs = self.objs.lock().map_err(|_| Errno::IO)?;
        let mut buffers: Vec<(u64, Vec<u8>)> = Vec::new();
        for o in objs.values() {
            let Some(r) = &o.map else { continue };
            let mut bytes = vec![0u8; r.size()];
            for (i, c) in bytes.chunks_exact_mut(4).enumerate() {
                let w = r.read(4 * i, Width::U32).map_err(|_| Errno::FAULT)? as u32;
                c.copy_from_slice(&w.to_le_bytes());
            }
            buffers.push((o.gpuaddr, bytes));
        }
        buffers.sort_by_key(|b| b.0);
        let mut rd = self.rd.lock().map_err(|_| Errno::IO)?;
        for (i, c) in cmds.iter().enumerate() {
            // CAST: KGSL IB sizes are bytes < 4 GiB; the rd section holds dwords.
            let dwords = (c.size / 4) as u32;
            let bufs = if i == 0 { &buffers[..] } else { &[][..] };
            rd.submit(bufs.iter().map(|(a, b)| (*a, &b[..])), c.gpuaddr + c.offset, dwords)
                .map_err(|_| Errno::INVAL)?;
        }
        Ok(())
    }
}

impl<B: KgslIoctl> KgslIoctl for Capturing<B> {
    fn get_property(&self, ty: u32, out: &mut [u8]) -> Result<(), Errno> {
        self.inner.get_property(ty, out)
    }
    fn drawctxt_create(&self, arg: &mut DrawctxtCreate) -> Result<(), Errno> {
        self.inner.drawctxt_create(arg)
    }
    fn drawctxt_destroy(&self, arg: &DrawctxtDestroy) -> Result<(), Errno> {
        self.inner.drawctxt_destroy(arg)
    }
    fn gpuobj_alloc(&self, arg: &mut GpuobjAlloc) -> Result<(), Errno> {
        self.inner.gpuobj_alloc(arg)?;
        let use_cpu_map = MemFlags::from_bits_retain(arg.flags).contains(MemFlags::USE_CPU_MAP);
        self.objs.lock().map_err(|_| Errno::IO)?.insert(arg.id, Obj { use_cpu_map, ..Obj::default() });
        Ok(())
    }
    fn gpuobj_info(&self, arg: &mut GpuobjInfo) -> Result<(), Errno> {
        self.inner.gpuobj_info(arg)?;
        if let Some(o) = self.objs.lock().map_err(|_| Errno::IO)?.get_mut(&arg.id)
            && !o.use_cpu_map
        {
            o.gpuaddr = arg.gpuaddr;
        }
        Ok(())
    }
    fn gpuobj_free(&self, arg: &GpuobjFree, event: Option<&GpuEventTimestamp>) -> Result<(), Errno> {
        self.inner.gpuobj_free(arg, event)?;
        self.objs.lock().map_err(|_| Errno::IO)?.remove(&arg.id);
        Ok(())
    }
    fn map_user_mem(&self, arg: &mut MapUserMem) -> Result<(), Errno> {
        self.inner.map_user_mem(arg)
    }
    fn sharedmem_free(&self, arg: &SharedmemFree) -> Result<(), Errno> {
        self.inner.sharedmem_free(arg)
    }
    fn gpu_command(&self, arg: &mut GpuCommand, cmds: &[CommandObject]) -> Result<(), Errno> {
        // The buffers as the GPU will first see them: recorded before the submission runs.
        self.record(cmds)?;
        self.inner.gpu_command(arg, cmds)
    }
    fn wait_timestamp(&self, arg: &WaitTimestampCtxtid) -> Result<(), Errno> {
        self.inner.wait_timestamp(arg)
    }
    fn read_timestamp(&self, arg: &mut ReadTimestampCtxtid) -> Result<(), Errno> {
        self.inner.read_timestamp(arg)
    }
    fn mmap(&self, len: usize, offset: u64) -> Result<Mapping, Errno> {
        let m = self.inner.mmap(len, offset)?;
        let id = u32::try_from(offset >> 12).map_err(|_| Errno::INVAL)?;
        if let Some(o) = self.objs.lock().map_err(|_| Errno::IO)?.get_mut(&id) {
            // SAFETY: the mapping is live until our munmap, which drops this region first;
            // it is only read with volatile word loads.
            o.map = unsafe { VolatileRegion::new(m.ptr, m.len) }.ok();
            if o.use_cpu_map {
                o.gpuaddr = m.ptr.as_ptr() as u64;
            }
        }
        Ok(m)
    }
    unsafe fn munmap(&self, m: &Mapping) {
        if let Ok(mut objs) = self.objs.lock() {
            for o in objs.values_mut() {
                if o.map.as_ref().is_some_and(|r| r.base() == m.ptr) {
                    o.map = None;
                }
            }
        }
        // SAFETY: forwarded from our caller's contract; our own view of the range is gone.
        unsafe { self.inner.munmap(m) }
    }
    fn fault_report(&self) -> Option<String> {
        self.inner.fault_report()
    }
    fn note_program(&self, shader_addr: u64, arg_slots: &[(u32, u32)]) {
        self.inner.note_program(shader_addr, arg_slots)
    }
    fn describe(&self) -> &'static str {
        self.inner.describe()
    }
    fn gpu_limits(&self, chip: GpuLimits) -> GpuLimits {
        self.inner.gpu_limits(chip)
    }
    fn unsupported_instruction(&self, ins: &Instr) -> Option<&'static str> {
        self.inner.unsupported_instruction(ins)
    }
}
