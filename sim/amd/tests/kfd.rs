//! `SimKfd` through hcq-amd's `Kfd` trait only (as a backend holds it: `Arc<dyn Kfd>`), the way
//! tinygrad 0.14's `KFDIface` drives the real driver: topology from sysfs text, memory from
//! anonymous reservations and `ALLOC_MEMORY_OF_GPU`, the host's bytes through the mappings, queues
//! from `CREATE_QUEUE` rung by a plain volatile store to the `mmap_kfd` doorbell frame, completion
//! through `WAIT_EVENTS`; every refusal with the driver's errno.

mod common;

use common::*;
use hcq::Error;
use hcq_amd::kfd::uapi::*;
use hcq_amd::kfd::{Kfd, Mapping, Topology};
use hcq_sim_amd::kfd::errno::*;
use hcq_sim_amd::kfd::{GPU_ID, SimKfd, UNSIGNALED_EVENT_SLOT};
use std::sync::Arc;

/// A buffer: its GPU (= host) address, size, handle and host mapping.
struct Buf {
    va: u64,
    size: u64,
    handle: u64,
    map: Mapping,
}

impl Buf {
    fn write(&self, off: usize, bytes: &[u8]) {
        assert!(off + bytes.len() <= self.map.len());
        for (k, chunk) in bytes.chunks(4).enumerate() {
            let mut w = [0u8; 4];
            let at = off + 4 * k;
            // Keep the neighbours of a partial last word.
            w.copy_from_slice(&self.read(at & !3, 4));
            w[..chunk.len()].copy_from_slice(chunk);
            // SAFETY: inside the mapping (asserted); word-aligned volatile stores (the GPU's
            // accesses are atomic words).
            unsafe { self.map.ptr().as_ptr().add(at).cast::<u32>().write_volatile(u32::from_le_bytes(w)) };
        }
    }
    fn write_u32s(&self, off: usize, words: &[u32]) {
        let b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.write(off, &b);
    }
    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off.is_multiple_of(4) && off + len <= self.map.len().next_multiple_of(4096));
        (0..len.div_ceil(4))
            .flat_map(|k| {
                // SAFETY: inside the mapping's pages (asserted), word-aligned volatile loads.
                unsafe { self.map.ptr().as_ptr().add(off + 4 * k).cast::<u32>().read_volatile() }.to_le_bytes()
            })
            .take(len)
            .collect()
    }
    fn u32_at(&self, off: usize) -> u32 {
        u32::from_le_bytes(self.read(off, 4).try_into().unwrap())
    }
    fn u64_at(&self, off: usize) -> u64 {
        u64::from_le_bytes(self.read(off, 8).try_into().unwrap())
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Vram,
    Uncached,
    Host,
}

/// The errno (and `what`) of an `Os` error.
fn os(e: &Error) -> (&'static str, i32) {
    match e.root() {
        Error::Os { what, errno } => (what, *errno),
        other => panic!("not an OS error: {other}"),
    }
}

fn errno_of<T: std::fmt::Debug>(r: hcq::Result<T>) -> (&'static str, i32) {
    os(&r.expect_err("the call must fail"))
}

/// Open as tinygrad's `KFDIface.__init__` does.
fn open() -> Arc<dyn Kfd> {
    let kfd: Arc<dyn Kfd> = Arc::new(SimKfd::new(config()));
    let topo = Topology::read(&*kfd).unwrap();
    kfd.open_render(topo.gpus[0].drm_render_minor).unwrap();
    let v = kfd.get_version().unwrap();
    assert!((v.major_version, v.minor_version) >= (1, 14));
    kfd.acquire_vm(&mut AcquireVmArgs { drm_fd: 0, gpu_id: GPU_ID }).unwrap();
    kfd.runtime_enable(&mut RuntimeEnableArgs::default()).unwrap();
    kfd
}

/// `KFDIface.alloc` + `map`.
fn alloc(kfd: &dyn Kfd, size: u64, kind: Kind) -> Buf {
    let b = alloc_unmapped(kfd, size, kind);
    let mut m = MapMemoryToGpuArgs { handle: b.handle, ..Default::default() };
    kfd.map_memory_to_gpu(&mut m, &[GPU_ID]).unwrap();
    assert_eq!(m.n_success, 1);
    b
}

fn alloc_unmapped(kfd: &dyn Kfd, size: u64, kind: Kind) -> Buf {
    let flags = match kind {
        Kind::Vram => AllocFlags::tinygrad(false, false, true),
        Kind::Uncached => AllocFlags::tinygrad(false, true, true),
        Kind::Host => AllocFlags::tinygrad(true, false, false),
    };
    let host = matches!(kind, Kind::Host);
    let res = kfd.map_anonymous(size as usize, host).unwrap();
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: res.addr(),
        size,
        gpu_id: GPU_ID,
        flags: flags.bits(),
        mmap_offset: if host { res.addr() } else { 0 },
        ..Default::default()
    };
    kfd.alloc_memory_of_gpu(&mut a).unwrap();
    assert_eq!(a.handle >> 32, u64::from(GPU_ID), "the handle names the GPU (MAKE_HANDLE)");
    let map = if host { res } else { kfd.mmap_render(res, a.mmap_offset).unwrap() };
    assert_eq!(map.addr(), a.va_addr, "the GPU address is the host address");
    Buf { va: a.va_addr, size, handle: a.handle, map }
}

