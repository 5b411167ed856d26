//! Buffers: typed, lazily allocated device memory, views into it, and buffers spread over
//! several devices.
//!
//! A [`Buffer`] is a cheap handle (an `Arc` inside): cloning it gives another handle to the same
//! buffer. A base buffer allocates its memory from its device's [`LruAllocator`] the first time
//! anything needs it — exactly once, even when several threads ask at the same time — and gives
//! it back when its last handle (including every view's) is dropped. A view is a typed window at
//! a byte offset into a base; views of views refer to the root base with the offsets added, and
//! views never own memory of their own.
//!
//! **Lifetime rule.** Memory the device may still use is never freed or reused. A base buffer
//! records the [`Stamp`] (timeline value) of the last submission that reads it and of the last
//! that writes it ([`Buffer::mark_read`], [`Buffer::mark_written`]; the safe
//! [`Program::call`](crate::program::Program::call) marks every buffer it passes, views mark
//! their base). When the last handle goes, the memory goes to the allocator's deferred-free list
//! ([`LruAllocator::free_after`]) and returns for reuse only once the device has passed that
//! stamp; a device without a completion source is synchronized first. Host copies wait for the
//! device first: [`Buffer::copy_out`] for the last writer, [`Buffer::copy_in`] for the last
//! reader and writer, and a copy never overlaps a launch that is taking the buffer's address.
//!
//! Limits: stamps are per base buffer, not per byte range (a copy of one view waits for work
//! on another view of the same base); a buffer is on one device (no mapping into a second
//! device's address space yet).
//!
//! [`LruAllocator::free_after`]: crate::allocator::LruAllocator::free_after
//!
//! [`LruAllocator`]: crate::allocator::LruAllocator

use crate::allocator::{Allocator, BufferSpec, DeviceMemory};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::stamp::Stamp;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

/// A typed buffer of `size` elements on one device (a base, or a view into one).
#[derive(Clone)]
pub struct Buffer(Arc<Inner>);

struct Inner {
    device: Arc<dyn Device>,
    size: u64,
    dtype: DType,
    nbytes: u64,
    spec: BufferSpec,
    /// Byte offset into the root base (0 for a base).
    offset: u64,
    storage: Storage,
}

enum Storage {
    /// Owns its memory once allocated, and the record of its uses.
    Base(spin::Once<DeviceMemory>, Uses),
    /// A window into this root base.
    View(Buffer),
}

/// Set in [`Uses::gate`] while a host copy runs.
const COPYING: u64 = 1 << 63;

/// The device's uses of a base buffer's memory.
#[derive(Default)]
struct Uses {
    /// Stamp of the last submission that reads the memory.
    read: AtomicU64,
    /// Stamp of the last submission that writes it.
    write: AtomicU64,
    /// Launches between taking the buffer's address and marking its stamp (a count), or
    /// [`COPYING`] while a host copy runs: the two exclude each other, so a copy either sees a
    /// launch's stamp (and waits for it) or finishes before that launch is submitted.
    gate: AtomicU64,
}

impl Uses {
    fn last_use(&self) -> Stamp {
        Stamp::new(self.read.load(Ordering::Acquire).max(self.write.load(Ordering::Acquire)))
    }

    fn begin_launch(&self) {
        loop {
            let g = self.gate.load(Ordering::Acquire);
            if g & COPYING == 0
                && self.gate.compare_exchange_weak(g, g + 1, Ordering::AcqRel, Ordering::Acquire).is_ok()
            {
                return;
            }
            // a host copy is running: it holds the gate only for the copy itself
            backoff();
        }
    }

    fn end_launch(&self) {
        self.gate.fetch_sub(1, Ordering::AcqRel);
    }

    fn begin_copy(&self) {
        // TIMEOUT: none here: launches hold the gate only while they submit (a launch that
        // waits for its kernel holds it until the device's own timeout ends that wait).
        while self.gate.compare_exchange_weak(0, COPYING, Ordering::AcqRel, Ordering::Acquire).is_err() {
            backoff();
        }
    }

