//! HSA code objects for gfx1100: the ELF that LLVM's AMDGPU backend writes (tinygrad's
//! `AMD_LLVM=1` renderer emits it as a relocatable object), laid out into one image, relocated,
//! and every kernel's descriptor read and checked — all before a byte of GPU memory is asked for.
//!
//! # Layout (tinygrad's `elf_loader`, which its AMD runtime loads with)
//!
//! Every `SHT_PROGBITS` section in section-header order: one with a non-zero `sh_addr` at that
//! address, the others appended at their `sh_addralign`. Relocations: `R_AMDGPU_REL64` (S + A −
//! P, the kernel descriptor's `kernel_code_entry_byte_offset`); any other type is refused by
//! number, as tinygrad refuses it. A kernel is a `NAME.kd` object symbol (the descriptor) with its
//! code at the descriptor's entry offset (AMDGPUUsage, "Kernel Descriptor").
//!
//! # Checks (each a [`CodeObjectError`] naming the field and where it is)
//!
//! ELF64 little-endian, `EM_AMDGPU`, `EF_AMDGPU_MACH` gfx1100; every header, section, symbol,
//! string and relocation inside the file, with checked arithmetic; the image at most
//! [`MAX_IMAGE`]; each descriptor inside `.rodata`-like data of the image, 64-byte aligned, its
//! reserved bytes zero, its entry 256-byte aligned inside an executable section; LDS at most
//! [`MAX_LDS`], private memory at most what the scratch ring can give a lane
//! ([`Descriptor::max_private`]), kernarg at most [`MAX_KERNARG`], at most 256 VGPRs.

use alloc::{format, string::String, vec, vec::Vec};
use core::fmt;
use core::ops::Range;
use zerocopy::FromBytes;

pub mod raw;

use raw::*;

/// The largest image hcq lays out (64 MiB).
pub const MAX_IMAGE: u64 = 64 << 20;
/// gfx1100's LDS per work-group (64 KiB).
pub const MAX_LDS: u32 = 64 << 10;
/// hcq's limit on a kernel's argument block (64 KiB; tinygrad's kernels take 8 bytes a buffer
/// and 4 a variable).
pub const MAX_KERNARG: u32 = 64 << 10;

/// Why a code object is refused: what, and the byte offset in the file (or image) it is at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObjectError {
    /// What is wrong, naming the field.
    pub what: String,
    /// The offset it was read at, when there is one.
    pub at: Option<u64>,
}

impl fmt::Display for CodeObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(at) => write!(f, "code object: {} (at byte {at:#x})", self.what),
            None => write!(f, "code object: {}", self.what),
        }
    }
}

impl core::error::Error for CodeObjectError {}

fn err<T>(at: impl Into<Option<u64>>, what: impl Into<String>) -> Result<T, CodeObjectError> {
    Err(CodeObjectError { what: what.into(), at: at.into() })
}

/// A kernel descriptor's fields, decoded (AMDGPUUsage, "Kernel Descriptor", GFX11 columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// LDS bytes a work-group uses (`group_segment_fixed_size`).
    pub lds_bytes: u32,
    /// Private (scratch) bytes per work-item (`private_segment_fixed_size`).
    pub private_bytes: u32,
    /// Bytes of the kernel argument block (`kernarg_size`).
    pub kernarg_bytes: u32,
    /// The raw `compute_pgm_rsrc1`, `compute_pgm_rsrc2`, `compute_pgm_rsrc3`.
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    /// The raw `kernel_code_properties`.
    pub properties: u16,
    /// `ENABLE_WAVEFRONT_SIZE32` (properties bit 10): wave32, else wave64.
    pub wave32: bool,
    /// VGPRs a wave allocates: (`GRANULATED_WORKITEM_VGPR_COUNT` + 1) × 8 in wave32, × 4 in wave64.
    pub vgprs: u32,
    /// `USER_SGPR_COUNT` (rsrc2 bits 5:1): SGPRs the CP loads before the kernel starts.
    pub user_sgprs: u32,
    /// `ENABLE_SGPR_WORKGROUP_ID_X/Y/Z` (rsrc2 bits 7, 8, 9).
    pub workgroup_id: [bool; 3],
    /// `ENABLE_VGPR_WORKITEM_ID` (rsrc2 bits 12:11): 0 = x, 1 = x and y, 2 = x, y and z.
    pub workitem_id_dims: u32,
    /// `ENABLE_PRIVATE_SEGMENT` (rsrc2 bit 0).
    pub private_segment: bool,
    /// `ENABLE_SGPR_DISPATCH_PTR` (properties bit 1).
    pub dispatch_ptr: bool,
    /// `ENABLE_SGPR_KERNARG_SEGMENT_PTR` (properties bit 3).
    pub kernarg_ptr: bool,
}

