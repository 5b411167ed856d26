//! cat4: the special function unit.

use super::*;

pub(super) fn cat4(cx: &mut Ctx, wave: &mut Wave, c: &Cat4, fl: &Flags, pc: usize, exec: u64) -> Res<()> {
    use Cat4Op::*;
    let mut a = [0u32; W];
    for k in 0..=fl.repeat {
        operand(cx, wave, &c.src, k, pc, exec, Kind::Float, false, &mut a)?;
        let f: fn(f64) -> f64 = match c.op {
            Rcp => |x| 1.0 / x,
            Rsq | Hrsq => |x| 1.0 / libm::sqrt(x),
            Log2 | Hlog2 => libm::log2,
            Exp2 | Hexp2 => libm::exp2,
            Sin => libm::sin,
            Cos => libm::cos,
            Sqrt => libm::sqrt,
        };
        map1(&mut a[..active_len(exec)], |x| ftz(f(f32::from_bits(x) as f64) as f32).to_bits());
        store(wave, c.dst.offset(k), c.dst_half, true, fl.sat, &mut a, exec);
    }
    Ok(())
}
