//! A loader for clang-emitted ELF64 little-endian relocatable objects (`ET_REL`), x86-64 and AArch64.
//!
//! This is the loader tinygrad's CPU backend needs: one object per kernel, built with
//! `clang -c -O2 -fPIC -ffreestanding -nostdlib`, laid out into one image and relocated in place.
//! It is `no_std` (+ `alloc`) and performs no I/O: [`ElfObject::load_into`] writes into a caller's
//! byte slice at a caller-given address, so the same code serves the host executor
//! (`crate::exec`), bare-metal targets, tests and the fuzzer.
//!
//! # What it does
//!
//! - **Layout**: every `SHF_ALLOC` section of type `SHT_PROGBITS` (bytes copied) or `SHT_NOBITS`
//!   (zero-filled), in section-header order, each at its `sh_addralign`, in one image. After them
//!   comes a veneer area of [`VENEER_SIZE`] bytes per branch relocation (`R_AARCH64_CALL26`/
//!   `JUMP26`, `R_X86_64_PLT32`); a slot is filled only when the branch target is out of range.
//! - **Relocations**: every `SHT_RELA` section whose target section is laid out, except
//!   `.rela.eh_frame` (unwind tables are never read). x86-64: `R_X86_64_64`, `PC32`, `PLT32`,
//!   `32`, `32S`. AArch64: `ABS64`, `PREL32`, `ADR_PREL_PG_HI21`, `ADD_ABS_LO12_NC`,
//!   `LDST8/16/32/64/128_ABS_LO12_NC`, `CALL26`, `JUMP26`. 32-bit results are range-checked.
//! - **Symbols**: section symbols, local and global defined symbols (section base + `st_value`),
//!   `SHN_ABS` symbols, and undefined symbols through a caller-provided resolver. An unresolved
//!   weak symbol is 0 (the ELF rule); an unresolved non-weak symbol is an error naming it.
//!
//! # Limits (each is a clear error, never a panic)
//!
//! - No `SHT_REL` (implicit-addend) sections, no GOT-based relocations (`GOTPCREL`, `ADR_GOT_PAGE`,
//!   which `-fPIC` emits only for *external data*), no TLS, no `SHN_COMMON` or `SHN_XINDEX`
//!   symbols, no section alignment above 4096, images at most [`MAX_IMAGE_SIZE`] bytes.
//! - Other allocated section types (`SHT_INIT_ARRAY`, `SHT_X86_64_UNWIND`, notes) are not laid
//!   out; relocations against them are skipped. Constructors never run.
//! - The x86-64 veneer (`jmp *0(%rip)`) is used only for `PLT32` with the call addend `-4`; a far
//!   `PC32` reference (external data) is a range error.
//!
//! Every offset, size and index read from the file is bounds-checked with checked arithmetic.

use alloc::{format, string::String, vec, vec::Vec};
use core::fmt;
use hcq::error::ResultExt;
use hcq::{Error, Result};
use zerocopy::FromBytes;

pub mod raw;
mod relocate;

use raw::{
    EI_CLASS, EI_DATA, EI_VERSION, ELFCLASS64, ELFDATA2LSB, ELFMAG, EM_AARCH64, EM_X86_64, ET_REL, EV_CURRENT,
    RELA_SIZE, SHDR_SIZE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS, SHN_ABS, SHN_COMMON, SHN_LORESERVE, SHN_UNDEF, SHN_XINDEX,
    SHT_NOBITS, SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB, STB_LOCAL, STB_WEAK, STT_FUNC, STT_TLS,
    SYM_SIZE,
};

/// Largest image (sections plus veneers) this loader lays out: 256 MiB.
pub const MAX_IMAGE_SIZE: u64 = 256 << 20;
/// Largest section alignment accepted (one page: the executable mapping is page-aligned).
pub const MAX_SECTION_ALIGN: u64 = 4096;
/// Bytes per veneer slot: AArch64 `LDR x16, #8; BR x16; .quad target`, x86-64 `jmp *0(%rip); .quad target`.
pub const VENEER_SIZE: u64 = 16;

// x86-64 relocation types (System V AMD64 psABI).
const R_X86_64_NONE: u32 = 0;
const R_X86_64_64: u32 = 1;
const R_X86_64_PC32: u32 = 2;
const R_X86_64_PLT32: u32 = 4;
const R_X86_64_32: u32 = 10;
const R_X86_64_32S: u32 = 11;

