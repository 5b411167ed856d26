//! The compute queue's encoder ([`Pm4Encoder`]) and its configuration.

use super::raw::{event, event_write, gcr, release_mem as rm, wait_reg_mem as wrm};
use super::{D, R, ReleaseMem, Sink, W, check_addr};
use crate::codeobj::Descriptor;
use crate::launch::{self, LaunchError};
use crate::regs;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::vec::Vec;
use hcq::queue::{CmdWriter, Command, Encoder, Field, Form};
use hcq::{Error, Result};
use spin::RwLock;

/// The most work-items a gfx11 work-group holds.
pub const MAX_WORKGROUP: u32 = 1024;
/// `COMPUTE_PGM_RSRC1.PRIV`: tinygrad sets it on gfx11 ("to workaround cwsr").
const RSRC1_PRIV: u32 = 1 << 20;
/// LDS per work-group the gfx1100 has (64 KiB), in the 512-byte blocks of `RSRC2.LDS_SIZE`.
const LDS_BLOCKS: u32 = 64 * 1024 / 512;

/// The KFD queue event the timeline's signals raise, so a host asleep in `WAIT_EVENTS` wakes
/// (tinygrad's `queue_event` and `queue_event_mailbox_ptr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt {
    /// The device's timeline signal address: signals to it get the interrupting release.
    pub timeline: u64,
    /// The event's mailbox slot (event page + `event_slot_index` × 8).
    pub mailbox: u64,
    /// The event id (`CREATE_EVENT`'s `event_id`), written to the mailbox and the context id.
    pub event_id: u32,
}

/// What the scratch (private segment) layout depends on: the device's KFD topology properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchDevice {
    /// Compute units (`simd_count / simd_per_cu`).
    pub cu_count: u32,
    /// Shader engines (`array_count / simd_arrays_per_engine`).
    pub se_count: u32,
    /// Scratch wave slots per CU (`max_slots_scratch_cu`).
    pub max_slots_scratch_cu: u32,
}

/// The scratch memory every dispatch uses, and the `COMPUTE_TMPRING_SIZE` that describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scratch {
    /// Its device address (256-byte aligned: `COMPUTE_DISPATCH_SCRATCH_BASE` holds it >> 8).
    pub base: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// `COMPUTE_TMPRING_SIZE`.
    pub tmpring_size: u32,
    /// Private bytes per lane it holds: a program that needs more is refused.
    pub max_private_bytes: u32,
}

impl Scratch {
    /// The scratch tinygrad's `AMDDevice._ensure_has_local_memory(private_bytes)` sets up for
    /// gfx11 with one XCC: wave64 lanes, 256-byte units, `private_bytes` rounded up to 4 per lane,
    /// for every scratch slot of every CU; `TMPRING_SIZE.WAVES` the waves that fit per shader
    /// engine (at most the slots), `WAVESIZE` the 256-byte units of a wave. tinygrad reserves
    /// 128 bytes per lane at open and grows from there. Allocate [`Scratch::bytes`] at `base`.
    ///
    /// Errors: `private_bytes` 0, a count of 0 in `dev`, `base` not 256-byte aligned or beyond
    /// 48 bits, or a layout that does not fit `TMPRING_SIZE`'s fields.
    pub fn for_device(base: u64, private_bytes: u32, dev: ScratchDevice) -> Result<Scratch> {
        check_addr("amd scratch base (COMPUTE_DISPATCH_SCRATCH_BASE holds it >> 8)", base, 256)?;
        if private_bytes == 0 {
            return Err(Error::InvalidArgument { what: "amd scratch: 0 private bytes per lane", value: 0 });
        }
        if dev.cu_count == 0 || dev.se_count == 0 || dev.max_slots_scratch_cu == 0 {
            return Err(Error::InvalidArgument {
                what: "amd scratch: a device with 0 CUs, shader engines or scratch slots",
                value: 0,
            });
        }
        const LANES: u64 = 64;
        const UNIT: u64 = 256;
        let per_lane = u64::from(private_bytes).next_multiple_of(UNIT / LANES);
        let slots = u64::from(dev.cu_count) * u64::from(dev.max_slots_scratch_cu);
        let bytes = per_lane * LANES * slots;
        let wave_units = (LANES * per_lane).div_ceil(UNIT);
        let waves = (bytes / (wave_units * UNIT) / u64::from(dev.se_count)).min(slots);
        let r = regs::COMPUTE_TMPRING_SIZE::default();
        let r = u16::try_from(waves).ok().map(|w| r.try_set_waves(w));
        let r = match (r, u16::try_from(wave_units)) {
            (Some(Ok(r)), Ok(u)) => r.try_set_wavesize(u).ok(),
            _ => None,
        };
        let r = r.ok_or(Error::LimitExceeded {
            what: "amd scratch: bytes per wave (256-byte units) beyond COMPUTE_TMPRING_SIZE.WAVESIZE",
            value: wave_units,
            limit: u64::from(regs::COMPUTE_TMPRING_SIZE::WAVESIZE_MASK),
        })?;
        Ok(Scratch { base, bytes, tmpring_size: r.raw(), max_private_bytes: private_bytes })
    }
}

