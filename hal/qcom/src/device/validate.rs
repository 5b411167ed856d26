//! Validation of a bundle for the QCOM device before anything is allocated: each program
//! (metadata, shader code, what the backend's shader core runs) and each launch against its
//! program.

use crate::kernel::GpuKernel;
use hcq::{DType, Error, Result};
use hcq_adreno::Program;
use hcq_adreno::a6xx::descriptors::{TEX_BYTES, image_words, tex_const};
use hcq_adreno::program::Slot;
use hcq_bundle::ArgView;
use hcq_bundle::hcqb::{ImageRef, KernelRef, ProgramRef};

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
/// program allows, whose integer values are as many as the program's and fit 32 bits, and whose
/// image bindings each have a view the a630 takes ([`image_views`]).
pub(super) fn check_launch(prog: &Program, k: &KernelRef<'_>) -> Result<()> {
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
    image_views(prog, k).map(|_| ())
}

/// The image view of every image binding of `prog` (`descriptors.images[].arg`) in launch `k`,
/// as (argument, view), in the program's order: the launch's own (`launches[].args[j].image`),
/// else the one its buffer declares (`buffers[].image`, older bundles); an image binding with
/// neither is refused, and so is an image view of an argument the program binds as a plain
/// buffer. Each view is checked for the a630 ([`check_view`]). The descriptors a launch loads
/// are built from these views ([`write_image_descriptors`]), not from the words the program's
/// metadata carries (those of the launch the exporter saw first).
pub(super) fn image_views(prog: &Program, k: &KernelRef<'_>) -> Result<Vec<(u32, ImageRef)>> {
    let mut out = Vec::with_capacity(prog.images.len());
    for &(arg, _) in &prog.images {
        let v = k.arg(arg as usize).ok_or(Error::OutOfBounds {
            what: "launch argument of an image (descriptors.images[].arg)",
            offset: arg.into(),
            len: 1,
            limit: k.n_args() as u64,
        })?;
        let ctx = |e: Error| e.context(format!("argument {arg} (buffer {})", v.buffer));
        let im = k
            .image(arg as usize)
            .ok_or(Error::Malformed {
                what: "launch argument the program binds as an image",
                at: arg.into(),
                reason: "no image view (neither launches[].args[j].image nor its buffer's buffers[].image)",
            })
            .map_err(ctx)?;
        check_view(prog, arg, v, im).map_err(ctx)?;
        out.push((arg, im));
    }
    for (arg, _) in k.images() {
        if !prog.images.iter().any(|&(a, _)| a == arg) {
            return Err(Error::Malformed {
                what: "launch image view",
                at: arg.into(),
                reason: "the program binds this argument as a plain buffer, not as an image",
            })
            .map_err(|e| e.context(format!("argument {arg}")));
        }
    }
    Ok(out)
}

/// The a6xx format code of `fmt` and its bytes per channel.
fn a6xx_format(fmt: DType) -> Option<(u32, u64)> {
    match fmt {
        DType::F16 => Some((tex_const::FMT6_16_16_16_16_FLOAT, 2)),
        DType::F32 => Some((tex_const::FMT6_32_32_32_32_FLOAT, 4)),
        _ => None,
    }
}

/// The a6xx format the program's descriptor of image argument `arg` has (dword 0 `FMT`).
fn program_format(prog: &Program, arg: u32) -> Option<u32> {
    prog.slots.iter().find_map(|&(_, s)| match s {
        Slot::Image { arg: a, words } if a == arg => Some(words[0] >> tex_const::FMT.0 & ((1 << tex_const::FMT.1) - 1)),
        _ => None,
    })
}

