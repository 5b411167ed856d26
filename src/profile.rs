//! Profiling: a fixed-size ring of events per device, exported (with `std`) as Chrome trace JSON
//! that <https://ui.perfetto.dev> opens, plus a per-program summary table.
//!
//! Events are small `Copy` records; names are interned once ([`Profiler::intern`]) so recording
//! allocates nothing. When the ring is full the oldest events are overwritten and counted in
//! [`Profiler::dropped`].

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// What an event describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A program ran from `start` to `end` (device timestamps).
    Program,
    /// A copy ran.
    Copy,
    /// A buffer was allocated (`arg` = bytes).
    Alloc,
    /// A buffer was freed (`arg` = bytes).
    Free,
    /// The host waited on a signal (host time).
    Wait,
    /// A whole call of a graph or bundle (host time).
    Call,
}

impl EventKind {
    /// Short name used in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Program => "program",
            EventKind::Copy => "copy",
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
            EventKind::Wait => "wait",
            EventKind::Call => "call",
        }
    }
}

/// One profile event. Times are nanoseconds on the device's clock (soft devices: host clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Kind.
    pub kind: EventKind,
    /// Interned name ([`Profiler::name`]).
    pub name: u32,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns (== start for point events).
    pub end_ns: u64,
    /// Kind-specific argument (bytes, timeline value).
    pub arg: u64,
}

struct Ring {
    events: Vec<Event>,
    next: usize,
    len: usize,
    dropped: u64,
}

/// A device's profile: an event ring and a name table.
pub struct Profiler {
    enabled: crate::sync::AtomicBool,
    ring: spin::Mutex<Ring>,
    names: spin::Mutex<Vec<Arc<str>>>,
    capacity: usize,
}

impl core::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Profiler").field("enabled", &self.is_enabled()).field("capacity", &self.capacity).finish()
    }
}

impl Profiler {
    /// A disabled profiler with room for `capacity` events (allocated on first enable).
    pub fn new(capacity: usize) -> Self {
        Self {
            enabled: crate::sync::AtomicBool::new(false),
            ring: spin::Mutex::new(Ring { events: Vec::new(), next: 0, len: 0, dropped: 0 }),
            names: spin::Mutex::new(Vec::new()),
            capacity: capacity.max(1),
        }
    }

    /// Start or stop recording.
    pub fn set_enabled(&self, on: bool) {
        if on {
            let mut r = self.ring.lock();
            if r.events.len() < self.capacity {
                let fill = Event { kind: EventKind::Call, name: 0, start_ns: 0, end_ns: 0, arg: 0 };
                r.events.resize(self.capacity, fill);
            }
        }
        self.enabled.store(on, crate::sync::Ordering::Release);
    }

    /// True while recording.
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(crate::sync::Ordering::Relaxed)
    }

    /// Intern a name; the same name gives the same id.
    pub fn intern(&self, name: &str) -> u32 {
        let mut names = self.names.lock();
        if let Some(i) = names.iter().position(|n| &**n == name) {
            return i as u32;
        }
        names.push(Arc::from(name));
        (names.len() - 1) as u32
    }

    /// The name behind an id.
    pub fn name(&self, id: u32) -> Option<Arc<str>> {
        self.names.lock().get(id as usize).cloned()
    }

    /// Record an event (no-op while disabled). Allocates nothing.
    pub fn record(&self, ev: Event) {
        if !self.is_enabled() {
            return;
        }
        let mut r = self.ring.lock();
        let cap = r.events.len();
        if cap == 0 {
            return;
        }
        let i = r.next;
        if let Some(slot) = r.events.get_mut(i) {
            *slot = ev;
        }
        r.next = (i + 1) % cap;
        if r.len == cap {
            r.dropped += 1;
        } else {
            r.len += 1;
        }
    }

    /// Events overwritten because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.ring.lock().dropped
    }

    /// The recorded events, oldest first.
    pub fn events(&self) -> Vec<Event> {
        let r = self.ring.lock();
        let cap = r.events.len();
        let start = (r.next + cap - r.len) % cap.max(1);
        (0..r.len).map(|k| r.events[(start + k) % cap]).collect()
    }

    /// Forget all events (names stay).
    pub fn clear(&self) {
        let mut r = self.ring.lock();
        r.next = 0;
        r.len = 0;
        r.dropped = 0;
    }

    /// Per-name totals of [`EventKind::Program`] and [`EventKind::Copy`] events:
    /// `(name, count, total_ns)`, largest total first.
    pub fn summary(&self) -> Vec<(Arc<str>, u64, u64)> {
        let mut rows: Vec<(u32, u64, u64)> = Vec::new();
        for e in self.events() {
            if !matches!(e.kind, EventKind::Program | EventKind::Copy) {
                continue;
            }
            let d = e.end_ns.saturating_sub(e.start_ns);
            match rows.iter_mut().find(|r| r.0 == e.name) {
                Some(r) => {
                    r.1 += 1;
                    r.2 += d;
                }
                None => rows.push((e.name, 1, d)),
            }
        }
        rows.sort_by_key(|r| core::cmp::Reverse(r.2));
        rows.into_iter().map(|(n, c, t)| (self.name(n).unwrap_or_else(|| Arc::from("?")), c, t)).collect()
    }

    /// The summary as a text table: name, count, total µs, mean µs.
    pub fn summary_table(&self) -> String {
        use core::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "{:<32} {:>8} {:>12} {:>10}", "program", "count", "total us", "mean us");
        for (name, count, total) in self.summary() {
            let _ = writeln!(
                s,
                "{:<32} {:>8} {:>12.3} {:>10.3}",
                name,
                count,
                total as f64 / 1e3,
                total as f64 / 1e3 / count as f64
            );
        }
        s
    }
}

