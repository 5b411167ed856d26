//! One error type for the whole runtime.
//!
//! Every variant carries the context a user needs to act on it: what failed, on which device,
//! at which address or size. No variant needs the heap, so errors work on `no_std` without
//! `alloc`; with `alloc`, [`Error::context`] wraps an error in a human-readable location
//! ("bundle mlp: program 2"). Parsers and device code return these errors instead of panicking.

use core::fmt;

/// A device name short enough to live in an error without allocation (`"CPU"`, `"SIM:1"`).
/// Longer names are cut at 32 bytes.
pub type DeviceName = heapless::String<DEVICE_NAME_CAP>;

/// Bytes a [`DeviceName`] holds.
const DEVICE_NAME_CAP: usize = 32;

/// Make a [`DeviceName`] from any string, cutting it at the capacity (at the last whole
/// character that fits).
pub fn device_name(name: &str) -> DeviceName {
    let mut end = name.len().min(DEVICE_NAME_CAP);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = DeviceName::new();
    // at most DEVICE_NAME_CAP bytes: it fits
    let _ = out.push_str(name.get(..end).unwrap_or_default());
    out
}

/// Result alias used across hcq.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Everything that can go wrong in hcq.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An access, view or range that does not fit inside its region.
    OutOfBounds {
        /// What was accessed ("mmio view", "buffer view", "launch argument").
        what: &'static str,
        /// Start of the access, in bytes from the region's start.
        offset: u64,
        /// Length of the access in bytes.
        len: u64,
        /// Size of the region in bytes.
        limit: u64,
    },
    /// A device allocation failed even after the allocator's cache was freed.
    OutOfMemory {
        /// The device the allocation was for.
        device: DeviceName,
        /// Bytes asked for.
        requested: u64,
        /// Bytes in use on the device when it failed.
        used: u64,
    },
    /// A fixed arena (bump allocator, range allocator, ring, pool) has no room left.
    OutOfSpace {
        /// Which arena.
        what: &'static str,
        /// Bytes asked for.
        requested: u64,
        /// The arena's capacity in bytes.
        capacity: u64,
    },
    /// A value that must be aligned is not.
    Misaligned {
        /// What was misaligned.
        what: &'static str,
        /// The value.
        value: u64,
        /// The alignment it needs.
        align: u64,
    },
    /// An argument that is out of its valid domain.
    InvalidArgument {
        /// What the argument is and which rule it broke.
        what: &'static str,
        /// The offending value.
        value: u64,
    },
    /// A wait on a signal ran out of time without progress: the device is hung.
    Timeout {
        /// The device whose signal was awaited.
        device: DeviceName,
        /// The value waited for.
        awaited: u64,
        /// The last value read from the signal.
        last: u64,
        /// How long the signal made no progress, in milliseconds.
        timeout_ms: u64,
    },
    /// The device hung earlier and refuses further work until it is reset.
    DeviceHung {
        /// The device.
        device: DeviceName,
    },
    /// No device of that name is known to the registry.
    UnknownDevice {
        /// The name asked for.
        name: DeviceName,
    },
    /// The device is known but could not be opened (missing device node, wrong host, ...).
    DeviceUnavailable {
        /// The device.
        device: DeviceName,
        /// Why it cannot be opened.
        reason: &'static str,
    },
    /// Input data (a bundle, an ELF object, a manifest) is malformed.
    Malformed {
        /// Which input and which part of it ("elf section header", "hcqb launch table").
        what: &'static str,
        /// Byte offset (or index) where the problem was found.
        at: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// Input asks for something this build does not support (a relocation type, a version).
    Unsupported {
        /// What is unsupported ("elf relocation type", "hcqb version").
        what: &'static str,
        /// The raw value found.
        value: u64,
    },
    /// Two things that must agree do not (a checksum, an argument count, a device).
    Mismatch {
        /// What was compared.
        what: &'static str,
        /// The value expected.
        expected: u64,
        /// The value found.
        found: u64,
    },
    /// A size or count (from a bundle, an argument) is beyond what the device states it can do
    /// (its [`DeviceLimits`](crate::limits::DeviceLimits)); refused before anything is allocated.
    LimitExceeded {
        /// The field and the limit it broke ("buffer nbytes vs device memory size").
        what: &'static str,
        /// The value asked for.
        value: u64,
        /// The device's limit.
        limit: u64,
    },
    /// An operating-system call failed.
    Os {
        /// Which call ("mmap", "mprotect", "open /dev/kgsl-3d0").
        what: &'static str,
        /// The raw OS error number.
        errno: i32,
    },
    /// An error with a location around it ("bundle mlp: program 2: ...").
    #[cfg(feature = "alloc")]
    Context {
        /// Where the error happened.
        context: alloc::string::String,
        /// The error itself.
        source: alloc::boxed::Box<Error>,
    },
}

