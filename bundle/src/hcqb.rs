//! `.hcqb`: a bundle packed into one file, read in place without allocation.
//!
//! Layout (all integers little-endian, every record alignment 1; see [`raw`] for each field):
//!
//! | bytes | content |
//! | --- | --- |
//! | 0..432 | [`raw::Header`]: magic `HCQB`, version (u16 major, u16 minor), flags, file size, model strings, the table of 15 sections (offset, size, count, CRC-32), header CRC-32 (1.x: [`raw::HeaderV1`], 384 bytes, 13 sections) |
//! | 432..464 | 2.1 with flag [`raw::HEADER_HAS_EXTENSION`]: [`raw::HeaderExt`], the launch-image section's entry and its own CRC-32 |
//! | sections | strings (UTF-8), data (blobs), dims (u64), buffers, inputs, outputs, programs, params, vars, objects, launches, args, vals, graphs, images (of buffers), launch images (2.1) |
//!
//! [`Hcqb::parse`] checks, in order: the magic; the major version (another major is
//! [`Error::Unsupported`] `"hcqb version"`); that the header is complete; the header CRC;
//! the file size; the flags (unknown ones are [`Error::Unsupported`] `"hcqb header flags"`,
//! which is how a 2.0 reader refuses a 2.1 file with launch images) and the 2.1 extension and
//! its CRC; every section (8-byte aligned, after the header, inside the file, size =
//! count × record size, no two overlapping) and its CRC (a mismatch is [`Error::Mismatch`]
//! `"hcqb checksum of ..."`); that the string section is UTF-8; and then every record: each
//! string and blob reference inside its section, each `first`/`len` range inside its table,
//! each code (dtype, role, architecture, launch kind) known, and the same semantic rules as
//! [`BundleModel::validate`](super::model::BundleModel::validate) (views inside buffers,
//! launches matching their programs, `core_id` slots, image views inside their arguments, a
//! graph with at least one launch). Structural problems are
//! [`Error::Malformed`] with the byte offset in the file. After `parse` returns `Ok`, no
//! accessor can fail or go out of bounds; accessors that take an index return `None` only for
//! an index past the end.
//!
//! Reading needs neither `std` nor `alloc` and copies nothing: names are `&str` and blobs
//! `&[u8]` into the file. [`write()`] and [`Hcqb::to_model`] need `alloc`.
//!
//! Limits: the CRC-32s detect corruption, not tampering (there is no signature). Object blobs
//! are not parsed here (the ELF loader checks them). Without `alloc`, semantic errors carry no
//! "launch 3 arg 1" location, only the values involved.

pub mod raw;
mod refs;
mod validate;

pub use refs::{BufferRef, GpuRef, GraphRef, ImageRef, KernelRef, LaunchRef, ParamRef, ProgramRef, TensorRef};

use zerocopy::byteorder::{LE, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::crc::crc32;
use super::{Arch, ArgView, BufferRole, GraphTarget, check};
use hcq::dtype::DType;
use hcq::error::{Error, Result};
use raw::{NONE32, NONE64, SectionKind};

/// A parsed, fully validated `.hcqb` file borrowed from its bytes; or one graph of such a file
/// ([`Hcqb::graph_view`], [`Hcqb::for_archs`]), whose tables are that graph's.
#[derive(Clone, Copy, Debug)]
pub struct Hcqb<'a> {
    bytes: &'a [u8],
    meta: Meta,
    pools: Pools<'a>,
    graphs: &'a [raw::Graph],
    images: &'a [raw::Image],
    launch_images: &'a [raw::LaunchImage],
    /// Index of this view's first buffer in the whole buffer table (0 for the whole file).
    buffer_base: u32,
    /// Index of this view's first launch in the whole launch table (0 for the whole file).
    launch_base: u32,
    /// The graph this is a view of (`None`: the whole file).
    view_of: Option<u32>,
    buffers: &'a [raw::Buffer],
    inputs: &'a [raw::View],
    outputs: &'a [raw::View],
    programs: &'a [raw::Program],
    params: &'a [raw::Param],
    vars: &'a [raw::StrRef],
    objects: &'a [raw::Object],
    launches: &'a [raw::Launch],
    args: &'a [raw::Arg],
    vals: &'a [raw::Val],
}

