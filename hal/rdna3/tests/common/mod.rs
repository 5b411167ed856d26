//! Hand assembly for the interpreter's tests: opcodes looked up by mnemonic in the generated
//! tables, fields placed as the RDNA3 guide's ch. 15 lays them out; a flat memory; a dispatch of
//! one dimension whose user SGPRs are given.
#![allow(dead_code)]

use hcq_rdna3::exec::{Dispatch, Memory};
use hcq_rdna3::tables;

pub const V: u32 = 256;
pub const VCC: u32 = 106;
pub const EXEC: u32 = 126;
pub const M0: u32 = 125;
pub const NULL: u32 = 124;
/// The literal-constant source field.
pub const LIT: u32 = 255;
/// Inline constants: integer n (0..=64) and 1.0.
pub const fn int(n: u32) -> u32 {
    128 + n
}
pub const ONE: u32 = 242;

pub fn op(t: &[tables::Op], name: &str) -> u32 {
    u32::from(t.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("no opcode {name}")).op)
}
pub fn sop1(name: &str, d: u32, a: u32) -> Vec<u32> {
    vec![0x17d << 23 | d << 16 | op(tables::SOP1, name) << 8 | a]
}
pub fn sop2(name: &str, d: u32, a: u32, b: u32) -> Vec<u32> {
    vec![0b10 << 30 | op(tables::SOP2, name) << 23 | d << 16 | b << 8 | a]
}
pub fn sopk(name: &str, d: u32, imm: u16) -> Vec<u32> {
    vec![0b1011 << 28 | op(tables::SOPK, name) << 23 | d << 16 | u32::from(imm)]
}
pub fn sopc(name: &str, a: u32, b: u32) -> Vec<u32> {
    vec![0x17e << 23 | op(tables::SOPC, name) << 16 | b << 8 | a]
}
pub fn sopp(name: &str, imm: u16) -> Vec<u32> {
    vec![0x17f << 23 | op(tables::SOPP, name) << 16 | u32::from(imm)]
}
/// SMEM: `sdata` from the SGPR pair `base` plus the 21-bit byte offset (soffset null).
pub fn smem(name: &str, sdata: u32, base: u32, off: u32) -> Vec<u32> {
    vec![0x3d << 26 | op(tables::SMEM, name) << 18 | sdata << 6 | base >> 1, NULL << 25 | (off & 0x1f_ffff)]
}
pub fn vop1(name: &str, d: u32, a: u32) -> Vec<u32> {
    vec![0x3f << 25 | d << 17 | op(tables::VOP1, name) << 9 | a]
}
/// `vb` a VGPR (`V + n` or `n`).
pub fn vop2(name: &str, d: u32, a: u32, vb: u32) -> Vec<u32> {
    vec![op(tables::VOP2, name) << 25 | d << 17 | (vb & 0xff) << 9 | a]
}
pub fn vop3(name: &str, d: u32, a: u32, b: u32, c: u32) -> Vec<u32> {
    vop3m(name, d, a, b, c, 0)
}
/// VOP3 with the neg bits of its three sources.
pub fn vop3m(name: &str, d: u32, a: u32, b: u32, c: u32, neg: u32) -> Vec<u32> {
    vec![0x35 << 26 | op(tables::VOP3, name) << 16 | d, neg << 29 | c << 18 | b << 9 | a]
}
/// VOP3 with op_sel bits (sources 0–2, then the destination at bit 3).
pub fn vop3s(name: &str, d: u32, a: u32, b: u32, c: u32, sel: u32) -> Vec<u32> {
    vec![0x35 << 26 | op(tables::VOP3, name) << 16 | sel << 11 | d, c << 18 | b << 9 | a]
}
/// VOP3SD: a scalar destination `sd` beside the vector one.
pub fn vop3sd(name: &str, d: u32, sd: u32, a: u32, b: u32, c: u32, neg: u32) -> Vec<u32> {
    vec![0x35 << 26 | op(tables::VOP3, name) << 16 | sd << 8 | d, neg << 29 | c << 18 | b << 9 | a]
}
/// VOP3P: op_sel in bits 11–13 of the first word, op_sel_hi's low two in bits 27–28 of the
/// second and its third in bit 14 of the first.
pub fn vop3p(name: &str, d: u32, a: u32, b: u32, c: u32, sel: u32, sel_hi: u32) -> Vec<u32> {
    vec![
        0xcc << 24 | op(tables::VOP3P, name) << 16 | (sel_hi >> 2 & 1) << 14 | (sel & 7) << 11 | d,
        (sel_hi & 3) << 27 | c << 18 | b << 9 | a,
    ]
}
/// global_* with an SGPR-pair base: `vaddr` a 32-bit VGPR offset.
pub fn global(name: &str, vdst: u32, vaddr: u32, data: u32, saddr: u32) -> Vec<u32> {
    global_off(name, vdst, vaddr, data, saddr, 0)
}
pub fn global_off(name: &str, vdst: u32, vaddr: u32, data: u32, saddr: u32, off: i32) -> Vec<u32> {
    // CAST: a 13-bit two's complement offset.
    let off = (off as u32) & 0x1fff;
    vec![0x37 << 26 | op(tables::GLOBAL, name) << 18 | 2 << 16 | off, vdst << 24 | saddr << 16 | data << 8 | vaddr]
}
/// flat_*: the 64-bit address in `vaddr`, `vaddr + 1`.
pub fn flat(name: &str, vdst: u32, vaddr: u32, data: u32, off: u32) -> Vec<u32> {
    vec![0x37 << 26 | op(tables::FLAT, name) << 18 | (off & 0xfff), vdst << 24 | NULL << 16 | data << 8 | vaddr]
}
/// ds_*: the address VGPR, two data VGPRs and the two 8-bit offsets.
pub fn ds2(name: &str, vdst: u32, addr: u32, data0: u32, data1: u32, off0: u32, off1: u32) -> Vec<u32> {
    vec![
        0x36 << 26 | op(tables::DS, name) << 18 | (off1 & 0xff) << 8 | (off0 & 0xff),
        vdst << 24 | data1 << 16 | data0 << 8 | addr,
    ]
}
pub fn ds(name: &str, vdst: u32, addr: u32, data: u32) -> Vec<u32> {
    ds2(name, vdst, addr, data, 0, 0, 0)
}

