//! `vgt_event_type` values used with `CP_EVENT_WRITE` on a6xx (Mesa `adreno_pm4.xml`).
//!
//! The numbering is per generation: `CACHE_INVALIDATE` is 49 only on A6XX (A7XX reuses 49 for
//! `CACHE_CLEAN`), and `CACHE_FLUSH` (6) is A2XX-A4XX only, so a6xx flushes with
//! `CACHE_FLUSH_TS`.

/// `CACHE_FLUSH_TS`: flush UCHE and write the packet's value (or a timestamp) when retired.
pub const CACHE_FLUSH_TS: u32 = 4;
/// `CACHE_INVALIDATE` (A6XX only).
pub const CACHE_INVALIDATE: u32 = 49;

/// `(name, value)` of every event above, for the XML cross-check.
pub const ALL: &[(&str, u32)] = &[("CACHE_FLUSH_TS", CACHE_FLUSH_TS), ("CACHE_INVALIDATE", CACHE_INVALIDATE)];
