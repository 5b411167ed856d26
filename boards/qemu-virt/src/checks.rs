//! On-target checks of the core: the pieces a board relies on, run on the board itself (the
//! host tests prove them on x86-64; these prove them on bare-metal AArch64 with the MMU,
//! caches, exclusives and this heap). Each check states what it proves and returns what broke.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use hcq::allocator::{Allocator, BufferSpec, DeviceMemory, LruAllocator};
use hcq::error::{Error, device_name};
use hcq::memory::{BumpAllocator, RangeAllocator};
use hcq::signal::{SignalPool, WaitHooks, WaitPolicy};
use hcq::soft::HOST_SIGNALS;
use hcq::soft::inline::{Executor, InlineDevice, SoftConfig, SoftContext};

type Check = Result<(), String>;

/// What a result was, for messages (Display only: the image carries no Debug formatting).
fn show<T: core::fmt::Display>(r: &Result<T, Error>) -> String {
    match r {
        Ok(v) => alloc::format!("Ok({v})"),
        Err(e) => alloc::format!("error: {e}"),
    }
}

/// An error as a check's message (one function for every call site, not a formatting closure
/// each).
#[inline(never)]
fn text(e: Error) -> String {
    alloc::format!("{e}")
}

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Check {
    if ok { Ok(()) } else { Err(what()) }
}

/// The heap hands out, keeps and takes back memory, and the high-water mark sees it.
fn heap() -> Check {
    let before = crate::heap::used();
    {
        let mut v: Vec<u32> = Vec::with_capacity(256 * 1024);
        v.extend((0..256 * 1024u32).map(|i| i.wrapping_mul(2_654_435_761)));
        let sum = v.iter().fold(0u32, |a, &x| a.wrapping_add(x));
        let want = (0..256 * 1024u32).fold(0u32, |a, i| a.wrapping_add(i.wrapping_mul(2_654_435_761)));
        ensure(sum == want, || alloc::format!("vector sum {sum:#x}, want {want:#x}"))?;
        ensure(crate::heap::high_water() >= before + (1 << 20), || {
            alloc::format!("high-water mark {} below the 1 MiB in use", crate::heap::high_water())
        })?;
    }
    let after = crate::heap::used();
    ensure(after == before, || alloc::format!("{} bytes in use (was {before})", after))
}

/// The bump allocator aligns, packs and refuses what does not fit.
fn bump() -> Check {
    let mut b = BumpAllocator::new(4096, 0x1000, false);
    let a = b.alloc(100, 64).map_err(text)?;
    let c = b.alloc(10, 256).map_err(text)?;
    ensure(a == 0x1000 && c == 0x1100, || alloc::format!("got {a:#x}, {c:#x}"))?;
    let e = b.alloc(4000, 8);
    ensure(matches!(e, Err(Error::OutOfSpace { .. })), || alloc::format!("overfull request gave {}", show(&e)))
}

/// The range allocator reuses freed holes and merges neighbours back into one block.
fn range() -> Check {
    let mut r = RangeAllocator::new(0x10_0000, 1 << 20);
    let ids: Result<Vec<u64>, Error> = (0..4).map(|_| r.alloc(64 << 10, 4096)).collect();
    let ids = ids.map_err(text)?;
    r.free(ids[1]).map_err(text)?;
    let again = r.alloc(32 << 10, 4096).map_err(text)?;
    ensure(again == ids[1], || alloc::format!("got {again:#x}, want the hole {:#x}", ids[1]))?;
    for a in [ids[0], again, ids[2], ids[3]] {
        r.free(a).map_err(text)?;
    }
    ensure(r.free_bytes() == 1 << 20 && r.largest_free() == 1 << 20, || {
        alloc::format!("after freeing all: {} free, largest block {}", r.free_bytes(), r.largest_free())
    })?;
    ensure(r.free(0x10_0000).is_err(), || "a double free was accepted".into())
}

/// Device addresses from a range allocator (no CPU mapping): a device's memory as the LRU cache
/// sees it.
struct Arena(spin::Mutex<RangeAllocator>);

impl Allocator for Arena {
    fn alloc(&self, size: u64, _: &BufferSpec) -> hcq::Result<DeviceMemory> {
        let addr = self.0.lock().alloc(size, 4096)?;
        // SAFETY: the range allocator handed out [addr, addr + size) and keeps it until `free`
        // gives it back; there is no CPU pointer (nothing is accessed through it).
        Ok(unsafe { DeviceMemory::from_raw_parts(addr, size, None) })
    }
    fn free(&self, mem: DeviceMemory, _: &BufferSpec) {
        let _ = self.0.lock().free(mem.addr());
    }
}

