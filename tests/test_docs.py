"""docs/architecture.md names every source file: each Rust file under
crates/<crate>/src in the section headed with that folder, each module of
python/lbsim in the section headed with python/lbsim/."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def sections(text: str) -> dict[str, set[str]]:
    """Source folder named in a ``###`` heading -> the backticked file
    names (``*.rs``, ``*.py``, relative to it) in that section."""
    out: dict[str, set[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("#"):
            m = re.search(r"`((?:crates/[\w-]+/src|python/lbsim)/)`", line) if line.startswith("### ") else None
            current = m[1] if m else None
            if current:
                out.setdefault(current, set())
        elif current:
            out[current] |= set(re.findall(r"`([\w/.-]+\.(?:rs|py))`", line))
    return out


def missing() -> list[str]:
    named = sections(DOC.read_text())
    sources = sorted(ROOT.glob("crates/*/src/**/*.rs")) + sorted((ROOT / "python" / "lbsim").rglob("*.py"))
    out = []
    for f in sources:
        rel = f.relative_to(ROOT).as_posix()
        folder = "python/lbsim/" if rel.startswith("python/") else "/".join(rel.split("/")[:3]) + "/"
        if rel[len(folder):] not in named.get(folder, set()):
            out.append(rel)
    return out


def test_every_source_file_is_named_in_architecture_md():
    gone = missing()
    assert not gone, "docs/architecture.md does not name (under its folder's ### heading): " + ", ".join(gone)


def test_the_check_sees_sections_and_names():
    text = "### `lbsim-x` (`crates/lbsim-x/src/`)\n\n- `lib.rs`, `a/b.rs`: x\n\n## Other\n\n- `c.rs`\n"
    assert sections(text) == {"crates/lbsim-x/src/": {"lib.rs", "a/b.rs"}}
