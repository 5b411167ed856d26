//! Packing a [`BundleModel`] into `.hcqb` bytes, and unpacking a parsed file back into a model.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use zerocopy::IntoBytes;
use zerocopy::byteorder::{I64, LE, U16, U32, U64};

use super::raw::{self, NONE32, NONE64, SECTION_COUNT, SectionKind};
use super::{Hcqb, LaunchRef};
use crate::crc::crc32;
use crate::model::{
    ArchLevels, ArgImage, Buffer, BundleModel, GpuLaunch, Graph, Image, Input, KernelLaunch, Launch, Objects, Output,
    Param, Program, Span,
};
use crate::{Arch, ArgView};
use hcq::error::{Error, Result};

fn u32_of(what: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).ok().filter(|&v| v != NONE32).ok_or(Error::OutOfSpace {
        what,
        requested: n as u64,
        capacity: NONE32 as u64 - 1,
    })
}

fn le32(v: u32) -> U32<LE> {
    U32::new(v)
}

fn le64(v: u64) -> U64<LE> {
    U64::new(v)
}

fn dims3(v: [u32; 3]) -> [U32<LE>; 3] {
    [le32(v[0]), le32(v[1]), le32(v[2])]
}

#[derive(Default)]
struct Builder<'m> {
    strings: Vec<u8>,
    string_index: BTreeMap<&'m str, raw::StrRef>,
    data: Vec<u8>,
    blob_index: BTreeMap<&'m [u8], raw::BlobRef>,
    /// Buffers' starting bytes are shared only between buffers of equal size and dtype (the
    /// reader refuses a shared blob declared with two sizes).
    buffer_blobs: BTreeMap<(&'m [u8], u64, u8), raw::BlobRef>,
    dims: Vec<U64<LE>>,
    buffers: Vec<raw::Buffer>,
    inputs: Vec<raw::View>,
    outputs: Vec<raw::View>,
    programs: Vec<raw::Program>,
    params: Vec<raw::Param>,
    vars: Vec<raw::StrRef>,
    objects: Vec<raw::Object>,
    launches: Vec<raw::Launch>,
    args: Vec<raw::Arg>,
    vals: Vec<raw::Val>,
    graphs: Vec<raw::Graph>,
    images: Vec<raw::Image>,
    launch_images: Vec<raw::LaunchImage>,
}

impl<'m> Builder<'m> {
    /// Intern a string (equal strings share bytes).
    fn str(&mut self, s: &'m str) -> Result<raw::StrRef> {
        if let Some(r) = self.string_index.get(s) {
            return Ok(*r);
        }
        let r = raw::StrRef {
            offset: le32(u32_of("hcqb string section", self.strings.len())?),
            len: le32(u32_of("hcqb string length", s.len())?),
        };
        u32_of("hcqb string section", self.strings.len() + s.len())?;
        self.strings.extend_from_slice(s.as_bytes());
        self.string_index.insert(s, r);
        Ok(r)
    }

    fn opt_str(&mut self, s: Option<&'m str>) -> Result<raw::StrRef> {
        match s {
            Some(s) => self.str(s),
            None => Ok(raw::StrRef { offset: le32(NONE32), len: le32(0) }),
        }
    }

    /// Add a blob at a 16-byte aligned offset of the data section (equal blobs share bytes).
    fn blob(&mut self, b: Option<&'m [u8]>) -> raw::BlobRef {
        let Some(b) = b else { return raw::BlobRef { offset: le64(NONE64), len: le64(0) } };
        if let Some(r) = self.blob_index.get(b) {
            return *r;
        }
        let start = self.data.len().next_multiple_of(raw::WRITER_ALIGN);
        self.data.resize(start, 0);
        self.data.extend_from_slice(b);
        let r = raw::BlobRef { offset: le64(start as u64), len: le64(b.len() as u64) };
        self.blob_index.insert(b, r);
        r
    }