/// tinygrad's device setup: the event page, the queue event (auto-reset signal), the memory and
/// hardware fault events; the wait array.
struct Dev {
    kfd: Arc<dyn Kfd>,
    event_page: Buf,
    queue_event: CreateEventArgs,
    waits: [EventData; 3],
}

impl Dev {
    fn new() -> Dev {
        let kfd = open();
        let event_page = alloc(&*kfd, 0x8000, Kind::Uncached);
        kfd.create_event(&mut CreateEventArgs { event_page_offset: event_page.handle, ..Default::default() }).unwrap();
        let mut queue_event = CreateEventArgs { event_type: EVENT_SIGNAL, auto_reset: 1, ..Default::default() };
        kfd.create_event(&mut queue_event).unwrap();
        let mut mem = CreateEventArgs { event_type: EVENT_MEMORY, ..Default::default() };
        kfd.create_event(&mut mem).unwrap();
        let mut hw = CreateEventArgs { event_type: EVENT_HW_EXCEPTION, ..Default::default() };
        kfd.create_event(&mut hw).unwrap();
        let waits = [
            EventData::for_event(queue_event.event_id),
            EventData::for_event(mem.event_id),
            EventData::for_event(hw.event_id),
        ];
        Dev { kfd, event_page, queue_event, waits }
    }

    fn mailbox(&self) -> u64 {
        self.event_page.va + 8 * u64::from(self.queue_event.event_slot_index)
    }

    /// `KFDIface.sleep(ms)`: the wait result.
    fn sleep(&mut self, ms: u32) -> u32 {
        let mut a = WaitEventsArgs { wait_for_all: 0, timeout: ms, ..Default::default() };
        self.kfd.wait_events(&mut a, &mut self.waits).unwrap();
        assert_eq!(a.num_events, 3);
        a.wait_result
    }
}

/// A queue as `AMDDevice.create_queue` makes it, with its doorbell mapped.
struct Queue {
    ring: Buf,
    gart: Buf,
    doorbells: Mapping,
    doorbell: usize,
    put: u64,
    sdma: bool,
    id: u32,
    _eop: Option<Buf>,
}

fn create_queue(kfd: &dyn Kfd, sdma: bool, ring_bytes: u64) -> Queue {
    let ring = alloc(kfd, ring_bytes, Kind::Uncached);
    let gart = alloc(kfd, 0x100, Kind::Uncached);
    let eop = (!sdma).then(|| alloc(kfd, 0x1000, Kind::Vram));
    let mut a = CreateQueueArgs {
        ring_base_address: ring.va,
        ring_size: ring_bytes as u32,
        gpu_id: GPU_ID,
        queue_type: if sdma { QUEUE_TYPE_SDMA } else { QUEUE_TYPE_COMPUTE },
        queue_percentage: MAX_QUEUE_PERCENTAGE,
        queue_priority: 7,
        eop_buffer_address: eop.as_ref().map_or(0, |e| e.va),
        eop_buffer_size: eop.as_ref().map_or(0, |e| e.size),
        write_pointer_address: gart.va + 0x38,
        read_pointer_address: gart.va + 0x80,
        ..Default::default()
    };
    kfd.create_queue(&mut a).unwrap();
    assert_eq!(mmap::get_type(a.doorbell_offset), mmap::TYPE_DOORBELL);
    assert_eq!(mmap::get_gpu_id(a.doorbell_offset), GPU_ID);
    let (base, off) = mmap::doorbell_pages(a.doorbell_offset);
    let doorbells = kfd.mmap_kfd(base, mmap::DOORBELL_BYTES).unwrap();
    Queue { ring, gart, doorbells, doorbell: off as usize, put: 0, sdma, id: a.queue_id, _eop: eop }
}

impl Queue {
    /// Write `words` at the put pointer, then the write pointer and (a plain volatile 64-bit
    /// store) the doorbell, as tinygrad's `_submit` does.
    fn submit(&mut self, words: &[u32]) {
        let dwords = self.ring.size / 4;
        let start = if self.sdma { self.put / 4 } else { self.put };
        for (k, w) in words.iter().enumerate() {
            let i = (start + k as u64) % dwords;
            self.ring.write_u32s(4 * i as usize, &[*w]);
        }
        self.put += words.len() as u64 * if self.sdma { 4 } else { 1 };
        self.gart.write_u32s(0x38, &[self.put as u32, (self.put >> 32) as u32]);
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        // SAFETY: the doorbell lies in the 8 KiB frame `mmap_kfd` mapped, 8-byte aligned.
        unsafe { self.doorbells.ptr().as_ptr().add(self.doorbell).cast::<u64>().write_volatile(self.put) };
    }

    fn read_pointer(&self) -> u64 {
        self.gart.u64_at(0x80)
    }
}

