//! The on-disk records of `.hcqb` version 2.1 (and the 1.x header 2.0 replaced): `#[repr(C)]` structs of little-endian fields with
//! alignment 1, so a reader can view them in place at any address (flash, a `&[u8]` of a file)
//! without unaligned references. This module is the format specification as code; the reader
//! in [`super`] is the only place that interprets it.
//!
//! Conventions: every offset is in bytes; `StrRef` points into the string section, `BlobRef`
//! into the data section, `first`/`len` pairs into another table of this file. Absent optional
//! references use the sentinel [`NONE32`] / [`NONE64`] as their offset. Padding and reserved
//! fields are written as zero and ignored by readers of 1.x.

use zerocopy::byteorder::{I64, LE, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The first four bytes of every `.hcqb` file.
pub const MAGIC: [u8; 4] = *b"HCQB";
/// The major version this writer produces. 2.0 added the graph and image sections (two
/// entries more in the header's section table, so a larger header): a 1.x reader refuses 2.0
/// files, and this reader reads 1.x files too (as one graph for any target, without images).
pub const VERSION_MAJOR: u16 = 2;
/// The oldest major version this reader reads.
pub const VERSION_MAJOR_OLDEST: u16 = 1;
/// The minor version this writer produces when a file needs it. Readers accept any minor of
/// their major: a minor release may only give meaning to fields that x.0 writes as zero. 2.1
/// gives meaning to [`HEADER_HAS_EXTENSION`] in the header's `flags` (which a 2.0 reader
/// refuses, [`Error::Unsupported`](hcq::Error) `"hcqb header flags"`): a [`HeaderExt`] follows
/// the header, with the launch-image section. A file without launch images is written as 2.0,
/// byte for byte what a 2.0 writer wrote.
pub const VERSION_MINOR: u16 = 1;
/// `Header::flags` (2.1): a [`HeaderExt`] follows the header at [`HEADER_SIZE`].
pub const HEADER_HAS_EXTENSION: u32 = 1;
/// "No reference" / "no index" in a 32-bit field.
pub const NONE32: u32 = u32::MAX;
/// "No blob" in a 64-bit offset field.
pub const NONE64: u64 = u64::MAX;
/// Sections start on this alignment (the reader refuses anything less aligned).
pub const SECTION_ALIGN: u64 = 8;
/// Alignment the writer gives every section and every blob in the data section.
pub const WRITER_ALIGN: usize = 16;

/// `Buffer::flags`: the buffer also holds an output.
pub const BUFFER_ALSO_OUTPUT: u8 = 1;
/// `Param::flags`: the parameter is a buffer pointer.
pub const PARAM_IS_BUFFER: u8 = 1;
/// `Launch::kind` of a kernel call.
pub const LAUNCH_KERNEL: u8 = 0;
/// `Launch::kind` of a copy (`args` holds dst then src).
pub const LAUNCH_COPY: u8 = 1;
/// `Launch::flags`: the `gpu_*` fields are present.
pub const LAUNCH_HAS_GPU: u8 = 1;
/// `Arg::flags`: the kernel writes this argument (it is in `outs`).
pub const ARG_OUT: u8 = 1;
/// `Arg::flags`: the kernel reads this argument (it is in `ins`).
pub const ARG_IN: u8 = 2;
/// `Val::flags`: the value is present (clear: `null`, the core_id slot).
pub const VAL_PRESENT: u8 = 1;

/// The sections of a file, in the order of [`Header::sections`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum SectionKind {
    /// UTF-8 bytes that [`StrRef`]s point into.
    Strings = 0,
    /// Blobs (initial buffer bytes, expected outputs, objects, Adreno metadata) that [`BlobRef`]s point into.
    Data = 1,
    /// `U64` shape dimensions, referenced by `first`/`len` pairs.
    Dims = 2,
    /// [`Buffer`] records.
    Buffers = 3,
    /// [`View`] records of the inputs.
    Inputs = 4,
    /// [`View`] records of the outputs.
    Outputs = 5,
    /// [`Program`] records.
    Programs = 6,
    /// [`Param`] records of all signatures.
    Params = 7,
    /// [`StrRef`] var names of all programs.
    Vars = 8,
    /// [`Object`] records of all programs.
    Objects = 9,
    /// [`Launch`] records, in execution order.
    Launches = 10,
    /// [`Arg`] records of all launches.
    Args = 11,
    /// [`Val`] records (launch vals and GPU vals).
    Vals = 12,
    /// [`Graph`] records (2.0). None: one graph for any target made of every table.
    Graphs = 13,
    /// [`Image`] records (2.0), ascending by buffer.
    Images = 14,
    /// [`LaunchImage`] records (2.1, in the [`HeaderExt`]), ascending by (launch, argument).
    LaunchImages = 15,
}