/// The device allocator cache: a freed block is reused for the same size, and when the backend
/// is out of space the cache is emptied and the request retried once before an out-of-memory
/// error names the device and the request.
fn lru() -> Check {
    let lru =
        LruAllocator::new("ARENA", Box::new(Arena(spin::Mutex::new(RangeAllocator::new(0x1000_0000, 256 << 10)))));
    let spec = BufferSpec::default();
    let a = lru.alloc(128 << 10, &spec).map_err(text)?;
    let b = lru.alloc(64 << 10, &spec).map_err(text)?;
    let a_addr = a.addr();
    lru.free(a, &spec);
    ensure(lru.cached_bytes() == 128 << 10, || alloc::format!("{} bytes cached", lru.cached_bytes()))?;
    let again = lru.alloc(128 << 10, &spec).map_err(text)?;
    ensure(again.addr() == a_addr && lru.cached_bytes() == 0, || {
        alloc::format!("the same size got {:#x}, not the cached {a_addr:#x}", again.addr())
    })?;
    lru.free(again, &spec);
    // 192 KiB never fits next to the 64 KiB block in 256 KiB, even with the cache emptied
    let big = lru.alloc(192 << 10, &spec);
    let oom = matches!(big.as_ref().map_err(|e| e.root()), Err(Error::OutOfMemory { requested, .. }) if *requested == 192 << 10);
    ensure(oom && lru.cached_bytes() == 0, || {
        alloc::format!(
            "an impossible request gave {}, {} bytes still cached",
            show(&big.map(|m| m.addr())),
            lru.cached_bytes()
        )
    })?;
    lru.free(b, &spec);
    ensure(lru.used_bytes() == 0, || alloc::format!("{} bytes still in use", lru.used_bytes()))
}

/// Counts executions.
struct Nop(core::sync::atomic::AtomicU64);
impl Executor for Nop {
    fn exec(&self, _: &SoftContext, _: u64, _: u64, _: [u32; 3], _: [u32; 3]) -> hcq::Result<()> {
        self.0.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// A small ring wraps many times without losing or overwriting a submission, and the command
/// processor's read pointer ends where the producer's write pointer is.
fn ring() -> Check {
    let exec = Arc::new(Nop(Default::default()));
    let cfg = SoftConfig { ring_bytes: 256, kernarg_bytes: 256, max_in_flight: 4, ..SoftConfig::compact() };
    let dev = InlineDevice::new("RING", &cfg, exec.clone(), crate::time::now_ns).map_err(text)?;
    let hcq = dev.engine();
    let s = HOST_SIGNALS.alloc(0);
    let mut last = hcq::stamp::Stamp::ZERO;
    for i in 1..=100u64 {
        let mut q = hcq.queue().map_err(text)?;
        q.exec(0, 0, [1; 3], [1; 3]).map_err(text)?;
        q.signal_at(s.addr(), i).map_err(text)?;
        // SAFETY: the exec runs the check's counting executor (it reads no memory) and the
        // signal writes a slot this check owns.
        last = unsafe { hcq.submit(0, &mut q) }.map_err(text)?;
    }
    dev.run_until(last).map_err(text)?;
    let (runs, wptr, rptr) =
        (exec.0.load(core::sync::atomic::Ordering::Relaxed), hcq.channels()[0].wptr(), dev.rptr(0));
    let value = s.value();
    drop(s);
    ensure(runs == 100 && value == 100, || alloc::format!("{runs} of 100 launches ran, signal at {value}"))?;
    ensure(wptr > 4 * 64 && rptr == Ok(wptr), || {
        alloc::format!("write pointer {wptr} (64-word ring), read pointer {}", show(&rptr))
    })
}

struct Clock;
impl WaitHooks for Clock {
    fn now_ns(&self) -> u64 {
        crate::time::now_ns()
    }
}

/// Signals: a reached value returns at once; an unreached one times out after the policy's
/// time, naming the device, the value awaited and the last value seen.
fn signal() -> Check {
    let pool = SignalPool::new();
    let s = pool.alloc(7);
    s.wait(7, &WaitPolicy::with_timeout_ms(5), &Clock, &device_name("SIG")).map_err(text)?;
    let t0 = crate::time::now_ns();
    let e = s.wait(9, &WaitPolicy::with_timeout_ms(5), &Clock, &device_name("SIG"));
    let waited_ms = (crate::time::now_ns() - t0) / 1_000_000;
    let want = Error::Timeout { device: device_name("SIG"), awaited: 9, last: 7, timeout_ms: 5 };
    ensure(e.as_ref().err() == Some(&want), || alloc::format!("unreached wait gave {}", show(&e.map(|()| 0u64))))?;
    ensure((5..1000).contains(&waited_ms), || alloc::format!("the 5 ms timeout took {waited_ms} ms"))?;
    drop(s);
    Ok(())
}

/// A command-processor error (a signal address that is no signal) is the device's fault and
/// ends the wait with it instead of hanging.
fn fault() -> Check {
    let dev =
        InlineDevice::new("FAULT", &SoftConfig::compact(), Arc::new(Nop(Default::default())), crate::time::now_ns)
            .map_err(text)?;
    let hcq = dev.engine();
    let mut q = hcq.queue().map_err(text)?;
    q.signal_at(0x10, 1).map_err(text)?;
    // SAFETY: the one signal names no slot at all: the command processor refuses it.
    let v = unsafe { hcq.submit(0, &mut q) }.map_err(text)?;
    let e = dev.run_until(v);
    ensure(matches!(e.as_ref().map_err(|e| e.root()), Err(Error::InvalidArgument { value: 0x10, .. })), || {
        alloc::format!("a bad signal address gave {}", show(&e.map(|()| 0u64)))
    })
}

/// A check: `Err` says what broke.
pub type CheckFn = fn() -> Check;

/// Every check, by name.
pub const CHECKS: &[(&str, CheckFn)] = &[
    ("heap", heap),
    ("lru", lru),
    ("bump", bump),
    ("range", range),
    ("ring", ring),
    ("signal", signal),
    ("fault", fault),
];
