//! The simulated AMD RDNA3 (gfx1100, Radeon RX 7900 XTX) GPU's command processors: what the KFD
//! layer ([`kfd::SimKfd`]) drives, and what checks hcq's AMD PM4 and SDMA encoders against the
//! hardware's definition, decoded here independently of them.
//!
//! - [`memory`]: the GPU virtual address space ([`GpuMemory`]): allocations at GPU VAs backed by
//!   host memory, mapped and unmapped, shared safely by the host, the CP thread and the shader
//!   core's threads; an access outside it is a fault naming the address.
//! - [`cp`]: the compute CP (one MEC queue each): PM4 type-3 packets as tinygrad 0.14's
//!   `AMDComputeQueue` emits them, `DISPATCH_DIRECT` on `hcq-rdna3`'s interpreter over every core.
//! - [`sdma`]: an SDMA 6.0 queue: the packets of tinygrad's `AMDCopyQueue`.
//! - [`events`]: the event table (signal events by id, memory and hardware exceptions) a KFD
//!   layer answers `WAIT_EVENTS` from.
//! - [`fault`]: a queue's fault report ([`QueueFault`]: queue, packet place, what).
//! - [`kfd`]: [`SimKfd`], an in-process KFD (hcq-amd's `Kfd` trait) over a [`Gpu`]: KFD's
//!   shared address space on host pages, doorbells the CP thread polls, events, topology.
//! - [`plug`]: the registry entries ([`plug::kinds`]: `AMD:SIM`, `KFD+AMD:SIM`, hcq-kfd's
//!   `AmdKind` over a [`SimKfd`]).
//! - [`trace`]: the command-stream capture: every packet the engines execute, decoded, to a
//!   [`PacketSink`] ([`Gpu::trace_packets`]), and its one-line text form.
//! - [`gpu`]: the front ([`Gpu`]): create queues, ring doorbells, run them on the caller's thread
//!   ([`Gpu::process`]) or on a CP thread ([`Gpu::start`]).
//!
//! Nothing here panics on what the command streams or memory hold: every malformed packet, bad
//! register, unmapped address, unloadable program or shader fault stops its queue with a report
//! and the others keep running.

pub mod cp;
pub mod events;
pub mod fault;
pub mod gpu;
pub mod kfd;
pub mod memory;
pub mod plug;
pub mod sdma;
pub mod trace;

pub use cp::{ComputeQueueDesc, QueueStats};
pub use events::{EventState, Events, HwException, MemoryException};
pub use fault::{Engine, QueueFault, QueueId, What, Where};
pub use gpu::{DoorbellPage, GPU_CLOCK_HZ, Gpu, GpuConfig, Progress, QueueError, QueueHandle, QueueState, QueueStatus};
pub use kfd::SimKfd;
pub use memory::{GpuMemory, HostPages, MemError, MemFault, MemView};
pub use sdma::SdmaQueueDesc;
pub use trace::{DispatchSeen, Packet, PacketSink};
