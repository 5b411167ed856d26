//! Compiled programs: the image a device loads, its parameter signature, the kernel-argument
//! layout derived from it, and the [`Program`] trait a loaded program implements.
//!
//! The argument layout follows tinygrad's `TinyELF.iter_sig`: every buffer parameter is an
//! 8-byte device pointer, packed first in slot order; the value parameters follow in slot order,
//! each at the next offset aligned to its own size (natural alignment, no other padding). Values
//! are integers (symbolic sizes and loop bounds); a value declared with a float dtype receives the
//! low bytes of the integer as its bit pattern.

use crate::buffer::{Buffer, Launching};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::stamp::Stamp;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// What a parameter carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A device pointer to a buffer of `dtype` elements.
    Buffer,
    /// A scalar of `dtype`.
    Value,
}

/// One kernel parameter, as a bundle or compiler describes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    /// The source-level name, when known.
    pub name: Option<String>,
    /// Position among the kernel's parameters; orders the layout.
    pub slot: u32,
    /// Element type (buffers) or value type (values).
    pub dtype: DType,
    /// Shape of a buffer parameter in elements (empty for values or when unknown).
    pub shape: Vec<u64>,
    /// Buffer pointer or scalar value.
    pub kind: ParamKind,
}

/// A compiled program ready to be loaded by a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramImage {
    /// The kernel's name (`"E_1024_4"`).
    pub name: String,
    /// What it was compiled for (`"CPU:x86_64"`, `"QCOM:a630"`).
    pub target: String,
    /// The machine code container (ELF object, raw shader binary).
    pub binary: Arc<[u8]>,
    /// The entry symbol.
    pub entry: String,
    /// Parameters, in any order (the layout sorts them by slot).
    pub signature: Vec<Param>,
}

/// Size of one buffer pointer in the argument block.
const PTR: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    slot: u32,
    offset: usize,
    size: usize,
}

/// Where each argument of a signature lives in the packed argument block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernargLayout {
    bufs: Vec<Entry>,
    vals: Vec<Entry>,
    total: usize,
}

impl KernargLayout {
    /// Lay out `signature`: buffer pointers first (8 bytes each, slot order), then values in slot
    /// order at naturally aligned offsets.
    ///
    /// Errors: [`Error::InvalidArgument`] when two parameters share a slot.
    pub fn new(signature: &[Param]) -> Result<Self> {
        let mut params: Vec<&Param> = signature.iter().collect();
        params.sort_by_key(|p| p.slot);
        if let Some(w) = params.windows(2).find(|w| w.first().map(|p| p.slot) == w.get(1).map(|p| p.slot)) {
            let slot = w.first().map_or(0, |p| p.slot);
            return Err(Error::InvalidArgument { what: "two kernel parameters share a slot", value: slot as u64 });
        }
        let mut bufs = Vec::new();
        let mut vals = Vec::new();
        let mut offset = 0usize;
        for p in params.iter().filter(|p| p.kind == ParamKind::Buffer) {
            bufs.push(Entry { slot: p.slot, offset, size: PTR });
            offset += PTR;
        }
        for p in params.iter().filter(|p| p.kind == ParamKind::Value) {
            let size = p.dtype.size();
            offset = offset.next_multiple_of(size);
            vals.push(Entry { slot: p.slot, offset, size });
            offset += size;
        }
        Ok(Self { bufs, vals, total: offset })
    }

    /// Bytes the packed arguments occupy (the end of the last argument; not rounded up).
    #[inline]
    pub fn total_size(&self) -> usize {
        self.total
    }

    /// Number of buffer parameters.
    #[inline]
    pub fn buffer_count(&self) -> usize {
        self.bufs.len()
    }

    /// Number of value parameters.
    #[inline]
    pub fn value_count(&self) -> usize {
        self.vals.len()
    }

    /// Byte offset of the parameter in `slot`, if the signature has one.
    pub fn offset_of(&self, slot: u32) -> Option<usize> {
        self.bufs.iter().chain(&self.vals).find(|e| e.slot == slot).map(|e| e.offset)
    }

