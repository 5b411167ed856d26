//! The 64-bit scalar compares (`s_cmp_eq_u64`, `s_cmp_lg_u64`, `s_bitcmp0/1_b64`) compare both
//! halves of their 64-bit sources (the bit index of `s_bitcmp*_b64` is 32-bit): what LLVM emits
//! for tinygrad's int64/uint64 `==` and `!=` on a uniform value (`s_cmp_eq_u64 s[2:3], s[0:1]`,
//! `s_cselect_b32`), which tinygrad's test_dtype_alu checks (`-1 == -1`, `2^32 == 0`).

use hcq_rdna3::exec::{Dispatch, Memory, Program};
use hcq_rdna3::tables;

fn op(t: &[tables::Op], name: &str) -> u32 {
    u32::from(t.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("{name}")).op)
}
fn sopc(name: &str, a: u32, b: u32) -> Vec<u32> {
    vec![0x17e << 23 | op(tables::SOPC, name) << 16 | b << 8 | a]
}
fn sop2(name: &str, d: u32, a: u32, b: u32) -> Vec<u32> {
    vec![0b10 << 30 | op(tables::SOP2, name) << 23 | d << 16 | b << 8 | a]
}
fn vop1(name: &str, d: u32, a: u32) -> Vec<u32> {
    vec![0x3f << 25 | d << 17 | op(tables::VOP1, name) << 9 | a]
}
fn global(name: &str, vdst: u32, vaddr: u32, data: u32, saddr: u32) -> Vec<u32> {
    vec![0x37 << 26 | op(tables::GLOBAL, name) << 18 | 2 << 16, vdst << 24 | saddr << 16 | data << 8 | vaddr]
}
fn sopp(name: &str, imm: i16) -> Vec<u32> {
    vec![0x17f << 23 | op(tables::SOPP, name) << 16 | u32::from(imm as u16)]
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

/// SCC of `name` on s[0:1] = `a` and s[2:3] = `b` (user SGPRs), stored as a dword by one lane.
fn scc(name: &str, a: u64, b: u64) -> bool {
    let code = [
        sopc(name, 0, 2),                       // SCC = a <op> b
        sop2("s_cselect_b32", 6, 129, 128),     // s6 = SCC ? 1 : 0
        vop1("v_mov_b32_e32", 1, 6),            // v1 = s6
        vop1("v_mov_b32_e32", 0, 128),          // v0 = 0
        global("global_store_b32", 0, 0, 1, 4), // [s[4:5] + v0] = v1
        sopp("s_endpgm", 0),
    ]
    .concat();
    let p = Program::load(&code, 0, false).unwrap();
    let base = 0x1000_0000u64;
    let mut m = Buf(base, vec![0xff; 4]);
    // CAST: the halves of the sources and of the buffer's address.
    let user = [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32, base as u32, (base >> 32) as u32];
    let d = Dispatch {
        wave64: false,
        local: [1, 1, 1],
        user_sgprs: &user,
        user_sgpr_count: user.len() as u32,
        tgid: [false, false, false],
        tg_size: false,
        wave_offset: false,
        lds_bytes: 0,
        private_bytes: 0,
        max_steps: 100,
    };
    p.run(&d, [1, 1, 1], &mut m).unwrap();
    match u32::from_le_bytes(m.1[..4].try_into().unwrap()) {
        0 => false,
        1 => true,
        v => panic!("{name}: stored {v:#x}"),
    }
}

#[test]
fn sixty_four_bit_scalar_compares_read_both_halves() {
    let m1 = u64::MAX;
    assert!(scc("s_cmp_eq_u64", m1, m1), "-1 == -1");
    assert!(!scc("s_cmp_eq_u64", 1 << 32, 0), "2^32 != 0 (only the high halves differ)");
    assert!(!scc("s_cmp_eq_u64", 5, 5 | 7 << 40));
    assert!(scc("s_cmp_eq_u64", 0x1234_5678_9abc_def0, 0x1234_5678_9abc_def0));
    assert!(scc("s_cmp_lg_u64", 1 << 32, 0));
    assert!(!scc("s_cmp_lg_u64", m1, m1));
    // bit 40 of a, the index 32-bit (its high half ignored)
    assert!(scc("s_bitcmp1_b64", 1 << 40, 40));
    assert!(!scc("s_bitcmp0_b64", 1 << 40, 40));
    assert!(scc("s_bitcmp0_b64", 1 << 40, 8));
    assert!(scc("s_bitcmp1_b64", 1 << 40, 40 | 1 << 32), "the index's high half is not read");
}
