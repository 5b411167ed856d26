//! Mock MMIO: a memory-backed [`MmioBus`] for host tests of register code and the HCQ engine.
//!
//! [`MockMmio`] holds `size` bytes of zeroed "register space" and is meant to be shared (through
//! an [`Arc`]) between the host code under test and a simulated device thread:
//!
//! - **Host side**: the [`MmioBus`] impl. Accesses are bounds- and alignment-checked exactly
//!   like [`hcq::mmio::VolatileRegion`], go through per-register hooks ([`MockMmio::on_read`],
//!   [`MockMmio::on_write`]; a doorbell is an `on_write` hook), through fault injection
//!   ([`MockMmio::freeze`], [`MockMmio::drop_writes`], [`MockMmio::fail_after`]), and into an
//!   optional bounded access log ([`MockMmio::set_logging`], [`MockMmio::take_log`]).
//! - **Device side**: [`MockMmio::device_read`] / [`MockMmio::device_write`] (or the
//!   [`DevicePort`] bus from [`MockMmio::device`]) change registers the way hardware would:
//!   no hooks, no log, no lost writes, no injected failures. Only a frozen register also ignores
//!   device writes, since a frozen register "stops changing" whoever writes it.
//!
//! Storage is one `AtomicU64` per 8 bytes, little-endian, so an 8-, 16-, 32- or 64-bit access
//! at any aligned offset sees the bytes that wider or narrower accesses wrote. A 64-bit access
//! is a single atomic load or store (never torn); a narrower write is an atomic
//! read-modify-write of its word, so concurrent narrow writes to neighbouring bytes never lose
//! each other.
//!
//! Limits, stated honestly:
//! - Hooks, lost-write faults and write waits match the **exact byte offset** of an access, not
//!   any access that overlaps the register: a hook on `0x14` does not see a 64-bit write at
//!   `0x10`. Registers are normally accessed at one width and offset, so this is what tests
//!   want; freezing is the exception and works per byte (see [`MockMmio::freeze`]).
//! - Each host access takes one internal mutex (twice when a hook runs, since hooks run
//!   outside it). That is fine for tests and simulation, not a model of bus timing. Device-side
//!   accesses are lock-free.
//! - An `on_write` hook runs **before** the write is stored, so code woken by a hook must take
//!   the value from the hook, not read it back. [`MockMmio::wait_for_write`] wakes only after
//!   the store.
//! - Host accesses allocate nothing in steady state; the first write to an offset allocates a
//!   slot in the write-tracking table, and the log allocates its ring when logging is enabled.

use hcq::error::device_name;
use hcq::mmio::{MmioBus, Width, check_range};
use hcq::{Error, Result};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Default number of entries the access log keeps before dropping the oldest.
pub const DEFAULT_LOG_CAPACITY: usize = 4096;

/// Device name used in errors from an injected bus failure ([`MockMmio::fail_after`]).
pub const DEVICE_NAME: &str = "MOCK_MMIO";

/// Whether a logged access was a read or a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// The host read a register.
    Read,
    /// The host wrote a register.
    Write,
}

/// One host access, as recorded in the access log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// Read or write.
    pub kind: AccessKind,
    /// Byte offset on the bus.
    pub offset: usize,
    /// Access width.
    pub width: Width,
    /// For a read, the value returned to the host (after any `on_read` hook); for a write, the
    /// value the host wrote (truncated to the width), whether or not it was stored.
    pub value: u64,
    /// Sequence number of the access among all successful host accesses of this bus, counted
    /// whether or not logging was on; consecutive numbers mean nothing happened in between.
    pub seq: u64,
}

/// What an `on_write` hook does with the value the host wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteAction {
    /// Store this value (truncated to the access width) in the register.
    Store(u64),
    /// Discard the write: the register keeps its value and write waiters are not woken.
    Drop,
}

/// A host write that reached a register, as reported by [`MockMmio::wait_for_write_after`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriteEvent {
    /// How many host writes have reached this offset so far (1 for the first).
    pub count: u64,
    /// The value the latest of them stored (after any `on_write` hook).
    pub value: u64,
}