/// Proves: the sysfs text parses into hcq-amd's topology: one GPU (the CPU node skipped), target
/// (11, 0, 0), the IP versions tinygrad selects its tables by, and the scratch layout of 96 CUs
/// in 6 shader engines; a missing path is ENOENT naming it.
#[test]
fn the_topology_is_one_gfx1100_behind_a_cpu_node() {
    let kfd: Arc<dyn Kfd> = Arc::new(SimKfd::new(config()));
    let t = Topology::read(&*kfd).unwrap();
    assert_eq!(t.gpus.len(), 1, "node 0 is a CPU (gpu_id 0)");
    let g = &t.gpus[0];
    assert_eq!((g.node, g.gpu_id), (1, GPU_ID));
    assert_eq!(g.target(), (11, 0, 0));
    assert_eq!(g.render_node(), "/dev/dri/renderD128");
    assert_eq!((g.ip.gc, g.ip.sdma, g.ip.nbif), ((11, 0, 0), (6, 0, 0), (4, 3, 0)));
    let s = g.scratch_device().unwrap();
    assert_eq!((s.cu_count, s.se_count, s.max_slots_scratch_cu), (96, 6, 32));
    assert_eq!(g.props.get("max_waves_per_simd"), Some(16));
    assert_eq!(g.props.get("cu_per_simd_array"), Some(8));
    let e = kfd.read_text("/sys/devices/virtual/kfd/kfd/topology/nodes/2/gpu_id").unwrap_err();
    assert_eq!(os(&e), ("read a sysfs file", ENOENT));
    assert!(e.to_string().contains("nodes/2/gpu_id"), "{e}");
    assert_eq!(
        errno_of(kfd.list_dir("/sys/devices/virtual/kfd/kfd/topology/nodes/3")),
        ("list a sysfs directory", ENOENT)
    );
    assert_eq!(errno_of(kfd.open_render(129)).1, ENOENT);
}

/// Proves the shared address space and the doorbell path: bytes the host writes through a
/// buffer's mapping are what the GPU reads (a `COPY_DATA`-free check: a `WAIT_REG_MEM` on them
/// must pass), a `RELEASE_MEM` the queue runs after a plain volatile doorbell store (no other
/// call) writes a value the host sees through its mapping, and the interrupt that follows the
/// mailbox write wakes `WAIT_EVENTS` on the auto-reset queue event — once: the next wait times
/// out, as does one before anything was submitted. The slot is reset to unsignaled.
#[test]
fn a_doorbell_store_runs_the_ring_and_its_interrupt_wakes_wait_events() {
    let mut dev = Dev::new();
    let kfd = Arc::clone(&dev.kfd);
    assert_eq!(dev.sleep(0), WAIT_RESULT_TIMEOUT, "nothing signalled yet");
    assert_eq!(dev.event_page.u64_at(8 * dev.queue_event.event_slot_index as usize), UNSIGNALED_EVENT_SLOT);
    let buf = alloc(&*kfd, 0x2000, Kind::Vram);
    buf.write_u32s(0x1000, &[0xfeed_f00d]);
    let mut q = create_queue(&*kfd, false, 0x4000);
    let mut w = wait_mem(buf.va + 0x1000, 0xfeed_f00d, u32::MAX, hcq_sim_amd::cp::pm4::FUNC_EQ);
    w.extend(signal(buf.va + 8, 0x1234_5678));
    let ev = dev.queue_event.event_id;
    w.extend(release_mem(
        dev.mailbox(),
        ev.into(),
        hcq_sim_amd::cp::pm4::DATA_SEL_32,
        hcq_sim_amd::cp::pm4::INT_SEL_SEND_AFTER_WRITE,
        ev,
    ));
    q.submit(&w);
    assert_eq!(dev.sleep(5000), WAIT_RESULT_COMPLETE, "the interrupt wakes the wait");
    assert_eq!(buf.u32_at(8), 0x1234_5678, "the host sees the GPU's write");
    assert_eq!(q.read_pointer(), q.put, "the CP consumed the ring");
    assert_eq!(dev.waits[1].memory_exception().gpu_id, 0, "no fault");
    assert_eq!(dev.waits[2].hw_exception().gpu_id, 0, "no fault");
    assert_eq!(
        dev.event_page.u64_at(8 * dev.queue_event.event_slot_index as usize),
        UNSIGNALED_EVENT_SLOT,
        "acknowledged"
    );
    assert_eq!(dev.sleep(20), WAIT_RESULT_TIMEOUT, "the auto-reset event was consumed");

    // An interrupt whose slot was not written signals nothing (kfd_signal_event_interrupt).
    q.submit(&release_mem(
        buf.va + 16,
        1,
        hcq_sim_amd::cp::pm4::DATA_SEL_32,
        hcq_sim_amd::cp::pm4::INT_SEL_SEND_AFTER_WRITE,
        ev,
    ));
    assert_eq!(dev.sleep(50), WAIT_RESULT_TIMEOUT);
    assert_eq!(buf.u32_at(16), 1, "the packet ran");

    // set_event from the host wakes it too; reset_event takes it back.
    kfd.set_event(&SetEventArgs { event_id: ev, pad: 0 }).unwrap();
    kfd.reset_event(&ResetEventArgs { event_id: ev, pad: 0 }).unwrap();
    assert_eq!(dev.sleep(0), WAIT_RESULT_TIMEOUT);
    kfd.set_event(&SetEventArgs { event_id: ev, pad: 0 }).unwrap();
    assert_eq!(dev.sleep(0), WAIT_RESULT_COMPLETE);
    kfd.destroy_queue(&DestroyQueueArgs { queue_id: q.id, pad: 0 }).unwrap();
    assert_eq!(
        errno_of(kfd.destroy_queue(&DestroyQueueArgs { queue_id: q.id, pad: 0 })),
        ("KFD AMDKFD_IOC_DESTROY_QUEUE", EINVAL)
    );
}