/// Number of sections (2.1: the 2.0 header's and the extension's).
pub const SECTION_COUNT: usize = 16;
/// Number of sections in the header itself (2.0 and 2.1).
pub const SECTION_COUNT_V2: usize = 15;
/// Number of sections in the 2.1 header extension.
pub const SECTION_COUNT_EXT: usize = SECTION_COUNT - SECTION_COUNT_V2;
/// Number of sections of a 1.x file.
pub const SECTION_COUNT_V1: usize = 13;

impl SectionKind {
    /// Every section, in header order.
    pub const ALL: [SectionKind; SECTION_COUNT] = [
        SectionKind::Strings,
        SectionKind::Data,
        SectionKind::Dims,
        SectionKind::Buffers,
        SectionKind::Inputs,
        SectionKind::Outputs,
        SectionKind::Programs,
        SectionKind::Params,
        SectionKind::Vars,
        SectionKind::Objects,
        SectionKind::Launches,
        SectionKind::Args,
        SectionKind::Vals,
        SectionKind::Graphs,
        SectionKind::Images,
        SectionKind::LaunchImages,
    ];

    /// Size of one record (1 for the byte sections).
    pub const fn record_size(self) -> usize {
        match self {
            SectionKind::Strings | SectionKind::Data => 1,
            SectionKind::Dims => size_of::<U64<LE>>(),
            SectionKind::Buffers => size_of::<Buffer>(),
            SectionKind::Inputs | SectionKind::Outputs => size_of::<View>(),
            SectionKind::Programs => size_of::<Program>(),
            SectionKind::Params => size_of::<Param>(),
            SectionKind::Vars => size_of::<StrRef>(),
            SectionKind::Objects => size_of::<Object>(),
            SectionKind::Launches => size_of::<Launch>(),
            SectionKind::Args => size_of::<Arg>(),
            SectionKind::Vals => size_of::<Val>(),
            SectionKind::Graphs => size_of::<Graph>(),
            SectionKind::Images => size_of::<Image>(),
            SectionKind::LaunchImages => size_of::<LaunchImage>(),
        }
    }

    /// What errors about this section call it.
    pub const fn what(self) -> &'static str {
        match self {
            SectionKind::Strings => "hcqb string section",
            SectionKind::Data => "hcqb data section",
            SectionKind::Dims => "hcqb dims section",
            SectionKind::Buffers => "hcqb buffer table",
            SectionKind::Inputs => "hcqb input table",
            SectionKind::Outputs => "hcqb output table",
            SectionKind::Programs => "hcqb program table",
            SectionKind::Params => "hcqb parameter table",
            SectionKind::Vars => "hcqb var table",
            SectionKind::Objects => "hcqb object table",
            SectionKind::Launches => "hcqb launch table",
            SectionKind::Args => "hcqb argument table",
            SectionKind::Vals => "hcqb value table",
            SectionKind::Graphs => "hcqb graph table",
            SectionKind::Images => "hcqb image table",
            SectionKind::LaunchImages => "hcqb launch image table",
        }
    }

    /// What a checksum mismatch of this section is called.
    pub const fn checksum_what(self) -> &'static str {
        match self {
            SectionKind::Strings => "hcqb checksum of the string section",
            SectionKind::Data => "hcqb checksum of the data section",
            SectionKind::Dims => "hcqb checksum of the dims section",
            SectionKind::Buffers => "hcqb checksum of the buffer table",
            SectionKind::Inputs => "hcqb checksum of the input table",
            SectionKind::Outputs => "hcqb checksum of the output table",
            SectionKind::Programs => "hcqb checksum of the program table",
            SectionKind::Params => "hcqb checksum of the parameter table",
            SectionKind::Vars => "hcqb checksum of the var table",
            SectionKind::Objects => "hcqb checksum of the object table",
            SectionKind::Launches => "hcqb checksum of the launch table",
            SectionKind::Args => "hcqb checksum of the argument table",
            SectionKind::Vals => "hcqb checksum of the value table",
            SectionKind::Graphs => "hcqb checksum of the graph table",
            SectionKind::Images => "hcqb checksum of the image table",
            SectionKind::LaunchImages => "hcqb checksum of the launch image table",
        }
    }
}

