//! Packing: which programs let small work-groups share a wave ([`groups_per_wave`]) and the
//! registers a program can touch ([`reg_span`]), which a packed wave preloads and clears.

use super::*;

/// How many work-groups of `fibers` fibers [`Interp::run_groups`] runs side by side in one wave.
///
/// Lanes of a wave are independent unless the program makes them meet: a barrier, shared memory
/// (`ldl`/`stl`/`ldlw`/`stlw`, local atomics), a cross-lane operation (`shfl`, `movmsk`, the
/// wave-uniform branches `bany`/`ball`/`getone`/`getlast`) or a wave or fiber id (`getwid`,
/// `getfiberid`, `getspid`). A program with none of them computes the same in every lane
/// whether its neighbours belong to its own work-group or another, so small work-groups
/// (tinygrad's NOLOCALS kernels have one fiber each) share a wave, up to 64 fibers; the local
/// and work-group id registers are preloaded per lane. Results, statistics (each work-group's
/// wave-instructions are counted as its own wave would run them) and the step limit are those
/// of running the work-groups one by one; only which of several failing work-groups' errors is
/// reported can differ (the first to fail in the packed wave, its lowest lane). Returns 1 when
/// work-groups do not share waves.
pub fn groups_per_wave(prog: &Shader, fibers: u64) -> u64 {
    if fibers == 0 || fibers > (W / 2) as u64 {
        return 1;
    }
    let meets = prog.instrs.iter().any(|i| match &i.body {
        Body::Cat0(c) => matches!(c.op, Cat0Op::Bany | Cat0Op::Ball | Cat0Op::Getone | Cat0Op::Getlast),
        Body::Cat1(c) => c.op == Cat1Op::Movmsk,
        Body::Cat6(c) => matches!(
            c,
            Cat6::Ld { space: Space::Local | Space::LocalW, .. }
                | Cat6::St { space: Space::Local | Space::LocalW, .. }
                | Cat6::AtomicL { .. }
                | Cat6::Shfl { .. }
                | Cat6::GetId { .. }
        ),
        Body::Cat7(c) => c.op == Cat7Op::Bar,
        _ => false,
    });
    if meets { 1 } else { W as u64 / fibers }
}

/// A conservative bound on the full and half regids a program reads or writes: the highest
/// register operand plus the instruction's extent ((rptN), vector size, address pairs), or
/// everything when it uses relative addressing; the preloaded id registers included.
pub(super) fn reg_span(prog: &Shader) -> (u8, u8) {
    let mut hi = 0usize;
    let mut bump = |r: Reg, extent: usize| hi = hi.max(r.0 as usize + extent);
    let m = prog.meta;
    for r in [m.wgid, m.lid] {
        if r != 0xfc {
            bump(Reg(r), 3);
        }
    }
    let rel = |o: &Operand| matches!(o.src, Src::RelReg(_));
    let mut all = false;
    for i in &prog.instrs {
        let e = i.flags.repeat as usize + 1;
        let mut op = |o: &Operand| {
            if let Src::Reg { reg, .. } = o.src {
                bump(reg, e);
            }
        };
        match &i.body {
            Body::Cat1(c) => {
                all |= rel(&c.src) || matches!(c.dst, Dst::Rel(_));
                op(&c.src);
                if let Dst::Reg(r) = c.dst {
                    bump(r, e.max(4));
                }
                for r in c.extra {
                    bump(r, 4);
                }
            }
            Body::Cat2(c) => {
                all |= rel(&c.src1) || c.src2.as_ref().is_some_and(rel);
                op(&c.src1);
                if let Some(s) = &c.src2 {
                    op(s);
                }
                bump(c.dst, e);
            }
            Body::Cat3(c) => {
                all |= c.srcs.iter().any(rel);
                c.srcs.iter().for_each(&mut op);
                bump(c.dst, e);
            }
            Body::Cat4(c) => {
                all |= rel(&c.src);
                op(&c.src);
                bump(c.dst, e);
            }
            Body::Cat5(c) => {
                bump(c.dst, 4);
                bump(c.src1, 3);
                bump(c.src2, 1);
            }
            Body::Cat6(c) => {
                let (a, b, n) = match *c {
                    Cat6::Ldg { dst, addr, size, .. } | Cat6::Ld { dst, addr, size, .. } => (dst, addr, size as usize),
                    Cat6::LdgA { dst, addr, index, size, .. } => {
                        bump(index, 1);
                        (dst, addr, size as usize)
                    }
                    Cat6::Stg { addr, src, size, .. } | Cat6::St { addr, src, size, .. } => (src, addr, size as usize),
                    Cat6::StgA { addr, index, src, size, .. } => {
                        bump(index, 1);
                        (src, addr, size as usize)
                    }
                    Cat6::AtomicL { dst, src1, src2, .. } | Cat6::AtomicG { dst, src1, src2, .. } => {
                        for s in [src1, src2] {
                            if let Cat6Src::Reg(r) = s {
                                bump(r, 2);
                            }
                        }
                        (dst, dst, 1)
                    }
                    Cat6::Shfl { dst, src1, src2, .. } => {
                        if let Cat6Src::Reg(r) = src2 {
                            bump(r, 1);
                        }
                        (dst, src1, 1)
                    }
                    Cat6::GetId { dst, .. } => (dst, dst, 1),
                    Cat6::Ibo { val, coord, type_size, d, .. } => {
                        bump(coord, d as usize);
                        (val, val, type_size as usize)
                    }
                };
                bump(a, n.max(1));
                bump(b, 2);
            }
            _ => {}
        }
    }
    if all || hi > 255 {
        return (255, 255);
    }
    // Half regid h lives in full regid h/2 when merged; the separate half file is indexed by
    // the same 8-bit numbers, so one bound serves both.
    (hi as u8, hi as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(words: &[u64]) -> Shader {
        let meta = Meta {
            fregs: 1,
            hregs: 0,
            wgid: 0xfc,
            lid: 0,
            shmem: 0,
            pvtmem: 0,
            merged_regs: false,
            const_demotion: false,
        };
        let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        Shader::new(&image, meta).unwrap()
    }

    #[test]
    fn reg_span_covers_operands_repeats_and_vectors() {
        // lid preload r0.x..r0.z → 3; `(rpt3)add.f r4.x, (r)r3.x, (1.0)` writes r4.x..r4.w (regid 16..19).
        assert_eq!(reg_span(&prog(&[0x5010_0b10_2802_000c, 0x0300_0000_0000_0000])), (20, 20));
        // `ldl.u32 r9.y, l[r2.x], 4` writes regids 37..40.
        assert_eq!(reg_span(&prog(&[0xc046_0025_0482_0001])).0, 41);
        // cat1 mov with a relative source (`mov.u32u32 r0.x, r<a0.x>`): everything.
        assert_eq!(reg_span(&prog(&[0x200c_c000_0000_0800])), (255, 255));
    }
}
