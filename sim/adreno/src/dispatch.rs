//! The shader core of the simulated Adreno: [`Ir3Dispatch`] is the [`Dispatch`](crate::cp::ShaderCore)
//! that [`SimKgsl`](crate::kgsl::SimKgsl) calls at every `CP_EXEC_CS`. It runs the shader the CP
//! loaded with `hcq-ir3`'s interpreter over the simulated GPU memory.
//!
//! - The program is the code the CP loaded (`CP_LOAD_STATE6` of `SB6_CS_SHADER`), decoded from
//!   the entry offset (`SP_CS_PROGRAM_COUNTER_OFFSET`) and cached by shader address and content;
//!   its metadata comes from the registers the encoder wrote (`SP_CS_CNTL_0/1`,
//!   `SP_CS_CONST_CONFIG_0`, `SP_CS_PVT_MEM_PARAM`, `SP_MODE_CNTL`), as the hardware reads them.
//! - Argument addresses: a program whose argument slots are known ([`ArgSlots::register`], done
//!   by the QCOM device when it uploads a program) has every argument address checked against
//!   the allocations before anything runs; one that points outside every allocation is a fault
//!   naming the argument and its constant offset.
//! - Work-groups run on every core: a dispatch's work-groups are split into consecutive ranges,
//!   one per thread (at most [`std::thread::available_parallelism`], see
//!   [`Ir3Dispatch::with_threads`]: the calling thread and a pool of threads kept between
//!   dispatches), each with its own interpreter and its own overlay of the writes. At a
//!   program's first dispatch its first wave's work-groups run first on the calling thread and
//!   tell the cost of the rest (work-group 0, or the first `k` when the interpreter packs `k`
//!   small work-groups into one wave, [`hcq_ir3::exec::groups_per_wave`]); later dispatches take
//!   the cost per work-group of the previous one and split from the start. Every range starts
//!   at a multiple of `k`, so the waves do not depend on the number of threads; a dispatch whose
//!   work is small stays on the calling thread. After every thread finished, the overlays are
//!   committed in ascending work-group order, so the bytes written do not depend on the number
//!   of threads (a work-group does not see another's writes of the same dispatch, which the
//!   hardware does not promise either). A program with global atomics (`atomic.g.*`, whose
//!   work-groups do see each other's updates) runs on one thread over one overlay.
//! - The dispatch is a transaction: global-memory writes go to an overlay that reads see
//!   (`crate::overlay`: 4 KiB copy-on-write pages with a dirty bit per byte), and reach GPU
//!   memory only when the whole dispatch finished, exactly the bytes written. A fault (an access outside every
//!   allocation under [`PageFaults::Fault`], the default, or an argument address that points nowhere), an unsupported instruction or
//!   the step limit ends it with an error that names the instruction, and **nothing** of it is
//!   written. The CP stops with that error (its IB offset added by the CP) and the host sees it
//!   at the next wait, at once. With several threads, the error is the one of the lowest range
//!   that failed (each thread stops at its first), the one a single thread meets: that of the
//!   lowest failing work-group, or with packed work-groups the first failure in the lowest
//!   failing wave.
//! - The step limit is the dispatch's: it fails when its work-groups together ran more than
//!   `max_steps` wave-instructions, however they were spread (each thread also stops once its
//!   own part alone is past the limit, so a hung shader ends).

use crate::cp::{ComputeState, GpuMemory, ShaderCore};
use crate::images::ImageState;
use crate::overlay::{Overlay, Pages};
use hcq::{Error, Result};
use hcq_ir3::exec::{Dispatch, ExecError, Images, Interp, MemSpace, Meta, Shader, Stats, groups_per_wave};
use hcq_ir3::isa::{Body, Cat6};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Where each program keeps its argument addresses: shader address → `(argument, byte offset
/// in the constant file)`. Shared between the device (which registers programs) and the
/// dispatcher (which checks them).
#[derive(Clone, Debug, Default)]
pub struct ArgSlots(Arc<Mutex<SlotTable>>);