/// A string: `len` UTF-8 bytes at `offset` in the string section (`offset == NONE32`: absent).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct StrRef {
    /// Byte offset in the string section, or [`NONE32`].
    pub offset: U32<LE>,
    /// Length in bytes.
    pub len: U32<LE>,
}

/// A blob: `len` bytes at `offset` in the data section (`offset == NONE64`: absent).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct BlobRef {
    /// Byte offset in the data section, or [`NONE64`].
    pub offset: U64<LE>,
    /// Length in bytes.
    pub len: U64<LE>,
}

/// Where one section lies and its checksum.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct SectionEntry {
    /// Byte offset from the start of the file (a multiple of [`SECTION_ALIGN`], after the header).
    pub offset: U64<LE>,
    /// Size in bytes: `count × record size`.
    pub size: U64<LE>,
    /// Number of records.
    pub count: U32<LE>,
    /// CRC-32 of the section's bytes.
    pub crc: U32<LE>,
}

/// The file header, at offset 0.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 4],
    /// Major version ([`VERSION_MAJOR`]).
    pub version_major: U16<LE>,
    /// Minor version.
    pub version_minor: U16<LE>,
    /// Flags: [`HEADER_HAS_EXTENSION`] (2.1); zero in 1.x and 2.0 (a reader refuses unknown flags).
    pub flags: U32<LE>,
    /// Version of the interchange format the bundle came from (1 for `tg-cpu-bundle` v1).
    pub source_version: U32<LE>,
    /// Total file size in bytes; bytes after it are ignored (a flash partition may be passed whole).
    pub file_size: U64<LE>,
    /// Model name.
    pub model: StrRef,
    /// tinygrad version of the exporter.
    pub tinygrad_version: StrRef,
    /// Level of the x86-64 objects, or absent.
    pub level_x86_64: StrRef,
    /// Level of the AArch64 objects, or absent.
    pub level_aarch64: StrRef,
    /// Architecture code of the objects that produced the expected outputs.
    pub expected_from: u8,
    /// Zero.
    pub reserved0: [u8; 7],
    /// The sections `Strings ..= Images`, indexed by [`SectionKind`].
    pub sections: [SectionEntry; SECTION_COUNT_V2],
    /// Zero.
    pub reserved1: U32<LE>,
    /// CRC-32 of every header byte before this field.
    pub header_crc: U32<LE>,
}

/// Size of the header in bytes.
pub const HEADER_SIZE: usize = size_of::<Header>();
/// The header checksum covers the bytes before this offset.
pub const HEADER_CRC_OFFSET: usize = HEADER_SIZE - 4;

/// The 2.1 header extension, at [`HEADER_SIZE`] when the header's flags have
/// [`HEADER_HAS_EXTENSION`]: the sections 2.1 added. Sections start after it.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct HeaderExt {
    /// The sections from `LaunchImages` on, indexed by [`SectionKind`] − [`SECTION_COUNT_V2`].
    pub sections: [SectionEntry; SECTION_COUNT_EXT],
    /// Zero.
    pub reserved: U32<LE>,
    /// CRC-32 of every extension byte before this field.
    pub ext_crc: U32<LE>,
}

/// Size of the 2.1 header extension in bytes.
pub const HEADER_EXT_SIZE: usize = size_of::<HeaderExt>();

/// The header of a 1.x file: [`Header`] with the 13 sections of 1.x.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct HeaderV1 {
    /// [`MAGIC`].
    pub magic: [u8; 4],
    /// Major version (1).
    pub version_major: U16<LE>,
    /// Minor version.
    pub version_minor: U16<LE>,
    /// Reserved flags, zero.
    pub flags: U32<LE>,
    /// Version of the interchange format the bundle came from.
    pub source_version: U32<LE>,
    /// Total file size in bytes.
    pub file_size: U64<LE>,
    /// Model name.
    pub model: StrRef,
    /// tinygrad version of the exporter.
    pub tinygrad_version: StrRef,
    /// Level of the x86-64 objects, or absent.
    pub level_x86_64: StrRef,
    /// Level of the AArch64 objects, or absent.
    pub level_aarch64: StrRef,
    /// Architecture code of the objects that produced the expected outputs.
    pub expected_from: u8,
    /// Zero.
    pub reserved0: [u8; 7],
    /// The sections of 1.x, indexed by [`SectionKind`] (`Strings` ..= `Vals`).
    pub sections: [SectionEntry; SECTION_COUNT_V1],
    /// Zero.
    pub reserved1: U32<LE>,
    /// CRC-32 of every header byte before this field.
    pub header_crc: U32<LE>,
}

