//! The event table the GPU's owner polls or waits on: what a KFD layer answers
//! `AMDKFD_IOC_WAIT_EVENTS` from.
//!
//! Three kinds, as KFD has them (`kfd_ioctl.h`: `KFD_IOC_EVENT_SIGNAL`, `KFD_IOC_EVENT_MEMORY`,
//! `KFD_IOC_EVENT_HW_EXCEPTION`):
//!
//! - **signal events**, by id: an interrupt from a queue (`RELEASE_MEM` with an interrupt
//!   `INT_SEL`, its `INT_CTXID` the id; an SDMA `TRAP`, its 28-bit `INT_CONTEXT` the id) sets
//!   the id's event. tinygrad writes its queue event's id to the event mailbox and interrupts
//!   with the same id as context; an interrupt with id 0 (tinygrad's timestamp sends one) is
//!   recorded under 0, which KFD resolves by scanning every event's slot.
//! - **memory exceptions**: a queue that faults on an address (a packet's access, an IB fetch, a
//!   shader's load or store, an SDMA copy) records the faulting VA, as KFD's
//!   `kfd_hsa_memory_exception_data` carries it.
//! - **hardware exceptions**: a queue stopped for any other reason (a bad packet, a shader that
//!   hangs or traps, a wait that timed out) records its report, as a `kfd_hsa_hw_exception_data`
//!   (`KFD_HW_EXCEPTION_GPU_HANG`) would announce.
//!
//! Every change wakes [`Events::wait`]. Nothing here allocates once the table has met its
//! signal events (a call's interrupt, reset, wait and pump reuse the table's storage).

use crate::fault::QueueFault;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A queue's access fault, as KFD's memory-exception event reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryException {
    /// The faulting virtual address.
    pub va: u64,
    /// A write (else a read or fetch).
    pub write: bool,
    /// The queue's full report.
    pub fault: QueueFault,
}

/// A queue stopped by anything but an access fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwException {
    /// The queue's full report.
    pub fault: QueueFault,
}

/// What the table holds now.
#[derive(Clone, Debug, Default)]
pub struct EventState {
    /// Signal events set and not yet reset: (id, interrupts received since the last reset), in id
    /// order (a vector that keeps its capacity, so an interrupt after a reset allocates nothing).
    pub signaled: Vec<(u32, u64)>,
    /// Interrupts received in all (never reset).
    pub interrupts: u64,
    /// Memory exceptions, oldest first.
    pub memory: Vec<MemoryException>,
    /// Hardware exceptions, oldest first.
    pub hw: Vec<HwException>,
    /// Bumped on every change.
    pub seq: u64,
}

impl EventState {
    /// How many interrupts signal event `id` received since its last reset (`None`: not set).
    pub fn signaled_count(&self, id: u32) -> Option<u64> {
        self.signaled.binary_search_by_key(&id, |&(i, _)| i).ok().map(|k| self.signaled[k].1)
    }

    fn remove(&mut self, id: u32) -> bool {
        match self.signaled.binary_search_by_key(&id, |&(i, _)| i) {
            Ok(k) => {
                self.signaled.remove(k);
                true
            }
            Err(_) => false,
        }
    }
}

/// The table: a mutex over an [`EventState`] and a condition variable for waiters.
#[derive(Debug, Default)]
pub struct Events {
    state: Mutex<EventState>,
    cv: Condvar,
}

impl Events {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, EventState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn change<R>(&self, f: impl FnOnce(&mut EventState) -> R) -> R {
        let mut g = self.lock();
        let r = f(&mut g);
        g.seq += 1;
        drop(g);
        self.cv.notify_all();
        r
    }

    /// An interrupt with context `id`: sets signal event `id`.
    pub fn interrupt(&self, id: u32) {
        self.change(|s| {
            match s.signaled.binary_search_by_key(&id, |&(i, _)| i) {
                Ok(k) => s.signaled[k].1 += 1,
                Err(k) => s.signaled.insert(k, (id, 1)),
            }
            s.interrupts += 1;
        });
    }

    /// Record a memory exception.
    pub fn memory_exception(&self, e: MemoryException) {
        self.change(|s| s.memory.push(e));
    }

    /// Record a hardware exception.
    pub fn hw_exception(&self, e: HwException) {
        self.change(|s| s.hw.push(e));
    }

    /// Whether signal event `id` is set.
    pub fn is_signaled(&self, id: u32) -> bool {
        self.lock().signaled_count(id).is_some()
    }

    /// Reset signal event `id`; returns whether it was set (KFD resets auto-reset events a wait
    /// returns).
    pub fn reset(&self, id: u32) -> bool {
        self.change(|s| s.remove(id))
    }

    /// The memory exceptions recorded so far.
    pub fn memory_exceptions(&self) -> Vec<MemoryException> {
        self.lock().memory.clone()
    }

    /// The hardware exceptions recorded so far.
    pub fn hw_exceptions(&self) -> Vec<HwException> {
        self.lock().hw.clone()
    }

    /// The table's change count ([`EventState::seq`]), without copying the table.
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// Run `f` on the table under its lock as one change (the count bumped, waiters woken).
    pub fn update<R>(&self, f: impl FnOnce(&mut EventState) -> R) -> R {
        self.change(f)
    }

    /// The report of the first queue fault recorded (a memory exception's, else a hardware
    /// exception's), if any; formats nothing when there is none.
    pub fn first_fault(&self) -> Option<String> {
        let s = self.lock();
        s.memory.first().map(|m| m.fault.to_string()).or_else(|| s.hw.first().map(|h| h.fault.to_string()))
    }

    /// A copy of the whole table.
    pub fn snapshot(&self) -> EventState {
        self.lock().clone()
    }

    /// Block until `ready` holds for the table or `timeout` passes; returns whether it holds.
    /// `ready` runs under the table's lock, first at once and then after every change.
    pub fn wait(&self, timeout: Duration, mut ready: impl FnMut(&EventState) -> bool) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut g = self.lock();
        loop {
            if ready(&g) {
                return true;
            }
            let left = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => l,
                    _ => return false,
                },
                None => Duration::from_secs(3600),
            };
            g = match self.cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Block until one of signal events `ids` is set (returns it), or an exception is recorded,
    /// or `timeout` passes (`None` for both of the last two).
    pub fn wait_any(&self, ids: &[u32], timeout: Duration) -> Option<u32> {
        let mut hit = None;
        self.wait(timeout, |s| {
            hit = ids.iter().copied().find(|&i| s.signaled_count(i).is_some());
            hit.is_some() || !s.memory.is_empty() || !s.hw.is_empty()
        });
        hit
    }
}
