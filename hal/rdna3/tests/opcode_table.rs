//! docs/rdna3-opcodes.md, the table of gfx1100 compute opcodes: for every opcode of every encoding
//! in the crate's tables, one instruction of plain register operands is built (fields placed as
//! the RDNA3 guide's ch. 15 lays them out, checked against the crate's own decoder) and loaded with
//! `s_endpgm` after it by [`Program::load`]: executed, or refused with the interpreter's reason.
//! Beside it, what remu executes (`tests/data/remu_opcodes.txt`, read off remu's source by
//! `tools/remu_opcodes.py`). The test fails when the checked-in file is not what it generates
//! (an opcode the interpreter now executes, a new remu file): `HCQ_BLESS=1 cargo test -p hcq-rdna3
//! --test opcode_table` rewrites it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hcq_rdna3::decode::{Encoding, decode};
use hcq_rdna3::disasm::Text;
use hcq_rdna3::exec::{LoadError, Program};
use hcq_rdna3::tables::{self, Op};

const S_ENDPGM: u32 = 0xbfb0_0000;
/// SGPR `null`: SMEM's soffset, FLAT/GLOBAL/SCRATCH's saddr `off`.
const NULL: u32 = 124;
/// `v_dual_mov_b32`, the other half of a VOPD instruction whose X or Y half is tabled.
const DUAL_MOV: u32 = 8;

/// The tables, in the order of the crate's `tables.rs`: (name, encoding, opcodes).
fn encodings() -> [(&'static str, Encoding, &'static [Op]); 17] {
    [
        ("SOP2", Encoding::Sop2, tables::SOP2),
        ("SOPK", Encoding::Sopk, tables::SOPK),
        ("SOP1", Encoding::Sop1, tables::SOP1),
        ("SOPC", Encoding::Sopc, tables::SOPC),
        ("SOPP", Encoding::Sopp, tables::SOPP),
        ("SMEM", Encoding::Smem, tables::SMEM),
        ("VOP1", Encoding::Vop1, tables::VOP1),
        ("VOP2", Encoding::Vop2, tables::VOP2),
        ("VOPC", Encoding::Vopc, tables::VOPC),
        ("VOP3", Encoding::Vop3, tables::VOP3),
        ("VOP3P", Encoding::Vop3p, tables::VOP3P),
        ("DS", Encoding::Ds, tables::DS),
        ("FLAT", Encoding::Flat, tables::FLAT),
        ("SCRATCH", Encoding::Scratch, tables::SCRATCH),
        ("GLOBAL", Encoding::Global, tables::GLOBAL),
        ("VOPDX", Encoding::Vopd, tables::VOPDX),
        ("VOPDY", Encoding::Vopd, tables::VOPDY),
    ]
}

/// The register numbers put in each operand field: (dst, sdst of VOP3SD, src0, src1, src2).
fn number(field: u8) -> u32 {
    match field {
        b'D' => 16,
        b'E' => 8,
        b'A' => 32,
        b'B' => 64,
        b'C' => 96,
        f => panic!("operand field {}", f as char),
    }
}

/// The operand fields an opcode's table entry names: field letter -> register class.
fn fields(op: &Op) -> BTreeMap<u8, u8> {
    op.operands
        .iter()
        .filter(|o| o.len() > 2 && o.as_bytes()[1] == b':')
        .map(|o| (o.as_bytes()[0], o.as_bytes()[2]))
        .collect()
}

