//! The virtual MSM render node in process (no preload): the DRM and MSM ioctls through
//! `VMsm::ioctl` with the uapi structs, GEM objects mapped by the "client" (this test) from the
//! memfd at their `GEM_INFO(GET_OFFSET)`, the same memory the GPU writes at their IOVA, and
//! `drm_ioctl`'s errno values and size protocol.

use hcq_adreno::pm4::{op, pkt7};
use hcq_qcom::msm::uapi::*;
use hcq_vkgsl::render::VMsm;
use rustix::io::Errno;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

struct Client {
    fd: OwnedFd,
    dev: VMsm,
}

impl Client {
    fn new() -> Client {
        // SAFETY: memfd_create with a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"vkgsl-render-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let dev = VMsm::new(fd.as_fd()).unwrap();
        Client { fd, dev }
    }

    fn io<T: IntoBytes>(&self, req: u32, arg: &mut T) -> Result<(), Errno> {
        self.dev.ioctl(req, (arg as *mut T) as u64)
    }

    fn info(&self, handle: u32, info: u32) -> Result<u64, Errno> {
        let mut a = GemInfo { handle, info, ..GemInfo::new_zeroed() };
        self.io(DRM_IOCTL_MSM_GEM_INFO, &mut a).map(|()| a.value)
    }

    /// GEM_NEW and the client's own mmap at its offset: (handle, CPU address, IOVA).
    fn alloc(&self, size: u64) -> (u32, *mut u32, u64) {
        let mut n = GemNew { size, flags: MSM_BO_WC, handle: 0 };
        self.io(DRM_IOCTL_MSM_GEM_NEW, &mut n).unwrap();
        let off = self.info(n.handle, MSM_INFO_GET_OFFSET).unwrap();
        // SAFETY: a fresh shared mapping of the node's memfd at a kernel-chosen address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                off as i64,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        (n.handle, p.cast(), self.info(n.handle, MSM_INFO_GET_IOVA).unwrap())
    }

    fn queue(&self) -> u32 {
        let mut q = Submitqueue::new_zeroed();
        self.io(DRM_IOCTL_MSM_SUBMITQUEUE_NEW, &mut q).unwrap();
        q.id
    }
}

#[test]
fn version_and_params_answer_as_the_msm_driver() {
    let c = Client::new();
    let mut name = [0u8; 2];
    let mut desc = [0u8; 64];
    let mut v = DrmVersion {
        name_len: 2,
        name: name.as_mut_ptr() as u64,
        desc_len: 64,
        desc: desc.as_mut_ptr() as u64,
        ..DrmVersion::new_zeroed()
    };
    c.io(DRM_IOCTL_VERSION, &mut v).unwrap();
    assert_eq!((v.version_major, v.version_minor), (1, 12));
    assert_eq!((&name, v.name_len), (b"ms", 3), "cut at the buffer, the whole length said");
    assert_eq!(&desc[..v.desc_len as usize], b"MSM Snapdragon DRM");
    assert_eq!(v.date_len, 8, "no date buffer: only its length");
    let param = |p: u32| {
        let mut a = Param { pipe: MSM_PIPE_3D0, param: p, ..Param::new_zeroed() };
        c.io(DRM_IOCTL_MSM_GET_PARAM, &mut a).map(|()| a.value)
    };
    assert_eq!((param(MSM_PARAM_GPU_ID), param(MSM_PARAM_CHIP_ID)), (Ok(630), Ok(0x0603_0001)));
    assert_eq!(param(0x77), Err(Errno::INVAL), "unknown param");
    let mut a = Param { pipe: 0x01, param: MSM_PARAM_GPU_ID, ..Param::new_zeroed() };
    assert_eq!(c.io(DRM_IOCTL_MSM_GET_PARAM, &mut a), Err(Errno::INVAL), "the 2D pipe");
    let mut x = [0u8; 16];
    assert_eq!(c.io(drm_ioc(3, 0x40 + 0x30, 16), &mut x), Err(Errno::INVAL), "no such driver ioctl");
    assert_eq!(c.io(0x5401, &mut x), Err(Errno::INVAL), "TCGETS is not a DRM request");
    assert_eq!(c.dev.ioctl(DRM_IOCTL_MSM_GET_PARAM, 0), Err(Errno::FAULT), "null argument");
}

