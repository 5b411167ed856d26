//! Range-based hazard tracking between device operations.
//!
//! [`DepsTracker`] answers "what must this operation wait for?" from the byte ranges it reads
//! and writes, in the design of tinygrad's `DepsTracker`: per base buffer (a `u64` key chosen by
//! the caller) it remembers which operation last wrote each byte range and which operations read
//! it since. A new operation waits for
//! - every earlier writer of a range it touches (read-after-write, and write-after-write), and
//! - for the ranges it writes, every earlier reader (write-after-read).
//!
//! A dependency `D` is whatever the caller waits on: a `(queue, timeline value)` pair, a signal
//! index, a graph node id. The tracker never orders or compares dependencies beyond equality,
//! so it cannot tell that one dependency implies another; callers that know (a timeline signal
//! passed a value) drop finished dependencies with [`DepsTracker::retain`]. Without that, the
//! readers of a buffer that is never written again accumulate, as in tinygrad.
//!
//! Differences from tinygrad: empty ranges (`start == end`) are ignored entirely, and inverted
//! ranges (`start > end`) are an error instead of silently matching nothing.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::{Error, Result};

/// One byte range an operation touches: `[start, end)` of the base buffer `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// The base buffer (sub-buffers of one allocation share it; offsets are from its start).
    pub key: u64,
    /// First byte touched.
    pub start: u64,
    /// One past the last byte touched.
    pub end: u64,
    /// Whether the operation writes the range (else it only reads it).
    pub write: bool,
}

impl Access {
    /// A read of `[start, end)` of buffer `key`.
    pub const fn read(key: u64, start: u64, end: u64) -> Self {
        Access { key, start, end, write: false }
    }

    /// A write (or read-modify-write) of `[start, end)` of buffer `key`.
    pub const fn write(key: u64, start: u64, end: u64) -> Self {
        Access { key, start, end, write: true }
    }
}

#[derive(Clone, Debug)]
struct Interval<D> {
    start: u64,
    end: u64,
    dep: D,
}

/// How far back from the first interval starting at or after `s` an overlap can hide.
#[derive(Clone, Copy)]
enum Reach {
    /// Intervals are disjoint: only the one just before can reach past `s`.
    Disjoint,
    /// Intervals may overlap; none is longer than this.
    MaxLen(u64),
}

/// The intervals of one base buffer, each list sorted by start.
#[derive(Clone, Debug)]
struct Ranges<D> {
    /// Last writer of each range; disjoint, since a write cuts every interval it covers.
    writes: Vec<Interval<D>>,
    /// Readers since the last write of their range; may overlap each other.
    reads: Vec<Interval<D>>,
    /// No read interval is longer than this (0 when there are none).
    max_read_len: u64,
}

impl<D> Ranges<D> {
    const fn new() -> Self {
        Ranges { writes: Vec::new(), reads: Vec::new(), max_read_len: 0 }
    }
}

/// Index of the first interval that may overlap `[s, e)`, given `i_s`, the first one starting at
/// or after `s`. Intervals in `[result, i_s)` still need an `end > s` check.
fn first_candidate<D>(list: &[Interval<D>], s: u64, i_s: usize, reach: Reach) -> usize {
    match reach {
        Reach::Disjoint => match i_s.checked_sub(1).and_then(|i| list.get(i)) {
            Some(iv) if iv.end > s => i_s - 1,
            _ => i_s,
        },
        Reach::MaxLen(max) => {
            let mut lo = i_s;
            // Entries before `i_s` start below `s`; one starting `max` or more before `s` ends
            // at or before `s`.
            while let Some(iv) = lo.checked_sub(1).and_then(|i| list.get(i)) {
                if s - iv.start >= max {
                    break;
                }
                lo -= 1;
            }
            lo
        }
    }
}

/// Append (once) the dependency of every interval of `list` overlapping `[s, e)` to `out`.
fn collect_overlapping<D: Clone + PartialEq>(list: &[Interval<D>], s: u64, e: u64, reach: Reach, out: &mut Vec<D>) {
    let i_s = list.partition_point(|iv| iv.start < s);
    let i_e = list.partition_point(|iv| iv.start < e);
    let lo = first_candidate(list, s, i_s, reach);
    for iv in list.get(lo..i_e).unwrap_or_default() {
        if iv.end > s && !out.contains(&iv.dep) {
            out.push(iv.dep.clone());
        }
    }
}