// AArch64 relocation types (AAELF64).
const R_AARCH64_NONE_0: u32 = 0;
const R_AARCH64_NONE: u32 = 256;
const R_AARCH64_ABS64: u32 = 257;
const R_AARCH64_PREL32: u32 = 261;
const R_AARCH64_ADR_PREL_PG_HI21: u32 = 275;
const R_AARCH64_ADD_ABS_LO12_NC: u32 = 277;
const R_AARCH64_LDST8_ABS_LO12_NC: u32 = 278;
const R_AARCH64_JUMP26: u32 = 282;
const R_AARCH64_CALL26: u32 = 283;
const R_AARCH64_LDST16_ABS_LO12_NC: u32 = 284;
const R_AARCH64_LDST32_ABS_LO12_NC: u32 = 285;
const R_AARCH64_LDST64_ABS_LO12_NC: u32 = 286;
const R_AARCH64_LDST128_ABS_LO12_NC: u32 = 299;

/// AArch64 veneer: `LDR x16, #8` (literal 8 bytes ahead), `BR x16`, then the 64-bit target.
const A64_LDR_X16_PC8: u32 = 0x5800_0050;
const A64_BR_X16: u32 = 0xd61f_0200;

/// A CPU architecture the loader relocates for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Machine {
    /// x86-64 (`EM_X86_64` = 62), System V ABI.
    X86_64,
    /// AArch64 (`EM_AARCH64` = 183), AAPCS64.
    Aarch64,
}

impl Machine {
    /// The ELF `e_machine` value of this architecture.
    pub const fn e_machine(self) -> u16 {
        match self {
            Machine::X86_64 => EM_X86_64,
            Machine::Aarch64 => EM_AARCH64,
        }
    }

    /// The architecture with this ELF `e_machine` value, if the loader supports it.
    pub const fn from_e_machine(machine: u16) -> Option<Machine> {
        match machine {
            EM_X86_64 => Some(Machine::X86_64),
            EM_AARCH64 => Some(Machine::Aarch64),
            _ => None,
        }
    }

    /// Short name: `"x86_64"` or `"aarch64"` (the names bundle manifests use).
    pub const fn name(self) -> &'static str {
        match self {
            Machine::X86_64 => "x86_64",
            Machine::Aarch64 => "aarch64",
        }
    }

    /// The architecture this program runs on.
    #[cfg(target_arch = "x86_64")]
    pub const fn host() -> Machine {
        Machine::X86_64
    }

    /// The architecture this program runs on.
    #[cfg(target_arch = "aarch64")]
    pub const fn host() -> Machine {
        Machine::Aarch64
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name of a relocation type (`"R_X86_64_PC32"`), for the types this module knows by name,
/// including common ones it does not apply (GOT, TLS). `None` for anything else, and for every
/// type without the `reloc-names` feature (on with `std`): a bare-metal image keeps its ~1.4 KiB
/// of names out, and its errors give the numeric type only.
#[cfg(not(feature = "reloc-names"))]
pub fn relocation_name(_arch: Machine, _ty: u32) -> Option<&'static str> {
    None
}

