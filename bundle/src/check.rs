//! The semantic rules every bundle obeys, shared by [`super::model::BundleModel::validate`] and
//! [`super::hcqb::Hcqb::parse`] so the two can never disagree. No allocation: each rule looks at
//! one record and the few numbers it refers to; the callers walk the tables and attach locations.

use super::ArgView;
use hcq::dtype::DType;
use hcq::error::{Error, Result};

/// What a launch needs to know about its program.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProgramShape {
    pub n_buffer_args: u32,
    pub n_params: usize,
    pub n_vars: usize,
    pub core_id_arg: Option<u32>,
    pub n_objects: usize,
}

/// The counts of a kernel launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelShape {
    pub n_args: usize,
    pub n_vals: usize,
    pub core_id_arg: Option<u32>,
    pub global_size: [u32; 3],
}

/// `view` lies inside its base buffer (`buffer_nbytes` is `None` when the index is out of range).
pub(crate) fn view(what: &'static str, view: ArgView, buffer_nbytes: Option<u64>, n_buffers: usize) -> Result<()> {
    let Some(size) = buffer_nbytes else {
        return Err(Error::OutOfBounds {
            what: "buffer index",
            offset: view.buffer as u64,
            len: 1,
            limit: n_buffers as u64,
        });
    };
    match view.end() {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::OutOfBounds { what, offset: view.offset, len: view.nbytes, limit: size }),
    }
}

pub(crate) use hcq::dtype::footprint;

/// An image buffer's facts (IMAGE-SCHEMA): a non-zero width and height, a `float16` or `float32`
/// RGBA element type, a row pitch of at least `width × 4 × itemsize` bytes, and `height × pitch`
/// bytes inside the buffer.
pub(crate) fn image(width: u32, height: u32, pitch: u32, format: DType, nbytes: u64) -> Result<()> {
    if width == 0 || height == 0 {
        return Err(Error::InvalidArgument { what: "image width and height (must be non-zero)", value: 0 });
    }
    if !matches!(format, DType::F16 | DType::F32) {
        return Err(Error::Unsupported {
            what: "image element type (float16 or float32)",
            value: format.code() as u64,
        });
    }
    let row = width as u64 * 4 * format.size() as u64;
    if (pitch as u64) < row {
        return Err(Error::OutOfBounds {
            what: "image row pitch vs its width",
            offset: 0,
            len: row,
            limit: pitch as u64,
        });
    }
    let need = height as u64 * pitch as u64;
    if need > nbytes {
        return Err(Error::OutOfBounds { what: "image rows vs its buffer", offset: 0, len: need, limit: nbytes });
    }
    Ok(())
}

/// An image's channel type is the element type of what it is an image of (FORMAT.md: a buffer's
/// `image.format` is its `dtype`; a launch argument's `image.format` is the argument's `dtype`).
pub(crate) fn image_format(what: &'static str, format: DType, dtype: DType) -> Result<()> {
    if format != dtype {
        return Err(Error::Mismatch { what, expected: dtype.code() as u64, found: format.code() as u64 });
    }
    Ok(())
}

/// Bytes an image base must be aligned to (the a6xx texture base, `TEX_CONST_4.BASE_LO` shr 5
/// in 64-byte units; KGSL objects are page aligned, so the view's offset must be).
pub(crate) const IMAGE_BASE_ALIGN: u64 = 64;

/// The image view a launch binds at one argument: the image's facts ([`image`]) within the
/// argument's view (`height × pitch` bytes of it), a format equal to the argument's dtype, and
/// a 64-byte aligned offset in its buffer.
pub(crate) fn arg_image(view: ArgView, width: u32, height: u32, pitch: u32, format: DType) -> Result<()> {
    image(width, height, pitch, format, view.nbytes)?;
    image_format("launch argument image format vs the argument's dtype (codes)", format, view.dtype)?;
    if !view.offset.is_multiple_of(IMAGE_BASE_ALIGN) {
        return Err(Error::Misaligned {
            what: "launch argument image view offset (the texture base)",
            value: view.offset,
            align: IMAGE_BASE_ALIGN,
        });
    }
    Ok(())
}