/// Lay a kernel case out in KFD memory as tinygrad does and build its dispatch; the buffers.
/// A kernel argument buffer: itself, its dtype and the CPU's bytes.
type CaseBuf = (Buf, String, Vec<u8>);

fn load_case(kfd: &dyn Kfd, name: &str) -> (Vec<u32>, Vec<CaseBuf>, Vec<Buf>) {
    use hcq_amd::codeobj::CodeObject;
    use hcq_amd::launch;
    use hcq_sim_amd::cp::pm4::*;
    use hcq_sim_amd::cp::regs::*;
    let path = kernels_dir().join(format!("{name}.json"));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let co = CodeObject::parse(&std::fs::read(path.with_file_name(j["co"].as_str().unwrap())).unwrap()).unwrap();
    let k = co.kernels[0].clone();
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
    };
    let dims = |v: &serde_json::Value| -> [u32; 3] {
        let a = v.as_array().unwrap();
        let g = |i: usize| a.get(i).and_then(serde_json::Value::as_u64).unwrap_or(1) as u32;
        [g(0), g(1), g(2)]
    };
    let mut keep = Vec::new();
    let code = alloc(kfd, co.image.len().next_multiple_of(4096) as u64, Kind::Vram);
    code.write(0, &co.image);
    let (groups, local) = (dims(&j["global"]), dims(&j["local"]));
    let mut args = Vec::new();
    let mut bufs = Vec::new();
    for b in j["bufs"].as_array().unwrap() {
        let init = hex(b["init"].as_str().unwrap());
        let buf = alloc(kfd, init.len().max(1) as u64, Kind::Vram);
        buf.write(0, &init);
        args.extend_from_slice(&buf.va.to_le_bytes());
        bufs.push((buf, b["dtype"].as_str().unwrap_or("uchar").to_string(), hex(b["want"].as_str().unwrap())));
    }
    for v in j["vals"].as_array().unwrap() {
        args.extend_from_slice(&(v.as_i64().unwrap() as u32).to_le_bytes());
    }
    let kbytes = (k.kd.kernarg_bytes as usize).max(args.len());
    args.resize(kbytes, 0);
    let kernarg = alloc(kfd, kbytes as u64 + 64, Kind::Vram);
    let packet = kernarg.va + kbytes as u64;
    let pgm = code.va + k.entry as u64;
    args.extend_from_slice(&launch::dispatch_packet(&k.kd, local, groups, pgm, kernarg.va));
    kernarg.write(0, &args);
    let per_lane = k.kd.private_bytes.max(128).div_ceil(4) * 4;
    let wavesize = (64 * per_lane).div_ceil(WAVESIZE_GRANULE);
    let waves = 16u32;
    let scratch = alloc(kfd, u64::from(waves * wavesize * WAVESIZE_GRANULE), Kind::Vram);
    let user = launch::user_sgprs(
        &k.kd,
        &launch::Inputs { kernarg: kernarg.va, dispatch_packet: packet, scratch: scratch.va },
    )
    .unwrap();
    let lds = (k.kd.lds_bytes.div_ceil(LDS_GRANULE)) & 0x1ff;
    let mut w = acquire_mem();
    w.extend(set_sh(COMPUTE_PGM_LO, &[(pgm >> 8) as u32, (pgm >> 40) as u32]));
    w.extend(set_sh(COMPUTE_PGM_RSRC1, &[k.kd.rsrc1 | 1 << 20, k.kd.rsrc2 | lds << 15]));
    w.extend(set_sh(COMPUTE_PGM_RSRC3, &[k.kd.rsrc3]));
    w.extend(set_sh(COMPUTE_TMPRING_SIZE, &[waves | wavesize << 12]));
    w.extend(set_sh(COMPUTE_DISPATCH_SCRATCH_BASE_LO, &[(scratch.va >> 8) as u32, (scratch.va >> 40) as u32]));
    w.extend(set_sh(COMPUTE_RESTART_X, &[0, 0, 0]));
    w.extend(set_sh(COMPUTE_USER_DATA_0, &user));
    w.extend(set_sh(COMPUTE_RESOURCE_LIMITS, &[0]));
    w.extend(set_sh(COMPUTE_START_X, &[0, 0, 0, local[0], local[1], local[2], 0, 0]));
    let initiator =
        INITIATOR_COMPUTE_SHADER_EN | INITIATOR_FORCE_START_AT_000 | if k.kd.wave32 { INITIATOR_CS_W32_EN } else { 0 };
    w.extend(pkt(DISPATCH_DIRECT, &[groups[0], groups[1], groups[2], initiator]));
    w.extend(cs_partial_flush());
    keep.extend([code, kernarg, scratch]);
    (w, bufs, keep)
}

