//! Bundles: a model's kernels, buffers and launch list, in a form that runs without tinygrad.
//!
//! A bundle is everything one forward pass of a model needs: the machine code of every program
//! (per architecture), the base buffers with their starting bytes, the views that are the model's
//! inputs and outputs (with the expected output bytes), and the launches in execution order.
//! Three forms exist:
//!
//! - [`v1`] (`std`): the `tg-cpu-bundle` version 1 interchange directory that tinygrad's exporter
//!   writes (`manifest.json` plus one file per object and buffer). Imported into a model.
//! - [`model`] (`alloc`): [`model::BundleModel`], an owned in-memory model with
//!   [`validate`](model::BundleModel::validate), the meeting point of the other two forms.
//! - [`hcqb`] (no `alloc` needed to read): the packed single-file `.hcqb` format, parsed
//!   zero-copy and validated completely up front, so a bare-metal board can run a bundle from
//!   flash. [`hcqb::write`] (`alloc`) packs a model; [`hcqb::Hcqb::to_model`] unpacks one.
//!
//! [`inspect()`] (`alloc`) renders a packed bundle as a human-readable summary (`hcq inspect`).
//!
//! Indices are positions: buffer `i` is the `i`-th buffer, program `p` the `p`-th program, input
//! and output `k` the `k`-th in the list. A view into a buffer is always `(buffer, offset)`; views
//! that alias one scratch arena stay aliases in every form (nothing ever gives a view its own
//! allocation).
//!
//! Limits: the semantic checks prove that every index and byte range is inside what it refers
//! to and that launches agree with their programs. They cannot prove that a kernel's machine
//! code stays inside its arguments; that trust is placed in the exporter.

#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

pub(crate) mod check;
pub mod crc;
pub mod hcqb;
#[cfg(feature = "alloc")]
mod inspect;
mod limits;
#[cfg(feature = "alloc")]
pub mod model;
#[cfg(all(feature = "alloc", any(test, feature = "testing")))]
pub mod testing;
#[cfg(feature = "std")]
pub mod v1;

#[cfg(feature = "alloc")]
pub use inspect::{DEFAULT_LAUNCHES_LISTED, inspect, inspect_with};

use hcq::dtype::DType;
use hcq::error::{Error, Result};

/// An architecture a bundle can carry program objects for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Arch {
    /// x86-64 ELF64 relocatable objects (SysV ABI).
    X86_64 = 0,
    /// AArch64 ELF64 relocatable objects (AAPCS64, built with `-ffixed-x18`).
    Aarch64 = 1,
    /// Adreno 630 (a6xx) shader blobs from Mesa's ir3 compiler, as tinygrad's QCOM runtime reads them.
    AdrenoA630 = 2,
    /// AMD RDNA3 gfx1100 (RX 7900 XTX) HSA code objects from tinygrad's AMD LLVM renderer
    /// (`AMD_LLVM=1`): ELF64 with a kernel descriptor per kernel.
    AmdGfx1100 = 3,
}

impl Arch {
    /// Every architecture, in code order.
    pub const ALL: [Arch; 4] = [Arch::X86_64, Arch::Aarch64, Arch::AdrenoA630, Arch::AmdGfx1100];

    /// The key the v1 manifest uses (`"x86_64"`, `"aarch64"`, `"adreno_a630"`, `"amd_gfx1100"`).
    pub const fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::AdrenoA630 => "adreno_a630",
            Arch::AmdGfx1100 => "amd_gfx1100",
        }
    }

    /// Parse a v1 manifest key.
    pub fn from_name(name: &str) -> Result<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or(Error::Unsupported { what: "bundle architecture name", value: name.len() as u64 })
    }

    /// The code packed files store.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The architecture with this code.
    pub fn from_code(code: u32) -> Result<Arch> {
        Arch::ALL
            .get(code as usize)
            .copied()
            .ok_or(Error::Unsupported { what: "bundle architecture code", value: code as u64 })
    }

    /// The CPU architecture this build runs on, if a bundle can carry objects for it.
    pub const fn host() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }
}

impl core::fmt::Display for Arch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The devices a graph of a bundle is for: tinygrad schedules a model differently per device
/// (its QCOM JIT has other kernels, buffers and dtypes than its CPU JIT), so a bundle holds one
/// graph per target; the runner runs the graph of its device's target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum GraphTarget {
    /// Any device with objects for it, when the bundle has no graph of the device's own target
    /// (what single-graph bundles hold,
    /// CPU objects and Adreno objects of the same kernels side by side).
    Any = 0,
    /// CPU devices (x86-64 and AArch64 objects).
    Cpu = 1,
    /// The Adreno 630 (QCOM) device: what tinygrad's QCOM JIT ran.
    Qcom = 2,
    /// AMD gfx1100 devices: the kernels tinygrad's AMD LLVM renderer compiled for the schedule.
    Amd = 3,
}

impl GraphTarget {
    /// Every target, in code order.
    pub const ALL: [GraphTarget; 4] = [GraphTarget::Any, GraphTarget::Cpu, GraphTarget::Qcom, GraphTarget::Amd];

