//! [`RangeAllocator`]: good-fit allocation with coalescing over an address range.

use alloc::collections::BTreeSet;

use crate::{Error, Result};

/// How many free blocks of the smallest fitting sizes `alloc` tries before it jumps to the
/// smallest block that fits whatever its alignment.
const SCAN_LIMIT: usize = 16;

/// A range allocator over the device addresses `[base, base + size)`.
///
/// Free space is kept in two ordered indexes on the host heap (by start address for coalescing,
/// by size for good-fit); live allocations in a third, so [`free`](Self::free) needs only the
/// address. All three are sets of `u64` pairs (one B-tree instantiation: a `no_std` image links
/// its code once). Nothing is ever written into the managed range, which may be device memory, a
/// virtual-address window or anything else addressed by `u64`.
///
/// Policy: [`alloc`](Self::alloc) looks at the smallest free blocks that are large enough, up to
/// 16 of them, and takes the first one in which the aligned request fits; after that it takes
/// the smallest block of at least `size + align - 1` bytes (which always fits), and only when
/// there is none does it scan the remaining blocks. So it fails only when no free block can hold
/// the request, and a block is chosen in `O(log n)` in the common case. The unaligned head of a
/// chosen block and the unused tail stay free. [`free`](Self::free) merges the freed block with
/// free neighbours on both sides, so free blocks are never adjacent.
///
/// Limits: sizes are exact (no rounding to a minimum block), and each alloc/free may allocate
/// or free B-tree nodes on the host heap.
#[derive(Clone, Debug)]
pub struct RangeAllocator {
    base: u64,
    size: u64,
    /// Free blocks: (start, size).
    free_by_start: BTreeSet<(u64, u64)>,
    /// The same free blocks, ordered by (size, start).
    free_by_size: BTreeSet<(u64, u64)>,
    /// Live allocations: (start, size); starts are unique.
    used: BTreeSet<(u64, u64)>,
    free_bytes: u64,
}

/// The aligned start of a `size`-byte request inside the block `[start, start + len)`, if it fits.
#[inline]
fn fit(start: u64, len: u64, size: u64, mask: u64) -> Option<u64> {
    let aligned = start.checked_add(mask)? & !mask;
    // `start + len` is inside the managed range, which ends at or below u64::MAX.
    (aligned.checked_add(size)? <= start + len).then_some(aligned)
}

/// The size of the block that starts at `start` in a set of (start, size) blocks with unique
/// starts.
fn block_at(blocks: &BTreeSet<(u64, u64)>, start: u64) -> Option<u64> {
    blocks.range((start, 0)..).next().filter(|&&(s, _)| s == start).map(|&(_, len)| len)
}

impl RangeAllocator {
    /// An allocator whose whole range `[base, base + size)` is free.
    ///
    /// `size` is cut to `u64::MAX - base` so that the end of every block is representable.
    pub fn new(base: u64, size: u64) -> Self {
        let size = size.min(u64::MAX - base);
        let mut a = RangeAllocator {
            base,
            size,
            free_by_start: BTreeSet::new(),
            free_by_size: BTreeSet::new(),
            used: BTreeSet::new(),
            free_bytes: size,
        };
        if size > 0 {
            a.insert_free(base, size);
        }
        a
    }

    /// Allocate `size` bytes whose address is a multiple of `align` (a power of two; 0 means 1)
    /// and return that address.
    ///
    /// Errors: [`Error::InvalidArgument`] for `size == 0` or an alignment that is not a power of
    /// two; [`Error::OutOfSpace`] (`what = "range allocator"`) when no free block can hold the
    /// aligned request. On error the allocator is unchanged.
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64> {
        if size == 0 {
            return Err(Error::InvalidArgument { what: "range allocator: zero-sized allocation", value: 0 });
        }
        let align = if align == 0 { 1 } else { align };
        if !align.is_power_of_two() {
            return Err(Error::InvalidArgument {
                what: "range allocator: alignment is not a power of two",
                value: align,
            });
        }
        let Some((start, len, addr)) = self.find(size, align - 1) else {
            return Err(Error::OutOfSpace { what: "range allocator", requested: size, capacity: self.size });
        };
        self.remove_free(start, len);
        if addr > start {
            self.insert_free(start, addr - start);
        }
        // `fit` checked `addr + size <= start + len`.
        let end = addr + size;
        let block_end = start + len;
        if end < block_end {
            self.insert_free(end, block_end - end);
        }
        self.used.insert((addr, size));
        self.free_bytes -= size;
        Ok(addr)
    }

