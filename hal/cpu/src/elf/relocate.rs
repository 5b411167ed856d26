//! Relocation: [`ElfObject::load_into`] copies the laid-out sections into an image and applies
//! every relocation, resolving symbols (see the parent module for what is supported).

use super::*;

impl<'a> ElfObject<'a> {
    /// Copy the sections into `image` (which will live at address `image_addr`), zero-fill the
    /// rest, apply the relocations and return the address of the entry function `entry`.
    ///
    /// `resolve` maps each undefined symbol's name to its address (return `None` for unknown
    /// names). `image` must hold at least [`Layout::size`] bytes and `image_addr` must be aligned
    /// to [`Layout::align`]. Only `image[..layout.size]` is written. Nothing is executed.
    pub fn load_into(
        &self,
        image: &mut [u8],
        image_addr: u64,
        entry: &str,
        resolve: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<u64> {
        let layout = &self.layout;
        let size = layout.size;
        if (image.len() as u64) < size {
            return Err(Error::OutOfSpace { what: "elf load image", requested: size, capacity: image.len() as u64 });
        }
        if !image_addr.is_multiple_of(layout.align) {
            return Err(Error::Misaligned { what: "elf load image address", value: image_addr, align: layout.align });
        }
        if image_addr.checked_add(size).is_none() {
            return Err(Error::InvalidArgument {
                what: "elf load image address (image would wrap)",
                value: image_addr,
            });
        }
        let entry_offset = self.entry_offset(entry)?;

        // size <= MAX_IMAGE_SIZE and <= image.len(), so these conversions and slices are exact.
        let image = image.get_mut(..size as usize).ok_or(Error::OutOfSpace {
            what: "elf load image",
            requested: size,
            capacity: 0,
        })?;
        image.fill(0);
        for (index, (section, base)) in self.sections.iter().zip(&layout.sections).enumerate() {
            let Some(base) = *base else { continue };
            if section.kind != SHT_PROGBITS {
                continue;
            }
            let src = slice(self.bytes, section.offset, section.size, "elf section data")
                .with_context(|| format!("section {index}"))?;
            let dst = slice_mut(image, base, section.size, "elf load image")?;
            put(dst, src);
        }

        let mut cache: Vec<Option<u64>> =
            vec![None; if self.relas.is_empty() { 0 } else { self.symbol_count() as usize }];
        let mut slot = 0u64;
        for set in &self.relas {
            for (k, entry) in set.entries.iter().enumerate() {
                let entry = rec(entry);
                let (r_offset, addend) = (entry.offset.get(), entry.addend.get());
                let (sym_index, ty) = (entry.sym(), entry.kind());
                let veneer = if is_branch(self.arch, ty) {
                    slot += 1;
                    Some(layout.veneer_offset + (slot - 1) * VENEER_SIZE)
                } else {
                    None
                };
                let reloc = Reloc { target: set.target, r_offset, sym_index, ty, addend, veneer };
                self.apply(image, image_addr, reloc, &mut cache, resolve).with_context(|| {
                    let unnamed = if cfg!(feature = "reloc-names") { "unknown relocation" } else { "relocation" };
                    let name = relocation_name(self.arch, ty).unwrap_or(unnamed);
                    let section = self.section_name(set.target);
                    let symbol = self.symbol_label(sym_index);
                    format!(
                        "{} {name} (type {ty}) at {section}+{r_offset:#x} against {symbol} (entry {k} of section {})",
                        self.arch, set.index
                    )
                })?;
            }
        }
        Ok(image_addr + entry_offset)
    }

    fn apply(
        &self,
        image: &mut [u8],
        image_addr: u64,
        r: Reloc,
        cache: &mut [Option<u64>],
        resolve: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<()> {
        let arch = self.arch;
        let width = match (arch, r.ty) {
            (Machine::X86_64, R_X86_64_NONE) | (Machine::Aarch64, R_AARCH64_NONE_0 | R_AARCH64_NONE) => return Ok(()),
            (Machine::X86_64, R_X86_64_64) | (Machine::Aarch64, R_AARCH64_ABS64) => 8,
            (Machine::X86_64, R_X86_64_PC32 | R_X86_64_PLT32 | R_X86_64_32 | R_X86_64_32S) => 4,
            (
                Machine::Aarch64,
                R_AARCH64_PREL32
                | R_AARCH64_ADR_PREL_PG_HI21
                | R_AARCH64_ADD_ABS_LO12_NC
                | R_AARCH64_LDST8_ABS_LO12_NC
                | R_AARCH64_LDST16_ABS_LO12_NC
                | R_AARCH64_LDST32_ABS_LO12_NC
                | R_AARCH64_LDST64_ABS_LO12_NC
                | R_AARCH64_LDST128_ABS_LO12_NC
                | R_AARCH64_CALL26
                | R_AARCH64_JUMP26,
            ) => 4,
            _ => return Err(Error::Unsupported { what: "elf relocation type", value: r.ty.into() }),
        };
        // Bounds of the patched place inside its section (and therefore inside the image).
        let (Some(section), Some(base)) =
            (self.sections.get(r.target), self.layout.sections.get(r.target).copied().flatten())
        else {
            // collect_relas keeps only relocations of laid-out sections.
            return Err(Error::Malformed {
                what: "elf relocation",
                at: r.target as u64,
                reason: "target section is not loaded",
            });
        };
        let section_size = section.size;
        match r.r_offset.checked_add(width) {
            Some(end) if end <= section_size => {}
            _ => {
                return Err(Error::OutOfBounds {
                    what: "relocation r_offset",
                    offset: r.r_offset,
                    len: width,
                    limit: section_size,
                });
            }
        }
        let place = base + r.r_offset; // both within MAX_IMAGE_SIZE
        let p = i128::from(image_addr) + i128::from(place);
        let s = if r.sym_index == 0 { 0 } else { self.symbol_address(r.sym_index, image_addr, cache, resolve)? };
        let sa = i128::from(s) + i128::from(r.addend);
        let field = slice_mut(image, place, width, "elf load image")?;
        match arch {
            Machine::X86_64 => match r.ty {
                R_X86_64_64 => put(field, &(sa as u64).to_le_bytes()),
                R_X86_64_32 => write_u32(field, fit_u32(sa)?),
                R_X86_64_32S => write_u32(field, fit_i32(sa)? as u32),
                R_X86_64_PC32 => write_u32(field, fit_i32(sa - p)? as u32),
                _ /* R_X86_64_PLT32 */ => {
                    let value = match (fit_i32(sa - p), r.veneer) {
                        (Ok(v), _) => v,
                        (Err(e), Some(slot)) if r.addend == -4 => {
                            let target = sa + 4; // the call's destination
                            let mut veneer = [0xcc_u8; VENEER_SIZE as usize];
                            veneer[..6].copy_from_slice(&[0xff, 0x25, 0, 0, 0, 0]); // jmp *0(%rip)
                            veneer[6..14].copy_from_slice(&(target as u64).to_le_bytes());
                            put(slice_mut(image, slot, VENEER_SIZE, "elf veneer area")?, &veneer);
                            let v = i128::from(image_addr) + i128::from(slot) + i128::from(r.addend) - p;
                            fit_i32(v).map_err(|_| e)?
                        }
                        (Err(e), _) => return Err(e),
                    };
                    let field = slice_mut(image, place, width, "elf load image")?;
                    write_u32(field, value as u32);
                }
            },
            Machine::Aarch64 => {
                let insn = read_u32(field);
                let patched = match r.ty {
                    R_AARCH64_ABS64 => {
                        put(field, &(sa as u64).to_le_bytes());
                        return Ok(());
                    }
                    R_AARCH64_PREL32 => {
                        let x = sa - p;
                        if !(-(1i128 << 31)..(1i128 << 32)).contains(&x) {
                            return Err(range_error("value outside [-2^31, 2^32)"));
                        }
                        x as u32
                    }
                    R_AARCH64_ADR_PREL_PG_HI21 => {
                        let x = (sa & !0xfff) - (p & !0xfff);
                        if !(-(1i128 << 32)..(1i128 << 32)).contains(&x) {
                            return Err(range_error("page delta outside +-4 GiB"));
                        }
                        let imm = ((x >> 12) as u32) & 0x1f_ffff;
                        (insn & !((0x3 << 29) | (0x7_ffff << 5))) | ((imm & 0x3) << 29) | ((imm >> 2) << 5)
                    }
                    R_AARCH64_ADD_ABS_LO12_NC => encode_lo12(insn, sa, 0)?,
                    R_AARCH64_LDST8_ABS_LO12_NC => encode_lo12(insn, sa, 0)?,
                    R_AARCH64_LDST16_ABS_LO12_NC => encode_lo12(insn, sa, 1)?,
                    R_AARCH64_LDST32_ABS_LO12_NC => encode_lo12(insn, sa, 2)?,
                    R_AARCH64_LDST64_ABS_LO12_NC => encode_lo12(insn, sa, 3)?,
                    R_AARCH64_LDST128_ABS_LO12_NC => encode_lo12(insn, sa, 4)?,
                    _ /* CALL26 | JUMP26 */ => {
                        if sa & 0x3 != 0 {
                            return Err(Error::Misaligned { what: "branch target", value: sa as u64, align: 4 });
                        }
                        let range = -(1i128 << 27)..(1i128 << 27);
                        let mut x = sa - p;
                        if !range.contains(&x) {
                            let Some(slot) = r.veneer else {
                                return Err(range_error("branch out of range and no veneer slot"));
                            };
                            let mut veneer = [0u8; VENEER_SIZE as usize];
                            veneer[..4].copy_from_slice(&A64_LDR_X16_PC8.to_le_bytes());
                            veneer[4..8].copy_from_slice(&A64_BR_X16.to_le_bytes());
                            veneer[8..].copy_from_slice(&(sa as u64).to_le_bytes());
                            put(slice_mut(image, slot, VENEER_SIZE, "elf veneer area")?, &veneer);
                            x = i128::from(image_addr) + i128::from(slot) - p;
                            if !range.contains(&x) {
                                return Err(range_error("veneer outside +-128 MiB of the branch"));
                            }
                        }
                        (insn & !0x03ff_ffff) | (((x >> 2) as u32) & 0x03ff_ffff)
                    }
                };
                write_u32(slice_mut(image, place, width, "elf load image")?, patched);
            }
        }
        Ok(())
    }

    fn symbol_address(
        &self,
        index: u64,
        image_addr: u64,
        cache: &mut [Option<u64>],
        resolve: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<u64> {
        if let Some(Some(addr)) = cache.get(index as usize) {
            return Ok(*addr);
        }
        let sym = self.symbol(index)?;
        if sym.kind() == STT_TLS {
            return Err(Error::Unsupported { what: "thread-local (STT_TLS) symbol", value: index });
        }
        let addr = match sym.shndx {
            SHN_UNDEF => {
                let name = self.symbol_name(index, sym)?;
                match resolve(name) {
                    Some(addr) => addr,
                    None if sym.bind() == STB_WEAK => 0,
                    None => {
                        return Err(Error::Malformed {
                            what: "elf symbol",
                            at: index,
                            reason: "undefined symbol that the resolver does not provide",
                        })
                        .with_context(|| format!("unresolved symbol `{name}`"));
                    }
                }
            }
            SHN_ABS => sym.value,
            SHN_COMMON => {
                return Err(Error::Unsupported {
                    what: "common symbol (SHN_COMMON; build with -fno-common)",
                    value: index,
                });
            }
            SHN_XINDEX => {
                return Err(Error::Unsupported {
                    what: "symbol with an extended section index (SHN_XINDEX)",
                    value: index,
                });
            }
            shndx if shndx >= SHN_LORESERVE => {
                return Err(Error::Unsupported { what: "symbol with a reserved section index", value: shndx.into() });
            }
            shndx => {
                let shndx = usize::from(shndx);
                let section = self.sections.get(shndx).ok_or(Error::OutOfBounds {
                    what: "symbol st_shndx",
                    offset: shndx as u64,
                    len: 1,
                    limit: self.sections.len() as u64,
                })?;
                let Some(base) = self.layout.sections.get(shndx).copied().flatten() else {
                    return Err(Error::Malformed {
                        what: "elf symbol",
                        at: index,
                        reason: "symbol is defined in a section that is not loaded",
                    });
                };
                if sym.value > section.size {
                    return Err(Error::OutOfBounds {
                        what: "symbol st_value",
                        offset: sym.value,
                        len: 0,
                        limit: section.size,
                    });
                }
                image_addr + base + sym.value // within the image, which does not wrap
            }
        };
        if let Some(entry) = cache.get_mut(index as usize) {
            *entry = Some(addr);
        }
        Ok(addr)
    }
}

/// One relocation entry, decoded.
#[derive(Clone, Copy)]
struct Reloc {
    target: usize,
    r_offset: u64,
    sym_index: u64,
    ty: u32,
    addend: i64,
    /// Image offset of this branch relocation's veneer slot.
    veneer: Option<u64>,
}

fn slice_mut<'b>(bytes: &'b mut [u8], offset: u64, len: u64, what: &'static str) -> Result<&'b mut [u8]> {
    let limit = bytes.len() as u64;
    let oob = Error::OutOfBounds { what, offset, len, limit };
    let end = offset.checked_add(len).ok_or_else(|| oob.clone())?;
    match (usize::try_from(offset), usize::try_from(end)) {
        (Ok(start), Ok(end)) => bytes.get_mut(start..end).ok_or(oob),
        _ => Err(oob),
    }
}

/// Copy `src` over `dst`, which `slice_mut` made exactly as long (no panic path: a shorter
/// slice, which cannot happen, would take what fits).
fn put(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
        d.copy_from_slice(s);
    }
}

fn read_u32(field: &[u8]) -> u32 {
    // `field` is a 4-byte slice checked by `slice_mut`; anything else reads as 0.
    field.try_into().map_or(0, u32::from_le_bytes)
}

fn write_u32(field: &mut [u8], value: u32) {
    for (dst, src) in field.iter_mut().zip(value.to_le_bytes()) {
        *dst = src;
    }
}

fn range_error(reason: &'static str) -> Error {
    Error::Malformed { what: "elf relocation", at: 0, reason }
}

fn fit_i32(value: i128) -> Result<i32> {
    i32::try_from(value).map_err(|_| range_error("value does not fit a signed 32-bit field"))
}

fn fit_u32(value: i128) -> Result<u32> {
    u32::try_from(value).map_err(|_| range_error("value does not fit an unsigned 32-bit field"))
}

/// Put the low 12 bits of `sa`, scaled down by `1 << shift`, into the imm12 field [21:10].
fn encode_lo12(insn: u32, sa: i128, shift: u32) -> Result<u32> {
    let lo12 = (sa & 0xfff) as u32;
    let align = 1u32 << shift;
    if !lo12.is_multiple_of(align) {
        return Err(Error::Misaligned {
            what: "load/store target for the access size",
            value: sa as u64,
            align: align.into(),
        });
    }
    Ok((insn & !(0xfff << 10)) | ((lo12 >> shift) << 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lo12_scales_and_checks_alignment() {
        // LDR q0, [x0] = 0x3dc00000; an offset of 0x230 scaled by 16 is 0x23.
        assert_eq!(encode_lo12(0x3dc0_0000, 0x1_2230, 4).unwrap(), 0x3dc0_0000 | (0x23 << 10));
        // An 8-byte-aligned target fails the 16-byte scale.
        assert!(matches!(encode_lo12(0x3dc0_0000, 0x1_2238, 4), Err(Error::Misaligned { align: 16, .. })));
        // The old imm12 is replaced, other bits kept.
        assert_eq!(encode_lo12(0x9100_0000 | (0xfff << 10), 0x7ff, 0).unwrap(), 0x9100_0000 | (0x7ff << 10));
    }

    #[test]
    fn fit_checks_32_bit_ranges_at_the_edges() {
        assert_eq!(fit_i32(i128::from(i32::MIN)).unwrap(), i32::MIN);
        assert!(fit_i32(i128::from(i32::MAX) + 1).is_err());
        assert_eq!(fit_u32(i128::from(u32::MAX)).unwrap(), u32::MAX);
        assert!(fit_u32(-1).is_err());
    }
}