impl Error {
    /// Wrap this error in a location ("bundle mlp: launch 3").
    #[cfg(feature = "alloc")]
    pub fn context(self, context: impl Into<alloc::string::String>) -> Error {
        Error::Context { context: context.into(), source: alloc::boxed::Box::new(self) }
    }

    /// The innermost error, under any [`Error::Context`] wrappers.
    pub fn root(&self) -> &Error {
        #[cfg(feature = "alloc")]
        if let Error::Context { source, .. } = self {
            return source.root();
        }
        self
    }
}

/// Attach a location to the error of a `Result` (`.context("program 3")?`).
#[cfg(feature = "alloc")]
pub trait ResultExt<T> {
    /// Wrap the error, if any, in `context`.
    fn context(self, context: impl Into<alloc::string::String>) -> Result<T>;
    /// Wrap the error, if any, in a lazily built context.
    fn with_context<C: Into<alloc::string::String>>(self, f: impl FnOnce() -> C) -> Result<T>;
}

#[cfg(feature = "alloc")]
impl<T> ResultExt<T> for Result<T> {
    fn context(self, context: impl Into<alloc::string::String>) -> Result<T> {
        self.map_err(|e| e.context(context))
    }
    fn with_context<C: Into<alloc::string::String>>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| e.context(f()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OutOfBounds { what, offset, len, limit } => {
                write!(f, "{what}: access of {len} bytes at offset {offset:#x} is outside the region of {limit} bytes")
            }
            Error::OutOfMemory { device, requested, used } => {
                write!(f, "allocation of {requested} bytes failed on {device} ({used} bytes in use)")
            }
            Error::OutOfSpace { what, requested, capacity } => {
                write!(f, "{what}: no room for {requested} bytes (capacity {capacity} bytes)")
            }
            Error::Misaligned { what, value, align } => {
                write!(f, "{what}: {value:#x} is not aligned to {align}")
            }
            Error::InvalidArgument { what, value } => write!(f, "invalid argument: {what} (got {value})"),
            Error::Timeout { device, awaited, last, timeout_ms } => write!(
                f,
                "wait timeout on {device}: signal not set to {awaited}, but {last} (no progress for {timeout_ms} ms); device marked hung"
            ),
            Error::DeviceHung { device } => write!(f, "{device} is hung; reset it before submitting more work"),
            Error::UnknownDevice { name } => write!(f, "unknown device \"{name}\""),
            Error::DeviceUnavailable { device, reason } => write!(f, "{device} is unavailable: {reason}"),
            Error::Malformed { what, at, reason } => write!(f, "malformed {what} at {at:#x}: {reason}"),
            Error::Unsupported { what, value } => write!(f, "unsupported {what} ({value:#x})"),
            Error::Mismatch { what, expected, found } => {
                write!(f, "{what} mismatch: expected {expected:#x}, found {found:#x}")
            }
            Error::LimitExceeded { what, value, limit } => {
                write!(f, "{what}: {value} exceeds the device limit of {limit}")
            }
            Error::Os { what, errno } => write!(f, "{what} failed: os error {errno}"),
            #[cfg(feature = "alloc")]
            Error::Context { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl core::error::Error for Error {}

/// The same information as `Display`, for the defmt logger of target builds.
#[cfg(feature = "defmt")]
impl defmt::Format for Error {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Error::OutOfBounds { what, offset, len, limit } => {
                defmt::write!(f, "{=str}: {} bytes at {:#x} outside {} bytes", what, len, offset, limit)
            }
            Error::OutOfMemory { device, requested, used } => {
                defmt::write!(
                    f,
                    "allocation of {} bytes failed on {=str} ({} in use)",
                    requested,
                    device.as_str(),
                    used
                )
            }
            Error::OutOfSpace { what, requested, capacity } => {
                defmt::write!(f, "{=str}: no room for {} bytes (capacity {})", what, requested, capacity)
            }
            Error::Misaligned { what, value, align } => {
                defmt::write!(f, "{=str}: {:#x} not aligned to {}", what, value, align)
            }
            Error::InvalidArgument { what, value } => defmt::write!(f, "invalid argument: {=str} ({})", what, value),
            Error::Timeout { device, awaited, last, timeout_ms } => defmt::write!(
                f,
                "wait timeout on {=str}: signal not {}, but {} ({} ms)",
                device.as_str(),
                awaited,
                last,
                timeout_ms
            ),
            Error::DeviceHung { device } => defmt::write!(f, "{=str} is hung", device.as_str()),
            Error::UnknownDevice { name } => defmt::write!(f, "unknown device {=str}", name.as_str()),
            Error::DeviceUnavailable { device, reason } => {
                defmt::write!(f, "{=str} is unavailable: {=str}", device.as_str(), reason)
            }
            Error::Malformed { what, at, reason } => {
                defmt::write!(f, "malformed {=str} at {:#x}: {=str}", what, at, reason)
            }
            Error::Unsupported { what, value } => defmt::write!(f, "unsupported {=str} ({:#x})", what, value),
            Error::Mismatch { what, expected, found } => {
                defmt::write!(f, "{=str} mismatch: expected {:#x}, found {:#x}", what, expected, found)
            }
            Error::LimitExceeded { what, value, limit } => {
                defmt::write!(f, "{=str}: {} exceeds the device limit of {}", what, value, limit)
            }
            Error::Os { what, errno } => defmt::write!(f, "{=str} failed: os error {}", what, errno),
            #[cfg(feature = "alloc")]
            Error::Context { context, source } => defmt::write!(f, "{=str}: {}", context.as_str(), &**source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::ToString;

    #[test]
    fn oom_message_names_device_size_and_usage() {
        let e = Error::OutOfMemory { device: device_name("CPU"), requested: 4096, used: 123 };
        let s = e.to_string();
        assert!(s.contains("CPU") && s.contains("4096") && s.contains("123"), "{s}");
    }

    #[test]
    fn context_wraps_and_root_unwraps() {
        let e = Error::Malformed { what: "elf header", at: 4, reason: "bad class" }
            .context("program 2")
            .context("bundle mlp");
        assert_eq!(e.to_string(), "bundle mlp: program 2: malformed elf header at 0x4: bad class");
        assert!(matches!(e.root(), Error::Malformed { at: 4, .. }));
    }

    #[test]
    fn a_limit_error_names_the_field_the_value_and_the_limit() {
        let e = Error::LimitExceeded { what: "buffer nbytes vs device memory size", value: 1 << 40, limit: 1 << 30 };
        assert_eq!(
            e.to_string(),
            "buffer nbytes vs device memory size: 1099511627776 exceeds the device limit of 1073741824"
        );
    }

    #[test]
    fn long_device_names_are_cut_not_rejected() {
        let n = device_name("A_VERY_LONG_DEVICE_NAME_THAT_GOES_ON_AND_ON:12345");
        assert_eq!(n.len(), 32);
        // a character that does not fit whole is left out
        let n = device_name(&std::format!("x{}", "\u{e4}".repeat(20)));
        assert_eq!((n.len(), n.chars().last()), (31, Some('\u{e4}')));
        assert_eq!(device_name("CPU").as_str(), "CPU");
    }
}