#[test]
fn an_ib_in_a_gem_object_runs_and_writes_what_the_client_maps() {
    let c = Client::new();
    let (ib_h, ib, ib_va) = c.alloc(4096);
    let (data_h, data, data_va) = c.alloc(2 * 4096);
    let q = c.queue();
    let target = data_va + 4096 + 12;
    let mut words = Vec::new();
    pkt7(&mut words, op::CP_MEM_WRITE, &[target as u32, (target >> 32) as u32, 0xdead_beef]).unwrap();
    for (i, w) in words.iter().enumerate() {
        // SAFETY: `ib` is a live client mapping of one page; the IB is three words.
        unsafe { ib.add(i).write_volatile(*w) };
    }
    let bos = [
        GemSubmitBo { flags: MSM_SUBMIT_BO_READ, handle: ib_h, presumed: ib_va },
        GemSubmitBo { flags: MSM_SUBMIT_BO_READ | MSM_SUBMIT_BO_WRITE, handle: data_h, presumed: data_va },
    ];
    let cmds = [GemSubmitCmd {
        ty: MSM_SUBMIT_CMD_BUF,
        submit_idx: 0,
        submit_offset: 0,
        size: 4 * words.len() as u32,
        ..GemSubmitCmd::new_zeroed()
    }];
    let mut s = GemSubmit {
        flags: MSM_PIPE_3D0,
        nr_bos: 2,
        nr_cmds: 1,
        bos: bos.as_ptr() as u64,
        cmds: cmds.as_ptr() as u64,
        queueid: q,
        ..GemSubmit::new_zeroed()
    };
    c.io(DRM_IOCTL_MSM_GEM_SUBMIT, &mut s).unwrap();
    assert_eq!(s.fence, 1);
    let far = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let mut w = WaitFence {
        fence: 1,
        timeout: Timespec { tv_sec: far.tv_sec as i64 + 5, tv_nsec: 0 },
        queueid: q,
        ..WaitFence::new_zeroed()
    };
    c.io(DRM_IOCTL_MSM_WAIT_FENCE, &mut w).unwrap();
    // SAFETY: inside the client's live mapping of the data object.
    assert_eq!(unsafe { data.add(1027).read_volatile() }, 0xdead_beef, "the client sees what the GPU wrote");
    let mut faults = 7u32;
    let mut qq = SubmitqueueQuery {
        data: (&mut faults as *mut u32) as u64,
        id: q,
        param: MSM_SUBMITQUEUE_PARAM_FAULTS,
        len: 4,
        pad: 0,
    };
    c.io(DRM_IOCTL_MSM_SUBMITQUEUE_QUERY, &mut qq).unwrap();
    assert_eq!(faults, 0);
    w.fence = 2;
    assert_eq!(c.io(DRM_IOCTL_MSM_WAIT_FENCE, &mut w), Err(Errno::INVAL), "a fence never submitted");
    // The kernel's checks: an unknown handle, a handle twice, a command past its object.
    let mut bad = bos;
    bad[1].handle = 999;
    s.bos = bad.as_ptr() as u64;
    assert_eq!(c.io(DRM_IOCTL_MSM_GEM_SUBMIT, &mut s), Err(Errno::INVAL));
    bad[1].handle = ib_h;
    s.bos = bad.as_ptr() as u64;
    assert_eq!(c.io(DRM_IOCTL_MSM_GEM_SUBMIT, &mut s), Err(Errno::INVAL));
    s.bos = bos.as_ptr() as u64;
    let long = [GemSubmitCmd { size: 8192, ..cmds[0] }];
    s.cmds = long.as_ptr() as u64;
    assert_eq!(c.io(DRM_IOCTL_MSM_GEM_SUBMIT, &mut s), Err(Errno::INVAL));
    s.queueid = q + 10;
    s.cmds = cmds.as_ptr() as u64;
    assert_eq!(c.io(DRM_IOCTL_MSM_GEM_SUBMIT, &mut s), Err(Errno::NOENT), "an unknown queue");
    let mut close = GemClose { handle: data_h, pad: 0 };
    c.io(DRM_IOCTL_GEM_CLOSE, &mut close).unwrap();
    assert_eq!(c.io(DRM_IOCTL_GEM_CLOSE, &mut close), Err(Errno::INVAL), "closed twice");
    let mut qid = q;
    c.io(DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE, &mut qid).unwrap();
    assert_eq!(c.io(DRM_IOCTL_MSM_SUBMITQUEUE_CLOSE, &mut qid), Err(Errno::NOENT));
}