/// A graph runs at least one launch (a graph of none says it computes its outputs and computes
/// nothing).
pub(crate) fn has_launches(n_launches: usize) -> Result<()> {
    if n_launches == 0 {
        return Err(Error::Malformed { what: "bundle graph", at: 0, reason: "no launches (it computes nothing)" });
    }
    Ok(())
}

/// A graph's `first .. first + len` range lies inside a table of `n` records.
/// (`BundleModel::validate` only: the `.hcqb` parser checks its graph ranges itself.)
#[cfg(feature = "alloc")]
pub(crate) fn span(what: &'static str, first: u32, len: u32, n: usize) -> Result<()> {
    match (first as u64).checked_add(len as u64) {
        Some(end) if end <= n as u64 => Ok(()),
        _ => Err(Error::OutOfBounds { what, offset: first as u64, len: len as u64, limit: n as u64 }),
    }
}

/// Input or output `k` of a graph agrees with the first graph's (every graph takes the same
/// inputs and returns the same outputs): same element type and byte size.
pub(crate) fn same_tensor(what: &'static str, first: ArgView, other: ArgView) -> Result<()> {
    if first.dtype != other.dtype {
        return Err(Error::Mismatch { what, expected: first.dtype.code() as u64, found: other.dtype.code() as u64 });
    }
    if first.nbytes != other.nbytes {
        return Err(Error::Mismatch { what, expected: first.nbytes, found: other.nbytes });
    }
    Ok(())
}

/// A graph's target is known and no other graph has it. A graph for any target may stand beside
/// graphs of other targets (the CPU and Adreno objects of one schedule beside the AMD graph of the
/// same kernels): a device runs the graph of its own target when there is one, else the graph for
/// any target ([`Hcqb::for_archs`](crate::hcqb::Hcqb::for_archs)), so the choice is never ambiguous.
pub(crate) fn graph_target(code: u8, all: impl Iterator<Item = u8>, index: usize) -> Result<()> {
    super::GraphTarget::from_code(code)?;
    for (j, other) in all.enumerate() {
        if j != index && other == code {
            return Err(Error::Malformed {
                what: "bundle graph target",
                at: j as u64,
                reason: "two graphs for one target",
            });
        }
    }
    Ok(())
}

/// Every graph has as many inputs and outputs as the first.
pub(crate) fn same_counts(inputs0: usize, inputs: usize, outputs0: usize, outputs: usize) -> Result<()> {
    if inputs0 != inputs {
        return Err(Error::Mismatch {
            what: "graph inputs vs the first graph's",
            expected: inputs0 as u64,
            found: inputs as u64,
        });
    }
    if outputs0 != outputs {
        return Err(Error::Mismatch {
            what: "graph outputs vs the first graph's",
            expected: outputs0 as u64,
            found: outputs as u64,
        });
    }
    Ok(())
}

/// Input or output `k` of a graph has the first graph's shape.
pub(crate) fn same_shape(first: impl Iterator<Item = u64>, mut other: impl Iterator<Item = u64>) -> Result<()> {
    let (mut n, mut at) = (0u64, None);
    for (i, d) in first.enumerate() {
        n += 1;
        match other.next() {
            Some(e) if e == d => {}
            _ => at = at.or(Some(i as u64)),
        }
    }
    if other.next().is_some() || at.is_some() {
        return Err(Error::Malformed {
            what: "graph tensor shape vs the first graph's",
            at: at.unwrap_or(n),
            reason: "shapes differ",
        });
    }
    Ok(())
}

/// A buffer's starting bytes fit in it.
pub(crate) fn initial(len: u64, nbytes: u64) -> Result<()> {
    if len > nbytes {
        return Err(Error::OutOfBounds { what: "buffer initial data", offset: 0, len, limit: nbytes });
    }
    Ok(())
}