type ReadHook = Arc<dyn Fn(u64) -> u64 + Send + Sync>;
type WriteHook = Arc<dyn Fn(u64) -> WriteAction + Send + Sync>;

/// Everything a host access consults besides the storage itself.
struct State {
    read_hooks: HashMap<usize, ReadHook>,
    write_hooks: HashMap<usize, WriteHook>,
    /// Offset -> host writes still to lose (`None` = all).
    lost_writes: HashMap<usize, Option<u32>>,
    /// Host accesses still allowed before the bus fails (`None` = never fails).
    fail_after: Option<u64>,
    /// Offset -> writes delivered so far and the last value stored.
    delivered: HashMap<usize, WriteEvent>,
    /// Threads blocked in a write wait (notify only when someone listens).
    waiters: usize,
    dropped_writes: u64,
    frozen_writes: u64,
    seq: u64,
    logging: bool,
    log: VecDeque<Access>,
    log_capacity: usize,
    log_dropped: u64,
}

impl State {
    /// Count one host access against an armed `fail_after`; an error once it is used up.
    fn admit(&mut self) -> Result<()> {
        match self.fail_after {
            Some(0) => Err(Error::DeviceHung { device: device_name(DEVICE_NAME) }),
            Some(ref mut n) => {
                *n -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// True (and one less pending loss) when a lost-write fault swallows this write.
    fn lose_write(&mut self, offset: usize) -> bool {
        match self.lost_writes.get_mut(&offset) {
            None => return false,
            Some(None) => {}
            Some(Some(n)) => {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.lost_writes.remove(&offset);
                }
            }
        }
        self.dropped_writes += 1;
        true
    }

    fn record(&mut self, kind: AccessKind, offset: usize, width: Width, value: u64) {
        let seq = self.seq;
        self.seq += 1;
        if !self.logging {
            return;
        }
        if self.log.len() >= self.log_capacity {
            self.log.pop_front();
            self.log_dropped += 1;
        }
        self.log.push_back(Access { kind, offset, width, value, seq });
    }
}

/// Memory-backed mock MMIO; see the [module docs](self).
pub struct MockMmio {
    size: usize,
    /// The register bytes, little-endian, 8 per word.
    words: Box<[AtomicU64]>,
    /// Per word, the bytes that are frozen (0xff per frozen byte).
    frozen: Box<[AtomicU64]>,
    state: Mutex<State>,
    written: Condvar,
}

impl fmt::Debug for MockMmio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("MockMmio")
            .field("size", &self.size)
            .field("read_hooks", &st.read_hooks.len())
            .field("write_hooks", &st.write_hooks.len())
            .field("logging", &st.logging)
            .field("log_len", &st.log.len())
            .field("dropped_writes", &st.dropped_writes)
            .finish_non_exhaustive()
    }
}

fn zeroed_words(n: usize) -> Result<Box<[AtomicU64]>> {
    let mut v: Vec<AtomicU64> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::OutOfSpace {
        what: "mock mmio backing store",
        requested: (n as u64).saturating_mul(8),
        capacity: 0,
    })?;
    v.resize_with(n, || AtomicU64::new(0));
    Ok(v.into_boxed_slice())
}

/// Bounds and alignment check, the same rules (and error values) as `VolatileRegion`.
#[inline]
fn check_access(offset: usize, width: Width, size: usize) -> Result<()> {
    check_range("mmio access", offset, width.bytes(), size)?;
    if !offset.is_multiple_of(width.bytes()) {
        return Err(Error::Misaligned { what: "mmio access", value: offset as u64, align: width.bytes() as u64 });
    }
    Ok(())
}

/// Mask of the bytes `[offset, offset + width)` inside their 8-byte word.
#[inline]
fn lane_mask(offset: usize, width: Width) -> u64 {
    width.mask() << ((offset % 8) * 8)
}

