//! A dispatch's view of GPU memory: reads go to the simulated memory (through a cached
//! [`Span`] of the allocation last touched, so that a work-group's loads do not search the
//! allocations per access), writes go to a copy-on-write overlay of 4 KiB pages with a dirty
//! bit per byte. Reads see the overlay's dirty bytes over memory, so a dispatch sees its own
//! earlier writes; nothing reaches memory until [`Pages::commit`], which writes exactly the
//! bytes the dispatch wrote (a byte store next to bytes it never wrote leaves them as they are
//! in memory at the commit).

use crate::cp::{GpuMemory, Span};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::hash::{BuildHasherDefault, Hasher};
use hcq_ir3::exec::{Memory, OutOfBounds};
use std::collections::HashMap;

const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;
/// Direct-mapped cache of page lookups (page number → index), in front of the hash map.
const SLOTS: usize = 256;
/// A slot's index for "this page has no overlay" (a cached miss).
const ABSENT: u32 = u32::MAX;

/// One overlay page: the written bytes and which bytes were written.
struct Page {
    data: [u8; PAGE],
    dirty: [u64; PAGE / 64],
}

/// Hashes page numbers (already well spread in their low bits) with one multiply.
#[derive(Default)]
struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The pages one thread of a dispatch wrote. Kept between dispatches: once warm, a dispatch
/// allocates nothing (cleared pages are reused).
pub(crate) struct Pages {
    map: HashMap<u64, u32, BuildHasherDefault<PageHasher>>,
    /// `pages[..live]` are in use (page numbers in `nums`), the rest are spares.
    pages: Vec<Box<Page>>,
    nums: Vec<u64>,
    live: usize,
    /// `(page number, index or ABSENT)`; `u64::MAX` marks an empty slot.
    slots: [(u64, u32); SLOTS],
    /// Accesses the SMMU terminated (see [`Overlay::terminate`]) since the last clear, and the
    /// first of them.
    pub(crate) terminated: Terminated,
}

/// Accesses outside every GPU object that were terminated instead of faulting the dispatch.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Terminated {
    /// How many accesses (a load or a store, whatever its width).
    pub(crate) count: u64,
    /// The first: its address, its bytes, whether it was a store.
    pub(crate) first: Option<(u64, usize, bool)>,
}

impl Terminated {
    fn note(&mut self, addr: u64, len: usize, store: bool) {
        self.count += 1;
        self.first.get_or_insert((addr, len, store));
    }
}

impl Default for Pages {
    fn default() -> Self {
        Self {
            map: HashMap::default(),
            pages: Vec::new(),
            nums: Vec::new(),
            live: 0,
            slots: [(u64::MAX, ABSENT); SLOTS],
            terminated: Terminated::default(),
        }
    }
}

impl Pages {
    /// Forget every write (the pages stay allocated for the next dispatch).
    pub(crate) fn clear(&mut self) {
        for p in &mut self.pages[..self.live] {
            p.dirty = [0; PAGE / 64];
        }
        self.map.clear();
        self.nums.clear();
        self.live = 0;
        self.slots = [(u64::MAX, ABSENT); SLOTS];
        self.terminated = Terminated::default();
    }

    /// Whether nothing was written.
    pub(crate) fn is_empty(&self) -> bool {
        self.live == 0
    }

    #[inline]
    fn lookup(&mut self, num: u64) -> u32 {
        let s = &mut self.slots[num as usize % SLOTS];
        if s.0 == num {
            return s.1;
        }
        let i = self.map.get(&num).copied().unwrap_or(ABSENT);
        *s = (num, i);
        i
    }

    fn get_or_insert(&mut self, num: u64) -> usize {
        let i = self.lookup(num);
        if i != ABSENT {
            return i as usize;
        }
        if self.live == self.pages.len() {
            self.pages.push(Box::new(Page { data: [0; PAGE], dirty: [0; PAGE / 64] }));
        }
        let i = self.live;
        self.live += 1;
        self.nums.push(num);
        // CAST: fewer than 2^32 pages (16 TiB of writes).
        self.map.insert(num, i as u32);
        self.slots[num as usize % SLOTS] = (num, i as u32);
        i
    }

    /// Put the dirty bytes of `[addr, addr + buf.len())` over `buf`.
    fn patch(&mut self, addr: u64, buf: &mut [u8]) {
        let mut done = 0;
        while done < buf.len() {
            let a = addr + done as u64;
            let off = (a as usize) & (PAGE - 1);
            let n = (PAGE - off).min(buf.len() - done);
            let i = self.lookup(a >> PAGE_BITS);
            if i != ABSENT {
                let p = &self.pages[i as usize];
                for k in 0..n {
                    let b = off + k;
                    if p.dirty[b / 64] >> (b % 64) & 1 != 0 {
                        buf[done + k] = p.data[b];
                    }
                }
            }
            done += n;
        }
    }

