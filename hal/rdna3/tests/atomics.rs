//! Every LDS, GLOBAL and FLAT atomic of the tables against a model written here from the RDNA3
//! guide's pseudo-code (ch. 16.13, 16.15): lanes in lane order, several on one address, EXEC
//! leaving some out, the values returned where the op returns them (`_rtn`, GLC) and memory
//! after. Then the LDS's lane ops (swizzle against the guide's own examples, permute,
//! bpermute, append/consume, addtid, the two-address exchange, condxchg) and the faults.

mod common;

use common::*;
use hcq_rdna3::exec::{FaultKind, LoadError, Program};
use hcq_rdna3::tables;

const IN: u64 = 0x1_0000;
const OUT: u64 = 0x2_0000;
const GLOBAL: u64 = 0x3_0000;

/// The guide's pseudo-code of `op` (the mnemonic's op word) on `tmp` (memory), DATA (`src`) and
/// DATA2 / cmp (`d2`); `ty` the type suffix. Written as the pseudo-code reads.
#[allow(clippy::implicit_saturating_sub)]
fn model(op: &str, ty: &str, tmp: u64, src: u64, d2: u64) -> u64 {
    let wide = ty.ends_with("64");
    let m = if wide { u64::MAX } else { 0xffff_ffff };
    let s = |x: u64| if wide { x as i64 } else { x as u32 as i32 as i64 };
    let fl = |x: u64| if wide { f64::from_bits(x) } else { f32::from_bits(x as u32) as f64 };
    let r = match op {
        "add" if ty == "f32" => (f32::from_bits(tmp as u32) + f32::from_bits(src as u32)).to_bits() as u64,
        "add" => tmp.wrapping_add(src),
        "sub" => tmp.wrapping_sub(src),
        "rsub" => src.wrapping_sub(tmp),
        "inc" => {
            if tmp >= src {
                0
            } else {
                tmp + 1
            }
        }
        "dec" => {
            if tmp == 0 || tmp > src {
                src
            } else {
                tmp - 1
            }
        }
        "min" | "max" if ty.starts_with('f') => {
            let less = fl(src) < fl(tmp);
            let more = fl(src) > fl(tmp);
            if (op == "min" && less) || (op == "max" && more) { src } else { tmp }
        }
        "min" if ty.starts_with('i') => {
            if s(src) < s(tmp) {
                src
            } else {
                tmp
            }
        }
        "max" if ty.starts_with('i') => {
            if s(src) >= s(tmp) {
                src
            } else {
                tmp
            }
        }
        "min" => src.min(tmp),
        "max" => src.max(tmp),
        "and" => tmp & src,
        "or" => tmp | src,
        "xor" => tmp ^ src,
        "mskor" => (tmp & !src) | d2,
        "storexchg" | "swap" => src,
        "cmpstore" | "cmpswap" if ty.starts_with('f') => {
            if fl(tmp) == fl(d2) {
                src
            } else {
                tmp
            }
        }
        "cmpstore" | "cmpswap" => {
            if tmp == d2 {
                src
            } else {
                tmp
            }
        }
        "wrap" => {
            if tmp >= src {
                tmp - src
            } else {
                tmp.wrapping_add(d2)
            }
        }
        "csub" => {
            if tmp < src {
                0
            } else {
                tmp - src
            }
        }
        _ => panic!("no model for {op}_{ty}"),
    };
    r & m
}

/// An atomic mnemonic's (op word, type, returns): `ds_min_rtn_i64` → ("min", "i64", true).
fn split(rest: &str) -> Option<(&str, &str, bool)> {
    let (body, ty) = rest.rsplit_once('_')?;
    if !matches!(ty, "u32" | "i32" | "b32" | "f32" | "u64" | "i64" | "b64" | "f64") {
        return None;
    }
    let (op, rtn) = match body.strip_suffix("_rtn") {
        Some(b) => (b, true),
        None => (body, false),
    };
    let known = [
        "add",
        "sub",
        "rsub",
        "inc",
        "dec",
        "min",
        "max",
        "and",
        "or",
        "xor",
        "mskor",
        "storexchg",
        "swap",
        "cmpstore",
        "cmpswap",
        "wrap",
        "csub",
    ];
    known.contains(&op).then_some((op, ty, rtn))
}