/// The name of a relocation type (`"R_X86_64_PC32"`), for the types this module knows by name,
/// including common ones it does not apply (GOT, TLS). `None` for anything else.
#[cfg(feature = "reloc-names")]
pub fn relocation_name(arch: Machine, ty: u32) -> Option<&'static str> {
    let name = match arch {
        Machine::X86_64 => match ty {
            0 => "R_X86_64_NONE",
            1 => "R_X86_64_64",
            2 => "R_X86_64_PC32",
            3 => "R_X86_64_GOT32",
            4 => "R_X86_64_PLT32",
            5 => "R_X86_64_COPY",
            6 => "R_X86_64_GLOB_DAT",
            7 => "R_X86_64_JUMP_SLOT",
            8 => "R_X86_64_RELATIVE",
            9 => "R_X86_64_GOTPCREL",
            10 => "R_X86_64_32",
            11 => "R_X86_64_32S",
            12 => "R_X86_64_16",
            13 => "R_X86_64_PC16",
            14 => "R_X86_64_8",
            15 => "R_X86_64_PC8",
            16 => "R_X86_64_DTPMOD64",
            17 => "R_X86_64_DTPOFF64",
            18 => "R_X86_64_TPOFF64",
            19 => "R_X86_64_TLSGD",
            20 => "R_X86_64_TLSLD",
            21 => "R_X86_64_DTPOFF32",
            22 => "R_X86_64_GOTTPOFF",
            23 => "R_X86_64_TPOFF32",
            24 => "R_X86_64_PC64",
            25 => "R_X86_64_GOTOFF64",
            26 => "R_X86_64_GOTPC32",
            32 => "R_X86_64_SIZE32",
            33 => "R_X86_64_SIZE64",
            34 => "R_X86_64_GOTPC32_TLSDESC",
            35 => "R_X86_64_TLSDESC_CALL",
            36 => "R_X86_64_TLSDESC",
            37 => "R_X86_64_IRELATIVE",
            41 => "R_X86_64_GOTPCRELX",
            42 => "R_X86_64_REX_GOTPCRELX",
            _ => return None,
        },
        Machine::Aarch64 => match ty {
            0 | 256 => "R_AARCH64_NONE",
            257 => "R_AARCH64_ABS64",
            258 => "R_AARCH64_ABS32",
            259 => "R_AARCH64_ABS16",
            260 => "R_AARCH64_PREL64",
            261 => "R_AARCH64_PREL32",
            262 => "R_AARCH64_PREL16",
            263 => "R_AARCH64_MOVW_UABS_G0",
            264 => "R_AARCH64_MOVW_UABS_G0_NC",
            265 => "R_AARCH64_MOVW_UABS_G1",
            266 => "R_AARCH64_MOVW_UABS_G1_NC",
            267 => "R_AARCH64_MOVW_UABS_G2",
            268 => "R_AARCH64_MOVW_UABS_G2_NC",
            269 => "R_AARCH64_MOVW_UABS_G3",
            270 => "R_AARCH64_MOVW_SABS_G0",
            271 => "R_AARCH64_MOVW_SABS_G1",
            272 => "R_AARCH64_MOVW_SABS_G2",
            273 => "R_AARCH64_LD_PREL_LO19",
            274 => "R_AARCH64_ADR_PREL_LO21",
            275 => "R_AARCH64_ADR_PREL_PG_HI21",
            276 => "R_AARCH64_ADR_PREL_PG_HI21_NC",
            277 => "R_AARCH64_ADD_ABS_LO12_NC",
            278 => "R_AARCH64_LDST8_ABS_LO12_NC",
            279 => "R_AARCH64_TSTBR14",
            280 => "R_AARCH64_CONDBR19",
            282 => "R_AARCH64_JUMP26",
            283 => "R_AARCH64_CALL26",
            284 => "R_AARCH64_LDST16_ABS_LO12_NC",
            285 => "R_AARCH64_LDST32_ABS_LO12_NC",
            286 => "R_AARCH64_LDST64_ABS_LO12_NC",
            299 => "R_AARCH64_LDST128_ABS_LO12_NC",
            311 => "R_AARCH64_ADR_GOT_PAGE",
            312 => "R_AARCH64_LD64_GOT_LO12_NC",
            1024 => "R_AARCH64_COPY",
            1025 => "R_AARCH64_GLOB_DAT",
            1026 => "R_AARCH64_JUMP_SLOT",
            1027 => "R_AARCH64_RELATIVE",
            _ => return None,
        },
    };
    Some(name)
}

/// Where the sections of an object go in its load image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes the image needs, veneer area included.
    pub size: u64,
    /// Alignment the image's start address needs (the largest section alignment, at least 16).
    pub align: u64,
    /// Image offset of each section, indexed by section-header index; `None` for sections
    /// that are not laid out.
    pub sections: Vec<Option<u64>>,
    /// Image offset of the veneer area (16-byte aligned).
    pub veneer_offset: u64,
    /// Number of [`VENEER_SIZE`]-byte veneer slots (one per branch relocation).
    pub veneer_slots: u64,
}

/// One section header, as read from the file (only the fields the loader uses).
#[derive(Clone, Copy, Debug)]
struct Section {
    name: u32,
    kind: u32,
    flags: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

/// One symbol-table entry.
#[derive(Clone, Copy, Debug)]
struct Symbol {
    name: u32,
    info: u8,
    shndx: u16,
    value: u64,
}

impl Symbol {
    fn bind(self) -> u8 {
        self.info >> 4
    }
    fn kind(self) -> u8 {
        self.info & 0xf
    }
}

/// A `SHT_RELA` section that applies to a laid-out section.
#[derive(Clone, Copy, Debug)]
struct RelaSet<'a> {
    /// Section-header index of the RELA section (for messages).
    index: usize,
    /// Section-header index of the section it patches.
    target: usize,
    /// The `Elf64_Rela` entries.
    entries: &'a [raw::Rela],
}