fn end_of_work(dev: &Dev) -> Vec<u32> {
    let ev = dev.queue_event.event_id;
    use hcq_sim_amd::cp::pm4::*;
    release_mem(dev.mailbox(), ev.into(), DATA_SEL_32, INT_SEL_SEND_AFTER_WRITE, ev)
}

/// Proves a real tinygrad kernel runs end to end through KFD-allocated memory: code, arguments,
/// buffers and scratch from `ALLOC_MEMORY_OF_GPU` over anonymous reservations, written and read
/// only through the host mappings, dispatched from a `CREATE_QUEUE` ring rung by its doorbell;
/// the outputs are tinygrad's CPU bytes (a matmul with WMMA and an LDS reduction too).
#[test]
fn tinygrad_kernels_run_through_kfd_memory_and_give_the_cpus_bytes() {
    let mut dev = Dev::new();
    let kfd = Arc::clone(&dev.kfd);
    let mut q = create_queue(&*kfd, false, 0x10000);
    for name in ["add_f32", "sum_all_f32", "matmul_half_wmma"] {
        let (mut w, bufs, _keep) = load_case(&*kfd, name);
        w.extend(end_of_work(&dev));
        q.submit(&w);
        assert_eq!(dev.sleep(20_000), WAIT_RESULT_COMPLETE, "{name}: the dispatch finishes");
        assert_eq!(dev.waits[1].memory_exception().gpu_id, 0, "{name}: no memory fault");
        for (i, (b, dtype, want)) in bufs.iter().enumerate() {
            let got = b.read(0, want.len());
            assert!(compare(dtype, &got, want).is_none(), "{name}: buffer {i}: {:?}", compare(dtype, &got, want));
        }
    }
}

/// Proves the SDMA path: an SDMA queue from `CREATE_QUEUE`, a linear copy between two buffers
/// (one VRAM, one a `USERPTR` of the host's own pages), a fence and a trap whose context is the
/// queue event; the doorbell counts bytes; the host sees the copy.
#[test]
fn an_sdma_copy_through_kfd_lands_in_user_memory() {
    let mut dev = Dev::new();
    let kfd = Arc::clone(&dev.kfd);
    let src = alloc(&*kfd, 0x3000, Kind::Vram);
    let dst = alloc(&*kfd, 0x3000, Kind::Host);
    let data: Vec<u8> = (0..0x2804u32).map(|i| (i * 7 + 3) as u8).collect();
    src.write(0x10, &data);
    let mut q = create_queue(&*kfd, true, 0x1000);
    let ev = dev.queue_event.event_id;
    let mut w = sdma::copy(dst.va + 0x20, src.va + 0x10, data.len() as u32);
    w.extend(sdma::fence(dev.mailbox(), ev));
    w.extend(sdma::trap(ev));
    q.submit(&w);
    assert_eq!(dev.sleep(5000), WAIT_RESULT_COMPLETE);
    assert_eq!(dst.read(0x20, data.len()), data);
    assert_eq!(q.read_pointer(), q.put, "SDMA pointers are bytes");
}

/// Proves a shader's fault reaches `WAIT_EVENTS` as KFD reports a GPU page fault: a kernel whose
/// input buffer was unmapped from the GPU faults, the memory event wakes the wait, its entry holds
/// `kfd_hsa_memory_exception_data` with the GPU id, the faulting page (inside that buffer) and
/// `NotPresent`; the hardware event stays clear.
#[test]
fn a_shader_fault_is_a_memory_exception_event_with_its_address() {
    let mut dev = Dev::new();
    let kfd = Arc::clone(&dev.kfd);
    let mut q = create_queue(&*kfd, false, 0x4000);
    let (mut w, bufs, _keep) = load_case(&*kfd, "add_f32");
    let victim = &bufs[1].0;
    kfd.unmap_memory_from_gpu(&mut UnmapMemoryFromGpuArgs { handle: victim.handle, ..Default::default() }, &[GPU_ID])
        .unwrap();
    w.extend(end_of_work(&dev));
    q.submit(&w);
    assert_eq!(dev.sleep(5000), WAIT_RESULT_COMPLETE, "the fault wakes the wait");
    let m = dev.waits[1].memory_exception();
    assert_eq!(m.gpu_id, GPU_ID);
    assert!(m.va >= victim.va && m.va < victim.va + victim.size, "{:#x} in the buffer at {:#x}", m.va, victim.va);
    assert_eq!(m.va % 4096, 0, "the page address, as the kernel reports it");
    assert_eq!(m.failure.not_present, 1);
    assert_eq!(dev.waits[2].hw_exception().gpu_id, 0);
    // The memory event stays set (not auto-reset) until reset.
    assert_eq!(dev.sleep(0), WAIT_RESULT_COMPLETE);
    kfd.reset_event(&ResetEventArgs { event_id: dev.waits[1].event_id, pad: 0 }).unwrap();
    assert_eq!(dev.sleep(0), WAIT_RESULT_TIMEOUT);
}

