//! KGSL through a fake ioctl backend: device checks, contexts, GPU objects, submission,
//! timestamp waits, and the errors a user sees.

use hcq::Error;
use hcq::mmio::{MmioBus, Width};
use hcq::signal::WaitHooks;
use hcq_qcom::Mapping;
use hcq_qcom::flags::{ContextFlags, MemFlags};
use hcq_qcom::kgsl::Kgsl;
use hcq_qcom::kgsl::ioctl::KgslIoctl;
use hcq_qcom::kgsl::uapi::*;
use hcq_qcom::{FreeAfter, TimestampHooks};
use rustix::io::Errno;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use zerocopy::IntoBytes;

#[derive(Default)]
struct Fake {
    version: (u32, u32),
    chip_id: u32,
    next: Mutex<u32>,
    calls: Mutex<Vec<String>>,
    live_maps: Mutex<usize>,
    wait_error: Mutex<Option<Errno>>,
    alloc_error: Option<Errno>,
    last_cmd: Mutex<Option<(GpuCommand, Vec<CommandObject>)>>,
    last_free: Mutex<Option<(GpuobjFree, Option<GpuEventTimestamp>)>>,
    /// Holds the next `GPU_COMMAND` after it took its timestamp: sends the timestamp, then
    /// returns only when the receiver gets a message (a submit preempted before it returns).
    gate: Mutex<Option<(std::sync::mpsc::Sender<u32>, std::sync::mpsc::Receiver<()>)>>,
}

impl Fake {
    fn a630() -> Self {
        Fake { version: (3, 14), chip_id: 0x0603_0001, ..Default::default() }
    }
    fn log(&self, s: &str) {
        self.calls.lock().unwrap().push(s.to_string());
    }
}