impl Descriptor {
    /// The most private bytes a lane can have: gfx11's `COMPUTE_TMPRING_SIZE.WAVESIZE` is 15 bits
    /// in units of 256 bytes a wave (Mesa's gfx11.json), shared by the wave's 32 or 64 lanes.
    pub const fn max_private(wave32: bool) -> u32 {
        0x7fff * 256 / if wave32 { 32 } else { 64 }
    }

    fn decode(kd: &KernelDescriptor, at: u64) -> Result<Self, CodeObjectError> {
        if kd.reserved0 != [0; 4] || kd.reserved1 != [0; 20] || kd.reserved2 != [0; 4] {
            return err(at, "kernel descriptor: reserved bytes are not zero");
        }
        let p = kd.kernel_code_properties;
        let wave32 = p & 1 << 10 != 0;
        let (r1, r2) = (kd.compute_pgm_rsrc1, kd.compute_pgm_rsrc2);
        let vgprs = ((r1 & 0x3f) + 1) * if wave32 { 8 } else { 4 };
        let d = Self {
            lds_bytes: kd.group_segment_fixed_size,
            private_bytes: kd.private_segment_fixed_size,
            kernarg_bytes: kd.kernarg_size,
            rsrc1: r1,
            rsrc2: r2,
            rsrc3: kd.compute_pgm_rsrc3,
            properties: p,
            wave32,
            vgprs,
            user_sgprs: (r2 >> 1) & 0x1f,
            workgroup_id: [r2 & 1 << 7 != 0, r2 & 1 << 8 != 0, r2 & 1 << 9 != 0],
            workitem_id_dims: (r2 >> 11) & 3,
            private_segment: r2 & 1 != 0,
            dispatch_ptr: p & 1 << 1 != 0,
            kernarg_ptr: p & 1 << 3 != 0,
        };
        if d.vgprs > 256 {
            return err(at + 48, format!("compute_pgm_rsrc1: {} VGPRs, more than a wave's 256", d.vgprs));
        }
        if d.workitem_id_dims == 3 {
            return err(at + 52, "compute_pgm_rsrc2: ENABLE_VGPR_WORKITEM_ID is 3 (at most 2: x, y, z)");
        }
        if d.lds_bytes > MAX_LDS {
            return err(at, format!("group_segment_fixed_size {} bytes: gfx1100 has {MAX_LDS} of LDS", d.lds_bytes));
        }
        if d.private_bytes > Self::max_private(wave32) {
            return err(
                at + 4,
                format!(
                    "private_segment_fixed_size {} bytes a lane: the scratch ring gives at most {}",
                    d.private_bytes,
                    Self::max_private(wave32)
                ),
            );
        }
        if d.kernarg_bytes > MAX_KERNARG {
            return err(at + 8, format!("kernarg_size {} bytes: hcq takes at most {MAX_KERNARG}", d.kernarg_bytes));
        }
        Ok(d)
    }
}

/// One kernel of a code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// Its name (the descriptor's symbol without `.kd`).
    pub name: String,
    /// Image offset of its descriptor.
    pub descriptor_at: usize,
    /// Image offset of its first instruction.
    pub entry: usize,
    /// Bytes of code (its function symbol's size; 0 when there is none).
    pub code_bytes: usize,
    /// The descriptor.
    pub kd: Descriptor,
}

