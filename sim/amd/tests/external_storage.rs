//! A `SimKfd` over storage its caller supplies, as a virtual device whose client maps the
//! device's own files does it: buffer objects on `HostPages::external` memory (`alloc_memory_on`,
//! released when the last holder lets go), the GPU's doorbells on host pages the caller also
//! reaches (`Gpu::with_doorbells`), the render node's minor in the topology and `open_render`,
//! and the hook that runs before every pass over the queues.

use hcq_amd::kfd::Kfd;
use hcq_amd::kfd::uapi::*;
use hcq_sim_amd::kfd::errno::*;
use hcq_sim_amd::{DoorbellPage, Gpu, GpuConfig, HostPages, SimKfd};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `bytes` of zeroed page-aligned memory as external pages that count their releases in `gone`.
fn external(bytes: usize, gone: &Arc<AtomicUsize>) -> (Arc<HostPages>, NonNull<u8>) {
    let layout = std::alloc::Layout::from_size_align(bytes, 4096).unwrap();
    // SAFETY: a non-zero layout.
    let p = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).unwrap();
    let g = gone.clone();
    let at = p.as_ptr() as usize;
    let release = Box::new(move || {
        // SAFETY: allocated above with this layout, freed once (here).
        unsafe { std::alloc::dealloc(at as *mut u8, layout) };
        g.fetch_add(1, Ordering::SeqCst);
    });
    // SAFETY: `bytes` of our own allocation, alive until `release` frees it; accessed only through
    // the pages' atomics and the raw pointer below (volatile words).
    (Arc::new(unsafe { HostPages::external(p, bytes, release) }.unwrap()), p)
}

fn kfd_on(gpu: Gpu, minor: u32) -> SimKfd {
    let k = SimKfd::with_gpu(gpu, minor);
    let mut v = AcquireVmArgs { drm_fd: 0, gpu_id: k.gpu_id() };
    assert!(k.acquire_vm(&mut v).unwrap_err().to_string().contains("render node is not open"));
    k.open_render(minor).unwrap();
    k.acquire_vm(&mut v).unwrap();
    k
}

#[test]
fn external_pages_must_be_whole_aligned_pages_and_are_released_once() {
    let gone = Arc::new(AtomicUsize::new(0));
    let (pages, p) = external(8192, &gone);
    assert_eq!((pages.addr(), pages.len()), (p.as_ptr() as u64, 8192));
    drop(pages);
    assert_eq!(gone.load(Ordering::SeqCst), 1);
    let mut buf = vec![0u8; 3 * 4096];
    let odd = NonNull::new(buf.as_mut_ptr().wrapping_add(1)).unwrap();
    // SAFETY: refused before anything is kept (misaligned); `release` is dropped unrun.
    assert!(unsafe { HostPages::external(odd, 4096, Box::new(|| panic!("not to run"))) }.is_none());
    let base = NonNull::new(buf.as_mut_ptr()).unwrap();
    // SAFETY: refused (not whole pages).
    assert!(unsafe { HostPages::external(base, 100, Box::new(|| panic!("not to run"))) }.is_none());
}

#[test]
fn a_buffer_on_supplied_storage_is_the_gpus_at_its_va_until_freed() {
    let kfd = kfd_on(Gpu::new(GpuConfig::default()), 129);
    let gone = Arc::new(AtomicUsize::new(0));
    let (pages, host) = external(8192, &gone);
    let va = 0x7100_0000_0000;
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: va,
        size: 8192,
        gpu_id: kfd.gpu_id(),
        flags: AllocFlags::VRAM.bits(),
        ..Default::default()
    };
    kfd.alloc_memory_on(&mut a, va, pages, false).unwrap();
    // SAFETY: inside the external pages, a volatile word store.
    unsafe { host.as_ptr().add(4100).cast::<u32>().write_volatile(0xfeed_beef) };
    let mut w = [0u8; 4];
    kfd.gpu().memory().host_read(va + 4100, &mut w).unwrap();
    assert_eq!(u32::from_le_bytes(w), 0xfeed_beef, "the GPU's VA reaches the supplied pages");
    // The range was this call's only: another buffer at the same VA has no storage.
    let mut b = AllocMemoryOfGpuArgs { va_addr: va + 0x10_0000, ..a };
    assert!(kfd.alloc_memory_of_gpu(&mut b).is_err());
    // USERPTR over storage that is not accessible user memory: EFAULT; misaligned in it: EINVAL.
    let (up, _) = external(8192, &gone);
    let mut u = AllocMemoryOfGpuArgs {
        va_addr: 0x7200_0000_0000,
        size: 4096,
        gpu_id: kfd.gpu_id(),
        flags: AllocFlags::USERPTR.bits(),
        mmap_offset: 0x7300_0000_0000,
        ..Default::default()
    };
    let e = kfd.alloc_memory_on(&mut u, 0x7300_0000_0000, up.clone(), false).unwrap_err();
    assert!(matches!(e.root(), hcq::Error::Os { errno: EFAULT, .. }), "{e}");
    u.mmap_offset += 8;
    let e = kfd.alloc_memory_on(&mut u, 0x7300_0000_0000, up, true).unwrap_err();
    assert!(matches!(e.root(), hcq::Error::Os { errno: EINVAL, .. }), "{e}");
    assert_eq!(gone.load(Ordering::SeqCst), 1, "the refused user pointer's pages went");
    kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: a.handle }).unwrap();
    assert_eq!(gone.load(Ordering::SeqCst), 2, "the freed buffer's pages went with their last holder");
}

