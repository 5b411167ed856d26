//! The interpreter on hand-assembled programs (opcodes looked up by mnemonic in the generated
//! tables, fields placed as the RDNA3 guide's ch. 15 lays them out): lane ids, EXEC masking and
//! branches, LDS shared across a work-group's waves at a barrier, and the errors — a refused
//! opcode at load, a store outside memory, a hang.

use hcq_rdna3::exec::{Dispatch, FaultKind, LoadError, Memory, Program};
use hcq_rdna3::tables;

fn op(t: &[tables::Op], name: &str) -> u32 {
    u32::from(t.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("{name}")).op)
}
fn sop2(name: &str, d: u32, a: u32, b: u32) -> Vec<u32> {
    vec![0b10 << 30 | op(tables::SOP2, name) << 23 | d << 16 | b << 8 | a]
}
fn sop1(name: &str, d: u32, a: u32) -> Vec<u32> {
    vec![0x17d << 23 | d << 16 | op(tables::SOP1, name) << 8 | a]
}
fn sopp(name: &str, imm: i16) -> Vec<u32> {
    vec![0x17f << 23 | op(tables::SOPP, name) << 16 | u32::from(imm as u16)]
}
fn vop1(name: &str, d: u32, a: u32) -> Vec<u32> {
    vec![0x3f << 25 | d << 17 | op(tables::VOP1, name) << 9 | a]
}
/// `vb` a VGPR (`V + n` or `n`).
fn vop2(name: &str, d: u32, a: u32, vb: u32) -> Vec<u32> {
    vec![op(tables::VOP2, name) << 25 | d << 17 | (vb & 0xff) << 9 | a]
}
fn vopc(name: &str, a: u32, vb: u32) -> Vec<u32> {
    vec![0x3e << 25 | op(tables::VOPC, name) << 17 | (vb & 0xff) << 9 | a]
}
fn vop3(name: &str, d: u32, a: u32, b: u32, c: u32) -> Vec<u32> {
    vec![0x35 << 26 | op(tables::VOP3, name) << 16 | d, c << 18 | b << 9 | a]
}
/// global_* with an SGPR-pair base: `vaddr` a 32-bit VGPR offset.
fn global(name: &str, vdst: u32, vaddr: u32, data: u32, saddr: u32) -> Vec<u32> {
    vec![0x37 << 26 | op(tables::GLOBAL, name) << 18 | 2 << 16, vdst << 24 | saddr << 16 | data << 8 | vaddr]
}
fn ds(name: &str, vdst: u32, addr: u32, data: u32) -> Vec<u32> {
    vec![0x36 << 26 | op(tables::DS, name) << 18, vdst << 24 | data << 8 | addr]
}
const V: u32 = 256;
const VCC: u32 = 106;
const EXEC: u32 = 126;

fn prog(parts: &[Vec<u32>]) -> Vec<u32> {
    parts.concat()
}

