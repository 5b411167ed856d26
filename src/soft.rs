//! The reference command encoding and its interpreter: a software command processor.
//!
//! Devices without a hardware command processor — the CPU device, the simulated devices of the
//! std shim, a bare-metal board running kernels inline — encode their queues with
//! [`SoftEncoder`] and run them with [`SoftCp`] ([`cp`]: the soft command processor, its
//! executor, context, sizes and register block; driven by threads in [`threaded`] or by the
//! waiting code in [`inline`]), which reads the ring like a hardware CP would:
//! from its read pointer up to the doorbell's write pointer, one packet at a time, wrapping at
//! the ring's end.
//!
//! Packet format (little-endian `u32` words): a header `opcode << 24 | length_in_words`
//! (header included), then the body. 64-bit values are two words, low first.
//!
//! | opcode | command | body |
//! |---|---|---|
//! | 0x00 | nop | `length - 1` ignored words |
//! | 0x01 | wait | addr, value |
//! | 0x02 | signal | addr, value |
//! | 0x03 | timestamp | addr |
//! | 0x04 | exec | program, kernargs, global\[3\] (u32), local\[3\] (u32) |
//! | 0x05 | copy | dst, src, bytes |
//! | 0x06 | barrier | — |

use crate::error::{Error, Result};
use crate::mmio::{MmioBus, Width};
use crate::queue::{CmdWriter, Command, Encoder, Field};
use crate::sync::{Ordering, fence};

/// Opcodes of the reference encoding.
pub mod op {
    /// No operation (padding).
    pub const NOP: u32 = 0x00;
    /// Wait for a signal.
    pub const WAIT: u32 = 0x01;
    /// Write a signal.
    pub const SIGNAL: u32 = 0x02;
    /// Write a timestamp.
    pub const TIMESTAMP: u32 = 0x03;
    /// Run a program.
    pub const EXEC: u32 = 0x04;
    /// Copy memory.
    pub const COPY: u32 = 0x05;
    /// Memory barrier.
    pub const BARRIER: u32 = 0x06;
}

/// Longest packet of the encoding, in words.
pub const MAX_PACKET_WORDS: usize = 11;

#[inline]
const fn header(opcode: u32, len: u32) -> u32 {
    opcode << 24 | len
}

/// The reference encoder.
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftEncoder;

impl Encoder for SoftEncoder {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        match *cmd {
            Command::Wait { addr, value } | Command::Signal { addr, value } => {
                let opc = if matches!(cmd, Command::Wait { .. }) { op::WAIT } else { op::SIGNAL };
                w.word(header(opc, 5));
                w.field64(Field::Addr, addr);
                w.field64(Field::Value, value);
            }
            Command::Timestamp { addr } => {
                w.word(header(op::TIMESTAMP, 3));
                w.field64(Field::Addr, addr);
            }
            Command::Exec { program, kernargs, global, local } => {
                w.word(header(op::EXEC, 11));
                w.field64(Field::Program, program);
                w.field64(Field::Kernargs, kernargs);
                for (d, g) in global.iter().enumerate() {
                    w.field32(Field::Global(d as u8), *g);
                }
                for (d, l) in local.iter().enumerate() {
                    w.field32(Field::Local(d as u8), *l);
                }
            }
            Command::Copy { dst, src, bytes } => {
                w.word(header(op::COPY, 7));
                w.field64(Field::Dst, dst);
                w.field64(Field::Src, src);
                w.field64(Field::Size, bytes);
            }
            Command::Barrier => w.word(header(op::BARRIER, 1)),
        }
        Ok(())
    }
}

