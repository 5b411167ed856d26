//! The records of a parsed file as borrowed views ([`BufferRef`], [`ProgramRef`], [`LaunchRef`],
//! ...): what the accessors of [`Hcqb`](super::Hcqb) hand out.

use zerocopy::byteorder::{LE, U64};

use super::{Pools, arg_view, buffer_image, dtype, launch_image, raw, rec, val};
use crate::{Arch, ArgView, BufferRole, GraphTarget};
use hcq::dtype::DType;
use hcq::error::Result;

/// A base buffer of a parsed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferRef<'a> {
    /// Size in bytes.
    pub nbytes: u64,
    /// Declared element type.
    pub dtype: DType,
    /// What it holds.
    pub role: BufferRole,
    /// It also holds an output.
    pub also_output: bool,
    /// Starting bytes (at most `nbytes`; the rest starts zeroed).
    pub initial: Option<&'a [u8]>,
    /// The image it backs, if any.
    pub image: Option<ImageRef>,
}

/// The image a buffer backs (IMAGE-SCHEMA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// Texels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Bytes from one row to the next.
    pub pitch: u32,
    /// Channel type (`F16` or `F32`).
    pub format: DType,
}

/// A graph of a parsed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphRef<'a> {
    /// Name.
    pub name: &'a str,
    /// The devices it is for.
    pub target: GraphTarget,
    /// The architecture whose objects produced its expected outputs.
    pub expected_from: Arch,
    /// Number of buffers, inputs, outputs, programs and launches.
    pub counts: [u32; 5],
}

/// A model input or output of a parsed file.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    /// Where it sits.
    pub view: ArgView,
    /// Expected bytes after a run (outputs that have them; exactly `view.nbytes` long).
    pub expected: Option<&'a [u8]>,
    pub(super) shape: &'a [U64<LE>],
}

impl<'a> TensorRef<'a> {
    /// Row-major shape.
    pub fn shape(&self) -> impl ExactSizeIterator<Item = u64> + 'a {
        self.shape.iter().map(|d| rec(d).get())
    }
}

/// One signature parameter of a parsed file.
#[derive(Clone, Copy, Debug)]
pub struct ParamRef<'a> {
    /// Name, if recorded.
    pub name: Option<&'a str>,
    /// Slot (its position).
    pub slot: u32,
    /// Element or integer type.
    pub dtype: DType,
    /// A buffer pointer rather than an integer.
    pub is_buffer: bool,
    pub(super) shape: &'a [U64<LE>],
}

impl<'a> ParamRef<'a> {
    /// Declared shape (element count for buffers; empty for scalars).
    pub fn shape(&self) -> impl ExactSizeIterator<Item = u64> + 'a {
        self.shape.iter().map(|d| rec(d).get())
    }
}

/// A program of a parsed file.
#[derive(Clone, Copy, Debug)]
pub struct ProgramRef<'a> {
    /// Kernel name (not unique in a bundle).
    pub name: &'a str,
    /// Entry symbol.
    pub symbol: &'a str,
    /// Number of leading buffer parameters.
    pub n_buffer_args: u32,
    /// Slot of the thread index, if any.
    pub core_id_arg: Option<u32>,
    /// Opaque Adreno metadata (the v1 manifest's `adreno` object as JSON), if present.
    pub adreno: Option<&'a [u8]>,
    pub(super) pools: Pools<'a>,
    pub(super) params: &'a [raw::Param],
    pub(super) vars: &'a [raw::StrRef],
    pub(super) objects: &'a [raw::Object],
}

impl<'a> ProgramRef<'a> {
    pub(super) fn param_at(&self, p: &raw::Param) -> Result<ParamRef<'a>> {
        let p = rec(p);
        Ok(ParamRef {
            name: self.pools.str(p.name)?,
            slot: p.slot.get(),
            dtype: dtype(p.dtype)?,
            is_buffer: p.flags & raw::PARAM_IS_BUFFER != 0,
            shape: self.pools.dims(p.dims_first, p.dims_len)?,
        })
    }

    /// The signature, in slot order.
    pub fn params(&self) -> impl ExactSizeIterator<Item = ParamRef<'a>> + 'a {
        let this = *self;
        self.params.iter().map(move |p| {
            this.param_at(p).unwrap_or(ParamRef { name: None, slot: 0, dtype: DType::U8, is_buffer: false, shape: &[] })
        })
    }

    /// Number of signature parameters.
    pub fn n_params(&self) -> usize {
        self.params.len()
    }

    /// Names of the integer parameters, in order.
    pub fn vars(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let pools = self.pools;
        self.vars.iter().map(move |v| pools.req_str(*v).unwrap_or(""))
    }

    /// The object for `arch`, if the bundle has one.
    pub fn object(&self, arch: Arch) -> Option<&'a [u8]> {
        self.objects().find(|(a, _)| *a == arch).map(|(_, b)| b)
    }

    /// Every object with its architecture.
    pub fn objects(&self) -> impl Iterator<Item = (Arch, &'a [u8])> + 'a {
        let pools = self.pools;
        self.objects.iter().filter_map(move |o| {
            let o = rec(o);
            Some((Arch::from_code(o.arch.get()).ok()?, pools.blob(o.blob).ok()??))
        })
    }
}