/// A parsed, validated relocatable object, borrowing the file bytes.
///
/// Parsing checks the headers, the section table, the symbol table and the relocation sections,
/// and computes the [`Layout`]; [`ElfObject::load_into`] then copies and relocates.
#[derive(Clone, Debug)]
pub struct ElfObject<'a> {
    bytes: &'a [u8],
    arch: Machine,
    sections: Vec<Section>,
    shstrtab: &'a [u8],
    symtab: &'a [u8],
    strtab: &'a [u8],
    relas: Vec<RelaSet<'a>>,
    layout: Layout,
}

/// A record copied out of the file into 8-byte aligned storage (see [`rec`]).
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Aligned<T>(T);

impl<T> core::ops::Deref for Aligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Record `r` copied into aligned storage, to read its fields from there.
///
/// The records have alignment 1 (they are read in place at any offset), so on a target without
/// unaligned loads (`aarch64-unknown-none` assumes strict alignment) each multi-byte field read
/// in place is a load per byte. One copy (a `memcpy`) makes every field of the copy a plain
/// load. Never inlined: inlined, the optimizer turns the copy back into field-wise loads from
/// the unaligned record.
#[inline(never)]
fn rec<T: Copy>(r: &T) -> Aligned<T> {
    Aligned(*r)
}

/// The record `T` at `offset` in `bytes` (read in place: the records are alignment 1), or an
/// [`Error::OutOfBounds`] naming `what`.
fn record<'a, T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable>(
    bytes: &'a [u8],
    offset: u64,
    what: &'static str,
) -> Result<&'a T> {
    let len = size_of::<T>() as u64;
    let s = slice(bytes, offset, len, what)?;
    T::ref_from_bytes(s).map_err(|_| Error::OutOfBounds { what, offset, len, limit: bytes.len() as u64 })
}

/// `bytes[offset .. offset + len]`, or an [`Error::OutOfBounds`] naming `what`.
fn slice<'a>(bytes: &'a [u8], offset: u64, len: u64, what: &'static str) -> Result<&'a [u8]> {
    let limit = bytes.len() as u64;
    let oob = Error::OutOfBounds { what, offset, len, limit };
    let end = offset.checked_add(len).ok_or_else(|| oob.clone())?;
    let (start, end) = (usize::try_from(offset), usize::try_from(end));
    match (start, end) {
        (Ok(start), Ok(end)) => bytes.get(start..end).ok_or(oob),
        _ => Err(oob),
    }
}

/// The NUL-terminated string at `offset` in a string table.
fn c_str<'t>(table: &'t [u8], offset: u32, what: &'static str) -> Result<&'t [u8]> {
    let start = offset as usize;
    let rest = table.get(start..).ok_or(Error::OutOfBounds {
        what,
        offset: u64::from(offset),
        len: 1,
        limit: table.len() as u64,
    })?;
    let len = rest.iter().position(|&b| b == 0).ok_or(Error::Malformed {
        what,
        at: u64::from(offset),
        reason: "string is not NUL-terminated inside its string table",
    })?;
    Ok(rest.get(..len).unwrap_or_default())
}

fn align_up(value: u64, align: u64) -> Option<u64> {
    // `align` is a power of two here.
    value.checked_add(align - 1).map(|v| v & !(align - 1))
}

fn is_branch(arch: Machine, ty: u32) -> bool {
    match arch {
        Machine::X86_64 => ty == R_X86_64_PLT32,
        Machine::Aarch64 => ty == R_AARCH64_CALL26 || ty == R_AARCH64_JUMP26,
    }
}

