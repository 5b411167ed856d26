//! A small program for the shader-thread tests: each work-group stores its id.
// Each test file uses what it needs.
#![allow(dead_code)]

use super::common::*;
use hcq_rdna3::tables;
use hcq_sim_amd::cp::regs::*;
use hcq_sim_amd::{Gpu, GpuConfig};
use std::time::Duration;

pub fn op(t: &[tables::Op], name: &str) -> u32 {
    u32::from(t.iter().find(|o| o.name == name).unwrap().op)
}

/// `out[group] = group`, `out` the SGPR pair s[0:1], the work-group id in s2: one wave of 32
/// lanes a work-group, every lane storing the same dword.
pub fn program() -> Vec<u32> {
    vec![
        0x3f << 25 | 1 << 17 | op(tables::VOP1, "v_mov_b32_e32") << 9 | 2, // v1 = s2
        op(tables::VOP2, "v_lshlrev_b32_e32") << 25 | 2 << 17 | 1 << 9 | (128 + 2), // v2 = v1 << 2
        0x37 << 26 | op(tables::GLOBAL, "global_store_b32") << 18 | 2 << 16, // out[v2] = v1
        1 << 8 | 2,
        0xbfb0_0000, // s_endpgm
        0xbf9f_0000, // s_code_end: the program's end for the CP
    ]
}

/// A dispatch of `groups` work-groups of the program at `code` storing into `out`.
pub fn dispatch(code: u64, out: u64, groups: u32) -> Vec<u32> {
    let mut w = set_sh(COMPUTE_PGM_LO, &[(code >> 8) as u32, (code >> 40) as u32]);
    // 2 user SGPRs, then TGID_X.
    w.extend(set_sh(COMPUTE_PGM_RSRC1, &[0, 2 << 1 | 1 << 7]));
    w.extend(set_sh(COMPUTE_USER_DATA_0, &[out as u32, (out >> 32) as u32]));
    w.extend(set_sh(COMPUTE_START_X, &[0, 0, 0, 32, 1, 1]));
    let initiator = INITIATOR_COMPUTE_SHADER_EN | INITIATOR_FORCE_START_AT_000 | INITIATOR_CS_W32_EN;
    w.extend(pkt(hcq_sim_amd::cp::pm4::DISPATCH_DIRECT, &[groups, 1, 1, initiator]));
    w
}

/// The program loaded into `gpu`'s memory and a 4 KiB output buffer after it: `(code, out)`.
/// `out` is the last allocation, so nothing is mapped after it.
pub fn load(gpu: &Gpu) -> (u64, u64) {
    let m = gpu.memory();
    let code = m.alloc(None, 4096).unwrap();
    m.write_words(code, &program()).unwrap();
    (code, m.alloc(None, 4096).unwrap())
}

pub fn gpu(threads: usize) -> Gpu {
    Gpu::new(GpuConfig { shader_threads: threads, hang_timeout: Some(Duration::from_secs(2)), ..GpuConfig::default() })
}