/// A kernel launch of a parsed file.
#[derive(Clone, Copy, Debug)]
pub struct KernelRef<'a> {
    /// Program index.
    pub program: u32,
    /// Kernel name.
    pub name: &'a str,
    /// CPU grid; with `core_id_arg`, `global_size[0]` calls.
    pub global_size: [u32; 3],
    /// CPU local size (meaningless on CPU).
    pub local_size: [u32; 3],
    /// Slot of the thread index, if any.
    pub core_id_arg: Option<u32>,
    /// The Adreno grid, if present.
    pub gpu: Option<GpuRef<'a>>,
    pub(super) args: &'a [raw::Arg],
    pub(super) vals: &'a [raw::Val],
    /// This launch's records of the launch image table.
    pub(super) images: &'a [raw::LaunchImage],
    /// The file's buffer image table, and the index of this view's first buffer in it.
    pub(super) buffer_images: &'a [raw::Image],
    pub(super) buffer_base: u32,
}

impl<'a> KernelRef<'a> {
    /// The image view this launch names for argument `j` (`launches[].args[j].image`), if any.
    pub fn arg_image(&self, j: usize) -> Option<ImageRef> {
        let j = u32::try_from(j).ok()?;
        self.images.iter().find(|im| im.arg.get() == j).and_then(launch_image)
    }

    /// The image view argument `j` is bound under where the program binds it as an image: the
    /// launch's own ([`KernelRef::arg_image`]), else the one its buffer declares
    /// (`buffers[].image`, older bundles); `None` when neither says.
    pub fn image(&self, j: usize) -> Option<ImageRef> {
        self.arg_image(j).or_else(|| {
            let a = self.args.get(j)?;
            buffer_image(self.buffer_images, self.buffer_base, rec(a).buffer.get() as usize)
        })
    }

    /// Every image view this launch names: (argument, view), ascending by argument.
    pub fn images(&self) -> impl ExactSizeIterator<Item = (u32, ImageRef)> + 'a {
        self.images.iter().map(|im| {
            let view = launch_image(im).unwrap_or(ImageRef { width: 0, height: 0, pitch: 0, format: DType::U8 });
            (rec(im).arg.get(), view)
        })
    }

    /// Buffer arguments, one per buffer parameter.
    pub fn args(&self) -> impl ExactSizeIterator<Item = ArgView> + 'a {
        self.args.iter().map(arg_view)
    }

    /// Argument `j`.
    pub fn arg(&self, j: usize) -> Option<ArgView> {
        self.args.get(j).map(arg_view)
    }

    /// Number of arguments.
    pub fn n_args(&self) -> usize {
        self.args.len()
    }

    /// Integer values, one per var; `None` exactly at the `core_id_arg` slot.
    pub fn vals(&self) -> impl ExactSizeIterator<Item = Option<i64>> + 'a {
        self.vals.iter().map(val)
    }

    /// Indices of the arguments the kernel writes, ascending.
    pub fn outs(&self) -> impl Iterator<Item = u32> + 'a {
        self.args.iter().enumerate().filter(|(_, a)| a.flags & raw::ARG_OUT != 0).map(|(j, _)| j as u32)
    }

    /// Indices of the arguments the kernel reads, ascending.
    pub fn ins(&self) -> impl Iterator<Item = u32> + 'a {
        self.args.iter().enumerate().filter(|(_, a)| a.flags & raw::ARG_IN != 0).map(|(j, _)| j as u32)
    }
}

/// The Adreno dispatch of a kernel launch.
#[derive(Clone, Copy, Debug)]
pub struct GpuRef<'a> {
    /// Work-group count.
    pub global_size: [u32; 3],
    /// Work-group size.
    pub local_size: [u32; 3],
    pub(super) vals: &'a [raw::Val],
}

impl<'a> GpuRef<'a> {
    /// Integer arguments of the GPU kernel.
    pub fn vals(&self) -> impl ExactSizeIterator<Item = i64> + 'a {
        self.vals.iter().map(|v| v.value.get())
    }
}

/// One launch of a parsed file.
#[derive(Clone, Copy, Debug)]
pub enum LaunchRef<'a> {
    /// Call a program.
    Kernel(KernelRef<'a>),
    /// memcpy `dst.nbytes` bytes.
    Copy {
        /// Destination.
        dst: ArgView,
        /// Source.
        src: ArgView,
    },
}