/// Size of a 1.x header in bytes.
pub const HEADER_SIZE_V1: usize = size_of::<HeaderV1>();

/// One graph (2.0): the model as one target's device runs it, made of ranges of the tables.
/// Its launches index programs from `programs_first` and buffers (args, copy views) from
/// `buffers_first`; its inputs and outputs index buffers from `buffers_first` too.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Graph {
    /// Name (for messages).
    pub name: StrRef,
    /// `GraphTarget` code.
    pub target: u8,
    /// Architecture code of the objects that produced this graph's expected outputs.
    pub expected_from: u8,
    /// Zero.
    pub reserved: [u8; 6],
    /// First buffer.
    pub buffers_first: U32<LE>,
    /// Number of buffers.
    pub buffers_len: U32<LE>,
    /// First input.
    pub inputs_first: U32<LE>,
    /// Number of inputs.
    pub inputs_len: U32<LE>,
    /// First output.
    pub outputs_first: U32<LE>,
    /// Number of outputs.
    pub outputs_len: U32<LE>,
    /// First program.
    pub programs_first: U32<LE>,
    /// Number of programs.
    pub programs_len: U32<LE>,
    /// First launch.
    pub launches_first: U32<LE>,
    /// Number of launches.
    pub launches_len: U32<LE>,
}

/// The image view of a buffer (2.0; IMAGE-SCHEMA, `buffers[].image`): `height` rows of `width`
/// RGBA texels, the view of every image binding of the buffer whose launch argument has no
/// [`LaunchImage`] (2.1). Its format is the buffer's dtype.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Image {
    /// Buffer index (in the whole buffer table; the image table is ascending by it).
    pub buffer: U32<LE>,
    /// Texels per row (non-zero).
    pub width: U32<LE>,
    /// Rows (non-zero).
    pub height: U32<LE>,
    /// Bytes from one row to the next (at least `width × 4 × itemsize`).
    pub pitch: U32<LE>,
    /// `DType` code of the channels (float16 or float32).
    pub format: u8,
    /// Zero.
    pub reserved: [u8; 7],
}

/// The image view one kernel launch binds at one argument (2.1; FORMAT.md
/// `launches[].args[j].image`): `height` rows of `width` RGBA texels of `format`, `pitch` bytes
/// apart, from the argument's offset. The table is ascending by (`launch`, `arg`), one record
/// per argument at most.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct LaunchImage {
    /// Launch index (in the whole launch table; a kernel launch).
    pub launch: U32<LE>,
    /// Argument index in that launch.
    pub arg: U32<LE>,
    /// Texels per row (non-zero).
    pub width: U32<LE>,
    /// Rows (non-zero).
    pub height: U32<LE>,
    /// Bytes from one row to the next (at least `width × 4 × itemsize`).
    pub pitch: U32<LE>,
    /// `DType` code of the channels (float16 or float32; the argument's dtype).
    pub format: u8,
    /// Zero.
    pub reserved: [u8; 3],
}

/// A base buffer.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Buffer {
    /// Size in bytes.
    pub nbytes: U64<LE>,
    /// Starting bytes (at most `nbytes`), or absent.
    pub initial: BlobRef,
    /// `DType` code.
    pub dtype: u8,
    /// `BufferRole` code.
    pub role: u8,
    /// [`BUFFER_ALSO_OUTPUT`].
    pub flags: u8,
    /// Zero.
    pub reserved: [u8; 5],
}

/// An input or output view.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct View {
    /// Base buffer index.
    pub buffer: U32<LE>,
    /// `DType` code.
    pub dtype: u8,
    /// Zero.
    pub reserved: [u8; 3],
    /// Byte offset in the buffer.
    pub offset: U64<LE>,
    /// Length in bytes.
    pub nbytes: U64<LE>,
    /// First dimension in the dims section.
    pub dims_first: U32<LE>,
    /// Number of dimensions.
    pub dims_len: U32<LE>,
    /// Expected bytes (outputs only; absent for inputs).
    pub expected: BlobRef,
}

