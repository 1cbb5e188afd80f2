#!/usr/bin/env python3
"""Names every Rust function longer than a limit (default 120 lines, from
the ``fn`` line to its closing brace) under crates/ (sources, tests, benches).

    python3 tools/fn_length.py [--max N] [FILE_OR_DIR ...]

Prints ``file:line fn name (N lines)`` per offender and exits 1 if there is
one. Braces are matched on the source with comments (line, nested block),
string literals (plain, byte, raw with any number of ``#``) and char
literals blanked out, so a ``'{'`` or a ``"}"`` does not end a function; a
lifetime (``'a``) is not a char literal. A nested function counts on its
own and within the one around it. Declarations without a body (trait
methods, ``extern`` items) are skipped.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MAX_LINES = 120
ROOT = Path(__file__).resolve().parents[1]
_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
_RAW = re.compile(r'b?r(#*)"')


def blank(src: str) -> str:
    """``src`` with the insides of comments, strings and char literals
    replaced by spaces (newlines kept, so offsets and lines are unchanged)."""
    out = list(src)
    n = len(src)
    i = 0

    def wipe(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif (c in "rb") and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")) and _RAW.match(src, i):
            m = _RAW.match(src, i)
            end = src.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            wipe(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        elif c == "'":
            if i + 1 < n and src[i + 1] == "\\":  # '\n', '\'', '\u{7f}'
                j = src.find("'", i + 3)
                j = n if j < 0 else j
                wipe(i, j + 1)
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":  # 'x'
                wipe(i, i + 3)
                i += 3
            else:  # a lifetime or a label: 'a
                i += 1
        else:
            i += 1
    return "".join(out)


def functions(src: str) -> list[tuple[str, int, int]]:
    """(name, first line, line count) of every function with a body."""
    code = blank(src)
    line_at = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_at[k] = line
        if ch == "\n":
            line += 1
    line_at[len(code)] = line
    found = []
    for m in _FN.finditer(code):
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        depth, k = 0, j
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        start = line_at[m.start()]
        found.append((m.group(1), start, line_at[min(k, len(code))] - start + 1))
    return found


def rust_files(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        out += sorted(p.rglob("*.rs")) if p.is_dir() else [p]
    return out


def too_long(paths: list[Path], limit: int = MAX_LINES, root: Path = ROOT) -> list[str]:
    """``file:line fn name (N lines)`` for every function over ``limit``."""
    out = []
    for f in rust_files(paths):
        rel = f.resolve().relative_to(root) if f.resolve().is_relative_to(root) else f
        for name, line, count in functions(f.read_text(encoding="utf-8")):
            if count > limit:
                out.append(f"{rel}:{line} fn {name} ({count} lines, at most {limit})")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=MAX_LINES, help=f"longest allowed function in lines (default {MAX_LINES})")
    ap.add_argument("paths", nargs="*", type=Path, help="files or folders (default: crates/*/src)")
    a = ap.parse_args(argv)
    lines = too_long(a.paths or sorted(ROOT.glob("crates/*")), a.max)
    for line in lines:
        print(line)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
