//! On-disk layouts of an AMDGPU HSA code object: ELF64 little-endian headers, symbols and
//! relocations (the System V gABI), and the kernel descriptor (LLVM's AMDGPUUsage, "Kernel
//! Descriptor", the 64-byte `amdhsa_kernel_descriptor_t`). Layouts only; the checks are in
//! [`super`].

use zerocopy::{FromBytes, Immutable, KnownLayout};

pub const ELFMAG: [u8; 4] = *b"\x7fELF";
pub const ELFCLASS64: u8 = 2;
pub const ELFDATA2LSB: u8 = 1;
/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `e_flags` bits 7:0, `EF_AMDGPU_MACH`.
pub const EF_AMDGPU_MACH: u32 = 0xff;
/// `EF_AMDGPU_MACH_AMDGCN_GFX1100`.
pub const MACH_GFX1100: u32 = 0x41;

pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_STRTAB: u32 = 3;
pub const SHT_RELA: u32 = 4;
pub const SHT_NOBITS: u32 = 8;
pub const SHF_EXECINSTR: u64 = 4;
pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
/// Section indices at and above `SHN_LORESERVE` are special (ABS, COMMON, XINDEX).
pub const SHN_LORESERVE: u16 = 0xff00;
/// `R_AMDGPU_ABS64`: S + A.
pub const R_AMDGPU_ABS64: u32 = 3;
/// `R_AMDGPU_REL64`: S + A − P (the kernel descriptor's `kernel_code_entry_byte_offset`).
pub const R_AMDGPU_REL64: u32 = 5;

#[derive(FromBytes, KnownLayout, Immutable, Clone, Copy, Debug)]
#[repr(C)]
pub struct Ehdr {
    pub e_ident: [u8; 16],
    pub e_type: u16,
    pub e_machine: u16,
    pub e_version: u32,
    pub e_entry: u64,
    pub e_phoff: u64,
    pub e_shoff: u64,
    pub e_flags: u32,
    pub e_ehsize: u16,
    pub e_phentsize: u16,
    pub e_phnum: u16,
    pub e_shentsize: u16,
    pub e_shnum: u16,
    pub e_shstrndx: u16,
}

#[derive(FromBytes, KnownLayout, Immutable, Clone, Copy, Debug)]
#[repr(C)]
pub struct Shdr {
    pub sh_name: u32,
    pub sh_type: u32,
    pub sh_flags: u64,
    pub sh_addr: u64,
    pub sh_offset: u64,
    pub sh_size: u64,
    pub sh_link: u32,
    pub sh_info: u32,
    pub sh_addralign: u64,
    pub sh_entsize: u64,
}

#[derive(FromBytes, KnownLayout, Immutable, Clone, Copy, Debug)]
#[repr(C)]
pub struct Sym {
    pub st_name: u32,
    pub st_info: u8,
    pub st_other: u8,
    pub st_shndx: u16,
    pub st_value: u64,
    pub st_size: u64,
}

#[derive(FromBytes, KnownLayout, Immutable, Clone, Copy, Debug)]
#[repr(C)]
pub struct Rela {
    pub r_offset: u64,
    pub r_info: u64,
    pub r_addend: i64,
}

/// `amdhsa_kernel_descriptor_t` (64 bytes, 64-byte aligned in `.rodata`).
#[derive(FromBytes, KnownLayout, Immutable, Clone, Copy, Debug)]
#[repr(C)]
pub struct KernelDescriptor {
    pub group_segment_fixed_size: u32,
    pub private_segment_fixed_size: u32,
    pub kernarg_size: u32,
    pub reserved0: [u8; 4],
    pub kernel_code_entry_byte_offset: i64,
    pub reserved1: [u8; 20],
    pub compute_pgm_rsrc3: u32,
    pub compute_pgm_rsrc1: u32,
    pub compute_pgm_rsrc2: u32,
    pub kernel_code_properties: u16,
    pub kernarg_preload: u16,
    pub reserved2: [u8; 4],
}

pub const EHDR_SIZE: usize = 64;
pub const SHDR_SIZE: usize = 64;
pub const SYM_SIZE: usize = 24;
pub const RELA_SIZE: usize = 24;
pub const KD_SIZE: usize = 64;

const _: () = assert!(size_of::<Ehdr>() == EHDR_SIZE);
const _: () = assert!(size_of::<Shdr>() == SHDR_SIZE);
const _: () = assert!(size_of::<Sym>() == SYM_SIZE);
const _: () = assert!(size_of::<Rela>() == RELA_SIZE);
const _: () = assert!(size_of::<KernelDescriptor>() == KD_SIZE);
