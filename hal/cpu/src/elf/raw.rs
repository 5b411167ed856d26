//! ELF64 little-endian on-disk records, as zerocopy structs (alignment 1, so they read in place
//! from any offset of a file), and the ELF constants the loader uses. Layout only: no logic.
//!
//! Source: the System V ABI, "ELF Header", "Sections", "Symbol Table", "Relocation" (gABI
//! 4.1 and its ELF-64 supplement); relocation numbers from the psABIs (x86-64 psABI §4.4;
//! ELF for the Arm 64-bit Architecture, AAELF64 §5.7).

use zerocopy::byteorder::{I64, LE, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// `Elf64_Ehdr`: the file header at offset 0.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]
#[repr(C)]
pub struct Ehdr {
    /// `e_ident`: magic `\x7fELF`, class, data encoding, version, OS ABI, padding.
    pub ident: [u8; 16],
    /// `e_type` (`ET_REL` for relocatable objects).
    pub e_type: U16<LE>,
    /// `e_machine` (62 x86-64, 183 AArch64).
    pub machine: U16<LE>,
    /// `e_version`.
    pub version: U32<LE>,
    /// `e_entry` (0 in relocatable objects).
    pub entry: U64<LE>,
    /// `e_phoff` (0 in relocatable objects).
    pub phoff: U64<LE>,
    /// `e_shoff`: file offset of the section header table.
    pub shoff: U64<LE>,
    /// `e_flags`.
    pub flags: U32<LE>,
    /// `e_ehsize` (64).
    pub ehsize: U16<LE>,
    /// `e_phentsize`.
    pub phentsize: U16<LE>,
    /// `e_phnum`.
    pub phnum: U16<LE>,
    /// `e_shentsize` (64).
    pub shentsize: U16<LE>,
    /// `e_shnum` (0: the count is section 0's `sh_size`).
    pub shnum: U16<LE>,
    /// `e_shstrndx` (`SHN_XINDEX`: the index is section 0's `sh_link`).
    pub shstrndx: U16<LE>,
}

/// `e_ident` positions.
pub const EI_CLASS: usize = 4;
/// `e_ident[EI_DATA]`: the data encoding.
pub const EI_DATA: usize = 5;
/// `e_ident[EI_VERSION]`.
pub const EI_VERSION: usize = 6;
/// The magic at `e_ident[0..4]`.
pub const ELFMAG: [u8; 4] = *b"\x7fELF";
/// `ELFCLASS64`.
pub const ELFCLASS64: u8 = 2;
/// `ELFDATA2LSB`: little-endian.
pub const ELFDATA2LSB: u8 = 1;
/// `EV_CURRENT`.
pub const EV_CURRENT: u8 = 1;

/// `Elf64_Shdr`: one section header.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]
#[repr(C)]
pub struct Shdr {
    /// `sh_name`: offset of the name in the section-name string table.
    pub name: U32<LE>,
    /// `sh_type` (`SHT_*`).
    pub kind: U32<LE>,
    /// `sh_flags` (`SHF_*`).
    pub flags: U64<LE>,
    /// `sh_addr` (0 in relocatable objects).
    pub addr: U64<LE>,
    /// `sh_offset`: file offset of the section's bytes.
    pub offset: U64<LE>,
    /// `sh_size` in bytes.
    pub size: U64<LE>,
    /// `sh_link` (for `SHT_SYMTAB`: its string table; for `SHT_RELA`: its symbol table).
    pub link: U32<LE>,
    /// `sh_info` (for `SHT_RELA`: the section it patches).
    pub info: U32<LE>,
    /// `sh_addralign`.
    pub addralign: U64<LE>,
    /// `sh_entsize`: size of one entry of a table section.
    pub entsize: U64<LE>,
}

/// `Elf64_Sym`: one symbol-table entry.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]
#[repr(C)]
pub struct Sym {
    /// `st_name`: offset of the name in the symbol string table.
    pub name: U32<LE>,
    /// `st_info`: binding (high 4 bits) and type (low 4 bits).
    pub info: u8,
    /// `st_other`: visibility.
    pub other: u8,
    /// `st_shndx`: the section it is defined in, or `SHN_*`.
    pub shndx: U16<LE>,
    /// `st_value`: offset in its section (relocatable objects).
    pub value: U64<LE>,
    /// `st_size`.
    pub size: U64<LE>,
}

impl Sym {
    /// `ELF64_ST_BIND`.
    pub fn bind(&self) -> u8 {
        self.info >> 4
    }
    /// `ELF64_ST_TYPE`.
    pub fn kind(&self) -> u8 {
        self.info & 0xf
    }
}

/// `Elf64_Rela`: one relocation with an explicit addend.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]
#[repr(C)]
pub struct Rela {
    /// `r_offset`: where to patch, as an offset in the target section.
    pub offset: U64<LE>,
    /// `r_info`: symbol index (high 32 bits) and relocation type (low 32 bits).
    pub info: U64<LE>,
    /// `r_addend`.
    pub addend: I64<LE>,
}

impl Rela {
    /// `ELF64_R_SYM`.
    pub fn sym(&self) -> u64 {
        self.info.get() >> 32
    }
    /// `ELF64_R_TYPE`.
    pub fn kind(&self) -> u32 {
        // CAST: the type is the low 32 bits of r_info by definition.
        self.info.get() as u32
    }
}

/// `sizeof(Elf64_Ehdr)`.
pub const EHDR_SIZE: u64 = size_of::<Ehdr>() as u64;
/// `sizeof(Elf64_Shdr)`.
pub const SHDR_SIZE: u64 = size_of::<Shdr>() as u64;
/// `sizeof(Elf64_Sym)`.
pub const SYM_SIZE: u64 = size_of::<Sym>() as u64;
/// `sizeof(Elf64_Rela)`.
pub const RELA_SIZE: u64 = size_of::<Rela>() as u64;
const _: () = assert!(EHDR_SIZE == 64 && SHDR_SIZE == 64 && SYM_SIZE == 24 && RELA_SIZE == 24);

/// `e_machine` of x86-64.
pub const EM_X86_64: u16 = 62;
/// `e_machine` of AArch64.
pub const EM_AARCH64: u16 = 183;
/// `e_type` of a relocatable object.
pub const ET_REL: u16 = 1;

/// Section types.
pub const SHT_PROGBITS: u32 = 1;
/// The symbol table.
pub const SHT_SYMTAB: u32 = 2;
/// A string table.
pub const SHT_STRTAB: u32 = 3;
/// Relocations with explicit addends.
pub const SHT_RELA: u32 = 4;
/// Zero-filled, no file bytes (`.bss`).
pub const SHT_NOBITS: u32 = 8;
/// Relocations with implicit addends.
pub const SHT_REL: u32 = 9;

/// Section flags: occupies memory at run time.
pub const SHF_ALLOC: u64 = 0x2;
/// Holds machine code.
pub const SHF_EXECINSTR: u64 = 0x4;
/// Thread-local storage.
pub const SHF_TLS: u64 = 0x400;

/// Special section indices: undefined.
pub const SHN_UNDEF: u16 = 0;
/// First reserved index.
pub const SHN_LORESERVE: u16 = 0xff00;
/// Absolute value, not relative to a section.
pub const SHN_ABS: u16 = 0xfff1;
/// Common (unallocated) data.
pub const SHN_COMMON: u16 = 0xfff2;
/// The index lives elsewhere (extended numbering).
pub const SHN_XINDEX: u16 = 0xffff;

/// Symbol binding: local.
pub const STB_LOCAL: u8 = 0;
/// Symbol binding: weak.
pub const STB_WEAK: u8 = 2;
/// Symbol type: function.
pub const STT_FUNC: u8 = 2;
/// Symbol type: thread-local.
pub const STT_TLS: u8 = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_in_place_at_any_offset() {
        // a Rela at an odd offset: sym 7, type 283 (CALL26), addend -4
        let mut bytes = [0u8; 25];
        bytes[1..9].copy_from_slice(&0x40u64.to_le_bytes());
        bytes[9..17].copy_from_slice(&((7u64 << 32) | 283).to_le_bytes());
        bytes[17..25].copy_from_slice(&(-4i64).to_le_bytes());
        let rela = Rela::ref_from_bytes(&bytes[1..]).unwrap();
        assert_eq!((rela.offset.get(), rela.sym(), rela.kind(), rela.addend.get()), (0x40, 7, 283, -4));
        let sym =
            Sym::read_from_bytes(&[1, 0, 0, 0, 0x12, 0, 5, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..])
                .unwrap();
        assert_eq!((sym.name.get(), sym.bind(), sym.kind(), sym.shndx.get(), sym.value.get()), (1, 1, 2, 5, 8));
    }
}