/// What the header says, for either header version.
#[derive(Clone, Copy, Debug)]
struct Meta {
    major: u16,
    minor: u16,
    source_version: u32,
    model: raw::StrRef,
    tinygrad_version: raw::StrRef,
    level_x86_64: raw::StrRef,
    level_aarch64: raw::StrRef,
    expected_from: u8,
    header_size: usize,
    sections: [raw::SectionEntry; raw::SECTION_COUNT],
}

/// The three sections that records point into.
#[derive(Clone, Copy, Debug)]
struct Pools<'a> {
    strings: &'a str,
    data: &'a [u8],
    dims: &'a [U64<LE>],
}

/// A record copied out of the file into 8-byte aligned storage (see [`rec`]).
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(super) struct Aligned<T>(T);

impl<T> core::ops::Deref for Aligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Record `r` copied into aligned storage, to read its fields from there.
///
/// The records have alignment 1 (they are read in place at any address), so on a target
/// without unaligned loads (`aarch64-unknown-none` assumes strict alignment) each multi-byte
/// field read in place is a load per byte. One copy (a `memcpy`) makes every field of the copy
/// a plain load. Never inlined: inlined, the optimizer turns the copy back into field-wise loads
/// from the unaligned record.
#[inline(never)]
pub(super) fn rec<T: Copy>(r: &T) -> Aligned<T> {
    Aligned(*r)
}

fn malformed(what: &'static str, at: u64, reason: &'static str) -> Error {
    Error::Malformed { what, at, reason }
}

/// `table[first .. first + len]`, if it is inside the table.
fn sub<T>(table: &[T], first: U32<LE>, len: U32<LE>) -> Option<&[T]> {
    let first = first.get() as usize;
    table.get(first..first.checked_add(len.get() as usize)?)
}

fn dtype(code: u8) -> Result<DType> {
    DType::from_code(code)
}

fn opt_u32(v: U32<LE>) -> Option<u32> {
    match v.get() {
        NONE32 => None,
        c => Some(c),
    }
}

fn dims3(v: &[U32<LE>; 3]) -> [u32; 3] {
    [v[0].get(), v[1].get(), v[2].get()]
}

fn decode_arg(a: &raw::Arg) -> Result<ArgView> {
    let a = rec(a);
    Ok(ArgView { buffer: a.buffer.get(), offset: a.offset.get(), nbytes: a.nbytes.get(), dtype: dtype(a.dtype)? })
}

/// Decode an argument of a validated file (the dtype code was checked by `parse`).
fn arg_view(a: &raw::Arg) -> ArgView {
    let a = rec(a);
    ArgView {
        buffer: a.buffer.get(),
        offset: a.offset.get(),
        nbytes: a.nbytes.get(),
        dtype: DType::from_code(a.dtype).unwrap_or(DType::U8),
    }
}

/// The image of buffer `i` of a view whose first buffer is `base` in the whole table.
fn buffer_image(images: &[raw::Image], base: u32, i: usize) -> Option<ImageRef> {
    let abs = base.checked_add(u32::try_from(i).ok()?)?;
    let k = images.binary_search_by_key(&abs, |im| im.buffer.get()).ok()?;
    let im = rec(images.get(k)?);
    Some(ImageRef {
        width: im.width.get(),
        height: im.height.get(),
        pitch: im.pitch.get(),
        format: DType::from_code(im.format).ok()?,
    })
}

/// A launch image record as an [`ImageRef`] (`None`: a format code no dtype has; `parse`
/// refuses those).
fn launch_image(im: &raw::LaunchImage) -> Option<ImageRef> {
    let im = rec(im);
    Some(ImageRef {
        width: im.width.get(),
        height: im.height.get(),
        pitch: im.pitch.get(),
        format: DType::from_code(im.format).ok()?,
    })
}

fn val(v: &raw::Val) -> Option<i64> {
    let v = rec(v);
    (v.flags & raw::VAL_PRESENT != 0).then(|| v.value.get())
}