    /// A buffer's starting bytes: stored once for every buffer of the same bytes, size and dtype.
    fn buffer_blob(&mut self, buf: &'m Buffer) -> raw::BlobRef {
        let Some(b) = buf.initial.as_deref() else { return self.blob(None) };
        let key = (b, buf.nbytes, buf.dtype.code());
        if let Some(r) = self.buffer_blobs.get(&key) {
            return *r;
        }
        let start = self.data.len().next_multiple_of(raw::WRITER_ALIGN);
        self.data.resize(start, 0);
        self.data.extend_from_slice(b);
        let r = raw::BlobRef { offset: le64(start as u64), len: le64(b.len() as u64) };
        self.buffer_blobs.insert(key, r);
        r
    }

    fn dims(&mut self, shape: &[u64]) -> Result<(U32<LE>, U32<LE>)> {
        let first = u32_of("hcqb dims section", self.dims.len())?;
        self.dims.extend(shape.iter().map(|&d| le64(d)));
        u32_of("hcqb dims section", self.dims.len())?;
        Ok((le32(first), le32(u32_of("hcqb shape rank", shape.len())?)))
    }

    fn view(&mut self, view: &ArgView, shape: &[u64], expected: Option<&'m [u8]>) -> Result<raw::View> {
        let (dims_first, dims_len) = self.dims(shape)?;
        Ok(raw::View {
            buffer: le32(view.buffer),
            dtype: view.dtype.code(),
            reserved: [0; 3],
            offset: le64(view.offset),
            nbytes: le64(view.nbytes),
            dims_first,
            dims_len,
            expected: self.blob(expected),
        })
    }

    fn arg(&mut self, a: &ArgView, flags: u8) {
        self.args.push(raw::Arg {
            buffer: le32(a.buffer),
            dtype: a.dtype.code(),
            flags,
            reserved: [0; 2],
            offset: le64(a.offset),
            nbytes: le64(a.nbytes),
        });
    }

    fn val(&mut self, v: Option<i64>) {
        self.vals.push(raw::Val {
            value: I64::new(v.unwrap_or(0)),
            flags: if v.is_some() { raw::VAL_PRESENT } else { 0 },
            reserved: [0; 7],
        });
    }

    fn program(&mut self, p: &'m Program) -> Result<raw::Program> {
        let params_first = u32_of("hcqb parameter table", self.params.len())?;
        for param in &p.signature {
            let name = self.opt_str(param.name.as_deref())?;
            let (dims_first, dims_len) = self.dims(&param.shape)?;
            self.params.push(raw::Param {
                name,
                slot: le32(param.slot),
                dtype: param.dtype.code(),
                flags: if param.is_buffer { raw::PARAM_IS_BUFFER } else { 0 },
                reserved: [0; 2],
                dims_first,
                dims_len,
            });
        }
        let vars_first = u32_of("hcqb var table", self.vars.len())?;
        for v in &p.vars {
            let r = self.str(v)?;
            self.vars.push(r);
        }
        let objects_first = u32_of("hcqb object table", self.objects.len())?;
        for arch in Arch::ALL {
            if let Some(bytes) = p.objects.get(arch) {
                let blob = self.blob(Some(bytes));
                self.objects.push(raw::Object { arch: le32(arch.code() as u32), reserved: le32(0), blob });
            }
        }
        Ok(raw::Program {
            name: self.str(&p.name)?,
            symbol: self.str(&p.symbol)?,
            n_buffer_args: le32(p.n_buffer_args),
            core_id_arg: le32(p.core_id_arg.unwrap_or(NONE32)),
            params_first: le32(params_first),
            params_len: le32(u32_of("hcqb signature length", p.signature.len())?),
            vars_first: le32(vars_first),
            vars_len: le32(u32_of("hcqb var count", p.vars.len())?),
            objects_first: le32(objects_first),
            objects_len: le32(u32_of("hcqb object count", p.objects.count())?),
            adreno: self.blob(p.adreno.as_deref()),
        })
    }

