//! The commands a queue holds ([`Command`]) and the fields a replay can patch ([`Field`]).

use crate::error::{Error, Result};

/// One command, with device addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Wait until the signal at `addr` reaches `value`.
    Wait {
        /// Device address of the signal value.
        addr: u64,
        /// Value to wait for.
        value: u64,
    },
    /// Write `value` to the signal at `addr`.
    Signal {
        /// Device address of the signal value.
        addr: u64,
        /// Value to write.
        value: u64,
    },
    /// Write the device clock to the timestamp at `addr` (a signal's `+8`).
    Timestamp {
        /// Device address of the timestamp.
        addr: u64,
    },
    /// Run a program.
    Exec {
        /// Backend handle of the loaded program (a code address or a table index).
        program: u64,
        /// Device address of the kernel-argument block.
        kernargs: u64,
        /// Global size (work-groups, or calls for CPU `core_id` kernels).
        global: [u32; 3],
        /// Local size (threads per work-group).
        local: [u32; 3],
    },
    /// Copy `bytes` from `src` to `dst` (device addresses).
    Copy {
        /// Destination.
        dst: u64,
        /// Source.
        src: u64,
        /// Byte count.
        bytes: u64,
    },
    /// Make earlier memory writes visible to later commands.
    Barrier,
}

impl Command {
    /// The value of `field` in this command (`None` when the command has no such field).
    pub fn field(&self, field: Field) -> Option<u64> {
        Some(match (*self, field) {
            (Command::Wait { value, .. } | Command::Signal { value, .. }, Field::Value) => value,
            (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => {
                addr
            }
            (Command::Exec { program, .. }, Field::Program) => program,
            (Command::Exec { kernargs, .. }, Field::Kernargs) => kernargs,
            (Command::Exec { global, .. }, Field::Global(d)) => u64::from(*global.get(usize::from(d))?),
            (Command::Exec { local, .. }, Field::Local(d)) => u64::from(*local.get(usize::from(d))?),
            (Command::Copy { dst, .. }, Field::Dst) => dst,
            (Command::Copy { src, .. }, Field::Src) => src,
            (Command::Copy { bytes, .. }, Field::Size) => bytes,
            _ => return None,
        })
    }

    /// Set `field` to `v`; `Ok(false)` when the command has no such field.
    ///
    /// Errors: [`Error::InvalidArgument`] when `v` does not fit a 32-bit field (grid sizes).
    pub fn set_field(&mut self, field: Field, v: u64) -> Result<bool> {
        let narrow = || {
            u32::try_from(v).map_err(|_| Error::InvalidArgument {
                what: "queue patch: value does not fit a 32-bit field",
                value: v,
            })
        };
        let slot: &mut u64 = match (self, field) {
            (Command::Wait { value, .. } | Command::Signal { value, .. }, Field::Value) => value,
            (Command::Wait { addr, .. } | Command::Signal { addr, .. } | Command::Timestamp { addr }, Field::Addr) => {
                addr
            }
            (Command::Exec { program, .. }, Field::Program) => program,
            (Command::Exec { kernargs, .. }, Field::Kernargs) => kernargs,
            (Command::Exec { global, .. }, Field::Global(d)) => match global.get_mut(usize::from(d)) {
                Some(g) => {
                    *g = narrow()?;
                    return Ok(true);
                }
                None => return Ok(false),
            },
            (Command::Exec { local, .. }, Field::Local(d)) => match local.get_mut(usize::from(d)) {
                Some(l) => {
                    *l = narrow()?;
                    return Ok(true);
                }
                None => return Ok(false),
            },
            (Command::Copy { dst, .. }, Field::Dst) => dst,
            (Command::Copy { src, .. }, Field::Src) => src,
            (Command::Copy { bytes, .. }, Field::Size) => bytes,
            _ => return Ok(false),
        };
        *slot = v;
        Ok(true)
    }
}

/// The fields of a command a replay can patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Signal/wait value.
    Value,
    /// Signal/wait/timestamp address.
    Addr,
    /// Exec: program handle.
    Program,
    /// Exec: kernel-argument address.
    Kernargs,
    /// Exec: global size, dimension 0..3.
    Global(u8),
    /// Exec: local size, dimension 0..3.
    Local(u8),
    /// Copy destination.
    Dst,
    /// Copy source.
    Src,
    /// Copy size.
    Size,
}
