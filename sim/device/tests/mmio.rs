//! Behaviour of `MockMmio` as seen by register code (host side) and by a simulated device.

use hcq::Error;
use hcq::mmio::{MmioBus, MmioView, Width};
use hcq_sim::mmio::{Access, AccessKind, DEFAULT_LOG_CAPACITY, MockMmio, WriteAction, WriteEvent};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

hcq::register! {
    /// A control register in the style of a ring-buffer control word.
    CNTL @ 0x10 : u32 {
        5:0 bufsz as u8;
        8:8 enable as bool;
        31:16 vmid as u16;
    }
    /// A 64-bit doorbell.
    DOORBELL @ 0x20 : u64 {
        63:0 wptr as u64;
    }
}

const WIDTHS: [Width; 4] = [Width::U8, Width::U16, Width::U32, Width::U64];

#[test]
fn every_width_round_trips_at_every_aligned_offset() {
    let m = MockMmio::new(64).unwrap();
    for w in WIDTHS {
        for off in (0..64).step_by(w.bytes()) {
            // a value with distinct bytes and high bits set beyond the width (must be cut)
            let v = 0xf1e2_d3c4_b5a6_9788u64.rotate_left(off as u32);
            m.write(off, w, v).unwrap();
            assert_eq!(m.read(off, w).unwrap(), v & w.mask(), "width {w:?} offset {off}");
        }
    }
}

#[test]
fn narrow_and_wide_accesses_view_the_same_little_endian_bytes() {
    let m = MockMmio::new(16).unwrap();
    m.write(8, Width::U64, 0x8877_6655_4433_2211).unwrap();
    assert_eq!(m.read(8, Width::U8).unwrap(), 0x11);
    assert_eq!(m.read(15, Width::U8).unwrap(), 0x88);
    assert_eq!(m.read(10, Width::U16).unwrap(), 0x4433);
    assert_eq!(m.read(12, Width::U32).unwrap(), 0x8877_6655);
    // narrow writes land in the right bytes and leave the rest alone
    m.write(9, Width::U8, 0xaa).unwrap();
    m.write(12, Width::U32, 0xdead_beef).unwrap();
    assert_eq!(m.read(8, Width::U64).unwrap(), 0xdead_beef_4433_aa11);
    // and an MmioView's bulk copy sees the same bytes
    let mut bytes = [0u8; 8];
    MmioView::whole(&*m, Width::U16).copy_out(8, &mut bytes).unwrap();
    assert_eq!(u64::from_le_bytes(bytes), 0xdead_beef_4433_aa11);
}

#[test]
fn out_of_range_and_misaligned_accesses_are_refused_like_volatile_region() {
    let m = MockMmio::new(16).unwrap();
    let host = hcq::mmio::HostRegion::new(16, 8).unwrap();
    let cases = [
        (16, Width::U8),
        (12, Width::U64),
        (14, Width::U32),
        (usize::MAX, Width::U8),
        (usize::MAX - 7, Width::U64),
        (2, Width::U32),
        (1, Width::U16),
        (4, Width::U64),
    ];
    for (off, w) in cases {
        let mock = m.read(off, w).unwrap_err();
        assert_eq!(mock, host.read(off, w).unwrap_err(), "read {off:#x} {w:?}");
        assert!(matches!(mock, Error::OutOfBounds { .. } | Error::Misaligned { .. }));
        assert_eq!(m.write(off, w, 1).unwrap_err(), host.write(off, w, 1).unwrap_err(), "write {off:#x} {w:?}");
        assert!(m.device_read(off, w).is_err());
        assert!(m.device_write(off, w, 1).is_err());
    }
    assert!(matches!(m.read(2, Width::U32), Err(Error::Misaligned { what: "mmio access", value: 2, align: 4 })));
    // nothing was written by the refused writes
    assert_eq!(m.read(0, Width::U64).unwrap() | m.read(8, Width::U64).unwrap(), 0);
    // hooks and faults outside the bus are refused too
    assert!(matches!(m.on_read(16, |v| v), Err(Error::OutOfBounds { .. })));
    assert!(matches!(m.on_write(99, WriteAction::Store), Err(Error::OutOfBounds { .. })));
    assert!(matches!(m.drop_writes(16, None), Err(Error::OutOfBounds { .. })));
    assert!(matches!(m.freeze(6, Width::U32), Err(Error::Misaligned { .. })));
    assert!(matches!(m.freeze(16, Width::U8), Err(Error::OutOfBounds { .. })));
}

