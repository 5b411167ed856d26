//! `DISPATCH_DIRECT`: the dispatch built from the register file, its program loaded from GPU
//! memory (and cached), its work-groups run on the interpreter over every core.
//!
//! What each register means (tinygrad 0.14 `AMDComputeQueue.exec` writes them; fields from
//! `regs.py` `gc_11_0_0`):
//!
//! - `COMPUTE_PGM_LO/HI`: the code address >> 8 (so the entry is 256-byte aligned). The code is
//!   read from there up to the first `s_code_end` (LLVM pads the end of `.text` with it) or the
//!   end of its allocation, at most [`MAX_CODE_BYTES`], and handed to `Program::load`.
//! - `COMPUTE_PGM_RSRC1.VGPRS`: granules of 8 VGPRs (wave32) or 4 (wave64); more than 256 is
//!   refused. The interpreter gives every wave 256, so a kernel using more than it asked for is
//!   not caught. `SGPRS` is ignored on gfx10+ (every wave has 106); `PRIV`, the float mode and
//!   IEEE bits have no effect (the interpreter's float semantics are fixed).
//! - `COMPUTE_PGM_RSRC2`: `USER_SGPR` of `COMPUTE_USER_DATA_0..15` start the wave's SGPRs (at most
//!   16), then the work-group ids `TGID_X/Y/Z_EN` enables, the `TG_SIZE_EN` word, and with
//!   `SCRATCH_EN` the scratch wave offset; `LDS_SIZE` × 512 bytes of LDS (at most 64 KiB).
//! - `COMPUTE_NUM_THREAD_X/Y/Z.NUM_THREAD_FULL`: the work-group size (1 to 1024 work-items).
//! - `DISPATCH_DIRECT`'s dims: the work-group counts (`USE_THREAD_DIMENSIONS` is refused);
//!   `COMPUTE_START_*` must be 0 unless `FORCE_START_AT_000`.
//! - `DISPATCH_INITIATOR.CS_W32_EN`: wave32, else wave64; `COMPUTE_SHADER_EN` must be set.
//! - Scratch (`SCRATCH_EN`): `COMPUTE_TMPRING_SIZE.WAVESIZE` × 256 bytes a wave, shared by its
//!   lanes, is each lane's private segment (the interpreter keeps it per lane, outside GPU
//!   memory), and `WAVES` × that from `COMPUTE_DISPATCH_SCRATCH_BASE` (>> 8) must be mapped —
//!   the ring the hardware would address. Without `SCRATCH_EN` a lane has no private bytes.
//!
//! Work-groups are claimed in chunks from one counter by [`crate::GpuConfig::shader_threads`]
//! threads — the CP's own and `shader_threads - 1` kept in a pool (made at the first dispatch that
//! spreads, again in a forked child), as the a630's shader core keeps its own — each with its own
//! [`MemView`]; the first fault (lowest work-group index among those that faulted) stops the
//! others from claiming more. Writes of work-groups that ran before a fault stay in memory, as on
//! hardware. Every thread keeps its wave storage between dispatches (`WAVES`), so a warm
//! dispatch makes no waves.

use super::regs::*;
use crate::fault::What;
use crate::gpu::Shared;
use crate::memory::MemView;
use crate::trace::{DISPATCH_MEM_BYTES, DispatchSeen, fnv1a64};
use hcq_rdna3::decode::decode;
use hcq_rdna3::exec::{Dispatch, Fault, LoadError, Program, Stats, Waves};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The most code read from a program's address.
pub const MAX_CODE_BYTES: u64 = 1 << 20;
/// Programs kept decoded (the whole cache is dropped when it is full).
pub const PROGRAM_CACHE_ENTRIES: usize = 256;

/// A decoded program and the words it was decoded from.
#[derive(Debug)]
struct Cached {
    words: Vec<u32>,
    /// The words ended at the allocation's end (no `s_code_end`): then its size must match too.
    alloc_end: u64,
    program: Arc<Program>,
}

/// Decoded programs by (address, wave64), checked against memory at each use; and the shader
/// threads' pool (the dispatcher's state, behind the same lock).
#[derive(Default)]
pub struct ProgramCache {
    map: HashMap<(u64, bool), Cached>,
    /// Loads (misses) so far.
    pub loads: u64,
    /// Reuses (hits) so far.
    pub hits: u64,
    /// `shader_threads - 1` threads, with the id of the process that made them.
    pool: Option<(u32, Arc<rayon_core::ThreadPool>)>,
}

