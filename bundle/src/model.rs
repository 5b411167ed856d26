//! [`BundleModel`]: an owned, validated in-memory bundle (everything a runtime needs to run one
//! forward pass), the meeting point of the v1 directory importer and the `.hcqb` writer/reader.
//!
//! The model is plain data with public fields; [`BundleModel::validate`] is the one place that
//! proves it consistent (every index in range, every view inside its buffer, launches matching
//! their programs). The importers call it; code that builds or edits a model by hand calls it
//! before running the model. Indices are list positions (buffer `i` is `buffers[i]`).

use alloc::string::String;
use alloc::vec::Vec;

use super::{Arch, ArgView, BufferRole, GraphTarget, Loc, at, check};
use hcq::dtype::DType;
use hcq::error::{Error, Result};

/// A whole bundle in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleModel {
    /// The model's name (`"mlp"`).
    pub name: String,
    /// Version of the interchange format it came from (`1` for `tg-cpu-bundle` v1).
    pub format_version: u32,
    /// tinygrad version that exported it (`"0.14.0"`).
    pub tinygrad_version: String,
    /// Lowest CPU each set of objects needs.
    pub arch_levels: ArchLevels,
    /// The architecture whose objects produced the expected outputs.
    pub expected_from: Arch,
    /// Base allocations; the index is the buffer id.
    pub buffers: Vec<Buffer>,
    /// The model's inputs; position `k` is input `k`.
    pub inputs: Vec<Input>,
    /// The model's outputs; position `k` is output `k`.
    pub outputs: Vec<Output>,
    /// One entry per distinct kernel; the index is the program id.
    pub programs: Vec<Program>,
    /// The forward pass, in execution order.
    pub launches: Vec<Launch>,
    /// The graphs, one per target (`hcqb` 2.0, `tg-cpu-bundle` version 2): each a range of the
    /// tables above, whose launches index programs and buffers relative to the graph's ranges.
    /// Empty: one graph of target [`GraphTarget::Any`] made of every table (older bundles).
    pub graphs: Vec<Graph>,
}

/// A `first .. first + len` range of one of a model's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// First record.
    pub first: u32,
    /// Number of records.
    pub len: u32,
}

impl Span {
    /// The whole of a table of `n` records.
    pub fn all(n: usize) -> Span {
        Span { first: 0, len: u32::try_from(n).unwrap_or(u32::MAX) }
    }

    /// The range as indices, if it lies inside a table of `n` records.
    pub fn range(self, n: usize) -> Option<core::ops::Range<usize>> {
        let first = self.first as usize;
        let end = first.checked_add(self.len as usize)?;
        (end <= n).then_some(first..end)
    }
}

/// One graph of a bundle: the model as one target's device runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// A name for messages (`"qcom"`, `"cpu"`).
    pub name: String,
    /// The devices it is for.
    pub target: GraphTarget,
    /// The architecture whose objects produced this graph's expected outputs.
    pub expected_from: Arch,
    /// Its base buffers (launch, input and output views index them from `buffers.first`).
    pub buffers: Span,
    /// Its inputs: as many as every other graph's, each of the same dtype and size.
    pub inputs: Span,
    /// Its outputs: as many as every other graph's, each of the same dtype and size.
    pub outputs: Span,
    /// Its programs (launches index them from `programs.first`).
    pub programs: Span,
    /// Its launches, in execution order.
    pub launches: Span,
}

/// An image view (IMAGE-SCHEMA): `height` rows of `width` RGBA texels of `format`, `pitch`
/// bytes apart; what it is a view of (a launch argument, or a whole buffer in older bundles)
/// holds at least `height × pitch` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    /// Texels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Bytes from one row to the next.
    pub pitch: u32,
    /// Element type of each of the four channels (`F16` or `F32`).
    pub format: DType,
}

/// Lowest CPU level each set of CPU objects needs (`"x86-64-v2"`, `"armv8-a"`). `None` means the
/// exporter did not say; such a bundle is treated as built for the exporting machine only
/// (as `"native"` is).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchLevels {
    /// Level of the x86-64 objects.
    pub x86_64: Option<String>,
    /// Level of the AArch64 objects.
    pub aarch64: Option<String>,
}