    /// Record a write of `data` at `addr` (already checked to be mapped).
    fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let a = addr + done as u64;
            let off = (a as usize) & (PAGE - 1);
            let n = (PAGE - off).min(data.len() - done);
            let i = self.get_or_insert(a >> PAGE_BITS);
            let p = &mut self.pages[i];
            p.data[off..off + n].copy_from_slice(&data[done..done + n]);
            for b in off..off + n {
                p.dirty[b / 64] |= 1 << (b % 64);
            }
            done += n;
        }
    }

    /// Write every dirty byte to `mem`, each run of consecutive dirty bytes in one
    /// [`GpuMemory::write_bytes`]. The overlay stays as it is (call [`Pages::clear`]).
    pub(crate) fn commit(&self, mem: &mut dyn GpuMemory) -> hcq::Result<()> {
        for (p, &num) in self.pages[..self.live].iter().zip(&self.nums) {
            let base = num << PAGE_BITS;
            for (start, end) in runs(&p.dirty) {
                mem.write_bytes(base + start as u64, &p.data[start..end])?;
            }
        }
        Ok(())
    }
}

/// The runs `[start, end)` of set bits of a page's dirty mask.
fn runs(dirty: &[u64; PAGE / 64]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0usize;
    core::iter::from_fn(move || {
        // Skip clear bits.
        loop {
            if i >= PAGE {
                return None;
            }
            let rest = dirty[i / 64] >> (i % 64);
            if rest != 0 {
                i += rest.trailing_zeros() as usize;
                break;
            }
            i = (i / 64 + 1) * 64;
        }
        let start = i;
        // Extend over set bits.
        while i < PAGE {
            let b = i % 64;
            let ones = (dirty[i / 64] >> b).trailing_ones() as usize;
            i += ones;
            if ones < 64 - b {
                break;
            }
        }
        Some((start, i))
    })
}

/// GPU memory seen through an overlay: what the interpreter runs on (see the module docs).
pub(crate) struct Overlay<'a, M: ?Sized> {
    pub(crate) mem: &'a M,
    pub(crate) pages: &'a mut Pages,
    /// The allocation of the last access.
    span: Option<Span<'a>>,
    /// An access outside every GPU object is terminated instead of being a fault: the bytes of
    /// a load that lie outside read 0, those of a store are dropped, the rest of the access is
    /// done, and the dispatch goes on ([`Pages::terminated`] counts them). This is what the
    /// SMMU does to a faulting transaction when KGSL does not stall the GPU on page faults
    /// (see `crate::dispatch::PageFaults::Terminate`).
    terminate: bool,
}

impl<'a, M: GpuMemory + ?Sized> Overlay<'a, M> {
    pub(crate) fn new(mem: &'a M, pages: &'a mut Pages, terminate: bool) -> Self {
        Self { mem, pages, span: None, terminate }
    }

    /// Whether the byte at `addr` lies in GPU memory.
    fn mapped(&self, addr: u64) -> bool {
        self.mem.read_bytes(addr, &mut [0u8]).is_ok()
    }

    /// A terminated load: mapped bytes read as memory (under this dispatch's own writes),
    /// the others as 0.
    #[cold]
    fn read_terminated(&mut self, addr: u64, buf: &mut [u8]) {
        for (k, b) in buf.iter_mut().enumerate() {
            let mut one = [0u8];
            *b = match addr.checked_add(k as u64) {
                Some(a) if self.mem.read_bytes(a, &mut one).is_ok() => one[0],
                _ => 0,
            };
        }
        if addr.checked_add(buf.len() as u64).is_some() && !self.pages.is_empty() {
            self.pages.patch(addr, buf);
        }
        self.pages.terminated.note(addr, buf.len(), false);
    }

    /// A terminated store: the mapped bytes are written, the others dropped.
    #[cold]
    fn write_terminated(&mut self, addr: u64, data: &[u8]) {
        for (k, b) in data.iter().enumerate() {
            if let Some(a) = addr.checked_add(k as u64)
                && self.mapped(a)
            {
                self.pages.write(a, core::slice::from_ref(b));
            }
        }
        self.pages.terminated.note(addr, data.len(), true);
    }

    /// The span holding all of `[addr, addr + len)`, when the memory gives spans and one does.
    #[inline]
    fn span_for(&mut self, addr: u64, len: usize) -> Option<&Span<'a>> {
        let fits = |s: &Span<'_>| {
            addr >= s.base && addr - s.base <= s.len() as u64 && len <= s.len() - (addr - s.base) as usize
        };
        if !self.span.as_ref().is_some_and(fits) {
            let s = self.mem.span(addr)?;
            if !fits(&s) {
                return None;
            }
            self.span = Some(s);
        }
        self.span.as_ref()
    }
}