/// Shader address → `(argument, constant byte offset)` of each address argument.
type SlotTable = HashMap<u64, Vec<(u32, u32)>>;

impl ArgSlots {
    /// Register the argument slots of the program whose code is at `shader_addr`.
    pub fn register(&self, shader_addr: u64, slots: Vec<(u32, u32)>) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(shader_addr, slots);
        }
    }

    /// Check every argument address of a dispatch of the program at `shader_addr`.
    fn check(&self, shader_addr: u64, consts: &[u32], mem: &dyn GpuMemory) -> Result<()> {
        let Ok(m) = self.0.lock() else { return Ok(()) };
        let Some(slots) = m.get(&shader_addr) else { return Ok(()) };
        for &(arg, off) in slots {
            let w = (off / 4) as usize;
            let (Some(lo), Some(hi)) = (consts.get(w), consts.get(w + 1)) else {
                return Err(Error::OutOfBounds {
                    what: "adreno sim: argument slot beyond the loaded constants",
                    offset: off.into(),
                    len: 8,
                    limit: 4 * consts.len() as u64,
                });
            };
            let addr = u64::from(*lo) | u64::from(*hi) << 32;
            if mem.read32(addr & !3).is_err() {
                return Err(Error::OutOfBounds {
                    what: "adreno sim: kernel argument address outside every allocation (fault, nothing ran)",
                    offset: addr,
                    len: 1,
                    limit: 0,
                })
                .map_err(|e| e.context(format!("argument {arg} (constant byte {off})")));
            }
        }
        Ok(())
    }
}

/// Wave-instructions one dispatch may run before it counts as hung (a shader in an endless
/// loop becomes a fault, not a stuck host).
pub const DEFAULT_MAX_STEPS: u64 = 2_000_000_000;

/// A dispatch runs on more than one thread only when its work-groups (after the first wave at
/// a program's first dispatch) are expected to run at least this many wave-instructions (the
/// count per work-group, measured, times the work-groups, over the work-groups a wave packs):
/// below it, starting threads costs more than it saves.
pub const DEFAULT_PARALLEL_MIN_STEPS: u64 = 4096;

struct Cached {
    words: Vec<u32>,
    entry: u32,
    regs: [u32; 5],
    prog: Shader,
    /// The program has global atomics: its work-groups run on one thread (see the module docs).
    atomics: bool,
    /// Wave-instructions per work-group at its last dispatch (rounded up; 0: not run yet): the
    /// cost estimate that lets a later dispatch of it split over threads from the start.
    group_steps: u64,
}

/// One thread's interpreter and overlay, kept between dispatches (nothing allocated per
/// dispatch once warm, threads aside).
#[derive(Default)]
struct Worker {
    interp: Interp,
    pages: Pages,
    /// What its part of the last parallel dispatch returned.
    result: Option<core::result::Result<Stats, ExecError>>,
}

impl Worker {
    fn run<M: GpuMemory + ?Sized>(
        &mut self,
        prog: &Shader,
        d: &Dispatch<'_>,
        images: Images<'_>,
        mem: &M,
        groups: core::ops::Range<u64>,
        (max_steps, faults): (u64, PageFaults),
    ) -> core::result::Result<Stats, ExecError> {
        self.interp.max_steps = max_steps;
        let terminate = faults == PageFaults::Terminate;
        self.interp.run_groups(prog, d, images, &mut Overlay::new(mem, &mut self.pages, terminate), groups)
    }
}

