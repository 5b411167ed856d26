//! The command-stream capture: every packet the compute CP and the SDMA engines execute, handed
//! as it completes to a [`PacketSink`] set on the GPU ([`crate::Gpu::trace_packets`]), with the
//! fields the engine decoded, and one documented text line per packet ([`Packet::write_line`]).
//!
//! A packet is handed over once it has run: a wait (`WAIT_REG_MEM`, `POLL_REGMEM`) when its
//! condition held, an `INDIRECT_BUFFER` when the CP enters its IB (whose packets follow, marked
//! with the IB's level), a `DISPATCH_DIRECT` when its work-groups are done. A packet that faults
//! is not handed over (the queue's fault report names it). With no sink set the engines pay one
//! branch per packet and allocate nothing.
//!
//! # The line
//!
//! ```text
//! <engine> q=<queue> <where>@<address> <OPCODE> [<field>=<value> ...] | <dword> <dword> ...
//! ```
//!
//! - `engine`: `cp` (the compute MEC, PM4 type-3 packets) or `sdma`;
//! - `queue`: the simulator's queue id (in creation order from 0; KFD's `queue_id`);
//! - `where`: `ring` (the queue's ring; the address is the packet's dword in it), `ib1` or `ib2`
//!   (inside an indirect buffer called from the ring, or from an IB1; the address is the packet's);
//! - `OPCODE`: the packet's name (`SET_SH_REG`, `DISPATCH_DIRECT`, `COPY_LINEAR`, ...; one the
//!   engine runs without naming it: `OP_0x..`);
//! - the fields, `name=value` (numbers in hex with `0x`, booleans `0`/`1`), those that matter
//!   for the packet: every register a `SET_SH_REG` writes by name (`COMPUTE_PGM_LO=0x...`), the
//!   addresses, sizes, compare function and reference, event and data/interrupt selects, cache
//!   actions (see [`Packet::write_fields`] for each opcode);
//! - after ` | `, the packet's dwords as the engine fetched them (8 hex digits each, the header
//!   first; a `NOP`'s skipped body is not fetched and not listed).
//!
//! `DISPATCH_DIRECT` also says what its addresses point at, so that two streams whose buffers
//! sit at different addresses can be compared: `pgm` (the code address), `code_bytes` and
//! `code_fnv` (the length and FNV-1a 64 hash of the program the CP loaded: its words up to the
//! first `s_code_end`), `user_sgprs` (`RSRC2.USER_SGPR`), `user_data` (those
//! `COMPUTE_USER_DATA_*` values, comma-separated) and, for each pair of user-data registers
//! `(2k, 2k + 1)` whose 64-bit value is a mapped address, `mem<2k>=` the first
//! [`DISPATCH_MEM_BYTES`] bytes there (fewer at the end of its allocation) in hex: the
//! kernel-argument block, the HSA dispatch packet.

use crate::cp::pm4::*;
use crate::cp::regs;
use crate::fault::{Engine, QueueId, Where};
use crate::sdma::packets as sdma;
use std::fmt::{self, Write};

/// The bytes a `DISPATCH_DIRECT` line shows at each user-data address.
pub const DISPATCH_MEM_BYTES: usize = 256;

/// Where executed packets go (the virtual device's capture file, a test's vector).
pub trait PacketSink: Send + Sync {
    /// One packet, as it completes, on the thread that ran it. Packets of one queue come in the
    /// order they ran; those of different queues as the CP's passes interleave them.
    fn packet(&self, p: &Packet<'_>);
}

/// What a `DISPATCH_DIRECT` ran, beside its packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DispatchSeen {
    /// The program's address (`COMPUTE_PGM_LO/HI` << 8).
    pub pgm: u64,
    /// Bytes of the program the CP loaded (to its first `s_code_end`); 0 when no work-group ran.
    pub code_bytes: u64,
    /// Their FNV-1a 64 hash (of the little-endian bytes).
    pub code_fnv: u64,
    /// `COMPUTE_USER_DATA_0..` as the dispatch took them (`RSRC2.USER_SGPR` of them).
    pub user_data: Vec<u32>,
    /// Per even user-data index `k` whose pair is a mapped address: the bytes there.
    pub mem: Vec<(u32, Vec<u8>)>,
}

