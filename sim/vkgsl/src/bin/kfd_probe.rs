//! `vkfd-probe SCENARIO`: a KFD client the crate's tests run with `libhcq_vkgsl.so` preloaded
//! (`tests/kfd.rs`), doing what tinygrad's `KFDIface` does through libc's `open`, `opendir`,
//! `ioctl` and `mmap`: the topology from sysfs, `/dev/kfd` and the render node, a VM, buffers at
//! its own reservations mapped from the render node, a signal page, a PM4 compute queue whose
//! doorbell it maps from `/dev/kfd`, a `RELEASE_MEM` that writes memory and interrupts, and the
//! wait for its event. It does not link the library (only the preload brings it in). Each
//! scenario prints what it saw and exits 0 when it held, 1 (with `FAIL: ...` on stderr) when it
//! did not, 2 on a usage error.
//!
//! Scenarios: `sequence` (the above, with VRAM, shared and private user pointers), `revoke` (a
//! private user pointer the process unmaps: revoked, and the GPU's write to it is a memory
//! fault, not a write), `errno` (malformed arguments and the driver's errno values),
//! `before-vm` (memory and queues before `ACQUIRE_VM`).

use hcq_amd::kfd::uapi::*;
use hcq_amd::pm4::raw::release_mem as rm;
use hcq_amd::pm4::{D, ReleaseMem, W, release_mem};
use std::ffi::CString;
use zerocopy::{FromZeros, IntoBytes};

const PAGE: usize = 4096;
const TOPOLOGY: &str = "/sys/devices/virtual/kfd/kfd/topology/nodes";

fn fail(what: String) -> ! {
    eprintln!("FAIL: {what}");
    std::process::exit(1)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn open(path: &str) -> i32 {
    let c = CString::new(path).unwrap_or_default();
    // SAFETY: open with a NUL-terminated path; returns a descriptor or -1.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        fail(format!("open {path}: errno {} (is libhcq_vkgsl.so preloaded?)", errno()));
    }
    fd
}

/// `ioctl(fd, req, arg)`: Ok, or the errno.
fn io<T: IntoBytes>(fd: i32, req: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: a KFD request with a pointer to its argument struct, alive for the call.
    let r = unsafe { libc::ioctl(fd, u64::from(req), arg as *mut T) };
    if r == 0 { Ok(()) } else { Err(errno()) }
}

/// `ioctl(fd, req, raw)` with a raw argument pointer.
fn io_raw(fd: i32, req: u32, raw: u64) -> Result<(), i32> {
    // SAFETY: a request with a pointer the test chose to be bad; the device must not touch it.
    let r = unsafe { libc::ioctl(fd, u64::from(req), raw as *mut libc::c_void) };
    if r == 0 { Ok(()) } else { Err(errno()) }
}

fn expect(what: &str, got: Result<(), i32>, want: i32) {
    match got {
        Err(e) if e == want => println!("{what}: errno {e} as expected"),
        r => fail(format!("{what}: {r:?}, expected errno {want}")),
    }
}

fn mmap(at: usize, len: usize, prot: i32, flags: i32, fd: i32, off: u64) -> *mut u8 {
    // SAFETY: a new mapping (at the test's own reservation with MAP_FIXED, or a kernel-chosen
    // address); no Rust object lives there.
    let p = unsafe { libc::mmap(at as *mut libc::c_void, len, prot, flags, fd, off as i64) };
    if p == libc::MAP_FAILED {
        fail(format!("mmap {len:#x} bytes at {at:#x} of fd {fd} offset {off:#x}: errno {}", errno()));
    }
    p.cast()
}

fn read32(p: *const u8, off: usize) -> u32 {
    // SAFETY: `p` is a live mapping of at least `off + 4` bytes (the callers' buffers).
    unsafe { p.add(off).cast::<u32>().read_volatile() }
}

/// What a KFD client holds.
struct Client {
    kfd: i32,
    render: i32,
    gpu_id: u32,
}

/// A buffer: its handle, address (= GPU VA) and size.
struct Buf {
    handle: u64,
    va: u64,
    size: u64,
}

