//! Single instructions against values worked out by hand from the RDNA3 guide's pseudo-code
//! (ch. 16), or against Rust's own arithmetic where that is the definition (integer wrapping,
//! libm's frexp): scalar ops on SGPRs the dispatch sets, vector ops on lanes loaded from memory,
//! with EXEC switching lanes off to show them untouched.

// Lanes are indexed across several result registers at once.
#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use hcq_rdna3::exec::{FaultKind, LoadError, Program};

const IN: u64 = 0x1_0000;
const OUT: u64 = 0x8_0000;
/// The SGPR pair that holds the output address in `salu`.
const OUT_S: u32 = 100;

/// Run `body` in a wave32 whose SGPRs s0.. are `s` (and s[100:101] the output address), then
/// return SGPRs `read` (and SCC last).
fn salu(s: &[u32], body: &[Vec<u32>], read: &[u32]) -> Vec<u32> {
    let mut user = vec![0u32; OUT_S as usize + 2];
    user[..s.len()].copy_from_slice(s);
    user[OUT_S as usize] = OUT as u32;
    let mut parts = body.to_vec();
    parts.push(vop1("v_mov_b32_e32", 1, int(0)));
    for (k, &r) in read.iter().enumerate() {
        parts.push(vop1("v_mov_b32_e32", 2, r));
        parts.push(global_off("global_store_b32", 0, 1, 2, OUT_S, 4 * k as i32));
    }
    parts.push(sop2("s_cselect_b32", 0, int(1), int(0)));
    parts.push(vop1("v_mov_b32_e32", 2, 0));
    parts.push(global_off("global_store_b32", 0, 1, 2, OUT_S, 4 * read.len() as i32));
    parts.push(sopp("s_endpgm", 0));
    let p = Program::load(&prog(&parts), 0, false).unwrap();
    let mut d = dispatch(1, false, &user);
    d.user_sgpr_count = 0;
    let mut mem = Buf(OUT, vec![0; 4 * (read.len() + 1)]);
    p.run(&d, [1, 1, 1], &mut mem).unwrap();
    mem.words()
}

/// Run `body` in a wave32 whose v1..=vN are `inputs` (per lane), EXEC `exec`; return v`out`..
/// per lane (all 32, those EXEC disables holding what they held: their input or 0xdead).
fn valu(inputs: &[[u32; 32]], exec: u32, body: &[Vec<u32>], outs: &[u32]) -> Vec<[u32; 32]> {
    let mut mem = Buf(IN, vec![0; 128 * inputs.len()]);
    for (k, v) in inputs.iter().enumerate() {
        for (l, x) in v.iter().enumerate() {
            mem.set_word(32 * k + l, *x);
        }
    }
    let mut out = Buf(OUT, vec![0; 128 * outs.len()]);
    let mut parts = vec![vop2("v_lshlrev_b32_e32", 40, int(2), V)];
    for k in 0..inputs.len() {
        parts.push(global_off("global_load_b32", 1 + k as u32, 40, 0, 0, 128 * k as i32));
    }
    for &o in outs {
        if o as usize > inputs.len() {
            parts.push(vop1("v_mov_b32_e32", o, LIT));
            parts.push(vec![0xdead]);
        }
    }
    parts.push(sop1("s_mov_b32", EXEC, LIT));
    parts.push(vec![exec]);
    parts.extend_from_slice(body);
    parts.push(sop1("s_mov_b32", EXEC, 193)); // −1: every lane
    for (k, &o) in outs.iter().enumerate() {
        parts.push(global_off("global_store_b32", 0, 40, o, 2, 128 * k as i32));
    }
    parts.push(sopp("s_endpgm", 0));
    let p = Program::load(&prog(&parts), 0, false).unwrap_or_else(|e| panic!("{e}"));
    let user = [IN as u32, 0, OUT as u32, 0];
    let mut both = Buf(IN, vec![0; (OUT - IN) as usize + out.1.len()]);
    both.1[..mem.1.len()].copy_from_slice(&mem.1);
    p.run(&dispatch(32, false, &user), [1, 1, 1], &mut both).unwrap();
    out.1.copy_from_slice(&both.1[(OUT - IN) as usize..]);
    (0..outs.len()).map(|k| core::array::from_fn(|l| out.word(32 * k + l))).collect()
}

fn lanes(f: impl Fn(usize) -> u32) -> [u32; 32] {
    core::array::from_fn(f)
}

#[test]
fn s_pack_hl_takes_the_high_half_of_s0_and_the_low_half_of_s1() {
    let r = salu(&[0x1234_5678, 0x9abc_def0], &[sop2("s_pack_hl_b32_b16", 2, 0, 1)], &[2]);
    assert_eq!(r[0], 0xdef0_1234);
}

