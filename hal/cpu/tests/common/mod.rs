//! A minimal ELF64 little-endian ET_REL writer for tests: sections, a symbol table and RELA
//! sections, laid out the way clang lays out an object (data, then RELA, symtab, strtab,
//! shstrtab, then the section header table).
#![allow(dead_code)]

pub const EM_X86_64: u16 = 62;
pub const EM_AARCH64: u16 = 183;

pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_STRTAB: u32 = 3;
pub const SHT_RELA: u32 = 4;
pub const SHT_NOBITS: u32 = 8;
pub const SHT_REL: u32 = 9;

pub const SHF_WRITE: u64 = 1;
pub const SHF_ALLOC: u64 = 2;
pub const SHF_EXECINSTR: u64 = 4;
pub const SHF_TLS: u64 = 0x400;

pub const STB_LOCAL: u8 = 0;
pub const STB_GLOBAL: u8 = 1;
pub const STB_WEAK: u8 = 2;
pub const STT_NOTYPE: u8 = 0;
pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
pub const STT_SECTION: u8 = 3;

pub const SHN_UNDEF: u16 = 0;
pub const SHN_ABS: u16 = 0xfff1;
pub const SHN_COMMON: u16 = 0xfff2;

struct Sec {
    name: String,
    kind: u32,
    flags: u64,
    data: Vec<u8>,
    size: u64,
    align: u64,
}

/// One RELA entry: (r_offset, r_info, r_addend).
type RelaEntry = (u64, u64, i64);
/// A section header: (name, type, flags, offset, size, link, info, addralign, entsize).
type Shdr = (u32, u32, u64, u64, u64, u32, u32, u64, u64);

struct Sym {
    name: String,
    info: u8,
    shndx: u16,
    value: u64,
}

/// Builds a relocatable object. Section indices start at 1 (0 is the null section); symbol
/// index 0 is the null symbol. Add local symbols before global ones.
pub struct ObjBuilder {
    machine: u16,
    secs: Vec<Sec>,
    syms: Vec<Sym>,
    relas: Vec<(u16, Vec<RelaEntry>)>,
}

impl ObjBuilder {
    pub fn new(machine: u16) -> Self {
        ObjBuilder { machine, secs: Vec::new(), syms: Vec::new(), relas: Vec::new() }
    }

    /// A section with file data (PROGBITS unless `kind` says otherwise); returns its index.
    pub fn section(&mut self, name: &str, kind: u32, flags: u64, align: u64, data: &[u8]) -> u16 {
        self.secs.push(Sec { name: name.into(), kind, flags, data: data.to_vec(), size: data.len() as u64, align });
        self.secs.len() as u16
    }