impl<'a> ElfObject<'a> {
    /// Parse and validate an object for either supported architecture (see [`ElfObject::arch`]).
    ///
    /// Errors: not ELF, not ELF64 little-endian, not `ET_REL`, an `e_machine` other than
    /// x86-64/AArch64, any header, section, symbol-table or relocation-section field that points
    /// outside the file or is inconsistent, or an unsupported feature (see the module docs).
    pub fn parse(bytes: &'a [u8]) -> Result<ElfObject<'a>> {
        let ehdr = rec(record::<raw::Ehdr>(bytes, 0, "elf header")?);
        if ehdr.ident[..4] != ELFMAG {
            return Err(Error::Malformed { what: "elf header", at: 0, reason: "not an ELF file (bad magic)" });
        }
        let class = ehdr.ident[EI_CLASS];
        if class != ELFCLASS64 {
            return Err(Error::Unsupported { what: "elf class (only ELFCLASS64 = 2 loads)", value: class.into() });
        }
        let data = ehdr.ident[EI_DATA];
        if data != ELFDATA2LSB {
            return Err(Error::Unsupported {
                what: "elf data encoding (only little-endian ELFDATA2LSB = 1 loads)",
                value: data.into(),
            });
        }
        let version = ehdr.ident[EI_VERSION];
        if version != EV_CURRENT {
            return Err(Error::Unsupported { what: "elf ident version (only 1)", value: version.into() });
        }
        let e_type = ehdr.e_type.get();
        if e_type != ET_REL {
            return Err(Error::Unsupported {
                what: "elf type (only ET_REL = 1 relocatable objects load)",
                value: e_type.into(),
            });
        }
        let machine = ehdr.machine.get();
        let arch = Machine::from_e_machine(machine).ok_or(Error::Unsupported {
            what: "elf e_machine (only x86_64 = 62 and aarch64 = 183 load)",
            value: machine.into(),
        })?;

        let shoff = ehdr.shoff.get();
        let shentsize = ehdr.shentsize.get();
        let e_shnum = ehdr.shnum.get();
        let e_shstrndx = ehdr.shstrndx.get();
        if shoff == 0 {
            return Err(Error::Malformed {
                what: "elf header",
                at: 0x28,
                reason: "no section header table (e_shoff = 0)",
            });
        }
        if u64::from(shentsize) != SHDR_SIZE {
            return Err(Error::Mismatch { what: "elf e_shentsize", expected: SHDR_SIZE, found: shentsize.into() });
        }
        let sec0 = read_section(bytes, shoff, 0)?;
        // Extended numbering: with e_shnum = 0 the count lives in section 0's sh_size, and
        // with e_shstrndx = SHN_XINDEX the index lives in its sh_link.
        let shnum = if e_shnum == 0 { sec0.size } else { u64::from(e_shnum) };
        let table_len = shnum.checked_mul(SHDR_SIZE).ok_or(Error::OutOfBounds {
            what: "elf section header table",
            offset: shoff,
            len: u64::MAX,
            limit: bytes.len() as u64,
        })?;
        slice(bytes, shoff, table_len, "elf section header table")?;
        let shstrndx = if e_shstrndx == SHN_XINDEX { u64::from(sec0.link) } else { u64::from(e_shstrndx) };

        // shnum * 64 fits in the file, so the count fits in usize and allocating it is bounded.
        let mut sections = Vec::with_capacity(shnum as usize);
        for i in 0..shnum {
            sections.push(read_section(bytes, shoff, i)?);
        }

        let shstrtab = if shstrndx == 0 {
            &[][..]
        } else {
            let sec = sections.get(shstrndx as usize).ok_or(Error::OutOfBounds {
                what: "elf e_shstrndx",
                offset: shstrndx,
                len: 1,
                limit: shnum,
            })?;
            if sec.kind != SHT_STRTAB {
                return Err(Error::Malformed {
                    what: "elf section header",
                    at: shstrndx,
                    reason: "e_shstrndx names a section that is not SHT_STRTAB",
                });
            }
            slice(bytes, sec.offset, sec.size, "elf section-name string table")?
        };

        let (symtab_index, symtab, strtab) = find_symtab(bytes, &sections)?;
        let mut obj = ElfObject {
            bytes,
            arch,
            sections,
            shstrtab,
            symtab,
            strtab,
            relas: Vec::new(),
            layout: Layout { size: 0, align: 16, sections: Vec::new(), veneer_offset: 0, veneer_slots: 0 },
        };
        obj.layout = obj.compute_layout()?;
        obj.relas = obj.collect_relas(symtab_index)?;
        let branches =
            obj.relas.iter().flat_map(|set| set.entries).filter(|e| is_branch(arch, rec(*e).kind())).count() as u64;
        let veneer_bytes = branches.checked_mul(VENEER_SIZE);
        let size = veneer_bytes.and_then(|v| obj.layout.veneer_offset.checked_add(v));
        match size {
            Some(size) if size <= MAX_IMAGE_SIZE => {
                obj.layout.size = size;
                obj.layout.veneer_slots = branches;
            }
            _ => {
                return Err(Error::OutOfSpace {
                    what: "elf load image (veneers included)",
                    requested: size.unwrap_or(u64::MAX),
                    capacity: MAX_IMAGE_SIZE,
                });
            }
        }
        Ok(obj)
    }

    /// Parse like [`ElfObject::parse`] and require the object to be for `arch`
    /// (an [`Error::Mismatch`] on `e_machine` otherwise, with both architectures named).
    pub fn parse_for(bytes: &'a [u8], arch: Machine) -> Result<ElfObject<'a>> {
        let obj = ElfObject::parse(bytes)?;
        if obj.arch != arch {
            return Err(Error::Mismatch {
                what: "elf e_machine",
                expected: arch.e_machine().into(),
                found: obj.arch.e_machine().into(),
            })
            .with_context(|| format!("object is for {}, expected {}", obj.arch, arch));
        }
        Ok(obj)
    }

    /// The architecture named by the object's `e_machine`.
    pub fn arch(&self) -> Machine {
        self.arch
    }

    /// Where the sections go and how big and aligned the image must be.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Names of the undefined symbols that relocations reference (what a resolver must provide),
    /// without duplicates, in first-use order.
    pub fn undefined_symbols(&self) -> Result<Vec<&'a str>> {
        let mut names: Vec<&'a str> = Vec::new();
        for set in &self.relas {
            for entry in set.entries {
                let sym_index = rec(entry).sym();
                if sym_index == 0 {
                    continue;
                }
                let sym = self.symbol(sym_index)?;
                if sym.shndx == SHN_UNDEF {
                    let name = self.symbol_name(sym_index, sym)?;
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
        }
        Ok(names)
    }

    /// Image offset of the entry function `name`: a defined `STT_FUNC` symbol in a laid-out,
    /// executable section (a global or weak definition wins over a local one).
    pub fn entry_offset(&self, name: &str) -> Result<u64> {
        let count = self.symbol_count();
        let mut found: Option<(u64, Symbol)> = None;
        for index in 1..count {
            let sym = self.symbol(index)?;
            if sym.shndx == SHN_UNDEF || sym.shndx >= SHN_LORESERVE {
                continue;
            }
            if c_str(self.strtab, sym.name, "elf symbol name")? != name.as_bytes() {
                continue;
            }
            let better = match found {
                None => true,
                Some((_, prev)) => prev.bind() == STB_LOCAL && sym.bind() != STB_LOCAL,
            };
            if better {
                found = Some((index, sym));
            }
        }
        // the symbol's checks, then its location once
        let offset = || -> Result<u64> {
            let (index, sym) = found.ok_or(Error::Malformed {
                what: "elf symbol table",
                at: count,
                reason: "no defined symbol of this name",
            })?;
            if sym.kind() != STT_FUNC {
                return Err(Error::Malformed {
                    what: "elf symbol",
                    at: index,
                    reason: "entry symbol is not a function (STT_FUNC)",
                });
            }
            let shndx = usize::from(sym.shndx);
            let (section, base) = match (self.sections.get(shndx), self.layout.sections.get(shndx).copied().flatten()) {
                (Some(section), Some(base)) if section.flags & SHF_EXECINSTR != 0 => (section, base),
                _ => {
                    return Err(Error::Malformed {
                        what: "elf symbol",
                        at: index,
                        reason: "entry symbol is not in a loaded executable section",
                    });
                }
            };
            if sym.value >= section.size {
                return Err(Error::OutOfBounds {
                    what: "entry symbol value",
                    offset: sym.value,
                    len: 1,
                    limit: section.size,
                });
            }
            Ok(base + sym.value)
        };
        offset().with_context(|| format!("entry symbol `{name}`"))
    }

    fn compute_layout(&self) -> Result<Layout> {
        let mut offsets = Vec::with_capacity(self.sections.len());
        let mut cursor = 0u64;
        let mut max_align = 16u64;
        for (index, section) in self.sections.iter().enumerate() {
            let laid_out =
                section.flags & SHF_ALLOC != 0 && (section.kind == SHT_PROGBITS || section.kind == SHT_NOBITS);
            if !laid_out {
                offsets.push(None);
                continue;
            }
            // the section's checks, then its location once
            let placed = (|| -> Result<(u64, u64, u64)> {
                if section.flags & SHF_TLS != 0 {
                    return Err(Error::Unsupported { what: "thread-local (SHF_TLS) section", value: index as u64 });
                }
                let align = section.align.max(1);
                if !align.is_power_of_two() {
                    return Err(Error::Malformed {
                        what: "elf section header",
                        at: index as u64,
                        reason: "sh_addralign is not a power of two",
                    });
                }
                if align > MAX_SECTION_ALIGN {
                    return Err(Error::Unsupported { what: "elf section alignment above 4096", value: align });
                }
                if section.kind == SHT_PROGBITS {
                    slice(self.bytes, section.offset, section.size, "elf section data")?;
                }
                let start = align_up(cursor, align);
                let end = start.and_then(|s| s.checked_add(section.size));
                match (start, end) {
                    (Some(start), Some(end)) if end <= MAX_IMAGE_SIZE => Ok((start, end, align)),
                    _ => Err(Error::OutOfSpace {
                        what: "elf load image",
                        requested: end.unwrap_or(u64::MAX),
                        capacity: MAX_IMAGE_SIZE,
                    }),
                }
            })();
            let (start, end, align) =
                placed.with_context(|| format!("section {index} ({})", self.section_name(index)))?;
            offsets.push(Some(start));
            cursor = end;
            max_align = max_align.max(align);
        }
        // cursor <= MAX_IMAGE_SIZE, so this cannot overflow.
        let veneer_offset = align_up(cursor, 16).unwrap_or(cursor);
        Ok(Layout { size: veneer_offset, align: max_align, sections: offsets, veneer_offset, veneer_slots: 0 })
    }

    fn collect_relas(&self, symtab_index: Option<usize>) -> Result<Vec<RelaSet<'a>>> {
        let mut sets = Vec::new();
        for (index, section) in self.sections.iter().enumerate() {
            if section.kind != SHT_RELA && section.kind != SHT_REL {
                continue;
            }
            // the section's checks, then its location once
            let set = (|| -> Result<Option<RelaSet<'a>>> {
                let target = section.info as usize;
                let Some(target_section) = self.sections.get(target) else {
                    return Err(Error::OutOfBounds {
                        what: "relocation section sh_info (target section index)",
                        offset: target as u64,
                        len: 1,
                        limit: self.sections.len() as u64,
                    });
                };
                if c_str(self.shstrtab, section.name, "elf section name").ok() == Some(b".rela.eh_frame".as_slice()) {
                    return Ok(None);
                }
                if self.layout.sections.get(target).copied().flatten().is_none() {
                    return Ok(None); // relocations for debug info or other unloaded sections
                }
                if section.kind == SHT_REL {
                    return Err(Error::Unsupported {
                        what: "SHT_REL relocation section (only SHT_RELA)",
                        value: index as u64,
                    });
                }
                if target_section.kind == SHT_NOBITS {
                    return Err(Error::Malformed {
                        what: "elf section header",
                        at: index as u64,
                        reason: "relocations target a SHT_NOBITS section",
                    });
                }
                if section.entsize != RELA_SIZE {
                    return Err(Error::Mismatch {
                        what: "SHT_RELA sh_entsize",
                        expected: RELA_SIZE,
                        found: section.entsize,
                    });
                }
                if !section.size.is_multiple_of(RELA_SIZE) {
                    return Err(Error::Malformed {
                        what: "elf section header",
                        at: index as u64,
                        reason: "SHT_RELA size is not a multiple of 24",
                    });
                }
                if symtab_index != Some(section.link as usize) {
                    return Err(Error::Malformed {
                        what: "elf section header",
                        at: index as u64,
                        reason: "SHT_RELA sh_link is not the symbol table",
                    });
                }
                let bytes = slice(self.bytes, section.offset, section.size, "elf relocation entries")?;
                // the size is a multiple of 24 (checked above), so the records cover the bytes exactly
                let entries = <[raw::Rela]>::ref_from_bytes(bytes).map_err(|_| Error::Malformed {
                    what: "elf section header",
                    at: index as u64,
                    reason: "SHT_RELA entries are not whole Elf64_Rela records",
                })?;
                Ok(Some(RelaSet { index, target, entries }))
            })();
            let set = set.with_context(|| format!("relocation section {index} ({})", self.section_name(index)))?;
            sets.extend(set);
        }
        Ok(sets)
    }

    fn symbol_count(&self) -> u64 {
        self.symtab.len() as u64 / SYM_SIZE
    }

    fn symbol(&self, index: u64) -> Result<Symbol> {
        let count = self.symbol_count();
        if index >= count {
            return Err(Error::OutOfBounds { what: "elf symbol index", offset: index, len: 1, limit: count });
        }
        let sym = rec(record::<raw::Sym>(self.symtab, index * SYM_SIZE, "elf symbol table")?);
        Ok(Symbol { name: sym.name.get(), info: sym.info, shndx: sym.shndx.get(), value: sym.value.get() })
    }

    fn symbol_name(&self, index: u64, sym: Symbol) -> Result<&'a str> {
        let bytes = c_str(self.strtab, sym.name, "elf symbol name")?;
        core::str::from_utf8(bytes).map_err(|_| Error::Malformed {
            what: "elf symbol name",
            at: index,
            reason: "symbol name is not UTF-8",
        })
    }

