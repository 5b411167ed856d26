//! Single instructions against values worked out by hand from the RDNA3 guide's pseudo-code
//! (ch. 16), or against Rust's own arithmetic where that is the definition (integer wrapping,
//! libm's frexp): scalar ops on SGPRs the dispatch sets, vector ops on lanes loaded from memory,
//! with EXEC switching lanes off to show them untouched.

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
