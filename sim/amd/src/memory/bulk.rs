//! Bulk accesses: byte ranges of an allocation's words (what `Region`'s reads and writes do), and
//! copies between GPU ranges at host memory speed ([`MemView::copy`], the SDMA engine's
//! `COPY LINEAR`).
//!
//! # Why `AtomicU32` loads and stores, and no `memcpy`
//!
//! The words are shared: the host client, the CP thread and the shader threads reach them at the
//! same time, and a plain `memcpy` racing any of them would be a data race (undefined behaviour
//! in Rust's memory model, whatever the guest does). Every other access of these words is an
//! aligned `AtomicU32` access, so a copy uses the same: relaxed loads and stores of whole words in
//! a tight loop (a plain 32-bit `mov` each on x86-64; a word whose bytes start at another offset
//! in the source is two neighbouring words shifted together), and the compare-and-swap merge
//! `Region`'s writes use for the partial words at either end. `AtomicU64` would halve the
//! instructions but is not sound here: Rust (as C++) makes racing atomic accesses of different
//! sizes to the same bytes undefined, and a shader thread may be storing a dword of the same
//! bytes. The word loop is memory-bound on a large copy (within a few per cent of `memcpy`:
//! `benches/cp.rs` `sdma_copy_200mb` against `memcpy_200mb`), so nothing is lost that `unsafe`
//! would win back.
//!
//! Relaxed is enough for a copy: what the host wrote before ringing the doorbell is ordered
//! before the copy by the queue's acquire of its doorbell and packets, and the copy's stores are
//! ordered before whatever the queue writes next (its release of a fence or signal); the threads
//! of a spread copy join the queue's thread before it goes on. Inside one copy the hardware orders
//! nothing either.
//!
//! # Spreading
//!
//! A copy of at least [`SPREAD_MIN_BYTES`] is cut into [`SPREAD_CHUNK_BYTES`] pieces that the
//! calling thread and the shader core's kept pool claim from one counter (no thread is started
//! per copy). Only copies whose source and destination bytes are apart in host memory are cut or
//! copied directly (their result does not depend on the order bytes move in); bytes that overlap
//! — the same allocation, or two allocations of the same host pages — go through a buffer of
//! [`COPY_CHUNK_BYTES`] at a time, from the end down when asked or when the destination starts
//! inside the source, as the engine always copied: the result of every overlapping copy is the
//! one it was before copies went direct.

use super::{MemFault, MemView, Space};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes an overlapping copy moves per step (through a buffer).
pub const COPY_CHUNK_BYTES: usize = 1 << 20;
/// The smallest copy spread over the shader core's threads.
pub const SPREAD_MIN_BYTES: u64 = 8 << 20;
/// The pieces a spread copy is claimed in.
pub const SPREAD_CHUNK_BYTES: u64 = 4 << 20;

/// Bytes `[off, off + out.len())` of `words` (bytes from byte 0 of the first word), each word
/// loaded once with `order`. Bytes outside `words` are left as they are (callers pass ranges
/// inside).
#[inline]
pub(super) fn load_bytes(words: &[AtomicU32], off: usize, out: &mut [u8], order: Ordering) {
    let mut done = 0;
    // Up to the next word boundary.
    while done < out.len() && !(off + done).is_multiple_of(4) {
        let at = off + done;
        let (w, b) = (at / 4, at % 4);
        let n = (4 - b).min(out.len() - done);
        let Some(word) = words.get(w) else { return };
        let v = word.load(order).to_le_bytes();
        out[done..done + n].copy_from_slice(&v[b..b + n]);
        done += n;
    }
    // Whole words.
    let first = (off + done) / 4;
    let whole = (out.len() - done) / 4;
    if let Some(src) = words.get(first..first + whole) {
        for (o, w) in out[done..done + 4 * whole].chunks_exact_mut(4).zip(src) {
            o.copy_from_slice(&w.load(order).to_le_bytes());
        }
        done += 4 * whole;
    }
    // The tail.
    if done < out.len() {
        let Some(word) = words.get((off + done) / 4) else { return };
        let v = word.load(order).to_le_bytes();
        let n = out.len() - done;
        out[done..].copy_from_slice(&v[..n]);
    }
}

