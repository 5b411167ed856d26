//! A queue's fault report: which queue, where in its stream, what.

use crate::memory::MemFault;
use hcq_rdna3::exec::{Fault, FaultKind, LoadError};
use std::fmt;
use std::time::Duration;

/// A queue of the simulated GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub u32);

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The engine a queue feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The compute micro-engine (MEC): PM4 packets.
    Compute,
    /// An SDMA engine: SDMA packets.
    Sdma,
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Compute => "compute",
            Engine::Sdma => "sdma",
        })
    }
}

/// Where a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    /// In the ring.
    Ring {
        /// The queue's read pointer at the packet (dwords for compute, bytes for SDMA; it counts
        /// up from 0 without wrapping, as the write pointer does).
        ptr: u64,
        /// The packet's dword index in the ring.
        index: u64,
    },
    /// In an indirect buffer.
    Ib {
        /// The IB's address.
        va: u64,
        /// The packet's dword offset in it.
        dword: u64,
        /// Its nesting level (1: called from the ring).
        level: u32,
    },
    /// Not at a packet (a doorbell's write pointer).
    Doorbell {
        /// The value rung.
        value: u64,
    },
}

impl fmt::Display for Where {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Where::Ring { ptr, index } => write!(f, "ring dword {index} (read pointer {ptr})"),
            Where::Ib { va, dword, level } => write!(f, "IB{level} at {va:#x} dword {dword}"),
            Where::Doorbell { value } => write!(f, "doorbell value {value}"),
        }
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// A PM4 header that is not type 3.
    NotType3 {
        /// Its type (header bits 31:30).
        ty: u32,
    },
    /// An opcode the engine does not execute.
    UnknownOpcode {
        /// The opcode (PM4: header bits 15:8; SDMA: bits 7:0).
        opcode: u32,
        /// The SDMA sub-opcode (bits 15:8), where it matters.
        sub_op: Option<u32>,
        /// Its name, when the hardware defines it but the simulator does not run it.
        name: Option<&'static str>,
    },
    /// The packet's length runs past what the ring (up to the write pointer) or the IB holds.
    Truncated {
        /// Dwords the packet takes.
        need: u64,
        /// Dwords left.
        have: u64,
    },
    /// A packet's fields are wrong (its length for the opcode, a reserved value, an alignment).
    Malformed(String),
    /// A register write or read outside the window its packet reaches.
    Register {
        /// The first register's dword offset (absolute).
        reg: u64,
        /// Registers in the access.
        count: u64,
        /// The window.
        window: &'static str,
    },
    /// A memory access outside every mapped allocation.
    Memory {
        /// The access.
        fault: MemFault,
        /// What the engine was doing.
        what: &'static str,
    },
    /// The dispatch's register state cannot be run.
    Dispatch(String),
    /// The program at the dispatch's address does not load on the interpreter.
    Load {
        /// The program's address.
        program: u64,
        /// Why.
        error: LoadError,
    },
    /// A wave of the dispatch faulted.
    Shader {
        /// The program's address.
        program: u64,
        /// The interpreter's report (work-group, wave, lane, instruction, address).
        fault: Fault,
    },
    /// IBs nested deeper than the CP fetches.
    IbDepth {
        /// The deepest level.
        limit: u32,
    },
    /// A wait (`WAIT_REG_MEM`, `POLL_REGMEM`) whose condition did not hold within the hang
    /// timeout.
    Hang {
        /// How long it waited.
        waited: Duration,
        /// What it waited for, with the last value seen.
        what: String,
    },
    /// The queue ran more packets in one go than the packet budget (a loop of chained IBs).
    Budget {
        /// The budget.
        packets: u64,
    },
    /// A doorbell's write pointer the queue cannot take.
    Pointer(String),
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::NotType3 { ty } => write!(f, "a type-{ty} packet (the MEC takes type-3 packets only)"),
            What::UnknownOpcode { opcode, sub_op, name } => {
                write!(f, "opcode {opcode:#x}")?;
                if let Some(s) = sub_op {
                    write!(f, " sub-op {s:#x}")?;
                }
                match name {
                    Some(n) => write!(f, " ({n}) is not simulated"),
                    None => f.write_str(" is unknown"),
                }
            }
            What::Truncated { need, have } => {
                write!(f, "the packet takes {need} dwords but only {have} are left before the end")
            }
            What::Malformed(s) => f.write_str(s),
            What::Register { reg, count, window } => {
                write!(f, "{count} register(s) from {reg:#x} are outside the {window} window")
            }
            What::Memory { fault, what } => write!(f, "{what}: {fault}"),
            What::Dispatch(s) => write!(f, "dispatch: {s}"),
            What::Load { program, error } => write!(f, "the program at {program:#x} does not load: {error}"),
            What::Shader { program, fault } => write!(f, "the program at {program:#x}: {fault}"),
            What::IbDepth { limit } => write!(f, "an INDIRECT_BUFFER deeper than IB{limit}"),
            What::Hang { waited, what } => write!(f, "hung: waited {:.3} s for {what}", waited.as_secs_f64()),
            What::Budget { packets } => write!(f, "ran {packets} packets without reaching the write pointer"),
            What::Pointer(s) => f.write_str(s),
        }
    }
}

/// A queue's fault: the queue stopped at this packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueFault {
    /// The queue.
    pub queue: QueueId,
    /// Its engine.
    pub engine: Engine,
    /// Where the packet is.
    pub at: Where,
    /// The packet's first dword, when there is a packet.
    pub header: Option<u32>,
    /// What went wrong.
    pub what: What,
}

impl QueueFault {
    /// The faulting address and direction, when the fault is an access outside memory (then it
    /// is raised as a memory exception, else as a hardware exception).
    pub fn memory(&self) -> Option<(u64, bool)> {
        match &self.what {
            What::Memory { fault, .. } => Some((fault.va, fault.write)),
            What::Shader { fault, .. } => match fault.kind {
                FaultKind::Memory { write, .. } => Some((fault.addr, write)),
                _ => None,
            },
            _ => None,
        }
    }
}

impl fmt::Display for QueueFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} queue {}: {}", self.engine, self.queue, self.at)?;
        if let Some(h) = self.header {
            write!(f, " (header {h:#010x})")?;
        }
        write!(f, ": {}", self.what)
    }
}

impl std::error::Error for QueueFault {}
