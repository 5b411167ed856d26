#!/usr/bin/env python3
"""Write hal/rdna3/tests/data/remu_opcodes.txt: which gfx1100 opcodes remu executes, read off remu's source.

remu (github.com/Qazalin/remu, the RDNA3 emulator tinygrad's AMD CI used) executes an instruction in
`Thread::interpret` (src/thread.rs): one `if`/`else if` block per encoding, and in each block `match op`
expressions (nested, some after others) whose arms either compute something or say `todo_instr!(...)`,
remu's refusal. Before that, `WorkGroup::exec_wave` (src/work_group.rs) ends the program at one word
(`END_PRG`) and skips others (`S_BARRIER`, the words of `SYNCS`, one prefix, `v_nop`) without
interpreting them.

This script parses both files (comments and string contents blanked, braces matched) and, for every
opcode of hcq's own tables (hal/rdna3/src/tables.rs), follows remu's `match op` arms as remu would
for an instruction with plain register operands: the first arm whose pattern holds is taken; an arm
that is only `todo_instr!(...)` (or `todo!`, `unimplemented!`, `unreachable!`, `panic!`) refuses, an
arm that says `return Ok(())` ends the walk, a later `match op` of the same arm is walked as well.
Conditions on modifiers (`if neg != 0 { todo_instr!(..) }`, clamp, GDS) are not followed: the table
is about opcodes. Words the work-group loop skips or ends at count as executed, with a note when
remu accepts only that one word of the opcode. It fails, naming what it does not understand, when
remu's source takes a shape it was not written for.

    python3 tools/remu_opcodes.py --repo PATH_TO_REMU [--rev REV]    # writes the data file

PATH_TO_REMU is a clone of github.com/Qazalin/remu (a bare one will do: the files are read with
`git show REV:src/...`). Then `HCQ_BLESS=1 cargo test -p hcq-rdna3 --test opcode_table` rewrites
docs/rdna3-opcodes.md from it.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "hal/rdna3/src/tables.rs"
OUT = ROOT / "hal/rdna3/tests/data/remu_opcodes.txt"

# gfx11 encodings told by the top bits of the first dword (AMD's RDNA3 ISA guide, "Microcode
# formats"), as remu's `instruction >> N == 0b...` conditions state them: (shift, value) -> the
# tables they cover, with the extra variables remu matches on (FLAT's segment field).
PREFIXES = {
  (24, 0b11001100): [("VOP3P", {})],
  (26, 0b110010): [("VOPDX", {}), ("VOPDY", {})],
  (26, 0b110101): [("VOP3", {})],
  (26, 0b110111): [("FLAT", {"seg": 0}), ("SCRATCH", {"seg": 1}), ("GLOBAL", {"seg": 2})],
  (26, 0b111000): [],  # MUBUF: hcq has no table of it (see docs/rdna3-opcodes.md)
}
# `Instruction::X` variants of remu's decoder that name one of hcq's tables.
VARIANTS = {"SOP1", "SOP2", "SOPK", "SOPC", "SOPP", "SMEM", "VOP1", "VOP2", "VOPC", "DS"}

# One-dword encodings: (fixed bits, mask of the fixed bits, opcode shift, opcode mask), to place the
# words remu's work-group loop treats by value.
ONE_DWORD = {
  "SOPP": (0b101111111 << 23, 0x1FF << 23, 16, 0x7F),
  "SOPC": (0b101111110 << 23, 0x1FF << 23, 16, 0x7F),
  "SOP1": (0b101111101 << 23, 0x1FF << 23, 8, 0xFF),
  "SOPK": (0b1011 << 28, 0xF << 28, 23, 0x1F),
  "VOP1": (0b0111111 << 25, 0x7F << 25, 9, 0xFF),
  "VOPC": (0b0111110 << 25, 0x7F << 25, 17, 0xFF),
}


def tables():
  """{table name: {opcode: mnemonic}} of hal/rdna3/src/tables.rs."""
  out, cur = {}, None
  for line in TABLES.read_text().splitlines():
    m = re.match(r"pub static (\w+): &\[Op\] = &\[", line)
    if m: cur = out.setdefault(m.group(1), {}); continue
    m = re.match(r'\s*Op \{ op: 0x([0-9a-f]+), name: "([^"]+)"', line)
    if m and cur is not None: cur[int(m.group(1), 16)] = m.group(2)
  return out


def git_show(repo, rev, path):
  return subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], check=True, capture_output=True, text=True).stdout


def clean(src):
  """Rust source with comments removed and string/char literal contents blanked (braces in format strings)."""
  out, i, n = [], 0, len(src)
  while i < n:
    c = src[i]
    if src.startswith("//", i):
      j = src.find("\n", i)
      i = n if j < 0 else j
    elif src.startswith("/*", i):
      i = src.index("*/", i) + 2
    elif c == '"':
      j = i + 1
      while src[j] != '"': j += 2 if src[j] == "\\" else 1
      out.append('""')
      i = j + 1
    elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]):
      m = re.match(r"'(\\.|[^\\'])'", src[i:i + 4])
      out.append("' '")
      i += len(m.group(0))
    else:
      out.append(c)
      i += 1
  return "".join(out)


CLOSE = {"{": "}", "(": ")", "[": "]"}


def close_of(s, i):
  """Index of the bracket closing the one at s[i]."""
  stack = []
  for j in range(i, len(s)):
    if s[j] in CLOSE: stack.append(CLOSE[s[j]])
    elif s[j] in ")]}":
      if not stack or stack.pop() != s[j]: raise SystemExit(f"remu_opcodes: unbalanced {s[j]!r} at {j}")
      if not stack: return j
  raise SystemExit(f"remu_opcodes: no bracket closes the one at {i}")


def fn_body(src, name):
  m = re.search(rf"fn {name}\b[^{{]*\{{", src)
  if not m: raise SystemExit(f"remu_opcodes: fn {name} not found")
  return src[m.end():close_of(src, m.end() - 1)]


def arms(block):
  """[(pattern text, body text)] of a match block's contents."""
  out, i, n = [], 0, len(block)
  while True:
    while i < n and block[i] in " \t\n,": i += 1
    if i >= n: return out
    j = block.index("=>", i)
    pat = block[i:j].strip()
    k = j + 2
    while block[k] in " \t\n": k += 1
    if block[k] == "{":
      e = close_of(block, k) + 1
    else:
      e, stack = k, []
      while e < n:
        c = block[e]
        if c in CLOSE: stack.append(CLOSE[c])
        elif c in ")]}": stack.pop()
        elif c == "," and not stack: break
        e += 1
    out.append((pat, block[k:e].strip()))
    i = e