    fn launch(&mut self, index: usize, l: &'m Launch) -> Result<raw::Launch> {
        let zero3 = [le32(0); 3];
        let args_first = u32_of("hcqb argument table", self.args.len())?;
        let vals_first = u32_of("hcqb value table", self.vals.len())?;
        match l {
            Launch::Copy { dst, src } => {
                self.arg(dst, raw::ARG_OUT);
                self.arg(src, raw::ARG_IN);
                Ok(raw::Launch {
                    kind: raw::LAUNCH_COPY,
                    flags: 0,
                    reserved0: [0; 2],
                    program: le32(NONE32),
                    name: self.opt_str(None)?,
                    global_size: zero3,
                    local_size: zero3,
                    args_first: le32(args_first),
                    args_len: le32(2),
                    vals_first: le32(vals_first),
                    vals_len: le32(0),
                    core_id_arg: le32(NONE32),
                    gpu_global_size: zero3,
                    gpu_local_size: zero3,
                    gpu_vals_first: le32(vals_first),
                    gpu_vals_len: le32(0),
                    reserved1: le32(0),
                })
            }
            Launch::Kernel(k) => {
                for (j, a) in k.args.iter().enumerate() {
                    let j = j as u32;
                    let out = if k.outs.contains(&j) { raw::ARG_OUT } else { 0 };
                    let inp = if k.ins.contains(&j) { raw::ARG_IN } else { 0 };
                    self.arg(a, out | inp);
                }
                for im in &k.images {
                    self.launch_images.push(raw::LaunchImage {
                        launch: le32(u32_of("hcqb launch table", index)?),
                        arg: le32(im.arg),
                        width: le32(im.image.width),
                        height: le32(im.image.height),
                        pitch: le32(im.image.pitch),
                        format: im.image.format.code(),
                        reserved: [0; 3],
                    });
                }
                for v in &k.vals {
                    self.val(*v);
                }
                let gpu_vals_first = u32_of("hcqb value table", self.vals.len())?;
                if let Some(g) = &k.gpu {
                    for v in &g.vals {
                        self.val(Some(*v));
                    }
                }
                u32_of("hcqb argument table", self.args.len())?;
                u32_of("hcqb value table", self.vals.len())?;
                Ok(raw::Launch {
                    kind: raw::LAUNCH_KERNEL,
                    flags: if k.gpu.is_some() { raw::LAUNCH_HAS_GPU } else { 0 },
                    reserved0: [0; 2],
                    program: le32(k.program),
                    name: self.str(&k.name)?,
                    global_size: dims3(k.global_size),
                    local_size: dims3(k.local_size),
                    args_first: le32(args_first),
                    args_len: le32(u32_of("hcqb argument count", k.args.len())?),
                    vals_first: le32(vals_first),
                    vals_len: le32(u32_of("hcqb value count", k.vals.len())?),
                    core_id_arg: le32(k.core_id_arg.unwrap_or(NONE32)),
                    gpu_global_size: dims3(k.gpu.as_ref().map_or([0; 3], |g| g.global_size)),
                    gpu_local_size: dims3(k.gpu.as_ref().map_or([0; 3], |g| g.local_size)),
                    gpu_vals_first: le32(gpu_vals_first),
                    gpu_vals_len: le32(u32_of("hcqb value count", k.gpu.as_ref().map_or(0, |g| g.vals.len()))?),
                    reserved1: le32(0),
                })
            }
        }
    }
}

