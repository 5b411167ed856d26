//! The HCQ engine end to end on simulated devices: ordering, replay, stalls, hangs.

use hcq::error::Error;
use hcq::mmio::{MmioBus, Width};
use hcq::queue::Field;
use hcq::signal::WaitPolicy;
use hcq::soft::threaded::SoftConfig;
use hcq_sim::SimDevice;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `submit_tracked!(hcq, engine, hazards, accesses, build)` for `hcq.submit_tracked(..)`.
macro_rules! submit_tracked {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: the tracked submissions of these tests run host functions over the test's
        // live buffers, and their accesses name every range they touch.
        unsafe { $target.submit_tracked($($arg),+) }
    }};
}

/// Submit a test queue: `submit!(hcq, engine, &mut q)` for `hcq.submit(engine, &mut q)`.
macro_rules! submit {
    ($target:expr, $($arg:expr),+ $(,)?) => {{
        // SAFETY: these tests submit waits, barriers, signals of slots they own, and execs and
        // copies over memory they keep alive until the device has passed the returned stamp.
        unsafe { $target.submit($($arg),+) }
    }};
}

fn two_engines(name: &str) -> SimDevice {
    let cfg = SoftConfig { engines: vec!["compute", "copy"], ..SoftConfig::default() };
    SimDevice::new(name, &cfg).unwrap()
}

/// A program that writes the u64 in its kernel arguments' second word to the address in the
/// first word (a device buffer).
fn store_program(dev: &SimDevice, mem: Arc<hcq::mmio::HostRegion>) -> u64 {
    dev.register(16, move |args, _, _| {
        let off = u64::from_le_bytes(args[0..8].try_into().unwrap());
        let val = u64::from_le_bytes(args[8..16].try_into().unwrap());
        mem.write(off as usize, Width::U64, val)
    })
    .unwrap()
}

fn kernargs(dev: &SimDevice, off: u64, val: u64) -> u64 {
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&off.to_le_bytes());
    a[8..].copy_from_slice(&val.to_le_bytes());
    dev.engine().lock().kernargs(&a, 16, 16).unwrap()
}

#[test]
fn queues_of_one_device_run_in_timeline_order() {
    // a slow exec on the compute engine, then a copy on the copy engine that reads what the exec
    // wrote: the copy engine must wait for the compute submission (timeline order)
    let dev = two_engines("SIM");
    let src = dev.alloc(64).unwrap();
    let dst = dev.alloc(64).unwrap();
    let prog = store_program(&dev, src.clone());
    dev.faults().set_latency(Duration::from_millis(20));
    let ka = kernargs(&dev, 0, 0xfeed);
    let mut q = dev.engine().queue().unwrap();
    q.exec(prog, ka, [1; 3], [1; 3]).unwrap();
    submit!(dev.engine(), 0, &mut q).unwrap();
    let mut c = dev.engine().queue().unwrap();
    c.copy(dst.addr(), src.addr(), 8).unwrap();
    submit!(dev.engine(), 1, &mut c).unwrap();
    dev.engine().synchronize().unwrap();
    assert_eq!(dst.read(0, Width::U64).unwrap(), 0xfeed);
}

#[test]
fn a_signal_command_aimed_at_another_devices_timeline_faults_the_device_and_moves_nothing() {
    let a = SimDevice::with_defaults("SIM").unwrap();
    let b = SimDevice::with_defaults("SIM:1").unwrap();
    let mut q = a.engine().queue().unwrap();
    // "B has finished everything": B would free memory its queued kernels still use
    q.signal(b.engine().timeline().signal(), 1 << 40).unwrap();
    // SAFETY: breaks the contract on purpose (a signal of another device's timeline): the
    // command processor refusing it is what this test checks; nothing else runs.
    let v = unsafe { a.engine().submit(0, &mut q) }.unwrap();
    let e = a.engine().wait(v).unwrap_err();
    assert!(
        matches!(e.root(), Error::InvalidArgument { what: "a signal command may not target a timeline", .. }),
        "{e}"
    );
    assert_eq!(b.engine().timeline().completed().get(), 0, "B's timeline moved");
    // B is unaffected
    let mut qb = b.engine().queue().unwrap();
    qb.memory_barrier().unwrap();
    let vb = submit!(b.engine(), 0, &mut qb).unwrap();
    b.engine().wait(vb).unwrap();
    assert_eq!(b.engine().timeline().completed(), vb);
}