    /// Find a free block `(start, len, aligned address)` for the request (see the type's policy).
    fn find(&self, size: u64, mask: u64) -> Option<(u64, u64, u64)> {
        if size > self.free_bytes {
            return None;
        }
        let mut scanned = 0;
        for &(len, start) in self.free_by_size.range((size, 0)..) {
            if let Some(addr) = fit(start, len, size, mask) {
                return Some((start, len, addr));
            }
            scanned += 1;
            if scanned == SCAN_LIMIT {
                break;
            }
        }
        if scanned < SCAN_LIMIT {
            return None; // every block large enough was tried
        }
        // Any block of at least `size + mask` bytes holds the request wherever it starts.
        if let Some(sure) = size.checked_add(mask)
            && let Some(&(len, start)) = self.free_by_size.range((sure, 0)..).next()
        {
            return fit(start, len, size, mask).map(|addr| (start, len, addr));
        }
        self.free_by_size
            .range((size, 0)..)
            .skip(SCAN_LIMIT)
            .find_map(|&(len, start)| fit(start, len, size, mask).map(|addr| (start, len, addr)))
    }

    /// Free the allocation that starts at `addr`, merge it with free neighbours, and return its
    /// size.
    ///
    /// Errors: [`Error::InvalidArgument`] naming `addr` when it is not the start of a live
    /// allocation (never allocated, already freed, or inside an allocation). On error the
    /// allocator is unchanged.
    pub fn free(&mut self, addr: u64) -> Result<u64> {
        let Some(size) = self.allocation_size(addr) else {
            return Err(Error::InvalidArgument {
                what: "range allocator: free of an address that is not a live allocation",
                value: addr,
            });
        };
        self.used.remove(&(addr, size));
        let (mut start, mut len) = (addr, size);
        if let Some(&(left, left_len)) = self.free_by_start.range(..(addr, 0)).next_back()
            && left + left_len == addr
        {
            self.remove_free(left, left_len);
            start = left;
            len += left_len;
        }
        let end = addr + size;
        if let Some(right_len) = block_at(&self.free_by_start, end) {
            self.remove_free(end, right_len);
            len += right_len;
        }
        self.insert_free(start, len);
        self.free_bytes += size;
        Ok(size)
    }

    fn insert_free(&mut self, start: u64, len: u64) {
        self.free_by_start.insert((start, len));
        self.free_by_size.insert((len, start));
    }

    fn remove_free(&mut self, start: u64, len: u64) {
        self.free_by_start.remove(&(start, len));
        self.free_by_size.remove(&(len, start));
    }

    /// Bytes not allocated (including alignment heads left free).
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Bytes in live allocations.
    pub fn used_bytes(&self) -> u64 {
        self.size - self.free_bytes
    }

    /// Size of the largest free block (0 when full). An unaligned request of this size fits.
    pub fn largest_free(&self) -> u64 {
        self.free_by_size.last().map_or(0, |&(len, _)| len)
    }

