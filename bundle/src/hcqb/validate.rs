//! The rules [`Hcqb::parse`] checks after the sections are located: the whole file (header
//! strings, graph and image tables, shared stored bytes), each graph, and every record of a graph.

use zerocopy::byteorder::{LE, U32};

use super::raw::{self, NONE64, SectionKind};
use super::{Hcqb, LaunchRef, decode_arg, dtype, malformed, opt_u32, rec, sub, val};
use crate::{Arch, Loc, at, check};
use hcq::error::{Error, Result};

impl<'a> Hcqb<'a> {
    /// The whole file: the header's strings, the graph and image tables, then every graph
    /// (the rules of [`BundleModel::validate`](super::model::BundleModel::validate)), and that
    /// buffers sharing stored starting bytes (weights stored once for two graphs) agree on
    /// their size and element type.
    pub(super) fn validate_file(&self) -> Result<()> {
        let h = &self.meta;
        self.pools.req_str(h.model)?;
        self.pools.req_str(h.tinygrad_version)?;
        self.pools.str(h.level_x86_64)?;
        self.pools.str(h.level_aarch64)?;
        Arch::from_code(h.expected_from as u32)?;
        let mut prev: Option<u32> = None;
        for (k, im) in self.images.iter().enumerate() {
            let im = rec(im);
            let b = im.buffer.get();
            let pos = self.record_at(SectionKind::Images, k);
            if prev.is_some_and(|p| p >= b) {
                return Err(malformed("hcqb image table", pos, "images must be ascending by buffer, one per buffer"));
            }
            prev = Some(b);
            let buf = self.buffers.get(b as usize).ok_or(Error::OutOfBounds {
                what: "image buffer index",
                offset: b as u64,
                len: 1,
                limit: self.buffers.len() as u64,
            });
            buf.and_then(|buf| {
                let buf = rec(buf);
                let format = dtype(im.format)?;
                check::image(im.width.get(), im.height.get(), im.pitch.get(), format, buf.nbytes.get())?;
                check::image_format("buffer image format vs the buffer's dtype (codes)", format, dtype(buf.dtype)?)
            })
            .map_err(|e| at(e, Loc::Image(b as usize)))?;
        }
        self.validate_launch_images()?;
        for (a, x) in self.buffers.iter().enumerate() {
            let x = rec(x);
            if x.initial.offset.get() == NONE64 {
                continue;
            }
            for y in self.buffers.iter().skip(a + 1) {
                let y = rec(y);
                let same =
                    y.initial.offset.get() == x.initial.offset.get() && y.initial.len.get() == x.initial.len.get();
                if same && (y.nbytes.get() != x.nbytes.get() || y.dtype != x.dtype) {
                    return Err(at(
                        Error::Mismatch {
                            what: "hcqb buffers sharing stored bytes (weights stored once) declare different sizes",
                            expected: x.nbytes.get(),
                            found: y.nbytes.get(),
                        },
                        Loc::Buffer(a),
                    ));
                }
            }
        }
        if self.graphs.is_empty() {
            return self.validate();
        }
        let first = self.graph_view_checked(0)?;
        for g in 0..self.graphs.len() {
            let view = self.graph_view_checked(g)?;
            let r = rec(&self.graphs[g]);
            self.pools.req_str(r.name).map_err(|e| at(e, Loc::Graph(g)))?;
            Arch::from_code(r.expected_from as u32).map_err(|e| at(e, Loc::Graph(g)))?;
            check::graph_target(r.target, self.graphs.iter().map(|o| o.target), g).map_err(|e| at(e, Loc::Graph(g)))?;
            view.validate().map_err(|e| at(e, Loc::Graph(g)))?;
            check::same_counts(first.inputs.len(), view.inputs.len(), first.outputs.len(), view.outputs.len())
                .map_err(|e| at(e, Loc::Graph(g)))?;
            for k in 0..view.inputs.len() {
                let (a, b) = (first.try_tensor(SectionKind::Inputs, k)?, view.try_tensor(SectionKind::Inputs, k)?);
                check::same_tensor("graph input vs the first graph's", a.view, b.view)
                    .and_then(|()| check::same_shape(a.shape(), b.shape()))
                    .map_err(|e| at(at(e, Loc::Input(k)), Loc::Graph(g)))?;
            }
            for k in 0..view.outputs.len() {
                let (a, b) = (first.try_tensor(SectionKind::Outputs, k)?, view.try_tensor(SectionKind::Outputs, k)?);
                check::same_tensor("graph output vs the first graph's", a.view, b.view)
                    .and_then(|()| check::same_shape(a.shape(), b.shape()))
                    .map_err(|e| at(at(e, Loc::Output(k)), Loc::Graph(g)))?;
            }
        }
        Ok(())
    }