/// Chrome trace export (the JSON Perfetto and chrome://tracing open).
#[cfg(feature = "std")]
pub mod chrome {
    use super::*;
    use core::fmt::Write;

    fn escape(s: &str, out: &mut String) {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
    }

    /// A trace of several devices' profiles: `(device name, profiler)` pairs, one process per
    /// device, one thread per event kind. Times become microseconds relative to the earliest
    /// event.
    pub fn trace_json(devices: &[(&str, &Profiler)]) -> String {
        let all: Vec<(usize, Vec<Event>)> = devices.iter().enumerate().map(|(i, (_, p))| (i, p.events())).collect();
        let t0 = all.iter().flat_map(|(_, evs)| evs.iter().map(|e| e.start_ns)).min().unwrap_or(0);
        let mut out = String::from("{\"traceEvents\":[");
        let mut first = true;
        for (pid, (dev, _)) in devices.iter().enumerate() {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
            let _ = write!(out, "{pid},\"args\":{{\"name\":\"");
            escape(dev, &mut out);
            out.push_str("\"}}");
        }
        for (pid, evs) in &all {
            let prof = devices[*pid].1;
            for e in evs {
                let name = prof.name(e.name).unwrap_or_else(|| Arc::from("?"));
                out.push_str(",{\"name\":\"");
                escape(&name, &mut out);
                let ts = (e.start_ns - t0) as f64 / 1e3;
                let dur = e.end_ns.saturating_sub(e.start_ns) as f64 / 1e3;
                let ph = if matches!(e.kind, EventKind::Alloc | EventKind::Free) { "i" } else { "X" };
                let _ = write!(
                    out,
                    "\",\"cat\":\"{}\",\"ph\":\"{}\",\"ts\":{:.3},\"dur\":{:.3},\"pid\":{},\"tid\":\"{}\",\"args\":{{\"arg\":{}}}}}",
                    e.kind.as_str(),
                    ph,
                    ts,
                    dur,
                    pid,
                    e.kind.as_str(),
                    e.arg
                );
                if ph == "i" {
                    // instant events carry a scope instead of a duration
                    out.truncate(out.len() - 1);
                    out.push_str(",\"s\":\"t\"}");
                }
            }
        }
        out.push_str("],\"displayTimeUnit\":\"ns\"}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: u32, st: u64, en: u64) -> Event {
        Event { kind: EventKind::Program, name, start_ns: st, end_ns: en, arg: 0 }
    }

    #[test]
    fn disabled_profiler_records_nothing() {
        let p = Profiler::new(4);
        p.record(ev(0, 0, 1));
        assert!(p.events().is_empty());
    }

    #[test]
    fn full_ring_overwrites_oldest_and_counts_drops() {
        let p = Profiler::new(3);
        p.set_enabled(true);
        for i in 0..5 {
            p.record(ev(0, i, i + 1));
        }
        let starts: Vec<u64> = p.events().iter().map(|e| e.start_ns).collect();
        assert_eq!(starts, [2, 3, 4]);
        assert_eq!(p.dropped(), 2);
    }

    #[test]
    fn summary_groups_by_name() {
        let p = Profiler::new(16);
        p.set_enabled(true);
        let a = p.intern("add");
        let b = p.intern("mul");
        assert_eq!(p.intern("add"), a);
        p.record(ev(a, 0, 100));
        p.record(ev(a, 200, 400));
        p.record(ev(b, 0, 1000));
        let s = p.summary();
        assert_eq!(&*s[0].0, "mul");
        assert_eq!((s[1].1, s[1].2), (2, 300));
        assert!(p.summary_table().contains("add"));
    }

    #[cfg(feature = "std")]
    #[test]
    fn chrome_trace_has_one_complete_event_per_record() {
        let p = Profiler::new(16);
        p.set_enabled(true);
        let a = p.intern("k\"1");
        p.record(ev(a, 1_000, 3_000));
        p.record(Event { kind: EventKind::Alloc, name: a, start_ns: 1_500, end_ns: 1_500, arg: 64 });
        let j = chrome::trace_json(&[("CPU", &p)]);
        assert!(j.starts_with("{\"traceEvents\":["));
        assert!(j.contains("\"name\":\"k\\\"1\",\"cat\":\"program\",\"ph\":\"X\",\"ts\":0.000,\"dur\":2.000"));
        assert!(j.contains("\"ph\":\"i\""));
    }
}
