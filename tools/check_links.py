#!/usr/bin/env python3
"""Check every relative link [text](target) in the given .md files: the file must exist, and a
#fragment must match a heading (GitHub's anchor rules) or an `<a id="...">` of the target file.

    python3 tools/check_links.py $(git ls-files '*.md')

Links inside code blocks and inline code are not links; absolute URLs (`https:`, `mailto:`) are
not checked. Prints each broken link and a count; exit status 1 when any is broken."""

import functools
import os
import re
import sys

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r'<a\s+(?:id|name)="([^"]+)"')
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(title):
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, `_`, `-` and
    spaces kept), spaces to `-`."""
    t = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return t.replace(" ", "-")


@functools.cache
def anchors(path):
    """Every fragment `path` answers: its headings' anchors (a repeated one gets `-1`, `-2`, ...)
    and its explicit HTML anchors."""
    out, seen = set(), {}
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.update(HTML_ANCHOR.findall(line))
            if line.startswith("```"):
                in_code = not in_code
                continue
            m = None if in_code else HEADING.match(line)
            if m:
                t = slug(m.group(2))
                n = seen.get(t, 0)
                seen[t] = n + 1
                out.add(t if n == 0 else f"{t}-{n}")
    return frozenset(out)


def broken_links(md):
    """(target, why) for every broken relative link of the Markdown file `md`, and the number checked."""
    with open(md, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    bad, checked = [], 0
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue
        checked += 1
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        if not os.path.exists(full):
            bad.append((target, f"no such file {full}"))
        elif frag and (os.path.isdir(full) or not full.endswith(".md")):
            bad.append((target, "a fragment on a target that is not Markdown"))
        elif frag and frag not in anchors(full):
            bad.append((target, f"no heading #{frag} in {full}"))
    return bad, checked


def main(files):
    total = nbad = 0
    for md in files:
        bad, checked = broken_links(md)
        total += checked
        nbad += len(bad)
        for target, why in bad:
            print(f"{md}: {target}: {why}")
    print(f"{total} relative links checked in {len(files)} files, {nbad} broken")
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