#[test]
fn a_queue_can_wait_on_another_devices_timeline() {
    let a = SimDevice::with_defaults("SIM").unwrap();
    let b = two_engines("SIM:1");
    let mem = a.alloc(64).unwrap();
    // device B copies out of memory that device A's program fills; B's copy engine must see it
    let b_src = b.alloc(64).unwrap();
    let b_dst = b.alloc(64).unwrap();
    let prog = store_program(&a, b_src.clone());
    let _ = mem;
    a.faults().set_latency(Duration::from_millis(30));
    let ka = kernargs(&a, 8, 77);
    let mut qa = a.engine().queue().unwrap();
    qa.exec(prog, ka, [1; 3], [1; 3]).unwrap();
    let va = submit!(a.engine(), 0, &mut qa).unwrap();
    let mut qb = b.engine().queue().unwrap();
    qb.wait(a.engine().timeline().signal(), va.get()).unwrap();
    qb.copy(b_dst.addr(), b_src.addr() + 8, 8).unwrap();
    submit!(b.engine(), 1, &mut qb).unwrap();
    b.engine().synchronize().unwrap();
    assert_eq!(b_dst.read(0, Width::U64).unwrap(), 77);
}

#[test]
fn replay_with_patched_values_gives_the_new_results() {
    let dev = SimDevice::with_defaults("SIM").unwrap();
    let out = dev.alloc(64).unwrap();
    let prog = store_program(&dev, out.clone());
    let mut q = dev.engine().queue().unwrap();
    q.exec(prog, kernargs(&dev, 0, 1), [1; 3], [1; 3]).unwrap();
    submit!(dev.engine(), 0, &mut q).unwrap();
    dev.engine().synchronize().unwrap();
    assert_eq!(out.read(0, Width::U64).unwrap(), 1);
    for i in 2..50u64 {
        // new kernel arguments (another slot, another value): patch only the kernarg address
        let ka = kernargs(&dev, (i % 8) * 8, i * 10);
        q.patch(1, Field::Kernargs, ka).unwrap();
        submit!(dev.engine(), 0, &mut q).unwrap();
        dev.engine().synchronize().unwrap();
        assert_eq!(out.read(((i % 8) * 8) as usize, Width::U64).unwrap(), i * 10);
    }
}

#[test]
fn a_stalled_device_is_waited_for() {
    // progress restarts the timeout clock: 6 submissions × 3 × 60 ms is longer than the 400 ms
    // timeout, but the timeline moves every 180 ms (margins a loaded machine keeps)
    let dev = SimDevice::with_defaults("SIM").unwrap();
    dev.engine().timeline().set_policy(WaitPolicy::with_timeout_ms(400));
    let prog = dev.register(0, |_, _, _| Ok(())).unwrap();
    dev.faults().set_latency(Duration::from_millis(60));
    for _ in 0..6 {
        let mut q = dev.engine().queue().unwrap();
        q.exec(prog, 0, [1; 3], [1; 3]).unwrap();
        submit!(dev.engine(), 0, &mut q).unwrap();
    }
    let t = Instant::now();
    dev.engine().synchronize().unwrap();
    assert!(t.elapsed() > Duration::from_millis(400), "the run really outlasted the timeout");
    // and a single stall shorter than the timeout is not a hang
    dev.faults().clear();
    dev.faults().stall_at(3 * 6 + 1, Duration::from_millis(100));
    let mut q = dev.engine().queue().unwrap();
    q.exec(prog, 0, [1; 3], [1; 3]).unwrap();
    submit!(dev.engine(), 0, &mut q).unwrap();
    dev.engine().synchronize().unwrap();
    assert!(!dev.engine().timeline().is_hung());
}