/// What the shader core does with a load or store outside every GPU object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageFaults {
    /// The dispatch stops with a fault that names the access, nothing of it is written, and
    /// the context is faulted (KGSL's policy with `KGSL_FT_PAGEFAULT_GPUHALT_ENABLE` set: the
    /// GPU stalls on the fault and the dispatcher's recovery invalidates the context). hcq's
    /// own QCOM device runs this way: every access of a bundle it validated lies inside its
    /// buffers, so a fault is a bug to report.
    #[default]
    Fault,
    /// The access is terminated and the dispatch goes on: the bytes of a load that lie outside
    /// read 0, those of a store are dropped. This is KGSL's default page-fault policy on the
    /// msm kernels of the Adreno 5xx/6xx generation (`adreno.h`:
    /// `KGSL_FT_PAGEFAULT_DEFAULT_POLICY 0`, no GPU halt; `kgsl_iommu_fault_handler` logs the
    /// fault, rate limited, and the SMMU terminates the transaction). The dispatcher counts
    /// them ([`Ir3Dispatch::terminated`]) and says the first of a dispatch on stderr, for the
    /// first [`LOGGED_DISPATCHES`] dispatches that have any (KGSL's `__ratelimit` burst of 10).
    Terminate,
}

/// Dispatches whose terminated accesses are said on stderr under [`PageFaults::Terminate`].
pub const LOGGED_DISPATCHES: u64 = 10;

impl Worker {
    fn take_terminated(&mut self) -> crate::overlay::Terminated {
        core::mem::take(&mut self.pages.terminated)
    }
}

/// Runs each dispatch's shader with the ir3 interpreter (see the module docs).
pub struct Ir3Dispatch {
    /// `workers[0]` runs on the calling thread; the others on the pool's threads.
    workers: Vec<Worker>,
    threads: usize,
    /// `threads - 1` threads kept for the dispatches that spread (made at the first), with the
    /// id of the process that made them: a forked child makes its own.
    pool: Option<(u32, rayon_core::ThreadPool)>,
    parallel_min_steps: u64,
    max_steps: u64,
    cache: HashMap<u64, Cached>,
    /// The constant file as bytes (reused: no allocation per dispatch once warm).
    consts: Vec<u8>,
    args: ArgSlots,
    images: ImageState,
    dispatches: u64,
    lane_instructions: u64,
    faults: PageFaults,
    /// Accesses terminated under [`PageFaults::Terminate`], and the dispatches that had any.
    terminated: u64,
    terminated_dispatches: u64,
}

impl core::fmt::Debug for Ir3Dispatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ir3Dispatch").field("dispatches", &self.dispatches).finish_non_exhaustive()
    }
}

impl Default for Ir3Dispatch {
    fn default() -> Self {
        Self::new()
    }
}

impl Ir3Dispatch {
    /// A dispatcher with [`DEFAULT_MAX_STEPS`].
    pub fn new() -> Self {
        Self::with_max_steps(DEFAULT_MAX_STEPS)
    }

    /// A dispatcher whose dispatches stop (as a fault) after `max_steps` wave-instructions.
    pub fn with_max_steps(max_steps: u64) -> Self {
        Self {
            workers: vec![Worker::default()],
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pool: None,
            parallel_min_steps: DEFAULT_PARALLEL_MIN_STEPS,
            max_steps,
            cache: HashMap::new(),
            consts: Vec::new(),
            args: ArgSlots::default(),
            images: ImageState::default(),
            dispatches: 0,
            lane_instructions: 0,
            faults: PageFaults::Fault,
            terminated: 0,
            terminated_dispatches: 0,
        }
    }

    /// What a load or store outside every GPU object does ([`PageFaults::Fault`] by default).
    pub fn with_page_faults(mut self, faults: PageFaults) -> Self {
        self.faults = faults;
        self
    }

    /// Loads and stores terminated under [`PageFaults::Terminate`] so far.
    pub fn terminated(&self) -> u64 {
        self.terminated
    }

    /// Run a dispatch's work-groups on at most `threads` threads (at least 1; the default is
    /// [`std::thread::available_parallelism`]).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Spread a dispatch over threads only when its work-groups after the first are expected to
    /// run at least `steps` wave-instructions ([`DEFAULT_PARALLEL_MIN_STEPS`] by default; 0:
    /// whenever it has more than one work-group).
    pub fn with_parallel_min_steps(mut self, steps: u64) -> Self {
        self.parallel_min_steps = steps;
        self
    }