impl Client {
    /// The topology as tinygrad reads it (a directory listing, `gpu_id`, `properties`), then
    /// `/dev/kfd`, the render node, `GET_VERSION`, `ACQUIRE_VM` (if `vm`), `RUNTIME_ENABLE`.
    fn open(vm: bool) -> Client {
        let kfd = open("/dev/kfd");
        let mut nodes: Vec<String> = std::fs::read_dir(TOPOLOGY)
            .unwrap_or_else(|e| fail(format!("list {TOPOLOGY}: {e}")))
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        nodes.sort();
        let read = |p: String| std::fs::read_to_string(&p).unwrap_or_else(|e| fail(format!("read {p}: {e}")));
        let gpu = nodes
            .iter()
            .find(|n| read(format!("{TOPOLOGY}/{n}/gpu_id")).trim() != "0")
            .unwrap_or_else(|| fail(format!("no GPU node among {nodes:?}")));
        let gpu_id: u32 = read(format!("{TOPOLOGY}/{gpu}/gpu_id")).trim().parse().unwrap_or(0);
        let props = read(format!("{TOPOLOGY}/{gpu}/properties"));
        let prop = |k: &str| {
            props
                .lines()
                .find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix(' ')))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or_else(|| fail(format!("no {k} in the properties")))
        };
        let minor = prop("drm_render_minor");
        println!(
            "topology: nodes {nodes:?}, GPU node {gpu}: gpu_id {gpu_id:#x}, gfx_target_version {}, render minor {minor}",
            prop("gfx_target_version")
        );
        let ip = format!("/sys/class/drm/renderD{minor}/device/ip_discovery/die/0");
        let mut hwids: Vec<String> = std::fs::read_dir(&ip)
            .unwrap_or_else(|e| fail(format!("list {ip}: {e}")))
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        hwids.sort();
        let gc: Vec<String> =
            ["major", "minor", "revision"].iter().map(|p| read(format!("{ip}/11/0/{p}")).trim().to_string()).collect();
        println!("ip discovery: hwids {hwids:?}, GC {}", gc.join("."));
        let render = open(&format!("/dev/dri/renderD{minor}"));
        let mut v = GetVersionArgs::default();
        io(kfd, IOC_GET_VERSION, &mut v).unwrap_or_else(|e| fail(format!("GET_VERSION: errno {e}")));
        println!("KFD version {}.{}", v.major_version, v.minor_version);
        let c = Client { kfd, render, gpu_id };
        if vm {
            // CAST: a descriptor is non-negative.
            let mut a = AcquireVmArgs { drm_fd: render as u32, gpu_id };
            io(kfd, IOC_ACQUIRE_VM, &mut a).unwrap_or_else(|e| fail(format!("ACQUIRE_VM: errno {e}")));
            let mut r = RuntimeEnableArgs::default();
            io(kfd, IOC_RUNTIME_ENABLE, &mut r).unwrap_or_else(|e| fail(format!("RUNTIME_ENABLE: errno {e}")));
        }
        c
    }

    fn map_to_gpu(&self, handle: u64) -> Result<(), i32> {
        let ids = [self.gpu_id];
        let mut m =
            MapMemoryToGpuArgs { handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
        io(self.kfd, IOC_MAP_MEMORY_TO_GPU, &mut m)?;
        if m.n_success != 1 {
            fail(format!("MAP_MEMORY_TO_GPU: n_success {}", m.n_success));
        }
        Ok(())
    }

    /// VRAM (or GTT) as tinygrad allocates it: a `PROT_NONE` reservation, `ALLOC_MEMORY_OF_GPU`
    /// at it, the render node mapped over it at the returned offset, mapped to the GPU.
    fn alloc(&self, size: usize, flags: AllocFlags) -> Buf {
        let at = mmap(0, size, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0);
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: at as u64,
            size: size as u64,
            gpu_id: self.gpu_id,
            flags: flags.bits(),
            ..Default::default()
        };
        io(self.kfd, IOC_ALLOC_MEMORY_OF_GPU, &mut a)
            .unwrap_or_else(|e| fail(format!("ALLOC_MEMORY_OF_GPU {size:#x} {flags:?}: errno {e}")));
        let p = mmap(
            at as usize,
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            self.render,
            a.mmap_offset,
        );
        if p != at {
            fail(format!("the render node was mapped at {p:?}, not at the reservation {at:?}"));
        }
        self.map_to_gpu(a.handle).unwrap_or_else(|e| fail(format!("MAP_MEMORY_TO_GPU: errno {e}")));
        Buf { handle: a.handle, va: at as u64, size: size as u64 }
    }

    /// A user pointer (`host`, `size` bytes), mapped to the GPU.
    fn userptr(&self, host: *mut u8, size: usize) -> Result<Buf, i32> {
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: host as u64,
            size: size as u64,
            gpu_id: self.gpu_id,
            flags: AllocFlags::tinygrad(true, false, false).bits(),
            mmap_offset: host as u64,
            ..Default::default()
        };
        io(self.kfd, IOC_ALLOC_MEMORY_OF_GPU, &mut a)?;
        self.map_to_gpu(a.handle)?;
        Ok(Buf { handle: a.handle, va: host as u64, size: size as u64 })
    }

    fn free(&self, b: &Buf, unmap_host: bool) {
        let ids = [self.gpu_id];
        let mut u = UnmapMemoryFromGpuArgs {
            handle: b.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        io(self.kfd, IOC_UNMAP_MEMORY_FROM_GPU, &mut u).unwrap_or_else(|e| fail(format!("UNMAP: errno {e}")));
        if unmap_host {
            // SAFETY: the buffer's own mapping, made by `alloc`.
            unsafe { libc::munmap(b.va as *mut libc::c_void, b.size as usize) };
        }
        let mut f = FreeMemoryOfGpuArgs { handle: b.handle };
        io(self.kfd, IOC_FREE_MEMORY_OF_GPU, &mut f).unwrap_or_else(|e| fail(format!("FREE: errno {e}")));
    }
}