impl ArchLevels {
    /// The level recorded for `arch` (always `None` for GPU architectures).
    pub fn get(&self, arch: Arch) -> Option<&str> {
        match arch {
            Arch::X86_64 => self.x86_64.as_deref(),
            Arch::Aarch64 => self.aarch64.as_deref(),
            Arch::AdrenoA630 | Arch::AmdGfx1100 => None,
        }
    }

    /// True when the `arch` objects name a generic level (not missing, not `"native"`), so they
    /// run on any CPU that meets it.
    pub fn is_portable(&self, arch: Arch) -> bool {
        matches!(self.get(arch), Some(level) if level != "native")
    }
}

/// A base allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Size in bytes.
    pub nbytes: u64,
    /// Element type as the manifest declares it (`int8` for the scratch arena).
    pub dtype: DType,
    /// What the buffer holds.
    pub role: BufferRole,
    /// The buffer has another role but also holds an output.
    pub also_output: bool,
    /// Starting bytes (inputs and weights); at most `nbytes`, the rest starts zeroed.
    pub initial: Option<Vec<u8>>,
    /// The image view kernels bind this buffer as when their launch argument names none
    /// (`buffers[].image`, bundles before per-argument image views). Its `format` is the
    /// buffer's `dtype`.
    pub image: Option<Image>,
}

/// Where a model input sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The view of a base buffer that holds the input.
    pub view: ArgView,
    /// Row-major shape; its element count times the dtype size is `view.nbytes`.
    pub shape: Vec<u64>,
}

/// Where a model output sits, and what it should hold after a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The view of a base buffer that holds the output.
    pub view: ArgView,
    /// Row-major shape; its element count times the dtype size is `view.nbytes`.
    pub shape: Vec<u64>,
    /// The bytes the reference run produced (exactly `view.nbytes` long), if the bundle has them.
    pub expected: Option<Vec<u8>>,
}

/// One kernel: its machine code per architecture and its calling signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// Kernel name (`"r_8_64_32"`). Not unique in a bundle: identify programs by index.
    pub name: String,
    /// The function to call, a global function at `.text` offset 0 of the object.
    pub symbol: String,
    /// Parameters in slot order: `n_buffer_args` buffer pointers, then the integer `vars`.
    pub signature: Vec<Param>,
    /// How many leading slots are buffer pointers.
    pub n_buffer_args: u32,
    /// Names of the integer parameters, in order (`"core_id"`, ...).
    pub vars: Vec<String>,
    /// The slot (in signature numbering) that takes the thread index, if any.
    pub core_id_arg: Option<u32>,
    /// The object bytes per architecture.
    pub objects: Objects,
    /// The v1 manifest's `adreno` object (compact JSON bytes), kept opaque for a GPU backend.
    pub adreno: Option<Vec<u8>>,
}

/// A program's object bytes per architecture; at least one is present.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Objects {
    /// x86-64 ELF64 relocatable object.
    pub x86_64: Option<Vec<u8>>,
    /// AArch64 ELF64 relocatable object.
    pub aarch64: Option<Vec<u8>>,
    /// Adreno 630 shader blob.
    pub adreno_a630: Option<Vec<u8>>,
    /// AMD gfx1100 HSA code object (ELF64 with the kernel's descriptor).
    pub amd_gfx1100: Option<Vec<u8>>,
}

impl Objects {
    /// The object for `arch`, if the bundle has one.
    pub fn get(&self, arch: Arch) -> Option<&[u8]> {
        match arch {
            Arch::X86_64 => self.x86_64.as_deref(),
            Arch::Aarch64 => self.aarch64.as_deref(),
            Arch::AdrenoA630 => self.adreno_a630.as_deref(),
            Arch::AmdGfx1100 => self.amd_gfx1100.as_deref(),
        }
    }

    /// Set the object for `arch`.
    pub fn set(&mut self, arch: Arch, bytes: Option<Vec<u8>>) {
        match arch {
            Arch::X86_64 => self.x86_64 = bytes,
            Arch::Aarch64 => self.aarch64 = bytes,
            Arch::AdrenoA630 => self.adreno_a630 = bytes,
            Arch::AmdGfx1100 => self.amd_gfx1100 = bytes,
        }
    }

