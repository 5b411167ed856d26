//! cat0: flow control (branches, predicates, `end`).

use super::*;

/// Control flow. Returns true when the wave must yield (barrier never happens here; `end` of
/// the last group is handled by the scheduler).
pub(super) fn cx_cat0(_cx: &mut Ctx, wave: &mut Wave, c: &Cat0, pc: usize, exec: u64) -> Res<bool> {
    use Cat0Op::*;
    let n = _cx.prog.instrs.len() as i64;
    let target = pc as i64 + c.immed as i64;
    let check =
        |t: i64| if (0..n).contains(&t) { Ok(t as u32) } else { Err(ExecError::PcOutOfRange { from: pc, pc: t }) };
    let p = |wave: &Wave, inv: bool, comp: u8| -> u64 {
        let r = &wave.regs[0xf8 + comp as usize];
        let mut m = 0u64;
        for (l, v) in r.iter().enumerate() {
            m |= ((*v != 0) as u64) << l;
        }
        if inv { !m } else { m }
    };
    let next = pc as u32 + 1;
    let branch = |wave: &mut Wave, taken: u64| -> Res<()> {
        let taken = taken & wave.mask;
        if taken == 0 {
            wave.pc = next;
        } else {
            let t = check(target)?;
            if taken == wave.mask {
                wave.pc = t;
            } else {
                let rest = wave.mask & !taken;
                wave.park(t, taken);
                wave.mask = rest;
                wave.pc = next;
            }
        }
        Ok(())
    };
    match c.op {
        Nop => wave.pc = next,
        End => {
            wave.mask = 0;
            wave.pc = next;
        }
        Kill => {
            let k = p(wave, c.inv1, c.comp1) & exec;
            wave.mask &= !k;
            wave.pc = next;
        }
        Predt | Predf => {
            wave.pred_mask = p(wave, false, 0);
            wave.pred = if c.op == Predt { Pred::True } else { Pred::False };
            wave.pc = next;
        }
        Prede => {
            wave.pred = Pred::None;
            wave.pc = next;
        }
        Jump => branch(wave, u64::MAX)?,
        Br => branch(wave, p(wave, c.inv1, c.comp1))?,
        Brao => branch(wave, p(wave, c.inv1, c.comp1) | p(wave, c.inv2, c.comp2))?,
        Braa => branch(wave, p(wave, c.inv1, c.comp1) & p(wave, c.inv2, c.comp2))?,
        Bany => {
            let any = p(wave, c.inv1, c.comp1) & exec != 0;
            branch(wave, if any { u64::MAX } else { 0 })?
        }
        Ball => {
            let all = p(wave, c.inv1, c.comp1) & exec == exec;
            branch(wave, if all { u64::MAX } else { 0 })?
        }
        Getone => {
            // The lowest active fiber takes the branch; the others fall through.
            let one = if exec == 0 { 0 } else { 1u64 << exec.trailing_zeros() };
            branch(wave, one)?
        }
        Getlast => {
            // XML ir3-cat0.xml `getlast`: jump for the fibers of the first cluster of 8 with any
            // active fiber, except the last active fiber of that cluster.
            let mut taken = 0;
            if exec != 0 {
                let cl = exec.trailing_zeros() / 8;
                let m = exec & (0xffu64 << (cl * 8));
                let last = 1u64 << (63 - m.leading_zeros());
                taken = m & !last;
            }
            branch(wave, taken)?
        }
        op => return Err(unsupported(pc, op.name())),
    }
    Ok(false)
}
