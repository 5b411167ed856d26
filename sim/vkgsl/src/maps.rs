//! `/proc/self/maps`: where the client mapped the device's memfd, and whether a host range is
//! mapped at all (`MAP_USER_MEM`).

/// One line of `/proc/self/maps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Shared (`MAP_SHARED`), not private.
    pub shared: bool,
    /// File offset of `start`.
    pub offset: u64,
    /// Inode of the mapped file (0 for anonymous memory).
    pub inode: u64,
}

/// Parse one line (`start-end perms offset dev inode [path]`); `None` if it is not one.
pub fn parse_line(line: &str) -> Option<Vma> {
    let mut f = line.split_ascii_whitespace();
    let (start, end) = f.next()?.split_once('-')?;
    let perms = f.next()?.as_bytes();
    let offset = f.next()?;
    let _dev = f.next()?;
    let inode = f.next()?;
    Some(Vma {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        read: perms.first() == Some(&b'r'),
        write: perms.get(1) == Some(&b'w'),
        shared: perms.get(3) == Some(&b's'),
        offset: u64::from_str_radix(offset, 16).ok()?,
        inode: inode.parse().ok()?,
    })
}

/// This process's mappings, in address order (empty if `/proc` cannot be read).
pub fn read_self() -> Vec<Vma> {
    std::fs::read_to_string("/proc/self/maps").map(|s| s.lines().filter_map(parse_line).collect()).unwrap_or_default()
}

/// Whether `[addr, addr + len)` is wholly covered by readable and writable mappings.
pub fn covered_rw(vmas: &[Vma], addr: u64, len: u64) -> bool {
    let Some(end) = addr.checked_add(len) else { return false };
    let mut at = addr;
    for v in vmas {
        if v.end <= at {
            continue;
        }
        if v.start > at || !(v.read && v.write) {
            return false;
        }
        at = v.end;
        if at >= end {
            return true;
        }
    }
    at >= end
}

/// One stretch of a host range as the process maps it: what backs `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// First address (within the range).
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// Inode of the file mapped there (0: anonymous memory).
    pub inode: u64,
    /// File offset at `start` (0 for anonymous memory).
    pub offset: u64,
    /// A shared mapping.
    pub shared: bool,
}

/// What backs `[addr, addr + len)`, cut to the range and with neighbouring lines of the same
/// mapping joined (so that how the kernel splits or merges lines outside the range, or into
/// several lines inside it, does not change the answer); `None` unless the range is wholly
/// mapped readable and writable.
pub fn pieces(vmas: &[Vma], addr: u64, len: u64) -> Option<Vec<Piece>> {
    if !covered_rw(vmas, addr, len) {
        return None;
    }
    let end = addr.checked_add(len)?;
    let mut out: Vec<Piece> = Vec::new();
    for v in vmas.iter().filter(|v| v.end > addr && v.start < end) {
        let start = v.start.max(addr);
        let offset = if v.inode == 0 { 0 } else { v.offset + (start - v.start) };
        let p = Piece { start, end: v.end.min(end), inode: v.inode, offset, shared: v.shared };
        if let Some(last) = out.last_mut()
            && last.end == p.start
            && (last.inode, last.shared) == (p.inode, p.shared)
            && (p.inode == 0 || last.offset + (last.end - last.start) == p.offset)
        {
            last.end = p.end;
            continue;
        }
        out.push(p);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_and_without_a_path() {
        let v = parse_line("7f12a0000000-7f12a0010000 rw-s 00003000 00:01 4242   /memfd:hcq-vkgsl (deleted)").unwrap();
        assert_eq!(
            (v.start, v.end, v.read, v.write, v.offset, v.inode),
            (0x7f12a0000000, 0x7f12a0010000, true, true, 0x3000, 4242)
        );
        let a = parse_line("55d0c0000000-55d0c0021000 r--p 00000000 00:00 0").unwrap();
        assert!(a.read && !a.write && !a.shared && a.inode == 0);
        assert!(v.shared);
        assert_eq!(parse_line("garbage"), None);
    }

    #[test]
    fn coverage_needs_contiguous_writable_mappings() {
        let v = |start, end, write| Vma { start, end, read: true, write, shared: false, offset: 0, inode: 0 };
        let maps =
            [v(0x1000, 0x3000, true), v(0x3000, 0x4000, true), v(0x5000, 0x6000, true), v(0x6000, 0x7000, false)];
        assert!(covered_rw(&maps, 0x1000, 0x3000));
        assert!(covered_rw(&maps, 0x2000, 0x1800));
        assert!(!covered_rw(&maps, 0x3000, 0x2000), "hole at 0x4000");
        assert!(!covered_rw(&maps, 0x5000, 0x2000), "read-only tail");
        assert!(!covered_rw(&maps, 0x8000, 1), "nothing there");
        assert!(!covered_rw(&maps, u64::MAX, 2), "overflow");
    }

    #[test]
    fn pieces_are_cut_to_the_range_and_joined_across_lines_of_one_mapping() {
        let anon = |start, end| Vma { start, end, read: true, write: true, shared: false, offset: 0, inode: 0 };
        let file = |start, end, offset| Vma { start, end, read: true, write: true, shared: true, offset, inode: 9 };
        let p = |start, end, inode, offset, shared| Piece { start, end, inode, offset, shared };
        // Two lines of one anonymous mapping (split by an mprotect elsewhere) are one piece.
        let a = [anon(0x0000, 0x3000), anon(0x3000, 0x9000)];
        assert_eq!(pieces(&a, 0x2000, 0x2000), Some(vec![p(0x2000, 0x4000, 0, 0, false)]));
        // The same range after the anonymous memory grew (merged into a bigger line).
        assert_eq!(pieces(&[anon(0x0000, 0xa000)], 0x2000, 0x2000), pieces(&a, 0x2000, 0x2000));
        // File lines join only where the offsets run on.
        let f = [file(0x1000, 0x2000, 0x5000), file(0x2000, 0x3000, 0x6000), file(0x3000, 0x4000, 0x0)];
        assert_eq!(
            pieces(&f, 0x1800, 0x2000),
            Some(vec![p(0x1800, 0x3000, 9, 0x5800, true), p(0x3000, 0x3800, 9, 0, true)])
        );
        // Anonymous memory where a file was is another answer; a hole is none.
        assert_ne!(pieces(&[anon(0x1000, 0x4000)], 0x1800, 0x2000), pieces(&f, 0x1800, 0x2000));
        assert_eq!(pieces(&[anon(0x1000, 0x2000)], 0x1000, 0x2000), None);
    }

    #[test]
    fn this_process_has_its_own_stack_mapped() {
        let x = 5u64;
        let maps = read_self();
        assert!(covered_rw(&maps, (&x as *const u64) as u64, 8), "{maps:?}");
    }
}