    /// How many architectures have an object.
    pub fn count(&self) -> usize {
        Arch::ALL.iter().filter(|&&a| self.get(a).is_some()).count()
    }
}

/// One parameter of a program's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Parameter name, if the exporter recorded one.
    pub name: Option<String>,
    /// Argument position (equals the parameter's index).
    pub slot: u32,
    /// Element type (buffers) or the integer type (vars, `int32`).
    pub dtype: DType,
    /// Element count the kernel declared for a buffer (usually one dimension); empty for scalars.
    pub shape: Vec<u64>,
    /// A buffer pointer (the first `n_buffer_args` slots) rather than an integer.
    pub is_buffer: bool,
}

/// One step of the forward pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Call a program.
    Kernel(KernelLaunch),
    /// memcpy `dst.nbytes` bytes from `src` to `dst`.
    Copy {
        /// Destination view.
        dst: ArgView,
        /// Source view (same length).
        src: ArgView,
    },
}

/// A kernel call: `argv = [base(arg.buffer) + arg.offset for arg in args] + vals`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelLaunch {
    /// Index of the program.
    pub program: u32,
    /// Kernel name (informational).
    pub name: String,
    /// CPU grid; with `core_id_arg`, `global_size[0]` is the number of calls.
    pub global_size: [u32; 3],
    /// Meaningless on CPU; kept for completeness.
    pub local_size: [u32; 3],
    /// Buffer arguments, one per buffer parameter of the program.
    pub args: Vec<ArgView>,
    /// Integer arguments, one per program var; `None` exactly at the `core_id_arg` slot.
    pub vals: Vec<Option<i64>>,
    /// The argv slot that takes the thread index (equal to the program's).
    pub core_id_arg: Option<u32>,
    /// Indices into `args` that the kernel writes (ascending, no repeats).
    pub outs: Vec<u32>,
    /// Indices into `args` that the kernel reads (ascending, no repeats).
    pub ins: Vec<u32>,
    /// The launch grid of the program's GPU compilation, when the bundle has one.
    pub gpu: Option<GpuLaunch>,
    /// The image views this launch binds (`launches[].args[j].image`), ascending by argument,
    /// at most one per argument: an image view belongs to a launch, not to a buffer (one buffer
    /// may be bound under several views by different launches, and as a plain buffer by others).
    pub images: Vec<ArgImage>,
}

/// The image view a kernel launch binds at one of its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgImage {
    /// Index into the launch's `args`.
    pub arg: u32,
    /// The view: inside the argument's view, of the argument's dtype, its offset 64-byte aligned.
    pub image: Image,
}

impl KernelLaunch {
    /// The image view this launch gives argument `arg`, if it names one.
    pub fn image_of(&self, arg: u32) -> Option<Image> {
        self.images.iter().find(|im| im.arg == arg).map(|im| im.image)
    }
}

/// The Adreno dispatch of a kernel launch (a separate compilation with its own grid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuLaunch {
    /// Number of work-groups in x, y, z.
    pub global_size: [u32; 3],
    /// Work-group size in threads.
    pub local_size: [u32; 3],
    /// Integer arguments of the GPU kernel.
    pub vals: Vec<i64>,
}

impl Program {
    pub(crate) fn shape(&self) -> check::ProgramShape {
        check::ProgramShape {
            n_buffer_args: self.n_buffer_args,
            n_params: self.signature.len(),
            n_vars: self.vars.len(),
            core_id_arg: self.core_id_arg,
            n_objects: self.objects.count(),
        }
    }
}

fn ascending_indices(what: &'static str, list: &[u32], n_args: usize) -> Result<()> {
    let mut prev: Option<u32> = None;
    for (k, &i) in list.iter().enumerate() {
        if i as usize >= n_args {
            return Err(Error::OutOfBounds { what, offset: i as u64, len: 1, limit: n_args as u64 });
        }
        if prev.is_some_and(|p| p >= i) {
            return Err(Error::Malformed { what, at: k as u64, reason: "indices must be ascending without repeats" });
        }
        prev = Some(i);
    }
    Ok(())
}