struct Buf(u64, Vec<u8>);
impl Memory for Buf {
    fn read(&mut self, a: u64, b: &mut [u8]) -> bool {
        match a.checked_sub(self.0).and_then(|o| self.1.get(o as usize..o as usize + b.len())) {
            Some(s) => {
                b.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, a: u64, d: &[u8]) -> bool {
        let n = d.len();
        match a.checked_sub(self.0).and_then(|o| self.1.get_mut(o as usize..o as usize + n)) {
            Some(s) => {
                s.copy_from_slice(d);
                true
            }
            None => false,
        }
    }
}

fn dispatch(local: u32, user: &[u32]) -> Dispatch<'_> {
    Dispatch {
        wave64: false,
        local: [local, 1, 1],
        user_sgprs: user,
        user_sgpr_count: user.len() as u32,
        tgid: [true, false, false],
        tg_size: false,
        wave_offset: false,
        lds_bytes: 1024,
        private_bytes: 0,
        max_steps: 10_000,
    }
}

fn words(m: &Buf) -> Vec<u32> {
    m.1.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// out[gid] = float(gid)², gid = group * 40 + lane id: v0's packed x, s2 the work-group id.
#[test]
fn each_lane_computes_with_its_own_id_and_a_partial_wave_masks_the_rest() {
    let code = prog(&[
        sop2("s_mul_i32", 3, 2, 128 + 40),        // s3 = group * 40
        vop2("v_add_nc_u32_e32", 1, 3, V),        // v1 = s3 + v0 (x: v0 & 0x3ff, y = z = 0)
        vop1("v_cvt_f32_u32_e32", 2, V + 1),      // v2 = float(v1)
        vop2("v_mul_f32_e32", 2, V + 2, 2),       // v2 *= v2
        vop2("v_lshlrev_b32_e32", 3, 128 + 2, 1), // v3 = v1 << 2
        global("global_store_b32", 0, 3, 2, 0),   // out[v3] = v2 (s[0:1] the buffer)
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let base = 0x1000_0000u64;
    let mut m = Buf(base, vec![0xff; 4 * 80]);
    let user = [base as u32, (base >> 32) as u32];
    let st = p.run(&dispatch(40, &user), [2, 1, 1], &mut m).unwrap();
    let got = words(&m);
    for (i, g) in got.iter().enumerate() {
        assert_eq!(f32::from_bits(*g), (i * i) as f32, "element {i}");
    }
    // 40 lanes are two waves (32 + 8) per group: 2 groups x 2 waves x 7 instructions.
    assert_eq!(st.insts, 28);
}

/// if (lane < 5) v1 = 7 else v1 = 9, as LLVM lowers it: v_cmp into VCC, s_and_saveexec,
/// s_cbranch_execz over the then-part, s_xor of EXEC for the else-part, EXEC restored.
#[test]
fn divergent_branches_mask_lanes_and_skip_empty_parts() {
    let code = prog(&[
        vopc("v_cmp_gt_u32_e32", 128 + 5, V), // vcc = 5 > v0
        sop1("s_and_saveexec_b32", 4, VCC),   // s4 = exec; exec &= vcc
        sopp("s_cbranch_execz", 1),           // skip the then-part when no lane takes it
        vop1("v_mov_b32_e32", 1, 128 + 7),
        sop2("s_xor_b32", EXEC, EXEC, 4), // exec = ~exec & s4: the else lanes
        vop1("v_mov_b32_e32", 1, 128 + 9),
        sop1("s_mov_b32", EXEC, 4), // restore
        vop2("v_lshlrev_b32_e32", 3, 128 + 2, V),
        global("global_store_b32", 0, 3, 1, 0),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut m = Buf(0x2000, vec![0; 4 * 32]);
    let user = [0x2000, 0];
    p.run(&dispatch(32, &user), [1, 1, 1], &mut m).unwrap();
    let got = words(&m);
    for (l, g) in got.iter().enumerate() {
        assert_eq!(*g, if l < 5 { 7 } else { 9 }, "lane {l}");
    }
}

/// Two waves write LDS, meet at s_barrier, and each lane reads what the other wave's mirror lane
/// wrote: the barrier orders the waves.
#[test]
fn a_barrier_makes_one_waves_lds_stores_visible_to_the_other() {
    let code = prog(&[
        vop2("v_lshlrev_b32_e32", 1, 128 + 2, V), // v1 = tid * 4
        vop2("v_add_nc_u32_e32", 2, 255, V),      // v2 = tid + 100 (a literal)
        vec![100],
        ds("ds_store_b32", 0, 1, 2), // lds[tid] = tid + 100
        sopp("s_barrier", 0),
        vop2("v_sub_nc_u32_e32", 3, 255, V + 1), // v3 = 252 - tid*4 (literal below)
        vec![252],
        ds("ds_load_b32", 4, 3, 0), // v4 = lds[63 - tid]
        global("global_store_b32", 0, 1, 4, 0),
        sopp("s_endpgm", 0),
    ]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut m = Buf(0x4000, vec![0; 4 * 64]);
    let user = [0x4000, 0];
    p.run(&dispatch(64, &user), [1, 1, 1], &mut m).unwrap();
    for (t, g) in words(&m).iter().enumerate() {
        assert_eq!(*g as usize, 63 - t + 100, "thread {t}");
    }
}

#[test]
fn an_opcode_the_interpreter_does_not_execute_is_refused_at_load_by_name() {
    let code = prog(&[ds("ds_bvh_stack_rtn_b32", 0, 1, 2), sopp("s_endpgm", 0)]);
    match Program::load(&code, 0, false) {
        Err(e @ LoadError::Unsupported { at: 0, name: "ds_bvh_stack_rtn_b32", .. }) => {
            assert!(e.to_string().contains("ds_bvh_stack_rtn_b32"), "{e}")
        }
        r => panic!("{r:?}"),
    }
    // A branch out of the code is refused too.
    let code = prog(&[sopp("s_branch", 5), sopp("s_endpgm", 0)]);
    assert!(matches!(Program::load(&code, 0, false), Err(LoadError::Branch { at: 0, .. })));
}

#[test]
fn a_store_outside_memory_faults_naming_the_lane_and_the_address() {
    let code =
        prog(&[vop2("v_lshlrev_b32_e32", 3, 128 + 2, V), global("global_store_b32", 0, 3, 0, 0), sopp("s_endpgm", 0)]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut m = Buf(0x2000, vec![0; 4 * 16]); // 16 dwords for 32 lanes
    let user = [0x2000, 0];
    let f = p.run(&dispatch(32, &user), [1, 1, 1], &mut m).unwrap_err();
    assert_eq!((f.lane, f.addr, f.at, f.inst), (Some(16), 0x2040, 4, "global_store_b32"));
    assert_eq!(f.kind, FaultKind::Memory { write: true, bytes: 4 });
    assert!(f.to_string().contains("lane 16") && f.to_string().contains("0x2040"), "{f}");
}

#[test]
fn a_wave_that_never_ends_is_a_hang_after_its_step_budget() {
    let code = prog(&[sopp("s_branch", -1), sopp("s_endpgm", 0)]);
    let p = Program::load(&code, 0, false).unwrap();
    let mut m = Buf(0, vec![]);
    let f = p.run(&dispatch(32, &[]), [1, 1, 1], &mut m).unwrap_err();
    assert_eq!(f.kind, FaultKind::Hang { steps: 10_000 });
    assert_eq!(f.inst, "s_branch");
}

/// Storage reused across work-groups (`Program::run_group_in`) starts each as fresh storage
/// does: registers the work-group before wrote (by a 32-bit op, a 16-bit op's per-lane path, a
/// load, a write to the LDS) read 0 in the next, whatever program runs next and in which wave
/// size.
#[test]
fn reused_wave_storage_starts_every_work_group_zeroed() {
    use hcq_rdna3::exec::Waves;
    let base = 0x3000u64;
    let user = [base as u32, (base >> 32) as u32];
    // Each writes high registers one way: v200 (32-bit lanes path), v201 (16-bit: the per-lane
    // path), v[202:205] (a load of four dwords; its address in v9), LDS dword 5.
    let dirty = [
        prog(&[vop1("v_mov_b32_e32", 200, 128 + 5), sopp("s_endpgm", 0)]),
        prog(&[vop3("v_add_nc_u16", 201, 128 + 6, 128 + 7, 0), sopp("s_endpgm", 0)]),
        prog(&[vop1("v_mov_b32_e32", 9, 128), global("global_load_b128", 202, 9, 0, 0), sopp("s_endpgm", 0)]),
        prog(&[
            vop1("v_mov_b32_e32", 10, 128 + 20),
            vop1("v_mov_b32_e32", 11, 128 + 33),
            ds("ds_store_b32", 0, 10, 11),
            sopp("s_endpgm", 0),
        ]),
    ];
    // Stores v200..v205 and LDS dword 5 of each lane at out[lane * 8 ..] (its eighth dword left
    // as it was).
    let clean = prog(&[
        vop2("v_lshlrev_b32_e32", 1, 128 + 5, V), // v1 = lane * 32
        global("global_store_b128", 0, 1, 200, 0),
        vop1("v_mov_b32_e32", 20, 128 + 20),
        ds("ds_load_b32", 206, 20, 0),
        vop2("v_add_nc_u32_e32", 1, 128 + 16, V + 1),
        global("global_store_b32", 0, 1, 204, 0),
        vop2("v_add_nc_u32_e32", 1, 128 + 4, V + 1),
        global("global_store_b32", 0, 1, 205, 0),
        vop2("v_add_nc_u32_e32", 1, 128 + 4, V + 1),
        global("global_store_b32", 0, 1, 206, 0),
        sopp("s_endpgm", 0),
    ]);
    let mut ws = Waves::default();
    for (wave64, dirty) in [false, true, false].into_iter().flat_map(|w| dirty.iter().map(move |d| (w, d))) {
        let lanes = if wave64 { 64 } else { 32 };
        let mut d = dispatch(lanes, &user);
        d.wave64 = wave64;
        let mut m = Buf(base, (0..32 * lanes).map(|k| k as u8 | 1).collect());
        Program::load(dirty, 0, wave64).unwrap().run_group_in(&d, [0, 0, 0], &mut m, &mut ws).unwrap();
        let mut out = Buf(base, vec![0xff; 32 * lanes as usize]);
        Program::load(&clean, 0, wave64).unwrap().run_group_in(&d, [0, 0, 0], &mut out, &mut ws).unwrap();
        let got = words(&out);
        assert!(got.chunks(8).all(|c| c[..7] == [0; 7] && c[7] == u32::MAX), "wave{lanes}: {:x?}", &got[..16]);
    }
}