    /// Write the arguments into `out`: `bufs[i]` is the device address for the i-th buffer
    /// parameter in slot order, `vals[j]` the j-th value parameter in slot order. Padding bytes
    /// are zeroed; values are written little-endian, truncated to their dtype's size. Returns the
    /// number of bytes written ([`KernargLayout::total_size`]). Allocates nothing.
    ///
    /// Errors: [`Error::Mismatch`] when `bufs` or `vals` has the wrong length,
    /// [`Error::OutOfSpace`] when `out` is shorter than the layout.
    pub fn pack(&self, bufs: &[u64], vals: &[i64], out: &mut [u8]) -> Result<usize> {
        if bufs.len() != self.bufs.len() {
            return Err(Error::Mismatch {
                what: "kernel buffer argument count",
                expected: self.bufs.len() as u64,
                found: bufs.len() as u64,
            });
        }
        if vals.len() != self.vals.len() {
            return Err(Error::Mismatch {
                what: "kernel value argument count",
                expected: self.vals.len() as u64,
                found: vals.len() as u64,
            });
        }
        let Some(out) = out.get_mut(..self.total) else {
            return Err(Error::OutOfSpace {
                what: "kernel argument block",
                requested: self.total as u64,
                capacity: out.len() as u64,
            });
        };
        out.fill(0);
        for (e, b) in self.bufs.iter().zip(bufs) {
            put(out, e, &b.to_le_bytes())?;
        }
        for (e, v) in self.vals.iter().zip(vals) {
            put(out, e, &v.to_le_bytes())?;
        }
        Ok(self.total)
    }
}

/// Bytes each buffer parameter of `signature` spans, in slot order (the order
/// [`KernargLayout::pack`] and [`Program::call`] take buffers in): the product of its shape's
/// dimensions times its dtype's size. A loaded program records these at load, and
/// [`Program::call`] refuses a buffer smaller than its parameter's footprint.
///
/// Errors: [`Error::InvalidArgument`] naming the slot of a buffer parameter without a shape
/// (what the kernel accesses through it would be unknown, so no call could be checked);
/// [`Error::Malformed`] when a shape's byte count overflows.
pub fn buffer_footprints(signature: &[Param]) -> Result<Vec<u64>> {
    let mut params: Vec<&Param> = signature.iter().filter(|p| p.kind == ParamKind::Buffer).collect();
    params.sort_by_key(|p| p.slot);
    params
        .iter()
        .map(|p| {
            if p.shape.is_empty() {
                return Err(Error::InvalidArgument {
                    what: "kernel buffer parameter without a shape (its footprint is unknown)",
                    value: u64::from(p.slot),
                });
            }
            crate::dtype::footprint(p.dtype, p.shape.iter().copied())
        })
        .collect()
}

/// Write the low `e.size` bytes of `word` at `e.offset`.
#[inline(always)]
fn put(out: &mut [u8], e: &Entry, word: &[u8; 8]) -> Result<()> {
    match (out.get_mut(e.offset..e.offset + e.size), word.get(..e.size)) {
        (Some(dst), Some(src)) => {
            dst.copy_from_slice(src);
            Ok(())
        }
        // Unreachable by construction: entries lie inside the layout and sizes are <= 8.
        _ => Err(Error::OutOfBounds {
            what: "kernel argument",
            offset: e.offset as u64,
            len: e.size as u64,
            limit: out.len() as u64,
        }),
    }
}

/// What a launch reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LaunchReport {
    /// The timeline value that marks the launch done on its device; `None` only when the launch
    /// had finished when the call returned.
    pub stamp: Option<Stamp>,
    /// The run time in microseconds, when the caller waited and the device measures it.
    pub time_us: Option<f64>,
}

/// Most buffers one [`Program::call`] passes (tinygrad's argument cap is 63).
pub const MAX_CALL_BUFFERS: usize = 64;

/// A program loaded on a device, ready to launch.
///
/// Loading is where native code enters: a kernel accesses the buffers it is given as its
/// compiler laid them out, and nothing checks that at run time. The signature it was loaded
/// with states how much it accesses through each buffer (its shape); [`Program::call`] holds
/// each buffer to that footprint ([`Program::buffer_footprints`]), and guarantees the rest of
/// the contract: the buffers are on this program's device, their memory stays allocated and
/// unreused until the device has finished the launch (the lifetime rule of
/// [`crate::buffer`]), and host copies of them wait for it.
///
/// The program's own code falls under the same rule: a backend whose programs live in device
/// memory keeps the code in a [`Buffer`] and marks it read at each launch
/// ([`Buffer::mark_read`]), so dropping the program defers the free past its last launch. (The
/// CPU and SIM devices never unload a kernel while the device lives.)
pub trait Program: Send + Sync {
    /// The kernel's name.
    fn name(&self) -> &str;