    fn end_copy(&self) {
        self.gate.store(0, Ordering::Release);
    }
}

/// Let the holder of a buffer's gate run.
fn backoff() {
    #[cfg(feature = "std")]
    std::thread::yield_now();
    #[cfg(not(feature = "std"))]
    core::hint::spin_loop();
}

/// Wait until `device` has passed `stamp` (through its timeline, or by synchronizing a device
/// that has none).
fn wait_device(device: &dyn Device, stamp: Stamp) -> Result<()> {
    if stamp.is_zero() {
        return Ok(());
    }
    // TIMEOUT: the device timeline's policy (default 30 s without progress), then
    // `Error::Timeout` and the device is marked hung.
    match device.engine() {
        Some(h) => h.wait(stamp),
        None => device.synchronize(),
    }
}

/// Whether `device` is known to have passed `stamp` without waiting.
fn passed(device: &dyn Device, stamp: Stamp) -> bool {
    stamp.is_zero() || device.engine().is_some_and(|h| h.timeline().passed(stamp))
}

/// The buffers of one launch, between taking their addresses and marking their stamps: host
/// copies of them wait meanwhile. Ends on drop.
pub(crate) struct Launching<'a>(&'a [&'a Buffer]);

impl<'a> Launching<'a> {
    pub(crate) fn begin(bufs: &'a [&'a Buffer]) -> Self {
        for b in bufs {
            b.uses().begin_launch();
        }
        Self(bufs)
    }
}

impl Drop for Launching<'_> {
    fn drop(&mut self) {
        for b in self.0 {
            b.uses().end_launch();
        }
    }
}

impl Buffer {
    /// A base buffer of `size` elements of `dtype` on `device`. Nothing is allocated until the
    /// memory is first needed.
    ///
    /// Errors: [`Error::InvalidArgument`] when the size in bytes overflows `u64`.
    pub fn new(device: Arc<dyn Device>, size: u64, dtype: DType, spec: BufferSpec) -> Result<Buffer> {
        let nbytes = nbytes(size, dtype)?;
        Ok(Buffer(Arc::new(Inner {
            device,
            size,
            dtype,
            nbytes,
            spec,
            offset: 0,
            storage: Storage::Base(spin::Once::new(), Uses::default()),
        })))
    }

    /// A view of `size` elements of `dtype` starting `byte_offset` bytes into this buffer. The
    /// view refers to the root base (never to another view) and shares its memory.
    ///
    /// Errors: [`Error::OutOfBounds`] when the view does not lie inside the base,
    /// [`Error::InvalidArgument`] when its size in bytes overflows.
    pub fn view(&self, size: u64, dtype: DType, byte_offset: u64) -> Result<Buffer> {
        let nbytes = nbytes(size, dtype)?;
        let base = self.base();
        let limit = base.nbytes();
        let out_of_bounds = Error::OutOfBounds { what: "buffer view", offset: byte_offset, len: nbytes, limit };
        let offset = self.0.offset.checked_add(byte_offset).ok_or(out_of_bounds.clone())?;
        match offset.checked_add(nbytes) {
            Some(end) if end <= limit => {}
            _ => return Err(Error::OutOfBounds { what: "buffer view", offset, len: nbytes, limit }),
        }
        Ok(Buffer(Arc::new(Inner {
            device: base.0.device.clone(),
            size,
            dtype,
            nbytes,
            spec: base.0.spec,
            offset,
            storage: Storage::View(base),
        })))
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.0.device
    }