impl MockMmio {
    /// `size` bytes of zeroed register space, shareable between the host and a device thread.
    ///
    /// Logging starts off, with room for [`DEFAULT_LOG_CAPACITY`] entries once enabled.
    /// [`Error::OutOfSpace`] when the backing store cannot be allocated.
    pub fn new(size: usize) -> Result<Arc<Self>> {
        let n = size.div_ceil(8);
        Ok(Arc::new(Self {
            size,
            words: zeroed_words(n)?,
            frozen: zeroed_words(n)?,
            state: Mutex::new(State {
                read_hooks: HashMap::new(),
                write_hooks: HashMap::new(),
                lost_writes: HashMap::new(),
                fail_after: None,
                delivered: HashMap::new(),
                waiters: 0,
                dropped_writes: 0,
                frozen_writes: 0,
                seq: 0,
                logging: false,
                log: VecDeque::new(),
                log_capacity: DEFAULT_LOG_CAPACITY,
                log_dropped: 0,
            }),
            written: Condvar::new(),
        }))
    }

    /// Hooks run outside the lock, so a panicking hook cannot poison it; a panic elsewhere
    /// leaves `State` consistent (every update is a single assignment), so recover the guard.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn word(&self, offset: usize) -> Result<(&AtomicU64, &AtomicU64)> {
        let i = offset / 8;
        match (self.words.get(i), self.frozen.get(i)) {
            (Some(w), Some(f)) => Ok((w, f)),
            _ => {
                Err(Error::OutOfBounds { what: "mmio access", offset: offset as u64, len: 8, limit: self.size as u64 })
            }
        }
    }

    /// Load `width` bits at a checked `offset`.
    #[inline]
    fn load(&self, offset: usize, width: Width) -> Result<u64> {
        let (w, _) = self.word(offset)?;
        Ok((w.load(Ordering::Acquire) >> ((offset % 8) * 8)) & width.mask())
    }

    /// Store `value` at a checked `offset`, leaving frozen bytes alone. Returns the mask of the
    /// bytes written (in the word): 0 when the whole access hit frozen bytes.
    #[inline]
    fn store(&self, offset: usize, width: Width, value: u64) -> Result<u64> {
        let (w, f) = self.word(offset)?;
        let shift = (offset % 8) * 8;
        let mask = lane_mask(offset, width) & !f.load(Ordering::Acquire);
        if mask == 0 {
            return Ok(0);
        }
        let bits = ((value & width.mask()) << shift) & mask;
        if mask == u64::MAX {
            w.store(bits, Ordering::Release);
        } else {
            // One atomic read-modify-write: concurrent writes to other bytes of the word survive.
            let mut old = w.load(Ordering::Relaxed);
            while let Err(now) = w.compare_exchange_weak(old, (old & !mask) | bits, Ordering::AcqRel, Ordering::Relaxed)
            {
                old = now;
            }
        }
        Ok(mask)
    }

    /// Store a host write that got past faults and hooks, then wake write waiters.
    fn deliver(&self, st: &mut State, offset: usize, width: Width, value: u64) -> Result<()> {
        let written = self.store(offset, width, value)?;
        if written != lane_mask(offset, width) {
            st.frozen_writes += 1;
        }
        if written == 0 {
            return Ok(());
        }
        let ev = st.delivered.entry(offset).or_insert(WriteEvent { count: 0, value: 0 });
        ev.count += 1;
        ev.value = value & width.mask();
        if st.waiters > 0 {
            self.written.notify_all();
        }
        Ok(())
    }

    fn check_offset(&self, offset: usize) -> Result<()> {
        check_range("mock mmio register", offset, 1, self.size)
    }

    // ---- device side -------------------------------------------------------------------

    /// Read a register as the device: no hooks, no log, no injected failure.
    pub fn device_read(&self, offset: usize, width: Width) -> Result<u64> {
        check_access(offset, width, self.size)?;
        self.load(offset, width)
    }

    /// Write a register as the device: no hooks, no log, no lost writes, no write waiters
    /// woken. Frozen bytes keep their value (see [`MockMmio::freeze`]).
    pub fn device_write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        check_access(offset, width, self.size)?;
        self.store(offset, width, value).map(|_| ())
    }

    /// The device side as an [`MmioBus`], so simulated hardware can use `hcq::register!`
    /// registers and `MmioView`s without triggering hooks or the log.
    pub fn device(&self) -> DevicePort<'_> {
        DevicePort { mmio: self }
    }

    // ---- hooks -------------------------------------------------------------------------

    /// Run `hook` on every host read at exactly `offset`: it gets the stored value and returns
    /// the value the host sees (truncated to the access width). Replaces an earlier read hook
    /// on that offset. Hooks run outside the bus's lock and may use the bus themselves.
    pub fn on_read(&self, offset: usize, hook: impl Fn(u64) -> u64 + Send + Sync + 'static) -> Result<()> {
        self.check_offset(offset)?;
        self.lock().read_hooks.insert(offset, Arc::new(hook));
        Ok(())
    }

    /// Run `hook` on every host write at exactly `offset` that was not lost to
    /// [`MockMmio::drop_writes`]: it gets the written value (truncated to the width) and says
    /// what to store. It runs before the store; a doorbell hook typically records the value and
    /// notifies a condition variable the device thread waits on. Replaces an earlier write hook.
    pub fn on_write(&self, offset: usize, hook: impl Fn(u64) -> WriteAction + Send + Sync + 'static) -> Result<()> {
        self.check_offset(offset)?;
        self.lock().write_hooks.insert(offset, Arc::new(hook));
        Ok(())
    }

    /// Remove both hooks at `offset`; true when there was one.
    pub fn remove_hooks(&self, offset: usize) -> bool {
        let mut st = self.lock();
        let r = st.read_hooks.remove(&offset).is_some();
        st.write_hooks.remove(&offset).is_some() || r
    }

    // ---- faults ------------------------------------------------------------------------

    /// Freeze the bytes `[offset, offset + width)`: they stop changing. Host and device writes
    /// leave them alone (bytes of the same write outside the frozen range still change); reads
    /// return the value they had when frozen. A host write that touches frozen bytes counts in
    /// [`MockMmio::frozen_writes`] and wakes write waiters only if some of its bytes changed.
    pub fn freeze(&self, offset: usize, width: Width) -> Result<()> {
        check_access(offset, width, self.size)?;
        let (_, f) = self.word(offset)?;
        f.fetch_or(lane_mask(offset, width), Ordering::AcqRel);
        Ok(())
    }

    /// Undo [`MockMmio::freeze`] for the bytes `[offset, offset + width)`.
    pub fn unfreeze(&self, offset: usize, width: Width) -> Result<()> {
        check_access(offset, width, self.size)?;
        let (_, f) = self.word(offset)?;
        f.fetch_and(!lane_mask(offset, width), Ordering::AcqRel);
        Ok(())
    }

    /// Silently lose the next `n` host writes at exactly `offset` (`None`: all of them until
    /// [`MockMmio::clear_faults`]). A lost write reaches no hook, stores nothing and wakes no
    /// waiter, but is logged and counted in [`MockMmio::dropped_writes`]. `Some(0)` cancels a
    /// pending loss at `offset`.
    pub fn drop_writes(&self, offset: usize, n: Option<u32>) -> Result<()> {
        self.check_offset(offset)?;
        let mut st = self.lock();
        match n {
            Some(0) => {
                st.lost_writes.remove(&offset);
            }
            n => {
                st.lost_writes.insert(offset, n);
            }
        }
        Ok(())
    }

    /// Let `n` more host accesses succeed, then fail every host access with
    /// [`Error::DeviceHung`] (a bus that stopped answering) until [`MockMmio::clear_faults`].
    /// Failed accesses touch nothing and are not logged. Device-side access keeps working.
    pub fn fail_after(&self, n: u64) {
        self.lock().fail_after = Some(n);
    }

    /// Remove every injected fault: frozen bytes, pending lost writes, `fail_after`. Hooks,
    /// the log and the counters stay.
    pub fn clear_faults(&self) {
        let mut st = self.lock();
        st.lost_writes.clear();
        st.fail_after = None;
        for f in self.frozen.iter() {
            f.store(0, Ordering::Release);
        }
    }

    /// Host writes lost to [`MockMmio::drop_writes`] so far.
    pub fn dropped_writes(&self) -> u64 {
        self.lock().dropped_writes
    }

    /// Host writes that touched frozen bytes so far (wholly or partly ignored).
    pub fn frozen_writes(&self) -> u64 {
        self.lock().frozen_writes
    }

    // ---- access log --------------------------------------------------------------------

    /// Turn the access log on or off. Turning it on reserves the ring up front, so logging
    /// allocates nothing per access.
    pub fn set_logging(&self, on: bool) {
        let mut st = self.lock();
        st.logging = on;
        if on {
            let want = st.log_capacity.saturating_sub(st.log.len());
            st.log.reserve(want);
        }
    }

    /// Keep at most `n` log entries (dropping the oldest beyond that); `n` must be at least 1.
    pub fn set_log_capacity(&self, n: usize) -> Result<()> {
        if n == 0 {
            return Err(Error::InvalidArgument { what: "mock mmio log capacity must be at least 1", value: 0 });
        }
        let mut st = self.lock();
        st.log_capacity = n;
        while st.log.len() > n {
            st.log.pop_front();
            st.log_dropped += 1;
        }
        if st.logging {
            let want = n.saturating_sub(st.log.len());
            st.log.reserve(want);
        }
        Ok(())
    }

    /// Take the logged accesses, oldest first, leaving the log empty.
    pub fn take_log(&self) -> Vec<Access> {
        self.lock().log.drain(..).collect()
    }

    /// Entries currently in the log.
    pub fn log_len(&self) -> usize {
        self.lock().log.len()
    }

    /// Entries dropped so far because the log was full.
    pub fn log_dropped(&self) -> u64 {
        self.lock().log_dropped
    }

    // ---- write waits -------------------------------------------------------------------

    /// Host writes that have reached `offset` so far (see [`WriteEvent::count`]); pass it to
    /// [`MockMmio::wait_for_write_after`] to wait without missing a write.
    pub fn write_count(&self, offset: usize) -> u64 {
        self.lock().delivered.get(&offset).map_or(0, |e| e.count)
    }

    /// Block until the host write count at exactly `offset` differs from `seen`, or `timeout`
    /// passes (`None`). Writes that arrived since `seen` are not missed, whenever they came;
    /// several of them report once, with the latest value. Only writes that reached the
    /// register count: not lost ones, not ones a hook dropped, not wholly frozen ones.
    pub fn wait_for_write_after(&self, offset: usize, seen: u64, timeout: Duration) -> Option<WriteEvent> {
        let deadline = Instant::now().checked_add(timeout);
        let mut st = self.lock();
        st.waiters += 1;
        let out = loop {
            if let Some(ev) = st.delivered.get(&offset).copied().filter(|e| e.count != seen) {
                break Some(ev);
            }
            match deadline {
                None => st = self.written.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break None;
                    }
                    st = self.written.wait_timeout(st, left).unwrap_or_else(PoisonError::into_inner).0;
                }
            }
        };
        st.waiters -= 1;
        out
    }

    /// Block until the host writes `offset` after this call, or `timeout` passes; the stored
    /// value, or `None` on timeout. See [`MockMmio::wait_for_write_after`] for the race-free
    /// form and which writes count.
    pub fn wait_for_write(&self, offset: usize, timeout: Duration) -> Option<u64> {
        let seen = self.write_count(offset);
        self.wait_for_write_after(offset, seen, timeout).map(|e| e.value)
    }
}