/// A laid-out section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Its name.
    pub name: String,
    /// Its bytes in the image.
    pub range: Range<usize>,
    /// `SHF_EXECINSTR`.
    pub exec: bool,
    /// Its `sh_addr` in the file (0 in a relocatable object): the address objdump prints.
    pub addr: u64,
}

/// A function symbol (for listings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Its name.
    pub name: String,
    /// Its image offset.
    pub at: usize,
    /// Its size.
    pub size: usize,
}

/// A code object laid out and relocated, with its kernels.
#[derive(Clone, Debug)]
pub struct CodeObject {
    /// The image the GPU runs (offset 0 at the load address).
    pub image: Vec<u8>,
    /// The laid-out sections, in header order.
    pub sections: Vec<Section>,
    /// The function symbols, by address.
    pub functions: Vec<Symbol>,
    /// The kernels, in symbol-table order.
    pub kernels: Vec<Kernel>,
}

fn read<T: FromBytes + Copy>(file: &[u8], at: u64, what: &str) -> Result<T, CodeObjectError> {
    let start = usize::try_from(at).ok();
    let end = start.and_then(|s| s.checked_add(size_of::<T>()));
    match (start, end) {
        (Some(s), Some(e)) if e <= file.len() => Ok(T::read_from_bytes(&file[s..e])
            .map_err(|_| CodeObjectError { what: format!("{what}: unreadable"), at: Some(at) })?),
        _ => err(at, format!("{what}: {} bytes past the end of the {}-byte file", size_of::<T>(), file.len())),
    }
}

fn bytes<'a>(file: &'a [u8], at: u64, size: u64, what: &str) -> Result<&'a [u8], CodeObjectError> {
    let end = at.checked_add(size);
    match end {
        Some(e) if e <= file.len() as u64 => Ok(&file[at as usize..e as usize]),
        _ => err(at, format!("{what}: {size} bytes at {at:#x} pass the end of the {}-byte file", file.len())),
    }
}

fn cstr(strtab: &[u8], off: u32, what: &str) -> Result<String, CodeObjectError> {
    let s = strtab
        .get(off as usize..)
        .ok_or(CodeObjectError { what: format!("{what}: name offset {off} outside its string table"), at: None })?;
    let n = s
        .iter()
        .position(|&b| b == 0)
        .ok_or(CodeObjectError { what: format!("{what}: name at {off} is not terminated"), at: None })?;
    core::str::from_utf8(&s[..n])
        .map(String::from)
        .map_err(|_| CodeObjectError { what: format!("{what}: name at {off} is not UTF-8"), at: None })
}

