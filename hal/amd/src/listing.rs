//! A code object's executable sections as `llvm-objdump -d --mcpu=gfx1100` prints them: the
//! file line, one `Disassembly of section` per executable section, a `<symbol>:` line where a
//! function starts, and per instruction a tab, LLVM's text padded to 59 columns, `// `, the
//! address (12 hex digits) and the dwords; a branch adds its target as `<symbol+0xoff>`.
//! Words that do not decode end the section with the decoder's error in place of a line.

use crate::codeobj::CodeObject;
use core::fmt::{self, Write};
use hcq_rdna3::decode::decode;
use hcq_rdna3::disasm::Text;

/// Writes `co`'s listing; `path` is the file name objdump prints on its first line.
pub fn write(f: &mut dyn Write, co: &CodeObject, path: &str) -> fmt::Result {
    write!(f, "\n{path}:\tfile format elf64-amdgpu\n")?;
    for s in co.sections.iter().filter(|s| s.exec) {
        write!(f, "\nDisassembly of section {}:\n", s.name)?;
        let bytes = &co.image[s.range.clone()];
        let words: alloc::vec::Vec<u32> =
            bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        // The address objdump prints for image offset `o` of this section.
        let addr = |o: usize| s.addr + (o - s.range.start) as u64;
        let label =
            |o: usize| co.functions.iter().rfind(|g| g.at <= o && s.range.contains(&g.at)).map(|g| (g, o - g.at));
        let mut at = 0;
        let mut line = alloc::string::String::new();
        while at < words.len() {
            let o = s.range.start + 4 * at;
            for g in co.functions.iter().filter(|g| g.at == o) {
                write!(f, "\n{:016x} <{}>:\n", addr(o), g.name)?;
            }
            let i = match decode(&words, at) {
                Ok(i) => i,
                Err(e) => return writeln!(f, "\t// {:012X}: {e}", addr(o)),
            };
            line.clear();
            write!(line, "{}", Text(&i))?;
            write!(f, "\t{line:<59}// {:012X}:", addr(o))?;
            for w in &i.words[..i.len] {
                write!(f, " {w:08X}")?;
            }
            let name = i.op.name;
            if name.starts_with("s_branch") || name.starts_with("s_cbranch") {
                // CAST: simm16, in dwords from the next instruction.
                let simm = i64::from((i.words[0] & 0xffff) as u16 as i16);
                let target = o as i64 + 4 + 4 * simm;
                if let Some((g, off)) = usize::try_from(target).ok().and_then(label) {
                    if off == 0 { write!(f, " <{}>", g.name)? } else { write!(f, " <{}+{off:#x}>", g.name)? }
                }
            }
            f.write_char('\n')?;
            at += i.len;
        }
    }
    Ok(())
}

/// The listing as a `Display`.
pub struct Listing<'a> {
    /// The code object.
    pub co: &'a CodeObject,
    /// The file name for the first line.
    pub path: &'a str,
}

impl fmt::Display for Listing<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write(f, self.co, self.path)
    }
}