impl<'a> Pools<'a> {
    fn str(&self, r: raw::StrRef) -> Result<Option<&'a str>> {
        if r.offset.get() == NONE32 {
            return Ok(None);
        }
        let start = r.offset.get() as usize;
        let end = start.checked_add(r.len.get() as usize);
        end.and_then(|end| self.strings.get(start..end)).map(Some).ok_or(malformed(
            "hcqb string reference",
            start as u64,
            "outside the string section or not on a UTF-8 boundary",
        ))
    }

    fn req_str(&self, r: raw::StrRef) -> Result<&'a str> {
        self.str(r)?.ok_or(malformed("hcqb string reference", NONE32 as u64, "required string is absent"))
    }

    fn blob(&self, r: raw::BlobRef) -> Result<Option<&'a [u8]>> {
        let offset = r.offset.get();
        if offset == NONE64 {
            return Ok(None);
        }
        let bytes = usize::try_from(offset).ok().and_then(|start| {
            let end = start.checked_add(usize::try_from(r.len.get()).ok()?)?;
            self.data.get(start..end)
        });
        bytes.map(Some).ok_or(malformed("hcqb blob reference", offset, "outside the data section"))
    }

    fn dims(&self, first: U32<LE>, len: U32<LE>) -> Result<&'a [U64<LE>]> {
        sub(self.dims, first, len).ok_or(malformed(
            "hcqb dims reference",
            first.get() as u64,
            "outside the dims section",
        ))
    }
}

/// The bytes of section `kind`: aligned, after the header, inside the file, size = count ×
/// record size. (Overlaps and checksums are checked separately.)
fn locate<'a>(bytes: &'a [u8], header: &Meta, kind: SectionKind) -> Result<&'a [u8]> {
    let e = rec(&header.sections[kind as usize]);
    let what = kind.what();
    let (offset, size, count) = (e.offset.get(), e.size.get(), e.count.get());
    if (count as u64).checked_mul(kind.record_size() as u64) != Some(size) {
        return Err(malformed(what, offset, "section size is not its record count times the record size"));
    }
    let region = if size == 0 {
        &[][..]
    } else {
        if !offset.is_multiple_of(raw::SECTION_ALIGN) {
            return Err(malformed(what, offset, "section is not 8-byte aligned"));
        }
        if offset < header.header_size as u64 {
            return Err(malformed(what, offset, "section overlaps the header"));
        }
        let end = offset.checked_add(size).filter(|&end| end <= bytes.len() as u64);
        let range = end.and_then(|end| Some(usize::try_from(offset).ok()?..usize::try_from(end).ok()?));
        range.and_then(|r| bytes.get(r)).ok_or(malformed(
            what,
            offset,
            "section runs past the end of the file (truncated file?)",
        ))?
    };
    Ok(region)
}

/// A launch record with the argument and value ranges it refers to.
struct RawLaunch<'a> {
    launch: Aligned<raw::Launch>,
    args: &'a [raw::Arg],
    vals: &'a [raw::Val],
    gpu_vals: &'a [raw::Val],
}

/// The bytes of section `kind`, located and checked against its CRC.
fn section<'a>(bytes: &'a [u8], header: &Meta, kind: SectionKind) -> Result<&'a [u8]> {
    let region = locate(bytes, header, kind)?;
    let e = rec(&header.sections[kind as usize]);
    let found = crc32(region);
    if found != e.crc.get() {
        return Err(Error::Mismatch { what: kind.checksum_what(), expected: e.crc.get() as u64, found: found as u64 });
    }
    Ok(region)
}

fn table<'a, T: FromBytes + KnownLayout + Immutable>(
    bytes: &'a [u8],
    header: &Meta,
    kind: SectionKind,
) -> Result<&'a [T]> {
    let region = section(bytes, header, kind)?;
    <[T]>::ref_from_bytes(region).map_err(|_| misfit(header, kind))
}

/// The error of a section whose bytes do not cast to its records (one copy, not one per record
/// type: the bare-metal image counts its bytes).
#[cold]
#[inline(never)]
fn misfit(header: &Meta, kind: SectionKind) -> Error {
    malformed(kind.what(), header.sections[kind as usize].offset.get(), "records do not fit the section")
}

fn check_overlaps(header: &Meta) -> Result<()> {
    for (i, a) in header.sections.iter().enumerate() {
        let a = rec(a);
        for b in header.sections.iter().skip(i + 1) {
            let b = rec(b);
            let (a0, a1) = (a.offset.get(), a.offset.get().saturating_add(a.size.get()));
            let (b0, b1) = (b.offset.get(), b.offset.get().saturating_add(b.size.get()));
            if a.size.get() != 0 && b.size.get() != 0 && a0 < b1 && b0 < a1 {
                return Err(malformed("hcqb section table", a0.max(b0), "sections overlap"));
            }
        }
    }
    Ok(())
}