impl std::fmt::Debug for ProgramCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramCache")
            .field("programs", &self.map.len())
            .field("loads", &self.loads)
            .field("hits", &self.hits)
            .field("pool", &self.pool.as_ref().map(|(_, p)| p.current_num_threads()))
            .finish()
    }
}

impl ProgramCache {
    /// The pool of `threads - 1` threads, made at its first use, and again in a forked child
    /// (whose copy of the parent's pool has no threads: it is leaked, not dropped, since its locks
    /// may be held by threads that do not exist in the child).
    pub(crate) fn pool(&mut self, threads: usize) -> Result<Arc<rayon_core::ThreadPool>, What> {
        let pid = std::process::id();
        if self.pool.as_ref().is_some_and(|(p, _)| *p != pid)
            && let Some((_, stale)) = self.pool.take()
        {
            std::mem::forget(stale);
        }
        if let Some((_, p)) = &self.pool {
            return Ok(Arc::clone(p));
        }
        let built = rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads - 1)
            .thread_name(|i| format!("hcq-sim-amd-cu{}", i + 1))
            .build()
            .map_err(|e| What::Dispatch(format!("cannot start the shader core's {} threads: {e}", threads - 1)))?;
        let built = Arc::new(built);
        self.pool = Some((pid, Arc::clone(&built)));
        Ok(built)
    }

    /// The program at `pgm`: the cached one when memory still holds its words, else loaded anew.
    fn get(&mut self, view: &mut MemView, pgm: u64, wave64: bool) -> Result<Arc<Program>, What> {
        let (base, len) = view.allocation(pgm).ok_or(What::Memory {
            fault: crate::memory::MemFault { va: pgm, start: pgm, len: 4, write: false },
            what: "reading the program",
        })?;
        let alloc_end = base + len;
        if let Some(c) = self.map.get(&(pgm, wave64))
            && c.alloc_end == alloc_end
            && same_words(view, pgm, &c.words)
        {
            self.hits += 1;
            return Ok(Arc::clone(&c.program));
        }
        // CAST: at most MAX_CODE_BYTES / 4.
        let n = ((alloc_end - pgm).min(MAX_CODE_BYTES) / 4) as usize;
        if n == 0 {
            return Err(What::Load { program: pgm, error: LoadError::Empty { entry: 0 } });
        }
        let mut code = vec![0u32; n];
        view.read_words(pgm, &mut code).map_err(|fault| What::Memory { fault, what: "reading the program" })?;
        // The end of the program: after its first s_code_end at an instruction boundary.
        let mut at = 0;
        let mut end = code.len();
        while at < code.len() {
            match decode(&code, at) {
                Ok(i) => {
                    at += i.len;
                    if i.op.name == "s_code_end" {
                        end = at;
                        break;
                    }
                }
                Err(e) => return Err(What::Load { program: pgm, error: LoadError::Decode(e) }),
            }
        }
        code.truncate(end.min(code.len()));
        let program = Arc::new(Program::load(&code, 0, wave64).map_err(|error| What::Load { program: pgm, error })?);
        if self.map.len() >= PROGRAM_CACHE_ENTRIES {
            self.map.clear();
        }
        self.loads += 1;
        self.map.insert((pgm, wave64), Cached { words: code, alloc_end, program: Arc::clone(&program) });
        Ok(program)
    }
}

/// Memory at `va` still holds `words` (read a stack buffer at a time: a hit allocates nothing).
fn same_words(view: &mut MemView, va: u64, words: &[u32]) -> bool {
    let mut buf = [0u32; 256];
    let mut at = va;
    for chunk in words.chunks(buf.len()) {
        let now = &mut buf[..chunk.len()];
        if view.read_words(at, now).is_err() || now != chunk {
            return false;
        }
        // CAST: at most 256 words of 4 bytes.
        at += 4 * chunk.len() as u64;
    }
    true
}

/// What a dispatch ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchStats {
    /// Work-groups.
    pub groups: u64,
    /// The interpreter's counts.
    pub stats: Stats,
}

fn bad(s: String) -> What {
    What::Dispatch(s)
}