/// Cut `[s, e)` out of every interval of `list`, keeping the pieces outside it, and put
/// `insert` (an interval starting at `s`, if any) in its sorted place. `scratch` is empty on
/// entry and on return.
fn cut<D: Clone>(
    list: &mut Vec<Interval<D>>,
    s: u64,
    e: u64,
    reach: Reach,
    insert: Option<Interval<D>>,
    scratch: &mut Vec<Interval<D>>,
) {
    let i_s = list.partition_point(|iv| iv.start < s);
    let i_e = list.partition_point(|iv| iv.start < e);
    let lo = first_candidate(list, s, i_s, reach);
    scratch.extend(insert);
    // Intervals starting before `s` keep their head; a tail past `e` becomes a new interval.
    for iv in list.get_mut(lo..i_s).unwrap_or_default() {
        if iv.end > s {
            if iv.end > e {
                scratch.push(Interval { start: e, end: iv.end, dep: iv.dep.clone() });
            }
            iv.end = s;
        }
    }
    // Intervals starting inside `[s, e)` keep only their tail past `e`.
    for iv in list.get(i_s..i_e).unwrap_or_default() {
        if iv.end > e {
            scratch.push(Interval { start: e, end: iv.end, dep: iv.dep.clone() });
        }
    }
    if scratch.is_empty() && i_s == i_e {
        return;
    }
    // Everything in `scratch` starts at `s` (the insert) or `e` (tails): it belongs exactly
    // where `[i_s, i_e)` was. `Drain` reports its exact length, so splicing allocates nothing
    // beyond growing `list`.
    list.splice(i_s..i_e, scratch.drain(..));
}

/// Tracks which earlier operations a new operation must wait for, by byte range. See the
/// [module docs](self).
///
/// Cost of [`access`](Self::access) per range touched: two binary searches per list plus the
/// overlapping intervals, plus moving the tail of the list when the number of intervals
/// changes. Read intervals may overlap, so finding those that start before a range and reach
/// into it scans back over intervals that start less than the longest read interval earlier.
/// In steady state (interval counts not growing) nothing is allocated.
#[derive(Clone, Debug)]
pub struct DepsTracker<D> {
    buffers: BTreeMap<u64, Ranges<D>>,
    scratch: Vec<Interval<D>>,
}

impl<D> Default for DepsTracker<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D> DepsTracker<D> {
    /// A tracker that knows of no earlier operation.
    pub const fn new() -> Self {
        DepsTracker { buffers: BTreeMap::new(), scratch: Vec::new() }
    }

    /// Forget everything (as after a full device synchronisation).
    pub fn clear(&mut self) {
        self.buffers.clear();
    }

    /// Forget everything about buffer `key` (it was freed, or is known idle).
    pub fn forget(&mut self, key: u64) {
        self.buffers.remove(&key);
    }

    /// Number of read and write intervals remembered, over all buffers.
    pub fn live_ranges(&self) -> usize {
        self.buffers.values().map(|r| r.writes.len() + r.reads.len()).sum()
    }

    /// Number of buffers with remembered intervals.
    pub fn buffers(&self) -> usize {
        self.buffers.len()
    }

    /// Keep only the intervals whose dependency satisfies `keep`; drop the rest (their
    /// operations finished, so nothing needs to wait for them). Buffers left without intervals
    /// are forgotten.
    pub fn retain(&mut self, mut keep: impl FnMut(&D) -> bool) {
        self.buffers.retain(|_, r| {
            r.writes.retain(|iv| keep(&iv.dep));
            r.reads.retain(|iv| keep(&iv.dep));
            if r.reads.is_empty() {
                r.max_read_len = 0;
            }
            !(r.writes.is_empty() && r.reads.is_empty())
        });
    }
}