/// Pack `model` into `.hcqb` bytes: sections in [`SectionKind`] order after the header, each
/// and every blob 16-byte aligned, equal strings and equal blobs stored once, all CRCs set.
///
/// This is a serializer, not a validator: it writes what it is given (so tests can make files
/// that [`Hcqb::parse`] must refuse). Call [`BundleModel::validate`] first for a model you built
/// by hand; the v1 importer already has. Fails only with [`Error::OutOfSpace`] when a table
/// outgrows its 32-bit indices.
pub fn write(model: &BundleModel) -> Result<Vec<u8>> {
    let mut b = Builder::default();
    for (i, buf) in model.buffers.iter().enumerate() {
        let initial = b.buffer_blob(buf);
        if let Some(im) = buf.image {
            b.images.push(raw::Image {
                buffer: le32(u32_of("hcqb buffer table", i)?),
                width: le32(im.width),
                height: le32(im.height),
                pitch: le32(im.pitch),
                format: im.format.code(),
                reserved: [0; 7],
            });
        }
        b.buffers.push(raw::Buffer {
            nbytes: le64(buf.nbytes),
            initial,
            dtype: buf.dtype.code(),
            role: buf.role.code(),
            flags: if buf.also_output { raw::BUFFER_ALSO_OUTPUT } else { 0 },
            reserved: [0; 5],
        });
    }
    for t in &model.inputs {
        let v = b.view(&t.view, &t.shape, None)?;
        b.inputs.push(v);
    }
    for t in &model.outputs {
        let v = b.view(&t.view, &t.shape, t.expected.as_deref())?;
        b.outputs.push(v);
    }
    for p in &model.programs {
        let r = b.program(p)?;
        b.programs.push(r);
    }
    for (i, l) in model.launches.iter().enumerate() {
        let r = b.launch(i, l)?;
        b.launches.push(r);
    }
    for g in &model.graphs {
        let name = b.str(&g.name)?;
        b.graphs.push(raw::Graph {
            name,
            target: g.target.code(),
            expected_from: g.expected_from.code(),
            reserved: [0; 6],
            buffers_first: le32(g.buffers.first),
            buffers_len: le32(g.buffers.len),
            inputs_first: le32(g.inputs.first),
            inputs_len: le32(g.inputs.len),
            outputs_first: le32(g.outputs.first),
            outputs_len: le32(g.outputs.len),
            programs_first: le32(g.programs.first),
            programs_len: le32(g.programs.len),
            launches_first: le32(g.launches.first),
            launches_len: le32(g.launches.len),
        });
    }
    let model_name = b.str(&model.name)?;
    let tinygrad_version = b.str(&model.tinygrad_version)?;
    let level_x86_64 = b.opt_str(model.arch_levels.x86_64.as_deref())?;
    let level_aarch64 = b.opt_str(model.arch_levels.aarch64.as_deref())?;

    let regions: [(&[u8], usize); SECTION_COUNT] = [
        (&b.strings, b.strings.len()),
        (&b.data, b.data.len()),
        (b.dims.as_bytes(), b.dims.len()),
        (b.buffers.as_bytes(), b.buffers.len()),
        (b.inputs.as_bytes(), b.inputs.len()),
        (b.outputs.as_bytes(), b.outputs.len()),
        (b.programs.as_bytes(), b.programs.len()),
        (b.params.as_bytes(), b.params.len()),
        (b.vars.as_bytes(), b.vars.len()),
        (b.objects.as_bytes(), b.objects.len()),
        (b.launches.as_bytes(), b.launches.len()),
        (b.args.as_bytes(), b.args.len()),
        (b.vals.as_bytes(), b.vals.len()),
        (b.graphs.as_bytes(), b.graphs.len()),
        (b.images.as_bytes(), b.images.len()),
        (b.launch_images.as_bytes(), b.launch_images.len()),
    ];
    // 2.1 (a header extension) only when a launch names an image view: every other file is
    // written as 2.0, which 2.0 readers read.
    let ext = !b.launch_images.is_empty();
    let header_bytes = raw::HEADER_SIZE + if ext { raw::HEADER_EXT_SIZE } else { 0 };
    let mut out = alloc::vec![0u8; header_bytes];
    let mut sections = [raw::SectionEntry::default(); SECTION_COUNT];
    // A 2.0 file ends with its 2.0 sections (no padding for a launch-image section it lacks).
    let n_sections = if ext { SECTION_COUNT } else { raw::SECTION_COUNT_V2 };
    for (kind, (bytes, count)) in SectionKind::ALL.iter().zip(regions).take(n_sections) {
        let start = out.len().next_multiple_of(raw::WRITER_ALIGN);
        out.resize(start, 0);
        out.extend_from_slice(bytes);
        sections[*kind as usize] = raw::SectionEntry {
            offset: le64(if bytes.is_empty() { 0 } else { start as u64 }),
            size: le64(bytes.len() as u64),
            count: le32(u32_of(kind.what(), count)?),
            crc: le32(crc32(bytes)),
        };
    }
    let mut head = [raw::SectionEntry::default(); raw::SECTION_COUNT_V2];
    head.copy_from_slice(&sections[..raw::SECTION_COUNT_V2]);
    if ext {
        let mut e = raw::HeaderExt {
            sections: [raw::SectionEntry::default(); raw::SECTION_COUNT_EXT],
            reserved: le32(0),
            ext_crc: le32(0),
        };
        e.sections.copy_from_slice(&sections[raw::SECTION_COUNT_V2..]);
        e.ext_crc = le32(crc32(&e.as_bytes()[..raw::HEADER_EXT_SIZE - 4]));
        out[raw::HEADER_SIZE..header_bytes].copy_from_slice(e.as_bytes());
    }
    let mut header = raw::Header {
        magic: raw::MAGIC,
        version_major: U16::new(raw::VERSION_MAJOR),
        version_minor: U16::new(if ext { raw::VERSION_MINOR } else { 0 }),
        flags: le32(if ext { raw::HEADER_HAS_EXTENSION } else { 0 }),
        source_version: le32(model.format_version),
        file_size: le64(out.len() as u64),
        model: model_name,
        tinygrad_version,
        level_x86_64,
        level_aarch64,
        expected_from: model.expected_from.code(),
        reserved0: [0; 7],
        sections: head,
        reserved1: le32(0),
        header_crc: le32(0),
    };
    header.header_crc = le32(crc32(&header.as_bytes()[..raw::HEADER_CRC_OFFSET]));
    out[..raw::HEADER_SIZE].copy_from_slice(header.as_bytes());
    Ok(out)
}