#[test]
fn the_render_minor_is_the_topologys_and_open_renders() {
    let kfd = SimKfd::with_gpu(Gpu::new(GpuConfig::default()), 129);
    let props = &kfd.sysfs_files()["/sys/devices/virtual/kfd/kfd/topology/nodes/1/properties"];
    assert!(props.contains("drm_render_minor 129\n"), "{props}");
    assert!(kfd.sysfs_files().contains_key("/sys/class/drm/renderD129/device/ip_discovery/die/0/11/0/major"));
    assert_eq!(&SimKfd::sysfs_for(129), kfd.sysfs_files());
    assert!(kfd.open_render(128).is_err());
    kfd.open_render(129).unwrap();
}

#[test]
fn doorbells_on_host_pages_run_the_queue_and_the_hook_runs_before_each_pass() {
    let gone = Arc::new(AtomicUsize::new(0));
    let (bells, bell_ptr) = external(8192, &gone);
    assert!(DoorbellPage::on(external(4096, &gone).0).is_none(), "4 KiB is too short for the doorbells");
    let mut gpu = Gpu::with_doorbells(GpuConfig::default(), DoorbellPage::on(bells).unwrap());
    gpu.poll_doorbells(true);
    gpu.start();
    let passes = Arc::new(AtomicUsize::new(0));
    let p = passes.clone();
    gpu.before_pass(Some(Arc::new(move || {
        p.fetch_add(1, Ordering::SeqCst);
    })));
    assert_eq!(gpu.doorbell_page().as_ptr() as usize, bell_ptr.as_ptr() as usize, "the doorbells are the pages");
    let kfd = kfd_on(gpu, 129);
    // Ring, pointers and a target, each on storage of its own.
    let alloc = |va: u64, bytes: usize| {
        let (pages, host) = external(bytes, &gone);
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: va,
            size: bytes as u64,
            gpu_id: kfd.gpu_id(),
            flags: AllocFlags::GTT.bits(),
            ..Default::default()
        };
        kfd.alloc_memory_on(&mut a, va, pages, false).unwrap();
        let mut m = MapMemoryToGpuArgs { handle: a.handle, ..Default::default() };
        kfd.map_memory_to_gpu(&mut m, &[kfd.gpu_id()]).unwrap();
        host
    };
    let (ring_va, ptr_va, dst_va) = (0x7400_0000_0000u64, 0x7400_0001_0000u64, 0x7400_0002_0000u64);
    let ring = alloc(ring_va, 4096);
    let _ptrs = alloc(ptr_va, 4096);
    let dst = alloc(dst_va, 4096);
    let eop_va = 0x7400_0003_0000u64;
    let _eop = alloc(eop_va, 4096);
    let mut q = CreateQueueArgs {
        ring_base_address: ring_va,
        write_pointer_address: ptr_va,
        read_pointer_address: ptr_va + 8,
        ring_size: 4096,
        gpu_id: kfd.gpu_id(),
        queue_type: QUEUE_TYPE_COMPUTE,
        queue_percentage: MAX_QUEUE_PERCENTAGE,
        eop_buffer_address: eop_va,
        eop_buffer_size: 4096,
        ..Default::default()
    };
    kfd.create_queue(&mut q).unwrap();
    let mut words = Vec::new();
    hcq_amd::pm4::release_mem(
        &mut words,
        hcq_amd::pm4::ReleaseMem {
            gcr: 0,
            data_sel: hcq_amd::pm4::raw::release_mem::DATA_32_LOW,
            int_sel: 0,
            addr: hcq_amd::pm4::D::Lit(dst_va),
            data_lo: hcq_amd::pm4::W::Lit(0x1234_5678),
            data_hi: hcq_amd::pm4::W::Lit(0),
            ctxid: 0,
        },
    )
    .unwrap();
    for (i, w) in words.iter().enumerate() {
        // SAFETY: inside the ring's external page, volatile word stores.
        unsafe { ring.as_ptr().add(4 * i).cast::<u32>().write_volatile(*w) };
    }
    let (_, byte) = mmap::doorbell_pages(q.doorbell_offset);
    // SAFETY: the queue's doorbell on the external doorbell pages, a volatile store (the CP
    // thread polls it).
    unsafe { bell_ptr.as_ptr().add(byte as usize).cast::<u64>().write_volatile(words.len() as u64) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // SAFETY: the target's external page, a volatile word load.
    while unsafe { dst.as_ptr().cast::<u32>().read_volatile() } != 0x1234_5678 {
        assert!(
            std::time::Instant::now() < deadline,
            "the queue never ran: {:?}",
            kfd.gpu().queue_status(kfd.queue(q.queue_id).unwrap().id)
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(passes.load(Ordering::SeqCst) > 0, "the hook ran before the passes");
}