    /// The manifest spelling (`"any"`, `"cpu"`, `"qcom"`, `"amd"`).
    pub const fn name(self) -> &'static str {
        match self {
            GraphTarget::Any => "any",
            GraphTarget::Cpu => "cpu",
            GraphTarget::Qcom => "qcom",
            GraphTarget::Amd => "amd",
        }
    }

    /// Parse the manifest spelling.
    pub fn from_name(name: &str) -> Result<GraphTarget> {
        GraphTarget::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or(Error::Unsupported { what: "bundle graph target name", value: name.len() as u64 })
    }

    /// The code packed files store.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The target with this code.
    pub fn from_code(code: u8) -> Result<GraphTarget> {
        GraphTarget::ALL
            .get(code as usize)
            .copied()
            .ok_or(Error::Unsupported { what: "bundle graph target code", value: code as u64 })
    }

    /// The target whose graph runs objects of `arch`.
    pub const fn of_arch(arch: Arch) -> GraphTarget {
        match arch {
            Arch::X86_64 | Arch::Aarch64 => GraphTarget::Cpu,
            Arch::AdrenoA630 => GraphTarget::Qcom,
            Arch::AmdGfx1100 => GraphTarget::Amd,
        }
    }

    /// Whether a graph of this target can run `arch` objects.
    pub const fn runs(self, arch: Arch) -> bool {
        matches!(
            (self, GraphTarget::of_arch(arch)),
            (GraphTarget::Any, _)
                | (GraphTarget::Cpu, GraphTarget::Cpu)
                | (GraphTarget::Qcom, GraphTarget::Qcom)
                | (GraphTarget::Amd, GraphTarget::Amd)
        )
    }
}

impl core::fmt::Display for GraphTarget {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a base buffer holds (the v1 manifest's `role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum BufferRole {
    /// A model input; starts with the bundle's fixed input bytes.
    Input = 0,
    /// Read before it is written (parameters, constants); starts with its stored bytes, never modified.
    Weight = 1,
    /// Holds a returned tensor; fully overwritten (zero it for reproducibility).
    Output = 2,
    /// Intermediate values (usually the one `int8` arena), written before read; zero it.
    Scratch = 3,
}

impl BufferRole {
    /// Every role, in code order.
    pub const ALL: [BufferRole; 4] = [BufferRole::Input, BufferRole::Weight, BufferRole::Output, BufferRole::Scratch];

    /// The manifest spelling (`"input"`, `"weight"`, `"output"`, `"scratch"`).
    pub const fn name(self) -> &'static str {
        match self {
            BufferRole::Input => "input",
            BufferRole::Weight => "weight",
            BufferRole::Output => "output",
            BufferRole::Scratch => "scratch",
        }
    }

    /// Parse the manifest spelling.
    pub fn from_name(name: &str) -> Result<BufferRole> {
        BufferRole::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .ok_or(Error::Unsupported { what: "buffer role", value: name.len() as u64 })
    }

    /// The code packed files store.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The role with this code.
    pub fn from_code(code: u8) -> Result<BufferRole> {
        BufferRole::ALL
            .get(code as usize)
            .copied()
            .ok_or(Error::Unsupported { what: "buffer role code", value: code as u64 })
    }
}

impl core::fmt::Display for BufferRole {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A view of a base buffer: `nbytes` bytes at `offset` in buffer `buffer`, holding `dtype`
/// elements. Launch arguments, copy endpoints, inputs and outputs are all views. Two views may
/// overlap (the scratch arena); the runtime passes `base(buffer) + offset` and never copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArgView {
    /// Index of the base buffer.
    pub buffer: u32,
    /// Byte offset inside the base buffer.
    pub offset: u64,
    /// Length of the view in bytes.
    pub nbytes: u64,
    /// Element type of the view.
    pub dtype: DType,
}

impl ArgView {
    /// One past the last byte of the view, or `None` if that overflows.
    pub const fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.nbytes)
    }
}

/// Where in a bundle an error was found; becomes an [`Error::Context`] with `alloc`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loc {
    Buffer(usize),
    Input(usize),
    Output(usize),
    Program(usize),
    Param(usize, usize),
    Var(usize, usize),
    Object(usize, usize),
    Launch(usize),
    LaunchArg(usize, usize),
    LaunchVal(usize, usize),
    GpuVal(usize, usize),
    CopyDst(usize),
    CopySrc(usize),
    Graph(usize),
    Image(usize),
    LaunchImage(usize, usize),
}

impl core::fmt::Display for Loc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Loc::Buffer(i) => write!(f, "buffer {i}"),
            Loc::Input(i) => write!(f, "input {i}"),
            Loc::Output(i) => write!(f, "output {i}"),
            Loc::Program(i) => write!(f, "program {i}"),
            Loc::Param(i, j) => write!(f, "program {i} parameter {j}"),
            Loc::Var(i, j) => write!(f, "program {i} var {j}"),
            Loc::Object(i, j) => write!(f, "program {i} object {j}"),
            Loc::Launch(i) => write!(f, "launch {i}"),
            Loc::LaunchArg(i, j) => write!(f, "launch {i} arg {j}"),
            Loc::LaunchVal(i, j) => write!(f, "launch {i} val {j}"),
            Loc::GpuVal(i, j) => write!(f, "launch {i} gpu val {j}"),
            Loc::CopyDst(i) => write!(f, "launch {i} (copy) dst"),
            Loc::CopySrc(i) => write!(f, "launch {i} (copy) src"),
            Loc::Graph(i) => write!(f, "graph {i}"),
            Loc::Image(i) => write!(f, "image of buffer {i}"),
            Loc::LaunchImage(i, j) => write!(f, "launch {i} arg {j} image"),
        }
    }
}

/// Attach `loc` to `err` (as an [`Error::Context`] when the heap is available).
#[inline]
pub(crate) fn at(err: Error, loc: Loc) -> Error {
    #[cfg(feature = "alloc")]
    {
        use alloc::string::ToString;
        err.context(loc.to_string())
    }
    #[cfg(not(feature = "alloc"))]
    {
        let _ = loc;
        err
    }
}