    /// Number of elements.
    pub fn size(&self) -> u64 {
        self.0.size
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// Size in bytes.
    pub fn nbytes(&self) -> u64 {
        self.0.nbytes
    }

    /// Byte offset into the root base (0 for a base).
    pub fn offset(&self) -> u64 {
        self.0.offset
    }

    /// The memory spec (a view has its base's).
    pub fn spec(&self) -> &BufferSpec {
        &self.0.spec
    }

    /// Whether this is a view.
    pub fn is_view(&self) -> bool {
        matches!(self.0.storage, Storage::View(_))
    }

    /// The root base (a handle to `self` for a base).
    pub fn base(&self) -> Buffer {
        match &self.0.storage {
            Storage::Base(..) => self.clone(),
            Storage::View(base) => base.clone(),
        }
    }

    /// Whether both handles are the same buffer (not merely the same memory).
    pub fn same(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Whether the (base's) memory has been allocated.
    pub fn is_allocated(&self) -> bool {
        match &self.0.storage {
            Storage::Base(once, _) => once.is_completed(),
            Storage::View(base) => base.is_allocated(),
        }
    }

    /// Allocate the base's memory if that has not happened yet (at most once, thread-safe).
    ///
    /// Errors: the allocator's ([`Error::OutOfMemory`], [`Error::InvalidArgument`] for an empty
    /// buffer, ...); a failed allocation is retried by the next call.
    pub fn allocate(&self) -> Result<()> {
        self.memory().map(|_| ())
    }

    /// The whole memory of the root base (allocating it if needed). This buffer's bytes start
    /// [`Buffer::offset`] bytes into it.
    pub fn memory(&self) -> Result<&DeviceMemory> {
        match &self.0.storage {
            Storage::Base(once, _) => {
                once.try_call_once(|| self.0.device.allocator().alloc(self.0.nbytes, &self.0.spec))
            }
            Storage::View(base) => base.memory(),
        }
    }

    /// The device address of the first byte (allocating if needed).
    pub fn device_addr(&self) -> Result<u64> {
        let mem = self.memory()?;
        self.0.device.allocator().offset(mem, self.0.offset, self.0.nbytes)
    }

    /// The root base's record of uses.
    fn uses(&self) -> &Uses {
        match &self.0.storage {
            Storage::Base(_, uses) => uses,
            Storage::View(base) => base.uses(),
        }
    }

    /// Record that the submission completing at `stamp` reads this buffer (its base): its
    /// memory stays allocated, and [`Buffer::copy_in`] waits, until the device passes `stamp`.
    /// Stamps only grow (an older stamp changes nothing).
    pub fn mark_read(&self, stamp: Stamp) {
        self.uses().read.fetch_max(stamp.get(), Ordering::AcqRel);
    }

    /// Record that the submission completing at `stamp` writes this buffer (its base): as
    /// [`Buffer::mark_read`], and [`Buffer::copy_out`] waits for it too.
    pub fn mark_written(&self, stamp: Stamp) {
        self.uses().write.fetch_max(stamp.get(), Ordering::AcqRel);
    }

    /// The stamp of the last submission that uses the buffer's memory (zero when none did).
    pub fn last_use(&self) -> Stamp {
        self.uses().last_use()
    }

    /// The stamp of the last submission that writes the buffer's memory (zero when none did).
    pub fn last_write(&self) -> Stamp {
        Stamp::new(self.uses().write.load(Ordering::Acquire))
    }

    /// Wait until the device has passed every recorded use of the buffer.
    ///
    /// Errors: the device's wait errors ([`Error::Timeout`], a recorded fault).
    pub fn wait_idle(&self) -> Result<()> {
        wait_device(&*self.0.device, self.last_use())
    }

    /// Run the host copy `f` once the device has passed the last write (and, with
    /// `readers_too`, the last read); no launch takes the buffer's address meanwhile.
    fn host_copy(&self, readers_too: bool, f: impl FnOnce() -> Result<()>) -> Result<()> {
        let uses = self.uses();
        let dev = &*self.0.device;
        let mut waited = Stamp::ZERO;
        loop {
            uses.begin_copy();
            let stamp = if readers_too { uses.last_use() } else { self.last_write() };
            if stamp <= waited || passed(dev, stamp) {
                let r = f();
                uses.end_copy();
                return r;
            }
            uses.end_copy();
            // wait without holding the gate: launches of other work on this buffer go on
            wait_device(dev, stamp)?;
            waited = stamp;
        }
    }

    /// Copy `src` (exactly [`Buffer::nbytes`] long) into the buffer, allocating it if needed,
    /// once the device has passed every recorded use of it (its readers and writers).
    ///
    /// Errors: [`Error::Mismatch`] for a wrong length; the device's wait errors; the
    /// allocator's copy errors.
    pub fn copy_in(&self, src: &[u8]) -> Result<()> {
        self.check_len("buffer copy_in length", src.len())?;
        let mem = self.memory()?;
        self.host_copy(true, || self.0.device.allocator().copy_in(mem, self.0.offset, src))
    }

    /// Copy the buffer's bytes into `dst` (exactly [`Buffer::nbytes`] long), allocating it if
    /// needed, once the device has passed the last recorded write of it.
    ///
    /// Errors: as for [`Buffer::copy_in`].
    pub fn copy_out(&self, dst: &mut [u8]) -> Result<()> {
        self.check_len("buffer copy_out length", dst.len())?;
        let mem = self.memory()?;
        self.host_copy(false, || self.0.device.allocator().copy_out(dst, mem, self.0.offset))
    }

    fn check_len(&self, what: &'static str, len: usize) -> Result<()> {
        if len as u64 != self.0.nbytes {
            return Err(Error::Mismatch { what, expected: self.0.nbytes, found: len as u64 });
        }
        Ok(())
    }
}

fn nbytes(size: u64, dtype: DType) -> Result<u64> {
    size.checked_mul(dtype.size() as u64)
        .ok_or(Error::InvalidArgument { what: "buffer size in bytes overflows", value: size })
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Storage::Base(once, uses) = &mut self.storage
            && let Some(mem) = core::mem::replace(once, spin::Once::new()).try_into_inner()
        {
            // the lifetime rule: the memory returns only once the device has passed its last use
            let stamp = uses.last_use();
            let alloc = self.device.allocator();
            if let Err(mem) = alloc.free_after(mem, &self.spec, stamp) {
                // no deferred-free list on this device: wait for it here
                match wait_device(&*self.device, stamp) {
                    Ok(()) => alloc.free(mem, &self.spec),
                    Err(e) => {
                        error!(
                            "{}: buffer memory at {:#x} is leaked: the device may still use it ({})",
                            self.device.name(),
                            mem.addr(),
                            crate::allocator::Shown(&e)
                        );
                        let _leaked = mem; // a handle dropped without `free` leaks its memory
                    }
                }
            }
        }
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Buffer");
        d.field("device", &self.0.device.name()).field("size", &self.0.size).field("dtype", &self.0.dtype);
        if self.is_view() {
            d.field("offset", &self.0.offset);
        }
        if self.0.spec != BufferSpec::default() {
            d.field("spec", &self.0.spec);
        }
        d.field("allocated", &self.is_allocated()).finish()
    }
}

/// One buffer of the same size and type on each of several devices (a sharded or replicated
/// tensor's storage).
#[derive(Clone, Debug)]
pub struct MultiBuffer {
    bufs: Vec<Buffer>,
}

impl MultiBuffer {
    /// A buffer of `size` elements of `dtype` on each device in `devices` (in order).
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty device list; [`Buffer::new`]'s errors.
    pub fn new(devices: &[Arc<dyn Device>], size: u64, dtype: DType, spec: BufferSpec) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::InvalidArgument { what: "a multi-device buffer needs at least one device", value: 0 });
        }
        let bufs = devices.iter().map(|d| Buffer::new(d.clone(), size, dtype, spec)).collect::<Result<Vec<_>>>()?;
        Ok(Self { bufs })
    }

    /// The buffer on the `i`-th device.
    pub fn get(&self, i: usize) -> Option<&Buffer> {
        self.bufs.get(i)
    }

    /// All per-device buffers, in device order.
    pub fn buffers(&self) -> &[Buffer] {
        &self.bufs
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.bufs.len()
    }

    /// Always false (a multi-buffer has at least one device); for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// Elements per device.
    pub fn size(&self) -> u64 {
        self.bufs.first().map_or(0, Buffer::size)
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.bufs.first().map_or(DType::U8, Buffer::dtype)
    }

    /// Whether every per-device buffer is allocated.
    pub fn is_allocated(&self) -> bool {
        self.bufs.iter().all(Buffer::is_allocated)
    }

    /// Copy the same bytes into every device's buffer.
    pub fn copy_in(&self, src: &[u8]) -> Result<()> {
        self.bufs.iter().try_for_each(|b| b.copy_in(src))
    }

    /// The same view on every device.
    pub fn view(&self, size: u64, dtype: DType, byte_offset: u64) -> Result<MultiBuffer> {
        let bufs = self.bufs.iter().map(|b| b.view(size, dtype, byte_offset)).collect::<Result<Vec<_>>>()?;
        Ok(Self { bufs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::tests::FakeDevice;
    use crate::stamp::Stamp;
    use alloc::format;
    use core::sync::atomic::Ordering;

    fn dev(capacity: u64) -> Arc<FakeDevice> {
        FakeDevice::new("FAKE", capacity)
    }

    fn as_dyn(d: &Arc<FakeDevice>) -> Arc<dyn Device> {
        d.clone()
    }

    #[test]
    fn allocation_is_lazy_and_happens_once() {
        let d = dev(1 << 16);
        let b = Buffer::new(as_dyn(&d), 16, DType::F32, BufferSpec::default()).unwrap();
        assert!(!b.is_allocated());
        assert_eq!(d.heap.allocs.load(Ordering::Relaxed), 0);
        let addr = b.device_addr().unwrap();
        assert!(b.is_allocated());
        assert_eq!(b.device_addr().unwrap(), addr);
        b.allocate().unwrap();
        b.clone().allocate().unwrap();
        assert_eq!(d.heap.allocs.load(Ordering::Relaxed), 1);
        assert_eq!(d.alloc.used_bytes(), 64);
    }

    #[test]
    fn concurrent_first_use_allocates_once() {
        let d = dev(1 << 16);
        let b = Buffer::new(as_dyn(&d), 8, DType::U64, BufferSpec::default()).unwrap();
        let addrs: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3).map(|_| s.spawn(|| b.device_addr().unwrap())).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(addrs.iter().all(|&a| a == addrs[0]));
        assert_eq!(d.heap.allocs.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn views_refer_to_the_root_base_with_accumulated_offsets() {
        let d = dev(1 << 16);
        let base = Buffer::new(as_dyn(&d), 64, DType::U8, BufferSpec::default()).unwrap();
        let v1 = base.view(8, DType::F32, 16).unwrap();
        let v2 = v1.view(2, DType::I32, 4).unwrap();
        assert!(v2.is_view() && !base.is_view());
        assert!(v2.base().same(&base), "a view of a view refers to the root base");
        assert_eq!((v1.offset(), v2.offset()), (16, 20));
        assert_eq!(v2.nbytes(), 8);
        assert_eq!(v2.device_addr().unwrap(), base.device_addr().unwrap() + 20);
    }

    #[test]
    fn views_must_lie_inside_the_base() {
        let d = dev(1 << 16);
        let base = Buffer::new(as_dyn(&d), 16, DType::U8, BufferSpec::default()).unwrap();
        assert!(base.view(16, DType::U8, 0).is_ok());
        assert_eq!(
            base.view(2, DType::U8, 15).unwrap_err(),
            Error::OutOfBounds { what: "buffer view", offset: 15, len: 2, limit: 16 }
        );
        let v = base.view(2, DType::U32, 4).unwrap();
        // Offsets accumulate (4 + 4) and the bound is the base, not the parent view: a view of
        // `v` may extend past `v` as long as it stays inside the base.
        assert!(v.view(2, DType::U32, 4).is_ok());
        assert!(v.view(1, DType::U8, 11).is_ok());
        assert_eq!(
            v.view(1, DType::U8, 12).unwrap_err(),
            Error::OutOfBounds { what: "buffer view", offset: 16, len: 1, limit: 16 }
        );
        assert!(matches!(v.view(1, DType::U8, u64::MAX), Err(Error::OutOfBounds { .. })));
        assert!(matches!(base.view(u64::MAX, DType::F64, 0), Err(Error::InvalidArgument { .. })));
    }

    #[test]
    fn views_share_the_base_memory_and_never_allocate() {
        let d = dev(1 << 16);
        let base = Buffer::new(as_dyn(&d), 8, DType::U8, BufferSpec::default()).unwrap();
        let v = base.view(4, DType::U8, 2).unwrap();
        // Using the view first allocates the base, once.
        v.copy_in(&[1, 2, 3, 4]).unwrap();
        assert!(base.is_allocated());
        assert_eq!(d.heap.allocs.load(Ordering::Relaxed), 1);
        let mut all = [0u8; 8];
        base.copy_out(&mut all).unwrap();
        assert_eq!(all, [0, 0, 1, 2, 3, 4, 0, 0]);
        base.copy_in(&[9, 8, 7, 6, 5, 4, 3, 2]).unwrap();
        let mut part = [0u8; 4];
        v.copy_out(&mut part).unwrap();
        assert_eq!(part, [7, 6, 5, 4]);
        assert!(core::ptr::eq(v.memory().unwrap(), base.memory().unwrap()));
        assert_eq!(d.heap.allocs.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn copies_need_the_exact_length() {
        let d = dev(1 << 16);
        let b = Buffer::new(as_dyn(&d), 4, DType::F32, BufferSpec::default()).unwrap();
        assert_eq!(
            b.copy_in(&[0; 15]).unwrap_err(),
            Error::Mismatch { what: "buffer copy_in length", expected: 16, found: 15 }
        );
        assert_eq!(
            b.copy_out(&mut [0; 17]).unwrap_err(),
            Error::Mismatch { what: "buffer copy_out length", expected: 16, found: 17 }
        );
        assert!(!b.is_allocated(), "a rejected copy allocates nothing");
    }

    #[test]
    fn dropping_every_handle_returns_the_memory() {
        let d = dev(1 << 16);
        {
            let a = Buffer::new(as_dyn(&d), 32, DType::F32, BufferSpec::default()).unwrap();
            let b = Buffer::new(as_dyn(&d), 10, DType::U8, BufferSpec { nolru: true, ..Default::default() }).unwrap();
            let va = a.view(4, DType::F32, 64).unwrap();
            let a2 = a.clone();
            va.allocate().unwrap();
            b.allocate().unwrap();
            assert_eq!(d.alloc.used_bytes(), 128 + 10);
            drop(a);
            drop(a2);
            assert_eq!(d.alloc.used_bytes(), 128 + 10, "a live view keeps its base's memory");
            let mut out = [0u8; 16];
            va.copy_out(&mut out).unwrap();
            drop(b);
            assert_eq!(d.alloc.used_bytes(), 128);
        }
        assert_eq!(d.alloc.used_bytes(), 0);
        assert_eq!(d.alloc.cached_bytes(), 128, "the cacheable block went to the cache");
        // The next buffer of that size reuses it without the backend.
        let c = Buffer::new(as_dyn(&d), 128, DType::U8, BufferSpec::default()).unwrap();
        c.allocate().unwrap();
        assert_eq!(d.heap.allocs.load(Ordering::Relaxed), 2);
        drop(c);
        d.alloc.free_cache();
        assert_eq!(d.heap.used.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn failed_allocation_is_reported_and_retried_later() {
        let d = dev(64);
        let big = Buffer::new(as_dyn(&d), 128, DType::U8, BufferSpec::default()).unwrap();
        assert!(matches!(big.allocate(), Err(Error::OutOfMemory { requested: 128, used: 0, .. })));
        assert!(!big.is_allocated());
        let empty = Buffer::new(as_dyn(&d), 0, DType::F32, BufferSpec::default()).unwrap();
        assert!(matches!(empty.device_addr(), Err(Error::InvalidArgument { .. })));
        let small = Buffer::new(as_dyn(&d), 16, DType::F32, BufferSpec::default()).unwrap();
        small.allocate().unwrap();
        assert_eq!(format!("{small:?}"), "Buffer { device: \"FAKE\", size: 16, dtype: F32, allocated: true }");
    }

    #[test]
    fn multibuffer_spans_devices() {
        let d0 = dev(1 << 16);
        let d1 = FakeDevice::new("FAKE:1", 1 << 16);
        let mb = MultiBuffer::new(&[as_dyn(&d0), as_dyn(&d1)], 4, DType::U16, BufferSpec::default()).unwrap();
        assert_eq!((mb.len(), mb.size(), mb.dtype()), (2, 4, DType::U16));
        assert!(!mb.is_allocated());
        mb.copy_in(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert!(mb.is_allocated());
        let v = mb.view(2, DType::U16, 2).unwrap();
        for (i, d) in [&d0, &d1].into_iter().enumerate() {
            let mut out = [0u8; 4];
            v.get(i).unwrap().copy_out(&mut out).unwrap();
            assert_eq!(out, [3, 4, 5, 6]);
            assert_eq!(v.get(i).unwrap().device().name(), d.name);
        }
        assert!(v.get(2).is_none());
        assert!(matches!(mb.copy_in(&[0; 3]), Err(Error::Mismatch { .. })));
        assert!(matches!(
            MultiBuffer::new(&[], 1, DType::U8, BufferSpec::default()),
            Err(Error::InvalidArgument { .. })
        ));
        drop((mb, v));
        assert_eq!(d0.alloc.used_bytes() + d1.alloc.used_bytes(), 0);
    }

    #[test]
    fn a_used_buffer_returns_its_memory_only_after_the_device_passes_its_last_use() {
        let d = dev(1 << 16);
        let tl = Arc::new(crate::allocator::tests::FakeTimeline::default());
        d.alloc.attach_completion(tl.clone());
        let b = Buffer::new(as_dyn(&d), 64, DType::U8, BufferSpec::default()).unwrap();
        let v = b.view(8, DType::U8, 8).unwrap();
        let addr = b.device_addr().unwrap();
        v.mark_read(Stamp::new(2));
        v.mark_written(Stamp::new(4));
        b.mark_written(Stamp::new(3));
        assert_eq!((b.last_use(), b.last_write()), (Stamp::new(4), Stamp::new(4)), "views mark their base");
        drop((b, v));
        assert_eq!(d.alloc.pending_frees(), 1);
        tl.done.store(3, Ordering::Release);
        let c = Buffer::new(as_dyn(&d), 64, DType::U8, BufferSpec::default()).unwrap();
        assert_ne!(c.device_addr().unwrap(), addr, "stamp 4 not passed yet");
        tl.done.store(4, Ordering::Release);
        let e = Buffer::new(as_dyn(&d), 64, DType::U8, BufferSpec::default()).unwrap();
        assert_eq!(e.device_addr().unwrap(), addr, "back in the cache once passed");
        assert_eq!(d.syncs.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn without_a_timeline_copies_and_frees_synchronize_first() {
        let d = dev(1 << 16);
        let b = Buffer::new(as_dyn(&d), 4, DType::U8, BufferSpec::default()).unwrap();
        b.copy_in(&[1, 2, 3, 4]).unwrap();
        assert_eq!(d.syncs.load(Ordering::Relaxed), 0, "an unused buffer needs no wait");
        b.mark_read(Stamp::new(7));
        let mut out = [0u8; 4];
        b.copy_out(&mut out).unwrap();
        assert_eq!(d.syncs.load(Ordering::Relaxed), 0, "no writer in flight: copy_out does not wait for readers");
        b.copy_in(&[5, 6, 7, 8]).unwrap();
        assert_eq!(d.syncs.load(Ordering::Relaxed), 1, "copy_in waits for the reader");
        b.mark_written(Stamp::new(2));
        assert_eq!(b.last_write(), Stamp::new(2));
        b.mark_written(Stamp::new(1));
        assert_eq!(b.last_write(), Stamp::new(2), "stamps only grow");
        b.copy_out(&mut out).unwrap();
        assert_eq!((out, d.syncs.load(Ordering::Relaxed)), ([5, 6, 7, 8], 2));
        drop(b);
        assert_eq!(d.syncs.load(Ordering::Relaxed), 3, "the free waited for the device");
        assert_eq!(d.alloc.used_bytes(), 0);
    }
}