    /// Check argument addresses against `slots` (see [`ArgSlots`]).
    pub fn with_arg_slots(mut self, slots: ArgSlots) -> Self {
        self.args = slots;
        self
    }

    /// Dispatches that ran to the end.
    pub fn dispatches(&self) -> u64 {
        self.dispatches
    }

    /// Lane-instructions executed by those dispatches.
    pub fn lane_instructions(&self) -> u64 {
        self.lane_instructions
    }

    fn program(&mut self, s: &ComputeState<'_>) -> Result<&Shader> {
        let regs = [s.cntl_0.raw(), s.cntl_1.raw(), s.const_config_0.raw(), s.pvt_mem_param.raw(), s.mode_cntl.raw()];
        let hit =
            self.cache.get(&s.shader_addr).is_some_and(|c| c.entry == s.entry && c.regs == regs && c.words == s.shader);
        if !hit {
            let entry = s.entry as usize;
            if !entry.is_multiple_of(8) || entry >= 4 * s.shader.len() {
                return Err(Error::Malformed {
                    what: "adreno sim: SP_CS_PROGRAM_COUNTER_OFFSET",
                    at: s.entry.into(),
                    reason: "the entry is not an instruction inside the loaded shader",
                });
            }
            let image: Vec<u8> = s.shader.iter().flat_map(|w| w.to_le_bytes()).skip(entry).collect();
            let meta = Meta::from_regs(regs[0], regs[1], regs[2], regs[3], regs[4]);
            let prog = Shader::new(&image, meta).map_err(|e| {
                Error::Malformed { what: "adreno sim: shader code", at: s.shader_addr, reason: "undecodable ir3" }
                    .context(format!("{e}"))
            })?;
            let atomics = prog.instrs.iter().any(|i| matches!(i.body, Body::Cat6(Cat6::AtomicG { .. })));
            let c = Cached { words: s.shader.to_vec(), entry: s.entry, regs, prog, atomics, group_steps: 0 };
            self.cache.insert(s.shader_addr, c);
        }
        // PANIC: present: either hit above or inserted just now.
        Ok(&self.cache.get(&s.shader_addr).expect("inserted above").prog)
    }
}

