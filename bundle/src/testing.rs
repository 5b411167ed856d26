//! Test fixtures other crates' tests build on (feature `testing`; always in this crate's own
//! tests): a small bundle model that touches every field.

use crate::model::*;
use crate::{Arch, ArgView, BufferRole};
use alloc::string::ToString;
use alloc::vec;
use hcq::dtype::DType;

/// A two-program model with a scratch arena, a core_id kernel, a copy and GPU grids:
/// small enough for Miri, and touching every field.
pub fn tiny() -> BundleModel {
    let f32v = |buffer, offset, nbytes| ArgView { buffer, offset, nbytes, dtype: DType::F32 };
    BundleModel {
        name: "tiny".to_string(),
        format_version: 1,
        tinygrad_version: "0.14.0".to_string(),
        arch_levels: ArchLevels { x86_64: Some("x86-64-v2".to_string()), aarch64: None },
        expected_from: Arch::X86_64,
        buffers: vec![
            Buffer {
                nbytes: 16,
                dtype: DType::F32,
                role: BufferRole::Input,
                also_output: false,
                initial: Some(vec![1; 16]),
                image: None,
            },
            Buffer {
                nbytes: 512,
                dtype: DType::I8,
                role: BufferRole::Scratch,
                also_output: false,
                initial: None,
                image: None,
            },
            Buffer {
                nbytes: 16,
                dtype: DType::F32,
                role: BufferRole::Output,
                also_output: false,
                initial: None,
                image: None,
            },
        ],
        inputs: vec![Input { view: f32v(0, 0, 16), shape: vec![4] }],
        outputs: vec![Output { view: f32v(2, 0, 16), shape: vec![2, 2], expected: Some(vec![7; 16]) }],
        programs: vec![
            Program {
                name: "E_4".to_string(),
                symbol: "E_4".to_string(),
                signature: vec![
                    Param { name: None, slot: 0, dtype: DType::F32, shape: vec![4], is_buffer: true },
                    Param { name: None, slot: 1, dtype: DType::F32, shape: vec![4], is_buffer: true },
                ],
                n_buffer_args: 2,
                vars: vec![],
                core_id_arg: None,
                objects: Objects {
                    x86_64: Some(vec![0x7f, b'E', b'L', b'F']),
                    aarch64: None,
                    adreno_a630: None,
                    amd_gfx1100: None,
                },
                adreno: Some(b"{\"arch\":\"a630\"}".to_vec()),
            },
            Program {
                name: "r_4".to_string(),
                symbol: "r_4".to_string(),
                signature: vec![
                    Param {
                        name: Some("data0".to_string()),
                        slot: 0,
                        dtype: DType::F32,
                        shape: vec![4],
                        is_buffer: true,
                    },
                    Param { name: Some("n".to_string()), slot: 1, dtype: DType::I32, shape: vec![], is_buffer: false },
                    Param {
                        name: Some("core_id".to_string()),
                        slot: 2,
                        dtype: DType::I32,
                        shape: vec![],
                        is_buffer: false,
                    },
                ],
                n_buffer_args: 1,
                vars: vec!["n".to_string(), "core_id".to_string()],
                core_id_arg: Some(2),
                objects: Objects {
                    x86_64: None,
                    aarch64: Some(vec![1, 2, 3]),
                    adreno_a630: Some(vec![9; 5]),
                    amd_gfx1100: None,
                },
                adreno: None,
            },
        ],
        launches: vec![
            Launch::Kernel(KernelLaunch {
                program: 0,
                name: "E_4".to_string(),
                global_size: [1, 1, 1],
                local_size: [1, 1, 1],
                args: vec![f32v(1, 256, 16), f32v(0, 0, 16)],
                vals: vec![],
                core_id_arg: None,
                outs: vec![0],
                ins: vec![1],
                gpu: Some(GpuLaunch { global_size: [1, 1, 1], local_size: [4, 1, 1], vals: vec![] }),
                images: vec![],
            }),
            Launch::Kernel(KernelLaunch {
                program: 1,
                name: "r_4".to_string(),
                global_size: [2, 1, 1],
                local_size: [1, 1, 1],
                args: vec![f32v(1, 0, 16)],
                vals: vec![Some(-3), None],
                core_id_arg: Some(2),
                outs: vec![0],
                ins: vec![0],
                gpu: Some(GpuLaunch { global_size: [2, 1, 1], local_size: [2, 1, 1], vals: vec![-3] }),
                images: vec![],
            }),
            Launch::Copy { dst: f32v(2, 0, 16), src: f32v(1, 0, 16) },
        ],
        graphs: vec![],
    }
}
