//! [`BumpAllocator`]: a cursor over a fixed arena.

use crate::{Error, Result};

/// A bump allocator over the arena `[base, base + size)`.
///
/// [`alloc`](Self::alloc) rounds the cursor up to the requested alignment, hands out the space
/// there and moves the cursor past it. Nothing is ever freed individually; [`reset`](Self::reset)
/// rewinds the whole arena. With `wrap` set, a request that does not fit before the end of the
/// arena restarts at offset 0 instead of failing — the allocator does **not** know whether that
/// space is still in use; wrapping users (rings) must track that themselves, e.g. with
/// [`wraps`](Self::wraps) and a timeline value per lap.
///
/// Alignment is applied to the *offset* from `base` (as in tinygrad); give an aligned `base` if
/// absolute addresses must be aligned. Unlike tinygrad, a request larger than the whole arena is
/// always an error and never overruns the arena, wrapping or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BumpAllocator {
    base: u64,
    size: u64,
    cursor: u64,
    wrap: bool,
    wraps: u64,
}

impl BumpAllocator {
    /// An allocator over `[base, base + size)` with the cursor at offset 0. When `wrap` is set,
    /// requests that do not fit before the end restart at offset 0.
    ///
    /// `size` is cut to `u64::MAX - base` so every address handed out, and the end of every
    /// allocation, is representable in a `u64`.
    pub const fn new(size: u64, base: u64, wrap: bool) -> Self {
        let max = u64::MAX - base;
        let size = if size > max { max } else { size };
        BumpAllocator { base, size, cursor: 0, wrap, wraps: 0 }
    }

    /// Allocate `size` bytes aligned to `align` (a power of two; 0 means 1) and return the
    /// address (`base + offset`).
    ///
    /// Errors: [`Error::InvalidArgument`] if `align` is not a power of two;
    /// [`Error::OutOfSpace`] if `size` exceeds the arena, or if it does not fit before the end
    /// of the arena and the allocator does not wrap. Zero-sized requests succeed and only align
    /// the cursor. On error the allocator is unchanged.
    #[inline]
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64> {
        let align = if align == 0 { 1 } else { align };
        if !align.is_power_of_two() {
            return Err(Error::InvalidArgument {
                what: "bump allocator: alignment is not a power of two",
                value: align,
            });
        }
        if size > self.size {
            return Err(self.out_of_space(size));
        }
        let mask = align - 1;
        // An overflowing round-up can never fit; u64::MAX is always past `self.size - size`.
        let start = match self.cursor.checked_add(mask) {
            Some(v) => v & !mask,
            None => u64::MAX,
        };
        // `size <= self.size`, so the subtraction cannot underflow.
        let start = if start <= self.size - size {
            start
        } else if self.wrap {
            self.wraps = self.wraps.wrapping_add(1);
            0
        } else {
            return Err(self.out_of_space(size));
        };
        // start + size <= self.size <= u64::MAX - base: neither sum overflows.
        self.cursor = start + size;
        Ok(self.base + start)
    }

    #[cold]
    fn out_of_space(&self, requested: u64) -> Error {
        Error::OutOfSpace { what: "bump allocator", requested, capacity: self.size }
    }

    /// Rewind the cursor to offset 0 and the wrap count to 0, as after [`new`](Self::new).
    pub fn reset(&mut self) {
        self.cursor = 0;
        self.wraps = 0;
    }

    /// The cursor: offset from `base` where the next unaligned allocation would start.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Size of the arena in bytes (after the cut described in [`new`](Self::new)).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Address of the arena's first byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Bytes between the cursor and the end of the arena.
    pub fn remaining(&self) -> u64 {
        self.size - self.cursor
    }

    /// Whether a request that does not fit wraps to offset 0 (else it fails).
    pub fn wrap(&self) -> bool {
        self.wrap
    }