impl<D: Clone + PartialEq> DepsTracker<D> {
    /// Record an operation `new_dep` that makes `accesses`, and append to `out` what it must wait
    /// for: the writer of every range overlapping any access, and the readers of every range
    /// overlapping a write. Each dependency is appended at most once, and not at all if `out`
    /// already holds it; order is first occurrence.
    ///
    /// All waits are computed from the state before the call, so accesses of one operation do
    /// not depend on each other. Then, in order, each write cuts its range out of the earlier
    /// read and write intervals and becomes the range's writer, and each read adds a reader
    /// interval (an identical reader interval with an equal dependency is not added twice).
    ///
    /// Empty accesses (`start == end`) are ignored. Errors: [`Error::InvalidArgument`] with the
    /// access's `start` if any access has `start > end`; then nothing is recorded and `out` is
    /// unchanged.
    pub fn access(&mut self, accesses: &[Access], new_dep: D, out: &mut Vec<D>) -> Result<()> {
        if let Some(bad) = accesses.iter().find(|a| a.start > a.end) {
            return Err(Error::InvalidArgument {
                what: "deps tracker: access range ends before it starts",
                value: bad.start,
            });
        }
        for a in accesses {
            if a.start == a.end {
                continue;
            }
            let Some(r) = self.buffers.get(&a.key) else { continue };
            collect_overlapping(&r.writes, a.start, a.end, Reach::Disjoint, out);
            if a.write {
                collect_overlapping(&r.reads, a.start, a.end, Reach::MaxLen(r.max_read_len), out);
            }
        }
        for a in accesses {
            let (s, e) = (a.start, a.end);
            if s == e {
                continue;
            }
            let r = self.buffers.entry(a.key).or_insert_with(Ranges::new);
            if a.write {
                let mine = Interval { start: s, end: e, dep: new_dep.clone() };
                cut(&mut r.writes, s, e, Reach::Disjoint, Some(mine), &mut self.scratch);
                cut(&mut r.reads, s, e, Reach::MaxLen(r.max_read_len), None, &mut self.scratch);
                if r.reads.is_empty() {
                    r.max_read_len = 0;
                }
            } else {
                let at = r.reads.partition_point(|iv| iv.start <= s);
                let same = r.reads.get(..at).unwrap_or_default().iter().rev().take_while(|iv| iv.start == s);
                if same.clone().any(|iv| iv.end == e && iv.dep == new_dep) {
                    continue;
                }
                r.reads.insert(at, Interval { start: s, end: e, dep: new_dep.clone() });
                r.max_read_len = r.max_read_len.max(e - s);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn deps(t: &mut DepsTracker<u32>, acc: &[Access], dep: u32) -> Vec<u32> {
        let mut out = Vec::new();
        t.access(acc, dep, &mut out).unwrap();
        out
    }

    #[test]
    fn read_after_write_waits_for_the_writer_only_where_ranges_overlap() {
        let mut t = DepsTracker::new();
        assert!(deps(&mut t, &[Access::write(1, 0, 100)], 1).is_empty());
        assert_eq!(deps(&mut t, &[Access::read(1, 99, 200)], 2), vec![1]);
        assert!(deps(&mut t, &[Access::read(1, 100, 200)], 3).is_empty(), "adjacent is not overlapping");
        assert!(deps(&mut t, &[Access::read(2, 0, 100)], 4).is_empty(), "other buffer");
    }

    #[test]
    fn write_after_read_waits_for_all_overlapping_readers_and_the_writer() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::write(1, 0, 64)], 1);
        deps(&mut t, &[Access::read(1, 0, 32)], 2);
        deps(&mut t, &[Access::read(1, 16, 64)], 3);
        deps(&mut t, &[Access::read(1, 40, 48)], 4);
        let mut w = deps(&mut t, &[Access::write(1, 20, 30)], 5);
        w.sort();
        assert_eq!(w, vec![1, 2, 3]);
        // a read does not wait for readers
        assert_eq!(deps(&mut t, &[Access::read(1, 40, 48)], 6), vec![1]);
    }

