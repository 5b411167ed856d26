//! How hcq-kfd's backend submits a call on the simulated gfx1100, as tinygrad's graph does on
//! AMD: the captured PM4 commands live in IB slots of GPU memory (the core engine's IB shape,
//! each slot rewritten only where a replay changed it and only once the call that used it
//! retired) and the KFD compute ring gets one 4-dword `INDIRECT_BUFFER` packet per call; a
//! steady-state submission allocates nothing; calls in flight never wait for their own slot,
//! the one after the last slot waits for the oldest call. Copy launches run on the SDMA queue,
//! ordered with the dispatches through the timeline signal.

use hcq_bundle::hcqb::{self, Hcqb};
use hcq_bundle::model::BundleModel;
use hcq_kfd::{AmdBackend, AmdDevice};
use hcq_runner::Runner;
use hcq_sim_amd::{GpuConfig, SimKfd};
use hcq_testkit::counting_alloc::{Counting, allocations_in};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The `amd` graph of `examples/amd/<name>` as a model of its own.
fn amd_model(name: &str) -> BundleModel {
    let m = hcq_bundle::v1::import_dir(hcq_testkit::example(&format!("amd/{name}"))).unwrap();
    let g = m.graphs.iter().position(|g| g.name == "amd").unwrap_or(0);
    m.graph_model(g).unwrap()
}

/// `model` loaded on a fresh simulated gfx1100, the simulated KFD kept.
fn load(model: &BundleModel) -> (Arc<SimKfd>, Runner<AmdBackend>) {
    let sim = Arc::new(SimKfd::new(GpuConfig::default()));
    let dev = AmdDevice::open("AMD:SIM", sim.clone()).unwrap();
    let bytes = hcqb::write(model).unwrap();
    let runner = Runner::load(AmdBackend::new(dev), &Hcqb::parse(&bytes).unwrap()).unwrap();
    (sim, runner)
}

/// chain100 (100 kernels of `x + 1`, each reading the one before) with copy launches through
/// the chain: the input copied to a buffer of its own that the first kernel reads; after kernel
/// 49, its output copied to another buffer that kernel 50 reads; the final output copied to a
/// second output (expected: the same bytes). Every copy sits between the kernels that write and
/// read its bytes, so a copy that ran early or late breaks the result.
fn chain100_with_copies() -> BundleModel {
    use hcq_bundle::model::{Buffer, Launch, Output};
    use hcq_bundle::{ArgView, BufferRole};
    let mut m = amd_model("chain100");
    let fresh = |m: &mut BundleModel, like: ArgView, role: BufferRole| {
        m.buffers.push(Buffer {
            nbytes: like.nbytes,
            dtype: like.dtype,
            role,
            also_output: false,
            initial: None,
            image: None,
        });
        ArgView { buffer: (m.buffers.len() - 1) as u32, offset: 0, ..like }
    };
    let kernel = |m: &BundleModel, i: usize| match &m.launches[i] {
        Launch::Kernel(k) => k.clone(),
        Launch::Copy { .. } => panic!("launch {i} is a copy"),
    };
    // kernel 50 reads kernel 49's output: through a copy
    let (k49, mut k50) = (kernel(&m, 49), kernel(&m, 50));
    let mid = k49.args[k49.outs[0] as usize];
    let read = k50.ins[0] as usize;
    assert_eq!(k50.args[read], mid, "kernel 50 reads kernel 49's output");
    let b1 = fresh(&mut m, mid, BufferRole::Scratch);
    k50.args[read] = b1;
    m.launches[50] = Launch::Kernel(k50);
    m.launches.insert(50, Launch::Copy { dst: b1, src: mid });
    // kernel 0 reads the input: through a copy
    let mut k0 = kernel(&m, 0);
    let input = m.inputs[0].view;
    let read = k0.ins[0] as usize;
    assert_eq!(k0.args[read], input);
    let b0 = fresh(&mut m, input, BufferRole::Scratch);
    k0.args[read] = b0;
    m.launches[0] = Launch::Kernel(k0);
    m.launches.insert(0, Launch::Copy { dst: b0, src: input });
    // the output, copied to a second one
    let out = m.outputs[0].clone();
    let b2 = fresh(&mut m, out.view, BufferRole::Output);
    m.launches.push(Launch::Copy { dst: b2, src: out.view });
    m.outputs.push(Output { view: b2, ..out });
    m.validate().unwrap();
    m
}

