//! Address allocators for device memory.
//!
//! Two allocators hand out *addresses* (device virtual addresses, offsets into a ring or an
//! arena); neither touches the memory it manages, so both work for memory the CPU cannot map.
//!
//! - [`BumpAllocator`]: a cursor over a fixed arena, optionally wrapping back to the start. It
//!   keeps no record of what is in flight: a wrapping user (a kernel-argument ring, a command
//!   ring) must itself make sure the space it wraps onto is no longer read by the device, for
//!   example by waiting on the timeline value stamped for that region. [`BumpAllocator::wraps`]
//!   counts wraps to make that bookkeeping possible. Needs no heap.
//! - [`RangeAllocator`] (feature `alloc`): a good-fit allocator with free and coalescing over
//!   `[base, base + size)`, for device heaps and virtual-address space. Its metadata lives on
//!   the host heap, never in the managed range.

mod bump;
#[cfg(feature = "alloc")]
mod range;

pub use bump::BumpAllocator;
#[cfg(feature = "alloc")]
pub use range::RangeAllocator;