impl CodeObject {
    /// Parse, lay out, relocate and check `file`.
    pub fn parse(file: &[u8]) -> Result<Self, CodeObjectError> {
        let eh: Ehdr = read(file, 0, "ELF header")?;
        if eh.e_ident[..4] != ELFMAG {
            return err(0, "not an ELF file (no \\x7fELF magic)");
        }
        if eh.e_ident[4] != ELFCLASS64 || eh.e_ident[5] != ELFDATA2LSB {
            return err(4, "not a 64-bit little-endian ELF");
        }
        if eh.e_machine != EM_AMDGPU {
            return err(18, format!("e_machine {} is not EM_AMDGPU (224)", eh.e_machine));
        }
        let mach = eh.e_flags & EF_AMDGPU_MACH;
        if mach != MACH_GFX1100 {
            return err(48, format!("EF_AMDGPU_MACH {mach:#x} is not gfx1100 ({MACH_GFX1100:#x})"));
        }
        if usize::from(eh.e_shentsize) != SHDR_SIZE {
            return err(58, format!("e_shentsize {} is not {SHDR_SIZE}", eh.e_shentsize));
        }
        let shdrs: Vec<Shdr> = (0..u64::from(eh.e_shnum))
            .map(|k| read(file, eh.e_shoff.saturating_add(k * SHDR_SIZE as u64), "section header"))
            .collect::<Result<_, _>>()?;
        let shstr = shdrs.get(usize::from(eh.e_shstrndx)).ok_or(CodeObjectError {
            what: format!("e_shstrndx {} names no section of {}", eh.e_shstrndx, shdrs.len()),
            at: Some(62),
        })?;
        let shstrtab = bytes(file, shstr.sh_offset, shstr.sh_size, "section name table")?;
        let names: Vec<String> =
            shdrs.iter().map(|s| cstr(shstrtab, s.sh_name, "section")).collect::<Result<_, _>>()?;

        // Layout: tinygrad's elf_loader.
        let mut image: Vec<u8> = Vec::new();
        let mut addr: Vec<Option<u64>> = vec![None; shdrs.len()];
        let fixed_end = shdrs
            .iter()
            .filter(|s| s.sh_type == SHT_PROGBITS && s.sh_addr != 0)
            .map(|s| s.sh_addr.checked_add(s.sh_size))
            .try_fold(0u64, |m, e| e.map(|e| m.max(e)))
            .ok_or(CodeObjectError { what: "a section's address + size overflows".into(), at: None })?;
        if fixed_end > MAX_IMAGE {
            return err(None, format!("the image would take {fixed_end} bytes, more than {MAX_IMAGE}"));
        }
        image.resize(fixed_end as usize, 0);
        let mut sections = Vec::new();
        for (k, s) in shdrs.iter().enumerate() {
            if s.sh_type != SHT_PROGBITS {
                continue;
            }
            let what = format!("section {}", names[k]);
            let content = bytes(file, s.sh_offset, s.sh_size, &what)?;
            let at = if s.sh_addr != 0 {
                s.sh_addr
            } else {
                let align = s.sh_addralign.max(1);
                if !align.is_power_of_two() || align > 1 << 16 {
                    return err(None, format!("{what}: alignment {align} is not a power of two up to 65536"));
                }
                let at = (image.len() as u64).next_multiple_of(align);
                let end = at + s.sh_size;
                if end > MAX_IMAGE {
                    return err(None, format!("the image would take {end} bytes, more than {MAX_IMAGE}"));
                }
                image.resize(end as usize, 0);
                at
            };
            let r = at as usize..at as usize + content.len();
            image[r.clone()].copy_from_slice(content);
            addr[k] = Some(at);
            sections.push(Section {
                name: names[k].clone(),
                range: r,
                exec: s.sh_flags & SHF_EXECINSTR != 0,
                addr: s.sh_addr,
            });
        }

        // Symbols.
        let symtab = shdrs.iter().find(|s| s.sh_type == SHT_SYMTAB);
        let mut syms: Vec<(String, Sym, Option<u64>)> = Vec::new();
        if let Some(st) = symtab {
            if st.sh_entsize != SYM_SIZE as u64 {
                return err(st.sh_offset, format!("symbol table entry size {} is not {SYM_SIZE}", st.sh_entsize));
            }
            let strs = shdrs.get(st.sh_link as usize).filter(|s| s.sh_type == SHT_STRTAB).ok_or(CodeObjectError {
                what: format!("the symbol table's sh_link {} is not a string table", st.sh_link),
                at: None,
            })?;
            let strtab = bytes(file, strs.sh_offset, strs.sh_size, "symbol name table")?;
            bytes(file, st.sh_offset, st.sh_size, "symbol table")?;
            for k in 0..st.sh_size / SYM_SIZE as u64 {
                let at = st.sh_offset + k * SYM_SIZE as u64;
                let sym: Sym = read(file, at, "symbol")?;
                let name = cstr(strtab, sym.st_name, "symbol")?;
                // The image offset of a symbol defined in a laid-out section.
                let value = if sym.st_shndx == 0 || sym.st_shndx >= SHN_LORESERVE {
                    None
                } else {
                    let base = addr.get(usize::from(sym.st_shndx)).copied().flatten();
                    match base {
                        // ET_REL: section-relative; a linked object: an address.
                        Some(b) if eh.e_type == 1 => b.checked_add(sym.st_value),
                        Some(_) => Some(sym.st_value),
                        None => None,
                    }
                };
                syms.push((name, sym, value));
            }
        }

        // Relocations of laid-out sections.
        for (k, s) in shdrs.iter().enumerate() {
            if s.sh_type != SHT_RELA {
                continue;
            }
            let Some(target) = addr.get(s.sh_info as usize).copied().flatten() else { continue };
            if s.sh_entsize != RELA_SIZE as u64 {
                return err(s.sh_offset, format!("{}: entry size {} is not {RELA_SIZE}", names[k], s.sh_entsize));
            }
            let tsize = shdrs[s.sh_info as usize].sh_size;
            bytes(file, s.sh_offset, s.sh_size, &names[k])?;
            for j in 0..s.sh_size / RELA_SIZE as u64 {
                let at = s.sh_offset + j * RELA_SIZE as u64;
                let r: Rela = read(file, at, "relocation")?;
                // CAST: the low 32 bits are the type, the high 32 the symbol index.
                let (typ, si) = (r.r_info as u32, (r.r_info >> 32) as usize);
                if typ == 0 {
                    continue;
                }
                if typ != R_AMDGPU_REL64 {
                    return err(at, format!("{}: relocation type {typ} (hcq applies R_AMDGPU_REL64, 5)", names[k]));
                }
                if r.r_offset.checked_add(8).is_none_or(|e| e > tsize) {
                    return err(at, format!("{}: relocation at {:#x} outside its section", names[k], r.r_offset));
                }
                let (sname, _, value) = syms.get(si).ok_or(CodeObjectError {
                    what: format!("{}: relocation names symbol {si} of {}", names[k], syms.len()),
                    at: Some(at),
                })?;
                let Some(sv) = *value else {
                    return err(at, format!("{}: relocation against `{sname}`, which is not defined here", names[k]));
                };
                let p = target + r.r_offset;
                // CAST: image offsets are below MAX_IMAGE, far inside i64.
                let v = (sv as i64).wrapping_add(r.r_addend).wrapping_sub(p as i64);
                image[p as usize..p as usize + 8].copy_from_slice(&v.to_le_bytes());
            }
        }

        let in_exec =
            |off: u64| sections.iter().any(|s| s.exec && (s.range.start as u64..s.range.end as u64).contains(&off));
        let mut functions: Vec<Symbol> = syms
            .iter()
            .filter(|(_, s, v)| s.st_info & 0xf == STT_FUNC && v.is_some())
            .map(|(n, s, v)| Symbol { name: n.clone(), at: v.unwrap_or(0) as usize, size: s.st_size as usize })
            .collect();
        functions.sort_by_key(|f| f.at);
        let mut kernels = Vec::new();
        for (name, sym, value) in &syms {
            let Some(kname) = name.strip_suffix(".kd") else { continue };
            if sym.st_info & 0xf != STT_OBJECT {
                continue;
            }
            let Some(at) = *value else {
                return err(None, format!("kernel descriptor `{name}` is not in a laid-out section"));
            };
            if at % 64 != 0 {
                return err(at, format!("kernel descriptor `{name}` is not 64-byte aligned"));
            }
            let kd: KernelDescriptor = read(&image, at, &format!("kernel descriptor `{name}`"))?;
            let d = Descriptor::decode(&kd, at)?;
            let entry = (at as i64).checked_add(kd.kernel_code_entry_byte_offset).filter(|&e| e >= 0);
            let Some(entry) = entry.map(|e| e as u64).filter(|&e| in_exec(e)) else {
                return err(
                    at + 16,
                    format!(
                        "kernel `{kname}`: kernel_code_entry_byte_offset {} points outside the code",
                        kd.kernel_code_entry_byte_offset
                    ),
                );
            };
            if entry % 256 != 0 {
                return err(at + 16, format!("kernel `{kname}`: its entry {entry:#x} is not 256-byte aligned"));
            }
            let code_bytes = functions.iter().find(|f| f.name == kname && f.at as u64 == entry).map_or(0, |f| f.size);
            kernels.push(Kernel {
                name: kname.into(),
                descriptor_at: at as usize,
                entry: entry as usize,
                code_bytes,
                kd: d,
            });
        }
        if kernels.is_empty() {
            return err(None, "no kernel (no `NAME.kd` descriptor symbol)");
        }
        Ok(Self { image, sections, functions, kernels })
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}
