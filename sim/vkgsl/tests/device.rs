//! The virtual KGSL device in process (no preload): ioctls through `VDev::ioctl` with the uapi
//! structs, GPU objects mapped by the "client" (this test) from the memfd at `id << 12`, their
//! GPU addresses learned from those mappings, and the driver's errno values.

use hcq_adreno::pm4::{op, pkt7};
use hcq_qcom::kgsl::uapi::*;
use hcq_vkgsl::device::{IOCTL_SETPROPERTY, MEMFLAGS_USE_CPU_MAP, PROP_PWR_CONSTRAINT, TIMESTAMP_QUEUED, VDev};
use rustix::io::Errno;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

struct Client {
    fd: OwnedFd,
    dev: VDev,
}

impl Client {
    fn new() -> Client {
        Self::with_capture(None)
    }

    fn with_capture(rd: Option<&std::path::Path>) -> Client {
        // SAFETY: memfd_create with a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"vkgsl-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let dev = VDev::with_capture(fd.as_fd(), rd).unwrap();
        Client { fd, dev }
    }

    fn io<T: IntoBytes>(&self, req: u32, arg: &mut T) -> Result<(), Errno> {
        self.dev.ioctl(req, (arg as *mut T) as u64)
    }

    /// GPUOBJ_ALLOC(USE_CPU_MAP) and the client's own mmap at `id << 12`: (id, address).
    fn alloc(&self, size: u64) -> (u32, *mut u32) {
        let mut a = GpuobjAlloc { size, flags: MEMFLAGS_USE_CPU_MAP | 12 << 16, ..GpuobjAlloc::new_zeroed() };
        self.io(IOCTL_GPUOBJ_ALLOC, &mut a).unwrap();
        assert_eq!(a.mmapsize, size.next_multiple_of(4096));
        // SAFETY: a fresh shared mapping of the device's memfd at a kernel-chosen address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                a.mmapsize as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                (u64::from(a.id) << 12) as i64,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        (a.id, p.cast())
    }

    fn context(&self) -> u32 {
        let mut c = DrawctxtCreate { flags: 0x10 | 0x200 | 0x2, drawctxt_id: 0 };
        self.io(IOCTL_DRAWCTXT_CREATE, &mut c).unwrap();
        c.drawctxt_id
    }

    /// Write `words` at `ib` (a client mapping) and submit them on `ctx`: the timestamp.
    fn submit(&self, ctx: u32, ib: *mut u32, words: &[u32]) -> Result<u32, Errno> {
        for (i, w) in words.iter().enumerate() {
            // SAFETY: `ib` is a live client mapping of at least one page; IBs here are short.
            unsafe { ib.add(i).write_volatile(*w) };
        }
        let cmd = [CommandObject { gpuaddr: ib as u64, size: 4 * words.len() as u64, flags: 1, ..Default::default() }];
        let mut g = GpuCommand {
            cmdlist: cmd.as_ptr() as u64,
            cmdsize: size_of::<CommandObject>() as u32,
            numcmds: 1,
            context_id: ctx,
            ..Default::default()
        };
        self.io(IOCTL_GPU_COMMAND, &mut g)?;
        Ok(g.timestamp)
    }

    fn wait(&self, ctx: u32, ts: u32) -> Result<(), Errno> {
        self.io(
            IOCTL_DEVICE_WAITTIMESTAMP_CTXTID,
            &mut WaitTimestampCtxtid { context_id: ctx, timestamp: ts, timeout: 1000 },
        )
    }
}

fn prop(c: &Client, ty: u32, out: &mut [u8]) -> Result<(), Errno> {
    let mut p = DeviceGetProperty { ty, _pad: 0, value: out.as_mut_ptr() as u64, sizebytes: out.len() as u64 };
    c.io(IOCTL_DEVICE_GETPROPERTY, &mut p)
}