/// Store `data` at byte `off` of `words`: whole words with a store of `order`, the bytes of a
/// partial word merged in with a compare-and-swap (so a thread writing the word's other bytes at
/// the same time keeps its bytes). Bytes outside `words` are not written (callers pass ranges
/// inside).
#[inline]
pub(super) fn store_bytes(words: &[AtomicU32], off: usize, data: &[u8], order: Ordering) {
    let mut done = 0;
    while done < data.len() && !(off + done).is_multiple_of(4) {
        let at = off + done;
        let n = (4 - at % 4).min(data.len() - done);
        merge(words, at, &data[done..done + n]);
        done += n;
    }
    let first = (off + done) / 4;
    let whole = (data.len() - done) / 4;
    if let Some(dst) = words.get(first..first + whole) {
        for (d, w) in data[done..done + 4 * whole].chunks_exact(4).zip(dst) {
            w.store(u32::from_le_bytes([d[0], d[1], d[2], d[3]]), order);
        }
        done += 4 * whole;
    }
    if done < data.len() {
        merge(words, off + done, &data[done..]);
    }
}

/// Merge `data` (1 to 4 bytes inside one word) into the word holding byte `at`, with a
/// compare-and-swap.
#[inline]
fn merge(words: &[AtomicU32], at: usize, data: &[u8]) {
    let (w, b) = (at / 4, at % 4);
    let n = data.len().min(4 - b);
    let Some(word) = words.get(w) else { return };
    if n == 4 {
        word.store(u32::from_le_bytes([data[0], data[1], data[2], data[3]]), Ordering::Release);
        return;
    }
    let mut bytes = [0u8; 4];
    bytes[b..b + n].copy_from_slice(&data[..n]);
    let val = u32::from_le_bytes(bytes);
    // CAST: n ≤ 3 bytes, a mask of at most 24 bits shifted by at most 24.
    let mask = (((1u64 << (8 * n)) - 1) as u32) << (8 * b);
    let mut cur = word.load(Ordering::Acquire);
    loop {
        let new = (cur & !mask) | (val & mask);
        match word.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(c) => cur = c,
        }
    }
}

/// Copy `len` bytes from byte `soff` of `src` to byte `doff` of `dst` (ranges the caller checked
/// are inside; a word outside either is skipped, never a panic), in ascending order: relaxed word
/// loads and stores (see the module docs), the partial words at either end merged.
fn copy_bytes(src: &[AtomicU32], soff: usize, dst: &[AtomicU32], doff: usize, len: usize) {
    // Up to the destination's next word boundary.
    let head = ((4 - doff % 4) % 4).min(len);
    if head > 0 {
        let mut b = [0u8; 4];
        load_bytes(src, soff, &mut b[..head], Ordering::Relaxed);
        store_bytes(dst, doff, &b[..head], Ordering::Relaxed);
    }
    let (soff, doff, len) = (soff + head, doff + head, len - head);
    let words = len / 4;
    let (s0, d0, shift) = (soff / 4, doff / 4, soff % 4);
    if words > 0
        && let Some(d) = dst.get(d0..d0 + words)
    {
        if shift == 0 {
            if let Some(s) = src.get(s0..s0 + words) {
                for (d, s) in d.iter().zip(s) {
                    d.store(s.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            }
        } else if let Some(s) = src.get(s0..s0 + words + 1) {
            // Each destination word is the top bytes of one source word and the bottom bytes of
            // the next (the range's bytes reach into word s0 + words since shift ≥ 1).
            // CAST: shift is 1 to 3.
            let (lo, hi) = (8 * shift as u32, 32 - 8 * shift as u32);
            let mut prev = s[0].load(Ordering::Relaxed);
            for (d, s) in d.iter().zip(&s[1..]) {
                let next = s.load(Ordering::Relaxed);
                d.store(prev >> lo | next << hi, Ordering::Relaxed);
                prev = next;
            }
        }
    }
    let tail = len % 4;
    if tail > 0 {
        let mut b = [0u8; 4];
        load_bytes(src, soff + 4 * words, &mut b[..tail], Ordering::Relaxed);
        store_bytes(dst, doff + 4 * words, &b[..tail], Ordering::Relaxed);
    }
}

/// A stretch of a copy inside one source and one destination allocation.
struct Piece<'a> {
    /// Its first byte's offset in the copy.
    at: u64,
    len: u64,
    src: &'a [AtomicU32],
    soff: usize,
    dst: &'a [AtomicU32],
    doff: usize,
}

impl Piece<'_> {
    /// Its source and destination bytes in host memory.
    fn host(&self) -> ([usize; 2], [usize; 2]) {
        // CAST: len is inside an allocation whose words fit a usize.
        let n = self.len as usize;
        let s = self.src.as_ptr() as usize + self.soff;
        let d = self.dst.as_ptr() as usize + self.doff;
        ([s, s + n], [d, d + n])
    }

    /// Copy bytes `[from, to)` of the copy that fall in this piece.
    fn copy(&self, from: u64, to: u64) {
        let (a, b) = (from.max(self.at), to.min(self.at + self.len));
        if a < b {
            // CAST: offsets and lengths inside allocations whose words fit a usize.
            let k = (a - self.at) as usize;
            copy_bytes(self.src, self.soff + k, self.dst, self.doff + k, (b - a) as usize);
        }
    }
}