#[inline]
fn q(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

/// Decode one packet from `words` (which holds at least the whole packet). Returns the command
/// (`None` for a nop) and the packet length.
pub fn decode_one(words: &[u32]) -> Result<(Option<Command>, usize)> {
    let h = *words.first().ok_or_else(|| Error::Malformed { what: "soft packet", at: 0, reason: "empty" })?;
    let (opc, len) = (h >> 24, (h & 0x00ff_ffff) as usize);
    if len == 0 {
        return Err(Error::Malformed { what: "soft packet header", at: 0, reason: "zero length" });
    }
    let body = words.get(1..len).ok_or_else(|| Error::Malformed { what: "soft packet", at: 0, reason: "truncated" })?;
    let want = match opc {
        op::NOP => return Ok((None, len)),
        op::WAIT | op::SIGNAL => 4,
        op::TIMESTAMP => 2,
        op::EXEC => 10,
        op::COPY => 6,
        op::BARRIER => 0,
        _ => return Err(Error::Unsupported { what: "soft opcode", value: opc as u64 }),
    };
    if body.len() != want {
        return Err(Error::Malformed { what: "soft packet", at: 0, reason: "length does not match opcode" });
    }
    // the body in a fixed array: the constant indices below need no bounds checks
    let mut b = [0u32; 10];
    for (d, s) in b.iter_mut().zip(body) {
        *d = *s;
    }
    let cmd = match opc {
        op::WAIT => Command::Wait { addr: q(b[0], b[1]), value: q(b[2], b[3]) },
        op::SIGNAL => Command::Signal { addr: q(b[0], b[1]), value: q(b[2], b[3]) },
        op::TIMESTAMP => Command::Timestamp { addr: q(b[0], b[1]) },
        op::EXEC => Command::Exec {
            program: q(b[0], b[1]),
            kernargs: q(b[2], b[3]),
            global: [b[4], b[5], b[6]],
            local: [b[7], b[8], b[9]],
        },
        op::COPY => Command::Copy { dst: q(b[0], b[1]), src: q(b[2], b[3]), bytes: q(b[4], b[5]) },
        _ => Command::Barrier,
    };
    Ok((Some(cmd), len))
}

/// Decode a whole word stream (a built queue), skipping nops.
pub fn decode(words: &[u32]) -> impl Iterator<Item = Result<Command>> + '_ {
    let mut pos = 0usize;
    let mut failed = false;
    core::iter::from_fn(move || {
        loop {
            if failed || pos >= words.len() {
                return None;
            }
            match decode_one(&words[pos..]) {
                Ok((cmd, len)) => {
                    pos += len;
                    if let Some(c) = cmd {
                        return Some(Ok(c));
                    }
                }
                Err(e) => {
                    failed = true;
                    return Some(Err(e));
                }
            }
        }
    })
}

/// What a software command processor acts on. Implemented by each soft backend.
pub trait SoftTarget {
    /// True when the signal at `addr` has reached `value`.
    fn wait_reached(&mut self, addr: u64, value: u64) -> Result<bool>;
    /// Store `value` to the signal at `addr` (Release).
    fn signal(&mut self, addr: u64, value: u64) -> Result<()>;
    /// Store the device clock to the timestamp at `addr`.
    fn timestamp(&mut self, addr: u64) -> Result<()>;
    /// Run a program.
    fn exec(&mut self, program: u64, kernargs: u64, global: [u32; 3], local: [u32; 3]) -> Result<()>;
    /// Copy memory.
    fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()>;
    /// Memory barrier (default: a full fence).
    fn barrier(&mut self) {
        fence(Ordering::SeqCst);
    }
    /// Called before each command runs (after a satisfied wait). Return `false` to hold the
    /// command (it is offered again on the next step): how simulated hardware injects latency,
    /// stalls and hangs. Default: run it.
    fn before(&mut self, cmd: &Command) -> Result<bool> {
        let _ = cmd;
        Ok(true)
    }
}

/// What one [`SoftCp::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Executed this command and advanced the read pointer.
    Ran(Command),
    /// The command at the read pointer waits for a signal that is not there yet.
    Blocked {
        /// The awaited signal.
        addr: u64,
        /// The awaited value.
        value: u64,
    },
    /// The target held the command at the read pointer ([`SoftTarget::before`]).
    Held,
    /// The read pointer has reached the write pointer.
    Idle,
}

/// The consumer side of a ring in the reference encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftCp {
    rptr: u64,
}

impl SoftCp {
    /// A processor at read pointer 0.
    pub const fn new() -> Self {
        Self { rptr: 0 }
    }

    /// The read pointer (monotonic, in words).
    pub fn rptr(&self) -> u64 {
        self.rptr
    }