/// A compute queue with tinygrad's buffers: the ring, the pointers' page, the EOP buffer, and the
/// doorbell mapped from `/dev/kfd`.
struct Queue {
    ring: Buf,
    gart: Buf,
    eop: Buf,
    id: u32,
    doorbell: *mut u64,
    put: u64,
}

impl Queue {
    fn new(c: &Client) -> Queue {
        let uncached = AllocFlags::tinygrad(false, true, true);
        let ring = c.alloc(0x10000, uncached);
        let gart = c.alloc(PAGE, uncached);
        let eop = c.alloc(PAGE, AllocFlags::tinygrad(false, false, false));
        let mut q = CreateQueueArgs {
            ring_base_address: ring.va,
            write_pointer_address: gart.va + 0x38,
            read_pointer_address: gart.va + 0x80,
            ring_size: 0x10000,
            gpu_id: c.gpu_id,
            queue_type: QUEUE_TYPE_COMPUTE,
            queue_percentage: MAX_QUEUE_PERCENTAGE,
            queue_priority: 7,
            eop_buffer_address: eop.va,
            eop_buffer_size: 0x1000,
            ..Default::default()
        };
        io(c.kfd, IOC_CREATE_QUEUE, &mut q).unwrap_or_else(|e| fail(format!("CREATE_QUEUE: errno {e}")));
        let (base, byte) = mmap::doorbell_pages(q.doorbell_offset);
        let bells = mmap(0, 0x2000, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, c.kfd, base);
        println!("queue {}: doorbell offset {:#x}", q.queue_id, q.doorbell_offset);
        // SAFETY: the doorbell's byte is inside the 8 KiB frame just mapped.
        let doorbell = unsafe { bells.add(byte as usize) }.cast::<u64>();
        Queue { ring, gart, eop, id: q.queue_id, doorbell, put: 0 }
    }