    pub fn text(&mut self, data: &[u8]) -> u16 {
        self.section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 4, data)
    }

    pub fn rodata(&mut self, align: u64, data: &[u8]) -> u16 {
        self.section(".rodata", SHT_PROGBITS, SHF_ALLOC, align, data)
    }

    pub fn nobits(&mut self, name: &str, size: u64, align: u64) -> u16 {
        self.secs.push(Sec {
            name: name.into(),
            kind: SHT_NOBITS,
            flags: SHF_ALLOC | SHF_WRITE,
            data: Vec::new(),
            size,
            align,
        });
        self.secs.len() as u16
    }

    /// Add a symbol; returns its index.
    pub fn symbol(&mut self, name: &str, bind: u8, kind: u8, shndx: u16, value: u64) -> u32 {
        self.syms.push(Sym { name: name.into(), info: (bind << 4) | kind, shndx, value });
        self.syms.len() as u32
    }

    pub fn func(&mut self, name: &str, shndx: u16, value: u64) -> u32 {
        self.symbol(name, STB_GLOBAL, STT_FUNC, shndx, value)
    }

    pub fn undef(&mut self, name: &str) -> u32 {
        self.symbol(name, STB_GLOBAL, STT_NOTYPE, SHN_UNDEF, 0)
    }

    /// A RELA entry patching section `target` at `offset`.
    pub fn rela(&mut self, target: u16, offset: u64, sym: u32, ty: u32, addend: i64) {
        let info = (u64::from(sym) << 32) | u64::from(ty);
        match self.relas.iter_mut().find(|(t, _)| *t == target) {
            Some((_, list)) => list.push((offset, info, addend)),
            None => self.relas.push((target, vec![(offset, info, addend)])),
        }
    }

    pub fn build(&self) -> Vec<u8> {
        let mut out = vec![0u8; 64];
        let pad = |out: &mut Vec<u8>, align: u64| {
            while !(out.len() as u64).is_multiple_of(align.max(1)) {
                out.push(0);
            }
        };
        let mut shstr = vec![0u8];
        let mut name_of = |name: &str| {
            let off = shstr.len() as u32;
            shstr.extend_from_slice(name.as_bytes());
            shstr.push(0);
            off
        };
        let mut headers: Vec<Shdr> = vec![(0, 0, 0, 0, 0, 0, 0, 0, 0)];
        for sec in &self.secs {
            pad(&mut out, sec.align.max(16));
            let off = out.len() as u64;
            out.extend_from_slice(&sec.data);
            headers.push((name_of(&sec.name), sec.kind, sec.flags, off, sec.size, 0, 0, sec.align, 0));
        }
        let symtab_index = (headers.len() + self.relas.len()) as u32;
        for (target, list) in &self.relas {
            pad(&mut out, 8);
            let off = out.len() as u64;
            for &(offset, info, addend) in list {
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&info.to_le_bytes());
                out.extend_from_slice(&addend.to_le_bytes());
            }
            let tname = &self.secs[usize::from(*target) - 1].name;
            let name = name_of(&format!(".rela{tname}"));
            headers.push((name, SHT_RELA, 0x40, off, list.len() as u64 * 24, symtab_index, u32::from(*target), 8, 24));
        }
        let mut strtab = vec![0u8];
        let mut symtab = vec![0u8; 24];
        let mut first_global = 1 + self.syms.len() as u32;
        for (i, sym) in self.syms.iter().enumerate() {
            let name = if sym.name.is_empty() {
                0
            } else {
                let off = strtab.len() as u32;
                strtab.extend_from_slice(sym.name.as_bytes());
                strtab.push(0);
                off
            };
            if sym.info >> 4 != STB_LOCAL {
                first_global = first_global.min(1 + i as u32);
            }
            symtab.extend_from_slice(&name.to_le_bytes());
            symtab.push(sym.info);
            symtab.push(0);
            symtab.extend_from_slice(&sym.shndx.to_le_bytes());
            symtab.extend_from_slice(&sym.value.to_le_bytes());
            symtab.extend_from_slice(&0u64.to_le_bytes());
        }
        pad(&mut out, 8);
        let symtab_off = out.len() as u64;
        out.extend_from_slice(&symtab);
        let symtab_name = name_of(".symtab");
        headers.push((
            symtab_name,
            SHT_SYMTAB,
            0,
            symtab_off,
            symtab.len() as u64,
            symtab_index + 1,
            first_global,
            8,
            24,
        ));
        let strtab_off = out.len() as u64;
        out.extend_from_slice(&strtab);
        let strtab_name = name_of(".strtab");
        headers.push((strtab_name, SHT_STRTAB, 0, strtab_off, strtab.len() as u64, 0, 0, 1, 0));
        let shstrtab_name = name_of(".shstrtab");
        let shstrtab_off = out.len() as u64;
        let shstrndx = headers.len() as u16;
        headers.push((shstrtab_name, SHT_STRTAB, 0, shstrtab_off, 0, 0, 0, 1, 0));
        out.extend_from_slice(&shstr);
        headers.last_mut().unwrap().4 = shstr.len() as u64;

        pad(&mut out, 8);
        let shoff = out.len() as u64;
        for h in &headers {
            out.extend_from_slice(&h.0.to_le_bytes());
            out.extend_from_slice(&h.1.to_le_bytes());
            out.extend_from_slice(&h.2.to_le_bytes());
            out.extend_from_slice(&0u64.to_le_bytes()); // sh_addr
            out.extend_from_slice(&h.3.to_le_bytes());
            out.extend_from_slice(&h.4.to_le_bytes());
            out.extend_from_slice(&h.5.to_le_bytes());
            out.extend_from_slice(&h.6.to_le_bytes());
            out.extend_from_slice(&h.7.to_le_bytes());
            out.extend_from_slice(&h.8.to_le_bytes());
        }
        // ELF header.
        out[..4].copy_from_slice(b"\x7fELF");
        out[4] = 2; // ELFCLASS64
        out[5] = 1; // little-endian
        out[6] = 1; // EV_CURRENT
        out[0x10..0x12].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
        out[0x12..0x14].copy_from_slice(&self.machine.to_le_bytes());
        out[0x14..0x18].copy_from_slice(&1u32.to_le_bytes());
        out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        out[0x34..0x36].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        out[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        out[0x3c..0x3e].copy_from_slice(&(headers.len() as u16).to_le_bytes());
        out[0x3e..0x40].copy_from_slice(&shstrndx.to_le_bytes());
        out
    }
}

/// File offset of section header `index` in an object.
pub fn shdr_offset(obj: &[u8], index: usize) -> usize {
    let shoff = u64::from_le_bytes(obj[0x28..0x30].try_into().unwrap()) as usize;
    shoff + index * 64
}

/// Number of section headers (e_shnum).
pub fn shnum(obj: &[u8]) -> usize {
    u16::from_le_bytes(obj[0x3c..0x3e].try_into().unwrap()) as usize
}

/// Index of the first section header of type `kind`.
pub fn find_section(obj: &[u8], kind: u32) -> Option<usize> {
    (0..shnum(obj)).find(|&i| {
        let off = shdr_offset(obj, i);
        u32::from_le_bytes(obj[off + 4..off + 8].try_into().unwrap()) == kind
    })
}

pub fn put_u16(obj: &mut [u8], at: usize, v: u16) {
    obj[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u32(obj: &mut [u8], at: usize, v: u32) {
    obj[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u64(obj: &mut [u8], at: usize, v: u64) {
    obj[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
pub fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
pub fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Lay out and load `obj` into a zeroed Vec at address `addr`, calling entry `entry`.
pub fn load_at(
    obj: &[u8],
    addr: u64,
    entry: &str,
    resolve: &dyn Fn(&str) -> Option<u64>,
) -> hcq::Result<(Vec<u8>, u64, hcq_cpu::Layout)> {
    let parsed = hcq_cpu::ElfObject::parse(obj)?;
    let layout = parsed.layout().clone();
    let mut image = vec![0xaau8; layout.size as usize];
    let entry = parsed.load_into(&mut image, addr, entry, resolve)?;
    Ok((image, entry, layout))
}

pub fn no_imports(_: &str) -> Option<u64> {
    None
}