    /// How many times the cursor has wrapped back to offset 0 since creation or the last
    /// [`reset`](Self::reset) (wrapping itself at `u64::MAX`).
    pub fn wraps(&self) -> u64 {
        self.wraps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn aligns_cursor_and_returns_base_plus_offset() {
        let mut b = BumpAllocator::new(0x1000, 0x10_0000, false);
        assert_eq!(b.alloc(3, 1).unwrap(), 0x10_0000);
        assert_eq!(b.cursor(), 3);
        // cursor 3 rounds up to 16
        assert_eq!(b.alloc(8, 16).unwrap(), 0x10_0010);
        assert_eq!(b.cursor(), 0x18);
        // align 0 is treated as 1: no rounding
        assert_eq!(b.alloc(1, 0).unwrap(), 0x10_0018);
        assert_eq!(b.cursor(), 0x19);
    }

    #[test]
    fn non_power_of_two_alignment_is_rejected_without_moving() {
        let mut b = BumpAllocator::new(64, 0, true);
        b.alloc(5, 1).unwrap();
        let e = b.alloc(4, 12).unwrap_err();
        assert_eq!(e, Error::InvalidArgument { what: "bump allocator: alignment is not a power of two", value: 12 });
        assert_eq!(b.cursor(), 5);
    }

    #[test]
    fn wrapping_allocator_restarts_at_zero_and_counts_wraps() {
        let mut b = BumpAllocator::new(100, 1000, true);
        assert_eq!(b.alloc(60, 1).unwrap(), 1000);
        assert_eq!(b.wraps(), 0);
        // 60 + 50 > 100: wraps
        assert_eq!(b.alloc(50, 1).unwrap(), 1000);
        assert_eq!(b.wraps(), 1);
        assert_eq!(b.cursor(), 50);
        // exactly filling the end does not wrap
        assert_eq!(b.alloc(50, 1).unwrap(), 1050);
        assert_eq!(b.wraps(), 1);
        assert_eq!(b.remaining(), 0);
        assert_eq!(b.alloc(1, 1).unwrap(), 1000);
        assert_eq!(b.wraps(), 2);
    }

    #[test]
    fn wrap_is_triggered_by_alignment_padding_too() {
        let mut b = BumpAllocator::new(64, 0, true);
        b.alloc(33, 1).unwrap();
        // round_up(33, 32) = 64, 64 + 1 > 64: wraps to 0
        assert_eq!(b.alloc(1, 32).unwrap(), 0);
        assert_eq!(b.wraps(), 1);
    }

    #[test]
    fn non_wrapping_allocator_fails_when_full_and_stays_usable() {
        let mut b = BumpAllocator::new(100, 0, false);
        b.alloc(60, 1).unwrap();
        let e = b.alloc(50, 1).unwrap_err();
        assert_eq!(e, Error::OutOfSpace { what: "bump allocator", requested: 50, capacity: 100 });
        assert_eq!(b.cursor(), 60);
        assert_eq!(b.alloc(40, 1).unwrap(), 60);
    }

    #[test]
    fn request_larger_than_arena_fails_even_when_wrapping() {
        let mut b = BumpAllocator::new(100, 0, true);
        b.alloc(10, 1).unwrap();
        let e = b.alloc(101, 1).unwrap_err();
        assert!(matches!(e, Error::OutOfSpace { requested: 101, capacity: 100, .. }));
        assert_eq!((b.cursor(), b.wraps()), (10, 0));
    }

    #[test]
    fn huge_alignment_does_not_overflow() {
        let mut b = BumpAllocator::new(u64::MAX, 0, false);
        b.alloc(1, 1).unwrap();
        assert!(b.alloc(1, 1 << 63).is_ok());
        assert!(matches!(b.alloc(1, 1 << 63), Err(Error::OutOfSpace { .. })));
    }

    #[test]
    fn size_is_cut_so_addresses_never_overflow() {
        let mut b = BumpAllocator::new(u64::MAX, u64::MAX - 10, true);
        assert_eq!(b.size(), 10);
        assert_eq!(b.alloc(10, 1).unwrap(), u64::MAX - 10);
        assert!(b.alloc(11, 1).is_err());
    }

    #[test]
    fn reset_rewinds_cursor_and_wrap_count() {
        let mut b = BumpAllocator::new(16, 0, true);
        b.alloc(10, 1).unwrap();
        b.alloc(10, 1).unwrap();
        assert_eq!(b.wraps(), 1);
        b.reset();
        assert_eq!((b.cursor(), b.wraps()), (0, 0));
        assert_eq!(b.alloc(16, 1).unwrap(), 0);
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
        #![proptest_config(config(if cfg!(miri) { 4 } else { 256 }))]

        /// Every allocation is aligned, inside the arena, and (between wraps) after the previous one.
        #[test]
        fn allocations_are_aligned_inside_and_disjoint_between_wraps(
            base in 0u64..1 << 40,
            size in 1u64..4096,
            wrap in any::<bool>(),
            reqs in proptest::collection::vec((0u64..600, 0u32..8), 1..64),
        ) {
            let base = base << 12; // page-aligned base, so offsets and addresses align alike
            let mut b = BumpAllocator::new(size, base, wrap);
            let mut prev_end = base;
            for (len, align_log) in reqs {
                let align = 1u64 << align_log;
                let wraps = b.wraps();
                match b.alloc(len, align) {
                    Ok(addr) => {
                        prop_assert_eq!(addr % align, 0);
                        prop_assert!(addr >= base && addr + len <= base + size);
                        if b.wraps() == wraps {
                            prop_assert!(addr >= prev_end, "overlaps previous allocation");
                        } else {
                            prop_assert_eq!(addr, base);
                        }
                        prev_end = addr + len;
                        prop_assert_eq!(b.cursor(), prev_end - base);
                    }
                    Err(Error::OutOfSpace { .. }) => {
                        let cur = b.cursor();
                        prop_assert!(len > size || (!wrap && cur.next_multiple_of(align) + len > size));
                        prop_assert_eq!(b.cursor(), prev_end - base);
                    }
                    Err(e) => prop_assert!(false, "unexpected error {e:?}"),
                }
            }
        }
    }
}