/// Run the dispatch `DISPATCH_DIRECT dims, initiator` describes with the queue's registers.
pub(crate) fn dispatch(sh: &Shared, regs: &RegFile, dims: [u32; 3], initiator: u32) -> Result<DispatchStats, What> {
    if initiator & INITIATOR_COMPUTE_SHADER_EN == 0 {
        return Err(bad(format!("DISPATCH_INITIATOR {initiator:#x} lacks COMPUTE_SHADER_EN")));
    }
    if initiator & INITIATOR_USE_THREAD_DIMENSIONS != 0 {
        return Err(bad(format!(
            "DISPATCH_INITIATOR {initiator:#x} sets USE_THREAD_DIMENSIONS (dims in threads), which is not simulated"
        )));
    }
    let start = [regs.get(COMPUTE_START_X), regs.get(COMPUTE_START_X + 1), regs.get(COMPUTE_START_X + 2)];
    if initiator & INITIATOR_FORCE_START_AT_000 == 0 && start != [0; 3] {
        return Err(bad(format!(
            "COMPUTE_START_X/Y/Z {start:?} without FORCE_START_AT_000: a dispatch not starting at (0,0,0) is not simulated"
        )));
    }
    let wave32 = initiator & INITIATOR_CS_W32_EN != 0;
    let lanes = if wave32 { 32 } else { 64 };
    let pgm = u64::from(regs.get(COMPUTE_PGM_HI) & 0xff) << 40 | u64::from(regs.get(COMPUTE_PGM_LO)) << 8;
    let rsrc1 = regs.get(COMPUTE_PGM_RSRC1);
    let vgprs = ((rsrc1 & 0x3f) + 1) * if wave32 { 8 } else { 4 };
    if vgprs > 256 {
        return Err(bad(format!("COMPUTE_PGM_RSRC1 {rsrc1:#x}: {vgprs} VGPRs, more than a wave's 256")));
    }
    let rsrc2 = regs.get(COMPUTE_PGM_RSRC2);
    let scratch_en = rsrc2 & 1 != 0;
    let user_sgpr_count = (rsrc2 >> 1) & 0x1f;
    if user_sgpr_count > USER_DATA_COUNT {
        return Err(bad(format!(
            "COMPUTE_PGM_RSRC2 {rsrc2:#x}: USER_SGPR {user_sgpr_count}, more than the {USER_DATA_COUNT} COMPUTE_USER_DATA registers"
        )));
    }
    let tgid = [rsrc2 & 1 << 7 != 0, rsrc2 & 1 << 8 != 0, rsrc2 & 1 << 9 != 0];
    let tg_size = rsrc2 & 1 << 10 != 0;
    let lds_bytes = ((rsrc2 >> 15) & 0x1ff) * LDS_GRANULE;
    if lds_bytes > MAX_LDS {
        return Err(bad(format!("COMPUTE_PGM_RSRC2 {rsrc2:#x}: LDS_SIZE {lds_bytes} bytes, gfx1100 has {MAX_LDS}")));
    }
    let local = [0, 1, 2].map(|d| regs.get(COMPUTE_NUM_THREAD_X + d) & 0xffff);
    let threads = u64::from(local[0]) * u64::from(local[1]) * u64::from(local[2]);
    if threads == 0 || threads > 1024 {
        return Err(bad(format!("COMPUTE_NUM_THREAD_X/Y/Z {local:?}: a work-group takes 1 to 1024 work-items")));
    }
    let mut view = sh.mem.view();
    let private_bytes = if scratch_en {
        let tmpring = regs.get(COMPUTE_TMPRING_SIZE);
        let (waves, wavesize) = (tmpring & 0xfff, (tmpring >> 12) & 0x7fff);
        let base = u64::from(regs.get(COMPUTE_DISPATCH_SCRATCH_BASE_HI) & 0xff) << 40
            | u64::from(regs.get(COMPUTE_DISPATCH_SCRATCH_BASE_LO)) << 8;
        let ring = u64::from(waves) * u64::from(wavesize) * u64::from(WAVESIZE_GRANULE);
        if ring > 0 && !view.covers(base, ring) {
            return Err(What::Memory {
                fault: crate::memory::MemFault { va: base, start: base, len: ring, write: true },
                what: "the scratch ring (COMPUTE_DISPATCH_SCRATCH_BASE, WAVES x WAVESIZE of COMPUTE_TMPRING_SIZE)",
            });
        }
        wavesize * WAVESIZE_GRANULE / lanes
    } else {
        0
    };
    let groups = u64::from(dims[0]) * u64::from(dims[1]) * u64::from(dims[2]);
    if groups == 0 {
        return Ok(DispatchStats::default());
    }
    if groups > sh.config.max_groups {
        return Err(bad(format!(
            "{dims:?} = {groups} work-groups, more than the simulator runs in one dispatch ({}, GpuConfig::max_groups)",
            sh.config.max_groups
        )));
    }
    let threads = sh.config.shader_threads.max(1);
    let (program, pool) = {
        let mut cache = lock(&sh.programs);
        let program = cache.get(&mut view, pgm, !wave32)?;
        let pool = if threads > 1 && groups > 1 { Some(cache.pool(threads)?) } else { None };
        (program, pool)
    };
    let mut user = [0u32; USER_DATA_COUNT as usize];
    for (k, u) in (0..user_sgpr_count).zip(user.iter_mut()) {
        *u = regs.get(COMPUTE_USER_DATA_0 + k);
    }
    let d = Dispatch {
        wave64: !wave32,
        local,
        // CAST: user_sgpr_count ≤ USER_DATA_COUNT (checked above).
        user_sgprs: &user[..user_sgpr_count as usize],
        user_sgpr_count,
        tgid,
        tg_size,
        wave_offset: scratch_en,
        lds_bytes,
        private_bytes,
        max_steps: sh.config.max_wave_steps,
    };
    let stats = run_groups(&program, &d, dims, groups, pool.as_deref(), view).map_err(|e| match e {
        GroupError::Fault(fault) => What::Shader { program: pgm, fault },
        GroupError::Panic { group, what } => What::Dispatch(format!(
            "the interpreter panicked in work-group {group:?} of the program at {pgm:#x} (a bug in hcq-rdna3): {what}"
        )),
    })?;
    Ok(DispatchStats { groups, stats })
}