impl BundleModel {
    fn buffer_nbytes(&self, i: u32) -> Option<u64> {
        self.buffers.get(i as usize).map(|b| b.nbytes)
    }

    /// Check that the model is consistent, so that running it cannot touch memory outside its
    /// buffers: every index is in range; every launch argument, copy view, input and output
    /// lies inside its buffer (checked arithmetic); a kernel has one argument per buffer
    /// parameter (each at least as large as the parameter's declared shape) and one value per
    /// var, with `None` exactly at the `core_id_arg` slot; signatures list buffers first, in
    /// slot order; initial data fits its buffer; expected outputs are exactly as long as their
    /// views; copies move equal lengths; every graph has a launch; a buffer's image has the
    /// buffer's dtype as its format; a launch's image view (ascending by argument, one per
    /// argument) lies inside its argument's view, has the argument's dtype as its format and a
    /// 64-byte aligned offset. One buffer may be several arguments of one launch.
    ///
    /// The error names the place: `"launch 3 arg 1: launch argument view: access of ..."`.
    pub fn validate(&self) -> Result<()> {
        if self.graphs.is_empty() {
            return self.validate_graph();
        }
        for (g, gr) in self.graphs.iter().enumerate() {
            let spans = [
                ("graph buffer range", gr.buffers, self.buffers.len()),
                ("graph input range", gr.inputs, self.inputs.len()),
                ("graph output range", gr.outputs, self.outputs.len()),
                ("graph program range", gr.programs, self.programs.len()),
                ("graph launch range", gr.launches, self.launches.len()),
            ];
            for (what, span, n) in spans {
                check::span(what, span.first, span.len, n).map_err(|e| at(e, Loc::Graph(g)))?;
            }
            check::graph_target(gr.target.code(), self.graphs.iter().map(|o| o.target.code()), g)
                .map_err(|e| at(e, Loc::Graph(g)))?;
        }
        let first = self.graph_model(0)?;
        for g in 0..self.graphs.len() {
            let m = if g == 0 { first.clone() } else { self.graph_model(g)? };
            m.validate_graph().map_err(|e| at(e, Loc::Graph(g)))?;
            check::same_counts(first.inputs.len(), m.inputs.len(), first.outputs.len(), m.outputs.len())
                .map_err(|e| at(e, Loc::Graph(g)))?;
            for (k, (a, b)) in first.inputs.iter().zip(&m.inputs).enumerate() {
                check::same_tensor("graph input vs the first graph's", a.view, b.view)
                    .and_then(|()| check::same_shape(a.shape.iter().copied(), b.shape.iter().copied()))
                    .map_err(|e| at(at(e, Loc::Input(k)), Loc::Graph(g)))?;
            }
            for (k, (a, b)) in first.outputs.iter().zip(&m.outputs).enumerate() {
                check::same_tensor("graph output vs the first graph's", a.view, b.view)
                    .and_then(|()| check::same_shape(a.shape.iter().copied(), b.shape.iter().copied()))
                    .map_err(|e| at(at(e, Loc::Output(k)), Loc::Graph(g)))?;
            }
        }
        Ok(())
    }