    /// Execute the packet at the read pointer of the ring in `ring` (`ring_words` words, read
    /// modulo its size) if one is there (`rptr < wptr`). A malformed packet or a failing command
    /// is an error and the read pointer stays on it.
    pub fn step<B, T>(&mut self, ring: &B, ring_words: u64, wptr: u64, t: &mut T) -> Result<Step>
    where
        B: MmioBus + ?Sized,
        T: SoftTarget + ?Sized,
    {
        if ring_words == 0 {
            return Err(Error::InvalidArgument { what: "soft ring size", value: 0 });
        }
        let read = |pos: u64| -> Result<u32> { Ok(ring.read(((pos % ring_words) * 4) as usize, Width::U32)? as u32) };
        let mut buf = [0u32; MAX_PACKET_WORDS];
        let cmd = loop {
            if self.rptr >= wptr {
                return Ok(Step::Idle);
            }
            let h = read(self.rptr)?;
            let len = (h & 0x00ff_ffff) as usize;
            if len == 0 || self.rptr + len as u64 > wptr {
                return Err(Error::Malformed { what: "soft ring packet", at: self.rptr, reason: "bad length" });
            }
            if h >> 24 == op::NOP {
                self.rptr += len as u64;
                continue;
            }
            if len > MAX_PACKET_WORDS {
                return Err(Error::Malformed { what: "soft ring packet", at: self.rptr, reason: "too long" });
            }
            // the packet in one or two bulk reads (it may wrap at the ring's end)
            let at = (self.rptr % ring_words) as usize;
            let first = len.min(ring_words as usize - at);
            let bytes = zerocopy::IntoBytes::as_mut_bytes(&mut buf[..len]);
            let (a, b) = bytes.split_at_mut(first * 4);
            ring.read_bytes(at * 4, a)?;
            if !b.is_empty() {
                ring.read_bytes(0, b)?;
            }
            let at = self.rptr;
            let (cmd, _) = decode_one(&buf[..len]).map_err(|e| match e {
                Error::Malformed { what, reason, .. } => Error::Malformed { what, at, reason },
                other => other,
            })?;
            match cmd {
                Some(c) => break (c, len),
                None => self.rptr += len as u64,
            }
        };
        let (cmd, len) = cmd;
        if let Command::Wait { addr, value } = cmd
            && !t.wait_reached(addr, value)?
        {
            return Ok(Step::Blocked { addr, value });
        }
        if !t.before(&cmd)? {
            return Ok(Step::Held);
        }
        match cmd {
            Command::Wait { .. } => {}
            Command::Signal { addr, value } => t.signal(addr, value)?,
            Command::Timestamp { addr } => t.timestamp(addr)?,
            Command::Exec { program, kernargs, global, local } => t.exec(program, kernargs, global, local)?,
            Command::Copy { dst, src, bytes } => t.copy(dst, src, bytes)?,
            Command::Barrier => t.barrier(),
        }
        self.rptr += len as u64;
        Ok(Step::Ran(cmd))
    }

    /// Run every packet in `[rptr, wptr)` that can run now: [`SoftCp::step`] until it returns
    /// anything but [`Step::Ran`], which is returned (`Idle` once the span is done). The read
    /// pointer advances past each command that ran; the caller publishes it once per batch. On
    /// an error the read pointer stays on the failing packet, as with `step`.
    pub fn run<B, T>(&mut self, ring: &B, ring_words: u64, wptr: u64, t: &mut T) -> Result<Step>
    where
        B: MmioBus + ?Sized,
        T: SoftTarget + ?Sized,
    {
        loop {
            match self.step(ring, ring_words, wptr, t)? {
                Step::Ran(_) => {}
                other => return Ok(other),
            }
        }
    }
}

/// Signal access for soft targets over the process-wide [`HOST_SIGNALS`] pool: only addresses
/// of live signal slots are accepted.
#[cfg(feature = "alloc")]
pub mod host_signals {
    use super::*;
    use crate::signal::SignalPool;

    /// The signal pool shared by every soft device in this process (one "peer group"), so a
    /// queue on one device can wait on another device's timeline.
    pub static HOST_SIGNALS: SignalPool = SignalPool::new();

    /// Read the value at `addr` (O(log pages), no scan).
    pub fn load(addr: u64) -> Result<u64> {
        HOST_SIGNALS.load(addr)
    }

    /// Store `value` at `addr` (a value or a timestamp word) as a signal or timestamp command
    /// does: a timeline's value is refused ([`SignalPool::store`]).
    pub fn store(addr: u64, value: u64) -> Result<()> {
        HOST_SIGNALS.store(addr, value)
    }
}

#[cfg(feature = "alloc")]
pub use host_signals::HOST_SIGNALS;

