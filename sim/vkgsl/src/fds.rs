//! Which descriptors are devices: a table the C boundary ([`crate::interpose`]) consults on
//! every `close`, `ioctl`, `dup`... of any descriptor of the process.
//!
//! Most of those calls are on other files, and some come where no lock may be taken: `close`
//! is async-signal-safe, and a child made with `fork` while another thread held a lock would
//! wait for it forever (a `vfork` child, as CPython's `subprocess` makes, runs in its parent's
//! memory, where other threads may hold it). So "is this descriptor a device of this process"
//! is answered without a lock: one atomic word per descriptor number below [`FAST_FDS`], holding
//! the id of the process that opened the device there (0: none). Only calls on a device's own
//! descriptor (and, while a device sits at a number at or above `FAST_FDS`, calls on such
//! numbers) take the table's lock. A `fork` child, whose process id differs, never does; and
//! the lock is taken around `fork` itself ([`before_fork`], [`after_fork`]) so that a child
//! that opens a device of its own finds it free.
//!
//! A device keeps descriptors of its own (its duplicate of the memfd, [`crate::memfd`]), which
//! on a real system would not exist: those numbers are marked ([`mark_internal`]) so that the
//! client's `close` of them fails with `EBADF` as of a number nothing is open at, its
//! `close_range`/`closefrom` pass over them, and its `dup2` onto one is `EBUSY`.
//!
//! Each entry remembers the file behind its descriptor (`st_dev`, `st_ino` of the memfd): a
//! descriptor closed behind libc's back (a raw `close` system call, a `dup2` done with
//! `syscall`) and reused by another file is told apart by [`Entry::file`], and the caller
//! drops it ([`remove_if`]).

use crate::interpose::Node;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Descriptor numbers with a lock-free slot.
pub const FAST_FDS: usize = 1 << 16;
/// Marks a slot as one of a device's own descriptors (`pid | INTERNAL`; see [`mark_internal`]).
const INTERNAL: u32 = 1 << 31;

/// Per descriptor number, the process that has a device there (0: none). Written only under
/// [`TABLE`]'s lock.
static OWNER: [AtomicU32; FAST_FDS] = [const { AtomicU32::new(0) }; FAST_FDS];
/// Devices at numbers `>= FAST_FDS` (calls on such numbers look in the table while non-zero).
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// The devices.
static TABLE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// A file's identity: `(st_dev, st_ino)`.
pub type FileId = (u64, u64);

/// One descriptor of a device.
#[derive(Clone)]
pub struct Entry {
    /// The descriptor.
    pub fd: i32,
    /// The process that opened the device (a `fork` child's calls pass through to libc).
    pub pid: u32,
    /// The file behind the descriptor when the entry was made.
    pub file: FileId,
    /// The device.
    pub node: Arc<dyn Node>,
}

fn table() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while the lock was held left the table consistent (each change is one Vec
    // operation and one store): keep using it.
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

fn pid() -> u32 {
    // CAST: process ids are positive and below 2^22.
    std::process::id()
}

fn slot(fd: i32) -> Option<&'static AtomicU32> {
    usize::try_from(fd).ok().and_then(|i| OWNER.get(i))
}

/// Whether `fd` may be a device of this process, without taking a lock (and, for an ordinary
/// descriptor, without a system call): false means certainly not.
pub fn maybe_ours(fd: i32) -> bool {
    match slot(fd) {
        Some(s) => {
            let owner = s.load(Ordering::Acquire);
            owner != 0 && owner == pid()
        }
        None => fd >= 0 && HIGH.load(Ordering::Acquire) != 0,
    }
}

/// Whether any number in `first..=last` may be a device of this process (lock-free, as
/// [`maybe_ours`]).
pub fn any_in(first: u32, last: u32) -> bool {
    if first > last {
        return false;
    }
    let me = pid();
    let top = (last as usize).min(FAST_FDS - 1);
    let low = (first as usize).min(FAST_FDS);
    if OWNER.get(low..=top).is_some_and(|s| s.iter().any(|o| o.load(Ordering::Acquire) == me)) {
        return true;
    }
    last as usize >= FAST_FDS && HIGH.load(Ordering::Acquire) != 0
}

/// Whether `fd` is one of this process's devices' own descriptors (lock-free).
pub fn is_internal(fd: i32) -> bool {
    slot(fd).is_some_and(|s| {
        let owner = s.load(Ordering::Acquire);
        owner & INTERNAL != 0 && owner == pid() | INTERNAL
    })
}