    #[test]
    fn write_after_write_waits_for_the_previous_writer_and_replaces_it() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::write(1, 0, 64)], 1);
        assert_eq!(deps(&mut t, &[Access::write(1, 0, 64)], 2), vec![1]);
        assert_eq!(deps(&mut t, &[Access::read(1, 0, 64)], 3), vec![2]);
        assert_eq!(t.live_ranges(), 2);
    }

    #[test]
    fn write_in_the_middle_splits_a_read_range() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::read(1, 0, 100)], 1);
        assert_eq!(deps(&mut t, &[Access::write(1, 40, 60)], 2), vec![1]);
        // both outer pieces of the read keep their reader, the middle is now written by 2
        let mut w = deps(&mut t, &[Access::write(1, 30, 70)], 3);
        w.sort();
        assert_eq!(w, vec![1, 2]);
        assert_eq!(deps(&mut t, &[Access::write(1, 0, 10)], 4), vec![1]);
        assert_eq!(deps(&mut t, &[Access::write(1, 90, 100)], 5), vec![1]);
        assert_eq!(deps(&mut t, &[Access::write(1, 10, 30)], 6), vec![1]);
        assert_eq!(deps(&mut t, &[Access::write(1, 75, 85)], 7), vec![1]);
        // the middle [30, 70) has no reader left: only its writer 3 is waited for
        assert_eq!(deps(&mut t, &[Access::write(1, 30, 70)], 8), vec![3]);
    }

    #[test]
    fn write_in_the_middle_splits_a_write_range() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::write(1, 0, 100)], 1);
        deps(&mut t, &[Access::write(1, 40, 60)], 2);
        assert_eq!(t.live_ranges(), 3);
        assert_eq!(deps(&mut t, &[Access::read(1, 0, 40)], 3), vec![1]);
        assert_eq!(deps(&mut t, &[Access::read(1, 45, 50)], 4), vec![2]);
        assert_eq!(deps(&mut t, &[Access::read(1, 60, 61)], 5), vec![1]);
    }

    #[test]
    fn dependencies_are_deduplicated_in_first_occurrence_order() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::write(1, 0, 10), Access::write(1, 20, 30), Access::write(2, 0, 10)], 7);
        deps(&mut t, &[Access::write(3, 0, 10)], 8);
        let d = deps(&mut t, &[Access::read(3, 0, 1), Access::read(1, 0, 30), Access::read(2, 0, 10)], 9);
        assert_eq!(d, vec![8, 7]);
        // a dependency already in `out` is not appended again
        let mut out = vec![7];
        t.access(&[Access::write(1, 0, 30)], 10, &mut out).unwrap();
        assert_eq!(out, vec![7, 9]);
    }

    #[test]
    fn accesses_of_one_call_do_not_depend_on_each_other() {
        let mut t = DepsTracker::new();
        assert!(deps(&mut t, &[Access::write(1, 0, 10), Access::read(1, 0, 10)], 1).is_empty());
        // both the write and the read were recorded
        assert_eq!(deps(&mut t, &[Access::write(1, 0, 10)], 2), vec![1]);
    }

    #[test]
    fn identical_reads_are_recorded_once() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::read(1, 0, 10), Access::read(1, 0, 10)], 1);
        deps(&mut t, &[Access::read(1, 0, 10)], 1);
        assert_eq!(t.live_ranges(), 1);
        deps(&mut t, &[Access::read(1, 0, 10)], 2);
        assert_eq!(t.live_ranges(), 2);
    }

    #[test]
    fn empty_ranges_are_ignored_and_inverted_ranges_rejected() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::write(1, 0, 10)], 1);
        assert!(deps(&mut t, &[Access::write(1, 5, 5)], 2).is_empty());
        assert_eq!(t.live_ranges(), 1);
        let mut out = Vec::new();
        let e = t.access(&[Access::read(1, 0, 10), Access::write(1, 9, 3)], 3, &mut out).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { value: 9, .. }));
        assert!(out.is_empty());
        assert_eq!(t.live_ranges(), 1, "nothing recorded on error");
    }

    #[test]
    fn clear_forget_and_retain_drop_state() {
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::write(1, 0, 10), Access::write(2, 0, 10)], 1);
        deps(&mut t, &[Access::read(1, 0, 10), Access::read(2, 0, 10)], 2);
        t.forget(1);
        assert!(deps(&mut t, &[Access::write(1, 0, 10)], 3).is_empty());
        t.retain(|&d| d != 2);
        assert_eq!(deps(&mut t, &[Access::write(2, 0, 10)], 4), vec![1]);
        t.retain(|&d| d > 3);
        assert_eq!(t.buffers(), 1);
        t.clear();
        assert_eq!((t.live_ranges(), t.buffers()), (0, 0));
    }

    #[test]
    fn long_read_before_short_reads_is_still_found() {
        // A long read that starts well before later short reads must still be seen by a write
        // at the far end (exercises the backward scan bounded by the longest read).
        let mut t = DepsTracker::new();
        deps(&mut t, &[Access::read(1, 0, 1000)], 1);
        for i in 0..20u32 {
            let s = 100 + u64::from(i) * 10;
            deps(&mut t, &[Access::read(1, s, s + 5)], 10 + i);
        }
        assert_eq!(deps(&mut t, &[Access::write(1, 900, 901)], 99), vec![1]);
    }

    /// Byte-level reference: per byte, the last writer and the readers since.
    #[derive(Clone, Default)]
    struct Model {
        writer: Vec<Option<u32>>,
        readers: Vec<Vec<u32>>,
    }

    const KEYS: u64 = 2;
    const SPACE: u64 = 48;

    impl Model {
        fn new() -> Self {
            let n = (KEYS * SPACE) as usize;
            Model { writer: vec![None; n], readers: vec![Vec::new(); n] }
        }
        fn access(&mut self, acc: &[Access], dep: u32) -> Vec<u32> {
            let mut out = Vec::new();
            for a in acc {
                for b in a.start..a.end {
                    let i = (a.key * SPACE + b) as usize;
                    out.extend(self.writer[i]);
                    if a.write {
                        out.extend(self.readers[i].iter().copied());
                    }
                }
            }
            for a in acc {
                for b in a.start..a.end {
                    let i = (a.key * SPACE + b) as usize;
                    if a.write {
                        self.writer[i] = Some(dep);
                        self.readers[i].clear();
                    } else {
                        self.readers[i].push(dep);
                    }
                }
            }
            out.sort();
            out.dedup();
            out
        }
    }

    fn access() -> impl Strategy<Value = Access> {
        (0..KEYS, 0..SPACE, 0..SPACE, any::<bool>()).prop_map(|(key, a, b, write)| Access {
            key,
            start: a.min(b),
            end: a.max(b) + u64::from(a == b && a % 3 == 0),
            write,
        })
    }

    /// Proptest settings; Miri runs few cases and cannot persist failures (no file system).
    fn config(cases: u32) -> ProptestConfig {
        let mut c = ProptestConfig::with_cases(cases);
        if cfg!(miri) {
            c.failure_persistence = None;
        }
        c
    }

    proptest! {
        #![proptest_config(config(if cfg!(miri) { 3 } else { 256 }))]

        /// The tracker returns exactly the dependencies a byte-level model finds, without
        /// duplicates, for random sequences of multi-access operations.
        #[test]
        fn matches_a_byte_level_model(
            ops in proptest::collection::vec(proptest::collection::vec(access(), 1..4), 1..if cfg!(miri) { 12 } else { 60 }),
            retain_every in 0usize..8,
        ) {
            let mut t = DepsTracker::new();
            let mut m = Model::new();
            for (i, acc) in ops.iter().enumerate() {
                let dep = i as u32;
                let mut got = Vec::new();
                t.access(acc, dep, &mut got).unwrap();
                let mut sorted = got.clone();
                sorted.sort();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), got.len(), "duplicates in {:?}", got);
                prop_assert_eq!(sorted, m.access(acc, dep));
                // Now and then drop old dependencies in both.
                if retain_every > 0 && i % retain_every == 0 {
                    let cut = dep / 2;
                    t.retain(|&d| d >= cut);
                    for w in &mut m.writer {
                        if w.is_some_and(|d| d < cut) {
                            *w = None;
                        }
                    }
                    for r in &mut m.readers {
                        r.retain(|&d| d >= cut);
                    }
                }
            }
        }
    }
}