/// How late a thread that sleeps `d` wakes up right now: the scheduling delay of this machine
/// under its current load (other tests' command-processor threads, other processes).
fn wake_up_delay(d: Duration) -> Duration {
    let t = Instant::now();
    std::thread::sleep(d);
    t.elapsed().saturating_sub(d)
}

#[test]
fn a_hung_device_times_out_within_ten_percent_and_reports_hung() {
    let dev = SimDevice::with_defaults("SIM:3").unwrap();
    let timeout = Duration::from_millis(300);
    dev.engine().timeline().set_policy(WaitPolicy::with_timeout_ms(300));
    let prog = dev.register(0, |_, _, _| Ok(())).unwrap();
    dev.faults().hang_at(1); // the exec after the timeline wait never runs
    let mut q = dev.engine().queue().unwrap();
    q.exec(prog, 0, [1; 3], [1; 3]).unwrap();
    let v = submit!(dev.engine(), 0, &mut q).unwrap();
    // Calibration: a plain sleep of the same length, in the same window, on another thread. On
    // a shared 2-core machine both wake-ups are delayed alike; the wait may take 10% more than
    // the timeout plus that measured delay (and the one measured just before), no more.
    let before = wake_up_delay(Duration::from_millis(20));
    let calibration = std::thread::spawn(move || wake_up_delay(timeout));
    let t = Instant::now();
    let e = dev.engine().synchronize().unwrap_err();
    let took = t.elapsed();
    let slack = calibration.join().unwrap().max(before);
    assert!(
        took >= timeout && took <= timeout + timeout / 10 + slack,
        "timed out after {took:?} (a {timeout:?} no-load sleep woke {slack:?} late)"
    );
    match e {
        Error::Timeout { device, awaited, last, .. } => {
            assert_eq!((device.as_str(), awaited, last), ("SIM:3", v.get(), v.get() - 1));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(dev.engine().timeline().is_hung());
    let mut q2 = dev.engine().queue().unwrap();
    assert!(matches!(submit!(dev.engine(), 0, &mut q2), Err(Error::DeviceHung { .. })));
}

#[test]
fn a_command_processor_that_stops_reading_is_a_hang_not_corruption() {
    let dev = SimDevice::with_defaults("SIM").unwrap();
    dev.engine().timeline().set_policy(WaitPolicy::with_timeout_ms(100));
    dev.faults().stop_reading(true);
    let mut q = dev.engine().queue().unwrap();
    q.memory_barrier().unwrap();
    submit!(dev.engine(), 0, &mut q).unwrap();
    assert!(matches!(dev.engine().synchronize(), Err(Error::Timeout { .. })));
}

#[test]
fn the_doorbell_write_is_visible_in_the_mock_mmio_log() {
    let dev = SimDevice::with_defaults("SIM").unwrap();
    dev.mmio().set_logging(true);
    let mut q = dev.engine().queue().unwrap();
    q.memory_barrier().unwrap();
    let words = q.words().len();
    submit!(dev.engine(), 0, &mut q).unwrap();
    dev.engine().synchronize().unwrap();
    let log = dev.mmio().take_log();
    let bell: Vec<_> = log.iter().filter(|a| a.offset == 0 && a.kind == hcq_sim::AccessKind::Write).collect();
    assert_eq!(bell.len(), 1);
    assert_eq!(bell[0].value, (words + 5) as u64, "write pointer after the queue plus its timeline signal");
    // the read pointer is published after each command: it reaches the doorbell value shortly
    // after the final signal
    let t = Instant::now();
    while dev.soft().rptr(0).unwrap() != bell[0].value && t.elapsed() < Duration::from_secs(10) {
        std::thread::yield_now();
    }
    assert_eq!(dev.soft().rptr(0).unwrap(), bell[0].value);
}

#[test]
fn ring_wrap_under_a_slow_consumer_never_overwrites_unconsumed_commands() {
    // thousands of schedules: random submission sizes on a tiny ring with a consumer that is
    // randomly slow; every exec records its sequence number, so an overwritten (lost, repeated
    // or corrupted) command shows up as a gap, a duplicate or a CP fault
    let cfg = SoftConfig { ring_bytes: 96 * 4, kernarg_bytes: 4096, max_in_flight: 8, ..SoftConfig::default() };
    let dev = SimDevice::new("SIM", &cfg).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let prog = dev
        .register(8, move |a, _, _| {
            s2.lock().unwrap().push(u64::from_le_bytes(a.try_into().unwrap()));
            Ok(())
        })
        .unwrap();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut expect = 0u64;
    let schedules = 3000;
    for _ in 0..schedules {
        let cmds = 1 + next() % 6; // 1..=6 execs: 5 + 11*n + 5 words, up to 76 of 96
        let delay = next() % 4;
        dev.faults().set_latency(Duration::from_micros(if delay == 0 { 30 } else { 0 }));
        let mut q = dev.engine().queue().unwrap();
        for _ in 0..cmds {
            let ka = dev.engine().lock().kernargs(&expect.to_le_bytes(), 8, 8).unwrap();
            q.exec(prog, ka, [1; 3], [1; 3]).unwrap();
            expect += 1;
        }
        submit!(dev.engine(), 0, &mut q).unwrap();
    }
    dev.engine().synchronize().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len() as u64, expect);
    assert!(seen.iter().copied().eq(0..expect), "commands ran out of order or were overwritten");
}

#[test]
fn the_sim_device_works_through_buffers_and_programs() {
    use hcq::buffer::Buffer;
    use hcq::device::Device;
    use hcq::dtype::DType;
    use hcq::program::{Param, ParamKind, ProgramImage};
    let sim = Arc::new(hcq_sim::SimHandle::open("SIM:1").unwrap());
    assert_eq!(sim.name(), "SIM:1");
    let dev: Arc<dyn Device> = sim.clone();
    // "double": out[i] = 2 * in[i] over n u32 elements; kernargs = out ptr, in ptr, n (i32)
    sim.register_named("double", 20, |a, _, _| {
        let out = u64::from_le_bytes(a[0..8].try_into().unwrap()) as *mut u32;
        let inp = u64::from_le_bytes(a[8..16].try_into().unwrap()) as *const u32;
        let n = i32::from_le_bytes(a[16..20].try_into().unwrap()) as usize;
        for i in 0..n {
            // SAFETY: the test passes two live 16-element device buffers and n = 16.
            unsafe { *out.add(i) = 2 * *inp.add(i) };
        }
        Ok(())
    })
    .unwrap();
    let p = |slot, dtype, kind| Param { name: None, slot, dtype, shape: vec![16], kind };
    let image = ProgramImage {
        name: "double".into(),
        target: "SIM".into(),
        binary: Arc::from(&[][..]),
        entry: "double".into(),
        signature: vec![
            p(0, DType::U32, ParamKind::Buffer),
            p(1, DType::U32, ParamKind::Buffer),
            p(2, DType::I32, ParamKind::Value),
        ],
    };
    let prog = sim.load_program(&image).unwrap();
    let input = Buffer::new(dev.clone(), 16, DType::U32, Default::default()).unwrap();
    let output = Buffer::new(dev.clone(), 16, DType::U32, Default::default()).unwrap();
    let data: Vec<u8> = (0u32..16).flat_map(|x| x.to_le_bytes()).collect();
    input.copy_in(&data).unwrap();
    let us = prog.call(&[&output, &input], &[16], [1; 3], [1; 3], true).unwrap().unwrap();
    assert!(us >= 0.0);
    let mut out = vec![0u8; 64];
    output.copy_out(&mut out).unwrap();
    let got: Vec<u32> = out.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, (0u32..16).map(|x| 2 * x).collect::<Vec<_>>());
    assert!(dev.allocator().used_bytes() > 0);
    drop((input, output));
    assert_eq!(dev.allocator().used_bytes(), 0);
    assert!(dev.engine().is_some());
    // the plug-in kind opens SIM:1 under its own name too, and lists SIM
    let reg = hcq_runner::plug::Registry::new();
    reg.register(Arc::new(hcq_sim::plug::SimKind));
    assert_eq!(reg.open("sim:1", &Default::default()).unwrap().name(), "SIM:1");
    let report = reg.enumerate(None);
    assert!(report.iter().any(|r| r.name == "SIM" && r.result.is_ok()));
}