/// A program.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Program {
    /// Kernel name.
    pub name: StrRef,
    /// Entry symbol.
    pub symbol: StrRef,
    /// Number of leading buffer parameters.
    pub n_buffer_args: U32<LE>,
    /// Slot of the thread index, or [`NONE32`].
    pub core_id_arg: U32<LE>,
    /// First parameter in the parameter table.
    pub params_first: U32<LE>,
    /// Number of parameters.
    pub params_len: U32<LE>,
    /// First var in the var table.
    pub vars_first: U32<LE>,
    /// Number of vars.
    pub vars_len: U32<LE>,
    /// First object in the object table.
    pub objects_first: U32<LE>,
    /// Number of objects (each architecture at most once).
    pub objects_len: U32<LE>,
    /// The opaque Adreno metadata (JSON bytes), or absent.
    pub adreno: BlobRef,
}

/// One signature parameter.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Param {
    /// Name, or absent.
    pub name: StrRef,
    /// Slot (equals the position in the signature).
    pub slot: U32<LE>,
    /// `DType` code.
    pub dtype: u8,
    /// [`PARAM_IS_BUFFER`].
    pub flags: u8,
    /// Zero.
    pub reserved: [u8; 2],
    /// First dimension in the dims section.
    pub dims_first: U32<LE>,
    /// Number of dimensions.
    pub dims_len: U32<LE>,
}

/// One object of a program.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Object {
    /// `Arch` code.
    pub arch: U32<LE>,
    /// Zero.
    pub reserved: U32<LE>,
    /// The object bytes.
    pub blob: BlobRef,
}

/// One launch.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Launch {
    /// [`LAUNCH_KERNEL`] or [`LAUNCH_COPY`].
    pub kind: u8,
    /// [`LAUNCH_HAS_GPU`].
    pub flags: u8,
    /// Zero.
    pub reserved0: [u8; 2],
    /// Program index ([`NONE32`] for copies).
    pub program: U32<LE>,
    /// Kernel name (absent for copies).
    pub name: StrRef,
    /// CPU global size.
    pub global_size: [U32<LE>; 3],
    /// CPU local size.
    pub local_size: [U32<LE>; 3],
    /// First argument in the argument table.
    pub args_first: U32<LE>,
    /// Number of arguments (2 for copies: dst, src).
    pub args_len: U32<LE>,
    /// First value in the value table.
    pub vals_first: U32<LE>,
    /// Number of values.
    pub vals_len: U32<LE>,
    /// Slot of the thread index, or [`NONE32`].
    pub core_id_arg: U32<LE>,
    /// GPU work-group count.
    pub gpu_global_size: [U32<LE>; 3],
    /// GPU work-group size.
    pub gpu_local_size: [U32<LE>; 3],
    /// First GPU value in the value table.
    pub gpu_vals_first: U32<LE>,
    /// Number of GPU values (all present).
    pub gpu_vals_len: U32<LE>,
    /// Zero.
    pub reserved1: U32<LE>,
}

/// One launch argument (a view).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Arg {
    /// Base buffer index.
    pub buffer: U32<LE>,
    /// `DType` code.
    pub dtype: u8,
    /// [`ARG_OUT`] | [`ARG_IN`].
    pub flags: u8,
    /// Zero.
    pub reserved: [u8; 2],
    /// Byte offset in the buffer.
    pub offset: U64<LE>,
    /// Length in bytes.
    pub nbytes: U64<LE>,
}

/// One integer value, or `null`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Val {
    /// The value (zero when absent).
    pub value: I64<LE>,
    /// [`VAL_PRESENT`].
    pub flags: u8,
    /// Zero.
    pub reserved: [u8; 7],
}

// The layout is the format: pin every record size.
const _: () = {
    assert!(HEADER_SIZE == 432);
    assert!(HEADER_SIZE_V1 == 384);
    assert!(size_of::<Graph>() == 56);
    assert!(size_of::<Image>() == 24);
    assert!(size_of::<LaunchImage>() == 24);
    assert!(HEADER_EXT_SIZE == 32);
    assert!(size_of::<SectionEntry>() == 24);
    assert!(size_of::<Buffer>() == 32);
    assert!(size_of::<View>() == 48);
    assert!(size_of::<Program>() == 64);
    assert!(size_of::<Param>() == 24);
    assert!(size_of::<Object>() == 24);
    assert!(size_of::<Launch>() == 96);
    assert!(size_of::<Arg>() == 24);
    assert!(size_of::<Val>() == 16);
    assert!(align_of::<Header>() == 1 && align_of::<Launch>() == 1 && align_of::<Val>() == 1);
};