/// One executed packet.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    /// Its queue.
    pub queue: QueueId,
    /// Its engine.
    pub engine: Engine,
    /// Where it was fetched (the ring, or an IB and its level).
    pub at: Where,
    /// Its address.
    pub addr: u64,
    /// Its header.
    pub header: u32,
    /// The dwords after the header the engine fetched (a `NOP`'s: none).
    pub body: &'a [u32],
    /// A `DISPATCH_DIRECT`'s program and what its user data point at.
    pub dispatch: Option<&'a DispatchSeen>,
}

/// FNV-1a 64 of `words`' little-endian bytes.
pub fn fnv1a64(words: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The gfx11 compute SH register at absolute dword offset `reg`, by name (tinygrad 0.14
/// `autogen/am/regs.py` `gc_11_0_0` + `GC_BASE__INST0_SEG0`, as [`regs`] computes them).
pub fn sh_reg_name(reg: u32) -> Option<&'static str> {
    const NAMES: [&str; 0x34] = [
        "COMPUTE_DISPATCH_INITIATOR",
        "COMPUTE_DIM_X",
        "COMPUTE_DIM_Y",
        "COMPUTE_DIM_Z",
        "COMPUTE_START_X",
        "COMPUTE_START_Y",
        "COMPUTE_START_Z",
        "COMPUTE_NUM_THREAD_X",
        "COMPUTE_NUM_THREAD_Y",
        "COMPUTE_NUM_THREAD_Z",
        "COMPUTE_PIPELINESTAT_ENABLE",
        "COMPUTE_PERFCOUNT_ENABLE",
        "COMPUTE_PGM_LO",
        "COMPUTE_PGM_HI",
        "COMPUTE_DISPATCH_PKT_ADDR_LO",
        "COMPUTE_DISPATCH_PKT_ADDR_HI",
        "COMPUTE_DISPATCH_SCRATCH_BASE_LO",
        "COMPUTE_DISPATCH_SCRATCH_BASE_HI",
        "COMPUTE_PGM_RSRC1",
        "COMPUTE_PGM_RSRC2",
        "COMPUTE_VMID",
        "COMPUTE_RESOURCE_LIMITS",
        "COMPUTE_STATIC_THREAD_MGMT_SE0",
        "COMPUTE_STATIC_THREAD_MGMT_SE1",
        "COMPUTE_TMPRING_SIZE",
        "COMPUTE_STATIC_THREAD_MGMT_SE2",
        "COMPUTE_STATIC_THREAD_MGMT_SE3",
        "COMPUTE_RESTART_X",
        "COMPUTE_RESTART_Y",
        "COMPUTE_RESTART_Z",
        "COMPUTE_THREAD_TRACE_ENABLE",
        "COMPUTE_MISC_RESERVED",
        "COMPUTE_DISPATCH_ID",
        "COMPUTE_THREADGROUP_ID",
        "COMPUTE_REQ_CTRL",
        "",
        "COMPUTE_USER_ACCUM_0",
        "COMPUTE_USER_ACCUM_1",
        "COMPUTE_USER_ACCUM_2",
        "COMPUTE_USER_ACCUM_3",
        "COMPUTE_PGM_RSRC3",
        "COMPUTE_DDID_INDEX",
        "COMPUTE_SHADER_CHKSUM",
        "COMPUTE_STATIC_THREAD_MGMT_SE4",
        "COMPUTE_STATIC_THREAD_MGMT_SE5",
        "COMPUTE_STATIC_THREAD_MGMT_SE6",
        "COMPUTE_STATIC_THREAD_MGMT_SE7",
        "COMPUTE_DISPATCH_INTERLEAVE",
        "COMPUTE_RELAUNCH",
        "COMPUTE_WAVE_RESTORE_ADDR_LO",
        "COMPUTE_WAVE_RESTORE_ADDR_HI",
        "COMPUTE_RELAUNCH2",
    ];
    const USER: [&str; regs::USER_DATA_COUNT as usize] = [
        "COMPUTE_USER_DATA_0",
        "COMPUTE_USER_DATA_1",
        "COMPUTE_USER_DATA_2",
        "COMPUTE_USER_DATA_3",
        "COMPUTE_USER_DATA_4",
        "COMPUTE_USER_DATA_5",
        "COMPUTE_USER_DATA_6",
        "COMPUTE_USER_DATA_7",
        "COMPUTE_USER_DATA_8",
        "COMPUTE_USER_DATA_9",
        "COMPUTE_USER_DATA_10",
        "COMPUTE_USER_DATA_11",
        "COMPUTE_USER_DATA_12",
        "COMPUTE_USER_DATA_13",
        "COMPUTE_USER_DATA_14",
        "COMPUTE_USER_DATA_15",
    ];
    let base = regs::COMPUTE_DISPATCH_INITIATOR;
    let user = regs::COMPUTE_USER_DATA_0;
    let name = match reg {
        // CAST: below 0x34.
        r if (base..base + 0x34).contains(&r) => NAMES[(r - base) as usize],
        // CAST: below 16.
        r if (user..user + regs::USER_DATA_COUNT).contains(&r) => USER[(r - user) as usize],
        0x2e7d => "COMPUTE_DISPATCH_TUNNEL",
        0x2e7e => "COMPUTE_DISPATCH_END",
        0x2e7f => "COMPUTE_NOWHERE",
        _ => "",
    };
    (!name.is_empty()).then_some(name)
}

/// A PM4 opcode's name (those the CP runs, then those it knows but does not run).
pub fn pm4_name(op: u32) -> Option<&'static str> {
    Some(match op {
        NOP => "NOP",
        DISPATCH_DIRECT => "DISPATCH_DIRECT",
        PRED_EXEC => "PRED_EXEC",
        WAIT_REG_MEM => "WAIT_REG_MEM",
        INDIRECT_BUFFER => "INDIRECT_BUFFER",
        COPY_DATA => "COPY_DATA",
        EVENT_WRITE => "EVENT_WRITE",
        RELEASE_MEM => "RELEASE_MEM",
        ACQUIRE_MEM => "ACQUIRE_MEM",
        SET_SH_REG => "SET_SH_REG",
        SET_UCONFIG_REG => "SET_UCONFIG_REG",
        _ => return KNOWN_UNSIMULATED.iter().find(|(o, _)| *o == op).map(|(_, n)| *n),
    })
}

