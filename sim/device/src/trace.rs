//! A profiled run on the simulated device: device timestamps around every program, buffer
//! allocations, a Chrome trace and a per-program summary.
//!
//! [`profile_run`] enables the device's [`Profiler`](hcq::profile::Profiler), allocates two
//! device buffers (recorded as [`EventKind::Alloc`] events), registers three small programs
//! ([`PROGRAMS`]: fill a buffer, scale it, reduce it to a sum) and runs them `rounds` times.
//! Each exec is bracketed by two timestamp commands on signals from
//! [`HOST_SIGNALS`]; after the device is synchronized the timestamps become
//! [`EventKind::Program`] events. The result is the trace JSON
//! ([`chrome::trace_json`]), the summary table and the computed sum (so callers can check the
//! programs really ran). The `trace` example writes the JSON to a file.
//!
//! Limits: times are the soft devices' clock ([`soft_clock_ns`]), i.e. host time; the event ring
//! of the profiler keeps the last 65 536 events, so very long runs drop the oldest.

use crate::SimDevice;
use hcq::error::{Error, Result};
use hcq::mmio::{HostRegion, MmioBus};
use hcq::profile::{Event, EventKind, chrome};
use hcq::signal::OwnedSignal;
use hcq::soft::HOST_SIGNALS;
use hcq::soft::threaded::soft_clock_ns;
use std::sync::Arc;

/// The programs each round runs, in order.
pub const PROGRAMS: [&str; 3] = ["fill", "scale", "reduce"];

/// Words processed per chunk by the programs (a stack buffer, so programs do not allocate).
const CHUNK: usize = 256;

/// What a profiled run produced.
#[derive(Clone, Debug)]
pub struct ProfileRun {
    /// The Chrome trace (Perfetto / chrome://tracing JSON).
    pub trace_json: String,
    /// The per-program summary table ([`hcq::profile::Profiler::summary_table`]).
    pub summary: String,
    /// Program events recorded: `rounds × PROGRAMS.len()`.
    pub program_events: usize,
    /// Allocation events recorded.
    pub alloc_events: usize,
    /// The sum the last round's `reduce` wrote.
    pub sum: u64,
}