pub fn prog(parts: &[Vec<u32>]) -> Vec<u32> {
    parts.concat()
}

/// Memory at `.0`: the bytes `.1`.
pub struct Buf(pub u64, pub Vec<u8>);

impl Memory for Buf {
    fn read(&mut self, a: u64, b: &mut [u8]) -> bool {
        let n = b.len();
        match a.checked_sub(self.0).and_then(|o| usize::try_from(o).ok()).and_then(|o| self.1.get(o..o + n)) {
            Some(s) => {
                b.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, a: u64, d: &[u8]) -> bool {
        let n = d.len();
        match a.checked_sub(self.0).and_then(|o| usize::try_from(o).ok()).and_then(|o| self.1.get_mut(o..o + n)) {
            Some(s) => {
                s.copy_from_slice(d);
                true
            }
            None => false,
        }
    }
}

impl Buf {
    pub fn words(&self) -> Vec<u32> {
        self.1.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }
    pub fn word(&self, k: usize) -> u32 {
        u32::from_le_bytes(self.1[4 * k..4 * k + 4].try_into().unwrap())
    }
    pub fn set_word(&mut self, k: usize, x: u32) {
        self.1[4 * k..4 * k + 4].copy_from_slice(&x.to_le_bytes());
    }
}

/// A dispatch of work-groups of `local` lanes in x, wave64 or 32, the user SGPRs given (no
/// work-group id), 1 KiB of LDS.
pub fn dispatch(local: u32, wave64: bool, user: &[u32]) -> Dispatch<'_> {
    Dispatch {
        wave64,
        local: [local, 1, 1],
        user_sgprs: user,
        // CAST: a handful of SGPRs.
        user_sgpr_count: user.len() as u32,
        tgid: [false; 3],
        tg_size: false,
        wave_offset: false,
        lds_bytes: 1024,
        private_bytes: 0,
        max_steps: 100_000,
    }
}

/// A small xorshift generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        (self.next() >> 16) % n
    }
}
