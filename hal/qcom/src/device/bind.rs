//! Caller memory bound zero-copy in place of a backend's device memory
//! ([`QcomBackend::bind_host`]): tinygrad's `_gpu_map` (cache lines cleaned, page-aligned
//! `MAP_USER_MEM`), the constant blocks of the launches that use the range rewritten.

use super::QcomBackend;
use super::backend::HostBind;
use super::write_words;
use crate::UserMapping;
use hcq::{Error, Result};

impl QcomBackend {
    /// Make the calls read and write the caller's memory at `ptr` (`len` bytes) in place of the
    /// device memory `[own, own + len)` (a model input bound zero-copy); a null `ptr` binds the
    /// range back to its own memory. The host range is mapped for the GPU as tinygrad's
    /// `QCOMDevice._gpu_map` does: its data cache lines are cleaned to memory (aarch64), the
    /// page-aligned range goes to KGSL `MAP_USER_MEM`, and the GPU address is the mapping's plus
    /// `ptr & 0xfff`; where KGSL answers `EFAULT` the pointer is taken to be a GPU address
    /// already (memory of another GPU object). Waits for the calls in flight first, then
    /// rewrites the constant block of every launch whose arguments lie in the range (this
    /// allocates: binding is not the hot path); a previous mapping of the range is unmapped
    /// after the calls that used it. Refused, with nothing changed, when a copy launch touches
    /// the range (its `CP_MEMCPY` addresses are fixed), a kernel argument reaches across its
    /// edge, or an image argument would not be 64-byte aligned.
    ///
    /// # Safety
    /// `[ptr, ptr + len)` must stay allocated and valid for every read and write the kernels
    /// make through it, each time a call runs, until the range is bound elsewhere (or back) or
    /// the backend drops — both wait for the calls that use it — and no one else may write it
    /// while a call runs. The CPU cache lines of the range are cleaned only here (as tinygrad
    /// cleans them only when it maps): data the caller writes later reaches the GPU only where
    /// the CPU cache is coherent with it, or when the caller cleans those lines itself before
    /// the call.
    pub unsafe fn bind_host(&mut self, own: u64, len: u64, ptr: *mut u8) -> Result<()> {
        if self.hcq.is_none() {
            return Err(Error::InvalidArgument { what: "QCOM bind: before the load finished", value: 0 });
        }
        let idx = self.binds.iter().position(|b| b.own == own && b.len == len);
        let cur = idx.map_or(own, |i| self.binds[i].to);
        let inside = |a: u64, n: u64| a >= cur && a.saturating_add(n) <= cur + len;
        let overlaps = |a: u64, n: u64| a < cur + len && cur < a.saturating_add(n.max(1));
        for &(d, sr, n) in &self.copies {
            if overlaps(d, n) || overlaps(sr, n) {
                return Err(Error::Unsupported {
                    what: "QCOM bind: a copy launch touches the range (CP_MEMCPY copies device memory only)",
                    value: own,
                });
            }
        }
        for r in &self.recorded {
            if r.args.iter().zip(&r.sizes).any(|(&a, &n)| overlaps(a, n) && !inside(a, n)) {
                return Err(Error::Unsupported {
                    what: "QCOM bind: a kernel argument reaches across the range's edge",
                    value: own,
                });
            }
        }
        self.synchronize()?;
        let (to, map) = if ptr.is_null() {
            (own, None)
        } else {
            // SAFETY: the caller's contract: the range is valid until it is bound elsewhere.
            unsafe { self.map_host(ptr, len)? }
        };
        // The new blocks first (nothing changes if one is refused), then written in place.
        let mut blocks = Vec::new();
        for (i, r) in self.recorded.iter().enumerate() {
            if !r.args.iter().zip(&r.sizes).any(|(&a, &n)| inside(a, n)) {
                continue;
            }
            let args: Vec<u64> =
                r.args.iter().zip(&r.sizes).map(|(&a, &n)| if inside(a, n) { a - cur + to } else { a }).collect();
            let prog = &self.programs[r.program].0;
            let mut block = vec![0u8; prog.const_block_bytes as usize];
            let filled = prog
                .fill_consts(&mut block, &args, &r.vals, r.local)
                .and_then(|()| super::validate::write_image_descriptors(prog, &mut block, &args, &r.images));
            if let Err(e) = filled {
                if let Some(m) = map {
                    let _ =
                        self.dev.kernel.unmap_user(m, &self.dev.ctx, self.dev.ctx.last_submitted(), self.timeout_ms);
                }
                return Err(e.context(format!("QCOM bind: launch {i}")));
            }
            blocks.push((i, args, block));
        }
        for (i, args, block) in blocks {
            let r = &mut self.recorded[i];
            write_words(&self.consts[r.consts], r.off, &block)?;
            r.args = args;
        }
        let old = match idx {
            Some(i) => self.binds.remove(i).map,
            None => None,
        };
        if to != own {
            self.binds.push(HostBind { own, len, to, map });
        }
        if let Some(m) = old {
            // Unused by any call from here on (the calls in flight were waited for above).
            self.dev.kernel.unmap_user(m, &self.dev.ctx, self.dev.ctx.last_submitted(), self.timeout_ms)?;
        }
        Ok(())
    }

    /// Map `len` bytes of host memory at `ptr` for the GPU (tinygrad's `_gpu_map`); returns
    /// the GPU address of `ptr` and the mapping (none when KGSL says `EFAULT`: `ptr` is then a
    /// GPU address already).
    ///
    /// # Safety
    /// As [`QcomBackend::bind_host`].
    unsafe fn map_host(&self, ptr: *mut u8, len: u64) -> Result<(u64, Option<UserMapping>)> {
        let p = ptr as u64;
        let base = p & !0xfff;
        let span = (len + (p & 0xfff)).next_multiple_of(4096);
        let span_usize =
            usize::try_from(span).map_err(|_| Error::InvalidArgument { what: "QCOM bind size", value: len })?;
        clean_dcache(p, len);
        // SAFETY: the caller keeps `[ptr, ptr + len)` valid until it is unbound; the rest of
        // the pages around it are never addressed by the calls (their arguments lie inside).
        match unsafe { self.dev.kernel.map_user(base as *mut u8, span_usize) } {
            Ok(m) => Ok((m.gpuaddr + (p - base), Some(m))),
            Err(Error::Os { errno: 14, .. }) => Ok((p, None)),
            Err(e) => Err(e.context("QCOM bind: mapping caller memory (MAP_USER_MEM)")),
        }
    }
}

/// Clean the data cache lines of `[addr, addr + len)` to memory before the GPU reads it
/// through a user mapping (tinygrad's `dcache_flush`: `dc cvac` per 64-byte line, `dsb sy`).
/// Elsewhere the host's caches are coherent with the device (the simulator) and nothing is
/// needed.
fn clean_dcache(addr: u64, len: u64) {
    #[cfg(target_arch = "aarch64")]
    {
        let mut line = addr & !63;
        while line < addr.saturating_add(len) {
            // SAFETY: `dc cvac` only writes dirty lines back; the range is the caller's memory
            // (bind_host's contract), so the address is mapped.
            unsafe { core::arch::asm!("dc cvac, {0}", in(reg) line, options(nostack, preserves_flags)) };
            line += 64;
        }
        // SAFETY: a barrier; no memory is touched.
        unsafe { core::arch::asm!("dsb sy", options(nostack, preserves_flags)) };
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = (addr, len);
}
