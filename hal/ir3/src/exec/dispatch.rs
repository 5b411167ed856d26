//! The dispatch loop: work-groups in order, their waves, the barrier, and the step of one
//! wave through its instructions (the cat0..cat6 modules execute them).

use super::*;

pub(super) struct Ctx<'a> {
    pub(super) prog: &'a Shader,
    pub(super) consts: &'a [u8],
    pub(super) images: Images<'a>,
    pub(super) mem: &'a mut dyn Memory,
    /// The work-group(s) running, for the id registers and error reports.
    pub(super) at: Sites,
    pub(super) steps: u64,
    pub(super) max_steps: u64,
    pub(super) lane_instrs: u64,
    /// Highest full / half regid the program can touch (see [`reg_span`]).
    pub(super) span: (u8, u8),
    /// The first lane of each packed work-group (bit `i·t`), for counting wave-instructions.
    pub(super) pack_starts: u64,
}

/// Which work-group(s) a wave runs: what names a lane's work-group and fiber.
#[derive(Clone, Copy)]
pub(super) struct Sites {
    /// The (first) work-group's coordinates.
    pub(super) group: [u32; 3],
    /// Work-groups packed into one wave ([`groups_per_wave`]): the fibers per work-group when
    /// several share the wave (lane `l` is fiber `l % t` of work-group `pack_first + l / t`),
    /// 0 when a work-group has waves of its own.
    pub(super) pack: u32,
    /// Linear index of the first work-group in the wave.
    pub(super) pack_first: u64,
    pub(super) grid: [u32; 3],
}

impl Sites {
    /// The work-group and the fiber index in it of lane `l` of wave `w`, for error reports.
    pub(super) fn site(&self, w: usize, l: usize) -> ([u32; 3], u32) {
        if self.pack == 0 {
            // CAST: a work-group has at most 1024 fibers.
            (self.group, (w * W + l) as u32)
        } else {
            let t = self.pack as usize;
            // CAST: l % t < 32.
            (group_coords(self.grid, self.pack_first + (l / t) as u64), (l % t) as u32)
        }
    }
}

impl Ctx<'_> {
    pub(super) fn site(&self, w: usize, l: usize) -> ([u32; 3], u32) {
        self.at.site(w, l)
    }

    /// The wave-instructions one step of a wave with `mask` counts for: 1, or with packed
    /// work-groups one per work-group with a lane in `mask` (each would be its own wave).
    #[inline]
    pub(super) fn step_weight(&self, mask: u64) -> u64 {
        match self.at.pack {
            0 => 1,
            1 => u64::from(mask.count_ones()),
            t => {
                // Bit p of `m` becomes the OR of mask bits p..p+t: widths doubling up to the
                // largest power of two w ≤ t, then [p, p+w) | [p+t-w, p+t).
                let mut m = mask;
                let mut w = 1;
                while w * 2 <= t {
                    m |= m >> w;
                    w *= 2;
                }
                if w < t {
                    m |= m >> (t - w);
                }
                u64::from((m & self.pack_starts).count_ones())
            }
        }
    }
}

/// Work-group `g`'s coordinates: x fastest (see [`Dispatch::groups`]).
pub(super) fn group_coords(grid: [u32; 3], g: u64) -> [u32; 3] {
    let (gx, gy) = (u64::from(grid[0]), u64::from(grid[1]));
    // CAST: each coordinate is below its u32 grid size.
    [(g % gx) as u32, (g / gx % gy) as u32, (g / (gx * gy)) as u32]
}

impl Interp {
    pub fn new() -> Interp {
        Interp { waves: Vec::new(), shared: Vec::new(), private: Vec::new(), max_steps: 100_000_000, pack: true }
    }

    /// Run every work-group of the dispatch in order (no image descriptors: a cat5 fetch or
    /// ldib/stib fails with [`ExecError::Image`]).
    pub fn run(&mut self, prog: &Shader, d: &Dispatch, mem: &mut dyn Memory) -> Result<Stats, ExecError> {
        self.run_with_images(prog, d, Images::default(), mem)
    }

    /// [`Interp::run`] with the dispatch's textures, samplers and IBOs.
    pub fn run_with_images(
        &mut self,
        prog: &Shader,
        d: &Dispatch,
        images: Images<'_>,
        mem: &mut dyn Memory,
    ) -> Result<Stats, ExecError> {
        self.run_groups(prog, d, images, mem, 0..d.groups())
    }