    /// Append `words` to the ring and ring the doorbell (tinygrad's order: the ring, the write
    /// pointer, then the doorbell).
    fn submit(&mut self, words: &[u32]) {
        for w in words {
            let at = (self.put as usize * 4) % self.ring.size as usize;
            // SAFETY: inside the ring's mapping.
            unsafe { (self.ring.va as *mut u8).add(at).cast::<u32>().write_volatile(*w) };
            self.put += 1;
        }
        // SAFETY: the write pointer's slot in the pointers' page, and the mapped doorbell.
        unsafe {
            (self.gart.va as *mut u8).add(0x38).cast::<u64>().write_volatile(self.put);
            self.doorbell.write_volatile(self.put);
        }
    }

    fn destroy(self, c: &Client) {
        let mut d = DestroyQueueArgs { queue_id: self.id, pad: 0 };
        io(c.kfd, IOC_DESTROY_QUEUE, &mut d).unwrap_or_else(|e| fail(format!("DESTROY_QUEUE: errno {e}")));
        for b in [&self.ring, &self.gart, &self.eop] {
            c.free(b, true);
        }
    }
}

/// `RELEASE_MEM` writing `value` (32 bits) at `addr`, interrupting with `ctxid` when `irq`.
fn write_packet(addr: u64, value: u32, irq: Option<u32>) -> Vec<u32> {
    let mut s = Vec::new();
    let r = ReleaseMem {
        gcr: 0,
        data_sel: rm::DATA_32_LOW,
        int_sel: if irq.is_some() { rm::INT_AFTER_WRITE_CONFIRM } else { rm::INT_NONE },
        addr: D::Lit(addr),
        data_lo: W::Lit(value),
        data_hi: W::Lit(0),
        ctxid: irq.unwrap_or(0),
    };
    release_mem(&mut s, r).unwrap_or_else(|e| fail(format!("encode RELEASE_MEM: {e}")));
    s
}

/// The signal page and a signal event on it: (page, event id, its mailbox address).
fn signal_event(c: &Client) -> (Buf, u32, u64) {
    let page = c.alloc(0x8000, AllocFlags::tinygrad(false, true, false));
    let mut e = CreateEventArgs { event_page_offset: page.handle, ..Default::default() };
    io(c.kfd, IOC_CREATE_EVENT, &mut e).unwrap_or_else(|e| fail(format!("CREATE_EVENT(page): errno {e}")));
    let mut s = CreateEventArgs { event_type: EVENT_SIGNAL, auto_reset: 1, ..Default::default() };
    io(c.kfd, IOC_CREATE_EVENT, &mut s).unwrap_or_else(|e| fail(format!("CREATE_EVENT(signal): errno {e}")));
    let mailbox = page.va + 8 * u64::from(s.event_slot_index);
    (page, s.event_id, mailbox)
}

/// `WAIT_EVENTS` on `ids` (any), `ms` milliseconds: the result and the entries.
fn wait(c: &Client, ids: &[u32], ms: u32) -> (u32, Vec<EventData>) {
    let mut ev: Vec<EventData> = ids.iter().map(|&i| EventData::for_event(i)).collect();
    let mut w = WaitEventsArgs {
        events_ptr: ev.as_mut_ptr() as u64,
        num_events: ev.len() as u32,
        wait_for_all: 0,
        timeout: ms,
        wait_result: 0,
    };
    io(c.kfd, IOC_WAIT_EVENTS, &mut w).unwrap_or_else(|e| fail(format!("WAIT_EVENTS: errno {e}")));
    (w.wait_result, ev)
}

/// Write through the queue into `target` and wait for the event: the value the client then reads.
fn write_and_wait(c: &Client, q: &mut Queue, ev: u32, mailbox: u64, target: u64, value: u32) -> u32 {
    let mut words = write_packet(target, value, None);
    words.extend(write_packet(mailbox, ev, Some(ev)));
    q.submit(&words);
    let (r, _) = wait(c, &[ev], 5000);
    if r != WAIT_RESULT_COMPLETE {
        fail(format!("WAIT_EVENTS for the write to {target:#x}: result {r}"));
    }
    read32(target as *const u8, 0)
}