#[test]
fn device_info_and_the_drivers_errnos_for_properties_and_requests() {
    let c = Client::new();
    let mut d = DevInfo::new_zeroed();
    prop(&c, PROP_DEVICE_INFO, d.as_mut_bytes()).unwrap();
    assert_eq!((d.chip_id, d.gpu_id, d.gmem_sizebytes), (0x0603_0001, 630, 1 << 20));
    let mut v = Version::new_zeroed();
    prop(&c, PROP_VERSION, v.as_mut_bytes()).unwrap();
    assert!((v.drv_major, v.drv_minor) >= (3, 14));
    let mut short = [0u8; 8];
    assert_eq!(prop(&c, PROP_DEVICE_INFO, &mut short), Err(Errno::INVAL), "size mismatch");
    assert_eq!(prop(&c, 0x7777, &mut short), Err(Errno::INVAL), "unknown property");
    let mut p = DeviceGetProperty { ty: PROP_DEVICE_INFO, _pad: 0, value: 0, sizebytes: 40 };
    assert_eq!(c.io(IOCTL_DEVICE_GETPROPERTY, &mut p), Err(Errno::FAULT), "null value pointer");
    assert_eq!(c.dev.ioctl(IOCTL_DEVICE_GETPROPERTY, 0), Err(Errno::FAULT), "null argument");
    let mut x = [0u8; 8];
    assert_eq!(c.io(ioc(3, 0x7e, 8), &mut x), Err(Errno::NOTTY), "unknown KGSL request");
    assert_eq!(c.io(0x5401, &mut x), Err(Errno::NOTTY), "TCGETS is not KGSL's");
    // SETPROPERTY(PWR_CONSTRAINT) names a context of this file.
    let ctx = c.context();
    let level = 1u32;
    let mut k = [0u8; 24];
    k[..4].copy_from_slice(&1u32.to_ne_bytes());
    k[4..8].copy_from_slice(&ctx.to_ne_bytes());
    k[8..16].copy_from_slice(&((&level as *const u32) as u64).to_ne_bytes());
    k[16..].copy_from_slice(&4u64.to_ne_bytes());
    let mut s = DeviceGetProperty { ty: PROP_PWR_CONSTRAINT, _pad: 0, value: k.as_ptr() as u64, sizebytes: 24 };
    c.io(IOCTL_SETPROPERTY, &mut s).unwrap();
    k[4..8].copy_from_slice(&(ctx + 100).to_ne_bytes());
    assert_eq!(c.io(IOCTL_SETPROPERTY, &mut s), Err(Errno::INVAL), "unknown context");
    s.sizebytes = 16;
    assert_eq!(c.io(IOCTL_SETPROPERTY, &mut s), Err(Errno::INVAL), "constraint size");
}

#[test]
fn an_ib_in_a_client_mapping_runs_at_the_mappings_address() {
    let c = Client::new();
    let (ib_id, ib) = c.alloc(4096);
    let (_, data) = c.alloc(3 * 4096);
    let mut info = GpuobjInfo { id: ib_id, ..GpuobjInfo::new_zeroed() };
    c.io(IOCTL_GPUOBJ_INFO, &mut info).unwrap();
    assert_eq!(info.gpuaddr, ib as u64, "USE_CPU_MAP: the GPU address is the client's mapping");
    assert_eq!(info.size, 4096);
    let ctx = c.context();
    let target = data as u64 + 8192 + 12;
    let mut words = Vec::new();
    pkt7(&mut words, op::CP_MEM_WRITE, &[target as u32, (target >> 32) as u32, 0xdead_beef, 0x1234]).unwrap();
    let ts = c.submit(ctx, ib, &words).unwrap();
    c.wait(ctx, ts).unwrap();
    // SAFETY: inside the 3-page client mapping of `data`.
    let got = unsafe { [data.add(2048 + 3).read_volatile(), data.add(2048 + 4).read_volatile()] };
    assert_eq!(got, [0xdead_beef, 0x1234], "the GPU wrote the client's pages");
    let mut r = ReadTimestampCtxtid { context_id: ctx, ty: TIMESTAMP_RETIRED, timestamp: 0 };
    c.io(IOCTL_CMDSTREAM_READTIMESTAMP_CTXTID, &mut r).unwrap();
    assert_eq!(r.timestamp, ts);
    r.ty = TIMESTAMP_QUEUED;
    c.io(IOCTL_CMDSTREAM_READTIMESTAMP_CTXTID, &mut r).unwrap();
    assert_eq!(r.timestamp, ts);
    r.ty = 9;
    assert_eq!(c.io(IOCTL_CMDSTREAM_READTIMESTAMP_CTXTID, &mut r), Err(Errno::INVAL));
    // Objects: unknown ids and zero sizes are EINVAL, a freed id too.
    let mut f = GpuobjFree { id: ib_id + 999, ..GpuobjFree::new_zeroed() };
    assert_eq!(c.io(IOCTL_GPUOBJ_FREE, &mut f), Err(Errno::INVAL));
    let mut z = GpuobjAlloc::new_zeroed();
    assert_eq!(c.io(IOCTL_GPUOBJ_ALLOC, &mut z), Err(Errno::INVAL));
    f.id = ib_id;
    c.io(IOCTL_GPUOBJ_FREE, &mut f).unwrap();
    assert_eq!(c.io(IOCTL_GPUOBJ_FREE, &mut f), Err(Errno::INVAL), "freed twice");
    assert_eq!(c.io(IOCTL_GPUOBJ_INFO, &mut info), Err(Errno::INVAL), "freed id");
}

#[test]
fn a_write_outside_every_object_invalidates_the_context() {
    let c = Client::new();
    let (_, ib) = c.alloc(4096);
    let ctx = c.context();
    let mut words = Vec::new();
    pkt7(&mut words, op::CP_MEM_WRITE, &[0x10, 0, 1]).unwrap();
    let ts = c.submit(ctx, ib, &words).unwrap();
    assert_eq!(c.wait(ctx, ts), Err(Errno::DEADLK), "the fault ends the wait at once");
    assert!(c.dev.sim().fault().is_some_and(|f| f.contains("IB") && f.contains("word")), "{:?}", c.dev.sim().fault());
    assert_eq!(c.submit(ctx, ib, &words), Err(Errno::DEADLK), "later submissions fail");
}