def number(tok):
  tok = tok.strip().strip("()").strip()
  try: return int(tok.replace("_", ""), 0)
  except ValueError: raise SystemExit(f"remu_opcodes: pattern {tok!r} is not a number") from None


def matches(pat, v):
  if " if " in pat: raise SystemExit(f"remu_opcodes: guarded pattern {pat!r}")
  for alt in pat.split("|"):
    alt = alt.strip().strip("()").strip()
    if alt == "_": return True
    if "..=" in alt:
      lo, hi = alt.split("..=")
      if number(lo) <= v <= number(hi): return True
    elif ".." in alt: raise SystemExit(f"remu_opcodes: exclusive range {alt!r}")
    elif number(alt) == v: return True
  return False


REFUSE = re.compile(r"^\{?\s*(return\s+)?(todo_instr!|todo!|unimplemented!|unreachable!|panic!)\s*\(.*\)\s*\??\s*;?\s*\}?$", re.S)


def walk(body, env):
  """'ok', 'return' or 'todo': what remu does with the code `body` for the values `env`."""
  if REFUSE.match(body.strip()): return "todo"
  if body.startswith("{") and close_of(body, 0) == len(body) - 1: body = body[1:-1]
  pat = re.compile(r"\bmatch\s+\*?(" + "|".join(env) + r")\s*\{|\breturn\s+Ok\s*\(\s*\(\s*\)\s*\)|[{}]")
  depth, i = 0, 0
  while True:
    m = pat.search(body, i)
    if not m: return "ok"
    t = m.group(0)
    if t == "{": depth += 1; i = m.end(); continue
    if t == "}": depth -= 1; i = m.end(); continue
    if t.startswith("return"):
      if depth == 0: return "return"
      i = m.end(); continue
    end = close_of(body, m.end() - 1)
    v = env[m.group(1)]
    for p, b in arms(body[m.end():end]):
      if matches(p, v):
        r = walk(b, env)
        if r != "ok": return r
        break
    i = end + 1


def blocks(interpret):
  """[(tables with their env, block body)] of the if/else-if chain of Thread::interpret."""
  out = []
  head = re.compile(r"(?<![\w.])(?:else\s+)?if\s+(let\s+Instruction::(\w+)\s*\{[^}]*\}\s*=\s*decoded|instruction\s*>>\s*(\d+)\s*==\s*(0b[01]+))\s*\{")
  i = 0
  while True:
    m = head.search(interpret, i)
    if not m: return out
    end = close_of(interpret, m.end() - 1)
    body = interpret[m.end():end]
    if m.group(2):
      if m.group(2) not in VARIANTS: raise SystemExit(f"remu_opcodes: Instruction::{m.group(2)} is not an encoding this script knows")
      out.append(([(m.group(2), {})], body))
    else:
      key = (int(m.group(3)), int(m.group(4), 2))
      if key not in PREFIXES: raise SystemExit(f"remu_opcodes: encoding prefix {key} unknown")
      out.append((PREFIXES[key], body))
    i = end + 1