/// The instruction's dwords (without a literal): registers D v16/s16, sdst s8, A v32/s32, B v64/s64,
/// C v96/s96 in the fields the opcode has, zero in the others, no modifiers.
fn build(name: &str, enc: Encoding, op: &Op) -> Vec<u32> {
    let f = fields(op);
    // A field's register number, 0 when the opcode has no such operand.
    let r = |c: u8| if f.contains_key(&c) { number(c) } else { 0 };
    // A 9-bit VALU source: VGPRs from 256.
    let src = |c: u8| match f.get(&c) {
        Some(b's') => number(c),
        Some(_) => 256 + number(c),
        None => 0,
    };
    let o = u32::from(op.op);
    match enc {
        Encoding::Sop2 => vec![0b10 << 30 | o << 23 | r(b'D') << 16 | r(b'B') << 8 | r(b'A')],
        Encoding::Sopk => vec![0b1011 << 28 | o << 23 | r(b'D') << 16],
        Encoding::Sop1 => vec![0x17d << 23 | r(b'D') << 16 | o << 8 | r(b'A')],
        Encoding::Sopc => vec![0x17e << 23 | o << 16 | r(b'B') << 8 | r(b'A')],
        Encoding::Sopp => vec![0x17f << 23 | o << 16],
        Encoding::Smem => vec![0x3d << 26 | o << 18 | r(b'D') << 6 | r(b'A') >> 1, NULL << 25],
        Encoding::Vop1 => vec![0x3f << 25 | r(b'D') << 17 | o << 9 | src(b'A')],
        Encoding::Vop2 => vec![o << 25 | r(b'D') << 17 | r(b'B') << 9 | src(b'A')],
        Encoding::Vopc => vec![0x3e << 25 | o << 17 | r(b'B') << 9 | src(b'A')],
        Encoding::Vop3 => {
            vec![0x35 << 26 | o << 16 | r(b'E') << 8 | r(b'D'), src(b'C') << 18 | src(b'B') << 9 | src(b'A')]
        }
        Encoding::Vop3p => {
            // op_sel_hi as LLVM prints no modifier: set for each source the opcode has, but none
            // for the mixed-precision fma_mix (whose op_sel_hi picks f16 sources).
            let hi = |c: u8| u32::from(f.contains_key(&c) && !op.name.starts_with("v_fma_mix"));
            vec![
                0xcc << 24 | o << 16 | hi(b'C') << 14 | r(b'D'),
                hi(b'B') << 28 | hi(b'A') << 27 | src(b'C') << 18 | src(b'B') << 9 | src(b'A'),
            ]
        }
        Encoding::Ds => vec![0x36 << 26 | o << 18, r(b'D') << 24 | r(b'C') << 16 | r(b'B') << 8 | r(b'A')],
        Encoding::Flat | Encoding::Scratch | Encoding::Global => {
            let seg = match enc {
                Encoding::Flat => 0,
                Encoding::Scratch => 1,
                _ => 2,
            };
            vec![0x37 << 26 | o << 18 | seg << 16, r(b'D') << 24 | NULL << 16 | r(b'B') << 8 | r(b'A')]
        }
        Encoding::Vopd => {
            // X: v16 = op(v32, v65); Y: v17 = op(v34, v67) (the other bank of each source, the
            // other parity of the destination, as VOPD requires); the other half v_dual_mov_b32.
            let (x, y) = if name == "VOPDX" { (o, DUAL_MOV) } else { (DUAL_MOV, o) };
            vec![
                0x32 << 26 | x << 22 | y << 17 | 65 << 9 | (256 + 32),
                16 << 24 | (17 >> 1) << 17 | 67 << 9 | (256 + 34),
            ]
        }
        e => panic!("no builder for {}", e.name()),
    }
}

/// What [`Program::load`] said.
#[derive(Clone, Debug, PartialEq)]
enum Hcq {
    Executed,
    Refused(String),
}

fn load(code: &[u32], name: &str, wave64: bool) -> Hcq {
    match Program::load(code, 0, wave64) {
        Ok(_) => Hcq::Executed,
        Err(LoadError::Unsupported { name: n, what, .. }) if n == name => Hcq::Refused(what.to_string()),
        Err(LoadError::Unsupported { name: n, what, .. }) => Hcq::Refused(format!("{what} ({n})")),
        Err(e) => panic!("{name}: {e}"),
    }
}

struct Row {
    table: &'static str,
    op: &'static Op,
    wave32: Hcq,
    wave64: Hcq,
    /// remu executes it (with its note), or not.
    remu: Option<String>,
}