/// What the `DISPATCH_DIRECT` that just ran (`initiator`, the queue's `regs`) points at, for the
/// packet trace ([`crate::trace`]): the program the CP loaded (its length and FNV-1a 64 hash; 0
/// when no work-group ran, so nothing was loaded), the user data, and the first
/// [`DISPATCH_MEM_BYTES`] bytes at each user-data pair that is a mapped address.
pub(crate) fn seen(sh: &Shared, view: &mut MemView, regs: &RegFile, initiator: u32) -> DispatchSeen {
    let pgm = u64::from(regs.get(COMPUTE_PGM_HI) & 0xff) << 40 | u64::from(regs.get(COMPUTE_PGM_LO)) << 8;
    let wave64 = initiator & INITIATOR_CS_W32_EN == 0;
    let (code_bytes, code_fnv) = match lock(&sh.programs).map.get(&(pgm, wave64)) {
        Some(c) => (4 * c.words.len() as u64, fnv1a64(&c.words)),
        None => (0, 0),
    };
    let count = ((regs.get(COMPUTE_PGM_RSRC2) >> 1) & 0x1f).min(USER_DATA_COUNT);
    let user_data: Vec<u32> = (0..count).map(|k| regs.get(COMPUTE_USER_DATA_0 + k)).collect();
    let mut mem = Vec::new();
    for (k, pair) in user_data.chunks_exact(2).enumerate() {
        let va = u64::from(pair[1]) << 32 | u64::from(pair[0]);
        let Some((base, len)) = view.allocation(va) else { continue };
        // CAST: at most DISPATCH_MEM_BYTES.
        let n = (base + len - va).min(DISPATCH_MEM_BYTES as u64) as usize;
        let mut bytes = vec![0u8; n];
        if view.read(va, &mut bytes).is_ok() {
            // CAST: k < 8.
            mem.push((2 * k as u32, bytes));
        }
    }
    DispatchSeen { pgm, code_bytes, code_fnv, user_data, mem }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn group_id(i: u64, dims: [u32; 3]) -> [u32; 3] {
    let (gx, gy) = (u64::from(dims[0]), u64::from(dims[1]));
    // CAST: each coordinate is below its u32 dimension.
    [(i % gx) as u32, ((i / gx) % gy) as u32, (i / (gx * gy)) as u32]
}

/// Why work-groups stopped.
#[derive(Clone, Debug)]
pub enum GroupError {
    /// A wave faulted.
    Fault(Fault),
    /// The interpreter panicked (a bug there): caught, so the simulator keeps running.
    Panic {
        /// The work-group.
        group: [u32; 3],
        /// The panic's message.
        what: String,
    },
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

std::thread_local! {
    /// Each thread's wave storage (SGPRs, VGPRs, LDS), kept between dispatches: the CP's thread
    /// and the pool's threads live as long as the GPU, so a dispatch allocates no wave state once
    /// every thread has run a work-group of its size (a reused wave zeroes only the VGPRs it wrote).
    static WAVES: std::cell::RefCell<Waves> = std::cell::RefCell::new(Waves::default());
}

/// `f` with this thread's wave storage ([`WAVES`]), or a fresh one should it be in use already
/// (never so today: no work-group runs inside another).
fn with_waves<R>(f: impl FnOnce(&mut Waves) -> R) -> R {
    WAVES.with(|w| match w.try_borrow_mut() {
        Ok(mut ws) => f(&mut ws),
        Err(_) => f(&mut Waves::default()),
    })
}

/// One work-group in `ws` (the calling thread's wave storage), a panic in the interpreter caught.
fn one(
    program: &Program,
    d: &Dispatch<'_>,
    group: [u32; 3],
    mem: &mut MemView,
    ws: &mut Waves,
) -> Result<Stats, GroupError> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| program.run_group_in(d, group, mem, ws)));
    match r {
        Ok(r) => r.map_err(GroupError::Fault),
        Err(p) => {
            // the storage's invariants (which VGPRs are zero) may not hold after a panic
            *ws = Waves::default();
            Err(GroupError::Panic { group, what: panic_text(&*p) })
        }
    }
}