/// Memory words whose values meet: small numbers (inc/dec's bounds), floats, signs, equal ones.
fn values(r: &mut Rng, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| match r.below(6) {
            0 => r.below(8) as u32,
            1 => (r.below(21) as f32 - 10.0).to_bits(),
            2 => 0x8000_0000 | r.below(4) as u32,
            3 => 0xffff_ffff - r.below(3) as u32,
            _ => r.next() as u32,
        })
        .collect()
}

/// Lane inputs: v1 address (a byte offset: lane % 5 · 8), v2:v3 DATA, v4:v5 DATA2, v11 the
/// LDS/memory word of the lane's index; returned: v6:v7 (0xdead where not written), then the
/// 32 words after.
fn run(op: &[u32], lds: bool, exec: u32, inputs: &[Vec<u32>; 6]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut mem = Buf(IN, vec![0; (GLOBAL - IN) as usize + 128]);
    for (k, v) in inputs.iter().enumerate() {
        for (l, x) in v.iter().enumerate() {
            mem.set_word(32 * k + l, *x);
        }
    }
    let v = |r: u32| V + r;
    let mut parts = vec![vop2("v_lshlrev_b32_e32", 40, int(2), v(0))];
    for (k, r) in [1, 2, 3, 4, 5, 11].into_iter().enumerate() {
        parts.push(global_off("global_load_b32", r, 40, 0, 0, 128 * k as i32));
    }
    parts.push(vop1("v_mov_b32_e32", 6, LIT));
    parts.push(vec![0xdead]);
    parts.push(vop1("v_mov_b32_e32", 7, LIT));
    parts.push(vec![0xdead]);
    if lds {
        parts.push(ds("ds_store_b32", 0, 40, 11));
    } else {
        parts.push(global("global_store_b32", 0, 40, 11, 4));
    }
    parts.push(sop1("s_mov_b32", EXEC, LIT));
    parts.push(vec![exec]);
    parts.push(op.to_vec());
    parts.push(sop1("s_mov_b32", EXEC, 193));
    parts.push(global_off("global_store_b32", 0, 40, 6, 2, 0));
    parts.push(global_off("global_store_b32", 0, 40, 7, 2, 128));
    if lds {
        parts.push(ds("ds_load_b32", 12, 40, 0));
        parts.push(global_off("global_store_b32", 0, 40, 12, 2, 256));
    }
    parts.push(sopp("s_endpgm", 0));
    let p = Program::load(&prog(&parts), 0, false).unwrap_or_else(|e| panic!("{e}"));
    let user = [IN as u32, 0, OUT as u32, 0, GLOBAL as u32, 0];
    p.run(&dispatch(32, false, &user), [1, 1, 1], &mut mem).unwrap();
    let at = |a: u64, k: usize| mem.word(((a - IN) / 4) as usize + k);
    let lo = (0..32).map(|l| at(OUT, l)).collect();
    let hi = (0..32).map(|l| at(OUT + 128, l)).collect();
    let after = (0..32).map(|l| if lds { at(OUT + 256, l) } else { at(GLOBAL, l) }).collect();
    (lo, hi, after)
}