/// The compute encoder's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pm4Config {
    /// The scratch memory of every dispatch.
    pub scratch: Scratch,
    /// `COMPUTE_RESOURCE_LIMITS.WAVES_PER_SH` (tinygrad's `WAVES_PER_SH`, 0 = no limit).
    pub waves_per_sh: u16,
    /// The KFD queue event, when the timeline's signals should interrupt (KFD; not under AM).
    pub interrupt: Option<Interrupt>,
}

/// A registered program: what a dispatch of it writes besides the grid and the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    /// Its first instruction's address (the handle exec commands name).
    pub entry: u64,
    /// `COMPUTE_PGM_RSRC1`: the descriptor's, with `PRIV` (tinygrad's gfx11 workaround).
    pub rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`: the descriptor's, with `LDS_SIZE` in 512-byte blocks.
    pub rsrc2: u32,
    /// `COMPUTE_PGM_RSRC3`: the descriptor's.
    pub rsrc3: u32,
    /// The descriptor (user SGPR layout, wave size, kernarg size).
    pub kd: Descriptor,
}

impl Program {
    /// The program at `entry` with descriptor `kd`, as tinygrad's `AMDProgram` derives its
    /// registers.
    ///
    /// Errors: `entry` not 256-byte aligned or beyond 48 bits; LDS beyond 64 KiB; a descriptor
    /// enabling an SGPR input the queue does not set up (named, as [`launch::user_sgprs`]).
    pub fn new(entry: u64, kd: &Descriptor) -> Result<Program> {
        check_addr("amd program entry (COMPUTE_PGM_LO holds it >> 8)", entry, 256)?;
        let lds = kd.lds_bytes.div_ceil(512);
        if lds > LDS_BLOCKS {
            return Err(Error::LimitExceeded {
                what: "amd program LDS bytes (group_segment_fixed_size) beyond the gfx1100's 64 KiB",
                value: u64::from(kd.lds_bytes),
                limit: u64::from(LDS_BLOCKS * 512),
            });
        }
        // the same checks the dispatch makes, once here
        launch::user_sgprs(kd, &launch::Inputs::default())
            .map_err(|e| launch_error(&e, kd).context(format!("amd program at {entry:#x}: {e}")))?;
        Ok(Program {
            entry,
            rsrc1: kd.rsrc1 | RSRC1_PRIV,
            // tinygrad ORs the block count in (the descriptor's LDS_SIZE is 0)
            rsrc2: kd.rsrc2 | lds << regs::COMPUTE_PGM_RSRC2::LDS_SIZE_SHIFT,
            rsrc3: kd.rsrc3,
            kd: *kd,
        })
    }
}

fn launch_error(e: &LaunchError, kd: &Descriptor) -> Error {
    match *e {
        LaunchError::Property(p) => Error::Unsupported { what: p, value: u64::from(kd.properties) },
        LaunchError::UserSgprs { count, enabled } => Error::Mismatch {
            what: "amd kernel descriptor USER_SGPR_COUNT vs the SGPR inputs it enables",
            expected: u64::from(enabled),
            found: u64::from(count),
        },
        LaunchError::Local(_) | LaunchError::Entry(_) | LaunchError::Load(_) => {
            Error::InvalidArgument { what: "amd kernel descriptor", value: u64::from(kd.properties) }
        }
    }
}

/// The compute queue's encoder: core [`Command`]s to the PM4 packets tinygrad 0.14's
/// `AMDComputeQueue` emits for them on a gfx11 device with one XCC.
///
/// | command | packets (tinygrad's method) |
/// |---|---|
/// | wait | `WAIT_REG_MEM` memory, `>=`, mask all ones, poll interval 4 (`wait`) |
/// | signal | `RELEASE_MEM` 32-bit low, no interrupt, with the cache flush; for the timeline under KFD a second `RELEASE_MEM` of the queue event id to its mailbox with an interrupt (`signal`) |
/// | timestamp | `RELEASE_MEM` (no data, interrupt select 2), `RELEASE_MEM` of the GPU clock, `ACQUIRE_MEM` of every cache (`timestamp`) |
/// | exec | `ACQUIRE_MEM` (shader caches), `SET_SH_REG` `COMPUTE_PGM_LO/HI`, `RSRC1/2`, `RSRC3`, `TMPRING_SIZE`, `DISPATCH_SCRATCH_BASE_LO/HI`, `RESTART_X/Y/Z`, `USER_DATA_0..`, `RESOURCE_LIMITS`, `START_X..NUM_THREAD_Z` (+2), `DISPATCH_DIRECT`, `EVENT_WRITE(CS_PARTIAL_FLUSH, 4)` (`exec`) |
/// | barrier | `WAIT_REG_MEM` write-wait-write on the NBIO HDP flush request/done registers, `ACQUIRE_MEM` of every cache (`memory_barrier`) |
/// | copy | refused: the compute queue does not copy (the SDMA queue does) |
///
/// **Marks.** Every word a patch may change is marked with the core's [`Form`]:
///
/// | word | field | form |
/// |---|---|---|
/// | wait/signal/timestamp address | `Addr` | wide `Plain` |
/// | wait reference, signal data (low word) | `Value` | 32-bit `Plain` |
/// | kernarg pointer (`COMPUTE_USER_DATA_*`) | `Kernargs` | wide `Plain` |
/// | dispatch pointer (kernels that enable it) | `Kernargs` | wide `Offset(kernarg_bytes)` |
/// | `COMPUTE_NUM_THREAD_X/Y/Z` | `Local(d)` | `Plain` |
/// | `DISPATCH_DIRECT` group counts | `Global(d)` | `Plain` |
///
/// **32-bit signals.** tinygrad's compute queue writes and compares the low 32 bits of a
/// signal (`RELEASE_MEM` `DATA_SEL` 32-bit low, `WAIT_REG_MEM` on one dword, unsigned `>=`).
/// The encoder emits exactly that, and refuses a signal or wait value above `u32::MAX` (at
/// encoding and at patching: the marks are 32-bit `Plain`), where the words would silently
/// compare the wrong thing.
///
/// **Dispatch packets.** A kernel that enables the dispatch pointer reads the HSA dispatch
/// packet at `kernargs + kernarg_bytes` ([`crate::launch::dispatch_packet`]); writing it there
/// (and again after patching its sizes) is the backend's job, as tinygrad's `exec` writes it
/// into the argument buffer.
///
/// Programs are registered by their entry address ([`Pm4Encoder::add_program`]); an exec
/// command names one by that address, and an address nobody registered is refused by value.
#[derive(Debug)]
pub struct Pm4Encoder {
    cfg: Pm4Config,
    programs: RwLock<BTreeMap<u64, Program>>,
}

impl Pm4Encoder {
    /// An encoder with `cfg`.
    ///
    /// Errors: a scratch base not 256-byte aligned or beyond 48 bits, `waves_per_sh` beyond its
    /// 10 bits, an interrupt mailbox or timeline not 8-byte aligned.
    pub fn new(cfg: Pm4Config) -> Result<Pm4Encoder> {
        check_addr("amd scratch base", cfg.scratch.base, 256)?;
        regs::COMPUTE_RESOURCE_LIMITS::default().try_set_waves_per_sh(cfg.waves_per_sh)?;
        if let Some(irq) = cfg.interrupt {
            check_addr("amd queue event mailbox", irq.mailbox, 8)?;
            check_addr("amd timeline signal address", irq.timeline, 8)?;
        }
        Ok(Pm4Encoder { cfg, programs: RwLock::new(BTreeMap::new()) })
    }

    /// The configuration.
    pub fn config(&self) -> Pm4Config {
        self.cfg
    }

    /// Register the kernel with descriptor `kd` whose first instruction is at `entry` (the code
    /// object's load address + its kernel's `entry`); returns the handle for exec commands
    /// (`entry` itself). Registering the same address again replaces it.
    ///
    /// Errors: as [`Program::new`]; a private segment larger than the scratch holds per lane.
    pub fn add_program(&self, entry: u64, kd: &Descriptor) -> Result<u64> {
        let p = Program::new(entry, kd)?;
        if kd.private_bytes > self.cfg.scratch.max_private_bytes {
            return Err(Error::LimitExceeded {
                what: "amd program private bytes per lane beyond the encoder's scratch",
                value: u64::from(kd.private_bytes),
                limit: u64::from(self.cfg.scratch.max_private_bytes),
            });
        }
        self.programs.write().insert(entry, p);
        Ok(entry)
    }

    /// Forget the program at `entry` (its code is freed); `true` when there was one.
    pub fn remove_program(&self, entry: u64) -> bool {
        self.programs.write().remove(&entry).is_some()
    }

    /// The program registered at `entry`.
    pub fn program(&self, entry: u64) -> Option<Program> {
        self.programs.read().get(&entry).copied()
    }

    fn lookup(&self, entry: u64) -> Result<Program> {
        self.program(entry).ok_or(Error::InvalidArgument {
            what: "amd exec: no program registered at this code address",
            value: entry,
        })
    }

    fn check_grid(global: [u32; 3], local: [u32; 3]) -> Result<()> {
        if let Some(&g) = global.iter().find(|&&g| g == 0) {
            return Err(Error::InvalidArgument { what: "amd exec: a work-group count is 0", value: u64::from(g) });
        }
        // None for a 0; saturating: 3 × u32::MAX does not fit u64, and is far beyond the limit anyway
        let items = local.iter().try_fold(1u64, |acc, &l| (l != 0).then(|| acc.saturating_mul(u64::from(l))));
        match items {
            Some(n) if n <= u64::from(MAX_WORKGROUP) => Ok(()),
            Some(n) => Err(Error::LimitExceeded {
                what: "amd exec: work-items per work-group",
                value: n,
                limit: u64::from(MAX_WORKGROUP),
            }),
            None => Err(Error::InvalidArgument { what: "amd exec: a work-group size is 0", value: 0 }),
        }
    }

    fn check_value(what: &'static str, value: u64) -> Result<u32> {
        u32::try_from(value).map_err(|_| Error::InvalidArgument { what, value })
    }

    fn interrupt_for(&self, addr: u64) -> Option<Interrupt> {
        self.cfg.interrupt.filter(|irq| irq.timeline == addr)
    }

    /// Encode `cmd` into `s`.
    pub fn encode_to(&self, cmd: &Command, s: &mut impl Sink) -> Result<()> {
        match *cmd {
            Command::Wait { addr, value } => {
                check_addr("amd wait address", addr, 4)?;
                let v = Self::check_value("amd wait value beyond 32 bits (WAIT_REG_MEM compares one dword)", value)?;
                super::wait_reg_mem_mem(
                    s,
                    wrm::FUNCTION_GEQ,
                    D::Mark(addr, Field::Addr, Form::Plain),
                    W::Mark(v, Field::Value, Form::Plain),
                    u32::MAX,
                )
            }
            Command::Signal { addr, value } => {
                check_addr("amd signal address", addr, 8)?;
                let v = Self::check_value("amd signal value beyond 32 bits (RELEASE_MEM writes the low dword)", value)?;
                super::release_mem(
                    s,
                    ReleaseMem {
                        gcr: rm::GCR_CACHE_FLUSH,
                        data_sel: rm::DATA_32_LOW,
                        int_sel: rm::INT_NONE,
                        addr: D::Mark(addr, Field::Addr, Form::Plain),
                        data_lo: W::Mark(v, Field::Value, Form::Plain),
                        data_hi: W::Lit(0),
                        ctxid: 0,
                    },
                )?;
                if let Some(irq) = self.interrupt_for(addr) {
                    super::release_mem(
                        s,
                        ReleaseMem {
                            gcr: 0,
                            data_sel: rm::DATA_32_LOW,
                            int_sel: rm::INT_AFTER_WRITE_CONFIRM,
                            addr: D::Lit(irq.mailbox),
                            data_lo: W::Lit(irq.event_id),
                            data_hi: W::Lit(0),
                            ctxid: irq.event_id,
                        },
                    )?;
                }
                Ok(())
            }
            Command::Timestamp { addr } => {
                check_addr("amd timestamp address", addr, 8)?;
                // all prior work done (tinygrad's release_mem() defaults: no data, int_sel 2)
                super::release_mem(
                    s,
                    ReleaseMem {
                        gcr: 0,
                        data_sel: rm::DATA_NONE,
                        int_sel: rm::INT_AFTER_WRITE_CONFIRM,
                        addr: D::Lit(0),
                        data_lo: W::Lit(0),
                        data_hi: W::Lit(0),
                        ctxid: 0,
                    },
                )?;
                super::release_mem(
                    s,
                    ReleaseMem {
                        gcr: 0,
                        data_sel: rm::DATA_GPU_CLOCK,
                        int_sel: rm::INT_NONE,
                        addr: D::Mark(addr, Field::Addr, Form::Plain),
                        data_lo: W::Lit(0),
                        data_hi: W::Lit(0),
                        ctxid: 0,
                    },
                )?;
                super::acquire_mem(s, 0, u64::MAX, gcr::ALL_CACHES);
                Ok(())
            }
            Command::Barrier => {
                super::wait_reg_mem_reg_write(
                    s,
                    wrm::FUNCTION_GEQ,
                    regs::nbio::GPU_HDP_FLUSH_REQ,
                    regs::nbio::GPU_HDP_FLUSH_DONE,
                    u32::MAX,
                    u32::MAX,
                );
                super::acquire_mem(s, 0, u64::MAX, gcr::ALL_CACHES);
                Ok(())
            }
            Command::Exec { program, kernargs, global, local } => {
                let p = self.lookup(program)?;
                Self::check_grid(global, local)?;
                check_addr("amd kernel argument address", kernargs, 16)?;
                self.exec(&p, kernargs, global, local, s)
            }
            Command::Copy { .. } => Err(Error::Unsupported {
                what: "amd compute queue (PM4): copy commands go to the SDMA copy queue",
                value: 0,
            }),
        }
    }

    fn exec(&self, p: &Program, kernargs: u64, global: [u32; 3], local: [u32; 3], s: &mut impl Sink) -> Result<()> {
        use regs::*;
        let kd = &p.kd;
        let sc = self.cfg.scratch;
        let dispatch_packet = kernargs + u64::from(kd.kernarg_bytes);
        let user = launch::user_sgprs(kd, &launch::Inputs { kernarg: kernargs, dispatch_packet, scratch: sc.base })
            .map_err(|e| launch_error(&e, kd))?;
        // COMPUTE_USER_DATA_*: the private segment buffer (4 words over the scratch, fixed), the
        // dispatch pointer (2), the kernarg pointer (2; tinygrad writes it also for a kernel
        // that does not load it), in the order launch::user_sgprs lays them out
        let private = if kd.properties & 1 != 0 { 4 } else { 0 };
        let count = private + if kd.dispatch_ptr { 2 } else { 0 } + 2;
        let built = user.len() + if kd.kernarg_ptr { 0 } else { 2 };
        if built != count || count > USER_DATA_COUNT as usize {
            return Err(Error::Mismatch {
                what: "amd exec: user SGPR layout",
                expected: count as u64,
                found: built as u64,
            });
        }
        // CAST: the halves of an address.
        let lo = |x: u64| x as u32;
        let hi = |x: u64| (x >> 32) as u32;
        super::acquire_mem(s, 0, u64::MAX, gcr::SHADER_CACHES);
        let pgm = p.entry >> 8;
        super::set_sh_reg(s, COMPUTE_PGM_LO::REG, &[R::Lit(lo(pgm)), R::Lit(hi(pgm))])?;
        super::set_sh_reg(s, COMPUTE_PGM_RSRC1::REG, &[R::Lit(p.rsrc1), R::Lit(p.rsrc2)])?;
        super::set_sh_reg(s, COMPUTE_PGM_RSRC3::REG, &[R::Lit(p.rsrc3)])?;
        super::set_sh_reg(s, COMPUTE_TMPRING_SIZE::REG, &[R::Lit(sc.tmpring_size)])?;
        let base = sc.base >> 8;
        super::set_sh_reg(s, COMPUTE_DISPATCH_SCRATCH_BASE_LO::REG, &[R::Lit(lo(base)), R::Lit(hi(base))])?;
        super::set_sh_reg(s, COMPUTE_RESTART_X::REG, &[R::Lit(0); 3])?;
        let mut u: Vec<R> = user.get(..private).unwrap_or_default().iter().map(|&w| R::Lit(w)).collect();
        // CAST: the offset of a 32-bit kernarg size.
        let after_args = i64::from(kd.kernarg_bytes);
        if kd.dispatch_ptr {
            u.push(R::Wide(dispatch_packet, Field::Kernargs, Form::Offset(after_args)));
        }
        u.push(R::Wide(kernargs, Field::Kernargs, Form::Plain));
        super::set_sh_reg(s, COMPUTE_USER_DATA_0::REG, &u)?;
        let limits = COMPUTE_RESOURCE_LIMITS::default().set_waves_per_sh(self.cfg.waves_per_sh).raw();
        super::set_sh_reg(s, COMPUTE_RESOURCE_LIMITS::REG, &[R::Lit(limits)])?;
        let l = |d: u8| R::Mark(local[usize::from(d)], Field::Local(d), Form::Plain);
        let z = R::Lit(0);
        super::set_sh_reg(s, COMPUTE_START_X::REG, &[z, z, z, l(0), l(1), l(2), z, z])?;
        let g = |d: u8| W::Mark(global[usize::from(d)], Field::Global(d), Form::Plain);
        let initiator = COMPUTE_DISPATCH_INITIATOR::default()
            .set_compute_shader_en(true)
            .set_force_start_at_000(true)
            .set_cs_w32_en(kd.wave32)
            .raw();
        super::dispatch_direct(s, [g(0), g(1), g(2)], initiator);
        super::event_write(s, event::CS_PARTIAL_FLUSH, event_write::INDEX_CS_PARTIAL_FLUSH);
        Ok(())
    }
}

/// Adapter from [`Sink`] to the core's [`CmdWriter`]: every mark becomes a core mark.
struct CoreSink<'a, 'b> {
    w: &'a mut CmdWriter<'b>,
}

impl Sink for CoreSink<'_, '_> {
    fn word(&mut self, w: u32) {
        self.w.word(w);
    }
    fn words(&mut self, ws: &[u32]) {
        self.w.words(ws);
    }
    // The value is what the form gives for this command (the encoder wrote the field itself, or
    // the field plus the constant of an `Offset`), so the word is marked as computed.
    fn mark32(&mut self, field: Field, form: Form, w: u32) {
        self.w.computed32(field, form, w);
    }
    fn mark64(&mut self, field: Field, form: Form, v: u64) {
        self.w.computed64(field, form, v);
    }
}

impl Encoder for Pm4Encoder {
    fn encode(&self, cmd: &Command, w: &mut CmdWriter<'_>) -> Result<()> {
        self.encode_to(cmd, &mut CoreSink { w })
    }

    /// The checks [`Pm4Encoder::encode_to`] makes of the patched field: address alignment and
    /// 48 bits; a signal's address may not become the interrupting timeline's (the second
    /// `RELEASE_MEM` is there or not from encoding on); a group count of 0; a work-group of 0 or
    /// more than 1024 work-items. Values above 32 bits are refused by the 32-bit marks.
    fn check_patch(&self, cmd: &Command, field: Field) -> Result<()> {
        match (*cmd, field) {
            (Command::Wait { addr, .. }, Field::Addr) => check_addr("amd wait address", addr, 4),
            (Command::Signal { addr, .. }, Field::Addr) => {
                check_addr("amd signal address", addr, 8)?;
                match self.interrupt_for(addr) {
                    Some(_) => Err(Error::InvalidArgument {
                        what: "amd signal: patching an address to the timeline's (its interrupt is fixed at encoding)",
                        value: addr,
                    }),
                    None => Ok(()),
                }
            }
            (Command::Timestamp { addr }, Field::Addr) => check_addr("amd timestamp address", addr, 8),
            (Command::Exec { kernargs, .. }, Field::Kernargs) => {
                check_addr("amd kernel argument address", kernargs, 16)
            }
            (Command::Exec { global, local, .. }, Field::Global(_) | Field::Local(_)) => {
                Self::check_grid(global, local)
            }
            _ => Ok(()),
        }
    }
}