/// One image view for the a630: a float16 or float32 RGBA format, the program's (the shader
/// samples and stores that type) and the argument's dtype; width and height 1..=32767
/// (`TEX_CONST_1`'s 15-bit fields); a pitch of at least `width × 4 × itemsize`, a multiple of
/// 64 (`PITCHALIGN`) inside `TEX_CONST_2.PITCH` (22 bits); `height × pitch` bytes inside the
/// argument's view, which starts 64-byte aligned in its page-aligned KGSL object (the texture
/// base).
pub(super) fn check_view(prog: &Program, arg: u32, v: ArgView, im: ImageRef) -> Result<()> {
    let (fmt, itemsize) = a6xx_format(im.format).ok_or(Error::Unsupported {
        what: "image view format (float16 or float32; dtype code)",
        value: im.format.code().into(),
    })?;
    if im.format != v.dtype {
        return Err(Error::Mismatch {
            what: "image view format vs the argument's dtype (dtype codes)",
            expected: v.dtype.code().into(),
            found: im.format.code().into(),
        });
    }
    if let Some(want) = program_format(prog, arg)
        && want != fmt
    {
        return Err(Error::Mismatch {
            what: "image view format vs the program's image format (a6xx format codes)",
            expected: want.into(),
            found: fmt.into(),
        });
    }
    let max = (1u32 << tex_const::WIDTH.1) - 1;
    if im.width == 0 || im.height == 0 || im.width > max || im.height > max {
        return Err(Error::InvalidArgument {
            what: "image view width/height: 0, or beyond TEX_CONST_1's 15-bit fields (width << 32 | height)",
            value: u64::from(im.width) << 32 | u64::from(im.height),
        });
    }
    let row = u64::from(im.width) * 4 * itemsize;
    if u64::from(im.pitch) < row {
        return Err(Error::LimitExceeded {
            what: "image view pitch below width x 4 x itemsize (a row would overlap the next)",
            value: im.pitch.into(),
            limit: row,
        });
    }
    if !im.pitch.is_multiple_of(64) || im.pitch >> tex_const::PITCH.1 != 0 {
        return Err(Error::Misaligned {
            what: "image view pitch: a multiple of 64 (PITCHALIGN) within TEX_CONST_2.PITCH",
            value: im.pitch.into(),
            align: 64,
        });
    }
    let need = u64::from(im.height) * u64::from(im.pitch);
    if v.nbytes < need {
        return Err(Error::OutOfSpace {
            what: "image argument: the view is smaller than height x pitch",
            requested: need,
            capacity: v.nbytes,
        });
    }
    if !v.offset.is_multiple_of(64) {
        return Err(Error::Misaligned {
            what: "image argument view offset (texture base)",
            value: v.offset,
            align: 64,
        });
    }
    Ok(())
}

/// Rewrite the texture and IBO descriptors of a constant block `fill_consts` wrote: each built
/// from its launch's image view (`views`, from [`image_views`]) as tinygrad's `QCOMArgsState`
/// builds it from the buffer it binds, with the argument's address (`args`) in dwords 4-5.
pub(super) fn write_image_descriptors(
    prog: &Program,
    block: &mut [u8],
    args: &[u64],
    views: &[(u32, ImageRef)],
) -> Result<()> {
    let d = prog.descriptors;
    let ibo = d.ibo_off..d.ibo_off.saturating_add(d.ibo_cnt.saturating_mul(TEX_BYTES));
    for &(off, slot) in &prog.slots {
        let Slot::Image { arg, .. } = slot else { continue };
        let im = views.iter().find(|(a, _)| *a == arg).map(|(_, im)| *im).ok_or(Error::Malformed {
            what: "launch argument the program binds as an image",
            at: arg.into(),
            reason: "no image view",
        })?;
        let (fmt, _) = a6xx_format(im.format).ok_or(Error::Unsupported {
            what: "image view format (float16 or float32; dtype code)",
            value: im.format.code().into(),
        })?;
        let a = *args.get(arg as usize).ok_or(Error::OutOfBounds {
            what: "launch argument of an image",
            offset: arg.into(),
            len: 1,
            limit: args.len() as u64,
        })?;
        if !a.is_multiple_of(64) {
            return Err(Error::Misaligned { what: "adreno image buffer address", value: a, align: 64 });
        }
        let mut words = image_words(fmt, im.width, im.height, im.pitch, ibo.contains(&off));
        words[4] = a as u32;
        words[5] |= (a >> 32) as u32;
        let capacity = block.len() as u64;
        let dst = block.get_mut(off as usize..off as usize + TEX_BYTES as usize).ok_or(Error::OutOfSpace {
            what: "adreno constant block (image descriptor)",
            requested: u64::from(off) + u64::from(TEX_BYTES),
            capacity,
        })?;
        for (c, w) in dst.chunks_exact_mut(4).zip(words) {
            c.copy_from_slice(&w.to_le_bytes());
        }
    }
    Ok(())
}