impl KgslIoctl for Fake {
    fn get_property(&self, ty: u32, out: &mut [u8]) -> Result<(), Errno> {
        match ty {
            PROP_VERSION => out.copy_from_slice(
                Version { drv_major: self.version.0, drv_minor: self.version.1, dev_major: 3, dev_minor: 1 }.as_bytes(),
            ),
            PROP_DEVICE_INFO => out.copy_from_slice(
                DevInfo {
                    chip_id: self.chip_id,
                    gpu_id: 630,
                    gmem_sizebytes: 1 << 20,
                    mmu_enabled: 1,
                    ..Default::default()
                }
                .as_bytes(),
            ),
            _ => return Err(Errno::INVAL),
        }
        Ok(())
    }
    fn drawctxt_create(&self, arg: &mut DrawctxtCreate) -> Result<(), Errno> {
        self.log(&format!("create {:#x}", arg.flags));
        arg.drawctxt_id = 7;
        Ok(())
    }
    fn drawctxt_destroy(&self, arg: &DrawctxtDestroy) -> Result<(), Errno> {
        self.log(&format!("destroy {}", arg.drawctxt_id));
        Ok(())
    }
    fn gpuobj_alloc(&self, arg: &mut GpuobjAlloc) -> Result<(), Errno> {
        if let Some(e) = self.alloc_error {
            return Err(e);
        }
        self.log(&format!("alloc {} {:#x}", arg.size, arg.flags));
        let mut n = self.next.lock().unwrap();
        *n += 1;
        arg.id = *n;
        arg.mmapsize = arg.size;
        Ok(())
    }
    fn gpuobj_info(&self, arg: &mut GpuobjInfo) -> Result<(), Errno> {
        arg.gpuaddr = 0x1_0000_0000 + u64::from(arg.id) * 0x10_0000;
        Ok(())
    }
    fn gpuobj_free(&self, arg: &GpuobjFree, event: Option<&GpuEventTimestamp>) -> Result<(), Errno> {
        *self.last_free.lock().unwrap() = Some((*arg, event.copied()));
        Ok(())
    }
    fn map_user_mem(&self, arg: &mut MapUserMem) -> Result<(), Errno> {
        arg.gpuaddr = arg.hostptr;
        Ok(())
    }
    fn sharedmem_free(&self, arg: &SharedmemFree) -> Result<(), Errno> {
        self.log(&format!("sharedmem_free {:#x}", arg.gpuaddr));
        Ok(())
    }
    fn gpu_command(&self, arg: &mut GpuCommand, cmds: &[CommandObject]) -> Result<(), Errno> {
        let mut n = self.next.lock().unwrap();
        *n += 1;
        arg.timestamp = *n;
        drop(n);
        *self.last_cmd.lock().unwrap() = Some((*arg, cmds.to_vec()));
        let gate = self.gate.lock().unwrap().take();
        if let Some((took, go)) = gate {
            took.send(arg.timestamp).unwrap();
            go.recv().unwrap();
        }
        Ok(())
    }
    fn wait_timestamp(&self, _arg: &WaitTimestampCtxtid) -> Result<(), Errno> {
        match *self.wait_error.lock().unwrap() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    fn read_timestamp(&self, arg: &mut ReadTimestampCtxtid) -> Result<(), Errno> {
        arg.timestamp = 3;
        Ok(())
    }
    fn mmap(&self, len: usize, _offset: u64) -> Result<Mapping, Errno> {
        let b: Box<[u64]> = vec![0u64; len.div_ceil(8)].into_boxed_slice();
        let ptr = NonNull::new(Box::into_raw(b).cast::<u8>()).unwrap();
        *self.live_maps.lock().unwrap() += 1;
        Ok(Mapping { ptr, len })
    }
    unsafe fn munmap(&self, m: &Mapping) {
        let words = m.len.div_ceil(8);
        // SAFETY: `m` came from `mmap` above: a leaked Box<[u64]> of `words` elements.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(m.ptr.as_ptr().cast::<u64>(), words)) });
        *self.live_maps.lock().unwrap() -= 1;
    }
}

#[test]
fn a_missing_node_is_a_clear_error() {
    let e = Kgsl::open_path("/nonexistent/kgsl-3d0").unwrap_err();
    assert!(matches!(e, Error::DeviceUnavailable { reason, .. } if reason.contains("missing")), "{e}");
}

#[test]
fn old_drivers_and_other_chips_are_refused() {
    let e = Kgsl::with_backend(Arc::new(Fake { version: (3, 13), ..Fake::a630() })).unwrap_err();
    assert!(matches!(e, Error::Unsupported { value, .. } if value == 3 << 16 | 13), "{e}");
    let e = Kgsl::with_backend(Arc::new(Fake { chip_id: 0x4305_0a01, ..Fake::a630() })).unwrap_err();
    assert!(e.to_string().contains("only the Adreno 630"), "{e}");
    let k = Kgsl::with_backend(Arc::new(Fake { version: (3, 15), ..Fake::a630() })).unwrap();
    assert_eq!(k.info().gpu_id, 630);
    assert_eq!(k.info().gmem_bytes, 1 << 20);
    assert_eq!(k.info().revision(), (6, 3, 0, 1));
    assert_eq!(k.version(), (3, 15));
}

#[test]
fn contexts_objects_and_submissions() {
    let fake = Arc::new(Fake::a630());
    let k = Kgsl::with_backend(fake.clone()).unwrap();
    let ctx = k.create_context(ContextFlags::compute()).unwrap();
    assert_eq!(ctx.id(), 7);
    let obj = k.alloc(100, MemFlags::USE_CPU_MAP).unwrap();
    assert_eq!(obj.size(), 4096, "rounded up to a page");
    assert_eq!(obj.gpuaddr(), obj.bus().base().as_ptr() as u64, "USE_CPU_MAP: GPU address = CPU address");
    let plain = k.alloc(4096, MemFlags::empty()).unwrap();
    assert_eq!(plain.gpuaddr(), 0x1_0000_0000 + u64::from(plain.id()) * 0x10_0000, "from GPUOBJ_INFO");
    drop(plain);
    obj.bus().write(8, Width::U32, 0xdead_beef).unwrap();
    assert_eq!(obj.bus().read(8, Width::U32).unwrap(), 0xdead_beef);
    assert!(obj.bus().read(4096, Width::U32).is_err(), "bounds-checked");
    let calls = fake.calls.lock().unwrap().clone();
    assert_eq!(calls[0], format!("create {:#x}", ContextFlags::compute().bits()));
    assert_eq!(calls[1], format!("alloc 4096 {:#x}", (MemFlags::USE_CPU_MAP.bits() | 12 << 16)), "MEMALIGN(12)");
    assert_eq!(calls[2], format!("alloc 4096 {:#x}", 12 << 16));
    // SAFETY: the fake KGSL runs no GPU: nothing executes the IB.
    let ts = unsafe { k.submit(&ctx, obj.gpuaddr(), 64) }.unwrap();
    assert_eq!(ctx.last_submitted(), ts);
    let (cmd, objs) = fake.last_cmd.lock().unwrap().clone().unwrap();
    assert_eq!(cmd.context_id, 7);
    assert_eq!((objs[0].gpuaddr, objs[0].size, objs[0].flags), (obj.gpuaddr(), 64, 1));
    // SAFETY: the fake KGSL runs no GPU: nothing executes the IB.
    assert!(unsafe { k.submit(&ctx, obj.gpuaddr(), 6) }.is_err(), "not a dword multiple");
    // Freeing after a submission hands the timestamp to the kernel (FREE_ON_EVENT).
    let id = obj.id();
    k.free(obj, FreeAfter::Timestamp { context: 7, timestamp: ts }).unwrap();
    let (f, ev) = fake.last_free.lock().unwrap().unwrap();
    assert_eq!((f.id, f.flags, f.ty), (id, GPUOBJ_FREE_ON_EVENT, GPU_EVENT_TIMESTAMP));
    assert_eq!(ev, Some(GpuEventTimestamp { context_id: 7, timestamp: ts }));
    assert_eq!(*fake.live_maps.lock().unwrap(), 0, "the CPU mapping is gone");
    let o2 = k.alloc(1, MemFlags::empty()).unwrap();
    drop(o2);
    assert_eq!(*fake.live_maps.lock().unwrap(), 0, "dropping unmaps; the GPU object is not freed");
    k.destroy_context(ctx).unwrap();
    assert!(fake.calls.lock().unwrap().contains(&"destroy 7".to_string()));
    assert!(k.alloc(0, MemFlags::empty()).is_err());
}

#[test]
fn allocation_failure_is_out_of_memory() {
    let k = Kgsl::with_backend(Arc::new(Fake { alloc_error: Some(Errno::NOMEM), ..Fake::a630() })).unwrap();
    assert!(
        matches!(k.alloc(1 << 20, MemFlags::empty()).unwrap_err(), Error::OutOfMemory { requested, .. } if requested == 1 << 20)
    );
}

#[test]
fn timestamp_waits_report_timeouts_and_hangs() {
    let fake = Arc::new(Fake::a630());
    let k = Arc::new(Kgsl::with_backend(fake.clone()).unwrap());
    let ctx = Arc::new(k.create_context(ContextFlags::compute()).unwrap());
    k.wait(&ctx, 1, 10).unwrap();
    *fake.wait_error.lock().unwrap() = Some(Errno::TIMEDOUT);
    let e = k.wait(&ctx, 9, 10).unwrap_err();
    assert!(matches!(e, Error::Timeout { awaited: 9, last: 3, timeout_ms: 10, .. }), "{e}");
    let hooks = TimestampHooks::new(k.clone(), ctx.clone());
    hooks.sleep(0);
    assert!(hooks.fault().is_none(), "a timeout inside the sleep hook is not a fault");
    *fake.wait_error.lock().unwrap() = Some(Errno::DEADLK);
    assert!(matches!(k.wait(&ctx, 9, 10).unwrap_err(), Error::DeviceHung { .. }));
    hooks.sleep(0);
    assert!(matches!(hooks.fault(), Some(Error::DeviceHung { .. })), "the hang ends the core wait at once");
}

#[test]
fn user_memory_is_released_after_its_timestamp() {
    let fake = Arc::new(Fake::a630());
    let k = Kgsl::with_backend(fake.clone()).unwrap();
    let ctx = k.create_context(ContextFlags::compute()).unwrap();
    let mut host = vec![0u8; 8192];
    // SAFETY: `host` outlives the mapping (unmapped below, before it drops).
    let m = unsafe { k.map_user(host.as_mut_ptr(), host.len()) }.unwrap();
    assert_eq!(m.gpuaddr, host.as_ptr() as u64);
    let addr = m.gpuaddr;
    k.unmap_user(m, &ctx, 1, 10).unwrap();
    assert!(fake.calls.lock().unwrap().contains(&format!("sharedmem_free {addr:#x}")));
    *fake.wait_error.lock().unwrap() = Some(Errno::TIMEDOUT);
    // SAFETY: as above; the failed unmap below leaves the fake's mapping, which holds no
    // reference to `host`.
    let m = unsafe { k.map_user(host.as_mut_ptr(), host.len()) }.unwrap();
    assert!(k.unmap_user(m, &ctx, 5, 1).is_err(), "not freed while the GPU may still use it");
}

/// Two submits on one context whose ioctls return out of order (the first is preempted after
/// KGSL gave it its timestamp): the context's latest timestamp stays the later one, so a free
/// at `last_submitted` never comes before an IB that uses the object.
#[test]
fn the_last_submitted_timestamp_never_moves_backwards() {
    let (took_tx, took) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel();
    let fake = Arc::new(Fake { gate: Mutex::new(Some((took_tx, go_rx))), ..Fake::a630() });
    let k = Arc::new(Kgsl::with_backend(fake.clone()).unwrap());
    let ctx = Arc::new(k.create_context(ContextFlags::compute()).unwrap());
    let obj = k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap();
    let ib = obj.gpuaddr();
    let first = {
        let (k, ctx) = (k.clone(), ctx.clone());
        // SAFETY: the fake KGSL runs no GPU: nothing executes the IB.
        std::thread::spawn(move || unsafe { k.submit(&ctx, ib, 64) }.unwrap())
    };
    let t1 = took.recv().unwrap();
    // SAFETY: the fake KGSL runs no GPU: nothing executes the IB.
    let t2 = unsafe { k.submit(&ctx, ib, 64) }.unwrap();
    assert_eq!(t2, t1 + 1);
    assert_eq!(ctx.last_submitted(), t2);
    go.send(()).unwrap();
    assert_eq!(first.join().unwrap(), t1);
    assert_eq!(ctx.last_submitted(), t2, "the earlier submit returning last does not move it back");
    k.free(obj, FreeAfter::Timestamp { context: ctx.id(), timestamp: ctx.last_submitted() }).unwrap();
    assert_eq!(fake.last_free.lock().unwrap().unwrap().1.unwrap().timestamp, t2);
}