#[test]
fn register_macro_registers_read_and_write_through_the_mock() {
    let m = MockMmio::new(0x40).unwrap();
    CNTL::default().set_bufsz(12).set_enable(true).set_vmid(3).write(&*m).unwrap();
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 12 | 1 << 8 | 3 << 16);
    CNTL::alter(&*m, |r| r.set_enable(false)).unwrap();
    let r = CNTL::read(&*m).unwrap();
    assert_eq!((r.bufsz(), r.enable(), r.vmid()), (12, false, 3));
    DOORBELL::default().set_wptr(0x1_0000_0040).write(&*m).unwrap();
    assert_eq!(m.device_read(0x20, Width::U64).unwrap(), 0x1_0000_0040);
    // the device changes a register through its port; the host's register read sees it
    CNTL::default().set_vmid(9).write(&m.device()).unwrap();
    assert_eq!(CNTL::read(&*m).unwrap().vmid(), 9);
}

#[test]
fn log_records_host_reads_and_writes_in_order_with_values() {
    let m = MockMmio::new(0x40).unwrap();
    m.write(0x10, Width::U32, 1).unwrap(); // before logging: not recorded, but consumes seq 0
    m.set_logging(true);
    CNTL::default().set_bufsz(5).write(&*m).unwrap();
    CNTL::alter(&*m, |r| r.set_enable(true)).unwrap();
    m.write(0x3f, Width::U8, 0x1ff).unwrap();
    let log = m.take_log();
    let w = |offset, width, value, seq| Access { kind: AccessKind::Write, offset, width, value, seq };
    let r = |offset, width, value, seq| Access { kind: AccessKind::Read, offset, width, value, seq };
    assert_eq!(
        log,
        [
            w(0x10, Width::U32, 5, 1),
            r(0x10, Width::U32, 5, 2),
            w(0x10, Width::U32, 5 | 1 << 8, 3),
            w(0x3f, Width::U8, 0xff, 4), // logged value is what the bus took: truncated
        ]
    );
    assert_eq!(m.log_len(), 0, "take_log empties the log");
    m.set_logging(false);
    m.read(0x10, Width::U32).unwrap();
    assert_eq!(m.log_len(), 0, "nothing logged while off");
    // refused accesses are not logged
    m.set_logging(true);
    assert!(m.read(0x40, Width::U8).is_err());
    assert_eq!(m.log_len(), 0);
}

#[test]
fn log_is_bounded_and_drops_the_oldest() {
    let m = MockMmio::new(8).unwrap();
    m.set_logging(true);
    let n = DEFAULT_LOG_CAPACITY as u64 + 10;
    for i in 0..n {
        m.write(0, Width::U32, i).unwrap();
    }
    assert_eq!(m.log_len(), DEFAULT_LOG_CAPACITY);
    assert_eq!(m.log_dropped(), 10);
    let log = m.take_log();
    assert_eq!(log.first().unwrap().value, 10);
    assert_eq!(log.last().unwrap().value, n - 1);
    assert!(log.windows(2).all(|p| p[1].seq == p[0].seq + 1));

    m.set_log_capacity(3).unwrap();
    for i in 0..5 {
        m.read(0, Width::U8).unwrap();
        m.write(0, Width::U8, i).unwrap();
    }
    let log = m.take_log();
    assert_eq!(log.len(), 3);
    assert_eq!(
        log.iter().map(|a| (a.kind, a.value)).collect::<Vec<_>>(),
        [(AccessKind::Write, 3), (AccessKind::Read, 3), (AccessKind::Write, 4)]
    );
    assert_eq!(m.log_dropped(), 10 + 7);
}