#[test]
fn s_setkill_s_sethalt_s_wait_event_run_when_they_ask_for_nothing_and_are_refused_otherwise() {
    let r = salu(&[5], &[sopp("s_setkill", 0), sopp("s_sethalt", 0), sopp("s_wait_event", 1)], &[0]);
    assert_eq!(r[0], 5);
    for (name, imm, why) in [
        ("s_setkill", 1, "killing the wave"),
        ("s_sethalt", 1, "halting the wave"),
        ("s_wait_event", 0, "export_ready"),
        ("s_wait_event", 2, "export_ready"),
    ] {
        match Program::load(&prog(&[sopp(name, imm), sopp("s_endpgm", 0)]), 0, false) {
            Err(LoadError::Unsupported { name: n, what, .. }) => {
                assert_eq!(n, name);
                assert!(what.contains(why), "{name} {imm}: {what}");
            }
            r => panic!("{name} {imm}: {r:?}"),
        }
    }
}

#[test]
fn v_nop_does_nothing() {
    let a = lanes(|l| l as u32);
    let r = valu(&[a], u32::MAX, &[vop1("v_nop", 0, 0)], &[1]);
    assert_eq!(r[0], a);
}

#[test]
fn maxmin_and_minmax_clamp_in_either_order() {
    let f = |x: f32| x.to_bits();
    // (a, b, c): maxmin = min(max(a, b), c), minmax = max(min(a, b), c).
    let cases: [(f32, f32, f32); 6] =
        [(1.0, 2.0, 1.5), (-3.0, -4.0, 0.0), (5.0, 1.0, 2.0), (0.0, -0.0, 0.0), (f32::NAN, 2.0, 3.0), (1.0, 3.0, -1.0)];
    let a = lanes(|l| f(cases[l % 6].0));
    let b = lanes(|l| f(cases[l % 6].1));
    let c = lanes(|l| f(cases[l % 6].2));
    let exec = 0x7fff_ffff;
    let r = valu(
        &[a, b, c],
        exec,
        &[vop3("v_maxmin_f32", 4, V + 1, V + 2, V + 3), vop3("v_minmax_f32", 5, V + 1, V + 2, V + 3)],
        &[4, 5],
    );
    let want_maxmin = [1.5, -3.0, 2.0, 0.0, 2.0, -1.0];
    let want_minmax = [1.5, 0.0, 2.0, 0.0, 3.0, 1.0];
    for l in 0..31 {
        assert_eq!(r[0][l], f(want_maxmin[l % 6]), "maxmin lane {l}");
        assert_eq!(r[1][l], f(want_minmax[l % 6]), "minmax lane {l}");
    }
    // +0 > −0: max(0, −0) = +0, then min(+0, +0).
    assert_eq!(r[0][3], 0);
    // The lane EXEC disables keeps its 0xdead.
    assert_eq!((r[0][31], r[1][31]), (0xdead, 0xdead));
    // Integers and halves.
    let a = lanes(|l| [5, 0xffff_fffb, 100, 0x3c00][l % 4]);
    let b = lanes(|l| [9, 3, 7, 0x4000][l % 4]);
    let c = lanes(|l| [7, 0xffff_fff0, 50, 0x3e00][l % 4]);
    let r = valu(
        &[a, b, c],
        u32::MAX,
        &[
            vop3("v_maxmin_u32", 4, V + 1, V + 2, V + 3),
            vop3("v_minmax_u32", 5, V + 1, V + 2, V + 3),
            vop3("v_maxmin_i32", 6, V + 1, V + 2, V + 3),
            vop3("v_minmax_i32", 7, V + 1, V + 2, V + 3),
            vop3("v_maxmin_f16", 8, V + 1, V + 2, V + 3),
            vop3("v_minmax_f16", 9, V + 1, V + 2, V + 3),
        ],
        &[4, 5, 6, 7, 8, 9],
    );
    assert_eq!(&r[0][..3], &[7, 0xffff_fff0, 50]); // min(max(a,b),c) unsigned
    assert_eq!(&r[1][..3], &[7, 0xffff_fff0, 50]); // max(min(a,b),c) unsigned
    assert_eq!(&r[2][..3], &[7, 0xffff_fff0, 50]); // signed: max(−5, 3) = 3, min(3, −16) = −16
    assert_eq!(&r[3][..3], &[7, 0xffff_fffb, 50]); // signed: min(−5, 3) = −5, max(−5, −16) = −5
    // f16 (1.0, 2.0, 1.5): maxmin 1.5, minmax 1.5; the high half of the destination kept (0xdead
    // was written to all of it).
    assert_eq!(r[4][3], 0x3e00);
    assert_eq!(r[5][3], 0x3e00);
}