fn read_u32s(mem: &HostRegion, at: usize, out: &mut [u32]) -> Result<()> {
    let mut bytes = [0u8; CHUNK * 4];
    let b = &mut bytes[..out.len() * 4];
    mem.read_bytes(at, b)?;
    for (w, c) in out.iter_mut().zip(b.chunks_exact(4)) {
        *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
    Ok(())
}

fn write_u32s(mem: &HostRegion, at: usize, words: &[u32]) -> Result<()> {
    let mut bytes = [0u8; CHUNK * 4];
    for (c, w) in bytes.chunks_exact_mut(4).zip(words) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    mem.write_bytes(at, &bytes[..words.len() * 4])
}

fn arg_u32(args: &[u8]) -> Result<u32> {
    let a =
        args.get(..4).ok_or(Error::OutOfBounds { what: "program kernel arguments", offset: 0, len: 4, limit: 0 })?;
    Ok(u32::from_le_bytes([a[0], a[1], a[2], a[3]]))
}

/// Register the three programs over `data` (`elems` u32 words) and `out` (one u64).
fn register_programs(dev: &SimDevice, data: &Arc<HostRegion>, out: &Arc<HostRegion>, elems: usize) -> Result<[u64; 3]> {
    let d = data.clone();
    let fill = dev.register(4, move |args, _, _| {
        let v = arg_u32(args)?;
        let chunk = [v; CHUNK];
        for start in (0..elems).step_by(CHUNK) {
            let n = CHUNK.min(elems - start);
            write_u32s(&d, start * 4, &chunk[..n])?;
        }
        Ok(())
    })?;
    let d = data.clone();
    let scale = dev.register(4, move |args, _, _| {
        let f = arg_u32(args)?;
        let mut buf = [0u32; CHUNK];
        for start in (0..elems).step_by(CHUNK) {
            let n = CHUNK.min(elems - start);
            read_u32s(&d, start * 4, &mut buf[..n])?;
            for w in &mut buf[..n] {
                *w = w.wrapping_mul(f);
            }
            write_u32s(&d, start * 4, &buf[..n])?;
        }
        Ok(())
    })?;
    let (d, o) = (data.clone(), out.clone());
    let reduce = dev.register(0, move |_, _, _| {
        let mut buf = [0u32; CHUNK];
        let mut sum = 0u64;
        for start in (0..elems).step_by(CHUNK) {
            let n = CHUNK.min(elems - start);
            read_u32s(&d, start * 4, &mut buf[..n])?;
            sum += buf[..n].iter().map(|&w| u64::from(w)).sum::<u64>();
        }
        o.write_bytes(0, &sum.to_le_bytes())
    })?;
    Ok([fill, scale, reduce])
}

/// Run [`PROGRAMS`] `rounds` times over a buffer of `elems` u32 words on `dev` with profiling
/// on, and export the profile. Round `r` fills the buffer with `r + 1`, scales it by 3 and sums
/// it, so the final [`ProfileRun::sum`] is `3 * rounds * elems`.
///
/// Errors: `rounds` or `elems` of 0 ([`Error::InvalidArgument`]), and any device error (a fault,
/// a timeout) of the run.
pub fn profile_run(dev: &SimDevice, rounds: u32, elems: usize) -> Result<ProfileRun> {
    if rounds == 0 {
        return Err(Error::InvalidArgument { what: "profile_run rounds (at least 1)", value: 0 });
    }
    if elems == 0 {
        return Err(Error::InvalidArgument { what: "profile_run elements (at least 1)", value: 0 });
    }
    let hcq = dev.engine();
    let prof = hcq.profiler();
    prof.set_enabled(true);
    let bytes =
        elems.checked_mul(4).ok_or(Error::InvalidArgument { what: "profile_run elems", value: elems as u64 })?;
    let mut alloc_events = 0;
    let mut alloc = |name: &str, len: usize| -> Result<Arc<HostRegion>> {
        let r = dev.alloc(len)?;
        let t = soft_clock_ns();
        prof.record(Event { kind: EventKind::Alloc, name: prof.intern(name), start_ns: t, end_ns: t, arg: len as u64 });
        alloc_events += 1;
        Ok(r)
    };
    let data = alloc("data", bytes)?;
    let out = alloc("out", 8)?;
    let progs = register_programs(dev, &data, &out, elems)?;
    let names = PROGRAMS.map(|n| prof.intern(n));

    // two timestamp signals per exec, and the timeline value of each round
    let mut marks: Vec<(usize, OwnedSignal, OwnedSignal, u64)> = Vec::with_capacity(rounds as usize * PROGRAMS.len());
    let result = (|| -> Result<()> {
        for r in 0..rounds {
            let mut s = hcq.lock();
            let ka_fill = s.kernargs(&(r + 1).to_le_bytes(), 4, 16)?;
            let ka_scale = s.kernargs(&3u32.to_le_bytes(), 4, 16)?;
            let args = [ka_fill, ka_scale, 0];
            let mut q = hcq.queue()?;
            let value = s.next_value().get();
            for (p, (&prog, &ka)) in progs.iter().zip(&args).enumerate() {
                let (before, after) = (HOST_SIGNALS.alloc(0), HOST_SIGNALS.alloc(0));
                q.timestamp(&before)?.exec(prog, ka, [1; 3], [1; 3])?.timestamp(&after)?;
                marks.push((p, before, after, value));
            }
            // SAFETY: the execs run the host functions registered above, which read their 4-byte
            // argument blocks and write `data` and `out` (kept alive by the functions
            // themselves); the timestamps go to slots owned here, kept until the end.
            unsafe { s.submit(0, &mut q)? };
        }
        hcq.synchronize()
    })();
    if result.is_ok() {
        for (p, before, after, value) in &marks {
            let ev = Event {
                kind: EventKind::Program,
                name: names[*p],
                start_ns: before.timestamp(),
                end_ns: after.timestamp(),
                arg: *value,
            };
            prof.record(ev);
        }
    }
    let program_events = marks.len();
    // the slots go back to the pool
    drop(marks);
    result?;
    let mut sum = [0u8; 8];
    out.read_bytes(0, &mut sum)?;
    let device = hcq.timeline().device().as_str();
    Ok(ProfileRun {
        trace_json: chrome::trace_json(&[(device, prof)]),
        summary: prof.summary_table(),
        program_events,
        alloc_events,
        sum: u64::from_le_bytes(sum),
    })
}