/// The KFD compute queue's read and write pointers (dwords), as the simulated CP holds them.
fn compute_pointers(sim: &SimKfd) -> (u64, u64) {
    let q = sim.queue(0).expect("the compute queue is KFD queue 0");
    let s = sim.gpu().queue_status(q.id).unwrap();
    (s.rptr, s.wptr)
}

/// Once warm, a call of chain100 (100 dispatches) allocates nothing on the calling thread, its
/// submission or its wait: the engine patches the timeline wait and signal of the captured
/// queue, the IB pool stores the words that changed into a free slot, the hook writes one
/// `INDIRECT_BUFFER` packet and rings the doorbell; the wait goes into the simulated KFD's
/// `WAIT_EVENTS` on its memory and hardware exception events (which takes the GPU's
/// interrupts without copying its event table). The ring gets 4 dwords a call.
#[test]
fn a_steady_state_call_allocates_nothing_and_puts_one_ib_packet_in_the_ring() {
    let (sim, mut r) = load(&amd_model("chain100"));
    for _ in 0..20 {
        r.call().unwrap();
    }
    let (_, w0) = compute_pointers(&sim);
    let mut allocs = 0;
    for _ in 0..200 {
        let ((), n) = allocations_in(|| {
            let stamp = r.backend_mut().submit_call().unwrap();
            r.backend().wait(stamp).unwrap();
        });
        allocs += n;
    }
    assert_eq!(allocs, 0, "200 calls (submit and wait) allocated");
    let (rp, w1) = compute_pointers(&sim);
    assert_eq!(w1 - w0, 200 * 4, "one 4-dword INDIRECT_BUFFER packet a call");
    assert_eq!(rp, w1, "the CP passed every packet (each after its IB)");
    assert!(r.check().unwrap().ok);
}

/// With the CP stalled, four calls (the IB slots) go in flight at once; the fifth needs the
/// slot of the oldest and waits until the CP ran it; then every call completes, in order, and
/// the outputs check.
#[test]
fn calls_in_flight_take_free_slots_and_the_next_waits_for_the_oldest() {
    let (sim, mut r) = load(&amd_model("chain100"));
    r.call().unwrap();
    let stalled = Arc::new(AtomicBool::new(true));
    let s = stalled.clone();
    sim.gpu().before_pass(Some(Arc::new(move || {
        let t = Instant::now();
        while s.load(Ordering::Acquire) && t.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
    })));
    let t = Instant::now();
    let stamps: Vec<u64> = (0..4).map(|_| r.backend_mut().submit_call().unwrap().get()).collect();
    assert_eq!(stamps, [2, 3, 4, 5]);
    assert!(t.elapsed() < Duration::from_secs(2), "four calls fit the four slots: {:?}", t.elapsed());
    let release = {
        let stalled = stalled.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stalled.store(false, Ordering::Release);
        })
    };
    let t = Instant::now();
    let fifth = r.backend_mut().submit_call().unwrap();
    assert!(t.elapsed() >= Duration::from_millis(250), "the fifth call reused a slot in flight: {:?}", t.elapsed());
    release.join().unwrap();
    r.backend().wait(fifth).unwrap();
    assert_eq!(fifth.get(), 6);
    sim.gpu().before_pass(None);
    assert!(r.check().unwrap().ok);
    let (rp, wp) = compute_pointers(&sim);
    assert_eq!((rp, wp), (6 * 4, 6 * 4));
}