/// Every atomic of `table` (with `prefix`), against the model.
fn every_atomic(table: &[tables::Op], prefix: &str, lds: bool) -> usize {
    let mut r = Rng(0x5eed_0a70 + lds as u64);
    let mut tested = 0;
    for o in table {
        let Some(rest) = o.name.strip_prefix(prefix) else { continue };
        let Some((op, ty, rtn_name)) = split(rest) else { continue };
        for trial in 0..6 {
            let wide = ty.ends_with("64");
            let addr: Vec<u32> = (0..32).map(|l| 8 * (l % 5) as u32).collect();
            let inputs = [
                addr,
                values(&mut r, 32),
                values(&mut r, 32),
                values(&mut r, 32),
                values(&mut r, 32),
                values(&mut r, 32),
            ];
            let exec = if trial % 2 == 0 { u32::MAX } else { r.next() as u32 };
            let glc = !lds && trial % 3 != 0;
            let code = if lds {
                ds2(o.name, 6, 1, 2, 4, 0, 0)
            } else {
                // global: s[4:5] + v1; GLC (bit 14) on some trials.
                let mut g = global(o.name, 6, 1, 2, 4);
                g[0] |= u32::from(glc) << 14;
                g
            };
            let (lo, hi, after) = run(&code, lds, exec, &inputs);
            // The model: memory words, lanes in order.
            let mut m: Vec<u32> = inputs[5].clone();
            let rtn = if lds { rtn_name } else { glc };
            for l in 0..32 {
                let want_lo = |x: u32| if rtn && exec >> l & 1 == 1 { x } else { 0xdead };
                if exec >> l & 1 == 0 {
                    assert_eq!((lo[l], hi[l]), (0xdead, 0xdead), "{}: lane {l} is off", o.name);
                    continue;
                }
                let w = (inputs[0][l] / 4) as usize;
                let get = |m: &[u32]| if wide { u64::from(m[w]) | u64::from(m[w + 1]) << 32 } else { u64::from(m[w]) };
                let tmp = get(&m);
                let src = if wide {
                    u64::from(inputs[1][l]) | u64::from(inputs[2][l]) << 32
                } else {
                    u64::from(inputs[1][l])
                };
                // DATA2: LDS's data1 register; global cmpswap's register after DATA.
                let d2 = if lds {
                    if wide { u64::from(inputs[3][l]) | u64::from(inputs[4][l]) << 32 } else { u64::from(inputs[3][l]) }
                } else if wide {
                    u64::from(inputs[3][l]) | u64::from(inputs[4][l]) << 32
                } else {
                    u64::from(inputs[2][l])
                };
                let new = model(op, ty, tmp, src, d2);
                m[w] = new as u32;
                if wide {
                    m[w + 1] = (new >> 32) as u32;
                }
                assert_eq!(lo[l], want_lo(tmp as u32), "{} trial {trial}: lane {l} returned", o.name);
                if wide && rtn {
                    assert_eq!(hi[l], (tmp >> 32) as u32, "{} trial {trial}: lane {l} returned (high)", o.name);
                }
            }
            assert_eq!(after, m, "{} trial {trial}: memory after", o.name);
        }
        tested += 1;
    }
    tested
}

#[test]
fn every_lds_atomic_is_the_guides_pseudo_code_in_lane_order() {
    let n = every_atomic(tables::DS, "ds_", true);
    assert!(n >= 70, "{n} LDS atomics");
}

#[test]
fn every_global_atomic_is_the_guides_pseudo_code_in_lane_order() {
    let n = every_atomic(tables::GLOBAL, "global_atomic_", false);
    assert!(n >= 31, "{n} global atomics");
}