#[test]
fn read_hook_shapes_what_the_host_sees_without_changing_storage() {
    let m = MockMmio::new(0x40).unwrap();
    m.device_write(0x10, Width::U32, 0x30).unwrap();
    // a status register whose "busy" bit 0 reads as set on every other read
    let reads = Arc::new(AtomicU64::new(0));
    let r2 = Arc::clone(&reads);
    m.on_read(0x10, move |stored| stored | (r2.fetch_add(1, Ordering::Relaxed) % 2)).unwrap();
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 0x30);
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 0x31);
    assert_eq!(m.device_read(0x10, Width::U32).unwrap(), 0x30, "storage untouched");
    // hook output is cut to the access width
    m.on_read(0x10, |_| u64::MAX).unwrap();
    assert_eq!(m.read(0x10, Width::U16).unwrap(), 0xffff);
    // only the exact offset is hooked
    assert_eq!(m.read(0x14, Width::U32).unwrap(), 0);
    assert!(m.remove_hooks(0x10));
    assert!(!m.remove_hooks(0x10));
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 0x30);
}

#[test]
fn write_hook_can_transform_or_drop_writes() {
    let m = MockMmio::new(0x40).unwrap();
    // write-1-to-clear: the written bits clear stored bits
    let mm = Arc::clone(&m);
    m.on_write(0x18, move |w| WriteAction::Store(mm.device_read(0x18, Width::U32).unwrap() & !w)).unwrap();
    m.device_write(0x18, Width::U32, 0b1111).unwrap();
    m.write(0x18, Width::U32, 0b0101).unwrap();
    assert_eq!(m.read(0x18, Width::U32).unwrap(), 0b1010);
    // a read-only register: writes are discarded and wake nobody
    m.on_write(0x1c, |_| WriteAction::Drop).unwrap();
    m.write(0x1c, Width::U32, 7).unwrap();
    assert_eq!(m.read(0x1c, Width::U32).unwrap(), 0);
    assert_eq!(m.write_count(0x1c), 0);
    // a replaced hook is the one that runs
    m.on_write(0x1c, |w| WriteAction::Store(w + 1)).unwrap();
    m.write(0x1c, Width::U32, 7).unwrap();
    assert_eq!(m.read(0x1c, Width::U32).unwrap(), 8);
    m.remove_hooks(0x1c);
    m.write(0x1c, Width::U32, 7).unwrap();
    assert_eq!(m.read(0x1c, Width::U32).unwrap(), 7);
}

#[test]
fn doorbell_hook_wakes_a_waiting_device_thread() {
    let m = MockMmio::new(0x40).unwrap();
    // the test owns the doorbell's mailbox and condvar, as a simulated command processor would
    let bell = Arc::new((Mutex::new(Vec::<u64>::new()), Condvar::new()));
    let b2 = Arc::clone(&bell);
    m.on_write(DOORBELL::OFFSET, move |wptr| {
        b2.0.lock().unwrap().push(wptr);
        b2.1.notify_all();
        WriteAction::Store(wptr)
    })
    .unwrap();

    let dev = Arc::clone(&m);
    let b3 = Arc::clone(&bell);
    let device = thread::spawn(move || {
        // wait for two rings, then "execute" by publishing the read pointer in a register
        let (lock, cv) = &*b3;
        let (rings, timeout) =
            cv.wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(10), |r| r.len() < 2).unwrap();
        assert!(!timeout.timed_out(), "doorbell never rang");
        let last = *rings.last().unwrap();
        dev.device_write(0x28, Width::U64, last).unwrap();
        rings.clone()
    });
    DOORBELL::default().set_wptr(4).write(&*m).unwrap();
    DOORBELL::default().set_wptr(9).write(&*m).unwrap();
    assert_eq!(device.join().unwrap(), [4, 9]);
    assert_eq!(m.read(0x28, Width::U64).unwrap(), 9);
}

#[test]
fn wait_for_write_returns_the_next_host_write_or_times_out() {
    let m = MockMmio::new(0x40).unwrap();
    let t0 = Instant::now();
    assert_eq!(m.wait_for_write(0x20, Duration::from_millis(30)), None);
    assert!(t0.elapsed() >= Duration::from_millis(30));

    let host = Arc::clone(&m);
    let start = Arc::new(Barrier::new(2));
    let s2 = Arc::clone(&start);
    let writer = thread::spawn(move || {
        s2.wait();
        thread::sleep(Duration::from_millis(20));
        host.write(0x20, Width::U64, 0xabc).unwrap();
    });
    let seen = m.write_count(0x20);
    start.wait();
    let ev = m.wait_for_write_after(0x20, seen, Duration::from_secs(10));
    writer.join().unwrap();
    assert_eq!(ev, Some(WriteEvent { count: 1, value: 0xabc }));

    // writes made before the wait began are not missed when their count is passed in
    m.write(0x20, Width::U64, 1).unwrap();
    m.write(0x20, Width::U64, 2).unwrap();
    assert_eq!(m.wait_for_write_after(0x20, 1, Duration::ZERO), Some(WriteEvent { count: 3, value: 2 }));
    assert_eq!(m.wait_for_write_after(0x20, 3, Duration::from_millis(5)), None);
    // device writes do not count as host writes
    m.device_write(0x20, Width::U64, 5).unwrap();
    assert_eq!(m.write_count(0x20), 3);
}