/// An SDMA packet's name by opcode and sub-opcode.
pub fn sdma_name(op: u32, sub: u32) -> Option<&'static str> {
    Some(match (op, sub) {
        (sdma::OP_NOP, _) => "NOP",
        (sdma::OP_COPY, sdma::SUB_COPY_LINEAR) => "COPY_LINEAR",
        (sdma::OP_WRITE, sdma::SUB_WRITE_LINEAR) => "WRITE_LINEAR",
        (sdma::OP_INDIRECT, _) => "INDIRECT",
        (sdma::OP_FENCE, _) => "FENCE",
        (sdma::OP_TRAP, _) => "TRAP",
        (sdma::OP_POLL_REGMEM, _) => "POLL_REGMEM",
        (sdma::OP_TIMESTAMP, sdma::SUB_TIMESTAMP_GET_GLOBAL) => "TIMESTAMP_GET_GLOBAL",
        _ => return sdma::KNOWN_UNSIMULATED.iter().find(|(o, _)| *o == op).map(|(_, n)| *n),
    })
}

/// A PM4 event type's name (those tinygrad and hcq emit).
fn event_name(ev: u32) -> Option<&'static str> {
    Some(match ev {
        CS_PARTIAL_FLUSH => "CS_PARTIAL_FLUSH",
        CACHE_FLUSH_AND_INV_TS_EVENT => "CACHE_FLUSH_AND_INV_TS_EVENT",
        BOTTOM_OF_PIPE_TS => "BOTTOM_OF_PIPE_TS",
        _ => return None,
    })
}

const FUNCS: [&str; 8] = ["always", "lt", "le", "eq", "ne", "ge", "gt", "reserved"];

