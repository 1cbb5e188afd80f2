#!/usr/bin/env python3
"""Checks commit subjects: every commit after BASE (default a9648d6, the
first commit the rule applies to) up to HEAD has a subject of at most 72
characters.

    python3 tools/check_commits.py [--base REV] [--repo DIR]

Exits 0 when all pass; otherwise prints one line per offending commit
(hash, length, subject) and exits 1. A BASE that is missing or not an
ancestor of HEAD (a branch cut before it) is an error with its own
message, never a silent pass; a shallow clone that ends before BASE checks
every commit it holds and says so.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BASE = "a9648d6"
MAX_SUBJECT = 72


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def problems(repo: Path, base: str = BASE, limit: int = MAX_SUBJECT) -> list[str]:
    """The lines to print: empty when every subject after ``base`` fits."""
    span = f"{base}..HEAD"
    if _git(repo, "cat-file", "-e", f"{base}^{{commit}}").returncode != 0:
        if _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() != "true":
            return [f"commit {base} is not in this repository; cannot check the subjects after it"]
        # A shallow clone ends before BASE: every commit it holds is after it.
        print(f"check_commits: shallow clone without {base}; checking the commits it holds", file=sys.stderr)
        span = "HEAD"
    elif _git(repo, "merge-base", "--is-ancestor", base, "HEAD").returncode != 0:
        return [f"commit {base} is not an ancestor of HEAD; cannot check the subjects after it"]
    log = _git(repo, "log", "--format=%h%x00%s", span)
    if log.returncode != 0:
        return [f"git log {base}..HEAD failed: {log.stderr.strip()}"]
    out = []
    for line in log.stdout.splitlines():
        sha, _, subject = line.partition("\0")
        if len(subject) > limit:
            out.append(f"{sha}: subject is {len(subject)} characters (at most {limit}): {subject}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=BASE, help=f"check the commits after this one (default {BASE})")
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]), help="repository (default: this one)")
    a = ap.parse_args(argv)
    lines = problems(Path(a.repo), a.base)
    for line in lines:
        print(f"check_commits: {line}", file=sys.stderr)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