/// Recompute every checksum of a packed file in place (the section CRCs, then the header CRC),
/// after a tool edited its bytes. Fails if the header is incomplete or a section lies outside
/// `bytes`. The result still has to pass [`Hcqb::parse`].
pub fn reseal(bytes: &mut [u8]) -> Result<()> {
    use zerocopy::FromBytes;
    let len = bytes.len() as u64;
    let truncated = Error::Malformed { what: "hcqb header", at: len, reason: "truncated file (header incomplete)" };
    let major = bytes.get(4..6).map(|v| u16::from_le_bytes([v[0], v[1]]));
    if major == Some(1) {
        let mut header = raw::HeaderV1::read_from_prefix(bytes).map_err(|_| truncated)?.0;
        reseal_sections(bytes, SectionKind::ALL.iter(), &mut header.sections)?;
        header.header_crc = le32(crc32(&header.as_bytes()[..raw::HEADER_SIZE_V1 - 4]));
        bytes[..raw::HEADER_SIZE_V1].copy_from_slice(header.as_bytes());
        return Ok(());
    }
    let mut header = raw::Header::read_from_prefix(bytes).map_err(|_| truncated.clone())?.0;
    reseal_sections(bytes, SectionKind::ALL.iter(), &mut header.sections)?;
    header.header_crc = le32(crc32(&header.as_bytes()[..raw::HEADER_CRC_OFFSET]));
    bytes[..raw::HEADER_SIZE].copy_from_slice(header.as_bytes());
    if header.flags.get() & raw::HEADER_HAS_EXTENSION != 0 {
        let tail = bytes.get(raw::HEADER_SIZE..).unwrap_or(&[]);
        let mut ext = raw::HeaderExt::read_from_prefix(tail).map_err(|_| truncated)?.0;
        reseal_sections(bytes, SectionKind::ALL[raw::SECTION_COUNT_V2..].iter(), &mut ext.sections)?;
        ext.ext_crc = le32(crc32(&ext.as_bytes()[..raw::HEADER_EXT_SIZE - 4]));
        bytes[raw::HEADER_SIZE..raw::HEADER_SIZE + raw::HEADER_EXT_SIZE].copy_from_slice(ext.as_bytes());
    }
    Ok(())
}

fn reseal_sections<'k>(
    bytes: &[u8],
    kinds: impl Iterator<Item = &'k SectionKind>,
    sections: &mut [raw::SectionEntry],
) -> Result<()> {
    for (kind, e) in kinds.zip(sections.iter_mut()) {
        let region = usize::try_from(e.offset.get()).ok().and_then(|start| {
            let end = start.checked_add(usize::try_from(e.size.get()).ok()?)?;
            bytes.get(start..end)
        });
        let region = region.ok_or(Error::Malformed {
            what: kind.what(),
            at: e.offset.get(),
            reason: "section runs past the end of the file",
        })?;
        e.crc = le32(crc32(region));
    }
    Ok(())
}