    /// Whether `device` is the device this program was loaded on.
    fn is_on(&self, device: &dyn Device) -> bool;

    /// Bytes the kernel accesses through each buffer parameter, in slot order, recorded at
    /// load from the signature ([`buffer_footprints`]): [`Program::call`] refuses a buffer
    /// smaller than its parameter's footprint, and a different number of buffers.
    fn buffer_footprints(&self) -> &[u64];

    /// LaunchReport over a `global` grid of `local` workgroups with the buffers at device addresses
    /// `bufs` and values `vals` (both in slot order, as [`KernargLayout::pack`] takes them).
    /// With `wait`, block until it finishes (and report its run time when the device measures
    /// it). Returns the launch's completion stamp.
    ///
    /// # Safety
    /// The kernel is native code that reads and writes through the addresses in `bufs`, so the
    /// caller promises, for each of them:
    /// - it is the device address of memory allocated on this program's device, at least as
    ///   large as the kernel accesses through that argument (the signature's shape);
    /// - that memory is neither freed nor reused until the device has passed the returned
    ///   stamp (or until the call returns when the stamp is `None`): keep its [`Buffer`] alive
    ///   and mark it ([`Buffer::mark_written`]), or synchronize before freeing it;
    /// - no host code reads or writes that memory while the launch may run, except through
    ///   [`Buffer`] copies of buffers marked with the stamp (they wait for it).
    ///
    /// Implementations return `stamp: None` only when the launch has finished on return.
    unsafe fn call_raw(
        &self,
        bufs: &[u64],
        vals: &[i64],
        global: [u32; 3],
        local: [u32; 3],
        wait: bool,
    ) -> Result<LaunchReport>;

