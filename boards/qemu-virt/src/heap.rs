//! The global allocator: linked_list_allocator's first-fit heap over all RAM after the image,
//! under a spin lock, with a high-water mark.
//!
//! The heap lock is a spin lock (an atomic), so [`init`] and every allocation come after the
//! MMU is on (see `mmu`).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};
use linked_list_allocator::Heap;

/// The heap, and the most bytes it ever had in use.
pub struct BoardHeap {
    heap: spin::Mutex<Heap>,
    peak: AtomicUsize,
}

#[global_allocator]
static HEAP: BoardHeap = BoardHeap { heap: spin::Mutex::new(Heap::empty()), peak: AtomicUsize::new(0) };

unsafe extern "C" {
    static __heap_start: u8;
    static __ram_end: u8;
}

/// Hand all RAM from the end of the image to the end of RAM to the heap. Call once, after the
/// MMU is on.
pub fn init() {
    let start = core::ptr::addr_of!(__heap_start) as usize;
    let end = core::ptr::addr_of!(__ram_end) as usize;
    // SAFETY: [__heap_start, __ram_end) is RAM the linker script leaves to the heap (after the
    // image, its stacks and .bss), mapped normal memory, used by nothing else; called once.
    unsafe { HEAP.heap.lock().init(start as *mut u8, end - start) };
}

/// Bytes in use now.
pub fn used() -> usize {
    HEAP.heap.lock().used()
}

/// The most bytes that were ever in use at once.
pub fn high_water() -> usize {
    HEAP.peak.load(Ordering::Relaxed)
}

/// Start a new high-water mark from what is in use now.
pub fn reset_high_water() {
    HEAP.peak.store(used(), Ordering::Relaxed);
}

/// The heap's size.
pub fn size() -> usize {
    HEAP.heap.lock().size()
}

// SAFETY: allocation and deallocation go to linked_list_allocator's heap under the lock, which
// upholds the GlobalAlloc contract; the peak counter only observes.
unsafe impl GlobalAlloc for BoardHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut h = self.heap.lock();
        match h.allocate_first_fit(layout) {
            Ok(p) => {
                self.peak.fetch_max(h.used(), Ordering::Relaxed);
                p.as_ptr()
            }
            Err(()) => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: the caller passes a pointer this allocator returned for `layout`.
            unsafe { self.heap.lock().deallocate(p, layout) };
        }
    }
}