/// Copy launches run on the SDMA queue (`COPY LINEAR`, the timeline's `FENCE`, a `POLL_REGMEM`
/// on it first), each in order between the dispatches around it: chain100 with three copies
/// in its chain gives `x + 100` in both outputs, call after call and for a new input; a call is
/// five submissions (copy, 50 dispatches, copy, 50 dispatches, copy); the SDMA queue ran them.
#[test]
fn copy_launches_run_on_the_sdma_queue_in_order_with_the_dispatches() {
    let (sim, mut r) = load(&chain100_with_copies());
    assert_eq!(r.backend().submissions_per_call(), 5);
    for call in 0..3 {
        r.call().unwrap();
        let c = r.check().unwrap();
        assert!(c.ok && c.compared == 2 && c.mismatches == 0, "call {call}: {c:?}");
    }
    let x: Vec<u8> = (0..16).flat_map(|i| (3.0 * i as f32).to_le_bytes()).collect();
    r.set_input(0, &x).unwrap();
    r.call().unwrap();
    let want: Vec<u8> = (0..16).flat_map(|i| (3.0 * i as f32 + 100.0).to_le_bytes()).collect();
    assert_eq!(r.output(0).unwrap(), want);
    assert_eq!(r.output(1).unwrap(), want, "the last copy ran after the last dispatch");
    let sdma = sim.queue(1).expect("the SDMA queue is KFD queue 1");
    let st = sim.gpu().queue_status(sdma.id).unwrap();
    assert_eq!(st.engine, hcq_sim_amd::fault::Engine::Sdma);
    assert!(st.stats.packets >= 4 * 3 * 3, "{:?}", st.stats);
    assert_eq!(st.rptr, st.wptr, "the SDMA queue is idle after the calls");
    // steady state: the submissions of a call allocate nothing either
    let mut allocs = 0;
    for _ in 0..50 {
        let (stamp, n) = allocations_in(|| r.backend_mut().submit_call().unwrap());
        allocs += n;
        r.backend().wait(stamp).unwrap();
    }
    assert_eq!(allocs, 0);
    assert_eq!(r.output(1).unwrap(), want);
}

/// An input bound to caller memory (pages the process mapped with access: on the simulated KFD,
/// only what it mapped itself) is a `USERPTR` buffer object the kernels read in place: a call
/// gives `x + 100` for what the memory holds, a write there changes the next call's output,
/// unbinding reads the model's own input again. Memory KFD cannot pin (a `Vec` of this process,
/// which the simulated KFD does not reach) is `EFAULT`, and nothing changes.
#[test]
fn an_input_bound_to_user_pages_is_read_in_place_until_unbound() {
    use hcq_amd::kfd::Kfd;
    let model = amd_model("chain100");
    let input = model.inputs[0].view;
    let (sim, mut r) = load(&model);
    let own = r.backend().buffer_addr(input.buffer as usize).unwrap() + input.offset;
    let map = sim.map_anonymous(8192, true).unwrap();
    // 256 bytes into the second page: an address inside a page, as a caller's array lies
    // SAFETY: 4096 + 256 + 64 bytes lie inside the 8 KiB mapping.
    let ptr = unsafe { map.ptr().as_ptr().add(4096 + 256) };
    let put = |k: f32| {
        let x: Vec<f32> = (0..16).map(|i| i as f32 + k).collect();
        // SAFETY: 64 bytes inside the mapping; no call is in flight.
        unsafe { std::ptr::copy_nonoverlapping(x.as_ptr().cast::<u8>(), ptr, 64) };
    };
    let want = |k: f32| -> Vec<u8> { (0..16).flat_map(|i| (i as f32 + k + 100.0).to_le_bytes()).collect() };
    put(5.0);
    // SAFETY: the mapping lives (and is only written between calls) until after the unbind.
    unsafe { r.backend_mut().bind_host(own, 64, ptr) }.unwrap();
    r.call().unwrap();
    assert_eq!(r.output(0).unwrap(), want(5.0), "the kernels read the caller's memory");
    put(-7.0);
    r.call().unwrap();
    assert_eq!(r.output(0).unwrap(), want(-7.0), "in place: a write there reaches the next call");
    // SAFETY: back to the model's own memory.
    unsafe { r.backend_mut().bind_host(own, 64, core::ptr::null_mut()) }.unwrap();
    r.call().unwrap();
    assert!(r.check().unwrap().ok, "unbound: the bundle's own input again");
    let mut v = vec![0f32; 1024];
    // SAFETY: refused before anything is bound; `v` outlives the call either way.
    let e = unsafe { r.backend_mut().bind_host(own, 64, v.as_mut_ptr().cast()) }.unwrap_err();
    assert!(matches!(e.root(), hcq::Error::Os { errno: 14, .. }), "{e}");
    r.call().unwrap();
    assert!(r.check().unwrap().ok, "nothing changed");
    drop(r);
    sim.munmap(map).unwrap();
}