    /// LaunchReport with `bufs` as the buffer arguments (in slot order; their device addresses are
    /// taken, allocating them if needed), as [`Program::call_raw`] does, and mark every buffer
    /// as written by the launch, so its memory outlives the launch and host copies wait for it.
    /// Returns the run time in microseconds when `wait` is set and the device measures it.
    ///
    /// Errors: [`Error::InvalidArgument`] for a buffer on another device or more than
    /// [`MAX_CALL_BUFFERS`] buffers; [`Error::Mismatch`] for a buffer count other than the
    /// signature's; [`Error::OutOfBounds`] (in an [`Error::Context`] naming the program and
    /// the argument) for a buffer smaller than its parameter's footprint; allocation errors;
    /// the launch's errors. Nothing is launched or allocated when a check fails.
    fn call(
        &self,
        bufs: &[&Buffer],
        vals: &[i64],
        global: [u32; 3],
        local: [u32; 3],
        wait: bool,
    ) -> Result<Option<f64>> {
        if bufs.len() > MAX_CALL_BUFFERS {
            return Err(Error::InvalidArgument { what: "program call: too many buffers", value: bufs.len() as u64 });
        }
        if let Some(i) = bufs.iter().position(|b| !self.is_on(&**b.device())) {
            return Err(Error::InvalidArgument {
                what: "program call: a buffer is on another device",
                value: i as u64,
            });
        }
        let footprints = self.buffer_footprints();
        if footprints.len() != bufs.len() {
            return Err(Error::Mismatch {
                what: "program call: buffer argument count",
                expected: footprints.len() as u64,
                found: bufs.len() as u64,
            });
        }
        if let Some((i, (b, &need))) =
            bufs.iter().zip(footprints).enumerate().find(|(_, (b, need))| b.nbytes() < **need)
        {
            return Err(Error::OutOfBounds {
                what: "program call: buffer smaller than its kernel parameter",
                offset: 0,
                len: need,
                limit: b.nbytes(),
            }
            .context(alloc::format!("program {}: buffer argument {i}", self.name())));
        }
        let mut addrs = [0u64; MAX_CALL_BUFFERS];
        for (a, b) in addrs.iter_mut().zip(bufs) {
            *a = b.device_addr()?;
        }
        // no host copy of these buffers runs from here until their stamps are marked
        let _launching = Launching::begin(bufs);
        // SAFETY: each address is the device address of a live buffer on this program's device
        // (checked above); the buffers are borrowed for the call and marked with the launch's
        // stamp before it returns, so their memory is freed only after the device passes it
        // (`Buffer`'s lifetime rule), and host copies wait for that stamp (the gate held here
        // keeps them out until it is marked). Each buffer spans at least its parameter's
        // footprint (checked above), which is all the kernel accesses through it (the
        // signature the program was loaded with; see the trait docs).
        let launch =
            match unsafe { self.call_raw(addrs.get(..bufs.len()).unwrap_or_default(), vals, global, local, wait) } {
                Ok(launch) => launch,
                Err(e) => {
                    // the launch may be in flight anyway (submitted, then its wait failed): mark the
                    // buffers up to everything submitted so far, which covers it
                    if let Some(h) = bufs.first().and_then(|b| b.device().engine()) {
                        let upper = h.timeline().last_submitted();
                        for b in bufs {
                            b.mark_written(upper);
                        }
                    }
                    return Err(e);
                }
            };
        if let Some(stamp) = launch.stamp {
            for b in bufs {
                b.mark_written(stamp);
            }
        }
        Ok(launch.time_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use std::vec::Vec;

    fn p(slot: u32, dtype: DType, kind: ParamKind) -> Param {
        Param { name: None, slot, dtype, shape: Vec::new(), kind }
    }

    /// 2 pointers + i8 + i32 + i64 + i16: natural alignment after the pointer block.
    fn mixed() -> Vec<Param> {
        vec![
            p(0, DType::F32, ParamKind::Buffer),
            p(1, DType::F32, ParamKind::Buffer),
            p(2, DType::I8, ParamKind::Value),
            p(3, DType::I32, ParamKind::Value),
            p(4, DType::I64, ParamKind::Value),
            p(5, DType::I16, ParamKind::Value),
        ]
    }

    #[test]
    fn layout_uses_natural_alignment_after_the_pointers() {
        let l = KernargLayout::new(&mixed()).unwrap();
        let offsets: Vec<usize> = (0..6).map(|s| l.offset_of(s).unwrap()).collect();
        assert_eq!(offsets, [0, 8, 16, 20, 24, 32]);
        assert_eq!(l.total_size(), 34);
        assert_eq!(l.offset_of(6), None);
        assert_eq!((l.buffer_count(), l.value_count()), (2, 4));
    }

    #[test]
    fn pointers_come_first_whatever_the_slot_order() {
        // Signature given out of order, with a value in a lower slot than a buffer.
        let sig = vec![
            p(3, DType::F32, ParamKind::Buffer),
            p(0, DType::I32, ParamKind::Value),
            p(1, DType::U8, ParamKind::Buffer),
        ];
        let l = KernargLayout::new(&sig).unwrap();
        assert_eq!(l.offset_of(1), Some(0));
        assert_eq!(l.offset_of(3), Some(8));
        assert_eq!(l.offset_of(0), Some(16));
        assert_eq!(l.total_size(), 20);
    }

    #[test]
    fn pack_writes_little_endian_truncated_values_and_zero_padding() {
        let l = KernargLayout::new(&mixed()).unwrap();
        let mut out = [0xaau8; 40];
        let n = l.pack(&[0x1122_3344_5566_7788, 0x99], &[-1, 0x0102_0304, -2, 0x7_0008], &mut out).unwrap();
        assert_eq!(n, 34);
        assert_eq!(&out[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&out[8..16], &0x99u64.to_le_bytes());
        assert_eq!(out[16], 0xff, "i8 -1");
        assert_eq!(&out[17..20], &[0, 0, 0], "padding is zeroed");
        assert_eq!(&out[20..24], &0x0102_0304u32.to_le_bytes());
        assert_eq!(&out[24..32], &(-2i64).to_le_bytes());
        assert_eq!(&out[32..34], &[0x08, 0x00], "i16 keeps only the low 16 bits");
        assert_eq!(&out[34..], &[0xaa; 6], "bytes past the layout are untouched");
    }

    #[test]
    fn pack_rejects_wrong_counts_and_short_output() {
        let l = KernargLayout::new(&mixed()).unwrap();
        let mut out = [0u8; 64];
        assert_eq!(
            l.pack(&[1], &[1, 2, 3, 4], &mut out),
            Err(Error::Mismatch { what: "kernel buffer argument count", expected: 2, found: 1 })
        );
        assert_eq!(
            l.pack(&[1, 2], &[1, 2, 3], &mut out),
            Err(Error::Mismatch { what: "kernel value argument count", expected: 4, found: 3 })
        );
        assert_eq!(
            l.pack(&[1, 2], &[1, 2, 3, 4], &mut out[..33]),
            Err(Error::OutOfSpace { what: "kernel argument block", requested: 34, capacity: 33 })
        );
    }

    #[test]
    fn duplicate_slots_are_refused() {
        let sig = vec![p(0, DType::F32, ParamKind::Buffer), p(0, DType::I32, ParamKind::Value)];
        assert!(matches!(KernargLayout::new(&sig), Err(Error::InvalidArgument { value: 0, .. })));
    }

    #[test]
    fn empty_signature_packs_nothing() {
        let l = KernargLayout::new(&[]).unwrap();
        assert_eq!(l.pack(&[], &[], &mut []).unwrap(), 0);
    }

    /// A program on a fake device: `call_raw` records the addresses it got and returns `stamp`
    /// (or fails after "submitting" when `fail` is set); with `hold`, it reports that it is
    /// inside and waits to be released.
    struct FakeProgram {
        device: *const (),
        footprints: Vec<u64>,
        stamp: Stamp,
        fail: bool,
        got: std::sync::Mutex<Vec<u64>>,
        hold: Option<(std::sync::mpsc::SyncSender<()>, std::sync::Mutex<std::sync::mpsc::Receiver<()>>)>,
    }

    // SAFETY: `device` is only compared, never dereferenced.
    unsafe impl Send for FakeProgram {}
    // SAFETY: as above; the rest is Sync.
    unsafe impl Sync for FakeProgram {}

    impl Program for FakeProgram {
        fn name(&self) -> &str {
            "fake"
        }
        fn is_on(&self, device: &dyn Device) -> bool {
            core::ptr::addr_eq(device as *const dyn Device, self.device)
        }
        fn buffer_footprints(&self) -> &[u64] {
            &self.footprints
        }
        unsafe fn call_raw(&self, bufs: &[u64], _: &[i64], _: [u32; 3], _: [u32; 3], _: bool) -> Result<LaunchReport> {
            self.got.lock().unwrap().extend_from_slice(bufs);
            if let Some((entered, go)) = &self.hold {
                entered.send(()).unwrap();
                go.lock().unwrap().recv().unwrap();
            }
            if self.fail {
                return Err(Error::Timeout {
                    device: crate::error::device_name("FAKE"),
                    awaited: 1,
                    last: 0,
                    timeout_ms: 1,
                });
            }
            Ok(LaunchReport { stamp: Some(self.stamp), time_us: None })
        }
    }

    fn fake_program(dev: &Arc<crate::device::tests::FakeDevice>, stamp: u64) -> FakeProgram {
        FakeProgram {
            device: Arc::as_ptr(dev).cast(),
            footprints: vec![8],
            stamp: Stamp::new(stamp),
            fail: false,
            got: std::sync::Mutex::new(Vec::new()),
            hold: None,
        }
    }

    #[test]
    fn call_passes_buffer_addresses_and_marks_the_buffers_with_the_launch() {
        use crate::device::tests::FakeDevice;
        let dev = FakeDevice::new("FAKE", 1 << 16);
        let other = FakeDevice::new("FAKE:1", 1 << 16);
        let d: Arc<dyn Device> = dev.clone();
        let a = Buffer::new(d.clone(), 16, DType::U8, Default::default()).unwrap();
        let b = Buffer::new(d, 64, DType::U8, Default::default()).unwrap();
        let v = b.view(8, DType::U8, 8).unwrap();
        let prog = FakeProgram { footprints: vec![16, 8], ..fake_program(&dev, 7) };
        prog.call(&[&a, &v], &[], [1; 3], [1; 3], false).unwrap();
        assert_eq!(*prog.got.lock().unwrap(), vec![a.device_addr().unwrap(), b.device_addr().unwrap() + 8]);
        assert_eq!((a.last_write(), b.last_write()), (Stamp::new(7), Stamp::new(7)), "a view marks its base");
        // a buffer of another device is refused before anything is allocated or launched
        let theirs = Buffer::new(other, 16, DType::U8, Default::default()).unwrap();
        let e = prog.call(&[&a, &theirs], &[], [1; 3], [1; 3], false).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { value: 1, .. }), "{e:?}");
        assert!(!theirs.is_allocated());
        assert_eq!(prog.got.lock().unwrap().len(), 2);
        let e = prog.call(&[&a; MAX_CALL_BUFFERS + 1], &[], [1; 3], [1; 3], false).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }));
    }

    #[test]
    fn a_buffer_smaller_than_its_parameter_or_a_wrong_count_is_refused_before_the_launch() {
        use crate::device::tests::FakeDevice;
        let dev = FakeDevice::new("FAKE", 1 << 16);
        let d: Arc<dyn Device> = dev.clone();
        let small = Buffer::new(d.clone(), 4, DType::U8, Default::default()).unwrap();
        let big = Buffer::new(d, 4096, DType::U8, Default::default()).unwrap();
        // a kernel declared `[4096]` bytes for its second buffer
        let prog = FakeProgram { footprints: vec![4, 4096], ..fake_program(&dev, 7) };
        let e = prog.call(&[&small, &small], &[], [1; 3], [1; 3], false).unwrap_err();
        assert!(
            matches!(e.root(), Error::OutOfBounds { len: 4096, limit: 4, .. }),
            "the second buffer is 4 bytes for a 4096-byte parameter: {e}"
        );
        assert!(alloc::format!("{e}").contains("program fake: buffer argument 1"), "{e}");
        assert!(prog.got.lock().unwrap().is_empty(), "nothing launched");
        assert!(!small.is_allocated(), "nothing allocated");
        let e = prog.call(&[&big], &[], [1; 3], [1; 3], false).unwrap_err();
        assert!(matches!(e, Error::Mismatch { expected: 2, found: 1, .. }), "{e:?}");
        prog.call(&[&small, &big], &[], [1; 3], [1; 3], false).unwrap();
        assert_eq!(prog.got.lock().unwrap().len(), 2);
    }

    #[test]
    fn footprints_are_the_shapes_of_the_buffer_parameters_in_slot_order() {
        let sig = vec![
            Param { shape: vec![4, 8], ..p(2, DType::F32, ParamKind::Buffer) },
            p(0, DType::I32, ParamKind::Value),
            Param { shape: vec![3], ..p(1, DType::I16, ParamKind::Buffer) },
        ];
        assert_eq!(buffer_footprints(&sig).unwrap(), [6, 128]);
        let e = buffer_footprints(&[p(5, DType::F32, ParamKind::Buffer)]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { value: 5, .. }), "a buffer without a shape: {e:?}");
        assert!(
            buffer_footprints(&[Param { shape: vec![u64::MAX, 2], ..p(0, DType::F32, ParamKind::Buffer) }]).is_err()
        );
    }

    #[test]
    fn a_host_copy_never_runs_between_a_launch_taking_an_address_and_marking_it() {
        use crate::device::tests::FakeDevice;
        use core::sync::atomic::Ordering;
        let dev = FakeDevice::new("FAKE", 1 << 16);
        let d: Arc<dyn Device> = dev.clone();
        let a = Buffer::new(d, 16, DType::U8, Default::default()).unwrap();
        a.allocate().unwrap();
        let (entered_tx, entered) = std::sync::mpsc::sync_channel(1);
        let (go, go_rx) = std::sync::mpsc::sync_channel(1);
        let prog = FakeProgram { hold: Some((entered_tx, std::sync::Mutex::new(go_rx))), ..fake_program(&dev, 3) };
        std::thread::scope(|s| {
            let launch = s.spawn(|| prog.call(&[&a], &[], [1; 3], [1; 3], false));
            entered.recv().unwrap();
            // the launch is inside `call_raw`: its stamp is not marked yet
            let copy = s.spawn(|| {
                let mut out = [0u8; 16];
                a.copy_out(&mut out)
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!copy.is_finished(), "the copy ran while a launch held the buffer's address");
            go.send(()).unwrap();
            launch.join().unwrap().unwrap();
            copy.join().unwrap().unwrap();
        });
        // the copy saw stamp 3 and waited for it (a device without a timeline synchronizes)
        assert_eq!(dev.syncs.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn without_a_timeline_a_failed_launch_leaves_no_stamp() {
        // (on a device with a timeline it marks everything submitted: sim/device tests/lifetime.rs)
        use crate::device::tests::FakeDevice;
        let dev = FakeDevice::new("FAKE", 1 << 16);
        let d: Arc<dyn Device> = dev.clone();
        let a = Buffer::new(d, 16, DType::U8, Default::default()).unwrap();
        let prog = FakeProgram { fail: true, ..fake_program(&dev, 3) };
        assert!(matches!(prog.call(&[&a], &[], [1; 3], [1; 3], true), Err(Error::Timeout { .. })));
        assert!(a.last_write().is_zero());
    }
}
