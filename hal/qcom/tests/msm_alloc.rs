//! The MSM submission path allocates nothing per call: the buffer list is built once and sent
//! as it is; `Msm::submit`, `Msm::wait` (with its fault-count query) and `Msm::retired` leave a
//! counting global allocator untouched once warm. The backend is a fake MSM node that
//! allocates nothing itself (fences counted, objects in anonymous memory), so the count is the
//! host path's alone.
//!
//! The count is the test thread's own (`hcq_testkit::counting_alloc::allocations_in`): the
//! harness's threads allocate too.

use hcq_qcom::Mapping;
use hcq_qcom::flags::MemFlags;
use hcq_qcom::kernel::{Access, BufferList, GpuKernel};
use hcq_qcom::msm::Msm;
use hcq_qcom::msm::ioctl::{DriverVersion, MsmIoctl};
use hcq_qcom::msm::uapi::*;
use rustix::io::Errno;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use hcq_testkit::counting_alloc::{Counting, allocations_in};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// An MSM node that runs nothing: every fence passes at once.
#[derive(Default)]
struct Null {
    handles: AtomicU32,
    fence: AtomicU32,
    listed: AtomicU32,
}

impl MsmIoctl for Null {
    fn version(&self) -> Result<DriverVersion, Errno> {
        Ok(DriverVersion { name: "msm".into(), version: (1, 12, 0) })
    }
    fn get_param(&self, arg: &mut Param) -> Result<(), Errno> {
        arg.value = match arg.param {
            MSM_PARAM_GPU_ID => 630,
            MSM_PARAM_CHIP_ID => 0x0603_0001,
            _ => 1 << 20,
        };
        Ok(())
    }
    fn submitqueue_new(&self, arg: &mut Submitqueue) -> Result<(), Errno> {
        arg.id = 1;
        Ok(())
    }
    fn submitqueue_close(&self, _id: u32) -> Result<(), Errno> {
        Ok(())
    }
    fn submitqueue_query(&self, _id: u32, _param: u32, out: &mut [u8]) -> Result<(), Errno> {
        out.fill(0);
        Ok(())
    }
    fn gem_new(&self, arg: &mut GemNew) -> Result<(), Errno> {
        arg.handle = self.handles.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(())
    }
    fn gem_info(&self, arg: &mut GemInfo) -> Result<(), Errno> {
        arg.value = match arg.info {
            MSM_INFO_GET_OFFSET => u64::from(arg.handle) << 12,
            _ => 0x1_0000_0000 + (u64::from(arg.handle) << 20),
        };
        Ok(())
    }
    fn gem_close(&self, _arg: &GemClose) -> Result<(), Errno> {
        Ok(())
    }
    fn prime_fd_to_handle(&self, _fd: BorrowedFd<'_>, _arg: &mut PrimeHandle) -> Result<(), Errno> {
        Err(Errno::OPNOTSUPP)
    }
    fn gem_submit(&self, arg: &mut GemSubmit, bos: &[GemSubmitBo], cmds: &[GemSubmitCmd]) -> Result<(), Errno> {
        let c = cmds.first().ok_or(Errno::INVAL)?;
        if bos.get(c.submit_idx as usize).is_none() {
            return Err(Errno::INVAL);
        }
        self.listed.store(bos.len() as u32, Ordering::Relaxed);
        arg.fence = self.fence.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(())
    }
    fn wait_fence(&self, _arg: &WaitFence) -> Result<(), Errno> {
        Ok(())
    }
    fn mmap(&self, len: usize, _offset: u64) -> Result<Mapping, Errno> {
        use rustix::mm::{MapFlags, ProtFlags, mmap_anonymous};
        // SAFETY: a fresh private anonymous mapping; it aliases nothing.
        let p = unsafe {
            mmap_anonymous(core::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE)?
        };
        Ok(Mapping { ptr: core::ptr::NonNull::new(p.cast()).ok_or(Errno::NOMEM)?, len })
    }
    unsafe fn munmap(&self, m: &Mapping) {
        // SAFETY: the caller's contract: our mapping, unreferenced.
        let _ = unsafe { rustix::mm::munmap(m.ptr.as_ptr().cast(), m.len) };
    }
}

#[test]
fn submitting_and_waiting_on_msm_allocate_nothing_once_warm() {
    let node = Arc::new(Null::default());
    let k = Msm::with_backend(node.clone()).unwrap();
    let ctx = k.create_context().unwrap();
    let objs: Vec<_> = (0..40).map(|_| k.alloc(4096, MemFlags::USE_CPU_MAP).unwrap()).collect();
    let mut list = BufferList::new();
    for (i, o) in objs.iter().enumerate() {
        list.push(o, if i % 2 == 0 { Access::Read } else { Access::ReadWrite });
    }
    list.push(&objs[3], Access::Read);
    assert_eq!(list.len(), 40, "an object listed twice keeps one entry");
    let ib = objs[39].gpuaddr() + 256;
    // SAFETY: the fake node runs nothing.
    let f = unsafe { k.submit(&ctx, ib, 64, &mut list) }.unwrap();
    k.wait(&ctx, f, 100).unwrap();
    let ((), allocs) = allocations_in(|| {
        for _ in 0..100 {
            // SAFETY: as above.
            let f = unsafe { k.submit(&ctx, ib, 64, &mut list) }.unwrap();
            k.wait(&ctx, f, 100).unwrap();
            assert_eq!(k.retired(&ctx).unwrap(), f);
        }
    });
    assert_eq!(allocs, 0, "the MSM submission path allocated");
    assert_eq!(node.listed.load(Ordering::Relaxed), 40, "every call sends the whole list");
    assert_eq!(node.fence.load(Ordering::Relaxed), 101);
}