fn addr(lo: u32, hi: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

/// `body[i]`, 0 past its end (the engines hand over whole packets; this keeps a hand-made one
/// from panicking).
fn at(body: &[u32], i: usize) -> u32 {
    body.get(i).copied().unwrap_or(0)
}

impl Packet<'_> {
    /// The packet's name (`OP_0x..` for an opcode without one).
    pub fn name(&self, out: &mut impl Write) -> fmt::Result {
        let h = self.header;
        let named = match self.engine {
            Engine::Compute => pm4_name(packet_opcode(h)),
            Engine::Sdma => sdma_name(h & sdma::OP_MASK, (h >> sdma::SUB_OP_SHIFT) & 0xff),
        };
        match named {
            Some(n) => out.write_str(n),
            None if self.engine == Engine::Compute => write!(out, "OP_{:#x}", packet_opcode(h)),
            None => write!(out, "OP_{:#x}_{:#x}", h & sdma::OP_MASK, (h >> sdma::SUB_OP_SHIFT) & 0xff),
        }
    }

    /// The line (see the module docs), without a newline.
    pub fn write_line(&self, out: &mut impl Write) -> fmt::Result {
        let engine = match self.engine {
            Engine::Compute => "cp",
            Engine::Sdma => "sdma",
        };
        let place = match self.at {
            Where::Ib { level, .. } => match level {
                1 => "ib1",
                _ => "ib2",
            },
            _ => "ring",
        };
        write!(out, "{engine} q={} {place}@{:#x} ", self.queue, self.addr)?;
        self.name(out)?;
        self.write_fields(out)?;
        write!(out, " | {:08x}", self.header)?;
        for w in self.body {
            write!(out, " {w:08x}")?;
        }
        Ok(())
    }

    /// The fields of the line, each as ` name=value`.
    ///
    /// | engine, packet | fields |
    /// |---|---|
    /// | cp `SET_SH_REG` | `<register>=<value>` for each register (`SH_0x<offset>` without a name) |
    /// | cp `SET_UCONFIG_REG` | `UCONFIG_0x<offset>=<value>` |
    /// | cp `ACQUIRE_MEM` | `cntl`, `size`, `base`, `poll`, `gcr` (`GCR_CNTL`) |
    /// | cp `RELEASE_MEM` | `event` (name or number), `index`, `gcr` (dword 1 bits 12+), `dst`, `int_sel`, `data_sel`, `addr`, `data`, `ctxid` |
    /// | cp `WAIT_REG_MEM` | `func`, `space` (`mem`/`reg`), `op`, then `addr` or `reg`/`reg2`, `ref`, `mask`, `poll` |
    /// | cp `INDIRECT_BUFFER` | `addr`, `dwords`, `chain`, `vmid` |
    /// | cp `EVENT_WRITE` | `event`, `index` |
    /// | cp `DISPATCH_DIRECT` | `x`, `y`, `z`, `initiator`, then [`DispatchSeen`]'s (module docs) |
    /// | cp `COPY_DATA` | `src_sel`, `dst_sel`, `count64`, `wr_confirm`, `src`, `dst` |
    /// | cp `PRED_EXEC` | `xcc`, `dwords` |
    /// | cp `NOP` | `dwords` (the packet's length) |
    /// | sdma `COPY_LINEAR` | `bytes`, `src`, `dst`, `backwards` |
    /// | sdma `WRITE_LINEAR` | `dst`, `dwords` |
    /// | sdma `FENCE` | `addr`, `data`, `mtype` |
    /// | sdma `TRAP` | `context` |
    /// | sdma `POLL_REGMEM` | `mem` or `hdp_flush`, `func`, `addr`, `ref`, `mask`, `interval`, `retry` |
    /// | sdma `TIMESTAMP_GET_GLOBAL` | `addr` |
    /// | sdma `INDIRECT` | `addr`, `dwords` |
    /// | sdma `NOP` | `dwords` |
    pub fn write_fields(&self, out: &mut impl Write) -> fmt::Result {
        match self.engine {
            Engine::Compute => self.pm4_fields(out),
            Engine::Sdma => self.sdma_fields(out),
        }
    }

    fn pm4_fields(&self, out: &mut impl Write) -> fmt::Result {
        let (h, b) = (self.header, self.body);
        match packet_opcode(h) {
            NOP => {
                let len = if packet_count(h) == NOP_ONE_DWORD_COUNT { 1 } else { packet_count(h) + 2 };
                write!(out, " dwords={len}")
            }
            op @ (SET_SH_REG | SET_UCONFIG_REG) => {
                let start = at(b, 0) & 0xffff;
                let base = if op == SET_SH_REG { SH_REG_START } else { UCONFIG_REG_START };
                for (k, v) in b.iter().skip(1).enumerate() {
                    // CAST: k < 2^14.
                    let reg = base + start + k as u32;
                    match (op, sh_reg_name(reg)) {
                        (SET_SH_REG, Some(n)) => write!(out, " {n}={v:#x}")?,
                        (SET_SH_REG, None) => write!(out, " SH_{reg:#x}={v:#x}")?,
                        _ => write!(out, " UCONFIG_{reg:#x}={v:#x}")?,
                    }
                }
                Ok(())
            }
            ACQUIRE_MEM => write!(
                out,
                " cntl={:#x} size={:#x} base={:#x} poll={:#x} gcr={:#x}",
                at(b, 0),
                addr(at(b, 1), at(b, 2)),
                addr(at(b, 3), at(b, 4)),
                at(b, 5),
                at(b, 6)
            ),
            RELEASE_MEM => {
                let ev = at(b, 0) & EVENT_TYPE_MASK;
                match event_name(ev) {
                    Some(n) => write!(out, " event={n}")?,
                    None => write!(out, " event={ev:#x}")?,
                }
                let m = at(b, 1);
                write!(
                    out,
                    " index={} gcr={:#x} dst={} int_sel={} data_sel={} addr={:#x} data={:#x} ctxid={:#x}",
                    (at(b, 0) >> EVENT_INDEX_SHIFT) & 0xf,
                    at(b, 0) >> 12,
                    (m >> RELEASE_DST_SEL_SHIFT) & 3,
                    (m >> RELEASE_INT_SEL_SHIFT) & 7,
                    (m >> RELEASE_DATA_SEL_SHIFT) & 7,
                    addr(at(b, 2), at(b, 3)),
                    addr(at(b, 4), at(b, 5)),
                    at(b, 6)
                )
            }
            WAIT_REG_MEM => {
                let c = at(b, 0);
                let space = (c >> WAIT_MEM_SPACE_SHIFT) & 3;
                // CAST: a 3-bit field.
                write!(out, " func={}", FUNCS[(c & WAIT_FUNCTION_MASK) as usize])?;
                write!(out, " space={}", if space == 1 { "mem" } else { "reg" })?;
                write!(out, " op={}", (c >> WAIT_OPERATION_SHIFT) & 3)?;
                if space == 1 {
                    write!(out, " addr={:#x}", addr(at(b, 1), at(b, 2)))?;
                } else {
                    write!(out, " reg={:#x} reg2={:#x}", at(b, 1) & 0x3ffff, at(b, 2) & 0x3ffff)?;
                }
                write!(out, " ref={:#x} mask={:#x} poll={:#x}", at(b, 3), at(b, 4), at(b, 5))
            }
            INDIRECT_BUFFER => {
                let ctl = at(b, 2);
                write!(
                    out,
                    " addr={:#x} dwords={} chain={} vmid={}",
                    addr(at(b, 0), at(b, 1)),
                    ctl & IB_SIZE_MASK,
                    u32::from(ctl & IB_CHAIN != 0),
                    (ctl >> 24) & 0xf
                )
            }
            EVENT_WRITE => {
                let ev = at(b, 0) & EVENT_TYPE_MASK;
                match event_name(ev) {
                    Some(n) => write!(out, " event={n}")?,
                    None => write!(out, " event={ev:#x}")?,
                }
                write!(out, " index={}", (at(b, 0) >> EVENT_INDEX_SHIFT) & 0xf)
            }
            DISPATCH_DIRECT => {
                write!(out, " x={} y={} z={} initiator={:#x}", at(b, 0), at(b, 1), at(b, 2), at(b, 3))?;
                if let Some(d) = self.dispatch {
                    write!(out, " pgm={:#x} code_bytes={} code_fnv={:#018x}", d.pgm, d.code_bytes, d.code_fnv)?;
                    write!(out, " user_sgprs={} user_data=", d.user_data.len())?;
                    for (i, u) in d.user_data.iter().enumerate() {
                        write!(out, "{}{u:#x}", if i > 0 { "," } else { "" })?;
                    }
                    for (k, bytes) in &d.mem {
                        write!(out, " mem{k}=")?;
                        for x in bytes {
                            write!(out, "{x:02x}")?;
                        }
                    }
                }
                Ok(())
            }
            COPY_DATA => {
                let c = at(b, 0);
                write!(
                    out,
                    " src_sel={} dst_sel={} count64={} wr_confirm={} src={:#x} dst={:#x}",
                    c & COPY_SRC_SEL_MASK,
                    (c >> COPY_DST_SEL_SHIFT) & 0xf,
                    u32::from(c & COPY_COUNT_SEL_64 != 0),
                    u32::from(c & COPY_WR_CONFIRM != 0),
                    addr(at(b, 1), at(b, 2)),
                    addr(at(b, 3), at(b, 4))
                )
            }
            PRED_EXEC => {
                let c = at(b, 0);
                write!(out, " xcc={:#x} dwords={}", c >> PRED_EXEC_XCC_SHIFT, c & PRED_EXEC_COUNT_MASK)
            }
            _ => Ok(()),
        }
    }

    fn sdma_fields(&self, out: &mut impl Write) -> fmt::Result {
        let (h, b) = (self.header, self.body);
        let (op, sub) = (h & sdma::OP_MASK, (h >> sdma::SUB_OP_SHIFT) & 0xff);
        match (op, sub) {
            (sdma::OP_NOP, _) => write!(out, " dwords={}", 1 + ((h >> sdma::NOP_COUNT_SHIFT) & sdma::NOP_COUNT_MASK)),
            (sdma::OP_COPY, sdma::SUB_COPY_LINEAR) => write!(
                out,
                " bytes={:#x} src={:#x} dst={:#x} backwards={}",
                u64::from(at(b, 0) & sdma::COPY_COUNT_MASK) + 1,
                addr(at(b, 2), at(b, 3)),
                addr(at(b, 4), at(b, 5)),
                u32::from(h & sdma::COPY_BACKWARDS != 0)
            ),
            (sdma::OP_WRITE, sdma::SUB_WRITE_LINEAR) => {
                write!(out, " dst={:#x} dwords={}", addr(at(b, 0), at(b, 1)), (at(b, 2) & sdma::WRITE_COUNT_MASK) + 1)
            }
            (sdma::OP_INDIRECT, _) => {
                write!(out, " addr={:#x} dwords={}", addr(at(b, 0), at(b, 1)), at(b, 2) & sdma::INDIRECT_SIZE_MASK)
            }
            (sdma::OP_FENCE, _) => write!(
                out,
                " addr={:#x} data={:#x} mtype={}",
                addr(at(b, 0), at(b, 1)),
                at(b, 2),
                (h >> sdma::FENCE_MTYPE_SHIFT) & 7
            ),
            (sdma::OP_TRAP, _) => write!(out, " context={:#x}", at(b, 0) & sdma::TRAP_CONTEXT_MASK),
            (sdma::OP_POLL_REGMEM, _) => {
                let kind = if h & sdma::POLL_MEM != 0 {
                    "mem"
                } else if h & sdma::POLL_HDP_FLUSH != 0 {
                    "hdp_flush"
                } else {
                    "reg"
                };
                write!(
                    out,
                    " {kind}=1 func={} addr={:#x} ref={:#x} mask={:#x} interval={:#x} retry={:#x}",
                    // CAST: a 3-bit field.
                    FUNCS[((h >> sdma::POLL_FUNC_SHIFT) & 7) as usize],
                    addr(at(b, 0), at(b, 1)),
                    at(b, 2),
                    at(b, 3),
                    at(b, 4) & sdma::POLL_INTERVAL_MASK,
                    (at(b, 4) >> sdma::POLL_RETRY_SHIFT) & 0xfff
                )
            }
            (sdma::OP_TIMESTAMP, sdma::SUB_TIMESTAMP_GET_GLOBAL) => {
                write!(out, " addr={:#x}", addr(at(b, 0), at(b, 1)))
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Packet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_line(f)
    }
}
