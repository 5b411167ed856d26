//! A wave's state: its register files, the lanes at the current pc and the parked lane groups
//! (reconvergence), its predicate and whether it runs, waits at a barrier or is done.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum State {
    Run,
    Barrier,
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pred {
    None,
    True,
    False,
}

pub(super) struct Wave {
    /// Its index in the work-group (0 for a wave of packed work-groups).
    pub(super) index: usize,
    pub(super) regs: Box<[Lanes; 256]>,
    /// The separate half-register file (used when `merged` is false).
    pub(super) hregs: Box<[Lanes; 256]>,
    pub(super) merged: bool,
    pub(super) pc: u32,
    pub(super) mask: u64,
    /// Other lane groups, sorted by descending pc (the last is the lowest).
    pub(super) parked: Vec<(u32, u64)>,
    pub(super) state: State,
    pub(super) pred: Pred,
    pub(super) pred_mask: u64,
}

impl Wave {
    pub(super) fn new(index: usize) -> Wave {
        Wave {
            index,
            regs: Box::new([[0; W]; 256]),
            hregs: Box::new([[0; W]; 256]),
            merged: false,
            pc: 0,
            mask: 0,
            parked: Vec::with_capacity(W),
            state: State::Done,
            pred: Pred::None,
            pred_mask: 0,
        }
    }

    /// Half register `h` of lane `l`.
    #[inline]
    pub(super) fn hget(&self, h: u8, l: usize) -> u32 {
        if self.merged {
            (self.regs[(h >> 1) as usize][l] >> ((h & 1) * 16)) & 0xffff
        } else {
            self.hregs[h as usize][l] & 0xffff
        }
    }

    #[inline]
    pub(super) fn hset(&mut self, h: u8, l: usize, v: u32) {
        if self.merged {
            let sh = (h & 1) * 16;
            let x = &mut self.regs[(h >> 1) as usize][l];
            *x = (*x & !(0xffff << sh)) | ((v & 0xffff) << sh);
        } else {
            self.hregs[h as usize][l] = v & 0xffff;
        }
    }

    pub(super) fn park(&mut self, pc: u32, mask: u64) {
        if mask == 0 {
            return;
        }
        if let Some(e) = self.parked.iter_mut().find(|e| e.0 == pc) {
            e.1 |= mask;
            return;
        }
        let at = self.parked.iter().position(|e| e.0 < pc).unwrap_or(self.parked.len());
        self.parked.insert(at, (pc, mask));
    }
}