#[test]
fn flat_atomics_reach_global_memory_through_their_64_bit_address() {
    // v[8:9] = GLOBAL + lane % 3 · 4; flat_atomic_add_u32 v6, v[8:9], v2 glc; memory after.
    let v = |r: u32| V + r;
    let code = prog(&[
        vop2("v_and_b32_e32", 8, int(3), v(0)),
        vop2("v_min_u32_e32", 8, int(2), v(8)),
        vop2("v_lshlrev_b32_e32", 8, int(2), v(8)),
        vop2("v_add_nc_u32_e32", 8, LIT, v(8)),
        vec![GLOBAL as u32],
        vop1("v_mov_b32_e32", 9, int(0)),
        vop1("v_mov_b32_e32", 2, int(5)),
        {
            let mut f = flat("flat_atomic_add_u32", 6, 8, 2, 4);
            f[0] |= 1 << 14;
            f
        },
        vop2("v_lshlrev_b32_e32", 40, int(2), v(0)),
        global("global_store_b32", 0, 40, 6, 0),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut mem = Buf(IN, vec![0; (GLOBAL - IN) as usize + 64]);
    p.run(&dispatch(32, false, &[IN as u32, 0]), [1, 1, 1], &mut mem).unwrap();
    let g = |k: usize| mem.word(((GLOBAL - IN) / 4) as usize + k);
    // Lanes 0,4,8,… add 5 at GLOBAL + 4 (offset 4), lanes 1,5,… at +8, lanes 2,3,6,7,… at +12.
    assert_eq!((g(0), g(1), g(2), g(3)), (0, 8 * 5, 8 * 5, 16 * 5));
    // Each lane got the value before its own add, in lane order.
    let rets: Vec<u32> = (0..32).map(|l| mem.word(l)).collect();
    assert_eq!(&rets[..8], &[0, 0, 0, 5, 5, 5, 10, 15]);
}

/// Run `body` with v1 = lane · 4, v2 = 100 + lane, EXEC `exec`; return v3 of every lane (0xdead
/// where not written) and the LDS's first 64 words.
fn lds_lanes(exec: u32, body: &[Vec<u32>]) -> (Vec<u32>, Vec<u32>) {
    let v = |r: u32| V + r;
    let mut parts = vec![
        vop2("v_lshlrev_b32_e32", 1, int(2), v(0)),
        vop2("v_add_nc_u32_e32", 2, LIT, v(0)),
        vec![100],
        vop1("v_mov_b32_e32", 3, LIT),
        vec![0xdead],
        sop1("s_mov_b32", EXEC, LIT),
        vec![exec],
    ];
    parts.extend_from_slice(body);
    parts.push(sop1("s_mov_b32", EXEC, 193));
    parts.push(global("global_store_b32", 0, 1, 3, 0));
    parts.push(ds("ds_load_b32", 4, 1, 0));
    parts.push(global_off("global_store_b32", 0, 1, 4, 0, 128));
    parts.push(ds2("ds_load_b32", 4, 1, 0, 0, 128, 0));
    parts.push(global_off("global_store_b32", 0, 1, 4, 0, 256));
    parts.push(sopp("s_endpgm", 0));
    let p = Program::load(&prog(&parts), 0, false).unwrap_or_else(|e| panic!("{e}"));
    let mut mem = Buf(OUT, vec![0; 384]);
    p.run(&dispatch(32, false, &[OUT as u32, 0]), [1, 1, 1], &mut mem).unwrap();
    let w = mem.words();
    (w[..32].to_vec(), w[32..].to_vec())
}

#[test]
fn ds_swizzle_gives_the_guides_examples() {
    // The guide's examples number the lanes' inputs 1..=0x20: v2 = 100 + lane here.
    let ex = |s: &[u32]| -> Vec<u32> { s.iter().map(|x| 99 + x).collect() };
    let fft00 = [
        1, 0x11, 9, 0x19, 5, 0x15, 0xd, 0x1d, 3, 0x13, 0xb, 0x1b, 7, 0x17, 0xf, 0x1f, 2, 0x12, 0xa, 0x1a, 6, 0x16, 0xe,
        0x1e, 4, 0x14, 0xc, 0x1c, 8, 0x18, 0x10, 0x20,
    ];
    let fft10 = [
        1, 9, 5, 0xd, 3, 0xb, 7, 0xf, 2, 0xa, 6, 0xe, 4, 0xc, 8, 0x10, 0x11, 0x19, 0x15, 0x1d, 0x13, 0x1b, 0x17, 0x1f,
        0x12, 0x1a, 0x16, 0x1e, 0x14, 0x1c, 0x18, 0x20,
    ];
    let rotl1: Vec<u32> = (0..32).map(|i| (i + 1) % 32 + 1).collect();
    let rotr1: Vec<u32> = (0..32).map(|i| (i + 31) % 32 + 1).collect();
    let rotl1m1 = [
        1, 4, 3, 6, 5, 8, 7, 0xa, 9, 0xc, 0xb, 0xe, 0xd, 0x10, 0xf, 0x12, 0x11, 0x14, 0x13, 0x16, 0x15, 0x18, 0x17,
        0x1a, 0x19, 0x1c, 0x1b, 0x1e, 0x1d, 0x20, 0x1f, 2,
    ];
    let rotr1m1 = [
        0x1f, 2, 1, 4, 3, 6, 5, 8, 7, 0xa, 9, 0xc, 0xb, 0xe, 0xd, 0x10, 0xf, 0x12, 0x11, 0x14, 0x13, 0x16, 0x15, 0x18,
        0x17, 0x1a, 0x19, 0x1c, 0x1b, 0x1e, 0x1d, 0x20,
    ];
    let cases: [(u32, Vec<u32>); 7] = [
        (0xe000, ex(&fft00)),
        (0xe010, ex(&fft10)),
        (0xe01f, (100..132).collect()),
        (0xc000 | 1 << 5, ex(&rotl1)),
        (0xc000 | 1 << 10 | 1 << 5, ex(&rotr1)),
        (0xc000 | 1 << 5 | 1, ex(&rotl1m1)),
        (0xc000 | 1 << 10 | 1 << 5 | 1, ex(&rotr1m1)),
    ];
    for (off, want) in cases {
        let (got, _) = lds_lanes(u32::MAX, &[ds2("ds_swizzle_b32", 3, 0, 2, 0, off & 0xff, off >> 8)]);
        assert_eq!(got, want, "offset {off:#x}");
    }
    // Groups of 4 (offset[15]): lane k of each group takes lane offset[2k+1:2k] = 3, 2, 1, 0.
    let off = 0x8000 | 0b00_01_10_11;
    let (got, _) = lds_lanes(u32::MAX, &[ds2("ds_swizzle_b32", 3, 0, 2, 0, off & 0xff, off >> 8)]);
    assert_eq!(got, (0..32).map(|i| 100 + (i & !3) + 3 - (i & 3)).collect::<Vec<_>>());
    // Bit masks: SWAPX16 (xor 0x10, and 0x1f); a lane EXEC disables gives 0, and is not written.
    let off = 0x10 << 10 | 0x1f;
    let (got, _) = lds_lanes(0xffff_fffe, &[ds2("ds_swizzle_b32", 3, 0, 2, 0, off & 0xff, off >> 8)]);
    let want: Vec<u32> = (0..32)
        .map(|i| {
            if i == 0 {
                0xdead
            } else if i == 16 {
                0
            } else {
                100 + (i ^ 16)
            }
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn ds_permute_sends_and_ds_bpermute_fetches() {
    // Addresses: lane i names lane 31 − i (× 4).
    let v = |r: u32| V + r;
    let code = |name: &str| {
        vec![vop2("v_sub_nc_u32_e32", 5, int(31), v(0)), vop2("v_lshlrev_b32_e32", 5, int(2), v(5)), ds(name, 3, 5, 2)]
    };
    let exec = 0xffff_fff7; // lane 3 off
    let (bp, _) = lds_lanes(exec, &code("ds_bpermute_b32"));
    let (fp, _) = lds_lanes(exec, &code("ds_permute_b32"));
    for i in 0..32usize {
        if i == 3 {
            assert_eq!((bp[i], fp[i]), (0xdead, 0xdead));
            continue;
        }
        let j = 31 - i;
        // Fetch from lane 31 − i (0 from the lane that is off); lane 28 fetches from lane 3.
        assert_eq!(bp[i], if j == 3 { 0 } else { 100 + j as u32 }, "bpermute lane {i}");
        // Sent by lane 31 − i (nothing from lane 3, so lane 28 gets 0).
        assert_eq!(fp[i], if j == 3 { 0 } else { 100 + j as u32 }, "permute lane {i}");
    }
}

#[test]
fn ds_append_counts_lanes_and_addtid_addresses_by_lane() {
    // M0 = 8: append at byte 8 + 4 (offset), twice; consume once with 3 lanes.
    let (got, lds) = lds_lanes(
        0x0000_00ff,
        &[sop1("s_mov_b32", M0, int(8)), ds2("ds_append", 3, 0, 0, 0, 4, 0), ds2("ds_append", 3, 0, 0, 0, 4, 0)],
    );
    assert_eq!(&got[..9], &[8, 8, 8, 8, 8, 8, 8, 8, 0xdead]);
    assert_eq!(lds[3], 16);
    // addtid: lane l stores at M0 + offset + 4·l.
    let (_, lds) =
        lds_lanes(u32::MAX, &[sop1("s_mov_b32", M0, int(16)), ds2("ds_store_addtid_b32", 0, 0, 2, 0, 16, 0)]);
    assert_eq!(&lds[8..40], &(100..132).collect::<Vec<u32>>()[..]);
}

#[test]
fn ds_storexchg_2addr_swaps_two_places_and_condxchg_writes_flagged_halves() {
    // Each lane swaps v2 into dword lane (offset0 0) and 0x77 into dword lane + 32 (offset1 32,
    // ×4 bytes): v[3:4] get the old pair.
    let v = |r: u32| V + r;
    let (got, lds) = lds_lanes(
        u32::MAX,
        &[
            ds("ds_store_b32", 0, 1, 1), // lds[lane] = lane · 4 first
            vop1("v_mov_b32_e32", 6, LIT),
            vec![0x77],
            ds2("ds_storexchg_2addr_rtn_b32", 3, 1, 2, 6, 0, 32),
            vop1("v_mov_b32_e32", 3, v(4)), // v3 = the old value of the second place (0)
        ],
    );
    assert_eq!(got, vec![0; 32]);
    assert_eq!(&lds[..32], &(100..132).collect::<Vec<u32>>()[..]);
    assert_eq!(&lds[32..], &[0x77; 32][..]);
    // condxchg32: lanes 0–7 (addresses lane · 8 + 3, the low 3 bits dropped), a low half
    // flagged (bit 31) on even lanes, a high half never: the flagged halves written without
    // the flag, the old pair returned.
    let (got, lds) = lds_lanes(
        u32::MAX,
        &[
            vop2("v_lshlrev_b32_e32", 10, int(3), v(0)),
            ds("ds_store_b32", 0, 1, 2), // lds[lane] = 100 + lane: the old values
            vop2("v_and_b32_e32", 6, int(1), v(0)),
            vop2("v_lshlrev_b32_e32", 6, int(31), v(6)),
            vop2("v_xor_b32_e32", 6, LIT, v(6)),
            vec![0x8000_0000 | 0x44],
            vop1("v_mov_b32_e32", 7, int(0x33)),
            sop1("s_mov_b32", EXEC, LIT),
            vec![0xff],
            ds2("ds_condxchg32_rtn_b64", 8, 10, 6, 0, 3, 0),
            vop1("v_mov_b32_e32", 3, v(9)),
        ],
    );
    for l in 0..8usize {
        // The high dword returned: lds[2l + 1] before.
        assert_eq!(got[l], 100 + 2 * l as u32 + 1, "lane {l}");
        let (lo, hi) = (lds[2 * l], lds[2 * l + 1]);
        assert_eq!(lo, if l % 2 == 0 { 0x44 } else { 100 + 2 * l as u32 }, "lane {l} low");
        assert_eq!(hi, 100 + 2 * l as u32 + 1, "lane {l} high");
    }
}

#[test]
fn lds_atomics_fault_outside_the_allocation_and_gds_is_refused() {
    let v = |r: u32| V + r;
    let code = prog(&[
        vop2("v_lshlrev_b32_e32", 1, int(5), v(0)), // lane · 32: lane 31 at 992, lane 32 past
        vop2("v_add_nc_u32_e32", 1, LIT, v(1)),
        vec![40],
        ds("ds_add_u32", 0, 1, 1),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let f = p.run(&dispatch(32, false, &[]), [1, 1, 1], &mut Buf(0, vec![])).unwrap_err();
    // 40 + 31·32 = 1032 > 1024 − 4: lane 31 is the first past (lane 30: 1000).
    assert_eq!((f.lane, f.addr, f.kind), (Some(31), 1032, FaultKind::Lds { write: true, size: 1024 }));
    let mut g = ds("ds_add_u32", 0, 1, 1);
    g[0] |= 1 << 17;
    match Program::load(&prog(&[g, sopp("s_endpgm", 0)]), 0, false) {
        Err(LoadError::Unsupported { what, .. }) => assert!(what.contains("GDS"), "{what}"),
        r => panic!("{r:?}"),
    }
}

#[test]
fn a_global_atomic_outside_memory_faults_naming_the_lane_and_address() {
    let v = |r: u32| V + r;
    let code = prog(&[
        vop2("v_lshlrev_b32_e32", 1, int(4), v(0)),
        global("global_atomic_add_u32", 0, 1, 1, 0),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut mem = Buf(GLOBAL, vec![0; 64]);
    let f = p.run(&dispatch(32, false, &[GLOBAL as u32, 0]), [1, 1, 1], &mut mem).unwrap_err();
    assert_eq!((f.lane, f.addr, f.kind), (Some(4), GLOBAL + 64, FaultKind::Memory { write: true, bytes: 4 }));
    // The lanes before it added.
    let w = mem.words();
    assert_eq!([w[0], w[4], w[8], w[12]], [0, 16, 32, 48]);
}

#[test]
fn flat_addresses_in_the_apertures_reach_the_lds_and_the_lanes_scratch() {
    // s[10:11] = src_shared_base, s[12:13] = src_private_base (their 64 bits), s14 = the shared
    // base read as 32 bits.
    let v = |r: u32| V + r;
    let code = prog(&[
        sop1("s_mov_b64", 10, 235),
        sop1("s_mov_b64", 12, 237),
        sop1("s_mov_b32", 14, 235),
        vop2("v_lshlrev_b32_e32", 1, int(2), v(0)),
        vop2("v_add_nc_u32_e32", 2, LIT, v(0)),
        vec![100],
        // LDS through the aperture: v[8:9] = shared base + lane · 4.
        vop1("v_mov_b32_e32", 8, v(1)),
        vop1("v_mov_b32_e32", 9, 11),
        flat("flat_store_b32", 0, 8, 2, 0),
        flat("flat_atomic_add_u32", 0, 8, 2, 0), // lds[lane] = 2 · (100 + lane)
        ds("ds_load_b32", 3, 1, 0),
        // Scratch: the lane's private offset 4.
        vop1("v_mov_b32_e32", 8, int(4)),
        vop1("v_mov_b32_e32", 9, 13),
        flat("flat_store_b32", 0, 8, 2, 0),
        vec![0x37 << 26 | op(tables::SCRATCH, "scratch_load_b32") << 18 | 1 << 16 | 4, 4 << 24 | NULL << 16],
        // Out: v3, v4, and s[10:14] from lane 0.
        global("global_store_b32", 0, 1, 3, 0),
        global_off("global_store_b32", 0, 1, 4, 0, 128),
        vop1("v_mov_b32_e32", 5, 10),
        vop1("v_mov_b32_e32", 6, 11),
        vop1("v_mov_b32_e32", 7, 12),
        vop1("v_mov_b32_e32", 8, 13),
        vop1("v_mov_b32_e32", 9, 14),
        global_off("global_store_b32", 0, 1, 5, 0, 256),
        global_off("global_store_b32", 0, 1, 6, 0, 384),
        global_off("global_store_b32", 0, 1, 7, 0, 512),
        global_off("global_store_b32", 0, 1, 8, 0, 640),
        global_off("global_store_b32", 0, 1, 9, 0, 768),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap_or_else(|e| panic!("{e}"));
    let mut d = dispatch(32, false, &[OUT as u32, 0]);
    d.private_bytes = 16;
    let mut mem = Buf(OUT, vec![0; 896]);
    p.run(&d, [1, 1, 1], &mut mem).unwrap();
    let w = mem.words();
    assert_eq!(&w[..32], &(0..32).map(|l| 2 * (100 + l)).collect::<Vec<u32>>()[..]);
    assert_eq!(&w[32..64], &(100..132).collect::<Vec<u32>>()[..]);
    let base = |k: usize| w[64 + 32 * k];
    assert_eq!((base(0), base(1), base(2), base(3), base(4)), (0, 0x1_0000, 0, 0x2_0000, 0));
    // Past the LDS through the aperture: an LDS fault at the LDS offset.
    let code = prog(&[
        sop1("s_mov_b64", 10, 235),
        vop1("v_mov_b32_e32", 8, LIT),
        vec![1024],
        vop1("v_mov_b32_e32", 9, 11),
        flat("flat_load_b32", 3, 8, 0, 0),
        sopp("s_endpgm", 0),
    ]);
    let f = Program::load(&code, 0, false)
        .unwrap()
        .run(&dispatch(32, false, &[]), [1, 1, 1], &mut Buf(0, vec![]))
        .unwrap_err();
    assert_eq!((f.lane, f.kind), (Some(0), FaultKind::Lds { write: false, size: 1024 }));
}