#[test]
fn frozen_register_stops_changing_for_host_and_device() {
    let m = MockMmio::new(0x40).unwrap();
    m.write(0x10, Width::U32, 0x1234).unwrap();
    m.freeze(0x10, Width::U32).unwrap();
    m.write(0x10, Width::U32, 0xffff).unwrap();
    m.device_write(0x10, Width::U32, 0xeeee).unwrap();
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 0x1234);
    assert_eq!(m.frozen_writes(), 1, "device writes are not host writes");
    assert_eq!(m.write_count(0x10), 1, "the ignored write woke nobody");
    // a wider write changes only the bytes outside the frozen register
    m.write(0x10, Width::U64, 0xaaaa_aaaa_bbbb_bbbb).unwrap();
    assert_eq!(m.read(0x10, Width::U64).unwrap(), 0xaaaa_aaaa_0000_1234);
    assert_eq!(m.frozen_writes(), 2);
    // a neighbouring register is unaffected
    m.write(0x14, Width::U32, 5).unwrap();
    assert_eq!(m.read(0x14, Width::U32).unwrap(), 5);
    m.unfreeze(0x10, Width::U32).unwrap();
    m.write(0x10, Width::U32, 0xffff).unwrap();
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 0xffff);
    m.freeze(0x10, Width::U16).unwrap();
    m.clear_faults();
    m.device_write(0x10, Width::U32, 7).unwrap();
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 7);
}

#[test]
fn drop_writes_loses_the_next_n_host_writes_only() {
    let m = MockMmio::new(0x40).unwrap();
    let hooked = Arc::new(AtomicU64::new(0));
    let h2 = Arc::clone(&hooked);
    m.on_write(0x8, move |v| {
        h2.fetch_add(1, Ordering::Relaxed);
        WriteAction::Store(v)
    })
    .unwrap();
    m.set_logging(true);
    m.drop_writes(0x8, Some(2)).unwrap();
    m.write(0x8, Width::U32, 1).unwrap();
    m.write(0x8, Width::U32, 2).unwrap();
    assert_eq!(m.read(0x8, Width::U32).unwrap(), 0);
    assert_eq!(hooked.load(Ordering::Relaxed), 0, "a lost write never reaches the doorbell hook");
    assert_eq!(m.write_count(0x8), 0);
    m.write(0x8, Width::U32, 3).unwrap();
    assert_eq!(m.read(0x8, Width::U32).unwrap(), 3);
    assert_eq!(hooked.load(Ordering::Relaxed), 1);
    assert_eq!(m.dropped_writes(), 2);
    // lost writes are still logged: the host did issue them
    let writes: Vec<u64> = m.take_log().iter().filter(|a| a.kind == AccessKind::Write).map(|a| a.value).collect();
    assert_eq!(writes, [1, 2, 3]);

    // device writes are never lost; `None` loses every host write until cleared
    m.drop_writes(0x8, None).unwrap();
    for i in 0..10 {
        m.write(0x8, Width::U32, 100 + i).unwrap();
    }
    m.device_write(0x8, Width::U32, 42).unwrap();
    assert_eq!(m.read(0x8, Width::U32).unwrap(), 42);
    assert_eq!(m.dropped_writes(), 12);
    m.clear_faults();
    m.write(0x8, Width::U32, 4).unwrap();
    assert_eq!(m.read(0x8, Width::U32).unwrap(), 4);
    // Some(0) cancels a pending loss
    m.drop_writes(0x8, Some(5)).unwrap();
    m.drop_writes(0x8, Some(0)).unwrap();
    m.write(0x8, Width::U32, 6).unwrap();
    assert_eq!(m.read(0x8, Width::U32).unwrap(), 6);
}