impl Hcqb<'_> {
    /// Unpack into an owned model; `write(&file.to_model())` packs the same bundle again.
    pub fn to_model(&self) -> BundleModel {
        let buffers = self
            .buffers()
            .map(|b| Buffer {
                nbytes: b.nbytes,
                dtype: b.dtype,
                role: b.role,
                also_output: b.also_output,
                initial: b.initial.map(<[u8]>::to_vec),
                image: b.image.map(|im| Image {
                    width: im.width,
                    height: im.height,
                    pitch: im.pitch,
                    format: im.format,
                }),
            })
            .collect();
        // a view of one graph is a model of one implicit graph
        let table = if self.view_of.is_some() { &[][..] } else { self.graphs };
        let graphs = table
            .iter()
            .zip(self.graphs())
            .map(|(r, g)| Graph {
                name: g.name.to_string(),
                target: g.target,
                expected_from: g.expected_from,
                buffers: Span { first: r.buffers_first.get(), len: r.buffers_len.get() },
                inputs: Span { first: r.inputs_first.get(), len: r.inputs_len.get() },
                outputs: Span { first: r.outputs_first.get(), len: r.outputs_len.get() },
                programs: Span { first: r.programs_first.get(), len: r.programs_len.get() },
                launches: Span { first: r.launches_first.get(), len: r.launches_len.get() },
            })
            .collect();
        let inputs = self.inputs().map(|t| Input { view: t.view, shape: t.shape().collect() }).collect();
        let outputs = self
            .outputs()
            .map(|t| Output { view: t.view, shape: t.shape().collect(), expected: t.expected.map(<[u8]>::to_vec) })
            .collect();
        let programs = self
            .programs()
            .map(|p| {
                let mut objects = Objects::default();
                for (arch, bytes) in p.objects() {
                    objects.set(arch, Some(bytes.to_vec()));
                }
                Program {
                    name: p.name.to_string(),
                    symbol: p.symbol.to_string(),
                    signature: p
                        .params()
                        .map(|q| Param {
                            name: q.name.map(ToString::to_string),
                            slot: q.slot,
                            dtype: q.dtype,
                            shape: q.shape().collect(),
                            is_buffer: q.is_buffer,
                        })
                        .collect(),
                    n_buffer_args: p.n_buffer_args,
                    vars: p.vars().map(ToString::to_string).collect(),
                    core_id_arg: p.core_id_arg,
                    objects,
                    adreno: p.adreno.map(<[u8]>::to_vec),
                }
            })
            .collect();
        let launches = self
            .launches()
            .map(|l| match l {
                LaunchRef::Copy { dst, src } => Launch::Copy { dst, src },
                LaunchRef::Kernel(k) => Launch::Kernel(KernelLaunch {
                    program: k.program,
                    name: k.name.to_string(),
                    global_size: k.global_size,
                    local_size: k.local_size,
                    args: k.args().collect(),
                    vals: k.vals().collect(),
                    core_id_arg: k.core_id_arg,
                    outs: k.outs().collect(),
                    ins: k.ins().collect(),
                    gpu: k.gpu.map(|g| GpuLaunch {
                        global_size: g.global_size,
                        local_size: g.local_size,
                        vals: g.vals().collect(),
                    }),
                    images: k
                        .images()
                        .map(|(arg, im)| ArgImage {
                            arg,
                            image: Image { width: im.width, height: im.height, pitch: im.pitch, format: im.format },
                        })
                        .collect(),
                }),
            })
            .collect();
        BundleModel {
            name: self.model_name().to_string(),
            format_version: self.source_version(),
            tinygrad_version: self.tinygrad_version().to_string(),
            arch_levels: ArchLevels {
                x86_64: self.arch_level(Arch::X86_64).map(String::from),
                aarch64: self.arch_level(Arch::Aarch64).map(String::from),
            },
            expected_from: self.expected_from(),
            buffers,
            inputs,
            outputs,
            programs,
            launches,
            graphs,
        }
    }
}