#[test]
fn add_and_sub_nc_i16_wrap() {
    let a = lanes(|l| [0x7fff, 0x8000, 0xffff, 5][l % 4] | 0xabcd_0000);
    let b = lanes(|l| [1, 1, 1, 7][l % 4]);
    let r = valu(
        &[a, b],
        u32::MAX,
        &[vop3("v_add_nc_i16", 3, V + 1, V + 2, 0), vop3("v_sub_nc_i16", 4, V + 1, V + 2, 0)],
        &[3, 4],
    );
    // The 16-bit result in the low half, the high half as the destination held it (0xdead's).
    assert_eq!(&r[0][..4], &[0x8000, 0x8001, 0x0000, 12]);
    assert_eq!(&r[1][..4], &[0x7ffe, 0x7fff, 0xfffe, 0xfffe]);
    // Clamp (saturation) is refused, as on every integer result.
    let mut w = vop3("v_add_nc_i16", 3, V + 1, V + 2, 0);
    w[0] |= 1 << 15;
    assert!(matches!(Program::load(&prog(&[w, sopp("s_endpgm", 0)]), 0, false), Err(LoadError::Unsupported { .. })));
}

#[test]
fn frexp_of_an_f64_splits_it_as_libm_does() {
    let vals: [f64; 8] = [1.0, -3.5, 1e300, 4.9e-324, 0.0, f64::INFINITY, f64::NAN, 0.75];
    let lo = lanes(|l| vals[l % 8].to_bits() as u32);
    let hi = lanes(|l| (vals[l % 8].to_bits() >> 32) as u32);
    let r = valu(
        &[lo, hi],
        u32::MAX,
        &[vop1("v_frexp_mant_f64_e32", 4, V + 1), vop1("v_frexp_exp_i32_f64_e32", 6, V + 1)],
        &[4, 5, 6],
    );
    for l in 0..8 {
        let x = vals[l];
        let m = f64::from_bits(u64::from(r[0][l]) | u64::from(r[1][l]) << 32);
        let e = r[2][l] as i32;
        if x.is_nan() {
            assert!(m.is_nan() && e == 0);
        } else if x.is_infinite() {
            assert_eq!((m, e), (x, 0));
        } else {
            assert_eq!((m, e), libm::frexp(x), "{x}");
        }
    }
    assert_eq!(r[2][3], (-1073i32) as u32); // the smallest subnormal: 0.5 · 2^-1073
}

#[test]
fn ds_d16_forms_move_half_a_register() {
    // Each lane: v1 = its LDS byte address (lane · 4), v2 = data.
    let addr = lanes(|l| 4 * l as u32);
    let data = lanes(|l| 0xa1b2_c3d4 ^ (l as u32) << 8);
    let body = [
        ds("ds_store_b32", 0, 1, 2),
        ds("ds_store_b16_d16_hi", 0, 1, 2), // the high half of data into bytes 0–1
        ds("ds_load_b32", 3, 1, 0),
        ds("ds_store_b8_d16_hi", 0, 1, 2), // byte 2 of data into byte 0
        ds("ds_load_b32", 4, 1, 0),
        vop1("v_mov_b32_e32", 5, LIT),
        vec![0x1111_2222],
        ds("ds_load_u16_d16_hi", 5, 1, 0), // the low half kept
        vop1("v_mov_b32_e32", 6, LIT),
        vec![0x1111_2222],
        ds("ds_load_i8_d16", 6, 1, 0), // sign-extended byte into the low half, the high kept
        vop1("v_mov_b32_e32", 7, LIT),
        vec![0x1111_2222],
        ds("ds_load_u8_d16_hi", 7, 1, 0),
    ];
    let r = valu(&[addr, data], 0xffff_fffe, &body, &[3, 4, 5, 6, 7]);
    for l in 1..32 {
        let d = data[l];
        let m = (d & 0xffff_0000) | d >> 16;
        assert_eq!(r[0][l], m, "lane {l}");
        let b = (m & 0xffff_ff00) | (d >> 16) & 0xff;
        assert_eq!(r[1][l], b, "lane {l}");
        assert_eq!(r[2][l], (b & 0xffff) << 16 | 0x2222, "lane {l}");
        assert_eq!(r[3][l], 0x1111_0000 | (((b & 0xff) as u8 as i8 as i16) as u16 as u32), "lane {l}");
        assert_eq!(r[4][l], (b & 0xff) << 16 | 0x2222, "lane {l}");
    }
    // Lane 0 (off) wrote nothing and loaded nothing.
    assert_eq!(r[0][0], 0xdead);
}