    /// A label for messages: `symbol 3 "expf"`, or the section name for section symbols.
    fn symbol_label(&self, index: u64) -> String {
        match self.symbol(index) {
            Ok(sym) => match self.symbol_name(index, sym) {
                Ok(name) if !name.is_empty() => format!("symbol {index} `{name}`"),
                _ if usize::from(sym.shndx) < self.sections.len() && sym.shndx != SHN_UNDEF => {
                    format!("symbol {index} (section {})", self.section_name(usize::from(sym.shndx)))
                }
                _ => format!("symbol {index}"),
            },
            Err(_) => format!("symbol {index} (out of range)"),
        }
    }

    fn section_name(&self, index: usize) -> String {
        let name = self
            .sections
            .get(index)
            .and_then(|s| c_str(self.shstrtab, s.name, "elf section name").ok())
            .and_then(|b| core::str::from_utf8(b).ok())
            .unwrap_or("");
        if name.is_empty() { format!("section {index}") } else { String::from(name) }
    }
}

fn read_section(bytes: &[u8], shoff: u64, index: u64) -> Result<Section> {
    let offset = index.checked_mul(SHDR_SIZE).and_then(|o| o.checked_add(shoff)).ok_or(Error::OutOfBounds {
        what: "elf section header",
        offset: shoff,
        len: SHDR_SIZE,
        limit: bytes.len() as u64,
    })?;
    let sh = rec(record::<raw::Shdr>(bytes, offset, "elf section header")?);
    Ok(Section {
        name: sh.name.get(),
        kind: sh.kind.get(),
        flags: sh.flags.get(),
        offset: sh.offset.get(),
        size: sh.size.get(),
        link: sh.link.get(),
        info: sh.info.get(),
        align: sh.addralign.get(),
        entsize: sh.entsize.get(),
    })
}