/// What one thread ran: its counts, and the first work-group that failed (its index) if any.
type Part = (Stats, Option<(u64, GroupError)>);

/// Claim chunks of `chunk` work-groups from `next` and run them until none are left or `stop`.
#[allow(clippy::too_many_arguments)]
fn claim(
    program: &Program,
    d: &Dispatch<'_>,
    dims: [u32; 3],
    groups: u64,
    chunk: u64,
    (next, stop): (&AtomicU64, &AtomicBool),
    mem: &mut MemView,
) -> Part {
    with_waves(|ws| {
        let mut st = Stats::default();
        while !stop.load(Ordering::Relaxed) {
            let first = next.fetch_add(chunk, Ordering::Relaxed);
            if first >= groups {
                break;
            }
            for i in first..(first + chunk).min(groups) {
                match one(program, d, group_id(i, dims), mem, ws) {
                    Ok(g) => {
                        st.insts += g.insts;
                        st.lane_insts += g.lane_insts;
                    }
                    Err(f) => {
                        stop.store(true, Ordering::Relaxed);
                        return (st, Some((i, f)));
                    }
                }
            }
        }
        (st, None)
    })
}

/// Run work-groups `0..groups` (x fastest, as `Program::run` orders them) on the calling thread
/// and, with a `pool`, its threads too (at most one a work-group).
pub fn run_groups(
    program: &Program,
    d: &Dispatch<'_>,
    dims: [u32; 3],
    groups: u64,
    pool: Option<&rayon_core::ThreadPool>,
    view: MemView,
) -> Result<Stats, GroupError> {
    // CAST: usize → u64, widening.
    let threads = pool.map_or(1, |p| p.current_num_threads() as u64 + 1).min(groups);
    let mut mem = view;
    let Some(pool) = pool.filter(|_| threads > 1) else {
        return with_waves(|ws| {
            let mut st = Stats::default();
            for i in 0..groups {
                let s = one(program, d, group_id(i, dims), &mut mem, ws)?;
                st.insts += s.insts;
                st.lane_insts += s.lane_insts;
            }
            Ok(st)
        });
    };
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let chunk = (groups / (threads * 8)).max(1);
    // CAST: threads ≤ the pool's threads + 1, a usize.
    let mut parts: Vec<Part> = vec![(Stats::default(), None); threads as usize];
    let (mine, others) = parts.split_at_mut(1);
    // The pool's threads claim work-groups alongside the calling thread; the scope returns when
    // every part is done (`one` catches the interpreter's panics, so none reach it).
    pool.in_place_scope(|sc| {
        for part in others.iter_mut() {
            let mut view = mem.clone();
            let (next, stop) = (&next, &stop);
            sc.spawn(move |_| *part = claim(program, d, dims, groups, chunk, (next, stop), &mut view));
        }
        mine[0] = claim(program, d, dims, groups, chunk, (&next, &stop), &mut mem);
    });
    let mut st = Stats::default();
    let mut first: Option<(u64, GroupError)> = None;
    for (s, f) in parts {
        st.insts += s.insts;
        st.lane_insts += s.lane_insts;
        if let Some((i, f)) = f
            && first.as_ref().is_none_or(|(j, _)| i < *j)
        {
            first = Some((i, f));
        }
    }
    match first {
        Some((_, f)) => Err(f),
        None => Ok(st),
    }
}
