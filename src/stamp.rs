//! Completion stamps and channel ids: the two numbers every submission carries, as types.
//!
//! A [`Stamp`] is a value on a device's timeline: the value a submission's final signal writes,
//! and so the point after which everything that submission used (ring words, kernel arguments,
//! buffers, a loaded program) may be reused. Timeline values are handed out as a monotonic
//! `u64`, so stamps compare as integers on the host; a *signal reading* may carry only 32 bits
//! (Adreno's `CP_EVENT_WRITE`, KGSL timestamps), which [`Stamp::reached_by`] compares by wrapping
//! difference, as Asahi's `EventValue` does.
//!
//! A [`ChannelId`] names one channel (one ring and doorbell, or IB pool) of a device's engine.

use core::fmt;

/// A point on a device's timeline. `Stamp::ZERO` is "before the first submission": it is
/// always reached.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Stamp(u64);

/// How many bits of a stamp the device's signal writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StampBits {
    /// The whole 64-bit value.
    #[default]
    Full,
    /// The low 32 bits only: compare by wrapping difference.
    Low32,
}

impl Stamp {
    /// Before any submission (always reached).
    pub const ZERO: Stamp = Stamp(0);

    /// The stamp of timeline value `v`.
    #[inline]
    pub const fn new(v: u64) -> Self {
        Self(v)
    }

    /// The timeline value.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The stamp after this one.
    #[inline]
    pub const fn next(self) -> Self {
        Self(self.0.wrapping_add(1))
    }

    /// The stamp before this one (`ZERO` stays `ZERO`).
    #[inline]
    pub const fn prev(self) -> Self {
        Self(self.0.saturating_sub(1))
    }

    /// Whether this is [`Stamp::ZERO`].
    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Signed distance from `other` to `self` in the low 32 bits (positive when `self` is
    /// later), valid while the two are within 2^31 of each other.
    #[inline]
    pub const fn delta32(self, other: Stamp) -> i32 {
        // CAST: truncation to the 32-bit payload is the point; the difference is reinterpreted
        // as signed so that a wrapped payload compares as later.
        (self.0 as u32).wrapping_sub(other.0 as u32) as i32
    }

    /// True when a signal reading `current` has reached `self`: `current >= self` for full
    /// stamps, `current.delta32(self) >= 0` for 32-bit payloads.
    #[inline]
    pub const fn reached_by(self, current: Stamp, bits: StampBits) -> bool {
        match bits {
            StampBits::Full => current.0 >= self.0,
            StampBits::Low32 => current.delta32(self) >= 0,
        }
    }
}

impl From<u64> for Stamp {
    fn from(v: u64) -> Self {
        Self(v)
    }
}

impl From<Stamp> for u64 {
    fn from(s: Stamp) -> Self {
        s.0
    }
}

impl fmt::Debug for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stamp({})", self.0)
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Stamp {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", self.0)
    }
}

/// One channel of a device's engine (an index into its channels, in the order the backend built them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct ChannelId(u8);

impl ChannelId {
    /// The first channel (the compute channel on every backend so far).
    pub const FIRST: ChannelId = ChannelId(0);

    /// Channel number `i` (channels are few: a device has at most 256).
    #[inline]
    pub const fn new(i: u8) -> Self {
        Self(i)
    }

    /// The index into the device's channels.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl From<u8> for ChannelId {
    fn from(i: u8) -> Self {
        Self(i)
    }
}

impl fmt::Display for ChannelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "engine {}", self.0)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for ChannelId {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "engine {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_stamps_compare_as_integers() {
        let s = Stamp::new(5);
        assert!(s.reached_by(Stamp::new(5), StampBits::Full));
        assert!(s.reached_by(Stamp::new(6), StampBits::Full));
        assert!(!s.reached_by(Stamp::new(4), StampBits::Full));
        // a 64-bit reading that differs only above bit 32 is not a wrap
        assert!(!Stamp::new(0x1_0000_0002).reached_by(Stamp::new(2), StampBits::Full));
        assert!(Stamp::ZERO.reached_by(Stamp::ZERO, StampBits::Full));
    }

    #[test]
    fn low32_stamps_compare_by_wrapping_difference() {
        // 0x0000_0002 comes after 0xffff_fffe once the 32-bit payload wrapped
        assert!(Stamp::new(0xffff_fffe).reached_by(Stamp::new(2), StampBits::Low32));
        assert!(!Stamp::new(2).reached_by(Stamp::new(0xffff_fffe), StampBits::Low32));
        assert!(!Stamp::new(0xffff_fffe).reached_by(Stamp::new(2), StampBits::Full));
        assert_eq!(Stamp::new(2).delta32(Stamp::new(0xffff_fffe)), 4);
        assert_eq!(Stamp::new(0xffff_fffe).delta32(Stamp::new(2)), -4);
    }

    #[test]
    fn next_and_prev() {
        assert_eq!(Stamp::new(7).next(), Stamp::new(8));
        assert_eq!(Stamp::new(7).prev(), Stamp::new(6));
        assert_eq!(Stamp::ZERO.prev(), Stamp::ZERO);
        assert!(Stamp::ZERO.is_zero() && !Stamp::new(1).is_zero());
        assert_eq!(ChannelId::new(1).index(), 1);
        assert_eq!(std::format!("{} {}", Stamp::new(3), ChannelId::FIRST), "3 engine 0");
    }
}