#[test]
fn hazard_tracking_adds_exactly_the_cross_device_waits_needed() {
    use hcq::deps::Access;
    use hcq::engine::Hazards;
    use hcq::queue::Command;
    let a = SimDevice::with_defaults("SIM").unwrap();
    let b = two_engines("SIM:1");
    let shared = b.alloc(64).unwrap(); // the buffer both devices touch
    let out = b.alloc(64).unwrap();
    let key = shared.addr();
    let mut hz = Hazards::new();
    let prog_a = store_program(&a, shared.clone());
    a.faults().set_latency(Duration::from_millis(30));
    // A writes shared[8..16] (slowly)
    let ka = kernargs(&a, 8, 4242);
    let va = submit_tracked!(a.engine(), 0, &mut hz, &[Access::write(key, 8, 16)], |q, _| q
        .exec(prog_a, ka, [1; 3], [1; 3])
        .map(|_| ()))
    .unwrap();
    // B reads shared[8..16] into out: must wait for A's write (RAW across devices)
    let mut seen_waits = Vec::new();
    submit_tracked!(b.engine(), 1, &mut hz, &[Access::read(key, 8, 16), Access::write(out.addr(), 0, 8)], |q, _| {
        for i in 0..q.len() {
            if let Some(Command::Wait { addr, value }) = q.command(i) {
                seen_waits.push((addr, value));
            }
        }
        q.copy(out.addr(), shared.addr() + 8, 8).map(|_| ())
    })
    .unwrap();
    b.engine().synchronize().unwrap();
    assert_eq!(out.read(0, Width::U64).unwrap(), 4242, "B saw A's write");
    let a_tl = a.engine().timeline().signal().addr();
    assert!(seen_waits.contains(&(a_tl, va.get())), "a wait on A's timeline was added: {seen_waits:?}");
    // B touching a disjoint range needs no wait on A: only its own timeline wait remains
    let mut waits = 0;
    submit_tracked!(b.engine(), 1, &mut hz, &[Access::write(key, 32, 40)], |q, _| {
        waits = (0..q.len()).filter(|&i| matches!(q.command(i), Some(Command::Wait { .. }))).count();
        q.memory_barrier().map(|_| ())
    })
    .unwrap();
    assert_eq!(waits, 1, "only the device's own timeline wait");
    b.engine().synchronize().unwrap();
}

#[test]
fn the_sim_device_states_its_limits_and_its_allocator_keeps_them() {
    use hcq::device::Device;
    let dev = hcq_sim::SimHandle::open("SIM:7").unwrap();
    let l = dev.limits();
    assert_eq!(
        (l.memory_bytes, l.max_alloc_bytes),
        (hcq_sim::device::SIM_MEMORY_BYTES, hcq_sim::device::SIM_MAX_ALLOC_BYTES)
    );
    assert_eq!(dev.properties().memory_bytes, l.memory_bytes);
    let dev: Arc<dyn Device> = Arc::new(dev);
    let too_big = hcq::buffer::Buffer::new(dev.clone(), l.max_alloc_bytes + 1, hcq::DType::U8, Default::default())
        .and_then(|b| b.device_addr());
    assert!(matches!(too_big, Err(ref e) if matches!(e.root(), Error::LimitExceeded { .. })), "{too_big:?}");
    let ok = hcq::buffer::Buffer::new(dev, 4096, hcq::DType::U8, Default::default()).and_then(|b| b.device_addr());
    assert!(ok.is_ok(), "{ok:?}");
}