/// The accessors of one table of records: its length (`n_…`), record `i` (`None` past the end)
/// and every record in order (the table's own name). Records of a parsed file always decode,
/// so the iterator's length is the table's.
macro_rules! table_accessors {
    (
        $(#[$n_doc:meta])* $n:ident,
        $(#[$one_doc:meta])* $one:ident,
        $(#[$all_doc:meta])* $all:ident: $item:ty => $try:ident
    ) => {
        $(#[$n_doc])*
        pub fn $n(&self) -> usize {
            self.$all.len()
        }

        $(#[$one_doc])*
        pub fn $one(&self, i: usize) -> Option<$item> {
            self.$try(i).ok()
        }

        $(#[$all_doc])*
        pub fn $all(&self) -> impl ExactSizeIterator<Item = $item> + '_ {
            (0..self.$all.len()).filter_map(|i| self.$one(i)).exact_len(self.$all.len())
        }
    };
}

impl<'a> Hcqb<'a> {
    /// Parse and validate a whole file (see the module docs for every check). Bytes after the
    /// header's file size are ignored.
    pub fn parse(bytes: &'a [u8]) -> Result<Hcqb<'a>> {
        let len = bytes.len() as u64;
        let magic = bytes.get(..4).ok_or(malformed("hcqb header", len, "truncated file (no magic)"))?;
        if magic != raw::MAGIC {
            return Err(malformed("hcqb header", 0, "bad magic (not an .hcqb file)"));
        }
        let Some(&[lo, hi]) = bytes.get(4..6) else {
            return Err(malformed("hcqb header", len, "truncated file (no version)"));
        };
        let major = u16::from_le_bytes([lo, hi]);
        if !(raw::VERSION_MAJOR_OLDEST..=raw::VERSION_MAJOR).contains(&major) {
            return Err(Error::Unsupported { what: "hcqb version", value: major as u64 });
        }
        let (meta, header_crc, covered, file_size, flags) = if major == 1 {
            let (h_in_file, _) = raw::HeaderV1::ref_from_prefix(bytes)
                .map_err(|_| malformed("hcqb header", len, "truncated file (header incomplete)"))?;
            let h = rec(h_in_file);
            let mut sections = [raw::SectionEntry::default(); raw::SECTION_COUNT];
            sections[..raw::SECTION_COUNT_V1].copy_from_slice(&h.sections);
            for e in &mut sections[raw::SECTION_COUNT_V1..] {
                e.crc = crc32(&[]).into();
            }
            let meta = Meta {
                major,
                minor: h.version_minor.get(),
                source_version: h.source_version.get(),
                model: h.model,
                tinygrad_version: h.tinygrad_version,
                level_x86_64: h.level_x86_64,
                level_aarch64: h.level_aarch64,
                expected_from: h.expected_from,
                header_size: raw::HEADER_SIZE_V1,
                sections,
            };
            let covered = h_in_file.as_bytes().get(..raw::HEADER_SIZE_V1 - 4).unwrap_or(&[]);
            (meta, h.header_crc.get(), covered, h.file_size.get(), h.flags.get())
        } else {
            let (h_in_file, _) = raw::Header::ref_from_prefix(bytes)
                .map_err(|_| malformed("hcqb header", len, "truncated file (header incomplete)"))?;
            let h = rec(h_in_file);
            let mut sections = [raw::SectionEntry::default(); raw::SECTION_COUNT];
            sections[..raw::SECTION_COUNT_V2].copy_from_slice(&h.sections);
            for e in &mut sections[raw::SECTION_COUNT_V2..] {
                e.crc = crc32(&[]).into();
            }
            let meta = Meta {
                major,
                minor: h.version_minor.get(),
                source_version: h.source_version.get(),
                model: h.model,
                tinygrad_version: h.tinygrad_version,
                level_x86_64: h.level_x86_64,
                level_aarch64: h.level_aarch64,
                expected_from: h.expected_from,
                header_size: raw::HEADER_SIZE,
                sections,
            };
            let covered = h_in_file.as_bytes().get(..raw::HEADER_CRC_OFFSET).unwrap_or(&[]);
            (meta, h.header_crc.get(), covered, h.file_size.get(), h.flags.get())
        };
        let found = crc32(covered);
        if found != header_crc {
            return Err(Error::Mismatch {
                what: "hcqb checksum of the header",
                expected: header_crc as u64,
                found: found as u64,
            });
        }
        if file_size > len {
            return Err(malformed("hcqb file", len, "truncated file (shorter than the size in its header)"));
        }
        if file_size < meta.header_size as u64 {
            let at = core::mem::offset_of!(raw::Header, file_size) as u64;
            return Err(malformed("hcqb header", at, "file size smaller than the header"));
        }
        let bytes = usize::try_from(file_size).ok().and_then(|n| bytes.get(..n)).ok_or(malformed(
            "hcqb file",
            len,
            "file size does not fit this machine",
        ))?;
        // 2.1 gives meaning to one flag: a header extension (with the launch-image section).
        let known = if major == 2 && meta.minor >= 1 { raw::HEADER_HAS_EXTENSION } else { 0 };
        if flags & !known != 0 {
            return Err(Error::Unsupported { what: "hcqb header flags", value: flags as u64 });
        }
        let mut meta = meta;
        if flags & raw::HEADER_HAS_EXTENSION != 0 {
            let ext = bytes.get(raw::HEADER_SIZE..).and_then(|b| raw::HeaderExt::ref_from_prefix(b).ok());
            let (ext_in_file, _) =
                ext.ok_or(malformed("hcqb header extension", len, "truncated file (header extension incomplete)"))?;
            let ext = rec(ext_in_file);
            let found = crc32(ext_in_file.as_bytes().get(..raw::HEADER_EXT_SIZE - 4).unwrap_or(&[]));
            if found != ext.ext_crc.get() {
                return Err(Error::Mismatch {
                    what: "hcqb checksum of the header extension",
                    expected: ext.ext_crc.get() as u64,
                    found: found as u64,
                });
            }
            meta.sections[raw::SECTION_COUNT_V2..].copy_from_slice(&ext.sections);
            meta.header_size = raw::HEADER_SIZE + raw::HEADER_EXT_SIZE;
        }
        let header = &meta;
        for kind in SectionKind::ALL {
            locate(bytes, header, kind)?;
        }
        check_overlaps(header)?;
        let strings = section(bytes, header, SectionKind::Strings)?;
        let strings = core::str::from_utf8(strings).map_err(|e| {
            let base = header.sections[SectionKind::Strings as usize].offset.get();
            malformed("hcqb string section", base.saturating_add(e.valid_up_to() as u64), "not UTF-8")
        })?;
        let file = Hcqb {
            bytes,
            meta,
            pools: Pools {
                strings,
                data: section(bytes, header, SectionKind::Data)?,
                dims: table(bytes, header, SectionKind::Dims)?,
            },
            graphs: table(bytes, header, SectionKind::Graphs)?,
            images: table(bytes, header, SectionKind::Images)?,
            launch_images: table(bytes, header, SectionKind::LaunchImages)?,
            buffer_base: 0,
            launch_base: 0,
            view_of: None,
            buffers: table(bytes, header, SectionKind::Buffers)?,
            inputs: table(bytes, header, SectionKind::Inputs)?,
            outputs: table(bytes, header, SectionKind::Outputs)?,
            programs: table(bytes, header, SectionKind::Programs)?,
            params: table(bytes, header, SectionKind::Params)?,
            vars: table(bytes, header, SectionKind::Vars)?,
            objects: table(bytes, header, SectionKind::Objects)?,
            launches: table(bytes, header, SectionKind::Launches)?,
            args: table(bytes, header, SectionKind::Args)?,
            vals: table(bytes, header, SectionKind::Vals)?,
        };
        file.validate_file()?;
        Ok(file)
    }

    /// File offset of record `i` of `kind` (for error messages).
    fn record_at(&self, kind: SectionKind, i: usize) -> u64 {
        let e = rec(&self.meta.sections[kind as usize]);
        e.offset.get().saturating_add((i as u64).saturating_mul(kind.record_size() as u64))
    }

    fn try_buffer(&self, i: usize) -> Result<BufferRef<'a>> {
        let b = rec(self.buffers.get(i).ok_or(Error::OutOfBounds {
            what: "buffer index",
            offset: i as u64,
            len: 1,
            limit: self.buffers.len() as u64,
        })?);
        let r = BufferRef {
            nbytes: b.nbytes.get(),
            dtype: dtype(b.dtype)?,
            role: BufferRole::from_code(b.role)?,
            also_output: b.flags & raw::BUFFER_ALSO_OUTPUT != 0,
            initial: self.pools.blob(b.initial)?,
            image: self.image_of(i),
        };
        if let Some(data) = r.initial {
            check::initial(data.len() as u64, r.nbytes)?;
        }
        Ok(r)
    }

    fn try_tensor(&self, kind: SectionKind, i: usize) -> Result<TensorRef<'a>> {
        let t = if kind == SectionKind::Inputs { self.inputs } else { self.outputs };
        let v = rec(t.get(i).ok_or(Error::OutOfBounds {
            what: kind.what(),
            offset: i as u64,
            len: 1,
            limit: t.len() as u64,
        })?);
        let expected = self.pools.blob(v.expected)?;
        if kind == SectionKind::Inputs && expected.is_some() {
            return Err(malformed(kind.what(), self.record_at(kind, i), "an input carries expected bytes"));
        }
        Ok(TensorRef {
            view: ArgView {
                buffer: v.buffer.get(),
                offset: v.offset.get(),
                nbytes: v.nbytes.get(),
                dtype: dtype(v.dtype)?,
            },
            expected,
            shape: self.pools.dims(v.dims_first, v.dims_len)?,
        })
    }

    fn try_program(&self, i: usize) -> Result<ProgramRef<'a>> {
        let p = rec(self.programs.get(i).ok_or(Error::OutOfBounds {
            what: "program index",
            offset: i as u64,
            len: 1,
            limit: self.programs.len() as u64,
        })?);
        let rec = self.record_at(SectionKind::Programs, i);
        Ok(ProgramRef {
            name: self.pools.req_str(p.name)?,
            symbol: self.pools.req_str(p.symbol)?,
            n_buffer_args: p.n_buffer_args.get(),
            core_id_arg: opt_u32(p.core_id_arg),
            adreno: self.pools.blob(p.adreno)?,
            pools: self.pools,
            params: sub(self.params, p.params_first, p.params_len).ok_or(malformed(
                "hcqb program table",
                rec,
                "parameter range outside the parameter table",
            ))?,
            vars: sub(self.vars, p.vars_first, p.vars_len).ok_or(malformed(
                "hcqb program table",
                rec,
                "var range outside the var table",
            ))?,
            objects: sub(self.objects, p.objects_first, p.objects_len).ok_or(malformed(
                "hcqb program table",
                rec,
                "object range outside the object table",
            ))?,
        })
    }

    fn raw_launch(&self, i: usize) -> Result<RawLaunch<'a>> {
        let l = rec(self.launches.get(i).ok_or(Error::OutOfBounds {
            what: "launch index",
            offset: i as u64,
            len: 1,
            limit: self.launches.len() as u64,
        })?);
        let rec = self.record_at(SectionKind::Launches, i);
        let args = sub(self.args, l.args_first, l.args_len).ok_or(malformed(
            "hcqb launch table",
            rec,
            "argument range outside the argument table",
        ))?;
        let vals = sub(self.vals, l.vals_first, l.vals_len).ok_or(malformed(
            "hcqb launch table",
            rec,
            "value range outside the value table",
        ))?;
        let gpu_vals = sub(self.vals, l.gpu_vals_first, l.gpu_vals_len).ok_or(malformed(
            "hcqb launch table",
            rec,
            "GPU value range outside the value table",
        ))?;
        Ok(RawLaunch { launch: l, args, vals, gpu_vals })
    }

    fn try_launch(&self, i: usize) -> Result<LaunchRef<'a>> {
        let RawLaunch { launch: l, args, vals, gpu_vals } = self.raw_launch(i)?;
        let rec = self.record_at(SectionKind::Launches, i);
        match l.kind {
            raw::LAUNCH_KERNEL => {
                if l.flags & raw::LAUNCH_HAS_GPU == 0 && !gpu_vals.is_empty() {
                    return Err(malformed("hcqb launch table", rec, "GPU values without a GPU grid"));
                }
                let gpu = (l.flags & raw::LAUNCH_HAS_GPU != 0).then_some(GpuRef {
                    global_size: dims3(&l.gpu_global_size),
                    local_size: dims3(&l.gpu_local_size),
                    vals: gpu_vals,
                });
                let abs = self.launch_base.saturating_add(i as u32);
                let from = self.launch_images.partition_point(|im| im.launch.get() < abs);
                let to = from + self.launch_images[from..].partition_point(|im| im.launch.get() == abs);
                Ok(LaunchRef::Kernel(KernelRef {
                    program: l.program.get(),
                    name: self.pools.req_str(l.name)?,
                    global_size: dims3(&l.global_size),
                    local_size: dims3(&l.local_size),
                    core_id_arg: opt_u32(l.core_id_arg),
                    gpu,
                    args,
                    vals,
                    images: self.launch_images.get(from..to).unwrap_or(&[]),
                    buffer_images: self.images,
                    buffer_base: self.buffer_base,
                }))
            }
            raw::LAUNCH_COPY => {
                if l.program.get() != NONE32 || l.flags != 0 || !vals.is_empty() || !gpu_vals.is_empty() {
                    return Err(malformed(
                        "hcqb launch table",
                        rec,
                        "a copy launch has no program, values or GPU grid",
                    ));
                }
                match args {
                    [dst, src] => Ok(LaunchRef::Copy { dst: decode_arg(dst)?, src: decode_arg(src)? }),
                    _ => {
                        Err(malformed("hcqb launch table", rec, "a copy launch needs exactly two arguments (dst, src)"))
                    }
                }
            }
            kind => Err(Error::Unsupported { what: "hcqb launch kind", value: kind as u64 }),
        }
    }

    /// The whole file (exactly the header's file size).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// `(major, minor)` format version of the file.
    pub fn version(&self) -> (u16, u16) {
        (self.meta.major, self.meta.minor)
    }

    /// Version of the interchange format the bundle came from.
    pub fn source_version(&self) -> u32 {
        self.meta.source_version
    }

    /// Model name.
    pub fn model_name(&self) -> &'a str {
        self.pools.req_str(self.meta.model).unwrap_or("")
    }

    /// tinygrad version of the exporter.
    pub fn tinygrad_version(&self) -> &'a str {
        self.pools.req_str(self.meta.tinygrad_version).unwrap_or("")
    }

    /// The image buffer `i` (of this view) backs, if any.
    fn image_of(&self, i: usize) -> Option<ImageRef> {
        buffer_image(self.images, self.buffer_base, i)
    }

    /// Number of graphs in the file's graph table (0: one graph for any target, the whole file;
    /// every 1.x file).
    pub fn n_graphs(&self) -> usize {
        self.graphs.len()
    }

    /// Graph `i` of the graph table.
    pub fn graph(&self, i: usize) -> Option<GraphRef<'a>> {
        let r = rec(self.graphs.get(i)?);
        Some(GraphRef {
            name: self.pools.req_str(r.name).ok()?,
            target: GraphTarget::from_code(r.target).ok()?,
            expected_from: Arch::from_code(r.expected_from as u32).ok()?,
            counts: [
                r.buffers_len.get(),
                r.inputs_len.get(),
                r.outputs_len.get(),
                r.programs_len.get(),
                r.launches_len.get(),
            ],
        })
    }

    /// Every graph of the graph table.
    pub fn graphs(&self) -> impl ExactSizeIterator<Item = GraphRef<'a>> + '_ {
        (0..self.graphs.len()).filter_map(|i| self.graph(i)).exact_len(self.graphs.len())
    }

    /// Graph `i` as a file of its own: its buffers, inputs, outputs, programs and launches, with
    /// the indices its launches use. `graph_view(0)` of a file without graphs is the file.
    pub fn graph_view(&self, i: usize) -> Option<Hcqb<'a>> {
        if self.graphs.is_empty() {
            return (i == 0).then_some(*self);
        }
        self.graph_view_checked(i).ok()
    }

    /// The graph this is a view of (`None` for a whole file).
    pub fn view_of(&self) -> Option<usize> {
        self.view_of.map(|g| g as usize)
    }

    /// The graph a device with objects `archs` (preferred first) runs: for each arch in order, the
    /// graph of its own target, else the first graph for any target, that has that arch's object
    /// for every program. A file without graphs is its own graph. Refused ([`Error::Unsupported`] `"bundle
    /// has no graph for this device's target"`, with the graphs the file has) when none fits: a
    /// bundle with only a QCOM graph does not run on a CPU.
    pub fn for_archs(&self, archs: &[Arch]) -> Result<Hcqb<'a>> {
        if self.graphs.is_empty() || self.view_of.is_some() {
            return Ok(*self);
        }
        // The graph of the device's own target first, then a graph for any target.
        for &arch in archs {
            for exact in [true, false] {
                for g in 0..self.graphs.len() {
                    let Some(view) = self.graph_view(g) else { continue };
                    let Some(info) = self.graph(g) else { continue };
                    let fits = if exact { info.target == GraphTarget::of_arch(arch) } else { info.target.runs(arch) };
                    if fits && view.programs().all(|p| p.object(arch).is_some()) {
                        return Ok(view);
                    }
                }
            }
        }
        let e = Error::Unsupported {
            what: "bundle has no graph for this device's target (code of its preferred target)",
            value: archs.first().map_or(0, |a| u64::from(GraphTarget::of_arch(*a).code())),
        };
        #[cfg(feature = "alloc")]
        let e = {
            use alloc::string::String;
            let mut have = String::new();
            for g in self.graphs() {
                if !have.is_empty() {
                    have.push_str(", ");
                }
                have.push_str(g.name);
                have.push_str(" (");
                have.push_str(g.target.name());
                have.push(')');
            }
            let want = archs.first().map_or("none", |a| GraphTarget::of_arch(*a).name());
            e.context(alloc::format!("the device needs a {want} graph; the bundle's graphs: {have}"))
        };
        Err(e)
    }

    /// Lowest CPU level the `arch` objects need, if recorded (see
    /// [`ArchLevels`](super::model::ArchLevels) for what a missing level means).
    pub fn arch_level(&self, arch: Arch) -> Option<&'a str> {
        let r = match arch {
            Arch::X86_64 => self.meta.level_x86_64,
            Arch::Aarch64 => self.meta.level_aarch64,
            Arch::AdrenoA630 | Arch::AmdGfx1100 => return None,
        };
        self.pools.str(r).ok().flatten()
    }

    /// The architecture whose objects produced the expected outputs.
    pub fn expected_from(&self) -> Arch {
        Arch::from_code(self.meta.expected_from as u32).unwrap_or(Arch::X86_64)
    }

    table_accessors! {
        /// Number of programs.
        n_programs,
        /// Program `i`.
        program,
        /// All programs, by index.
        programs: ProgramRef<'a> => try_program
    }

    /// The object of program `prog` for `arch`.
    pub fn object(&self, prog: usize, arch: Arch) -> Option<&'a [u8]> {
        self.program(prog)?.object(arch)
    }

    table_accessors! {
        /// Number of buffers.
        n_buffers,
        /// Buffer `i`.
        buffer,
        /// All buffers, by index.
        buffers: BufferRef<'a> => try_buffer
    }

    /// Starting bytes of buffer `buf`, if it has any.
    pub fn initial_data(&self, buf: usize) -> Option<&'a [u8]> {
        self.buffer(buf)?.initial
    }

    /// The model's inputs, by index.
    pub fn inputs(&self) -> impl ExactSizeIterator<Item = TensorRef<'a>> + '_ {
        (0..self.inputs.len()).filter_map(|i| self.try_tensor(SectionKind::Inputs, i).ok()).exact_len(self.inputs.len())
    }

    /// The model's outputs with their expected bytes, by index.
    pub fn outputs(&self) -> impl ExactSizeIterator<Item = TensorRef<'a>> + '_ {
        (0..self.outputs.len())
            .filter_map(|i| self.try_tensor(SectionKind::Outputs, i).ok())
            .exact_len(self.outputs.len())
    }

    table_accessors! {
        /// Number of launches.
        n_launches,
        /// Launch `i`.
        launch,
        /// All launches, in execution order.
        launches: LaunchRef<'a> => try_launch
    }
}

/// An iterator that yields at most a known number of items and reports that number as its
/// length. Used for accessors over validated tables, where every item decodes, so the
/// reported length is exact.
struct Exact<I> {
    inner: I,
    left: usize,
}

impl<I: Iterator> Iterator for Exact<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        if self.left == 0 {
            return None;
        }
        let item = self.inner.next();
        self.left = if item.is_some() { self.left - 1 } else { 0 };
        item
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Exact<I> {}

trait ExactLen: Iterator + Sized {
    fn exact_len(self, n: usize) -> Exact<Self> {
        Exact { inner: self, left: n }
    }
}

impl<I: Iterator> ExactLen for I {}

#[cfg(feature = "alloc")]
mod write;
#[cfg(feature = "alloc")]
pub use write::{reseal, write};

#[cfg(all(test, feature = "alloc"))]
mod tests;