/// This process's devices' own descriptors in `first..=last`, ascending (lock-free).
pub fn internal_in(first: u32, last: u32) -> Vec<u32> {
    if first > last || first as usize >= FAST_FDS {
        return Vec::new();
    }
    let me = pid() | INTERNAL;
    let top = (last as usize).min(FAST_FDS - 1);
    // CAST: indices below FAST_FDS = 2^16.
    (first as usize..=top).filter(|&i| OWNER[i].load(Ordering::Acquire) == me).map(|i| i as u32).collect()
}

/// Mark `fd` as a device's own descriptor (`on`), or no longer (before the device closes it).
/// Numbers at or above [`FAST_FDS`] are not marked.
pub fn mark_internal(fd: i32, on: bool) {
    if let Some(s) = slot(fd) {
        let _devs = table();
        s.store(if on { pid() | INTERNAL } else { 0 }, Ordering::Release);
    }
}

fn set_owner(fd: i32, owner: u32) {
    match slot(fd) {
        Some(s) => s.store(owner, Ordering::Release),
        None if owner != 0 => {
            HIGH.fetch_add(1, Ordering::AcqRel);
        }
        None => {
            HIGH.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn take(devs: &mut Vec<Entry>, i: usize) -> Entry {
    let e = devs.swap_remove(i);
    set_owner(e.fd, 0);
    e
}

/// Record a device at `fd` for this process; an entry already there (a descriptor closed
/// behind libc's back whose number the new device reuses) is returned, for the caller to drop
/// outside the lock.
pub fn insert(fd: i32, file: FileId, node: Arc<dyn Node>) -> Option<Entry> {
    let me = pid();
    let mut devs = table();
    let old = devs.iter().position(|e| e.fd == fd && e.pid == me).map(|i| take(&mut devs, i));
    devs.push(Entry { fd, pid: me, file, node });
    set_owner(fd, me);
    old
}

/// This process's entry for `fd`.
pub fn get(fd: i32) -> Option<Entry> {
    let me = pid();
    table().iter().find(|e| e.fd == fd && e.pid == me).cloned()
}

/// Remove this process's entry for `fd` (the caller drops it outside the lock).
pub fn remove(fd: i32) -> Option<Entry> {
    remove_if(fd, |_| true)
}

/// Remove this process's entry for `fd` if `cond` holds for it.
pub fn remove_if(fd: i32, cond: impl FnOnce(&Entry) -> bool) -> Option<Entry> {
    let me = pid();
    let mut devs = table();
    let i = devs.iter().position(|e| e.fd == fd && e.pid == me)?;
    if !cond(&devs[i]) {
        return None;
    }
    Some(take(&mut devs, i))
}

/// Remove this process's entries for descriptors `first..=last`.
pub fn remove_range(first: u32, last: u32) -> Vec<Entry> {
    let me = pid();
    let mut devs = table();
    let mut out = Vec::new();
    let mut i = 0;
    while i < devs.len() {
        let e = &devs[i];
        if e.pid == me && u32::try_from(e.fd).is_ok_and(|f| (first..=last).contains(&f)) {
            out.push(take(&mut devs, i));
        } else {
            i += 1;
        }
    }
    out
}

/// `new` now refers to what `old` does (a `dup`): when `old` is a device of this process and
/// `new` is the same file (`new_file`, its identity now), `new` reaches the same device, as a
/// duplicate of a driver's descriptor does. Returns the entry `new` had before, if any, for
/// the caller to drop outside the lock.
pub fn duplicate(old: i32, new: i32, new_file: Option<FileId>) -> Option<Entry> {
    let me = pid();
    let mut devs = table();
    let replaced = devs.iter().position(|e| e.fd == new && e.pid == me).map(|i| take(&mut devs, i));
    if let Some(src) = devs.iter().find(|e| e.fd == old && e.pid == me)
        && new_file == Some(src.file)
    {
        let e = Entry { fd: new, pid: me, file: src.file, node: src.node.clone() };
        devs.push(e);
        set_owner(new, me);
    }
    replaced
}

thread_local! {
    /// The table's lock, held by the forking thread from [`before_fork`] to [`after_fork`].
    static HELD: RefCell<Option<MutexGuard<'static, Vec<Entry>>>> = const { RefCell::new(None) };
}

/// `pthread_atfork`'s prepare handler: take the table's lock so that no other thread holds
/// it when the process is copied.
pub fn before_fork() {
    let g = table();
    HELD.with(|h| *h.borrow_mut() = Some(g));
}

/// `pthread_atfork`'s parent and child handlers: release the lock [`before_fork`] took (in the
/// child, its copy: the child's only thread is the one that took it).
pub fn after_fork() {
    let g = HELD.with(|h| h.borrow_mut().take());
    drop(g);
}