    /// Graph `g` as a model of its own (one implicit graph; indices as the graph's launches
    /// use them). A model without graphs has one: itself (`g == 0`).
    pub fn graph_model(&self, g: usize) -> Result<BundleModel> {
        if self.graphs.is_empty() && g == 0 {
            return Ok(self.clone());
        }
        let gr = self.graphs.get(g).ok_or(Error::OutOfBounds {
            what: "graph index",
            offset: g as u64,
            len: 1,
            limit: self.graphs.len() as u64,
        })?;
        let pick = |what: &'static str, span: Span, n: usize| {
            span.range(n).ok_or(Error::OutOfBounds {
                what,
                offset: span.first as u64,
                len: span.len as u64,
                limit: n as u64,
            })
        };
        let b = pick("graph buffer range", gr.buffers, self.buffers.len())?;
        let i = pick("graph input range", gr.inputs, self.inputs.len())?;
        let o = pick("graph output range", gr.outputs, self.outputs.len())?;
        let p = pick("graph program range", gr.programs, self.programs.len())?;
        let l = pick("graph launch range", gr.launches, self.launches.len())?;
        Ok(BundleModel {
            name: self.name.clone(),
            format_version: self.format_version,
            tinygrad_version: self.tinygrad_version.clone(),
            arch_levels: self.arch_levels.clone(),
            expected_from: gr.expected_from,
            buffers: self.buffers[b].to_vec(),
            inputs: self.inputs[i].to_vec(),
            outputs: self.outputs[o].to_vec(),
            programs: self.programs[p].to_vec(),
            launches: self.launches[l].to_vec(),
            graphs: Vec::new(),
        })
    }

    /// The rules of one graph (every index relative to it).
    fn validate_graph(&self) -> Result<()> {
        let n_buffers = self.buffers.len();
        for (i, b) in self.buffers.iter().enumerate() {
            if let Some(data) = &b.initial {
                check::initial(data.len() as u64, b.nbytes).map_err(|e| at(e, Loc::Buffer(i)))?;
            }
            if let Some(im) = b.image {
                check::image(im.width, im.height, im.pitch, im.format, b.nbytes)
                    .and_then(|()| {
                        check::image_format("buffer image format vs the buffer's dtype (codes)", im.format, b.dtype)
                    })
                    .map_err(|e| at(e, Loc::Image(i)))?;
            }
        }
        for (i, t) in self.inputs.iter().enumerate() {
            let bytes = check::footprint(t.view.dtype, t.shape.iter().copied());
            bytes
                .and_then(|bytes| check::tensor(t.view, self.buffer_nbytes(t.view.buffer), n_buffers, bytes, None))
                .map_err(|e| at(e, Loc::Input(i)))?;
        }
        for (i, t) in self.outputs.iter().enumerate() {
            let expected = t.expected.as_ref().map(|e| e.len() as u64);
            let bytes = check::footprint(t.view.dtype, t.shape.iter().copied());
            bytes
                .and_then(|bytes| check::tensor(t.view, self.buffer_nbytes(t.view.buffer), n_buffers, bytes, expected))
                .map_err(|e| at(e, Loc::Output(i)))?;
        }
        for (i, p) in self.programs.iter().enumerate() {
            check::program(&p.shape()).map_err(|e| at(e, Loc::Program(i)))?;
            for (j, param) in p.signature.iter().enumerate() {
                check::param(j, param.slot, param.is_buffer, p.n_buffer_args)
                    .and_then(|()| check::footprint(param.dtype, param.shape.iter().copied()).map(|_| ()))
                    .map_err(|e| at(e, Loc::Param(i, j)))?;
            }
        }
        check::has_launches(self.launches.len())?;
        for (i, launch) in self.launches.iter().enumerate() {
            match launch {
                Launch::Kernel(k) => self.validate_kernel(i, k)?,
                Launch::Copy { dst, src } => {
                    check::view("copy destination view", *dst, self.buffer_nbytes(dst.buffer), n_buffers)
                        .map_err(|e| at(e, Loc::CopyDst(i)))?;
                    check::view("copy source view", *src, self.buffer_nbytes(src.buffer), n_buffers)
                        .map_err(|e| at(e, Loc::CopySrc(i)))?;
                    check::copy_sizes(*dst, *src).map_err(|e| at(e, Loc::Launch(i)))?;
                }
            }
        }
        Ok(())
    }

    fn validate_kernel(&self, i: usize, k: &KernelLaunch) -> Result<()> {
        let program = self.programs.get(k.program as usize);
        let shape = program.map(Program::shape);
        let ks = check::KernelShape {
            n_args: k.args.len(),
            n_vals: k.vals.len(),
            core_id_arg: k.core_id_arg,
            global_size: k.global_size,
        };
        check::kernel(k.program, &ks, shape.as_ref(), self.programs.len()).map_err(|e| at(e, Loc::Launch(i)))?;
        // `check::kernel` proved the program exists.
        let Some(p) = program else { return Ok(()) };
        for (j, a) in k.args.iter().enumerate() {
            let param_bytes = match p.signature.get(j) {
                Some(param) => check::footprint(param.dtype, param.shape.iter().copied()),
                None => Ok(0),
            };
            param_bytes
                .and_then(|pb| check::kernel_arg(*a, self.buffer_nbytes(a.buffer), self.buffers.len(), pb))
                .map_err(|e| at(e, Loc::LaunchArg(i, j)))?;
        }
        for (j, v) in k.vals.iter().enumerate() {
            check::val(j, *v, p.n_buffer_args, p.core_id_arg).map_err(|e| at(e, Loc::LaunchVal(i, j)))?;
        }
        let mut prev: Option<u32> = None;
        for im in &k.images {
            let j = im.arg as usize;
            let a = k.args.get(j).ok_or(Error::OutOfBounds {
                what: "launch argument of an image view",
                offset: im.arg as u64,
                len: 1,
                limit: k.args.len() as u64,
            });
            let ordered = match prev {
                Some(p) if p >= im.arg => Err(Error::Malformed {
                    what: "launch image views",
                    at: im.arg as u64,
                    reason: "must be ascending by argument, one per argument",
                }),
                _ => Ok(()),
            };
            prev = Some(im.arg);
            ordered
                .and(a)
                .and_then(|a| {
                    let v = im.image;
                    check::arg_image(*a, v.width, v.height, v.pitch, v.format)
                })
                .map_err(|e| at(e, Loc::LaunchImage(i, j)))?;
        }
        ascending_indices("launch outs", &k.outs, k.args.len()).map_err(|e| at(e, Loc::Launch(i)))?;
        ascending_indices("launch ins", &k.ins, k.args.len()).map_err(|e| at(e, Loc::Launch(i)))?;
        Ok(())
    }

    /// The program a kernel launch calls, with the launch (a convenience for runtimes).
    pub fn kernel_launches(&self) -> impl Iterator<Item = (&KernelLaunch, &Program)> {
        self.launches.iter().filter_map(|l| match l {
            Launch::Kernel(k) => self.programs.get(k.program as usize).map(|p| (k, p)),
            Launch::Copy { .. } => None,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    pub(crate) use crate::testing::tiny;

    fn kernel(m: &mut BundleModel, i: usize) -> &mut KernelLaunch {
        match &mut m.launches[i] {
            Launch::Kernel(k) => k,
            Launch::Copy { .. } => panic!("launch {i} is a copy"),
        }
    }

    #[test]
    fn the_tiny_model_is_valid() {
        tiny().validate().unwrap();
    }

    #[test]
    fn a_launch_argument_past_its_buffer_is_named_by_launch_and_arg() {
        let mut m = tiny();
        kernel(&mut m, 0).args[1].offset = 8;
        let e = m.validate().unwrap_err();
        assert_eq!(e.to_string().split(':').next(), Some("launch 0 arg 1"), "{e}");
        assert!(matches!(e.root(), Error::OutOfBounds { offset: 8, len: 16, limit: 16, .. }), "{e}");
    }

    #[test]
    fn an_offset_that_overflows_is_out_of_bounds_not_a_panic() {
        let mut m = tiny();
        kernel(&mut m, 0).args[0].offset = u64::MAX - 4;
        assert!(matches!(m.validate().unwrap_err().root(), Error::OutOfBounds { .. }));
    }

    #[test]
    fn a_buffer_index_out_of_range_is_refused() {
        let mut m = tiny();
        kernel(&mut m, 1).args[0].buffer = 3;
        let e = m.validate().unwrap_err();
        assert!(e.to_string().starts_with("launch 1 arg 0"), "{e}");
        assert!(matches!(e.root(), Error::OutOfBounds { what: "buffer index", offset: 3, limit: 3, .. }));
    }

    #[test]
    fn argument_and_value_counts_must_match_the_program() {
        let mut m = tiny();
        kernel(&mut m, 0).args.pop();
        assert!(matches!(m.validate().unwrap_err().root(), Error::Mismatch { expected: 2, found: 1, .. }));
        let mut m = tiny();
        kernel(&mut m, 1).vals.push(Some(1));
        assert!(matches!(m.validate().unwrap_err().root(), Error::Mismatch { expected: 2, found: 3, .. }));
    }

    #[test]
    fn core_id_slot_must_be_null_and_only_it() {
        let mut m = tiny();
        kernel(&mut m, 1).vals = vec![Some(-3), Some(0)];
        let e = m.validate().unwrap_err();
        assert!(e.to_string().starts_with("launch 1 val 1"), "{e}");
        let mut m = tiny();
        kernel(&mut m, 1).vals = vec![None, None];
        assert!(m.validate().unwrap_err().to_string().starts_with("launch 1 val 0"));
        let mut m = tiny();
        kernel(&mut m, 1).core_id_arg = None;
        assert!(matches!(m.validate().unwrap_err().root(), Error::Mismatch { .. }));
        let mut m = tiny();
        kernel(&mut m, 1).global_size[0] = 0;
        assert!(matches!(m.validate().unwrap_err().root(), Error::InvalidArgument { .. }));
    }

    #[test]
    fn an_argument_smaller_than_the_declared_parameter_is_refused() {
        let mut m = tiny();
        kernel(&mut m, 0).args[0].nbytes = 12;
        let e = m.validate().unwrap_err();
        assert!(matches!(e.root(), Error::OutOfBounds { len: 16, limit: 12, .. }), "{e}");
    }

    #[test]
    fn data_lengths_are_checked() {
        let mut m = tiny();
        m.buffers[0].initial = Some(vec![0; 17]);
        assert!(m.validate().unwrap_err().to_string().starts_with("buffer 0"));
        let mut m = tiny();
        m.outputs[0].expected = Some(vec![0; 15]);
        assert!(matches!(m.validate().unwrap_err().root(), Error::Mismatch { expected: 16, found: 15, .. }));
        let mut m = tiny();
        m.inputs[0].shape = vec![5];
        assert!(m.validate().unwrap_err().to_string().starts_with("input 0"));
    }

    #[test]
    fn copies_need_equal_lengths_and_in_range_views() {
        let mut m = tiny();
        if let Launch::Copy { src, .. } = &mut m.launches[2] {
            src.nbytes = 8;
        }
        assert!(matches!(m.validate().unwrap_err().root(), Error::Mismatch { expected: 16, found: 8, .. }));
        let mut m = tiny();
        if let Launch::Copy { dst, .. } = &mut m.launches[2] {
            dst.offset = 4;
        }
        assert!(m.validate().unwrap_err().to_string().starts_with("launch 2 (copy) dst"));
    }

    #[test]
    fn signatures_list_buffers_first_in_slot_order() {
        let mut m = tiny();
        m.programs[1].signature[1].slot = 2;
        assert!(m.validate().unwrap_err().to_string().starts_with("program 1 parameter 1"));
        let mut m = tiny();
        m.programs[1].signature[1].is_buffer = true;
        assert!(m.validate().is_err());
        let mut m = tiny();
        m.programs[0].objects = Objects::default();
        assert!(m.validate().unwrap_err().to_string().starts_with("program 0"));
    }

    #[test]
    fn outs_and_ins_are_ascending_indices_into_args() {
        let mut m = tiny();
        kernel(&mut m, 0).ins = vec![2];
        assert!(matches!(m.validate().unwrap_err().root(), Error::OutOfBounds { what: "launch ins", .. }));
        let mut m = tiny();
        kernel(&mut m, 0).outs = vec![1, 0];
        assert!(matches!(m.validate().unwrap_err().root(), Error::Malformed { what: "launch outs", .. }));
    }

    #[test]
    fn portability_follows_the_recorded_level() {
        let m = tiny();
        assert!(m.arch_levels.is_portable(Arch::X86_64));
        assert!(!m.arch_levels.is_portable(Arch::Aarch64));
        let native = ArchLevels { x86_64: Some("native".to_string()), aarch64: None };
        assert!(!native.is_portable(Arch::X86_64));
    }
}