impl MmioBus for MockMmio {
    #[inline]
    fn size(&self) -> usize {
        self.size
    }

    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        check_access(offset, width, self.size)?;
        let hook = {
            let mut st = self.lock();
            st.admit()?;
            match st.read_hooks.get(&offset) {
                Some(h) => Arc::clone(h),
                None => {
                    let v = self.load(offset, width)?;
                    st.record(AccessKind::Read, offset, width, v);
                    return Ok(v);
                }
            }
        };
        let v = hook(self.load(offset, width)?) & width.mask();
        self.lock().record(AccessKind::Read, offset, width, v);
        Ok(v)
    }

    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        check_access(offset, width, self.size)?;
        let value = value & width.mask();
        let hook = {
            let mut st = self.lock();
            st.admit()?;
            if st.lose_write(offset) {
                st.record(AccessKind::Write, offset, width, value);
                return Ok(());
            }
            match st.write_hooks.get(&offset) {
                Some(h) => Arc::clone(h),
                None => {
                    self.deliver(&mut st, offset, width, value)?;
                    st.record(AccessKind::Write, offset, width, value);
                    return Ok(());
                }
            }
        };
        let action = hook(value);
        let mut st = self.lock();
        if let WriteAction::Store(v) = action {
            self.deliver(&mut st, offset, width, v)?;
        }
        st.record(AccessKind::Write, offset, width, value);
        Ok(())
    }
}