    /// The launch image table (2.1): ascending by (launch, argument), one record per argument;
    /// each names an argument of a kernel launch of the file, and its view lies inside that
    /// argument's view with the argument's dtype and a 64-byte aligned offset
    /// (`check::arg_image`). Launch indices are the file's (not a graph's).
    fn validate_launch_images(&self) -> Result<()> {
        let mut prev: Option<(u32, u32)> = None;
        for (k, im) in self.launch_images.iter().enumerate() {
            let im = rec(im);
            let (l, j) = (im.launch.get(), im.arg.get());
            let pos = self.record_at(SectionKind::LaunchImages, k);
            if prev.is_some_and(|p| p >= (l, j)) {
                return Err(malformed(
                    "hcqb launch image table",
                    pos,
                    "records must be ascending by (launch, argument), one per argument",
                ));
            }
            prev = Some((l, j));
            let r = (|| -> Result<()> {
                let launch = self.raw_launch(l as usize)?;
                if launch.launch.kind != raw::LAUNCH_KERNEL {
                    return Err(malformed("hcqb launch image table", pos, "an image view of a copy launch"));
                }
                let a = launch.args.get(j as usize).ok_or(Error::OutOfBounds {
                    what: "launch argument of an image view",
                    offset: j as u64,
                    len: 1,
                    limit: launch.args.len() as u64,
                })?;
                let view = decode_arg(a)?;
                check::arg_image(view, im.width.get(), im.height.get(), im.pitch.get(), dtype(im.format)?)
            })();
            r.map_err(|e| at(e, Loc::LaunchImage(l as usize, j as usize)))?;
        }
        Ok(())
    }

