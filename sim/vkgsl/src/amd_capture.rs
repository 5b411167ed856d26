//! `HCQ_VKGSL_AMD_CAPTURE=FILE`: the virtual gfx1100's command streams, every packet its compute
//! CP and SDMA engines execute, as text (hcq-sim-amd's [`hcq_sim_amd::trace`] line).
//!
//! The file is opened for appending (created when missing): every process that makes a virtual
//! AMD GPU (one per process, as KFD's) writes a header line and then one line per packet, each a
//! single `write`, so the lines of processes sharing the file (a `fork` child, a child that
//! inherits the variable) interleave whole. Remove the file before a run to get that run alone.
//!
//! ```text
//! # hcq-vkgsl AMD command-stream capture 1: pid <pid>: <command line>
//! <seq> <pid> <engine> q=<queue> <where>@<address> <OPCODE> [<field>=<value> ...] | <dwords>
//! ```
//!
//! `seq` counts the process's packets from 0 in the order they completed (both engines); the
//! rest of the line is [`hcq_sim_amd::Packet::write_line`]'s (the fields of each opcode there).
//! A write that fails is said once on stderr and ends the capture.

use hcq_sim_amd::{Packet, PacketSink};
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;

/// The environment variable naming the capture file.
pub const ENV: &str = "HCQ_VKGSL_AMD_CAPTURE";
/// The format's version in the header line.
pub const VERSION: u32 = 1;

struct State {
    file: Option<std::fs::File>,
    line: String,
    seq: u64,
}

/// An open capture: a [`PacketSink`] for the simulated GPU.
pub struct AmdCapture {
    pid: u32,
    state: Mutex<State>,
}

impl core::fmt::Debug for AmdCapture {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AmdCapture").field("pid", &self.pid).finish_non_exhaustive()
    }
}

impl AmdCapture {
    /// Open `path` for appending (close-on-exec) and write the header line.
    pub fn open(path: &Path) -> std::io::Result<AmdCapture> {
        let mut file =
            std::fs::OpenOptions::new().append(true).create(true).custom_flags(libc::O_CLOEXEC).open(path)?;
        let pid = std::process::id();
        let cmd: Vec<String> = std::env::args().collect();
        let header = format!("# hcq-vkgsl AMD command-stream capture {VERSION}: pid {pid}: {}\n", cmd.join(" "));
        file.write_all(header.as_bytes())?;
        Ok(AmdCapture { pid, state: Mutex::new(State { file: Some(file), line: String::new(), seq: 0 }) })
    }

    /// The capture `$HCQ_VKGSL_AMD_CAPTURE` names, if set (one that cannot be opened is said on
    /// stderr, and the device runs without it).
    pub fn from_env() -> Option<AmdCapture> {
        let path = std::env::var_os(ENV).filter(|p| !p.is_empty())?;
        let path = Path::new(&path);
        AmdCapture::open(path)
            .map_err(|e| eprintln!("hcq-vkgsl: cannot open the AMD command-stream capture {}: {e}", path.display()))
            .ok()
    }
}

impl PacketSink for AmdCapture {
    fn packet(&self, p: &Packet<'_>) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let State { file, line, seq } = &mut *g;
        let Some(f) = file.as_mut() else { return };
        line.clear();
        // Writing to a String cannot fail.
        let _ = writeln!(line, "{seq} {} {p}", self.pid);
        *seq += 1;
        if let Err(e) = f.write_all(line.as_bytes()) {
            eprintln!("hcq-vkgsl: the AMD command-stream capture stops: {e}");
            *file = None;
        }
    }
}
