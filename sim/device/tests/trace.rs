//! The profiled SIM run (the `trace` example's logic) produces a Chrome trace with the events
//! it recorded: one process for the device, the allocations, and one complete event per program
//! execution, in execution order, each with a positive duration.

use hcq::error::Error;
use hcq_sim::SimDevice;
use hcq_sim::trace::{PROGRAMS, profile_run};
use serde_json::Value;

const ROUNDS: u32 = 4;
const ELEMS: usize = 4096;

fn events<'a>(trace: &'a Value, cat: &str) -> Vec<&'a Value> {
    trace["traceEvents"].as_array().expect("traceEvents is an array").iter().filter(|e| e["cat"] == cat).collect()
}

/// Microseconds with three decimals in the trace → integer nanoseconds.
fn ns(v: &Value) -> u64 {
    (v.as_f64().expect("a number") * 1e3).round() as u64
}

#[test]
fn a_profiled_run_exports_program_and_alloc_events_in_order() {
    let dev = SimDevice::with_defaults("SIM:2").unwrap();
    let run = profile_run(&dev, ROUNDS, ELEMS).unwrap();
    assert_eq!(run.sum, 3 * u64::from(ROUNDS) * ELEMS as u64, "the programs really ran");
    assert_eq!(run.program_events, ROUNDS as usize * PROGRAMS.len());
    assert_eq!(run.alloc_events, 2);

    let trace: Value = serde_json::from_str(&run.trace_json).expect("the trace is valid JSON");
    let all = trace["traceEvents"].as_array().unwrap();
    let meta: Vec<_> = all.iter().filter(|e| e["ph"] == "M").collect();
    assert_eq!(meta.len(), 1);
    assert_eq!(meta[0]["args"]["name"], "SIM:2", "one process, named after the device");

    let allocs = events(&trace, "alloc");
    let alloc_view: Vec<(&str, u64, &str)> = allocs
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["args"]["arg"].as_u64().unwrap(), e["ph"].as_str().unwrap()))
        .collect();
    assert_eq!(alloc_view, [("data", ELEMS as u64 * 4, "i"), ("out", 8, "i")], "instant events with their sizes");

    let progs = events(&trace, "program");
    assert_eq!(progs.len(), ROUNDS as usize * PROGRAMS.len());
    let mut prev_end = 0u64;
    for (i, e) in progs.iter().enumerate() {
        assert_eq!(e["ph"], "X", "a complete event");
        assert_eq!(e["name"], PROGRAMS[i % PROGRAMS.len()], "event {i}: programs in the order they ran");
        // the timeline value of the submission: one per round, from 1
        assert_eq!(e["args"]["arg"].as_u64(), Some((i / PROGRAMS.len()) as u64 + 1));
        let (ts, dur) = (ns(&e["ts"]), ns(&e["dur"]));
        assert!(dur > 0, "event {i} ({}) has a positive duration", e["name"]);
        assert!(ts >= prev_end, "event {i} starts at {ts} ns, before the previous one ended at {prev_end} ns");
        prev_end = ts + dur;
    }
    // allocations happened before anything ran
    assert!(allocs.iter().all(|a| ns(&a["ts"]) <= ns(&progs[0]["ts"])));

    for name in PROGRAMS {
        let row = run.summary.lines().find(|l| l.split_whitespace().next() == Some(name));
        let row = row.unwrap_or_else(|| panic!("{name} missing from the summary:\n{}", run.summary));
        assert_eq!(row.split_whitespace().nth(1), Some(ROUNDS.to_string().as_str()), "{name} ran {ROUNDS} times");
    }
}

#[test]
fn a_profiled_run_rejects_empty_work() {
    let dev = SimDevice::with_defaults("SIM").unwrap();
    assert!(matches!(profile_run(&dev, 0, 16), Err(Error::InvalidArgument { .. })));
    assert!(matches!(profile_run(&dev, 1, 0), Err(Error::InvalidArgument { .. })));
}