/// An input or output: inside its buffer, its shape spans exactly its bytes, and the expected
/// bytes (outputs) are exactly as long as the view.
pub(crate) fn tensor(
    v: ArgView,
    buffer_nbytes: Option<u64>,
    n_buffers: usize,
    shape_bytes: u64,
    expected_len: Option<u64>,
) -> Result<()> {
    view("model input/output view", v, buffer_nbytes, n_buffers)?;
    if shape_bytes != v.nbytes {
        return Err(Error::Mismatch { what: "view shape bytes vs nbytes", expected: v.nbytes, found: shape_bytes });
    }
    if let Some(len) = expected_len
        && len != v.nbytes
    {
        return Err(Error::Mismatch { what: "expected output length", expected: v.nbytes, found: len });
    }
    Ok(())
}

/// A program's own shape: signature length, `core_id_arg` slot, at least one object.
pub(crate) fn program(p: &ProgramShape) -> Result<()> {
    let want = (p.n_buffer_args as usize).checked_add(p.n_vars);
    if want != Some(p.n_params) {
        return Err(Error::Mismatch {
            what: "signature length vs n_buffer_args + vars",
            expected: want.map_or(u64::MAX, |w| w as u64),
            found: p.n_params as u64,
        });
    }
    if let Some(c) = p.core_id_arg {
        if c as usize >= p.n_params {
            return Err(Error::OutOfBounds {
                what: "program core_id_arg",
                offset: c as u64,
                len: 1,
                limit: p.n_params as u64,
            });
        }
        if c < p.n_buffer_args {
            return Err(Error::Malformed {
                what: "program core_id_arg",
                at: c as u64,
                reason: "names a buffer slot, not an integer slot",
            });
        }
    }
    if p.n_objects == 0 {
        return Err(Error::Malformed { what: "bundle program", at: 0, reason: "no object for any architecture" });
    }
    Ok(())
}

/// Parameter `j` of a signature: slots are positions, buffers come first.
pub(crate) fn param(j: usize, slot: u32, is_buffer: bool, n_buffer_args: u32) -> Result<()> {
    if slot as usize != j {
        return Err(Error::Mismatch { what: "signature slot vs position", expected: j as u64, found: slot as u64 });
    }
    if is_buffer != (slot < n_buffer_args) {
        return Err(Error::Malformed {
            what: "program signature",
            at: j as u64,
            reason: "buffer parameters must be exactly the first n_buffer_args slots",
        });
    }
    Ok(())
}

/// A kernel launch against its program (`None` when the program index is out of range).
pub(crate) fn kernel(program_index: u32, k: &KernelShape, p: Option<&ProgramShape>, n_programs: usize) -> Result<()> {
    let Some(p) = p else {
        return Err(Error::OutOfBounds {
            what: "launch program index",
            offset: program_index as u64,
            len: 1,
            limit: n_programs as u64,
        });
    };
    if k.n_args != p.n_buffer_args as usize {
        return Err(Error::Mismatch {
            what: "launch argument count vs program n_buffer_args",
            expected: p.n_buffer_args as u64,
            found: k.n_args as u64,
        });
    }
    if k.n_vals != p.n_vars {
        return Err(Error::Mismatch {
            what: "launch value count vs program vars",
            expected: p.n_vars as u64,
            found: k.n_vals as u64,
        });
    }
    if k.core_id_arg != p.core_id_arg {
        return Err(Error::Mismatch {
            what: "launch core_id_arg vs program core_id_arg (none = 0xffffffff)",
            expected: p.core_id_arg.map_or(u32::MAX, |c| c) as u64,
            found: k.core_id_arg.map_or(u32::MAX, |c| c) as u64,
        });
    }
    if k.core_id_arg.is_some() && k.global_size[0] == 0 {
        return Err(Error::InvalidArgument {
            what: "core_id launch with global_size[0] == 0 (no thread runs)",
            value: 0,
        });
    }
    Ok(())
}