#[test]
fn device_side_access_bypasses_hooks_log_and_lost_writes() {
    let m = MockMmio::new(0x40).unwrap();
    m.on_read(0x10, |_| 0xdead).unwrap();
    m.on_write(0x10, |_| WriteAction::Drop).unwrap();
    m.drop_writes(0x10, None).unwrap();
    m.set_logging(true);
    m.device_write(0x10, Width::U32, 0x77).unwrap();
    assert_eq!(m.device_read(0x10, Width::U32).unwrap(), 0x77);
    let port = m.device();
    assert_eq!(port.size(), 0x40);
    port.write(0x14, Width::U32, 0x88).unwrap();
    assert_eq!(port.read(0x14, Width::U32).unwrap(), 0x88);
    assert_eq!(m.log_len(), 0);
    assert_eq!(m.dropped_writes(), 0);
    assert_eq!(m.read(0x10, Width::U32).unwrap(), 0xdead, "the host still goes through the hook");
    // and the device side keeps working when the host bus has failed
    m.fail_after(0);
    assert!(matches!(m.read(0x14, Width::U32), Err(Error::DeviceHung { .. })));
    assert_eq!(m.device_read(0x14, Width::U32).unwrap(), 0x88);
}

#[test]
fn hooks_may_use_the_bus_reentrantly() {
    // a write hook that mirrors the value into another register through the host side
    let m = MockMmio::new(0x40).unwrap();
    let mm = Arc::clone(&m);
    m.on_write(0x0, move |v| {
        mm.write(0x8, Width::U32, v * 2).unwrap();
        WriteAction::Store(v)
    })
    .unwrap();
    m.write(0x0, Width::U32, 21).unwrap();
    assert_eq!(m.read(0x8, Width::U32).unwrap(), 42);
    m.remove_hooks(0x0); // break the Arc cycle
}

#[test]
fn concurrent_64_bit_accesses_are_never_torn() {
    let m = MockMmio::new(64).unwrap();
    let iters = 100_000u64;
    let dev = Arc::clone(&m);
    let start = Arc::new(Barrier::new(2));
    let s2 = Arc::clone(&start);
    // every value written has all eight bytes equal; a torn read would mix two of them
    let device = thread::spawn(move || {
        s2.wait();
        for i in 0..iters {
            dev.device_write(0x18, Width::U64, (i % 256) * 0x0101_0101_0101_0101).unwrap();
            let v = dev.device_read(0x20, Width::U64).unwrap();
            assert_eq!(v, (v & 0xff) * 0x0101_0101_0101_0101, "device saw a torn value {v:#x}");
        }
    });
    start.wait();
    for i in 0..iters {
        m.write(0x20, Width::U64, (i % 256) * 0x0101_0101_0101_0101).unwrap();
        let v = m.read(0x18, Width::U64).unwrap();
        assert_eq!(v, (v & 0xff) * 0x0101_0101_0101_0101, "host saw a torn value {v:#x}");
    }
    device.join().unwrap();
}

#[test]
fn concurrent_narrow_writes_to_one_word_do_not_lose_each_other() {
    // host and device each own different bytes of one 64-bit word; a non-atomic
    // read-modify-write of the word would overwrite the other side's bytes
    let m = MockMmio::new(8).unwrap();
    let iters = 200_000u64;
    let dev = Arc::clone(&m);
    let start = Arc::new(Barrier::new(2));
    let s2 = Arc::clone(&start);
    let device = thread::spawn(move || {
        s2.wait();
        for i in 1..=iters {
            dev.device_write(4, Width::U32, i).unwrap();
            assert_eq!(dev.device_read(4, Width::U32).unwrap(), i, "device lost its own write at {i}");
        }
    });
    start.wait();
    for i in 1..=iters {
        m.write(0, Width::U16, i & 0xffff).unwrap();
        m.write(2, Width::U8, 0x5a).unwrap();
        assert_eq!(m.read(2, Width::U8).unwrap(), 0x5a);
        assert_eq!(m.read(0, Width::U16).unwrap(), i & 0xffff, "host lost its own write at {i}");
    }
    device.join().unwrap();
    assert_eq!(m.read(0, Width::U64).unwrap(), iters << 32 | 0x5a << 16 | (iters & 0xffff));
}