/// Proves a hang (a wait that never holds) becomes a hardware-exception event.
#[test]
fn a_hang_is_a_hardware_exception_event() {
    let mut dev = Dev::new();
    let kfd = Arc::clone(&dev.kfd);
    let buf = alloc(&*kfd, 0x1000, Kind::Vram);
    let mut q = create_queue(&*kfd, false, 0x1000);
    q.submit(&wait_mem(buf.va, 1, u32::MAX, hcq_sim_amd::cp::pm4::FUNC_EQ));
    assert_eq!(dev.sleep(5000), WAIT_RESULT_COMPLETE);
    let h = dev.waits[2].hw_exception();
    assert_eq!((h.gpu_id, h.reset_cause), (GPU_ID, HW_EXCEPTION_GPU_HANG));
    assert_eq!(dev.waits[1].memory_exception().gpu_id, 0);
}

/// Proves every refusal carries the driver's errno and `LinuxKfd`'s `what`.
#[test]
fn every_refusal_gives_the_drivers_errno() {
    // Before ACQUIRE_VM: allocations are ENODEV (kfd_bind_process_to_device), queues ESRCH.
    let raw: Arc<dyn Kfd> = Arc::new(SimKfd::new(config()));
    let res = raw.map_anonymous(4096, false).unwrap();
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: res.addr(),
        size: 4096,
        gpu_id: GPU_ID,
        flags: AllocFlags::tinygrad(false, false, false).bits(),
        ..Default::default()
    };
    assert_eq!(errno_of(raw.alloc_memory_of_gpu(&mut a)), ("KFD AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", ENODEV));
    let mut cq = CreateQueueArgs {
        ring_base_address: res.addr(),
        ring_size: 4096,
        gpu_id: GPU_ID,
        read_pointer_address: res.addr(),
        write_pointer_address: res.addr(),
        ..Default::default()
    };
    assert_eq!(errno_of(raw.create_queue(&mut cq)), ("KFD AMDKFD_IOC_CREATE_QUEUE", ESRCH));
    assert!(raw.acquire_vm(&mut AcquireVmArgs { drm_fd: 0, gpu_id: GPU_ID }).is_err(), "the render node is not open");

    let dev = Dev::new();
    let kfd = &*dev.kfd;
    let ring = alloc(kfd, 0x1000, Kind::Uncached);
    let gart = alloc(kfd, 0x1000, Kind::Uncached);
    let eop = alloc(kfd, 0x1000, Kind::Vram);
    let good = CreateQueueArgs {
        ring_base_address: ring.va,
        ring_size: 0x1000,
        gpu_id: GPU_ID,
        queue_type: QUEUE_TYPE_COMPUTE,
        queue_percentage: 100,
        queue_priority: 7,
        eop_buffer_address: eop.va,
        eop_buffer_size: 0x1000,
        read_pointer_address: gart.va,
        write_pointer_address: gart.va + 8,
        ..Default::default()
    };
    let q = |f: &dyn Fn(&mut CreateQueueArgs)| {
        let mut a = good;
        f(&mut a);
        errno_of(kfd.create_queue(&mut a))
    };
    const CQ: &str = "KFD AMDKFD_IOC_CREATE_QUEUE";
    assert_eq!(q(&|a| a.ring_size = 3000), (CQ, EINVAL), "ring size not a power of two");
    assert_eq!(q(&|a| a.ring_size = 0x2000), (CQ, EINVAL), "ring size beyond its buffer");
    assert_eq!(q(&|a| a.queue_priority = 16), (CQ, EINVAL));
    assert_eq!(q(&|a| a.queue_percentage = 101), (CQ, EINVAL));
    assert_eq!(q(&|a| a.queue_type = 9), (CQ, ENOTSUPP));
    assert_eq!(q(&|a| a.gpu_id = 1), (CQ, EINVAL));
    assert_eq!(q(&|a| a.read_pointer_address = 1 << 63), (CQ, EFAULT), "not a user address");
    assert_eq!(q(&|a| a.eop_buffer_size = 0x2000), (CQ, EINVAL), "the node's EOP size is 4 KiB");
    // A ring that is allocated but not mapped, and one where nothing is.
    let unmapped = alloc_unmapped(kfd, 0x1000, Kind::Uncached);
    assert_eq!(q(&|a| a.ring_base_address = unmapped.va), (CQ, EINVAL), "unmapped ring");
    assert_eq!(q(&|a| a.ring_base_address = 0x7000_0000_0000), (CQ, EINVAL), "no buffer at all");
    assert_eq!(q(&|a| a.read_pointer_address = unmapped.va), (CQ, EFAULT), "the CP cannot reach the read pointer");
    let mut ok = good;
    kfd.create_queue(&mut ok).unwrap();

    // Memory.
    const AL: &str = "KFD AMDKFD_IOC_ALLOC_MEMORY_OF_GPU";
    const FR: &str = "KFD AMDKFD_IOC_FREE_MEMORY_OF_GPU";
    let foreign = vec![0u8; 0x3000];
    let p = (foreign.as_ptr() as u64).next_multiple_of(4096);
    let mut up = AllocMemoryOfGpuArgs {
        va_addr: p,
        size: 4096,
        mmap_offset: p,
        gpu_id: GPU_ID,
        flags: AllocFlags::tinygrad(true, false, false).bits(),
        ..Default::default()
    };
    assert_eq!(errno_of(kfd.alloc_memory_of_gpu(&mut up)), (AL, EFAULT), "USERPTR of memory this process did not map");
    let noaccess = kfd.map_anonymous(4096, false).unwrap();
    up.va_addr = noaccess.addr();
    up.mmap_offset = noaccess.addr();
    assert_eq!(errno_of(kfd.alloc_memory_of_gpu(&mut up)), (AL, EFAULT), "USERPTR of a PROT_NONE reservation");
    let mut overlap = AllocMemoryOfGpuArgs {
        va_addr: ring.va,
        size: 4096,
        gpu_id: GPU_ID,
        flags: AllocFlags::tinygrad(false, false, true).bits(),
        ..Default::default()
    };
    assert_eq!(errno_of(kfd.alloc_memory_of_gpu(&mut overlap)), (AL, EINVAL), "a VA taken");
    overlap.va_addr = noaccess.addr() + 8;
    assert_eq!(errno_of(kfd.alloc_memory_of_gpu(&mut overlap)), (AL, EINVAL), "an unaligned VA");
    overlap.va_addr = noaccess.addr();
    overlap.size = 0;
    assert_eq!(errno_of(kfd.alloc_memory_of_gpu(&mut overlap)), (AL, EINVAL), "zero bytes");
    {
        // A GPU of 64 KiB: 1 MiB is ENOMEM.
        let small = SimKfd::new(hcq_sim_amd::GpuConfig { memory_limit: 1 << 16, ..config() });
        small.open_render(128).unwrap();
        small.acquire_vm(&mut AcquireVmArgs { drm_fd: 0, gpu_id: GPU_ID }).unwrap();
        let big = small.map_anonymous(1 << 20, false).unwrap();
        overlap.va_addr = big.addr();
        overlap.size = 1 << 20;
        assert_eq!(errno_of(small.alloc_memory_of_gpu(&mut overlap)), (AL, ENOMEM), "beyond the GPU's memory");
        small.munmap(big).unwrap();
    }
    let b = alloc_unmapped(kfd, 4096, Kind::Vram);
    assert_eq!(
        errno_of(kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: u64::from(GPU_ID) << 32 | 999 })),
        (FR, EINVAL),
        "unknown handle"
    );
    assert_eq!(
        errno_of(kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: b.handle ^ 1 << 32 })),
        (FR, EINVAL),
        "another GPU's handle"
    );
    assert_eq!(
        errno_of(kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: ring.handle })),
        (FR, EBUSY),
        "still mapped"
    );
    assert_eq!(
        errno_of(kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: dev.event_page.handle })),
        (FR, EPERM),
        "the signal page"
    );
    kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: b.handle }).unwrap();
    assert_eq!(
        errno_of(kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: b.handle })),
        (FR, EINVAL),
        "double free"
    );
    const UN: &str = "KFD AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU";
    const MP: &str = "KFD AMDKFD_IOC_MAP_MEMORY_TO_GPU";
    assert_eq!(
        errno_of(kfd.unmap_memory_from_gpu(
            &mut UnmapMemoryFromGpuArgs { handle: unmapped.handle, ..Default::default() },
            &[GPU_ID]
        )),
        (UN, EINVAL),
        "not mapped"
    );
    assert_eq!(
        errno_of(kfd.map_memory_to_gpu(&mut MapMemoryToGpuArgs { handle: unmapped.handle, ..Default::default() }, &[])),
        (MP, EINVAL),
        "no devices"
    );
    let mut m = MapMemoryToGpuArgs { handle: unmapped.handle, ..Default::default() };
    assert_eq!(errno_of(kfd.map_memory_to_gpu(&mut m, &[GPU_ID, 7])), (MP, EINVAL), "an unknown second GPU");
    assert_eq!(m.n_success, 1, "the first was mapped");

    // Mappings.
    const MK: &str = "mmap /dev/kfd";
    assert_eq!(
        errno_of(kfd.mmap_kfd(mmap::TYPE_DOORBELL | mmap::gpu_id(7), 0x2000)),
        (MK, ENODEV),
        "doorbells of no GPU"
    );
    assert_eq!(
        errno_of(kfd.mmap_kfd(mmap::TYPE_DOORBELL | mmap::gpu_id(GPU_ID), 0x1000)),
        (MK, EINVAL),
        "half a frame"
    );
    assert_eq!(
        errno_of(kfd.mmap_kfd(mmap::TYPE_DOORBELL | mmap::gpu_id(GPU_ID) | 8, 0x2000)),
        (MK, EINVAL),
        "unaligned"
    );
    assert_eq!(errno_of(kfd.mmap_kfd(mmap::TYPE_EVENTS, 0x1000)), (MK, EINVAL), "not the event page's size");
    let ev_page = kfd.mmap_kfd(mmap::TYPE_EVENTS, 0x8000).unwrap();
    assert_eq!(ev_page.addr(), dev.event_page.va, "the event page is the buffer tinygrad gave");
    kfd.munmap(ev_page).unwrap();
    let r = kfd.map_anonymous(4096, false).unwrap();
    assert_eq!(
        errno_of(kfd.mmap_render(r, 0xdead_0000)),
        ("mmap the DRM render node", EINVAL),
        "an offset of no buffer"
    );
    assert_eq!(errno_of(kfd.map_anonymous(0, true)), ("mmap anonymous", EINVAL));

    // Events.
    assert_eq!(
        errno_of(kfd.set_event(&SetEventArgs { event_id: dev.waits[1].event_id, pad: 0 })),
        ("KFD AMDKFD_IOC_SET_EVENT", EINVAL),
        "a memory event"
    );
    assert_eq!(
        errno_of(kfd.reset_event(&ResetEventArgs { event_id: 77, pad: 0 })),
        ("KFD AMDKFD_IOC_RESET_EVENT", EINVAL)
    );
    assert_eq!(
        errno_of(kfd.destroy_event(&DestroyEventArgs { event_id: 77, pad: 0 })),
        ("KFD AMDKFD_IOC_DESTROY_EVENT", EINVAL)
    );
    let mut w = WaitEventsArgs { timeout: 0, ..Default::default() };
    assert_eq!(
        errno_of(kfd.wait_events(&mut w, &mut [EventData::for_event(77)])),
        ("KFD AMDKFD_IOC_WAIT_EVENTS", EINVAL)
    );
    let mut again = CreateEventArgs { event_page_offset: ring.handle, ..Default::default() };
    assert_eq!(errno_of(kfd.create_event(&mut again)), ("KFD AMDKFD_IOC_CREATE_EVENT", EINVAL), "a second signal page");
    let mut rt = RuntimeEnableArgs { mode_mask: RUNTIME_ENABLE_MODE_ENABLE_MASK, ..Default::default() };
    kfd.runtime_enable(&mut rt).unwrap();
    assert_eq!(errno_of(kfd.runtime_enable(&mut rt)), ("KFD AMDKFD_IOC_RUNTIME_ENABLE", EBUSY));
    assert_eq!(
        errno_of(kfd.acquire_vm(&mut AcquireVmArgs { drm_fd: 0, gpu_id: 3 })),
        ("KFD AMDKFD_IOC_ACQUIRE_VM", EINVAL)
    );
}