/// Value `k` of a kernel launch: `None` exactly at the `core_id_arg` slot (`n_buffer_args + k`).
pub(crate) fn val(k: usize, value: Option<i64>, n_buffer_args: u32, core_id_arg: Option<u32>) -> Result<()> {
    let is_core_id = core_id_arg.is_some_and(|c| (c as usize).checked_sub(n_buffer_args as usize) == Some(k));
    match (value, is_core_id) {
        (None, false) => Err(Error::Malformed {
            what: "launch vals",
            at: k as u64,
            reason: "null value outside the core_id_arg slot",
        }),
        (Some(_), true) => {
            Err(Error::Malformed { what: "launch vals", at: k as u64, reason: "core_id_arg slot must hold null" })
        }
        _ => Ok(()),
    }
}

/// Argument of a kernel launch: inside its buffer and at least as large as the parameter the
/// kernel declared for it (`param_bytes`), so the kernel cannot run past the view.
pub(crate) fn kernel_arg(a: ArgView, buffer_nbytes: Option<u64>, n_buffers: usize, param_bytes: u64) -> Result<()> {
    view("launch argument view", a, buffer_nbytes, n_buffers)?;
    if a.nbytes < param_bytes {
        return Err(Error::OutOfBounds {
            what: "kernel parameter footprint vs launch argument",
            offset: 0,
            len: param_bytes,
            limit: a.nbytes,
        });
    }
    Ok(())
}

/// A copy launch moves `dst.nbytes` bytes: both sides must be that long.
pub(crate) fn copy_sizes(dst: ArgView, src: ArgView) -> Result<()> {
    if dst.nbytes != src.nbytes {
        return Err(Error::Mismatch { what: "copy launch dst vs src nbytes", expected: dst.nbytes, found: src.nbytes });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(buffer: u32, offset: u64, nbytes: u64) -> ArgView {
        ArgView { buffer, offset, nbytes, dtype: DType::F32 }
    }

    #[test]
    fn views_must_end_inside_their_buffer_even_when_the_sum_overflows() {
        assert!(view("x", v(0, 256, 256), Some(512), 1).is_ok());
        assert!(matches!(view("x", v(0, 257, 256), Some(512), 1), Err(Error::OutOfBounds { offset: 257, .. })));
        assert!(matches!(view("x", v(0, u64::MAX, 2), Some(512), 1), Err(Error::OutOfBounds { .. })));
        assert!(matches!(
            view("x", v(3, 0, 1), None, 2),
            Err(Error::OutOfBounds { what: "buffer index", offset: 3, limit: 2, .. })
        ));
    }

    #[test]
    fn null_values_are_allowed_only_at_the_core_id_slot() {
        // 2 buffer args, core_id at argv slot 3 = vals[1].
        assert!(val(0, Some(5), 2, Some(3)).is_ok());
        assert!(val(1, None, 2, Some(3)).is_ok());
        assert!(val(1, Some(0), 2, Some(3)).is_err());
        assert!(val(0, None, 2, Some(3)).is_err());
        assert!(val(0, None, 2, None).is_err());
    }

    #[test]
    fn program_shape_rules() {
        let ok = ProgramShape { n_buffer_args: 2, n_params: 3, n_vars: 1, core_id_arg: Some(2), n_objects: 1 };
        assert!(program(&ok).is_ok());
        assert!(program(&ProgramShape { n_params: 4, ..ok }).is_err());
        assert!(program(&ProgramShape { core_id_arg: Some(1), ..ok }).is_err());
        assert!(program(&ProgramShape { core_id_arg: Some(3), ..ok }).is_err());
        assert!(program(&ProgramShape { n_objects: 0, ..ok }).is_err());
    }

    #[test]
    fn footprint_multiplies_and_refuses_overflow() {
        assert_eq!(footprint(DType::F32, [8u64, 32].into_iter()).unwrap(), 1024);
        assert_eq!(footprint(DType::F64, core::iter::empty()).unwrap(), 8);
        assert!(footprint(DType::F32, [u64::MAX, 2].into_iter()).is_err());
    }
}