/// The symbol table (index, entries, string table), if the object has one.
fn find_symtab<'a>(bytes: &'a [u8], sections: &[Section]) -> Result<(Option<usize>, &'a [u8], &'a [u8])> {
    let mut found = None;
    for (index, section) in sections.iter().enumerate() {
        if section.kind != SHT_SYMTAB {
            continue;
        }
        if found.is_some() {
            return Err(Error::Malformed { what: "elf section header", at: index as u64, reason: "second SHT_SYMTAB" });
        }
        found = Some((index, *section));
    }
    let Some((index, section)) = found else { return Ok((None, &[], &[])) };
    // the table's checks, then its location once
    let tables = || -> Result<(Option<usize>, &'a [u8], &'a [u8])> {
        if section.entsize != SYM_SIZE {
            return Err(Error::Mismatch { what: "SHT_SYMTAB sh_entsize", expected: SYM_SIZE, found: section.entsize });
        }
        if !section.size.is_multiple_of(SYM_SIZE) {
            return Err(Error::Malformed {
                what: "elf section header",
                at: index as u64,
                reason: "SHT_SYMTAB size is not a multiple of 24",
            });
        }
        let symtab = slice(bytes, section.offset, section.size, "elf symbol table")?;
        let strtab = match sections.get(section.link as usize) {
            Some(s) if s.kind == SHT_STRTAB => slice(bytes, s.offset, s.size, "elf symbol string table")?,
            _ => {
                return Err(Error::Malformed {
                    what: "elf section header",
                    at: index as u64,
                    reason: "SHT_SYMTAB sh_link is not a string table",
                });
            }
        };
        Ok((Some(index), symtab, strtab))
    };
    tables().with_context(|| format!("symbol table (section {index})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_str_rejects_unterminated_and_out_of_range() {
        assert_eq!(c_str(b"\0abc\0", 1, "t").unwrap(), b"abc");
        assert!(matches!(c_str(b"\0abc", 1, "t"), Err(Error::Malformed { .. })));
        assert!(matches!(c_str(b"\0abc\0", 9, "t"), Err(Error::OutOfBounds { .. })));
    }

    #[test]
    #[cfg(feature = "reloc-names")]
    fn relocation_names_cover_the_applied_types() {
        for ty in [1, 2, 4, 10, 11] {
            assert!(relocation_name(Machine::X86_64, ty).is_some(), "{ty}");
        }
        for ty in [257, 261, 275, 277, 278, 282, 283, 284, 285, 286, 299] {
            assert!(relocation_name(Machine::Aarch64, ty).is_some(), "{ty}");
        }
        assert_eq!(relocation_name(Machine::X86_64, 41), Some("R_X86_64_GOTPCRELX"));
        assert_eq!(relocation_name(Machine::Aarch64, 9999), None);
    }
}