#[test]
fn an_lds_access_past_the_allocation_faults_naming_the_lane() {
    let addr = lanes(|l| if l == 9 { 1024 } else { 0 });
    let code = prog(&[
        vop2("v_lshlrev_b32_e32", 40, int(2), V),
        global("global_load_b32", 1, 40, 0, 0),
        ds("ds_store_b16_d16_hi", 0, 1, 1),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut mem = Buf(IN, addr.iter().flat_map(|x| x.to_le_bytes()).collect());
    let f = p.run(&dispatch(32, false, &[IN as u32, 0]), [1, 1, 1], &mut mem).unwrap_err();
    assert_eq!((f.lane, f.addr, f.kind), (Some(9), 1024, FaultKind::Lds { write: true, size: 1024 }));
}

fn f(x: f32) -> u32 {
    x.to_bits()
}

#[test]
fn float_to_int_conversions_round_as_named() {
    let xs = [1.5f32, -1.5, 2.5, -0.5, 0.499_999_97, f32::NAN, 3e9, -3e9];
    let a = lanes(|l| f(xs[l % 8]));
    let r = valu(
        &[a],
        u32::MAX,
        &[vop1("v_cvt_nearest_i32_f32_e32", 2, V + 1), vop1("v_cvt_floor_i32_f32_e32", 3, V + 1)],
        &[2, 3],
    );
    // floor(x + 0.5) with the sum rounded in f32: 0.49999997 + 0.5 is 1.0.
    let nearest = [2, -1, 3, 0, 1, 0, i32::MAX, i32::MIN];
    let floor = [1, -2, 2, -1, 0, 0, i32::MAX, i32::MIN];
    for l in 0..8 {
        assert_eq!((r[0][l] as i32, r[1][l] as i32), (nearest[l], floor[l]), "{}", xs[l]);
    }
    // The i4 table: S0[3:0] signed × 1/16.
    let r = valu(&[lanes(|l| l as u32 | 0xabc0)], u32::MAX, &[vop1("v_cvt_off_f32_i4_e32", 2, V + 1)], &[2]);
    for l in 0..16 {
        let n = if l < 8 { l as f32 } else { l as f32 - 16.0 };
        assert_eq!(f32::from_bits(r[0][l]), n * 0.0625, "nibble {l}");
    }
}

#[test]
fn packed_conversions_saturate_round_or_truncate_as_the_guide_says() {
    let (x, y, z) = (f(1.0 + 2f32.powi(-11) + 2f32.powi(-13)), f(70000.0), 0xaabb_ccdd);
    let a = lanes(|l| [x, f(-40000.0), f(-1.0), 70000, 0xfffe_ee90, f(3.7)][l % 6]);
    let b = lanes(|l| [y, f(1.9), y, 5, 40000, 2][l % 6]);
    let c = lanes(|_| z);
    let body = [
        vop3("v_cvt_pk_rtz_f16_f32_e64", 4, V + 1, V + 2, 0),
        vop3("v_cvt_pk_i16_f32", 5, V + 1, V + 2, 0),
        vop3("v_cvt_pk_u16_f32", 6, V + 1, V + 2, 0),
        vop3("v_cvt_pk_u16_u32", 7, V + 1, V + 2, 0),
        vop3("v_cvt_pk_i16_i32", 8, V + 1, V + 2, 0),
        vop3("v_cvt_pk_u8_f32", 9, V + 1, V + 2, V + 3),
    ];
    let r = valu(&[a, b, c], u32::MAX, &body, &[4, 5, 6, 7, 8, 9]);
    // 1 + 2^-11 + 2^-13 toward zero is 1.0 (nearest would be 1 + 2^-10); 70000 toward zero is
    // the largest finite f16.
    assert_eq!(r[0][0], 0x7bff_3c00);
    assert_eq!(r[1][1], 0x0001_8000); // (−40000 → −32768, 1.9 → 1)
    assert_eq!(r[2][2], 0xffff_0000); // (−1 → 0, 70000 → 65535)
    assert_eq!(r[3][3], 0x0005_ffff);
    assert_eq!(r[4][4], 0x7fff_8000); // (−70000 → −32768, 40000 → 32767)
    assert_eq!(r[5][5], 0xaa03_ccdd); // 3.7 → 3 into byte 2
    // Normalized: ±1 → ±32767 / 65535, 0.5 → 16384 / 32768 (nearest even), NaN → 0.
    let h = lanes(|l| [0x3c00u32, 0xbc00, 0x3800, 0x7e00][l % 4]);
    let fl = lanes(|l| f([1.0f32, -1.0, 0.5, f32::NAN][l % 4]));
    let body = [
        vop3("v_cvt_norm_i16_f16_e64", 4, V + 1, 0, 0),
        vop3("v_cvt_norm_u16_f16_e64", 5, V + 1, 0, 0),
        vop3("v_cvt_pk_norm_i16_f32", 6, V + 2, V + 2, 0),
        vop3("v_cvt_pk_norm_u16_f32", 7, V + 2, V + 2, 0),
        vop3("v_cvt_pk_norm_i16_f16", 8, V + 1, V + 1, 0),
    ];
    let r = valu(&[h, fl], u32::MAX, &body, &[4, 5, 6, 7, 8]);
    assert_eq!(&r[0][..4].iter().map(|x| x & 0xffff).collect::<Vec<_>>(), &[32767, 0x8001, 16384, 0]);
    assert_eq!(&r[1][..4].iter().map(|x| x & 0xffff).collect::<Vec<_>>(), &[65535, 0, 32768, 0]);
    assert_eq!(&r[2][..4], &[0x7fff_7fff, 0x8001_8001, 0x4000_4000, 0]);
    assert_eq!(&r[3][..4], &[0xffff_ffff, 0, 0x8000_8000, 0]);
    assert_eq!(&r[4][..4], &r[2][..4]);
    // v_sat_pk_u8_i16: 0x0100 → 255, 0xff80 (−128) → 0, into the low half.
    let r = valu(&[lanes(|_| 0x0100_ff80)], u32::MAX, &[vop1("v_sat_pk_u8_i16_e32", 2, V + 1)], &[2]);
    assert_eq!(r[0][0] & 0xffff, 0xff00);
}

#[test]
fn sixteen_bit_logic_and_moves_write_their_half() {
    let a = lanes(|l| 0x1234_f0f0 ^ l as u32);
    let b = lanes(|_| 0x5678_ff00);
    let body = [
        vop3("v_not_b16_e64", 3, V + 1, 0, 0),
        vop3("v_and_b16", 4, V + 1, V + 2, 0),
        vop3("v_or_b16", 5, V + 1, V + 2, 0),
        vop3("v_xor_b16", 6, V + 1, V + 2, 0),
        // v_mov_b16_e32 v7.h, v1.h: the field's bit 7 names the high half.
        vop1("v_mov_b16_e32", 7 | 0x80, V + (1 | 0x80)),
        vop1("v_mov_b16_e32", 8, V + 2),
    ];
    let r = valu(&[a, b], u32::MAX, &body, &[3, 4, 5, 6, 7, 8]);
    for l in 0..4 {
        let x = a[l] & 0xffff;
        assert_eq!(r[0][l], !x & 0xffff);
        assert_eq!(r[1][l], x & 0xff00);
        assert_eq!(r[2][l], x | 0xff00);
        assert_eq!(r[3][l], x ^ 0xff00);
        assert_eq!(r[4][l], 0x1234_dead);
        assert_eq!(r[5][l], 0xff00);
    }
}

#[test]
fn sums_of_absolute_differences_and_lerp() {
    let a = lanes(|_| 0x0102_0304);
    let b = lanes(|l| [0x0403_0201, 0x0400_0201, 0x0304_0506][l % 3]);
    let c = lanes(|_| 10);
    let body = [
        vop3("v_sad_u8", 4, V + 1, V + 2, V + 3),
        vop3("v_sad_hi_u8", 5, V + 1, V + 2, V + 3),
        vop3("v_sad_u16", 6, V + 1, V + 2, V + 3),
        vop3("v_sad_u32", 7, V + 1, V + 2, V + 3),
        vop3("v_msad_u8", 8, V + 1, V + 2, V + 3),
        vop3("v_lerp_u8", 9, V + 1, V + 2, V + 3),
    ];
    let r = valu(&[a, b, c], u32::MAX, &body, &[4, 5, 6, 7, 8, 9]);
    assert_eq!(r[0][0], 8 + 10);
    assert_eq!(r[1][0], (8 << 16) + 10);
    assert_eq!(r[2][0], (0x0403 - 0x0102) + (0x0304 - 0x0201) + 10);
    assert_eq!(r[3][0], 0x0403_0201 - 0x0102_0304 + 10);
    assert_eq!(r[4][1], 3 + 1 + 3 + 10); // the zero byte of b counts nothing
    // lerp: (a + b + c's low bit) / 2 per byte, c = 10: bits 0, 8, 16, 24 of 10 are 0.
    assert_eq!(r[5][2], 0x0203_0405);
    // The four windows of a 64-bit S0, accumulated into 16-bit halves.
    let lo = lanes(|_| 0x0102_0304);
    let r = valu(
        &[lo, lanes(|_| 0), lanes(|_| 0x0102_0304)],
        u32::MAX,
        &[vop3("v_qsad_pk_u16_u8", 4, V + 1, V + 3, 128)],
        &[4, 5],
    );
    assert_eq!((r[0][0], r[1][0]), (4 << 16, 9 << 16 | 7));
    // v_mqsad_u32_u8: the same windows, masked (S1 has no zero byte), onto four dwords of S2.
    let r = valu(
        &[lo, lanes(|_| 0), lanes(|_| 0x0102_0304), lanes(|_| 1), lanes(|_| 2), lanes(|_| 3), lanes(|_| 4)],
        u32::MAX,
        &[vop3("v_mqsad_u32_u8", 8, V + 1, V + 3, V + 4)],
        &[8, 9, 10, 11],
    );
    assert_eq!((r[0][0], r[1][0], r[2][0], r[3][0]), (1, 4 + 2, 7 + 3, 9 + 4));
}

#[test]
fn dots_fmac_and_the_rest_of_the_vop3_math() {
    let ph = |x: u32, y: u32| x | y << 16;
    let a = lanes(|_| ph(0x3c00, 0x4000)); // (1, 2)
    let b = lanes(|_| ph(0x4200, 0x4400)); // (3, 4)
    let c = lanes(|_| 0x3800); // 0.5
    let body = [
        vop3("v_dot2_f16_f16", 4, V + 1, V + 2, V + 3),
        // v_pk_fmac_f16 v5, v1, v2 with v5 = (1, 2) first: (1·3 + 1, 2·4 + 2).
        vop1("v_mov_b32_e32", 5, V + 1),
        vop2("v_pk_fmac_f16", 5, V + 1, V + 2),
        vop3("v_mad_u32_u16", 6, V + 1, V + 2, int(7)),
        vop3("v_med3_f16", 7, V + 1, V + 2, V + 3),
    ];
    let r = valu(&[a, b, c], u32::MAX, &body, &[4, 5, 6, 7]);
    assert_eq!(r[0][0] & 0xffff, 0x49c0); // 1·3 + 2·4 + 0.5 = 11.5
    assert_eq!(r[1][0], ph(0x4400, 0x4900)); // (4, 10)
    assert_eq!(r[2][0], 0x3c00 * 0x4200 + 7);
    assert_eq!(r[3][0] & 0xffff, 0x3c00); // med3(1, 3, 0.5)
    // Cube maps, lighting: (x, y, z) = (1, 2, −3).
    let (x, y, z) = (lanes(|_| f(1.0)), lanes(|_| f(2.0)), lanes(|_| f(-3.0)));
    let body = [
        vop3("v_cubeid_f32", 4, V + 1, V + 2, V + 3),
        vop3("v_cubesc_f32", 5, V + 1, V + 2, V + 3),
        vop3("v_cubetc_f32", 6, V + 1, V + 2, V + 3),
        vop3("v_cubema_f32", 7, V + 1, V + 2, V + 3),
        vop3("v_mullit_f32", 8, V + 2, V + 2, V + 1),
        vop3("v_mullit_f32", 9, V + 2, V + 2, V + 3),
        vop3("v_add_nc_i32", 10, V + 1, LIT, 0),
    ];
    let mut body = body.to_vec();
    body.push(vec![0x7fff_ffff]);
    let r = valu(&[x, y, z], u32::MAX, &body, &[4, 5, 6, 7, 8, 9, 10]);
    let got: Vec<f32> = r[..6].iter().map(|v| f32::from_bits(v[0])).collect();
    assert_eq!(got, [5.0, -1.0, -2.0, -6.0, 4.0, -f32::MAX]);
    assert_eq!(r[6][0], 0x3f80_0000u32.wrapping_add(0x7fff_ffff));
}

#[test]
fn trig_preop_gives_53_bits_of_two_over_pi_at_a_time() {
    // 2/π's first 128 fractional bits.
    const HEX: u128 = 0xA2F9836E4E441529FC2757D1F534DDC0;
    let seg = |k: u32| -> f64 {
        // Bits 53k+1 ..= 53k+53, as an integer, × 2^-(53k + 53).
        let m = (HEX >> (128 - 53 * (k + 1))) & ((1 << 53) - 1);
        m as f64 * 2f64.powi(-53 * (k as i32 + 1))
    };
    let one = 1.0f64.to_bits();
    let (lo, hi) = (lanes(|_| one as u32), lanes(|_| (one >> 32) as u32));
    let k = lanes(|l| l as u32 % 2);
    let r = valu(&[lo, hi, k], u32::MAX, &[vop3("v_trig_preop_f64", 4, V + 1, V + 3, 0)], &[4, 5]);
    for l in 0..2 {
        let got = f64::from_bits(u64::from(r[0][l]) | u64::from(r[1][l]) << 32);
        assert_eq!(got, seg(l as u32), "segment {l}");
    }
    // The first segment is 2/π toward zero: one below the nearest f64.
    assert_eq!(seg(0).to_bits(), std::f64::consts::FRAC_2_PI.to_bits() - 1);
}

#[test]
fn lane_ops_count_permute_and_index_by_m0() {
    let id = lanes(|l| 100 + l as u32);
    let body = [
        vop3("v_mbcnt_lo_u32_b32", 4, 193, int(0), 0),
        vop3("v_mbcnt_hi_u32_b32", 5, 193, V + 4, 0),
        // The guide's rotation within each row of 16.
        sop1("s_mov_b32", 0, LIT),
        vec![0x8765_4321],
        sop1("s_mov_b32", 1, LIT),
        vec![0x0fed_cba9],
        vop3("v_permlane16_b32", 6, V + 1, 0, 1),
        // Identity selects across rows: each lane gets its mirror in the other row.
        sop1("s_mov_b32", 0, LIT),
        vec![0x7654_3210],
        sop1("s_mov_b32", 1, LIT),
        vec![0xfedc_ba98],
        vop3("v_permlanex16_b32", 7, V + 1, 0, 1),
        // M0-relative: v8 = v(1 + 2) = v3, then v(9 + 2) = v11 = v1; a swap of v12, v13.
        sop1("s_mov_b32", M0, int(2)),
        vop1("v_mov_b32_e32", 3, int(33)),
        vop1("v_movrels_b32_e32", 8, V + 1),
        vop1("v_movreld_b32_e32", 9, V + 1),
        vop1("v_mov_b32_e32", 12, int(1)),
        vop1("v_mov_b32_e32", 13, int(2)),
        vop1("v_swap_b32", 13, V + 12),
    ];
    let r = valu(&[id], 0x7fff_ffff, &body, &[4, 5, 6, 7, 8, 11, 12, 13]);
    for l in 0..31usize {
        assert_eq!(r[0][l], l as u32, "mbcnt_lo lane {l}");
        assert_eq!(r[1][l], l as u32, "mbcnt_hi (wave32 adds nothing) lane {l}");
        let rot = (l & !15) | ((l + 1) & 15);
        // Lane 30 reads lane 31, which is off: not written (no FI, no BOUND_CTRL).
        assert_eq!(r[2][l], if rot == 31 { 0xdead } else { 100 + rot as u32 }, "permlane16 lane {l}");
        let x = l ^ 16;
        assert_eq!(r[3][l], if x == 31 { 0xdead } else { 100 + x as u32 }, "permlanex16 lane {l}");
        assert_eq!((r[4][l], r[5][l]), (33, 100 + l as u32));
        assert_eq!((r[6][l], r[7][l]), (2, 1));
    }
    // permlane64 only in wave64; a non-VGPR source refused.
    let e = Program::load(&prog(&[vop1("v_permlane64_b32", 1, V + 2), sopp("s_endpgm", 0)]), 0, false).unwrap_err();
    assert!(e.to_string().contains("wave32"), "{e}");
    let e = Program::load(&prog(&[vop1("v_swap_b32", 1, 2), sopp("s_endpgm", 0)]), 0, false).unwrap_err();
    assert!(e.to_string().contains("VGPR"), "{e}");
}

#[test]
fn vop3p_dot_products() {
    let a = lanes(|_| 0x4000_3c00); // (1, 2) f16; bytes 00 3c 00 40
    let b = lanes(|_| 0x4400_4200); // (3, 4)
    let c = lanes(|_| f(0.5));
    let bytes = lanes(|_| 0xff02_0304); // (4, 3, 2, −1 or 255)
    let ones = lanes(|_| 0x0101_0101);
    let k = lanes(|_| 10);
    let mut iu8 = vop3p("v_dot4_i32_iu8", 7, V + 4, V + 5, V + 6, 0, 7);
    iu8[1] |= 1 << 29; // neg_lo[0]: S0 signed
    let body = [
        vop3p("v_dot2_f32_f16", 7 + 1, V + 1, V + 2, V + 3, 0, 7),
        iu8,
        vop3p("v_dot4_u32_u8", 9, V + 4, V + 5, V + 6, 0, 7),
        vop3p("v_dot8_u32_u4", 10, V + 5, V + 5, V + 6, 0, 7),
    ];
    let r = valu(&[a, b, c, bytes, ones, k], u32::MAX, &body, &[8, 7, 9, 10]);
    assert_eq!(f32::from_bits(r[0][0]), 11.5);
    assert_eq!(r[1][0], 10 + 4 + 3 + 2 - 1);
    assert_eq!(r[2][0], 10 + 4 + 3 + 2 + 255);
    assert_eq!(r[3][0], 10 + 4); // nibbles of 0x01010101 squared: four 1s
}

#[test]
fn sixty_four_bit_scalar_bit_ops() {
    let s = [1, 0, 0, 0x10, 0xffff_ffff, 0xffff_fff0, 0xffff_ffff, 0xffff_ffff, 0b101, 0x000f_0100, 0xff, 0xff];
    let body = [
        sop1("s_brev_b64", 20, 0),             // s[20:21] = brev(1)
        sop1("s_ctz_i32_b64", 22, 2),          // s[2:3] = 0x10_00000000: 36
        sop1("s_clz_i32_u64", 23, 2),          // 27
        sop1("s_cls_i32_i64", 24, 4),          // 0xfffffff0_ffffffff: 27
        sop1("s_bitset0_b64", 6, int(40)),     // s[6:7] bit 40 cleared
        sop1("s_bitreplicate_b64_b32", 26, 8), // 0b101 → 0b110011
        sop1("s_quadmask_b32", 28, 9),         // nibbles 2 and 4 set: 0b10100
        sop1("s_wqm_b32", 29, 9),              // 0x000f0f00
        sop1("s_bcnt1_i32_b64", 30, 10),       // both dwords' bits: 16
        sop2("s_bfm_b64", 32, int(40), int(8)),
        sop1("s_mov_b32", M0, int(3)),
        sop1("s_movrels_b32", 34, 1), // s34 = s(1 + 3) = s4
        sop1("s_movreld_b32", 35, 8), // s(35 + 3) = s38 = s8
    ];
    let r = salu(&s, &body, &[20, 21, 22, 23, 24, 6, 7, 26, 27, 28, 29, 30, 32, 33, 34, 38]);
    assert_eq!(
        &r[..16],
        &[
            0,
            0x8000_0000,
            36,
            27,
            27,
            0xffff_ffff,
            0xffff_feff,
            0x33,
            0,
            0x14,
            0x000f_0f00,
            16,
            0xffff_ff00,
            0xffff,
            0xffff_ffff,
            0b101
        ]
    );
}

#[test]
fn wrexec_writes_exec_and_its_destination() {
    let body = [
        sop1("s_mov_b32", EXEC, LIT),
        vec![0x0000_ffff],
        sop1("s_and_not1_wrexec_b32", 8, 0), // EXEC = s0 & ~EXEC
        sop1("s_mov_b32", 9, EXEC),
        sop1("s_mov_b32", EXEC, LIT),
        vec![0x0000_00ff],
        sop1("s_and_not0_wrexec_b32", 10, 0), // EXEC = ~s0 & EXEC
        sop1("s_mov_b32", 11, EXEC),
        sop1("s_mov_b32", EXEC, int(1)),
    ];
    let r = salu(&[0xffff_0001], &body, &[8, 9, 10, 11]);
    assert_eq!(&r[..4], &[0xffff_0000, 0xffff_0000, 0xfe, 0xfe]);
}

#[test]
fn getpc_swappc_setpc_and_call_jump_by_address() {
    let body = [
        sop1("s_getpc_b64", 20, 0),         // 0: s[20:21] = 4
        sop2("s_add_u32", 20, 20, int(16)), // 4: 20
        sop1("s_swappc_b64", 22, 20),       // 8: to 20; s[22:23] = 12
        sop1("s_mov_b32", 24, int(7)),      // 12
        sopp("s_branch", 2),                // 16: to 28
        sop1("s_mov_b32", 25, int(9)),      // 20: the function
        sop1("s_setpc_b64", 0, 22),         // 24: back to 12
        sopk("s_call_b64", 26, 1),          // 28: to 36; s[26:27] = 32
        sopp("s_branch", 2),                // 32: to 44
        sop1("s_mov_b32", 28, int(5)),      // 36
        sop1("s_setpc_b64", 0, 26),         // 40: back to 32
    ];
    let r = salu(&[], &body, &[20, 22, 24, 25, 26, 28]);
    assert_eq!(&r[..6], &[20, 12, 7, 9, 32, 5]);
    // A computed jump outside the code faults; with the code's address set, getpc reads it.
    let code = prog(&[
        sop1("s_mov_b32", 0, int(2)),
        sop1("s_mov_b32", 1, int(0)),
        sop1("s_setpc_b64", 0, 0),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let f = p.run(&dispatch(1, false, &[]), [1, 1, 1], &mut Buf(0, vec![])).unwrap_err();
    assert_eq!((f.kind, f.addr), (FaultKind::PcOutOfCode, 2));
    let code = prog(&[
        sop1("s_getpc_b64", 0, 0),
        vop1("v_mov_b32_e32", 1, 1),
        vop1("v_mov_b32_e32", 2, int(0)),
        global("global_store_b32", 0, 2, 1, 2),
        sopp("s_endpgm", 0),
    ]);
    let mut p = Program::load(&code, 0, false).unwrap();
    p.set_code_address(0x7_0000_1000);
    let mut mem = Buf(OUT, vec![0; 4]);
    p.run(&dispatch(1, false, &[0, 0, OUT as u32, 0]), [1, 1, 1], &mut mem).unwrap();
    assert_eq!(mem.word(0), 7);
}

#[test]
fn s_buffer_load_reads_inside_num_records_and_zero_past_it() {
    let code = prog(&[
        smem("s_buffer_load_b128", 8, 4, 0),
        vop1("v_mov_b32_e32", 2, int(0)),
        vop1("v_mov_b32_e32", 1, 8),
        global_off("global_store_b32", 0, 2, 1, 0, 0),
        vop1("v_mov_b32_e32", 1, 9),
        global_off("global_store_b32", 0, 2, 1, 0, 4),
        vop1("v_mov_b32_e32", 1, 10),
        global_off("global_store_b32", 0, 2, 1, 0, 8),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut mem = Buf(OUT, vec![0xee; 64]);
    for k in 0..4 {
        mem.set_word(4 + k, 100 + k as u32);
    }
    // V#: base OUT + 16 (47:0), NUM_RECORDS 10 bytes: dwords 0 and 1 inside, 2 and 3 past.
    let user = [OUT as u32, 0, 0, 0, OUT as u32 + 16, 0x0004_0000, 10, 0];
    p.run(&dispatch(1, false, &user), [1, 1, 1], &mut mem).unwrap();
    assert_eq!(&mem.words()[..3], &[100, 101, 0]);
}

#[test]
fn mode_ops_run_for_the_interpreters_mode_and_are_refused_otherwise() {
    let r = salu(&[3], &[sopp("s_round_mode", 0), sopp("s_denorm_mode", 0xf), sopp("s_wakeup", 0)], &[0]);
    assert_eq!(r[0], 3);
    for (name, imm) in [("s_round_mode", 1), ("s_denorm_mode", 0xc)] {
        assert!(Program::load(&prog(&[sopp(name, imm), sopp("s_endpgm", 0)]), 0, false).is_err(), "{name} {imm}");
    }
}