    /// Graph `g` as a view, its ranges checked.
    pub(super) fn graph_view_checked(&self, g: usize) -> Result<Hcqb<'a>> {
        let r = rec(self.graphs.get(g).ok_or(Error::OutOfBounds {
            what: "graph index",
            offset: g as u64,
            len: 1,
            limit: self.graphs.len() as u64,
        })?);
        fn part<'t, T>(what: &'static str, table: &'t [T], first: U32<LE>, len: U32<LE>) -> Result<&'t [T]> {
            sub(table, first, len).ok_or(Error::OutOfBounds {
                what,
                offset: first.get() as u64,
                len: len.get() as u64,
                limit: table.len() as u64,
            })
        }
        let mk = || -> Result<Hcqb<'a>> {
            let mut meta = self.meta;
            meta.expected_from = r.expected_from;
            Ok(Hcqb {
                meta,
                buffer_base: r.buffers_first.get(),
                launch_base: r.launches_first.get(),
                view_of: Some(g as u32),
                // a view is one graph, not a file of graphs: it has no graph table (its graph
                // ranges are the whole file's, not its own tables')
                graphs: &[],
                buffers: part("graph buffer range", self.buffers, r.buffers_first, r.buffers_len)?,
                inputs: part("graph input range", self.inputs, r.inputs_first, r.inputs_len)?,
                outputs: part("graph output range", self.outputs, r.outputs_first, r.outputs_len)?,
                programs: part("graph program range", self.programs, r.programs_first, r.programs_len)?,
                launches: part("graph launch range", self.launches, r.launches_first, r.launches_len)?,
                ..*self
            })
        };
        mk().map_err(|e| at(e, Loc::Graph(g)))
    }

    /// The rules of one graph (the whole file when it has no graph table).
    fn validate(&self) -> Result<()> {
        for i in 0..self.buffers.len() {
            self.try_buffer(i).map_err(|e| at(e, Loc::Buffer(i)))?;
        }
        for i in 0..self.inputs.len() {
            self.check_tensor(SectionKind::Inputs, i).map_err(|e| at(e, Loc::Input(i)))?;
        }
        for i in 0..self.outputs.len() {
            self.check_tensor(SectionKind::Outputs, i).map_err(|e| at(e, Loc::Output(i)))?;
        }
        for i in 0..self.programs.len() {
            self.check_program(i)?;
        }
        check::has_launches(self.launches.len())?;
        for i in 0..self.launches.len() {
            self.check_launch(i)?;
        }
        Ok(())
    }

    fn buffer_nbytes(&self, i: u32) -> Option<u64> {
        self.buffers.get(i as usize).map(|b| rec(b).nbytes.get())
    }

    fn check_tensor(&self, kind: SectionKind, i: usize) -> Result<()> {
        let t = self.try_tensor(kind, i)?;
        let bytes = check::footprint(t.view.dtype, t.shape())?;
        let expected = t.expected.map(|e| e.len() as u64);
        check::tensor(t.view, self.buffer_nbytes(t.view.buffer), self.buffers.len(), bytes, expected)
    }

    fn program_shape(&self, i: u32) -> Option<check::ProgramShape> {
        let p = rec(self.programs.get(i as usize)?);
        Some(check::ProgramShape {
            n_buffer_args: p.n_buffer_args.get(),
            n_params: p.params_len.get() as usize,
            n_vars: p.vars_len.get() as usize,
            core_id_arg: opt_u32(p.core_id_arg),
            n_objects: p.objects_len.get() as usize,
        })
    }

    fn check_program(&self, i: usize) -> Result<()> {
        let p = self.try_program(i).map_err(|e| at(e, Loc::Program(i)))?;
        for (j, raw_param) in p.params.iter().enumerate() {
            let param = p.param_at(raw_param).map_err(|e| at(e, Loc::Param(i, j)))?;
            check::param(j, param.slot, param.is_buffer, p.n_buffer_args)
                .and_then(|()| check::footprint(param.dtype, param.shape()).map(|_| ()))
                .map_err(|e| at(e, Loc::Param(i, j)))?;
        }
        for (j, v) in p.vars.iter().enumerate() {
            self.pools.req_str(*v).map_err(|e| at(e, Loc::Var(i, j)))?;
        }
        let mut seen = 0u32;
        for (j, o) in p.objects.iter().enumerate() {
            let o = rec(o);
            let arch = Arch::from_code(o.arch.get()).map_err(|e| at(e, Loc::Object(i, j)))?;
            if seen & (1 << arch.code()) != 0 {
                let rec = self.record_at(SectionKind::Programs, i);
                return Err(at(
                    malformed("hcqb program table", rec, "two objects for one architecture"),
                    Loc::Object(i, j),
                ));
            }
            seen |= 1 << arch.code();
            if self.pools.blob(o.blob).map_err(|e| at(e, Loc::Object(i, j)))?.is_none() {
                let rec = self.record_at(SectionKind::Programs, i);
                return Err(at(malformed("hcqb program table", rec, "object without bytes"), Loc::Object(i, j)));
            }
        }
        let shape = self.program_shape(i as u32).ok_or(Error::OutOfBounds {
            what: "program index",
            offset: i as u64,
            len: 1,
            limit: self.programs.len() as u64,
        })?;
        check::program(&shape).map_err(|e| at(e, Loc::Program(i)))
    }

    fn check_launch(&self, i: usize) -> Result<()> {
        let launch = self.try_launch(i).map_err(|e| at(e, Loc::Launch(i)))?;
        let n_buffers = self.buffers.len();
        let k = match launch {
            LaunchRef::Copy { dst, src } => {
                check::view("copy destination view", dst, self.buffer_nbytes(dst.buffer), n_buffers)
                    .map_err(|e| at(e, Loc::CopyDst(i)))?;
                check::view("copy source view", src, self.buffer_nbytes(src.buffer), n_buffers)
                    .map_err(|e| at(e, Loc::CopySrc(i)))?;
                return check::copy_sizes(dst, src).map_err(|e| at(e, Loc::Launch(i)));
            }
            LaunchRef::Kernel(k) => k,
        };
        let shape = check::KernelShape {
            n_args: k.args.len(),
            n_vals: k.vals.len(),
            core_id_arg: k.core_id_arg,
            global_size: k.global_size,
        };
        let ps = self.program_shape(k.program);
        check::kernel(k.program, &shape, ps.as_ref(), self.programs.len()).map_err(|e| at(e, Loc::Launch(i)))?;
        let p = self.try_program(k.program as usize).map_err(|e| at(e, Loc::Launch(i)))?;
        for (j, a) in k.args.iter().enumerate() {
            let arg = decode_arg(a).map_err(|e| at(e, Loc::LaunchArg(i, j)))?;
            let param_bytes = match p.params.get(j) {
                Some(raw_param) => p.param_at(raw_param).and_then(|param| check::footprint(param.dtype, param.shape())),
                None => Ok(0),
            };
            param_bytes
                .and_then(|pb| check::kernel_arg(arg, self.buffer_nbytes(arg.buffer), n_buffers, pb))
                .map_err(|e| at(e, Loc::LaunchArg(i, j)))?;
        }
        for (j, v) in k.vals.iter().enumerate() {
            check::val(j, val(v), p.n_buffer_args, p.core_id_arg).map_err(|e| at(e, Loc::LaunchVal(i, j)))?;
        }
        if let Some(gpu) = k.gpu {
            for (j, v) in gpu.vals.iter().enumerate() {
                if v.flags & raw::VAL_PRESENT == 0 {
                    return Err(at(
                        malformed("hcqb value table", j as u64, "GPU values cannot be null"),
                        Loc::GpuVal(i, j),
                    ));
                }
            }
        }
        Ok(())
    }
}