impl ShaderCore for Ir3Dispatch {
    fn dispatch(&mut self, s: &ComputeState<'_>, mem: &mut dyn GpuMemory) -> Result<()> {
        self.args.check(s.shader_addr, s.consts, mem)?;
        let n = self.dispatches;
        let name = |e: Error| e.context(format!("dispatch {n} (shader {:#x})", s.shader_addr));
        self.images.load(s.textures, s.samplers, s.ibos, s.border_color_base, mem).map_err(name)?;
        // SP_MODE_CNTL.ISAMMODE (bits 1..2): the interpreter's isam takes GL-style integer texel
        // coordinates (ISAMMODE_GL = 2, what tinygrad's IR3 path programs).
        if !s.textures.is_empty() && (s.mode_cntl.raw() >> 1) & 3 != 2 {
            return Err(name(Error::Unsupported {
                what: "adreno sim: SP_MODE_CNTL.ISAMMODE other than ISAMMODE_GL with textures bound",
                value: s.mode_cntl.raw().into(),
            }));
        }
        // Private memory is kept per fiber inside the interpreter (ldp/stp see their own fiber's
        // MEMSIZEPERITEM bytes); the base the hardware would spill to must still be mapped.
        if s.pvt_mem_param.raw() & 0xff != 0 && mem.read32(s.pvt_mem_base & !3).is_err() {
            return Err(name(Error::OutOfBounds {
                what: "adreno sim: SP_CS_PVT_MEM_BASE outside every GPU object with private memory in use",
                offset: s.pvt_mem_base,
                len: u64::from(s.pvt_mem_param.raw() & 0xff) << 9,
                limit: 0,
            }));
        }
        self.consts.clear();
        self.consts.extend(s.consts.iter().flat_map(|w| w.to_le_bytes()));
        self.program(s)?;
        // PANIC: `program` returned Ok, so the cache holds this shader address.
        let cached = self.cache.get_mut(&s.shader_addr).expect("cached by program()");
        let d = Dispatch { consts: &self.consts, grid: s.groups, local: s.local };
        let images =
            Images { textures: &self.images.textures, samplers: &self.images.samplers, ibos: &self.images.ibos };
        let used = self.workers.len();
        for w in &mut self.workers[..used] {
            w.pages.clear();
        }
        let run = match mem.as_sync() {
            Some(sync) if self.threads > 1 && !cached.atomics && d.groups() > 1 => {
                let (threads, min) = (self.threads, self.parallel_min_steps);
                let known = cached.group_steps;
                let pool = pool(&mut self.pool, threads)?;
                let w = &mut self.workers;
                let limits = (self.max_steps, self.faults);
                run_parallel(w, pool, threads, min, known, &cached.prog, &d, images, sync, limits)
            }
            _ => self.workers[0]
                .run(&cached.prog, &d, images, &*mem, 0..d.groups(), (self.max_steps, self.faults))
                .map(|s| (s, 1)),
        };
        let (stats, used) = run.map_err(|e| {
            let why = match e {
                ExecError::Fault { space: MemSpace::Global, .. } => "a global access outside every allocation (fault)",
                ExecError::StepLimit { .. } => "the step limit (a hung shader)",
                _ => "ir3 execution stopped",
            };
            Error::Malformed {
                what: "adreno sim: shader fault, nothing of the dispatch written",
                at: s.shader_addr,
                reason: why,
            }
            .context(format!("{e}"))
        })?;
        cached.group_steps = stats.steps.div_ceil(d.groups()).max(1);
        self.note_terminated(used, s.shader_addr);
        // The dispatch finished: commit each thread's writes, in ascending work-group order.
        for w in &self.workers[..used] {
            w.pages.commit(mem)?;
        }
        self.dispatches += 1;
        self.lane_instructions += stats.lane_instructions;
        Ok(())
    }
}

impl Ir3Dispatch {
    /// Count the accesses the first `used` workers terminated in the dispatch that just ran,
    /// and say the first of them (see [`PageFaults::Terminate`]).
    fn note_terminated(&mut self, used: usize, shader_addr: u64) {
        let (mut count, mut first) = (0, None);
        for w in &mut self.workers[..used] {
            let t = w.take_terminated();
            count += t.count;
            first = first.or(t.first);
        }
        if count == 0 {
            return;
        }
        self.terminated += count;
        self.terminated_dispatches += 1;
        if self.terminated_dispatches <= LOGGED_DISPATCHES
            && let Some((addr, len, store)) = first
        {
            let what = if store { "store" } else { "load" };
            let more = if self.terminated_dispatches == LOGGED_DISPATCHES { "; later ones are not said" } else { "" };
            eprintln!(
                "hcq-sim-adreno: GPU page fault terminated (KGSL's default policy: the dispatch goes on, loads read 0, \
                 stores dropped): dispatch {} (shader {shader_addr:#x}): {count} access(es), the first a {len}-byte \
                 {what} at {addr:#x} outside every GPU object{more}",
                self.dispatches
            );
        }
    }
}