/// The instruction of `op`, literal (0) where it needs one, then `s_endpgm`; checked to decode
/// to that opcode and to be followed by `s_endpgm`.
fn program(table: &str, enc: Encoding, op: &Op) -> Vec<u32> {
    let mut code = build(table, enc, op);
    let base = code.len();
    let probe: Vec<u32> = code.iter().copied().chain([0]).collect();
    let i = decode(&probe, 0).unwrap_or_else(|e| panic!("{table} {}: {code:08x?} does not decode: {e}", op.name));
    if i.len > base {
        code.push(0);
    }
    code.push(S_ENDPGM);
    let i = decode(&code, 0).unwrap_or_else(|e| panic!("{table} {}: {e}", op.name));
    let half = if table == "VOPDY" { i.y.expect("VOPD has a Y half") } else { i.op };
    assert!(i.enc == enc && core::ptr::eq(half, op), "{table} {}: {code:08x?} decodes to {}", op.name, Text(&i));
    assert_eq!(i.len, code.len() - 1, "{table} {}: length", op.name);
    let text = format!("{}", Text(&i));
    assert!(!text.contains("op_sel") && !text.contains("neg_"), "{table} {}: modifiers in {text}", op.name);
    let end = decode(&code, i.len).unwrap();
    assert_eq!(end.op.name, "s_endpgm");
    code
}

/// remu's data file: its commit and date, and (table, opcode) -> note for what it executes.
fn remu() -> (String, String, BTreeMap<(String, u16), String>) {
    let path = hcq_testkit::root().join("hal/rdna3/tests/data/remu_opcodes.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut commit, mut date, mut ops) = (String::new(), String::new(), BTreeMap::new());
    let tabs = encodings();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        if f[0] == "commit" {
            (commit, date) = (f[1].to_string(), f[2].to_string());
            continue;
        }
        let op = u16::from_str_radix(f[1].trim_start_matches("0x"), 16).unwrap();
        let (_, _, t) = tabs.iter().find(|t| t.0 == f[0]).unwrap_or_else(|| panic!("remu_opcodes.txt: table {}", f[0]));
        let entry = t.iter().find(|o| o.op == op);
        assert_eq!(
            entry.map(|o| o.name),
            Some(f[2]),
            "remu_opcodes.txt: {} {op:#x} is not {} in tables.rs: rerun tools/remu_opcodes.py",
            f[0],
            f[2]
        );
        ops.insert((f[0].to_string(), op), f.get(3).unwrap_or(&"").to_string());
    }
    assert_eq!(commit.len(), 40, "remu_opcodes.txt names remu's commit");
    (commit, date, ops)
}

fn rows() -> Vec<Row> {
    let (_, _, remu) = remu();
    let mut rows = Vec::new();
    for (table, enc, ops) in encodings() {
        for op in ops {
            let code = program(table, enc, op);
            rows.push(Row {
                table,
                op,
                wave32: load(&code, op.name, false),
                wave64: load(&code, op.name, true),
                remu: remu.get(&(table.to_string(), op.op)).cloned(),
            });
        }
    }
    rows
}

fn said(h: &Hcq) -> String {
    match h {
        Hcq::Executed => "executed".to_string(),
        Hcq::Refused(why) => format!("refused: {why}"),
    }
}

fn hcq_cell(r: &Row) -> String {
    if r.wave64 == r.wave32 { said(&r.wave32) } else { format!("{} (wave64: {})", said(&r.wave32), said(&r.wave64)) }
}

fn remu_cell(r: &Row) -> String {
    match (&r.remu, &r.wave32) {
        (None, _) => "no".to_string(),
        (Some(n), Hcq::Refused(_)) if n.is_empty() => "**yes**".to_string(),
        (Some(n), Hcq::Refused(_)) => format!("**yes** ({n})"),
        (Some(n), _) if n.is_empty() => "yes".to_string(),
        (Some(n), _) => format!("yes ({n})"),
    }
}