def place(word, tabs):
  """(table, opcode) of a one-dword instruction word."""
  for name, (fixed, mask, sh, om) in ONE_DWORD.items():
    if word & mask == fixed:
      op = (word >> sh) & om
      if name == "SOPK" and (word >> 23) & 0x1FF in (0x17D, 0x17E, 0x17F): continue
      if op in tabs[name]: return name, op
  raise SystemExit(f"remu_opcodes: word {word:#010x} is no gfx1100 one-dword instruction")


def word_level(wg, thread, tabs):
  """{(table, opcode): note} of what WorkGroup::exec_wave ends at or skips before interpreting."""
  loop = fn_body(wg, "exec_wave")
  consts = {}
  for src in (wg, thread):
    for m in re.finditer(r"const (\w+): u32 = (0[xX][0-9a-fA-F]+);", src): consts[m.group(1)] = int(m.group(2), 16)
    for m in re.finditer(r"const (\w+): \[u32; \d+\] = \[([^\]]*)\];", src):
      consts[m.group(1)] = [int(x, 16) for x in m.group(2).replace(" ", "").split(",") if x]
  words, prefixes = set(), []
  for m in re.finditer(r"self\.kernel\[pc\]\s*==\s*(\w+)", loop):
    words.add(consts[m.group(1)] if m.group(1) in consts else int(m.group(1), 16))
  for m in re.finditer(r"(\w+)\.contains\(&self\.kernel\[pc\]\)", loop): words.update(consts[m.group(1)])
  for m in re.finditer(r"self\.kernel\[pc\]\s*>>\s*(\d+)\s*==\s*(0x[0-9a-fA-F]+)", loop): prefixes.append((int(m.group(1)), int(m.group(2), 16)))
  out = {}
  for sh, v in prefixes:
    for name, (fixed, mask, osh, om) in ONE_DWORD.items():
      for op in tabs[name]:
        f, m = fixed | op << osh, mask | om << osh
        if v >> (32 - sh) == 0 and (f >> sh) & (m >> sh) == v & (m >> sh):
          free = (~m & 0xFFFFFFFF) >> sh
          out[(name, op)] = "skipped by work_group.rs" if free == 0 else f"only words with bits 31:{sh} = {v:#x}, skipped"
  for w in sorted(words):
    key = place(w, tabs)
    out.setdefault(key, f"only the word {w:08x}, in work_group.rs")
  return out


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--repo", required=True, help="a clone of github.com/Qazalin/remu (bare or not)")
  ap.add_argument("--rev", default="HEAD")
  ap.add_argument("-o", "--out", default=str(OUT))
  a = ap.parse_args()
  commit = subprocess.run(["git", "-C", a.repo, "rev-parse", f"{a.rev}^{{commit}}"], check=True, capture_output=True, text=True).stdout.strip()
  date = subprocess.run(["git", "-C", a.repo, "log", "-1", "--format=%cs", commit], check=True, capture_output=True, text=True).stdout.strip()
  thread = clean(git_show(a.repo, commit, "src/thread.rs"))
  wg = clean(git_show(a.repo, commit, "src/work_group.rs"))
  tabs = tables()
  yes = {}
  for targets, body in blocks(fn_body(thread, "interpret")):
    for name, extra in targets:
      for op in tabs[name]:
        if walk(body, {"op": op, **extra}) != "todo": yes[(name, op)] = ""
  for key, note in word_level(wg, thread, tabs).items():
    if key not in yes: yes[key] = note
  order = list(tabs)
  lines = [
    "# gfx1100 opcodes remu executes (an instruction of plain register operands reaches an implementation, not",
    "# todo_instr!): generated by tools/remu_opcodes.py from remu's src/thread.rs and src/work_group.rs; do not edit.",
    "# table<TAB>opcode<TAB>mnemonic (hcq's tables)<TAB>note",
    f"commit\t{commit}\t{date}",
  ]
  for name, op in sorted(yes, key=lambda k: (order.index(k[0]), k[1])):
    lines.append(f"{name}\t{op:#x}\t{tabs[name][op]}\t{yes[(name, op)]}".rstrip("\t"))
  Path(a.out).write_text("\n".join(lines) + "\n")
  counts = {n: sum(1 for k in yes if k[0] == n) for n in order}
  print(f"remu {commit[:12]}: " + ", ".join(f"{n} {c}/{len(tabs[n])}" for n, c in counts.items()), file=sys.stderr)


if __name__ == "__main__":
  main()