    /// Run the work-groups whose linear indices are in `groups` (see [`Dispatch::groups`]), in
    /// ascending order: a part of a dispatch, so that a caller can spread a dispatch's
    /// work-groups over threads (one `Interp` and one [`Memory`] view each). Work-groups share
    /// nothing but global memory, and each starts from the same register, shared- and
    /// private-memory state, so running `0..a` then `a..n` is running `0..n`. The statistics
    /// and [`Interp::max_steps`] are this call's: a caller that splits a dispatch adds them up.
    /// An empty range runs nothing; one that ends beyond the grid is [`ExecError::BadDispatch`].
    pub fn run_groups(
        &mut self,
        prog: &Shader,
        d: &Dispatch,
        images: Images<'_>,
        mem: &mut dyn Memory,
        groups: core::ops::Range<u64>,
    ) -> Result<Stats, ExecError> {
        let threads = d.local.iter().try_fold(1u64, |a, &v| a.checked_mul(v as u64)).unwrap_or(u64::MAX);
        if threads == 0 || d.grid.contains(&0) {
            return Err(ExecError::BadDispatch("empty grid or work-group"));
        }
        if threads > 1024 {
            return Err(ExecError::BadDispatch("work-group larger than 1024 fibers"));
        }
        if prog.meta.shmem > 64 * 1024 || prog.meta.pvtmem > 64 * 1024 {
            return Err(ExecError::BadDispatch("shared or private memory size above 64 KiB"));
        }
        if groups.end > d.groups() {
            return Err(ExecError::BadDispatch("work-group range beyond the grid"));
        }
        let k = if self.pack { groups_per_wave(prog, threads) } else { 1 };
        let nwaves = if k > 1 { 1 } else { (threads as usize).div_ceil(W) };
        while self.waves.len() < nwaves {
            self.waves.push(Wave::new(self.waves.len()));
        }
        self.shared.resize(prog.meta.shmem as usize, 0);
        self.private.resize(prog.meta.pvtmem as usize * nwaves * W, 0);
        let mut cx = Ctx {
            prog,
            consts: d.consts,
            images,
            mem,
            // CAST: k > 1 only for work-groups of at most 32 fibers.
            at: Sites { group: [0; 3], pack: if k > 1 { threads as u32 } else { 0 }, pack_first: 0, grid: d.grid },
            steps: 0,
            max_steps: self.max_steps,
            lane_instrs: 0,
            span: reg_span(prog),
            pack_starts: 0,
        };
        let mut g = groups.start;
        while g < groups.end {
            // Packs start at multiples of k, whatever the range, so that a caller's split of the
            // grid into ranges at multiples of k gives the same waves.
            let end = ((g / k + 1) * k).min(groups.end);
            cx.at.group = group_coords(d.grid, g);
            cx.at.pack_first = g;
            // CAST: end - g ≤ k ≤ 64.
            self.run_group(&mut cx, d, threads as usize, nwaves, (end - g) as usize)?;
            g = end;
        }
        Ok(Stats { steps: cx.steps, lane_instructions: cx.lane_instrs })
    }

    /// Run `count` work-groups from `cx.at.pack_first`: one (`count == 1`, `cx.at.pack == 0`), or
    /// `count` packed side by side in wave 0.
    pub(super) fn run_group(
        &mut self,
        cx: &mut Ctx,
        d: &Dispatch,
        threads: usize,
        nwaves: usize,
        count: usize,
    ) -> Res<()> {
        self.shared.fill(0);
        self.private.fill(0);
        let [lx, ly, _] = d.local;
        let packed = cx.at.pack != 0;
        if packed {
            cx.pack_starts = (0..count).fold(0u64, |m, i| m | 1u64 << (i * threads));
        }
        for (w, wave) in self.waves[..nwaves].iter_mut().enumerate() {
            let n = if packed { count * threads } else { (threads - w * W).min(W) };
            let mask = if n == W { u64::MAX } else { (1u64 << n) - 1 };
            // Zero what the program can touch (every group starts from the same state).
            for r in wave.regs[..=cx.span.0 as usize].iter_mut().chain(wave.hregs[..=cx.span.1 as usize].iter_mut()) {
                *r = [0; W];
            }
            for r in wave.regs[0xf4..].iter_mut() {
                *r = [0; W];
            }
            let m = cx.prog.meta;
            wave.merged = m.merged_regs;
            if m.lid != 0xfc {
                for l in 0..n {
                    // CAST: below 1024.
                    let i = if packed { (l % threads) as u32 } else { (w * W + l) as u32 };
                    let id = [i % lx, (i / lx) % ly, i / (lx * ly)];
                    for (c, v) in id.iter().enumerate() {
                        wave.regs[(m.lid as usize + c) & 0xff][l] = *v;
                    }
                }
            }
            if m.wgid != 0xfc {
                for c in 0..3 {
                    wave.regs[(m.wgid as usize + c) & 0xff] = [cx.at.group[c]; W];
                }
                if packed {
                    for j in 1..count {
                        let g = group_coords(d.grid, cx.at.pack_first + j as u64);
                        for (c, v) in g.iter().enumerate() {
                            wave.regs[(m.wgid as usize + c) & 0xff][j * threads..(j + 1) * threads].fill(*v);
                        }
                    }
                }
            }
            wave.pc = 0;
            wave.mask = mask;
            wave.parked.clear();
            wave.state = State::Run;
            wave.pred = Pred::None;
            wave.pred_mask = 0;
        }
        loop {
            for w in 0..nwaves {
                if self.waves[w].state == State::Run {
                    self.run_wave(cx, w)?;
                }
            }
            // Every wave is done or waits at a barrier: release the barrier, or finish.
            let mut waiting = false;
            for wave in self.waves[..nwaves].iter_mut().filter(|w| w.state == State::Barrier) {
                wave.state = State::Run;
                wave.pc += 1;
                waiting = true;
            }
            if !waiting {
                return Ok(());
            }
        }
    }

