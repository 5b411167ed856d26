//! Validation of a bundle for the QCOM device before anything is allocated: each program
//! (metadata, shader code, what the backend's shader core runs) and each launch against its
//! program.

use crate::kernel::GpuKernel;
use hcq::bundle::hcqb::ProgramRef;
use hcq::{Error, Result};
use hcq_adreno::Program;

/// Validate a program for the QCOM device: its metadata against itself and its blob
/// ([`Program::from_json`]), its address slots against the bundle program's buffer parameters,
/// and its shader code: every instruction from the entry decodes, branch targets lie inside the
/// code, and an `end` is there (an all-zero or cut image has none). What the device's shader
/// core runs is [`check_shader_support`]'s.
pub fn validate_program(p: &ProgramRef<'_>, object: &[u8]) -> Result<Program> {
    use hcq_ir3::isa::{Body, Cat0Op};
    let meta = p.adreno.ok_or(Error::Malformed {
        what: "bundle program",
        at: 0,
        reason: "an adreno_a630 object without its programs[].adreno metadata",
    })?;
    let prog = Program::from_json(object, meta)?;
    if prog.n_args != p.n_buffer_args {
        return Err(Error::Mismatch {
            what: "adreno consts.args count vs the program's n_buffer_args (launch arguments)",
            expected: p.n_buffer_args.into(),
            found: prog.n_args.into(),
        });
    }
    // CAST: the entry lies inside the image (checked by `from_json`).
    let code = &prog.image[prog.entry as usize..];
    let instrs = hcq_ir3::decode_image(code).map_err(|e| {
        Error::Malformed { what: "adreno shader code", at: prog.entry.into(), reason: "not a6xx ir3 instructions" }
            .context(e.to_string())
    })?;
    let mut ends = false;
    for (i, ins) in instrs.iter().enumerate() {
        if let Some(t) = ins.branch_target(i)
            && !(0..instrs.len() as i64).contains(&t)
        {
            return Err(Error::OutOfBounds {
                what: "adreno shader code: a branch target outside the code (instruction, target)",
                offset: i as u64,
                len: 1,
                limit: instrs.len() as u64,
            })
            .map_err(|e| e.context(format!("instruction {i} branches to {t}")));
        }
        if let Body::Cat0(c) = ins.body
            && c.op == Cat0Op::End
        {
            ends = true;
        }
    }
    if !ends {
        return Err(Error::Malformed {
            what: "adreno shader code",
            at: instrs.len() as u64,
            reason: "no end instruction (an all-zero, cut or garbage image)",
        });
    }
    Ok(prog)
}

/// Every instruction of `prog` (validated by [`validate_program`]) is one the shader core
/// behind `kernel` runs ([`GpuKernel::unsupported_instruction`]: on hardware every one, on
/// `QCOM:SIM` those the ir3 interpreter runs); the error names the instruction, its index and
/// the backend.
pub fn check_shader_support(prog: &Program, kernel: &dyn GpuKernel) -> Result<()> {
    // CAST: the entry lies inside the image (checked by `from_json`).
    let instrs = hcq_ir3::decode_image(&prog.image[prog.entry as usize..]).map_err(|e| {
        Error::Malformed { what: "adreno shader code", at: prog.entry.into(), reason: "not a6xx ir3 instructions" }
            .context(e.to_string())
    })?;
    for (i, ins) in instrs.iter().enumerate() {
        if let Some(name) = kernel.unsupported_instruction(ins) {
            return Err(Error::Unsupported {
                what: "adreno shader instruction the device's shader core does not run (instruction index)",
                value: i as u64,
            })
            .map_err(|e| {
                e.context(format!("instruction {i}: {name}; shader core: {}", kernel.describe().trim_end_matches(',')))
            });
        }
    }
    Ok(())
}

/// A kernel launch against its validated program: an Adreno dispatch whose work-group size the
/// program allows and whose integer values are as many as the program's and fit 32 bits.
pub(super) fn check_launch(prog: &Program, k: &hcq::bundle::hcqb::KernelRef<'_>) -> Result<()> {
    let gpu = k.gpu.ok_or(Error::Malformed {
        what: "bundle launch",
        at: k.program.into(),
        reason: "no Adreno dispatch (gpu_global_size/gpu_local_size/gpu_vals)",
    })?;
    prog.check_local(gpu.local_size)?;
    if gpu.vals().len() != prog.n_vals as usize {
        return Err(Error::Mismatch {
            what: "launch gpu_vals count vs the program's consts.vals",
            expected: prog.n_vals.into(),
            found: gpu.vals().len() as u64,
        });
    }
    for v in gpu.vals() {
        i32::try_from(v)
            .map_err(|_| Error::InvalidArgument { what: "adreno integer argument (32-bit)", value: v as u64 })?;
    }
    // An image's view holds its rows at the program's pitch (IMAGE-SCHEMA: nbytes = height ×
    // pitch) and starts 64-byte aligned in its page-aligned KGSL object (the texture base).
    for &(arg, need) in &prog.images {
        let v = k.arg(arg as usize).ok_or(Error::OutOfBounds {
            what: "launch argument of an image (descriptors.images[].arg)",
            offset: arg.into(),
            len: 1,
            limit: k.n_args() as u64,
        })?;
        if v.nbytes < need {
            return Err(Error::OutOfSpace {
                what: "image argument: the view is smaller than height x pitch",
                requested: need,
                capacity: v.nbytes,
            })
            .map_err(|e| e.context(format!("argument {arg} (buffer {})", v.buffer)));
        }
        if !v.offset.is_multiple_of(64) {
            return Err(Error::Misaligned {
                what: "image argument view offset (texture base)",
                value: v.offset,
                align: 64,
            })
            .map_err(|e| e.context(format!("argument {arg} (buffer {})", v.buffer)));
        }
    }
    Ok(())
}