/// Proves memory handling across the calls: `munmap` of the reservation then free (tinygrad's
/// order) works, a handle is reused lowest-first (`idr_alloc`), an
/// event page of the SimKfd's own is mapped at `KFD_MMAP_TYPE_EVENTS` when no buffer was given.
#[test]
fn free_unmap_and_the_own_signal_page() {
    let kfd = open();
    let b = alloc(&*kfd, 0x2000, Kind::Vram);
    let h = b.handle;
    kfd.unmap_memory_from_gpu(&mut UnmapMemoryFromGpuArgs { handle: h, ..Default::default() }, &[GPU_ID]).unwrap();
    kfd.munmap(b.map).unwrap();
    kfd.free_memory_of_gpu(&FreeMemoryOfGpuArgs { handle: h }).unwrap();
    let c = alloc(&*kfd, 0x1000, Kind::Vram);
    assert_eq!(c.handle, h, "the lowest free handle again");
    c.write_u32s(0, &[5]);
    assert_eq!(c.u32_at(0), 5);
    // A signal event with no page given: the KFD's own page.
    let mut e = CreateEventArgs { event_type: EVENT_SIGNAL, ..Default::default() };
    kfd.create_event(&mut e).unwrap();
    assert_eq!((e.event_id, e.event_slot_index, e.event_page_offset), (0, 0, mmap::TYPE_EVENTS));
    let page = kfd.mmap_kfd(e.event_page_offset, 0x8000).unwrap();
    // SAFETY: slot 0 of the 32 KiB page just mapped.
    let slot = unsafe { page.ptr().as_ptr().cast::<u64>().read_volatile() };
    assert_eq!(slot, UNSIGNALED_EVENT_SLOT);
    let mut other = CreateEventArgs { event_type: EVENT_MEMORY, ..Default::default() };
    kfd.create_event(&mut other).unwrap();
    assert_eq!(other.event_id, 0x8000_0000, "non-signal events from KFD_FIRST_NONSIGNAL_EVENT_ID");
    kfd.munmap(page).unwrap();
}