/// Run a dispatch's work-groups on up to `threads` threads (see the module docs): the first
/// wave's work-groups on the calling thread when the program's cost per work-group is not known
/// yet (`group_steps` 0; otherwise that is the estimate), then the rest split into consecutive
/// ranges of whole waves, the first of them on the calling thread too. Returns the summed
/// statistics and how many workers ran (their overlays, in order, hold the writes in ascending
/// work-group order), or the error of the lowest range that failed.
#[allow(clippy::too_many_arguments)]
fn run_parallel(
    workers: &mut Vec<Worker>,
    pool: &rayon_core::ThreadPool,
    threads: usize,
    parallel_min_steps: u64,
    group_steps: u64,
    prog: &Shader,
    d: &Dispatch<'_>,
    images: Images<'_>,
    mem: &(dyn GpuMemory + Sync),
    (max_steps, faults): (u64, PageFaults),
) -> core::result::Result<(Stats, usize), ExecError> {
    let total = d.groups();
    // Work-groups the interpreter packs into one wave: every range starts at a multiple of it,
    // so the waves (and which error a failing dispatch reports) do not depend on the threads.
    let fibers = d.local.iter().map(|&v| u64::from(v)).product();
    let k = groups_per_wave(prog, fibers);
    let (first, k0) = if group_steps > 0 {
        (Stats::default(), 0)
    } else {
        let k0 = k.min(total);
        (workers[0].run(prog, d, images, mem, 0..k0, (max_steps, faults))?, k0)
    };
    let rest = total - k0;
    if rest == 0 {
        return Ok((first, 1));
    }
    let packs = rest.div_ceil(k);
    // The work left, in the packed waves that run it (steps count one wave per work-group).
    let per_group = if k0 > 0 { first.steps.div_ceil(k0) } else { group_steps };
    let work = per_group.saturating_mul(rest) / k;
    let n = if work < parallel_min_steps {
        1
    } else {
        // CAST: at most `threads`, a usize.
        packs.min(threads as u64) as usize
    };
    // The budget left (the first work-groups ran within it); each thread may use all of it, the
    // sum is checked after.
    let budget = max_steps - first.steps;
    let part = |i: usize| {
        let at = |i: u64| (k0 + k * (packs * i / n as u64)).min(total);
        at(i as u64)..at(i as u64 + 1)
    };
    while workers.len() < n {
        workers.push(Worker::default());
    }
    if n == 1 {
        workers[0].result = Some(workers[0].run(prog, d, images, mem, part(0), (budget, faults)));
    } else {
        let (caller, others) = workers.split_at_mut(1);
        // The pool's threads run parts 1.., the calling thread part 0; the scope returns when
        // every part is done (and resumes a part's panic here).
        pool.in_place_scope(|sc| {
            for (i, w) in others[..n - 1].iter_mut().enumerate() {
                let groups = part(i + 1);
                sc.spawn(move |_| {
                    w.pages.clear();
                    let r = w.run(prog, d, images, mem, groups, (budget, faults));
                    w.result = Some(r);
                });
            }
            let r = caller[0].run(prog, d, images, mem, part(0), (budget, faults));
            caller[0].result = Some(r);
        });
    }
    let mut stats = first;
    for w in &mut workers[..n] {
        // PANIC: every one of the first n workers ran its part above.
        let s = w.result.take().expect("a part ran")?;
        stats.steps += s.steps;
        stats.lane_instructions += s.lane_instructions;
    }
    if stats.steps > max_steps {
        return Err(ExecError::StepLimit { steps: stats.steps });
    }
    Ok((stats, n))
}

/// The dispatcher's pool of `threads - 1` threads, made at its first use, and again in a forked
/// child (whose copy of the parent's pool has no threads: it is leaked, not dropped, since its
/// locks may be held by threads that do not exist in the child).
fn pool(slot: &mut Option<(u32, rayon_core::ThreadPool)>, threads: usize) -> Result<&rayon_core::ThreadPool> {
    let pid = std::process::id();
    if slot.as_ref().is_some_and(|(p, _)| *p != pid)
        && let Some((_, stale)) = slot.take()
    {
        core::mem::forget(stale);
    }
    if slot.is_none() {
        let built = rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads - 1)
            .thread_name(|i| format!("hcq-sim-sp{}", i + 1))
            .build()
            .map_err(|e| {
                Error::Unsupported { what: "adreno sim: cannot start the shader core's threads", value: 0 }
                    .context(format!("{e}"))
            })?;
        *slot = Some((pid, built));
    }
    // PANIC: filled just above when it was empty.
    Ok(&slot.as_ref().expect("pool made above").1)
}