    /// Whether `addr` lies inside the managed range `[base, base + size)`.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.size
    }

    /// The size of the live allocation that starts at `addr`, if there is one.
    pub fn allocation_size(&self, addr: u64) -> Option<u64> {
        block_at(&self.used, addr)
    }

    /// Number of live allocations.
    pub fn allocations(&self) -> usize {
        self.used.len()
    }

    /// Number of free blocks (1 for an empty allocator with a non-empty range: free blocks are
    /// always fully merged).
    pub fn free_blocks(&self) -> usize {
        self.free_by_start.len()
    }

    /// First address of the managed range.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Size of the managed range in bytes (after the cut described in [`new`](Self::new)).
    pub fn size(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    /// Free and used blocks tile the range exactly, free blocks are never adjacent, both free
    /// indexes agree, and the byte counter matches.
    fn check_invariants(a: &RangeAllocator) {
        assert_eq!(a.free_by_start.len(), a.free_by_size.len());
        for &(s, l) in &a.free_by_start {
            assert!(a.free_by_size.contains(&(l, s)));
        }
        let mut blocks: Vec<(u64, u64, bool)> = a.free_by_start.iter().map(|&(s, l)| (s, l, true)).collect();
        blocks.extend(a.used.iter().map(|&(s, l)| (s, l, false)));
        blocks.sort();
        let mut at = a.base;
        let mut prev_free = false;
        let mut free = 0;
        for (s, l, is_free) in blocks {
            assert_eq!(s, at, "gap or overlap at {s:#x}");
            assert!(l > 0);
            assert!(!(prev_free && is_free), "adjacent free blocks at {s:#x}");
            if is_free {
                free += l;
            }
            prev_free = is_free;
            at = s + l;
        }
        assert_eq!(at, a.base + a.size);
        assert_eq!(free, a.free_bytes);
    }

    #[test]
    fn allocations_are_aligned_and_split_off_the_head() {
        let mut a = RangeAllocator::new(0x1001, 0x1000);
        let p = a.alloc(0x100, 0x100).unwrap();
        assert_eq!(p, 0x1100);
        // the unaligned head [0x1001, 0x1100) stays free
        assert_eq!(a.free_blocks(), 2);
        assert_eq!(a.used_bytes(), 0x100);
        assert_eq!(a.free_bytes(), 0x1000 - 0x100);
        // the head is used for a request that fits there
        let q = a.alloc(0x10, 0x10).unwrap();
        assert_eq!(q, 0x1010);
        check_invariants(&a);
    }

    #[test]
    fn bad_arguments_are_rejected() {
        let mut a = RangeAllocator::new(0, 0x1000);
        assert!(matches!(a.alloc(0, 1), Err(Error::InvalidArgument { value: 0, .. })));
        assert!(matches!(a.alloc(16, 24), Err(Error::InvalidArgument { value: 24, .. })));
        // align 0 means 1
        assert_eq!(a.alloc(1, 0).unwrap(), 0);
        check_invariants(&a);
    }

    #[test]
    fn no_room_is_out_of_space_and_changes_nothing() {
        let mut a = RangeAllocator::new(0, 0x100);
        a.alloc(0x80, 1).unwrap();
        let e = a.alloc(0x81, 1).unwrap_err();
        assert_eq!(e, Error::OutOfSpace { what: "range allocator", requested: 0x81, capacity: 0x100 });
        // 0x40 bytes fit but not at 0x100 alignment
        assert!(matches!(a.alloc(0x40, 0x100), Err(Error::OutOfSpace { .. })));
        assert_eq!(a.free_bytes(), 0x80);
        assert_eq!(a.alloc(0x80, 0x80).unwrap(), 0x80);
        check_invariants(&a);
    }

    #[test]
    fn chooses_the_smallest_fitting_block() {
        let mut a = RangeAllocator::new(0, 1000);
        let p: Vec<u64> = [100, 10, 300, 10, 50, 10].iter().map(|&s| a.alloc(s, 1).unwrap()).collect();
        a.free(p[0]).unwrap(); // hole of 100 at 0
        a.free(p[2]).unwrap(); // hole of 300 at 110
        a.free(p[4]).unwrap(); // hole of 50 at 420
        assert_eq!(a.alloc(40, 1).unwrap(), 420);
        assert_eq!(a.alloc(60, 1).unwrap(), 0);
        check_invariants(&a);
    }

    #[test]
    fn free_coalesces_with_left_neighbour() {
        let mut a = RangeAllocator::new(0, 300);
        let x = a.alloc(100, 1).unwrap();
        let y = a.alloc(100, 1).unwrap();
        let _z = a.alloc(100, 1).unwrap();
        a.free(x).unwrap();
        assert_eq!(a.free(y).unwrap(), 100);
        assert_eq!(a.free_blocks(), 1);
        assert_eq!(a.largest_free(), 200);
        check_invariants(&a);
    }

    #[test]
    fn free_coalesces_with_right_neighbour() {
        let mut a = RangeAllocator::new(0, 300);
        let _x = a.alloc(100, 1).unwrap();
        let y = a.alloc(100, 1).unwrap();
        let z = a.alloc(100, 1).unwrap();
        a.free(z).unwrap();
        a.free(y).unwrap();
        assert_eq!(a.free_blocks(), 1);
        assert_eq!(a.largest_free(), 200);
        check_invariants(&a);
    }

    #[test]
    fn free_coalesces_with_both_neighbours() {
        let mut a = RangeAllocator::new(0, 300);
        let x = a.alloc(100, 1).unwrap();
        let y = a.alloc(100, 1).unwrap();
        let z = a.alloc(100, 1).unwrap();
        a.free(x).unwrap();
        a.free(z).unwrap();
        assert_eq!(a.free_blocks(), 2);
        a.free(y).unwrap();
        assert_eq!(a.free_blocks(), 1);
        assert_eq!(a.largest_free(), 300);
        assert_eq!(a.used_bytes(), 0);
        check_invariants(&a);
    }

    #[test]
    fn double_free_and_unknown_addresses_are_errors() {
        let mut a = RangeAllocator::new(0x1000, 0x1000);
        let p = a.alloc(0x40, 1).unwrap();
        assert_eq!(a.free(p).unwrap(), 0x40);
        let e = a.free(p).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { value: 0x1000, .. }), "{e:?}");
        let q = a.alloc(0x40, 1).unwrap();
        // an address inside an allocation is not an allocation
        assert!(matches!(a.free(q + 1), Err(Error::InvalidArgument { value: 0x1001, .. })));
        assert!(matches!(a.free(0x5), Err(Error::InvalidArgument { value: 5, .. })));
        assert_eq!(a.allocation_size(q), Some(0x40));
        check_invariants(&a);
    }

    #[test]
    fn contains_covers_exactly_the_managed_range() {
        let a = RangeAllocator::new(0x100, 0x100);
        assert!(!a.contains(0xff));
        assert!(a.contains(0x100));
        assert!(a.contains(0x1ff));
        assert!(!a.contains(0x200));
    }

    #[test]
    fn range_reaching_the_top_of_the_address_space_works() {
        let mut a = RangeAllocator::new(u64::MAX - 0xfff, u64::MAX);
        assert_eq!(a.size(), 0xfff);
        // alignment round-up overflows for the only block: no room, no panic
        assert!(matches!(a.alloc(1, 1 << 63), Err(Error::OutOfSpace { .. })));
        let p = a.alloc(0xfff, 1).unwrap();
        assert_eq!(p, u64::MAX - 0xfff);
        a.free(p).unwrap();
        check_invariants(&a);
    }

    #[test]
    fn empty_range_has_no_room() {
        let mut a = RangeAllocator::new(0, 0);
        assert!(matches!(a.alloc(1, 1), Err(Error::OutOfSpace { .. })));
        assert_eq!((a.free_blocks(), a.largest_free()), (0, 0));
    }

    #[test]
    fn many_misaligned_candidates_still_find_the_fitting_block() {
        // 20 small holes at odd addresses that fit 16 bytes but not 64-aligned 16 bytes, then
        // a block that does: the scan limit must not cause a false out-of-space.
        let mut a = RangeAllocator::new(0, 64 * 64);
        let mut holes = Vec::new();
        for i in 0..20u64 {
            let p = a.alloc(1, 1).unwrap();
            assert_eq!(p, i * 64);
            holes.push(a.alloc(40, 1).unwrap()); // [64i+1, 64i+41)
            a.alloc(23, 1).unwrap();
        }
        for h in holes {
            a.free(h).unwrap();
        }
        // The tail [1280, 4096) is the only block of at least 16 + 63 bytes: after 16 failed
        // candidates the allocator jumps straight to it.
        let first = a.alloc(16, 64).unwrap();
        assert_eq!(first, 1280);
        a.free(first).unwrap();
        // Leave a 70-byte block at [4026, 4096): no block holds 16 + 63 bytes any more, so the
        // scan must continue past the 20 holes to find it.
        let tail = a.largest_free();
        a.alloc(tail - 70, 1).unwrap();
        assert_eq!(a.alloc(16, 64).unwrap(), 4032);
        check_invariants(&a);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Alloc { size: u64, align_log: u32 },
        Free { pick: usize },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (1u64..400, 0u32..9).prop_map(|(size, align_log)| Op::Alloc { size, align_log }),
            2 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        ]
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

        /// Random alloc/free: live allocations are aligned, inside the range and disjoint, a
        /// failure means no free block could hold the request, and freeing everything leaves
        /// one free block of the full size.
        #[test]
        fn random_alloc_free_keeps_the_range_consistent(
            base in 0u64..1 << 20,
            size in 1u64..8192,
            ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 24 } else { 200 }),
        ) {
            let mut a = RangeAllocator::new(base, size);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Alloc { size: len, align_log } => {
                        let align = 1u64 << align_log;
                        match a.alloc(len, align) {
                            Ok(p) => {
                                prop_assert_eq!(p % align, 0);
                                prop_assert!(p >= base && p + len <= base + size);
                                for &(q, l) in &live {
                                    prop_assert!(p + len <= q || q + l <= p, "overlap");
                                }
                                live.push((p, len));
                            }
                            Err(Error::OutOfSpace { .. }) => {
                                for &(s, l) in &a.free_by_start {
                                    prop_assert!(fit(s, l, len, align - 1).is_none(), "a free block could hold it");
                                }
                            }
                            Err(e) => prop_assert!(false, "unexpected {e:?}"),
                        }
                    }
                    Op::Free { pick } => {
                        if !live.is_empty() {
                            let (p, l) = live.swap_remove(pick % live.len());
                            prop_assert_eq!(a.free(p).unwrap(), l);
                        }
                    }
                }
                check_invariants(&a);
                prop_assert_eq!(a.used_bytes(), live.iter().map(|&(_, l)| l).sum::<u64>());
            }
            for (p, _) in live.drain(..) {
                a.free(p).unwrap();
            }
            prop_assert_eq!(a.free_blocks(), 1);
            prop_assert_eq!(a.largest_free(), size);
            prop_assert_eq!(a.free_bytes(), size);
        }
    }
}