#[test]
fn map_user_mem_checks_the_host_range() {
    let c = Client::new();
    // SAFETY: a fresh anonymous private mapping of two pages.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let host = p as u64;
    let mut m = MapUserMem { hostptr: host + 16, len: 4096, memtype: USER_MEM_TYPE_ADDR, ..MapUserMem::new_zeroed() };
    assert_eq!(c.io(IOCTL_MAP_USER_MEM, &mut m), Err(Errno::INVAL), "not page aligned");
    m.hostptr = host;
    m.memtype = 3;
    assert_eq!(c.io(IOCTL_MAP_USER_MEM, &mut m), Err(Errno::OPNOTSUPP), "ION/dma-buf imports");
    m.memtype = USER_MEM_TYPE_ADDR;
    // The second page made inaccessible (get_user_pages fails on it as on an unmapped one). Not
    // unmapped: another test's thread could map a page into the hole before the ioctl looks.
    // SAFETY: the second page of our own mapping; nothing references it.
    assert_eq!(unsafe { libc::mprotect((host + 4096) as *mut libc::c_void, 4096, libc::PROT_NONE) }, 0);
    m.len = 8192;
    assert_eq!(c.io(IOCTL_MAP_USER_MEM, &mut m), Err(Errno::FAULT), "half of it inaccessible");
    m.len = 4096;
    c.io(IOCTL_MAP_USER_MEM, &mut m).unwrap();
    assert_eq!(m.gpuaddr, host);
    c.io(IOCTL_SHAREDMEM_FREE, &mut SharedmemFree { gpuaddr: host }).unwrap();
    assert_eq!(c.io(IOCTL_SHAREDMEM_FREE, &mut SharedmemFree { gpuaddr: host }), Err(Errno::INVAL));
    // SAFETY: both pages are ours and unreferenced.
    unsafe { libc::munmap(p, 8192) };
    // The device's own memory is not user memory: EFAULT (tinygrad then uses the address as
    // the GPU address it already is).
    let (_, obj) = c.alloc(8192);
    m.hostptr = obj as u64 + 4096;
    assert_eq!(c.io(IOCTL_MAP_USER_MEM, &mut m), Err(Errno::FAULT), "a KGSL object's mapping");
}

#[test]
fn a_shorter_user_struct_is_zero_filled_and_copied_back_in_part() {
    // kgsl_ioctl_copy_in: the smaller of both sizes is copied, the rest zeroed; here a
    // 4-byte DRAWCTXT_CREATE (flags only) gets no id back but succeeds.
    let c = Client::new();
    let mut flags = [0x10u8, 0, 0, 0];
    c.io(ioc(3, 0x13, 4), &mut flags).unwrap();
    assert_eq!(flags, [0x10, 0, 0, 0]);
    assert_eq!(c.context(), 2, "that call made context 1");
}

#[test]
fn every_submission_goes_to_the_rd_capture_with_its_buffers() {
    let path = std::env::temp_dir().join(format!("vkgsl-{}.rd", std::process::id()));
    let c = Client::with_capture(Some(&path));
    let (_, ib) = c.alloc(4096);
    let (_, data) = c.alloc(4096);
    let (_, idle) = c.alloc(3 * 4096);
    let ctx = c.context();
    let mut first = Vec::new();
    pkt7(&mut first, op::CP_MEM_WRITE, &[data as u64 as u32, (data as u64 >> 32) as u32, 7]).unwrap();
    let t = c.submit(ctx, ib, &first).unwrap();
    c.wait(ctx, t).unwrap();
    let mut second = Vec::new();
    pkt7(&mut second, op::CP_NOP, &[1, 2]).unwrap();
    let t = c.submit(ctx, ib, &second).unwrap();
    c.wait(ctx, t).unwrap();
    let cap = hcq_adreno::rd::read(&std::fs::read(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!((cap.gpu_id, cap.chip_id), (Some(630), Some(0x0603_0001)));
    assert_eq!(cap.submits.len(), 2);
    assert_eq!(cap.submits[0].ib, ib as u64);
    assert_eq!(cap.submits[0].ib_words().unwrap(), first);
    assert_eq!(cap.submits[1].ib_words().unwrap(), second);
    let data_in = |s: &hcq_adreno::rd::Submit| s.buffers.iter().find(|(a, _)| *a == data as u64).map(|(_, b)| b[0]);
    assert_eq!(data_in(&cap.submits[0]), Some(0), "first submission: every object, before it ran");
    assert_eq!(data_in(&cap.submits[1]), Some(7), "changed since: written again");
    let idle_in = |s: &hcq_adreno::rd::Submit| s.buffers.iter().any(|(a, _)| *a == idle as u64);
    assert!(idle_in(&cap.submits[0]) && !idle_in(&cap.submits[1]), "unchanged pages are not written again");
}