/// The device side of a [`MockMmio`] as an [`MmioBus`]: reads and writes go to
/// [`MockMmio::device_read`] / [`MockMmio::device_write`].
#[derive(Clone, Copy, Debug)]
pub struct DevicePort<'a> {
    mmio: &'a MockMmio,
}

impl MmioBus for DevicePort<'_> {
    #[inline]
    fn size(&self) -> usize {
        self.mmio.size
    }
    #[inline]
    fn read(&self, offset: usize, width: Width) -> Result<u64> {
        self.mmio.device_read(offset, width)
    }
    #[inline]
    fn write(&self, offset: usize, width: Width, value: u64) -> Result<()> {
        self.mmio.device_write(offset, width, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_masks_cover_the_accessed_bytes() {
        assert_eq!(lane_mask(0, Width::U64), u64::MAX);
        assert_eq!(lane_mask(4, Width::U32), 0xffff_ffff_0000_0000);
        assert_eq!(lane_mask(10, Width::U16), 0x0000_0000_ffff_0000);
        assert_eq!(lane_mask(7, Width::U8), 0xff00_0000_0000_0000);
    }

    #[test]
    fn narrow_store_keeps_neighbouring_bytes() {
        let m = MockMmio::new(16).unwrap();
        m.store(8, Width::U64, 0x1122_3344_5566_7788).unwrap();
        m.store(10, Width::U16, 0xabcd).unwrap();
        assert_eq!(m.load(8, Width::U64).unwrap(), 0x1122_3344_abcd_7788);
    }

    #[test]
    fn a_size_not_a_multiple_of_eight_still_bounds_at_size() {
        let m = MockMmio::new(6).unwrap();
        assert_eq!(m.words.len(), 1);
        assert!(m.read(4, Width::U16).is_ok());
        assert!(matches!(m.read(4, Width::U32), Err(Error::OutOfBounds { .. })));
        assert!(matches!(m.device_read(0, Width::U64), Err(Error::OutOfBounds { .. })));
    }

    #[test]
    fn fail_after_counts_accesses_then_refuses() {
        let m = MockMmio::new(8).unwrap();
        m.fail_after(2);
        assert!(m.write(0, Width::U32, 5).is_ok());
        assert!(m.read(0, Width::U32).is_ok());
        assert!(matches!(m.read(0, Width::U32), Err(Error::DeviceHung { .. })));
        assert!(matches!(m.write(0, Width::U32, 9), Err(Error::DeviceHung { .. })));
        // the refused write touched nothing; the device side still works
        assert_eq!(m.device_read(0, Width::U32).unwrap(), 5);
        m.clear_faults();
        assert_eq!(m.read(0, Width::U32).unwrap(), 5);
    }

    #[test]
    fn zero_log_capacity_is_refused() {
        let m = MockMmio::new(8).unwrap();
        assert!(matches!(m.set_log_capacity(0), Err(Error::InvalidArgument { .. })));
    }

    #[test]
    fn shrinking_the_log_drops_oldest() {
        let m = MockMmio::new(8).unwrap();
        m.set_logging(true);
        for i in 0..5 {
            m.write(0, Width::U8, i).unwrap();
        }
        m.set_log_capacity(2).unwrap();
        assert_eq!(m.log_dropped(), 3);
        let log = m.take_log();
        assert_eq!(log.iter().map(|a| a.value).collect::<Vec<_>>(), [3, 4]);
    }
}
