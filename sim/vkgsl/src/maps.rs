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
        assert!(a.read && !a.write && a.inode == 0);
        assert_eq!(parse_line("garbage"), None);
    }

    #[test]
    fn coverage_needs_contiguous_writable_mappings() {
        let v = |start, end, write| Vma { start, end, read: true, write, offset: 0, inode: 0 };
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
    fn this_process_has_its_own_stack_mapped() {
        let x = 5u64;
        let maps = read_self();
        assert!(covered_rw(&maps, (&x as *const u64) as u64, 8), "{maps:?}");
    }
}
