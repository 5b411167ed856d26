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
//! - The dispatch is a transaction: global-memory writes go to a journal that reads see, and
//!   reach GPU memory only when the whole dispatch finished. A fault (an access outside every
//!   allocation, e.g. an argument address that points nowhere), an unsupported instruction or
//!   the step limit ends it with an error that names the instruction, and **nothing** of it is
//!   written. The CP stops with that error (its IB offset added by the CP) and the host sees it
//!   at the next wait, at once.

use crate::cp::{ComputeState, GpuMemory, ShaderCore};
use crate::images::ImageState;
use hcq::{Error, Result};
use hcq_ir3::exec::{ExecError, Interp, MemSpace, Memory, Meta, OutOfBounds, Shader};
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

struct Cached {
    words: Vec<u32>,
    entry: u32,
    regs: [u32; 5],
    prog: Shader,
}

/// Runs each dispatch's shader with the ir3 interpreter (see the module docs).
pub struct Ir3Dispatch {
    interp: Interp,
    cache: HashMap<u64, Cached>,
    journal: HashMap<u64, u32>,
    order: Vec<u64>,
    /// The constant file as bytes (reused: no allocation per dispatch once warm).
    consts: Vec<u8>,
    args: ArgSlots,
    images: ImageState,
    dispatches: u64,
    lane_instructions: u64,
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
        let mut interp = Interp::new();
        interp.max_steps = max_steps;
        Self {
            interp,
            cache: HashMap::new(),
            journal: HashMap::new(),
            order: Vec::new(),
            consts: Vec::new(),
            args: ArgSlots::default(),
            images: ImageState::default(),
            dispatches: 0,
            lane_instructions: 0,
        }
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
            self.cache.insert(s.shader_addr, Cached { words: s.shader.to_vec(), entry: s.entry, regs, prog });
        }
        // PANIC: present: either hit above or inserted just now.
        Ok(&self.cache.get(&s.shader_addr).expect("inserted above").prog)
    }
}

/// The simulated GPU memory seen through a write journal (see the module docs).
struct Journaled<'a> {
    mem: &'a mut dyn GpuMemory,
    journal: &'a mut HashMap<u64, u32>,
    order: &'a mut Vec<u64>,
}

impl Journaled<'_> {
    fn word(&self, addr: u64) -> core::result::Result<u32, OutOfBounds> {
        match self.journal.get(&addr) {
            Some(w) => Ok(*w),
            None => self.mem.read32(addr).map_err(|_| OutOfBounds),
        }
    }

    /// Every dword covering `[addr, addr + len)`, first and count.
    fn span(addr: u64, len: usize) -> core::result::Result<(u64, u64), OutOfBounds> {
        let end = addr.checked_add(len as u64).ok_or(OutOfBounds)?;
        let first = addr & !3;
        Ok((first, (end.div_ceil(4) * 4 - first) / 4))
    }
}

impl Memory for Journaled<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> core::result::Result<(), OutOfBounds> {
        let (first, n) = Self::span(addr, buf.len())?;
        for k in 0..n {
            let a = first + 4 * k;
            let bytes = self.word(a)?.to_le_bytes();
            for (i, b) in bytes.iter().enumerate() {
                let at = a + i as u64;
                if at >= addr && at < addr + buf.len() as u64 {
                    buf[(at - addr) as usize] = *b;
                }
            }
        }
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> core::result::Result<(), OutOfBounds> {
        let (first, n) = Self::span(addr, data.len())?;
        // The whole access must be mapped before any of it is journaled.
        for k in 0..n {
            self.word(first + 4 * k)?;
        }
        for k in 0..n {
            let a = first + 4 * k;
            let mut bytes = self.word(a)?.to_le_bytes();
            for (i, b) in bytes.iter_mut().enumerate() {
                let at = a + i as u64;
                if at >= addr && at < addr + data.len() as u64 {
                    *b = data[(at - addr) as usize];
                }
            }
            if self.journal.insert(a, u32::from_le_bytes(bytes)).is_none() {
                self.order.push(a);
            }
        }
        Ok(())
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
        // Borrow the interpreter and the program apart: the program lives in the cache.
        self.program(s)?;
        // PANIC: `program` returned Ok, so the cache holds this shader address.
        let prog = &self.cache.get(&s.shader_addr).expect("cached by program()").prog;
        let d = hcq_ir3::exec::Dispatch { consts: &self.consts, grid: s.groups, local: s.local };
        self.journal.clear();
        self.order.clear();
        let mut j = Journaled { mem, journal: &mut self.journal, order: &mut self.order };
        let images = hcq_ir3::exec::Images {
            textures: &self.images.textures,
            samplers: &self.images.samplers,
            ibos: &self.images.ibos,
        };
        let stats = self.interp.run_with_images(prog, &d, images, &mut j).map_err(|e| {
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
        // The dispatch finished: commit its writes in program order.
        for &a in &self.order {
            // PANIC: `order` lists exactly the journal's keys (pushed on first insert).
            mem.write32(a, self.journal[&a])?;
        }
        self.dispatches += 1;
        self.lane_instructions += stats.lane_instructions;
        Ok(())
    }
}
