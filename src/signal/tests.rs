use super::*;
use crate::error::device_name;
/// A fake clock that advances 1 µs per read and lets a test script the signal's value.
struct FakeClock<'a> {
    t: Cell,
    on_tick: &'a (dyn Fn(u64) + Sync),
}
struct Cell(core::sync::atomic::AtomicU64);
impl Cell {
    fn new(v: u64) -> Self {
        Cell(core::sync::atomic::AtomicU64::new(v))
    }
    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
impl WaitHooks for FakeClock<'_> {
    fn now_ns(&self) -> u64 {
        let t = self.t.0.fetch_add(1_000, Ordering::Relaxed) + 1_000;
        (self.on_tick)(t);
        t
    }
}

#[test]
fn wrapping_compare_handles_32bit_wrap() {
    assert!(reached(5, 5, false) && reached(6, 5, false) && !reached(4, 5, false));
    // 0x0000_0002 comes after 0xffff_fffe once the 32-bit payload wrapped
    assert!(reached(2, 0xffff_fffe, true));
    assert!(!reached(0xffff_fffe, 2, true));
    assert!(!reached(2, 0xffff_fffe, false));
}

#[test]
fn wait_returns_once_value_is_reached() {
    let pool = SignalPool::new();
    let s = pool.alloc(0);
    let s2 = s.signal().clone();
    let on_tick = move |t: u64| {
        if t >= 50_000 {
            s2.set(3)
        }
    };
    let clock = FakeClock { t: Cell::new(0), on_tick: &on_tick };
    s.wait(3, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("T")).unwrap();
    assert_eq!(s.value(), 3);
}

#[test]
fn timeout_names_device_target_and_last_value() {
    let pool = SignalPool::new();
    let s = pool.alloc(7);
    let clock = FakeClock { t: Cell::new(0), on_tick: &|_| {} };
    let e = s.wait(9, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("SIM:1")).unwrap_err();
    assert_eq!(e, Error::Timeout { device: device_name("SIM:1"), awaited: 9, last: 7, timeout_ms: 1 });
    // it gave up after about the timeout: 1 ms at 1 µs per clock read
    assert!(clock.t.get() < 1_200_000, "waited {} ns", clock.t.get());
}

#[test]
fn progress_restarts_the_timeout_clock() {
    let pool = SignalPool::new();
    let s = pool.alloc(0);
    let s2 = s.signal().clone();
    // the value creeps up by one every 0.5 ms and reaches 6 after 3 ms: longer than the
    // 1 ms timeout in total, but never 1 ms without progress
    let on_tick = move |t: u64| s2.set((t / 500_000).min(6));
    let clock = FakeClock { t: Cell::new(0), on_tick: &on_tick };
    s.wait(6, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("T")).unwrap();
}

#[test]
fn value_reached_during_timeout_is_not_an_error() {
    // the final re-read sees the value: no spurious "not set to X, but X" error
    let pool = SignalPool::new();
    let s = pool.alloc(0);
    let s2 = s.signal().clone();
    let on_tick = move |t: u64| {
        if t > 1_000_000 {
            s2.set(1)
        }
    };
    let clock = FakeClock { t: Cell::new(0), on_tick: &on_tick };
    s.wait(1, &WaitPolicy::with_timeout_ms(1), &clock, &device_name("T")).unwrap();
}

#[test]
fn pool_resolves_value_and_timestamp_addresses() {
    let pool = SignalPool::new();
    let a = pool.alloc(1);
    let b = pool.alloc(2);
    let (_, i, ts) = pool.resolve(b.addr()).unwrap();
    assert_eq!((i, ts), (b.index, false));
    let (_, _, ts) = pool.resolve(a.timestamp_addr()).unwrap();
    assert!(ts);
    assert!(pool.resolve(a.addr() + 4).is_none());
    assert!(pool.resolve(0).is_none());
    let a_addr = a.addr();
    drop(a);
    let c = pool.alloc(5);
    assert_eq!(c.value(), 5);
    assert_eq!(c.addr(), a_addr, "a dropped owner gave its slot back");
}

#[test]
fn a_slot_has_one_owner_and_returns_to_the_pool_when_it_drops() {
    let pool = SignalPool::new();
    // an owner per call, and no slot leaks: 10 000 allocations that drop at once take
    // one page (500 under Miri: two pages' worth of slots)
    for i in 0..if cfg!(miri) { 500 } else { 10_000 } {
        let s = pool.alloc(i);
        assert_eq!(s.value(), i);
    }
    assert_eq!(pool.pages(), 1);
    let live: std::vec::Vec<OwnedSignal> = (0..SignalPool::SLOTS_PER_PAGE as u64 + 1).map(|i| pool.alloc(i)).collect();
    assert_eq!(pool.pages(), 2);
    let mut addrs: std::vec::Vec<u64> = live.iter().map(|s| s.addr()).collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), live.len(), "two live owners of one slot");
    // a page of the caller's: one owner per slot
    let page = alloc::sync::Arc::new(SignalPage::new_host(2));
    let first = OwnedSignal::new(page.clone(), 1).unwrap();
    assert!(matches!(OwnedSignal::new(page.clone(), 1), Err(Error::InvalidArgument { value: 1, .. })));
    drop(first);
    OwnedSignal::new(page, 1).unwrap();
    // a pool's page is the pool's
    let (pool_page, i, _) = pool.resolve(live[0].addr()).unwrap();
    assert!(OwnedSignal::new(pool_page, (i + 1) % SignalPool::SLOTS_PER_PAGE).is_err());
}

#[test]
fn signal_commands_may_not_store_to_a_timeline() {
    let pool = SignalPool::new();
    let tl = crate::timeline::Timeline::new(device_name("T"), pool.alloc(0));
    let other = pool.alloc(0);
    let e = pool.store(tl.signal().addr(), 7).unwrap_err();
    assert_eq!(
        e,
        Error::InvalidArgument { what: "a signal command may not target a timeline", value: tl.signal().addr() }
    );
    assert_eq!(tl.signal().value(), 0);
    // its timestamp word and any other slot are fine
    pool.store(tl.signal().timestamp_addr(), 3).unwrap();
    pool.store(other.addr(), 9).unwrap();
    assert_eq!((tl.signal().timestamp(), other.value()), (3, 9));
    // (the timeline's own command processor signals it through its timeline handle, not
    // the pool: `soft::cp`)
    assert!(pool.load(tl.signal().addr() + 4).is_err() && pool.store(8, 1).is_err());
}