impl Space {
    /// The first byte of `[va, va + len)` the GPU cannot reach (past the address space when the
    /// range wraps: the byte after the last one).
    fn first_unmapped(&self, va: u64, len: u64) -> Option<u64> {
        let end = va.saturating_add(len);
        let mut at = va;
        while at < end {
            match self.reach(at, true) {
                Some(r) => at = r.end(),
                None => return Some(at),
            }
        }
        va.checked_add(len).is_none().then_some(end)
    }
}

impl MemView {
    /// GPU copy of `n` bytes from `src` to `dst`, as the SDMA engine's `COPY LINEAR` (see the
    /// module docs): every byte of the source checked readable, then every byte of the
    /// destination writable, before a byte moves (else the fault naming the first unmapped byte
    /// of the source, or of the destination, and nothing written). Source and destination apart
    /// in host memory: word by word, spread over `pool`'s threads too when given and the copy is
    /// large. Overlapping: through a buffer of [`COPY_CHUNK_BYTES`], chunk by chunk from the end
    /// down when `down` or when `dst` starts inside `[src, src + n)`, else from the start.
    pub fn copy(
        &mut self,
        src: u64,
        dst: u64,
        n: u64,
        down: bool,
        pool: Option<&rayon_core::ThreadPool>,
    ) -> Result<(), MemFault> {
        let space: &Space = &self.space;
        if let Some(va) = space.first_unmapped(src, n) {
            return Err(MemFault { va, start: src, len: n, write: false });
        }
        if let Some(va) = space.first_unmapped(dst, n) {
            return Err(MemFault { va, start: dst, len: n, write: true });
        }
        let mut pieces = Vec::new();
        let mut at = 0u64;
        while at < n {
            // Both ranges were checked: every byte has its allocation.
            let (Some(rs), Some(rd)) = (space.reach(src + at, true), space.reach(dst + at, true)) else {
                return Err(MemFault { va: src + at, start: src, len: n, write: false });
            };
            let len = (rs.end() - (src + at)).min(rd.end() - (dst + at)).min(n - at);
            // CAST: offsets inside allocations whose words fit a usize.
            let (soff, doff) = ((src + at - rs.va) as usize, (dst + at - rd.va) as usize);
            pieces.push(Piece { at, len, src: rs.words(), soff, dst: rd.words(), doff });
            at += len;
        }
        let overlap = pieces.iter().any(|p| {
            let (ps, _) = p.host();
            pieces.iter().any(|q| {
                let (_, qd) = q.host();
                ps[0] < qd[1] && qd[0] < ps[1]
            })
        });
        if overlap {
            let down = down || (dst > src && dst < src + n);
            return self.copy_buffered(src, dst, n, down);
        }
        let threads = pool.map_or(1, |p| p.current_num_threads() + 1);
        let Some(pool) = pool.filter(|_| threads > 1 && n >= SPREAD_MIN_BYTES) else {
            for p in &pieces {
                p.copy(0, n);
            }
            return Ok(());
        };
        // Claimed in chunks that end on SPREAD_CHUNK_BYTES boundaries of the destination's
        // address (so no two threads share a word or a page).
        let next = AtomicU64::new(0);
        let claim = || loop {
            let from = next.load(Ordering::Relaxed);
            if from >= n {
                return;
            }
            let end = ((dst + from) / SPREAD_CHUNK_BYTES + 1) * SPREAD_CHUNK_BYTES - dst;
            let to = end.min(n);
            if next.compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                for p in pieces.iter().filter(|p| p.at < to && from < p.at + p.len) {
                    p.copy(from, to);
                }
            }
        };
        pool.in_place_scope(|sc| {
            for _ in 1..threads {
                sc.spawn(|_| claim());
            }
            claim();
        });
        Ok(())
    }

    /// The overlapping copy: `COPY_CHUNK_BYTES` at a time through a buffer, from the end down or
    /// from the start.
    fn copy_buffered(&mut self, src: u64, dst: u64, n: u64, down: bool) -> Result<(), MemFault> {
        // CAST: at most COPY_CHUNK_BYTES.
        let mut chunk = vec![0u8; n.min(COPY_CHUNK_BYTES as u64) as usize];
        let mut done = 0u64;
        while done < n {
            // CAST: usize → u64, widening.
            let k = (n - done).min(COPY_CHUNK_BYTES as u64);
            let off = if down { n - done - k } else { done };
            // CAST: k ≤ COPY_CHUNK_BYTES.
            let buf = &mut chunk[..k as usize];
            self.read(src + off, buf)?;
            self.write(dst + off, buf)?;
            done += k;
        }
        Ok(())
    }
}