fn generate() -> String {
    let (commit, date, _) = remu();
    let rows = rows();
    let mut md = String::new();
    let w = &mut md;
    let short = &commit[..12];
    writeln!(
        w,
        "<!-- Generated by hal/rdna3/tests/opcode_table.rs: do not edit. \
         `HCQ_BLESS=1 cargo test -p hcq-rdna3 --test opcode_table` rewrites it. -->"
    )
    .unwrap();
    w.push_str(&format!(
        r#"# RDNA3 (gfx1100) compute opcodes: what hcq's interpreter executes, what remu executes

Every opcode of every compute encoding in `hcq-rdna3`'s tables (`hal/rdna3/src/tables.rs`, generated
from LLVM 19's gfx1100 disassembler), against [remu](https://github.com/Qazalin/remu), the RDNA3
emulator tinygrad's AMD CI ran on, at commit `{short}` ({date}).

**hcq.** For each opcode the test `hal/rdna3/tests/opcode_table.rs` builds one instruction with plain
register operands in the fields the opcode has (destination v16 or s16, VOP3's carry-out s8, sources
v32/s32, v64/s64, v96/s96, SMEM's base s[32:33], FLAT/GLOBAL/SCRATCH's `saddr` off, a literal 0
where the opcode takes one, no modifiers; a VOPD half is paired with `v_dual_mov_b32`), checks that
the crate's decoder reads that opcode back, and loads it, followed by `s_endpgm`, with
`hcq_rdna3::exec::Program::load` in wave32. *Executed* means the load accepts it: the interpreter has
an implementation of that instruction (whether the implementation is right is for the interpreter's
own tests, not this table). *Refused* is `LoadError::Unsupported`, which the load returns for
anything it does not execute, before a kernel runs; the text after it is the interpreter's own
reason (its `what`): "the opcode" when there is no implementation of the opcode at all, otherwise the
form or modifier it does not implement. Where wave64 differs from wave32 it is said in brackets.

**remu.** remu is read, not run: `tools/remu_opcodes.py` parses remu's `src/thread.rs` (one
`if`/`else if` block per encoding in `Thread::interpret`, `match op` arms inside, `todo_instr!` where
it gives up) and `src/work_group.rs` (words the work-group loop ends at or skips without interpreting
them), and records in `hal/rdna3/tests/data/remu_opcodes.txt` the opcodes an instruction of plain
operands gets an implementation for. *yes* says no more than that: remu's conditions on modifiers
(clamp, `neg`, `op_sel`, GDS, scratch addressing) are not followed, and some implementations are
stubs (its `v_div_scale_f32` writes 0, "div scaling isn't required"). A note after *yes* says when
the work-group loop, not `thread.rs`, takes the opcode: skipped as a no-op, or only one word of
it. remu runs wave32 only. The parse was checked against a reading of remu's source, encoding by
encoding, at the commit above. **yes** in bold marks what remu executes and hcq refuses; all of
those are listed [below](#remu-executes-hcq-refuses).

Not in the tables, so not here: MUBUF, MTBUF, MIMG, EXP, VINTERP and LDSDIR, which hcq does not decode
(a kernel with one is refused at load as a decode error). remu's `thread.rs` has a MUBUF block that
accepts opcode 43 (`buffer_gl0_inv`) as a no-op, but its decoder (`src/rdna3.rs`) reaches `todo!()`
for that encoding first.

Regenerate:

```sh
python3 tools/remu_opcodes.py --repo PATH_TO_REMU_CLONE      # hal/rdna3/tests/data/remu_opcodes.txt
HCQ_BLESS=1 cargo test -p hcq-rdna3 --test opcode_table      # this file
```

The test fails when this file is not what it generates: an opcode the interpreter starts (or stops)
executing changes the table, and the change is committed with the interpreter's.

## Summary

| encoding | opcodes | hcq executes | remu executes | both | hcq only | remu only |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
"#
    ));
    let mut total = [0usize; 6];
    for (table, _, _) in encodings() {
        let mut c = [0usize; 6];
        for r in rows.iter().filter(|r| r.table == table) {
            let (h, m) = (r.wave32 == Hcq::Executed, r.remu.is_some());
            for (k, on) in [true, h, m, h && m, h && !m, !h && m].into_iter().enumerate() {
                c[k] += usize::from(on);
            }
        }
        for (t, x) in total.iter_mut().zip(c) {
            *t += x;
        }
        writeln!(w, "| {table} | {} | {} | {} | {} | {} | {} |", c[0], c[1], c[2], c[3], c[4], c[5]).unwrap();
    }
    let t = total;
    writeln!(
        w,
        "| **all** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** |",
        t[0], t[1], t[2], t[3], t[4], t[5]
    )
    .unwrap();
    w.push_str("\nVOPDX and VOPDY are the two halves of a VOPD (dual-issue) instruction, counted apart.\n");

    w.push_str("\n## remu executes, hcq refuses\n\n");
    let gaps: Vec<&Row> = rows.iter().filter(|r| r.remu.is_some() && r.wave32 != Hcq::Executed).collect();
    if gaps.is_empty() {
        w.push_str("None: every opcode remu executes, hcq's interpreter executes too.\n");
    } else {
        w.push_str("| encoding | opcode | mnemonic | hcq | remu |\n| --- | ---: | --- | --- | --- |\n");
        for r in &gaps {
            writeln!(w, "| {} | {:#x} | `{}` | {} | {} |", r.table, r.op.op, r.op.name, hcq_cell(r), remu_cell(r))
                .unwrap();
        }
    }

    let odd: Vec<&Row> = rows.iter().filter(|r| r.wave64 != r.wave32).collect();
    if !odd.is_empty() {
        w.push_str("\n## wave64\n\nWhat the interpreter executes in one wave size and not the other:\n\n");
        for r in &odd {
            writeln!(w, "- {} `{}`: wave32 {}, wave64 {}", r.table, r.op.name, said(&r.wave32), said(&r.wave64))
                .unwrap();
        }
    }

    w.push_str("\n## Every opcode\n");
    for (table, _, _) in encodings() {
        writeln!(w, "\n### {table}\n\n| encoding | opcode | mnemonic | hcq | remu |\n| --- | ---: | --- | --- | --- |")
            .unwrap();
        for r in rows.iter().filter(|r| r.table == table) {
            writeln!(w, "| {table} | {:#x} | `{}` | {} | {} |", r.op.op, r.op.name, hcq_cell(r), remu_cell(r)).unwrap();
        }
    }
    md
}

#[test]
fn every_opcode_builds_an_instruction_that_decodes_back_to_it() {
    let mut n = 0;
    for (table, enc, ops) in encodings() {
        for op in ops {
            program(table, enc, op);
            n += 1;
        }
    }
    assert!(n > 1200, "{n} opcodes");
}

#[test]
fn the_checked_in_opcode_table_is_what_the_interpreter_and_remu_say() {
    let doc = hcq_testkit::root().join("docs/rdna3-opcodes.md");
    let generated = generate();
    if std::env::var_os("HCQ_BLESS").is_some() {
        std::fs::write(&doc, &generated).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&doc).unwrap_or_default();
    let (a, b): (Vec<&str>, Vec<&str>) = (current.lines().collect(), generated.lines().collect());
    let k = (0..a.len().max(b.len())).find(|&k| a.get(k) != b.get(k));
    assert!(
        k.is_none(),
        "docs/rdna3-opcodes.md is stale: regenerate it with `HCQ_BLESS=1 cargo test -p hcq-rdna3 --test opcode_table` \
         (line {}: checked in {:?}, generated {:?})",
        k.unwrap_or(0) + 1,
        k.and_then(|k| a.get(k)),
        k.and_then(|k| b.get(k))
    );
}