    pub(super) fn run_wave(&mut self, cx: &mut Ctx, w: usize) -> Res<()> {
        let n = cx.prog.instrs.len();
        let Interp { waves, shared, private, .. } = self;
        let wave = &mut waves[w];
        let pvt = cx.prog.meta.pvtmem as usize;
        let private = &mut private[w * W * pvt..(w + 1) * W * pvt];
        // Popcounts of the last mask and exec set (they rarely change between instructions, and
        // a popcount is a loop on CPUs without the instruction).
        let (mut last_mask, mut last_weight) = (0u64, 0u64);
        let (mut last_exec, mut last_lanes) = (0u64, 0u64);
        loop {
            // Schedule the lowest pc; merge groups that meet.
            if let Some(&(ppc, pmask)) = wave.parked.last() {
                if wave.mask == 0 || ppc < wave.pc {
                    wave.parked.pop();
                    let (cpc, cmask) = (wave.pc, wave.mask);
                    wave.park(cpc, cmask);
                    wave.pc = ppc;
                    wave.mask = pmask;
                    continue;
                } else if ppc == wave.pc {
                    wave.parked.pop();
                    wave.mask |= pmask;
                    continue;
                }
            }
            if wave.mask == 0 {
                wave.state = State::Done;
                return Ok(());
            }
            let pc = wave.pc as usize;
            if pc >= n {
                return Err(ExecError::PcOutOfRange { from: pc.saturating_sub(1), pc: pc as i64 });
            }
            if wave.mask != last_mask {
                last_mask = wave.mask;
                last_weight = cx.step_weight(last_mask);
            }
            cx.steps += last_weight;
            if cx.steps > cx.max_steps {
                return Err(ExecError::StepLimit { steps: cx.max_steps });
            }
            let prog = cx.prog;
            let ins = &prog.instrs[pc];
            let exec = wave.mask
                & match wave.pred {
                    Pred::None => u64::MAX,
                    Pred::True => wave.pred_mask,
                    Pred::False => !wave.pred_mask,
                };
            if exec != last_exec {
                last_exec = exec;
                last_lanes = u64::from(exec.count_ones());
            }
            cx.lane_instrs += last_lanes * (ins.flags.repeat as u64 + 1);
            let next = pc as u32 + 1;
            match &ins.body {
                Body::Cat0(c) => {
                    if cx_cat0(cx, wave, c, pc, exec)? {
                        return Ok(());
                    }
                    continue;
                }
                Body::Cat1(c) => cat1(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat2(c) => cat2(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat3(c) => cat3(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat4(c) => cat4(cx, wave, c, &ins.flags, pc, exec)?,
                Body::Cat5(c) => cat5(cx, wave, c, pc, exec, w)?,
                Body::Cat6(c) => cat6(cx, wave, c, pc, exec, w, shared, private)?,
                Body::Cat7(c) => {
                    if c.op == Cat7Op::Bar {
                        wave.state = State::Barrier;
                        return Ok(());
                    }
                }
                Body::Unsupported(name) => return Err(ExecError::Unsupported { index: pc, name }),
            }
            wave.pc = next;
        }
    }
}
