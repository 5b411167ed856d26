//! The `AMD` device: an AMD gfx1100 (RDNA3) behind the KFD kernel interface
//! ([`hcq_amd::kfd::Kfd`]): the real `/dev/kfd` (`AMD`, `KFD+AMD`: [`hcq_amd::kfd::LinuxKfd`])
//! or a simulated KFD in process (`AMD:SIM`, `KFD+AMD:SIM`: `hcq_sim_amd::plug::kinds()`, this
//! crate's [`AmdKind`] over the simulator's `SimKfd`). And its bundle runner backend
//! ([`AmdBackend`], driven by `hcq_runner::Runner`).
//!
//! The device opens as tinygrad 0.14's `KFDIface` does: the KFD version, the topology's GPU
//! node (gfx_target_version 110000 required), the render node, `ACQUIRE_VM`, `RUNTIME_ENABLE`
//! on KFD 1.14+, and a memory-exception and a hardware-exception event (tinygrad's
//! `mem_fault_event`, `hw_fault_event`) whose firing ends every wait with the fault's address or
//! the reset, naming the KFD queue and its read and write pointers; a wait without progress
//! past the timeout names them too.
//! A load picks the bundle's `amd_gfx1100` objects (the `amd` graph) and, before anything is
//! allocated, parses every code object and checks each kernel's descriptor
//! ([`hcq_amd::codeobj::CodeObject::parse`], the PM4 encoder's [`hcq_amd::pm4::Program::new`]:
//! register counts, LDS, user SGPR layout, the inputs tinygrad's queue does not pass). Then it
//! allocates every base buffer and each code object's image as KFD buffer objects (VRAM,
//! CPU-visible: `AllocFlags::tinygrad`), lays out each launch's kernel-argument block as
//! tinygrad's `CLikeArgsState` does (the 64-bit address of every buffer argument, then every
//! value as a 32-bit integer, then the HSA dispatch packet for a kernel that reads it), and
//! captures the launch list as core `HwQueue`s, one per run of consecutive launches of one
//! queue: on the compute queue ([`hcq_amd::pm4::Pm4Encoder`]) the timeline wait, a cache
//! invalidate, one exec per launch, the timeline signal; on the SDMA queue
//! ([`hcq_amd::sdma::SdmaEncoder`], tinygrad's `AMDCopyQueue`) the timeline wait (`POLL_REGMEM`),
//! a `COPY LINEAR` per copy launch, the timeline signal (`FENCE`). Each run waits for the one
//! before it, so a call's dispatches and copies run in launch order across the two queues.
//!
//! The engine is the core's ([`hcq::engine::Engine`]). Its compute channel has the
//! indirect-buffer shape ([`hcq::submit::IbPool`]), as tinygrad's graph submits a bound
//! `AMDComputeQueue`: a compute run's words live in an IB slot of uncached GTT (at least 4 slots,
//! a multiple of the compute runs of a call, so each run meets its own words again; a slot is
//! rewritten only where a replay changed it — the timeline wait and signal
//! — and only once the call that used it retired), and the submit hook writes the 4-dword
//! `INDIRECT_BUFFER` packet into the KFD compute ring with word-sized volatile stores, issues
//! the device write barrier and writes the 64-bit write pointer (in dwords) to the queue's
//! write-pointer memory and then to its doorbell in the doorbell page mapped from `/dev/kfd`
//! (tinygrad's order). The copy channel (made only for a bundle with copy launches) has the
//! ring shape: the run's words go into the SDMA ring, whose write pointer counts bytes. The
//! timeline signal is a slot of an uncached GTT page the CP's `RELEASE_MEM` (and SDMA's
//! `FENCE`) writes.
//!
//! With profiling ([`AmdBackend::set_profile`]) every launch is bracketed by two timestamps of
//! the 100 MHz GPU clock (`RELEASE_MEM` of the clock counter; SDMA `TIMESTAMP`), recorded as
//! profiler events after each call.
//!
//! [`AmdBackend::bind_host`] binds a range of a buffer (a model input) to the caller's memory:
//! its pages registered with KFD as a `USERPTR` buffer object (GPU address = host address) and
//! the argument blocks of the launches that use the range rewritten. The simulated KFD pins
//! only pages it mapped itself (`Kfd::map_anonymous` with access), so on `AMD:SIM` other memory
//! is refused with `EFAULT`, as a KFD that cannot pin it would.

mod backend;
mod bind;
mod device;
mod ib;
mod memory;
mod plug;
mod profile;

pub use backend::AmdBackend;
pub use device::{AmdDevice, DEFAULT_TIMEOUT_MS, FORKED_REASON};
pub use memory::GpuBuf;
pub use plug::{AmdKind, AmdOpen, KfdOpener};
pub use profile::GPU_CLOCK_HZ;