fn sequence() {
    let c = Client::open(true);
    let (page, ev, mailbox) = signal_event(&c);
    let mut q = Queue::new(&c);
    let data = c.alloc(2 * PAGE, AllocFlags::tinygrad(false, false, true));
    println!("ring at {:#x}, event {ev} with its mailbox at {mailbox:#x}", q.ring.va);
    let got = write_and_wait(&c, &mut q, ev, mailbox, data.va + 4, 0xC0FF_EE01);
    println!("VRAM at {:#x}: the GPU wrote {got:#x}", data.va);
    if got != 0xC0FF_EE01 {
        fail(format!("VRAM: read {got:#x}"));
    }
    // A shared user pointer (tinygrad's host memory): pinned.
    let shared = mmap(0, PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1, 0);
    let sb = c.userptr(shared, PAGE).unwrap_or_else(|e| fail(format!("USERPTR shared: errno {e}")));
    let got = write_and_wait(&c, &mut q, ev, mailbox, sb.va + 8, 0x5AA5_0002);
    println!("shared USERPTR at {:#x}: the GPU wrote {got:#x}", sb.va);
    if got != 0x5AA5_0002 {
        fail(format!("shared USERPTR: read {got:#x}"));
    }
    // A private one: the process's own pages, checked.
    let private = mmap(0, PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
    let pb = c.userptr(private, PAGE).unwrap_or_else(|e| fail(format!("USERPTR private: errno {e}")));
    let got = write_and_wait(&c, &mut q, ev, mailbox, pb.va + 12, 0x7777_0003);
    println!("private USERPTR at {:#x}: the GPU wrote {got:#x}", pb.va);
    if got != 0x7777_0003 {
        fail(format!("private USERPTR: read {got:#x}"));
    }
    c.free(&sb, false);
    c.free(&pb, false);
    c.free(&data, true);
    q.destroy(&c);
    let mut f = FreeMemoryOfGpuArgs { handle: page.handle };
    expect("FREE of the signal page's buffer", io(c.kfd, IOC_FREE_MEMORY_OF_GPU, &mut f), libc::EPERM);
    println!("sequence: done");
}

fn revoke() {
    let c = Client::open(true);
    let (_page, ev, mailbox) = signal_event(&c);
    let mut mem_ev = CreateEventArgs { event_type: EVENT_MEMORY, ..Default::default() };
    io(c.kfd, IOC_CREATE_EVENT, &mut mem_ev).unwrap_or_else(|e| fail(format!("CREATE_EVENT(memory): errno {e}")));
    let mut q = Queue::new(&c);
    let private = mmap(0, PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
    let pb = c.userptr(private, PAGE).unwrap_or_else(|e| fail(format!("USERPTR private: errno {e}")));
    // The process unmaps it and maps other memory there (shared: a private anonymous mapping
    // replaced by another cannot be told apart in /proc/self/maps); the next ioctl revokes the
    // import.
    // SAFETY: the test's own private mapping.
    unsafe { libc::munmap(private.cast(), PAGE) };
    let again = mmap(
        private as usize,
        PAGE,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
        -1,
        0,
    );
    // SAFETY: the new mapping, one page.
    unsafe { again.cast::<u32>().write_volatile(0x1111_1111) };
    let mut v = GetVersionArgs::default();
    io(c.kfd, IOC_GET_VERSION, &mut v).unwrap_or_else(|e| fail(format!("GET_VERSION: errno {e}")));
    let mut words = write_packet(pb.va, 0xDEAD_BEEF, None);
    words.extend(write_packet(mailbox, ev, Some(ev)));
    q.submit(&words);
    let (r, got) = wait(&c, &[ev, mem_ev.event_id], 5000);
    let m = got[1].memory_exception();
    println!("wait: result {r}, memory exception gpu_id {:#x} va {:#x}", m.gpu_id, m.va);
    if m.gpu_id != c.gpu_id || m.va != pb.va {
        fail(format!("no memory fault at {:#x}: {m:?}", pb.va));
    }
    let now = read32(again, 0);
    println!("the new mapping holds {now:#x}");
    if now != 0x1111_1111 {
        fail(format!("the GPU wrote into the new mapping: {now:#x}"));
    }
    expect("MAP_MEMORY_TO_GPU of the revoked import", c.map_to_gpu(pb.handle), libc::EFAULT);
    println!("revoke: done");
}

fn errno_scenario() {
    let c = Client::open(true);
    expect("GET_VERSION to a null pointer", io_raw(c.kfd, IOC_GET_VERSION, 0), libc::EFAULT);
    expect("GET_VERSION to an unmapped page", io_raw(c.kfd, IOC_GET_VERSION, 0x1000), libc::EFAULT);
    expect("request 0x30 (past amdkfd's)", io_raw(c.kfd, ioc(3, 0x30, 8), 0), libc::EINVAL);
    let mut cc = [0u64; 5];
    expect("GET_CLOCK_COUNTERS (not simulated)", io(c.kfd, ioc(3, 0x05, 40), &mut cc), libc::EINVAL);
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: 0x7000_0000_0000,
        size: PAGE as u64,
        gpu_id: 0x1234,
        flags: AllocFlags::VRAM.bits(),
        ..Default::default()
    };
    expect("ALLOC on no GPU", io(c.kfd, IOC_ALLOC_MEMORY_OF_GPU, &mut a), libc::EINVAL);
    a.gpu_id = c.gpu_id;
    a.size = 0;
    expect("ALLOC of 0 bytes", io(c.kfd, IOC_ALLOC_MEMORY_OF_GPU, &mut a), libc::EINVAL);
    a.size = PAGE as u64;
    a.va_addr = 0x7000_0000_0800;
    expect("ALLOC at a misaligned VA", io(c.kfd, IOC_ALLOC_MEMORY_OF_GPU, &mut a), libc::EINVAL);
    let unmapped = mmap(0, PAGE, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
    expect("USERPTR of read-only memory", c.userptr(unmapped, PAGE).map(|_| ()), libc::EFAULT);
    let rw = mmap(0, 2 * PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1, 0);
    // SAFETY: one byte into the test's own two pages.
    let odd = unsafe { rw.add(8) };
    expect("USERPTR at a misaligned pointer", c.userptr(odd, PAGE).map(|_| ()), libc::EINVAL);
    let vram = c.alloc(PAGE, AllocFlags::tinygrad(false, false, false));
    expect("USERPTR of the device's own mapping", c.userptr(vram.va as *mut u8, PAGE).map(|_| ()), libc::EFAULT);
    let mut f = FreeMemoryOfGpuArgs { handle: 0xdead };
    expect("FREE of a bad handle", io(c.kfd, IOC_FREE_MEMORY_OF_GPU, &mut f), libc::EINVAL);
    f.handle = vram.handle;
    expect("FREE of a buffer still mapped", io(c.kfd, IOC_FREE_MEMORY_OF_GPU, &mut f), libc::EBUSY);
    let mut m = MapMemoryToGpuArgs { handle: vram.handle, device_ids_array_ptr: 0x1000, n_devices: 1, n_success: 0 };
    expect("MAP with a bad device array", io(c.kfd, IOC_MAP_MEMORY_TO_GPU, &mut m), libc::EFAULT);
    m.n_devices = 0;
    expect("MAP to no devices", io(c.kfd, IOC_MAP_MEMORY_TO_GPU, &mut m), libc::EINVAL);
    let ids = [c.gpu_id];
    m = MapMemoryToGpuArgs { handle: 0xbad, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    expect("MAP of a bad handle", io(c.kfd, IOC_MAP_MEMORY_TO_GPU, &mut m), libc::EINVAL);
    let mut w = WaitEventsArgs { events_ptr: 0x1000, num_events: 1, wait_for_all: 0, timeout: 0, wait_result: 0 };
    expect("WAIT_EVENTS with a bad event array", io(c.kfd, IOC_WAIT_EVENTS, &mut w), libc::EFAULT);
    let mut ev = [EventData::for_event(0x4242)];
    w.events_ptr = ev.as_mut_ptr() as u64;
    expect("WAIT_EVENTS on no event", io(c.kfd, IOC_WAIT_EVENTS, &mut w), libc::EINVAL);
    let mut d = DestroyQueueArgs { queue_id: 77, pad: 0 };
    expect("DESTROY_QUEUE of no queue", io(c.kfd, IOC_DESTROY_QUEUE, &mut d), libc::EINVAL);
    let mut q = CreateQueueArgs {
        ring_base_address: 0x7000_0000_0000,
        ring_size: 0x1000,
        gpu_id: c.gpu_id,
        queue_percentage: MAX_QUEUE_PERCENTAGE,
        write_pointer_address: 0x7000_0000_1000,
        read_pointer_address: 0x7000_0000_1008,
        ..Default::default()
    };
    expect("CREATE_QUEUE on a ring that is no buffer", io(c.kfd, IOC_CREATE_QUEUE, &mut q), libc::EINVAL);
    q.ring_size = 3000;
    expect("CREATE_QUEUE with a ring of 3000 bytes", io(c.kfd, IOC_CREATE_QUEUE, &mut q), libc::EINVAL);
    let mut e = DestroyEventArgs { event_id: 0x9999, pad: 0 };
    expect("DESTROY_EVENT of no event", io(c.kfd, IOC_DESTROY_EVENT, &mut e), libc::EINVAL);
    let mut fds = [0i32; 2];
    // SAFETY: pipe into a two-int array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        fail("pipe".into());
    }
    let mut vm = AcquireVmArgs { drm_fd: fds[0] as u32, gpu_id: c.gpu_id };
    expect("ACQUIRE_VM with a pipe for the render node", io(c.kfd, IOC_ACQUIRE_VM, &mut vm), libc::EINVAL);
    vm.drm_fd = u32::MAX;
    expect("ACQUIRE_VM with no descriptor", io(c.kfd, IOC_ACQUIRE_VM, &mut vm), libc::EINVAL);
    // CAST: a descriptor is non-negative.
    let mut vm = AcquireVmArgs { drm_fd: c.render as u32, gpu_id: 7 };
    expect("ACQUIRE_VM on no GPU", io(c.kfd, IOC_ACQUIRE_VM, &mut vm), libc::EINVAL);
    // The render node answers DRM_IOCTL_VERSION as amdgpu.
    let mut name = [0u8; 16];
    let mut dv = [0u64; 8];
    dv[2] = name.len() as u64;
    dv[3] = name.as_mut_ptr() as u64;
    io(c.render, 0xc040_6400, &mut dv).unwrap_or_else(|e| fail(format!("DRM_IOCTL_VERSION: errno {e}")));
    let n = (dv[2] as usize).min(name.len());
    println!("render node driver: {}", String::from_utf8_lossy(&name[..n]));
    expect("an amdgpu request on the render node", io_raw(c.render, 0x4020_6445, 0), libc::EINVAL);
    println!("errno: done");
}

fn before_vm() {
    let c = Client::open(false);
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: 0x7000_0000_0000,
        size: PAGE as u64,
        gpu_id: c.gpu_id,
        flags: AllocFlags::VRAM.bits(),
        ..Default::default()
    };
    expect("ALLOC before ACQUIRE_VM", io(c.kfd, IOC_ALLOC_MEMORY_OF_GPU, &mut a), libc::ENODEV);
    let mut q = CreateQueueArgs {
        ring_base_address: 0x7000_0000_0000,
        ring_size: 0x1000,
        gpu_id: c.gpu_id,
        write_pointer_address: 0x7000_0000_1000,
        read_pointer_address: 0x7000_0000_1008,
        ..Default::default()
    };
    expect("CREATE_QUEUE before ACQUIRE_VM", io(c.kfd, IOC_CREATE_QUEUE, &mut q), libc::ESRCH);
    let mut z = CreateEventArgs::new_zeroed();
    z.event_type = 99;
    expect("CREATE_EVENT of type 99", io(c.kfd, IOC_CREATE_EVENT, &mut z), libc::EINVAL);
    println!("before-vm: done");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("sequence") => sequence(),
        Some("revoke") => revoke(),
        Some("errno") => errno_scenario(),
        Some("before-vm") => before_vm(),
        _ => {
            eprintln!("usage: vkfd-probe sequence|revoke|errno|before-vm");
            std::process::exit(2)
        }
    }
}