pub mod cp;
pub mod inline;
#[cfg(feature = "std")]
pub mod threaded;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::mmio::HostRegion;
    use alloc::vec::Vec;

    #[derive(Default)]
    struct Recorder {
        log: Vec<Command>,
        signals: [u64; 4],
    }
    impl SoftTarget for Recorder {
        fn wait_reached(&mut self, addr: u64, value: u64) -> Result<bool> {
            Ok(self.signals[addr as usize] >= value)
        }
        fn signal(&mut self, addr: u64, value: u64) -> Result<()> {
            self.signals[addr as usize] = value;
            self.log.push(Command::Signal { addr, value });
            Ok(())
        }
        fn timestamp(&mut self, addr: u64) -> Result<()> {
            self.log.push(Command::Timestamp { addr });
            Ok(())
        }
        fn exec(&mut self, program: u64, kernargs: u64, global: [u32; 3], local: [u32; 3]) -> Result<()> {
            self.log.push(Command::Exec { program, kernargs, global, local });
            Ok(())
        }
        fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<()> {
            self.log.push(Command::Copy { dst, src, bytes });
            Ok(())
        }
    }

    fn encode_all(cmds: &[Command]) -> Vec<u32> {
        let (mut words, mut marks) = (Vec::new(), Vec::new());
        for (i, c) in cmds.iter().enumerate() {
            let mut w = CmdWriter::new(&mut words, &mut marks, i as u32);
            SoftEncoder.encode(c, &mut w).unwrap();
        }
        words
    }

    #[test]
    fn encode_decode_round_trip() {
        let cmds = [
            Command::Wait { addr: 0x1000, value: u64::MAX },
            Command::Exec { program: 3, kernargs: 0xffff_0000_1234, global: [1, 2, 3], local: [4, 5, 6] },
            Command::Copy { dst: 1, src: 2, bytes: 3 },
            Command::Timestamp { addr: 0x1008 },
            Command::Barrier,
            Command::Signal { addr: 0x1000, value: 9 },
        ];
        let words = encode_all(&cmds);
        let back: Vec<Command> = decode(&words).map(|r| r.unwrap()).collect();
        assert_eq!(back, cmds);
    }

    #[test]
    fn malformed_packets_are_errors() {
        assert!(decode_one(&[]).is_err());
        assert!(decode_one(&[header(op::WAIT, 0)]).is_err());
        assert!(decode_one(&[header(op::WAIT, 5), 0, 0]).is_err(), "truncated");
        assert!(decode_one(&[header(op::WAIT, 3), 0, 0]).is_err(), "wrong length for opcode");
        assert!(matches!(decode_one(&[header(0x7f, 1)]), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn the_processor_follows_the_ring_across_its_end_and_blocks_on_waits() {
        // a 32-word ring; write packets at a position near the end so one straddles the wrap
        let ring = HostRegion::new(128, 8).unwrap();
        let words = encode_all(&[
            Command::Signal { addr: 1, value: 5 },
            Command::Wait { addr: 2, value: 1 },
            Command::Exec { program: 1, kernargs: 2, global: [1; 3], local: [1; 3] },
        ]);
        let start = 28u64;
        for (i, w) in words.iter().enumerate() {
            ring.write(((start + i as u64) % 32 * 4) as usize, Width::U32, u64::from(*w)).unwrap();
        }
        let mut cp = SoftCp { rptr: start };
        let mut t = Recorder::default();
        let wptr = start + words.len() as u64;
        assert!(matches!(cp.step(&ring, 32, wptr, &mut t).unwrap(), Step::Ran(Command::Signal { .. })));
        assert_eq!(cp.step(&ring, 32, wptr, &mut t).unwrap(), Step::Blocked { addr: 2, value: 1 });
        t.signals[2] = 1;
        assert!(matches!(cp.step(&ring, 32, wptr, &mut t).unwrap(), Step::Ran(Command::Wait { .. })));
        assert!(matches!(cp.step(&ring, 32, wptr, &mut t).unwrap(), Step::Ran(Command::Exec { program: 1, .. })));
        assert_eq!(cp.step(&ring, 32, wptr, &mut t).unwrap(), Step::Idle);
        assert_eq!(cp.rptr(), wptr);
    }

    #[test]
    fn a_batch_runs_up_to_the_first_blocked_wait_and_resumes_there() {
        let ring = HostRegion::new(256, 8).unwrap();
        let words = encode_all(&[
            Command::Exec { program: 1, kernargs: 0, global: [1; 3], local: [1; 3] },
            Command::Signal { addr: 1, value: 5 },
            Command::Wait { addr: 2, value: 1 },
            Command::Exec { program: 2, kernargs: 0, global: [1; 3], local: [1; 3] },
        ]);
        ring.write_bytes(0, zerocopy::IntoBytes::as_bytes(&words[..])).unwrap();
        let (mut cp, mut t, wptr) = (SoftCp::new(), Recorder::default(), words.len() as u64);
        assert_eq!(cp.run(&ring, 64, wptr, &mut t).unwrap(), Step::Blocked { addr: 2, value: 1 });
        assert_eq!(t.log.len(), 2, "the exec and the signal ran, nothing after the wait");
        let at_wait = cp.rptr();
        assert_eq!(cp.run(&ring, 64, wptr, &mut t).unwrap(), Step::Blocked { addr: 2, value: 1 });
        assert_eq!(cp.rptr(), at_wait, "a blocked batch does not move");
        t.signals[2] = 1;
        assert_eq!(cp.run(&ring, 64, wptr, &mut t).unwrap(), Step::Idle);
        assert!(matches!(t.log[2], Command::Exec { program: 2, .. }));
        assert_eq!(cp.rptr(), wptr);
    }

    #[test]
    fn host_signals_accept_only_slot_addresses() {
        let s = HOST_SIGNALS.alloc(0);
        host_signals::store(s.addr(), 42).unwrap();
        assert_eq!(s.value(), 42);
        host_signals::store(s.timestamp_addr(), 7).unwrap();
        assert_eq!(s.timestamp(), 7);
        assert_eq!(host_signals::load(s.addr()).unwrap(), 42);
        assert!(host_signals::store(8, 1).is_err());
        assert!(host_signals::load(s.addr() + 3).is_err());
        drop(s);
    }
}