impl<M: GpuMemory + ?Sized> Memory for Overlay<'_, M> {
    #[inline]
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        let done = if addr.checked_add(buf.len() as u64).is_none() {
            Err(OutOfBounds)
        } else {
            match self.span_for(addr, buf.len()) {
                Some(s) => s.read(addr - s.base, buf).map_err(|_| OutOfBounds),
                // Not inside one span (or no spans): the memory's own checked read.
                None => self.mem.read_bytes(addr, buf).map_err(|_| OutOfBounds),
            }
        };
        if done.is_err() {
            if !self.terminate {
                return Err(OutOfBounds);
            }
            self.read_terminated(addr, buf);
            return Ok(());
        }
        if !self.pages.is_empty() {
            self.pages.patch(addr, buf);
        }
        Ok(())
    }

    #[inline]
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        // The whole access must be mapped before any of it is recorded.
        let mapped = addr.checked_add(data.len() as u64).is_some()
            && (self.span_for(addr, data.len()).is_some() || {
                let mut scratch = [0u8; 64];
                data.chunks(scratch.len()).enumerate().all(|(k, c)| {
                    let at = addr + (k * scratch.len()) as u64;
                    self.mem.read_bytes(at, &mut scratch[..c.len()]).is_ok()
                })
            });
        if !mapped {
            if !self.terminate {
                return Err(OutOfBounds);
            }
            self.write_terminated(addr, data);
            return Ok(());
        }
        self.pages.write(addr, data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cp::SparseMemory;

    fn object() -> SparseMemory {
        let mut mem = SparseMemory::new();
        mem.map(0x1000, 16).unwrap();
        mem.write_bytes(0x1000, &[0xaa; 16]).unwrap();
        mem
    }

    #[test]
    fn a_terminated_load_reads_zero_outside_and_memory_inside() {
        let mem = object();
        let mut pages = Pages::default();
        let mut o = Overlay::new(&mem, &mut pages, true);
        o.write(0x100e, &[0x11]).unwrap();
        let mut buf = [0xffu8; 8];
        // Bytes 0x100c..0x1010 inside (one written by this dispatch), 0x1010..0x1014 outside.
        o.read(0x100c, &mut buf).unwrap();
        assert_eq!(buf, [0xaa, 0xaa, 0x11, 0xaa, 0, 0, 0, 0]);
        // Wholly outside, and past the end of the address space.
        o.read(0x9000, &mut buf).unwrap();
        assert_eq!(buf, [0; 8]);
        o.read(u64::MAX - 3, &mut buf).unwrap();
        assert_eq!(buf, [0; 8]);
        assert_eq!(pages.terminated.count, 3);
        assert_eq!(pages.terminated.first, Some((0x100c, 8, false)));
        // Without termination the same loads are faults.
        let mut pages = Pages::default();
        let mut o = Overlay::new(&mem, &mut pages, false);
        assert_eq!(o.read(0x100c, &mut buf), Err(OutOfBounds));
        assert_eq!(pages.terminated.count, 0);
    }

    #[test]
    fn a_terminated_store_writes_the_bytes_inside_and_drops_the_rest() {
        let mut mem = object();
        let mut pages = Pages::default();
        let mut o = Overlay::new(&mem, &mut pages, true);
        o.write(0x100e, &[1, 2, 3, 4]).unwrap();
        o.write(0x2000, &[5; 4]).unwrap();
        assert_eq!(pages.terminated.count, 2);
        assert_eq!(pages.terminated.first, Some((0x100e, 4, true)));
        pages.commit(&mut mem).unwrap();
        let mut back = [0u8; 16];
        mem.read_bytes(0x1000, &mut back).unwrap();
        assert_eq!(&back[12..], &[0xaa, 0xaa, 1, 2]);
        let mut pages = Pages::default();
        let mut o = Overlay::new(&mem, &mut pages, false);
        assert_eq!(o.write(0x100e, &[1, 2, 3, 4]), Err(OutOfBounds));
        assert!(pages.is_empty(), "a faulting store records nothing");
    }

    #[test]
    fn runs_of_dirty_bytes() {
        let mut d = [0u64; PAGE / 64];
        assert_eq!(runs(&d).count(), 0);
        d[0] = 0b0110_0001;
        d[1] = u64::MAX;
        d[2] = 1;
        d[63] = 1 << 63;
        let r: Vec<_> = runs(&d).collect();
        assert_eq!(r, [(0, 1), (5, 7), (64, 129), (PAGE - 1, PAGE)]);
        let all = [u64::MAX; PAGE / 64];
        assert_eq!(runs(&all).collect::<Vec<_>>(), [(0, PAGE)]);
    }
}
